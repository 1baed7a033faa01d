// Chapter 10 executable: FA2 on tensor cores, forward and backward. The CPU part checks
// the swizzled addressing the kernels rely on; on a GPU, every output is checked against
// the fp64 reference on the bf16-rounded inputs (dense and causal, GQA), then the forward
// (both normalisations), the backward (both dQ paths) and the fp32 FA1/FA2 normalisation
// pair are timed on the main shape, in one run, with cuDNN's attention checked and timed
// beside them on the same buffers when it is available (common/cudnn_attention.h).
#include <cuda_runtime_api.h>

#include <cstdio>
#include <string>
#include <vector>

#include "cli.h"
#include "cudnn_attention.h"
#include "device.h"
#include "device_buffer.h"
#include "fa2_tc.h"
#include "fa2_tc_arguments.h"
#include "fa2_tc_problem.h"
#include "launch.h"
#include "npy.h"
#include "random.h"
#include "reference_attention.h"
#include "timing.h"
#include "work.h"

namespace {
const std::string kUsage =
    std::string(ladder::kGqaAttentionUsage) +
    "  --repeats R                 timed repeats (default 10, at most 10000)\n"
    "  --config C --bwd-config C   tile configuration of the forward / backward (default: the first of the\n"
    "                              printed list that fits this GPU's shared memory, 0 on an H100/H200)\n"
    "  --profile P                 fwd, fwd_fa1norm, bwd or bwd_det: launch that once on the shape and exit\n"
    "                              (for ncu; bwd runs one forward first, outside the kernel filter)\n";

std::vector<std::size_t> dims(std::size_t b, std::size_t h, std::size_t n, std::size_t d = 0) {
  return d ? std::vector<std::size_t>{b, h, n, d} : std::vector<std::size_t>{b, h, n};
}

std::string config_list(int d) {
  std::string out;
  for (const auto* list : {"forward", "backward"}) {
    auto configs = std::string(list) == "forward" ? fa2tc::forward_configs(d) : fa2tc::backward_configs(d);
    const std::size_t n_configs = configs.size();
    if (std::string(list) == "forward")
      for (const fa2tc::TileConfig& c : fa2tc::forward_ablations(d)) configs.push_back(c);
    const std::size_t limit = ladder::smem_per_block_for_models();
    const int fits = std::string(list) == "forward" ? fa2tc::forward_fit(d, limit) : fa2tc::backward_fit(d, limit);
    out += std::string("  ") + list + " tile configs at d=" + std::to_string(d) + ":";
    for (std::size_t i = 0; i < configs.size(); ++i)
      out += " [" + std::to_string(i) + "] " + configs[i].name +
             (int(i) == fits   ? " (default here)"
              : i >= n_configs ? " (ablation, benchmark only)"
                               : "");
    out += "\n";
  }
  return out;
}

// cuDNN on the problem's buffers, against the same reference and bounds as the kernels; its
// backward is given its own forward's O and L. Says why not when it cannot run this shape.
void check_cudnn(ladder::Report& report, fa2tc::OnDevice& dev, const ladder::AttentionForward& fwd,
                 const ladder::AttentionGrads& grads, const std::string& what) {
  using Pass = ladder::CudnnAttention::Pass;
  ladder::CudnnAttention cudnn(dev.s);
  std::string why = cudnn.unsupported_reason(Pass::Forward);
  if (why.empty()) {
    dev.O.poison(), dev.L.poison();
    cudnn.forward(dev.Q.data(), dev.K.data(), dev.V.data(), dev.O.data(), dev.L.data());
    report.check("O cuDNN " + what, ladder::compare(dev.O_host(), fwd.O), ladder::kBf16Attention);
    report.check("L cuDNN " + what, fa2tc::compare_lse(dev.L_host(), fwd.L), fa2tc::kBf16AttentionL);
    why = cudnn.unsupported_reason(Pass::Backward);
  }
  if (!why.empty()) {
    report.out() << "  cuDNN anchor: " << why << "\n";
    return;
  }
  dev.dQ.poison(), dev.dK.poison(), dev.dV.poison();
  cudnn.backward(dev.Q.data(), dev.K.data(), dev.V.data(), dev.O.data(), dev.L.data(), dev.dO.data(), dev.dQ.data(),
                 dev.dK.data(), dev.dV.data());
  report.check("dQ cuDNN " + what, ladder::compare(dev.dQ_host(), grads.dQ), ladder::kBf16AttentionGrad);
  report.check("dK cuDNN " + what, ladder::compare(dev.dK_host(), grads.dK), ladder::kBf16AttentionGrad);
  report.check("dV cuDNN " + what, ladder::compare(dev.dV_host(), grads.dV), ladder::kBf16AttentionGrad);
}
}  // namespace

