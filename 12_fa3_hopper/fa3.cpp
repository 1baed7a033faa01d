// The host side of chapter 12: every check before any launch, and the tensor maps (TMA's
// descriptions of Q, K, V in global memory). The kernels are in fa3_forward.cu (sm_90a).
#include <cudaTypedefs.h>  // PFN_cuTensorMapEncodeTiled_v12000

#include <climits>
#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <string>

#include "09_tensor_core_matmul/tc_hopper.h"  // encode_tiled: the driver's tensor-map encoder
#include "cuda_check.h"
#include "device.h"
#include "fa3.h"
#include "fa3_kernel.h"
#include "launch.h"

namespace fa3 {

namespace {

constexpr float kLog2e = 1.4426950408889634f;

// A 3D view (column, row, head) of a row-major [heads][rows][cols] tensor, in boxes of
// box_cols x box_rows x 1 (box_cols * element size = 128 bytes: one swizzle row),
// 128B-swizzled, zeros outside the tensor: rows past the end of a head arrive as 0.
struct MapKey {
  const void* X;
  std::uint64_t cols, rows, heads;
  std::uint32_t box_cols, box_rows;
  bool fp8;
  bool operator==(const MapKey& o) const {
    return X == o.X && cols == o.cols && rows == o.rows && heads == o.heads && box_cols == o.box_cols &&
           box_rows == o.box_rows && fp8 == o.fp8;
  }
};

CUtensorMap make_map(const MapKey& k) {
  CUtensorMap map;
  const std::uint64_t elem = k.fp8 ? 1 : 2;
  const cuuint64_t dims[3] = {k.cols, k.rows, k.heads};
  const cuuint64_t strides[2] = {k.cols * elem, k.cols * k.rows * elem};  // bytes; multiples of 16
  const cuuint32_t box[3] = {k.box_cols, k.box_rows, 1};
  const cuuint32_t element_strides[3] = {1, 1, 1};
  const CUresult r = tcmm::hopper::encode_tiled()(
      &map, k.fp8 ? CU_TENSOR_MAP_DATA_TYPE_UINT8 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 3, const_cast<void*>(k.X), dims,
      strides, box, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
      CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    throw ladder::CudaError("cuTensorMapEncodeTiled failed (error " + std::to_string(int(r)) + ") for a " +
                            std::to_string(k.heads) + " x " + std::to_string(k.rows) + " x " + std::to_string(k.cols) +
                            " tensor");
  return map;
}

// Encoding costs microseconds; the timed loops call with the same tensors again and again.
CUtensorMap tensor_map(const MapKey& k) {
  struct Entry {
    MapKey key;
    CUtensorMap map;
  };
  static std::mutex mutex;
  static Entry cache[16];
  static int used = 0, next = 0;
  std::lock_guard<std::mutex> lock(mutex);
  for (int i = 0; i < used; ++i)
    if (cache[i].key == k) return cache[i].map;
  Entry& e = cache[next];
  next = (next + 1) % 16;
  used = used < 16 ? used + 1 : 16;
  e = {k, make_map(k)};
  return e.map;
}

void check_common(const ladder::AttentionShape& s, bool fp8, Step step, int kv_stages, const std::string& who) {
  ladder::validate(s, kSupportedD, ladder::KvHeads::Any);
  if (kv_stages != 0 && !(kv_stages == 3 && !fp8 && s.d == 128 && step == Step::IntraWg))
    throw std::invalid_argument(who + ": kv_stages=" + std::to_string(kv_stages) +
                                " is not compiled: 0 (the default), or 3 for bf16, d=128, Step::IntraWg");
  if (fp8 && s.d != 128)
    throw std::invalid_argument(who + ": head dim d=" + std::to_string(s.d) +
                                " is not supported: the FP8 kernel is compiled for d in {128}");
  if (std::int64_t(s.N) * s.d > INT_MAX || std::int64_t(s.nkv() + 128) * s.d > INT_MAX)
    throw std::invalid_argument(who + ": N*d and N_kv*d must fit in an int (one head's rows)");
  const int T_r = (s.N + detail::kBr - 1) / detail::kBr;
  ladder::check_grid(who, static_cast<unsigned long long>(T_r), s.heads());
  if (const std::string why = unavailable_reason(); !why.empty()) throw std::invalid_argument(who + ": " + why);
  const detail::Footprint f = detail::footprint(s.d, fp8, step, kv_stages);
  if (ladder::device().smem_per_block_optin < f.smem_bytes)
    throw std::invalid_argument(who + " needs " + std::to_string(f.smem_bytes) + " bytes of shared memory per block; " +
                                ladder::device().name + " allows " +
                                std::to_string(ladder::device().smem_per_block_optin));
}

detail::Params params(const ladder::AttentionShape& s, bf16* O, float* L) {
  detail::Params p{};
  p.H = s.H, p.H_kv = s.hkv(), p.group = s.group(), p.N_q = s.N, p.N_kv = s.nkv(), p.offset = s.nkv() - s.N;
  p.T_r = (s.N + detail::kBr - 1) / detail::kBr;
  p.causal = s.causal;
  p.scale_log2e = s.scale() * kLog2e;
  p.O = O, p.L = L;
  return p;
}

}  // namespace

const char* name(Step s) {
  switch (s) {
    case Step::Tma: return "tma";
    case Step::WarpSpec: return "warpspec";
    case Step::PingPong: return "pingpong";
    case Step::IntraWg: return "intrawg";
    case Step::Persistent: return "persistent";
  }
  return "?";
}

std::string unavailable_reason() {
  const ladder::DeviceInfo& d = ladder::device();
  if (!d.available) return "no CUDA device (" + d.reason + ")";
  if (d.cc_major != 9 || d.cc_minor != 0)
    return "the FA3 kernels need an sm_90a GPU (compute capability 9.0: H100, H200: wgmma, setmaxnreg); device 0 is "
           "sm_" +
           std::to_string(d.cc_major * 10 + d.cc_minor) + " (" + d.name + ")";
  if (!detail::compiled_for_sm90a()) return "the FA3 kernels need sm_90a code, and this build has none";
  return "";
}

void forward(const ladder::AttentionShape& s, const bf16* Q, const bf16* K, const bf16* V, bf16* O, float* L,
             cudaStream_t stream) {
  forward(s, Q, K, V, O, L, ForwardOptions{}, stream);
}

void forward(const ladder::AttentionShape& s, const bf16* Q, const bf16* K, const bf16* V, bf16* O, float* L,
             const ForwardOptions& opt, cudaStream_t stream) {
  const std::string who = "fa3::forward";
  // TMA reads from 16-byte aligned addresses; O is written 16 bytes at a time.
  ladder::check_pointers(who, {{"Q", Q}, {"K", K}, {"V", V}, {"O", O}}, 16);
  ladder::check_pointers(who, {{"L", L}}, alignof(float));
  check_common(s, false, opt.step, opt.kv_stages, who);
  const std::uint64_t d = s.d;
  detail::Maps m;
  m.Q = tensor_map({Q, d, std::uint64_t(s.N), s.heads(), 64, detail::kBr, false});
  m.K = tensor_map({K, d, std::uint64_t(s.nkv()), s.kv_heads(), 64, detail::kBc, false});
  m.V = tensor_map({V, d, std::uint64_t(s.nkv()), s.kv_heads(), 64, detail::kBc, false});
  detail::launch(s.d, false, opt.step, opt.kv_stages, m, params(s, O, L), static_cast<int>(s.heads()), stream);
}

void forward_fp8(const ladder::AttentionShape& s, const Fp8Inputs& in, bf16* O, float* L, cudaStream_t stream) {
  const std::string who = "fa3::forward_fp8";
  ladder::check_pointers(who, {{"Q8", in.Q8}, {"K8", in.K8}, {"Vt8", in.Vt8}, {"O", O}}, 16);
  ladder::check_pointers(
      who, {{"L", L}, {"descale_q", in.descale_q}, {"descale_k", in.descale_k}, {"descale_v", in.descale_v}},
      alignof(float));
  check_common(s, true, kBestStep, 0, who);
  const std::uint64_t d = s.d, pad = fp8_kv_pad(s.nkv());
  detail::Maps m;
  m.Q = tensor_map({in.Q8, d, std::uint64_t(s.N), s.heads(), 128, detail::kBr, true});
  m.K = tensor_map({in.K8, d, std::uint64_t(s.nkv()), s.kv_heads(), 128, detail::kBc, true});
  m.V = tensor_map({in.Vt8, pad, d, s.kv_heads(), 128, static_cast<std::uint32_t>(d), true});
  detail::Params p = params(s, O, L);
  p.descale_q = in.descale_q, p.descale_k = in.descale_k, p.descale_v = in.descale_v;
  p.q_scale_blocks = (s.N + kFp8RowsPerQScale - 1) / kFp8RowsPerQScale;
  p.k_scale_blocks = (s.nkv() + kFp8KeysPerKScale - 1) / kFp8KeysPerKScale;
  detail::launch(s.d, true, kBestStep, 0, m, p, static_cast<int>(s.heads()), stream);
}

}  // namespace fa3
