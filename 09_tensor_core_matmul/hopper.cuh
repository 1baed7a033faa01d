// The ladder's PTX wrappers for Hopper (sm_90, and sm_90a where noted): mbarriers, the tensor
// memory accelerator (TMA, cp.async.bulk.tensor), warpgroup MMAs (wgmma), register
// reallocation (setmaxnreg), thread-block clusters, named barriers and programmatic dependent
// launch. One thin wrapper per PTX instruction, named after it; each says which chapter
// introduces it (chapter 09 unless noted). Every asm of these instructions in the ladder lives
// here; the sm_80 ones are in mma.cuh. Device code only (.cu files).
//
// wgmma and setmaxnreg exist only on sm_90a: a .cu including this file is compiled with
// -gencode=arch=compute_90a,code=sm_90a (CMake: CUDA_ARCHITECTURES 90a-real), and the
// code that uses them sits inside `#if TC_HOPPER_ENABLED`, so any other pass compiles
// to nothing instead of failing. TMA, mbarrier and clusters are plain sm_90.
#pragma once

#include <cuda.h>  // CUtensorMap (a 128-byte struct; nothing from libcuda is linked)
#include <cuda_bf16.h>

#include <cstdint>

#include "mma.cuh"
#include "tc_layout.h"

// True in the device pass for compute_90a (the "a" features: wgmma, setmaxnreg).
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define TC_HOPPER_ENABLED 1
#else
#define TC_HOPPER_ENABLED 0
#endif

