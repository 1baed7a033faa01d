// FlashAttention-3 forward (Shah et al. 2024) on Hopper: chapter 10's algorithm, moved onto
// TMA, asynchronous warpgroup MMAs and warp specialisation. Compiled for sm_90a only (its
// own library, CMakeLists.txt); the kernel body sits inside `#if TC_HOPPER_ENABLED`, and
// fa3.cpp launches it only on a compute capability 9.0 device.
//
// One CTA per (row tile Q_i of B_r = 128 queries, query head). Two consumer warpgroups own
// 64 rows of Q_i each; per key tile j (B_c = 128 keys):
//   S = Q_i K_j^T        wgmma, both operands in shared memory (K-major, 128B swizzle)
//   online softmax       on the accumulator registers (fa3_softmax.cuh), as in chapter 10
//   O_i += P V_j         wgmma with P in registers (the S accumulators rounded in place)
//                        and V_j in shared memory, read MN-major (bf16) or as Vt (FP8)
// K_j and V_j arrive by TMA into a ring of kStages stages. K and V have barriers of their
// own: "K full" / "V full" (so S can start before V_j lands) and "K empty" / "V empty",
// which the eight consumer warps arrive on when they are done with them. K_j is released
// as soon as S = Q_i K_j^T has finished, a whole P V GEMM before V_j: the producer can
// refill its slot with K_{j+kStages} early, and the next S never waits for a copy that
// only started when the last P V ended (round 1's profile: one shared "empty" barrier per
// stage left the tensor cores idle half of the time).
//
// The steps (fa3.h, Step) are compile-time switches of this one kernel:
//   Tma       no producer: thread 0 also issues the copies, refilling a stage once both
//             consumer warpgroups have released it
//   WarpSpec  + warpgroup 0 is a producer: one elected thread loops over the key tiles,
//             waiting for free stages; setmaxnreg gives its registers to the consumers
//   PingPong  + two named barriers pass a "turn" between the consumers: a warpgroup issues
//             its GEMMs only in its turn, so its softmax runs while the other's GEMMs do
//   IntraWg   + S_{j+1} = Q_i K_{j+1}^T is issued together with O_i += P_j V_j, and the
//             softmax of S_{j+1} runs while the tensor cores work on both
//   Persistent + (dense only) one CTA per SM walks row tiles (i, head) in steps of the grid:
//             the producer loads the next tile's Q_i, K_j, V_j while the consumers still
//             finish and store the current one (Q_i has an "empty" barrier of its own, O its
//             own buffer). Causal keeps one CTA per tile, heaviest first: a static walk
//             would hand some CTAs more work than others.
//
// Key tiles run from the last to the first, as in chapter 10: with causal masking the
// diagonal tiles (the only ones that pay for the mask) come first.
#include <cuda_fp8.h>

#include <algorithm>
#include <cstdint>

#include "cuda_check.h"
#include "device.h"
#include "fa3_kernel.h"
#include "fa3_softmax.cuh"
#include "launch.h"
#include "wgmma.cuh"

