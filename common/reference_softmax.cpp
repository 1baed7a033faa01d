#include "reference_softmax.h"

#include <Eigen/Dense>
#include <stdexcept>

namespace ladder {

std::vector<double> softmax_reference(const std::vector<float>& X, int R, int C) {
  if (X.size() != std::size_t(R) * C) throw std::invalid_argument("softmax_reference: X does not match R x C");
  using RowMajorF = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  using RowMajorD = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const RowMajorD x = Eigen::Map<const RowMajorF>(X.data(), R, C).cast<double>();
  RowMajorD e = (x.colwise() - x.rowwise().maxCoeff()).array().exp();
  e.array().colwise() /= e.rowwise().sum().array();
  return std::vector<double>(e.data(), e.data() + e.size());
}

}  // namespace ladder
