// Chapter 01 on the CPU: the kernels' index arithmetic, run for every thread of a
// small grid, so the first-person view ("I am thread t; which elements are mine?")
// can be printed and tested without a GPU. The functions repeat the loops of
// vector_add.cu line by line; the tests check that every element is written by
// exactly one thread, for sizes around every boundary (1, 4, 32, 256, odd sizes).
#pragma once

#include <cstddef>
#include <ostream>
#include <string>
#include <vector>

#include "vector_add.h"

namespace vadd {

// What one thread of a kernel touches: runs of `width` consecutive elements
// (1 for a scalar access, 4 for a float4), in the order the thread visits them.
struct Run {
  std::size_t first;
  int width;
};
// Thread `t` of `threads` in the grid (blockIdx.x * blockDim.x + threadIdx.x, and
// gridDim.x * blockDim.x) under kernel k, for n elements. For OnePerElement the
// grid must have at least n threads (the launcher gives it blocks_for(n)).
std::vector<Run> runs_of_thread(Kernel k, std::size_t n, std::size_t t, std::size_t threads);

// How many times each element is written when every thread of the grid runs.
std::vector<int> writes_per_element(Kernel k, std::size_t n, std::size_t threads);

// The memory instructions one warp issues to read one input array of n floats:
// warp-wide loads, and the bytes each moves when all 32 lanes are active.
struct WarpLoads {
  std::size_t vector_loads;  // float4 loads: 32 lanes x 16 B = 512 B each (Float4 only)
  std::size_t scalar_loads;  // 32 lanes x 4 B = 128 B each (the tail, for Float4)
};
WarpLoads warp_loads(Kernel k, std::size_t n);

// The table the executable prints: each thread's elements under each kernel for a
// grid of `threads` threads in blocks of `block` (OnePerElement: its own grid,
// blocks_for(n, block) blocks), then the warp loads per array at `n_big`.
void print_thread_model(std::ostream& out, std::size_t n, std::size_t threads, unsigned block, std::size_t n_big);

// The same as CSV for scripts/figures/thread_map.py: kernel,thread,first,width.
void print_thread_csv(std::ostream& out, std::size_t n, std::size_t threads, unsigned block);

// "Why a first run lies", on the CPU: c = a + b over n floats into a freshly
// allocated c, timed once (page faults: the OS maps each page of c on first touch)
// and then `repeats` more times. Host wall-clock time, std::chrono.
struct HostTiming {
  double first_ms, median_ms, min_ms;
};
HostTiming host_first_vs_median(std::size_t n, int repeats);

}  // namespace vadd
