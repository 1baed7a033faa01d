// The tests of chapter 03's exercise 5, on the bank model (bank_model.h).
//   CpuExerciseSolution.*  both references: run with every `ctest`
//   Exercise.*             your mine.cpp: build/bin/03_matmul_tiled_exercise --gtest_filter='Exercise*'
#include "bank_model.h"
#include "exercise.h"
#include "gtest_helpers.h"

namespace {

void check_layout(long (*offset)(int, int)) {
  const banks::TransposeCost t = banks::transpose_cost(offset);
  ASSERT_TRUE(t.one_to_one) << "two elements share a word (or an offset is negative): the tile would lose data";
  EXPECT_LE(t.words_used, 32 * 33) << "the layout uses " << t.words_used << " words; at most 32 x 33 = 1056";
  EXPECT_EQ(t.store.wavefronts, 1) << "a row-wise store (lane = column) takes " << t.store.wavefronts
                                   << " wavefronts: " << t.store.worst_bank
                                   << " lanes want different words of one bank";
  EXPECT_EQ(t.load.wavefronts, 1) << "a column read (lane = row) takes " << t.load.wavefronts
                                  << " wavefronts: " << t.load.worst_bank << " lanes want different words of one bank";
}

TEST(CpuExerciseSolution, TransposeLayoutIsConflictFreeBothWays) {
  check_layout(solution::transpose_offset);
  check_layout(solution::transpose_offset_swizzled);
}

// The starting point of the exercise really is the problem: the plain layout's column read
// is a 32-way conflict.
TEST(CpuExerciseSolution, PlainLayoutColumnReadIs32Way) {
  const banks::TransposeCost t = banks::transpose_cost([](int r, int c) { return long(r) * 32 + c; });
  EXPECT_EQ(t.store.wavefronts, 1);
  EXPECT_EQ(t.load.wavefronts, 32);
}

#if LADDER_EXERCISE_MINE  // only in 03_matmul_tiled_exercise: the default build never compiles mine.cpp
TEST(Exercise, TransposeLayoutIsConflictFreeBothWays) {
  bool plain = true;  // the stub as given
  for (int r = 0; r < 32; ++r)
    for (int c = 0; c < 32; ++c) plain = plain && mine::transpose_offset(r, c) == long(r) * 32 + c;
  ASSERT_FALSE(plain) << "unimplemented: edit 03_matmul_tiled/exercises/mine.cpp (still the plain row-major layout)";
  check_layout(mine::transpose_offset);
}
#endif

}  // namespace
