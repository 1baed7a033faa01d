// The chapter's one new idea, as the two variants the kernels of chapters 12 and 14 take (their
// `V`: fa3_forward.cuh, fa3_bwd_kernel.cuh): a mask and a score modifier inlined into the score
// tile, and a block mask's lists walked instead of every tile.
//
//   the walk         step it of a row of the walk reads tile j(it): first the partial tiles, then
//                    the full ones, as FlexAttention's kv_indices and full_kv_indices list them
//   the mask         evaluated on partial tiles only (the kernels instantiate the masked score
//                    tile for them alone), -inf (forward) or P = 0 (backward) where it says no;
//                    a mask with spans (mods.h) by the two ends of each row's span instead
//   the modifier     on every visited tile: x = S scale becomes score(x); the backward multiplies
//                    dS by score'(x)
//
// Accumulator coordinates come from the kernels: a thread's query q and key k of each register.
// No memory is read per element beyond what the functors read themselves (document ids, slopes);
// with spans, nothing per element at all.
#pragma once

#include <type_traits>

#include "12_fa3_hopper/fa3_kernel.h"
#include "14_fa3_backward/fa3_bwd_config.h"
#include "flex.h"

namespace variants::detail {

// Row r (a query tile for the forward, a key tile for the backward) of head (b, h)'s lists.
__device__ __forceinline__ long list_row(const BlockMaskView& v, int b, int h, int r) {
  return (long(v.B == 1 ? 0 : b) * v.H + (v.H == 1 ? 0 : h)) * v.rows + r;
}

// Key k is visible from query q: in range and let through by the mask. Branch-free: the mask
// is evaluated at positions clamped into range (a functor may read per-position data there),
// and the tests are combined with `&`, so a tile's elements need no branch each.
template <class Mask>
__device__ __forceinline__ bool visible(int b, int h, int q, int k, int N_q, int N_kv, const Mask& mask) {
  return (q < N_q) & (k < N_kv) & mask(b, h, min(q, N_q - 1), min(k, N_kv - 1));
}
// The same test for a mask with spans (mods.h), from the row's side: the span of the row's
// position, cut to the other side's range (empty for a row past its own length). The kernels
// take it once per row and compare each element's position with its two ends.
template <class Mask>
__device__ __forceinline__ Span keys_of(int b, int h, int q, int N_q, int N_kv, const Mask& mask) {
  const Span s = intersect(mask.keys(b, h, min(q, N_q - 1)), {0, N_kv - 1});
  return q < N_q ? s : Span{0, -1};
}
template <class Mask>
__device__ __forceinline__ Span queries_of(int b, int h, int k, int N_q, int N_kv, const Mask& mask) {
  const Span s = intersect(mask.queries(b, h, min(k, N_kv - 1)), {0, N_q - 1});
  return k < N_kv ? s : Span{0, -1};
}
__device__ __forceinline__ bool within(int x, Span s) { return (x >= s.lo) & (x <= s.hi); }

// The tiles of one row of the walk: partial ones first (masked), then full ones.
struct Listed {
  const int *partial, *full;
  int n_partial, n;
  __device__ int tile(int k) const { return k < n_partial ? partial[k] : full[k - n_partial]; }
  __device__ static Listed of(const BlockMaskView& v, long row) {
    const int n_partial = v.num[row];
    return {v.idx + row * v.len, v.full_idx + row * v.len, n_partial, n_partial + v.full_num[row]};
  }
};

// ---- the forward: chapter 12's row tile walks its query tile's key tiles --------------------------
template <class Mask, class Score>
struct FlexForward {
  static constexpr bool kScoreMod = !std::is_same_v<Score, NoScoreMod>;
  // One CTA per SM walks the row tiles (chapter 12's persistent step): a CTA's next row tile
  // loads while it finishes the last, which pays off when rows visit few tiles. The order
  // (row_tile) is heaviest first within each head, so the round-robin over the grid hands
  // every CTA about the same work.
  static constexpr bool kOrdersRowTiles = true;
  Mask mask;
  Score mod;
  BlockMaskView bm;  // kv(): per query tile
  int H;             // query heads per batch: the kernel's head is b H + h
  float scale, inv_scale;

  struct Keys {
    Listed keys;
    int T_c;  // visits
    __device__ int j(int it) const { return keys.tile(it); }
    __device__ bool masked(int it) const { return it < keys.n_partial; }
  };
  template <class C>
  __device__ Keys keys(int i0, int head, const fa3::kernel::Params&) const {
    const Listed l = Listed::of(bm, list_row(bm, head / H, head % H, i0 / C::B_r));
    return {l, l.n};
  }

