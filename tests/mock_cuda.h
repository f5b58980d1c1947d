/*
** mock_cuda.h — what the mock driver (mock_cuda.c) reports to the tests.
** A test reaches these functions with dlopen() of the same file that
** $CONVTUNE_LIBCUDA names, which gives back the already loaded library.
*/
#ifndef CT_MOCK_CUDA_H
#define CT_MOCK_CUDA_H

#include <stdint.h>

#define CT_MOCK_DEVICE_NAME "Mock H200 (convtune tests)"
#define CT_MOCK_DRIVER_VERSION 13000

/* Calls the runtime made, over the process. */
typedef struct ct_mock_stats {
  long launches;                  /* launches accepted (both entries) */
  long early_launches;            /* of which with programmatic stream
                                     serialization (cuLaunchKernelEx) */
  long module_loads, module_unloads;
  long mem_allocs, mem_frees;     /* cuMemAlloc / cuMemFree */
  long syncs;                     /* every synchronising call */
  long pushes, pops;              /* cuCtxPushCurrent / cuCtxPopCurrent */
  long bad_pops;                  /* pops without a push on that thread */
  long launches_without_context;  /* launches with no context pushed */
  long map_encodes;               /* tensor maps encoded (both kinds) */
  long map_refusals;              /* encodings refused as the driver would */
  long copies;                    /* cuMemcpyDtoDAsync calls */
  int thread_depth;               /* pushes minus pops on the calling thread */
} ct_mock_stats;

/* The last accepted launch. */
typedef struct ct_mock_launch {
  char name[64];
  unsigned grid[3], block[3], smem;
  void *stream;
  uint64_t args[4];               /* x, w, b, y as passed */
  int early;                      /* programmatic stream serialization */
} ct_mock_launch;

typedef void (*ct_mock_counters_fn)(ct_mock_stats *out);
typedef void (*ct_mock_last_launch_fn)(ct_mock_launch *out);

#endif /* CT_MOCK_CUDA_H */
