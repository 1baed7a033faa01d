// The tile policy of chapter 14 in one place: one Cfg per compiled variant (head dim, step)
// owns its tiles, its TMA boxes, its pipeline depth, its shared-memory layout and its register
// budgets; with_cfg() is the one switch from the run-time choice to the compiled variant. And
// what a launch of the main kernel is given (Params). No CUDA device syntax.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "fa3_bwd.h"
#include "fa3_bwd_layout.h"
#include "fa3_bwd_scheduler.h"

// fa3bwd::kernel: the parts of the backward a later chapter builds on with its own variant (chapter 15): the tile
// configs, the parameters, the launchers and their host checks.
namespace fa3bwd::kernel {

// The query tile: 64 rows at d = 128; at d = 64, 128. A step's GEMMs are d deep (S^T, dP^T) or
// B_r deep (dV, dK): at d = 64 with 64 queries each warpgroup's step is twenty m64n64k16 wgmmas,
// too short to hide the step's fixed costs (its barriers, the hand-offs of dQ_i, the loads of
// L_i and D_i), and S^T, dP^T with N = 64 read as many shared-memory bytes per FLOP as the
// tensor cores can take. 128 queries double every GEMM of the step and give S^T and dP^T
// N = 128. At d = 128 the same tile would not fit the registers (dK, dV are 64 each already).
constexpr int default_B_r(int d) { return d == 64 ? 128 : 64; }

template <int d_, Step kStep_, int B_r_ = default_B_r(d_)>
struct Cfg {
  static constexpr int d = d_;
  static constexpr Step kStep = kStep_;
  static constexpr bool kBulk = kStep != Step::Atomic;  // dQ through shared memory and the writer warp
  static constexpr bool kDeterministic = kStep == Step::Deterministic;

  // A CTA owns B_c = 128 keys (K_j, V_j), 64 per consumer warpgroup, and walks the query
  // tiles of B_r rows (Q_i, dO_i, L_i, D_i) of every query head of its KV head.
  static constexpr int B_r = B_r_, B_c = layout::B_c, kKeysPerWarpgroup = 64;
  static constexpr int kBoxCols = 64;    // bf16 columns per TMA box: one 128-byte swizzle row
  static constexpr int kBoxes = d / 64;  // column boxes of every [rows][d] tile
  static constexpr int kStages = 2;      // the Q_i/dO_i ring
  static constexpr int kThreads = 384;   // warpgroup 0: the TMA producer warp, the dQ writer warp;
                                         // warpgroups 1, 2: the consumers
  static constexpr int kProducerRegs = 24, kConsumerRegs = 240;
  static constexpr int kRegsAtEntry = 65536 / kThreads / 8 * 8;

  // Who computes which 64 x 64 block of dQ_i = dS K_j (B_r x d, summed over the B_c keys): at
  // d = 128 each consumer its own 64 columns; with 128 queries its own 64 rows; otherwise (d = 64,
  // 64 queries) both the whole block, each over its own 64 keys, and both add into it.
  static constexpr bool kDqSplitColumns = d == 128, kDqSplitRows = B_r == 128;
  static constexpr int kDqWritersPerBlock = kDqSplitColumns || kDqSplitRows ? 1 : 2;
  BWD_HD static constexpr int dq_row_block(int i, int cw) { return kDqSplitRows ? 2 * i + cw : i; }
  BWD_HD static constexpr int dq_chunk(int cw) { return kDqSplitColumns ? cw : 0; }

  // Shared memory, in this order (every tile 1024-byte aligned, as the swizzle needs):
  //   K_j, V_j                      [kBoxes][B_c][128 B], by TMA, once
  //   kStages x {Q_i, dO_i}         [kBoxes][B_r][128 B] each, by TMA
  //   2 x dS^T                      [B_r / 64][B_c][128 B] bf16, 128B-swizzled as TMA would write it;
  //                                 two, so that writing step n's never waits for step n-1's dQ to read its own
  //   kStages x {L_i, D_i}          B_r + B_r floats, by bulk copy, with their stage's Q_i, dO_i
  //   dQ (BulkReduce, Deterministic)  kdQBuffers 64 x 64 fp32 blocks per consumer warpgroup
  //   mbarriers
  static constexpr int kKBytes = B_c * d * 2, kVBytes = kKBytes;
  static constexpr int kQBytes = B_r * d * 2, kdOBytes = kQBytes, kRowBytes = B_r * 4;
  static constexpr int kStageBytes = kQBytes + kdOBytes;
  static constexpr int kStageLoadBytes = kStageBytes + 2 * kRowBytes;  // what a stage's "full" barrier counts
  static constexpr int kdSBytes = B_c * B_r * 2, kdSBuffers = 2;
  static constexpr int kRowsBytes = kStages * 2 * kRowBytes;
  // Two blocks per consumer let it write step n's while the writer still reads step n-1's. With
  // 128 queries there is room for one only; the writer has a whole step to read it.
  static constexpr int kdQBuffers = B_r == 128 ? 1 : 2;
  static constexpr int kdQBytes = kBulk ? 2 * kdQBuffers * layout::kChunkFloats * 4 : 0;
  // The barriers; then a persistent variant's next-place slots (two ints and their full and empty
  // barriers; fa3_bwd_kernel.cuh's for_each_walk).
  static constexpr std::size_t kBarrierBytes = 8 * (1 + 2 * kStages + 2 * 2 * kdQBuffers) + 8 * (2 + 2) + 8;
  static constexpr std::size_t kSmemBytes = 1024 + kKBytes + kVBytes + std::size_t(kStages) * kStageBytes +
                                            kdSBuffers * kdSBytes + kRowsBytes + kdQBytes + kBarrierBytes;

