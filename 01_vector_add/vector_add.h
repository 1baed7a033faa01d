// Chapter 01: c = a + b, three ways. Launchers are host functions callable from
// plain C++ (tests, benchmark, main); the kernels live in vector_add.cu.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace vadd {

enum class Kernel {
  OnePerElement,  // thread i computes c[i]; as many threads as elements
  GridStride,     // a fixed grid sized to the GPU walks the array in strides
  Float4,         // grid-stride, 16-byte loads and stores, scalar tail
};
inline constexpr Kernel kAll[] = {Kernel::OnePerElement, Kernel::GridStride, Kernel::Float4};
const char* name(Kernel k);

// Device pointers, n >= 1 elements. Throws std::invalid_argument on n == 0, and for
// Float4 on pointers that are not 16-byte aligned (cudaMalloc's always are).
void vector_add(Kernel k, const float* a, const float* b, float* c, std::size_t n, cudaStream_t stream = nullptr);

// Blocks of `threads` needed to give every one of n elements its own thread.
inline std::size_t blocks_for(std::size_t n, unsigned threads) { return (n + threads - 1) / threads; }

}  // namespace vadd
