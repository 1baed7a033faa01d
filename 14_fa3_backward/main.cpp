// Chapter 14 executable: FlashAttention-3's backward on Hopper. The CPU part prints each step's
// shared memory and checks the dQ accumulator's layout; on an sm_90a GPU, every step (and cuDNN's
// backward, when it is available) is checked against the fp64 reference, dense and causal, GQA,
// with O and L from chapter 12's forward; then timed on the main shape beside chapter 10's
// backward and cuDNN's, with the whole training step (forward + backward) of each.
#include <cuda_runtime_api.h>

#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "10_fa2_tensor_cores/fa2_tc_arguments.h"
#include "12_fa3_hopper/fa3.h"
#include "cli.h"
#include "cudnn_attention.h"
#include "device.h"
#include "fa3_bwd.h"
#include "fa3_bwd_config.h"
#include "fa3_bwd_problem.h"
#include "launch.h"
#include "random.h"
#include "reference_attention.h"
#include "timing.h"
#include "work.h"

namespace {
const std::string kUsage =
    std::string(ladder::kGqaAttentionUsage) +
    "  --repeats R                 timed repeats (default 10, at most 10000)\n"
    "  --profile P                 atomic, bulk or deterministic: one forward, one backward, exit (ncu)\n"
    "  --heads-per-section H       the fast steps' launch order: sections of at most H KV heads\n"
    "                              (default 0: as many as fit in the L2; 1: head by head; fa3_bwd_scheduler.h)\n";

// Both layout facts the post-processing relies on, checked on the CPU: every element of a dQ
// block has its own float in its own row.
bool dq_layout_ok() {
  namespace L = fa3bwd::layout;
  for (int r = 0; r < L::kBlockRows; ++r) {
    unsigned long long seen = 0;
    for (int c = 0; c < L::kChunkCols; ++c) {
      const int o = L::chunk_offset(r, c);
      if (o / L::kChunkCols != r || (seen >> (o % L::kChunkCols) & 1)) return false;
      seen |= 1ull << (o % L::kChunkCols);
    }
  }
  return true;
}
}  // namespace

