// Chapter 15's kernels at the shapes FlexAttention is compared on (cases.h; the anchor script
// times flex_attention at the same ones, scripts/anchors/torch_anchors.py --group flex):
//   fwd:<case>/<keys>, bwd:<case>/<keys>     this chapter's forward and backward
//   fwd:documents_ids, bwd:documents_ids     the documents' mask from their ids alone (no spans)
//   fwd:causal, bwd:causal                   the causal mask as code ...
//   anchor:fa3_causal/fwd, .../bwd           ... and built in (chapters 12 and 14)
//   fwd:tilesP, fwd:dense (and bwd)         the block-sparse sweep: P% of the 128 x 128 tiles on
//   anchor:equal_lengths/train               the documents' tokens as equal causal sequences
//   train:documents                          forward + backward of the packed documents
// TFLOP/s are useful ones: 4 d FLOPs per visible (query, key) pair and head for the forward,
// 2.5 times that for the backward (FlexAttention's convention in the figures).
#include <map>
#include <memory>
#include <string>

#include "14_fa3_backward/fa3_bwd_problem.h"
#include "bench.h"
#include "cases.h"
#include "flex.h"
#include "flex_problem.h"

namespace {

using ladder::AttentionShape;
using variants::Kind;
using variants::Variant;

std::string keys(const AttentionShape& s) {
  return "/N=" + std::to_string(s.N) + "/B=" + std::to_string(s.B) + "/H=" + std::to_string(s.H) +
         "/d=" + std::to_string(s.d);
}

// One problem per (variant, shape), kept: its block masks are built once, outside the timing.
variants::OnDevice& problem(const AttentionShape& s, const Variant& v) {
  static std::map<std::string, std::unique_ptr<variants::OnDevice>> cache;
  auto& slot = cache[v.str() + s.str()];
  if (!slot) slot.reset(new variants::OnDevice(fa2tc::make_problem(s, 1), v));
  slot->poison = false;  // nothing is checked here: no memset inside the timed region
  return *slot;
}

enum class Pass { Fwd, Bwd, Train };

// One pass of a problem on the device (its forward has run: the backward reads O and L), in useful
// TFLOP/s: 4 d FLOPs per visible pair for the forward, 2.5 times that for the backward.
template <class Dev>
void run_pass(benchmark::State& state, Dev& dev, Pass pass, double pairs, int d) {
  const double f = 4.0 * d * pairs;
  if (pass == Pass::Fwd) return ladder::run_gpu(state, [&] { dev.forward(); }, {f, 0.0});
  if (pass == Pass::Bwd) return ladder::run_gpu(state, [&] { dev.backward(); }, {2.5 * f, 0.0});
  ladder::run_gpu(state, [&] { dev.forward(), dev.backward(); }, {3.5 * f, 0.0});
}

void bench_variant(benchmark::State& state, AttentionShape s, Variant v, Pass pass) {
  if (!ladder::gpu_or_skip(state)) return;
  if (const std::string why = variants::unavailable_reason(); !why.empty()) return state.SkipWithError(why.c_str());
  variants::OnDevice& dev = problem(s, v);
  dev.forward();
  run_pass(state, dev, pass, dev.pairs, s.d);
}

void bench_builtin_causal(benchmark::State& state, AttentionShape s, Pass pass) {
  if (!ladder::gpu_or_skip(state)) return;
  if (const std::string why = fa3bwd::unavailable_reason(); !why.empty()) return state.SkipWithError(why.c_str());
  s.causal = true;
  static std::map<std::string, std::unique_ptr<fa3bwd::OnDevice>> cache;
  auto& slot = cache[s.str()];
  if (!slot) slot.reset(new fa3bwd::OnDevice(fa3bwd::make_problem(s, 1)));
  slot->poison = false;
  slot->forward();
  run_pass(state, *slot, pass, ladder::attention_pairs(s) * double(s.heads()), s.d);
}

const bool registered = [] {
  auto both = [](const std::string& name, const AttentionShape& s, const Variant& v) {
    ladder::gpu_benchmark("fwd:" + name + keys(s), [=](benchmark::State& st) { bench_variant(st, s, v, Pass::Fwd); });
    ladder::gpu_benchmark("bwd:" + name + keys(s), [=](benchmark::State& st) { bench_variant(st, s, v, Pass::Bwd); });
  };
  for (const auto& c : variants::cases::headline()) both(c.name, c.s, c.v);
  variants::cases::Case ids = variants::cases::headline()[1];
  ids.v.doc_ids_only = true;
  both("documents_ids", ids.s, ids.v);

  const AttentionShape cs = ladder::attention_shape(4, 16, 16, 4096, 4096, 128, false);
  Variant causal;
  causal.kind = Kind::Causal;
  both("causal", cs, causal);
  for (Pass pass : {Pass::Fwd, Pass::Bwd})
    ladder::gpu_benchmark(std::string("anchor:fa3_causal/") + (pass == Pass::Fwd ? "fwd" : "bwd") + keys(cs),
                          [=](benchmark::State& st) { bench_builtin_causal(st, cs, pass); });

  const AttentionShape ss = variants::cases::sparse_shape();
  Variant dense;
  dense.kind = Kind::Dense;
  both("dense", ss, dense);
  for (double density : variants::cases::kDensities) {
    Variant v;
    v.kind = Kind::Tiles, v.tile_density = density;
    both("tiles" + std::to_string(int(density * 100 + 0.5)), ss, v);
  }

  const variants::cases::Case docs = variants::cases::headline()[1];
  const int count = int(docs.v.doc_lengths.size());
  const AttentionShape eq = ladder::attention_shape(count, 16, 16, docs.s.N / count, docs.s.N / count, 128, false);
  ladder::gpu_benchmark("train:documents" + keys(docs.s),
                        [=](benchmark::State& st) { bench_variant(st, docs.s, docs.v, Pass::Train); });
  ladder::gpu_benchmark("anchor:equal_lengths/train" + keys(eq),
                        [=](benchmark::State& st) { bench_builtin_causal(st, eq, Pass::Train); });
  return true;
}();

}  // namespace
