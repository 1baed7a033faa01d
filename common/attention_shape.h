// The attention problem every FlashAttention chapter solves:
//   Q, O: [B, H, N, d], K, V: [B, H_kv, N_kv, d], row-major (PyTorch's layout); L: [B, H, N].
//   S = scale * Q K^T with scale = 1/sqrt(d).
//   GQA/MQA: query head h reads KV head h / g, g = H / H_kv (H_kv = H: plain multi-head).
//   causal: query i sees keys j <= i + N_kv - N (aligned at the bottom right, as FA2 does:
//   with N_kv = N that is j <= i). A query that sees no key gets O = 0 and L = -inf.
// The fp32 chapters (05-08) take H_kv = H and N_kv = N only; the bf16 chapters take any.
// Header-only and Eigen-free: kernels (.cu) and host code share it.
#pragma once

#include <cmath>
#include <cstddef>
#include <stdexcept>
#include <string>

namespace ladder {

struct AttentionShape {
  int B = 1, H = 1, N = 1, d = 64;
  bool causal = false;
  int H_kv = 0;  // KV heads; 0 means H
  int N_kv = 0;  // keys per head; 0 means N

  int hkv() const { return H_kv > 0 ? H_kv : H; }
  int nkv() const { return N_kv > 0 ? N_kv : N; }
  // The same problem with every default spelled out (H_kv, N_kv): validate() returns this.
  AttentionShape resolved() const {
    AttentionShape r = *this;
    r.H_kv = hkv();
    r.N_kv = nkv();
    return r;
  }
  // A shape derived from this one (a shard of the sequence, a split of the keys, a tile)
  // names both of its lengths: copying the shape and resetting N alone would keep a
  // spelled-out N_kv of the whole, and the kernels would read keys the buffers do not hold.
  AttentionShape with_lengths(int N_q, int N_keys) const {
    AttentionShape r = resolved();
    r.N = N_q;
    r.N_kv = N_keys;
    return r;
  }
  int group() const { return H / hkv(); }  // query heads per KV head
  bool self_attention() const { return hkv() == H && nkv() == N; }
  // The last key query i may see when causal (may be < 0: then it sees none).
  long last_key(long i) const { return i + nkv() - N; }

  std::size_t heads() const { return std::size_t(B) * H; }
  std::size_t rows() const { return heads() * N; }  // elements of L
  std::size_t elems() const { return rows() * d; }  // elements of Q, O
  std::size_t kv_heads() const { return std::size_t(B) * hkv(); }
  std::size_t kv_elems() const { return kv_heads() * nkv() * d; }  // elements of K, V
  float scale() const { return 1.0f / std::sqrt(float(d)); }
  std::string str() const {
    return "B=" + std::to_string(B) + " H=" + std::to_string(H) + (hkv() != H ? " H_kv=" + std::to_string(hkv()) : "") +
           " N=" + std::to_string(N) + (nkv() != N ? " N_kv=" + std::to_string(nkv()) : "") +
           " d=" + std::to_string(d) + (causal ? " causal" : "");
  }
};

// What a kernel is told of a shape's heads and rows: the first members of a Hopper kernel's
// parameters (chapter 14's backward derives its parameters from it, as FA3's backward parameters
// extend its forward's; chapter 12's forward lists the same six first). Plain ints: device code
// reads them.
struct AttentionParams {
  int H, H_kv, group, N_q, N_kv, offset;  // query heads, KV heads, H / H_kv; offset = N_kv - N_q (the causal diagonal)
};
inline AttentionParams attention_params(const AttentionShape& s) {
  return {s.H, s.hkv(), s.group(), s.N, s.nkv(), s.nkv() - s.N};
}

// A shape with its KV side spelled out (GQA: H_kv < H; cross-attention: N_kv != N).
inline AttentionShape attention_shape(int B, int H, int H_kv, int N, int N_kv, int d, bool causal) {
  AttentionShape s{B, H, N, d, causal};
  s.H_kv = H_kv;
  s.N_kv = N_kv;
  return s;
}

// The benchmark-name keys of an attention shape (CONTRIBUTING: <variant>/<key>=<value>/...):
// "/d=../N=../B=../H=..[/H_kv=..]/causal=..". scripts/results.py and the chapters' table
// scripts parse them.
inline std::string bench_keys(const AttentionShape& s) {
  return "/d=" + std::to_string(s.d) + "/N=" + std::to_string(s.N) + "/B=" + std::to_string(s.B) +
         "/H=" + std::to_string(s.H) + (s.hkv() != s.H ? "/H_kv=" + std::to_string(s.hkv()) : "") +
         "/causal=" + std::to_string(int(s.causal));
}

// Which shapes a chapter's kernels take besides their head dims.
enum class KvHeads {
  SameAsQ,  // H_kv = H and N_kv = N (chapters 05-08)
  Any,      // GQA/MQA and N_kv != N (chapters 10+)
};

// Throws std::invalid_argument with a message a learner can act on. Returns the shape
// resolved (H_kv and N_kv spelled out): the one place where the defaults are applied.
template <std::size_t n>
AttentionShape validate(const AttentionShape& s, const int (&supported_d)[n], KvHeads kv = KvHeads::SameAsQ) {
  if (s.B < 1 || s.H < 1 || s.N < 1 || s.H_kv < 0 || s.N_kv < 0)
    throw std::invalid_argument("attention shape " + s.str() + ": B, H and N must all be >= 1");
  if (kv == KvHeads::SameAsQ && !s.self_attention())
    throw std::invalid_argument("attention shape " + s.str() +
                                ": this chapter's kernels take H_kv = H and N_kv = N only (GQA and "
                                "cross-attention start in chapter 10)");
  if (s.H % s.hkv() != 0)
    throw std::invalid_argument("attention shape " + s.str() + ": H must be a multiple of H_kv (GQA groups)");
  std::string list;
  for (int d : supported_d) {
    if (d == s.d) return s.resolved();
    list += (list.empty() ? "" : ", ") + std::to_string(d);
  }
  throw std::invalid_argument("head dim d=" + std::to_string(s.d) +
                              " is not supported: the kernels are compiled for d in {" + list + "}");
}

}  // namespace ladder
