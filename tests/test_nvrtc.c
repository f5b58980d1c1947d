/*
** test_nvrtc.c — NVRTC without a GPU: every variant of the headline
** problem's default search space (both precisions, deduplicated) and the
** float64 reference compile for sm_90a with no register spill, no stack
** frame and no wgmma serialized; every template compiles on its own; the
** default variant and a few more of each odd problem compile (the
** templates' static_asserts check the plan); the points the pruning heuristics drop are valid and compile
** too (a few of each family); a broken source fails with a log.  Compiles run on a small thread
** pool, as the tuner's do.
*/
#include "compile_jobs.h"
#include "test.h"

#define ARCH "sm_90a"

/* 1 when ptxas reports that it serialized a kernel's wgmma (its C75xx
** "Potential Performance Loss" notes: an accumulator touched by another
** instruction while a wgmma may be in flight, too few registers for the
** pipeline, ...), which costs the tensor cores their overlap. */
static int wgmma_serialized(const char *log) {
  return log != NULL && strstr(log, "wgmma.mma_async instructions are serialized") != NULL;
}

/* Prints one line per job; returns the number that failed to compile,
** spilled, used a stack frame or had their wgmma serialized. */
static int report(job *jobs, size_t n) {
  int failures = 0;
  for (size_t i = 0; i < n; i++) {
    job *j = &jobs[i];
    int ok = j->rc == CT_OK && j->out.cubin != NULL && j->out.cubin_size > 0 &&
             j->out.regs > 0 && j->out.spill_bytes == 0 && j->out.stack_bytes == 0 &&
             !wgmma_serialized(j->out.log);
    fprintf(stderr, "  %-4s %-52s regs %3d  spill %3d  stack %3d  smem %5d  %6.0f ms\n",
            ok ? "ok" : "FAIL", j->name, j->out.regs, j->out.spill_bytes,
            j->out.stack_bytes, j->out.smem_static, j->out.compile_ms);
    if (!ok) {
      failures++;
      fprintf(stderr, "%s\n", j->out.log ? j->out.log : "(no log)");
    }
  }
  return failures;
}

/* Compiles and reports n jobs, frees them; returns the failures. */
static int compile_report_free(job *jobs, size_t n) {
  compile_all(jobs, n, ARCH);
  int failures = report(jobs, n);
  jobs_free(jobs, n);
  return failures;
}

/* Parses spec into *p and the report's tag for it (its first 60
** characters); 0 on success. */
static int parse_spec(const char *spec, ct_problem *p, char *tag, size_t len) {
  char err[256];
  if (ct_problem_parse(spec, p, err, sizeof err) != CT_OK) {
    fprintf(stderr, "%s: %s\n", spec, err);
    return -1;
  }
  snprintf(tag, len, "%.60s ", spec);
  return 0;
}

/* ---------------------------------------------------------------------- */

static void test_headline_search_space(void) {
  ct_gen_limits lim;
  ASSERT_EQ_INT(ct_gen_limits_for_arch(ARCH, &lim), CT_OK);
  ct_problem p;
  ct_problem_default(&p);

  ct_gen_variant *all = NULL;
  size_t n_all = 0;
  for (int prec = CT_PREC_TF32; prec <= CT_PREC_FP32; prec++) {
    p.precision = (ct_precision)prec;
    ct_gen_variant *v = NULL;
    size_t n = 0;
    ASSERT_EQ_INT(ct_gen_enumerate(&p, &lim, &v, &n), CT_OK);
    ct_gen_variant *grown = realloc(all, (n_all + n) * sizeof *grown);
    if (grown == NULL) free(v);
    ASSERT_TRUE(grown != NULL);
    all = grown;
    for (size_t i = 0; i < n; i++) {
      int dup = 0;
      for (size_t j = 0; j < n_all && !dup; j++) dup = strcmp(all[j].name, v[i].name) == 0;
      if (!dup) all[n_all++] = v[i];
    }
    free(v);
  }
  ct_problem_default(&p);

  job *jobs = calloc(n_all + 1, sizeof *jobs);
  ASSERT_TRUE(jobs != NULL);
  size_t n = 0;
  int ok = 1;
  for (size_t i = 0; i < n_all && ok; i++) ok = add_variant_job(jobs, &n, &p, &all[i], "") == 0;
  free(all);
  ok = ok && add_reference_job(jobs, &n, &p, "") == 0;
  if (!ok) jobs_free(jobs, n);
  ASSERT_TRUE(ok);
  fprintf(stderr, "  headline problem, %zu variants + reference, %s:\n", n - 1, ARCH);
  int failures = compile_report_free(jobs, n);
  ASSERT_EQ_INT(failures, 0);
}

