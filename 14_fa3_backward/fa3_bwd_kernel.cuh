// FlashAttention-3's backward (Shah et al. 2024, appendix B.2) on Hopper: chapter 10's
// backward, moved onto TMA, wgmma and warp specialisation. Compiled for sm_90a only (its own
// library, CMakeLists.txt); the kernel body sits inside `#if TC_HOPPER_ENABLED`, and
// fa3_bwd.cpp launches it only on a compute capability 9.0 device.
//
// One CTA per key tile K_j, V_j (B_c = 128 keys) of one KV head; it keeps dK_j and dV_j in
// registers while it walks the query tiles Q_i, dO_i (B_r = 64 rows at d = 128, 128 at d = 64,
// with L_i and D_i) of every query head of the group, which a producer warp streams through a
// ring of shared memory by TMA. Two consumer warpgroups own 64 keys each. Per query tile:
//   S^T  = K_j Q_i^T         wgmma, both operands K-major in shared memory, 64 x B_r per warpgroup
//   dP^T = V_j dO_i^T        the same
//   P^T  = exp2(S^T scale log2(e) - L_i)       in the accumulator registers; L_i per column
//   dS^T = P^T o (dP^T - D_i)                  likewise
//   dV_j += P^T dO_i         wgmma with P^T from registers (A), dO_i MN-major from shared memory
//   dK_j += dS^T Q_i         the same with dS^T and Q_i
//   dQ_i  = dS K_j           dS^T written to shared memory; wgmma reads it, and K_j, MN-major
// Why the transposes: the A operand of wgmma may come from registers, the B operand may not.
// dV and dK sum over the queries, so their A operand is P^T, dS^T (keys x queries): computing
// S^T and dP^T rather than S and dP leaves exactly those in the accumulators, in the layout an
// A fragment wants (chapter 12's P, with rows and columns swapped). dQ sums over the keys and
// needs dS (queries x keys) as A: from registers that would take a transpose across lanes, so
// dS^T goes to shared memory, where the instruction's transpose bit reads it as dS.
// Within a warpgroup the GEMMs and the math overlap where the data allow: the exponentials of P^T run while
// the tensor cores finish dP^T, dS^T is formed while they compute dV += P^T dO_i (at d = 128; at
// d = 64 it is formed before dV is issued: score_gradients says why), and dQ_i is handed on
// while they compute the next query tile's S^T.
// dQ_i is summed over the key tiles, so over CTAs: each consumer adds its 64 x 64 fp32 block
// into a buffer in global memory, with one atomic per element (Step::Atomic), or hands it through
// shared memory to a writer warp that issues one bulk reduce-add by the copy engine
// (Step::BulkReduce) while the consumers go on; Step::Deterministic makes the writer wait for its
// turn (the last key tile first) on a flag per block. The post-processing kernel scales and rounds dQ.
//
// The kernel template lives in this header so that chapter 15 can instantiate it with its own
// variant (masks and score modifiers as code); fa3_bwd_kernel.cu instantiates chapter 14's. For
// .cu files compiled for sm_90a only.
#pragma once

#include <algorithm>
#include <cstdint>

#include "09_tensor_core_matmul/hopper.cuh"
#include "09_tensor_core_matmul/hopper_host.h"
#include "10_fa2_tensor_cores/attention_rows.cuh"
#include "attention_variant.h"
#include "cuda_check.h"
#include "device.h"
#include "fa3_bwd_config.h"
#include "launch.h"
#include "numeric.h"

namespace fa3bwd::kernel {

// ---- shared memory (fa3_bwd_config.h has the sizes) -----------------------------------------
template <class C>
struct Smem {
  std::uint32_t base;  // 1024-byte aligned (the swizzle repeats every 1024 bytes)
  unsigned char* ptr;  // the same address, generic: for the plain loads and stores
  __device__ explicit Smem(unsigned char* raw) {
    const std::uint32_t a = tc::smem_addr(raw);
    base = (a + 1023) & ~1023u;
    ptr = raw + (base - a);
  }
  template <class T>
  __device__ T* at(std::uint32_t addr) const {
    return reinterpret_cast<T*>(ptr + (addr - base));
  }
  __device__ std::uint32_t K() const { return base; }
  __device__ std::uint32_t V() const { return base + C::kKBytes; }
  __device__ std::uint32_t stage(int s) const { return base + C::kKBytes + C::kVBytes + s * C::kStageBytes; }
  __device__ std::uint32_t Q(int s) const { return stage(s); }
  __device__ std::uint32_t dO(int s) const { return stage(s) + C::kQBytes; }
  __device__ std::uint32_t dS(int b) const { return stage(C::kStages) + b * C::kdSBytes; }
  __device__ std::uint32_t L2(int s) const { return dS(C::kdSBuffers) + s * 2 * C::kRowBytes; }
  __device__ std::uint32_t D(int s) const { return L2(s) + C::kRowBytes; }
  // dQ block buffer b of consumer cw (BulkReduce, Deterministic)
  __device__ std::uint32_t dQ(int cw, int b) const {
    return dS(C::kdSBuffers) + C::kRowsBytes + (cw * C::kdQBuffers + b) * layout::kChunkFloats * 4;
  }
  __device__ std::uint32_t bar(int i) const { return dS(C::kdSBuffers) + C::kRowsBytes + C::kdQBytes + 8 * i; }
  __device__ std::uint32_t kv_full() const { return bar(0); }
  __device__ std::uint32_t full(int s) const { return bar(1 + s); }
  __device__ std::uint32_t empty(int s) const { return bar(1 + C::kStages + s); }
  __device__ std::uint32_t dq_full(int cw, int b) const { return bar(1 + 2 * C::kStages + cw * C::kdQBuffers + b); }
  __device__ std::uint32_t dq_empty(int cw, int b) const {
    return bar(1 + 2 * C::kStages + 2 * C::kdQBuffers + cw * C::kdQBuffers + b);
  }
  // A persistent variant's next places: slot k % 2 holds the k-th place the CTA walks.
  __device__ std::uint32_t next_full(int k) const { return bar(1 + 2 * C::kStages + 4 * C::kdQBuffers + k); }
  __device__ std::uint32_t next_empty(int k) const { return bar(3 + 2 * C::kStages + 4 * C::kdQBuffers + k); }
  __device__ std::uint32_t next(int k) const { return bar(5 + 2 * C::kStages + 4 * C::kdQBuffers) + 4 * k; }

