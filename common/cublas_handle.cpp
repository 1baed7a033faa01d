#include "cublas_check.h"

namespace ladder {

cublasHandle_t cublas() {
  static const cublasHandle_t handle = [] {
    cublasHandle_t h = nullptr;
    CUBLAS_CHECK(cublasCreate(&h));
    CUBLAS_CHECK(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH));
    return h;
  }();
  return handle;
}

void cublas_sgemm(int M, int N, int K, const float* A, const float* B, float* C, cudaStream_t stream) {
  // cuBLAS is column-major; a row-major X is a column-major X^T, so compute
  // C^T = B^T A^T: swap the operands and the roles of M and N.
  const float alpha = 1.0f, beta = 0.0f;
  CUBLAS_CHECK(cublasSetStream(cublas(), stream));
  CUBLAS_CHECK(cublasSgemm(cublas(), CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &alpha, B, N, A, K, &beta, C, N));
}

void cublas_gemm_bf16(int M, int N, int K, const bf16* A, const bf16* Bt, float* C, cudaStream_t stream) {
  // Column-major view: C^T [N, M] = B^T... in cuBLAS terms, the row-major [N, K] buffer of
  // B^T is a column-major K x N matrix, op = T gives N x K = the B^T that C^T = B^T A^T needs;
  // the row-major [M, K] buffer of A is a column-major K x M matrix = A^T, op = N.
  const float alpha = 1.0f, beta = 0.0f;
  CUBLAS_CHECK(cublasSetStream(cublas(), stream));
  CUBLAS_CHECK(cublasGemmEx(cublas(), CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, &alpha, Bt, CUDA_R_16BF, K, A, CUDA_R_16BF, K,
                            &beta, C, CUDA_R_32F, N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

}  // namespace ladder
