// The pipes microbenchmark (pipes.h): one CTA per SM, two warpgroups, each looping over one kind
// of work. Compiled for sm_90a only (wgmma). The operands are whatever sits in shared memory (small
// e4m3 values): the tensor cores and the MUFU take as long whatever the values.
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "09_tensor_core_matmul/hopper.cuh"
#include "09_tensor_core_matmul/hopper_host.h"
#include "09_tensor_core_matmul/mma.cuh"
#include "cuda_check.h"
#include "device.h"
#include "device_buffer.h"
#include "pipes.h"

namespace fa3::pipes {

namespace {

// Q_i's 64 rows, K_j's 192 keys and Vt_j's 128 rows of d, 128 bytes each (one swizzle row). The
// launch asks for more than half the SM's shared memory, so that no SM holds two CTAs.
constexpr int kQBytes = 64 * 128, kKBytes = 192 * 128, kVtBytes = 128 * 128;
constexpr int kLaunchSmem = 128 * 1024;
constexpr int kScores = 64;  // Exp, Softmax, Convert: scores per thread and iteration

struct Out {
  long long cycles[2];
  long long ns;
  unsigned sink;
};

#if TC_HOPPER_ENABLED
__device__ __forceinline__ unsigned e4m3x2(float a, float b) {
  return __nv_cvt_float2_to_fp8x2(make_float2(a, b), __NV_SATFINITE, __NV_E4M3);
}

// One k32 group of S = Q_i K_j^T (B_c = 192, d = 128: four wgmma) into acc.
__device__ __forceinline__ void issue_s(float (&acc)[96], std::uint32_t q, std::uint32_t k) {
  tc::wgmma_fence();
#pragma unroll
  for (int kk = 0; kk < 4; ++kk)
    tc::wgmma_m64n192k32_ss_e4m3(acc, tc::wgmma_desc_sw128(q + 32 * kk), tc::wgmma_desc_sw128(k + 32 * kk), 1);
  tc::wgmma_commit_group();
}
// One group of O += P V over kSteps k32 steps of keys (A from registers).
template <int kSteps>
__device__ __forceinline__ void issue_pv(float (&o)[64], const std::uint32_t (&p)[kSteps][4], std::uint32_t vt) {
  tc::wgmma_fence();
#pragma unroll
  for (int kk = 0; kk < kSteps; ++kk)
    tc::wgmma_m64n128k32_rs_e4m3(o, p[kk], tc::wgmma_desc_sw128(vt + 32 * (kk % 4)), 1);
  tc::wgmma_commit_group();
}

// The FP8 kernel's step (fa3_forward.cuh, the intra-warpgroup loop at B_c = 192) without the
// loads: issue S_j and P_{j-1} V_{j-1}; wait for S_j; its row maxima, exponentials and row sums
// while P V runs; P~_j converted once P V is done. kGemmTurn: the kernel's ping-pong turn around
// the issues (named barriers 1, 2); kExpTurn: its turn at the exponentials (3, 4), with the same
// stores and load that keep the compiler from moving the exponentials across the barriers.
template <bool kGemmTurn, bool kExpTurn>
__device__ unsigned fp8_step(std::uint32_t q, std::uint32_t k, std::uint32_t vt, int iters) {
  const int wg = threadIdx.x / 128, t = threadIdx.x % 128;
  const std::uint32_t sink_at = vt + kVtBytes + 8 * threadIdx.x, zero_at = vt + kVtBytes + 8 * 256;
  float s[96] = {}, o[64] = {}, l[2] = {};
  std::uint32_t p[6][4];
#pragma unroll
  for (int i = 0; i < 24; ++i) p[i / 4][i % 4] = 0x18381838u;
  if (kGemmTurn && wg == 1) tc::named_bar_arrive(1, 256);  // warpgroup 1 hands 0 the first turns
  if (kExpTurn && wg == 1) tc::named_bar_arrive(3, 256);
  for (int n = 0; n < iters; ++n) {
    if (kGemmTurn) tc::named_bar_sync(1 + wg, 256);
    issue_s(s, q, k);
    issue_pv<6>(o, p, vt);
    if (kGemmTurn) tc::named_bar_arrive(1 + (wg ^ 1), 256);
    tc::wgmma_wait_group<1>();
    tc::fence_operand(s);
    float mx[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      mx[h] = -INFINITY;
#pragma unroll
      for (int j = 0; j < 24; ++j) mx[h] = fmaxf(mx[h], fmaxf(s[4 * j + 2 * h], s[4 * j + 2 * h + 1]));
      mx[h] = tc::quad_max(mx[h]) * 0.125f;
    }
    float zero = 0.0f;
    if (kExpTurn) {
      tc::st_shared_v2_f32(sink_at, mx[0], mx[1]);
      tc::named_bar_sync(3 + wg, 256);
      zero = tc::ld_shared_f32(zero_at);
    }
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
      for (int j = 0; j < 24; ++j)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          float& x = s[4 * j + 2 * h + e];
          x = tc::ex2(fmaf(x, 0.125f, -(mx[h] + zero)));
          l[h] += x;
        }
    if (kExpTurn) {
      tc::st_shared_v2_f32(sink_at, l[0], l[1]);
      tc::named_bar_arrive(3 + (wg ^ 1), 256);
    }
    tc::wgmma_wait_group<0>();
    tc::fence_operand(o);
#pragma unroll
    for (int kk = 0; kk < 6; ++kk)
#pragma unroll
      for (int r = 0; r < 4; ++r)
        p[kk][r] = e4m3x2(s[16 * kk + 4 * r], s[16 * kk + 4 * r + 1]) |
                   (e4m3x2(s[16 * kk + 4 * r + 2], s[16 * kk + 4 * r + 3]) << 16);
  }
  if (kGemmTurn && wg == 0) tc::named_bar_sync(1, 256);  // the turns warpgroup 1 handed back last
  if (kExpTurn && wg == 0) tc::named_bar_sync(3, 256);
  return __float_as_uint(o[t % 64] + l[0] + l[1]);
}

template <Work W>
__device__ unsigned work(std::uint32_t q, std::uint32_t k, std::uint32_t vt, int iters) {
  const int t = threadIdx.x % 128;
  unsigned sink = 0;
  // Four groups per iteration into one accumulator, waited for at its end: a group in flight across
  // the loop's back edge makes ptxas serialise every wgmma.
  if constexpr (W == Work::TensorSS) {
    float acc[96] = {};
    for (int n = 0; n < iters; ++n) {
#pragma unroll
      for (int g = 0; g < 4; ++g) issue_s(acc, q, k);
      tc::wgmma_wait_group<0>();
      tc::fence_operand(acc);
    }
    sink = __float_as_uint(acc[t % 96]);
  } else if constexpr (W == Work::TensorRS) {
    float o[64] = {};
    std::uint32_t p[4][4];
#pragma unroll
    for (int i = 0; i < 16; ++i) p[i / 4][i % 4] = 0x18381838u ^ (t * 0x01010101u & 0x07070707u);
    for (int n = 0; n < iters; ++n) {
#pragma unroll
      for (int g = 0; g < 4; ++g) issue_pv<4>(o, p, vt);
      tc::wgmma_wait_group<0>();
      tc::fence_operand(o);
    }
    sink = __float_as_uint(o[t % 64]);
  } else if constexpr (W == Work::Exp) {  // x -> 2^-x stays in (0, 1]
    float x[kScores];
#pragma unroll
    for (int i = 0; i < kScores; ++i) x[i] = 1e-3f * (t + i);
    for (int n = 0; n < iters; ++n)
#pragma unroll
      for (int i = 0; i < kScores; ++i) x[i] = tc::ex2(-x[i]);
#pragma unroll
    for (int i = 0; i < kScores; ++i) sink ^= __float_as_uint(x[i]);
  } else if constexpr (W == Work::Softmax) {  // x -> 2^(x/2 - 1) stays in (0.5, 1]
    float x[kScores], sum[2] = {};
#pragma unroll
    for (int i = 0; i < kScores; ++i) x[i] = 1e-3f * (t + i);
    for (int n = 0; n < iters; ++n) {
#pragma unroll
      for (int i = 0; i < kScores; ++i) {
        x[i] = tc::ex2(fmaf(x[i], 0.5f, -1.0f));
        sum[i % 2] += x[i];
      }
#pragma unroll
      for (int i = 0; i < kScores; i += 2) sink ^= e4m3x2(x[i], x[i + 1]);
    }
    sink ^= __float_as_uint(sum[0] + sum[1]);
  } else if constexpr (W == Work::Convert) {
    float x[kScores];
#pragma unroll
    for (int i = 0; i < kScores; ++i) x[i] = 1e-3f * (t + i);
    for (int n = 0; n < iters; ++n) {
#pragma unroll
      for (int i = 0; i < kScores; ++i) x[i] += 1.0f;
#pragma unroll
      for (int i = 0; i < kScores; i += 2) sink ^= e4m3x2(x[i], x[i + 1]);
    }
  } else if constexpr (W == Work::ExpHalf2) {  // (x, y) -> (2^-x, 2^-y) in half precision
    std::uint32_t x[kScores / 2];
#pragma unroll
    for (int i = 0; i < kScores / 2; ++i) x[i] = 0x3C003C00u ^ ((t + i) & 0x3FF);
    for (int n = 0; n < iters; ++n)
#pragma unroll
      for (int i = 0; i < kScores / 2; ++i) tc::ex2_f16x2(x[i], x[i] ^ 0x80008000u);
#pragma unroll
    for (int i = 0; i < kScores / 2; ++i) sink ^= x[i];
  } else if constexpr (W == Work::ToHalf2) {
    float x[kScores];
#pragma unroll
    for (int i = 0; i < kScores; ++i) x[i] = 1e-3f * (t + i);
    for (int n = 0; n < iters; ++n) {
#pragma unroll
      for (int i = 0; i < kScores; ++i) x[i] += 1.0f;
#pragma unroll
      for (int i = 0; i < kScores; i += 2) {
        const __half2 h = __floats2half2_rn(x[i], x[i + 1]);
        sink ^= *reinterpret_cast<const unsigned*>(&h);
      }
    }
  } else if constexpr (W == Work::Max) {  // each x[i] the max of itself and its neighbour: 64 chains
    float x[kScores];
#pragma unroll
    for (int i = 0; i < kScores; ++i) x[i] = 1e-3f * (t + i);
    for (int n = 0; n < iters; ++n) {
      float y[kScores];
#pragma unroll
      for (int i = 0; i < kScores; ++i) y[i] = fmaxf(x[i], x[(i + 1) % kScores]);
#pragma unroll
      for (int i = 0; i < kScores; ++i) x[i] = y[i];
    }
#pragma unroll
    for (int i = 0; i < kScores; ++i) sink ^= __float_as_uint(x[i]);
  } else if constexpr (W == Work::MaxInt) {
    int x[kScores];
#pragma unroll
    for (int i = 0; i < kScores; ++i) x[i] = t * 7 + i;
    for (int n = 0; n < iters; ++n) {
      int y[kScores];
#pragma unroll
      for (int i = 0; i < kScores; ++i) y[i] = max(x[i], x[(i + 1) % kScores]);
#pragma unroll
      for (int i = 0; i < kScores; ++i) x[i] = y[i];
    }
#pragma unroll
    for (int i = 0; i < kScores; ++i) sink ^= unsigned(x[i]);
  } else if constexpr (W == Work::Overlap) {
    sink = fp8_step<false, false>(q, k, vt, iters);
  } else if constexpr (W == Work::OverlapGemmTurn) {
    sink = fp8_step<true, false>(q, k, vt, iters);
  } else if constexpr (W == Work::OverlapTurns) {
    sink = fp8_step<true, true>(q, k, vt, iters);
  }
  return sink;
}
#endif

template <Work A, Work B>
__global__ void __launch_bounds__(256, 1) pipes_kernel(int iters_a, int iters_b, Out* out) {
#if TC_HOPPER_ENABLED
  extern __shared__ unsigned char smem_raw[];
  const std::uint32_t base = (tc::smem_addr(smem_raw) + 1023) & ~1023u;
  const std::uint32_t q = base, k = q + kQBytes, vt = k + kKBytes;
  // Small e4m3 values (exponent field 3: about 1/16), signs and mantissas varied.
  for (int i = threadIdx.x; i < (kQBytes + kKBytes + kVtBytes) / 4; i += blockDim.x)
    // (a plain st.shared, not tc::st_shared_b32: that wrapper's "memory" clobber reorders this fill and
    // moves the measured kernels' registers; the published pipe table was measured with this one)
    asm volatile("st.shared.u32 [%0], %1;\n" ::"r"(base + 4 * i), "r"(0x18181818u ^ ((i * 0x9E3779B9u) & 0x87878787u)));
  if (threadIdx.x == 0) asm volatile("st.shared.u32 [%0], 0;\n" ::"r"(vt + kVtBytes + 8 * 256));  // fp8_step's zero
  tc::fence_proxy_async_shared_cta();  // the tensor cores read what these stores wrote
  __syncthreads();
  const long long ns0 = tc::globaltimer();
  const long long t0 = clock64();
  const int wg = threadIdx.x / 128;
  const unsigned sink = wg == 0 ? work<A>(q, k, vt, iters_a) : work<B>(q, k, vt, iters_b);
  tc::named_bar_sync(5 + wg, 128);  // (1-4: fp8_step's turns)
  const long long t1 = clock64();
  if (threadIdx.x % 128 == 0) out[blockIdx.x].cycles[wg] = t1 - t0;
  if (sink == 0x7FC00001u) out[blockIdx.x].sink = sink;  // (never: keeps the work)
  __syncthreads();
  if (threadIdx.x == 0) {
    out[blockIdx.x].ns = tc::globaltimer() - ns0;
  }
#else
  (void)iters_a, (void)iters_b, (void)out;
#endif
}

// The pairs the tool runs: each kind alone, then beside another.
using Kernel = void (*)(int, int, Out*);
struct Pair {
  Work a, b;
  Kernel k;
};
#define PIPES_PAIR(A, B) \
  Pair { Work::A, Work::B, pipes_kernel<Work::A, Work::B> }
const Pair kPairs[] = {
    PIPES_PAIR(TensorSS, Idle),
    PIPES_PAIR(TensorRS, Idle),
    PIPES_PAIR(Exp, Idle),
    PIPES_PAIR(Softmax, Idle),
    PIPES_PAIR(Convert, Idle),
    PIPES_PAIR(Overlap, Idle),
    PIPES_PAIR(TensorSS, Exp),
    PIPES_PAIR(TensorSS, Softmax),
    PIPES_PAIR(TensorRS, Exp),
    PIPES_PAIR(Exp, Convert),
    PIPES_PAIR(Exp, Exp),
    PIPES_PAIR(TensorSS, TensorSS),
    PIPES_PAIR(Overlap, Overlap),
    PIPES_PAIR(ExpHalf2, Idle),
    PIPES_PAIR(ToHalf2, Idle),
    PIPES_PAIR(Exp, ToHalf2),
    PIPES_PAIR(ExpHalf2, Exp),
    PIPES_PAIR(Max, Idle),
    PIPES_PAIR(MaxInt, Idle),
    PIPES_PAIR(Exp, Max),
    PIPES_PAIR(Exp, MaxInt),
    PIPES_PAIR(OverlapGemmTurn, OverlapGemmTurn),
    PIPES_PAIR(OverlapTurns, OverlapTurns),
};
#undef PIPES_PAIR

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

const char* name(Work w) {
  switch (w) {
    case Work::Idle: return "idle";
    case Work::TensorSS: return "tensor_ss";
    case Work::TensorRS: return "tensor_rs";
    case Work::Exp: return "exp";
    case Work::Softmax: return "softmax";
    case Work::Convert: return "convert";
    case Work::ExpHalf2: return "exp_half2";
    case Work::ToHalf2: return "to_half2";
    case Work::Max: return "max";
    case Work::MaxInt: return "max_int";
    case Work::Overlap: return "overlap";
    case Work::OverlapGemmTurn: return "overlap_gemm_turn";
    case Work::OverlapTurns: return "overlap_turns";
  }
  return "?";
}

double flops_per_iter(Work w) {
  switch (w) {
    case Work::TensorSS: return 2.0 * 16 * 64 * 192 * 32;  // four groups of four m64n192k32
    case Work::TensorRS: return 2.0 * 16 * 64 * 128 * 32;  // four groups of four m64n128k32
    case Work::Overlap:
    case Work::OverlapGemmTurn:
    case Work::OverlapTurns: return 2.0 * 64 * 192 * 128 * 2;  // S (64 x 192 x 128) and P V (64 x 128 x 192)
    default: return 0;
  }
}
int exps_per_iter(Work w) {
  return w == Work::Exp || w == Work::Softmax || w == Work::ExpHalf2 ? kScores : w >= Work::Overlap ? 96 : 0;
}
int converts_per_iter(Work w) {
  return w == Work::Softmax || w == Work::Convert || w == Work::ToHalf2 ? kScores / 2 : w >= Work::Overlap ? 48 : 0;
}

std::string unavailable_reason() {
  return tc::sm90a_unavailable_reason("the pipes microbenchmark needs", reinterpret_cast<const void*>(kPairs[0].k));
}

Timing run(Work a, int iters_a, Work b, int iters_b) {
  const Pair* pair = nullptr;
  for (const Pair& p : kPairs)
    if (p.a == a && p.b == b) pair = &p;
  if (pair == nullptr)
    throw std::invalid_argument(std::string("pipes: the pair (") + name(a) + ", " + name(b) +
                                ") is not compiled (pipes.cu, kPairs)");
  if (iters_a < 1 || iters_b < 1) throw std::invalid_argument("pipes: iterations must be at least 1");
  const int sms = ladder::device().sm_count;
  ladder::DeviceBuffer<Out> out(sms);
  CUDA_CHECK(cudaFuncSetAttribute(pair->k, cudaFuncAttributeMaxDynamicSharedMemorySize, kLaunchSmem));
  pair->k<<<sms, 256, kLaunchSmem>>>(iters_a, iters_b, out.data());
  CUDA_CHECK_LAUNCH();
  CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<Out> h(sms);
  CUDA_CHECK(cudaMemcpy(h.data(), out.data(), sizeof(Out) * sms, cudaMemcpyDeviceToHost));
  std::vector<double> c0, c1, ns;
  for (const Out& o : h)
    c0.push_back(double(o.cycles[0])), c1.push_back(double(o.cycles[1])), ns.push_back(double(o.ns));
  return {{median(c0), median(c1)}, median(ns)};
}

}  // namespace fa3::pipes
