/*
** test_gpu_runtime.c — the runtime on a real GPU, beyond single shapes:
**   - threads sharing one context, each on its own stream, racing on first
**     calls, every result checked against the float64 reference;
**   - ct_forward captured in a CUDA graph (global capture mode, which fails
**     on any allocation or synchronisation) and replayed;
**   - an untrusted database on the real driver: a stale entry and another
**     family's cubin under an entry are rebuilt, never launched, and the
**     results are correct;
**   - weights packed once (ct_weights_pack, ct_forward_packed) for every
**     family that packs them and for some that do not.
*/
#include <dlfcn.h>
#include <pthread.h>

#include <sqlite3.h>

#include "ct_drv.h"
#include "gpu_common.h"
#include "gpu_db.h"

static ct_tune_gpu g;
static char dir[] = "/tmp/convtune-gpurt-XXXXXX";

#include "gpu_graph.h"


/* Applies the precision contract to y (of d's problem) on the GPU.  The
** check uses d's tile buffers and g's stream: one thread at a time. */
static pthread_mutex_t check_lock = PTHREAD_MUTEX_INITIALIZER;
static int check_y(ct_tune_data *d, CUdeviceptr y, ct_tune_check *chk) {
  char err[256];
  pthread_mutex_lock(&check_lock);
  ct_status rc = ct_tune_check_output(&g, d, y, chk, err, sizeof err);
  pthread_mutex_unlock(&check_lock);
  return rc == CT_OK ? 0 : -1;
}

static ct_status forward(ct_context *ctx, const ct_tune_data *d, CUdeviceptr y,
                         CUstream s) {
  return ct_forward(ctx, &d->p, (const float *)(uintptr_t)d->x,
                    (const float *)(uintptr_t)d->w,
                    (const float *)(uintptr_t)d->b, (float *)(uintptr_t)y, s);
}

/* ---------------------------------------------------------------------- */
/* Threads                                                                 */

#define N_THREADS 6
#define N_CALLS 60

static const char *thread_specs[] = {
    "n=2,c=3,h=41,w=39,k=24,r=5,s=5,stride=2,pad=2,prec=tf32",
    "n=1,c=16,h=20,w=20,k=32,r=3,s=3,pad=1,prec=fp32",
    "n=3,c=3,h=33,w=35,k=8,r=11,s=11,stride=4,pad=2,prec=tf32",
};
#define N_SPECS 3

typedef struct worker {
  ct_context *ctx;
  ct_tune_data *data;          /* N_SPECS of them, shared read-only */
  pthread_barrier_t *start;
  int index;
  int failures;
  char message[512];
} worker;

static void *worker_main(void *arg) {
  worker *wk = arg;
  CUcontext popped;
  CUstream s = NULL;
  CUdeviceptr y[N_SPECS] = {0};
  if (ct_drv.cuCtxPushCurrent(g.ctx) != CUDA_SUCCESS ||
      ct_drv.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) {
    wk->failures++;
    snprintf(wk->message, sizeof wk->message, "cannot set up the thread");
    return NULL;
  }
  for (int i = 0; i < N_SPECS; i++)
    ct_drv.cuMemAlloc(&y[i], wk->data[i].ny * sizeof(float));
  pthread_barrier_wait(wk->start);
  for (int i = 0; i < N_CALLS; i++) {
    int k = (i + wk->index) % N_SPECS;
    if (forward(wk->ctx, &wk->data[k], y[k], s) != CT_OK) {
      wk->failures++;
      snprintf(wk->message, sizeof wk->message, "%s", ct_last_error(wk->ctx));
    }
  }
  if (ct_drv.cuStreamSynchronize(s) != CUDA_SUCCESS) wk->failures++;
  for (int k = 0; k < N_SPECS; k++) {
    ct_tune_check chk;
    if (check_y(&wk->data[k], y[k], &chk) != 0 || !chk.passes) {
      wk->failures++;
      snprintf(wk->message, sizeof wk->message, "%s: %s", thread_specs[k],
               chk.reason);
    }
    ct_drv.cuMemFree(y[k]);
  }
  ct_drv.cuStreamDestroy(s);
  ct_drv.cuCtxPopCurrent(&popped);
  return NULL;
}

