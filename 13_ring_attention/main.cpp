// Chapter 13 executable: ring attention.
//   Always (CPU): the schedules of P = 2 and 4, plain and zigzag, printed and checked, and
//   the fp64 ring simulator against the fp64 reference of the whole sequence.
//   One GPU: the loopback ring (P virtual ranks on one GPU) against fp64, then timed
//   against one chapter-10 call on the whole sequence; --limit: the single-GPU limit study.
//   P GPUs (NCCL): the ring against fp64, then weak scaling: P GPUs at N/P tokens each
//   against P x one GPU at N/P tokens (forward, forward+backward; dense, causal zigzag and
//   plain), the overlap of communication and compute, and --million: one long causal run.
// Every flag and output file is checked before any work, on every machine.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "attention_inputs.h"
#include "bf16.h"
#include "cli.h"
#include "compare.h"
#include "device.h"
#include "fa2_tc.h"
#include "reference_attention.h"
#include "ring.h"
#include "ring_host.h"
#include "ring_schedule.h"
#include "ring_sim.h"
#include "studies.h"
#include "work.h"

namespace {

constexpr const char* kUsage =
    "  --P P                 ranks of the ring (default 2)\n"
    "  --B B --H H --N N --d D\n"
    "                        the timed runs: batch, heads, tokens in all (N/P per rank), head dim (default\n"
    "                        1 8, N = P x 65536 on P GPUs, P x 16384 on the loopback, d 128; d in 64, 128;\n"
    "                        N a multiple of P, of 2P for the causal zigzag runs)\n"
    "  --H-kv H --N-kv N     KV heads and keys: the ring is self-attention only, so H and N (the default)\n"
    "  --mask dense|causal   the headline run: dense with the plain split, or causal with zigzag (default dense)\n"
    "  --transport T         auto (NCCL when P GPUs are visible), loopback or nccl\n"
    "  --repeats R           timed repeats per measurement (default 3)\n"
    "  --weak                the whole weak-scaling set (dense plain, causal zigzag, causal plain, and the\n"
    "                        overlap runs at 8192 tokens per rank); without it only the headline run is timed\n"
    "  --million N           also one causal zigzag run of N tokens in all (e.g. 1048576), forward and backward\n"
    "  --limit               only the single-GPU limit study (chapter 10, causal, N = --limit-N list)\n"
    "  --limit-N N,N,...     its sizes (default 16384,32768,65536,131072,262144,524288)\n"
    "  --limit-csv FILE      its table, one row per N, with the memory model's columns\n"
    "  --json FILE           the weak-scaling ratios: {\"fwd_eff\", \"fwdbwd_eff\"} of dense plain and\n"
    "                        \"causal_zigzag_eff\", of the runs that were made\n"
    "  --csv FILE            every timed row; --timeline FILE: per-step intervals of every timed run\n"
    "  (every output file is checked before any work; without a GPU only the CPU part runs)\n";

// Refuses, before any work, an output file that cannot be written (no such directory, no
// permission, a directory): minutes of GPU time must not end in a table that is lost.
// Leaves no file behind that was not there.
void check_writable(const std::string& flag, const std::string& path) {
  if (path.empty()) return;
  std::error_code ec;
  const bool existed = std::filesystem::exists(path, ec);
  errno = 0;
  if (!std::ofstream(path, std::ios::app))
    throw std::invalid_argument(flag + " " + path + ": cannot write that file (" +
                                (errno != 0 ? std::strerror(errno) : "reason unknown") + ")");
  if (!existed) std::filesystem::remove(path, ec);
}

std::ofstream open_output(const std::string& flag, const std::string& path) {
  std::ofstream f(path);
  if (!f) throw std::runtime_error(flag + " " + path + ": cannot write that file");
  return f;
}

// fp64 against fp64 (the simulator): only the order of the additions differs.
constexpr ladder::Bound kSimulator{1e-12, "fp64 ring vs fp64 whole sequence: the same sums in another order"};

ladder::Comparison compare64(const std::vector<double>& out, const std::vector<double>& ref) {
  ladder::Comparison c;
  c.n = out.size();
  c.size_mismatch = out.size() != ref.size();
  double num = 0, den = 0;
  for (std::size_t i = 0; i < out.size() && i < ref.size(); ++i) {
    if (!std::isfinite(out[i])) {
      if (c.nonfinite++ == 0) c.first_nonfinite = i;
      continue;
    }
    const double e = std::fabs(out[i] - ref[i]);
    if (e > c.max_abs) c.max_abs = e, c.argmax_abs = i;
    num += e * e, den += ref[i] * ref[i];
  }
  c.rel_l2 = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
  return c;
}

void cpu_part(ladder::Report& rep) {
  for (int P : {2, 4})
    for (ring::Sharding sh : ring::kAllShardings) {
      const ring::Layout l = ring::make_layout(2 * P * 4, P, sh);
      rep.out() << ring::describe(l, true);
      for (bool causal : {false, true}) {
        const std::string bad = ring::check_schedule(l, causal);
        rep.check(std::string("schedule ") + ring::name(sh) + " P=" + std::to_string(P) +
                      (causal ? " causal" : " dense") + ": every pair once" + (bad.empty() ? "" : " (" + bad + ")"),
                  ladder::Comparison{1, bad.empty() ? 0u : 1u}, kSimulator);
      }
    }
  for (int P : {1, 2, 3, 4})
    for (ring::Sharding sh : ring::kAllShardings)
      for (bool causal : {false, true}) {
        ladder::AttentionShape s{2, 2, 2 * P * 5, 16, causal};
        const ladder::AttentionInputs x = ladder::random_attention_inputs(s, 1300 + P, true);
        const ring::SimResult sim = ring::simulate(s, P, sh, x.Q, x.K, x.V, &x.dO);
        const ladder::AttentionForward f = ladder::attention_forward_reference(s, x.Q.data(), x.K.data(), x.V.data());
        const ladder::AttentionGrads g =
            ladder::attention_backward_reference(s, x.Q.data(), x.K.data(), x.V.data(), x.dO.data());
        const std::string what = std::string("simulator ") + ring::name(sh) + " P=" + std::to_string(P) +
                                 (causal ? " causal" : " dense") + " N=" + std::to_string(s.N);
        rep.check(what + " O", compare64(sim.fwd.O, f.O), kSimulator);
        rep.check(what + " L", compare64(sim.fwd.L, f.L), kSimulator);
        rep.check(what + " dQ", compare64(sim.grads.dQ, g.dQ), kSimulator);
        rep.check(what + " dK", compare64(sim.grads.dK, g.dK), kSimulator);
        rep.check(what + " dV", compare64(sim.grads.dV, g.dV), kSimulator);
      }
}

// The ring on the GPU(s) against fp64, small shapes (chunks no multiple of any tile).
void gpu_check(ladder::Report& rep, ring::Transport& tr, int d) {
  const int P = tr.ranks();
  for (ring::Sharding sh : ring::kAllShardings)
    for (bool causal : {false, true}) {
      const ladder::AttentionShape s{1, 2, 2 * P * 67, d, causal};
      const ring::RingCheck c = ring::check_against_reference(s, sh, tr, 1313);
      const std::string what =
          std::string(tr.name()) + " ring " + ring::name(sh) + " P=" + std::to_string(P) + " " + s.str();
      rep.check(what + " O", c.O, ladder::kBf16Attention);
      rep.check(what + " L", c.L, ladder::kLse);
      rep.check(what + " dQ", c.dQ, ladder::kBf16AttentionGrad);
      rep.check(what + " dK", c.dK, ladder::kBf16AttentionGrad);
      rep.check(what + " dV", c.dV, ladder::kBf16AttentionGrad);
    }
}

struct Row {
  std::string name;
  ladder::AttentionShape full;
  int P;
  double fwd_ms, bwd_ms, fwd_tflops, fwdbwd_tflops, single_fwd_ms, single_bwd_ms, fwd_eff, fwdbwd_eff;
  double fwd_overlap, bwd_overlap, fwd_hidden, bwd_hidden;
  ring::RingTimes phases;  // the compute-only and comm-only times (0: not measured)
};

std::string fixed(double x, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, x);
  return buf;
}

