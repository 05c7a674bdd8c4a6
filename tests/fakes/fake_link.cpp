// Stand-ins for the shared objects whose link the native probe checks, compiled many times by
// tests/probe_libs.cmake (with -nostdlib, so the only NEEDED entries are the ones a test gives):
// torch's libc10 / libc10_cuda of two releases that differ in one signature, TE's and
// flash-attn's extensions built against either, and libcublasLt before and after an entry point
// was added. Only the C++ names matter (their mangling is what ld.so looks up), never the code.
//
// FAKE_C10            libc10.so: c10::warn(c10::SourceLocation const&)
// FAKE_C10_CUDA_NEW   libc10_cuda.so of the installed torch: c10::cuda::SetDevice(signed char)
// FAKE_C10_CUDA_OLD   libc10_cuda.so of an older torch: c10::cuda::SetDevice(int)
// FAKE_EXT_NEW / _OLD an extension calling c10::warn and the SetDevice of that torch
// FAKE_CUBLASLT       cublasLtCreate; with FAKE_CUBLASLT_GROUPED also the newer entry point
// FAKE_TE_CORE        calls cublasLtCreate; with FAKE_CUBLASLT_GROUPED the newer one too
namespace c10 {
struct SourceLocation {
  const char* file;
  int line;
};
void warn(const SourceLocation& where);
namespace cuda {
void SetDevice(signed char device);
void SetDevice(int device);
} // namespace cuda
} // namespace c10

extern "C" {
int cublasLtCreate(void** handle);
int cublasLtGroupedMatrixLayoutInit_internal(void* layout, int kind);
}

#ifdef FAKE_C10
void c10::warn(const SourceLocation&) {}
#endif
#ifdef FAKE_C10_CUDA_NEW
void c10::cuda::SetDevice(signed char) {}
#endif
#ifdef FAKE_C10_CUDA_OLD
void c10::cuda::SetDevice(int) {}
#endif

#if defined(FAKE_EXT_NEW) || defined(FAKE_EXT_OLD)
extern "C" int fake_extension_init() {
  c10::warn(c10::SourceLocation{"ext", 1});
#ifdef FAKE_EXT_NEW
  c10::cuda::SetDevice(static_cast<signed char>(0));
#else
  c10::cuda::SetDevice(0);
#endif
  return 0;
}
#endif

#ifdef FAKE_CUBLASLT
extern "C" int cublasLtCreate(void** handle) {
  *handle = nullptr;
  return 0;
}
#ifdef FAKE_CUBLASLT_GROUPED
extern "C" int cublasLtGroupedMatrixLayoutInit_internal(void*, int) { return 0; }
#endif
#endif

#ifdef FAKE_TE_CORE
extern "C" int nvte_fake_gemm() {
  void* handle = nullptr;
  int status = cublasLtCreate(&handle);
#ifdef FAKE_CUBLASLT_GROUPED
  status += cublasLtGroupedMatrixLayoutInit_internal(handle, 0);
#endif
  return status;
}
#endif
