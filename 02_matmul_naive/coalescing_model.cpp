#include "coalescing_model.h"

#include <cstdio>
#include <set>
#include <stdexcept>

namespace naive {

const char* name(Operand op) {
  switch (op) {
    case Operand::A: return "A[row,k]";
    case Operand::B: return "B[k,col]";
    case Operand::C: return "C[row,col]";
  }
  return "?";
}

int distinct_blocks(const std::vector<long long>& float_offsets, int bytes) {
  std::set<long long> blocks;
  for (long long e : float_offsets)
    if (e >= 0) blocks.insert(e * 4 / bytes);  // base 256-byte aligned: block = byte address / size
  return static_cast<int>(blocks.size());
}

WarpRequest warp_request(Kernel k, Operand op, int M, int N, int K, int block_x, int block_y, int warp, int step) {
  if (M < 1 || N < 1 || K < 1) throw std::invalid_argument("warp_request: M, N and K must be >= 1");
  if (warp < 0 || warp >= int(kBlock)) throw std::invalid_argument("warp_request: a block has 32 warps (0..31)");
  WarpRequest r{k, op, {}, {}, {}, 0, 0, 0, 0};
  std::set<long long> addresses;
  for (int lane = 0; lane < 32; ++lane) {
    // matmul_naive.cu: threadIdx.x = lane, threadIdx.y = warp; the kernels swap x and y.
    const int along_x = block_x * int(kBlock) + lane, along_y = block_y * int(kBlock) + warp;
    const int row = k == Kernel::RowPerX ? along_x : along_y;
    const int col = k == Kernel::RowPerX ? along_y : along_x;
    const bool active = row < M && col < N;  // one_element() returns before the loop otherwise
    long long e = -1;
    if (active) {
      switch (op) {
        case Operand::A: e = (long long)row * K + step; break;
        case Operand::B: e = (long long)step * N + col; break;
        case Operand::C: e = (long long)row * N + col; break;
      }
      ++r.active;
      addresses.insert(e);
    }
    r.offsets.push_back(e);
    r.rows.push_back(active ? row : -1);
    r.cols.push_back(active ? col : -1);
  }
  r.distinct = static_cast<int>(addresses.size());
  r.sectors = distinct_blocks(r.offsets, kSectorBytes);
  r.lines = distinct_blocks(r.offsets, kLineBytes);
  return r;
}

LoopTraffic loop_traffic(Kernel k, Operand op, int M, int N, int K) {
  LoopTraffic t;
  std::set<long long> seen;
  for (int step = 0; step < (op == Operand::C ? 1 : K); ++step) {
    const WarpRequest r = warp_request(k, op, M, N, K, 0, 0, 0, step);
    t.requested_sectors += r.sectors;
    for (long long e : r.offsets)
      if (e >= 0) seen.insert(e * 4 / kSectorBytes);
  }
  t.distinct_sectors = static_cast<long long>(seen.size());
  return t;
}

void print_coalescing_model(std::ostream& out, int M, int N, int K) {
  char line[256];
  std::snprintf(line, sizeof line,
                "\nOne warp's requests, on the CPU: warp 0 of block (0, 0) (threadIdx.y = 0, lanes = threadIdx.x), "
                "step k = 0,\nM=%d N=%d K=%d; a request costs its distinct 32-byte sectors:\n",
                M, N, K);
  out << line;
  std::snprintf(line, sizeof line, "  %-16s %-11s %5s %9s %8s %6s %18s\n", "kernel", "access", "lanes", "addresses",
                "sectors", "lines", "fetched / useful B");
  out << line;
  for (Kernel k : kAll)
    for (Operand op : {Operand::A, Operand::B, Operand::C}) {
      const WarpRequest r = warp_request(k, op, M, N, K, 0, 0, 0, 0);
      std::snprintf(line, sizeof line, "  %-16s %-11s %5d %9d %8d %6d %11d / %-4d%s", op == Operand::A ? name(k) : "",
                    name(op), r.active, r.distinct, r.sectors, r.lines, r.fetched_bytes(), r.useful_bytes(),
                    r.distinct == 1 && r.active > 1 ? "  broadcast" : "");
      std::string row = line;
      row.erase(row.find_last_not_of(' ') + 1);
      out << row << "\n";
    }
  out << "Over the warp's whole k loop (K steps): sectors requested, and how many of them are distinct\n"
         "(the rest can only come from a cache, if the sector is still there):\n";
  for (Kernel k : kAll)
    for (Operand op : {Operand::A, Operand::B}) {
      const LoopTraffic t = loop_traffic(k, op, M, N, K);
      std::snprintf(line, sizeof line, "  %-16s %-11s %12lld requested %10lld distinct\n",
                    op == Operand::A ? name(k) : "", name(op), t.requested_sectors, t.distinct_sectors);
      out << line;
    }
}

void print_coalescing_csv(std::ostream& out, int M, int N, int K) {
  out << "kernel,operand,lane,row,col,offset,sector,line\n";
  for (Kernel k : kAll)
    for (Operand op : {Operand::A, Operand::B, Operand::C}) {
      const WarpRequest r = warp_request(k, op, M, N, K, 0, 0, 0, 0);
      const char* opname = op == Operand::A ? "A" : op == Operand::B ? "B" : "C";
      for (int lane = 0; lane < 32; ++lane) {
        const long long e = r.offsets[lane];
        if (e < 0) continue;
        // The (row, col) of the element touched, in the operand's own matrix.
        const int row = op == Operand::A ? r.rows[lane] : op == Operand::B ? 0 : r.rows[lane];
        const int col = op == Operand::A ? 0 : r.cols[lane];
        out << name(k) << ',' << opname << ',' << lane << ',' << row << ',' << col << ',' << e << ','
            << e * 4 / kSectorBytes << ',' << e * 4 / kLineBytes << '\n';
      }
    }
}

}  // namespace naive
