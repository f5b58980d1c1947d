/*
** drv.c — loading the CUDA Driver API at run time (see ct_drv.h).
*/
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ct_drv.h"
#include "ct_gen.h"

ct_drv_api ct_drv;

static pthread_once_t drv_once = PTHREAD_ONCE_INIT;
static ct_status drv_status = CT_ERR_NO_DRIVER;
static char drv_why[512] = "driver not loaded";

#define CT_STR_(x) #x
#define CT_STR(x) CT_STR_(x)

static void drv_load_once(void) {
  const char *path = getenv("CONVTUNE_LIBCUDA");
  if (path == NULL || path[0] == '\0') path = "libcuda.so.1";
  void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) {
    const char *e = dlerror();
    snprintf(drv_why, sizeof drv_why,
             "no CUDA driver: cannot load %s (%s); GPU work needs an NVIDIA "
             "GPU and its driver",
             path, e ? e : "unknown error");
    return;
  }
#define CT_DRV_RESOLVE(fn)                                                     \
  {                                                                            \
    void *sym = dlsym(lib, CT_STR(fn));                                        \
    if (sym == NULL) {                                                         \
      snprintf(drv_why, sizeof drv_why,                                        \
               "CUDA driver %s lacks %s: the driver is too old", path,          \
               CT_STR(fn));                                                    \
      return;                                                                  \
    }                                                                          \
    memcpy(&ct_drv.fn, &sym, sizeof sym);                                      \
  }
  CT_DRV_FUNCS(CT_DRV_RESOLVE)
#undef CT_DRV_RESOLVE
  CUresult r = ct_drv.cuInit(0);
  if (r == CUDA_ERROR_NO_DEVICE) {
    drv_status = CT_ERR_NO_DEVICE;
    snprintf(drv_why, sizeof drv_why, "no CUDA device: the driver sees no GPU");
    return;
  }
  if (r != CUDA_SUCCESS) {
    char buf[256];
    snprintf(drv_why, sizeof drv_why, "CUDA driver failed to initialise: %s",
             ct_drv_error(r, buf, sizeof buf));
    return;
  }
  int count = 0;
  r = ct_drv.cuDeviceGetCount(&count);
  if (r != CUDA_SUCCESS || count == 0) {
    drv_status = CT_ERR_NO_DEVICE;
    snprintf(drv_why, sizeof drv_why, "no CUDA device: the driver sees no GPU");
    return;
  }
  drv_status = CT_OK;
  snprintf(drv_why, sizeof drv_why, "CUDA driver loaded from %s", path);
}

ct_status ct_drv_load(const char **why) {
  pthread_once(&drv_once, drv_load_once);
  if (why) *why = drv_why;
  return drv_status;
}

const char *ct_drv_error(CUresult r, char *buf, size_t len) {
  const char *name = NULL, *desc = NULL;
  if (ct_drv.cuGetErrorName) ct_drv.cuGetErrorName(r, &name);
  if (ct_drv.cuGetErrorString) ct_drv.cuGetErrorString(r, &desc);
  snprintf(buf, len, "%s (%d): %s", name ? name : "CUDA error", (int)r,
           desc ? desc : "no description");
  return buf;
}

ct_status ct_drv_limits(CUdevice dev, ct_gen_limits *lim) {
  static const struct {
    CUdevice_attribute attr;
    size_t offset;
  } attrs[] = {
      {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
       offsetof(ct_gen_limits, cc_major)},
      {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
       offsetof(ct_gen_limits, cc_minor)},
      {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
       offsetof(ct_gen_limits, sm_count)},
      {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
       offsetof(ct_gen_limits, max_threads_per_block)},
      {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
       offsetof(ct_gen_limits, max_smem_per_block)},
      {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR,
       offsetof(ct_gen_limits, smem_per_sm)},
      {CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR,
       offsetof(ct_gen_limits, regs_per_sm)},
  };
  memset(lim, 0, sizeof *lim);
  for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++) {
    int v = 0;
    if (ct_drv.cuDeviceGetAttribute(&v, attrs[i].attr, dev) != CUDA_SUCCESS)
      return CT_ERR_CUDA;
    memcpy((char *)lim + attrs[i].offset, &v, sizeof v);
  }
  /* Hopper's wgmma/setmaxnreg live in the arch-specific sm_90a target. */
  snprintf(lim->arch, sizeof lim->arch, "sm_%d%d%s", lim->cc_major,
           lim->cc_minor, lim->cc_major == 9 && lim->cc_minor == 0 ? "a" : "");
  return CT_OK;
}
