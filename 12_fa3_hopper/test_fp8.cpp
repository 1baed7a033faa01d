// FP8 data path of chapter 12: e4m3 rounding, the V key permutation, the Hadamard rotation,
// the host model against the fp64 reference (Cpu*), and the GPU quantisation kernels
// against the host model, byte for byte (Gpu*).
#include <cuda_fp8.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "attention_inputs.h"
#include "bf16.h"
#include "device_buffer.h"
#include "fa3.h"
#include "fa3_problem.h"
#include "fp8_emulate.h"
#include "fp8_layout.h"
#include "fp8_quant.h"
#include "gtest_helpers.h"
#include "reference_attention.h"
#include "soft_exp2.h"

namespace {

using ladder::attention_shape;
using ladder::AttentionShape;

struct Inputs {
  std::vector<float> Q, K, V;  // bf16 values, kept as float
};
Inputs bf16_inputs(const AttentionShape& s, std::uint64_t seed, float q_scale = 1.0f) {
  const auto x = ladder::random_attention_inputs(s, seed, false, q_scale);
  return {ladder::round_to_bf16(x.Q), ladder::round_to_bf16(x.K), ladder::round_to_bf16(x.V)};
}

std::uint8_t cuda_e4m3(float x) {
  return static_cast<std::uint8_t>(__nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3));
}

// ---- e4m3 ------------------------------------------------------------------------------

TEST(CpuFp8E4m3, EveryByteRoundTrips) {
  for (int b = 0; b < 256; ++b) {
    if ((b & 0x7F) == 0x7F) {  // the two NaNs
      EXPECT_TRUE(std::isnan(fa3::e4m3_value(std::uint8_t(b))));
      continue;
    }
    EXPECT_EQ(fa3::e4m3_bits(fa3::e4m3_value(std::uint8_t(b))), b) << "byte " << b;
  }
  EXPECT_EQ(fa3::e4m3_value(0x7E), 448.0f);
  EXPECT_EQ(fa3::e4m3_value(0x01), std::ldexp(1.0f, -9));  // smallest subnormal
  EXPECT_EQ(fa3::e4m3_value(0x08), std::ldexp(1.0f, -6));  // smallest normal
  EXPECT_EQ(fa3::e4m3_value(0x38), 1.0f);
}

TEST(CpuFp8E4m3, SaturatesAndRoundsTiesToEven) {
  EXPECT_EQ(fa3::e4m3_bits(448.0f), 0x7E);
  EXPECT_EQ(fa3::e4m3_bits(463.9f), 0x7E);
  EXPECT_EQ(fa3::e4m3_bits(464.0f), 0x7E);
  EXPECT_EQ(fa3::e4m3_bits(1e30f), 0x7E);
  EXPECT_EQ(fa3::e4m3_bits(-INFINITY), 0xFE);
  EXPECT_EQ(fa3::e4m3_bits(1.0625f), 0x38);                // halfway 1 | 1.125: to the even 1
  EXPECT_EQ(fa3::e4m3_bits(1.1875f), 0x3A);                // halfway 1.125 | 1.25: to the even 1.25
  EXPECT_EQ(fa3::e4m3_bits(1.9375f), 0x40);                // halfway 1.875 | 2: up to the next binade
  EXPECT_EQ(fa3::e4m3_bits(std::ldexp(1.0f, -10)), 0x00);  // halfway 0 | 2^-9: to 0
  EXPECT_EQ(fa3::e4m3_bits(std::ldexp(3.0f, -10)), 0x02);  // halfway 2^-9 | 2^-8: to 2^-8
  EXPECT_EQ(fa3::e4m3_bits(std::ldexp(1.0f, -10) * 1.01f), 0x01);
  EXPECT_EQ(fa3::e4m3_bits(-0.0f), 0x80);
}

// Our rounding against cuda_fp8.h's host conversion (the same definition the GPU's
// cvt.rn.satfinite.e4m3x2.f32 implements): every bf16 value, the midpoints between
// neighbouring e4m3 values and one float either side, and random floats of every size.
TEST(CpuFp8E4m3, MatchesCudaFp8HostConversion) {
  std::vector<float> xs;
  for (std::uint32_t b = 0; b < 65536; ++b) xs.push_back(ladder::bf16_value(std::uint16_t(b)));
  for (int b = 0; b < 0x7E; ++b) {
    const float mid = 0.5f * (fa3::e4m3_value(std::uint8_t(b)) + fa3::e4m3_value(std::uint8_t(b + 1)));
    for (float x : {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1e9f)}) xs.insert(xs.end(), {x, -x});
  }
  std::mt19937 gen(12);
  std::uniform_real_distribution<float> mant(1.0f, 2.0f);
  std::uniform_int_distribution<int> expo(-30, 12);
  for (int i = 0; i < 200000; ++i) xs.push_back((i % 2 ? -1.0f : 1.0f) * std::ldexp(mant(gen), expo(gen)));
  int mismatches = 0;
  for (float x : xs)
    if (fa3::e4m3_bits(x) != cuda_e4m3(x) && ++mismatches <= 5)
      ADD_FAILURE() << "x = " << x << ": ours " << int(fa3::e4m3_bits(x)) << ", cuda_fp8.h " << int(cuda_e4m3(x));
  EXPECT_EQ(mismatches, 0) << "of " << xs.size() << " values";
}

// ---- The key permutation of Vt8 (fp8_layout.h) ----------------------------------------------

// Derived here from the two register layouts (PTX ISA, wgmma register fragments), not from
// fp8_key_slot's formula: thread c's S accumulator holds keys 8j + 2c + e of a 32-key block;
// it packs a0 = {keys 2c, 2c+1, 8+2c, 9+2c} and a2 = {16+2c, 17+2c, 24+2c, 25+2c}; byte b of
// a0 is k = 4c + b of the A fragment, byte b of a2 is k = 16 + 4c + b.
TEST(CpuFp8Layout, KeySlotsFollowTheFragmentPacking) {
  for (int c = 0; c < 4; ++c)
    for (int b = 0; b < 4; ++b) {
      const int key_a0 = b < 2 ? 2 * c + b : 8 + 2 * c + (b - 2);
      EXPECT_EQ(fa3::fp8_key_slot(key_a0), 4 * c + b) << "a0, c=" << c << " byte " << b;
      EXPECT_EQ(fa3::fp8_key_slot(16 + key_a0), 16 + 4 * c + b) << "a2, c=" << c << " byte " << b;
    }
}

