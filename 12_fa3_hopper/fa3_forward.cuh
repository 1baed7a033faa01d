// FlashAttention-3 forward (Shah et al. 2024) on Hopper: chapter 10's algorithm, moved onto
// TMA, asynchronous warpgroup MMAs and warp specialisation. Compiled for sm_90a only (its
// own library, CMakeLists.txt); the kernel body sits inside `#if TC_HOPPER_ENABLED`, and
// fa3.cpp launches it only on a compute capability 9.0 device.
//
// One CTA per row tile Q_i (B_r = 128 queries) of one query head, or, persistent, one CTA per
// SM walking row tiles. Two consumer warpgroups own 64 rows of Q_i each; per key tile j
// (B_c = 128 keys; the FP8 forward also 192 or 224: fa3_config.h):
//   S = Q_i K_j^T        wgmma, both operands in shared memory (K-major, 128B swizzle)
//   online softmax       on the accumulator registers (attention_rows.cuh), as in chapter 10
//   O_i += P V_j         wgmma with P in registers (the S accumulators rounded in place)
//                        and V_j in shared memory, read MN-major (bf16) or as Vt (FP8)
// K_j and V_j arrive by TMA into a ring of kStages stages. K and V have barriers of their
// own: "K full" / "V full" (so S can start before V_j lands) and "K empty" / "V empty",
// which the eight consumer warps arrive on when they are done with them. K_j is released
// as soon as S = Q_i K_j^T has finished, a whole P V GEMM before V_j: the producer can
// refill its slot with K_{j+kStages} early, and the next S never waits for a copy that
// only started when the last P V ended.
//
// The kernel is assembled from four parts, and each step of the chapter (fa3.h, Step; the
// switches are fa3_config.h's Cfg) adds its idea to exactly one of them:
//   Pipeline        the K/V ring: TMA loads, full/empty barriers, stages and phases
//                   (Tma: one consumer thread refills a stage once both warpgroups release it)
//   produce()       the producer warp (WarpSpec: warpgroup 0 only issues TMA, and gives its
//                   registers to the consumers with setmaxnreg)
//   Consumer        the main loop of one row tile (consume_tile) and the epilogue (store_o):
//                   PingPong adds the turn passed between the consumers by named barriers, so
//                   one's softmax runs while the other's GEMMs do; IntraWg issues
//                   S_{j+1} = Q_i K_{j+1}^T together with P_j V_j, whose softmax then runs
//                   while the tensor cores work on both; FP8 (Cfg::kExpTurns) also passes a
//                   turn at the exponentials, the MUFU both consumers share
//   the scheduler   which row tiles a CTA computes (Persistent: one CTA per SM walks them in
//                   steps of the grid; the next tile's loads overlap this tile's end, and O
//                   leaves by a TMA store that nobody waits for. Causal keeps one CTA per tile,
//                   heaviest first: a static walk would hand some CTAs more work than others)
// Key tiles run from the last to the first, as in chapter 10: with causal masking the
// diagonal tiles (the only ones that pay for the mask) come first.
//
// The kernel template lives in this header so that chapter 15 can instantiate it with its own
// variant (masks and score modifiers as code); fa3_forward.cu instantiates chapter 12's. For
// .cu files compiled for sm_90a only.
#pragma once

#include <cuda_fp8.h>

#include <algorithm>
#include <cstdint>

#include "09_tensor_core_matmul/hopper.cuh"
#include "09_tensor_core_matmul/hopper_host.h"
#include "10_fa2_tensor_cores/attention_rows.cuh"
#include "attention_variant.h"
#include "cuda_check.h"
#include "device.h"
#include "fa3_kernel.h"
#include "fa3_rows.cuh"
#include "launch.h"

namespace fa3::kernel {

// ---- shared memory -----------------------------------------------------------------------
// Q_i, then kStages x (K_j, V_j), then (persistent and FP8) a buffer of its own for staging
// O, then the mbarriers.
template <class C>
struct Smem {
  std::uint32_t base;  // 1024-byte aligned (the swizzle repeats every 1024 bytes)
  __device__ explicit Smem(unsigned char* raw) {
    const std::uint32_t a = tc::smem_addr(raw);
    base = (a + 1023) & ~1023u;
  }
  __device__ std::uint32_t Q() const { return base; }
  __device__ std::uint32_t K(int s) const { return base + C::kQBytes + s * (C::kKBytes + C::kVBytes); }
  __device__ std::uint32_t V(int s) const { return K(s) + C::kKBytes; }
  __device__ std::uint32_t O() const {
    return C::kOwnOBytes ? base + C::kQBytes + C::kStages * (C::kKBytes + C::kVBytes) : Q();
  }
  __device__ std::uint32_t bar(int i) const {
    return base + C::kQBytes + C::kStages * (C::kKBytes + C::kVBytes) + C::kOwnOBytes + 8 * i;
  }
  __device__ std::uint32_t q_full() const { return bar(0); }
  __device__ std::uint32_t q_empty() const { return bar(1); }
  __device__ std::uint32_t k_full(int s) const { return bar(2 + s); }
  __device__ std::uint32_t v_full(int s) const { return bar(2 + C::kStages + s); }
  __device__ std::uint32_t k_empty(int s) const { return bar(2 + 2 * C::kStages + s); }
  __device__ std::uint32_t v_empty(int s) const { return bar(2 + 3 * C::kStages + s); }
  // FP8's turn at the exponentials (Consumer::exp_turn_begin): a word that holds 0, and 8 bytes
  // per consumer thread c (0 .. 255) that take its maxes and row sums.
  __device__ std::uint32_t exp_zero() const { return bar(2 + 4 * C::kStages); }
  __device__ std::uint32_t exp_sink(int c) const { return bar(3 + 4 * C::kStages + c); }

