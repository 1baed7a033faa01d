// Chapter 09's two pipelines as schedules (CSV), for scripts/figures/tc_pipelines.py. CPU
// only. The programs below follow the kernels' loops instruction by instruction
// (tc_matmul.cu: mma_single_stage, mma_pipeline; tc_matmul_hopper.cu: wgmma_ws_kernel);
// their sizes come from tcmm::tiling() (stages, BK, threads), the same numbers the
// launchers use. The costs are a model, not a measurement (schedule_model.h):
//   a tensor-core product of F FLOPs takes F / 4096 cycles (Hopper's dense bf16 rate per
//   SM); a copy from global memory lands --copy-cycles after it was issued; storing one
//   consumer's part of C takes --store-cycles.
//   09_tensor_core_matmul_schedule --what pipeline|ws [--k-tiles N] [--copy-cycles C] [--store-cycles C]
#include <iostream>
#include <string>
#include <vector>

#include "cli.h"
#include "schedule_model.h"
#include "tc_matmul.h"

namespace {

constexpr long kTensorFlopsPerCycle = 4096;  // dense bf16 per SM per cycle (H100, H200)

std::string tile_name(const tcmm::Tiling& t) {
  return std::to_string(t.BM) + "x" + std::to_string(t.BN) + "x" + std::to_string(t.BK);
}

// Steps 1-3 (one buffer: copy, wait, compute) and step 4 (kStages buffers, kStages - 1
// tiles in flight), one CTA. Every warp runs the same loop, so the CTA is one agent; the
// buffers are lanes of their own: what each one holds at each k16 slice.
void pipeline(std::ostream& out, tcmm::Variant v, const std::string& panel, int k_tiles, sched::Tick copy) {
  const tcmm::Tiling t = tcmm::tiling(v);
  const int S = t.stages, slices = t.BK / 16;
  const sched::Tick slice = 2L * t.BM * t.BN * 16 / kTensorFlopsPerCycle;  // one k16 slice of the CTA's mma
  sched::Machine m;
  const int pipe = m.unit("tensor pipe (mma.sync)");
  sched::Program& cta = m.agent(std::string("CTA (") + std::to_string(t.threads / 32) + " warps)");
  auto buffer = [&](int kt) { return "buffer " + std::to_string(kt % S); };
  auto tile = [&](int kt) { return "tile " + std::to_string(kt); };
  auto mma = [&](int kt) {
    for (int kk = 0; kk < slices; ++kk) cta.run(pipe, slice, "mma", tile(kt), {buffer(kt)});
  };
  if (S == 1) {  // mma_single_stage
    for (int kt = 0; kt < k_tiles; ++kt) {
      cta.cp_async(copy, tile(kt), buffer(kt)).cp_commit().cp_wait(0).mark("__syncthreads");
      mma(kt);
      cta.mark("__syncthreads");
    }
  } else {  // mma_pipeline
    for (int kt = 0; kt < S - 1; ++kt) cta.cp_async(copy, tile(kt), buffer(kt)).cp_commit();
    cta.cp_wait(S - 2).mark("__syncthreads");
    for (int kt = 0; kt < k_tiles; ++kt) {
      if (kt + S - 1 < k_tiles) cta.cp_async(copy, tile(kt + S - 1), buffer(kt + S - 1));
      cta.cp_commit();  // even when empty: the wait counts groups
      for (int kk = 0; kk < slices; ++kk) {
        if (kk == slices - 1) cta.cp_wait(S - 2).mark("__syncthreads");
        cta.run(pipe, slice, "mma", tile(kt), {buffer(kt)});
      }
    }
  }
  m.run();
  sched::write_csv(out, panel, m);
  sched::write_params(out, panel,
                      {{"stages", S}, {"tile", tile_name(t)}, {"slice_cycles", slice}, {"copy_cycles", copy}});
}

// Step 6a (one tile per CTA, CTAs one after the other on an SM) and 6b (persistent: one
// CTA walks the tiles, its ring going on from tile to tile): the producer's one thread and
// the two consumer warpgroups, full/empty mbarriers per stage.
void warp_specialised(std::ostream& out, tcmm::Variant v, const std::string& panel, int tiles, int k_tiles,
                      sched::Tick copy, sched::Tick store) {
  const tcmm::Tiling t = tcmm::tiling(v);
  const int S = t.stages, batch = t.BK / 16;
  const int consumer_warps = (t.threads - 128) / 32, consumers = consumer_warps / 4;
  const int rows = t.BM / consumers;  // each consumer: rows x BN, one wgmma.m64nBNk16 per k16
  const sched::Tick wgmma = 2L * rows * t.BN * 16 / kTensorFlopsPerCycle;
  const bool persistent = v != tcmm::Variant::WgmmaWs;
  sched::Machine m;
  const int tensor = m.unit("tensor cores");
  sched::Program& producer = m.agent("producer (1 thread)");
  std::vector<sched::Program*> consumer;
  for (int c = 0; c < consumers; ++c) consumer.push_back(&m.agent("consumer " + std::to_string(c + 1)));
  auto stage = [](int s) { return "stage " + std::to_string(s); };

  std::vector<int> full, empty;
  int exit = -1, n = 0;  // n: the ring position, continued across tiles when persistent
  for (int tile = 0; tile < tiles; ++tile) {
    if (!persistent || tile == 0) {  // a new CTA: new barriers, the ring starts again
      full.clear(), empty.clear();
      for (int s = 0; s < S; ++s) {
        full.push_back(m.mbarrier("full[" + std::to_string(s) + "]", 1, stage(s)));
        empty.push_back(m.mbarrier("empty[" + std::to_string(s) + "]", consumer_warps, stage(s)));
      }
      exit = m.named_barrier("CTA exit", 1 + consumers), n = 0;
    }
    const std::string C = "C" + std::to_string(tile) + " ";
    for (int kt = 0; kt < k_tiles; ++kt) {
      const int s = (n + kt) % S, round = (n + kt) / S;
      producer.wait(empty[s], round, "wait empty[" + std::to_string(s) + "]")
          .tma(full[s], copy, C + "k" + std::to_string(kt), stage(s));
    }
    for (int c = 0; c < consumers; ++c) {
      sched::Program& p = *consumer[c];
      int previous = -1;
      for (int kt = 0; kt < k_tiles; ++kt) {
        const int s = (n + kt) % S, round = (n + kt) / S;
        p.wait(full[s], round + 1, "wait full[" + std::to_string(s) + "]");
        for (int k = 0; k < batch; ++k) p.issue(tensor, wgmma, C + "k" + std::to_string(kt));
        p.commit().wait_groups(1);
        if (previous >= 0) p.arrive(empty[previous], 4);  // its 4 warps, one arrival each
        previous = s;
      }
      p.wait_groups(0).arrive(empty[previous], 4).run(-1, store, "store", "store C" + std::to_string(tile));
    }
    n += k_tiles;
    if (!persistent || tile == tiles - 1) {  // the SM takes the next CTA once every warp has left
      producer.bar_sync(exit, "done");
      for (sched::Program* p : consumer) p->bar_sync(exit, "done");
    }
  }
  m.run();
  sched::write_csv(out, panel, m);
  sched::write_params(out, panel,
                      {{"stages", S},
                       {"tile", tile_name(t)},
                       {"wgmma_cycles", wgmma},
                       {"consumer_warps", consumer_warps},
                       {"copy_cycles", copy},
                       {"store_cycles", store}});
}

}  // namespace

