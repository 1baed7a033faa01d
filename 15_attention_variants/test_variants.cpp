#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "attention_shape.h"
#include "block_mask.h"
#include "compare.h"
#include "mods.h"
#include "random.h"
#include "reference_attention.h"
#include "reference_variants.h"

namespace {

using ladder::attention_shape;
using ladder::AttentionShape;
using variants::Mods;

struct Inputs {
  std::vector<float> Q, K, V, dO;
};
Inputs inputs(const AttentionShape& s, std::uint64_t seed) {
  return {ladder::random_uniform(s.elems(), seed), ladder::random_uniform(s.kv_elems(), seed + 1),
          ladder::random_uniform(s.kv_elems(), seed + 2), ladder::random_uniform(s.elems(), seed + 3)};
}
double max_abs_diff(const std::vector<double>& a, const std::vector<double>& b) {
  double m = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!(std::isinf(a[i]) && a[i] == b[i])) m = std::max(m, std::abs(a[i] - b[i]));
  return m;
}

// ---- the references ---------------------------------------------------------------------------------

// Mods that change nothing (a mask that sees every key, the identity modifier), given as functors:
// plain attention, to the last bits that matter.
TEST(CpuVariants, ModsThatChangeNothingGivePlainAttention) {
  for (const AttentionShape& s :
       {attention_shape(2, 4, 2, 37, 37, 16, false), attention_shape(1, 2, 1, 20, 45, 8, false)}) {
    const Inputs x = inputs(s, 1);
    const auto want = ladder::attention_forward_reference(s, x.Q.data(), x.K.data(), x.V.data());
    const auto got = ladder::attention_forward_reference(s, x.Q.data(), x.K.data(), x.V.data(),
                                                         variants::mods(variants::NoMask{}, variants::NoScoreMod{}));
    EXPECT_LT(max_abs_diff(got.O, want.O), 1e-12) << s.str();
    EXPECT_LT(max_abs_diff(got.L, want.L), 1e-12) << s.str();
  }
}

// The Causal mask (bottom-right, offset = N_kv - N) is the chapters' causal attention, forward
// and backward, N_q != N_kv both ways (rows that see no key included).
TEST(CpuVariants, TheCausalMaskIsTheChaptersCausalAttention) {
  for (const auto& [N, N_kv] : {std::pair{33, 33}, std::pair{40, 25}, std::pair{25, 40}}) {
    const AttentionShape plain = attention_shape(1, 4, 2, N, N_kv, 16, false);
    AttentionShape causal = plain;
    causal.causal = true;
    const Inputs x = inputs(plain, 2);
    const Mods m = variants::mods(variants::Causal{N_kv - N}, variants::NoScoreMod{});
    const auto want = ladder::attention_forward_reference(causal, x.Q.data(), x.K.data(), x.V.data());
    const auto got = ladder::attention_forward_reference(plain, x.Q.data(), x.K.data(), x.V.data(), m);
    EXPECT_LT(max_abs_diff(got.O, want.O), 1e-12);
    EXPECT_LT(max_abs_diff(got.L, want.L), 1e-12);
    const auto gw = ladder::attention_backward_reference(causal, x.Q.data(), x.K.data(), x.V.data(), x.dO.data());
    const auto gg = ladder::attention_backward_reference(plain, x.Q.data(), x.K.data(), x.V.data(), x.dO.data(), m);
    EXPECT_LT(max_abs_diff(gg.dQ, gw.dQ), 1e-12);
    EXPECT_LT(max_abs_diff(gg.dK, gw.dK), 1e-12);
    EXPECT_LT(max_abs_diff(gg.dV, gw.dV), 1e-12);
  }
}