static void test_templates_alone(void) {
  size_t count = 0;
  while (ct_gen_template_name(count) != NULL) count++;
  ASSERT_TRUE(count >= 2);
  job *jobs = calloc(count, sizeof *jobs);
  ASSERT_TRUE(jobs != NULL);
  size_t n = 0, want = 0;
  for (size_t i = 0; i < count; i++) {
    const char *name = ct_gen_template_name(i);
    size_t nl = strlen(name);
    if (nl > 4 && strcmp(name + nl - 4, ".cuh") == 0) continue; /* headers */
    want++;
    snprintf(jobs[n].name, sizeof jobs[n].name, "template %s (defaults)", name);
    if (ct_gen_template_source(name, &jobs[n].src) == CT_OK) n++;
  }
  int all_there = want >= 2 && n == want;
  int failures = compile_report_free(jobs, n);
  ASSERT_TRUE(all_there);
  ASSERT_EQ_INT(failures, 0);
}

/* Odd problems: the default variant, the last and a middle variant of each,
** and the reference.  Exercises the templates' other paths (chunked
** weights, weights from global memory, no register segment, 64-bit
** offsets) and their static_asserts against the plan. */
static void test_odd_problems(void) {
  static const char *const specs[] = {
    "n=1,c=1,h=1,w=1,k=1,r=1,s=1,bias=0",
    "n=2,c=3,h=17,w=19,k=5,r=3,s=5,stride=2,pad=1x2",
    "n=1,c=2,h=9,w=13,k=7,r=3,s=3,dil=2,pad=2,bias=0",
    "n=3,c=1,h=23,w=21,k=9,r=2,s=3,stride=5,pad=0",
    "n=1,c=100,h=6,w=7,k=20,r=3,s=3,pad=1",
    "n=1,c=2,h=3,w=420,k=17,r=2,s=400,pad=0x3",
    "n=1,c=2,h=8,w=80,k=6,r=2,s=30,dil=1x2,pad=1",
    "n=7,c=64,h=56,w=56,k=64,r=3,s=3,pad=1",
    "n=1,c=3,h=224,w=224,k=768,r=16,s=16,stride=16",
    /* 64-bit offsets: y of 2^31 elements (KernelBench 87), x of 3.2e9 in
    ** one image, w of 2.2e9 */
    "n=16,c=64,h=1024,w=1024,k=128,r=1,s=1,bias=0",
    "n=1,c=3,h=32768,w=32768,k=2,r=3,s=3,pad=1",
    "n=1,c=2048,h=24,w=24,k=2048,r=23,s=23,bias=0",
    /* Q and K at INT32_MAX: the rounded-up column groups and channel
    ** tiles (Q + TP - 1, K + TK - 1) stay in int */
    "n=1,c=1,h=1,w=2147483647,k=1,r=1,s=1",
    "n=1,c=1,h=1,w=1,k=2147483647,r=1,s=1",
  };
  const size_t n_specs = sizeof specs / sizeof specs[0];
  ct_gen_limits lim;
  ASSERT_EQ_INT(ct_gen_limits_for_arch(ARCH, &lim), CT_OK);
  job *jobs = calloc(4 * n_specs, sizeof *jobs);
  ASSERT_TRUE(jobs != NULL);
  size_t n = 0;
  int ok = 1;
  for (size_t i = 0; i < n_specs && ok; i++) {
    ct_problem p;
    char tag[96];
    ok = parse_spec(specs[i], &p, tag, sizeof tag) == 0;
    if (!ok) break;
    ct_gen_variant d, *v = NULL;
    size_t nv = 0;
    ok = ct_gen_default_variant(&p, &lim, &d) == CT_OK &&
         ct_gen_enumerate(&p, &lim, &v, &nv) == CT_OK && nv >= 1;
    ok = ok && add_variant_job(jobs, &n, &p, &d, tag) == 0;
    ok = ok && add_variant_job(jobs, &n, &p, &v[nv / 2], tag) == 0;
    ok = ok && add_variant_job(jobs, &n, &p, &v[nv - 1], tag) == 0;
    free(v);
    ok = ok && add_reference_job(jobs, &n, &p, tag) == 0;
  }
  if (!ok) jobs_free(jobs, n);
  ASSERT_TRUE(ok);
  int failures = compile_report_free(jobs, n);
  ASSERT_EQ_INT(failures, 0);
}

