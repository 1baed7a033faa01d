// NCCL: one communicator per GPU, all created by this process (ncclCommInitAll) and driven
// from one host thread. With one thread managing several GPUs, NCCL requires the calls of
// all ranks inside one group: ncclGroupEnd then launches every rank's send/recv kernels,
// each on its rank's communication stream, and returns without waiting.
// Built only when CMake finds NCCL (the chapter's CMakeLists.txt picks this file or
// transport_nccl_stub.cpp). Asynchronous NCCL errors (ncclCommGetAsyncError) are not polled:
// a failing peer shows up as a CUDA error or a hang of the next synchronisation.
#include <nccl.h>

#include <stdexcept>
#include <string>

#include "cuda_check.h"
#include "transport.h"

#define NCCL_CHECK(call)                                                                                               \
  do {                                                                                                                 \
    const ncclResult_t ring_nccl_ = (call);                                                                            \
    if (ring_nccl_ != ncclSuccess)                                                                                     \
      throw std::runtime_error(std::string(#call) + " failed: " + ncclGetErrorString(ring_nccl_) + " at " + __FILE__ + \
                               ":" + std::to_string(__LINE__));                                                        \
  } while (0)

namespace ring {

namespace {

class Nccl final : public Transport {
 public:
  explicit Nccl(int P) : comms_(P) {
    std::vector<int> devs(P);
    for (int r = 0; r < P; ++r) devs[r] = r;
    NCCL_CHECK(ncclCommInitAll(comms_.data(), P, devs.data()));
  }
  ~Nccl() override {
    for (ncclComm_t c : comms_) ncclCommDestroy(c);
  }
  const char* name() const override { return "nccl"; }
  int ranks() const override { return static_cast<int>(comms_.size()); }
  int device(int rank) const override { return rank; }

  void shift(const std::vector<std::vector<Message>>& msgs, const std::vector<cudaStream_t>& streams) override {
    const int P = ranks();
    if (static_cast<int>(msgs.size()) != P || static_cast<int>(streams.size()) != P)
      throw std::invalid_argument("nccl shift: one message list and one stream per rank");
    NCCL_CHECK(ncclGroupStart());
    try {
      for (int r = 0; r < P; ++r)
        for (const Message& m : msgs[r]) {
          NCCL_CHECK(ncclSend(m.send, m.bytes, ncclUint8, (r + 1) % P, comms_[r], streams[r]));
          NCCL_CHECK(ncclRecv(m.recv, m.bytes, ncclUint8, (r + P - 1) % P, comms_[r], streams[r]));
        }
    } catch (...) {
      ncclGroupEnd();  // never leave the group open: every later NCCL call would join it
      throw;
    }
    NCCL_CHECK(ncclGroupEnd());
  }

 private:
  std::vector<ncclComm_t> comms_;
};

}  // namespace

bool nccl_built() { return true; }

std::unique_ptr<Transport> make_nccl_transport(int P) {
  if (P < 1) throw std::invalid_argument("nccl transport: P = " + std::to_string(P) + " ranks; P must be >= 1");
  const int n = visible_gpus();
  if (P > n)
    throw std::invalid_argument("nccl transport: P = " + std::to_string(P) + " ranks need P GPUs; " +
                                std::to_string(n) + " visible (use the loopback transport on one GPU)");
  return std::make_unique<Nccl>(P);
}

}  // namespace ring
