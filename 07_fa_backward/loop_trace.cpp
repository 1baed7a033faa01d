#include "loop_trace.h"

#include <algorithm>
#include <map>
#include <utility>

namespace fa2 {

std::vector<BackwardVisit> backward_trace(const ladder::AttentionShape& s, const BackwardTiles& t, bool rotate) {
  std::vector<BackwardVisit> visits;
  for (int j = 0; j < t.T_c; ++j) {  // the grid: one block per K_j, V_j
    const int j0 = j * t.B_c;
    // fa_backward.cu, dk_dv_kernel: i_first, steps, start, q_tile_row0(step).
    const int i_first = s.causal ? j0 / t.B_r : 0, steps = (s.N + t.B_r - 1) / t.B_r - i_first;
    const int start = s.causal || !rotate ? 0 : j % steps;
    for (int step = 0; step < steps; ++step) visits.push_back({j, step, i_first + (start + step) % steps, j});
  }
  return visits;
}

int max_blocks_per_dq_tile(const std::vector<BackwardVisit>& visits) {
  std::map<std::pair<int, int>, int> count;  // (step, i) -> blocks
  int most = 0;
  for (const BackwardVisit& v : visits) most = std::max(most, ++count[{v.step, v.i}]);
  return most;
}

std::vector<fa1::SmemPart> backward_smem_parts(int d, const BackwardTiles& t) {
  const long ld = d + 4, ld_s = t.B_c + 4;
  return {{"K_j", t.B_c * ld},          {"V_j", t.B_c * ld},           {"Q_i", t.B_r * ld},        {"dO_i", t.B_r * ld},
          {"P_ij", long(t.B_r) * ld_s}, {"dS_ij", long(t.B_r) * ld_s}, {"L_i and D_i", 2L * t.B_r}};
}

std::vector<fa1::SmemPart> dq_smem_parts(int d, const BackwardTiles& t) {
  const long ld = d + 4, ld_s = t.B_c + 4;
  return {{"Q_i", t.B_r * ld}, {"dO_i", t.B_r * ld},          {"K_j (two buffers)", 2L * t.B_c * ld},
          {"V_j", t.B_c * ld}, {"dS_ij", long(t.B_r) * ld_s}, {"L_i and D_i", 2L * t.B_r}};
}

}  // namespace fa2