/* Every wg3 point that splits the k-steps across a cluster (KS=2) of
** problems where the two halves touch different channel ranges, the
** k-steps do not halve evenly, or K takes several CTAs along N: the
** generator's band, shared-memory and grid arithmetic against the
** template's static_asserts. */
static void test_cluster_split_points(void) {
  static const char *const specs[] = {
    "n=1,c=5,h=37,w=139,k=40,r=7,s=6,stride=3x4,pad=1x3,dil=2x1,prec=fp32",
    "n=2,c=3,h=67,w=59,k=96,r=11,s=11,stride=4,pad=2,prec=fp32",
    "n=2,c=7,h=30,w=250,k=200,r=3,s=3,stride=1x4,pad=1,prec=fp32",
  };
  const size_t n_specs = sizeof specs / sizeof specs[0];
  ct_gen_limits lim;
  ASSERT_EQ_INT(ct_gen_limits_for_arch(ARCH, &lim), CT_OK);
  size_t cap = 64, n = 0;
  job *jobs = calloc(cap, sizeof *jobs);
  ASSERT_TRUE(jobs != NULL);
  int ok = 1;
  for (size_t i = 0; i < n_specs && ok; i++) {
    ct_problem p;
    char tag[96];
    ok = parse_spec(specs[i], &p, tag, sizeof tag) == 0;
    if (!ok) break;
    ct_gen_variant *v = NULL;
    size_t nv = 0, found = 0;
    ok = ct_gen_enumerate(&p, &lim, &v, &nv) == CT_OK;
    for (size_t k = 0; ok && k < nv; k++) {
      if (strncmp(v[k].name, "wg3:", 4) != 0 || strstr(v[k].name, ",KS=2") == NULL) continue;
      ok = n < cap && add_variant_job(jobs, &n, &p, &v[k], tag) == 0;
      found++;
    }
    free(v);
    if (ok && found == 0) {
      fprintf(stderr, "%s: no wg3 point with KS=2\n", specs[i]);
      ok = 0;
    }
  }
  if (!ok) jobs_free(jobs, n);
  ASSERT_TRUE(ok);
  int failures = compile_report_free(jobs, n);
  ASSERT_EQ_INT(failures, 0);
}

/* The pruning heuristics drop only points that are correct: the variants
** ct_gen_enumerate offers are, in order, a part of ct_gen_enumerate_all's
** (every valid point), and the first and the last point each family's
** heuristic drops on the first problem where it drops any compile with
** no spill.  The problems give every family
** pruned points: K = 64 (wgr idles a consumer, wide BN waste channels),
** K = 96 at fp32, K = 3 (direct's wide TK), a 1x1 (pw's and pw3's BK), a
** depthwise 3x3 on a 9x9 plane (dw's wide tiles) and on 5-wide NHWC rows
** (dwc's wide tiles and channel blocks). */
static void test_pruned_points(void) {
  static const char *const specs[] = {
    "n=2,c=3,h=67,w=59,k=64,r=11,s=11,stride=4,pad=2,prec=tf32",
    "n=2,c=3,h=67,w=59,k=96,r=11,s=11,stride=4,pad=2,prec=fp32",
    "n=1,c=2,h=9,w=9,k=3,r=3,s=3,prec=tf32",
    "n=2,c=64,h=28,w=28,k=96,r=1,s=1,prec=tf32",
    "n=2,c=64,h=28,w=28,k=96,r=1,s=1,prec=fp32",
    "n=2,c=8,h=9,w=9,k=8,r=3,s=3,pad=1,groups=8,prec=tf32",
    "n=2,c=8,h=9,w=5,k=8,r=3,s=3,pad=1,groups=8,layout=nhwc,prec=tf32",
  };
  const size_t n_specs = sizeof specs / sizeof specs[0];
  ct_gen_limits lim;
  ASSERT_EQ_INT(ct_gen_limits_for_arch(ARCH, &lim), CT_OK);
  size_t n_fam = 0;
  while (ct_gen_families[n_fam] != NULL) n_fam++;
  size_t cap = 2 * n_fam * n_specs, n = 0;
  job *jobs = calloc(cap, sizeof *jobs);
  ASSERT_TRUE(jobs != NULL);
  int ok = 1;
  size_t families_pruned = 0;
  for (size_t fi = 0; fi < n_fam && ok; fi++) {
    const ct_gen_family *f = ct_gen_families[fi];
    int pruned_somewhere = 0;
    for (size_t i = 0; i < n_specs && ok && !pruned_somewhere; i++) {
      ct_problem p;
      char tag[96];
      ok = parse_spec(specs[i], &p, tag, sizeof tag) == 0;
      if (!ok) break;
      ct_gen_variant *all = NULL, *kept = NULL;
      size_t n_all = 0, n_kept = 0, k = 0;
      ok = ct_gen_enumerate_all(&p, &lim, &all, &n_all) == CT_OK &&
           ct_gen_enumerate(&p, &lim, &kept, &n_kept) == CT_OK;
      const ct_gen_variant *first = NULL, *last = NULL;
      for (size_t a = 0; ok && a < n_all; a++) {
        if (k < n_kept && memcmp(&all[a], &kept[k], sizeof all[a]) == 0) {
          k++;
        } else if (all[a].family == f) {
          if (first == NULL) first = &all[a];
          last = &all[a];
        }
      }
      if (ok && k != n_kept) {
        fprintf(stderr, "%s: an offered variant is not among the valid ones\n", specs[i]);
        ok = 0;
      }
      if (ok && first != NULL) {
        pruned_somewhere = 1;
        ok = add_variant_job(jobs, &n, &p, first, tag) == 0 &&
             (last == first || add_variant_job(jobs, &n, &p, last, tag) == 0);
      }
      free(all);
      free(kept);
    }
    families_pruned += pruned_somewhere;
  }
  if (!ok) jobs_free(jobs, n);
  ASSERT_TRUE(ok);
  fprintf(stderr, "  %zu pruned points of %zu families, %s:\n", n, families_pruned, ARCH);
  int failures = compile_report_free(jobs, n);
  ASSERT_EQ_INT(families_pruned, n_fam);
  ASSERT_EQ_INT(failures, 0);
}

