// The host side of the Hopper kernels (no CUDA device syntax):
//   tc::tensor_map, tc::compiled_for_sm90a (tc_hopper.cpp): what every TMA/wgmma chapter needs
//     on the host (09, 12 and later);
//   tcmm::hopper: the launchers of this chapter's Hopper steps (5, 6a-c), compiled in
//     tc_matmul_hopper.cu for sm_90a only; tc_matmul.cu dispatches to them after its checks.
#pragma once

#include <cuda.h>  // CUtensorMap (a 128-byte struct; nothing from libcuda is linked)
#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

#include "tc_matmul.h"

namespace tc {

// A row-major tensor as TMA sees it: `rank` (2 or 3) dimensions, innermost (contiguous)
// first: columns, rows, heads; read in boxes of box[] elements, 128B-swizzled (box[0] times
// the element size must be 128 bytes: one swizzle row), zeros for whatever lies outside the
// tensor. Elements are bf16, or bytes (FP8) when `fp8`.
struct TensorMapKey {
  const void* data = nullptr;
  bool fp8 = false;
  int rank = 2;
  std::uint64_t dims[3] = {1, 1, 1};
  std::uint32_t box[3] = {1, 1, 1};
  bool operator==(const TensorMapKey& o) const;
};
// The map (cuTensorMapEncodeTiled, taken from the driver at run time: no binary links
// libcuda). Encoding costs microseconds and timed loops ask for the same maps again and
// again: the last 16 are kept. Throws ladder::CudaError if the driver refuses the map.
CUtensorMap tensor_map(const TensorMapKey& key);

// True when `kernel` has sm_90a machine code in this build (its library was compiled for
// 90a-real); whether the device is an sm_90 is the caller's question.
bool compiled_for_sm90a(const void* kernel);

// Empty when this process can run `kernel`, an sm_90a kernel: a compute capability 9.0 device and
// a build with its code (compiled_for_sm90a). Otherwise why not, in a sentence that starts with
// `who_needs` ("the FA3 kernels need"): no device, another GPU (named), or no sm_90a code.
std::string sm90a_unavailable_reason(const std::string& who_needs, const void* kernel);

}  // namespace tc

namespace tcmm::hopper {

enum class Kernel {
  Tma,         // step 5: 128 x 128 tiles, both warpgroups compute, thread 0 refills stages
  Ws,          // step 6a: producer + 2 consumer warpgroups, 128 x 256 tiles, one tile per CTA
  Persistent,  // step 6b: the same kernel, one CTA per SM looping over tiles
  Cluster,     // step 6c: persistent, 2-CTA clusters along M, B multicast
};

struct Options {
  int group_m = 8;  // tile order: units of `cluster` M tiles per group (see the kernel file)
};

Tiling tiling(Kernel k);

// One of the Hopper steps' kernels, to ask tc::compiled_for_sm90a whether this build holds
// their sm_90a code.
const void* sm90a_kernel();

// Launches after the caller's checks (arguments valid, device is cc 9.0, enough shared
// memory). `fast`: the TMA path (K % 8 == 0, A and Bt 16-byte aligned).
void launch(Kernel k, int M, int N, int K, const bf16* A, const bf16* Bt, float* C, bool fast, const Options& opt,
            cudaStream_t stream);

}  // namespace tcmm::hopper
