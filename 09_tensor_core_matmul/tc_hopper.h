// The launchers of this chapter's Hopper steps (5, 6a-c), tcmm::hopper, compiled in
// tc_matmul_hopper.cu for sm_90a only; tc_matmul.cu dispatches to them after its checks. (The
// host kit every Hopper chapter shares, tensor maps and the sm_90a check, is hopper_host.h.)
#pragma once

#include <cuda.h>  // CUtensorMap (a 128-byte struct; nothing from libcuda is linked)
#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

#include "hopper_host.h"
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

// One of the Hopper steps' kernels, to ask tc::compiled_for_sm90a whether this build holds
// their sm_90a code.
const void* sm90a_kernel();

// Launches after the caller's checks (arguments valid, device is cc 9.0, enough shared
// memory). `fast`: the TMA path (K % 8 == 0, A and Bt 16-byte aligned).
void launch(Kernel k, int M, int N, int K, const bf16* A, const bf16* Bt, float* C, bool fast, const Options& opt,
            cudaStream_t stream);

}  // namespace tcmm::hopper
