// Prints the dQ-order model (dq_order_model.h) as CSV, for scripts/figures/dq_order.py: the
// grid of the chapter's main shape (B = 4, H = 16, N = 4096: 64 heads of 32 key tiles) on the
// H200's 132 SMs, causal and dense, each order; one line per CTA.
#include <cstdio>

#include "dq_order_model.h"

int main() {
  using namespace fa3bwd::model;
  std::printf("causal,order,head,j,start,finish,makespan,converged\n");
  for (bool causal : {true, false})
    for (Order o : {Order::Fast, Order::Ascending, Order::Descending}) {
      Grid g;
      g.causal = causal;
      const Schedule s = schedule(g, o);
      for (const Cta& c : s.ctas)
        std::printf("%d,%s,%d,%d,%.2f,%.2f,%.2f,%d\n", int(causal), name(o), c.head, c.j, c.start, c.finish, s.makespan,
                    int(s.converged));
    }
  return 0;
}
