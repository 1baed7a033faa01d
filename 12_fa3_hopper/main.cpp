// Chapter 12 executable: FlashAttention-3 on Hopper. The CPU part checks the layout facts
// the kernels rely on (the FP8 key permutation against the PTX fragment); on an sm_90a GPU,
// every step and the FP8 kernel are checked against the fp64 reference (dense and causal,
// GQA), then timed on the main shape beside chapter 10's kernel and, when it is available,
// cuDNN's attention on the same buffers (common/cudnn_attention.h), in one run.
#include <cuda_runtime_api.h>

#include <cstdio>
#include <string>
#include <vector>

#include "10_fa2_tensor_cores/fa2_tc.h"
#include "10_fa2_tensor_cores/fa2_tc_arguments.h"
#include "cli.h"
#include "cudnn_attention.h"
#include "device.h"
#include "fa3.h"
#include "fa3_kernel.h"
#include "fa3_problem.h"
#include "fp8_layout.h"
#include "launch.h"
#include "random.h"
#include "reference_attention.h"
#include "timing.h"
#include "work.h"

namespace {
const std::string kUsage =
    std::string(ladder::kGqaAttentionUsage) +
    "  --repeats R                 timed repeats (default 10, at most 10000)\n"
    "  --profile P                 tma, warpspec, pingpong, intrawg, persistent or fp8: launch once, exit (ncu);\n"
    "                              fp8 also at --d 256\n"
    "  --key-tile B_c              with --profile fp8: 128, 192 or 224 keys per step (default: the tile policy's;\n"
    "                              224 runs the intra-warpgroup kernel, the others the default step)\n"
    "  --speculative-max           with --profile intrawg, persistent or fp8 (128 keys): the speculative max\n";

// The FP8 P fragment needs no shuffle only if Vt8's permutation is the inverse of the
// register packing: every (lane, register, byte) of the k32 A fragment, checked.
std::string check_fp8_slots() {
  for (int lane = 0; lane < 32; ++lane)
    for (int q = 0; q < 4; ++q)
      for (int b = 0; b < 4; ++b) {
        const int c = lane % 4, key = 8 * (2 * (q / 2) + b / 2) + 2 * c + b % 2;
        if (fa3::fp8_key_slot(key) != 16 * (q / 2) + 4 * c + b)
          return "lane " + std::to_string(lane) + " register " + std::to_string(q) + " byte " + std::to_string(b);
      }
  return "";
}
}  // namespace

