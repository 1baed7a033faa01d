// Which chapter answers a call, the checks before it, and the block masks chapter 15's kernels walk.
#include "attention_ops.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "10_fa2_tensor_cores/fa2_tc.h"
#include "12_fa3_hopper/fa3.h"
#include "14_fa3_backward/fa3_bwd.h"
#include "15_attention_variants/flex.h"
#include "cuda_check.h"
#include "device.h"
#include "launch.h"

namespace ops {

Mask mask_from_name(const std::string& n) {
  if (n == "none") return Mask::None;
  if (n == "causal") return Mask::Causal;
  if (n == "sliding_window") return Mask::SlidingWindow;
  if (n == "prefix_lm") return Mask::PrefixLM;
  if (n == "documents") return Mask::Documents;
  throw std::invalid_argument("mask '" + n + "' is not one of: none, causal, sliding_window, prefix_lm, documents");
}
ScoreMod score_mod_from_name(const std::string& n) {
  if (n == "none") return ScoreMod::None;
  if (n == "softcap") return ScoreMod::Softcap;
  if (n == "alibi") return ScoreMod::Alibi;
  throw std::invalid_argument("score modifier '" + n + "' is not one of: none, softcap, alibi");
}
const char* name(Kernels k) {
  switch (k) {
    case Kernels::Fa3: return "fa3 (chapters 12, 14)";
    case Kernels::Flex: return "flex (chapter 15)";
    case Kernels::Fa2: return "fa2 (chapter 10)";
  }
  return "?";
}

void check_parameters(const Variant& v) {
  const auto bad = [](const std::string& why) { throw std::invalid_argument(why); };
  if (v.mask == Mask::SlidingWindow && (v.window_left < 0 || v.window_right < 0))
    bad("sliding_window: left and right must be >= 0 (keys before and after the query's diagonal)");
  if (v.mask == Mask::PrefixLM && v.prefix < 0) bad("prefix_lm: the prefix must be >= 0");
  if (v.mask == Mask::Documents && v.doc == nullptr) bad("documents: the document ids are missing");
  if (v.score == ScoreMod::Softcap && !(v.softcap > 0.0f)) bad("softcap: the cap must be > 0");
  if (v.score == ScoreMod::Alibi && v.slopes == nullptr) bad("alibi: the slopes are missing");
  const auto aligned = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 4 == 0; };
  if (v.mask == Mask::Documents && !aligned(v.doc)) bad("documents: the document ids must be 4-byte aligned (int32)");
  if (v.score == ScoreMod::Alibi && !aligned(v.slopes)) bad("alibi: the slopes must be 4-byte aligned (fp32)");
}

namespace {
// The kernels read the ids and the slopes element by element: on a machine with a GPU, ask the
// driver that they are device memory (a host address would lose the CUDA context to an illegal
// access in the middle of a kernel).
void check_variant_memory(const Variant& v) {
  if (v.mask == Mask::Documents) ladder::check_pointers("documents", {{"doc", v.doc}}, alignof(int));
  if (v.score == ScoreMod::Alibi) ladder::check_pointers("alibi", {{"slopes", v.slopes}}, alignof(float));
}
}  // namespace

Kernels choose(const ladder::AttentionShape& shape, Mask mask, ScoreMod score, bool hopper, bool any_gpu) {
  const ladder::AttentionShape s = ladder::validate(shape, fa3::kSupportedD, ladder::KvHeads::Any);
  const auto bad = [](const std::string& why) { throw std::invalid_argument(why); };
  if (s.causal) bad("attention: say causal with Mask::Causal, not in the shape (the mask decides which kernels run)");
  if (mask == Mask::Documents && s.nkv() != s.N)
    bad("documents: packed sequences attend to themselves (N_kv = N); got " + s.str());
  if (score != ScoreMod::None && mask != Mask::Causal)
    bad("the score modifiers (softcap, alibi) are compiled on the causal mask only (chapter 15's built-ins)");
  const bool plain = (mask == Mask::None || mask == Mask::Causal) && score == ScoreMod::None;
  if (plain && hopper) return Kernels::Fa3;
  if (plain && any_gpu) return Kernels::Fa2;
  if (!hopper)
    throw std::invalid_argument(std::string(any_gpu ? "this GPU has no sm_90a: " : "no usable GPU: ") +
                                "masks other than causal and score modifiers run on chapter 15's kernels (an "
                                "H100/H200); dense and causal attention need compute capability 8.0 or later");
  return Kernels::Flex;
}

Kernels choose(const ladder::AttentionShape& s, Mask mask, ScoreMod score) {
  // Asked once per process, as ladder::device() is (device 0): a model calls this on every step.
  static const bool hopper = fa3::unavailable_reason().empty() && variants::unavailable_reason().empty();
  static const bool any_gpu = ladder::device().available && ladder::device().cc_major >= 8;
  return choose(s, mask, score, hopper, any_gpu);
}

