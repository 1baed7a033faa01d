// Flash-decoding (split-KV) on tensor cores: bf16 K/V streamed by cp.async, S = Q K^T and
// O += P V on mma.sync.m16n8k16 (chapter 09's wrappers, chapter 10's fragment helpers).
//
// One thread block per (sequence b, KV head h_kv, row tile, split). Its query rows are the
// g * n_q rows of the whole GQA group (the g query heads that read this KV head, n_q new
// queries each), 16 per row tile: every K_j, V_j leaves DRAM once for all of them.
//
//   block (b, h_kv, split): keys [k0, k1) of that KV head, in steps of W * B_w keys
//     warp w takes sub-tiles w, w + W, w + 2W, ... (B_w keys each), through its OWN ring of
//     kStages cp.async buffers: no block-wide barrier in the loop, a warp never waits for
//     another. Per sub-tile, exactly chapter 10's inner step on one m16 tile:
//       S = Q K_j^T, m_new = max(m, rowmax S scale log2e), P~ = exp2(S scale log2e - m_new),
//       l = alpha l + rowsum P~, O = alpha O + P~ V_j
//   then the W warps' (m, l, O) merge in shared memory (the same merge as chapter 04's
//   blocks), and the block writes its partial: O_s = O / l (fp32) and LSE_s = m ln 2 + log l
//   (m in log2 units: attention_rows.cuh).
//   With one split the partial is the answer: O (bf16) and LSE go straight to the outputs.
//
//   combine: one warp per query row merges that row's partials:
//     LSE = log sum_s exp(LSE_s),  O = sum_s exp(LSE_s - LSE) O_s
//
// Paged caches differ only in where a 16-key chunk starts: page block_table[b][j / page]
// instead of slab + j. Each warp keeps the table entries of its next 32 chunks in a register
// per lane, the next 32 already loading, so a page lookup is one shuffle, never a wait.
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <map>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include "09_tensor_core_matmul/hopper.cuh"
#include "10_fa2_tensor_cores/attention_rows.cuh"
#include "10_fa2_tensor_cores/fa2_tc.cuh"
#include "10_fa2_tensor_cores/fa2_tc.h"
#include "cuda_check.h"
#include "device.h"
#include "fit.h"
#include "flash_decoding.h"
#include "launch.h"
#include "numeric.h"

namespace fdec {

namespace {

using bf16_t = __nv_bfloat16;
using fa2tc::dev::a_lane;
using fa2tc::dev::b_lane;
using fa2tc::dev::bt_lane;
using fa2tc::dev::c_to_a;
using fa2tc::dev::frag_addr;
using fa2tc::dev::lane_base;
using fa2tc::dev::quad_max;
using fa2tc::dev::quad_sum;

using ladder::ceil_div;

// A compiled configuration: kWarps warps per block, each streaming B_w keys per step through
// its own ring of kStages buffers (K and V, B_w rows of d bf16 each, 128-byte swizzle).
template <int d_, int kWarps_, int B_w_, int kStages_, int kMinBlocks_>
struct Config {
  static constexpr int d = d_, kWarps = kWarps_, B_w = B_w_, kStages = kStages_, kMinBlocks = kMinBlocks_;
  static constexpr int kThreads = 32 * kWarps;
  static constexpr int kRowBytes = 2 * d;
  static constexpr int kChunks = B_w / 16;  // 16-key chunks per warp step (a page holds 16 or 64 keys)
  static constexpr int kTileBytes = B_w * kRowBytes;
  static constexpr int kStageBytes = 2 * kTileBytes;  // K_j and V_j of one warp step
  static constexpr int kPipeBytes = kWarps * kStages * kStageBytes;
  static constexpr int kQBytes = 16 * kRowBytes;  // one m16 tile of query rows
  // After the loop the rings hold the warps' O for the merge: 16 rows of d floats per warp,
  // rows d + 8 floats apart so the lanes' float2 stores of a half-warp hit distinct banks.
  static constexpr int kMergeStride = d + 8;
  static constexpr int kMergeBytes = kWarps * 16 * kMergeStride * 4;
  static constexpr int kStatBytes = 2 * kWarps * 16 * 4;  // m and l of every warp's 16 rows
  static constexpr int kSmemBytes = kQBytes + (kPipeBytes > kMergeBytes ? kPipeBytes : kMergeBytes) + kStatBytes;
  static_assert(d == 64 || d == 128, "the 128-byte swizzle needs rows of 64 or 128 bf16");
  static_assert(B_w % 16 == 0, "P~ is reused as A fragments of 16 keys; pages hold multiples of 16 keys");
  static_assert((B_w * (d / 8)) % 32 == 0, "every lane copies the same number of 16-byte pieces");
};

struct Params {
  const bf16_t* Q;
  const bf16_t* K;  // contiguous: [B, H_kv, capacity, d]; paged: [num_pages, H_kv, page_size, d]
  const bf16_t* V;
  const int* seq_lens;
  const int* block_table;
  bf16_t* O;
  float* LSE;
  float* O_part;    // [rows][splits][d]
  float* lse_part;  // [rows][splits]
  long long slab;   // contiguous: elements between consecutive (b, h_kv) slabs (capacity * d)
  int H_kv, group_rows, n_q, row_tiles, splits, keys_per_split, max_seq_len;
  int page_shift, max_pages_per_seq, num_pages;  // paged: page_size = 1 << page_shift
  float scale_log2e;
};

// ---- where a warp's keys come from --------------------------------------------------------
// Element offset (into K and into V alike) of the first key of each 16-key chunk of a warp step.
//
// Contiguous: slab + j * d.
template <class C>
struct ContiguousKeys {
  long long slab_off;
  __device__ __forceinline__ long long chunk(int /*q*/, int j) const {
    return slab_off + static_cast<long long>(j) * C::d;
  }
};

// Paged: the page of chunk q comes from lane q % 32 of the ring `cur` (lane l holds the entry
// of chunk 32 * batch + l); `nxt` already holds (or is still loading) the batch after it. The
// loads are ordinary, so they stay in flight until the register is first read, 32 chunks later.
template <class C>
struct PagedKeys {
  const int* table;  // this sequence's row of the block table
  int cur, nxt, batch;
  int k0, warp, seq_len, page_shift, max_pages, num_pages, H_kv, h_kv;

