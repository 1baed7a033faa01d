// The edge-shape matrix of the bf16 attention chapters' forward tests (10 and 12 run the same
// one): (N, d, causal, GQA group), N in {1, 17, 128, 1000, 4093} (1 query; no multiple of any
// tile), d in {64, 128}, dense and causal, groups 1, 4, 8. Two batches and two KV heads where
// the fp64 reference is cheap (N <= 128), one batch at N = 1000, one head at N = 4093; under
// compute-sanitizer (small mode) one KV head, N <= 128 and groups 1, 4.
//   INSTANTIATE_TEST_SUITE_P(Shapes, MySuite, ladder::edge::kCases, ladder::edge::case_name);
//   if (const std::string why = ladder::edge::skip_reason(GetParam()); !why.empty()) GTEST_SKIP() << why;
//   const ladder::AttentionShape s = ladder::edge::case_shape(GetParam());
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <tuple>

#include "attention_shape.h"
#include "gtest_helpers.h"

namespace ladder::edge {

using Case = std::tuple<int, int, bool, int>;  // N, d, causal, GQA group

inline AttentionShape case_shape(const Case& c) {
  const auto [N, d, causal, group] = c;
  if (small_mode()) return attention_shape(1, group, 1, N, N, d, causal);
  if (N > 1000) return attention_shape(1, group, 1, N, N, d, causal);
  return attention_shape(N <= 128 ? 2 : 1, 2 * group, 2, N, N, d, causal);
}

// Skipped: in small mode N > 128 and group 8; always N = 4093 with groups 4 and 8 (their fp64
// references dominate the run on the CPU; groups are covered at N <= 1000).
inline std::string skip_reason(const Case& c) {
  if (small_mode() && (std::get<0>(c) > 128 || std::get<3>(c) > 4))
    return "small mode (compute-sanitizer): N <= 128, groups 1 and 4";
  if (std::get<0>(c) > 1000 && std::get<3>(c) > 1) return "N = 4093 runs group 1 (CPU reference time)";
  return "";
}

inline std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  const auto [N, d, causal, group] = info.param;
  return "N" + std::to_string(N) + "_d" + std::to_string(d) + (causal ? "_causal" : "") + "_g" + std::to_string(group);
}

inline const auto kCases = ::testing::Combine(::testing::Values(1, 17, 128, 1000, 4093), ::testing::Values(64, 128),
                                              ::testing::Bool(), ::testing::Values(1, 4, 8));

}  // namespace ladder::edge
