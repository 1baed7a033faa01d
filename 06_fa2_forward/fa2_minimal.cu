// fa2_minimal.cu: chapter 06's FlashAttention-2 forward (Algorithm 1 of Dao, 2023), the whole algorithm
// in one file, fp32 on CUDA cores.
//   nvcc -O2 -std=c++17 -arch=sm_75 -o fa2_minimal 06_fa2_forward/fa2_minimal.cu && ./fa2_minimal
// (-arch=sm_75 runs on a T4 and, through the PTX it carries, on every later GPU.) Q, K, V, O [B*H, N, 64].
// One thread block per query tile Q_i and head (the grid runs the outer loop), walking the key tiles
// K_j, V_j (inner loop); one thread per query row, so a row's softmax needs no talk between threads.
// O_i, l_i, m_i stay in the thread's registers, O_i unnormalised: rescaled by alpha each step, divided by
// l_i once at the end. Left out (the chapter's fa_forward.cu has them, for speed): register micro-tiles,
// 4 lanes per row, tiles per d, d other than 64. main() checks O and L = m + log(l) against a CPU
// reference in fp64, dense and causal; without a GPU it prints a skip line and exits 0.
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#define CHECK(call)                                                                        \
  do {                                                                                     \
    const cudaError_t e = (call);                                                          \
    if (e != cudaSuccess) return std::printf("%s: %s\n", #call, cudaGetErrorString(e)), 1; \
  } while (0)

// B_r > B_c: each key tile is reused by more rows, and causal diagonal tiles get rows that see no key.
constexpr int D = 64, B_r = 64, B_c = 32;

__global__ void __launch_bounds__(B_r)
    fa2_forward(const float* Q, const float* K, const float* V, float* O, float* L, int N, bool causal, float scale) {
  __shared__ float K_j[B_c][D], V_j[B_c][D];  // read by every thread at the same address: a broadcast
  __shared__ float S[B_r][B_c + 1];           // row r: thread r's S_ij, then P~_ij (+1: no bank conflicts)
  const int r = threadIdx.x, i0 = blockIdx.x * B_r, row = i0 + r;  // row >= N: a padding row, stores nothing
  const size_t head = blockIdx.y;
  Q += head * N * D, K += head * N * D, V += head * N * D, O += head * N * D, L += head * N;

  // Lines 4-5: Q_i's row, read once (scaled: one multiply per element, not per score), and O_i, l_i, m_i
  // on chip. Every index into q and O_i is a compile-time constant (loops over k unrolled): registers.
  float q[D], O_i[D], m_i = -INFINITY, l_i = 0.0f;
#pragma unroll
  for (int k = 0; k < D; ++k) q[k] = row < N ? Q[size_t(row) * D + k] * scale : 0.0f, O_i[k] = 0.0f;

  // Causal: key tiles that start after Q_i's last query are skipped. Every row sees key 0 in the first
  // tile, so m_i is finite from then on and a row with no key in a later tile gets alpha = 1, P~ = 0.
  const int T_c = ((causal ? min(N, i0 + B_r) : N) + B_c - 1) / B_c;
  for (int j = 0; j < T_c; ++j) {  // inner loop: K_j, V_j streamed (line 7)
    const int j0 = j * B_c;
    __syncthreads();  // every thread is done with the previous K_j, V_j
    for (int e = r; e < B_c * D; e += B_r) {
      const bool ok = j0 + e / D < N;  // the tail of the last tile: zeros, masked below
      K_j[e / D][e % D] = ok ? K[size_t(j0) * D + e] : 0.0f;
      V_j[e / D][e % D] = ok ? V[size_t(j0) * D + e] : 0.0f;
    }
    __syncthreads();

    // Line 8: S_ij = Q_i K_j^T / sqrt(d), -inf past N and, causal, after the query.
    float* s = S[r];
    float m_new = m_i;
    for (int c = 0; c < B_c; ++c) {
      float x = 0.0f;
#pragma unroll
      for (int k = 0; k < D; ++k) x = fmaf(q[k], K_j[c][k], x);
      s[c] = j0 + c < N && (!causal || j0 + c <= row) ? x : -INFINITY;
      m_new = fmaxf(m_new, s[c]);
    }
    // Line 9: P~_ij against the new max directly (FA1's second factor beta is 1), one rescale alpha
    // of the old l_i; alpha = 0 on the first step (m_i = -inf).
    const float alpha = expf(m_i - m_new);
    float rowsum = 0.0f;
    for (int c = 0; c < B_c; ++c) rowsum += s[c] = expf(s[c] - m_new);
    l_i = alpha * l_i + rowsum, m_i = m_new;
    // Line 10: O_i = diag(alpha) O_i + P~_ij V_j: no division and no trip to HBM, unlike FA1.
#pragma unroll
    for (int k = 0; k < D; ++k) {
      float pv = 0.0f;  // this tile's sum first, then one rescale of the running O_i
      for (int c = 0; c < B_c; ++c) pv = fmaf(s[c], V_j[c][k], pv);
      O_i[k] = alpha * O_i[k] + pv;
    }
  }
  // Lines 12-15, once: O_i = diag(l_i)^-1 O_i, and L_i = m_i + log(l_i) (what the backward pass needs).
  if (row >= N) return;
  const float inv_l = 1.0f / l_i;  // the one division
#pragma unroll
  for (int k = 0; k < D; ++k) O[size_t(row) * D + k] = O_i[k] * inv_l;
  L[row] = m_i + logf(l_i);
}

int main() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0)
    return std::printf("GPU test skipped: no CUDA device\n"), 0;
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  bool ok = true;
  for (int N : {1, 64, 200})  // 200: a multiple of no tile
    for (bool causal : {false, true}) {
      const int BH = 3;
      const size_t n = size_t(BH) * N * D;
      std::vector<float> x[3], O(n), Lg(size_t(BH) * N);  // x: Q, K, V
      for (auto& v : x)
        for (size_t e = 0; e < n; ++e) v.push_back(uniform(rng));
      float *dQ, *dK, *dV, *dO, *dL;
      for (float** p : {&dQ, &dK, &dV, &dO}) CHECK(cudaMalloc(p, n * sizeof(float)));
      CHECK(cudaMalloc(&dL, Lg.size() * sizeof(float)));
      CHECK(cudaMemcpy(dQ, x[0].data(), n * sizeof(float), cudaMemcpyHostToDevice));
      CHECK(cudaMemcpy(dK, x[1].data(), n * sizeof(float), cudaMemcpyHostToDevice));
      CHECK(cudaMemcpy(dV, x[2].data(), n * sizeof(float), cudaMemcpyHostToDevice));
      CHECK(cudaMemset(dO, 0xff, n * sizeof(float)));  // NaN: a row the kernel skips cannot pass
      CHECK(cudaMemset(dL, 0xff, Lg.size() * sizeof(float)));
      fa2_forward<<<dim3((N + B_r - 1) / B_r, BH), B_r>>>(dQ, dK, dV, dO, dL, N, causal, 1.0f / std::sqrt(float(D)));
      CHECK(cudaGetLastError());
      CHECK(cudaDeviceSynchronize());
      CHECK(cudaMemcpy(O.data(), dO, n * sizeof(float), cudaMemcpyDeviceToHost));
      CHECK(cudaMemcpy(Lg.data(), dL, Lg.size() * sizeof(float), cudaMemcpyDeviceToHost));
      for (float* p : {dQ, dK, dV, dO, dL}) CHECK(cudaFree(p));

      double err = 0, ref2 = 0, errL = 0, refL2 = 0;  // O = softmax(Q K^T / sqrt(d)) V in fp64, row by row
      for (int b = 0; b < BH; ++b)
        for (int i = 0; i < N; ++i) {
          const size_t row = size_t(b) * N + i;
          const int last = causal ? i : N - 1;
          std::vector<double> p(N, 0.0), ref(D, 0.0);
          double mx = -INFINITY, sum = 0;
          for (int j = 0; j <= last; ++j) {
            for (int k = 0; k < D; ++k) p[j] += double(x[0][row * D + k]) * x[1][(row - i + j) * D + k];
            mx = std::fmax(mx, p[j] /= std::sqrt(double(D)));
          }
          for (int j = 0; j <= last; ++j) sum += p[j] = std::exp(p[j] - mx);
          for (int j = 0; j <= last; ++j)
            for (int k = 0; k < D; ++k) ref[k] += p[j] / sum * x[2][(row - i + j) * D + k];
          for (int k = 0; k < D; ++k)
            err += (O[row * D + k] - ref[k]) * (O[row * D + k] - ref[k]), ref2 += ref[k] * ref[k];
          const double L = mx + std::log(sum);  // the log-sum-exp
          errL += (Lg[row] - L) * (Lg[row] - L), refL2 += L * L;
        }
      // kFp32 of common/compare.h: fp32 sums carry ~sqrt(n) 2^-24; an indexing or masking bug gives O(1).
      const double rel = std::sqrt(err / ref2), relL = std::sqrt(errL / refL2);
      const bool pass = rel <= 1e-5 && relL <= 1e-5;  // false for NaN too
      ok &= pass;
      std::printf("fa2_minimal B*H=%d N=%d d=%d %s: rel l2 error O %.2e, L %.2e (bound 1e-5): %s\n", BH, N, D,
                  causal ? "causal" : "dense", rel, relL, pass ? "PASS" : "FAIL");
    }
  return ok ? 0 : 1;
}
