// The ring's host side: buffers, streams, events, and the order of every call.
//
// Per rank two streams: `compute` runs the tiles (chapter 10) and the merges, `comm` runs
// the transport's shifts. Events order them:
//   forward, step t: comm    shift K/V: send the shard held now (cur), receive into next;
//                            next was step t-1's cur, so first wait for compute(t-1)
//                    compute wait for shift t-1 (it brought cur), then tiles + merges
//   backward, step t: as the forward for K/V; compute(t) adds its dK/dV contributions into
//                    fp32 sums of its own, then waits for the running sums of the shard it
//                    holds (the dK/dV shift of step t-1) and adds its part (the `add`); then
//                    the comm stream passes the sums on, beside compute(t+1) on the next K/V.
//                    After the last step the sums, complete, go home in bf16: the rounding
//                    the owner would do anyway, on half the bytes of the one shift that
//                    nothing can hide.
// Every partial gradient stays fp32 until that one rounding (fa2tc::backward_accumulate adds
// into the sums): rounding each tile's share to bf16 first would add one bf16 error per tile,
// and a share over a few keys can be larger than the whole gradient it cancels into.
// Double buffers: the shard arriving for step t+1 never lands on the one step t reads.
#include "ring.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "cuda_check.h"
#include "device_buffer.h"
#include "fa2_tc.h"
#include "ring_kernels.h"

namespace ring {

using ladder::DeviceBuffer;

struct Ring::RankState {
  int dev = 0;
  std::size_t E = 0, R = 0;
  int S = 1;
  DeviceBuffer<bf16> q, dO, o, dq;
  DeviceBuffer<bf16> kv_own, dkv_out;  // [K slots | V slots], [dK slots | dV slots]
  DeviceBuffer<bf16> kv_buf[2];        // shards in flight
  DeviceBuffer<bf16> dkv_home;         // the complete sums of the last step, in bf16, on their way home
  DeviceBuffer<bf16> o_tmp;            // one tile's forward output
  DeviceBuffer<float> l, l_tmp, o_acc, dq_acc;
  DeviceBuffer<float> D;                     // one tile's rowsum(dO * O): the backward's workspace
  DeviceBuffer<float> dkv_buf[2], dkv_step;  // travelling fp32 dK/dV sums, this step's own sums
  cudaStream_t compute = nullptr, comm = nullptr;
  cudaEvent_t start = nullptr, end = nullptr;
  std::vector<cudaEvent_t> ev[8];  // start and end per step of compute, kv, add, dkv
  std::vector<bool> used[4];       // which of them ran in the last run

