// How close is a kernel's output to the fp64 reference?
//   rel_l2 = ||out - ref||_2 / ||ref||_2, max_abs = max |out - ref|,
//   nonfinite = elements that are NaN or Inf (a poisoned element never written
//   stays NaN, so "every element written" is nonfinite == 0).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace ladder {

// The error bounds, all in one place, each with its reason.
struct Bound {
  double rel_l2;
  const char* why;
};
// fp32 rounds with unit roundoff u = 2^-24 ~ 6e-8. A sum of n products carries a
// relative error that grows like sqrt(n)*u in practice (random rounding), so
// reductions of a few thousand terms land near 1e-6; 1e-5 leaves a margin of ~10
// and still fails any indexing, masking or synchronisation bug (those give O(1)).
inline constexpr Bound kFp32{1e-5, "fp32: sqrt(n)*2^-24 for n up to ~16k terms, x10 margin"};
// Gradients chain two more reductions on top of the forward (dP = dO V^T, then
// dS K and dS^T Q) and subtract D_i from dP_ij, which cancels digits where P is
// near uniform: one more factor of ~10 than the forward.
inline constexpr Bound kFp32Grad{1e-4, "fp32 gradients: three chained reductions and the dP - D cancellation"};
// Softmax turns an absolute error in a logit into a relative error of its
// probability: P = exp(S - m), so dP/P = dS. fp32 rounds S = scale q.k with an
// absolute error ~ 2^-24 * sqrt(d) * sum|q_k k_k|, which grows with the logits.
// Logits 100x larger than unit scale carry ~100x the error: 1e-3, not 1e-5.
inline constexpr Bound kFp32LargeLogits{1e-3, "fp32 attention with logits x100: exp() turns |S| * 2^-24 into dP/P"};
// fp16 keeps 11 significant bits (u = 2^-11 ~ 5e-4).
inline constexpr Bound kFp16{2e-3, "fp16: unit roundoff 2^-11, a few roundings per element"};

// ---- bf16 inputs on tensor cores (chapters 09+). The reference is computed in fp64 on
// the inputs already rounded to bf16, so input rounding is not an error here: what is
// left is what the kernel itself rounds.
//
// Matmul, bf16 A and B, fp32 accumulation and fp32 C: a product of two bf16 values (8
// significant bits each) is exact in fp32, so only the K-term sum rounds. Recursive
// summation is off by at most ~K u (Higham's gamma_K, u = 2^-24); the random-walk
// estimate sqrt(K) u is not safe because tensor cores truncate their partial sums
// instead of rounding them (Fasi et al., 2021), which biases the error. So the bound is
// K * 2^-24 (2.4e-4 at K = 4096), floored at 2^-20. It grows with K, and it still sits
// far below any real bug: one 16-wide slice of K missing at K = 4096 gives 6e-2.
inline Bound bf16_gemm_bound(long K) {
  const double k_u = double(K) / 16777216.0;  // K * 2^-24
  return {k_u > 9.5367431640625e-07 ? k_u : 9.5367431640625e-07,
          "bf16 x bf16 products exact in fp32; K-term fp32 sum (truncating tensor cores): K * 2^-24"};
}
// Attention forward in bf16 (chapters 10+). bf16 keeps 8 significant bits: a value m 2^e
// (m in [1, 2)) is rounded to a multiple of 2^(e-7), an error of at most u = 2^-8 of 2^e;
// spread uniformly, its rms relative to the value is u / sqrt(3) E[1/m] ~ 1.6e-3. Two
// roundings reach O: P_ij is rounded to bf16 to feed the P V product (the errors of the
// N terms are independent, so O inherits the same relative rms), and O itself is stored
// in bf16. Together ~2.3e-3; the scores, the sums and the exponentials are fp32 (~1e-6).
// The bound leaves a factor ~2: 5e-3. Any masking, indexing or rescaling bug gives O(1).
inline constexpr Bound kBf16Attention{5e-3, "bf16 attention: P and O rounded to bf16 (2 x 2^-8/sqrt(3)), x2 margin"};
// Backward in bf16: dV = P^T dO with bf16 P, dQ = dS K and dK = dS^T Q with bf16 dS, and
// the gradients stored in bf16: three roundings of ~1.6e-3 each, ~2.8e-3 together, plus
// D = rowsum(dO * O) from the bf16 O of the forward (its error is ~1e-3 of D, and D is
// small next to dP). x3.5 margin: 1e-2.
inline constexpr Bound kBf16AttentionGrad{1e-2, "bf16 gradients: P, dS and the outputs rounded to bf16, x3.5 margin"};

struct Comparison {
  std::size_t n = 0;
  std::size_t nonfinite = 0;        // NaN or Inf in the output
  std::size_t first_nonfinite = 0;  // index of the first one (valid when nonfinite > 0)
  double rel_l2 = 0.0;
  double max_abs = 0.0;
  std::size_t argmax_abs = 0;
  bool size_mismatch = false;

  bool within(const Bound& b) const { return !size_mismatch && nonfinite == 0 && rel_l2 <= b.rel_l2; }
  std::string str() const;  // "rel_l2 3.1e-07, max_abs 2.4e-06 at 17, 0 non-finite of 4096"
};

Comparison compare(const float* out, const double* ref, std::size_t n);

// The row statistic L = m + log l (log-sum-exp) of the bf16 attention chapters: fp32 scores
// of exact bf16 products, fp32 row sums, logf; the error of L stays at fp32 level.
inline constexpr Bound kLse{1e-5, "L / LSE: fp32 scores of exact bf16 products, fp32 sums, logf"};
// L against the reference: a row the reference gives -inf (a query that sees no key) must
// be -inf exactly; those rows are counted as non-finite when not, and left out of rel_l2.
Comparison compare_lse(const std::vector<float>& out, const std::vector<double>& ref);
Comparison compare(const std::vector<float>& out, const std::vector<double>& ref);

}  // namespace ladder
