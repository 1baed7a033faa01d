// Why P~ never leaves the registers, element by element (CSV), for
// scripts/figures/p_reuse.py. CPU only. For every lane and every register half of the A
// fragment of one k16 tile (tc_layout.h's mma_a), the C accumulator that c_to_a
// (fa2_tc.cuh) packs into it (tc_layout.h's mma_c, n-tile 2k or 2k + 1), with both
// positions in the 16 x 16 block of P. The tool refuses to print (exit 1) if any pair
// disagrees, so the picture can only show layouts that coincide.
//   10_fa2_tensor_cores_p_reuse
#include <iostream>
#include <stdexcept>
#include <string>

#include "09_tensor_core_matmul/tc_layout.h"
#include "cli.h"

namespace {

namespace L = tc::layout;

// c_to_a, read register by register: a[reg] = pack_bf16x2(c[2 (reg % 2)], c[2 (reg % 2) + 1])
// of c_lo (n-tile 2k) for a0, a1 and of c_hi (n-tile 2k + 1) for a2, a3; pack_bf16x2 puts
// its first argument in the low half (half 0).
struct Source {
  int n_tile, c;  // n_tile 0 = c_lo, 1 = c_hi
};
constexpr Source c_to_a_source(int reg, int half) { return {reg / 2, 2 * (reg % 2) + half}; }

}  // namespace

int main(int argc, char** argv) {
  const std::string usage =
      "10_fa2_tensor_cores_p_reuse: the S accumulator (C fragments of two adjacent n8 tiles) against the\n"
      "A fragment of one k16 tile, lane by lane and register by register (CSV), no GPU needed\n";
  return ladder::run_main(argc, argv, usage, [](ladder::Args& args) {
    args.done();
    std::cout << "lane,a_reg,a_half,n_tile,c_index,row,col\n";
    for (int lane = 0; lane < 32; ++lane)
      for (int reg = 0; reg < 4; ++reg)
        for (int half = 0; half < 2; ++half) {
          const Source src = c_to_a_source(reg, half);
          const L::Coord a = L::mma_a(lane, reg, half);
          const L::Coord c = L::mma_c(lane, src.c);
          const int c_col = 8 * src.n_tile + c.col;  // n-tile 2k + 1 holds keys 8..15 of the k16 tile
          if (a.row != c.row || a.col != c_col)
            throw std::logic_error("lane " + std::to_string(lane) + ": a" + std::to_string(reg) + " half " +
                                   std::to_string(half) + " is P[" + std::to_string(a.row) + "][" +
                                   std::to_string(a.col) + "] but c_to_a fills it with S[" + std::to_string(c.row) +
                                   "][" + std::to_string(c_col) + "]");
          std::cout << lane << ',' << reg << ',' << half << ',' << src.n_tile << ',' << src.c << ',' << a.row << ','
                    << a.col << '\n';
        }
    return 0;
  });
}