namespace tc {

// ---- mbarrier -------------------------------------------------------------------------
// A 64-bit object in shared memory that counts arrivals (threads) and, on Hopper,
// transaction bytes (what the copy engine has written). A phase completes when every
// expected thread has arrived and every expected byte has landed; waiters name the
// phase by its parity (0, 1, 0, ...), so a ring of stages needs one bit per stage.

// Sets the expected arrival count of every phase. One thread, before anyone uses it.
__device__ __forceinline__ void mbarrier_init(std::uint32_t bar, std::uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
// Makes the initialisations above visible to the copy engine and to the other CTAs
// of the cluster (follow it with a __syncthreads() or a cluster barrier).
__device__ __forceinline__ void fence_mbarrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
// One arrival (release: this thread's earlier shared-memory writes are visible to the
// threads that see the phase complete).
__device__ __forceinline__ void mbarrier_arrive(std::uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
// One arrival that also announces `bytes` more transaction bytes for this phase: the
// producer calls it for the bytes its TMA copies are about to deliver.
__device__ __forceinline__ void mbarrier_arrive_expect_tx(std::uint32_t bar, std::uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
// One arrival on a barrier in any CTA of the cluster (`cluster_bar` from mapa_shared_cluster):
// how a consumer tells the peer CTA that a stage the peer multicasts into is free. The
// default .release.cta semantics is enough: what must be ordered before it are the
// consumer's tensor-core reads of the stage, complete once wgmma.wait_group returned.
// (.release.cluster compiles to a GPU-wide MEMBAR before every arrival, which made the
// cluster kernel slower than the one without clusters.)
__device__ __forceinline__ void mbarrier_arrive_cluster(std::uint32_t cluster_bar) {
  asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];\n" ::"r"(cluster_bar) : "memory");
}
// True once the phase with parity `parity` has completed (acquire: what the arriving
// threads and the copy engine wrote is visible after it). A fresh barrier is in phase
// 0, and the phase "before" it, parity 1, counts as complete: a producer's first wait
// for a free stage (parity 1) passes at once.
__device__ __forceinline__ bool mbarrier_try_wait_parity(std::uint32_t bar, std::uint32_t parity) {
  std::uint32_t done;
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
      "selp.u32 %0, 1, 0, p;\n"
      "}\n"
      : "=r"(done)
      : "r"(bar), "r"(parity)
      : "memory");
  return done != 0;
}
// Spins until the phase completes (try_wait itself suspends the thread for a while,
// so this loop does not hammer the barrier).
__device__ __forceinline__ void mbarrier_wait(std::uint32_t bar, std::uint32_t parity) {
  while (!mbarrier_try_wait_parity(bar, parity)) {
  }
}

// ---- proxies ----------------------------------------------------------------------------
// The copy engine and the tensor cores read shared memory through the "async proxy";
// ordinary stores go through the generic one. Shared memory written by ordinary stores
// (the guarded loaders) and read next by wgmma needs this fence in every writing
// thread, before the barrier that publishes the data.
__device__ __forceinline__ void fence_proxy_async_shared_cta() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// The same between the async proxy's writes to global memory (a bulk reduce-add) and the
// generic proxy's view of them (chapter 14's deterministic dQ: one CTA's reduce must land before
// the next CTA's is issued).
__device__ __forceinline__ void fence_proxy_async_global() { asm volatile("fence.proxy.async.global;\n" ::: "memory"); }

// ---- flags in global memory between CTAs (chapter 14) -------------------------------------------
// A load that acquires at GPU scope (what the writer of the flag released is visible after it),
// and an addition that releases (this thread's earlier writes are visible to whoever acquires
// the new value).
__device__ __forceinline__ int ld_acquire_gpu(const int* p) {
  int v;
  asm volatile("ld.acquire.gpu.global.b32 %0, [%1];\n" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void red_release_gpu_add(int* p, int v) {
  asm volatile("red.release.gpu.global.add.s32 [%0], %1;\n" ::"l"(p), "r"(v) : "memory");
}

// ---- TMA: cp.async.bulk.tensor ---------------------------------------------------------
// One thread asks the copy engine for a whole box of a 2D tensor (described by a
// CUtensorMap made on the host with cuTensorMapEncodeTiled); the engine writes it to
// shared memory, applying the map's swizzle, fills what lies outside the tensor with
// zeros, and reports the bytes to the mbarrier (complete_tx). c0 is the innermost
// (contiguous) coordinate, c1 the row. `map` must point to a __grid_constant__ kernel
// parameter (or to global/constant memory).
__device__ __forceinline__ void cp_async_bulk_tensor_2d_global_to_shared(std::uint32_t dst, const CUtensorMap* map,
                                                                         int c0, int c1, std::uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n" ::"r"(
          dst),
      "l"(reinterpret_cast<std::uint64_t>(map)), "r"(c0), "r"(c1), "r"(bar)
      : "memory");
}
// The same box, delivered at the same shared-memory offset (and completing the mbarrier
// at the same offset) in every CTA of the cluster whose bit is set in `cta_mask`: one
// read of L2 feeds several SMs.
__device__ __forceinline__ void cp_async_bulk_tensor_2d_global_to_shared_multicast(std::uint32_t dst,
                                                                                   const CUtensorMap* map, int c0,
                                                                                   int c1, std::uint32_t bar,
                                                                                   std::uint16_t cta_mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%2, %3}], [%4], %5;\n" ::"r"(dst),
      "l"(reinterpret_cast<std::uint64_t>(map)), "r"(c0), "r"(c1), "r"(bar), "h"(cta_mask)
      : "memory");
}
// The same for a 3D tensor map over (column, row, head) (chapter 12): a box never crosses from
// one head into the next, and rows past a head's end (N or N_kv) arrive as zeros.
__device__ __forceinline__ void cp_async_bulk_tensor_3d_global_to_shared(std::uint32_t dst, const CUtensorMap* map,
                                                                         int c0, int c1, int c2, std::uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], "
      "[%5];\n" ::"r"(dst),
      "l"(reinterpret_cast<std::uint64_t>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(bar)
      : "memory");
}
// The reverse, shared -> global: the box at (c0, c1, c2) written from `src`, in the layout and
// swizzle a load of that box would have left there; rows past the tensor's end are not written
// (chapter 12's persistent epilogue). Tracked by bulk groups, as the reduce-add below.
__device__ __forceinline__ void cp_async_bulk_tensor_3d_shared_to_global(const CUtensorMap* map, int c0, int c1, int c2,
                                                                         std::uint32_t src) {
  asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%1, %2, %3}], [%4];\n" ::"l"(
                   reinterpret_cast<std::uint64_t>(map)),
               "r"(c0), "r"(c1), "r"(c2), "r"(src)
               : "memory");
}
// ---- bulk copy without a tensor map (chapter 14) ---------------------------------------------
// cp.async.bulk global -> shared: `bytes` contiguous bytes (a multiple of 16, both addresses
// 16-byte aligned), reported to the mbarrier like a tensor copy: chapter 14's rows of L and D,
// which then arrive in the same transaction as the tiles they belong to.
__device__ __forceinline__ void cp_async_bulk_global_to_shared(std::uint32_t dst, const void* src, std::uint32_t bytes,
                                                               std::uint32_t bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(dst),
               "l"(reinterpret_cast<std::uint64_t>(src)), "r"(bytes), "r"(bar)
               : "memory");
}
// ---- bulk reduce-add without a tensor map (chapter 14) ------------------------------------------
// cp.reduce.async.bulk ... .add.f32: the copy engine adds `bytes` of fp32 from shared memory
// into global memory (the additions happen at the L2, atomically per element): chapter 14's dQ
// tile, one instruction instead of one atomic per element. Completion is tracked per thread
// by bulk groups: commit after issuing, then wait_group_read before the source is written again
// (the engine has read it) and wait_group before the kernel ends (the writes are done).
__device__ __forceinline__ void cp_reduce_async_bulk_add_f32(float* dst, std::uint32_t src, std::uint32_t bytes) {
  asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [%0], [%1], %2;\n" ::"l"(
                   reinterpret_cast<std::uint64_t>(dst)),
               "r"(src), "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void cp_async_bulk_commit_group() {
  asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
}
template <int kPending>
__device__ __forceinline__ void cp_async_bulk_wait_group_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(kPending) : "memory");
}
template <int kPending>
__device__ __forceinline__ void cp_async_bulk_wait_group() {
  asm volatile("cp.async.bulk.wait_group %0;\n" ::"n"(kPending) : "memory");
}