  // The key where this warp's chunk q starts (q counts the warp's chunks, kChunks per step).
  __device__ __forceinline__ int chunk_key(int q) const {
    return k0 + ((q / C::kChunks) * C::kWarps + warp) * C::B_w + 16 * (q % C::kChunks);
  }
  __device__ __forceinline__ int fetch(int b) const {
    const int lane = threadIdx.x % 32, j = chunk_key(32 * b + lane);
    if (j >= seq_len) return 0;  // past the sequence: never addressed (its copies are zero-fills)
    const int page = table[min(j >> page_shift, max_pages - 1)];
    return min(max(page, 0), num_pages - 1);  // a bad entry reads a wrong page, never outside the pool
  }
  __device__ __forceinline__ void start() {
    batch = 0;
    cur = fetch(0);
    nxt = fetch(1);
  }
  // Element offset of chunk q's first key; q's batch is the current one or the next.
  __device__ __forceinline__ long long chunk(int q, int j) {
    if (q / 32 != batch) {
      cur = nxt;
      ++batch;
      nxt = fetch(batch + 1);
    }
    const int page = __shfl_sync(0xffffffffu, cur, q % 32);
    const long long row = (static_cast<long long>(page) * H_kv + h_kv) << page_shift;
    return (row + (j & ((1 << page_shift) - 1))) * C::d;
  }
};

// How a lane copies its share of a warp step: lane l copies 16-byte piece l % kPieces of rows
// r_l + u * kRowsPerU (r_l = l / kPieces, u = 0 .. kPerLane - 1) of the B_w-row K and V tiles.
// The swizzled destination of row r, piece c is chunk c ^ (r % 8) of the row. Because
// kRowsPerU divides 8 and r_l < kRowsPerU, (r_l + u kRowsPerU) % 8 = r_l ^ ((u kRowsPerU) % 8):
// the lane's address is computed once (lane_dst), and row u's is
//     (lane_dst ^ (((u kRowsPerU) % 8) << 4)) + u kRowsPerU * row_bytes,
// a compile-time XOR and offset (chapter 10's frag_addr, for the copies).
// detail::check_copy_addressing() compares it with tc::swizzle_128b for every lane and u.
template <int d, int B_w>
struct CopyPattern {
  static constexpr int kPieces = d / 8, kRowsPerU = 32 / kPieces, kPerLane = B_w / kRowsPerU, kRowBytes = 2 * d;
  __host__ __device__ static constexpr int row(int lane) { return lane / kPieces; }
  __host__ __device__ static constexpr int piece(int lane) { return lane % kPieces; }
  __host__ __device__ static constexpr std::uint32_t lane_dst(int lane) {  // bytes from the tile's start
    return std::uint32_t(row(lane) * kRowBytes + ((piece(lane) ^ row(lane)) << 4));
  }
  __host__ __device__ static constexpr std::uint32_t dst(std::uint32_t lane_dst, int u) {
    return (lane_dst ^ std::uint32_t(((u * kRowsPerU) % 8) << 4)) + std::uint32_t(u * kRowsPerU * kRowBytes);
  }
  __host__ __device__ static constexpr int lane_src(int lane) { return row(lane) * d + 8 * piece(lane); }  // elements
};

// This warp's copy of keys [j0, j0 + B_w) into its stage (K tile, then V tile). kFull: every
// key is < seq_len (all but a sequence's last step): no predicate. Otherwise rows with
// key >= seq_len are zero-filled and not read, so V there is 0, never the NaN or garbage a
// cache holds past a sequence's end, and no address past the buffers is formed.
template <class C, bool kFull, class Keys>
__device__ __forceinline__ void load_step(std::uint32_t stage, std::uint32_t lane_dst, int lane_src, int lane_row,
                                          const bf16_t* K, const bf16_t* V, Keys& keys, int step, int j0, int seq_len) {
  using P = CopyPattern<C::d, C::B_w>;
  const int lim = seq_len - j0 - lane_row;  // this lane's row u is valid when u * kRowsPerU < lim
  long long off[C::kChunks];
#pragma unroll
  for (int c = 0; c < C::kChunks; ++c) off[c] = keys.chunk(step * C::kChunks + c, j0 + 16 * c) + lane_src;
#pragma unroll
  for (int u = 0; u < P::kPerLane; ++u) {
    constexpr int kRows = P::kRowsPerU;
    const int row_u = u * kRows, c = row_u / 16;  // compile-time: the chunk of the lane's row
    const std::uint32_t dst = stage + P::dst(lane_dst, u);
    const long long src = off[c] + static_cast<long long>(row_u - 16 * c) * C::d;
    if constexpr (kFull) {
      tc::cp_async_16(dst, K + src);
      tc::cp_async_16(dst + C::kTileBytes, V + src);
    } else {
      const bool valid = row_u < lim;
      tc::cp_async_16(dst, valid ? K + src : K, valid);
      tc::cp_async_16(dst + C::kTileBytes, valid ? V + src : V, valid);
    }
  }
}

// One warp's running state for its 16 query rows (rows g and g + 8 of the m16 tile per
// lane): the unnormalised O (C fragments of d/8 n-tiles) and chapter 10's row statistics
// (attention_rows.cuh).
template <class C>
struct WarpState {
  float o[1][C::d / 8][4];
  attn::OnlineSoftmax<2> rows;
};

// Chapter 10's inner step (fa2_tc_forward.cu) on one m16 tile and B_w keys. kMasked: some key
// of the sub-tile is hidden from some row (the sequence's last n_q keys, or its end).
template <class C, bool kMasked>
__device__ __forceinline__ void step(WarpState<C>& st, const std::uint32_t (&q)[C::d / 16][4], std::uint32_t k_lane,
                                     std::uint32_t v_lane, int j0, const int (&last_key)[2], float sl2e) {
  constexpr int d = C::d, B_w = C::B_w, RB = C::kRowBytes;
  const int t = threadIdx.x % 4;

  float s[1][B_w / 8][4];
#pragma unroll
  for (int n = 0; n < B_w / 8; ++n) s[0][n][0] = s[0][n][1] = s[0][n][2] = s[0][n][3] = 0.0f;
#pragma unroll
  for (int kk = 0; kk < d / 16; ++kk)
#pragma unroll
    for (int np = 0; np < B_w / 16; ++np) {
      std::uint32_t b[4];
      tc::ldmatrix_x4(b, frag_addr(k_lane, 16 * np, 2 * kk, RB));
      const std::uint32_t b_lo[2] = {b[0], b[1]}, b_hi[2] = {b[2], b[3]};
      tc::mma_m16n8k16_bf16(s[0][2 * np], q[kk], b_lo);
      tc::mma_m16n8k16_bf16(s[0][2 * np + 1], q[kk], b_hi);
    }

  if constexpr (kMasked) {
#pragma unroll
    for (int n = 0; n < B_w / 8; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e)
        if (j0 + 8 * n + 2 * t + e % 2 > last_key[e / 2]) s[0][n][e] = -INFINITY;
  }

  st.rows.update(attn::MmaTile<1, B_w / 8>{s}, sl2e);
  st.rows.rescale(attn::MmaTile<1, d / 8>{st.o});

#pragma unroll
  for (int kk = 0; kk < B_w / 16; ++kk) {
    std::uint32_t a[4];
    c_to_a(a, s[0][2 * kk], s[0][2 * kk + 1]);
#pragma unroll
    for (int dp = 0; dp < d / 16; ++dp) {
      std::uint32_t b[4];
      tc::ldmatrix_x4_trans(b, frag_addr(v_lane, 16 * kk, 2 * dp, RB));
      const std::uint32_t b_lo[2] = {b[0], b[1]}, b_hi[2] = {b[2], b[3]};
      tc::mma_m16n8k16_bf16(st.o[0][2 * dp], a, b_lo);
      tc::mma_m16n8k16_bf16(st.o[0][2 * dp + 1], a, b_hi);
    }
  }
}

template <class C, bool kPaged>
__global__ void __launch_bounds__(C::kThreads, C::kMinBlocks) decode_kernel(const __grid_constant__ Params p) {
  constexpr int d = C::d, W = C::kWarps, B_w = C::B_w, S = C::kStages, RB = C::kRowBytes;
  extern __shared__ __align__(1024) unsigned char smem[];
  const std::uint32_t Q_s = tc::smem_addr(smem);  // [16][d] bf16, swizzled
  unsigned char* ring_ptr = smem + C::kQBytes;    // [W][S][K tile, V tile]; after the loop: the merge
  float* m_s = reinterpret_cast<float*>(ring_ptr + (C::kPipeBytes > C::kMergeBytes ? C::kPipeBytes : C::kMergeBytes));
  float* l_s = m_s + W * 16;

  // Which block: row tile fastest, so the tiles of one group (same K/V) run side by side.
  int idx = static_cast<int>(blockIdx.x);
  const int rt = idx % p.row_tiles;
  idx /= p.row_tiles;
  const int split = idx % p.splits;
  idx /= p.splits;
  const int h_kv = idx % p.H_kv, b = idx / p.H_kv;
  const int seq_len = min(max(p.seq_lens[b], 0), p.max_seq_len);
  const int k0 = split * p.keys_per_split, k1 = min(seq_len, k0 + p.keys_per_split);
  tc::griddepcontrol_launch_dependents();
  // A split past this sequence's end has nothing to say; the combine reads only the
  // ceil(seq_len / keys_per_split) splits that exist. (One split: write O = 0, LSE = -inf.)
  if (p.splits > 1 && k0 >= seq_len) return;

  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
  const int r0 = rt * 16, rows_valid = min(16, p.group_rows - r0);
  const long long grow0 = static_cast<long long>(b * p.H_kv + h_kv) * p.group_rows + r0;  // first row of Q, O, LSE

  // Q: the tile's rows of the group (consecutive in [B, H_q, n_q, d]), zeros past the group.
  {
    const bf16_t* Qg = p.Q + grow0 * d;
    for (int i = tid; i < 16 * (d / 8); i += C::kThreads) {
      const int r = i / (d / 8), piece = i % (d / 8);
      const bool valid = r < rows_valid;
      tc::cp_async_16(Q_s + 2 * tc::swizzle_128b(r, 8 * piece, d), Qg + (valid ? r * d + 8 * piece : 0), valid);
    }
    tc::cp_async_commit();
  }

  // This warp's sub-tiles: w, w + W, ... of the split's ceil((k1 - k0) / B_w).
  const int n_sub = k1 > k0 ? ceil_div(k1 - k0, B_w) : 0;
  const int n_steps = n_sub > warp ? ceil_div(n_sub - warp, W) : 0;
  auto j0_of = [&](int i) { return k0 + (i * W + warp) * B_w; };
  const std::uint32_t ring = tc::smem_addr(ring_ptr) + warp * S * C::kStageBytes;

  using Keys = std::conditional_t<kPaged, PagedKeys<C>, ContiguousKeys<C>>;
  Keys keys;
  if constexpr (kPaged) {
    keys.table = p.block_table + static_cast<long long>(b) * p.max_pages_per_seq;
    keys.k0 = k0, keys.warp = warp, keys.seq_len = seq_len, keys.page_shift = p.page_shift;
    keys.max_pages = p.max_pages_per_seq, keys.num_pages = p.num_pages, keys.H_kv = p.H_kv, keys.h_kv = h_kv;
    keys.start();
  } else {
    keys.slab_off = static_cast<long long>(b * p.H_kv + h_kv) * p.slab;
  }
  using Copy = CopyPattern<d, B_w>;
  const std::uint32_t lane_dst = Copy::lane_dst(lane);
  const int lane_src = Copy::lane_src(lane), lane_row = Copy::row(lane);
  auto load = [&](int i) {
    if (i < n_steps) {
      const std::uint32_t stage = ring + (i % S) * C::kStageBytes;
      const int j0 = j0_of(i);
      if (j0 + B_w <= seq_len)
        load_step<C, true>(stage, lane_dst, lane_src, lane_row, p.K, p.V, keys, i, j0, seq_len);
      else
        load_step<C, false>(stage, lane_dst, lane_src, lane_row, p.K, p.V, keys, i, j0, seq_len);
    }
    tc::cp_async_commit();  // always a group, possibly empty: the wait counts stay uniform
  };
#pragma unroll
  for (int i = 0; i < S - 1; ++i) load(i);

  // Q's A fragments into registers, once (the group of Q is the oldest of S pending).
  tc::cp_async_wait<S - 1>();
  __syncthreads();
  std::uint32_t q[d / 16][4];
  {
    const std::uint32_t q_lane = lane_base(Q_s, a_lane(lane).row, a_lane(lane).chunk, RB);
#pragma unroll
    for (int kk = 0; kk < d / 16; ++kk) tc::ldmatrix_x4(q[kk], frag_addr(q_lane, 0, 2 * kk, RB));
  }

  // The last key each of this lane's two rows may see: query t of n_q sees j <= seq_len - n_q + t.
  int last_key[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) last_key[h] = seq_len - p.n_q + (r0 + g + 8 * h) % p.n_q;
  const int first_masked = seq_len - p.n_q + 1;  // keys from here on are hidden from some row

  WarpState<C> st;
#pragma unroll
  for (int n = 0; n < d / 8; ++n) st.o[0][n][0] = st.o[0][n][1] = st.o[0][n][2] = st.o[0][n][3] = 0.0f;
  st.rows.init();

  for (int i = 0; i < n_steps; ++i) {
    tc::cp_async_wait<S - 2>();  // this lane's copies of step i have landed ...
    __syncwarp();                // ... and every lane's; every lane is done with step i - 1
    load(i + S - 1);             // so the buffer step i - 1 used can be refilled
    const std::uint32_t K_st = ring + (i % S) * C::kStageBytes;
    const std::uint32_t k_lane = lane_base(K_st, b_lane(lane).row, b_lane(lane).chunk, RB);
    const std::uint32_t v_lane = lane_base(K_st + C::kTileBytes, bt_lane(lane).row, bt_lane(lane).chunk, RB);
    const int j0 = j0_of(i);
    if (j0 + B_w > first_masked)
      step<C, true>(st, q, k_lane, v_lane, j0, last_key, p.scale_log2e);
    else
      step<C, false>(st, q, k_lane, v_lane, j0, last_key, p.scale_log2e);
  }
  tc::cp_async_wait<0>();
  __syncthreads();  // every warp is out of its ring: the rings become the merge buffer

  // Merge the W warps (chapter 04's block merge, per row):
  //   M = max_w m_w,  f_w = exp2(m_w - M) (m in log2 units),  l = sum_w f_w l_w,  O = sum_w f_w O_w / l
  float* O_w = reinterpret_cast<float*>(ring_ptr);
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int row = g + 8 * h;
    const float l = quad_sum(st.rows.l[h]);
    if (t == 0) m_s[warp * 16 + row] = st.rows.m[h], l_s[warp * 16 + row] = l;
    if (row < rows_valid)
#pragma unroll
      for (int n = 0; n < d / 8; ++n)
        *reinterpret_cast<float2*>(O_w + (warp * 16 + row) * C::kMergeStride + 8 * n + 2 * t) =
            make_float2(st.o[0][n][2 * h], st.o[0][n][2 * h + 1]);
  }
  __syncthreads();