int main(int argc, char** argv) {
  return ladder::run_main(argc, argv, kUsage, [](ladder::Args& args) {
    const auto flags = ladder::common_flags(args, "chapter 12 writes no arrays (its checks run inside the executable)");
    const ladder::GqaAttentionFlags attention = ladder::gqa_attention_flags(args);
    ladder::AttentionShape s = attention.shape;
    const int check_N = attention.check_N;
    const int repeats = static_cast<int>(args.integer("--repeats", 10, 1, 10000));
    const std::string profile =
        args.choice("--profile", {"tma", "warpspec", "pingpong", "intrawg", "persistent", "fp8"}, "");
    const int key_tile = std::stoi(args.choice("--key-tile", {"128", "192", "224"}, "0"));
    const bool speculative_max = args.flag("--speculative-max");
    args.gpu_only({"--key-tile", "--speculative-max"});
    args.done();
    // The flags of the one --profile launch: refused without it, or with a launch they do not change.
    args.exclusive("--profile", "one launch on the shape, then exit", {"--check-N", "--repeats"});
    const std::string got = profile.empty() ? "" : "--profile " + profile;
    args.needs("--key-tile", profile == "fp8", "--profile fp8 (the keys per step of that FP8 launch)", got);
    args.needs("--speculative-max", profile == "intrawg" || profile == "persistent" || profile == "fp8",
               "--profile intrawg, persistent or fp8 (the one launch it changes)", got);
    if (speculative_max && key_tile != 0 && key_tile != 128)
      throw std::invalid_argument("--speculative-max is compiled with 128 keys per step only, not with --key-tile " +
                                  std::to_string(key_tile));
    if (speculative_max && s.d != 128)
      throw std::invalid_argument("--speculative-max is compiled at d=128 only, not at --d " + std::to_string(s.d));
    if (profile == "fp8" && s.d == 256 && key_tile != 0 && key_tile != 128)
      throw std::invalid_argument("--key-tile " + std::to_string(key_tile) +
                                  ": FP8 at d=256 is compiled with 128 keys per step only");
    // (--profile fp8 also takes FP8's d = 256, where neither the bf16 steps nor chapter 10 are compiled)
    const bool fp8_profile = profile == "fp8";
    if (fp8_profile)
      ladder::validate(s, fa3::kFp8SupportedD, ladder::KvHeads::Any);
    else
      ladder::validate(s, fa3::kSupportedD, ladder::KvHeads::Any);
    // What the run and the launchers (this chapter's and chapter 10's, timed beside it) would
    // refuse on the main shape, refused now, on every machine.
    ladder::check_device_memory("the main shape " + s.str(), 2.0 * (3 * s.elems() + 2 * s.kv_elems()) + 8.0 * s.rows());
    ladder::check_grid("the main shape " + s.str() + " (one row of blocks per head, B*H)", 1, s.heads());
    if (!fp8_profile) fa2tc::check_shape(s, "the main shape " + s.str());
    auto step_named = [](const std::string& n) {
      for (fa3::Step st : fa3::kAllSteps)
        if (n == fa3::name(st)) return st;
      return fa3::kBestStep;
    };
    // The --profile launch's options, and its variant checked now (compiled?), on every machine.
    fa3::Fp8ForwardOptions fp8_options;
    fp8_options.key_tile = key_tile;  // (224 keys: compiled for the intra-warpgroup kernel only)
    if (key_tile == 224) fp8_options.step = fa3::Step::IntraWg;
    fp8_options.speculative_max = speculative_max;
    fa3::ForwardOptions bf16_options{step_named(profile)};
    bf16_options.speculative_max = speculative_max;
    if (!profile.empty()) {
      fa3::kernel::Tuning t;
      t.speculative_max = speculative_max;
      if (fp8_profile) t.key_tile = key_tile ? key_tile : fa3::kernel::kFp8KeyTile;
      try {
        fa3::kernel::footprint(s.d, fp8_profile, fp8_profile ? fp8_options.step : bf16_options.step, t);
      } catch (const std::invalid_argument& e) {
        throw std::invalid_argument("--profile " + profile + " at " + s.str() + ": " + e.what());
      }
    }

    ladder::Report report("12_fa3_hopper", flags.summary);
    report.out() << "shape " << s.str() << "\n";
    for (fa3::Step step : fa3::kAllSteps) {
      if (fp8_profile) break;
      const fa3::kernel::Footprint f = fa3::kernel::footprint(s.d, false, step);
      report.out() << "  step " << fa3::name(step) << ": " << f.threads << " threads, " << f.stages << " K/V stages, "
                   << f.smem_bytes << " bytes of shared memory per CTA\n";
    }
    const std::string slots = check_fp8_slots();
    report.out() << "  FP8 key permutation vs the e4m3 A fragment: " << (slots.empty() ? "agree" : slots) << "\n";
    if (!slots.empty()) return report.summary("FP8 key permutation disagrees with the A fragment at " + slots);
    if (const std::string why = fa3::unavailable_reason(); !why.empty())
      return report.gpu_skipped(why + "; the FP8 key permutation agrees with the A fragment");

    const std::uint64_t seed = ladder::fresh_seed();
    if (!profile.empty()) {  // one launch, nothing else (for ncu)
      ladder::check_device_memory("--profile", 2.0 * (3 * s.elems() + 2 * s.kv_elems()));
      const fa3::Problem p = fa3::make_problem(s, seed);
      if (profile == "fp8") {
        fa3::Fp8Problem q = fa3::quantize_on_host(p, true);
        q.forward(fp8_options);
      } else {
        fa3::OnDevice dev(p);
        dev.forward(bf16_options);
      }
      CUDA_CHECK(cudaDeviceSynchronize());
      return 0;
    }

    // cuDNN's attention, the in-process anchor: checked and timed beside the kernels when it
    // runs here; otherwise one line says why, and the rest runs without it.
    const std::string cudnn_why = ladder::CudnnAttention::unavailable_reason();
    report.out() << "  cuDNN anchor: " << (cudnn_why.empty() ? ladder::CudnnAttention::version() : cudnn_why) << "\n";
    using Pass = ladder::CudnnAttention::Pass;

    // Every step, cuDNN and FP8 against the fp64 reference, dense and causal, GQA (H = 4, H_kv = 2).
    for (bool causal : {false, true}) {
      ladder::AttentionShape c{2, 4, check_N, s.d, causal};
      c.H_kv = 2;
      const fa3::Problem p = fa3::make_problem(c, seed);
      const auto ref = ladder::attention_forward_reference(c, p.Q.data(), p.K.data(), p.V.data());
      fa3::OnDevice dev(p);
      const std::string what = c.str() + " (seed " + std::to_string(seed) + ")";
      for (fa3::Step step : fa3::kAllSteps) {
        dev.forward({step});
        report.check(std::string("O ") + fa3::name(step) + " " + what, ladder::compare(dev.O_host(), ref.O),
                     ladder::kBf16Attention);
        report.check(std::string("L ") + fa3::name(step) + " " + what, ladder::compare_lse(dev.L_host(), ref.L),
                     ladder::kLse);
      }
      if (cudnn_why.empty()) {  // on the same inputs, against the same reference and bounds
        ladder::CudnnAttention cudnn(c);
        if (const std::string why = cudnn.unsupported_reason(Pass::Forward); !why.empty()) {
          report.out() << "  cuDNN anchor: " << why << "\n";
        } else {
          dev.O.poison(), dev.L.poison();
          cudnn.forward(dev.Q.data(), dev.K.data(), dev.V.data(), dev.O.data(), dev.L.data());
          report.check("O cuDNN " + what, ladder::compare(dev.O_host(), ref.O), ladder::kBf16Attention);
          report.check("L cuDNN " + what, ladder::compare_lse(dev.L_host(), ref.L), ladder::kLse);
        }
      }
      if (s.d == 128) {
        fa3::Fp8Problem q = fa3::quantize_on_host(p, true);
        const auto ref8 = ladder::attention_forward_reference(c, q.Q.data(), q.K.data(), q.V.data());
        q.forward();
        report.check("O fp8 (per-block scales) " + what, ladder::compare(q.O_host(), ref8.O), fa3::kFp8Attention);
      }
    }

    // Time the main shape: every step, chapter 10, cuDNN, and FP8 (d = 128).
    const ladder::TimingOptions opt{repeats};
    const ladder::Work work = ladder::attention_fwd_work(s, 2);
    char line[256];
    report.out() << "\n  " << s.str() << "                 median ms   TFLOP/s\n";
    auto row = [&](const std::string& name, double ms) {
      std::snprintf(line, sizeof line, "  %-36s %10.3f %9.1f\n", name.c_str(), ms, work.tflops(ms));
      report.out() << line;
    };
    double best_ms = 0, fp8_ms = 0, cudnn_ms = 0;  // cudnn_ms 0: not timed
    {
      fa3::OnDevice dev(fa3::make_problem(s, seed + 10));
      dev.poison = false;
      row("chapter 10 (FA2, mma.sync)", ladder::time_gpu([&] { dev.forward_fa2(); }, opt).median_ms);
      for (fa3::Step step : fa3::kAllSteps) {
        const double ms = ladder::time_gpu([&] { dev.forward({step}); }, opt).median_ms;
        row(std::string("step ") + fa3::name(step), ms);
        if (step == fa3::kBestStep) best_ms = ms;
      }
      if (cudnn_why.empty()) {  // cuDNN on the same buffers, with the same timer
        ladder::CudnnAttention cudnn(s);
        if (const std::string why = cudnn.unsupported_reason(Pass::Forward); !why.empty()) {
          report.out() << "  cuDNN anchor: " << why << "\n";
        } else {
          auto cudnn_forward = [&] {
            cudnn.forward(dev.Q.data(), dev.K.data(), dev.V.data(), dev.O.data(), dev.L.data());
          };
          cudnn_ms = ladder::time_gpu(cudnn_forward, opt).median_ms;
          row("cuDNN", cudnn_ms);
        }
      }
      if (s.d == 128) {
        fa3::Fp8Problem q = fa3::quantize_on_host(fa3::make_problem(s, seed + 11), true);
        q.poison = false;
        fp8_ms = ladder::time_gpu([&] { q.forward(); }, opt).median_ms;
        row("fp8 (e4m3, per-block scales)", fp8_ms);
      }
    }
    std::snprintf(line, sizeof line, "FA3 bf16 %s: %.1f TFLOP/s %s; fp8 %s TFLOP/s", s.str().c_str(),
                  work.tflops(best_ms), ladder::versus_cudnn(best_ms, cudnn_ms).c_str(),
                  s.d == 128 ? std::to_string(work.tflops(fp8_ms)).substr(0, 6).c_str() : "n/a");
    return report.summary(line);
  });
}
