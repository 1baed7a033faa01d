// The tests of chapter 04's exercise 3: a function pair (update, merge) against the
// chapter's own osm::update / osm::merge, step by step.
//   CpuExerciseSolution.*  the reference: runs with every `ctest`
//   Exercise.*             your mine.cpp: build/bin/04_online_softmax_exercise --gtest_filter='Exercise*'
#include <cmath>
#include <string>
#include <vector>

#include "exercise.h"
#include "gtest_helpers.h"

namespace {

using Pair = osm::MaxSum<double>;
using Update = Pair (*)(Pair, double);
using Merge = Pair (*)(Pair, Pair);

std::string str(Pair p) { return "(" + std::to_string(p.m) + ", " + std::to_string(p.l) + ")"; }
bool same(Pair a, Pair b) {
  if (std::isnan(a.m) || std::isnan(a.l)) return false;
  if (a.m != b.m) return false;  // the max is exact: no rounding in max()
  return std::fabs(a.l - b.l) <= 1e-12 * std::fabs(b.l);
}

// Rows a learner's version must survive: the worked example, leading -inf, all -inf,
// a new max at every step, logits near fp32's exp overflow, and random rows.
std::vector<std::vector<double>> rows(std::uint64_t seed) {
  std::vector<std::vector<double>> all = {{1, 3, 2},
                                          {0.5, 2, 1, 4, 3, 6, 2.5, 5},
                                          {-INFINITY, 2, -INFINITY, 1},
                                          {-INFINITY, -INFINITY},
                                          {1, 2, 3, 4, 5, 6, 7, 8},
                                          {700, -700, 710, 0}};
  for (int r = 0; r < 4; ++r) {
    const std::vector<float> x = ladder::random_uniform(37, seed + r, -20.0f, 20.0f);
    all.emplace_back(x.begin(), x.end());
  }
  return all;
}

void check_update(Update update, std::uint64_t seed) {
  for (const std::vector<double>& x : rows(seed)) {
    Pair mine, ref;
    for (std::size_t j = 0; j < x.size(); ++j) {
      mine = update(mine, x[j]);
      ref = osm::update(ref, x[j]);
      ASSERT_TRUE(same(mine, ref)) << "after x_" << j + 1 << " = " << x[j] << ": yours " << str(mine)
                                   << ", the reference trace " << str(ref);
    }
  }
}

void check_merge(Merge merge, std::uint64_t seed) {
  for (const std::vector<double>& x : rows(seed))
    for (int B : {1, 2, 3, 5}) {
      Pair mine, ref;
      for (std::size_t begin = 0; begin < x.size(); begin += B) {
        const int n = static_cast<int>(std::min<std::size_t>(B, x.size() - begin));
        const Pair block = osm::block_stats(x.data() + begin, n);
        mine = merge(mine, block);
        ref = osm::merge(ref, block);
        ASSERT_TRUE(same(mine, ref)) << "blocks of " << B << ", after merging the block starting at x_" << begin + 1
                                     << " " << str(block) << ": yours " << str(mine) << ", the reference " << str(ref);
      }
      // The merge does not care about the order: the last block first gives the same pair.
      const Pair swapped = merge(osm::block_stats(x.data(), 1), mine);
      ASSERT_TRUE(same(swapped, osm::merge(osm::block_stats(x.data(), 1), ref)));
    }
}

TEST(CpuExerciseSolution, OnlineUpdateFollowsTheTrace) {
  LADDER_TEST_SEED(seed);
  check_update(solution::update, seed);
}
TEST(CpuExerciseSolution, BlockMergeFollowsTheTrace) {
  LADDER_TEST_SEED(seed);
  check_merge(solution::merge, seed);
}

#if LADDER_EXERCISE_MINE  // only in 04_online_softmax_exercise: the default build never compiles mine.cpp
// The stubs as given return their (first) input: the empty row stays empty.
bool is_empty(Pair p) { return p.m == -INFINITY && p.l == 0.0; }

TEST(Exercise, OnlineUpdateFollowsTheTrace) {
  ASSERT_FALSE(is_empty(mine::update(Pair{}, 1.0)))
      << "unimplemented: edit 04_online_softmax/exercises/mine.cpp (update still returns its input)";
  LADDER_TEST_SEED(seed);
  check_update(mine::update, seed);
}
TEST(Exercise, BlockMergeFollowsTheTrace) {
  ASSERT_FALSE(is_empty(mine::merge(Pair{}, Pair{1.0, 1.0})))
      << "unimplemented: edit 04_online_softmax/exercises/mine.cpp (merge still returns its first input)";
  LADDER_TEST_SEED(seed);
  check_merge(mine::merge, seed);
}
#endif

}  // namespace
