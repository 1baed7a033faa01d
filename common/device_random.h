// Random inputs generated on the GPU, for problems too large to draw on the host and copy
// (a 128K-token KV cache, a sequence spread over a ring). Counter-based: element i is a hash
// of (seed, i), so the same seed gives the same values whatever the grid, and a slice of a
// buffer can be regenerated on its own.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "bf16.h"

namespace ladder {

// x[i] uniform in [-1, 1) (24 random bits, then rounded to the element type).
void fill_uniform_device(bf16* x, std::size_t n, std::uint64_t seed, cudaStream_t stream = nullptr);
void fill_uniform_device(float* x, std::size_t n, std::uint64_t seed, cudaStream_t stream = nullptr);

}  // namespace ladder
