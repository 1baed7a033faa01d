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
Comparison compare(const std::vector<float>& out, const std::vector<double>& ref);

}  // namespace ladder
