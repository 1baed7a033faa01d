// FlashAttention-2 backward (Dao, 2023, Algorithm 2) on tensor cores, bf16 in, fp32
// accumulators. Every one of the five products is an mma.sync.m16n8k16.
//
//   preprocess_kernel  D_i = rowsum(dO_i * O_i)
//   dk_dv_kernel       one block per (K_j/V_j tile, KV head). Warp w owns 16 keys; its
//                      dK, dV rows stay in registers while the block walks every Q_i tile
//                      of every query head of the GQA group (so dK, dV are summed over the
//                      group on chip: no atomics, no copies). Per step, for its 16 keys:
//                        S^T  = K_w Q_i^T,   P^T  = exp2(S^T scale log2e - L log2e)
//                        dP^T = V_w dO_i^T,  dS^T = P^T * (dP^T - D)
//                        dV_w += P^T dO_i,   dK_w += dS^T Q_i
//                      Computing the transposes is the point: P^T and dS^T come out of the
//                      mma as C fragments whose rows are this warp's keys, and the C->A
//                      identity of the forward (fa2_tc.cuh) makes them the A operands of
//                      dV and dK without a trip through shared memory.
//                      Atomic path: dS^T goes to shared memory once, and the block adds
//                      dQ_i += scale dS K_j into an fp32 workspace (16-byte vector atomics).
//   dq_kernel          deterministic path: one block per (Q_i tile, query head), warps own
//                      16 query rows; S, P, dP, dS recomputed, dQ_i += dS K_j in registers
//                      (dS again reused from the accumulators as A).
//   convert_kernel     atomic path: dQ = bf16(workspace).
#include <climits>
#include <stdexcept>
#include <string>

#include "attention_rows.cuh"
#include "config_list.h"
#include "cuda_check.h"
#include "fa2_tc.cuh"
#include "fa2_tc.h"
#include "fa2_tc_arguments.h"
#include "numeric.h"

namespace fa2tc {

namespace {

using namespace dev;
using bf16_t = __nv_bfloat16;

struct BwdParams {
  const bf16_t *Q, *K, *V, *O, *dO;
  const float* L;
  bf16_t *dQ, *dK, *dV;
  float *D, *dQ_acc;
  float *dK_acc, *dV_acc;                 // backward_accumulate only
  int H, H_kv, group, N_q, N_kv, offset;  // offset = N_kv - N_q (causal diagonal)
  bool causal;
  float scale, scale_log2e;
};

// ---- D = rowsum(dO * O) --------------------------------------------------------------------
// d / 8 lanes per row, 16 bytes of O and of dO per lane, reduced by shuffles.
template <int d>
__global__ void preprocess_kernel(const bf16_t* O, const bf16_t* dO, float* D, std::int64_t rows) {
  constexpr int kLanes = d / 8;
  const std::int64_t idx = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const std::int64_t row = idx / kLanes;
  const int part = static_cast<int>(idx % kLanes);
  float sum = 0.0f;
  if (row < rows) {
    const uint4 o = *reinterpret_cast<const uint4*>(O + row * d + 8 * part);
    const uint4 g = *reinterpret_cast<const uint4*>(dO + row * d + 8 * part);
    const __nv_bfloat162* o2 = reinterpret_cast<const __nv_bfloat162*>(&o);
    const __nv_bfloat162* g2 = reinterpret_cast<const __nv_bfloat162*>(&g);
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const float2 of = __bfloat1622float2(o2[e]), gf = __bfloat1622float2(g2[e]);
      sum = fmaf(of.x, gf.x, fmaf(of.y, gf.y, sum));
    }
  }
#pragma unroll
  for (int o = kLanes / 2; o > 0; o /= 2) sum += __shfl_xor_sync(0xffffffff, sum, o);
  if (row < rows && part == 0) D[row] = sum;
}

// dQ = bf16(dQ_acc), 8 elements per thread (the scale was applied with the atomics).
__global__ void convert_kernel(const float* acc, bf16_t* out, std::int64_t n8) {
  const std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n8) return;
  const float4 a = reinterpret_cast<const float4*>(acc)[2 * i], b = reinterpret_cast<const float4*>(acc)[2 * i + 1];
  uint4 v;
  v.x = tc::pack_bf16x2(a.x, a.y), v.y = tc::pack_bf16x2(a.z, a.w);
  v.z = tc::pack_bf16x2(b.x, b.y), v.w = tc::pack_bf16x2(b.z, b.w);
  reinterpret_cast<uint4*>(out)[i] = v;
}