  for (int i = tid; i < rows_valid * (d / 4); i += C::kThreads) {
    const int r = i / (d / 4), c = 4 * (i % (d / 4));
    float M = -INFINITY;
#pragma unroll
    for (int w = 0; w < W; ++w) M = fmaxf(M, m_s[w * 16 + r]);
    float l = 0.0f;
    float4 o = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
    for (int w = 0; w < W; ++w) {
      const float m_w = m_s[w * 16 + r];
      const float f = m_w == -INFINITY ? 0.0f : tc::ex2(m_w - M);  // m in log2 units
      const float4 x = *reinterpret_cast<const float4*>(O_w + (w * 16 + r) * C::kMergeStride + c);
      l += f * l_s[w * 16 + r];
      o.x += f * x.x, o.y += f * x.y, o.z += f * x.z, o.w += f * x.w;
    }
    // No visible key in this split (l = 0): O = 0 and LSE = -inf, the merge's identity.
    const float inv = l > 0.0f ? 1.0f / l : 0.0f;
    o.x *= inv, o.y *= inv, o.z *= inv, o.w *= inv;
    const float lse = l > 0.0f ? M * ladder::kLn2 + logf(l) : -INFINITY;
    const long long row = grow0 + r;
    if (p.splits == 1) {
      uint2 packed;
      packed.x = tc::pack_bf16x2(o.x, o.y);
      packed.y = tc::pack_bf16x2(o.z, o.w);
      *reinterpret_cast<uint2*>(p.O + row * d + c) = packed;
      if (c == 0) p.LSE[row] = lse;
    } else {
      const long long part = row * p.splits + split;
      *reinterpret_cast<float4*>(p.O_part + part * d + c) = o;
      if (c == 0) p.lse_part[part] = lse;
    }
  }
}

// ---- combine --------------------------------------------------------------------------------
struct CombineParams {
  const float* O_part;
  const float* lse_part;
  const int* seq_lens;
  bf16_t* O;
  float* LSE;
  long long rows;
  int rows_per_seq, splits, keys_per_split, max_seq_len;
};

constexpr int kCombineWarps = 8;

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// One warp per query row: LSE = log sum_s exp(LSE_s), O = sum_s exp(LSE_s - LSE) O_s, with
// lane l owning columns [l d/32, (l + 1) d/32). Splits whose LSE_s is -inf weigh 0.
template <int d>
__global__ void __launch_bounds__(32 * kCombineWarps) combine_kernel(const __grid_constant__ CombineParams p) {
  tc::griddepcontrol_wait();  // the decode kernel's partials are complete and visible
  constexpr int kCols = d / 32;
  const int lane = threadIdx.x % 32;
  const long long row = static_cast<long long>(blockIdx.x) * kCombineWarps + threadIdx.x / 32;
  if (row >= p.rows) return;
  const int b = static_cast<int>(row / p.rows_per_seq);
  const int seq_len = min(max(p.seq_lens[b], 0), p.max_seq_len);
  const int n = min(p.splits, ceil_div(seq_len, p.keys_per_split));  // the splits the decode kernel wrote
  const float* lse = p.lse_part + row * p.splits;

  float m = -INFINITY;
  for (int s = lane; s < n; s += 32) m = fmaxf(m, lse[s]);
  m = warp_max(m);
  float sum = 0.0f;
  if (m != -INFINITY)
    for (int s = lane; s < n; s += 32) sum += expf(lse[s] - m);
  sum = warp_sum(sum);
  const float L = m == -INFINITY ? -INFINITY : m + logf(sum);

  float acc[kCols] = {};
  if (L != -INFINITY) {
    const float* O_s = p.O_part + row * p.splits * d + lane * kCols;
    for (int s0 = 0; s0 < n; s0 += 32) {
      const float w_lane = s0 + lane < n ? expf(lse[s0 + lane] - L) : 0.0f;
      const int count = min(32, n - s0);
#pragma unroll 4
      for (int j = 0; j < count; ++j) {
        const float w = __shfl_sync(0xffffffffu, w_lane, j);
        const float* x = O_s + static_cast<long long>(s0 + j) * d;
        if constexpr (kCols == 4) {
          const float4 v = *reinterpret_cast<const float4*>(x);
          acc[0] += w * v.x, acc[1] += w * v.y, acc[2] += w * v.z, acc[3] += w * v.w;
        } else {
          const float2 v = *reinterpret_cast<const float2*>(x);
          acc[0] += w * v.x, acc[1] += w * v.y;
        }
      }
    }
  }
  bf16_t* out = p.O + row * d + lane * kCols;
  if constexpr (kCols == 4) {
    uint2 packed;
    packed.x = tc::pack_bf16x2(acc[0], acc[1]);
    packed.y = tc::pack_bf16x2(acc[2], acc[3]);
    *reinterpret_cast<uint2*>(out) = packed;
  } else {
    *reinterpret_cast<std::uint32_t*>(out) = tc::pack_bf16x2(acc[0], acc[1]);
  }
  if (lane == 0) p.LSE[row] = L;
}

// ---- the compiled configurations ----------------------------------------------------------
// name: w<warps>_k<keys per warp step>_s<stages>. Index 0 is the default.
//                      d  warps B_w stages minBlocks    smem       blocks/SM (H200, 227 KiB)
using D128_0 = Config<128, 4, 16, 3, 2>;  // 100.5 KiB     2
using D128_1 = Config<128, 4, 16, 4, 1>;  // 132.5 KiB     1
using D128_2 = Config<128, 4, 32, 2, 1>;  // 132.5 KiB     1
using D128_3 = Config<128, 8, 16, 3, 1>;  // 197.0 KiB     1
using D128_4 = Config<128, 4, 16, 2, 3>;  //  68.5 KiB     3
using D64_0 = Config<64, 4, 32, 3, 2>;    //  98.5 KiB     2
using D64_1 = Config<64, 4, 16, 4, 3>;    //  66.5 KiB     3

template <class C>
TileConfig describe() {
  return {"w" + std::to_string(C::kWarps) + "_k" + std::to_string(C::B_w) + "_s" + std::to_string(C::kStages),
          C::kWarps, C::B_w, C::kStages, static_cast<std::size_t>(C::kSmemBytes)};
}

// Resident blocks per SM: the runtime's answer on a GPU; without one, what an H200's 228 KiB
// of shared memory per SM (1 KiB reserved per block) and 2048 threads allow.
template <class C, bool kPaged>
int blocks_per_sm() {
  if (!ladder::device().available) {
    const int by_smem = 233472 / (C::kSmemBytes + 1024), by_threads = 2048 / C::kThreads;
    return std::max(1, std::min(by_smem, by_threads));
  }
  static int cached = 0;
  if (cached == 0) {
    ladder::allow_dynamic_smem(decode_kernel<C, kPaged>, C::kSmemBytes, "fdec::decode (" + describe<C>().name + ")");
    CUDA_CHECK(
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&cached, decode_kernel<C, kPaged>, C::kThreads, C::kSmemBytes));
    cached = std::max(cached, 1);
  }
  return cached;
}

