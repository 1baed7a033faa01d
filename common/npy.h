// --dump DIR: inputs and outputs as .npy (NumPy's format, version 1.0), so a
// learner can load them with numpy.load or torch.from_numpy.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace ladder {

void write_npy(const std::string& path, const float* data, const std::vector<std::size_t>& shape);
void write_npy(const std::string& path, const double* data, const std::vector<std::size_t>& shape);

// Writes DIR/<name>.npy when a directory was given; does nothing otherwise.
class Dumper {
 public:
  explicit Dumper(std::string dir);
  bool enabled() const { return !dir_.empty(); }
  void operator()(const std::string& name, const std::vector<float>& v, const std::vector<std::size_t>& shape) const;
  void operator()(const std::string& name, const std::vector<double>& v, const std::vector<std::size_t>& shape) const;

 private:
  std::string dir_;
};

}  // namespace ladder
