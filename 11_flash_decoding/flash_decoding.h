// Chapter 11: flash-decoding. One step of text generation: n_q new queries per sequence
// (1, or up to 16 for speculative decoding) against every key so far, on a KV cache that is
// either one slab per sequence or paged. Split-KV: the keys of each (sequence, KV head) are
// cut into splits, one thread block each; every block writes a partial (O_s, LSE_s) and a
// combine kernel merges them with their log-sum-exp. Declared here, defined in
// flash_decoding.cu. No CUDA syntax: the executable, the tests and the benchmark include it.
//
// Layouts (row-major, device pointers, bf16 unless noted):
//   Q, O          [B, H_q, n_q, d]
//   LSE           [B, H_q, n_q] fp32, natural log: LSE = log sum_j exp(scale q.k_j)
//   seq_lens      [B] int32: keys of sequence b, the n_q new ones included (its last n_q
//                 positions are the queries: query t sees keys j <= seq_len - n_q + t)
//   contiguous    K, V [B, H_kv, capacity, d]: one slab of `capacity` keys per (b, h_kv)
//   paged         K_pages, V_pages [num_pages, H_kv, page_size, d] and block_table
//                 [B, max_pages_per_seq] int32: key j of sequence b is row j % page_size of
//                 page block_table[b][j / page_size]
//   query head h reads KV head h / (H_q / H_kv) (GQA; MQA is H_kv = 1).
// A query that sees no key (seq_len < n_q, or seq_len = 0) gets O = 0 and LSE = -inf.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "bf16.h"

namespace fdec {

using ladder::bf16;

inline constexpr int kSupportedD[] = {64, 128};
inline constexpr int kPageSizes[] = {16, 64};
inline constexpr int kMaxQueries = 16;   // n_q: new queries per sequence
inline constexpr int kMaxSplits = 1024;  // what Options::splits may ask for

// The sizes of one decode step. max_seq_len bounds every seq_lens[b]: it is known on the host
// (a serving engine keeps it there) and sizes the grid; the lengths themselves stay on the
// device.
struct DecodeShape {
  int B = 1, H_q = 1, H_kv = 1;
  int n_q = 1;  // new queries per sequence, 1 .. kMaxQueries
  int d = 128;
  int max_seq_len = 1;  // >= every seq_lens[b]; <= the cache's capacity

  int group() const { return H_q / H_kv; }                         // query heads per KV head
  int group_rows() const { return group() * n_q; }                 // query rows that share one K/V stream
  std::size_t rows() const { return std::size_t(B) * H_q * n_q; }  // elements of LSE
  std::size_t q_elems() const { return rows() * d; }               // elements of Q and O
  std::string str() const;                                         // "B=8 Hq=32 Hkv=8 nq=1 d=128 max_seq_len=131072"
};

// Where K and V live. Build one with contiguous() or paged().
enum class Layout { Contiguous, Paged };
struct KvCache {
  Layout layout = Layout::Contiguous;
  const bf16* K = nullptr;  // contiguous: [B, H_kv, capacity, d]; paged: [num_pages, H_kv, page_size, d]
  const bf16* V = nullptr;
  int capacity = 0;                  // contiguous: keys per (b, h_kv) slab
  const int* block_table = nullptr;  // paged: [B, max_pages_per_seq]
  int num_pages = 0, page_size = 0, max_pages_per_seq = 0;

