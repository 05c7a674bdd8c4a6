// SdpaGraph's side of the kernel cache (kernel_cache.hpp): the graph's description (the key's
// "graph"), an engine configuration's identity (its engine and knob choices), and an execution
// plan to and from its JSON representation. cuDNN serializes the plans of runtime-compiled
// engines, the compiled kernels included (CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION, read
// as CUDNN_TYPE_CHAR: the size first, then the text); a plan is rebuilt by setting that text and
// a handle on a new plan descriptor and finalizing it, which needs the same GPU and, cuDNN
// promises no more, the same cuDNN: both are in the key.
#include "selftest/sdpa_graph.hpp"

#include <algorithm>

namespace selftest {

namespace c = gpuapi::cudnn;
using gpuapi::CudnnDescriptor;

namespace {

// The bytes of one element of an attribute's value type, for the description; 0: not described
// by value (descriptors by number, handles and pointers not at all).
std::size_t element_bytes(int type) {
  switch (type) {
  case c::k_type_int64:
  case 5: // CUDNN_TYPE_DOUBLE
    return 8;
  case c::k_type_boolean: return sizeof(bool);
  case c::k_type_handle:
  case c::k_type_void_ptr:
  case c::k_type_backend_descriptor: return 0;
  default: return 4; // float, int32 and the enums
  }
}

void append_hex(std::string& out, const void* data, std::size_t bytes) {
  static const char digits[] = "0123456789abcdef";
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < bytes; ++i) {
    out += digits[p[i] >> 4];
    out += digits[p[i] & 0xf];
  }
}

} // namespace

CacheKey plan_key(const PlanKeyInputs& in) {
  CacheKey key;
  key.add("graph_builder", "nvte-doctor sdpa_graph (backend API)");
  key.add("shape", in.shape);
  key.add("cudnn", in.cudnn_files + " version " + std::to_string(in.cudnn_version) + " cudart " + std::to_string(in.cudart_version));
  key.add("nvrtc", in.nvrtc);
  key.add("driver", std::to_string(in.driver_version) + " " + in.driver_files);
  key.add("gpu", in.gpu_name + " sm " + std::to_string(in.sm) + " uuid " + (in.gpu_uuid.empty() ? "unknown" : in.gpu_uuid));
  return key;
}

CacheKey plan_config_key(CacheKey base, std::string_view graph_description, std::string_view engine_config) {
  base.add("graph", digest(graph_description));
  base.add("engine_config", engine_config);
  return base;
}

void SdpaGraph::describe(char what, CudnnDescriptor d, int attribute, int type, std::int64_t count, const void* value) {
  if (m_graph) return; // the operations are built: the description is complete
  if (what == 'c') {
    m_numbers[d] = m_numbers.size();
    m_description += "c" + std::to_string(m_numbers[d]) + " type " + std::to_string(attribute) + "\n";
    return;
  }
  auto number = m_numbers.find(d);
  std::string line = std::string(1, what) + (number == m_numbers.end() ? std::string("?") : std::to_string(number->second));
  if (what == 's') {
    line += " attr " + std::to_string(attribute) + " type " + std::to_string(type) + " n " + std::to_string(count) + " ";
    if (type == c::k_type_backend_descriptor && value) {
      const auto* list = static_cast<const CudnnDescriptor*>(value);
      for (std::int64_t i = 0; i < count; ++i) {
        auto n = m_numbers.find(list[i]);
        line += (i ? "," : "") + (n == m_numbers.end() ? std::string("?") : std::to_string(n->second));
      }
    } else if (value && element_bytes(type) > 0 && count > 0) {
      append_hex(line, value, element_bytes(type) * static_cast<std::size_t>(count));
    } else {
      line += "-";
    }
  }
  m_description += line + "\n";
}