TEST(CpuFp8Layout, KeyPermutationIsABijection) {
  std::set<int> slots;
  for (int x = 0; x < 32; ++x) {
    const int k = fa3::fp8_key_slot(x);
    ASSERT_GE(k, 0);
    ASSERT_LT(k, 32);
    slots.insert(k);
    EXPECT_EQ(fa3::fp8_slot_key(k), x) << "fp8_slot_key is not the inverse at key " << x;
  }
  EXPECT_EQ(slots.size(), 32u);
  std::set<int> columns;
  for (int n = 0; n < 4096; ++n) {
    const int col = fa3::fp8_vt_column(n);
    EXPECT_EQ(col / 32, n / 32) << "key " << n << " left its 32-key block";
    columns.insert(col);
  }
  EXPECT_EQ(columns.size(), 4096u);
}

// ---- Hadamard -------------------------------------------------------------------------------

TEST(CpuFp8Hadamard, IsTheOrthonormalSylvesterMatrix) {
  for (int d : fa3::kFp8QuantD) {
    std::vector<std::vector<double>> H(d);
    for (int i = 0; i < d; ++i) {  // row i of H = e_i H
      std::vector<float> x(d, 0.0f);
      x[i] = 1.0f;
      fa3::hadamard_rotate_row(x.data(), d);
      H[i].assign(x.begin(), x.end());
      for (int j = 0; j < d; ++j) {
        const double expect = (__builtin_popcount(unsigned(i & j)) % 2 ? -1.0 : 1.0) / std::sqrt(double(d));
        ASSERT_NEAR(H[i][j], expect, 1e-7) << "d=" << d << " H(" << i << "," << j << ")";
      }
    }
    double worst = 0.0;  // H H^T = I
    for (int i = 0; i < d; ++i)
      for (int j = 0; j < d; ++j) {
        double dot = 0.0;
        for (int k = 0; k < d; ++k) dot += H[i][k] * H[j][k];
        worst = std::max(worst, std::fabs(dot - (i == j ? 1.0 : 0.0)));
      }
    EXPECT_LT(worst, 1e-6) << "d=" << d;
  }
}

TEST(CpuFp8Hadamard, LeavesScoresUnchanged) {
  LADDER_TEST_SEED(seed);
  for (int d : fa3::kFp8QuantD) {
    auto q = ladder::random_uniform(d, seed), k = ladder::random_uniform(d, seed + 1);
    q[3] *= 50.0f;  // an outlier channel shared by q and k
    k[3] *= 50.0f;
    double before = 0.0, after = 0.0;
    for (int c = 0; c < d; ++c) before += double(q[c]) * k[c];
    fa3::hadamard_rotate_row(q.data(), d);
    fa3::hadamard_rotate_row(k.data(), d);
    float amax = 0.0f;
    for (int c = 0; c < d; ++c) after += double(q[c]) * k[c], amax = std::max(amax, std::fabs(q[c]));
    EXPECT_NEAR(after, before, 1e-5 * std::fabs(before) + 1e-5) << "d=" << d;
    EXPECT_LT(amax, 50.0f * 0.5f) << "the outlier was not spread, d=" << d;
  }
}

// ---- Host quantisation: scales and layouts --------------------------------------------------

// Every scale block gets its own amax (a marker element), so a scale written to the wrong
// slot shows: descale_q[head][block] must be marker / 448 exactly.
TEST(CpuFp8Quant, PerBlockScalesMapToTheirBlocks) {
  const AttentionShape s = attention_shape(2, 4, 2, 130, 300, 64, false);  // partial last blocks, GQA
  std::vector<float> Q(s.elems(), 0.25f), K(s.kv_elems(), 0.25f), V(s.kv_elems(), 0.25f);
  const int qb = (s.N + 63) / 64, kb = (s.nkv() + 127) / 128;
  auto marker = [](long id) { return float(1 + id % 200); };  // exact in bf16 and in the division below
  for (long h = 0; h < long(s.heads()); ++h)
    for (int b = 0; b < qb; ++b) Q[(h * s.N + std::min(s.N - 1, 64 * b + 5)) * s.d + 7] = -marker(h * qb + b);
  for (long h = 0; h < long(s.kv_heads()); ++h) {
    for (int b = 0; b < kb; ++b) K[(h * s.nkv() + std::min(s.nkv() - 1, 128 * b + 9)) * s.d + 3] = marker(h * kb + b);
    for (int c = 0; c < s.d; ++c) V[(h * s.nkv() + (c * 37) % s.nkv()) * s.d + c] = marker(h * s.d + c + 1);
  }
  for (fa3::Fp8Scaling scaling : {fa3::Fp8Scaling::PerBlock, fa3::Fp8Scaling::PerTensor}) {
    const auto t = fa3::quantize_fp8_host(s, Q.data(), K.data(), V.data(), {scaling, false});
    const bool per_tensor = scaling == fa3::Fp8Scaling::PerTensor;
    ASSERT_EQ(t.descale_q.size(), s.heads() * qb);
    ASSERT_EQ(t.descale_k.size(), s.kv_heads() * kb);
    ASSERT_EQ(t.descale_v.size(), s.kv_heads() * s.d);
    auto check = [&](const std::vector<float>& descale, auto id_marker, const char* what) {
      float global = 0.0f;
      for (std::size_t i = 0; i < descale.size(); ++i) global = std::max(global, id_marker(long(i)));
      for (std::size_t i = 0; i < descale.size(); ++i)
        EXPECT_EQ(descale[i], (per_tensor ? global : id_marker(long(i))) / 448.0f)
            << what << " scale " << i << ", " << fa3::name(scaling);
    };
    check(
        t.descale_q, [&](long i) { return marker(i); }, "Q");
    check(
        t.descale_k, [&](long i) { return marker(i); }, "K");
    check(
        t.descale_v, [&](long i) { return marker(i + 1); }, "V");
    // Per block, each marker is its block's amax and lands on -448 exactly.
    if (!per_tensor) {
      EXPECT_EQ(t.Q8[(1 * s.N + 64 + 5) * s.d + 7], 0xFE);
    }
  }
}

