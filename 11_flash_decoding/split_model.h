// The split/merge algebra of flash-decoding, in fp64, for one query row. What each thread
// block computes for its split of the keys (a partial), and how the combine kernel merges the
// partials. The GPU does the same in fp32; here the algebra itself is checked: merging the
// partials of any cut of the keys gives the full softmax, also when a split is empty or sees
// only masked keys.
//
//   partial of keys [begin, end), of which those j <= last_key are visible:
//     m = max_j s_j,  l = sum_j exp(s_j - m),  O_s = sum_j exp(s_j - m) v_j / l,  LSE_s = m + log l
//     (no visible key: m = -inf, l = 0, O_s = 0, LSE_s = -inf: the merge's identity)
//   merge:  LSE = log sum_s exp(LSE_s),  O = sum_s exp(LSE_s - LSE) O_s
//
// exp(LSE_s - LSE) = l_s exp(m_s - M) / L: the weight of a split is its share of the row's
// softmax mass, which is chapter 04's block merge (m, l) written with one number per split.
#pragma once

#include <cstdint>
#include <ostream>
#include <vector>

namespace fdec::model {

// One query row against n keys: q [d], K and V [n, d], scores s_j = scale q.k_j, keys
// j > last_key masked (causal among the new queries).
struct Row {
  int d = 0, n = 0;
  long last_key = 0;
  double scale = 1.0;
  std::vector<double> q, K, V;
};
Row random_row(int n, int d, long last_key, std::uint64_t seed);

struct Partial {
  int begin = 0, end = 0;
  double m = 0, l = 0, lse = 0;  // m = -inf, l = 0, lse = -inf when no key is visible
  std::vector<double> o;         // normalised: sum_j p_j v_j / l (zeros when no key is visible)
};

// The split [begin, end) of the row's keys.
Partial partial(const Row& r, int begin, int end);
// The combine: the log-sum-exp merge of any number of partials (any order gives the same).
Partial merge(const std::vector<Partial>& parts);
// The row in one piece (the safe softmax, two passes): what the merge must equal.
Partial full(const Row& r);

// Splits the row at the given points (sorted, repeats allowed: a repeat is an empty split)
// and merges the partials.
Partial split_and_merge(const Row& r, const std::vector<int>& cuts, std::vector<Partial>* parts = nullptr);

// The executable's demo: a small row cut into splits (one empty, one that sees only masked
// keys), each partial's (m, l, LSE), the merged result next to the full softmax. Returns the
// largest |merged - full| over LSE and O.
double print_demo(std::ostream& out);

}  // namespace fdec::model
