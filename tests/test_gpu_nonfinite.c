/*
** test_gpu_nonfinite.c — NaNs and an infinity in x, through every family.
** x is drawn as the tuner draws it, then four of its values are replaced:
** a NaN whose payload lies only in the 13 bits TF32 drops (0x7f800001: a
** rounding that drops them without setting the quiet bit makes it
** infinite), the same with the sign set (0xff800abc), a quiet NaN
** (0x7fc00000), and +infinity.  The problems: a 1x1 over NCHW x (pw, pwq:
** x through a TFLOAT32 tensor map, rounded by TMA as it loads), the same
** over NHWC x (gm's maps over the caller's x), a padded 3x3 over NCHW x
** (gm's NHWC pass, tap, wg), depthwise 3x3s over NCHW and NHWC x (direct,
** dw, dwc); both precisions; the first variant of every
** family offered.  Every output whose window holds a NaN must be a NaN,
** every one whose window holds the infinity (and no NaN) must not be
** finite (3xTF32 splits an infinity into inf and inf - inf, a NaN), every
** other one finite; y is filled with a finite sentinel first, which no
** output may keep.
*/
#include <math.h>

#include "compile_jobs.h"
#include "ct_drv.h"
#include "ct_rt.h"
#include "gpu_common.h"

static ct_tune_gpu g;

static const char *shapes[] = {
    "n=2,c=64,h=16,w=16,k=40,r=1,s=1",
    "n=2,c=64,h=16,w=16,k=40,r=1,s=1,layout=nhwc",
    "n=2,c=64,h=16,w=16,k=40,r=3,s=3,pad=1",
    "n=2,c=64,h=16,w=16,k=64,r=3,s=3,pad=1,groups=64",
    "n=2,c=64,h=16,w=16,k=128,r=3,s=3,pad=1,groups=64,layout=nhwc",
};

/* The replaced inputs: image, channel, row, column, bits. */
static const struct {
  int n, c, h, w;
  unsigned bits;
} specials[] = {
    {0, 3, 5, 7, 0x7f800001u},
    {1, 10, 0, 0, 0xff800abcu},
    {1, 33, 9, 14, 0x7fc00000u},
    {0, 20, 12, 2, 0x7f800000u},
};
enum { N_SPECIALS = sizeof specials / sizeof specials[0] };

#define SENTINEL 1.0e30f

static int64_t x_index(const ct_problem *p, int n, int c, int h, int w) {
  return p->layout == CT_LAYOUT_NHWC ? (((int64_t)n * p->h + h) * p->w + w) * p->c + c
                                     : (((int64_t)n * p->c + c) * p->h + h) * p->w + w;
}

/* What output (n, k, oh, ow) must be: 2 a NaN, 1 not finite, 0 finite.
** Output channel k reads the channels of its group alone. */
static int expected(const ct_problem *p, int n, int k, int oh, int ow) {
  const int64_t cg = p->c / p->groups, g = k / (p->k / p->groups);
  int want = 0;
  for (int i = 0; i < N_SPECIALS; i++) {
    if (specials[i].n != n || specials[i].c / cg != g) continue;
    /* Does the window of (oh, ow) cover the input at (h, w)? */
    const int dh = specials[i].h - (oh * p->stride_h - p->pad_h);
    const int dw = specials[i].w - (ow * p->stride_w - p->pad_w);
    if (dh < 0 || dw < 0 || dh % p->dil_h || dw % p->dil_w || dh / p->dil_h >= p->r ||
        dw / p->dil_w >= p->s)
      continue;
    const int nan = (specials[i].bits & 0x7fffffu) != 0;
    if (nan) want = 2;
    else if (want == 0) want = 1;
  }
  return want;
}

/* variant_keep: the first variant of each family. */
static int first_of_family(const ct_gen_variant *all, size_t i, void *state) {
  (void)state;
  return i == 0 || all[i - 1].family != all[i].family;
}

