/*
** overhead.c — the runtime's cost to its callers, on a GPU.  Prints a table
** and exits 1 when a target is missed (77 where there is no GPU):
**
**   warm ct_forward          host time per call after the first, many calls
**                            queued without a sync between them (batches
**                            of 200, median batch), target <= 5 us; beside
**                            it the same kernel launched straight through
**                            cuLaunchKernel, and the difference: what the
**                            runtime itself adds
**   host allocations         malloc/calloc/realloc/free calls per warm
**                            ct_forward beyond those of a bare launch,
**                            target 0
**   first call, stored cubin in a fresh process (a child) with a tuned
**                            database: ct_open, then the first ct_forward
**                            (lookup, cubin check, module load, launch),
**                            target <= 20 ms; ct_open is shown apart (it is
**                            mostly the driver creating its context)
**   first call, NVRTC        the same without a database: the default
**                            variant compiled at the first call (no target)
**   graph capture            ct_forward captured in global mode (where any
**                            allocation or synchronisation fails the
**                            capture), replayed, result checked against
**                            float64
**   threads                  1, 2, 4, 8 threads sharing one context, each on
**                            its own stream: host time per call, every call
**                            must succeed and every result pass
**
**   build/bench/overhead [--device N]
*/
#include <dlfcn.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ct_drv.h"
#include "ct_rt.h"
#include "ct_tune.h"
#include "gpu_db.h" /* tests/: a winner stored as the tuner stores one */
#include "gpu_graph.h" /* tests/: the graph entry points */

#include "count_malloc.h" /* tests/: counting host allocations */

/* ---------------------------------------------------------------------- */

#define TARGET_WARM_US 5.0
#define TARGET_FIRST_MS 20.0
#define BATCH 200
#define BATCHES 200

static const char *spec_small = "n=1,c=4,h=16,w=16,k=8,r=3,s=3,pad=1,prec=tf32";
static const char *spec_headline =
    "n=256,c=3,h=224,w=224,k=96,r=11,s=11,stride=4,pad=2,prec=tf32";

static ct_tune_gpu g;
static int failed;

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void row(const char *what, const char *value, const char *target,
                int pass) {
  printf("%-44s %-22s %-12s %s\n", what, value, target,
         pass < 0 ? "" : pass ? "PASS" : "FAIL");
  if (pass == 0) failed = 1;
}

#define DIE(...)                                                              \
  do {                                                                        \
    fprintf(stderr, "overhead: " __VA_ARGS__);                                \
    fputc('\n', stderr);                                                      \
    exit(1);                                                                  \
  } while (0)

static ct_problem parse(const char *spec) {
  ct_problem p;
  char err[256];
  if (ct_problem_parse(spec, &p, err, sizeof err) != CT_OK) DIE("%s: %s", spec, err);
  return p;
}

/* Device tensors for p (contents irrelevant to timing). */
typedef struct tensors {
  CUdeviceptr x, w, b, y;
} tensors;

static tensors tensors_alloc(const ct_problem *p) {
  int64_t P, Q;
  ct_problem_output(p, &P, &Q);
  tensors t = {0, 0, 0, 0};
  size_t nx = (size_t)(p->n * p->c * p->h * p->w), nw = (size_t)(p->k * (p->c / p->groups) * p->r * p->s);
  size_t ny = (size_t)(p->n * p->k * P * Q);
  if (ct_drv.cuMemAlloc(&t.x, nx * 4) || ct_drv.cuMemAlloc(&t.w, nw * 4) ||
      ct_drv.cuMemAlloc(&t.b, (size_t)p->k * 4) || ct_drv.cuMemAlloc(&t.y, ny * 4))
    DIE("cannot allocate the tensors");
  ct_drv.cuMemsetD8Async(t.x, 0, nx * 4, NULL);
  ct_drv.cuMemsetD8Async(t.w, 0, nw * 4, NULL);
  ct_drv.cuMemsetD8Async(t.b, 0, (size_t)p->k * 4, NULL);
  ct_drv.cuCtxSynchronize();
  return t;
}

static void tensors_free(tensors *t) {
  ct_drv.cuMemFree(t->x);
  ct_drv.cuMemFree(t->w);
  ct_drv.cuMemFree(t->b);
  ct_drv.cuMemFree(t->y);
}

static ct_status fwd(ct_context *ctx, const ct_problem *p, const tensors *t,
                     CUstream s) {
  return ct_forward(ctx, p, (const float *)(uintptr_t)t->x,
                    (const float *)(uintptr_t)t->w,
                    (const float *)(uintptr_t)t->b, (float *)(uintptr_t)t->y, s);
}

/* ---------------------------------------------------------------------- */
/* Warm calls                                                              */