// ---- dK, dV (and, atomic path, dQ) ----------------------------------------------------------
//   kWarps x 16 keys = B_c per block; B_r query rows per step; kKVInRegs: K_w and V_w as A
//   fragments in registers (else ldmatrix each step: at d = 128 the 128 registers of dK_w,
//   dV_w leave no room for them); kQStages: buffers of Q_i, dO_i, L_i, D_i (2: the next step's
//   load overlaps this step's work; 1: it waits for it, and the block fits in 99 KiB at d = 128).
template <int d_, int kWarps_, int B_r_, bool kKVInRegs_, int kMinBlocks_, int kQStages_ = 2>
struct BwdConfig {
  static constexpr int d = d_, kWarps = kWarps_, B_r = B_r_, kMinBlocks = kMinBlocks_, kQStages = kQStages_;
  static constexpr bool kKVInRegs = kKVInRegs_;
  static constexpr int B_c = 16 * kWarps, kThreads = 32 * kWarps;
  static constexpr int kRowBytes = 2 * d, kSRowBytes = 2 * B_r;  // rows of Q/K/V/dO, of dS^T
  // dQ_i = dS K_j: warps tile [B_r x d] as kDqRows groups of 16 rows x kDqCols column slices.
  static constexpr int kDqRows = B_r / 16, kDqCols = kWarps / kDqRows, kDqWidth = d / kDqCols;
  static constexpr int kKBytes = B_c * kRowBytes, kQBytes = B_r * kRowBytes;
  static constexpr int kOffK = 0, kOffV = kKBytes, kOffQ = 2 * kKBytes, kOffdO = kOffQ + kQStages * kQBytes;
  static constexpr int kOffdS = kOffdO + kQStages * kQBytes, kOffL = kOffdS + B_c * kSRowBytes;
  static constexpr int kOffD = kOffL + kQStages * 4 * B_r;
  static constexpr int kSmemBytes = kOffD + kQStages * 4 * B_r;
  static_assert(kQStages == 1 || kQStages == 2, "one or two buffers of Q_i, dO_i, L_i, D_i");
  static_assert(B_r == 64 || B_r == 128, "dS^T rows must be 64 or 128 bf16 for the 128-byte swizzle");
  static_assert(kWarps % kDqRows == 0 && kDqWidth % 16 == 0, "the warps tile dQ_i exactly");
};

template <class C, bool kMasked, bool kAtomicDq>
__device__ __forceinline__ void dk_dv_step(float (&dK)[C::d / 8][4], float (&dV)[C::d / 8][4],
                                           const std::uint32_t (&k_frag)[C::d / 16][4],
                                           const std::uint32_t (&v_frag)[C::d / 16][4], std::uint32_t k_lane,
                                           std::uint32_t v_lane, unsigned char* smem_raw, int stage, int key0, int i0,
                                           float* dQ_acc, const BwdParams& p) {
  constexpr int d = C::d, B_r = C::B_r, RB = C::kRowBytes, SRB = C::kSRowBytes;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const std::uint32_t smem = tc::smem_addr(smem_raw);
  const std::uint32_t Q_s = smem + C::kOffQ + stage * C::kQBytes, dO_s = smem + C::kOffdO + stage * C::kQBytes;
  const float* L_s = reinterpret_cast<const float*>(smem_raw + C::kOffL) + stage * B_r;
  const float* D_s = reinterpret_cast<const float*>(smem_raw + C::kOffD) + stage * B_r;

  // S^T = K_w Q_i^T and dP^T = V_w dO_i^T, [16 keys x B_r queries] each.
  float st[B_r / 8][4], dpt[B_r / 8][4];
#pragma unroll
  for (int n = 0; n < B_r / 8; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) st[n][e] = dpt[n][e] = 0.0f;
  const std::uint32_t q_lane = lane_base(Q_s, b_lane(lane).row, b_lane(lane).chunk, RB);
  const std::uint32_t do_lane = lane_base(dO_s, b_lane(lane).row, b_lane(lane).chunk, RB);
  // One product at a time: each loop streams one operand pair, which keeps the
  // fragments the compiler prefetches (and so the registers) in check.
#pragma unroll
  for (int kk = 0; kk < d / 16; ++kk) {
    std::uint32_t ka[4];
    if constexpr (C::kKVInRegs) {
#pragma unroll
      for (int e = 0; e < 4; ++e) ka[e] = k_frag[kk][e];
    } else {
      tc::ldmatrix_x4(ka, frag_addr(k_lane, 0, 2 * kk, RB));
    }
#pragma unroll
    for (int np = 0; np < B_r / 16; ++np) {
      std::uint32_t b[4];
      tc::ldmatrix_x4(b, frag_addr(q_lane, 16 * np, 2 * kk, RB));
      const std::uint32_t b_lo[2] = {b[0], b[1]}, b_hi[2] = {b[2], b[3]};
      tc::mma_m16n8k16_bf16(st[2 * np], ka, b_lo);
      tc::mma_m16n8k16_bf16(st[2 * np + 1], ka, b_hi);
    }
  }
#pragma unroll
  for (int kk = 0; kk < d / 16; ++kk) {
    std::uint32_t va[4];
    if constexpr (C::kKVInRegs) {
#pragma unroll
      for (int e = 0; e < 4; ++e) va[e] = v_frag[kk][e];
    } else {
      tc::ldmatrix_x4(va, frag_addr(v_lane, 0, 2 * kk, RB));
    }
#pragma unroll
    for (int np = 0; np < B_r / 16; ++np) {
      std::uint32_t c[4];
      tc::ldmatrix_x4(c, frag_addr(do_lane, 16 * np, 2 * kk, RB));
      const std::uint32_t c_lo[2] = {c[0], c[1]}, c_hi[2] = {c[2], c[3]};
      tc::mma_m16n8k16_bf16(dpt[2 * np], va, c_lo);
      tc::mma_m16n8k16_bf16(dpt[2 * np + 1], va, c_hi);
    }
  }

  // P^T = exp(scale S^T - L) (L is the query's: a column here), dS^T = P^T (dP^T - D).
  // P needs no max and no sum: L already is the row's log-normaliser.
#pragma unroll
  for (int n = 0; n < B_r / 8; ++n) {
    const float2 Lq = *reinterpret_cast<const float2*>(L_s + 8 * n + 2 * t);
    const float2 Dq = *reinterpret_cast<const float2*>(D_s + 8 * n + 2 * t);
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const float L = (e % 2 ? Lq.y : Lq.x) * ladder::kLog2e, Dv = e % 2 ? Dq.y : Dq.x;
      float pv = attn::recomputed_p(st[n][e], p.scale_log2e, L);
      if constexpr (kMasked) {
        const int key = key0 + g + 8 * (e / 2), query = i0 + 8 * n + 2 * t + e % 2;
        if (key >= p.N_kv || query >= p.N_q || (p.causal && key > query + p.offset)) pv = 0.0f;
      }
      st[n][e] = pv;
      dpt[n][e] = attn::score_gradient(pv, dpt[n][e], Dv);
    }
  }

  // dV_w += P^T dO_i and dK_w += dS^T Q_i: A from the registers above (bf16), B by
  // ldmatrix.trans from dO_i and Q_i ([queries][d] read as [k][n]).
  std::uint32_t p_frag[B_r / 16][4], ds_frag[B_r / 16][4];