static void test_threads_share_a_context(void) {
  ct_context *ctx = NULL;
  ASSERT_EQ_INT(ct_open("", g.ordinal, &ctx), CT_OK);
  ct_tune_data data[N_SPECS];
  char err[512];
  for (int k = 0; k < N_SPECS; k++) {
    ct_problem p;
    ASSERT_EQ_INT(ct_problem_parse(thread_specs[k], &p, NULL, 0), CT_OK);
    ASSERT_EQ_INT(ct_tune_data_create(&g, &p, ct_tune_fresh_seed(), &data[k],
                                      err, sizeof err), CT_OK);
  }
  pthread_barrier_t start;
  pthread_barrier_init(&start, NULL, N_THREADS);
  pthread_t t[N_THREADS];
  worker wk[N_THREADS];
  for (int i = 0; i < N_THREADS; i++) {
    wk[i] = (worker){ctx, data, &start, i, 0, ""};
    ASSERT_EQ_INT(pthread_create(&t[i], NULL, worker_main, &wk[i]), 0);
  }
  int failures = 0;
  for (int i = 0; i < N_THREADS; i++) {
    pthread_join(t[i], NULL);
    if (wk[i].failures) printf("thread %d: %s\n", i, wk[i].message);
    failures += wk[i].failures;
  }
  pthread_barrier_destroy(&start);
  printf("%d threads x %d forwards on their own streams, 3 problems loaded "
         "concurrently: %d failures\n", N_THREADS, N_CALLS, failures);
  ASSERT_EQ_INT(failures, 0);
  for (int k = 0; k < N_SPECS; k++) ct_tune_data_destroy(&data[k]);
  ct_close(ctx);
}

/* ---------------------------------------------------------------------- */
/* Graph capture                                                           */

