#include "reference_variants.h"

#include <Eigen/Dense>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace variants {

namespace {

using MatD = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T>
using MapT = Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>;
constexpr double kInf = std::numeric_limits<double>::infinity();

template <class T>
MatD block(const T* X, long head, int rows, int d) {
  return MapT<T>(X + head * long(rows) * d, rows, d).template cast<double>();
}
void put(std::vector<double>& dst, const MatD& m, long head) {
  std::copy(m.data(), m.data() + m.size(), dst.begin() + head * m.size());
}

// One head's modified scores S' (masked: -inf) and the unmodified S (for score').
struct Scores {
  MatD S, Sm;
};
template <class T>
Scores scores(const ladder::AttentionShape& s, const T* Q, const T* K, long head, const Mods& m) {
  const long kv = head / s.H * s.hkv() + head % s.H / s.group();
  const int b = int(head / s.H), h = int(head % s.H);
  Scores r;
  r.S = (1.0 / std::sqrt(double(s.d))) * block(Q, head, s.N, s.d) * block(K, kv, s.nkv(), s.d).transpose();
  r.Sm = r.S;
  for (int q = 0; q < s.N; ++q)
    for (int k = 0; k < s.nkv(); ++k) {
      if (m.mask && !m.mask(b, h, q, k))
        r.Sm(q, k) = -kInf;
      else if (m.score)
        r.Sm(q, k) = m.score(r.S(q, k), b, h, q, k);
    }
  return r;
}

MatD softmax_rows(const MatD& S, Eigen::VectorXd& L) {
  const Eigen::VectorXd mx = S.rowwise().maxCoeff();
  MatD P(S.rows(), S.cols());
  L.resize(S.rows());
  for (Eigen::Index i = 0; i < S.rows(); ++i) {
    if (mx(i) == -kInf) {  // no visible key
      P.row(i).setZero();
      L(i) = -kInf;
      continue;
    }
    P.row(i) = (S.row(i).array() - mx(i)).unaryExpr([](double x) { return std::exp(x); }).matrix();
    const double l = P.row(i).sum();
    P.row(i) /= l;
    L(i) = mx(i) + std::log(l);
  }
  return P;
}

void check(const ladder::AttentionShape& s) {
  if (s.causal)
    throw std::invalid_argument("variants: the shape " + s.str() + " is causal; give the mask (Causal) instead");
}

template <class T>
ladder::AttentionForward forward(const ladder::AttentionShape& s, const T* Q, const T* K, const T* V, const Mods& m) {
  check(s);
  ladder::AttentionForward r{std::vector<double>(s.elems()), std::vector<double>(s.rows())};
#pragma omp parallel for schedule(dynamic)
  for (long head = 0; head < long(s.heads()); ++head) {
    Eigen::VectorXd L;
    const MatD P = softmax_rows(scores(s, Q, K, head, m).Sm, L);
    const long kv = head / s.H * s.hkv() + head % s.H / s.group();
    put(r.O, P * block(V, kv, s.nkv(), s.d), head);
    std::copy(L.data(), L.data() + L.size(), r.L.begin() + head * s.N);
  }
  return r;
}

}  // namespace

ladder::AttentionForward variant_forward_reference(const ladder::AttentionShape& s, const float* Q, const float* K,
                                                   const float* V, const Mods& m) {
  return forward(s, Q, K, V, m);
}
ladder::AttentionForward variant_forward_reference(const ladder::AttentionShape& s, const double* Q, const double* K,
                                                   const double* V, const Mods& m) {
  return forward(s, Q, K, V, m);
}

ladder::AttentionGrads variant_backward_reference(const ladder::AttentionShape& s, const float* Q, const float* K,
                                                  const float* V, const float* dO, const Mods& m) {
  check(s);
  ladder::AttentionGrads g{std::vector<double>(s.elems()), std::vector<double>(s.kv_elems()),
                           std::vector<double>(s.kv_elems())};
  const double scale = 1.0 / std::sqrt(double(s.d));
#pragma omp parallel for schedule(dynamic)
  for (long kv = 0; kv < long(s.kv_heads()); ++kv) {
    const long first = kv / s.hkv() * s.H + kv % s.hkv() * s.group();
    const MatD k = block(K, kv, s.nkv(), s.d), v = block(V, kv, s.nkv(), s.d);
    MatD dK = MatD::Zero(s.nkv(), s.d), dV = MatD::Zero(s.nkv(), s.d);
    for (long head = first; head < first + s.group(); ++head) {
      const int b = int(head / s.H), h = int(head % s.H);
      const Scores sc = scores(s, Q, K, head, m);
      Eigen::VectorXd L;
      const MatD P = softmax_rows(sc.Sm, L);
      const MatD dout = block(dO, head, s.N, s.d);
      const MatD dP = dout * v.transpose();
      const Eigen::VectorXd D = (dout.array() * (P * v).array()).rowwise().sum();
      MatD dS = P.array() * (dP.colwise() - D).array();
      if (m.score_grad)
        for (int q = 0; q < s.N; ++q)
          for (int j = 0; j < s.nkv(); ++j)
            if (P(q, j) != 0.0) dS(q, j) *= m.score_grad(sc.S(q, j), b, h, q, j);
      dV += P.transpose() * dout;
      dK += scale * dS.transpose() * block(Q, head, s.N, s.d);
      put(g.dQ, scale * dS * k, head);
    }
    put(g.dK, dK, kv);
    put(g.dV, dV, kv);
  }
  return g;
}

