/*
** gen.c — the generator's generic part: the family table, device limits by
** architecture, enumeration of a search space, variant names, and the source
** text of a variant (problem #defines + parameters + plan + template).
** Everything family-specific lives in the family's descriptor
** (generator/family_*.c); this file knows no family by its parameters.
*/
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convtune.h"
#include "ct_gen.h"

/* ---------------------------------------------------------------------- */
/* The families                                                            */

/* Every family, in enumeration order.  Adding a family (see ct_gen_family in
** ct_gen.h): one X(name) line here (its descriptor is ct_gen_family_<name>),
** its .c file in generator/meson.build, its template in
** templates/meson.build.  "direct" is the safe default family and stays
** first.  The order is also the search's: under a time budget its seeds
** go round-robin over the tensor-core families in this order, so the
** families offered only where they fit their shape (pw: a 1x1 NCHW read
** in place; gmk: too few tiles for the SMs; gmp: what im2col cannot
** gather, or a cheap patch matrix) come before the general gm, which
** covers almost every shape (dw and dwc, which run depthwise problems
** alone, NCHW and NHWC, follow direct).  On a large problem the first screen can
** take a short budget whole (kb87: one of 44 in 5 s).  tap (any NCHW
** filter with horizontal stride 1, read in place) comes after gm until
** it has been measured on a GPU (docs/PERFORMANCE.md v18): a short budget
** screens gm first.  From CT_GEN_FEW_CHANNELS input channels on, the
** families made for few channels (wg, tc, wgs, wgr, s2d_wg and their
** 3xTF32 twins, few_channels set) are enumerated after all the others:
** where they are offered on such a shape they are often far off the
** general families (docs/PERFORMANCE.md v30), and a short budget may
** screen only its first seed.  A grouped problem keeps the table order
** (direct, dw, dwc, then tc and tc3, the families that run it). */
#define CT_GEN_FAMILY_LIST(X) \
  X(direct) \
  X(dw) X(dwc) \
  X(wg) \
  X(wg3) \
  X(tc) X(tc3) \
  X(wgs) \
  X(wgr) \
  X(s2d_wg) X(s2d_wg3) \
  X(pw) X(pw3) \
  X(pwq) \
  X(pwe) X(pwqe) \
  X(gmk) X(gmk3) \
  X(gmp) X(gmp3) \
  X(gm) X(gm3) \
  X(gme) X(gme3) \
  X(tap) X(tap3)

#define CT_GEN_DECLARE_FAMILY(f) extern const ct_gen_family ct_gen_family_##f;
CT_GEN_FAMILY_LIST(CT_GEN_DECLARE_FAMILY)

#define CT_GEN_FAMILY_ENTRY(f) &ct_gen_family_##f,
const ct_gen_family *const ct_gen_families[] = {
  CT_GEN_FAMILY_LIST(CT_GEN_FAMILY_ENTRY)
  NULL
};

/* TEST ONLY: the deliberately broken families of generator/family_test.c,
** offered (by ct_gen_enumerate, before the real ones, and by
** ct_gen_family_find) only when CONVTUNE_TEST_FAMILIES=1 is set, so that a
** test tune meets its faults first and must carry on past them.
** test_badargs declares an argument kind no launcher knows, so that the
** refusal of such a family (ct_gen_family_launchable) is tested; test_skip
** (NCHW residual problems) leaves one output unwritten. */
extern const ct_gen_family ct_gen_family_test_oob, ct_gen_family_test_hang,
    ct_gen_family_test_wrong, ct_gen_family_test_refuse,
    ct_gen_family_test_badargs, ct_gen_family_test_skip;
static const ct_gen_family *const ct_gen_test_families[] = {
  &ct_gen_family_test_oob, &ct_gen_family_test_hang,
  &ct_gen_family_test_wrong, &ct_gen_family_test_refuse,
  &ct_gen_family_test_badargs, &ct_gen_family_test_skip, NULL
};

static const ct_gen_family *const *gen_test_families(void) {
  const char *on = getenv("CONVTUNE_TEST_FAMILIES");
  return on != NULL && strcmp(on, "1") == 0 ? ct_gen_test_families : NULL;
}

