#include "cli.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <system_error>

#include <unistd.h>

#include "cuda_check.h"
#include "device.h"

namespace ladder {

namespace {
std::string range(long long min, long long max) {
  return "between " + std::to_string(min) + " and " + std::to_string(max);
}

std::invalid_argument missing_value(const std::string& name, const std::string& what) {
  return std::invalid_argument(name + " is missing its value" + (what.empty() ? "" : ": " + what));
}

long long parse_integer(const std::string& name, const std::string& s, long long min, long long max) {
  std::size_t used = 0;
  long long v = 0;
  bool out_of_range = false;
  try {
    v = std::stoll(s, &used);
  } catch (const std::out_of_range&) {
    out_of_range = true;
    used = s.size();
  } catch (const std::exception&) {
    used = 0;
  }
  if (s.empty() || used != s.size()) throw std::invalid_argument(name + " expects a whole number, got '" + s + "'");
  if (out_of_range || v < min || v > max)
    throw std::invalid_argument(name + " must be " + range(min, max) + ", got " + s);
  return v;
}

// --dump DIR, checked without creating anything: an existing DIR must be a directory that takes a
// file; a new one must have a directory it can be made in as its nearest existing parent.
void check_dump_dir(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const std::string flag = "--dump " + dir + ": ";
  if (fs::exists(dir, ec)) {
    if (!fs::is_directory(dir, ec)) throw std::invalid_argument(flag + "that is a file, not a directory");
    const std::string probe = dir + "/.ladder_write_test";
    if (!std::ofstream(probe)) throw std::invalid_argument(flag + "cannot write in that directory");
    fs::remove(probe, ec);
    return;
  }
  fs::path parent = fs::absolute(dir, ec).lexically_normal();
  if (!parent.has_filename()) parent = parent.parent_path();  // "out/" names out
  do parent = parent.parent_path();
  while (!fs::exists(parent, ec) && parent != parent.root_path() && !parent.empty());
  if (!fs::is_directory(parent, ec))
    throw std::invalid_argument(flag + "cannot make that directory: " + parent.string() + " is not a directory");
  if (access(parent.c_str(), W_OK | X_OK) != 0)
    throw std::invalid_argument(flag + "cannot make that directory in " + parent.string() + " (" +
                                std::generic_category().message(errno) + ")");
}

struct NullBuffer : std::streambuf {
  int overflow(int c) override { return c; }
};
}  // namespace

Args::Args(int argc, char** argv)
    : gpu_only_{"--repeats", "--warmup", "--no-flush", "--profile", "--check-N", "--dump"} {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--", 0) != 0) throw std::invalid_argument("unexpected argument '" + a + "'");
    std::string value;
    const auto eq = a.find('=');
    if (eq != std::string::npos) {
      value = a.substr(eq + 1);
      a = a.substr(0, eq);
    } else if (i + 1 < argc && std::string(argv[i + 1]).rfind("--", 0) != 0) {
      value = argv[++i];
    }
    // Given twice, one of the two would be ignored without a word.
    if (values_.count(a)) throw std::invalid_argument(a + " is given twice: give it once");
    values_[a] = value;
  }
}

long long Args::integer(const std::string& name, long long fallback, long long min, long long max) {
  used_[name] = true;
  const auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  if (it->second.empty()) throw missing_value(name, "a whole number " + range(min, max));
  return parse_integer(name, it->second, min, max);
}

std::vector<long long> Args::integers(const std::string& name, const std::vector<long long>& fallback, long long min,
                                      long long max) {
  used_[name] = true;
  const auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  if (it->second.empty()) throw missing_value(name, "a comma-separated list of whole numbers " + range(min, max));
  std::vector<long long> out;
  std::stringstream ss(it->second);
  for (std::string item; std::getline(ss, item, ',');) out.push_back(parse_integer(name, item, min, max));
  if (out.empty()) throw std::invalid_argument(name + " expects a comma-separated list of whole numbers");
  return out;
}

std::string Args::text(const std::string& name, const std::string& fallback, const std::string& what) {
  used_[name] = true;
  const auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  if (it->second.empty()) throw missing_value(name, what);
  return it->second;
}

std::string Args::choice(const std::string& name, const std::vector<std::string>& allowed,
                         const std::string& fallback) {
  std::string list;
  for (const std::string& a : allowed) list += (list.empty() ? "" : ", ") + a;
  const std::string v = text(name, fallback, "one of " + list);
  for (const std::string& a : allowed)
    if (a == v) return v;
  if (v == fallback && !given(name)) return v;  // the fallback may be "" (not given)
  throw std::invalid_argument(name + " expects one of " + list + ", got '" + v + "'");
}

bool Args::flag(const std::string& name) {
  used_[name] = true;
  const auto it = values_.find(name);
  if (it == values_.end()) return false;
  if (!it->second.empty()) throw std::invalid_argument(name + " takes no value, got '" + it->second + "'");
  return true;
}

bool Args::given(const std::string& name) const { return values_.count(name) != 0; }

std::string Args::raw(const std::string& name) const {
  const auto it = values_.find(name);
  return it == values_.end() ? "" : it->second;
}

void Args::needs(const std::string& name, bool have, const std::string& needed, const std::string& got) const {
  if (given(name) && !have)
    throw std::invalid_argument(name + " only works with " + needed +
                                (got.empty() ? ": add it, or leave " + name + " out" : ", not with " + got));
}

void Args::exclusive(const std::string& mode, const std::string& does, const std::vector<std::string>& others) const {
  if (!given(mode)) return;
  for (const std::string& o : others)
    if (given(o))
      throw std::invalid_argument(o + " does nothing with " + mode + " (" + does + "): leave one of them out");
}

