// Chapter 12, FP8: turning bf16 Q, K, V into what the FP8 forward reads (fa3.h, Fp8Inputs).
// Defined in fp8_quant.cu; no CUDA syntax here, so .cpp files include it.
//
// e4m3 keeps 3 mantissa bits and reaches 448, so a tensor is scaled before it is rounded:
//   amax = max |x| over a block,  x8 = e4m3_rn_satfinite(x * (448 / amax)),  descale = amax / 448
// and the real value is x8 * descale. The blocks (the contract with the kernel, fa3.h):
//   Q  one scale per 64 query rows of a head     (a consumer warpgroup's rows)
//   K  one scale per 128 keys of a KV head       (one K_j tile)
//   V  one scale per channel of a KV head        (applied to O at the end: exact)
// PerTensor takes one amax over the whole tensor and writes it into every entry, so the
// kernel has one code path.
//
// Hadamard ("incoherent processing"): Q and K rows are multiplied by the orthonormal d x d
// Walsh-Hadamard matrix H first. H H^T = I, so (Q H)(K H)^T = Q K^T in exact arithmetic:
// the scores do not change, but a few large channels are spread over all d, so amax drops
// and the rounding errors of q_k k_k stop piling up on the same channel. It is done in fp32
// inside the quantisation kernels (no extra bf16 rounding).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "attention_shape.h"
#include "bf16.h"
#include "device_buffer.h"
#include "fa3.h"

namespace fa3 {

enum class Fp8Scaling { PerTensor, PerBlock };
const char* name(Fp8Scaling s);  // "tensor", "block"

// The orthonormal scaling 1/sqrt(d) of the Walsh-Hadamard transform, one fp32 constant that
// the kernels and the host model (fp8_emulate.cpp) multiply by, so both round alike.
inline constexpr float kHadamardNorm64 = 0.125f, kHadamardNorm128 = 0.0883883476483184405501f,
                       kHadamardNorm256 = 0.0625f;
inline constexpr float hadamard_norm(int d) {
  return d == 64 ? kHadamardNorm64 : d == 128 ? kHadamardNorm128 : kHadamardNorm256;
}

// Below this amax a block is treated as all zeros (448 / amax would overflow fp32).
inline constexpr float kFp8MinAmax = 1e-30f;
inline constexpr float kE4m3Max = 448.0f;

struct Fp8Options {
  Fp8Scaling scaling = Fp8Scaling::PerBlock;
  bool hadamard = false;  // rotate Q and K along d before quantising
};

// Entries of each descale array (fa3.h): [B*H][ceil(N/64)], [B*H_kv][ceil(N_kv/128)], [B*H_kv][d].
inline std::size_t fp8_q_scales(const ladder::AttentionShape& s) {
  return s.heads() * std::size_t((s.N + kFp8RowsPerQScale - 1) / kFp8RowsPerQScale);
}
inline std::size_t fp8_k_scales(const ladder::AttentionShape& s) {
  return s.kv_heads() * std::size_t((s.nkv() + kFp8KeysPerKScale - 1) / kFp8KeysPerKScale);
}
inline std::size_t fp8_v_scales(const ladder::AttentionShape& s) { return s.kv_heads() * std::size_t(s.d); }
inline std::size_t fp8_vt_elems(const ladder::AttentionShape& s) {
  return s.kv_heads() * std::size_t(s.d) * std::size_t(fp8_kv_pad(s.nkv()));
}

// Device memory of the FP8 inputs of one problem (sizes from the shape).
struct Fp8Buffers {
  ladder::AttentionShape s;
  ladder::DeviceBuffer<std::uint8_t> Q8, K8, Vt8;
  ladder::DeviceBuffer<float> descale_q, descale_k, descale_v;

  Fp8Buffers() = default;
  explicit Fp8Buffers(const ladder::AttentionShape& shape);
  void poison();  // 0xFF everywhere: an e4m3 NaN, and a NaN scale
  Fp8Inputs inputs() const;
};

// Quantises bf16 Q [B, H, N, d], K and V [B, H_kv, N_kv, d] (device pointers, 16-byte
// aligned) on the GPU: amax reductions, then Q8, K8 and the transposed, key-permuted,
// padded Vt8. Throws std::invalid_argument before any launch for a bad shape, d not in
// kFp8QuantD, or a null or misaligned pointer; into `out` also when out was made for
// another shape.
Fp8Buffers quantize_fp8(const ladder::AttentionShape& s, const bf16* Q, const bf16* K, const bf16* V,
                        Fp8Scaling scaling, cudaStream_t stream = nullptr);
Fp8Buffers quantize_fp8(const ladder::AttentionShape& s, const bf16* Q, const bf16* K, const bf16* V,
                        const Fp8Options& opt, cudaStream_t stream = nullptr);
void quantize_fp8_into(const ladder::AttentionShape& s, const bf16* Q, const bf16* K, const bf16* V,
                       const Fp8Options& opt, Fp8Buffers& out, cudaStream_t stream = nullptr);

}  // namespace fa3