// Fetches the 128-byte tensor map into the copy engine's cache ahead of the first copy.
__device__ __forceinline__ void prefetch_tensormap(const CUtensorMap* map) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<std::uint64_t>(map)) : "memory");
}

// ---- wgmma ------------------------------------------------------------------------------
// A shared-memory matrix descriptor (PTX ISA, "Matrix Descriptor Format"): bits 0-13
// start address >> 4, 16-29 leading byte offset >> 4, 32-45 stride byte offset >> 4,
// 49-51 base offset, 62-63 swizzle (1 = 128B). This one describes a K-major tile whose
// rows are 64 bf16 = 128 bytes, 128B-swizzled, as TMA writes a {64, rows} box with
// CU_TENSOR_MAP_SWIZZLE_128B: 8-row groups ("core matrices" of 8 x 16 bytes, side by
// side along K) are 1024 bytes apart (SBO); the leading offset is unused for swizzled
// K-major tiles (1 by convention). The tile must start on a 1024-byte boundary (the
// swizzle repeats every 8 rows); advancing the start address by 32 bytes selects the
// next k16 slice, since the hardware swizzles the final addresses. tc_layout.h has the
// same encoding for the host tests.
__device__ __forceinline__ std::uint64_t wgmma_desc_sw128(std::uint32_t smem_addr) {
  return (std::uint64_t(smem_addr & 0x3FFFF) >> 4) | (std::uint64_t(16 >> 4) << 16) | (std::uint64_t(1024 >> 4) << 32) |
         (std::uint64_t(1) << 62);
}

