#include "compare.h"

#include <cmath>
#include <cstdio>

namespace ladder {

Comparison compare(const float* out, const double* ref, std::size_t n) {
  Comparison c;
  c.n = n;
  double err2 = 0.0, ref2 = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    const double o = out[i];
    if (!std::isfinite(o)) {
      if (c.nonfinite++ == 0) c.first_nonfinite = i;
      continue;
    }
    const double e = o - ref[i];
    err2 += e * e;
    ref2 += ref[i] * ref[i];
    if (std::fabs(e) > c.max_abs) {
      c.max_abs = std::fabs(e);
      c.argmax_abs = i;
    }
  }
  // An all-zero reference (e.g. a zero row) makes the relative error meaningless:
  // then report the absolute norm, which must be 0 as well.
  c.rel_l2 = ref2 > 0.0 ? std::sqrt(err2 / ref2) : std::sqrt(err2);
  return c;
}

Comparison compare_lse(const std::vector<float>& out, const std::vector<double>& ref) {
  std::vector<float> o;
  std::vector<double> r;
  std::size_t mismatched = 0, first = 0;
  for (std::size_t i = 0; i < ref.size() && i < out.size(); ++i) {
    if (std::isinf(ref[i]) && ref[i] < 0) {
      if (!(std::isinf(out[i]) && out[i] < 0) && mismatched++ == 0) first = i;
      continue;
    }
    o.push_back(out[i]);
    r.push_back(ref[i]);
  }
  Comparison c = compare(o, r);
  c.size_mismatch = out.size() != ref.size();
  c.n = ref.size();
  if (mismatched > 0) {
    if (c.nonfinite == 0) c.first_nonfinite = first;
    c.nonfinite += mismatched;
  }
  return c;
}

Comparison compare(const std::vector<float>& out, const std::vector<double>& ref) {
  if (out.size() != ref.size()) {
    Comparison c;
    c.size_mismatch = true;
    c.n = out.size();
    return c;
  }
  return compare(out.data(), ref.data(), out.size());
}

std::string Comparison::str() const {
  if (size_mismatch) return "output and reference differ in size";
  char buf[200];
  if (nonfinite > 0) {
    std::snprintf(buf, sizeof buf, "%zu non-finite of %zu (first at %zu: unwritten or NaN/Inf), rel_l2 %.2e", nonfinite,
                  n, first_nonfinite, rel_l2);
  } else {
    std::snprintf(buf, sizeof buf, "rel_l2 %.2e, max_abs %.2e at %zu, all %zu finite", rel_l2, max_abs, argmax_abs, n);
  }
  return buf;
}

}  // namespace ladder
