// The FP8 quantisation kernels (fp8_quant.h): amax per block, descales, then Q8, K8 and Vt8.
// Every rounding here is repeated bit for bit by the host model (fp8_emulate.cpp): the same
// fp32 operations in the same order, and cuda_fp8.h's round-to-nearest-even, saturating
// e4m3 conversion (cvt.rn.satfinite.e4m3x2.f32).
#include <cuda_fp8.h>

#include <stdexcept>
#include <string>
#include <type_traits>

#include "cuda_check.h"
#include "fp8_layout.h"
#include "fp8_quant.h"
#include "launch.h"

namespace fa3 {

namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr unsigned kFull = 0xffffffffu;

// A row of d = 32 E elements: lane l holds elements E l .. E l + E - 1, in fp32.
template <int E>
__device__ void load_row(const bf16* row, int lane, float (&x)[E]) {
  const __nv_bfloat162* p = reinterpret_cast<const __nv_bfloat162*>(row + E * lane);
#pragma unroll
  for (int i = 0; i < E / 2; ++i) {
    const float2 f = __bfloat1622float2(p[i]);
    x[2 * i] = f.x;
    x[2 * i + 1] = f.y;
  }
}

// x <- x H / sqrt(d) for one row spread over a warp: the fast Walsh-Hadamard transform,
// butterflies of stride 1, 2, 4, ... d/2 (the host model keeps this order). Strides below
// E stay in a lane's registers; larger ones pair lane l with lane l ^ (stride / E).
template <int E>
__device__ void hadamard_row(float (&x)[E], int lane) {
#pragma unroll
  for (int h = 1; h < E; h *= 2)
#pragma unroll
    for (int i = 0; i < E; ++i)
      if (!(i & h)) {
        const float a = x[i], b = x[i + h];
        x[i] = a + b;
        x[i + h] = a - b;
      }
#pragma unroll
  for (int m = 1; m < 32; m *= 2) {
    const bool upper = lane & m;  // this lane holds the second element of each pair
#pragma unroll
    for (int i = 0; i < E; ++i) {
      const float y = __shfl_xor_sync(kFull, x[i], m);
      x[i] = upper ? y - x[i] : x[i] + y;
    }
  }
  const float norm = E == 2 ? kHadamardNorm64 : E == 4 ? kHadamardNorm128 : kHadamardNorm256;
#pragma unroll
  for (int i = 0; i < E; ++i) x[i] = __fmul_rn(x[i], norm);
}

__device__ float warp_max(float v) {
#pragma unroll
  for (int m = 16; m > 0; m /= 2) v = fmaxf(v, __shfl_xor_sync(kFull, v, m));
  return v;
}

// amax of each block of `rows_per_scale` rows of X [heads, rows, d] (Q or K), into
// amax[head * blocks + block]. One thread block per scale block, one warp per row.
template <int E>
__global__ void rows_amax(const bf16* __restrict__ X, int rows, int rows_per_scale, int blocks, bool hadamard,
                          float* __restrict__ amax) {
  const long head = blockIdx.x / blocks;
  const int block = blockIdx.x % blocks, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int first = block * rows_per_scale, last = min(rows, first + rows_per_scale);
  float a = 0.0f;
  for (int r = first + warp; r < last; r += kWarps) {
    float x[E];
    load_row<E>(X + (head * rows + r) * (32 * E), lane, x);
    if (hadamard) hadamard_row<E>(x, lane);
#pragma unroll
    for (int i = 0; i < E; ++i) a = fmaxf(a, fabsf(x[i]));
  }
  __shared__ float partial[kWarps];
  a = warp_max(a);
  if (lane == 0) partial[warp] = a;
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int w = 1; w < kWarps; ++w) a = fmaxf(a, partial[w]);
    amax[blockIdx.x] = a;
  }
}

