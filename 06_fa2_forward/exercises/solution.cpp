// The reference for chapter 06's exercise 4: fa_forward.cu's inner loop, for one row,
// in fp64 (the same statements as 06's tile_model.cpp).
#include <algorithm>

#include "exercise.h"

namespace solution {

namespace {
// e^(x - m), but 0 when m is -inf (a row that has seen only masked keys), not NaN.
double exp_shifted(double x, double m) { return m == -INFINITY ? 0.0 : std::exp(x - m); }
}  // namespace

void fa2_step(fa2_exercise::RowState& st, const std::vector<double>& s, const std::vector<std::vector<double>>& V) {
  if (st.O.empty() && !V.empty()) st.O.assign(V[0].size(), 0.0);
  double m_new = st.m;
  for (double x : s) m_new = std::max(m_new, x);
  const double alpha = exp_shifted(st.m, m_new);  // the one rescale factor (FA1 had two)
  st.l *= alpha;
  for (double& o : st.O) o *= alpha;
  for (std::size_t c = 0; c < s.size(); ++c) {
    const double p = exp_shifted(s[c], m_new);  // P~ against the new max directly: FA1's beta is 1
    st.l += p;
    for (std::size_t k = 0; k < st.O.size(); ++k) st.O[k] += p * V[c][k];
  }
  st.m = m_new;
}

std::vector<double> fa2_finish(const fa2_exercise::RowState& st, double& L) {
  L = st.m + std::log(st.l);  // -inf for a row that saw no key (l = 0)
  std::vector<double> O = st.O;
  for (double& o : O) o = st.l > 0 ? o / st.l : 0.0;  // one division, at the end
  return O;
}

}  // namespace solution
