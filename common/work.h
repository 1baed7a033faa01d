// The one FLOP/byte convention every chapter reports with.
//   FLOPs: a multiply and an add count as two (an FMA is 2 FLOPs); the
//          exponentials and divisions of a softmax are not counted.
//   bytes: the fewest that must cross DRAM: every input read once, every output
//          written once. Re-reads a kernel needs (tiles, passes) do not count, so
//          GB/s here is "useful" bandwidth, comparable across kernels.
#pragma once

#include <algorithm>
#include <cstddef>

#include "attention_shape.h"

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
// C[M,N] = A[M,K] B[K,N]; fp32 by default, in_bytes = 2 for bf16 A and B.
inline Work gemm_work(std::size_t M, std::size_t N, std::size_t K, int in_bytes = 4, int out_bytes = 4) {
  return {2.0 * M * N * K, in_bytes * (double(M) * K + double(K) * N) + out_bytes * double(M) * N};
}
// Row-wise softmax of an R x C fp32 matrix: 1 read + 1 write.
inline Work softmax_work(std::size_t R, std::size_t C) { return {0.0, 8.0 * double(R) * C}; }
// Attention, the FlashAttention papers' convention: forward 4 B H N N_kv d FLOPs (Q K^T
// and P V), halved when causal (for N_kv != N: the keys each query really sees);
// backward 2.5x forward. Bytes: each tensor read or written once, in elements of
// elem_bytes (4 for fp32, 2 for bf16), plus the fp32 row statistic L.
inline double attention_pairs(const AttentionShape& s) {  // (query, key) pairs per head
  const double full = double(s.N) * s.nkv();
  if (!s.causal) return full;
  if (s.self_attention()) return 0.5 * full;
  double seen = 0.0;
  for (long i = 0; i < s.N; ++i) seen += double(std::clamp<long>(s.last_key(i) + 1, 0, s.nkv()));
  return seen;
}
inline Work attention_fwd_work(const AttentionShape& s, int elem_bytes = 4) {
  const double fl = 4.0 * double(s.heads()) * attention_pairs(s) * s.d;
  return {fl, elem_bytes * (2.0 * s.elems() + 2.0 * s.kv_elems()) + 4.0 * s.rows()};
}
// Backward reads Q, K, V, O, dO, L and writes dQ, dK, dV.
inline Work attention_bwd_work(const AttentionShape& s, int elem_bytes = 4) {
  const double fl = 2.5 * 4.0 * double(s.heads()) * attention_pairs(s) * s.d;
  return {fl, elem_bytes * (4.0 * s.elems() + 4.0 * s.kv_elems()) + 4.0 * s.rows()};
}

}  // namespace ladder
