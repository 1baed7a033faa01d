#include "schedule_model.h"

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace sched {

// ---- programs ---------------------------------------------------------------------------
Program& Program::run(int unit, Tick cost, const std::string& category, const std::string& label,
                      const std::vector<std::string>& also_lanes, int pieces) {
  for (int p = 0; p < pieces; ++p)
    steps_.push_back({Op::Run, unit, cost / pieces + (p < cost % pieces), 0, category, label, "", also_lanes});
  return *this;
}
Program& Program::issue(int unit, Tick cost, const std::string& label) {
  steps_.push_back({Op::Issue, unit, cost, 0, "gemm", label, "", {}});
  return *this;
}
Program& Program::commit() {
  steps_.push_back({Op::Commit, -1, 0, 0, "", "", "", {}});
  return *this;
}
Program& Program::wait_groups(int n) {
  steps_.push_back({Op::WaitGroups, -1, 0, n, "wait", "wgmma.wait_group " + std::to_string(n), "", {}});
  return *this;
}
Program& Program::tma(int mbarrier, Tick latency, const std::string& label, const std::string& lane) {
  steps_.push_back({Op::Tma, mbarrier, latency, 0, "copy", label, lane, {}});
  return *this;
}
Program& Program::cp_async(Tick latency, const std::string& label, const std::string& lane) {
  steps_.push_back({Op::CpAsync, -1, latency, 0, "copy", label, lane, {}});
  return *this;
}
Program& Program::cp_commit() {
  steps_.push_back({Op::CpCommit, -1, 0, 0, "", "", "", {}});
  return *this;
}
Program& Program::cp_wait(int n) {
  steps_.push_back({Op::CpWait, -1, 0, n, "wait", "cp.async.wait_group " + std::to_string(n), "", {}});
  return *this;
}
Program& Program::arrive(int mbarrier, int count) {
  steps_.push_back({Op::Arrive, mbarrier, 0, count, "", "", "", {}});
  return *this;
}
Program& Program::wait(int mbarrier, int phases, const std::string& label) {
  steps_.push_back({Op::Wait, mbarrier, 0, phases, "wait", label, "", {}});
  return *this;
}
Program& Program::bar_sync(int named, const std::string& label) {
  steps_.push_back({Op::BarSync, named, 0, 0, "wait", label, "", {}});
  return *this;
}
Program& Program::bar_arrive(int named) {
  steps_.push_back({Op::BarArrive, named, 0, 0, "", "", "", {}});
  return *this;
}
Program& Program::mark(const std::string& label) {
  steps_.push_back({Op::Mark, -1, 0, 0, "mark", label, "", {}});
  return *this;
}

// ---- the machine ------------------------------------------------------------------------
int Machine::unit(const std::string& lane) {
  units_.push_back({lane});
  return static_cast<int>(units_.size()) - 1;
}
int Machine::mbarrier(const std::string& name, int arrivals, const std::string& lane) {
  mbarriers_.push_back({name, lane, arrivals});
  return static_cast<int>(mbarriers_.size()) - 1;
}
int Machine::named_barrier(const std::string& name, int participants) {
  named_.push_back({name, participants});
  return static_cast<int>(named_.size()) - 1;
}
Program& Machine::agent(const std::string& lane) {
  agents_.push_back({});
  agents_.back().lane = lane;
  return agents_.back().program;
}

void Machine::arrive(MBarrier& b, int count, Tick now) {
  b.arrived += count;
  if (b.arrived > b.arrivals)
    throw std::logic_error("mbarrier " + b.name + ": more arrivals than its count before its phase completed");
  if (b.arrived == b.arrivals) {
    flips.push_back({b.lane, b.name, b.completed, now});
    b.arrived = 0;
    ++b.completed;
  }
}

namespace {
int in_flight(const std::vector<Tick>& ends, Tick now) {
  return static_cast<int>(std::count_if(ends.begin(), ends.end(), [&](Tick e) { return e > now; }));
}
}  // namespace

// Tries the agent's next instruction at `now`: true when it was done (the agent moves on).
bool Machine::step(Agent& a, Tick now) {
  const Program::Step& s = a.program.steps_[a.pc];
  using Op = Program::Op;
  bool done = true;
  switch (s.op) {
    case Op::Run: {  // unit -1: the agent's own work, nothing shared
      const Tick start = s.target < 0 ? now : std::max(now, units_[s.target].free);
      a.busy_until = start + s.cost;
      if (s.target >= 0) units_[s.target].free = a.busy_until;
      intervals.push_back({a.lane, a.lane, s.category, s.label, start, start + s.cost});
      for (const std::string& lane : s.also)
        intervals.push_back({lane, a.lane, s.category, s.label, start, start + s.cost});
      break;
    }
    case Op::Issue: {
      Unit& u = units_[s.target];
      const Tick start = std::max(now, u.free);
      u.free = start + s.cost;
      a.open_group = std::max(a.open_group, u.free);
      intervals.push_back({u.lane, a.lane, s.category, s.label, start, u.free});
      break;
    }
    case Op::Commit:
      a.groups.push_back(std::max(a.open_group, now));
      a.open_group = -1;
      break;
    case Op::WaitGroups: done = in_flight(a.groups, now) <= s.count; break;
    case Op::Tma:
      landings_.push_back({now + s.cost, s.target});
      intervals.push_back({s.lane, a.lane, s.category, s.label, now, now + s.cost});
      intervals.push_back({a.lane, a.lane, "issue", s.label, now, now});
      break;
    case Op::CpAsync:
      a.open_copies = std::max(a.open_copies, now + s.cost);
      intervals.push_back({s.lane, a.lane, s.category, s.label, now, now + s.cost});
      break;
    case Op::CpCommit:  // an empty group is complete at once
      a.copy_groups.push_back(std::max(a.open_copies, now));
      a.open_copies = -1;
      break;
    case Op::CpWait: done = in_flight(a.copy_groups, now) <= s.count; break;
    case Op::Arrive: arrive(mbarriers_[s.target], s.count, now); break;
    case Op::Wait: done = mbarriers_[s.target].completed >= s.count; break;
    case Op::BarSync: {
      Named& b = named_[s.target];
      if (a.awaited_generation < 0) {  // first try: this agent's arrival
        a.awaited_generation = b.generation;
        if (++b.arrived == b.participants) b.arrived = 0, ++b.generation;
      }
      done = b.generation > a.awaited_generation;
      if (done) a.awaited_generation = -1;
      break;
    }
    case Op::BarArrive: {
      Named& b = named_[s.target];
      if (++b.arrived == b.participants) b.arrived = 0, ++b.generation;
      break;
    }
    case Op::Mark: intervals.push_back({a.lane, a.lane, s.category, s.label, now, now}); break;
  }
  if (!done) {
    if (!a.blocked) a.blocked = true, a.blocked_since = now;
    return false;
  }
  if (a.blocked && now > a.blocked_since) intervals.push_back({a.lane, a.lane, "wait", s.label, a.blocked_since, now});
  a.blocked = false;
  ++a.pc;
  return true;
}

void Machine::run() {
  constexpr Tick kNever = std::numeric_limits<Tick>::max();
  Tick now = 0;
  for (;;) {
    // Everything that can happen at `now`, until nothing more can.
    for (bool moved = true; moved;) {
      moved = false;
      for (auto& l : landings_)
        if (l.second >= 0 && l.first <= now) {
          arrive(mbarriers_[l.second], 1, l.first);
          l.second = -1;
          moved = true;
        }
      // One instruction per agent per pass: agents that issue at the same time interleave,
      // as two warpgroups' instructions do on an SM.
      for (Agent& a : agents_)
        if (a.pc < a.program.steps_.size() && a.busy_until <= now && step(a, now)) moved = true;
    }
    bool finished = true;
    Tick next = kNever;
    auto later = [&](Tick t) {
      if (t > now) next = std::min(next, t);
    };
    for (const Agent& a : agents_) {
      if (a.pc < a.program.steps_.size()) finished = false;
      later(a.busy_until);
      for (Tick t : a.groups) later(t);
      for (Tick t : a.copy_groups) later(t);
    }
    for (const auto& l : landings_)
      if (l.second >= 0) later(l.first);
    if (finished) break;
    if (next == kNever) {
      std::string stuck;
      for (const Agent& a : agents_)
        if (a.pc < a.program.steps_.size()) stuck += " " + a.lane + " at '" + a.program.steps_[a.pc].label + "'";
      throw std::logic_error("schedule model: deadlock:" + stuck);
    }
    now = next;
  }
  for (const Interval& i : intervals) end = std::max(end, i.end);
}

// ---- output -----------------------------------------------------------------------------
namespace {
std::string quoted(const std::string& s) { return s.find(',') == std::string::npos ? s : '"' + s + '"'; }
}  // namespace

void write_csv_header(std::ostream& out) { out << "panel,lane,agent,category,label,start,end\n"; }

void write_csv(std::ostream& out, const std::string& panel, const Machine& m) {
  for (const Interval& i : m.intervals)
    out << quoted(panel) << ',' << quoted(i.lane) << ',' << quoted(i.agent) << ',' << i.category << ','
        << quoted(i.label) << ',' << i.start << ',' << i.end << '\n';
  for (const Flip& f : m.flips)
    out << quoted(panel) << ',' << quoted(f.lane) << ",,"
        << "flip," << quoted(f.barrier + " phase " + std::to_string(f.phase)) << ',' << f.time << ',' << f.time << '\n';
}

void write_params(std::ostream& out, const std::string& panel, std::initializer_list<Param> params) {
  for (const Param& p : params) out << quoted(panel) << ",,,param," << quoted(p.name + "=" + p.value) << ",0,0\n";
}

}  // namespace sched