  __device__ void init_barriers() const {  // one thread, before anyone uses them
    tc::mbarrier_init(q_full(), 1);
    tc::mbarrier_init(q_empty(), 8);  // the eight consumer warps
    for (int s = 0; s < C::kStages; ++s) {
      tc::mbarrier_init(k_full(s), 1);
      tc::mbarrier_init(v_full(s), 1);
      tc::mbarrier_init(k_empty(s), 8);
      tc::mbarrier_init(v_empty(s), 8);
    }
    if constexpr (C::kExpTurns) tc::st_shared_b32(exp_zero(), 0);  // 0.0f
    tc::fence_mbarrier_init();
  }
};

// ---- the attention variant: which key tiles a row tile visits, what its score tile is -----
// The kernel asks an attention variant V (not to be confused with the compiled configurations,
// fa3_config.h's Cfg) two things (FA3's "Mask"): the key tiles row tile Q_i visits, in
// order, and which of them need a mask (V::Keys: T_c visits, step it reads key tile j(it),
// masked(it)); and what to do to a tile of scores before the online softmax (score_tile).
// Chapter 12's own attention variant is dense or causal attention; chapter 15 passes masks and score
// modifiers as code and a block mask's lists.
//
// CausalOrDense: every key tile up to the row tile's last visible key, the last first (with
// causal masking the diagonal tiles, the only ones that pay for the mask, come first); masked
// from n_full on: -inf for keys past N_kv and, causal, after query + offset.
struct CausalOrDense {
  struct Keys {
    int T_c, n_full;
    __device__ int j(int it) const { return T_c - 1 - it; }
    __device__ bool masked(int it) const { return j(it) >= n_full; }
  };
  template <class C>
  __device__ Keys keys(int i0, int /*head*/, const Params& p) const {
    const attn::KeyTiles k = attn::key_tiles(i0, C::B_r, C::B_c, p.N_kv, p.offset, p.causal);
    return {k.T_c, k.n_full};
  }
  // s: one thread's accumulators of a 64 x B_c tile (register 4 jj + 2 h + e is query q + 8 h,
  // key k0 + 8 jj + e: fa3_rows.cuh's layout, with q and k0 this thread's first).
  template <bool kMasked, int N>
  __device__ void score_tile(float (&s)[N], int q, int k0, int /*head*/, const Params& p) const {
    if constexpr (kMasked) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int last = p.causal ? min(p.N_kv - 1, q + 8 * h + p.offset) : p.N_kv - 1;
#pragma unroll
        for (int jj = 0; jj < N / 4; ++jj)
#pragma unroll
          for (int e = 0; e < 2; ++e)
            if (k0 + 8 * jj + e > last) s[4 * jj + 2 * h + e] = -INFINITY;
      }
    }
  }
  // Heaviest row tiles first (causal: the lowest), so the lightest fill the tail.
  __device__ bool last_first(const Params& p) const { return p.causal; }
  // The persistent scheduler's t-th row tile (dense only: every row tile costs the same), in
  // the order that lets consecutive CTAs share a head's K and V in L2. kOrdersRowTiles: the
  // variant gives that order (row_tile), so a persistent configuration may walk it.
  static constexpr bool kOrdersRowTiles = true;
  __device__ RowTile row_tile(int t, const Params& p) const { return {t % p.T_r, t / p.T_r}; }
};

// ---- the tile scheduler ------------------------------------------------------------------
// A row tile: its first query, its head, the KV head it reads, and the key tiles it visits.
template <class V>
struct Tile {
  int i0, head, kv_head;
  typename V::Keys keys;
};
template <class C, class V>
__device__ __forceinline__ Tile<V> make_tile(int i_tile, int head, const Params& p, const V& var) {
  const int i0 = i_tile * C::B_r;
  return {i0, head, head / p.H * p.H_kv + head % p.H / p.group, var.template keys<C>(i0, head, p)};
}

