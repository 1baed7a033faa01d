// The host side of chapter 12: every check before any launch. The kernels, their tensor
// maps and their launch are in fa3_forward.cuh (sm_90a); the tile policy in fa3_config.h.
#include <climits>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "09_tensor_core_matmul/hopper_host.h"
#include "cuda_check.h"
#include "device.h"
#include "fa3.h"
#include "fa3_kernel.h"
#include "launch.h"
#include "numeric.h"

namespace fa3 {

namespace kernel {

Footprint check_common(const ladder::AttentionShape& s, bool fp8, Step step, const Tuning& t, const std::string& who) {
  try {  // the shape and its head dim, once (fa3.h's lists)
    if (fp8)
      ladder::validate(s, kFp8SupportedD, ladder::KvHeads::Any);
    else
      ladder::validate(s, kSupportedD, ladder::KvHeads::Any);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(who + ": " + e.what());
  }
  if (std::int64_t(s.N) * s.d > INT_MAX || std::int64_t(s.nkv() + 128) * s.d > INT_MAX)
    throw std::invalid_argument(who + ": N*d and N_kv*d must fit in an int (one head's rows)");
  kernel::Footprint f;
  try {
    f = footprint(s.d, fp8, step, t);  // the variant is compiled (fa3_config.h)
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(who + ": " + e.what());
  }
  ladder::check_grid(who, static_cast<unsigned long long>(ladder::ceil_div(s.N, f.B_r)), s.heads());
  if (const std::string why = unavailable_reason(); !why.empty()) throw std::invalid_argument(who + ": " + why);
  if (ladder::device().smem_per_block_optin < f.smem_bytes)
    throw std::invalid_argument(who + " needs " + std::to_string(f.smem_bytes) + " bytes of shared memory per block; " +
                                ladder::device().name + " allows " +
                                std::to_string(ladder::device().smem_per_block_optin));
  return f;
}

Params params(const ladder::AttentionShape& s, int B_r, bf16* O, float* L) {
  Params p{};
  p.H = s.H, p.H_kv = s.hkv(), p.group = s.group(), p.N_q = s.N, p.N_kv = s.nkv(), p.offset = s.nkv() - s.N;
  p.T_r = ladder::ceil_div(s.N, B_r);
  p.heads = static_cast<int>(s.heads());
  p.causal = s.causal;
  p.scale_log2e = s.scale() * ladder::kLog2e;
  p.O = O, p.L = L;
  return p;
}

}  // namespace kernel

const char* name(Step s) {
  switch (s) {
    case Step::Tma: return "tma";
    case Step::WarpSpec: return "warpspec";
    case Step::PingPong: return "pingpong";
    case Step::IntraWg: return "intrawg";
    case Step::Persistent: return "persistent";
  }
  return "?";
}

std::string unavailable_reason() {
  return tc::sm90a_unavailable_reason("the FA3 kernels need", kernel::sm90a_kernel());
}

void forward(const ladder::AttentionShape& s, const bf16* Q, const bf16* K, const bf16* V, bf16* O, float* L,
             cudaStream_t stream) {
  forward(s, Q, K, V, O, L, ForwardOptions{}, stream);
}

void forward(const ladder::AttentionShape& s, const bf16* Q, const bf16* K, const bf16* V, bf16* O, float* L,
             const ForwardOptions& opt, cudaStream_t stream) {
  const std::string who = "fa3::forward";
  kernel::Tuning t{opt.kv_stages};
  t.eager_rescale = opt.eager_rescale;
  t.speculative_max = opt.speculative_max;
  const kernel::Footprint f = kernel::check_common(s, false, opt.step, t, who);
  // TMA reads from 16-byte aligned addresses; O is written 16 bytes at a time.
  ladder::check_pointers(who, {{"Q", Q}, {"K", K}, {"V", V}, {"O", O}, {"L", L, alignof(float)}}, 16);
  kernel::launch(s, {Q, K, V, false}, kernel::params(s, f.B_r, O, L), opt.step, t, stream);
}

void forward_fp8(const ladder::AttentionShape& s, const Fp8Inputs& in, bf16* O, float* L, cudaStream_t stream) {
  forward_fp8(s, in, O, L, Fp8ForwardOptions{}, stream);
}

void forward_fp8(const ladder::AttentionShape& s, const Fp8Inputs& in, bf16* O, float* L, const Fp8ForwardOptions& opt,
                 cudaStream_t stream) {
  const std::string who = "fa3::forward_fp8";
  if (opt.poly_eighths != 0 && opt.poly_eighths != 2 && opt.poly_eighths != 4)
    throw std::invalid_argument(who + ": poly_eighths=" + std::to_string(opt.poly_eighths) +
                                " is not compiled: 0, 2 or 4 (eighths of the exponentials on the FMA pipes)");
  // (a key tile that is not compiled is refused by check_common, which names the compiled ones)
  const kernel::Tuning t{0,
                         opt.poly_eighths,
                         opt.key_tile ? opt.key_tile : kernel::kFp8KeyTile,
                         opt.exp_turns,
                         opt.gemm_turns,
                         opt.eager_rescale,
                         opt.speculative_max};
  const kernel::Footprint f = kernel::check_common(s, true, opt.step, t, who);
  ladder::check_pointers(who,
                         {{"Q8", in.Q8},
                          {"K8", in.K8},
                          {"Vt8", in.Vt8},
                          {"O", O},
                          {"L", L, alignof(float)},
                          {"descale_q", in.descale_q, alignof(float)},
                          {"descale_k", in.descale_k, alignof(float)},
                          {"descale_v", in.descale_v, alignof(float)}},
                         16);
  kernel::Params p = kernel::params(s, f.B_r, O, L);
  p.descale_q = in.descale_q, p.descale_k = in.descale_k, p.descale_v = in.descale_v;
  p.q_scale_blocks = ladder::ceil_div(s.N, kFp8RowsPerQScale);
  p.k_scale_blocks = ladder::ceil_div(s.nkv(), kFp8KeysPerKScale);
  kernel::launch(s, {in.Q8, in.K8, in.Vt8, true}, p, opt.step, t, stream);
}

}  // namespace fa3
