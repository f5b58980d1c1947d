/*
** test_gpu_variants.c — every variant of the search space of odd shapes,
** both precisions, against the float64 reference on fresh random inputs;
** the GPU float64 reference itself against the CPU reference; and the
** templates' TF32 rounding.
*/
#include <math.h>

#include "ct_drv.h"
#include "ct_gen.h"
#include "ct_nvrtc.h"
#include "gpu_common.h"

static ct_tune_gpu g;

/* Odd shapes: C = 1, 3, 4, 5, 64; K not a multiple of any tile; odd H and
** W; stride 1 to 5 (and 3 x 2, for the space-to-depth pass; 3 x 4 and
** 2 x 4 with 35 and 75 output columns, for wgs; 56, 49 and 46 output
** columns with an odd output row count, a 4 x 2 stride, dilation 2 along
** the height); for wgr, K above 128, one past 64 and one past 96 (with a
** bias), one output row per image, widths not a multiple of 4; padding 0
** to 3; dilation 2; N = 1; no bias; for gm (TMA im2col), C = 130 with
** dilation 3 and K = 70 (one full and one partial 64-channel tile), a
** stride of 9, which it declines (gmp takes it, and the 4 x 4 stride 5
** with C = 3), and a reduction of 2340 (C = 260, a
** partial 32-channel block; gm3's chunks flushed many times, its last
** tile's rows reading past the hi copy's last image).  Then one with
** act=relu and two with act=relu6 (their inputs drawn wide enough that
** outputs pass 6), which between them reach every family's fused
** epilogue, and
** last two NHWC (layout=nhwc): C = 5 with a fused ReLU (the layout passes
** of gm and gm3, direct, and wg and wg3 reading x, w and y in place), and
** C = 64 (gm reading x and w through its maps at tf32, without a pass).  Last, the patch matrix (gmp, gmp3): ViT's
** 16 x 16 patches at stride 16, NHWC with a ReLU and 100 output channels,
** and a dilation of 130, past im2col's tap offsets.  And a 1x1 over NCHW
** x read in place (pw): C = 130 (a partial 32-channel k-tile), K = 70, 360
** pixels an image (a partial 128-pixel tile), with a fused ReLU.  And any
** filter over NCHW x read in place (tap): a 3 x 5 filter dilated 1 x 2,
** padded 1 x 2, stride 2 x 1, C = 40 (a partial 32-channel block), K =
** 70, 10 output rows (a partial 4-row tile) of 40 columns (a second
** 32-column segment 8 live); and 12 columns wide, tap's boxes of 2 rows
** x 16 columns (BQ = 16), the rows 2 apart (stride 2 x 1); and tap over
** the flattened plane (stride 1, W % 4 != 0): 14 x 14 padded, and 22
** wide, dilated, 16 output columns (the rest computed and dropped;
** columns wrapping across rows zeroed); and a padded 1x1, whose output
** rows are wider than x's (tap's rows, not the plane).  Every tap shape
** has windows starting off TMA's 16-byte boundary.  Last, one big enough
** for pwq's ping-pong consumers: a 1x1 over 36 x 36 planes, 21 64-pixel
** tiles an image (the last partial), K = 70 (a partial channel tile),
** C = 130 (a partial k-tile), a fused ReLU6.  And gm's weight map over
** the caller's w: a 1x1 over 7 x 9 planes (pw declines H W % 4 != 0),
** C = 256, K = 136 (a partial channel tile), w at least 128 KiB.  And
** gmp's over the caller's w (at tf32, R S C % 4 = 0, w at least 128 KiB,
** as for ViT's patches above): a 1x1 at stride 2 over odd planes, K = 132
** (a partial channel tile).  And maps over a caller's w of 16 KiB (64 x
** 64), below 128 KiB, where the variant's boxes stay inside it (BN = 64):
** pw's and gm's on an NCHW 1x1, gm's with x on an NHWC one, and on an
** NHWC 3x3 over 32 channels (w 72 KiB).  And pw's runs (planes of H W % 4
** != 0, one image a tile): 7 x 7 with C = 132 and K = 70 (partial channel
** block and tile), 5 x 5 with C = 40, a fused ReLU.  Last, residual=1
** (y read, then written): a 3x3 with a ReLU (gm, gmk, tap, direct), a 1x1
** over 360-pixel planes (pw's 16-byte runs, pwq), one over 7 x 7 planes
** (pw's runs, its scalar stores), an NHWC 3x3 (gm's NHWC epilogue,
** its 8-byte pairs: K even) and an NHWC 1x1 with K = 256 and a ReLU
** (ResNet-50's first bottleneck's last layer: gm at BN = 256 too).  And an
** NHWC 3x3 with K = 37, odd: gm's scalar NHWC stores.  Last, grouped
** problems (direct; dw and dwc where depthwise; tc and tc3 where NCHW with
** 4 or more output channels a group): 2 groups, depthwise at stride 2
** with a ReLU6, depthwise NHWC with a channel multiplier of 3, 8 groups
** with a residual and a ReLU, 16 groups of 4 channels at stride 2 with a
** ReLU6 (tc's BN = 8 half past each group), and 3 groups of 64 output
** channels over 7 x 7. */
static const char *shapes[] = {
    "n=2,c=3,h=67,w=59,k=96,r=11,s=11,stride=4,pad=2",
    "n=1,c=1,h=17,w=23,k=5,r=3,s=3,stride=1,pad=1",
    "n=3,c=4,h=31,w=29,k=13,r=5,s=3,stride=2,pad=0x3,bias=0",
    "n=1,c=5,h=40,w=41,k=33,r=3,s=3,stride=3,pad=3,dil=2",
    "n=2,c=64,h=15,w=13,k=70,r=3,s=3,stride=1,pad=1",
    "n=1,c=3,h=50,w=50,k=7,r=4,s=4,stride=5,pad=2",
    "n=2,c=3,h=20,w=21,k=17,r=1,s=1,stride=2,pad=0",
    "n=1,c=2,h=9,w=9,k=3,r=7,s=7,stride=1,pad=3,dil=1x2",
    "n=1,c=3,h=29,w=31,k=10,r=5,s=4,stride=3x2,pad=1x2",
    "n=1,c=5,h=37,w=139,k=40,r=7,s=6,stride=3x4,pad=1x3,dil=2x1",
    "n=1,c=2,h=20,w=300,k=100,r=5,s=5,stride=2x4,pad=2x1",
    "n=2,c=3,h=87,w=230,k=40,r=11,s=11,stride=4,pad=2",
    "n=1,c=5,h=45,w=100,k=33,r=5,s=6,stride=4x2,pad=1,dil=2x1,bias=0",
    "n=3,c=1,h=33,w=90,k=17,r=3,s=2,stride=2,pad=1",
    "n=3,c=2,h=9,w=61,k=130,r=3,s=7,stride=5x4,pad=0x3,dil=2x1,bias=0",
    "n=5,c=1,h=4,w=250,k=65,r=4,s=9,stride=3x4,pad=0,bias=0",
    "n=2,c=3,h=7,w=45,k=97,r=3,s=5,stride=2x4,pad=1x2",
    "n=1,c=130,h=19,w=17,k=70,r=3,s=3,stride=2,pad=1,dil=3",
    "n=2,c=4,h=40,w=41,k=9,r=2,s=2,stride=9,pad=1",
    "n=3,c=260,h=10,w=11,k=200,r=3,s=3,stride=1,pad=1",
    "n=2,c=40,h=20,w=44,k=70,r=3,s=5,stride=2x1,pad=1x2,dil=1x2",
    "n=2,c=64,h=24,w=12,k=70,r=3,s=3,stride=2x1,pad=1",
    "n=4,c=48,h=14,w=14,k=70,r=3,s=3,pad=1",
    "n=3,c=40,h=18,w=22,k=33,r=3,s=5,pad=0x1,dil=1x2",
    "n=2,c=16,h=30,w=40,k=40,r=1,s=1,pad=1,act=relu",
    "n=2,c=3,h=87,w=230,k=40,r=11,s=11,stride=4,pad=2,act=relu6",
    "n=2,c=64,h=15,w=13,k=70,r=3,s=3,stride=1,pad=1,act=relu6",
    "n=2,c=5,h=17,w=15,k=16,r=5,s=3,stride=2x1,pad=2x1,dil=1x2,act=relu,layout=nhwc",
    "n=4,c=64,h=15,w=13,k=70,r=3,s=3,pad=1,layout=nhwc",
    "n=2,c=3,h=64,w=48,k=100,r=16,s=16,stride=16,act=relu,layout=nhwc",
    "n=1,c=2,h=300,w=9,k=4,r=3,s=1,pad=1,dil=130",
    "n=3,c=130,h=12,w=30,k=70,r=1,s=1,act=relu",
    "n=16,c=130,h=36,w=36,k=70,r=1,s=1,act=relu6",
    "n=3,c=256,h=7,w=9,k=136,r=1,s=1,act=relu",
    "n=2,c=256,h=15,w=17,k=132,r=1,s=1,stride=2",
    "n=2,c=64,h=16,w=17,k=64,r=1,s=1",
    "n=4,c=64,h=15,w=13,k=64,r=1,s=1,layout=nhwc",
    "n=8,c=32,h=15,w=13,k=64,r=3,s=3,pad=1,layout=nhwc",
    "n=8,c=132,h=7,w=7,k=70,r=1,s=1",
    "n=64,c=40,h=5,w=5,k=24,r=1,s=1,act=relu",
    "n=2,c=64,h=15,w=13,k=70,r=3,s=3,pad=1,act=relu,residual=1",
    "n=3,c=130,h=12,w=30,k=70,r=1,s=1,residual=1",
    "n=3,c=132,h=7,w=7,k=70,r=1,s=1,act=relu,bias=0,residual=1",
    "n=4,c=64,h=15,w=13,k=70,r=3,s=3,pad=1,layout=nhwc,residual=1",
    "n=4,c=64,h=56,w=56,k=256,r=1,s=1,act=relu,layout=nhwc,residual=1",
    "n=2,c=32,h=9,w=11,k=37,r=3,s=3,pad=1,layout=nhwc",
    "n=2,c=64,h=15,w=13,k=96,r=3,s=3,pad=1,groups=2",
    "n=4,c=32,h=29,w=31,k=32,r=3,s=3,stride=2,pad=1,act=relu6,groups=32",
    "n=2,c=24,h=14,w=14,k=72,r=5,s=5,pad=2,layout=nhwc,groups=24",
    "n=2,c=64,h=9,w=13,k=64,r=3,s=3,pad=1,residual=1,act=relu,groups=8",
    "n=2,c=64,h=17,w=33,k=64,r=3,s=3,stride=2,pad=1,act=relu6,groups=16",
    "n=3,c=96,h=7,w=7,k=192,r=3,s=3,pad=1,groups=3",
};

