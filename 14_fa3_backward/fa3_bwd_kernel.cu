// Chapter 14's kernels: the template of fa3_bwd_kernel.cuh with its own variant (dense or
// causal) and scheduler (one CTA per key tile), for every compiled configuration (fa3_bwd_config.h). Compiled for
// sm_90a only (its own library, CMakeLists.txt); fa3_bwd.cpp launches it only on a compute capability 9.0 device.
#include "fa3_bwd_kernel.cuh"

namespace fa3bwd::kernel {

const void* sm90a_kernel() {
  return reinterpret_cast<const void*>(fa3_bwd_kernel<Cfg<128, kBestStep>, CausalOrDense, GridScheduler>);
}

void launch_main(const ladder::AttentionShape& s, const Operands& x, const Params& p, Step step, cudaStream_t stream) {
  with_cfg(s.d, step, [&](auto c) { launch_cfg<decltype(c)>(s, x, p, CausalOrDense{}, GridScheduler{}, stream); });
}

}  // namespace fa3bwd::kernel