  __device__ void init_barriers() const {  // one thread, before anyone uses them
    tc::mbarrier_init(kv_full(), 1);
    for (int s = 0; s < C::kStages; ++s) {
      tc::mbarrier_init(full(s), 1);
      tc::mbarrier_init(empty(s), 256);  // every consumer thread
    }
    for (int cw = 0; cw < 2; ++cw)
      for (int b = 0; b < C::kdQBuffers; ++b) {
        tc::mbarrier_init(dq_full(cw, b), 128);  // every thread of the consumer warpgroup
        tc::mbarrier_init(dq_empty(cw, b), 1);   // the writer
      }
    tc::fence_mbarrier_init();
  }
  __device__ void init_next_places() const {  // one thread, a persistent variant's, before __syncthreads
    for (int k = 0; k < 2; ++k) {
      tc::mbarrier_init(next_full(k), 1);                          // the producer
      tc::mbarrier_init(next_empty(k), 256 + (C::kBulk ? 1 : 0));  // every consumer thread, the writer
    }
    tc::fence_mbarrier_init();
  }
};

// ---- the attention variant: which query tiles a CTA visits, what its score tile is --------------
// The kernel asks an attention variant V (FA3's "Mask", as chapter 12's forward does) for the query tiles
// the CTA of key tile K_j visits (V::Queries: `visits` in all over the group's query heads;
// visit n is query tile i(n) of the group's query head head(n); masked(n) says whether it needs
// the mask) and whether a (query, key) element is visible. A variant with a score modifier
// (kScoreMod) also gives score(x, ...) and its derivative, for x = S scale.
//
// CausalOrDense: every query tile (T_r = N_q / B_r, rounded up) of every query head of the group,
// in that order; causal: only the tiles from the first query that sees key j0 on (the tiles
// above see none of the CTA's keys). It also gives the deterministic step its order (dq_rank).
struct CausalOrDense {
  static constexpr bool kScoreMod = false;
  struct Queries {
    int i_first, T_i, visits;  // query tiles i_first .. T_r - 1 of each query head: visits in all
    __device__ int head(int n) const { return n / T_i; }
    __device__ int i(int n) const { return i_first + n % T_i; }
  };
  template <class C>
  __device__ Queries queries(int j0, int /*kv_head*/, const Params& p) const {
    Queries q;
    const int T_r = (p.N_q + C::B_r - 1) / C::B_r, first_query = p.causal ? max(0, j0 - p.offset) : 0;
    q.i_first = first_query < p.N_q ? first_query / C::B_r : T_r;
    q.T_i = T_r - q.i_first;
    q.visits = p.group * q.T_i;
    return q;
  }
  // Masked: keys past N_kv, or (causal) a key after some query + offset of the tile.
  template <class C>
  __device__ bool masked(const Queries&, int /*n*/, int j0, int i0, const Params& p) const {
    return j0 + C::B_c > p.N_kv || (p.causal && j0 + C::B_c - 1 > i0 + p.offset);
  }
  __device__ bool visible(int /*q_head*/, int query, int key, const Params& p) const {
    return key < p.N_kv && !(p.causal && key > query + p.offset);
  }
  // The last key tile whose CTA visits query tile i (every tile from key tile 0 to it does): causal,
  // the last one some query of the tile sees.
  template <class C>
  __device__ int last_key_tile(int i, int T_c, const Params& p) const {
    if (!p.causal) return T_c - 1;
    const int last_query = min(p.N_q - 1, i * C::B_r + C::B_r - 1);
    return min(T_c - 1, (last_query + p.offset) / C::B_c);
  }
  // The turn of key tile j among the CTAs that add into query tile i's dQ blocks (write_dq, the
  // deterministic step): causal, from the last key tile that sees the tile down to 0; dense, from
  // key tile 0 up.
  template <class C>
  __device__ int dq_rank(int i, int j, int T_c, const Params& p) const {
    return p.causal ? last_key_tile<C>(i, T_c, p) - j : j;
  }
};

// ---- the scheduler: which key tile and KV head each walk takes ------------------------------------
// A scheduler S (FA3's tile scheduler), a type without state, maps a place of the launch order
// (fa3_bwd_scheduler.h) to the (key tile, KV head) of its walk, from the parameters and the
// variant (whose mask may decide which key tiles go first), and says whether a CTA walks one place
// (the grid has one CTA per place) or, S::kPersistent, one after another (one CTA per SM:
// for_each_walk below, until S::places(T_c, p, var) are walked). Chapter 14's: one CTA per place, key tile by key tile
// over sections of heads; causal, the walks shorten as j grows, so this is longest first.
struct GridScheduler {
  static constexpr bool kPersistent = false;
  template <class V>
  __device__ static sched::Tile tile(int place, int T_c, const Params& p, const V&) {
    return sched::tile(place, T_c, p.sections);
  }
};

// ---- the walk: the scheduler's key tile and the variant's query tiles ------------------------------
template <class C, class V>
struct Walk {
  int j, j0;             // the CTA's key tile and its first key
  int kv_head, q_head0;  // its KV head b H_kv + h_kv; the group's first query head
  typename V::Queries qs;
  int visits;  // query tiles visited
  // A persistent CTA's earlier walks: their visits (the ring's stages and the barriers' phases run
  // on from one walk to the next) and how many had any (K_j and V_j loaded).
  int pos = 0, loads = 0;
  // One CTA per walk: the CTA's place in the launch order.
  template <class S>
  __device__ Walk(const Params& p, const V& var, S scheduler)
      : Walk(static_cast<int>(blockIdx.x + gridDim.x * blockIdx.y), static_cast<int>(gridDim.x), p, var, scheduler) {}
  template <class S>
  __device__ Walk(int place, int T_c, const Params& p, const V& var, S) {
    const sched::Tile t = S::tile(place, T_c, p, var);
    j = t.j, j0 = j * C::B_c, kv_head = t.head;
    q_head0 = kv_head / p.H_kv * p.H + kv_head % p.H_kv * p.group;
    qs = var.template queries<C>(j0, kv_head, p);
    visits = qs.visits;
  }
  __device__ int q_head(int n) const { return q_head0 + qs.head(n); }
  __device__ int i(int n) const { return qs.i(n); }
};

// ---- the producer ------------------------------------------------------------------------------
// One elected thread of warp 0 issues the copies: K_j and V_j once, then per visit Q_i, dO_i and
// the B_r floats of L_i and D_i into the next free stage, all counted by the stage's "full" barrier.
// A persistent CTA's next K_j, V_j wait until the consumers are done with the last visit of its
// previous walk (every GEMM of a visit reads K_j or V_j; a visit releases its stage at its end).
template <class C, class V>
__device__ void produce(const Smem<C>& sm, const CUtensorMap* tmQ, const CUtensorMap* tmdO, const CUtensorMap* tmK,
                        const CUtensorMap* tmV, const Walk<C, V>& w, const Params& p) {
  if (w.visits == 0) return;
  if (w.pos > 0) tc::mbarrier_wait(sm.empty((w.pos - 1) % C::kStages), ((w.pos - 1) / C::kStages) & 1);
  tc::mbarrier_arrive_expect_tx(sm.kv_full(), C::kKBytes + C::kVBytes);
  for (int b = 0; b < C::kBoxes; ++b) {
    tc::cp_async_bulk_tensor_3d_global_to_shared(sm.K() + b * C::B_c * 128, tmK, b * C::kBoxCols, w.j0, w.kv_head,
                                                 sm.kv_full());
    tc::cp_async_bulk_tensor_3d_global_to_shared(sm.V() + b * C::B_c * 128, tmV, b * C::kBoxCols, w.j0, w.kv_head,
                                                 sm.kv_full());
  }
  for (int n = 0; n < w.visits; ++n) {
    const int seq = w.pos + n, s = seq % C::kStages;               // the CTA's visit number
    tc::mbarrier_wait(sm.empty(s), ((seq / C::kStages) & 1) ^ 1);  // a fresh barrier's "previous" phase is complete
    const int head = w.q_head(n), i0 = w.i(n) * C::B_r;
    const std::int64_t row = std::int64_t(head) * p.N_pad + i0;  // N_pad rows per head: 256-byte aligned
    tc::mbarrier_arrive_expect_tx(sm.full(s), C::kStageLoadBytes);
    for (int b = 0; b < C::kBoxes; ++b) {
      tc::cp_async_bulk_tensor_3d_global_to_shared(sm.Q(s) + b * C::B_r * 128, tmQ, b * C::kBoxCols, i0, head,
                                                   sm.full(s));
      tc::cp_async_bulk_tensor_3d_global_to_shared(sm.dO(s) + b * C::B_r * 128, tmdO, b * C::kBoxCols, i0, head,
                                                   sm.full(s));
    }
    tc::cp_async_bulk_global_to_shared(sm.L2(s), p.L2 + row, C::kRowBytes, sm.full(s));
    tc::cp_async_bulk_global_to_shared(sm.D(s), p.D + row, C::kRowBytes, sm.full(s));
  }
}

// ---- the dQ writer ---------------------------------------------------------------------------------
// One elected thread of warp 1: per visit and consumer, waits for the block in shared memory, hands
// it to the copy engine's reduce-add into dQ_acc and frees the buffer once the engine has read it.
// Deterministic: before its reduce, waits until the block's flag says that every CTA before it in
// the fixed order has added its part; after it, waits until its additions have landed and raises
// the flag. The order suits the mask (the variant's dq_rank). Causal: from the last key tile that sees
// the block down to 0. A CTA meets a query tile B_c / B_r visits after the CTA of the next key tile,
// which starts that many tiles lower, so going down no CTA waits for one that is behind it. (Up,
// each would wait for the one before, and the waits would chain along the diagonal.) The CTA it
// waits for was launched after it but never waits for it in turn, and the CTAs launched before it
// finish without it: no cycle, while all of a head's key tiles fit on the GPU at once (fa3_bwd.cpp
// refuses more). Dense: every CTA walks the same query tiles from the same start, and from key
// tile 0 up a CTA waits only for CTAs launched before it, at any N_kv.
template <class C, class V>
__device__ void write_dq(const Smem<C>& sm, const Walk<C, V>& w, const Params& p, const V& var) {
  for (int n = 0; n < w.visits; ++n) {
    const int seq = w.pos + n, b = seq % C::kdQBuffers;
    for (int cw = 0; cw < 2; ++cw) {
      tc::mbarrier_wait(sm.dq_full(cw, b), (seq / C::kdQBuffers) & 1);
      const int row_block = C::dq_row_block(w.i(n), cw), chunk = C::dq_chunk(cw);
      const std::size_t block = layout::block_index(w.q_head(n), p.blocks, row_block, C::d, chunk);
      if constexpr (C::kDeterministic) {
        int* flag = p.dq_flags + layout::flag_index(w.q_head(n), p.blocks, row_block, C::d, chunk);
        const int rank = var.template dq_rank<C>(w.i(n), w.j, static_cast<int>(gridDim.x), p);
        const int turn = C::kDqWritersPerBlock == 1 ? rank : 2 * rank + cw;
        while (tc::ld_acquire_gpu(flag) != turn) {
        }
        tc::fence_proxy_async_global();  // the reduce below comes after what the flag published
      }
      tc::cp_reduce_async_bulk_add_f32(p.dQ_acc + block, sm.dQ(cw, b), layout::kChunkFloats * 4);
      tc::cp_async_bulk_commit_group();
      if constexpr (C::kDeterministic) {
        tc::cp_async_bulk_wait_group<0>();  // the additions are done ...
        tc::fence_proxy_async_global();     // ... and ordered before the flag
        tc::red_release_gpu_add(p.dq_flags + layout::flag_index(w.q_head(n), p.blocks, row_block, C::d, chunk), 1);
      } else {
        tc::cp_async_bulk_wait_group_read<0>();
      }
      tc::mbarrier_arrive(sm.dq_empty(cw, b));
    }
  }
  tc::cp_async_bulk_wait_group<0>();  // every reduce has landed before the CTA ends
}

// ---- a consumer warpgroup ----------------------------------------------------------------------
// Accumulator layout of a wgmma m64nN (chapter 12's fa3_rows.cuh): thread t (warp w = t / 32,
// g = t % 32 / 4, c = t % 4) holds in register 4 jj + 2 h + e row 16 w + g + 8 h, column
// 8 jj + 2 c + e. Here the rows of S^T, dP^T, dK, dV are keys, the columns of S^T and dP^T queries.
#if TC_HOPPER_ENABLED
template <class C, class V>
struct Consumer {
  enum : int { kDsReady = 1 };  // a named barrier of the two consumer warpgroups
  const Smem<C>& sm;
  const V& var;
  int cw, t;                                              // warpgroup 0 or 1 (keys 64 cw ..), thread in it
  float dk[C::d / 2], dv[C::d / 2];                       // dK_j, dV_j: this warpgroup's 64 keys x d
  float s[C::kAcc], dp[C::kAcc];                          // S^T then P^T; dP^T then dS^T (64 keys x B_r queries)
  std::uint32_t pf[C::kQSlices][4], dsf[C::kQSlices][4];  // P^T, dS^T as A fragments (bf16)
  float dq[32];                                           // a 64 x 64 block of dQ_i

