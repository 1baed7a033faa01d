// The host side every matmul chapter's executable shares (02, 03, 09): a random
// problem, the checks against fp64 references, and the timing table against cuBLAS
// measured in the same run. No CUDA syntax, no Eigen.
//
// Two families, one harness, picked by the input element type In:
//   In = float        fp32 A [M, K] and B [K, N], row-major (chapters 02, 03),
//                     against cuBLAS SGEMM (fp32, no TF32), bound kFp32
//   In = ladder::bf16 bf16 A [M, K] and B stored as B^T, [N, K] row-major: both operands
//                     K-major, as mma's B fragment, wgmma and TMA want it (chapter 09);
//                     against cuBLAS GemmEx (bf16 in, fp32 compute and out), bound
//                     bf16_gemm_bound(K)
// C is fp32 [M, N] row-major in both.
#pragma once

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "bf16.h"
#include "cli.h"
#include "compare.h"
#include "device_buffer.h"
#include "npy.h"
#include "timing.h"

namespace mm {

struct Shape {
  int M, N, K;
  std::string str() const;  // "M=4096 N=4096 K=4096"
};

// --M, --N, --K, each in [1, kMaxDim], defaulting to `fallback`.
inline constexpr int kMaxDim = 65536;
Shape shape_flags(ladder::Args& args, Shape fallback);
inline constexpr const char* kShapeUsage =
    "  --M M --N N --K K   C[M,N] = A[M,K] B[K,N], each 1..65536 (default 4096)\n"
    "  --repeats R         timed repeats per kernel (default 10)\n";

// Every kernel is also checked in full at this shape, which is small enough for
// the fp64 Eigen reference and a multiple of no tile size.
inline constexpr Shape kCheckShape{1021, 1031, 1019};

// How B is stored.
enum class BLayout {
  KxN,  // B [K, N] row-major
  NxK,  // B^T [N, K] row-major (K-major)
};
template <class In>
struct Family;
template <>
struct Family<float> {
  static constexpr BLayout kB = BLayout::KxN;
  static constexpr const char* kAnchor = "cuBLAS";
  static constexpr const char* kAnchorNote = "(anchor: cuBLAS SGEMM, fp32, no TF32)";
  static ladder::Bound bound(long /*K*/) { return ladder::kFp32; }
};
template <>
struct Family<ladder::bf16> {
  static constexpr BLayout kB = BLayout::NxK;
  static constexpr const char* kAnchor = "cuBLAS bf16";
  static constexpr const char* kAnchorNote = "(anchor: cuBLAS GemmEx, bf16 in, fp32 compute and out)";
  static ladder::Bound bound(long K) { return ladder::bf16_gemm_bound(K); }
};

// One way to compute C = A B on the device (device pointers, layouts as above).
template <class In>
struct Contender {
  std::string name;
  std::function<void(int M, int N, int K, const In* A, const In* B, float* C)> run;
};
// A chapter's kernels as contenders, in ladder order: `all` its kernel enum values,
// name(k) their names, matmul(k, M, N, K, A, B, C) the chapter's launcher.
template <class In, class Kernels, class Name, class Matmul>
std::vector<Contender<In>> contenders(const Kernels& all, Name name, Matmul matmul) {
  std::vector<Contender<In>> out;
  for (auto k : all)
    out.push_back({name(k), [k, matmul](int M, int N, int K, const In* A, const In* B, float* C) {
                     matmul(k, M, N, K, A, B, C, nullptr);
                   }});
  return out;
}
// The cuBLAS anchor of the family, measured in the same run.
template <class In>
Contender<In> cublas_contender();

// Random A, B in [-1, 1) (for bf16: rounded, and the reference sees the rounded values),
// on the host as fp32 and on the device as In, and room for C.
template <class In>
struct Problem {
  Problem(Shape s, std::uint64_t seed);
  Shape s;
  std::vector<float> A, B;  // B as stored: [K, N] or [N, K] (Family<In>::kB)
  ladder::DeviceBuffer<In> dA, dB;
  ladder::DeviceBuffer<float> dC;
};

// Each contender on one random problem of shape `s` (C poisoned before each run),
// every element of C against the fp64 Eigen reference.
template <class In>
void check_full(ladder::Report& report, const std::vector<Contender<In>>& contenders, Shape s, std::uint64_t seed,
                const ladder::Dumper& dump);

// For shapes too large for the full reference: `count` rows of C (the first, the
// last and random ones between) against fp64 dot products.
template <class In>
void check_rows(ladder::Report& report, const std::vector<Contender<In>>& contenders, Problem<In>& p, int count,
                std::uint64_t seed);

// The rows check_rows picks, sorted: 0, M - 1, and random rows between.
std::vector<int> sample_rows(int M, int count, std::uint64_t seed);
// fp64 C[r, :] = sum_k A[r, k] B[k, :] for each r in rows, concatenated; B stored as `b`.
std::vector<double> reference_rows(const std::vector<float>& A, const std::vector<float>& B, int N, int K,
                                   const std::vector<int>& rows, BLayout b = BLayout::KxN);

struct Result {
  std::string name;
  ladder::Timing t;
  double tflops;
};
struct Race {
  std::vector<Result> kernels;
  Result anchor;
};
// ladder::time_gpu of every kernel, then of the anchor, on the same problem.
template <class In>
Race time_all(const std::vector<Contender<In>>& kernels, const Contender<In>& anchor, Problem<In>& p,
              const ladder::TimingOptions& opt);

// Prints the table (ms, TFLOP/s, fraction of the anchor) and returns the summary line:
// "best <kernel> <T> TFLOP/s = <f>x <anchor> (<T> TFLOP/s), M=.. N=.. K=..".
template <class In>
std::string print_race(std::ostream& out, const Race& race, Shape s);

}  // namespace mm
