// What the compiler said about each kernel: `nvcc -Xptxas -v` run over spill.cu at build time (see
// CMakeLists.txt), its output embedded in the library, parsed here. No GPU needed.
#pragma once

#include <string>
#include <vector>

#include "spill.h"

namespace spill {

struct PtxasEntry {
  std::string function;                  // e.g. "fa2_forward" (unqualified, from the mangled name)
  std::vector<long long> template_args;  // e.g. {128, 8, 32, 0} for fa2_forward<128, 8, 32, false>
  std::string mangled;
  int registers = -1;                                      // "Used N registers"
  int stack_frame = 0, spill_stores = 0, spill_loads = 0;  // bytes per thread
};

// Every entry function in the text ptxas -v prints, in order.
std::vector<PtxasEntry> parse_ptxas(const std::string& log);

// The log captured when this library was built, and its parsed entries.
const std::string& captured_ptxas_log();
const std::vector<PtxasEntry>& captured_ptxas();

// The captured entry of variant v. Throws std::out_of_range when the log has none.
const PtxasEntry& ptxas_entry(const Variant& v);

}  // namespace spill
