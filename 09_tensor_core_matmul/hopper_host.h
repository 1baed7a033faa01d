// The Hopper host kit (no CUDA device syntax): what every TMA/wgmma chapter (09, 12, 14, 15)
// needs on the host: TMA tensor maps, and whether this process can run an sm_90a kernel.
// Defined in hopper_host.cpp.
#pragma once

#include <cuda.h>  // CUtensorMap (a 128-byte struct; nothing from libcuda is linked)
#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

namespace tc {

// A row-major tensor as TMA sees it: `rank` (2 or 3) dimensions, innermost (contiguous)
// first: columns, rows, heads; read in boxes of box[] elements, 128B-swizzled (box[0] times
// the element size must be 128 bytes: one swizzle row), zeros for whatever lies outside the
// tensor. Elements are bf16, or bytes (FP8) when `fp8`.
struct TensorMapKey {
  const void* data = nullptr;
  bool fp8 = false;
  int rank = 2;
  std::uint64_t dims[3] = {1, 1, 1};
  std::uint32_t box[3] = {1, 1, 1};
  bool operator==(const TensorMapKey& o) const;
};
// The map (cuTensorMapEncodeTiled, taken from the driver at run time: no binary links
// libcuda). Encoding costs microseconds and timed loops ask for the same maps again and
// again: the last 16 are kept. Throws ladder::CudaError if the driver refuses the map.
CUtensorMap tensor_map(const TensorMapKey& key);

// True when `kernel` has sm_90a machine code in this build (its library was compiled for
// 90a-real); whether the device is an sm_90 is the caller's question.
bool compiled_for_sm90a(const void* kernel);

// Empty when this process can run `kernel`, an sm_90a kernel: a compute capability 9.0 device and
// a build with its code (compiled_for_sm90a). Otherwise why not, in a sentence that starts with
// `who_needs` ("the FA3 kernels need"): no device, another GPU (named), or no sm_90a code.
std::string sm90a_unavailable_reason(const std::string& who_needs, const void* kernel);

}  // namespace tc