int ct_gen_family_launchable(const ct_gen_family *f) {
  return f != NULL &&
         (f->args == CT_GEN_ARGS_POINTERS || f->args == CT_GEN_ARGS_TENSOR_MAPS);
}

/* The family ct_gen_default_variant draws from: it accepts every problem. */
#define CT_GEN_DEFAULT_FAMILY "direct"

/* Room for a plan's "#define" lines. */
#define CT_GEN_DEFINES_MAX 4096

const ct_gen_family *ct_gen_family_find(const char *name) {
  if (name == NULL) return NULL;
  for (size_t i = 0; ct_gen_families[i] != NULL; i++)
    if (strcmp(ct_gen_families[i]->name, name) == 0) return ct_gen_families[i];
  const ct_gen_family *const *test = gen_test_families();
  for (size_t i = 0; test != NULL && test[i] != NULL; i++)
    if (strcmp(test[i]->name, name) == 0) return test[i];
  return NULL;
}

/* ---------------------------------------------------------------------- */
/* Device limits                                                           */

/* Per-architecture limits of a representative device (CUDA C Programming
** Guide, "Technical Specifications per Compute Capability"). */
static const ct_gen_limits ct_gen_known_limits[] = {
  /* arch      cc     SMs  thr   smem/block  smem/SM  regs/SM */
  {"sm_90a", 9, 0, 132, 1024, 232448, 233472, 65536}, /* H100 / H200 SXM */
  {"sm_90",  9, 0, 132, 1024, 232448, 233472, 65536}, /* H100 / H200 SXM */
  {"sm_89",  8, 9, 142, 1024, 101376, 102400, 65536}, /* L40S */
  {"sm_80",  8, 0, 108, 1024, 166912, 167936, 65536}, /* A100 */
};

ct_status ct_gen_limits_for_arch(const char *arch, ct_gen_limits *lim) {
  if (arch == NULL || lim == NULL) return CT_ERR_INVALID_ARG;
  size_t n = sizeof ct_gen_known_limits / sizeof ct_gen_known_limits[0];
  for (size_t i = 0; i < n; i++) {
    if (strcmp(ct_gen_known_limits[i].arch, arch) == 0) {
      *lim = ct_gen_known_limits[i];
      return CT_OK;
    }
  }
  return CT_ERR_UNSUPPORTED;
}

int64_t ct_gen_sm_count(const ct_gen_limits *lim) {
  return lim->sm_count > 1 ? lim->sm_count : 1;
}

/* ---------------------------------------------------------------------- */
/* The budget checks every family makes                                    */

int64_t ct_gen_threads_per_sm(const ct_gen_limits *lim) {
  return lim->cc_major == 8 && lim->cc_minor >= 6 ? 1536 : 2048;
}

int ct_gen_budget_fits(const ct_gen_limits *lim, const ct_gen_budget *b) {
  if (b->threads > lim->max_threads_per_block) return 0;
  if (b->smem > lim->max_smem_per_block || b->smem > CT_GEN_SMEM_MAX) return 0;
  if (b->blocks_per_sm > 0) {
    if (b->blocks_per_sm * (b->smem + CT_GEN_SMEM_RESERVED) > lim->smem_per_sm) return 0;
    if (b->blocks_per_sm * b->threads > ct_gen_threads_per_sm(lim)) return 0;
  }
  return 1;
}

int64_t ct_gen_regs_cap(const ct_gen_limits *lim, int64_t blocks_per_sm,
                        int64_t threads) {
  int64_t cap = lim->regs_per_sm / (blocks_per_sm * threads);
  cap = cap / 8 * 8;
  return cap > 255 ? 255 : cap;
}

void ct_gen_plan_one(ct_gen_variant *v, const char *kernel, unsigned gx,
                     unsigned gy, unsigned threads, unsigned smem,
                     const char *split_macro, int split, char *defines,
                     size_t len) {
  v->n_kernels = 1;
  ct_gen_launch *l = &v->kernels[0];
  snprintf(l->name, sizeof l->name, "%s", kernel);
  l->grid[0] = gx;
  l->grid[1] = gy;
  l->grid[2] = 1;
  l->block[0] = threads;
  l->block[1] = 1;
  l->block[2] = 1;
  l->smem = smem;
  v->workspace_bytes = 0;
  int n = split_macro ? snprintf(defines, len, "#define %s %d\n", split_macro, split) : 0;
  if (n < 0 || (size_t)n >= len) n = 0;
  snprintf(defines + n, len - (size_t)n,
           "#define CT_PLAN_GRID_X %u\n"
           "#define CT_PLAN_GRID_Y %u\n"
           "#define CT_PLAN_BLOCK_X %u\n"
           "#define CT_PLAN_SMEM %u\n",
           gx, gy, threads, smem);
}

