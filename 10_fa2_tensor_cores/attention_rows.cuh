// The row math of FlashAttention-2's forward, written once for every tensor-core kernel of
// the ladder: chapter 10 (mma.sync), 11 (decode) and 12 (wgmma) differ in where the score
// tile S_ij lives in registers, not in what they do with it. Device code only.
//
// Per query row i the kernels keep (Dao 2023, Algorithm 1):
//   m_i   the running max of the scores seen so far,
//   l_i   the running sum of P~ = exp(S - m_i) over the keys seen so far,
//   O_i   the unnormalised output, rescaled by alpha = exp(m_old - m_new) when m_i grows,
// and at the end O_i / l_i and L_i = m_i + log l_i. Here m_i is kept in log2 units
// (S scale log2 e): then alpha = exp2(m_old - m_new) is exactly 1 when the max does not
// move (m_old - m_new = 0), which chapter 10's skipped rescale relies on, and a long run
// of tiles (chapter 11 walks 131072 keys with one split) never drifts l_i.
// The backward's two formulas (P recomputed from L, dS = P o (dP - D)) are here too, for
// chapters 10 and 14.
//
// A score tile is seen through a fragment view: the rows one thread holds, each shared with
// the other three lanes of its quad, and per row pairs of adjacent columns 8 j + 2 c and
// 8 j + 2 c + 1 (c = lane % 4). mma.sync's C fragments (chapter 09) and wgmma's accumulators
// (chapter 12) both have this shape; only the register index of (row, pair, element) differs.
#pragma once

#include <cmath>

#include "09_tensor_core_matmul/mma.cuh"
#include "numeric.h"