int main(int argc, char** argv) {
  return ladder::run_main(argc, argv, kUsage, [](ladder::Args& args) {
    const auto flags = ladder::common_flags(args);
    const ladder::GqaAttentionFlags attention = ladder::gqa_attention_flags(args);
    ladder::AttentionShape s = attention.shape;
    const int check_N = attention.check_N;
    const int repeats = static_cast<int>(args.integer("--repeats", 10, 1, 10000));
    const int config = static_cast<int>(args.integer("--config", fa2tc::kFits, 0));
    const int bwd_config = static_cast<int>(args.integer("--bwd-config", fa2tc::kFits, 0));
    const std::string profile = args.choice("--profile", {"fwd", "fwd_fa1norm", "bwd", "bwd_det"}, "");
    args.gpu_only({"--config", "--bwd-config"});
    args.done();
    args.exclusive("--profile", "one launch on the shape, then exit", {"--check-N", "--repeats", "--dump"});
    args.needs("--bwd-config", profile.rfind("fwd", 0) != 0,
               "a run with a backward (no --profile, or --profile bwd, bwd_det)", "--profile " + profile);
    ladder::validate(s, fa2tc::kSupportedD, ladder::KvHeads::Any);
    // What the run and the launchers would refuse on the main shape, refused now, on every machine.
    ladder::check_device_memory("the main shape " + s.str(),
                                2.0 * (4 * s.elems() + 4 * s.kv_elems()) + 4.0 * (s.elems() + 2 * s.rows()));
    ladder::check_grid("the main shape " + s.str() + " (one row of blocks per head, B*H)", 1, s.heads());
    fa2tc::check_shape(s, "the main shape " + s.str());
    if (config != fa2tc::kFits)
      fa2tc::check_config(config, int(fa2tc::forward_configs(s.d).size() + fa2tc::forward_ablations(s.d).size()), s.d,
                          "--config");
    if (bwd_config != fa2tc::kFits)
      fa2tc::check_config(bwd_config, int(fa2tc::backward_configs(s.d).size()), s.d, "--bwd-config");
    const fa2tc::ForwardOptions fwd_opt{fa2tc::Normalisation::FA2, config, {}};
    const fa2tc::BackwardOptions bwd_opt{fa2tc::DqPath::Atomic, bwd_config};

    ladder::Report report("10_fa2_tensor_cores", flags.summary);
    report.out() << "shape " << s.str() << "\n" << config_list(s.d);

    // CPU: the one-XOR swizzled addressing against chapter 09's tc::swizzle_128b.
    const std::string swizzle = fa2tc::detail::check_swizzle_addressing();
    report.out() << "  swizzled ldmatrix addressing vs tc::swizzle_128b: " << (swizzle.empty() ? "agree" : swizzle)
                 << "\n";
    if (!swizzle.empty()) return report.summary("swizzled addressing disagrees with tc::swizzle_128b: " + swizzle);
    if (!ladder::device().available)
      return report.gpu_skipped("swizzled addressing agrees with tc::swizzle_128b for every lane");

    if (!profile.empty()) {  // one launch of one kernel, nothing else timed (for ncu)
      ladder::check_device_memory("--profile " + profile, 2.0 * (4 * s.elems() + 4 * s.kv_elems()) + 4.0 * s.elems());
      fa2tc::OnDevice dev(fa2tc::make_problem(s, 1));
      if (profile == "fwd" || profile == "fwd_fa1norm") {
        fa2tc::ForwardOptions opt = fwd_opt;
        if (profile == "fwd_fa1norm") opt.norm = fa2tc::Normalisation::FA1;
        dev.forward(opt);
      } else {
        dev.forward(fwd_opt);
        fa2tc::BackwardOptions opt = bwd_opt;
        if (profile == "bwd_det") opt.path = fa2tc::DqPath::Deterministic;
        dev.backward(opt);
      }
      CUDA_CHECK(cudaDeviceSynchronize());
      return 0;
    }

    // cuDNN's attention, the in-process anchor: checked and timed beside the kernels when it
    // runs here; otherwise one line says why, and the rest runs without it.
    const std::string cudnn_why = ladder::CudnnAttention::unavailable_reason();
    report.out() << "  cuDNN anchor: " << (cudnn_why.empty() ? ladder::CudnnAttention::version() : cudnn_why) << "\n";

    // GPU: every output against the fp64 reference, dense and causal, GQA (H = 4, H_kv = 2),
    // the kernels' and cuDNN's.
    const std::uint64_t seed = ladder::fresh_seed();
    for (bool causal : {false, true}) {
      ladder::AttentionShape c{2, 4, check_N, s.d, causal};
      c.H_kv = 2;
      const fa2tc::Problem p = fa2tc::make_problem(c, seed);
      const auto fwd = ladder::attention_forward_reference(c, p.Q.data(), p.K.data(), p.V.data());
      const auto grads = ladder::attention_backward_reference(c, p.Q.data(), p.K.data(), p.V.data(), p.dO.data());
      fa2tc::OnDevice dev(p);
      const std::string what = c.str() + " (seed " + std::to_string(seed) + ")";
      for (fa2tc::Normalisation norm : fa2tc::kAllNormalisations) {
        fa2tc::ForwardOptions opt = fwd_opt;
        opt.norm = norm;
        dev.forward(opt);
        const std::string n = fa2tc::name(norm);
        report.check("O " + n + " " + what, ladder::compare(dev.O_host(), fwd.O), ladder::kBf16Attention);
        report.check("L " + n + " " + what, fa2tc::compare_lse(dev.L_host(), fwd.L), fa2tc::kBf16AttentionL);
      }
      dev.forward(fwd_opt);  // the FA2 O and L the backward is given, as in training
      const std::vector<float> O = dev.O_host(), L = dev.L_host();
      for (fa2tc::DqPath path : fa2tc::kAllDqPaths) {
        fa2tc::BackwardOptions opt = bwd_opt;
        opt.path = path;
        dev.backward(opt);
        const std::string w = std::string(fa2tc::name(path)) + " " + what;
        const auto dQ = dev.dQ_host(), dK = dev.dK_host(), dV = dev.dV_host();
        report.check("dQ " + w, ladder::compare(dQ, grads.dQ), ladder::kBf16AttentionGrad);
        report.check("dK " + w, ladder::compare(dK, grads.dK), ladder::kBf16AttentionGrad);
        report.check("dV " + w, ladder::compare(dV, grads.dV), ladder::kBf16AttentionGrad);
        if (path == fa2tc::DqPath::Atomic && !flags.dump_dir.empty()) {
          // What compare_with_sdpa.py needs: the inputs, our outputs, the fp64 reference.
          const ladder::Dumper dump(flags.dump_dir + "/" + (causal ? "causal" : "dense"));
          const auto q = dims(c.B, c.H, c.N, c.d), kv = dims(c.B, c.hkv(), c.nkv(), c.d), r = dims(c.B, c.H, c.N);
          dump("Q", p.Q, q), dump("K", p.K, kv), dump("V", p.V, kv), dump("dO", p.dO, q);
          dump("O", O, q), dump("L", L, r), dump("dQ", dQ, q), dump("dK", dK, kv), dump("dV", dV, kv);
          dump("O_ref", fwd.O, q), dump("L_ref", fwd.L, r);
          dump("dQ_ref", grads.dQ, q), dump("dK_ref", grads.dK, kv), dump("dV_ref", grads.dV, kv);
        }
      }
      if (cudnn_why.empty()) check_cudnn(report, dev, fwd, grads, what);
    }

    // GPU: time the main shape: forward (both normalisations), backward (both dQ paths),
    // and chapter 06's fp32 kernel with the same two normalisations.
    const ladder::TimingOptions opt{repeats};
    const ladder::Work fwd_work = ladder::attention_fwd_work(s, 2), bwd_work = ladder::attention_bwd_work(s, 2);
    double fwd_ms = 0, fa1_ms = 0, bwd_ms = 0, det_ms = 0;
    double cudnn_fwd_ms = 0, cudnn_bwd_ms = 0;  // 0: not timed
    {
      fa2tc::OnDevice dev(fa2tc::make_problem(s, seed + 10));
      dev.poison = false;
      fwd_ms = ladder::time_gpu([&] { dev.forward(fwd_opt); }, opt).median_ms;
      fa2tc::ForwardOptions fa1 = fwd_opt;
      fa1.norm = fa2tc::Normalisation::FA1;
      fa1_ms = ladder::time_gpu([&] { dev.forward(fa1); }, opt).median_ms;
      dev.forward(fwd_opt);
      bwd_ms = ladder::time_gpu([&] { dev.backward(bwd_opt); }, opt).median_ms;
      fa2tc::BackwardOptions det = bwd_opt;
      det.path = fa2tc::DqPath::Deterministic;
      det_ms = ladder::time_gpu([&] { dev.backward(det); }, opt).median_ms;
      if (cudnn_why.empty()) {  // cuDNN on the same buffers, with the same timer
        using Pass = ladder::CudnnAttention::Pass;
        ladder::CudnnAttention cudnn(s);
        auto cudnn_forward = [&] {
          cudnn.forward(dev.Q.data(), dev.K.data(), dev.V.data(), dev.O.data(), dev.L.data());
        };
        std::string why = cudnn.unsupported_reason(Pass::Forward);
        if (why.empty()) {
          cudnn_fwd_ms = ladder::time_gpu(cudnn_forward, opt).median_ms;
          why = cudnn.unsupported_reason(Pass::Backward);
        }
        if (why.empty()) {
          auto cudnn_backward = [&] {
            cudnn.backward(dev.Q.data(), dev.K.data(), dev.V.data(), dev.O.data(), dev.L.data(), dev.dO.data(),
                           dev.dQ.data(), dev.dK.data(), dev.dV.data());
          };
          cudnn_forward();  // its own O and L, which its backward reads
          cudnn_bwd_ms = ladder::time_gpu(cudnn_backward, opt).median_ms;
        } else {
          report.out() << "  cuDNN anchor: " << why << "\n";
        }
      }
    }
    char line[256];
    report.out() << "\n  " << s.str() << "                 median ms   TFLOP/s\n";
    auto row = [&](const char* name, double ms, const ladder::Work& w) {
      std::snprintf(line, sizeof line, "  %-36s %10.3f %9.1f\n", name, ms, w.tflops(ms));
      report.out() << line;
    };
    row("forward, FA2 normalisation", fwd_ms, fwd_work);
    row("forward, FA1 normalisation", fa1_ms, fwd_work);
    row("backward, atomic dQ", bwd_ms, bwd_work);
    row("backward, deterministic dQ", det_ms, bwd_work);
    if (cudnn_fwd_ms > 0) row("cuDNN forward", cudnn_fwd_ms, fwd_work);
    if (cudnn_bwd_ms > 0) row("cuDNN backward", cudnn_bwd_ms, bwd_work);
    if (s.self_attention()) {  // the same lesson in fp32 on CUDA cores (chapter 06's kernel)
      const std::vector<float> q = ladder::random_uniform(s.elems(), seed + 20);
      ladder::DeviceBuffer<float> Q(q), K(q), V(q), O(s.elems()), L(s.rows());
      const ladder::TimingOptions fp32_opt{std::max(3, repeats / 3)};
      double ms[2];
      for (fa2tc::Normalisation norm : fa2tc::kAllNormalisations)
        ms[norm == fa2tc::Normalisation::FA2 ? 0 : 1] =
            ladder::time_gpu([&] { fa2tc::forward_fp32(s, Q.data(), K.data(), V.data(), O.data(), L.data(), norm); },
                             fp32_opt)
                .median_ms;
      const ladder::Work fp32_work = ladder::attention_fwd_work(s, 4);
      row("fp32 forward (ch. 06), FA2 normalisation", ms[0], fp32_work);
      row("fp32 forward (ch. 06), FA1 normalisation", ms[1], fp32_work);
      std::snprintf(line, sizeof line,
                    "  FA1 normalisation costs %.2fx the time of FA2's on tensor cores, %.2fx in fp32\n",
                    fa1_ms / fwd_ms, ms[1] / ms[0]);
      report.out() << line;
    }
    std::snprintf(line, sizeof line, "FA2-TC %s: fwd %.1f TFLOP/s %s, bwd %.1f TFLOP/s %s", s.str().c_str(),
                  fwd_work.tflops(fwd_ms), ladder::versus_cudnn(fwd_ms, cudnn_fwd_ms).c_str(), bwd_work.tflops(bwd_ms),
                  ladder::versus_cudnn(bwd_ms, cudnn_bwd_ms).c_str());
    return report.summary(line);
  });
}
