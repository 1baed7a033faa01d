// fp64 reference for the row-wise softmax of an R x C fp32 matrix (Eigen),
// computed the safe way: exp(x - rowmax) / sum. Rows of all -inf are not defined.
#pragma once

#include <vector>

namespace ladder {

std::vector<double> softmax_reference(const std::vector<float>& X, int R, int C);

}  // namespace ladder