#pragma unroll
  for (int kq = 0; kq < B_r / 16; ++kq) {
    c_to_a(p_frag[kq], st[2 * kq], st[2 * kq + 1]);
    c_to_a(ds_frag[kq], dpt[2 * kq], dpt[2 * kq + 1]);
  }
  if constexpr (kAtomicDq) {  // dS^T to shared memory now, for dQ after the barrier below
    unsigned char* dS_s = smem_raw + C::kOffdS;
#pragma unroll
    for (int kq = 0; kq < B_r / 16; ++kq)
#pragma unroll
      for (int e = 0; e < 4; ++e) {  // register e of the A fragment: row g + 8 (e % 2), column 2t + 8 (e / 2)
        const int key = 16 * warp + g + 8 * (e % 2), query = 16 * kq + 2 * t + 8 * (e / 2);
        *reinterpret_cast<std::uint32_t*>(dS_s + 2 * tc::swizzle_128b(key, query, B_r)) = ds_frag[kq][e];
      }
  }
  const std::uint32_t dot_lane = lane_base(dO_s, bt_lane(lane).row, bt_lane(lane).chunk, RB);
  const std::uint32_t qt_lane = lane_base(Q_s, bt_lane(lane).row, bt_lane(lane).chunk, RB);
#pragma unroll
  for (int kq = 0; kq < B_r / 16; ++kq)
#pragma unroll
    for (int dp = 0; dp < d / 16; ++dp) {
      std::uint32_t b[4];
      tc::ldmatrix_x4_trans(b, frag_addr(dot_lane, 16 * kq, 2 * dp, RB));
      const std::uint32_t b_lo[2] = {b[0], b[1]}, b_hi[2] = {b[2], b[3]};
      tc::mma_m16n8k16_bf16(dV[2 * dp], p_frag[kq], b_lo);
      tc::mma_m16n8k16_bf16(dV[2 * dp + 1], p_frag[kq], b_hi);
    }
#pragma unroll
  for (int kq = 0; kq < B_r / 16; ++kq)
#pragma unroll
    for (int dp = 0; dp < d / 16; ++dp) {
      std::uint32_t c[4];
      tc::ldmatrix_x4_trans(c, frag_addr(qt_lane, 16 * kq, 2 * dp, RB));
      const std::uint32_t c_lo[2] = {c[0], c[1]}, c_hi[2] = {c[2], c[3]};
      tc::mma_m16n8k16_bf16(dK[2 * dp], ds_frag[kq], c_lo);
      tc::mma_m16n8k16_bf16(dK[2 * dp + 1], ds_frag[kq], c_hi);
    }

  if constexpr (kAtomicDq) {  // dQ_i += scale dS K_j, the block's warps tiling dQ_i
    __syncthreads();
    const int wm = warp % C::kDqRows, wn = warp / C::kDqRows;
    const std::uint32_t ds_lane =
        lane_base(smem + C::kOffdS, at_lane(lane).row, at_lane(lane).chunk + 2 * wm, SRB);  // dS rows 16 wm ..
    const std::uint32_t kt_lane =
        lane_base(smem + C::kOffK, bt_lane(lane).row, bt_lane(lane).chunk + wn * C::kDqWidth / 8, RB);
    float dq[C::kDqWidth / 8][4];
#pragma unroll
    for (int n = 0; n < C::kDqWidth / 8; ++n) dq[n][0] = dq[n][1] = dq[n][2] = dq[n][3] = 0.0f;
#pragma unroll
    for (int kq = 0; kq < C::B_c / 16; ++kq) {
      std::uint32_t a[4];
      tc::ldmatrix_x4_trans(a, frag_addr(ds_lane, 16 * kq, 0, SRB));
#pragma unroll
      for (int dp = 0; dp < C::kDqWidth / 16; ++dp) {
        std::uint32_t b[4];
        tc::ldmatrix_x4_trans(b, frag_addr(kt_lane, 16 * kq, 2 * dp, RB));
        const std::uint32_t b_lo[2] = {b[0], b[1]}, b_hi[2] = {b[2], b[3]};
        tc::mma_m16n8k16_bf16(dq[2 * dp], a, b_lo);
        tc::mma_m16n8k16_bf16(dq[2 * dp + 1], a, b_hi);
      }
    }
    const int row = i0 + 16 * wm;
    float* dst = dQ_acc + std::int64_t(row) * d + wn * C::kDqWidth;
#pragma unroll
    for (int n = 0; n < C::kDqWidth / 8; ++n) atomic_add_c(dst + 8 * n, d, g, t, dq[n], p.scale, p.N_q - row);
  }
}

