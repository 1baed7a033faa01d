// The studies of chapter 12: the kernels only the step tables' tune: rows run, each the lesson's
// kernel (fa3_forward.cuh) with a Study in place of Lesson (fa3_config.h): a deeper K/V ring,
// FP8's exponentials on the FMA pipes, FP8's wider key tiles, FP8 without a consumer turn, FP8
// with FA2's max rule, the speculative max. Compiled in a library of their own
// (studies/fa3_studies.cu); with_study() is their switch, as with_cfg() is the lesson's. No CUDA
// syntax: fa3.cpp (checks), the CPU tools and tests include it.
#pragma once

#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include "fa3_config.h"

namespace fa3::kernel {

// What a run chooses beside (d, bf16 or FP8, step); the defaults are the lesson's kernel.
// kv_stages: the K/V ring's depth (0: the tile policy's); poly_eighths: FP8's exponentials on the
// FMA pipes (fa3_rows.cuh, SplitExp2); key_tile: FP8's B_c (0: kFp8KeyTile); exp_turns: FP8's
// turns at the exponentials (Cfg::kExpTurns); gemm_turns: ping-pong's turns at the GEMMs, which
// FP8 may drop (Cfg::kGemmTurns); eager_rescale: FP8 with FA2's max rule (bf16 has it anyway);
// speculative_max: FA4's rule with the exponentials against the current m_i (studies/speculative_max.cuh).
struct Tuning {
  int kv_stages = 0, poly_eighths = 0, key_tile = 0;
  bool exp_turns = true, gemm_turns = true, eager_rescale = false, speculative_max = false;
};

// Whether a tuning asks for the lesson's kernel (with_cfg) rather than a study's.
inline bool is_lesson(bool fp8, const Tuning& t) {
  return t.kv_stages == 0 && t.poly_eighths == 0 && (t.key_tile == 0 || t.key_tile == kFp8KeyTile) && t.exp_turns &&
         t.gemm_turns && (!t.eager_rescale || !fp8) && !t.speculative_max;
}

// A study: the lesson's switches but the ones it changes. The speculative max also brings the
// intra-warpgroup loop's softmax step of its own (SpeculativeLoopSoftmax, studies/speculative_max.cuh).
template <class Consumer>
struct SpeculativeLoopSoftmax;
template <int kStages = 0, int kPoly = 0, int kKeys = 0, bool kExpTurns = true, bool kGemmTurns = true,
          bool kEager = false, bool kSpeculative = false>
struct Study : Lesson {
  static constexpr int kStagesOverride = kStages, kPolyEighths = kPoly, kKeyTile = kKeys;
  static constexpr bool kExpTurnsOn = kExpTurns, kGemmTurnsOn = kGemmTurns, kEagerRescale = kEager,
                        kSpeculativeMax = kSpeculative;
  template <class Consumer>
  using LoopSoftmax = std::conditional_t<kSpeculative, SpeculativeLoopSoftmax<Consumer>, Lesson::LoopSoftmax<Consumer>>;
};

// The studies' configurations, one per kernel the tune: rows run beyond the lesson's: 3 K/V stages
// for bf16, d = 128, Step::IntraWg (README, exercise 1); the speculative max at d = 128 for
// Step::IntraWg and Step::Persistent (bf16, and FP8 with 128 keys); FP8 at d = 128: FA2's max rule
// (IntraWg, Persistent; 128 or 192 keys), the GEMMs' turns dropped (IntraWg; 128 or 192 keys; with
// or without the exponentials' turns), 192 keys without the exponentials' turns, persistent with
// 192 keys, IntraWg with 2 or 4 eighths of the exponentials on the FMA pipes, 192 or 224 keys, 224
// keys with 2 eighths. Calls f(Cfg<...>{}); the lesson's tuning (is_lesson: with_cfg's) and
// anything else throw std::invalid_argument naming what is compiled.
inline constexpr int kStudyConfigs = 20;
template <class F>
decltype(auto) with_study(int d, bool fp8, Step step, const Tuning& t, F&& f) {
  if (is_lesson(fp8, t)) throw std::invalid_argument("fa3: with_study was given the lesson's tuning (with_cfg)");
  constexpr Step I = Step::IntraWg, P = Step::Persistent;
  const int keys = t.key_tile == 0 ? 128 : t.key_tile;
  if (t.speculative_max) {
    if (!t.eager_rescale && t.kv_stages == 0 && t.poly_eighths == 0 && t.exp_turns && t.gemm_turns && keys == 128 &&
        d == 128 && (step == I || step == P)) {
      using Spec = Study<0, 0, 0, true, true, false, true>;
      using SpecFp8 = Study<0, 0, 128, true, true, false, true>;
      if (fp8 && step == I) return f(Cfg<128, true, I, SpecFp8>{});
      if (fp8) return f(Cfg<128, true, P, SpecFp8>{});
      if (step == I) return f(Cfg<128, false, I, Spec>{});
      return f(Cfg<128, false, P, Spec>{});
    }
    throw std::invalid_argument("fa3: speculative_max=true with key_tile=" + std::to_string(keys) +
                                " is not compiled: only Step::IntraWg and Step::Persistent at d=128 (bf16, and FP8 "
                                "with key_tile=128), with FA4's max rule, the default stages and both turns");
  }
  if (t.eager_rescale && !fp8) {  // bf16's rule is FA2's already: the lesson's kernels
    Tuning same = t;
    same.eager_rescale = false;
    return with_study(d, fp8, step, same, std::forward<F>(f));
  }
  if (t.eager_rescale) {
    if (t.kv_stages == 0 && t.poly_eighths == 0 && t.exp_turns && t.gemm_turns && d == 128) {
      using Eager128 = Study<0, 0, 128, true, true, true>;
      using Eager192 = Study<0, 0, 192, true, true, true>;
      if (keys == 128 && step == I) return f(Cfg<128, true, I, Eager128>{});
      if (keys == 192 && step == I) return f(Cfg<128, true, I, Eager192>{});
      if (keys == 128 && step == P) return f(Cfg<128, true, P, Eager128>{});
      if (keys == 192 && step == P) return f(Cfg<128, true, P, Eager192>{});
    }
    throw std::invalid_argument(
        "fa3: FP8 with eager_rescale=true is compiled only for Step::IntraWg and Step::Persistent at d=128, "
        "key_tile in {128, 192}, with the default stages, turns and poly_eighths=0 (bf16 always has FA2's rule)");
  }
  if (fp8 && !t.gemm_turns) {
    if (d == 128 && step == I && t.kv_stages == 0 && t.poly_eighths == 0) {
      if (keys == 128 && t.exp_turns) return f(Cfg<128, true, I, Study<0, 0, 128, true, false>>{});
      if (keys == 128 && !t.exp_turns) return f(Cfg<128, true, I, Study<0, 0, 128, false, false>>{});
      if (keys == 192 && t.exp_turns) return f(Cfg<128, true, I, Study<0, 0, 192, true, false>>{});
      if (keys == 192 && !t.exp_turns) return f(Cfg<128, true, I, Study<0, 0, 192, false, false>>{});
    }
    throw std::invalid_argument("fa3: FP8 with gemm_turns=false at key_tile=" + std::to_string(keys) +
                                ", poly_eighths=" + std::to_string(t.poly_eighths) +
                                " is not compiled: only d=128, Step::IntraWg, key_tile in {128, 192}, poly_eighths=0");
  }
  if (fp8 && !t.exp_turns) {
    if (d == 128 && step == I && t.kv_stages == 0 && keys == 192 && t.poly_eighths == 0)
      return f(Cfg<128, true, I, Study<0, 0, 192, false>>{});
    throw std::invalid_argument("fa3: FP8 with exp_turns=false at key_tile=" + std::to_string(keys) +
                                ", poly_eighths=" + std::to_string(t.poly_eighths) +
                                " is not compiled: only d=128, Step::IntraWg, key_tile=192, poly_eighths=0");
  }
  if (keys == 192 && t.poly_eighths == 0 && fp8 && d == 128 && step == P && t.kv_stages == 0)
    return f(Cfg<128, true, P, Study<0, 0, 192>>{});
  if (keys != 128 || t.poly_eighths != 0) {
    if (fp8 && d == 128 && step == I && t.kv_stages == 0) {
      if (keys == 128 && t.poly_eighths == 2) return f(Cfg<128, true, I, Study<0, 2>>{});
      if (keys == 128 && t.poly_eighths == 4) return f(Cfg<128, true, I, Study<0, 4>>{});
      if (keys == 192 && t.poly_eighths == 0) return f(Cfg<128, true, I, Study<0, 0, 192>>{});
      if (keys == 224 && t.poly_eighths == 0) return f(Cfg<128, true, I, Study<0, 0, 224>>{});
      if (keys == 224 && t.poly_eighths == 2) return f(Cfg<128, true, I, Study<0, 2, 224>>{});
    }
    throw std::invalid_argument("fa3: key_tile=" + std::to_string(keys) +
                                ", poly_eighths=" + std::to_string(t.poly_eighths) +
                                " is not compiled: 128 keys and 0 eighths, or for FP8, d=128, Step::IntraWg "
                                "(key_tile, poly_eighths) in {(128, 2), (128, 4), (192, 0), (224, 0), (224, 2)}, "
                                "Step::Persistent (192, 0)");
  }
  if (t.kv_stages == 3 && !fp8 && d == 128 && step == I) return f(Cfg<128, false, I, Study<3>>{});
  throw std::invalid_argument("fa3: kv_stages=" + std::to_string(t.kv_stages) +
                              " is not compiled: 0 (the default), or 3 for bf16, d=128, Step::IntraWg");
}

// Either switch: the lesson's configuration for its tuning, else the study's (for the host-side
// readers of a configuration: footprint(), the schedule tool).
template <class F>
decltype(auto) with_tuning(int d, bool fp8, Step step, const Tuning& t, F&& f) {
  if (is_lesson(fp8, t)) return with_cfg(d, fp8, step, std::forward<F>(f));
  return with_study(d, fp8, step, t, std::forward<F>(f));
}

// The step tables' study rows (step_table.py's tune: names), each with the kernel it runs: the
// bench times these (bench_fa3.cpp); a CPU test checks the two lists name the same rows and that
// every row is compiled (test_fa3.cpp, CpuFa3Studies).
struct StudyRow {
  const char* name;  // after "tune:"
  bool fp8;
  int d;  // 0: every d the row's shapes have (d = 128 only unless said)
  Step step;
  Tuning t;
};
inline const StudyRow kStudyRows[] = {
    {"intrawg_stages3", false, 128, Step::IntraWg, {3}},
    {"intrawg_eager", false, 0, Step::IntraWg, {0, 0, 0, true, true, true}},
    {"persistent_eager", false, 0, Step::Persistent, {0, 0, 0, true, true, true}},
    {"intrawg_spec", false, 128, Step::IntraWg, {0, 0, 0, true, true, false, true}},
    {"persistent_spec", false, 128, Step::Persistent, {0, 0, 0, true, true, false, true}},
    {"fp8_keys128", true, 0, Step::IntraWg, {0, 0, 128}},
    {"fp8_poly2", true, 128, Step::IntraWg, {0, 2, 128}},
    {"fp8_poly4", true, 128, Step::IntraWg, {0, 4, 128}},
    {"fp8_keys192", true, 128, Step::IntraWg, {0, 0, 192}},
    {"fp8_keys224", true, 128, Step::IntraWg, {0, 0, 224}},
    {"fp8_keys224_poly2", true, 128, Step::IntraWg, {0, 2, 224}},
    {"fp8_keys192_noturns", true, 128, Step::IntraWg, {0, 0, 192, false, true}},
    {"fp8_keys128_free", true, 128, Step::IntraWg, {0, 0, 128, false, false}},
    {"fp8_keys128_expturns", true, 128, Step::IntraWg, {0, 0, 128, true, false}},
    {"fp8_keys192_free", true, 128, Step::IntraWg, {0, 0, 192, false, false}},
    {"fp8_keys192_expturns", true, 128, Step::IntraWg, {0, 0, 192, true, false}},
    {"fp8_keys128_persistent", true, 128, Step::Persistent, {0, 0, 128}},
    {"fp8_keys192_persistent", true, 128, Step::Persistent, {0, 0, 192}},
    {"fp8_keys128_eager", true, 128, Step::IntraWg, {0, 0, 128, true, true, true}},
    {"fp8_keys192_eager", true, 128, Step::IntraWg, {0, 0, 192, true, true, true}},
    {"fp8_keys128_persistent_eager", true, 128, Step::Persistent, {0, 0, 128, true, true, true}},
    {"fp8_keys192_persistent_eager", true, 128, Step::Persistent, {0, 0, 192, true, true, true}},
    {"fp8_keys128_spec", true, 128, Step::IntraWg, {0, 0, 128, true, true, false, true}},
    {"fp8_keys128_persistent_spec", true, 128, Step::Persistent, {0, 0, 128, true, true, false, true}},
};

}  // namespace fa3::kernel