// One row tile per CTA: blockIdx.x the tile, blockIdx.y the head, in the variant's order.
struct SingleTileScheduler {
  static dim3 grid(const Params& p) { return dim3(p.T_r, p.heads); }
  __device__ static int first() { return 0; }
  __device__ static int stride() { return 1; }
  __device__ static bool done(int t, const Params&) { return t > 0; }
  template <class C, class V>
  __device__ static Tile<V> tile(int, const Params& p, const V& var) {
    const int i = static_cast<int>(blockIdx.x);
    return make_tile<C>(var.last_first(p) ? p.T_r - 1 - i : i, blockIdx.y, p, var);
  }
};
// One CTA per SM, walking all T_r * heads row tiles in steps of the grid, in the order the
// variant gives (chapter 12's: consecutive tiles share a head, so the CTAs at work share K and
// V in L2).
struct PersistentScheduler {
  static dim3 grid(const Params& p) {
    return dim3(std::min<long long>(std::int64_t(p.T_r) * p.heads, ladder::device().sm_count));
  }
  __device__ static int first() { return blockIdx.x; }
  __device__ static int stride() { return gridDim.x; }
  __device__ static bool done(int t, const Params& p) { return t >= p.T_r * p.heads; }
  template <class C, class V>
  __device__ static Tile<V> tile(int t, const Params& p, const V& var) {
    const RowTile r = var.row_tile(t, p);
    return make_tile<C>(r.i, r.head, p, var);
  }
};

// ---- the K/V ring ------------------------------------------------------------------------
// Step `it` of a row tile's loop is key tile keys.j(it). `pos` counts the key tiles this CTA
// streamed through the ring before the current row tile: a persistent CTA's stages and
// barrier phases run on from one row tile to the next.
template <class C, class V>
struct Pipeline {
  using Tile = kernel::Tile<V>;
  const Smem<C>& sm;
  const CUtensorMap *tmQ, *tmK, *tmV;  // the kernel's __grid_constant__ parameters
  int pos = 0;

  __device__ int stage(int it) const { return (pos + it) % C::kStages; }
  __device__ std::uint32_t phase(int it) const { return ((pos + it) / C::kStages) & 1; }
  __device__ void advance(const Tile& t) { pos += t.keys.T_c; }

  // ---- loads, issued by one thread ----
  __device__ void load_q(const Tile& t) const {
    tc::mbarrier_arrive_expect_tx(sm.q_full(), C::kQBytes);
    for (int b = 0; b < C::kBoxes; ++b)
      tc::cp_async_bulk_tensor_3d_global_to_shared(sm.Q() + b * C::B_r * 128, tmQ, b * C::kBoxCols, t.i0, t.head,
                                                   sm.q_full());
  }
  __device__ void load_k(const Tile& t, int it) const {
    const int s = stage(it), j0 = t.keys.j(it) * C::B_c;
    tc::mbarrier_arrive_expect_tx(sm.k_full(s), C::kKBytes);
    for (int b = 0; b < C::kBoxes; ++b)
      tc::cp_async_bulk_tensor_3d_global_to_shared(sm.K(s) + b * C::B_c * 128, tmK, b * C::kBoxCols, j0, t.kv_head,
                                                   sm.k_full(s));
  }
  __device__ void load_v(const Tile& t, int it) const {
    const int s = stage(it), j0 = t.keys.j(it) * C::B_c;
    tc::mbarrier_arrive_expect_tx(sm.v_full(s), C::kVBytes);
    if constexpr (C::kFp8)  // Vt8: d rows of keys, boxes of 128 keys
      for (int b = 0; b < C::kVtBoxes; ++b)
        tc::cp_async_bulk_tensor_3d_global_to_shared(sm.V(s) + b * C::d * 128, tmV, j0 + 128 * b, 0, t.kv_head,
                                                     sm.v_full(s));
    else
      for (int b = 0; b < C::kBoxes; ++b)
        tc::cp_async_bulk_tensor_3d_global_to_shared(sm.V(s) + b * C::B_c * 128, tmV, b * C::kBoxCols, j0, t.kv_head,
                                                     sm.v_full(s));
  }
  // A stage is free once its previous use is released; a fresh barrier's "previous" phase
  // (parity 1) counts as complete, so the first round passes at once.
  __device__ void wait_k_free(int it) const { tc::mbarrier_wait(sm.k_empty(stage(it)), phase(it) ^ 1); }
  __device__ void wait_v_free(int it) const { tc::mbarrier_wait(sm.v_empty(stage(it)), phase(it) ^ 1); }
  __device__ void wait_q_free(int n) const { tc::mbarrier_wait(sm.q_empty(), (n & 1) ^ 1); }

