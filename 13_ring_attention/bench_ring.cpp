// Ring attention against one chapter-10 call, forward and backward.
//   ring_fwd, ring_bwd                  the loopback ring (P virtual ranks on GPU 0) on the
//                                       whole sequence; with >= P GPUs and NCCL also
//                                       transport=nccl (one rank per GPU)
//   anchor:one_call_fwd, _bwd           chapter 10 on the whole sequence, one GPU (what the
//                                       loopback ring is compared with)
//   anchor:one_gpu_fwd, _bwd            chapter 10 at N / P tokens (one GPU's share of the
//                                       NCCL ring: weak scaling's ideal is P times this)
// main --weak prints the efficiency ratios themselves (and writes them with --json).
#include <map>
#include <memory>
#include <string>

#include "bench.h"
#include "cuda_check.h"
#include "fa2_tc.h"
#include "ring.h"
#include "ring_host.h"
#include "transport.h"

namespace {

using ladder::AttentionShape;
using ladder::bf16;

std::string keys(const AttentionShape& s, int P, ring::Sharding sh) {
  return "/P=" + std::to_string(P) + "/N=" + std::to_string(s.N) + "/d=" + std::to_string(s.d) +
         "/H=" + std::to_string(s.H) + "/causal=" + std::to_string(int(s.causal)) + "/sharding=" + ring::name(sh);
}

// Rings and transports outlive the calls Google Benchmark makes.
ring::Ring& cached_ring(const std::string& transport, const AttentionShape& s, int P, ring::Sharding sh) {
  static std::map<std::string, std::unique_ptr<ring::Transport>> transports;
  static std::map<std::string, std::unique_ptr<ring::Ring>> rings;
  const std::string tkey = transport + std::to_string(P), rkey = tkey + keys(s, P, sh);
  auto& tr = transports[tkey];
  if (!tr) tr = transport == "nccl" ? ring::make_nccl_transport(P) : ring::make_loopback_transport(P);
  auto& r = rings[rkey];
  if (!r) {
    r = std::make_unique<ring::Ring>(s, sh, *tr);
    ring::fill_random(*r, 5);
    r->forward();
    r->synchronize();
  }
  return *r;
}

void register_ring(const std::string& transport, const AttentionShape& s, int P, ring::Sharding sh) {
  for (bool bwd : {false, true})
    ladder::gpu_benchmark(std::string(bwd ? "ring_bwd" : "ring_fwd") + "/transport=" + transport + keys(s, P, sh),
                          [=](benchmark::State& state) {
                            if (!ladder::gpu_or_skip(state)) return;
                            ring::Ring& r = cached_ring(transport, s, P, sh);
                            auto work = [&] {
                              if (bwd)
                                r.backward();
                              else
                                r.forward();
                              r.synchronize();
                              CUDA_CHECK(cudaSetDevice(0));  // the timing events live on device 0
                            };
                            ladder::run_gpu(state, work,
                                            bwd ? ladder::attention_bwd_work(s, 2) : ladder::attention_fwd_work(s, 2));
                          });
}

void register_one_call(const std::string& name, const AttentionShape& s, const std::string& key) {
  for (bool bwd : {false, true})
    ladder::gpu_benchmark(std::string("anchor:") + name + (bwd ? "_bwd" : "_fwd") + key, [=](benchmark::State& state) {
      if (!ladder::gpu_or_skip(state)) return;
      const bf16 *Q = ladder::bench_input<bf16>(s.elems(), 1), *K = ladder::bench_input<bf16>(s.elems(), 2),
                 *V = ladder::bench_input<bf16>(s.elems(), 3), *dO = ladder::bench_input<bf16>(s.elems(), 4);
      bf16* O = ladder::bench_output<bf16>(s.elems(), 0);
      float* L = ladder::bench_output<float>(s.rows(), 0);
      fa2tc::forward(s, Q, K, V, O, L);
      bf16 *dQ = ladder::bench_output<bf16>(s.elems(), 1), *dK = ladder::bench_output<bf16>(s.elems(), 2),
           *dV = ladder::bench_output<bf16>(s.elems(), 3);
      float* ws = ladder::bench_output<float>(fa2tc::backward_workspace_floats(s, fa2tc::DqPath::Atomic), 1);
      auto work = [=] {
        if (bwd)
          fa2tc::backward(s, Q, K, V, O, L, dO, dQ, dK, dV, ws, fa2tc::DqPath::Atomic);
        else
          fa2tc::forward(s, Q, K, V, O, L);
      };
      ladder::run_gpu(state, work, bwd ? ladder::attention_bwd_work(s, 2) : ladder::attention_fwd_work(s, 2));
    });
}

const bool registered = [] {
  for (bool causal : {false, true}) {
    const AttentionShape s{1, 8, 32768, 128, causal};
    const ring::Sharding sh = causal ? ring::Sharding::Zigzag : ring::Sharding::Plain;
    register_ring("loopback", s, 2, sh);
    register_one_call("one_call", s, keys(s, 2, sh));
    if (ring::nccl_built() && ring::visible_gpus() >= 2) {
      const AttentionShape big{1, 8, 2 * 65536, 128, causal}, share{1, 8, 65536, 128, causal};
      register_ring("nccl", big, 2, sh);
      register_one_call("one_gpu", share, keys(big, 2, sh));
    }
  }
  return true;
}();

}  // namespace
