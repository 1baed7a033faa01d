#include "fp8_emulate.h"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <thread>

#include "fp8_layout.h"
#include "soft_exp2.h"

namespace fa3 {

namespace {

using MatD = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
constexpr double kInf = std::numeric_limits<double>::infinity();

// fn(0) ... fn(n - 1) on up to 16 threads (the fp64 rows of the study dominate its time).
template <class Fn>
void parallel_for(long n, const Fn& fn) {
  const long workers = std::min<long>(n, std::clamp<long>(std::thread::hardware_concurrency(), 1, 16));
  if (workers <= 1) {
    for (long i = 0; i < n; ++i) fn(i);
    return;
  }
  std::vector<std::thread> pool;
  for (long w = 0; w < workers; ++w)
    pool.emplace_back([&, w] {
      for (long i = w; i < n; i += workers) fn(i);
    });
  for (auto& t : pool) t.join();
}

// The 256 e4m3 values, exact in fp64.
const std::vector<double>& e4m3_table() {
  static const std::vector<double> table = [] {
    std::vector<double> t(256);
    for (int b = 0; b < 256; ++b) t[b] = e4m3_value(static_cast<std::uint8_t>(b));
    return t;
  }();
  return table;
}

long kv_head_of(const ladder::AttentionShape& s, long head) { return head / s.H * s.hkv() + head % s.H / s.group(); }

// A copy of X (`rows` rows of d), each row through the Hadamard transform when asked.
std::vector<float> maybe_rotated(const float* X, std::size_t rows, int d, bool hadamard) {
  std::vector<float> out(X, X + rows * d);
  if (hadamard) parallel_for(long(rows), [&](long r) { hadamard_rotate_row(out.data() + r * d, d); });
  return out;
}

// The kernels' scale arithmetic: fp32 division, amax floored at kFp8MinAmax.
struct Scale {
  float scale, descale;
};
Scale scale_of(float amax) {
  const float a = std::max(amax, kFp8MinAmax);
  return {kE4m3Max / a, a / kE4m3Max};
}

// Q8 or K8 and their descales from X [heads, rows, d]: one scale per `per_scale` rows, or one
// for the whole tensor.
void quantize_rows(const std::vector<float>& X, long heads, int rows, int d, int per_scale, bool per_tensor,
                   std::vector<std::uint8_t>& X8, std::vector<float>& descale) {
  const int blocks = (rows + per_scale - 1) / per_scale;
  std::vector<float> amax(heads * blocks, 0.0f);
  parallel_for(heads * blocks, [&](long hb) {
    const long head = hb / blocks, first = hb % blocks * per_scale, last = std::min<long>(rows, first + per_scale);
    float a = 0.0f;
    for (long i = (head * rows + first) * d, end = (head * rows + last) * d; i < end; ++i)
      a = std::max(a, std::fabs(X[i]));
    amax[hb] = a;
  });
  if (per_tensor) std::fill(amax.begin(), amax.end(), *std::max_element(amax.begin(), amax.end()));
  X8.assign(X.size(), 0);
  descale.resize(amax.size());
  parallel_for(heads * blocks, [&](long hb) {
    const Scale sc = scale_of(amax[hb]);
    descale[hb] = sc.descale;
    const long head = hb / blocks, first = hb % blocks * per_scale, last = std::min<long>(rows, first + per_scale);
    for (long i = (head * rows + first) * d, end = (head * rows + last) * d; i < end; ++i)
      X8[i] = e4m3_bits(X[i] * sc.scale);
  });
}

}  // namespace

std::uint8_t e4m3_bits(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, 4);
  const std::uint8_t sign = static_cast<std::uint8_t>((u >> 24) & 0x80u);
  const float a = std::fabs(x);
  if (std::isnan(x)) return 0x7F;         // one canonical NaN, whatever the sign (as cuda_fp8.h)
  if (a >= kE4m3Max) return sign | 0x7E;  // saturate (no infinity in e4m3)
  // std::nearbyint rounds to nearest, ties to even (the default rounding mode).
  if (a < 0x1p-6f)  // subnormal: multiples of 2^-9; k = 8 is the smallest normal, 0x08
    return sign | static_cast<std::uint8_t>(std::nearbyint(a * 512.0f));
  int e;
  std::frexp(a, &e);
  int E = e - 1;                                                   // a in [2^E, 2^(E+1)), E in [-6, 8]
  int k = static_cast<int>(std::nearbyint(std::ldexp(a, 3 - E)));  // 8..16: 1 + 3 mantissa bits
  if (k == 16) k = 8, ++E;
  return sign | static_cast<std::uint8_t>((E + 7) << 3 | (k - 8));  // a < 448 keeps E = 8, k <= 14
}

