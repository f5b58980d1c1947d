/*
** ct_rt.h — runtime internals shared by the library and the tuner: a
** variant's loaded module and its launcher.
*/
#ifndef CT_RT_H
#define CT_RT_H

#include <cuda.h>

#include "convtune.h"
#include "ct_gen.h"

/* A variant loaded into the current context, ready to launch. */
typedef struct ct_rt_kernel {
  ct_gen_variant variant;                 /* what runs: launches, workspace */
  CUmodule module;                        /* owns the functions */
  CUfunction fn[CT_GEN_MAX_KERNELS];      /* one per variant launch */
  CUdeviceptr ws;                         /* workspace, 0 when none */
} ct_rt_kernel;

/* Loads a cubin for variant v into the current context, resolves each
** launch's function, raises its dynamic shared-memory limit where the plan
** needs more than 48 KB, and allocates the workspace.  On failure *k is
** left empty (safe to unload) and *cr holds the failing CUresult.
** Returns CT_OK or CT_ERR_CUDA. */
ct_status ct_rt_kernel_load(const ct_gen_variant *v, const void *cubin,
                            ct_rt_kernel *k, CUresult *cr);

/* Queues every launch of k on stream.  b may be 0 when the problem has no
** bias.  Returns CT_OK or CT_ERR_CUDA with *cr set. */
ct_status ct_rt_kernel_launch(const ct_rt_kernel *k, CUdeviceptr x,
                              CUdeviceptr w, CUdeviceptr b, CUdeviceptr y,
                              CUstream stream, CUresult *cr);

/* Frees the workspace and unloads the module; an empty k is a no-op. */
void ct_rt_kernel_unload(ct_rt_kernel *k);

/* The device description the tuning database keys entries on. */
struct ct_cache_device;
ct_status ct_rt_device_describe(CUdevice dev, const ct_gen_limits *lim,
                                struct ct_cache_device *out);

#endif /* CT_RT_H */
