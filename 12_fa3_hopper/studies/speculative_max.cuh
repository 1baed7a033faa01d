// A study's softmax step for the intra-warpgroup loop (fa3_config.h, Lesson::LoopSoftmax): the
// speculative max. Under FA4's max rule m_i stays where it is on almost every tile after the
// first, so the exponentials run against it at once, and the tile's max, taken beside them, only
// checks that they could (attention_rows.cuh, OnlineSoftmax::exponentiate_at_m). The path from S
// to P~ loses the row maxima. P~ goes straight into the scratch fragments, packed (P_{it-1} V_{it-1}
// may still be reading p_frag), and S stays intact: a warp with a row whose max moved runs the
// ordinary softmax on it instead. The same P~ either way. The step tables' _spec rows; the WORKLOG
// says what it bought (nothing on bf16, where the exact max is kept). Included after fa3_forward.cuh.
#pragma once

#include "fa3_forward.cuh"
#include "fa3_studies.h"

namespace fa3::kernel {

#if TC_HOPPER_ENABLED
template <class Consumer>
struct SpeculativeLoopSoftmax {
  using C = typename Consumer::Config;
  struct Scratch {
    std::uint32_t p_next[C::kPSteps][4];  // P~ as A fragments, while P_{it-1} V_{it-1} reads p_frag
  };

  template <bool kMasked, class Scale>
  __device__ static void softmax_tile(Consumer& c, const typename Consumer::Tile& tile, int j, const Scale& sl2e,
                                      const Params& p, Scratch& x) {
    const int q = tile.i0 + c.cw * C::kRowsPerWarpgroup + 16 * (c.t / 32) + c.t % 32 / 4,
              k0 = j * C::B_c + 2 * (c.t % 4);
    c.var.template score_tile<kMasked>(c.s, q, k0, tile.head, p);
    const auto groups = [&] {
      if constexpr (C::kFp8)
        return sl2e;
      else
        return attn::GroupScale<C::B_c / 8, 1>{{sl2e}};
    }();
    float sum[2];
    const float zero = C::kExpTurns ? c.exp_turn_begin(c.rows.m) : 0.0f;
    auto& p_next = x.p_next;
    const bool moved =
        c.rows.exponentiate_at_m(attn::WgmmaTile<C::B_c>{c.s}, groups, zero, SplitExp2<C::kPolyEighths>{}, sum,
                                 [&p_next](int r, int jj, float x0, float x1) { put_p<C>(p_next, r, jj, x0, x1); });
    if (!__any_sync(0xffffffffu, moved)) {
      c.rows.commit(sum);
    } else {
      c.rows.update(attn::WgmmaTile<C::B_c>{c.s}, groups, SplitExp2<C::kPolyEighths>{});
      to_p<C>(c.s, p_next);
    }
    if constexpr (C::kExpTurns) c.exp_turn_end();
  }
  template <class Scale>
  __device__ static void softmax(Consumer& c, const typename Consumer::Tile& tile, int it, const Scale& sl2e,
                                 const Params& p, Scratch& x) {
    if (tile.keys.masked(it))
      softmax_tile<true>(c, tile, tile.keys.j(it), sl2e, p, x);
    else
      softmax_tile<false>(c, tile, tile.keys.j(it), sl2e, p, x);
  }
  // (asm: with a plain copy the compiler may give p_next p_frag's registers, and ptxas then
  // serializes every wgmma to keep P V's operand intact while the softmax writes them.)
  __device__ static void take_p(Consumer& c, const Scratch& x) {
#pragma unroll
    for (int k = 0; k < C::kPSteps; ++k)
#pragma unroll
      for (int q = 0; q < 4; ++q) asm volatile("mov.b32 %0, %1;" : "=r"(c.p_frag[k][q]) : "r"(x.p_next[k][q]));
  }
};
#endif  // TC_HOPPER_ENABLED

}  // namespace fa3::kernel
