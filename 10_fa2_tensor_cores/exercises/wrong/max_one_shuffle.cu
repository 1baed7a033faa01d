// A wrong answer to chapter 10's kernel exercise, kept so that the test is known to catch it:
// the row max is reduced over 2 of the 4 lanes of the quad (xor 1 only).
#include <cmath>
#include <cstdint>

#include "../kernel_exercise.h"
#include "attention_rows.cuh"
#include "cuda_check.h"
#include "fa2_tc.cuh"
#include "launch.h"
#include "numeric.h"

namespace wrong_max_one_shuffle {

const bool kImplemented = true;

namespace {

using namespace fa2tc::dev;
using fa2tc_kernel_exercise::B_c;
using fa2tc_kernel_exercise::B_r;
using fa2tc_kernel_exercise::d;
using fa2tc_kernel_exercise::kWarps;
using bf16_t = __nv_bfloat16;
constexpr int kThreads = 32 * kWarps, kRowBytes = 2 * d;

// What this lane keeps of its two rows, g and g + 8 of its warp's 16 (g = lane / 4), for the
// whole loop over the key tiles (in log2 units, as the chapter: m is a max of S scale log2 e).
struct RowState {
  float m[2];  // the row's running max (-inf before its first visible key); the same in the 4 lanes of the quad
  float l[2];  // this lane's share of the row's running sum of P~ = exp2(S scale log2 e - m): the sum over
               // its own columns; the quad's four shares are added once, in finish()
};

// One key tile of the online softmax for this lane's two rows (see mine.cu for the layout).
// The max is taken over lanes t and t ^ 1 only: lanes t = 0, 1 and t = 2, 3 of a quad end up
// with different m for the same row. Their P~ are then exponentials against different bases,
// added into one row of P~ V_j and into one l by finish(): a half's weights are off by the
// factor 2^(difference of the two half-maxima), tens of percent on unit-scale logits, in almost
// every row once a tile holds more than a few keys (a row of one key, N = 1, passes). The test
// catches it at N = 77 already.
__device__ void online_softmax(RowState& st, float (&s)[B_c / 8][4], float (&o)[d / 8][4], float scale_log2e) {
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    // This lane's B_c / 4 scores of the row, then the quad's: lanes 4g .. 4g + 3 hold row g
    // between them, so xor 1 and xor 2 reach the other three (tc::quad_max).
    float mx = -INFINITY;
#pragma unroll
    for (int n = 0; n < B_c / 8; ++n) mx = fmaxf(mx, fmaxf(s[n][2 * h], s[n][2 * h + 1]));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffff, mx, 1));
    const float m_new = fmaxf(st.m[h], mx * scale_log2e);  // scale_log2e > 0: max(x) c = max(x c)
    // A row that has seen only masked keys keeps m = -inf: base 0 keeps exp2 away from
    // -inf - -inf = NaN (then P~ = 0 and alpha = 0).
    const float base = m_new == -INFINITY ? 0.0f : m_new;
    const float alpha = tc::ex2(st.m[h] - base);  // exactly 1 when the max did not move; 0 on the first tile
    float sum = 0.0f;
#pragma unroll
    for (int n = 0; n < B_c / 8; ++n)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        float& x = s[n][2 * h + e];
        x = tc::ex2(fmaf(x, scale_log2e, -base));  // one FFMA and one MUFU.EX2 per score
        sum += x;
      }
    st.l[h] = alpha * st.l[h] + sum;  // this lane's share: every lane of the quad scales by the same alpha
    st.m[h] = m_new;
#pragma unroll
    for (int n = 0; n < d / 8; ++n) o[n][2 * h] *= alpha, o[n][2 * h + 1] *= alpha;
  }
}

struct Params {
  const bf16_t *Q, *K, *V;
  bf16_t* O;
  float* L;
  int H, H_kv, N_q, N_kv, offset;  // offset = N_kv - N_q: causal, query i sees keys j <= i + offset
  bool causal;
  float scale_log2e;  // log2(e) / sqrt(d)
};

