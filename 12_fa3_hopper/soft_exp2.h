// 2^x on the FMA pipes instead of the special function unit (FlashAttention-4's software exp2):
// x = n + f with n = floor(x) and f in [0, 1); 2^f by a cubic; n added into the exponent bits.
// The MUFU does 16 ex2 per clock per SM, the FMA pipes 128 FMAs: at FP8 rates the exponentials of
// a score tile take as long as its GEMMs, so computing a share of them here lets both pipes work.
// On sm_90a it compiles to ten instructions (FMNMX, FADD.RM, two FADD, three FFMA, LEA, FSETP, FSEL),
// none of them on the MUFU or on the conversion unit, which issues at the MUFU's rate.
//
// The cubic 1 + c1 f + c2 f^2 + c3 f^3 minimises the largest relative error on [0, 1] with
// p(1) = 2 (so 2^x stays continuous and monotone across integers): at most 1.04e-4, far below
// what P~ is rounded to afterwards (bf16: 2^-9, e4m3: 2^-4). The softmax only calls it with
// x <= 0 (scores minus the running max); x below -126 returns 2^-126 p(f) (< 1.2e-38: 0 after
// any rounding of P~) and -inf returns 0. Header-only, host and device (fp8_emulate.cpp's model
// calls the same code).
#pragma once

#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#include "numeric.h"  // LADDER_HOST_DEVICE

namespace fa3 {

inline constexpr float kExp2C1 = 0.6954243f, kExp2C2 = 0.22630768f, kExp2C3 = 0.07826797f;

LADDER_HOST_DEVICE inline float exp2_poly(float x) {
  const float xc = fmaxf(x, -126.0f);
#if defined(__CUDA_ARCH__)
  // floor on the FMA pipe: 1.5 * 2^23 + xc rounded down has ulp 1, so floor(xc) lands in the low
  // mantissa bits. floorf and a float-to-int conversion would run on the conversion unit, which
  // issues at the MUFU's rate: no gain over ex2.approx.
  const float t = __fadd_rd(xc, 12582912.0f);
  const std::int32_t n = __float_as_int(t) - 0x4B400000;
  const float f = xc - (t - 12582912.0f);
#else
  const float fl = std::floor(xc);
  const std::int32_t n = static_cast<std::int32_t>(fl);
  const float f = xc - fl;  // exact, as the device's: both give the same bits
#endif
  const float p = fmaf(fmaf(fmaf(kExp2C3, f, kExp2C2), f, kExp2C1), f, 1.0f);
  std::int32_t bits;
  std::memcpy(&bits, &p, sizeof bits);
  bits += n * (1 << 23);  // 2^n: n added to the exponent field
  float y;
  std::memcpy(&y, &bits, sizeof y);
  return x >= -127.0f ? y : 0.0f;  // -inf (a masked score) gives 0, by a select, not a branch
}

namespace kernel {
// y[i] = exp2_poly(x[i]) computed by the GPU (soft_exp2.cu): the test checks the device's floor
// gives the host's bits. x, y: n floats of device memory.
void exp2_poly_on_device(const float* x, float* y, int n, cudaStream_t stream = nullptr);
}  // namespace kernel

}  // namespace fa3
