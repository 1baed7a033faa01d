#include "reference_variants.h"

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace variants {

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
}  // namespace

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
    const ladder::AttentionForward f =
        ladder::attention_forward_reference(s, q.data(), k.data(), val.data(), for_sequence(m, b));
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
        ladder::attention_backward_reference(s, q.data(), k.data(), val.data(), dout.data(), for_sequence(m, b));
    scatter(r.dQ, g.dQ, v.cu_q[b], v.len_q(b), v.H, v.d);
    scatter(r.dK, g.dK, v.cu_k[b], v.len_k(b), v.H_kv, v.d);
    scatter(r.dV, g.dV, v.cu_k[b], v.len_k(b), v.H_kv, v.d);
  }
  return g;
}

}  // namespace variants
