#include "fa2_tc_problem.h"

#include <cmath>
#include <cstring>

#include "attention_inputs.h"
#include "bf16.h"

namespace fa2tc {

Problem make_problem(const ladder::AttentionShape& s, std::uint64_t seed, float q_scale) {
  ladder::AttentionInputs x = ladder::random_attention_inputs(s, seed, true, q_scale);
  return {s, ladder::round_to_bf16(std::move(x.Q)), ladder::round_to_bf16(std::move(x.K)),
          ladder::round_to_bf16(std::move(x.V)), ladder::round_to_bf16(std::move(x.dO))};
}

void make_logits_rise(Problem& p) {
  const ladder::AttentionShape& s = p.s;
  const std::size_t d = s.d, N_kv = s.nkv();
  for (std::size_t r = 0; r < s.rows(); ++r) p.Q[r * d] = 1.0f;
  // q . k / sqrt(d) gains kRisePerKey per key: the ramp is kRisePerKey sqrt(d) per key in K.
  const float step = kRisePerKey * std::sqrt(float(s.d));
  for (std::size_t h = 0; h < s.kv_heads(); ++h)
    for (std::size_t n = 0; n < N_kv; ++n) p.K[(h * N_kv + n) * d] = ladder::round_to_bf16(step * float(N_kv - n));
}

OnDevice::OnDevice(const Problem& p)
    : s(p.s),
      Q(ladder::to_bf16(p.Q)),
      K(ladder::to_bf16(p.K)),
      V(ladder::to_bf16(p.V)),
      dO(ladder::to_bf16(p.dO)),
      O(s.elems()),
      dQ(s.elems()),
      dK(s.kv_elems()),
      dV(s.kv_elems()),
      L(s.rows()),
      workspace(backward_workspace_floats(s, DqPath::Atomic)) {}

void OnDevice::forward(const ForwardOptions& opt) {
  if (poison) O.poison(), L.poison();
  fa2tc::forward(s, Q.data(), K.data(), V.data(), O.data(), L.data(), opt);
}

void OnDevice::backward(const BackwardOptions& opt) {
  if (poison) dQ.poison(), dK.poison(), dV.poison(), workspace.poison();
  fa2tc::backward(s, Q.data(), K.data(), V.data(), O.data(), L.data(), dO.data(), dQ.data(), dK.data(), dV.data(),
                  workspace.data(), opt);
}

std::vector<float> OnDevice::O_host() const { return ladder::from_bf16(O.download()); }
std::vector<float> OnDevice::dQ_host() const { return ladder::from_bf16(dQ.download()); }
std::vector<float> OnDevice::dK_host() const { return ladder::from_bf16(dK.download()); }
std::vector<float> OnDevice::dV_host() const { return ladder::from_bf16(dV.download()); }
std::vector<float> OnDevice::D_host() const {
  std::vector<float> ws = workspace.download();
  ws.resize(s.rows());
  return ws;
}

std::vector<double> expected_D(const ladder::AttentionShape& s, const std::vector<float>& dO,
                               const std::vector<float>& O) {
  std::vector<double> D(s.rows(), 0.0);
  for (std::size_t r = 0; r < s.rows(); ++r)
    for (int k = 0; k < s.d; ++k) D[r] += double(dO[r * s.d + k]) * O[r * s.d + k];
  return D;
}

std::vector<double> widen(const std::vector<float>& v) { return {v.begin(), v.end()}; }

bool bit_identical(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace fa2tc
