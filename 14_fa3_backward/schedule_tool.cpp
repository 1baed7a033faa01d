// Chapter 14's main loop as modelled schedules of one CTA (CSV), for scripts/figures/bwd_schedule.py.
// CPU only. The programs follow fa3_bwd_kernel.cuh instruction by instruction for one key tile over a
// few query tiles: produce() (K_j, V_j once, then Q_i, dO_i into the ring, waiting on "empty"),
// write_dq() (per step and consumer: wait for the block, reduce-add it, free the buffer) and the two
// consumer warpgroups' steps, with their wgmma groups and waits, the named barrier "dS^T written"
// and the dQ hand-off. Two panels:
//   waited      each step issues S^T and dP^T at its top and waits for all of its GEMMs, dQ's
//               included, before it hands dQ_i to the writer (the loop before the overlap)
//   overlapped  Consumer::step as it is: the next query tile's S^T is issued behind dQ_i and
//               runs while dQ_i is handed on
// The tiles, stages, buffers and GEMM depths are the kernel's (Cfg<d, BulkReduce>, fa3_bwd_config.h);
// the programs are played on chapter 09's schedule model (schedule_model.h). The costs are a
// model, not a measurement:
//   a wgmma of F FLOPs occupies the SM's tensor cores for F / 4096 cycles (dense bf16);
//   the exponentials of a 64 x B_r tile occupy the SM's exponential units (16 per cycle) for
//   64 * B_r / 16 cycles, shared when both warpgroups need them at once;
//   dS^T's element-wise work, the stores of dS^T and of the dQ block: --elementwise-cycles each;
//   a TMA copy lands --copy-cycles after its issue; the writer's reduce-add has read its block
//   --reduce-cycles after its issue (then the buffer is free again).
//   14_fa3_backward_schedule [--d D] [--query-tiles N] [--copy-cycles C] [--elementwise-cycles C]
//                            [--reduce-cycles C]
// The consumers' program order is d = 128's (dS^T formed while dV runs); at d = 64 the kernel forms
// dS^T before it issues dV (Consumer::step), which this model does not play.
#include <algorithm>
#include <iostream>
#include <stdexcept>
#include <string>

#include "09_tensor_core_matmul/schedule_model.h"
#include "cli.h"
#include "fa3_bwd_config.h"