// kAccumulate: dK, dV are added in fp32 to p.dK_acc, p.dV_acc (and dQ, atomic path, to the
// caller's p.dQ_acc) instead of written in bf16: one partial of a sum the caller rounds once.
template <class C, bool kAtomicDq, bool kAccumulate = false>
__global__ void __launch_bounds__(C::kThreads, C::kMinBlocks) dk_dv_kernel(const __grid_constant__ BwdParams p) {
  constexpr int d = C::d, B_r = C::B_r, B_c = C::B_c, RB = C::kRowBytes;
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  const std::uint32_t smem = tc::smem_addr(smem_raw);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;

  const int j0 = blockIdx.x * B_c;
  const int kv_head = blockIdx.y, b = kv_head / p.H_kv, h_kv = kv_head % p.H_kv;
  const std::int64_t kv_off = std::int64_t(kv_head) * p.N_kv * d;
  // Causal: query i sees key j when j <= i + offset, so this tile's first key is seen
  // from query j0 - offset on; Q tiles that end before it are skipped.
  const int q_first = p.causal ? max(0, j0 - p.offset) : 0;
  const int i_first = q_first / B_r, T_r = ladder::ceil_div(p.N_q, B_r);
  const int n_i = q_first < p.N_q ? T_r - i_first : 0;
  const int steps = p.group * n_i;  // every Q tile of every query head of the group
  // Steps that need the mask: the key tile's tail, the Q tile's tail, the causal diagonal.
  auto masked = [&](int i0) {
    return j0 + B_c > p.N_kv || i0 + B_r > p.N_q || (p.causal && j0 + B_c - 1 > i0 + p.offset);
  };
  auto q_head_of = [&](int s) { return b * p.H + h_kv * p.group + s / max(n_i, 1); };
  auto i0_of = [&](int s) { return (i_first + s % max(n_i, 1)) * B_r; };

  auto load_step = [&](int s) {
    if (s < steps) {
      const int qh = q_head_of(s), i0 = i0_of(s), stage = s % C::kQStages;
      const std::int64_t q_off = std::int64_t(qh) * p.N_q;
      load_tile<B_r, d, C::kThreads>(smem + C::kOffQ + stage * C::kQBytes, p.Q + q_off * d, i0, p.N_q);
      load_tile<B_r, d, C::kThreads>(smem + C::kOffdO + stage * C::kQBytes, p.dO + q_off * d, i0, p.N_q);
      float* L_s = reinterpret_cast<float*>(smem_raw + C::kOffL) + stage * B_r;
      float* D_s = reinterpret_cast<float*>(smem_raw + C::kOffD) + stage * B_r;
      load_row_values<B_r>(L_s, p.L + q_off, i0, p.N_q);
      load_row_values<B_r>(D_s, p.D + q_off, i0, p.N_q);
    }
    tc::cp_async_commit();
  };

  load_tile<B_c, d, C::kThreads>(smem + C::kOffK, p.K + kv_off, j0, p.N_kv);
  load_tile<B_c, d, C::kThreads>(smem + C::kOffV, p.V + kv_off, j0, p.N_kv);
  load_step(0);

  // This warp's 16 keys as A fragments (row-major [keys][d]).
  const std::uint32_t k_lane = lane_base(smem + C::kOffK + 16 * warp * RB, a_lane(lane).row, a_lane(lane).chunk, RB);
  const std::uint32_t v_lane = lane_base(smem + C::kOffV + 16 * warp * RB, a_lane(lane).row, a_lane(lane).chunk, RB);
  std::uint32_t k_frag[d / 16][4], v_frag[d / 16][4];
  if constexpr (C::kKVInRegs) {
    tc::cp_async_wait<0>();
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < d / 16; ++kk) {
      tc::ldmatrix_x4(k_frag[kk], frag_addr(k_lane, 0, 2 * kk, RB));
      tc::ldmatrix_x4(v_frag[kk], frag_addr(v_lane, 0, 2 * kk, RB));
    }
  }

  float dK[d / 8][4], dV[d / 8][4];
#pragma unroll
  for (int n = 0; n < d / 8; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) dK[n][e] = dV[n][e] = 0.0f;

  for (int s = 0; s < steps; ++s) {
    tc::cp_async_wait<0>();                            // this step's Q_i, dO_i, L_i, D_i (this thread's copies) ...
    __syncthreads();                                   // ... everyone's; and the previous step is done everywhere
    if constexpr (C::kQStages == 2) load_step(s + 1);  // into the other buffers, while this step computes
    const int i0 = i0_of(s), stage = s % C::kQStages;
    float* dQ_acc = kAtomicDq ? p.dQ_acc + std::int64_t(q_head_of(s)) * p.N_q * d : nullptr;
    if (masked(i0))
      dk_dv_step<C, true, kAtomicDq>(dK, dV, k_frag, v_frag, k_lane, v_lane, smem_raw, stage, j0 + 16 * warp, i0,
                                     dQ_acc, p);
    else
      dk_dv_step<C, false, kAtomicDq>(dK, dV, k_frag, v_frag, k_lane, v_lane, smem_raw, stage, j0 + 16 * warp, i0,
                                      dQ_acc, p);
    if constexpr (C::kQStages == 1) {  // one buffer: refilled once every warp is done with it
      __syncthreads();
      load_step(s + 1);
    }
  }
  tc::cp_async_wait<0>();
  if constexpr (kAccumulate) {
    // dK_acc += scale dK_w, dV_acc += dV_w straight from the C fragments: this block is the
    // only one that owns these keys (GQA groups are summed on chip), so no atomics. Each quad
    // adds 32 contiguous bytes of a row.
#pragma unroll
    for (int n = 0; n < d / 8; ++n)
#pragma unroll
      for (int hh = 0; hh < 2; ++hh) {
        const int key = j0 + 16 * warp + g + 8 * hh;
        if (key >= p.N_kv) continue;
        const std::int64_t e = kv_off + std::int64_t(key) * d + 8 * n + 2 * t;
        float2* k2 = reinterpret_cast<float2*>(p.dK_acc + e);
        float2* v2 = reinterpret_cast<float2*>(p.dV_acc + e);
        const float2 k = *k2, v = *v2;
        *k2 = make_float2(k.x + p.scale * dK[n][2 * hh], k.y + p.scale * dK[n][2 * hh + 1]);
        *v2 = make_float2(v.x + dV[n][2 * hh], v.y + dV[n][2 * hh + 1]);
      }
    return;
  }
  __syncthreads();  // K_j, V_j buffers are reused below for the output

  // dK = scale dK_w, dV = dV_w: through this warp's rows of the K_j / V_j buffers, then
  // 16-byte coalesced stores. Rows past N_kv are not written.
  unsigned char* out_s[2] = {smem_raw + C::kOffK + 16 * warp * RB, smem_raw + C::kOffV + 16 * warp * RB};