static void test_broken_source(void) {
  ct_rt_compiled out;
  ct_status rc = ct_rt_compile("extern \"C\" __global__ void k(float *y) { y[0] = nope; }\n",
                               "broken.cu", ARCH, &out);
  int ok = rc == CT_ERR_NVRTC && out.nvrtc_result != 0 && out.log != NULL &&
           strlen(out.log) > 0 && strstr(out.log, "nope") != NULL && out.cubin == NULL &&
           out.cubin_size == 0;
  ct_rt_compiled_clear(&out);
  ASSERT_TRUE(ok);
  /* A static_assert failing (a plan that disagrees with the template). */
  char *t = NULL;
  ASSERT_EQ_INT(ct_gen_template_source("conv_direct.cu", &t), CT_OK);
  size_t len = strlen(t) + 64;
  char *src = malloc(len);
  ASSERT_TRUE(src != NULL);
  snprintf(src, len, "#define CT_PLAN_BLOCK_X 1\n%s", t);
  free(t);
  rc = ct_rt_compile(src, "mismatch.cu", ARCH, &out);
  free(src);
  ok = rc == CT_ERR_NVRTC && out.log != NULL && strstr(out.log, "block size") != NULL;
  ct_rt_compiled_clear(&out);
  ASSERT_TRUE(ok);
  /* Bad arguments; clearing twice and NULL are harmless. */
  ASSERT_EQ_INT(ct_rt_compile(NULL, "x.cu", ARCH, &out), CT_ERR_INVALID_ARG);
  ASSERT_EQ_INT(ct_rt_compile("", "x.cu", "compute_90", &out), CT_ERR_INVALID_ARG);
  ASSERT_EQ_INT(ct_rt_compile("", "x.cu", "sm_90 -G", &out), CT_ERR_INVALID_ARG);
  ct_rt_compiled_clear(&out);
  ct_rt_compiled_clear(&out);
  ct_rt_compiled_clear(NULL);
}

static void test_options_and_version(void) {
  ASSERT_EQ_STR(ct_rt_compile_options("sm_90a"),
                "--gpu-architecture=sm_90a -std=c++17 -default-device --ptxas-options=-v");
  ASSERT_TRUE(ct_rt_compile_options("sm_90a; rm") == NULL);
  ASSERT_TRUE(ct_rt_compile_options(NULL) == NULL);
  ASSERT_TRUE(strstr(ct_rt_compile_options("sm_80"), "use_fast_math") == NULL);
  char v[16];
  ASSERT_EQ_INT(ct_rt_nvrtc_version(v, sizeof v), CT_OK);
  int major = 0, minor = -1;
  ASSERT_EQ_INT(sscanf(v, "%d.%d", &major, &minor), 2);
  ASSERT_TRUE(major >= 11 && minor >= 0);
  fprintf(stderr, "  NVRTC %s\n", v);
  char tiny[2];
  ASSERT_EQ_INT(ct_rt_nvrtc_version(tiny, sizeof tiny), CT_ERR_INVALID_ARG);
}

