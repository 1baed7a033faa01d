// Chapter 11's kernel exercise (exercises/README.md): the split combine. Each split of a row's
// keys left a partial (O_s, LSE_s); one warp per row merges them with the log-sum-exp trick,
// as flash_decoding.cu's combine_kernel does, written by you in mine.cu.
//   build/bin/11_flash_decoding_exercise --gtest_filter='Exercise*'   yours (target 11_flash_decoding_exercise)
//   build/bin/11_flash_decoding_test --gtest_filter='GpuExercise*'    the solution and the wrong answers
#pragma once

#include <cuda_runtime_api.h>

namespace fdec_kernel_exercise {
inline constexpr int kSupportedD[] = {64, 128};  // the chapter's head dims: d / 32 columns per lane
inline constexpr int kMaxSplits = 1024;          // as fdec::kMaxSplits
inline constexpr int kWarps = 8;                 // warps (rows) per thread block, as the chapter's kCombineWarps
}  // namespace fdec_kernel_exercise

// The layouts are the chapter's workspace (flash_decoding.cu, Params), row-major, fp32, device
// pointers:
//   O_part    [rows][splits][d]  O_s: split s's output, already divided by its own l_s
//   lse_part  [rows][splits]     LSE_s = m_s + log l_s (natural log) of the keys split s saw;
//                                -inf for a split that saw no key, whose O_s is then 0
//   O         [rows][d]          O = sum_s exp(LSE_s - LSE) O_s   (fp32 here; the chapter stores bf16)
//   LSE       [rows]             LSE = log sum_s exp(LSE_s); a row whose every split saw no key
//                                gets O = 0 and LSE = -inf, never NaN
//
// mine.cu, solution.cu and each wrong answer in wrong/ define these two, each in its own namespace:
//   kImplemented  false in the stub as given: the test stops at "unimplemented" until it is true
//   combine       the merge above, one warp per row. Throws std::invalid_argument before any launch
//                 for d not in {64, 128}, splits outside 1..kMaxSplits, rows < 1, a null pointer
//                 or one not 4-byte aligned.
#define FDEC_KERNEL_EXERCISE                                                                                  \
  extern const bool kImplemented;                                                                             \
  void combine(const float* O_part, const float* lse_part, float* O, float* LSE, int rows, int splits, int d, \
               cudaStream_t stream)

namespace mine {
FDEC_KERNEL_EXERCISE;
}
namespace solution {
FDEC_KERNEL_EXERCISE;
}
namespace wrong_max_not_subtracted {  // wrong/max_not_subtracted.cu
FDEC_KERNEL_EXERCISE;
}
namespace wrong_lse_is_the_max {  // wrong/lse_is_the_max.cu
FDEC_KERNEL_EXERCISE;
}
namespace wrong_no_key_row_unguarded {  // wrong/no_key_row_unguarded.cu
FDEC_KERNEL_EXERCISE;
}
