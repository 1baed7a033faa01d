#include "cuda_check.h"

#include <string>

namespace ladder {

void throw_cuda_error(cudaError_t err, const char* what, const char* file, int line) {
  throw CudaError(std::string(file) + ":" + std::to_string(line) + ": " + what + " failed: " + cudaGetErrorName(err) +
                  " (" + cudaGetErrorString(err) + ")");
}

}  // namespace ladder