/* For each spec: the first enumerated variant of each family that fits
** it, and the reference, each source carrying `define`; they compile, and
** together they reach `families` families, each of which meets every spec
** it was enumerated for (ct_gen_family_declines). */
static void family_firsts(const char *const *specs, size_t n_specs, const char *define,
                          size_t families) {
  enum { MAX_FAMILIES = 32 };
  ct_gen_limits lim;
  ASSERT_EQ_INT(ct_gen_limits_for_arch(ARCH, &lim), CT_OK);
  job *jobs = calloc(n_specs * (MAX_FAMILIES + 1), sizeof *jobs);
  ASSERT_TRUE(jobs != NULL);
  const ct_gen_family *reached[MAX_FAMILIES];
  size_t n = 0, n_reached = 0;
  int ok = 1;
  for (size_t i = 0; i < n_specs && ok; i++) {
    ct_problem p;
    char tag[96];
    ok = parse_spec(specs[i], &p, tag, sizeof tag) == 0;
    ct_gen_variant *v = NULL;
    size_t nv = 0;
    ok = ok && ct_gen_enumerate(&p, &lim, &v, &nv) == CT_OK;
    const ct_gen_family *seen[MAX_FAMILIES];
    size_t n_seen = 0;
    for (size_t j = 0; j < nv && ok; j++) {
      ok = ct_gen_family_declines(v[j].family, &p) == NULL;
      size_t f = 0;
      while (f < n_seen && seen[f] != v[j].family) f++;
      if (f < n_seen) continue;
      ok = ok && n_seen < MAX_FAMILIES && add_variant_job(jobs, &n, &p, &v[j], tag) == 0 &&
           strstr(jobs[n - 1].src, define) != NULL;
      if (!ok) break;
      seen[n_seen++] = v[j].family;
      size_t r = 0;
      while (r < n_reached && reached[r] != v[j].family) r++;
      if (r == n_reached && ok) {
        ok = n_reached < MAX_FAMILIES;
        reached[n_reached++] = v[j].family;
      }
    }
    free(v);
    ok = ok && add_reference_job(jobs, &n, &p, tag) == 0 &&
         strstr(jobs[n - 1].src, define) != NULL;
  }
  if (!ok) jobs_free(jobs, n);
  ASSERT_TRUE(ok);
  if (n_reached != families) jobs_free(jobs, n);
  ASSERT_EQ_INT((int)n_reached, (int)families);
  int failures = compile_report_free(jobs, n);
  ASSERT_EQ_INT(failures, 0);
}

/* act=relu (the fused ReLU, ct_act.cuh) in every launchable family, at
** both precisions: for each problem, the first enumerated variant of each
** family that fits it, and the reference.  Every source carries the
** activation's define, and together the problems reach every family.
** Then the same with act=relu6 (the fused ReLU6, CT_ACT 2). */
static void test_relu_every_family(void) {
  static const char *const specs[] = {
    "act=relu,n=1,c=3,h=224,w=224,k=96,r=11,s=11,stride=4,pad=2,prec=tf32",
    "act=relu,n=1,c=3,h=224,w=224,k=96,r=11,s=11,stride=4,pad=2,prec=fp32",
    "act=relu,n=2,c=64,h=28,w=28,k=64,r=3,s=3,pad=1,bias=0,prec=tf32",
    "act=relu,n=2,c=64,h=24,w=12,k=64,r=3,s=3,stride=2x1,pad=1,prec=tf32",
    "act=relu,n=2,c=64,h=24,w=40,k=64,r=3,s=3,stride=2x1,pad=1,prec=tf32",
    "act=relu,n=2,c=64,h=24,w=12,k=64,r=3,s=3,stride=2x1,pad=1,prec=fp32",
    "act=relu,n=2,c=64,h=28,w=28,k=64,r=3,s=3,pad=1,bias=0,prec=fp32",
    "act=relu,n=2,c=3,h=64,w=48,k=40,r=16,s=16,stride=16,prec=tf32",
    "act=relu,n=2,c=3,h=64,w=48,k=40,r=16,s=16,stride=16,prec=fp32",
    "act=relu,n=2,c=64,h=28,w=28,k=96,r=1,s=1,prec=tf32",
    "act=relu,n=2,c=64,h=28,w=28,k=96,r=1,s=1,prec=fp32",
    "act=relu,n=16,c=64,h=56,w=56,k=64,r=1,s=1,prec=tf32", /* pwq */
    "act=relu,n=8,c=512,h=7,w=7,k=256,r=1,s=1,prec=tf32",  /* pw's runs */
    "act=relu,n=8,c=512,h=7,w=7,k=256,r=1,s=1,prec=fp32",
    "act=relu,n=2,c=16,h=20,w=20,k=16,r=3,s=3,pad=1,groups=16,prec=tf32", /* dw */
    "act=relu,n=2,c=16,h=20,w=20,k=16,r=3,s=3,pad=1,groups=16,layout=nhwc,prec=fp32", /* dwc */
  };
  enum { N_SPECS = sizeof specs / sizeof specs[0] };
  size_t launchable = 0;
  for (size_t f = 0; ct_gen_families[f] != NULL; f++)
    launchable += ct_gen_family_launchable(ct_gen_families[f]) != 0;
  family_firsts(specs, N_SPECS, "\n#define CT_ACT 1\n", launchable);
  static char relu6[N_SPECS][128];
  const char *relu6_specs[N_SPECS];
  for (size_t i = 0; i < N_SPECS; i++) {
    ASSERT_TRUE(strncmp(specs[i], "act=relu,", 9) == 0);
    snprintf(relu6[i], sizeof relu6[i], "act=relu6,%s", specs[i] + 9);
    relu6_specs[i] = relu6[i];
  }
  family_firsts(relu6_specs, N_SPECS, "\n#define CT_ACT 2\n", launchable);
}