int main(int argc, char** argv) {
  const std::string usage =
      "09_tensor_core_matmul_schedule: chapter 09's pipelines as modelled schedules (CSV), no GPU needed\n"
      "  --what W            pipeline (steps 1-3 vs step 4: cp.async stages) or ws (steps 6a, 6b: TMA\n"
      "                      producer, mbarriers, wgmma consumers); default pipeline\n"
      "  --k-tiles N         BK-wide K slices per tile of C (default 6)\n"
      "  --tiles N           tiles of C, ws only (default 2)\n"
      "  --copy-cycles C     cycles from a copy's issue to its landing (default 800)\n"
      "  --store-cycles C    cycles a consumer takes to store its part of C, ws only (default 1000)\n";
  return ladder::run_main(argc, argv, usage, [](ladder::Args& args) {
    const std::string what = args.choice("--what", {"pipeline", "ws"}, "pipeline");
    const int k_tiles = static_cast<int>(args.integer("--k-tiles", 6, 1, 64));
    const int tiles = static_cast<int>(args.integer("--tiles", 2, 1, 8));
    const sched::Tick copy = args.integer("--copy-cycles", 800, 0, 1000000);
    const sched::Tick store = args.integer("--store-cycles", 1000, 0, 1000000);
    args.done();
    sched::write_csv_header(std::cout);
    if (what == "pipeline") {
      pipeline(std::cout, tcmm::Variant::MmaSwizzle, "steps 1-3", k_tiles, copy);
      pipeline(std::cout, tcmm::Variant::MmaPipeline, "step 4", k_tiles, copy);
    } else {
      warp_specialised(std::cout, tcmm::Variant::WgmmaWs, "step 6a", tiles, k_tiles, copy, store);
      warp_specialised(std::cout, tcmm::Variant::WgmmaPersistent, "step 6b", tiles, k_tiles, copy, store);
    }
    return 0;
  });
}
