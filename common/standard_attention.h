// The standard, materialising attention: the baseline FlashAttention is measured
// against. Per head it writes the N x N scores to global memory, as PyTorch's
// "math" path does:
//   forward:  S = scale Q K^T (cuBLAS), P = softmax(S) in place, O = P V (cuBLAS)
//   backward: dV = P^T dO, dP = dO V^T, dS = P * (dP - rowsum(P * dP)), dQ = scale dS K,
//             dK = scale dS^T Q   (P kept from the forward, dP/dS in a second N x N buffer)
#pragma once

#include <cstddef>

#include "attention_shape.h"
#include "device_buffer.h"

namespace ladder {

class StandardAttention {
 public:
  // Throws std::invalid_argument when its N x N buffers do not fit (see fits()).
  explicit StandardAttention(const AttentionShape& s, bool with_backward = false);
  // Do the N x N buffers fit in the GPU's free memory, with 1 GiB to spare? (needs a GPU)
  static bool fits(const AttentionShape& s, bool with_backward = false);

  void forward(const float* Q, const float* K, const float* V, float* O);
  // Uses P from the last forward() call with the same Q, K.
  void backward(const float* Q, const float* K, const float* V, const float* dO, float* dQ, float* dK, float* dV);

  // Global memory the N x N intermediates take: one buffer (S, overwritten by P)
  // forward, a second (dP, overwritten by dS) backward.
  static std::size_t score_bytes(const AttentionShape& s) { return s.heads() * std::size_t(s.N) * s.N * sizeof(float); }

 private:
  AttentionShape s_;
  DeviceBuffer<float> P_, dS_;
};

}  // namespace ladder
