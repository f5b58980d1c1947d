/*
** test_gpu_shapes.c — every shape runs correctly through ct_forward, tuned
** or not: 54 conv2d shapes (N = 1, C = 1 and 5, K = 1, odd H and W, H or W
** of 1, stride larger than the kernel, dilation 2 and 3, padding larger than
** half the kernel, 1x1 kernels, even kernels, asymmetric pairs, bias or
** not, the stems of AlexNet, ResNet and ViT, three with a fused ReLU, one
** of them a tuned problem's shape, two NHWC, and three grouped: 4 groups,
** depthwise with a ReLU, and depthwise with a channel multiplier of 2 in
** NHWC; two with a fused ReLU6, a 1x1 and an NHWC depthwise), at tf32 and
** fp32, each
** checked against the float64 reference under its precision contract, through
** two contexts:
**   - no database: every shape takes the default variant;
**   - a database with a few tuned problems (real cubins of non-default
**     families, stored as the tuner stores them): those take their stored
**     cubin, the others the nearest tuned problem's winner where it is valid
**     for them, else the default.
** And a database that is not one: the default, still correct.  And tensors
** past 2^31 elements, and one too large for the device.
*/
#include <time.h>
#include <unistd.h>

#include "ct_drv.h"
#include "gpu_common.h"
#include "gpu_db.h"

static const char *shapes[] = {
    "n=1,c=1,h=1,w=1,k=1,r=1,s=1",
    "n=1,c=1,h=7,w=9,k=1,r=3,s=3",
    "n=1,c=5,h=13,w=11,k=7,r=3,s=3,pad=1",
    "n=2,c=5,h=17,w=15,k=16,r=5,s=5,pad=2,bias=0",
    "n=1,c=3,h=224,w=224,k=96,r=11,s=11,stride=4,pad=2",
    "n=3,c=3,h=63,w=61,k=20,r=11,s=11,stride=4,pad=2",
    "n=2,c=16,h=33,w=31,k=1,r=1,s=1",
    "n=4,c=32,h=14,w=14,k=64,r=1,s=1",
    "n=2,c=8,h=15,w=15,k=24,r=1,s=1,stride=2",
    "n=1,c=4,h=20,w=20,k=8,r=2,s=2,stride=3",
    "n=2,c=3,h=31,w=29,k=5,r=3,s=3,stride=5,pad=1",
    "n=1,c=2,h=40,w=37,k=6,r=1,s=1,stride=4",
    "n=2,c=4,h=21,w=19,k=8,r=3,s=3,pad=2,dil=2",
    "n=1,c=6,h=27,w=25,k=12,r=3,s=3,pad=3,dil=3",
    "n=2,c=3,h=30,w=28,k=4,r=5,s=5,pad=4,dil=2",
    "n=1,c=2,h=9,w=11,k=3,r=3,s=3,pad=2",
    "n=1,c=1,h=5,w=5,k=2,r=3,s=3,pad=4",
    "n=2,c=7,h=11,w=13,k=9,r=3,s=5,stride=2x1,pad=1x2",
    "n=1,c=3,h=19,w=23,k=10,r=7,s=1,pad=3x0,dil=1x2",
    "n=5,c=9,h=12,w=10,k=17,r=3,s=3,stride=2,pad=1",
    "n=1,c=64,h=56,w=56,k=64,r=3,s=3,pad=1",
    "n=2,c=64,h=28,w=28,k=128,r=3,s=3,stride=2,pad=1",
    "n=1,c=3,h=224,w=224,k=64,r=7,s=7,stride=2,pad=3",
    "n=1,c=3,h=224,w=224,k=64,r=16,s=16,stride=16",
    "n=2,c=128,h=7,w=7,k=256,r=1,s=1",
    "n=3,c=1,h=28,w=28,k=32,r=5,s=5",
    "n=1,c=5,h=3,w=3,k=5,r=3,s=3",
    "n=1,c=2,h=1,w=50,k=3,r=1,s=5",
    "n=2,c=3,h=50,w=1,k=3,r=5,s=1,pad=2x0",
    "n=7,c=3,h=9,w=9,k=5,r=3,s=3,stride=3",
    "n=1,c=8,h=32,w=32,k=8,r=3,s=3,pad=1,dil=2x3",
    "n=1,c=3,h=35,w=35,k=2,r=3,s=3,stride=2,pad=5,dil=3",
    "n=2,c=5,h=16,w=16,k=1,r=5,s=5,pad=2,bias=0",
    "n=1,c=1,h=64,w=64,k=1,r=1,s=1,bias=0",
    "n=4,c=16,h=9,w=9,k=33,r=3,s=3",
    "n=1,c=12,h=17,w=17,k=100,r=4,s=4,stride=2,pad=1",
    "n=1,c=3,h=227,w=227,k=96,r=11,s=11,stride=4",
    "n=2,c=20,h=10,w=10,k=40,r=10,s=10",
    "n=1,c=5,h=8,w=8,k=3,r=3,s=3,stride=7,pad=1",
    "n=3,c=6,h=25,w=25,k=7,r=5,s=5,stride=6,pad=3,dil=2",
    "n=1,c=3,h=64,w=64,k=96,r=11,s=11,stride=4,pad=2,bias=0",
    "n=16,c=3,h=32,w=32,k=16,r=3,s=3,pad=1",
    "n=1,c=256,h=14,w=14,k=256,r=3,s=3,pad=1",
    "n=1,c=2,h=12,w=12,k=4,r=3,s=3,pad=6",
    "n=2,c=5,h=17,w=15,k=16,r=5,s=5,pad=2,act=relu",
    "n=1,c=64,h=56,w=56,k=64,r=3,s=3,pad=1,act=relu",
    "n=1,c=3,h=224,w=224,k=64,r=7,s=7,stride=2,pad=3,bias=0,act=relu",
    "n=2,c=5,h=17,w=15,k=16,r=5,s=5,pad=2,layout=nhwc",
    "n=1,c=64,h=56,w=56,k=64,r=3,s=3,pad=1,act=relu,layout=nhwc",
    "n=2,c=8,h=13,w=11,k=16,r=3,s=3,pad=1,groups=4",
    "n=1,c=32,h=28,w=28,k=32,r=3,s=3,stride=2,pad=1,act=relu,groups=32",
    "n=2,c=12,h=9,w=9,k=24,r=5,s=5,pad=2,layout=nhwc,groups=12",
    "n=2,c=24,h=15,w=13,k=48,r=1,s=1,act=relu6",
    "n=2,c=48,h=14,w=14,k=48,r=3,s=3,stride=2,pad=1,act=relu6,groups=48,layout=nhwc",
};
#define N_SHAPES (sizeof shapes / sizeof shapes[0])

