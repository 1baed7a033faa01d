// Your code for chapter 06's exercise 4 (see exercise.h and the README). Write the three
// lines of FA2's inner loop for one row (new max, one rescale factor alpha, then l and O),
// and the end (one division). Then build the target 06_fa2_forward_exercise and run
//   build/bin/06_fa2_forward_exercise --gtest_filter='Exercise*'
#include "exercise.h"

namespace mine {

void fa2_step(fa2_exercise::RowState& st, const std::vector<double>& s, const std::vector<std::vector<double>>& V) {
  if (st.O.empty() && !V.empty()) st.O.assign(V[0].size(), 0.0);
  (void)s;
  // TODO: m_new = max(m, max_c s[c]); alpha = e^(m - m_new); p_c = e^(s[c] - m_new);
  //       l = alpha l + sum_c p_c;  O = alpha O + sum_c p_c V[c];  m = m_new.
}

std::vector<double> fa2_finish(const fa2_exercise::RowState& st, double& L) {
  L = st.m;  // TODO: L = m + log(l), and O / l
  return st.O;
}

}  // namespace mine
