// Every CUDA runtime call and every kernel launch in the ladder goes through
// these two macros, so a failure names the call, the file and the line.
#pragma once

#include <cuda_runtime_api.h>

#include <stdexcept>

namespace ladder {

class CudaError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

[[noreturn]] void throw_cuda_error(cudaError_t err, const char* what, const char* file, int line);

}  // namespace ladder

#define CUDA_CHECK(call)                                                                                \
  do {                                                                                                  \
    const cudaError_t ladder_err_ = (call);                                                             \
    if (ladder_err_ != cudaSuccess) ::ladder::throw_cuda_error(ladder_err_, #call, __FILE__, __LINE__); \
  } while (0)

// After a <<<...>>> launch. A bad configuration (too many threads, too much
// shared memory) is reported here at once; a fault inside the kernel surfaces at
// the next synchronising call. Run with CUDA_LAUNCH_BLOCKING=1 to pin it to the launch.
#define CUDA_CHECK_LAUNCH() CUDA_CHECK(cudaGetLastError())
