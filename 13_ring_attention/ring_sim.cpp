#include "ring_sim.h"

#include <stdexcept>
#include <string>

namespace ring {

namespace {

using Tensor = std::vector<double>;  // one chunk: [B, H, C, d] (or [B, H, C] for L, D)

// Chunk `c` (C rows per head) of a full [B, H, N, width] tensor.
Tensor cut(const std::vector<float>& full, const ladder::AttentionShape& s, int c, int C, int width) {
  Tensor out(s.heads() * C * width);
  for (std::size_t bh = 0; bh < s.heads(); ++bh)
    for (int i = 0; i < C; ++i)
      for (int k = 0; k < width; ++k)
        out[(bh * C + i) * width + k] = full[(bh * s.N + std::size_t(c) * C + i) * width + k];
  return out;
}
void paste(const Tensor& chunk, std::vector<double>& full, const ladder::AttentionShape& s, int c, int C, int width) {
  for (std::size_t bh = 0; bh < s.heads(); ++bh)
    for (int i = 0; i < C; ++i)
      for (int k = 0; k < width; ++k)
        full[(bh * s.N + std::size_t(c) * C + i) * width + k] = chunk[(bh * C + i) * width + k];
}

// What travels: the K/V chunks of one rank and the dK/dV summed so far for them.
struct Shard {
  std::vector<Tensor> K, V, dK, dV;  // per slot
};

// One tile of the backward with the row statistics of the whole sequence: with the final L
// and D_i = rowsum(dO_i O_i), P_ij = exp(S_ij - L_i) is the true probability, so each tile's
// contributions to dQ, dK, dV are exact pieces of the full gradients.
void tile_backward(const ladder::AttentionShape& s, int C, TileMask mask, const Tensor& Q, const Tensor& K,
                   const Tensor& V, const Tensor& dO, const Tensor& L, const Tensor& D, Tensor& dQ, Tensor& dK,
                   Tensor& dV) {
  const int d = s.d;
  const double scale = 1.0 / std::sqrt(double(d));
  for (std::size_t bh = 0; bh < s.heads(); ++bh)
    for (int i = 0; i < C; ++i) {
      const std::size_t qi = (bh * C + i) * d;
      for (int j = 0; j < C; ++j) {
        if (mask == TileMask::Diagonal && j > i) continue;
        const std::size_t kj = (bh * C + j) * d;
        double dot = 0.0, dp = 0.0;
        for (int k = 0; k < d; ++k) dot += Q[qi + k] * K[kj + k], dp += dO[qi + k] * V[kj + k];
        const double p = std::exp(scale * dot - L[bh * C + i]);
        const double ds = p * (dp - D[bh * C + i]);
        for (int k = 0; k < d; ++k) {
          dV[kj + k] += p * dO[qi + k];
          dQ[qi + k] += scale * ds * K[kj + k];
          dK[kj + k] += scale * ds * Q[qi + k];
        }
      }
    }
}

}  // namespace

SimResult simulate(const ladder::AttentionShape& whole, int P, Sharding sharding, const std::vector<float>& Q,
                   const std::vector<float>& K, const std::vector<float>& V, const std::vector<float>* dO) {
  if (!whole.self_attention())
    throw std::invalid_argument("ring: self-attention only (H_kv = H, N_kv = N); got " + whole.str());
  if (whole.B < 1 || whole.H < 1 || whole.d < 1)
    throw std::invalid_argument("ring: B, H and d must be >= 1; got " + whole.str());
  const ladder::AttentionShape s = whole.resolved();
  const Layout l = make_layout(s.N, P, sharding);
  const std::size_t need = s.elems();
  if (Q.size() != need || K.size() != need || V.size() != need || (dO && dO->size() != need))
    throw std::invalid_argument("ring: Q, K, V (and dO) must hold B*H*N*d = " + std::to_string(need) +
                                " values each for " + s.str());
  const int C = l.chunk_len(), S = l.slots(), d = s.d;
  const std::size_t E = s.heads() * C * d, R = s.heads() * C;

  // Each rank's own chunks, and the shard it holds now (its own at step 0).
  std::vector<std::vector<Tensor>> q(P), o(P), lse(P);
  std::vector<Shard> held(P);
  for (int r = 0; r < P; ++r)
    for (int k = 0; k < S; ++k) {
      const int c = l.chunk(r, k);
      q[r].push_back(cut(Q, s, c, C, d));
      o[r].push_back(Tensor(E, 0.0));
      lse[r].push_back(Tensor(R, -INFINITY));
      held[r].K.push_back(cut(K, s, c, C, d));
      held[r].V.push_back(cut(V, s, c, C, d));
    }
  const std::vector<Shard> own = held;
  auto pass_on = [&] {  // every rank sends what it holds to the next one
    std::vector<Shard> next(P);
    for (int r = 0; r < P; ++r) next[(r + 1) % P] = held[r];
    held = std::move(next);
  };

  for (int t = 0; t < P; ++t) {
    for (int r = 0; r < P; ++r)
      for (const Tile& tile : tiles(l, s.causal, r, t)) {
        const ladder::AttentionForward part =
            ladder::attention_forward_reference(tile_shape(s, l, tile.mask), q[r][tile.q_slot].data(),
                                                held[r].K[tile.k_slot].data(), held[r].V[tile.k_slot].data());
        for (std::size_t row = 0; row < R; ++row)
          merge_lse(&o[r][tile.q_slot][row * d], lse[r][tile.q_slot][row], &part.O[row * d], part.L[row], d);
      }
    if (t + 1 < P) pass_on();
  }

  SimResult res;
  res.fwd.O.assign(s.elems(), 0.0);
  res.fwd.L.assign(s.rows(), 0.0);
  for (int r = 0; r < P; ++r)
    for (int k = 0; k < S; ++k) {
      paste(o[r][k], res.fwd.O, s, l.chunk(r, k), C, d);
      paste(lse[r][k], res.fwd.L, s, l.chunk(r, k), C, 1);
    }
  if (dO == nullptr) return res;

  // Backward: the same walk of the K/V shards, now with dK/dV riding along.
  std::vector<std::vector<Tensor>> g(P), D(P), dq(P);
  held = own;
  for (int r = 0; r < P; ++r) {
    held[r].dK.assign(S, Tensor(E, 0.0));
    held[r].dV.assign(S, Tensor(E, 0.0));
    for (int k = 0; k < S; ++k) {
      g[r].push_back(cut(*dO, s, l.chunk(r, k), C, d));
      Tensor Dk(R, 0.0);
      for (std::size_t row = 0; row < R; ++row)
        for (int e = 0; e < d; ++e) Dk[row] += g[r][k][row * d + e] * o[r][k][row * d + e];
      D[r].push_back(Dk);
      dq[r].push_back(Tensor(E, 0.0));
    }
  }
  for (int t = 0; t < P; ++t) {
    for (int r = 0; r < P; ++r)
      for (const Tile& tile : tiles(l, s.causal, r, t))
        tile_backward(s, C, tile.mask, q[r][tile.q_slot], held[r].K[tile.k_slot], held[r].V[tile.k_slot],
                      g[r][tile.q_slot], lse[r][tile.q_slot], D[r][tile.q_slot], dq[r][tile.q_slot],
                      held[r].dK[tile.k_slot], held[r].dV[tile.k_slot]);
    pass_on();  // P passes: the last brings every dK/dV home to the rank that owns its K/V
  }
  res.grads.dQ.assign(s.elems(), 0.0);
  res.grads.dK.assign(s.elems(), 0.0);
  res.grads.dV.assign(s.elems(), 0.0);
  for (int r = 0; r < P; ++r)
    for (int k = 0; k < S; ++k) {
      const int c = l.chunk(r, k);
      paste(dq[r][k], res.grads.dQ, s, c, C, d);
      paste(held[r].dK[k], res.grads.dK, s, c, C, d);
      paste(held[r].dV[k], res.grads.dV, s, c, C, d);
    }
  return res;
}

}  // namespace ring
