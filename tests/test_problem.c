/*
** test_problem.c — problem spec parsing and printing, validation, output
** sizes, and the names of statuses, precisions and paths.
*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convtune.h"
#include "ct_gen.h"
#include "test.h"

#define HEADLINE \
  "n=256,c=3,h=224,w=224,k=96,r=11,s=11,stride=4,pad=2,dil=1,bias=1,prec=tf32"

/* 1 if parse(spec) succeeds and format gives spec back. */
static int round_trips(const char *spec) {
  ct_problem p, q;
  char buf[CT_PROBLEM_SPEC_MAX], err[256];
  if (ct_problem_parse(spec, &p, err, sizeof err) != CT_OK) {
    fprintf(stderr, "  parse %s: %s\n", spec, err);
    return 0;
  }
  if (ct_problem_format(&p, buf, sizeof buf) != CT_OK) return 0;
  if (strcmp(buf, spec) != 0) {
    fprintf(stderr, "  format gave %s for %s\n", buf, spec);
    return 0;
  }
  if (ct_problem_parse(buf, &q, err, sizeof err) != CT_OK) return 0;
  return memcmp(&p, &q, sizeof p) == 0;
}

/* 1 if spec fails with `want` and an error text containing `needle`. */
static int fails_with(const char *spec, ct_status want, const char *needle) {
  ct_problem p;
  char err[256] = "";
  ct_problem_default(&p);
  ct_problem before = p;
  ct_status rc = ct_problem_parse(spec, &p, err, sizeof err);
  if (rc != want || !strstr(err, needle) || memcmp(&p, &before, sizeof p)) {
    fprintf(stderr, "  %s: status %d (%s), err \"%s\", wanted %d and \"%s\"\n",
            spec, rc, ct_status_string(rc), err, want, needle);
    return 0;
  }
  return 1;
}

/* 1 if *p fails validation with a message containing `needle`. */
static int invalid(const ct_problem *p, const char *needle) {
  char err[256] = "";
  ct_status rc = ct_problem_validate(p, err, sizeof err);
  if (rc != CT_ERR_INVALID_PROBLEM || !strstr(err, needle)) {
    fprintf(stderr, "  validate: status %d, err \"%s\", wanted \"%s\"\n", rc,
            err, needle);
    return 0;
  }
  return 1;
}

/* ---------------------------------------------------------------------- */
/* Parsing and printing                                                    */

static void test_headline(void) {
  ct_problem d, p;
  char buf[CT_PROBLEM_SPEC_MAX];
  ct_problem_default(&d);
  ASSERT_EQ_INT(ct_problem_validate(&d, NULL, 0), CT_OK);
  ASSERT_EQ_INT(ct_problem_format(&d, buf, sizeof buf), CT_OK);
  ASSERT_EQ_STR(buf, HEADLINE);
  ASSERT_EQ_INT(ct_problem_parse(HEADLINE, &p, NULL, 0), CT_OK);
  ASSERT_TRUE(memcmp(&p, &d, sizeof p) == 0);
  ASSERT_TRUE(round_trips(HEADLINE));
  ASSERT_EQ_INT(p.n, 256);
  ASSERT_EQ_INT(p.c, 3);
  ASSERT_EQ_INT(p.k, 96);
  ASSERT_EQ_INT(p.r, 11);
  ASSERT_EQ_INT(p.stride_w, 4);
  ASSERT_EQ_INT(p.pad_h, 2);
  ASSERT_EQ_INT(p.dil_w, 1);
  ASSERT_EQ_INT(p.bias, 1);
  ASSERT_EQ_INT(p.precision, CT_PREC_TF32);
}

