// The software exp2 run by the GPU, for the test that its device branch gives the host's bits.
#include "cuda_check.h"
#include "soft_exp2.h"

namespace fa3::kernel {

namespace {
__global__ void exp2_poly_kernel(const float* x, float* y, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) y[i] = exp2_poly(x[i]);
}
}  // namespace

void exp2_poly_on_device(const float* x, float* y, int n, cudaStream_t stream) {
  if (n <= 0) return;
  exp2_poly_kernel<<<(n + 255) / 256, 256, 0, stream>>>(x, y, n);
  CUDA_CHECK_LAUNCH();
}

}  // namespace fa3::kernel
