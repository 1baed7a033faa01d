// Chapter 01 exercise (README, "Exercises", 4): the float4 kernel as one thread runs it.
// You write mine::add_float4_thread in mine.cpp; solution::add_float4_thread is the
// reference. The same tests run both:
//   build/bin/01_vector_add_exercise --gtest_filter='Exercise*'      yours (target 01_vector_add_exercise)
//   build/bin/01_vector_add_test --gtest_filter='CpuExercise*'       the reference (in every test run)
// The tests play the whole grid on the CPU: threads first = 0 .. stride - 1, each with
// its own call, as blockIdx.x * blockDim.x + threadIdx.x and gridDim.x * blockDim.x.
#pragma once

#include <cstddef>

namespace mine {
// c[i] = a[i] + b[i] for the elements that thread `first` of `stride` threads owns in
// vector_add.cu's add_float4: float4 number first, first + stride, ... of the n / 4
// whole float4s, then, one element per thread, the n % 4 elements left over.
// a, b and c are 16-byte aligned.
void add_float4_thread(const float* a, const float* b, float* c, std::size_t n, std::size_t first, std::size_t stride);
}  // namespace mine

namespace solution {
void add_float4_thread(const float* a, const float* b, float* c, std::size_t n, std::size_t first, std::size_t stride);
}  // namespace solution