static void test_round_trips(void) {
  ASSERT_TRUE(round_trips(
      "n=1,c=2,h=30,w=40,k=5,r=3,s=5,stride=2x3,pad=1x2,dil=2x1,bias=0,prec=fp32"));
  ASSERT_TRUE(round_trips(
      "n=8,c=64,h=56,w=56,k=64,r=3,s=3,stride=1,pad=1,dil=1,bias=0,prec=tf32"));
  ASSERT_TRUE(round_trips(
      "n=2,c=3,h=7,w=9,k=4,r=3,s=2,stride=2x3,pad=1x0,dil=1x2,bias=1,prec=fp32"));
  ASSERT_TRUE(round_trips(
      "n=1,c=1,h=1,w=1,k=1,r=1,s=1,stride=1,pad=0,dil=1,bias=1,prec=tf32"));
  ASSERT_TRUE(round_trips(
      "n=2,c=3,h=7,w=9,k=4,r=3,s=2,stride=2x3,pad=1x0,dil=1x2,bias=0,prec=fp32,act=relu"));
  ASSERT_TRUE(round_trips(
      "n=2,c=3,h=7,w=9,k=4,r=3,s=2,stride=1,pad=0,dil=1,bias=1,prec=tf32,layout=nhwc"));
  ASSERT_TRUE(round_trips(
      "n=1,c=8,h=5,w=5,k=4,r=1,s=1,stride=1,pad=0,dil=1,bias=0,prec=fp32,act=relu,layout=nhwc"));
  ASSERT_TRUE(round_trips(
      "n=1,c=8,h=5,w=5,k=4,r=1,s=1,stride=1,pad=0,dil=1,bias=1,prec=tf32,residual=1"));
  ASSERT_TRUE(round_trips("n=1,c=8,h=5,w=5,k=4,r=1,s=1,stride=1,pad=0,dil=1,bias=0,prec=fp32,"
                          "act=relu,layout=nhwc,residual=1"));
  ASSERT_TRUE(round_trips(
      "n=2,c=8,h=5,w=5,k=12,r=3,s=3,stride=1,pad=1,dil=1,bias=1,prec=tf32,groups=4"));
  ASSERT_TRUE(round_trips("n=1,c=32,h=9,w=7,k=32,r=3,s=3,stride=2,pad=1,dil=1,bias=0,prec=fp32,"
                          "act=relu,layout=nhwc,residual=1,groups=32"));

  /* asymmetric fields land on the right axis */
  ct_problem p;
  ASSERT_EQ_INT(ct_problem_parse("n=1,c=2,h=30,w=40,k=5,r=3,s=5,stride=2x3,"
                                 "pad=1x2,dil=2x1,bias=0,prec=fp32",
                                 &p, NULL, 0),
                CT_OK);
  ASSERT_EQ_INT(p.h, 30);
  ASSERT_EQ_INT(p.w, 40);
  ASSERT_EQ_INT(p.r, 3);
  ASSERT_EQ_INT(p.s, 5);
  ASSERT_EQ_INT(p.stride_h, 2);
  ASSERT_EQ_INT(p.stride_w, 3);
  ASSERT_EQ_INT(p.pad_h, 1);
  ASSERT_EQ_INT(p.pad_w, 2);
  ASSERT_EQ_INT(p.dil_h, 2);
  ASSERT_EQ_INT(p.dil_w, 1);
  ASSERT_EQ_INT(p.bias, 0);
  ASSERT_EQ_INT(p.precision, CT_PREC_FP32);
}

/* Optional keys take their defaults; keys in any order; equal pairs print
** once. */
static void test_defaults_and_order(void) {
  ct_problem p;
  char buf[CT_PROBLEM_SPEC_MAX];
  ASSERT_EQ_INT(ct_problem_parse("n=1,c=1,h=5,w=5,k=1,r=3,s=3", &p, NULL, 0),
                CT_OK);
  ASSERT_EQ_INT(p.stride_h, 1);
  ASSERT_EQ_INT(p.stride_w, 1);
  ASSERT_EQ_INT(p.pad_h, 0);
  ASSERT_EQ_INT(p.pad_w, 0);
  ASSERT_EQ_INT(p.dil_h, 1);
  ASSERT_EQ_INT(p.dil_w, 1);
  ASSERT_EQ_INT(p.bias, 1);
  ASSERT_EQ_INT(p.precision, CT_PREC_TF32);
  ASSERT_EQ_INT(p.act, CT_ACT_NONE);
  ASSERT_EQ_INT(p.layout, CT_LAYOUT_NCHW);
  ASSERT_EQ_INT(p.residual, 0);
  ASSERT_EQ_INT(p.groups, 1);
  ASSERT_EQ_INT(ct_problem_format(&p, buf, sizeof buf), CT_OK);
  ASSERT_EQ_STR(buf, "n=1,c=1,h=5,w=5,k=1,r=3,s=3,stride=1,pad=0,dil=1,"
                     "bias=1,prec=tf32");
  /* act=none, layout=nchw, residual=0 and groups=1 are the defaults, which
  ** the canonical form leaves out; act=relu, layout=nhwc, residual=1 and
  ** groups > 1 come last, in that order, wherever they were written. */
#define BASE "n=1,c=1,h=5,w=5,k=1,r=3,s=3,stride=1,pad=0,dil=1,bias=1,prec=tf32"
  static const struct {
    const char *spec, *canonical;
    ct_activation act;
    ct_layout layout;
    int residual;
    int64_t groups;
  } forms[] = {
      {"layout=nchw,n=1,c=1,h=5,w=5,k=1,r=3,s=3", BASE, CT_ACT_NONE, CT_LAYOUT_NCHW, 0, 1},
      {"n=1,c=1,h=5,w=5,k=1,r=3,s=3,act=none", BASE, CT_ACT_NONE, CT_LAYOUT_NCHW, 0, 1},
      {"residual=0,n=1,c=1,h=5,w=5,k=1,r=3,s=3", BASE, CT_ACT_NONE, CT_LAYOUT_NCHW, 0, 1},
      {"groups=1,n=1,c=1,h=5,w=5,k=1,r=3,s=3", BASE, CT_ACT_NONE, CT_LAYOUT_NCHW, 0, 1},
      {"act=relu,n=1,c=1,h=5,w=5,k=1,r=3,s=3", BASE ",act=relu", CT_ACT_RELU, CT_LAYOUT_NCHW, 0, 1},
      {"layout=nhwc,act=relu,n=1,c=1,h=5,w=5,k=1,r=3,s=3", BASE ",act=relu,layout=nhwc",
       CT_ACT_RELU, CT_LAYOUT_NHWC, 0, 1},
      {"residual=1,layout=nhwc,n=1,c=1,h=5,w=5,k=1,r=3,s=3", BASE ",layout=nhwc,residual=1",
       CT_ACT_NONE, CT_LAYOUT_NHWC, 1, 1},
      {"n=1,c=1,h=5,w=5,k=1,residual=1,r=3,s=3,act=relu", BASE ",act=relu,residual=1",
       CT_ACT_RELU, CT_LAYOUT_NCHW, 1, 1},
      {"act=relu6,n=1,c=1,h=5,w=5,k=1,r=3,s=3", BASE ",act=relu6", CT_ACT_RELU6, CT_LAYOUT_NCHW, 0, 1},
      {"n=1,c=1,h=5,w=5,k=1,r=3,s=3,residual=1,layout=nhwc,act=relu6",
       BASE ",act=relu6,layout=nhwc,residual=1", CT_ACT_RELU6, CT_LAYOUT_NHWC, 1, 1},
  };
#undef BASE
  for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
    ASSERT_EQ_INT(ct_problem_parse(forms[i].spec, &p, NULL, 0), CT_OK);
    ASSERT_EQ_INT(p.act, forms[i].act);
    ASSERT_EQ_INT(p.layout, forms[i].layout);
    ASSERT_EQ_INT(p.residual, forms[i].residual);
    ASSERT_EQ_INT(p.groups, forms[i].groups);
    ASSERT_EQ_INT(ct_problem_format(&p, buf, sizeof buf), CT_OK);
    ASSERT_EQ_STR(buf, forms[i].canonical);
  }
  /* groups > 1 comes after the residual, wherever it was written */
  ASSERT_EQ_INT(ct_problem_parse("groups=4,residual=1,n=1,c=8,h=5,w=5,k=4,r=3,s=3,act=relu",
                                 &p, NULL, 0),
                CT_OK);
  ASSERT_EQ_INT(p.groups, 4);
  ASSERT_EQ_INT(ct_problem_format(&p, buf, sizeof buf), CT_OK);
  ASSERT_EQ_STR(buf, "n=1,c=8,h=5,w=5,k=4,r=3,s=3,stride=1,pad=0,dil=1,bias=1,prec=tf32,"
                     "act=relu,residual=1,groups=4");
  ASSERT_EQ_INT(ct_problem_parse("prec=tf32,bias=1,dil=1x1,pad=2x2,stride=4,"
                                 "s=11,r=11,k=96,w=224,h=224,c=3,n=256",
                                 &p, NULL, 0),
                CT_OK);
  ASSERT_EQ_INT(ct_problem_format(&p, buf, sizeof buf), CT_OK);
  ASSERT_EQ_STR(buf, HEADLINE);
}

