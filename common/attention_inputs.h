// Random attention inputs for the FA chapters' executables and tests: Q, K, V
// (and dO for the backward) uniform in [-1, 1), each its own stream (seed,
// seed + 1, ...). q_scale multiplies Q, which scales every logit by the same factor.
#pragma once

#include <cstdint>
#include <vector>

#include "attention_shape.h"
#include "random.h"

namespace ladder {

struct AttentionInputs {
  std::vector<float> Q, K, V, dO;
};

inline AttentionInputs random_attention_inputs(const AttentionShape& s, std::uint64_t seed, bool with_dO = false,
                                               float q_scale = 1.0f) {
  AttentionInputs x{random_uniform(s.elems(), seed),
                    random_uniform(s.kv_elems(), seed + 1),
                    random_uniform(s.kv_elems(), seed + 2),
                    {}};
  if (with_dO) x.dO = random_uniform(s.elems(), seed + 3);
  if (q_scale != 1.0f)
    for (float& q : x.Q) q *= q_scale;
  return x;
}

}  // namespace ladder
