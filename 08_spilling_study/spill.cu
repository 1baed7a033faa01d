#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <tuple>

#include "cuda_check.h"
#include "device.h"
#include "launch.h"
#include "spill.h"

namespace spill {

namespace {

__device__ float warp_max(float x) {
  for (int offset = kBdx / 2; offset > 0; offset /= 2) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, offset));
  return x;
}
__device__ float warp_sum(float x) {
  for (int offset = kBdx / 2; offset > 0; offset /= 2) x += __shfl_xor_sync(0xffffffffu, x, offset);
  return x;
}

}  // namespace

// One block per (query tile i, head): grid (T_r, B * H), block (bdx, bdy) = (32, 4).
//
// The chapter's one idea is in how O_i, m_i and l_i are indexed. Registers have no addresses, so a per-thread
// array can live in registers only if every index into it is a compile-time constant: the loops over ii (rows)
// and jj (columns) are fully unrolled for that. With kLocal the very same loops are left rolled ("#pragma unroll
// 1"), ii and jj become run-time values, and the compiler has no choice but to give the arrays an address in
// local memory: a stack frame, read and written with LDL/STL on every update. No register ran short for that;
// it is not a spill. A register cap (fa2_forward_capped below) is the other way to lose registers: a cap below
// what the kernel needs makes the register allocator spill, which ptxas reports as "spill stores".
template <int d, int B_r, int B_c, bool kLocal>
__device__ __forceinline__ void fa2_forward_tile(const float* __restrict__ Q, const float* __restrict__ K,
                                                 const float* __restrict__ V, float* __restrict__ O,
                                                 float* __restrict__ L, int N, float scale) {
  static_assert(d % kBdx == 0 && B_r % kBdy == 0 && B_c <= 2 * kBdx, "tile shape the thread block cannot cover");
  constexpr int kRows = B_r / kBdy;  // B_r / bdy: query rows per thread
  constexpr int kCols = d / kBdx;    // d / bdx: output columns per thread
  constexpr int kRowUnroll = kLocal ? 1 : kRows;
  constexpr int kColUnroll = kLocal ? 1 : kCols;
  constexpr int kKStride = d + kKPad;

  extern __shared__ float4 smem[];              // float4: 16-byte aligned for the vector accesses below
  float* Q_i = reinterpret_cast<float*>(smem);  // [B_r][d], pre-multiplied by scale
  float* K_j = Q_i + B_r * d;                   // [B_c][d + kKPad]
  float* V_j = K_j + B_c * kKStride;            // [B_c][d]
  float* S = V_j + B_c * d;                     // [B_r][B_c]: S_ij, then P_ij in place

  const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * kBdx + tx;
  const std::size_t head = std::size_t(blockIdx.y) * N;  // first row of this (b, h) in [B, H, N, d]
  const int i0 = blockIdx.x * B_r;                       // first query row of tile i
  const int T_c = (N + B_c - 1) / B_c;
  const float4 zero = make_float4(0.0f, 0.0f, 0.0f, 0.0f);

  // Q_i once per block. Rows past N are zero: they compute harmless values that are never stored.
  for (int e = tid; e < B_r * d / 4; e += kThreads) {
    const int r = e / (d / 4), x = e % (d / 4);
    float4 q = zero;
    if (i0 + r < N) q = reinterpret_cast<const float4*>(Q + (head + i0 + r) * d)[x];
    reinterpret_cast<float4*>(Q_i + r * d)[x] = make_float4(q.x * scale, q.y * scale, q.z * scale, q.w * scale);
  }

  float m_i[kRows], l_i[kRows], O_i[kRows][kCols];  // the running state of this thread's rows
#pragma unroll(kRowUnroll)
  for (int ii = 0; ii < kRows; ++ii) {
    m_i[ii] = -INFINITY;
    l_i[ii] = 0.0f;
#pragma unroll(kColUnroll)
    for (int jj = 0; jj < kCols; ++jj) O_i[ii][jj] = 0.0f;
  }

  for (int j = 0; j < T_c; ++j) {
    const int j0 = j * B_c;
    __syncthreads();  // every warp is done with the previous K_j, V_j and P
    for (int e = tid; e < B_c * d / 4; e += kThreads) {
      const int c = e / (d / 4), x = e % (d / 4);
      float4 k = zero, v = zero;  // keys past N: zero rows, masked out of S below
      if (j0 + c < N) {
        k = reinterpret_cast<const float4*>(K + (head + j0 + c) * d)[x];
        v = reinterpret_cast<const float4*>(V + (head + j0 + c) * d)[x];
      }
      reinterpret_cast<float4*>(K_j + c * kKStride)[x] = k;
      reinterpret_cast<float4*>(V_j + c * d)[x] = v;
    }
    __syncthreads();

    // S = Q_i K_j^T, one entry per thread per step; keys past N get -inf so that P_ij = 0.
    for (int e = tid; e < B_r * B_c; e += kThreads) {
      const int r = e / B_c, c = e % B_c;
      const float4* q = reinterpret_cast<const float4*>(Q_i + r * d);
      const float4* k = reinterpret_cast<const float4*>(K_j + c * kKStride);
      float s = 0.0f;
#pragma unroll 8
      for (int x = 0; x < d / 4; ++x) {
        const float4 a = q[x], b = k[x];
        s = fmaf(a.x, b.x, fmaf(a.y, b.y, fmaf(a.z, b.z, fmaf(a.w, b.w, s))));
      }
      S[e] = j0 + c < N ? s : -INFINITY;
    }
    __syncthreads();

    // Online softmax. Warp ty owns rows ty + bdy * ii, and each of its lanes keeps a copy of their m_i and l_i,
    // so the row statistics need warp shuffles only; the P row it writes is read by the same warp alone.
#pragma unroll(kRowUnroll)
    for (int ii = 0; ii < kRows; ++ii) {
      float* P_r = S + (ty + kBdy * ii) * B_c;
      float m_tile = -INFINITY;
      for (int c = tx; c < B_c; c += kBdx) m_tile = fmaxf(m_tile, P_r[c]);
      // Finite: tile j holds at least one key < N. So is every later m_i, and no exp sees inf - inf.
      const float m_new = fmaxf(m_i[ii], warp_max(m_tile));
      float row_sum = 0.0f;
      for (int c = tx; c < B_c; c += kBdx) {
        const float p = expf(P_r[c] - m_new);
        P_r[c] = p;
        row_sum += p;
      }
      // What was accumulated under the old max is rescaled to the new one (alpha = 0 on the first tile).
      const float alpha = expf(m_i[ii] - m_new);
      l_i[ii] = alpha * l_i[ii] + warp_sum(row_sum);
      m_i[ii] = m_new;
#pragma unroll(kColUnroll)
      for (int jj = 0; jj < kCols; ++jj) O_i[ii][jj] *= alpha;
    }
    __syncwarp();  // P_r written by some lanes is read by all lanes below

    // O_i += P V_j. A P_ij is one shared-memory broadcast; V_j[c][tx + 32 jj] is a conflict-free row read.
    for (int c = 0; c < B_c; ++c) {
#pragma unroll(kRowUnroll)
      for (int ii = 0; ii < kRows; ++ii) {
        const float p = S[(ty + kBdy * ii) * B_c + c];
#pragma unroll(kColUnroll)
        for (int jj = 0; jj < kCols; ++jj) O_i[ii][jj] = fmaf(p, V_j[c * d + tx + kBdx * jj], O_i[ii][jj]);
      }
    }
  }

  // O = O_i / l_i and the row logsumexp L = m_i + log(l_i), which a backward pass would need.
#pragma unroll(kRowUnroll)
  for (int ii = 0; ii < kRows; ++ii) {
    const int row = i0 + ty + kBdy * ii;
    if (row >= N) continue;  // the whole warp agrees: one row per warp
    const float inv_l = 1.0f / l_i[ii];
#pragma unroll(kColUnroll)
    for (int jj = 0; jj < kCols; ++jj) O[(head + row) * d + tx + kBdx * jj] = O_i[ii][jj] * inv_l;
    if (tx == 0) L[head + row] = m_i[ii] + logf(l_i[ii]);
  }
}

