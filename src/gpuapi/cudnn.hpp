// cuDNN (libcudnn), bound at run time, for its graph ("backend") API.
//
// The ABI, declared here instead of including cudnn_graph.h (cuDNN 9; the same calls exist in
// cuDNN 8's cudnn_backend.h): every call returns cudnnStatus_t (an int; 0 is success). A
// descriptor is an opaque pointer created for a type (CUDNN_BACKEND_*_DESCRIPTOR), given
// attributes by name with a value type and an element count, then finalized; graphs, engine
// configurations, execution plans and variant packs are all such descriptors. The numbers below
// are the values of cudnn_graph.h's enums, which cuDNN keeps stable across releases.
//
// cuDNN 9 is split: libcudnn.so.9 is a shim that dlopens libcudnn_graph.so.9, the engines and the
// heuristics by SONAME. Loading a copy by path therefore first loads those siblings from the same
// directory, so that the shim's later lookups by SONAME find them and not another installation's.
#pragma once

#include "gpuapi/loader.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace gpuapi {

using CudnnStatus = int;
using CudnnHandle = void*;
using CudnnDescriptor = void*;

namespace cudnn {
// cudnnBackendDescriptorType_t
inline constexpr int k_pointwise_descriptor = 0;
inline constexpr int k_engine_descriptor = 2;
inline constexpr int k_enginecfg_descriptor = 3;
inline constexpr int k_knob_choice_descriptor = 7;
inline constexpr int k_engineheur_descriptor = 4;
inline constexpr int k_execution_plan_descriptor = 5;
inline constexpr int k_operation_pointwise_descriptor = 13;
inline constexpr int k_operationgraph_descriptor = 15;
inline constexpr int k_variant_pack_descriptor = 16;
inline constexpr int k_tensor_descriptor = 17;
inline constexpr int k_matmul_descriptor = 18;
inline constexpr int k_operation_matmul_descriptor = 19;
inline constexpr int k_reduction_descriptor = 21;
inline constexpr int k_operation_reduction_descriptor = 22;
inline constexpr int k_operation_reshape_descriptor = 31;
// cudnnBackendAttributeType_t
inline constexpr int k_type_handle = 0;
inline constexpr int k_type_data_type = 1;
inline constexpr int k_type_boolean = 2;
inline constexpr int k_type_int64 = 3;
inline constexpr int k_type_float = 4;
inline constexpr int k_type_void_ptr = 6;
inline constexpr int k_type_heur_mode = 8;
inline constexpr int k_type_knob_type = 9;
inline constexpr int k_type_pointwise_mode = 14;
inline constexpr int k_type_backend_descriptor = 15;
inline constexpr int k_type_reduction_operator_type = 18;
inline constexpr int k_type_behavior_note = 19;
inline constexpr int k_type_char = 24;
// cudnnDataType_t
inline constexpr int k_data_float = 0;
inline constexpr int k_data_half = 2;
inline constexpr int k_data_int32 = 4;
inline constexpr int k_data_bfloat16 = 9;
inline constexpr int k_data_boolean = 11;
// cudnnPointwiseMode_t
inline constexpr int k_pw_add = 0;
inline constexpr int k_pw_mul = 1;
inline constexpr int k_pw_div = 6;
inline constexpr int k_pw_sub = 9;
inline constexpr int k_pw_exp = 13;
inline constexpr int k_pw_log = 15;
inline constexpr int k_pw_cmp_gt = 302;
inline constexpr int k_pw_cmp_ge = 303;
inline constexpr int k_pw_gen_index = 501;
inline constexpr int k_pw_binary_select = 601;
inline constexpr int k_pw_identity = 21;
// cudnnBackendBehaviorNote_t
inline constexpr int k_behavior_note_runtime_compilation = 0;
// cudnnReduceTensorOp_t
inline constexpr int k_reduce_add = 0;
inline constexpr int k_reduce_max = 3;
// cudnnBackendHeurMode_t
inline constexpr int k_heur_mode_instant = 0;
inline constexpr int k_heur_mode_a = 3;
inline constexpr int k_heur_mode_fallback = 2;
// cudnnBackendAttributeName_t
inline constexpr int k_attr_pointwise_mode = 0;
inline constexpr int k_attr_pointwise_math_prec = 1;
inline constexpr int k_attr_pointwise_axis = 9;
inline constexpr int k_attr_engineheur_mode = 200;
inline constexpr int k_attr_engineheur_operation_graph = 201;
inline constexpr int k_attr_engineheur_results = 202;
inline constexpr int k_attr_enginecfg_engine = 300;
inline constexpr int k_attr_enginecfg_knob_choices = 302;
inline constexpr int k_attr_execution_plan_handle = 400;
inline constexpr int k_attr_execution_plan_engine_config = 401;
inline constexpr int k_attr_execution_plan_workspace_size = 402;
inline constexpr int k_attr_execution_plan_json_representation = 405; // cuDNN 8.4+: runtime-compiled engines' plans
inline constexpr int k_attr_knob_choice_knob_type = 600;
inline constexpr int k_attr_knob_choice_knob_value = 601;
inline constexpr int k_attr_operation_pointwise_pw_descriptor = 750;
inline constexpr int k_attr_operation_pointwise_xdesc = 751;
inline constexpr int k_attr_operation_pointwise_bdesc = 752;
inline constexpr int k_attr_operation_pointwise_ydesc = 753;
inline constexpr int k_attr_operation_pointwise_tdesc = 758;
inline constexpr int k_attr_operationgraph_handle = 800;
inline constexpr int k_attr_operationgraph_ops = 801;
inline constexpr int k_attr_tensor_byte_alignment = 900;
inline constexpr int k_attr_tensor_data_type = 901;
inline constexpr int k_attr_tensor_dimensions = 902;
inline constexpr int k_attr_tensor_strides = 903;
inline constexpr int k_attr_tensor_unique_id = 906;
inline constexpr int k_attr_tensor_is_virtual = 907;
inline constexpr int k_attr_tensor_is_by_value = 908;
inline constexpr int k_attr_variant_pack_unique_ids = 1000;
inline constexpr int k_attr_variant_pack_data_pointers = 1001;
inline constexpr int k_attr_variant_pack_workspace = 1003;
inline constexpr int k_attr_matmul_comp_type = 1500;
inline constexpr int k_attr_operation_matmul_adesc = 1520;
inline constexpr int k_attr_operation_matmul_bdesc = 1521;
inline constexpr int k_attr_operation_matmul_cdesc = 1522;
inline constexpr int k_attr_operation_matmul_desc = 1523;
inline constexpr int k_attr_reduction_operator = 1600;
inline constexpr int k_attr_reduction_comp_type = 1601;
inline constexpr int k_attr_operation_reduction_xdesc = 1610;
inline constexpr int k_attr_operation_reduction_ydesc = 1611;
inline constexpr int k_attr_operation_reduction_desc = 1612;
inline constexpr int k_attr_engine_global_index = 1301;
inline constexpr int k_attr_engine_behavior_note = 1305;
inline constexpr int k_attr_operation_reshape_xdesc = 2200;
inline constexpr int k_attr_operation_reshape_ydesc = 2201;
} // namespace cudnn