template <class C, bool kPaged>
void launch_decode(const Params& p, long long blocks, cudaStream_t stream) {
  ladder::allow_dynamic_smem(decode_kernel<C, kPaged>, C::kSmemBytes, "fdec::decode (" + describe<C>().name + ")");
  decode_kernel<C, kPaged><<<static_cast<unsigned>(blocks), C::kThreads, C::kSmemBytes, stream>>>(p);
  CUDA_CHECK_LAUNCH();
}

template <int d>
void launch_combine(const CombineParams& p, bool pdl, cudaStream_t stream) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(static_cast<unsigned>((p.rows + kCombineWarps - 1) / kCombineWarps));
  cfg.blockDim = dim3(32 * kCombineWarps);
  cfg.stream = stream;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = attr;
  cfg.numAttrs = pdl ? 1 : 0;
  CUDA_CHECK(cudaLaunchKernelEx(&cfg, combine_kernel<d>, p));
}

// Calls f.template operator()<C>() with the configuration `index` of head dim d.
template <class F>
void with_config(int d, int index, const F& f) {
  if (d == 128) {
    switch (index) {
      case 0: return f.template operator()<D128_0>();
      case 1: return f.template operator()<D128_1>();
      case 2: return f.template operator()<D128_2>();
      case 3: return f.template operator()<D128_3>();
      case 4: return f.template operator()<D128_4>();
    }
  } else {
    switch (index) {
      case 0: return f.template operator()<D64_0>();
      case 1: return f.template operator()<D64_1>();
    }
  }
}