/* The tuned problems of the second context: indices into shapes. */
static const size_t anchors[] = {5, 20, 7, 22};
#define N_ANCHORS (sizeof anchors / sizeof anchors[0])

static ct_tune_gpu g;
static char dir[] = "/tmp/convtune-shapes-XXXXXX";

static int is_anchor(size_t si) {
  for (size_t i = 0; i < N_ANCHORS; i++)
    if (anchors[i] == si) return 1;
  return 0;
}

/* Forward d->p through ctx, verify; prints a line.  Returns the path, or
** CT_PATH_NONE after a failure (counted). */
static ct_path check_one(ct_context *ctx, const char *label, ct_tune_data *d,
                         int *failures) {
  ct_tune_check chk;
  char err[1024];
  char spec[CT_PROBLEM_SPEC_MAX];
  ct_problem_format(&d->p, spec, sizeof spec);
  if (ct_tune_verify(&g, d, ct_tune_run_forward, ctx, &chk, err, sizeof err) != CT_OK) {
    printf("FAIL %-8s %s: %s\n", label, spec, err);
    (*failures)++;
    return CT_PATH_NONE;
  }
  ct_path path;
  char variant[CT_GEN_NAME_MAX];
  ct_forward_path(ctx, &d->p, &path, variant, sizeof variant);
  printf("%s %-8s %-62s %-14s %-44s rel %.1e\n", chk.passes ? "ok  " : "FAIL",
         label, spec, ct_path_name(path), variant, chk.rel_err);
  if (!chk.passes) {
    printf("     %s\n", chk.reason);
    (*failures)++;
    return CT_PATH_NONE;
  }
  return path;
}

