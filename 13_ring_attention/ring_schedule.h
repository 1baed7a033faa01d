// Chapter 13: who holds what, and who computes what, at each step of the ring.
// Pure index arithmetic (no CUDA): the CPU simulator, the GPU ring and the tests share it.
//
// The sequence of N tokens is cut into equal chunks; every rank keeps the chunks of Q (and
// dO, O, L, dQ) it owns, and the K/V of its chunks travels around the ring 0 -> 1 -> ... ->
// P-1 -> 0. At step t rank r holds the K/V shard that rank (r - t) mod P owns.
//   Plain   P chunks, rank r owns chunk r.
//   Zigzag  2P chunks, rank r owns chunks r and 2P-1-r: causal work is then the same on
//           every rank at every step (one early and one late chunk each).
// A (q chunk a, k chunk b) pair of equal chunks is, under the causal mask, full if a > b,
// the causal diagonal if a == b (chapter 10's causal with N = N_kv), and skipped if a < b.
#pragma once

#include <string>
#include <vector>

#include "attention_shape.h"

namespace ring {

enum class Sharding { Plain, Zigzag };
inline constexpr Sharding kAllShardings[] = {Sharding::Plain, Sharding::Zigzag};
const char* name(Sharding s);  // "plain", "zigzag"

enum class TileMask { Full, Diagonal };
const char* name(TileMask m);  // "full", "diag"

// How N tokens are cut for P ranks. N must be a multiple of the chunk count (P plain, 2P
// zigzag): make_layout refuses the rest (std::invalid_argument naming the next valid N).
struct Layout {
  int N = 0, P = 1;
  Sharding sharding = Sharding::Plain;

  int chunks() const { return sharding == Sharding::Plain ? P : 2 * P; }
  int chunk_len() const { return N / chunks(); }                     // C: tokens per chunk
  int slots() const { return sharding == Sharding::Plain ? 1 : 2; }  // chunks a rank owns
  // The global index of the chunk in slot `slot` of rank `rank`.
  int chunk(int rank, int slot) const { return slot == 0 ? rank : 2 * P - 1 - rank; }
  int tokens_per_rank() const { return slots() * chunk_len(); }
};
Layout make_layout(int N, int P, Sharding sharding);

// Whose K/V shard rank `rank` holds at step `step` (0 <= step < P).
inline int source(int P, int rank, int step) { return ((rank - step) % P + P) % P; }

// One attention call of a step: the Q chunk in slot q_slot of this rank against the K/V
// chunk in slot k_slot of the shard it holds (global chunk indices q_chunk, k_chunk).
struct Tile {
  int q_slot, k_slot, q_chunk, k_chunk;
  TileMask mask;
};
std::vector<Tile> tiles(const Layout& layout, bool causal, int rank, int step);

// The attention problem of one tile: C queries against C keys of the whole sequence's shape,
// causal on the diagonal only. Both lengths are named (with_lengths): a whole-sequence N_kv
// that survived into a tile would send the kernels past the chunk's keys.
ladder::AttentionShape tile_shape(const ladder::AttentionShape& whole, const Layout& layout, TileMask mask);

// (query, key) pairs a tile covers, in units of C^2 (full 1, diagonal 1/2: the FLOP
// convention of common/work.h), summed over a rank's tiles of one step.
double step_work(const Layout& layout, bool causal, int rank, int step);

// Empty when every (q chunk, k chunk) pair the mask keeps is computed exactly once over
// all ranks and steps and no other pair is; else the first problem found.
std::string check_schedule(const Layout& layout, bool causal);

// The schedule as text: per step, the shard each rank holds and its tiles, then the work
// per rank per step (C^2 units) with the step's slowest rank (what the step costs).
//   step 0: r0 holds K/V of r0 {0,3} tiles (0,0)d (3,0)f (3,3)d  work 2.0 | r1 ...
std::string describe(const Layout& layout, bool causal);
// The same as rows for scripts: "step,rank,holds,tiles,work" (tiles as q:k:f|d;...).
std::string schedule_csv(const Layout& layout, bool causal);

// Sum over steps of the slowest rank's work / (total work / P): 1 = perfectly balanced.
double imbalance(const Layout& layout, bool causal);

}  // namespace ring
