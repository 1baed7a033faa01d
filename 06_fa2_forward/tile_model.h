// The FA2 forward's loops, run on the CPU over the same tiles as the kernel, in
// fp64. It shows the algorithm without CUDA, and counts the bytes each tensor
// moves to and from HBM; tests check both against the reference and the closed
// forms (non-causal): Q read once, K and V read T_r times, O and L written once.
#pragma once

#include <vector>

#include "attention_shape.h"
#include "attention_traffic.h"
#include "fa_forward.h"

namespace fa2 {

struct TileModel {
  std::vector<double> O, L;
  ladder::AttentionTraffic traffic;
};

// With Q == nullptr only the traffic is counted (any size, no arithmetic).
TileModel tile_model(const ladder::AttentionShape& s, const Tiles& t, const float* Q, const float* K, const float* V);

}  // namespace fa2