  // ---- the consumers' side ----
  __device__ void wait_q(int n) const { tc::mbarrier_wait(sm.q_full(), n & 1); }
  __device__ void wait_k(int it) const { tc::mbarrier_wait(sm.k_full(stage(it)), phase(it)); }
  __device__ void wait_v(int it) const { tc::mbarrier_wait(sm.v_full(stage(it)), phase(it)); }
  // The eight consumer warps release K_j once S has finished (and, after the row tile's last
  // S, Q_i's buffer, which may then take the next tile's Q_i) ...
  __device__ void release_k(const Tile& t, int it) const {
    if (threadIdx.x % 32 != 0) return;
    tc::mbarrier_arrive(sm.k_empty(stage(it)));
    if (it == t.keys.T_c - 1) tc::mbarrier_arrive(sm.q_empty());
  }
  // ... and V_j once P V has. Without a producer (Tma; one row tile, pos = 0), thread 0 then
  // refills the stage with the key tile kStages ahead, once every warp has released both.
  __device__ void release_v(const Tile& t, int it) const {
    const int s = stage(it);
    if (threadIdx.x % 32 == 0) tc::mbarrier_arrive(sm.v_empty(s));
    if constexpr (!C::kProducer) {
      if (threadIdx.x == 0 && it + C::kStages < t.keys.T_c) {
        tc::mbarrier_wait(sm.k_empty(s), phase(it));
        tc::mbarrier_wait(sm.v_empty(s), phase(it));
        load_k(t, it + C::kStages), load_v(t, it + C::kStages);
      }
      __syncwarp();
    }
  }
};

// ---- the producer ------------------------------------------------------------------------
// One elected thread of warpgroup 0 walks the row tiles and their key tiles, waiting for
// free stages. K's slot frees up (S done) before V's (P V done), and Q_i's once the last S of
// the previous row tile is done: K_0 may go before Q_i.
template <class C, class Sched, class V>
__device__ void produce(Pipeline<C, V>& pipe, const Params& p, const V& var) {
  for (int t = Sched::first(), n = 0; !Sched::done(t, p); t += Sched::stride(), ++n) {
    const Tile<V> tile = Sched::template tile<C>(t, p, var);
    for (int it = 0; it < tile.keys.T_c; ++it) {
      pipe.wait_k_free(it);
      pipe.load_k(tile, it);
      if (it == 0) pipe.wait_q_free(n), pipe.load_q(tile);
      pipe.wait_v_free(it);
      pipe.load_v(tile, it);
    }
    if (tile.keys.T_c == 0) pipe.wait_q_free(n), pipe.load_q(tile);
    pipe.advance(tile);
  }
}

// ---- a consumer warpgroup ----------------------------------------------------------------
// (wgmma exists only in the sm_90a device pass: TC_HOPPER_ENABLED, hopper.cuh.)
#if TC_HOPPER_ENABLED
// The intra-warpgroup loop's softmax step (Consumer::consume_tile): step it >= 1 runs its softmax
// while P_{it-1} V_{it-1} still reads p_frag, so P~ stays in S's registers, touching neither O_i
// nor p_frag, and becomes the A operand once that GEMM is done. Scratch is what a step carries
// from the one to the other: nothing here; a study's step may need more (studies/).
template <class Consumer>
struct Lesson::LoopSoftmax {
  struct Scratch {};
  template <class Scale>
  __device__ static void softmax(Consumer& c, const typename Consumer::Tile& tile, int it, const Scale& sl2e,
                                 const Params& p, Scratch&) {
    c.softmax(tile, it, sl2e, p);
  }
  __device__ static void take_p(Consumer& c, Scratch&) { to_p<typename Consumer::Config>(c.s, c.p_frag); }
};

template <class C, class V>
struct Consumer {
  using Config = C;
  using Tile = kernel::Tile<V>;
  // The intra-warpgroup loop's softmax step: the lesson's (below), or a study's (fa3_config.h).
  using LoopSoftmax = typename C::Study::template LoopSoftmax<Consumer>;
  enum : int {
    kTurnBarrier = 1,   // named barriers 1, 2: "consumer 0's / 1's turn" (0 is __syncthreads)
    kStoreBarrier = 3,  // 3, 4: consumer 0's / 1's epilogue
    kExpBarrier = 5,    // 5, 6: consumer 0's / 1's turn at the exponentials (C::kExpTurns)
  };
  const Smem<C>& sm;
  const V& var;
  const CUtensorMap* tmO;                        // the kernel's O map (persistent: the epilogue's TMA store)
  int cw;                                        // consumer warpgroup 0 or 1: rows 64 cw .. of the row tile
  int t;                                         // thread in the warpgroup
  float o[C::d / 2];                             // O_i, unnormalised, in the accumulator layout (columns of d)
  float s[C::B_c / 2];                           // S (64 x B_c), fp32, then P~ in place
  std::uint32_t p_frag[C::kPSteps][4];           // P~ as the A operand of O += P V
  attn::OnlineSoftmax<2, C::kRescaleLog2> rows;  // m, l, alpha of this thread's two rows
  float scale_log2e;                             // this row tile's (FP8: times Q's descale)

