// The tile policy of chapter 12, in one place: one Cfg per compiled variant (head dim, bf16
// or FP8, step, K/V stages, FP8's exponent split and key tile) owns its tile sizes, its TMA
// boxes, its pipeline depth, its shared-memory layout and its register budgets, and with_cfg()
// is the one switch from the run-time choice to the compiled variant. No CUDA syntax: fa3.cpp
// (checks) and fa3_forward.cuh (kernels) both include it.
#pragma once

#include <cstddef>
#include <numeric>
#include <stdexcept>
#include <string>
#include <utility>

#include "device.h"  // kH200SmemPerBlock
#include "fa3.h"

// fa3::kernel: the parts of the forward a later chapter builds on with its own variant (chapter 15): the tile
// configs, the parameters, the launchers and their host checks.
namespace fa3::kernel {

// FA4's max rule (attention_rows.cuh, OnlineSoftmax): a row's m_i follows its max only when a
// tile raises it by more than 8 (log2 units), so O_i is rescaled almost never, and P~ <= 2^8
// stays inside bf16 and e4m3 (max 448) alike. FP8 runs with it. bf16 keeps FA2's exact max: under
// FA4's rule the largest P~ of a row is no longer exactly 1, and rounds to bf16 like the others,
// which on flash-attention's accuracy matrix costs up to 2.7x the error of PyTorch's bf16 SDPA
// (WORKLOG.md, "Correctness"); the speculative max, which needs the rule, stays a bf16 study.
inline constexpr int kFa4RescaleLog2 = 8;

// How a kernel departs from the lesson's: a study (the step tables' tune: rows; studies/). The
// lesson's kernels take Lesson, every switch at its default. A study derives from it and changes
// what it studies (studies/fa3_studies.h): the K/V ring's depth, FP8's exponentials on the FMA
// pipes, FP8's wider key tile, FP8 without a consumer turn, FP8 with FA2's max rule, the
// speculative max. LoopSoftmax<Consumer> is the intra-warpgroup loop's softmax step, the hook a
// study may replace (the lesson's is defined in fa3_forward.cuh).
struct Lesson {
  static constexpr int kStagesOverride = 0;  // 0: the tile policy's ring depth
  static constexpr int kPolyEighths = 0;     // FP8: of every 8 exponentials, how many on the FMA pipes
  static constexpr int kKeyTile = 0;         // 0: 128 keys; FP8 also 192, 224
  static constexpr bool kExpTurnsOn = true, kGemmTurnsOn = true;  // FP8 may run without either turn
  static constexpr bool kEagerRescale = false;                    // FP8 with FA2's max rule
  static constexpr bool kSpeculativeMax = false;
  template <class Consumer>
  struct LoopSoftmax;
};

// E = bytes per element. Every shared-memory row is 128 bytes (64 bf16 or 128 e4m3),
// 128B-swizzled as TMA writes it, so a tile of width d*E bytes is stored as d*E/128 "column
// boxes" of [rows][128 bytes] one after the other.
template <int d_, bool kFp8_, Step kStep_, class Study_ = Lesson>
struct Cfg {
  using Study = Study_;
  static constexpr int d = d_;
  static constexpr bool kFp8 = kFp8_;
  static constexpr Step kStep = kStep_;
  static constexpr int E = kFp8 ? 1 : 2;
  // Of every 8 pairs of a row's scores, how many take their exponential from soft_exp2.h's
  // polynomial on the FMA pipes instead of the MUFU (fa3_rows.cuh, SplitExp2): FP8 only.
  static constexpr int kPolyEighths = Study::kPolyEighths;
  static_assert(kPolyEighths >= 0 && kPolyEighths <= 8 && (kPolyEighths == 0 || kFp8), "FP8's exponent split");

  // Tiles: B_r = 128 query rows per CTA, two consumer warpgroups of 64 rows; B_c keys per step:
  // 128, or for FP8 wider (192, 224: more softmax per turn of ping-pong, and O rescaled, the
  // row max reduced and the barriers passed once per more keys).
  static constexpr int B_r = 128, B_c = Study::kKeyTile ? Study::kKeyTile : 128, kRowsPerWarpgroup = 64;
  // TMA boxes: kBoxCols elements (128 bytes, one swizzle row) by B_r or B_c rows; FP8's V
  // arrives transposed (Vt8: d rows of keys) in kVtBoxes boxes of 128 keys (a box's row is one
  // swizzle row); a key tile of 192 or 224 keys loads the rest of its last box, never reads it.
  static constexpr int kBoxCols = 128 / E;
  static constexpr int kBoxes = d * E / 128;  // column boxes of Q, K (and of V in bf16)
  static constexpr int kVtBoxes = (B_c + 127) / 128;

