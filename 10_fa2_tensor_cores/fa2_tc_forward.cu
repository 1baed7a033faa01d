// FlashAttention-2 forward (Dao, 2023) on tensor cores: bf16 inputs, fp32 accumulators,
// mma.sync.m16n8k16 (chapter 09's wrappers).
//
// One thread block per (row tile Q_i, query head); its warps split the B_r rows, 16 (or 32)
// each, and never exchange data: a warp's rows of S_ij, P_ij and O_i live in its registers
// from the first key tile to the last (split-Q, the FA2 paper's fix of FA1's split-K).
//
//   Q_i       -> shared (cp.async); its A fragments by ldmatrix, once into registers, or
//                again at every step when 32 rows a warp leave no registers for them
//   for each key tile j (K_j, V_j double-buffered by cp.async into swizzled shared memory):
//     S_ij   = Q_i K_j^T                  mma, B fragments by ldmatrix from K_j
//     m_new  = max(m_i, rowmax S_ij)      quad shuffles; P~ = exp2(S log2e/sqrt(d) - m log2e/sqrt(d))
//     O_i   *= exp(m_i - m_new), l_i = alpha l_i + rowsum P~
//     O_i   += P~ V_j                     P~ rounded to bf16 in registers is the A operand
//                                         (fa2_tc.cuh, c_to_a); B by ldmatrix.trans from V_j
//   O_i /= l_i, L_i = m_i / sqrt(d) + log l_i, O_i -> shared -> global (16-byte stores)
//
// Causal: key tiles after the row tile's last query are never loaded; only the tiles that
// cross the diagonal (and the N_kv tail) run the masked copy of the step.
//
// The tile configurations (FwdConfig) and the optimisations each may switch on (32 rows a
// warp, and the Trick bits: P~ packed early, split K/V waits, skipped rescales) are compiled
// side by side; the benchmark sweeps them, index 0 is the default.
#include <climits>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "cuda_check.h"
#include "fa2_tc.cuh"
#include "fa2_tc.h"
#include "fa2_tc_arguments.h"

