#include "loop_trace.h"

#include <algorithm>
#include <stdexcept>

namespace fa2 {

std::vector<Visit> loop_trace(const ladder::AttentionShape& s, const Tiles& t) {
  std::vector<Visit> visits;
  const double row = 4.0 * s.d;
  for (int i = 0; i < t.T_r; ++i) {  // outer loop: the grid, one block per Q_i
    const int i0 = i * t.B_r, q_rows = std::min(t.B_r, s.N - i0);
    const int T_c = (std::min(s.causal ? i0 + t.B_r : s.N, s.N) + t.B_c - 1) / t.B_c;
    for (int j = 0; j < T_c; ++j) {  // inner loop: K_j, V_j streamed
      const int kv_rows = std::min(t.B_c, s.N - j * t.B_c);
      Visit v{i, j, i, j};
      if (j == 0) v.Q_read = q_rows * row;  // read once
      v.K_read = v.V_read = kv_rows * row;
      if (j == T_c - 1) v.O_write = q_rows * row, v.L_write = 4.0 * q_rows;  // written once, at the end
      visits.push_back(v);
    }
  }
  return visits;
}

std::vector<fa1::SmemPart> smem_parts(int d, int B_r, int B_c) {
  const long ld = d + 4;
  return {{"Q_i", B_r * ld},
          {"K_j", B_c * ld},
          {"V_j", B_c * ld},
          {"S_ij / P_ij", long(B_r) * (B_c + 4)},
          {"alpha and 1/l_i", B_r}};
}

std::vector<int> o_owner_warps(int d) {
  // ForwardMicro<d> and Config<d> (common/attention_tiles.cuh, fa_forward.h): TM rows per
  // micro-tile, G float4 columns; RS = B_r / TM micro-tile rows, XS = d / 4 / G columns.
  const int B_r = 128, TM = d == 32 ? 4 : 8, G = d == 128 ? 2 : 1, RS = B_r / TM, XS = d / 4 / G;
  if (d != 32 && d != 64 && d != 128) throw std::invalid_argument("o_owner_warps: d is 32, 64 or 128");
  std::vector<int> owner(std::size_t(B_r) * d, -1);
  for (int t = 0; t < RS * XS; ++t) {  // micro<TM, 4G>(t, RS, XS): r0 = t / XS, c0 = t % XS
    const int r0 = t / XS, c0 = t % XS;
    for (int a = 0; a < TM; ++a)
      for (int g = 0; g < G; ++g)
        for (int e = 0; e < 4; ++e) {
          int& o = owner[std::size_t(r0 + a * RS) * d + 4 * (c0 + g * XS) + e];
          if (o != -1) throw std::logic_error("o_owner_warps: an element of O_i has two owners");
          o = t / 32;
        }
  }
  return owner;
}

}  // namespace fa2
