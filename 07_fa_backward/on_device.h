// One attention problem on the device, as the backward sees it in training: the inputs,
// O and L from the chapter-06 forward, the upstream gradient dO, the gradients and the
// workspace D. Shared by the executable, the tests and the benchmark.
#pragma once

#include <vector>

#include "06_fa2_forward/fa_forward.h"
#include "attention_inputs.h"
#include "device_buffer.h"
#include "fa_backward.h"

namespace fa2 {

struct OnDevice {
  ladder::AttentionShape s;
  ladder::DeviceBuffer<float> Q, K, V, dO, O, L, dQ, dK, dV, D;
  // Outputs are poisoned before every run, so that an element a kernel skips cannot pass a
  // check. Timed runs turn it off: a memset inside the timed region would be timed with the kernel.
  bool poison = true;

  // Uploads x (with dO) and runs the forward: O and L poisoned first, so a forward that
  // skipped an element cannot pass unnoticed.
  OnDevice(const ladder::AttentionShape& shape, const ladder::AttentionInputs& x)
      : s(shape),
        Q(x.Q),
        K(x.K),
        V(x.V),
        dO(x.dO),
        O(s.elems()),
        L(s.rows()),
        dQ(s.elems()),
        dK(s.elems()),
        dV(s.elems()),
        D(s.rows()) {
    O.poison();
    L.poison();
    forward();
  }
  void forward() { fa2::forward(s, Q.data(), K.data(), V.data(), O.data(), L.data()); }
  // The gradients and D poisoned, then the backward.
  void backward(DqPath path, Summation sum = Summation::TwoLevel) {
    if (poison) dQ.poison(), dK.poison(), dV.poison(), D.poison();
    fa2::backward(s, Q.data(), K.data(), V.data(), O.data(), L.data(), dO.data(), dQ.data(), dK.data(), dV.data(),
                  D.data(), path, sum);
  }
  struct Grads {
    std::vector<float> dQ, dK, dV, D;
  };
  Grads grads() const { return {dQ.download(), dK.download(), dV.download(), D.download()}; }
};

}  // namespace fa2
