// The attention problem every FlashAttention chapter solves:
//   Q, K, V, O: [B, H, N, d] fp32, row-major (PyTorch's layout); L: [B, H, N].
//   S = scale * Q K^T with scale = 1/sqrt(d); causal: query i sees keys 0..i.
// Header-only and Eigen-free: kernels (.cu) and host code share it.
#pragma once

#include <cmath>
#include <cstddef>
#include <initializer_list>
#include <stdexcept>
#include <string>

namespace ladder {

struct AttentionShape {
  int B = 1, H = 1, N = 1, d = 64;
  bool causal = false;

  std::size_t heads() const { return std::size_t(B) * H; }
  std::size_t rows() const { return heads() * N; }  // elements of L
  std::size_t elems() const { return rows() * d; }  // elements of Q, K, V, O
  float scale() const { return 1.0f / std::sqrt(float(d)); }
  std::string str() const {
    return "B=" + std::to_string(B) + " H=" + std::to_string(H) + " N=" + std::to_string(N) +
           " d=" + std::to_string(d) + (causal ? " causal" : "");
  }
};

// Throws std::invalid_argument with a message a learner can act on.
inline void validate(const AttentionShape& s, std::initializer_list<int> supported_d) {
  if (s.B < 1 || s.H < 1 || s.N < 1)
    throw std::invalid_argument("attention shape " + s.str() + ": B, H and N must all be >= 1");
  std::string list;
  for (int d : supported_d) {
    if (d == s.d) return;
    list += (list.empty() ? "" : ", ") + std::to_string(d);
  }
  throw std::invalid_argument("head dim d=" + std::to_string(s.d) +
                              " is not supported: the kernels are compiled for d in {" + list + "}");
}

}  // namespace ladder
