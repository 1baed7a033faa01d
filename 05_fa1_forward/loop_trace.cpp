#include "loop_trace.h"

#include <algorithm>

namespace fa1 {

std::vector<Visit> loop_trace(const ladder::AttentionShape& s, const Tiles& t) {
  std::vector<Visit> visits;
  const double row = 4.0 * s.d;  // bytes of one row of Q, K, V or O
  int step = 0;
  for (int j = 0; j < t.T_c; ++j) {  // outer loop: K_j, V_j, loaded once
    const int j0 = j * t.B_c, kv_rows = std::min(t.B_c, s.N - j0);
    bool first = true;
    for (int i = s.causal ? j0 / t.B_r : 0; i < t.T_r; ++i) {  // inner loop: Q_i, O_i, l_i, m_i from HBM
      const int q_rows = std::min(t.B_r, s.N - i * t.B_r);
      Visit v{0, step++, i, j};
      if (first) v.K_read = v.V_read = kv_rows * row;
      first = false;
      v.Q_read = v.O_read = v.O_write = q_rows * row;
      v.lm_read = v.lm_write = 8.0 * q_rows;
      visits.push_back(v);
    }
  }
  return visits;
}

std::vector<SmemPart> smem_parts(int d, int B_r, int B_c) {
  const long R = ladder::round_up(B_r, kRowAlign), C = ladder::round_up(B_c, 4), ld = d + 4;
  return {{"Q_i", R * ld}, {"K_j", C * ld},           {"V_j", C * ld}, {"S_ij / P_ij", R * (C + 4)},
          {"O_i", R * ld}, {"a_row and b_row", 2 * R}};
}

}  // namespace fa1