static void bench_warm(void) {
  ct_problem p = parse(spec_small);
  ct_context *ctx = NULL;
  if (ct_open("", g.ordinal, &ctx) != CT_OK) DIE("ct_open: %s", ct_open_error());
  tensors t = tensors_alloc(&p);
  if (fwd(ctx, &p, &t, g.stream) != CT_OK) DIE("forward: %s", ct_last_error(ctx));
  ct_drv.cuStreamSynchronize(g.stream);

  /* The same variant, launched straight through the driver. */
  ct_gen_variant v;
  char *src = NULL;
  ct_rt_compiled c;
  ct_rt_kernel k;
  CUresult cr;
  if (ct_gen_default_variant(&p, &g.limits, &v) != CT_OK ||
      ct_gen_source(&p, &v, &src) != CT_OK ||
      ct_rt_compile(src, v.name, g.limits.arch, &c) != CT_OK ||
      ct_rt_kernel_load(&v, c.cubin, &k, &cr) != CT_OK)
    DIE("cannot build the bare kernel");
  free(src);
  ct_rt_compiled_clear(&c);

  double fwd_us[BATCHES], raw_us[BATCHES];
  long fwd_allocs = 0, raw_allocs = 0;
  int errors = 0;
  for (int i = 0; i < BATCHES; i++) {
    n_allocs = 0;
    counting = 1;
    double t0 = now_us();
    for (int j = 0; j < BATCH; j++) errors += fwd(ctx, &p, &t, g.stream) != CT_OK;
    double t1 = now_us();
    counting = 0;
    fwd_allocs += n_allocs;
    ct_drv.cuStreamSynchronize(g.stream);
    n_allocs = 0;
    counting = 1;
    double t2 = now_us();
    for (int j = 0; j < BATCH; j++)
      errors += ct_rt_kernel_launch(&k, t.x, t.w, t.b, t.y, g.stream, &cr) != CT_OK;
    double t3 = now_us();
    counting = 0;
    raw_allocs += n_allocs;
    ct_drv.cuStreamSynchronize(g.stream);
    fwd_us[i] = (t1 - t0) / BATCH;
    raw_us[i] = (t3 - t2) / BATCH;
  }
  double f = median(fwd_us, BATCHES), r = median(raw_us, BATCHES);
  char buf[64];
  snprintf(buf, sizeof buf, "%.2f us", f);
  row("warm ct_forward, host time per call", buf, "<= 5 us",
      f <= TARGET_WARM_US && errors == 0);
  snprintf(buf, sizeof buf, "%.2f us", r);
  row("  the same kernel via cuLaunchKernel", buf, "", -1);
  snprintf(buf, sizeof buf, "%.2f us", f - r);
  row("  the runtime's own share", buf, "", -1);
#if CT_COUNT_MALLOC
  snprintf(buf, sizeof buf, "%.3f (bare: %.3f)",
           (double)fwd_allocs / (BATCH * BATCHES),
           (double)raw_allocs / (BATCH * BATCHES));
  row("host allocations per warm call", buf, "bare's", fwd_allocs <= raw_allocs);
#else
  (void)fwd_allocs, (void)raw_allocs;
  row("host allocations per warm call", "not counted (ASan)", "", -1);
#endif
  ct_rt_kernel_unload(&k);
  tensors_free(&t);
  ct_close(ctx);
}

/* ---------------------------------------------------------------------- */
/* First calls in a fresh process                                          */

/* The child: open, first forward, report.  Prints one line
** "open_ms first_ms second_us path". */
static int child_first_call(const char *db, const char *spec) {
  char err[512];
  if (ct_tune_gpu_open(0, &g, err, sizeof err) != CT_OK) {
    fprintf(stderr, "%s\n", err);
    return 1;
  }
  ct_problem p = parse(spec);
  tensors t = tensors_alloc(&p);
  double t0 = now_us();
  ct_context *ctx = NULL;
  if (ct_open(db, 0, &ctx) != CT_OK) {
    fprintf(stderr, "ct_open: %s\n", ct_open_error());
    return 1;
  }
  double t1 = now_us();
  if (fwd(ctx, &p, &t, g.stream) != CT_OK) {
    fprintf(stderr, "forward: %s\n", ct_last_error(ctx));
    return 1;
  }
  double t2 = now_us();
  fwd(ctx, &p, &t, g.stream);
  double t3 = now_us();
  ct_drv.cuStreamSynchronize(g.stream);
  ct_path path;
  ct_forward_path(ctx, &p, &path, NULL, 0);
  printf("%f %f %f %s\n", (t1 - t0) / 1e3, (t2 - t1) / 1e3, t3 - t2,
         ct_path_name(path));
  ct_close(ctx);
  tensors_free(&t);
  ct_tune_gpu_close(&g);
  return 0;
}