float e4m3_value(std::uint8_t bits) {
  const int exponent = (bits >> 3) & 0xF, mantissa = bits & 7;
  const float sign = (bits & 0x80) ? -1.0f : 1.0f;
  if (exponent == 0xF && mantissa == 7) return std::numeric_limits<float>::quiet_NaN();
  if (exponent == 0) return sign * std::ldexp(float(mantissa), -9);
  return sign * std::ldexp(float(8 + mantissa), exponent - 10);
}

void hadamard_rotate_row(float* x, int d) {
  if (d != 64 && d != 128 && d != 256) throw std::invalid_argument("hadamard_rotate_row: d must be 64, 128 or 256");
  for (int h = 1; h < d; h *= 2)
    for (int i = 0; i < d; ++i)
      if (!(i & h)) {
        const float a = x[i], b = x[i + h];
        x[i] = a + b;
        x[i + h] = a - b;
      }
  const float norm = hadamard_norm(d);
  for (int i = 0; i < d; ++i) x[i] *= norm;
}

Fp8HostTensors quantize_fp8_host(const ladder::AttentionShape& s, const float* Q, const float* K, const float* V,
                                 const Fp8Options& opt) {
  ladder::validate(s, kFp8QuantD, ladder::KvHeads::Any);
  const bool per_tensor = opt.scaling == Fp8Scaling::PerTensor;
  const int d = s.d, N_kv = s.nkv(), pad = fp8_kv_pad(N_kv);
  Fp8HostTensors t;
  t.s = s;
  quantize_rows(maybe_rotated(Q, s.rows(), d, opt.hadamard), long(s.heads()), s.N, d, kFp8RowsPerQScale, per_tensor,
                t.Q8, t.descale_q);
  quantize_rows(maybe_rotated(K, s.kv_heads() * N_kv, d, opt.hadamard), long(s.kv_heads()), N_kv, d, kFp8KeysPerKScale,
                per_tensor, t.K8, t.descale_k);

  // V: one scale per channel of a KV head, then transposed with the keys permuted.
  const long kv_heads = long(s.kv_heads());
  std::vector<float> amax(kv_heads * d, 0.0f);
  parallel_for(kv_heads, [&](long h) {
    for (long n = 0; n < N_kv; ++n)
      for (int c = 0; c < d; ++c) amax[h * d + c] = std::max(amax[h * d + c], std::fabs(V[(h * N_kv + n) * d + c]));
  });
  if (per_tensor) std::fill(amax.begin(), amax.end(), *std::max_element(amax.begin(), amax.end()));
  t.descale_v.resize(amax.size());
  t.Vt8.assign(fp8_vt_elems(s), 0);  // the padding columns stay 0
  parallel_for(kv_heads, [&](long h) {
    for (int c = 0; c < d; ++c) {
      const Scale sc = scale_of(amax[h * d + c]);
      t.descale_v[h * d + c] = sc.descale;
      std::uint8_t* row = t.Vt8.data() + (h * d + c) * long(pad);
      for (long n = 0; n < N_kv; ++n) row[fp8_vt_column(int(n))] = e4m3_bits(V[(h * N_kv + n) * d + c] * sc.scale);
    }
  });
  return t;
}

Fp8Dequantised dequantize_fp8_host(const Fp8HostTensors& t) {
  const ladder::AttentionShape& s = t.s;
  const int d = s.d, N_kv = s.nkv(), pad = fp8_kv_pad(N_kv);
  const int q_blocks = (s.N + kFp8RowsPerQScale - 1) / kFp8RowsPerQScale;
  const int k_blocks = (N_kv + kFp8KeysPerKScale - 1) / kFp8KeysPerKScale;
  Fp8Dequantised x{std::vector<float>(t.Q8.size()), std::vector<float>(t.K8.size()),
                   std::vector<float>(s.kv_heads() * std::size_t(N_kv) * d)};
  for (std::size_t i = 0; i < x.Q.size(); ++i) {
    const std::size_t row = i / d, head = row / s.N;
    x.Q[i] = e4m3_value(t.Q8[i]) * t.descale_q[head * q_blocks + row % s.N / kFp8RowsPerQScale];
  }
  for (std::size_t i = 0; i < x.K.size(); ++i) {
    const std::size_t row = i / d, head = row / N_kv;
    x.K[i] = e4m3_value(t.K8[i]) * t.descale_k[head * k_blocks + row % N_kv / kFp8KeysPerKScale];
  }
  for (std::size_t h = 0; h < s.kv_heads(); ++h)
    for (int n = 0; n < N_kv; ++n)
      for (int c = 0; c < d; ++c)
        x.V[(h * N_kv + n) * d + c] =
            e4m3_value(t.Vt8[(h * d + c) * std::size_t(pad) + fp8_vt_column(n)]) * t.descale_v[h * d + c];
  return x;
}