/* The GPU reference equals the CPU reference bit for bit (the same sums in
** the same order, nothing fused), and so does the GPU check's verdict on an
** output that passes, one with an element off and one left unwritten; with
** act=relu, act=relu6, NHWC and a residual too. */
static void test_reference_matches_cpu(void) {
  static const char *const picked[] = {
      "n=1,c=5,h=40,w=41,k=33,r=3,s=3,stride=3,pad=3,dil=2",
      "n=2,c=64,h=15,w=13,k=70,r=3,s=3,stride=1,pad=1",
      "n=4,c=64,h=15,w=13,k=70,r=3,s=3,pad=1,layout=nhwc",
      "n=2,c=3,h=64,w=48,k=100,r=16,s=16,stride=16,act=relu,layout=nhwc",
      "n=2,c=64,h=15,w=13,k=70,r=3,s=3,pad=1,act=relu,residual=1",
      "n=2,c=24,h=14,w=14,k=72,r=5,s=5,stride=2,pad=2,layout=nhwc,groups=24",
      "n=2,c=64,h=9,w=13,k=64,r=3,s=3,pad=1,residual=1,groups=8",
      "n=2,c=32,h=9,w=11,k=40,r=3,s=3,pad=1,act=relu6,residual=1",
  };
  for (size_t pi = 0; pi < sizeof picked / sizeof picked[0]; pi++) {
    ct_problem p;
    ASSERT_EQ_INT(ct_problem_parse(picked[pi], &p, NULL, 0), CT_OK);
    ct_tune_data d;
    char err[512];
    ASSERT_EQ_INT(ct_tune_data_create(&g, &p, ct_tune_fresh_seed(), &d, err, sizeof err), CT_OK);
    float *x = malloc(d.nx * sizeof *x), *w = malloc(d.nw * sizeof *w),
          *b = malloc((d.nb + 1) * sizeof *b), *yf = malloc(d.ny * sizeof *yf),
          *res = p.residual ? malloc(d.ny * sizeof *res) : NULL;
    double *y = malloc(d.ny * sizeof *y), *as = malloc(d.ny * sizeof *as),
           *sq = malloc(d.ny * sizeof *sq);
    double *gy = NULL, *gas = NULL, *gsq = NULL;
    ASSERT_TRUE(x && w && b && y && as && sq && yf && (res || !p.residual));
    ASSERT_EQ_INT(ct_drv.cuMemcpyDtoH(x, d.x, d.nx * sizeof *x), CUDA_SUCCESS);
    ASSERT_EQ_INT(ct_drv.cuMemcpyDtoH(w, d.w, d.nw * sizeof *w), CUDA_SUCCESS);
    if (d.nb) ASSERT_EQ_INT(ct_drv.cuMemcpyDtoH(b, d.b, d.nb * sizeof *b), CUDA_SUCCESS);
    if (res) ASSERT_EQ_INT(ct_drv.cuMemcpyDtoH(res, d.res, d.ny * sizeof *res), CUDA_SUCCESS);
    ASSERT_EQ_INT(ct_tune_reference_cpu_residual(&p, x, w, d.nb ? b : NULL, res, y, as, sq),
                  CT_OK);
    ASSERT_EQ_INT(ct_tune_data_reference_host(&d, &gy, &gas, &gsq, err, sizeof err), CT_OK);
    size_t differ = 0;
    for (size_t i = 0; i < d.ny; i++)
      differ += memcmp(&y[i], &gy[i], 8) != 0 || memcmp(&as[i], &gas[i], 8) != 0 ||
                memcmp(&sq[i], &gsq[i], 8) != 0;
    printf("GPU vs CPU float64 reference on %s: %zu of %zu outputs differ\n",
           picked[pi], differ, d.ny);
    ASSERT_EQ_INT((long long)differ, 0);

    /* y = the reference rounded to fp32 (passes), then one element off,
    ** then one NaN: the GPU check (with the stored reference, and with the
    ** fused one that recomputes it) and the CPU check agree on each. */
    ct_tune_data fused;
    ASSERT_EQ_INT(ct_tune_data_create_mode(&g, &p, d.seed, CT_TUNE_REF_FUSED, &fused, err,
                                           sizeof err), CT_OK);
    ASSERT_EQ_INT(fused.fused, 1);
    ASSERT_EQ_INT(d.fused, 0);
    for (int round = 0; round < 3; round++) {
      for (size_t i = 0; i < d.ny; i++) yf[i] = (float)y[i];
      if (round == 1) yf[d.ny / 3] += (float)(0.01 * as[d.ny / 3]);
      if (round == 2) yf[d.ny - 1] = NAN;
      ASSERT_EQ_INT(ct_drv.cuMemcpyHtoD(d.y, yf, d.ny * sizeof *yf), CUDA_SUCCESS);
      ASSERT_EQ_INT(ct_drv.cuMemcpyHtoD(fused.y, yf, d.ny * sizeof *yf), CUDA_SUCCESS);
      ct_tune_check on_gpu, on_gpu_fused, on_cpu;
      ASSERT_EQ_INT(ct_tune_check_output(&g, &d, d.y, &on_gpu, err, sizeof err), CT_OK);
      ASSERT_EQ_INT(ct_tune_check_output(&g, &fused, fused.y, &on_gpu_fused, err, sizeof err),
                    CT_OK);
      ct_tune_contract(&p, yf, y, as, sq, (int64_t)d.ny, &on_cpu);
      ASSERT_EQ_INT(memcmp(&on_gpu, &on_cpu, sizeof on_gpu), 0);
      ASSERT_EQ_INT(memcmp(&on_gpu_fused, &on_cpu, sizeof on_gpu), 0);
      ASSERT_EQ_INT(on_gpu.passes, round == 0);
    }
    ct_tune_data_destroy(&fused);
    free(x); free(w); free(b); free(y); free(as); free(sq); free(yf); free(res);
    free(gy); free(gas); free(gsq);
    ct_tune_data_destroy(&d);
  }
}