namespace fa2tc {

namespace {

using namespace dev;
using bf16_t = __nv_bfloat16;

// Optimisations a configuration may switch on (a bit mask), each measurable on its own:
//   kPackP        P~ rounded to bf16 right after the exponentials (c_to_a for the whole tile at
//                 once): half the registers (bf16 pairs, not fp32) live through P~ V_j.
//   kSplitKV      K_j and V_j in separate cp.async groups: S = Q_i K_j^T waits only for K_j, and
//                 P~ V_j waits for V_j behind a second barrier (as FA2's own kernel does).
//   kSkipRescale  O_i *= alpha is skipped when no row of the warp found a new max in this tile
//                 (then alpha = 1 exactly, so the result is bit for bit the same); one vote.
//                 Data-dependent: it saves work only once the running maxima have settled (FA4
//                 rescales conditionally for the same reason); logits that rise along the keys
//                 in the order they are visited defeat it (the benchmark's logits=rising case).
enum Trick : int { kPackP = 1, kSplitKV = 2, kSkipRescale = 4 };

// A compiled tile configuration of the forward kernel.
//   kWarps x kMTiles m16 tiles = B_r query rows; B_c keys per step; kStages K/V buffers;
//   kQInRegs: Q_i's A fragments stay in registers (else re-read from shared memory each
//   step, as FA2's own kernel does at d = 128 to stay within 255 registers); kTricks: above.
template <int d_, int kWarps_, int kMTiles_, int B_c_, bool kQInRegs_, int kStages_, int kMinBlocks_, int kTricks_ = 0>
struct FwdConfig {
  static constexpr int d = d_, kWarps = kWarps_, kMTiles = kMTiles_, B_c = B_c_, kStages = kStages_;
  static constexpr bool kQInRegs = kQInRegs_;
  static constexpr int kMinBlocks = kMinBlocks_;
  static constexpr bool kPackP = kTricks_ & Trick::kPackP, kSplitKV = kTricks_ & Trick::kSplitKV,
                        kSkipRescale = kTricks_ & Trick::kSkipRescale;
  static constexpr int kThreads = 32 * kWarps, kRowsPerWarp = 16 * kMTiles, B_r = kWarps * kRowsPerWarp;
  static constexpr int kRowBytes = 2 * d;  // one row of Q, K, V, O in shared memory
  static constexpr int kQBytes = B_r * kRowBytes, kKVBytes = B_c * kRowBytes, kStageBytes = 2 * kKVBytes;
  // Stage s of the ring holds K_j then V_j. With Q_i in registers its buffer is needed only
  // before the loop, so it shares the last stage, which is first filled in step 0, after the
  // barrier that follows every warp's Q_i reads (and at the end holds O_i on its way out).
  static constexpr bool kQInLastStage = kQInRegs && kQBytes <= kStageBytes;
  static constexpr int kQOffset = kQInLastStage ? (kStages - 1) * kStageBytes : kStages * kStageBytes;
  static constexpr int kSmemBytes = kQInLastStage ? kStages * kStageBytes : kStages * kStageBytes + kQBytes;
  // cp.async groups: one per key tile (K_j and V_j together), or two (K_j, then V_j). The
  // prologue commits kStages - 1 tiles' groups (Q_i rides in the first); at the top of a step
  // all but the newest kKWait have landed, which covers K_j (and V_j unless split); split,
  // V_j is waited for (kKWait + 1) before P~ V_j, once the next tile's groups are committed.
  static constexpr int kGroupsPerTile = kSplitKV ? 2 : 1;
  static constexpr int kKWait = kGroupsPerTile * (kStages - 1) - 1;
  static_assert(d == 64 || d == 128, "the 128-byte swizzle needs rows of 64 or 128 bf16");
  static_assert(B_c % 16 == 0, "P_ij is reused as A fragments of 16 keys");
};

struct FwdParams {
  const bf16_t *Q, *K, *V;
  bf16_t* O;
  float* L;
  std::int64_t q_head, kv_head, o_head, l_head;  // elements between consecutive heads
  int H, H_kv, group, N_q, N_kv, offset;         // offset = N_kv - N_q (causal diagonal)
  int T_r;
  bool causal;
  float scale, scale_log2e;
};

// The per-lane statistics and accumulators of one warp: kMTiles m16 tiles, two rows
// (g and g + 8) per tile and lane. r = 2 * mt + h indexes this lane's rows.
template <class C>
struct Acc {
  float o[C::kMTiles][C::d / 8][4];
  float m[2 * C::kMTiles];  // running max of the raw scores (not yet scaled)
  float l[2 * C::kMTiles];  // FA2: this lane's partial row sum; FA1: the full row sum
};

// The three phases of one step of the inner loop (step() below runs them in order).
template <class C>
using SFrag = float[C::kMTiles][C::B_c / 8][4];  // S_ij: this lane's C fragments
template <class C>
using PFrag = std::uint32_t[C::kMTiles][C::B_c / 16][4];  // P~_ij in bf16: A fragments
template <class C>
using QFrag = std::uint32_t[C::kMTiles][C::d / 16][4];  // Q_i: A fragments (kQInRegs)

// S_ij = Q_i K_j^T: for each 16-wide slice kk of d, the B fragments of 16 keys per
// ldmatrix.x4; every fragment feeds kMTiles mma (one per m16 tile of the warp).
template <class C>
__device__ __forceinline__ void s_gemm(SFrag<C>& s, const QFrag<C>& q_frag, std::uint32_t q_lane,
                                       std::uint32_t k_lane) {
  constexpr int d = C::d, B_c = C::B_c, MT = C::kMTiles, RB = C::kRowBytes;
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int n = 0; n < B_c / 8; ++n) s[mt][n][0] = s[mt][n][1] = s[mt][n][2] = s[mt][n][3] = 0.0f;
#pragma unroll
  for (int kk = 0; kk < d / 16; ++kk) {
    std::uint32_t a[MT][4];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
      if constexpr (C::kQInRegs) {
        a[mt][0] = q_frag[mt][kk][0], a[mt][1] = q_frag[mt][kk][1];
        a[mt][2] = q_frag[mt][kk][2], a[mt][3] = q_frag[mt][kk][3];
      } else {
        tc::ldmatrix_x4(a[mt], frag_addr(q_lane, 16 * mt, 2 * kk, RB));
      }
    }
#pragma unroll
    for (int np = 0; np < B_c / 16; ++np) {
      std::uint32_t b[4];
      tc::ldmatrix_x4(b, frag_addr(k_lane, 16 * np, 2 * kk, RB));
      const std::uint32_t b_lo[2] = {b[0], b[1]}, b_hi[2] = {b[2], b[3]};
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
        tc::mma_m16n8k16_bf16(s[mt][2 * np], a[mt], b_lo);
        tc::mma_m16n8k16_bf16(s[mt][2 * np + 1], a[mt], b_hi);
      }
    }
  }
}