std::vector<int> sample_rows(int N, int count) {
  std::vector<int> rows;
  if (count >= N || count < 2) {
    for (int i = 0; i < (count < 2 ? std::min(count, N) : N); ++i) rows.push_back(i);
    return rows;
  }
  for (int k = 0; k < count; ++k) rows.push_back(int(long(k) * (N - 1) / (count - 1)));
  return rows;
}

namespace {

// The work of both row functions: tasks of up to 32 sampled rows of one query head.
constexpr int kRowsPerTask = 32;
struct Task {
  long head;
  std::size_t first, count;  // into `rows`
};
std::vector<Task> tasks_for(const ladder::AttentionShape& s, std::size_t rows) {
  std::vector<Task> tasks;
  for (long head = 0; head < long(s.heads()); ++head)
    for (std::size_t r = 0; r < rows; r += kRowsPerTask)
      tasks.push_back({head, r, std::min<std::size_t>(kRowsPerTask, rows - r)});
  return tasks;
}

// Row i of the output goes to RowsForward slot (head, r); L and O of a row with no key.
void put_row(RowsForward& out, const ladder::AttentionShape& s, std::size_t nrows, long head, std::size_t r,
             const double* o, double l, double m, double log_offset) {
  double* O = out.O.data() + (head * nrows + r) * s.d;
  if (l == 0.0 || m == -kInf) {
    std::fill(O, O + s.d, 0.0);
    out.L[head * nrows + r] = -kInf;
    return;
  }
  for (int c = 0; c < s.d; ++c) O[c] = o[c] / l;
  out.L[head * nrows + r] = m + std::log(l) - log_offset;
}

}  // namespace

RowsForward fp8_forward_model(const Fp8HostTensors& t, const std::vector<int>& rows, const Fp8ModelOptions& opt) {
  const ladder::AttentionShape& s = t.s;
  if (opt.B_c < 1) throw std::invalid_argument("fp8_forward_model: B_c must be >= 1");
  const int d = s.d, N_kv = s.nkv(), pad = fp8_kv_pad(N_kv), T_c = (N_kv + opt.B_c - 1) / opt.B_c;
  const auto& e4m3 = e4m3_table();
  // K_j and V_j of every KV head as fp64 e4m3 values (V back in key order), descales apart.
  std::vector<MatD> K(s.kv_heads()), V(s.kv_heads());
  parallel_for(long(s.kv_heads()), [&](long h) {
    K[h].resize(N_kv, d);
    V[h].resize(N_kv, d);
    for (long n = 0; n < N_kv; ++n)
      for (int c = 0; c < d; ++c) {
        K[h](n, c) = e4m3[t.K8[(h * N_kv + n) * d + c]];
        V[h](n, c) = e4m3[t.Vt8[(h * d + c) * long(pad) + fp8_vt_column(int(n))]];
      }
  });
  const double scale = 1.0 / std::sqrt(double(d)), offset = std::ldexp(1.0, opt.p_offset_log2);
  const int q_blocks = (s.N + kFp8RowsPerQScale - 1) / kFp8RowsPerQScale;
  const int k_blocks = (N_kv + kFp8KeysPerKScale - 1) / kFp8KeysPerKScale;
  RowsForward out{std::vector<double>(s.heads() * rows.size() * d), std::vector<double>(s.heads() * rows.size())};
  const auto tasks = tasks_for(s, rows.size());
  parallel_for(long(tasks.size()), [&](long k) {
    const Task& task = tasks[k];
    const long kv = kv_head_of(s, task.head);
    const int R = int(task.count);
    MatD Q_i(R, d);
    std::vector<double> row_scale(R);
    for (int r = 0; r < R; ++r) {
      const int i = rows[task.first + r];
      for (int c = 0; c < d; ++c) Q_i(r, c) = e4m3[t.Q8[(task.head * s.N + i) * long(d) + c]];
      row_scale[r] = double(t.descale_q[task.head * q_blocks + i / kFp8RowsPerQScale]) * scale;
    }
    MatD O_i = MatD::Zero(R, d);
    std::vector<double> m_i(R, -kInf), l_i(R, 0.0);
    for (int step = 0; step < T_c; ++step) {
      const int j = opt.reverse_tiles ? T_c - 1 - step : step;
      const int first = j * opt.B_c, width = std::min(opt.B_c, N_kv - first);
      // Exact: e4m3 products have 8 significant bits, and d of them sum exactly in fp64.
      MatD S = Q_i * K[kv].middleRows(first, width).transpose();
      MatD P(R, width);
      for (int r = 0; r < R; ++r) {
        const long last = s.causal ? s.last_key(rows[task.first + r]) : N_kv - 1;
        double top = -kInf;
        for (int c = 0; c < width; ++c) {
          const long key = first + c;
          S(r, c) = key > last ? -kInf : S(r, c) * row_scale[r] * t.descale_k[kv * k_blocks + key / kFp8KeysPerKScale];
          top = std::max(top, S(r, c));
        }
        const double m_new = top > m_i[r] + opt.rescale_log2 * std::log(2.0) ? top : m_i[r];
        if (m_new == -kInf) {  // nothing visible yet
          P.row(r).setZero();
          continue;
        }
        const double alpha = std::exp(m_i[r] - m_new);  // 0 on the first visible tile
        l_i[r] *= alpha;
        O_i.row(r) *= alpha;
        m_i[r] = m_new;
        for (int c = 0; c < width; ++c) {
          const double x = S(r, c) - m_new;  // P~ = e^x, as the kernel has it in fp32
          const double p =
              (c / 8 % 8 < opt.poly_eighths ? double(exp2_poly(float(x / std::log(2.0)))) : std::exp(x)) * offset;
          l_i[r] += p;  // l sums P~ before rounding
          P(r, c) = opt.round_p ? e4m3[e4m3_bits(float(p))] : p;
        }
      }
      O_i += P * V[kv].middleRows(first, width);
    }
    for (int r = 0; r < R; ++r) {
      std::vector<double> o(d);
      for (int c = 0; c < d; ++c) o[c] = O_i(r, c) * double(t.descale_v[kv * d + c]);
      put_row(out, s, rows.size(), task.head, task.first + r, o.data(), l_i[r], m_i[r],
              opt.p_offset_log2 * std::log(2.0));
    }
  });
  return out;
}

