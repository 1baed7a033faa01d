// Prints the schedule model (dq_order_model.h) as CSV, for scripts/figures/dq_order.py: the grid
// of the chapter's main shape (B = 4, H = 16, N = 4096, d = 128: 64 heads of 32 key tiles) on the
// H200's 132 SMs, causal and dense: no order head by head, no order in the sections of heads the
// step:bulk kernel launches (fa3_bwd_scheduler.h), and the two fixed orders head by head (the
// deterministic step's launch order); one line per CTA.
#include <cstdio>

#include "device.h"
#include "dq_order_model.h"
#include "fa3_bwd_scheduler.h"

int main() {
  using namespace fa3bwd::model;
  std::printf("causal,order,heads_per_section,head,j,start,finish,makespan,converged\n");
  for (bool causal : {true, false}) {
    Grid g;
    g.causal = causal;
    const int in_l2 = fa3bwd::sched::heads_in_l2(ladder::kH200L2Bytes, 1, g.N, 128);
    const struct {
      Order order;
      int heads_per_section;
    } runs[] = {{Order::Fast, 1}, {Order::Fast, in_l2}, {Order::Ascending, 1}, {Order::Descending, 1}};
    for (const auto& r : runs) {
      g.heads_per_section = r.heads_per_section;
      const Schedule s = schedule(g, r.order);
      for (const Cta& c : s.ctas)
        std::printf("%d,%s,%d,%d,%d,%.2f,%.2f,%.2f,%d\n", int(causal), name(r.order), r.heads_per_section, c.head, c.j,
                    c.start, c.finish, s.makespan, int(s.converged));
    }
  }
  return 0;
}
