// Chapter 09, steps 5-6: Hopper's own matrix path. Compiled for sm_90a only
// (CMakeLists.txt); the kernel bodies are inside `#if TC_HOPPER_ENABLED`, so any other
// device pass compiles them to empty functions, and the launchers run only after
// tc_matmul.cu has checked for a compute capability 9.0 device.
//
// What is new against steps 1-4:
//   - TMA (cp.async.bulk.tensor): one thread asks the copy engine for a whole 64 x 128
//     box of A or Bt, described by a tensor map; the engine swizzles it into shared
//     memory, zero-fills what lies outside the matrix, and counts the bytes on an mbarrier.
//   - wgmma.mma_async: a warpgroup (4 warps) multiplies 64 x N x 16 with both operands
//     read straight from shared memory (descriptors, no ldmatrix, no fragments in
//     registers), asynchronously: the warps go on issuing while the tensor cores work.
//   - mbarriers with phases in place of __syncthreads: "stage s is full" (the copy engine
//     completes it) and, in step 6, "stage s is empty" (the consumers release it).
// Every tile row is 64 bf16 = 128 bytes, 128B-swizzled, 1024-byte aligned: what TMA
// writes with CU_TENSOR_MAP_SWIZZLE_128B, what wgmma_desc_sw128 describes, and what the
// guarded loader (load_tile with kSwizzle, tc_common.cuh) writes with ordinary stores.

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "cuda_check.h"
#include "device.h"
#include "hopper.cuh"
#include "launch.h"
#include "tc_common.cuh"
#include "tc_hopper.h"
#include "tc_layout.h"

