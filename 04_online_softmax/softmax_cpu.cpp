#include "softmax_cpu.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace osm {

Half exp(Half a) { return Half(std::exp(float(a))); }

namespace {
template <class T>
T max_of(T a, T b) {
  return a < b ? b : a;
}
template <class T>
bool is_neg_inf(T v) {
  return v == T(kNegInf);
}
// y_j = e^(x_j - m) / l: the last pass every stable form shares.
template <class T>
void normalise(const std::vector<T>& x, MaxSum<T> s, std::vector<T>& y) {
  using std::exp;
  y.resize(x.size());
  for (std::size_t j = 0; j < x.size(); ++j) y[j] = exp(x[j] - s.m) / s.l;
}
}  // namespace

template <class T>
MaxSum<T> update(MaxSum<T> s, T x) {
  using std::exp;
  const T m_new = max_of(s.m, x);
  // Nothing but -inf so far: e^(m - m') would be e^(-inf - -inf) = NaN. The
  // pair stays (-inf, 0), which is what an empty prefix is.
  if (is_neg_inf(m_new)) return s;
  return {m_new, s.l * exp(s.m - m_new) + exp(x - m_new)};
}

template <class T>
MaxSum<T> merge(MaxSum<T> a, MaxSum<T> b) {
  using std::exp;
  const T m = max_of(a.m, b.m);
  if (is_neg_inf(m)) return {m, T(0.0f)};  // both empty (see update)
  return {m, a.l * exp(a.m - m) + b.l * exp(b.m - m)};
}

template <class T>
MaxSum<T> block_stats(const T* x, int n) {
  using std::exp;
  MaxSum<T> s;
  for (int j = 0; j < n; ++j) s.m = max_of(s.m, x[j]);
  if (is_neg_inf(s.m)) return s;  // an all -inf block adds nothing
  for (int j = 0; j < n; ++j) s.l = s.l + exp(x[j] - s.m);
  return s;
}

template <class T>
MaxSum<T> naive_softmax(const std::vector<T>& x, std::vector<T>& y) {
  using std::exp;
  MaxSum<T> s{T(0.0f), T(0.0f)};
  for (const T& v : x) s.l = s.l + exp(v);  // e^v itself: overflows once v is large
  normalise(x, s, y);
  return s;
}

template <class T>
MaxSum<T> safe_softmax(const std::vector<T>& x, std::vector<T>& y) {
  // Passes 1 and 2 (max, then sum): block_stats of the whole row.
  const MaxSum<T> s = block_stats(x.data(), static_cast<int>(x.size()));
  normalise(x, s, y);  // pass 3
  return s;
}

template <class T>
MaxSum<T> online_softmax(const std::vector<T>& x, std::vector<T>& y, std::vector<MaxSum<T>>* steps) {
  MaxSum<T> s;
  for (const T& v : x) {  // pass 1: max and sum together
    s = update(s, v);
    if (steps) steps->push_back(s);
  }
  normalise(x, s, y);  // pass 2
  return s;
}

template <class T>
MaxSum<T> blockwise_softmax(const std::vector<T>& x, int B, std::vector<T>& y, std::vector<BlockStep<T>>* steps) {
  if (B < 1) throw std::invalid_argument("blockwise_softmax: the block size B must be >= 1, got " + std::to_string(B));
  const int n = static_cast<int>(x.size());
  MaxSum<T> s;
  for (int begin = 0; begin < n; begin += B) {
    const int end = std::min(begin + B, n);
    const MaxSum<T> b = block_stats(x.data() + begin, end - begin);
    s = merge(s, b);
    if (steps) steps->push_back({begin, end, b, s});
  }
  normalise(x, s, y);
  return s;
}

#define OSM_INSTANTIATE(T)                                                                            \
  template MaxSum<T> update(MaxSum<T>, T);                                                            \
  template MaxSum<T> merge(MaxSum<T>, MaxSum<T>);                                                     \
  template MaxSum<T> block_stats(const T*, int);                                                      \
  template MaxSum<T> naive_softmax(const std::vector<T>&, std::vector<T>&);                           \
  template MaxSum<T> safe_softmax(const std::vector<T>&, std::vector<T>&);                            \
  template MaxSum<T> online_softmax(const std::vector<T>&, std::vector<T>&, std::vector<MaxSum<T>>*); \
  template MaxSum<T> blockwise_softmax(const std::vector<T>&, int, std::vector<T>&, std::vector<BlockStep<T>>*);
OSM_INSTANTIATE(float)
OSM_INSTANTIATE(double)
OSM_INSTANTIATE(Half)

}  // namespace osm
