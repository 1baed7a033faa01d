// Chapter 14's tile policy as rectangles (CSV), for scripts/figures/bwd_tiles.py. CPU only; every
// figure comes from the kernel's Cfg (fa3_bwd_config.h). Three policies side by side:
//   d = 128, B_r = 64    chapter 14 at d = 128
//   d = 64,  B_r = 64    chapter 15 at d = 64 (its block masks' tile)
//   d = 64,  B_r = 128   chapter 14 at d = 64
// and for each:
//   scores   S^T and dP^T of one step, B_c keys x B_r queries: which consumer computes which rows
//   dq       dQ_i = dS K_j, B_r queries x d: which consumer adds which 64 x 64 block
//   work     a consumer warpgroup's GEMMs per step, counted in wgmma.m64n64k16 (x), and by GEMM
//   smem     the shared-memory regions of the kernel (bytes), in the order Smem lays them out
//   14_fa3_backward_tiles
#include <iostream>
#include <string>

#include "fa3_bwd_config.h"

namespace {

namespace fd = fa3bwd::kernel;
using fa3bwd::Step;

template <class C>
void policy(std::ostream& out) {
  const std::string name = "d=" + std::to_string(C::d) + " B_r=" + std::to_string(C::B_r);
  auto rect = [&](const char* panel, int x, int y, int w, int h, const std::string& owner, const std::string& label) {
    out << name << ',' << panel << ',' << x << ',' << y << ',' << w << ',' << h << ',' << owner << ',' << label << '\n';
  };
  const std::string s_shape = "m64n" + std::to_string(C::B_r) + "k16";
  for (int cw = 0; cw < 2; ++cw)  // x: queries, y: keys
    rect("scores", 0, cw * C::kKeysPerWarpgroup, C::B_r, C::kKeysPerWarpgroup, std::to_string(cw),
         "consumer " + std::to_string(cw + 1) + ": " + std::to_string(C::kSSlices) + " x " + s_shape);
  const int key_steps = C::kDqKeySlices;
  for (int cw = 0; cw < 2; ++cw) {  // x: columns of d, y: queries of the tile (tile i = 0)
    const int row = C::dq_row_block(0, cw) * 64, col = C::dq_chunk(cw) * 64;
    const std::string keys = C::kDqWritersPerBlock == 1 ? "all 128 keys" : "its 64 keys";
    rect("dq", col, row, 64, 64, C::kDqWritersPerBlock == 1 ? std::to_string(cw) : "both",
         "consumer " + std::to_string(cw + 1) + ": " + std::to_string(key_steps) + " x m64n64k16 over " + keys);
  }
  // A warpgroup's GEMMs per step in m64n64k16 units: S^T, dP^T, dV, dK, dQ.
  const int s = C::kSSlices * C::B_r / 64, kv = C::kQSlices * C::d / 64, dq = C::kDqKeySlices;
  rect("work", 2 * s + 2 * kv + dq, 0, 0, 0, "",
       "S^T " + std::to_string(s) + " + dP^T " + std::to_string(s) + " + dV " + std::to_string(kv) + " + dK " +
           std::to_string(kv) + " + dQ " + std::to_string(dq));
  // The regions in Smem's order; the labels carry no commas (CSV).
  const int bytes[] = {C::kKBytes + C::kVBytes, C::kStages * C::kStageBytes, C::kdSBuffers * C::kdSBytes, C::kRowsBytes,
                       C::kdQBytes};
  const char* labels[] = {"K_j V_j", "Q_i dO_i ring", "dS^T x 2", "L_i D_i", "dQ buffers"};
  int at = 0;
  for (int r = 0; r < 5; ++r) {
    rect("smem", at, 0, bytes[r], 1, labels[r], std::to_string(bytes[r]));
    at += bytes[r];
  }
}

}  // namespace

int main() {
  std::cout << "policy,panel,x,y,w,h,owner,label\n";
  policy<fd::Cfg<128, Step::BulkReduce>>(std::cout);
  policy<fd::Cfg<64, Step::BulkReduce, 64>>(std::cout);
  policy<fd::Cfg<64, Step::BulkReduce>>(std::cout);
  return 0;
}