int main(int argc, char** argv) {
  return ladder::run_main(argc, argv, kUsage, [](ladder::Args& args) {
    const auto flags = ladder::common_flags(args, "chapter 14 writes no arrays (its checks run inside the executable)");
    const ladder::GqaAttentionFlags attention = ladder::gqa_attention_flags(args);
    ladder::AttentionShape s = attention.shape;
    const int check_N = attention.check_N;
    const int repeats = static_cast<int>(args.integer("--repeats", 10, 1, 10000));
    const std::string profile = args.choice("--profile", {"atomic", "bulk", "deterministic"}, "");
    const int heads_per_section = static_cast<int>(args.integer("--heads-per-section", 0, 0, 1 << 20));
    auto options = [&](fa3bwd::Step step) {  // the deterministic step launches head by head
      return fa3bwd::BackwardOptions{step, step == fa3bwd::Step::Deterministic ? 0 : heads_per_section};
    };
    args.gpu_only({"--heads-per-section"});
    args.done();
    args.exclusive("--profile", "one forward and one backward on the shape, then exit", {"--check-N", "--repeats"});
    args.needs("--heads-per-section", profile != "deterministic",
               "the fast steps (the deterministic step launches head by head)", "--profile deterministic");
    s = ladder::validate(s, fa3bwd::kSupportedD, ladder::KvHeads::Any);
    // What the run would refuse on the main shape, refused now, on every machine.
    ladder::check_device_memory("the main shape " + s.str(), 2.0 * (5 * s.elems() + 4 * s.kv_elems()) + 4.0 * s.rows() +
                                                                 4.0 * fa3bwd::backward_workspace_floats(s));
    ladder::check_grid("the main shape " + s.str() + " (one row of blocks per head, B*H)", 1, s.heads());
    fa2tc::check_shape(s, "the main shape " + s.str());

    ladder::Report report("14_fa3_backward", flags.summary);
    report.out() << "shape " << s.str() << "\n";
    for (fa3bwd::Step step : fa3bwd::kAllSteps)
      report.out() << "  step " << fa3bwd::name(step) << ": 384 threads, " << fa3bwd::kernel::smem_bytes(s.d, step)
                   << " bytes of shared memory per CTA\n";
    const bool layout_ok = dq_layout_ok();
    report.out() << "  dQ accumulator blocks: " << (layout_ok ? "one float per element" : "BROKEN") << "\n";
    if (!layout_ok) return report.summary("the dQ accumulator's layout maps two elements to one float");
    if (const std::string why = fa3bwd::unavailable_reason(); !why.empty())
      return report.gpu_skipped(why + "; the dQ accumulator's layout is a permutation");

    const std::uint64_t seed = ladder::fresh_seed();
    if (!profile.empty()) {  // one forward and one backward, nothing else (for ncu)
      fa3bwd::OnDevice dev(fa3bwd::make_problem(s, seed));
      dev.forward();
      for (fa3bwd::Step step : fa3bwd::kAllSteps)
        if (profile == fa3bwd::name(step)) dev.backward(options(step));
      CUDA_CHECK(cudaDeviceSynchronize());
      return 0;
    }

    const std::string cudnn_why = ladder::CudnnAttention::unavailable_reason();
    report.out() << "  cuDNN anchor: " << (cudnn_why.empty() ? ladder::CudnnAttention::version() : cudnn_why) << "\n";
    using Pass = ladder::CudnnAttention::Pass;
    auto cudnn_runs = [&](ladder::CudnnAttention& c) {
      for (Pass pass : {Pass::Forward, Pass::Backward})
        if (const std::string why = c.unsupported_reason(pass); !why.empty()) {
          report.out() << "  cuDNN anchor: " << why << "\n";
          return false;
        }
      return true;
    };

    // Every step and cuDNN against the fp64 reference, dense and causal, GQA (H = 4, H_kv = 2).
    for (bool causal : {false, true}) {
      const ladder::AttentionShape c = ladder::attention_shape(2, 4, 2, check_N, check_N, s.d, causal);
      const fa3bwd::Problem p = fa3bwd::make_problem(c, seed);
      const auto ref = ladder::attention_backward_reference(c, p.Q.data(), p.K.data(), p.V.data(), p.dO.data());
      fa3bwd::OnDevice dev(p);
      dev.forward();
      const std::string what = c.str() + " (seed " + std::to_string(seed) + ")";
      auto check_grads = [&](const std::string& who) {
        report.check("dQ " + who + " " + what, ladder::compare(dev.dQ_host(), ref.dQ), ladder::kBf16AttentionGrad);
        report.check("dK " + who + " " + what, ladder::compare(dev.dK_host(), ref.dK), ladder::kBf16AttentionGrad);
        report.check("dV " + who + " " + what, ladder::compare(dev.dV_host(), ref.dV), ladder::kBf16AttentionGrad);
      };
      for (fa3bwd::Step step : fa3bwd::kAllSteps) {
        dev.backward(options(step));
        check_grads(fa3bwd::name(step));
      }
      if (cudnn_why.empty()) {
        ladder::CudnnAttention cudnn(c);
        if (cudnn_runs(cudnn)) {
          cudnn.forward(dev.Q.data(), dev.K.data(), dev.V.data(), dev.O.data(), dev.L.data());
          dev.dQ.poison(), dev.dK.poison(), dev.dV.poison();
          cudnn.backward(dev.Q.data(), dev.K.data(), dev.V.data(), dev.O.data(), dev.L.data(), dev.dO.data(),
                         dev.dQ.data(), dev.dK.data(), dev.dV.data());
          check_grads("cuDNN");
        }
      }
    }

    // Time the main shape in the benchmark's order (bench_fa3_bwd.cpp): the best step, the other
    // steps, chapter 10's backward, cuDNN's; then the training steps. Under sustained load the
    // clock keeps sinking for seconds (results/timing/timing_study.md), so what ran just before a
    // figure shifts it by a few percent: the same order keeps the summary line beside its row.
    const ladder::TimingOptions opt{repeats};
    const ladder::Work bwd_work = ladder::attention_bwd_work(s, 2);
    ladder::Work train_work = bwd_work;
    train_work.flops += ladder::attention_fwd_work(s, 2).flops;
    char line[256];
    report.out() << "\n  " << s.str() << "                 median ms   TFLOP/s\n";
    auto row = [&](const std::string& name, double ms, const ladder::Work& w) {
      std::snprintf(line, sizeof line, "  %-36s %10.3f %9.1f\n", name.c_str(), ms, w.tflops(ms));
      report.out() << line;
    };
    double best_ms = 0, cudnn_ms = 0;  // cudnn_ms 0: not timed
    {
      fa3bwd::OnDevice dev(fa3bwd::make_problem(s, seed + 10));
      dev.poison = false;
      dev.forward();
      std::vector<fa3bwd::Step> order{fa3bwd::kBestStep};
      for (fa3bwd::Step step : fa3bwd::kAllSteps)
        if (step != fa3bwd::kBestStep) order.push_back(step);
      for (fa3bwd::Step step : order) {
        try {
          dev.backward(options(step));  // a step this shape is refused for says so, and the rest run
        } catch (const std::invalid_argument& e) {
          report.out() << "  step " << fa3bwd::name(step) << ": " << e.what() << "\n";
          continue;
        }
        const double ms = ladder::time_gpu([&] { dev.backward(options(step)); }, opt).median_ms;
        row(std::string("step ") + fa3bwd::name(step) + (step == fa3bwd::kBestStep ? " (the best)" : ""), ms, bwd_work);
        if (step == fa3bwd::kBestStep) best_ms = ms;
      }
      row("chapter 10 (FA2 backward, mma.sync)", ladder::time_gpu([&] { dev.backward_fa2(); }, opt).median_ms,
          bwd_work);
      std::unique_ptr<ladder::CudnnAttention> cudnn;
      if (cudnn_why.empty()) {
        cudnn = std::make_unique<ladder::CudnnAttention>(s);
        if (!cudnn_runs(*cudnn)) cudnn.reset();
      }
      auto cudnn_fwd = [&] { cudnn->forward(dev.Q.data(), dev.K.data(), dev.V.data(), dev.O.data(), dev.L.data()); };
      auto cudnn_bwd = [&] {
        cudnn->backward(dev.Q.data(), dev.K.data(), dev.V.data(), dev.O.data(), dev.L.data(), dev.dO.data(),
                        dev.dQ.data(), dev.dK.data(), dev.dV.data());
      };
      if (cudnn) {
        cudnn_fwd();  // its own O and L, which its backward reads
        cudnn_ms = ladder::time_gpu(cudnn_bwd, opt).median_ms;
        row("cuDNN backward", cudnn_ms, bwd_work);
      }
      row("train: ch12 forward + backward",
          ladder::time_gpu([&] { dev.forward(), dev.backward(options(fa3bwd::kBestStep)); }, opt).median_ms,
          train_work);
      if (cudnn)
        row("train: cuDNN forward + backward", ladder::time_gpu([&] { cudnn_fwd(), cudnn_bwd(); }, opt).median_ms,
            train_work);
    }
    std::snprintf(line, sizeof line, "FA3 bwd %s: %.1f TFLOP/s %s", s.str().c_str(), bwd_work.tflops(best_ms),
                  ladder::versus_cudnn(best_ms, cudnn_ms).c_str());
    return report.summary(line);
  });
}