/* ---------------------------------------------------------------------- */
/* Variants                                                                */

const char *ct_gen_family_declines(const ct_gen_family *f, const ct_problem *p) {
  const unsigned prec = (unsigned)p->precision;
  if (prec >= 32u || (f->precisions & (1u << prec)) == 0) return "not at this precision";
  if (p->layout != CT_LAYOUT_NCHW && !f->nhwc) return "no NHWC layout";
  if (p->residual && !f->residual) return "no residual";
  if (p->groups > 1 && !f->groups) return "no groups";
  return NULL;
}

/* f meets p's precision and runs its layout, its residual and its groups. */
static int family_meets(const ct_gen_family *f, const ct_problem *p) {
  return ct_gen_family_declines(f, p) == NULL;
}

/* Builds the canonical name "family:P1=v1,P2=v2" ("family" with no
** parameters).  Returns 0, or -1 if it does not fit. */
static int variant_name(const ct_gen_family *f, const int *values, char *buf,
                        size_t len) {
  int n = snprintf(buf, len, "%s", f->name);
  if (n < 0 || (size_t)n >= len) return -1;
  size_t used = (size_t)n;
  for (int i = 0; i < f->n_params; i++) {
    n = snprintf(buf + used, len - used, "%s%s=%d", i == 0 ? ":" : ",",
                 f->params[i].name, values[i]);
    if (n < 0 || (size_t)n >= len - used) return -1;
    used += (size_t)n;
  }
  return 0;
}

/* Fills *v for a valid point of family f on the device lim describes:
** zeroes it first (so whole variants compare with memcmp), then names and
** plans it.  defines receives the plan's #define lines (NULL: discarded). */
static ct_status variant_make(const ct_problem *p, const ct_gen_limits *lim,
                              const ct_gen_family *f, const int *values,
                              ct_gen_variant *v, char *defines, size_t len) {
  char scratch[CT_GEN_DEFINES_MAX];
  ct_gen_limits planned_for = *lim; /* lim may be &v->limits */
  memset(v, 0, sizeof *v);
  v->family = f;
  v->limits = planned_for;
  for (int i = 0; i < f->n_params; i++) v->values[i] = values[i];
  if (variant_name(f, values, v->name, sizeof v->name) != 0)
    return CT_ERR_UNSUPPORTED;
  if (defines == NULL) {
    defines = scratch;
    len = sizeof scratch;
  }
  defines[0] = '\0';
  f->plan(p, &v->limits, values, v, defines, len);
  return CT_OK;
}

/* Decodes point index idx of f's space (last parameter fastest). */
static void point_values(const ct_gen_family *f, size_t idx, int *values) {
  for (int i = f->n_params - 1; i >= 0; i--) {
    size_t nv = (size_t)f->params[i].n_values;
    values[i] = f->params[i].values[idx % nv];
    idx /= nv;
  }
}

static size_t point_count(const ct_gen_family *f) {
  size_t total = 1;
  for (int i = 0; i < f->n_params; i++) total *= (size_t)f->params[i].n_values;
  return total;
}

/* A family's hard limits, behind the one the generator applies for every
** family (tensors past 2^31 - 1 elements only for those that take them),
** then, unless hard_only, its pruning heuristic. */
static int point_valid(const ct_gen_family *f, const ct_problem *p,
                       const ct_gen_limits *lim, const int *values,
                       int hard_only) {
  if (!f->big_tensors && ct_gen_index64(p)) return 0;
  if (!f->valid(p, lim, values)) return 0;
  return hard_only || f->worth == NULL || f->worth(p, lim, values);
}