TEST(CpuFp8Quant, VtHoldsEveryKeyAtItsColumnAndZeroPadding) {
  LADDER_TEST_SEED(seed);
  const AttentionShape s = attention_shape(1, 2, 2, 50, 161, 64, false);  // N_kv_pad = 256
  const Inputs x = bf16_inputs(s, seed);
  const auto t = fa3::quantize_fp8_host(s, x.Q.data(), x.K.data(), x.V.data(), {fa3::Fp8Scaling::PerBlock, false});
  const int pad = fa3::fp8_kv_pad(s.nkv());
  ASSERT_EQ(pad, 256);
  for (long h = 0; h < long(s.kv_heads()); ++h)
    for (int c = 0; c < s.d; ++c) {
      std::vector<bool> used(pad, false);
      for (int n = 0; n < s.nkv(); ++n) {
        const int col = fa3::fp8_vt_column(n);
        used[col] = true;
        const float v = x.V[(h * s.nkv() + n) * s.d + c];
        const float descale = t.descale_v[h * s.d + c];
        const float back = fa3::e4m3_value(t.Vt8[(h * s.d + c) * pad + col]) * descale;
        // half an e4m3 step: 2^-4 relative, or 2^-10 (times the descale) among the subnormals
        EXPECT_NEAR(back, v, 0.0625 * std::fabs(v) + std::ldexp(descale, -10))
            << "head " << h << " channel " << c << " key " << n;
      }
      for (int col = 0; col < pad; ++col)
        if (!used[col]) {
          EXPECT_EQ(t.Vt8[(h * s.d + c) * pad + col], 0) << "padding column " << col;
        }
    }
}

// ---- The model against the fp64 reference ---------------------------------------------------

// Inputs that e4m3 holds exactly, each tensor reaching +-448 (so the per-tensor scale is 1
// and quantisation is the identity): with P~ left unrounded the model must be the reference.
TEST(CpuFp8Model, UnquantisedCaseEqualsTheReference) {
  LADDER_TEST_SEED(seed);
  for (bool causal : {false, true}) {
    const AttentionShape s = attention_shape(2, 4, 2, 100, 150, 64, causal);
    std::mt19937 gen{static_cast<unsigned>(seed)};
    std::uniform_int_distribution<int> byte(0x00, 0x5F);  // |x| <= 2^4: logits stay moderate
    auto fill = [&](std::size_t n) {
      std::vector<float> v(n);
      for (float& e : v) e = fa3::e4m3_value(std::uint8_t(byte(gen) | (gen() % 2 ? 0x80 : 0))) / 64.0f;
      v[n / 2] = 448.0f / 64.0f;  // amax: per-tensor scale 64 exactly
      return v;
    };
    const std::vector<float> Q = fill(s.elems()), K = fill(s.kv_elems()), V = fill(s.kv_elems());
    const auto rows = fa3::sample_rows(s.N, s.N);
    const auto t = fa3::quantize_fp8_host(s, Q.data(), K.data(), V.data(), {fa3::Fp8Scaling::PerTensor, false});
    for (std::size_t i = 0; i < Q.size(); ++i)
      ASSERT_EQ(fa3::e4m3_value(t.Q8[i]) * t.descale_q[0], Q[i]) << "quantisation is not exact at " << i;
    const fa3::Fp8Dequantised dq = fa3::dequantize_fp8_host(t);
    EXPECT_EQ(dq.Q, Q);
    EXPECT_EQ(dq.K, K);
    EXPECT_EQ(dq.V, V);
    fa3::Fp8ModelOptions exact;
    exact.round_p = false;
    const auto model = fa3::fp8_forward_model(t, rows, exact);
    const auto ref = fa3::reference_rows(s, Q.data(), K.data(), V.data(), rows);
    const auto full = ladder::attention_forward_reference(s, Q.data(), K.data(), V.data());
    EXPECT_LT(fa3::rel_l2(ref.O, full.O), 1e-13) << "reference_rows vs the common reference, causal=" << causal;
    EXPECT_LT(fa3::rel_l2(model.O, ref.O), 1e-13) << "model without P rounding vs reference, causal=" << causal;
    for (std::size_t i = 0; i < ref.L.size(); ++i) {
      if (std::isinf(full.L[i])) {
        EXPECT_TRUE(std::isinf(ref.L[i]) && std::isinf(model.L[i])) << "row " << i;
        continue;
      }
      EXPECT_NEAR(ref.L[i], full.L[i], 1e-12) << "L row " << i;
      EXPECT_NEAR(model.L[i], full.L[i], 1e-12) << "model L row " << i;
    }
    // Rounding P~ must cost something, and not more than e4m3 allows.
    const double rounded = fa3::rel_l2(fa3::fp8_forward_model(t, rows).O, ref.O);
    EXPECT_GT(rounded, 1e-3);
    EXPECT_LT(rounded, fa3::kFp8VsFp64.rel_l2);
  }
}

