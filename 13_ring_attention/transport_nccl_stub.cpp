// Built instead of transport_nccl.cpp when CMake found no NCCL: the loopback transport and
// every CPU part still work; asking for NCCL says why it is missing.
#include <stdexcept>
#include <string>

#include "transport.h"

namespace ring {

bool nccl_built() { return false; }

std::unique_ptr<Transport> make_nccl_transport(int P) {
  if (P < 1) throw std::invalid_argument("nccl transport: P = " + std::to_string(P) + " ranks; P must be >= 1");
  throw std::invalid_argument(
      "nccl transport: this build has no NCCL (CMake found no nccl.h / libnccl next to the CUDA Toolkit); "
      "reconfigure with NCCL installed, or use the loopback transport");
}

}  // namespace ring
