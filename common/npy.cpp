#include "npy.h"

#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace ladder {

namespace {
template <class T>
void write(const std::string& path, const char* descr, const T* data, const std::vector<std::size_t>& shape) {
  std::size_t count = 1;
  std::string dims;
  for (std::size_t s : shape) {
    count *= s;
    dims += (dims.empty() ? "" : ", ") + std::to_string(s);
  }
  if (shape.size() == 1) dims += ",";  // a 1-tuple is "(3,)" in Python
  std::string header = "{'descr': '" + std::string(descr) + "', 'fortran_order': False, 'shape': (" + dims + "), }";
  // Magic (6) + version (2) + header length (2) + header + '\n' must be a multiple of 64.
  const std::size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::ofstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot write " + path);
  const unsigned short len = static_cast<unsigned short>(header.size());
  f.write("\x93NUMPY\x01\x00", 8);
  f.put(static_cast<char>(len & 0xFF));
  f.put(static_cast<char>(len >> 8));
  f << header;
  f.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(count * sizeof(T)));
  if (!f) throw std::runtime_error("short write to " + path);
}
}  // namespace

void write_npy(const std::string& path, const float* data, const std::vector<std::size_t>& shape) {
  write(path, "<f4", data, shape);
}
void write_npy(const std::string& path, const double* data, const std::vector<std::size_t>& shape) {
  write(path, "<f8", data, shape);
}

Dumper::Dumper(std::string dir) : dir_(std::move(dir)) {
  if (enabled()) std::filesystem::create_directories(dir_);
}
void Dumper::operator()(const std::string& name, const std::vector<float>& v,
                        const std::vector<std::size_t>& shape) const {
  if (enabled()) write_npy(dir_ + "/" + name + ".npy", v.data(), shape);
}
void Dumper::operator()(const std::string& name, const std::vector<double>& v,
                        const std::vector<std::size_t>& shape) const {
  if (enabled()) write_npy(dir_ + "/" + name + ".npy", v.data(), shape);
}

}  // namespace ladder