/* A residual problem's second verification run (y = 2^-100, the outputs
** still 2^-100 counted as never written) on sums that cancel to exactly 0:
** x in eighths, its channels 1 and 3 copies of 0 and 2, and the weights of
** every even output channel (1/2, -1/2, 1/4, -1/4), so that any order of
** the sum gives 0.0f and the output, act(0 + 2^-100), is the probe again.
** The "kernel" is the host: it reads y, adds the float64 convolution
** (exact on these values), applies the ReLU and writes every output back.
** It passes; leaving one output unwritten in its second run fails it where
** that output's sum is not 0, and passes it where it is (the contract
** cannot tell that output from a written one: it holds the residual either
** way). */
typedef struct {
  const ct_problem *p;
  const float *x, *w;
  int64_t skip; /* the output left as it was in the second run; -1: none */
  int calls;
} host_conv;

static ct_status host_conv_run(void *arg, const ct_tune_data *d, CUstream s, char *err,
                               size_t len) {
  host_conv *h = arg;
  float *y = malloc(d->ny * sizeof *y), *res = malloc(d->ny * sizeof *res);
  double *ref = malloc(d->ny * sizeof *ref), *as = malloc(d->ny * sizeof *as),
         *sq = malloc(d->ny * sizeof *sq);
  ct_status rc = CT_ERR_NOMEM;
  snprintf(err, len, "the host convolution failed");
  if (y && res && ref && as && sq && ct_drv.cuStreamSynchronize(s) == CUDA_SUCCESS &&
      ct_drv.cuMemcpyDtoH(res, d->y, d->ny * sizeof *res) == CUDA_SUCCESS &&
      (rc = ct_tune_reference_cpu_residual(h->p, h->x, h->w, NULL, res, ref, as, sq)) == CT_OK) {
    h->calls++;
    for (size_t i = 0; i < d->ny; i++)
      y[i] = h->calls == 2 && (int64_t)i == h->skip ? res[i] : (float)ref[i];
    /* From pageable memory the copy may still be in flight on return:
    ** the context synchronised before the check's kernels read y. */
    if (ct_drv.cuMemcpyHtoD(d->y, y, d->ny * sizeof *y) != CUDA_SUCCESS ||
        ct_drv.cuCtxSynchronize() != CUDA_SUCCESS)
      rc = CT_ERR_CUDA;
  }
  free(y), free(res), free(ref), free(as), free(sq);
  return rc;
}

