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

#include "attention_rows.cuh"
#include "config_list.h"
#include "cuda_check.h"
#include "fa1_rows.cuh"
#include "fa2_tc.cuh"
#include "fa2_tc.h"
#include "fa2_tc_arguments.h"
#include "numeric.h"

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
  float scale_log2e;
};

// The registers of one warp's kMTiles m16 tiles of rows (two rows, g and g + 8, per tile and
// lane): S_ij and O_i as C fragments, P~_ij as A fragments, Q_i as A fragments (kQInRegs).
template <class C>
using SFrag = float[C::kMTiles][C::B_c / 8][4];
template <class C>
using OFrag = float[C::kMTiles][C::d / 8][4];
template <class C>
using PFrag = std::uint32_t[C::kMTiles][C::B_c / 16][4];
template <class C>
using QFrag = std::uint32_t[C::kMTiles][C::d / 16][4];

// The row statistics of a warp's rows: FA2's online softmax, or FA1's normalisation with the
// same interface (fa1_rows.cuh).
template <class C, Normalisation kNorm>
using Rows =
    std::conditional_t<kNorm == Normalisation::FA2, attn::OnlineSoftmax<2 * C::kMTiles>, Fa1Rows<2 * C::kMTiles>>;

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
// tiles pay for it), the online softmax (attention_rows.cuh), O_i's rescale; P~ left in s
// (fp32) or, kPackP, in p_frag (bf16 A fragments).
template <class C, bool kMasked, class R>
__device__ __forceinline__ void softmax(R& rows, OFrag<C>& o, SFrag<C>& s, PFrag<C>& p_frag, int row0, int j0,
                                        const FwdParams& p) {
  constexpr int MT = C::kMTiles;
  const attn::MmaTile<MT, C::B_c / 8> S{s};
  if constexpr (kMasked) {  // -inf past N_kv and, causal, for keys after query + offset
    const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int n = 0; n < C::B_c / 8; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int row = row0 + 16 * mt + g + 8 * (e / 2), col = j0 + 8 * n + 2 * t + e % 2;
          if (col >= p.N_kv || (p.causal && col > row + p.offset)) s[mt][n][e] = -INFINITY;
        }
  }
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
    rows.update_row(S, 2 * mt, p.scale_log2e);
    rows.update_row(S, 2 * mt + 1, p.scale_log2e);
    if constexpr (C::kPackP) {  // this m16 tile's P~ to bf16 now: its fp32 registers are free
#pragma unroll
      for (int kk = 0; kk < C::B_c / 16; ++kk) c_to_a(p_frag[mt][kk], s[mt][2 * kk], s[mt][2 * kk + 1]);
    }
  }
  // O_i *= alpha, the only per-step work on O_i. kSkipRescale: when every alpha of the warp
  // is exactly 1 (no row found a new max) the multiplications change nothing: one vote.
  const attn::MmaTile<MT, C::d / 8> O{o};
  if constexpr (C::kSkipRescale) {
    if (__any_sync(0xffffffff, rows.moved())) rows.rescale(O);
  } else {
    rows.rescale(O);
  }
}

// O_i += P~_ij V_j: P~ from the S registers (bf16) or p_frag, V_j's B fragments by
// ldmatrix.trans, 16 columns of d per ldmatrix.x4.
template <class C, class R>
__device__ __forceinline__ void pv_gemm(const R& rows, OFrag<C>& o, const SFrag<C>& s, const PFrag<C>& p_frag,
                                        std::uint32_t v_lane) {
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
        tc::mma_m16n8k16_bf16(o[mt][2 * dp], a[mt], b_lo);
        tc::mma_m16n8k16_bf16(o[mt][2 * dp + 1], a[mt], b_hi);
      }
    }
  }
  rows.after_pv(attn::MmaTile<MT, d / 8>{o});  // FA1: O_i /= l_new; FA2: nothing
}

