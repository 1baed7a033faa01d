// The chapter's measured cases, named once for the executable, the benchmark and the anchor
// script's shapes (scripts/anchors/torch_anchors.py, group "flex"): the three masks the issue
// times against FlexAttention, the block-sparse sweep, and packed documents beside equal-length
// sequences of the same total tokens.
#pragma once

#include <algorithm>
#include <vector>

#include "attention_shape.h"
#include "flex_problem.h"

namespace variants::cases {

struct Case {
  const char* name;  // the benchmark's variant and the anchor's key
  ladder::AttentionShape s;
  Variant v;
};

// Seven documents of random lengths (seeded) that fill N.
inline std::vector<int> document_lengths(int N, int count, unsigned seed) {
  std::vector<int> cuts{0, N};
  for (int k = 1; k < count; ++k) cuts.push_back(int((seed = seed * 1103515245u + 12345u) >> 8) % (N - 1) + 1);
  std::sort(cuts.begin(), cuts.end());
  std::vector<int> lengths;
  for (std::size_t k = 1; k < cuts.size(); ++k) lengths.push_back(cuts[k] - cuts[k - 1]);
  return lengths;
}

inline std::vector<Case> headline() {
  Variant window, documents, softcap;
  window.kind = Kind::Window, window.window = 1024;
  documents.kind = Kind::Documents, documents.doc_lengths = document_lengths(16384, 7, 2024);
  softcap.kind = Kind::Softcap, softcap.cap = 50.0f;
  return {{"window", ladder::attention_shape(2, 16, 16, 8192, 8192, 128, false), window},
          {"documents", ladder::attention_shape(1, 16, 16, 16384, 16384, 128, false), documents},
          {"softcap", ladder::attention_shape(4, 16, 16, 4096, 4096, 128, false), softcap}};
}

// Block sparsity: random 128 x 128 tiles on at these densities, and all of them (dense).
inline constexpr double kDensities[] = {0.1, 0.25, 0.5};
inline ladder::AttentionShape sparse_shape() { return ladder::attention_shape(2, 16, 16, 8192, 8192, 128, false); }

}  // namespace variants::cases
