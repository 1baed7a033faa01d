// Is there a GPU, and what is it? Asked once, answered everywhere the same way.
#pragma once

#include <cstddef>
#include <string>

namespace ladder {

struct DeviceInfo {
  bool available = false;
  std::string reason;  // why not, when !available
  std::string name;
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  std::size_t l2_bytes = 0;
  std::size_t global_bytes = 0;
  std::size_t smem_per_block_optin = 0;  // the most shared memory one block may ask for
  std::size_t smem_per_sm = 0;
  int regs_per_sm = 0;
  int driver_version = 0, runtime_version = 0;
};

// Device 0, queried on first use, with the limits of LADDER_DEVICE_LIMITS applied (capped()).
const DeviceInfo& device();

// The limits another GPU would give a launcher, for emulating it on this one:
// LADDER_DEVICE_LIMITS = sm75 (a T4: 64 KiB of shared memory per block), sm80 (an A100:
// 163 KiB), sm86, sm89, sm120 (RTX 30, 40, 50: 99 KiB), or empty for none. The cap lowers the
// shared memory a block may ask for (and per SM) and reports that compute capability, so a
// launcher picks what that GPU would get and the sm_90a paths say they cannot run; it never
// raises a limit. It does not make this GPU that one: the machine code, the occupancy and the
// L2 stay this GPU's. Throws std::invalid_argument naming the caps for an unknown one.
DeviceInfo capped(DeviceInfo d, const std::string& limits);

// The H200's shared memory per block (227 KiB, opt-in): what the CPU-side tile models
// use on a machine without a GPU, so that they print the tiles the ladder is measured with.
inline constexpr std::size_t kH200SmemPerBlock = 232448;
inline std::size_t smem_per_block_for_models() {
  return device().available ? device().smem_per_block_optin : kH200SmemPerBlock;
}
// The H200's L2 (60 MiB), for the CPU-side schedule models in the same way.
inline constexpr std::size_t kH200L2Bytes = std::size_t(60) << 20;

// One line: "NVIDIA H200 (sm_90, 132 SMs, 60 MiB L2, ...)" or "no CUDA device" (the
// reason, e.g. cudaErrorNoDevice or cudaErrorInsufficientDriver, is in device().reason).
std::string describe_device();

}  // namespace ladder