  // The turn of ping-pong: consumer cw issues its GEMMs between turn_begin and turn_end.
  // Consumer 1 hands consumer 0 the first turn; consumer 0 takes the turn consumer 1 hands
  // back last.
  __device__ void turn_begin() const {
    if constexpr (C::kGemmTurns) tc::named_bar_sync(kTurnBarrier + cw, 256);
  }
  __device__ void turn_end() const {
    if constexpr (C::kGemmTurns) tc::named_bar_arrive(kTurnBarrier + (cw ^ 1), 256);
  }
  __device__ void first_turn() const {
    if constexpr (C::kGemmTurns)
      if (cw == 1) tc::named_bar_arrive(kTurnBarrier, 256);
  }
  __device__ void last_turn() const {
    if constexpr (C::kGemmTurns)
      if (cw == 0) tc::named_bar_sync(kTurnBarrier, 256);
    if constexpr (C::kExpTurns)
      if (cw == 0) tc::named_bar_sync(kExpBarrier, 256);
  }
  // FP8's second turn: the exponentials of a tile (the MUFU, which both consumers share and
  // which takes as long as their GEMMs) run one warpgroup at a time, so that the two softmaxes
  // take turns instead of overlapping, each beside the other's maxes, GEMM issue and waits.
  // Barriers order memory accesses, not arithmetic: the maxes are stored before the wait and
  // the turn begins with a load of 0 that the exponentials' inputs depend on; it ends with a
  // store of the row sums they all feed.
  __device__ float exp_turn_begin(const float (&m_new)[2]) const {
    tc::st_shared_v2_f32(sm.exp_sink(128 * cw + t), m_new[0], m_new[1]);
    tc::named_bar_sync(kExpBarrier + cw, 256);
    return tc::ld_shared_f32(sm.exp_zero());
  }
  __device__ void exp_turn_end() const {
    tc::st_shared_v2_f32(sm.exp_sink(128 * cw + t), rows.l[0], rows.l[1]);
    tc::named_bar_arrive(kExpBarrier + (cw ^ 1), 256);
  }
  __device__ void first_exp_turn() const {
    if constexpr (C::kExpTurns)
      if (cw == 1) tc::named_bar_arrive(kExpBarrier, 256);
  }

  // The GEMMs, issued (not waited for). Descriptors: this warpgroup's 64 rows of Q_i; K_j and
  // V_j of stage st. One descriptor per tile, stepped to each k (tc_layout.h, wgmma_desc_at): rebuilt for every
  // wgmma, the masks and shifts of the address would be uniform-datapath work on the path to
  // the issue.
  __device__ void issue_s(int st) {
    const std::uint64_t q = tc::wgmma_desc_sw128(sm.Q() + cw * 64 * 128), kt = tc::wgmma_desc_sw128(sm.K(st));
    tc::wgmma_fence();
#pragma unroll
    for (int k = 0; k < C::kSSteps; ++k) {
      const std::uint32_t box = k / 4, off = (k % 4) * 32;
      const std::uint64_t a = tc::layout::wgmma_desc_at(q, box * C::B_r * 128 + off),
                          b = tc::layout::wgmma_desc_at(kt, box * C::B_c * 128 + off);
      if constexpr (C::kFp8)
        tc::wgmma_m64nNk32_ss_e4m3<C::B_c>(s, a, b, k > 0);
      else
        tc::wgmma_m64n128k16_bf16(s, a, b, k > 0);
    }
    tc::wgmma_commit_group();
  }
  __device__ void issue_pv(int st) {
    const std::uint64_t v = C::kFp8 ? tc::wgmma_desc_sw128(sm.V(st)) : tc::wgmma_desc_mn_sw128(sm.V(st), C::B_c * 128);
    tc::wgmma_fence();
#pragma unroll
    for (int k = 0; k < C::kPSteps; ++k) {
      if constexpr (C::kFp8) {  // Vt_j: d rows of keys, K-major; the next 32 keys 32 bytes on, in boxes of 128
        const std::uint32_t box = k / 4, off = (k % 4) * 32;
        const std::uint64_t b = tc::layout::wgmma_desc_at(v, box * C::d * 128 + off);
        if constexpr (C::d == 256)
          tc::wgmma_m64n256k32_rs_e4m3(o, p_frag[k], b, 1);
        else
          tc::wgmma_m64n128k32_rs_e4m3(o, p_frag[k], b, 1);
      } else {  // V_j: [keys][d] boxes, MN-major; the next 16 keys 16 rows (2048 bytes) on
        const std::uint64_t b = tc::layout::wgmma_desc_at(v, k * 16 * 128);
        if constexpr (C::d == 128)
          tc::wgmma_m64n128k16_rs_bf16_tb(o, p_frag[k], b, 1);
        else
          tc::wgmma_m64n64k16_rs_bf16_tb(o, p_frag[k], b, 1);
      }
    }
    tc::wgmma_commit_group();
  }
  // Waits for every GEMM in flight but the newest `kPending`; then their registers may be read.
  template <int kPending>
  __device__ void wait_s() {
    tc::wgmma_wait_group<kPending>();
    tc::fence_operand(s);
  }
  __device__ void wait_pv() {
    tc::wgmma_wait_group<0>();
    tc::fence_operand(o);
    tc::fence_operand(p_frag);
  }

