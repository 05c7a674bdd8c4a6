# Tests of the libraries and python probes (probe-libs). Fake vendor libraries are built here,
# at build time, from tests/fakes/fake_vendor.cpp: no binaries live in git. Each carries the
# SONAME / RUNPATH / RPATH / NEEDED entries of the real file it stands for; the tests copy a
# fixture root to a temporary directory and install these files at the paths that
# tests/fixtures/<node>/fake-libs.txt names. They are linked with -nostdlib: the only NEEDED
# entries are the ones given here, so a fixture root without libc still links them whole (the
# native probe checks every NEEDED entry). SOURCE picks another source (tests/fakes/fake_link.cpp:
# torch, TE, flash-attn and cuBLASLt stand-ins), LINK_FLAGS adds linker options (a version script).
set(NVTE_FAKE_LIBS_DIR ${CMAKE_CURRENT_BINARY_DIR}/fake_libs)
set(NVTE_FAKE_LIB_OUTPUTS "")

function(nvte_fake_lib name)
  cmake_parse_arguments(ARG "RPATH" "SONAME;RUNPATH;SOURCE" "DEFINES;NEEDED;LINK_FLAGS" ${ARGN})
  set(out ${NVTE_FAKE_LIBS_DIR}/${name}.so)
  if(NOT ARG_SOURCE)
    set(ARG_SOURCE fake_vendor.cpp)
  endif()
  set(cmd ${CMAKE_CXX_COMPILER} -shared -fPIC -O0 -nostdlib -o ${out} ${CMAKE_CURRENT_SOURCE_DIR}/fakes/${ARG_SOURCE} ${ARG_LINK_FLAGS})
  if(ARG_SONAME)
    list(APPEND cmd -Wl,-soname,${ARG_SONAME})
  endif()
  foreach(d IN LISTS ARG_DEFINES)
    list(APPEND cmd -D${d})
  endforeach()
  if(ARG_RUNPATH)
    if(ARG_RPATH)
      list(APPEND cmd -Wl,--disable-new-dtags -Wl,-rpath,${ARG_RUNPATH})
    else()
      list(APPEND cmd -Wl,--enable-new-dtags -Wl,-rpath,${ARG_RUNPATH})
    endif()
  endif()
  set(deps "")
  if(ARG_NEEDED)
    list(APPEND cmd -Wl,--no-as-needed)
    foreach(n IN LISTS ARG_NEEDED)
      list(APPEND cmd ${NVTE_FAKE_LIBS_DIR}/${n}.so)
      list(APPEND deps ${NVTE_FAKE_LIBS_DIR}/${n}.so)
    endforeach()
  endif()
  add_custom_command(OUTPUT ${out}
                     COMMAND ${CMAKE_COMMAND} -E make_directory ${NVTE_FAKE_LIBS_DIR}
                     COMMAND ${cmd}
                     DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/fakes/${ARG_SOURCE} ${CMAKE_CURRENT_SOURCE_DIR}/fakes/fake_cublaslt.map ${deps}
                     COMMENT "Building fake vendor library ${name}" VERBATIM)
  set(NVTE_FAKE_LIB_OUTPUTS ${NVTE_FAKE_LIB_OUTPUTS} ${out} PARENT_SCOPE)
endfunction()