static void test_unwritten_on_cancelling_sums(void) {
  ct_problem p;
  ASSERT_EQ_INT(ct_problem_parse("n=2,c=4,h=6,w=5,k=6,r=1,s=1,bias=0,act=relu,residual=1", &p,
                                 NULL, 0), CT_OK);
  ct_tune_data d;
  char err[512];
  ASSERT_EQ_INT(ct_tune_data_create_mode(&g, &p, ct_tune_fresh_seed(), CT_TUNE_REF_FUSED, &d,
                                         err, sizeof err), CT_OK);
  float x[2 * 4 * 6 * 5], w[6 * 4];
  ASSERT_EQ_INT((long long)d.nx, (long long)(sizeof x / sizeof x[0]));
  ASSERT_EQ_INT((long long)d.nw, (long long)(sizeof w / sizeof w[0]));
  uint64_t r = ct_tune_fresh_seed() | 1;
  /* x (NCHW): channels 1 and 3 copies of 0 and 2, in eighths. */
  for (size_t i = 0; i < d.nx; i++) {
    const size_t plane = 6 * 5, c = i / plane % 4;
    r = r * 6364136223846793005ull + 1442695040888963407ull;
    x[i] = c % 2 ? x[i - plane] : (float)(1 + (r >> 61)) / 8.0f; /* 1/8 .. 1 */
  }
  /* w: even k (1/2, -1/2, 1/4, -1/4), a sum of 0; odd k in quarters, > 0. */
  for (int k = 0; k < 6; k++)
    for (int c = 0; c < 4; c++) {
      r = r * 6364136223846793005ull + 1442695040888963407ull;
      w[k * 4 + c] = k % 2 ? (float)(1 + (r >> 62)) / 4.0f
                           : (c < 2 ? 0.5f : 0.25f) * (c % 2 ? -1.0f : 1.0f);
    }
  ASSERT_EQ_INT(ct_drv.cuMemcpyHtoD(d.x, x, sizeof x), CUDA_SUCCESS);
  ASSERT_EQ_INT(ct_drv.cuMemcpyHtoD(d.w, w, sizeof w), CUDA_SUCCESS);
  ASSERT_EQ_INT(ct_drv.cuCtxSynchronize(), CUDA_SUCCESS);

  /* Outputs whose sum is 0 (every even channel's) and one whose is not. */
  double *s = malloc(d.ny * sizeof *s), *as = malloc(d.ny * sizeof *as),
         *sq = malloc(d.ny * sizeof *sq);
  ASSERT_TRUE(s && as && sq);
  ct_problem conv = p;
  conv.residual = 0;
  conv.act = CT_ACT_NONE;
  ASSERT_EQ_INT(ct_tune_reference_cpu(&conv, x, w, NULL, s, as, sq), CT_OK);
  int64_t zero = -1, nonzero = -1;
  size_t zeros = 0;
  for (size_t i = 0; i < d.ny; i++) {
    if (s[i] == 0.0 && as[i] > 0.0) zeros++, zero = zero < 0 ? (int64_t)i : zero;
    if (fabs(s[i]) > 0.1 && nonzero < 0) nonzero = (int64_t)i;
  }
  ASSERT_EQ_INT((long long)zeros, (long long)d.ny / 2);
  ASSERT_TRUE(nonzero >= 0);

  const struct {
    int64_t skip;
    int passes;
  } cases[] = {{-1, 1}, {nonzero, 0}, {zero, 1}};
  for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
    host_conv h = {&p, x, w, cases[ci].skip, 0};
    ct_tune_check chk;
    ASSERT_EQ_INT(ct_tune_verify(&g, &d, host_conv_run, &h, &chk, err, sizeof err), CT_OK);
    printf("cancelling sums (%zu of %zu outputs), output %lld left in the second run: %s\n",
           zeros, d.ny, (long long)cases[ci].skip, chk.passes ? "passes" : chk.reason);
    ASSERT_EQ_INT(h.calls, 2);
    ASSERT_EQ_INT(chk.passes, cases[ci].passes);
    char want[64];
    snprintf(want, sizeof want, "1 of %zu outputs never written", d.ny);
    if (!cases[ci].passes) ASSERT_TRUE(strstr(chk.reason, want) != NULL);
  }
  free(s), free(as), free(sq);
  ct_tune_data_destroy(&d);
}

