#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "decode_problem.h"
#include "fit.h"
#include "flash_decoding.h"
#include "gtest_helpers.h"
#include "split_model.h"

namespace {

using fdec::CacheKind;
using fdec::DecodeShape;
namespace model = fdec::model;

constexpr double kInf = std::numeric_limits<double>::infinity();

// ---- CPU: the split/merge model in fp64 ------------------------------------------------

// Merged partials against the full softmax: only fp64 rounding may differ.
void expect_same(const model::Partial& got, const model::Partial& want, const std::string& what) {
  if (want.lse == -kInf) {
    EXPECT_EQ(got.lse, -kInf) << what;
  } else {
    EXPECT_NEAR(got.lse, want.lse, 1e-12) << what;
  }
  ASSERT_EQ(got.o.size(), want.o.size()) << what;
  for (std::size_t k = 0; k < want.o.size(); ++k) EXPECT_NEAR(got.o[k], want.o[k], 1e-12) << what << ", O[" << k << "]";
}

TEST(CpuSplitModel, RandomSplitPointsMergeToTheFullSoftmax) {
  LADDER_TEST_SEED(seed);
  std::mt19937_64 gen(seed);
  for (int trial = 0; trial < 200; ++trial) {
    const int n = 1 + static_cast<int>(gen() % 300), d = trial % 2 ? 8 : 16;
    const long last_key = static_cast<long>(gen() % (n + 2)) - 1;  // -1 (nothing visible) .. n (all)
    const model::Row r = model::random_row(n, d, last_key, seed + trial);
    std::vector<int> cuts(gen() % 9);
    for (int& c : cuts) c = static_cast<int>(gen() % (n + 1));  // repeats = empty splits
    std::sort(cuts.begin(), cuts.end());
    expect_same(model::split_and_merge(r, cuts), model::full(r),
                "trial " + std::to_string(trial) + ", n=" + std::to_string(n) +
                    ", last_key=" + std::to_string(last_key) + ", " + std::to_string(cuts.size() + 1) + " splits");
  }
}

TEST(CpuSplitModel, EmptySplitsWeighNothing) {
  LADDER_TEST_SEED(seed);
  const model::Row r = model::random_row(50, 8, 49, seed);
  const model::Partial empty = model::partial(r, 20, 20);
  EXPECT_EQ(empty.lse, -kInf);
  EXPECT_EQ(empty.l, 0.0);
  for (double v : empty.o) EXPECT_EQ(v, 0.0);
  expect_same(model::split_and_merge(r, {0, 0, 20, 20, 20, 50, 50}), model::full(r), "empty splits at 0, 20 and 50");
}

TEST(CpuSplitModel, ASplitThatSeesOnlyMaskedKeys) {
  LADDER_TEST_SEED(seed);
  // 100 keys, the query sees 0..59: the split [60, 100) has keys but no visible one.
  const model::Row r = model::random_row(100, 8, 59, seed);
  const model::Partial masked = model::partial(r, 60, 100);
  EXPECT_EQ(masked.lse, -kInf);
  for (double v : masked.o) EXPECT_EQ(v, 0.0);
  std::vector<model::Partial> parts;
  expect_same(model::split_and_merge(r, {30, 60}, &parts), model::full(r), "cut at 30, 60");
  EXPECT_EQ(parts.back().lse, -kInf);
  // Every split masked: the row has no softmax; O = 0, LSE = -inf, never NaN.
  const model::Row none = model::random_row(40, 8, -1, seed + 1);
  const model::Partial merged = model::split_and_merge(none, {10, 25});
  EXPECT_EQ(merged.lse, -kInf);
  for (double v : merged.o) EXPECT_EQ(v, 0.0);
}

TEST(CpuSplitModel, OneKey) {
  LADDER_TEST_SEED(seed);
  const model::Row r = model::random_row(1, 8, 0, seed);
  const model::Partial f = model::full(r);
  double s = 0.0;
  for (int k = 0; k < r.d; ++k) s += r.q[k] * r.K[k];
  EXPECT_NEAR(f.lse, r.scale * s, 1e-15);  // log exp(s) = s
  for (int k = 0; k < r.d; ++k) EXPECT_EQ(f.o[k], r.V[k]);
  expect_same(model::split_and_merge(r, {0, 1, 1}), f, "one key, empty splits around it");
}

TEST(CpuSplitModel, MergeIsOrderFree) {
  LADDER_TEST_SEED(seed);
  const model::Row r = model::random_row(90, 8, 89, seed);
  const auto a = model::partial(r, 0, 30), b = model::partial(r, 30, 60), c = model::partial(r, 60, 90);
  const auto left = model::merge({model::merge({a, b}), c}), right = model::merge({a, model::merge({b, c})});
  const auto swapped = model::merge({c, a, b});
  expect_same(left, right, "(a b) c vs a (b c)");
  expect_same(swapped, right, "c a b vs a b c");
}

// ---- CPU: split choice, plans, configurations, bad input ------------------------------

TEST(CpuDecode, SwizzledCopiesLandWhereLdmatrixReads) {
  const std::string mismatch = fdec::detail::check_copy_addressing();
  EXPECT_TRUE(mismatch.empty()) << mismatch;
}

TEST(CpuDecode, SplitWithCoversTheKeysInWholeTiles) {
  for (int tile : {64, 128})
    for (int N : {1, 17, 64, 1000, 4097, 33000, 131072, 262144})
      for (int s : {1, 2, 3, 7, 16, 100, fdec::kMaxSplits}) {
        const fdec::Split sp = fdec::split_with(s, N, tile);
        const std::string what = "N=" + std::to_string(N) + " s=" + std::to_string(s) + " tile=" + std::to_string(tile);
        EXPECT_EQ(sp.keys_per_split % tile, 0) << what;
        EXPECT_GE(sp.splits, 1) << what;
        EXPECT_LE(sp.splits, s) << what;
        EXPECT_GE(static_cast<long long>(sp.splits) * sp.keys_per_split, N) << what;      // covers every key
        EXPECT_LT(static_cast<long long>(sp.splits - 1) * sp.keys_per_split, N) << what;  // no empty split
      }
}

TEST(CpuDecode, AutomaticSplitsFillTheGpuInWholeWaves) {
  const long long slots = 132 * 2;
  // The headline: 64 (sequence, KV head) pairs on 264 block slots.
  const fdec::Split h = fdec::choose_splits(64, 131072, 64, slots);
  EXPECT_GE(64LL * h.splits, 0.9 * slots) << h.splits;
  EXPECT_GE(h.keys_per_split, fdec::kMinKeysPerSplit);
  // Enough pairs to fill the GPU alone: no split.
  EXPECT_EQ(fdec::choose_splits(2 * slots, 131072, 64, slots).splits, 1);
  // Short sequences are not cut below kMinKeysPerSplit keys.
  EXPECT_EQ(fdec::choose_splits(1, 300, 64, slots).splits, 1);
  for (long long units : {1LL, 8LL, 64LL, 200LL, 300LL, 1000LL})
    for (int N : {1, 1000, 32768, 262144}) {
      const fdec::Split sp = fdec::choose_splits(units, N, 64, slots);
      const std::string what = "units=" + std::to_string(units) + " N=" + std::to_string(N);
      EXPECT_GE(sp.splits, 1) << what;
      EXPECT_TRUE(sp.splits == 1 || sp.keys_per_split >= fdec::kMinKeysPerSplit) << what;
      // Long caches fill the slots in nearly whole waves, unless even the most splits the
      // minimum split size allows leave slots empty: then it takes that many.
      const long long blocks = units * sp.splits, waves = (blocks + slots - 1) / slots;
      const int most = N / fdec::kMinKeysPerSplit;
      if (N >= 32768 && units * most >= slots) {
        EXPECT_GE(double(blocks) / double(waves * slots), 0.75) << what << ": " << sp.splits << " splits";
      } else if (N >= 32768) {
        EXPECT_GE(sp.splits, most * 9 / 10) << what;
      }
    }
}

TEST(CpuDecode, PlanSizesTheWorkspace) {
  DecodeShape s{8, 32, 8, 1, 128, 131072};
  fdec::Options one;
  one.splits = 1;
  EXPECT_EQ(fdec::plan(s, one).workspace_bytes, 0u);
  fdec::Options four;
  four.splits = 4;
  const fdec::Plan p = fdec::plan(s, four);
  EXPECT_EQ(p.split.splits, 4);
  EXPECT_EQ(p.blocks, 8LL * 8 * 4);
  EXPECT_GE(p.workspace_bytes, s.rows() * 4 * (s.d + 1) * sizeof(float));
  // GQA group 8 with 16 speculative queries: 128 rows per KV head, 8 row tiles of 16.
  const fdec::Plan spec = fdec::plan({2, 16, 2, 16, 64, 1000}, one);
  EXPECT_EQ(spec.row_tiles, 8);
  EXPECT_EQ(spec.blocks, 2LL * 2 * 8);
}

TEST(CpuDecode, ConfigsAreListedPerHeadDim) {
  for (int d : fdec::kSupportedD) {
    const auto list = fdec::configs(d);
    ASSERT_FALSE(list.empty()) << d;
    std::set<std::string> names;
    for (const fdec::TileConfig& c : list) {
      EXPECT_TRUE(names.insert(c.name).second) << c.name;
      EXPECT_EQ(c.keys_per_step % 16, 0) << c.name;
      EXPECT_LE(c.smem_bytes, ladder::kH200SmemPerBlock) << c.name;
    }
  }
  EXPECT_TRUE(fdec::configs(96).empty());
}

// The plan's choice (config = kFits) on other GPUs' limits: the README's configuration on an
// H200 and an A100, the fastest that fits on a 4090 (a T4 has no bf16 mma.sync: refused).
TEST(CpuDecode, EachGpuGetsTheFastestConfigurationThatFits) {
  for (int d : fdec::kSupportedD) {
    const auto list = fdec::configs(d);
    EXPECT_EQ(fdec::preference(d).front(), 0) << d;
    EXPECT_EQ(fdec::preference(d).size(), list.size()) << d;
    EXPECT_EQ(fdec::fit(d, ladder::limits_of("").smem_per_block_optin), 0) << d;
    for (const std::string cap : {"sm80", "sm86", "sm89", "sm120"}) {
      const std::size_t limit = ladder::limits_of(cap).smem_per_block_optin;
      const int f = fdec::fit(d, limit);
      ASSERT_GE(f, 0) << cap << " d=" << d;
      EXPECT_LE(list[f].smem_bytes, limit) << cap << " d=" << d;
    }
  }
  EXPECT_EQ(fdec::configs(128)[fdec::fit(128, 99 * 1024)].name, "w4_k16_s2");
  EXPECT_EQ(fdec::fit(128, 163 * 1024), 0);
  EXPECT_EQ(fdec::fit(128, 32 * 1024), -1);
}

TEST(CpuDecode, BadInputIsRejectedBeforeAnyLaunch) {
  // Never dereferenced: every check throws before a launch, so this runs without a GPU.
  auto* p = reinterpret_cast<fdec::bf16*>(std::uintptr_t{256});
  auto* misaligned = reinterpret_cast<fdec::bf16*>(std::uintptr_t{258});
  auto* f = reinterpret_cast<float*>(std::uintptr_t{512});
  auto* lens = reinterpret_cast<int*>(std::uintptr_t{1024});
  void* ws = reinterpret_cast<void*>(std::uintptr_t{4096});
  const DecodeShape ok{2, 8, 2, 1, 128, 100};
  const fdec::KvCache slab = fdec::KvCache::contiguous(p, p, 100);
  auto run = [&](const DecodeShape& s, const fdec::KvCache& kv, const fdec::Options& o = {}) {
    fdec::decode(s, p, kv, lens, p, f, ws, o);
  };
  auto expect_message = [&](const DecodeShape& s, const fdec::KvCache& kv, const std::string& part,
                            const fdec::Options& o = {}) {
    try {
      run(s, kv, o);
      ADD_FAILURE() << "accepted: " << s.str() << " (expected a message with '" << part << "')";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
  };
  expect_message({2, 8, 2, 1, 96, 100}, slab, "64, 128");                     // d
  expect_message({2, 8, 2, 0, 128, 100}, slab, "1 to 16");                    // n_q = 0
  expect_message({2, 8, 2, 17, 128, 100}, slab, "1 to 16");                   // n_q = 17
  expect_message({2, 6, 4, 1, 128, 100}, slab, "multiple of H_kv");           // H_q % H_kv
  expect_message({0, 8, 2, 1, 128, 100}, slab, ">= 1");                       // B = 0
  expect_message({2, 8, 2, 1, 128, 101}, slab, "more than the cache holds");  // seq_len > capacity
  expect_message({2, 8, 2, 1, 128, -1}, slab, "max_seq_len");
  expect_message(ok, fdec::KvCache::paged(p, p, lens, 10, 32, 10), "16 or 64");                  // page size
  expect_message(ok, fdec::KvCache::paged(p, p, lens, 10, 16, 6), "more than the cache holds");  // 96 < 100 keys
  expect_message(ok, fdec::KvCache::paged(p, p, nullptr, 10, 16, 7), "block_table is null");
  expect_message(ok, fdec::KvCache::contiguous(misaligned, p, 100), "aligned");
  expect_message(ok, fdec::KvCache::contiguous(p, nullptr, 100), "V is null");
  fdec::Options bad;
  bad.config = 99;
  expect_message(ok, slab, "does not exist", bad);
  bad = {};
  bad.splits = fdec::kMaxSplits + 1;
  expect_message(ok, slab, "splits", bad);
  EXPECT_THROW(fdec::decode(ok, nullptr, slab, lens, p, f, ws), std::invalid_argument);  // Q
  EXPECT_THROW(fdec::decode(ok, p, slab, nullptr, p, f, ws), std::invalid_argument);     // seq_lens
  EXPECT_THROW(fdec::decode(ok, p, slab, lens, p, nullptr, ws), std::invalid_argument);  // LSE
  fdec::Options two;
  two.splits = 2;  // needs a workspace
  EXPECT_THROW(fdec::decode(ok, p, slab, lens, p, f, nullptr, two), std::invalid_argument);
  EXPECT_THROW(fdec::decode_with_fa2tc(ok, p, fdec::KvCache::paged(p, p, lens, 10, 16, 7), p, f),
               std::invalid_argument);
}

TEST(CpuDecode, BlockTableCheckNamesTheBadEntry) {
  // Two sequences of 20 and 5 keys, pages of 16: 2 + 1 pages used, 3 slots each.
  EXPECT_NO_THROW(fdec::check_block_table({4, 0, -1, 2, -1, -1}, {20, 5}, 16, 3, 5));
  try {
    fdec::check_block_table({4, 5, -1, 2, -1, -1}, {20, 5}, 16, 3, 5);
    FAIL() << "page 5 of a pool of 5 accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("block_table[0][1] = 5"), std::string::npos) << e.what();
  }
  EXPECT_THROW(fdec::check_block_table({4, 0, -1, 0, -1, -1}, {20, 5}, 16, 3, 5), std::invalid_argument);  // shared
  EXPECT_THROW(fdec::check_block_table({4, 0, 1, 2, -1, -1}, {60, 5}, 16, 3, 5), std::invalid_argument);   // 4 pages
}

TEST(CpuDecode, PagedCopyHoldsTheSameKeys) {
  LADDER_TEST_SEED(seed);
  const fdec::Problem p = fdec::make_problem({3, 4, 2, 1, 64, 0}, {40, 1, 17}, seed);
  for (int P : fdec::kPageSizes) {
    const fdec::PagedCache c = fdec::to_pages(p, P, seed);
    ASSERT_NO_THROW(fdec::check_block_table(c.table, p.seq_lens, P, c.max_pages_per_seq, c.num_pages));
    for (int b = 0; b < p.s.B; ++b)
      for (int h = 0; h < p.s.H_kv; ++h)
        for (int j = 0; j < p.seq_lens[b]; ++j) {
          const int page = c.table[b * c.max_pages_per_seq + j / P];
          for (int k = 0; k < p.s.d; ++k) {
            const std::size_t from = ((std::size_t(b) * p.s.H_kv + h) * p.capacity + j) * p.s.d + k;
            const std::size_t to = ((std::size_t(page) * p.s.H_kv + h) * P + j % P) * p.s.d + k;
            ASSERT_EQ(c.K[to], p.K[from]) << "P=" << P << " b=" << b << " h=" << h << " j=" << j;
            ASSERT_EQ(c.V[to], p.V[from]) << "P=" << P << " b=" << b << " h=" << h << " j=" << j;
          }
        }
  }
}

// ---- GPU: every element against the fp64 reference ----------------------------------------

// Runs the given cache layouts and split settings on one problem; O within the bf16 bound,
// LSE within fp32's, rows without a visible key at O = 0 and LSE = -inf. Splits: 0 = auto,
// -1 = one split per block tile (the most there can be).
void expect_decode_correct(const fdec::Problem& p, std::uint64_t seed, const std::vector<int>& splits,
                           int config = fdec::kFits, const std::string& note = "",
                           const std::vector<CacheKind>& kinds = {std::begin(fdec::kAllCacheKinds),
                                                                  std::end(fdec::kAllCacheKinds)}) {
  const fdec::Reference ref = fdec::reference(p);
  fdec::OnDevice dev(p, seed);
  fdec::Options chosen;
  chosen.config = config;
  const int tile = fdec::plan(p.s, chosen).config.tile_keys();
  std::string lens;
  for (int n : p.seq_lens) lens += (lens.empty() ? "" : ",") + std::to_string(n);
  for (CacheKind kind : kinds)
    for (int sp : splits) {
      fdec::Options opt;
      opt.config = config;
      opt.splits = sp < 0 ? fdec::split_with(fdec::kMaxSplits, p.s.max_seq_len, tile).splits : sp;
      const fdec::Plan plan = fdec::plan(p.s, opt);
      dev.run(kind, opt);
      const std::string what = std::string(fdec::name(kind)) + ", " + p.s.str() + ", seq_lens " + lens + ", " +
                               std::to_string(plan.split.splits) + " splits of " +
                               std::to_string(plan.split.keys_per_split) + (sp == 0 ? " (auto)" : "") + ", config " +
                               plan.config.name + note;
      const auto O = dev.O_host(), L = dev.LSE_host();
      const ladder::Comparison cO = ladder::compare(O, ref.O), cL = fdec::compare_lse(L, ref.LSE);
      EXPECT_TRUE(cO.within(ladder::kBf16Attention)) << what << "\n  " << fdec::describe(p.s, cO, false, O, ref.O)
                                                     << " (bound " << ladder::kBf16Attention.rel_l2 << ")";
      EXPECT_TRUE(cL.within(fdec::kLse)) << what << "\n  " << fdec::describe(p.s, cL, true, L, ref.LSE) << " (bound "
                                         << fdec::kLse.rel_l2 << ")";
    }
}

// Under compute-sanitizer (small mode) fewer launches: racecheck instruments every shared
// memory access, and the shared-memory code is the same for every layout and split count.
std::vector<int> splits_to_run(std::vector<int> full) { return ladder::small_mode() ? std::vector<int>{0, -1} : full; }

// (N_kv, d, GQA group, n_q). Two sequences per problem: N_kv keys and a shorter one.
using Case = std::tuple<int, int, int, int>;
std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  const auto [N, d, g, n_q] = info.param;
  return "N" + std::to_string(N) + "_d" + std::to_string(d) + "_g" + std::to_string(g) + "_nq" + std::to_string(n_q);
}
// Small mode (compute-sanitizer): two cases, 17 keys with 8 row tiles of masked queries and 1000
// keys at d = 64. Always: the fp64 reference of the longest caches only where it is cheap
// (group x queries <= 16).
std::string skip_reason(const Case& c) {
  const auto [N, d, g, n_q] = c;
  if (ladder::small_mode() &&
      !((N == 17 && d == 128 && g == 8 && n_q == 16) || (N == 1000 && d == 64 && g == 4 && n_q == 1)))
    return "small mode (compute-sanitizer): N17_d128_g8_nq16 (8 row tiles, masks) and N1000_d64_g4_nq1 only";
  if (N > 4097 && g * n_q > 16)
    return "the fp64 reference of 33000 keys for more than 16 rows per KV head: covered at 4097";
  return "";
}

class GpuDecode : public ::testing::TestWithParam<Case> {};
TEST_P(GpuDecode, MatchesTheReference) {
  LADDER_REQUIRE_GPU();
  LADDER_TEST_SEED(seed);
  if (const std::string why = skip_reason(GetParam()); !why.empty()) GTEST_SKIP() << why;
  const auto [N, d, g, n_q] = GetParam();
  // H_kv = 2 where the reference is cheap; one KV head on the long caches.
  const int H_kv = N <= 4097 ? 2 : 1;
  const fdec::Problem p = fdec::make_problem({2, g * H_kv, H_kv, n_q, d, 0}, {N, std::max(1, N * 2 / 3)}, seed);
  expect_decode_correct(p, seed, splits_to_run({0, 1, 2, -1}));
}
// N_kv 1, 17 (not a multiple of a page or a tile), 1000, 4097 (= 64 * 64 + 1: with one split
// per tile the last split holds one key, which only the last of n_q > 1 queries sees), 33000.
INSTANTIATE_TEST_SUITE_P(Shapes, GpuDecode,
                         ::testing::Combine(::testing::Values(1, 17, 1000, 4097, 33000), ::testing::Values(64, 128),
                                            ::testing::Values(1, 4, 8), ::testing::Values(1, 4, 16)),
                         case_name);

// Sequences of very different lengths in one batch, padding slots (0 keys) and sequences
// shorter than n_q (their first queries see no key).
TEST(GpuDecodeBatch, SequencesOfDifferentLengths) {
  LADDER_REQUIRE_GPU();
  LADDER_TEST_SEED(seed);
  const std::vector<int> lens = ladder::small_mode() ? std::vector<int>{0, 1, 3, 64, 65, 300}
                                                     : std::vector<int>{0, 1, 3, 64, 65, 1000, 2500, 4097};
  for (int d : fdec::kSupportedD)
    for (int n_q : {1, 4}) {
      if (ladder::small_mode() && (n_q == 1 || d == 64)) continue;
      const fdec::Problem p = fdec::make_problem({int(lens.size()), 8, 2, n_q, d, 0}, lens, seed + d + n_q);
      expect_decode_correct(p, seed, splits_to_run({0, 1, 3, -1}));
    }
}

// Every compiled tile configuration (the benchmark's sweep) on one problem per head dim.
TEST(GpuDecodeBatch, EveryTileConfig) {
  LADDER_REQUIRE_GPU();
  LADDER_TEST_SEED(seed);
  const int N = ladder::small_mode() ? 300 : 3001;
  for (int d : fdec::kSupportedD) {
    const fdec::Problem p = fdec::make_problem({2, 8, 2, 2, d, 0}, {N, N / 3}, seed + d);
    for (int c = 0; c < static_cast<int>(fdec::configs(d).size()); ++c) {
      if (fdec::configs(d)[c].smem_bytes > ladder::device().smem_per_block_optin) continue;  // refused on this GPU
      if (ladder::small_mode())
        expect_decode_correct(p, seed, {-1}, c, "", {CacheKind::Contiguous, CacheKind::Paged16});
      else
        expect_decode_correct(p, seed, {0, 1, -1}, c);
    }
  }
}

// Logits 100x larger: the running max and the exp2 base keep every exponential <= 1, and
// the combine's log-sum-exp keeps the merge finite.
TEST(GpuDecodeBatch, LargeLogitsStayFiniteAndAccurate) {
  LADDER_REQUIRE_GPU();
  LADDER_TEST_SEED(seed);
  const int N = ladder::small_mode() ? 200 : 5000;
  for (int d : fdec::kSupportedD) {
    if (ladder::small_mode() && d == 64) continue;
    const fdec::Problem p = fdec::make_problem({2, 8, 2, 4, d, 0}, {N, N / 2 + 1}, seed + d, 100.0f);
    expect_decode_correct(p, seed, ladder::small_mode() ? std::vector<int>{0} : std::vector<int>{0, 1, -1}, fdec::kFits,
                          ", Q x 100");
  }
}

// Without programmatic dependent launch the combine waits the ordinary way: same results.
TEST(GpuDecodeBatch, WithoutProgrammaticDependentLaunch) {
  LADDER_REQUIRE_GPU();
  LADDER_TEST_SEED(seed);
  const fdec::Problem p = fdec::make_problem({2, 8, 2, 1, 128, 0}, {2000, 77}, seed);
  fdec::OnDevice dev(p);
  fdec::Options with, without;
  with.splits = without.splits = 5;
  without.pdl = false;
  dev.run(CacheKind::Contiguous, with);
  const auto O = dev.O_host(), L = dev.LSE_host();
  dev.run(CacheKind::Contiguous, without);
  EXPECT_EQ(dev.O_host(), O);  // the same arithmetic: the same bits
  EXPECT_EQ(dev.LSE_host(), L);
}

// One split walks every key of a long cache in one block: the running max settles early, and
// from then on each step's alpha must be exactly 1, or l drifts step after step (O does not
// show it: O / l cancels the drift; LSE = m + log l does). The LSE error with one split over
// 131072 keys stays within 2x that of the automatic split on the same inputs.
TEST(GpuDecodeBatch, OneSplitOverALongCacheKeepsLseExact) {
  LADDER_REQUIRE_GPU();
  LADDER_TEST_SEED(seed);
  if (ladder::small_mode()) GTEST_SKIP() << "small mode (compute-sanitizer): 131072 keys is too long";
  const int N = 131072;
  const fdec::Problem p = fdec::make_problem({1, 8, 1, 1, 128, 0}, {N}, seed);
  const fdec::Reference ref = fdec::reference(p);
  fdec::OnDevice dev(p);
  double err[2];
  for (int one : {0, 1}) {
    fdec::Options opt;
    opt.splits = one ? 1 : 0;
    dev.run(CacheKind::Contiguous, opt);
    const ladder::Comparison cL = fdec::compare_lse(dev.LSE_host(), ref.LSE);
    EXPECT_TRUE(cL.within(fdec::kLse)) << (one ? "one split: " : "auto splits: ")
                                       << fdec::describe(p.s, cL, true, dev.LSE_host(), ref.LSE);
    err[one] = cL.rel_l2;
  }
  EXPECT_LE(err[1], 2.0 * err[0] + 1e-9) << "LSE rel. error: one split " << err[1] << ", auto splits " << err[0];
}

// The no-split baseline of the README: chapter 10's forward on the decode shape.
TEST(GpuDecodeBatch, Chapter10ForwardOnTheDecodeShape) {
  LADDER_REQUIRE_GPU();
  LADDER_TEST_SEED(seed);
  const int N = ladder::small_mode() ? 100 : 2000;
  for (int n_q : {1, 4}) {
    const fdec::Problem p = fdec::make_problem({2, 8, 2, n_q, 128, 0}, {N, N}, seed + n_q);
    const fdec::Reference ref = fdec::reference(p);
    fdec::OnDevice dev(p);
    dev.run_fa2tc();
    const auto O = dev.O_host(), L = dev.LSE_host();
    const ladder::Comparison cO = ladder::compare(O, ref.O), cL = fdec::compare_lse(L, ref.LSE);
    EXPECT_TRUE(cO.within(ladder::kBf16Attention)) << fdec::describe(p.s, cO, false, O, ref.O);
    EXPECT_TRUE(cL.within(fdec::kLse)) << fdec::describe(p.s, cL, true, L, ref.LSE);
  }
}

}  // namespace
