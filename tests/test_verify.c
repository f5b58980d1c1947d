/*
** test_verify.c — the CPU float64 reference against hand-computed cases, and
** the precision contract both ways: simulated cuDNN-class results pass,
** truncated operands, a dropped input channel, a NaN or one bad element fail.
*/
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convtune.h"
#include "test.h"
#include "verify.h"

/* ---------------------------------------------------------------------- */
/* Helpers                                                                 */

/* A problem from its spec text; aborts the test binary on a bad spec. */
static ct_problem problem(const char *spec) {
  ct_problem p;
  char err[256];
  if (ct_problem_parse(spec, &p, err, sizeof err) != CT_OK) {
    fprintf(stderr, "bad test spec %s: %s\n", spec, err);
    exit(1);
  }
  return p;
}

static int64_t out_count(const ct_problem *p) {
  int64_t P, Q;
  ct_problem_output(p, &P, &Q);
  return p->n * p->k * P * Q;
}

/* Runs the reference and compares y and abs_sum with expected values
** (exact: small integers and halves are exact in float64). */
static int ref_matches(const ct_problem *p, const float *x, const float *w,
                       const float *b, const double *want_y,
                       const double *want_abs, int64_t want_count) {
  int64_t n = out_count(p);
  if (n != want_count) {
    fprintf(stderr, "  output count %lld, expected %lld\n", (long long)n,
            (long long)want_count);
    return 0;
  }
  double y[64], as[64], sq[64];
  if (ct_tune_reference_cpu(p, x, w, b, y, as, sq) != CT_OK) return 0;
  for (int64_t i = 0; i < n; i++) {
    if (y[i] != want_y[i] || (want_abs && as[i] != want_abs[i])) {
      fprintf(stderr, "  output %lld: y %g abs %g, expected y %g abs %g\n",
              (long long)i, y[i], as[i], want_y[i], want_abs ? want_abs[i] : 0);
      return 0;
    }
  }
  return 1;
}

