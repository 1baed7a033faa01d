// Chapter 02 on the CPU: the addresses one warp of each naive kernel touches, and what
// the memory system has to fetch for them. A warp's 32 lanes issue a load together;
// global memory serves it in 32-byte sectors (four to a 128-byte cache line), so the
// cost of a request is the number of distinct sectors its addresses fall in:
//   32 consecutive floats, 32-byte aligned   -> 4 sectors (one line): coalesced
//   32 floats K apart (K >= 8)               -> 32 sectors (32 lines): one per lane
//   one address for all 32 lanes            -> 1 sector, broadcast to every lane
// The model repeats matmul_naive.cu's index arithmetic for one warp (threadIdx.y fixed,
// threadIdx.x = lane), with every matrix starting on a 256-byte boundary as cudaMalloc's
// allocations do. The tests check it against these closed forms.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "matmul_naive.h"

namespace naive {

enum class Operand { A, B, C };  // the loads A[row, k] and B[k, col] at step k; the store C[row, col]
const char* name(Operand op);    // "A[row,k]", "B[k,col]", "C[row,col]"

inline constexpr int kSectorBytes = 32, kLineBytes = 128;

// One warp-wide request: the element each lane touches (row-major offset from the
// matrix's first element; -1 for a lane past M or N, which does not take part).
struct WarpRequest {
  Kernel kernel;
  Operand op;
  std::vector<long long> offsets;  // 32 lanes
  std::vector<int> rows, cols;     // the (row, col) of C each lane computes (-1: inactive)
  int active = 0;                  // lanes that take part
  int distinct = 0;                // distinct addresses (1: a broadcast)
  int sectors = 0;                 // distinct 32-byte sectors
  int lines = 0;                   // distinct 128-byte lines
  int useful_bytes() const { return 4 * distinct; }
  int fetched_bytes() const { return kSectorBytes * sectors; }
};

// Warp `warp` (threadIdx.y) of block (block_x, block_y) of kernel k on C[M, N] = A[M, K]
// B[K, N], at step `step` of the k loop (ignored for the store of C).
WarpRequest warp_request(Kernel k, Operand op, int M, int N, int K, int block_x, int block_y, int warp, int step);

// Distinct 32-byte sectors (or lines, with bytes = 128) of float offsets, -1 skipped.
int distinct_blocks(const std::vector<long long>& float_offsets, int bytes);

// Over the whole k loop of one warp (steps 0 .. K - 1): the sectors it requests (the sum
// over steps) and the distinct sectors among them (what the caches would have to keep
// to fetch each one once).
struct LoopTraffic {
  long long requested_sectors = 0, distinct_sectors = 0;
};
LoopTraffic loop_traffic(Kernel k, Operand op, int M, int N, int K);

// The tables the executable prints for the shape (warp 0 of block (0, 0), step 0).
void print_coalescing_model(std::ostream& out, int M, int N, int K);
// The same requests as CSV for scripts/figures: kernel,operand,lane,row,col,offset,sector,line.
void print_coalescing_csv(std::ostream& out, int M, int N, int K);

}  // namespace naive
