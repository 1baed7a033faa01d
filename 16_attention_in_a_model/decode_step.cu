// One decoding step: the new keys and values into the cache (one launch), then chapter 11's decode.
// At batch 1 a step of a model is a few hundred small launches and the host decides its speed; an
// operator that spends a dozen PyTorch calls on a copy is slower than one that spends one launch.
#include <cstdint>
#include <stdexcept>
#include <string>

#include "attention_ops.h"
#include "cuda_check.h"
#include "launch.h"
#include "numeric.h"

namespace ops {

namespace {

struct AppendParams {
  bf16* K;
  bf16* V;
  const bf16* K_new;  // [B, H_kv, n_new, d]
  const bf16* V_new;
  const int* seq_lens;
  int* seq_lens_after;     // null: not written
  const int* block_table;  // null: contiguous
  long long total;         // 16-byte pieces of K_new: B * H_kv * n_new * d / 8
  long long max_keys;      // keys one sequence's cache holds
  int H_kv, n_new, d;
  int capacity;  // contiguous: keys per slab
  int page_size, max_pages, num_pages;
};

// One thread per 16-byte piece of K_new (and V_new): piece x is element 8x of both, the piece
// `x % (d / 8)` of key t of head h of sequence b. Consecutive threads write consecutive bytes of
// one key's row; one row is 128 or 256 contiguous bytes in either layout.
__global__ void append_kv_kernel(AppendParams p) {
  const long long x = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (x >= p.total) return;
  const int pieces = p.d / 8, piece = static_cast<int>(x % pieces);
  const long long key = x / pieces;  // (b, h, t) flattened
  const int t = static_cast<int>(key % p.n_new), h = static_cast<int>(key / p.n_new % p.H_kv);
  const long long b = key / p.n_new / p.H_kv;
  const long long pos = static_cast<long long>(p.seq_lens[b]) + t;
  if (p.seq_lens_after && h == 0 && t == 0 && piece == 0) p.seq_lens_after[b] = p.seq_lens[b] + p.n_new;
  if (pos < 0 || pos >= p.max_keys) return;
  long long row;  // the cache row that holds key `pos` of (b, h)
  if (p.block_table == nullptr) {
    row = (b * p.H_kv + h) * p.capacity + pos;
  } else {
    const int page = p.block_table[b * p.max_pages + pos / p.page_size];
    if (page < 0 || page >= p.num_pages) return;
    row = (static_cast<long long>(page) * p.H_kv + h) * p.page_size + pos % p.page_size;
  }
  const long long to = row * p.d + 8 * piece;
  *reinterpret_cast<uint4*>(p.K + to) = *reinterpret_cast<const uint4*>(p.K_new + 8 * x);
  *reinterpret_cast<uint4*>(p.V + to) = *reinterpret_cast<const uint4*>(p.V_new + 8 * x);
}

constexpr int kAppendThreads = 256;

std::size_t round16(std::size_t bytes) { return ladder::round_up(bytes, 16); }

}  // namespace

fdec::KvCache KvCache::view() const {
  if (block_table == nullptr) return fdec::KvCache::contiguous(K, V, capacity);
  return fdec::KvCache::paged(K, V, block_table, num_pages, page_size, max_pages_per_seq);
}

void append_kv(const KvCache& c, int B, int H_kv, int d, const int* seq_lens, const bf16* K_new, const bf16* V_new,
               int n_new, int* seq_lens_after, cudaStream_t stream) {
  const std::string who = "ops::append_kv";
  if (B < 1 || H_kv < 1 || n_new < 0)
    throw std::invalid_argument(who + ": B = " + std::to_string(B) + ", H_kv = " + std::to_string(H_kv) +
                                ", n_new = " + std::to_string(n_new) + ": B and H_kv >= 1, n_new >= 0");
  if (d != 64 && d != 128) throw std::invalid_argument(who + ": head dim " + std::to_string(d) + ": 64 or 128");
  const bool paged = c.block_table != nullptr;
  if (!paged && c.capacity < 1) throw std::invalid_argument(who + ": a contiguous cache needs capacity >= 1");
  if (paged && ((c.page_size != 16 && c.page_size != 64) || c.num_pages < 1 || c.max_pages_per_seq < 1))
    throw std::invalid_argument(who + ": pages of 16 or 64 keys, num_pages and max_pages_per_seq >= 1");
  if (n_new == 0) {
    if (seq_lens_after)
      CUDA_CHECK(cudaMemcpyAsync(seq_lens_after, seq_lens, B * sizeof(int), cudaMemcpyDefault, stream));
    return;
  }
  // Where a pointer is optional and absent, an already checked one stands in (one call, one driver query each).
  ladder::check_pointers(who,
                         {{"K", c.K},
                          {"V", c.V},
                          {"K_new", K_new},
                          {"V_new", V_new},
                          {"seq_lens", seq_lens, 4},
                          {"seq_lens_after", seq_lens_after ? seq_lens_after : seq_lens, 4},
                          {"block_table", paged ? c.block_table : seq_lens, 4}},
                         16);
  AppendParams p{};
  p.K = c.K, p.V = c.V, p.K_new = K_new, p.V_new = V_new;
  p.seq_lens = seq_lens, p.seq_lens_after = seq_lens_after, p.block_table = c.block_table;
  p.total = static_cast<long long>(B) * H_kv * n_new * (d / 8);
  p.max_keys = c.view().max_keys();
  p.H_kv = H_kv, p.n_new = n_new, p.d = d, p.capacity = c.capacity;
  p.page_size = c.page_size, p.max_pages = c.max_pages_per_seq, p.num_pages = c.num_pages;
  const unsigned long long blocks = (p.total + kAppendThreads - 1) / kAppendThreads;
  ladder::check_grid(who, blocks);
  append_kv_kernel<<<static_cast<unsigned>(blocks), kAppendThreads, 0, stream>>>(p);
  CUDA_CHECK_LAUNCH();
}

// The workspace, in order: chapter 11's partials, the LSE (which a model does not use), the lengths
// after the append. Each part starts 16-byte aligned.
std::size_t decode_workspace_bytes(const fdec::DecodeShape& s) {
  return round16(fdec::plan(s).workspace_bytes) + round16(s.rows() * sizeof(float)) + s.B * sizeof(int);
}

void decode(const fdec::DecodeShape& s, const bf16* Q, const KvCache& c, const int* seq_lens, const bf16* K_new,
            const bf16* V_new, int n_new, bf16* O, void* workspace, cudaStream_t stream) {
  const std::size_t partials = round16(fdec::plan(s).workspace_bytes);  // checks the shape
  ladder::check_pointers("ops::decode", {{"Q", Q}, {"O", O}, {"workspace", workspace}}, 16);
  auto* bytes = static_cast<unsigned char*>(workspace);
  auto* lse = reinterpret_cast<float*>(bytes + partials);
  auto* lens = reinterpret_cast<int*>(bytes + partials + round16(s.rows() * sizeof(float)));
  // Checked before the append writes anything: what decode() would refuse is refused first.
  const fdec::KvCache kv = c.view();
  if (s.max_seq_len > kv.max_keys())
    throw std::invalid_argument("ops::decode: max_seq_len = " + std::to_string(s.max_seq_len) +
                                " but the cache holds " + std::to_string(kv.max_keys()) + " keys per sequence");
  const int* after = seq_lens;
  if (n_new > 0) {
    append_kv(c, s.B, s.H_kv, s.d, seq_lens, K_new, V_new, n_new, lens, stream);
    after = lens;
  }
  fdec::decode(s, Q, kv, after, O, lse, partials > 0 ? workspace : nullptr, {}, stream);
}

}  // namespace ops
