#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include "device_buffer.h"
#include "gtest_helpers.h"
#include "ptxas_report.h"
#include "reference_attention.h"
#include "spill.h"

namespace {

using spill::Accumulators;
using spill::Variant;

// What ptxas 13 prints for two kernels (abridged).
constexpr const char* kSampleLog = R"(ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '_ZN5spill11fa2_forwardILi128ELi8ELi32ELb1EEEvPKfS2_S2_PfS3_if' for 'sm_90'
ptxas info    : Function properties for _ZN5spill11fa2_forwardILi128ELi8ELi32ELb1EEEvPKfS2_S2_PfS3_if
    48 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 33 registers, used 1 barriers, 48 bytes cumulative stack size
ptxas info    : Compile time = 10.000 ms
ptxas info    : Compiling entry function '_ZN5spill18fa2_forward_cappedILi128ELi8ELi32ELi40EEEvPKfS2_S2_PfS3_if' for 'sm_90'
ptxas info    : Function properties for _ZN5spill18fa2_forward_cappedILi128ELi8ELi32ELi40EEEvPKfS2_S2_PfS3_if
    32 bytes stack frame, 52 bytes spill stores, 60 bytes spill loads
ptxas info    : Used 40 registers, used 1 barriers, 32 bytes cumulative stack size
)";

TEST(CpuPtxas, ParsesTheVerboseReport) {
  const auto entries = spill::parse_ptxas(kSampleLog);
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].function, "fa2_forward");
  EXPECT_EQ(entries[0].template_args, (std::vector<long long>{128, 8, 32, 1}));
  EXPECT_EQ(entries[0].registers, 33);
  EXPECT_EQ(entries[0].stack_frame, 48);
  EXPECT_EQ(entries[0].spill_stores, 0);
  EXPECT_EQ(entries[1].function, "fa2_forward_capped");
  EXPECT_EQ(entries[1].template_args, (std::vector<long long>{128, 8, 32, 40}));
  EXPECT_EQ(entries[1].registers, 40);
  EXPECT_EQ(entries[1].stack_frame, 32);
  EXPECT_EQ(entries[1].spill_stores, 52);
  EXPECT_EQ(entries[1].spill_loads, 60);
}

TEST(CpuPtxas, EveryVariantIsInTheCapturedReport) {
  EXPECT_EQ(spill::captured_ptxas().size(), spill::variants().size()) << spill::captured_ptxas_log();
  for (const Variant& v : spill::variants()) {
    ASSERT_NO_THROW(spill::ptxas_entry(v)) << spill::captured_ptxas_log();
    EXPECT_GT(spill::ptxas_entry(v).registers, 0) << v.label();
  }
}

// The chapter's two lessons, as the compiler reports them.
TEST(CpuPtxas, UncappedRegisterAccumulatorsNeedNoLocalMemory) {
  for (const Variant& v : spill::variants()) {
    if (v.kind() != std::string("normal")) continue;
    const auto& e = spill::ptxas_entry(v);
    EXPECT_EQ(e.stack_frame, 0) << v.label();
    EXPECT_EQ(e.spill_stores, 0) << v.label();
    EXPECT_EQ(e.spill_loads, 0) << v.label();
  }
}

TEST(CpuPtxas, RunTimeIndexedAccumulatorsGetAStackFrameNotSpills) {
  const auto& e = spill::ptxas_entry(Variant{Accumulators::Local});
  // O_i[2][4], m_i[2], l_i[2] at d = 128, B_r = 8: 12 floats.
  EXPECT_GE(e.stack_frame, 48);
  EXPECT_EQ(e.spill_stores, 0);
  EXPECT_EQ(e.spill_loads, 0);
}

TEST(CpuPtxas, TheTightestRegisterCapSpills) {
  int tightest = spill::kMaxRegsPerThread;
  for (const Variant& v : spill::variants()) tightest = std::min(tightest, v.max_regs);
  ASSERT_LT(tightest, spill::kMaxRegsPerThread);
  Variant capped;
  capped.max_regs = tightest;
  const auto& e = spill::ptxas_entry(capped);
  EXPECT_LE(e.registers, tightest);
  EXPECT_GT(e.spill_stores, 0);
  EXPECT_GT(e.spill_loads, 0);
}

TEST(CpuSpill, LabelsNameEveryKey) {
  EXPECT_EQ(spill::kLecture.label(), "variant=normal/d=128/B_r=8/B_c=32");
  EXPECT_EQ(Variant{Accumulators::Local}.label(), "variant=local/d=128/B_r=8/B_c=32");
  Variant capped;
  capped.max_regs = 40;
  EXPECT_EQ(capped.label(), "variant=capped/maxrreg=40/d=128/B_r=8/B_c=32");
}

TEST(CpuSpill, EveryVariantFitsHopperSharedMemory) {
  for (const Variant& v : spill::variants()) EXPECT_LE(spill::smem_bytes(v), 227u * 1024u) << v.label();
}

