#include "tile_model.h"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace fa2 {

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

namespace {
struct TileShape {
  int B_r, B_c;
};
template <class C>
constexpr TileShape shape_of() {
  return {C::B_r, C::B_c};
}
// d's tiles in the order they are tried; fa_forward.cu launches the same list, by index.
std::vector<TileShape> shapes(int d) {
  switch (d) {
    case 32: return {shape_of<Config<32>>()};
    case 64: return {shape_of<Config<64>>(), shape_of<HalfKeys64>(), shape_of<Quarter64>()};
    case 128: return {shape_of<Config<128>>(), shape_of<HalfKeys128>(), shape_of<Quarter128>()};
    default: throw std::logic_error("fa2::tiles: no tiles for d=" + std::to_string(d));
  }
}
}  // namespace

std::vector<ladder::Candidate> tile_options(int d) {
  std::vector<ladder::Candidate> out;
  for (const TileShape& t : shapes(d))
    out.push_back({std::to_string(t.B_r) + " x " + std::to_string(t.B_c), smem_bytes(d, t.B_r, t.B_c)});
  return out;
}

Tiles tiles(const ladder::AttentionShape& s, std::size_t smem_per_block) {
  ladder::validate(s, kSupportedD);
  const std::vector<ladder::Candidate> options = tile_options(s.d);
  const ladder::Fit fit = ladder::first_that_fits(options, smem_per_block);
  if (fit.index < 0)
    throw std::invalid_argument(
        ladder::none_fits("fa2::forward (d = " + std::to_string(s.d) + ")", options, smem_per_block));
  Tiles t{};
  t.B_r = shapes(s.d)[fit.index].B_r, t.B_c = shapes(s.d)[fit.index].B_c;
  t.index = fit.index;
  t.T_r = (s.N + t.B_r - 1) / t.B_r;
  t.T_c = (s.N + t.B_c - 1) / t.B_c;
  t.smem_bytes = options[fit.index].smem_bytes;
  return t;
}

TileModel tile_model(const ladder::AttentionShape& s, const Tiles& t, const float* Q, const float* K, const float* V) {
  const bool compute = Q != nullptr;
  TileModel out;
  if (compute) out.O.assign(s.elems(), 0.0), out.L.assign(s.rows(), 0.0);
  ladder::AttentionTraffic& io = out.traffic;
  const double row_bytes = 4.0 * s.d;  // one row of Q, K, V or O in fp32

  for (long head = 0; head < long(s.heads()); ++head) {
    for (int i = 0; i < t.T_r; ++i) {  // outer loop: one thread block per Q_i
      const int i0 = i * t.B_r, q_rows = std::min(t.B_r, s.N - i0);
      io.Q_read += q_rows * row_bytes;
      Mat Q_i, O_i = Mat::Zero(q_rows, s.d);
      if (compute) Q_i = rows_of(Q, s, head, i0, q_rows);
      Vec m_i = Vec::Constant(q_rows, -kInf), l_i = Vec::Zero(q_rows);

      const int T_c = (std::min(s.causal ? i0 + t.B_r : s.N, s.N) + t.B_c - 1) / t.B_c;
      for (int j = 0; j < T_c; ++j) {  // inner loop: K_j, V_j streamed
        const int j0 = j * t.B_c, kv_rows = std::min(t.B_c, s.N - j0);
        io.K_read += kv_rows * row_bytes;
        io.V_read += kv_rows * row_bytes;
        if (!compute) continue;
        Mat S = (1.0 / std::sqrt(double(s.d))) * Q_i * rows_of(K, s, head, j0, kv_rows).transpose();
        for (int r = 0; r < q_rows; ++r)
          for (int c = 0; c < kv_rows; ++c)
            if (s.causal && j0 + c > i0 + r) S(r, c) = -kInf;
        const Vec m_new = m_i.cwiseMax(S.rowwise().maxCoeff());
        Mat P(q_rows, kv_rows);
        Vec alpha(q_rows);
        for (int r = 0; r < q_rows; ++r) {
          for (int c = 0; c < kv_rows; ++c) P(r, c) = exp_shifted(S(r, c), m_new(r));
          alpha(r) = exp_shifted(m_i(r), m_new(r));
        }
        l_i = alpha.cwiseProduct(l_i) + P.rowwise().sum();
        O_i = alpha.asDiagonal() * O_i + P * rows_of(V, s, head, j0, kv_rows);
        m_i = m_new;
      }
      io.O_write += q_rows * row_bytes;  // O_i and L_i written once, at the end
      io.L_write += q_rows * 4.0;
      if (!compute) continue;
      for (int r = 0; r < q_rows; ++r) {
        for (int k = 0; k < s.d; ++k) out.O[(head * s.N + i0 + r) * long(s.d) + k] = O_i(r, k) / l_i(r);
        out.L[head * s.N + i0 + r] = m_i(r) + std::log(l_i(r));
      }
    }
  }
  return out;
}

}  // namespace fa2