RowsForward reference_rows(const ladder::AttentionShape& s, const float* Q, const float* K, const float* V,
                           const std::vector<int>& rows) {
  const int d = s.d, N_kv = s.nkv();
  std::vector<MatD> Kd(s.kv_heads()), Vd(s.kv_heads());
  parallel_for(long(s.kv_heads()), [&](long h) {
    using MapF = Eigen::Map<const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>;
    Kd[h] = MapF(K + h * long(N_kv) * d, N_kv, d).cast<double>();
    Vd[h] = MapF(V + h * long(N_kv) * d, N_kv, d).cast<double>();
  });
  const double scale = 1.0 / std::sqrt(double(d));
  RowsForward out{std::vector<double>(s.heads() * rows.size() * d), std::vector<double>(s.heads() * rows.size())};
  const auto tasks = tasks_for(s, rows.size());
  parallel_for(long(tasks.size()), [&](long k) {
    const Task& task = tasks[k];
    const long kv = kv_head_of(s, task.head);
    const int R = int(task.count);
    MatD Q_i(R, d);
    for (int r = 0; r < R; ++r)
      for (int c = 0; c < d; ++c) Q_i(r, c) = Q[(task.head * s.N + rows[task.first + r]) * long(d) + c];
    MatD S = scale * Q_i * Kd[kv].transpose();
    std::vector<double> m(R), l(R);
    for (int r = 0; r < R; ++r) {
      const long last = s.causal ? s.last_key(rows[task.first + r]) : N_kv - 1;
      m[r] = last < 0 ? -kInf : S.row(r).head(last + 1).maxCoeff();
      l[r] = 0.0;
      for (long c = 0; c < N_kv; ++c) {
        // std::exp, not Eigen's vectorised one, which turns exp(-inf) into a denormal.
        S(r, c) = c > last ? 0.0 : std::exp(S(r, c) - m[r]);
        l[r] += S(r, c);
      }
    }
    const MatD O = S * Vd[kv];
    for (int r = 0; r < R; ++r) put_row(out, s, rows.size(), task.head, task.first + r, &O(r, 0), l[r], m[r], 0.0);
  });
  return out;
}

std::vector<float> gather_rows(const ladder::AttentionShape& s, const std::vector<float>& O,
                               const std::vector<int>& rows) {
  std::vector<float> out;
  out.reserve(s.heads() * rows.size() * s.d);
  for (long head = 0; head < long(s.heads()); ++head)
    for (int i : rows) {
      const float* row = O.data() + (head * s.N + i) * long(s.d);
      out.insert(out.end(), row, row + s.d);
    }
  return out;
}

double rel_l2(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) throw std::invalid_argument("rel_l2: sizes differ");
  double num = 0.0, den = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    num += (a[i] - b[i]) * (a[i] - b[i]);
    den += b[i] * b[i];
  }
  return den > 0.0 ? std::sqrt(num / den) : std::sqrt(num);
}

}  // namespace fa3