  __device__ int key_row(int h) const { return 16 * (t / 32) + t % 32 / 4 + 8 * h; }  // 0..63

  // S^T = K_j Q_i^T (a = K_j, b = Q_i) or dP^T = V_j dO_i^T, as one group: the exponentials of P^T
  // can then start while dP^T is still in the tensor cores.
  __device__ void issue_ss(float (&acc)[C::kAcc], std::uint32_t a, std::uint32_t b) {
    tc::wgmma_fence();
#pragma unroll
    for (int k = 0; k < C::kSSlices; ++k) {  // along d: 32 bytes of a 128-byte row per k16 slice
      const std::uint32_t box = k / 4, off = (k % 4) * 32;
      const std::uint32_t keys = box * C::B_c * 128 + cw * C::kKeysPerWarpgroup * 128 + off;
      const std::uint64_t da = tc::wgmma_desc_sw128(a + keys), db = tc::wgmma_desc_sw128(b + box * C::B_r * 128 + off);
      if constexpr (C::B_r == 128)
        tc::wgmma_m64n128k16_bf16(acc, da, db, k > 0);
      else
        tc::wgmma_m64n64k16_ss_bf16<0, 0>(acc, da, db, k > 0);
    }
    tc::wgmma_commit_group();
  }

  // P^T of one query tile, in place of S^T, and as A fragments. Masked only where the variant says
  // the tile needs it (chapter 14's: keys past N_kv; causal: a key after some query + offset).
  // Rows past N_q need nothing: their L2 is +inf (P = 0).
  template <bool kMasked>
  __device__ void probabilities(int st, int head, int j0, int i0, const Params& p) {
    const float* L2 = sm.template at<float>(sm.L2(st));
    const int c = t % 4, key0 = j0 + cw * C::kKeysPerWarpgroup + key_row(0);
#pragma unroll
    for (int jj = 0; jj < C::B_r / 8; ++jj) {
      const float2 l = *reinterpret_cast<const float2*>(L2 + 8 * jj + 2 * c);
#pragma unroll
      for (int h = 0; h < 2; ++h)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int r = 4 * jj + 2 * h + e;
          float pv = attn::recomputed_p(s[r], p.scale_log2e, e ? l.y : l.x, attn::LibraryExp2{});
          if constexpr (kMasked)
            if (!var.visible(head, i0 + 8 * jj + 2 * c + e, key0 + 8 * h, p)) pv = 0.0f;
          s[r] = pv;
        }
    }
    pack_p();
  }
  // k16 slice kk of dV += P^T dO (queries 16 kk ..) reads columns jj = 2 kk, 2 kk + 1: registers
  // 8 kk .. 8 kk + 7, in the order of the A fragment (chapter 12's to_p).
  __device__ void pack_p() {
#pragma unroll
    for (int kk = 0; kk < C::kQSlices; ++kk)
#pragma unroll
      for (int q = 0; q < 4; ++q) pf[kk][q] = tc::pack_bf16x2(s[8 * kk + 2 * q], s[8 * kk + 2 * q + 1]);
  }
  __device__ void pack_ds() {
#pragma unroll
    for (int kk = 0; kk < C::kQSlices; ++kk)
#pragma unroll
      for (int q = 0; q < 4; ++q) dsf[kk][q] = tc::pack_bf16x2(dp[8 * kk + 2 * q], dp[8 * kk + 2 * q + 1]);
  }
  // dS^T = P^T o (dP^T - D_i), in place of dP^T, and as A fragments. P^T is S^T's registers, in
  // fp32; with 128 queries those 64 registers do not fit beside dP^T's, the fragments of P^T and
  // of dS^T, dK and dV, so P^T comes back from its bf16 fragments (the P that dV is summed from):
  // S^T's registers are free once the fragments are packed. (The PTX ISA forbids touching a
  // wgmma's A registers while it runs: visit() then forms dS^T before it issues dV.)
  __device__ float p_of(int r) const {
    if constexpr (C::kPFromFragments) {  // register r: fragment (jj / 2, 2 (jj % 2) + h), half e
      const int jj = r / 4, h = r / 2 % 2, e = r % 2;
      const std::uint32_t u = pf[jj / 2][2 * (jj % 2) + h];
      return __uint_as_float(e ? u & 0xffff0000u : u << 16);  // a bf16 is the top half of its fp32
    } else {
      return s[r];
    }
  }
  __device__ void score_gradients(int st) {
    const float* D = sm.template at<float>(sm.D(st));
    const int c = t % 4;
#pragma unroll
    for (int jj = 0; jj < C::B_r / 8; ++jj) {
      const float2 dd = *reinterpret_cast<const float2*>(D + 8 * jj + 2 * c);
#pragma unroll
      for (int h = 0; h < 2; ++h)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int r = 4 * jj + 2 * h + e;
          dp[r] = attn::score_gradient(p_of(r), dp[r], e ? dd.y : dd.x);
        }
    }
    pack_ds();
  }
  // With a score modifier, x = S scale becomes score(x) before the softmax, and dS picks up its
  // derivative: P^T = exp2(score(x) log2(e) - L2_i), dS^T = P^T o (dP^T - D_i) o score'(x). The
  // derivative needs S^T, so S^T stays until dP^T is done and both are formed together here
  // (the exponentials no longer overlap the dP^T GEMM).
  template <bool kMasked>
  __device__ void probabilities_and_gradients(int st, int head, int j0, int i0, const Params& p) {
    const float* L2 = sm.template at<float>(sm.L2(st));
    const float* D = sm.template at<float>(sm.D(st));
    const int c = t % 4, key0 = j0 + cw * C::kKeysPerWarpgroup + key_row(0);
#pragma unroll
    for (int jj = 0; jj < C::B_r / 8; ++jj) {
      const float2 l = *reinterpret_cast<const float2*>(L2 + 8 * jj + 2 * c);
      const float2 dd = *reinterpret_cast<const float2*>(D + 8 * jj + 2 * c);
#pragma unroll
      for (int h = 0; h < 2; ++h)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int r = 4 * jj + 2 * h + e, query = i0 + 8 * jj + 2 * c + e, key = key0 + 8 * h;
          const float x = s[r] * p.scale;
          float pv =
              attn::recomputed_p(var.score(x, head, query, key), ladder::kLog2e, e ? l.y : l.x, attn::LibraryExp2{});
          if constexpr (kMasked)
            if (!var.visible(head, query, key, p)) pv = 0.0f;
          s[r] = pv;
          dp[r] = attn::score_gradient(pv, dp[r], e ? dd.y : dd.x) * var.score_grad(x, head, query, key);
        }
    }
    pack_p();
    pack_ds();
  }

  // dS^T into shared memory as boxes of [B_c keys][64 queries] bf16, 128B-swizzled (16-byte unit
  // u of row r at u ^ r % 8, as TMA would write it): wgmma then reads it as the MN-major A operand
  // dS. Fragment register q of slice kk holds row h = q % 2, columns 16 kk + 8 (q / 2) + 2c, +1:
  // box kk / 4, unit (2 kk + q / 2) % 8 of the row.
  __device__ void store_ds(int b) const {
#pragma unroll
    for (int kk = 0; kk < C::kQSlices; ++kk)
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const int r = cw * C::kKeysPerWarpgroup + key_row(q % 2), unit = (2 * kk + q / 2) % 8;
        const std::uint32_t box = sm.dS(b) + kk / 4 * C::B_c * 128;
        tc::st_shared_b32(box + r * 128 + ((unit ^ (r % 8)) << 4) + 4 * (t % 4), dsf[kk][q]);
      }
  }

  // dV += P^T dO_i, dK += dS^T Q_i: A from registers, B = dO_i, Q_i as they lie ([queries][d]
  // boxes: MN-major, the next 16 queries 2048 bytes on, the next 64 columns one box on).
  // One group each: dV goes first, as soon as P^T is ready.
  __device__ void issue_rs(float (&acc)[C::d / 2], const std::uint32_t (&a)[C::kQSlices][4], std::uint32_t b) {
    tc::wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < C::kQSlices; ++kk) {
      const std::uint64_t desc = tc::wgmma_desc_mn_sw128(b + kk * 16 * 128, C::B_r * 128);
      if constexpr (C::d == 128)
        tc::wgmma_m64n128k16_rs_bf16_tb(acc, a[kk], desc, 1);
      else
        tc::wgmma_m64n64k16_rs_bf16_tb(acc, a[kk], desc, 1);
    }
    tc::wgmma_commit_group();
  }

  // This warpgroup's 64 x 64 block of dQ_i (Cfg's split): at d = 128 columns 64 cw .. (K_j's box
  // cw) over all B_c keys; with 128 queries rows 64 cw .. (dS^T's box cw) over all B_c keys; else
  // the whole block over this warpgroup's keys. A = dS (dS^T read transposed), B = K_j (MN-major).
  __device__ void issue_dq(int b) {
    const int key_base = C::kDqWritersPerBlock == 1 ? 0 : cw * C::kKeysPerWarpgroup;
    const int box = C::kDqSplitColumns ? cw : 0;
    const std::uint32_t ds = sm.dS(b) + (C::kDqSplitRows ? cw * C::B_c * 128 : 0);
    tc::wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < C::kDqKeySlices; ++kk) {
      const int key = key_base + 16 * kk;
      tc::wgmma_m64n64k16_ss_bf16<1, 1>(dq, tc::wgmma_desc_mn_sw128(ds + key * 128, C::B_r * 128),
                                        tc::wgmma_desc_mn_sw128(sm.K() + box * C::B_c * 128 + key * 128, C::B_c * 128),
                                        kk > 0);
    }
    tc::wgmma_commit_group();
  }

  // Adds dQ_i's block into the fp32 accumulator (fa3_bwd_layout.h): Atomic, from the registers;
  // otherwise through buffer seq % kdQBuffers in shared memory to the writer warp (seq: the CTA's
  // visit number). Accumulator row 16w + g + 8h is that row of the block; its columns 8 jj + 2c + e.
  __device__ void add_dq(int seq, int head, int i, const Params& p) {
    if constexpr (!C::kBulk) {
      float* g = p.dQ_acc + layout::block_index(head, p.blocks, C::dq_row_block(i, cw), C::d, C::dq_chunk(cw));
#pragma unroll
      for (int jj = 0; jj < 8; ++jj)
#pragma unroll
        for (int h = 0; h < 2; ++h)
#pragma unroll
          for (int e = 0; e < 2; ++e)
            atomicAdd(g + layout::chunk_offset(key_row(h), 8 * jj + 2 * (t % 4) + e), dq[4 * jj + 2 * h + e]);
    } else {
      const int b = seq % C::kdQBuffers;
      tc::mbarrier_wait(sm.dq_empty(cw, b), ((seq / C::kdQBuffers) & 1) ^ 1);  // the writer has read it
      float* block = sm.template at<float>(sm.dQ(cw, b));
#pragma unroll
      for (int jj = 0; jj < 8; ++jj)
#pragma unroll
        for (int h = 0; h < 2; ++h)
          *reinterpret_cast<float2*>(block + layout::chunk_offset(key_row(h), 8 * jj + 2 * (t % 4))) =
              make_float2(dq[4 * jj + 2 * h], dq[4 * jj + 2 * h + 1]);
      tc::fence_proxy_async_shared_cta();  // the copy engine reads what these stores wrote
      tc::mbarrier_arrive(sm.dq_full(cw, b));
    }
  }

  // S^T of the CTA's visit number seq, once its stage is loaded.
  __device__ void issue_s(int seq) {
    const int st = seq % C::kStages;
    tc::mbarrier_wait(sm.full(st), (seq / C::kStages) & 1);
    issue_ss(s, sm.K(), sm.Q(st));
  }

  // Visit n of walk w (one query tile): the CTA's visit number seq = w.pos + n (its stage, its buffers).
  __device__ void visit(int n, const Walk<C, V>& w, const Params& p) {
    const int seq = w.pos + n, st = seq % C::kStages, i0 = w.i(n) * C::B_r, head = w.q_head(n);
    const bool masked = var.template masked<C>(w.qs, n, w.j0, i0, p);
    issue_ss(dp, sm.V(), sm.dO(st));  // S^T is done (the visit before waited for it)
    if constexpr (!V::kScoreMod) {
      if (masked)
        probabilities<true>(st, head, w.j0, i0, p);
      else
        probabilities<false>(st, head, w.j0, i0, p);
      if constexpr (!C::kPFromFragments) {
        issue_rs(dv, pf, sm.dO(st));
        tc::wgmma_wait_group<1>();  // dP^T is done; dV may still run
        tc::fence_operand(dp);
        score_gradients(st);
      } else {  // dS^T reads the fragments of P^T, which no wgmma in flight may be reading
        tc::wgmma_wait_group<0>();
        tc::fence_operand(dp);
        score_gradients(st);
        issue_rs(dv, pf, sm.dO(st));
      }
    } else {
      tc::wgmma_wait_group<0>();
      tc::fence_operand(dp);
      if (masked)
        probabilities_and_gradients<true>(st, head, w.j0, i0, p);
      else
        probabilities_and_gradients<false>(st, head, w.j0, i0, p);
      issue_rs(dv, pf, sm.dO(st));
    }
    // dS^T buffer seq % 2 was last read by visit seq - 2's dQ, which both warpgroups waited for
    // before they met at visit seq - 1's barrier below: no barrier is needed before writing it.
    store_ds(seq % C::kdSBuffers);
    tc::fence_proxy_async_shared_cta();  // wgmma reads what these stores wrote
    issue_rs(dk, dsf, sm.Q(st));
    tc::named_bar_sync(kDsReady, 256);  // all of dS^T is written
    issue_dq(seq % C::kdSBuffers);
    tc::wgmma_wait_group<1>();  // dV and dK are done; dQ may still run
    tc::fence_operand(dk);
    tc::fence_operand(dv);
    tc::fence_operand(pf);
    tc::fence_operand(dsf);
    // The next visit's S^T runs while this one's dQ_i is handed to the writer. The last visit
    // issues its own S^T once more (unused): every visit then has the same GEMMs in flight at
    // each wait, and none past the visit's end, as ptxas needs to keep the wgmmas unserialised.
    issue_s(w.pos + min(n + 1, w.visits - 1));
    tc::wgmma_wait_group<1>();  // dQ is done; S^T may still run
    tc::fence_operand(dq);
    add_dq(seq, head, w.i(n), p);
    tc::wgmma_wait_group<0>();
    tc::fence_operand(s);
    // Q_i, dO_i, L_i, D_i are no longer read. Every thread arrives, each after its own loads of
    // L_i and D_i: the arrival (a release) orders exactly the loads that the next copy into the
    // stage must follow.
    tc::mbarrier_arrive(sm.empty(st));
  }

  __device__ void run(const Walk<C, V>& w, const Params& p) {
    // At B_r = 128 the zero comes from an asm statement, which stays after setmaxnreg: a plain
    // 0.0f is a constant the compiler may materialise before it, where a thread still has 168
    // registers, and ptxas then keeps dK_j, dV_j in local memory for the whole loop (768 bytes of
    // spills at d = 64). At B_r = 64 the constant is harmless and the asm is not: it moves the
    // walk's compares off the uniform datapath (22 UISETP become ISETP, 120 more instructions).
    float zero = 0.0f;
    if constexpr (C::B_r == 128) asm volatile("mov.b32 %0, 0;" : "=f"(zero));
#pragma unroll
    for (int k = 0; k < C::d / 2; ++k) dk[k] = zero, dv[k] = zero;
    if (w.visits == 0) return;
    tc::mbarrier_wait(sm.kv_full(), w.loads & 1);
    issue_s(w.pos);
    tc::wgmma_wait_group<0>();
    tc::fence_operand(s);
    for (int n = 0; n < w.visits; ++n) visit(n, w, p);
  }

  // dK_j = scale dS^T Q summed, dV_j: bf16, straight from the registers (once per CTA).
  __device__ void store(const Walk<C, V>& w, const Params& p) const {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int key = w.j0 + cw * C::kKeysPerWarpgroup + key_row(h);
      if (key >= p.N_kv) continue;
      const std::int64_t row = (std::int64_t(w.kv_head) * p.N_kv + key) * C::d;
#pragma unroll
      for (int jj = 0; jj < C::d / 8; ++jj) {
        const int col = 8 * jj + 2 * (t % 4), r = 4 * jj + 2 * h;
        *reinterpret_cast<__nv_bfloat162*>(p.dK + row + col) =
            __floats2bfloat162_rn(dk[r] * p.scale, dk[r + 1] * p.scale);
        *reinterpret_cast<__nv_bfloat162*>(p.dV + row + col) = __floats2bfloat162_rn(dv[r], dv[r + 1]);
      }
    }
  }
};
#endif  // TC_HOPPER_ENABLED