// MN-major, 128B swizzle (chapter 12: V_j as the B operand of O += P V, k = key, n = d): V_j
// sits in shared memory as TMA wrote it, [key][64 columns of d] per box, rows of 128 bytes,
// swizzled. For B that is "MN-major": n (d) is contiguous. In PTX's canonical MN-major 128B
// layout 64 n-elements (one 128-byte row) x 8 k-rows form a 1024-byte swizzle atom;
//   SBO = bytes between atoms along k (8 keys further: 1024, rows being dense),
//   LBO = bytes between atoms along n (the next 64 columns of d: the next TMA box).
// One k16 step is 16 keys = 2048 bytes further on (a multiple of 1024: no base offset).
__device__ __forceinline__ std::uint64_t wgmma_desc_mn_sw128(std::uint32_t smem_addr, std::uint32_t lbo_bytes) {
  return layout::wgmma_desc(smem_addr, lbo_bytes, 1024, 1);
}

#if TC_HOPPER_ENABLED
// Orders this thread's earlier register accesses (to accumulators, A fragments) before
// the wgmma.mma_async that follow. Before the first wgmma of a batch, always.
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
// Closes the batch of wgmma.mma_async issued since the last commit into one group.
__device__ __forceinline__ void wgmma_commit_group() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
// Waits until at most kPending groups of this thread are in flight; only then may the
// accumulators be read, or the shared memory of the finished groups be overwritten.
template <int kPending>
__device__ __forceinline__ void wgmma_wait_group() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(kPending) : "memory");
}

#define TC_R8(i)                                                                                              \
  "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), \
      "+f"(d[i + 7])
// D[64 x N] (+)= A[64 x 16] B[16 x N], A and B in shared memory (descriptors), D in the
// warpgroup's registers: thread t of the warpgroup holds rows 16 (t / 32) + (t % 32) / 4
// (+ 8) and columns 8 j + 2 (t % 4) (+ 1) (tc_layout.h: wgmma_d). scale_d == 0 ignores
// the old D (the first k step of a tile needs no zeroed accumulators). Both operands
// K-major (imm-trans 0), no negation (imm-scale 1).
__device__ __forceinline__ void wgmma_m64n128k16_bf16(float (&d)[64], std::uint64_t desc_a, std::uint64_t desc_b,
                                                      int scale_d) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
      "%64, %65, p, 1, 1, 0, 0;\n"
      "}\n"
      : TC_R8(0), TC_R8(8), TC_R8(16), TC_R8(24), TC_R8(32), TC_R8(40), TC_R8(48), TC_R8(56)
      : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}
__device__ __forceinline__ void wgmma_m64n256k16_bf16(float (&d)[128], std::uint64_t desc_a, std::uint64_t desc_b,
                                                      int scale_d) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %130, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
      "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
      "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, "
      "%128, %129, p, 1, 1, 0, 0;\n"
      "}\n"
      : TC_R8(0), TC_R8(8), TC_R8(16), TC_R8(24), TC_R8(32), TC_R8(40), TC_R8(48), TC_R8(56), TC_R8(64), TC_R8(72),
        TC_R8(80), TC_R8(88), TC_R8(96), TC_R8(104), TC_R8(112), TC_R8(120)
      : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}

// m64n64k16, both operands from shared memory, each K-major or, transposed, MN-major (the
// instruction's imm-trans-a/-b; bf16 only) (chapter 14): S^T = K Q^T and dP^T = V dO^T with
// both K-major, dQ = dS K with dS stored as dS^T and K as it lies (both MN-major).
template <int kTransA, int kTransB>
__device__ __forceinline__ void wgmma_m64n64k16_ss_bf16(float (&d)[32], std::uint64_t desc_a, std::uint64_t desc_b,
                                                        int scale_d) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %34, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
      "%32, %33, p, 1, 1, %35, %36;\n"
      "}\n"
      : TC_R8(0), TC_R8(8), TC_R8(16), TC_R8(24)
      : "l"(desc_a), "l"(desc_b), "r"(scale_d), "n"(kTransA), "n"(kTransB));
}

