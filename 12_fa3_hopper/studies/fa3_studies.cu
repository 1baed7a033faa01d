// Chapter 12's studies: the lesson's kernel (fa3_forward.cuh) with each study's switches
// (fa3_studies.h, with_study), and the speculative max's softmax step. Compiled for sm_90a only,
// in a library of its own (CMakeLists.txt); fa3.cpp launches it only on a compute capability 9.0 device.
#include "fa3_forward.cuh"
#include "speculative_max.cuh"
#include "studies/fa3_studies.h"

namespace fa3::kernel {

void launch_study(const ladder::AttentionShape& s, const Operands& x, const Params& p, Step step, const Tuning& t,
                  cudaStream_t stream) {
  with_study(s.d, x.fp8, step, t, [&](auto c) { launch_cfg<decltype(c)>(s, x, p, CausalOrDense{}, stream); });
}

}  // namespace fa3::kernel
