// Chapter 06: FlashAttention-2 forward, fp32. Declared here, defined in fa_forward.cu.
#pragma once

#include <cuda_runtime_api.h>

#include "attention_shape.h"

namespace fa2 {

inline constexpr int kSupportedD[] = {32, 64, 128};

// B_r query rows per thread block, B_c keys per step of the inner loop;
// T_r = ceil(N / B_r) row tiles, T_c = ceil(N / B_c) key tiles.
struct Tiles {
  int B_r, B_c, T_r, T_c;
};
Tiles tiles(const ladder::AttentionShape& s);

// O = softmax(scale Q K^T) V and L = m + log(l) per query row ([B, H, N]).
// Device pointers. Throws std::invalid_argument for an unsupported d or a bad shape.
void forward(const ladder::AttentionShape& s, const float* Q, const float* K, const float* V, float* O, float* L,
             cudaStream_t stream = nullptr);

}  // namespace fa2
