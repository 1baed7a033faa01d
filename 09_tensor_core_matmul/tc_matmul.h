// Chapter 09: C = A B on the tensor cores, bf16 inputs, fp32 accumulation and output,
// climbed one idea per step from WMMA to Hopper's warp-specialised wgmma + TMA kernel.
// Launchers are host functions (no CUDA syntax here); the kernels live in
// tc_matmul.cu (steps 1-4, sm_80 and later) and tc_matmul_hopper.cu (steps 5-6, sm_90a).
//
// Layouts, the same for every step and for the cuBLAS anchor:
//   A  [M, K] row-major (K contiguous: "K-major")
//   Bt [N, K] row-major: B stored transposed, also K-major
//   C  [M, N] row-major, fp32
// Both operands K-major because that is what every tensor-core path reads natively:
// mma.sync's B operand is ".col" (B^T rows), ldmatrix without .trans delivers it from
// rows of B^T, and wgmma and TMA's 128-byte swizzle are defined on K-major tiles.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "bf16.h"
#include "matmul_harness.h"

namespace tcmm {

using ladder::bf16;

enum class Variant {
  Wmma,             // 1. nvcuda::wmma 16x16x16 fragments: the tensor core as an API
  MmaLdmatrix,      // 2. mma.sync.m16n8k16 + ldmatrix in PTX, plain shared-memory tiles
  MmaSwizzle,       // 3. the same with the 128-byte XOR swizzle: no ldmatrix bank conflicts
  MmaPipeline,      // 4. cp.async multi-stage pipeline: loads of the next tiles overlap the MMAs
  WgmmaTma,         // 5. Hopper: TMA tensor copies on mbarriers, wgmma reading shared memory
  WgmmaWs,          // 6a. warp specialisation: a TMA producer warpgroup, two consumer warpgroups
  WgmmaPersistent,  // 6b. persistent CTAs walking an L2-friendly tile order
  WgmmaCluster,     // 6c. 2-CTA clusters: the shared B tile multicast by TMA to both SMs
};
inline constexpr Variant kAll[] = {
    Variant::Wmma,     Variant::MmaLdmatrix, Variant::MmaSwizzle,      Variant::MmaPipeline,
    Variant::WgmmaTma, Variant::WgmmaWs,     Variant::WgmmaPersistent, Variant::WgmmaCluster};

const char* name(Variant v);  // "wmma", "mma_ldmatrix", ..., "wgmma_cluster"
const char* idea(Variant v);  // the one change this step makes, for the step table
bool needs_sm90a(Variant v);  // steps 5-6: wgmma and setmaxnreg exist only on sm_90a

// The one requirement the Hopper steps name, in every message about them.
inline constexpr const char* kSm90aRequirement = "sm_90a (Hopper, compute capability 9.0)";

// Empty when `v` can run on device 0; otherwise why not ("no CUDA device (...)", or
// "wgmma_tma needs sm_90a (Hopper, compute capability 9.0); device 0 is sm_86 (...)").
std::string unavailable_reason(Variant v);

// How a step tiles C: each CTA computes a BM x BN tile, walking K in BK slices through
// `stages` shared-memory buffers of smem_bytes in all; `cluster` CTAs share B tiles.
struct Tiling {
  int BM, BN, BK, threads, stages, cluster;
  std::size_t smem_bytes;
};
// The tiling this GPU runs (ladder::device(); the H200's without a GPU). Step 4 runs three
// stages (144 KiB), or two (96 KiB) on a GPU with less shared memory per block (an RTX
// 30/40/50), said once on stderr.
Tiling tiling(Variant v);
// Step 4's stages on a GPU that allows smem_per_block bytes per block: 3, 2, or 0 (none fits).
int pipeline_stages(std::size_t smem_per_block);

// Every step has one fast path and one guarded path, the same MMA code behind both.
// Fast: 16-byte copies (cp.async, TMA) need every row of A and Bt to start on a 16-byte
// boundary: K % 8 == 0 and 16-byte-aligned A and Bt. Tiles that overhang M, N or K are
// zero-filled by the copies themselves (cp.async src-size 0, TMA's out-of-bounds fill).
// Guarded: bounds-checked element loads into the same shared-memory layout.
// C is always stored with bounds checks (8-byte stores when N is even and C 8-byte aligned).
bool fast_path(int M, int N, int K, const void* A, const void* Bt);

// Throws std::invalid_argument naming what is allowed: M, N, K < 1 or > kMaxDim, null or
// misaligned pointers (A, Bt to 2 bytes, C to 4). Pure argument checks: no CUDA call.
inline constexpr int kMaxDim = 1 << 20;
void validate(Variant v, int M, int N, int K, const void* A, const void* Bt, const void* C);

// C[M, N] = A[M, K] Bt[N, K]^T, device pointers, any M, N, K >= 1. Checks the arguments
// (validate), then the device (compute capability, sm_90a for steps 5-6, enough shared
// memory per block; std::invalid_argument otherwise), all before any launch.
void matmul(Variant v, int M, int N, int K, const bf16* A, const bf16* Bt, float* C, cudaStream_t stream = nullptr);

// Every step as a contender of the matmul harness (common/matmul_harness.h), in ladder
// order, all eight whatever the device: callers skip those unavailable_reason names.
inline std::vector<mm::Contender<bf16>> contenders() { return mm::contenders<bf16>(kAll, name, matmul); }

// Other configurations of the pipelined mma.sync kernel and the final wgmma kernel,
// measured once (benchmarks named tune:<name>, registered with LADDER_TUNE=1) to choose
// the defaults above. Same checks, same paths.
struct Tuned {
  std::string name;
  bool sm90a;
  std::function<void(int M, int N, int K, const bf16* A, const bf16* Bt, float* C)> run;
};
std::vector<Tuned> tuning_variants();

}  // namespace tcmm
