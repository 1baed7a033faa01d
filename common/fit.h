// Which compiled configuration a launcher runs on this GPU: the first, in the launcher's order
// of preference, whose shared memory fits the device (ladder::device(), so LADDER_DEVICE_LIMITS
// applies). The order is the chapter's: the configuration its README measures first, then
// the fastest of the rest as measured on the H200. Pure arithmetic, so the CPU tests can ask
// what a 4090, an A100 or a T4 would run (limits_of()).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "device.h"

namespace ladder {

// One compiled configuration, as the fit sees it.
struct Candidate {
  std::string name;        // as the chapter names it, e.g. "w8_c128_r64_kvsmem"
  std::size_t smem_bytes;  // dynamic shared memory one block asks for
};

struct Fit {
  int index = -1;          // into the launcher's list; -1 when none fits
  bool fell_back = false;  // true when it is not the first of the order
};

// The first configuration of `order` (indices into `configs`; empty: 0, 1, 2, ...) that needs
// at most smem_per_block bytes.
Fit first_that_fits(const std::vector<Candidate>& configs, std::size_t smem_per_block,
                    const std::vector<int>& order = {});

// The line a launcher prints (once, say_once) when it fell back:
//   "fa2tc::backward (d = 128): w8_c128_r64_kvsmem needs 145.0 KiB of shared memory per block,
//    this GPU allows 99.0 KiB: running w4_c64_r64_kvsmem_q1 (85.0 KiB) instead"
std::string fallback_line(const std::string& who, const std::vector<Candidate>& configs, int preferred, int chosen,
                          std::size_t smem_per_block);
// The refusal when none fits, naming what each needs.
std::string none_fits(const std::string& who, const std::vector<Candidate>& configs, std::size_t smem_per_block);

// The choice for this device (the H200's limits on a machine without a GPU), with its line
// said once per process on stderr when it fell back; throws std::invalid_argument (none_fits)
// when nothing fits.
int choose(const std::string& who, const std::vector<Candidate>& configs, const std::vector<int>& order = {});

// Prints `line` on stderr the first time it is asked to in this process.
void say_once(const std::string& line);

// The limits the CPU tests and models use for a GPU by its cap name ("" = the H200 the ladder
// is measured on; "sm75", "sm80", "sm86", "sm89", "sm120" as LADDER_DEVICE_LIMITS).
DeviceInfo limits_of(const std::string& cap);
// The cap names, in the order above ("" first).
const std::vector<std::string>& cap_names();

}  // namespace ladder