  // The kernel's online softmax scales by scale log2(e): the modified score goes back into
  // units of S (score(x) / scale) so that the softmax stays as it is.
  // A mask with spans is tested against its query row's span of keys.
  template <bool kMasked, int N>
  __device__ void score_tile(float (&s)[N], int q, int k0, int head, const fa3::kernel::Params& p) const {
    if constexpr (kScoreMod || kMasked) {
      const int b = head / H, h = head % H;
#pragma unroll
      for (int h2 = 0; h2 < 2; ++h2) {
        const int qq = q + 8 * h2;
        [[maybe_unused]] Span row{};
        if constexpr (kMasked && kHasSpans<Mask>) row = keys_of(b, h, qq, p.N_q, p.N_kv, mask);
#pragma unroll
        for (int jj = 0; jj < N / 4; ++jj)
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            float& x = s[4 * jj + 2 * h2 + e];
            const int kk = k0 + 8 * jj + e;
            if constexpr (kScoreMod) x = mod(x * scale, b, h, qq, kk) * inv_scale;
            if constexpr (kMasked && kHasSpans<Mask>) {
              if (!within(kk, row)) x = -INFINITY;
            } else if constexpr (kMasked) {
              if (!visible(b, h, qq, kk, p.N_q, p.N_kv, mask)) x = -INFINITY;
            }
          }
      }
    }
  }
  __device__ bool last_first(const fa3::kernel::Params&) const { return true; }
  // The t-th row tile of the walk, in the block mask's order (flex.cpp): head by head, each
  // head's rows heaviest first; or across heads, heaviest first. A list the block mask shares
  // between heads (its B or H is 1) is taken once per head that shares it (walk_place).
  //
  // CTA c takes the tiles t = c, c + G, c + 2 G, ... (G CTAs): one per round. Handed out in
  // the sorted order round after round, CTA 0 would get the heaviest tile of every round; in a
  // snake draft the odd rounds go backwards, so the heavy and the light ends of the rounds
  // alternate between the CTAs and their sums come out about even.
  __device__ fa3::kernel::RowTile row_tile(int t, const fa3::kernel::Params& p) const {
    t = snake_place(t, static_cast<int>(gridDim.x), p.T_r * p.heads);
    const WalkPlace w = walk_place(t, bm.order, bm.across_heads, p.T_r, p.heads / H, H, bm.B, bm.H);
    return {w.i, w.head};
  }
};

// ---- the backward: chapter 14's CTA of key tile j walks its query tiles ---------------------------
// The scheduler: one CTA per SM walks the key tiles, taking the next place of the launch order
// (chapter 14's sections of heads) whenever it is done with one: its next K_j, V_j load while it
// stores the last dK_j, dV_j, which pays off when walks are short. Within a head the key tiles go
// by the length of their walk through the block mask, longest first (flex.cpp sorts them), so
// that the long walks start first.
struct BlockMaskScheduler {
  static constexpr bool kPersistent = true;
  template <class V>
  __device__ static fa3bwd::sched::Tile tile(int place, int T_c, const fa3bwd::kernel::Params& p, const V& var) {
    const fa3bwd::sched::Tile t = fa3bwd::sched::tile(place, T_c, p.sections);
    return {var.bm.order[list_row(var.bm, t.head / p.H_kv, t.head % p.H_kv, t.j)], t.head};
  }
  template <class V>
  __device__ static int places(int T_c, const fa3bwd::kernel::Params&, const V& var) {
    return T_c * var.kv_heads;
  }
};

// The variant: the block mask's query tiles, the element mask and the score modifier.
template <class Mask, class Score>
struct FlexBackward {
  static constexpr bool kScoreMod = !std::is_same_v<Score, NoScoreMod>;
  Mask mask;
  Score mod;
  BlockMaskView bm;  // q(): per key tile
  int H;
  int kv_heads;  // B H_kv: the key tiles of the launch order are T_c kv_heads places

  // Every listed query tile of every query head of the group (one list for the group: the host
  // refuses a head-dependent block mask with GQA).
  struct Queries {
    Listed tiles;
    int visits;
    __device__ int head(int n) const { return n / tiles.n; }
    __device__ int i(int n) const { return tiles.tile(n % tiles.n); }
  };
  template <class C>
  __device__ Queries queries(int j0, int kv_head, const fa3bwd::kernel::Params& p) const {
    const Listed l = Listed::of(bm, list_row(bm, kv_head / p.H_kv, kv_head % p.H_kv, j0 / C::B_c));
    return {l, l.n * p.group};
  }
  template <class C>
  __device__ bool masked(const Queries& qs, int n, int, int, const fa3bwd::kernel::Params&) const {
    return n % qs.tiles.n < qs.tiles.n_partial;
  }
  // A mask with spans is tested against its key row's span of queries (the kernel asks for each
  // element; the span depends on the key alone, so the compiler computes it once per row).
  __device__ bool visible(int head, int q, int k, const fa3bwd::kernel::Params& p) const {
    if constexpr (kHasSpans<Mask>)
      return within(q, queries_of(head / H, head % H, k, p.N_q, p.N_kv, mask));
    else
      return detail::visible(head / H, head % H, q, k, p.N_q, p.N_kv, mask);
  }
  __device__ float score(float x, int head, int q, int k) const { return mod(x, head / H, head % H, q, k); }
  __device__ float score_grad(float x, int head, int q, int k) const { return mod.grad(x, head / H, head % H, q, k); }
};

}  // namespace variants::detail