// The backward with a score modifier (softcap, ALiBi) and a window, against central differences
// of loss = sum(O o dO) on doubles, at sampled elements of Q, K and V.
TEST(CpuVariants, TheBackwardWithModifiersMatchesFiniteDifferences) {
  const AttentionShape s = attention_shape(1, 2, 1, 9, 11, 8, false);
  const Inputs x = inputs(s, 3);
  const float slopes[2] = {variants::alibi_slope(0, 2), variants::alibi_slope(1, 2)};
  const std::vector<Mods> cases = {
      variants::mods(variants::SlidingWindow{3, 1, 2}, variants::Softcap{0.5f}),
      variants::mods(variants::Causal{2}, variants::Alibi{slopes, 2}),
  };
  for (const Mods& m : cases) {
    const auto g = ladder::attention_backward_reference(s, x.Q.data(), x.K.data(), x.V.data(), x.dO.data(), m);
    auto loss = [&](const std::vector<double>& Q, const std::vector<double>& K, const std::vector<double>& V) {
      const auto f = ladder::attention_forward_reference(s, Q.data(), K.data(), V.data(), m);
      double l = 0;
      for (std::size_t i = 0; i < f.O.size(); ++i) l += f.O[i] * x.dO[i];
      return l;
    };
    const std::vector<double> Q(x.Q.begin(), x.Q.end()), K(x.K.begin(), x.K.end()), V(x.V.begin(), x.V.end());
    const double eps = 1e-6;
    for (int which = 0; which < 3; ++which) {
      const std::vector<double>& grad = which == 0 ? g.dQ : which == 1 ? g.dK : g.dV;
      for (std::size_t i = 0; i < grad.size(); i += 7) {
        std::vector<double> a = which == 0 ? Q : which == 1 ? K : V, b = a;
        a[i] += eps, b[i] -= eps;
        const double num = which == 0   ? loss(a, K, V) - loss(b, K, V)
                           : which == 1 ? loss(Q, a, V) - loss(Q, b, V)
                                        : loss(Q, K, a) - loss(Q, K, b);
        EXPECT_NEAR(grad[i], num / (2 * eps), 1e-7) << "tensor " << which << " element " << i;
      }
    }
  }
}

// A query whose window holds no key: O = 0, L = -inf, and no gradient through it.
TEST(CpuVariants, ARowWithNoVisibleKeyHasZeroOutputAndGradients) {
  const AttentionShape s = attention_shape(1, 1, 1, 8, 8, 8, false);
  const Inputs x = inputs(s, 4);
  // Keys at most q - 5: queries 0..4 see none.
  const Mods m = variants::mods(variants::SlidingWindow{100, -5, 0}, variants::NoScoreMod{});
  const auto f = ladder::attention_forward_reference(s, x.Q.data(), x.K.data(), x.V.data(), m);
  const auto g = ladder::attention_backward_reference(s, x.Q.data(), x.K.data(), x.V.data(), x.dO.data(), m);
  for (int q = 0; q < 5; ++q) {
    EXPECT_EQ(f.L[q], -std::numeric_limits<double>::infinity());
    for (int c = 0; c < 8; ++c) {
      EXPECT_EQ(f.O[q * 8 + c], 0.0);
      EXPECT_EQ(g.dQ[q * 8 + c], 0.0);
    }
  }
  EXPECT_TRUE(std::isfinite(f.L[5]));
}

// ---- variable-length batches --------------------------------------------------------------------

