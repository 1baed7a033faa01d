#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "cuda_check.h"
#include "matmul_tiled.h"

namespace tiled {

namespace {

// ---------------------------------------------------------------------------
// 1. Shared-memory tiling (PMPP 4th ed., chapter 5), TILE = 8, 16 or 32.
//
// The naive kernel loads 2K floats from global memory per element of C and uses
// each once. Here a block of TILE x TILE threads computes a TILE x TILE tile of C
// and walks K in steps of TILE: at each step it copies one TILE x TILE tile of A
// and one of B into shared memory (one element per thread, coalesced), and then
// every thread reads its row of the A tile and its column of the B tile from
// there. Each float fetched from global memory now serves TILE threads, so the
// global traffic falls by a factor of TILE.
//
// Any M, N, K: loads past the edge of A or B put 0 in the tile (adding nothing
// to any sum), and threads past the edge of C help load and reach every barrier,
// but store nothing. They must not return early: __syncthreads() waits for all.
// ---------------------------------------------------------------------------
template <int TILE>
__global__ void smem_tiled(int M, int N, int K, const float* A, const float* B, float* C) {
  __shared__ float A_tile[TILE][TILE];
  __shared__ float B_tile[TILE][TILE];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;

  float acc = 0.0f;
  for (int k0 = 0; k0 < K; k0 += TILE) {
    A_tile[ty][tx] = (row < M && k0 + tx < K) ? A[std::size_t(row) * K + k0 + tx] : 0.0f;
    B_tile[ty][tx] = (k0 + ty < K && col < N) ? B[std::size_t(k0 + ty) * N + col] : 0.0f;
    __syncthreads();  // both tiles complete before anyone reads them
#pragma unroll
    for (int k = 0; k < TILE; ++k) acc += A_tile[ty][k] * B_tile[k][tx];
    __syncthreads();  // everyone done reading before the next step overwrites them
  }
  if (row < M && col < N) C[std::size_t(row) * N + col] = acc;
}

// ---------------------------------------------------------------------------
// 2. Register tiling.
//
// With one element of C per thread, every multiply-add needs two loads from
// shared memory: the kernel above is bound by shared memory, not by the FMA units.
// The cure is the same idea one level down: a thread computes a TM x TN piece of
// C in registers. Per step k it loads TM values of A and TN of B and does TM * TN
// FMAs with them: 8 + 8 loads for 64 FMAs here, instead of 2 loads per FMA.
//
// The pieces, each there for a reason:
//  - Block tile BM x BN = 128 x 128 of C, 256 threads, K staged BK = 8 at a time.
//    A bigger tile means fewer global loads per FMA (each float of A serves 128
//    columns); 8 x 8 floats per thread is about what fits in registers.
//  - 16-byte loads (float4) everywhere: a quarter of the load instructions, and
//    instructions are the scarce resource once the FMAs have the issue slots.
//  - The A tile is stored transposed (A_tile[k][m]): then the 8 rows of A a thread
//    needs at step k are consecutive in shared memory and come in as two float4.
//  - Two shared-memory stages: the next K slice is fetched from global memory into
//    registers while the FMAs run on the current one, stored into the other stage,
//    and one barrier per step separates the two.
//  - Warp tiling: a warp's 32 threads cover a 32 x 64 piece of the block tile as a
//    4 x 8 grid of threads, each taking a 4 x 4 block at four places, 16 rows and
//    32 columns apart. So at each step a float4 read of the warp covers 16
//    consecutive m (64 bytes) or 32 consecutive n (128 bytes): no bank conflicts,
//    and each float4 goes to several threads at once (a broadcast).
// ---------------------------------------------------------------------------
constexpr int BM = 128, BN = 128, BK = 8;  // block tile of C; the slice of K staged per step
constexpr int TM = 8, TN = 8;              // each thread's piece of C, held in registers
constexpr int kThreads = (BM / TM) * (BN / TN);
constexpr int kLanesM = 4, kLanesN = 8;                    // a warp as a 4 x 8 grid of threads
constexpr int WM = 2 * 4 * kLanesM, WN = 2 * 4 * kLanesN;  // the warp's 32 x 64 piece of C
constexpr int kWarpsN = BN / WN;
// A_tile rows are padded from 128 to 132 floats so that the transposed store
// (threads 2i and 2i+1 write the same m at k and k + 4) hits different banks;
// 132 floats is still a multiple of 16 bytes, so float4 reads stay aligned.
constexpr int kPadA = 4;

static_assert(kThreads == 256 && kLanesM * kLanesN == 32 && (BM / WM) * (BN / WN) * 32 == kThreads);
static_assert(BM * BK == 4 * kThreads && BK * BN == 4 * kThreads, "each thread copies one float4 of each tile");
static_assert(TM == 8 && TN == 8, "a thread's piece is two float4 of A times two float4 of B");

// Four consecutive elements X[r, c..c+3] of a rows x cols row-major matrix, 0
// past its edges. Scalar loads: no assumption about alignment.
__device__ float4 load4_guarded(const float* X, int r, int c, int rows, int cols) {
  float v[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) v[i] = (r < rows && c + i < cols) ? X[std::size_t(r) * cols + c + i] : 0.0f;
  return make_float4(v[0], v[1], v[2], v[3]);
}

// Stores the elements of v that fall inside the rows x cols matrix X at [r, c..c+3].
__device__ void store4_guarded(float* X, int r, int c, int rows, int cols, float4 v) {
  if (r >= rows) return;
  const float w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int i = 0; i < 4; ++i)
    if (c + i < cols) X[std::size_t(r) * cols + c + i] = w[i];
}

// kGuarded = false: the fast path (whole tiles, aligned); true: any M, N, K.
// __launch_bounds__(256, 2): at most 128 registers per thread, so two blocks
// (16 warps) fit on one SM and one can compute while the other waits at a barrier.
template <bool kGuarded>
__global__ void __launch_bounds__(kThreads, 2) register_tiled(int M, int N, int K, const float* __restrict__ A,
                                                              const float* __restrict__ B, float* __restrict__ C) {
  __shared__ __align__(16) float A_tile[2][BK][BM + kPadA];  // transposed: A_tile[stage][k][m]
  __shared__ __align__(16) float B_tile[2][BK][BN];          // B_tile[stage][k][n]

  const int tid = threadIdx.x;
  const int m_block = blockIdx.y * BM, n_block = blockIdx.x * BN;

  // The float4 of each K slice this thread copies: A[a_m, a_k..a_k+3] and
  // B[b_k, b_n..b_n+3], relative to the tile's corner. A warp's loads of B cover
  // 512 consecutive bytes; of A, 16 rows x 32 bytes, whole 32-byte sectors.
  const int a_m = tid / (BK / 4), a_k = tid % (BK / 4) * 4;
  const int b_k = tid / (BN / 4), b_n = tid % (BN / 4) * 4;

  // This thread's piece of C: rows m0 + {0..3} and m0 + WM/2 + {0..3}, columns
  // n0 + {0..3} and n0 + WN/2 + {0..3} of the block tile. The lane bits are dealt
  // out so that lanes i and i^1 share m (the same float4 of A) and lanes i and i^2
  // share n (the same float4 of B): pairs the hardware can merge into one read
  // (sm_70 to sm_90), which can halve the shared-memory cycles per load.
  const int warp = tid / 32, lane = tid % 32;
  const int lane_m = (lane >> 1) & 3;                // lane bits 1, 2
  const int lane_n = (lane & 1) | (lane >> 3) << 1;  // lane bits 0, 3, 4
  const int m0 = warp / kWarpsN * WM + lane_m * 4;
  const int n0 = warp % kWarpsN * WN + lane_n * 4;

  float4 a_next, b_next;  // the next K slice, on its way from global memory
  auto load_slice = [&](int k0) {
    if constexpr (kGuarded) {
      a_next = load4_guarded(A, m_block + a_m, k0 + a_k, M, K);
      b_next = load4_guarded(B, k0 + b_k, n_block + b_n, K, N);
    } else {
      a_next = *reinterpret_cast<const float4*>(A + std::size_t(m_block + a_m) * K + k0 + a_k);
      b_next = *reinterpret_cast<const float4*>(B + std::size_t(k0 + b_k) * N + n_block + b_n);
    }
  };
  auto store_slice = [&](int stage) {
    A_tile[stage][a_k + 0][a_m] = a_next.x;
    A_tile[stage][a_k + 1][a_m] = a_next.y;
    A_tile[stage][a_k + 2][a_m] = a_next.z;
    A_tile[stage][a_k + 3][a_m] = a_next.w;
    *reinterpret_cast<float4*>(&B_tile[stage][b_k][b_n]) = b_next;
  };

  float acc[TM][TN] = {};
  const int steps = (K + BK - 1) / BK;
  load_slice(0);
  store_slice(0);
  __syncthreads();
  for (int step = 0; step < steps; ++step) {
    const int stage = step % 2;
    const bool more = step + 1 < steps;
    if (more) load_slice((step + 1) * BK);  // global loads in flight during the FMAs below

#pragma unroll
    for (int k = 0; k < BK; ++k) {
      const float4 a_lo = *reinterpret_cast<const float4*>(&A_tile[stage][k][m0]);
      const float4 a_hi = *reinterpret_cast<const float4*>(&A_tile[stage][k][m0 + WM / 2]);
      const float4 b_lo = *reinterpret_cast<const float4*>(&B_tile[stage][k][n0]);
      const float4 b_hi = *reinterpret_cast<const float4*>(&B_tile[stage][k][n0 + WN / 2]);
      const float a[TM] = {a_lo.x, a_lo.y, a_lo.z, a_lo.w, a_hi.x, a_hi.y, a_hi.z, a_hi.w};
      const float b[TN] = {b_lo.x, b_lo.y, b_lo.z, b_lo.w, b_hi.x, b_hi.y, b_hi.z, b_hi.w};
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }

    if (more) {
      // The other stage was last read in the previous step, and every thread has
      // passed the barrier that ended it, so it is free to overwrite.
      store_slice(stage ^ 1);
      __syncthreads();
    }
  }

  // Row i of the piece is block-tile row m0 + i for i < 4, m0 + WM/2 + (i - 4)
  // after; columns likewise. Each float4 store of a warp writes 4 rows x 128
  // consecutive bytes.
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int m = m_block + m0 + i % 4 + i / 4 * (WM / 2);
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int n = n_block + n0 + h * (WN / 2);
      const float4 v = make_float4(acc[i][4 * h], acc[i][4 * h + 1], acc[i][4 * h + 2], acc[i][4 * h + 3]);
      if constexpr (kGuarded)
        store4_guarded(C, m, n, M, N, v);
      else
        *reinterpret_cast<float4*>(C + std::size_t(m) * N + n) = v;
    }
  }
}

