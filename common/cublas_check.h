// cuBLAS is the matmul anchor (chapters 02, 03) and the engine of the standard
// attention baseline; its calls are checked like CUDA's.
#pragma once

#include <cublas_v2.h>

#include <string>

#include "bf16.h"
#include "cuda_check.h"

#define CUBLAS_CHECK(call)                                                                              \
  do {                                                                                                  \
    const cublasStatus_t ladder_st_ = (call);                                                           \
    if (ladder_st_ != CUBLAS_STATUS_SUCCESS)                                                            \
      throw ::ladder::CudaError(std::string(__FILE__) + ":" + std::to_string(__LINE__) + ": " + #call + \
                                " failed: " + cublasGetStatusName(ladder_st_));                         \
  } while (0)

namespace ladder {

// One handle per process, fp32 math (no TF32: CUBLAS_DEFAULT_MATH keeps fp32 for Sgemm).
cublasHandle_t cublas();

// C = A B for row-major fp32 A [M, K], B [K, N], C [M, N] on the device: the
// cuBLAS SGEMM the matmul chapters are measured against.
void cublas_sgemm(int M, int N, int K, const float* A, const float* B, float* C, cudaStream_t stream = nullptr);

// C = A B for bf16 A [M, K] and B given as B^T [N, K] (both row-major, K-major), fp32
// C [M, N] row-major, fp32 accumulation (cublasGemmEx, CUBLAS_COMPUTE_32F): the anchor
// of chapter 09, with exactly its layouts.
void cublas_gemm_bf16(int M, int N, int K, const bf16* A, const bf16* Bt, float* C, cudaStream_t stream = nullptr);

}  // namespace ladder
