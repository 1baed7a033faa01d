#include "studies.h"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <fstream>

#include "cuda_check.h"
#include "device_buffer.h"
#include "device_random.h"
#include "fa2_tc.h"
#include "timing.h"
#include "work.h"

namespace ring {

namespace {
std::size_t free_bytes() {
  std::size_t f = 0, t = 0;
  CUDA_CHECK(cudaMemGetInfo(&f, &t));
  return f;
}

// Chapter 10's buffers for one shape: forward Q K V O L; backward adds dO dQ dK dV and
// the workspace (D and the fp32 dQ accumulator of the atomic path).
struct Single {
  ladder::AttentionShape s;
  ladder::DeviceBuffer<bf16> Q, K, V, O, dO, dQ, dK, dV;
  ladder::DeviceBuffer<float> L, ws;
  explicit Single(const ladder::AttentionShape& sh)
      : s(sh),
        Q(s.elems()),
        K(s.kv_elems()),
        V(s.kv_elems()),
        O(s.elems()),
        dO(s.elems()),
        dQ(s.elems()),
        dK(s.kv_elems()),
        dV(s.kv_elems()),
        L(s.rows()),
        ws(fa2tc::backward_workspace_floats(s, fa2tc::DqPath::Atomic)) {
    ladder::fill_uniform_device(Q.data(), Q.size(), 11);
    ladder::fill_uniform_device(K.data(), K.size(), 12);
    ladder::fill_uniform_device(V.data(), V.size(), 13);
    ladder::fill_uniform_device(dO.data(), dO.size(), 14);
    CUDA_CHECK(cudaDeviceSynchronize());
  }
  void forward() { fa2tc::forward(s, Q.data(), K.data(), V.data(), O.data(), L.data()); }
  void backward() {
    fa2tc::backward(s, Q.data(), K.data(), V.data(), O.data(), L.data(), dO.data(), dQ.data(), dK.data(), dV.data(),
                    ws.data(), fa2tc::DqPath::Atomic);
  }
};
}  // namespace

MemoryModel memory_model(const ladder::AttentionShape& s, double free_b) {
  const double hd = double(s.heads()) * s.d, h = double(s.heads());
  MemoryModel m{};
  m.fwd_bytes_per_token = 2.0 * 4 * hd + 4.0 * h;                                        // Q K V O bf16, L fp32
  m.fwdbwd_bytes_per_token = m.fwd_bytes_per_token + 2.0 * 4 * hd + 4.0 * h + 4.0 * hd;  // + dO dQ dK dV, D, dQ acc
  const long long int_limit = INT_MAX / s.d;  // chapter 10 indexes one head's rows with an int
  m.fwd_max_N = std::min<long long>(int_limit, static_cast<long long>(free_b / m.fwd_bytes_per_token));
  m.fwdbwd_max_N = std::min<long long>(int_limit, static_cast<long long>(free_b / m.fwdbwd_bytes_per_token));
  return m;
}

LimitStudy limit_study(const ladder::AttentionShape& base, const std::vector<int>& Ns, std::ostream& out) {
  CUDA_CHECK(cudaSetDevice(0));
  LimitStudy study;
  std::vector<LimitRow>& rows = study.rows;
  char line[256];
  out << "single-GPU limit, chapter 10 (" << base.str() << " at each N), atomic dQ path\n";
  out << "       N   fwd ms   bwd ms  fwd TF/s  bwd TF/s  fwd ns/token  bwd ns/token  model MB  measured MB\n";
  for (int N : Ns) {
    const ladder::AttentionShape s = base.with_lengths(N, N);
    const MemoryModel m = memory_model(s, 0);
    const double before = double(free_bytes());
    Single one(s);
    const double measured = before - double(free_bytes());
    // The largest sizes take seconds: one warm-up and one or two timed runs there.
    const int repeats = N <= 65536 ? 5 : (N <= 262144 ? 2 : 1);
    const ladder::TimingOptions opt{repeats, false};
    const double f = ladder::time_gpu([&] { one.forward(); }, opt).median_ms;
    one.forward();
    const double b = ladder::time_gpu([&] { one.backward(); }, opt).median_ms;
    LimitRow row{N,
                 f,
                 b,
                 ladder::attention_fwd_work(s, 2).tflops(f),
                 ladder::attention_bwd_work(s, 2).tflops(b),
                 m.fwdbwd_bytes_per_token * N / 1e6,
                 measured / 1e6};
    rows.push_back(row);
    std::snprintf(line, sizeof line, "%8d %8.2f %8.2f %9.1f %9.1f %13.1f %13.1f %9.0f %12.0f\n", N, f, b,
                  row.fwd_tflops, row.bwd_tflops, 1e6 * f / N, 1e6 * b / N, row.model_mb, row.measured_mb);
    out << line;
  }
  if (rows.empty()) return study;
  const MemoryModel m = memory_model(base, double(free_bytes()));
  study.memory = m;
  study.free_gb = free_bytes() / 1e9;
  const LimitRow& last = rows.back();
  auto project = [&](double ms, long long N) { return ms * (double(N) / last.N) * (double(N) / last.N) / 1e3; };
  std::snprintf(line, sizeof line,
                "memory: %.0f B/token forward, %.0f B/token forward+backward; %.1f GB free -> largest N %lld "
                "(forward), %lld (forward+backward)\n",
                m.fwd_bytes_per_token, m.fwdbwd_bytes_per_token, free_bytes() / 1e9, m.fwd_max_N, m.fwdbwd_max_N);
  out << line;
  std::snprintf(line, sizeof line,
                "time grows as N^2: from N = %d, N = 1M would take %.1f s forward + %.1f s backward; the largest N "
                "that fits, %lld, %.0f s + %.0f s\n",
                last.N, project(last.fwd_ms, 1 << 20), project(last.bwd_ms, 1 << 20), m.fwdbwd_max_N,
                project(last.fwd_ms, m.fwdbwd_max_N), project(last.bwd_ms, m.fwdbwd_max_N));
  out << line;
  return study;
}

void write_limit_csv(const std::string& path, const LimitStudy& study) {
  std::ofstream f(path);
  f << "N,fwd_ms,bwd_ms,fwd_tflops,bwd_tflops,fwd_ns_per_token,bwd_ns_per_token,model_mb,measured_mb,free_gb,"
       "fwd_bytes_per_token,fwdbwd_bytes_per_token,fwd_max_N,fwdbwd_max_N\n";
  const MemoryModel& m = study.memory;
  for (const LimitRow& r : study.rows)
    f << r.N << "," << r.fwd_ms << "," << r.bwd_ms << "," << r.fwd_tflops << "," << r.bwd_tflops << ","
      << 1e6 * r.fwd_ms / r.N << "," << 1e6 * r.bwd_ms / r.N << "," << r.model_mb << "," << r.measured_mb << ","
      << study.free_gb << "," << m.fwd_bytes_per_token << "," << m.fwdbwd_bytes_per_token << "," << m.fwd_max_N << ","
      << m.fwdbwd_max_N << "\n";
}

SingleTimes time_single(const ladder::AttentionShape& s, int repeats) {
  CUDA_CHECK(cudaSetDevice(0));
  Single one(s);
  const ladder::TimingOptions opt{repeats, false};
  SingleTimes t;
  t.fwd_ms = ladder::time_gpu([&] { one.forward(); }, opt).median_ms;
  one.forward();
  t.bwd_ms = ladder::time_gpu([&] { one.backward(); }, opt).median_ms;
  return t;
}

RingTimes time_ring(Ring& ring, int repeats, bool with_backward, bool phases) {
  RingTimes t;
  // The ring drives several streams (and, over NCCL, several GPUs): each repeat is timed by
  // the ranks' own events (Ring::elapsed_ms), after the same warm-up as ladder::time_gpu.
  auto run = [&](bool backward, Phase phase, int n) {
    auto once = [&] {
      if (backward)
        ring.backward(phase);
      else
        ring.forward(phase);
      ring.synchronize();
      CUDA_CHECK(cudaSetDevice(ring.device(0)));  // warm_up's events live on rank 0's device
    };
    ladder::warm_up(once, ladder::warmup_ms());
    std::vector<double> ms;
    for (int i = 0; i < n; ++i) {
      once();
      ms.push_back(ring.elapsed_ms());
    }
    return ladder::summarise(ms).median_ms;  // the harness's median, as time_gpu reports it
  };
  // The phase runs come before the real ones, so O and L come from a full forward below.
  // Comm only first: it fills the shard buffers, so compute only then runs on real data
  // (on zeros the tensor cores draw less power and the clock could be higher).
  if (phases) {
    t.fwd_comm_only_ms = run(false, Phase::CommOnly, repeats);
    t.fwd_compute_only_ms = run(false, Phase::ComputeOnly, repeats);
  }
  t.fwd_ms = run(false, Phase::Both, repeats);
  t.fwd_timeline = ring.timeline();
  t.fwd_overlap = overlap_fraction(t.fwd_timeline);
  if (!with_backward) return t;
  if (phases) {
    t.bwd_comm_only_ms = run(true, Phase::CommOnly, repeats);
    t.bwd_compute_only_ms = run(true, Phase::ComputeOnly, repeats);
  }
  t.bwd_ms = run(true, Phase::Both, repeats);
  t.bwd_timeline = ring.timeline();
  t.bwd_overlap = overlap_fraction(t.bwd_timeline);
  return t;
}

double hidden_fraction(double both, double compute, double comm) {
  if (comm <= 0) return 0;
  return std::clamp((compute + comm - both) / comm, 0.0, 1.0);
}

void write_timeline_csv(std::ostream& out, const std::string& pass, const std::vector<RankTimeline>& tl) {
  for (std::size_t r = 0; r < tl.size(); ++r) {
    const std::pair<const char*, const std::vector<Interval>*> kinds[] = {
        {"compute", &tl[r].compute}, {"kv", &tl[r].kv}, {"add", &tl[r].add}, {"dkv", &tl[r].dkv}};
    for (const auto& [kind, list] : kinds)
      for (std::size_t t = 0; t < list->size(); ++t)
        if ((*list)[t].end_ms > 0)
          out << pass << "," << r << "," << kind << "," << t << "," << (*list)[t].start_ms << "," << (*list)[t].end_ms
              << "\n";
  }
}

}  // namespace ring