// dequantize_fp8_host gives the operands the model computes with: the fp64 reference on them
// is the model with P~ unrounded (every scale block, V's permuted columns, Hadamard), up to
// the fp32 rounding of x8 * descale (2^-24 relative).
TEST(CpuFp8Quant, DequantisedInputsAreTheModelsOperands) {
  LADDER_TEST_SEED(seed);
  const AttentionShape s = attention_shape(1, 4, 2, 200, 300, 128, true);
  const Inputs x = bf16_inputs(s, seed);
  const auto rows = fa3::sample_rows(s.N, 48);
  fa3::Fp8ModelOptions exact;
  exact.round_p = false;
  for (auto scaling : {fa3::Fp8Scaling::PerTensor, fa3::Fp8Scaling::PerBlock})
    for (bool hadamard : {false, true}) {
      const auto t = fa3::quantize_fp8_host(s, x.Q.data(), x.K.data(), x.V.data(), {scaling, hadamard});
      const fa3::Fp8Dequantised dq = fa3::dequantize_fp8_host(t);
      const auto ref = fa3::reference_rows(s, dq.Q.data(), dq.K.data(), dq.V.data(), rows);
      EXPECT_LT(fa3::rel_l2(fa3::fp8_forward_model(t, rows, exact).O, ref.O), 1e-6)
          << fa3::name(scaling) << " H=" << hadamard;
    }
}

// The kFp8VsFp64 bound holds for the inputs the tests use, every scaling, and a tile order
// change moves the model by about one e4m3 rounding (so kFp8VsModel can tell).
TEST(CpuFp8Model, QuantisedErrorWithinTheBound) {
  LADDER_TEST_SEED(seed);
  for (int d : fa3::kFp8QuantD) {
    const AttentionShape s = attention_shape(1, 2, 1, 257, 700, d, false);
    const Inputs x = bf16_inputs(s, seed);
    const auto rows = fa3::sample_rows(s.N, 64);
    const auto ref = fa3::reference_rows(s, x.Q.data(), x.K.data(), x.V.data(), rows);
    for (auto scaling : {fa3::Fp8Scaling::PerTensor, fa3::Fp8Scaling::PerBlock})
      for (bool hadamard : {false, true}) {
        const auto t = fa3::quantize_fp8_host(s, x.Q.data(), x.K.data(), x.V.data(), {scaling, hadamard});
        const auto model = fa3::fp8_forward_model(t, rows);
        const double err = fa3::rel_l2(model.O, ref.O);
        EXPECT_LT(err, fa3::kFp8VsFp64.rel_l2) << "d=" << d << " " << fa3::name(scaling) << " H=" << hadamard;
        EXPECT_GT(err, 5e-3) << "suspiciously exact";
        fa3::Fp8ModelOptions other_order;
        other_order.reverse_tiles = !other_order.reverse_tiles;
        EXPECT_GT(fa3::rel_l2(fa3::fp8_forward_model(t, rows, other_order).O, model.O), 2.0 * fa3::kFp8VsModel.rel_l2)
            << "the tile order does not show above kFp8VsModel";
        // FA4's max rule rounds P~ against another max than FA2's: a change kFp8VsModel sees,
        // at no cost in accuracy.
        fa3::Fp8ModelOptions fa2_rule;
        fa2_rule.rescale_log2 = 0;
        const auto eager = fa3::fp8_forward_model(t, rows, fa2_rule);
        EXPECT_GT(fa3::rel_l2(eager.O, model.O), 2.0 * fa3::kFp8VsModel.rel_l2) << "the max rule does not show";
        EXPECT_LT(err, 1.2 * fa3::rel_l2(eager.O, ref.O)) << "FA4's max rule costs accuracy";
      }
  }
}

// soft_exp2.h's exp2 on the FMA pipes: within its relative-error bound over the range the
// softmax uses, exact at the integers, monotone (no step where the cubic meets the next binade),
// and 0 for a masked score.
TEST(CpuFp8SoftExp2, WithinItsBoundExactAtIntegersMonotone) {
  double worst = 0;
  float last = 0.0f;
  for (int k = -126 * 4096; k <= 0; ++k) {
    const float x = float(k) / 4096.0f, y = fa3::exp2_poly(x);
    worst = std::max(worst, std::abs(double(y) / std::exp2(double(x)) - 1.0));
    EXPECT_GE(y, last) << "x = " << x;
    last = y;
    if (k % 4096 == 0) {
      EXPECT_EQ(y, std::ldexp(1.0f, k / 4096)) << "x = " << x;
    }
  }
  EXPECT_LT(worst, 1.04e-4);
  EXPECT_GT(worst, 5e-5) << "better than a cubic can be: is the polynomial used at all?";
  EXPECT_EQ(fa3::exp2_poly(-INFINITY), 0.0f);
}

// The device's branch (floor by a rounded-down add, no conversion instruction) gives the host's
// bits at every input the softmax can produce, and at the edges: -inf, below -126, NaN-free.
TEST(GpuFp8SoftExp2, TheDeviceGivesTheHostsBits) {
  LADDER_REQUIRE_GPU();
  std::vector<float> x = {-INFINITY, -1000.0f, -127.5f, -127.0f, -126.5f, 3.25f, 20.0f};
  for (int k = -126 * 4096; k <= 0; ++k) x.push_back(float(k) / 4096.0f);
  ladder::DeviceBuffer<float> in(x), out(x.size());
  out.poison();
  fa3::kernel::exp2_poly_on_device(in.data(), out.data(), int(x.size()));
  const std::vector<float> y = out.download();
  for (std::size_t i = 0; i < x.size(); ++i) {
    const float host = fa3::exp2_poly(x[i]);
    ASSERT_EQ(std::memcmp(&y[i], &host, sizeof host), 0) << "x = " << x[i] << ": device " << y[i] << ", host " << host;
  }
}

// Its share of the FP8 model's error: every exponential by the polynomial moves the error of O by
// a small fraction of itself (P~ is rounded to e4m3, 2^-4, right after).
TEST(CpuFp8SoftExp2, DoesNotMoveTheFp8Error) {
  LADDER_TEST_SEED(seed);
  const AttentionShape s = attention_shape(1, 2, 1, 257, 700, 128, false);
  const Inputs x = bf16_inputs(s, seed);
  const auto rows = fa3::sample_rows(s.N, 64);
  const auto ref = fa3::reference_rows(s, x.Q.data(), x.K.data(), x.V.data(), rows);
  const auto t = fa3::quantize_fp8_host(s, x.Q.data(), x.K.data(), x.V.data(), {fa3::Fp8Scaling::PerBlock, false});
  fa3::Fp8ModelOptions poly;
  poly.poly_eighths = 8;
  const double exact = fa3::rel_l2(fa3::fp8_forward_model(t, rows).O, ref.O);
  const double all_poly = fa3::rel_l2(fa3::fp8_forward_model(t, rows, poly).O, ref.O);
  EXPECT_NEAR(all_poly, exact, 0.02 * exact)
      << "exact exponentials " << exact << ", all by the polynomial " << all_poly;
}

