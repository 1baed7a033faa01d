#include "launch.h"

#include <cuda_runtime_api.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <stdexcept>
#include <utility>

#include "cuda_check.h"
#include "device.h"

namespace ladder {

void allow_dynamic_smem(const void* kernel, std::size_t bytes, const std::string& who, bool max_carveout) {
  // cudaFuncSetAttribute acts on the current device only (chapter 13 drives two GPUs from one
  // thread): one entry per (device, kernel), the most that kernel may use there now.
  static std::map<std::pair<int, const void*>, std::size_t> allowed;
  static std::mutex mutex;  // a launcher may run in one host thread per GPU
  const std::lock_guard<std::mutex> lock(mutex);
  int dev = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  const auto key = std::make_pair(dev, kernel);
  const auto it = allowed.find(key);
  if (it != allowed.end() && it->second >= bytes) return;
  const std::size_t limit = device().smem_per_block_optin;
  if (bytes > limit)
    throw std::invalid_argument(who + " needs " + std::to_string(bytes) + " bytes of shared memory per block; " +
                                (device().available ? device().name : std::string("this GPU")) + " allows " +
                                std::to_string(limit) + " (see the README's \"Other GPUs\")");
  CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
  if (max_carveout)
    CUDA_CHECK(
        cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, cudaSharedmemCarveoutMaxShared));
  allowed[key] = bytes;
}

void check_grid(const std::string& who, unsigned long long x, unsigned long long y, unsigned long long z) {
  auto too_large = [&](const char* dim, unsigned long long v, unsigned long long most) {
    if (v < 1 || v > most)
      throw std::invalid_argument(who + ": the grid needs " + std::to_string(v) + " blocks along " + dim +
                                  "; CUDA allows 1 to " + std::to_string(most));
  };
  too_large("x", x, 2147483647ull);
  too_large("y", y, 65535);
  too_large("z", z, 65535);
}

void check_pointers(const std::string& who, std::initializer_list<NamedPointer> pointers, std::size_t alignment) {
  for (const NamedPointer& p : pointers) {
    const std::size_t align = p.alignment ? p.alignment : alignment;
    if (p.p == nullptr) throw std::invalid_argument(who + ": " + p.name + " is null; pass a device pointer");
    if (reinterpret_cast<std::uintptr_t>(p.p) % align != 0)
      throw std::invalid_argument(who + ": " + p.name + " must be aligned to " + std::to_string(align) +
                                  " bytes (the kernel's vector accesses); cudaMalloc's pointers are");
  }
  // A kernel that dereferences host memory dies with an illegal address (or, on a system with
  // address translation, runs over the bus): ask the driver what each pointer is. Without a
  // GPU there is nothing to ask (and nothing is launched).
  if (!device().available) return;
  for (const NamedPointer& p : pointers) {
    cudaPointerAttributes attr{};
    if (cudaPointerGetAttributes(&attr, p.p) != cudaSuccess) {
      cudaGetLastError();  // not a pointer the driver knows: treat it as host memory
      attr.type = cudaMemoryTypeUnregistered;
    }
    if (attr.type == cudaMemoryTypeHost || attr.type == cudaMemoryTypeUnregistered)
      throw std::invalid_argument(who + ": " + p.name + " points to host memory; pass device memory (cudaMalloc, " +
                                  "ladder::DeviceBuffer) or managed memory");
  }
}

}  // namespace ladder
