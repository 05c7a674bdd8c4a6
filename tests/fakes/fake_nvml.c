/* A stand-in libnvidia-ml for the probe tests: answers the NVML calls the doctor makes with the
 * values of the reference node (one H100 80GB HBM3 at 0000:00:06.0, driver 580.159.04, CUDA 13.0).
 * Compile-time variants misbehave the way real drivers have been seen to:
 *   FAKE_NVML_HANG       nvmlInit_v2 never returns
 *   FAKE_NVML_CRASH      nvmlDeviceGetCount_v2 dereferences NULL
 *   FAKE_NVML_ABORT      nvmlInit_v2 calls abort() (an assertion inside the driver)
 *   FAKE_NVML_NO_INIT_V2 an NVML from before the _v2 entry points (only nvmlInit)
 *   FAKE_NVML_NO_MIG     lacks nvmlDeviceGetMigMode (an optional entry point)
 *   FAKE_NVML_NO_DRIVER  nvmlInit_v2 fails with NVML_ERROR_DRIVER_NOT_LOADED */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct {
  unsigned long long total, free, used;
} Memory;

typedef struct {
  char bus_id_legacy[16];
  unsigned domain, bus, device, pci_device_id, pci_subsystem_id;
  char bus_id[32];
} PciInfo;

static int g_device; /* the one device handle points here */

static int copy_string(char* out, unsigned length, const char* text) {
  if (strlen(text) + 1 > length) return 7; /* NVML_ERROR_INSUFFICIENT_SIZE */
  strcpy(out, text);
  return 0;
}

const char* nvmlErrorString(int code) {
  switch (code) {
  case 0: return "Success";
  case 3: return "Not Supported";
  case 9: return "Driver Not Loaded";
  default: return "Unknown Error";
  }
}

#ifdef FAKE_NVML_NO_INIT_V2
int nvmlInit(void) { return 0; }
#else
int nvmlInit_v2(void) {
#if defined(FAKE_NVML_HANG)
  for (;;) pause();
#elif defined(FAKE_NVML_NO_DRIVER)
  return 9;
#elif defined(FAKE_NVML_ABORT)
  abort();
#else
  return 0;
#endif
}
#endif

int nvmlShutdown(void) { return 0; }

int nvmlSystemGetDriverVersion(char* version, unsigned length) { return copy_string(version, length, "580.159.04"); }

int nvmlSystemGetCudaDriverVersion_v2(int* version) {
  *version = 13000;
  return 0;
}

int nvmlDeviceGetCount_v2(unsigned* count) {
#ifdef FAKE_NVML_CRASH
  signal(SIGSEGV, SIG_DFL); /* die by the signal even under a sanitizer's handler */
  *(volatile int*)0 = 1;
#endif
  *count = 1;
  return 0;
}

int nvmlDeviceGetHandleByIndex_v2(unsigned index, void** device) {
  if (index != 0) return 2; /* NVML_ERROR_INVALID_ARGUMENT */
  *device = &g_device;
  return 0;
}

int nvmlDeviceGetName(void* device, char* name, unsigned length) {
  (void)device;
  return copy_string(name, length, "NVIDIA H100 80GB HBM3");
}

int nvmlDeviceGetCudaComputeCapability(void* device, int* major, int* minor) {
  (void)device;
  *major = 9;
  *minor = 0;
  return 0;
}

int nvmlDeviceGetMemoryInfo(void* device, Memory* memory) {
  (void)device;
  memory->total = 81559ULL << 20;
  memory->used = 0;
  memory->free = memory->total;
  return 0;
}

int nvmlDeviceGetUUID(void* device, char* uuid, unsigned length) {
  (void)device;
  return copy_string(uuid, length, "GPU-7a0b3c1e-55d2-4c7e-9d3f-2b1a0c9e8f71");
}

#ifndef FAKE_NVML_NO_MIG
int nvmlDeviceGetMigMode(void* device, unsigned* current, unsigned* pending) {
  (void)device;
  *current = 0;
  *pending = 0;
  return 0;
}
#endif

int nvmlDeviceGetPciInfo_v3(void* device, PciInfo* pci) {
  (void)device;
  memset(pci, 0, sizeof *pci);
  strcpy(pci->bus_id_legacy, "0000:00:06.0");
  strcpy(pci->bus_id, "00000000:00:06.0");
  pci->bus = 0;
  pci->device = 6;
  pci->pci_device_id = 0x233010deu;
  pci->pci_subsystem_id = 0x16c110deu;
  return 0;
}