// Weak scaling: the ring on P ranks with N/P tokens each against `ideal_ranks` x chapter 10
// on one GPU (NCCL: P GPUs at N/P tokens each; loopback: one GPU, the whole sequence).
Row time_case(ring::Transport& tr, const std::string& name, const ladder::AttentionShape& full, ring::Sharding sh,
              int repeats, bool phases, std::ostream& out, std::ostream* timeline) {
  const int P = tr.ranks();
  const bool real = std::string(tr.name()) == "nccl";
  const ladder::AttentionShape single_shape = real ? full.with_lengths(full.N / P, full.N / P) : full;
  const int ideal_ranks = real ? P : 1;
  const ring::SingleTimes single = ring::time_single(single_shape, repeats);
  ring::Ring ring(full, sh, tr);
  ring::fill_random(ring, 2024);
  const ring::RingTimes rt = ring::time_ring(ring, repeats, true, phases);
  const ladder::Work fw = ladder::attention_fwd_work(full, 2), bw = ladder::attention_bwd_work(full, 2);
  const ladder::Work sfw = ladder::attention_fwd_work(single_shape, 2),
                     sbw = ladder::attention_bwd_work(single_shape, 2);
  Row r{name,
        full,
        P,
        rt.fwd_ms,
        rt.bwd_ms,
        fw.tflops(rt.fwd_ms),
        (fw.flops + bw.flops) / (rt.fwd_ms + rt.bwd_ms) / 1e9,
        single.fwd_ms,
        single.bwd_ms,
        0,
        0,
        rt.fwd_overlap,
        rt.bwd_overlap,
        0,
        0,
        {}};
  r.phases.fwd_compute_only_ms = rt.fwd_compute_only_ms, r.phases.fwd_comm_only_ms = rt.fwd_comm_only_ms;
  r.phases.bwd_compute_only_ms = rt.bwd_compute_only_ms, r.phases.bwd_comm_only_ms = rt.bwd_comm_only_ms;
  r.fwd_eff = r.fwd_tflops / (ideal_ranks * sfw.tflops(single.fwd_ms));
  r.fwdbwd_eff = r.fwdbwd_tflops / (ideal_ranks * (sfw.flops + sbw.flops) / (single.fwd_ms + single.bwd_ms) / 1e9);
  out << "  " << name << " (" << full.str() << ", " << tr.name() << " P=" << P << "): fwd " << fixed(rt.fwd_ms, 2)
      << " ms = " << fixed(r.fwd_tflops, 1) << " TFLOP/s (" << fixed(r.fwd_eff, 3) << "x ideal), fwd+bwd "
      << fixed(rt.fwd_ms + rt.bwd_ms, 2) << " ms = " << fixed(r.fwdbwd_tflops, 1) << " TFLOP/s ("
      << fixed(r.fwdbwd_eff, 3) << "x ideal); one GPU at N=" << single_shape.N << ": fwd " << fixed(single.fwd_ms, 2)
      << " ms, bwd " << fixed(single.bwd_ms, 2) << " ms\n";
  out << "    overlap (comm time spent beside compute, from the timeline): fwd " << fixed(rt.fwd_overlap, 3) << ", bwd "
      << fixed(rt.bwd_overlap, 3) << "\n";
  if (phases) {
    r.fwd_hidden = ring::hidden_fraction(rt.fwd_ms, rt.fwd_compute_only_ms, rt.fwd_comm_only_ms);
    r.bwd_hidden = ring::hidden_fraction(rt.bwd_ms, rt.bwd_compute_only_ms, rt.bwd_comm_only_ms);
    out << "    fwd: both " << fixed(rt.fwd_ms, 3) << " ms, compute only " << fixed(rt.fwd_compute_only_ms, 3)
        << " ms, comm only " << fixed(rt.fwd_comm_only_ms, 3) << " ms -> hidden " << fixed(r.fwd_hidden, 3) << "\n";
    out << "    bwd: both " << fixed(rt.bwd_ms, 3) << " ms, compute only " << fixed(rt.bwd_compute_only_ms, 3)
        << " ms, comm only " << fixed(rt.bwd_comm_only_ms, 3) << " ms -> hidden " << fixed(r.bwd_hidden, 3) << "\n";
  }
  if (timeline) {
    ring::write_timeline_csv(*timeline, name + "/fwd", rt.fwd_timeline);
    ring::write_timeline_csv(*timeline, name + "/bwd", rt.bwd_timeline);
  }
  return r;
}

