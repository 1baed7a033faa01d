// The backward of every built-in (flex.h): chapter 14's kernel template with FlexBackward and
// BlockMaskScheduler, its fast step (the dQ writer's bulk reduce-add). Compiled for sm_90a only (CMakeLists.txt).
#include "14_fa3_backward/fa3_bwd_kernel.cuh"
#include "flex_variants.cuh"

namespace variants {

namespace {
// At each head dim chapter 14 compiles, with query tiles of the block mask's 64 rows (flex.h) at
// both: chapter 14's own 128 at d = 64 would need a block mask per head dim.
template <int d>
using Cfg = fa3bwd::kernel::Cfg<d, fa3bwd::Step::BulkReduce, kBackwardB_r>;
}  // namespace

template <class Mask, class Score>
void backward(const ladder::AttentionShape& s, const Mask& mask, const Score& score, const DeviceBlockMask& bm,
              const bf16* Q, const bf16* K, const bf16* V, const bf16* O, const float* L, const bf16* dO, bf16* dQ,
              bf16* dK, bf16* dV, float* workspace, cudaStream_t stream) {
  const std::string who = "variants::backward";
  detail::check_variant(who, s, bm.q(), kBackwardB_r, true);
  const fa3bwd::kernel::Prepared run =
      fa3bwd::kernel::prepare(who, s, {Q, K, V, O, L, dO, dQ, dK, dV, workspace}, {fa3bwd::Step::BulkReduce}, stream);
  const detail::FlexBackward<Mask, Score> var{mask, score, bm.q(), run.s.H, static_cast<int>(run.s.kv_heads())};
  if (run.s.d == 64)
    fa3bwd::kernel::launch_cfg<Cfg<64>>(run.s, {Q, K, V, dO}, run.p, var, detail::BlockMaskScheduler{}, stream);
  else
    fa3bwd::kernel::launch_cfg<Cfg<128>>(run.s, {Q, K, V, dO}, run.p, var, detail::BlockMaskScheduler{}, stream);
  fa3bwd::kernel::launch_postprocess(run.s, run.p.dQ_acc, dQ, stream);
}

#define VARIANTS_BACKWARD(M, S)                                                                                        \
  template void backward<M, S>(const ladder::AttentionShape&, const M&, const S&, const DeviceBlockMask&, const bf16*, \
                               const bf16*, const bf16*, const bf16*, const float*, const bf16*, bf16*, bf16*, bf16*,  \
                               float*, cudaStream_t);
VARIANTS_BUILT_INS(VARIANTS_BACKWARD)
#undef VARIANTS_BACKWARD

}  // namespace variants