// A packed batch of lengths {1, 17, 0, 40} (queries) against {1, 17, 5, 29} (keys), causal per
// sequence: every sequence as the padded reference computes it alone; the one with no query
// contributes nothing; dK, dV of its keys are zero.
TEST(CpuVariants, VarlenIsEachSequenceOnItsOwn) {
  const variants::Varlen v = variants::make_varlen({1, 17, 0, 40}, {1, 17, 5, 29}, 4, 2, 8);
  const std::vector<float> Q = ladder::random_uniform(std::size_t(v.total_q()) * v.H * v.d, 5),
                           K = ladder::random_uniform(std::size_t(v.total_k()) * v.H_kv * v.d, 6),
                           V = ladder::random_uniform(std::size_t(v.total_k()) * v.H_kv * v.d, 7),
                           dO = ladder::random_uniform(std::size_t(v.total_q()) * v.H * v.d, 8);
  auto causal = [&](int b) { return variants::Causal{v.len_k(b) - v.len_q(b)}; };
  Mods m;
  m.mask = [&](int b, int h, int q, int k) { return causal(b)(b, h, q, k); };
  const auto f = variants::varlen_forward_reference(v, Q.data(), K.data(), V.data(), m);
  const auto g = variants::varlen_backward_reference(v, Q.data(), K.data(), V.data(), dO.data(), m);
  for (int b = 0; b < v.batch(); ++b) {
    if (v.len_q(b) == 0) continue;
    AttentionShape s = attention_shape(1, v.H, v.H_kv, v.len_q(b), v.len_k(b), v.d, true);
    auto take = [&](const std::vector<float>& X, int first, int len, int heads) {  // [1, heads, len, d]
      std::vector<float> out(std::size_t(heads) * len * v.d);
      for (int h = 0; h < heads; ++h)
        for (int t = 0; t < len; ++t)
          for (int c = 0; c < v.d; ++c)
            out[(std::size_t(h) * len + t) * v.d + c] = X[(std::size_t(first + t) * heads + h) * v.d + c];
      return out;
    };
    const auto q = take(Q, v.cu_q[b], v.len_q(b), v.H), k = take(K, v.cu_k[b], v.len_k(b), v.H_kv),
               val = take(V, v.cu_k[b], v.len_k(b), v.H_kv);
    const auto want = ladder::attention_forward_reference(s, q.data(), k.data(), val.data());
    for (int h = 0; h < v.H; ++h)
      for (int t = 0; t < v.len_q(b); ++t) {
        const double got_L = f.L[std::size_t(h) * v.total_q() + v.cu_q[b] + t];
        const double want_L = want.L[std::size_t(h) * v.len_q(b) + t];
        EXPECT_TRUE(got_L == want_L || std::abs(got_L - want_L) <= 1e-12) << got_L << " vs " << want_L;  // -inf too
        for (int c = 0; c < v.d; ++c)
          EXPECT_NEAR(f.O[(std::size_t(v.cu_q[b] + t) * v.H + h) * v.d + c],
                      want.O[(std::size_t(h) * v.len_q(b) + t) * v.d + c], 1e-12);
      }
  }
  for (int t = v.cu_k[2]; t < v.cu_k[3]; ++t)  // sequence 2: keys, no query
    for (int c = 0; c < v.H_kv * v.d; ++c) EXPECT_EQ(g.dK[std::size_t(t) * v.H_kv * v.d + c], 0.0);
}

