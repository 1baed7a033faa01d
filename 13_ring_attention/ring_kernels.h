// The small kernels of the ring, around chapter 10's attention calls. No CUDA syntax.
// Each checks its pointers before launching and launches on the given stream.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "bf16.h"

namespace ring {

using ladder::bf16;

// (O_acc, L_acc) <- merge of (O_acc, L_acc) and one step's partial (O_s, L_s), per row
// (ring_sim.h has the formula), in fp32. rows = B*H*C, d = head dim.
void merge(float* O_acc, float* L_acc, const bf16* O_s, const float* L_s, std::int64_t rows, int d,
           cudaStream_t stream);
void fill(float* x, std::int64_t n, float value, cudaStream_t stream);
void to_bf16(const float* x, bf16* y, std::int64_t n, cudaStream_t stream);
void accumulate(float* acc, const float* x, std::int64_t n, cudaStream_t stream);  // acc += x

}  // namespace ring