#pragma unroll
  for (int n = 0; n < d / 8; ++n)
#pragma unroll
    for (int hh = 0; hh < 2; ++hh) {
      const int r = g + 8 * hh, col = 8 * n + 2 * t;
      *reinterpret_cast<std::uint32_t*>(out_s[0] + 2 * tc::swizzle_128b(r, col, d)) =
          tc::pack_bf16x2(p.scale * dK[n][2 * hh], p.scale * dK[n][2 * hh + 1]);
      *reinterpret_cast<std::uint32_t*>(out_s[1] + 2 * tc::swizzle_128b(r, col, d)) =
          tc::pack_bf16x2(dV[n][2 * hh], dV[n][2 * hh + 1]);
    }
  __syncwarp();
  constexpr int kChunks = d / 8;
  const int key0 = j0 + 16 * warp;
#pragma unroll
  for (int u = 0; u < 16 * kChunks / 32; ++u) {
    const int idx = lane + 32 * u, r = idx / kChunks, c = idx % kChunks;
    if (key0 + r < p.N_kv) {
      const std::int64_t e = kv_off + std::int64_t(key0 + r) * d + 8 * c;
      *reinterpret_cast<uint4*>(p.dK + e) =
          *reinterpret_cast<const uint4*>(out_s[0] + 2 * tc::swizzle_128b(r, 8 * c, d));
      *reinterpret_cast<uint4*>(p.dV + e) =
          *reinterpret_cast<const uint4*>(out_s[1] + 2 * tc::swizzle_128b(r, 8 * c, d));
    }
  }
}

// ---- deterministic dQ -------------------------------------------------------------------------
// kWarps x 16 query rows per block, B_c keys per step (double-buffered).
template <int d_, int kWarps_, int B_c_, int kMinBlocks_>
struct DqConfig {
  static constexpr int d = d_, kWarps = kWarps_, B_c = B_c_, kMinBlocks = kMinBlocks_;
  static constexpr int B_r = 16 * kWarps, kThreads = 32 * kWarps, kRowBytes = 2 * d;
  static constexpr int kQBytes = B_r * kRowBytes, kKVBytes = B_c * kRowBytes;
  static constexpr int kOffQ = 0, kOffdO = kQBytes, kOffK = 2 * kQBytes, kOffV = kOffK + 2 * kKVBytes;
  static constexpr int kSmemBytes = kOffV + 2 * kKVBytes;
};

template <class C, bool kMasked>
__device__ __forceinline__ void dq_step(float (&dq)[C::d / 8][4], const std::uint32_t (&q_frag)[C::d / 16][4],
                                        const std::uint32_t (&do_frag)[C::d / 16][4], const float (&L2)[2],
                                        const float (&Drow)[2], std::uint32_t K_s, std::uint32_t V_s, int row0, int j0,
                                        const BwdParams& p) {
  constexpr int d = C::d, B_c = C::B_c, RB = C::kRowBytes;
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  float s[B_c / 8][4], dp[B_c / 8][4];
#pragma unroll
  for (int n = 0; n < B_c / 8; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) s[n][e] = dp[n][e] = 0.0f;
  // S = Q_i K_j^T, dP = dO_i V_j^T: B fragments from [keys][d] tiles, no transpose.
  const std::uint32_t k_lane = lane_base(K_s, b_lane(lane).row, b_lane(lane).chunk, RB);
  const std::uint32_t v_lane = lane_base(V_s, b_lane(lane).row, b_lane(lane).chunk, RB);
#pragma unroll
  for (int kk = 0; kk < d / 16; ++kk)
#pragma unroll
    for (int np = 0; np < B_c / 16; ++np) {
      std::uint32_t b[4], c[4];
      tc::ldmatrix_x4(b, frag_addr(k_lane, 16 * np, 2 * kk, RB));
      tc::ldmatrix_x4(c, frag_addr(v_lane, 16 * np, 2 * kk, RB));
      const std::uint32_t b_lo[2] = {b[0], b[1]}, b_hi[2] = {b[2], b[3]};
      const std::uint32_t c_lo[2] = {c[0], c[1]}, c_hi[2] = {c[2], c[3]};
      tc::mma_m16n8k16_bf16(s[2 * np], q_frag[kk], b_lo);
      tc::mma_m16n8k16_bf16(s[2 * np + 1], q_frag[kk], b_hi);
      tc::mma_m16n8k16_bf16(dp[2 * np], do_frag[kk], c_lo);
      tc::mma_m16n8k16_bf16(dp[2 * np + 1], do_frag[kk], c_hi);
    }
#pragma unroll
  for (int n = 0; n < B_c / 8; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      float pv = attn::recomputed_p(s[n][e], p.scale_log2e, L2[e / 2]);
      if constexpr (kMasked) {
        const int row = row0 + g + 8 * (e / 2), col = j0 + 8 * n + 2 * t + e % 2;
        if (col >= p.N_kv || row >= p.N_q || (p.causal && col > row + p.offset)) pv = 0.0f;
      }
      dp[n][e] = attn::score_gradient(pv, dp[n][e], Drow[e / 2]);
    }
  // dQ_i += dS K_j: dS from the registers (bf16), K_j read as [k = keys][n = d], .trans.
  const std::uint32_t kt_lane = lane_base(K_s, bt_lane(lane).row, bt_lane(lane).chunk, RB);
#pragma unroll
  for (int kq = 0; kq < B_c / 16; ++kq) {
    std::uint32_t a[4];
    c_to_a(a, dp[2 * kq], dp[2 * kq + 1]);
#pragma unroll
    for (int dd = 0; dd < d / 16; ++dd) {
      std::uint32_t b[4];
      tc::ldmatrix_x4_trans(b, frag_addr(kt_lane, 16 * kq, 2 * dd, RB));
      const std::uint32_t b_lo[2] = {b[0], b[1]}, b_hi[2] = {b[2], b[3]};
      tc::mma_m16n8k16_bf16(dq[2 * dd], a, b_lo);
      tc::mma_m16n8k16_bf16(dq[2 * dd + 1], a, b_hi);
    }
  }
}