// The kernels ptxas reports on. They are not in an anonymous namespace, so that their mangled names are stable:
//   fa2_forward<d, B_r, B_c, kLocal>           as the compiler likes it (no launch bounds, no cap)
//   fa2_forward_capped<d, B_r, B_c, kMaxRegs>  the same with at most kMaxRegs registers per thread, the
//                                              per-kernel form of nvcc's -maxrregcount
template <int d, int B_r, int B_c, bool kLocal>
__global__ void fa2_forward(const float* Q, const float* K, const float* V, float* O, float* L, int N, float scale) {
  fa2_forward_tile<d, B_r, B_c, kLocal>(Q, K, V, O, L, N, scale);
}
template <int d, int B_r, int B_c, int kMaxRegs>
__global__ void __maxnreg__(kMaxRegs)
    fa2_forward_capped(const float* Q, const float* K, const float* V, float* O, float* L, int N, float scale) {
  fa2_forward_tile<d, B_r, B_c, false>(Q, K, V, O, L, N, scale);
}

namespace {

// One compiled variant: its description and its kernel.
template <int d, int B_r, int B_c, Accumulators acc = Accumulators::Registers, int kMaxRegs = kMaxRegsPerThread>
struct Instance {
  static_assert(acc == Accumulators::Registers || kMaxRegs == kMaxRegsPerThread, "a cap is for the normal kernel");
  static constexpr Variant variant{acc, d, B_r, B_c, kMaxRegs};
  static constexpr std::size_t smem = smem_bytes(d, B_r, B_c);
  static constexpr auto kernel = [] {  // if constexpr: only the kernel used is compiled
    if constexpr (kMaxRegs < kMaxRegsPerThread)
      return fa2_forward_capped<d, B_r, B_c, kMaxRegs>;
    else
      return fa2_forward<d, B_r, B_c, acc == Accumulators::Local>;
  }();
};

// Every variant the chapter compiles (each is one more kernel for the build to compile, twice: see
// CMakeLists.txt). The register caps are chosen around what the lecture kernel needs (see README.md).
using Instances = std::tuple<
    // B_r x B_c sweep at d = 128
    Instance<128, 4, 16>, Instance<128, 4, 32>, Instance<128, 4, 64>,     //
    Instance<128, 8, 16>, Instance<128, 8, 32>, Instance<128, 8, 64>,     //
    Instance<128, 16, 16>, Instance<128, 16, 32>, Instance<128, 16, 64>,  //
    // head dim at B_r = 8, B_c = 32 (d = 128 is in the sweep)
    Instance<64, 8, 32>, Instance<256, 8, 32>,
    // the lecture kernel with its accumulators in local memory
    Instance<128, 8, 32, Accumulators::Local>,
    // the lecture kernel under tighter and tighter register caps
    Instance<128, 8, 32, Accumulators::Registers, 64>, Instance<128, 8, 32, Accumulators::Registers, 48>,
    Instance<128, 8, 32, Accumulators::Registers, 40>, Instance<128, 8, 32, Accumulators::Registers, 32>,
    Instance<128, 8, 32, Accumulators::Registers, 24>>;

// Calls f(Instance{}) for the instance of v; throws if v is not compiled.
template <class F>
void with_instance(const Variant& v, F&& f) {
  const bool found =
      std::apply([&](auto... inst) { return ((inst.variant == v ? (f(inst), true) : false) || ...); }, Instances{});
  if (!found) {
    std::string list;
    for (const Variant& c : variants()) list += "\n  " + c.label();
    throw std::invalid_argument("kernel variant " + v.label() + " is not compiled; the compiled ones are:" + list);
  }
}

template <class Inst>
void allow_smem() {
  ladder::allow_dynamic_smem(Inst::kernel, Inst::smem, Inst::variant.label());
}

}  // namespace