// After the last key tile, once: the quad's four shares of l added, O_i / l_i, and
// L_i = m_i ln 2 + ln l_i (natural log). A row that saw no key (l = 0) gets O = 0, L = -inf.
__device__ void finish(const RowState& st, float (&o)[d / 8][4], bf16_t* O, float* L, int row0, int N_q) {
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const float sum = tc::quad_sum(st.l[h]);
    const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;
    const int row = row0 + g + 8 * h;
    if (row >= N_q) continue;  // a padding row of the last row tile
    if (t == 0) L[row] = sum > 0.0f ? st.m[h] * ladder::kLn2 + logf(sum) : -INFINITY;
#pragma unroll
    for (int n = 0; n < d / 8; ++n)
      *reinterpret_cast<std::uint32_t*>(O + std::int64_t(row) * d + 8 * n + 2 * t) =
          tc::pack_bf16x2(o[n][2 * h] * inv, o[n][2 * h + 1] * inv);
  }
}

// FA2 on tensor cores, one thread block per (Q_i tile, query head), kWarps warps of 16 query
// rows each (split-Q). A warp's rows of S_ij, P~_ij and O_i stay in its registers from the
// first key tile to the last; K_j and V_j pass through swizzled shared memory (fa2_tc.cuh).
__global__ void __launch_bounds__(kThreads) fa2_forward_kernel(const __grid_constant__ Params p) {
  __shared__ __align__(1024) unsigned char smem[(B_r + 2 * B_c) * kRowBytes];
  const std::uint32_t Q_s = tc::smem_addr(smem), K_s = Q_s + B_r * kRowBytes, V_s = K_s + B_c * kRowBytes;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int i0 = blockIdx.x * B_r, head = blockIdx.y, b = head / p.H, h = head % p.H;
  const int kv_head = b * p.H_kv + h / (p.H / p.H_kv);  // GQA: H / H_kv query heads per KV head
  const bf16_t* Q = p.Q + std::int64_t(head) * p.N_q * d;
  const bf16_t* K = p.K + std::int64_t(kv_head) * p.N_kv * d;
  const bf16_t* V = p.V + std::int64_t(kv_head) * p.N_kv * d;

  // Q_i -> shared (zeros past N_q) -> this warp's A fragments, in registers for the whole loop.
  load_tile<B_r, d, kThreads>(Q_s, Q, i0, p.N_q);
  tc::cp_async_commit();
  tc::cp_async_wait<0>();
  __syncthreads();
  const int row0 = i0 + 16 * warp;  // this warp's first query
  const std::uint32_t q_lane = lane_base(Q_s + 16 * warp * kRowBytes, a_lane(lane).row, a_lane(lane).chunk, kRowBytes);
  std::uint32_t q[d / 16][4];
#pragma unroll
  for (int kk = 0; kk < d / 16; ++kk) tc::ldmatrix_x4(q[kk], frag_addr(q_lane, 0, 2 * kk, kRowBytes));
  const std::uint32_t k_lane = lane_base(K_s, b_lane(lane).row, b_lane(lane).chunk, kRowBytes);
  const std::uint32_t v_lane = lane_base(V_s, bt_lane(lane).row, bt_lane(lane).chunk, kRowBytes);

  float o[d / 8][4] = {};  // O_i, unnormalised, as C fragments: o[n][2h + e] = O[g + 8h][8n + 2t + e]
  RowState st = {{-INFINITY, -INFINITY}, {0.0f, 0.0f}};
  // The key tiles this row tile sees (causal: up to its last query's last key); tiles below
  // n_full are visible to every row and need no mask (attention_rows.cuh).
  const attn::KeyTiles kt = attn::key_tiles(i0, B_r, B_c, p.N_kv, p.offset, p.causal);
  for (int j = 0; j < kt.T_c; ++j) {
    const int j0 = j * B_c;
    __syncthreads();  // every warp is done with the previous K_j, V_j
    load_tile<B_c, d, kThreads>(K_s, K + std::int64_t(j0) * d, 0, p.N_kv - j0);  // zeros past N_kv
    load_tile<B_c, d, kThreads>(V_s, V + std::int64_t(j0) * d, 0, p.N_kv - j0);
    tc::cp_async_commit();
    tc::cp_async_wait<0>();
    __syncthreads();

    // S_ij = Q_i K_j^T (raw q . k, fp32): per 16-wide slice of d, one ldmatrix.x4 of K_j gives
    // the B fragments of two n8 tiles (16 keys).
    float s[B_c / 8][4] = {};
#pragma unroll
    for (int kk = 0; kk < d / 16; ++kk)
#pragma unroll
      for (int np = 0; np < B_c / 16; ++np) {
        std::uint32_t bk[4];
        tc::ldmatrix_x4(bk, frag_addr(k_lane, 16 * np, 2 * kk, kRowBytes));
        const std::uint32_t b_lo[2] = {bk[0], bk[1]}, b_hi[2] = {bk[2], bk[3]};
        tc::mma_m16n8k16_bf16(s[2 * np], q[kk], b_lo);
        tc::mma_m16n8k16_bf16(s[2 * np + 1], q[kk], b_hi);
      }
    if (j >= kt.n_full) {  // -inf for keys past N_kv and, causal, after the row's last key
#pragma unroll
      for (int n = 0; n < B_c / 8; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int row = row0 + g + 8 * (e / 2), col = j0 + 8 * n + 2 * t + e % 2;
          if (col >= p.N_kv || (p.causal && col > row + p.offset)) s[n][e] = -INFINITY;
        }
    }

    online_softmax(st, s, o, p.scale_log2e);

    // O_i += P~_ij V_j: the C fragments of n8 tiles 2kk and 2kk + 1 of P~ are, element for
    // element, the A fragment of k16 slice kk (c_to_a rounds them to bf16 in place); V_j's B
    // fragments by ldmatrix.trans, two n8 tiles of d per ldmatrix.x4.
#pragma unroll
    for (int kk = 0; kk < B_c / 16; ++kk) {
      std::uint32_t a[4];
      c_to_a(a, s[2 * kk], s[2 * kk + 1]);
#pragma unroll
      for (int dp = 0; dp < d / 16; ++dp) {
        std::uint32_t bv[4];
        tc::ldmatrix_x4_trans(bv, frag_addr(v_lane, 16 * kk, 2 * dp, kRowBytes));
        const std::uint32_t b_lo[2] = {bv[0], bv[1]}, b_hi[2] = {bv[2], bv[3]};
        tc::mma_m16n8k16_bf16(o[2 * dp], a, b_lo);
        tc::mma_m16n8k16_bf16(o[2 * dp + 1], a, b_hi);
      }
    }
  }
  finish(st, o, p.O + std::int64_t(head) * p.N_q * d, p.L + std::int64_t(head) * p.N_q, row0, p.N_q);
}

}  // namespace

