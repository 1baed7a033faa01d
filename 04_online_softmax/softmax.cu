#include <algorithm>
#include <climits>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "cuda_check.h"
#include "device.h"
#include "softmax.h"

namespace osm {

namespace {

constexpr unsigned kFullMask = 0xffffffffu;
constexpr int kBatch = 4;               // packs a thread loads before it uses any
constexpr int kMaxStreamThreads = 256;  // per row, multi-pass kernels
constexpr int kMaxBlockThreads = 1024;  // per row, BlockOnChip
constexpr int kWarpsPerBlock = 8;       // WarpOnChip: rows per block
constexpr int kMaxPerLane = 32;         // WarpOnChip: floats of the row per lane
constexpr int kWarpMaxCols = 32 * kMaxPerLane;

// ---------------------------------------------------------------------------
// (m, l): the running max and the sum of e^(x - m), as in softmax_cpu.h.
// Trivial (no initialisers), so block_reduce can keep it in __shared__.
struct MaxSum {
  float m, l;
};
__device__ MaxSum empty_pair() { return {-INFINITY, 0.0f}; }
// The static shared memory of block_onchip: block_reduce's per-warp slots.
// Known without asking the runtime, so max_cols() works before any kernel is
// loaded (the benchmark asks during static initialisation); checked at launch.
constexpr std::size_t kStaticShared = 32 * sizeof(MaxSum);

// x joins (m, l): m' = max(m, x), l' = l e^(m - m') + e^(x - m'). m' is m or x,
// so one of the two exponentials is e^0 = 1 and a single expf of -|x - m|
// serves both cases: one exponential per element, not two. Written with
// selects, not branches, so the compiler can overlap consecutive elements.
__device__ void update(MaxSum& s, float x) {
  const float e = expf(-fabsf(x - s.m));
  const float l_if_x_is_max = s.l * e + 1.0f;  // l e^(m - x) + e^0
  // l + e^(x - m); an x of -inf adds nothing (and -inf - -inf would be NaN).
  const float l_if_m_stays = x == -INFINITY ? s.l : s.l + e;
  s.l = x > s.m ? l_if_x_is_max : l_if_m_stays;
  s.m = fmaxf(s.m, x);
}

// The reductions block_reduce and warp_reduce combine with.
struct Max {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};
struct Sum {
  __device__ float operator()(float a, float b) const { return a + b; }
};
// Two partial rows' pairs: m = max(m_a, m_b), l = l_a e^(m_a - m) + l_b e^(m_b - m).
struct Merge {
  __device__ MaxSum operator()(MaxSum a, MaxSum b) const {
    const float m = fmaxf(a.m, b.m);
    if (m == -INFINITY) return a;  // both empty: keep (-inf, 0) rather than 0 * NaN
    return {m, a.l * expf(a.m - m) + b.l * expf(b.m - m)};
  }
};

__device__ float shfl_xor(float v, int lane_mask) { return __shfl_xor_sync(kFullMask, v, lane_mask); }
__device__ MaxSum shfl_xor(MaxSum s, int lane_mask) { return {shfl_xor(s.m, lane_mask), shfl_xor(s.l, lane_mask)}; }

// Butterfly over the 32 lanes: after 5 exchanges every lane holds the result.
template <class T, class Op>
__device__ T warp_reduce(T v, Op op) {
#pragma unroll
  for (int lane_mask = 16; lane_mask > 0; lane_mask /= 2) v = op(v, shfl_xor(v, lane_mask));
  return v;
}

// Warp shuffles first, then one value per warp through shared memory, which
// every warp reduces again itself: all threads get the result with a single
// __syncthreads(). blockDim.x must be a multiple of 32; call once per kernel.
template <class T, class Op>
__device__ T block_reduce(T v, Op op, T identity) {
  __shared__ T per_warp[32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  v = warp_reduce(v, op);
  if (lane == 0) per_warp[warp] = v;
  __syncthreads();
  v = lane < static_cast<int>(blockDim.x / 32) ? per_warp[lane] : identity;
  return warp_reduce(v, op);
}

// ---------------------------------------------------------------------------
// kVec consecutive floats moved as one access: 4 (a 16-byte LDG.128/STG.128)
// when rows start 16-byte aligned (C % 4 == 0 and aligned X, Y), else 1.
template <int kVec>
struct Pack {
  float v[kVec];
  __device__ static Pack load(const float* p) {
    Pack r;
    if constexpr (kVec == 4) {
      const float4 f = *reinterpret_cast<const float4*>(p);
      r.v[0] = f.x, r.v[1] = f.y, r.v[2] = f.z, r.v[3] = f.w;
    } else {
      r.v[0] = *p;
    }
    return r;
  }
  __device__ void store(float* p) const {
    if constexpr (kVec == 4) {
      *reinterpret_cast<float4*>(p) = make_float4(v[0], v[1], v[2], v[3]);
    } else {
      *p = v[0];
    }
  }
};

// Hands the packs first, first + stride, first + 2 stride, ... of a row to
// visit(pack, index). Each thread issues kBatch loads before it uses any: the
// bytes in flight are what hide DRAM latency, and a loop that used each load
// at once would keep only one pack per thread in flight.
template <int kVec, class Visit>
__device__ void sweep(const float* row, int n_packs, int first, int stride, Visit&& visit) {
  for (int p0 = first; p0 < n_packs; p0 += kBatch * stride) {
    Pack<kVec> v[kBatch];
#pragma unroll
    for (int b = 0; b < kBatch; ++b)
      if (p0 + b * stride < n_packs) v[b] = Pack<kVec>::load(row + (p0 + b * stride) * kVec);
#pragma unroll
    for (int b = 0; b < kBatch; ++b)
      if (p0 + b * stride < n_packs) visit(v[b], p0 + b * stride);
  }
}

// ---------------------------------------------------------------------------
// The multi-pass kernels: one block per row, one kernel per pass over DRAM.

// Safe, pass 1: m_i = max_j X_ij.
template <int kVec>
__global__ void __launch_bounds__(kMaxStreamThreads)
    row_max(const float* __restrict__ X, int C, float* __restrict__ m) {
  float t = -INFINITY;
  sweep<kVec>(X + std::size_t(blockIdx.x) * C, C / kVec, threadIdx.x, blockDim.x, [&](const Pack<kVec>& p, int) {
    for (float x : p.v) t = fmaxf(t, x);
  });
  t = block_reduce(t, Max{}, -INFINITY);
  if (threadIdx.x == 0) m[blockIdx.x] = t;
}

// Safe, pass 2: l_i = sum_j e^(X_ij - m_i). It cannot start before pass 1 has
// seen the whole row: that dependency is the third pass.
template <int kVec>
__global__ void __launch_bounds__(kMaxStreamThreads)
    row_sum_exp(const float* __restrict__ X, int C, const float* __restrict__ m, float* __restrict__ l) {
  const float m_i = m[blockIdx.x];
  float t = 0.0f;
  sweep<kVec>(X + std::size_t(blockIdx.x) * C, C / kVec, threadIdx.x, blockDim.x, [&](const Pack<kVec>& p, int) {
    for (float x : p.v) t += expf(x - m_i);
  });
  t = block_reduce(t, Sum{}, 0.0f);
  if (threadIdx.x == 0) l[blockIdx.x] = t;
}

// Online, pass 1: each thread carries its own (m, l) over its elements, then
// the block merges the pairs: warp shuffles, then across warps.
template <int kVec>
__global__ void __launch_bounds__(kMaxStreamThreads)
    row_max_sum(const float* __restrict__ X, int C, float* __restrict__ m, float* __restrict__ l) {
  MaxSum s = empty_pair();
  sweep<kVec>(X + std::size_t(blockIdx.x) * C, C / kVec, threadIdx.x, blockDim.x, [&](const Pack<kVec>& p, int) {
    for (float x : p.v) update(s, x);
  });
  s = block_reduce(s, Merge{}, empty_pair());
  if (threadIdx.x == 0) m[blockIdx.x] = s.m, l[blockIdx.x] = s.l;
}

// Both, last pass: Y_ij = e^(X_ij - m_i) / l_i.
template <int kVec>
__global__ void __launch_bounds__(kMaxStreamThreads)
    normalise(const float* __restrict__ X, int C, const float* __restrict__ m, const float* __restrict__ l,
              float* __restrict__ Y) {
  const std::size_t offset = std::size_t(blockIdx.x) * C;
  const float m_i = m[blockIdx.x], inv_l = 1.0f / l[blockIdx.x];
  sweep<kVec>(X + offset, C / kVec, threadIdx.x, blockDim.x, [&](Pack<kVec> p, int index) {
    for (float& x : p.v) x = expf(x - m_i) * inv_l;
    p.store(Y + offset + index * kVec);
  });
}

// ---------------------------------------------------------------------------
// The on-chip kernels: one read and one write of each row.

// One block per row; the row waits in shared memory between the read and the write.
template <int kVec>
__global__ void __launch_bounds__(kMaxBlockThreads)
    block_onchip(const float* __restrict__ X, int C, float* __restrict__ Y) {
  extern __shared__ float4 shared_row[];  // float4: 16-byte aligned for the packs
  float* row = reinterpret_cast<float*>(shared_row);
  const std::size_t offset = std::size_t(blockIdx.x) * C;
  const int n_packs = C / kVec;

  MaxSum s = empty_pair();
  sweep<kVec>(X + offset, n_packs, threadIdx.x, blockDim.x, [&](const Pack<kVec>& p, int index) {
    p.store(row + index * kVec);
    for (float x : p.v) update(s, x);
  });
  s = block_reduce(s, Merge{}, empty_pair());
  const float inv_l = 1.0f / s.l;

  // Each thread reads back only the packs it stored itself, so this needs no
  // barrier of its own. Registers cannot hold them instead: how many packs a
  // thread has depends on C, and registers cannot be indexed at run time.
  for (int index = threadIdx.x; index < n_packs; index += blockDim.x) {
    Pack<kVec> p = Pack<kVec>::load(row + index * kVec);
    for (float& x : p.v) x = expf(x - s.m) * inv_l;
    p.store(Y + offset + index * kVec);
  }
}

// One warp per row, kPerLane floats per lane in registers (32 kPerLane >= C).
// Lane `lane` holds packs lane, lane + 32, ...: every warp-wide load is one
// contiguous, coalesced piece of the row. No shared memory, no barrier.
template <int kVec, int kPerLane>
__global__ void __launch_bounds__(kWarpsPerBlock * 32)
    warp_onchip(const float* __restrict__ X, int R, int C, float* __restrict__ Y) {
  constexpr int kPacks = kPerLane / kVec;
  const int row = static_cast<int>(blockIdx.x) * kWarpsPerBlock + static_cast<int>(threadIdx.x / 32);
  if (row >= R) return;  // the whole warp leaves together: the shuffles below see all 32 lanes
  const int lane = threadIdx.x % 32, n_packs = C / kVec;
  const std::size_t offset = std::size_t(row) * C;

  Pack<kVec> v[kPacks];
#pragma unroll
  for (int k = 0; k < kPacks; ++k) {  // all loads issued before any is used
    const int index = lane + 32 * k;
    if (index < n_packs) {
      v[k] = Pack<kVec>::load(X + offset + index * kVec);
    } else {
      for (float& x : v[k].v) x = -INFINITY;  // padding: e^-inf = 0 adds nothing
    }
  }
  MaxSum s = empty_pair();
#pragma unroll
  for (int k = 0; k < kPacks; ++k)
    for (float x : v[k].v) update(s, x);
  s = warp_reduce(s, Merge{});
  const float inv_l = 1.0f / s.l;

#pragma unroll
  for (int k = 0; k < kPacks; ++k) {
    const int index = lane + 32 * k;
    if (index < n_packs) {
      for (float& x : v[k].v) x = expf(x - s.m) * inv_l;
      v[k].store(Y + offset + index * kVec);
    }
  }
}

// ---------------------------------------------------------------------------
// Launch configuration.

// Threads for one block per row: about kBatch packs each (one batch of loads
// covers the row), a whole number of warps, between 32 and max_threads.
unsigned threads_per_row(int n_packs, int max_threads) {
  const std::int64_t warps = (std::int64_t(n_packs) + kBatch * 32 - 1) / (kBatch * 32);
  return static_cast<unsigned>(std::clamp<std::int64_t>(warps * 32, 32, max_threads));
}

bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

template <int kVec>
void launch_multipass(Kernel k, const float* X, float* Y, int R, int C, RowStats& st, cudaStream_t stream) {
  const unsigned rows = static_cast<unsigned>(R), threads = threads_per_row(C / kVec, kMaxStreamThreads);
  if (k == Kernel::Safe3Pass) {
    row_max<kVec><<<rows, threads, 0, stream>>>(X, C, st.m.data());
    CUDA_CHECK_LAUNCH();
    row_sum_exp<kVec><<<rows, threads, 0, stream>>>(X, C, st.m.data(), st.l.data());
    CUDA_CHECK_LAUNCH();
  } else {
    row_max_sum<kVec><<<rows, threads, 0, stream>>>(X, C, st.m.data(), st.l.data());
    CUDA_CHECK_LAUNCH();
  }
  normalise<kVec><<<rows, threads, 0, stream>>>(X, C, st.m.data(), st.l.data(), Y);
  CUDA_CHECK_LAUNCH();
}

// Shared memory for a row, beyond the 48 KB a kernel gets without asking:
// allowed once per kernel, with the carveout tilted to shared memory (the
// kernel streams, L1 has nothing to keep).
template <int kVec>
void allow_shared_row() {
  static const bool allowed = [] {
    cudaFuncAttributes a{};
    CUDA_CHECK(cudaFuncGetAttributes(&a, block_onchip<kVec>));
    if (a.sharedSizeBytes > kStaticShared)
      throw std::logic_error("block_onchip uses " + std::to_string(a.sharedSizeBytes) +
                             " bytes of static shared memory, more than kStaticShared: max_cols is wrong");
    CUDA_CHECK(cudaFuncSetAttribute(block_onchip<kVec>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    max_cols(Kernel::BlockOnChip) * static_cast<int>(sizeof(float))));
    CUDA_CHECK(cudaFuncSetAttribute(block_onchip<kVec>, cudaFuncAttributePreferredSharedMemoryCarveout,
                                    cudaSharedmemCarveoutMaxShared));
    return true;
  }();
  (void)allowed;
}

template <int kVec>
void launch_block_onchip(const float* X, float* Y, int R, int C, cudaStream_t stream) {
  allow_shared_row<kVec>();
  block_onchip<kVec><<<static_cast<unsigned>(R), threads_per_row(C / kVec, kMaxBlockThreads),
                       std::size_t(C) * sizeof(float), stream>>>(X, C, Y);
  CUDA_CHECK_LAUNCH();
}

// The smallest power-of-two kPerLane whose 32 kPerLane registers hold the row.
template <int kVec, int kPerLane>
void launch_warp_onchip(const float* X, float* Y, int R, int C, cudaStream_t stream) {
  if constexpr (kPerLane < kMaxPerLane) {
    if (32 * kPerLane < C) return launch_warp_onchip<kVec, 2 * kPerLane>(X, Y, R, C, stream);
  }
  const unsigned blocks = static_cast<unsigned>((std::int64_t(R) + kWarpsPerBlock - 1) / kWarpsPerBlock);
  warp_onchip<kVec, kPerLane><<<blocks, kWarpsPerBlock * 32, 0, stream>>>(X, R, C, Y);
  CUDA_CHECK_LAUNCH();
}

}  // namespace

const char* name(Kernel k) {
  switch (k) {
    case Kernel::Safe3Pass: return "safe_3pass";
    case Kernel::Online2Pass: return "online_2pass";
    case Kernel::WarpOnChip: return "warp_onchip";
    case Kernel::BlockOnChip: return "block_onchip";
  }
  return "?";
}

int max_cols(Kernel k) {
  switch (k) {
    case Kernel::Safe3Pass:
    case Kernel::Online2Pass: return INT_MAX;
    case Kernel::WarpOnChip: return kWarpMaxCols;
    case Kernel::BlockOnChip:
      if (!ladder::device().available) return 0;
      return static_cast<int>((ladder::device().smem_per_block_optin - kStaticShared) / sizeof(float));
  }
  return 0;
}

Kernel best_kernel(int C) {
  if (C <= max_cols(Kernel::WarpOnChip)) return Kernel::WarpOnChip;
  if (C <= max_cols(Kernel::BlockOnChip)) return Kernel::BlockOnChip;
  return Kernel::Online2Pass;
}

void softmax(Kernel k, const float* X, float* Y, int R, int C, RowStats& stats, cudaStream_t stream) {
  const std::string who = std::string("softmax ") + name(k) + ": ";
  if (R < 1 || C < 1)
    throw std::invalid_argument(who + "R and C must both be >= 1, got R=" + std::to_string(R) +
                                " C=" + std::to_string(C));
  if (C > max_cols(k)) {
    const std::string where =
        k == Kernel::WarpOnChip ? "32 lanes x 32 registers"
        : ladder::device().available
            ? "one block's shared memory (" + std::to_string(ladder::device().smem_per_block_optin / 1024) + " KB here)"
            : "shared memory, and there is no CUDA device";
    throw std::invalid_argument(who + "the row is held in " + where +
                                ", so C must be <= " + std::to_string(max_cols(k)) + ", got C=" + std::to_string(C) +
                                "; longer rows need online_2pass");
  }
  const bool multipass = k == Kernel::Safe3Pass || k == Kernel::Online2Pass;
  if (multipass && (stats.m.size() < std::size_t(R) || stats.l.size() < std::size_t(R)))
    throw std::invalid_argument(who + "stats must hold R=" + std::to_string(R) + " rows, it holds " +
                                std::to_string(std::min(stats.m.size(), stats.l.size())));

  const bool vec4 = C % 4 == 0 && aligned16(X) && aligned16(Y);
  switch (k) {
    case Kernel::Safe3Pass:
    case Kernel::Online2Pass:
      vec4 ? launch_multipass<4>(k, X, Y, R, C, stats, stream) : launch_multipass<1>(k, X, Y, R, C, stats, stream);
      break;
    case Kernel::WarpOnChip:
      vec4 ? launch_warp_onchip<4, 4>(X, Y, R, C, stream) : launch_warp_onchip<1, 1>(X, Y, R, C, stream);
      break;
    case Kernel::BlockOnChip:
      vec4 ? launch_block_onchip<4>(X, Y, R, C, stream) : launch_block_onchip<1>(X, Y, R, C, stream);
      break;
  }
}

}  // namespace osm