// One step of the plain loop: S_ij, the online softmax, O_i += P~_ij V_j.
template <class C, bool kMasked, class R>
__device__ __forceinline__ void step(R& rows, OFrag<C>& o, const QFrag<C>& q_frag, std::uint32_t q_lane,
                                     std::uint32_t k_lane, std::uint32_t v_lane, int row0, int j0, const FwdParams& p) {
  SFrag<C> s;
  PFrag<C> p_frag;
  s_gemm<C>(s, q_frag, q_lane, k_lane);
  softmax<C, kMasked>(rows, o, s, p_frag, row0, j0, p);
  if constexpr (C::kSplitKV) {  // V_j has landed (this thread's copies), and everyone's
    tc::cp_async_wait<C::kKWait + 1>();
    __syncthreads();
  }
  pv_gemm<C>(rows, o, s, p_frag, v_lane);
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

  // The key tiles this row tile visits; those below n_full need no mask (attention_rows.cuh).
  const attn::KeyTiles kt = attn::key_tiles(i0, B_r, B_c, p.N_kv, p.offset, p.causal);
  const int T_c = kt.T_c, n_full = kt.n_full;

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
  OFrag<C> o;
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int n = 0; n < d / 8; ++n) o[mt][n][0] = o[mt][n][1] = o[mt][n][2] = o[mt][n][3] = 0.0f;
  Rows<C, kNorm> rows;
  rows.init();
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
      step<C, true>(rows, o, q_frag, q_lane, k_lane, v_lane, row0, j * B_c, p);
    else
      step<C, false>(rows, o, q_frag, q_lane, k_lane, v_lane, row0, j * B_c, p);
  }
  // Nothing may still be landing in shared memory: other threads' copies of Q_i into this
  // warp's rows (when no key tile ran, no barrier has ordered them yet), and the empty tail groups.
  tc::cp_async_wait<0>();
  __syncthreads();

  // Epilogue: O_i = diag(l_i)^-1 O_i and L_i = m_i + log l_i (attention_rows.cuh; FA1's O_i
  // is normalised already). A row that saw no key gets O = 0 and L = -inf.
  float* L = p.L + head * p.l_head;
  float L_rows[2 * MT];
  rows.finish(attn::MmaTile<MT, d / 8>{o}, L_rows);
#pragma unroll
  for (int r = 0; r < 2 * MT; ++r) {
    const int row = row0 + 16 * (r / 2) + g + 8 * (r % 2);
    if (t == 0 && row < p.N_q) L[row] = L_rows[r];
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
            tc::pack_bf16x2(o[mt][n][2 * hh], o[mt][n][2 * hh + 1]);
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
// d = 128 configs 1-4 are the README's steps towards it, one change at a time (16 -> 32 rows
// a warp, + packp, + splitkv; + skiprescale is the default). The ablations (benchmark only)
// continue the numbering: the default without packp, without splitkv. ptxas reports spills
// for some of them (README): 32 rows a warp at B_c = 64 sit at the 255-register limit, and
// which combinations fit is the allocator's call.
//                      d  warps mtiles B_c  Q regs stages minBlocks tricks
using F128_0 = FwdConfig<128, 4, 2, 64, false, 2, 2, kPackP | kSplitKV | kSkipRescale>;  // FA2's own tiles
using F128_1 = FwdConfig<128, 8, 1, 64, true, 2, 1>;   // step 1: 16 rows a warp, Q_i in registers
using F128_2 = FwdConfig<128, 4, 2, 64, false, 2, 2>;  // 32 rows a warp (Q_i re-read from shared memory)
using F128_3 = FwdConfig<128, 4, 2, 64, false, 2, 2, kPackP>;
using F128_4 = FwdConfig<128, 4, 2, 64, false, 2, 2, kPackP | kSplitKV>;        // the default without skiprescale
using F128_5 = FwdConfig<128, 4, 2, 64, false, 2, 2, kSplitKV | kSkipRescale>;  // ablation: without packp
using F128_6 = FwdConfig<128, 4, 2, 64, false, 2, 2, kPackP | kSkipRescale>;    // ablation: without splitkv
using F64_0 = FwdConfig<64, 4, 2, 128, false, 2, 2>;                            // FA2's own tiles at d = 64
using F64_1 = FwdConfig<64, 4, 2, 64, true, 2, 2>;                              // B_c = 64, Q_i in registers
using F64_2 = FwdConfig<64, 4, 2, 128, false, 2, 2, kPackP | kSplitKV>;

using Configs128 = ConfigList<F128_0, F128_1, F128_2, F128_3, F128_4>;
using Ablations128 = ConfigList<F128_5, F128_6>;
using Configs64 = ConfigList<F64_0, F64_1, F64_2>;
using Ablations64 = ConfigList<>;

struct Describe {
  template <class C>
  TileConfig operator()(C) const {
    return {"w" + std::to_string(C::kWarps) + "_r" + std::to_string(C::kRowsPerWarp) + "_c" + std::to_string(C::B_c) +
                (C::kQInRegs ? "_qreg" : "_qsmem") + "_s" + std::to_string(C::kStages) + "_b" +
                std::to_string(C::kMinBlocks) + (C::kPackP ? "_packp" : "") + (C::kSplitKV ? "_splitkv" : "") +
                (C::kSkipRescale ? "_skiprescale" : ""),
            C::B_r, C::B_c, C::kWarps, static_cast<std::size_t>(C::kSmemBytes)};
  }
};

template <class C, Normalisation kNorm>
void launch(const FwdParams& p, int heads, cudaStream_t stream) {
  FwdParams q = p;
  q.T_r = ladder::ceil_div(p.N_q, C::B_r);
  ladder::check_grid("fa2tc::forward", q.T_r, heads);
  // The largest carveout: the blocks per SM the registers allow must fit in shared memory too.
  ladder::allow_dynamic_smem(forward_kernel<C, kNorm>, C::kSmemBytes, "fa2tc::forward (" + Describe{}(C{}).name + ")",
                             true);
  const dim3 grid(static_cast<unsigned>(q.T_r), static_cast<unsigned>(heads));
  forward_kernel<C, kNorm><<<grid, C::kThreads, C::kSmemBytes, stream>>>(q);
  CUDA_CHECK_LAUNCH();
}

// Configuration `config` of a head dimension's list, then its ablations.
template <class Configs, class Ablations>
void launch_config(int config, const FwdParams& p, int heads, Normalisation norm, cudaStream_t stream) {
  auto go = [&](auto c) {
    using C = decltype(c);
    if (norm == Normalisation::FA2)
      launch<C, Normalisation::FA2>(p, heads, stream);
    else
      launch<C, Normalisation::FA1>(p, heads, stream);
  };
  if (config < Configs::kSize) return Configs::launch(config, go);
  Ablations::launch(config - Configs::kSize, go);
}

}  // namespace

