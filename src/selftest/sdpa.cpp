#include "selftest/sdpa.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

namespace selftest {

float SdpaShape::scale() const { return 1.0f / std::sqrt(static_cast<float>(dim_qk)); }

std::string SdpaShape::label() const {
  std::string window;
  if (window_left >= 0 || (!causal && window_right >= 0))
    window = " window " + std::to_string(window_left) + "," + std::to_string(causal ? 0 : window_right);
  return std::string(bf16 ? "bf16" : "fp16") + " " + layout + " b" + std::to_string(batch) + " h" + std::to_string(heads) +
         "/" + std::to_string(kv_heads) + " s" + std::to_string(seq_q) + (seq_kv != seq_q ? "/" + std::to_string(seq_kv) : "") +
         " d" + std::to_string(dim_qk) + (dim_v != dim_qk ? "/" + std::to_string(dim_v) : "") + (causal ? " causal" : " no_mask") + window;
}

Band band_of(const SdpaShape& s) {
  Band b;
  if (s.window_left >= 0) b.lo = -s.window_left;
  if (s.causal) b.hi = 0;
  else if (s.window_right >= 0) b.hi = s.window_right;
  return b;
}

std::int64_t kept_pairs(const SdpaShape& s) {
  Band b = band_of(s);
  if (!b.bounded()) return s.seq_q * s.seq_kv;
  std::int64_t kept = 0;
  for (std::int64_t i = 0; i < s.seq_q; ++i) {
    std::int64_t first = std::max<std::int64_t>(0, i + std::max(b.lo, -s.seq_kv)), last = std::min(s.seq_kv - 1, i + std::min(b.hi, s.seq_kv));
    if (last >= first) kept += last - first + 1;
  }
  return kept;
}

util::Result<SdpaShape> parse_shape(const Json& args) {
  SdpaShape s;
  auto integer = [&](const char* key, std::int64_t& out) -> bool {
    if (!args.contains(key)) return true;
    if (!args[key].is_number_integer() || args[key].get<std::int64_t>() <= 0) return false;
    out = args[key].get<std::int64_t>();
    return true;
  };
  for (auto [key, slot] : {std::pair{"batch", &s.batch}, {"heads", &s.heads}, {"kv_heads", &s.kv_heads}, {"seq_q", &s.seq_q},
                           {"seq_kv", &s.seq_kv}, {"dim_qk", &s.dim_qk}, {"dim_v", &s.dim_v}}) {
    if (!integer(key, *slot)) return util::make_error(util::ErrorKind::invalid, std::string("sdpa argument ") + key + " is not a positive integer");
  }
  if (args.contains("dtype")) {
    std::string dtype = args["dtype"].is_string() ? args["dtype"].get<std::string>() : "";
    if (dtype != "bf16" && dtype != "fp16") return util::make_error(util::ErrorKind::unsupported, "dtype '" + dtype + "': the self-test runs bf16 and fp16");
    s.bf16 = dtype == "bf16";
  }
  if (args.contains("layout") && args["layout"].is_string()) s.layout = args["layout"].get<std::string>();
  if (args.contains("causal") && args["causal"].is_boolean()) s.causal = args["causal"].get<bool>();
  for (auto [key, slot] : {std::pair{"window_left", &s.window_left}, {"window_right", &s.window_right}}) {
    if (!args.contains(key)) continue;
    if (!args[key].is_number_integer() || args[key].get<std::int64_t>() < -1)
      return util::make_error(util::ErrorKind::invalid, std::string("sdpa argument ") + key + " is not an integer >= -1");
    *slot = args[key].get<std::int64_t>();
  }
  if (s.heads % s.kv_heads != 0) return util::make_error(util::ErrorKind::invalid, "heads is not a multiple of kv_heads");
  return s;
}

util::Result<SdpaLayout> make_layout(const SdpaShape& s) {
  SdpaLayout l;
  const std::int64_t B = s.batch, H = s.heads, G = s.kv_heads, Sq = s.seq_q, Skv = s.seq_kv, D = s.dim_qk, Dv = s.dim_v;
  // Separate tensors: [b,s,h,d] or [s,b,h,d].
  auto separate = [](bool bs, std::int64_t b, std::int64_t h, std::int64_t seq, std::int64_t d, int buffer) {
    TensorView v;
    v.buffer = buffer;
    v.dims = {b, h, seq, d};
    v.strides = bs ? std::array<std::int64_t, 4>{seq * h * d, d, h * d, 1} : std::array<std::int64_t, 4>{h * d, d, b * h * d, 1};
    return v;
  };
  const std::string& f = s.layout;
  bool bs = f.starts_with("bs");
  if (f == "bshd_bshd_bshd" || f == "sbhd_sbhd_sbhd") {
    l.q = separate(bs, B, H, Sq, D, 0);
    l.k = separate(bs, B, G, Skv, D, 1);
    l.v = separate(bs, B, G, Skv, Dv, 2);
    l.buffer_elements = {B * H * Sq * D, B * G * Skv * D, B * G * Skv * Dv};
  } else if (f == "sbh3d" || f == "bsh3d" || f == "sb3hd" || f == "bs3hd") {
    if (H != G || D != Dv || Sq != Skv)
      return util::make_error(util::ErrorKind::invalid, f + " packs Q, K and V together: it needs num_heads == num_gqa_groups, equal head dims and seq lengths");
    bool h3 = f.ends_with("h3d"); // [.., h, 3, d] (interleaved per head) vs [.., 3, h, d]
    std::int64_t row = 3 * H * D; // elements per token
    std::array<std::int64_t, 4> strides = bs ? std::array<std::int64_t, 4>{Sq * row, h3 ? 3 * D : D, row, 1}
                                              : std::array<std::int64_t, 4>{row, h3 ? 3 * D : D, B * row, 1};
    for (auto [view, which] : {std::pair{&l.q, 0}, {&l.k, 1}, {&l.v, 2}}) {
      view->buffer = 0;
      view->dims = {B, H, Sq, D};
      view->strides = strides;
      view->offset = which * (h3 ? D : H * D);
    }
    l.buffer_elements = {B * Sq * row};
  } else if (f == "sbhd_sbh2d" || f == "bshd_bsh2d") {
    if (D != Dv) return util::make_error(util::ErrorKind::invalid, f + " packs K and V together: it needs equal head dims");
    l.q = separate(bs, B, H, Sq, D, 0);
    std::int64_t row = 2 * G * D;
    std::array<std::int64_t, 4> strides = bs ? std::array<std::int64_t, 4>{Skv * row, 2 * D, row, 1}
                                              : std::array<std::int64_t, 4>{row, 2 * D, B * row, 1};
    l.k = {1, 0, {B, G, Skv, D}, strides};
    l.v = {1, D, {B, G, Skv, D}, strides};
    l.buffer_elements = {B * H * Sq * D, B * Skv * row};
  } else {
    return util::make_error(util::ErrorKind::unsupported, "qkv_layout " + f + ": the cuDNN self-test builds bshd, sbhd and their interleaved layouts, not thd or paged ones");
  }
  l.o = separate(bs, B, H, Sq, Dv, static_cast<int>(l.buffer_elements.size()));
  l.buffer_elements.push_back(B * H * Sq * Dv);
  return l;
}

std::uint16_t to_bfloat16(float f) {
  auto bits = std::bit_cast<std::uint32_t>(f);
  if (std::isnan(f)) return 0x7fc0;
  bits += 0x7fff + ((bits >> 16) & 1); // round to nearest even
  return static_cast<std::uint16_t>(bits >> 16);
}

float from_bfloat16(std::uint16_t b) { return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16); }

