// FA1's normalisation (Dao et al. 2022, Algorithm 1, lines 9-12) with the interface of
// attn::OnlineSoftmax (attention_rows.cuh), so chapter 10's kernel runs either with one
// template argument: the FA1-vs-FA2 lesson of chapters 05 and 06, on tensor cores.
//
// FA1 keeps O_i normalised after every key tile. Per tile it needs the tile's own statistics
// first (m~ = rowmax S_ij, l~ = rowsum exp(S_ij - m~)), then
//   m_new = max(m_i, m~),  a = exp(m_i - m_new),  beta = exp(m~ - m_new),
//   l_new = a l_i + beta l~,  O_i = diag(l_new)^-1 (diag(l_i) a O_i + beta P~ V_j),
// that is, per step two extra passes over O_i (undo the old normalisation, apply the new)
// and a full row sum (a quad reduction) instead of FA2's single rescale. Device code only.
#pragma once

#include "attention_rows.cuh"

namespace fa2tc::dev {

template <int kRows>
struct Fa1Rows {
  float m[kRows];      // running max, log2 units (as OnlineSoftmax)
  float l[kRows];      // the full row sum (the quad's, after every step)
  float alpha[kRows];  // what rescale() multiplies O_i by: l_i a, undoing the old 1 / l_i
  float inv[kRows];    // 1 / l_new, applied after O_i += P~ V_j

  __device__ __forceinline__ void init() {
#pragma unroll
    for (int r = 0; r < kRows; ++r) m[r] = -INFINITY, l[r] = 0.0f, alpha[r] = 1.0f, inv[r] = 0.0f;
  }

  // S -> beta P~ (P~ against the tile's own max), statistics updated.
  template <class Tile>
  __device__ __forceinline__ void update(const Tile& s, float sl2e) {
#pragma unroll
    for (int r = 0; r < kRows; ++r) update_row(s, r, sl2e);
  }
  template <class Tile>
  __device__ __forceinline__ void update_row(const Tile& s, int r, float sl2e) {
    {
      float mx = -INFINITY;
#pragma unroll
      for (int j = 0; j < Tile::kPairs; ++j) mx = fmaxf(mx, fmaxf(s(r, j, 0), s(r, j, 1)));
      const float tile_max = tc::quad_max(mx) * sl2e;  // m~, log2 units
      const float tile_base = tile_max == -INFINITY ? 0.0f : tile_max;
      float sum = 0.0f;
#pragma unroll
      for (int j = 0; j < Tile::kPairs; ++j)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          float& x = s(r, j, e);
          x = tc::ex2(fmaf(x, sl2e, -tile_base));
          sum += x;
        }
      const float l_tile = tc::quad_sum(sum);  // l~
      const float m_new = fmaxf(m[r], tile_max);
      const float a = m[r] == -INFINITY ? 0.0f : tc::ex2(m[r] - m_new);
      const float beta = tile_max == -INFINITY ? 0.0f : tc::ex2(tile_max - m_new);
      const float l_new = a * l[r] + beta * l_tile;
      alpha[r] = l[r] * a;
#pragma unroll
      for (int j = 0; j < Tile::kPairs; ++j) s(r, j, 0) *= beta, s(r, j, 1) *= beta;
      m[r] = m_new;
      l[r] = l_new;
      inv[r] = l_new > 0.0f ? 1.0f / l_new : 0.0f;
    }
  }

  template <class Tile>
  __device__ __forceinline__ void rescale(const Tile& o) const {
#pragma unroll
    for (int r = 0; r < kRows; ++r)
#pragma unroll
      for (int j = 0; j < Tile::kPairs; ++j) o(r, j, 0) *= alpha[r], o(r, j, 1) *= alpha[r];
  }
  __device__ __forceinline__ bool moved() const { return true; }
  // ... and O_i stays normalised: divide by l_new now.
  template <class Tile>
  __device__ __forceinline__ void after_pv(const Tile& o) const {
#pragma unroll
    for (int r = 0; r < kRows; ++r)
#pragma unroll
      for (int j = 0; j < Tile::kPairs; ++j) o(r, j, 0) *= inv[r], o(r, j, 1) *= inv[r];
  }
  // O_i is already normalised; L_i = m_i ln 2 + ln l_i.
  template <class Tile>
  __device__ __forceinline__ void finish(const Tile&, float (&L)[kRows]) const {
#pragma unroll
    for (int r = 0; r < kRows; ++r) L[r] = l[r] > 0.0f ? m[r] * ladder::kLn2 + logf(l[r]) : -INFINITY;
  }
};

}  // namespace fa2tc::dev