static void test_parse_errors(void) {
  const ct_status E = CT_ERR_PARSE;
  ASSERT_TRUE(fails_with("n=1,c=1,h=5,w=5,k=1,r=3,s=3,foo=1", E, "unknown key 'foo'"));
  ASSERT_TRUE(fails_with("n=1,c=1,h=5,w=5,k=1,r=3,s=3,group=1", E, "unknown key 'group'"));
  ASSERT_TRUE(fails_with("n=1,n=2,c=1,h=5,w=5,k=1,r=3,s=3", E, "duplicate key 'n'"));
  ASSERT_TRUE(fails_with("n=1,c=1,h=5,w=5,k=1,r=3,s=3,pad=1,pad=2", E,
                         "duplicate key 'pad'"));
  ASSERT_TRUE(fails_with("n=1,c=1,h=5,w=5,r=3,s=3", E, "missing required key 'k'"));
  ASSERT_TRUE(fails_with("c=1,h=5,w=5,k=1,r=3,s=3", E, "missing required key 'n'"));
  ASSERT_TRUE(fails_with("", E, "empty item"));
  ASSERT_TRUE(fails_with("n=1,c=1,h=5,w=5,k=1,r=3,s=3,", E, "empty item"));
  ASSERT_TRUE(fails_with("n=1,,c=1,h=5,w=5,k=1,r=3,s=3", E, "empty item"));
  ASSERT_TRUE(fails_with("n=1,c=1,h=5,w=5,k=1,r=3,s", E, "'s' is not key=value"));
  ASSERT_TRUE(fails_with("n=1, c=1,h=5,w=5,k=1,r=3,s=3", E, "unknown key ' c'"));
  /* values */
  ASSERT_TRUE(fails_with("n=1,c=1,h=abc,w=5,k=1,r=3,s=3", E, "h: 'abc' is not an integer"));
  ASSERT_TRUE(fails_with("n=1,c=1,h=12a,w=5,k=1,r=3,s=3", E, "h: '12a'"));
  ASSERT_TRUE(fails_with("n=1,c=1,h=5,w=,k=1,r=3,s=3", E, "w: '' is not an integer"));
  ASSERT_TRUE(fails_with("n=1,c=1,h=5,w=5,k=+1,r=3,s=3", E, "k: '+1'"));
  ASSERT_TRUE(fails_with("n=1,c=1,h=5,w=5,k=1.5,r=3,s=3", E, "k: '1.5'"));
  ASSERT_TRUE(fails_with("n=1,c=1,h=5,w=5,k=1,r=-,s=3", E, "r: '-'"));
  ASSERT_TRUE(fails_with("n=99999999999999999999,c=1,h=5,w=5,k=1,r=3,s=3", E,
                         "n: '99999999999999999999' overflows"));
  ASSERT_TRUE(fails_with("n=9223372036854775808,c=1,h=5,w=5,k=1,r=3,s=3", E,
                         "overflows"));
  ASSERT_TRUE(fails_with("n=1,c=1,h=5,w=5,k=1,r=3,s=3,stride=2x", E, "stride: ''"));
  ASSERT_TRUE(fails_with("n=1,c=1,h=5,w=5,k=1,r=3,s=3,dil=x2", E, "dil: ''"));
  ASSERT_TRUE(fails_with("n=1,c=1,h=5,w=5,k=1,r=3,s=3,pad=1x2x3", E, "pad: '2x3'"));
  ASSERT_TRUE(fails_with("n=1,c=1,h=5,w=5,k=1,r=3,s=3,pad=1X2", E, "pad: '1X2'"));
  ASSERT_TRUE(fails_with("n=1,c=1,h=5,w=5,k=1,r=3,s=3,bias=2", E, "bias: '2' must be 0 or 1"));
  ASSERT_TRUE(fails_with("n=1,c=1,h=5,w=5,k=1,r=3,s=3,bias=true", E, "bias"));
  ASSERT_TRUE(fails_with("n=1,c=1,h=5,w=5,k=1,r=3,s=3,bias=", E, "bias"));
  ASSERT_TRUE(fails_with("n=1,c=1,h=5,w=5,k=1,r=3,s=3,prec=fp16", E,
                         "prec: 'fp16' must be tf32 or fp32"));
  ASSERT_TRUE(fails_with("n=1,c=1,h=5,w=5,k=1,r=3,s=3,prec=TF32", E, "prec"));
  ASSERT_TRUE(fails_with("n=1,c=1,h=5,w=5,k=1,r=3,s=3,act=gelu", E,
                         "act: 'gelu' must be none, relu or relu6"));
  ASSERT_TRUE(fails_with("n=1,c=1,h=5,w=5,k=1,r=3,s=3,act=relu60", E, "act: 'relu60'"));
  ASSERT_TRUE(fails_with("n=1,c=1,h=5,w=5,k=1,r=3,s=3,act=rel", E, "act: 'rel'"));
  ASSERT_TRUE(fails_with("n=1,c=1,h=5,w=5,k=1,r=3,s=3,act=ReLU", E, "act"));
  ASSERT_TRUE(fails_with("n=1,c=1,h=5,w=5,k=1,r=3,s=3,act=", E, "act: ''"));
  ASSERT_TRUE(fails_with("n=1,c=1,h=5,w=5,k=1,r=3,s=3,act=relu,act=none", E,
                         "duplicate key 'act'"));
  ASSERT_TRUE(fails_with("n=1,c=1,h=5,w=5,k=1,r=3,s=3,layout=chwn", E,
                         "layout: 'chwn' must be nchw or nhwc"));
  ASSERT_TRUE(fails_with("n=1,c=1,h=5,w=5,k=1,r=3,s=3,layout=NHWC", E, "layout"));
  ASSERT_TRUE(fails_with("n=1,c=1,h=5,w=5,k=1,r=3,s=3,residual=2", E,
                         "residual: '2' must be 0 or 1"));
  ASSERT_TRUE(fails_with("n=1,c=1,h=5,w=5,k=1,r=3,s=3,residual=yes", E, "residual"));
  ASSERT_TRUE(fails_with("n=1,c=1,h=5,w=5,k=1,r=3,s=3,residual=1,residual=1", E,
                         "duplicate key 'residual'"));
  ASSERT_TRUE(fails_with("n=1,c=4,h=5,w=5,k=4,r=3,s=3,groups=two", E,
                         "groups: 'two' is not an integer"));
  ASSERT_TRUE(fails_with("n=1,c=4,h=5,w=5,k=4,r=3,s=3,groups=2,groups=2", E,
                         "duplicate key 'groups'"));
  ASSERT_TRUE(fails_with("n=1,c=4,h=5,w=5,k=4,r=3,s=3,groups=0", CT_ERR_INVALID_PROBLEM,
                         "groups = 0 must be >= 1"));
  ASSERT_TRUE(fails_with("n=1,c=6,h=5,w=5,k=4,r=3,s=3,groups=3", CT_ERR_INVALID_PROBLEM,
                         "groups = 3 must divide both c = 6 and k = 4"));
  ASSERT_TRUE(fails_with("n=1,c=4,h=5,w=5,k=6,r=3,s=3,groups=3", CT_ERR_INVALID_PROBLEM,
                         "groups = 3 must divide both c = 4 and k = 6"));
  /* parses, then fails validation */
  ASSERT_TRUE(fails_with("n=1,c=1,h=5,w=5,k=1,r=3,s=3,pad=-1", CT_ERR_INVALID_PROBLEM,
                         "pad_h = -1 must be >= 0"));
  ASSERT_TRUE(fails_with("n=0,c=1,h=5,w=5,k=1,r=3,s=3", CT_ERR_INVALID_PROBLEM,
                         "n = 0 must be >= 1"));
  ASSERT_TRUE(fails_with("n=1,c=1,h=2,w=5,k=1,r=3,s=3", CT_ERR_INVALID_PROBLEM,
                         "output height P"));
}