std::uint16_t to_half(float f) {
  auto bits = std::bit_cast<std::uint32_t>(f);
  std::uint32_t sign = (bits >> 16) & 0x8000u;
  float a = std::fabs(f);
  if (std::isnan(f)) return static_cast<std::uint16_t>(sign | 0x7e00u);
  if (a >= 65520.0f) return static_cast<std::uint16_t>(sign | 0x7c00u);
  if (a < 6.103515625e-05f) { // subnormal: multiples of 2^-24
    auto m = static_cast<std::uint32_t>(std::nearbyint(a * 16777216.0f));
    return static_cast<std::uint16_t>(sign | m);
  }
  std::uint32_t exponent = ((bits >> 23) & 0xffu) - 127 + 15;
  std::uint32_t mantissa = bits & 0x7fffffu;
  std::uint32_t half = (exponent << 10) | (mantissa >> 13);
  std::uint32_t rest = mantissa & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) ++half; // nearest even; may carry into the exponent
  return static_cast<std::uint16_t>(sign | half);
}

float from_half(std::uint16_t h) {
  std::uint32_t sign = (h & 0x8000u) << 16;
  std::uint32_t exponent = (h >> 10) & 0x1fu;
  std::uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0) {
    float v = static_cast<float>(mantissa) / 16777216.0f;
    return sign ? -v : v;
  }
  if (exponent == 31) return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
  return std::bit_cast<float>(sign | ((exponent - 15 + 127) << 23) | (mantissa << 13));
}

