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

double BlockMask::density() const {
  long long tiles = 0;
  for (std::size_t r = 0; r < kv_num_blocks.size(); ++r) tiles += kv_num_blocks[r] + full_kv_num_blocks[r];
  return double(tiles) / (double(kv_num_blocks.size()) * T_c);
}

}  // namespace variants
