#include "reference_attention.h"

#include <Eigen/Dense>
#include <limits>

namespace ladder {

namespace {
using MatD = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T>
using MapT = Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>;

// One head's [N, d] block of a [B, H, N, d] tensor, as fp64.
template <class T>
MatD head_block(const T* X, const AttentionShape& s, long head) {
  return MapT<T>(X + head * long(s.N) * s.d, s.N, s.d).template cast<double>();
}

template <class T>
MatD scores(const AttentionShape& s, const T* Q, const T* K, long head) {
  MatD S = (1.0 / std::sqrt(double(s.d))) * head_block(Q, s, head) * head_block(K, s, head).transpose();
  if (s.causal)
    for (int i = 0; i < s.N; ++i)
      for (int j = i + 1; j < s.N; ++j) S(i, j) = -std::numeric_limits<double>::infinity();
  return S;
}

// P = softmax_rows(S); returns the row logsumexp L through `L`.
MatD softmax_rows(const MatD& S, Eigen::VectorXd& L) {
  const Eigen::VectorXd m = S.rowwise().maxCoeff();
  MatD P = (S.colwise() - m).array().exp();  // exp(-inf) = 0 for masked entries
  const Eigen::VectorXd l = P.rowwise().sum();
  P.array().colwise() /= l.array();
  L = m.array() + l.array().log();
  return P;
}

void put(std::vector<double>& dst, const MatD& block, long head) {
  std::copy(block.data(), block.data() + block.size(), dst.begin() + head * block.size());
}

template <class T>
AttentionForward forward(const AttentionShape& s, const T* Q, const T* K, const T* V) {
  AttentionForward r{std::vector<double>(s.elems()), std::vector<double>(s.rows())};
#pragma omp parallel for schedule(dynamic)
  for (long head = 0; head < long(s.heads()); ++head) {
    Eigen::VectorXd L;
    const MatD P = softmax_rows(scores(s, Q, K, head), L);
    put(r.O, P * head_block(V, s, head), head);
    std::copy(L.data(), L.data() + L.size(), r.L.begin() + head * s.N);
  }
  return r;
}

template <class T>
AttentionGrads backward(const AttentionShape& s, const T* Q, const T* K, const T* V, const T* dO) {
  AttentionGrads g{std::vector<double>(s.elems()), std::vector<double>(s.elems()), std::vector<double>(s.elems())};
  const double scale = 1.0 / std::sqrt(double(s.d));
#pragma omp parallel for schedule(dynamic)
  for (long head = 0; head < long(s.heads()); ++head) {
    Eigen::VectorXd L;
    const MatD P = softmax_rows(scores(s, Q, K, head), L);
    const MatD v = head_block(V, s, head), dout = head_block(dO, s, head);
    const MatD O = P * v;
    const MatD dP = dout * v.transpose();
    const Eigen::VectorXd D = (dout.array() * O.array()).rowwise().sum();
    const MatD dS = P.array() * (dP.colwise() - D).array();
    put(g.dV, P.transpose() * dout, head);
    put(g.dQ, scale * dS * head_block(K, s, head), head);
    put(g.dK, scale * dS.transpose() * head_block(Q, s, head), head);
  }
  return g;
}
}  // namespace

AttentionForward attention_forward_reference(const AttentionShape& s, const float* Q, const float* K, const float* V) {
  return forward(s, Q, K, V);
}
AttentionForward attention_forward_reference(const AttentionShape& s, const double* Q, const double* K,
                                             const double* V) {
  return forward(s, Q, K, V);
}
AttentionGrads attention_backward_reference(const AttentionShape& s, const float* Q, const float* K, const float* V,
                                            const float* dO) {
  return backward(s, Q, K, V, dO);
}
AttentionGrads attention_backward_reference(const AttentionShape& s, const double* Q, const double* K, const double* V,
                                            const double* dO) {
  return backward(s, Q, K, V, dO);
}

std::vector<double> attention_scores_reference(const AttentionShape& s, const float* Q, const float* K, int head) {
  const MatD S = scores(s, Q, K, head);
  return std::vector<double>(S.data(), S.data() + S.size());
}

}  // namespace ladder
