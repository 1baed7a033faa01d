// FlexAttention's two user functions (He et al. 2024, "FlexAttention") as C++ functors, for the
// kernels to inline into their score tile and for the references to call on the CPU:
//   mask(b, h, q, k) -> bool        may query q of head (b, h) see key k?
//   score(s, b, h, q, k) -> s'      the scaled score s = q.k / sqrt(d), modified
//   score.grad(s, b, h, q, k)       ds'/ds, for the backward (dS = dS' * ds'/ds)
// q and k are positions in the sequence (a packed variable-length batch: in the packed sequence).
//
// Spans. Most masks let each query see one run of keys, lo <= k <= hi (causal, windows, documents,
// prefix-LM), and each key be seen by one run of queries. Such a mask may also say so:
//   keys(b, h, q) -> Span       the keys query q sees
//   queries(b, h, k) -> Span    the queries that see key k
// A kernel then computes the span once per row of its tile (a query row for the forward, a key row
// for the backward) and tests two bounds per element, instead of evaluating the mask, and whatever
// it reads, on every element. The spans must agree with operator() (CpuVariants checks them).
// Header-only, no CUDA syntax beyond the host-device marker: .cu and .cpp files share it.
#pragma once

#include <cmath>
#include <type_traits>
#include <utility>

#include "numeric.h"  // LADDER_HOST_DEVICE

namespace variants {

// A run of positions lo .. hi (empty when hi < lo); kOpen bounds it on neither side.
struct Span {
  int lo, hi;
};
inline constexpr int kOpen = 1 << 30;
LADDER_HOST_DEVICE inline Span intersect(Span a, Span b) {
  return {a.lo > b.lo ? a.lo : b.lo, a.hi < b.hi ? a.hi : b.hi};
}
// Whether mask M gives its spans.
template <class M, class = void>
struct HasSpans : std::false_type {};
template <class M>
struct HasSpans<M, std::void_t<decltype(std::declval<const M&>().keys(0, 0, 0)),
                               decltype(std::declval<const M&>().queries(0, 0, 0))>> : std::true_type {};
template <class M>
inline constexpr bool kHasSpans = HasSpans<M>::value;

// ---- masks ---------------------------------------------------------------------------------------
struct NoMask {
  LADDER_HOST_DEVICE bool operator()(int, int, int, int) const { return true; }
  LADDER_HOST_DEVICE Span keys(int, int, int) const { return {-kOpen, kOpen}; }
  LADDER_HOST_DEVICE Span queries(int, int, int) const { return {-kOpen, kOpen}; }
};
// Key k is visible from query q when k <= q + offset (offset = N_kv - N: the diagonal through the
// bottom-right corner, as chapters 10-14).
struct Causal {
  int offset = 0;
  LADDER_HOST_DEVICE bool operator()(int, int, int q, int k) const { return k <= q + offset; }
  LADDER_HOST_DEVICE Span keys(int, int, int q) const { return {-kOpen, q + offset}; }
  LADDER_HOST_DEVICE Span queries(int, int, int k) const { return {k - offset, kOpen}; }
};
// The keys within `left` before and `right` after the query's diagonal position (Mistral's window:
// right = 0, causal).
struct SlidingWindow {
  int left = 0, right = 0, offset = 0;
  LADDER_HOST_DEVICE bool operator()(int, int, int q, int k) const {
    const int c = q + offset;
    return k >= c - left && k <= c + right;
  }
  LADDER_HOST_DEVICE Span keys(int, int, int q) const { return {q + offset - left, q + offset + right}; }
  LADDER_HOST_DEVICE Span queries(int, int, int k) const { return {k - offset - right, k - offset + left}; }
};
// Documents packed into one sequence: a query sees the keys of its own document (per-token
// document ids, [B][N] and [B][N_kv]). The ids alone give no span: each element reads its key's id.
struct Document {
  const int *q_doc = nullptr, *k_doc = nullptr;
  int N = 0, N_kv = 0;
  LADDER_HOST_DEVICE bool operator()(int b, int, int q, int k) const {
    return q_doc[long(b) * N + q] == k_doc[long(b) * N_kv + k];
  }
};
// The same documents in flash-attention's varlen layout: token t (query and key alike, N_kv = N)
// is in document doc[t], which holds tokens cu_seqlens[doc[t]] .. cu_seqlens[doc[t] + 1] - 1.
// The mask is Document's; the layout also gives each token its document's span, two loads per row.
struct PackedDocuments {
  const int *doc = nullptr, *cu_seqlens = nullptr;
  LADDER_HOST_DEVICE bool operator()(int, int, int q, int k) const { return doc[q] == doc[k]; }
  LADDER_HOST_DEVICE Span keys(int, int, int q) const { return span(q); }
  LADDER_HOST_DEVICE Span queries(int, int, int k) const { return span(k); }
  LADDER_HOST_DEVICE Span span(int t) const {
    const int d = doc[t];
    return {cu_seqlens[d], cu_seqlens[d + 1] - 1};
  }
};
// Prefix-LM: the first `prefix` keys are visible to every query, the rest causally.
struct PrefixLM {
  int prefix = 0;
  LADDER_HOST_DEVICE bool operator()(int, int, int q, int k) const { return k < prefix || k <= q; }
  LADDER_HOST_DEVICE Span keys(int, int, int q) const { return {-kOpen, q > prefix - 1 ? q : prefix - 1}; }
  LADDER_HOST_DEVICE Span queries(int, int, int k) const { return {k < prefix ? -kOpen : k, kOpen}; }
};
// Both masks at once (a causal window, causal documents). `&`, not `&&`: both are evaluated,
// so the kernels test them without a branch per element (every mask here is safe to evaluate
// at any in-range q, k). Two masks with spans have the intersection of their spans.
template <class A, class B>
struct And {
  A a;
  B b;
  LADDER_HOST_DEVICE bool operator()(int bi, int h, int q, int k) const { return a(bi, h, q, k) & b(bi, h, q, k); }
  template <class AA = A, class = std::enable_if_t<kHasSpans<AA> && kHasSpans<B>>>
  LADDER_HOST_DEVICE Span keys(int bi, int h, int q) const {
    return intersect(a.keys(bi, h, q), b.keys(bi, h, q));
  }
  template <class AA = A, class = std::enable_if_t<kHasSpans<AA> && kHasSpans<B>>>
  LADDER_HOST_DEVICE Span queries(int bi, int h, int k) const {
    return intersect(a.queries(bi, h, k), b.queries(bi, h, k));
  }
};
template <class A, class B>
And<A, B> both(A a, B b) {
  return {a, b};
}
// Documents, each causal (packed sequences: flash-attention's varlen batches as one sequence):
// from the ids alone, and in the varlen layout (with spans).
using CausalDocument = And<Document, Causal>;
using CausalPackedDocuments = And<PackedDocuments, Causal>;
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
