// Host-side pieces the executable and the tests share: the bf16 problem (chapter 10's
// fa2tc::Problem: inputs rounded to bf16, so the fp64 reference sees what the GPU sees), the
// kernels run on it with poisoned outputs, and an FP8 version of it quantised on the host,
// written straight from fa3.h's contract (the kernel's own check of that contract,
// independent of fp8_quant.cu).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "10_fa2_tensor_cores/fa2_tc_problem.h"
#include "attention_shape.h"
#include "compare.h"
#include "device_buffer.h"
#include "fa3.h"

namespace fa3 {

using fa2tc::make_problem;
using fa2tc::Problem;

// L = m + ln l from fp32 scores: chapter 10's bound (|error| <= 1e-4 for unit-scale logits,
// scaled with the logits; see test_fa3.cpp).
inline constexpr double kLMaxAbs = 1e-4;

// FP8 O against the fp64 reference on the dequantised e4m3 inputs (Q8 * descale, ...): what
// is left is the kernel's own arithmetic (fp8_emulate.h has the whole account, measured):
// P~ in [0, 1] rounded to e4m3 for P V, 3 mantissa bits: relative error at most 2^-4, RMS
// 2^-3/sqrt(12) = 3.6e-2 per element; O_i is a convex combination of rows of V, so its error
// is at most that RMS (no averaging assumed: one or two keys may dominate a row). FP8
// wgmma's ~13-bit sums of S and of P V add 3e-3 to 7e-3 (fp8_emulate.h, kFp8VsModel), bf16 O
// its 2^-9: 5e-2 is x1.3 over the sum. A key permutation or a scale that is wrong moves O by
// O(1).
inline constexpr ladder::Bound kFp8Attention{
    5e-2, "FP8 attention: P~ rounded to e4m3 (RMS 2^-3/sqrt(12)), 13-bit wgmma sums, bf16 O; x1.3"};
// L in FP8: the scores are exact e4m3 products summed by the tensor cores with ~13 fraction
// bits (not fp32's 23), so S is off by ~2^-13 of its partial sums, and L = m + log l follows
// S: 1e-3 in place of bf16's 1e-4 at unit logit scale. Logits scaled by s scale those partial
// sums, and the error with them: the bound is 1e-3 x max(1, s) (at Q x 10 the measured L
// error is 4.7e-3, within 1e-2).
inline double fp8_l_max_abs(double logit_scale) { return 1e-3 * (logit_scale > 1.0 ? logit_scale : 1.0); }

// The problem on the device, outputs poisoned before every run.
struct OnDevice {
  ladder::AttentionShape s;
  ladder::DeviceBuffer<bf16> Q, K, V, O;
  ladder::DeviceBuffer<float> L;
  // Outputs are poisoned before every run, so that an element a kernel skips cannot pass a
  // check. Timed runs turn it off: a memset inside the timed region would be timed with the kernel.
  bool poison = true;
  explicit OnDevice(const Problem& p);
  void forward(const ForwardOptions& opt = {});
  void forward_fa2();  // chapter 10's kernel on the same inputs
  std::vector<float> O_host() const;
  std::vector<float> L_host() const { return L.download(); }
};

// The problem quantised to e4m3 on the host (per tensor: one amax; per block: Q per 64
// rows, K per 128 keys, V per channel, as fa3.h), on the device, and the dequantised inputs
// the fp64 reference is given.
struct Fp8Problem {
  ladder::AttentionShape s;
  std::vector<float> Q, K, V;  // dequantised: exactly what the kernel computes with
  ladder::DeviceBuffer<std::uint8_t> Q8, K8, Vt8;
  ladder::DeviceBuffer<float> descale_q, descale_k, descale_v;
  ladder::DeviceBuffer<bf16> O;
  ladder::DeviceBuffer<float> L;
  Fp8Inputs inputs() const;
  void forward(const Fp8ForwardOptions& opt = {});
  std::vector<float> O_host() const;
  std::vector<float> L_host() const { return L.download(); }
  bool poison = true;  // as OnDevice's
};
Fp8Problem quantize_on_host(const Problem& p, bool per_block);

// How many elements of two outputs differ in their bits (NaN against NaN included).
std::size_t bits_differ(const std::vector<float>& a, const std::vector<float>& b);

}  // namespace fa3
