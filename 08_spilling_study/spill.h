// Chapter 08: where do FlashAttention's accumulators live? One FA2 forward kernel in the lecture's shape,
// compiled many ways (tile sizes, head dims, register caps, and once with its accumulators forced into local
// memory), so the compiler's report, the profiler and the clock can be compared side by side.
// Declared here, defined in spill.cu; non-causal attention only.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>
#include <vector>

#include "attention_shape.h"

namespace spill {

inline constexpr int kSupportedD[] = {64, 128, 256};  // the head dims with a compiled variant

// The thread block is bdx x bdy = 32 x 4: a warp spans d (thread tx owns columns tx, tx + 32, ...) and warp ty
// owns the query rows ty, ty + 4, ... So each thread accumulates O_i[B_r / bdy][d / bdx].
inline constexpr int kBdx = 32;
inline constexpr int kBdy = 4;
inline constexpr int kThreads = kBdx * kBdy;
// K_j rows are padded by 4 floats so that the float4 reads of S = Q_i K_j^T (lanes on consecutive keys) fall on
// distinct shared-memory banks.
inline constexpr int kKPad = 4;

// Where the running state (O_i, m_i, l_i) lives.
// The hardware's limit on registers per thread; a variant with a lower __maxnreg__ is "capped".
inline constexpr int kMaxRegsPerThread = 255;

enum class Accumulators {
  Registers,  // loops over the arrays fully unrolled: every index is a constant, every element its own register
  Local,      // the same loops not unrolled: indices known only at run time, so the arrays go to local memory
};

struct Variant {
  Accumulators acc = Accumulators::Registers;
  int d = 128, B_r = 8, B_c = 32;
  int max_regs = kMaxRegsPerThread;  // __maxnreg__: the most registers per thread the compiler may use

  const char* kind() const;   // "normal", "local" or "capped"
  std::string label() const;  // "variant=normal/d=128/B_r=8/B_c=32", "variant=capped/maxrreg=64/d=128/..."
  bool operator==(const Variant& o) const {
    return acc == o.acc && d == o.d && B_r == o.B_r && B_c == o.B_c && max_regs == o.max_regs;
  }
};

// The lecture's kernel: d = 128, B_r = 8, B_c = 32, accumulators in registers.
inline constexpr Variant kLecture{};

// Every compiled variant, in the order the chapter shows them: the B_r x B_c sweep at d = 128, the other head
// dims at B_r = 8, B_c = 32, the local-memory variant, then the register caps (loosest first).
const std::vector<Variant>& variants();

// Shared memory per block: Q_i[B_r][d], K_j[B_c][d + kKPad], V_j[B_c][d], S[B_r][B_c], fp32.
inline constexpr std::size_t smem_bytes(int d, int B_r, int B_c) {
  return sizeof(float) *
         (std::size_t(B_r) * d + std::size_t(B_c) * (d + kKPad) + std::size_t(B_c) * d + std::size_t(B_r) * B_c);
}
inline std::size_t smem_bytes(const Variant& v) { return smem_bytes(v.d, v.B_r, v.B_c); }

// O = softmax(Q K^T / sqrt(d)) V and L = m + log(l) per query row ([B, H, N]), with kernel variant v.
// Device pointers. Throws std::invalid_argument, before any launch, for a variant that is not compiled, a
// shape whose d differs from v.d, a causal shape, or a bad shape.
void forward(const Variant& v, const ladder::AttentionShape& s, const float* Q, const float* K, const float* V,
             float* O, float* L, cudaStream_t stream = nullptr);

// What the runtime says about a compiled variant (needs a GPU).
struct KernelInfo {
  int num_regs = 0;                         // cudaFuncGetAttributes: registers per thread
  std::size_t local_bytes = 0;              // cudaFuncGetAttributes: local memory per thread
  std::size_t smem_bytes = 0;               // dynamic shared memory per block
  int blocks_per_sm = 0;                    // cudaOccupancyMaxActiveBlocksPerMultiprocessor
  double occupancy = 0.0;                   // blocks_per_sm * kThreads / max threads per SM
  int binary_version = 0, ptx_version = 0;  // the machine code's sm and its PTX's (they differ when the
                                            // driver compiled older PTX for this GPU)
};
KernelInfo kernel_info(const Variant& v);

}  // namespace spill
