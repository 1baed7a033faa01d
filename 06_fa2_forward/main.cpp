// Chapter 06 executable: FA2 forward. The CPU tile model first (it runs anywhere),
// then the kernel checked against the fp64 reference and timed against FA1
// (chapter 05) and the standard attention, in the same run.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>

#include "05_fa1_forward/fa_forward.h"
#include "attention_inputs.h"
#include "cli.h"
#include "device.h"
#include "device_buffer.h"
#include "fa_forward.h"
#include "npy.h"
#include "random.h"
#include "reference_attention.h"
#include "standard_attention.h"
#include "tile_model.h"
#include "timing.h"
#include "work.h"

namespace {
const std::string kUsage = std::string(ladder::kAttentionUsage) +
                           "                              shape default 4 16 4096 64; d in 32, 64, 128\n"
                           "  --check-N N                 sequence length of the correctness check (default 1000, "
                           "B=2, H=3)\n"
                           "  --repeats R                 timed repeats (default 10)\n"
                           "  --profile fa2|fa1|standard  launch that kernel once on the shape and exit (for ncu)\n";
}  // namespace

int main(int argc, char** argv) {
  return ladder::run_main(argc, argv, kUsage, [](ladder::Args& args) {
    const auto flags = ladder::common_flags(args);
    const ladder::AttentionShape s = ladder::attention_shape_flags(args, {4, 16, 4096, 64, false});
    const int check_N = static_cast<int>(args.integer("--check-N", 1000, 1, 16384));
    const int repeats = static_cast<int>(args.integer("--repeats", 10, 1, 10000));
    const std::string profile = args.choice("--profile", {"fa2", "fa1", "standard"}, "");
    args.done();
    args.exclusive("--profile", "one launch on the shape, then exit", {"--check-N", "--repeats", "--dump"});
    const std::size_t smem = ladder::smem_per_block_for_models();
    const fa2::Tiles t = fa2::tiles(s, smem);  // validates the shape
    ladder::check_device_memory("shape " + s.str() + " (Q, K, V, O, L)", 4.0 * (4.0 * s.elems() + 2.0 * s.rows()));
    ladder::check_cpu_work("the tile model at " + s.str(), double(s.heads()) * t.T_r * t.T_c, 2e9);

    ladder::Report report("06_fa2_forward", flags.summary);
    report.out() << "shape " << s.str() << ": B_r = " << t.B_r << ", B_c = " << t.B_c
                 << " (chosen per d), T_r = " << t.T_r << ", T_c = " << t.T_c << ", " << t.smem_bytes
                 << " bytes of shared memory, grid = T_r x B*H = " << t.T_r * s.heads() << " blocks\n"
                 << "memory beyond Q, K, V, O: FA2 keeps L, " << s.rows() * 4 / 1e6
                 << " MB; the standard attention materialises S/P, " << ladder::StandardAttention::score_bytes(s) / 1e6
                 << " MB\n";

    // CPU: the tile model against the reference, and the traffic of the main shape.
    const ladder::AttentionShape small{1, 2, 100, s.d, s.causal};
    const ladder::AttentionInputs x = ladder::random_attention_inputs(small, ladder::fresh_seed());
    const fa2::TileModel model = fa2::tile_model(small, fa2::tiles(small, smem), x.Q.data(), x.K.data(), x.V.data());
    const auto ref_small = ladder::attention_forward_reference(small, x.Q.data(), x.K.data(), x.V.data());
    report.check("tile model O vs fp64 reference (" + small.str() + ")",
                 ladder::compare(std::vector<float>(model.O.begin(), model.O.end()), ref_small.O), ladder::kFp32);
    report.out() << "  HBM traffic of the FA2 loops at " << s.str() << " (tile model):\n"
                 << fa2::tile_model(s, t, nullptr, nullptr, nullptr).traffic.table();

    if (!ladder::device().available) return report.gpu_skipped("tile model matches the fp64 reference");

    if (!profile.empty()) {  // one launch of one kernel, nothing else (for ncu)
      const ladder::AttentionInputs in = ladder::random_attention_inputs(s, 1);
      ladder::DeviceBuffer<float> Q(in.Q), K(in.K), V(in.V), O(s.elems()), L(s.rows()), m(s.rows());
      if (profile == "fa2") fa2::forward(s, Q.data(), K.data(), V.data(), O.data(), L.data());
      if (profile == "fa1") fa1::forward(s, Q.data(), K.data(), V.data(), O.data(), L.data(), m.data());
      if (profile == "standard") ladder::StandardAttention(s).forward(Q.data(), K.data(), V.data(), O.data());
      CUDA_CHECK(cudaDeviceSynchronize());
      return 0;
    }

    // GPU: correctness at a size the fp64 reference affords, every element, O and L.
    const ladder::AttentionShape check{2, 3, check_N, s.d, s.causal};
    const std::uint64_t seed = ladder::fresh_seed();
    const ladder::AttentionInputs c = ladder::random_attention_inputs(check, seed);
    const auto ref = ladder::attention_forward_reference(check, c.Q.data(), c.K.data(), c.V.data());
    {
      ladder::DeviceBuffer<float> Q(c.Q), K(c.K), V(c.V), O(check.elems()), L(check.rows());
      O.poison();
      L.poison();
      fa2::forward(check, Q.data(), K.data(), V.data(), O.data(), L.data());
      const auto out_O = O.download(), out_L = L.download();
      report.check("FA2 O at " + check.str() + " (seed " + std::to_string(seed) + ")", ladder::compare(out_O, ref.O),
                   ladder::kFp32);
      report.check("FA2 L at " + check.str(), ladder::compare(out_L, ref.L), ladder::kFp32);
      const ladder::Dumper dump(flags.dump_dir);
      const std::vector<std::size_t> shape{std::size_t(check.B), std::size_t(check.H), std::size_t(check.N),
                                           std::size_t(check.d)};
      dump("Q", c.Q, shape), dump("K", c.K, shape), dump("V", c.V, shape), dump("O", out_O, shape);
      dump("L", out_L, {std::size_t(check.B), std::size_t(check.H), std::size_t(check.N)});
    }

    // GPU: time FA2, FA1 and the standard attention on the main shape.
    const ladder::AttentionInputs in = ladder::random_attention_inputs(s, seed + 10);
    ladder::DeviceBuffer<float> Q(in.Q), K(in.K), V(in.V), O(s.elems()), L(s.rows()), m(s.rows());
    const ladder::TimingOptions opt{repeats};
    const ladder::Work work = ladder::attention_fwd_work(s);
    const double fa2_ms =
        ladder::time_gpu([&] { fa2::forward(s, Q.data(), K.data(), V.data(), O.data(), L.data()); }, opt).median_ms;
    const double fa1_ms =
        ladder::time_gpu([&] { fa1::forward(s, Q.data(), K.data(), V.data(), O.data(), L.data(), m.data()); },
                         {std::max(3, repeats / 3)})
            .median_ms;
    double std_ms = NAN;  // stays NaN where the standard attention's S/P does not fit
    if (ladder::StandardAttention::fits(s)) {
      ladder::StandardAttention standard(s);
      std_ms = ladder::time_gpu([&] { standard.forward(Q.data(), K.data(), V.data(), O.data()); }, opt).median_ms;
    }
    char line[256];
    using Row = std::pair<const char*, double>;
    for (const auto& [name, ms] : {Row{"FA2", fa2_ms}, Row{"FA1 (ch. 05)", fa1_ms}, Row{"standard", std_ms}}) {
      std::snprintf(line, sizeof line, "  %-14s %10.3f ms %8.2f TFLOP/s\n", name, ms, work.tflops(ms));
      report.out() << line;
    }
    std::snprintf(line, sizeof line, "FA2 %s: %.2f TFLOP/s, %.2fx FA1's speed, %.2fx the standard attention's",
                  s.str().c_str(), work.tflops(fa2_ms), fa1_ms / fa2_ms, std_ms / fa2_ms);
    return report.summary(line);
  });
}
