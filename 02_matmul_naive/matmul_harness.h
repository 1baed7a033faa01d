// The host side that the executables of chapters 02 and 03 share (03 includes this
// file): a random problem, the checks against fp64 references, and the timing table
// against cuBLAS measured in the same run. No CUDA syntax, no Eigen.
#pragma once

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "cli.h"
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

// One way to compute C = A B on the device (row-major, device pointers).
struct Contender {
  std::string name;
  std::function<void(int M, int N, int K, const float* A, const float* B, float* C)> run;
};
// cuBLAS SGEMM in fp32 (no TF32): the anchor, measured in the same run.
Contender cublas_contender();
// This chapter's kernels, in ladder order (chapter 03 runs them too).
std::vector<Contender> naive_contenders();

// Random A, B in [-1, 1) on the host and the device, and room for C.
struct Problem {
  Problem(Shape s, std::uint64_t seed);
  Shape s;
  std::vector<float> A, B;
  ladder::DeviceBuffer<float> dA, dB, dC;
};

// Each contender on one random problem of shape `s` (C poisoned before each run),
// every element of C against the fp64 Eigen reference.
void check_full(ladder::Report& report, const std::vector<Contender>& contenders, Shape s, std::uint64_t seed,
                const ladder::Dumper& dump);

// For shapes too large for the full reference: `count` rows of C (the first, the
// last and random ones between) against fp64 dot products.
void check_rows(ladder::Report& report, const std::vector<Contender>& contenders, Problem& p, int count,
                std::uint64_t seed);

// The rows check_rows picks, sorted: 0, M - 1, and random rows between.
std::vector<int> sample_rows(int M, int count, std::uint64_t seed);
// fp64 C[r, :] = sum_k A[r, k] B[k, :] for each r in rows, concatenated.
std::vector<double> reference_rows(const std::vector<float>& A, const std::vector<float>& B, int N, int K,
                                   const std::vector<int>& rows);

struct Result {
  std::string name;
  ladder::Timing t;
  double tflops;
};
struct Race {
  std::vector<Result> kernels;
  Result anchor;
};
// ladder::time_gpu of every kernel and the anchor on the same problem.
Race time_all(const std::vector<Contender>& kernels, const Contender& anchor, Problem& p,
              const ladder::TimingOptions& opt);

// Prints the table (ms, TFLOP/s, fraction of the anchor) and returns the summary
// line: "best <kernel> <T> TFLOP/s = <f>x cuBLAS (<T> TFLOP/s), M=.. N=.. K=..".
std::string print_race(std::ostream& out, const Race& race, Shape s);

}  // namespace mm
