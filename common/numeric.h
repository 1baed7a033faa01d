// The few numbers and integer helpers every kernel file needs, written once. Header-only,
// usable from host code and, under nvcc, from device code.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define LADDER_HOST_DEVICE __host__ __device__
#else
#define LADDER_HOST_DEVICE
#endif

namespace ladder {

// exp(x) = 2^(x log2 e): the kernels fold log2 e into the softmax scale once and call the
// hardware's exp2 (MUFU.EX2); L = m ln 2 + ln l turns a base-2 maximum back into nats.
inline constexpr float kLog2e = 1.4426950408889634f;
inline constexpr float kLn2 = 0.6931471805599453f;

// Tiles needed to cover n items, m per tile (n >= 0, m > 0).
LADDER_HOST_DEVICE constexpr int ceil_div(int n, int m) { return (n + m - 1) / m; }
LADDER_HOST_DEVICE constexpr std::int64_t ceil_div(std::int64_t n, std::int64_t m) { return (n + m - 1) / m; }
// n padded to a whole number of m-item tiles (n >= 0, m > 0), in n's type.
template <class T>
LADDER_HOST_DEVICE constexpr T round_up(T n, int m) {
  return (n + m - 1) / m * m;
}

}  // namespace ladder
