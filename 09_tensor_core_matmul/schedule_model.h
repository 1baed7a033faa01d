// A schedule, not a measurement: the host-side model behind the timeline pictures of
// chapters 09 and 12. Each agent (a warpgroup, the producer's one thread, a CTA's warps
// in lockstep) runs a program written in the order the kernel issues its instructions;
// the model plays those programs against each other with the synchronisation the kernel
// uses, and records when each thing could happen:
//   - units that do one thing at a time, first come first served (the tensor cores, the
//     exponential units): run() occupies one and the agent waits for it, issue() occupies
//     one asynchronously (wgmma: the agent goes on), commit()/wait_groups() are
//     wgmma.commit_group / wgmma.wait_group N
//   - copies that land after a latency: tma() completes an arrival on an mbarrier when it
//     lands (TMA with expect_tx); cp_async()/cp_commit()/cp_wait() are cp.async's groups
//   - mbarriers: arrive() counts arrivals, a phase completes when all have arrived;
//     wait(b, k) passes once b has completed k phases (the kernels name the phase by its
//     parity, which is the same while a waiter is never two phases behind)
//   - named barriers: bar_sync() / bar_arrive() (bar.sync / bar.arrive): a generation
//     completes when all participants have arrived, and bar_sync waits for it
// Costs are the caller's (stated with the picture): copies travel side by side (no
// bandwidth limit), and only the units named here are shared.
#pragma once

#include <cstdint>
#include <deque>
#include <initializer_list>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace sched {

using Tick = std::int64_t;

// One bar of the picture: `lane` is the row it is drawn in, `agent` who caused it.
struct Interval {
  std::string lane, agent, category, label;
  Tick start, end;
};
// An mbarrier completing its phase number `phase` (0, 1, 2, ...; the kernels wait on the
// parity, phase & 1) at `time`, drawn in `lane`.
struct Flip {
  std::string lane, barrier;
  int phase;
  Tick time;
};

class Machine;

// An agent's program, in the kernel's order. Labels are what the picture writes.
class Program {
 public:
  // Occupies `unit` (-1: none) for `cost`; the agent waits until it is done (mma.sync, the
  // softmax). In `pieces` turns on the unit, so that two agents using it at once share it
  // (first come, first served per piece), as the warps of two warpgroups do. The bar is
  // drawn in the agent's lane and in `also_lanes`.
  Program& run(int unit, Tick cost, const std::string& category, const std::string& label,
               const std::vector<std::string>& also_lanes = {}, int pieces = 1);
  // Occupies `unit` for `cost` asynchronously (one wgmma.mma_async), in the open group. The
  // unit takes what was issued in issue order: two agents issuing at once interleave.
  Program& issue(int unit, Tick cost, const std::string& label);
  Program& commit();            // wgmma.commit_group
  Program& wait_groups(int n);  // wgmma.wait_group n
  Program& tma(int mbarrier, Tick latency, const std::string& label, const std::string& lane);
  Program& cp_async(Tick latency, const std::string& label, const std::string& lane);  // into the open group
  Program& cp_commit();                                                                // cp.async.commit_group
  Program& cp_wait(int n);                                                             // cp.async.wait_group n
  Program& arrive(int mbarrier, int count);
  Program& wait(int mbarrier, int phases, const std::string& label);
  Program& bar_sync(int named, const std::string& label);
  Program& bar_arrive(int named);
  Program& mark(const std::string& label);  // a point in the agent's lane (a __syncthreads, say)

 private:
  friend class Machine;
  enum class Op {
    Run,
    Issue,
    Commit,
    WaitGroups,
    Tma,
    CpAsync,
    CpCommit,
    CpWait,
    Arrive,
    Wait,
    BarSync,
    BarArrive,
    Mark
  };
  struct Step {
    Op op;
    int target = -1;  // unit, mbarrier or named barrier
    Tick cost = 0;
    int count = 0;
    std::string category, label, lane;
    std::vector<std::string> also;
  };
  std::vector<Step> steps_;
};

class Machine {
 public:
  int unit(const std::string& lane);  // a shared unit, drawn in its own lane
  int mbarrier(const std::string& name, int arrivals, const std::string& lane);
  int named_barrier(const std::string& name, int participants);
  Program& agent(const std::string& lane);  // programs are played in the order they were made
  // Plays every program to its end. Throws std::logic_error naming the stuck agents when
  // they wait on each other (a deadlock in the programs).
  void run();

  std::vector<Interval> intervals;
  std::vector<Flip> flips;
  Tick end = 0;

 private:
  struct Unit {
    std::string lane;
    Tick free = 0;
  };
  struct MBarrier {
    std::string name, lane;
    int arrivals, arrived = 0, completed = 0;
  };
  struct Named {
    std::string name;
    int participants, arrived = 0, generation = 0;
  };
  struct Agent {
    std::string lane;
    Program program;
    std::size_t pc = 0;
    Tick busy_until = 0;
    bool blocked = false;
    Tick blocked_since = 0;
    int awaited_generation = -1;
    Tick open_group = -1, open_copies = -1;  // end of the open wgmma / cp.async group
    std::vector<Tick> groups, copy_groups;   // ends of the committed ones
  };
  bool step(Agent& a, Tick now);
  void arrive(MBarrier& b, int count, Tick now);

  std::vector<Unit> units_;
  std::vector<MBarrier> mbarriers_;
  std::vector<Named> named_;
  std::deque<Agent> agents_;                    // a deque: agent() hands out references that must stay valid
  std::vector<std::pair<Tick, int>> landings_;  // (time, mbarrier) of the TMA copies in flight
};

// CSV rows: panel,lane,agent,category,label,start,end. Flips are category "flip" (label
// "<barrier> phase <n>", start = end = the time); params are category "param" (label
// "name=value") so that a picture can say what it assumed.
void write_csv_header(std::ostream& out);
void write_csv(std::ostream& out, const std::string& panel, const Machine& m);
struct Param {
  std::string name, value;
  Param(std::string n, std::string v) : name(std::move(n)), value(std::move(v)) {}
  Param(std::string n, long long v) : name(std::move(n)), value(std::to_string(v)) {}
};
void write_params(std::ostream& out, const std::string& panel, std::initializer_list<Param> params);

}  // namespace sched
