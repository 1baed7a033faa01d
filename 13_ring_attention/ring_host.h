// Host-side glue of the ring: cutting a whole-sequence tensor into the ranks' chunks and
// putting the ranks' outputs back together, and the ring's problem on bf16 inputs.
#pragma once

#include <cstdint>
#include <vector>

#include "attention_shape.h"
#include "compare.h"
#include "ring.h"
#include "ring_schedule.h"

namespace ring {

// Rank r's chunks of a [B, H, N, width] tensor, slot after slot, each [B, H, C, width].
std::vector<float> scatter(const std::vector<float>& full, const ladder::AttentionShape& s, const Layout& l, int rank,
                           int width);
// The inverse: writes rank r's chunks into `full`.
void gather(const std::vector<float>& part, const ladder::AttentionShape& s, const Layout& l, int rank, int width,
            std::vector<float>& full);

// Whole-sequence outputs of a ring run, as float.
struct RingOutputs {
  std::vector<float> O, L, dQ, dK, dV;
};
// Uploads Q, K, V, dO (bf16-rounded floats, whole sequence) to every rank; poisons the outputs.
void upload(Ring& ring, const std::vector<float>& Q, const std::vector<float>& K, const std::vector<float>& V,
            const std::vector<float>& dO);
RingOutputs download(Ring& ring, bool with_grads);
// Writes a forward's O and L (whole sequence) into the ring, for a backward on its own.
void upload_forward(Ring& ring, const std::vector<float>& O, const std::vector<float>& L);
// Fills every rank's inputs with uniform [-1, 1) on its device (the timed runs).
void fill_random(Ring& ring, std::uint64_t seed);

// The ring (shape s over `transport`'s ranks) on random bf16-rounded inputs, forward and
// backward, against the fp64 reference of the whole sequence: one comparison per output.
struct RingCheck {
  ladder::Comparison O, L, dQ, dK, dV;
};
RingCheck check_against_reference(const ladder::AttentionShape& s, Sharding sharding, Transport& transport,
                                  std::uint64_t seed);

}  // namespace ring