/* ct_gen_enumerate and ct_gen_enumerate_all. */
static ct_status enumerate(const ct_problem *p, const ct_gen_limits *lim,
                           int hard_only, ct_gen_variant **out,
                           size_t *count) {
  if (out) *out = NULL;
  if (count) *count = 0;
  if (p == NULL || lim == NULL || out == NULL || count == NULL)
    return CT_ERR_INVALID_ARG;
  if (ct_problem_validate(p, NULL, 0) != CT_OK) return CT_ERR_INVALID_PROBLEM;

  ct_gen_variant *list = NULL;
  size_t n = 0, cap = 0;
  /* The test families, then the real ones in list order; from
  ** CT_GEN_FEW_CHANNELS input channels on, the few-channel families in a
  ** pass of their own after the rest (the search's seed order).  Not for
  ** a grouped problem: no general family runs it to be seeded first. */
  const ct_gen_family *const *lists[3] = {gen_test_families(), ct_gen_families,
                                          ct_gen_families};
  const int defer = p->groups == 1 && p->c >= CT_GEN_FEW_CHANNELS;
  for (int li = 0; li < 3; li++)
  for (size_t fi = 0; lists[li] != NULL && lists[li][fi] != NULL; fi++) {
    const ct_gen_family *f = lists[li][fi];
    if (li > 0 && (f->few_channels && defer) != (li == 2)) continue;
    if (!family_meets(f, p) || !ct_gen_family_launchable(f)) continue;
    size_t total = point_count(f);
    for (size_t idx = 0; idx < total; idx++) {
      int values[CT_GEN_MAX_PARAMS];
      point_values(f, idx, values);
      if (!point_valid(f, p, lim, values, hard_only)) continue;
      if (n == cap) {
        size_t ncap = cap ? 2 * cap : 32;
        ct_gen_variant *grown = realloc(list, ncap * sizeof *grown);
        if (grown == NULL) {
          free(list);
          return CT_ERR_NOMEM;
        }
        list = grown;
        cap = ncap;
      }
      if (variant_make(p, lim, f, values, &list[n], NULL, 0) == CT_OK) n++;
    }
  }
  *out = list;
  *count = n;
  return CT_OK;
}

ct_status ct_gen_enumerate(const ct_problem *p, const ct_gen_limits *lim,
                           ct_gen_variant **out, size_t *count) {
  return enumerate(p, lim, 0, out, count);
}

ct_status ct_gen_enumerate_all(const ct_problem *p, const ct_gen_limits *lim,
                               ct_gen_variant **out, size_t *count) {
  return enumerate(p, lim, 1, out, count);
}

/* Parses a decimal int filling all of [s, end).  Returns 0 or -1. */
static int parse_int(const char *s, const char *end, int *value) {
  char buf[32];
  size_t len = (size_t)(end - s);
  if (len == 0 || len >= sizeof buf) return -1;
  memcpy(buf, s, len);
  buf[len] = '\0';
  if (!(buf[0] == '-' || (buf[0] >= '0' && buf[0] <= '9'))) return -1;
  errno = 0;
  char *stop = NULL;
  long v = strtol(buf, &stop, 10);
  if (errno != 0 || stop == buf || *stop != '\0' || v < INT_MIN || v > INT_MAX)
    return -1;
  *value = (int)v;
  return 0;
}