TEST(CpuSpill, BadInputIsRejectedBeforeAnyLaunch) {
  ladder::AttentionShape s{1, 1, 64, 128};
  auto run = [&](const Variant& v, const ladder::AttentionShape& shape) {
    spill::forward(v, shape, nullptr, nullptr, nullptr, nullptr, nullptr);
  };
  Variant not_compiled;
  not_compiled.B_r = 12;
  EXPECT_THROW(run(not_compiled, s), std::invalid_argument);
  Variant d64 = spill::kLecture;
  d64.d = 64;
  EXPECT_THROW(run(d64, s), std::invalid_argument);  // d of the shape differs from the kernel's
  auto causal = s;
  causal.causal = true;
  EXPECT_THROW(run(spill::kLecture, causal), std::invalid_argument);
  for (auto bad : {ladder::AttentionShape{0, 1, 64, 128}, ladder::AttentionShape{1, 0, 64, 128},
                   ladder::AttentionShape{1, 1, 0, 128}, ladder::AttentionShape{1, 1, 64, 96}})
    EXPECT_THROW(run(spill::kLecture, bad), std::invalid_argument) << bad.str();
  EXPECT_THROW(run(spill::kLecture, ladder::AttentionShape{65536, 1, 64, 128}), std::invalid_argument);
}

// Every variant, at sequence lengths around the tiles (1, 17: one partial tile; 64: whole tiles; 100, 1000:
// partial tails), against the fp64 reference; O and L poisoned before the launch.
class GpuSpill : public ::testing::TestWithParam<std::tuple<Variant, int>> {};

TEST_P(GpuSpill, MatchesReference) {
  LADDER_REQUIRE_GPU();
  LADDER_TEST_SEED(seed);
  const auto [v, N] = GetParam();
  if (ladder::small_mode() && N > 100) GTEST_SKIP() << "small mode (LADDER_SMALL): N <= 100 only";
  if (spill::smem_bytes(v) > ladder::device().smem_per_block_optin)
    GTEST_SKIP() << v.label() << " needs " << spill::smem_bytes(v)
                 << " bytes of shared memory per block; this GPU allows " << ladder::device().smem_per_block_optin
                 << " (the study sweeps the tiles an H200 holds)";
  const ladder::AttentionShape s{N > 100 ? 1 : 2, N > 100 ? 2 : 3, N, v.d};  // several heads: head offsets
  const auto Q = ladder::random_uniform(s.elems(), seed), K = ladder::random_uniform(s.elems(), seed + 1),
             V = ladder::random_uniform(s.elems(), seed + 2);
  const auto ref = ladder::attention_forward_reference(s, Q.data(), K.data(), V.data());
  ladder::DeviceBuffer<float> dQ(Q), dK(K), dV(V), dO(s.elems()), dL(s.rows());
  dO.poison();
  dL.poison();
  spill::forward(v, s, dQ.data(), dK.data(), dV.data(), dO.data(), dL.data());
  EXPECT_TRUE(ladder::matches(dO.download(), ref.O, ladder::kFp32)) << v.label() << " O, N=" << N;
  EXPECT_TRUE(ladder::matches(dL.download(), ref.L, ladder::kFp32)) << v.label() << " L, N=" << N;
}

std::string test_name(const Variant& v) {
  std::string name = std::string(v.kind()) + "_d" + std::to_string(v.d) + "_Br" + std::to_string(v.B_r) + "_Bc" +
                     std::to_string(v.B_c);
  if (v.max_regs < spill::kMaxRegsPerThread) name += "_maxrreg" + std::to_string(v.max_regs);
  return name;
}

INSTANTIATE_TEST_SUITE_P(Variants, GpuSpill,
                         ::testing::Combine(::testing::ValuesIn(spill::variants()),
                                            ::testing::Values(1, 17, 64, 100, 1000)),
                         [](const auto& info) {
                           return test_name(std::get<0>(info.param)) + "_N" + std::to_string(std::get<1>(info.param));
                         });

// The table's two sources agree: the register count ptxas reported at build time is the one the driver loaded.
TEST(GpuSpillAttributes, RuntimeRegistersMatchThePtxasReport) {
  LADDER_REQUIRE_GPU();
  for (const Variant& v : spill::variants()) {
    if (spill::smem_bytes(v) > ladder::device().smem_per_block_optin) continue;  // refused on this GPU (see above)
    const auto info = spill::kernel_info(v);
    // Machine code the driver compiled from older PTX for this GPU (an sm_75 build on an H100) is not
    // what ptxas reported at build time: only the report of the code that runs can be compared.
    if (info.binary_version == info.ptx_version) {
      EXPECT_EQ(info.num_regs, spill::ptxas_entry(v).registers) << v.label();
    }
    EXPECT_GT(info.blocks_per_sm, 0) << v.label();
    EXPECT_EQ(info.smem_bytes, spill::smem_bytes(v)) << v.label();
  }
}

}  // namespace
