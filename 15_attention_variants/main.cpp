// Chapter 15 executable: attention variants. The CPU part prints the block masks of the measured
// cases (how many tiles the kernels will visit, how many of them need the mask); on an sm_90a
// GPU, every built-in is checked against the fp64 reference, forward and backward; then the
// three masks FlexAttention is compared on are timed in useful TFLOP/s (the FLOPs of the
// visible elements only), with chapter 12 and 14's built-in causal kernels beside the same
// mask as code, the block-sparse sweep, and packed documents beside equal-length sequences.
#include <cuda_runtime_api.h>

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "12_fa3_hopper/fa3.h"
#include "14_fa3_backward/fa3_bwd.h"
#include "14_fa3_backward/fa3_bwd_problem.h"
#include "cases.h"
#include "cli.h"
#include "flex.h"
#include "flex_problem.h"
#include "random.h"
#include "reference_attention.h"
#include "timing.h"
#include "work.h"

namespace {
const std::string kUsage =
    "  --check-N N     sequence length of the checks against the fp64 reference (default 1000)\n"
    "  --repeats R     timed repeats (default 10, at most 10000)\n"
    "  --flex FILE     FlexAttention's figures, as scripts/anchors/torch_anchors.py OUT --only flex\n"
    "                  --flex-text FILE writes them: lines `case fwd|bwd TFLOP/s` (case: window, documents\n"
    "                  or softcap); the summary line then reads as ratios to them\n";

using variants::Kind;
using variants::Variant;

struct Timed {
  double fwd_ms, bwd_ms, pairs;
  double fwd_tflops(int d) const { return 4.0 * d * pairs / (fwd_ms * 1e9); }
  double bwd_tflops(int d) const { return 2.5 * 4.0 * d * pairs / (bwd_ms * 1e9); }
  double train_tflops(int d) const { return 3.5 * 4.0 * d * pairs / ((fwd_ms + bwd_ms) * 1e9); }
};

Timed time_variant(const ladder::AttentionShape& s, const Variant& v, std::uint64_t seed, int repeats) {
  variants::OnDevice dev(fa2tc::make_problem(s, seed), v);
  dev.poison = false;
  const ladder::TimingOptions opt{repeats};
  dev.forward();
  const double fwd = ladder::time_gpu([&] { dev.forward(); }, opt).median_ms;
  const double bwd = ladder::time_gpu([&] { dev.backward(); }, opt).median_ms;
  return {fwd, bwd, dev.pairs};
}

// Chapters 12 and 14's own kernels (causal built in), for the same mask as code.
Timed time_builtin_causal(ladder::AttentionShape s, std::uint64_t seed, int repeats) {
  s.causal = true;
  fa3bwd::OnDevice dev(fa3bwd::make_problem(s, seed));
  dev.poison = false;
  const ladder::TimingOptions opt{repeats};
  dev.forward();
  const double fwd = ladder::time_gpu([&] { dev.forward(); }, opt).median_ms;
  const double bwd = ladder::time_gpu([&] { dev.backward(); }, opt).median_ms;
  return {fwd, bwd, ladder::attention_pairs(s) * double(s.heads())};
}

std::string fixed2(double x) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2f", x);
  return b;
}

// --flex FILE: what scripts/anchors/torch_anchors.py writes with --flex-text FILE, one line
// `<case> fwd|bwd <TFLOP/s>` per pass measured of the headline cases. Anything else (a directory,
// another file, an empty one) is refused, naming the line: it must not pass for no figures.
std::map<std::string, double> read_flex(const std::string& path) {
  std::map<std::string, double> out;
  if (path.empty()) return out;
  const std::string flag = "--flex " + path + ": ",
                    writer = "scripts/anchors/torch_anchors.py OUT --only flex --flex-text FILE writes that file";
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw std::invalid_argument(flag + "that is a directory, not a file of FlexAttention's figures (" + writer + ")");
  std::ifstream in(path);
  if (!in) throw std::invalid_argument(flag + "cannot read it (" + std::strerror(errno) + ")");
  std::string names;
  for (const auto& c : variants::cases::headline()) names += (names.empty() ? "" : ", ") + std::string(c.name);
  int number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    std::istringstream words(line);
    std::string name, pass, extra;
    double tflops = 0;
    const bool ok = (words >> name >> pass >> tflops) && !(words >> extra) && (pass == "fwd" || pass == "bwd") &&
                    std::isfinite(tflops) && tflops > 0 &&
                    (", " + names + ", ").find(", " + name + ", ") != std::string::npos;
    std::string shown = line.substr(0, 60);
    for (char& ch : shown)
      if (!std::isprint(static_cast<unsigned char>(ch))) ch = '?';
    if (!ok)
      throw std::invalid_argument(flag + "line " + std::to_string(number) + " reads '" + shown +
                                  "', not `<case> fwd|bwd <TFLOP/s>` with a case among " + names + " (" + writer + ")");
    if (!out.emplace(name + " " + pass, tflops).second)
      throw std::invalid_argument(flag + "line " + std::to_string(number) + ": '" + name + " " + pass +
                                  "' is given twice");
  }
  if (out.empty())
    throw std::invalid_argument(flag + "no figures in it (" + writer +
                                ", and leaves it empty when flex_attention's measurements failed: see its output)");
  return out;
}
}  // namespace

