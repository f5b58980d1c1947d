/*
** fuzz_problem.c — libFuzzer target for problem specs and problems.
**
** The input is a spec string for ct_problem_parse; when it is long enough
** its first bytes are also read as a raw ct_problem for
** ct_problem_validate.  Invariants checked on every input:
**   - parse and validate never crash, always NUL-terminate their message,
**     and fail only with CT_ERR_PARSE / CT_ERR_INVALID_PROBLEM;
**   - a problem that parses validates, formats into CT_PROBLEM_SPEC_MAX
**     bytes, and parses back to the same problem (and the same text);
**   - the generator copes with every valid problem: the default variant
**     exists or is refused cleanly, every enumerated variant's name rebuilds
**     it, and the runtime's distance is 0 to itself and finite.
*/
#include <math.h>
#include <stdint.h>

#include "ct_lookup.h"
#include "fuzz_common.h"

static ct_gen_limits lim;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  FUZZ_CHECK(ct_gen_limits_for_arch("sm_90a", &lim) == CT_OK);
  return 0;
}

/* Every field of a equals b's (not memcmp: the struct ends in padding,
** which a raw problem from the fuzzer's bytes fills with anything). */
static int same_fields(const ct_problem *a, const ct_problem *b) {
  return a->n == b->n && a->c == b->c && a->h == b->h && a->w == b->w && a->k == b->k &&
         a->r == b->r && a->s == b->s && a->stride_h == b->stride_h &&
         a->stride_w == b->stride_w && a->pad_h == b->pad_h && a->pad_w == b->pad_w &&
         a->dil_h == b->dil_h && a->dil_w == b->dil_w && a->bias == b->bias &&
         a->precision == b->precision && a->act == b->act && a->layout == b->layout &&
         a->residual == b->residual && a->groups == b->groups;
}

/* Everything that must hold for a valid problem. */
static void check_valid(const ct_problem *p) {
  char buf[CT_PROBLEM_SPEC_MAX], again[CT_PROBLEM_SPEC_MAX], err[256];
  FUZZ_CHECK(ct_problem_validate(p, err, sizeof err) == CT_OK);
  FUZZ_CHECK(ct_problem_format(p, buf, sizeof buf) == CT_OK);
  ct_problem q;
  FUZZ_CHECK(ct_problem_parse(buf, &q, err, sizeof err) == CT_OK);
  FUZZ_CHECK(same_fields(p, &q));
  FUZZ_CHECK(ct_problem_format(&q, again, sizeof again) == CT_OK);
  FUZZ_CHECK(strcmp(buf, again) == 0);
  int64_t P, Q;
  ct_problem_output(p, &P, &Q);
  FUZZ_CHECK(P >= 1 && Q >= 1);
  FUZZ_CHECK(ct_rt_problem_distance(p, p) == 0.0);

  ct_gen_variant v;
  ct_status rc = ct_gen_default_variant(p, &lim, &v);
  FUZZ_CHECK(rc == CT_OK || rc == CT_ERR_UNSUPPORTED);
  /* Enumeration is the costly part: only for problems of modest size. */
  if (p->n * p->c * p->h * p->w > (1 << 22)) return;
  ct_gen_variant *vs = NULL;
  size_t n = 0;
  FUZZ_CHECK(ct_gen_enumerate(p, &lim, &vs, &n) == CT_OK);
  for (size_t i = 0; i < n; i += 1 + n / 16) {
    ct_gen_variant back;
    FUZZ_CHECK(ct_gen_variant_from_name(p, &lim, vs[i].name, &back) == CT_OK);
    FUZZ_CHECK(strcmp(back.name, vs[i].name) == 0);
    FUZZ_CHECK(back.n_kernels >= 1 && back.n_kernels <= CT_GEN_MAX_KERNELS);
  }
  free(vs);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 4096) return 0;
  char *spec = malloc(size + 1);
  if (!spec) return 0;
  memcpy(spec, data, size);
  spec[size] = '\0';
  ct_problem p;
  char err[128];
  memset(err, 'x', sizeof err);
  ct_status rc = ct_problem_parse(spec, &p, err, sizeof err);
  FUZZ_CHECK(memchr(err, '\0', sizeof err) != NULL || rc == CT_OK);
  if (rc == CT_OK) check_valid(&p);
  else FUZZ_CHECK(rc == CT_ERR_PARSE || rc == CT_ERR_INVALID_PROBLEM);
  free(spec);

  /* The same bytes as a raw problem, as a caller could pass one. */
  if (size >= sizeof p) {
    memcpy(&p, data, sizeof p);
    memset(err, 'x', sizeof err);
    rc = ct_problem_validate(&p, err, sizeof err);
    FUZZ_CHECK(memchr(err, '\0', sizeof err) != NULL || rc == CT_OK);
    if (rc == CT_OK) check_valid(&p);
    else FUZZ_CHECK(rc == CT_ERR_INVALID_PROBLEM);
  }
  return 0;
}