/* Runs the child `runs` times; medians of its figures. */
static int spawn_first_call(const char *db, const char *spec, int runs,
                            double *open_ms, double *first_ms, char *path,
                            size_t len) {
  char self[1024];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return -1;
  self[n] = '\0';
  double o[8], f[8];
  for (int i = 0; i < runs && i < 8; i++) {
    char cmd[3000];
    snprintf(cmd, sizeof cmd, "'%s' --first-call '%s' '%s'", self, db, spec);
    FILE *pipe = popen(cmd, "r");
    if (!pipe) return -1;
    double second;
    char p[64];
    int got = fscanf(pipe, "%lf %lf %lf %63s", &o[i], &f[i], &second, p);
    if (pclose(pipe) != 0 || got != 4) return -1;
    snprintf(path, len, "%s", p);
  }
  *open_ms = median(o, runs);
  *first_ms = median(f, runs);
  return 0;
}

static void bench_first_call(const char *dir) {
  char db[600], err[1024];
  snprintf(db, sizeof db, "%s/tuning.db", dir);
  ct_problem p = parse(spec_headline);
  ct_gen_variant v;
  if (gpu_db_pick(&p, &g.limits, 0, &v) != 0 &&
      ct_gen_default_variant(&p, &g.limits, &v) != CT_OK)
    DIE("no variant for the headline problem");
  if (gpu_db_store(db, &g.device, &g.limits, &p, &v, err, sizeof err) != CT_OK)
    DIE("cannot store the winner: %s", err);
  double open_ms, first_ms;
  char path[64], buf[96];
  if (spawn_first_call(db, spec_headline, 5, &open_ms, &first_ms, path, sizeof path))
    DIE("the child process failed");
  snprintf(buf, sizeof buf, "%.2f ms (%s)", first_ms, path);
  row("first call, fresh process, stored cubin", buf, "<= 20 ms",
      first_ms <= TARGET_FIRST_MS && strcmp(path, "tuned-cubin") == 0);
  snprintf(buf, sizeof buf, "%.2f ms", open_ms);
  row("  ct_open before it (primary context up)", buf, "", -1);
  if (spawn_first_call("", spec_headline, 1, &open_ms, &first_ms, path, sizeof path))
    DIE("the child process failed");
  snprintf(buf, sizeof buf, "%.0f ms (%s)", first_ms, path);
  row("first call, fresh process, NVRTC compile", buf, "", -1);
}

/* ---------------------------------------------------------------------- */
/* Graph capture                                                           */


/* The run function ct_tune_verify calls: captures one ct_forward in a
** graph, instantiates it and launches the graph. */
typedef struct graph_arg {
  ct_context *ctx;
  CUgraphExec exec;
} graph_arg;

static ct_status run_graph(void *arg, const ct_tune_data *d, CUstream s,
                           char *err, size_t len) {
  graph_arg *a = arg;
  CUgraph h = NULL;
  CUresult r = graph.begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL);
  ct_status rc = r == CUDA_SUCCESS ? ct_tune_run_forward(a->ctx, d, s, err, len) : CT_ERR_CUDA;
  CUresult r2 = r == CUDA_SUCCESS ? graph.end(s, &h) : r;
  if (rc == CT_OK && r2 != CUDA_SUCCESS) {
    snprintf(err, len, "capture failed: CUresult %d", (int)r2);
    rc = CT_ERR_CUDA;
  }
  if (rc == CT_OK && graph.instantiate(&a->exec, h, 0) != CUDA_SUCCESS) {
    snprintf(err, len, "cuGraphInstantiate failed");
    rc = CT_ERR_CUDA;
  }
  if (rc == CT_OK && graph.launch(a->exec, s) != CUDA_SUCCESS) {
    snprintf(err, len, "cuGraphLaunch failed");
    rc = CT_ERR_CUDA;
  }
  if (h) graph.destroy(h);
  return rc;
}

