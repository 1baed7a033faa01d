// FlexAttention's BlockMask: from a mask, every (query tile, key tile) pair of a head is empty
// (no element visible: the kernels skip it), full (every element visible: no mask evaluated) or
// partial (the mask is evaluated per element). Per query tile the partial and the full key
// tiles are listed in ascending order, as FlexAttention's kv_num_blocks / kv_indices and
// full_kv_num_blocks / full_kv_indices. Built here on the CPU, element by element: the
// reference the kernels' tile loops and any faster builder are checked against. The backward
// walks the other way (a CTA per key tile, chapter 14): per key tile the query tiles it meets,
// FlexAttention's q_num_blocks / q_indices and their full twins.
#pragma once

#include <cstddef>
#include <vector>

namespace variants {

enum class TileKind { Empty, Partial, Full };

struct BlockMask {
  int B = 1, H = 1, N = 0, N_kv = 0, B_r = 64, B_c = 128;  // B, H: 1 when the mask does not depend on them
  int T_r = 0, T_c = 0;
  std::vector<int> kv_num_blocks, kv_indices;            // [B][H][T_r], [B][H][T_r][T_c]
  std::vector<int> full_kv_num_blocks, full_kv_indices;  // the same for the full tiles
  std::vector<int> q_num_blocks, q_indices;              // [B][H][T_c], [B][H][T_c][T_r]: the transpose
  std::vector<int> full_q_num_blocks, full_q_indices;

  TileKind kind(int b, int h, int i, int j) const;
  // Non-empty tiles over all tiles.
  double density() const;
  // Visible (query, key) pairs: the useful work, in elements.
  long long visible = 0;
};

// Fills the q_ lists from the kv_ lists.
void transpose_lists(BlockMask& m);

// Evaluates mask(b, h, q, k) on every element. B, H: the extents the mask depends on (1: broadcast).
template <class Mask>
BlockMask make_block_mask(const Mask& mask, int B, int H, int N, int N_kv, int B_r = 64, int B_c = 128) {
  BlockMask m;
  m.B = B, m.H = H, m.N = N, m.N_kv = N_kv, m.B_r = B_r, m.B_c = B_c;
  m.T_r = (N + B_r - 1) / B_r, m.T_c = (N_kv + B_c - 1) / B_c;
  const std::size_t rows = std::size_t(B) * H * m.T_r;
  m.kv_num_blocks.assign(rows, 0), m.full_kv_num_blocks.assign(rows, 0);
  m.kv_indices.assign(rows * m.T_c, 0), m.full_kv_indices.assign(rows * m.T_c, 0);
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h)
      for (int i = 0; i < m.T_r; ++i) {
        const std::size_t row = (std::size_t(b) * H + h) * m.T_r + i;
        for (int j = 0; j < m.T_c; ++j) {
          long long seen = 0, all = 0;
          for (int q = i * B_r; q < (i + 1) * B_r && q < N; ++q)
            for (int k = j * B_c; k < (j + 1) * B_c && k < N_kv; ++k) seen += mask(b, h, q, k), ++all;
          m.visible += seen;
          if (seen == 0) continue;
          // A tile cut by N or N_kv is "partial" even when every element in range is visible:
          // the kernels must mask the rest, as chapter 10's tail tiles do.
          const bool whole = (i + 1) * B_r <= N && (j + 1) * B_c <= N_kv;
          if (seen == all && whole)
            m.full_kv_indices[row * m.T_c + m.full_kv_num_blocks[row]++] = j;
          else
            m.kv_indices[row * m.T_c + m.kv_num_blocks[row]++] = j;
        }
      }
  transpose_lists(m);
  return m;
}

}  // namespace variants
