// Chapter 08 executable: one table row per kernel variant. The compile-time columns (ptxas -v, captured at build
// time) print on any machine; with a GPU every variant is checked against the fp64 reference and the runtime
// columns are added: what cudaFuncGetAttributes and the occupancy calculator say, and the time.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli.h"
#include "device.h"
#include "device_buffer.h"
#include "npy.h"
#include "ptxas_report.h"
#include "random.h"
#include "reference_attention.h"
#include "spill.h"
#include "timing.h"
#include "work.h"

namespace {
constexpr const char* kUsage =
    "  --B B          batch of the timed shape (default 4)\n"
    "  --H H          heads of the timed shape (default 16)\n"
    "  --N N          sequence length of the timed shape (default 4096); d is each variant's\n"
    "  --check-N N    sequence length of the correctness check, B=1 H=2 (default 999: every tile size\n"
    "                 leaves a partial last tile)\n"
    "  --repeats R    timed repeats per variant (default 10)\n"
    "  --csv FILE     also write the table as CSV (plot_heatmap.py reads it)\n"
    "  --profile K    launch one kernel once at the timed shape and exit (for ncu_spill.sh). K is one of\n"
    "                 normal  the lecture kernel, d=128 B_r=8 B_c=32, accumulators in registers\n"
    "                 local   the same with its accumulators in local memory\n"
    "                 capped  the same under the tightest register cap (spills)\n";

// Q, K, V and room for O, L of one shape, on the device.
struct Problem {
  ladder::AttentionShape s;
  std::vector<float> Q, K, V;
  ladder::DeviceBuffer<float> dQ, dK, dV, dO, dL;
  Problem(const ladder::AttentionShape& shape, std::uint64_t seed)
      : s(shape),
        Q(ladder::random_uniform(s.elems(), seed)),
        K(ladder::random_uniform(s.elems(), seed + 1)),
        V(ladder::random_uniform(s.elems(), seed + 2)),
        dQ(Q),
        dK(K),
        dV(V),
        dO(s.elems()),
        dL(s.rows()) {}
  void run(const spill::Variant& v) { spill::forward(v, s, dQ.data(), dK.data(), dV.data(), dO.data(), dL.data()); }
};

struct Row {
  spill::Variant v;
  spill::PtxasEntry ptxas;
  std::optional<spill::KernelInfo> info;
  double ms = 0, tflops = 0;
};

std::string display(const spill::Variant& v) {
  char buf[80];
  std::snprintf(buf, sizeof buf, "%-6s %-3s d=%-3d B_r=%-2d B_c=%-2d", v.kind(),
                v.max_regs < spill::kMaxRegsPerThread ? std::to_string(v.max_regs).c_str() : "", v.d, v.B_r, v.B_c);
  return buf;
}

// "normal_d128_Br8_Bc32", "capped40_d128_Br8_Bc32": a file name for --dump.
std::string file_tag(const spill::Variant& v) {
  std::string cap = v.max_regs < spill::kMaxRegsPerThread ? std::to_string(v.max_regs) : "";
  return v.kind() + cap + "_d" + std::to_string(v.d) + "_Br" + std::to_string(v.B_r) + "_Bc" + std::to_string(v.B_c);
}

void print_table(std::ostream& out, const std::vector<Row>& rows, double lecture_tflops) {
  out << "\n  kernel (capped: register cap)        | ptxas -v, per thread, bytes     | shared  |"
         " cudaFuncGetAttributes, occupancy     |      timed\n"
         "                                       | regs  stack  spill st  spill ld | smem KB |"
         "  numRegs  localSize   blk/SM    %    |     ms  TFLOP/s  x lecture\n";
  for (const Row& r : rows) {
    char line[256];
    int n =
        std::snprintf(line, sizeof line, "  %-37s| %4d %6d %9d %9d | %7.1f |", display(r.v).c_str(), r.ptxas.registers,
                      r.ptxas.stack_frame, r.ptxas.spill_stores, r.ptxas.spill_loads, spill::smem_bytes(r.v) / 1024.0);
    if (r.info)
      n += std::snprintf(line + n, sizeof line - n, " %8d %10zu %8d %6.1f  | %7.3f %8.2f %9.2f", r.info->num_regs,
                         r.info->local_bytes, r.info->blocks_per_sm, 100.0 * r.info->occupancy, r.ms, r.tflops,
                         r.tflops / lecture_tflops);
    out << line << "\n";
  }
}

void write_csv(const std::string& path, const std::vector<Row>& rows, const ladder::AttentionShape& timed) {
  std::ofstream f(path);
  if (!f) throw std::invalid_argument("--csv: cannot write " + path);
  f << "label,kind,d,B_r,B_c,maxrreg,registers,stack_frame_bytes,spill_store_bytes,spill_load_bytes,smem_bytes,"
       "num_regs,local_size_bytes,blocks_per_sm,occupancy,B,H,N,ms,tflops\n";
  for (const Row& r : rows) {
    f << r.v.label() << ',' << r.v.kind() << ',' << r.v.d << ',' << r.v.B_r << ',' << r.v.B_c << ',' << r.v.max_regs
      << ',' << r.ptxas.registers << ',' << r.ptxas.stack_frame << ',' << r.ptxas.spill_stores << ','
      << r.ptxas.spill_loads << ',' << spill::smem_bytes(r.v) << ',';
    if (r.info)
      f << r.info->num_regs << ',' << r.info->local_bytes << ',' << r.info->blocks_per_sm << ',' << r.info->occupancy
        << ',' << timed.B << ',' << timed.H << ',' << timed.N << ',' << r.ms << ',' << r.tflops << '\n';
    else
      f << ",,,,,,,,\n";
  }
}

// The loosest register cap under which ptxas spills (0: none spills).
int spills_from(const std::vector<Row>& rows) {
  int cap = 0;
  for (const Row& r : rows)
    if (r.v.max_regs < spill::kMaxRegsPerThread && r.ptxas.spill_stores > 0 && r.v.max_regs > cap) cap = r.v.max_regs;
  return cap;
}

const Row& find(const std::vector<Row>& rows, const spill::Variant& v) {
  for (const Row& r : rows)
    if (r.v == v) return r;
  throw std::logic_error("no row for " + v.label());
}

}  // namespace