void fa2_forward(const ladder::AttentionShape& s, const ladder::bf16* Q, const ladder::bf16* K, const ladder::bf16* V,
                 ladder::bf16* O, float* L, cudaStream_t stream) {
  const int supported_d[] = {d};
  const ladder::AttentionShape r = ladder::validate(s, supported_d, ladder::KvHeads::Any);
  ladder::check_pointers("fa2_forward (exercise)", {{"Q", Q}, {"K", K}, {"V", V}, {"O", O}, {"L", L, alignof(float)}},
                         16);
  const dim3 grid(static_cast<unsigned>(ladder::ceil_div(r.N, B_r)), static_cast<unsigned>(r.heads()));
  ladder::check_grid("fa2_forward (exercise)", grid.x, grid.y);
  Params p{};
  p.Q = Q, p.K = K, p.V = V, p.O = O, p.L = L;
  p.H = r.H, p.H_kv = r.hkv(), p.N_q = r.N, p.N_kv = r.nkv(), p.offset = r.nkv() - r.N;
  p.causal = r.causal;
  p.scale_log2e = r.scale() * ladder::kLog2e;
  fa2_forward_kernel<<<grid, kThreads, 0, stream>>>(p);
  CUDA_CHECK_LAUNCH();
}

}  // namespace wrong_max_one_shuffle
