// Loopback: P virtual ranks on one GPU. A shift is a barrier of all the ranks' streams,
// then every copy on one stream of the transport's own, then every rank's stream waits for
// it. Coarser than NCCL's pairwise hand-off, and just as correct: no rank's buffer is
// overwritten before its predecessor's send of it has been copied.
#include <stdexcept>
#include <string>

#include "cuda_check.h"
#include "transport.h"

namespace ring {

namespace {

class Loopback final : public Transport {
 public:
  Loopback(int P, int dev) : P_(P), dev_(dev), ready_(P) {
    CUDA_CHECK(cudaSetDevice(dev_));
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    for (cudaEvent_t& e : ready_) CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    CUDA_CHECK(cudaEventCreateWithFlags(&done_, cudaEventDisableTiming));
  }
  ~Loopback() override {
    cudaSetDevice(dev_);
    for (cudaEvent_t e : ready_) cudaEventDestroy(e);
    cudaEventDestroy(done_);
    cudaStreamDestroy(stream_);
  }
  const char* name() const override { return "loopback"; }
  int ranks() const override { return P_; }
  int device(int) const override { return dev_; }

  void shift(const std::vector<std::vector<Message>>& msgs, const std::vector<cudaStream_t>& streams) override {
    if (static_cast<int>(msgs.size()) != P_ || static_cast<int>(streams.size()) != P_)
      throw std::invalid_argument("loopback shift: one message list and one stream per rank");
    CUDA_CHECK(cudaSetDevice(dev_));
    for (int r = 0; r < P_; ++r) {
      CUDA_CHECK(cudaEventRecord(ready_[r], streams[r]));
      CUDA_CHECK(cudaStreamWaitEvent(stream_, ready_[r], 0));
    }
    for (int r = 0; r < P_; ++r) {
      const auto& from = msgs[(r + P_ - 1) % P_];
      if (from.size() != msgs[r].size()) throw std::invalid_argument("loopback shift: ranks differ in messages");
      for (std::size_t i = 0; i < from.size(); ++i) {
        if (from[i].bytes != msgs[r][i].bytes) throw std::invalid_argument("loopback shift: message sizes differ");
        CUDA_CHECK(cudaMemcpyAsync(msgs[r][i].recv, from[i].send, from[i].bytes, cudaMemcpyDeviceToDevice, stream_));
      }
    }
    CUDA_CHECK(cudaEventRecord(done_, stream_));
    for (int r = 0; r < P_; ++r) CUDA_CHECK(cudaStreamWaitEvent(streams[r], done_, 0));
  }

 private:
  int P_, dev_;
  cudaStream_t stream_ = nullptr;
  std::vector<cudaEvent_t> ready_;
  cudaEvent_t done_ = nullptr;
};

}  // namespace

std::unique_ptr<Transport> make_loopback_transport(int P, int device) {
  // Checked before anything is sized by P or any CUDA call is made.
  if (P < 1) throw std::invalid_argument("loopback transport: P = " + std::to_string(P) + " ranks; P must be >= 1");
  const int n = visible_gpus();
  if (device < 0 || device >= n)
    throw std::invalid_argument("loopback transport: device " + std::to_string(device) + " of " + std::to_string(n) +
                                " visible GPU(s)" + (n == 0 ? " (no GPU: the CPU simulator runs without one)" : ""));
  return std::make_unique<Loopback>(P, device);
}

int visible_gpus() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the error: no GPU is an answer here, not a failure
    return 0;
  }
  return n;
}

}  // namespace ring