#define NVTE_CUDNN_ENTRY_POINTS(X)                                                                       \
  X(cudnnGetVersion, std::size_t, ())                                                                  \
  X(cudnnGetCudartVersion, std::size_t, ())                                                            \
  X(cudnnGetErrorString, const char*, (CudnnStatus))                                                   \
  X(cudnnGetLastErrorString, void, (char*, std::size_t))                                               \
  X(cudnnCreate, CudnnStatus, (CudnnHandle*))                                                          \
  X(cudnnDestroy, CudnnStatus, (CudnnHandle))                                                          \
  X(cudnnBackendCreateDescriptor, CudnnStatus, (int, CudnnDescriptor*))                                \
  X(cudnnBackendDestroyDescriptor, CudnnStatus, (CudnnDescriptor))                                     \
  X(cudnnBackendFinalize, CudnnStatus, (CudnnDescriptor))                                              \
  X(cudnnBackendSetAttribute, CudnnStatus, (CudnnDescriptor, int, int, std::int64_t, const void*))     \
  X(cudnnBackendGetAttribute, CudnnStatus, (CudnnDescriptor, int, int, std::int64_t, std::int64_t*, void*)) \
  X(cudnnBackendExecute, CudnnStatus, (CudnnHandle, CudnnDescriptor, CudnnDescriptor))

struct CudnnApi {
  NVTE_CUDNN_ENTRY_POINTS(NVTE_GPUAPI_DECLARE)
};

inline const std::array<std::string, 3> k_cudnn_sonames = {"libcudnn.so.9", "libcudnn.so.8", "libcudnn.so"};

class Cudnn {
public:
  // Loads the first candidate that loads; for a path, its sibling sub-libraries first (above).
  static util::Result<Cudnn> load(std::span<const std::string> candidates = k_cudnn_sonames);

  const CudnnApi& api() const { return m_api; }
  const std::vector<std::string>& missing() const { return m_missing; }
  std::string path() const { return m_library.loaded_path(); }
  // Paths of the sub-libraries loaded before the shim.
  std::vector<std::string> preloaded() const;

  // cuDNN's text for its most recent failure or rejection (cudnnGetLastErrorString, cuDNN 9), or
  // "" when there is none or this cuDNN lacks the call. Also set when a call succeeds but drops
  // candidates, e.g. heuristics whose engine configurations all fail their support checks.
  std::string last_error() const;
  // "CUDNN_STATUS_NOT_SUPPORTED (3000): <cudnnGetLastErrorString's text>" for a failed call.
  std::string describe(CudnnStatus status) const;

private:
  std::vector<util::DlLibrary> m_siblings;
  util::DlLibrary m_library;
  CudnnApi m_api;
  std::vector<std::string> m_missing;
};

} // namespace gpuapi
