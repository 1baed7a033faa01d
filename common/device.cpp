#include "device.h"

#include <cuda_runtime_api.h>

#include <cstdio>

namespace ladder {

namespace {
DeviceInfo query() {
  DeviceInfo info;
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    info.reason = err != cudaSuccess ? cudaGetErrorName(err) : "cudaGetDeviceCount found 0 devices";
    cudaGetLastError();  // clear the sticky error so later calls are not confused by it
    return info;
  }
  cudaDeviceProp p{};
  if (cudaGetDeviceProperties(&p, 0) != cudaSuccess) {
    info.reason = "cudaGetDeviceProperties failed";
    return info;
  }
  info.available = true;
  info.name = p.name;
  info.cc_major = p.major;
  info.cc_minor = p.minor;
  info.sm_count = p.multiProcessorCount;
  info.l2_bytes = static_cast<std::size_t>(p.l2CacheSize);
  info.global_bytes = p.totalGlobalMem;
  info.smem_per_block_optin = p.sharedMemPerBlockOptin;
  info.smem_per_sm = p.sharedMemPerMultiprocessor;
  info.regs_per_sm = p.regsPerMultiprocessor;
  cudaDriverGetVersion(&info.driver_version);
  cudaRuntimeGetVersion(&info.runtime_version);
  return info;
}
}  // namespace

const DeviceInfo& device() {
  static const DeviceInfo info = query();
  return info;
}

std::string describe_device() {
  const DeviceInfo& d = device();
  if (!d.available) return "no CUDA device";
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s (sm_%d%d, %d SMs, %.0f MiB L2, %.0f GiB, CUDA runtime %d.%d, driver %d.%d)",
                d.name.c_str(), d.cc_major, d.cc_minor, d.sm_count, d.l2_bytes / 1048576.0,
                d.global_bytes / 1073741824.0, d.runtime_version / 1000, d.runtime_version % 1000 / 10,
                d.driver_version / 1000, d.driver_version % 1000 / 10);
  return buf;
}

}  // namespace ladder