namespace tcmm::hopper {

namespace {

using bf16_t = __nv_bfloat16;

// Every TMA box is 64 bf16 (one 128-byte swizzle row) x 128 rows = 16 KB.
constexpr int kBoxRows = 128;
constexpr std::uint32_t kBoxBytes = kBoxRows * BK * 2;

// Shared memory of a kernel: kStages stages of (BM + BN) rows of 128 bytes, then the
// mbarriers; 1 KB of slack to put the first stage on a 1024-byte boundary (the swizzle
// pattern repeats every 1024 bytes, and TMA and wgmma assume it starts on one).
template <int BM, int BN, int kStages>
struct Ring {
  static constexpr std::uint32_t kABytes = BM * BK * 2, kStageBytes = (BM + BN) * BK * 2;
  static constexpr std::uint32_t kBarriers = kStages * kStageBytes;  // full[kStages], empty[kStages]
  static constexpr std::size_t kSmemBytes = 1024 + kBarriers + 2 * kStages * 8;
  unsigned char* base;  // 1024-byte aligned
  __device__ explicit Ring(unsigned char* raw) : base(raw + ((1024 - (tc::smem_addr(raw) & 1023)) & 1023)) {}
  __device__ unsigned char* a(int s) const { return base + s * kStageBytes; }
  __device__ unsigned char* b(int s) const { return base + s * kStageBytes + kABytes; }
  __device__ std::uint32_t full(int s) const { return tc::smem_addr(base + kBarriers) + 8 * s; }
  __device__ std::uint32_t empty(int s) const { return tc::smem_addr(base + kBarriers) + 8 * (kStages + s); }
};

// Stage and phase of a ring, advanced together: the parity a waiter names flips each
// time the ring wraps around.
template <int kStages>
struct RingPos {
  int stage = 0;
  std::uint32_t phase = 0;
  __device__ void next() {
    if (++stage == kStages) stage = 0, phase ^= 1;
  }
};

// ---------------------------------------------------------------------------------------
// 5. TMA + wgmma.
//
// 256 threads = 2 warpgroups; a 128 x 128 tile of C, each warpgroup 64 rows of it
// (wgmma m64n128k16: 64 fp32 accumulators per thread). kStages buffers, one "full"
// mbarrier each. Thread 0 starts the first kStages copies; then per K slice everyone
// waits for its buffer to be full, issues 4 wgmma (k = 0, 16, 32, 48), waits for them,
// and meets the others at __syncthreads(), after which thread 0 refills the buffer with
// the slice kStages ahead. The tensor cores idle from the wait to the next issue; two
// CTAs per SM fill some of that.
// ---------------------------------------------------------------------------------------
constexpr int kTmaBM = 128, kTmaBN = 128, kTmaStages = 3, kTmaThreads = 256;
using TmaRing = Ring<kTmaBM, kTmaBN, kTmaStages>;

template <bool kGuarded>
__global__ void __launch_bounds__(kTmaThreads, 2)
    wgmma_tma_kernel(const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB, Params p) {
#if TC_HOPPER_ENABLED
  extern __shared__ unsigned char smem_raw[];
  const TmaRing ring(smem_raw);
  const int tid = threadIdx.x, wg = tid / 128;
  const int m_tile = blockIdx.y * kTmaBM, n_tile = blockIdx.x * kTmaBN;
  const int k_tiles = ceil_div(p.K, BK);

  if (tid == 0) {
    // TMA: one arrival (expect_tx) plus the bytes. Guarded: every thread stores and arrives.
    for (int s = 0; s < kTmaStages; ++s) tc::mbarrier_init(ring.full(s), kGuarded ? kTmaThreads : 1);
    tc::fence_mbarrier_init();
  }
  __syncthreads();

  auto load = [&](int kt) {
    const int s = kt % kTmaStages;
    if constexpr (!kGuarded) {
      if (tid == 0) {
        tc::mbarrier_arrive_expect_tx(ring.full(s), TmaRing::kStageBytes);
        tc::cp_async_bulk_tensor_2d_global_to_shared(tc::smem_addr(ring.a(s)), &tmA, kt * BK, m_tile, ring.full(s));
        tc::cp_async_bulk_tensor_2d_global_to_shared(tc::smem_addr(ring.b(s)), &tmB, kt * BK, n_tile, ring.full(s));
      }
    } else {
      load_tile<kTmaBM, kTmaThreads, true, true>(ring.a(s), p.A, p.M, p.K, m_tile, kt * BK, tid);
      load_tile<kTmaBN, kTmaThreads, true, true>(ring.b(s), p.Bt, p.N, p.K, n_tile, kt * BK, tid);
      tc::fence_proxy_async_shared_cta();  // ordinary stores, read next by wgmma (async proxy)
      tc::mbarrier_arrive(ring.full(s));
    }
  };

  for (int kt = 0; kt < kTmaStages && kt < k_tiles; ++kt) load(kt);
  float d[64];
  for (int kt = 0; kt < k_tiles; ++kt) {
    const int s = kt % kTmaStages;
    tc::mbarrier_wait(ring.full(s), (kt / kTmaStages) & 1);
    const std::uint32_t a = tc::smem_addr(ring.a(s)) + wg * 64 * 128, b = tc::smem_addr(ring.b(s));
    tc::wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < BK / 16; ++kk)  // next k16 slice: 32 bytes further along each 128-byte row
      tc::wgmma_m64n128k16_bf16(d, tc::wgmma_desc_sw128(a + 32 * kk), tc::wgmma_desc_sw128(b + 32 * kk),
                                kt > 0 || kk > 0);
    tc::wgmma_commit_group();
    tc::wgmma_wait_group<0>();
    tc::fence_operand(d);
    __syncthreads();  // both warpgroups are done with buffer s
    if (kt + kTmaStages < k_tiles) load(kt + kTmaStages);
  }

