#include "ring_host.h"

#include "attention_inputs.h"
#include "bf16.h"
#include "cuda_check.h"
#include "device_random.h"
#include "reference_attention.h"

namespace ring {

namespace {
template <class F>
void for_each_row(const ladder::AttentionShape& s, const Layout& l, int rank, F f) {  // f(part row, full row)
  const int C = l.chunk_len();
  std::size_t part = 0;
  for (int k = 0; k < l.slots(); ++k) {
    const std::size_t c = l.chunk(rank, k);
    for (std::size_t bh = 0; bh < s.heads(); ++bh)
      for (int i = 0; i < C; ++i) f(part++, bh * s.N + c * C + i);
  }
}

void put(bf16* dst, const std::vector<float>& host) {
  const std::vector<bf16> b = ladder::to_bf16(host);
  CUDA_CHECK(cudaMemcpy(dst, b.data(), b.size() * sizeof(bf16), cudaMemcpyHostToDevice));
}
std::vector<float> get(const bf16* src, std::size_t n) {
  std::vector<bf16> b(n);
  CUDA_CHECK(cudaMemcpy(b.data(), src, n * sizeof(bf16), cudaMemcpyDeviceToHost));
  return ladder::from_bf16(b);
}
}  // namespace

std::vector<float> scatter(const std::vector<float>& full, const ladder::AttentionShape& s, const Layout& l, int rank,
                           int width) {
  std::vector<float> part(s.heads() * l.tokens_per_rank() * width);
  for_each_row(s, l, rank, [&](std::size_t p, std::size_t f) {
    for (int k = 0; k < width; ++k) part[p * width + k] = full[f * width + k];
  });
  return part;
}

void gather(const std::vector<float>& part, const ladder::AttentionShape& s, const Layout& l, int rank, int width,
            std::vector<float>& full) {
  for_each_row(s, l, rank, [&](std::size_t p, std::size_t f) {
    for (int k = 0; k < width; ++k) full[f * width + k] = part[p * width + k];
  });
}

void upload(Ring& ring, const std::vector<float>& Q, const std::vector<float>& K, const std::vector<float>& V,
            const std::vector<float>& dO) {
  const auto& s = ring.shape();
  const Layout& l = ring.layout();
  const std::size_t n = l.slots() * ring.chunk_elems();
  for (int r = 0; r < ring.ranks(); ++r) {
    CUDA_CHECK(cudaSetDevice(ring.device(r)));
    put(ring.Q(r), scatter(Q, s, l, r, s.d));
    put(ring.K(r), scatter(K, s, l, r, s.d));
    put(ring.V(r), scatter(V, s, l, r, s.d));
    if (!dO.empty()) put(ring.dO(r), scatter(dO, s, l, r, s.d));
    // Every output NaN until written (0xFF bytes: NaN in bf16 and fp32).
    for (bf16* p : {ring.O(r), ring.dQ(r), ring.dK(r), ring.dV(r)}) CUDA_CHECK(cudaMemset(p, 0xFF, n * sizeof(bf16)));
    CUDA_CHECK(cudaMemset(ring.L(r), 0xFF, l.slots() * ring.chunk_rows() * sizeof(float)));
  }
}

RingOutputs download(Ring& ring, bool with_grads) {
  const auto& s = ring.shape();
  const Layout& l = ring.layout();
  const std::size_t n = l.slots() * ring.chunk_elems(), rows = l.slots() * ring.chunk_rows();
  RingOutputs out;
  out.O.assign(s.elems(), 0.0f);
  out.L.assign(s.rows(), 0.0f);
  if (with_grads) out.dQ = out.dK = out.dV = out.O;
  for (int r = 0; r < ring.ranks(); ++r) {
    CUDA_CHECK(cudaSetDevice(ring.device(r)));
    gather(get(ring.O(r), n), s, l, r, s.d, out.O);
    std::vector<float> L(rows);
    CUDA_CHECK(cudaMemcpy(L.data(), ring.L(r), rows * sizeof(float), cudaMemcpyDeviceToHost));
    gather(L, s, l, r, 1, out.L);
    if (!with_grads) continue;
    gather(get(ring.dQ(r), n), s, l, r, s.d, out.dQ);
    gather(get(ring.dK(r), n), s, l, r, s.d, out.dK);
    gather(get(ring.dV(r), n), s, l, r, s.d, out.dV);
  }
  return out;
}

void upload_forward(Ring& ring, const std::vector<float>& O, const std::vector<float>& L) {
  const auto& s = ring.shape();
  const Layout& l = ring.layout();
  for (int r = 0; r < ring.ranks(); ++r) {
    CUDA_CHECK(cudaSetDevice(ring.device(r)));
    put(ring.O(r), scatter(O, s, l, r, s.d));
    const std::vector<float> part = scatter(L, s, l, r, 1);
    CUDA_CHECK(cudaMemcpy(ring.L(r), part.data(), part.size() * sizeof(float), cudaMemcpyHostToDevice));
  }
}

void fill_random(Ring& ring, std::uint64_t seed) {
  const std::size_t n = ring.layout().slots() * ring.chunk_elems();
  for (int r = 0; r < ring.ranks(); ++r) {
    CUDA_CHECK(cudaSetDevice(ring.device(r)));
    const std::uint64_t base = seed + 16ull * r;
    ladder::fill_uniform_device(ring.Q(r), n, base);
    ladder::fill_uniform_device(ring.K(r), n, base + 1);
    ladder::fill_uniform_device(ring.V(r), n, base + 2);
    ladder::fill_uniform_device(ring.dO(r), n, base + 3);
    CUDA_CHECK(cudaDeviceSynchronize());
  }
}

RingCheck check_against_reference(const ladder::AttentionShape& shape, Sharding sharding, Transport& transport,
                                  std::uint64_t seed) {
  Ring ring(shape, sharding, transport);
  const ladder::AttentionShape& s = ring.shape();  // validated and resolved
  const ladder::AttentionInputs x = ladder::random_attention_inputs(s, seed, true);
  const std::vector<float> Q = ladder::round_to_bf16(x.Q), K = ladder::round_to_bf16(x.K),
                           V = ladder::round_to_bf16(x.V), dO = ladder::round_to_bf16(x.dO);
  upload(ring, Q, K, V, dO);
  ring.forward();
  ring.backward();
  ring.synchronize();
  const RingOutputs out = download(ring, true);
  const auto f = ladder::attention_forward_reference(s, Q.data(), K.data(), V.data());
  const auto g = ladder::attention_backward_reference(s, Q.data(), K.data(), V.data(), dO.data());
  return {ladder::compare(out.O, f.O), ladder::compare_lse(out.L, f.L), ladder::compare(out.dQ, g.dQ),
          ladder::compare(out.dK, g.dK), ladder::compare(out.dV, g.dV)};
}

}  // namespace ring