template <class C>
__global__ void __launch_bounds__(C::kThreads, C::kMinBlocks) dq_kernel(const __grid_constant__ BwdParams p) {
  constexpr int d = C::d, B_r = C::B_r, B_c = C::B_c, RB = C::kRowBytes;
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  const std::uint32_t smem = tc::smem_addr(smem_raw);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int T_r = ladder::ceil_div(p.N_q, B_r);
  const int i0 = (p.causal ? T_r - 1 - static_cast<int>(blockIdx.x) : static_cast<int>(blockIdx.x)) * B_r;
  const int head = blockIdx.y, b = head / p.H, h = head % p.H;
  const std::int64_t q_off = std::int64_t(head) * p.N_q, kv_off = std::int64_t(b * p.H_kv + h / p.group) * p.N_kv;

  const int kv_end = p.causal ? max(0, min(p.N_kv, i0 + B_r + p.offset)) : p.N_kv;
  const int T_c = ladder::ceil_div(kv_end, B_c);
  const int n_full = (p.causal ? max(0, min(p.N_kv, i0 + p.offset + 1)) : p.N_kv) / B_c;

  load_tile<B_r, d, C::kThreads>(smem + C::kOffQ, p.Q + q_off * d, i0, p.N_q);
  load_tile<B_r, d, C::kThreads>(smem + C::kOffdO, p.dO + q_off * d, i0, p.N_q);
  auto load_kv = [&](int it) {
    if (it < T_c) {
      const int j0 = (T_c - 1 - it) * B_c, stage = it % 2;
      load_tile<B_c, d, C::kThreads>(smem + C::kOffK + stage * C::kKVBytes, p.K + (kv_off + j0) * d, 0, p.N_kv - j0);
      load_tile<B_c, d, C::kThreads>(smem + C::kOffV + stage * C::kKVBytes, p.V + (kv_off + j0) * d, 0, p.N_kv - j0);
    }
    tc::cp_async_commit();
  };
  load_kv(0);

  // This lane's two rows: L in base 2, and D. Rows past N_q: L = D = 0 (their dQ is not stored).
  const int row0 = i0 + 16 * warp;
  float L2[2], Drow[2];
#pragma unroll
  for (int hh = 0; hh < 2; ++hh) {
    const int row = row0 + g + 8 * hh;
    L2[hh] = row < p.N_q ? p.L[q_off + row] * ladder::kLog2e : 0.0f;
    Drow[hh] = row < p.N_q ? p.D[q_off + row] : 0.0f;
  }
  tc::cp_async_wait<0>();
  __syncthreads();
  std::uint32_t q_frag[d / 16][4], do_frag[d / 16][4];
  const std::uint32_t q_lane = lane_base(smem + C::kOffQ + 16 * warp * RB, a_lane(lane).row, a_lane(lane).chunk, RB);
  const std::uint32_t do_lane = lane_base(smem + C::kOffdO + 16 * warp * RB, a_lane(lane).row, a_lane(lane).chunk, RB);
#pragma unroll
  for (int kk = 0; kk < d / 16; ++kk) {
    tc::ldmatrix_x4(q_frag[kk], frag_addr(q_lane, 0, 2 * kk, RB));
    tc::ldmatrix_x4(do_frag[kk], frag_addr(do_lane, 0, 2 * kk, RB));
  }

  float dq[d / 8][4];
#pragma unroll
  for (int n = 0; n < d / 8; ++n) dq[n][0] = dq[n][1] = dq[n][2] = dq[n][3] = 0.0f;
  for (int it = 0; it < T_c; ++it) {
    const int j = T_c - 1 - it, stage = it % 2;
    if (it > 0) {
      tc::cp_async_wait<0>();
      __syncthreads();
    }
    load_kv(it + 1);
    const std::uint32_t K_s = smem + C::kOffK + stage * C::kKVBytes, V_s = smem + C::kOffV + stage * C::kKVBytes;
    if (j >= n_full)
      dq_step<C, true>(dq, q_frag, do_frag, L2, Drow, K_s, V_s, row0, j * B_c, p);
    else
      dq_step<C, false>(dq, q_frag, do_frag, L2, Drow, K_s, V_s, row0, j * B_c, p);
  }
  tc::cp_async_wait<0>();

  // dQ = scale dQ_i through this warp's rows of the Q_i buffer, 16-byte stores.
  unsigned char* out_s = smem_raw + C::kOffQ + 16 * warp * RB;
  __syncwarp();
#pragma unroll
  for (int n = 0; n < d / 8; ++n)
#pragma unroll
    for (int hh = 0; hh < 2; ++hh)
      *reinterpret_cast<std::uint32_t*>(out_s + 2 * tc::swizzle_128b(g + 8 * hh, 8 * n + 2 * t, d)) =
          tc::pack_bf16x2(p.scale * dq[n][2 * hh], p.scale * dq[n][2 * hh + 1]);
  __syncwarp();
  constexpr int kChunks = d / 8;
#pragma unroll
  for (int u = 0; u < 16 * kChunks / 32; ++u) {
    const int idx = lane + 32 * u, r = idx / kChunks, c = idx % kChunks;
    if (row0 + r < p.N_q)
      *reinterpret_cast<uint4*>(p.dQ + (q_off + row0 + r) * d + 8 * c) =
          *reinterpret_cast<const uint4*>(out_s + 2 * tc::swizzle_128b(r, 8 * c, d));
  }
}

