// Host-side pieces the executable and the tests share: a decode problem on bf16-rounded
// inputs (the fp64 reference sees exactly the values the GPU sees), its caches in every
// layout, its device buffers with outputs poisoned before each run, and the comparisons.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compare.h"
#include "device_buffer.h"
#include "flash_decoding.h"

namespace fdec {

// LSE is fp32 end to end: scores from exact bf16 x bf16 products summed over d by the tensor
// cores (truncating: at most ~d 2^-24 of sum |q_k k_k|, ~1e-6 of |S|), a running max that is
// exact, ex2.approx (2 ulp), fp32 row sums of at most a few thousand terms per lane and the
// merges' logf/expf: each moves LSE by ~1e-6 absolute at most, and |LSE| >= ~1 here (it grows
// like log N_kv), so rel_l2 ~1e-7 is expected. 1e-5 leaves two orders of magnitude, and any
// masking, indexing or merge bug moves LSE by > 1e-3.
using ladder::kLse;  // common/compare.h

// The caches the tests, the executable and the benchmark run on.
enum class CacheKind { Contiguous, Paged16, Paged64 };
inline constexpr CacheKind kAllCacheKinds[] = {CacheKind::Contiguous, CacheKind::Paged16, CacheKind::Paged64};
const char* name(CacheKind k);  // "contiguous", "paged16", "paged64"
int page_size(CacheKind k);     // 0, 16, 64

// Q uniform in [-1, 1) times q_scale, K and V uniform in [-1, 1), all rounded to bf16 and kept
// as float; K and V laid out [B, H_kv, capacity, d] with NaN in every slot past a sequence's
// end (a kernel that reads one there turns its output NaN).
struct Problem {
  DecodeShape s;
  std::vector<int> seq_lens;  // [B]; s.max_seq_len is their max
  int capacity = 0;
  std::vector<float> Q, K, V;
};
Problem make_problem(DecodeShape s, const std::vector<int>& seq_lens, std::uint64_t seed, float q_scale = 1.0f,
                     int spare_capacity = 5);

// fp64: per batch entry, common/reference_attention.h on its seq_len keys with
// AttentionShape{1, H_q, n_q, d, causal, H_kv, seq_len} (causal aligned at the bottom right is
// the decode mask). A sequence of no key: O = 0, LSE = -inf.
struct Reference {
  std::vector<double> O, LSE;
};
Reference reference(const Problem& p);

// A paged copy of a problem's cache: every sequence's pages scattered over a pool in random
// order, a few spare pages besides, unused slots and pages NaN, unused table entries -1.
struct PagedCache {
  int page_size = 0, num_pages = 0, max_pages_per_seq = 0;
  std::vector<float> K, V;  // [num_pages, H_kv, page_size, d]
  std::vector<int> table;   // [B, max_pages_per_seq]
};
PagedCache to_pages(const Problem& p, int page_size, std::uint64_t seed);

// The problem on the device in all three layouts.
class OnDevice {
 public:
  explicit OnDevice(const Problem& p, std::uint64_t seed = 1);
  // Poisons O, LSE and the workspace (NaN), then decodes.
  void run(CacheKind kind, const Options& opt = {});
  void run_fa2tc();  // chapter 10's forward (contiguous, every sequence max_seq_len long)
  KvCache cache(CacheKind kind) const;
  std::vector<float> O_host() const { return ladder::from_bf16(O_.download()); }
  std::vector<float> LSE_host() const { return LSE_.download(); }
  const DecodeShape& shape() const { return s_; }

 private:
  DecodeShape s_;
  int capacity_;
  ladder::DeviceBuffer<bf16> Q_, K_, V_, O_;
  ladder::DeviceBuffer<float> LSE_;
  ladder::DeviceBuffer<int> seq_lens_;
  struct Pages {
    PagedCache host;
    ladder::DeviceBuffer<bf16> K, V;
    ladder::DeviceBuffer<int> table;
  } pages_[2];  // 16, 64
  ladder::DeviceBuffer<float> workspace_;
};

// LSE against the reference: rows the reference gives -inf (no visible key) must be -inf
// exactly; each that is not counts as non-finite. The rest are compared as usual.
using ladder::compare_lse;  // common/compare.h

// Where element `index` of O ([B, H_q, n_q, d]) or LSE ([B, H_q, n_q]) is, and what it holds:
// "b=1 h=5 t=0 col=17: got 0.25, want 0.2471" (for failure messages).
std::string where(const DecodeShape& s, std::size_t index, bool is_lse, const std::vector<float>& out,
                  const std::vector<double>& ref);
// "O: <comparison>; worst at b=.. h=.. t=.. col=..: got .., want .." in one line.
std::string describe(const DecodeShape& s, const ladder::Comparison& c, bool is_lse, const std::vector<float>& out,
                     const std::vector<double>& ref);

}  // namespace fdec