namespace {

using sched::Tick;
namespace fd = fa3bwd::kernel;

constexpr long kTensorFlopsPerCycle = 4096;  // dense bf16 per SM per cycle (H100, H200)
constexpr long kExpPerCycle = 16;            // MUFU.EX2 results per SM per cycle (compute capability 9.0)

struct Costs {
  Tick copy, elementwise, reduce;
};

// One CTA of variant C over T query tiles; overlapped: the next S^T behind dQ.
template <class C>
void play(std::ostream& out, int T, bool overlapped, const Costs& cost) {
  constexpr int S = C::kStages, Q = C::B_r, K = C::kKeysPerWarpgroup, d = C::d, B = C::kdQBuffers;
  // S^T, dP^T: kSSlices wgmma.m64n{B_r}k16; dV, dK: kQSlices wgmma.m64n{d}k16; dQ: kDqKeySlices
  // wgmma.m64n64k16 (each consumer owns one 64 x 64 block of dQ_i).
  const Tick s_wgmma = 2L * K * Q * 16 / kTensorFlopsPerCycle;
  const Tick kv_wgmma = 2L * K * d * 16 / kTensorFlopsPerCycle;
  const Tick dq_wgmma = 2L * 64 * 64 * 16 / kTensorFlopsPerCycle;
  const Tick exps = long(K) * Q / kExpPerCycle;

  sched::Machine m;
  const int tensor = m.unit("tensor cores");
  const int mufu = m.unit("exponential units");
  auto stage = [](int s) { return "stage " + std::to_string(s); };
  const int kv_full = m.mbarrier("KV full", 1, "K_j, V_j");
  int full[S], empty[S], dq_full[2][B], dq_empty[2][B];
  for (int s = 0; s < S; ++s) {
    full[s] = m.mbarrier("full[" + std::to_string(s) + "]", 1, stage(s));
    empty[s] = m.mbarrier("empty[" + std::to_string(s) + "]", 2, stage(s));  // one arrival per consumer
  }
  for (int cw = 0; cw < 2; ++cw)
    for (int b = 0; b < B; ++b) {
      const std::string n = std::to_string(cw + 1) + "." + std::to_string(b);
      dq_full[cw][b] = m.mbarrier("dQ full " + n, 1, "dQ buffers");
      dq_empty[cw][b] = m.mbarrier("dQ empty " + n, 1, "dQ buffers");
    }
  const int ds_ready = m.named_barrier("dS^T written", 2);
  sched::Program& prod = m.agent("producer (1 thread)");
  sched::Program& writer = m.agent("dQ writer (1 thread)");
  sched::Program* cons[2] = {&m.agent("consumer 1"), &m.agent("consumer 2")};

  prod.tma(kv_full, cost.copy, "K_j V_j", "K_j, V_j");
  for (int n = 0; n < T; ++n) {
    prod.wait(empty[n % S], n / S, "wait empty");
    prod.tma(full[n % S], cost.copy, "Q,dO " + std::to_string(n), stage(n % S));
  }
  for (int n = 0; n < T; ++n)
    for (int cw = 0; cw < 2; ++cw) {
      const int b = n % B;
      writer.wait(dq_full[cw][b], n / B + 1, "wait dQ block");
      writer.run(-1, cost.reduce, "copy", "reduce dQ " + std::to_string(n));
      writer.arrive(dq_empty[cw][b], 1);
    }

  for (int cw = 0; cw < 2; ++cw) {
    sched::Program& p = *cons[cw];
    const std::string who = "C" + std::to_string(cw + 1) + " ";
    auto gemm = [&](int steps, Tick each, const std::string& what, int n) {
      for (int k = 0; k < steps; ++k) p.issue(tensor, each, who + what + " " + std::to_string(n));
      p.commit();
    };
    auto issue_s = [&](int n) {
      p.wait(full[n % S], n / S + 1, "wait full");
      gemm(C::kSSlices, s_wgmma, "S", n);
    };
    auto add_dq = [&](int n) {
      p.wait(dq_empty[cw][n % B], n / B, "wait dQ buffer");
      p.run(-1, cost.elementwise, "store", "dQ block");
      p.arrive(dq_full[cw][n % B], 1);
    };
    p.wait(kv_full, 1, "wait K_j V_j");
    if (overlapped) issue_s(0), p.wait_groups(0);
    for (int n = 0; n < T; ++n) {
      if (!overlapped) issue_s(n);
      gemm(C::kSSlices, s_wgmma, "dP", n);
      if (!overlapped) p.wait_groups(1);
      p.run(mufu, exps, "softmax", "P " + std::to_string(n), {}, 8);
      gemm(C::kQSlices, kv_wgmma, "dV", n);
      p.wait_groups(1);
      p.run(-1, cost.elementwise, "elementwise", "dS " + std::to_string(n));
      p.run(-1, cost.elementwise, "store", "dS^T");
      gemm(C::kQSlices, kv_wgmma, "dK", n);
      p.bar_sync(ds_ready, "dS^T written");
      gemm(C::kDqKeySlices, dq_wgmma, "dQ", n);
      if (overlapped) {
        p.wait_groups(1);
        issue_s(std::min(n + 1, T - 1));
        p.wait_groups(1);
        add_dq(n);
        p.wait_groups(0);
        p.arrive(empty[n % S], 1);
      } else {
        p.wait_groups(0);
        p.arrive(empty[n % S], 1);
        add_dq(n);
      }
    }
  }
  m.run();
  const std::string panel = overlapped ? "overlapped" : "waited";
  sched::write_csv(out, panel, m);
  sched::write_params(out, panel,
                      {{"stages", S},
                       {"d", d},
                       {"gemm_cycles", C::kSSlices * s_wgmma},
                       {"softmax_cycles", exps},
                       {"copy_cycles", cost.copy},
                       {"elementwise_cycles", cost.elementwise},
                       {"reduce_cycles", cost.reduce},
                       {"query_tiles", T},
                       {"end", m.end}});
}

}  // namespace

int main(int argc, char** argv) {
  const std::string usage =
      "14_fa3_backward_schedule: the backward's main loop, each step's dQ waited for alone and with the next\n"
      "query tile's S^T behind it, as modelled schedules of one CTA (CSV), no GPU needed\n"
      "  --d D                   head dimension, 64 or 128 (default 128)\n"
      "  --query-tiles N         query tiles of B_r rows the CTA walks (default 4)\n"
      "  --copy-cycles C         cycles from a TMA copy's issue to its landing (default 800)\n"
      "  --elementwise-cycles C  cycles of dS^T's element-wise work, of its stores, of the dQ block's (default 100)\n"
      "  --reduce-cycles C       cycles until the writer's reduce-add has read its block (default 300)\n";
  return ladder::run_main(argc, argv, usage, [](ladder::Args& args) {
    const int d = static_cast<int>(args.integer("--d", 128, 1, 1024));
    const int T = static_cast<int>(args.integer("--query-tiles", 4, 1, 64));
    const Costs cost{args.integer("--copy-cycles", 800, 0, 1000000),
                     args.integer("--elementwise-cycles", 100, 0, 1000000),
                     args.integer("--reduce-cycles", 300, 0, 1000000)};
    args.done();
    sched::write_csv_header(std::cout);
    for (bool overlapped : {false, true})
      fd::with_cfg(d, fa3bwd::Step::BulkReduce, [&](auto c) {
        play<decltype(c)>(std::cout, T, overlapped, cost);
        return 0;
      });
    return 0;
  });
}