std::string SdpaGraph::config_identity(CudnnDescriptor config) {
  EngineInfo engine = engine_of(config);
  std::string out = "engine " + std::to_string(engine.index) + (engine.runtime_compiled ? " runtime-compiled" : "");
  // The knob choices (tile sizes, splits...): descriptors made first, then filled.
  constexpr std::int64_t k_max_knobs = 64;
  std::vector<CudnnDescriptor> knobs;
  for (std::int64_t i = 0; i < k_max_knobs; ++i) {
    auto knob = create(c::k_knob_choice_descriptor);
    if (!knob) return out + " knobs unknown";
    knobs.push_back(*knob);
  }
  const auto& api = m_cudnn.api();
  std::int64_t count = 0;
  if (api.cudnnBackendGetAttribute(config, c::k_attr_enginecfg_knob_choices, c::k_type_backend_descriptor, k_max_knobs, &count,
                                   knobs.data()) != 0)
    return out + " knobs unknown";
  out += " knobs";
  for (std::int64_t i = 0; i < std::min(count, k_max_knobs); ++i) {
    std::int32_t type = -1;
    std::int64_t value = -1, got = 0;
    api.cudnnBackendGetAttribute(knobs[static_cast<std::size_t>(i)], c::k_attr_knob_choice_knob_type, c::k_type_knob_type, 1, &got, &type);
    api.cudnnBackendGetAttribute(knobs[static_cast<std::size_t>(i)], c::k_attr_knob_choice_knob_value, c::k_type_int64, 1, &got, &value);
    out += (i ? "," : " ") + std::to_string(type) + "=" + std::to_string(value);
  }
  return out;
}

util::Result<CudnnDescriptor> SdpaGraph::finalize_plan(gpuapi::CudnnHandle handle, CudnnDescriptor config) {
  CudnnDescriptor plan = NVTE_TRY(create(c::k_execution_plan_descriptor));
  NVTE_TRY_VOID(set(plan, c::k_attr_execution_plan_handle, c::k_type_handle, 1, &handle));
  NVTE_TRY_VOID(set(plan, c::k_attr_execution_plan_engine_config, c::k_type_backend_descriptor, 1, &config));
  NVTE_TRY_VOID(finalize(plan, "execution plan"));
  return plan;
}

util::Result<CudnnDescriptor> SdpaGraph::restore_plan(gpuapi::CudnnHandle handle, std::string_view json, std::int64_t expected_engine) {
  CudnnDescriptor plan = NVTE_TRY(create(c::k_execution_plan_descriptor));
  NVTE_TRY_VOID(
      set(plan, c::k_attr_execution_plan_json_representation, c::k_type_char, static_cast<std::int64_t>(json.size()), json.data()));
  NVTE_TRY_VOID(set(plan, c::k_attr_execution_plan_handle, c::k_type_handle, 1, &handle));
  NVTE_TRY_VOID(finalize(plan, "execution plan from its JSON representation"));
  // The plan's own engine must be the configuration's: the key said so, the plan must too. (Where
  // cuDNN cannot say which engine a restored plan runs, the key's word stands.)
  CudnnDescriptor config = NVTE_TRY(create(c::k_enginecfg_descriptor));
  std::int64_t got = 0;
  if (m_cudnn.api().cudnnBackendGetAttribute(plan, c::k_attr_execution_plan_engine_config, c::k_type_backend_descriptor, 1, &got,
                                             &config) == 0) {
    if (EngineInfo engine = engine_of(config); engine.index >= 0 && engine.index != expected_engine)
      return util::make_error(util::ErrorKind::invalid, "the restored plan runs engine " + std::to_string(engine.index) + ", not engine " +
                                                            std::to_string(expected_engine));
  }
  return plan;
}

util::Result<std::string> SdpaGraph::plan_json(CudnnDescriptor plan) {
  const auto& api = m_cudnn.api();
  std::int64_t size = 0;
  if (auto rc = api.cudnnBackendGetAttribute(plan, c::k_attr_execution_plan_json_representation, c::k_type_char, 0, &size, nullptr);
      rc != 0)
    return util::make_error(util::ErrorKind::driver_error, "the plan's JSON representation: " + m_cudnn.describe(rc));
  if (size <= 0) return util::make_error(util::ErrorKind::invalid, "cuDNN gave the plan an empty JSON representation");
  std::string json(static_cast<std::size_t>(size), '\0');
  if (auto rc = api.cudnnBackendGetAttribute(plan, c::k_attr_execution_plan_json_representation, c::k_type_char, size, &size, json.data());
      rc != 0)
    return util::make_error(util::ErrorKind::driver_error, "the plan's JSON representation: " + m_cudnn.describe(rc));
  // Kept byte for byte as cuDNN gave it (a terminating NUL included, if it counts one), and set
  // back the same way, as cudnn-frontend's serialization does.
  json.resize(static_cast<std::size_t>(std::clamp<std::int64_t>(size, 0, static_cast<std::int64_t>(json.size()))));
  return json;
}

} // namespace selftest