// splitmix64's finalizer over seed + index * golden ratio: the same in reference_source.cpp.
float input_value(std::uint64_t seed, std::uint64_t index) {
  std::uint64_t x = seed + index * 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  x ^= x >> 31;
  return static_cast<float>(static_cast<int>(x >> 55) - 256) / 256.0f;
}

std::vector<std::vector<std::uint16_t>> make_inputs(const SdpaShape& shape, const SdpaLayout& layout) {
  std::vector<std::vector<std::uint16_t>> buffers;
  for (std::size_t i = 0; i + 1 < layout.buffer_elements.size(); ++i) {
    std::vector<std::uint16_t> data(static_cast<std::size_t>(layout.buffer_elements[i]));
    for (std::size_t e = 0; e < data.size(); ++e) {
      float value = input_value(k_seed_inputs + i, e);
      data[e] = shape.bf16 ? to_bfloat16(value) : to_half(value);
    }
    buffers.push_back(std::move(data));
  }
  return buffers;
}

namespace {

float load(const SdpaShape& shape, const std::vector<std::vector<std::uint16_t>>& buffers, const TensorView& v,
           std::int64_t b, std::int64_t h, std::int64_t s, std::int64_t d) {
  auto index = v.offset + b * v.strides[0] + h * v.strides[1] + s * v.strides[2] + d * v.strides[3];
  std::uint16_t raw = buffers[static_cast<std::size_t>(v.buffer)][static_cast<std::size_t>(index)];
  return shape.bf16 ? from_bfloat16(raw) : from_half(raw);
}

} // namespace

std::vector<float> reference_head(const SdpaShape& shape, const SdpaLayout& layout,
                                  const std::vector<std::vector<std::uint16_t>>& buffers, std::int64_t b, std::int64_t h) {
  std::int64_t g = h / (shape.heads / shape.kv_heads);
  Band band = band_of(shape);
  std::vector<float> out(static_cast<std::size_t>(shape.seq_q * shape.dim_v), 0.0f);
  std::vector<float> scores(static_cast<std::size_t>(shape.seq_kv));
  for (std::int64_t i = 0; i < shape.seq_q; ++i) {
    float top = -std::numeric_limits<float>::infinity();
    for (std::int64_t j = 0; j < shape.seq_kv; ++j) {
      float dot = 0;
      for (std::int64_t d = 0; d < shape.dim_qk; ++d)
        dot += load(shape, buffers, layout.q, b, h, i, d) * load(shape, buffers, layout.k, b, g, j, d);
      float value = !band.keeps(i, j) ? -std::numeric_limits<float>::infinity() : dot * shape.scale();
      scores[static_cast<std::size_t>(j)] = value;
      top = std::max(top, value);
    }
    float sum = 0;
    for (auto& x : scores) {
      x = std::isinf(x) ? 0.0f : std::exp(x - top);
      sum += x;
    }
    if (sum == 0) continue; // a query that sees no key
    for (std::int64_t j = 0; j < shape.seq_kv; ++j) {
      float p = scores[static_cast<std::size_t>(j)] / sum;
      if (p == 0) continue;
      for (std::int64_t d = 0; d < shape.dim_v; ++d)
        out[static_cast<std::size_t>(i * shape.dim_v + d)] += p * load(shape, buffers, layout.v, b, g, j, d);
    }
  }
  return out;
}