Varlen make_varlen(const std::vector<int>& len_q, const std::vector<int>& len_k, int H, int H_kv, int d) {
  if (len_q.size() != len_k.size() || len_q.empty())
    throw std::invalid_argument("variants: varlen needs one query length and one key length per sequence (got " +
                                std::to_string(len_q.size()) + " and " + std::to_string(len_k.size()) + ")");
  if (H < 1 || H_kv < 1 || H % H_kv != 0)
    throw std::invalid_argument("variants: varlen needs H a multiple of H_kv, both >= 1");
  Varlen v;
  v.H = H, v.H_kv = H_kv, v.d = d;
  v.cu_q = {0}, v.cu_k = {0};
  for (std::size_t b = 0; b < len_q.size(); ++b) {
    if (len_q[b] < 0 || len_k[b] < 0)
      throw std::invalid_argument("variants: sequence " + std::to_string(b) + " has a negative length");
    v.cu_q.push_back(v.cu_q.back() + len_q[b]);
    v.cu_k.push_back(v.cu_k.back() + len_k[b]);
  }
  return v;
}

namespace {

// Sequence b of a packed [total, heads, d] tensor as a [1, heads, len, d] one, and back.
std::vector<float> gather(const float* X, int first, int len, int heads, int d) {
  std::vector<float> out(std::size_t(heads) * len * d);
  for (int h = 0; h < heads; ++h)
    for (int t = 0; t < len; ++t)
      for (int c = 0; c < d; ++c)
        out[(std::size_t(h) * len + t) * d + c] = X[(std::size_t(first + t) * heads + h) * d + c];
  return out;
}
void scatter(const std::vector<double>& X, std::vector<double>& dst, int first, int len, int heads, int d) {
  for (int h = 0; h < heads; ++h)
    for (int t = 0; t < len; ++t)
      for (int c = 0; c < d; ++c)
        dst[(std::size_t(first + t) * heads + h) * d + c] = X[(std::size_t(h) * len + t) * d + c];
}
// The mask and modifier of sequence b, seen by the padded reference as batch 0.
Mods for_sequence(const Mods& m, int b) {
  Mods r;
  if (m.mask) r.mask = [m, b](int, int h, int q, int k) { return m.mask(b, h, q, k); };
  if (m.score) r.score = [m, b](double x, int, int h, int q, int k) { return m.score(x, b, h, q, k); };
  if (m.score_grad) r.score_grad = [m, b](double x, int, int h, int q, int k) { return m.score_grad(x, b, h, q, k); };
  return r;
}
ladder::AttentionShape sequence_shape(const Varlen& v, int b) {
  return ladder::attention_shape(1, v.H, v.H_kv, v.len_q(b), v.len_k(b), v.d, false);
}

}  // namespace

ladder::AttentionForward varlen_forward_reference(const Varlen& v, const float* Q, const float* K, const float* V,
                                                  const Mods& m) {
  ladder::AttentionForward r{std::vector<double>(std::size_t(v.total_q()) * v.H * v.d),
                             std::vector<double>(std::size_t(v.H) * v.total_q())};
  for (int b = 0; b < v.batch(); ++b) {
    if (v.len_q(b) == 0) continue;
    if (v.len_k(b) == 0) {  // no key at all: O = 0 (already), L = -inf
      for (int h = 0; h < v.H; ++h)
        for (int t = 0; t < v.len_q(b); ++t) r.L[std::size_t(h) * v.total_q() + v.cu_q[b] + t] = -kInf;
      continue;
    }
    const ladder::AttentionShape s = sequence_shape(v, b);
    const auto q = gather(Q, v.cu_q[b], v.len_q(b), v.H, v.d), k = gather(K, v.cu_k[b], v.len_k(b), v.H_kv, v.d),
               val = gather(V, v.cu_k[b], v.len_k(b), v.H_kv, v.d);
    const ladder::AttentionForward f = variant_forward_reference(s, q.data(), k.data(), val.data(), for_sequence(m, b));
    scatter(f.O, r.O, v.cu_q[b], v.len_q(b), v.H, v.d);
    for (int h = 0; h < v.H; ++h)
      for (int t = 0; t < v.len_q(b); ++t)
        r.L[std::size_t(h) * v.total_q() + v.cu_q[b] + t] = f.L[std::size_t(h) * v.len_q(b) + t];
  }
  return r;
}

ladder::AttentionGrads varlen_backward_reference(const Varlen& v, const float* Q, const float* K, const float* V,
                                                 const float* dO, const Mods& m) {
  ladder::AttentionGrads g{std::vector<double>(std::size_t(v.total_q()) * v.H * v.d),
                           std::vector<double>(std::size_t(v.total_k()) * v.H_kv * v.d),
                           std::vector<double>(std::size_t(v.total_k()) * v.H_kv * v.d)};
  for (int b = 0; b < v.batch(); ++b) {
    if (v.len_q(b) == 0 || v.len_k(b) == 0) continue;  // zero gradients
    const ladder::AttentionShape s = sequence_shape(v, b);
    const auto q = gather(Q, v.cu_q[b], v.len_q(b), v.H, v.d), k = gather(K, v.cu_k[b], v.len_k(b), v.H_kv, v.d),
               val = gather(V, v.cu_k[b], v.len_k(b), v.H_kv, v.d), dout = gather(dO, v.cu_q[b], v.len_q(b), v.H, v.d);
    const ladder::AttentionGrads r =
        variant_backward_reference(s, q.data(), k.data(), val.data(), dout.data(), for_sequence(m, b));
    scatter(r.dQ, g.dQ, v.cu_q[b], v.len_q(b), v.H, v.d);
    scatter(r.dK, g.dK, v.cu_k[b], v.len_k(b), v.H_kv, v.d);
    scatter(r.dV, g.dV, v.cu_k[b], v.len_k(b), v.H_kv, v.d);
  }
  return g;
}

}  // namespace variants
