/*
** ct_rt.h — runtime internals shared by the library and the tuner: a
** variant's loaded module and its launcher.
*/
#ifndef CT_RT_H
#define CT_RT_H

#include <cuda.h>

#include "convtune.h"
#include "ct_gen.h"

/* A tensor-map variant's maps, encoded for the buffer addresses they
** describe: a small cache per loaded kernel (runtime.c). */
struct ct_rt_maps;

/* A variant loaded into the current context, ready to launch. */
typedef struct ct_rt_kernel {
  ct_gen_variant variant;                 /* what runs: launches, workspace */
  CUmodule module;                        /* owns the functions */
  CUfunction fn[CT_GEN_MAX_KERNELS];      /* one per variant launch */
  CUmemoryPool pool;                      /* workspaces, NULL when none */
  struct ct_rt_maps *maps;                /* tensor-map variants; else NULL */
} ct_rt_kernel;

/* Loads a cubin for variant v into the current context, resolves each
** launch's function, raises its dynamic shared-memory limit where the plan
** needs more than 48 KB, and for a variant with a workspace creates the
** memory pool its launches take workspaces from.  On failure *k is left
** empty (safe to unload) and *cr holds the failing CUresult.
** Returns CT_OK or CT_ERR_CUDA. */
ct_status ct_rt_kernel_load(const ct_gen_variant *v, const void *cubin,
                            ct_rt_kernel *k, CUresult *cr);

/* Queues every launch of k on stream.  b may be 0 when the problem has no
** bias.  A variant with a workspace gets one of its own for this call,
** stream-ordered: allocated from k's pool on stream before the first launch
** and freed on stream after the last (cuMemAllocFromPoolAsync,
** cuMemFreeAsync), so calls on several streams at once never share one,
** and after the first call of a size the pool hands the same memory out
** again without asking the driver for more (its release threshold is
** unlimited).  A stream capture records the pair as graph memory nodes
** (the Driver API's documented behaviour; the tests do not capture a
** variant with a workspace).
** A tensor-map variant's kernels get variant.kargs and its maps, encoded
** (cuTensorMapEncodeTiled / cuTensorMapEncodeIm2col) for the addresses
** of the buffers they describe and kept in k's cache, which holds the last
** CT_RT_MAP_SLOTS address sets: a call with addresses seen before encodes
** nothing and takes no lock (the pool hands a stream the same workspace
** again, so a warm call hits); a miss encodes under k's cache lock.
** Returns CT_OK, CT_ERR_INVALID_ARG (nothing launched, *cr CUDA_SUCCESS)
** when a map reads a buffer whose address is not 16-byte aligned, or
** CT_ERR_CUDA with *cr set. */
ct_status ct_rt_kernel_launch(const ct_rt_kernel *k, CUdeviceptr x,
                              CUdeviceptr w, CUdeviceptr b, CUdeviceptr y,
                              CUstream stream, CUresult *cr);

/* Packed weights (ct_weights_pack).  ct_rt_kernel_packed_bytes: the size
** of k's packed weights, its wpack region, or for a variant without one
** (it reads w itself, or its kernels read the packed weights by pointer)
** w_bytes, a plain copy of w.  ct_rt_kernel_pack queues their making from
** w into `packed` (that many bytes, 16-byte aligned): k's weight pass, or
** the copy; and encodes into pmaps the maps that read them, for that
** buffer (the wpack region's, or a copy's maps over w; the others zero).
** ct_rt_kernel_launch_packed is ct_rt_kernel_launch with them: k's
** launches but its weight pass, `packed` as w, those maps taken from
** pmaps (k's cache holds the others, so that any number of packed weights
** share its slots), a workspace that stops where the wpack region starts
** when that region ends it.  Both return CT_OK or
** CT_ERR_CUDA with *cr set (launch_packed: also ct_rt_kernel_launch's
** CT_ERR_INVALID_ARG). */
size_t ct_rt_kernel_packed_bytes(const ct_rt_kernel *k, size_t w_bytes);
ct_status ct_rt_kernel_pack(const ct_rt_kernel *k, CUdeviceptr w, size_t w_bytes,
                            CUdeviceptr packed, CUstream stream,
                            CUtensorMap pmaps[CT_GEN_MAX_MAPS], CUresult *cr);
ct_status ct_rt_kernel_launch_packed(const ct_rt_kernel *k, CUdeviceptr x, CUdeviceptr packed,
                                     const CUtensorMap *pmaps, CUdeviceptr b, CUdeviceptr y,
                                     CUstream stream, CUresult *cr);

#define CT_RT_MAP_SLOTS 8

/* Encodes and launches nothing: the number of map encodings k's cache has
** made so far (tests). */
unsigned long ct_rt_kernel_map_encodes(const ct_rt_kernel *k);

/* Destroys the pool (memory still in use by queued work is released when
** that work is done) and unloads the module; an empty k is a no-op. */
void ct_rt_kernel_unload(ct_rt_kernel *k);

/* The device description the tuning database keys entries on. */
struct ct_cache_device;
ct_status ct_rt_device_describe(CUdevice dev, const ct_gen_limits *lim,
                                struct ct_cache_device *out);

#endif /* CT_RT_H */