Comparison compare_output(const SdpaShape& shape, const SdpaLayout& layout,
                          const std::vector<std::vector<std::uint16_t>>& buffers, const std::vector<std::uint16_t>& o) {
  Comparison c;
  c.atol = c.rtol = shape.bf16 ? 2.5e-2 : 5e-3;
  std::vector<std::pair<std::int64_t, std::int64_t>> pairs = {{0, 0}, {shape.batch - 1, shape.heads - 1}};
  if (shape.heads > 2) pairs.emplace_back(0, shape.heads / 2 + 1);
  if (shape.batch > 1) pairs.emplace_back(shape.batch / 2, shape.heads / 3);
  double largest = 0;
  std::vector<std::vector<std::uint16_t>> with_o = buffers;
  with_o.push_back(o);
  for (auto [b, h] : pairs) {
    auto want = reference_head(shape, layout, buffers, b, h);
    for (std::int64_t i = 0; i < shape.seq_q; ++i) {
      for (std::int64_t d = 0; d < shape.dim_v; ++d) {
        float w = want[static_cast<std::size_t>(i * shape.dim_v + d)];
        float got = load(shape, with_o, layout.o, b, h, i, d);
        double diff = std::isfinite(got) ? std::fabs(static_cast<double>(got) - w) : std::numeric_limits<double>::infinity();
        largest = std::max(largest, static_cast<double>(std::fabs(w)));
        if (diff > c.atol + c.rtol * std::fabs(w)) c.ok = false;
        if (diff > c.max_abs_err || (c.worst.empty() && !c.ok)) {
          c.max_abs_err = std::max(c.max_abs_err, diff);
          c.worst = "b" + std::to_string(b) + " h" + std::to_string(h) + " s" + std::to_string(i) + " d" + std::to_string(d) +
                    ": got " + std::to_string(got) + ", want " + std::to_string(w);
        }
      }
    }
  }
  c.max_rel_err = largest > 0 ? c.max_abs_err / largest : c.max_abs_err;
  return c;
}