// What the kernels compute for packed documents is flash-attention's varlen batch: the sequences
// {1, 17, 4093, 0} (equal query and key lengths, causal each), packed token-major ([total, H, d],
// cu_seqlens) for the varlen reference, and head-major ([1, H, total, d]) as one sequence with the
// CausalDocument mask for the kernels' layout, give the same O and L, row for row.
TEST(CpuVariants, PackedDocumentsAreTheVarlenBatch) {
  const std::vector<int> lengths = {1, 17, 4093, 0};
  const variants::Varlen v = variants::make_varlen(lengths, lengths, 2, 1, 16);
  const int T = v.total_q();
  const std::vector<float> Q = ladder::random_uniform(std::size_t(T) * v.H * v.d, 11),
                           K = ladder::random_uniform(std::size_t(T) * v.H_kv * v.d, 12),
                           V = ladder::random_uniform(std::size_t(T) * v.H_kv * v.d, 13);
  Mods per_sequence;
  per_sequence.mask = [](int, int, int q, int k) { return k <= q; };
  const auto varlen = variants::varlen_forward_reference(v, Q.data(), K.data(), V.data(), per_sequence);

  auto head_major = [&](const std::vector<float>& X, int heads) {  // [total, heads, d] -> [heads, total, d]
    std::vector<float> out(X.size());
    for (int t = 0; t < T; ++t)
      for (int h = 0; h < heads; ++h)
        for (int c = 0; c < v.d; ++c)
          out[(std::size_t(h) * T + t) * v.d + c] = X[(std::size_t(t) * heads + h) * v.d + c];
    return out;
  };
  std::vector<int> doc;
  for (int b = 0; b < v.batch(); ++b) doc.insert(doc.end(), v.len_q(b), b);
  const AttentionShape s = attention_shape(1, v.H, v.H_kv, T, T, v.d, false);
  const auto q = head_major(Q, v.H), k = head_major(K, v.H_kv), val = head_major(V, v.H_kv);
  const auto packed = ladder::attention_forward_reference(
      s, q.data(), k.data(), val.data(),
      variants::mods(variants::CausalDocument{variants::Document{doc.data(), doc.data(), 0, 0}, variants::Causal{0}},
                     variants::NoScoreMod{}));
  double worst = 0;
  for (int h = 0; h < v.H; ++h)
    for (int t = 0; t < T; ++t) {
      EXPECT_NEAR(packed.L[std::size_t(h) * T + t], varlen.L[std::size_t(h) * T + t], 1e-12);
      for (int c = 0; c < v.d; ++c)
        worst = std::max(worst, std::abs(packed.O[(std::size_t(h) * T + t) * v.d + c] -
                                         varlen.O[(std::size_t(t) * v.H + h) * v.d + c]));
    }
  EXPECT_LT(worst, 1e-12);
}

TEST(CpuVariants, VarlenRefusesBadLengths) {
  EXPECT_THROW(variants::make_varlen({1, 2}, {1}, 2, 1, 8), std::invalid_argument);
  EXPECT_THROW(variants::make_varlen({1, -2}, {1, 2}, 2, 1, 8), std::invalid_argument);
  EXPECT_THROW(variants::make_varlen({1}, {1}, 3, 2, 8), std::invalid_argument);
}

// ---- block masks ----------------------------------------------------------------------------------

// Every tile's kind against its elements, for every built-in mask; the visible count against the
// element count; the lists sorted.
template <class Mask>
void expect_block_mask_matches(const Mask& mask, int B, int H, int N, int N_kv, const char* what) {
  const variants::BlockMask bm = variants::make_block_mask(mask, B, H, N, N_kv);
  long long visible = 0;
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h)
      for (int i = 0; i < bm.T_r; ++i) {
        const std::size_t row = (std::size_t(b) * H + h) * bm.T_r + i;
        for (int n = 1; n < bm.kv_num_blocks[row]; ++n)
          EXPECT_LT(bm.kv_indices[row * bm.T_c + n - 1], bm.kv_indices[row * bm.T_c + n]) << what;
        for (int j = 0; j < bm.T_c; ++j) {
          int seen = 0, all = 0;
          for (int q = i * 64; q < std::min(N, (i + 1) * 64); ++q)
            for (int k = j * 128; k < std::min(N_kv, (j + 1) * 128); ++k) seen += mask(b, h, q, k), ++all;
          visible += seen;
          const bool whole = (i + 1) * 64 <= N && (j + 1) * 128 <= N_kv;
          const variants::TileKind want = seen == 0              ? variants::TileKind::Empty
                                          : seen == all && whole ? variants::TileKind::Full
                                                                 : variants::TileKind::Partial;
          EXPECT_EQ(int(bm.kind(b, h, i, j)), int(want))
              << what << " b " << b << " h " << h << " tile " << i << "," << j;
        }
      }
  EXPECT_EQ(bm.visible, visible) << what;
  // The transposed lists (the backward's walk) hold the same tiles, sorted.
  for (int bh = 0; bh < B * H; ++bh)
    for (int j = 0; j < bm.T_c; ++j) {
      const std::size_t col = std::size_t(bh) * bm.T_c + j;
      int prev = -1;
      for (int n = 0; n < bm.q_num_blocks[col]; ++n) {
        const int i = bm.q_indices[col * bm.T_r + n];
        EXPECT_GT(i, prev) << what;
        prev = i;
        EXPECT_EQ(int(bm.kind(bh / H, bh % H, i, j)), int(variants::TileKind::Partial)) << what;
      }
      for (int n = 0; n < bm.full_q_num_blocks[col]; ++n)
        EXPECT_EQ(int(bm.kind(bh / H, bh % H, bm.full_q_indices[col * bm.T_r + n], j)), int(variants::TileKind::Full))
            << what;
    }
}