// ---- the kernel ------------------------------------------------------------------------------
// The scheduler gives each CTA one walk, or (S::kPersistent) one CTA per SM walks places of the
// launch order until none is left. CTA c takes place c first; each next place comes from a counter
// in global memory (the deterministic step's flags, unused by the others and zeroed before every
// launch: the place is gridDim.x plus the count), so a CTA that finishes early takes the next
// place, as the GPU hands the next CTA to whichever SM frees up. The producer draws the places and
// passes them on through two slots in shared memory; each role (producer, dQ writer, consumers)
// walks the same sequence, and the counts of earlier visits keep their barriers in step.
template <class C, class V, class S, class F>
__device__ void for_each_walk(const Smem<C>& sm, bool draws, const Params& p, const V& var, S scheduler, F&& f) {
  static_assert(!C::kDeterministic, "the deterministic step's flags count dQ's additions");
  const int T_c = (p.N_kv + C::B_c - 1) / C::B_c, places = S::places(T_c, p, var);
  int pos = 0, loads = 0;
  for (int k = 0;; ++k) {
    int t;
    if (draws) {
      t = k == 0 ? static_cast<int>(blockIdx.x) : static_cast<int>(gridDim.x) + atomicAdd(p.dq_flags, 1);
      tc::mbarrier_wait(sm.next_empty(k % 2), ((k / 2) & 1) ^ 1);  // every role has read its last place
      *sm.template at<int>(sm.next(k % 2)) = t;
      tc::mbarrier_arrive(sm.next_full(k % 2));  // (a release: the store comes before it)
    } else {
      tc::mbarrier_wait(sm.next_full(k % 2), (k / 2) & 1);
      t = *sm.template at<volatile int>(sm.next(k % 2));
      tc::mbarrier_arrive(sm.next_empty(k % 2));
    }
    if (t >= places) return;
    Walk<C, V> w(t, T_c, p, var, scheduler);
    w.pos = pos, w.loads = loads;
    f(w);
    pos += w.visits, loads += w.visits > 0;
  }
}