  // The scale of step `it`'s scores, sl2e = scale log2 e: bf16 one float; FP8 times K's descales,
  // one per group of kScaleKeys keys (fa3_config.h; the min: the last key tile may reach past the
  // last scale block). The intra-warpgroup loop asks for it before it waits for S, so that the
  // loads are in flight while the GEMMs run, not on the path from S to the softmax.
  __device__ auto scales(const Tile& tile, int it, const Params& p) const {
    if constexpr (C::kFp8) {
      const float* descale_k = p.descale_k + std::int64_t(tile.kv_head) * p.k_scale_blocks;
      attn::GroupScale<C::kScaleKeys / 8, C::kScaleGroups> sl2e;
#pragma unroll
      for (int g = 0; g < C::kScaleGroups; ++g)
        sl2e.v[g] =
            scale_log2e *
            descale_k[min((tile.keys.j(it) * C::B_c + g * C::kScaleKeys) / kFp8KeysPerKScale, p.k_scale_blocks - 1)];
      return sl2e;
    } else {
      return scale_log2e;
    }
  }
  // The online softmax of step `it` (key tile j = keys.j(it)). The variant masks only the
  // tiles it says need it (a copy of the softmax of its own, so the unmasked tiles carry no
  // trace of the mask).
  template <bool kMasked, class Scale>
  __device__ void softmax_tile(const Tile& tile, int j, const Scale& sl2e, const Params& p) {
    const int q = tile.i0 + cw * C::kRowsPerWarpgroup + 16 * (t / 32) + t % 32 / 4, k0 = j * C::B_c + 2 * (t % 4);
    var.template score_tile<kMasked>(s, q, k0, tile.head, p);
    if constexpr (C::kExpTurns) {
      rows.update(attn::WgmmaTile<C::B_c>{s}, sl2e, SplitExp2<C::kPolyEighths>{},
                  [this](const float(&m_new)[2]) { return exp_turn_begin(m_new); });
      exp_turn_end();
    } else {
      rows.update(attn::WgmmaTile<C::B_c>{s}, sl2e, SplitExp2<C::kPolyEighths>{});
    }
  }
  template <class Scale>
  __device__ void softmax(const Tile& tile, int it, const Scale& sl2e, const Params& p) {
    if (tile.keys.masked(it))
      softmax_tile<true>(tile, tile.keys.j(it), sl2e, p);
    else
      softmax_tile<false>(tile, tile.keys.j(it), sl2e, p);
  }
  // O_i *= alpha. Under FA4's max rule (Cfg::kRescaleLog2) every alpha of a warp is 1 on almost
  // every step: a vote skips the d / 2 multiplies, and with them the wait they put between the issue
  // of S_it and that of P V.
  __device__ void rescale_o() {
    if constexpr (C::kRescaleLog2 > 0)
      if (!__any_sync(0xffffffffu, rows.moved())) return;
    rows.rescale(attn::WgmmaTile<C::d>{o});
  }

  // The intra-warpgroup loop's waits for V_it and K_{it+1}, right after S_it's issue when the ring
  // is deep (Cfg::kWaitAhead): both were requested a step or more before and have usually landed,
  // and what a wait still costs (an mbarrier try_wait's round trip, about a hundred cycles) hides
  // under S_it instead of sitting between one step's P~ and the next step's issue. With two
  // stages V_it is requested only when P_{it-2} V_{it-2} ends: the loop waits at the next issue.
  __device__ void wait_ahead(const Pipeline<C, V>& pipe, const Tile& tile, int it) const {
    if constexpr (C::kWaitAhead) {
      pipe.wait_v(it);
      if (it + 1 < tile.keys.T_c) pipe.wait_k(it + 1);
    }
  }