TEST(CpuFp8Quant, BadInputIsRejectedBeforeAnyLaunch) {
  const auto* p = reinterpret_cast<const fa3::bf16*>(std::uintptr_t{256});
  const auto* misaligned = reinterpret_cast<const fa3::bf16*>(std::uintptr_t{258});
  const AttentionShape ok = attention_shape(1, 4, 2, 64, 64, 64, false);
  EXPECT_THROW(fa3::quantize_fp8(attention_shape(1, 1, 1, 16, 16, 96, false), p, p, p, fa3::Fp8Scaling::PerBlock),
               std::invalid_argument);
  EXPECT_THROW(fa3::quantize_fp8(attention_shape(1, 1, 1, 0, 0, 64, false), p, p, p, fa3::Fp8Scaling::PerBlock),
               std::invalid_argument);
  EXPECT_THROW(fa3::quantize_fp8(attention_shape(1, 6, 4, 8, 8, 64, false), p, p, p, fa3::Fp8Scaling::PerBlock),
               std::invalid_argument);
  EXPECT_THROW(fa3::quantize_fp8(ok, nullptr, p, p, fa3::Fp8Scaling::PerBlock), std::invalid_argument);
  EXPECT_THROW(fa3::quantize_fp8(ok, p, misaligned, p, fa3::Fp8Scaling::PerBlock), std::invalid_argument);
  EXPECT_THROW(fa3::quantize_fp8(ok, p, p, nullptr, fa3::Fp8Scaling::PerTensor), std::invalid_argument);
  EXPECT_THROW(fa3::quantize_fp8_host(attention_shape(1, 1, 1, 16, 16, 96, false), nullptr, nullptr, nullptr, {}),
               std::invalid_argument);
}

// ---- GPU: the quantisation kernels against the host model, bit for bit ----------------------

template <class T>
std::string first_difference(const std::vector<T>& gpu, const std::vector<T>& host, const char* what) {
  if (gpu.size() != host.size()) return std::string(what) + ": sizes differ";
  std::size_t count = 0, first = 0;
  for (std::size_t i = 0; i < gpu.size(); ++i)
    if (std::memcmp(&gpu[i], &host[i], sizeof(T)) != 0 && count++ == 0) first = i;
  if (count == 0) return "";
  return std::string(what) + ": " + std::to_string(count) + " of " + std::to_string(gpu.size()) + " differ, first at " +
         std::to_string(first) + " (gpu " + std::to_string(double(gpu[first])) + ", host " +
         std::to_string(double(host[first])) + ")";
}

// (N, N_kv, d, GQA group, per_tensor, hadamard)
using QuantCase = std::tuple<int, int, int, int, bool, bool>;
class GpuFp8Quant : public ::testing::TestWithParam<QuantCase> {};

TEST_P(GpuFp8Quant, MatchesTheHostModelBitForBit) {
  LADDER_REQUIRE_GPU();
  const auto [N, N_kv, d, group, per_tensor, hadamard] = GetParam();
  if (ladder::small_mode() && (N > 128 || N_kv > 300)) GTEST_SKIP() << "small mode: N <= 128";
  LADDER_TEST_SEED(seed);
  const AttentionShape s =
      N > 1000 ? attention_shape(1, group, 1, N, N_kv, d, false) : attention_shape(2, 2 * group, 2, N, N_kv, d, false);
  const Inputs x = bf16_inputs(s, seed, 3.0f);
  const fa3::Fp8Options opt{per_tensor ? fa3::Fp8Scaling::PerTensor : fa3::Fp8Scaling::PerBlock, hadamard};
  ladder::DeviceBuffer<fa3::bf16> Q(ladder::to_bf16(x.Q)), K(ladder::to_bf16(x.K)), V(ladder::to_bf16(x.V));
  fa3::Fp8Buffers out(s);
  out.poison();
  fa3::quantize_fp8_into(s, Q.data(), K.data(), V.data(), opt, out);
  const auto host = fa3::quantize_fp8_host(s, x.Q.data(), x.K.data(), x.V.data(), opt);
  const std::string what = s.str() + ", " + fa3::name(opt.scaling) + (hadamard ? ", hadamard" : "");
  for (const std::string& diff :
       {first_difference(out.descale_q.download(), host.descale_q, "descale_q"),
        first_difference(out.descale_k.download(), host.descale_k, "descale_k"),
        first_difference(out.descale_v.download(), host.descale_v, "descale_v"),
        first_difference(out.Q8.download(), host.Q8, "Q8"), first_difference(out.K8.download(), host.K8, "K8"),
        first_difference(out.Vt8.download(), host.Vt8, "Vt8")})
    EXPECT_TRUE(diff.empty()) << diff << " (" << what << ")";
}

std::string quant_name(const ::testing::TestParamInfo<QuantCase>& info) {
  const auto [N, N_kv, d, group, per_tensor, hadamard] = info.param;
  return "N" + std::to_string(N) + "_Nkv" + std::to_string(N_kv) + "_d" + std::to_string(d) + "_g" +
         std::to_string(group) + (per_tensor ? "_tensor" : "_block") + (hadamard ? "_hadamard" : "");
}

INSTANTIATE_TEST_SUITE_P(EdgeShapes, GpuFp8Quant,
                         ::testing::Combine(::testing::Values(1, 17), ::testing::Values(1, 17, 300),
                                            ::testing::Values(64, 128, 256), ::testing::Values(1, 4), ::testing::Bool(),
                                            ::testing::Bool()),
                         quant_name);
