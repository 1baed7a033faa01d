// fa2_minimal.cu: chapter 10's FlashAttention-2 forward on tensor cores, the essentials in one file.
//   nvcc -O2 -std=c++17 -arch=sm_80 -o fa2_minimal 10_fa2_tensor_cores/fa2_minimal.cu && ./fa2_minimal
// (any -arch of sm_80 or later). bf16 Q, K, V, O [B*H, N, 64], fp32 accumulation. One block per 64 query
// rows of one head, one warp per 16 rows (split-Q); per key tile of 64:
//   S = Q_i K_j^T         mma.sync.m16n8k16, S left in the warp's C fragments
//   m, alpha, P~, l       the online softmax in log2 units; a row lives in the 4 lanes of a quad: 2 shuffles
//   O *= alpha; O += P~ V the C fragments of two n8 tiles of P~ ARE the A fragment of one k16 tile:
//                         P~ reaches the next mma by a rounding to bf16 in its own registers
// Left out (the chapter's fa2_tc_forward.cu has them, for speed): ldmatrix, cp.async double buffering,
// the swizzle, 32 rows a warp, the unmasked fast path, GQA, L. main() checks O against a CPU reference on
// the same bf16 inputs, dense and causal; without a GPU of sm_80 or later it prints a skip line, exit 0.
#include <cuda_bf16.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#define CHECK(call)                                                                        \
  do {                                                                                     \
    const cudaError_t e = (call);                                                          \
    if (e != cudaSuccess) return std::printf("%s: %s\n", #call, cudaGetErrorString(e)), 1; \
  } while (0)

constexpr int D = 64, BR = 64, BC = 64, LD = D + 8;  // LD: a padded row of bf16 (conflict-free 4-byte loads)
using bf16 = __nv_bfloat16;

__device__ uint32_t ld32(const bf16* p) { return *reinterpret_cast<const uint32_t*>(p); }  // two bf16
__device__ uint32_t pack(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&v);
}
// c += A B. Lane 4g + t holds a = A[g][2t,+1], A[g+8][2t,+1], A[g][2t+8,+1], A[g+8][2t+8,+1];
// b = B[2t,+1][g], B[2t+8,+1][g]; c = C[g][2t,+1], C[g+8][2t,+1] (PTX ISA, mma.m16n8k16 fragments).
__device__ void mma(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__global__ void __launch_bounds__(128)
    fa2_forward(const bf16* Q, const bf16* K, const bf16* V, bf16* O, int N, bool causal, float scale_log2e) {
  __shared__ __align__(16) bf16 Qs[BR][LD], Ks[BC][LD], Vt[D][LD];  // Vt: V_j transposed, [d][key]
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int i0 = blockIdx.x * BR, r0 = 16 * warp;  // the block's first query; the warp's first row in the tile
  const size_t head = size_t(blockIdx.y) * N * D;
  Q += head, K += head, V += head, O += head;
  for (int e = threadIdx.x; e < BR * D; e += blockDim.x)
    Qs[e / D][e % D] = i0 + e / D < N ? Q[size_t(i0) * D + e] : __float2bfloat16(0.0f);
  __syncthreads();
  uint32_t q[D / 16][4];  // the warp's 16 rows of Q_i as A fragments, one per 16 columns of d
  for (int kk = 0; kk < D / 16; ++kk)
    for (int i = 0; i < 4; ++i) q[kk][i] = ld32(&Qs[r0 + g + 8 * (i % 2)][16 * kk + 8 * (i / 2) + 2 * t]);

  float o[D / 8][4] = {}, m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};  // rows g, g + 8; l: this lane's share
  const int kv_end = causal ? min(N, i0 + BR) : N;
  for (int j0 = 0; j0 < kv_end; j0 += BC) {
    __syncthreads();  // every warp is done with the previous K_j, V_j
    for (int e = threadIdx.x; e < BC * D; e += blockDim.x) {
      const int c = e / D, k = e % D;
      const bool ok = j0 + c < N;
      Ks[c][k] = ok ? K[size_t(j0) * D + e] : __float2bfloat16(0.0f);
      Vt[k][c] = ok ? V[size_t(j0) * D + e] : __float2bfloat16(0.0f);
    }
    __syncthreads();
    float s[BC / 8][4] = {};  // n8 tile n holds keys 8n..8n+7: s[n][2h + e] = S[g + 8h][8n + 2t + e]
    for (int n = 0; n < BC / 8; ++n)
      for (int kk = 0; kk < D / 16; ++kk)
        mma(s[n], q[kk], ld32(&Ks[8 * n + g][16 * kk + 2 * t]), ld32(&Ks[8 * n + g][16 * kk + 8 + 2 * t]));
    for (int h = 0; h < 2; ++h) {  // the online softmax of row g + 8h (m in log2 units)
      const int row = i0 + r0 + g + 8 * h;
      float mx = -INFINITY;
      for (int n = 0; n < BC / 8; ++n)
        for (int e = 0; e < 2; ++e) {
          const int col = j0 + 8 * n + 2 * t + e;
          if (col >= N || (causal && col > row)) s[n][2 * h + e] = -INFINITY;
          mx = fmaxf(mx, s[n][2 * h + e]);
        }
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffff, mx, 1));  // lanes 4g .. 4g + 3 hold the row
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffff, mx, 2));
      const float m_new = fmaxf(m[h], mx * scale_log2e), alpha = exp2f(m[h] - m_new);  // every row sees key 0 first
      float sum = 0.0f;
      for (int n = 0; n < BC / 8; ++n)
        for (int e = 0; e < 2; ++e) sum += s[n][2 * h + e] = exp2f(s[n][2 * h + e] * scale_log2e - m_new);
      l[h] = alpha * l[h] + sum, m[h] = m_new;
      for (int n = 0; n < D / 8; ++n) o[n][2 * h] *= alpha, o[n][2 * h + 1] *= alpha;
    }
    for (int kk = 0; kk < BC / 16; ++kk) {  // O += P~ V_j: n8 tiles 2kk, 2kk + 1 of P~ are the A fragment of slice kk
      const float(&lo)[4] = s[2 * kk];
      const float(&hi)[4] = s[2 * kk + 1];
      const uint32_t a[4] = {pack(lo[0], lo[1]), pack(lo[2], lo[3]), pack(hi[0], hi[1]), pack(hi[2], hi[3])};
      for (int n = 0; n < D / 8; ++n)
        mma(o[n], a, ld32(&Vt[8 * n + g][16 * kk + 2 * t]), ld32(&Vt[8 * n + g][16 * kk + 8 + 2 * t]));
    }
  }
  for (int h = 0; h < 2; ++h) {  // O_i / l_i, once; the quad's four shares of l added first
    float sum = l[h];
    sum += __shfl_xor_sync(0xffffffff, sum, 1);
    sum += __shfl_xor_sync(0xffffffff, sum, 2);
    const int row = i0 + r0 + g + 8 * h;
    if (row < N)
      for (int n = 0; n < D / 8; ++n)
        *reinterpret_cast<uint32_t*>(&O[size_t(row) * D + 8 * n + 2 * t]) =
            pack(o[n][2 * h] / sum, o[n][2 * h + 1] / sum);
  }
}