nvte_fake_lib(cudnn8 SONAME libcudnn.so.8 DEFINES FAKE_CUDNN_VERSION=8907)
nvte_fake_lib(cudnn9_1 SONAME libcudnn.so.9 DEFINES FAKE_CUDNN_VERSION=90100)
nvte_fake_lib(cudnn9_14 SONAME libcudnn.so.9 DEFINES FAKE_CUDNN_VERSION=91400)
nvte_fake_lib(cudnn9_19 SONAME libcudnn.so.9 DEFINES FAKE_CUDNN_VERSION=91900)
nvte_fake_lib(nccl2 SONAME libnccl.so.2 DEFINES FAKE_NCCL_VERSION=22809 FAKE_STRING=1)
nvte_fake_lib(nvrtc12 SONAME libnvrtc.so.12 DEFINES FAKE_NVRTC_MAJOR=12 FAKE_NVRTC_MINOR=4 FAKE_STRING=3)
nvte_fake_lib(nvrtc13 SONAME libnvrtc.so.13 DEFINES FAKE_NVRTC_MAJOR=13 FAKE_NVRTC_MINOR=0 FAKE_STRING=2)
nvte_fake_lib(nvrtc_builtins13 SONAME libnvrtc-builtins.so.13.0)
nvte_fake_lib(cudart12 SONAME libcudart.so.12 DEFINES FAKE_CUDART_VERSION=12040)
nvte_fake_lib(cudart13 SONAME libcudart.so.13 DEFINES FAKE_CUDART_VERSION=13000)
nvte_fake_lib(libcuda SONAME libcuda.so.1)
# cuBLAS 13.0 (the nvidia-cublas wheel of torch cu130) and 13.1 (the CUDA 13.0.2 toolkit's);
# libcublas needs its cuBLASLt, as the real one does.
nvte_fake_lib(cublaslt13_0 SONAME libcublasLt.so.13 DEFINES FAKE_CUBLASLT_VERSION=130000)
nvte_fake_lib(cublaslt13_1 SONAME libcublasLt.so.13 DEFINES FAKE_CUBLASLT_VERSION=130100)
nvte_fake_lib(cublas13_0 SONAME libcublas.so.13 RUNPATH "$ORIGIN" NEEDED cublaslt13_0
              DEFINES FAKE_CUBLAS_MAJOR=13 FAKE_CUBLAS_MINOR=0 FAKE_CUBLAS_PATCH=0)
nvte_fake_lib(cublas13_1 SONAME libcublas.so.13 RUNPATH "$ORIGIN" NEEDED cublaslt13_1
              DEFINES FAKE_CUBLAS_MAJOR=13 FAKE_CUBLAS_MINOR=1 FAKE_CUBLAS_PATCH=0)
# A library with no version source but its version call: the "loaded" path.
nvte_fake_lib(cudnn9_bare SONAME libcudnn.so.9 DEFINES FAKE_CUDNN_VERSION=91000)
# torch 2.3.0+cu121: cuDNN 8 era; RUNPATH into the pip wheels like the real libtorch_cuda.so.
nvte_fake_lib(torch_cuda_cu121 SONAME libtorch_cuda.so
              RUNPATH "$ORIGIN/../../nvidia/cudnn/lib:$ORIGIN/../../nvidia/cuda_runtime/lib:$ORIGIN/../../nvidia/nccl/lib:$ORIGIN"
              NEEDED cudnn8 cudart12 nccl2)
# torch 2.11.0+cu130: cuDNN 9, CUDA 13 wheels under nvidia/cu13/lib.
nvte_fake_lib(torch_cuda_cu130 SONAME libtorch_cuda.so
              RUNPATH "$ORIGIN/../../nvidia/cudnn/lib:$ORIGIN/../../nvidia/nccl/lib:$ORIGIN/../../nvidia/cu13/lib:$ORIGIN"
              NEEDED cudnn9_19 cudart13 nccl2 cublas13_0 cublaslt13_0)
nvte_fake_lib(caffe2_nvrtc_cu130 SONAME libcaffe2_nvrtc.so RUNPATH "$ORIGIN/../../nvidia/cu13/lib:$ORIGIN" NEEDED nvrtc13)
# TE's core library as a source build makes it: no RUNPATH.
nvte_fake_lib(te_core_cu12 SONAME libtransformer_engine.so NEEDED cudnn9_1 cudart12)
nvte_fake_lib(te_core_cu13 SONAME libtransformer_engine.so NEEDED cudnn9_19 cudart13 cublas13_1 cublaslt13_1)
# Loader-order probes: the same NEEDED with an old-style RPATH, and with a RUNPATH.
nvte_fake_lib(consumer_rpath SONAME libconsumer.so RUNPATH "$ORIGIN/rpath_dir" RPATH NEEDED cudnn9_14)
nvte_fake_lib(consumer_runpath SONAME libconsumer.so RUNPATH "$ORIGIN/runpath_dir" NEEDED cudnn9_14)