static void test_parse_args(void) {
  ct_problem p;
  char err[8];
  ASSERT_EQ_INT(ct_problem_parse(NULL, &p, NULL, 0), CT_ERR_INVALID_ARG);
  ASSERT_EQ_INT(ct_problem_parse(HEADLINE, NULL, NULL, 0), CT_ERR_INVALID_ARG);
  /* a short err buffer is truncated and NUL-terminated */
  memset(err, 'x', sizeof err);
  ASSERT_EQ_INT(ct_problem_parse("foo=1", &p, err, sizeof err), CT_ERR_PARSE);
  ASSERT_EQ_STR(err, "unknown");
  ASSERT_EQ_INT(ct_problem_parse("foo=1", &p, err, 0), CT_ERR_PARSE);
  ASSERT_EQ_INT(ct_problem_parse("foo=1", &p, NULL, 100), CT_ERR_PARSE);
}

static void test_format_limits(void) {
  ct_problem p;
  char buf[CT_PROBLEM_SPEC_MAX];
  ct_problem_default(&p);
  size_t len = strlen(HEADLINE);
  ASSERT_EQ_INT(ct_problem_format(&p, buf, len + 1), CT_OK);
  ASSERT_EQ_INT(ct_problem_format(&p, buf, len), CT_ERR_INVALID_ARG);
  ASSERT_EQ_STR(buf, "");
  ASSERT_EQ_INT(ct_problem_format(&p, buf, 0), CT_ERR_INVALID_ARG);
  ASSERT_EQ_INT(ct_problem_format(NULL, buf, sizeof buf), CT_ERR_INVALID_ARG);
  ASSERT_EQ_INT(ct_problem_format(&p, NULL, sizeof buf), CT_ERR_INVALID_ARG);
  p.precision = (ct_precision)7;
  ASSERT_EQ_INT(ct_problem_format(&p, buf, sizeof buf), CT_ERR_INVALID_ARG);
  /* the longest text of int32 fields fits CT_PROBLEM_SPEC_MAX */
  p.n = p.c = p.h = p.w = p.k = p.r = p.s = INT32_MAX;
  p.stride_h = p.pad_h = p.dil_h = INT32_MAX;
  p.stride_w = p.pad_w = p.dil_w = INT32_MAX - 1;
  p.precision = CT_PREC_FP32;
  p.act = CT_ACT_RELU6;
  p.layout = CT_LAYOUT_NHWC;
  p.residual = 1;
  p.groups = INT32_MAX;
  ASSERT_EQ_INT(ct_problem_format(&p, buf, sizeof buf), CT_OK);
  ASSERT_TRUE(strlen(buf) < CT_PROBLEM_SPEC_MAX);
}

