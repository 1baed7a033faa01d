#include "decode_problem.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>
#include <random>
#include <stdexcept>

#include "bf16.h"
#include "random.h"
#include "reference_attention.h"

namespace fdec {

namespace {
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
}  // namespace

const char* name(CacheKind k) {
  switch (k) {
    case CacheKind::Contiguous: return "contiguous";
    case CacheKind::Paged16: return "paged16";
    case CacheKind::Paged64: return "paged64";
  }
  return "?";
}
int page_size(CacheKind k) { return k == CacheKind::Paged16 ? 16 : k == CacheKind::Paged64 ? 64 : 0; }

Problem make_problem(DecodeShape s, const std::vector<int>& seq_lens, std::uint64_t seed, float q_scale,
                     int spare_capacity) {
  if (seq_lens.size() != std::size_t(s.B))
    throw std::invalid_argument("make_problem: " + std::to_string(seq_lens.size()) +
                                " lengths for B = " + std::to_string(s.B));
  s.max_seq_len = *std::max_element(seq_lens.begin(), seq_lens.end());
  Problem p{s, seq_lens, std::max(1, s.max_seq_len + spare_capacity), {}, {}, {}};
  const std::size_t kv = std::size_t(s.B) * s.H_kv * p.capacity * s.d;
  p.Q = ladder::round_to_bf16(ladder::random_uniform(s.q_elems(), seed));
  for (float& x : p.Q) x = ladder::round_to_bf16(x * q_scale);
  p.K = ladder::round_to_bf16(ladder::random_uniform(kv, seed + 1));
  p.V = ladder::round_to_bf16(ladder::random_uniform(kv, seed + 2));
  for (int b = 0; b < s.B; ++b)
    for (int h = 0; h < s.H_kv; ++h) {
      const std::size_t slab = (std::size_t(b) * s.H_kv + h) * p.capacity;
      for (std::size_t j = std::size_t(std::max(seq_lens[b], 0)); j < std::size_t(p.capacity); ++j)
        for (int k = 0; k < s.d; ++k) p.K[(slab + j) * s.d + k] = p.V[(slab + j) * s.d + k] = kNaN;
    }
  return p;
}

Reference reference(const Problem& p) {
  const DecodeShape& s = p.s;
  Reference r{std::vector<double>(s.q_elems(), 0.0), std::vector<double>(s.rows(), -kInf)};
  const std::size_t q_per_seq = std::size_t(s.H_q) * s.n_q * s.d;
  for (int b = 0; b < s.B; ++b) {
    const int n = p.seq_lens[b];
    if (n <= 0) continue;  // O = 0, LSE = -inf (AttentionShape reads N_kv = 0 as "N_kv = N")
    ladder::AttentionShape a{1, s.H_q, s.n_q, s.d, true};
    a.H_kv = s.H_kv;
    a.N_kv = n;
    std::vector<float> K(std::size_t(s.H_kv) * n * s.d), V(K.size());
    for (int h = 0; h < s.H_kv; ++h) {
      const std::size_t from = (std::size_t(b) * s.H_kv + h) * p.capacity * s.d, to = std::size_t(h) * n * s.d;
      std::copy_n(p.K.begin() + from, std::size_t(n) * s.d, K.begin() + to);
      std::copy_n(p.V.begin() + from, std::size_t(n) * s.d, V.begin() + to);
    }
    const auto f = ladder::attention_forward_reference(a, p.Q.data() + b * q_per_seq, K.data(), V.data());
    std::copy(f.O.begin(), f.O.end(), r.O.begin() + b * q_per_seq);
    std::copy(f.L.begin(), f.L.end(), r.LSE.begin() + std::size_t(b) * s.H_q * s.n_q);
  }
  return r;
}

PagedCache to_pages(const Problem& p, int page_size, std::uint64_t seed) {
  const DecodeShape& s = p.s;
  PagedCache c;
  c.page_size = page_size;
  c.max_pages_per_seq = std::max(1, (s.max_seq_len + page_size - 1) / page_size);
  int used = 0;
  for (int n : p.seq_lens) used += (std::max(n, 0) + page_size - 1) / page_size;
  c.num_pages = used + 3;  // spare pages: NaN, never in the table
  const std::size_t page_elems = std::size_t(s.H_kv) * page_size * s.d;
  c.K.assign(std::size_t(c.num_pages) * page_elems, kNaN);
  c.V.assign(c.K.size(), kNaN);
  c.table.assign(std::size_t(s.B) * c.max_pages_per_seq, -1);
  std::vector<int> order(c.num_pages);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937_64(seed));
  int next = 0;
  for (int b = 0; b < s.B; ++b)
    for (int i = 0; i * page_size < p.seq_lens[b]; ++i) {
      const int page = order[next++];
      c.table[std::size_t(b) * c.max_pages_per_seq + i] = page;
      for (int h = 0; h < s.H_kv; ++h)
        for (int r = 0; r < page_size; ++r) {
          const int j = i * page_size + r;
          if (j >= p.seq_lens[b]) break;  // the tail of the last page stays NaN
          const std::size_t from = ((std::size_t(b) * s.H_kv + h) * p.capacity + j) * s.d;
          const std::size_t to = ((std::size_t(page) * s.H_kv + h) * page_size + r) * s.d;
          std::copy_n(p.K.begin() + from, s.d, c.K.begin() + to);
          std::copy_n(p.V.begin() + from, s.d, c.V.begin() + to);
        }
    }
  return c;
}

