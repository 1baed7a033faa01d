// Argument checks the launchers share: everything that can be wrong is reported as
// std::invalid_argument before anything is launched (no GPU needed to see the message).
// Internal to the chapter: its launchers and its executable (which refuses bad input before
// the GPU check, with the launchers' own words).
#pragma once

#include <climits>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "device.h"
#include "fa2_tc.h"
#include "fit.h"
#include "launch.h"

namespace fa2tc {

inline void check_shape(const ladder::AttentionShape& s, const std::string& who) {
  ladder::validate(s, kSupportedD, ladder::KvHeads::Any);
  const ladder::DeviceInfo& dev = ladder::device();
  if (dev.available && dev.cc_major < 8)
    throw std::invalid_argument(who + ": needs sm_80 or later (bf16 mma.sync, cp.async); this GPU is sm_" +
                                std::to_string(dev.cc_major * 10 + dev.cc_minor) + " (" + dev.name + ")");
  if (std::int64_t(s.N) * s.d > INT_MAX || std::int64_t(s.nkv()) * s.d > INT_MAX)
    throw std::invalid_argument(who + ": N*d and N_kv*d must fit in an int (one head's rows)");
}

inline void check_config(int config, int n_configs, int d, const std::string& who) {
  if (config < 0 || config >= n_configs)
    throw std::invalid_argument(who + ": tile config " + std::to_string(config) + " does not exist (0.." +
                                std::to_string(n_configs - 1) + " at d=" + std::to_string(d) + ")");
}

inline std::vector<ladder::Candidate> candidates(const std::vector<TileConfig>& configs) {
  std::vector<ladder::Candidate> out;
  for (const TileConfig& c : configs) out.push_back({c.name, c.smem_bytes});
  return out;
}

// The configuration a launch runs: `config`, checked, or for kFits the first of `configs`
// that fits this GPU (refused, naming what each needs, when none does).
inline int resolve_config(int config, const std::vector<TileConfig>& configs, int n_configs, int d,
                          const std::string& who) {
  if (config != kFits) {
    check_config(config, n_configs, d, who);
    return config;
  }
  return ladder::choose(who + " (d = " + std::to_string(d) + ")", candidates(configs));
}

inline Strides packed_strides(const ladder::AttentionShape& s, Strides st) {
  if (st.q_head == 0) st.q_head = std::int64_t(s.N) * s.d;
  if (st.o_head == 0) st.o_head = std::int64_t(s.N) * s.d;
  if (st.kv_head == 0) st.kv_head = std::int64_t(s.nkv()) * s.d;
  if (st.l_head == 0) st.l_head = s.N;
  return st;
}

inline void check_strides(const ladder::AttentionShape& s, const Strides& st, const std::string& who) {
  struct Named {
    const char* name;
    std::int64_t value, one_head;
    int multiple;
  };
  const Named all[] = {{"q_head", st.q_head, std::int64_t(s.N) * s.d, 8},
                       {"o_head", st.o_head, std::int64_t(s.N) * s.d, 8},
                       {"kv_head", st.kv_head, std::int64_t(s.nkv()) * s.d, 8},
                       {"l_head", st.l_head, std::int64_t(s.N), 1}};
  for (const Named& n : all) {
    if (n.value == 0) continue;  // packed
    if (n.value < n.one_head)
      throw std::invalid_argument(who + ": stride " + n.name + " = " + std::to_string(n.value) +
                                  " is less than one head (" + std::to_string(n.one_head) +
                                  " elements): heads would overlap");
    if (n.value % n.multiple != 0)
      throw std::invalid_argument(who + ": stride " + n.name + " = " + std::to_string(n.value) +
                                  " must be a multiple of 8 elements (16 bytes: cp.async)");
  }
}

}  // namespace fa2tc