static void test_every_shape(void) {
  ASSERT_TRUE(N_SHAPES >= 40);
  char db[300], err[1024];
  snprintf(db, sizeof db, "%s/tuning.db", dir);
  /* The tuned problems: a non-default family each, both precisions. */
  for (int prec = CT_PREC_TF32; prec <= CT_PREC_FP32; prec++) {
    for (size_t i = 0; i < N_ANCHORS; i++) {
      ct_problem p;
      ASSERT_EQ_INT(ct_problem_parse(shapes[anchors[i]], &p, NULL, 0), CT_OK);
      p.precision = (ct_precision)prec;
      ct_gen_variant v;
      if (gpu_db_pick(&p, &g.limits, (int)i, &v) != 0) {
        ASSERT_EQ_INT(ct_gen_default_variant(&p, &g.limits, &v), CT_OK);
      }
      ct_status rc = gpu_db_store(db, &g.device, &g.limits, &p, &v, err, sizeof err);
      if (rc != CT_OK) fprintf(stderr, "storing %s: %s\n", shapes[anchors[i]], err);
      ASSERT_EQ_INT(rc, CT_OK);
      printf("tuned    %s %s: %s\n", shapes[anchors[i]],
             ct_precision_name(p.precision), v.name);
    }
  }
  ct_context *plain = NULL, *tuned = NULL;
  ASSERT_EQ_INT(ct_open("", g.ordinal, &plain), CT_OK);
  ASSERT_EQ_INT(ct_open(db, g.ordinal, &tuned), CT_OK);
  char msg[512];
  ASSERT_EQ_INT(ct_database_status(tuned, msg, sizeof msg), CT_OK);

  int failures = 0, n_checked = 0;
  int count[8] = {0};
  for (int prec = CT_PREC_TF32; prec <= CT_PREC_FP32; prec++) {
    for (size_t si = 0; si < N_SHAPES; si++) {
      ct_problem p;
      ASSERT_EQ_INT(ct_problem_parse(shapes[si], &p, NULL, 0), CT_OK);
      p.precision = (ct_precision)prec;
      ct_tune_data d;
      if (ct_tune_data_create(&g, &p, ct_tune_fresh_seed(), &d, err, sizeof err) != CT_OK) {
        printf("FAIL %s: test data: %s\n", shapes[si], err);
        failures++;
        continue;
      }
      ct_path a = check_one(plain, "default", &d, &failures);
      if (a != CT_PATH_NONE && a != CT_PATH_DEFAULT) {
        printf("FAIL: without a database the path must be default\n");
        failures++;
      }
      ct_path b = check_one(tuned, "tuned-db", &d, &failures);
      if (b != CT_PATH_NONE) {
        count[b]++;
        int want_cubin = is_anchor(si);
        if (want_cubin ? b != CT_PATH_TUNED_CUBIN
                       : (b != CT_PATH_NEAREST && b != CT_PATH_DEFAULT)) {
          char why[1024];
          ct_forward_reason(tuned, &p, why, sizeof why);
          printf("FAIL: unexpected path %s: %s\n", ct_path_name(b), why);
          failures++;
        }
      }
      n_checked += 2;
      ct_tune_data_destroy(&d);
    }
  }
  printf("%d forwards over %zu shapes x 2 precisions x 2 contexts: %d failed; "
         "tuned database paths: %d tuned-cubin, %d nearest, %d default\n",
         n_checked, N_SHAPES, failures, count[CT_PATH_TUNED_CUBIN],
         count[CT_PATH_NEAREST], count[CT_PATH_DEFAULT]);
  ASSERT_EQ_INT(failures, 0);
  ASSERT_EQ_INT(count[CT_PATH_TUNED_CUBIN], 2 * (int)N_ANCHORS);
  ASSERT_TRUE(count[CT_PATH_NEAREST] > 0);
  ct_close(plain);
  ct_close(tuned);
}

/* A file that is not a database: the context opens, says so, and runs the
** default, correctly. */
static void test_not_a_database(void) {
  char path[300], err[512];
  snprintf(path, sizeof path, "%s/junk.db", dir);
  FILE *f = fopen(path, "wb");
  ASSERT_TRUE(f != NULL);
  for (int i = 0; i < 4096; i++) fputc((i * 131) & 0xff, f);
  fclose(f);
  ct_context *ctx = NULL;
  ASSERT_EQ_INT(ct_open(path, g.ordinal, &ctx), CT_OK);
  char msg[512];
  ASSERT_EQ_INT(ct_database_status(ctx, msg, sizeof msg), CT_ERR_DB_CORRUPT);
  printf("database: %s\n", msg);
  ct_problem p;
  ASSERT_EQ_INT(ct_problem_parse(shapes[2], &p, NULL, 0), CT_OK);
  ct_tune_data d;
  ASSERT_EQ_INT(ct_tune_data_create(&g, &p, ct_tune_fresh_seed(), &d, err, sizeof err), CT_OK);
  int failures = 0;
  ASSERT_EQ_INT(check_one(ctx, "junk-db", &d, &failures), CT_PATH_DEFAULT);
  ASSERT_EQ_INT(failures, 0);
  ct_tune_data_destroy(&d);
  ct_close(ctx);
}

