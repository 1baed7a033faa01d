// Chapter 12, FP8: the host model of the FP8 forward's numerics (host only, Eigen inside
// fp8_emulate.cpp). Three parts:
//   1. e4m3 rounding and the quantisation of Q, K, V, bit for bit what fp8_quant.cu's
//      kernels write (the tests compare every byte and every scale);
//   2. the FP8 forward on sampled query rows: fp64 scores from the quantised values times
//      their descales, the online softmax tile by tile as the kernel runs it, P~ rounded to
//      e4m3 for P V, l summed from the unrounded P~; everything else exact (fp64);
//   3. the fp64 reference on the same rows, from the unquantised (bf16-rounded) inputs.
// The difference between 2 and 3 is what FP8 itself costs; the difference between the GPU
// kernel and 2 is only the kernel's own fp32/bf16 roundings (the tight test oracle).
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "attention_shape.h"
#include "compare.h"
#include "fa3_config.h"  // kFp8KeyTile
#include "fp8_quant.h"

namespace fa3 {

// ---- Bounds (rel L2 of O) -------------------------------------------------------------------
//
// FP8 kernel vs this model on the same quantised inputs (same bytes, same scales, same B_c
// and tile order). The model sums in fp64; FP8 wgmma adds its products with ~13 fraction bits
// (aligned to the largest term, the rest truncated; DeepSeek-V3 report, "increasing
// accumulation precision"), not fp32's 23. Two consequences, both measured on the H200
// (N sweep, uniform inputs, unit logit scale: vs_model = 3.3e-3 at N = 1K ...
// 7.1e-3 at 64K, fitted within 10% by sqrt(a^2 + b^2 N)):
//  a. S = Q K^T (4 instructions of k = 32 for d = 128) is off by dS ~ 2^-13 of its partial
//     sums, ~5e-5 at unit scale. A P~ within dS of an e4m3 rounding midpoint rounds to the
//     neighbouring value (~9% away); a fraction ~23 dS of the P~ do, so O moves by
//     ~sqrt(0.19 dS) ~ 3e-3 rms whatever N is; bf16 O (1.1e-3) adds in quadrature:
//     a ~ 3.2e-3 (fit: 3.16e-3).
//  b. O = sum_j P~_j V_j accumulates over N/32 instructions, each rounding the running sum to
//     ~13 bits. With zero-mean V the sum is a random walk, and so are its roundings: the
//     relative error grows like 2^-13 sqrt(N / 64), i.e. b ~ 2^-13 / 8 ~ 1.5e-5 per sqrt(key)
//     (fit: 2.5e-5, the same size; the alignment truncates the 32 products too).
// The bound is the fit x2: the Hadamard and scaling variants scatter by up to 1.15x at one
// point, other seeds, GQA and causal shapes (fewer keys per row: smaller) by less; x2 also
// stays far below what a real bug gives (a tile visited in another order, or P~ rounded
// against another running max: independent e4m3 roundings, ~2e-2; an indexing bug O(1)).
// Not tighter than the measurement allows: an fp32-accumulation estimate (1.2e-3, x4 = 5e-3)
// would leave only 1.3x margin at N = 4K and fail from N = 32K on.
// For unit-scale logits only: a larger logit scale or outlier channels make dS larger
// (H200: 5-6e-3 at Q x 3, up to 1.4e-2 with outliers): the study reports, the tests do not
// use those inputs.
inline constexpr double kFp8VsModelFloor = 3.2e-3, kFp8VsModelPerSqrtKey = 2.5e-5;
inline double fp8_vs_model_bound(long n_keys) {
  return 2.0 * std::sqrt(kFp8VsModelFloor * kFp8VsModelFloor +
                         kFp8VsModelPerSqrtKey * kFp8VsModelPerSqrtKey * double(n_keys));
}
// The tests' sizes (N_kv <= 4096): 2 sqrt(a^2 + b^2 4096) = 7.1e-3.
inline constexpr long kFp8VsModelMaxKeys = 4096;
inline constexpr ladder::Bound kFp8VsModel{7e-3,
                                           "FP8 kernel vs host model, N_kv <= 4096: ~13-bit wgmma sums flip P~ "
                                           "roundings (3.2e-3) + P V rounded N/32 times, x2"};
// Fewer than 64 keys (N_kv < 64; causal rows see from one key up): O averages few rows of V, so
// each P~ rounding that the wgmma sums flip weighs up to 1/(keys seen) of its row instead of
// ~1/N_kv, and the flips' share of O scatters from seed to seed: up to 7.1e-3 measured at
// N = N_kv = 17, causal (H200). The floor doubled, x1.5.
inline constexpr long kFp8FewKeys = 64;
inline constexpr ladder::Bound kFp8VsModelFewKeys{1e-2,
                                                  "FP8 kernel vs host model, N_kv < 64: a flipped P~ rounding weighs "
                                                  "up to 1/(keys seen) of O; 2 x 3.2e-3, x1.5"};
inline const ladder::Bound& fp8_vs_model(long n_keys) {
  return n_keys < kFp8FewKeys ? kFp8VsModelFewKeys : kFp8VsModel;
}
// FP8 forward vs the fp64 reference on the bf16 inputs, for the tests' inputs (uniform in
// [-1, 1), logits at unit scale, per-tensor or per-block scales, d = 64 or 128). e4m3 keeps
// 3 mantissa bits: one rounding has a relative rms error of ~2^-4 / sqrt(3) x E[1/m]
// ~ 2.6% (mantissa m in [1, 2)). O = sum_j P_ij V_j / l_i with zero-mean V inherits the
// relative error of its terms: P~ rounded (~2.6%), V rounded (~2.6%), and the scores moved
// by the rounding of Q and K (|dS| ~ 1e-2 at unit scale, ~1% of P). Together ~4%
// (the model measures 3.7-4%, fp8_study); x2.5 margin. A wrong descale or a lost tile shows
// here only when it is large: this bound is the sanity check, kFp8VsModel the real test.
inline constexpr ladder::Bound kFp8VsFp64{1e-1, "FP8 vs fp64: e4m3 Q, K, V and P~ (~2.6% each, ~4% in O), x2.5"};

// ---- e4m3 on the host -------------------------------------------------------------------
// Round to nearest, ties to even; |x| >= 448 saturates to +-448 (as __NV_SATFINITE), NaN
// gives 0x7F; subnormals (multiples of 2^-9 below 2^-6) kept.
std::uint8_t e4m3_bits(float x);
float e4m3_value(std::uint8_t bits);  // exact; NaN for 0x7F and 0xFF

// x <- x H / sqrt(d) in fp32, the kernels' butterfly order (stride 1, 2, ..., d/2).
void hadamard_rotate_row(float* x, int d);

// What quantize_fp8 writes (fp8_quant.h), computed on the host from the same values: Q, K,
// V as floats holding bf16 values ([B, H, N, d], [B, H_kv, N_kv, d]).
struct Fp8HostTensors {
  ladder::AttentionShape s;
  std::vector<std::uint8_t> Q8, K8, Vt8;
  std::vector<float> descale_q, descale_k, descale_v;
};
Fp8HostTensors quantize_fp8_host(const ladder::AttentionShape& s, const float* Q, const float* K, const float* V,
                                 const Fp8Options& opt);

// The values the kernel computes with, x8 * descale in fp32, back in [B, H, N, d] and
// [B, H_kv, N_kv, d] order (V from Vt8's permuted columns): the inputs of an fp64 reference
// that sees exactly the kernel's operands (fa3_problem.h's Fp8Problem). With Hadamard they are
// the rotated Q H and K H, whose product is still Q K^T.
struct Fp8Dequantised {
  std::vector<float> Q, K, V;
};
Fp8Dequantised dequantize_fp8_host(const Fp8HostTensors& t);

// ---- The forward on sampled rows -------------------------------------------------------------
struct Fp8ModelOptions {
  int B_c = kernel::kFp8KeyTile;  // keys per step of the online softmax (the kernel's K_j tile)
  // Visit K_j from the last tile to the first, as fa3_forward.cuh does (the causal tiles that
  // need a mask come first). The order decides which running max each P~ is rounded against.
  bool reverse_tiles = true;
  // P~ = exp2(S - m + p_offset_log2) is what gets rounded: 0 is the contract (P~ in [0, 1],
  // so P~ < 2^-10 rounds to 0); 8 puts P~ in [0, 256] and keeps 8 more binades of the tail.
  int p_offset_log2 = 0;
  bool round_p = true;  // false: P~ stays fp64 (isolates the error of the quantised inputs)
  // Of every 8 consecutive groups of 8 keys of a tile, how many take their exponential from soft_exp2.h's
  // exp2_poly (fp32, on the FMA pipes) instead of an exact one, as the kernel splits them
  // (fa3_rows.cuh, SplitExp2; fa3::Fp8ForwardOptions): 0 is the hardware's everywhere, 8 none.
  int poly_eighths = 0;
  // The max rule (attention_rows.cuh, OnlineSoftmax): m_i follows a row's max only when a tile
  // raises it by more than rescale_log2 (log2 units), as the kernel's (fa3_config.h, kRescaleLog2); 0 is
  // FA2's exact running max. It decides which running max each P~ is rounded against.
  int rescale_log2 = kernel::kFa4RescaleLog2;
};

// `count` query rows spread evenly over [0, N), the first and the last included (all rows
// when count >= N).
std::vector<int> sample_rows(int N, int count);

// O [heads][rows.size()][d] and L [heads][rows.size()] (natural log) of the sampled rows of
// every query head; a row that sees no key has O = 0, L = -inf.
struct RowsForward {
  std::vector<double> O, L;
};
RowsForward fp8_forward_model(const Fp8HostTensors& t, const std::vector<int>& rows, const Fp8ModelOptions& opt = {});
RowsForward reference_rows(const ladder::AttentionShape& s, const float* Q, const float* K, const float* V,
                           const std::vector<int>& rows);

// The sampled rows of a full [B, H, N, d] output (a GPU result), in RowsForward's order.
std::vector<float> gather_rows(const ladder::AttentionShape& s, const std::vector<float>& O,
                               const std::vector<int>& rows);
// ||a - b|| / ||b|| in fp64 (the model's O against the reference's).
double rel_l2(const std::vector<double>& a, const std::vector<double>& b);

}  // namespace fa3
