// The steps of FA3's schedule as modelled timelines (CSV), for scripts/figures/fa3_schedule.py.
// CPU only. The programs below follow fa3_forward.cuh's produce() and Consumer::consume_tile()
// instruction by instruction for one row tile: the producer's copies and its waits on the
// "empty" barriers, each consumer warpgroup's waits on the "full" barriers, its turns (named
// barriers), its wgmma groups and their waits, its softmax and its releases. What each step
// switches on, the stages and the GEMMs' k steps come from the variant's Cfg (fa3_config.h),
// the numbers the kernel is compiled with; the programs are played on chapter 09's schedule
// model (schedule_model.h). The costs are a model, not a measurement:
//   a wgmma of F FLOPs occupies the SM's tensor cores for F / 4096 cycles (dense bf16);
//   a softmax's 64 x B_c exponentials occupy the SM's exponential units (MUFU.EX2, 16
//   results per cycle per SM) for 64 B_c / 16 cycles; two warpgroups using either at once
//   share it. A TMA copy lands --copy-cycles after its issue (copies travel side by side);
//   storing O takes --store-cycles.
//   12_fa3_hopper_schedule [--d D] [--key-tiles N] [--copy-cycles C] [--store-cycles C]
// With --fp8-key-tiles it prints instead what each of FP8's compiled key tiles takes (CSV, for
// scripts/figures/fp8_key_tiles.py): the shared memory of Q_i, O's buffer and each K/V stage
// (Vt_j's boxes split into the keys read and the keys loaded past the tile), the stages, and
// the registers a consumer thread holds for S, P~ and O.
//   12_fa3_hopper_schedule --fp8-key-tiles
#include <algorithm>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "09_tensor_core_matmul/schedule_model.h"
#include "cli.h"
#include "device.h"  // kH200SmemPerBlock
#include "fa3_config.h"
#include "studies/fa3_studies.h"

