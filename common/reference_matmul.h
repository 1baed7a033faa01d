// fp64 reference for C = A B (row-major A [M, K], B [K, N] or B^T [N, K]), computed by Eigen.
#pragma once

#include <vector>

namespace ladder {

std::vector<double> matmul_reference(const std::vector<float>& A, const std::vector<float>& B, int M, int N, int K);
// The same with B given as B^T [N, K] row-major (the K-major layout of chapter 09).
std::vector<double> matmul_reference_bt(const std::vector<float>& A, const std::vector<float>& Bt, int M, int N, int K);

}  // namespace ladder
