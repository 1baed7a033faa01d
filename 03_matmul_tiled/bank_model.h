// Chapter 03 on the CPU: which shared-memory bank each lane of a warp hits, and what
// that costs. Shared memory is 32 banks of 4-byte words (word w is in bank w % 32); each
// bank delivers one word per cycle. A warp's request takes as many passes (wavefronts)
// as the most distinct words any one bank must deliver; lanes asking for the same word
// share it (a broadcast). Wider accesses are served in phases: 8-byte accesses half a
// warp at a time, 16-byte (float4) accesses a quarter warp (8 lanes, 128 bytes) at a
// time, so an ideal float4 request takes 4 wavefronts, not 1.
//
// This is the textbook model (the CUDA Programming Guide's bank rules); Nsight Compute
// measures the real count (l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{ld,st},
// README "Exercises"). The scenarios repeat the index arithmetic of matmul_tiled.cu
// (and of common/attention_tiles.cuh, for chapters 05-07) for one warp.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace banks {

inline constexpr int kBanks = 32;

struct Cost {
  int wavefronts = 0;  // passes the request takes
  int ideal = 0;       // passes with no conflict: one per phase with an active lane
  int worst_bank = 0;  // the most distinct words one bank delivers in one phase ("n-way")
};
// words[lane]: the first 4-byte word the lane accesses (-1: the lane does not take part);
// width: 1, 2 or 4 words (4, 8 or 16 bytes) from there.
Cost cost(const std::vector<long>& words, int width);

// One warp access of a kernel, with and without padding.
struct Scenario {
  std::string name;  // "register_tiled A store"
  std::string code;  // the line of the kernel it models
  int pad;           // floats added to each row
  int width;         // words per lane
  std::vector<long> words;
  Cost cost() const { return banks::cost(words, width); }
};
// Every scenario the chapter shows, each unpadded (pad 0) and padded as the kernel is.
std::vector<Scenario> scenarios();

// The chapter's own layouts: a tile row of `row_floats` (+ pad), element (row, col).
inline long word_of(int row, int col, int row_floats, int pad) { return long(row) * (row_floats + pad) + col; }

// A 32 x 32 tile stored row-wise (lane = column) and read column-wise (lane = row), the
// access of a transpose, through a layout offset(row, col) -> word. The exercise's check.
struct TransposeCost {
  Cost store, load;  // the worst over the 32 rows (store) and the 32 columns (load)
  bool one_to_one;   // every element has its own word
  long words_used;   // the largest offset + 1
};
TransposeCost transpose_cost(long (*offset)(int row, int col));

// The table the executable prints; the CSV scripts/figures/bank_map.py draws
// (scenario,pad,lane,word,bank,width).
void print_bank_model(std::ostream& out);
void print_bank_csv(std::ostream& out);

}  // namespace banks
