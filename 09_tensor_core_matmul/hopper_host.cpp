// The host side every Hopper chapter shares: TMA tensor maps and the sm_90a check.
#include "hopper_host.h"

#include <cudaTypedefs.h>  // PFN_cuTensorMapEncodeTiled_v12000

#include <mutex>
#include <string>

#include "cuda_check.h"
#include "device.h"
#include "tc_matmul.h"  // tcmm::kSm90aRequirement

namespace tc {

namespace {

// cuTensorMapEncodeTiled is a driver function. Taking it from the runtime at run time
// (instead of linking libcuda) keeps every binary loadable on machines without a driver.
PFN_cuTensorMapEncodeTiled_v12000 encode_tiled() {
  static PFN_cuTensorMapEncodeTiled_v12000 fn = [] {
    void* f = nullptr;
    cudaDriverEntryPointQueryResult found{};
    CUDA_CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000, cudaEnableDefault, &found));
    if (found != cudaDriverEntryPointSuccess || f == nullptr)
      throw ladder::CudaError("cuTensorMapEncodeTiled not found in the CUDA driver (needs driver 12.0 or newer)");
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(f);
  }();
  return fn;
}

CUtensorMap encode(const TensorMapKey& k) {
  const std::uint64_t elem = k.fp8 ? 1 : 2;
  cuuint64_t dims[3], strides[2];  // strides in bytes, of dimensions 1 and 2 (multiples of 16)
  cuuint32_t box[3], element_strides[3] = {1, 1, 1};
  for (int i = 0; i < k.rank; ++i) dims[i] = k.dims[i], box[i] = k.box[i];
  strides[0] = k.dims[0] * elem;
  strides[1] = k.dims[0] * k.dims[1] * elem;
  CUtensorMap map;
  const CUresult r =
      encode_tiled()(&map, k.fp8 ? CU_TENSOR_MAP_DATA_TYPE_UINT8 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, k.rank,
                     const_cast<void*>(k.data), dims, strides, box, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                     CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) {
    std::string shape;
    for (int i = k.rank - 1; i >= 0; --i) shape += std::to_string(k.dims[i]) + (i ? " x " : "");
    throw ladder::CudaError("cuTensorMapEncodeTiled failed (error " + std::to_string(int(r)) + ") for a " + shape +
                            (k.fp8 ? " byte" : " bf16") + " tensor");
  }
  return map;
}

}  // namespace

bool TensorMapKey::operator==(const TensorMapKey& o) const {
  if (data != o.data || fp8 != o.fp8 || rank != o.rank) return false;
  for (int i = 0; i < 3; ++i)
    if (dims[i] != o.dims[i] || box[i] != o.box[i]) return false;
  return true;
}

CUtensorMap tensor_map(const TensorMapKey& key) {
  struct Entry {
    TensorMapKey key;
    CUtensorMap map;
  };
  static std::mutex mutex;  // launchers may run in one host thread per GPU
  static Entry cache[16];
  static int used = 0, next = 0;
  const std::lock_guard<std::mutex> lock(mutex);
  for (int i = 0; i < used; ++i)
    if (cache[i].key == key) return cache[i].map;
  Entry& e = cache[next];
  e = {key, encode(key)};
  next = (next + 1) % 16;
  used = used < 16 ? used + 1 : 16;
  return e.map;
}

std::string sm90a_unavailable_reason(const std::string& who_needs, const void* kernel) {
  const ladder::DeviceInfo& d = ladder::device();
  if (!d.available) return "no CUDA device (" + d.reason + ")";
  const std::string requirement = who_needs + " " + tcmm::kSm90aRequirement;
  if (d.cc_major != 9 || d.cc_minor != 0)
    return requirement + ": wgmma, setmaxnreg, TMA; device 0 is sm_" + std::to_string(d.cc_major * 10 + d.cc_minor) +
           " (" + d.name + ")";
  if (!compiled_for_sm90a(kernel)) return requirement + " code, and this build has none";
  return "";
}

bool compiled_for_sm90a(const void* kernel) {
  cudaFuncAttributes attr{};
  if (cudaFuncGetAttributes(&attr, kernel) != cudaSuccess) {
    cudaGetLastError();  // no GPU, or no code for this device: not an error here
    return false;
  }
  return attr.binaryVersion == 90;
}

}  // namespace tc
