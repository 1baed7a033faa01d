// How the ring moves a shard from rank r to rank r+1. The ring (ring.h) only ever asks
// for one collective step, a shift: every rank sends to its successor and receives from
// its predecessor at the same time, enqueued on each rank's communication stream.
//   NCCL      one GPU per rank (devices 0..P-1), one communicator per GPU, driven from one
//             host thread: ncclGroupStart; per rank ncclSend + ncclRecv; ncclGroupEnd.
//   loopback  P virtual ranks on one GPU, shards copied with cudaMemcpyAsync on a stream of
//             its own: the whole GPU ring (schedule, double buffers, merges, dK/dV travel)
//             testable on a single GPU.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>
#include <vector>

namespace ring {

struct Message {
  const void* send;  // on this rank's device: goes to rank r+1
  void* recv;        // on this rank's device: comes from rank r-1
  std::size_t bytes;
};

class Transport {
 public:
  virtual ~Transport() = default;
  virtual const char* name() const = 0;
  virtual int ranks() const = 0;
  virtual int device(int rank) const = 0;
  // For every rank r and message i: msgs[r][i].send -> rank (r+1) mod P's msgs[..][i].recv.
  // Enqueued on streams[r] (rank r's stream, on device(r)); returns without waiting. Every
  // rank passes the same number of messages with the same sizes.
  virtual void shift(const std::vector<std::vector<Message>>& msgs, const std::vector<cudaStream_t>& streams) = 0;
};

// P virtual ranks on `device`. Throws std::invalid_argument, before any CUDA call, for P < 1
// or a device that is not there (no GPU at all included).
std::unique_ptr<Transport> make_loopback_transport(int P, int device = 0);

// True when the chapter was built with NCCL (CMake found nccl.h and libnccl).
bool nccl_built();
// P ranks on devices 0..P-1. Throws std::invalid_argument for P < 1, when NCCL is not built
// in, or when fewer than P GPUs are visible.
std::unique_ptr<Transport> make_nccl_transport(int P);

int visible_gpus();  // 0 without a driver or device

}  // namespace ring