namespace {

using sched::Tick;
namespace fd = fa3::kernel;

constexpr long kTensorFlopsPerCycle = 4096;  // dense bf16 per SM per cycle (H100, H200)
constexpr long kExpPerCycle = 16;            // MUFU.EX2 results per SM per cycle (compute capability 9.0)

struct Costs {
  Tick copy, store;
};

// One row tile of variant C (fa3_config.h) over T key tiles.
template <class C>
void play(std::ostream& out, int T, const Costs& cost) {
  constexpr bool producer = C::kProducer, ping_pong = C::kPingPong, intra_wg = C::kIntraWg;
  constexpr int S = C::kStages, B_c = C::B_c, rows = C::kRowsPerWarpgroup, d = C::d;
  constexpr int consumer_warps = (C::kThreads - (producer ? 128 : 0)) / 32;
  // S = Q_i K_j^T: kSSteps wgmma.m64nB_c, each d / kSSteps deep; O += P V_j: kPSteps
  // wgmma.m64nd, each B_c / kPSteps keys deep.
  const Tick s_wgmma = 2L * rows * B_c * (d / C::kSSteps) / kTensorFlopsPerCycle;
  const Tick pv_wgmma = 2L * rows * d * (B_c / C::kPSteps) / kTensorFlopsPerCycle;
  const Tick softmax = long(rows) * B_c / kExpPerCycle;

  sched::Machine m;
  const int tensor = m.unit("tensor cores");
  const int mufu = m.unit("exponential units");
  const int q_full = m.mbarrier("Q full", 1, "Q_i"), q_empty = m.mbarrier("Q empty", consumer_warps, "Q_i");
  std::vector<int> k_full, v_full, k_empty, v_empty;
  auto stage = [](int s) { return "stage " + std::to_string(s); };
  for (int s = 0; s < S; ++s) {
    const std::string n = "[" + std::to_string(s) + "]";
    k_full.push_back(m.mbarrier("K full" + n, 1, stage(s)));
    v_full.push_back(m.mbarrier("V full" + n, 1, stage(s)));
    k_empty.push_back(m.mbarrier("K empty" + n, consumer_warps, stage(s)));
    v_empty.push_back(m.mbarrier("V empty" + n, consumer_warps, stage(s)));
  }
  const int turn[2] = {m.named_barrier("turn of consumer 1", 2), m.named_barrier("turn of consumer 2", 2)};
  sched::Program* prod = producer ? &m.agent("producer (1 thread)") : nullptr;
  sched::Program* cons[2] = {&m.agent("consumer 1"), &m.agent("consumer 2")};
  const std::string j = "_";  // labels: S_3, PV_3, softmax 3 (3 = the loop's step)
  auto load_k = [&](sched::Program& p, int it) {
    p.tma(k_full[it % S], cost.copy, "K" + j + std::to_string(it), stage(it % S));
  };
  auto load_v = [&](sched::Program& p, int it) {
    p.tma(v_full[it % S], cost.copy, "V" + j + std::to_string(it), stage(it % S));
  };

  if (producer) {  // one elected thread of warpgroup 0
    for (int it = 0; it < T; ++it) {
      const int s = it % S, round = it / S;
      prod->wait(k_empty[s], round, "wait K empty");
      load_k(*prod, it);
      if (it == 0) prod->wait(q_empty, 0, "wait Q empty").tma(q_full, cost.copy, "Q_i", "Q_i");
      prod->wait(v_empty[s], round, "wait V empty");
      load_v(*prod, it);
    }
  } else {  // thread 0 (consumer 1's first warp) issues the first copies
    cons[0]->tma(q_full, cost.copy, "Q_i", "Q_i");
    for (int it = 0; it < S && it < T; ++it) load_k(*cons[0], it), load_v(*cons[0], it);
  }

  for (int cw = 0; cw < 2; ++cw) {
    sched::Program& p = *cons[cw];
    const std::string who = "C" + std::to_string(cw + 1) + " ";
    auto turn_begin = [&] {
      if (ping_pong) p.bar_sync(turn[cw], "wait for its turn");
    };
    auto turn_end = [&] {
      if (ping_pong) p.bar_arrive(turn[cw ^ 1]);
    };
    auto issue_s = [&](int it) {
      for (int k = 0; k < C::kSSteps; ++k) p.issue(tensor, s_wgmma, who + "S" + j + std::to_string(it));
      p.commit();
    };
    auto issue_pv = [&](int it) {
      for (int k = 0; k < C::kPSteps; ++k) p.issue(tensor, pv_wgmma, who + "PV" + j + std::to_string(it));
      p.commit();
    };
    auto wait_k = [&](int it) { p.wait(k_full[it % S], it / S + 1, "wait K full"); };
    auto wait_v = [&](int it) { p.wait(v_full[it % S], it / S + 1, "wait V full"); };
    auto release_k = [&](int it) {
      p.arrive(k_empty[it % S], 4);  // the warpgroup's 4 warps, one arrival each
      if (it == T - 1) p.arrive(q_empty, 4);
    };
    auto release_v = [&](int it) {
      const int s = it % S;
      p.arrive(v_empty[s], 4);
      if (!producer && cw == 0 && it + S < T) {  // thread 0 refills the stage once both released it
        p.wait(k_empty[s], it / S + 1, "wait K empty").wait(v_empty[s], it / S + 1, "wait V empty");
        load_k(p, it + S), load_v(p, it + S);
      }
    };
    auto soft = [&](int it) { p.run(mufu, softmax, "softmax", "softmax " + std::to_string(it), {}, 8); };

    if (ping_pong && cw == 1) p.bar_arrive(turn[0]);  // consumer 1 takes the first turn
    p.wait(q_full, 1, "wait Q full");
    if (!intra_wg) {
      for (int it = 0; it < T; ++it) {
        wait_k(it);
        turn_begin();
        issue_s(it);
        turn_end();
        p.wait_groups(0);
        release_k(it);
        soft(it);
        wait_v(it);
        turn_begin();
        issue_pv(it);
        turn_end();
        p.wait_groups(0);
        release_v(it);
      }
    } else {  // S_0 alone; then S_it together with P_{it-1} V_{it-1}; then the last P V
      wait_k(0);
      turn_begin();
      issue_s(0);
      turn_end();
      p.wait_groups(0);
      release_k(0);
      soft(0);
      for (int it = 1; it < T; ++it) {
        wait_k(it);
        wait_v(it - 1);
        turn_begin();
        issue_s(it);
        issue_pv(it - 1);
        turn_end();
        p.wait_groups(1);
        release_k(it);
        soft(it);
        p.wait_groups(0);
        release_v(it - 1);
      }
      wait_v(T - 1);
      turn_begin();
      issue_pv(T - 1);
      turn_end();
      p.wait_groups(0);
      release_v(T - 1);
    }
    p.run(-1, cost.store, "store", "store O");
    if (ping_pong && cw == 0) p.bar_sync(turn[0], "last turn");
  }
  m.run();
  const std::string panel = fa3::name(C::kStep);
  sched::write_csv(out, panel, m);
  sched::write_params(out, panel,
                      {{"stages", S},
                       {"gemm_cycles", C::kSSteps * s_wgmma},
                       {"softmax_cycles", softmax},
                       {"gemm", std::to_string(rows) + " x " + std::to_string(B_c) + " x " + std::to_string(d)},
                       {"copy_cycles", cost.copy},
                       {"key_tiles", T}});
}

// FP8's key tiles (fa3_config.h, Cfg with kKeyTile): one CSV row per part of the shared memory.
template <class C>
void fp8_key_tile(std::ostream& out) {
  const std::size_t vt_read = std::size_t(C::B_c) * C::d;  // bytes of Vt_j's keys the tile reads
  const auto row = [&](const char* part, std::size_t bytes, int copies) {
    out << C::B_c << ',' << part << ',' << bytes << ',' << copies << ',' << C::kStages << ',' << C::kSmemBytes << ','
        << ladder::kH200SmemPerBlock << ',' << C::B_c / 2 << ',' << C::kPSteps * 4 << ',' << C::d / 2 << ','
        << C::kConsumerRegs << '\n';
  };
  row("Q_i", C::kQBytes, 1);
  row("O", C::kOwnOBytes, 1);
  row("K_j", C::kKBytes, C::kStages);
  row("Vt_j read", vt_read, C::kStages);
  row("Vt_j past the tile", C::kVBytes - vt_read, C::kStages);
  row("barriers and alignment", C::kSmemBytes - C::kQBytes - C::kOwnOBytes - C::kStages * (C::kKBytes + C::kVBytes), 1);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string usage =
      "12_fa3_hopper_schedule: FA3's steps tma, warpspec, pingpong and intrawg as modelled schedules of one row\n"
      "tile (CSV), no GPU needed\n"
      "  --d D             head dimension, 64 or 128 (default 128)\n"
      "  --key-tiles N     key tiles of B_c keys the row tile walks (default 5)\n"
      "  --copy-cycles C   cycles from a TMA copy's issue to its landing (default 800)\n"
      "  --store-cycles C  cycles a consumer takes to store its rows of O (default 500)\n"
      "  --fp8-key-tiles   instead: the shared memory and registers of FP8's key tiles 128, 192, 224 (CSV)\n";
  return ladder::run_main(argc, argv, usage, [](ladder::Args& args) {
    const int d = static_cast<int>(args.integer("--d", 128, 1, 1024));
    const int T = static_cast<int>(args.integer("--key-tiles", 5, 1, 64));
    const Costs cost{args.integer("--copy-cycles", 800, 0, 1000000), args.integer("--store-cycles", 500, 0, 1000000)};
    const bool fp8_key_tiles = args.flag("--fp8-key-tiles");
    args.done();
    if (fp8_key_tiles) {
      std::cout << "B_c,part,bytes,copies,stages,smem_bytes,smem_limit,s_regs,p_regs,o_regs,consumer_regs\n";
      for (int keys : {128, 192, 224})
        fd::with_tuning(128, true, fa3::Step::IntraWg, {0, 0, keys},
                        [](auto c) { fp8_key_tile<decltype(c)>(std::cout); });
      return 0;
    }
    if (std::find(std::begin(fa3::kSupportedD), std::end(fa3::kSupportedD), d) == std::end(fa3::kSupportedD))
      throw std::invalid_argument("--d " + std::to_string(d) + ": the kernels are compiled for d = 64 and 128");
    sched::write_csv_header(std::cout);
    for (fa3::Step step : {fa3::Step::Tma, fa3::Step::WarpSpec, fa3::Step::PingPong, fa3::Step::IntraWg})
      fd::with_cfg(d, false, step, [&](auto c) { play<decltype(c)>(std::cout, T, cost); });
    return 0;
  });
}