// ---- the compiled configurations --------------------------------------------------------------
//                       d  warps B_r KV regs minBlocks
using B128_0 = BwdConfig<128, 8, 64, false, 1>;
using B128_1 = BwdConfig<128, 4, 64, false, 2>;
using B128_2 = BwdConfig<128, 4, 64, false, 2, 1>;  // one Q_i/dO_i buffer: 72.5 KiB, for 99 KiB GPUs
using B64_0 = BwdConfig<64, 8, 64, true, 1>;
using B64_1 = BwdConfig<64, 4, 64, true, 2>;
using B64_2 = BwdConfig<64, 8, 64, false, 1>;
using Dq128 = DqConfig<128, 4, 64, 2>;
using Dq64 = DqConfig<64, 4, 64, 2>;

using Configs128 = ConfigList<B128_0, B128_1, B128_2>;
using Configs64 = ConfigList<B64_0, B64_1, B64_2>;

template <class C>
TileConfig describe(C = {}) {
  return {"w" + std::to_string(C::kWarps) + "_c" + std::to_string(C::B_c) + "_r" + std::to_string(C::B_r) +
              (C::kKVInRegs ? "_kvreg" : "_kvsmem") + (C::kQStages == 1 ? "_q1" : ""),
          C::B_r, C::B_c, C::kWarps, static_cast<std::size_t>(C::kSmemBytes)};
}

template <class C, class Dq>
void launch(const ladder::AttentionShape& s, const BwdParams& p, DqPath path, cudaStream_t stream) {
  constexpr int d = C::d;
  const std::int64_t rows = static_cast<std::int64_t>(s.rows());
  if (path == DqPath::Atomic) CUDA_CHECK(cudaMemsetAsync(p.dQ_acc, 0, sizeof(float) * rows * d, stream));
  constexpr int kThreads = 256;
  const std::int64_t pre_threads = rows * (d / 8);
  preprocess_kernel<d>
      <<<static_cast<unsigned>((pre_threads + kThreads - 1) / kThreads), kThreads, 0, stream>>>(p.O, p.dO, p.D, rows);
  CUDA_CHECK_LAUNCH();

  const dim3 kv_grid(static_cast<unsigned>(ladder::ceil_div(s.nkv(), C::B_c)), static_cast<unsigned>(s.kv_heads()));
  if (path == DqPath::Atomic) {
    ladder::allow_dynamic_smem(dk_dv_kernel<C, true>, C::kSmemBytes,
                               "fa2tc::backward dk_dv (" + describe<C>().name + ")", true);
    dk_dv_kernel<C, true><<<kv_grid, C::kThreads, C::kSmemBytes, stream>>>(p);
    CUDA_CHECK_LAUNCH();
    const std::int64_t n8 = rows * d / 8;
    convert_kernel<<<static_cast<unsigned>((n8 + kThreads - 1) / kThreads), kThreads, 0, stream>>>(p.dQ_acc, p.dQ, n8);
    CUDA_CHECK_LAUNCH();
    return;
  }
  ladder::allow_dynamic_smem(dk_dv_kernel<C, false>, C::kSmemBytes,
                             "fa2tc::backward dk_dv (" + describe<C>().name + ")", true);
  dk_dv_kernel<C, false><<<kv_grid, C::kThreads, C::kSmemBytes, stream>>>(p);
  CUDA_CHECK_LAUNCH();
  ladder::allow_dynamic_smem(dq_kernel<Dq>, Dq::kSmemBytes, "fa2tc::backward dq", true);
  const dim3 q_grid(static_cast<unsigned>(ladder::ceil_div(s.N, Dq::B_r)), static_cast<unsigned>(s.heads()));
  dq_kernel<Dq><<<q_grid, Dq::kThreads, Dq::kSmemBytes, stream>>>(p);
  CUDA_CHECK_LAUNCH();
}