// The mask (kMasked: the tile crosses the causal diagonal or the N_kv tail; only those
// tiles pay for it), the online softmax, O_i's rescale; P~ left in s (fp32) or, kPackP, in
// p_frag (bf16 A fragments).
template <class C, Normalisation kNorm, bool kMasked>
__device__ __forceinline__ void softmax(Acc<C>& acc, SFrag<C>& s, PFrag<C>& p_frag, int row0, int j0,
                                        const FwdParams& p) {
  constexpr int d = C::d, B_c = C::B_c, MT = C::kMTiles;
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;

  if constexpr (kMasked) {  // -inf past N_kv and, causal, for keys after query + offset
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int n = 0; n < B_c / 8; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int row = row0 + 16 * mt + g + 8 * (e / 2), col = j0 + 8 * n + 2 * t + e % 2;
          if (col >= p.N_kv || (p.causal && col > row + p.offset)) s[mt][n][e] = -INFINITY;
        }
  }

  // The online softmax on the accumulator fragments. This lane holds rows g and g + 8 of
  // each m16 tile, 2 columns per n-tile; the 4 lanes of a quad share a row.
  const float sl2e = p.scale_log2e;
  float alpha[2 * MT];  // FA2: the factor O_i's row r is rescaled by (after the loop)
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = 2 * mt + h;
      float tile_max = -INFINITY;
#pragma unroll
      for (int n = 0; n < B_c / 8; ++n) tile_max = fmaxf(tile_max, fmaxf(s[mt][n][2 * h], s[mt][n][2 * h + 1]));
      tile_max = quad_max(tile_max);
      if constexpr (kNorm == Normalisation::FA2) {
        // P~ against the new max directly (FA2: no beta). A row that has seen only masked
        // keys keeps m = -inf; its exponentials use base 0 so that exp2(-inf - -inf) = NaN
        // never happens: P~ = 0, alpha = 0.
        // alpha = exp2((m_i - m_new) sl2e) is exactly 1 when the max did not move (which
        // kSkipRescale relies on; m_i sl2e - base would not be: the compiler fuses it into
        // an FMA, which leaves the rounding residue of base instead of 0).
        const float m_new = fmaxf(acc.m[r], tile_max);
        const float base = m_new == -INFINITY ? 0.0f : m_new * sl2e;
        alpha[r] = tc::ex2(m_new == -INFINITY ? 0.0f : (acc.m[r] - m_new) * sl2e);
        acc.m[r] = m_new;
        float sum = 0.0f;
#pragma unroll
        for (int n = 0; n < B_c / 8; ++n)
#pragma unroll
          for (int e = 2 * h; e < 2 * h + 2; ++e) {
            s[mt][n][e] = tc::ex2(fmaf(s[mt][n][e], sl2e, -base));
            sum += s[mt][n][e];
          }
        // l stays a per-lane partial sum until the end: alpha is the same for the whole
        // row, so the quad's partials rescale consistently and one reduction suffices.
        acc.l[r] = alpha[r] * acc.l[r] + sum;
      } else {
        // FA1 (Algorithm 1, lines 9-12): the tile's own statistics m~, l~ first, then
        //   m_new = max(m_i, m~), alpha = exp(m_i - m_new), beta = exp(m~ - m_new),
        //   l_new = alpha l_i + beta l~,  O_i = diag(l_new)^-1 (diag(l_i) alpha O_i + beta P~ V_j).
        const float tile_base = tile_max == -INFINITY ? 0.0f : tile_max * sl2e;
        float sum = 0.0f;
#pragma unroll
        for (int n = 0; n < B_c / 8; ++n)
#pragma unroll
          for (int e = 2 * h; e < 2 * h + 2; ++e) {
            s[mt][n][e] = tc::ex2(fmaf(s[mt][n][e], sl2e, -tile_base));
            sum += s[mt][n][e];
          }
        const float l_tile = quad_sum(sum);
        const float m_new = fmaxf(acc.m[r], tile_max);
        const float a = acc.m[r] == -INFINITY ? 0.0f : tc::ex2((acc.m[r] - m_new) * sl2e);
        const float beta = tile_max == -INFINITY ? 0.0f : tc::ex2((tile_max - m_new) * sl2e);
        const float l_new = a * acc.l[r] + beta * l_tile;
        const float keep = acc.l[r] * a;  // undo the old normalisation and rescale
#pragma unroll
        for (int n = 0; n < d / 8; ++n) acc.o[mt][n][2 * h] *= keep, acc.o[mt][n][2 * h + 1] *= keep;
#pragma unroll
        for (int n = 0; n < B_c / 8; ++n) s[mt][n][2 * h] *= beta, s[mt][n][2 * h + 1] *= beta;
        acc.m[r] = m_new;
        acc.l[r] = l_new;
      }
    }
    if constexpr (C::kPackP) {
#pragma unroll
      for (int kk = 0; kk < B_c / 16; ++kk) c_to_a(p_frag[mt][kk], s[mt][2 * kk], s[mt][2 * kk + 1]);
    }
  }

  if constexpr (kNorm == Normalisation::FA2) {
    // O_i *= alpha, the only per-step work on O_i. kSkipRescale: when every alpha of the
    // warp is exactly 1 (no row found a new max) the multiplications change nothing.
    bool rescale = true;
    if constexpr (C::kSkipRescale) {
      bool moved = false;
#pragma unroll
      for (int r = 0; r < 2 * MT; ++r) moved |= alpha[r] != 1.0f;
      rescale = __any_sync(0xffffffff, moved);
    }
    if (rescale) {
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int n = 0; n < d / 8; ++n)
#pragma unroll
          for (int e = 0; e < 4; ++e) acc.o[mt][n][e] *= alpha[2 * mt + e / 2];
    }
  }
}