int main() {
  int count = 0;
  cudaDeviceProp prop{};
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0)
    return std::printf("GPU test skipped: no CUDA device\n"), 0;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  if (prop.major < 8)
    return std::printf("GPU test skipped: no CUDA device of sm_80 or later (%s is sm_%d%d)\n", prop.name, prop.major,
                       prop.minor),
           0;
  const int BH = 3, N = 200;  // N a multiple of no tile
  const size_t n = size_t(BH) * N * D;
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<bf16> h_in[3];
  std::vector<float> x[3];  // the bf16 values as floats: the reference sees exactly what the GPU sees
  for (int i = 0; i < 3; ++i)
    for (size_t e = 0; e < n; ++e) h_in[i].push_back(__float2bfloat16(uniform(rng))), x[i].push_back(float(h_in[i][e]));
  bf16 *dQ, *dK, *dV, *dO;
  for (bf16** p : {&dQ, &dK, &dV, &dO}) CHECK(cudaMalloc(p, n * sizeof(bf16)));
  CHECK(cudaMemcpy(dQ, h_in[0].data(), n * sizeof(bf16), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dK, h_in[1].data(), n * sizeof(bf16), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dV, h_in[2].data(), n * sizeof(bf16), cudaMemcpyHostToDevice));
  bool ok = true;
  for (bool causal : {false, true}) {
    CHECK(cudaMemset(dO, 0xff, n * sizeof(bf16)));  // NaN: a row the kernel skips cannot pass
    fa2_forward<<<dim3((N + BR - 1) / BR, BH), 128>>>(dQ, dK, dV, dO, N, causal, 1.4426950f / std::sqrt(float(D)));
    CHECK(cudaGetLastError());
    std::vector<bf16> out(n);
    CHECK(cudaMemcpy(out.data(), dO, n * sizeof(bf16), cudaMemcpyDeviceToHost));
    double err = 0, ref2 = 0;  // O = softmax(Q K^T / sqrt(d)) V in fp64, row by row
    for (int b = 0; b < BH; ++b)
      for (int i = 0; i < N; ++i) {
        const float* q = &x[0][(size_t(b) * N + i) * D];
        std::vector<double> p(N, 0.0), ref(D, 0.0);
        double mx = -INFINITY, sum = 0;
        for (int j = 0; j <= (causal ? i : N - 1); ++j) {
          for (int k = 0; k < D; ++k) p[j] += double(q[k]) * x[1][(size_t(b) * N + j) * D + k] / std::sqrt(double(D));
          mx = std::fmax(mx, p[j]);
        }
        for (int j = 0; j <= (causal ? i : N - 1); ++j) sum += p[j] = std::exp(p[j] - mx);
        for (int j = 0; j <= (causal ? i : N - 1); ++j)
          for (int k = 0; k < D; ++k) ref[k] += p[j] / sum * x[2][(size_t(b) * N + j) * D + k];
        for (int k = 0; k < D; ++k) {
          const double got = float(out[(size_t(b) * N + i) * D + k]);
          err += std::isfinite(got) ? (got - ref[k]) * (got - ref[k]) : INFINITY;
          ref2 += ref[k] * ref[k];
        }
      }
    // The chapter's bound, kBf16Attention: P~ and O are rounded to bf16 (2^-8/sqrt(3) each), x2 margin.
    const double rel = std::sqrt(err / ref2);
    ok &= rel <= 5e-3;
    std::printf("fa2_minimal B*H=%d N=%d d=%d %s: O rel l2 error %.2e (bound 5e-3): %s\n", BH, N, D,
                causal ? "causal" : "dense", rel, rel <= 5e-3 ? "ok" : "FAIL");
  }
  for (bf16* p : {dQ, dK, dV, dO}) CHECK(cudaFree(p));
  return ok ? 0 : 1;
}
