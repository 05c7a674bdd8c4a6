// The cuDNN enum values the doctor declares itself (gpuapi/cudnn.hpp: it binds cuDNN at run time
// and must build without cuDNN's headers) against cuDNN's own cudnn_graph.h, where one is
// installed. A wrong value does not fail to compile: it builds a different graph (FLOOR for LOG
// once cost the self-test every execution plan), so each value is checked by name here.
#include "gpuapi/cudnn.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

namespace {

namespace c = gpuapi::cudnn;

std::string header_path() {
  if (const char* env = std::getenv("NVTE_TEST_CUDNN_GRAPH_H")) return env;
  return "/usr/local/cuda/include/cudnn_graph.h";
}

// NAME = value pairs of the header's enums, one per line ("NAME [CUDNN_DEPRECATED_ENUM] = 42,").
std::map<std::string, long> header_enums(const std::string& text) {
  std::map<std::string, long> values;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::string name, word;
    if (!(words >> name) || !name.starts_with("CUDNN_")) continue;
    if (!(words >> word)) continue;
    if (word == "CUDNN_DEPRECATED_ENUM" && !(words >> word)) continue;
    if (word != "=") continue;
    long value = 0;
    if (words >> value) values.emplace(name, value);
  }
  return values;
}

TEST(CudnnAbi, DeclaredValuesMatchCudnnGraphHeader) {
  std::ifstream in(header_path());
  if (!in) GTEST_SKIP() << "no " << header_path() << " (set NVTE_TEST_CUDNN_GRAPH_H to check against another cuDNN)";
  std::stringstream text;
  text << in.rdbuf();
  auto enums = header_enums(text.str());
  ASSERT_GT(enums.size(), 300u) << "cudnn_graph.h parsed to too few enum values";

  const std::map<std::string, int> declared = {
      {"CUDNN_BACKEND_POINTWISE_DESCRIPTOR", c::k_pointwise_descriptor},
      {"CUDNN_BACKEND_ENGINE_DESCRIPTOR", c::k_engine_descriptor},
      {"CUDNN_TYPE_BEHAVIOR_NOTE", c::k_type_behavior_note},
      {"CUDNN_POINTWISE_CMP_GT", c::k_pw_cmp_gt},
      {"CUDNN_ATTR_ENGINECFG_ENGINE", c::k_attr_enginecfg_engine},
      {"CUDNN_ATTR_ENGINE_GLOBAL_INDEX", c::k_attr_engine_global_index},
      {"CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE", c::k_attr_engine_behavior_note},
      {"CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION", c::k_behavior_note_runtime_compilation},
      {"CUDNN_BACKEND_ENGINECFG_DESCRIPTOR", c::k_enginecfg_descriptor},
      {"CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR", c::k_engineheur_descriptor},
      {"CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR", c::k_execution_plan_descriptor},
      {"CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR", c::k_operation_pointwise_descriptor},
      {"CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR", c::k_operationgraph_descriptor},
      {"CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR", c::k_variant_pack_descriptor},
      {"CUDNN_BACKEND_TENSOR_DESCRIPTOR", c::k_tensor_descriptor},
      {"CUDNN_BACKEND_MATMUL_DESCRIPTOR", c::k_matmul_descriptor},
      {"CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR", c::k_operation_matmul_descriptor},
      {"CUDNN_BACKEND_REDUCTION_DESCRIPTOR", c::k_reduction_descriptor},
      {"CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR", c::k_operation_reduction_descriptor},
      {"CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR", c::k_operation_reshape_descriptor},
      {"CUDNN_TYPE_HANDLE", c::k_type_handle},
      {"CUDNN_TYPE_DATA_TYPE", c::k_type_data_type},
      {"CUDNN_TYPE_BOOLEAN", c::k_type_boolean},
      {"CUDNN_TYPE_INT64", c::k_type_int64},
      {"CUDNN_TYPE_FLOAT", c::k_type_float},
      {"CUDNN_TYPE_VOID_PTR", c::k_type_void_ptr},
      {"CUDNN_TYPE_HEUR_MODE", c::k_type_heur_mode},
      {"CUDNN_TYPE_POINTWISE_MODE", c::k_type_pointwise_mode},
      {"CUDNN_TYPE_BACKEND_DESCRIPTOR", c::k_type_backend_descriptor},
      {"CUDNN_TYPE_REDUCTION_OPERATOR_TYPE", c::k_type_reduction_operator_type},
      {"CUDNN_DATA_FLOAT", c::k_data_float},
      {"CUDNN_DATA_HALF", c::k_data_half},
      {"CUDNN_DATA_INT32", c::k_data_int32},
      {"CUDNN_DATA_BFLOAT16", c::k_data_bfloat16},
      {"CUDNN_DATA_BOOLEAN", c::k_data_boolean},
      {"CUDNN_POINTWISE_ADD", c::k_pw_add},
      {"CUDNN_POINTWISE_MUL", c::k_pw_mul},
      {"CUDNN_POINTWISE_DIV", c::k_pw_div},
      {"CUDNN_POINTWISE_SUB", c::k_pw_sub},
      {"CUDNN_POINTWISE_EXP", c::k_pw_exp},
      {"CUDNN_POINTWISE_LOG", c::k_pw_log},
      {"CUDNN_POINTWISE_CMP_GE", c::k_pw_cmp_ge},
      {"CUDNN_POINTWISE_GEN_INDEX", c::k_pw_gen_index},
      {"CUDNN_POINTWISE_BINARY_SELECT", c::k_pw_binary_select},
      {"CUDNN_POINTWISE_IDENTITY", c::k_pw_identity},
      {"CUDNN_REDUCE_TENSOR_ADD", c::k_reduce_add},
      {"CUDNN_REDUCE_TENSOR_MAX", c::k_reduce_max},
      {"CUDNN_HEUR_MODE_INSTANT", c::k_heur_mode_instant},
      {"CUDNN_HEUR_MODE_A", c::k_heur_mode_a},
      {"CUDNN_HEUR_MODE_FALLBACK", c::k_heur_mode_fallback},
      {"CUDNN_ATTR_POINTWISE_MODE", c::k_attr_pointwise_mode},
      {"CUDNN_ATTR_POINTWISE_MATH_PREC", c::k_attr_pointwise_math_prec},
      {"CUDNN_ATTR_POINTWISE_AXIS", c::k_attr_pointwise_axis},
      {"CUDNN_ATTR_ENGINEHEUR_MODE", c::k_attr_engineheur_mode},
      {"CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH", c::k_attr_engineheur_operation_graph},
      {"CUDNN_ATTR_ENGINEHEUR_RESULTS", c::k_attr_engineheur_results},
      {"CUDNN_ATTR_EXECUTION_PLAN_HANDLE", c::k_attr_execution_plan_handle},
      {"CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG", c::k_attr_execution_plan_engine_config},
      {"CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE", c::k_attr_execution_plan_workspace_size},
      {"CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION", c::k_attr_execution_plan_json_representation},
      {"CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR", c::k_knob_choice_descriptor},
      {"CUDNN_TYPE_KNOB_TYPE", c::k_type_knob_type},
      {"CUDNN_TYPE_CHAR", c::k_type_char},
      {"CUDNN_ATTR_ENGINECFG_KNOB_CHOICES", c::k_attr_enginecfg_knob_choices},
      {"CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE", c::k_attr_knob_choice_knob_type},
      {"CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE", c::k_attr_knob_choice_knob_value},
      {"CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR", c::k_attr_operation_pointwise_pw_descriptor},
      {"CUDNN_ATTR_OPERATION_POINTWISE_XDESC", c::k_attr_operation_pointwise_xdesc},
      {"CUDNN_ATTR_OPERATION_POINTWISE_BDESC", c::k_attr_operation_pointwise_bdesc},
      {"CUDNN_ATTR_OPERATION_POINTWISE_YDESC", c::k_attr_operation_pointwise_ydesc},
      {"CUDNN_ATTR_OPERATION_POINTWISE_TDESC", c::k_attr_operation_pointwise_tdesc},
      {"CUDNN_ATTR_OPERATIONGRAPH_HANDLE", c::k_attr_operationgraph_handle},
      {"CUDNN_ATTR_OPERATIONGRAPH_OPS", c::k_attr_operationgraph_ops},
      {"CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT", c::k_attr_tensor_byte_alignment},
      {"CUDNN_ATTR_TENSOR_DATA_TYPE", c::k_attr_tensor_data_type},
      {"CUDNN_ATTR_TENSOR_DIMENSIONS", c::k_attr_tensor_dimensions},
      {"CUDNN_ATTR_TENSOR_STRIDES", c::k_attr_tensor_strides},
      {"CUDNN_ATTR_TENSOR_UNIQUE_ID", c::k_attr_tensor_unique_id},
      {"CUDNN_ATTR_TENSOR_IS_VIRTUAL", c::k_attr_tensor_is_virtual},
      {"CUDNN_ATTR_TENSOR_IS_BY_VALUE", c::k_attr_tensor_is_by_value},
      {"CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS", c::k_attr_variant_pack_unique_ids},
      {"CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS", c::k_attr_variant_pack_data_pointers},
      {"CUDNN_ATTR_VARIANT_PACK_WORKSPACE", c::k_attr_variant_pack_workspace},
      {"CUDNN_ATTR_MATMUL_COMP_TYPE", c::k_attr_matmul_comp_type},
      {"CUDNN_ATTR_OPERATION_MATMUL_ADESC", c::k_attr_operation_matmul_adesc},
      {"CUDNN_ATTR_OPERATION_MATMUL_BDESC", c::k_attr_operation_matmul_bdesc},
      {"CUDNN_ATTR_OPERATION_MATMUL_CDESC", c::k_attr_operation_matmul_cdesc},
      {"CUDNN_ATTR_OPERATION_MATMUL_DESC", c::k_attr_operation_matmul_desc},
      {"CUDNN_ATTR_REDUCTION_OPERATOR", c::k_attr_reduction_operator},
      {"CUDNN_ATTR_REDUCTION_COMP_TYPE", c::k_attr_reduction_comp_type},
      {"CUDNN_ATTR_OPERATION_REDUCTION_XDESC", c::k_attr_operation_reduction_xdesc},
      {"CUDNN_ATTR_OPERATION_REDUCTION_YDESC", c::k_attr_operation_reduction_ydesc},
      {"CUDNN_ATTR_OPERATION_REDUCTION_DESC", c::k_attr_operation_reduction_desc},
      {"CUDNN_ATTR_OPERATION_RESHAPE_XDESC", c::k_attr_operation_reshape_xdesc},
      {"CUDNN_ATTR_OPERATION_RESHAPE_YDESC", c::k_attr_operation_reshape_ydesc},
  };
  for (const auto& [name, value] : declared) {
    auto it = enums.find(name);
    ASSERT_NE(it, enums.end()) << name << " is not in " << header_path();
    EXPECT_EQ(value, it->second) << name << " in gpuapi/cudnn.hpp";
  }
}

} // namespace