// O_i += P~_ij V_j: P~ from the S registers (bf16) or p_frag, V_j's B fragments by
// ldmatrix.trans, 16 columns of d per ldmatrix.x4.
template <class C, Normalisation kNorm>
__device__ __forceinline__ void pv_gemm(Acc<C>& acc, const SFrag<C>& s, const PFrag<C>& p_frag, std::uint32_t v_lane) {
  constexpr int d = C::d, B_c = C::B_c, MT = C::kMTiles, RB = C::kRowBytes;
#pragma unroll
  for (int kk = 0; kk < B_c / 16; ++kk) {
    std::uint32_t a[MT][4];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
      if constexpr (C::kPackP) {
        a[mt][0] = p_frag[mt][kk][0], a[mt][1] = p_frag[mt][kk][1];
        a[mt][2] = p_frag[mt][kk][2], a[mt][3] = p_frag[mt][kk][3];
      } else {
        c_to_a(a[mt], s[mt][2 * kk], s[mt][2 * kk + 1]);
      }
    }
#pragma unroll
    for (int dp = 0; dp < d / 16; ++dp) {
      std::uint32_t b[4];
      tc::ldmatrix_x4_trans(b, frag_addr(v_lane, 16 * kk, 2 * dp, RB));
      const std::uint32_t b_lo[2] = {b[0], b[1]}, b_hi[2] = {b[2], b[3]};
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
        tc::mma_m16n8k16_bf16(acc.o[mt][2 * dp], a[mt], b_lo);
        tc::mma_m16n8k16_bf16(acc.o[mt][2 * dp + 1], a[mt], b_hi);
      }
    }
  }

  if constexpr (kNorm == Normalisation::FA1) {  // ... and divide by l_new: O_i stays normalised
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const float l = acc.l[2 * mt + h], inv = l > 0.0f ? 1.0f / l : 0.0f;
#pragma unroll
        for (int n = 0; n < d / 8; ++n) acc.o[mt][n][2 * h] *= inv, acc.o[mt][n][2 * h + 1] *= inv;
      }
  }
}