/* layout=nhwc: only families that run it are offered (direct, wg and
** wg3, and the general ones: gm, gmk, gmp and their 3xTF32 forms; pw
** reads NCHW),
** their sources and the reference's carry the layout's define, and they
** compile: the first, middle and last variant of each problem, and the
** first of each family, at both precisions. */
static void test_nhwc(void) {
  static const char *const specs[] = {
    "layout=nhwc,n=2,c=5,h=17,w=15,k=16,r=5,s=3,stride=2x1,pad=2x1,dil=1x2,prec=tf32",
    "layout=nhwc,act=relu,n=1,c=64,h=14,w=14,k=32,r=3,s=3,pad=1,bias=0,prec=fp32",
    "layout=nhwc,n=1,c=2,h=3,w=420,k=17,r=2,s=400,pad=0x3,prec=fp32",
  };
  const size_t n_specs = sizeof specs / sizeof specs[0];
  ct_gen_limits lim;
  ASSERT_EQ_INT(ct_gen_limits_for_arch(ARCH, &lim), CT_OK);
  job *jobs = calloc(9 * n_specs, sizeof *jobs);
  ASSERT_TRUE(jobs != NULL);
  size_t n = 0;
  int ok = 1;
  for (size_t i = 0; i < n_specs && ok; i++) {
    ct_problem p;
    char tag[96];
    ok = parse_spec(specs[i], &p, tag, sizeof tag) == 0 && p.layout == CT_LAYOUT_NHWC;
    ct_gen_variant *v = NULL;
    size_t nv = 0;
    ok = ok && ct_gen_enumerate(&p, &lim, &v, &nv) == CT_OK && nv >= 1;
    size_t pick[8], n_pick = 0;
    pick[n_pick++] = nv / 2;
    pick[n_pick++] = nv - 1;
    for (size_t j = 0; j < nv && ok; j++) {
      ok = v[j].family->nhwc;
      if (j == 0 || v[j].family != v[j - 1].family) {
        ok = ok && n_pick < 8;
        if (ok) pick[n_pick++] = j;
      }
    }
    for (size_t j = 0; j < n_pick && ok; j++)
      ok = add_variant_job(jobs, &n, &p, &v[pick[j]], tag) == 0 &&
           strstr(jobs[n - 1].src, "\n#define CT_LAYOUT 1\n") != NULL;
    free(v);
    ok = ok && add_reference_job(jobs, &n, &p, tag) == 0 &&
         strstr(jobs[n - 1].src, "\n#define CT_LAYOUT 1\n") != NULL;
  }
  if (!ok) jobs_free(jobs, n);
  ASSERT_TRUE(ok);
  int failures = compile_report_free(jobs, n);
  ASSERT_EQ_INT(failures, 0);
  /* A family that does not run NHWC cannot be named for it (the same
  ** variant of the NCHW problem can). */
  ct_problem p;
  ct_gen_variant v;
  const char *tc = "tc:TP=4,BN=64,WARPS=4,WN=2,STAGES=2,PERSIST=1";
  ASSERT_EQ_INT(ct_problem_parse("n=1,c=64,h=14,w=14,k=64,r=3,s=3,pad=1", &p, NULL, 0), CT_OK);
  ASSERT_EQ_INT(ct_gen_variant_from_name(&p, &lim, tc, &v), CT_OK);
  p.layout = CT_LAYOUT_NHWC;
  ASSERT_EQ_INT(ct_gen_variant_from_name(&p, &lim, tc, &v), CT_ERR_UNSUPPORTED);
  ASSERT_EQ_INT(ct_gen_default_variant(&p, &lim, &v), CT_OK);
  ASSERT_TRUE(v.family->nhwc);
}