  const int t = tid % 128;
#pragma unroll
  for (int i = 0; i < 64; i += 2) {
    const tc::layout::Coord c = tc::layout::wgmma_d(t, i);
    store_pair(p, m_tile + wg * 64 + c.row, n_tile + c.col, d[i], d[i + 1]);
  }
#endif
}

// ---------------------------------------------------------------------------------------
// 6. Warp specialisation (6a), persistent CTAs (6b), clusters with multicast (6c): one
// kernel, three launches.
//
// 384 threads = 3 warpgroups with different jobs. Warpgroup 0, the producer, only moves
// data: one elected thread waits for a free stage ("empty" mbarrier), announces the
// stage's bytes and issues its TMA copies (completing the "full" mbarrier). Warpgroups
// 1 and 2, the consumers, only compute: wait for a full stage, start four wgmma
// m64n256k16 on it, and release the *previous* stage as soon as its wgmma are done
// (wgmma.wait_group 1 keeps one batch in flight), so the tensor cores never wait for a
// barrier round trip. setmaxnreg moves registers from the producer (40) to the consumers
// (232): each consumer thread holds 128 fp32 accumulators of its 64 x 256 piece of the
// 128 x 256 tile. 4 stages of 48 KB.
//
// Tiles: the grid walks "units" of kCluster M tiles x 1 N tile. 6a launches one CTA
// (cluster) per unit; 6b and 6c launch one per SM and loop, so the producer loads the
// next tile while the consumers store the last one, and the units are visited in groups
// of group_m unit rows, column by column, so the CTAs running together share B tiles
// (and A tiles) in L2. 6c pairs CTAs along M in a cluster: both need the same B tile,
// so each loads half of it and TMA multicasts that half into both CTAs' shared memory;
// a stage is then free only when the consumers of both CTAs have released it, so every
// consumer warp arrives on the "empty" barriers of both.
// ---------------------------------------------------------------------------------------
constexpr int kWsBM = 128, kWsBN = 256, kWsStages = 4, kWsThreads = 384;
constexpr int kConsumerWarps = 8;
constexpr int kProducerRegs = 40, kConsumerRegs = 232;
// setmaxnreg.inc can only take what .dec gave back: the budgets must fit in the registers
// the CTA starts with, 65536 / kWsThreads rounded down to 8 (168 a thread).
static_assert(128 * kProducerRegs + 256 * kConsumerRegs <= kWsThreads * (65536 / kWsThreads / 8 * 8),
              "setmaxnreg budgets within the registers the CTA starts with");
using WsRing = Ring<kWsBM, kWsBN, kWsStages>;

// Unit u -> (unit row, N tile): groups of group_m unit rows, walked column by column.
__device__ __forceinline__ void unit_coords(int u, int units_m, int tiles_n, int group_m, int& um, int& n) {
  const int per_group = group_m * tiles_n;
  const int first = u / per_group * group_m;
  const int rows = min(units_m - first, group_m);
  const int r = u % per_group;
  um = first + r % rows;
  n = r / rows;
}

template <int kCluster, bool kGuarded>
__global__ void __launch_bounds__(kWsThreads, 1)
    wgmma_ws_kernel(const __grid_constant__ CUtensorMap tmA, const __grid_constant__ CUtensorMap tmB, Params p) {
#if TC_HOPPER_ENABLED
  extern __shared__ unsigned char smem_raw[];
  const WsRing ring(smem_raw);
  const int wg = threadIdx.x / 128, t = threadIdx.x % 128;
  const int rank = kCluster > 1 ? static_cast<int>(tc::cluster_ctarank()) : 0;

  if (threadIdx.x == 0) {
    for (int s = 0; s < kWsStages; ++s) {
      tc::mbarrier_init(ring.full(s), kGuarded ? 128 : 1);
      tc::mbarrier_init(ring.empty(s), kConsumerWarps * kCluster);
    }
    tc::fence_mbarrier_init();
  }
  if constexpr (kCluster > 1)
    tc::cluster_sync();  // the peer's barriers are initialised before anyone arrives on them
  else
    __syncthreads();

  const int tiles_n = ceil_div(p.N, kWsBN), k_tiles = ceil_div(p.K, BK);
  const int units_m = ceil_div(ceil_div(p.M, kWsBM), kCluster);
  const int units = units_m * tiles_n;
  const int cluster_id = blockIdx.x / kCluster, clusters = gridDim.x / kCluster;

  if (wg == 0) {
    // ---- producer ----
    tc::setmaxnreg_dec<kProducerRegs>();
    const bool issuer = kGuarded || (t < 32 && tc::elect_one_sync());
    if (issuer) {
      if constexpr (!kGuarded) {
        tc::prefetch_tensormap(&tmA);
        tc::prefetch_tensormap(&tmB);
      }
      RingPos<kWsStages> pos;
      for (int u = cluster_id; u < units; u += clusters) {
        int um, n;
        unit_coords(u, units_m, tiles_n, p.group_m, um, n);
        const int m_tile = (um * kCluster + rank) * kWsBM, n_tile = n * kWsBN;
        for (int kt = 0; kt < k_tiles; ++kt, pos.next()) {
          const int s = pos.stage;
          tc::mbarrier_wait(ring.empty(s), pos.phase ^ 1);  // released by the consumers (of both CTAs)
          if constexpr (!kGuarded) {
            const std::uint32_t full = ring.full(s), k = kt * BK;
            tc::mbarrier_arrive_expect_tx(full, WsRing::kStageBytes);  // A + all of B, whoever sends it
            tc::cp_async_bulk_tensor_2d_global_to_shared(tc::smem_addr(ring.a(s)), &tmA, k, m_tile, full);
            if constexpr (kCluster == 1) {
              for (int h = 0; h < kWsBN / kBoxRows; ++h)
                tc::cp_async_bulk_tensor_2d_global_to_shared(tc::smem_addr(ring.b(s)) + h * kBoxBytes, &tmB, k,
                                                             n_tile + h * kBoxRows, full);
            } else {
              static_assert(kWsBN == kCluster * kBoxRows, "each CTA of the cluster sends one box of B");
              tc::cp_async_bulk_tensor_2d_global_to_shared_multicast(tc::smem_addr(ring.b(s)) + rank * kBoxBytes, &tmB,
                                                                     k, n_tile + rank * kBoxRows, full,
                                                                     (1u << kCluster) - 1);
            }
          } else {
            load_tile<kWsBM, 128, true, true>(ring.a(s), p.A, p.M, p.K, m_tile, kt * BK, t);
            load_tile<kWsBN, 128, true, true>(ring.b(s), p.Bt, p.N, p.K, n_tile, kt * BK, t);
            tc::fence_proxy_async_shared_cta();  // ordinary stores, read next by wgmma (async proxy)
            tc::mbarrier_arrive(ring.full(s));
          }
        }
      }
    }
    __syncwarp();
  } else {
    // ---- consumers ----
    tc::setmaxnreg_inc<kConsumerRegs>();
    const int lane = t % 32, row0 = (wg - 1) * 64;  // this warpgroup's rows of the tile
    // Stage s is free again: lane c < kCluster tells CTA c of the cluster (itself included).
    auto release = [&](int s) {
      if constexpr (kCluster == 1) {
        if (lane == 0) tc::mbarrier_arrive(ring.empty(s));
      } else {
        if (lane < kCluster) tc::mbarrier_arrive_cluster(tc::mapa_shared_cluster(ring.empty(s), lane));
      }
    };
    float d[128];
    RingPos<kWsStages> pos;
    for (int u = cluster_id; u < units; u += clusters) {
      int um, n;
      unit_coords(u, units_m, tiles_n, p.group_m, um, n);
      const int m_tile = (um * kCluster + rank) * kWsBM, n_tile = n * kWsBN;
      int previous = -1;
      for (int kt = 0; kt < k_tiles; ++kt, pos.next()) {
        const int s = pos.stage;
        tc::mbarrier_wait(ring.full(s), pos.phase);
        const std::uint32_t a = tc::smem_addr(ring.a(s)) + row0 * 128, b = tc::smem_addr(ring.b(s));
        tc::wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < BK / 16; ++kk)
          tc::wgmma_m64n256k16_bf16(d, tc::wgmma_desc_sw128(a + 32 * kk), tc::wgmma_desc_sw128(b + 32 * kk),
                                    kt > 0 || kk > 0);
        tc::wgmma_commit_group();
        tc::wgmma_wait_group<1>();  // the batch before this one is done: its stage is free
        if (previous >= 0) release(previous);
        previous = s;
      }
      tc::wgmma_wait_group<0>();
      tc::fence_operand(d);
      release(previous);
#pragma unroll
      for (int i = 0; i < 128; i += 2) {
        const tc::layout::Coord c = tc::layout::wgmma_d(t, i);
        store_pair(p, m_tile + row0 + c.row, n_tile + c.col, d[i], d[i + 1]);
      }
    }
  }
  if constexpr (kCluster > 1) tc::cluster_sync();  // no CTA leaves while its peer may still signal it
#endif
}