namespace attn {

// ---- which key tiles a row tile visits --------------------------------------------------
// Row tile [i0, i0 + B_r) sees keys [0, kv_end): all N_kv, or, causal (query i sees keys
// j <= i + offset, offset = N_kv - N_q, aligned at the bottom right), up to its last query's
// last key. Tiles j < n_full are visible to every row of the tile: they need no mask.
struct KeyTiles {
  int kv_end, T_c, n_full;
};
__host__ __device__ inline KeyTiles key_tiles(int i0, int B_r, int B_c, int N_kv, int offset, bool causal) {
  KeyTiles k;
  k.kv_end = causal ? max(0, min(N_kv, i0 + B_r + offset)) : N_kv;
  k.T_c = ladder::ceil_div(k.kv_end, B_c);
  k.n_full = (causal ? max(0, min(N_kv, i0 + offset + 1)) : N_kv) / B_c;
  return k;
}
// ---- fragment views ----------------------------------------------------------------------
// mma.sync m16n8 C fragments, MT m16 tiles x NT n8 tiles (chapters 10, 11): row slot
// r = 2 mt + h is tile row 16 mt + g + 8 h (g = lane / 4); pair j is n8 tile j.
template <int MT, int NT>
struct MmaTile {
  static constexpr int kRows = 2 * MT, kPairs = NT;
  float (&f)[MT][NT][4];
  __device__ __forceinline__ float& operator()(int r, int j, int e) const { return f[r / 2][j][2 * (r % 2) + e]; }
};
// wgmma m64nN accumulators (chapter 12): warp w of the warpgroup holds rows 16 w + g and
// 16 w + g + 8 (row slots 0, 1); register 4 j + 2 h + e is row slot h, pair j.
template <int N>
struct WgmmaTile {
  static constexpr int kRows = 2, kPairs = N / 8;
  float (&f)[N / 2];
  __device__ __forceinline__ float& operator()(int r, int j, int e) const { return f[4 * j + 2 * r + e]; }
};

// ---- where P~'s exponentials come from ----------------------------------------------------
// The special function unit's ex2.approx for every score. A kernel may pass its own policy:
// exp(x, j) is asked for the scores of pair j (columns 8 j .. 8 j + 7 of the quad), with j known
// at compile time in the unrolled loops, so a policy that splits by j costs no branch (chapter
// 12's FP8 forward computes part of them on the FMA pipes: soft_exp2.h).
struct HardwareExp2 {
  __device__ __forceinline__ float operator()(float x, int) const { return tc::ex2(x); }
};
// The CUDA math library's exp2f (chapter 14's backward): MUFU.EX2 with the library's handling of
// very small results around it, where tc::ex2 is the bare ex2.approx.ftz.
struct LibraryExp2 {
  __device__ __forceinline__ float operator()(float x, int) const { return exp2f(x); }
};

// ---- the backward's row math ---------------------------------------------------------------
// P = exp2(S scale log2 e - L2): the forward's probabilities recomputed from its row statistic,
// L2 = L log2 e per query. No max and no sum: L already is the row's log-normaliser. (With a
// score modifier, s is the modified score and scale_log2e is log2 e.)
template <class Exp2 = HardwareExp2>
__device__ __forceinline__ float recomputed_p(float s, float scale_log2e, float L2, Exp2 exp2 = {}) {
  return exp2(fmaf(s, scale_log2e, -L2), 0);
}
// dS = P o (dP - D), D = rowsum(dO o O) per query: the gradient through the softmax.
__device__ __forceinline__ float score_gradient(float p, float dp, float D) { return p * (dp - D); }

// ---- the scores' scale ------------------------------------------------------------------------
// sl2e = scale log2 e, one for the whole tile. Chapter 12's FP8 keys carry a descale per block
// of 128 keys, and a key tile wider than that block, or not aligned to it, spans several: it
// passes one scale per group of kPairs pairs (compile-time groups of the unrolled loops), and the
// softmax folds each into the max and into its FFMA, with no extra instruction per score.
template <int kPairs_, int kGroups>
struct GroupScale {
  static constexpr int kPairs = kPairs_;
  float v[kGroups];  // all > 0
  __device__ __forceinline__ float operator()(int j) const { return v[j / kPairs]; }
};

// ---- FA2's online softmax ------------------------------------------------------------------
// The state of kRows rows: m, l and the alpha of the last update.
//
// kRescaleLog2: how far a row's max may rise (log2 units) before m_i follows it. 0 is FA2's rule,
// m_i the exact running max. FA4's rule (Zadouri et al. 2025) keeps m_i while the max rises by at
// most kRescaleLog2: the result is the same, since m_i cancels between O_i and l_i, but P~ may
// then reach 2^kRescaleLog2 instead of 1, and alpha is exactly 1 unless the max rose by more, so
// a kernel that asks moved() skips the rescale of O_i almost always once the first tiles have
// set the max.
template <int kRows, int kRescaleLog2 = 0>
struct OnlineSoftmax {
  float m[kRows];      // running max, in log2 units
  float l[kRows];      // this lane's partial row sum of P~: alpha is the same for the whole row,
                       // so the quad's partials rescale consistently and are summed once, at the end
  float alpha[kRows];  // exp2(m_old - m_new) of the last update, for rescale()

  __device__ __forceinline__ void init() {
#pragma unroll
    for (int r = 0; r < kRows; ++r) m[r] = -INFINITY, l[r] = 0.0f, alpha[r] = 1.0f;
  }

