#include "flex_problem.h"

#include <numeric>
#include <random>
#include <stdexcept>

#include "bf16.h"
#include "fa3_bwd.h"

namespace variants {

const char* name(Kind k) {
  switch (k) {
    case Kind::Dense: return "dense";
    case Kind::Causal: return "causal";
    case Kind::Window: return "window";
    case Kind::Documents: return "documents";
    case Kind::PrefixLM: return "prefix_lm";
    case Kind::Softcap: return "softcap";
    case Kind::Alibi: return "alibi";
    case Kind::Tiles: return "tiles";
  }
  return "?";
}

std::string Variant::str() const {
  const std::string extents = std::string(docs_per_batch ? ",ids per batch" : "") +
                              (mask_per_batch ? ",lists per batch" : "") + (mask_per_head ? ",lists per head" : "");
  return name_and_parameter() + extents;
}

std::string Variant::name_and_parameter() const {
  switch (kind) {
    case Kind::Window: return "window=" + std::to_string(window);
    case Kind::Documents: return "documents=" + std::to_string(doc_lengths.size()) + (doc_ids_only ? ",ids" : "");
    case Kind::PrefixLM: return "prefix_lm=" + std::to_string(prefix);
    case Kind::Softcap: return "softcap=" + std::to_string(int(cap));
    case Kind::Tiles: return "tiles=" + std::to_string(int(tile_density * 100 + 0.5)) + "%";
    default: return name(kind);
  }
}

ModsData::ModsData(const Variant& v, const ladder::AttentionShape& s) {
  if (v.kind == Kind::Documents) {
    if (s.nkv() != s.N) throw std::invalid_argument("documents: N_kv must equal N (one packed sequence)");
    if (std::accumulate(v.doc_lengths.begin(), v.doc_lengths.end(), 0) != s.N)
      throw std::invalid_argument("documents: the lengths must sum to N=" + std::to_string(s.N));
    if (v.docs_per_batch && !v.doc_ids_only)
      throw std::invalid_argument("documents: docs_per_batch needs doc_ids_only (the varlen layout packs one batch)");
    cu_seqlens.push_back(0);
    for (int d = 0; d < int(v.doc_lengths.size()); ++d) {
      doc.insert(doc.end(), v.doc_lengths[d], d);
      cu_seqlens.push_back(cu_seqlens.back() + v.doc_lengths[d]);
    }
    const int n_docs = int(v.doc_lengths.size());
    for (int b = 1; v.docs_per_batch && b < s.B; ++b)  // batch b: the lengths rotated by b
      for (int d = 0; d < n_docs; ++d) {
        const int r = (d + b) % n_docs;
        doc.insert(doc.end(), v.doc_lengths[r], d);
      }
  }
  if (v.kind == Kind::Alibi)
    for (int h = 0; h < s.H; ++h) slopes.push_back(alibi_slope(h, s.H));
  if (v.kind == Kind::Tiles) {  // every row of tiles keeps at least one, so no query is left without keys
    const int T_q = (s.N + kB_c - 1) / kB_c;
    T_k = (s.nkv() + kB_c - 1) / kB_c;
    std::mt19937_64 rng(v.seed);
    std::uniform_real_distribution<double> u(0.0, 1.0);
    tiles.assign(std::size_t(T_q) * T_k, 0);
    for (int i = 0; i < T_q; ++i) {
      tiles[std::size_t(i) * T_k + rng() % T_k] = 1;
      for (int j = 0; j < T_k; ++j)
        if (u(rng) < v.tile_density) tiles[std::size_t(i) * T_k + j] = 1;
    }
  }
  // The device copies need at least one element each.
  if (doc.empty()) doc.push_back(0);
  if (cu_seqlens.empty()) cu_seqlens.push_back(0);
  if (slopes.empty()) slopes.push_back(0.0f);
  if (tiles.empty()) tiles.push_back(0);
}

DeviceModsData::DeviceModsData(const ModsData& h)
    : doc(h.doc), cu_seqlens(h.cu_seqlens), slopes(h.slopes), tiles(h.tiles), T_k(h.T_k) {}

Mods reference_mods(const Variant& v, const ladder::AttentionShape& s, const ModsData& h) {
  return with_mods(v, s, h.pointers(), [](auto mask, auto score) { return mods(mask, score); });
}

BlockMask block_mask(const Variant& v, const ladder::AttentionShape& s, const ModsData& h, int B_r) {
  if (v.docs_per_batch && !v.mask_per_batch)
    throw std::invalid_argument("block_mask: documents per batch need a block mask per batch (mask_per_batch)");
  return with_mods(v, s, h.pointers(), [&](auto mask, auto) {
    return make_block_mask(mask, v.mask_per_batch ? s.B : 1, v.mask_per_head ? s.H : 1, s.N, s.nkv(), B_r, kB_c);
  });
}

double visible_pairs(const BlockMask& m, const ladder::AttentionShape& s) {
  return double(m.visible) * (double(s.B) / m.B) * (double(s.H) / m.H);
}

OnDevice::OnDevice(const fa2tc::Problem& p, const Variant& variant)
    : s(p.s.resolved()),
      v(variant),
      host(v, s),
      dev(host),
      fwd_lists(block_mask(v, s, host, kForwardB_r)),
      fwd_mask(fwd_lists),
      bwd_mask(block_mask(v, s, host, kBackwardB_r)),
      pairs(visible_pairs(fwd_lists, s)),
      Q(ladder::to_bf16(p.Q)),
      K(ladder::to_bf16(p.K)),
      V(ladder::to_bf16(p.V)),
      dO(ladder::to_bf16(p.dO)),
      O(s.elems()),
      dQ(s.elems()),
      dK(s.kv_elems()),
      dV(s.kv_elems()),
      L(s.rows()),
      workspace(fa3bwd::backward_workspace_floats(s)) {}

void OnDevice::forward() {
  if (poison) O.poison(), L.poison();
  with_mods(v, s, dev.pointers(), [&](auto mask, auto score) {
    variants::forward(s, mask, score, fwd_mask, Q.data(), K.data(), V.data(), O.data(), L.data());
  });
}

void OnDevice::backward() {
  if (poison) dQ.poison(), dK.poison(), dV.poison(), workspace.poison();
  with_mods(v, s, dev.pointers(), [&](auto mask, auto score) {
    variants::backward(s, mask, score, bwd_mask, Q.data(), K.data(), V.data(), O.data(), L.data(), dO.data(), dQ.data(),
                       dK.data(), dV.data(), workspace.data());
  });
}

std::vector<float> OnDevice::O_host() const { return ladder::from_bf16(O.download()); }
std::vector<float> OnDevice::L_host() const { return L.download(); }
std::vector<float> OnDevice::dQ_host() const { return ladder::from_bf16(dQ.download()); }
std::vector<float> OnDevice::dK_host() const { return ladder::from_bf16(dK.download()); }
std::vector<float> OnDevice::dV_host() const { return ladder::from_bf16(dV.download()); }

}  // namespace variants