/* ct_gen_variant_from_name: see ct_gen.h.  A value outside a parameter's
** list is not a point of this build's search space, hence UNSUPPORTED. */
ct_status ct_gen_variant_from_name(const ct_problem *p,
                                   const ct_gen_limits *lim, const char *name,
                                   ct_gen_variant *out) {
  if (p == NULL || lim == NULL || name == NULL || out == NULL)
    return CT_ERR_INVALID_ARG;
  memset(out, 0, sizeof *out);

  const char *colon = strchr(name, ':');
  size_t flen = colon ? (size_t)(colon - name) : strlen(name);
  char fname[64];
  if (flen == 0 || flen >= sizeof fname) return CT_ERR_PARSE;
  memcpy(fname, name, flen);
  fname[flen] = '\0';
  const ct_gen_family *f = ct_gen_family_find(fname);
  if (f == NULL) return CT_ERR_NOT_FOUND;

  int values[CT_GEN_MAX_PARAMS];
  int seen[CT_GEN_MAX_PARAMS] = {0};
  int outside_list = 0;
  const char *s = colon ? colon + 1 : name + flen;
  if (*s != '\0' || colon != NULL) {
    if (*s == '\0' && f->n_params > 0) return CT_ERR_PARSE;
    while (*s != '\0') {
      const char *item_end = strchr(s, ',');
      if (item_end == NULL) item_end = s + strlen(s);
      const char *eq = memchr(s, '=', (size_t)(item_end - s));
      if (eq == NULL) return CT_ERR_PARSE;
      int pi = -1;
      for (int i = 0; i < f->n_params; i++) {
        size_t plen = strlen(f->params[i].name);
        if ((size_t)(eq - s) == plen && memcmp(s, f->params[i].name, plen) == 0)
          pi = i;
      }
      if (pi < 0 || seen[pi]) return CT_ERR_PARSE;
      int value;
      if (parse_int(eq + 1, item_end, &value) != 0) return CT_ERR_PARSE;
      seen[pi] = 1;
      values[pi] = value;
      int listed = 0;
      for (int j = 0; j < f->params[pi].n_values; j++)
        if (f->params[pi].values[j] == value) listed = 1;
      if (!listed) outside_list = 1;
      if (*item_end == '\0') break;
      s = item_end + 1;
      if (*s == '\0') return CT_ERR_PARSE; /* trailing comma */
    }
  }
  for (int i = 0; i < f->n_params; i++)
    if (!seen[i]) return CT_ERR_PARSE;

  if (outside_list || !ct_gen_family_launchable(f)) return CT_ERR_UNSUPPORTED;
  if (!family_meets(f, p)) return CT_ERR_UNSUPPORTED;
  if (ct_problem_validate(p, NULL, 0) != CT_OK) return CT_ERR_INVALID_PROBLEM;
  if (!point_valid(f, p, lim, values, 0)) return CT_ERR_UNSUPPORTED;
  ct_status rc = variant_make(p, lim, f, values, out, NULL, 0);
  if (rc != CT_OK) memset(out, 0, sizeof *out);
  return rc;
}

/* ct_gen_default_variant: see ct_gen.h. */
ct_status ct_gen_default_variant(const ct_problem *p, const ct_gen_limits *lim,
                                 ct_gen_variant *out) {
  if (p == NULL || lim == NULL || out == NULL) return CT_ERR_INVALID_ARG;
  memset(out, 0, sizeof *out);
  if (ct_problem_validate(p, NULL, 0) != CT_OK) return CT_ERR_INVALID_PROBLEM;
  const ct_gen_family *f = ct_gen_family_find(CT_GEN_DEFAULT_FAMILY);
  if (f == NULL || !ct_gen_family_launchable(f) || !family_meets(f, p))
    return CT_ERR_UNSUPPORTED;
  size_t total = point_count(f);
  for (size_t idx = 0; idx < total; idx++) {
    int values[CT_GEN_MAX_PARAMS];
    point_values(f, idx, values);
    if (point_valid(f, p, lim, values, 0)) return variant_make(p, lim, f, values, out, NULL, 0);
  }
  return CT_ERR_UNSUPPORTED;
}

/* ---------------------------------------------------------------------- */
/* Source text                                                             */

/* A growing string; a failed append sets oom and leaves it unusable. */
typedef struct strbuf {
  char *data;
  size_t len, cap;
  int oom;
} strbuf;

static void sb_append(strbuf *b, const char *s, size_t n) {
  if (b->oom) return;
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 4096;
    while (b->len + n + 1 > cap) cap *= 2;
    char *grown = realloc(b->data, cap);
    if (grown == NULL) {
      b->oom = 1;
      return;
    }
    b->data = grown;
    b->cap = cap;
  }
  memcpy(b->data + b->len, s, n);
  b->len += n;
  b->data[b->len] = '\0';
}

