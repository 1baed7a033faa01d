// Chapter 09, steps 1-4: the tensor core through mma.sync (sm_80 and later), and the
// checks and dispatch of every step. Steps 5-6 are in tc_matmul_hopper.cu (sm_90a).
//
// All four kernels here share one shape: a CTA of 8 warps computes a 128 x 256 tile of
// C, each warp a 64 x 64 piece of it (2 x 4 warps), walking K in slices of 64. Per
// slice the CTA copies a 128 x 64 tile of A and a 256 x 64 tile of Bt into shared
// memory (load_tile, tc_common.cuh), and each warp multiplies its rows of the A tile
// with its rows of the Bt tile. What changes from step to step is only how.
#include <mma.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "cuda_check.h"
#include "device.h"
#include "fit.h"
#include "launch.h"
#include "mma.cuh"
#include "tc_common.cuh"
#include "tc_hopper.h"
#include "tc_layout.h"
#include "tc_matmul.h"

namespace tcmm {

namespace {

using bf16_t = __nv_bfloat16;

// A CTA's tiling: BM x BN tile of C, WARPS_M x WARPS_N warps, STAGES shared-memory
// buffers of (BM + BN) x 64 bf16; MIN_BLOCKS CTAs per SM for __launch_bounds__.
template <int BM_, int BN_, int WARPS_M, int WARPS_N, int STAGES, int MIN_BLOCKS = 1>
struct Cfg {
  static constexpr int BM = BM_, BN = BN_, kStages = STAGES, kMinBlocks = MIN_BLOCKS;
  static constexpr int kWarpsN = WARPS_N, kThreads = 32 * WARPS_M * WARPS_N;
  static constexpr int WM = BM / WARPS_M, WN = BN / WARPS_N;  // one warp's piece of C
  static constexpr int MI = WM / 16, NJ = WN / 8;             // its m16 x n8 mma tiles
  static constexpr int kStageBytes = (BM + BN) * BK * 2;
  static constexpr int kSmemBytes = kStages * kStageBytes;
  static_assert(WM % 16 == 0 && WN % 16 == 0, "ldmatrix.x4 loads B for two n8 tiles at a time");
};
using Steps1to3 = Cfg<128, 256, 2, 4, 1>;    // one stage: load, wait, compute
using Step4 = Cfg<128, 256, 2, 4, 3>;        // three stages in flight
using Step4Fits99 = Cfg<128, 256, 2, 4, 2>;  // two: what a GPU with 99 KiB per block runs

// ---------------------------------------------------------------------------------------
// 1. WMMA: the tensor core as a C++ API.
//
// nvcuda::wmma hides which thread holds which element: a warp loads 16 x 16 "fragments"
// of A and B from shared memory (load_matrix_sync), multiplies them into a 16 x 16 fp32
// accumulator fragment (mma_sync), and stores that (store_matrix_sync). Bt [n][k] in
// shared memory is B in column-major order, which wmma reads as `col_major` matrix_b.
// The tiles are stored plainly (row r at r * 128 bytes). Because the accumulator layout
// is opaque, C is written with store_matrix_sync: straight to global memory when the
// 16 x 16 block lies inside C (and C's rows are 16-byte multiples), through a small
// shared-memory scratch otherwise, whence the lanes copy only the elements inside C.
// ---------------------------------------------------------------------------------------
template <class Cfg, bool kGuarded>
__global__ void __launch_bounds__(Cfg::kThreads, Cfg::kMinBlocks) wmma_kernel(Params p) {
  namespace wmma = nvcuda::wmma;
  extern __shared__ __align__(128) unsigned char smem[];
  unsigned char* sA = smem;
  unsigned char* sB = smem + Cfg::BM * BK * 2;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int m_tile = blockIdx.y * Cfg::BM, n_tile = blockIdx.x * Cfg::BN;
  const int wm = warp / Cfg::kWarpsN * Cfg::WM, wn = warp % Cfg::kWarpsN * Cfg::WN;  // the warp's piece
  constexpr int FM = Cfg::WM / 16, FN = Cfg::WN / 16;

  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[FM][FN];
#pragma unroll
  for (int i = 0; i < FM; ++i)
#pragma unroll
    for (int j = 0; j < FN; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

  for (int k0 = 0; k0 < p.K; k0 += BK) {
    load_tile<Cfg::BM, Cfg::kThreads, false, kGuarded>(sA, p.A, p.M, p.K, m_tile, k0, threadIdx.x);
    load_tile<Cfg::BN, Cfg::kThreads, false, kGuarded>(sB, p.Bt, p.N, p.K, n_tile, k0, threadIdx.x);
    tc::cp_async_commit();
    tc::cp_async_wait<0>();
    __syncthreads();  // the whole tile is in shared memory
#pragma unroll
    for (int kk = 0; kk < BK; kk += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16_t, wmma::row_major> a[FM];
      wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16_t, wmma::col_major> b[FN];
#pragma unroll
      for (int i = 0; i < FM; ++i)
        wmma::load_matrix_sync(a[i], reinterpret_cast<const bf16_t*>(sA) + (wm + 16 * i) * BK + kk, BK);
#pragma unroll
      for (int j = 0; j < FN; ++j)
        wmma::load_matrix_sync(b[j], reinterpret_cast<const bf16_t*>(sB) + (wn + 16 * j) * BK + kk, BK);
#pragma unroll
      for (int i = 0; i < FM; ++i)
#pragma unroll
        for (int j = 0; j < FN; ++j) wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
    }
    __syncthreads();  // everyone is done with the tile before it is overwritten
  }

  // store_matrix_sync needs a 32-byte-aligned pointer and rows a multiple of 16 bytes.
  const bool direct = p.N % 4 == 0 && reinterpret_cast<std::uintptr_t>(p.C) % 32 == 0;
  float* scratch = reinterpret_cast<float*>(smem) + warp * 256;  // 16 x 16 floats per warp; the tiles are free now
#pragma unroll
  for (int i = 0; i < FM; ++i)
#pragma unroll
    for (int j = 0; j < FN; ++j) {
      const int row0 = m_tile + wm + 16 * i, col0 = n_tile + wn + 16 * j;
      if (direct && row0 + 16 <= p.M && col0 + 16 <= p.N) {
        wmma::store_matrix_sync(p.C + std::size_t(row0) * p.N + col0, acc[i][j], p.N, wmma::mem_row_major);
      } else {
        wmma::store_matrix_sync(scratch, acc[i][j], 16, wmma::mem_row_major);
        __syncwarp();
        for (int e = lane; e < 256; e += 32) {
          const int row = row0 + e / 16, col = col0 + e % 16;
          if (row < p.M && col < p.N) p.C[std::size_t(row) * p.N + col] = scratch[e];
        }
        __syncwarp();
      }
    }
}

// ---------------------------------------------------------------------------------------
// The mma.sync machinery of steps 2-4.
//
// Per 16-wide k step a warp holds, for each of its MI m16 tiles, an A fragment (4
// registers: ldmatrix.x4 of a 16 x 16 block), and for each of its NJ n8 tiles a B
// fragment (2 registers; one ldmatrix.x4 covers two n8 tiles), and issues MI x NJ
// mma.sync.m16n8k16. The lane -> row address mappings are tc_layout.h's (ldsm_a_*,
// ldsm_b_*); the CPU tests prove they deliver mma's fragments.
// ---------------------------------------------------------------------------------------
template <class Cfg>
struct Acc {
  float v[Cfg::MI][Cfg::NJ][4];
};
// One k16 slice of the warp's operands, as mma wants them.
template <class Cfg>
struct Frags {
  std::uint32_t a[Cfg::MI][4], b[Cfg::NJ][2];
};

// ldmatrix.x4 of the k16 slice at column kk of the A and Bt tiles (shared-memory
// addresses sA, sB) for the warp's piece at rows wm (of A) and wn (of Bt).
template <class Cfg, bool kSwizzle>
__device__ __forceinline__ void load_fragments(Frags<Cfg>& f, std::uint32_t sA, std::uint32_t sB, int wm, int wn,
                                               int kk, int lane) {
  namespace L = tc::layout;
#pragma unroll
  for (int i = 0; i < Cfg::MI; ++i)
    tc::ldmatrix_x4(f.a[i], sA + tile_offset<kSwizzle>(wm + 16 * i + L::ldsm_a_row(lane), kk + L::ldsm_a_col(lane)));
#pragma unroll
  for (int j = 0; j < Cfg::NJ; j += 2) {
    std::uint32_t r[4];
    tc::ldmatrix_x4(r, sB + tile_offset<kSwizzle>(wn + 8 * j + L::ldsm_b_row(lane), kk + L::ldsm_b_col(lane)));
    f.b[j][0] = r[0], f.b[j][1] = r[1], f.b[j + 1][0] = r[2], f.b[j + 1][1] = r[3];
  }
}

// MI x NJ mma.sync on one k16 slice. Serpentine order: consecutive mma share their A
// registers along a row and their B registers at the turn, so the operand reuse cache,
// not the register file, serves one of the two inputs.
template <class Cfg>
__device__ __forceinline__ void mma_fragments(Acc<Cfg>& acc, const Frags<Cfg>& f) {
#pragma unroll
  for (int i = 0; i < Cfg::MI; ++i)
#pragma unroll
    for (int jj = 0; jj < Cfg::NJ; ++jj) {
      const int j = i % 2 ? Cfg::NJ - 1 - jj : jj;
      tc::mma_m16n8k16_bf16(acc.v[i][j], f.a[i], f.b[j]);
    }
}

// One 64-wide K slice, k16 by k16: load, multiply.
template <class Cfg, bool kSwizzle>
__device__ __forceinline__ void warp_mma_k64(Acc<Cfg>& acc, std::uint32_t sA, std::uint32_t sB, int wm, int wn,
                                             int lane) {
#pragma unroll
  for (int kk = 0; kk < BK; kk += 16) {
    Frags<Cfg> f;
    load_fragments<Cfg, kSwizzle>(f, sA, sB, wm, wn, kk, lane);
    mma_fragments<Cfg>(acc, f);
  }
}

// The accumulators to C: lane holds rows g, g + 8 and columns 2t, 2t + 1 of each m16 x n8
// tile (tc_layout.h: mma_c), stored as pairs.
template <class Cfg>
__device__ __forceinline__ void store_acc(const Params& p, const Acc<Cfg>& acc, int row0, int col0, int lane) {
#pragma unroll
  for (int i = 0; i < Cfg::MI; ++i)
#pragma unroll
    for (int j = 0; j < Cfg::NJ; ++j)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const tc::layout::Coord c = tc::layout::mma_c(lane, 2 * h);
        store_pair(p, row0 + 16 * i + c.row, col0 + 8 * j + c.col, acc.v[i][j][2 * h], acc.v[i][j][2 * h + 1]);
      }
}

// ---------------------------------------------------------------------------------------
// 2. mma.sync + ldmatrix (kSwizzle = false), 3. the same, swizzled (kSwizzle = true).
//
// The same loop as step 1 with the fragments in our hands: ldmatrix.x4 gives each lane
// exactly the registers mma.sync.m16n8k16 wants, and the accumulators' layout is known,
// so C is stored straight from registers. Step 2 keeps the plain layout, whose ldmatrix
// reads are 8-way bank conflicts (every row of an 8 x 8 matrix starts in bank 0 + 4c);
// step 3 XORs the 16-byte chunk index with row % 8, and the conflicts are gone.
// ---------------------------------------------------------------------------------------
template <class Cfg, bool kSwizzle, bool kGuarded>
__global__ void __launch_bounds__(Cfg::kThreads, Cfg::kMinBlocks) mma_single_stage(Params p) {
  extern __shared__ __align__(128) unsigned char smem[];
  unsigned char* sA = smem;
  unsigned char* sB = smem + Cfg::BM * BK * 2;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int m_tile = blockIdx.y * Cfg::BM, n_tile = blockIdx.x * Cfg::BN;
  const int wm = warp / Cfg::kWarpsN * Cfg::WM, wn = warp % Cfg::kWarpsN * Cfg::WN;

  Acc<Cfg> acc = {};
  for (int k0 = 0; k0 < p.K; k0 += BK) {
    load_tile<Cfg::BM, Cfg::kThreads, kSwizzle, kGuarded>(sA, p.A, p.M, p.K, m_tile, k0, threadIdx.x);
    load_tile<Cfg::BN, Cfg::kThreads, kSwizzle, kGuarded>(sB, p.Bt, p.N, p.K, n_tile, k0, threadIdx.x);
    tc::cp_async_commit();
    tc::cp_async_wait<0>();
    __syncthreads();  // the whole tile is in shared memory
    warp_mma_k64<Cfg, kSwizzle>(acc, tc::smem_addr(sA), tc::smem_addr(sB), wm, wn, lane);
    __syncthreads();  // everyone is done with the tile before it is overwritten
  }
  store_acc<Cfg>(p, acc, m_tile + wm, n_tile + wn, lane);
}

// ---------------------------------------------------------------------------------------
// 4. A pipeline, at both levels of the memory hierarchy.
//
// Steps 2 and 3 wait for every tile: copy, wait, compute, and the tensor cores idle
// while the copies travel. Here the copies run ahead, twice over:
//  - global -> shared: kStages shared-memory buffers, kStages - 1 tiles always in
//    flight (cp.async commit groups: "group n = tile n"). While the warps compute on
//    tile kt, the copies of tiles kt + 1 .. kt + kStages - 1 travel.
//  - shared -> registers: two sets of fragments. While the mma.sync of one k16 slice
//    run, ldmatrix fetches the next slice, the first slice of the next tile included.
// One __syncthreads per tile, placed before the last k16 slice's mma (whose fragments
// are already in registers): after it, tile kt + 1 has landed for everyone
// (cp.async.wait_group kStages - 2, then the barrier), and every warp has finished its
// ldmatrix of tile kt, so the next iteration may start overwriting tile kt's buffer.
// The tensor pipe always has one slice of mma queued across the barrier.
// ---------------------------------------------------------------------------------------
template <class Cfg, bool kGuarded>
__global__ void __launch_bounds__(Cfg::kThreads, Cfg::kMinBlocks) mma_pipeline(Params p) {
  extern __shared__ __align__(128) unsigned char smem[];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int m_tile = blockIdx.y * Cfg::BM, n_tile = blockIdx.x * Cfg::BN;
  const int wm = warp / Cfg::kWarpsN * Cfg::WM, wn = warp % Cfg::kWarpsN * Cfg::WN;
  const int k_tiles = ceil_div(p.K, BK);
  auto stage_a = [&](int kt) { return smem + kt % Cfg::kStages * Cfg::kStageBytes; };
  auto stage_b = [&](int kt) { return smem + kt % Cfg::kStages * Cfg::kStageBytes + Cfg::BM * BK * 2; };
  auto load_tiles = [&](int kt) {
    if (kt < k_tiles) {
      load_tile<Cfg::BM, Cfg::kThreads, true, kGuarded>(stage_a(kt), p.A, p.M, p.K, m_tile, kt * BK, threadIdx.x);
      load_tile<Cfg::BN, Cfg::kThreads, true, kGuarded>(stage_b(kt), p.Bt, p.N, p.K, n_tile, kt * BK, threadIdx.x);
    }
    tc::cp_async_commit();  // even when empty: the wait counts below count groups
  };
  auto load_frags = [&](Frags<Cfg>& f, int kt, int kk) {
    load_fragments<Cfg, true>(f, tc::smem_addr(stage_a(kt)), tc::smem_addr(stage_b(kt)), wm, wn, kk, lane);
  };

#pragma unroll
  for (int kt = 0; kt < Cfg::kStages - 1; ++kt) load_tiles(kt);
  tc::cp_async_wait<Cfg::kStages - 2>();  // tile 0 has landed
  __syncthreads();

  Acc<Cfg> acc = {};
  Frags<Cfg> f[2];
  load_frags(f[0], 0, 0);
  for (int kt = 0; kt < k_tiles; ++kt) {
    load_tiles(kt + Cfg::kStages - 1);  // into tile kt - 1's buffer: every warp is done with it
#pragma unroll
    for (int kk = 0; kk < BK / 16; ++kk) {
      if (kk < BK / 16 - 1) {
        load_frags(f[(kk + 1) % 2], kt, 16 * (kk + 1));
      } else {
        tc::cp_async_wait<Cfg::kStages - 2>();  // this thread's copies of tile kt + 1 have landed
        __syncthreads();                        // everyone's have, and everyone is done reading tile kt
        if (kt + 1 < k_tiles) load_frags(f[0], kt + 1, 0);
      }
      mma_fragments<Cfg>(acc, f[kk % 2]);
    }
  }
  tc::cp_async_wait<0>();  // no copy outlives the CTA (only empty groups remain, but say so)
  store_acc<Cfg>(p, acc, m_tile + wm, n_tile + wn, lane);
}

// ---------------------------------------------------------------------------------------
// Host side.
// ---------------------------------------------------------------------------------------
bool aligned(const void* p, std::uintptr_t n) { return reinterpret_cast<std::uintptr_t>(p) % n == 0; }

template <class Cfg>
dim3 grid_of(int M, int N) {
  return dim3(static_cast<unsigned>(ceil_div(N, Cfg::BN)), static_cast<unsigned>(ceil_div(M, Cfg::BM)));
}

template <class Cfg, bool kGuarded>
void launch_wmma(const Params& p, cudaStream_t stream) {
  ladder::allow_dynamic_smem(wmma_kernel<Cfg, kGuarded>, Cfg::kSmemBytes, "wmma_kernel");
  wmma_kernel<Cfg, kGuarded><<<grid_of<Cfg>(p.M, p.N), Cfg::kThreads, Cfg::kSmemBytes, stream>>>(p);
}
template <class Cfg, bool kSwizzle, bool kGuarded>
void launch_single(const Params& p, cudaStream_t stream) {
  ladder::allow_dynamic_smem(mma_single_stage<Cfg, kSwizzle, kGuarded>, Cfg::kSmemBytes, "mma_single_stage");
  mma_single_stage<Cfg, kSwizzle, kGuarded><<<grid_of<Cfg>(p.M, p.N), Cfg::kThreads, Cfg::kSmemBytes, stream>>>(p);
}
template <class Cfg, bool kGuarded>
void launch_pipeline(const Params& p, cudaStream_t stream) {
  ladder::allow_dynamic_smem(mma_pipeline<Cfg, kGuarded>, Cfg::kSmemBytes, "mma_pipeline");
  mma_pipeline<Cfg, kGuarded><<<grid_of<Cfg>(p.M, p.N), Cfg::kThreads, Cfg::kSmemBytes, stream>>>(p);
}
template <class Cfg>
void launch_pipeline(const Params& p, bool fast, cudaStream_t stream) {
  fast ? launch_pipeline<Cfg, false>(p, stream) : launch_pipeline<Cfg, true>(p, stream);
}

template <class Cfg>
Tiling tiling_of(int stages_override = 0) {
  return {Cfg::BM,
          Cfg::BN,
          BK,
          Cfg::kThreads,
          stages_override ? stages_override : Cfg::kStages,
          1,
          std::size_t(Cfg::kSmemBytes)};
}

// Step 4's tiles in the order they are tried, and the index this GPU runs (said once when
// it is not the first; refused, naming what each needs, when none fits).
std::vector<ladder::Candidate> pipeline_options() {
  return {{"3 stages", std::size_t(Step4::kSmemBytes)}, {"2 stages", std::size_t(Step4Fits99::kSmemBytes)}};
}
int pipeline_fits() { return ladder::choose("mma_pipeline", pipeline_options()); }

hopper::Kernel hopper_kernel(Variant v) {
  switch (v) {
    case Variant::WgmmaTma: return hopper::Kernel::Tma;
    case Variant::WgmmaWs: return hopper::Kernel::Ws;
    case Variant::WgmmaPersistent: return hopper::Kernel::Persistent;
    case Variant::WgmmaCluster: return hopper::Kernel::Cluster;
    default: throw std::logic_error("hopper_kernel: not a Hopper step");
  }
}

std::string sm_of(const ladder::DeviceInfo& d) { return "sm_" + std::to_string(d.cc_major * 10 + d.cc_minor); }

// The device checks of matmul(): after validate(), before any launch.
void check_device(Variant v, const Tiling& t) {
  const std::string reason = unavailable_reason(v);
  if (!reason.empty()) throw std::invalid_argument(reason);
  const ladder::DeviceInfo& d = ladder::device();
  if (d.smem_per_block_optin < t.smem_bytes)
    throw std::invalid_argument(std::string(name(v)) + " needs " + std::to_string(t.smem_bytes) +
                                " bytes of shared memory per block; " + d.name + " allows " +
                                std::to_string(d.smem_per_block_optin));
}

Params params_of(int M, int N, int K, const bf16* A, const bf16* Bt, float* C, int group_m = 8) {
  return {M,
          N,
          K,
          reinterpret_cast<const bf16_t*>(A),
          reinterpret_cast<const bf16_t*>(Bt),
          C,
          N % 2 == 0 && aligned(C, 8),
          group_m};
}

}  // namespace

const char* name(Variant v) {
  switch (v) {
    case Variant::Wmma: return "wmma";
    case Variant::MmaLdmatrix: return "mma_ldmatrix";
    case Variant::MmaSwizzle: return "mma_swizzle";
    case Variant::MmaPipeline: return "mma_pipeline";
    case Variant::WgmmaTma: return "wgmma_tma";
    case Variant::WgmmaWs: return "wgmma_ws";
    case Variant::WgmmaPersistent: return "wgmma_persistent";
    case Variant::WgmmaCluster: return "wgmma_cluster";
  }
  return "?";
}

const char* idea(Variant v) {
  switch (v) {
    case Variant::Wmma: return "WMMA 16x16x16 fragments: the tensor core as an API";
    case Variant::MmaLdmatrix: return "mma.sync.m16n8k16 + ldmatrix: the fragments in our hands";
    case Variant::MmaSwizzle: return "128-byte XOR swizzle: ldmatrix without bank conflicts";
    case Variant::MmaPipeline: return "cp.async stages + double-buffered fragments: copies overlap the MMAs";
    case Variant::WgmmaTma: return "TMA + mbarrier + wgmma from shared memory";
    case Variant::WgmmaWs: return "warp specialisation: TMA producer, 2 consumers, 128x256, setmaxnreg";
    case Variant::WgmmaPersistent: return "persistent CTAs: next tile's loads overlap this one's stores";
    case Variant::WgmmaCluster: return "2-CTA clusters, B multicast by TMA";
  }
  return "?";
}

bool needs_sm90a(Variant v) {
  return v == Variant::WgmmaTma || v == Variant::WgmmaWs || v == Variant::WgmmaPersistent || v == Variant::WgmmaCluster;
}

std::string unavailable_reason(Variant v) {
  const ladder::DeviceInfo& d = ladder::device();
  if (!d.available) return "no CUDA device (" + d.reason + ")";
  const std::string device = "device 0 is " + sm_of(d) + " (" + d.name + ")";
  if (needs_sm90a(v)) return tc::sm90a_unavailable_reason(std::string(name(v)) + " needs", hopper::sm90a_kernel());
  if (d.cc_major < 8)
    return std::string(name(v)) + " needs compute capability 8.0 or newer (bf16 mma.sync, ldmatrix, cp.async); " +
           device;
  return "";
}

Tiling tiling(Variant v) {
  switch (v) {
    case Variant::Wmma:
    case Variant::MmaLdmatrix:
    case Variant::MmaSwizzle: return tiling_of<Steps1to3>();
    case Variant::MmaPipeline: return pipeline_fits() == 0 ? tiling_of<Step4>() : tiling_of<Step4Fits99>();
    default: return hopper::tiling(hopper_kernel(v));
  }
}

int pipeline_stages(std::size_t smem_per_block) {
  const int i = ladder::first_that_fits(pipeline_options(), smem_per_block).index;
  return i == 0 ? Step4::kStages : i == 1 ? Step4Fits99::kStages : 0;
}

bool fast_path(int /*M*/, int /*N*/, int K, const void* A, const void* Bt) {
  return K % 8 == 0 && aligned(A, 16) && aligned(Bt, 16);
}

void validate(Variant v, int M, int N, int K, const void* A, const void* Bt, const void* C) {
  const std::string who = name(v);
  if (M < 1 || N < 1 || K < 1 || M > kMaxDim || N > kMaxDim || K > kMaxDim)
    throw std::invalid_argument(who + ": M, N and K must each be between 1 and " + std::to_string(kMaxDim) +
                                ", got M=" + std::to_string(M) + " N=" + std::to_string(N) + " K=" + std::to_string(K));
  if (!A || !Bt || !C) throw std::invalid_argument(who + ": A, Bt and C must be device pointers, got a null pointer");
  if (!aligned(A, 2) || !aligned(Bt, 2))
    throw std::invalid_argument(who + ": A and Bt must be aligned to 2 bytes (bf16 elements)");
  if (!aligned(C, 4)) throw std::invalid_argument(who + ": C must be aligned to 4 bytes (fp32 elements)");
  const Tiling t = tiling(v);
  if (ceil_div(M, t.BM) > 65535)  // the non-persistent steps put M tiles on gridDim.y
    throw std::invalid_argument(who + ": M must be <= " + std::to_string(65535LL * t.BM) + ", got " +
                                std::to_string(M));
}

void matmul(Variant v, int M, int N, int K, const bf16* A, const bf16* Bt, float* C, cudaStream_t stream) {
  validate(v, M, N, K, A, Bt, C);
  const Tiling t = tiling(v);
  check_device(v, t);
  const bool fast = fast_path(M, N, K, A, Bt);
  const Params p = params_of(M, N, K, A, Bt, C);
  switch (v) {
    case Variant::Wmma:
      fast ? launch_wmma<Steps1to3, false>(p, stream) : launch_wmma<Steps1to3, true>(p, stream);
      break;
    case Variant::MmaLdmatrix:
      fast ? launch_single<Steps1to3, false, false>(p, stream) : launch_single<Steps1to3, false, true>(p, stream);
      break;
    case Variant::MmaSwizzle:
      fast ? launch_single<Steps1to3, true, false>(p, stream) : launch_single<Steps1to3, true, true>(p, stream);
      break;
    case Variant::MmaPipeline:
      pipeline_fits() == 0 ? launch_pipeline<Step4>(p, fast, stream) : launch_pipeline<Step4Fits99>(p, fast, stream);
      break;
    default: hopper::launch(hopper_kernel(v), M, N, K, A, Bt, C, fast, hopper::Options{}, stream); break;
  }
  CUDA_CHECK_LAUNCH();
}

// ---------------------------------------------------------------------------------------
// Tuning: the same kernels with other tiles and depths.
// ---------------------------------------------------------------------------------------
namespace {
template <class Cfg>
Tuned tuned_pipeline(const std::string& name) {
  return {name, false, [name](int M, int N, int K, const bf16* A, const bf16* Bt, float* C) {
            validate(Variant::MmaPipeline, M, N, K, A, Bt, C);
            check_device(Variant::MmaPipeline, tiling_of<Cfg>());
            launch_pipeline<Cfg>(params_of(M, N, K, A, Bt, C), fast_path(M, N, K, A, Bt), nullptr);
            CUDA_CHECK_LAUNCH();
          }};
}
Tuned tuned_hopper(const std::string& name, Variant v, hopper::Options opt) {
  return {name, true, [v, opt](int M, int N, int K, const bf16* A, const bf16* Bt, float* C) {
            validate(v, M, N, K, A, Bt, C);
            check_device(v, tiling(v));
            hopper::launch(hopper_kernel(v), M, N, K, A, Bt, C, fast_path(M, N, K, A, Bt), opt, nullptr);
            CUDA_CHECK_LAUNCH();
          }};
}
}  // namespace

std::vector<Tuned> tuning_variants() {
  std::vector<Tuned> all = {
      tuned_pipeline<Cfg<128, 256, 2, 4, 2>>("mma_pipeline_128x256_s2"),
      tuned_pipeline<Cfg<128, 256, 2, 4, 4>>("mma_pipeline_128x256_s4"),
      tuned_pipeline<Cfg<256, 128, 4, 2, 3>>("mma_pipeline_256x128_s3"),
      tuned_pipeline<Cfg<128, 128, 2, 2, 3, 2>>("mma_pipeline_128x128_s3_2cta"),
  };
  for (int g : {1, 4, 16})
    all.push_back(tuned_hopper("wgmma_cluster_group" + std::to_string(g), Variant::WgmmaCluster, {g}));
  for (int g : {4, 16})
    all.push_back(tuned_hopper("wgmma_persistent_group" + std::to_string(g), Variant::WgmmaPersistent, {g}));
  return all;
}

}  // namespace tcmm
