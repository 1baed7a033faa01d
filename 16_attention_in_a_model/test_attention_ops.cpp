// Which chapter's kernels answer a call, and what is refused before any launch: pure host logic,
// so it runs on every machine. The attention kernels are tested through the operators
// (tests/test_ops.py, on a GPU) and in their own chapters; the decoding step's append here (Gpu*),
// where compute-sanitizer can watch it.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "attention_ops.h"
#include "device_buffer.h"
#include "gtest_helpers.h"

namespace {

using ladder::AttentionShape;
using ops::Kernels;
using ops::Mask;
using ops::ScoreMod;
using ops::Variant;

AttentionShape shape(int d = 128, int N = 1000, int N_kv = 0, int H = 8, int H_kv = 0) {
  return ladder::attention_shape(2, H, H_kv ? H_kv : H, N, N_kv ? N_kv : N, d, false);
}
Variant with(Mask m, ScoreMod s = ScoreMod::None) {
  Variant v;
  static const int doc = 0;
  static const float slope = 0.5f;
  v.mask = m, v.score = s, v.doc = &doc, v.slopes = &slope, v.softcap = 30.0f;
  return v;
}
// A call's checks as forward() makes them: the parameters, then the choice.
Kernels choose(const AttentionShape& s, const Variant& v, bool hopper, bool any_gpu) {
  ops::check_parameters(v);
  return ops::choose(s, v.mask, v.score, hopper, any_gpu);
}
// The message of the std::invalid_argument `f` throws ("" when it throws none).
template <class F>
std::string refusal(F&& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(CpuChoose, DenseAndCausalRunOnFa3OnHopperAndOnFa2Elsewhere) {
  for (Mask m : {Mask::None, Mask::Causal})
    for (int d : {64, 128}) {
      EXPECT_EQ(choose(shape(d), with(m), true, true), Kernels::Fa3);
      EXPECT_EQ(choose(shape(d), with(m), false, true), Kernels::Fa2);
    }
  EXPECT_EQ(choose(shape(128, 300, 1000, 32, 8), with(Mask::Causal), true, true), Kernels::Fa3);  // GQA, N_kv > N
}

TEST(CpuChoose, MasksAndScoreModifiersRunOnChapter15) {
  for (Mask m : {Mask::SlidingWindow, Mask::PrefixLM, Mask::Documents})
    EXPECT_EQ(choose(shape(), with(m), true, true), Kernels::Flex);
  for (ScoreMod s : {ScoreMod::Softcap, ScoreMod::Alibi})
    EXPECT_EQ(choose(shape(), with(Mask::Causal, s), true, true), Kernels::Flex);
}

TEST(CpuChoose, RefusesWhatNoKernelTakesNamingWhatIsAllowed) {
  EXPECT_NE(refusal([] { choose(shape(96), with(Mask::Causal), true, true); }).find("d in {64, 128}"),
            std::string::npos);
  EXPECT_EQ(choose(shape(64), with(Mask::SlidingWindow), true, true), Kernels::Flex);  // both head dims
  EXPECT_NE(refusal([] { choose(shape(), with(Mask::PrefixLM), false, true); }).find("sm_90a"), std::string::npos);
  EXPECT_NE(refusal([] { choose(shape(), with(Mask::Causal), false, false); }).find("no usable GPU"),
            std::string::npos);
  EXPECT_NE(refusal([] { choose(shape(), with(Mask::None, ScoreMod::Softcap), true, true); }).find("causal"),
            std::string::npos);
  EXPECT_NE(refusal([] { choose(shape(128, 100, 200), with(Mask::Documents), true, true); }).find("N_kv = N"),
            std::string::npos);
  EXPECT_NE(refusal([] {
              choose(ladder::attention_shape(1, 6, 4, 64, 64, 128, false), with(Mask::None), true, true);
            }).find("multiple of H_kv"),
            std::string::npos);
  AttentionShape causal_shape = shape();
  causal_shape.causal = true;
  EXPECT_NE(refusal([&] { choose(causal_shape, with(Mask::None), true, true); }).find("Mask::Causal"),
            std::string::npos);
  Variant window = with(Mask::SlidingWindow);
  window.window_left = -1;
  EXPECT_NE(refusal([&] { choose(shape(), window, true, true); }).find(">= 0"), std::string::npos);
  Variant docs = with(Mask::Documents);
  docs.doc = nullptr;
  EXPECT_NE(refusal([&] { choose(shape(), docs, true, true); }).find("document ids"), std::string::npos);
  Variant cap = with(Mask::Causal, ScoreMod::Softcap);
  cap.softcap = 0.0f;
  EXPECT_NE(refusal([&] { choose(shape(), cap, true, true); }).find("> 0"), std::string::npos);
  docs.doc = reinterpret_cast<const int*>(2);  // an int32 tensor's address is 4-byte aligned
  EXPECT_NE(refusal([&] { choose(shape(), docs, true, true); }).find("4-byte aligned"), std::string::npos);
  Variant alibi = with(Mask::Causal, ScoreMod::Alibi);
  alibi.slopes = reinterpret_cast<const float*>(6);
  EXPECT_NE(refusal([&] { choose(shape(), alibi, true, true); }).find("4-byte aligned"), std::string::npos);
}

// Document ids or slopes in host memory (a CPU tensor's address) are refused before any launch: the
// kernels would read them element by element and lose the CUDA context to an illegal access.
TEST(GpuOps, HostIdsAndSlopesAreRefusedBeforeAnyLaunch) {
  LADDER_REQUIRE_GPU();
  const AttentionShape s = shape();
  for (const Variant& v : {with(Mask::Documents), with(Mask::Causal, ScoreMod::Alibi)}) {
    const std::string why = refusal([&] { ops::forward(s, v, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr); });
    EXPECT_NE(why.find("host memory"), std::string::npos) << why;
    const std::string bwd = refusal([&] {
      ops::backward(s, v, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                    nullptr);
    });
    EXPECT_NE(bwd.find("host memory"), std::string::npos) << bwd;
  }
}

TEST(CpuChoose, NamesAreTheOperatorsSpelling) {
  EXPECT_EQ(ops::mask_from_name("sliding_window"), Mask::SlidingWindow);
  EXPECT_EQ(ops::score_mod_from_name("alibi"), ScoreMod::Alibi);
  EXPECT_NE(refusal([] { ops::mask_from_name("window"); }).find("none, causal, sliding_window, prefix_lm, documents"),
            std::string::npos);
  EXPECT_NE(refusal([] { ops::score_mod_from_name("tanh"); }).find("none, softcap, alibi"), std::string::npos);
}

TEST(CpuDecodeStep, RefusesABadCacheBeforeAnyLaunch) {
  ops::KvCache c;  // contiguous, capacity 0
  const auto append = [&] { ops::append_kv(c, 1, 1, 64, nullptr, nullptr, nullptr, 1, nullptr, nullptr); };
  EXPECT_NE(refusal(append).find("capacity >= 1"), std::string::npos);
  c.capacity = 16;
  EXPECT_NE(
      refusal([&] { ops::append_kv(c, 1, 1, 96, nullptr, nullptr, nullptr, 1, nullptr, nullptr); }).find("64 or 128"),
      std::string::npos);
  EXPECT_NE(refusal(append).find("K is null"), std::string::npos);
  static const int table = 0;
  c.block_table = &table, c.num_pages = 1, c.page_size = 32, c.max_pages_per_seq = 1;
  EXPECT_NE(refusal(append).find("pages of 16 or 64 keys"), std::string::npos);
}

// The append, then chapter 11's decode: a cache that already holds the new keys (written here on the
// host) and chapter 11 alone give the same bits. One sequence starts empty, one crosses a page, and
// one runs past the end of a contiguous cache (the key that does not fit is not written: the slab
// after it is untouched).
class GpuDecodeStep : public ::testing::TestWithParam<std::tuple<int, int>> {};

TEST_P(GpuDecodeStep, AppendThenDecodeIsChapter11OnTheFilledCache) {
  LADDER_REQUIRE_GPU();
  LADDER_TEST_SEED(seed);
  const auto [d, page_size] = GetParam();  // page_size 0: contiguous
  const int B = 3, H_kv = 2, H_q = 4, n_new = 3, capacity = 200;
  const std::vector<int> before = {0, 62, 198};
  const bool paged = page_size > 0;
  const int pages_per_seq = paged ? (capacity + page_size - 1) / page_size : 0, num_pages = B * pages_per_seq;
  const long long rows_per_seq = paged ? static_cast<long long>(pages_per_seq) * page_size : capacity;
  const std::size_t cache_elems = static_cast<std::size_t>(B) * H_kv * rows_per_seq * d;

  std::vector<int> table(static_cast<std::size_t>(num_pages));
  std::iota(table.begin(), table.end(), 0);
  std::shuffle(table.begin(), table.end(), std::mt19937_64(seed));
  const auto bf16s = [](std::size_t n, std::uint64_t s) { return ladder::to_bf16(ladder::random_uniform(n, s)); };
  const std::vector<ladder::bf16> K0 = bf16s(cache_elems, seed + 1), V0 = bf16s(cache_elems, seed + 2);
  const std::size_t new_elems = static_cast<std::size_t>(B) * H_kv * n_new * d;
  const std::vector<ladder::bf16> K_new = bf16s(new_elems, seed + 3), V_new = bf16s(new_elems, seed + 4);
  const std::vector<ladder::bf16> Q = bf16s(static_cast<std::size_t>(B) * H_q * d, seed + 5);

  // The expected cache: key t of (b, h) at position before[b] + t, where the cache holds it.
  std::vector<ladder::bf16> K1 = K0, V1 = V0;
  std::vector<int> after(B);
  for (int b = 0; b < B; ++b) {
    after[b] = before[b] + n_new;
    for (int h = 0; h < H_kv; ++h)
      for (int t = 0; t < n_new; ++t) {
        const long long pos = before[b] + t;
        if (pos >= rows_per_seq) continue;
        const long long row =
            paged ? (static_cast<long long>(table[b * pages_per_seq + pos / page_size]) * H_kv + h) * page_size +
                        pos % page_size
                  : (static_cast<long long>(b) * H_kv + h) * capacity + pos;
        const std::size_t from = ((static_cast<std::size_t>(b) * H_kv + h) * n_new + t) * d;
        std::copy_n(K_new.begin() + from, d, K1.begin() + row * d);
        std::copy_n(V_new.begin() + from, d, V1.begin() + row * d);
      }
  }

  ladder::DeviceBuffer<ladder::bf16> K(K0), V(V0), Kn(K_new), Vn(V_new), Qd(Q), O(Q.size()), O_ref(Q.size());
  ladder::DeviceBuffer<ladder::bf16> K_ref(K1), V_ref(V1);
  ladder::DeviceBuffer<int> lens(before), lens_ref(after), table_d(paged ? table : std::vector<int>{0});
  const auto cache_of = [&](ladder::bf16* k, ladder::bf16* v) {
    ops::KvCache c;
    c.K = k, c.V = v;
    if (paged)
      c.block_table = table_d.data(), c.num_pages = num_pages, c.page_size = page_size,
      c.max_pages_per_seq = pages_per_seq;
    else
      c.capacity = capacity;
    return c;
  };
  fdec::DecodeShape s;
  s.B = B, s.H_q = H_q, s.H_kv = H_kv, s.n_q = 1, s.d = d;
  s.max_seq_len = static_cast<int>(std::min<long long>(rows_per_seq, *std::max_element(after.begin(), after.end())));
  ladder::DeviceBuffer<unsigned char> workspace(ops::decode_workspace_bytes(s));
  ladder::DeviceBuffer<float> lse_ref(s.rows());
  ladder::DeviceBuffer<unsigned char> partials(std::max<std::size_t>(fdec::plan(s).workspace_bytes, 16));
  O.poison(), O_ref.poison();

  ops::decode(s, Qd.data(), cache_of(K.data(), V.data()), lens.data(), Kn.data(), Vn.data(), n_new, O.data(),
              workspace.data(), nullptr);
  fdec::decode(s, Qd.data(), cache_of(K_ref.data(), V_ref.data()).view(), lens_ref.data(), O_ref.data(), lse_ref.data(),
               partials.data(), {}, nullptr);
  CUDA_CHECK(cudaDeviceSynchronize());

  const auto bits = [](const std::vector<ladder::bf16>& x) {
    std::vector<std::uint16_t> r(x.size());
    std::transform(x.begin(), x.end(), r.begin(), [](ladder::bf16 v) { return ladder::bf16_bits(v); });
    return r;
  };
  EXPECT_EQ(bits(K.download()), bits(K1)) << "the keys in the cache";
  EXPECT_EQ(bits(V.download()), bits(V1)) << "the values in the cache";
  EXPECT_EQ(bits(O.download()), bits(O_ref.download())) << "the decode after the append";
  EXPECT_EQ(lens.download(), before) << "the caller's lengths are not advanced";
}

INSTANTIATE_TEST_SUITE_P(Layouts, GpuDecodeStep,
                         ::testing::Combine(::testing::Values(64, 128), ::testing::Values(0, 16, 64)),
                         [](const auto& info) {
                           const int p = std::get<1>(info.param);
                           return "d" + std::to_string(std::get<0>(info.param)) +
                                  (p ? "_pages" + std::to_string(p) : std::string("_contiguous"));
                         });

}  // namespace