void write_csv(const std::string& path, const std::vector<Row>& rows, const std::string& transport) {
  std::ofstream f = open_output("--csv", path);
  f << "case,transport,P,B,H,N_total,d,causal,fwd_ms,bwd_ms,fwd_tflops,fwdbwd_tflops,single_fwd_ms,single_bwd_ms,"
       "fwd_eff,fwdbwd_eff,fwd_overlap,bwd_overlap,fwd_hidden,bwd_hidden,fwd_compute_only_ms,fwd_comm_only_ms,"
       "bwd_compute_only_ms,bwd_comm_only_ms\n";
  for (const Row& r : rows)
    f << r.name << "," << transport << "," << r.P << "," << r.full.B << "," << r.full.H << "," << r.full.N << ","
      << r.full.d << "," << (r.full.causal ? 1 : 0) << "," << r.fwd_ms << "," << r.bwd_ms << "," << r.fwd_tflops << ","
      << r.fwdbwd_tflops << "," << r.single_fwd_ms << "," << r.single_bwd_ms << "," << r.fwd_eff << "," << r.fwdbwd_eff
      << "," << r.fwd_overlap << "," << r.bwd_overlap << "," << r.fwd_hidden << "," << r.bwd_hidden << ","
      << r.phases.fwd_compute_only_ms << "," << r.phases.fwd_comm_only_ms << "," << r.phases.bwd_compute_only_ms << ","
      << r.phases.bwd_comm_only_ms << "\n";
}

