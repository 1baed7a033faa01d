// Command line of every chapter executable, and the one place where errors turn
// into messages and exit codes:
//   bad input (unknown flag, non-numeric or out-of-range size) -> message + usage, exit 2
//   a failed CUDA call                                          -> message, exit 1
#pragma once

#include <functional>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "attention_shape.h"
#include "compare.h"

namespace ladder {

class Args {
 public:
  Args(int argc, char** argv);
  // --name N; N must be a whole number in [min, max] (parsed in 64 bits, so a value past
  // the range is refused with the range, never truncated).
  long long integer(const std::string& name, long long fallback, long long min = 1, long long max = kIntMax);
  // --name a,b,c of whole numbers in [min, max].
  std::vector<long long> integers(const std::string& name, const std::vector<long long>& fallback, long long min = 1,
                                  long long max = kIntMax);
  static constexpr long long kIntMax = 2147483647;  // what an int holds
  // --name X. A name given without its value is refused, saying what it is missing (`what`:
  // "a file name", ...), here as in integer() and choice().
  std::string text(const std::string& name, const std::string& fallback = "", const std::string& what = "");
  // --name X where X must be one of `allowed` (checked now, on every machine).
  std::string choice(const std::string& name, const std::vector<std::string>& allowed, const std::string& fallback);
  bool flag(const std::string& name);
  // Whether --name is on the command line (read or not).
  bool given(const std::string& name) const;
  // What was given for --name, unparsed ("" when it was not given).
  std::string raw(const std::string& name) const;
  // A flag that means something only beside another: when `name` was given and `have` is false,
  // throws "<name> only works with <needed>: add it, or leave <name> out" (with `got`, what was
  // given instead: "<name> only works with <needed>, not with <got>").
  void needs(const std::string& name, bool have, const std::string& needed, const std::string& got = "") const;
  // A flag that makes the run do one thing and exit (--profile, --print-model, --trace): throws
  // "<other> does nothing with <mode> (<does>): leave one of them out" for the first of `others`
  // given beside it, so that none of them is silently ignored.
  void exclusive(const std::string& mode, const std::string& does, const std::vector<std::string>& others) const;
  // Throws if an argument was given that no one asked for.
  void done() const;
  // Flags that only steer the GPU run. Without a GPU, run_main says in one line which of them
  // were given and did nothing. Every chapter's --repeats, --warmup, --no-flush, --profile,
  // --check-N and --dump are; a chapter adds its own here.
  void gpu_only(const std::vector<std::string>& names);
  // The GPU-only flags given on the command line, "--a, --b" ("" when none).
  std::string gpu_only_given() const;

 private:
  std::map<std::string, std::string> values_;  // "--name" -> value ("" for flags)
  mutable std::map<std::string, bool> used_;
  std::vector<std::string> gpu_only_;
};

// The flags every chapter executable takes.
struct CommonFlags {
  bool summary = false;  // --summary: print only the one-line summary (the `ladder` target uses it)
  // --dump DIR: write inputs and outputs as .npy. Checked up front on every machine (an existing
  // directory must take a file; a new one, its nearest existing parent must be a directory it can
  // be made in), but created only when the first array is written (ladder::Dumper, on a GPU).
  std::string dump_dir;
};
// no_dump: for an executable that writes no arrays, why (--dump is then refused with it).
CommonFlags common_flags(Args& args, const std::string& no_dump = "");
// --B --H --N --d and --mask dense|causal for the attention chapters (with_mask: false
// when the chapter reads --mask itself).
AttentionShape attention_shape_flags(Args& args, AttentionShape fallback, bool with_mask = true);
// --H-kv and --N-kv (chapters 10+: GQA and N_kv != N), defaults H and N.
void kv_shape_flags(Args& args, AttentionShape& s);
// The flags of the bf16 chapters (10, 12, 14), described once and read once: the shape
// (attention_shape_flags and kv_shape_flags, default B=4 H=16 N=4096 d=128 dense) and --check-N.
struct GqaAttentionFlags {
  AttentionShape shape;
  int check_N = 1000;  // the correctness checks' sequence length (the fp64 reference's time)
};
GqaAttentionFlags gqa_attention_flags(Args& args);
inline constexpr const char* kGqaAttentionUsage =
    "  --B B --H H --N N --d D     shape of Q, O: [B, H, N, d] (default 4 16 4096 128; d in 64, 128)\n"
    "  --H-kv H                    KV heads (GQA: H a multiple of H_kv; default H)\n"
    "  --N-kv N                    keys per head (default N)\n"
    "  --mask dense|causal         causal: query i sees keys j <= i + N_kv - N (default dense)\n"
    "  --check-N N                 sequence length of the correctness checks (default 1000, at most 16384;\n"
    "                              B=2 H=4 H_kv=2)\n";
inline constexpr const char* kAttentionUsage =
    "  --B B --H H --N N --d D     shape of Q, K, V, O: [B, H, N, d]\n"
    "  --mask dense|causal         causal: query i sees keys 0..i only (default dense)\n";
// Throws std::invalid_argument when `bytes` of device memory (what the run allocates)
// are more than the GPU has (without a GPU: more than an H200's), naming both.
void check_device_memory(const std::string& what, double bytes);
// Throws std::invalid_argument when a CPU model would loop more than `most` times.
void check_cpu_work(const std::string& what, double steps, double most = 1e9);

inline constexpr const char* kCommonUsage =
    "  --summary     print one summary line only\n"
    "  --dump DIR    write inputs and outputs as .npy files to DIR\n"
    "  --help        this text\n";

// Runs body(args), mapping exceptions to messages and exit codes (see above). Without a GPU,
// it then names on stderr the GPU-only flags given (Args::gpu_only).
int run_main(int argc, char** argv, const std::string& usage, const std::function<int(Args&)>& body);

// What a chapter executable prints: details (suppressed by --summary), checks
// against the reference, and the one summary line the ladder shows.
class Report {
 public:
  Report(std::string chapter, bool summary_only);
  std::ostream& out();
  // Records whether `c` is within `bound`; prints the detail line.
  bool check(const std::string& what, const Comparison& c, const Bound& bound);
  bool all_passed() const { return failures_ == 0; }
  // "<chapter>  PASS  <text>" (FAIL when a check failed). Returns the exit code.
  int summary(const std::string& text) const;
  // No GPU: says so plainly, returns 0 (the CPU parts ran).
  int gpu_skipped(const std::string& cpu_text) const;

 private:
  std::string chapter_;
  bool summary_only_;
  int failures_ = 0;
};

}  // namespace ladder
