// The launchers of the Hopper steps (5, 6a-c), compiled in tc_matmul_hopper.cu for
// sm_90a only. tc_matmul.cu dispatches to them after its checks; nothing else calls them.
#pragma once

#include <cudaTypedefs.h>  // PFN_cuTensorMapEncodeTiled_v12000
#include <cuda_runtime_api.h>

#include "tc_matmul.h"

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

// True when this build holds sm_90a code for the Hopper kernels (the library was
// compiled for 90a); the device check is the caller's.
bool compiled_for_sm90a();

// cuTensorMapEncodeTiled, looked up in the driver once, at run time (chapter 12 uses it too).
PFN_cuTensorMapEncodeTiled_v12000 encode_tiled();

// Launches after the caller's checks (arguments valid, device is cc 9.0, enough shared
// memory). `fast`: the TMA path (K % 8 == 0, A and Bt 16-byte aligned).
void launch(Kernel k, int M, int N, int K, const bf16* A, const bf16* Bt, float* C, bool fast, const Options& opt,
            cudaStream_t stream);

}  // namespace tcmm::hopper
