// Chapter 06 exercise (README, "Exercises", 4): FA2's inner loop for one query row, on the
// CPU: the running max m, the running sum l and the unnormalised output O carried from
// key tile to key tile, then one division at the end. The tests compare the result with
// softmax(s) V and L = log sum e^s in fp64, for several tile widths, masks and large logits:
//   build/bin/06_fa2_forward_exercise --gtest_filter='Exercise*'          yours
//   build/bin/06_fa2_forward_test --gtest_filter='CpuExercise*'       the reference
#pragma once

#include <cmath>
#include <vector>

namespace fa2_exercise {
// What stays on chip for one query row while its block walks the key tiles.
struct RowState {
  double m = -INFINITY;   // max of the scores seen so far
  double l = 0.0;         // sum of e^(s - m) over the scores seen so far
  std::vector<double> O;  // sum of e^(s_j - m) V_j over the keys seen so far (d values)
};
}  // namespace fa2_exercise

namespace mine {
// One key tile: s[c] = the row's scores against the tile's keys (already scaled; -inf
// where masked), V[c] = the tile's value rows (d each). Updates st in place. The tile may
// be entirely masked (every s[c] = -inf).
void fa2_step(fa2_exercise::RowState& st, const std::vector<double>& s, const std::vector<std::vector<double>>& V);
// After the last tile: returns O / l and sets L = m + log(l). A row that saw no key (every
// score -inf: l = 0) returns O = 0 (d zeros) and L = -inf, never NaN: the tests check it.
std::vector<double> fa2_finish(const fa2_exercise::RowState& st, double& L);
}  // namespace mine

namespace solution {
void fa2_step(fa2_exercise::RowState& st, const std::vector<double>& s, const std::vector<std::vector<double>>& V);
std::vector<double> fa2_finish(const fa2_exercise::RowState& st, double& L);
}  // namespace solution
