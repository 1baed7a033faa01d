// Chapter 15's kernels: chapter 12's forward and chapter 14's backward with a mask and a score
// modifier compiled into their score tiles (mods.h) and a block mask's lists walked instead of
// every key (query) tile: FlexAttention (He et al. 2024) in C++. Declared here, no CUDA syntax;
// the kernels are the templates of 12_fa3_hopper/fa3_forward.cuh and 14_fa3_backward/
// fa3_bwd_kernel.cuh with this chapter's variants (flex_variants.cuh), instantiated in
// flex_forward.cu and flex_backward.cu for the built-ins listed below.
//
// Layouts, L and the workspace are chapters 12 and 14's (fa3.h, fa3_bwd.h); the shape's
// `causal` must be false: causal is a mask here (variants::Causal). Heads: the mask's b is the
// batch index, h the query head within the batch.
#pragma once

#include <cuda_runtime_api.h>

#include <string>
#include <vector>

#include "attention_shape.h"
#include "bf16.h"
#include "block_mask.h"
#include "device_buffer.h"
#include "mods.h"

namespace variants {

using ladder::bf16;

// The tiles the kernels walk: the forward's query tiles are chapter 12's (128 rows), the
// backward's chapter 14's (64); key tiles are 128 keys in both.
inline constexpr int kForwardB_r = 128, kBackwardB_r = 64, kB_c = 128;

// One direction of a block mask on the device: per row of the walk (a query tile for the
// forward, a key tile for the backward) the partial and the full tiles to visit, ascending.
// B, H: 1 where the mask does not depend on them (one list serves every batch or head).
struct BlockMaskView {
  const int *num = nullptr, *idx = nullptr, *full_num = nullptr, *full_idx = nullptr;
  const int* order = nullptr;           // the rows, most tiles first (flex.cpp): the forward's persistent walk,
                                        // the backward's launch order of key tiles (per list)
  bool across_heads = false;            // forward: sorted across all heads (true) or within each head
  int B = 1, H = 1, rows = 0, len = 0;  // rows per head; idx rows hold `len` entries
  int B_r = 0, B_c = 0;                 // the tiles the mask was built with
};

// A BlockMask (block_mask.h) uploaded: kv() for the forward's walk, q() for the backward's.
class DeviceBlockMask {
 public:
  explicit DeviceBlockMask(const BlockMask& m);
  BlockMaskView kv() const;
  BlockMaskView q() const;
  int N = 0, N_kv = 0;