const char* name(Normalisation n) { return n == Normalisation::FA2 ? "fa2norm" : "fa1norm"; }

std::vector<TileConfig> forward_configs(int d) {
  if (d == 128) return Configs128::describe_all(Describe{});
  if (d == 64) return Configs64::describe_all(Describe{});
  return {};
}

int forward_fit(int d, std::size_t smem_per_block) {
  return ladder::first_that_fits(candidates(forward_configs(d)), smem_per_block).index;
}

std::vector<TileConfig> forward_ablations(int d) {
  if (d == 128) return Ablations128::describe_all(Describe{});
  if (d == 64) return Ablations64::describe_all(Describe{});
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
  const int config =
      resolve_config(opt.config, forward_configs(s.d),
                     static_cast<int>(forward_configs(s.d).size() + forward_ablations(s.d).size()), s.d, who);
  // L is read and written one fp32 at a time; the rest in 16-byte pieces (cp.async).
  ladder::check_pointers(who, {{"Q", Q}, {"K", K}, {"V", V}, {"O", O}, {"L", L, alignof(float)}}, 16);
  check_strides(s, opt.strides, who);
  const Strides st = packed_strides(s, opt.strides);
  FwdParams p{};
  p.Q = Q, p.K = K, p.V = V, p.O = O, p.L = L;
  p.q_head = st.q_head, p.kv_head = st.kv_head, p.o_head = st.o_head, p.l_head = st.l_head;
  p.H = s.H, p.H_kv = s.hkv(), p.group = s.group(), p.N_q = s.N, p.N_kv = s.nkv(), p.offset = s.nkv() - s.N;
  p.causal = s.causal;
  p.scale_log2e = s.scale() * ladder::kLog2e;
  const int heads = static_cast<int>(s.heads());
  if (s.d == 128) return launch_config<Configs128, Ablations128>(config, p, heads, opt.norm, stream);
  launch_config<Configs64, Ablations64>(config, p, heads, opt.norm, stream);
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
