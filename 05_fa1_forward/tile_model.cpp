#include "tile_model.h"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace fa1 {

namespace {
using Mat = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Vec = Eigen::VectorXd;
constexpr double kInf = std::numeric_limits<double>::infinity();

// rows [row0, row0 + rows) of one head's [N, d] block, as fp64.
Mat rows_of(const float* X, const ladder::AttentionShape& s, long head, int row0, int rows) {
  Mat out(rows, s.d);
  for (int r = 0; r < rows; ++r)
    for (int k = 0; k < s.d; ++k) out(r, k) = X[(head * s.N + row0 + r) * long(s.d) + k];
  return out;
}
double exp_shifted(double x, double m) { return m == -kInf ? 0.0 : std::exp(x - m); }
}  // namespace

Tiles tiles(const ladder::AttentionShape& s, std::size_t smem_per_block) {
  ladder::validate(s, kSupportedD);
  Tiles t{};
  t.M = static_cast<int>(smem_per_block / sizeof(float) * 4 / 5);
  t.B_c = std::max(4, (t.M + 4 * s.d - 1) / (4 * s.d));
  t.B_r = std::min(t.B_c, s.d);
  // The kernel's tiles are padded (bank spreading, whole micro-tiles): shrink until they fit.
  while (t.B_c > 4 && smem_bytes(s.d, t.B_r, t.B_c) > smem_per_block) t.B_r = std::min(t.B_r, --t.B_c);
  t.T_r = (s.N + t.B_r - 1) / t.B_r;
  t.T_c = (s.N + t.B_c - 1) / t.B_c;
  t.smem_bytes = smem_bytes(s.d, t.B_r, t.B_c);
  if (t.smem_bytes > smem_per_block)
    throw std::invalid_argument("fa1: d=" + std::to_string(s.d) + " needs at least " + std::to_string(t.smem_bytes) +
                                " bytes of shared memory per block; this GPU allows " + std::to_string(smem_per_block));
  return t;
}

TileModel tile_model(const ladder::AttentionShape& s, const Tiles& t, const float* Q, const float* K, const float* V) {
  const bool compute = Q != nullptr;
  TileModel out;
  ladder::AttentionTraffic& io = out.traffic;
  const double row_bytes = 4.0 * s.d;  // one row of Q, K, V or O in fp32

  // Line 2: O = 0, l = 0, m = -inf in HBM. Here HBM is out.O, out.l, out.m.
  io.init_write += s.rows() * (row_bytes + 8.0);
  if (compute) out.O.assign(s.elems(), 0.0), out.l.assign(s.rows(), 0.0), out.m.assign(s.rows(), -kInf);

  for (long head = 0; head < long(s.heads()); ++head) {
    for (int j = 0; j < t.T_c; ++j) {  // outer loop: K_j, V_j loaded once
      const int j0 = j * t.B_c, kv_rows = std::min(t.B_c, s.N - j0);
      io.K_read += kv_rows * row_bytes;
      io.V_read += kv_rows * row_bytes;
      Mat K_j, V_j;
      if (compute) K_j = rows_of(K, s, head, j0, kv_rows), V_j = rows_of(V, s, head, j0, kv_rows);

      for (int i = s.causal ? j0 / t.B_r : 0; i < t.T_r; ++i) {  // inner loop: Q_i, O_i, l_i, m_i from HBM
        const int i0 = i * t.B_r, q_rows = std::min(t.B_r, s.N - i0);
        io.Q_read += q_rows * row_bytes;
        io.O_read += q_rows * row_bytes;
        io.l_read += q_rows * 4.0, io.m_read += q_rows * 4.0;
        io.O_write += q_rows * row_bytes;
        io.l_write += q_rows * 4.0, io.m_write += q_rows * 4.0;
        if (!compute) continue;
        Mat S = (1.0 / std::sqrt(double(s.d))) * rows_of(Q, s, head, i0, q_rows) * K_j.transpose();
        for (int r = 0; r < q_rows; ++r)
          for (int c = 0; c < kv_rows; ++c)
            if (s.causal && j0 + c > i0 + r) S(r, c) = -kInf;
        const Vec m_tilde = S.rowwise().maxCoeff();
        Mat P(q_rows, kv_rows);
        for (int r = 0; r < q_rows; ++r)
          for (int c = 0; c < kv_rows; ++c) P(r, c) = exp_shifted(S(r, c), m_tilde(r));
        const Vec l_tilde = P.rowwise().sum();
        const Mat PV = P * V_j;
        for (int r = 0; r < q_rows; ++r) {
          const long row = head * s.N + i0 + r;
          const double m_new = std::max(out.m[row], m_tilde(r));
          const double alpha = exp_shifted(out.m[row], m_new), beta = exp_shifted(m_tilde(r), m_new);
          const double l_new = alpha * out.l[row] + beta * l_tilde(r);
          for (int k = 0; k < s.d; ++k) {
            double& o = out.O[row * s.d + k];
            o = (out.l[row] * alpha * o + beta * PV(r, k)) / l_new;
          }
          out.l[row] = l_new;
          out.m[row] = m_new;
        }
      }
    }
  }
  return out;
}

}  // namespace fa1