OnDevice::OnDevice(const Problem& p, std::uint64_t seed)
    : s_(p.s),
      capacity_(p.capacity),
      Q_(ladder::to_bf16(p.Q)),
      K_(ladder::to_bf16(p.K)),
      V_(ladder::to_bf16(p.V)),
      O_(p.s.q_elems()),
      LSE_(p.s.rows()),
      seq_lens_(p.seq_lens) {
  for (int i = 0; i < 2; ++i) {
    Pages& pg = pages_[i];
    pg.host = to_pages(p, i == 0 ? 16 : 64, seed + i);
    check_block_table(pg.host.table, p.seq_lens, pg.host.page_size, pg.host.max_pages_per_seq, pg.host.num_pages);
    pg.K = ladder::DeviceBuffer<bf16>(ladder::to_bf16(pg.host.K));
    pg.V = ladder::DeviceBuffer<bf16>(ladder::to_bf16(pg.host.V));
    pg.table = ladder::DeviceBuffer<int>(pg.host.table);
  }
}

KvCache OnDevice::cache(CacheKind kind) const {
  if (kind == CacheKind::Contiguous) return KvCache::contiguous(K_.data(), V_.data(), capacity_);
  const Pages& pg = pages_[kind == CacheKind::Paged16 ? 0 : 1];
  return KvCache::paged(pg.K.data(), pg.V.data(), pg.table.data(), pg.host.num_pages, pg.host.page_size,
                        pg.host.max_pages_per_seq);
}

void OnDevice::run(CacheKind kind, const Options& opt) {
  const std::size_t bytes = plan(s_, opt).workspace_bytes;
  if (workspace_.bytes() < bytes) workspace_ = ladder::DeviceBuffer<float>((bytes + 3) / 4);
  O_.poison();
  LSE_.poison();
  workspace_.poison();
  decode(s_, Q_.data(), cache(kind), seq_lens_.data(), O_.data(), LSE_.data(), workspace_.data(), opt);
}

void OnDevice::run_fa2tc() {
  O_.poison();
  LSE_.poison();
  decode_with_fa2tc(s_, Q_.data(), cache(CacheKind::Contiguous), O_.data(), LSE_.data());
}

std::string where(const DecodeShape& s, std::size_t index, bool is_lse, const std::vector<float>& out,
                  const std::vector<double>& ref) {
  const std::size_t row = is_lse ? index : index / s.d;
  char buf[200];
  std::snprintf(buf, sizeof buf, "b=%zu h=%zu t=%zu%s%s: got %.6g, want %.6g", row / (std::size_t(s.H_q) * s.n_q),
                row / s.n_q % s.H_q, row % s.n_q,
                is_lse ? "" : " col=", is_lse ? "" : std::to_string(index % s.d).c_str(),
                index < out.size() ? double(out[index]) : NAN, index < ref.size() ? ref[index] : NAN);
  return buf;
}

std::string describe(const DecodeShape& s, const ladder::Comparison& c, bool is_lse, const std::vector<float>& out,
                     const std::vector<double>& ref) {
  std::string text = std::string(is_lse ? "LSE" : "O") + ": " + c.str();
  if (c.size_mismatch) return text;
  // compare_lse renumbers when it drops -inf rows: find the first offender directly.
  if (c.nonfinite > 0) {
    for (std::size_t i = 0; i < out.size() && i < ref.size(); ++i) {
      const bool want_neg_inf = std::isinf(ref[i]) && ref[i] < 0;
      const bool bad = want_neg_inf ? !(std::isinf(out[i]) && out[i] < 0) : !std::isfinite(out[i]);
      if (bad) return text + "; first bad " + where(s, i, is_lse, out, ref);
    }
  }
  std::size_t worst = 0;
  double err = -1.0;
  for (std::size_t i = 0; i < out.size() && i < ref.size(); ++i)
    if (std::isfinite(ref[i]) && std::fabs(out[i] - ref[i]) > err) err = std::fabs(out[i] - ref[i]), worst = i;
  return text + "; worst " + where(s, worst, is_lse, out, ref);
}

}  // namespace fdec