// One step of the plain loop: S_ij, the online softmax, O_i += P~_ij V_j.
template <class C, Normalisation kNorm, bool kMasked>
__device__ __forceinline__ void step(Acc<C>& acc, const QFrag<C>& q_frag, std::uint32_t q_lane, std::uint32_t k_lane,
                                     std::uint32_t v_lane, int row0, int j0, const FwdParams& p) {
  SFrag<C> s;
  PFrag<C> p_frag;
  s_gemm<C>(s, q_frag, q_lane, k_lane);
  softmax<C, kNorm, kMasked>(acc, s, p_frag, row0, j0, p);
  if constexpr (C::kSplitKV) {  // V_j has landed (this thread's copies), and everyone's
    tc::cp_async_wait<C::kKWait + 1>();
    __syncthreads();
  }
  pv_gemm<C, kNorm>(acc, s, p_frag, v_lane);
}

template <class C, Normalisation kNorm>
__global__ void __launch_bounds__(C::kThreads, C::kMinBlocks) forward_kernel(const __grid_constant__ FwdParams p) {
  constexpr int d = C::d, B_r = C::B_r, B_c = C::B_c, MT = C::kMTiles, RB = C::kRowBytes, kStages = C::kStages;
  extern __shared__ __align__(1024) unsigned char smem[];
  const std::uint32_t K_s = tc::smem_addr(smem);  // stage s: K_j [B_c][d] at K_s + s * kStageBytes,
  const std::uint32_t V_s = K_s + C::kKVBytes;    //          V_j [B_c][d] right after it
  const std::uint32_t Q_s = K_s + C::kQOffset;    // [B_r][d]; at the end O_i on its way out

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  // Causal row tiles see more keys the lower they are: the heaviest go first, so the
  // lightest fill the tail of the grid.
  const int i_tile = p.causal ? p.T_r - 1 - static_cast<int>(blockIdx.x) : static_cast<int>(blockIdx.x);
  const int i0 = i_tile * B_r;
  const int head = blockIdx.y, b = head / p.H, h = head % p.H;
  const int kv_head = b * p.H_kv + h / p.group;
  const bf16_t* Q = p.Q + head * p.q_head;
  const bf16_t* K = p.K + kv_head * p.kv_head;
  const bf16_t* V = p.V + kv_head * p.kv_head;

  // The keys this row tile sees: all N_kv, or, causal, up to its last query + offset.
  // Key tiles below n_full are visible to every row of the tile: no mask.
  const int kv_end = p.causal ? max(0, min(p.N_kv, i0 + B_r + p.offset)) : p.N_kv;
  const int T_c = ceil_div(kv_end, B_c);
  const int n_full = (p.causal ? max(0, min(p.N_kv, i0 + p.offset + 1)) : p.N_kv) / B_c;

  // Prologue: Q_i and the first kStages - 1 key tiles. The key tiles run from the last
  // (the masked ones, on the diagonal) down to 0, as in FA2.
  load_tile<B_r, d, C::kThreads>(Q_s, Q, i0, p.N_q);
  // Only the first key tile loaded (the last, j = T_c - 1) can run past N_kv: the others are
  // copied without the row guard (std::false_type).
  auto load_kv = [&](int it, auto guarded) {
    constexpr bool kGuarded = decltype(guarded)::value;
    if (it < T_c) {
      const int j0 = (T_c - 1 - it) * B_c, stage = it % kStages;
      load_tile<B_c, d, C::kThreads, kGuarded>(K_s + stage * C::kStageBytes, K + std::int64_t(j0) * d, 0, p.N_kv - j0);
      if constexpr (C::kSplitKV) tc::cp_async_commit();
      load_tile<B_c, d, C::kThreads, kGuarded>(V_s + stage * C::kStageBytes, V + std::int64_t(j0) * d, 0, p.N_kv - j0);
    } else if constexpr (C::kSplitKV) {
      tc::cp_async_commit();
    }
    tc::cp_async_commit();  // always kGroupsPerTile groups, possibly empty: the wait counts stay uniform
  };
  load_kv(0, std::true_type{});
#pragma unroll
  for (int it = 1; it < kStages - 1; ++it) load_kv(it, std::false_type{});

  const int row0 = i0 + warp * C::kRowsPerWarp;  // this warp's first query
  const std::uint32_t q_lane = lane_base(Q_s + warp * C::kRowsPerWarp * RB, a_lane(lane).row, a_lane(lane).chunk, RB);
  Acc<C> acc;
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
    for (int n = 0; n < d / 8; ++n) acc.o[mt][n][0] = acc.o[mt][n][1] = acc.o[mt][n][2] = acc.o[mt][n][3] = 0.0f;
    acc.m[2 * mt] = acc.m[2 * mt + 1] = -INFINITY;
    acc.l[2 * mt] = acc.l[2 * mt + 1] = 0.0f;
  }
  auto k_lane_of = [&](int stage) {
    return lane_base(K_s + stage * C::kStageBytes, b_lane(lane).row, b_lane(lane).chunk, RB);
  };
  auto v_lane_of = [&](int stage) {
    return lane_base(V_s + stage * C::kStageBytes, bt_lane(lane).row, bt_lane(lane).chunk, RB);
  };
  QFrag<C> q_frag;
  if constexpr (C::kQInRegs) {
    tc::cp_async_wait<C::kKWait>();  // Q_i (in the first group) and K_j of the first tile have landed
    __syncthreads();
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int kk = 0; kk < d / 16; ++kk) tc::ldmatrix_x4(q_frag[mt][kk], frag_addr(q_lane, 16 * mt, 2 * kk, RB));
  }

  for (int it = 0; it < T_c; ++it) {
    const int j = T_c - 1 - it, stage = it % kStages;
    tc::cp_async_wait<C::kKWait>();                // K_j (and V_j unless split) have landed (this thread's copies) ...
    __syncthreads();                               // ... everyone's; and every warp is done with step it - 1
    load_kv(it + kStages - 1, std::false_type{});  // so the buffer step it - 1 used can be refilled
    const std::uint32_t k_lane = k_lane_of(stage), v_lane = v_lane_of(stage);
    if (j >= n_full)
      step<C, kNorm, true>(acc, q_frag, q_lane, k_lane, v_lane, row0, j * B_c, p);
    else
      step<C, kNorm, false>(acc, q_frag, q_lane, k_lane, v_lane, row0, j * B_c, p);
  }
  // Nothing may still be landing in shared memory: other threads' copies of Q_i into this
  // warp's rows (when no key tile ran, no barrier has ordered them yet), and the empty tail groups.
  tc::cp_async_wait<0>();
  __syncthreads();

  // Epilogue: O_i = diag(l_i)^-1 O_i (FA2) and L_i = m_i / sqrt(d) + log l_i. A row that saw
  // no key (l = 0) gets O = 0 and L = -inf.
  float* L = p.L + head * p.l_head;
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int hh = 0; hh < 2; ++hh) {
      const int r = 2 * mt + hh;
      const float l = kNorm == Normalisation::FA2 ? quad_sum(acc.l[r]) : acc.l[r];
      const float inv = kNorm == Normalisation::FA2 && l > 0.0f ? 1.0f / l : 1.0f;
#pragma unroll
      for (int n = 0; n < d / 8; ++n) acc.o[mt][n][2 * hh] *= inv, acc.o[mt][n][2 * hh + 1] *= inv;
      const int row = row0 + 16 * mt + g + 8 * hh;
      if (t == 0 && row < p.N_q) L[row] = l > 0.0f ? acc.m[r] * p.scale + logf(l) : -INFINITY;
    }

  // O_i through this warp's own rows of the Q_i buffer (no other warp reads them), then
  // 16-byte coalesced stores. Each lane's bf16 pairs land in distinct banks (swizzle).
  bf16_t* O = p.O + head * p.o_head;
  unsigned char* O_s = smem + C::kQOffset + warp * C::kRowsPerWarp * RB;
  __syncwarp();  // Q_s reads by ldmatrix of this warp are complete (they are synchronous)
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int n = 0; n < d / 8; ++n)
#pragma unroll
      for (int hh = 0; hh < 2; ++hh) {
        const int r = 16 * mt + g + 8 * hh, col = 8 * n + 2 * t;
        *reinterpret_cast<std::uint32_t*>(O_s + 2 * tc::swizzle_128b(r, col, d)) =
            tc::pack_bf16x2(acc.o[mt][n][2 * hh], acc.o[mt][n][2 * hh + 1]);
      }
  __syncwarp();
  constexpr int kChunks = d / 8;