/* Every variant of every shape and precision through the tuning loop
** (parallel NVRTC, verification on fresh inputs), into a scratch database:
** each must end "timed", none wrong or failed. */
static void test_every_variant(void) {
  char dir[] = "/tmp/convtune-variants-XXXXXX";
  ASSERT_TRUE(mkdtemp(dir) != NULL);
  char db[256];
  snprintf(db, sizeof db, "%s/tuning.db", dir);
  int checked = 0, bad = 0;
  for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
    for (int prec = CT_PREC_TF32; prec <= CT_PREC_FP32; prec++) {
      ct_tune_options o;
      ct_tune_options_default(&o);
      ASSERT_EQ_INT(ct_problem_parse(shapes[si], &o.problem, NULL, 0), CT_OK);
      o.problem.precision = (ct_precision)prec;
      o.db_path = db;
      o.screen_trials = 1;
      o.final_trials = 1;
      o.finalists = 1;
      ct_tune_result r;
      char err[1024];
      ct_status rc = ct_tune_run(&o, &r, err, sizeof err);
      if (rc != CT_OK) fprintf(stderr, "%s: %s\n", shapes[si], err);
      ASSERT_EQ_INT(rc, CT_OK);
      size_t families = 0;
      const char *prev = "";
      for (size_t i = 0; i < r.n_rows; i++) {
        const ct_cache_trial *t = &r.rows[i].trial;
        checked++;
        if (t->status != CT_TRIAL_TIMED) {
          bad++;
          fprintf(stderr, "FAIL %s %s %s: %s: %s\n", r.spec, t->variant,
                  ct_precision_name(o.problem.precision),
                  ct_trial_status_name(t->status), t->message);
        }
        size_t fam = strcspn(t->variant, ":");
        if (strncmp(prev, t->variant, fam + 1) != 0) families++;
        prev = t->variant;
      }
      printf("%-60s %s: %zu variants, %zu families\n", r.spec,
             ct_precision_name(o.problem.precision), r.n_rows, families);
      ASSERT_TRUE(r.n_rows > 0);
      ct_tune_result_free(&r);
    }
  }
  printf("%d variant runs, %d not timed\n", checked, bad);
  ASSERT_EQ_INT(bad, 0);
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  ASSERT_EQ_INT(system(cmd), 0);
}

