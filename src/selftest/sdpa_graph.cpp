#include "selftest/sdpa_graph.hpp"

#include "util/strings.hpp"

#include <algorithm>

namespace selftest {

namespace c = gpuapi::cudnn;
using gpuapi::CudnnDescriptor;

// cuDNN's last-error text for rejected engine configurations is a traceback per configuration
// ("Warning: CUDNN_STATUS_...; Reason: <why> at: <where>"), mostly the same generic lines
// repeated; the distinct reasons, in order, are what a user can act on.
std::string cudnn_reasons(const std::string& text) {
  std::vector<std::string> reasons;
  for (auto line : util::split(text, '\n')) {
    auto at = line.find("Reason: ");
    if (at == std::string_view::npos) continue;
    auto reason = util::trim(line.substr(at + 8));
    if (auto where = reason.find(" at: "); where != std::string_view::npos) reason = reason.substr(0, where);
    // The generic frames of the support check say nothing about this graph.
    if (reason.find("isSupported()") != std::string_view::npos || reason.find("finalize_internal()") != std::string_view::npos ||
        reason.find("check_for_support()") != std::string_view::npos || reason.find("CUDNN_STATUS_NOT_INITIALIZED == status") != std::string_view::npos)
      continue;
    std::string r(reason);
    if (std::find(reasons.begin(), reasons.end(), r) == reasons.end()) reasons.push_back(std::move(r));
  }
  if (reasons.empty()) return util::trim(text).size() > 400 ? std::string(util::trim(text).substr(0, 400)) + "..." : std::string(util::trim(text));
  return util::join(reasons, "; ");
}

SdpaGraph::~SdpaGraph() {
  if (!m_cudnn.api().cudnnBackendDestroyDescriptor) return;
  for (auto it = m_owned.rbegin(); it != m_owned.rend(); ++it) m_cudnn.api().cudnnBackendDestroyDescriptor(*it);
}

util::Result<CudnnDescriptor> SdpaGraph::create(int type) {
  CudnnDescriptor d = nullptr;
  if (auto rc = m_cudnn.api().cudnnBackendCreateDescriptor(type, &d); rc != 0)
    return util::make_error(util::ErrorKind::driver_error, "cudnnBackendCreateDescriptor(" + std::to_string(type) + "): " + m_cudnn.describe(rc));
  m_owned.push_back(d);
  describe('c', d, type);
  return d;
}

util::Result<void> SdpaGraph::set(CudnnDescriptor d, int attribute, int type, std::int64_t count, const void* value) {
  describe('s', d, attribute, type, count, value);
  if (auto rc = m_cudnn.api().cudnnBackendSetAttribute(d, attribute, type, count, value); rc != 0)
    return util::make_error(util::ErrorKind::driver_error,
                            "cudnnBackendSetAttribute(attribute " + std::to_string(attribute) + "): " + m_cudnn.describe(rc));
  return {};
}

util::Result<void> SdpaGraph::finalize(CudnnDescriptor d, const char* what) {
  describe('f', d);
  if (auto rc = m_cudnn.api().cudnnBackendFinalize(d); rc != 0)
    return util::make_error(util::ErrorKind::driver_error, std::string("cudnnBackendFinalize(") + what + "): " + m_cudnn.describe(rc));
  return {};
}

util::Result<CudnnDescriptor> SdpaGraph::tensor(std::int64_t uid, int dtype, std::array<std::int64_t, 4> dims,
                                                std::array<std::int64_t, 4> strides, bool is_virtual, bool by_value) {
  CudnnDescriptor d = NVTE_TRY(create(c::k_tensor_descriptor));
  std::int64_t alignment = 16;
  NVTE_TRY_VOID(set(d, c::k_attr_tensor_data_type, c::k_type_data_type, 1, &dtype));
  NVTE_TRY_VOID(set(d, c::k_attr_tensor_dimensions, c::k_type_int64, 4, dims.data()));
  NVTE_TRY_VOID(set(d, c::k_attr_tensor_strides, c::k_type_int64, 4, strides.data()));
  NVTE_TRY_VOID(set(d, c::k_attr_tensor_unique_id, c::k_type_int64, 1, &uid));
  NVTE_TRY_VOID(set(d, c::k_attr_tensor_byte_alignment, c::k_type_int64, 1, &alignment));
  NVTE_TRY_VOID(set(d, c::k_attr_tensor_is_virtual, c::k_type_boolean, 1, &is_virtual));
  if (by_value) NVTE_TRY_VOID(set(d, c::k_attr_tensor_is_by_value, c::k_type_boolean, 1, &by_value));
  NVTE_TRY_VOID(finalize(d, ("tensor " + std::to_string(uid)).c_str()));
  return d;
}

util::Result<CudnnDescriptor> SdpaGraph::pointwise(int mode, int precision, CudnnDescriptor x, CudnnDescriptor b,
                                                   CudnnDescriptor y, CudnnDescriptor t, std::int64_t axis) {
  CudnnDescriptor desc = NVTE_TRY(create(c::k_pointwise_descriptor));
  NVTE_TRY_VOID(set(desc, c::k_attr_pointwise_mode, c::k_type_pointwise_mode, 1, &mode));
  NVTE_TRY_VOID(set(desc, c::k_attr_pointwise_math_prec, c::k_type_data_type, 1, &precision));
  if (axis >= 0) NVTE_TRY_VOID(set(desc, c::k_attr_pointwise_axis, c::k_type_int64, 1, &axis));
  NVTE_TRY_VOID(finalize(desc, ("pointwise mode " + std::to_string(mode)).c_str()));
  CudnnDescriptor op = NVTE_TRY(create(c::k_operation_pointwise_descriptor));
  NVTE_TRY_VOID(set(op, c::k_attr_operation_pointwise_pw_descriptor, c::k_type_backend_descriptor, 1, &desc));
  NVTE_TRY_VOID(set(op, c::k_attr_operation_pointwise_xdesc, c::k_type_backend_descriptor, 1, &x));
  if (b) NVTE_TRY_VOID(set(op, c::k_attr_operation_pointwise_bdesc, c::k_type_backend_descriptor, 1, &b));
  NVTE_TRY_VOID(set(op, c::k_attr_operation_pointwise_ydesc, c::k_type_backend_descriptor, 1, &y));
  if (t) NVTE_TRY_VOID(set(op, c::k_attr_operation_pointwise_tdesc, c::k_type_backend_descriptor, 1, &t));
  NVTE_TRY_VOID(finalize(op, ("pointwise operation mode " + std::to_string(mode)).c_str()));
  m_operations.push_back(op);
  return op;
}

util::Result<void> SdpaGraph::reduction(int op_kind, CudnnDescriptor x, CudnnDescriptor y) {
  CudnnDescriptor desc = NVTE_TRY(create(c::k_reduction_descriptor));
  int precision = c::k_data_float;
  NVTE_TRY_VOID(set(desc, c::k_attr_reduction_operator, c::k_type_reduction_operator_type, 1, &op_kind));
  NVTE_TRY_VOID(set(desc, c::k_attr_reduction_comp_type, c::k_type_data_type, 1, &precision));
  NVTE_TRY_VOID(finalize(desc, "reduction"));
  CudnnDescriptor op = NVTE_TRY(create(c::k_operation_reduction_descriptor));
  NVTE_TRY_VOID(set(op, c::k_attr_operation_reduction_xdesc, c::k_type_backend_descriptor, 1, &x));
  NVTE_TRY_VOID(set(op, c::k_attr_operation_reduction_ydesc, c::k_type_backend_descriptor, 1, &y));
  NVTE_TRY_VOID(set(op, c::k_attr_operation_reduction_desc, c::k_type_backend_descriptor, 1, &desc));
  NVTE_TRY_VOID(finalize(op, "reduction operation"));
  m_operations.push_back(op);
  return {};
}

util::Result<void> SdpaGraph::matmul(CudnnDescriptor a, CudnnDescriptor b, CudnnDescriptor out) {
  CudnnDescriptor desc = NVTE_TRY(create(c::k_matmul_descriptor));
  int precision = c::k_data_float;
  NVTE_TRY_VOID(set(desc, c::k_attr_matmul_comp_type, c::k_type_data_type, 1, &precision));
  NVTE_TRY_VOID(finalize(desc, "matmul"));
  CudnnDescriptor op = NVTE_TRY(create(c::k_operation_matmul_descriptor));
  NVTE_TRY_VOID(set(op, c::k_attr_operation_matmul_adesc, c::k_type_backend_descriptor, 1, &a));
  NVTE_TRY_VOID(set(op, c::k_attr_operation_matmul_bdesc, c::k_type_backend_descriptor, 1, &b));
  NVTE_TRY_VOID(set(op, c::k_attr_operation_matmul_cdesc, c::k_type_backend_descriptor, 1, &out));
  NVTE_TRY_VOID(set(op, c::k_attr_operation_matmul_desc, c::k_type_backend_descriptor, 1, &desc));
  NVTE_TRY_VOID(finalize(op, "matmul operation"));
  m_operations.push_back(op);
  return {};
}

util::Result<void> SdpaGraph::reshape(CudnnDescriptor x, CudnnDescriptor y) {
  CudnnDescriptor op = NVTE_TRY(create(c::k_operation_reshape_descriptor));
  NVTE_TRY_VOID(set(op, c::k_attr_operation_reshape_xdesc, c::k_type_backend_descriptor, 1, &x));
  NVTE_TRY_VOID(set(op, c::k_attr_operation_reshape_ydesc, c::k_type_backend_descriptor, 1, &y));
  NVTE_TRY_VOID(finalize(op, "reshape operation"));
  m_operations.push_back(op);
  return {};
}

util::Result<void> SdpaGraph::check_api() const {
  const auto& api = m_cudnn.api();
  if (!api.cudnnBackendCreateDescriptor || !api.cudnnBackendSetAttribute || !api.cudnnBackendFinalize ||
      !api.cudnnBackendDestroyDescriptor || !api.cudnnBackendGetAttribute)
    return util::make_error(util::ErrorKind::symbol_missing, m_cudnn.path() + " lacks the backend API: " + util::join(m_cudnn.missing(), ", "));
  return {};
}

SdpaGradLayout make_grad_layout(const SdpaShape& s, const SdpaLayout& l) {
  SdpaGradLayout g;
  bool bs = l.o.strides[0] > l.o.strides[2]; // O is [b, s, h, d] rather than [s, b, h, d]
  auto view = [&](std::int64_t heads, std::int64_t seq, std::int64_t dim, int buffer) {
    TensorView v;
    v.buffer = buffer;
    v.dims = {s.batch, heads, seq, dim};
    v.strides = bs ? std::array<std::int64_t, 4>{seq * heads * dim, dim, heads * dim, 1}
                   : std::array<std::int64_t, 4>{heads * dim, dim, s.batch * heads * dim, 1};
    g.buffer_elements.push_back(s.batch * heads * seq * dim);
    return v;
  };
  g.d_o = view(s.heads, s.seq_q, s.dim_v, 0);
  g.dq = view(s.heads, s.seq_q, s.dim_qk, 1);
  g.dk = view(s.kv_heads, s.seq_kv, s.dim_qk, 2);
  g.dv = view(s.kv_heads, s.seq_kv, s.dim_v, 3);
  return g;
}

// scale * Q K^T in float: the start of the forward and the backward graph.
util::Result<CudnnDescriptor> SdpaGraph::scaled_scores(CudnnDescriptor q, CudnnDescriptor kt, CudnnDescriptor scale,
                                                       const std::array<std::int64_t, 4>& dims,
                                                       const std::array<std::int64_t, 4>& strides) {
  const int f32 = c::k_data_float;
  auto scores = NVTE_TRY(tensor(m_next_virtual++, f32, dims, strides, true));
  NVTE_TRY_VOID(matmul(q, kt, scores));
  auto scaled = NVTE_TRY(tensor(m_next_virtual++, f32, dims, strides, true));
  NVTE_TRY(pointwise(c::k_pw_mul, f32, scores, scale, scaled));
  return scaled;
}

// The masks, top-left aligned as TE's: the right bound (causal, or a window's right side without
// one) as row (+ right) >= column on int32 indices, then a sliding window's left bound as
// column + (left + 1) > row on float indices; each masked score becomes a by-value -inf.
util::Result<CudnnDescriptor> SdpaGraph::mask(const SdpaShape& s, CudnnDescriptor scores, const std::array<std::int64_t, 4>& dims,
                                              const std::array<std::int64_t, 4>& strides) {
  const int f32 = c::k_data_float, i32 = c::k_data_int32, boolean = c::k_data_boolean;
  const std::array<std::int64_t, 4> one{1, 1, 1, 1};
  auto scalar = [&](std::int64_t uid, int dtype) {
    if (std::find(m_scalar_uids.begin(), m_scalar_uids.end(), uid) == m_scalar_uids.end()) m_scalar_uids.push_back(uid);
    return tensor(uid, dtype, one, one, false, true);
  };
  CudnnDescriptor masked = scores;
  if (s.causal || s.window_right >= 0) {
    auto neg_inf = NVTE_TRY(scalar(k_uid_neg_inf, f32));
    auto rows = NVTE_TRY(tensor(m_next_virtual++, i32, dims, strides, true));
    auto cols = NVTE_TRY(tensor(m_next_virtual++, i32, dims, strides, true));
    NVTE_TRY(pointwise(c::k_pw_gen_index, f32, masked, nullptr, rows, nullptr, 2));
    NVTE_TRY(pointwise(c::k_pw_gen_index, f32, masked, nullptr, cols, nullptr, 3));
    if (!s.causal && s.window_right > 0) {
      auto shift = NVTE_TRY(scalar(k_uid_right_shift, i32));
      auto shifted = NVTE_TRY(tensor(m_next_virtual++, i32, dims, strides, true));
      NVTE_TRY(pointwise(c::k_pw_add, i32, rows, shift, shifted));
      rows = shifted;
    }
    auto keep = NVTE_TRY(tensor(m_next_virtual++, boolean, dims, strides, true));
    NVTE_TRY(pointwise(c::k_pw_cmp_ge, boolean, rows, cols, keep));
    auto out = NVTE_TRY(tensor(m_next_virtual++, f32, dims, strides, true));
    NVTE_TRY(pointwise(c::k_pw_binary_select, f32, masked, neg_inf, out, keep));
    masked = out;
  }
  if (s.window_left >= 0) {
    auto left = NVTE_TRY(scalar(k_uid_left_bound, f32));
    auto neg_inf = NVTE_TRY(scalar(k_uid_window_neg_inf, f32));
    auto rows = NVTE_TRY(tensor(m_next_virtual++, f32, dims, strides, true));
    auto cols = NVTE_TRY(tensor(m_next_virtual++, f32, dims, strides, true));
    NVTE_TRY(pointwise(c::k_pw_gen_index, f32, masked, nullptr, rows, nullptr, 2));
    NVTE_TRY(pointwise(c::k_pw_gen_index, f32, masked, nullptr, cols, nullptr, 3));
    auto cols_plus = NVTE_TRY(tensor(m_next_virtual++, f32, dims, strides, true));
    NVTE_TRY(pointwise(c::k_pw_add, f32, cols, left, cols_plus, nullptr, 3));
    auto keep = NVTE_TRY(tensor(m_next_virtual++, boolean, dims, strides, true));
    NVTE_TRY(pointwise(c::k_pw_cmp_gt, boolean, cols_plus, rows, keep));
    auto out = NVTE_TRY(tensor(m_next_virtual++, f32, dims, strides, true));
    NVTE_TRY(pointwise(c::k_pw_binary_select, f32, masked, neg_inf, out, keep));
    masked = out;
  }
  return masked;
}

void SdpaGraph::bind_scalars(const MaskScalars& values, std::vector<std::int64_t>& uids, std::vector<void*>& pointers) const {
  for (auto uid : m_scalar_uids) {
    uids.push_back(uid);
    if (uid == k_uid_left_bound) pointers.push_back(const_cast<float*>(&values.left_bound));
    else if (uid == k_uid_right_shift) pointers.push_back(const_cast<std::int32_t*>(&values.right_shift));
    else pointers.push_back(const_cast<float*>(&values.neg_inf));
  }
}

util::Result<void> SdpaGraph::build_backward_operations(const SdpaShape& s, const SdpaLayout& l, const SdpaGradLayout& gl) {
  NVTE_TRY_VOID(check_api());
  const int io = s.bf16 ? c::k_data_bfloat16 : c::k_data_half;
  const int f32 = c::k_data_float;
  const std::int64_t batch = s.batch, heads = s.heads, sq = s.seq_q, skv = s.seq_kv, dim_qk = s.dim_qk, dim_v = s.dim_v;
  const std::array<std::int64_t, 4> score_dims{batch, heads, sq, skv}, score_strides{heads * sq * skv, sq * skv, skv, 1};
  // The transposed view of a [b, h, s_q, s_kv] score tensor: [b, h, s_kv, s_q].
  const std::array<std::int64_t, 4> t_dims{batch, heads, skv, sq}, t_strides{heads * sq * skv, sq * skv, 1, skv};
  const std::array<std::int64_t, 4> row_dims{batch, heads, sq, 1}, row_strides{heads * sq, sq, 1, 1};
  const std::array<std::int64_t, 4> one{1, 1, 1, 1};
  auto virtual_tensor = [&](int dtype, const std::array<std::int64_t, 4>& dims, const std::array<std::int64_t, 4>& strides) {
    return tensor(m_next_virtual++, dtype, dims, strides, true);
  };
  auto swap = [](std::array<std::int64_t, 4> a) { return std::array<std::int64_t, 4>{a[0], a[1], a[3], a[2]}; };

  auto q = NVTE_TRY(tensor(k_uid_q, io, l.q.dims, l.q.strides, false));
  auto kt = NVTE_TRY(tensor(k_uid_k, io, swap(l.k.dims), swap(l.k.strides), false));
  auto vt = NVTE_TRY(tensor(k_uid_v, io, swap(l.v.dims), swap(l.v.strides), false));
  auto o = NVTE_TRY(tensor(k_uid_o, io, l.o.dims, l.o.strides, false));
  auto d_o = NVTE_TRY(tensor(k_uid_do, io, gl.d_o.dims, gl.d_o.strides, false));
  auto stats = NVTE_TRY(tensor(k_uid_stats, f32, row_dims, row_strides, false));
  auto scale = NVTE_TRY(tensor(k_uid_scale, f32, one, one, false, true));
  auto unit = NVTE_TRY(tensor(k_uid_one, f32, one, one, false, true));
  auto dq = NVTE_TRY(tensor(k_uid_dq, io, gl.dq.dims, gl.dq.strides, false));
  auto dk = NVTE_TRY(tensor(k_uid_dk, io, gl.dk.dims, gl.dk.strides, false));
  auto dv = NVTE_TRY(tensor(k_uid_dv, io, gl.dv.dims, gl.dv.strides, false));

  // softmax_sum = rowsum(dO * O), in a float workspace tensor.
  auto product = NVTE_TRY(virtual_tensor(f32, {batch, heads, sq, dim_v}, {heads * sq * dim_v, sq * dim_v, dim_v, 1}));
  NVTE_TRY(pointwise(c::k_pw_mul, f32, d_o, o, product));
  auto row_sum = NVTE_TRY(virtual_tensor(f32, row_dims, row_strides));
  NVTE_TRY_VOID(reduction(c::k_reduce_add, product, row_sum));
  auto softmax_sum = NVTE_TRY(tensor(k_uid_softmax_sum, f32, row_dims, row_strides, false));
  NVTE_TRY(pointwise(c::k_pw_mul, f32, row_sum, unit, softmax_sum));

  // P = exp(mask(scale * Q K^T - stats)).
  auto scaled = NVTE_TRY(scaled_scores(q, kt, scale, score_dims, score_strides));
  auto shifted = NVTE_TRY(virtual_tensor(f32, score_dims, score_strides));
  NVTE_TRY(pointwise(c::k_pw_sub, f32, scaled, stats, shifted));
  auto masked = shifted;
  masked = NVTE_TRY(mask(s, shifted, score_dims, score_strides));
  auto p = NVTE_TRY(virtual_tensor(f32, score_dims, score_strides));
  NVTE_TRY(pointwise(c::k_pw_exp, f32, masked, nullptr, p));

  // dV = P^T dO (per query head, then summed over each GQA group).
  auto pt = NVTE_TRY(virtual_tensor(io, t_dims, t_strides));
  NVTE_TRY_VOID(reshape(p, pt));
  if (heads == s.kv_heads) {
    NVTE_TRY_VOID(matmul(pt, d_o, dv));
  } else {
    auto dv_full = NVTE_TRY(virtual_tensor(io, {batch, heads, skv, dim_v}, {heads * skv * dim_v, skv * dim_v, dim_v, 1}));
    NVTE_TRY_VOID(matmul(pt, d_o, dv_full));
    NVTE_TRY_VOID(reduction(c::k_reduce_add, dv_full, dv));
  }
  // dS = P (dO V^T - softmax_sum) scale, in float.
  auto dp = NVTE_TRY(virtual_tensor(f32, score_dims, score_strides));
  NVTE_TRY_VOID(matmul(d_o, vt, dp));
  auto dp_centered = NVTE_TRY(virtual_tensor(f32, score_dims, score_strides));
  NVTE_TRY(pointwise(c::k_pw_sub, f32, dp, softmax_sum, dp_centered));
  auto ds_unscaled = NVTE_TRY(virtual_tensor(f32, score_dims, score_strides));
  NVTE_TRY(pointwise(c::k_pw_mul, f32, dp_centered, p, ds_unscaled));
  auto ds = NVTE_TRY(virtual_tensor(f32, score_dims, score_strides));
  NVTE_TRY(pointwise(c::k_pw_mul, f32, ds_unscaled, scale, ds));
  // dK = dS^T Q.
  auto dst = NVTE_TRY(virtual_tensor(io, t_dims, t_strides));
  NVTE_TRY_VOID(reshape(ds, dst));
  if (heads == s.kv_heads) {
    NVTE_TRY_VOID(matmul(dst, q, dk));
  } else {
    auto dk_full = NVTE_TRY(virtual_tensor(io, {batch, heads, skv, dim_qk}, {heads * skv * dim_qk, skv * dim_qk, dim_qk, 1}));
    NVTE_TRY_VOID(matmul(dst, q, dk_full));
    NVTE_TRY_VOID(reduction(c::k_reduce_add, dk_full, dk));
  }
  // dQ = dS K (K read back through its transposed view), into a float accumulator.
  auto k = NVTE_TRY(virtual_tensor(f32, l.k.dims, l.k.strides));
  NVTE_TRY_VOID(reshape(kt, k));
  auto dq_accum = NVTE_TRY(tensor(k_uid_dq_accum, f32, {batch, heads, sq, dim_qk}, {heads * sq * dim_qk, sq * dim_qk, dim_qk, 1}, false));
  NVTE_TRY_VOID(matmul(ds, k, dq_accum));
  NVTE_TRY(pointwise(c::k_pw_identity, f32, dq_accum, nullptr, dq));
  return {};
}

util::Result<void> SdpaGraph::build_operations(const SdpaShape& s, const SdpaLayout& l) {
  NVTE_TRY_VOID(check_api());
  const int io = s.bf16 ? c::k_data_bfloat16 : c::k_data_half;
  const int f32 = c::k_data_float;
  const std::int64_t batch = s.batch, heads = s.heads, sq = s.seq_q, skv = s.seq_kv;
  const std::array<std::int64_t, 4> score_dims{batch, heads, sq, skv}, score_strides{heads * sq * skv, sq * skv, skv, 1};
  const std::array<std::int64_t, 4> row_dims{batch, heads, sq, 1}, row_strides{heads * sq, sq, 1, 1};
  const std::array<std::int64_t, 4> one{1, 1, 1, 1};
  auto virtual_tensor = [&](int dtype, const std::array<std::int64_t, 4>& dims, const std::array<std::int64_t, 4>& strides) {
    return tensor(m_next_virtual++, dtype, dims, strides, true);
  };

  auto q = NVTE_TRY(tensor(k_uid_q, io, l.q.dims, l.q.strides, false));
  // K^T: [b, g, d, s_kv], the strides of K with the last two swapped.
  auto kt = NVTE_TRY(tensor(k_uid_k, io, {l.k.dims[0], l.k.dims[1], l.k.dims[3], l.k.dims[2]},
                            {l.k.strides[0], l.k.strides[1], l.k.strides[3], l.k.strides[2]}, false));
  auto v = NVTE_TRY(tensor(k_uid_v, io, l.v.dims, l.v.strides, false));
  auto o = NVTE_TRY(tensor(k_uid_o, io, l.o.dims, l.o.strides, false));
  auto stats = NVTE_TRY(tensor(k_uid_stats, f32, row_dims, row_strides, false));
  auto scale = NVTE_TRY(tensor(k_uid_scale, f32, one, one, false, true));

  auto scaled = NVTE_TRY(scaled_scores(q, kt, scale, score_dims, score_strides));
  auto masked = scaled;
  masked = NVTE_TRY(mask(s, scaled, score_dims, score_strides));
  auto max = NVTE_TRY(virtual_tensor(f32, row_dims, row_strides));
  NVTE_TRY_VOID(reduction(c::k_reduce_max, masked, max));
  auto shifted = NVTE_TRY(virtual_tensor(f32, score_dims, score_strides));
  NVTE_TRY(pointwise(c::k_pw_sub, f32, masked, max, shifted));
  auto exp = NVTE_TRY(virtual_tensor(f32, score_dims, score_strides));
  NVTE_TRY(pointwise(c::k_pw_exp, f32, shifted, nullptr, exp));
  auto sum = NVTE_TRY(virtual_tensor(f32, row_dims, row_strides));
  NVTE_TRY_VOID(reduction(c::k_reduce_add, exp, sum));
  auto log_sum = NVTE_TRY(virtual_tensor(f32, row_dims, row_strides));
  NVTE_TRY(pointwise(c::k_pw_log, f32, sum, nullptr, log_sum));
  NVTE_TRY(pointwise(c::k_pw_add, f32, max, log_sum, stats));
  auto probabilities = NVTE_TRY(virtual_tensor(io, score_dims, score_strides));
  NVTE_TRY(pointwise(c::k_pw_div, f32, exp, sum, probabilities));
  NVTE_TRY_VOID(matmul(probabilities, v, o));
  return {};
}

EngineInfo SdpaGraph::engine_of(CudnnDescriptor config) {
  EngineInfo info;
  auto engine = create(c::k_engine_descriptor);
  if (!engine) return info;
  const auto& api = m_cudnn.api();
  std::int64_t got = 0;
  if (api.cudnnBackendGetAttribute(config, c::k_attr_enginecfg_engine, c::k_type_backend_descriptor, 1, &got, &*engine) != 0) return info;
  api.cudnnBackendGetAttribute(*engine, c::k_attr_engine_global_index, c::k_type_int64, 1, &got, &info.index);
  std::int32_t notes[16] = {};
  std::int64_t count = 0;
  if (api.cudnnBackendGetAttribute(*engine, c::k_attr_engine_behavior_note, c::k_type_behavior_note, 16, &count, notes) == 0) {
    for (std::int64_t i = 0; i < std::min<std::int64_t>(count, 16); ++i)
      info.runtime_compiled = info.runtime_compiled || notes[i] == c::k_behavior_note_runtime_compilation;
  }
  return info;
}

util::Result<void> SdpaGraph::build_graph(gpuapi::CudnnHandle handle) {
  if (m_graph) return {};
  CudnnDescriptor graph = NVTE_TRY(create(c::k_operationgraph_descriptor));
  NVTE_TRY_VOID(set(graph, c::k_attr_operationgraph_handle, c::k_type_handle, 1, &handle));
  NVTE_TRY_VOID(set(graph, c::k_attr_operationgraph_ops, c::k_type_backend_descriptor, static_cast<std::int64_t>(m_operations.size()),
                    m_operations.data()));
  NVTE_TRY_VOID(finalize(graph, "operation graph"));
  m_graph = graph;
  return {};
}

util::Result<SdpaGraph::ModeConfigs> SdpaGraph::heuristics(int mode) {
  if (auto it = m_heuristics.find(mode); it != m_heuristics.end()) return it->second;
  ModeConfigs out;
  CudnnDescriptor heuristics = NVTE_TRY(create(c::k_engineheur_descriptor));
  NVTE_TRY_VOID(set(heuristics, c::k_attr_engineheur_operation_graph, c::k_type_backend_descriptor, 1, &m_graph));
  NVTE_TRY_VOID(set(heuristics, c::k_attr_engineheur_mode, c::k_type_heur_mode, 1, &mode));
  if (auto done = finalize(heuristics, "engine heuristics"); !done) {
    out.error = done.error().message;
    return m_heuristics[mode] = out;
  }
  out.asked = true;
  auto count_rc = m_cudnn.api().cudnnBackendGetAttribute(heuristics, c::k_attr_engineheur_results, c::k_type_backend_descriptor, 0,
                                                         &out.count, nullptr);
  if (count_rc != 0 || out.count <= 0) {
    out.error = "the heuristics returned no engine configuration" + (count_rc != 0 ? ": " + m_cudnn.describe(count_rc) : std::string());
    // cuDNN's reason (which part of the graph its engines do not take) is in its last-error text.
    if (auto reason = cudnn_reasons(m_cudnn.last_error()); count_rc == 0 && !reason.empty()) out.error = "cuDNN: " + reason;
    return m_heuristics[mode] = out;
  }
  std::vector<CudnnDescriptor> configs;
  for (std::int64_t i = 0; i < out.count; ++i) configs.push_back(NVTE_TRY(create(c::k_enginecfg_descriptor)));
  std::int64_t returned = 0;
  if (auto rc = m_cudnn.api().cudnnBackendGetAttribute(heuristics, c::k_attr_engineheur_results, c::k_type_backend_descriptor, out.count,
                                                       &returned, configs.data());
      rc != 0) {
    out.error = "reading the heuristics' results: " + m_cudnn.describe(rc);
    return m_heuristics[mode] = out;
  }
  // The heuristics drop configurations that fail cuDNN's support checks without an error status;
  // cuDNN's reason (e.g. which part of the graph its attention engines do not recognise) is
  // only in its last-error text.
  if (returned < out.count)
    if (auto reason = cudnn_reasons(m_cudnn.last_error()); !reason.empty()) out.error = "cuDNN: " + reason;
  out.returned = std::max<std::int64_t>(returned, 0);
  configs.resize(static_cast<std::size_t>(out.returned));
  out.configs = std::move(configs);
  return m_heuristics[mode] = out;
}

util::Result<SupportAnswer> SdpaGraph::check_support(gpuapi::CudnnHandle handle) {
  SupportAnswer answer;
  if (auto built = build_graph(handle); !built) {
    answer.reason = built.error().message;
    const std::string why = cudnn_reasons(m_cudnn.last_error());
    if (!why.empty() && why != util::trim(m_cudnn.last_error())) answer.reason += ": " + why;
    return answer;
  }
  ModeConfigs mode_a = NVTE_TRY(heuristics(c::k_heur_mode_a));
  answer.configs = mode_a.returned;
  answer.supported = mode_a.returned > 0;
  if (!answer.supported) answer.reason = mode_a.error.empty() ? "the heuristics returned no engine configuration" : mode_a.error;
  return answer;
}

util::Result<std::int64_t> SdpaGraph::build_plan(gpuapi::CudnnHandle handle, const PlanKeeping* keeping) {
  NVTE_TRY_VOID(build_graph(handle));
  std::string last_error;
  std::string trail; // what each heuristics mode answered, for the error text
  for (int mode : {c::k_heur_mode_a, c::k_heur_mode_instant, c::k_heur_mode_fallback}) {
    std::string mode_name = mode == c::k_heur_mode_a ? "heuristics A" : mode == c::k_heur_mode_instant ? "heuristics instant" : "fallback";
    ModeConfigs answer = NVTE_TRY(heuristics(mode));
    if (answer.asked) trail += (trail.empty() ? "" : "; ") + mode_name + ": " + std::to_string(answer.count) + " configurations";
    if (!answer.error.empty()) last_error = answer.error;
    if (answer.configs.empty()) continue;
    trail += ", " + std::to_string(answer.returned) + " returned";
    std::vector<EngineInfo> engines;
    for (auto config : answer.configs) engines.push_back(engine_of(config));
    for (std::size_t i = 0; i < answer.configs.size(); ++i) {
      ++m_configs_tried;
      CudnnDescriptor plan = nullptr;
      if (keeping && keeping->cache) {
        // The configuration's plan from the cache, else compiled and kept (kernel_cache.hpp).
        const CacheKey key = plan_config_key(keeping->key, m_description, config_identity(answer.configs[i]));
        CacheSteps steps;
        steps.restore = [&](std::string_view json) -> util::Result<void> {
          plan = NVTE_TRY(restore_plan(handle, json, engines[i].index));
          return {};
        };
        steps.build = [&]() -> util::Result<void> {
          plan = NVTE_TRY(finalize_plan(handle, answer.configs[i]));
          return {};
        };
        steps.serialize = [&] { return plan_json(plan); };
        auto kept = keep_or_build(*keeping->cache, "cudnn-plan", key, steps);
        if (!kept) {
          last_error = kept.error().message;
          continue;
        }
        m_kept = *kept;
      } else {
        auto made = finalize_plan(handle, answer.configs[i]);
        if (!made) {
          last_error = made.error().message;
          continue;
        }
        plan = *made;
      }
      std::int64_t workspace = 0, got = 0;
      m_cudnn.api().cudnnBackendGetAttribute(plan, c::k_attr_execution_plan_workspace_size, c::k_type_int64, 1, &got, &workspace);
      m_plan = plan;
      m_engine = engines[i];
      m_candidates = std::move(engines);
      m_mode = mode_name;
      return workspace;
    }
  }
  return util::make_error(util::ErrorKind::driver_error,
                          "No valid execution plans built (" + std::to_string(m_configs_tried) + " engine configurations tried; " +
                              trail + ")" + (last_error.empty() ? "" : ": " + last_error));
}

} // namespace selftest