 private:
  BlockMask shape_;  // its extents only (the lists live on the device)
  bool across_heads_ = false;
  ladder::DeviceBuffer<int> kv_num_, kv_idx_, full_kv_num_, full_kv_idx_, kv_order_;
  ladder::DeviceBuffer<int> q_num_, q_idx_, full_q_num_, full_q_idx_, q_order_;
};

// The forward's persistent CTAs (G of them) take places t = c, c + G, ... of the walk, one per
// round; place t reads row `snake_place(t, G, places)` of the sorted walk: the odd rounds go
// backwards (flex_variants.cuh says why). Host and device: the CPU tests check it.
LADDER_HOST_DEVICE inline int snake_place(int t, int G, int places) {
  const int round = t / G, in_round = places - round * G < G ? places - round * G : G;
  return round % 2 == 1 ? round * G + in_round - 1 - t % G : t;
}

// Place u of the forward's walk (after the snake draft) as (row tile i, query head b H + h). The
// walk is the block mask's sorted rows `order` (T_r per list, one list per (b, h) of the mask:
// B_m H_m lists) taken once per copy, one copy per (b, h) the lists are broadcast over:
// (B / B_m) (H / H_m) copies. Across heads, each sorted row is taken by every copy before the next
// row; head by head, each copy walks all the lists before the next copy. Every (i, b H + h) of
// the shape comes once. Host and device: the CPU tests check it for every broadcast.
struct WalkPlace {
  int i, head;
};
LADDER_HOST_DEVICE inline WalkPlace walk_place(int u, const int* order, bool across_heads, int T_r, int B, int H,
                                               int B_m, int H_m) {
  const int copies = (B / B_m) * (H / H_m), rows = T_r * B_m * H_m;
  const int copy = across_heads ? u % copies : u / rows, r = order[across_heads ? u / copies : u % rows];
  const int list = r / T_r, b = B_m == 1 ? copy / (H / H_m) : list / H_m, h = H_m == 1 ? copy % (H / H_m) : list % H_m;
  return {r % T_r, b * H + h};
}

// Empty when this process can run the kernels; otherwise why not.
std::string unavailable_reason();

// O = softmax(score(Q K^T / sqrt(d)) where mask) V and L, with the forward block mask `bm`
// (built from the same mask with tiles kForwardB_r x kB_c). Throws std::invalid_argument before
// any launch for what chapter 12's forward refuses, a causal shape, or a block mask of other
// tiles, extents or sequence lengths.
template <class Mask, class Score = NoScoreMod>
void forward(const ladder::AttentionShape& s, const Mask& mask, const Score& score, const DeviceBlockMask& bm,
             const bf16* Q, const bf16* K, const bf16* V, bf16* O, float* L, cudaStream_t stream = nullptr);

// dQ, dK, dV of the same attention, from the forward's O and L, with the backward block mask
// `bm` (tiles kBackwardB_r x kB_c) and chapter 14's workspace (fa3bwd::backward_workspace_floats).
// Chapter 14's fast step (the dQ writer's bulk reduce-add). GQA needs a mask that does not depend
// on the query head (bm's H = 1): a CTA walks one list for its whole group.
template <class Mask, class Score = NoScoreMod>
void backward(const ladder::AttentionShape& s, const Mask& mask, const Score& score, const DeviceBlockMask& bm,
              const bf16* Q, const bf16* K, const bf16* V, const bf16* O, const float* L, const bf16* dO, bf16* dQ,
              bf16* dK, bf16* dV, float* workspace, cudaStream_t stream = nullptr);

// The (mask, score modifier) pairs compiled into the library (flex_forward.cu, flex_backward.cu). A new variant is
// a functor in mods.h and one line here.
#define VARIANTS_BUILT_INS(X)          \
  X(NoMask, NoScoreMod)                \
  X(Causal, NoScoreMod)                \
  X(SlidingWindow, NoScoreMod)         \
  X(CausalDocument, NoScoreMod)        \
  X(CausalPackedDocuments, NoScoreMod) \
  X(PrefixLM, NoScoreMod)              \
  X(TileSet, NoScoreMod)               \
  X(Causal, Softcap)                   \
  X(Causal, Alibi)

#define VARIANTS_DECLARE(M, S)                                                                                       \
  extern template void forward<M, S>(const ladder::AttentionShape&, const M&, const S&, const DeviceBlockMask&,      \
                                     const bf16*, const bf16*, const bf16*, bf16*, float*, cudaStream_t);            \
  extern template void backward<M, S>(const ladder::AttentionShape&, const M&, const S&, const DeviceBlockMask&,     \
                                      const bf16*, const bf16*, const bf16*, const bf16*, const float*, const bf16*, \
                                      bf16*, bf16*, bf16*, float*, cudaStream_t);
VARIANTS_BUILT_INS(VARIANTS_DECLARE)
#undef VARIANTS_DECLARE

namespace detail {
// The checks both directions make beyond chapters 12 and 14's (flex.cpp): the shape is not
// causal; the block mask was built for these tiles, lengths, batch and heads.
void check_variant(const std::string& who, const ladder::AttentionShape& s, const BlockMaskView& v, int B_r,
                   bool backward);
const void* sm90a_kernel();  // one of the kernels, for tc::sm90a_unavailable_reason
// The forward's persistent walk (flex.cpp): whether to sort the rows across heads, and the rows
// of the kv lists in the walk's order (every row once; heaviest first within each group).
bool sort_across_heads(const BlockMask& m);
std::vector<int> heaviest_first(const BlockMask& m, bool across_heads);
// The backward's launch order: per list of the q direction, its key tiles (0 .. T_c - 1), the
// longest walk first.
std::vector<int> longest_walks_first(const BlockMask& m);
}  // namespace detail

}  // namespace variants