// The weak-scaling ratios of the runs that were made, by case name.
void write_json(const std::string& path, const std::vector<Row>& rows) {
  std::vector<std::string> fields;
  for (const Row& r : rows) {
    if (r.name == "dense_plain") {
      fields.push_back("\"fwd_eff\": " + fixed(r.fwd_eff, 3));
      fields.push_back("\"fwdbwd_eff\": " + fixed(r.fwdbwd_eff, 3));
    }
    if (r.name == "causal_zigzag") fields.push_back("\"causal_zigzag_eff\": " + fixed(r.fwd_eff, 3));
  }
  std::ofstream j = open_output("--json", path);
  j << "{";
  for (std::size_t i = 0; i < fields.size(); ++i) j << (i ? ", " : "") << fields[i];
  j << "}\n";
}

// A timed case: its name, the whole sequence's shape and the sharding.
struct Case {
  std::string name;
  ladder::AttentionShape full;
  ring::Sharding sharding;
  bool phases;  // also the compute-only and comm-only runs
  int repeats;
};

int body(ladder::Args& args) {
  // They only shape or record the GPU runs: without a GPU they are accepted (one command for
  // every machine), checked, and said to have done nothing.
  args.gpu_only({"--P", "--B", "--H", "--N", "--d", "--H-kv", "--N-kv", "--mask", "--transport", "--weak", "--million",
                 "--limit", "--limit-N", "--limit-csv", "--json", "--csv", "--timeline"});
  const ladder::CommonFlags flags =
      ladder::common_flags(args,
                           "chapter 13 writes no arrays (its checks run inside the executable); "
                           "--csv, --timeline and --json write its results");
  const int P = static_cast<int>(args.integer("--P", 2, 1, 64));
  const std::string want = args.choice("--transport", {"auto", "loopback", "nccl"}, "auto");
  ladder::AttentionShape s = ladder::attention_shape_flags(args, {1, 8, 0, 128, false});  // N = 0: the default
  ladder::kv_shape_flags(args, s);
  const int repeats = static_cast<int>(args.integer("--repeats", 3, 1, 100));
  const bool weak = args.flag("--weak"), limit = args.flag("--limit");
  const long long million = args.integer("--million", 0, 0, ladder::Args::kIntMax);
  const std::vector<long long> limit_Ns =
      args.integers("--limit-N", {16384, 32768, 65536, 131072, 262144, 524288}, 1, 1 << 24);
  const std::string json = args.text("--json"), csv = args.text("--csv"), timeline_path = args.text("--timeline");
  const std::string limit_csv = args.text("--limit-csv");
  args.done();

  // Everything that can be refused is refused now, before any work, on every machine.
  args.needs("--limit-N", limit, "--limit (the sizes of the limit study)");
  args.needs("--limit-csv", limit, "--limit (the limit study's table)");
  args.exclusive("--limit", "chapter 10 alone on one GPU, causal, at the --limit-N sizes",
                 {"--P", "--transport", "--N", "--N-kv", "--mask", "--repeats", "--weak", "--million", "--json",
                  "--csv", "--timeline"});
  const int gpus = ring::visible_gpus();
  const bool use_nccl = want == "nccl" || (want == "auto" && ring::nccl_built() && gpus >= P && P >= 2);
  if (s.N == 0) s.N = P * (use_nccl ? 65536 : 16384);
  if (s.N_kv == 0) s.N_kv = s.N;
  if (s.hkv() != s.H || s.nkv() != s.N)
    throw std::invalid_argument(
        "the ring is self-attention only: --H-kv must equal --H and --N-kv must equal --N; got " + s.str());
  s = ladder::validate(s, fa2tc::kSupportedD, ladder::KvHeads::Any);
  auto with_mask = [](ladder::AttentionShape x, bool causal) {
    x.causal = causal;
    return x;
  };
  const ladder::AttentionShape dense = with_mask(s, false), causal = with_mask(s, true);
  // The headline first (it also gets the compute-only and comm-only runs), then with --weak
  // the rest of the set.
  const Case dense_plain{"dense_plain", dense, ring::Sharding::Plain, !s.causal, repeats},
      causal_zigzag{"causal_zigzag", causal, ring::Sharding::Zigzag, s.causal, repeats};
  std::vector<Case> cases{s.causal ? causal_zigzag : dense_plain};
  if (weak) {
    cases.push_back(s.causal ? dense_plain : causal_zigzag);
    cases.push_back({"causal_plain", causal, ring::Sharding::Plain, false, repeats});
    // Where communication is not negligible: small shards, the overlap measured three ways.
    const int n8 = 8192 * P;
    cases.push_back(
        {"overlap_dense_plain_n8192", dense.with_lengths(n8, n8), ring::Sharding::Plain, true, std::max(repeats, 5)});
    cases.push_back({"overlap_causal_zigzag_n8192", causal.with_lengths(n8, n8), ring::Sharding::Zigzag, true,
                     std::max(repeats, 5)});
  }
  if (million > 0) {
    const int n = static_cast<int>(million);
    cases.push_back({"million_causal_zigzag", causal.with_lengths(n, n), ring::Sharding::Zigzag, false, 1});
  }
  if (limit)  // chapter 10's buffers at each N
    for (long long N : limit_Ns)
      ladder::check_device_memory("the limit study at N = " + std::to_string(N),
                                  ring::memory_model(s, 0).fwdbwd_bytes_per_token * double(N));
  else
    for (const Case& c : cases) {  // an N the split cannot cut, buffers that cannot fit
      const ring::Layout l = ring::make_layout(c.full.N, P, c.sharding);
      ladder::check_device_memory("the ring's buffers for " + c.name + " (" + c.full.str() + ")",
                                  ring::Ring::bytes_per_rank(c.full, l) * (use_nccl ? 1 : P));
    }
  const std::pair<const char*, std::string> outputs[] = {
      {"--json", json}, {"--csv", csv}, {"--timeline", timeline_path}, {"--limit-csv", limit_csv}};
  for (const auto& [flag, path] : outputs) check_writable(flag, path);

  ladder::Report rep("13_ring_attention", flags.summary);
  cpu_part(rep);
  if (!ladder::device().available) return rep.gpu_skipped("schedules and the fp64 ring simulator checked");

  std::unique_ptr<ring::Transport> tr = use_nccl ? ring::make_nccl_transport(P) : ring::make_loopback_transport(P);
  rep.out() << ladder::describe_device() << "; " << gpus << " GPU(s) visible; transport " << tr->name() << ", P = " << P
            << (ring::nccl_built() ? "" : " (built without NCCL)") << "\n";
  if (limit) {  // chapter 10 alone: no ring
    const std::vector<int> Ns(limit_Ns.begin(), limit_Ns.end());
    const ring::LimitStudy st = ring::limit_study(ladder::AttentionShape{s.B, s.H, 1, s.d, true}, Ns, rep.out());
    if (!limit_csv.empty()) ring::write_limit_csv(limit_csv, st);
    const ring::LimitRow& last = st.rows.back();
    return rep.summary("single-GPU limit, causal B=" + std::to_string(s.B) + " H=" + std::to_string(s.H) +
                       " d=" + std::to_string(s.d) + ": N=" + std::to_string(last.N) + " fwd " + fixed(last.fwd_ms, 1) +
                       " ms, bwd " + fixed(last.bwd_ms, 1) +
                       " ms; fwd+bwd memory fits up to N=" + std::to_string(st.memory.fwdbwd_max_N));
  }
  gpu_check(rep, *tr, s.d);

  std::ofstream timeline_file;
  if (!timeline_path.empty()) {
    timeline_file = open_output("--timeline", timeline_path);
    timeline_file << "case,rank,kind,step,start_ms,end_ms\n";
  }
  std::ostream* tl = timeline_path.empty() ? nullptr : &timeline_file;
  rep.out() << "weak scaling: " << P << " ranks x " << s.N / P << " tokens (" << tr->name() << "); ideal = "
            << (use_nccl ? std::to_string(P) + " x one GPU at " + std::to_string(s.N / P) + " tokens"
                         : std::string("one call on the whole sequence (all ranks share one GPU)"))
            << "\n";
  std::vector<Row> rows;
  for (const Case& c : cases) {
    if (c.name == "million_causal_zigzag") continue;  // below: one run, no single-GPU anchor
    rows.push_back(time_case(*tr, c.name, c.full, c.sharding, c.repeats, c.phases, rep.out(), tl));
  }
  if (million > 0) {
    const ladder::AttentionShape m = cases.back().full;
    ring::Ring ring(m, ring::Sharding::Zigzag, *tr);
    ring::fill_random(ring, 7);
    ring.forward();
    ring.synchronize();
    const double f = ring.elapsed_ms();
    ring.backward();
    ring.synchronize();
    const double b = ring.elapsed_ms();
    const ladder::Work fw = ladder::attention_fwd_work(m, 2), bw = ladder::attention_bwd_work(m, 2);
    rep.out() << "long run: " << m.str() << " causal zigzag over " << P << " ranks (" << tr->name() << "): forward "
              << fixed(f / 1e3, 3) << " s (" << fixed(fw.tflops(f), 1) << " TFLOP/s), backward " << fixed(b / 1e3, 3)
              << " s (" << fixed(bw.tflops(b), 1) << " TFLOP/s), one run each\n";
    Row r{"million_causal_zigzag", m, P, f, b, fw.tflops(f), 0, 0, 0, 0, 0, 0, 0, 0, 0, {}};
    r.fwdbwd_tflops = (fw.flops + bw.flops) / (f + b) / 1e9;
    rows.push_back(r);
  }
  if (!csv.empty()) write_csv(csv, rows, tr->name());
  if (!json.empty()) write_json(json, rows);
  const Row& h = rows[0];
  return rep.summary(std::string(use_nccl ? "" : "(loopback, one GPU) ") + "ring P=" + std::to_string(P) +
                     " N=" + std::to_string(P) + "x" + std::to_string(s.N / P) + " d=" + std::to_string(s.d) +
                     (s.causal ? " causal zigzag" : "") + ": fwd " + fixed(h.fwd_tflops, 1) +
                     " TFLOP/s = " + fixed(h.fwd_eff, 2) + "x ideal");
}

}  // namespace

int main(int argc, char** argv) { return ladder::run_main(argc, argv, kUsage, body); }
