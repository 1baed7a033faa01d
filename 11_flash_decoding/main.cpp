// Chapter 11 executable: flash-decoding. The CPU split/merge model first (it runs anywhere);
// then, on a GPU: every output of small problems against the fp64 reference (both cache
// layouts, several split counts, GQA, speculative queries, sequences of different lengths),
// then the headline shapes timed: the split sweep, contiguous vs paged caches, no split and
// chapter 10's forward, against a device-to-device copy of the K/V bytes in the same run.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "cli.h"
#include "cuda_check.h"
#include "decode_problem.h"
#include "device.h"
#include "device_buffer.h"
#include "device_random.h"
#include "flash_decoding.h"
#include "npy.h"
#include "random.h"
#include "reference_attention.h"
#include "split_model.h"
#include "timing.h"
#include "work.h"

namespace {

constexpr const char* kUsage =
    "  --B B --H H --d D           batch, query heads, head dim (default 8 32 128; d in 64, 128)\n"
    "  --H-kv H                    KV heads (GQA: H a multiple of H_kv; default 8)\n"
    "  --N N                       new queries per sequence (default 1; speculative decoding: up to 16)\n"
    "  --N-kv N,N,...              keys per sequence of the timed shapes (default 32768,131072; the\n"
    "                              summary line is the last)\n"
    "  --config C                  tile configuration (default: the first of the printed order that fits this\n"
    "                              GPU's shared memory, 0 on an H100/H200)\n"
    "  --sweep S,S,...             split counts of the sweep (default 1,2,4,8,16,32,64)\n"
    "  --repeats R                 timed repeats (default 10)\n"
    "  --profile P                 auto, nosplit, paged16, paged64 or fa2tc: one launch at the last --N-kv,\n"
    "                              then exit (for ncu)\n";

std::string config_list(int d) {
  std::string out = "  tile configs at d=" + std::to_string(d) + ":";
  const auto list = fdec::configs(d);
  const int fits = fdec::fit(d, ladder::smem_per_block_for_models());
  for (std::size_t i = 0; i < list.size(); ++i)
    out += " [" + std::to_string(i) + "] " + list[i].name + (int(i) == fits ? " (default here)" : "");
  out += "; preferred in the order";
  for (int i : fdec::preference(d)) out += " " + std::to_string(i);
  return out + "\n";
}

// The K/V cache of one timed shape, generated on the device, in all three layouts (the
// pools hold the same values as the slabs: decode() gives the same bits on each).
struct HeadlineCache {
  fdec::DecodeShape s;
  std::size_t n = 0;                    // elements of K (and of V)
  ladder::DeviceBuffer<fdec::bf16> kv;  // K then V, [B, H_kv, N, d] each: one buffer, so one memcpy copies both
  ladder::DeviceBuffer<fdec::bf16> pool[2];
  ladder::DeviceBuffer<int> table[2], seq_lens;
  int pages[2] = {0, 0};

