// Which key tile K_j and which KV head each CTA of the main kernel takes: the tile scheduler.
// Host and device (the CPU tests and the schedule model use the same mapping).
//
// The GPU starts CTAs in launch order and gives each SM the next one as another finishes. With
// the causal mask the CTA of key tile j walks T_r - j query tiles, so the order decides how the
// work packs: head by head, the long CTAs of the last heads start when the short ones of the
// heads before them end, and the grid ends with a tail of long CTAs on a few SMs. Longest first
// (key tile 0 of every head, then key tile 1 of every head, ...) packs the SMs evenly, but then
// the CTAs running at once belong to every head, and each streams its head's Q_i, dO_i and dQ
// accumulator: more than the L2 holds. So the heads go in sections that fit in the L2 together,
// longest first inside a section, section after section; the sections are made as equal as
// possible, since a small last section would again end the grid on a few long CTAs.
// The schedule model (dq_order_model.h) shows the packing (CpuFa3Bwd.SectionsOfHeadsPackTheCausalGrid);
// the chapter README's launch-order study, what the L2 says about section sizes.
#pragma once

#include <cstddef>

#include "fa3_bwd_layout.h"

namespace fa3bwd::sched {

// The heads in sections of `base + 1` heads (the first `extra` sections) and of `base` heads.
struct Sections {
  int base = 1, extra = 0;
};

// `heads` KV heads in as few sections of at most `max_heads` as possible, as equal as possible.
// max_heads = 1: head by head, the plain grid order.
BWD_HD constexpr Sections sections(int heads, int max_heads) {
  const int m = max_heads < 1 ? 1 : max_heads;
  const int count = (heads + m - 1) / m;
  return count < 1 ? Sections{} : Sections{heads / count, heads % count};
}

// How many KV heads' Q_i, dO_i (bf16) and dQ accumulator (fp32) fit in two thirds of an L2 of
// `l2_bytes` (the rest holds K_j, V_j, L_i, D_i and the outputs on their way out). At least 1.
BWD_HD constexpr int heads_in_l2(std::size_t l2_bytes, int group, int N_q, int d) {
  const std::size_t per_head = std::size_t(group) * layout::padded_rows(N_q) * d * (2 + 2 + 4);
  const std::size_t n = l2_bytes * 2 / 3 / per_head;
  return n < 1 ? 1 : static_cast<int>(n);
}

struct Tile {
  int j, head;  // key tile, KV head
};

// The CTA at place `cta` of the launch order, on a grid of T_c key tiles per head.
BWD_HD constexpr Tile tile(int cta, int T_c, Sections s) {
  const int big = s.extra * (s.base + 1) * T_c;  // the CTAs of the larger sections, first
  const bool in_big = cta < big;
  const int size = in_big ? s.base + 1 : s.base;  // heads in the CTA's section
  const int rest = in_big ? cta : cta - big;
  const int k = rest / (size * T_c), at = rest % (size * T_c);  // k-th section of its size, place in it
  const int first_head = (in_big ? 0 : big / T_c) + k * size;
  return {at / size, first_head + at % size};  // longest first: key tile by key tile, head by head
}

}  // namespace fa3bwd::sched
