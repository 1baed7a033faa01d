#include "split_model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

#include "random.h"

namespace fdec::model {

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();

double score(const Row& r, int j) {
  double s = 0.0;
  for (int k = 0; k < r.d; ++k) s += r.q[k] * r.K[std::size_t(j) * r.d + k];
  return r.scale * s;
}
}  // namespace

Row random_row(int n, int d, long last_key, std::uint64_t seed) {
  Row r;
  r.d = d, r.n = n, r.last_key = last_key, r.scale = 1.0 / std::sqrt(double(d));
  const std::vector<float> x = ladder::random_uniform(std::size_t(d) * (2 * n + 1), seed);
  r.q.assign(x.begin(), x.begin() + d);
  r.K.assign(x.begin() + d, x.begin() + d + std::size_t(n) * d);
  r.V.assign(x.begin() + d + std::size_t(n) * d, x.end());
  return r;
}

Partial partial(const Row& r, int begin, int end) {
  Partial p;
  p.begin = begin, p.end = end;
  p.o.assign(r.d, 0.0);
  const int last = static_cast<int>(std::min<long>(end - 1, r.last_key));  // the last visible key of the split
  p.m = -kInf;
  for (int j = begin; j <= last; ++j) p.m = std::max(p.m, score(r, j));
  if (p.m == -kInf) {  // nothing visible: the identity of the merge
    p.l = 0.0, p.lse = -kInf;
    return p;
  }
  p.l = 0.0;
  for (int j = begin; j <= last; ++j) {
    const double e = std::exp(score(r, j) - p.m);
    p.l += e;
    for (int k = 0; k < r.d; ++k) p.o[k] += e * r.V[std::size_t(j) * r.d + k];
  }
  for (double& v : p.o) v /= p.l;
  p.lse = p.m + std::log(p.l);
  return p;
}

Partial merge(const std::vector<Partial>& parts) {
  Partial out;
  const int d = parts.empty() ? 0 : static_cast<int>(parts.front().o.size());
  out.o.assign(d, 0.0);
  out.begin = parts.empty() ? 0 : parts.front().begin;
  out.end = parts.empty() ? 0 : parts.back().end;
  double M = -kInf;  // LSE = M + log sum_s exp(LSE_s - M): no exp overflows
  for (const Partial& p : parts) M = std::max(M, p.lse);
  if (M == -kInf) {
    out.m = -kInf, out.l = 0.0, out.lse = -kInf;
    return out;
  }
  double sum = 0.0;
  for (const Partial& p : parts) sum += std::exp(p.lse - M);  // exp(-inf) = 0: empty splits weigh nothing
  out.lse = M + std::log(sum);
  for (const Partial& p : parts) {
    const double w = std::exp(p.lse - out.lse);
    for (int k = 0; k < d; ++k) out.o[k] += w * p.o[k];
  }
  // The (m, l) of the merged row, in chapter 04's form, for the demo's table.
  out.m = -kInf;
  for (const Partial& p : parts) out.m = std::max(out.m, p.m);
  out.l = 0.0;
  for (const Partial& p : parts)
    if (p.m != -kInf) out.l += p.l * std::exp(p.m - out.m);
  return out;
}

Partial full(const Row& r) { return partial(r, 0, r.n); }

Partial split_and_merge(const Row& r, const std::vector<int>& cuts, std::vector<Partial>* parts) {
  std::vector<Partial> ps;
  int begin = 0;
  for (int c : cuts) {
    ps.push_back(partial(r, begin, c));
    begin = c;
  }
  ps.push_back(partial(r, begin, r.n));
  if (parts) *parts = ps;
  return merge(ps);
}

double print_demo(std::ostream& out) {
  // 12 keys, d = 4; the query is the first of n_q = 3 new ones, so it sees keys 0..9 and
  // keys 10, 11 are masked. Cut at 4, 4 (an empty split), 7, 10 (the last split: masked only).
  const Row r = random_row(12, 4, 9, 2024);
  const std::vector<int> cuts = {4, 4, 7, 10};
  std::vector<Partial> parts;
  const Partial merged = split_and_merge(r, cuts, &parts);
  const Partial ref = full(r);
  char line[256];
  out << "CPU: the split/merge model (fp64) on one query row: 12 keys, d = 4, keys 10 and 11 masked\n"
      << "  (the row is the first of n_q = 3 new queries), cut into 5 splits\n"
      << "    split      keys         m          l      LSE_s = m + log l      O_s[0]\n";
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const Partial& p = parts[i];
    const char* note = p.begin == p.end ? "  (empty)" : p.lse == -kInf ? "  (only masked keys)" : "";
    std::snprintf(line, sizeof line, "    %5zu   %3d..%-3d   %9.4f  %9.4f   %14.6f   %12.6f%s\n", i, p.begin, p.end,
                  p.m, p.l, p.lse, p.o[0], note);
    out << line;
  }
  std::snprintf(line, sizeof line,
                "    merged   %3d..%-3d   %9.4f  %9.4f   %14.6f   %12.6f   LSE = log sum_s exp(LSE_s)\n", 0, r.n,
                merged.m, merged.l, merged.lse, merged.o[0]);
  out << line;
  std::snprintf(line, sizeof line,
                "    full     %3d..%-3d   %9.4f  %9.4f   %14.6f   %12.6f   one softmax over all keys\n", 0, r.n, ref.m,
                ref.l, ref.lse, ref.o[0]);
  out << line;
  double err = std::fabs(merged.lse - ref.lse);
  for (int k = 0; k < r.d; ++k) err = std::max(err, std::fabs(merged.o[k] - ref.o[k]));
  return err;
}

}  // namespace fdec::model
