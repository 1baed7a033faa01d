// Flash-decoding against a device-to-device copy of the same K/V bytes, in one run. GB/s counts
// the K and V bytes a decode step must read (2 B H_kv N_kv d bf16), as PyTorch's anchor does
// (kv_bytes / ms); the copy's GB/s counts its bytes read plus written (chapter 01's anchor).
//   decode/<shape>/layout=<contiguous|paged16|paged64>/splits=<auto|S>[/config=<name>]
//   decode_nopdl/...      the combine launched without programmatic dependent launch
//   fa2tc_forward/...     chapter 10's forward on the decode shape (the FA2 grid: no split)
//   anchor:cudaMemcpy_d2d/<shape>/layout=contiguous/splits=auto   (the headline rows' anchor)
// The multi-gigabyte caches are generated on the device (ladder::fill_uniform_device) and kept
// until exit, like bench_input's: drawing 8.6 GB of bf16 on the host would take seconds of
// the GPU session. Paged pools hold the same values, laid out by fdec::copy_to_pages.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <map>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "bench.h"
#include "cuda_check.h"
#include "decode_problem.h"
#include "device_buffer.h"
#include "device_random.h"
#include "flash_decoding.h"

namespace {

using fdec::CacheKind;
using fdec::DecodeShape;

// One shape's K/V cache in the layouts asked for so far (pools built on first use).
struct Cache {
  DecodeShape s;
  std::size_t n = 0;  // elements of K (and of V)
  ladder::DeviceBuffer<fdec::bf16> kv;
  ladder::DeviceBuffer<int> seq_lens;
  ladder::DeviceBuffer<fdec::bf16> pool[2];
  ladder::DeviceBuffer<int> table[2];
  int pages[2] = {0, 0};