INSTANTIATE_TEST_SUITE_P(Long, GpuFp8Quant,
                         ::testing::Combine(::testing::Values(4093), ::testing::Values(4093),
                                            ::testing::Values(64, 128, 256), ::testing::Values(2), ::testing::Bool(),
                                            ::testing::Bool()),
                         quant_name);

// ---- GPU: the FP8 forward against the host model on the same quantised inputs ----------------

// (N, causal, GQA group, per_tensor, hadamard, d, step): d = 128 or 256 (fa3::kFp8SupportedD), the
// default step (persistent) or the intra-warpgroup kernel.
using ForwardCase = std::tuple<int, bool, int, bool, bool, int, fa3::Step>;
class GpuFp8Forward : public ::testing::TestWithParam<ForwardCase> {};

// The kernel against fp8_forward_model: kFp8VsModel (64 <= N_kv <= 4096; kFp8VsModelFewKeys below) on O (every row up
// to N = 1000, 256 sampled rows above), and L within fp8_l_max_abs at unit logit scale (the same scores; what differs
// is the tensor cores' summation of the e4m3 products and fp32 against fp64). Also the kFp8VsFp64 sanity bound against
// the fp64 reference on the bf16 inputs.
TEST_P(GpuFp8Forward, MatchesTheHostModel) {
  LADDER_REQUIRE_GPU();
  if (const std::string why = fa3::unavailable_reason(); !why.empty()) GTEST_SKIP() << why;
  const auto [N, causal, group, per_tensor, hadamard, d, step] = GetParam();
  if (ladder::small_mode() && N > 128) GTEST_SKIP() << "small mode: N <= 128";
  LADDER_TEST_SEED(seed);
  const AttentionShape s =
      N > 1000 ? attention_shape(1, group, 1, N, N, d, causal) : attention_shape(2, 2 * group, 2, N, N, d, causal);
  ASSERT_LE(s.nkv(), fa3::kFp8VsModelMaxKeys) << "kFp8VsModel holds up to this many keys (fp8_vs_model_bound beyond)";
  const Inputs x = bf16_inputs(s, seed);
  const fa3::Fp8Options opt{per_tensor ? fa3::Fp8Scaling::PerTensor : fa3::Fp8Scaling::PerBlock, hadamard};
  ladder::DeviceBuffer<fa3::bf16> Q(ladder::to_bf16(x.Q)), K(ladder::to_bf16(x.K)), V(ladder::to_bf16(x.V));
  ladder::DeviceBuffer<fa3::bf16> O(s.elems());
  ladder::DeviceBuffer<float> L(s.rows());
  const fa3::Fp8Buffers in = fa3::quantize_fp8(s, Q.data(), K.data(), V.data(), opt);
  O.poison();
  L.poison();
  fa3::Fp8ForwardOptions fwd;
  fwd.step = step;
  fa3::forward_fp8(s, in.inputs(), O.data(), L.data(), fwd);
  const auto rows = fa3::sample_rows(s.N, N > 1000 ? 256 : N);
  const auto O_gpu = fa3::gather_rows(s, ladder::from_bf16(O.download()), rows);
  const auto t = fa3::quantize_fp8_host(s, x.Q.data(), x.K.data(), x.V.data(), opt);
  const auto model = fa3::fp8_forward_model(t, rows);
  const auto ref = fa3::reference_rows(s, x.Q.data(), x.K.data(), x.V.data(), rows);
  const std::string what =
      s.str() + ", " + fa3::name(step) + ", " + fa3::name(opt.scaling) + (hadamard ? ", hadamard" : "");
  EXPECT_TRUE(ladder::matches(O_gpu, model.O, fa3::fp8_vs_model(s.nkv()))) << "O vs the host model, " << what;
  EXPECT_TRUE(ladder::matches(O_gpu, ref.O, fa3::kFp8VsFp64)) << "O vs fp64, " << what;
  const auto L_all = L.download();
  double worst = 0.0;
  std::size_t bad = 0;
  for (long h = 0; h < long(s.heads()); ++h)
    for (std::size_t r = 0; r < rows.size(); ++r) {
      const double l = L_all[h * s.N + rows[r]], m = model.L[h * rows.size() + r];
      if (std::isinf(m) || std::isinf(l)) {
        bad += !(std::isinf(m) && std::isinf(l) && l < 0);
        continue;
      }
      worst = std::max(worst, std::isnan(l) ? INFINITY : std::fabs(l - m));
    }
  EXPECT_EQ(bad, 0u) << "rows without a key must have L = -inf, " << what;
  EXPECT_LE(worst, fa3::fp8_l_max_abs(1.0)) << "L vs the host model, max abs, " << what;
}

// The compiled tunings of the FP8 forward (fa3::Fp8ForwardOptions): wider key tiles and the
// software exponential, against the same host model with the same keys' exponentials from
// exp2_poly, within the same bounds. K's blocks of 128 keys are scaled by 1, 1/2 and 1/3 in turn
// so that their descales differ up to threefold: a key tile of 192 or 224 keys spans two or three of them
// (fa3_config.h, kScaleKeys), and a descale taken from the wrong block moves the scores by as
// much. N_kv = 4093 runs past Vt8's padding (224-key tiles read the rest of a box past it). The
// consumers' turns (at the exponentials, at the GEMMs) and the persistent walk change when and
// where a warpgroup computes, not what: the same model holds.
// (options, N, N_kv, causal)
using TunedCase = std::tuple<fa3::Fp8ForwardOptions, int, int, bool>;
class GpuFp8TunedForward : public ::testing::TestWithParam<TunedCase> {};

std::string tuning_name(const fa3::Fp8ForwardOptions& o) {
  return "keys" + std::to_string(o.key_tile) + "_poly" + std::to_string(o.poly_eighths) +
         (o.gemm_turns ? (o.exp_turns ? "" : "_noturns") : (o.exp_turns ? "_expturns" : "_free")) +
         (o.step == fa3::Step::Persistent ? "_persistent" : "") + (o.eager_rescale ? "_eager" : "") +
         (o.speculative_max ? "_spec" : "");
}