/* x = 1..9 as a 3x3 image, w = [1 -2; 3 -4]. */
static const float X9[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
static const float W4[4] = {1, -2, 3, -4};

/* ---------------------------------------------------------------------- */
/* The reference against hand-computed cases                               */

static void test_ref_stride1(void) {
  ct_problem p = problem("n=1,c=1,h=3,w=3,k=1,r=2,s=2,bias=0");
  const double y[] = {-11, -13, -17, -19};
  const double as[] = {37, 47, 67, 77};
  ASSERT_TRUE(ref_matches(&p, X9, W4, NULL, y, as, 4));
  double ry[4], ras[4], rsq[4];
  ASSERT_EQ_INT(ct_tune_reference_cpu(&p, X9, W4, NULL, ry, ras, rsq), CT_OK);
  /* sq_sum: 1+16+144+400, 4+36+225+576, 16+100+441+1024, 25+144+576+1296 */
  ASSERT_NEAR(rsq[0], 561, 0);
  ASSERT_NEAR(rsq[1], 841, 0);
  ASSERT_NEAR(rsq[2], 1581, 0);
  ASSERT_NEAR(rsq[3], 2041, 0);
}

static void test_ref_bias(void) {
  ct_problem p = problem("n=1,c=1,h=3,w=3,k=1,r=2,s=2,bias=1");
  const float b[1] = {-0.5f};
  const double y[] = {-11.5, -13.5, -17.5, -19.5};
  const double as[] = {37.5, 47.5, 67.5, 77.5};
  ASSERT_TRUE(ref_matches(&p, X9, W4, b, y, as, 4));
  double ry[4], rsq[4];
  ASSERT_EQ_INT(ct_tune_reference_cpu(&p, X9, W4, b, ry, NULL, rsq), CT_OK);
  ASSERT_NEAR(rsq[0], 561.25, 0);
  /* bias wanted but missing */
  ASSERT_EQ_INT(ct_tune_reference_cpu(&p, X9, W4, NULL, ry, NULL, NULL),
                CT_ERR_INVALID_ARG);
}

/* act=relu: y through the ReLU, abs_sum and sq_sum those of the sum. */
static void test_ref_relu(void) {
  ct_problem p = problem("n=1,c=1,h=3,w=3,k=1,r=2,s=2,bias=1,act=relu");
  const float b[1] = {12.5f};
  const double y[] = {1.5, 0, 0, 0}; /* 1.5, -0.5, -4.5, -6.5 before */
  const double as[] = {49.5, 59.5, 79.5, 89.5};
  ASSERT_TRUE(ref_matches(&p, X9, W4, b, y, as, 4));
  double ry[4], rsq[4];
  ASSERT_EQ_INT(ct_tune_reference_cpu(&p, X9, W4, b, ry, NULL, rsq), CT_OK);
  ASSERT_NEAR(rsq[0], 561 + 156.25, 0);
}

/* act=relu6: y clamped to [0, 6], abs_sum that of the sum; NaN stays NaN
** under both activations. */
static void test_ref_relu6(void) {
  ct_problem p = problem("n=1,c=1,h=3,w=3,k=1,r=2,s=2,bias=1,act=relu6");
  const float b[1] = {20.0f};
  const double y[] = {6, 6, 3, 1}; /* 9, 7, 3, 1 before */
  const double as[] = {57, 67, 87, 97};
  ASSERT_TRUE(ref_matches(&p, X9, W4, b, y, as, 4));
  const float b2[1] = {12.5f};
  const double y2[] = {1.5, 0, 0, 0}; /* 1.5, -0.5, -4.5, -6.5 before */
  const double as2[] = {49.5, 59.5, 79.5, 89.5};
  ASSERT_TRUE(ref_matches(&p, X9, W4, b2, y2, as2, 4));
  ASSERT_TRUE(isnan(ct_tune_activate(CT_ACT_RELU6, NAN)));
  ASSERT_TRUE(isnan(ct_tune_activate(CT_ACT_RELU, NAN)));
  ASSERT_NEAR(ct_tune_activate(CT_ACT_RELU6, INFINITY), 6, 0);
  ASSERT_NEAR(ct_tune_activate(CT_ACT_RELU6, -INFINITY), 0, 0);
  ASSERT_NEAR(ct_tune_activate(CT_ACT_RELU, 7.5), 7.5, 0);
  ASSERT_NEAR(ct_tune_activate(CT_ACT_NONE, -7.5), -7.5, 0);
}

/* residual=1: the residual added after the bias, before the ReLU, one more
** term of abs_sum and sq_sum; the plain entry point refuses such a problem,
** and the residual one wants the residual. */
static void test_ref_residual(void) {
  ct_problem p = problem("n=1,c=1,h=3,w=3,k=1,r=2,s=2,bias=1,act=relu,residual=1");
  const float b[1] = {12.5f};
  const float res[4] = {-2, 1, 5, 0.5f}; /* sums 1.5, -0.5, -4.5, -6.5 before */
  double y[4], as[4], sq[4];
  ASSERT_EQ_INT(ct_tune_reference_cpu_residual(&p, X9, W4, b, res, y, as, sq), CT_OK);
  const double want_y[] = {0, 0.5, 0.5, 0}, want_as[] = {51.5, 60.5, 84.5, 90};
  for (int i = 0; i < 4; i++) {
    ASSERT_NEAR(y[i], want_y[i], 0);
    ASSERT_NEAR(as[i], want_as[i], 0);
  }
  ASSERT_NEAR(sq[0], 561 + 156.25 + 4, 0);
  ASSERT_EQ_INT(ct_tune_reference_cpu_residual(&p, X9, W4, b, NULL, y, as, sq),
                CT_ERR_INVALID_ARG);
  ASSERT_EQ_INT(ct_tune_reference_cpu(&p, X9, W4, b, y, as, sq), CT_ERR_INVALID_ARG);
  /* without the key, the residual is not read */
  p.residual = 0;
  ASSERT_EQ_INT(ct_tune_reference_cpu_residual(&p, X9, W4, b, NULL, y, NULL, NULL), CT_OK);
  ASSERT_NEAR(y[0], 1.5, 0);
}

static void test_ref_stride2(void) {
  ct_problem p = problem("n=1,c=1,h=3,w=3,k=1,r=2,s=2,stride=2,bias=0");
  const double y[] = {-11};
  ASSERT_TRUE(ref_matches(&p, X9, W4, NULL, y, NULL, 1));
  /* stride 1 in height, 2 in width: a 2x1 output */
  p = problem("n=1,c=1,h=3,w=3,k=1,r=2,s=2,stride=1x2,bias=0");
  const double y2[] = {-11, -17};
  ASSERT_TRUE(ref_matches(&p, X9, W4, NULL, y2, NULL, 2));
}

static void test_ref_pad1(void) {
  ct_problem p = problem("n=1,c=1,h=3,w=3,k=1,r=2,s=2,pad=1,bias=0");
  const double y[] = {-4,  -5,  -6,  9,  -18, -11, -13, 21,
                      -36, -17, -19, 33, -14, -9,  -10, 9};
  const double as[] = {4,  11, 18, 9,  18, 37, 47, 21,
                       36, 67, 77, 33, 14, 23, 26, 9};
  ASSERT_TRUE(ref_matches(&p, X9, W4, NULL, y, as, 16));
}

static void test_ref_dilation2(void) {
  /* taps x[0][0], x[0][2], x[2][0], x[2][2]: 1 - 6 + 21 - 36 */
  ct_problem p = problem("n=1,c=1,h=3,w=3,k=1,r=2,s=2,dil=2,bias=0");
  const double y[] = {-20};
  const double as[] = {64};
  ASSERT_TRUE(ref_matches(&p, X9, W4, NULL, y, as, 1));
  p = problem("n=1,c=1,h=3,w=3,k=1,r=2,s=2,pad=1,dil=2,bias=0");
  const double y2[] = {-20, -12, 15, -36, -20, 26, -10, -8, 5};
  const double as2[] = {20, 36, 15, 36, 64, 26, 10, 16, 5};
  ASSERT_TRUE(ref_matches(&p, X9, W4, NULL, y2, as2, 9));
}

/* Batch, channel and filter strides: a 1x1 conv over 2 channels, 2 images
** (the second is the negated first), 2 filters with bias. */
static void test_ref_channels(void) {
  ct_problem p = problem("n=2,c=2,h=2,w=2,k=2,r=1,s=1,bias=1");
  const float x[16] = {1,  2,  3,  4,  10,  20,  30,  40,
                       -1, -2, -3, -4, -10, -20, -30, -40};
  const float w[4] = {1, 0.5f, -1, 2};
  const float b[2] = {1, -1};
  const double y[16] = {7,  13,  19,  25,  18,  37,  56,  75,
                        -5, -11, -17, -23, -20, -39, -58, -77};
  ASSERT_TRUE(ref_matches(&p, x, w, b, y, NULL, 16));
}

static void test_ref_invalid(void) {
  ct_problem p = problem("n=1,c=1,h=3,w=3,k=1,r=2,s=2,bias=0");
  double y[4];
  ASSERT_EQ_INT(ct_tune_reference_cpu(NULL, X9, W4, NULL, y, NULL, NULL),
                CT_ERR_INVALID_ARG);
  ASSERT_EQ_INT(ct_tune_reference_cpu(&p, X9, W4, NULL, NULL, NULL, NULL),
                CT_ERR_INVALID_ARG);
  p.r = 5; /* larger than the input: empty output */
  ASSERT_EQ_INT(ct_tune_reference_cpu(&p, X9, W4, NULL, y, NULL, NULL),
                CT_ERR_INVALID_PROBLEM);
}

/* ---------------------------------------------------------------------- */
/* Simulated GPU arithmetic                                                */

static uint64_t rng_state;

/* splitmix64 */
static uint64_t rng_next(void) {
  uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* Uniform in [0, 1) with 24 random bits, like torch.rand. */
static float rng_unit(void) { return (float)(rng_next() >> 40) * 0x1p-24f; }

static uint32_t f2u(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}
static float u2f(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/* fp32 -> TF32 (10 stored mantissa bits), to nearest with ties away from
** zero, as cvt.rna.tf32.f32 does. */
static float tf32_rna(float f) { return u2f((f2u(f) + 0x1000u) & 0xffffe000u); }
/* fp32 -> TF32 by dropping the low 13 bits, as tensor cores do with raw
** fp32 operands. */
static float tf32_trunc(float f) { return u2f(f2u(f) & 0xffffe000u); }

/* fp32 rounded toward zero, as tensor cores normalise their sums. */
static float chop(double s) {
  float f = (float)s;
  if (fabs((double)f) > fabs(s)) f = nextafterf(f, 0.0f);
  return f;
}

/* Random inputs like PyTorch's: x uniform [0,1), w and b uniform
** +-1/sqrt(C*R*S) (nn.Conv2d's default init). */
typedef struct inputs {
  ct_problem p;
  int64_t nx, nw, ny;
  float *x, *w, *b;
  double *ref, *abs_sum, *sq_sum;
  float *y; /* scratch output */
} inputs;

static void inputs_make(inputs *in, const char *spec, uint64_t seed) {
  memset(in, 0, sizeof *in);
  in->p = problem(spec);
  const ct_problem *p = &in->p;
  in->nx = p->n * p->c * p->h * p->w;
  in->nw = p->k * (p->c / p->groups) * p->r * p->s;
  in->ny = out_count(p);
  in->x = malloc(sizeof(float) * in->nx);
  in->w = malloc(sizeof(float) * in->nw);
  in->b = malloc(sizeof(float) * p->k);
  in->ref = malloc(sizeof(double) * in->ny);
  in->abs_sum = malloc(sizeof(double) * in->ny);
  in->sq_sum = malloc(sizeof(double) * in->ny);
  in->y = malloc(sizeof(float) * in->ny);
  if (!in->x || !in->w || !in->b || !in->ref || !in->abs_sum ||
      !in->sq_sum || !in->y) {
    fprintf(stderr, "out of memory\n");
    exit(1);
  }
  rng_state = seed;
  float bound = (float)(1.0 / sqrt((double)(p->c / p->groups * p->r * p->s)));
  for (int64_t i = 0; i < in->nx; i++) in->x[i] = rng_unit();
  for (int64_t i = 0; i < in->nw; i++) in->w[i] = (2 * rng_unit() - 1) * bound;
  for (int64_t i = 0; i < p->k; i++) in->b[i] = (2 * rng_unit() - 1) * bound;
  if (ct_tune_reference_cpu(p, in->x, in->w, p->bias ? in->b : NULL, in->ref,
                            in->abs_sum, in->sq_sum) != CT_OK) {
    fprintf(stderr, "reference failed\n");
    exit(1);
  }
}

static void inputs_free(inputs *in) {
  free(in->x);
  free(in->w);
  free(in->b);
  free(in->ref);
  free(in->abs_sum);
  free(in->sq_sum);
  free(in->y);
}

/* The operands a kernel multiplies: up to 3 (x, w) pairs per tap (3 for a
** 3xTF32 split: lo*hi, hi*lo, hi*hi, smallest first). */
typedef struct operands {
  int npairs;
  float *x[3], *w[3];
} operands;

enum op_mode { OP_FP32, OP_TF32_RNA, OP_TF32_TRUNC, OP_3XTF32 };

static void operands_make(operands *o, const inputs *in, enum op_mode mode) {
  memset(o, 0, sizeof *o);
  o->npairs = mode == OP_3XTF32 ? 3 : 1;
  float *xh = malloc(sizeof(float) * in->nx), *wh = malloc(sizeof(float) * in->nw);
  float *xl = NULL, *wl = NULL;
  if (mode == OP_3XTF32) {
    xl = malloc(sizeof(float) * in->nx);
    wl = malloc(sizeof(float) * in->nw);
  }
  for (int64_t i = 0; i < in->nx; i++) {
    float v = in->x[i];
    xh[i] = mode == OP_FP32 ? v : mode == OP_TF32_TRUNC ? tf32_trunc(v) : tf32_rna(v);
    if (xl) xl[i] = tf32_rna(v - xh[i]);
  }
  for (int64_t i = 0; i < in->nw; i++) {
    float v = in->w[i];
    wh[i] = mode == OP_FP32 ? v : mode == OP_TF32_TRUNC ? tf32_trunc(v) : tf32_rna(v);
    if (wl) wl[i] = tf32_rna(v - wh[i]);
  }
  if (mode == OP_3XTF32) {
    o->x[0] = xl, o->w[0] = wh;
    o->x[1] = xh, o->w[1] = wl;
    o->x[2] = xh, o->w[2] = wh;
  } else {
    o->x[0] = xh, o->w[0] = wh;
  }
}

static void operands_free(operands *o) {
  if (o->npairs == 3) {
    free(o->x[0]);
    free(o->w[1]);
  }
  free(o->x[o->npairs - 1]);
  free(o->w[o->npairs - 1]);
}

/* Simulates a kernel: for each output, taps in (c, r, s) order accumulate
** in fp32.  block == 0: one FFMA per product (round to nearest; the double
** sum then float rounding equals fmaf but for rare double-rounding ties).
** block > 0: a tensor-core MMA, exact sums of `block` products added to the
** accumulator and chopped, once per pair.  Channel drop_c (if >= 0) is
** skipped.  The bias is added last, rounded to nearest. */
static void simulate(const inputs *in, const operands *o, int block,
                     int64_t drop_c, float *y) {
  const ct_problem *p = &in->p;
  const int64_t C = p->c, H = p->h, W = p->w, R = p->r, S = p->s;
  const int64_t L = C * R * S;
  int64_t P, Q;
  ct_problem_output(p, &P, &Q);
  double part[3] = {0, 0, 0};
  int64_t oi = 0;
  for (int64_t n = 0; n < p->n; n++)
    for (int64_t k = 0; k < p->k; k++)
      for (int64_t op = 0; op < P; op++)
        for (int64_t oq = 0; oq < Q; oq++, oi++) {
          float acc = 0.0f;
          int64_t t = 0;
          for (int64_t c = 0; c < C; c++)
            for (int64_t r = 0; r < R; r++)
              for (int64_t s = 0; s < S; s++, t++) {
                int64_t ih = op * p->stride_h - p->pad_h + r * p->dil_h;
                int64_t iw = oq * p->stride_w - p->pad_w + s * p->dil_w;
                int inside = c != drop_c && ih >= 0 && ih < H && iw >= 0 && iw < W;
                int64_t xi = ((n * C + c) * H + ih) * W + iw;
                int64_t wi = ((k * C + c) * R + r) * S + s;
                for (int j = 0; j < o->npairs; j++) {
                  double prod = inside ? (double)o->x[j][xi] * o->w[j][wi] : 0.0;
                  if (block == 0)
                    acc = (float)(prod + acc);
                  else
                    part[j] += prod;
                }
                if (block > 0 && ((t + 1) % block == 0 || t + 1 == L)) {
                  for (int j = 0; j < o->npairs; j++) {
                    acc = chop((double)acc + part[j]);
                    part[j] = 0.0;
                  }
                }
              }
          if (p->bias) acc += in->b[k];
          y[oi] = acc;
        }
}

/* Runs the contract on y under precision prec. */
static ct_tune_check check(const inputs *in, const float *y, ct_precision prec) {
  ct_problem p = in->p;
  ct_tune_check ck;
  p.precision = prec;
  ct_tune_contract(&p, y, in->ref, in->abs_sum, in->sq_sum, in->ny, &ck);
  return ck;
}

static void report(const char *what, const ct_tune_check *ck) {
  fprintf(stderr,
          "    %-31s rel %.3e  frob_ratio %7.4f  elem_ratio %7.4f  %s%s%s\n",
          what, ck->rel_err, ck->frob_ratio, ck->elem_ratio,
          ck->passes ? "pass" : "FAIL", ck->passes ? "" : ": ",
          ck->reason);
}

/* ---------------------------------------------------------------------- */
/* The contract both ways                                                  */

/* What contract_both_ways measured. */
typedef struct measured {
  double a_over_ref;   /* A / ||ref|| */
  double tf32_rel_err; /* rel err of TF32 rounding + FFMA */
  double tf32_bound;   /* the tf32 Frobenius bound relative to ||ref|| */
  double fp32_rel_err; /* rel err of plain FFMA */
  double fp32_bound;   /* the fp32 Frobenius bound relative to ||ref|| */
} measured;

/* Every simulated kind of result on one problem, with its expected verdict
** under each precision. */
static void contract_both_ways(const char *spec, uint64_t seed, measured *m) {
  inputs in;
  inputs_make(&in, spec, seed);
  double ref2 = 0, a2 = 0;
  for (int64_t i = 0; i < in.ny; i++) {
    ref2 += in.ref[i] * in.ref[i];
    a2 += in.sq_sum[i];
  }
  m->a_over_ref = sqrt(a2 / ref2);
  fprintf(stderr, "  %s: %lld outputs, A/||ref|| = %.3f\n", spec,
          (long long)in.ny, m->a_over_ref);

  operands fp32, rna, trunc, split;
  operands_make(&fp32, &in, OP_FP32);
  operands_make(&rna, &in, OP_TF32_RNA);
  operands_make(&trunc, &in, OP_TF32_TRUNC);
  operands_make(&split, &in, OP_3XTF32);
  ct_tune_check ck;
  int ok = 1;
#define EXPECT(what, prec, want)                                              \
  do {                                                                        \
    ck = check(&in, in.y, prec);                                              \
    report(what, &ck);                                                        \
    if (ck.passes != (want)) ok = 0;                                          \
  } while (0)

  /* (a) TF32 round-to-nearest operands, FFMA accumulation: cuDNN-class */
  simulate(&in, &rna, 0, -1, in.y);
  EXPECT("tf32 rna, ffma / tf32", CT_PREC_TF32, 1);
  ASSERT_TRUE(ck.frob_ratio <= 0.87); /* margin >= 1.15 */
  m->tf32_rel_err = ck.rel_err;
  m->tf32_bound = ck.rel_err / ck.frob_ratio;
  EXPECT("tf32 rna, ffma / fp32", CT_PREC_FP32, 0);
  /* ... and accumulated by MMAs that chop once per k = 8 */
  simulate(&in, &rna, 8, -1, in.y);
  EXPECT("tf32 rna, mma-chop8 / tf32", CT_PREC_TF32, 1);
  ASSERT_TRUE(ck.frob_ratio <= 0.87);

  /* (b) TF32 truncated operands */
  simulate(&in, &trunc, 0, -1, in.y);
  EXPECT("tf32 trunc, ffma / tf32", CT_PREC_TF32, 0);
  ASSERT_TRUE(strstr(ck.reason, "Frobenius") != NULL);

  /* (c) one input channel dropped */
  simulate(&in, &rna, 0, in.p.c - 1, in.y);
  EXPECT("tf32 rna, drop c / tf32", CT_PREC_TF32, 0);
  ASSERT_TRUE(ck.elem_ratio > 1.0);
  simulate(&in, &fp32, 0, in.p.c - 1, in.y);
  EXPECT("fp32 ffma, drop c / fp32", CT_PREC_FP32, 0);
  ASSERT_TRUE(ck.elem_ratio > 1.0);

  /* (d) a 3xTF32 split, and plain fp32 FFMA */
  simulate(&in, &split, 0, -1, in.y);
  EXPECT("3xtf32, ffma / fp32", CT_PREC_FP32, 1);
  /* informational, not asserted: a model of an MMA accumulator that rounds
  ** toward zero, as Fasi et al. (2021) report for V100..A100 tensor cores */
  simulate(&in, &split, 8, -1, in.y);
  ck = check(&in, in.y, CT_PREC_FP32);
  report("(info) 3xtf32, mma-chop8 / fp32", &ck);
  simulate(&in, &fp32, 0, -1, in.y);
  EXPECT("fp32 ffma / tf32", CT_PREC_TF32, 1);
  EXPECT("fp32 ffma / fp32", CT_PREC_FP32, 1);
  ASSERT_TRUE(ck.frob_ratio <= 0.87);
  m->fp32_rel_err = ck.rel_err;
  m->fp32_bound = ck.rel_err / ck.frob_ratio;

  /* (e) one output NaN (unwritten) */
  int64_t mid = in.ny / 2;
  float keep = in.y[mid];
  in.y[mid] = NAN;
  EXPECT("fp32 ffma, one NaN / fp32", CT_PREC_FP32, 0);
  ASSERT_EQ_INT(ck.n_nonfinite, 1);
  ASSERT_EQ_INT(ck.worst_index, mid);
  ASSERT_TRUE(strstr(ck.reason, "1 outputs NaN/Inf") != NULL);
  in.y[mid] = INFINITY;
  EXPECT("fp32 ffma, one Inf / tf32", CT_PREC_TF32, 0);

  /* (f) one element off by 1e-2 * abs_sum: elementwise catches it */
  in.y[mid] = (float)(keep + 1e-2 * in.abs_sum[mid]);
  EXPECT("fp32 ffma, one bad elt / tf32", CT_PREC_TF32, 0);
  ASSERT_EQ_INT(ck.worst_index, mid);
  ASSERT_TRUE(strstr(ck.reason, "elementwise") != NULL);
#undef EXPECT

  operands_free(&fp32);
  operands_free(&rna);
  operands_free(&trunc);
  operands_free(&split);
  inputs_free(&in);
  ASSERT_TRUE(ok);
}

/* NHWC / KRSC in, NPQK out: the same sums as NCHW, bit for bit, at the
** transposed places (stride, padding, dilation, bias and a ReLU too). */
static void test_ref_nhwc(void) {
  inputs in;
  inputs_make(&in, "n=2,c=3,h=7,w=6,k=5,r=3,s=2,stride=2x1,pad=1,dil=1x2,act=relu", 11);
  const ct_problem *p = &in.p;
  const int64_t N = p->n, C = p->c, H = p->h, W = p->w, K = p->k, R = p->r, S = p->s;
  int64_t P, Q;
  ct_problem_output(p, &P, &Q);
  float *x = malloc(sizeof(float) * in.nx), *w = malloc(sizeof(float) * in.nw);
  double *y = malloc(sizeof(double) * in.ny), *as = malloc(sizeof(double) * in.ny);
  ASSERT_TRUE(x && w && y && as);
  for (int64_t n = 0; n < N; n++)
    for (int64_t c = 0; c < C; c++)
      for (int64_t h = 0; h < H; h++)
        for (int64_t v = 0; v < W; v++)
          x[((n * H + h) * W + v) * C + c] = in.x[((n * C + c) * H + h) * W + v];
  for (int64_t k = 0; k < K; k++)
    for (int64_t c = 0; c < C; c++)
      for (int64_t r = 0; r < R; r++)
        for (int64_t s = 0; s < S; s++)
          w[((k * R + r) * S + s) * C + c] = in.w[((k * C + c) * R + r) * S + s];
  ct_problem q = *p;
  q.layout = CT_LAYOUT_NHWC;
  ASSERT_EQ_INT(ct_tune_reference_cpu(&q, x, w, in.b, y, as, NULL), CT_OK);
  int64_t differ = 0;
  for (int64_t n = 0; n < N; n++)
    for (int64_t k = 0; k < K; k++)
      for (int64_t op = 0; op < P; op++)
        for (int64_t oq = 0; oq < Q; oq++) {
          const int64_t a = ((n * P + op) * Q + oq) * K + k, b = ((n * K + k) * P + op) * Q + oq;
          differ += y[a] != in.ref[b] || as[a] != in.abs_sum[b];
        }
  ASSERT_EQ_INT(differ, 0);
  free(x);
  free(w);
  free(y);
  free(as);
  inputs_free(&in);
}

/* groups: a grouped problem's reference is, bit for bit, that of G
** ungrouped problems of C/G input and K/G output channels, each on its
** group's slice of x, w and b (NCHW and NHWC; depthwise and a channel
** multiplier of 3 among them). */
static int groups_match_slices(const char *spec, uint64_t seed) {
  inputs in;
  inputs_make(&in, spec, seed);
  const ct_problem *p = &in.p;
  const int nhwc = p->layout == CT_LAYOUT_NHWC;
  const int64_t G = p->groups, N = p->n, C = p->c, HW = p->h * p->w, K = p->k;
  const int64_t CG = C / G, KG = K / G, RS = p->r * p->s, PQ = in.ny / (N * K);
  ct_problem q = *p;
  q.c = CG;
  q.k = KG;
  q.groups = 1;
  float *x = malloc(sizeof(float) * N * CG * HW);
  double *y = malloc(sizeof(double) * N * KG * PQ), *as = malloc(sizeof(double) * N * KG * PQ);
  int64_t differ = 0;
  if (!x || !y || !as) {
    fprintf(stderr, "out of memory\n");
    exit(1);
  }
  for (int64_t g = 0; g < G; g++) {
    /* x's channels g*CG .. of every image; w's and b's rows g*KG .. are
    ** contiguous already. */
    for (int64_t n = 0; n < N; n++)
      for (int64_t c = 0; c < CG; c++)
        for (int64_t i = 0; i < HW; i++)
          x[nhwc ? (n * HW + i) * CG + c : (n * CG + c) * HW + i] =
              in.x[nhwc ? (n * HW + i) * C + g * CG + c : (n * C + g * CG + c) * HW + i];
    if (ct_tune_reference_cpu(&q, x, in.w + g * KG * CG * RS, in.b + g * KG, y, as, NULL) !=
        CT_OK) {
      differ = in.ny;
      break;
    }
    for (int64_t n = 0; n < N; n++)
      for (int64_t k = 0; k < KG; k++)
        for (int64_t i = 0; i < PQ; i++) {
          const int64_t a = nhwc ? (n * PQ + i) * KG + k : (n * KG + k) * PQ + i;
          const int64_t b = nhwc ? (n * PQ + i) * K + g * KG + k : (n * K + g * KG + k) * PQ + i;
          differ += y[a] != in.ref[b] || as[a] != in.abs_sum[b];
        }
  }
  free(x);
  free(y);
  free(as);
  inputs_free(&in);
  if (differ) fprintf(stderr, "  %s: %lld outputs differ from the slices'\n", spec, (long long)differ);
  return differ == 0;
}

static void test_ref_groups(void) {
  ASSERT_TRUE(groups_match_slices("n=2,c=6,h=7,w=5,k=4,r=3,s=2,pad=1,groups=2", 3));
  ASSERT_TRUE(groups_match_slices("n=2,c=8,h=6,w=6,k=8,r=3,s=3,stride=2,pad=1,groups=8,act=relu", 4));
  ASSERT_TRUE(groups_match_slices("n=1,c=4,h=5,w=9,k=12,r=1,s=3,dil=1x2,groups=4,bias=0", 5));
  ASSERT_TRUE(groups_match_slices("n=2,c=6,h=7,w=5,k=9,r=3,s=2,pad=1,groups=3,layout=nhwc", 6));
  ASSERT_TRUE(groups_match_slices("n=1,c=16,h=6,w=6,k=16,r=3,s=3,pad=1,groups=16,layout=nhwc", 7));
  /* one depthwise case by hand: each channel scaled by its own weight */
  ct_problem p = problem("n=1,c=2,h=1,w=2,k=2,r=1,s=1,bias=0,groups=2");
  const float x[4] = {1, 2, 3, 4}, w[2] = {10, 100};
  const double y[4] = {10, 20, 300, 400};
  ASSERT_TRUE(ref_matches(&p, x, w, NULL, y, NULL, 4));
}

/* With act=relu (act=relu6), the contract passes an output that applied
** the activation and fails one that left it out (the negative outputs are
** far from 0), or, for relu6, one that left out the clamp to 6. */
static void contract_relu(const char *spec) {
  inputs in;
  inputs_make(&in, spec, 7);
  const int six = in.p.act == CT_ACT_RELU6;
  if (six) { /* sums of O(1) made O(16), so that many pass 6 */
    for (int64_t i = 0; i < in.nx; i++) in.x[i] *= 16;
    ASSERT_EQ_INT(ct_tune_reference_cpu(&in.p, in.x, in.w, in.b, in.ref, in.abs_sum, in.sq_sum),
                  CT_OK);
  }
  ct_problem plain = in.p;
  plain.act = CT_ACT_NONE;
  double *sum = malloc(sizeof(double) * in.ny);
  ASSERT_TRUE(sum != NULL);
  ASSERT_EQ_INT(ct_tune_reference_cpu(&plain, in.x, in.w, in.b, sum, NULL, NULL), CT_OK);
  int64_t negative = 0, zeros = 0, over = 0;
  for (int64_t i = 0; i < in.ny; i++) {
    negative += sum[i] < 0;
    over += sum[i] > 6.5;
    zeros += in.ref[i] == 0.0;
    ASSERT_TRUE(in.ref[i] == (sum[i] < 0 ? 0.0 : six && sum[i] > 6 ? 6.0 : sum[i]));
  }
  ASSERT_TRUE(negative > 0 && zeros == negative && (!six || over > 0));
  for (int64_t i = 0; i < in.ny; i++) in.y[i] = (float)in.ref[i];
  ct_tune_check ck = check(&in, in.y, CT_PREC_FP32);
  ASSERT_TRUE(ck.passes);
  for (int64_t i = 0; i < in.ny; i++) in.y[i] = (float)sum[i];
  ck = check(&in, in.y, CT_PREC_FP32);
  ASSERT_TRUE(!ck.passes && strstr(ck.reason, "elementwise") != NULL);
  if (six) { /* the ReLU without the clamp */
    for (int64_t i = 0; i < in.ny; i++) in.y[i] = sum[i] < 0 ? 0.0f : (float)sum[i];
    ck = check(&in, in.y, CT_PREC_FP32);
    ASSERT_TRUE(!ck.passes && strstr(ck.reason, "elementwise") != NULL);
  }
  free(sum);
  inputs_free(&in);
}

static void test_contract_relu(void) {
  contract_relu("n=2,c=16,h=12,w=12,k=8,r=3,s=3,pad=1,act=relu,prec=fp32");
  contract_relu("n=2,c=16,h=12,w=12,k=8,r=3,s=3,pad=1,act=relu6,prec=fp32");
}

static void test_contract_5x5(void) {
  measured m;
  contract_both_ways("n=2,c=3,h=40,w=40,k=16,r=5,s=5,stride=1,pad=2", 1, &m);
}

static void test_contract_c64(void) {
  measured m;
  contract_both_ways("n=1,c=64,h=20,w=20,k=32,r=3,s=3,pad=1", 2, &m);
}

/* The headline shape at half the image size, and the figures verify.c
** quotes for the headline problem. */
static void test_contract_headline_shape(void) {
  measured m = {0};
  contract_both_ways("n=1,c=3,h=112,w=112,k=96,r=11,s=11,stride=4,pad=2", 3,
                     &m);
  fprintf(stderr,
          "    relative to ||ref||: tf32 bound %.3g (rounding %.3g), fp32 "
          "bound %.3g (FFMA %.3g)\n",
          m.tf32_bound, m.tf32_rel_err, m.fp32_bound, m.fp32_rel_err);
  ASSERT_TRUE(m.a_over_ref > 0.9 && m.a_over_ref < 1.05);
  ASSERT_TRUE(m.tf32_bound > 4.5e-4 && m.tf32_bound < 5.1e-4);
  ASSERT_TRUE(m.tf32_rel_err > 2.4e-4 && m.tf32_rel_err < 3.0e-4);
  ASSERT_TRUE(m.fp32_bound > 1.2e-6 && m.fp32_bound < 1.35e-6);
  ASSERT_TRUE(m.fp32_rel_err > 2.5e-7 && m.fp32_rel_err < 4.0e-7);
}

/* The headline shape carries DESIGN.md's own figures on top of the general
** bounds: an output 3.8e-4 off in relative Frobenius norm (and elementwise
** within 3.8e-4*|ref| <= the elementwise bound) passes the general tf32
** bounds on another shape but fails on the headline's; a TF32-rounded
** product passes both. */
static void test_contract_headline_figures(void) {
  const char *specs[2] = {
      "n=1,c=3,h=224,w=224,k=96,r=11,s=11,stride=4,pad=2", /* headline */
      "n=1,c=3,h=220,w=224,k=96,r=11,s=11,stride=4,pad=2", /* not */
  };
  for (int si = 0; si < 2; si++) {
    inputs in;
    inputs_make(&in, specs[si], 77 + si);
    rng_state = 99;
    for (int64_t i = 0; i < in.ny; i++)
      in.y[i] = (float)(in.ref[i] * (1.0 + ((rng_next() & 1) ? 3.8e-4 : -3.8e-4)));
    ct_tune_check ck = check(&in, in.y, CT_PREC_TF32);
    report(specs[si], &ck);
    ASSERT_TRUE(ck.frob_ratio < 1.0 && ck.elem_ratio < 1.0);
    ASSERT_EQ_INT(ck.passes, si == 1);
    if (si == 0) ASSERT_TRUE(strstr(ck.reason, "headline tf32") != NULL);
    operands o;
    operands_make(&o, &in, OP_TF32_RNA);
    simulate(&in, &o, 0, -1, in.y);
    ck = check(&in, in.y, CT_PREC_TF32);
    report("  TF32-rounded", &ck);
    ASSERT_TRUE(ck.passes);
    operands_free(&o);
    inputs_free(&in);
  }
}

/* The elementwise bound is tight: a one-term output whose operands are
** both ties, 1 + 2^-11, each rounded to 1 + 2^-10 (relative error
** u_op/(1+u_op), the most rounding to nearest can do), comes within 0.04%
** of it. */
static void test_contract_elementwise_tight(void) {
  ct_problem p = problem("n=1,c=1,h=1,w=1,k=1,r=1,s=1,bias=0");
  const float x = 1.0f + 0x1p-11f, w = -(1.0f + 0x1p-11f);
  double ref, as, sq;
  ASSERT_EQ_INT(ct_tune_reference_cpu(&p, &x, &w, NULL, &ref, &as, &sq), CT_OK);
  float y = tf32_rna(x) * tf32_rna(w);
  ASSERT_TRUE(y == -(1.0f + 0x1p-10f) * (1.0f + 0x1p-10f));
  ct_tune_check ck;
  ct_tune_contract(&p, &y, &ref, &as, &sq, 1, &ck);
  fprintf(stderr, "    one tied term: elem_ratio %.6f\n", ck.elem_ratio);
  ASSERT_TRUE(ck.elem_ratio > 0.999 && ck.elem_ratio <= 1.0);
}

/* ---------------------------------------------------------------------- */
/* Statistics over many input draws (CT_VERIFY_SWEEP=draws): the figures   */
/* verify.c quotes.  Not a test: prints only.                              */

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static void sweep(const char *spec, int draws) {
  enum { A_REF, RNA, TRUNC, FFMA, SPLIT, RNA_ELEM, SPLIT_ELEM, BOUND_TF32,
         BOUND_FP32, NSTAT };
  double *v[NSTAT];
  for (int j = 0; j < NSTAT; j++) v[j] = malloc(sizeof(double) * draws);
  for (int d = 0; d < draws; d++) {
    inputs in;
    inputs_make(&in, spec, 1000 + (uint64_t)d);
    double ref2 = 0, a2 = 0;
    for (int64_t i = 0; i < in.ny; i++) {
      ref2 += in.ref[i] * in.ref[i];
      a2 += in.sq_sum[i];
    }
    v[A_REF][d] = sqrt(a2 / ref2);
    operands o;
    ct_tune_check ck;
    operands_make(&o, &in, OP_TF32_RNA);
    simulate(&in, &o, 0, -1, in.y);
    ck = check(&in, in.y, CT_PREC_TF32);
    v[RNA][d] = ck.frob_ratio;
    v[RNA_ELEM][d] = ck.elem_ratio;
    v[BOUND_TF32][d] = ck.rel_err / ck.frob_ratio;
    operands_free(&o);
    operands_make(&o, &in, OP_TF32_TRUNC);
    simulate(&in, &o, 0, -1, in.y);
    v[TRUNC][d] = check(&in, in.y, CT_PREC_TF32).frob_ratio;
    operands_free(&o);
    operands_make(&o, &in, OP_FP32);
    simulate(&in, &o, 0, -1, in.y);
    ck = check(&in, in.y, CT_PREC_FP32);
    v[FFMA][d] = ck.frob_ratio;
    v[BOUND_FP32][d] = ck.rel_err / ck.frob_ratio;
    operands_free(&o);
    operands_make(&o, &in, OP_3XTF32);
    simulate(&in, &o, 0, -1, in.y);
    ck = check(&in, in.y, CT_PREC_FP32);
    v[SPLIT][d] = ck.frob_ratio;
    v[SPLIT_ELEM][d] = ck.elem_ratio;
    operands_free(&o);
    inputs_free(&in);
  }
  for (int j = 0; j < NSTAT; j++) qsort(v[j], draws, sizeof(double), cmp_double);
  int lo = draws / 100, hi = draws - 1 - draws / 100, md = draws / 2;
#define RANGE(j) v[j][0], v[j][lo], v[j][md], v[j][hi], v[j][draws - 1]
  fprintf(stderr,
          "%s, %d draws: min p1 median p99 max\n"
          "  A/||ref||                %.3f %.3f %.3f %.3f %.3f\n"
          "  tf32 rounding frob_ratio %.3f %.3f %.3f %.3f %.3f\n"
          "  tf32 truncation          %.3f %.3f %.3f %.3f %.3f\n"
          "  tf32 rounding elem_ratio %.3f %.3f %.3f %.3f %.3f\n"
          "  fp32 FFMA frob_ratio     %.3f %.3f %.3f %.3f %.3f\n"
          "  fp32 3xTF32 frob_ratio   %.3f %.3f %.3f %.3f %.3f\n"
          "  fp32 3xTF32 elem_ratio   %.3f %.3f %.3f %.3f %.3f\n"
          "  tf32 bound / ||ref||     %.3g %.3g %.3g %.3g %.3g\n"
          "  fp32 bound / ||ref||     %.3g %.3g %.3g %.3g %.3g\n",
          spec, draws, RANGE(A_REF), RANGE(RNA), RANGE(TRUNC), RANGE(RNA_ELEM),
          RANGE(FFMA), RANGE(SPLIT), RANGE(SPLIT_ELEM), RANGE(BOUND_TF32),
          RANGE(BOUND_FP32));
#undef RANGE
  for (int j = 0; j < NSTAT; j++) free(v[j]);
}

static void run_sweeps(int draws) {
  static const char *const specs[] = {
      "n=8,c=3,h=32,w=32,k=1,r=3,s=3,pad=1",
      "n=4,c=8,h=16,w=16,k=4,r=3,s=3,pad=1,bias=0",
      "n=2,c=3,h=40,w=40,k=16,r=5,s=5,stride=1,pad=2",
      "n=1,c=64,h=20,w=20,k=32,r=3,s=3,pad=1",
      "n=1,c=512,h=6,w=6,k=16,r=3,s=3,pad=1",
      "n=1,c=1,h=64,w=64,k=16,r=1,s=1,bias=0",
      "n=1,c=3,h=112,w=112,k=96,r=11,s=11,stride=4,pad=2",
      "n=1,c=3,h=224,w=224,k=96,r=11,s=11,stride=4,pad=2",
  };
  for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++)
    sweep(specs[i], i + 1 == sizeof specs / sizeof specs[0] ? draws / 10 + 1
                                                             : draws);
}

static void test_contract_args(void) {
  ct_problem p = problem("n=1,c=1,h=3,w=3,k=1,r=2,s=2,bias=0");
  double ref[4] = {1, 2, 3, 4}, as[4] = {1, 2, 3, 4}, sq[4] = {1, 4, 9, 16};
  float y[4] = {1, 2, 3, 4};
  ct_tune_check ck;
  ct_tune_contract(&p, y, ref, as, sq, 4, &ck);
  ASSERT_EQ_INT(ck.passes, 1);
  ASSERT_EQ_STR(ck.reason, "");
  ASSERT_NEAR(ck.max_abs_err, 0, 0);
  ct_tune_contract(&p, NULL, ref, as, sq, 4, &ck);
  ASSERT_EQ_INT(ck.passes, 0);
  ASSERT_TRUE(ck.reason[0] != '\0');
  ct_tune_contract(&p, y, ref, as, sq, 0, &ck);
  ASSERT_EQ_INT(ck.passes, 0);
  p.precision = (ct_precision)9;
  ct_tune_contract(&p, y, ref, as, sq, 4, &ck);
  ASSERT_EQ_INT(ck.passes, 0);
  ASSERT_TRUE(strstr(ck.reason, "precision") != NULL);
  ct_tune_contract(&p, y, ref, as, sq, 4, NULL); /* harmless */
}

/* The sums of the scan in templates/ct_check.cuh's order, written out
** plainly: per tile, lane l sums elements l, l + LANES, ... of it; the lanes
** are merged pairwise (l takes in l + s for s = LANES/2 .. 1); the tiles are
** added in order. */
static void sums_in_check_order(const float *y, const double *ref, int64_t n,
                                double *err2, double *ref2) {
  static double le[CT_CHECK_LANES], lr[CT_CHECK_LANES];
  *err2 = *ref2 = 0.0;
  for (int64_t t0 = 0; t0 < n; t0 += CT_CHECK_TILE) {
    for (int l = 0; l < CT_CHECK_LANES; l++) {
      le[l] = lr[l] = 0.0;
      for (int j = 0; j < CT_CHECK_STEPS; j++) {
        int64_t i = t0 + (int64_t)j * CT_CHECK_LANES + l;
        if (i >= n || !isfinite(y[i])) continue;
        double d = fabs((double)y[i] - ref[i]);
        le[l] += d * d;
        lr[l] += ref[i] * ref[i];
      }
    }
    for (int s = CT_CHECK_LANES / 2; s >= 1; s /= 2)
      for (int l = 0; l < s; l++) {
        le[l] += le[l + s];
        lr[l] += lr[l + s];
      }
    *err2 = t0 == 0 ? le[0] : *err2 + le[0];
    *ref2 = t0 == 0 ? lr[0] : *ref2 + lr[0];
  }
}

/* The scan runs in tiles of CT_CHECK_TILE outputs: on 5M outputs (a last
** tile cut short) it must find what one pass from index 0 finds: the first
** element of the largest ratio (placed twice, in two tiles), the first
** non-finite output, their count; and its sums are those of the documented
** order, bit for bit. */
static void test_contract_parts(void) {
  ct_problem p = problem("n=1,c=3,h=2241,w=2241,k=1,r=1,s=1,bias=0");
  const int64_t n = 5000000;
  float *y = malloc((size_t)n * sizeof *y);
  double *ref = malloc((size_t)n * sizeof *ref), *as = malloc((size_t)n * sizeof *as),
         *sq = malloc((size_t)n * sizeof *sq);
  ASSERT_TRUE(y && ref && as && sq);
  double err2 = 0, ref2 = 0;
  for (int64_t i = 0; i < n; i++) {
    ref[i] = 1.0 + (double)(i % 1000) / 1000.0;
    as[i] = ref[i];
    sq[i] = ref[i] * ref[i];
    y[i] = (float)ref[i] * (1.0f + 1e-7f * (float)(i % 3));
  }
  const int64_t worst = 1700001, worst2 = 4200007, bad = 3100003, bad2 = 4900001;
  y[worst] = (float)(ref[worst] * (1.0 + 1e-5));
  ref[worst2] = ref[worst];
  as[worst2] = as[worst];
  y[worst2] = y[worst];
  for (int64_t i = 0; i < n; i++) {
    double d = (double)y[i] - ref[i];
    err2 += d * d;
    ref2 += ref[i] * ref[i];
  }
  const float keep = y[bad], keep2 = y[bad2];
  y[bad] = NAN;
  y[bad2] = INFINITY;
  ct_tune_check ck;
  ct_tune_contract(&p, y, ref, as, sq, n, &ck);
  ASSERT_EQ_INT((int)ck.n_nonfinite, 2);
  ASSERT_EQ_INT((int)ck.worst_index, (int)bad); /* non-finite outputs come first */
  ASSERT_EQ_INT(ck.passes, 0);
  y[bad] = keep;
  y[bad2] = keep2;
  ct_tune_contract(&p, y, ref, as, sq, n, &ck);
  ASSERT_EQ_INT((int)ck.n_nonfinite, 0);
  ASSERT_EQ_INT((int)ck.worst_index, (int)worst);
  ASSERT_NEAR(ck.max_abs_err, fabs((double)y[worst] - ref[worst]), 0);
  ASSERT_NEAR(ck.rel_err, sqrt(err2) / sqrt(ref2), 1e-9 * sqrt(err2) / sqrt(ref2));
  double oerr2, oref2;
  sums_in_check_order(y, ref, n, &oerr2, &oref2);
  ASSERT_TRUE(ck.rel_err == sqrt(oerr2) / sqrt(oref2));
  free(y);
  free(ref);
  free(as);
  free(sq);
}

int main(void) {
  const char *draws = getenv("CT_VERIFY_SWEEP");
  if (draws) {
    run_sweeps(atoi(draws) > 0 ? atoi(draws) : 100);
    return 0;
  }
  RUN_TEST(test_ref_stride1);
  RUN_TEST(test_ref_bias);
  RUN_TEST(test_ref_relu);
  RUN_TEST(test_ref_relu6);
  RUN_TEST(test_ref_residual);
  RUN_TEST(test_ref_nhwc);
  RUN_TEST(test_ref_groups);
  RUN_TEST(test_ref_stride2);
  RUN_TEST(test_ref_pad1);
  RUN_TEST(test_ref_dilation2);
  RUN_TEST(test_ref_channels);
  RUN_TEST(test_ref_invalid);
  RUN_TEST(test_contract_args);
  RUN_TEST(test_contract_parts);
  RUN_TEST(test_contract_relu);
  RUN_TEST(test_contract_5x5);
  RUN_TEST(test_contract_c64);
  RUN_TEST(test_contract_headline_shape);
  RUN_TEST(test_contract_elementwise_tight);
  RUN_TEST(test_contract_headline_figures);
  TEST_EXIT();
}
