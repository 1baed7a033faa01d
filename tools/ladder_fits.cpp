// Which chapters run on which GPU, and on what tiles: worked out from the chapters' own
// launchers (the functions their launchers call to pick a configuration: fit.h), for the
// limits of each GPU a learner may own (ladder::limits_of, the caps LADDER_DEVICE_LIMITS
// takes). Writes the `Runs on` line of each chapter README and the top README's matrix,
// between their markers, and checks them (a CPU test: a line that disagrees with the
// kernels' formulas fails it).
//   ladder_fits                 the matrix, as text
//   ladder_fits --gpu sm86      one GPU's column: what runs, on what tiles
//   ladder_fits --write ROOT    rewrite the README blocks under ROOT
//   ladder_fits --check ROOT    exit 1, naming the file, when a block differs from what --write writes
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "06_fa2_forward/fa_forward.h"
#include "07_fa_backward/fa_backward.h"
#include "08_spilling_study/spill.h"
#include "09_tensor_core_matmul/tc_matmul.h"
#include "10_fa2_tensor_cores/fa2_tc.h"
#include "11_flash_decoding/flash_decoding.h"
#include "fit.h"

namespace {

struct Gpu {
  std::string name, cap;  // cap: as LADDER_DEVICE_LIMITS ("" = an H100 or H200)
};
const std::vector<Gpu> kGpus = {{"H100/H200", ""}, {"A100", "sm80"}, {"RTX 30/40/50", "sm86"}, {"T4", "sm75"}};

std::size_t smem(const Gpu& g) { return ladder::limits_of(g.cap).smem_per_block_optin; }
int cc(const Gpu& g) {
  const ladder::DeviceInfo d = ladder::limits_of(g.cap);
  return d.cc_major * 10 + d.cc_minor;
}
std::string kib(std::size_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f KiB", bytes / 1024.0);
  return buf;
}

// What one chapter does on one GPU: the README's line ("yes", "yes (notes)", "no (why)") and
// the matrix's cell ("yes", what is smaller, or "no").
struct Cell {
  std::string line, brief;
};

std::string join(const std::vector<std::string>& parts) {
  std::string s;
  for (const std::string& p : parts) s += (s.empty() ? "" : "; ") + p;
  return s;
}
// Runs; `notes` say on what (smaller tiles, fewer steps), and `brief` sums them up for the
// matrix (default "smaller tiles" when there are notes).
Cell yes(const std::vector<std::string>& notes = {}, const std::string& brief = "") {
  if (notes.empty()) return {"yes", brief.empty() ? "yes" : brief};
  return {"yes (" + join(notes) + ")", brief.empty() ? "smaller tiles" : brief};
}
Cell no(const std::string& why) { return {"no (" + why + ")", "no"}; }

Cell ch06(const Gpu& g) {
  std::vector<std::string> notes;
  for (int d : fa2::kSupportedD) {
    const std::vector<ladder::Candidate> options = fa2::tile_options(d);
    const ladder::Fit f = ladder::first_that_fits(options, smem(g));
    if (f.index < 0)
      notes.push_back("not d = " + std::to_string(d) + ": " + options.back().name + " needs " +
                      kib(options.back().smem_bytes));
    else if (f.fell_back)
      notes.push_back("d = " + std::to_string(d) + " on " + options[f.index].name + " tiles");
  }
  return yes(notes);
}

Cell ch07(const Gpu& g) {
  if (cc(g) < 80) return no("cp.async needs sm_80");
  std::vector<std::string> notes;
  for (int d : fa2::kSupportedD) {
    const fa2::BackwardTiles t = fa2::backward_tiles({1, 1, 64, d, false}, smem(g));
    if (t.index != 0)
      notes.push_back("d = " + std::to_string(d) + " on " + std::to_string(t.B_r) + " x " + std::to_string(t.B_c) +
                      " tiles");
  }
  return yes(notes);
}

Cell ch08(const Gpu& g) {
  int over = 0, all = 0;
  for (const spill::Variant& v : spill::variants()) ++all, over += spill::smem_bytes(v) > smem(g);
  if (over == 0) return yes();
  return yes({std::to_string(over) + " of the " + std::to_string(all) + " sweep variants need more shared memory"},
             "most of the sweep");
}

Cell ch09(const Gpu& g) {
  if (cc(g) < 80) return no("bf16 mma.sync needs sm_80");
  std::vector<std::string> notes;
  if (cc(g) != 90) notes.push_back("steps 1-4; steps 5-8 need an H100/H200");
  if (tcmm::pipeline_stages(smem(g)) != 3)
    notes.push_back("step 4 with " + std::to_string(tcmm::pipeline_stages(smem(g))) + " stages");
  return yes(notes, notes.empty() ? "" : "steps 1-4");
}

Cell ch10(const Gpu& g) {
  if (cc(g) < 80) return no("bf16 mma.sync needs sm_80");
  std::vector<std::string> notes;
  for (int d : fa2tc::kSupportedD) {
    const int f = fa2tc::forward_fit(d, smem(g)), b = fa2tc::backward_fit(d, smem(g));
    if (f != 0) notes.push_back("d = " + std::to_string(d) + " forward " + fa2tc::forward_configs(d)[f].name);
    if (b != 0) notes.push_back("d = " + std::to_string(d) + " backward " + fa2tc::backward_configs(d)[b].name);
  }
  return yes(notes);
}

Cell ch11(const Gpu& g) {
  if (cc(g) < 80) return no("bf16 mma.sync needs sm_80");
  std::vector<std::string> notes;
  for (int d : fdec::kSupportedD) {
    const int f = fdec::fit(d, smem(g));
    if (f != 0) notes.push_back("d = " + std::to_string(d) + " on " + fdec::configs(d)[f].name);
  }
  return yes(notes);
}

Cell hopper_only(const Gpu& g) { return cc(g) == 90 ? yes() : no("wgmma, TMA: sm_90a"); }

Cell ch13(const Gpu& g) { return cc(g) < 80 ? no("chapter 10's kernels need sm_80") : ch10(g); }

Cell ch16(const Gpu& g) {
  if (cc(g) < 80) return no("chapter 10's kernels need sm_80");
  if (cc(g) == 90) return {"yes (chapters 12, 14 and 15's kernels)", "yes"};
  const Cell fa2 = ch10(g);
  return yes({"dense and causal on chapters 10 and 11's kernels" +
                  (fa2.line == "yes" ? std::string() : std::string(" (") + fa2.line.substr(5)),
              "other masks need an H100/H200"},
             "dense, causal");
}

struct Chapter {
  std::string dir;
  Cell (*on)(const Gpu&);
  std::string without_gpu;  // what a learner without a GPU runs
};
const std::vector<Chapter>& chapters() {
  static const std::vector<Chapter> all = {
      {"01_vector_add", [](const Gpu&) { return yes(); }, "the thread model and the CPU tests"},
      {"02_matmul_naive", [](const Gpu&) { return yes(); },
       "the warp coalescing model (--print-model) and the CPU tests"},
      {"03_matmul_tiled", [](const Gpu&) { return yes(); }, "the CPU tests and the published run"},
      {"04_online_softmax", [](const Gpu&) { return yes(); }, "the online-softmax model and its exercises"},
      {"05_fa1_forward", [](const Gpu&) { return yes(); }, "the tile model (Algorithm 1 in fp64)"},
      {"06_fa2_forward", ch06, "the tile model and the exercise's CPU part"},
      {"07_fa_backward", ch07, "the loop trace and the softmax-backward exercise"},
      {"08_spilling_study", ch08, "the ptxas report (needs only nvcc)"},
      {"09_tensor_core_matmul", ch09, "the fragment and swizzle models, the SASS exercises"},
      {"10_fa2_tensor_cores", ch10, "the CPU tests and the published run"},
      {"11_flash_decoding", ch11, "the split model and the split-count arithmetic"},
      {"12_fa3_hopper", hopper_only, "the CPU models, the SASS and ptxas exercises (nvcc only), the published run"},
      {"13_ring_attention", ch13, "the ring schedule model"},
      {"14_fa3_backward", hopper_only, "the CPU models and the published run"},
      {"15_attention_variants", hopper_only, "the block-mask model and the published run"},
      {"16_attention_in_a_model", ch16, "the operators' CPU checks (PyTorch on the CPU)"},
  };
  return all;
}

// The chapter README's block: one line per GPU, then the machine without one.
std::string runs_on(const Chapter& c) {
  std::string s;
  for (const Gpu& g : kGpus) s += "- " + g.name + ": " + c.on(g).line + "\n";
  s += "- no GPU: " + c.without_gpu + "\n";
  return s;
}

// The top README's matrix: chapters down, GPUs across; a cell says "yes", what is smaller
// there (the chapter's README says how), or "no".
std::string matrix() {
  std::string s = "| chapter |";
  for (const Gpu& g : kGpus) s += " " + g.name + " |";
  s += " no GPU |\n|---|";
  for (std::size_t i = 0; i <= kGpus.size(); ++i) s += "---|";
  s += "\n";
  for (const Chapter& c : chapters()) {
    s += "| " + c.dir.substr(0, 2) + " |";
    for (const Gpu& g : kGpus) s += " " + c.on(g).brief + " |";
    s += " CPU parts |\n";
  }
  return s;
}

// Replaces what lies between "<!-- NAME -->\n" and "<!-- /NAME -->" in `text` with `body`;
// false when the markers are not there.
bool replace_block(std::string& text, const std::string& name, const std::string& body) {
  const std::string open = "<!-- " + name + " -->\n", close = "<!-- /" + name + " -->";
  const std::size_t a = text.find(open);
  if (a == std::string::npos) return false;
  const std::size_t b = text.find(close, a);
  if (b == std::string::npos) return false;
  text.replace(a + open.size(), b - a - open.size(), body);
  return true;
}

std::string read(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// --write / --check over ROOT: returns the files that differ (written when write is true).
std::vector<std::string> sync(const std::string& root, bool write) {
  std::vector<std::pair<std::string, std::pair<std::string, std::string>>> blocks;
  for (const Chapter& c : chapters()) blocks.push_back({c.dir + "/README.md", {"runs-on", runs_on(c)}});
  blocks.push_back({"README.md", {"runs-on-matrix", matrix()}});
  std::vector<std::string> differ;
  for (const auto& [file, block] : blocks) {
    const std::string path = root + "/" + file;
    const std::string before = read(path);
    std::string after = before;
    if (!replace_block(after, block.first, block.second)) continue;  // no markers (yet): nothing to keep in step
    if (after == before) continue;
    differ.push_back(file);
    if (write) std::ofstream(path) << after;
  }
  return differ;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  const std::string usage = "usage: ladder_fits [--gpu sm75|sm80|sm86|sm89|sm120|h100] [--write ROOT | --check ROOT]";
  try {
    if (args.empty()) {
      std::cout << matrix();
      return 0;
    }
    if (args.size() != 2) throw std::invalid_argument(usage);
    if (args[0] == "--gpu") {
      const std::string cap = args[1] == "h100" ? "" : args[1];
      ladder::limits_of(cap);  // refuses an unknown cap, naming them
      const Gpu g{args[1], cap};
      for (const Chapter& c : chapters()) std::cout << c.dir << ": " << c.on(g).line << "\n";
      return 0;
    }
    if (args[0] == "--write" || args[0] == "--check") {
      const bool write = args[0] == "--write";
      const std::vector<std::string> differ = sync(args[1], write);
      for (const std::string& f : differ)
        std::cout << f
                  << (write ? ": Runs on block rewritten\n" : ": Runs on block is stale: run ladder_fits --write .\n");
      return !write && !differ.empty() ? 1 : 0;
    }
    throw std::invalid_argument(usage);
  } catch (const std::exception& e) {
    std::cerr << "ladder_fits: " << e.what() << "\n";
    return 2;
  }
}