TEST_P(GpuFp8TunedForward, MatchesTheHostModel) {
  LADDER_REQUIRE_GPU();
  if (const std::string why = fa3::unavailable_reason(); !why.empty()) GTEST_SKIP() << why;
  const auto [opt, N, N_kv, causal] = GetParam();
  if (ladder::small_mode() && std::max(N, N_kv) > 1000) GTEST_SKIP() << "small mode: N, N_kv <= 1000";
  LADDER_TEST_SEED(seed);
  // (persistent: 16 query heads, so that at N = 1000 the 256 row tiles outnumber the SMs)
  const int H = opt.step == fa3::Step::Persistent ? 16 : 4;
  const AttentionShape s = attention_shape(N_kv > 1000 ? 1 : 2, H, 2, N, N_kv, 128, causal);
  Inputs x = bf16_inputs(s, seed);
  for (std::size_t r = 0; r < x.K.size() / 128; ++r)  // (row r: key r % N_kv of a KV head)
    for (int c = 0; c < 128; ++c) x.K[r * 128 + c] /= float(1 + r % s.nkv() / fa3::kFp8KeysPerKScale % 3);
  x.K = ladder::round_to_bf16(x.K);  // (the kernel's inputs are bf16; so are the model's)
  ladder::DeviceBuffer<fa3::bf16> Q(ladder::to_bf16(x.Q)), K(ladder::to_bf16(x.K)), V(ladder::to_bf16(x.V));
  ladder::DeviceBuffer<fa3::bf16> O(s.elems());
  ladder::DeviceBuffer<float> L(s.rows());
  const fa3::Fp8Buffers in = fa3::quantize_fp8(s, Q.data(), K.data(), V.data(), fa3::Fp8Scaling::PerBlock);
  O.poison();
  L.poison();
  fa3::forward_fp8(s, in.inputs(), O.data(), L.data(), opt);
  const auto rows = fa3::sample_rows(s.N, std::min(N, 256));
  const auto O_gpu = fa3::gather_rows(s, ladder::from_bf16(O.download()), rows);
  const auto t = fa3::quantize_fp8_host(s, x.Q.data(), x.K.data(), x.V.data(), fa3::Fp8Options{});
  fa3::Fp8ModelOptions same;  // (the online softmax's max moves per key tile: P~'s roundings follow B_c)
  same.poly_eighths = opt.poly_eighths;
  same.B_c = opt.key_tile;
  same.rescale_log2 = opt.eager_rescale ? 0 : fa3::kernel::kFa4RescaleLog2;
  const auto model = fa3::fp8_forward_model(t, rows, same);
  const auto ref = fa3::reference_rows(s, x.Q.data(), x.K.data(), x.V.data(), rows);
  const std::string what = s.str() + ", " + tuning_name(opt);
  EXPECT_TRUE(ladder::matches(O_gpu, model.O, fa3::fp8_vs_model(s.nkv()))) << "O vs the host model, " << what;
  EXPECT_TRUE(ladder::matches(O_gpu, ref.O, fa3::kFp8VsFp64)) << "O vs fp64, " << what;
}

std::string tuned_name(const ::testing::TestParamInfo<TunedCase>& info) {
  const auto [opt, N, N_kv, causal] = info.param;
  return tuning_name(opt) + "_N" + std::to_string(N) + "_Nkv" + std::to_string(N_kv) + (causal ? "_causal" : "");
}

// Fp8ForwardOptions{poly_eighths, key_tile, exp_turns, gemm_turns, step, eager_rescale, speculative_max}: the
// intra-warpgroup kernel (I) with each tuning, and the persistent one (P), the default's step.
using Opt = fa3::Fp8ForwardOptions;
constexpr fa3::Step I = fa3::Step::IntraWg, P = fa3::Step::Persistent;
INSTANTIATE_TEST_SUITE_P(Eighths, GpuFp8TunedForward,
                         ::testing::Combine(::testing::Values(Opt{2, 128, true, true, I}, Opt{4, 128, true, true, I}),
                                            ::testing::Values(17, 1000), ::testing::Values(1000), ::testing::Bool()),
                         tuned_name);
INSTANTIATE_TEST_SUITE_P(KeyTiles, GpuFp8TunedForward,
                         ::testing::Combine(::testing::Values(Opt{0, 128, true, true, I}, Opt{0, 192, true, true, I},
                                                              Opt{0, 224, true, true, I}),
                                            ::testing::Values(17, 1000), ::testing::Values(17, 1000, 4093),
                                            ::testing::Bool()),
                         tuned_name);
INSTANTIATE_TEST_SUITE_P(WithoutExpTurns, GpuFp8TunedForward,
                         ::testing::Combine(::testing::Values(Opt{0, 192, false, true, I}), ::testing::Values(17, 1000),
                                            ::testing::Values(1000, 4093), ::testing::Bool()),
                         tuned_name);
INSTANTIATE_TEST_SUITE_P(WideAndSoft, GpuFp8TunedForward,
                         ::testing::Combine(::testing::Values(Opt{2, 224, true, true, I}), ::testing::Values(1000),
                                            ::testing::Values(1000), ::testing::Bool()),
                         tuned_name);
INSTANTIATE_TEST_SUITE_P(FreeConsumers, GpuFp8TunedForward,
                         ::testing::Combine(::testing::Values(Opt{0, 128, true, false, I}, Opt{0, 128, false, false, I},
                                                              Opt{0, 192, true, false, I},
                                                              Opt{0, 192, false, false, I}),
                                            ::testing::Values(17, 1000), ::testing::Values(1000, 4093),
                                            ::testing::Bool()),
                         tuned_name);
// Persistent CTAs walk several row tiles (the body gives them 16 heads: at N = 1000, 256 row
// tiles). Causal keeps one CTA per row tile, as bf16 does.
INSTANTIATE_TEST_SUITE_P(Persistent, GpuFp8TunedForward,
                         ::testing::Combine(::testing::Values(Opt{0, 128, true, true, P}, Opt{0, 192, true, true, P}),
                                            ::testing::Values(17, 1000), ::testing::Values(17, 1000),
                                            ::testing::Bool()),
                         tuned_name);
