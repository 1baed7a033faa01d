#include "random.h"

#include <algorithm>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>

namespace ladder {

std::uint64_t fresh_seed() {
  if (const char* s = std::getenv("LADDER_SEED")) return std::stoull(s);
  std::random_device rd;
  return (static_cast<std::uint64_t>(rd()) << 32) ^ rd();
}

std::vector<float> random_uniform(std::size_t n, std::uint64_t seed, float lo, float hi) {
  // Fixed chunks, each with its own stream: the same seed gives the same data on
  // any number of threads, and 2^28 floats take a fraction of a second.
  constexpr std::size_t kChunk = std::size_t{1} << 20;
  std::vector<float> v(n);
  const std::size_t chunks = (n + kChunk - 1) / kChunk;
  auto fill = [&](std::size_t first, std::size_t step) {
    for (std::size_t c = first; c < chunks; c += step) {
      std::mt19937_64 gen(seed + 0x9E3779B97F4A7C15ull * c);
      std::uniform_real_distribution<float> dist(lo, hi);
      for (std::size_t i = c * kChunk, end = std::min(n, i + kChunk); i < end; ++i) v[i] = dist(gen);
    }
  };
  const std::size_t workers = std::clamp<std::size_t>(std::thread::hardware_concurrency(), 1, 16);
  if (chunks <= 1 || workers == 1) {
    fill(0, 1);
    return v;
  }
  std::vector<std::thread> pool;
  for (std::size_t w = 0; w < workers; ++w) pool.emplace_back(fill, w, workers);
  for (auto& t : pool) t.join();
  return v;
}

}  // namespace ladder
