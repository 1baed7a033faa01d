// Scratch: chapter 12's forward with the loop variant EXP_V (not committed).
#include "fa3_forward.cuh"
namespace fa3::detail {
const void* sm90a_kernel() {
  return reinterpret_cast<const void*>(fa3_kernel<Cfg<128, false, Step::IntraWg>, SingleTileScheduler, CausalOrDense>);
}
void launch(const ladder::AttentionShape& s, const Operands& x, const Params& p, Step step, const Tuning& t,
            cudaStream_t stream) {
  if (x.fp8 && t.key_tile == 128)
    launch_cfg<Cfg<128, true, Step::IntraWg>>(s, x, p, CausalOrDense{}, stream);
  else if (x.fp8 && step == Step::Persistent)
    launch_cfg<Cfg<128, true, Step::Persistent, 0, 0, 192>>(s, x, p, CausalOrDense{}, stream);
  else if (x.fp8)
    launch_cfg<Cfg<128, true, Step::IntraWg, 0, 0, 192>>(s, x, p, CausalOrDense{}, stream);
  else if (s.d == 64)
    launch_cfg<Cfg<64, false, Step::IntraWg>>(s, x, p, CausalOrDense{}, stream);
  else if (step == Step::Persistent)
    launch_cfg<Cfg<128, false, Step::Persistent>>(s, x, p, CausalOrDense{}, stream);
  else
    launch_cfg<Cfg<128, false, Step::IntraWg>>(s, x, p, CausalOrDense{}, stream);
}
}  // namespace fa3::detail
