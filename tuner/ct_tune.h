/*
** ct_tune.h — the tuner: GPU sessions, test data, verification against the
** float64 reference, KernelBench-protocol timing, and the tuning loop.
** Used by the `convtune` CLI and the GPU tests.
*/
#ifndef CT_TUNE_H
#define CT_TUNE_H

#include <stdint.h>
#include <stdio.h>

#include <cuda.h>

#include "convtune.h"
#include "ct_cache.h"
#include "ct_gen.h"
#include "verify.h"

/* ---------------------------------------------------------------------- */
/* GPU sessions                                                            */

/* A device's primary context, current on the opening thread, with a stream
** and the L2-flush buffer of the timing protocol. */
typedef struct ct_tune_gpu {
  int ordinal;              /* CUDA device ordinal */
  CUdevice dev;
  CUcontext ctx;            /* retained primary context */
  CUstream stream;          /* non-blocking stream for all work */
  ct_gen_limits limits;     /* read off the device */
  ct_cache_device device;   /* the database's key for it */
  CUdeviceptr flush;        /* CT_TUNE_FLUSH_BYTES, written before each trial */
} ct_tune_gpu;

/* Bytes written before each timed trial to flush L2 (the protocol's 256 MB). */
#define CT_TUNE_FLUSH_BYTES ((size_t)256 << 20)

/* Opens device `ordinal`.  Returns CT_OK, CT_ERR_NO_DRIVER, CT_ERR_NO_DEVICE,
** CT_ERR_CUDA (message in err). */
ct_status ct_tune_gpu_open(int ordinal, ct_tune_gpu *g, char *err, size_t len);
/* Releases what ct_tune_gpu_open took; a zeroed g is a no-op. */
void ct_tune_gpu_close(ct_tune_gpu *g);

/* ---------------------------------------------------------------------- */
/* Test data and the float64 reference                                     */

typedef struct ct_tune_data {
  ct_problem p;
  uint64_t seed;                   /* the inputs' seed */
  size_t nx, nw, nb, ny;           /* element counts */
  CUdeviceptr x, w, b, y;          /* device tensors; b is 0 without bias */
  float *y_host;                   /* the last output read back */
  double *ref, *abs_sum, *sq_sum;  /* float64 reference figures, host */
} ct_tune_data;

/* Draws inputs like PyTorch's (x uniform [0,1), w and b uniform
** +-1/sqrt(C*R*S)) from seed, uploads them, and computes the float64
** reference on the GPU.  Returns CT_OK, CT_ERR_CUDA, CT_ERR_NVRTC,
** CT_ERR_NOMEM (message in err). */
ct_status ct_tune_data_create(ct_tune_gpu *g, const ct_problem *p,
                              uint64_t seed, ct_tune_data *d, char *err,
                              size_t len);
void ct_tune_data_destroy(ct_tune_data *d);

/* A seed that differs from run to run (time, pid, a counter). */
uint64_t ct_tune_fresh_seed(void);

/* Queues one forward pass of d->p on stream s. */
typedef ct_status (*ct_tune_run_fn)(void *arg, const ct_tune_data *d,
                                    CUstream s, char *err, size_t len);

/* Poisons y with NaN, runs once, waits, reads y back and applies the
** precision contract.  Returns CT_OK (then check->passes says pass/fail) or
** the run's / CUDA's failure (message in err). */
ct_status ct_tune_verify(ct_tune_gpu *g, ct_tune_data *d, ct_tune_run_fn run,
                         void *arg, ct_tune_check *check, char *err,
                         size_t len);

typedef struct ct_tune_stats {
  double mean_ms, median_ms, min_ms, max_ms;
  int n;  /* trials averaged */
} ct_tune_stats;

/* The KernelBench protocol: per trial, write CT_TUNE_FLUSH_BYTES to flush
** L2, record events around the run on the stream; one discarded trial, then
** `trials` timed.  Returns CT_OK or a failure (message in err). */
ct_status ct_tune_time(ct_tune_gpu *g, ct_tune_data *d, ct_tune_run_fn run,
                       void *arg, int trials, ct_tune_stats *st, char *err,
                       size_t len);

/* ---------------------------------------------------------------------- */
/* The tuning loop                                                         */

typedef struct ct_tune_options {
  ct_problem problem;      /* what to tune, precision included */
  const char *db_path;     /* tuning database, created if missing */
  int device;              /* CUDA ordinal */
  int threads;             /* NVRTC compile threads; 0 = every core */
  int screen_trials;       /* timed trials per verified variant */
  int final_trials;        /* full-protocol trials per finalist */
  int finalists;           /* variants re-timed before a winner is named */
  uint64_t seed;           /* 0 = fresh */
  FILE *progress;          /* one line per variant, or NULL */
} ct_tune_options;

/* Defaults: device 0, all cores, 10 screening trials, 100 final, 3 finalists. */
void ct_tune_options_default(ct_tune_options *o);

typedef struct ct_tune_row {
  ct_cache_trial trial;   /* as recorded (screening, or final for finalists) */
  int finalist;           /* 1 when re-timed with the full protocol */
} ct_tune_row;

typedef struct ct_tune_result {
  char spec[CT_PROBLEM_SPEC_MAX];
  ct_cache_device device;
  uint64_t seed;
  size_t n_rows;
  ct_tune_row *rows;      /* one per variant, enumeration order */
  long winner;            /* index into rows, -1 when nothing passed */
  double wall_s;          /* whole tune */
  double compile_s;       /* NVRTC CPU time summed over variants */
  int threads;            /* compile threads used */
} ct_tune_result;

/* Enumerates, compiles (in parallel, overlapped with GPU work), verifies,
** times and records every variant of o->problem, then re-times the
** finalists and stores the winner with its cubin.  Every trial is
** committed when it finishes.  Returns CT_OK (r->winner may be -1),
** or a setup failure (message in err).  Free r with ct_tune_result_free. */
ct_status ct_tune_run(const ct_tune_options *o, ct_tune_result *r, char *err,
                      size_t len);
void ct_tune_result_free(ct_tune_result *r);

#endif /* CT_TUNE_H */