// ---- wgmma, A from registers ("RS"), and FP8 (chapter 12) ----------------------------------
// D[64 x N] (+)= A[64 x K] B[K x N]; A in the registers of the warpgroup, 4 x 32 bits per
// thread. Warp w owns rows 16w .. 16w+15; lane (g = lane / 4, c = lane % 4) holds
//   bf16, k16:  a0 = (g, 2c..2c+1)  a1 = (g+8, 2c..2c+1)  a2 = (g, 8+2c..)    a3 = (g+8, 8+2c..)
//   e4m3, k32:  a0 = (g, 4c..4c+3)  a1 = (g+8, 4c..4c+3)  a2 = (g, 16+4c..)   a3 = (g+8, 16+4c..)
// (lowest k in the lowest bits): the fp32 accumulator of a previous wgmma holds, per thread,
// the same rows and columns 8j + 2c + e for bf16, which is why chapter 12's P needs no
// shuffle; for e4m3 the columns differ (chapter 12 permutes V's keys to match). B from shared
// memory. The _tb forms read B MN-major (the instruction's imm-trans-b = 1; descriptors have no
// transpose bit): V_j as it lies in shared memory. FP8 wgmma takes both shared-memory operands
// K-major only (no transpose operand for e4m3): chapter 12 stores V transposed instead.
#define TC_D32                                                              \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}"
#define TC_D64                                                                       \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "          \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, " \
  "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
  "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}"
__device__ __forceinline__ void wgmma_m64n128k16_rs_bf16_tb(float (&d)[64], const std::uint32_t (&a)[4],
                                                            std::uint64_t desc_b, int scale_d) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %69, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 " TC_D64
      ", {%64, %65, %66, %67}, %68, p, 1, 1, 1;\n"
      "}\n"
      : TC_R8(0), TC_R8(8), TC_R8(16), TC_R8(24), TC_R8(32), TC_R8(40), TC_R8(48), TC_R8(56)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(scale_d));
}
__device__ __forceinline__ void wgmma_m64n64k16_rs_bf16_tb(float (&d)[32], const std::uint32_t (&a)[4],
                                                           std::uint64_t desc_b, int scale_d) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %37, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 " TC_D32
      ", {%32, %33, %34, %35}, %36, p, 1, 1, 1;\n"
      "}\n"
      : TC_R8(0), TC_R8(8), TC_R8(16), TC_R8(24)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(scale_d));
}
// e4m3 x e4m3 -> f32, both operands from shared memory (K-major).
__device__ __forceinline__ void wgmma_m64n128k32_ss_e4m3(float (&d)[64], std::uint64_t desc_a, std::uint64_t desc_b,
                                                         int scale_d) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3 " TC_D64
      ", %64, %65, p, 1, 1;\n"
      "}\n"
      : TC_R8(0), TC_R8(8), TC_R8(16), TC_R8(24), TC_R8(32), TC_R8(40), TC_R8(48), TC_R8(56)
      : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}
// The same with a wider key tile (chapter 12's FP8 forward: B_c = 192 or 224 keys, one S per
// instruction, so the A operand Q_i is read once per k step for all of them).
#define TC_D96                                                                       \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "          \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, " \
  "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
  "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, " \
  "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, " \
  "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95}"
#define TC_D112                                                                      \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "          \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, " \
  "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
  "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, " \
  "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, " \
  "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, " \
  "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111}"