/* ---------------------------------------------------------------------- */
/* Output size and validation                                              */

/* Output height and width of a spec. */
static void out_of(const char *spec, int64_t *P, int64_t *Q) {
  ct_problem p;
  char err[256];
  *P = *Q = -1;
  if (ct_problem_parse(spec, &p, err, sizeof err) != CT_OK) {
    fprintf(stderr, "  %s: %s\n", spec, err);
    return;
  }
  ct_problem_output(&p, P, Q);
}

/* The values PyTorch's nn.Conv2d gives, worked by hand. */
static void test_output_sizes(void) {
  int64_t P, Q;
  out_of(HEADLINE, &P, &Q); /* (224+4-10-1)/4+1 */
  ASSERT_EQ_INT(P, 55);
  ASSERT_EQ_INT(Q, 55);
  out_of("n=1,c=3,h=224,w=224,k=64,r=7,s=7,stride=2,pad=3", &P, &Q);
  ASSERT_EQ_INT(P, 112); /* (224+6-6-1)/2+1 = 111+1 */
  ASSERT_EQ_INT(Q, 112);
  out_of("n=1,c=1,h=10,w=10,k=1,r=3,s=3,dil=2", &P, &Q);
  ASSERT_EQ_INT(P, 6); /* (10-4-1)/1+1 */
  out_of("n=1,c=1,h=10,w=11,k=1,r=3,s=3,stride=2,dil=2", &P, &Q);
  ASSERT_EQ_INT(P, 3); /* floor(5/2)+1 */
  ASSERT_EQ_INT(Q, 4); /* floor(6/2)+1 */
  out_of("n=1,c=1,h=10,w=10,k=1,r=2,s=2,stride=3", &P, &Q);
  ASSERT_EQ_INT(P, 3); /* stride > kernel: (10-1-1)/3+1 */
  out_of("n=1,c=1,h=5,w=5,k=1,r=3,s=1,pad=2x3", &P, &Q);
  ASSERT_EQ_INT(P, 7);  /* pad > kernel/2: (5+4-2-1)+1 */
  ASSERT_EQ_INT(Q, 11); /* (5+6-0-1)+1 */
  out_of("n=1,c=1,h=7,w=9,k=1,r=3,s=2,stride=2x3,pad=1x0,dil=1x2", &P, &Q);
  ASSERT_EQ_INT(P, 4); /* (7+2-2-1)/2+1 */
  ASSERT_EQ_INT(Q, 3); /* (9-2-1)/3+1 */
  out_of("n=1,c=1,h=1,w=1,k=1,r=3,s=3,pad=1", &P, &Q);
  ASSERT_EQ_INT(P, 1); /* kernel as large as the padded input */
  out_of("n=1,c=1,h=6,w=6,k=1,r=1,s=1,stride=5", &P, &Q);
  ASSERT_EQ_INT(P, 2); /* (6-1)/5+1 */

  /* A negative numerator floors (C's division would truncate it to 0):
  ** h=2, r=5, stride=4: floor(-3/4)+1 = 0, an empty output. */
  ct_problem p;
  ct_problem_default(&p);
  p.h = 2;
  p.r = 5;
  p.pad_h = 0;
  p.stride_h = 4;
  ct_problem_output(&p, &P, &Q);
  ASSERT_EQ_INT(P, 0);
  ASSERT_TRUE(invalid(&p, "output height P = 0 < 1"));
  p.stride_h = 1;
  ASSERT_TRUE(invalid(&p, "output height P = -2 < 1"));
  ct_problem_output(NULL, &P, &Q);
  ASSERT_EQ_INT(P, 0);
}

