#include "device.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

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

DeviceInfo capped(DeviceInfo d, const std::string& limits) {
  struct Cap {
    const char* name;
    int cc_major, cc_minor;
    std::size_t smem_per_block_optin, smem_per_sm;
    const char* gpus;
  };
  static const Cap caps[] = {{"sm75", 7, 5, 64 * 1024, 64 * 1024, "T4"},
                             {"sm80", 8, 0, 163 * 1024, 164 * 1024, "A100"},
                             {"sm86", 8, 6, 99 * 1024, 100 * 1024, "RTX 30"},
                             {"sm89", 8, 9, 99 * 1024, 100 * 1024, "RTX 40"},
                             {"sm120", 12, 0, 99 * 1024, 100 * 1024, "RTX 50"}};
  if (limits.empty()) return d;
  for (const Cap& c : caps) {
    if (limits != c.name) continue;
    if (!d.available) return d;
    d.smem_per_block_optin = std::min(d.smem_per_block_optin, c.smem_per_block_optin);
    d.smem_per_sm = std::min(d.smem_per_sm, c.smem_per_sm);
    if (c.cc_major * 10 + c.cc_minor < d.cc_major * 10 + d.cc_minor) d.cc_major = c.cc_major, d.cc_minor = c.cc_minor;
    d.name += std::string(" with the limits of ") + c.gpus + " (LADDER_DEVICE_LIMITS=" + c.name + ")";
    return d;
  }
  throw std::invalid_argument("LADDER_DEVICE_LIMITS=" + limits +
                              " is not a cap: sm75 (T4), sm80 (A100), sm86, sm89, sm120 (RTX 30, 40, 50), or unset");
}

const DeviceInfo& device() {
  static const DeviceInfo info = [] {
    const char* limits = std::getenv("LADDER_DEVICE_LIMITS");
    return capped(query(), limits ? limits : "");
  }();
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