static void bench_graph(void) {
  ct_problem p = parse("n=4,c=3,h=67,w=65,k=32,r=11,s=11,stride=4,pad=2,prec=tf32");
  ct_context *ctx = NULL;
  if (ct_open("", g.ordinal, &ctx) != CT_OK) DIE("ct_open: %s", ct_open_error());
  ct_tune_data d;
  char err[512];
  if (ct_tune_data_create(&g, &p, ct_tune_fresh_seed(), &d, err, sizeof err) != CT_OK)
    DIE("test data: %s", err);
  if (ct_prepare(ctx, &p) != CT_OK) DIE("prepare: %s", ct_last_error(ctx));
  graph_arg a = {ctx, NULL};
  ct_tune_check chk;
  ct_status rc = CT_ERR_UNSUPPORTED;
  if (graph_load() == 0)
    rc = ct_tune_verify(&g, &d, run_graph, &a, &chk, err, sizeof err);
  else
    snprintf(err, sizeof err, "the driver lacks the graph API");
  row("CUDA graph capture (global mode), replay",
      rc != CT_OK ? "capture failed" : chk.passes ? "replay correct" : "replay wrong",
      "correct", rc == CT_OK && chk.passes);
  if (rc != CT_OK || !chk.passes) printf("  %s\n", rc != CT_OK ? err : chk.reason);
  if (a.exec) graph.exec_destroy(a.exec);
  ct_tune_data_destroy(&d);
  ct_close(ctx);
}

/* ---------------------------------------------------------------------- */
/* Threads                                                                 */

typedef struct worker {
  ct_context *ctx;
  const ct_problem *p;
  pthread_barrier_t *start;
  double us_per_call;
  int errors;
} worker;

static void *worker_main(void *arg) {
  worker *wk = arg;
  CUcontext popped;
  CUstream s;
  ct_drv.cuCtxPushCurrent(g.ctx);
  ct_drv.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING);
  tensors t = tensors_alloc(wk->p);
  wk->errors += fwd(wk->ctx, wk->p, &t, s) != CT_OK;
  ct_drv.cuStreamSynchronize(s);
  pthread_barrier_wait(wk->start);
  double v[50];
  for (int i = 0; i < 50; i++) {
    double t0 = now_us();
    for (int j = 0; j < BATCH; j++) wk->errors += fwd(wk->ctx, wk->p, &t, s) != CT_OK;
    v[i] = (now_us() - t0) / BATCH;
    ct_drv.cuStreamSynchronize(s);
  }
  wk->us_per_call = median(v, 50);
  tensors_free(&t);
  ct_drv.cuStreamDestroy(s);
  ct_drv.cuCtxPopCurrent(&popped);
  return NULL;
}

static void bench_threads(void) {
  ct_problem p = parse(spec_small);
  ct_context *ctx = NULL;
  if (ct_open("", g.ordinal, &ctx) != CT_OK) DIE("ct_open: %s", ct_open_error());
  char line[200] = "";
  int errors = 0;
  for (int n = 1; n <= 8; n *= 2) {
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, (unsigned)n);
    pthread_t t[8];
    worker wk[8];
    for (int i = 0; i < n; i++) {
      wk[i] = (worker){ctx, &p, &start, 0, 0};
      pthread_create(&t[i], NULL, worker_main, &wk[i]);
    }
    double worst = 0;
    for (int i = 0; i < n; i++) {
      pthread_join(t[i], NULL);
      errors += wk[i].errors;
      if (wk[i].us_per_call > worst) worst = wk[i].us_per_call;
    }
    pthread_barrier_destroy(&start);
    size_t used = strlen(line);
    snprintf(line + used, sizeof line - used, "%s%d:%.1f", n > 1 ? " " : "", n, worst);
  }
  row("threads sharing a context: n:us/call", line, "no error", errors == 0);
  ct_close(ctx);
}

int main(int argc, char **argv) {
  if (argc == 4 && !strcmp(argv[1], "--first-call"))
    return child_first_call(argv[2], argv[3]);
  int device = 0;
  if (argc == 3 && !strcmp(argv[1], "--device")) device = atoi(argv[2]);
  else if (argc != 1) {
    fprintf(stderr, "usage: overhead [--device N]\n");
    return 2;
  }
  char err[512];
  ct_status rc = ct_tune_gpu_open(device, &g, err, sizeof err);
  if (rc == CT_ERR_NO_DRIVER || rc == CT_ERR_NO_DEVICE) {
    printf("overhead: no usable GPU: %s\n", err);
    return 77;
  }
  if (rc != CT_OK) DIE("%s", err);
  char dir[] = "/tmp/convtune-overhead-XXXXXX";
  if (!mkdtemp(dir)) DIE("mkdtemp");
  printf("convtune runtime overhead on %s (%s), driver %d, NVRTC %s\n\n",
         g.device.name, g.limits.arch, g.device.driver_version, g.device.nvrtc_version);
  printf("%-44s %-22s %-12s %s\n", "measure", "value", "target", "");
  bench_warm();
  bench_first_call(dir);
  bench_graph();
  bench_threads();
  char cmd[200];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
  ct_tune_gpu_close(&g);
  printf("\n%s\n", failed ? "some targets missed" : "every target met");
  return failed ? 1 : 0;
}
