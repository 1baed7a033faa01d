// References for chapter 03's exercise 5. Two answers, both one wavefront each way.
#include "exercise.h"

namespace solution {

// One float of padding per row: element (r, c) is in bank (33 r + c) % 32 = (r + c) % 32.
// A row (fixed r) still covers all 32 banks; so does a column (fixed c) now.
long transpose_offset(int row, int col) { return long(row) * 33 + col; }

// A swizzle: keep 32 words per row and permute the columns of row r by XOR with r.
// A row still holds 32 distinct columns (c ^ r is a permutation), and a column c sits in
// bank c ^ r of row r, different for every r. No memory is spent; CUTLASS and the
// tensor-core chapters use this form.
long transpose_offset_swizzled(int row, int col) { return long(row) * 32 + (col ^ row); }

}  // namespace solution