  // The main loop of one row tile.
  __device__ void consume_tile(Pipeline<C, V>& pipe, const Tile& tile, int n, const Params& p) {
#pragma unroll
    for (int i = 0; i < C::d / 2; ++i) o[i] = 0.0f;
    rows.init();
    scale_log2e = p.scale_log2e;
    if constexpr (C::kFp8)  // (the min: a warpgroup whose rows all lie past N has no scale, and stores nothing)
      scale_log2e *=
          p.descale_q[std::int64_t(tile.head) * p.q_scale_blocks + min(tile.i0 / 64 + cw, p.q_scale_blocks - 1)];
    const int T_c = tile.keys.T_c;
    pipe.wait_q(n);
    if constexpr (!C::kIntraWg) {
      for (int it = 0; it < T_c; ++it) {
        pipe.wait_k(it);
        turn_begin();
        issue_s(pipe.stage(it));
        turn_end();
        wait_s<0>();
        pipe.release_k(tile, it);
        softmax(tile, it, scales(tile, it, p), p);
        rescale_o();
        to_p<C>(s, p_frag);
        pipe.wait_v(it);
        turn_begin();
        issue_pv(pipe.stage(it));
        turn_end();
        wait_pv();
        pipe.release_v(tile, it);
      }
    } else if (T_c > 0) {
      // S_0 alone; then per step S_it together with P_{it-1} V_{it-1}; then the last P V. O_i is
      // rescaled for P_{it-1} (the alpha of softmax it-1) between the two issues: S_it is then
      // on the tensor cores, and the multiplies are off the path from one softmax to the next.
      // The waits for the next tiles come after the issues where the ring allows (wait_ahead).
      pipe.wait_k(0);
      turn_begin();
      issue_s(pipe.stage(0));
      turn_end();
      wait_ahead(pipe, tile, 0);
      wait_s<0>();
      pipe.release_k(tile, 0);
      softmax(tile, 0, scales(tile, 0, p), p);
      to_p<C>(s, p_frag);
      for (int it = 1; it < T_c; ++it) {
        const auto sl2e = scales(tile, it, p);
        typename LoopSoftmax::Scratch scratch;
        if constexpr (!C::kWaitAhead) pipe.wait_k(it), pipe.wait_v(it - 1);
        turn_begin();
        issue_s(pipe.stage(it));
        rescale_o();
        issue_pv(pipe.stage(it - 1));
        turn_end();
        wait_ahead(pipe, tile, it);
        wait_s<1>();  // S_it is done; P_{it-1} V_{it-1} may still run
        pipe.release_k(tile, it);
        LoopSoftmax::softmax(*this, tile, it, sl2e, p, scratch);  // touches neither O_i nor P_{it-1}
        wait_pv();
        pipe.release_v(tile, it - 1);
        LoopSoftmax::take_p(*this, scratch);
      }
      if constexpr (!C::kWaitAhead) pipe.wait_v(T_c - 1);
      wait_o_read();
      turn_begin();
      rescale_o();
      issue_pv(pipe.stage(T_c - 1));
      turn_end();
      wait_pv();
      pipe.release_v(tile, T_c - 1);
    }
    if (t % 32 == 0 && T_c == 0) tc::mbarrier_arrive(sm.q_empty());  // (no S at all)
  }

  // The epilogue (fa3_rows.cuh). Persistent, the warpgroup stages its rows of O in shared memory
  // and its thread 0 copies them out by TMA, one store per column box, which nobody waits for:
  // the warpgroup goes on to the next row tile at once. That tile writes the O buffer again,
  // so the store's read of it must be over first: thread 0 waits for it (wait_o_read) before
  // the last turn of the next row tile, and every thread of the warpgroup passes that turn's
  // bar.sync (256 threads) before it writes. A row tile with no key tiles (a variant's mask
  // may leave some) has no turn: its warpgroup meets at a barrier of its own instead.
  __device__ void wait_o_read() const {
    if constexpr (C::kPersistent)
      if (t == 0) tc::cp_async_bulk_wait_group_read<0>();
  }
  __device__ void store(const Tile& tile, const Params& p) {
    const int wg_row0 = tile.i0 + cw * C::kRowsPerWarpgroup, row = wg_row0 + 16 * (t / 32) + t % 32 / 4;
    const std::uint32_t o_smem = sm.O() + cw * C::kRowsPerWarpgroup * 128;
    if constexpr (C::kPersistent) {
      if (tile.keys.T_c == 0) wait_o_read(), tc::named_bar_sync(kStoreBarrier + cw, 128);
      stage_o<C>(rows, o, p, tile.head, row, o_smem, wg_row0, t);
      tc::fence_proxy_async_shared_cta();  // the copy engine reads what these stores wrote
      tc::named_bar_sync(kStoreBarrier + cw, 128);
      if (t == 0) {  // (rows past N_q are not written)
        for (int b = 0; b < C::d / 64; ++b)
          tc::cp_async_bulk_tensor_3d_shared_to_global(tmO, 64 * b, wg_row0, tile.head, o_smem + b * C::B_r * 128);
        tc::cp_async_bulk_commit_group();
      }
    } else {
      store_o<C>(rows, o, p, tile.head, row, o_smem, wg_row0, t, kStoreBarrier + cw);
    }
  }
  __device__ void wait_stores() const {  // before the kernel ends: O written
    if constexpr (C::kPersistent)
      if (t == 0) tc::cp_async_bulk_wait_group<0>();
  }
};
#endif  // TC_HOPPER_ENABLED