void check_shape(int M, int N, int K) {
  if (M < 1 || N < 1 || K < 1)
    throw std::invalid_argument("matmul: M, N and K must all be >= 1, got M=" + std::to_string(M) +
                                " N=" + std::to_string(N) + " K=" + std::to_string(K));
}

bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

}  // namespace

const char* name(Kernel k) {
  switch (k) {
    case Kernel::SmemTiled8: return "smem_tiled_8";
    case Kernel::SmemTiled16: return "smem_tiled_16";
    case Kernel::SmemTiled32: return "smem_tiled_32";
    case Kernel::RegisterTiled: return "register_tiled";
  }
  return "?";
}

Launch launch_config(Kernel k, int M, int N) {
  check_shape(M, N, 1);
  auto tiles_of = [](int tile_m, int tile_n, dim3 block) { return Launch{dim3(), block, tile_m, tile_n}; };
  Launch l{};
  switch (k) {
    case Kernel::SmemTiled8: l = tiles_of(8, 8, dim3(8, 8)); break;
    case Kernel::SmemTiled16: l = tiles_of(16, 16, dim3(16, 16)); break;
    case Kernel::SmemTiled32: l = tiles_of(32, 32, dim3(32, 32)); break;
    case Kernel::RegisterTiled: l = tiles_of(BM, BN, dim3(kThreads)); break;
  }
  const long long tiles_m = (M + l.tile_m - 1LL) / l.tile_m, tiles_n = (N + l.tile_n - 1LL) / l.tile_n;
  constexpr long long kMaxGridY = 65535;
  if (tiles_m > kMaxGridY)
    throw std::invalid_argument(std::string(name(k)) + ": M must be <= " + std::to_string(kMaxGridY * l.tile_m) +
                                " (gridDim.y <= 65535), got " + std::to_string(M));
  l.grid = dim3(static_cast<unsigned>(tiles_n), static_cast<unsigned>(tiles_m));
  return l;
}

