#include "fa3_problem.h"

#include <algorithm>
#include <cstring>

#include "10_fa2_tensor_cores/fa2_tc.h"
#include "bf16.h"
#include "fp8_emulate.h"

namespace fa3 {

OnDevice::OnDevice(const Problem& p)
    : s(p.s), Q(ladder::to_bf16(p.Q)), K(ladder::to_bf16(p.K)), V(ladder::to_bf16(p.V)), O(s.elems()), L(s.rows()) {}

void OnDevice::forward(const ForwardOptions& opt) {
  if (poison) O.poison(), L.poison();
  fa3::forward(s, Q.data(), K.data(), V.data(), O.data(), L.data(), opt);
}

void OnDevice::forward_fa2() {
  if (poison) O.poison(), L.poison();
  fa2tc::forward(s, Q.data(), K.data(), V.data(), O.data(), L.data());
}

std::vector<float> OnDevice::O_host() const { return ladder::from_bf16(O.download()); }

// The bytes and descales the GPU quantiser (fp8_quant.cu) writes, made on the host by its
// bit-exact twin, and the values the kernel then computes with (x8 * descale): the fp64
// reference of the FP8 tests runs on those.
Fp8Problem quantize_on_host(const Problem& p, bool per_block) {
  const Fp8HostTensors t = quantize_fp8_host(p.s, p.Q.data(), p.K.data(), p.V.data(),
                                             {per_block ? Fp8Scaling::PerBlock : Fp8Scaling::PerTensor, false});
  Fp8Dequantised x = dequantize_fp8_host(t);
  return {p.s,
          std::move(x.Q),
          std::move(x.K),
          std::move(x.V),
          ladder::DeviceBuffer<std::uint8_t>(t.Q8),
          ladder::DeviceBuffer<std::uint8_t>(t.K8),
          ladder::DeviceBuffer<std::uint8_t>(t.Vt8),
          ladder::DeviceBuffer<float>(t.descale_q),
          ladder::DeviceBuffer<float>(t.descale_k),
          ladder::DeviceBuffer<float>(t.descale_v),
          ladder::DeviceBuffer<bf16>(p.s.elems()),
          ladder::DeviceBuffer<float>(p.s.rows())};
}

Fp8Inputs Fp8Problem::inputs() const {
  return {Q8.data(), K8.data(), Vt8.data(), descale_q.data(), descale_k.data(), descale_v.data()};
}

void Fp8Problem::forward(const Fp8ForwardOptions& opt) {
  if (poison) O.poison(), L.poison();
  fa3::forward_fp8(s, inputs(), O.data(), L.data(), opt);
}

std::vector<float> Fp8Problem::O_host() const { return ladder::from_bf16(O.download()); }

std::size_t bits_differ(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return std::max(a.size(), b.size());
  std::size_t n = 0;
  for (std::size_t i = 0; i < a.size(); ++i) n += std::memcmp(&a[i], &b[i], sizeof(float)) != 0;
  return n;
}

}  // namespace fa3
