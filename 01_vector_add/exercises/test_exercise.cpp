// The tests of chapter 01's exercise 4: they run one thread function for every thread
// of a grid, on the CPU, and check what a GPU run would get wrong.
//   CpuExerciseSolution.*  the reference (solution.cpp): runs with every `ctest`
//   Exercise.*             your mine.cpp: build/bin/01_vector_add_exercise --gtest_filter='Exercise*'
#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "exercise.h"
#include "gtest_helpers.h"

namespace {

using ThreadFn = void (*)(const float*, const float*, float*, std::size_t, std::size_t, std::size_t);

// Every thread of a grid of `threads` runs fn on its own copy of c (NaN inside [0, n),
// a sentinel in 8 guard floats past n), so that each element's writers can be counted:
// each element must be written by exactly one thread, with a + b, and nothing past n.
::testing::AssertionResult runs_like_the_kernel(ThreadFn fn, std::size_t n, std::size_t threads) {
  constexpr std::size_t kGuard = 8;
  constexpr float kSentinel = 12345.0f;
  const std::size_t n4 = (n + kGuard + 3) / 4;
  std::vector<float4> a4(n4), b4(n4), c4(n4);  // float4 storage: 16-byte aligned
  float *a = &a4[0].x, *b = &b4[0].x, *c = &c4[0].x;
  for (std::size_t i = 0; i < n; ++i) a[i] = float(i % 97), b[i] = 0.5f * float(i % 89);
  std::vector<int> writers(n, 0);
  for (std::size_t t = 0; t < threads; ++t) {
    for (std::size_t i = 0; i < 4 * n4; ++i) c[i] = i < n ? NAN : kSentinel;
    fn(a, b, c, n, t, threads);
    for (std::size_t i = n; i < n + kGuard; ++i)
      if (c[i] != kSentinel)
        return ::testing::AssertionFailure()
               << "thread " << t << " of " << threads << " wrote element " << i << ", past the end (n = " << n << ")";
    for (std::size_t i = 0; i < n; ++i) {
      if (std::isnan(c[i])) continue;
      if (c[i] != a[i] + b[i])
        return ::testing::AssertionFailure()
               << "thread " << t << " wrote " << c[i] << " to element " << i << ", not a + b = " << a[i] + b[i];
      ++writers[i];
    }
  }
  for (std::size_t i = 0; i < n; ++i)
    if (writers[i] != 1)
      return ::testing::AssertionFailure() << "element " << i << " of n = " << n << " (n % 4 = " << n % 4 << ", "
                                           << threads << " threads) was written by " << writers[i] << " threads, not 1"
                                           << (i >= n / 4 * 4 ? ": it is in the tail" : "");
  return ::testing::AssertionSuccess();
}

void check_every_size(ThreadFn fn) {
  for (std::size_t n : {1, 2, 3, 4, 5, 7, 19, 31, 33, 256, 257, 1000, 4093})
    for (std::size_t threads : {1, 2, 8, 32, 256})
      ASSERT_TRUE(runs_like_the_kernel(fn, n, threads));  // the first failure only
}

TEST(CpuExerciseSolution, Float4ThreadWritesEveryElementOnce) { check_every_size(solution::add_float4_thread); }

#if LADDER_EXERCISE_MINE  // only in 01_vector_add_exercise: the default build never compiles mine.cpp
// The stub as given: one thread over n = 7 writes the float4 and none of the 3 tail elements.
bool writes_no_tail(ThreadFn fn) {
  std::vector<float4> a4(2, make_float4(1, 1, 1, 1)), b4 = a4, c4(2, make_float4(NAN, NAN, NAN, NAN));
  fn(&a4[0].x, &b4[0].x, &c4[0].x, 7, 0, 1);
  return std::isnan(c4[1].x) && std::isnan(c4[1].y) && std::isnan(c4[1].z);
}

TEST(Exercise, Float4ThreadWritesEveryElementOnce) {
  ASSERT_FALSE(writes_no_tail(mine::add_float4_thread))
      << "unimplemented: edit 01_vector_add/exercises/mine.cpp (no thread writes the n % 4 tail yet)";
  check_every_size(mine::add_float4_thread);
}
#endif

}  // namespace