int main(int argc, char** argv) {
  return ladder::run_main(argc, argv, kUsage, [](ladder::Args& args) {
    const auto flags = ladder::common_flags(args, "chapter 15 writes no arrays (its checks run inside the executable)");
    const int check_N = static_cast<int>(args.integer("--check-N", 1000, 1, 8192));
    const int repeats = static_cast<int>(args.integer("--repeats", 10, 1, 10000));
    const std::map<std::string, double> flex = read_flex(args.text("--flex", "", "a file name"));
    args.gpu_only({"--flex"});
    args.done();

    ladder::Report report("15_attention_variants", flags.summary);
    char line[320];
    report.out() << "block masks (forward: 128 x 128 tiles), the tiles a CTA row visits:\n";
    for (const auto& c : variants::cases::headline()) {
      const variants::ModsData h(c.v, c.s);
      const variants::BlockMask m = variants::block_mask(c.v, c.s, h, variants::kForwardB_r);
      long long partial = 0, full = 0;
      for (std::size_t r = 0; r < m.kv_num_blocks.size(); ++r)
        partial += m.kv_num_blocks[r], full += m.full_kv_num_blocks[r];
      std::snprintf(line, sizeof line,
                    "  %-10s %-26s %5.1f%% of tiles visited (%lld masked, %lld full), %5.1f%% of elements visible\n",
                    c.name, c.s.str().c_str(), 100.0 * m.density(), partial, full,
                    100.0 * double(m.visible) / (double(m.N) * m.N_kv));
      report.out() << line;
    }
    if (const std::string why = variants::unavailable_reason(); !why.empty())
      return report.gpu_skipped(why + "; block masks built");

    // Every built-in against the fp64 reference, forward and backward, GQA 4:2.
    const std::uint64_t seed = ladder::fresh_seed();
    for (Kind k : {Kind::Dense, Kind::Causal, Kind::Window, Kind::Documents, Kind::PrefixLM, Kind::Softcap, Kind::Alibi,
                   Kind::Tiles}) {
      Variant v;
      v.kind = k, v.window = check_N / 8, v.prefix = check_N / 5, v.cap = 2.0f;
      v.doc_lengths = variants::cases::document_lengths(check_N, 5, 7);
      const ladder::AttentionShape c = ladder::attention_shape(2, 4, 2, check_N, check_N, 128, false);
      const fa2tc::Problem p = fa2tc::make_problem(c, seed);
      variants::OnDevice dev(p, v);
      const variants::Mods m = variants::reference_mods(v, dev.s, dev.host);
      const std::string what = v.str() + " " + c.str() + " (seed " + std::to_string(seed) + ")";
      const auto ref = ladder::attention_forward_reference(c, p.Q.data(), p.K.data(), p.V.data(), m);
      dev.forward();
      report.check("O " + what, ladder::compare(dev.O_host(), ref.O), ladder::kBf16Attention);
      report.check("L " + what, ladder::compare_lse(dev.L_host(), ref.L), ladder::kLse);
      const auto g = ladder::attention_backward_reference(c, p.Q.data(), p.K.data(), p.V.data(), p.dO.data(), m);
      dev.backward();
      report.check("dQ " + what, ladder::compare(dev.dQ_host(), g.dQ), ladder::kBf16AttentionGrad);
      report.check("dK " + what, ladder::compare(dev.dK_host(), g.dK), ladder::kBf16AttentionGrad);
      report.check("dV " + what, ladder::compare(dev.dV_host(), g.dV), ladder::kBf16AttentionGrad);
    }

    // The three masks, useful TFLOP/s, against FlexAttention's when given.
    report.out() << "\n  useful TFLOP/s (visible elements only)        fwd ms   fwd TF/s    bwd ms   bwd TF/s\n";
    auto row = [&](const std::string& name, const Timed& t, int d) {
      std::snprintf(line, sizeof line, "  %-44s %8.3f %9.1f %9.3f %9.1f\n", name.c_str(), t.fwd_ms, t.fwd_tflops(d),
                    t.bwd_ms, t.bwd_tflops(d));
      report.out() << line;
    };
    std::string summary;
    double worst_fwd = 0, worst_bwd = 0, documents_train = 0;
    for (const auto& c : variants::cases::headline()) {
      const Timed t = time_variant(c.s, c.v, seed, repeats);
      if (c.v.kind == Kind::Documents) documents_train = t.train_tflops(c.s.d);
      row(std::string(c.name) + " " + c.v.str() + " " + c.s.str(), t, c.s.d);
      const auto f = flex.find(std::string(c.name) + " fwd"), b = flex.find(std::string(c.name) + " bwd");
      if (f != flex.end() && b != flex.end()) {
        const double rf = t.fwd_tflops(c.s.d) / f->second, rb = t.bwd_tflops(c.s.d) / b->second;
        std::snprintf(line, sizeof line, "  %-44s %8s %9.1f %9s %9.1f   ours / flex: fwd %.2fx, bwd %.2fx\n",
                      "  FlexAttention (torch.compile)", "", f->second, "", b->second, rf, rb);
        report.out() << line;
        worst_fwd = worst_fwd == 0 ? rf : std::min(worst_fwd, rf);
        worst_bwd = worst_bwd == 0 ? rb : std::min(worst_bwd, rb);
      }
      if (summary.empty()) {
        std::snprintf(line, sizeof line, "variants N=%d window=%d: fwd %.1f TFLOP/s", c.s.N, c.v.window,
                      t.fwd_tflops(c.s.d));
        summary = line;
        if (f != flex.end()) summary += " = " + fixed2(t.fwd_tflops(c.s.d) / f->second) + "x flex";
        std::snprintf(line, sizeof line, ", bwd %.1f", t.bwd_tflops(c.s.d));
        summary += line;
        if (b != flex.end()) summary += " = " + fixed2(t.bwd_tflops(c.s.d) / b->second) + "x flex";
      }
    }
    if (worst_fwd > 0)
      summary += "; lowest of three masks: fwd " + fixed2(worst_fwd) + "x, bwd " + fixed2(worst_bwd) + "x flex";

    // The same causal mask as code and built in (chapters 12 and 14).
    const ladder::AttentionShape cs = ladder::attention_shape(4, 16, 16, 4096, 4096, 128, false);
    Variant causal;
    causal.kind = Kind::Causal;
    row("causal as code " + cs.str(), time_variant(cs, causal, seed, repeats), cs.d);
    row("causal built in (chapters 12, 14) " + cs.str(), time_builtin_causal(cs, seed, repeats), cs.d);

    // Packed documents (variable lengths in one sequence) beside the same tokens as equal-length
    // causal sequences, chapters 12 and 14: forward + backward, useful TFLOP/s.
    const variants::cases::Case docs = variants::cases::headline()[1];
    const int count = int(docs.v.doc_lengths.size());
    const ladder::AttentionShape eq =
        ladder::attention_shape(count, 16, 16, docs.s.N / count, docs.s.N / count, 128, false);
    const Timed equal = time_builtin_causal(eq, seed, repeats);
    row("equal lengths, causal built in " + eq.str(), equal, eq.d);
    std::snprintf(line, sizeof line, "    documents / equal lengths, forward + backward: %.1f / %.1f TFLOP/s = %.2fx\n",
                  documents_train, equal.train_tflops(eq.d), documents_train / equal.train_tflops(eq.d));
    report.out() << line;

    // Block sparsity: time over dense time against the fraction of tiles visited.
    const ladder::AttentionShape ss = variants::cases::sparse_shape();
    Variant dense;
    dense.kind = Kind::Dense;
    const Timed full = time_variant(ss, dense, seed, repeats);
    row("dense " + ss.str(), full, ss.d);
    for (double density : variants::cases::kDensities) {
      Variant v;
      v.kind = Kind::Tiles, v.tile_density = density;
      const variants::ModsData h(v, ss);
      const double visited = variants::block_mask(v, ss, h, variants::kForwardB_r).density();
      const Timed t = time_variant(ss, v, seed, repeats);
      row(v.str() + " " + ss.str(), t, ss.d);
      std::snprintf(line, sizeof line,
                    "    %.1f%% of tiles visited: time / dense, fwd %.3f (%.2fx the fraction), bwd %.3f (%.2fx)\n",
                    100 * visited, t.fwd_ms / full.fwd_ms, t.fwd_ms / full.fwd_ms / visited, t.bwd_ms / full.bwd_ms,
                    t.bwd_ms / full.bwd_ms / visited);
      report.out() << line;
    }
    return report.summary(summary);
  });
}
