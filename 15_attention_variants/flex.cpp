// The host side of chapter 15's kernels: the block mask on the device, and the checks the
// variants add to chapters 12 and 14's.
#include "flex.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <vector>

#include "09_tensor_core_matmul/hopper_host.h"

namespace variants {

namespace detail {
// The order of the forward's persistent walk. Rows that visit about as many tiles as each other
// go head by head, each head's heaviest first: the CTAs at work then share one head's K and V in
// L2 (dense attention and random tiles measured faster so, windows about the same). Rows whose
// work varies widely (causal masks, documents: a coefficient of variation of the tile counts above
// 0.4) are sorted across all heads, heaviest first, which balances the CTAs' round-robin shares
// better than L2 sharing helps (the documents measured clearly faster so).
bool sort_across_heads(const BlockMask& m) {
  double sum = 0, squares = 0;
  const double rows = double(m.kv_num_blocks.size());
  for (std::size_t r = 0; r < m.kv_num_blocks.size(); ++r) {
    const double n = m.kv_num_blocks[r] + m.full_kv_num_blocks[r];
    sum += n, squares += n * n;
  }
  const double mean = sum / rows, var = squares / rows - mean * mean;
  return mean > 0 && std::sqrt(std::max(var, 0.0)) > 0.4 * mean;
}
namespace {
// The rows 0 .. n - 1 of lists with `partial` + `full` tiles each, sorted by that count, most
// first, within each group of `group` rows (stable: equal rows keep their order).
std::vector<int> most_tiles_first(const std::vector<int>& partial, const std::vector<int>& full, std::size_t group) {
  std::vector<int> rows(partial.size());
  std::iota(rows.begin(), rows.end(), 0);
  const auto more = [&](int a, int b) { return partial[a] + full[a] > partial[b] + full[b]; };
  for (std::size_t first = 0; first < rows.size(); first += group)
    std::stable_sort(rows.begin() + first, rows.begin() + first + group, more);
  return rows;
}
}  // namespace
std::vector<int> heaviest_first(const BlockMask& m, bool across_heads) {
  const std::size_t rows = m.kv_num_blocks.size();
  return most_tiles_first(m.kv_num_blocks, m.full_kv_num_blocks, across_heads ? rows : std::size_t(m.T_r));
}
std::vector<int> longest_walks_first(const BlockMask& m) {
  std::vector<int> order = most_tiles_first(m.q_num_blocks, m.full_q_num_blocks, std::size_t(m.T_c));
  for (int& j : order) j %= m.T_c;  // a key tile of its own list
  return order;
}
}  // namespace detail

DeviceBlockMask::DeviceBlockMask(const BlockMask& m)
    : N(m.N),
      N_kv(m.N_kv),
      kv_num_(m.kv_num_blocks),
      kv_idx_(m.kv_indices),
      full_kv_num_(m.full_kv_num_blocks),
      full_kv_idx_(m.full_kv_indices),
      kv_order_(detail::heaviest_first(m, detail::sort_across_heads(m))),
      q_num_(m.q_num_blocks),
      q_idx_(m.q_indices),
      full_q_num_(m.full_q_num_blocks),
      full_q_idx_(m.full_q_indices),
      q_order_(detail::longest_walks_first(m)) {
  shape_.B = m.B, shape_.H = m.H, shape_.N = m.N, shape_.N_kv = m.N_kv;
  shape_.B_r = m.B_r, shape_.B_c = m.B_c, shape_.T_r = m.T_r, shape_.T_c = m.T_c;
  across_heads_ = detail::sort_across_heads(m);
}

BlockMaskView DeviceBlockMask::kv() const {
  BlockMaskView v{kv_num_.data(), kv_idx_.data(), full_kv_num_.data(), full_kv_idx_.data()};
  v.order = kv_order_.data(), v.across_heads = across_heads_;
  v.B = shape_.B, v.H = shape_.H, v.rows = shape_.T_r, v.len = shape_.T_c, v.B_r = shape_.B_r, v.B_c = shape_.B_c;
  return v;
}
BlockMaskView DeviceBlockMask::q() const {  // per key tile, its query tiles
  BlockMaskView v{q_num_.data(), q_idx_.data(), full_q_num_.data(), full_q_idx_.data()};
  v.order = q_order_.data();
  v.B = shape_.B, v.H = shape_.H, v.rows = shape_.T_c, v.len = shape_.T_r, v.B_r = shape_.B_r, v.B_c = shape_.B_c;
  return v;
}

std::string unavailable_reason() {
  return tc::sm90a_unavailable_reason("the chapter 15 kernels need", detail::sm90a_kernel());
}

namespace detail {

void check_variant(const std::string& who, const ladder::AttentionShape& shape, const BlockMaskView& v, int B_r,
                   bool backward) {
  const int supported_d[] = {64, 128};
  const ladder::AttentionShape s = ladder::validate(shape, supported_d, ladder::KvHeads::Any);
  if (s.causal)
    throw std::invalid_argument(who +
                                ": the shape must not be causal: the mask says which keys a query sees "
                                "(variants::Causal)");
  if (v.num == nullptr) throw std::invalid_argument(who + ": the block mask is empty (DeviceBlockMask)");
  if (v.B_r != B_r || v.B_c != kB_c)
    throw std::invalid_argument(who + ": the block mask has tiles of " + std::to_string(v.B_r) + " x " +
                                std::to_string(v.B_c) + "; this kernel walks " + std::to_string(B_r) + " x " +
                                std::to_string(kB_c) + " (make_block_mask(mask, B, H, N, N_kv, " + std::to_string(B_r) +
                                ", " + std::to_string(kB_c) + "))");
  const int T_r = (s.N + v.B_r - 1) / v.B_r, T_c = (s.nkv() + v.B_c - 1) / v.B_c;
  if ((backward ? v.len : v.rows) != T_r || (backward ? v.rows : v.len) != T_c)
    throw std::invalid_argument(who + ": the block mask was built for other sequence lengths than N=" +
                                std::to_string(s.N) + ", N_kv=" + std::to_string(s.nkv()));
  if ((v.B != 1 && v.B != s.B) || (v.H != 1 && v.H != s.H))
    throw std::invalid_argument(who + ": the block mask's B=" + std::to_string(v.B) + ", H=" + std::to_string(v.H) +
                                " must be 1 or the shape's B=" + std::to_string(s.B) + ", H=" + std::to_string(s.H));
  if (backward && v.H != 1 && s.group() > 1)
    throw std::invalid_argument(who + ": with GQA (H / H_kv = " + std::to_string(s.group()) +
                                ") the block mask must not depend on the query head (H = 1): a CTA walks one list "
                                "for all the query heads of its KV head");
}

}  // namespace detail

}  // namespace variants
