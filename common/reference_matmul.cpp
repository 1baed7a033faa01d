#include "reference_matmul.h"

#include <Eigen/Dense>
#include <stdexcept>

namespace ladder {

using RowMajorF = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using RowMajorD = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

std::vector<double> matmul_reference(const std::vector<float>& A, const std::vector<float>& B, int M, int N, int K) {
  if (A.size() != std::size_t(M) * K || B.size() != std::size_t(K) * N)
    throw std::invalid_argument("matmul_reference: A or B does not match M, N, K");
  std::vector<double> C(std::size_t(M) * N);
  Eigen::Map<RowMajorD>(C.data(), M, N) = Eigen::Map<const RowMajorF>(A.data(), M, K).cast<double>() *
                                          Eigen::Map<const RowMajorF>(B.data(), K, N).cast<double>();
  return C;
}

std::vector<double> matmul_reference_bt(const std::vector<float>& A, const std::vector<float>& Bt, int M, int N,
                                        int K) {
  if (A.size() != std::size_t(M) * K || Bt.size() != std::size_t(N) * K)
    throw std::invalid_argument("matmul_reference_bt: A or B^T does not match M, N, K");
  std::vector<double> C(std::size_t(M) * N);
  Eigen::Map<RowMajorD>(C.data(), M, N) = Eigen::Map<const RowMajorF>(A.data(), M, K).cast<double>() *
                                          Eigen::Map<const RowMajorF>(Bt.data(), N, K).cast<double>().transpose();
  return C;
}

}  // namespace ladder
