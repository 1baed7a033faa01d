// Host-side pieces the executable, the tests and the benchmark share: chapter 10's bf16
// problem (inputs rounded to bf16, so the fp64 reference sees what the GPU sees) on the device,
// with O and L from chapter 12's forward, as in training, and the gradients of this chapter's
// backward (or chapter 10's, for the side by side), outputs poisoned before every run.
#pragma once

#include <vector>

#include "10_fa2_tensor_cores/fa2_tc_problem.h"
#include "device_buffer.h"
#include "fa3_bwd.h"

namespace fa3bwd {

using fa2tc::make_problem;
using fa2tc::Problem;

struct OnDevice {
  ladder::AttentionShape s;
  ladder::DeviceBuffer<bf16> Q, K, V, dO, O, dQ, dK, dV;
  ladder::DeviceBuffer<float> L, workspace, workspace10;
  // Outputs are poisoned before every run, so that an element a kernel skips cannot pass a
  // check. Timed runs turn it off: a memset inside the timed region would be timed with the kernel.
  bool poison = true;
  explicit OnDevice(const Problem& p);
  void forward();                                  // chapter 12's forward: O, L
  void backward(const BackwardOptions& opt = {});  // this chapter's
  void backward_fa2();                             // chapter 10's, on the same O and L
  std::vector<float> dQ_host() const;
  std::vector<float> dK_host() const;
  std::vector<float> dV_host() const;
  std::vector<float> O_host() const;
};

}  // namespace fa3bwd