// backward_accumulate: D, then the dK/dV kernel adding into the caller's fp32 sums (dQ by
// its atomics, straight into the caller's dQ_acc: no memset, no conversion).
template <class C>
void launch_accumulate(const ladder::AttentionShape& s, const BwdParams& p, cudaStream_t stream) {
  constexpr int d = C::d, kThreads = 256;
  const std::int64_t rows = static_cast<std::int64_t>(s.rows()), pre_threads = rows * (d / 8);
  preprocess_kernel<d>
      <<<static_cast<unsigned>((pre_threads + kThreads - 1) / kThreads), kThreads, 0, stream>>>(p.O, p.dO, p.D, rows);
  CUDA_CHECK_LAUNCH();
  const dim3 kv_grid(static_cast<unsigned>(ladder::ceil_div(s.nkv(), C::B_c)), static_cast<unsigned>(s.kv_heads()));
  ladder::allow_dynamic_smem(dk_dv_kernel<C, true, true>, C::kSmemBytes,
                             "fa2tc::backward_accumulate (" + describe<C>().name + ")", true);
  dk_dv_kernel<C, true, true><<<kv_grid, C::kThreads, C::kSmemBytes, stream>>>(p);
  CUDA_CHECK_LAUNCH();
}

// What backward() and backward_accumulate() give the kernels alike: the inputs, D's place
// (the workspace's first B*H*N floats), the shape and the scale.
BwdParams params(const ladder::AttentionShape& s, const bf16* Q, const bf16* K, const bf16* V, const bf16* O,
                 const float* L, const bf16* dO, float* workspace) {
  BwdParams p{};
  p.Q = Q, p.K = K, p.V = V, p.O = O, p.dO = dO, p.L = L, p.D = workspace;
  p.H = s.H, p.H_kv = s.hkv(), p.group = s.group(), p.N_q = s.N, p.N_kv = s.nkv(), p.offset = s.nkv() - s.N;
  p.causal = s.causal;
  p.scale = s.scale(), p.scale_log2e = s.scale() * ladder::kLog2e;
  return p;
}

}  // namespace

const char* name(DqPath p) { return p == DqPath::Atomic ? "atomic" : "deterministic"; }

void backward_accumulate(const ladder::AttentionShape& s, const bf16* Q, const bf16* K, const bf16* V, const bf16* O,
                         const float* L, const bf16* dO, float* dQ_acc, float* dK_acc, float* dV_acc, float* workspace,
                         cudaStream_t stream) {
  const std::string who = "fa2tc::backward_accumulate";
  check_shape(s, who);
  ladder::check_pointers(who,
                         {{"Q", Q},
                          {"K", K},
                          {"V", V},
                          {"O", O},
                          {"dO", dO},
                          {"dQ_acc", dQ_acc},
                          {"dK_acc", dK_acc},
                          {"dV_acc", dV_acc},
                          {"workspace", workspace},
                          {"L", L, alignof(float)}},
                         16);
  ladder::check_grid(who, ladder::ceil_div(s.nkv(), 64), s.kv_heads());
  BwdParams p = params(s, Q, K, V, O, L, dO, workspace);
  p.dQ_acc = dQ_acc, p.dK_acc = dK_acc, p.dV_acc = dV_acc;
  const int config = resolve_config(kFits, backward_configs(s.d), 0, s.d, who);
  if (s.d == 128) return Configs128::launch(config, [&](auto c) { launch_accumulate<decltype(c)>(s, p, stream); });
  Configs64::launch(config, [&](auto c) { launch_accumulate<decltype(c)>(s, p, stream); });
}

std::vector<TileConfig> backward_configs(int d) {
  if (d == 128) return Configs128::describe_all([](auto c) { return describe(c); });
  if (d == 64) return Configs64::describe_all([](auto c) { return describe(c); });
  return {};
}

int backward_fit(int d, std::size_t smem_per_block) {
  return ladder::first_that_fits(candidates(backward_configs(d)), smem_per_block).index;
}

std::size_t backward_workspace_floats(const ladder::AttentionShape& s, DqPath path) {
  return ladder::round_up(s.rows(), 4) + (path == DqPath::Atomic ? s.elems() : 0);
}

void backward(const ladder::AttentionShape& s, const bf16* Q, const bf16* K, const bf16* V, const bf16* O,
              const float* L, const bf16* dO, bf16* dQ, bf16* dK, bf16* dV, float* workspace, DqPath path,
              cudaStream_t stream) {
  backward(s, Q, K, V, O, L, dO, dQ, dK, dV, workspace, BackwardOptions{path, kFits}, stream);
}

void backward(const ladder::AttentionShape& s, const bf16* Q, const bf16* K, const bf16* V, const bf16* O,
              const float* L, const bf16* dO, bf16* dQ, bf16* dK, bf16* dV, float* workspace,
              const BackwardOptions& opt, cudaStream_t stream) {
  const std::string who = "fa2tc::backward";
  check_shape(s, who);
  const int config =
      resolve_config(opt.config, backward_configs(s.d), static_cast<int>(backward_configs(s.d).size()), s.d, who);
  ladder::check_pointers(who,
                         {{"Q", Q},
                          {"K", K},
                          {"V", V},
                          {"O", O},
                          {"dO", dO},
                          {"dQ", dQ},
                          {"dK", dK},
                          {"dV", dV},
                          {"workspace", workspace},
                          {"L", L, alignof(float)}},
                         16);
  ladder::check_grid(who + " (dK, dV)", ladder::ceil_div(s.nkv(), 64), s.kv_heads());
  ladder::check_grid(who + " (dQ)", ladder::ceil_div(s.N, 64), s.heads());

  BwdParams p = params(s, Q, K, V, O, L, dO, workspace);
  p.dQ = dQ, p.dK = dK, p.dV = dV;
  p.dQ_acc = opt.path == DqPath::Atomic ? workspace + ladder::round_up(s.rows(), 4) : nullptr;
  if (s.d == 128)
    return Configs128::launch(config, [&](auto c) { launch<decltype(c), Dq128>(s, p, opt.path, stream); });
  Configs64::launch(config, [&](auto c) { launch<decltype(c), Dq64>(s, p, opt.path, stream); });
}

}  // namespace fa2tc
