// Split-KV and the merge on one query row (CSV), for scripts/figures/split_merge.py. CPU
// only. The keys are cut as decode() cuts them (split_with, at the default configuration's
// tile of keys), each split's partial and the log-sum-exp merge come from the fp64 model the
// CpuSplitModel tests check (split_model.h), and the full softmax is printed beside them.
//   11_flash_decoding_split_trace [--keys N] [--splits S] [--nq Q] [--seed X]
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <string>
#include <vector>

#include "cli.h"
#include "flash_decoding.h"
#include "split_model.h"

namespace {

void print_partial(std::ostream& out, const std::string& kind, int index, const fdec::model::Partial& p,
                   double weight) {
  out << kind << ',' << index << ',' << p.begin << ',' << p.end << ",,," << p.m << ',' << p.l << ',' << p.lse << ','
      << weight;
  for (double o : p.o) out << ',' << o;
  out << '\n';
}

}  // namespace

int main(int argc, char** argv) {
  const std::string usage =
      "11_flash_decoding_split_trace: one query row's keys cut into splits, each split's (m, l, LSE, O) and\n"
      "their log-sum-exp merge beside the full softmax (fp64, CSV), no GPU needed\n"
      "  --keys N     keys of the sequence, the new queries included (default 200)\n"
      "  --splits S   splits asked of split_with (default 4)\n"
      "  --nq Q       new queries; the row is the first, so it sees keys 0 .. N - Q (default 3)\n"
      "  --seed X     the row's random q, K, V (default 2024)\n";
  return ladder::run_main(argc, argv, usage, [](ladder::Args& args) {
    const int n = static_cast<int>(args.integer("--keys", 200, 1, 4096));
    const int splits = static_cast<int>(args.integer("--splits", 4, 1, fdec::kMaxSplits));
    const int nq = static_cast<int>(args.integer("--nq", 3, 1, fdec::kMaxQueries));
    const auto seed = static_cast<std::uint64_t>(args.integer("--seed", 2024, 0));
    args.done();
    constexpr int d = 4;  // a toy head: the picture shows every component of O
    const int tile_keys = fdec::configs(128).front().tile_keys();
    const fdec::Split sp = fdec::split_with(splits, n, tile_keys);
    std::vector<int> cuts;
    for (int s = 1; s < sp.splits; ++s) cuts.push_back(std::min(n, s * sp.keys_per_split));
    const fdec::model::Row r = fdec::model::random_row(n, d, long(n) - nq, seed);
    std::vector<fdec::model::Partial> parts;
    const fdec::model::Partial merged = fdec::model::split_and_merge(r, cuts, &parts);
    const fdec::model::Partial ref = fdec::model::full(r);

    std::cout << "kind,index,begin,end,score,visible,m,l,lse,weight,o0,o1,o2,o3\n";
    std::cout.precision(17);
    std::cout << "tile_keys," << tile_keys << ",0,0,,,,,,,,,,\n"  // the numbers the picture states
              << "keys_per_split," << sp.keys_per_split << ",0,0,,,,,,,,,,\n"
              << "nq," << nq << ",0,0,,,,,,,,,,\n";
    fdec::model::Row unmasked = r;  // a split of one key has m = its score; masked keys' scores too
    unmasked.last_key = n - 1;
    for (int j = 0; j < n; ++j)
      std::cout << "key," << j << ",,," << fdec::model::partial(unmasked, j, j + 1).m << ',' << (j <= r.last_key)
                << ",,,,,,,,\n";
    for (std::size_t s = 0; s < parts.size(); ++s)
      print_partial(std::cout, "split", static_cast<int>(s), parts[s],
                    parts[s].lse == -INFINITY ? 0.0 : std::exp(parts[s].lse - merged.lse));
    print_partial(std::cout, "merged", 0, merged, 1.0);
    print_partial(std::cout, "full", 0, ref, 1.0);
    return 0;
  });
}
