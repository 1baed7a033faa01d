#include "ring_schedule.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>
#include <stdexcept>
#include <utility>

namespace ring {

const char* name(Sharding s) { return s == Sharding::Plain ? "plain" : "zigzag"; }
const char* name(TileMask m) { return m == TileMask::Full ? "full" : "diag"; }

Layout make_layout(int N, int P, Sharding sharding) {
  if (P < 1) throw std::invalid_argument("ring: P = " + std::to_string(P) + " ranks; P must be >= 1");
  if (N < 1) throw std::invalid_argument("ring: N = " + std::to_string(N) + " tokens; N must be >= 1");
  Layout l{N, P, sharding};
  const int c = l.chunks();
  if (N % c != 0)
    throw std::invalid_argument("ring: N = " + std::to_string(N) + " cannot be cut into " + std::to_string(c) +
                                " equal chunks (" + name(sharding) + " sharding over P = " + std::to_string(P) +
                                " needs N to be a multiple of " + std::to_string(c) + ", e.g. " +
                                std::to_string((N / c + 1) * c) + ")");
  return l;
}

std::vector<Tile> tiles(const Layout& layout, bool causal, int rank, int step) {
  const int src = source(layout.P, rank, step);
  std::vector<Tile> out;
  for (int qs = 0; qs < layout.slots(); ++qs)
    for (int ks = 0; ks < layout.slots(); ++ks) {
      const int a = layout.chunk(rank, qs), b = layout.chunk(src, ks);
      if (!causal)
        out.push_back({qs, ks, a, b, TileMask::Full});
      else if (a > b)
        out.push_back({qs, ks, a, b, TileMask::Full});
      else if (a == b)
        out.push_back({qs, ks, a, b, TileMask::Diagonal});
    }
  return out;
}

ladder::AttentionShape tile_shape(const ladder::AttentionShape& whole, const Layout& layout, TileMask mask) {
  ladder::AttentionShape t = whole.with_lengths(layout.chunk_len(), layout.chunk_len());
  t.causal = mask == TileMask::Diagonal;
  return t;
}

double step_work(const Layout& layout, bool causal, int rank, int step) {
  double w = 0.0;
  for (const Tile& t : tiles(layout, causal, rank, step)) w += t.mask == TileMask::Full ? 1.0 : 0.5;
  return w;
}

std::string check_schedule(const Layout& layout, bool causal) {
  std::map<std::pair<int, int>, int> seen;
  for (int r = 0; r < layout.P; ++r)
    for (int t = 0; t < layout.P; ++t)
      for (const Tile& tile : tiles(layout, causal, r, t)) {
        if (layout.chunk(r, tile.q_slot) != tile.q_chunk)
          return "rank " + std::to_string(r) + " computes q chunk " + std::to_string(tile.q_chunk) + " it does not own";
        ++seen[{tile.q_chunk, tile.k_chunk}];
      }
  const int c = layout.chunks();
  for (int a = 0; a < c; ++a)
    for (int b = 0; b < c; ++b) {
      const int want = (!causal || a >= b) ? 1 : 0;
      const auto it = seen.find({a, b});
      const int got = it == seen.end() ? 0 : it->second;
      if (got != want)
        return "pair (q chunk " + std::to_string(a) + ", k chunk " + std::to_string(b) + ") computed " +
               std::to_string(got) + " times, expected " + std::to_string(want);
    }
  return {};
}

namespace {
std::string chunk_set(const Layout& l, int rank) {
  std::string s = "{";
  for (int k = 0; k < l.slots(); ++k) s += (k ? "," : "") + std::to_string(l.chunk(rank, k));
  return s + "}";
}
std::string fmt(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", x);
  return buf;
}
}  // namespace

std::string describe(const Layout& l, bool causal) {
  std::ostringstream o;
  o << name(l.sharding) << " sharding, P = " << l.P << ", " << l.chunks() << " chunks of C = " << l.chunk_len()
    << " tokens, " << (causal ? "causal" : "non-causal") << "; rank r owns chunks";
  for (int r = 0; r < l.P; ++r) o << " r" << r << chunk_set(l, r);
  o << "\n";
  for (int t = 0; t < l.P; ++t) {
    o << "  step " << t << ":";
    double slowest = 0.0;
    for (int r = 0; r < l.P; ++r) {
      const int src = source(l.P, r, t);
      o << (r ? " |" : "") << " r" << r << " holds K/V of r" << src << chunk_set(l, src) << " tiles";
      const auto ts = tiles(l, causal, r, t);
      if (ts.empty()) o << " -";
      for (const Tile& tile : ts)
        o << " (" << tile.q_chunk << "," << tile.k_chunk << ")" << (tile.mask == TileMask::Full ? "f" : "d");
      const double w = step_work(l, causal, r, t);
      slowest = std::max(slowest, w);
      o << " work " << fmt(w);
    }
    o << "   -> step costs " << fmt(slowest) << " C^2\n";
  }
  o << "  imbalance (sum of the slowest rank per step / ideal): " << fmt(imbalance(l, causal) * 100.0) << " %\n";
  return o.str();
}

std::string schedule_csv(const Layout& l, bool causal) {
  std::ostringstream o;
  o << "sharding,P,causal,step,rank,holds,tiles,work\n";
  for (int t = 0; t < l.P; ++t)
    for (int r = 0; r < l.P; ++r) {
      o << name(l.sharding) << "," << l.P << "," << (causal ? 1 : 0) << "," << t << "," << r << "," << source(l.P, r, t)
        << ",";
      bool first = true;
      for (const Tile& tile : tiles(l, causal, r, t)) {
        o << (first ? "" : ";") << tile.q_chunk << ":" << tile.k_chunk << ":"
          << (tile.mask == TileMask::Full ? "f" : "d");
        first = false;
      }
      o << "," << step_work(l, causal, r, t) << "\n";
    }
  return o.str();
}

double imbalance(const Layout& l, bool causal) {
  double total = 0.0, critical = 0.0;
  for (int t = 0; t < l.P; ++t) {
    double slowest = 0.0;
    for (int r = 0; r < l.P; ++r) {
      const double w = step_work(l, causal, r, t);
      total += w;
      slowest = std::max(slowest, w);
    }
    critical += slowest;
  }
  return total > 0.0 ? critical / (total / l.P) : 1.0;
}

}  // namespace ring
