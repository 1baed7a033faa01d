// bf16 on the host: the tensor-core chapters keep their inputs in bf16 (8 significant
// bits, fp32's exponent range), and check against an fp64 reference computed on the
// very values the GPU sees: the inputs rounded to bf16 first. Rounding is IEEE
// round-to-nearest-even, the same as __float2bfloat16_rn on the device. No CUDA syntax.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>
#include <cstring>
#include <vector>

namespace ladder {

using bf16 = __nv_bfloat16;

inline std::uint16_t bf16_bits(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fc0;  // NaN stays a (quiet) NaN
  u += 0x7fffu + ((u >> 16) & 1u);                     // round to nearest, ties to even
  return static_cast<std::uint16_t>(u >> 16);
}
inline float bf16_value(std::uint16_t bits) {
  const std::uint32_t u = std::uint32_t(bits) << 16;
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}
// The fp32 value nearest to x that bf16 can hold.
inline float round_to_bf16(float x) { return bf16_value(bf16_bits(x)); }

inline std::vector<bf16> to_bf16(const std::vector<float>& x) {
  std::vector<bf16> y(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    __nv_bfloat16_raw raw;
    raw.x = bf16_bits(x[i]);
    y[i] = raw;
  }
  return y;
}
inline std::vector<float> from_bf16(const std::vector<bf16>& x) {
  std::vector<float> y(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) y[i] = bf16_value(static_cast<__nv_bfloat16_raw>(x[i]).x);
  return y;
}
inline std::vector<float> round_to_bf16(std::vector<float> x) {
  for (float& v : x) v = round_to_bf16(v);
  return x;
}

}  // namespace ladder
