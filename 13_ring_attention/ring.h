// Chapter 13: ring attention. The sequence is split over P ranks (ring_schedule.h); each
// keeps its Q chunks and passes its K/V shard around the ring on a communication stream
// while it computes with the shard it holds (chapter 10's bf16 kernels, one call per tile);
// the partial outputs merge by their log-sum-exp (ring_sim.h, merge_lse). Backward: dK/dV
// ride with their K/V shard (one extra hop brings them home), dQ stays local; every tile's
// share is summed in fp32 and the gradients are rounded to bf16 once.
//
// Per rank, slot after slot, each chunk packed as [B, H, C, d] bf16 (L: [B, H, C] fp32),
// on the rank's device (transport.device(r)). Self-attention only (H_kv = H, N_kv = N): every
// rank's queries see every rank's keys.
#pragma once

#include <cuda_runtime_api.h>

#include <functional>
#include <memory>
#include <vector>

#include "attention_shape.h"
#include "bf16.h"
#include "ring_schedule.h"
#include "transport.h"

namespace ring {

using ladder::bf16;

// What a run does: everything, or only one half, to measure how much they overlap
// (ComputeOnly computes on whatever the shard buffers hold; CommOnly only moves them).
enum class Phase { Both, ComputeOnly, CommOnly };

struct Interval {
  double start_ms = 0, end_ms = 0;  // from the rank's start of the run
  double ms() const { return end_ms - start_ms; }
};
// One rank's last run: per step, the attention calls (and merges), the K/V shift that ran
// beside them (step t's shift brings step t+1's shard), and in the backward the add of the
// dK/dV sums that arrived from the predecessor and the shift that passes them on. A shift is
// one collective step: it is counted from the moment the last rank reached it (before, a
// rank only waits for its peers), so its interval is the transfer, not the waiting.
struct RankTimeline {
  std::vector<Interval> compute, kv, add, dkv;  // empty intervals (0, 0) where nothing ran
  double total_ms = 0;
};

class Ring {
 public:
  // Validates s and keeps it resolved (ladder::validate: H_kv and N_kv spelled out), then
  // allocates every rank's buffers on its device. std::invalid_argument, before any CUDA
  // call, for what the ring does not take (GQA, N_kv != N, d outside chapter 10's, an N the
  // layout cannot cut); before allocating, when the buffers do not fit (with the numbers).
  Ring(const ladder::AttentionShape& s, Sharding sharding, Transport& transport);
  ~Ring();
  Ring(const Ring&) = delete;
  Ring& operator=(const Ring&) = delete;

  const ladder::AttentionShape& shape() const { return s_; }  // the whole sequence, resolved
  const Layout& layout() const { return layout_; }
  int ranks() const { return layout_.P; }
  int device(int rank) const;
  std::size_t chunk_elems() const;  // B*H*C*d
  std::size_t chunk_rows() const;   // B*H*C
  // Bytes one rank allocates for a shape (inputs, outputs, shard buffers, scratch).
  static double bytes_per_rank(const ladder::AttentionShape& s, const Layout& l);

  // The rank's tensors (slots() chunks each), to fill before and read after a run.
  bf16* Q(int r);
  bf16* K(int r);
  bf16* V(int r);
  bf16* dO(int r);
  bf16* O(int r);  // forward output, backward input
  float* L(int r);
  bf16* dQ(int r);
  bf16* dK(int r);
  bf16* dV(int r);

  // Enqueue a run on every rank's streams; returns without waiting (synchronize()).
  void forward(Phase phase = Phase::Both);
  void backward(Phase phase = Phase::Both);  // needs O and L of a forward
  void synchronize();
  std::vector<RankTimeline> timeline() const;  // of the last run, after synchronize()
  double elapsed_ms() const;                   // the slowest rank's start-to-end time

 private:
  struct RankState;
  ladder::AttentionShape s_;
  Layout layout_;
  Transport& transport_;
  std::vector<std::unique_ptr<RankState>> ranks_;
  std::vector<cudaStream_t> comm_streams_;
  void begin(int r);
  void end_run(int r);
  // One shift of the ring on every rank's comm stream, marked as `which` at step t: rank r's
  // comm stream first waits for after(r) (nullptr: for nothing), then sends message(r).
  void shift(int which, int t, const std::function<cudaEvent_t(int)>& after,
             const std::function<Message(int)>& message);
  void shift_kv(int t);  // step t's K/V shift (forward and backward alike)
};

// Of the time comm ran, the fraction during which the same rank was computing (attention
// calls or adds), from the timeline's intervals (1 = fully hidden), over all ranks and steps.
double overlap_fraction(const std::vector<RankTimeline>& tl);

}  // namespace ring