struct OccupancyOf {
  int* out;
  template <class C>
  void operator()() const {
    *out = blocks_per_sm<C, false>();
  }
};
struct LaunchDecode {
  const Params* p;
  long long blocks;
  bool paged;
  cudaStream_t stream;
  template <class C>
  void operator()() const {
    if (paged)
      launch_decode<C, true>(*p, blocks, stream);
    else
      launch_decode<C, false>(*p, blocks, stream);
  }
};

void validate_shape(const DecodeShape& s, const std::string& who) {
  if (s.B < 1 || s.H_q < 1 || s.H_kv < 1)
    throw std::invalid_argument(who + ": shape " + s.str() + ": B, H_q and H_kv must all be >= 1");
  if (s.H_q % s.H_kv != 0)
    throw std::invalid_argument(who + ": shape " + s.str() + ": H_q must be a multiple of H_kv (GQA groups)");
  if (s.n_q < 1 || s.n_q > kMaxQueries)
    throw std::invalid_argument(who + ": n_q = " + std::to_string(s.n_q) + ": 1 to " + std::to_string(kMaxQueries) +
                                " new queries per sequence");
  if (s.d != 64 && s.d != 128)
    throw std::invalid_argument(who + ": head dim d=" + std::to_string(s.d) +
                                " is not supported: the kernels are compiled for d in {64, 128}");
  if (s.max_seq_len < 0 || s.max_seq_len > (1 << 30))
    throw std::invalid_argument(who + ": max_seq_len = " + std::to_string(s.max_seq_len) + ": 0 to 2^30 keys");
  const long long group_rows = static_cast<long long>(s.H_q / s.H_kv) * s.n_q;
  if (static_cast<long long>(s.B) * s.H_q * s.n_q * s.d > (1LL << 40) || group_rows > (1 << 20))
    throw std::invalid_argument(who + ": shape " + s.str() + " is too large");
}

