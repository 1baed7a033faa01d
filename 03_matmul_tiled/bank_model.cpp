#include "bank_model.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <stdexcept>

namespace banks {

Cost cost(const std::vector<long>& words, int width) {
  if (width != 1 && width != 2 && width != 4) throw std::invalid_argument("banks::cost: width is 1, 2 or 4 words");
  const int lanes_per_phase = 32 / width;  // 128 bytes per phase
  Cost c;
  for (std::size_t first = 0; first < words.size(); first += lanes_per_phase) {
    std::map<int, std::set<long>> by_bank;  // bank -> distinct words it must deliver
    for (std::size_t lane = first; lane < std::min(words.size(), first + lanes_per_phase); ++lane)
      if (words[lane] >= 0)
        for (int e = 0; e < width; ++e) by_bank[int((words[lane] + e) % kBanks)].insert(words[lane] + e);
    if (by_bank.empty()) continue;
    int most = 0;
    for (const auto& [bank, ws] : by_bank) most = std::max(most, int(ws.size()));
    c.wavefronts += most;
    c.ideal += 1;
    c.worst_bank = std::max(c.worst_bank, most);
  }
  return c;
}

std::vector<Scenario> scenarios() {
  std::vector<Scenario> all;
  auto warp = [](auto word_of_lane) {
    std::vector<long> w(32);
    for (int lane = 0; lane < 32; ++lane) w[lane] = word_of_lane(lane);
    return w;
  };
  // smem_tiled<16>: a warp is two rows of the 16 x 16 block (lanes 0-15: ty = 0, tx = lane;
  // lanes 16-31: ty = 1). At step k it reads A_tile[ty][k] (two words) and B_tile[k][tx]
  // (16 words, each read by two lanes). No padding needed: both are one pass.
  const int k = 3;
  all.push_back({"smem_tiled_16 A_tile read", "acc += A_tile[ty][k] * ...", 0, 1,
                 warp([&](int lane) { return word_of(lane / 16, k, 16, 0); })});
  all.push_back({"smem_tiled_16 B_tile read", "... * B_tile[k][tx]", 0, 1,
                 warp([&](int lane) { return word_of(k, lane % 16, 16, 0); })});
  // A 32 x 32 tile read down a column (lane = row), as a transpose does: with rows of 32
  // words every element of a column is in the same bank; one float of padding per row
  // moves row r to bank (r + c) % 32.
  for (int pad : {0, 1})
    all.push_back({"32 x 32 tile column read", "tile[lane][c] (a transpose)", pad, 1,
                   warp([&](int lane) { return word_of(lane, 5, 32, pad); })});
  // register_tiled's transposing store, warp 0: thread t copies A[a_m, a_k .. a_k + 3] to
  // A_tile[a_k + i][a_m], a_m = t / 2, a_k = t % 2 * 4. Lanes 2m and 2m + 1 write rows i and
  // i + 4 of the same column m; with 128-float rows those are in the same bank.
  for (int pad : {0, 4})
    all.push_back({"register_tiled A_tile store", "A_tile[stage][a_k + 0][a_m] = a_next.x", pad, 1,
                   warp([&](int lane) { return word_of(lane % 2 * 4, lane / 2, 128, pad); })});
  // The FA chapters (common/attention_tiles.cuh, acc_A_Bt): a warp is 4 x 8 threads; in each
  // quarter warp the 8 lanes read float4 number k/4 of 8 different rows of K_j (rows of d
  // floats, d = 64). kPad = 4 shifts each row by 4 banks: 8 rows x 4 banks = all 32.
  for (int pad : {0, 4})
    all.push_back({"FA tiles K_j float4 read (d = 64)", "lds4(B + t.col(j) * ldb + k)", pad, 4,
                   warp([&](int lane) { return word_of(lane % 8, 4 * 3, 64, pad); })});
  return all;
}

TransposeCost transpose_cost(long (*offset)(int row, int col)) {
  TransposeCost t{};
  std::set<long> used;
  for (int i = 0; i < 32; ++i) {
    std::vector<long> store(32), load(32);
    for (int lane = 0; lane < 32; ++lane) {
      store[lane] = offset(i, lane);  // row i written by 32 lanes, lane = column
      load[lane] = offset(lane, i);   // column i read by 32 lanes, lane = row
      used.insert(store[lane]);
      t.words_used = std::max(t.words_used, store[lane] + 1);
    }
    const Cost s = cost(store, 1), l = cost(load, 1);
    if (s.wavefronts > t.store.wavefronts) t.store = s;
    if (l.wavefronts > t.load.wavefronts) t.load = l;
  }
  t.one_to_one = used.size() == 32 * 32 && *used.begin() >= 0;
  return t;
}

void print_bank_model(std::ostream& out) {
  out << "\nShared-memory banks, on the CPU: one warp's request, 32 banks of 4 bytes (word w in bank w % 32).\n"
         "Wavefronts = passes the request takes; ideal = 1 per 128 bytes requested (float4: 4).\n";
  char line[256];
  std::snprintf(line, sizeof line, "  %-34s %-42s %3s %5s %10s %5s %6s\n", "access", "code", "pad", "bytes",
                "wavefronts", "ideal", "n-way");
  out << line;
  for (const Scenario& s : scenarios()) {
    const Cost c = s.cost();
    std::snprintf(line, sizeof line, "  %-34s %-42s %3d %5d %10d %5d %6d\n", s.name.c_str(), s.code.c_str(), s.pad,
                  4 * s.width, c.wavefronts, c.ideal, c.worst_bank);
    out << line;
  }
  out << "The bank of each lane's word (register_tiled A_tile store):\n";
  for (const Scenario& s : scenarios()) {
    if (s.name != "register_tiled A_tile store") continue;
    std::string banks_hit;
    for (long w : s.words) banks_hit += " " + std::to_string(w % kBanks);
    out << "  pad " << s.pad << ":" << banks_hit << "\n";
  }
}

void print_bank_csv(std::ostream& out) {
  out << "scenario,pad,lane,word,bank,width,wavefronts,ideal\n";
  for (const Scenario& s : scenarios()) {
    const Cost c = s.cost();
    for (int lane = 0; lane < 32; ++lane)
      out << s.name << ',' << s.pad << ',' << lane << ',' << s.words[lane] << ',' << s.words[lane] % kBanks << ','
          << s.width << ',' << c.wavefronts << ',' << c.ideal << '\n';
  }
}

}  // namespace banks