#pragma unroll
  for (int u = 0; u < C::kRowsPerWarp * kChunks / 32; ++u) {
    const int idx = lane + 32 * u, r = idx / kChunks, c = idx % kChunks;
    if (row0 + r < p.N_q)
      *reinterpret_cast<uint4*>(O + std::int64_t(row0 + r) * d + 8 * c) =
          *reinterpret_cast<const uint4*>(O_s + 2 * tc::swizzle_128b(r, 8 * c, d));
  }
}

// ---- the compiled configurations ----------------------------------------------------------
// name: w<warps>_r<rows per warp>_c<B_c>_<q in regs or smem>_s<stages>_b<blocks per SM the
// registers are budgeted for>, then the tricks switched on. Index 0 is the default. At
// d = 128 the others are the README's steps towards it, one change at a time (16 -> 32 rows
// a warp, + packp, + splitkv; + skiprescale is the default), and the default without packp,
// without splitkv. ptxas reports spills for some of the steps (README): 32 rows a warp at
// B_c = 64 sit at the 255-register limit, and which combinations fit is the allocator's call.
//                      d  warps mtiles B_c  Q regs stages minBlocks tricks
using F128_0 = FwdConfig<128, 4, 2, 64, false, 2, 2, kPackP | kSplitKV | kSkipRescale>;  // FA2's own tiles
using F128_1 = FwdConfig<128, 8, 1, 64, true, 2, 1>;   // the first default: 16 rows a warp, Q_i in registers
using F128_2 = FwdConfig<128, 4, 2, 64, false, 2, 2>;  // 32 rows a warp (Q_i re-read from shared memory)
using F128_3 = FwdConfig<128, 4, 2, 64, false, 2, 2, kPackP>;
using F128_4 = FwdConfig<128, 4, 2, 64, false, 2, 2, kPackP | kSplitKV>;        // the default without skiprescale
using F128_5 = FwdConfig<128, 4, 2, 64, false, 2, 2, kSplitKV | kSkipRescale>;  // ... without packp
using F128_6 = FwdConfig<128, 4, 2, 64, false, 2, 2, kPackP | kSkipRescale>;    // ... without splitkv
using F64_0 = FwdConfig<64, 4, 2, 128, false, 2, 2>;                            // FA2's own tiles at d = 64
using F64_1 = FwdConfig<64, 4, 2, 64, true, 2, 2>;                              // the first default (Q_i in registers)
using F64_2 = FwdConfig<64, 4, 2, 128, false, 2, 2, kPackP | kSplitKV>;