void validate_options(const DecodeShape& s, const Options& opt, const std::string& who) {
  const int n = static_cast<int>(configs(s.d).size());
  if (opt.config != kFits && (opt.config < 0 || opt.config >= n))
    throw std::invalid_argument(who + ": tile config " + std::to_string(opt.config) + " does not exist (0.." +
                                std::to_string(n - 1) + " at d=" + std::to_string(s.d) + ")");
  if (opt.splits < 0 || opt.splits > kMaxSplits)
    throw std::invalid_argument(who + ": splits = " + std::to_string(opt.splits) + ": 0 (automatic) to " +
                                std::to_string(kMaxSplits));
}

void validate_cache(const DecodeShape& s, const KvCache& kv, const std::string& who) {
  if (kv.layout == Layout::Contiguous) {
    if (kv.capacity < 1)
      throw std::invalid_argument(who + ": the contiguous cache's capacity must be >= 1 key per (b, h_kv)");
  } else {
    if (kv.page_size != 16 && kv.page_size != 64)
      throw std::invalid_argument(who + ": page size " + std::to_string(kv.page_size) +
                                  " is not supported: pages of 16 or 64 keys");
    if (kv.num_pages < 1 || kv.max_pages_per_seq < 1)
      throw std::invalid_argument(who + ": a paged cache needs num_pages >= 1 and max_pages_per_seq >= 1");
  }
  if (s.max_seq_len > kv.max_keys())
    throw std::invalid_argument(who + ": max_seq_len = " + std::to_string(s.max_seq_len) +
                                " is more than the cache holds (" + std::to_string(kv.max_keys()) +
                                " keys per sequence)");
}

}  // namespace

std::string DecodeShape::str() const {
  return "B=" + std::to_string(B) + " Hq=" + std::to_string(H_q) + " Hkv=" + std::to_string(H_kv) +
         " nq=" + std::to_string(n_q) + " d=" + std::to_string(d) + " max_seq_len=" + std::to_string(max_seq_len);
}

std::vector<TileConfig> configs(int d) {
  if (d == 128)
    return {describe<D128_0>(), describe<D128_1>(), describe<D128_2>(), describe<D128_3>(), describe<D128_4>()};
  if (d == 64) return {describe<D64_0>(), describe<D64_1>()};
  return {};
}

// Index 0, then the rest by their bandwidth at B=8 Hq=32 Hkv=8 Nkv=32768 on the H200
// (results/11_flash_decoding): w4_k32_s2, w8_k16_s3, w4_k16_s4, w4_k16_s2.
std::vector<int> preference(int d) {
  if (d == 128) return {0, 2, 3, 1, 4};
  if (d == 64) return {0, 1};
  return {};
}

namespace {
std::vector<ladder::Candidate> candidates(int d) {
  std::vector<ladder::Candidate> out;
  for (const TileConfig& c : configs(d)) out.push_back({c.name, c.smem_bytes});
  return out;
}
}  // namespace

int fit(int d, std::size_t smem_per_block) {
  return ladder::first_that_fits(candidates(d), smem_per_block, preference(d)).index;
}

Split split_with(int s, int max_seq_len, int tile_keys) {
  const int N = std::max(max_seq_len, 1);
  s = std::clamp(s, 1, ceil_div(N, tile_keys));
  const int kps = ceil_div(ceil_div(N, s), tile_keys) * tile_keys;
  return {ceil_div(N, kps), kps};
}

Split choose_splits(long long units, int max_seq_len, int tile_keys, long long slots) {
  units = std::max(units, 1LL);
  slots = std::max(slots, 1LL);
  const int most = std::max(1, std::min(kMaxSplits, max_seq_len / kMinKeysPerSplit));
  auto efficiency = [&](const Split& sp) {
    const long long blocks = units * sp.splits, waves = (blocks + slots - 1) / slots;
    return double(blocks) / double(waves * slots);
  };
  double best = 0.0;
  for (int s = 1; s <= most; ++s) best = std::max(best, efficiency(split_with(s, max_seq_len, tile_keys)));
  for (int s = 1; s <= most; ++s) {
    const Split sp = split_with(s, max_seq_len, tile_keys);
    if (efficiency(sp) >= kWaveSlack * best) return sp;
  }
  return split_with(1, max_seq_len, tile_keys);
}