TEST(CpuVariants, BlockMasksOfTheBuiltInsMatchTheirElements) {
  const int N = 700, N_kv = 900;
  expect_block_mask_matches(variants::Causal{N_kv - N}, 1, 1, N, N_kv, "causal");
  expect_block_mask_matches(variants::SlidingWindow{100, 0, N_kv - N}, 1, 1, N, N_kv, "causal window 100");
  expect_block_mask_matches(variants::SlidingWindow{1, 1, 0}, 1, 1, N, N, "window of width 3");
  expect_block_mask_matches(variants::PrefixLM{150}, 1, 1, N, N, "prefix-LM 150");
  std::vector<int> doc(2 * N);
  for (int t = 0; t < 2 * N; ++t) doc[t] = t < N ? t / 97 : (t - N) / 250;  // two batches, different documents
  expect_block_mask_matches(variants::both(variants::Document{doc.data(), doc.data(), N, N}, variants::Causal{0}), 2, 1,
                            N, N, "causal documents");
}

// ---- spans --------------------------------------------------------------------------------------

// A mask's spans are its elements: for every query, the keys it sees are exactly keys(q) (cut to
// 0 .. N_kv - 1), and for every key, the queries that see it exactly queries(k).
template <class Mask>
void expect_spans_match(const Mask& mask, int N, int N_kv, const char* what) {
  static_assert(variants::kHasSpans<Mask>);
  for (int q = 0; q < N; ++q) {
    const variants::Span s = mask.keys(0, 0, q);
    for (int k = 0; k < N_kv; ++k)
      ASSERT_EQ(mask(0, 0, q, k), k >= s.lo && k <= s.hi) << what << ": keys of query " << q << ", key " << k;
  }
  for (int k = 0; k < N_kv; ++k) {
    const variants::Span s = mask.queries(0, 0, k);
    for (int q = 0; q < N; ++q)
      ASSERT_EQ(mask(0, 0, q, k), q >= s.lo && q <= s.hi) << what << ": queries of key " << k << ", query " << q;
  }
}

TEST(CpuVariants, SpansAreTheMasksElements) {
  const int N = 300, N_kv = 420;
  expect_spans_match(variants::NoMask{}, N, N_kv, "no mask");
  for (int offset : {0, N_kv - N, -50}) expect_spans_match(variants::Causal{offset}, N, N_kv, "causal");
  for (auto [left, right] : {std::pair{0, 0}, std::pair{1, 1}, std::pair{100, 0}, std::pair{7, 30}, std::pair{999, 0}})
    expect_spans_match(variants::SlidingWindow{left, right, N_kv - N}, N, N_kv, "window");
  for (int prefix : {0, 1, 37, 299, 1000}) expect_spans_match(variants::PrefixLM{prefix}, N, N, "prefix-LM");
  const std::vector<int> lengths = {1, 17, 130, 1, 151};  // sums to N
  std::vector<int> doc, cu{0};
  for (int d = 0; d < int(lengths.size()); ++d)
    doc.insert(doc.end(), lengths[d], d), cu.push_back(cu.back() + lengths[d]);
  const variants::PackedDocuments packed{doc.data(), cu.data()};
  expect_spans_match(packed, N, N, "packed documents");
  expect_spans_match(variants::CausalPackedDocuments{packed, variants::Causal{0}}, N, N, "causal packed documents");
  expect_spans_match(variants::both(variants::SlidingWindow{20, 0, 0}, packed), N, N, "a window within documents");
  // The same documents as ids alone: the same elements, no spans.
  const variants::CausalDocument ids{variants::Document{doc.data(), doc.data(), 0, 0}, variants::Causal{0}};
  const variants::CausalPackedDocuments spans{packed, variants::Causal{0}};
  for (int q = 0; q < N; ++q)
    for (int k = 0; k < N; ++k) ASSERT_EQ(ids(0, 0, q, k), spans(0, 0, q, k)) << q << ", " << k;
}

