// cuDNN's SDPA forward and backward as two frontend graphs, built as the frontend's own
// samples build them (samples/cpp/sdpa/fp16_fwd.cpp, fp16_bwd.cpp), once per shape and pass.
// Without LADDER_HAVE_CUDNN (cmake/Cudnn.cmake found no cuDNN 9 or no frontend headers) only
// the interface is here, and it says why.
#include "cudnn_attention.h"

#include <cstdio>
#include <stdexcept>

#ifdef LADDER_HAVE_CUDNN
#include <cudnn_frontend.h>

#include <cstdint>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "cuda_check.h"
#include "device.h"
#include "device_buffer.h"
#include "launch.h"
#endif

namespace ladder {

#ifdef LADDER_HAVE_CUDNN

namespace fe = cudnn_frontend;

namespace {

// How execute() is told which pointer is which tensor.
enum Uid : std::int64_t {
  kQ = 1,
  kK,
  kV,
  kO,
  kL,
  kdO,
  kdQ,
  kdK,
  kdV,
  kDescaleQ,
  kDescaleK,
  kDescaleV,
  kDescaleS,
  kScaleS,
  kScaleO,
  kAmaxS,
  kAmaxO  // FP8's scalars
};

using Tensor = std::shared_ptr<fe::graph::Tensor_attributes>;

// Every tensor here is row-major [b, h, n, d] (L: [b, h, n, 1]).
fe::graph::Tensor_attributes& describe(fe::graph::Tensor_attributes& t, const char* name, Uid uid, std::int64_t b,
                                       std::int64_t h, std::int64_t n, std::int64_t d) {
  return t.set_name(name).set_uid(uid).set_dim({b, h, n, d}).set_stride({h * n * d, n * d, d, 1});
}
Tensor input(fe::graph::Graph& g, const char* name, Uid uid, std::int64_t b, std::int64_t h, std::int64_t n,
             std::int64_t d) {
  fe::graph::Tensor_attributes t;
  describe(t, name, uid, b, h, n, d);
  if (uid == kL) t.set_data_type(fe::DataType_t::FLOAT);
  return g.tensor(t);
}
void output(const Tensor& t, const char* name, Uid uid, std::int64_t b, std::int64_t h, std::int64_t n,
            std::int64_t d) {
  describe(*t, name, uid, b, h, n, d).set_output(true);
  if (uid == kL) t->set_data_type(fe::DataType_t::FLOAT);
}

// Both passes mask alike: no key right of the diagonal through the bottom-right corner. With
// N = N_kv that is also the diagonal through the top-left corner, which cuDNN supports on
// more versions (before 9.6, bottom-right needs N and N_kv multiples of 64).
template <class Options>
void mask(Options& opt, const AttentionShape& s) {
  if (!s.causal) return;
  opt.set_diagonal_alignment(s.N == s.nkv() ? fe::DiagonalAlignment_t::TOP_LEFT : fe::DiagonalAlignment_t::BOTTOM_RIGHT)
      .set_diagonal_band_right_bound(0);
}

// FP8's per-tensor scales and amaxes: fp32 scalars on the device.
Tensor scalar(fe::graph::Graph& g, const char* name, Uid uid) {
  return g.tensor(fe::graph::Tensor_attributes()
                      .set_name(name)
                      .set_uid(uid)
                      .set_dim({1, 1, 1, 1})
                      .set_stride({1, 1, 1, 1})
                      .set_data_type(fe::DataType_t::FLOAT));
}

std::shared_ptr<fe::graph::Graph> make_graph(const AttentionShape& s, CudnnAttention::Pass pass) {
  auto g = std::make_shared<fe::graph::Graph>();
  // bf16 (or e4m3) in and out; scores, softmax and accumulators in fp32, as in the chapters' kernels.
  g->set_io_data_type(pass == CudnnAttention::Pass::ForwardFp8 ? fe::DataType_t::FP8_E4M3 : fe::DataType_t::BFLOAT16)
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  const std::int64_t B = s.B, H = s.H, H_kv = s.hkv(), N = s.N, N_kv = s.nkv(), d = s.d;
  const Tensor Q = input(*g, "Q", kQ, B, H, N, d), K = input(*g, "K", kK, B, H_kv, N_kv, d),
               V = input(*g, "V", kV, B, H_kv, N_kv, d);
  if (pass == CudnnAttention::Pass::ForwardFp8) {
    auto opt =
        fe::graph::SDPA_fp8_attributes().set_name("forward_fp8").set_generate_stats(true).set_attn_scale(s.scale());
    mask(opt, s);
    const auto [O, L, amax_s, amax_o] =
        g->sdpa_fp8(Q, K, V, scalar(*g, "descale_q", kDescaleQ), scalar(*g, "descale_k", kDescaleK),
                    scalar(*g, "descale_v", kDescaleV), scalar(*g, "descale_s", kDescaleS),
                    scalar(*g, "scale_s", kScaleS), scalar(*g, "scale_o", kScaleO), opt);
    output(O, "O", kO, B, H, N, d);
    output(L, "L", kL, B, H, N, 1);
    for (const auto& [t, name, uid] : {std::tuple{amax_s, "amax_s", kAmaxS}, std::tuple{amax_o, "amax_o", kAmaxO}})
      t->set_name(name)
          .set_uid(uid)
          .set_output(true)
          .set_dim({1, 1, 1, 1})
          .set_stride({1, 1, 1, 1})
          .set_data_type(fe::DataType_t::FLOAT);
  } else if (pass == CudnnAttention::Pass::Forward) {
    auto opt = fe::graph::SDPA_attributes().set_name("forward").set_generate_stats(true).set_attn_scale(s.scale());
    mask(opt, s);
    const auto [O, L] = g->sdpa(Q, K, V, opt);
    output(O, "O", kO, B, H, N, d);
    output(L, "L", kL, B, H, N, 1);
  } else {
    const Tensor O = input(*g, "O", kO, B, H, N, d), dO = input(*g, "dO", kdO, B, H, N, d),
                 L = input(*g, "L", kL, B, H, N, 1);
    auto opt = fe::graph::SDPA_backward_attributes().set_name("backward").set_attn_scale(s.scale());
    mask(opt, s);
    const auto [dQ, dK, dV] = g->sdpa_backward(Q, K, V, O, dO, L, opt);
    output(dQ, "dQ", kdQ, B, H, N, d);
    output(dK, "dK", kdK, B, H_kv, N_kv, d);
    output(dV, "dV", kdV, B, H_kv, N_kv, d);
  }
  return g;
}

std::string version_string(std::size_t v) {  // 91900 -> 9.19.0; cuDNN 8 counted 8907 -> 8.9.7
  const std::size_t major = v >= 90000 ? v / 10000 : v / 1000, minor = v >= 90000 ? v / 100 % 100 : v / 100 % 10;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(v % 100);
}

// One handle for the process (on device 0, the ladder's), never destroyed: at exit the
// CUDA context may already be gone, and destroying a handle then can crash.
cudnnHandle_t handle() {
  static const cudnnHandle_t h = [] {
    cudnnHandle_t created = nullptr;
    if (const cudnnStatus_t st = cudnnCreate(&created); st != CUDNN_STATUS_SUCCESS)
      throw std::runtime_error(std::string("cudnnCreate failed: ") + cudnnGetErrorString(st));
    return created;
  }();
  return h;
}

const char* name(CudnnAttention::Pass pass) {
  switch (pass) {
    case CudnnAttention::Pass::Forward: return "forward";
    case CudnnAttention::Pass::Backward: return "backward";
    case CudnnAttention::Pass::ForwardFp8: return "FP8 forward";
  }
  return "?";
}

}  // namespace

struct CudnnAttention::Plans {
  std::shared_ptr<fe::graph::Graph> graph[3];  // by Pass; null until built, or when unsupported
  std::string why[3];                          // the reason a pass is unsupported
  bool tried[3] = {false, false, false};
  DeviceBuffer<unsigned char> workspace;  // the largest of the passes' needs
  // FP8: descale_s, scale_s, scale_o in, amax_s, amax_o out (uploaded when the FP8 plan is built).
  DeviceBuffer<float> fp8_scalars;
};

std::string CudnnAttention::unavailable_reason() {
  if (!device().available) return "no CUDA device (" + device().reason + ")";
  if (cudnnGetVersion() < 90000)
    return "cuDNN " + version_string(cudnnGetVersion()) + " was loaded; the anchor needs cuDNN 9 or newer";
  try {
    handle();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

std::string CudnnAttention::version() {
  return "cuDNN " + version_string(cudnnGetVersion()) + ", frontend " + std::to_string(CUDNN_FRONTEND_MAJOR_VERSION) +
         "." + std::to_string(CUDNN_FRONTEND_MINOR_VERSION) + "." + std::to_string(CUDNN_FRONTEND_PATCH_VERSION);
}

CudnnAttention::CudnnAttention(const AttentionShape& s)
    : s_(validate(s, kSupportedD, KvHeads::Any)), plans_(std::make_unique<Plans>()) {}

CudnnAttention::~CudnnAttention() = default;

std::string CudnnAttention::unsupported_reason(Pass pass) {
  if (const std::string why = unavailable_reason(); !why.empty()) return why;
  const int i = static_cast<int>(pass);
  if (!plans_->tried[i]) {
    plans_->tried[i] = true;
    const std::shared_ptr<fe::graph::Graph> g = make_graph(s_, pass);
    // validate, build the operation graph, ask the heuristics (mode A), keep the plans that
    // pass check_support, build them: the samples' sequence in one call.
    fe::error_t built = g->build(handle(), {fe::HeurMode_t::A});
    if (built.is_bad()) {
      plans_->why[i] = std::string("cuDNN has no ") + name(pass) + " for " + s_.str() + ": " + built.get_message();
    } else {
      std::int64_t bytes = 0;
      if (fe::error_t st = g->get_workspace_size(bytes); st.is_bad())
        throw std::runtime_error(std::string("cuDNN attention ") + name(pass) + ": " + st.get_message());
      if (std::size_t(bytes) > plans_->workspace.size())
        plans_->workspace = DeviceBuffer<unsigned char>(static_cast<std::size_t>(bytes));
      plans_->graph[i] = g;
      if (pass == Pass::ForwardFp8)  // P <= 1 quantised at scale 448 (e4m3's largest), O at scale 1
        plans_->fp8_scalars = DeviceBuffer<float>(std::vector<float>{1.0f / 448.0f, 448.0f, 1.0f, 0.0f, 0.0f});
    }
  }
  return plans_->why[i];
}

namespace {
void execute(fe::graph::Graph& g, std::unordered_map<std::int64_t, void*>& pointers, void* workspace,
             cudaStream_t stream, const std::string& who) {
  if (const cudnnStatus_t st = cudnnSetStream(handle(), stream); st != CUDNN_STATUS_SUCCESS)
    throw std::runtime_error(who + ": cudnnSetStream failed: " + cudnnGetErrorString(st));
  if (fe::error_t st = g.execute(handle(), pointers, workspace); st.is_bad())
    throw std::runtime_error(who + ": " + st.get_message());
  CUDA_CHECK_LAUNCH();
}
}  // namespace

void CudnnAttention::forward(const bf16* Q, const bf16* K, const bf16* V, bf16* O, float* L, cudaStream_t stream) {
  const std::string who = "cuDNN attention forward (" + s_.str() + ")";
  check_pointers(who, {{"Q", Q}, {"K", K}, {"V", V}, {"O", O}, {"L", L}}, 16);
  if (const std::string why = unsupported_reason(Pass::Forward); !why.empty())
    throw std::invalid_argument(who + ": " + why);
  std::unordered_map<std::int64_t, void*> pointers = {
      {kQ, const_cast<bf16*>(Q)}, {kK, const_cast<bf16*>(K)}, {kV, const_cast<bf16*>(V)}, {kO, O}, {kL, L}};
  execute(*plans_->graph[0], pointers, plans_->workspace.data(), stream, who);
}

void CudnnAttention::forward_fp8(const std::uint8_t* Q8, const std::uint8_t* K8, const std::uint8_t* V8,
                                 const float* descale_q, const float* descale_k, const float* descale_v,
                                 std::uint8_t* O8, float* L, cudaStream_t stream) {
  const std::string who = "cuDNN attention FP8 forward (" + s_.str() + ")";
  check_pointers(who, {{"Q8", Q8}, {"K8", K8}, {"V8", V8}, {"O8", O8}, {"L", L}}, 16);
  check_pointers(who, {{"descale_q", descale_q}, {"descale_k", descale_k}, {"descale_v", descale_v}}, 4);
  if (const std::string why = unsupported_reason(Pass::ForwardFp8); !why.empty())
    throw std::invalid_argument(who + ": " + why);
  float* scalars = plans_->fp8_scalars.data();
  std::unordered_map<std::int64_t, void*> pointers = {{kQ, const_cast<std::uint8_t*>(Q8)},
                                                      {kK, const_cast<std::uint8_t*>(K8)},
                                                      {kV, const_cast<std::uint8_t*>(V8)},
                                                      {kO, O8},
                                                      {kL, L},
                                                      {kDescaleQ, const_cast<float*>(descale_q)},
                                                      {kDescaleK, const_cast<float*>(descale_k)},
                                                      {kDescaleV, const_cast<float*>(descale_v)},
                                                      {kDescaleS, scalars},
                                                      {kScaleS, scalars + 1},
                                                      {kScaleO, scalars + 2},
                                                      {kAmaxS, scalars + 3},
                                                      {kAmaxO, scalars + 4}};
  execute(*plans_->graph[2], pointers, plans_->workspace.data(), stream, who);
}

void CudnnAttention::backward(const bf16* Q, const bf16* K, const bf16* V, const bf16* O, const float* L,
                              const bf16* dO, bf16* dQ, bf16* dK, bf16* dV, cudaStream_t stream) {
  const std::string who = "cuDNN attention backward (" + s_.str() + ")";
  check_pointers(
      who, {{"Q", Q}, {"K", K}, {"V", V}, {"O", O}, {"L", L}, {"dO", dO}, {"dQ", dQ}, {"dK", dK}, {"dV", dV}}, 16);
  if (const std::string why = unsupported_reason(Pass::Backward); !why.empty())
    throw std::invalid_argument(who + ": " + why);
  std::unordered_map<std::int64_t, void*> pointers = {{kQ, const_cast<bf16*>(Q)},
                                                      {kK, const_cast<bf16*>(K)},
                                                      {kV, const_cast<bf16*>(V)},
                                                      {kO, const_cast<bf16*>(O)},
                                                      {kL, const_cast<float*>(L)},
                                                      {kdO, const_cast<bf16*>(dO)},
                                                      {kdQ, dQ},
                                                      {kdK, dK},
                                                      {kdV, dV}};
  execute(*plans_->graph[1], pointers, plans_->workspace.data(), stream, who);
}

#else  // not built: the interface only, and why

struct CudnnAttention::Plans {};

std::string CudnnAttention::unavailable_reason() {
  return "not built: cmake found no cuDNN 9 or no cuDNN frontend headers (run scripts/fetch_cudnn_frontend.sh and "
         "reconfigure; the configure line 'cuDNN anchor off' says which)";
}

std::string CudnnAttention::version() { return ""; }

CudnnAttention::CudnnAttention(const AttentionShape& s) : s_(validate(s, kSupportedD, KvHeads::Any)) {}

CudnnAttention::~CudnnAttention() = default;

std::string CudnnAttention::unsupported_reason(Pass) { return unavailable_reason(); }

void CudnnAttention::forward(const bf16*, const bf16*, const bf16*, bf16*, float*, cudaStream_t) {
  throw std::invalid_argument("cuDNN attention: " + unavailable_reason());
}

void CudnnAttention::forward_fp8(const std::uint8_t*, const std::uint8_t*, const std::uint8_t*, const float*,
                                 const float*, const float*, std::uint8_t*, float*, cudaStream_t) {
  throw std::invalid_argument("cuDNN attention: " + unavailable_reason());
}

void CudnnAttention::backward(const bf16*, const bf16*, const bf16*, const bf16*, const float*, const bf16*, bf16*,
                              bf16*, bf16*, cudaStream_t) {
  throw std::invalid_argument("cuDNN attention: " + unavailable_reason());
}

#endif

std::string versus_cudnn(double ms, double cudnn_ms) {
  if (cudnn_ms <= 0 || ms <= 0) return "(cuDNN n/a)";
  char text[32];
  std::snprintf(text, sizeof text, "= %.2fx cuDNN", cudnn_ms / ms);
  return text;
}

}  // namespace ladder
