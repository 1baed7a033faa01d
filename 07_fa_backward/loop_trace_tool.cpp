// The loop traces of chapters 05, 06 and 07 as CSV, for scripts/figures/fa_loops.py. CPU
// only: it runs the loop nests of the kernels (loop_trace.h of each chapter) on the tiles
// the kernels use on an H200, or on this machine's GPU when there is one.
//   07_fa_backward_loop_trace --what tiles|fa1|fa2|bwd|smem|owners [--N N --d D --mask M]
#include <iostream>
#include <string>

#include "05_fa1_forward/loop_trace.h"
#include "06_fa2_forward/loop_trace.h"
#include "cli.h"
#include "device.h"
#include "loop_trace.h"

int main(int argc, char** argv) {
  const std::string usage = std::string(ladder::kAttentionUsage) +
                            "  --what W    tiles, fa1, fa2, bwd (the visits), smem (shared memory by part)\n"
                            "              or owners (the warp that holds each element of FA2's O_i)\n";
  return ladder::run_main(argc, argv, usage, [](ladder::Args& args) {
    const ladder::AttentionShape s = ladder::attention_shape_flags(args, {1, 1, 1024, 64, false});
    const std::string what = args.choice("--what", {"tiles", "fa1", "fa2", "bwd", "smem", "owners"}, "tiles");
    args.done();
    const std::size_t smem = ladder::smem_per_block_for_models();
    const fa1::Tiles t1 = fa1::tiles(s, smem);
    const fa2::Tiles t2 = fa2::tiles(s, smem);
    const fa2::BackwardTiles tb = fa2::backward_tiles(s);
    std::ostream& out = std::cout;
    if (what == "tiles") {
      out << "kernel,B_r,B_c,T_r,T_c,smem_bytes\n"
          << "fa1," << t1.B_r << ',' << t1.B_c << ',' << t1.T_r << ',' << t1.T_c << ',' << t1.smem_bytes << '\n'
          << "fa2," << t2.B_r << ',' << t2.B_c << ',' << t2.T_r << ',' << t2.T_c << ',' << t2.smem_bytes << '\n';
      long floats = 0, dq_floats = 0;
      for (const fa1::SmemPart& p : fa2::backward_smem_parts(s.d, tb)) floats += p.floats;
      for (const fa1::SmemPart& p : fa2::dq_smem_parts(s.d, tb)) dq_floats += p.floats;
      out << "bwd," << tb.B_r << ',' << tb.B_c << ',' << tb.T_r << ',' << tb.T_c << ',' << 4 * floats << '\n'
          << "bwd_dq," << tb.B_r << ',' << tb.B_c << ',' << tb.T_r << ',' << tb.T_c << ',' << 4 * dq_floats << '\n';
    } else if (what == "fa1") {
      out << "block,step,i,j,Q_read,K_read,V_read,O_read,O_write,lm_read,lm_write\n";
      for (const fa1::Visit& v : fa1::loop_trace(s, t1))
        out << v.block << ',' << v.step << ',' << v.i << ',' << v.j << ',' << v.Q_read << ',' << v.K_read << ','
            << v.V_read << ',' << v.O_read << ',' << v.O_write << ',' << v.lm_read << ',' << v.lm_write << '\n';
    } else if (what == "fa2") {
      out << "block,step,i,j,Q_read,K_read,V_read,O_write,L_write\n";
      for (const fa2::Visit& v : fa2::loop_trace(s, t2))
        out << v.block << ',' << v.step << ',' << v.i << ',' << v.j << ',' << v.Q_read << ',' << v.K_read << ','
            << v.V_read << ',' << v.O_write << ',' << v.L_write << '\n';
    } else if (what == "bwd") {
      out << "rotate,block,step,i,j\n";
      for (bool rotate : {true, false})
        for (const fa2::BackwardVisit& v : fa2::backward_trace(s, tb, rotate))
          out << rotate << ',' << v.block << ',' << v.step << ',' << v.i << ',' << v.j << '\n';
    } else if (what == "smem") {
      out << "kernel,part,floats\n";
      for (const fa1::SmemPart& p : fa1::smem_parts(s.d, t1.B_r, t1.B_c))
        out << "fa1," << p.name << ',' << p.floats << '\n';
      for (const fa1::SmemPart& p : fa2::smem_parts(s.d, t2.B_r, t2.B_c))
        out << "fa2," << p.name << ',' << p.floats << '\n';
      for (const fa1::SmemPart& p : fa2::backward_smem_parts(s.d, tb))
        out << "bwd," << p.name << ',' << p.floats << '\n';
    } else {
      out << "row,col,warp\n";
      const std::vector<int> owner = fa2::o_owner_warps(s.d);
      for (int r = 0; r < 128; ++r)
        for (int c = 0; c < s.d; ++c) out << r << ',' << c << ',' << owner[std::size_t(r) * s.d + c] << '\n';
    }
    return 0;
  });
}
