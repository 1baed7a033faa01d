// cuDNN's fused attention (SDPA, built with the cuDNN frontend's graph API): the library the
// bf16 chapters (10, 12) are timed against in their own process, on the same buffers, with
// the same timer, as the matmul chapters are timed against cuBLAS.
//
// The problem is the ladder's own (attention_shape.h), in the kernels' layouts:
//   Q, O [B, H, N, d] bf16;  K, V [B, H_kv, N_kv, d] bf16;  L [B, H, N] fp32, natural log
//   (cuDNN's "Stats": m + ln l of the scaled scores, the L every kernel here writes);
//   scale 1/sqrt(d); GQA without copies; causal aligned at the bottom right: query i sees
//   keys j <= i + N_kv - N (cuDNN's BOTTOM_RIGHT diagonal with right bound 0).
// cuDNN refuses a causal shape with N > N_kv (queries that see no key): the reason then
// says so, and the kernels of the chapters are compared without it.
//
// Optional: built only when cmake/Cudnn.cmake found cuDNN 9 and the frontend's headers
// (scripts/fetch_cudnn_frontend.sh). Otherwise the same class says why in
// unavailable_reason(), so callers need no #ifdef.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <string>

#include "attention_shape.h"
#include "bf16.h"

namespace ladder {

class CudnnAttention {
 public:
  // The head dims it is compared at: the bf16 chapters' and chapter 12's FP8 at 256 (cuDNN itself
  // takes more).
  static constexpr int kSupportedD[] = {64, 128, 256};
  enum class Pass { Forward, Backward, ForwardFp8 };

  // "" when cuDNN's attention can run in this process; otherwise why not: not built (its
  // headers were not found at configure time), no GPU, or a cuDNN older than 9.
  static std::string unavailable_reason();
  // "cuDNN 9.19.0, frontend 1.32.0" ("" when not built).
  static std::string version();

  // Validates the shape (std::invalid_argument); touches no GPU.
  explicit CudnnAttention(const AttentionShape& s);
  ~CudnnAttention();
  CudnnAttention(const CudnnAttention&) = delete;
  CudnnAttention& operator=(const CudnnAttention&) = delete;

  // "" when cuDNN has an engine for this pass on this shape; otherwise why not (cuDNN's own
  // message, or unavailable_reason()). The first call per pass builds cuDNN's plan (its
  // heuristics, possibly a kernel compiled at run time: up to seconds); forward() and
  // backward() reuse it, so call this before timing them.
  std::string unsupported_reason(Pass pass);

  // O and L from Q, K, V. Throws std::invalid_argument before any launch when unsupported or
  // for a null, host or not 16-byte aligned pointer; std::runtime_error with cuDNN's
  // message when cuDNN fails.
  void forward(const bf16* Q, const bf16* K, const bf16* V, bf16* O, float* L, cudaStream_t stream = nullptr);
  // The forward on FP8 (e4m3) operands, as cuDNN takes them (its own samples' fp8_fwd): Q8, K8, V8
  // in the bf16 layouts, each with one descale (a device scalar: real = stored x descale), P
  // quantised to e4m3 with scale 448 (P <= 1), O written in e4m3 with scale 1 (|O| <= max |V|),
  // L as forward(). The anchor of chapter 12's FP8 forward; throws as forward().
  void forward_fp8(const std::uint8_t* Q8, const std::uint8_t* K8, const std::uint8_t* V8, const float* descale_q,
                   const float* descale_k, const float* descale_v, std::uint8_t* O8, float* L,
                   cudaStream_t stream = nullptr);
  // dQ [B, H, N, d], dK and dV [B, H_kv, N_kv, d] (GQA: summed over each group's query
  // heads) from the forward's O and L and the upstream gradient dO. Throws as forward().
  void backward(const bf16* Q, const bf16* K, const bf16* V, const bf16* O, const float* L, const bf16* dO, bf16* dQ,
                bf16* dK, bf16* dV, cudaStream_t stream = nullptr);

  const AttentionShape& shape() const { return s_; }

 private:
  struct Plans;  // cuDNN's graphs and the workspace they share (cudnn_attention.cpp)
  AttentionShape s_;
  std::unique_ptr<Plans> plans_;
};

// For the executables' summary lines: "= 0.93x cuDNN" (cuDNN's time over this one's: above 1
// is faster than cuDNN), or "(cuDNN n/a)" when cuDNN was not timed (cudnn_ms <= 0).
std::string versus_cudnn(double ms, double cudnn_ms);

}  // namespace ladder
