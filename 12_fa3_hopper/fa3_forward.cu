// Chapter 12's kernels: the template of fa3_forward.cuh with its own variant (dense or
// causal), for every compiled configuration (fa3_config.h). Compiled for sm_90a only (its own
// library, CMakeLists.txt); fa3.cpp launches it only on a compute capability 9.0 device.
#include "fa3_forward.cuh"

namespace fa3::kernel {

const void* sm90a_kernel() {
  return reinterpret_cast<const void*>(fa3_kernel<Cfg<128, false, Step::IntraWg>, SingleTileScheduler, CausalOrDense>);
}

void launch(const ladder::AttentionShape& s, const Operands& x, const Params& p, Step step, const Tuning& t,
            cudaStream_t stream) {
  with_cfg(s.d, x.fp8, step, t, [&](auto c) { launch_cfg<decltype(c)>(s, x, p, CausalOrDense{}, stream); });
}

}  // namespace fa3::kernel
