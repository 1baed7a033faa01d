// The reference for chapter 04's exercise 3: the two rules of softmax_cpu.cpp, written
// out for doubles.
#include <algorithm>
#include <cmath>

#include "exercise.h"

namespace solution {

osm::MaxSum<double> update(osm::MaxSum<double> s, double x) {
  const double m_new = std::max(s.m, x);
  // Only -inf seen so far (and x = -inf too): the pair stays the empty row's. Without
  // this test, e^(m - m_new) = e^(-inf + inf) = NaN.
  if (m_new == -INFINITY) return s;
  return {m_new, s.l * std::exp(s.m - m_new) + std::exp(x - m_new)};
}

osm::MaxSum<double> merge(osm::MaxSum<double> a, osm::MaxSum<double> b) {
  const double m = std::max(a.m, b.m);
  if (m == -INFINITY) return {m, 0.0};  // both empty
  return {m, a.l * std::exp(a.m - m) + b.l * std::exp(b.m - m)};
}

}  // namespace solution
