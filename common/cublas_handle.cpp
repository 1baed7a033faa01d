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

}  // namespace ladder
