#include "fit.h"

#include <cstdio>
#include <iostream>
#include <mutex>
#include <set>
#include <stdexcept>

namespace ladder {

namespace {
std::string kib(std::size_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f KiB", bytes / 1024.0);
  return buf;
}
}  // namespace

Fit first_that_fits(const std::vector<Candidate>& configs, std::size_t smem_per_block, const std::vector<int>& order) {
  std::vector<int> ids = order;
  if (ids.empty())
    for (int i = 0; i < static_cast<int>(configs.size()); ++i) ids.push_back(i);
  for (std::size_t k = 0; k < ids.size(); ++k) {
    const int i = ids[k];
    if (i < 0 || i >= static_cast<int>(configs.size()))
      throw std::logic_error("first_that_fits: the order names configuration " + std::to_string(i) + " of " +
                             std::to_string(configs.size()));
    if (configs[i].smem_bytes <= smem_per_block) return {i, k != 0};
  }
  return {};
}

std::string fallback_line(const std::string& who, const std::vector<Candidate>& configs, int preferred, int chosen,
                          std::size_t smem_per_block) {
  return who + ": " + configs[preferred].name + " needs " + kib(configs[preferred].smem_bytes) +
         " of shared memory per block, this GPU allows " + kib(smem_per_block) + ": running " + configs[chosen].name +
         " (" + kib(configs[chosen].smem_bytes) + ") instead";
}

std::string none_fits(const std::string& who, const std::vector<Candidate>& configs, std::size_t smem_per_block) {
  std::string s =
      who + ": no configuration fits the " + kib(smem_per_block) + " of shared memory per block this GPU allows (";
  for (std::size_t i = 0; i < configs.size(); ++i)
    s += (i ? ", " : "") + configs[i].name + " needs " + kib(configs[i].smem_bytes);
  return s + ")";
}

int choose(const std::string& who, const std::vector<Candidate>& configs, const std::vector<int>& order) {
  // Without a GPU nothing is launched; the H200's limit keeps the choice (and the refusals a
  // caller meets first, a null pointer, ...) what they are on the GPU the ladder is measured on.
  const std::size_t limit = smem_per_block_for_models();
  const Fit fit = first_that_fits(configs, limit, order);
  if (fit.index < 0) throw std::invalid_argument(none_fits(who, configs, limit));
  if (fit.fell_back) say_once(fallback_line(who, configs, order.empty() ? 0 : order.front(), fit.index, limit));
  return fit.index;
}

void say_once(const std::string& line) {
  static std::set<std::string> said;
  static std::mutex mutex;
  const std::lock_guard<std::mutex> lock(mutex);
  if (said.insert(line).second) std::cerr << line << "\n";
}

DeviceInfo limits_of(const std::string& cap) {
  DeviceInfo h200;
  h200.available = true, h200.name = "NVIDIA H200", h200.cc_major = 9, h200.cc_minor = 0;
  h200.sm_count = 132, h200.l2_bytes = kH200L2Bytes;
  h200.smem_per_block_optin = kH200SmemPerBlock, h200.smem_per_sm = 233472, h200.regs_per_sm = 65536;
  return capped(h200, cap);
}

const std::vector<std::string>& cap_names() {
  static const std::vector<std::string> names = {"", "sm75", "sm80", "sm86", "sm89", "sm120"};
  return names;
}

}  // namespace ladder