static void sb_printf(strbuf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void sb_printf(strbuf *b, const char *fmt, ...) {
  char line[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  if (n < 0 || (size_t)n >= sizeof line) {
    b->oom = 1; /* never happens for the short lines written here */
    return;
  }
  sb_append(b, line, (size_t)n);
}

/* The problem's #define lines, in the order the templates document. */
static void put_problem(strbuf *b, const ct_problem *p) {
  int64_t P = 0, Q = 0;
  ct_problem_output(p, &P, &Q);
  sb_printf(b, "#define CT_N %" PRId64 "\n", p->n);
  sb_printf(b, "#define CT_C %" PRId64 "\n", p->c);
  sb_printf(b, "#define CT_H %" PRId64 "\n", p->h);
  sb_printf(b, "#define CT_W %" PRId64 "\n", p->w);
  sb_printf(b, "#define CT_K %" PRId64 "\n", p->k);
  sb_printf(b, "#define CT_R %" PRId64 "\n", p->r);
  sb_printf(b, "#define CT_S %" PRId64 "\n", p->s);
  sb_printf(b, "#define CT_P %" PRId64 "\n", P);
  sb_printf(b, "#define CT_Q %" PRId64 "\n", Q);
  sb_printf(b, "#define CT_STRIDE_H %" PRId64 "\n", p->stride_h);
  sb_printf(b, "#define CT_STRIDE_W %" PRId64 "\n", p->stride_w);
  sb_printf(b, "#define CT_PAD_H %" PRId64 "\n", p->pad_h);
  sb_printf(b, "#define CT_PAD_W %" PRId64 "\n", p->pad_w);
  sb_printf(b, "#define CT_DIL_H %" PRId64 "\n", p->dil_h);
  sb_printf(b, "#define CT_DIL_W %" PRId64 "\n", p->dil_w);
  sb_printf(b, "#define CT_BIAS %d\n", p->bias ? 1 : 0);
}

/* The activation's, the layout's, the residual's and the groups' #defines
** (ct_act.cuh, ct_problem.cuh), for shape-generic sources too; the defaults
** (none, NCHW, no residual, one group) are the templates' and add nothing
** to the source. */
static void put_act(strbuf *b, const ct_problem *p) {
  if (p->act != CT_ACT_NONE) sb_printf(b, "#define CT_ACT %d\n", (int)p->act);
  if (p->layout != CT_LAYOUT_NCHW) sb_printf(b, "#define CT_LAYOUT %d\n", (int)p->layout);
  if (p->residual) sb_printf(b, "#define CT_RESIDUAL 1\n");
  if (p->groups > 1) sb_printf(b, "#define CT_GROUPS %" PRId64 "\n", p->groups);
}

/* "n=256 c=3 ... bias=1": the problem in the header comment.  The precision
** is left out on purpose: the same variant has the same source under both. */
static void put_header(strbuf *b, const char *what, const ct_problem *p) {
  sb_printf(b,
            "// convtune: %s for n=%" PRId64 " c=%" PRId64 " h=%" PRId64
            " w=%" PRId64 " k=%" PRId64 " r=%" PRId64 " s=%" PRId64
            " stride=%" PRId64 "x%" PRId64 " pad=%" PRId64 "x%" PRId64
            " dil=%" PRId64 "x%" PRId64 " bias=%d (generated)\n",
            what, p->n, p->c, p->h, p->w, p->k, p->r, p->s, p->stride_h,
            p->stride_w, p->pad_h, p->pad_w, p->dil_h, p->dil_w,
            p->bias ? 1 : 0);
}

/* Appends a template's text.  A line `#include "NAME"` that names an
** embedded file is replaced by that file's text, expanded the same way (a
** template may include another template, which includes the shared
** headers; depth limits the nesting), with #line directives around it so
** that NVRTC's messages point at the right file and line.  Other lines are
** copied. */
static void put_template_at(strbuf *b, const char *file_name, const char *text,
                            int depth) {
  static const char directive[] = "#include \"";
  sb_printf(b, "#line 1 \"%s\"\n", file_name);
  int line = 1;
  for (const char *p = text; *p; line++) {
    const char *eol = strchr(p, '\n');
    size_t len = eol ? (size_t)(eol - p) + 1 : strlen(p);
    const char *header = NULL;
    char name[64];
    if (strncmp(p, directive, sizeof directive - 1) == 0) {
      const char *q = p + sizeof directive - 1;
      const char *qe = memchr(q, '"', len - (sizeof directive - 1));
      if (qe && (size_t)(qe - q) < sizeof name) {
        memcpy(name, q, (size_t)(qe - q));
        name[qe - q] = '\0';
        header = ct_gen_template(name);
      }
    }
    if (header && depth < 3) {
      put_template_at(b, name, header, depth + 1);
      if (header[0] && header[strlen(header) - 1] != '\n') sb_append(b, "\n", 1);
      sb_printf(b, "#line %d \"%s\"\n", line + 1, file_name);
    } else {
      sb_append(b, p, len);
    }
    p += len;
  }
}

static void put_template(strbuf *b, const char *file_name, const char *text) {
  put_template_at(b, file_name, text, 0);
}

static ct_status sb_finish(strbuf *b, char **src) {
  if (b->oom) {
    free(b->data);
    return CT_ERR_NOMEM;
  }
  *src = b->data;
  return CT_OK;
}

/* ct_gen_source: see ct_gen.h.  *src is NULL on failure. */
ct_status ct_gen_source(const ct_problem *p, const ct_gen_variant *v,
                        char **src) {
  if (src) *src = NULL;
  if (p == NULL || v == NULL || src == NULL || v->family == NULL)
    return CT_ERR_INVALID_ARG;
  const ct_gen_family *f = v->family;
  if (!ct_gen_family_launchable(f)) return CT_ERR_UNSUPPORTED;
  const char *text = ct_gen_template(f->template_name);
  if (text == NULL) return CT_ERR_NOT_FOUND;

  char defines[CT_GEN_DEFINES_MAX];
  ct_gen_variant planned;
  ct_status rc = variant_make(p, &v->limits, f, v->values, &planned, defines,
                              sizeof defines);
  if (rc != CT_OK) return rc;

  strbuf b = {0};
  if (f->shape_generic) {
    sb_printf(&b, "// convtune: %s for any problem (generated)\n", planned.name);
  } else {
    put_header(&b, planned.name, p);
    put_problem(&b, p);
  }
  put_act(&b, p);
  for (int i = 0; i < f->n_params; i++)
    sb_printf(&b, "#define %s %d\n", f->params[i].name, v->values[i]);
  sb_append(&b, defines, strlen(defines));
  put_template(&b, f->template_name, text);
  return sb_finish(&b, src);
}

ct_status ct_gen_reference_source(const ct_problem *p, char **src) {
  if (src) *src = NULL;
  if (p == NULL || src == NULL) return CT_ERR_INVALID_ARG;
  const char *text = ct_gen_template("ref_f64.cu");
  if (text == NULL) return CT_ERR_NOT_FOUND;
  strbuf b = {0};
  put_header(&b, "float64 reference ct_ref_f64", p);
  put_problem(&b, p);
  put_act(&b, p);
  put_template(&b, "ref_f64.cu", text);
  return sb_finish(&b, src);
}

/* ---------------------------------------------------------------------- */
/* Embedded templates (ct_templates.c, written by generator/embed.c)       */

extern const size_t ct_gen_embedded_count;
extern const char *const ct_gen_embedded_names[];
extern const char *const ct_gen_embedded_texts[];

ct_status ct_gen_template_source(const char *file_name, char **src) {
  if (src) *src = NULL;
  if (file_name == NULL || src == NULL) return CT_ERR_INVALID_ARG;
  const char *text = ct_gen_template(file_name);
  if (text == NULL) return CT_ERR_NOT_FOUND;
  strbuf b = {0};
  put_template(&b, file_name, text);
  return sb_finish(&b, src);
}

const char *ct_gen_template(const char *file_name) {
  if (file_name == NULL) return NULL;
  for (size_t i = 0; i < ct_gen_embedded_count; i++)
    if (strcmp(ct_gen_embedded_names[i], file_name) == 0)
      return ct_gen_embedded_texts[i];
  return NULL;
}

const char *ct_gen_template_name(size_t i) {
  return i < ct_gen_embedded_count ? ct_gen_embedded_names[i] : NULL;
}

/* ---------------------------------------------------------------------- */
/* Hashing                                                                 */

uint64_t ct_gen_hash(const void *data, size_t len, uint64_t seed) {
  const unsigned char *s = data;
  uint64_t h = seed;
  for (size_t i = 0; i < len; i++) {
    h ^= s[i];
    h *= 0x100000001b3ull;
  }
  return h;
}