int main(int argc, char** argv) {
  return ladder::run_main(argc, argv, kUsage, [](ladder::Args& args) {
    const auto flags = ladder::common_flags(args);
    ladder::AttentionShape timed;
    timed.B = static_cast<int>(args.integer("--B", 4));
    timed.H = static_cast<int>(args.integer("--H", 16));
    timed.N = static_cast<int>(args.integer("--N", 4096));
    const int check_N = static_cast<int>(args.integer("--check-N", 999, 1, 16384));
    const int repeats = static_cast<int>(args.integer("--repeats", 10, 1, 10000));
    const std::string csv = args.text("--csv");
    const std::string profile = args.choice("--profile", {"normal", "local", "capped"}, "");
    args.done();
    args.exclusive("--profile", "one launch at the timed shape, then exit",
                   {"--check-N", "--repeats", "--csv", "--dump"});
    ladder::check_device_memory("shape B=" + std::to_string(timed.B) + " H=" + std::to_string(timed.H) +
                                    " N=" + std::to_string(timed.N) + " at d = 256 (Q, K, V, O)",
                                4.0 * 4.0 * timed.B * timed.H * timed.N * 256);

    ladder::Report report("08_spilling_study", flags.summary);
    std::vector<Row> rows;
    for (const spill::Variant& v : spill::variants()) rows.push_back({v, spill::ptxas_entry(v), std::nullopt});
    const spill::Variant local{spill::Accumulators::Local};
    spill::Variant tightest;  // the lecture kernel under the tightest register cap
    for (const spill::Variant& v : spill::variants()) tightest.max_regs = std::min(tightest.max_regs, v.max_regs);
    const int spill_cap = spills_from(rows);

    if (!ladder::device().available) {
      report.out() << "ptxas -v report captured at build time (the runtime columns need a GPU):";
      print_table(report.out(), rows, 1.0);
      if (!csv.empty()) write_csv(csv, rows, timed);
      char text[200];
      std::snprintf(text, sizeof text,
                    "ptxas: lecture kernel %d registers; local accumulators %d B stack frame, %d B spill stores; "
                    "spills from maxrreg=%d",
                    find(rows, spill::kLecture).ptxas.registers, find(rows, local).ptxas.stack_frame,
                    find(rows, local).ptxas.spill_stores, spill_cap);
      return report.gpu_skipped(text);
    }

    const std::uint64_t seed = ladder::fresh_seed();
    if (!profile.empty()) {  // exactly one launch, nothing else on the GPU, for the profiler
      const spill::Variant v = profile == "local" ? local : profile == "capped" ? tightest : spill::kLecture;
      timed.d = v.d;
      Problem p(timed, seed);
      p.run(v);
      CUDA_CHECK(cudaDeviceSynchronize());
      report.out() << "profiled one launch of " << v.label() << " at " << timed.str() << "\n";
      return 0;
    }

    // Correctness: every variant against the fp64 reference at a shape with a partial tail tile.
    report.out() << "check: B=1 H=2 N=" << check_N << " per d, seed " << seed << "; timed: " << timed.str()
                 << " per d, " << repeats << " repeats\n";
    const ladder::Dumper dump(flags.dump_dir);
    std::map<int, std::unique_ptr<Problem>> check, timing;  // by d
    std::map<int, ladder::AttentionForward> ref;
    for (Row& r : rows) {
      const int d = r.v.d;
      if (!check.count(d)) {
        ladder::AttentionShape s{1, 2, check_N, d};
        check[d] = std::make_unique<Problem>(s, seed + d);
        ref[d] = ladder::attention_forward_reference(s, check[d]->Q.data(), check[d]->K.data(), check[d]->V.data());
        const std::string tag = "_d" + std::to_string(d);
        const std::vector<std::size_t> shape{1, 2, std::size_t(check_N), std::size_t(d)};
        dump("Q" + tag, check[d]->Q, shape);
        dump("K" + tag, check[d]->K, shape);
        dump("V" + tag, check[d]->V, shape);
      }
      Problem& p = *check[d];
      p.dO.poison();
      p.dL.poison();
      p.run(r.v);
      const auto O = p.dO.download(), L = p.dL.download();
      report.check(r.v.label() + " O", ladder::compare(O, ref[d].O), ladder::kFp32);
      report.check(r.v.label() + " L", ladder::compare(L, ref[d].L), ladder::kFp32);
      dump("O_" + file_tag(r.v), O, {1, 2, std::size_t(check_N), std::size_t(d)});
      dump("L_" + file_tag(r.v), L, {1, 2, std::size_t(check_N)});
    }
    check.clear();

    // Runtime columns and time at the timed shape.
    for (Row& r : rows) {
      const int d = r.v.d;
      if (!timing.count(d)) {
        ladder::AttentionShape s = timed;
        s.d = d;
        timing[d] = std::make_unique<Problem>(s, seed + 7 * d);
      }
      Problem& p = *timing[d];
      r.info = spill::kernel_info(r.v);
      r.ms = ladder::time_gpu([&] { p.run(r.v); }, {repeats}).median_ms;
      r.tflops = ladder::attention_fwd_work(p.s).tflops(r.ms);
    }
    const double lecture_tflops = find(rows, spill::kLecture).tflops;
    print_table(report.out(), rows, lecture_tflops);
    if (!csv.empty()) write_csv(csv, rows, timed);

    const Row* best = nullptr;  // fastest point of the B_r x B_c sweep
    for (const Row& r : rows)
      if (r.v.kind() == std::string("normal") && r.v.d == 128 && (!best || r.tflops > best->tflops)) best = &r;
    char text[300];
    std::snprintf(text, sizeof text,
                  "lecture kernel %.2f TFLOP/s; local accumulators %.2fx slower; fastest sweep point B_r=%d B_c=%d "
                  "%.2f TFLOP/s; spills from maxrreg=%d",
                  lecture_tflops, lecture_tflops / find(rows, local).tflops, best->v.B_r, best->v.B_c, best->tflops,
                  spill_cap);
    return report.summary(text);
  });
}