/* residual=1 (y read, then written: ct_act.cuh's ct_out): the first
** variant of each family every problem offers, and the reference, carry
** the residual's define and compile; together the problems reach every
** launchable family that takes a residual (direct, dw, dwc and the general ones but
** gme, gme3, pwe and pwqe, whose staged epilogue takes none), and no other
** is offered.  Naming one that declines is unsupported, with its reason. */
static void test_residual(void) {
  static const char *const specs[] = {
    "residual=1,act=relu,n=2,c=64,h=28,w=28,k=64,r=3,s=3,pad=1,bias=0,prec=tf32",
    "residual=1,n=2,c=64,h=24,w=12,k=64,r=3,s=3,stride=2x1,pad=1,prec=tf32",
    "residual=1,act=relu,n=2,c=64,h=28,w=28,k=64,r=3,s=3,pad=1,prec=fp32",
    "residual=1,n=2,c=64,h=24,w=12,k=64,r=3,s=3,stride=2x1,pad=1,prec=fp32",
    "residual=1,n=2,c=3,h=64,w=48,k=40,r=16,s=16,stride=16,prec=tf32",
    "residual=1,n=2,c=3,h=64,w=48,k=40,r=16,s=16,stride=16,prec=fp32",
    "residual=1,n=2,c=64,h=28,w=28,k=96,r=1,s=1,prec=tf32",
    "residual=1,act=relu,n=2,c=64,h=28,w=28,k=96,r=1,s=1,prec=fp32",
    "residual=1,n=16,c=64,h=56,w=56,k=64,r=1,s=1,prec=tf32", /* pwq */
    "residual=1,n=8,c=512,h=7,w=7,k=256,r=1,s=1,prec=fp32",  /* pw's runs */
    "residual=1,layout=nhwc,act=relu,n=1,c=64,h=14,w=14,k=32,r=3,s=3,pad=1,prec=tf32",
    "residual=1,n=2,c=16,h=20,w=20,k=32,r=3,s=3,pad=1,groups=16,prec=fp32", /* dw */
    "residual=1,n=2,c=16,h=20,w=20,k=32,r=3,s=3,pad=1,groups=16,layout=nhwc,prec=tf32", /* dwc */
  };
  size_t taking = 0;
  for (size_t f = 0; ct_gen_families[f] != NULL; f++)
    taking += ct_gen_family_launchable(ct_gen_families[f]) && ct_gen_families[f]->residual;
  family_firsts(specs, sizeof specs / sizeof specs[0], "\n#define CT_RESIDUAL 1\n", taking);
  ct_gen_limits lim;
  ASSERT_EQ_INT(ct_gen_limits_for_arch(ARCH, &lim), CT_OK);
  ct_problem p;
  ct_gen_variant v;
  const char *gme = "gme:BM=128,BN=128,BK=32,STAGES=4";
  ASSERT_EQ_INT(ct_problem_parse("n=2,c=64,h=28,w=28,k=96,r=3,s=3,pad=1", &p, NULL, 0), CT_OK);
  ASSERT_EQ_INT(ct_gen_variant_from_name(&p, &lim, gme, &v), CT_OK);
  ASSERT_TRUE(ct_gen_family_declines(v.family, &p) == NULL);
  p.residual = 1;
  ASSERT_EQ_INT(ct_gen_variant_from_name(&p, &lim, gme, &v), CT_ERR_UNSUPPORTED);
  ASSERT_EQ_STR(ct_gen_family_declines(ct_gen_family_find("gme"), &p), "no residual");
  ASSERT_EQ_INT(ct_gen_default_variant(&p, &lim, &v), CT_OK);
  ASSERT_TRUE(v.family->residual);
}

