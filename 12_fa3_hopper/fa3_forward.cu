// Chapter 12's kernels: the template of fa3_forward.cuh with its own variant (dense or
// causal), for every configuration of the lesson (fa3_config.h, with_cfg). Compiled for sm_90a
// only (its own library, CMakeLists.txt); fa3.cpp launches it only on a compute capability 9.0
// device. The studies' kernels (studies/fa3_studies.cu) are compiled in this same file, at its
// end: nvcc decides its inlining over the whole file, and the lesson's kernels have the machine
// code they were measured with only beside the studies' (scripts/sass_compare.py shows that a
// file of their own moves it).
#include "fa3_forward.cuh"

namespace fa3::kernel {

const void* sm90a_kernel() {
  return reinterpret_cast<const void*>(fa3_kernel<Cfg<128, false, Step::IntraWg>, SingleTileScheduler, CausalOrDense>);
}

void launch(const ladder::AttentionShape& s, const Operands& x, const Params& p, Step step, const Tuning& t,
            cudaStream_t stream) {
  if (!is_lesson(x.fp8, t)) return launch_study(s, x, p, step, t, stream);
  with_cfg(s.d, x.fp8, step, [&](auto c) { launch_cfg<decltype(c)>(s, x, p, CausalOrDense{}, stream); });
}

}  // namespace fa3::kernel

#include "studies/fa3_studies.cu"  // (the studies: see the top of this file)
