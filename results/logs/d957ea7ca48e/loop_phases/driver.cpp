// Scratch driver: one shape, a few launches, then the last launch's stamps (trace.cu).
#include <cuda_runtime.h>
#include <cstdio>
#include <string>
#include "fa3.h"
#include "fa3_problem.h"
void trace_dump(const char* path);
int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "fp8_192";
  const std::string out = argc > 2 ? argv[2] : "trace.csv";
  ladder::AttentionShape s;
  s.B = 4, s.H = 16, s.N = 4096, s.d = 128;
  const fa3::Problem p = fa3::make_problem(s, 7);
  if (mode == "bf16") {
    fa3::OnDevice dev(p);
    for (int r = 0; r < 5; ++r) dev.forward({fa3::Step::IntraWg});
  } else {
    fa3::Fp8Problem q = fa3::quantize_on_host(p, true);
    fa3::Fp8ForwardOptions o;
    o.key_tile = mode == "fp8_128" ? 128 : 192;
    for (int r = 0; r < 5; ++r) q.forward(o);
  }
  if (cudaDeviceSynchronize() != cudaSuccess) return 1;
  trace_dump(out.c_str());
  std::printf("%s -> %s\n", mode.c_str(), out.c_str());
  return 0;
}
