// Host-side pieces the executable, the tests and the benchmark share: the chapter's variants by
// name (a mask, a score modifier and the data they read), their block masks, and one problem on
// the device (bf16 inputs, as chapter 14's; O and L from this chapter's forward), outputs
// poisoned before every run.
#pragma once

#include <string>
#include <vector>

#include "10_fa2_tensor_cores/fa2_tc_problem.h"
#include "device_buffer.h"
#include "flex.h"
#include "reference_variants.h"

namespace variants {

enum class Kind { Dense, Causal, Window, Documents, PrefixLM, Softcap, Alibi, Tiles };
const char* name(Kind k);  // "dense", "causal", "window", "documents", "prefix_lm", "softcap", "alibi", "tiles"

// A variant and its parameters. The masks are causal ones where the models use them:
// window (Mistral: q - k <= window), documents (each causal), softcap and ALiBi (on causal).
struct Variant {
  Kind kind = Kind::Causal;
  int window = 1024;             // Window: keys q - window .. q
  int prefix = 0;                // PrefixLM
  float cap = 50.0f;             // Softcap
  std::vector<int> doc_lengths;  // Documents: lengths summing to N, the same in every batch
  bool doc_ids_only = false;     // Documents: the mask from the ids alone (Document: no spans)
  double tile_density = 0.25;    // Tiles: the fraction of 128 x 128 tiles on (random, seeded)
  std::uint64_t seed = 1;        // Tiles
  // Documents with doc_ids_only: each batch packs its own documents (batch b's lengths are
  // doc_lengths rotated by b), so the mask depends on the batch.
  bool docs_per_batch = false;
  // The block masks' extents: a list per batch and per head (true), or one list that every batch
  // or head shares (false, FlexAttention's B = 1 or H = 1). A mask that depends on b needs
  // mask_per_batch; the built-ins depend on neither b nor h otherwise.
  bool mask_per_batch = false, mask_per_head = false;
  std::string str() const;  // "window=1024", "documents=7", ... (and the extents when not the defaults)

 private:
  std::string name_and_parameter() const;
};

// The per-token and per-head data the functors read, on the host (for the reference and the
// block masks) and on the device (for the kernels).
// Where the functors find that data: the host's copies (ModsData) or the device's (DeviceModsData).
struct ModsPointers {
  const int *doc, *cu_seqlens;
  const float* slopes;
  const unsigned char* tiles;
  int T_k;
};
struct ModsData {
  std::vector<int> doc;              // Documents: [N] (or [B][N], docs_per_batch) document of each position
  std::vector<int> cu_seqlens;       // Documents: [documents + 1] first position of each, then N
  std::vector<float> slopes;         // Alibi: [H]
  std::vector<unsigned char> tiles;  // Tiles: [ceil(N / 128)][ceil(N_kv / 128)]
  int T_k = 0;
  ModsData(const Variant& v, const ladder::AttentionShape& s);
  ModsPointers pointers() const { return {doc.data(), cu_seqlens.data(), slopes.data(), tiles.data(), T_k}; }
};
struct DeviceModsData {
  ladder::DeviceBuffer<int> doc, cu_seqlens;
  ladder::DeviceBuffer<float> slopes;
  ladder::DeviceBuffer<unsigned char> tiles;
  int T_k;
  explicit DeviceModsData(const ModsData& h);
  ModsPointers pointers() const { return {doc.data(), cu_seqlens.data(), slopes.data(), tiles.data(), T_k}; }
};

// Calls f(mask, score) with the functors of v, reading the data at `at`.
template <class F>
decltype(auto) with_mods(const Variant& v, const ladder::AttentionShape& s, const ModsPointers& at, F&& f) {
  const int offset = s.nkv() - s.N;
  switch (v.kind) {
    case Kind::Dense: return f(NoMask{}, NoScoreMod{});
    case Kind::Causal: return f(Causal{offset}, NoScoreMod{});
    case Kind::Window: return f(SlidingWindow{v.window, 0, offset}, NoScoreMod{});
    case Kind::Documents:  // (ids: row strides 0 where every batch packs the same documents)
      if (v.doc_ids_only) {
        const int stride = v.docs_per_batch ? s.N : 0;
        return f(CausalDocument{Document{at.doc, at.doc, stride, stride}, Causal{offset}}, NoScoreMod{});
      }
      return f(CausalPackedDocuments{PackedDocuments{at.doc, at.cu_seqlens}, Causal{offset}}, NoScoreMod{});
    case Kind::PrefixLM: return f(PrefixLM{v.prefix}, NoScoreMod{});
    case Kind::Softcap: return f(Causal{offset}, Softcap{v.cap});
    case Kind::Alibi: return f(Causal{offset}, Alibi{at.slopes, offset});
    case Kind::Tiles: return f(TileSet{at.tiles, at.T_k, kB_c}, NoScoreMod{});
  }
  return f(NoMask{}, NoScoreMod{});
}

// The fp64 reference's mods and the two block masks (forward: 128-row tiles; backward: 64).
Mods reference_mods(const Variant& v, const ladder::AttentionShape& s, const ModsData& h);
BlockMask block_mask(const Variant& v, const ladder::AttentionShape& s, const ModsData& h, int B_r);

// The pairs (query, key) a variant lets through over the whole batch: useful FLOPs are
// 4 d of them per head for the forward, 2.5 times that for the backward.
double visible_pairs(const BlockMask& m, const ladder::AttentionShape& s);

struct OnDevice {
  ladder::AttentionShape s;
  Variant v;
  ModsData host;
  DeviceModsData dev;
  BlockMask fwd_lists;  // the forward's block mask on the host (its count of visible pairs)
  DeviceBlockMask fwd_mask, bwd_mask;
  double pairs;  // visible (query, key) pairs per batch and head, summed over B and H
  ladder::DeviceBuffer<bf16> Q, K, V, dO, O, dQ, dK, dV;
  ladder::DeviceBuffer<float> L, workspace;
  // Outputs are poisoned before every run, so that an element a kernel skips cannot pass a
  // check. Timed runs turn it off: a memset inside the timed region would be timed with the kernel.
  bool poison = true;
  OnDevice(const fa2tc::Problem& p, const Variant& v);
  void forward();
  void backward();
  std::vector<float> O_host() const;
  std::vector<float> L_host() const;
  std::vector<float> dQ_host() const;
  std::vector<float> dK_host() const;
  std::vector<float> dV_host() const;
};

}  // namespace variants
