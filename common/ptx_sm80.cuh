// The ladder's cp.async wrappers (sm_80 and later): global -> shared copies that bypass the
// registers, taught in chapter 07 (common/attention_tiles.cuh) and used by the tensor-core
// chapters through 09's mma.cuh. One thin wrapper per PTX instruction; every asm of cp.async in
// the ladder lives here, so that common/ needs no chapter's header. Device code only.
#pragma once

#include <cstdint>

namespace tc {
// 16 bytes global -> shared without passing through registers; .cg skips L1. With
// valid == false the source is not read and the 16 bytes are zero-filled (src-size 0):
// that is how tiles past the end of a matrix are padded. src must stay a valid address.
__device__ __forceinline__ void cp_async_16(std::uint32_t dst, const void* src, bool valid = true) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(valid ? 16 : 0) : "memory");
}
// 4 bytes global -> shared (.ca: through L1), zero-filled when !valid (chapter 10: one fp32
// per row, L_i and D_i of the backward).
__device__ __forceinline__ void cp_async_4(std::uint32_t dst, const void* src, bool valid = true) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src), "r"(valid ? 4 : 0) : "memory");
}
// Closes the group of copies this thread issued since the last commit.
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
// Waits until at most `kPending` of this thread's committed groups are still in flight.
// Only this thread's copies: a __syncthreads() after it makes everyone's visible.
template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
}
// Waits for every copy this thread issued, committed or not (chapter 07's tile engine).
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_all;\n" ::: "memory"); }

}  // namespace tc
