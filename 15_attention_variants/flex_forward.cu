// The forward of every built-in (flex.h): chapter 12's kernel template with FlexForward.
// Compiled for sm_90a only (its own library, CMakeLists.txt).
#include "12_fa3_hopper/fa3_forward.cuh"
#include "flex_variants.cuh"

namespace variants {

namespace {
// Chapter 12's last step: persistent CTAs (the variant gives the order of the row tiles), at each
// head dim chapter 12 compiles; the query tile is 128 rows at both.
template <int d>
using Cfg = fa3::kernel::Cfg<d, false, fa3::Step::Persistent>;
static_assert(Cfg<64>::B_r == kForwardB_r && Cfg<128>::B_r == kForwardB_r, "flex.h's forward tile");
}  // namespace

template <class Mask, class Score>
void forward(const ladder::AttentionShape& s, const Mask& mask, const Score& score, const DeviceBlockMask& bm,
             const bf16* Q, const bf16* K, const bf16* V, bf16* O, float* L, cudaStream_t stream) {
  const std::string who = "variants::forward";
  detail::check_variant(who, s, bm.kv(), kForwardB_r, false);
  fa3::kernel::check_common(s, false, fa3::Step::Persistent, {}, who);
  ladder::check_pointers(who, {{"Q", Q}, {"K", K}, {"V", V}, {"O", O}, {"L", L, alignof(float)}}, 16);
  const fa3::kernel::Params p = fa3::kernel::params(s, kForwardB_r, O, L);
  const detail::FlexForward<Mask, Score> var{mask, score, bm.kv(), s.H, s.scale(), 1.0f / s.scale()};
  if (s.d == 64)
    fa3::kernel::launch_cfg<Cfg<64>>(s, {Q, K, V, false}, p, var, stream);
  else
    fa3::kernel::launch_cfg<Cfg<128>>(s, {Q, K, V, false}, p, var, stream);
}

#define VARIANTS_FORWARD(M, S)                                                                                        \
  template void forward<M, S>(const ladder::AttentionShape&, const M&, const S&, const DeviceBlockMask&, const bf16*, \
                              const bf16*, const bf16*, bf16*, float*, cudaStream_t);
VARIANTS_BUILT_INS(VARIANTS_FORWARD)
#undef VARIANTS_FORWARD

namespace detail {
const void* sm90a_kernel() {
  return reinterpret_cast<const void*>(
      fa3::kernel::fa3_kernel<Cfg<128>, fa3::kernel::PersistentScheduler, FlexForward<Causal, NoScoreMod>>);
}
}  // namespace detail

}  // namespace variants
