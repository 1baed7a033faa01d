// FlashAttention-2 backward (Dao, 2023, Algorithm 2), fp32 on CUDA cores.
//
// The forward kept only O and L = m + log(l). The backward never reads P: it
// recomputes every tile P_ij = exp(scale Q_i K_j^T - L_i) from Q, K and L.
//
//   preprocess_kernel   D_i = rowsum(dO_i * O_i)                 (and dQ = 0, atomic path)
//   dk_dv_kernel        one block per (K_j/V_j tile, head); dK_j, dV_j stay in registers
//                       while the block walks the Q_i tiles:
//                         S = Q_i K_j^T, P = exp(scale S - L_i), dP = dO_i V_j^T,
//                         dS = P * (dP - D_i), dV_j += P^T dO_i, dK_j += scale dS^T Q_i,
//                         and on the atomic path dQ_i += scale dS K_j with float atomics
//   dq_kernel           (deterministic path) one block per (Q_i tile, head): recompute
//                       P and dS per K_j tile, dQ_i += scale dS K_j in registers
#include <cuda_runtime.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "attention_tiles.cuh"
#include "cuda_check.h"
#include "dispatch.h"
#include "fa_backward.h"
#include "fit.h"
#include "launch.h"
#include "numeric.h"

namespace fa2 {

namespace {

using namespace fa_tiles;
constexpr const char* kWho = "fa2::backward";

using ladder::kLog2e;

// One tile shape for every product: B_r = B_c = 64. Each thread owns a 4 x 8 (or
// 4 x 4) micro-tile of every product, so every float4 it reads from shared memory
// feeds 8 or more FMAs. With d <= 64 two 128-thread blocks share an SM (one block's
// barrier waits are hidden by the other); with d = 128, one 256-thread block.
// Measured on the H200 (results/07_fa_backward): 34-37 TFLOP/s dense at N = 4096,
// 1.75-2.2x the forward's time.
// A GPU with less shared memory per block runs smaller tiles of the same kernels (the
// launcher picks the first that fits: backward_tiles()).
template <int d_, int B_r_ = 64, int B_c_ = 64, int kThreads_ = (d_ == 128 ? 256 : 128),
          int kMinBlocks_ = (d_ == 128 ? 1 : 2)>
struct BackwardConfig {
  static constexpr int d = d_, B_r = B_r_, B_c = B_c_;
  static constexpr int kThreads = kThreads_;
  static constexpr int kMinBlocks = kMinBlocks_;
  static constexpr int ld = d + kPad;      // row stride of Q_i, dO_i, K_j, V_j in shared memory
  static constexpr int ld_s = B_c + kPad;  // row stride of P_ij, dS_ij
};
// Half the keys per block (an RTX 30/40/50's 99 KiB at d <= 64, an A100's 163 KiB at d = 128),
// then half the rows and a quarter of the threads at d = 128 (99 KiB): each still gives every
// thread whole 4 x 4 micro-tiles of float4 columns (common/attention_tiles.cuh's WarpGrid).
template <int d>
using HalfKeys = BackwardConfig<d, 64, 32, 128, 2>;
using Quarter128 = BackwardConfig<128, 32, 32, 64, 2>;

__device__ __forceinline__ void atomic_add4(float* dst, float4 v) {
#if __CUDA_ARCH__ >= 900
  atomicAdd(reinterpret_cast<float4*>(dst), v);  // one 16-byte atomic (sm_90 and later)
#else
  atomicAdd(dst, v.x);
  atomicAdd(dst + 1, v.y);
  atomicAdd(dst + 2, v.z);
  atomicAdd(dst + 3, v.w);
#endif
}

// acc += A^T B for one Q_i tile. dK_j and dV_j are sums over all N queries, one tile
// of B_r at a time. Added straight into the running sum, every one of the N terms is
// rounded against a sum that keeps growing, so the error grows like sqrt(N) u (3e-6
// at N = 32K in an fp32 model of this loop). Two-level: the tile's B_r terms are
// summed in fresh registers first, and only the N / B_r tile sums meet the running
// sum (4e-7 in the same model): the blocked summation of Higham, ch. 4.
template <int K, bool kTwoLevel, class T>
__device__ __forceinline__ void add_At_B(float (&acc)[T::TM][T::TN], const float* A, int lda, const float* B, int ldb,
                                         const T& t) {
  if constexpr (kTwoLevel) {
    float part[T::TM][T::TN] = {};
    acc_At_B<K>(part, A, lda, B, ldb, t);
#pragma unroll
    for (int i = 0; i < T::TM; ++i)
#pragma unroll
      for (int j = 0; j < T::TN; ++j) acc[i][j] += part[i][j];
  } else {
    acc_At_B<K>(acc, A, lda, B, ldb, t);
  }
}

// The same for acc += A B (the deterministic dQ_i, a sum over all N keys).
template <bool kTwoLevel, class T>
__device__ __forceinline__ void add_A_B(float (&acc)[T::TM][T::TN], const float* A, int lda, const float* B, int ldb,
                                        const T& t, int K) {
  if constexpr (kTwoLevel) {
    float part[T::TM][T::TN] = {};
    acc_A_B<2>(part, A, lda, B, ldb, t, K);
#pragma unroll
    for (int i = 0; i < T::TM; ++i)
#pragma unroll
      for (int j = 0; j < T::TN; ++j) acc[i][j] += part[i][j];
  } else {
    acc_A_B<2>(acc, A, lda, B, ldb, t, K);
  }
}

// The recomputation, for the tile pair (Q_i, K_j) whose first query is i0 and first key j0:
//   S = Q_i K_j^T,  P_ij = exp(scale S - L_i),  dP = dO_i V_j^T,  dS_ij = P_ij * (dP - D_i).
// P needs no max and no sum: L_i already is the row's log-normaliser, so this is the
// forward's softmax exactly. Entries past N, and keys after the query when causal,
// get P = dS = 0 and so add nothing to any product below. Results go to shared
// memory (P_ij only if kStoreP) because the next products read them transposed.
template <class Cfg, bool kStoreP>
__device__ __forceinline__ void recompute_P_and_dS(const float* Q_i, const float* K_j, const float* dO_i,
                                                   const float* V_j, const float* L_i, const float* D_i, float* P_ij,
                                                   float* dS_ij, int i0, int j0, int N, bool causal,
                                                   float scale_log2e) {
  constexpr int d = Cfg::d;
  using Grid = WarpGrid<Cfg::B_r, Cfg::B_c, Cfg::kThreads>;
  const auto tile = Grid::tile();
  float S[Grid::TM][Grid::TN] = {}, dP[Grid::TM][Grid::TN] = {};
  acc_A_Bt<d, 2, false>(S, Q_i, Cfg::ld, K_j, Cfg::ld, tile);
  acc_A_Bt<d, 2, false>(dP, dO_i, Cfg::ld, V_j, Cfg::ld, tile);
#pragma unroll
  for (int a = 0; a < Grid::TM; ++a) {
    const int r = tile.row(a), query = i0 + r;
    const int last_key = query >= N ? -1 : causal ? query : N - 1;  // -1: a padding row sees no key
    const float L_r = L_i[r] * kLog2e, D_r = D_i[r];
#pragma unroll
    for (int b = 0; b < Grid::TN; ++b) {
      const int c = tile.col(b);
      // exp(scale S - L) in base 2, then masked by selecting 0: a masked p may be inf.
      const float p = exp2f(fmaf(S[a][b], scale_log2e, -L_r));
      const bool seen = j0 + c <= last_key;
      if constexpr (kStoreP) P_ij[r * Cfg::ld_s + c] = seen ? p : 0.0f;
      dS_ij[r * Cfg::ld_s + c] = seen ? p * (dP[a][b] - D_r) : 0.0f;
    }
  }
}

// D_i = rowsum(dO_i * O_i), one warp per row. On the atomic path it also zeroes
// dQ, which the blocks then accumulate into.
__global__ void preprocess_kernel(const float* O, const float* dO, float* D, float* dQ, std::size_t rows, int d) {
  const std::size_t row = std::size_t(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;  // the whole warp leaves together
  float sum = 0.0f;
  for (int k = lane; k < d; k += 32) {
    sum = fmaf(dO[row * d + k], O[row * d + k], sum);
    if (dQ) dQ[row * d + k] = 0.0f;
  }
  for (int o = 16; o > 0; o /= 2) sum += __shfl_xor_sync(0xffffffff, sum, o);
  if (lane == 0) D[row] = sum;
}

template <class Cfg>
constexpr int dk_dv_smem_bytes() {  // K_j, V_j, Q_i, dO_i, P_ij, dS_ij, L_i, D_i
  return 4 * ((2 * Cfg::B_c + 2 * Cfg::B_r) * Cfg::ld + 2 * Cfg::B_r * Cfg::ld_s + 2 * Cfg::B_r);
}
template <class Cfg>
constexpr int dq_smem_bytes() {  // Q_i, dO_i, two K_j, V_j, dS_ij, L_i, D_i
  return 4 * ((2 * Cfg::B_r + 3 * Cfg::B_c) * Cfg::ld + Cfg::B_r * Cfg::ld_s + 2 * Cfg::B_r);
}

// Grid: (B*H, T_c). Heads vary fastest, so the first blocks to run are every head's
// tile j = 0, which under a causal mask has the most Q tiles to visit.
template <class Cfg, bool kAtomicDq, bool kTwoLevel>
__global__ void __launch_bounds__(Cfg::kThreads, Cfg::kMinBlocks)
    dk_dv_kernel(const float* Q, const float* K, const float* V, const float* dO, const float* L, const float* D,
                 float* dQ, float* dK, float* dV, int N, bool causal, float scale, float scale_log2e) {
  constexpr int d = Cfg::d;
  constexpr int B_r = Cfg::B_r, B_c = Cfg::B_c, ld = Cfg::ld, ld_s = Cfg::ld_s, kThreads = Cfg::kThreads;
  extern __shared__ float4 smem[];
  float* K_j = reinterpret_cast<float*>(smem);  // [B_c][ld], loaded once
  float* V_j = K_j + B_c * ld;                  // [B_c][ld], loaded once
  float* Q_i = V_j + B_c * ld;                  // [B_r][ld], refilled every step
  float* dO_i = Q_i + B_r * ld;                 // [B_r][ld], refilled every step
  float* P_ij = dO_i + B_r * ld;                // [B_r][ld_s]
  float* dS_ij = P_ij + B_r * ld_s;             // [B_r][ld_s]
  float* L_i = dS_ij + B_r * ld_s;              // [B_r]
  float* D_i = L_i + B_r;                       // [B_r]

  const std::size_t head = blockIdx.x;
  const int j0 = blockIdx.y * B_c;
  const std::size_t offset = head * N * d;
  Q += offset, K += offset, V += offset, dO += offset, dQ += offset, dK += offset, dV += offset;
  L += head * N, D += head * N;

  // Causal: Q tiles that end before key j0 see nothing of K_j and are skipped.
  const int i_first = causal ? j0 / B_r : 0, steps = ceil_div(N, B_r) - i_first;
  // Without a mask every block of a head would add into dQ_0, then dQ_1, ... at the
  // same moment; starting each at its own tile spreads the atomics over dQ.
  // (Causal blocks already start at different tiles.)
  const int start = causal ? 0 : blockIdx.y % steps;
  auto q_tile_row0 = [&](int step) { return (i_first + (start + step) % steps) * B_r; };

  load_rows_async<B_c, d, kThreads>(K_j, K, j0, N);
  load_rows_async<B_c, d, kThreads>(V_j, V, j0, N);
  const int first0 = q_tile_row0(0);
  load_rows_async<B_r, d, kThreads>(Q_i, Q, first0, N);
  load_rows_async<B_r, d, kThreads>(dO_i, dO, first0, N);
  load_row_values_async<B_r>(L_i, L, first0, N);
  load_row_values_async<B_r>(D_i, D, first0, N);
  cp_async_wait_all();
  __syncthreads();

  using KV = WarpGrid<B_c, d, kThreads>;  // dK_j, dV_j: rows 4 r0 + i, float4 columns col(g)
  const auto kv = KV::tile();
  float dK_j[KV::TM][KV::TN] = {}, dV_j[KV::TM][KV::TN] = {};

  for (int step = 0; step < steps; ++step) {
    const int i0 = q_tile_row0(step);
    const bool more = step + 1 < steps;
    const int next0 = more ? q_tile_row0(step + 1) : 0;

    recompute_P_and_dS<Cfg, true>(Q_i, K_j, dO_i, V_j, L_i, D_i, P_ij, dS_ij, i0, j0, N, causal, scale_log2e);
    __syncthreads();

    add_At_B<B_r, kTwoLevel>(dV_j, P_ij, ld_s, dO_i, ld, kv);  // dV_j += P_ij^T dO_i
    __syncthreads();
    // dO_i, L_i, D_i have had their last reader: refill them for the next step
    // while this one finishes. The same for Q_i after dK_j.
    if (more) {
      load_rows_async<B_r, d, kThreads>(dO_i, dO, next0, N);
      load_row_values_async<B_r>(L_i, L, next0, N);
      load_row_values_async<B_r>(D_i, D, next0, N);
    }

    add_At_B<B_r, kTwoLevel>(dK_j, dS_ij, ld_s, Q_i, ld, kv);  // dK_j += dS_ij^T Q_i (times scale at the end)
    __syncthreads();
    if (more) load_rows_async<B_r, d, kThreads>(Q_i, Q, next0, N);

    if constexpr (kAtomicDq) {  // dQ_i += scale dS_ij K_j, added into global memory
      using RQ = WarpGrid<B_r, d, kThreads>;
      const auto rq = RQ::tile();
      float dQ_i[RQ::TM][RQ::TN] = {};
      acc_A_B<2>(dQ_i, dS_ij, ld_s, K_j, ld, rq, B_c);
      for_each_float4(dQ_i, rq, N - i0,
                      [&](int r, int c, float4 v) { atomic_add4(dQ + std::size_t(i0 + r) * d + c, scaled(scale, v)); });
    }
    cp_async_wait_all();
    __syncthreads();  // the refilled tiles are visible; P_ij and dS_ij may be overwritten
  }

#pragma unroll
  for (int i = 0; i < KV::TM; ++i) {
    const int c = j0 + 4 * kv.r0 + i;
    if (c >= N) continue;
#pragma unroll
    for (int g = 0; g < KV::TN / 4; ++g) {
      const std::size_t e = std::size_t(c) * d + 4 * kv.col(g);
      *reinterpret_cast<float4*>(dK + e) = make_float4(scale * dK_j[i][4 * g], scale * dK_j[i][4 * g + 1],
                                                       scale * dK_j[i][4 * g + 2], scale * dK_j[i][4 * g + 3]);
      *reinterpret_cast<float4*>(dV + e) =
          make_float4(dV_j[i][4 * g], dV_j[i][4 * g + 1], dV_j[i][4 * g + 2], dV_j[i][4 * g + 3]);
    }
  }
}

// The deterministic dQ: one block per (Q_i tile, head), looping over the K_j tiles
// in order. Grid (B*H, T_r); the last Q tiles, which see the most keys when causal,
// go first.
template <class Cfg, bool kTwoLevel>
__global__ void __launch_bounds__(Cfg::kThreads, Cfg::kMinBlocks)
    dq_kernel(const float* Q, const float* K, const float* V, const float* dO, const float* L, const float* D,
              float* dQ, int N, bool causal, float scale, float scale_log2e) {
  constexpr int d = Cfg::d;
  constexpr int B_r = Cfg::B_r, B_c = Cfg::B_c, ld = Cfg::ld, ld_s = Cfg::ld_s, kThreads = Cfg::kThreads;
  extern __shared__ float4 smem[];
  float* Q_i = reinterpret_cast<float*>(smem);  // [B_r][ld], loaded once
  float* dO_i = Q_i + B_r * ld;                 // [B_r][ld], loaded once
  float* K_buf = dO_i + B_r * ld;               // [2][B_c][ld]: K_j is read to the end of a step,
  float* V_j = K_buf + 2 * B_c * ld;            //   so K_j+1 goes to the other buffer; V_j: [B_c][ld]
  float* dS_ij = V_j + B_c * ld;                // [B_r][ld_s]
  float* L_i = dS_ij + B_r * ld_s;              // [B_r]
  float* D_i = L_i + B_r;                       // [B_r]

  const std::size_t head = blockIdx.x;
  const int i0 = (ceil_div(N, B_r) - 1 - static_cast<int>(blockIdx.y)) * B_r;
  const std::size_t offset = head * N * d;
  Q += offset, K += offset, V += offset, dO += offset, dQ += offset;
  L += head * N, D += head * N;

  // Causal: key tiles that start after the last query of Q_i are skipped.
  const int T_c = ceil_div(causal ? min(i0 + B_r, N) : N, B_c);

  load_rows_async<B_r, d, kThreads>(Q_i, Q, i0, N);
  load_rows_async<B_r, d, kThreads>(dO_i, dO, i0, N);
  load_row_values_async<B_r>(L_i, L, i0, N);
  load_row_values_async<B_r>(D_i, D, i0, N);
  load_rows_async<B_c, d, kThreads>(K_buf, K, 0, N);
  load_rows_async<B_c, d, kThreads>(V_j, V, 0, N);
  cp_async_wait_all();
  __syncthreads();

  using RQ = WarpGrid<B_r, d, kThreads>;
  const auto rq = RQ::tile();
  float dQ_i[RQ::TM][RQ::TN] = {};
  for (int j = 0; j < T_c; ++j) {
    const float* K_j = K_buf + (j % 2) * B_c * ld;
    const bool more = j + 1 < T_c;
    // The other buffer was last read in step j - 1, which ended with a barrier.
    if (more) load_rows_async<B_c, d, kThreads>(K_buf + ((j + 1) % 2) * B_c * ld, K, (j + 1) * B_c, N);

    recompute_P_and_dS<Cfg, false>(Q_i, K_j, dO_i, V_j, L_i, D_i, nullptr, dS_ij, i0, j * B_c, N, causal, scale_log2e);
    __syncthreads();
    if (more) load_rows_async<B_c, d, kThreads>(V_j, V, (j + 1) * B_c, N);  // V_j's last reader was dP

    add_A_B<kTwoLevel>(dQ_i, dS_ij, ld_s, K_j, ld, rq, B_c);  // dQ_i += dS_ij K_j (times scale at the end)
    cp_async_wait_all();
    __syncthreads();
  }

  for_each_float4(dQ_i, rq, N - i0,
                  [&](int r, int c, float4 v) { sts4(dQ + std::size_t(i0 + r) * d + c, scaled(scale, v)); });
}

template <class Cfg, bool kTwoLevel>
void launch(const ladder::AttentionShape& s, const float* Q, const float* K, const float* V, const float* O,
            const float* L, const float* dO, float* dQ, float* dK, float* dV, float* D, DqPath path,
            cudaStream_t stream) {
  constexpr int d = Cfg::d;
  const auto heads = static_cast<unsigned>(s.heads());
  const float scale = s.scale(), scale_log2e = scale * kLog2e;
  const bool atomic = path == DqPath::Atomic;
  const auto dk_dv = atomic ? dk_dv_kernel<Cfg, true, kTwoLevel> : dk_dv_kernel<Cfg, false, kTwoLevel>;
  ladder::allow_dynamic_smem(dk_dv, dk_dv_smem_bytes<Cfg>(), "fa2::backward dk_dv_kernel", true);
  if (!atomic)
    ladder::allow_dynamic_smem(dq_kernel<Cfg, kTwoLevel>, dq_smem_bytes<Cfg>(), "fa2::backward dq_kernel", true);

  constexpr unsigned kRowsPerBlock = 8;  // one warp per row
  preprocess_kernel<<<static_cast<unsigned>((s.rows() + kRowsPerBlock - 1) / kRowsPerBlock), 32 * kRowsPerBlock, 0,
                      stream>>>(O, dO, D, atomic ? dQ : nullptr, s.rows(), d);
  CUDA_CHECK_LAUNCH();
  dk_dv<<<dim3(heads, ceil_div(s.N, Cfg::B_c)), Cfg::kThreads, dk_dv_smem_bytes<Cfg>(), stream>>>(
      Q, K, V, dO, L, D, dQ, dK, dV, s.N, s.causal, scale, scale_log2e);
  CUDA_CHECK_LAUNCH();
  if (atomic) return;
  dq_kernel<Cfg, kTwoLevel><<<dim3(heads, ceil_div(s.N, Cfg::B_r)), Cfg::kThreads, dq_smem_bytes<Cfg>(), stream>>>(
      Q, K, V, dO, L, D, dQ, s.N, s.causal, scale, scale_log2e);
  CUDA_CHECK_LAUNCH();
}

// d's tiles in the order they are tried (BackwardConfig<d>, then the smaller ones), each
// handed to f as a value of its type.
template <class F>
void for_each_tiles(int d, F&& f) {
  if (d == 32) {
    f(BackwardConfig<32>{});
  } else if (d == 64) {
    f(BackwardConfig<64>{});
    f(HalfKeys<64>{});
  } else {
    f(BackwardConfig<128>{});
    f(HalfKeys<128>{});
    f(Quarter128{});
  }
}

// What a configuration needs: the larger of its two kernels' shared memory (the
// deterministic path runs both), so both paths run the same tiles on a GPU.
std::vector<ladder::Candidate> backward_tile_options(int d) {
  std::vector<ladder::Candidate> out;
  for_each_tiles(d, [&](auto c) {
    using Cfg = decltype(c);
    out.push_back({std::to_string(Cfg::B_r) + " x " + std::to_string(Cfg::B_c) + ", " + std::to_string(Cfg::kThreads) +
                       " threads",
                   static_cast<std::size_t>(std::max(dk_dv_smem_bytes<Cfg>(), dq_smem_bytes<Cfg>()))});
  });
  return out;
}

}  // namespace

BackwardTiles backward_tiles(const ladder::AttentionShape& s, std::size_t smem_per_block) {
  ladder::validate(s, kSupportedD);
  const std::vector<ladder::Candidate> options = backward_tile_options(s.d);
  const ladder::Fit fit = ladder::first_that_fits(options, smem_per_block);
  if (fit.index < 0)
    throw std::invalid_argument(
        ladder::none_fits(std::string(kWho) + " (d = " + std::to_string(s.d) + ")", options, smem_per_block));
  BackwardTiles t{};
  int k = 0;
  for_each_tiles(s.d, [&](auto c) {
    using Cfg = decltype(c);
    if (k++ == fit.index)
      t = {Cfg::B_r,
           Cfg::B_c,
           ceil_div(s.N, Cfg::B_r),
           ceil_div(s.N, Cfg::B_c),
           Cfg::kThreads,
           options[fit.index].smem_bytes,
           fit.index};
  });
  return t;
}

const char* name(Summation s) { return s == Summation::TwoLevel ? "two_level" : "running"; }

const char* name(DqPath p) {
  switch (p) {
    case DqPath::Atomic: return "atomic";
    case DqPath::Deterministic: return "deterministic";
  }
  return "?";
}

void backward(const ladder::AttentionShape& s, const float* Q, const float* K, const float* V, const float* O,
              const float* L, const float* dO, float* dQ, float* dK, float* dV, float* D, DqPath path, Summation sum,
              cudaStream_t stream) {
  const std::size_t limit = ladder::smem_per_block_for_models();
  const BackwardTiles t = backward_tiles(s, limit);  // validates the shape
  ladder::check_grid(kWho, s.heads(), t.T_c, 1);     // dk_dv_kernel's grid
  ladder::check_grid(kWho, s.heads(), t.T_r, 1);     // dq_kernel's
  // float4 loads and 16-byte atomics: every [B, H, N, d] tensor 16-byte aligned.
  ladder::check_pointers(kWho,
                         {{"Q", Q},
                          {"K", K},
                          {"V", V},
                          {"O", O},
                          {"dO", dO},
                          {"dQ", dQ},
                          {"dK", dK},
                          {"dV", dV},
                          {"L", L, 4},
                          {"D", D, 4}},
                         16);
  // The first tiles that fit this GPU; said once when they are not BackwardConfig<d>.
  if (t.index != 0)
    ladder::say_once(ladder::fallback_line(std::string(kWho) + " (d = " + std::to_string(s.d) + ")",
                                           backward_tile_options(s.d), 0, t.index, limit));
  int k = 0;
  for_each_tiles(s.d, [&](auto c) {
    using Cfg = decltype(c);
    if (k++ != t.index) return;
    if (sum == Summation::TwoLevel) return launch<Cfg, true>(s, Q, K, V, O, L, dO, dQ, dK, dV, D, path, stream);
    launch<Cfg, false>(s, Q, K, V, O, L, dO, dQ, dK, dV, D, path, stream);
  });
}

}  // namespace fa2