namespace {

// The shape the dense and causal chapters take: causal in the shape.
ladder::AttentionShape plain_shape(const ladder::AttentionShape& s, Mask mask) {
  ladder::AttentionShape r = s.resolved();
  r.causal = mask == Mask::Causal;
  return r;
}

// Chapter 12's step table: causal attention at d = 128 without GQA (a GPT's) runs fastest with the
// persistent step; everything else with the chapter's default.
fa3::ForwardOptions fa3_options(const ladder::AttentionShape& s) {
  fa3::ForwardOptions o;
  o.step = s.causal && s.d == 128 && s.group() == 1 ? fa3::Step::Persistent : fa3::kBestStep;
  return o;
}

// Calls f(mask, score) with chapter 15's functors for v (their pointers are device pointers).
template <class F>
void with_functors(const ladder::AttentionShape& s, const Variant& v, F&& f) {
  using namespace variants;
  const int offset = s.nkv() - s.N;
  switch (v.mask) {
    case Mask::None: return f(NoMask{}, NoScoreMod{});
    case Mask::SlidingWindow: return f(SlidingWindow{v.window_left, v.window_right, offset}, NoScoreMod{});
    case Mask::PrefixLM: return f(PrefixLM{v.prefix}, NoScoreMod{});
    case Mask::Documents: return f(CausalDocument{Document{v.doc, v.doc, s.N, s.N}, Causal{offset}}, NoScoreMod{});
    case Mask::Causal:
      if (v.score == ScoreMod::Softcap) return f(Causal{offset}, Softcap{v.softcap});
      if (v.score == ScoreMod::Alibi) return f(Causal{offset}, Alibi{v.slopes, offset});
      return f(Causal{offset}, NoScoreMod{});
  }
}

// Every causally visible tile listed as partial: the documents' block mask when their ids live on
// the device only. Reading them back would stall the stream; the kernels evaluate the document
// test on every element instead, and skip only the tiles above the diagonal.
void demote_full_tiles(variants::BlockMask& m) {
  for (std::size_t r = 0; r < m.kv_num_blocks.size(); ++r) {
    int* idx = &m.kv_indices[r * m.T_c];
    const int* full = &m.full_kv_indices[r * m.T_c];
    int& n = m.kv_num_blocks[r];
    for (int f = 0; f < m.full_kv_num_blocks[r]; ++f) idx[n++] = full[f];
    std::sort(idx, idx + n);
    m.full_kv_num_blocks[r] = 0;
  }
  variants::transpose_lists(m);
}

// The block mask of a variant, built on the host once per (variant, lengths, tile, device) and kept:
// a model calls the same few shapes millions of times.
const variants::DeviceBlockMask& block_mask(const ladder::AttentionShape& s, const Variant& v, int B_r) {
  using namespace variants;
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  const int offset = s.nkv() - s.N;
  const std::string key = std::to_string(int(v.mask)) + "/" + std::to_string(v.window_left) + "/" +
                          std::to_string(v.window_right) + "/" + std::to_string(v.prefix) + "/" + std::to_string(s.N) +
                          "/" + std::to_string(s.nkv()) + "/" + std::to_string(B_r) + "/" + std::to_string(device);
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<DeviceBlockMask>> cache;
  const std::lock_guard<std::mutex> lock(mutex);
  auto& slot = cache[key];
  if (!slot) {
    BlockMask m;
    const auto build = [&](auto mask) { return make_block_mask(mask, 1, 1, s.N, s.nkv(), B_r, kB_c); };
    switch (v.mask) {
      case Mask::None: m = build(NoMask{}); break;
      case Mask::Causal: m = build(Causal{offset}); break;
      case Mask::SlidingWindow: m = build(SlidingWindow{v.window_left, v.window_right, offset}); break;
      case Mask::PrefixLM: m = build(PrefixLM{v.prefix}); break;
      case Mask::Documents: m = build(Causal{offset}), demote_full_tiles(m); break;
    }
    slot = std::make_unique<DeviceBlockMask>(m);
  }
  return *slot;
}

}  // namespace

void forward(const ladder::AttentionShape& shape, const Variant& v, const bf16* Q, const bf16* K, const bf16* V,
             bf16* O, float* L, cudaStream_t stream) {
  check_parameters(v);
  check_variant_memory(v);
  const Kernels k = choose(shape, v.mask, v.score);
  const ladder::AttentionShape s = plain_shape(shape, v.mask);
  if (k == Kernels::Fa3) return fa3::forward(s, Q, K, V, O, L, fa3_options(s), stream);
  if (k == Kernels::Fa2) return fa2tc::forward(s, Q, K, V, O, L, stream);
  const ladder::AttentionShape flex = shape.resolved();
  const variants::DeviceBlockMask& bm = block_mask(flex, v, variants::kForwardB_r);
  with_functors(flex, v,
                [&](auto mask, auto score) { variants::forward(flex, mask, score, bm, Q, K, V, O, L, stream); });
}

std::size_t backward_workspace_floats(const ladder::AttentionShape& shape, Mask mask, ScoreMod score) {
  const Kernels k = choose(shape, mask, score);
  const ladder::AttentionShape s = plain_shape(shape, mask);
  return k == Kernels::Fa2 ? fa2tc::backward_workspace_floats(s, fa2tc::DqPath::Atomic)
                           : fa3bwd::backward_workspace_floats(k == Kernels::Fa3 ? s : shape.resolved());
}

void backward(const ladder::AttentionShape& shape, const Variant& v, const bf16* Q, const bf16* K, const bf16* V,
              const bf16* O, const float* L, const bf16* dO, bf16* dQ, bf16* dK, bf16* dV, float* workspace,
              cudaStream_t stream) {
  check_parameters(v);
  check_variant_memory(v);
  const Kernels k = choose(shape, v.mask, v.score);
  const ladder::AttentionShape s = plain_shape(shape, v.mask);
  if (k == Kernels::Fa3) return fa3bwd::backward(s, Q, K, V, O, L, dO, dQ, dK, dV, workspace, stream);
  if (k == Kernels::Fa2)
    return fa2tc::backward(s, Q, K, V, O, L, dO, dQ, dK, dV, workspace, fa2tc::DqPath::Atomic, stream);
  const ladder::AttentionShape flex = shape.resolved();
  const variants::DeviceBlockMask& bm = block_mask(flex, v, variants::kBackwardB_r);
  with_functors(flex, v, [&](auto mask, auto score) {
    variants::backward(flex, mask, score, bm, Q, K, V, O, L, dO, dQ, dK, dV, workspace, stream);
  });
}

}  // namespace ops