bool register_tiled_fast_path(int M, int N, int K, const void* A, const void* B, const void* C) {
  return M % BM == 0 && N % BN == 0 && K % BK == 0 && aligned16(A) && aligned16(B) && aligned16(C);
}

void matmul(Kernel k, int M, int N, int K, const float* A, const float* B, float* C, cudaStream_t stream) {
  check_shape(M, N, K);
  const Launch l = launch_config(k, M, N);
  switch (k) {
    case Kernel::SmemTiled8: smem_tiled<8><<<l.grid, l.block, 0, stream>>>(M, N, K, A, B, C); break;
    case Kernel::SmemTiled16: smem_tiled<16><<<l.grid, l.block, 0, stream>>>(M, N, K, A, B, C); break;
    case Kernel::SmemTiled32: smem_tiled<32><<<l.grid, l.block, 0, stream>>>(M, N, K, A, B, C); break;
    case Kernel::RegisterTiled:
      if (register_tiled_fast_path(M, N, K, A, B, C))
        register_tiled<false><<<l.grid, l.block, 0, stream>>>(M, N, K, A, B, C);
      else
        register_tiled<true><<<l.grid, l.block, 0, stream>>>(M, N, K, A, B, C);
      break;
  }
  CUDA_CHECK_LAUNCH();
}

}  // namespace tiled
