/*
** ct_drv.h — the CUDA Driver API, loaded at run time.
**
** libcuda.so.1 comes with the GPU driver, not the toolkit, so convtune
** loads it with dlopen instead of linking it: the library and the CLI then
** start on machines without a driver and can say why GPU work is
** unavailable.  $CONVTUNE_LIBCUDA names another file to load (tests use a
** missing one to stand for a machine without a driver).
**
** Each entry is called through the table: ct_drv.cuInit(0).  cuda.h's
** versioned names (cuMemAlloc -> cuMemAlloc_v2) apply to both the field
** names and the symbols looked up, so calls read like the Driver API.
*/
#ifndef CT_DRV_H
#define CT_DRV_H

#include <cuda.h>

#include "convtune.h"

#define CT_DRV_FUNCS(X)                                                        \
  X(cuInit) X(cuDriverGetVersion) X(cuGetErrorString) X(cuGetErrorName)       \
  X(cuDeviceGetCount) X(cuDeviceGet) X(cuDeviceGetName)                        \
  X(cuDeviceGetAttribute) X(cuDevicePrimaryCtxRetain)                          \
  X(cuDevicePrimaryCtxRelease) X(cuCtxPushCurrent) X(cuCtxPopCurrent)          \
  X(cuCtxSynchronize) X(cuModuleLoadData) X(cuModuleUnload)                    \
  X(cuModuleGetFunction) X(cuFuncSetAttribute) X(cuFuncGetAttribute)           \
  X(cuLaunchKernel) X(cuMemAlloc) X(cuMemFree) X(cuMemcpyHtoD)                 \
  X(cuMemcpyDtoH) X(cuMemsetD32Async) X(cuMemsetD8Async)                       \
  X(cuStreamCreate) X(cuStreamDestroy) X(cuStreamSynchronize)                  \
  X(cuStreamQuery) X(cuEventCreate) X(cuEventDestroy) X(cuEventRecord)         \
  X(cuEventSynchronize) X(cuEventElapsedTime) X(cuCtxGetCurrent)               \
  X(cuStreamGetCtx) X(cuCtxGetDevice) X(cuMemPoolCreate) X(cuMemPoolDestroy)   \
  X(cuMemPoolSetAttribute) X(cuMemAllocFromPoolAsync) X(cuMemFreeAsync)       \
  X(cuMemGetInfo) X(cuTensorMapEncodeTiled) X(cuTensorMapEncodeIm2col)       \
  X(cuMemcpyDtoDAsync) X(cuLaunchKernelEx)

#define CT_DRV_FIELD(fn) __typeof__(&fn) fn;
typedef struct ct_drv_api {
  CT_DRV_FUNCS(CT_DRV_FIELD)
} ct_drv_api;
#undef CT_DRV_FIELD

/* The table; valid once ct_drv_load() returned CT_OK. */
extern ct_drv_api ct_drv;

/* Loads libcuda.so.1 (or $CONVTUNE_LIBCUDA), resolves every entry and calls
** cuInit(0), once per process (thread-safe).  Returns CT_OK,
** CT_ERR_NO_DRIVER (library missing, entry missing, or cuInit failed) or
** CT_ERR_NO_DEVICE (cuInit reports no device); the same result and message
** on every later call.  *why (if not NULL) receives a static message. */
ct_status ct_drv_load(const char **why);

/* "CUDA_ERROR_NAME: description" for a CUresult, in buf. */
const char *ct_drv_error(CUresult r, char *buf, size_t len);

/* Device limits for the generator, read off device `dev` (the generator's
** ct_gen_limits; arch is "sm_XY" with an "a" suffix on 9.0).  Returns CT_OK
** or CT_ERR_CUDA. */
struct ct_gen_limits;
ct_status ct_drv_limits(CUdevice dev, struct ct_gen_limits *lim);

#endif /* CT_DRV_H */