namespace fa3::detail {

namespace {

using bf16_t = __nv_bfloat16;

// A compiled variant. E = bytes per element; every shared-memory row is 128 bytes (64 bf16
// or 128 e4m3), 128B-swizzled as TMA writes it, so a tile of width d*E bytes is stored as
// d*E/128 "column boxes" of [rows][128 bytes] one after the other.
template <int d_, bool kFp8_, Step kStep_, int kStagesOverride = 0>
struct Cfg {
  static constexpr int d = d_;
  static constexpr bool kFp8 = kFp8_;
  static constexpr Step kStep = kStep_;
  static constexpr int E = kFp8 ? 1 : 2;
  static constexpr int B_r = kBr, B_c = kBc;
  static constexpr bool kProducer = kStep != Step::Tma;
  static constexpr bool kPingPong = kStep == Step::PingPong || kStep == Step::IntraWg || kStep == Step::Persistent;
  static constexpr bool kIntraWg = kStep == Step::IntraWg || kStep == Step::Persistent;
  static constexpr bool kPersistent = kStep == Step::Persistent;
  static constexpr int kThreads = kProducer ? 384 : 256;
  static constexpr int kBoxes = d * E / 128;  // column boxes of Q, K (and of V in bf16)
  static constexpr int kQBytes = B_r * d * E, kKBytes = B_c * d * E, kVBytes = B_c * d * E;
  static constexpr int kStages = kStagesOverride ? kStagesOverride : (kFp8 || d == 64) ? 4 : 2;
  static constexpr std::size_t kBarrierBytes = 8 * (2 + 4 * kStages);
  // O leaves through shared memory as bf16 (fa3_softmax.cuh, store): in Q_i's buffer, free
  // once a warpgroup's last S is done (each warpgroup reads and writes only its own rows of
  // it); FP8's Q_i is half as large, so O gets a buffer of its own there.
  static constexpr int kOBytes = B_r * d * 2;
  // (Persistent: Q_i's buffer already holds the next tile's Q_i then.)
  static constexpr int kOwnOBytes = kQBytes >= kOBytes && !kPersistent ? 0 : kOBytes;
  static constexpr std::size_t kSmemBytes =
      1024 + kQBytes + std::size_t(kStages) * (kKBytes + kVBytes) + kOwnOBytes + kBarrierBytes;
  // S = Q K^T: k steps of 32 bytes (k16 bf16, k32 e4m3) along each 128-byte row.
  static constexpr int kSSteps = d * E / 32;
  // O += P V: k steps along the keys (16 for bf16, 32 for e4m3).
  static constexpr int kPSteps = kFp8 ? B_c / 32 : B_c / 16;
  static constexpr int kProducerRegs = 24, kConsumerRegs = 240;
  static_assert(kBoxes >= 1 && kSSteps >= 4 && kPSteps >= 4, "rows of at least 128 bytes");
  static_assert(kPingPong || !kIntraWg, "each step adds to the one before");
  static_assert(!kFp8 || d == 128, "FP8 is compiled for d = 128");
  static_assert(128 * kProducerRegs + 256 * kConsumerRegs <= 65536, "the register file holds both roles");
};

// The shared memory of a CTA: Q_i, then kStages x (K_j, V_j), then (persistent and FP8) a
// buffer of its own for staging O, then the mbarriers.
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
};

template <class C>
__global__ void __launch_bounds__(C::kThreads, 1)
    fa3_kernel(const __grid_constant__ CUtensorMap tmQ, const __grid_constant__ CUtensorMap tmK,
               const __grid_constant__ CUtensorMap tmV, const __grid_constant__ Params p) {
#if TC_HOPPER_ENABLED
  constexpr int B_r = C::B_r, B_c = C::B_c, kStages = C::kStages;
  constexpr int kTurnBarrier = 1;   // named barriers 1, 2: "consumer 0's / 1's turn" (0 is __syncthreads)
  constexpr int kStoreBarrier = 3;  // 3, 4: consumer 0's / 1's epilogue
  extern __shared__ unsigned char smem_raw[];
  const Smem<C> sm(smem_raw);
  const int wg = threadIdx.x / 128, t = threadIdx.x % 128;

  // The row tiles of this CTA: one (blockIdx), or every gridDim.x-th of all when persistent
  // (dense; consecutive tiles share a head, so the CTAs at work share K, V in L2).
  const bool persistent = C::kPersistent && !p.causal;
  const int n_tiles = persistent ? p.T_r * p.heads : 1, tile_stride = persistent ? gridDim.x : 1;
  const int first_tile = persistent ? blockIdx.x : 0;
  // Per tile: Q_i's rows and heads; the key tiles this row tile sees, and those below
  // n_full, which every row sees whole.
  int i0, head, kv_head, T_c, n_full;
  auto set_tile = [&](int tile) {
    // Causal row tiles see more keys the lower they are: the heaviest start first.
    const int i_tile = persistent ? tile % p.T_r
                       : p.causal ? p.T_r - 1 - static_cast<int>(blockIdx.x)
                                  : static_cast<int>(blockIdx.x);
    i0 = i_tile * B_r;
    head = persistent ? tile / p.T_r : blockIdx.y;
    kv_head = head / p.H * p.H_kv + head % p.H / p.group;
    const int kv_end = p.causal ? max(0, min(p.N_kv, i0 + B_r + p.offset)) : p.N_kv;
    T_c = (kv_end + B_c - 1) / B_c;
    n_full = (p.causal ? max(0, min(p.N_kv, i0 + p.offset + 1)) : p.N_kv) / B_c;
  };

  if (threadIdx.x == 0) {
    tc::mbarrier_init(sm.q_full(), 1);
    tc::mbarrier_init(sm.q_empty(), 8);  // the eight consumer warps
    for (int s = 0; s < kStages; ++s) {
      tc::mbarrier_init(sm.k_full(s), 1);
      tc::mbarrier_init(sm.v_full(s), 1);
      tc::mbarrier_init(sm.k_empty(s), 8);  // the eight consumer warps
      tc::mbarrier_init(sm.v_empty(s), 8);
    }
    tc::fence_mbarrier_init();
  }
  __syncthreads();

  // The copies, issued by one thread. Step `it` of a row tile's loop is key tile T_c - 1 - it;
  // `g`, the steps of the earlier row tiles of this CTA, continues the ring's stages.
  auto load_q = [&] {
    tc::mbarrier_arrive_expect_tx(sm.q_full(), C::kQBytes);
    for (int b = 0; b < C::kBoxes; ++b)
      dev::tma_load_3d(sm.Q() + b * B_r * 128, &tmQ, b * 128 / C::E, i0, head, sm.q_full());
  };
  int g = 0;
  auto load_k = [&](int it) {
    const int s = (g + it) % kStages, j0 = (T_c - 1 - it) * B_c;
    tc::mbarrier_arrive_expect_tx(sm.k_full(s), C::kKBytes);
    for (int b = 0; b < C::kBoxes; ++b)
      dev::tma_load_3d(sm.K(s) + b * B_c * 128, &tmK, b * 128 / C::E, j0, kv_head, sm.k_full(s));
  };
  auto load_v = [&](int it) {
    const int s = (g + it) % kStages, j0 = (T_c - 1 - it) * B_c;
    tc::mbarrier_arrive_expect_tx(sm.v_full(s), C::kVBytes);
    if constexpr (C::kFp8)  // Vt8: d rows of 128 keys (one box)
      dev::tma_load_3d(sm.V(s), &tmV, j0, 0, kv_head, sm.v_full(s));
    else
      for (int b = 0; b < C::kBoxes; ++b)
        dev::tma_load_3d(sm.V(s) + b * B_c * 128, &tmV, b * 64, j0, kv_head, sm.v_full(s));
  };

  if constexpr (C::kProducer) {
    if (wg == 0) {
      // ---- producer: one thread waits for free stages and refills them ----
      tc::setmaxnreg_dec<C::kProducerRegs>();
      if (t < 32 && tc::elect_one_sync()) {
        tc::prefetch_tensormap(&tmK);
        tc::prefetch_tensormap(&tmV);
        for (int tile = first_tile, n = 0; tile < n_tiles; tile += tile_stride, ++n) {
          set_tile(tile);
          // Every slot is free once its previous use is released; the first round passes.
          // K's slot frees up (S done) before V's (P V done), Q_i's once the last S of the
          // previous row tile is done: K_0 may go before Q_i.
          auto next_q = [&] {
            tc::mbarrier_wait(sm.q_empty(), (n & 1) ^ 1);
            load_q();
          };
          for (int it = 0; it < T_c; ++it) {
            const int s = (g + it) % kStages, parity = (((g + it) / kStages) & 1) ^ 1;
            tc::mbarrier_wait(sm.k_empty(s), parity);
            load_k(it);
            if (it == 0) next_q();
            tc::mbarrier_wait(sm.v_empty(s), parity);
            load_v(it);
          }
          if (T_c == 0) next_q();
          g += T_c;
        }
      }
      return;
    }
    tc::setmaxnreg_inc<C::kConsumerRegs>();
  } else {
    set_tile(first_tile);  // (one tile: the steps without a producer are not persistent)
    if (threadIdx.x == 0) {
      load_q();
      for (int it = 0; it < kStages && it < T_c; ++it) load_k(it), load_v(it);
    }
  }

  // ---- consumers ----
  const int cw = C::kProducer ? wg - 1 : wg;  // consumer warpgroup 0 or 1: rows 64 cw ..
  const int warp = t / 32, lane = t % 32;
  Rows<C::d, C::kFp8> r;
  float scale_log2e;

  // The turn of ping-pong: consumer cw issues its GEMMs between begin and end. Consumer 1
  // hands consumer 0 the first turn; consumer 0 takes the turn consumer 1 hands back last.
  auto turn_begin = [&] {
    if constexpr (C::kPingPong) dev::named_bar_sync(kTurnBarrier + cw, 256);
  };
  auto turn_end = [&] {
    if constexpr (C::kPingPong) dev::named_bar_arrive(kTurnBarrier + (cw ^ 1), 256);
  };
  if constexpr (C::kPingPong)
    if (cw == 1) dev::named_bar_arrive(kTurnBarrier, 256);

  // The GEMMs, issued (not waited for). Descriptors: this warpgroup's 64 rows of Q_i; K_j
  // and V_j of stage s.
  float s_acc[B_c / 2];  // S (64 x B_c), fp32, then P~ in place
  std::uint32_t p_frag[C::kPSteps][4];
  auto issue_s = [&](int s) {
    tc::wgmma_fence();
#pragma unroll
    for (int k = 0; k < C::kSSteps; ++k) {
      const std::uint32_t box = k / 4, off = (k % 4) * 32;
      const std::uint64_t a = tc::wgmma_desc_sw128(sm.Q() + box * B_r * 128 + cw * 64 * 128 + off);
      const std::uint64_t b = tc::wgmma_desc_sw128(sm.K(s) + box * B_c * 128 + off);
      if constexpr (C::kFp8)
        dev::wgmma_m64n128k32_ss_e4m3(s_acc, a, b, k > 0);
      else
        tc::wgmma_m64n128k16_bf16(s_acc, a, b, k > 0);
    }
    tc::wgmma_commit_group();
  };
  auto issue_pv = [&](int s) {
    tc::wgmma_fence();
#pragma unroll
    for (int k = 0; k < C::kPSteps; ++k) {
      if constexpr (C::kFp8) {  // Vt_j: d rows of 128 keys, K-major; the next 32 keys 32 bytes on
        const std::uint64_t b = tc::wgmma_desc_sw128(sm.V(s) + k * 32);
        dev::wgmma_m64n128k32_rs_e4m3(r.o, p_frag[k], b, 1);
      } else {  // V_j: [keys][d] boxes, MN-major; the next 16 keys 16 rows (2048 bytes) on
        const std::uint64_t b = dev::desc_mn_sw128(sm.V(s) + k * 16 * 128, B_c * 128);
        if constexpr (C::d == 128)
          dev::wgmma_m64n128k16_rs_bf16_tb(r.o, p_frag[k], b, 1);
        else
          dev::wgmma_m64n64k16_rs_bf16_tb(r.o, p_frag[k], b, 1);
      }
    }
    tc::wgmma_commit_group();
  };
  // The eight consumer warps release K_j once S has finished and V_j once P V has (one
  // arrival each); without a producer, thread 0 then refills the stage with the tile
  // kStages ahead, once the other warps have released both.
  // After the row tile's last S, Q_i's buffer may take the next tile's Q_i (persistent).
  auto release_k = [&](int it) {
    if (lane == 0) tc::mbarrier_arrive(sm.k_empty((g + it) % kStages));
    if (lane == 0 && it == T_c - 1) tc::mbarrier_arrive(sm.q_empty());
  };
  auto release_v = [&](int it) {
    const int s = (g + it) % kStages;
    if (lane == 0) tc::mbarrier_arrive(sm.v_empty(s));
    if constexpr (!C::kProducer) {  // (one row tile: g = 0)
      if (threadIdx.x == 0 && it + kStages < T_c) {
        tc::mbarrier_wait(sm.k_empty(s), ((g + it) / kStages) & 1);
        tc::mbarrier_wait(sm.v_empty(s), ((g + it) / kStages) & 1);
        load_k(it + kStages), load_v(it + kStages);
      }
      __syncwarp();
    }
  };
  // The online softmax of tile `it` (key tile j = T_c - 1 - it): masked only where needed.
  auto softmax = [&](int it) {
    const int j = T_c - 1 - it;
    float sl2e = scale_log2e;
    if constexpr (C::kFp8) sl2e *= p.descale_k[std::int64_t(kv_head) * p.k_scale_blocks + j];
    if (j >= n_full)
      r.template online_softmax<true>(s_acc, sl2e, j * B_c, p);
    else
      r.template online_softmax<false>(s_acc, sl2e, j * B_c, p);
  };
  auto wait_k = [&](int it) { tc::mbarrier_wait(sm.k_full((g + it) % kStages), ((g + it) / kStages) & 1); };
  auto wait_v = [&](int it) { tc::mbarrier_wait(sm.v_full((g + it) % kStages), ((g + it) / kStages) & 1); };

  for (int tile = first_tile, n = 0; tile < n_tiles; tile += tile_stride, ++n) {
    set_tile(tile);
    r.init(i0 + cw * kRowsPerWarpgroup + 16 * warp + lane / 4, lane % 4);
    scale_log2e = p.scale_log2e;
    if constexpr (C::kFp8)  // (the min: a warpgroup whose rows all lie past N has no scale, and stores nothing)
      scale_log2e *= p.descale_q[std::int64_t(head) * p.q_scale_blocks + min(i0 / 64 + cw, p.q_scale_blocks - 1)];
    tc::mbarrier_wait(sm.q_full(), n & 1);
    if constexpr (!C::kIntraWg) {
      for (int it = 0; it < T_c; ++it) {
        wait_k(it);
        turn_begin();
        issue_s((g + it) % kStages);
        turn_end();
        tc::wgmma_wait_group<0>();
        tc::fence_operand(s_acc);
        release_k(it);
        softmax(it);
        r.rescale_o();
        r.to_p(s_acc, p_frag);
        wait_v(it);
        turn_begin();
        issue_pv((g + it) % kStages);
        turn_end();
        tc::wgmma_wait_group<0>();
        tc::fence_operand(r.o);
        dev::fence_operand(p_frag);
        release_v(it);
      }
    } else if (T_c > 0) {
      // S_0 alone; then per step S_it together with P_{it-1} V_{it-1}; then the last P V.
      wait_k(0);
      turn_begin();
      issue_s(g % kStages);
      turn_end();
      tc::wgmma_wait_group<0>();
      tc::fence_operand(s_acc);
      release_k(0);
      softmax(0);
      r.to_p(s_acc, p_frag);
      for (int it = 1; it < T_c; ++it) {
        wait_k(it);
        wait_v(it - 1);
        turn_begin();
        issue_s((g + it) % kStages);
        issue_pv((g + it - 1) % kStages);
        turn_end();
        tc::wgmma_wait_group<1>();  // S_it is done; P_{it-1} V_{it-1} may still run
        tc::fence_operand(s_acc);
        release_k(it);
        softmax(it);  // touches neither O_i nor P_{it-1}
        tc::wgmma_wait_group<0>();
        tc::fence_operand(r.o);
        dev::fence_operand(p_frag);
        release_v(it - 1);
        r.rescale_o();
        r.to_p(s_acc, p_frag);
      }
      wait_v(T_c - 1);
      turn_begin();
      issue_pv((g + T_c - 1) % kStages);
      turn_end();
      tc::wgmma_wait_group<0>();
      tc::fence_operand(r.o);
      dev::fence_operand(p_frag);
      release_v(T_c - 1);
    }
    if (lane == 0 && T_c == 0) tc::mbarrier_arrive(sm.q_empty());  // (no S at all)
    // In `persistent` the next row tile writes this O buffer again; that is safe only because
    // every consumer thread passes turn_begin's bar.sync (256 threads) in between, after its
    // ld.shared of this tile. A persistent variant without ping-pong would need a barrier here.
    r.store(p, head, sm.O() + cw * kRowsPerWarpgroup * 128, i0 + cw * kRowsPerWarpgroup, t, kStoreBarrier + cw);
    g += T_c;
  }
  if constexpr (C::kPingPong)
    if (cw == 0) dev::named_bar_sync(kTurnBarrier, 256);
#endif
}

template <class C>
void launch_variant(const Maps& m, const Params& p, int heads, cudaStream_t stream) {
  auto* kernel = fa3_kernel<C>;
  ladder::allow_dynamic_smem(kernel, C::kSmemBytes, "fa3::forward");
  ladder::check_grid("fa3::forward", p.T_r, heads);
  Params q = p;
  q.heads = heads;
  dim3 grid(p.T_r, heads);
  if (C::kPersistent && !p.causal)
    grid = dim3(std::min<long long>(std::int64_t(p.T_r) * heads, ladder::device().sm_count));
  fa3_kernel<C><<<grid, C::kThreads, C::kSmemBytes, stream>>>(m.Q, m.K, m.V, q);
  CUDA_CHECK_LAUNCH();
}

template <int d, bool kFp8>
void launch_step(Step step, const Maps& m, const Params& p, int heads, cudaStream_t stream) {
  switch (step) {
    case Step::Tma: return launch_variant<Cfg<d, kFp8, Step::Tma>>(m, p, heads, stream);
    case Step::WarpSpec: return launch_variant<Cfg<d, kFp8, Step::WarpSpec>>(m, p, heads, stream);
    case Step::PingPong: return launch_variant<Cfg<d, kFp8, Step::PingPong>>(m, p, heads, stream);
    case Step::IntraWg: return launch_variant<Cfg<d, kFp8, Step::IntraWg>>(m, p, heads, stream);
    case Step::Persistent: return launch_variant<Cfg<d, kFp8, Step::Persistent>>(m, p, heads, stream);
  }
}

template <class C>
Footprint footprint_of() {
  return {C::kSmemBytes, C::kThreads, C::kStages};
}
template <int d, bool kFp8>
Footprint footprint_of(Step step) {
  switch (step) {
    case Step::Tma: {
      using C = Cfg<d, kFp8, Step::Tma>;
      return {C::kSmemBytes, C::kThreads, C::kStages};
    }
    case Step::Persistent: return footprint_of<Cfg<d, kFp8, Step::Persistent>>();
    default: return footprint_of<Cfg<d, kFp8, Step::IntraWg>>();
  }
}

}  // namespace

Footprint footprint(int d, bool fp8, Step step, int kv_stages) {
  if (kv_stages == 3) return footprint_of<Cfg<128, false, Step::IntraWg, 3>>();
  if (fp8) return footprint_of<128, true>(step);
  return d == 64 ? footprint_of<64, false>(step) : footprint_of<128, false>(step);
}

bool compiled_for_sm90a() {
  cudaFuncAttributes attr{};
  if (cudaFuncGetAttributes(&attr, fa3_kernel<Cfg<128, false, Step::IntraWg>>) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return attr.binaryVersion == 90;
}

void launch(int d, bool fp8, Step step, int kv_stages, const Maps& maps, const Params& p, int heads,
            cudaStream_t stream) {
  if (kv_stages == 3) return launch_variant<Cfg<128, false, Step::IntraWg, 3>>(maps, p, heads, stream);
  if (fp8) return launch_step<128, true>(step, maps, p, heads, stream);
  if (d == 64) return launch_step<64, false>(step, maps, p, heads, stream);
  return launch_step<128, false>(step, maps, p, heads, stream);
}

}  // namespace fa3::detail