/* The templates' TF32 rounding (ct_ptx.cuh): to_tf32 (on the bits: add
** 0xfff plus the kept lowest bit, drop 13 bits) against tf32_rne_ref, an
** independent reference that takes the nearer of x's two neighbouring
** TF32 values by exact distance in double (the one past TF32's largest
** standing for 2^128), ties to the even one, on every one of the 2^32 fp32
** bit patterns (NaN against NaN, payloads aside: a NaN whose payload lies
** in the 13 bits TF32 drops stays a NaN too); and to_tf32 on values picked
** for it: ties either way, both signs, just off a tie, a subnormal tie,
** FLT_MAX (to infinity), infinity. */
static const char tf32_kernels[] =
    "// Round to nearest even by distance: lo, x with the 13 bits dropped (towards\n"
    "// zero), hi the next TF32 value away from zero (infinity past the largest).\n"
    "__device__ unsigned tf32_rne_ref(unsigned u) {\n"
    "  const float f = __uint_as_float(u);\n"
    "  if (isnan(f)) return 0x7fffffffu;\n"
    "  if (isinf(f)) return u;\n"
    "  const unsigned lo = u & 0xffffe000u, hi = lo + 0x2000u;\n"
    "  const double x = fabs((double)f), a = fabs((double)__uint_as_float(lo));\n"
    "  const double b = (hi & 0x7f800000u) == 0x7f800000u ? ldexp(1.0, 128)\n"
    "                                                      : fabs((double)__uint_as_float(hi));\n"
    "  if (x - a != b - x) return x - a < b - x ? lo : hi;\n"
    "  return (lo & 0x2000u) ? hi : lo;\n"
    "}\n"
    "extern \"C\" __global__ void tf32_all(unsigned long long *bad, unsigned *first) {\n"
    "  const unsigned long long step = (unsigned long long)gridDim.x * blockDim.x;\n"
    "  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;\n"
    "       i < (1ull << 32); i += step) {\n"
    "    const unsigned u = (unsigned)i, hw = to_tf32(__uint_as_float(u)), sw = tf32_rne_ref(u);\n"
    "    if (hw != sw && !(isnan(__uint_as_float(hw)) && isnan(__uint_as_float(sw)))) {\n"
    "      atomicAdd(bad, 1ull);\n"
    "      atomicMin(first, u);\n"
    "    }\n"
    "  }\n"
    "}\n"
    "extern \"C\" __global__ void tf32_some(const unsigned *in, unsigned *out, int n) {\n"
    "  if ((int)threadIdx.x < n) out[threadIdx.x] = to_tf32(__uint_as_float(in[threadIdx.x]));\n"
    "}\n";