static void test_validation(void) {
  ct_problem d, p;
  ct_problem_default(&d);
#define FIELD_BAD(field, value, needle)                                       \
  do {                                                                        \
    p = d;                                                                    \
    p.field = value;                                                          \
    ASSERT_TRUE(invalid(&p, needle));                                         \
  } while (0)
  FIELD_BAD(n, 0, "n = 0 must be >= 1");
  FIELD_BAD(c, 0, "c = 0 must be >= 1");
  FIELD_BAD(h, -5, "h = -5 must be >= 1");
  FIELD_BAD(w, 0, "w = 0 must be >= 1");
  FIELD_BAD(k, 0, "k = 0 must be >= 1");
  FIELD_BAD(r, 0, "r = 0 must be >= 1");
  FIELD_BAD(s, 0, "s = 0 must be >= 1");
  FIELD_BAD(stride_h, 0, "stride_h = 0 must be >= 1");
  FIELD_BAD(stride_w, -1, "stride_w = -1 must be >= 1");
  FIELD_BAD(pad_h, -1, "pad_h = -1 must be >= 0");
  FIELD_BAD(pad_w, -2, "pad_w = -2 must be >= 0");
  FIELD_BAD(dil_h, 0, "dil_h = 0 must be >= 1");
  FIELD_BAD(dil_w, 0, "dil_w = 0 must be >= 1");
  FIELD_BAD(c, (int64_t)INT32_MAX + 1, "c = 2147483648 exceeds INT32_MAX");
  FIELD_BAD(h, INT64_MAX, "h = 9223372036854775807 exceeds INT32_MAX");
  FIELD_BAD(dil_w, (int64_t)1 << 40, "dil_w");
  FIELD_BAD(pad_h, INT64_MAX, "pad_h");
  FIELD_BAD(bias, 2, "bias = 2 must be 0 or 1");
  FIELD_BAD(bias, -1, "bias");
  FIELD_BAD(precision, (ct_precision)5, "precision = 5 is unknown");
  FIELD_BAD(act, (ct_activation)3, "act = 3 is unknown");
  FIELD_BAD(act, (ct_activation)-1, "act = -1 is unknown");
  FIELD_BAD(layout, (ct_layout)2, "layout = 2 is unknown");
  FIELD_BAD(residual, 2, "residual = 2 must be 0 or 1");
  FIELD_BAD(residual, -1, "residual");
  FIELD_BAD(groups, 0, "groups = 0 must be >= 1");
  FIELD_BAD(groups, -3, "groups = -3 must be >= 1");
  FIELD_BAD(groups, 2, "groups = 2 must divide both c = 3 and k = 96");
  FIELD_BAD(groups, (int64_t)INT32_MAX + 1, "groups = 2147483648 exceeds INT32_MAX");
#undef FIELD_BAD
  p = d;
  p.w = 6; /* (6+4-10-1) = -1: floor(-1/4)+1 = 0 */
  ASSERT_TRUE(invalid(&p, "output width Q = 0 < 1"));
  ASSERT_TRUE(invalid(&p, "dil_w*(S-1)+1 = 11"));
  p = d;
  p.w = 7; /* (7+4-10-1)/4+1 = 1: the smallest valid width */
  ASSERT_EQ_INT(ct_problem_validate(&p, NULL, 0), CT_OK);
  p = d;
  p.r = 3;
  p.dil_h = 200; /* dilated kernel height 401 > 228 */
  ASSERT_TRUE(invalid(&p, "output height P"));
  ASSERT_EQ_INT(ct_problem_validate(NULL, NULL, 0), CT_ERR_INVALID_ARG);
  char err[64];
  p = d;
  p.k = 0;
  ASSERT_EQ_INT(ct_problem_validate(&p, NULL, 0), CT_ERR_INVALID_PROBLEM);
  ASSERT_EQ_INT(ct_problem_validate(&p, err, 2), CT_ERR_INVALID_PROBLEM);
  ASSERT_EQ_STR(err, "k");
}

