// FlexAttention's two user functions (He et al. 2024, "FlexAttention") as C++ functors, for the
// kernels to inline into their score tile and for the references to call on the CPU:
//   mask(b, h, q, k) -> bool        may query q of head (b, h) see key k?
//   score(s, b, h, q, k) -> s'      the scaled score s = q.k / sqrt(d), modified
//   score.grad(s, b, h, q, k)       ds'/ds, for the backward (dS = dS' * ds'/ds)
// q and k are positions in the sequence (a packed variable-length batch: in the packed sequence).
// Header-only, no CUDA syntax beyond the host-device marker: .cu and .cpp files share it.
#pragma once

#include <cmath>

#include "numeric.h"  // LADDER_HOST_DEVICE

namespace variants {

// ---- masks ---------------------------------------------------------------------------------------
struct NoMask {
  LADDER_HOST_DEVICE bool operator()(int, int, int, int) const { return true; }
};
// Key k is visible from query q when k <= q + offset (offset = N_kv - N: the diagonal through the
// bottom-right corner, as chapters 10-14).
struct Causal {
  int offset = 0;
  LADDER_HOST_DEVICE bool operator()(int, int, int q, int k) const { return k <= q + offset; }
};
// The keys within `left` before and `right` after the query's diagonal position (Mistral's window:
// right = 0, causal).
struct SlidingWindow {
  int left = 0, right = 0, offset = 0;
  LADDER_HOST_DEVICE bool operator()(int, int, int q, int k) const {
    const int c = q + offset;
    return k >= c - left && k <= c + right;
  }
};
// Documents packed into one sequence: a query sees the keys of its own document (per-token
// document ids, [B][N] and [B][N_kv]).
struct Document {
  const int *q_doc = nullptr, *k_doc = nullptr;
  int N = 0, N_kv = 0;
  LADDER_HOST_DEVICE bool operator()(int b, int, int q, int k) const {
    return q_doc[long(b) * N + q] == k_doc[long(b) * N_kv + k];
  }
};
// Prefix-LM: the first `prefix` keys are visible to every query, the rest causally.
struct PrefixLM {
  int prefix = 0;
  LADDER_HOST_DEVICE bool operator()(int, int, int q, int k) const { return k < prefix || k <= q; }
};
// Both masks at once (a causal window, causal documents). `&`, not `&&`: both are evaluated,
// so the kernels test them without a branch per element (every mask here is safe to evaluate
// at any in-range q, k).
template <class A, class B>
struct And {
  A a;
  B b;
  LADDER_HOST_DEVICE bool operator()(int bi, int h, int q, int k) const { return a(bi, h, q, k) & b(bi, h, q, k); }
};
template <class A, class B>
And<A, B> both(A a, B b) {
  return {a, b};
}
// Documents, each causal (packed sequences: flash-attention's varlen batches as one sequence).
using CausalDocument = And<Document, Causal>;
// Whole tiles on or off, a block-sparse pattern: query q sees key k when tile (q / tile, k / tile)
// is on. on: [ceil(N / tile)][T_k] bytes. With tile = 128 every visible tile of the kernels is
// full, so the mask is never evaluated: the time measures the walk alone.
struct TileSet {
  const unsigned char* on = nullptr;
  int T_k = 0, tile = 128;
  LADDER_HOST_DEVICE bool operator()(int, int, int q, int k) const { return on[(q / tile) * T_k + k / tile] != 0; }
};

// ---- score modifiers ------------------------------------------------------------------------------
// tanh in fp32 on the device by the special function unit (tanh.approx.f32, sm_75 and later:
// one instruction, relative error about 2^-11, far below bf16's 2^-8), exactly elsewhere (the
// fp64 reference).
template <class T>
LADDER_HOST_DEVICE T tanh_of(T x) {
#if defined(__CUDA_ARCH__)
  if constexpr (sizeof(T) == sizeof(float)) {
    float y;
    asm("tanh.approx.f32 %0, %1;" : "=f"(y) : "f"(float(x)));
    return y;
  }
#endif
  return std::tanh(x);
}

struct NoScoreMod {
  template <class T>
  LADDER_HOST_DEVICE T operator()(T s, int, int, int, int) const {
    return s;
  }
  template <class T>
  LADDER_HOST_DEVICE T grad(T, int, int, int, int) const {
    return T(1);
  }
};
// Gemma 2's logit soft-capping: cap tanh(s / cap), bounded by +-cap, ~s for |s| << cap.
// On the device s / cap is s times 1/cap, taken once here: an fp32 division (-prec-div=true, the
// default) is a reciprocal on the special function unit plus a correction sequence, which beside
// tanh and the softmax's exp2 would make that unit three deep per score instead of two. The product
// differs from the quotient by at most an ulp, far below tanh.approx's error.
struct Softcap {
  float cap, inv_cap;
  LADDER_HOST_DEVICE explicit Softcap(float c = 50.0f) : cap(c), inv_cap(1.0f / c) {}
  template <class T>
  LADDER_HOST_DEVICE T over_cap(T s) const {
    if constexpr (sizeof(T) == sizeof(float))
      return s * inv_cap;
    else
      return s / T(cap);  // the fp64 reference: the exact quotient
  }
  template <class T>
  LADDER_HOST_DEVICE T operator()(T s, int, int, int, int) const {
    return T(cap) * tanh_of(over_cap(s));
  }
  template <class T>
  LADDER_HOST_DEVICE T grad(T s, int, int, int, int) const {
    const T t = tanh_of(over_cap(s));
    return T(1) - t * t;
  }
};
// ALiBi (Press et al. 2022): a bias linear in the distance, slope per head: s + m_h (k - q - offset),
// so keys further back weigh less. slopes: [H].
struct Alibi {
  const float* slopes = nullptr;
  int offset = 0;
  template <class T>
  LADDER_HOST_DEVICE T operator()(T s, int, int h, int q, int k) const {
    return s + T(slopes[h]) * T(k - q - offset);
  }
  template <class T>
  LADDER_HOST_DEVICE T grad(T, int, int, int, int) const {
    return T(1);
  }
};
// ALiBi's slopes for H heads: 2^(-8 h / H), h = 1..H (the paper's geometric sequence).
inline float alibi_slope(int h, int H) { return std::exp2(-8.0f * float(h + 1) / float(H)); }

}  // namespace variants