std::string Plan::str() const {
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "config %s (%d warps x %d keys per step, %d stages, %.1f KiB shared memory, %d blocks/SM on %d SMs); "
                "%d split%s of %d keys, %d row tile%s: %lld blocks = %.2f waves",
                config.name.c_str(), config.warps, config.keys_per_step, config.stages, config.smem_bytes / 1024.0,
                blocks_per_sm, sm_count, split.splits, split.splits == 1 ? "" : "s", split.keys_per_split, row_tiles,
                row_tiles == 1 ? "" : "s", blocks, double(blocks) / (double(blocks_per_sm) * sm_count));
  return buf;
}

Plan plan(const DecodeShape& s, const Options& opt) {
  const std::string who = "fdec::plan";
  validate_shape(s, who);
  validate_options(s, opt, who);
  const ladder::DeviceInfo& dev = ladder::device();
  if (dev.available && dev.cc_major < 8)
    throw std::invalid_argument(who + ": needs sm_80 or later (bf16 mma.sync, cp.async); this GPU is sm_" +
                                std::to_string(dev.cc_major * 10 + dev.cc_minor) + " (" + dev.name + ")");
  Plan p;
  p.config_index = opt.config != kFits ? opt.config
                                       : ladder::choose("fdec::decode (d = " + std::to_string(s.d) + ")",
                                                        candidates(s.d), preference(s.d));
  p.config = configs(s.d)[p.config_index];
  p.row_tiles = ceil_div(s.group_rows(), 16);
  p.sm_count = ladder::device().available ? ladder::device().sm_count : 132;
  with_config(s.d, p.config_index, OccupancyOf{&p.blocks_per_sm});
  const long long units = static_cast<long long>(s.B) * s.H_kv * p.row_tiles;
  const int tile = p.config.tile_keys();
  p.split = opt.splits > 0
                ? split_with(opt.splits, s.max_seq_len, tile)
                : choose_splits(units, s.max_seq_len, tile, static_cast<long long>(p.sm_count) * p.blocks_per_sm);
  p.blocks = units * p.split.splits;
  if (p.split.splits > 1) {
    const std::size_t parts = s.rows() * p.split.splits;
    p.workspace_bytes = (parts * s.d + ladder::round_up(parts, 4)) * sizeof(float);
  }
  return p;
}

void decode(const DecodeShape& s, const bf16* Q, const KvCache& kv, const int* seq_lens, bf16* O, float* LSE,
            void* workspace, const Options& opt, cudaStream_t stream) {
  const std::string who = "fdec::decode";
  const Plan pl = plan(s, opt);
  validate_cache(s, kv, who);
  // One call: every pointer is checked for null and alignment before any for host memory
  // (where a layout has no block table or no workspace, an already checked pointer stands in).
  const bool paged = kv.layout == Layout::Paged, split = pl.workspace_bytes > 0;
  ladder::check_pointers(who,
                         {{"Q", Q},
                          {"K", kv.K},
                          {"V", kv.V},
                          {"O", O},
                          {"LSE", LSE, 4},
                          {"seq_lens", seq_lens, 4},
                          {"block_table", paged ? kv.block_table : seq_lens, 4},
                          {"workspace", split ? workspace : O}},
                         16);
  ladder::check_grid(who, static_cast<unsigned long long>(pl.blocks));

  Params p{};
  p.Q = Q, p.K = kv.K, p.V = kv.V, p.seq_lens = seq_lens, p.block_table = kv.block_table;
  p.O = O, p.LSE = LSE;
  const std::size_t parts = s.rows() * pl.split.splits;
  p.O_part = static_cast<float*>(workspace);
  p.lse_part = pl.workspace_bytes > 0 ? p.O_part + parts * s.d : nullptr;
  p.slab = static_cast<long long>(kv.capacity) * s.d;
  p.H_kv = s.H_kv, p.group_rows = s.group_rows(), p.n_q = s.n_q, p.row_tiles = pl.row_tiles;
  p.splits = pl.split.splits, p.keys_per_split = pl.split.keys_per_split, p.max_seq_len = s.max_seq_len;
  p.page_shift = kv.page_size == 64 ? 6 : 4;
  p.max_pages_per_seq = kv.max_pages_per_seq, p.num_pages = kv.num_pages;
  p.scale_log2e = ladder::kLog2e / std::sqrt(float(s.d));

  with_config(s.d, pl.config_index, LaunchDecode{&p, pl.blocks, kv.layout == Layout::Paged, stream});
  if (pl.split.splits == 1) return;

  CombineParams c{};
  c.O_part = p.O_part, c.lse_part = p.lse_part, c.seq_lens = seq_lens, c.O = O, c.LSE = LSE;
  c.rows = static_cast<long long>(s.rows());
  c.rows_per_seq = s.H_q * s.n_q, c.splits = p.splits, c.keys_per_split = p.keys_per_split;
  c.max_seq_len = s.max_seq_len;
  const bool pdl = opt.pdl && ladder::device().cc_major >= 9;
  if (s.d == 128)
    launch_combine<128>(c, pdl, stream);
  else
    launch_combine<64>(c, pdl, stream);
}

void check_block_table(const std::vector<int>& table, const std::vector<int>& seq_lens, int page_size,
                       int max_pages_per_seq, int num_pages) {
  const std::string who = "fdec::check_block_table";
  if (page_size < 1 || max_pages_per_seq < 1)
    throw std::invalid_argument(who + ": page size and pages per sequence must be >= 1");
  if (table.size() != seq_lens.size() * static_cast<std::size_t>(max_pages_per_seq))
    throw std::invalid_argument(
        who + ": the table has " + std::to_string(table.size()) +
        " entries; B * max_pages_per_seq = " + std::to_string(seq_lens.size() * max_pages_per_seq));
  std::map<int, std::pair<std::size_t, int>> owner;  // page -> (sequence, slot)
  for (std::size_t b = 0; b < seq_lens.size(); ++b) {
    const int pages = ceil_div(std::max(seq_lens[b], 0), page_size);
    if (pages > max_pages_per_seq)
      throw std::invalid_argument(who + ": sequence " + std::to_string(b) + " has " + std::to_string(seq_lens[b]) +
                                  " keys, more than " + std::to_string(max_pages_per_seq) + " pages hold");
    for (int i = 0; i < pages; ++i) {
      const int page = table[b * max_pages_per_seq + i];
      const std::string where =
          "block_table[" + std::to_string(b) + "][" + std::to_string(i) + "] = " + std::to_string(page);
      if (page < 0 || page >= num_pages)
        throw std::invalid_argument(who + ": " + where + " is outside the pool [0, " + std::to_string(num_pages) + ")");
      const auto [it, fresh] = owner.emplace(page, std::make_pair(b, i));
      if (!fresh)
        throw std::invalid_argument(who + ": " + where + ": that page is also block_table[" +
                                    std::to_string(it->second.first) + "][" + std::to_string(it->second.second) + "]");
    }
  }
}

