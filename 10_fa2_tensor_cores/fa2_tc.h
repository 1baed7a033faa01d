// Chapter 10: FlashAttention-2 on tensor cores (bf16 in, fp32 accumulation), forward and
// backward. Declared here, defined in fa2_tc_forward.cu and fa2_tc_backward.cu. No CUDA
// syntax: the executable, the tests and the benchmark include it from .cpp files.
//
// Layouts (PyTorch's, row-major, device pointers):
//   Q, O [B, H, N, d] bf16;  K, V [B, H_kv, N_kv, d] bf16;  L [B, H, N] fp32 (natural log)
//   query head h reads KV head h / (H / H_kv) (GQA; MQA is H_kv = 1), with no copies.
//   causal: query i sees keys j <= i + N_kv - N (aligned at the bottom right, as FA2 does).
//   A query that sees no key (causal with N > N_kv) gets O = 0 and L = -inf, never NaN.
// See ladder::AttentionShape (common/attention_shape.h) for the problem itself.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "attention_shape.h"
#include "bf16.h"

namespace fa2tc {

using ladder::bf16;

inline constexpr int kSupportedD[] = {64, 128};

// How O_i is normalised inside the loop over K_j, V_j: the lesson of note 004, on
// tensor cores. Both are instantiations of the same kernel.
//   FA2  O_i kept unnormalised: per step O_i *= alpha; one division by l_i at the end.
//   FA1  O_i kept normalised (Dao et al. 2022, Algorithm 1, line 12): per step
//        O_i *= l_i alpha, P~ *= beta, O_i += P~ V_j, O_i *= 1 / l_new.
enum class Normalisation { FA2, FA1 };
inline constexpr Normalisation kAllNormalisations[] = {Normalisation::FA2, Normalisation::FA1};
const char* name(Normalisation n);  // "fa2norm", "fa1norm"

// One compiled tile configuration. Index 0 of each list is the configuration the README
// measures; the others are the tuning sweep the benchmark measures (register with their names)
// and what a GPU with less shared memory runs instead.
struct TileConfig {
  std::string name;  // e.g. "w8_r16_c64_qreg"
  int B_r, B_c;      // query rows per block (forward) or per step (backward); keys per step / per block
  int warps;
  std::size_t smem_bytes;  // dynamic shared memory per block
};
std::vector<TileConfig> forward_configs(int d);
// Forward configurations only the benchmark runs (the default with one switch removed, to
// measure what each buys). Their indices continue forward_configs(d)'s.
std::vector<TileConfig> forward_ablations(int d);
std::vector<TileConfig> backward_configs(int d);

// config = kFits (the default): the first configuration, index 0 then the rest in the order
// of the lists, whose shared memory fits this GPU (ladder::device(); a launch that falls back
// says so once, on stderr). An index runs that configuration or is refused.
inline constexpr int kFits = -1;
// What kFits picks on a GPU that allows smem_per_block bytes per block; -1 when none fits.
// Pure arithmetic: the CPU tests ask it for a 4090's, an A100's and an H200's limits.
int forward_fit(int d, std::size_t smem_per_block);
int backward_fit(int d, std::size_t smem_per_block);

// Optional views into larger tensors (chapter 11 splits K/V along N_kv, chapter 13 passes
// shards): elements between the starts of consecutive heads (head index b*H + h, or
// b*H_kv + h for K/V). 0 = packed: N*d for Q and O, N_kv*d for K and V, N for L.
// Rows inside a head are always d elements apart.
struct Strides {
  std::int64_t q_head = 0, kv_head = 0, o_head = 0, l_head = 0;
};

struct ForwardOptions {
  Normalisation norm = Normalisation::FA2;
  int config = kFits;  // or an index into forward_configs(d), then forward_ablations(d)
  Strides strides = {};
};

// O = softmax(scale Q K^T) V, scale = 1/sqrt(d), and L = m + log(l) per query row.
// Throws std::invalid_argument (before any launch) for an unsupported d, a bad shape, a
// null pointer, or a pointer or stride not 16-byte aligned (cp.async moves 16 bytes).
void forward(const ladder::AttentionShape& s, const bf16* Q, const bf16* K, const bf16* V, bf16* O, float* L,
             cudaStream_t stream = nullptr);
void forward(const ladder::AttentionShape& s, const bf16* Q, const bf16* K, const bf16* V, bf16* O, float* L,
             const ForwardOptions& opt, cudaStream_t stream = nullptr);

// How dQ is summed over the key tiles (as in chapter 07):
//   Atomic         the dK/dV kernel also adds scale dS_ij K_j into an fp32 workspace with
//                  vector atomics; a last kernel rounds it to bf16 (the order of the
//                  additions, so the last bits, vary from run to run)
//   Deterministic  a second kernel, one block per Q_i tile, recomputes P and dS and sums
//                  dQ_i in registers in a fixed order (bit-identical runs)
enum class DqPath { Atomic, Deterministic };
inline constexpr DqPath kAllDqPaths[] = {DqPath::Atomic, DqPath::Deterministic};
const char* name(DqPath p);  // "atomic", "deterministic"

struct BackwardOptions {
  DqPath path = DqPath::Atomic;
  int config = kFits;  // or an index into backward_configs(d)
};

// fp32 workspace the backward needs, in floats: D [B, H, N], and on the atomic path
// the dQ accumulator [B, H, N, d] after it (16-byte aligned).
std::size_t backward_workspace_floats(const ladder::AttentionShape& s, DqPath path);

// Given the forward's O and L and the upstream gradient dO ([B, H, N, d] bf16), writes
// dQ [B, H, N, d], dK and dV [B, H_kv, N_kv, d] (bf16; GQA: summed over the query heads
// of each group). workspace: backward_workspace_floats(s, path) floats; D = rowsum(dO * O)
// is left in its first B*H*N floats. Throws std::invalid_argument before any launch for
// bad input, as forward().
void backward(const ladder::AttentionShape& s, const bf16* Q, const bf16* K, const bf16* V, const bf16* O,
              const float* L, const bf16* dO, bf16* dQ, bf16* dK, bf16* dV, float* workspace,
              DqPath path = DqPath::Atomic, cudaStream_t stream = nullptr);
void backward(const ladder::AttentionShape& s, const bf16* Q, const bf16* K, const bf16* V, const bf16* O,
              const float* L, const bf16* dO, bf16* dQ, bf16* dK, bf16* dV, float* workspace,
              const BackwardOptions& opt, cudaStream_t stream = nullptr);

// The same backward (the configuration kFits picks, atomic dQ), its gradients ADDED in fp32 to
// dQ_acc [B, H, N, d], dK_acc and dV_acc [B, H_kv, N_kv, d] instead of written in bf16: for
// a caller that sums several partial backwards (chapter 13's ring: one call per pair of a Q
// chunk and a K/V shard) and rounds once, at the end. dQ_acc receives scale dS K through the
// atomics, as the workspace does in backward(). workspace: B*H*N floats (D). The sums must
// be initialised (zeros) by the caller.
void backward_accumulate(const ladder::AttentionShape& s, const bf16* Q, const bf16* K, const bf16* V, const bf16* O,
                         const float* L, const bf16* dO, float* dQ_acc, float* dK_acc, float* dV_acc, float* workspace,
                         cudaStream_t stream = nullptr);

// The FA1-vs-FA2 normalisation in fp32 on CUDA cores, for the side-by-side: chapter 06's
// kernel (the same tiles, common/attention_tiles.cuh) with the same compile-time switch.
// fp32 [B, H, N, d], H_kv = H, N_kv = N; d in {64, 128}.
void forward_fp32(const ladder::AttentionShape& s, const float* Q, const float* K, const float* V, float* O, float* L,
                  Normalisation norm, cudaStream_t stream = nullptr);

namespace detail {
// The chapter's fast swizzled-address arithmetic (one XOR and an immediate per ldmatrix),
// checked on the host against tc::swizzle_128b for every lane and offset the kernels use.
// Returns an empty string when they agree, else the first mismatch.
std::string check_swizzle_addressing();
}  // namespace detail

}  // namespace fa2tc