  // S -> P~ = exp2(S sl2e - m_new) in place (sl2e = scale log2 e); m, l and alpha updated. A
  // row that has seen only masked keys keeps m = -inf: base 0 keeps exp2 away from
  // -inf - -inf = NaN (P~ = 0, alpha = 0). O is not touched: rescale() applies alpha when the
  // kernel is ready (chapter 12 first lets the P V in flight finish with the old O).
  template <class Tile, class Exp2 = HardwareExp2>
  __device__ __forceinline__ void update(const Tile& s, float sl2e, Exp2 exp2 = {}) {
#pragma unroll
    for (int r = 0; r < kRows; ++r) update_row(s, r, sl2e, exp2);
  }
  // The same for row slot r alone: a kernel that turns each finished row of P~ into the next
  // GEMM's operand right away (chapter 10's packp) frees the fp32 registers sooner.
  template <class Tile, class Exp2 = HardwareExp2>
  __device__ __forceinline__ void update_row(const Tile& s, int r, float sl2e, Exp2 exp2 = {}) {
    static_assert(Tile::kRows == kRows, "one state per row slot of the tile");
    float mx = -INFINITY;
#pragma unroll
    for (int j = 0; j < Tile::kPairs; ++j) mx = fmaxf(mx, fmaxf(s(r, j, 0), s(r, j, 1)));
    exponentiate(
        s, r, settle(r, tc::quad_max(mx) * sl2e), [sl2e](int) { return sl2e; }, exp2);
  }
  // With a scale per group of pairs: each group's max is scaled before the quad's max (the
  // scales are positive, so max(x) c = max(x c)).
  template <class Tile, int kPairs, int kGroups, class Exp2 = HardwareExp2>
  __device__ __forceinline__ void update(const Tile& s, const GroupScale<kPairs, kGroups>& sl2e, Exp2 exp2 = {}) {
#pragma unroll
    for (int r = 0; r < kRows; ++r) exponentiate(s, r, new_max(s, r, sl2e), sl2e, exp2);
  }
  // The same in two phases: every row's new max first, then `between()`, then every row's
  // exponentials. Chapter 12's FP8 forward waits for its turn at the MUFU there, so that one
  // warpgroup's maxes overlap the other's exponentials. between(m_new) returns 0, which the
  // exponentials add to the max: the kernel reads it from memory after its wait, because the
  // compiler may move arithmetic across a barrier but not ahead of a load it depends on.
  template <class Tile, int kPairs, int kGroups, class Exp2, class Between>
  __device__ __forceinline__ void update(const Tile& s, const GroupScale<kPairs, kGroups>& sl2e, Exp2 exp2,
                                         Between between) {
    float m_new[kRows];
#pragma unroll
    for (int r = 0; r < kRows; ++r) m_new[r] = new_max(s, r, sl2e);
    const float zero = between(m_new);
#pragma unroll
    for (int r = 0; r < kRows; ++r) exponentiate(s, r, m_new[r] + zero, sl2e, exp2);
  }
  // FA4's rule leaves m_i where it is on almost every tile, so the exponentials need not wait for
  // the tile's max: P~ = exp2(S sl2e - m_i) against the current m_i (plus `zero`, as above), the
  // tile's max taken beside them (FMNMX on the ALU while ex2 runs on the MUFU), and the max
  // checked after. S is only read: each pair of P~ goes to sink(r, j, x0, x1). Returns true when
  // the tile would move one of this thread's rows (settle): that P~ is wrong, and the caller runs
  // update() on the intact S instead. The rows' state is not touched; commit(sum) adds the row
  // sums once the caller knows that no row moved, which is what update() would have done: the
  // same m_i, the same exponentials in the same order, alpha = 1.
  template <class Tile, int kPairs, int kGroups, class Exp2, class Sink>
  __device__ __forceinline__ bool exponentiate_at_m(const Tile& s, const GroupScale<kPairs, kGroups>& sl2e, float zero,
                                                    Exp2 exp2, float (&sum)[kRows], Sink sink) const {
    static_assert(kRescaleLog2 > 0, "FA2's rule moves m_i with every new max: nothing to speculate on");
    static_assert(Tile::kRows == kRows && kPairs * kGroups == Tile::kPairs, "one scale per group of the tile's pairs");
    bool moved = false;
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      const float base = (m[r] == -INFINITY ? 0.0f : m[r]) + zero;
      float mx = -INFINITY, acc = 0.0f;
#pragma unroll
      for (int g = 0; g < kGroups; ++g) {
        float mg = -INFINITY;
#pragma unroll
        for (int j = g * kPairs; j < (g + 1) * kPairs; ++j) {
          float x[2];
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            mg = fmaxf(mg, s(r, j, e));
            x[e] = exp2(fmaf(s(r, j, e), sl2e(j), -base), j);
            acc += x[e];
          }
          sink(r, j, x[0], x[1]);
        }
        mx = fmaxf(mx, mg * sl2e.v[g]);
      }
      sum[r] = acc;
      moved |= settle(r, tc::quad_max(mx)) != m[r];
    }
    return moved;
  }
  __device__ __forceinline__ void commit(const float (&sum)[kRows]) {
#pragma unroll
    for (int r = 0; r < kRows; ++r) alpha[r] = 1.0f, l[r] += sum[r];
  }
  // Row r's max after this tile, log2 units, with a scale per group of pairs.
  template <class Tile, int kPairs, int kGroups>
  __device__ __forceinline__ float new_max(const Tile& s, int r, const GroupScale<kPairs, kGroups>& sl2e) const {
    static_assert(Tile::kRows == kRows && kPairs * kGroups == Tile::kPairs, "one scale per group of the tile's pairs");
    float mx = -INFINITY;
#pragma unroll
    for (int g = 0; g < kGroups; ++g) {
      float mg = -INFINITY;
#pragma unroll
      for (int j = g * kPairs; j < (g + 1) * kPairs; ++j) mg = fmaxf(mg, fmaxf(s(r, j, 0), s(r, j, 1)));
      mx = fmaxf(mx, mg * sl2e.v[g]);
    }
    return settle(r, tc::quad_max(mx));
  }
  // Row r's m_i after a tile whose largest scaled score is `top` (log2 units). Under FA4's rule a
  // row that has seen nothing yet (m = -inf) always follows: -inf + kRescaleLog2 < any top.
  __device__ __forceinline__ float settle(int r, float top) const {
    if constexpr (kRescaleLog2 > 0) return top > m[r] + kRescaleLog2 ? top : m[r];
    return fmaxf(m[r], top);
  }
  // Row r's new max m_new (log2 units) known: P~ = exp2(S sl2e(j) - m_new) in place, alpha, l.
  template <class Tile, class Scale, class Exp2>
  __device__ __forceinline__ void exponentiate(const Tile& s, int r, float m_new, const Scale& sl2e, Exp2 exp2) {
    const float base = m_new == -INFINITY ? 0.0f : m_new;
    alpha[r] = tc::ex2(m[r] - base);
    m[r] = m_new;
    float sum = 0.0f;
#pragma unroll
    for (int j = 0; j < Tile::kPairs; ++j)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        float& x = s(r, j, e);
        x = exp2(fmaf(x, sl2e(j), -base), j);
        sum += x;
      }
    l[r] = alpha[r] * l[r] + sum;
  }

  // O_i *= alpha, row by row.
  template <class Tile>
  __device__ __forceinline__ void rescale(const Tile& o) const {
#pragma unroll
    for (int r = 0; r < kRows; ++r)
#pragma unroll
      for (int j = 0; j < Tile::kPairs; ++j) o(r, j, 0) *= alpha[r], o(r, j, 1) *= alpha[r];
  }
  // True when some row's max moved in the last update (alpha != 1): only then does
  // rescale() change O.
  __device__ __forceinline__ bool moved() const {
    bool any = false;
#pragma unroll
    for (int r = 0; r < kRows; ++r) any |= alpha[r] != 1.0f;
    return any;
  }
  // Nothing to do after O += P~ V: O stays unnormalised until finish().
  template <class Tile>
  __device__ __forceinline__ void after_pv(const Tile&) const {}

  // The epilogue: O_i /= l_i and L_i = m_i ln 2 + ln l_i (natural log, as PyTorch's LSE). A
  // row that saw no key (l = 0) gets O = 0 and L = -inf.
  template <class Tile>
  __device__ __forceinline__ void finish(const Tile& o, float (&L)[kRows]) const {
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      const float sum = tc::quad_sum(l[r]);
      const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;
      L[r] = sum > 0.0f ? m[r] * ladder::kLn2 + logf(sum) : -INFINITY;
#pragma unroll
      for (int j = 0; j < Tile::kPairs; ++j) o(r, j, 0) *= inv, o(r, j, 1) *= inv;
    }
  }
};

}  // namespace attn
