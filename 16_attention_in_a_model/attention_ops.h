// Chapter 16: the ladder's kernels behind one entry point per direction, as an operator library
// needs them. A framework asks for "attention with this mask on these tensors"; which chapter's
// kernel answers is decided here, on the host, before any launch:
//   dense or causal          chapter 12's forward and chapter 14's backward (FA3, sm_90a)
//   another mask, a score    chapter 15's forward and backward with that mask and modifier
//     modifier, documents    compiled in (FlexAttention's idea; sm_90a)
//   dense or causal on a     chapter 10's forward and backward (FA2 on mma.sync, sm_80 and later)
//     GPU without sm_90a
// Decoding is chapter 11's split-KV kernel (fdec::decode), after one launch that appends the step's
// new keys and values to the cache (decode_step.cu).
// Layouts are the chapters' (PyTorch's SDPA layout): Q, O, dQ [B, H, N, d]; K, V, dK, dV
// [B, H_kv, N_kv, d]; L [B, H, N] fp32 (natural log). No CUDA syntax: the bindings and the tests
// include it from .cpp files.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>

#include "11_flash_decoding/flash_decoding.h"
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
// present and 4-byte aligned): throws std::invalid_argument naming the bad one. forward() and
// backward() call it, then ask the driver that the ids and the slopes are device memory.
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

// ---- decoding ----------------------------------------------------------------------------------
// A KV cache that a decoding step writes and reads, in chapter 11's layouts: contiguous (block_table
// null; `capacity` keys per (b, h_kv) slab) or paged (pages of page_size keys, block_table
// [B, max_pages_per_seq] naming them).
struct KvCache {
  bf16* K = nullptr;
  bf16* V = nullptr;
  int capacity = 0;
  const int* block_table = nullptr;
  int num_pages = 0, page_size = 0, max_pages_per_seq = 0;
  fdec::KvCache view() const;  // chapter 11's read-only view of the same storage
};

// K_new, V_new [B, H_kv, n_new, d] into the cache at positions seq_lens[b] .. seq_lens[b] + n_new - 1
// of sequence b, and seq_lens_after[b] = seq_lens[b] + n_new when seq_lens_after is not null. One
// launch: at batch 1 a decoding step is host-bound, and PyTorch's indexing spreads this copy over a
// dozen operations. A position the cache does not hold (or a block-table entry outside the pool) is
// not written; decode() clamps the lengths to the cache the same way. Throws std::invalid_argument
// before any launch for a bad shape, layout or pointer.
void append_kv(const KvCache& c, int B, int H_kv, int d, const int* seq_lens, const bf16* K_new, const bf16* V_new,
               int n_new, int* seq_lens_after, cudaStream_t stream);

// One decoding step as flash_attn_with_kvcache takes it: n_new keys and values per sequence appended
// (0: none), then chapter 11's decode of s.n_q queries over the lengths after the append. seq_lens
// [B] int32 counts the keys cached before the step and is not advanced (the caller owns it). O
// [B, H_q, n_q, d]; workspace: decode_workspace_bytes(s) bytes (chapter 11's partials, the LSE and
// the lengths after the append), 16-byte aligned.
std::size_t decode_workspace_bytes(const fdec::DecodeShape& s);
void decode(const fdec::DecodeShape& s, const bf16* Q, const KvCache& c, const int* seq_lens, const bf16* K_new,
            const bf16* V_new, int n_new, bf16* O, void* workspace, cudaStream_t stream);

}  // namespace ops