/* groups > 1: only direct is offered, dw (NCHW) or dwc (NHWC) where the
** problem is depthwise, and tc or tc3 (by precision) where it is NCHW with
** at least 4 output channels a group; each of their variants (direct's
** whose channel tile lies in one group) and the reference carry the
** groups' define and compile, in both layouts, depthwise and with a
** channel multiplier; a family that declines cannot be named.  Every
** other template stops at its #error when given CT_GROUPS, so that no
** source of it can mix the groups' channels. */
static void test_groups(void) {
  static const char *const specs[] = {
    "groups=2,n=2,c=64,h=28,w=28,k=96,r=3,s=3,pad=1,prec=tf32",
    "groups=32,act=relu,n=2,c=32,h=56,w=56,k=32,r=3,s=3,stride=2,pad=1,bias=0,prec=fp32",
    "groups=16,layout=nhwc,n=1,c=16,h=14,w=14,k=48,r=5,s=5,pad=2,prec=tf32",
    "groups=4,layout=nhwc,residual=1,n=2,c=64,h=9,w=13,k=64,r=1,s=3,dil=1x2,prec=fp32",
    "groups=3,n=1,c=3,h=8,w=6000,k=3,r=1,s=1500,prec=tf32", /* w from global memory */
    "groups=8,act=relu6,n=2,c=64,h=13,w=31,k=32,r=3,s=3,stride=2,pad=1,prec=fp32",
  };
  static const int depthwise[] = {0, 1, 1, 0, 1, 0}; /* dw's (NCHW) or dwc's (NHWC) */
  static const int tensor_cores[] = {1, 0, 0, 0, 0, 1}; /* tc's or tc3's */
  ct_gen_limits lim;
  ASSERT_EQ_INT(ct_gen_limits_for_arch(ARCH, &lim), CT_OK);
  for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
    ct_problem p;
    char tag[96];
    ASSERT_EQ_INT(parse_spec(specs[i], &p, tag, sizeof tag), 0);
    ct_gen_variant *v = NULL;
    size_t nv = 0;
    ASSERT_EQ_INT(ct_gen_enumerate(&p, &lim, &v, &nv), CT_OK);
    job *jobs = calloc(nv + 1, sizeof *jobs);
    size_t n = 0;
    const char *dw_family = p.layout == CT_LAYOUT_NHWC ? "dwc" : "dw";
    const char *tc_family = p.precision == CT_PREC_FP32 ? "tc3" : "tc";
    int ok = jobs != NULL && nv >= 1, dw = 0, tc = 0;
    for (size_t j = 0; j < nv && ok; j++) {
      const int is_dw = strcmp(v[j].family->name, dw_family) == 0;
      const int is_tc = strcmp(v[j].family->name, tc_family) == 0;
      dw += is_dw;
      tc += is_tc;
      ok = (strcmp(v[j].family->name, "direct") == 0 || is_dw || is_tc) &&
           add_variant_job(jobs, &n, &p, &v[j], tag) == 0 &&
           strstr(jobs[n - 1].src, "\n#define CT_GROUPS ") != NULL;
    }
    free(v);
    ok = ok && (dw > 0) == depthwise[i] && (tc > 0) == tensor_cores[i];
    ok = ok && add_reference_job(jobs, &n, &p, tag) == 0 &&
         strstr(jobs[n - 1].src, "\n#define CT_GROUPS ") != NULL;
    int failures = jobs != NULL ? compile_report_free(jobs, n) : 0;
    ASSERT_TRUE(ok);
    ASSERT_EQ_INT(failures, 0);
  }
  /* gme runs the ungrouped problem, declines the grouped one */
  ct_problem p;
  ct_gen_variant v;
  const char *gme = "gme:BM=128,BN=128,BK=32,STAGES=4";
  ASSERT_EQ_INT(ct_problem_parse("n=2,c=64,h=28,w=28,k=96,r=3,s=3,pad=1", &p, NULL, 0), CT_OK);
  ASSERT_EQ_INT(ct_gen_variant_from_name(&p, &lim, gme, &v), CT_OK);
  p.groups = 2;
  ASSERT_EQ_INT(ct_gen_variant_from_name(&p, &lim, gme, &v), CT_ERR_UNSUPPORTED);
  ASSERT_EQ_STR(ct_gen_family_declines(ct_gen_family_find("gme"), &p), "no groups");
  ASSERT_EQ_INT(ct_gen_variant_from_name(&p, &lim, "direct:THREADS=128,TP=4,TK=16", &v),
                CT_OK);
  /* K/G = 48 is no multiple of 32: no such tile */
  ASSERT_TRUE(ct_gen_variant_from_name(&p, &lim, "direct:THREADS=128,TP=4,TK=32", &v) != CT_OK);
  p.groups = 32; /* K/G = 3: TK = 1 alone */
  ASSERT_EQ_INT(ct_gen_default_variant(&p, &lim, &v), CT_OK);
  ASSERT_EQ_STR(v.name, "direct:THREADS=128,TP=4,TK=1");
  static const char *const ungrouped[] = {"conv_gm.cu",  "conv_s2d.cu", "conv_wg.cu",
                                          "conv_wgr.cu", "conv_wgs.cu", "test_faults.cu"};
  for (size_t i = 0; i < sizeof ungrouped / sizeof ungrouped[0]; i++) {
    char *t = NULL, *src;
    ASSERT_EQ_INT(ct_gen_template_source(ungrouped[i], &t), CT_OK);
    size_t len = strlen(t) + 64;
    src = malloc(len);
    if (src != NULL) snprintf(src, len, "#define CT_GROUPS 2\n%s", t);
    free(t);
    ASSERT_TRUE(src != NULL);
    ct_rt_compiled out;
    ct_status rc = ct_rt_compile(src, ungrouped[i], ARCH, &out);
    free(src);
    int stopped = rc == CT_ERR_NVRTC && out.log != NULL &&
                  strstr(out.log, "runs ungrouped problems only") != NULL;
    if (!stopped) fprintf(stderr, "  %s with CT_GROUPS 2: not stopped\n", ungrouped[i]);
    ct_rt_compiled_clear(&out);
    ASSERT_TRUE(stopped);
  }
}

int main(void) {
  RUN_TEST(test_options_and_version);
  RUN_TEST(test_broken_source);
  RUN_TEST(test_templates_alone);
  RUN_TEST(test_headline_search_space);
  RUN_TEST(test_odd_problems);
  RUN_TEST(test_cluster_split_points);
  RUN_TEST(test_pruned_points);
  RUN_TEST(test_relu_every_family);
  RUN_TEST(test_nhwc);
  RUN_TEST(test_residual);
  RUN_TEST(test_groups);
  TEST_EXIT();
}
