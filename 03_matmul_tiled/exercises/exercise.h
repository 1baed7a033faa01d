// Chapter 03 exercise (README, "Exercises", 5): a shared-memory layout for a 32 x 32
// tile that a warp writes row by row (lane = column) and reads column by column
// (lane = row), the two halves of a transpose, both without bank conflicts.
// You write mine::transpose_offset in mine.cpp; the tests measure it with the bank
// model (bank_model.h):
//   build/bin/03_matmul_tiled_exercise --gtest_filter='Exercise*'          yours
//   build/bin/03_matmul_tiled_test --gtest_filter='CpuExercise*'       the references
#pragma once

namespace mine {
// The 4-byte word where element (row, col) of the tile lives, 0 <= row, col < 32.
// Every element needs its own word, and the tile may use at most 32 x 33 words.
long transpose_offset(int row, int col);
}  // namespace mine

namespace solution {
long transpose_offset(int row, int col);           // padding
long transpose_offset_swizzled(int row, int col);  // no extra memory
}  // namespace solution
