// Chapter 04 on the CPU: the softmax of one row, four ways, in plain C++.
//   naive   y = e^x / sum e^x                          (overflows: no max shift)
//   safe    m = max x; l = sum e^(x - m); y = e^(x - m) / l        3 passes
//   online  (m, l) together in one pass, then y = e^(x - m) / l    2 passes
//   blocks  (m~, l~) of each block of B elements, merged into (m, l), then y
// Each returns the (m, l) it normalised with, so the tests and the trace can
// compare them: the final l of online and block-wise IS the safe denominator.
// Templated on the element type: float, double, and Half (fp16) for the
// overflow demonstration.
#pragma once

#include <cuda_fp16.h>

#include <limits>
#include <vector>

namespace osm {

inline constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// The running statistics of the elements seen so far: their max m and the sum
// l = sum_j e^(x_j - m), measured from that max. The empty row is (-inf, 0).
template <class T>
struct MaxSum {
  T m = T(kNegInf);
  T l = T(0.0f);
};

// One element x joins:  m' = max(m, x),  l' = l e^(m - m') + e^(x - m').
template <class T>
MaxSum<T> update(MaxSum<T> s, T x);

// Two blocks' statistics combine (in either order):
//   m = max(m_a, m_b),  l = l_a e^(m_a - m) + l_b e^(m_b - m).
// An element is a block of one, (x, e^0 = 1): update(s, x) == merge(s, {x, 1}).
template <class T>
MaxSum<T> merge(MaxSum<T> a, MaxSum<T> b);

// One block on its own, the safe way (its max, then its sum).
template <class T>
MaxSum<T> block_stats(const T* x, int n);

// The row algorithms: y = softmax(x); they return the (m, l) used for y.
// A row of only -inf has no softmax (0/0); its output is NaN.
template <class T>
MaxSum<T> naive_softmax(const std::vector<T>& x, std::vector<T>& y);  // m = 0: no shift
template <class T>
MaxSum<T> safe_softmax(const std::vector<T>& x, std::vector<T>& y);
// `steps`, when given, receives (m, l) after each element.
template <class T>
MaxSum<T> online_softmax(const std::vector<T>& x, std::vector<T>& y, std::vector<MaxSum<T>>* steps = nullptr);

// One step of the block-wise form: the block's own statistics and the running
// ones after merging it.
template <class T>
struct BlockStep {
  int begin, end;  // the block is x[begin, end)
  MaxSum<T> block, running;
};
template <class T>
MaxSum<T> blockwise_softmax(const std::vector<T>& x, int B, std::vector<T>& y,
                            std::vector<BlockStep<T>>* steps = nullptr);

// fp16 on the host, for the overflow demonstration: every operation rounds its
// result to CUDA's __half, as fp16 arithmetic on the GPU does (one fp32
// operation rounded to fp16 is the correctly rounded fp16 result). The largest
// finite __half is 65504, so e^x overflows to inf for x > 11.09.
struct Half {
  __half h;
  Half() : h(__float2half(0.0f)) {}
  explicit Half(float f) : h(__float2half(f)) {}
  explicit operator float() const { return __half2float(h); }
};
inline Half operator+(Half a, Half b) { return Half(float(a) + float(b)); }
inline Half operator-(Half a, Half b) { return Half(float(a) - float(b)); }
inline Half operator*(Half a, Half b) { return Half(float(a) * float(b)); }
inline Half operator/(Half a, Half b) { return Half(float(a) / float(b)); }
inline bool operator<(Half a, Half b) { return float(a) < float(b); }
inline bool operator==(Half a, Half b) { return float(a) == float(b); }
Half exp(Half a);

}  // namespace osm