/* Tensors past 32-bit indexing. */
static void test_overflow(void) {
  ct_problem p;
  char err[256] = "";
  /* a million images of 3x224x224: x 1.5e11, y 2.9e11 elements, within 2^48 */
  ASSERT_EQ_INT(ct_problem_parse("n=1000000,c=3,h=224,w=224,k=96,r=11,"
                                 "s=11,stride=4,pad=2",
                                 &p, err, sizeof err),
                CT_OK);
  /* ... 2^48 + 1 elements are not */
  ASSERT_EQ_INT(ct_problem_parse("n=65537,c=1,h=65536,w=65536,k=1,r=1,s=1",
                                 &p, err, sizeof err),
                CT_ERR_INVALID_PROBLEM);
  ASSERT_TRUE(strstr(err, "input x has N*C*H*W = 281479271677952 elements") != NULL);
  ASSERT_TRUE(strstr(err, "more than 2^48") != NULL);
  ASSERT_EQ_INT(ct_problem_parse("n=65536,c=1,h=65536,w=65536,k=1,r=1,s=1",
                                 &p, err, sizeof err),
                CT_OK);
  /* x: the product overflows int64 itself */
  ASSERT_EQ_INT(ct_problem_parse("n=2147483647,c=2147483647,h=2147483647,"
                                 "w=2147483647,k=1,r=1,s=1",
                                 &p, err, sizeof err),
                CT_ERR_INVALID_PROBLEM);
  ASSERT_TRUE(strstr(err, "input x has N*C*H*W > 2^63 elements") != NULL);
  /* w */
  ASSERT_EQ_INT(ct_problem_parse("n=1,c=65536,h=65537,w=1,k=65536,r=65537,s=1", &p,
                                 err, sizeof err),
                CT_ERR_INVALID_PROBLEM);
  ASSERT_TRUE(strstr(err, "weights w has K*(C/groups)*R*S") != NULL);
  /* the same sizes in 65536 groups: w has C/groups = 1 channel */
  ASSERT_EQ_INT(ct_problem_parse("n=1,c=65536,h=65537,w=1,k=65536,r=65537,s=1,groups=65536",
                                 &p, err, sizeof err),
                CT_OK);
  /* y larger than x through padding */
  ASSERT_EQ_INT(ct_problem_parse("n=1,c=1,h=1,w=1,k=1,r=1,s=1,pad=20000000x0",
                                 &p, err, sizeof err),
                CT_OK);
  ASSERT_EQ_INT(ct_problem_parse("n=1,c=1,h=1,w=1,k=1,r=1,s=1,pad=20000000", &p,
                                 err, sizeof err),
                CT_ERR_INVALID_PROBLEM);
  ASSERT_TRUE(strstr(err, "output y") != NULL);

  /* 2^31 - 1 elements is the last 32-bit size; one more needs 64-bit
  ** offsets, which only the families with big_tensors take. */
  const struct {
    const char *spec;
    int index64;
  } sizes[] = {
      {"n=1,c=1,h=1,w=2147483647,k=1,r=1,s=1", 0},
      {"n=1,c=1,h=32768,w=65536,k=1,r=1,s=1", 1},            /* x */
      {"n=1,c=65536,h=1,w=1,k=32768,r=1,s=1", 1},            /* w */
      {"n=1,c=1,h=40000,w=40000,k=2,r=1,s=1", 1},            /* y */
      {"n=16,c=64,h=1024,w=1024,k=128,r=1,s=1,bias=0", 1},   /* KernelBench 87 */
      {"n=16,c=64,h=1024,w=1024,k=127,r=1,s=1,bias=0", 0},
  };
  ct_gen_limits lim;
  ASSERT_EQ_INT(ct_gen_limits_for_arch("sm_90a", &lim), CT_OK);
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    ASSERT_EQ_INT(ct_problem_parse(sizes[i].spec, &p, err, sizeof err), CT_OK);
    ASSERT_EQ_INT(ct_gen_index64(&p), sizes[i].index64);
    ct_gen_variant *all = NULL;
    size_t n_all = 0;
    ASSERT_EQ_INT(ct_gen_enumerate(&p, &lim, &all, &n_all), CT_OK);
    size_t big = 0;
    for (size_t v = 0; v < n_all; v++) big += all[v].family->big_tensors;
    if (sizes[i].index64) ASSERT_TRUE(n_all > 0 && big == n_all);
    free(all);
    ct_gen_variant dv;
    ASSERT_EQ_INT(ct_gen_default_variant(&p, &lim, &dv), CT_OK);
  }
  /* padded extents */
  ASSERT_EQ_INT(ct_problem_parse("n=1,c=1,h=1,w=1,k=1,r=1,s=1,pad=1073741824x0",
                                 &p, err, sizeof err),
                CT_ERR_INVALID_PROBLEM);
  ASSERT_TRUE(strstr(err, "padded height H + 2*pad_h = 2147483649 exceeds INT32_MAX") != NULL);
  ASSERT_EQ_INT(ct_problem_parse("n=1,c=1,h=1,w=1,k=1,r=1,s=1,pad=0x1073741824",
                                 &p, err, sizeof err),
                CT_ERR_INVALID_PROBLEM);
  ASSERT_TRUE(strstr(err, "padded width W + 2*pad_w") != NULL);
  /* huge dilation: no overflow, just an empty output */
  ASSERT_EQ_INT(ct_problem_parse("n=1,c=1,h=5,w=5,k=1,r=2147483647,s=1,"
                                 "dil=2147483647",
                                 &p, err, sizeof err),
                CT_ERR_INVALID_PROBLEM);
  ASSERT_TRUE(strstr(err, "output height P") != NULL);
}

/* ---------------------------------------------------------------------- */
/* Names                                                                   */