// amax of each channel of V [kv_heads, N_kv, d] over a chunk of keys, merged into
// amax[kv_head * d + c] (zeroed first) with atomicMax on the bits: for floats >= 0 the
// integer order is the numeric order.
constexpr int kVKeysPerBlock = 1024;
__global__ void v_channel_amax(const bf16* __restrict__ V, int N_kv, int d, int chunks, unsigned* __restrict__ amax) {
  const long head = blockIdx.x / chunks;
  const int chunk = blockIdx.x % chunks;
  const int pairs = d / 2, c2 = threadIdx.x % pairs, row0 = threadIdx.x / pairs, rows_per_pass = kThreads / pairs;
  const int first = chunk * kVKeysPerBlock, last = min(N_kv, first + kVKeysPerBlock);
  float a0 = 0.0f, a1 = 0.0f;
  for (int n = first + row0; n < last; n += rows_per_pass) {
    const float2 f = __bfloat1622float2(reinterpret_cast<const __nv_bfloat162*>(V + (head * N_kv + n) * d)[c2]);
    a0 = fmaxf(a0, fabsf(f.x));
    a1 = fmaxf(a1, fabsf(f.y));
  }
  atomicMax(amax + head * d + 2 * c2, __float_as_uint(a0));
  atomicMax(amax + head * d + 2 * c2 + 1, __float_as_uint(a1));
}

// In place: amax -> descale = amax / 448, and scale = 448 / amax for the quantisers. Per
// tensor, the max over all n entries first, written to every entry. One thread block.
__global__ void finalise_scales(float* __restrict__ descale, float* __restrict__ scale, int n, bool per_tensor) {
  __shared__ float partial[kWarps];
  float all = 0.0f;
  if (per_tensor) {
    for (int i = threadIdx.x; i < n; i += kThreads) all = fmaxf(all, descale[i]);
    all = warp_max(all);
    if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = all;
    __syncthreads();
    for (int w = 0; w < kWarps; ++w) all = fmaxf(all, partial[w]);
  }
  for (int i = threadIdx.x; i < n; i += kThreads) {
    const float amax = fmaxf(per_tensor ? all : descale[i], kFp8MinAmax);
    scale[i] = __fdiv_rn(kE4m3Max, amax);
    descale[i] = __fdiv_rn(amax, kE4m3Max);
  }
}

__device__ std::uint16_t e4m3x2(float lo, float hi) {
  return __nv_cvt_float2_to_fp8x2(make_float2(lo, hi), __NV_SATFINITE, __NV_E4M3);
}

// Q8 or K8: the same rows as rows_amax, each element times its block's scale, rounded.
template <int E>
__global__ void rows_quantize(const bf16* __restrict__ X, int rows, int rows_per_scale, int blocks, bool hadamard,
                              const float* __restrict__ scale, std::uint8_t* __restrict__ X8) {
  const long head = blockIdx.x / blocks;
  const int block = blockIdx.x % blocks, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int first = block * rows_per_scale, last = min(rows, first + rows_per_scale);
  const float sc = scale[blockIdx.x];
  for (int r = first + warp; r < last; r += kWarps) {
    float x[E];
    const long row = (head * rows + r) * (32 * E), offset = row + E * lane;
    load_row<E>(X + row, lane, x);
    if (hadamard) hadamard_row<E>(x, lane);
    std::uint16_t packed[E / 2];
#pragma unroll
    for (int i = 0; i < E / 2; ++i) packed[i] = e4m3x2(__fmul_rn(x[2 * i], sc), __fmul_rn(x[2 * i + 1], sc));
    if constexpr (E == 8)
      *reinterpret_cast<uint2*>(X8 + offset) =
          make_uint2(packed[0] | unsigned(packed[1]) << 16, packed[2] | unsigned(packed[3]) << 16);
    else if constexpr (E == 4)
      *reinterpret_cast<unsigned*>(X8 + offset) = packed[0] | unsigned(packed[1]) << 16;
    else
      *reinterpret_cast<std::uint16_t*>(X8 + offset) = packed[0];
  }
}

