// The chapter's measurements, shared by main.cpp and the benchmark:
//   limit study  chapter 10 on one GPU, forward and backward, N = 16K ... : time, time per
//                token, and memory (a bytes-per-token model checked against cudaMemGetInfo);
//                the largest N that fits, and what it would cost.
//   ring runs    the ring timed with events (forward, backward), its timeline and overlap,
//                and the same schedule with only compute or only communication.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "attention_shape.h"
#include "ring.h"

namespace ring {

// ---- one GPU ----
struct MemoryModel {
  double fwd_bytes_per_token, fwdbwd_bytes_per_token;  // chapter 10's buffers, B*H*d per token
  long long fwd_max_N, fwdbwd_max_N;                   // fits in `free_bytes` (and N*d in an int)
};
MemoryModel memory_model(const ladder::AttentionShape& per_token, double free_bytes);

struct LimitRow {
  int N;
  double fwd_ms, bwd_ms, fwd_tflops, bwd_tflops;
  double model_mb, measured_mb;  // fwd+bwd buffers: the model, and cudaMemGetInfo's difference
};
struct LimitStudy {
  std::vector<LimitRow> rows;
  MemoryModel memory;  // per token, and the largest N for the memory free after the study
  double free_gb = 0;
};
// Times chapter 10 at each N (causal or not per `base`); prints a table and the projection.
LimitStudy limit_study(const ladder::AttentionShape& base, const std::vector<int>& Ns, std::ostream& out);
// One row per N; the memory model's columns repeat on every row.
void write_limit_csv(const std::string& path, const LimitStudy& study);

// Chapter 10 alone on device 0 (the single-GPU anchor of the weak scaling): median ms.
struct SingleTimes {
  double fwd_ms = 0, bwd_ms = 0;
};
SingleTimes time_single(const ladder::AttentionShape& s, int repeats);

// ---- the ring ----
struct RingTimes {
  double fwd_ms = 0, bwd_ms = 0;            // median over repeats, slowest rank
  double fwd_overlap = 0, bwd_overlap = 0;  // overlap_fraction of the last run
  double fwd_compute_only_ms = 0, fwd_comm_only_ms = 0, bwd_compute_only_ms = 0, bwd_comm_only_ms = 0;
  std::vector<RankTimeline> fwd_timeline, bwd_timeline;
};
// repeats >= 1; with phases, also the compute-only and comm-only runs (same schedule).
RingTimes time_ring(Ring& ring, int repeats, bool with_backward, bool phases);

// The fraction of communication hidden behind compute, from the three runs:
// (T_compute + T_comm - T_both) / T_comm, clipped to [0, 1].
double hidden_fraction(double both_ms, double compute_ms, double comm_ms);

// Timeline rows for a CSV: "case,rank,kind,step,start_ms,end_ms" (kind: compute, kv, add, dkv).
void write_timeline_csv(std::ostream& out, const std::string& pass, const std::vector<RankTimeline>& tl);

}  // namespace ring