  // The GEMMs' k16 slices: S^T and dP^T along d (16 per wgmma); dV and dK along the B_r queries;
  // dQ along the keys: all B_c when the consumers split dQ_i's columns or rows, else its own 64.
  static constexpr int kSSlices = d / 16, kQSlices = B_r / 16;
  static constexpr int kDqKeySlices = kDqWritersPerBlock == 1 ? B_c / 16 : kKeysPerWarpgroup / 16;
  static constexpr int kAcc = B_r / 2;  // accumulator registers of S^T, dP^T (64 keys x B_r queries)
  // dS^T = P^T o (dP^T - D_i) takes P^T from its bf16 fragments rather than S^T's fp32 registers
  // (the registers of 128 queries; fa3_bwd_kernel.cuh, score_gradients).
  static constexpr bool kPFromFragments = B_r == 128;

  static_assert(d == 64 || d == 128, "d in {64, 128}");
  static_assert(B_r == 64 || (B_r == 128 && d == 64), "B_r = 64, or 128 at d = 64 (registers)");
  static_assert(B_r % layout::kBlockRows == 0 && layout::kRowPad % B_r == 0, "query tiles of whole dQ blocks");
  static_assert(kSmemBytes <= 227 * 1024, "within an H100/H200 CTA's shared memory");
  static_assert(128 * kProducerRegs + 256 * kConsumerRegs <= kThreads * kRegsAtEntry,
                "setmaxnreg budgets within the registers the CTA starts with");
};

// The main kernel's parameters (beside the four tensor maps): the shape's heads and rows
// (attention_shape.h), then the backward's own.
struct Params : ladder::AttentionParams {
  int N_pad, blocks;  // padded rows of L2, D per head; its 64-row dQ blocks (N_pad / 64)
  bool causal;
  float scale_log2e;  // 1/sqrt(d) * log2(e): P = exp2(S scale_log2e - L2)
  float scale;        // 1/sqrt(d): dK = scale dS^T Q (dQ's is applied by the post-processing)
  const float *L2, *D;
  float* dQ_acc;
  int* dq_flags;  // Deterministic: how many key tiles have added into each dQ block; a persistent
                  // variant (bulk step): the first counts the places drawn (for_each_walk)
  bf16 *dK, *dV;
  sched::Sections sections;  // the launch order of the (key tile, KV head) CTAs
};

template <class F>
decltype(auto) with_cfg(int d, Step step, F&& f) {
  auto by_step = [&](auto d_) -> decltype(auto) {
    constexpr int D = decltype(d_)::value;
    switch (step) {
      case Step::Atomic: return f(Cfg<D, Step::Atomic>{});
      case Step::BulkReduce: return f(Cfg<D, Step::BulkReduce>{});
      case Step::Deterministic: return f(Cfg<D, Step::Deterministic>{});
    }
    throw std::invalid_argument("fa3bwd: step " + std::to_string(int(step)) +
                                " is not a step: atomic, bulk or deterministic (fa3bwd::Step)");
  };
  if (d == 128) return by_step(std::integral_constant<int, 128>{});
  if (d == 64) return by_step(std::integral_constant<int, 64>{});
  throw std::invalid_argument("fa3bwd: d=" + std::to_string(d) + " is not compiled: d in {64, 128}");
}

inline std::size_t smem_bytes(int d, Step step) {
  return with_cfg(d, step, [](auto c) { return decltype(c)::kSmemBytes; });
}

// One of the kernels, to ask tc::compiled_for_sm90a whether this build has their code.
const void* sm90a_kernel();

// The operands of the main kernel and its launch (after every check).
struct Operands {
  const bf16 *Q, *K, *V, *dO;
};
void launch_main(const ladder::AttentionShape& s, const Operands& x, const Params& p, Step step, cudaStream_t stream);

// What backward() is given, and its checks: everything before the main kernel's launch (the
// shape, the pointers, the device, the step), then the pre-processing, launched; returns the
// shape with its defaults resolved and the main kernel's parameters. (fa3_bwd.cpp; chapter 15's
// backward uses it too.)
struct Tensors {
  const bf16 *Q, *K, *V, *O;
  const float* L;
  const bf16* dO;
  bf16 *dQ, *dK, *dV;
  float* workspace;
};
struct Prepared {
  ladder::AttentionShape s;
  Params p;
};
Prepared prepare(const std::string& who, const ladder::AttentionShape& s, const Tensors& x, const BackwardOptions& opt,
                 cudaStream_t stream);

// The pre- and post-processing (fa3_bwd_prepost.cu): L2 = L log2(e) (+inf where L = -inf and
// in the padding rows), D = rowsum(dO * O) (0 in the padding), the dQ accumulator zeroed;
// then dQ = scale * dQ_acc, rounded to bf16. The flags follow the accumulator in the workspace
// and are zeroed with it.
void launch_preprocess(const ladder::AttentionShape& s, const bf16* O, const bf16* dO, const float* L, float* L2,
                       float* D, float* dQ_acc, cudaStream_t stream);
void launch_postprocess(const ladder::AttentionShape& s, const float* dQ_acc, bf16* dQ, cudaStream_t stream);

}  // namespace fa3bwd::kernel