// ---- the kernel: the parts above, assembled ------------------------------------------------
template <class C, class Sched, class V>
__global__ void __launch_bounds__(C::kThreads, 1)
    fa3_kernel(const __grid_constant__ CUtensorMap tmQ, const __grid_constant__ CUtensorMap tmK,
               const __grid_constant__ CUtensorMap tmV, const __grid_constant__ Params p, const __grid_constant__ V var,
               const __grid_constant__ CUtensorMap tmO) {
  static_assert(ladder::variant::Forward<V, C, Params>::ok);
#if TC_HOPPER_ENABLED
  extern __shared__ unsigned char smem_raw[];
  const Smem<C> sm(smem_raw);
  if (threadIdx.x == 0) sm.init_barriers();
  __syncthreads();
  Pipeline<C, V> pipe{sm, &tmQ, &tmK, &tmV};
  const int wg = threadIdx.x / 128;

  if constexpr (C::kProducer) {
    if (wg == 0) {
      tc::setmaxnreg_dec<C::kProducerRegs>();
      if (threadIdx.x < 32 && tc::elect_one_sync()) {
        tc::prefetch_tensormap(&tmK);
        tc::prefetch_tensormap(&tmV);
        produce<C, Sched>(pipe, p, var);
      }
      return;
    }
    tc::setmaxnreg_inc<C::kConsumerRegs>();
  } else if (threadIdx.x == 0) {  // (no producer: one row tile; thread 0 loads its start)
    const Tile<V> tile = Sched::template tile<C>(Sched::first(), p, var);
    pipe.load_q(tile);
    for (int it = 0; it < C::kStages && it < tile.keys.T_c; ++it) pipe.load_k(tile, it), pipe.load_v(tile, it);
  }

  Consumer<C, V> consumer{sm, var, &tmO, C::kProducer ? wg - 1 : wg, static_cast<int>(threadIdx.x % 128)};
  consumer.first_turn();
  consumer.first_exp_turn();
  for (int t = Sched::first(), n = 0; !Sched::done(t, p); t += Sched::stride(), ++n) {
    const Tile<V> tile = Sched::template tile<C>(t, p, var);
    consumer.consume_tile(pipe, tile, n, p);
    consumer.store(tile, p);
    pipe.advance(tile);
  }
  consumer.last_turn();
  consumer.wait_stores();
#endif
}

// ---- host side -----------------------------------------------------------------------------
template <class C, class Sched, class V>
void launch_kernel(const CUtensorMap& tmQ, const CUtensorMap& tmK, const CUtensorMap& tmV, const CUtensorMap& tmO,
                   const Params& p, const V& var, cudaStream_t stream) {
  auto* kernel = fa3_kernel<C, Sched, V>;
  ladder::allow_dynamic_smem(kernel, C::kSmemBytes, "fa3::forward");
  const dim3 grid = Sched::grid(p);
  ladder::check_grid("fa3::forward", grid.x, grid.y);
  kernel<<<grid, C::kThreads, C::kSmemBytes, stream>>>(tmQ, tmK, tmV, p, var, tmO);
  CUDA_CHECK_LAUNCH();
}

// The tensor maps of a configuration: 3D (column, row, head) views in its boxes (hopper_host.h).
template <class C>
inline tc::TensorMapKey map_key(const void* X, std::uint64_t cols, std::uint64_t rows, std::uint64_t heads,
                                std::uint32_t box_cols, std::uint32_t box_rows) {
  tc::TensorMapKey k;
  k.data = X;
  k.fp8 = C::kFp8;
  k.rank = 3;
  k.dims[0] = cols, k.dims[1] = rows, k.dims[2] = heads;
  k.box[0] = box_cols, k.box[1] = box_rows, k.box[2] = 1;
  return k;
}

template <class C, class V>
void launch_cfg(const ladder::AttentionShape& s, const Operands& x, const Params& p, const V& var,
                cudaStream_t stream) {
  const std::uint64_t d = C::d, N = s.N, N_kv = s.nkv();
  const CUtensorMap tmQ = tc::tensor_map(map_key<C>(x.Q, d, N, s.heads(), C::kBoxCols, C::B_r));
  const CUtensorMap tmK = tc::tensor_map(map_key<C>(x.K, d, N_kv, s.kv_heads(), C::kBoxCols, C::B_c));
  const CUtensorMap tmV = C::kFp8
                              ? tc::tensor_map(map_key<C>(x.V, fp8_kv_pad(s.nkv()), d, s.kv_heads(), 128, C::d))  // Vt8
                              : tc::tensor_map(map_key<C>(x.V, d, N_kv, s.kv_heads(), C::kBoxCols, C::B_c));
  tc::TensorMapKey o_key = map_key<C>(p.O, d, N, s.heads(), 64, C::kRowsPerWarpgroup);  // bf16, also for FP8
  o_key.fp8 = false;
  const CUtensorMap tmO = tc::tensor_map(o_key);
  if constexpr (C::kPersistent &&
                V::kOrdersRowTiles) {  // (an attention variant's causal masks are its own: p.causal is false)
    if (!p.causal) return launch_kernel<C, PersistentScheduler>(tmQ, tmK, tmV, tmO, p, var, stream);
  }
  launch_kernel<C, SingleTileScheduler>(tmQ, tmK, tmV, tmO, p, var, stream);
}

}  // namespace fa3::kernel