void Args::done() const {
  for (const auto& [name, value] : values_)
    if (!used_.count(name)) throw std::invalid_argument("unknown option " + name);
}

void Args::gpu_only(const std::vector<std::string>& names) {
  gpu_only_.insert(gpu_only_.end(), names.begin(), names.end());
}

std::string Args::gpu_only_given() const {
  std::string given;
  for (const auto& [name, value] : values_)
    if (std::find(gpu_only_.begin(), gpu_only_.end(), name) != gpu_only_.end())
      given += (given.empty() ? "" : ", ") + name;
  return given;
}

CommonFlags common_flags(Args& args, const std::string& no_dump) {
  CommonFlags f;
  f.summary = args.flag("--summary");
  f.dump_dir = args.text("--dump", "", "a directory");
  if (!f.dump_dir.empty() && !no_dump.empty()) throw std::invalid_argument("--dump: " + no_dump);
  // Now, on every machine: not after minutes of work, not only with a GPU; but made only when
  // something is written to it (a run without a GPU writes nothing and leaves no directory).
  if (!f.dump_dir.empty()) check_dump_dir(f.dump_dir);
  return f;
}

AttentionShape attention_shape_flags(Args& args, AttentionShape fallback, bool with_mask) {
  AttentionShape s = fallback;
  s.B = static_cast<int>(args.integer("--B", fallback.B));
  s.H = static_cast<int>(args.integer("--H", fallback.H));
  s.N = static_cast<int>(args.integer("--N", fallback.N));
  s.d = static_cast<int>(args.integer("--d", fallback.d, 1, 1024));
  if (with_mask)
    s.causal = args.choice("--mask", {"dense", "causal"}, fallback.causal ? "causal" : "dense") == "causal";
  return s;
}

void kv_shape_flags(Args& args, AttentionShape& s) {
  s.H_kv = static_cast<int>(args.integer("--H-kv", s.H));
  s.N_kv = static_cast<int>(args.integer("--N-kv", s.N));
}

GqaAttentionFlags gqa_attention_flags(Args& args) {
  GqaAttentionFlags f;
  f.shape = attention_shape_flags(args, {4, 16, 4096, 128, false});
  kv_shape_flags(args, f.shape);
  f.check_N = static_cast<int>(args.integer("--check-N", 1000, 1, 16384));
  return f;
}

void check_device_memory(const std::string& what, double bytes) {
  const double have = device().available ? double(device().global_bytes) : 143771.0 * 1048576.0;
  if (bytes > 0.95 * have) {
    char buf[256];
    std::snprintf(buf, sizeof buf, "%s needs %.1f GB of device memory; %s has %.1f GB", what.c_str(), bytes / 1e9,
                  device().available ? device().name.c_str() : "an H200 (no GPU here)", have / 1e9);
    throw std::invalid_argument(buf);
  }
}

void check_cpu_work(const std::string& what, double steps, double most) {
  if (steps > most) {
    char buf[256];
    std::snprintf(buf, sizeof buf, "%s would take %.3g steps on the CPU (at most %.3g): choose a smaller shape",
                  what.c_str(), steps, most);
    throw std::invalid_argument(buf);
  }
}

int run_main(int argc, char** argv, const std::string& usage, const std::function<int(Args&)>& body) {
  const std::string prog = argc > 0 ? argv[0] : "chapter";
  try {
    Args args(argc, argv);
    if (args.flag("--help")) {
      std::cout << "usage: " << prog << " [options]\n" << usage << kCommonUsage;
      return 0;
    }
    const int rc = body(args);
    if (const std::string given = args.gpu_only_given(); !given.empty() && !device().available) {
      std::cerr << prog << ": no GPU here, so " << given << " did nothing (" << device().reason << ")";
      if (const std::string dir = args.raw("--dump"); !dir.empty()) {
        std::error_code ec;
        std::cerr << "; nothing was written to " << dir
                  << (std::filesystem::exists(dir, ec) ? "" : ", and that directory was not created");
      }
      std::cerr << "\n";
    }
    return rc;
  } catch (const std::invalid_argument& e) {
    std::cerr << prog << ": error: " << e.what() << "\nusage: " << prog << " [options]\n" << usage << kCommonUsage;
    return 2;
  } catch (const CudaError& e) {
    std::cerr << prog << ": CUDA error: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << prog << ": error: " << e.what() << "\n";
    return 1;
  }
}

Report::Report(std::string chapter, bool summary_only) : chapter_(std::move(chapter)), summary_only_(summary_only) {
  out() << chapter_ << " on " << describe_device() << (device().available ? "" : ": GPU parts skipped") << "\n";
}

std::ostream& Report::out() {
  static NullBuffer null_buffer;
  static std::ostream null_stream(&null_buffer);
  return summary_only_ ? null_stream : std::cout;
}

bool Report::check(const std::string& what, const Comparison& c, const Bound& bound) {
  const bool ok = c.within(bound);
  if (!ok) ++failures_;
  // A failure is printed even in --summary mode: the ladder must show why.
  (ok ? out() : std::cout) << "  check " << what << ": " << (ok ? "ok" : "FAILED") << " (" << c.str() << "; bound "
                           << bound.rel_l2 << ")\n";
  return ok;
}

int Report::summary(const std::string& text) const {
  std::printf("%-18s %s  %s\n", chapter_.c_str(), failures_ == 0 ? "PASS" : "FAIL", text.c_str());
  std::fflush(stdout);
  return failures_ == 0 ? 0 : 1;
}

int Report::gpu_skipped(const std::string& cpu_text) const {
  std::printf("%-18s %s  %s\n", chapter_.c_str(), failures_ == 0 ? "CPU-ONLY" : "FAIL", cpu_text.c_str());
  std::fflush(stdout);
  return failures_ == 0 ? 0 : 1;
}

}  // namespace ladder