  // What each step switches on (fa3.h, Step).
  static constexpr bool kProducer = kStep != Step::Tma;
  static constexpr bool kPingPong = kStep == Step::PingPong || kStep == Step::IntraWg || kStep == Step::Persistent;
  static constexpr bool kIntraWg = kStep == Step::IntraWg || kStep == Step::Persistent;
  static constexpr bool kPersistent = kStep == Step::Persistent;
  // FP8: the consumers also take turns at the exponentials (the MUFU that both share), when
  // their GEMMs overlap (intra-warpgroup and persistent steps). Not at d = 256: there the GEMMs of
  // a tile take twice as long as its exponentials, as bf16's at d = 128, and ping-pong's turn at
  // the GEMMs keeps the two softmaxes apart (and the 2 KB of the turns' sink would not fit).
  static constexpr bool kExpTurns = kFp8 && kIntraWg && Study::kExpTurnsOn && d == 128;
  // The turn at the GEMMs (ping-pong's named barriers); FP8 can also run its two consumers free.
  static constexpr bool kGemmTurns = kPingPong && Study::kGemmTurnsOn;
  static constexpr int kThreads = kProducer ? 384 : 256;
  // The online softmax's max rule: FA2's exact running max for bf16 (O_i rescaled whenever it
  // moves), FA4's (kFa4RescaleLog2) for FP8 and for bf16's speculative max; kEagerRescale gives FP8
  // FA2's rule for the _eager rows.
  static constexpr bool kFa4Max = (kFp8 || Study::kSpeculativeMax) && !Study::kEagerRescale;
  static constexpr int kRescaleLog2 = kFa4Max ? kFa4RescaleLog2 : 0;
  // Under FA4's rule the intra-warpgroup loop may exponentiate against the current m_i before it
  // knows the tile's max, and check the max after (fa3_forward.cuh, Consumer::softmax_at_m).
  static constexpr bool kSpeculativeMax = Study::kSpeculativeMax;

  // The K/V ring: two stages hold a d = 128 bf16 tile pair next to Q_i and O in 227 KB; the
  // smaller tiles (d = 64, FP8) take four, FP8's wider key tiles three (192) or two (224); FP8 at
  // d = 256 (64 KB a stage, and O's 64 KB of its own) two.
  static constexpr int kStages = [] {
    if (Study::kStagesOverride) return Study::kStagesOverride;
    if (kFp8 && d == 256) return 2;
    if (kFp8) return B_c == 128 ? 4 : B_c == 192 ? 3 : 2;
    return d == 64 ? 4 : 2;
  }();
  // The intra-warpgroup loop waits for V_it and K_{it+1} right after it issues S_it when the ring
  // holds three stages or more (fa3_forward.cuh, Consumer::wait_ahead).
  static constexpr bool kWaitAhead = kStages >= 3;

  // Shared memory: Q_i, kStages x (K_j, V_j), O's own buffer where it needs one, mbarriers.
  static constexpr int kQBytes = B_r * d * E, kKBytes = B_c * d * E, kVBytes = kFp8 ? kVtBoxes * d * 128 : B_c * d * E;
  static constexpr std::size_t kBarrierBytes = 8 * (2 + 4 * kStages + (kExpTurns ? 1 + 256 : 0));
  // O leaves through shared memory as bf16 (fa3_rows.cuh, store_o): in Q_i's buffer, free once
  // a warpgroup's last S is done (each warpgroup reads and writes only its own rows of it);
  // FP8's Q_i is half as large, and a persistent CTA's Q_i buffer already holds the next
  // tile's Q_i then: those give O a buffer of its own.
  static constexpr int kOBytes = B_r * d * 2;
  static constexpr int kOwnOBytes = kQBytes >= kOBytes && !kPersistent ? 0 : kOBytes;
  static constexpr std::size_t kSmemBytes =
      1024 + kQBytes + std::size_t(kStages) * (kKBytes + kVBytes) + kOwnOBytes + kBarrierBytes;

  // FP8's K descales change every kFp8KeysPerKScale keys (fa3.h), which a key tile of 192 or
  // 224 keys does not align with: the softmax takes one scale per group of kScaleKeys keys
  // (attn::GroupScale), the largest group that never straddles a change.
  static constexpr int kScaleKeys = std::gcd(B_c, kFp8KeysPerKScale), kScaleGroups = B_c / kScaleKeys;

  // The GEMMs' k steps: S = Q K^T in steps of 32 bytes along each 128-byte row (k16 bf16, k32
  // e4m3); O += P V along the keys (16 for bf16, 32 for e4m3).
  static constexpr int kSSteps = d * E / 32;
  static constexpr int kPSteps = kFp8 ? B_c / 32 : B_c / 16;

