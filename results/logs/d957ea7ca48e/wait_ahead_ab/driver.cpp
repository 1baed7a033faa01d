// Scratch timing driver: median of 30 launches (CUDA events) per configuration.
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>
#include "fa3.h"
#include "fa3_problem.h"
int main(int argc, char** argv) {
  const std::string tag = argc > 1 ? argv[1] : "";
  for (int c = 0; c < 4; ++c) {
    const int causal = c % 2, dim = c < 2 ? 128 : 64;
    ladder::AttentionShape s;
    s.B = 4, s.H = 16, s.N = 4096, s.d = dim, s.causal = causal;
    const fa3::Problem p = fa3::make_problem(s, 7);
    fa3::OnDevice dev(p);
    ladder::AttentionShape s8 = s;
    if (dim != 128) s8.d = 128, s8.N = 64;
    fa3::Fp8Problem q = fa3::quantize_on_host(dim == 128 ? p : fa3::make_problem(s8, 1), true);
    const double flop = 4.0 * s.B * s.H * double(s.N) * s.N * s.d / (causal ? 2 : 1);
    struct Run {
      const char* name;
      int kind;
    };
    const Run runs[] = {
        {"bf16_intrawg", 0}, {"bf16_persistent", 1}, {"fp8_192", 2}, {"fp8_128", 3}, {"fp8_192_persistent", 4}};
    for (const Run& r : runs) {
      if (dim == 64 && r.kind != 0) continue;
      auto go = [&] {
        fa3::Fp8ForwardOptions o;
        switch (r.kind) {
          case 0: dev.forward({fa3::Step::IntraWg}); break;
          case 1: dev.forward({fa3::Step::Persistent}); break;
          case 2:
            o.key_tile = 192;
            q.forward(o);
            break;
          case 3:
            o.key_tile = 128;
            q.forward(o);
            break;
          case 4:
            o.key_tile = 192;
            o.step = fa3::Step::Persistent;
            q.forward(o);
            break;
        }
      };
      for (int w = 0; w < 10; ++w) go();
      std::vector<float> ms;
      cudaEvent_t a, b;
      cudaEventCreate(&a), cudaEventCreate(&b);
      for (int i = 0; i < 40; ++i) {
        cudaEventRecord(a);
        go();
        cudaEventRecord(b);
        cudaEventSynchronize(b);
        float t;
        cudaEventElapsedTime(&t, a, b);
        ms.push_back(t);
      }
      std::sort(ms.begin(), ms.end());
      const float med = ms[ms.size() / 2];
      std::printf("%s %s_d%d causal=%d %.1f TFLOP/s (%.1f us)\n", tag.c_str(), r.name, dim, causal,
                  flop / (med * 1e-3) / 1e12, med * 1e3);
    }
    if (cudaDeviceSynchronize() != cudaSuccess) return 1;
  }
  return 0;
}
