#include "ptxas_report.h"

#include <cctype>
#include <regex>
#include <sstream>
#include <stdexcept>

namespace spill {

namespace {

// Generated at build time by capture_ptxas.cmake: a raw string literal holding ptxas's report.
const char kCapturedLog[] =
#include "ptxas_log.inc"
    ;

// Reads what the chapter needs from an Itanium-mangled name such as
//   _ZN5spill11fa2_forwardILi128ELi8ELi32ELb0EEEvPKf...   (spill::fa2_forward<128, 8, 32, false>(...))
// the last identifier of the name and its integer/bool template arguments (L<type><value>E each).
void read_mangled(const std::string& m, PtxasEntry& e) {
  std::size_t at = m.rfind("_ZN", 0) == 0 ? 3 : m.rfind("_Z", 0) == 0 ? 2 : m.size();
  auto digit = [&] { return at < m.size() && std::isdigit(static_cast<unsigned char>(m[at])); };
  while (digit()) {
    std::size_t len = 0;
    while (digit()) len = 10 * len + std::size_t(m[at++] - '0');
    e.function = m.substr(at, len);
    at += len;
  }
  if (at >= m.size() || m[at] != 'I') return;
  for (++at; at + 1 < m.size() && m[at] == 'L'; ++at) {  // L, one type letter, [n]digits, E
    at += 2;
    const bool negative = at < m.size() && m[at] == 'n';
    if (negative) ++at;
    long long v = 0;
    while (digit()) v = 10 * v + (m[at++] - '0');
    if (at >= m.size() || m[at] != 'E') return;
    e.template_args.push_back(negative ? -v : v);
  }
}

}  // namespace

std::vector<PtxasEntry> parse_ptxas(const std::string& log) {
  static const std::regex entry(R"(Compiling entry function '([^']+)')");
  static const std::regex properties(R"(Function properties for (\S+))");
  static const std::regex frame(R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)");
  static const std::regex used(R"(Used (\d+) registers)");

  std::vector<PtxasEntry> entries;
  PtxasEntry* described = nullptr;  // the function the last "Function properties" line named, if an entry
  std::istringstream in(log);
  std::smatch m;
  for (std::string line; std::getline(in, line);) {
    if (std::regex_search(line, m, entry)) {
      entries.emplace_back();
      entries.back().mangled = m[1];
      read_mangled(m[1], entries.back());
      described = nullptr;
    } else if (std::regex_search(line, m, properties)) {
      // Non-entry (device) functions get a properties line too; only the entry's counts are kept.
      described = !entries.empty() && entries.back().mangled == m[1].str() ? &entries.back() : nullptr;
    } else if (std::regex_search(line, m, frame)) {
      if (described) {
        described->stack_frame = std::stoi(m[1]);
        described->spill_stores = std::stoi(m[2]);
        described->spill_loads = std::stoi(m[3]);
      }
    } else if (std::regex_search(line, m, used) && !entries.empty()) {
      entries.back().registers = std::stoi(m[1]);
    }
  }
  return entries;
}

const std::string& captured_ptxas_log() {
  static const std::string log = kCapturedLog;
  return log;
}

const std::vector<PtxasEntry>& captured_ptxas() {
  static const std::vector<PtxasEntry> entries = parse_ptxas(captured_ptxas_log());
  return entries;
}

const PtxasEntry& ptxas_entry(const Variant& v) {
  // The kernel names and template parameters of spill.cu.
  const bool capped = v.max_regs < kMaxRegsPerThread;
  const std::string function = capped ? "fa2_forward_capped" : "fa2_forward";
  const std::vector<long long> args{v.d, v.B_r, v.B_c, capped ? v.max_regs : v.acc == Accumulators::Local};
  for (const PtxasEntry& e : captured_ptxas())
    if (e.function == function && e.template_args == args) return e;
  throw std::out_of_range("the captured ptxas log has no entry for " + v.label());
}

}  // namespace spill