GradComparison compare_gradients(const SdpaShape& s, const SdpaLayout& l, const std::vector<std::vector<std::uint16_t>>& in,
                                 const TensorView& d_o, const TensorView& dq, const TensorView& dk, const TensorView& dv,
                                 const std::vector<std::vector<std::uint16_t>>& grads) {
  GradComparison c;
  c.tolerance = s.bf16 ? 5e-2 : 1e-2;
  const std::int64_t group = s.heads / s.kv_heads, Sq = s.seq_q, Skv = s.seq_kv, D = s.dim_qk, Dv = s.dim_v;
  const Band band = band_of(s);
  std::vector<std::pair<std::int64_t, std::int64_t>> pairs = {{0, 0}, {s.batch - 1, s.kv_heads - 1}};
  if (pairs[0] == pairs[1] || group > 1) pairs.pop_back(); // a GQA group is already `group` heads of work
  auto at = [&](const std::vector<std::vector<std::uint16_t>>& bufs, const TensorView& v, std::int64_t b, std::int64_t h,
                std::int64_t i, std::int64_t d) { return load(s, bufs, v, b, h, i, d); };
  double worst_rel[3] = {0, 0, 0}, largest[3] = {0, 0, 0}, max_diff[3] = {0, 0, 0};
  const char* names[3] = {"dQ", "dK", "dV"};
  auto note = [&](int which, double want, double got, const std::string& where) {
    largest[which] = std::max(largest[which], std::fabs(want));
    double diff = std::isfinite(got) ? std::fabs(got - want) : std::numeric_limits<double>::infinity();
    if (diff > max_diff[which]) {
      max_diff[which] = diff;
      if (diff >= c.max_abs_err) {
        c.max_abs_err = diff;
        c.worst = std::string(names[which]) + " " + where + ": got " + std::to_string(got) + ", want " + std::to_string(want);
      }
    }
  };
  for (auto [b, g] : pairs) {
    std::vector<double> dk_ref(static_cast<std::size_t>(Skv * D), 0.0), dv_ref(static_cast<std::size_t>(Skv * Dv), 0.0);
    for (std::int64_t h = g * group; h < (g + 1) * group; ++h) {
      std::vector<double> p(static_cast<std::size_t>(Sq * Skv));
      auto o = reference_head(s, l, in, b, h);
      for (std::int64_t i = 0; i < Sq; ++i) {
        double top = -std::numeric_limits<double>::infinity();
        for (std::int64_t j = 0; j < Skv; ++j) {
          double dot = 0;
          for (std::int64_t d = 0; d < D; ++d) dot += at(in, l.q, b, h, i, d) * at(in, l.k, b, g, j, d);
          double v = !band.keeps(i, j) ? -std::numeric_limits<double>::infinity() : dot * s.scale();
          p[static_cast<std::size_t>(i * Skv + j)] = v;
          top = std::max(top, v);
        }
        double sum = 0;
        for (std::int64_t j = 0; j < Skv; ++j) {
          double& x = p[static_cast<std::size_t>(i * Skv + j)];
          x = std::isinf(x) ? 0.0 : std::exp(x - top);
          sum += x;
        }
        for (std::int64_t j = 0; j < Skv; ++j) p[static_cast<std::size_t>(i * Skv + j)] = sum > 0 ? p[static_cast<std::size_t>(i * Skv + j)] / sum : 0.0;
      }
      for (std::int64_t i = 0; i < Sq; ++i) {
        double row = 0;
        for (std::int64_t d = 0; d < Dv; ++d) row += at(grads, d_o, b, h, i, d) * o[static_cast<std::size_t>(i * Dv + d)];
        std::vector<double> dq_row(static_cast<std::size_t>(D), 0.0);
        for (std::int64_t j = 0; j < Skv; ++j) {
          double pij = p[static_cast<std::size_t>(i * Skv + j)];
          if (pij == 0) continue;
          double dp = 0;
          for (std::int64_t d = 0; d < Dv; ++d) dp += at(grads, d_o, b, h, i, d) * at(in, l.v, b, g, j, d);
          double ds = pij * (dp - row) * s.scale();
          for (std::int64_t d = 0; d < D; ++d) {
            dq_row[static_cast<std::size_t>(d)] += ds * at(in, l.k, b, g, j, d);
            dk_ref[static_cast<std::size_t>(j * D + d)] += ds * at(in, l.q, b, h, i, d);
          }
          for (std::int64_t d = 0; d < Dv; ++d) dv_ref[static_cast<std::size_t>(j * Dv + d)] += pij * at(grads, d_o, b, h, i, d);
        }
        for (std::int64_t d = 0; d < D; ++d)
          note(0, dq_row[static_cast<std::size_t>(d)], at(grads, dq, b, h, i, d),
               "b" + std::to_string(b) + " h" + std::to_string(h) + " s" + std::to_string(i) + " d" + std::to_string(d));
      }
    }
    for (std::int64_t j = 0; j < Skv; ++j) {
      std::string where = "b" + std::to_string(b) + " g" + std::to_string(g) + " s" + std::to_string(j);
      for (std::int64_t d = 0; d < D; ++d) note(1, dk_ref[static_cast<std::size_t>(j * D + d)], at(grads, dk, b, g, j, d), where + " d" + std::to_string(d));
      for (std::int64_t d = 0; d < Dv; ++d) note(2, dv_ref[static_cast<std::size_t>(j * Dv + d)], at(grads, dv, b, g, j, d), where + " d" + std::to_string(d));
    }
  }
  for (int k = 0; k < 3; ++k) {
    worst_rel[k] = max_diff[k] / std::max(largest[k], 1e-6);
    c.max_rel_err = std::max(c.max_rel_err, worst_rel[k]);
  }
  c.ok = c.max_rel_err <= c.tolerance;
  return c;
}

} // namespace selftest