// The kernel: a tile config C (fa3_bwd_config.h), an attention variant V, a scheduler S.
template <class C, class V, class S>
__global__ void __launch_bounds__(C::kThreads, 1)
    fa3_bwd_kernel(const __grid_constant__ CUtensorMap tmQ, const __grid_constant__ CUtensorMap tmdO,
                   const __grid_constant__ CUtensorMap tmK, const __grid_constant__ CUtensorMap tmV,
                   const __grid_constant__ Params p, const __grid_constant__ V var) {
  static_assert(ladder::variant::Backward<V, C, Params>::ok);
  constexpr S scheduler{};
#if TC_HOPPER_ENABLED
  extern __shared__ unsigned char smem_raw[];
  const Smem<C> sm(smem_raw);
  if (threadIdx.x == 0) {
    sm.init_barriers();
    if constexpr (S::kPersistent) sm.init_next_places();
  }
  __syncthreads();
  const int wg = threadIdx.x / 128;
  if constexpr (!S::kPersistent) {  // one walk, built once before the roles split
    const Walk<C, V> w(p, var, scheduler);
    if (wg == 0) {  // copies only (TMA in, dQ out): it gives its registers to the consumers
      tc::setmaxnreg_dec<C::kProducerRegs>();
      const int warp = threadIdx.x / 32;
      if (warp == 0 && tc::elect_one_sync()) produce<C>(sm, &tmQ, &tmdO, &tmK, &tmV, w, p);
      if constexpr (C::kBulk)
        if (warp == 1 && tc::elect_one_sync()) write_dq<C>(sm, w, p, var);
      return;
    }
    tc::setmaxnreg_inc<C::kConsumerRegs>();
    Consumer<C, V> consumer{sm, var, wg - 1, static_cast<int>(threadIdx.x % 128)};
    consumer.run(w, p);
    consumer.store(w, p);
  } else {  // the same roles, each over the CTA's walks (each role draws or reads the next place)
    if (wg == 0) {
      tc::setmaxnreg_dec<C::kProducerRegs>();
      const int warp = threadIdx.x / 32;
      if (warp == 0 && tc::elect_one_sync())
        for_each_walk(sm, true, p, var, scheduler,
                      [&](const Walk<C, V>& w) { produce<C>(sm, &tmQ, &tmdO, &tmK, &tmV, w, p); });
      if constexpr (C::kBulk)
        if (warp == 1 && tc::elect_one_sync())
          for_each_walk(sm, false, p, var, scheduler, [&](const Walk<C, V>& w) { write_dq<C>(sm, w, p, var); });
      return;
    }
    tc::setmaxnreg_inc<C::kConsumerRegs>();
    Consumer<C, V> consumer{sm, var, wg - 1, static_cast<int>(threadIdx.x % 128)};
    for_each_walk(sm, false, p, var, scheduler, [&](const Walk<C, V>& w) {
      consumer.run(w, p);
      consumer.store(w, p);
    });
  }
#endif
}