static void test_graph_capture(void) {
  ASSERT_EQ_INT(graph_load(), 0);
  ct_context *ctx = NULL;
  ASSERT_EQ_INT(ct_open("", g.ordinal, &ctx), CT_OK);
  const char *specs[] = {"n=2,c=3,h=57,w=55,k=16,r=11,s=11,stride=4,pad=2,prec=tf32",
                         "n=1,c=8,h=16,w=18,k=12,r=3,s=3,pad=1,bias=0,prec=fp32"};
  ct_tune_data d[2];
  char err[512];
  CUdeviceptr y[2];
  for (int k = 0; k < 2; k++) {
    ct_problem p;
    ASSERT_EQ_INT(ct_problem_parse(specs[k], &p, NULL, 0), CT_OK);
    ASSERT_EQ_INT(ct_tune_data_create(&g, &p, ct_tune_fresh_seed(), &d[k], err, sizeof err), CT_OK);
    ASSERT_EQ_INT(ct_drv.cuMemAlloc(&y[k], d[k].ny * sizeof(float)), CUDA_SUCCESS);
    ASSERT_EQ_INT(ct_drv.cuMemsetD32Async(y[k], 0x7fc00000u, d[k].ny, g.stream), CUDA_SUCCESS);
  }
  /* The first: warmed by a call; the second: by ct_prepare. */
  ASSERT_EQ_INT(forward(ctx, &d[0], y[0], g.stream), CT_OK);
  ASSERT_EQ_INT(ct_prepare(ctx, &d[1].p), CT_OK);
  ASSERT_EQ_INT(ct_drv.cuStreamSynchronize(g.stream), CUDA_SUCCESS);
  ASSERT_EQ_INT(ct_drv.cuMemsetD32Async(y[0], 0x7fc00000u, d[0].ny, g.stream), CUDA_SUCCESS);
  ASSERT_EQ_INT(ct_drv.cuStreamSynchronize(g.stream), CUDA_SUCCESS);

  CUgraph graph_h = NULL;
  CUgraphExec exec = NULL;
  ASSERT_EQ_INT(graph.begin(g.stream, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  ct_status rc0 = forward(ctx, &d[0], y[0], g.stream);
  ct_status rc1 = forward(ctx, &d[1], y[1], g.stream);
  CUresult ended = graph.end(g.stream, &graph_h);
  if (rc0 != CT_OK || rc1 != CT_OK) printf("capture: %s\n", ct_last_error(ctx));
  ASSERT_EQ_INT(rc0, CT_OK);
  ASSERT_EQ_INT(rc1, CT_OK);
  ASSERT_EQ_INT(ended, CUDA_SUCCESS);
  ASSERT_EQ_INT(graph.instantiate(&exec, graph_h, 0), CUDA_SUCCESS);
  for (int rep = 0; rep < 3; rep++)
    ASSERT_EQ_INT(graph.launch(exec, g.stream), CUDA_SUCCESS);
  ASSERT_EQ_INT(ct_drv.cuStreamSynchronize(g.stream), CUDA_SUCCESS);
  for (int k = 0; k < 2; k++) {
    ct_tune_check chk;
    ASSERT_EQ_INT(check_y(&d[k], y[k], &chk), 0);
    printf("graph replay %s: %s (rel err %.1e)\n", specs[k],
           chk.passes ? "pass" : chk.reason, chk.rel_err);
    ASSERT_TRUE(chk.passes);
  }
  graph.exec_destroy(exec);
  graph.destroy(graph_h);
  for (int k = 0; k < 2; k++) {
    ct_drv.cuMemFree(y[k]);
    ct_tune_data_destroy(&d[k]);
  }
  ct_close(ctx);
}

/* ---------------------------------------------------------------------- */
/* An untrusted database on the real driver                                */

static ct_status run_forward(void *arg, const ct_tune_data *d, CUstream s,
                             char *err, size_t len) {
  ct_context *ctx = arg;
  ct_status rc = forward(ctx, d, d->y, s);
  if (rc != CT_OK) snprintf(err, len, "%s", ct_last_error(ctx));
  return rc;
}

static void test_untrusted_database(void) {
  const char *spec = "n=2,c=3,h=47,w=45,k=24,r=11,s=11,stride=4,pad=2,prec=tf32";
  ct_problem p;
  ASSERT_EQ_INT(ct_problem_parse(spec, &p, NULL, 0), CT_OK);
  char db[300], err[1024];
  snprintf(db, sizeof db, "%s/untrusted.db", dir);
  ct_gen_variant tuned, fallback;
  ASSERT_EQ_INT(gpu_db_pick(&p, &g.limits, 0, &tuned), 0);
  ASSERT_EQ_INT(ct_gen_default_variant(&p, &g.limits, &fallback), CT_OK);
  ASSERT_EQ_INT(gpu_db_store(db, &g.device, &g.limits, &p, &tuned, err, sizeof err), CT_OK);
  ct_tune_data d;
  ASSERT_EQ_INT(ct_tune_data_create(&g, &p, ct_tune_fresh_seed(), &d, err, sizeof err), CT_OK);

  /* Read the honest entry's source hash, then damage the entry in two
  ** ways: a stale source hash; another family's cubin under it. */
  static const struct {
    const char *what;
    const char *sql;
    ct_path want;
  } cases[] = {
      {"honest entry", NULL, CT_PATH_TUNED_CUBIN},
      {"stale source hash", "UPDATE winners SET source_hash = source_hash + 1;",
       CT_PATH_TUNED_COMPILED},
      {"another family's cubin", "", CT_PATH_TUNED_COMPILED},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    ASSERT_EQ_INT(gpu_db_store(db, &g.device, &g.limits, &p, &tuned, err, sizeof err), CT_OK);
    if (cases[i].sql && cases[i].sql[0]) {
      sqlite3 *h = NULL;
      ASSERT_EQ_INT(sqlite3_open(db, &h), SQLITE_OK);
      ASSERT_EQ_INT(sqlite3_exec(h, cases[i].sql, NULL, NULL, NULL), SQLITE_OK);
      sqlite3_close(h);
    } else if (cases[i].sql) {
      /* The default variant's real cubin stored under the tuned name, with
      ** the tuned variant's source hash: it loads, but lacks the kernel. */
      char db2[320];
      snprintf(db2, sizeof db2, "%s.other", db);
      ASSERT_EQ_INT(gpu_db_store(db2, &g.device, &g.limits, &p, &fallback, err, sizeof err), CT_OK);
      char sql[700];
      snprintf(sql, sizeof sql,
               "ATTACH '%s' AS o; UPDATE winners SET cubin = (SELECT cubin FROM"
               " o.winners), cubin_hash = (SELECT cubin_hash FROM o.winners);",
               db2);
      sqlite3 *h = NULL;
      ASSERT_EQ_INT(sqlite3_open(db, &h), SQLITE_OK);
      ASSERT_EQ_INT(sqlite3_exec(h, sql, NULL, NULL, NULL), SQLITE_OK);
      sqlite3_close(h);
    }
    ct_context *ctx = NULL;
    ASSERT_EQ_INT(ct_open(db, g.ordinal, &ctx), CT_OK);
    ct_tune_check chk;
    ASSERT_EQ_INT(ct_tune_verify(&g, &d, run_forward, ctx, &chk, err, sizeof err), CT_OK);
    ct_path path;
    ct_forward_path(ctx, &p, &path, NULL, 0);
    char why[1024];
    ct_forward_reason(ctx, &p, why, sizeof why);
    printf("%-24s %-15s %s\n    %s\n", cases[i].what, ct_path_name(path),
           chk.passes ? "pass" : chk.reason, why);
    ASSERT_TRUE(chk.passes);
    ASSERT_EQ_INT(path, cases[i].want);
    ct_close(ctx);
  }
  ct_tune_data_destroy(&d);
}

/* ---------------------------------------------------------------------- */
/* Weights packed once                                                     */

/* For a tuned winner of each family that packs its weights (gm, gmk, gmp,
** pw, tap: their weight pass into memory of its own), of one whose
** kernels read the packed weights by pointer (s2d_wg) and of ones that
** read w as it is (direct, wg), both precisions (the fp32 twins): the
** output through ct_weights_pack and ct_forward_packed equals
** ct_forward's bit for bit and passes the precision contract; with w then
** overwritten, ct_forward_packed gives the same output again while
** ct_forward follows the new w. */
static const struct { const char *spec, *family; } packed_cases[] = {
    {"n=2,c=5,h=17,w=19,k=20,r=3,s=3,stride=2,pad=1", "gm"},
    {"n=2,c=5,h=17,w=19,k=20,r=3,s=3,stride=2,pad=1", "s2d_wg"},
    {"n=3,c=130,h=12,w=30,k=70,r=1,s=1", "pw"},
    {"n=3,c=40,h=20,w=44,k=70,r=3,s=5,pad=1x2,dil=1x2,act=relu", "tap"},
    {"n=2,c=3,h=64,w=48,k=100,r=16,s=16,stride=16", "gmp"},
    {"n=1,c=512,h=7,w=7,k=512,r=3,s=3,pad=1", "gmk"},
    {"n=2,c=3,h=41,w=39,k=24,r=5,s=5,stride=2,pad=2", "direct"},
    {"n=2,c=3,h=41,w=39,k=24,r=5,s=5,stride=2,pad=2", "wg"},
};
#define N_PACKED (sizeof packed_cases / sizeof packed_cases[0])

/* The first variant of family `name` for p into *out; 0, or -1 if none. */
static int family_variant(const ct_problem *p, const char *name, ct_gen_variant *out) {
  ct_gen_variant *vs = NULL;
  size_t n = 0;
  int found = -1;
  if (ct_gen_enumerate(p, &g.limits, &vs, &n) != CT_OK) return -1;
  for (size_t i = 0; i < n && found < 0; i++)
    if (strcmp(vs[i].family->name, name) == 0) {
      *out = vs[i];
      found = 0;
    }
  free(vs);
  return found;
}

/* y (n floats) into a new host array. */
static float *host_copy(CUdeviceptr y, size_t n) {
  float *h = malloc(n * sizeof(float));
  if (h != NULL && (ct_drv.cuStreamSynchronize(g.stream) != CUDA_SUCCESS ||
                    ct_drv.cuMemcpyDtoH(h, y, n * sizeof(float)) != CUDA_SUCCESS)) {
    free(h);
    h = NULL;
  }
  return h;
}

static void test_packed_weights(void) {
  char db[300], err[1024];
  snprintf(db, sizeof db, "%s/packed.db", dir);
  ct_problem ps[2 * N_PACKED];
  for (size_t i = 0; i < 2 * N_PACKED; i++) {
    const int fp32 = (int)(i % 2);
    ASSERT_EQ_INT(ct_problem_parse(packed_cases[i / 2].spec, &ps[i], NULL, 0), CT_OK);
    ps[i].precision = fp32 ? CT_PREC_FP32 : CT_PREC_TF32;
    char fam[32];
    const char *base = packed_cases[i / 2].family;
    snprintf(fam, sizeof fam, "%s%s", base, fp32 && strcmp(base, "direct") != 0 ? "3" : "");
    ct_gen_variant v;
    if (family_variant(&ps[i], fam, &v) != 0) fprintf(stderr, "no %s for %s\n", fam, packed_cases[i / 2].spec);
    ASSERT_EQ_INT(family_variant(&ps[i], fam, &v), 0);
    ct_status rc = gpu_db_store(db, &g.device, &g.limits, &ps[i], &v, err, sizeof err);
    if (rc != CT_OK) fprintf(stderr, "storing %s: %s\n", v.name, err);
    ASSERT_EQ_INT(rc, CT_OK);
  }
  ct_context *ctx = NULL;
  ASSERT_EQ_INT(ct_open(db, g.ordinal, &ctx), CT_OK);
  int failures = 0;
  for (size_t i = 0; i < 2 * N_PACKED; i++) {
    ct_tune_data d;
    ASSERT_EQ_INT(ct_tune_data_create(&g, &ps[i], ct_tune_fresh_seed(), &d, err, sizeof err), CT_OK);
    CUdeviceptr y[3] = {0, 0, 0};
    for (int j = 0; j < 3; j++) ASSERT_EQ_INT(ct_drv.cuMemAlloc(&y[j], d.ny * sizeof(float)), CUDA_SUCCESS);
    const float *x = (const float *)(uintptr_t)d.x, *w = (const float *)(uintptr_t)d.w;
    const float *b = (const float *)(uintptr_t)d.b;
    ct_weights *wp = NULL;
    ASSERT_EQ_INT(forward(ctx, &d, y[0], g.stream), CT_OK);
    ASSERT_EQ_INT(ct_weights_pack(ctx, &d.p, w, g.stream, &wp), CT_OK);
    ASSERT_EQ_INT(ct_forward_packed(ctx, &d.p, x, wp, b, (float *)(uintptr_t)y[1], g.stream), CT_OK);
    float *plain = host_copy(y[0], d.ny), *packed = host_copy(y[1], d.ny);
    ASSERT_TRUE(plain != NULL && packed != NULL);
    ct_tune_check chk;
    ASSERT_EQ_INT(check_y(&d, y[1], &chk), 0);
    /* w overwritten (ones): the packed weights stay, ct_forward follows. */
    ASSERT_EQ_INT(ct_drv.cuMemsetD32Async(d.w, 0x3f800000u, d.nw, g.stream), CUDA_SUCCESS);
    ASSERT_EQ_INT(ct_forward_packed(ctx, &d.p, x, wp, b, (float *)(uintptr_t)y[2], g.stream), CT_OK);
    float *again = host_copy(y[2], d.ny);
    ASSERT_EQ_INT(forward(ctx, &d, y[0], g.stream), CT_OK);
    float *moved = host_copy(y[0], d.ny);
    ASSERT_TRUE(again != NULL && moved != NULL);
    ct_path path;
    char variant[CT_GEN_NAME_MAX], spec[CT_PROBLEM_SPEC_MAX];
    ct_forward_path(ctx, &d.p, &path, variant, sizeof variant);
    ct_problem_format(&d.p, spec, sizeof spec);
    const int same = memcmp(plain, packed, d.ny * sizeof(float)) == 0;
    const int kept = memcmp(packed, again, d.ny * sizeof(float)) == 0;
    const int follows = memcmp(packed, moved, d.ny * sizeof(float)) != 0;
    const int ok = same && kept && follows && chk.passes && path == CT_PATH_TUNED_CUBIN;
    printf("%s packed %-44s %-62s %zu bytes: %s%s%s%s\n", ok ? "ok  " : "FAIL", variant, spec,
           ct_weights_bytes(wp), same ? "" : "differs from ct_forward; ",
           kept ? "" : "changed with w; ", follows ? "" : "ct_forward ignored the new w; ",
           chk.passes ? "contract passes" : chk.reason);
    failures += !ok;
    ct_weights_free(wp);
    free(plain), free(packed), free(again), free(moved);
    for (int j = 0; j < 3; j++) ct_drv.cuMemFree(y[j]);
    ct_tune_data_destroy(&d);
  }
  ct_close(ctx);
  ASSERT_EQ_INT(failures, 0);
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  gpu_open_or_skip(&g);
  if (mkdtemp(dir) == NULL) return 1;
  RUN_TEST(test_threads_share_a_context);
  RUN_TEST(test_graph_capture);
  RUN_TEST(test_untrusted_database);
  RUN_TEST(test_packed_weights);
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
  ct_tune_gpu_close(&g);
  TEST_EXIT();
}