__device__ __forceinline__ void wgmma_m64n192k32_ss_e4m3(float (&d)[96], std::uint64_t desc_a, std::uint64_t desc_b,
                                                         int scale_d) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %98, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n192k32.f32.e4m3.e4m3 " TC_D96
      ", %96, %97, p, 1, 1;\n"
      "}\n"
      : TC_R8(0), TC_R8(8), TC_R8(16), TC_R8(24), TC_R8(32), TC_R8(40), TC_R8(48), TC_R8(56), TC_R8(64), TC_R8(72),
        TC_R8(80), TC_R8(88)
      : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}
__device__ __forceinline__ void wgmma_m64n224k32_ss_e4m3(float (&d)[112], std::uint64_t desc_a, std::uint64_t desc_b,
                                                         int scale_d) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %114, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n224k32.f32.e4m3.e4m3 " TC_D112
      ", %112, %113, p, 1, 1;\n"
      "}\n"
      : TC_R8(0), TC_R8(8), TC_R8(16), TC_R8(24), TC_R8(32), TC_R8(40), TC_R8(48), TC_R8(56), TC_R8(64), TC_R8(72),
        TC_R8(80), TC_R8(88), TC_R8(96), TC_R8(104)
      : "l"(desc_a), "l"(desc_b), "r"(scale_d));
}
// The e4m3 S = Q K^T of a key tile of N = 128, 192 or 224 keys: the instruction of that width.
template <int N>
__device__ __forceinline__ void wgmma_m64nNk32_ss_e4m3(float (&d)[N / 2], std::uint64_t desc_a, std::uint64_t desc_b,
                                                       int scale_d) {
  static_assert(N == 128 || N == 192 || N == 224, "e4m3 key tiles of 128, 192 or 224 keys");
  if constexpr (N == 128)
    wgmma_m64n128k32_ss_e4m3(d, desc_a, desc_b, scale_d);
  else if constexpr (N == 192)
    wgmma_m64n192k32_ss_e4m3(d, desc_a, desc_b, scale_d);
  else
    wgmma_m64n224k32_ss_e4m3(d, desc_a, desc_b, scale_d);
}
__device__ __forceinline__ void wgmma_m64n128k32_rs_e4m3(float (&d)[64], const std::uint32_t (&a)[4],
                                                         std::uint64_t desc_b, int scale_d) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %69, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3 " TC_D64
      ", {%64, %65, %66, %67}, %68, p, 1, 1;\n"
      "}\n"
      : TC_R8(0), TC_R8(8), TC_R8(16), TC_R8(24), TC_R8(32), TC_R8(40), TC_R8(48), TC_R8(56)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(scale_d));
}
#define TC_D128                                                                                  \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                      \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "             \
  "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "             \
  "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "             \
  "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "             \
  "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "             \
  "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, " \
  "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}"
// P~ V at d = 256 (chapter 12's FP8 forward): O's 64 x 256 accumulator, 128 registers a thread.
__device__ __forceinline__ void wgmma_m64n256k32_rs_e4m3(float (&d)[128], const std::uint32_t (&a)[4],
                                                         std::uint64_t desc_b, int scale_d) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %133, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n256k32.f32.e4m3.e4m3 " TC_D128
      ", {%128, %129, %130, %131}, %132, p, 1, 1;\n"
      "}\n"
      : TC_R8(0), TC_R8(8), TC_R8(16), TC_R8(24), TC_R8(32), TC_R8(40), TC_R8(48), TC_R8(56), TC_R8(64), TC_R8(72),
        TC_R8(80), TC_R8(88), TC_R8(96), TC_R8(104), TC_R8(112), TC_R8(120)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(scale_d));
}
__device__ __forceinline__ void wgmma_m64n64k32_rs_e4m3(float (&d)[32], const std::uint32_t (&a)[4],
                                                        std::uint64_t desc_b, int scale_d) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %37, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e4m3 " TC_D32
      ", {%32, %33, %34, %35}, %36, p, 1, 1;\n"
      "}\n"
      : TC_R8(0), TC_R8(8), TC_R8(16), TC_R8(24)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(scale_d));
}
#undef TC_D32
#undef TC_D128
#undef TC_D96
#undef TC_D112
#undef TC_D64
#undef TC_R8