  // Registers: the kernel starts with 65536 / kThreads rounded down to 8 (168 at 384 threads);
  // setmaxnreg moves them from the producer warpgroup (which only issues copies) to the two
  // consumers. .inc can only take what .dec gave back, so the budgets must fit in that.
  static constexpr int kRegsAtEntry = 65536 / kThreads / 8 * 8;
  static constexpr int kProducerRegs = 24, kConsumerRegs = 240;

  static_assert(kBoxes >= 1 && kSSteps >= 4 && kPSteps >= 4, "rows of at least 128 bytes");
  static_assert(kPingPong || !kIntraWg, "each step adds to the one before");
  static_assert(Study::kExpTurnsOn || (kFp8 && kIntraWg), "turns at the exponentials: FP8, intra-warpgroup");
  static_assert(Study::kGemmTurnsOn || (kFp8 && kIntraWg && !kPersistent), "free consumers: FP8, intra-warpgroup");
  static_assert(B_c == 128 || (kFp8 && (B_c == 192 || B_c == 224)), "B_c: 128, or 192 or 224 for FP8");
  static_assert(!kSpeculativeMax || (kIntraWg && kRescaleLog2 > 0), "speculative max: FA4's rule, intra-warpgroup");
  static_assert(!Study::kEagerRescale || kFp8, "bf16 has FA2's max rule already: eager_rescale is FP8's switch");
  static_assert(!kFp8 || d == 128 || (d == 256 && B_c == 128), "FP8: d = 128, or d = 256 with 128 keys");
  static_assert(!kFp8 || kRowsPerWarpgroup == kFp8RowsPerQScale, "FP8: one Q scale per consumer warpgroup (fa3.h)");
  static_assert(kSmemBytes <= ladder::kH200SmemPerBlock, "the stages fit in the shared memory of a CTA");
  static_assert(!kProducer || 128 * kProducerRegs + 256 * kConsumerRegs <= kThreads * kRegsAtEntry,
                "setmaxnreg budgets within the registers the CTA starts with");
};

// FP8's key tile when the caller leaves it to the policy (Fp8ForwardOptions::key_tile = 0): of
// the compiled 128, 192 and 224, with the default step (fa3.h, kFp8BestStep), the one that was
// fastest or within 2% of the fastest at every d = 128 shape of the benchmark, in two runs
// (WORKLOG.md, "The max rule, and the policy that follows").
inline constexpr int kFp8KeyTile = 128;

// The lesson's kernels, the one switch from the run-time choice to the compiled configuration:
// calls f(Cfg<...>{}) for every step of bf16 at d = 64 and 128 and of FP8 at d = 128, and FP8 at
// d = 256 (Step::IntraWg, Step::Persistent). Anything else throws std::invalid_argument naming
// what is compiled (fa3.cpp has refused unsupported shapes before). The studies' configurations
// have a switch of their own (studies/fa3_studies.h, with_study).
template <class F>
decltype(auto) with_cfg(int d, bool fp8, Step step, F&& f) {
  auto by_step = [&](auto d_fp8) -> decltype(auto) {
    constexpr int D = decltype(d_fp8)::first_type::value;
    constexpr bool kF = decltype(d_fp8)::second_type::value;
    switch (step) {
      case Step::Tma: return f(Cfg<D, kF, Step::Tma>{});
      case Step::WarpSpec: return f(Cfg<D, kF, Step::WarpSpec>{});
      case Step::PingPong: return f(Cfg<D, kF, Step::PingPong>{});
      case Step::IntraWg: return f(Cfg<D, kF, Step::IntraWg>{});
      case Step::Persistent: return f(Cfg<D, kF, Step::Persistent>{});
    }
    throw std::invalid_argument("fa3: step " + std::to_string(int(step)) +
                                " is not a step: tma, warpspec, pingpong, intrawg or persistent (fa3::Step)");
  };
  using I64 = std::integral_constant<int, 64>;
  using I128 = std::integral_constant<int, 128>;
  using Bf16 = std::false_type;
  using Fp8 = std::true_type;
  if (fp8 && d == 128) return by_step(std::pair<I128, Fp8>{});
  if (fp8 && d == 256 && step == Step::IntraWg) return f(Cfg<256, true, Step::IntraWg>{});
  if (fp8 && d == 256 && step == Step::Persistent) return f(Cfg<256, true, Step::Persistent>{});
  if (!fp8 && d == 128) return by_step(std::pair<I128, Bf16>{});
  if (!fp8 && d == 64) return by_step(std::pair<I64, Bf16>{});
  throw std::invalid_argument("fa3: d=" + std::to_string(d) + (fp8 ? " FP8" : " bf16") +
                              " is not compiled: bf16 at d in {64, 128}, FP8 at d = 128 (every step) and d = 256 "
                              "(Step::IntraWg, Step::Persistent)");
}

}  // namespace fa3::kernel