static void test_nonfinite_inputs(void) {
  int runs = 0, bad = 0;
  for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
    for (int prec = CT_PREC_TF32; prec <= CT_PREC_FP32; prec++) {
      ct_problem p;
      ASSERT_EQ_INT(ct_problem_parse(shapes[si], &p, NULL, 0), CT_OK);
      p.precision = (ct_precision)prec;
      job *jobs = NULL;
      ct_gen_variant *sel = NULL;
      const long kept = compile_kept(&p, &g.limits, first_of_family, NULL, &jobs, &sel);
      ASSERT_TRUE(kept >= 0);
      const size_t nj = (size_t)kept;

      ct_tune_data d;
      char err[1024];
      ASSERT_EQ_INT(ct_tune_data_create(&g, &p, ct_tune_fresh_seed(), &d, err, sizeof err),
                    CT_OK);
      for (int i = 0; i < N_SPECIALS; i++) {
        const int64_t at = x_index(&p, specials[i].n, specials[i].c, specials[i].h,
                                   specials[i].w);
        ASSERT_EQ_INT(ct_drv.cuMemcpyHtoD(d.x + (CUdeviceptr)at * 4, &specials[i].bits, 4),
                      CUDA_SUCCESS);
      }
      int64_t P, Q;
      ct_problem_output(&p, &P, &Q);
      float *y = malloc(d.ny * sizeof *y);
      ASSERT_TRUE(y != NULL);
      for (size_t i = 0; i < nj; i++) {
        job *j = &jobs[i];
        runs++;
        ct_status rc = j->rc;
        CUresult cr = CUDA_SUCCESS;
        if (rc == CT_OK) {
          ct_rt_kernel k;
          rc = ct_rt_kernel_load(&sel[i], j->out.cubin, &k, &cr);
          if (rc == CT_OK) {
            cr = ct_drv.cuMemsetD32Async(d.y, 0x7149f2cau /* SENTINEL */, d.ny, g.stream);
            if (cr == CUDA_SUCCESS)
              rc = ct_rt_kernel_launch(&k, d.x, d.w, d.b, d.y, g.stream, &cr);
            if (rc == CT_OK && cr == CUDA_SUCCESS) cr = ct_drv.cuStreamSynchronize(g.stream);
            if (rc == CT_OK && cr == CUDA_SUCCESS)
              cr = ct_drv.cuMemcpyDtoH(y, d.y, d.ny * sizeof *y);
            ct_rt_kernel_unload(&k);
          }
        }
        if (rc != CT_OK || cr != CUDA_SUCCESS) {
          bad++;
          fprintf(stderr, "FAIL %s %s %s: status %d, CUresult %d %s\n", shapes[si],
                  ct_precision_name(p.precision), j->name, (int)rc, (int)cr,
                  j->rc != CT_OK && j->out.log ? j->out.log : "");
          continue;
        }
        long wrong = 0;
        for (int64_t n = 0; n < p.n; n++)
          for (int64_t kk = 0; kk < p.k; kk++)
            for (int64_t oh = 0; oh < P; oh++)
              for (int64_t ow = 0; ow < Q; ow++) {
                const int64_t at = p.layout == CT_LAYOUT_NHWC
                                       ? ((n * P + oh) * Q + ow) * p.k + kk
                                       : ((n * p.k + kk) * P + oh) * Q + ow;
                const float v = y[at];
                const int want = expected(&p, (int)n, (int)kk, (int)oh, (int)ow);
                const int fine = v == SENTINEL ? 0
                                 : want == 2   ? isnan(v)
                                 : want == 1   ? !isfinite(v)
                                               : isfinite(v);
                if (!fine && wrong++ < 3)
                  fprintf(stderr, "  %s %s: y[n=%lld][k=%lld][%lld][%lld] = %g, want %s\n",
                          j->name, ct_precision_name(p.precision), (long long)n, (long long)kk,
                          (long long)oh, (long long)ow, (double)v,
                          want == 2 ? "NaN" : want == 1 ? "not finite" : "finite");
              }
        if (wrong) {
          bad++;
          fprintf(stderr, "FAIL %s %s %s: %ld outputs wrong\n", shapes[si],
                  ct_precision_name(p.precision), j->name, wrong);
        }
      }
      printf("%-50s %s: %zu families with NaN and infinite inputs\n", shapes[si],
             ct_precision_name(p.precision), nj);
      free(y);
      ct_tune_data_destroy(&d);
      jobs_free(jobs, nj);
      free(sel);
    }
  printf("%d variant runs on non-finite inputs, %d wrong\n", runs, bad);
  ASSERT_EQ_INT(bad, 0);
  ASSERT_TRUE(runs > 0);
}

int main(void) {
  gpu_open_or_skip(&g);
  RUN_TEST(test_nonfinite_inputs);
  ct_tune_gpu_close(&g);
  TEST_EXIT();
}