// Which masks give spans: those whose visible keys are one run per query; not masks read element
// by element (ids, tile sets), nor a pair where one of the two has none.
static_assert(variants::kHasSpans<variants::Causal> && variants::kHasSpans<variants::SlidingWindow> &&
              variants::kHasSpans<variants::PrefixLM> && variants::kHasSpans<variants::CausalPackedDocuments>);
static_assert(!variants::kHasSpans<variants::Document> && !variants::kHasSpans<variants::TileSet> &&
              !variants::kHasSpans<variants::CausalDocument>);

// What the kernels will skip: a causal mask leaves about half the tiles, a window of w keys about
// (w + B_c) / N_kv of them.
TEST(CpuVariants, BlockSparsityFollowsTheMask) {
  const int N = 8192;
  const double causal = variants::make_block_mask(variants::Causal{0}, 1, 1, N, N).density();
  const double window = variants::make_block_mask(variants::SlidingWindow{1024, 0, 0}, 1, 1, N, N).density();
  EXPECT_NEAR(causal, 0.5, 0.02);
  EXPECT_NEAR(window, (1024.0 + 128.0) / N, 0.02);
}

// ---- the modifiers themselves ------------------------------------------------------------------

TEST(CpuVariants, SoftcapIsBoundedAndItsGradientIsItsDerivative) {
  const variants::Softcap sc{50.0f};
  for (double s : {-500.0, -60.0, -1.0, 0.0, 3.0, 49.0, 1e4}) {
    EXPECT_LE(std::abs(sc(s, 0, 0, 0, 0)), 50.0);
    const double h = 1e-5, num = (sc(s + h, 0, 0, 0, 0) - sc(s - h, 0, 0, 0, 0)) / (2 * h);
    EXPECT_NEAR(sc.grad(s, 0, 0, 0, 0), num, 1e-8) << "s = " << s;
  }
  EXPECT_NEAR(sc(1.0, 0, 0, 0, 0), 1.0, 1e-3);  // ~s for |s| << cap
}

// The kernels' s / cap is s * (1/cap) in fp32 (no division per score): within an ulp of the
// quotient, at caps that are and are not powers of two; the fp64 reference keeps the quotient.
TEST(CpuVariants, SoftcapsProductIsWithinAnUlpOfTheQuotient) {
  for (float cap : {50.0f, 30.0f, 0.5f, 7.0f, 1e-3f}) {
    const variants::Softcap sc{cap};
    for (float s : {-1e4f, -97.3f, -1.0f, 1e-20f, 0.3f, 3.14159f, 49.9f, 6e3f}) {
      const float q = s / cap, p = sc.over_cap(s);
      EXPECT_LE(std::abs(p - q), std::abs(std::nextafter(q, 2 * q) - q)) << "s = " << s << ", cap = " << cap;
    }
    EXPECT_EQ(sc.over_cap(3.0), 3.0 / double(cap));
  }
}

TEST(CpuVariants, AlibiSlopesAreTheGeometricSequence) {
  EXPECT_FLOAT_EQ(variants::alibi_slope(0, 8), 0.5f);
  EXPECT_FLOAT_EQ(variants::alibi_slope(7, 8), 1.0f / 256.0f);
  const float slopes[1] = {0.25f};
  const variants::Alibi a{slopes, 0};
  EXPECT_DOUBLE_EQ(a(1.0, 0, 0, 10, 6), 1.0 - 0.25 * 4);  // 4 keys back
}

}  // namespace