/* Tensors past 2^31 - 1 elements (y; x, also within one image; w): the
** default variant through ct_forward, checked in full against float64 on
** the GPU; then one output past index 2^31 corrupted, which the check must
** find there. */
static void test_big_tensors(void) {
  static const char *const big[] = {
      "n=2,c=4,h=1024,w=1024,k=1025,r=1,s=1,prec=tf32",        /* y 2.15e9 */
      "n=3,c=700,h=1024,w=1024,k=2,r=1,s=1,bias=0,prec=fp32",  /* x 2.2e9 */
      "n=1,c=3,h=30000,w=30000,k=1,r=3,s=3,pad=1,prec=tf32",   /* one image 2.7e9 */
      "n=1,c=2048,h=24,w=24,k=2048,r=23,s=23,bias=0,prec=fp32", /* w 2.2e9 */
  };
  ct_context *ctx = NULL;
  ASSERT_EQ_INT(ct_open("", g.ordinal, &ctx), CT_OK);
  int failures = 0;
  for (size_t i = 0; i < sizeof big / sizeof big[0]; i++) {
    ct_problem p;
    char err[1024];
    ASSERT_EQ_INT(ct_problem_parse(big[i], &p, NULL, 0), CT_OK);
    ASSERT_EQ_INT(ct_gen_index64(&p), 1);
    ct_tune_data d;
    ASSERT_EQ_INT(ct_tune_data_create(&g, &p, ct_tune_fresh_seed(), &d, err, sizeof err), CT_OK);
    ASSERT_EQ_INT(check_one(ctx, "big", &d, &failures), CT_PATH_DEFAULT);
    /* the last output, past 2^31 in y or in the outputs of the big input */
    size_t last = d.ny - 1;
    float v;
    ASSERT_EQ_INT(ct_drv.cuMemcpyDtoH(&v, d.y + last * 4, 4), CUDA_SUCCESS);
    v = v * 1.01f + 0.01f;
    ASSERT_EQ_INT(ct_drv.cuMemcpyHtoD(d.y + last * 4, &v, 4), CUDA_SUCCESS);
    ct_tune_check chk;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    ASSERT_EQ_INT(ct_tune_check_output(&g, &d, d.y, &chk, err, sizeof err), CT_OK);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("     corrupted y[%zu] (check of %zu outputs, %s reference: %.3f s): %s\n", last,
           d.ny, d.fused ? "recomputed" : "stored",
           (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec),
           chk.reason);
    ASSERT_EQ_INT(chk.passes, 0);
    ASSERT_EQ_INT((long long)chk.worst_index, (long long)last);
    ct_tune_data_destroy(&d);
  }
  ASSERT_EQ_INT(failures, 0);
  ct_close(ctx);
}

/* A problem larger than the device's memory is refused, and says so. */
static void test_too_big_for_the_device(void) {
  ct_problem p;
  char err[1024];
  ASSERT_EQ_INT(ct_problem_parse("n=64,c=64,h=4096,w=4096,k=64,r=1,s=1", &p, NULL, 0), CT_OK);
  ct_tune_data d;
  ASSERT_EQ_INT(ct_tune_data_create(&g, &p, ct_tune_fresh_seed(), &d, err, sizeof err),
                CT_ERR_NOMEM);
  printf("     %s\n", err);
  ASSERT_TRUE(strstr(err, "does not fit in device memory") != NULL);
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  gpu_open_or_skip(&g);
  if (mkdtemp(dir) == NULL) return 1;
  RUN_TEST(test_every_shape);
  RUN_TEST(test_not_a_database);
  RUN_TEST(test_big_tensors);
  RUN_TEST(test_too_big_for_the_device);
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
  ct_tune_gpu_close(&g);
  TEST_EXIT();
}
