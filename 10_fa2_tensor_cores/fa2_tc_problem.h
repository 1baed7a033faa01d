// Host-side pieces the executable and the tests share: a problem on bf16-rounded inputs
// (the fp64 reference sees exactly the values the GPU sees), its device buffers, and the
// comparison of L, whose rows without a visible key are -inf by design.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "attention_shape.h"
#include "compare.h"
#include "device_buffer.h"
#include "fa2_tc.h"

namespace fa2tc {

// L = m + log l is fp32 throughout: scores from exact bf16 x bf16 products summed over d
// by the tensor cores (truncating, at most ~d 2^-24 relative), an fp32 row sum, logf.
// Measured errors sit near 1e-7; any masking or scaling bug moves L by > 1e-4.
inline constexpr ladder::Bound kBf16AttentionL = ladder::kLse;  // common/compare.h

// Q, K, V, dO uniform in [-1, 1) (Q times q_scale), rounded to bf16; kept as float.
struct Problem {
  ladder::AttentionShape s;
  std::vector<float> Q, K, V, dO;
};
Problem make_problem(const ladder::AttentionShape& s, std::uint64_t seed, float q_scale = 1.0f);

// The worst case of skipping O_i *= alpha (kSkipRescale): logits that rise in the order the
// forward visits the key tiles (from the last down to 0). Q's first component is set to 1 and
// K's to a ramp, so the scaled logits gain kRisePerKey per key towards key 0 on top of the
// random part (spread ~0.3): every key tile raises the maximum of (nearly) every row.
inline constexpr float kRisePerKey = 1.0f / 16.0f;
void make_logits_rise(Problem& p);

// The problem on the device (bf16), outputs poisoned (NaN) before every run.
struct OnDevice {
  ladder::AttentionShape s;
  ladder::DeviceBuffer<bf16> Q, K, V, dO, O, dQ, dK, dV;
  ladder::DeviceBuffer<float> L, workspace;
  // Outputs are poisoned before every run, so that an element a kernel skips cannot pass a
  // check. Timed runs turn it off: a memset inside the timed region would be timed with the kernel.
  bool poison = true;
  explicit OnDevice(const Problem& p);
  void forward(const ForwardOptions& opt = {});
  void backward(const BackwardOptions& opt = {});  // uses O and L of the last forward()
  std::vector<float> O_host() const;
  std::vector<float> L_host() const { return L.download(); }
  std::vector<float> D_host() const;  // the first B*H*N floats of the workspace
  std::vector<float> dQ_host() const;
  std::vector<float> dK_host() const;
  std::vector<float> dV_host() const;
};

// L against the reference (common/compare.h): rows the reference gives -inf (they see no
// key) must be -inf exactly; each that is not counts as non-finite.
using ladder::compare_lse;

// D_i = rowsum(dO_i * O_i) in fp64 from the O the backward was given.
std::vector<double> expected_D(const ladder::AttentionShape& s, const std::vector<float>& dO,
                               const std::vector<float>& O);

std::vector<double> widen(const std::vector<float>& v);
bool bit_identical(const std::vector<float>& a, const std::vector<float>& b);

}  // namespace fa2tc
