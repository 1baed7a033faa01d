#include "reference_attention.h"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <limits>

namespace ladder {

namespace {
using MatD = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T>
using MapT = Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>;

constexpr double kInf = std::numeric_limits<double>::infinity();

// One head's [rows, d] block of a [B, heads, rows, d] tensor, as fp64.
template <class T>
MatD block(const T* X, long head, int rows, int d) {
  return MapT<T>(X + head * long(rows) * d, rows, d).template cast<double>();
}
// Query head `head` (b * H + h) and the KV head it reads (b * H_kv + h / g).
template <class T>
MatD q_block(const T* X, const AttentionShape& s, long head) {
  return block(X, head, s.N, s.d);
}
long kv_head(const AttentionShape& s, long head) { return head / s.H * s.hkv() + head % s.H / s.group(); }
template <class T>
MatD kv_block(const T* X, const AttentionShape& s, long head) {
  return block(X, kv_head(s, head), s.nkv(), s.d);
}

template <class T>
MatD scores(const AttentionShape& s, const T* Q, const T* K, long head) {
  MatD S = (1.0 / std::sqrt(double(s.d))) * q_block(Q, s, head) * kv_block(K, s, head).transpose();
  if (s.causal)
    for (int i = 0; i < s.N; ++i)
      for (long j = std::max(0L, s.last_key(i) + 1); j < s.nkv(); ++j) S(i, j) = -kInf;
  return S;
}
// S' in place of S: the mask's -inf, the score modifier elsewhere (nothing without mods).
void apply_mods(const AttentionShape& s, MatD& S, long head, const ScoreMods& m) {
  if (!m.mask && !m.score) return;
  const int b = int(head / s.H), h = int(head % s.H);
  for (int q = 0; q < s.N; ++q)
    for (int k = 0; k < s.nkv(); ++k) {
      if (S(q, k) == -kInf) continue;
      if (m.mask && !m.mask(b, h, q, k))
        S(q, k) = -kInf;
      else if (m.score)
        S(q, k) = m.score(S(q, k), b, h, q, k);
    }
}

// P = softmax_rows(S); returns the row logsumexp L through `L`. A row with every key
// masked (possible when N > N_kv and causal) has no softmax: P = 0, L = -inf.
MatD softmax_rows(const MatD& S, Eigen::VectorXd& L) {
  const Eigen::VectorXd m = S.rowwise().maxCoeff();
  MatD P(S.rows(), S.cols());
  L.resize(S.rows());
  for (Eigen::Index i = 0; i < S.rows(); ++i) {
    if (m(i) == -kInf) {
      P.row(i).setZero();
      L(i) = -kInf;
      continue;
    }
    // std::exp, not Eigen's vectorised exp: that one clamps its argument at -708, so a
    // masked entry would become a denormal 2e-308 instead of 0, and every product with
    // P afterwards would crawl through denormal arithmetic (20x slower when causal).
    P.row(i) = (S.row(i).array() - m(i)).unaryExpr([](double x) { return std::exp(x); }).matrix();
    const double l = P.row(i).sum();
    P.row(i) /= l;
    L(i) = m(i) + std::log(l);
  }
  return P;
}

void put(std::vector<double>& dst, const MatD& block, long head) {
  std::copy(block.data(), block.data() + block.size(), dst.begin() + head * block.size());
}

template <class T>
AttentionForward forward(const AttentionShape& s, const T* Q, const T* K, const T* V, const ScoreMods& m) {
  AttentionForward r{std::vector<double>(s.elems()), std::vector<double>(s.rows())};
#pragma omp parallel for schedule(dynamic)
  for (long head = 0; head < long(s.heads()); ++head) {
    Eigen::VectorXd L;
    MatD S = scores(s, Q, K, head);
    apply_mods(s, S, head, m);
    const MatD P = softmax_rows(S, L);
    put(r.O, P * kv_block(V, s, head), head);
    std::copy(L.data(), L.data() + L.size(), r.L.begin() + head * s.N);
  }
  return r;
}

template <class T>
AttentionGrads backward(const AttentionShape& s, const T* Q, const T* K, const T* V, const T* dO, const ScoreMods& m) {
  AttentionGrads g{std::vector<double>(s.elems()), std::vector<double>(s.kv_elems()),
                   std::vector<double>(s.kv_elems())};
  const double scale = 1.0 / std::sqrt(double(s.d));
  // One KV head per iteration: its dK, dV sum over the g query heads that read it.
#pragma omp parallel for schedule(dynamic)
  for (long kv = 0; kv < long(s.kv_heads()); ++kv) {
    const long b = kv / s.hkv(), first = b * s.H + kv % s.hkv() * s.group();
    const MatD k = block(K, kv, s.nkv(), s.d), v = block(V, kv, s.nkv(), s.d);
    MatD dK = MatD::Zero(s.nkv(), s.d), dV = MatD::Zero(s.nkv(), s.d);
    for (long head = first; head < first + s.group(); ++head) {
      Eigen::VectorXd L;
      MatD Sm = scores(s, Q, K, head);
      const MatD S = m.score_grad ? Sm : MatD();  // unmodified, for score'(S)
      apply_mods(s, Sm, head, m);
      const MatD P = softmax_rows(Sm, L);
      const MatD dout = q_block(dO, s, head);
      const MatD O = P * v;
      const MatD dP = dout * v.transpose();
      const Eigen::VectorXd D = (dout.array() * O.array()).rowwise().sum();
      MatD dS = P.array() * (dP.colwise() - D).array();
      if (m.score_grad) {  // the chain rule through S' = score(S)
        const int batch = int(head / s.H), h = int(head % s.H);
        for (int i = 0; i < s.N; ++i)
          for (int j = 0; j < s.nkv(); ++j)
            if (P(i, j) != 0.0) dS(i, j) *= m.score_grad(S(i, j), batch, h, i, j);
      }
      dV += P.transpose() * dout;
      dK += scale * dS.transpose() * q_block(Q, s, head);
      put(g.dQ, scale * dS * k, head);
    }
    put(g.dK, dK, kv);
    put(g.dV, dV, kv);
  }
  return g;
}
}  // namespace

AttentionForward attention_forward_reference(const AttentionShape& s, const float* Q, const float* K, const float* V,
                                             const ScoreMods& mods) {
  return forward(s, Q, K, V, mods);
}
AttentionForward attention_forward_reference(const AttentionShape& s, const double* Q, const double* K, const double* V,
                                             const ScoreMods& mods) {
  return forward(s, Q, K, V, mods);
}
AttentionGrads attention_backward_reference(const AttentionShape& s, const float* Q, const float* K, const float* V,
                                            const float* dO, const ScoreMods& mods) {
  return backward(s, Q, K, V, dO, mods);
}
AttentionGrads attention_backward_reference(const AttentionShape& s, const double* Q, const double* K, const double* V,
                                            const double* dO) {
  return backward(s, Q, K, V, dO, ScoreMods{});
}

std::vector<double> attention_scores_reference(const AttentionShape& s, const float* Q, const float* K, int head) {
  const MatD S = scores(s, Q, K, head);
  return std::vector<double>(S.data(), S.data() + S.size());
}

}  // namespace ladder
