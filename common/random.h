// Seeded random inputs. Each run draws a fresh seed (print it); LADDER_SEED=<n>
// in the environment replays one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ladder {

std::uint64_t fresh_seed();

// Uniform in [lo, hi), fp32.
std::vector<float> random_uniform(std::size_t n, std::uint64_t seed, float lo = -1.0f, float hi = 1.0f);

}  // namespace ladder
