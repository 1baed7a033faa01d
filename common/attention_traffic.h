// Bytes each attention tensor moves between HBM and the chip, as counted by the
// FA chapters' CPU tile models (the kernels' loops, run on the CPU).
#pragma once

#include <cstdio>
#include <string>

namespace ladder {

struct AttentionTraffic {
  double Q_read = 0, K_read = 0, V_read = 0;
  double O_read = 0, O_write = 0;
  double l_read = 0, l_write = 0, m_read = 0, m_write = 0;  // FA1 keeps l and m in HBM
  double L_write = 0;                                       // FA2 writes L = m + log(l) once
  double init_write = 0;                                    // FA1, line 2: O = 0, l = 0, m = -inf

  double read() const { return Q_read + K_read + V_read + O_read + l_read + m_read; }
  double write() const { return O_write + l_write + m_write + L_write + init_write; }

  // One line per tensor that moved, in MB (1e6 bytes).
  std::string table() const {
    std::string out;
    auto row = [&](const char* name, double r, double w) {
      if (r == 0 && w == 0) return;
      char buf[96];
      std::snprintf(buf, sizeof buf, "    %-6s read %12.2f MB   write %12.2f MB\n", name, r / 1e6, w / 1e6);
      out += buf;
    };
    row("Q", Q_read, 0);
    row("K", K_read, 0);
    row("V", V_read, 0);
    row("O", O_read, O_write);
    row("l", l_read, l_write);
    row("m", m_read, m_write);
    row("L", 0, L_write);
    row("init", 0, init_write);
    row("total", read(), write());
    return out;
  }
};

}  // namespace ladder
