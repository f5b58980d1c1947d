/*
** test_gpu_offsets.c — the kernels on tensors that start 4 bytes past a
** 16-byte boundary, as ct_forward accepts them (4-byte aligned).  Several
** templates take 16-byte copy paths (cp.async of 16 bytes, bulk copies)
** only when x is 16-byte aligned and fall back otherwise; the tuner's own
** tensors are always aligned, so without this test those fallbacks would
** run only on problems whose rows are not a multiple of 4 floats.  On
** problems whose image rows are a multiple of 4 floats, both precisions,
** the variants of each family that together take every value of every
** parameter the family offers there (each in order, kept when it brings a
** value not seen yet): x, w, b and y each one float past an allocation's
** start, every output checked against the float64 reference under the
** precision contract.  A variant whose tensor maps read the caller's x
** or w (gm on an NHWC problem with C % 4 = 0, pw's x, and its w where
** C % 4 = 0 and w is at least 128 KiB or the variant's boxes stay inside
** it) must refuse such tensors
** instead (CT_ERR_INVALID_ARG, nothing launched), and only those; such a
** variant then runs on aligned x and w with b and y still shifted (pw's
** epilogue stores y 16 bytes at a time only when y is 16-byte aligned).
*/
#include "compile_jobs.h"
#include "ct_drv.h"
#include "ct_rt.h"
#include "gpu_common.h"

static ct_tune_gpu g;

/* Rows of 220, 64 and 224 floats; stride 4 along the width (wgs, wgr),
** K past 64 and not a multiple of 48, C splitting unevenly across a
** cluster (wg3 KS 2), padding, no bias; 1x1s over 1024- and 256-pixel
** planes (pw; the second's w, 128 KiB, read in place at tf32). */
static const char *shapes[] = {
    "n=2,c=3,h=45,w=220,k=90,r=11,s=11,stride=4,pad=2",
    "n=1,c=4,h=20,w=64,k=20,r=3,s=3,stride=1,pad=1",
    "n=1,c=3,h=40,w=224,k=70,r=11,s=11,stride=4,pad=2,bias=0",
    "n=4,c=64,h=15,w=13,k=70,r=3,s=3,pad=1,layout=nhwc",
    "n=2,c=40,h=16,w=64,k=24,r=1,s=1",
    "n=2,c=128,h=16,w=16,k=256,r=1,s=1",
};

/* 1 when a map of v reads the caller's tensors (not the workspace). */
static int maps_caller(const ct_gen_variant *v) {
  for (int i = 0; i < v->n_maps; i++)
    if (v->maps[i].buffer != CT_GEN_BUF_WS) return 1;
  return 0;
}

/* *p = a new allocation of n + 1 floats holding the n floats of d (device;
** 0: left unwritten) one float in: 4 bytes past the allocation's start,
** which is 256-byte aligned. */
static void shifted_copy(CUdeviceptr *p, CUdeviceptr d, size_t n) {
  ASSERT_EQ_INT(ct_drv.cuMemAlloc(p, (n + 1) * 4), CUDA_SUCCESS);
  if (n && d) {
    float *h = malloc(n * 4);
    ASSERT_TRUE(h != NULL);
    ASSERT_EQ_INT(ct_drv.cuMemcpyDtoH(h, d, n * 4), CUDA_SUCCESS);
    ASSERT_EQ_INT(ct_drv.cuMemcpyHtoD(*p + 4, h, n * 4), CUDA_SUCCESS);
    free(h);
  }
}

/* Runs k once on the shifted tensors (x and w: d's own, aligned, when
** maps_aligned), y poisoned with NaN first, and checks y against d's
** reference.  Returns CT_OK (then *chk says pass / fail) or the failure
** (message in err). */
static ct_status run_shifted(const ct_rt_kernel *k, ct_tune_data *d, CUdeviceptr x,
                             CUdeviceptr w, CUdeviceptr b, CUdeviceptr y, int maps_aligned,
                             ct_tune_check *chk, char *err, size_t len) {
  CUresult cr = ct_drv.cuMemsetD32Async(y + 4, 0x7fc00000u, d->ny, g.stream);
  ct_status rc = CT_OK;
  if (cr == CUDA_SUCCESS &&
      (rc = ct_rt_kernel_launch(k, maps_aligned ? d->x : x + 4, maps_aligned ? d->w : w + 4,
                                d->nb ? b + 4 : 0, y + 4, g.stream, &cr)) != CT_OK) {
    snprintf(err, len, "launch: status %d, CUresult %d", (int)rc, (int)cr);
    return rc;
  }
  if (cr == CUDA_SUCCESS) cr = ct_drv.cuStreamSynchronize(g.stream);
  if (cr != CUDA_SUCCESS) {
    snprintf(err, len, "CUresult %d", (int)cr);
    return CT_ERR_CUDA;
  }
  return ct_tune_check_output(&g, d, y + 4, chk, err, len);
}

