/*
** gpu.c — GPU sessions, test data, the float64 reference, verification and
** timing for the tuner and `convtune check` (see ct_tune.h).
*/
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ct_drv.h"
#include "ct_nvrtc.h"
#include "ct_rt.h"
#include "ct_tune.h"

/* Records a CUDA failure in err and jumps to the function's cleanup. */
#define CU_TRY(call, what)                                                     \
  do {                                                                         \
    CUresult cu_r_ = (call);                                                   \
    if (cu_r_ != CUDA_SUCCESS) {                                               \
      char cu_b_[256];                                                         \
      snprintf(err, len, "%s: %s", (what), ct_drv_error(cu_r_, cu_b_, sizeof cu_b_)); \
      rc = CT_ERR_CUDA;                                                        \
      goto out;                                                                \
    }                                                                          \
  } while (0)

/* ---------------------------------------------------------------------- */
/* Sessions                                                                */

ct_status ct_tune_gpu_open(int ordinal, ct_tune_gpu *g, char *err, size_t len) {
  memset(g, 0, sizeof *g);
  const char *why = NULL;
  ct_status rc = ct_drv_load(&why);
  if (rc != CT_OK) {
    snprintf(err, len, "%s", why);
    return rc;
  }
  int count = 0;
  ct_drv.cuDeviceGetCount(&count);
  if (ordinal < 0 || ordinal >= count) {
    snprintf(err, len, "no CUDA device %d: the driver sees %d device(s)",
             ordinal, count);
    return CT_ERR_NO_DEVICE;
  }
  g->ordinal = ordinal;
  CU_TRY(ct_drv.cuDeviceGet(&g->dev, ordinal), "cuDeviceGet");
  CU_TRY(ct_drv.cuDevicePrimaryCtxRetain(&g->ctx, g->dev), "cuDevicePrimaryCtxRetain");
  CU_TRY(ct_drv.cuCtxPushCurrent(g->ctx), "cuCtxPushCurrent");
  CU_TRY(ct_drv.cuStreamCreate(&g->stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  CU_TRY(ct_drv.cuMemAlloc(&g->flush, CT_TUNE_FLUSH_BYTES), "allocating the L2 flush buffer");
  rc = ct_drv_limits(g->dev, &g->limits);
  if (rc == CT_OK) rc = ct_rt_device_describe(g->dev, &g->limits, &g->device);
  if (rc != CT_OK) snprintf(err, len, "cannot read the device's attributes");
out:
  if (rc != CT_OK) ct_tune_gpu_close(g);
  return rc;
}

void ct_tune_gpu_close(ct_tune_gpu *g) {
  if (g == NULL || g->ctx == NULL) return;
  if (g->flush) ct_drv.cuMemFree(g->flush);
  if (g->stream) ct_drv.cuStreamDestroy(g->stream);
  CUcontext popped;
  ct_drv.cuCtxPopCurrent(&popped);
  ct_drv.cuDevicePrimaryCtxRelease(g->dev);
  memset(g, 0, sizeof *g);
}

/* ---------------------------------------------------------------------- */
/* Test data                                                               */

static uint64_t splitmix64(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* Uniform in [lo, hi) with 24 random bits, as torch.rand draws floats. */
static void fill_uniform(float *v, size_t n, float lo, float hi, uint64_t *s) {
  for (size_t i = 0; i < n; i++) {
    float u = (float)(splitmix64(s) >> 40) * (1.0f / 16777216.0f);
    v[i] = lo + (hi - lo) * u;
  }
}

uint64_t ct_tune_fresh_seed(void) {
  static atomic_uint_fast64_t counter;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  uint64_t s = (uint64_t)ts.tv_sec * 1000000007ull ^ (uint64_t)ts.tv_nsec ^
               ((uint64_t)getpid() << 32) ^ atomic_fetch_add(&counter, 1);
  return splitmix64(&s);
}

/* Host memory for drawing inputs: one chunk at a time, whatever the size. */
#define CT_TUNE_FILL_CHUNK ((size_t)1 << 24) /* floats (64 MiB) */

/* Allocates n floats on the device and fills them uniform in [lo, hi) from
** the generator state *s, CT_TUNE_FILL_CHUNK at a time through host (a
** chunk buffer of at least min(n, CT_TUNE_FILL_CHUNK) floats): the values
** are those of one fill_uniform over all n. */
static ct_status upload_uniform(CUdeviceptr *d, size_t n, float lo, float hi,
                                uint64_t *s, float *host, char *err,
                                size_t len) {
  ct_status rc = CT_OK;
  CU_TRY(ct_drv.cuMemAlloc(d, n * sizeof(float)), "allocating an input");
  for (size_t at = 0; at < n; at += CT_TUNE_FILL_CHUNK) {
    size_t m = n - at < CT_TUNE_FILL_CHUNK ? n - at : CT_TUNE_FILL_CHUNK;
    fill_uniform(host, m, lo, hi, s);
    CU_TRY(ct_drv.cuMemcpyHtoD(*d + at * sizeof(float), host, m * sizeof(float)),
           "uploading an input");
  }
out:
  return rc;
}

static double gib(double bytes) { return bytes / (double)(1ull << 30); }

/* Device memory kept free beside the test data: the variants' workspaces,
** modules and the runtime's own. */
static size_t reserve_bytes(size_t free_bytes) {
  size_t r = free_bytes / 20;
  return r < ((size_t)1 << 30) ? (size_t)1 << 30 : r;
}

ct_status ct_tune_data_create_mode(ct_tune_gpu *g, const ct_problem *p,
                                   uint64_t seed, ct_tune_ref_mode mode,
                                   ct_tune_data *d, char *err, size_t len) {
  memset(d, 0, sizeof *d);
  d->p = *p;
  d->seed = seed;
  int64_t P, Q;
  ct_problem_output(p, &P, &Q);
  d->nx = (size_t)(p->n * p->c * p->h * p->w);
  d->nw = (size_t)(p->k * (p->c / p->groups) * p->r * p->s);
  d->nb = p->bias ? (size_t)p->k : 0;
  d->ny = (size_t)(p->n * p->k * P * Q);
  d->n_tiles = (int64_t)((d->ny + CT_CHECK_TILE - 1) / CT_CHECK_TILE);

  ct_status rc = CT_OK;
  float *host = NULL;
  char *src = NULL;
  ct_rt_compiled ref;
  memset(&ref, 0, sizeof ref);

  /* What must fit on the device: the tensors and the check's tiles; the
  ** stored reference (24 bytes an output) where it fits too. */
  size_t free_b = 0, total_b = 0;
  CU_TRY(ct_drv.cuMemGetInfo(&free_b, &total_b), "reading the device's free memory");
  const double tensors = 4.0 * ((double)d->nx + (double)d->nw + (double)d->nb +
                                (double)d->ny * (p->residual ? 2 : 1)) +
                         (double)d->n_tiles * sizeof(ct_check_tile);
  const double stored = 24.0 * (double)d->ny;
  const double room = (double)free_b - (double)reserve_bytes(free_b);
  if (tensors > room) {
    snprintf(err, len,
             "the problem does not fit in device memory: x, w, b and y take "
             "%.2f GiB, and %.2f GiB of the device's %.2f GiB are free "
             "(%.2f GiB kept for workspaces)",
             gib(tensors), gib((double)free_b), gib((double)total_b),
             gib((double)reserve_bytes(free_b)));
    rc = CT_ERR_NOMEM;
    goto out;
  }
  d->fused = mode == CT_TUNE_REF_FUSED ||
             (mode == CT_TUNE_REF_AUTO && tensors + stored > room);

  size_t chunk = d->nx > d->nw ? d->nx : d->nw;
  if (p->residual && d->ny > chunk) chunk = d->ny;
  if (chunk > CT_TUNE_FILL_CHUNK) chunk = CT_TUNE_FILL_CHUNK;
  host = malloc(chunk * sizeof(float));
  d->tiles_host = malloc((size_t)d->n_tiles * sizeof *d->tiles_host);
  if (!host || !d->tiles_host) {
    snprintf(err, len, "out of host memory for the test data");
    rc = CT_ERR_NOMEM;
    goto out;
  }
  uint64_t s = seed;
  float bound = (float)(1.0 / sqrt((double)((p->c / p->groups) * p->r * p->s)));
  /* Sums of O(1/3); under ReLU6, x and the residual 32 times wider (sums
  ** of O(10)), so that outputs fall below 0, within [0, 6] and above 6, and
  ** a kernel without the clamp to 6 fails its check. */
  const float xs = p->act == CT_ACT_RELU6 ? 32.0f : 1.0f;
  if ((rc = upload_uniform(&d->x, d->nx, 0.0f, xs, &s, host, err, len)) != CT_OK) goto out;
  if ((rc = upload_uniform(&d->w, d->nw, -bound, bound, &s, host, err, len)) != CT_OK) goto out;
  if (d->nb &&
      (rc = upload_uniform(&d->b, d->nb, -bound, bound, &s, host, err, len)) != CT_OK)
    goto out;
  if (p->residual &&
      (rc = upload_uniform(&d->res, d->ny, -xs, xs, &s, host, err, len)) != CT_OK)
    goto out;
  CU_TRY(ct_drv.cuMemAlloc(&d->y, d->ny * sizeof(float)), "allocating the output");
  CU_TRY(ct_drv.cuMemAlloc(&d->tiles, (size_t)d->n_tiles * sizeof(ct_check_tile)),
         "allocating the check's tiles");

  /* The float64 reference and the check, on the GPU. */
  if ((rc = ct_gen_reference_source(p, &src)) != CT_OK) {
    snprintf(err, len, "cannot generate the reference kernel");
    goto out;
  }
  rc = ct_rt_compile(src, "ct_ref_f64", g->limits.arch, &ref);
  if (rc != CT_OK) {
    snprintf(err, len, "NVRTC failed on the reference kernel:\n%s",
             ref.log ? ref.log : "");
    goto out;
  }
  CU_TRY(ct_drv.cuModuleLoadData(&d->mod, ref.cubin), "loading the reference kernel");
  CU_TRY(ct_drv.cuModuleGetFunction(&d->check_fn, d->mod,
                                    d->fused ? "ct_check_f64_fused" : "ct_check_f64"),
         "finding the check kernel");
  if (p->residual) {
    CU_TRY(ct_drv.cuModuleGetFunction(&d->unwritten_fn, d->mod, "ct_unwritten"),
           "finding ct_unwritten");
    CU_TRY(ct_drv.cuMemAlloc(&d->unwritten, sizeof(unsigned long long)),
           "allocating the unwritten count");
  }
  if (!d->fused) {
    CUfunction fn;
    CU_TRY(ct_drv.cuModuleGetFunction(&fn, d->mod, "ct_ref_f64"), "finding ct_ref_f64");
    CU_TRY(ct_drv.cuMemAlloc(&d->ref, d->ny * sizeof(double)), "allocating the reference");
    CU_TRY(ct_drv.cuMemAlloc(&d->abs_sum, d->ny * sizeof(double)), "allocating the reference");
    CU_TRY(ct_drv.cuMemAlloc(&d->sq_sum, d->ny * sizeof(double)), "allocating the reference");
    void *args[] = {&d->x, &d->w, &d->b, &d->res, &d->ref, &d->abs_sum, &d->sq_sum};
    unsigned blocks = (unsigned)((d->ny + 255) / 256);
    CU_TRY(ct_drv.cuLaunchKernel(fn, blocks, 1, 1, 256, 1, 1, 0, g->stream, args, NULL),
           "launching the reference kernel");
    CU_TRY(ct_drv.cuStreamSynchronize(g->stream), "running the reference kernel");
  }
out:
  ct_rt_compiled_clear(&ref);
  free(src);
  free(host);
  if (rc != CT_OK) ct_tune_data_destroy(d);
  return rc;
}

ct_status ct_tune_data_create(ct_tune_gpu *g, const ct_problem *p,
                              uint64_t seed, ct_tune_data *d, char *err,
                              size_t len) {
  return ct_tune_data_create_mode(g, p, seed, CT_TUNE_REF_AUTO, d, err, len);
}

void ct_tune_data_destroy(ct_tune_data *d) {
  if (d == NULL) return;
  if (d->x) ct_drv.cuMemFree(d->x);
  if (d->w) ct_drv.cuMemFree(d->w);
  if (d->b) ct_drv.cuMemFree(d->b);
  if (d->y) ct_drv.cuMemFree(d->y);
  if (d->res) ct_drv.cuMemFree(d->res);
  if (d->unwritten) ct_drv.cuMemFree(d->unwritten);
  if (d->ref) ct_drv.cuMemFree(d->ref);
  if (d->abs_sum) ct_drv.cuMemFree(d->abs_sum);
  if (d->sq_sum) ct_drv.cuMemFree(d->sq_sum);
  if (d->tiles) ct_drv.cuMemFree(d->tiles);
  if (d->mod) ct_drv.cuModuleUnload(d->mod);
  free(d->tiles_host);
  memset(d, 0, sizeof *d);
}

ct_status ct_tune_data_reference_host(const ct_tune_data *d, double **ref,
                                      double **abs_sum, double **sq_sum,
                                      char *err, size_t len) {
  ct_status rc = CT_OK;
  *ref = *abs_sum = *sq_sum = NULL;
  if (d->fused) {
    snprintf(err, len, "the reference is not stored: the check recomputes it");
    return CT_ERR_UNSUPPORTED;
  }
  *ref = malloc(d->ny * sizeof(double));
  *abs_sum = malloc(d->ny * sizeof(double));
  *sq_sum = malloc(d->ny * sizeof(double));
  if (!*ref || !*abs_sum || !*sq_sum) {
    snprintf(err, len, "out of host memory for the reference");
    rc = CT_ERR_NOMEM;
    goto out;
  }
  CU_TRY(ct_drv.cuMemcpyDtoH(*ref, d->ref, d->ny * sizeof(double)), "reading the reference");
  CU_TRY(ct_drv.cuMemcpyDtoH(*abs_sum, d->abs_sum, d->ny * sizeof(double)), "reading the reference");
  CU_TRY(ct_drv.cuMemcpyDtoH(*sq_sum, d->sq_sum, d->ny * sizeof(double)), "reading the reference");
out:
  if (rc != CT_OK) {
    free(*ref);
    free(*abs_sum);
    free(*sq_sum);
    *ref = *abs_sum = *sq_sum = NULL;
  }
  return rc;
}

/* ---------------------------------------------------------------------- */
/* Verification and timing                                                 */

/* The contract's coefficients for d's problem (ct_tune_contract_coeffs). */
static ct_status contract_coeffs(const ct_tune_data *d, double *elem_coef, double *close_tol,
                                 char *err, size_t len) {
  if (ct_tune_contract_coeffs(&d->p, elem_coef, close_tol)) return CT_OK;
  snprintf(err, len, "unknown precision %d", (int)d->p.precision);
  return CT_ERR_INVALID_PROBLEM;
}

ct_status ct_tune_check_output(ct_tune_gpu *g, ct_tune_data *d, CUdeviceptr y,
                               ct_tune_check *check, char *err, size_t len) {
  ct_status rc = CT_OK;
  memset(check, 0, sizeof *check);
  double elem_coef = 0.0, close_tol = 0.0;
  if ((rc = contract_coeffs(d, &elem_coef, &close_tol, err, len)) != CT_OK) return rc;
  void *stored[] = {&y, &d->ref, &d->abs_sum, &d->sq_sum, &elem_coef, &close_tol,
                    &d->tiles};
  void *fused[] = {&d->x, &d->w, &d->b, &d->res, &y, &elem_coef, &close_tol, &d->tiles};
  CU_TRY(ct_drv.cuLaunchKernel(d->check_fn, (unsigned)d->n_tiles, 1, 1, CT_CHECK_LANES,
                               1, 1, 0, g->stream, d->fused ? fused : stored, NULL),
         "launching the check kernel");
  CU_TRY(ct_drv.cuStreamSynchronize(g->stream), "running the check kernel");
  CU_TRY(ct_drv.cuMemcpyDtoH(d->tiles_host, d->tiles,
                             (size_t)d->n_tiles * sizeof(ct_check_tile)),
         "reading the check's figures");
  ct_tune_contract_finish(&d->p, d->tiles_host, d->n_tiles, (int64_t)d->ny, check);
out:
  return rc;
}

/* ct_tune_verify's second run for a residual problem: y filled with
** 2^-100, the variant run, the outputs still 2^-100 counted (ct_unwritten:
** those whose sum the contract keeps away from 0); any fails *check. */
static ct_status unwritten_check(ct_tune_gpu *g, ct_tune_data *d, ct_tune_run_fn run, void *arg,
                                 ct_tune_check *check, char *err, size_t len) {
  ct_status rc = CT_OK;
  double elem_coef = 0.0, close_tol = 0.0;
  if ((rc = contract_coeffs(d, &elem_coef, &close_tol, err, len)) != CT_OK) return rc;
  const float probe = 0x1p-100f;
  unsigned bits;
  memcpy(&bits, &probe, sizeof bits);
  CU_TRY(ct_drv.cuMemsetD32Async(d->y, bits, d->ny, g->stream), "filling the output");
  if ((rc = run(arg, d, g->stream, err, len)) != CT_OK) goto out;
  CU_TRY(ct_drv.cuMemsetD32Async(d->unwritten, 0, 2, g->stream), "clearing the count");
  void *args[] = {&d->x, &d->w, &d->b, &d->y, (void *)&probe, &elem_coef, &d->unwritten};
  CU_TRY(ct_drv.cuLaunchKernel(d->unwritten_fn, (unsigned)((d->ny + 255) / 256), 1, 1, 256, 1, 1,
                               0, g->stream, args, NULL),
         "launching ct_unwritten");
  unsigned long long n = 0;
  CU_TRY(ct_drv.cuStreamSynchronize(g->stream), "running the variant and ct_unwritten");
  CU_TRY(ct_drv.cuMemcpyDtoH(&n, d->unwritten, sizeof n), "reading the unwritten count");
  if (n > 0) {
    check->passes = 0;
    snprintf(check->reason, sizeof check->reason, "%llu of %zu outputs never written", n, d->ny);
  }
out:
  return rc;
}

ct_status ct_tune_verify(ct_tune_gpu *g, ct_tune_data *d, ct_tune_run_fn run,
                         void *arg, ct_tune_check *check, char *err,
                         size_t len) {
  ct_status rc = CT_OK;
  memset(check, 0, sizeof *check);
  if (d->p.residual) {
    /* The variant reads y: it holds the residual the reference added. */
    CU_TRY(ct_drv.cuMemcpyDtoDAsync(d->y, d->res, d->ny * sizeof(float), g->stream),
           "copying the residual into the output");
  } else {
    /* 0xFFFFFFFF is a NaN: an output the kernel never writes fails. */
    CU_TRY(ct_drv.cuMemsetD32Async(d->y, 0xFFFFFFFFu, d->ny, g->stream), "poisoning the output");
  }
  if ((rc = run(arg, d, g->stream, err, len)) != CT_OK) goto out;
  CU_TRY(ct_drv.cuStreamSynchronize(g->stream), "running the variant");
  rc = ct_tune_check_output(g, d, d->y, check, err, len);
  if (rc == CT_OK && check->passes && d->p.residual) rc = unwritten_check(g, d, run, arg, check,
                                                                          err, len);
out:
  return rc;
}

ct_status ct_tune_run_forward(void *ctx, const ct_tune_data *d, CUstream s,
                              char *err, size_t len) {
  ct_status rc = ct_forward(ctx, &d->p, (const float *)(uintptr_t)d->x,
                            (const float *)(uintptr_t)d->w,
                            (const float *)(uintptr_t)d->b,
                            (float *)(uintptr_t)d->y, s);
  if (rc != CT_OK) {
    const char *log = ct_last_nvrtc_log(ctx);
    snprintf(err, len, "ct_forward: %s%s%s", ct_last_error(ctx),
             log[0] ? "\n" : "", log);
  }
  return rc;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

ct_status ct_tune_time(ct_tune_gpu *g, ct_tune_data *d, ct_tune_run_fn run,
                       void *arg, int trials, ct_tune_stats *st, char *err,
                       size_t len) {
  ct_status rc = CT_OK;
  memset(st, 0, sizeof *st);
  int total = trials + 1; /* the first is discarded */
  CUevent *ev = calloc((size_t)total * 2, sizeof *ev);
  double *ms = calloc((size_t)total, sizeof *ms);
  if (ev == NULL || ms == NULL) {
    snprintf(err, len, "out of host memory");
    rc = CT_ERR_NOMEM;
    goto out;
  }
  for (int i = 0; i < 2 * total; i++)
    CU_TRY(ct_drv.cuEventCreate(&ev[i], CU_EVENT_DEFAULT), "cuEventCreate");
  for (int i = 0; i < total; i++) {
    CU_TRY(ct_drv.cuMemsetD32Async(g->flush, (unsigned)i, CT_TUNE_FLUSH_BYTES / 4, g->stream),
           "flushing L2");
    CU_TRY(ct_drv.cuEventRecord(ev[2 * i], g->stream), "cuEventRecord");
    if ((rc = run(arg, d, g->stream, err, len)) != CT_OK) goto out;
    CU_TRY(ct_drv.cuEventRecord(ev[2 * i + 1], g->stream), "cuEventRecord");
  }
  CU_TRY(ct_drv.cuStreamSynchronize(g->stream), "running the timed trials");
  for (int i = 0; i < total; i++) {
    float t;
    CU_TRY(ct_drv.cuEventElapsedTime(&t, ev[2 * i], ev[2 * i + 1]), "cuEventElapsedTime");
    ms[i] = t;
  }
  double sum = 0;
  for (int i = 1; i < total; i++) sum += ms[i];
  st->n = trials;
  st->mean_ms = sum / trials;
  qsort(ms + 1, (size_t)trials, sizeof *ms, cmp_double);
  st->min_ms = ms[1];
  st->max_ms = ms[trials];
  st->median_ms = trials % 2 ? ms[1 + trials / 2]
                             : 0.5 * (ms[trials / 2] + ms[trials / 2 + 1]);
out:
  if (ev)
    for (int i = 0; i < 2 * total; i++)
      if (ev[i]) ct_drv.cuEventDestroy(ev[i]);
  free(ev);
  free(ms);
  return rc;
}