template <class C>
TileConfig describe() {
  return {"w" + std::to_string(C::kWarps) + "_r" + std::to_string(C::kRowsPerWarp) + "_c" + std::to_string(C::B_c) +
              (C::kQInRegs ? "_qreg" : "_qsmem") + "_s" + std::to_string(C::kStages) + "_b" +
              std::to_string(C::kMinBlocks) + (C::kPackP ? "_packp" : "") + (C::kSplitKV ? "_splitkv" : "") +
              (C::kSkipRescale ? "_skiprescale" : ""),
          C::B_r, C::B_c, C::kWarps, 0};
}

template <class C, Normalisation kNorm>
void launch(const FwdParams& p, int heads, cudaStream_t stream) {
  FwdParams q = p;
  q.T_r = ceil_div(p.N_q, C::B_r);
  ladder::check_grid("fa2tc::forward", q.T_r, heads);
  // The largest carveout: the blocks per SM the registers allow must fit in shared memory too.
  ladder::allow_dynamic_smem(forward_kernel<C, kNorm>, C::kSmemBytes, "fa2tc::forward (" + describe<C>().name + ")",
                             true);
  const dim3 grid(static_cast<unsigned>(q.T_r), static_cast<unsigned>(heads));
  forward_kernel<C, kNorm><<<grid, C::kThreads, C::kSmemBytes, stream>>>(q);
  CUDA_CHECK_LAUNCH();
}

template <class C>
void launch_norm(const FwdParams& p, int heads, Normalisation norm, cudaStream_t stream) {
  if (norm == Normalisation::FA2) return launch<C, Normalisation::FA2>(p, heads, stream);
  return launch<C, Normalisation::FA1>(p, heads, stream);
}

// The configurations of one head dimension, in index order.
template <class... Cs>
struct ConfigList {
  static std::vector<TileConfig> describe_all() { return {describe<Cs>()...}; }
  static void launch(int config, const FwdParams& p, int heads, Normalisation norm, cudaStream_t stream) {
    int i = 0;
    ((i++ == config ? launch_norm<Cs>(p, heads, norm, stream) : void()), ...);
  }
};
using Configs128 = ConfigList<F128_0, F128_1, F128_2, F128_3, F128_4, F128_5, F128_6>;
using Configs64 = ConfigList<F64_0, F64_1, F64_2>;

}  // namespace