inline tc::TensorMapKey map_key(const void* X, std::uint64_t cols, std::uint64_t rows, std::uint64_t heads,
                                std::uint32_t box_rows) {
  tc::TensorMapKey k;
  k.data = X;
  k.rank = 3;
  k.dims[0] = cols, k.dims[1] = rows, k.dims[2] = heads;
  k.box[0] = 64, k.box[1] = box_rows, k.box[2] = 1;
  return k;
}

template <class C, class V, class S>
void launch_cfg(const ladder::AttentionShape& s, const Operands& x, const Params& p, const V& var, S,
                cudaStream_t stream) {
  const std::uint64_t d = C::d;
  const CUtensorMap tmQ = tc::tensor_map(map_key(x.Q, d, s.N, s.heads(), C::B_r));
  const CUtensorMap tmdO = tc::tensor_map(map_key(x.dO, d, s.N, s.heads(), C::B_r));
  const CUtensorMap tmK = tc::tensor_map(map_key(x.K, d, s.nkv(), s.kv_heads(), C::B_c));
  const CUtensorMap tmV = tc::tensor_map(map_key(x.V, d, s.nkv(), s.kv_heads(), C::B_c));
  auto* kernel = fa3_bwd_kernel<C, V, S>;
  ladder::allow_dynamic_smem(kernel, C::kSmemBytes, "fa3bwd::backward");
  dim3 grid(ladder::ceil_div(s.nkv(), C::B_c), static_cast<unsigned>(s.kv_heads()));
  if constexpr (S::kPersistent)
    grid = dim3(std::min<long long>(std::int64_t(grid.x) * grid.y, ladder::device().sm_count));
  kernel<<<grid, C::kThreads, C::kSmemBytes, stream>>>(tmQ, tmdO, tmK, tmV, p, var);
  CUDA_CHECK_LAUNCH();
}

}  // namespace fa3bwd::kernel