  static KvCache contiguous(const bf16* K, const bf16* V, int capacity) {
    KvCache c;
    c.K = K, c.V = V, c.capacity = capacity;
    return c;
  }
  static KvCache paged(const bf16* K_pages, const bf16* V_pages, const int* block_table, int num_pages, int page_size,
                       int max_pages_per_seq) {
    KvCache c;
    c.layout = Layout::Paged;
    c.K = K_pages, c.V = V_pages, c.block_table = block_table;
    c.num_pages = num_pages, c.page_size = page_size, c.max_pages_per_seq = max_pages_per_seq;
    return c;
  }
  // The most keys a sequence can hold.
  long long max_keys() const {
    return layout == Layout::Contiguous ? capacity : static_cast<long long>(max_pages_per_seq) * page_size;
  }
};

// One compiled tile configuration of the split-KV kernel. Index 0 of configs(d) is the
// default; the others are the tuning sweep the benchmark measures.
struct TileConfig {
  std::string name;   // "w4_k16_s3": warps, keys per warp step, cp.async stages per warp
  int warps;          // warps per block; each streams its own share of the block's keys
  int keys_per_step;  // keys one warp loads and multiplies per step (B_c of one warp)
  int stages;         // depth of each warp's cp.async ring
  std::size_t smem_bytes;
  int tile_keys() const { return warps * keys_per_step; }  // keys per block step; splits are multiples of it
};
std::vector<TileConfig> configs(int d);

// config = kFits (the default): the first configuration of preference(d) whose shared memory
// fits this GPU (ladder::device(); a plan that falls back says so once, on stderr): index 0,
// then the rest from fastest to slowest as measured on the H200. An index runs that one.
inline constexpr int kFits = -1;
std::vector<int> preference(int d);
// What kFits picks on a GPU that allows smem_per_block bytes per block; -1 when none fits.
// Pure arithmetic: the CPU tests ask it for a 4090's, an A100's and an H200's limits.
int fit(int d, std::size_t smem_per_block);

struct Options {
  int splits = 0;      // 0: chosen by choose_splits(); 1: no split (O written directly, no combine)
  int config = kFits;  // or an index into configs(d)
  bool pdl = true;     // launch the combine with programmatic dependent launch (sm_90+): its
                       // blocks get on the GPU while the decode kernel's last blocks drain
};

// How the keys of one (sequence, KV head) are cut: `splits` blocks of `keys_per_split` keys
// (a multiple of the block's tile; the last split of a sequence may be shorter or empty).
struct Split {
  int splits = 1;
  int keys_per_split = 1;
};
// Exactly s splits asked for (as many as there are tiles at most): keys_per_split =
// ceil(max_seq_len / s) rounded up to tile_keys, then splits = ceil(max_seq_len / keys_per_split).
Split split_with(int s, int max_seq_len, int tile_keys);

// The automatic choice (README: "How many splits"). units = B * H_kv * row_tiles blocks exist
// before any split; slots = SMs * resident blocks per SM. Among the split counts that keep
// at least kMinKeysPerSplit keys per split, the wave efficiency of s splits is
//     blocks / (ceil(blocks / slots) * slots),    blocks = units * s,
// and the choice is the fewest splits whose efficiency is within kWaveSlack of the best:
// the GPU's block slots are filled in (nearly) whole waves, with as few partials to merge
// as that allows. Pure arithmetic: the tests and the README's table call it on the host.
inline constexpr int kMinKeysPerSplit = 256;
inline constexpr double kWaveSlack = 0.9;
Split choose_splits(long long units, int max_seq_len, int tile_keys, long long slots);

// What decode() launches for a shape and options, decided on the host. Validates the shape
// (not the pointers) and throws std::invalid_argument like decode().
struct Plan {
  int config_index = 0;  // into configs(d): opt.config, or what kFits picked
  TileConfig config;
  int row_tiles = 1;      // ceil(group_rows / 16): blocks per (b, h_kv, split) along the query rows
  Split split;            // the keys per block
  long long blocks = 0;   // decode kernel grid: B * H_kv * row_tiles * splits
  int blocks_per_sm = 0;  // resident decode blocks per SM (occupancy; modelled for an H200 without a GPU)
  int sm_count = 0;
  std::size_t workspace_bytes = 0;  // O partials [rows][splits][d] and LSE partials [rows][splits], fp32;
                                    // 0 when splits = 1
  std::string str() const;          // one line for the executable
};
Plan plan(const DecodeShape& s, const Options& opt = {});

// O = softmax(scale Q K^T) V and LSE per query row, scale = 1/sqrt(d), on either cache layout.
// workspace: plan(s, opt).workspace_bytes bytes of device memory, 16-byte aligned (may be null
// when that is 0). Throws std::invalid_argument before any launch for: d not in {64, 128};
// n_q outside 1..16; H_q not a multiple of H_kv; max_seq_len < 0 or more than the cache holds;
// a page size other than 16 or 64; a null pointer; Q, K, V, O or workspace not 16-byte
// aligned; an unknown config; splits outside 0..kMaxSplits.
// What is NOT checked on the host: the device values. seq_lens[b] is clamped to
// [0, max_seq_len] and block-table entries to [0, num_pages), so a bad value reads wrong keys
// but never outside the buffers (check_block_table() checks a host copy of a table).
void decode(const DecodeShape& s, const bf16* Q, const KvCache& kv, const int* seq_lens, bf16* O, float* LSE,
            void* workspace, const Options& opt = {}, cudaStream_t stream = nullptr);

// Throws std::invalid_argument naming the first entry a sequence uses that is outside
// [0, num_pages), or a page two sequences share.
void check_block_table(const std::vector<int>& table, const std::vector<int>& seq_lens, int page_size,
                       int max_pages_per_seq, int num_pages);

// The no-split baseline of the README: chapter 10's FA2 forward on the decode shape (one
// block per query head and 128-query tile; causal aligned at the bottom right, which is
// exactly the decode mask). Contiguous cache only, every sequence max_seq_len keys long.
void decode_with_fa2tc(const DecodeShape& s, const bf16* Q, const KvCache& kv, bf16* O, float* LSE,
                       cudaStream_t stream = nullptr);

// Lays a contiguous cache out as pages: page block_table[b][i] of the pool receives keys
// [i * page_size, (i + 1) * page_size) of sequence b, every KV head (keys past the slab's
// capacity: zeros). Entries < 0 are skipped. The pool holds the same K and V as the slabs,
// so decode() on either gives the same bits: the executable checks that at full size.
void copy_to_pages(const DecodeShape& s, const bf16* K, const bf16* V, int capacity, bf16* K_pages, bf16* V_pages,
                   const int* block_table, int page_size, int max_pages_per_seq, cudaStream_t stream = nullptr);

namespace detail {
// The kernels' compile-time swizzled copy addresses, checked on the host against chapter 09's
// tc::swizzle_128b for every lane. Empty when they agree, else the first mismatch.
std::string check_copy_addressing();
}  // namespace detail

}  // namespace fdec