// ---------------------------------------------------------------------------------------
// Host side: tensor maps and launches.
// ---------------------------------------------------------------------------------------

// X [rows, K] row-major bf16 -> boxes of 64 x kBoxRows (128 bytes wide: one swizzle row),
// 128B-swizzled, zero fill outside (hopper_host.h).
CUtensorMap tensor_map(const bf16* X, int rows, int K) {
  tc::TensorMapKey key;
  key.data = X;
  key.rank = 2;
  key.dims[0] = std::uint64_t(K), key.dims[1] = std::uint64_t(rows);
  key.box[0] = BK, key.box[1] = kBoxRows;
  return tc::tensor_map(key);
}

template <class Kernel>
void launch_kernel(Kernel* kernel, dim3 grid, int threads, std::size_t smem, int cluster, cudaStream_t stream,
                   const CUtensorMap& tmA, const CUtensorMap& tmB, const Params& p) {
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = dim3(threads);
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = cluster;
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  config.attrs = attr;
  config.numAttrs = cluster > 1 ? 1 : 0;
  CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, tmA, tmB, p));
}

template <bool kGuarded>
void launch_tma(const Params& p, const CUtensorMap& tmA, const CUtensorMap& tmB, cudaStream_t stream) {
  auto* kernel = wgmma_tma_kernel<kGuarded>;
  ladder::allow_dynamic_smem(kernel, TmaRing::kSmemBytes, "wgmma_tma_kernel");
  const dim3 grid(ceil_div(p.N, kTmaBN), ceil_div(p.M, kTmaBM));
  launch_kernel(kernel, grid, kTmaThreads, TmaRing::kSmemBytes, 1, stream, tmA, tmB, p);
}

