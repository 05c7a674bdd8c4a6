// A stand-in for a vendor library, compiled many times by tests/probe_libs.cmake with different
// SONAMEs, RUNPATHs, NEEDED entries and -D choices: it exports the version entry point a real
// build has (cudnnGetVersion, ncclGetVersion, nvrtcVersion, cudaRuntimeGetVersion, cublasLtGetVersion,
// cublasGetProperty) returning the
// configured numbers, and embeds the version string the real file carries (FAKE_STRING selects
// one), so every version source of the libraries probe can be exercised without NVIDIA files.
#include <cstddef>

extern "C" {

#ifdef FAKE_CUDNN_VERSION
std::size_t cudnnGetVersion() { return FAKE_CUDNN_VERSION; }
#endif

#ifdef FAKE_NCCL_VERSION
int ncclGetVersion(int* version) {
  *version = FAKE_NCCL_VERSION;
  return 0;
}
#endif

#ifdef FAKE_NVRTC_MAJOR
int nvrtcVersion(int* major, int* minor) {
  *major = FAKE_NVRTC_MAJOR;
  *minor = FAKE_NVRTC_MINOR;
  return 0;
}
#endif

#ifdef FAKE_CUDART_VERSION
int cudaRuntimeGetVersion(int* version) {
  *version = FAKE_CUDART_VERSION;
  return 0;
}
#endif

#ifdef FAKE_CUBLASLT_VERSION
std::size_t cublasLtGetVersion() { return FAKE_CUBLASLT_VERSION; }
#endif

#ifdef FAKE_CUBLAS_MAJOR
// cublasGetProperty(libraryPropertyType, int*): MAJOR_VERSION 0, MINOR_VERSION 1, PATCH_LEVEL 2.
int cublasGetProperty(int type, int* value) {
  if (type < 0 || type > 2) return 7; // CUBLAS_STATUS_INVALID_VALUE
  const int parts[] = {FAKE_CUBLAS_MAJOR, FAKE_CUBLAS_MINOR, FAKE_CUBLAS_PATCH};
  *value = parts[type];
  return 0;
}
#endif

#if defined(FAKE_STRING) && FAKE_STRING == 1
__attribute__((used)) const char fake_embedded[] = "NCCL version 2.28.9+cuda13.0";
#elif defined(FAKE_STRING) && FAKE_STRING == 2
__attribute__((used)) const char fake_embedded[] = "Cuda compilation tools, release 13.0, V13.0.88";
#elif defined(FAKE_STRING) && FAKE_STRING == 3
__attribute__((used)) const char fake_embedded[] = "Cuda compilation tools, release 12.4, V12.4.131";
#endif

int fake_vendor_marker() { return 0; }

} // extern "C"