const char* name(Normalisation n) { return n == Normalisation::FA2 ? "fa2norm" : "fa1norm"; }

std::vector<TileConfig> forward_configs(int d) {
  if (d == 128) return Configs128::describe_all();
  if (d == 64) return Configs64::describe_all();
  return {};
}

void forward(const ladder::AttentionShape& s, const bf16* Q, const bf16* K, const bf16* V, bf16* O, float* L,
             cudaStream_t stream) {
  forward(s, Q, K, V, O, L, ForwardOptions{}, stream);
}

void forward(const ladder::AttentionShape& s, const bf16* Q, const bf16* K, const bf16* V, bf16* O, float* L,
             const ForwardOptions& opt, cudaStream_t stream) {
  const std::string who = "fa2tc::forward";
  check_shape(s, who);
  check_config(opt.config, static_cast<int>(forward_configs(s.d).size()), s.d, who);
  ladder::check_pointers(who, {{"Q", Q}, {"K", K}, {"V", V}, {"O", O}}, 16);
  check_row_vector(L, who, "L");
  check_strides(s, opt.strides, who);
  const Strides st = packed_strides(s, opt.strides);
  FwdParams p{};
  p.Q = Q, p.K = K, p.V = V, p.O = O, p.L = L;
  p.q_head = st.q_head, p.kv_head = st.kv_head, p.o_head = st.o_head, p.l_head = st.l_head;
  p.H = s.H, p.H_kv = s.hkv(), p.group = s.group(), p.N_q = s.N, p.N_kv = s.nkv(), p.offset = s.nkv() - s.N;
  p.causal = s.causal;
  p.scale = s.scale(), p.scale_log2e = s.scale() * kLog2e;
  const int heads = static_cast<int>(s.heads());
  if (s.d == 128) return Configs128::launch(opt.config, p, heads, opt.norm, stream);
  return Configs64::launch(opt.config, p, heads, opt.norm, stream);
}

}  // namespace fa2tc

namespace fa2tc::detail {

// For both row widths, every lane pattern, the per-lane chunk offsets the kernels fold into
// lane_base (0, or the dQ warp's rows / columns), and every fragment offset with bits
// disjoint from the lane's chunk: frag_addr must give what tc::swizzle_128b gives.
std::string check_swizzle_addressing() {
  using namespace dev;
  const std::uint32_t tile = 3 * 1024;  // any row_bytes-aligned base (the kernels' are)
  using Pattern = RowChunk (*)(int);
  const std::pair<const char*, Pattern> patterns[] = {
      {"a_lane", a_lane}, {"b_lane", b_lane}, {"bt_lane", bt_lane}, {"at_lane", at_lane}};
  for (int row_elems : {64, 128}) {
    const int row_bytes = 2 * row_elems, chunks = row_elems / 8;
    for (const auto& [name, pattern] : patterns)
      for (int lane_extra = 0; lane_extra < chunks; lane_extra += 2)
        for (int lane = 0; lane < 32; ++lane) {
          const RowChunk rc = pattern(lane);
          const int chunk = rc.chunk + lane_extra;
          if (chunk >= chunks) continue;
          const std::uint32_t base = lane_base(tile, rc.row, chunk, row_bytes);
          for (int row_off = 0; row_off <= 128; row_off += 8)
            for (int chunk_off = 0; chunk + chunk_off < chunks; ++chunk_off) {
              if ((chunk & chunk_off) != 0) continue;  // the kernels only add disjoint bits
              const std::uint32_t got = frag_addr(base, row_off, chunk_off, row_bytes);
              const std::uint32_t want =
                  tile + 2 * tc::swizzle_128b(rc.row + row_off, 8 * (chunk + chunk_off), row_elems);
              if (got != want)
                return std::string(name) + ": row width " + std::to_string(row_elems) + ", lane " +
                       std::to_string(lane) + ", lane chunk " + std::to_string(chunk) + ", offset (" +
                       std::to_string(row_off) + " rows, " + std::to_string(chunk_off) + " chunks): address " +
                       std::to_string(got) + ", tc::swizzle_128b says " + std::to_string(want);
            }
        }
  }
  return {};
}

}  // namespace fa2tc::detail