// ---- setmaxnreg ----------------------------------------------------------------------------
// Moves registers between warpgroups at run time: the producer, which only issues copies,
// gives most of its registers back (dec), the consumers take them for accumulators (inc).
// Every thread of the warpgroup executes it; the kernel needs a register cap at entry
// (__launch_bounds__(threads, 1)).
template <int kRegs>
__device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kRegs));
}
template <int kRegs>
__device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kRegs));
}
#endif  // TC_HOPPER_ENABLED

// A compiler-only fence on registers: keeps the compiler from moving reads or writes of
// the accumulators across the wgmma wait (the hardware writes them asynchronously).
template <int N>
__device__ __forceinline__ void fence_operand(float (&d)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// The same for A fragments in registers (chapter 12): an asynchronous wgmma may still read them
// until the wgmma.wait_group that ends their use; call this after it.
template <int M, int N>
__device__ __forceinline__ void fence_operand(std::uint32_t (&a)[M][N]) {
#pragma unroll
  for (int i = 0; i < M; ++i)
#pragma unroll
    for (int j = 0; j < N; ++j) asm volatile("" : "+r"(a[i][j])::"memory");
}

// ---- named barriers (chapter 12) ---------------------------------------------------------------
// bar.sync id, n: wait until n threads (a multiple of 32) have arrived at barrier id (1..15;
// 0 is __syncthreads), counting this one. bar.arrive id, n: count this thread and go on.
// Ping-pong: warpgroup A syncs on "A's turn", which warpgroup B's arrive completes.
__device__ __forceinline__ void named_bar_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void named_bar_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

// ---- programmatic dependent launch (chapter 11) -------------------------------------------------
// launch_dependents: this block no longer holds back the next kernel's launch (its blocks may
// take free SM slots while this grid's last blocks run); wait: block until every kernel this
// one depends on has finished and its writes are visible. Without the launch attribute
// (cudaLaunchAttributeProgrammaticStreamSerialization) both are no-ops; before sm_90 they
// compile to nothing.
__device__ __forceinline__ void griddepcontrol_launch_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void griddepcontrol_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}

// ---- elect, clusters -------------------------------------------------------------------------
// One lane of the (converged) warp is elected: the TMA issuer. Cheaper and clearer than
// `lane == 0` followed by divergence the compiler cannot see through.
__device__ __forceinline__ bool elect_one_sync() {
  std::uint32_t elected;
  asm volatile(
      "{\n"
      ".reg .b32 lane;\n"
      ".reg .pred p;\n"
      "elect.sync lane|p, 0xffffffff;\n"
      "selp.u32 %0, 1, 0, p;\n"
      "}\n"
      : "=r"(elected));
  return elected != 0;
}
// This CTA's rank in its cluster (0 .. cluster size - 1).
__device__ __forceinline__ std::uint32_t cluster_ctarank() {
  std::uint32_t rank;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(rank));
  return rank;
}
// The address of the same shared-memory variable in CTA `rank` of the cluster.
__device__ __forceinline__ std::uint32_t mapa_shared_cluster(std::uint32_t smem_addr, std::uint32_t rank) {
  std::uint32_t remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(smem_addr), "r"(rank));
  return remote;
}
// The cluster-wide barrier, in two halves: every thread of every CTA of the cluster
// arrives (release), then waits for all the others (acquire). Together (cluster_sync):
// barriers initialised by any CTA may then be used by all, and at the end no CTA leaves
// while a peer may still write into its shared memory or arrive on its barriers.
__device__ __forceinline__ void barrier_cluster_arrive() {
  asm volatile("barrier.cluster.arrive.release.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void barrier_cluster_wait() {
  asm volatile("barrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void cluster_sync() {
  barrier_cluster_arrive();
  barrier_cluster_wait();
}

}  // namespace tc
