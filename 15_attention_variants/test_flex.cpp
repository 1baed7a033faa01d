// Chapter 15's kernels against the fp64 reference with the same masks and modifiers (inputs
// rounded to bf16, as the GPU sees them), and the checks they make before any launch.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "block_mask.h"
#include "cases.h"
#include "compare.h"
#include "flex.h"
#include "flex_problem.h"
#include "gtest_helpers.h"
#include "mods.h"
#include "reference_attention.h"

namespace {

using ladder::attention_shape;
using ladder::AttentionShape;
using variants::Kind;
using variants::Variant;

#define VARIANTS_REQUIRE_SM90A()                                              \
  do {                                                                        \
    LADDER_REQUIRE_GPU();                                                     \
    if (const std::string why = variants::unavailable_reason(); !why.empty()) \
      GTEST_SKIP() << "GPU test skipped: " << why;                            \
  } while (0)

Variant variant(Kind k) {
  Variant v;
  v.kind = k;
  return v;
}

// Forward (O, L) and backward (dQ, dK, dV) of one variant against the fp64 reference, O and L
// from this chapter's forward as in training. Rows that see no key: O = 0, L = -inf, dQ = 0.
// report: print each output's error against fp64 (the broadcast test's figures for its readers).
void expect_correct(const Variant& v, const AttentionShape& s, std::uint64_t seed, bool report = false) {
  const fa2tc::Problem p = fa2tc::make_problem(s, seed);
  variants::OnDevice dev(p, v);
  const variants::Mods m = variants::reference_mods(v, dev.s, dev.host);
  const std::string what = v.str() + ", " + dev.s.str();
  const auto ref = ladder::attention_forward_reference(dev.s, p.Q.data(), p.K.data(), p.V.data(), m);
  dev.forward();
  const std::vector<float> O = dev.O_host();
  EXPECT_TRUE(ladder::matches(O, ref.O, ladder::kBf16Attention)) << "O, " << what;
  const ladder::Comparison L = ladder::compare_lse(dev.L_host(), ref.L);
  EXPECT_TRUE(L.within(ladder::kLse)) << "L, " << what << ": " << L.str();
  const auto grads = ladder::attention_backward_reference(dev.s, p.Q.data(), p.K.data(), p.V.data(), p.dO.data(), m);
  dev.backward();
  const std::vector<float> dQ = dev.dQ_host(), dK = dev.dK_host(), dV = dev.dV_host();
  EXPECT_TRUE(ladder::matches(dQ, grads.dQ, ladder::kBf16AttentionGrad)) << "dQ, " << what;
  EXPECT_TRUE(ladder::matches(dK, grads.dK, ladder::kBf16AttentionGrad)) << "dK, " << what;
  EXPECT_TRUE(ladder::matches(dV, grads.dV, ladder::kBf16AttentionGrad)) << "dV, " << what;
  if (!report) return;
  const ladder::Comparison c[] = {ladder::compare(O, ref.O), L, ladder::compare(dQ, grads.dQ),
                                  ladder::compare(dK, grads.dK), ladder::compare(dV, grads.dV)};
  std::printf("%s: rel_l2 O %.2e, L %.2e, dQ %.2e, dK %.2e, dV %.2e; non-finite %zu\n", what.c_str(), c[0].rel_l2,
              c[1].rel_l2, c[2].rel_l2, c[3].rel_l2, c[4].rel_l2,
              c[0].nonfinite + c[1].nonfinite + c[2].nonfinite + c[3].nonfinite + c[4].nonfinite);
}

// ---- CPU: bad input, before any launch ----------------------------------------------------------

TEST(CpuFlex, TheBlockMaskMustMatchTheKernelsTiles) {
  const AttentionShape s = attention_shape(1, 2, 2, 300, 300, 128, false);
  variants::BlockMaskView v;
  v.num = reinterpret_cast<const int*>(16);  // never read: the checks come first
  v.B_r = 64, v.B_c = 128, v.rows = 5, v.len = 3;
  try {
    variants::detail::check_variant("f", s, v, variants::kForwardB_r, false);
    FAIL() << "a 64-row block mask for the forward was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("128 x 128"), std::string::npos) << e.what();
  }
  v.rows = 3, v.len = 5;  // backward: per key tile (3) the query tiles (5)
  EXPECT_NO_THROW(variants::detail::check_variant("b", s, v, variants::kBackwardB_r, true));
  v.len = 4;
  EXPECT_THROW(variants::detail::check_variant("b", s, v, variants::kBackwardB_r, true), std::invalid_argument);
}

TEST(CpuFlex, CausalShapesHeadDimsAndGqaHeadMasksAreRefused) {
  variants::BlockMaskView v;
  v.num = reinterpret_cast<const int*>(16);
  v.B_r = 128, v.B_c = 128, v.rows = 1, v.len = 1;
  const auto check = [&](const AttentionShape& s) { variants::detail::check_variant("f", s, v, 128, false); };
  EXPECT_THROW(check(attention_shape(1, 1, 1, 100, 100, 128, true)), std::invalid_argument);  // causal: a mask here
  EXPECT_THROW(check(attention_shape(1, 1, 1, 100, 100, 96, false)), std::invalid_argument);  // d in {64, 128}
  EXPECT_NO_THROW(check(attention_shape(1, 1, 1, 100, 100, 128, false)));
  EXPECT_NO_THROW(check(attention_shape(1, 1, 1, 100, 100, 64, false)));
  v.H = 4, v.B_r = 64, v.rows = 1, v.len = 2;  // a head-dependent mask, GQA 4:2
  EXPECT_THROW(variants::detail::check_variant("b", attention_shape(1, 4, 2, 100, 100, 128, false), v, 64, true),
               std::invalid_argument);
}

// The forward's walk visits every row of every head once, heaviest first within each group: across
// all heads where the rows' work varies widely (causal, documents), head by head where it does not.
TEST(CpuFlex, TheWalkOrderIsAPermutationHeaviestFirst) {
  std::vector<int> doc(4096);
  for (int t = 0; t < 4096; ++t) doc[t] = t < 1000 ? 0 : t < 1100 ? 1 : 2;
  const std::vector<std::pair<variants::BlockMask, bool>> cases = {
      {variants::make_block_mask(variants::Causal{0}, 1, 1, 4096, 4096, 128, 128), true},
      {variants::make_block_mask(variants::SlidingWindow{1024, 0, 0}, 1, 1, 8192, 8192, 128, 128), false},
      {variants::make_block_mask(
           variants::CausalDocument{variants::Document{doc.data(), doc.data(), 0, 0}, variants::Causal{0}}, 1, 1, 4096,
           4096, 128, 128),
       true},
      {variants::make_block_mask(variants::NoMask{}, 2, 3, 300, 300, 128, 128), false}};
  for (const auto& [m, across] : cases) {
    EXPECT_EQ(variants::detail::sort_across_heads(m), across) << "T_r " << m.T_r;
    const std::vector<int> order = variants::detail::heaviest_first(m, across);
    std::vector<int> sorted = order;
    std::sort(sorted.begin(), sorted.end());
    for (int r = 0; r < int(sorted.size()); ++r) ASSERT_EQ(sorted[r], r) << "not a permutation";
    const std::size_t group = across ? order.size() : std::size_t(m.T_r);
    const auto tiles = [&](int r) { return m.kv_num_blocks[r] + m.full_kv_num_blocks[r]; };
    for (std::size_t k = 1; k < order.size(); ++k) {
      if (k % group == 0) continue;  // a new group starts
      EXPECT_GE(tiles(order[k - 1]), tiles(order[k])) << "position " << k;
    }
    if (!across) {
      for (std::size_t k = 0; k < order.size(); ++k) EXPECT_EQ(order[k] / m.T_r, int(k / m.T_r)) << "left its head";
    }
  }
}

// The forward's walk with a block mask shared over the batch, the heads, both or neither: every
// (row tile, head) of the shape once, each on a row of its own list, across heads or head by head.
TEST(CpuFlex, TheWalkCoversEveryHeadForEveryBroadcast) {
  const int B = 3, H = 4, N = 700;
  const variants::SlidingWindow window{100, 0, 0};
  for (int B_m : {1, B})
    for (int H_m : {1, H}) {
      const variants::BlockMask m = variants::make_block_mask(window, B_m, H_m, N, N, 128, 128);
      for (bool across : {false, true}) {
        const std::vector<int> order = variants::detail::heaviest_first(m, across);
        ASSERT_EQ(int(order.size()), m.T_r * B_m * H_m);
        std::vector<int> seen(std::size_t(m.T_r) * B * H, 0);
        for (int u = 0; u < m.T_r * B * H; ++u) {
          const variants::WalkPlace w = variants::walk_place(u, order.data(), across, m.T_r, B, H, B_m, H_m);
          ASSERT_TRUE(w.i >= 0 && w.i < m.T_r && w.head >= 0 && w.head < B * H)
              << "B_m " << B_m << " H_m " << H_m << " place " << u;
          ++seen[std::size_t(w.head) * m.T_r + w.i];
          // The row the walk took is the row tile i of the list that (b, h) reads.
          const int b = w.head / H, h = w.head % H, list = (B_m == 1 ? 0 : b) * H_m + (H_m == 1 ? 0 : h);
          const int r = order[across ? u / ((B / B_m) * (H / H_m)) : u % (m.T_r * B_m * H_m)];
          EXPECT_EQ(r, list * m.T_r + w.i) << "B_m " << B_m << " H_m " << H_m << " place " << u;
        }
        for (std::size_t k = 0; k < seen.size(); ++k)
          ASSERT_EQ(seen[k], 1) << "B_m " << B_m << " H_m " << H_m << " across " << across << ": (head, i) " << k;
      }
    }
}

// The backward's launch order: per list, every key tile once, the longest walk first.
TEST(CpuFlex, TheBackwardLaunchesTheLongestWalksFirst) {
  std::vector<int> doc(4096);
  for (int t = 0; t < 4096; ++t) doc[t] = t < 1000 ? 0 : t < 1100 ? 1 : 2;
  const variants::BlockMask m = variants::make_block_mask(
      variants::CausalDocument{variants::Document{doc.data(), doc.data(), 0, 0}, variants::Causal{0}}, 1, 1, 4096, 4096,
      64, 128);
  const std::vector<int> order = variants::detail::longest_walks_first(m);
  ASSERT_EQ(int(order.size()), m.T_c);
  std::vector<int> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  for (int j = 0; j < m.T_c; ++j) ASSERT_EQ(sorted[j], j) << "not a permutation";
  const auto walk = [&](int j) { return m.q_num_blocks[j] + m.full_q_num_blocks[j]; };
  for (int r = 1; r < m.T_c; ++r) EXPECT_GE(walk(order[r - 1]), walk(order[r])) << "place " << r;
  EXPECT_NE(order[0], 0);  // key tile 0 walks document 0 alone; the start of document 2 walks further
}

// The forward's snake draft: a permutation of the places, and on the documents' walk (rows sorted
// heaviest first), CTAs whose tile counts come out more even than when dealt round after round.
TEST(CpuFlex, TheSnakeDraftEvensOutTheCTAs) {
  for (int G : {1, 7, 132})
    for (int places : {1, 6, 7, 131, 264, 1000}) {
      std::vector<int> seen(places, 0);
      for (int t = 0; t < places; ++t) ++seen[variants::snake_place(t, G, places)];
      for (int s = 0; s < places; ++s) ASSERT_EQ(seen[s], 1) << "G " << G << " places " << places;
    }
  const variants::cases::Case docs = variants::cases::headline()[1];
  const variants::ModsData h(docs.v, docs.s);
  const variants::BlockMask m = variants::block_mask(docs.v, docs.s, h, variants::kForwardB_r);
  const std::vector<int> order = variants::detail::heaviest_first(m, true);
  const int heads = docs.s.heads(), places = m.T_r * heads, G = 132;
  const auto tiles = [&](int s) {  // a shared list across heads: place s is row order[s / heads]
    const int r = order[s / heads];
    return m.kv_num_blocks[r] + m.full_kv_num_blocks[r];
  };
  std::vector<long> dealt(G, 0), snake(G, 0);
  long total = 0;
  for (int t = 0; t < places; ++t) {
    dealt[t % G] += tiles(t), snake[t % G] += tiles(variants::snake_place(t, G, places));
    total += tiles(t);
  }
  const double mean = double(total) / G;
  const double dealt_max = *std::max_element(dealt.begin(), dealt.end()) / mean,
               snake_max = *std::max_element(snake.begin(), snake.end()) / mean;
  EXPECT_LT(snake_max, dealt_max);
  EXPECT_LT(snake_max, 1.03);
}

// ---- GPU: against the fp64 reference ------------------------------------------------------------

// Every built-in on a length that is not a multiple of any tile, N_q = N_kv and both ways apart
// (rows that see no key: window, causal and ALiBi with N_q > N_kv), at both head dims.
TEST(GpuFlex, EveryBuiltInMatchesTheReference) {
  VARIANTS_REQUIRE_SM90A();
  LADDER_TEST_SEED(seed);
  const int N = ladder::small_mode() ? 150 : 1000, M = ladder::small_mode() ? 70 : 300;
  for (int d : {128, 64})
    for (Kind k : {Kind::Dense, Kind::Causal, Kind::Window, Kind::PrefixLM, Kind::Softcap, Kind::Alibi, Kind::Tiles}) {
      Variant v = variant(k);
      v.window = 100, v.prefix = 37, v.cap = 2.0f;  // a cap the logits reach: tanh bends them
      for (const auto& [n, n_kv] : {std::pair{N, N}, std::pair{N, M}, std::pair{M, N}})
        expect_correct(v, attention_shape(2, 4, 2, n, n_kv, d, false), seed);
    }
}

// Documents: lengths 1, 17, a long one and others (one packed sequence), GQA 8:2; the mask with
// the documents' spans and from their ids alone.
TEST(GpuFlex, DocumentsOfEveryLength) {
  VARIANTS_REQUIRE_SM90A();
  LADDER_TEST_SEED(seed);
  Variant v = variant(Kind::Documents);
  v.doc_lengths = ladder::small_mode() ? std::vector<int>{1, 17, 130, 1, 50} : std::vector<int>{1, 17, 1000, 1, 300, 2};
  int N = 0;
  for (int n : v.doc_lengths) N += n;
  for (int d : {128, 64})
    for (bool ids_only : {false, true}) {  // the varlen layout (spans), and the ids alone
      v.doc_ids_only = ids_only;
      expect_correct(v, attention_shape(1, 8, 2, N, N, d, false), seed);
    }
}

// Windows of width 1 (each query its own key alone), and wider than the sequence (causal).
TEST(GpuFlex, WindowsFromOneKeyToWiderThanTheSequence) {
  VARIANTS_REQUIRE_SM90A();
  LADDER_TEST_SEED(seed);
  const int N = ladder::small_mode() ? 97 : 777;
  for (int w : {0, 1, 2 * N}) {
    Variant v = variant(Kind::Window);
    v.window = w;
    expect_correct(v, attention_shape(1, 2, 1, N, N, 128, false), seed);
  }
}

// The forward's persistent CTAs walk several row tiles each when there are more than 132, and a
// row tile with no key tile stores O = 0 at once. Windows of 20 keys on 300 queries and 100 keys
// leave the first 200 queries without keys: 3 x 128 row tiles, an empty one, a partly empty one
// and a full one per head (also under the sanitizers). Then sparse tiles, 9 x 32 row tiles of a
// few key tiles each: a CTA's TMA stores of O follow each other a few steps apart.
TEST(GpuFlex, PersistentWalksSeveralRowTilesPerCta) {
  VARIANTS_REQUIRE_SM90A();
  LADDER_TEST_SEED(seed);
  Variant window = variant(Kind::Window);
  window.window = 20;
  expect_correct(window, attention_shape(2, 64, 64, 300, 100, 128, false), seed);
}
TEST(GpuFlex, PersistentWalksOfSparseTiles) {
  VARIANTS_REQUIRE_SM90A();
  LADDER_TEST_SEED(seed);
  if (ladder::small_mode())
    GTEST_SKIP() << "small mode (compute-sanitizer): PersistentWalksSeveralRowTilesPerCta covers it";
  Variant tiles = variant(Kind::Tiles);
  tiles.tile_density = 0.3;
  expect_correct(tiles, attention_shape(1, 32, 32, 1100, 1100, 128, false), seed);
}

// A block mask with a list per batch, per head, both or neither (FlexAttention's B, H of 1 or
// the shape's), forward and backward against the element mask's fp64 reference: a window that
// depends on neither (MHA; GQA with one list for the heads), and documents that differ per batch.
// (The forward once read its walk past the lists where exactly one extent was shared.)
TEST(GpuFlex, BlockMasksSharedOverEitherExtent) {
  VARIANTS_REQUIRE_SM90A();
  LADDER_TEST_SEED(seed);
  const bool small = ladder::small_mode();
  for (bool per_batch : {false, true})
    for (bool per_head : {false, true}) {
      Variant window = variant(Kind::Window);
      window.window = 100, window.mask_per_batch = per_batch, window.mask_per_head = per_head;
      expect_correct(window, attention_shape(2, 4, 4, small ? 300 : 600, small ? 300 : 600, 64, false), seed, true);
      if (!per_head)  // GQA 4:2: a CTA of the backward walks one list for all the heads of its group
        expect_correct(window, attention_shape(2, 4, 2, small ? 300 : 600, small ? 300 : 600, 128, false), seed, true);
      if (!per_batch) continue;
      Variant docs = variant(Kind::Documents);
      docs.doc_ids_only = true, docs.docs_per_batch = true, docs.mask_per_batch = true, docs.mask_per_head = per_head;
      docs.doc_lengths = small ? std::vector<int>{40, 150, 1, 109} : std::vector<int>{300, 17, 700, 1, 482};
      int N = 0;
      for (int n : docs.doc_lengths) N += n;
      expect_correct(docs, attention_shape(2, 2, 2, N, N, 128, false), seed, true);
    }
}

// Large sequences and sparse tiles: the walk skips whole tiles (every row keeps at least one).
TEST(GpuFlex, SparseTilesAndALongWindow) {
  VARIANTS_REQUIRE_SM90A();
  LADDER_TEST_SEED(seed);
  if (ladder::small_mode()) GTEST_SKIP() << "small mode (compute-sanitizer): the other tests cover the kernels";
  Variant tiles = variant(Kind::Tiles);
  tiles.tile_density = 0.1;
  expect_correct(tiles, attention_shape(1, 4, 4, 2000, 2000, 128, false), seed);
  Variant window = variant(Kind::Window);
  window.window = 1024;
  expect_correct(window, attention_shape(1, 2, 1, 4096, 4096, 128, false), seed);
}

}  // namespace