  explicit HeadlineCache(const fdec::DecodeShape& shape, std::uint64_t seed)
      : s(shape),
        n(std::size_t(shape.B) * shape.H_kv * shape.max_seq_len * shape.d),
        kv(2 * n),
        seq_lens(std::vector<int>(shape.B, shape.max_seq_len)) {
    ladder::fill_uniform_device(kv.data(), kv.size(), seed);
    for (int i = 0; i < 2; ++i) {
      const int P = i == 0 ? 16 : 64, per_seq = (s.max_seq_len + P - 1) / P;
      pages[i] = s.B * per_seq;
      std::vector<int> order(pages[i]);  // every sequence's pages scattered over the pool
      std::iota(order.begin(), order.end(), 0);
      std::shuffle(order.begin(), order.end(), std::mt19937_64(seed + i));
      table[i] = ladder::DeviceBuffer<int>(order);
      pool[i] = ladder::DeviceBuffer<fdec::bf16>(2 * std::size_t(pages[i]) * s.H_kv * P * s.d);
      fdec::copy_to_pages(s, K(), V(), s.max_seq_len, pool[i].data(), pool[i].data() + pool[i].size() / 2,
                          table[i].data(), P, per_seq);
    }
    CUDA_CHECK(cudaDeviceSynchronize());
  }
  const fdec::bf16* K() const { return kv.data(); }
  const fdec::bf16* V() const { return kv.data() + n; }
  fdec::KvCache cache(fdec::CacheKind kind) const {
    if (kind == fdec::CacheKind::Contiguous) return fdec::KvCache::contiguous(K(), V(), s.max_seq_len);
    const int i = kind == fdec::CacheKind::Paged16 ? 0 : 1, P = fdec::page_size(kind);
    return fdec::KvCache::paged(pool[i].data(), pool[i].data() + pool[i].size() / 2, table[i].data(), pages[i], P,
                                pages[i] / s.B);
  }
  double kv_bytes() const { return 2.0 * n * sizeof(fdec::bf16); }
};

// fp64 spot check at full size: the rows of one (b, h_kv) group against the reference on
// that head's keys (downloaded). The first and the last group: offsets past 2^31 bytes.
void spot_check(ladder::Report& report, const HeadlineCache& c, const ladder::DeviceBuffer<fdec::bf16>& Q,
                const std::vector<float>& O, const std::vector<float>& LSE, const std::string& what) {
  const fdec::DecodeShape& s = c.s;
  const int N = s.max_seq_len, g = s.group(), rows = s.group_rows();
  const std::vector<float> q_all = ladder::from_bf16(Q.download());
  for (const auto& [b, h] : {std::pair{0, 0}, std::pair{s.B - 1, s.H_kv - 1}}) {
    const std::size_t slab = (std::size_t(b) * s.H_kv + h) * N * s.d, row0 = (std::size_t(b) * s.H_kv + h) * rows;
    std::vector<fdec::bf16> k(std::size_t(N) * s.d), v(k.size());
    CUDA_CHECK(cudaMemcpy(k.data(), c.K() + slab, k.size() * 2, cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(v.data(), c.V() + slab, v.size() * 2, cudaMemcpyDeviceToHost));
    ladder::AttentionShape a{1, g, s.n_q, s.d, true};
    a.H_kv = 1;
    a.N_kv = N;
    const std::vector<float> q(q_all.begin() + row0 * s.d, q_all.begin() + (row0 + rows) * s.d);
    const auto ref =
        ladder::attention_forward_reference(a, q.data(), ladder::from_bf16(k).data(), ladder::from_bf16(v).data());
    const std::vector<float> o(O.begin() + row0 * s.d, O.begin() + (row0 + rows) * s.d);
    const std::vector<float> l(LSE.begin() + row0, LSE.begin() + row0 + rows);
    const std::string where = what + ", rows of b=" + std::to_string(b) + " h_kv=" + std::to_string(h);
    report.check("O " + where, ladder::compare(o, ref.O), ladder::kBf16Attention);
    report.check("LSE " + where, fdec::compare_lse(l, ref.L), fdec::kLse);
  }
}

}  // namespace

int main(int argc, char** argv) {
  return ladder::run_main(argc, argv, kUsage, [](ladder::Args& args) {
    const auto flags = ladder::common_flags(args);
    // The attention chapters' flags: --H the query heads, --N the queries, --N-kv the keys.
    fdec::DecodeShape s;
    s.B = static_cast<int>(args.integer("--B", 8));
    s.H_q = static_cast<int>(args.integer("--H", 32));
    s.H_kv = static_cast<int>(args.integer("--H-kv", 8));
    s.n_q = static_cast<int>(args.integer("--N", 1, 1, fdec::kMaxQueries));
    s.d = static_cast<int>(args.integer("--d", 128, 1, 1024));
    const std::vector<long long> nkv = args.integers("--N-kv", {32768, 131072}, 1, 1 << 30);
    const int config = static_cast<int>(args.integer("--config", fdec::kFits, 0));
    const std::vector<long long> sweep = args.integers("--sweep", {1, 2, 4, 8, 16, 32, 64}, 1, fdec::kMaxSplits);
    const int repeats = static_cast<int>(args.integer("--repeats", 10));
    const std::string profile = args.choice("--profile", {"auto", "nosplit", "paged16", "paged64", "fa2tc"}, "");
    args.gpu_only({"--sweep"});
    args.done();
    args.exclusive("--profile", "one launch at the last --N-kv, then exit", {"--sweep", "--repeats", "--dump"});
    args.needs("--config", profile != "fa2tc", "this chapter's decode kernels (chapter 10's kernel has its own tiles)",
               "--profile fa2tc");
    s.max_seq_len = static_cast<int>(nkv.back());
    fdec::Options opt;
    opt.config = config;
    const fdec::Plan headline = fdec::plan(s, opt);  // validates the shape and the options, everywhere
    for (long long n : nkv) {
      fdec::DecodeShape t = s;
      t.max_seq_len = static_cast<int>(n);
      ladder::check_device_memory("shape " + t.str() + " (K, V in three layouts and the copy's destination)",
                                  8.0 * double(t.B) * t.H_kv * n * t.d * 2);
    }

    ladder::Report report("11_flash_decoding", flags.summary);
    report.out() << "shape " << s.str() << "\n"
                 << config_list(s.d) << "  plan at Nkv=" << s.max_seq_len << ": " << headline.str() << "\n";

    // CPU: the split/merge algebra in fp64.
    const double model_err = fdec::model::print_demo(report.out());
    ladder::Comparison model;
    model.n = 5;
    model.rel_l2 = model.max_abs = model_err;
    report.check("merged partials vs the full softmax (fp64, max |difference|)", model,
                 {1e-12, "fp64: the merge is exact algebra, only rounding remains"});
    char line[320];
    std::snprintf(line, sizeof line, "  split choice at %s: %d splits of %d keys (%lld blocks on %d SMs)\n",
                  s.str().c_str(), headline.split.splits, headline.split.keys_per_split, headline.blocks,
                  headline.sm_count);
    report.out() << line;
    if (!ladder::device().available) return report.gpu_skipped("split/merge model: merged partials = full softmax");

    if (!profile.empty()) {  // one launch of one variant, nothing else (for ncu)
      HeadlineCache c(s, 1);
      ladder::DeviceBuffer<fdec::bf16> Q(s.q_elems()), O(s.q_elems());
      ladder::DeviceBuffer<float> LSE(s.rows());
      ladder::fill_uniform_device(Q.data(), Q.size(), 7);
      fdec::Options o = opt;
      if (profile == "nosplit") o.splits = 1;
      const fdec::CacheKind kind = profile == "paged16"   ? fdec::CacheKind::Paged16
                                   : profile == "paged64" ? fdec::CacheKind::Paged64
                                                          : fdec::CacheKind::Contiguous;
      ladder::DeviceBuffer<float> ws((fdec::plan(s, o).workspace_bytes + 3) / 4);
      if (profile == "fa2tc")
        fdec::decode_with_fa2tc(s, Q.data(), c.cache(kind), O.data(), LSE.data());
      else
        fdec::decode(s, Q.data(), c.cache(kind), c.seq_lens.data(), O.data(), LSE.data(), ws.data(), o);
      CUDA_CHECK(cudaDeviceSynchronize());
      return 0;
    }

    // GPU: every element against fp64, on small problems: both layouts, split counts auto,
    // 1, 2 and one per tile; sequences of different lengths (one shorter than n_q).
    const std::uint64_t seed = ladder::fresh_seed();
    {
      struct Case {
        int B, H_q, H_kv, n_q;
        std::vector<int> lens;
      };
      const Case cases[] = {{3, 8, 2, 1, {1000, 1, 4097}}, {2, 8, 1, 4, {777, 2049}}, {2, 4, 4, 16, {3, 300}}};
      for (const Case& k : cases) {
        fdec::DecodeShape cs{k.B, k.H_q, k.H_kv, k.n_q, s.d, 0};
        const fdec::Problem p = fdec::make_problem(cs, k.lens, seed);
        const fdec::Reference ref = fdec::reference(p);
        fdec::OnDevice dev(p, seed);
        const int many = fdec::split_with(fdec::kMaxSplits, p.s.max_seq_len, headline.config.tile_keys()).splits;
        for (fdec::CacheKind kind : fdec::kAllCacheKinds)
          for (int splits : {0, 1, 2, many}) {
            fdec::Options o = opt;
            o.splits = splits;
            dev.run(kind, o);
            const std::string what = p.s.str() + " lens " + std::to_string(k.lens.front()) + ".." +
                                     std::to_string(k.lens.back()) + ", " + fdec::name(kind) + ", splits " +
                                     (splits ? std::to_string(fdec::plan(p.s, o).split.splits) : "auto") + " (seed " +
                                     std::to_string(seed) + ")";
            const auto O = dev.O_host(), L = dev.LSE_host();
            const auto cO = ladder::compare(O, ref.O), cL = fdec::compare_lse(L, ref.LSE);
            if (!report.check("O " + what, cO, ladder::kBf16Attention))
              report.out() << "    " << fdec::describe(p.s, cO, false, O, ref.O) << "\n";
            if (!report.check("LSE " + what, cL, fdec::kLse))
              report.out() << "    " << fdec::describe(p.s, cL, true, L, ref.LSE) << "\n";
            if (&k == &cases[0] && kind == fdec::CacheKind::Contiguous && splits == 0 && !flags.dump_dir.empty()) {
              const ladder::Dumper dump(flags.dump_dir);
              const std::size_t B = p.s.B, H = p.s.H_q, Hk = p.s.H_kv, n = p.s.n_q, d = p.s.d;
              const std::vector<std::size_t> q{B, H, n, d}, kv{B, Hk, std::size_t(p.capacity), d}, r{B, H, n};
              dump("Q", p.Q, q), dump("K", p.K, kv), dump("V", p.V, kv), dump("O", O, q), dump("LSE", L, r);
              dump("O_ref", ref.O, q), dump("LSE_ref", ref.LSE, r);
              dump("seq_lens", std::vector<float>(k.lens.begin(), k.lens.end()), {B});
            }
          }
      }
    }

    // GPU: the timed shapes.
    const ladder::TimingOptions topt{repeats};
    double last_gbps = 0, last_copy = 0;
    for (long long n_kv : nkv) {
      fdec::DecodeShape t = s;
      t.max_seq_len = static_cast<int>(n_kv);
      HeadlineCache c(t, seed + 100);
      ladder::DeviceBuffer<fdec::bf16> Q(t.q_elems()), O(t.q_elems()), copy(c.kv.size());
      ladder::DeviceBuffer<float> LSE(t.rows());
      ladder::fill_uniform_device(Q.data(), Q.size(), seed + 101);
      std::size_t ws_bytes = 0;
      for (long long sp : sweep) {
        fdec::Options o = opt;
        o.splits = static_cast<int>(sp);
        ws_bytes = std::max(ws_bytes, fdec::plan(t, o).workspace_bytes);
      }
      ws_bytes = std::max(ws_bytes, fdec::plan(t, opt).workspace_bytes);
      ladder::DeviceBuffer<float> ws((ws_bytes + 3) / 4);
      const ladder::Work work{0.0, c.kv_bytes()};
      auto run = [&](fdec::CacheKind kind, const fdec::Options& o) {
        fdec::decode(t, Q.data(), c.cache(kind), c.seq_lens.data(), O.data(), LSE.data(), ws.data(), o);
      };

      // Correctness at full size: auto against fp64 on two groups; paged and no-split against auto.
      run(fdec::CacheKind::Contiguous, opt);
      const auto O_auto = ladder::from_bf16(O.download());
      const auto L_auto = LSE.download();
      spot_check(report, c, Q, O_auto, L_auto, t.str() + " auto");
      auto same_as_auto = [&](const std::string& what) {
        const auto o = ladder::from_bf16(O.download()), l = LSE.download();
        report.check("O " + what + " vs auto (" + t.str() + ")", ladder::compare(o, {O_auto.begin(), O_auto.end()}),
                     ladder::kBf16Attention);
        report.check("LSE " + what + " vs auto", fdec::compare_lse(l, {L_auto.begin(), L_auto.end()}), fdec::kLse);
      };
      for (fdec::CacheKind kind : {fdec::CacheKind::Paged16, fdec::CacheKind::Paged64}) {
        run(kind, opt);
        same_as_auto(fdec::name(kind));
      }
      fdec::Options nosplit = opt;
      nosplit.splits = 1;
      run(fdec::CacheKind::Contiguous, nosplit);
      same_as_auto("no split");

      // Timing.
      const double copy_ms =
          ladder::time_gpu(
              [&] { CUDA_CHECK(cudaMemcpyAsync(copy.data(), c.kv.data(), c.kv.bytes(), cudaMemcpyDeviceToDevice)); },
              topt)
              .median_ms;
      const double copy_gbps = 2.0 * c.kv_bytes() / (copy_ms * 1e-3) / 1e9;  // read + write, as chapter 01
      const fdec::Plan pa = fdec::plan(t, opt);
      report.out() << "\n  " << t.str() << ": K and V " << c.kv_bytes() / 1e9 << " GB; " << pa.str() << "\n"
                   << "    variant                         splits   blocks     ms        GB/s   x copy\n";
      auto row = [&](const std::string& name, const std::string& splits, long long blocks, double ms) {
        const double gbps = work.gbps(ms);
        std::snprintf(line, sizeof line, "    %-30s %7s %8s %8.4f %10.0f %8.2f\n", name.c_str(), splits.c_str(),
                      blocks > 0 ? std::to_string(blocks).c_str() : "-", ms, gbps, gbps / copy_gbps);
        report.out() << line;
        return gbps;
      };
      std::snprintf(line, sizeof line, "    %-30s %7s %8s %8.4f %10.0f %8.2f   (1 read + 1 write of K and V)\n",
                    "copy (cudaMemcpy D2D)", "-", "-", copy_ms, copy_gbps, 1.0);
      report.out() << line;
      double auto_gbps = 0;
      for (fdec::CacheKind kind : fdec::kAllCacheKinds) {
        const double ms = ladder::time_gpu([&] { run(kind, opt); }, topt).median_ms;
        const double gbps =
            row(std::string("split-KV, ") + fdec::name(kind), std::to_string(pa.split.splits) + "*", pa.blocks, ms);
        if (kind == fdec::CacheKind::Contiguous) auto_gbps = gbps;
      }
      {
        fdec::Options o = opt;
        o.pdl = false;
        const double ms = ladder::time_gpu([&] { run(fdec::CacheKind::Contiguous, o); }, topt).median_ms;
        row("split-KV, contiguous, no PDL", std::to_string(pa.split.splits) + "*", pa.blocks, ms);
      }
      {
        const double ms = ladder::time_gpu([&] { run(fdec::CacheKind::Contiguous, nosplit); }, topt).median_ms;
        row("no split (one block per group)", "1", fdec::plan(t, nosplit).blocks, ms);
      }
      {
        const double ms =
            ladder::time_gpu(
                [&] {
                  fdec::decode_with_fa2tc(t, Q.data(), c.cache(fdec::CacheKind::Contiguous), O.data(), LSE.data());
                },
                {std::max(3, repeats / 2)})
                .median_ms;
        row("chapter 10 forward (FA2 grid)", "-", static_cast<long long>(t.B) * t.H_q, ms);
      }
      report.out() << "    split sweep (contiguous; * = the automatic choice):\n";
      for (long long sp : sweep) {
        fdec::Options o = opt;
        o.splits = static_cast<int>(sp);
        const fdec::Plan po = fdec::plan(t, o);
        if (po.split.splits != sp) continue;  // fewer tiles than splits: already measured
        const double ms = ladder::time_gpu([&] { run(fdec::CacheKind::Contiguous, o); }, topt).median_ms;
        row("  splits = " + std::to_string(sp), std::to_string(po.split.splits) + (sp == pa.split.splits ? "*" : ""),
            po.blocks, ms);
      }
      last_gbps = auto_gbps;
      last_copy = copy_gbps;
    }
    std::snprintf(line, sizeof line, "decode B=%d Hq=%d Hkv=%d Nkv=%d d=%d: %.0f GB/s = %.2fx copy", s.B, s.H_q, s.H_kv,
                  s.max_seq_len, s.d, last_gbps, last_gbps / last_copy);
    return report.summary(line);
  });
}
