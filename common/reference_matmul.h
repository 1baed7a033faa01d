// fp64 reference for C = A B (row-major A [M, K], B [K, N]), computed by Eigen.
#pragma once

#include <vector>

namespace ladder {

std::vector<double> matmul_reference(const std::vector<float>& A, const std::vector<float>& B, int M, int N, int K);

}  // namespace ladder
