// Chapter 01, kernel exercise: the float4 grid-stride kernel, tail included.
// Difficulty ★, about 20 minutes. See exercises/README.md.
//
// Write the body of add_float4_kernel (the TODO), set kImplemented to true, then run
//   cmake --build build --target 01_vector_add_exercise
//   build/bin/01_vector_add_exercise --gtest_filter='Exercise*'
// The test launches it with 1, 7 and 160 blocks on sizes around every boundary (n % 4 = 0..3,
// fewer elements than threads, many more), a and b fresh random, c poisoned with NaN, and
// compares every element of c with a + b computed on the CPU.
#include "cuda_check.h"
#include "kernel_exercise.h"

namespace mine {

// Until this is true the test stops with "unimplemented: edit 01_vector_add/exercises/mine.cu".
const bool kImplemented = false;

namespace {

constexpr unsigned kThreads = 256;

// c[i] = a[i] + b[i] for every i < n, with 16-byte loads and stores: the n / 4 whole float4s,
// each thread taking float4 number `first`, first + stride, ... (stride = all the threads of
// the grid); then the n % 4 elements left after the last whole float4, each to exactly one
// thread. No element may be written twice, none past n (the test checks both).
__global__ void add_float4_kernel(const float* a, const float* b, float* c, std::size_t n) {
  // TODO: the grid-stride float4 loop, then the tail.
}

}  // namespace

void add_float4(const float* a, const float* b, float* c, std::size_t n, unsigned blocks, cudaStream_t stream) {
  add_float4_kernel<<<blocks, kThreads, 0, stream>>>(a, b, c, n);
  CUDA_CHECK_LAUNCH();
}

}  // namespace mine