// Vt8 [kv_heads, d, N_kv_pad]: one thread block per 32 keys of a KV head. The 32 x d tile
// of V is read row by row (coalesced) into shared memory, then written channel by channel:
// lane k writes slot k of the block, which holds key fp8_slot_key(k) (fp8_layout.h), so a
// warp stores 32 consecutive bytes. Keys >= N_kv (the padding) are 0.
template <int D>
__global__ void v_transpose_quantize(const bf16* __restrict__ V, int N_kv, int N_kv_pad,
                                     const float* __restrict__ scale, std::uint8_t* __restrict__ Vt8) {
  __shared__ float tile[32][D + 1];  // +1: the column reads below hit 32 different banks
  const int key_blocks = N_kv_pad / 32;
  const long head = blockIdx.x / key_blocks;
  const int n0 = 32 * (blockIdx.x % key_blocks);
  for (int i = threadIdx.x; i < 32 * D / 2; i += kThreads) {
    const int key = i / (D / 2), c2 = i % (D / 2), n = n0 + key;
    float2 f = make_float2(0.0f, 0.0f);
    if (n < N_kv) f = __bfloat1622float2(reinterpret_cast<const __nv_bfloat162*>(V + (head * N_kv + n) * D)[c2]);
    tile[key][2 * c2] = f.x;
    tile[key][2 * c2 + 1] = f.y;
  }
  __syncthreads();
  const int lane = threadIdx.x % 32, key = fp8_slot_key(lane);
  for (int c = threadIdx.x / 32; c < D; c += kWarps) {
    const float x = __fmul_rn(tile[key][c], scale[head * D + c]);
    Vt8[(head * D + c) * long(N_kv_pad) + n0 + lane] =
        static_cast<std::uint8_t>(__nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3));
  }
}

template <int E>
void quantize_rows(const bf16* X, long heads, int rows, int rows_per_scale, bool per_tensor, bool hadamard,
                   float* descale, std::uint8_t* X8, cudaStream_t stream) {
  const int blocks = (rows + rows_per_scale - 1) / rows_per_scale;
  const long n = heads * blocks;
  ladder::DeviceBuffer<float> scale(n);
  rows_amax<E><<<unsigned(n), kThreads, 0, stream>>>(X, rows, rows_per_scale, blocks, hadamard, descale);
  CUDA_CHECK_LAUNCH();
  finalise_scales<<<1, kThreads, 0, stream>>>(descale, scale.data(), int(n), per_tensor);
  CUDA_CHECK_LAUNCH();
  rows_quantize<E><<<unsigned(n), kThreads, 0, stream>>>(X, rows, rows_per_scale, blocks, hadamard, scale.data(), X8);
  CUDA_CHECK_LAUNCH();
  CUDA_CHECK(cudaStreamSynchronize(stream));  // `scale` is freed on return
}

template <int D>
void quantize_v(const bf16* V, long kv_heads, int N_kv, bool per_tensor, float* descale, std::uint8_t* Vt8,
                cudaStream_t stream) {
  const int chunks = (N_kv + kVKeysPerBlock - 1) / kVKeysPerBlock, N_kv_pad = fp8_kv_pad(N_kv);
  const long n = kv_heads * D;
  ladder::DeviceBuffer<float> scale(n);
  CUDA_CHECK(cudaMemsetAsync(descale, 0, n * sizeof(float), stream));
  v_channel_amax<<<unsigned(kv_heads * chunks), kThreads, 0, stream>>>(V, N_kv, D, chunks,
                                                                       reinterpret_cast<unsigned*>(descale));
  CUDA_CHECK_LAUNCH();
  finalise_scales<<<1, kThreads, 0, stream>>>(descale, scale.data(), int(n), per_tensor);
  CUDA_CHECK_LAUNCH();
  v_transpose_quantize<D>
      <<<unsigned(kv_heads * (N_kv_pad / 32)), kThreads, 0, stream>>>(V, N_kv, N_kv_pad, scale.data(), Vt8);
  CUDA_CHECK_LAUNCH();
  CUDA_CHECK(cudaStreamSynchronize(stream));
}

}  // namespace