void decode_with_fa2tc(const DecodeShape& s, const bf16* Q, const KvCache& kv, bf16* O, float* LSE,
                       cudaStream_t stream) {
  const std::string who = "fdec::decode_with_fa2tc";
  validate_shape(s, who);
  validate_cache(s, kv, who);
  if (kv.layout != Layout::Contiguous)
    throw std::invalid_argument(who + ": chapter 10's forward takes a contiguous cache");
  if (s.max_seq_len < 1) throw std::invalid_argument(who + ": max_seq_len must be >= 1");
  ladder::AttentionShape a{s.B, s.H_q, s.n_q, s.d, true};
  a.H_kv = s.H_kv;
  a.N_kv = s.max_seq_len;  // every sequence is this long; causal aligned at the bottom right = the decode mask
  fa2tc::ForwardOptions o;
  o.strides.kv_head =
      static_cast<std::int64_t>(kv.capacity) * s.d;  // a view of the first max_seq_len keys of each slab
  fa2tc::forward(a, Q, kv.K, kv.V, O, LSE, o, stream);
}

namespace {
// One block per (b, page slot i, h_kv): P rows of d bf16, 16 bytes per thread and step.
__global__ void copy_to_pages_kernel(const bf16_t* K, const bf16_t* V, long long slab, int capacity, bf16_t* K_pages,
                                     bf16_t* V_pages, const int* table, int H_kv, int page_size, int max_pages, int d) {
  const int h = blockIdx.x % H_kv, i = blockIdx.x / H_kv % max_pages, b = blockIdx.x / H_kv / max_pages;
  const int page = table[static_cast<long long>(b) * max_pages + i];
  if (page < 0) return;
  const long long from = (static_cast<long long>(b) * H_kv + h) * slab + static_cast<long long>(i) * page_size * d;
  const long long to = (static_cast<long long>(page) * H_kv + h) * page_size * d;
  const int pieces = page_size * d / 8, keys_left = capacity - i * page_size;
  for (int x = threadIdx.x; x < pieces; x += blockDim.x) {
    const bool inside = x / (d / 8) < keys_left;
    const uint4 k = inside ? *reinterpret_cast<const uint4*>(K + from + 8 * x) : make_uint4(0, 0, 0, 0);
    const uint4 v = inside ? *reinterpret_cast<const uint4*>(V + from + 8 * x) : make_uint4(0, 0, 0, 0);
    *reinterpret_cast<uint4*>(K_pages + to + 8 * x) = k;
    *reinterpret_cast<uint4*>(V_pages + to + 8 * x) = v;
  }
}
}  // namespace

void copy_to_pages(const DecodeShape& s, const bf16* K, const bf16* V, int capacity, bf16* K_pages, bf16* V_pages,
                   const int* block_table, int page_size, int max_pages_per_seq, cudaStream_t stream) {
  const std::string who = "fdec::copy_to_pages";
  validate_shape(s, who);
  if (page_size != 16 && page_size != 64) throw std::invalid_argument(who + ": pages of 16 or 64 keys");
  if (capacity < 1 || max_pages_per_seq < 1) throw std::invalid_argument(who + ": capacity and pages must be >= 1");
  ladder::check_pointers(who, {{"K", K}, {"V", V}, {"K_pages", K_pages}, {"V_pages", V_pages}}, 16);
  ladder::check_pointers(who, {{"block_table", block_table}}, 4);
  const long long blocks = static_cast<long long>(s.B) * max_pages_per_seq * s.H_kv;
  ladder::check_grid(who, static_cast<unsigned long long>(blocks));
  copy_to_pages_kernel<<<static_cast<unsigned>(blocks), 256, 0, stream>>>(K, V, static_cast<long long>(capacity) * s.d,
                                                                          capacity, K_pages, V_pages, block_table,
                                                                          s.H_kv, page_size, max_pages_per_seq, s.d);
  CUDA_CHECK_LAUNCH();
}

namespace detail {
// The copies' compile-time swizzle (CopyPattern) against tc::swizzle_128b, for every
// compiled (d, B_w), lane and u: the byte each lane writes must be where ldmatrix will look.
std::string check_copy_addressing() {
  auto check = [](auto pattern, int d, int B_w) -> std::string {
    using P = decltype(pattern);
    for (int lane = 0; lane < 32; ++lane)
      for (int u = 0; u < P::kPerLane; ++u) {
        const int r = P::row(lane) + u * P::kRowsPerU;
        const std::uint32_t got = P::dst(P::lane_dst(lane), u);
        const std::uint32_t want = 2 * tc::swizzle_128b(r, 8 * P::piece(lane), d);
        const int src_want = r * d + 8 * P::piece(lane), src_got = P::lane_src(lane) + u * P::kRowsPerU * d;
        if (got != want || src_got != src_want || r >= B_w)
          return "d=" + std::to_string(d) + " B_w=" + std::to_string(B_w) + " lane " + std::to_string(lane) + " u " +
                 std::to_string(u) + ": row " + std::to_string(r) + ", shared byte " + std::to_string(got) +
                 " (tc::swizzle_128b: " + std::to_string(want) + "), global element " + std::to_string(src_got) +
                 " (want " + std::to_string(src_want) + ")";
      }
    return {};
  };
  for (const std::string& e : {check(CopyPattern<128, 16>{}, 128, 16), check(CopyPattern<128, 32>{}, 128, 32),
                               check(CopyPattern<64, 16>{}, 64, 16), check(CopyPattern<64, 32>{}, 64, 32)})
    if (!e.empty()) return e;
  return {};
}
}  // namespace detail

}  // namespace fdec