/* variant_keep: within each family, the variants that bring a parameter
** value not seen yet in it (a family without parameters: every one);
** state is the seen table. */
static int brings_value(const ct_gen_variant *all, size_t i, void *state) {
  char(*seen)[CT_GEN_MAX_VALUES] = state;
  const ct_gen_family *f = all[i].family;
  if (i == 0 || all[i - 1].family != f) memset(seen, 0, CT_GEN_MAX_PARAMS * sizeof *seen);
  int fresh = 0;
  for (int k = 0; k < f->n_params; k++)
    for (int e = 0; e < f->params[k].n_values; e++)
      if (f->params[k].values[e] == all[i].values[k] && !seen[k][e]) {
        seen[k][e] = 1;
        fresh = 1;
      }
  return fresh || f->n_params == 0;
}

static void test_shifted_tensors(void) {
  int checked = 0, bad = 0, refused = 0;
  for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
    for (int prec = CT_PREC_TF32; prec <= CT_PREC_FP32; prec++) {
      ct_problem p;
      ASSERT_EQ_INT(ct_problem_parse(shapes[si], &p, NULL, 0), CT_OK);
      p.precision = (ct_precision)prec;
      /* Per family, the variants that bring a parameter value not seen
      ** yet in the family (sel[i] is jobs[i]'s). */
      char seen[CT_GEN_MAX_PARAMS][CT_GEN_MAX_VALUES];
      job *jobs = NULL;
      ct_gen_variant *sel = NULL;
      const long kept = compile_kept(&p, &g.limits, brings_value, seen, &jobs, &sel);
      ASSERT_TRUE(kept >= 0);
      const size_t nj = (size_t)kept;

      ct_tune_data d;
      char err[1024];
      ASSERT_EQ_INT(ct_tune_data_create(&g, &p, ct_tune_fresh_seed(), &d, err, sizeof err),
                    CT_OK);
      CUdeviceptr x = 0, w = 0, b = 0, y = 0;
      shifted_copy(&x, d.x, d.nx);
      shifted_copy(&w, d.w, d.nw);
      shifted_copy(&b, d.b, d.nb);
      shifted_copy(&y, 0, d.ny);
      for (size_t i = 0; i < nj; i++) {
        job *j = &jobs[i];
        checked++;
        ct_tune_check chk = {0};
        ct_status rc = j->rc;
        if (rc != CT_OK) {
          snprintf(err, sizeof err, "compile: %s", j->out.log ? j->out.log : "");
        } else {
          ct_rt_kernel k;
          CUresult cr;
          rc = ct_rt_kernel_load(&sel[i], j->out.cubin, &k, &cr);
          if (rc != CT_OK) {
            snprintf(err, sizeof err, "load: CUresult %d", (int)cr);
          } else {
            rc = run_shifted(&k, &d, x, w, b, y, 0, &chk, err, sizeof err);
            if (maps_caller(&sel[i])) { /* must refuse, and nothing else */
              refused += rc == CT_ERR_INVALID_ARG;
              if (rc != CT_ERR_INVALID_ARG) {
                bad++;
                fprintf(stderr, "FAIL %s %s %s: ran on 4-byte aligned tensors its maps "
                        "cannot read (%s)\n", shapes[si], ct_precision_name(p.precision),
                        j->name, rc != CT_OK ? err : "no error");
              }
              /* With x and w aligned, the shifted b and y are its to handle. */
              rc = run_shifted(&k, &d, x, w, b, y, 1, &chk, err, sizeof err);
            }
            ct_rt_kernel_unload(&k);
          }
        }
        if (rc != CT_OK || !chk.passes) {
          bad++;
          fprintf(stderr, "FAIL %s %s %s: %s\n", shapes[si], ct_precision_name(p.precision),
                  j->name, rc != CT_OK ? err : "outside the precision contract");
        }
      }
      printf("%-60s %s: %zu variants on shifted tensors\n", shapes[si],
             ct_precision_name(p.precision), nj);
      ct_drv.cuMemFree(x);
      ct_drv.cuMemFree(w);
      ct_drv.cuMemFree(b);
      ct_drv.cuMemFree(y);
      ct_tune_data_destroy(&d);
      jobs_free(jobs, nj);
      free(sel);
    }
  }
  printf("%d variant runs on shifted tensors, %d failed, %d refused (maps over x and w)\n",
         checked, bad, refused);
  ASSERT_EQ_INT(bad, 0);
  ASSERT_TRUE(refused > 0);
}

int main(void) {
  gpu_open_or_skip(&g);
  RUN_TEST(test_shifted_tensors);
  ct_tune_gpu_close(&g);
  TEST_EXIT();
}