const char* name(Fp8Scaling s) { return s == Fp8Scaling::PerTensor ? "tensor" : "block"; }

Fp8Buffers::Fp8Buffers(const ladder::AttentionShape& shape)
    : s(shape),
      Q8(shape.elems()),
      K8(shape.kv_elems()),
      Vt8(fp8_vt_elems(shape)),
      descale_q(fp8_q_scales(shape)),
      descale_k(fp8_k_scales(shape)),
      descale_v(fp8_v_scales(shape)) {}

void Fp8Buffers::poison() {
  Q8.poison(), K8.poison(), Vt8.poison();
  descale_q.poison(), descale_k.poison(), descale_v.poison();
}

Fp8Inputs Fp8Buffers::inputs() const {
  return {Q8.data(), K8.data(), Vt8.data(), descale_q.data(), descale_k.data(), descale_v.data()};
}

// Everything quantize_fp8 refuses, checked before any allocation or launch.
void check_inputs(const ladder::AttentionShape& s, const bf16* Q, const bf16* K, const bf16* V) {
  const std::string who = "fa3::quantize_fp8";
  ladder::validate(s, kFp8QuantD, ladder::KvHeads::Any);
  ladder::check_pointers(who, {{"Q", Q}, {"K", K}, {"V", V}}, 16);
  ladder::check_grid(who + " (Q)", fp8_q_scales(s));
  ladder::check_grid(who + " (K)", fp8_k_scales(s));
  ladder::check_grid(who + " (V)", s.kv_heads() * std::size_t(fp8_kv_pad(s.nkv()) / 32));
}

void quantize_fp8_into(const ladder::AttentionShape& s, const bf16* Q, const bf16* K, const bf16* V,
                       const Fp8Options& opt, Fp8Buffers& out, cudaStream_t stream) {
  check_inputs(s, Q, K, V);
  const auto& o = out.s;
  if (o.B != s.B || o.H != s.H || o.hkv() != s.hkv() || o.N != s.N || o.nkv() != s.nkv() || o.d != s.d)
    throw std::invalid_argument("fa3::quantize_fp8: the output buffers were made for " + o.str() + ", not " + s.str() +
                                " (construct Fp8Buffers with the same shape)");
  const bool per_tensor = opt.scaling == Fp8Scaling::PerTensor;
  // E = d / 32 elements per lane of a row's warp.
  auto run = [&](auto d_) {
    constexpr int d = decltype(d_)::value, E = d / 32;
    quantize_rows<E>(Q, s.heads(), s.N, kFp8RowsPerQScale, per_tensor, opt.hadamard, out.descale_q.data(),
                     out.Q8.data(), stream);
    quantize_rows<E>(K, s.kv_heads(), s.nkv(), kFp8KeysPerKScale, per_tensor, opt.hadamard, out.descale_k.data(),
                     out.K8.data(), stream);
    quantize_v<d>(V, s.kv_heads(), s.nkv(), per_tensor, out.descale_v.data(), out.Vt8.data(), stream);
  };
  if (s.d == 64)
    run(std::integral_constant<int, 64>{});
  else if (s.d == 128)
    run(std::integral_constant<int, 128>{});
  else
    run(std::integral_constant<int, 256>{});
}

Fp8Buffers quantize_fp8(const ladder::AttentionShape& s, const bf16* Q, const bf16* K, const bf16* V,
                        const Fp8Options& opt, cudaStream_t stream) {
  check_inputs(s, Q, K, V);  // before any allocation
  Fp8Buffers out(s);
  quantize_fp8_into(s, Q, K, V, opt, out, stream);
  return out;
}

Fp8Buffers quantize_fp8(const ladder::AttentionShape& s, const bf16* Q, const bf16* K, const bf16* V,
                        Fp8Scaling scaling, cudaStream_t stream) {
  return quantize_fp8(s, Q, K, V, Fp8Options{scaling, false}, stream);
}

}  // namespace fa3
