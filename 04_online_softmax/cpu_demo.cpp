#include "cpu_demo.h"

#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <string>

#include "compare.h"
#include "reference_softmax.h"
#include "softmax_cpu.h"

namespace osm {

namespace {

__attribute__((format(printf, 1, 2))) std::string format(const char* fmt, ...) {
  char buf[256];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, args);
  va_end(args);
  return buf;
}

// %g, but NaN without its sign ("-nan" would suggest a sign means something).
std::string number(double v, int digits = 6) { return std::isnan(v) ? "nan" : format("%.*g", digits, v); }

template <class T>
std::string row(const std::vector<T>& v) {
  std::string s = "[";
  for (std::size_t j = 0; j < v.size(); ++j) s += (j ? ", " : "") + number(double(v[j]));
  return s + "]";
}

// "  label      v_1  v_2 ..." in columns of 11.
template <class T>
std::string columns(const char* label, const std::vector<T>& v) {
  std::string s = format("  %-16s", label);
  for (const T& e : v) s += format(" %10s", number(double(float(e)), 4).c_str());
  return s + "\n";
}

}  // namespace

std::vector<double> print_trace(std::ostream& out, const std::vector<double>& x, int B) {
  std::vector<double> y_online, y_blocks, y_safe;
  std::vector<MaxSum<double>> steps;
  std::vector<BlockStep<double>> blocks;
  const MaxSum<double> online = online_softmax(x, y_online, &steps);
  const MaxSum<double> merged = blockwise_softmax(x, B, y_blocks, &blocks);
  const MaxSum<double> safe = safe_softmax(x, y_safe);

  out << "\nx = " << row(x) << "\n";
  out << "element by element:  m' = max(m, x_j),  l' = l e^(m - m') + e^(x_j - m')\n";
  out << format("  %5s %10s %10s %10s\n", "j", "x_j", "m", "l");
  out << format("  %5s %10s %10g %10g   (nothing seen yet)\n", "", "", -INFINITY, 0.0);
  MaxSum<double> before;
  for (std::size_t j = 0; j < x.size(); ++j) {
    const MaxSum<double>& s = steps[j];
    const std::string how = x[j] == -INFINITY
                                ? "(x_j = -inf adds e^-inf = 0)"
                                : format("= %g e^(%g - %g) + e^(%g - %g)", before.l, before.m, s.m, x[j], s.m);
    out << format("  %5zu %10g %10g %10g   %s\n", j + 1, x[j], s.m, s.l, how.c_str());
    before = s;
  }

  out << "in blocks of B = " << B << ":  (m~, l~) = (max, sum e^(x - m~)) of the block alone, then\n"
      << "                     m' = max(m, m~),  l' = l e^(m - m') + l~ e^(m~ - m')\n";
  out << format("  %5s %-12s %10s %10s %10s %10s\n", "block", "elements", "m~", "l~", "m", "l");
  before = MaxSum<double>{};
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    const BlockStep<double>& b = blocks[i];
    out << format("  %5zu %-12s %10g %10g %10g %10g   = %g e^(%g - %g) + %g e^(%g - %g)\n", i + 1,
                  format("x_%d..x_%d", b.begin + 1, b.end).c_str(), b.block.m, b.block.l, b.running.m, b.running.l,
                  before.l, before.m, b.running.m, b.block.l, b.block.m, b.running.m);
    before = b.running;
  }

  out << format("final (m, l): element by element (%g, %g), in blocks (%g, %g), safe softmax's max and sum (%g, %g)\n",
                online.m, online.l, merged.m, merged.l, safe.m, safe.l);
  out << "softmax(x) = e^(x - m) / l = " << row(y_online) << "\n";
  return y_online;
}

void overflow_demo(ladder::Report& report, const std::vector<float>& x) {
  std::vector<Half> h(x.size()), y_naive, y_safe, y_online;
  for (std::size_t j = 0; j < x.size(); ++j) h[j] = Half(x[j]);
  const MaxSum<Half> naive = naive_softmax(h, y_naive);
  safe_softmax(h, y_safe);
  online_softmax(h, y_online);
  const std::vector<double> ref = ladder::softmax_reference(x, 1, static_cast<int>(x.size()));
  auto to_float = [](const std::vector<Half>& v) {
    std::vector<float> f;
    for (const Half& e : v) f.push_back(float(e));
    return f;
  };

  std::ostream& out = report.out();
  out << "\nfp16 (CUDA __half): the largest finite value is 65504, and e^x exceeds it from x = 11.09 on\n";
  out << columns("x", x) << columns("naive  fp16", y_naive) << columns("safe   fp16", y_safe)
      << columns("online fp16", y_online) << columns("fp64 reference", ref);
  const ladder::Comparison c_naive = ladder::compare(to_float(y_naive), ref);
  if (c_naive.nonfinite > 0) {
    out << format("  naive: %zu of %zu outputs are NaN/inf: l = sum e^x = %g in fp16 (e^%g = %.6g)\n",
                  c_naive.nonfinite, c_naive.n, double(float(naive.l)), double(x[0]), std::exp(double(x[0])));
  } else {
    out << "  naive: no overflow for these logits\n";
  }
  std::vector<float> y32;
  naive_softmax(std::vector<float>{89.0f, 0.0f}, y32);
  out << "  naive in fp32 only moves the cliff: softmax([89, 0]) = " << row(y32)
      << " (e^89 > 3.4e38, the largest float)\n";
  report.check("safe softmax in fp16", ladder::compare(to_float(y_safe), ref), ladder::kFp16);
  report.check("online softmax in fp16", ladder::compare(to_float(y_online), ref), ladder::kFp16);
}

}  // namespace osm