template <int kCluster, bool kGuarded>
void launch_ws(const Params& p, bool persistent, const CUtensorMap& tmA, const CUtensorMap& tmB, cudaStream_t stream) {
  auto* kernel = wgmma_ws_kernel<kCluster, kGuarded>;
  ladder::allow_dynamic_smem(kernel, WsRing::kSmemBytes, "wgmma_ws_kernel");
  static const int max_clusters = [kernel] {
    if (kCluster == 1) {
      int per_sm = 0;
      CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kWsThreads, WsRing::kSmemBytes));
      return std::max(per_sm, 1) * ladder::device().sm_count;
    }
    // How many clusters fit on the GPU at once (a cluster's CTAs share a GPC).
    cudaLaunchConfig_t config{};
    config.gridDim = dim3(kCluster * ladder::device().sm_count);
    config.blockDim = dim3(kWsThreads);
    config.dynamicSmemBytes = WsRing::kSmemBytes;
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = kCluster;
    attr[0].val.clusterDim.y = 1;
    attr[0].val.clusterDim.z = 1;
    config.attrs = attr;
    config.numAttrs = 1;
    int clusters = 0;
    CUDA_CHECK(cudaOccupancyMaxActiveClusters(&clusters, kernel, &config));
    return clusters > 0 ? clusters : 1;
  }();
  const int units = ceil_div(ceil_div(p.M, kWsBM), kCluster) * ceil_div(p.N, kWsBN);
  const int clusters = persistent ? std::min(units, max_clusters) : units;
  launch_kernel(kernel, dim3(clusters * kCluster), kWsThreads, WsRing::kSmemBytes, kCluster, stream, tmA, tmB, p);
}

}  // namespace

Tiling tiling(Kernel k) {
  switch (k) {
    case Kernel::Tma: return {kTmaBM, kTmaBN, BK, kTmaThreads, kTmaStages, 1, TmaRing::kSmemBytes};
    case Kernel::Ws:
    case Kernel::Persistent: return {kWsBM, kWsBN, BK, kWsThreads, kWsStages, 1, WsRing::kSmemBytes};
    case Kernel::Cluster: return {kWsBM, kWsBN, BK, kWsThreads, kWsStages, 2, WsRing::kSmemBytes};
  }
  return {};
}

const void* sm90a_kernel() { return reinterpret_cast<const void*>(wgmma_ws_kernel<1, false>); }

void launch(Kernel k, int M, int N, int K, const bf16* A, const bf16* Bt, float* C, bool fast, const Options& opt,
            cudaStream_t stream) {
  const Params p{M,
                 N,
                 K,
                 reinterpret_cast<const bf16_t*>(A),
                 reinterpret_cast<const bf16_t*>(Bt),
                 C,
                 N % 2 == 0 && reinterpret_cast<std::uintptr_t>(C) % 8 == 0,
                 opt.group_m > 0 ? opt.group_m : 1};
  // The guarded kernels never touch the maps; they still travel as (unused) parameters.
  CUtensorMap tmA{}, tmB{};
  if (fast) {
    tmA = tensor_map(A, M, K);
    tmB = tensor_map(Bt, N, K);
  }
  switch (k) {
    case Kernel::Tma: fast ? launch_tma<false>(p, tmA, tmB, stream) : launch_tma<true>(p, tmA, tmB, stream); break;
    case Kernel::Ws:
    case Kernel::Persistent: {
      const bool persistent = k == Kernel::Persistent;
      fast ? launch_ws<1, false>(p, persistent, tmA, tmB, stream) : launch_ws<1, true>(p, persistent, tmA, tmB, stream);
      break;
    }
    case Kernel::Cluster:
      fast ? launch_ws<2, false>(p, true, tmA, tmB, stream) : launch_ws<2, true>(p, true, tmA, tmB, stream);
      break;
  }
}

}  // namespace tcmm::hopper