  explicit Cache(const DecodeShape& shape)
      : s(shape),
        n(std::size_t(shape.B) * shape.H_kv * shape.max_seq_len * shape.d),
        kv(2 * n),
        seq_lens(std::vector<int>(shape.B, shape.max_seq_len)) {
    ladder::fill_uniform_device(kv.data(), kv.size(), 11);
  }
  fdec::KvCache get(CacheKind kind) {
    if (kind == CacheKind::Contiguous) return fdec::KvCache::contiguous(kv.data(), kv.data() + n, s.max_seq_len);
    const int i = kind == CacheKind::Paged16 ? 0 : 1, P = fdec::page_size(kind), per_seq = (s.max_seq_len + P - 1) / P;
    if (pages[i] == 0) {
      pages[i] = s.B * per_seq;
      std::vector<int> order(pages[i]);  // every sequence's pages scattered over the pool
      std::iota(order.begin(), order.end(), 0);
      std::shuffle(order.begin(), order.end(), std::mt19937_64(12 + i));
      table[i] = ladder::DeviceBuffer<int>(order);
      pool[i] = ladder::DeviceBuffer<fdec::bf16>(2 * std::size_t(pages[i]) * s.H_kv * P * s.d);
      fdec::copy_to_pages(s, kv.data(), kv.data() + n, s.max_seq_len, pool[i].data(),
                          pool[i].data() + pool[i].size() / 2, table[i].data(), P, per_seq);
      CUDA_CHECK(cudaDeviceSynchronize());
    }
    return fdec::KvCache::paged(pool[i].data(), pool[i].data() + pool[i].size() / 2, table[i].data(), pages[i], P,
                                per_seq);
  }
};

Cache& cache_for(const DecodeShape& s) {
  static std::map<std::tuple<int, int, int, int>, std::unique_ptr<Cache>> caches;  // (B, H_kv, N, d); n_q and H_q apart
  auto& c = caches[{s.B, s.H_kv, s.max_seq_len, s.d}];
  if (!c) c = std::make_unique<Cache>(s);
  return *c;
}

double kv_bytes(const DecodeShape& s) { return 2.0 * s.B * s.H_kv * double(s.max_seq_len) * s.d * 2; }

enum class Impl { Decode, DecodeNoPdl, Fa2tc, Copy };

void bench(benchmark::State& state, Impl impl, DecodeShape s, CacheKind kind, fdec::Options opt) {
  if (!ladder::gpu_or_skip(state)) return;
  Cache& c = cache_for(s);
  const ladder::Work work{0.0, kv_bytes(s)};
  if (impl == Impl::Copy) {
    fdec::bf16* dst = ladder::bench_output<fdec::bf16>(c.kv.size(), 7);
    return ladder::run_gpu(
        state, [&] { CUDA_CHECK(cudaMemcpyAsync(dst, c.kv.data(), c.kv.bytes(), cudaMemcpyDeviceToDevice)); },
        {0.0, 2.0 * c.kv.bytes()});  // read + write, as chapter 01 counts a copy
  }
  const fdec::bf16* Q = ladder::bench_input<fdec::bf16>(s.q_elems(), 3);
  fdec::bf16* O = ladder::bench_output<fdec::bf16>(s.q_elems(), 1);
  float* LSE = ladder::bench_output<float>(s.rows(), 2);
  const fdec::KvCache kv = c.get(kind);
  if (impl == Impl::Fa2tc)
    return ladder::run_gpu(
        state, [&] { fdec::decode_with_fa2tc(s, Q, kv, O, LSE); }, work);
  if (impl == Impl::DecodeNoPdl) opt.pdl = false;
  const fdec::Plan plan = fdec::plan(s, opt);
  float* ws = ladder::bench_output<float>(std::max<std::size_t>(1, plan.workspace_bytes / 4), 3);
  state.counters["splits"] = plan.split.splits;
  state.counters["blocks"] = static_cast<double>(plan.blocks);
  ladder::run_gpu(
      state, [&] { fdec::decode(s, Q, kv, c.seq_lens.data(), O, LSE, ws, opt); }, work);
}

std::string shape_key(const DecodeShape& s) {
  return "/B=" + std::to_string(s.B) + "/Hq=" + std::to_string(s.H_q) + "/Hkv=" + std::to_string(s.H_kv) +
         (s.n_q > 1 ? "/nq=" + std::to_string(s.n_q) : "") + "/Nkv=" + std::to_string(s.max_seq_len) +
         "/d=" + std::to_string(s.d);
}

void add(const std::string& variant, Impl impl, const DecodeShape& s, CacheKind kind, int splits,
         int config = fdec::kFits) {
  fdec::Options opt;
  opt.splits = splits;
  opt.config = config;
  std::string name = variant + shape_key(s) + "/layout=" + fdec::name(kind);
  if (impl != Impl::Fa2tc) name += "/splits=" + (splits == 0 ? std::string("auto") : std::to_string(splits));
  if (config != fdec::kFits) name += "/config=" + fdec::configs(s.d)[config].name;
  ladder::gpu_benchmark(name, [=](benchmark::State& st) { bench(st, impl, s, kind, opt); });
}

const bool registered = [] {
  // The headline shapes (the anchors' decode rows): layouts, the split sweep, the tile
  // configurations, PDL off, chapter 10's forward, and the copy.
  for (int N : {32768, 131072}) {
    const DecodeShape s{8, 32, 8, 1, 128, N};
    for (CacheKind kind : fdec::kAllCacheKinds) add("decode", Impl::Decode, s, kind, 0);
    add("anchor:cudaMemcpy_d2d", Impl::Copy, s, CacheKind::Contiguous, 0);
    for (int splits : {1, 2, 4, 8, 16, 32, 64}) add("decode", Impl::Decode, s, CacheKind::Contiguous, splits);
    for (int config = 1; config < static_cast<int>(fdec::configs(s.d).size()); ++config)
      add("decode", Impl::Decode, s, CacheKind::Contiguous, 0, config);
    add("decode_nopdl", Impl::DecodeNoPdl, s, CacheKind::Contiguous, 0);
    add("fa2tc_forward", Impl::Fa2tc, s, CacheKind::Contiguous, 0);
  }
  // Why split: time against the number of (sequence, KV head) blocks, with and without splits.
  for (int B : {1, 4, 32}) {
    const DecodeShape s{B, 32, 8, 1, 128, 32768};
    add("decode", Impl::Decode, s, CacheKind::Contiguous, 1);
    add("decode", Impl::Decode, s, CacheKind::Contiguous, 0);
  }
  // Speculative decoding (4 queries per sequence: 16 rows per group, one m16 tile), and d = 64.
  {
    const DecodeShape s{8, 32, 8, 4, 128, 32768};
    add("decode", Impl::Decode, s, CacheKind::Contiguous, 0);
    add("decode", Impl::Decode, s, CacheKind::Paged16, 0);
  }
  {
    const DecodeShape s{8, 32, 8, 1, 64, 32768};
    for (CacheKind kind : {CacheKind::Contiguous, CacheKind::Paged16}) add("decode", Impl::Decode, s, kind, 0);
    for (int config = 1; config < static_cast<int>(fdec::configs(s.d).size()); ++config)
      add("decode", Impl::Decode, s, CacheKind::Contiguous, 0, config);
  }
  return true;
}();

}  // namespace
