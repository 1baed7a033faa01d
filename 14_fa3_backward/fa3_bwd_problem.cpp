#include "fa3_bwd_problem.h"

#include "10_fa2_tensor_cores/fa2_tc.h"
#include "12_fa3_hopper/fa3.h"
#include "bf16.h"

namespace fa3bwd {

OnDevice::OnDevice(const Problem& p)
    : s(p.s.resolved()),
      Q(ladder::to_bf16(p.Q)),
      K(ladder::to_bf16(p.K)),
      V(ladder::to_bf16(p.V)),
      dO(ladder::to_bf16(p.dO)),
      O(s.elems()),
      dQ(s.elems()),
      dK(s.kv_elems()),
      dV(s.kv_elems()),
      L(s.rows()),
      workspace(backward_workspace_floats(s)),
      workspace10(fa2tc::backward_workspace_floats(s, fa2tc::DqPath::Atomic)) {}

void OnDevice::forward() {
  if (poison) O.poison(), L.poison();
  fa3::forward(s, Q.data(), K.data(), V.data(), O.data(), L.data());
}

void OnDevice::backward(const BackwardOptions& opt) {
  if (poison) dQ.poison(), dK.poison(), dV.poison(), workspace.poison();
  fa3bwd::backward(s, Q.data(), K.data(), V.data(), O.data(), L.data(), dO.data(), dQ.data(), dK.data(), dV.data(),
                   workspace.data(), opt);
}

void OnDevice::backward_fa2() {
  if (poison) dQ.poison(), dK.poison(), dV.poison();
  fa2tc::backward(s, Q.data(), K.data(), V.data(), O.data(), L.data(), dO.data(), dQ.data(), dK.data(), dV.data(),
                  workspace10.data());
}

std::vector<float> OnDevice::dQ_host() const { return ladder::from_bf16(dQ.download()); }
std::vector<float> OnDevice::dK_host() const { return ladder::from_bf16(dK.download()); }
std::vector<float> OnDevice::dV_host() const { return ladder::from_bf16(dV.download()); }
std::vector<float> OnDevice::O_host() const { return ladder::from_bf16(O.download()); }

}  // namespace fa3bwd