// FA2's max rule, against the model with the same rule.
INSTANTIATE_TEST_SUITE_P(
    Eager, GpuFp8TunedForward,
    ::testing::Combine(::testing::Values(Opt{0, 128, true, true, I, true}, Opt{0, 192, true, true, I, true},
                                         Opt{0, 128, true, true, P, true}, Opt{0, 192, true, true, P, true}),
                       ::testing::Values(17, 1000), ::testing::Values(1000, 4093), ::testing::Bool()),
    tuned_name);

// The speculative max, against the model with FA4's rule (the kernel's P~ does not change).
INSTANTIATE_TEST_SUITE_P(Speculative, GpuFp8TunedForward,
                         ::testing::Combine(::testing::Values(Opt{0, 128, true, true, I, false, true},
                                                              Opt{0, 128, true, true, P, false, true}),
                                            ::testing::Values(17, 1000), ::testing::Values(1000, 4093),
                                            ::testing::Bool()),
                         tuned_name);

// And bit for bit against the ordinary path on the same inputs (both have FA4's rule in FP8):
// logits x 30 make the vote fail often, logits x 1 almost never after the first tile.
TEST(GpuFp8, SpeculativeMaxGivesTheSameBits) {
  LADDER_REQUIRE_GPU();
  if (const std::string why = fa3::unavailable_reason(); !why.empty()) GTEST_SKIP() << why;
  LADDER_TEST_SEED(seed);
  const int N = ladder::small_mode() ? 200 : 1000;
  for (float logits : {1.0f, 30.0f})
    for (bool causal : {false, true}) {
      fa3::Fp8Problem f =
          fa3::quantize_on_host(fa3::make_problem(attention_shape(1, 16, 4, N, N, 128, causal), seed, logits), true);
      for (fa3::Step step : {I, P}) {
        f.forward(Opt{0, 128, true, true, step});
        const std::vector<float> O = f.O_host(), L = f.L_host();
        f.forward(Opt{0, 128, true, true, step, false, true});
        const std::string what =
            std::string(fa3::name(step)) + ", " + f.s.str() + ", logits x " + std::to_string(logits);
        EXPECT_EQ(fa3::bits_differ(f.O_host(), O), 0u) << "O, " << what;
        EXPECT_EQ(fa3::bits_differ(f.L_host(), L), 0u) << "L, " << what;
      }
    }
}

TEST(CpuFp8Tunings, OnlyTheCompiledOnesAreAccepted) {
  const AttentionShape s = attention_shape(1, 2, 2, 64, 64, 128, false);
  const fa3::Fp8Inputs none;
  try {
    fa3::forward_fp8(s, none, nullptr, nullptr, fa3::Fp8ForwardOptions{3});
    FAIL() << "poly_eighths = 3 was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("0, 2 or 4"), std::string::npos) << e.what();
  }
  for (const fa3::Fp8ForwardOptions opt :
       {fa3::Fp8ForwardOptions{0, 160}, fa3::Fp8ForwardOptions{4, 224}, fa3::Fp8ForwardOptions{0, 128, false},
        fa3::Fp8ForwardOptions{0, 224, true, false},
        fa3::Fp8ForwardOptions{0, 192, true, true, fa3::Step::IntraWg, false, true}}) {
    try {
      fa3::forward_fp8(s, none, nullptr, nullptr, opt);
      FAIL() << "key_tile " << opt.key_tile << " with poly_eighths " << opt.poly_eighths << " was accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("is not compiled"), std::string::npos) << e.what();
    }
  }
  // d = 256: the defaults at the intra-warpgroup and persistent steps only; d = 64 not at all.
  const AttentionShape s256 = attention_shape(1, 2, 2, 64, 64, 256, false);
  for (const fa3::Fp8ForwardOptions opt :
       {Opt{0, 192}, Opt{2, 128}, Opt{0, 128, false}, Opt{0, 128, true, false, I}, Opt{0, 128, true, true, P, true},
        Opt{0, 128, true, true, I, false, true}, Opt{0, 128, true, true, fa3::Step::PingPong}}) {
    try {
      fa3::forward_fp8(s256, none, nullptr, nullptr, opt);
      FAIL() << "d = 256 with " << tuning_name(opt) << " was accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("compiled"), std::string::npos) << e.what();
    }
  }
  try {
    fa3::forward_fp8(attention_shape(1, 2, 2, 64, 64, 64, false), none, nullptr, nullptr);
    FAIL() << "FP8 at d = 64 was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("d in {128, 256}"), std::string::npos) << e.what();
  }
}

std::string forward_name(const ::testing::TestParamInfo<ForwardCase>& info) {
  const auto [N, causal, group, per_tensor, hadamard, d, step] = info.param;
  return "N" + std::to_string(N) + (causal ? "_causal" : "") + "_g" + std::to_string(group) +
         (per_tensor ? "_tensor" : "_block") + (hadamard ? "_hadamard" : "") +
         (d != 128 ? "_d" + std::to_string(d) : "") +
         (step != fa3::kFp8BestStep ? "_" + std::string(fa3::name(step)) : "");
}

INSTANTIATE_TEST_SUITE_P(Shapes, GpuFp8Forward,
                         ::testing::Combine(::testing::Values(1, 17, 1000, 4093), ::testing::Bool(),
                                            ::testing::Values(1, 4), ::testing::Bool(), ::testing::Bool(),
                                            ::testing::Values(128), ::testing::Values(fa3::kFp8BestStep)),
                         forward_name);
// d = 256: its two compiled steps (fa3_config.h), every edge of the tiles, GQA, both scalings.
INSTANTIATE_TEST_SUITE_P(D256, GpuFp8Forward,
                         ::testing::Combine(::testing::Values(1, 17, 1000, 4093), ::testing::Bool(),
                                            ::testing::Values(1, 4), ::testing::Bool(), ::testing::Values(false),
                                            ::testing::Values(256), ::testing::Values(P, I)),
                         forward_name);

}  // namespace