  const bf16* kv_at(int step) const { return step == 0 ? kv_own.data() : kv_buf[(step - 1) % 2].data(); }
  bf16* kv_next(int step) { return kv_buf[step % 2].data(); }
  void mark(int which, int step, cudaStream_t s, bool begin_of) {
    CUDA_CHECK(cudaEventRecord(ev[2 * which + (begin_of ? 0 : 1)][step], s));
    used[which][step] = true;
  }
  cudaEvent_t end_of(int which, int step) const { return ev[2 * which + 1][step]; }
};

namespace {
enum { kComp = 0, kKv = 1, kAdd = 2, kDkv = 3 };  // the order of RankTimeline's lists

// What the ring takes, resolved (H_kv and N_kv spelled out) as ladder::validate returns it.
ladder::AttentionShape checked(const ladder::AttentionShape& s) {
  if (!s.self_attention())
    throw std::invalid_argument("ring: self-attention only (H_kv = H, N_kv = N); got " + s.str());
  return ladder::validate(s, fa2tc::kSupportedD, ladder::KvHeads::Any);
}
}  // namespace

double Ring::bytes_per_rank(const ladder::AttentionShape& s, const Layout& l) {
  const double E = double(s.heads()) * l.chunk_len() * s.d, R = double(s.heads()) * l.chunk_len(), S = l.slots();
  const double bf = 2.0 * (S * E * 4        // q, dO, o, dq
                           + 2 * S * E * 3  // kv_own, dkv_out, dkv_home
                           + 2 * 2 * S * E  // kv_buf
                           + E);            // o_tmp
  const double fp = 4.0 * (S * R + R        // l, l_tmp
                           + 2 * S * E      // o_acc, dq_acc
                           + 3 * 2 * S * E  // dkv_buf, dkv_step
                           + R);            // D
  return bf + fp;
}

Ring::Ring(const ladder::AttentionShape& s, Sharding sharding, Transport& transport)
    : s_(checked(s)), layout_(make_layout(s_.N, transport.ranks(), sharding)), transport_(transport) {
  const int P = layout_.P;
  const double need = bytes_per_rank(s_, layout_);
  for (int r = 0; r < P; ++r) {
    CUDA_CHECK(cudaSetDevice(transport.device(r)));
    std::size_t free_b = 0, total_b = 0;
    CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
    // Loopback puts every rank on one device: all of them must fit there together.
    const double here =
        transport.device(r) == transport.device(0) && transport.device(P - 1) == transport.device(0) ? need * P : need;
    if (here > double(free_b))
      throw std::invalid_argument("ring: " + s_.str() + " over P = " + std::to_string(P) + " (" + name(sharding) +
                                  ") needs " + std::to_string(here / 1e9) + " GB on device " +
                                  std::to_string(transport.device(r)) + "; " + std::to_string(free_b / 1e9) +
                                  " GB are free");
  }
  const std::size_t E = chunk_elems(), R = chunk_rows();
  const int S = layout_.slots();
  for (int r = 0; r < P; ++r) {
    auto st = std::make_unique<RankState>();
    st->dev = transport.device(r);
    st->E = E, st->R = R, st->S = S;
    CUDA_CHECK(cudaSetDevice(st->dev));
    st->q = DeviceBuffer<bf16>(S * E), st->dO = DeviceBuffer<bf16>(S * E);
    st->o = DeviceBuffer<bf16>(S * E), st->dq = DeviceBuffer<bf16>(S * E);
    st->kv_own = DeviceBuffer<bf16>(2 * S * E), st->dkv_out = DeviceBuffer<bf16>(2 * S * E);
    st->dkv_home = DeviceBuffer<bf16>(2 * S * E);
    for (auto& b : st->kv_buf) {
      b = DeviceBuffer<bf16>(2 * S * E);
      CUDA_CHECK(cudaMemset(b.data(), 0, b.bytes()));  // finite data for Phase::ComputeOnly
    }
    st->o_tmp = DeviceBuffer<bf16>(E);
    st->l = DeviceBuffer<float>(S * R), st->l_tmp = DeviceBuffer<float>(R);
    st->o_acc = DeviceBuffer<float>(S * E), st->dq_acc = DeviceBuffer<float>(S * E);
    st->D = DeviceBuffer<float>(R);
    for (auto& b : st->dkv_buf) b = DeviceBuffer<float>(2 * S * E);
    st->dkv_step = DeviceBuffer<float>(2 * S * E);
    // Blocking streams: they wait for the legacy default stream, so inputs written there
    // (cudaMemcpy, fills on stream 0) are complete before a run starts.
    CUDA_CHECK(cudaStreamCreate(&st->compute));
    CUDA_CHECK(cudaStreamCreate(&st->comm));
    CUDA_CHECK(cudaEventCreate(&st->start));
    CUDA_CHECK(cudaEventCreate(&st->end));
    for (auto& list : st->ev) {
      list.resize(P);
      for (cudaEvent_t& e : list) CUDA_CHECK(cudaEventCreate(&e));
    }
    for (auto& u : st->used) u.assign(P, false);
    comm_streams_.push_back(st->comm);
    ranks_.push_back(std::move(st));
  }
}

Ring::~Ring() {
  for (auto& st : ranks_) {
    cudaSetDevice(st->dev);
    cudaStreamSynchronize(st->compute);
    cudaStreamSynchronize(st->comm);
    for (auto& list : st->ev)
      for (cudaEvent_t e : list) cudaEventDestroy(e);
    cudaEventDestroy(st->start);
    cudaEventDestroy(st->end);
    cudaStreamDestroy(st->compute);
    cudaStreamDestroy(st->comm);
    st.reset();  // frees on its own device
  }
}

int Ring::device(int rank) const { return ranks_.at(rank)->dev; }
std::size_t Ring::chunk_elems() const { return s_.heads() * std::size_t(layout_.chunk_len()) * s_.d; }
std::size_t Ring::chunk_rows() const { return s_.heads() * std::size_t(layout_.chunk_len()); }

bf16* Ring::Q(int r) { return ranks_.at(r)->q.data(); }
bf16* Ring::K(int r) { return ranks_.at(r)->kv_own.data(); }
bf16* Ring::V(int r) { return ranks_.at(r)->kv_own.data() + layout_.slots() * chunk_elems(); }
bf16* Ring::dO(int r) { return ranks_.at(r)->dO.data(); }
bf16* Ring::O(int r) { return ranks_.at(r)->o.data(); }
float* Ring::L(int r) { return ranks_.at(r)->l.data(); }
bf16* Ring::dQ(int r) { return ranks_.at(r)->dq.data(); }
bf16* Ring::dK(int r) { return ranks_.at(r)->dkv_out.data(); }
bf16* Ring::dV(int r) { return ranks_.at(r)->dkv_out.data() + layout_.slots() * chunk_elems(); }

void Ring::begin(int r) {
  RankState& st = *ranks_[r];
  CUDA_CHECK(cudaSetDevice(st.dev));
  for (auto& u : st.used) std::fill(u.begin(), u.end(), false);
  CUDA_CHECK(cudaEventRecord(st.start, st.compute));
  CUDA_CHECK(cudaStreamWaitEvent(st.comm, st.start, 0));
}

void Ring::end_run(int r) {
  RankState& st = *ranks_[r];
  CUDA_CHECK(cudaEventRecord(st.end, st.compute));
}

void Ring::shift(int which, int t, const std::function<cudaEvent_t(int)>& after,
                 const std::function<Message(int)>& message) {
  std::vector<std::vector<Message>> msgs(layout_.P);
  for (int r = 0; r < layout_.P; ++r) {
    RankState& st = *ranks_[r];
    CUDA_CHECK(cudaSetDevice(st.dev));
    if (cudaEvent_t e = after(r)) CUDA_CHECK(cudaStreamWaitEvent(st.comm, e, 0));
    st.mark(which, t, st.comm, true);
    msgs[r] = {message(r)};
  }
  transport_.shift(msgs, comm_streams_);
  for (int r = 0; r < layout_.P; ++r) {
    CUDA_CHECK(cudaSetDevice(ranks_[r]->dev));
    ranks_[r]->mark(which, t, ranks_[r]->comm, false);
  }
}

void Ring::shift_kv(int t) {
  const std::size_t bytes = 2 * layout_.slots() * chunk_elems() * sizeof(bf16);
  shift(
      kKv, t,
      // the buffer it receives into is the one step t-1 computed on
      [&](int r) { return t >= 2 ? ranks_[r]->end_of(kComp, t - 1) : cudaEvent_t{}; },
      [&](int r) {
        return Message{ranks_[r]->kv_at(t), ranks_[r]->kv_next(t), bytes};
      });
}

void Ring::forward(Phase phase) {
  const int P = layout_.P, S = layout_.slots();
  const bool comm = phase != Phase::ComputeOnly, compute = phase != Phase::CommOnly;
  const std::size_t E = chunk_elems(), R = chunk_rows();
  for (int r = 0; r < P; ++r) {
    begin(r);
    RankState& st = *ranks_[r];
    fill(st.l.data(), std::int64_t(S * R), -INFINITY, st.compute);
    CUDA_CHECK(cudaMemsetAsync(st.o_acc.data(), 0, st.o_acc.bytes(), st.compute));
  }
  for (int t = 0; t < P; ++t) {
    if (comm && t + 1 < P) shift_kv(t);  // bring step t+1's shard while step t computes
    for (int r = 0; r < P; ++r) {
      RankState& st = *ranks_[r];
      CUDA_CHECK(cudaSetDevice(st.dev));
      if (comm && t >= 1) CUDA_CHECK(cudaStreamWaitEvent(st.compute, st.end_of(kKv, t - 1), 0));  // cur arrived
      st.mark(kComp, t, st.compute, true);
      if (compute)
        for (const Tile& tile : tiles(layout_, s_.causal, r, t)) {
          const bf16* K_j = st.kv_at(t) + tile.k_slot * E;
          const bf16* V_j = K_j + S * E;
          fa2tc::forward(tile_shape(s_, layout_, tile.mask), st.q.data() + tile.q_slot * E, K_j, V_j, st.o_tmp.data(),
                         st.l_tmp.data(), st.compute);
          merge(st.o_acc.data() + tile.q_slot * E, st.l.data() + tile.q_slot * R, st.o_tmp.data(), st.l_tmp.data(),
                std::int64_t(R), s_.d, st.compute);
        }
      st.mark(kComp, t, st.compute, false);
    }
  }
  for (int r = 0; r < P; ++r) {
    RankState& st = *ranks_[r];
    CUDA_CHECK(cudaSetDevice(st.dev));
    to_bf16(st.o_acc.data(), st.o.data(), std::int64_t(S * E), st.compute);
    end_run(r);
  }
}

void Ring::backward(Phase phase) {
  const int P = layout_.P, S = layout_.slots();
  const bool comm = phase != Phase::ComputeOnly, compute = phase != Phase::CommOnly;
  const std::size_t E = chunk_elems(), R = chunk_rows(), dkv = 2 * S * E;  // dK and dV of a shard
  for (int r = 0; r < P; ++r) {
    begin(r);
    CUDA_CHECK(cudaMemsetAsync(ranks_[r]->dq_acc.data(), 0, ranks_[r]->dq_acc.bytes(), ranks_[r]->compute));
  }
  for (int t = 0; t < P; ++t) {
    if (comm && t + 1 < P) shift_kv(t);
    const bool last = t == P - 1;
    for (int r = 0; r < P; ++r) {
      RankState& st = *ranks_[r];
      CUDA_CHECK(cudaSetDevice(st.dev));
      float* travelling = st.dkv_buf[t % 2].data();  // the dK/dV sums of the shard held now
      float* sums = t == 0 ? travelling : st.dkv_step.data();
      if (comm && t >= 1) CUDA_CHECK(cudaStreamWaitEvent(st.compute, st.end_of(kKv, t - 1), 0));
      st.mark(kComp, t, st.compute, true);
      if (compute) {
        CUDA_CHECK(cudaMemsetAsync(sums, 0, dkv * sizeof(float), st.compute));
        for (const Tile& tile : tiles(layout_, s_.causal, r, t)) {
          const std::size_t qo = tile.q_slot * E, ko = tile.k_slot * E;
          const bf16* K_j = st.kv_at(t) + ko;
          const bf16* V_j = K_j + S * E;
          // dQ straight into the rank's fp32 sum, dK and dV into this step's: no rounding here.
          fa2tc::backward_accumulate(tile_shape(s_, layout_, tile.mask), st.q.data() + qo, K_j, V_j, st.o.data() + qo,
                                     st.l.data() + tile.q_slot * R, st.dO.data() + qo, st.dq_acc.data() + qo, sums + ko,
                                     sums + S * E + ko, st.D.data(), st.compute);
        }
      }
      st.mark(kComp, t, st.compute, false);
      if (t >= 1) {  // the running sums arrive from the predecessor only now: add this step's
        if (comm) CUDA_CHECK(cudaStreamWaitEvent(st.compute, st.end_of(kDkv, t - 1), 0));
        st.mark(kAdd, t, st.compute, true);
        if (compute) accumulate(travelling, sums, std::int64_t(dkv), st.compute);
        if (compute && last) to_bf16(travelling, st.dkv_home.data(), std::int64_t(dkv), st.compute);
        st.mark(kAdd, t, st.compute, false);
      }
    }
    if (comm && P > 1)  // the sums of this step's shard go on; after the last step, home
      shift(
          kDkv, t, [&](int r) { return ranks_[r]->end_of(t == 0 ? kComp : kAdd, t); },
          [&](int r) {
            RankState& st = *ranks_[r];
            return last ? Message{st.dkv_home.data(), st.dkv_out.data(), dkv * sizeof(bf16)}
                        : Message{st.dkv_buf[t % 2].data(), st.dkv_buf[(t + 1) % 2].data(), dkv * sizeof(float)};
          });
  }
  for (int r = 0; r < P; ++r) {
    RankState& st = *ranks_[r];
    CUDA_CHECK(cudaSetDevice(st.dev));
    to_bf16(st.dq_acc.data(), st.dq.data(), std::int64_t(S * E), st.compute);  // beside the last hop
    if (P == 1) to_bf16(st.dkv_buf[0].data(), st.dkv_out.data(), std::int64_t(dkv), st.compute);
    if (comm && P > 1) CUDA_CHECK(cudaStreamWaitEvent(st.compute, st.end_of(kDkv, P - 1), 0));
    end_run(r);
  }
}

void Ring::synchronize() {
  for (auto& st : ranks_) {
    CUDA_CHECK(cudaSetDevice(st->dev));
    CUDA_CHECK(cudaStreamSynchronize(st->comm));
    CUDA_CHECK(cudaStreamSynchronize(st->compute));
  }
}

std::vector<RankTimeline> Ring::timeline() const {
  std::vector<RankTimeline> out;
  for (const auto& st : ranks_) {
    CUDA_CHECK(cudaSetDevice(st->dev));
    auto since = [&](cudaEvent_t e) {
      float ms = 0;
      CUDA_CHECK(cudaEventElapsedTime(&ms, st->start, e));
      return double(ms);
    };
    RankTimeline tl;
    std::vector<Interval>* lists[4] = {&tl.compute, &tl.kv, &tl.add, &tl.dkv};
    for (int w = 0; w < 4; ++w)
      for (int t = 0; t < layout_.P; ++t)
        lists[w]->push_back(st->used[w][t] ? Interval{since(st->ev[2 * w][t]), since(st->ev[2 * w + 1][t])}
                                           : Interval{});
    tl.total_ms = since(st->end);
    out.push_back(tl);
  }
  // A shift is one collective step: no transfer starts before the last rank reaches it, so
  // until then a rank's comm stream only waits (for its peers; under NCCL inside the kernel).
  // Times are from each rank's own start; the ranks start together (a run begins on idle
  // devices, enqueued by one thread), to within the few microseconds of a launch.
  for (auto list : {&RankTimeline::kv, &RankTimeline::dkv})
    for (int t = 0; t < layout_.P; ++t) {
      double last = 0;
      for (const RankTimeline& tl : out)
        if ((tl.*list)[t].end_ms > 0) last = std::max(last, (tl.*list)[t].start_ms);
      for (RankTimeline& tl : out) {
        Interval& c = (tl.*list)[t];
        if (c.end_ms > 0) c.start_ms = std::min(c.end_ms, std::max(c.start_ms, last));
      }
    }
  return out;
}

double Ring::elapsed_ms() const {
  double most = 0;
  for (const RankTimeline& tl : timeline()) most = std::max(most, tl.total_ms);
  return most;
}

double overlap_fraction(const std::vector<RankTimeline>& tl) {
  double comm = 0, hidden = 0;
  for (const RankTimeline& r : tl)
    for (const auto* list : {&r.kv, &r.dkv})
      for (const Interval& c : *list) {
        comm += c.ms();
        for (const auto* work : {&r.compute, &r.add})
          for (const Interval& k : *work)
            hidden += std::max(0.0, std::min(c.end_ms, k.end_ms) - std::max(c.start_ms, k.start_ms));
      }
  return comm > 0 ? hidden / comm : 0.0;
}

}  // namespace ring
