// The Python module flash_ladder._C: the chapters' entry points with tensors passed as device
// addresses (Python ints) and sizes. The tensors themselves, their allocation (PyTorch's caching
// allocator), the dtype and device checks and autograd live in flash_ladder/ops.py; this layer only
// turns integers into pointers and the chapters' exceptions into Python's (std::invalid_argument ->
// ValueError). No PyTorch headers: the module builds, and its checks run, without PyTorch.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "10_fa2_tensor_cores/fa2_tc.h"
#include "11_flash_decoding/flash_decoding.h"
#include "12_fa3_hopper/fa3.h"
#include "14_fa3_backward/fa3_bwd.h"
#include "attention_ops.h"
#include "device.h"

namespace nb = nanobind;

namespace {

template <class T>
T* at(std::uintptr_t address) {
  return reinterpret_cast<T*>(address);
}
cudaStream_t stream_at(std::uintptr_t s) { return reinterpret_cast<cudaStream_t>(s); }

ops::Variant variant(const std::string& mask, int left, int right, int prefix, std::uintptr_t doc,
                     const std::string& score, float softcap, std::uintptr_t slopes) {
  ops::Variant v;
  v.mask = ops::mask_from_name(mask);
  v.window_left = left, v.window_right = right, v.prefix = prefix;
  v.doc = at<const int>(doc);
  v.score = ops::score_mod_from_name(score);
  v.softcap = softcap;
  v.slopes = at<const float>(slopes);
  return v;
}

// block_table 0: a contiguous cache of `capacity` keys per slab; else pages.
ops::KvCache cache(std::uintptr_t K, std::uintptr_t V, int capacity, std::uintptr_t block_table, int num_pages,
                   int page_size, int max_pages_per_seq) {
  ops::KvCache c;
  c.K = at<ladder::bf16>(K), c.V = at<ladder::bf16>(V), c.block_table = at<const int>(block_table);
  if (block_table == 0)
    c.capacity = capacity;
  else
    c.num_pages = num_pages, c.page_size = page_size, c.max_pages_per_seq = max_pages_per_seq;
  return c;
}

// A step of a chapter by its name ("intrawg", "bulk", ...), or std::invalid_argument naming them all.
template <class Step, std::size_t N>
Step step_named(const std::string& who, const std::string& n, const Step (&all)[N]) {
  std::string names;
  for (Step s : all) {
    if (n == name(s)) return s;
    names += std::string(names.empty() ? "" : ", ") + name(s);
  }
  throw std::invalid_argument(who + ": step '" + n + "' is not one of: " + names);
}

ladder::AttentionShape with_causal(ladder::AttentionShape s, bool causal) {
  s.causal = causal;
  return s;
}

}  // namespace