# The native probe's link checks (fake_link.cpp): torch 2.11's libc10 / libc10_cuda and an
# older torch's, whose c10::cuda::SetDevice took an int (flash-attn #931, #966); extensions built
# against each; libcublasLt.so.13 before and after cublasLtGroupedMatrixLayoutInit_internal
# (TE #2504), with the real library's version node; TE's core library needing it.
nvte_fake_lib(c10_new SONAME libc10.so SOURCE fake_link.cpp DEFINES FAKE_C10)
nvte_fake_lib(c10_cuda_new SONAME libc10_cuda.so SOURCE fake_link.cpp DEFINES FAKE_C10_CUDA_NEW NEEDED c10_new)
nvte_fake_lib(c10_cuda_old SONAME libc10_cuda.so SOURCE fake_link.cpp DEFINES FAKE_C10_CUDA_OLD NEEDED c10_new)
nvte_fake_lib(ext_torch211 SOURCE fake_link.cpp DEFINES FAKE_EXT_NEW NEEDED c10_new c10_cuda_new)
nvte_fake_lib(ext_torch26 SOURCE fake_link.cpp DEFINES FAKE_EXT_OLD NEEDED c10_new c10_cuda_old)
# The new torch's extension that forgot libc10_cuda in its NEEDED: SetDevice is in the process
# once another object loaded libc10_cuda RTLD_LOCAL, but not in this one's scope.
nvte_fake_lib(ext_torch211_c10_only SOURCE fake_link.cpp DEFINES FAKE_EXT_NEW NEEDED c10_new)
set(cublaslt_map -Wl,--version-script=${CMAKE_CURRENT_SOURCE_DIR}/fakes/fake_cublaslt.map)
nvte_fake_lib(lt13_no_grouped SONAME libcublasLt.so.13 SOURCE fake_link.cpp DEFINES FAKE_CUBLASLT LINK_FLAGS ${cublaslt_map})
nvte_fake_lib(lt13_grouped SONAME libcublasLt.so.13 SOURCE fake_link.cpp DEFINES FAKE_CUBLASLT FAKE_CUBLASLT_GROUPED
              LINK_FLAGS ${cublaslt_map})
# The same entry points without the version node: ld.so then reports the version, not a symbol.
nvte_fake_lib(lt13_unversioned SONAME libcublasLt.so.13 SOURCE fake_link.cpp DEFINES FAKE_CUBLASLT FAKE_CUBLASLT_GROUPED)
nvte_fake_lib(te_core_grouped SONAME libtransformer_engine.so SOURCE fake_link.cpp DEFINES FAKE_TE_CORE FAKE_CUBLASLT_GROUPED
              NEEDED lt13_grouped cudnn9_19 cudart13)
# A cuDNN sub-library (libcudnn_adv.so.9, ...): only its presence beside libcudnn.so.N matters.
nvte_fake_lib(cudnn_part SOURCE fake_link.cpp)

add_custom_target(nvte_fake_libs ALL DEPENDS ${NVTE_FAKE_LIB_OUTPUTS})

nvte_unit_test(probe_libs_tests
  SOURCES support/node_fixture.cpp support/ld_cache_writer.cpp
          unit/elf_reader_test.cpp unit/ld_cache_test.cpp unit/loader_model_test.cpp unit/dist_info_test.cpp
          unit/library_version_test.cpp unit/te_load_order_test.cpp unit/python_probe_test.cpp unit/bytecode_test.cpp
          unit/libraries_probe_test.cpp unit/te_node_rules_test.cpp unit/import_order_test.cpp
          unit/pep440_test.cpp unit/requirements_test.cpp unit/cublas_probe_test.cpp
          unit/native_link_test.cpp unit/untrusted_tree_test.cpp
  LIBS nvte_probe nvte_rules)
add_dependencies(probe_libs_tests nvte_fake_libs)
target_include_directories(probe_libs_tests PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_compile_definitions(probe_libs_tests PRIVATE
  NVTE_FAKE_LIBS_DIR="${NVTE_FAKE_LIBS_DIR}" NVTE_FIXTURES_DIR="${CMAKE_CURRENT_SOURCE_DIR}/fixtures"
  NVTE_RULES_DIR="${CMAKE_SOURCE_DIR}/rules")
