// The host side of chapter 14: every check before any launch, then the three launches of one
// backward (pre-processing, the main kernel, post-processing) in one stream. The kernels are in
// fa3_bwd_prepost.cu and fa3_bwd_kernel.cuh (sm_90a); the tile policy in fa3_bwd_config.h.
#include <climits>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "09_tensor_core_matmul/hopper_host.h"
#include "device.h"
#include "fa3_bwd.h"
#include "fa3_bwd_config.h"
#include "launch.h"
#include "numeric.h"

namespace fa3bwd {

namespace {

// L2, D, the dQ accumulator, then one int flag per 64 x 64 block of it.
struct Workspace {
  float *L2, *D, *dQ_acc;
  int* dq_flags;
};
Workspace carve(const ladder::AttentionShape& s, float* w) {
  const std::size_t rows = s.heads() * std::size_t(layout::padded_rows(s.N));
  return {w, w + rows, w + 2 * rows, reinterpret_cast<int*>(w + 2 * rows + rows * s.d)};
}

}  // namespace

const char* name(Step s) {
  switch (s) {
    case Step::Atomic: return "atomic";
    case Step::BulkReduce: return "bulk";
    case Step::Deterministic: return "deterministic";
  }
  return "?";
}

std::string unavailable_reason() {
  return tc::sm90a_unavailable_reason("the FA3 backward needs", kernel::sm90a_kernel());
}

std::size_t backward_workspace_floats(const ladder::AttentionShape& s) {
  const std::size_t rows = s.heads() * std::size_t(layout::padded_rows(s.N));
  const std::size_t dq = rows * std::size_t(s.d);
  static_assert(sizeof(int) == sizeof(float), "one flag per float slot");
  return 2 * rows + dq + dq / layout::kChunkFloats;
}

void backward(const ladder::AttentionShape& s, const bf16* Q, const bf16* K, const bf16* V, const bf16* O,
              const float* L, const bf16* dO, bf16* dQ, bf16* dK, bf16* dV, float* workspace, cudaStream_t stream) {
  backward(s, Q, K, V, O, L, dO, dQ, dK, dV, workspace, BackwardOptions{}, stream);
}

namespace kernel {

Prepared prepare(const std::string& who, const ladder::AttentionShape& shape, const Tensors& x,
                 const BackwardOptions& opt, cudaStream_t stream) {
  const ladder::AttentionShape s = ladder::validate(shape, kSupportedD, ladder::KvHeads::Any);
  const Step step = opt.step;
  if (opt.heads_per_section < 0 || (step == Step::Deterministic && opt.heads_per_section > 1))
    throw std::invalid_argument(who + ": heads_per_section = " + std::to_string(opt.heads_per_section) +
                                ": 0 (as many as fit in the L2) or any count >= 1; the deterministic step, 0 or 1");
  if (std::int64_t(layout::padded_rows(s.N)) * s.d > INT_MAX || std::int64_t(s.nkv() + layout::B_c) * s.d > INT_MAX)
    throw std::invalid_argument(who + ": N*d and N_kv*d must fit in an int (one head's rows)");
  std::size_t smem = 0;
  try {
    smem = smem_bytes(s.d, step);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(who + ": " + e.what());
  }
  ladder::check_grid(who, static_cast<unsigned long long>(ladder::ceil_div(s.nkv(), layout::B_c)), s.kv_heads());
  // TMA, the bulk copies and the paired bf16 stores need 16-byte aligned tensors.
  ladder::check_pointers(who,
                         {{"Q", x.Q},
                          {"K", x.K},
                          {"V", x.V},
                          {"O", x.O},
                          {"L", x.L, alignof(float)},
                          {"dO", x.dO},
                          {"dQ", x.dQ},
                          {"dK", x.dK},
                          {"dV", x.dV},
                          {"workspace", x.workspace}},
                         16);
  if (const std::string why = unavailable_reason(); !why.empty()) throw std::invalid_argument(who + ": " + why);
  // The deterministic order with the causal mask makes a CTA wait, in each dQ block, for the CTA
  // of the next key tile, which is launched after it: every key tile of a head must fit on the GPU
  // at once (one CTA per SM), or the CTAs holding the SMs wait for ones that cannot start
  // (dq_order_model.h shows both). Dense attention adds from key tile 0 up and has no such limit.
  if (const int tiles = ladder::ceil_div(s.nkv(), layout::B_c), sms = ladder::device().sm_count;
      step == Step::Deterministic && s.causal && tiles > sms)
    throw std::invalid_argument(who + ": the causal deterministic step needs all of a head's key tiles on the GPU " +
                                "at once: N_kv = " + std::to_string(s.nkv()) + " has " + std::to_string(tiles) +
                                " tiles of " + std::to_string(layout::B_c) + " keys, " + ladder::device().name +
                                " runs " + std::to_string(sms) + " (N_kv <= " + std::to_string(layout::B_c * sms) +
                                "); dense attention and Step::BulkReduce take any N_kv");
  if (ladder::device().smem_per_block_optin < smem)
    throw std::invalid_argument(who + " needs " + std::to_string(smem) + " bytes of shared memory per block; " +
                                ladder::device().name + " allows " +
                                std::to_string(ladder::device().smem_per_block_optin));

  const Workspace w = carve(s, x.workspace);
  launch_preprocess(s, x.O, x.dO, x.L, w.L2, w.D, w.dQ_acc, stream);
  Params p{};
  static_cast<ladder::AttentionParams&>(p) = ladder::attention_params(s);
  p.N_pad = layout::padded_rows(s.N), p.blocks = p.N_pad / layout::kBlockRows;
  p.causal = s.causal;
  p.scale = s.scale(), p.scale_log2e = s.scale() * ladder::kLog2e;
  p.L2 = w.L2, p.D = w.D, p.dQ_acc = w.dQ_acc, p.dq_flags = w.dq_flags, p.dK = x.dK, p.dV = x.dV;
  // The deterministic step's causal order is built on the plain order, head by head.
  const int in_l2 = sched::heads_in_l2(ladder::device().l2_bytes, s.group(), s.N, s.d);
  const int most = step == Step::Deterministic ? 1 : opt.heads_per_section > 0 ? opt.heads_per_section : in_l2;
  p.sections = sched::sections(static_cast<int>(s.kv_heads()), most);
  return {s, p};
}

}  // namespace kernel

void backward(const ladder::AttentionShape& shape, const bf16* Q, const bf16* K, const bf16* V, const bf16* O,
              const float* L, const bf16* dO, bf16* dQ, bf16* dK, bf16* dV, float* workspace,
              const BackwardOptions& opt, cudaStream_t stream) {
  const kernel::Prepared run =
      kernel::prepare("fa3bwd::backward", shape, {Q, K, V, O, L, dO, dQ, dK, dV, workspace}, opt, stream);
  kernel::launch_main(run.s, {Q, K, V, dO}, run.p, opt.step, stream);
  kernel::launch_postprocess(run.s, run.p.dQ_acc, dQ, stream);
}

}  // namespace fa3bwd
