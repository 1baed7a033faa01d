#include "block_mask.h"

namespace variants {

TileKind BlockMask::kind(int b, int h, int i, int j) const {
  const std::size_t row = (std::size_t(b) * H + h) * T_r + i;
  for (int n = 0; n < full_kv_num_blocks[row]; ++n)
    if (full_kv_indices[row * T_c + n] == j) return TileKind::Full;
  for (int n = 0; n < kv_num_blocks[row]; ++n)
    if (kv_indices[row * T_c + n] == j) return TileKind::Partial;
  return TileKind::Empty;
}

void transpose_lists(BlockMask& m) {
  const std::size_t cols = std::size_t(m.B) * m.H * m.T_c;
  m.q_num_blocks.assign(cols, 0), m.full_q_num_blocks.assign(cols, 0);
  m.q_indices.assign(cols * m.T_r, 0), m.full_q_indices.assign(cols * m.T_r, 0);
  for (int bh = 0; bh < m.B * m.H; ++bh)
    for (int i = 0; i < m.T_r; ++i) {  // ascending i: every per-key-tile list comes out sorted
      const std::size_t row = std::size_t(bh) * m.T_r + i;
      for (int n = 0; n < m.kv_num_blocks[row]; ++n) {
        const std::size_t col = std::size_t(bh) * m.T_c + m.kv_indices[row * m.T_c + n];
        m.q_indices[col * m.T_r + m.q_num_blocks[col]++] = i;
      }
      for (int n = 0; n < m.full_kv_num_blocks[row]; ++n) {
        const std::size_t col = std::size_t(bh) * m.T_c + m.full_kv_indices[row * m.T_c + n];
        m.full_q_indices[col * m.T_r + m.full_q_num_blocks[col]++] = i;
      }
    }
}

double BlockMask::density() const {
  long long tiles = 0;
  for (std::size_t r = 0; r < kv_num_blocks.size(); ++r) tiles += kv_num_blocks[r] + full_kv_num_blocks[r];
  return double(tiles) / (double(kv_num_blocks.size()) * T_c);
}

}  // namespace variants
