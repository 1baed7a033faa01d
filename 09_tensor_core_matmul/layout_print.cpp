#include "layout_print.h"

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "tc_layout.h"

namespace tcmm {

namespace L = tc::layout;

namespace {

// A rows x cols grid of short cell strings, with row and column labels.
struct Grid {
  int rows, cols;
  std::vector<std::string> cells;
  Grid(int r, int c) : rows(r), cols(c), cells(std::size_t(r) * c, "?") {}
  std::string& at(int r, int c) { return cells[std::size_t(r) * cols + c]; }
  void print(std::ostream& out, const char* row_name, const char* col_name, int width = 7,
             const std::vector<std::string>& col_labels = {}) const {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%*s", width, "");
    out << buf;
    for (int c = 0; c < cols; ++c) {
      const std::string label = col_labels.empty() ? col_name + std::to_string(c) : col_labels[c];
      std::snprintf(buf, sizeof buf, "%*s", width, label.c_str());
      out << buf;
    }
    out << "\n";
    for (int r = 0; r < rows; ++r) {
      std::snprintf(buf, sizeof buf, "%*s", width, (row_name + std::to_string(r)).c_str());
      out << buf;
      for (int c = 0; c < cols; ++c) {
        std::snprintf(buf, sizeof buf, "%*s", width, cells[std::size_t(r) * cols + c].c_str());
        out << buf;
      }
      out << "\n";
    }
  }
};

std::string cell(int lane, const char* reg, int index) {
  return "T" + std::to_string(lane) + ":" + reg + std::to_string(index);
}

}  // namespace

void print_fragments(std::ostream& out) {
  out << "mma.sync.m16n8k16, bf16 x bf16 -> fp32: who holds what. Tn:rI = lane n, register I.\n"
         "lane = 4 g + t: g (0..7) picks the row (A, C) or column (B), t (0..3) the pair of columns.\n\n";
  Grid a(16, 16), b(16, 8), c(16, 8);
  for (int lane = 0; lane < 32; ++lane) {
    for (int reg = 0; reg < 4; ++reg)
      for (int h = 0; h < 2; ++h) {
        const L::Coord e = L::mma_a(lane, reg, h);
        a.at(e.row, e.col) = cell(lane, "a", reg);
      }
    for (int reg = 0; reg < 2; ++reg)
      for (int h = 0; h < 2; ++h) {
        const L::Coord e = L::mma_b(lane, reg, h);
        b.at(e.row, e.col) = cell(lane, "b", reg);
      }
    for (int i = 0; i < 4; ++i) {
      const L::Coord e = L::mma_c(lane, i);
      c.at(e.row, e.col) = cell(lane, "c", i);
    }
  }
  out << "A, 16 x 16 (m x k), 4 registers of 2 bf16 (the two neighbouring columns):\n";
  a.print(out, "m", "k");
  out << "\nB, 16 x 8 (k x n), 2 registers of 2 bf16 (two neighbouring k: contiguous in B^T [n][k]):\n";
  b.print(out, "k", "n");
  out << "\nC and D, 16 x 8 (m x n), 4 fp32 registers:\n";
  c.print(out, "m", "n");

  out << "\nldmatrix.x4 for A's 16 x 16 tile: lane l gives the address of row l % 16 at k = 8 (l / 16)\n"
         "(lanes 0-7 the rows of matrix 0 = register a0, 8-15 matrix 1 = a1, 16-23 a2, 24-31 a3).\n"
         "Each 16-byte row of the tile, by the lane that supplies its address:\n";
  Grid rows(16, 2);
  for (int lane = 0; lane < 32; ++lane)
    rows.at(L::ldsm_a_row(lane), L::ldsm_a_col(lane) / 8) = "T" + std::to_string(lane);
  rows.print(out, "m", "", 8, {"k0-7", "k8-15"});
  out << "Every lane then receives from matrix j, in register j, row lane / 4, columns 2 (lane % 4) + {0, 1}:\n"
         "exactly the a0..a3 of the table above. For B^T [n][k], lane l addresses row n = 8 (l / 16) + l % 8,\n"
         "k = 8 ((l / 8) % 2): registers 0, 1 = b0, b1 of the first n8 tile, 2, 3 = b0, b1 of the second.\n";
}

void print_swizzle(std::ostream& out) {
  out << "Shared memory: 32 banks of 4 bytes. A tile row of 64 bf16 is 128 bytes = 8 chunks of 16 bytes;\n"
         "chunk c of any row covers banks 4c .. 4c+3 when stored plainly. Bank group (bank / 4) of each chunk:\n\n";
  Grid plain(8, 8), swizzled(8, 8);
  for (int r = 0; r < 8; ++r)
    for (int c = 0; c < 8; ++c) {
      plain.at(r, c) = std::to_string(L::bank(L::plain_offset(r, 8 * c)) / 4);
      swizzled.at(r, c) = std::to_string(L::bank(L::swizzled_offset(r, 8 * c)) / 4);
    }
  out << "plain (offset = row * 128 + col * 2):\n";
  plain.print(out, "row", "c", 5);
  out << "\nswizzled (chunk ^= row % 8; the same as TMA's and wgmma's 128B swizzle):\n";
  swizzled.print(out, "row", "c", 5);

  out << "\nOne ldmatrix phase reads one 8 x 8 matrix: 16 bytes from each of 8 consecutive rows, same columns.\n"
         "Wavefronts (passes through the banks) per phase, for the chunk the phase reads:\n"
         "  chunk   plain   swizzled\n";
  for (int c = 0; c < 8; ++c) {
    std::uint32_t p[8], s[8];
    for (int r = 0; r < 8; ++r) p[r] = L::plain_offset(r, 8 * c), s[r] = L::swizzled_offset(r, 8 * c);
    char line[64];
    std::snprintf(line, sizeof line, "  %5d   %5d   %8d\n", c, L::ldmatrix_phase_wavefronts(p),
                  L::ldmatrix_phase_wavefronts(s));
    out << line;
  }
  out << "Plain: all 8 rows hit the same 4 banks, an 8-way conflict. Swizzled: 8 different bank groups, 1 pass.\n";
}

void print_wgmma_accumulators(std::ostream& out) {
  out << "wgmma.m64nNk16 accumulators (fp32): thread t of the warpgroup, register i. Warp w = t / 32 owns rows\n"
         "16w .. 16w+15; within them mma's C layout repeats every 8 columns. Rows 0-15, columns 0-15 (warp 0):\n";
  Grid d(16, 16);
  for (int t = 0; t < 32; ++t)
    for (int i = 0; i < 8; ++i) {
      const L::Coord e = L::wgmma_d(t, i);
      d.at(e.row, e.col) = "T" + std::to_string(t) + ":" + std::to_string(i);
    }
  d.print(out, "m", "n", 6);
}

void print_layouts(std::ostream& out) {
  print_fragments(out);
  out << "\n";
  print_swizzle(out);
  out << "\n";
  print_wgmma_accumulators(out);
}

void print_layouts_csv(std::ostream& out) {
  out << "table,row,col,lane,reg\n";
  for (int lane = 0; lane < 32; ++lane) {
    for (int reg = 0; reg < 4; ++reg)
      for (int h = 0; h < 2; ++h) {
        const L::Coord e = L::mma_a(lane, reg, h);
        out << "mma_a," << e.row << "," << e.col << "," << lane << "," << reg << "\n";
      }
    for (int reg = 0; reg < 2; ++reg)
      for (int h = 0; h < 2; ++h) {
        const L::Coord e = L::mma_b(lane, reg, h);
        out << "mma_b," << e.row << "," << e.col << "," << lane << "," << reg << "\n";
      }
    for (int i = 0; i < 4; ++i) {
      const L::Coord e = L::mma_c(lane, i);
      out << "mma_c," << e.row << "," << e.col << "," << lane << "," << i << "\n";
    }
    out << "ldsm_a_addr," << L::ldsm_a_row(lane) << "," << L::ldsm_a_col(lane) / 8 << "," << lane << ","
        << L::ldmatrix_matrix_of_lane(lane) << "\n";
  }
  for (int t = 0; t < 128; ++t)
    for (int i = 0; i < 8; ++i) {
      const L::Coord e = L::wgmma_d(t, i);
      out << "wgmma_d," << e.row << "," << e.col << "," << t << "," << i << "\n";
    }
  out << "table,row,chunk,plain_group,swizzled_group\n";
  for (int r = 0; r < 8; ++r)
    for (int c = 0; c < 8; ++c)
      out << "swizzle," << r << "," << c << "," << L::bank(L::plain_offset(r, 8 * c)) / 4 << ","
          << L::bank(L::swizzled_offset(r, 8 * c)) / 4 << "\n";
}

}  // namespace tcmm
