// Chapter 07 executable: FA2 backward. The P-from-L identity first (on the CPU, so
// it runs anywhere), then both dQ paths checked against the fp64 reference, then
// timed against the chapter-06 forward and the standard backward in the same run.
#include <cuda_runtime_api.h>

#include <cstdio>
#include <string>
#include <vector>

#include "06_fa2_forward/fa_forward.h"
#include "attention_inputs.h"
#include "cli.h"
#include "device.h"
#include "device_buffer.h"
#include "fa_backward.h"
#include "npy.h"
#include "on_device.h"
#include "p_from_l.h"
#include "random.h"
#include "reference_attention.h"
#include "standard_attention.h"
#include "timing.h"
#include "work.h"

namespace {
using fa2::OnDevice;

constexpr const char* kUsage =
    "  --B B --H H --N N --d D     shape of Q, K, V, O, dO and the gradients: [B, H, N, d]\n"
    "                              (default 4 16 4096 64; d in 32, 64, 128)\n"
    "  --mask dense|causal|both    the masks to check and time (default both)\n"
    "  --check-N N                 sequence length of the correctness check (default 1000, B=1, H=2)\n"
    "  --repeats R                 timed repeats (default 10)\n"
    "  --profile P                 atomic, deterministic or standard: run that backward once on the shape\n"
    "                              and exit (for ncu)\n"
    "  --accuracy N1,N2,..         with --dump DIR: for each N, forward and backward (both summations) at\n"
    "                              B=1 H=2 dense, written to DIR/N<N>/; accuracy_vs_n.py reads them\n";

// The accuracy study: the tensors of one N, for accuracy_vs_n.py (fp64 reference and
// PyTorch's fp32 backward on the same inputs, on the GPU; the Eigen reference on the
// CPU would take minutes at N = 32768).
void dump_accuracy_case(const std::string& dir, int N, int d, std::uint64_t seed) {
  const ladder::AttentionShape s{1, 2, N, d, false};
  const ladder::AttentionInputs x = ladder::random_attention_inputs(s, seed, true);
  OnDevice dev(s, x);
  const ladder::Dumper dump(dir + "/N" + std::to_string(N));
  const std::vector<std::size_t> shape{std::size_t(s.B), std::size_t(s.H), std::size_t(s.N), std::size_t(s.d)};
  dump("Q", x.Q, shape), dump("K", x.K, shape), dump("V", x.V, shape), dump("dO", x.dO, shape);
  dump("O", dev.O.download(), shape),
      dump("L", dev.L.download(), {std::size_t(s.B), std::size_t(s.H), std::size_t(s.N)});
  for (fa2::DqPath path : fa2::kAllDqPaths)
    for (fa2::Summation sum : fa2::kAllSummations) {
      dev.backward(path, sum);
      const std::string tag = std::string("_") + fa2::name(path) + "_" + fa2::name(sum);
      dump("dQ" + tag, dev.dQ.download(), shape), dump("dK" + tag, dev.dK.download(), shape);
      dump("dV" + tag, dev.dV.download(), shape);
    }
}

std::string mask_name(bool causal) { return causal ? "causal" : "dense"; }
}  // namespace

