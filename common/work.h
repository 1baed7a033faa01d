// The one FLOP/byte convention every chapter reports with.
//   FLOPs: a multiply and an add count as two (an FMA is 2 FLOPs); the
//          exponentials and divisions of a softmax are not counted.
//   bytes: the fewest that must cross DRAM: every input read once, every output
//          written once. Re-reads a kernel needs (tiles, passes) do not count, so
//          GB/s here is "useful" bandwidth, comparable across kernels.
#pragma once

#include <cstddef>

namespace ladder {

struct Work {
  double flops = 0.0;
  double bytes = 0.0;
  double tflops(double ms) const { return flops / (ms * 1e-3) / 1e12; }
  double gbps(double ms) const { return bytes / (ms * 1e-3) / 1e9; }
};

// c = a + b over n floats: 2 reads + 1 write.
inline Work vector_add_work(std::size_t n) { return {double(n), 12.0 * double(n)}; }
// Device-to-device copy of n floats: 1 read + 1 write.
inline Work copy_work(std::size_t n) { return {0.0, 8.0 * double(n)}; }
// C[M,N] = A[M,K] B[K,N], fp32.
inline Work gemm_work(std::size_t M, std::size_t N, std::size_t K) {
  return {2.0 * M * N * K, 4.0 * (double(M) * K + double(K) * N + double(M) * N)};
}
// Row-wise softmax of an R x C fp32 matrix: 1 read + 1 write.
inline Work softmax_work(std::size_t R, std::size_t C) { return {0.0, 8.0 * double(R) * C}; }
// Attention over [B, H, N, d] fp32, the FlashAttention papers' convention:
// forward 4 B H N^2 d (QK^T and PV), halved when causal; backward 2.5x forward.
// Bytes: Q, K, V read and O (plus the row statistic L) written once.
inline Work attention_fwd_work(std::size_t B, std::size_t H, std::size_t N, std::size_t d, bool causal) {
  const double bhn = double(B) * H * N;
  return {4.0 * bhn * N * d * (causal ? 0.5 : 1.0), 4.0 * (4.0 * bhn * d + bhn)};
}
// Backward reads Q, K, V, O, dO, L and writes dQ, dK, dV.
inline Work attention_bwd_work(std::size_t B, std::size_t H, std::size_t N, std::size_t d, bool causal) {
  const double bhn = double(B) * H * N;
  return {2.5 * 4.0 * bhn * N * d * (causal ? 0.5 : 1.0), 4.0 * (8.0 * bhn * d + bhn)};
}

}  // namespace ladder
