// Scratch: chapter 12's forward with clock64 stamps at the phases of its main loop (not committed).
#include <cuda_runtime.h>
#include <cstdint>
#include <cstdio>
namespace fa3trace {
constexpr int kMax = 320, kHead0 = 24, kHeads = 4, kSlots = kHeads * 32;
__device__ unsigned long long g_t[kSlots][3][kMax];
__device__ int g_e[kSlots][3][kMax];
__device__ int g_n[kSlots][3];
__device__ int g_smid[kSlots];
__device__ __forceinline__ int slot() {
  const int h = int(blockIdx.y) - kHead0;
  return (gridDim.x == 32 && h >= 0 && h < kHeads) ? h * 32 + int(blockIdx.x) : -1;
}
__device__ __forceinline__ void rec(int role, int& n, int ev) {
  const int s = slot();
  if (s < 0 || n >= kMax) return;
  g_t[s][role][n] = clock64();
  g_e[s][role][n] = ev;
  ++n;
  g_n[s][role] = n;
  if (ev == 30) {
    unsigned sm;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
    g_smid[s] = int(sm);
  }
}
}  // namespace fa3trace
#define FA3_TRACE_C(ev)                         \
  do {                                          \
    if (t == 0) fa3trace::rec(cw, trace_n, ev); \
  } while (0)
#define FA3_TRACE_P(ev) fa3trace::rec(2, trace_n, ev)
#define FA3_TRACE_K(ev)                                                    \
  do {                                                                     \
    if (consumer.t == 0) fa3trace::rec(consumer.cw, consumer.trace_n, ev); \
  } while (0)

#include "fa3_forward.cuh"

namespace fa3::detail {
const void* sm90a_kernel() {
  return reinterpret_cast<const void*>(fa3_kernel<Cfg<128, false, Step::IntraWg>, SingleTileScheduler, CausalOrDense>);
}
void launch(const ladder::AttentionShape& s, const Operands& x, const Params& p, Step step, const Tuning& t,
            cudaStream_t stream) {
  (void)step;
  if (x.fp8 && t.key_tile == 128)
    launch_cfg<Cfg<128, true, Step::IntraWg>>(s, x, p, CausalOrDense{}, stream);
  else if (x.fp8)
    launch_cfg<Cfg<128, true, Step::IntraWg, 0, 0, 192>>(s, x, p, CausalOrDense{}, stream);
  else
    launch_cfg<Cfg<128, false, Step::IntraWg>>(s, x, p, CausalOrDense{}, stream);
}
}  // namespace fa3::detail

void trace_dump(const char* path) {
  using namespace fa3trace;
  static unsigned long long t[kSlots][3][kMax];
  static int e[kSlots][3][kMax], n[kSlots][3], sm[kSlots];
  cudaMemcpyFromSymbol(t, g_t, sizeof t);
  cudaMemcpyFromSymbol(e, g_e, sizeof e);
  cudaMemcpyFromSymbol(n, g_n, sizeof n);
  cudaMemcpyFromSymbol(sm, g_smid, sizeof sm);
  FILE* f = std::fopen(path, "w");
  std::fprintf(f, "slot,smid,role,i,ev,clock\n");
  for (int s = 0; s < kSlots; ++s)
    for (int r = 0; r < 3; ++r)
      for (int i = 0; i < n[s][r] && i < kMax; ++i)
        std::fprintf(f, "%d,%d,%d,%d,%d,%llu\n", s, sm[s], r, i, e[s][r][i], t[s][r][i]);
  std::fclose(f);
}