int main(int argc, char** argv) {
  return ladder::run_main(argc, argv, kUsage, [](ladder::Args& args) {
    const auto flags = ladder::common_flags(args);
    ladder::AttentionShape s = ladder::attention_shape_flags(args, {4, 16, 4096, 64, false}, false);
    const std::string mask = args.choice("--mask", {"dense", "causal", "both"}, "both");
    const int check_N = static_cast<int>(args.integer("--check-N", 1000, 1, 16384));
    const int repeats = static_cast<int>(args.integer("--repeats", 10, 1, 10000));
    const std::string profile = args.choice("--profile", {"atomic", "deterministic", "standard"}, "");
    const std::vector<long long> accuracy_N = args.integers("--accuracy", {}, 1, 65536);
    args.gpu_only({"--accuracy"});
    args.done();
    args.exclusive("--accuracy", "its own shapes, B=1 H=2 dense at each N, then exit",
                   {"--B", "--H", "--N", "--mask", "--check-N", "--repeats", "--profile"});
    args.exclusive("--profile", "one dense backward on the shape, then exit",
                   {"--mask", "--check-N", "--repeats", "--dump"});
    std::vector<bool> masks;
    if (mask != "causal") masks.push_back(false);
    if (mask != "dense") masks.push_back(true);
    const fa2::BackwardTiles t = fa2::backward_tiles(s);  // validates the shape
    ladder::check_device_memory("shape " + s.str() + " (Q, K, V, O, dO, dQ, dK, dV, L, D)",
                                4.0 * (8.0 * s.elems() + 2.0 * s.rows()));
    if (!accuracy_N.empty() && flags.dump_dir.empty())
      throw std::invalid_argument("--accuracy writes its tensors with --dump DIR: give both");

    ladder::Report report("07_fa_backward", flags.summary);
    report.out() << "shape " << s.str() << ": B_c = " << t.B_c << " keys per block, B_r = " << t.B_r
                 << " query rows per step, grid = T_c x B*H = " << std::size_t(t.T_c) * s.heads() << " blocks of "
                 << t.threads << " threads\n";
    char line[320];
    std::snprintf(line, sizeof line,
                  "memory beyond the tensors: D, %.1f MB (both dQ paths); the standard backward keeps P and dS, "
                  "2 x %.0f MB\n",
                  s.rows() * 4 / 1e6, ladder::StandardAttention::score_bytes(s) / 1e6);
    report.out() << line;

    // CPU: the chapter's idea on the fp64 reference.
    {
      const ladder::AttentionShape small{1, 1, 256, s.d, true};
      const ladder::AttentionInputs x = ladder::random_attention_inputs(small, ladder::fresh_seed(), true);
      const auto fwd = ladder::attention_forward_reference(small, x.Q.data(), x.K.data(), x.V.data());
      const double diff = fa2::p_from_l(small, x.Q.data(), x.K.data(), fwd.L.data(), 0).max_abs_diff;
      std::snprintf(line, sizeof line, "P from L (fp64 reference, %s): max |exp(S - L) - softmax(S)| = %.1e",
                    small.str().c_str(), diff);
      report.out() << line << "\n";
      if (!ladder::device().available) return report.gpu_skipped(line);
    }

    if (!accuracy_N.empty()) {
      for (long long N : accuracy_N) dump_accuracy_case(flags.dump_dir, int(N), s.d, ladder::fresh_seed());
      report.out() << "accuracy study: tensors for N = " << accuracy_N.size() << " lengths in " << flags.dump_dir
                   << "; run 07_fa_backward/accuracy_vs_n.py " << flags.dump_dir << "\n";
      return 0;
    }

    if (!profile.empty()) {  // one launch of one backward, nothing else timed (for ncu)
      OnDevice dev(s, ladder::random_attention_inputs(s, 1, true));
      if (profile == "standard") {
        ladder::StandardAttention standard(s, true);
        standard.forward(dev.Q.data(), dev.K.data(), dev.V.data(), dev.O.data());
        standard.backward(dev.Q.data(), dev.K.data(), dev.V.data(), dev.dO.data(), dev.dQ.data(), dev.dK.data(),
                          dev.dV.data());
      } else {
        dev.backward(profile == "atomic" ? fa2::DqPath::Atomic : fa2::DqPath::Deterministic);
      }
      CUDA_CHECK(cudaDeviceSynchronize());
      return 0;
    }

    // GPU: both dQ paths against the fp64 reference at a size it affords, every element.
    const std::uint64_t seed = ladder::fresh_seed();
    const ladder::Dumper dump(flags.dump_dir);
    for (bool causal : masks) {
      const ladder::AttentionShape check{1, 2, check_N, s.d, causal};
      const ladder::AttentionInputs x = ladder::random_attention_inputs(check, seed, true);
      OnDevice dev(check, x);
      const std::vector<float> L = dev.L.download();
      std::snprintf(line, sizeof line,
                    "P from L (chapter-06 forward, %s, head 0): max |exp(S - L) - softmax(S)| = %.1e",
                    check.str().c_str(), fa2::p_from_l(check, x.Q.data(), x.K.data(), L.data(), 0).max_abs_diff);
      report.out() << line << "\n";
      const auto ref = ladder::attention_backward_reference(check, x.Q.data(), x.K.data(), x.V.data(), x.dO.data());
      for (fa2::DqPath path : fa2::kAllDqPaths) {
        dev.backward(path);
        const std::string what = std::string(fa2::name(path)) + " " + check.str();
        const auto dQ = dev.dQ.download(), dK = dev.dK.download(), dV = dev.dV.download();
        report.check("dQ " + what + " (seed " + std::to_string(seed) + ")", ladder::compare(dQ, ref.dQ),
                     ladder::kFp32Grad);
        report.check("dK " + what, ladder::compare(dK, ref.dK), ladder::kFp32Grad);
        report.check("dV " + what, ladder::compare(dV, ref.dV), ladder::kFp32Grad);
        if (dump.enabled() && causal == masks.front() && path == fa2::DqPath::Atomic) {
          const std::vector<std::size_t> shape{std::size_t(check.B), std::size_t(check.H), std::size_t(check.N),
                                               std::size_t(check.d)};
          const std::vector<std::size_t> rows{std::size_t(check.B), std::size_t(check.H), std::size_t(check.N)};
          dump("Q", x.Q, shape), dump("K", x.K, shape), dump("V", x.V, shape), dump("dO", x.dO, shape);
          dump("O", dev.O.download(), shape), dump("L", L, rows), dump("D", dev.D.download(), rows);
          dump("dQ", dQ, shape), dump("dK", dK, shape), dump("dV", dV, shape);
        }
      }
    }

    // GPU: time the backward on both paths, the forward and the standard backward.
    const ladder::TimingOptions opt{repeats};
    std::string summary = "bwd (atomic) " + s.str() + ":";
    for (bool causal : masks) {
      ladder::AttentionShape sc = s;
      sc.causal = causal;
      OnDevice dev(sc, ladder::random_attention_inputs(sc, seed + 10, true));
      dev.poison = false;
      const ladder::Work fwd_work = ladder::attention_fwd_work(sc);
      const ladder::Work bwd_work = ladder::attention_bwd_work(sc);
      const double fwd_ms = ladder::time_gpu([&] { dev.forward(); }, opt).median_ms;
      double bwd_ms[2];
      for (fa2::DqPath path : fa2::kAllDqPaths)
        bwd_ms[path == fa2::DqPath::Atomic ? 0 : 1] = ladder::time_gpu([&] { dev.backward(path); }, opt).median_ms;

      double std_ms = 0.0;  // 0: did not fit
      if (ladder::StandardAttention::fits(sc, true)) {
        ladder::StandardAttention standard(sc, true);
        standard.forward(dev.Q.data(), dev.K.data(), dev.V.data(), dev.O.data());
        std_ms = ladder::time_gpu(
                     [&] {
                       standard.backward(dev.Q.data(), dev.K.data(), dev.V.data(), dev.dO.data(), dev.dQ.data(),
                                         dev.dK.data(), dev.dV.data());
                     },
                     opt)
                     .median_ms;
      }

      report.out() << "\n  " << mask_name(causal) << "                          median ms   TFLOP/s   x fwd time\n";
      auto row = [&](const char* what, double ms, const ladder::Work& w) {
        std::snprintf(line, sizeof line, "  %-30s %10.3f %9.2f %10.2f\n", what, ms, w.tflops(ms), ms / fwd_ms);
        report.out() << line;
      };
      row("fa2_forward (chapter 06)", fwd_ms, fwd_work);
      row("fa2_backward atomic", bwd_ms[0], bwd_work);
      row("fa2_backward deterministic", bwd_ms[1], bwd_work);
      if (std_ms > 0)
        row("standard backward (N x N)", std_ms, bwd_work);
      else
        report.out() << "  standard backward: skipped, its N x N buffers do not fit in free GPU memory\n";

      std::snprintf(line, sizeof line, " %s %.2f TFLOP/s = %.2fx fwd time", mask_name(causal).c_str(),
                    bwd_work.tflops(bwd_ms[0]), bwd_ms[0] / fwd_ms);
      summary += (causal == masks.front() ? "" : ";") + std::string(line);
      if (std_ms > 0) {
        std::snprintf(line, sizeof line, ", %.2fx the standard backward's speed", std_ms / bwd_ms[0]);
        summary += line;
      }
    }
    return report.summary(summary);
  });
}
