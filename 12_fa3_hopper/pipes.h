// Do the tensor cores and the MUFU work at the same time? FP8's forward needs them to: a 128 x B_c
// tile's exponentials take the MUFU as long as its FP8 GEMMs take the tensor cores (README, "Why
// FP8 is not 2x"). This asks the hardware directly: one CTA per SM, two warpgroups, each running
// one kind of work in a loop, alone or beside the other; the cycles each takes (clock64, per SM)
// say whether the two pipes overlap (the same cycles as alone) or take turns (the sum).
// Declared here, no CUDA syntax; pipes.cu has the kernel (sm_90a: wgmma).
#pragma once

#include <string>

namespace fa3::pipes {

// What a warpgroup does per iteration of its loop (the kernel's own FP8 shapes):
//   Idle      nothing
//   TensorSS  four groups of four wgmma.m64n192k32 e4m3, both operands in shared memory, into one
//             accumulator, then a wait: S = Q_i K_j^T at B_c = 192, four times
//   TensorRS  the same with wgmma.m64n128k32, A from registers: O += P V
//   Exp       64 ex2.approx per thread, 64 independent chains: the MUFU alone
//   Softmax   the FP8 softmax's instructions per score: FFMA, ex2, FADD into the row sum, and per
//             pair one conversion to e4m3x2 (64 scores per thread)
//   Convert   64 FADD and 32 conversions to e4m3x2 per thread: which pipe converts
//   ExpHalf2  32 ex2.approx.f16x2 per thread (64 exponentials in half precision, two per instruction)
//   ToHalf2   64 FADD and 32 conversions of two floats to f16x2 per thread
//   Max       64 fmaxf per thread (FMNMX), 64 independent chains: the row maximum's instruction
//   MaxInt    the same as signed-integer maxima of the bits (IMNMX)
//   Overlap   the FP8 kernel's step at B_c = 192 without its barriers: S_j and P_{j-1} V_{j-1}
//             issued, S_j waited for, its row maxima, exponentials and sums while P V runs, P~_j
//             converted to e4m3 once P V is done (96 scores per thread)
//   OverlapGemmTurn, OverlapTurns  the same with the kernel's turn at the GEMMs, and with its turn
//             at the exponentials too: only side by side with itself (the turns pass between the two)
enum class Work {
  Idle,
  TensorSS,
  TensorRS,
  Exp,
  Softmax,
  Convert,
  ExpHalf2,
  ToHalf2,
  Max,
  MaxInt,
  Overlap,
  OverlapGemmTurn,
  OverlapTurns
};
const char* name(Work w);

// One launch: warpgroup 0 runs `a` for iters_a iterations, warpgroup 1 runs `b` for iters_b;
// medians over the SMs.
struct Timing {
  double cycles[2];  // clock64 from the common start to each warpgroup's end
  double ns;         // %globaltimer over the whole CTA: the clock the SMs ran at is cycles / ns
};
Timing run(Work a, int iters_a, Work b, int iters_b);

// Per iteration of each kind: wgmma FLOPs (per warpgroup), ex2 and conversions (per thread).
double flops_per_iter(Work w);
int exps_per_iter(Work w);
int converts_per_iter(Work w);

// Empty when this process can run the kernel; otherwise why not.
std::string unavailable_reason();

}  // namespace fa3::pipes
