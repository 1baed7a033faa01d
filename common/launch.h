// What every launcher checks and sets up before its first launch.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <string>

namespace ladder {

// Above 48 KB of dynamic shared memory a kernel must opt in (cudaFuncSetAttribute),
// once per kernel. Throws std::invalid_argument, naming both numbers, when `bytes` is
// more than this GPU gives a block; `who` names the kernel in that message. With
// max_carveout, it also asks for the largest shared-memory carveout (less L1), so that
// two large blocks can share an SM (chapter 07). Cheap after the first call (a lookup).
void allow_dynamic_smem(const void* kernel, std::size_t bytes, const std::string& who, bool max_carveout = false);
template <class Kernel>
void allow_dynamic_smem(Kernel* kernel, std::size_t bytes, const std::string& who, bool max_carveout = false) {
  allow_dynamic_smem(reinterpret_cast<const void*>(kernel), bytes, who, max_carveout);
}

// Throws std::invalid_argument, before any launch, when a grid is larger than CUDA
// allows (x < 2^31, y and z <= 65535), naming the dimension.
void check_grid(const std::string& who, unsigned long long x, unsigned long long y = 1, unsigned long long z = 1);

// Throws std::invalid_argument, before any launch, when a pointer is null, not aligned to
// `alignment` bytes (what the kernel's vector accesses need), or, on a machine with a GPU,
// points to host memory (cudaPointerGetAttributes).
// Null and alignment are checked for every pointer of a call before any is asked about host
// memory, so a call's messages do not depend on which pointer a caller listed first.
// `alignment` of a pointer overrides the call's (0: the call's).
struct NamedPointer {
  const char* name;
  const void* p;
  std::size_t alignment = 0;
};
void check_pointers(const std::string& who, std::initializer_list<NamedPointer> pointers, std::size_t alignment);

}  // namespace ladder