static void test_tf32_rounding(void) {
  static const unsigned cases[][2] = {
      {0x3f801000u, 0x3f800000u}, {0x3f803000u, 0x3f804000u}, {0xbf801000u, 0xbf800000u},
      {0xbf803000u, 0xbf804000u}, {0x3f800fffu, 0x3f800000u}, {0x3f801001u, 0x3f802000u},
      {0x00001000u, 0x00000000u}, {0x00003000u, 0x00004000u}, {0x7f7fffffu, 0x7f800000u},
      {0xff800000u, 0xff800000u}, {0x3fffffffu, 0x40000000u}, {0x12345678u, 0x12346000u}};
  enum { NC = sizeof cases / sizeof cases[0] };
  const char *ptx = ct_gen_template("ct_ptx.cuh");
  ASSERT_TRUE(ptx != NULL);
  size_t len = strlen(ptx) + sizeof tf32_kernels;
  char *src = malloc(len);
  ASSERT_TRUE(src != NULL);
  snprintf(src, len, "%s%s", ptx, tf32_kernels);
  ct_rt_compiled c;
  ct_status rc = ct_rt_compile(src, "tf32.cu", g.limits.arch, &c);
  if (rc != CT_OK) fprintf(stderr, "%s\n", c.log ? c.log : "(no log)");
  ASSERT_EQ_INT(rc, CT_OK);
  ASSERT_EQ_INT(ct_drv.cuCtxPushCurrent(g.ctx), CUDA_SUCCESS);
  CUmodule mod;
  CUfunction all, some;
  ASSERT_EQ_INT(ct_drv.cuModuleLoadData(&mod, c.cubin), CUDA_SUCCESS);
  ASSERT_EQ_INT(ct_drv.cuModuleGetFunction(&all, mod, "tf32_all"), CUDA_SUCCESS);
  ASSERT_EQ_INT(ct_drv.cuModuleGetFunction(&some, mod, "tf32_some"), CUDA_SUCCESS);
  CUdeviceptr d_bad, d_first, d_in, d_out;
  ASSERT_EQ_INT(ct_drv.cuMemAlloc(&d_bad, 8), CUDA_SUCCESS);
  ASSERT_EQ_INT(ct_drv.cuMemAlloc(&d_first, 4), CUDA_SUCCESS);
  ASSERT_EQ_INT(ct_drv.cuMemAlloc(&d_in, NC * 4), CUDA_SUCCESS);
  ASSERT_EQ_INT(ct_drv.cuMemAlloc(&d_out, NC * 4), CUDA_SUCCESS);
  unsigned long long bad = 0;
  unsigned first = 0xffffffffu, in[NC], out[NC];
  for (int i = 0; i < NC; i++) {
    in[i] = cases[i][0];
    out[i] = 0x7fc00bad; /* poison */
  }
  ASSERT_EQ_INT(ct_drv.cuMemcpyHtoD(d_bad, &bad, 8), CUDA_SUCCESS);
  ASSERT_EQ_INT(ct_drv.cuMemcpyHtoD(d_first, &first, 4), CUDA_SUCCESS);
  ASSERT_EQ_INT(ct_drv.cuMemcpyHtoD(d_in, in, sizeof in), CUDA_SUCCESS);
  ASSERT_EQ_INT(ct_drv.cuMemcpyHtoD(d_out, out, sizeof out), CUDA_SUCCESS);
  int n = NC;
  void *a_all[] = {&d_bad, &d_first}, *a_some[] = {&d_in, &d_out, &n};
  ASSERT_EQ_INT(ct_drv.cuLaunchKernel(all, (unsigned)g.limits.sm_count * 8, 1, 1, 256, 1, 1, 0,
                                      g.stream, a_all, NULL), CUDA_SUCCESS);
  ASSERT_EQ_INT(ct_drv.cuLaunchKernel(some, 1, 1, 1, 32, 1, 1, 0, g.stream, a_some, NULL),
                CUDA_SUCCESS);
  ASSERT_EQ_INT(ct_drv.cuStreamSynchronize(g.stream), CUDA_SUCCESS);
  ASSERT_EQ_INT(ct_drv.cuMemcpyDtoH(&bad, d_bad, 8), CUDA_SUCCESS);
  ASSERT_EQ_INT(ct_drv.cuMemcpyDtoH(&first, d_first, 4), CUDA_SUCCESS);
  ASSERT_EQ_INT(ct_drv.cuMemcpyDtoH(out, d_out, sizeof out), CUDA_SUCCESS);
  printf("to_tf32 vs tf32_rne_ref over 2^32 patterns: %llu differ\n", bad);
  if (bad) { /* the first one's to_tf32 */
    unsigned got = 0;
    n = 1;
    ASSERT_EQ_INT(ct_drv.cuMemcpyHtoD(d_in, &first, 4), CUDA_SUCCESS);
    ASSERT_EQ_INT(ct_drv.cuLaunchKernel(some, 1, 1, 1, 32, 1, 1, 0, g.stream, a_some, NULL),
                  CUDA_SUCCESS);
    ASSERT_EQ_INT(ct_drv.cuStreamSynchronize(g.stream), CUDA_SUCCESS);
    ASSERT_EQ_INT(ct_drv.cuMemcpyDtoH(&got, d_out, 4), CUDA_SUCCESS);
    fprintf(stderr, "first: to_tf32(0x%08x) = 0x%08x\n", first, got);
  }
  ASSERT_EQ_INT((long long)bad, 0);
  for (int i = 0; i < NC; i++) {
    if (out[i] != cases[i][1])
      fprintf(stderr, "to_tf32(0x%08x) = 0x%08x, want 0x%08x\n", cases[i][0], out[i],
              cases[i][1]);
    ASSERT_EQ_INT(out[i], cases[i][1]);
  }
  ct_drv.cuMemFree(d_bad);
  ct_drv.cuMemFree(d_first);
  ct_drv.cuMemFree(d_in);
  ct_drv.cuMemFree(d_out);
  ASSERT_EQ_INT(ct_drv.cuModuleUnload(mod), CUDA_SUCCESS);
  CUcontext popped;
  ASSERT_EQ_INT(ct_drv.cuCtxPopCurrent(&popped), CUDA_SUCCESS);
  ct_rt_compiled_clear(&c);
  free(src);
}

int main(void) {
  gpu_open_or_skip(&g);
  RUN_TEST(test_tf32_rounding);
  RUN_TEST(test_reference_matches_cpu);
  RUN_TEST(test_unwritten_on_cancelling_sums);
  RUN_TEST(test_every_variant);
  ct_tune_gpu_close(&g);
  TEST_EXIT();
}
