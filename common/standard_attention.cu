#include <cuda_runtime.h>

#include <cmath>
#include <stdexcept>
#include <string>

#include "cublas_check.h"
#include "standard_attention.h"

namespace ladder {

namespace {

constexpr int kThreads = 256;

// Block-wide sum; every thread gets the result. `shared` holds kThreads/32 floats.
__device__ float block_sum(float v, float* shared) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffff, v, o);
  if (threadIdx.x % 32 == 0) shared[threadIdx.x / 32] = v;
  __syncthreads();
  float total = 0.0f;
  for (int w = 0; w < kThreads / 32; ++w) total += shared[w];
  __syncthreads();  // `shared` may be reused right after
  return total;
}
__device__ float block_max(float v, float* shared) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffff, v, o));
  if (threadIdx.x % 32 == 0) shared[threadIdx.x / 32] = v;
  __syncthreads();
  float total = -INFINITY;
  for (int w = 0; w < kThreads / 32; ++w) total = fmaxf(total, shared[w]);
  __syncthreads();
  return total;
}

// One block per row of S (rows of all heads back to back). Causal rows i keep
// columns 0..i; the rest become exactly 0.
__global__ void softmax_rows(float* S, int N, bool causal) {
  __shared__ float shared[kThreads / 32];
  float* s = S + static_cast<long long>(blockIdx.x) * N;
  const int i = blockIdx.x % N;
  const int valid = causal ? i + 1 : N;
  float m = -INFINITY;
  for (int j = threadIdx.x; j < valid; j += kThreads) m = fmaxf(m, s[j]);
  m = block_max(m, shared);
  float l = 0.0f;
  for (int j = threadIdx.x; j < valid; j += kThreads) l += expf(s[j] - m);
  const float inv_l = 1.0f / block_sum(l, shared);
  for (int j = threadIdx.x; j < N; j += kThreads) s[j] = j < valid ? expf(s[j] - m) * inv_l : 0.0f;
}

// Softmax backward, one block per row, in place: dS = P * (dP - rowsum(P * dP)).
__global__ void softmax_rows_backward(const float* P, float* dP, int N) {
  __shared__ float shared[kThreads / 32];
  const long long offset = static_cast<long long>(blockIdx.x) * N;
  float D = 0.0f;
  for (int j = threadIdx.x; j < N; j += kThreads) D += P[offset + j] * dP[offset + j];
  D = block_sum(D, shared);
  for (int j = threadIdx.x; j < N; j += kThreads) dP[offset + j] = P[offset + j] * (dP[offset + j] - D);
}

// Row-major batched products through column-major cuBLAS: a row-major X[r, c] is
// the column-major X^T, so C = A B (row-major) is C^T = B^T A^T (column-major).
// C[N, N] = alpha A[N, d] B[N, d]^T per head.
void gemm_nt(int N, int d, int heads, float alpha, const float* A, const float* B, float* C) {
  const float beta = 0.0f;
  CUBLAS_CHECK(cublasSgemmStridedBatched(cublas(), CUBLAS_OP_T, CUBLAS_OP_N, N, N, d, &alpha, B, d,
                                         static_cast<long long>(N) * d, A, d, static_cast<long long>(N) * d, &beta, C,
                                         N, static_cast<long long>(N) * N, heads));
}
// C[N, d] = alpha A[N, N] B[N, d] per head.
void gemm_nn(int N, int d, int heads, float alpha, const float* A, const float* B, float* C) {
  const float beta = 0.0f;
  CUBLAS_CHECK(cublasSgemmStridedBatched(cublas(), CUBLAS_OP_N, CUBLAS_OP_N, d, N, N, &alpha, B, d,
                                         static_cast<long long>(N) * d, A, N, static_cast<long long>(N) * N, &beta, C,
                                         d, static_cast<long long>(N) * d, heads));
}
// C[N, d] = alpha A[N, N]^T B[N, d] per head.
void gemm_tn(int N, int d, int heads, float alpha, const float* A, const float* B, float* C) {
  const float beta = 0.0f;
  CUBLAS_CHECK(cublasSgemmStridedBatched(cublas(), CUBLAS_OP_N, CUBLAS_OP_T, d, N, N, &alpha, B, d,
                                         static_cast<long long>(N) * d, A, N, static_cast<long long>(N) * N, &beta, C,
                                         d, static_cast<long long>(N) * d, heads));
}

}  // namespace

StandardAttention::StandardAttention(const AttentionShape& s, bool with_backward) : s_(s) {
  constexpr int kSupportedD[] = {16, 32, 64, 128, 256};
  validate(s, kSupportedD);
  if (!fits(s, with_backward))
    throw std::invalid_argument("the standard attention at " + s.str() + " needs " +
                                std::to_string((with_backward ? 2 : 1) * score_bytes(s) >> 20) +
                                " MiB for its N x N buffers; the GPU has less free memory (plus 1 GiB of room)");
  P_ = DeviceBuffer<float>(s.heads() * std::size_t(s.N) * s.N);
  if (with_backward) dS_ = DeviceBuffer<float>(P_.size());
}

bool StandardAttention::fits(const AttentionShape& s, bool with_backward) {
  std::size_t free_bytes = 0, total_bytes = 0;
  CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  return (with_backward ? 2 : 1) * score_bytes(s) + (std::size_t{1} << 30) <= free_bytes;
}

void StandardAttention::forward(const float* Q, const float* K, const float* V, float* O) {
  const int heads = static_cast<int>(s_.heads());
  gemm_nt(s_.N, s_.d, heads, s_.scale(), Q, K, P_.data());
  softmax_rows<<<static_cast<unsigned>(s_.rows()), kThreads>>>(P_.data(), s_.N, s_.causal);
  CUDA_CHECK_LAUNCH();
  gemm_nn(s_.N, s_.d, heads, 1.0f, P_.data(), V, O);
}

void StandardAttention::backward(const float* Q, const float* K, const float* V, const float* dO, float* dQ, float* dK,
                                 float* dV) {
  if (dS_.size() == 0) throw std::logic_error("StandardAttention: constructed without backward buffers");
  const int heads = static_cast<int>(s_.heads());
  gemm_tn(s_.N, s_.d, heads, 1.0f, P_.data(), dO, dV);
  gemm_nt(s_.N, s_.d, heads, 1.0f, dO, V, dS_.data());
  softmax_rows_backward<<<static_cast<unsigned>(s_.rows()), kThreads>>>(P_.data(), dS_.data(), s_.N);
  CUDA_CHECK_LAUNCH();
  gemm_nn(s_.N, s_.d, heads, s_.scale(), dS_.data(), K, dQ);
  gemm_tn(s_.N, s_.d, heads, s_.scale(), dS_.data(), Q, dK);
}

}  // namespace ladder
