// Chapter 16: the ladder's kernels behind one entry point per direction, as an operator library
// needs them. A framework asks for "attention with this mask on these tensors"; which chapter's
// kernel answers is decided here, on the host, before any launch:
//   dense or causal          chapter 12's forward and chapter 14's backward (FA3, sm_90a)
//   another mask, a score    chapter 15's forward and backward with that mask and modifier
//     modifier, documents    compiled in (FlexAttention's idea; sm_90a)
//   dense or causal on a     chapter 10's forward and backward (FA2 on mma.sync, sm_80 and later)
//     GPU without sm_90a
// Decoding is chapter 11's split-KV kernel (fdec::decode), called as it is.
// Layouts are the chapters' (PyTorch's SDPA layout): Q, O, dQ [B, H, N, d]; K, V, dK, dV
// [B, H_kv, N_kv, d]; L [B, H, N] fp32 (natural log). No CUDA syntax: the bindings and the tests
// include it from .cpp files.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>

#include "attention_shape.h"
#include "bf16.h"

namespace ops {

using ladder::bf16;

// The masks of chapter 15 a caller can name. Key k is visible from query q when
//   Causal          k <= q + N_kv - N (bottom-right aligned, as chapters 10-15)
//   SlidingWindow   q + N_kv - N - left <= k <= q + N_kv - N + right
//   PrefixLM        k < prefix, or k <= q
//   Documents       doc[q] == doc[k] and k <= q: packed sequences, each causal (varlen batches)
enum class Mask { None, Causal, SlidingWindow, PrefixLM, Documents };
// The score modifiers: Softcap s -> cap tanh(s / cap) (Gemma 2); Alibi s -> s + m_h (k - q - N_kv + N).
// Both on a causal mask, as the models that use them do.
enum class ScoreMod { None, Softcap, Alibi };
Mask mask_from_name(const std::string& name);           // "none", "causal", "sliding_window", "prefix_lm", "documents"
ScoreMod score_mod_from_name(const std::string& name);  // "none", "softcap", "alibi"

struct Variant {
  Mask mask = Mask::None;
  int window_left = 0, window_right = 0;  // SlidingWindow
  int prefix = 0;                         // PrefixLM
  const int* doc = nullptr;               // Documents: [B, N] int32 on the device, the document of every position
  ScoreMod score = ScoreMod::None;
  float softcap = 0.0f;           // Softcap: the cap (> 0)
  const float* slopes = nullptr;  // Alibi: [H] fp32 on the device
};

// Which chapter's kernels run a call.
enum class Kernels { Fa3, Flex, Fa2 };
const char* name(Kernels k);  // "fa3 (chapters 12, 14)", "flex (chapter 15)", "fa2 (chapter 10)"

// The choice, as pure arithmetic on the mask, the modifier and what the GPU offers (hopper: this
// process can run sm_90a code; any_gpu: a GPU of compute capability 8.0 or later). Throws
// std::invalid_argument naming what is supported: the shape (chapters 12/14/10's checks: d in
// {64, 128}), a modifier without the causal mask, documents with N_kv != N, a variant on a GPU
// without sm_90a.
Kernels choose(const ladder::AttentionShape& s, Mask mask, ScoreMod score, bool hopper, bool any_gpu);
// The same, for this process's GPU.
Kernels choose(const ladder::AttentionShape& s, Mask mask, ScoreMod score);

// The variant's parameters (a window's bounds, a prefix, a cap, the document ids and the slopes
// present): throws std::invalid_argument naming the bad one. forward() and backward() call it.
void check_parameters(const Variant& v);

// O and L. Every check of the chosen chapter runs before its launch (null or misaligned pointers).
void forward(const ladder::AttentionShape& s, const Variant& v, const bf16* Q, const bf16* K, const bf16* V, bf16* O,
             float* L, cudaStream_t stream);

// The fp32 workspace backward() needs, in floats (the chosen chapter's).
std::size_t backward_workspace_floats(const ladder::AttentionShape& s, Mask mask, ScoreMod score);

// dQ, dK, dV from the forward's O and L and the upstream dO (GQA: dK, dV summed over each group).
void backward(const ladder::AttentionShape& s, const Variant& v, const bf16* Q, const bf16* K, const bf16* V,
              const bf16* O, const float* L, const bf16* dO, bf16* dQ, bf16* dK, bf16* dV, float* workspace,
              cudaStream_t stream);

}  // namespace ops