const char* Variant::kind() const {
  if (acc == Accumulators::Local) return "local";
  return max_regs < kMaxRegsPerThread ? "capped" : "normal";
}

std::string Variant::label() const {
  std::string s = std::string("variant=") + kind();
  if (max_regs < kMaxRegsPerThread) s += "/maxrreg=" + std::to_string(max_regs);
  return s + "/d=" + std::to_string(d) + "/B_r=" + std::to_string(B_r) + "/B_c=" + std::to_string(B_c);
}

const std::vector<Variant>& variants() {
  static const std::vector<Variant> all =
      std::apply([](auto... inst) { return std::vector<Variant>{inst.variant...}; }, Instances{});
  return all;
}

void forward(const Variant& v, const ladder::AttentionShape& s, const float* Q, const float* K, const float* V,
             float* O, float* L, cudaStream_t stream) {
  ladder::validate(s, kSupportedD);
  if (s.causal) throw std::invalid_argument("chapter 08 computes non-causal attention only (causal = false)");
  if (s.d != v.d)
    throw std::invalid_argument("shape " + s.str() + " does not fit kernel " + v.label() + " (d must match)");
  if (s.heads() > 65535)
    throw std::invalid_argument("shape " + s.str() + ": B * H must be <= 65535 (one grid row per head)");
  for (const float* p : {Q, K, V, static_cast<const float*>(O)})
    if (reinterpret_cast<std::uintptr_t>(p) % 16 != 0)
      throw std::invalid_argument("spill::forward: Q, K, V and O must be 16-byte aligned (float4 accesses)");
  with_instance(v, [&](auto inst) {
    using Inst = decltype(inst);
    allow_smem<Inst>();
    const dim3 grid((s.N + v.B_r - 1) / v.B_r, static_cast<unsigned>(s.heads())), block(kBdx, kBdy);
    Inst::kernel<<<grid, block, Inst::smem, stream>>>(Q, K, V, O, L, s.N, s.scale());
    CUDA_CHECK_LAUNCH();
  });
}

KernelInfo kernel_info(const Variant& v) {
  KernelInfo info;
  with_instance(v, [&](auto inst) {
    using Inst = decltype(inst);
    allow_smem<Inst>();
    cudaFuncAttributes attr{};
    CUDA_CHECK(cudaFuncGetAttributes(&attr, Inst::kernel));
    info.num_regs = attr.numRegs;
    info.local_bytes = attr.localSizeBytes;
    info.binary_version = attr.binaryVersion, info.ptx_version = attr.ptxVersion;
    info.smem_bytes = Inst::smem;
    CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&info.blocks_per_sm, Inst::kernel, kThreads, Inst::smem));
    int max_threads = 0;
    CUDA_CHECK(cudaDeviceGetAttribute(&max_threads, cudaDevAttrMaxThreadsPerMultiProcessor, 0));
    info.occupancy = double(info.blocks_per_sm) * kThreads / max_threads;
  });
  return info;
}

}  // namespace spill