static void test_status_strings(void) {
  for (int i = 0; i < CT_STATUS_COUNT; i++) {
    const char *s = ct_status_string((ct_status)i);
    ASSERT_TRUE(s != NULL && s[0] != '\0');
    ASSERT_TRUE(strcmp(s, "unknown status") != 0);
    for (int j = 0; j < i; j++)
      ASSERT_TRUE(strcmp(s, ct_status_string((ct_status)j)) != 0);
  }
  ASSERT_EQ_STR(ct_status_string(CT_OK), "success");
  ASSERT_EQ_STR(ct_status_string(CT_STATUS_COUNT), "unknown status");
  ASSERT_EQ_STR(ct_status_string((ct_status)-1), "unknown status");
  ASSERT_EQ_STR(ct_status_string((ct_status)1000), "unknown status");
}

static void test_precision_names(void) {
  ct_precision prec = CT_PREC_FP32;
  ASSERT_EQ_STR(ct_precision_name(CT_PREC_TF32), "tf32");
  ASSERT_EQ_STR(ct_precision_name(CT_PREC_FP32), "fp32");
  ASSERT_TRUE(ct_precision_name((ct_precision)2) == NULL);
  ASSERT_EQ_INT(ct_precision_parse("tf32", &prec), CT_OK);
  ASSERT_EQ_INT(prec, CT_PREC_TF32);
  ASSERT_EQ_INT(ct_precision_parse("fp32", &prec), CT_OK);
  ASSERT_EQ_INT(prec, CT_PREC_FP32);
  ASSERT_EQ_INT(ct_precision_parse("fp16", &prec), CT_ERR_PARSE);
  ASSERT_EQ_INT(ct_precision_parse("tf32 ", &prec), CT_ERR_PARSE);
  ASSERT_EQ_INT(ct_precision_parse("", &prec), CT_ERR_PARSE);
  ASSERT_EQ_INT(prec, CT_PREC_FP32);
  ASSERT_EQ_INT(ct_precision_parse(NULL, &prec), CT_ERR_INVALID_ARG);
  ASSERT_EQ_INT(ct_precision_parse("tf32", NULL), CT_ERR_INVALID_ARG);
}

static void test_activation_and_layout_names(void) {
  ASSERT_EQ_STR(ct_activation_name(CT_ACT_NONE), "none");
  ASSERT_EQ_STR(ct_activation_name(CT_ACT_RELU), "relu");
  ASSERT_EQ_STR(ct_activation_name(CT_ACT_RELU6), "relu6");
  ASSERT_TRUE(ct_activation_name((ct_activation)3) == NULL);
  ASSERT_TRUE(ct_activation_name((ct_activation)-1) == NULL);
  ASSERT_EQ_STR(ct_layout_name(CT_LAYOUT_NCHW), "nchw");
  ASSERT_EQ_STR(ct_layout_name(CT_LAYOUT_NHWC), "nhwc");
  ASSERT_TRUE(ct_layout_name((ct_layout)2) == NULL);
  /* an unknown activation does not format */
  ct_problem p;
  char buf[CT_PROBLEM_SPEC_MAX];
  ct_problem_default(&p);
  p.act = (ct_activation)7;
  ASSERT_EQ_INT(ct_problem_format(&p, buf, sizeof buf), CT_ERR_INVALID_ARG);
  ASSERT_EQ_STR(buf, "");
  p.act = CT_ACT_NONE;
  p.layout = (ct_layout)3;
  ASSERT_EQ_INT(ct_problem_format(&p, buf, sizeof buf), CT_ERR_INVALID_ARG);
  p.layout = CT_LAYOUT_NCHW;
  p.residual = 2;
  ASSERT_EQ_INT(ct_problem_format(&p, buf, sizeof buf), CT_ERR_INVALID_ARG);
  p.residual = 0;
  p.groups = 0;
  ASSERT_EQ_INT(ct_problem_format(&p, buf, sizeof buf), CT_ERR_INVALID_ARG);
  p.groups = 1;
  p.bias = 7; /* "bias=7" would not parse back */
  ASSERT_EQ_INT(ct_problem_format(&p, buf, sizeof buf), CT_ERR_INVALID_ARG);
  /* the struct's size, for bindings that mirror it */
  ASSERT_EQ_INT((long long)ct_problem_size(), (long long)sizeof(ct_problem));
}

static void test_path_names(void) {
  ASSERT_EQ_STR(ct_path_name(CT_PATH_NONE), "none");
  ASSERT_EQ_STR(ct_path_name(CT_PATH_TUNED_CUBIN), "tuned-cubin");
  ASSERT_EQ_STR(ct_path_name(CT_PATH_TUNED_COMPILED), "tuned-compiled");
  ASSERT_EQ_STR(ct_path_name(CT_PATH_DEFAULT), "default");
  ASSERT_EQ_STR(ct_path_name((ct_path)9), "unknown");
}

int main(void) {
  RUN_TEST(test_headline);
  RUN_TEST(test_round_trips);
  RUN_TEST(test_defaults_and_order);
  RUN_TEST(test_parse_errors);
  RUN_TEST(test_parse_args);
  RUN_TEST(test_format_limits);
  RUN_TEST(test_output_sizes);
  RUN_TEST(test_validation);
  RUN_TEST(test_overflow);
  RUN_TEST(test_status_strings);
  RUN_TEST(test_precision_names);
  RUN_TEST(test_activation_and_layout_names);
  RUN_TEST(test_path_names);
  TEST_EXIT();
}