NB_MODULE(_C, m) {
  m.doc() = "flash-ladder's attention kernels (chapters 10-15) for flash_ladder.ops";

  nb::class_<ladder::AttentionShape>(m, "AttentionShape")
      .def(nb::init<>())
      .def_rw("B", &ladder::AttentionShape::B)
      .def_rw("H", &ladder::AttentionShape::H)
      .def_rw("N", &ladder::AttentionShape::N)
      .def_rw("d", &ladder::AttentionShape::d)
      .def_rw("H_kv", &ladder::AttentionShape::H_kv)
      .def_rw("N_kv", &ladder::AttentionShape::N_kv)
      .def("__repr__", &ladder::AttentionShape::str);

  nb::class_<fdec::DecodeShape>(m, "DecodeShape")
      .def(nb::init<>())
      .def_rw("B", &fdec::DecodeShape::B)
      .def_rw("H_q", &fdec::DecodeShape::H_q)
      .def_rw("H_kv", &fdec::DecodeShape::H_kv)
      .def_rw("n_q", &fdec::DecodeShape::n_q)
      .def_rw("d", &fdec::DecodeShape::d)
      .def_rw("max_seq_len", &fdec::DecodeShape::max_seq_len)
      .def("__repr__", &fdec::DecodeShape::str);

  m.def("describe_device", &ladder::describe_device, "The GPU this process sees, in one line.");

  m.def(
      "kernels",
      [](const ladder::AttentionShape& s, const std::string& mask, const std::string& score, bool hopper,
         bool any_gpu) {
        return std::string(
            ops::name(ops::choose(s, ops::mask_from_name(mask), ops::score_mod_from_name(score), hopper, any_gpu)));
      },
      nb::arg("shape"), nb::arg("mask"), nb::arg("score"), nb::arg("hopper"), nb::arg("any_gpu"),
      "Which chapter's kernels run this shape and variant on a GPU with (hopper) or without sm_90a.");

  m.def(
      "forward",
      [](const ladder::AttentionShape& s, const std::string& mask, int left, int right, int prefix, std::uintptr_t doc,
         const std::string& score, float softcap, std::uintptr_t slopes, std::uintptr_t Q, std::uintptr_t K,
         std::uintptr_t V, std::uintptr_t O, std::uintptr_t L, std::uintptr_t stream) {
        ops::forward(s, variant(mask, left, right, prefix, doc, score, softcap, slopes), at<const ladder::bf16>(Q),
                     at<const ladder::bf16>(K), at<const ladder::bf16>(V), at<ladder::bf16>(O), at<float>(L),
                     stream_at(stream));
      },
      nb::call_guard<nb::gil_scoped_release>());

  m.def("backward_workspace_floats",
        [](const ladder::AttentionShape& s, const std::string& mask, const std::string& score) {
          return ops::backward_workspace_floats(s, ops::mask_from_name(mask), ops::score_mod_from_name(score));
        });

  m.def(
      "backward",
      [](const ladder::AttentionShape& s, const std::string& mask, int left, int right, int prefix, std::uintptr_t doc,
         const std::string& score, float softcap, std::uintptr_t slopes, std::uintptr_t Q, std::uintptr_t K,
         std::uintptr_t V, std::uintptr_t O, std::uintptr_t L, std::uintptr_t dO, std::uintptr_t dQ, std::uintptr_t dK,
         std::uintptr_t dV, std::uintptr_t workspace, std::uintptr_t stream) {
        ops::backward(s, variant(mask, left, right, prefix, doc, score, softcap, slopes), at<const ladder::bf16>(Q),
                      at<const ladder::bf16>(K), at<const ladder::bf16>(V), at<const ladder::bf16>(O),
                      at<const float>(L), at<const ladder::bf16>(dO), at<ladder::bf16>(dQ), at<ladder::bf16>(dK),
                      at<ladder::bf16>(dV), at<float>(workspace), stream_at(stream));
      },
      nb::call_guard<nb::gil_scoped_release>());

  // One chapter's kernel by name, for the accuracy tests that hold every chapter to flash-attention's
  // criterion (tests/test_chapters_accuracy.py): chapter 10 ("fa2") or 12 ("fa3", a step; eager_rescale
  // as fa3::ForwardOptions) forward; chapter 10 ("fa2", dQ path) or 14 ("fa3", a step) backward.
  m.def(
      "chapter_forward",
      [](const std::string& chapter, const std::string& step, bool eager_rescale, const ladder::AttentionShape& s,
         bool causal, std::uintptr_t Q, std::uintptr_t K, std::uintptr_t V, std::uintptr_t O, std::uintptr_t L,
         std::uintptr_t stream) {
        const ladder::AttentionShape c = with_causal(s, causal);
        if (chapter == "fa2") {
          if (eager_rescale || !step.empty())
            throw std::invalid_argument("chapter_forward: chapter 10's forward takes no step and no max rule");
          return fa2tc::forward(c, at<const ladder::bf16>(Q), at<const ladder::bf16>(K), at<const ladder::bf16>(V),
                                at<ladder::bf16>(O), at<float>(L), stream_at(stream));
        }
        if (chapter != "fa3") throw std::invalid_argument("chapter_forward: chapter '" + chapter + "': fa2 or fa3");
        fa3::ForwardOptions o;
        o.step = step.empty() ? fa3::kBestStep : step_named("chapter_forward", step, fa3::kAllSteps);
        o.eager_rescale = eager_rescale;
        fa3::forward(c, at<const ladder::bf16>(Q), at<const ladder::bf16>(K), at<const ladder::bf16>(V),
                     at<ladder::bf16>(O), at<float>(L), o, stream_at(stream));
      },
      nb::call_guard<nb::gil_scoped_release>());
  m.def("chapter_backward_workspace_floats",
        [](const std::string& chapter, const ladder::AttentionShape& s, bool causal) {
          const ladder::AttentionShape c = with_causal(s, causal);
          if (chapter != "fa2") return fa3bwd::backward_workspace_floats(c);
          return std::max(fa2tc::backward_workspace_floats(c, fa2tc::DqPath::Atomic),  // enough for either path
                          fa2tc::backward_workspace_floats(c, fa2tc::DqPath::Deterministic));
        });
  m.def(
      "chapter_backward",
      [](const std::string& chapter, const std::string& step, const ladder::AttentionShape& s, bool causal,
         std::uintptr_t Q, std::uintptr_t K, std::uintptr_t V, std::uintptr_t O, std::uintptr_t L, std::uintptr_t dO,
         std::uintptr_t dQ, std::uintptr_t dK, std::uintptr_t dV, std::uintptr_t workspace, std::uintptr_t stream) {
        const ladder::AttentionShape c = with_causal(s, causal);
        const auto* q = at<const ladder::bf16>(Q);
        const auto* k = at<const ladder::bf16>(K);
        const auto* v = at<const ladder::bf16>(V);
        const auto* o = at<const ladder::bf16>(O);
        const auto* d_o = at<const ladder::bf16>(dO);
        if (chapter == "fa2") {
          fa2tc::BackwardOptions b;
          b.path = step.empty() ? fa2tc::DqPath::Atomic : step_named("chapter_backward", step, fa2tc::kAllDqPaths);
          return fa2tc::backward(c, q, k, v, o, at<const float>(L), d_o, at<ladder::bf16>(dQ), at<ladder::bf16>(dK),
                                 at<ladder::bf16>(dV), at<float>(workspace), b, stream_at(stream));
        }
        if (chapter != "fa3") throw std::invalid_argument("chapter_backward: chapter '" + chapter + "': fa2 or fa3");
        fa3bwd::BackwardOptions b;
        b.step = step.empty() ? fa3bwd::kBestStep : step_named("chapter_backward", step, fa3bwd::kAllSteps);
        fa3bwd::backward(c, q, k, v, o, at<const float>(L), d_o, at<ladder::bf16>(dQ), at<ladder::bf16>(dK),
                         at<ladder::bf16>(dV), at<float>(workspace), b, stream_at(stream));
      },
      nb::call_guard<nb::gil_scoped_release>());

  m.def("decode_workspace_bytes", [](const fdec::DecodeShape& s) { return ops::decode_workspace_bytes(s); });
  m.def("decode_plan", [](const fdec::DecodeShape& s) { return fdec::plan(s).str(); });

  m.def(
      "append_kv",
      [](std::uintptr_t K, std::uintptr_t V, int capacity, std::uintptr_t block_table, int num_pages, int page_size,
         int max_pages_per_seq, int B, int H_kv, int d, std::uintptr_t seq_lens, std::uintptr_t K_new,
         std::uintptr_t V_new, int n_new, std::uintptr_t stream) {
        ops::append_kv(cache(K, V, capacity, block_table, num_pages, page_size, max_pages_per_seq), B, H_kv, d,
                       at<const int>(seq_lens), at<const ladder::bf16>(K_new), at<const ladder::bf16>(V_new), n_new,
                       nullptr, stream_at(stream));
      },
      nb::call_guard<nb::gil_scoped_release>());

  m.def(
      "decode",
      [](const fdec::DecodeShape& s, std::uintptr_t Q, std::uintptr_t K, std::uintptr_t V, int capacity,
         std::uintptr_t block_table, int num_pages, int page_size, int max_pages_per_seq, std::uintptr_t seq_lens,
         std::uintptr_t K_new, std::uintptr_t V_new, int n_new, std::uintptr_t O, std::uintptr_t workspace,
         std::uintptr_t stream) {
        ops::decode(s, at<const ladder::bf16>(Q),
                    cache(K, V, capacity, block_table, num_pages, page_size, max_pages_per_seq),
                    at<const int>(seq_lens), at<const ladder::bf16>(K_new), at<const ladder::bf16>(V_new), n_new,
                    at<ladder::bf16>(O), at<void>(workspace), stream_at(stream));
      },
      nb::call_guard<nb::gil_scoped_release>());
}
