/*
** test_generator.c — the generator without a GPU: enumeration, names and
** their round trip, the hard-valid set apart from the pruned one, the
** refusal of a family taking tensor maps, determinism of the source text,
** launch plans within the device's limits, default variants for odd
** problems, name errors, device limits by architecture, embedded
** templates, hashing.
*/
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convtune.h"
#include "ct_gen.h"
#include "ct_gm.cuh"
#include "test.h"
#include "verify.h"

/* Odd problems: every one must have a default variant (both precisions). */
static const char *const odd_specs[] = {
  "n=1,c=1,h=1,w=1,k=1,r=1,s=1",
  "n=1,c=1,h=5,w=5,k=1,r=3,s=3",
  "n=2,c=3,h=17,w=19,k=5,r=3,s=5,stride=2,pad=1x2",
  "n=1,c=2,h=9,w=13,k=7,r=3,s=3,dil=2,pad=2,bias=0",
  "n=3,c=1,h=23,w=21,k=9,r=2,s=3,stride=5,pad=0",
  "n=2,c=5,h=7,w=6,k=17,r=1,s=1",
  "n=1,c=100,h=6,w=7,k=20,r=3,s=3,pad=1",
  "n=1,c=2,h=3,w=420,k=17,r=2,s=400,pad=0x3",
  "n=2,c=2,h=11,w=12,k=3,r=3,s=2,stride=1x3,dil=3x1,pad=0x4",
  "n=1,c=2,h=4,w=4,k=5,r=3,s=3,pad=5,stride=2",
  "n=7,c=64,h=56,w=56,k=64,r=3,s=3,pad=1",
  "n=1,c=1,h=1,w=100000,k=3,r=1,s=20000",
  "n=1,c=3,h=224,w=224,k=768,r=16,s=16,stride=16",
};
#define N_ODD (sizeof odd_specs / sizeof odd_specs[0])

static ct_gen_limits h200(void) {
  ct_gen_limits lim;
  memset(&lim, 0, sizeof lim);
  ct_gen_limits_for_arch("sm_90a", &lim);
  return lim;
}

static int parse(const char *spec, ct_precision prec, ct_problem *p) {
  char err[256];
  if (ct_problem_parse(spec, p, err, sizeof err) != CT_OK) {
    fprintf(stderr, "cannot parse %s: %s\n", spec, err);
    return -1;
  }
  p->precision = prec;
  return 0;
}

/* 1 if the launches of v fit lim. */
static int launches_fit(const ct_gen_variant *v, const ct_gen_limits *lim) {
  if (v->n_kernels < 1 || v->n_kernels > CT_GEN_MAX_KERNELS) return 0;
  for (int i = 0; i < v->n_kernels; i++) {
    const ct_gen_launch *l = &v->kernels[i];
    uint64_t threads = (uint64_t)l->block[0] * l->block[1] * l->block[2];
    if (l->name[0] == '\0') return 0;
    if (threads < 1 || threads > (uint64_t)lim->max_threads_per_block) return 0;
    if (l->block[0] > 1024 || l->block[1] > 1024 || l->block[2] > 64) return 0;
    if (l->grid[0] < 1 || l->grid[0] > 0x7fffffffu) return 0;
    if (l->grid[1] < 1 || l->grid[1] > 65535 || l->grid[2] < 1 || l->grid[2] > 65535)
      return 0;
    if (l->smem > (unsigned)lim->max_smem_per_block) return 0;
  }
  return 1;
}

/* ---------------------------------------------------------------------- */

static void test_enumerate_headline(void) {
  ct_gen_limits lim = h200();
  for (int prec = CT_PREC_TF32; prec <= CT_PREC_FP32; prec++) {
    ct_problem p;
    ct_problem_default(&p);
    p.precision = (ct_precision)prec;
    ct_gen_variant *v = NULL;
    size_t n = 0;
    ASSERT_EQ_INT(ct_gen_enumerate(&p, &lim, &v, &n), CT_OK);
    ASSERT_TRUE(n >= 1);
    ASSERT_TRUE(v != NULL);
    int ok = 1;
    for (size_t i = 0; i < n && ok; i++) {
      const ct_gen_family *f = v[i].family;
      ok = f != NULL && f->valid(&p, &lim, v[i].values) &&
           (f->precisions & (1u << prec)) && launches_fit(&v[i], &lim) &&
           strncmp(v[i].name, f->name, strlen(f->name)) == 0;
      if (!ok) fprintf(stderr, "  bad variant %s\n", v[i].name);
      for (size_t j = 0; j < i && ok; j++)
        if (strcmp(v[i].name, v[j].name) == 0) {
          fprintf(stderr, "  duplicate name %s\n", v[i].name);
          ok = 0;
        }
      ct_gen_variant back;
      if (ok && ct_gen_variant_from_name(&p, &lim, v[i].name, &back) != CT_OK) {
        fprintf(stderr, "  %s does not parse back\n", v[i].name);
        ok = 0;
      }
      if (ok && memcmp(&back, &v[i], sizeof back) != 0) {
        fprintf(stderr, "  %s round trip differs\n", v[i].name);
        ok = 0;
      }
    }
    if (prec == CT_PREC_TF32) fprintf(stderr, "  headline: %zu variants\n", n);
    free(v);
    ASSERT_TRUE(ok);
  }
}

static void test_enumerate_order_and_default(void) {
  /* The default variant is the first enumerated variant of family direct. */
  ct_gen_limits lim = h200();
  ct_problem p;
  ct_problem_default(&p);
  ct_gen_variant *v = NULL, d;
  size_t n = 0;
  ASSERT_EQ_INT(ct_gen_enumerate(&p, &lim, &v, &n), CT_OK);
  ASSERT_EQ_INT(ct_gen_default_variant(&p, &lim, &d), CT_OK);
  const ct_gen_variant *first = NULL;
  for (size_t i = 0; i < n && first == NULL; i++)
    if (strcmp(v[i].family->name, "direct") == 0) first = &v[i];
  int same = first != NULL && memcmp(first, &d, sizeof d) == 0;
  free(v);
  ASSERT_TRUE(same);
  ASSERT_EQ_STR(d.name, "direct:THREADS=128,TP=4,TK=8");
}

/* The index of family `name`'s first variant among the n of v; n if none. */
static size_t first_of(const ct_gen_variant *v, size_t n, const char *name) {
  size_t i = 0;
  while (i < n && strcmp(v[i].family->name, name) != 0) i++;
  return i;
}

/* The families made for few channels (few_channels) are listed in the
** registry's order below CT_GEN_FEW_CHANNELS input channels (ResNet's stem:
** wg, tc, then gm), and after every other family from there on (a 1x1
** layer of 256 channels, stride 2: gmp and gm, then wg and tc; the same
** at C = 8, the threshold); within each group, the registry's order. */
static void test_enumerate_few_channels_last(void) {
  /* The families that declare it: those keeping all the weights and an
  ** input band in shared memory, and no other. */
  static const char *const few[] = {"wg", "wg3", "tc", "tc3", "wgs", "wgr", "s2d_wg", "s2d_wg3"};
  size_t n_few = 0;
  for (size_t i = 0; ct_gen_families[i] != NULL; i++) {
    int listed = 0;
    for (size_t j = 0; j < sizeof few / sizeof few[0]; j++)
      listed |= strcmp(ct_gen_families[i]->name, few[j]) == 0;
    if (listed != (ct_gen_families[i]->few_channels != 0))
      fprintf(stderr, "  %s: few_channels %d\n", ct_gen_families[i]->name,
              ct_gen_families[i]->few_channels);
    ASSERT_EQ_INT(listed, ct_gen_families[i]->few_channels != 0);
    n_few += listed;
  }
  ASSERT_EQ_INT(n_few, sizeof few / sizeof few[0]);
  ct_gen_limits lim = h200();
  static const struct {
    const char *spec;
    int deferred;
  } cases[] = {
      {"n=32,c=3,h=224,w=224,k=64,r=7,s=7,stride=2,pad=3", 0},
      {"n=32,c=7,h=112,w=112,k=64,r=3,s=3,pad=1", 0},
      {"n=32,c=8,h=112,w=112,k=64,r=3,s=3,pad=1", 1},
      {"n=32,c=256,h=56,w=56,k=512,r=1,s=1,stride=2", 1},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    ct_problem p;
    ASSERT_EQ_INT(parse(cases[c].spec, CT_PREC_TF32, &p), 0);
    ct_gen_variant *v = NULL;
    size_t n = 0;
    ASSERT_EQ_INT(ct_gen_enumerate(&p, &lim, &v, &n), CT_OK);
    const size_t wg = first_of(v, n, "wg"), tc = first_of(v, n, "tc"), gm = first_of(v, n, "gm");
    /* Both kinds are offered, so the order is observable. */
    ASSERT_TRUE(wg < n && gm < n);
    if (cases[c].deferred) {
      ASSERT_TRUE(gm < wg);
      /* Every few-channel variant after every other one. */
      size_t last_other = 0, first_few = n;
      for (size_t i = 0; i < n; i++) {
        if (v[i].family->few_channels && i < first_few) first_few = i;
        if (!v[i].family->few_channels) last_other = i;
      }
      ASSERT_TRUE(last_other < first_few);
    } else {
      ASSERT_TRUE(wg < gm);
    }
    if (tc < n) ASSERT_TRUE(wg < tc); /* the registry's order within a group */
    free(v);
  }
}

static void test_source_deterministic(void) {
  ct_gen_limits lim = h200();
  ct_problem p;
  ct_problem_default(&p);
  ct_gen_variant *v = NULL;
  size_t n = 0;
  ASSERT_EQ_INT(ct_gen_enumerate(&p, &lim, &v, &n), CT_OK);
  int ok = 1;
  uint64_t prev_hash = 0;
  for (size_t i = 0; i < n && ok; i++) {
    char *a = NULL, *b = NULL;
    ok = ct_gen_source(&p, &v[i], &a) == CT_OK && ct_gen_source(&p, &v[i], &b) == CT_OK;
    ok = ok && strcmp(a, b) == 0;
    uint64_t ha = ok ? ct_gen_hash(a, strlen(a), CT_GEN_HASH_SEED) : 0;
    uint64_t hb = ok ? ct_gen_hash(b, strlen(b), CT_GEN_HASH_SEED) : 1;
    ok = ok && ha == hb && ha != prev_hash; /* distinct variants, distinct text */
    prev_hash = ha;
    /* Layout: header line, the problem (none for a shape-generic family),
    ** the parameters, the template. */
    ok = ok && strncmp(a, "// convtune: ", 13) == 0 && strstr(a, v[i].name) != NULL;
    if (v[i].family->shape_generic)
      ok = ok && strstr(a, "#define CT_N ") == NULL && strstr(a, "for any problem") != NULL;
    else
      ok = ok && strstr(a, "\n#define CT_N 256\n#define CT_C 3\n#define CT_H 224\n"
                         "#define CT_W 224\n#define CT_K 96\n#define CT_R 11\n"
                         "#define CT_S 11\n#define CT_P 55\n#define CT_Q 55\n"
                         "#define CT_STRIDE_H 4\n#define CT_STRIDE_W 4\n"
                         "#define CT_PAD_H 2\n#define CT_PAD_W 2\n"
                         "#define CT_DIL_H 1\n#define CT_DIL_W 1\n"
                         "#define CT_BIAS 1\n") != NULL;
    for (int j = 0; ok && j < v[i].family->n_params; j++) {
      char line[96];
      snprintf(line, sizeof line, "\n#define %s %d\n", v[i].family->params[j].name,
               v[i].values[j]);
      ok = strstr(a, line) != NULL;
    }
    /* ... ending with the template, its headers expanded. */
    char *t = NULL;
    ok = ok && ct_gen_template_source(v[i].family->template_name, &t) == CT_OK &&
         strlen(a) > strlen(t) && strcmp(a + strlen(a) - strlen(t), t) == 0 &&
         strstr(t, "#include \"ct_") == NULL;
    free(t);
    if (!ok) fprintf(stderr, "  source of %s\n", v[i].name);
    free(a);
    free(b);
  }
  /* The precision is not part of the text: one source serves both. */
  if (ok) {
    ct_problem q = p;
    q.precision = CT_PREC_FP32;
    char *a = NULL, *b = NULL;
    ok = ct_gen_source(&p, &v[0], &a) == CT_OK && ct_gen_source(&q, &v[0], &b) == CT_OK &&
         strcmp(a, b) == 0;
    free(a);
    free(b);
  }
  free(v);
  ASSERT_TRUE(ok);
}

static void test_reference_source(void) {
  ct_problem p;
  ASSERT_EQ_INT(parse("n=2,c=3,h=17,w=19,k=5,r=3,s=5,stride=2,pad=1x2,bias=0",
                      CT_PREC_FP32, &p), 0);
  char *a = NULL, *b = NULL;
  ASSERT_EQ_INT(ct_gen_reference_source(&p, &a), CT_OK);
  ASSERT_EQ_INT(ct_gen_reference_source(&p, &b), CT_OK);
  int ok = strcmp(a, b) == 0 && strstr(a, "ct_ref_f64") != NULL &&
           strstr(a, "#define CT_P 9\n#define CT_Q 10\n") != NULL &&
           strstr(a, "#define CT_BIAS 0\n") != NULL;
  free(a);
  free(b);
  ASSERT_TRUE(ok);
}

static void test_plans_fit_limits(void) {
  const char *archs[] = {"sm_90a", "sm_80", "sm_89"};
  for (size_t ai = 0; ai < 3; ai++) {
    ct_gen_limits lim;
    ASSERT_EQ_INT(ct_gen_limits_for_arch(archs[ai], &lim), CT_OK);
    for (size_t i = 0; i <= N_ODD; i++) {
      ct_problem p;
      if (i == N_ODD) ct_problem_default(&p);
      else ASSERT_EQ_INT(parse(odd_specs[i], CT_PREC_TF32, &p), 0);
      ct_gen_variant *v = NULL;
      size_t n = 0;
      ASSERT_EQ_INT(ct_gen_enumerate(&p, &lim, &v, &n), CT_OK);
      int ok = n >= 1;
      for (size_t j = 0; j < n && ok; j++) {
        ok = launches_fit(&v[j], &lim);
        if (!ok) fprintf(stderr, "  %s on %s: %s\n", archs[ai],
                         i < N_ODD ? odd_specs[i] : "headline", v[j].name);
      }
      free(v);
      ASSERT_TRUE(ok);
    }
  }
}

static void test_default_variant_odd(void) {
  ct_gen_limits lim = h200();
  for (size_t i = 0; i < N_ODD; i++) {
    for (int prec = CT_PREC_TF32; prec <= CT_PREC_FP32; prec++) {
      ct_problem p;
      ASSERT_EQ_INT(parse(odd_specs[i], (ct_precision)prec, &p), 0);
      ct_gen_variant d;
      ct_status rc = ct_gen_default_variant(&p, &lim, &d);
      if (rc != CT_OK) fprintf(stderr, "  no default for %s\n", odd_specs[i]);
      ASSERT_EQ_INT(rc, CT_OK);
      ASSERT_TRUE(d.family != NULL && d.family->valid(&p, &lim, d.values));
      ASSERT_TRUE(launches_fit(&d, &lim));
      char *src = NULL;
      ASSERT_EQ_INT(ct_gen_source(&p, &d, &src), CT_OK);
      free(src);
    }
  }
}

static void test_small_k_and_q_prune(void) {
  /* K = 1, Q = 1: only TK = 1 and TP = 1 waste nothing. */
  ct_gen_limits lim = h200();
  ct_problem p;
  ASSERT_EQ_INT(parse("n=1,c=1,h=3,w=3,k=1,r=3,s=3", CT_PREC_TF32, &p), 0);
  ct_gen_variant d;
  ASSERT_EQ_INT(ct_gen_default_variant(&p, &lim, &d), CT_OK);
  ASSERT_EQ_STR(d.name, "direct:THREADS=128,TP=1,TK=1");
  ct_gen_variant *v = NULL;
  size_t n = 0, n_direct = 0;
  ASSERT_EQ_INT(ct_gen_enumerate(&p, &lim, &v, &n), CT_OK);
  for (size_t i = 0; i < n; i++) n_direct += v[i].family == d.family;
  free(v);
  ASSERT_EQ_INT(n_direct, 3); /* one per THREADS value */
}

/* The hard-valid set: ct_gen_enumerate_all lists every point
** ct_gen_enumerate offers, in the same order, and the pruned ones besides;
** a pruned point's name does not rebuild (it is not offered), while the
** offered ones do. */
static void test_enumerate_all(void) {
  ct_gen_limits lim = h200();
  ct_problem p;
  ASSERT_EQ_INT(parse("n=1,c=1,h=3,w=3,k=1,r=3,s=3", CT_PREC_TF32, &p), 0);
  ct_gen_variant *all = NULL, *kept = NULL;
  size_t n_all = 0, n_kept = 0, k = 0, pruned_direct = 0;
  ASSERT_EQ_INT(ct_gen_enumerate_all(&p, &lim, &all, &n_all), CT_OK);
  ASSERT_EQ_INT(ct_gen_enumerate(&p, &lim, &kept, &n_kept), CT_OK);
  int ok = n_all > n_kept;
  for (size_t a = 0; ok && a < n_all; a++) {
    ct_gen_variant back;
    ct_status rc = ct_gen_variant_from_name(&p, &lim, all[a].name, &back);
    if (k < n_kept && memcmp(&all[a], &kept[k], sizeof all[a]) == 0) {
      k++;
      ok = rc == CT_OK && memcmp(&back, &all[a], sizeof back) == 0;
    } else {
      pruned_direct += strcmp(all[a].family->name, "direct") == 0;
      ok = rc == CT_ERR_UNSUPPORTED && launches_fit(&all[a], &lim);
    }
  }
  free(all);
  free(kept);
  ASSERT_TRUE(ok);
  ASSERT_EQ_INT(k, n_kept);
  ASSERT_EQ_INT(pruned_direct, 3 * 3 * 4 - 3); /* all but TP = TK = 1 */
  ASSERT_EQ_INT(ct_gen_enumerate_all(NULL, &lim, &all, &n_all), CT_ERR_INVALID_ARG);
  ASSERT_TRUE(all == NULL && n_all == 0);
}

/* A family taking an argument kind no launcher knows (test_badargs, a test
** family) is refused: never enumerated, its name and its source
** unsupported.  Every real family takes plain pointers or tensor maps. */
/* Family gm is shape-generic: two problems (another batch, image, channel
** count, stride and padding) get byte-identical sources with no problem
** size in them, while the plan carries each one's sizes in kargs and its
** maps' geometry (docs/GENERAL.md: corners lower = -pad, upper = pad -
** (R-1) dil, W first; traversal strides the conv's).  Every public-suite
** shape gets gm variants at tf32 and gm3 variants at fp32, and a stride
** above 8 none. */
static void test_gm_shape_generic(void) {
  ct_gen_limits lim = h200();
  ct_problem a, b, c;
  ASSERT_EQ_INT(parse("n=32,c=256,h=14,w=14,k=256,r=3,s=3,pad=1", CT_PREC_TF32, &a), 0);
  ASSERT_EQ_INT(parse("n=7,c=200,h=29,w=31,k=256,r=3,s=5,stride=2x3,pad=2x1,dil=1x2,bias=0",
                      CT_PREC_TF32, &b), 0);
  const char *name = "gm:BM=128,BN=128,BK=32,STAGES=4";
  ct_gen_variant va, vb;
  ASSERT_EQ_INT(ct_gen_variant_from_name(&a, &lim, name, &va), CT_OK);
  ASSERT_EQ_INT(ct_gen_variant_from_name(&b, &lim, name, &vb), CT_OK);
  char *sa = NULL, *sb = NULL;
  ASSERT_EQ_INT(ct_gen_source(&a, &va, &sa), CT_OK);
  ASSERT_EQ_INT(ct_gen_source(&b, &vb, &sb), CT_OK);
  int same = strcmp(sa, sb) == 0, sized = strstr(sa, "#define CT_N ") != NULL;
  free(sa);
  free(sb);
  ASSERT_TRUE(same);
  ASSERT_TRUE(!sized);
  ASSERT_TRUE(va.family->shape_generic && va.family->args == CT_GEN_ARGS_TENSOR_MAPS);
  ASSERT_EQ_INT(vb.kargs[0], 7);   /* N */
  ASSERT_EQ_INT(vb.kargs[1], 200); /* C */
  ASSERT_EQ_INT(vb.n_maps, 2);
  const ct_gen_map *mx = &vb.maps[0], *mw = &vb.maps[1];
  ASSERT_EQ_INT(mx->kind, CT_GEN_MAP_IM2COL);
  ASSERT_EQ_INT(mx->dims[0], 200);               /* C, a multiple of 4 */
  ASSERT_EQ_INT(mx->lower[0], -1);               /* -pad_w */
  ASSERT_EQ_INT(mx->lower[1], -2);               /* -pad_h */
  ASSERT_EQ_INT(mx->upper[0], 1 - (5 - 1) * 2);  /* pad_w - (S-1) dil_w */
  ASSERT_EQ_INT(mx->upper[1], 2 - (3 - 1) * 1);  /* pad_h - (R-1) dil_h */
  ASSERT_EQ_INT(mx->elem_strides[1], 3);         /* stride_w */
  ASSERT_EQ_INT(mx->elem_strides[2], 2);         /* stride_h */
  ASSERT_EQ_INT(mx->channels, 32);
  ASSERT_EQ_INT(mx->pixels, 128);
  ASSERT_EQ_INT(mw->kind, CT_GEN_MAP_TILED);
  ASSERT_EQ_INT(mw->box[0], 32);
  ASSERT_EQ_INT(mw->box[3], 128);
  ASSERT_TRUE(mw->offset % 1024 == 0 && mw->offset >= mx->dims[0] * 29 * 31 * 7 * 4);
  ASSERT_TRUE(vb.workspace_bytes >= mw->offset + 256 * 3 * 5 * 200 * 4);
  /* A small problem's workspace tensors still make 128 KiB maps. */
  ASSERT_EQ_INT(parse("n=1,c=3,h=5,w=6,k=2,r=3,s=3,pad=1", CT_PREC_TF32, &c), 0);
  ct_gen_variant vc;
  ASSERT_EQ_INT(ct_gen_variant_from_name(&c, &lim, "gm:BM=64,BN=64,BK=8,STAGES=8", &vc), CT_OK);
  ASSERT_TRUE(vc.maps[0].dims[0] * vc.maps[0].dims[1] * vc.maps[0].dims[2] *
                  vc.maps[0].dims[3] * 4 >= 128 * 1024);
  ASSERT_TRUE(vc.maps[1].dims[0] * vc.maps[1].dims[1] * vc.maps[1].dims[2] *
                  vc.maps[1].dims[3] * 4 >= 128 * 1024);
  ASSERT_EQ_INT(vc.maps[0].dims[0], 4); /* C = 3 padded to 4 */

  /* Every public-suite shape (bench/suites/public.txt): gm at tf32, gm3
  ** at fp32. */
  FILE *f = fopen(CT_SOURCE_ROOT "/bench/suites/public.txt", "r");
  ASSERT_TRUE(f != NULL);
  char line[512];
  int shapes = 0, covered = 0;
  while (fgets(line, sizeof line, f)) {
    char shape[64], spec[400];
    if (line[0] == '#' || sscanf(line, "%63s %399s", shape, spec) != 2) continue;
    shapes++;
    for (int fp32 = 0; fp32 <= 1; fp32++) {
      const char *fam = fp32 ? "gm3" : "gm";
      ct_problem p;
      if (parse(spec, fp32 ? CT_PREC_FP32 : CT_PREC_TF32, &p) != 0) break;
      ct_gen_variant *v = NULL;
      size_t n = 0, n_gm = 0;
      if (ct_gen_enumerate(&p, &lim, &v, &n) != CT_OK) break;
      for (size_t j = 0; j < n; j++) n_gm += strcmp(v[j].family->name, fam) == 0;
      free(v);
      if (n_gm == 0) fprintf(stderr, "no %s variant for %s\n", fam, shape);
      covered += n_gm > 0;
    }
  }
  fclose(f);
  ASSERT_EQ_INT(shapes, 30);
  ASSERT_EQ_INT(covered, 2 * shapes);
  ct_problem big_stride;
  ASSERT_EQ_INT(parse("n=1,c=3,h=224,w=224,k=768,r=16,s=16,stride=16", CT_PREC_TF32,
                      &big_stride), 0);
  ct_gen_variant bad;
  ASSERT_EQ_INT(ct_gen_variant_from_name(&big_stride, &lim, name, &bad), CT_ERR_UNSUPPORTED);
}

/* Families gmp and gmp3: the plan's kargs and maps describe the GEMM view
** (a 1x1 convolution over [NP][P][Q][KG], KG = R S C rounded up to 4), and
** the patch matrix that ct_gm_patch_src's index arithmetic (the very
** function gm_patch runs) builds, times w's own rows as the packed
** weights, is the convolution: compared with the float64 reference on
** random data, in both layouts, over strides above 8, padding, dilation
** and few channels. */
static int gmp_plan_is_view(const ct_problem *p, const ct_gen_variant *v) {
  int64_t P, Q;
  ct_problem_output(p, &P, &Q);
  const int64_t *a = v->kargs, RSC = p->r * p->s * p->c, KG = a[CT_GM_A_CP];
  const int64_t NP = a[CT_GM_A_NP], KP = a[CT_GM_A_KP];
  const int64_t parts = p->precision == CT_PREC_FP32 ? 2 : 1;
  const int64_t bk = v->maps[0].channels, rb = CT_GM_PATCH_ROWS(KG);
  const ct_gen_map *mx = &v->maps[0], *mw = &v->maps[1];
  /* The pass: gm_patch, RB rows a block; for a 1x1 NCHW problem
  ** gm_patch1, 32 rows x 64 columns a block. */
  const int one = p->r == 1 && p->s == 1 && p->layout == CT_LAYOUT_NCHW;
  const int64_t rows_per_block = one ? CT_GM_PREP_PX : rb, gy = one ? (KG + 63) / 64 : 1;
  /* At tf32, where R S C % 4 = 0 and w is at least 128 KiB, the weight
  ** map reads the caller's w, its rows the packed ones: no gm_wpack. */
  const int wread = parts == 1 && RSC % 4 == 0 && p->k * RSC * 4 >= CT_GM_MIN_MAP_BYTES;
  const int64_t mat = parts * NP * P * Q * KG;
  return KG == (RSC + 3) / 4 * 4 && a[CT_GM_A_NCB] == (KG + bk - 1) / bk &&
         a[CT_GM_A_R] == p->r && a[CT_GM_A_SH] == p->stride_h && a[CT_GM_A_P] == P &&
         v->n_kernels == 3 - wread &&
         strcmp(v->kernels[0].name, one ? "gm_patch1" : "gm_patch") == 0 &&
         (wread || (strcmp(v->kernels[1].name, "gm_wpack") == 0 &&
                    v->kernels[1].grid[0] == (unsigned)KP)) &&
         strcmp(v->kernels[2 - wread].name, "gm_conv") == 0 &&
         (int64_t)v->kernels[0].grid[0] * rows_per_block >= NP * P * Q &&
         ((int64_t)v->kernels[0].grid[0] - 1) * rows_per_block < NP * P * Q &&
         v->kernels[0].grid[1] == (unsigned)gy && mx->kind == CT_GEN_MAP_IM2COL &&
         mx->dims[0] == (uint64_t)KG && mx->dims[1] == (uint64_t)Q &&
         mx->dims[2] == (uint64_t)P && mx->dims[3] == (uint64_t)(parts * NP) &&
         mx->lower[0] == 0 && mx->lower[1] == 0 && mx->upper[0] == 0 && mx->upper[1] == 0 &&
         mx->elem_strides[1] == 1 && mx->elem_strides[2] == 1 &&
         mw->dims[0] == (uint64_t)KG && mw->dims[1] == 1 && mw->dims[2] == 1 &&
         mw->strides[0] == (uint64_t)KG * 4 && mw->tf32 == wread &&
         (wread ? mw->buffer == CT_GEN_BUF_W && mw->offset == 0 &&
                      mw->dims[3] == (uint64_t)p->k && (int64_t)v->workspace_bytes >= mat * 4
                : mw->buffer == CT_GEN_BUF_WS && mw->dims[3] == (uint64_t)(parts * KP) &&
                      mw->offset == (uint64_t)a[CT_GM_A_WOFF] * 4 &&
                      a[CT_GM_A_WOFF] >= mat &&
                      (int64_t)v->workspace_bytes >= (a[CT_GM_A_WOFF] + parts * KP * KG) * 4 &&
                      KP * KG * 4 >= CT_GM_MIN_MAP_BYTES) &&
         NP * P * Q * KG * 4 >= CT_GM_MIN_MAP_BYTES;
}

static int gmp_matches_reference(const char *spec, ct_precision prec) {
  ct_gen_limits lim = h200();
  ct_problem p;
  if (parse(spec, prec, &p) != 0) return 0;
  const char *fam = prec == CT_PREC_FP32 ? "gmp3" : "gmp";
  ct_gen_variant *vs = NULL, v;
  memset(&v, 0, sizeof v);
  size_t nv = 0, n_gmp = 0;
  if (ct_gen_enumerate(&p, &lim, &vs, &nv) != CT_OK) return 0;
  int planned = 1;
  for (size_t i = 0; i < nv; i++) {
    if (strcmp(vs[i].family->name, fam) != 0) continue;
    if (n_gmp++ == 0) v = vs[i];
    if (!gmp_plan_is_view(&p, &vs[i])) {
      fprintf(stderr, "%s: %s: the plan is not gmp's view\n", spec, vs[i].name);
      planned = 0;
    }
  }
  free(vs);
  if (n_gmp == 0) fprintf(stderr, "%s: no %s variant\n", spec, fam);
  if (n_gmp == 0 || !planned) return 0;
  int64_t P, Q;
  ct_problem_output(&p, &P, &Q);
  const int64_t *a = v.kargs, RSC = p.r * p.s * p.c, KG = a[CT_GM_A_CP];
  const int64_t nx = p.n * p.c * p.h * p.w, nw = p.k * RSC, ny = p.n * p.k * P * Q;
  float *x = malloc(nx * sizeof *x), *w = malloc(nw * sizeof *w), *b = malloc(p.k * sizeof *b);
  double *ref = malloc(ny * sizeof *ref);
  if (!x || !w || !b || !ref) abort();
  uint64_t st = 0x9e3779b97f4a7c15u ^ (uint64_t)nx;
  for (int64_t i = 0; i < nx + nw + p.k; i++) {
    st = st * 6364136223846793005u + 1442695040888963407u;
    const float u = (float)((st >> 40) / (double)(1u << 24)) * 2.0f - 1.0f;
    if (i < nx) x[i] = u;
    else if (i < nx + nw) w[i - nx] = u;
    else b[i - nx - nw] = u;
  }
  if (ct_tune_reference_cpu(&p, x, w, b, ref, NULL, NULL) != CT_OK) abort();
  const ct_gm_geom g = {a[CT_GM_A_C], a[CT_GM_A_H], a[CT_GM_A_W], a[CT_GM_A_R],
                        a[CT_GM_A_S], a[CT_GM_A_SH], a[CT_GM_A_SW], a[CT_GM_A_PH],
                        a[CT_GM_A_PW], a[CT_GM_A_DH], a[CT_GM_A_DW],
                        p.layout == CT_LAYOUT_NHWC};
  const int nhwc = g.nhwc;
  double worst = 0.0;
  for (int64_t n = 0; n < p.n; n++)
    for (int64_t op = 0; op < P; op++)
      for (int64_t oq = 0; oq < Q; oq++)
        for (int64_t k = 0; k < p.k; k++) {
          double sum = p.bias ? b[k] : 0.0;
          for (int j = 0; j < (int)KG; j++) {
            const long long src = j < RSC ? ct_gm_patch_src(&g, n, op, oq, j) : -1;
            if (src >= 0) sum += (double)x[src] * (double)w[k * RSC + j];
            /* gm_patch1 (1x1, NCHW) steps from column 0's offset a plane
            ** per channel. */
            if (p.r == 1 && p.s == 1 && !nhwc && j < RSC) {
              const long long src0 = ct_gm_patch_src(&g, n, op, oq, 0);
              if ((src0 < 0) != (src < 0) || (src >= 0 && src != src0 + j * p.h * p.w)) abort();
            }
          }
          sum = ct_tune_activate(p.act, sum);
          const int64_t o = nhwc ? ((n * P + op) * Q + oq) * p.k + k
                                 : ((n * p.k + k) * P + op) * Q + oq;
          const double d = fabs(sum - ref[o]);
          if (d > worst) worst = d;
        }
  free(x);
  free(w);
  free(b);
  free(ref);
  if (worst > 1e-9) fprintf(stderr, "%s: patch GEMM differs from the reference by %g\n", spec, worst);
  return worst <= 1e-9;
}

static void test_gmp_patches(void) {
  /* ViT's patch embedding (stride 16, gm declines it) in both layouts,
  ** a stride of 9 with padding, dilation with unequal strides, a tap
  ** offset past im2col's 255, three channels at stride 4, a 1x1 at
  ** stride 2; the weight map over the caller's w at tf32 (w of 128 KiB
  ** or more, R S C % 4 = 0: ViT's in both layouts, a 1x1 at stride 2). */
  static const char *const specs[] = {
    "n=2,c=3,h=64,w=48,k=20,r=16,s=16,stride=16",
    "n=2,c=3,h=64,w=48,k=20,r=16,s=16,stride=16,layout=nhwc",
    "n=2,c=3,h=64,w=48,k=48,r=16,s=16,stride=16",
    "n=2,c=3,h=64,w=48,k=48,r=16,s=16,stride=16,layout=nhwc",
    "n=2,c=256,h=15,w=17,k=132,r=1,s=1,stride=2",
    "n=3,c=5,h=31,w=29,k=7,r=3,s=4,stride=9x10,pad=2x1,act=relu",
    "n=1,c=6,h=23,w=40,k=9,r=3,s=2,stride=9x3,pad=3,dil=4x7,bias=0,layout=nhwc",
    "n=1,c=2,h=300,w=9,k=4,r=3,s=1,dil=130,pad=1",
    "n=2,c=3,h=32,w=32,k=16,r=4,s=4,stride=4",
    "n=2,c=20,h=15,w=17,k=12,r=1,s=1,stride=2",
  };
  for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++)
    for (int fp32 = 0; fp32 <= 1; fp32++)
      ASSERT_TRUE(gmp_matches_reference(specs[i], fp32 ? CT_PREC_FP32 : CT_PREC_TF32));

  /* Offered: where im2col cannot gather (ViT, dilation 130), where the
  ** matrix halves gm's depth at little cost (C = 3, 4x4 stride 4), where
  ** it is a quarter of x (a 1x1 at stride 2), and where gm's channel
  ** blocks are half padding and the matrix at most 16 times the copy and
  ** 1 GiB (ResNet's 7x7 stem, both layouts; AlexNet's 11x11 stride 4 at
  ** batch 64, 0.28 and 0.56 GB); not for a 1x1, a 3x3 over 64 channels or
  ** a 3x3 at stride 2, which gm gathers at full depth from a copy no
  ** bigger, nor for a 3-channel 5x5 at stride 1 (a matrix 19 times the
  ** copy) or AlexNet's batch of 256 (1.1 and 2.3 GB). */
  static const struct { const char *spec; int offered; } cases[] = {
    {"n=8,c=3,h=224,w=224,k=768,r=16,s=16,stride=16", 1},
    {"n=1,c=2,h=300,w=9,k=4,r=3,s=1,dil=130,pad=1", 1},
    {"n=32,c=3,h=224,w=224,k=64,r=4,s=4,stride=4", 1},
    {"n=32,c=256,h=14,w=14,k=256,r=1,s=1", 0},
    {"n=32,c=256,h=56,w=56,k=512,r=1,s=1,stride=2", 1},
    {"n=32,c=128,h=56,w=56,k=128,r=3,s=3,stride=2,pad=1", 0},
    {"n=8,c=64,h=56,w=56,k=64,r=3,s=3,pad=1", 0},
    {"n=32,c=3,h=224,w=224,k=64,r=7,s=7,stride=2,pad=3", 1},
    {"n=32,c=3,h=224,w=224,k=64,r=7,s=7,stride=2,pad=3,layout=nhwc", 1},
    {"n=64,c=3,h=224,w=224,k=96,r=11,s=11,stride=4,pad=2", 1},
    {"n=256,c=3,h=224,w=224,k=96,r=11,s=11,stride=4,pad=2", 0},
    {"n=8,c=3,h=64,w=64,k=32,r=5,s=5,pad=2", 0},
  };
  ct_gen_limits lim = h200();
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    for (int fp32 = 0; fp32 <= 1; fp32++) {
      ct_problem p;
      ASSERT_EQ_INT(parse(cases[i].spec, fp32 ? CT_PREC_FP32 : CT_PREC_TF32, &p), 0);
      ct_gen_variant *v = NULL;
      size_t n = 0, n_gmp = 0;
      ASSERT_EQ_INT(ct_gen_enumerate(&p, &lim, &v, &n), CT_OK);
      for (size_t j = 0; j < n; j++)
        n_gmp += strcmp(v[j].family->name, fp32 ? "gmp3" : "gmp") == 0;
      free(v);
      if ((n_gmp > 0) != cases[i].offered)
        fprintf(stderr, "%s: %zu gmp variants\n", cases[i].spec, n_gmp);
      ASSERT_EQ_INT(n_gmp > 0, cases[i].offered);
    }
}

/* A k-tile's x boxes as gm_pw reads them (family pw): for BM =
** 64 and 128 and BK = 8, 16 and 32, ct_gm_pw_pixel (`pixel`: row g of warp
** `warp` of consumer c; row g + 8 the next pixel) is a bijection onto the
** tile's pixels with consumer c's rows its pixels 64 c .. 64 c + 63, lanes
** g and g ^ 1 hold 4 aligned consecutive pixels (the epilogue's 16-byte
** runs); ct_gm_pw_smem (`smem`: channel, pixel) is a bijection onto the
** stage's A floats and equals TMA's 128-byte swizzle of the dense boxes [BK][32 pixels]
** (byte bits 4 .. XORed with bits 7 .., boxes on 1024-byte multiples);
** and each half-warp's 8-byte fragment reads of a k8 step (channels t and
** t + 4) hit the 32 banks once. */
static void check_pw_boxes(void) {
  int (*const pixel)(int, int, int) = ct_gm_pw_pixel;
  int (*const smem)(int, int, int) = ct_gm_pw_smem;
  const int span = 128;
  for (int bm = 64; bm <= 128; bm += 64)
    for (int bk = 8; bk <= 32; bk *= 2) {
      int seen_px[128] = {0}, seen_off[128 * 32] = {0};
      for (int c = 0; c < bm / 64; c++)
        for (int warp = 0; warp < 4; warp++)
          for (int g = 0; g < 8; g++)
            for (int h = 0; h < 2; h++) {
              const int px = pixel(c, warp, g) + h;
              ASSERT_TRUE(px >= 0 && px < bm && px / 64 == c);
              seen_px[px]++;
              if (g % 2 == 0 && h == 0) {
                ASSERT_EQ_INT(px % 4, 0);
                ASSERT_EQ_INT(pixel(c, warp, g + 1), px + 2);
              }
            }
      for (int px = 0; px < bm; px++) ASSERT_EQ_INT(seen_px[px], 1);
      for (int cl = 0; cl < bk; cl++)
        for (int px = 0; px < bm; px++) {
          const int off = smem(bk, cl, px);
          ASSERT_TRUE(off >= 0 && off < bm * bk);
          const int bytes = ((px >> 5) * 32 * bk + cl * 32 + (px & 31)) * 4;
          ASSERT_EQ_INT(off * 4, bytes ^ (((bytes >> 7) & (span / 16 - 1)) << 4));
          seen_off[off]++;
        }
      for (int i = 0; i < bm * bk; i++) ASSERT_EQ_INT(seen_off[i], 1);
      for (int c = 0; c < bm / 64; c++)
        for (int warp = 0; warp < 4; warp++)
          for (int half = 0; half < 2; half++)
            for (int j = 0; j < bk / 8; j++)
              for (int hi = 0; hi < 2; hi++) {
                int banks[32] = {0};
                for (int lane = 16 * half; lane < 16 * half + 16; lane++) {
                  const int g = lane / 4, t = lane % 4;
                  const int off = smem(bk, 8 * j + t + 4 * hi, pixel(c, warp, g));
                  ASSERT_EQ_INT(off % 2, 0);
                  banks[off % 32]++;
                  banks[(off + 1) % 32]++;
                }
                for (int i = 0; i < 32; i++) ASSERT_EQ_INT(banks[i], 1);
              }
    }
}

/* pw's runs (CT_GM_PW 4): TMA's fill of the box the producer loads for
** k-tile cb of image n (coordinates {0, cb BK / 4, n, 0}, dense and
** unswizzled: box element (e0, e1) at float e1 box[0] + e0, from global
** byte e0 4 + (cb BK / 4 + e1) strides[0] + n strides[1], zero past
** dims[1]) replayed from the plan's map, against the NCHW byte of channel
** cb BK + cl, pixel px of image n, where the consumers read that channel
** and pixel (ct_gm_runs_smem); the reads of the dead rows (pixels HW ..
** 63) within the stage's x bytes (BM BK floats), and the transaction the
** box's bytes. */
static void check_runs_box(const ct_gen_map *mx, int hw, int bk, int64_t c, int64_t n_img) {
  const int64_t last_read = ct_gm_runs_smem(hw, bk - 1, 63);
  ASSERT_TRUE(last_read < 64 * bk && mx->box[0] * mx->box[1] <= (uint32_t)(64 * bk));
  const int64_t images[2] = {0, n_img - 1};
  for (int ni = 0; ni < 2; ni++)
    for (int cb = 0; cb * bk < c; cb++)
      for (int cl = 0; cl < bk; cl++)
        for (int px = 0; px < hw; px++) {
          const int64_t n = images[ni], off = ct_gm_runs_smem(hw, cl, px);
          const int64_t e0 = off % mx->box[0], e1 = off / mx->box[0];
          ASSERT_TRUE(e1 < mx->box[1] && e0 < (int64_t)mx->dims[0]);
          const int64_t row = (int64_t)cb * (bk / 4) + e1, ch = (int64_t)cb * bk + cl;
          if ((uint64_t)row >= mx->dims[1]) { /* zero fill: only past C */
            ASSERT_TRUE(ch >= c);
            continue;
          }
          const uint64_t byte = (uint64_t)e0 * 4 + (uint64_t)row * mx->strides[0] +
                                (uint64_t)n * mx->strides[1];
          ASSERT_TRUE(ch < c && byte == (uint64_t)(((n * c + ch) * hw + px) * 4));
        }
  ASSERT_EQ_INT(ct_gm_runs_tx(bk, hw, 0), (int)(mx->box[0] * mx->box[1] * 4));
}

/* Families pw and pw3: a 1x1 NCHW problem read in place.  Its
** rows-to-pixels order (ct_gm_pw_pixel) is a bijection onto each tile's
** pixels, the boxes' swizzled offsets (ct_gm_pw_smem) one onto the stage's
** A floats, the fragment reads of every half-warp hit the 32 banks once,
** and lanes 4 apart hold 4 aligned consecutive pixels (the epilogue's
** 16-byte stores).  The plan maps the caller's x ({HW, C, N, 1}, 32-pixel
** boxes) and the packed weights (pw3: hi and lo copies), or pw the
** caller's w where C % 4 = 0 and w is at least 128 KiB or no box crosses
** its bounds (K % BN = 0, C % BK = 0: ResNet's 64 x 64); pw at tf32 and pw3
** at fp32 are offered for ResNet-50's stride-1 1x1 layers (7 x 7 planes
** as whole-image runs: H W % 4 != 0, H W <= 64, C % 4 = 0) and declined
** where x's map cannot be made (other H W % 4 != 0, x below 128 KiB), and
** for NHWC, strides, padding or larger filters; pw3 keeps BN = 128 only
** at BK = 8 (its registers). */
static void test_pw_layout(void) {
  check_pw_boxes();

  ct_gen_limits lim = h200();
  size_t n_small[2] = {0, 0}; /* pw variants of a w under 128 KiB: packed, mapped */
  static const struct { const char *spec; int offered; } cases[] = {
    {"n=32,c=256,h=56,w=56,k=128,r=1,s=1,bias=0", 1},
    {"n=32,c=64,h=56,w=56,k=256,r=1,s=1,act=relu", 1},
    {"n=32,c=1024,h=14,w=14,k=256,r=1,s=1", 1},
    {"n=32,c=64,h=56,w=56,k=64,r=1,s=1", 1},              /* w: 16 KiB */
    {"n=32,c=64,h=56,w=56,k=96,r=1,s=1", 1},              /* K % 64 != 0 */
    {"n=32,c=36,h=56,w=56,k=64,r=1,s=1", 1},              /* C % 32 != 0 */
    {"n=16,c=64,h=1024,w=1024,k=128,r=1,s=1", 1},
    {"n=1,c=30,h=33,w=33,k=10,r=1,s=1", 0},              /* HW = 1089 */
    {"n=32,c=2048,h=7,w=7,k=512,r=1,s=1", 1},             /* HW = 49: runs */
    {"n=16,c=132,h=5,w=5,k=70,r=1,s=1", 1},               /* runs, partial blocks */
    {"n=32,c=130,h=7,w=7,k=64,r=1,s=1", 0},               /* runs need C % 4 = 0 */
    {"n=32,c=64,h=9,w=9,k=64,r=1,s=1", 0},                /* HW = 81 > 64 */
    {"n=1,c=8,h=32,w=32,k=8,r=1,s=1", 0},                 /* x: 32 KiB */
    {"n=32,c=256,h=56,w=56,k=128,r=1,s=1,layout=nhwc", 0},
    {"n=32,c=256,h=56,w=56,k=512,r=1,s=1,stride=2", 0},
    {"n=32,c=64,h=56,w=56,k=64,r=3,s=3,pad=1", 0},
    {"n=32,c=64,h=56,w=56,k=64,r=1,s=1,pad=1", 0},
  };
  for (size_t i = 0; i < 2 * (sizeof cases / sizeof cases[0]); i++) {
    const int fp32 = i % 2, parts = fp32 ? 2 : 1;
    ct_problem p;
    ASSERT_EQ_INT(parse(cases[i / 2].spec, fp32 ? CT_PREC_FP32 : CT_PREC_TF32, &p), 0);
    ct_gen_variant *v = NULL;
    size_t n = 0, n_pw = 0;
    ASSERT_EQ_INT(ct_gen_enumerate(&p, &lim, &v, &n), CT_OK);
    for (size_t j = 0; j < n; j++) {
      if (strcmp(v[j].family->name, fp32 ? "pw3" : "pw") != 0) continue;
      n_pw++;
      const ct_gen_variant *u = &v[j];
      const int64_t hw = p.h * p.w, cp = (p.c + 3) / 4 * 4;
      const int64_t bm = u->values[0], bn = u->values[1], bk = u->values[2];
      const ct_gen_map *mx = &u->maps[0], *mw = &u->maps[1];
      /* pw maps the caller's w where it can (rows of 16-byte multiples, at
      ** least 128 KiB or no box past its bounds): no gm_pack, no workspace. */
      const int big = p.k * p.c * 4 >= CT_GM_MIN_MAP_BYTES;
      const int inside = p.k % bn == 0 && p.c % bk == 0;
      const int wdirect = !fp32 && p.c % 4 == 0 && (big || inside);
      if (!fp32 && !big) n_small[wdirect]++;
      ASSERT_EQ_INT(u->n_kernels, wdirect ? 1 : 2);
      if (!wdirect) ASSERT_EQ_STR(u->kernels[0].name, "gm_pack");
      ASSERT_EQ_STR(u->kernels[u->n_kernels - 1].name, "gm_pw");
      /* pw's x map rounds as it loads (TFLOAT32); pw3's passes the bits
      ** (FLOAT32) for the consumers' split. */
      ASSERT_TRUE(mx->kind == CT_GEN_MAP_TILED && mx->buffer == CT_GEN_BUF_X && mx->tf32 == !fp32);
      char *src = NULL;
      ASSERT_EQ_INT(ct_gen_source(&p, u, &src), CT_OK);
      const int runs = strstr(src, "\n#define CT_GM_PW 4\n") != NULL;
      ASSERT_TRUE(runs || strstr(src, "\n#define CT_GM_PW 1\n") != NULL);
      free(src);
      ASSERT_EQ_INT(runs, hw % 4 != 0);
      if (runs) { /* runs of 4 channels' planes, one box of BK / 4 a k-tile */
        ASSERT_TRUE(bm == 64 && hw <= 64 && p.c % 4 == 0);
        ASSERT_TRUE(mx->dims[0] == (uint64_t)(4 * hw) && mx->dims[1] == (uint64_t)(p.c / 4) &&
                    mx->dims[2] == (uint64_t)p.n && mx->dims[3] == 1);
        ASSERT_TRUE(mx->strides[0] == (uint64_t)hw * 16 && mx->strides[1] == (uint64_t)(hw * p.c * 4));
        ASSERT_TRUE(mx->box[0] == (uint32_t)(4 * hw) && mx->box[1] == (uint32_t)(bk / 4) &&
                    mx->box[2] == 1 && mx->swizzle == 0);
        check_runs_box(mx, (int)hw, (int)bk, p.c, p.n);
      } else {
        ASSERT_TRUE(mx->dims[0] == (uint64_t)hw && mx->dims[1] == (uint64_t)p.c &&
                    mx->dims[2] == (uint64_t)p.n && mx->dims[3] == 1);
        ASSERT_TRUE(mx->strides[0] == (uint64_t)hw * 4 && mx->strides[1] == (uint64_t)(hw * p.c * 4));
        ASSERT_TRUE(mx->box[0] == 32 && mx->box[1] == (uint32_t)bk && mx->swizzle == 128);
      }
      ASSERT_TRUE(mw->offset == 0 && mw->dims[0] == (uint64_t)cp && mw->box[0] == (uint32_t)bk &&
                  mw->box[3] == (uint32_t)bn && mw->strides[0] == (uint64_t)cp * 4);
      ASSERT_TRUE(mw->dims[0] * mw->dims[3] * 4 >= (uint64_t)parts * CT_GM_MIN_MAP_BYTES ||
                  (wdirect && inside));
      if (wdirect) {
        ASSERT_TRUE(mw->buffer == CT_GEN_BUF_W && mw->tf32 && mw->dims[3] == (uint64_t)p.k);
        ASSERT_TRUE(u->workspace_bytes == 0);
      } else {
        ASSERT_TRUE(mw->buffer == CT_GEN_BUF_WS && !mw->tf32 &&
                    mw->dims[3] == (uint64_t)(parts * u->kargs[CT_GM_A_KP]) &&
                    u->kargs[CT_GM_A_KP] >= p.k);
        ASSERT_TRUE(u->workspace_bytes == mw->dims[0] * mw->dims[3] * 4);
      }
      ASSERT_TRUE(!fp32 || bn == 64 || bk == 8);
      ASSERT_EQ_INT(u->kargs[CT_GM_A_TILES_M], p.n * ((hw + bm - 1) / bm));
      ASSERT_EQ_INT(u->kargs[CT_GM_A_NCB], (cp + bk - 1) / bk);
      ASSERT_EQ_INT(u->kargs[CT_GM_A_WOFF], 0);
    }
    free(v);
    if ((n_pw > 0) != cases[i / 2].offered)
      fprintf(stderr, "%s: %zu %s variants\n", cases[i / 2].spec, n_pw, fp32 ? "pw3" : "pw");
    ASSERT_EQ_INT(n_pw > 0, cases[i / 2].offered);
  }
  ASSERT_TRUE(n_small[0] > 0 && n_small[1] > 0);
}

/* gm_pw's weights resident (CT_GM_WRES): at tf32, where one tile of
** channels covers K and the whole [BN][CP] block fits beside the ring,
** the source holds them (CT_GM_WRES = the channel blocks, CP / BK up) and
** the ring's stages carry x alone: shared memory = 1024 + STAGES (x's
** stage + 16) + the weights + 16 (their barrier) + the staging tiles.
** Elsewhere (K past BN, weights too large, pw3, tap) they are streamed:
** no define, the streamed layout's size. */
static void test_pw_resident(void) {
  ct_gen_limits lim = h200();
  static const struct {
    const char *spec, *name;
    int fp32, wres;
  } cases[] = {
    {"n=32,c=256,h=56,w=56,k=64,r=1,s=1", "pwq:BM=64,BN=64,BK=32,STAGES=8", 0, 8},
    {"n=32,c=256,h=56,w=56,k=64,r=1,s=1", "pwqe:BM=64,BN=64,BK=32,STAGES=8", 0, 8},
    {"n=32,c=256,h=56,w=56,k=64,r=1,s=1", "pw:BM=128,BN=64,BK=32,STAGES=8", 0, 8},
    {"n=32,c=256,h=56,w=56,k=128,r=1,s=1", "pwq:BM=64,BN=128,BK=32,STAGES=8", 0, 8},
    {"n=16,c=64,h=1024,w=1024,k=128,r=1,s=1", "pwe:BM=128,BN=128,BK=32,STAGES=3", 0, 2},
    {"n=3,c=130,h=12,w=30,k=70,r=1,s=1", "pw:BM=64,BN=128,BK=32,STAGES=6", 0, 5},
    {"n=3,c=130,h=12,w=30,k=70,r=1,s=1", "pw:BM=64,BN=64,BK=32,STAGES=8", 0, 0},   /* K > BN */
    {"n=32,c=1024,h=14,w=14,k=256,r=1,s=1", "pw:BM=128,BN=256,BK=32,STAGES=4", 0, 0}, /* 1 MiB */
    {"n=32,c=256,h=56,w=56,k=64,r=1,s=1", "pw3:BM=128,BN=64,BK=32,STAGES=6,KC=4", 1, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    ct_problem p;
    ASSERT_EQ_INT(parse(cases[i].spec, cases[i].fp32 ? CT_PREC_FP32 : CT_PREC_TF32, &p), 0);
    ct_gen_variant v;
    const ct_status rc = ct_gen_variant_from_name(&p, &lim, cases[i].name, &v);
    if (rc != CT_OK) fprintf(stderr, "%s: %s not offered\n", cases[i].spec, cases[i].name);
    ASSERT_EQ_INT(rc, CT_OK);
    char *src = NULL;
    ASSERT_EQ_INT(ct_gen_source(&p, &v, &src), CT_OK);
    /* The template's default line, and the plan's before it where held. */
    int lines = 0;
    for (const char *q = src; (q = strstr(q, "#define CT_GM_WRES ")) != NULL; q++) lines++;
    char line[40];
    snprintf(line, sizeof line, "#define CT_GM_WRES %d\n", cases[i].wres);
    ASSERT_EQ_INT(lines, cases[i].wres > 0 ? 2 : 1);
    if (cases[i].wres > 0) ASSERT_TRUE(strstr(src, line) != NULL);
    free(src);
    const int64_t bm = v.values[0], bn = v.values[1], bk = v.values[2], stages = v.values[3];
    const int parts = cases[i].fp32 ? 2 : 1;
    const int64_t staging = strncmp(cases[i].name, "pwqe:", 5) == 0 ? 2
                            : strncmp(cases[i].name, "pwe:", 4) == 0 ? 1
                                                                      : 0;
    const int64_t stage = (bm + (cases[i].wres > 0 ? 0 : parts * bn)) * bk * 4;
    const int64_t held = cases[i].wres > 0 ? cases[i].wres * bn * bk * 4 + 16 : 0;
    const int64_t smem = 1024 + stages * (stage + 16) + held + staging * bn * (bm + 4) * 4;
    ASSERT_EQ_INT((int64_t)v.kernels[v.n_kernels - 1].smem, smem);
    ASSERT_TRUE(smem <= lim.max_smem_per_block);
  }
}

/* Family tap's x boxes (ct_gm.cuh): for BM = 64 and 128, BK = 8, 16 and
** 32 and BQ = 16 and 32, ct_gm_tap_pixel (row g + 8 h of warp `warp` of
** consumer c) is a bijection onto the tile's pixels, consumer c's rows
** its pixels 64 c .. 64 c + 63; ct_gm_tap_smem (channel, pixel) is TMA's
** dense box [BK][32 / BQ][BQ + 4] at pixel i's row i / BQ and column i mod
** BQ, box px / 32 a box's bytes further (boxes on 128 bytes, TMA's
** destinations); a warp's 32 scalar reads of one fragment register
** hit the 32 banks once at every shift 0 .. 3; and ct_gm_tap_window
** starts every window, negative columns too, on a multiple of 4 at most 3
** columns before it. */
static void check_tap_layout(void) {
  for (int bm = 64; bm <= 128; bm += 64)
    for (int bk = 8; bk <= 32; bk *= 2)
      for (int bq = 16; bq <= 32; bq *= 2) {
        const int box = bk * CT_GM_TAP_PITCH(bq);
        ASSERT_EQ_INT((box * 4) % 128, 0); /* TMA's shared-memory destinations */
        int seen[128] = {0};
        for (int c = 0; c < bm / 64; c++)
          for (int warp = 0; warp < 4; warp++)
            for (int g = 0; g < 8; g++)
              for (int h = 0; h < 2; h++) {
                const int px = ct_gm_tap_pixel(c, warp, g, h);
                ASSERT_TRUE(px >= 0 && px < bm && px / 64 == c);
                seen[px]++;
              }
        for (int px = 0; px < bm; px++) ASSERT_EQ_INT(seen[px], 1);
        for (int cl = 0; cl < bk; cl++)
          for (int px = 0; px < bm; px++) {
            const int i = px % 32, off = ct_gm_tap_smem(bk, bq, cl, px);
            ASSERT_EQ_INT(off, px / 32 * box + (cl * (32 / bq) + i / bq) * (bq + 4) + i % bq);
          }
        for (int sigma = 0; sigma < 4; sigma++)
          for (int c = 0; c < bm / 64; c++)
            for (int warp = 0; warp < 4; warp++)
              for (int j = 0; j < bk / 8; j++)
                for (int reg = 0; reg < 4; reg++) { /* rows g + 8 (reg % 2), channel t + 4 (reg / 2) */
                  int banks[32] = {0};
                  for (int lane = 0; lane < 32; lane++) {
                    const int g = lane / 4, t = lane % 4;
                    const int px = ct_gm_tap_pixel(c, warp, g, reg % 2);
                    banks[(ct_gm_tap_smem(bk, bq, 8 * j + t + 4 * (reg / 2), px) + sigma) % 32]++;
                  }
                  for (int i = 0; i < 32; i++) ASSERT_EQ_INT(banks[i], 1);
                }
      }
  for (int col = -70; col <= 70; col++) {
    int start;
    const int sigma = ct_gm_tap_window(col, &start);
    ASSERT_TRUE(start % 4 == 0 && sigma >= 0 && sigma <= 3 && start + sigma == col);
  }
}

/* TMA's tiled load of map m (rank 4) from start[4] into a box, emulated:
** the element at float offset o of the box (dimension 0 fastest; along
** dimension i box[i] / elem_strides[i] elements, elem_strides[i] apart)
** is the tensor's element at start + (its index times the stride), as a
** linear index over m's dims, or -1 where that lies outside them (TMA's
** zero fill). */
static int64_t tma_box_element(const ct_gen_map *m, const int64_t start[4], int64_t o) {
  int64_t lin = 0, scale = 1;
  for (int i = 0; i < 4; i++) {
    const int64_t es = m->elem_strides[i] ? m->elem_strides[i] : 1;
    const int64_t n = (m->box[i] + es - 1) / es, k = o % n;
    o /= n;
    const int64_t c = start[i] + k * (i == 0 ? 1 : es);
    if (c < 0 || c >= (int64_t)m->dims[i]) return -1;
    lin += c * scale;
    scale *= (int64_t)m->dims[i];
  }
  return lin;
}

/* What gm_pw (tap, tap3) reads for u on problem p, replayed on the CPU
** from u's own plan (map 0, kargs) with the kernel's arithmetic (the box
** starts through ct_gm_tap_window, the reads through ct_gm_tap_pixel,
** ct_gm_tap_smem and sigma, the flat form's wrap mask), for the first and
** last tiles, every tap and the first channel block: each A element must
** be x at the tap's input pixel (a linear index over x's NCHW), or zero
** where that lies in the padding or past C.  Checks too that the boxes'
** elements are the stage's A bytes (the kernel's transaction count). */
static void check_tap_reads(const ct_problem *p, const ct_gen_variant *u, int fp32) {
  const int bm = u->values[0], bk = u->values[2], bq = u->values[fp32 ? 5 : 4];
  const int bh = 32 / bq;
  const ct_gen_map *m = &u->maps[0];
  const int flat = m->dims[3] == 1 && m->dims[2] == (uint64_t)p->n;
  int64_t box_elems = 1;
  for (int i = 0; i < 4; i++) {
    const int64_t es = m->elem_strides[i] ? m->elem_strides[i] : 1;
    box_elems *= (m->box[i] + es - 1) / es;
  }
  ASSERT_EQ_INT(bm / 32 * box_elems * 4, CT_GM_TAP_A_BYTES(bm, bk, bq));
  const int64_t *a = u->kargs;
  const int P = (int)a[CT_GM_A_P], Q = (int)a[CT_GM_A_Q], W = (int)p->w, H = (int)p->h;
  const int tiles_m = (int)a[CT_GM_A_TILES_M];
  const int tms[2] = {0, tiles_m - 1};
  int bad = 0;
  for (int ti = 0; ti < 2 && !bad; ti++) {
    const int tm = tms[ti];
    int img, p0, q0;
    if (flat) {
      const int mt = (P * W + bm - 1) / bm;
      img = tm / mt, p0 = (tm - img * mt) * bm, q0 = 0;
    } else {
      ct_gm_tap_tile(tm, P, Q, bm / 32 * bh, bq, &img, &p0, &q0);
    }
    for (int r = 0; r < p->r; r++)
      for (int s = 0; s < p->s; s++) {
        const int shift = (flat ? (r * (int)p->dil_h - (int)p->pad_h) * W : 0) +
                          s * (int)p->dil_w - (int)p->pad_w;
        int col;
        for (int c = 0; c < bm / 64; c++)
          for (int warp = 0; warp < 4; warp++)
            for (int g = 0; g < 8; g++)
              for (int h = 0; h < 2; h++) {
                const int px = ct_gm_tap_pixel(c, warp, g, h), i = px / 32, pi = px % 32;
                int64_t start[4];
                const int sigma = ct_gm_tap_window((flat ? p0 + 32 * i : q0) + shift, &col);
                if (flat) {
                  start[0] = col, start[1] = 0, start[2] = img, start[3] = 0;
                } else {
                  start[0] = col;
                  start[1] = (int64_t)(p0 + i * bh) * p->stride_h - p->pad_h + r * p->dil_h;
                  start[2] = 0, start[3] = img;
                }
                /* The output pixel and its input pixel at tap (r, s). */
                int op, oq;
                if (flat) {
                  op = (p0 + px) / W, oq = (p0 + px) % W;
                } else {
                  op = p0 + i * bh + pi / bq, oq = q0 + pi % bq;
                }
                const int64_t ih = (int64_t)op * p->stride_h - p->pad_h + r * p->dil_h;
                const int64_t iw = oq - p->pad_w + s * (int64_t)p->dil_w;
                const int masked = flat && (iw < 0 || iw >= W);
                for (int cl = 0; cl < bk && !bad; cl++) {
                  const int64_t off = ct_gm_tap_smem(bk, bq, cl, px) - px / 32 * bk *
                                      CT_GM_TAP_PITCH(bq) + sigma;
                  const int64_t got = masked ? -1 : tma_box_element(m, start, off);
                  const int in = cl < p->c && ih >= 0 && ih < H && iw >= 0 && iw < W;
                  /* NCHW index of (img, cl, ih, iw); map 0 linearises the
                  ** same order ({W, H, C, N} or {HW, C, N, 1}). */
                  const int64_t want = in ? ((img * p->c + cl) * H + ih) * W + iw : -1;
                  if (got != want) {
                    fprintf(stderr, "%s: tile %d tap (%d, %d) pixel %d channel %d: read %lld, "
                                    "want %lld\n", u->name, tm, r, s, px, cl,
                            (long long)got, (long long)want);
                    bad = 1;
                  }
                }
              }
      }
  }
  ASSERT_EQ_INT(bad, 0);
}

/* Families tap and tap3: any filter of an NCHW problem with horizontal
** stride 1 and W % 4 = 0, x read in place.  ct_gm_tap_tile puts every
** output pixel in exactly one tile's box rows (rows p0 .. p0 + BM/32 - 1,
** columns q0 .. q0 + 31); the plan maps x as {W, H, C, N} with boxes {36,
** 1, BK, 1}, unswizzled (check_tap_layout: 4 columns for a window's start
** on a 16-byte boundary), and the weights gm_pack writes, [KP][R][S][CP]
** ({CP, S, R, KP}, tap3 hi and lo), passes the problem's strides, padding
** and dilations and counts R S ceil(CP / BK) k-tiles; tap3 keeps BN = 64.
** BQ = 16 (boxes {20, 2 SH, BK, 1}): the plan offers it only
** where it leaves fewer columns dead than 32 (12 wide).  Where both
** strides are 1, H W % 4 = 0 and Q <= W, any W (14, 22, 30 wide), the plan takes
** the flattened plane (CT_GM_PW 3: pw's map, the output W wide, BQ = 32
** only); neither where W % 4 != 0 with a vertical stride, nor H W = 49.
** Offered for ResNet-50's and KernelBench's stride-1 3x3 and larger
** filters, dilated and padded ones and a vertical stride; declined for a
** horizontal stride, W % 4 != 0, NHWC, where pw takes the problem (a
** plain 1x1), and where most of a 32-column segment would be dead.  For
** every variant offered, check_tap_reads replays its loads and reads. */
static void test_tap_plan(void) {
  static const int sizes[][2] = {{1, 1}, {7, 5}, {28, 28}, {56, 56}, {33, 64}, {5, 100}, {14, 14}};
  for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++)
    for (int bq = 16; bq <= 32; bq *= 2)
      for (int rows = 2; rows <= 8; rows *= 2) {
        const int P = sizes[si][0], Q = sizes[si][1], N = 3;
        const int per = (P + rows - 1) / rows * ((Q + bq - 1) / bq);
        char *seen = calloc((size_t)N * P * Q, 1);
        ASSERT_TRUE(seen != NULL);
        for (int tm = 0; tm < N * per; tm++) {
          int img, p0, q0;
          ct_gm_tap_tile(tm, P, Q, rows, bq, &img, &p0, &q0);
          ASSERT_TRUE(img >= 0 && img < N && p0 >= 0 && p0 < P && q0 >= 0 && q0 < Q);
          ASSERT_TRUE(p0 % rows == 0 && q0 % bq == 0);
          for (int i = 0; i < rows; i++)
            for (int j = 0; j < bq; j++)
              if (p0 + i < P && q0 + j < Q) seen[((size_t)img * P + p0 + i) * Q + q0 + j]++;
        }
        for (int i = 0; i < N * P * Q; i++) ASSERT_EQ_INT(seen[i], 1);
        free(seen);
      }

  check_tap_layout();

  ct_gen_limits lim = h200();
  static const struct { const char *spec; int offered; } cases[] = {
    {"n=32,c=64,h=56,w=56,k=64,r=3,s=3,pad=1", 1},
    {"n=8,c=64,h=512,w=1024,k=128,r=3,s=3,bias=0", 1},
    {"n=8,c=32,h=512,w=512,k=64,r=5,s=9,pad=2x4,dil=2x3,bias=0", 1},
    {"n=32,c=128,h=28,w=28,k=128,r=3,s=3,pad=1,act=relu", 1},
    {"n=4,c=40,h=40,w=36,k=70,r=3,s=5,stride=2x1,pad=1x2", 1},
    {"n=32,c=64,h=56,w=56,k=64,r=1,s=1,pad=1", 1},          /* a padded 1x1: Q > W, rows */
    {"n=2,c=16,h=30,w=40,k=40,r=1,s=1,pad=1", 1},           /* the same, x 150 KiB */
    {"n=2,c=16,h=30,w=42,k=40,r=1,s=1,pad=1", 0},           /* Q > W, W % 4 != 0: neither */
    {"n=32,c=64,h=56,w=56,k=64,r=1,s=1", 0},                /* pw's */
    {"n=32,c=128,h=56,w=56,k=128,r=3,s=3,stride=2,pad=1", 0}, /* stride along W */
    {"n=32,c=64,h=30,w=30,k=64,r=3,s=3,pad=1", 1},          /* W % 4 = 2: flat */
    {"n=32,c=64,h=30,w=30,k=64,r=3,s=3,pad=1,stride=2x1", 0}, /* neither */
    {"n=3,c=40,h=18,w=22,k=33,r=3,s=5,pad=0x1,dil=1x2", 1}, /* flat, Q = 16 of 22 */
    {"n=32,c=512,h=7,w=7,k=512,r=3,s=3,pad=1", 0},          /* H W = 49 */
    {"n=32,c=256,h=16,w=16,k=256,r=3,s=3,pad=1", 1},        /* flat */
    {"n=32,c=256,h=14,w=14,k=256,r=3,s=3,pad=1", 1},        /* W % 4 = 2: flat */
    {"n=32,c=256,h=12,w=12,k=256,r=3,s=3,pad=1,stride=2x1", 1}, /* 16 x 2 boxes, rows 2 apart */
    {"n=16,c=64,h=8,w=4,k=64,r=3,s=3,pad=1,stride=2x1", 0}, /* 4 of 16 columns live */
    {"n=32,c=64,h=56,w=56,k=64,r=3,s=3,pad=1,layout=nhwc", 0},
    {"n=1,c=8,h=16,w=16,k=8,r=3,s=3,pad=1", 0},             /* x: 8 KiB */
  };
  for (size_t i = 0; i < 2 * (sizeof cases / sizeof cases[0]); i++) {
    const int fp32 = i % 2, parts = fp32 ? 2 : 1;
    ct_problem p;
    ASSERT_EQ_INT(parse(cases[i / 2].spec, fp32 ? CT_PREC_FP32 : CT_PREC_TF32, &p), 0);
    ct_gen_variant *v = NULL;
    size_t n = 0, n_tap = 0;
    ASSERT_EQ_INT(ct_gen_enumerate(&p, &lim, &v, &n), CT_OK);
    int64_t P, Q;
    ct_problem_output(&p, &P, &Q);
    for (size_t j = 0; j < n; j++) {
      if (strcmp(v[j].family->name, fp32 ? "tap3" : "tap") != 0) continue;
      n_tap++;
      const ct_gen_variant *u = &v[j];
      const int64_t cp = (p.c + 3) / 4 * 4, rs = p.r * p.s;
      const int64_t bm = u->values[0], bn = u->values[1], bk = u->values[2];
      const int64_t bq = u->values[fp32 ? 5 : 4], bh = 32 / bq, rows = bm / 32 * bh;
      const int64_t kp = u->kargs[CT_GM_A_KP];
      const int flat = p.stride_h == 1 && p.stride_w == 1 && (p.h * p.w) % 4 == 0 && Q <= p.w;
      /* BQ = 16 only where 32-column segments leave more columns dead. */
      ASSERT_TRUE(bq == 32 || (!flat && bq == 16 && (Q + 15) / 16 * 16 < (Q + 31) / 32 * 32));
      const ct_gen_map *mx = &u->maps[0], *mw = &u->maps[1];
      ASSERT_EQ_INT(u->n_kernels, 2);
      ASSERT_EQ_STR(u->kernels[0].name, "gm_pack");
      ASSERT_EQ_INT(u->kernels[0].grid[0], kp * rs);
      ASSERT_EQ_STR(u->kernels[1].name, "gm_pw");
      char *src = NULL;
      ASSERT_EQ_INT(ct_gen_source(&p, u, &src), CT_OK);
      const int pw2 = strstr(src, flat ? "\n#define CT_GM_PW 3\n" : "\n#define CT_GM_PW 2\n") != NULL;
      free(src);
      ASSERT_TRUE(pw2);
      ASSERT_TRUE(mx->kind == CT_GEN_MAP_TILED && mx->buffer == CT_GEN_BUF_X && mx->tf32 == !fp32);
      const uint64_t hw = (uint64_t)(p.h * p.w);
      if (flat) { /* pw's map: {HW, C, N, 1}, boxes of 36 pixels */
        ASSERT_TRUE(mx->dims[0] == hw && mx->dims[1] == (uint64_t)p.c &&
                    mx->dims[2] == (uint64_t)p.n && mx->dims[3] == 1);
        ASSERT_TRUE(mx->strides[0] == hw * 4 && mx->strides[1] == hw * 4 * (uint64_t)p.c);
        ASSERT_TRUE(mx->box[0] == 36 && mx->box[1] == (uint32_t)bk && mx->swizzle == 0);
      } else {
        ASSERT_TRUE(mx->dims[0] == (uint64_t)p.w && mx->dims[1] == (uint64_t)p.h &&
                    mx->dims[2] == (uint64_t)p.c && mx->dims[3] == (uint64_t)p.n);
        ASSERT_TRUE(mx->strides[0] == (uint64_t)p.w * 4 && mx->strides[1] == hw * 4 &&
                    mx->strides[2] == hw * 4 * (uint64_t)p.c);
        ASSERT_TRUE(mx->box[0] == (uint32_t)bq + 4 && mx->box[2] == (uint32_t)bk && mx->box[3] == 1 &&
                    mx->swizzle == 0);
        /* A box's rows: one, or two stride_h apart (the traversal stride). */
        if (bh == 1)
          ASSERT_TRUE(mx->box[1] == 1 && mx->elem_strides[1] == 1);
        else
          ASSERT_TRUE(mx->box[1] == (uint32_t)(2 * p.stride_h) &&
                      mx->elem_strides[1] == (uint32_t)p.stride_h);
      }
      ASSERT_TRUE(mw->kind == CT_GEN_MAP_TILED && mw->buffer == CT_GEN_BUF_WS && !mw->tf32);
      ASSERT_TRUE(mw->dims[0] == (uint64_t)cp && mw->dims[1] == (uint64_t)p.s &&
                  mw->dims[2] == (uint64_t)p.r && mw->dims[3] == (uint64_t)(parts * kp) && kp >= p.k);
      ASSERT_TRUE(mw->strides[0] == (uint64_t)cp * 4 && mw->strides[1] == (uint64_t)(p.s * cp * 4) &&
                  mw->strides[2] == (uint64_t)(rs * cp * 4));
      ASSERT_TRUE(mw->box[0] == (uint32_t)bk && mw->box[3] == (uint32_t)bn &&
                  (uint64_t)kp * rs * cp * 4 >= CT_GM_MIN_MAP_BYTES);
      ASSERT_TRUE(u->workspace_bytes == (size_t)(parts * kp * rs * cp * 4));
      ASSERT_TRUE(!fp32 || bn == 64);
      ASSERT_EQ_INT(u->kargs[CT_GM_A_P], P);
      ASSERT_EQ_INT(u->kargs[CT_GM_A_Q], Q);
      ASSERT_EQ_INT(u->kargs[CT_GM_A_SH], p.stride_h);
      ASSERT_EQ_INT(u->kargs[CT_GM_A_PH], p.pad_h);
      ASSERT_EQ_INT(u->kargs[CT_GM_A_PW], p.pad_w);
      ASSERT_EQ_INT(u->kargs[CT_GM_A_DH], p.dil_h);
      ASSERT_EQ_INT(u->kargs[CT_GM_A_DW], p.dil_w);
      if (flat) /* the output W wide, cut in BM-pixel runs */
        ASSERT_EQ_INT(u->kargs[CT_GM_A_TILES_M], p.n * ((P * p.w + bm - 1) / bm));
      else
        ASSERT_EQ_INT(u->kargs[CT_GM_A_TILES_M], p.n * ((P + rows - 1) / rows) * ((Q + bq - 1) / bq));
      ASSERT_EQ_INT(u->kargs[CT_GM_A_NCB], (cp + bk - 1) / bk);
      check_tap_reads(&p, u, fp32);
    }
    free(v);
    if ((n_tap > 0) != cases[i / 2].offered)
      fprintf(stderr, "%s: %zu %s variants\n", cases[i / 2].spec, n_tap, fp32 ? "tap3" : "tap");
    ASSERT_EQ_INT(n_tap > 0, cases[i / 2].offered);
  }
}

/* Families gmk and gmk3: the reduction split.  The plan cuts each tile's
** k-tiles into SPLITS runs of KTPER, none empty, walks TILES x SPLITS
** units, keeps the partials [SPLITS][M][K] after the layout copies (or
** alone, when gm's maps read the caller's tensors) and ends with
** gm_reduce over M K elements; the runs, started with ct_gm_ktile and
** stepped as gm_conv steps, visit every (r, s, cb) of gm's order once.
** Offered where gm leaves SMs idle (ResNet-50's last layers at batch 1),
** not where its tiles fill them. */
static void test_gmk_split(void) {
  ct_gen_limits lim = h200();
  static const char *const specs[] = {
    "n=1,c=512,h=7,w=7,k=512,r=3,s=3,pad=1",
    "n=1,c=256,h=14,w=14,k=256,r=3,s=3,pad=1,prec=fp32",
    "n=1,c=512,h=7,w=7,k=512,r=3,s=3,pad=1,layout=nhwc",
    "n=2,c=30,h=9,w=11,k=70,r=5,s=3,stride=2,pad=2x1,act=relu",
  };
  for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
    ct_problem p;
    char err[256];
    ASSERT_EQ_INT(ct_problem_parse(specs[i], &p, err, sizeof err), CT_OK);
    const char *fam = p.precision == CT_PREC_FP32 ? "gmk3" : "gmk";
    ct_gen_variant *v = NULL;
    size_t n = 0, n_gmk = 0;
    ASSERT_EQ_INT(ct_gen_enumerate(&p, &lim, &v, &n), CT_OK);
    for (size_t j = 0; j < n; j++) {
      if (strcmp(v[j].family->name, fam) != 0) continue;
      n_gmk++;
      const ct_gen_variant *u = &v[j];
      const int64_t *a = u->kargs;
      const int64_t ncb = a[CT_GM_A_NCB], ktiles = p.r * p.s * ncb, M = a[CT_GM_A_M];
      const int64_t splits = a[CT_GM_A_SPLITS], per = a[CT_GM_A_KTPER];
      const int64_t tiles = a[CT_GM_A_TILES_M] * a[CT_GM_A_TILES_N];
      const int caller = u->maps[0].buffer == CT_GEN_BUF_X;
      ASSERT_TRUE(splits >= 2 && per >= 1 && splits * per >= ktiles && (splits - 1) * per < ktiles);
      ASSERT_EQ_INT(u->n_kernels, caller ? 2 : 4);
      ASSERT_EQ_STR(u->kernels[u->n_kernels - 2].name, "gm_conv");
      ASSERT_EQ_STR(u->kernels[u->n_kernels - 1].name, "gm_reduce");
      const int64_t units = tiles * splits;
      ASSERT_EQ_INT(u->kernels[u->n_kernels - 2].grid[0], units < 132 ? units : 132);
      ASSERT_EQ_INT(u->kernels[u->n_kernels - 1].grid[0],
                    (M * p.k + CT_GM_REDUCE_THREADS - 1) / CT_GM_REDUCE_THREADS);
      const int64_t poff = a[CT_GM_A_POFF];
      ASSERT_TRUE(caller ? poff == 0
                         : poff % 256 == 0 && poff * 4 >= (int64_t)u->maps[1].offset + 4 *
                               (int64_t)(u->maps[1].dims[0] * u->maps[1].dims[1] *
                                         u->maps[1].dims[2] * u->maps[1].dims[3]));
      ASSERT_TRUE((int64_t)u->workspace_bytes == (poff + splits * M * p.k) * 4);
      /* The runs, in gm_conv's stepping, cover gm's order once. */
      int64_t next = 0;
      for (int64_t sp = 0; sp < splits; sp++) {
        const int64_t kt0 = sp * per, kt1 = kt0 + per < ktiles ? kt0 + per : ktiles;
        int r, s, cb;
        ct_gm_ktile((int)kt0, (int)ncb, (int)p.s, &r, &s, &cb);
        for (int64_t kt = kt0; kt < kt1; kt++, next++) {
          ASSERT_EQ_INT((r * p.s + s) * ncb + cb, next);
          if (++cb == ncb) {
            cb = 0;
            if (++s == p.s) {
              s = 0;
              ++r;
            }
          }
        }
      }
      ASSERT_EQ_INT(next, ktiles);
    }
    free(v);
    if (n_gmk == 0) fprintf(stderr, "%s: no %s variant\n", specs[i], fam);
    ASSERT_TRUE(n_gmk > 0);
  }
  ct_problem full;
  ASSERT_EQ_INT(parse("n=32,c=64,h=56,w=56,k=64,r=3,s=3,pad=1", CT_PREC_TF32, &full), 0);
  ct_gen_variant *v = NULL;
  size_t n = 0, n_gmk = 0;
  ASSERT_EQ_INT(ct_gen_enumerate(&full, &lim, &v, &n), CT_OK);
  for (size_t j = 0; j < n; j++) n_gmk += strcmp(v[j].family->name, "gmk") == 0;
  free(v);
  ASSERT_EQ_INT(n_gmk, 0);
}

/* Family pwq: pw's kernel with two consumers on 64-row tiles in turn.
** A pwq variant is its pw twin at BM = 64 (the same parameters) but for
** gm_pw's block, three warpgroups instead of two, and the source's
** CT_GM_PING; the same grid, tiles, workspace and maps.  BM = 128 is not
** among its points; it is offered where its tiles give every consumer of
** every SM two or more (not on a batch-1 layer that pw takes), and at
** tf32 only (pw3 serves fp32). */
static void test_pwq_pingpong(void) {
  ct_gen_limits lim = h200();
  static const char *const specs[] = {
    "n=32,c=64,h=56,w=56,k=256,r=1,s=1",
    "n=16,c=130,h=36,w=36,k=70,r=1,s=1,act=relu",
  };
  for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
    ct_problem p;
    char err[256];
    ASSERT_EQ_INT(ct_problem_parse(specs[i], &p, err, sizeof err), CT_OK);
    const char *fam = "pwq";
    ct_gen_variant *v = NULL, *all = NULL;
    size_t n = 0, n_all = 0, n_pwq = 0;
    ASSERT_EQ_INT(ct_gen_enumerate(&p, &lim, &v, &n), CT_OK);
    ASSERT_EQ_INT(ct_gen_enumerate_all(&p, &lim, &all, &n_all), CT_OK);
    for (size_t j = 0; j < n; j++) {
      if (strcmp(v[j].family->name, fam) != 0) continue;
      n_pwq++;
      const ct_gen_variant *q = &v[j];
      char twin_name[sizeof q->name + 1];
      snprintf(twin_name, sizeof twin_name, "%.2s%s", q->name, q->name + 3); /* pwq: -> pw: */
      ct_gen_variant t; /* the twin: a point of gm's, pruned or not */
      size_t k_twin = n_all;
      for (size_t k = 0; k < n_all; k++)
        if (strcmp(all[k].name, twin_name) == 0) k_twin = k;
      ASSERT_TRUE(k_twin < n_all);
      t = all[k_twin];
      ASSERT_EQ_INT(q->n_kernels, t.n_kernels);
      for (int k = 0; k < q->n_kernels; k++) {
        const ct_gen_launch *a = &q->kernels[k], *b = &t.kernels[k];
        ASSERT_EQ_STR(a->name, b->name);
        ASSERT_EQ_INT(a->grid[0], b->grid[0]);
        ASSERT_EQ_INT(a->smem, b->smem);
        const int main_kernel = strcmp(a->name, "gm_pw") == 0;
        ASSERT_EQ_INT(a->block[0], main_kernel ? 384u : b->block[0]);
      }
      ASSERT_EQ_INT(t.kernels[t.n_kernels - 1].block[0], 256);
      ASSERT_TRUE(memcmp(q->kargs, t.kargs, sizeof q->kargs) == 0);
      ASSERT_TRUE(memcmp(q->maps, t.maps, sizeof q->maps) == 0);
      ASSERT_TRUE(q->workspace_bytes == t.workspace_bytes);
      char *qs = NULL, *ts = NULL;
      ASSERT_EQ_INT(ct_gen_source(&p, q, &qs), CT_OK);
      ASSERT_EQ_INT(ct_gen_source(&p, &t, &ts), CT_OK);
      ASSERT_TRUE(strstr(qs, "#define CT_GM_PING 1") != NULL);
      ASSERT_TRUE(strstr(ts, "#define CT_GM_PING 1") == NULL);
      free(qs);
      free(ts);
      char bm128[sizeof q->name + 1];
      snprintf(bm128, sizeof bm128, "%s", q->name);
      char *bm = strstr(bm128, "BM=64");
      ASSERT_TRUE(bm != NULL);
      memmove(bm + 6, bm + 5, strlen(bm + 5) + 1);
      memcpy(bm, "BM=128", 6);
      ASSERT_EQ_INT(ct_gen_variant_from_name(&p, &lim, bm128, &t), CT_ERR_UNSUPPORTED);
    }
    free(v);
    free(all);
    if (n_pwq == 0) fprintf(stderr, "%s: no %s variant\n", specs[i], fam);
    ASSERT_TRUE(n_pwq > 0);
  }
  /* pw's problems without pwq: 25 128-pixel tiles; fp32 (pw3). */
  static const char *const without[] = {
    "n=1,c=256,h=56,w=56,k=64,r=1,s=1",
    "n=32,c=64,h=56,w=56,k=256,r=1,s=1,prec=fp32",
  };
  for (size_t i = 0; i < sizeof without / sizeof without[0]; i++) {
    ct_problem p;
    char err[256];
    ASSERT_EQ_INT(ct_problem_parse(without[i], &p, err, sizeof err), CT_OK);
    ct_gen_variant *v = NULL;
    size_t n = 0, n_pwq = 0, n_pw = 0;
    ASSERT_EQ_INT(ct_gen_enumerate(&p, &lim, &v, &n), CT_OK);
    for (size_t j = 0; j < n; j++) {
      n_pwq += strcmp(v[j].family->name, "pwq") == 0;
      n_pw += strncmp(v[j].family->name, "pw", 2) == 0 && strcmp(v[j].family->name, "pwq") != 0;
    }
    free(v);
    ASSERT_TRUE(n_pw > 0);
    ASSERT_EQ_INT(n_pwq, 0);
  }
}

/* pwq's ring protocol (ct_gm_ping_*), run as the kernel runs it, one CTA:
** a producer filling stage p mod STAGES once its previous use is released
** (a parity wait on the empty barrier), two consumers taking units i =
** c, c + 2, ... (ring index ct_gm_ping_ring), each waiting on a stage's
** full barrier by parity as mbarrier.try_wait.parity does (it passes when
** the barrier's phase parity differs from the one asked), releasing a
** stage one k-tile late (a wgmma kept in flight) and the last at the
** unit's end, their mainloops in turn (ct_gm_ping_waits, _passes), every
** step in a random order of the actors.  Returns 1 when every wait
** passed on the fill it was meant for and all units ended, 0 on a wait
** that passed early (a fill two phases behind) or a deadlock. */
static int pwq_ring_run(int stages, int nk, int units, int turns, unsigned seed) {
  enum { MAXS = 16, MAXU = 16 };
  int fill[MAXS] = {0}, rel[MAXS] = {0}, passed[MAXU] = {0};
  const int total = units * nk;
  int p = 0;                          /* the producer's next fill */
  int i[2] = {0, 1}, kt[2] = {0, 0};  /* each consumer's unit, k-tile */
  int in_loop[2] = {0, 0}, prev[2] = {-1, -1};
  for (int step = 0; step < 100000; step++) {
    int can[3], n_can = 0;
    if (p < total) {
      const int st = p % stages, ph = (p / stages) & 1;
      if ((rel[st] & 1) != (ph ^ 1)) can[n_can++] = 2; /* the empty wait passes */
    }
    for (int c = 0; c < 2; c++) {
      if (i[c] >= units) continue;
      if (!in_loop[c]) {
        if (!turns || !ct_gm_ping_waits(i[c]) || passed[i[c] - 1]) can[n_can++] = c;
      } else {
        const unsigned r = ct_gm_ping_ring(i[c], nk) + (unsigned)kt[c];
        const int st = (int)(r % (unsigned)stages), ph = (int)((r / (unsigned)stages) & 1u);
        if ((fill[st] & 1) != ph) can[n_can++] = c; /* the full wait passes */
      }
    }
    if (n_can == 0) return p == total && i[0] >= units && i[1] >= units;
    seed = seed * 1103515245u + 12345u;
    const int a = can[(seed >> 16) % (unsigned)n_can];
    if (a == 2) {
      const int st = p % stages;
      if (rel[st] != p / stages) return 0; /* the producer ran a fill ahead */
      fill[st]++;
      p++;
      continue;
    }
    const int c = a;
    if (!in_loop[c]) {
      in_loop[c] = 1;
      kt[c] = 0;
      prev[c] = -1;
      continue;
    }
    const unsigned r = ct_gm_ping_ring(i[c], nk) + (unsigned)kt[c];
    const int st = (int)(r % (unsigned)stages);
    if (fill[st] != (int)(r / (unsigned)stages) + 1) return 0; /* passed on another fill */
    if (prev[c] >= 0) rel[prev[c]]++;
    prev[c] = st;
    if (++kt[c] == nk) {
      rel[st]++;
      if (ct_gm_ping_passes(i[c], 0, 1, units)) passed[i[c]] = 1;
      in_loop[c] = 0;
      i[c] += 2;
    }
  }
  return 0;
}

static void test_pwq_ring_protocol(void) {
  static const int stage_list[] = {2, 3, 4, 6, 8}, nk_list[] = {1, 2, 3, 5, 9, 16},
                   unit_list[] = {1, 2, 3, 4, 7, 12};
  int aliased = 0;
  for (size_t a = 0; a < sizeof stage_list / sizeof *stage_list; a++)
    for (size_t b = 0; b < sizeof nk_list / sizeof *nk_list; b++)
      for (size_t d = 0; d < sizeof unit_list / sizeof *unit_list; d++)
        for (unsigned seed = 1; seed <= 40; seed++) {
          const int st = stage_list[a], nk = nk_list[b], un = unit_list[d];
          if (!pwq_ring_run(st, nk, un, 1, seed)) {
            fprintf(stderr, "pwq ring: STAGES %d, %d k-tiles, %d units, seed %u failed\n", st,
                    nk, un, seed);
            ASSERT_TRUE(0);
          }
          aliased += !pwq_ring_run(st, nk, un, 0, seed);
        }
  /* Without the turns, some order breaks the ring (the first form of the schedule,
  ** which hung on the GPU): the check can fail. */
  ASSERT_TRUE(aliased > 0);
}

/* Family gm3 (3xTF32 on gm's kernel): the workspace holds two copies of
** each operand, so its maps span 2 NP images and 2 KP output channels and
** its workspace is about twice gm's; only fp32 problems get it, only gm
** serves tf32; BN is at most 128 (accumulators and masters in registers)
** and KC a whole number of k-tiles; its source differs from gm's only by
** the split and KC. */
static void test_gm3_layout(void) {
  ct_gen_limits lim = h200();
  ct_problem t, f;
  const char *spec = "n=3,c=260,h=10,w=11,k=200,r=3,s=3,pad=1";
  ASSERT_EQ_INT(parse(spec, CT_PREC_TF32, &t), 0);
  ASSERT_EQ_INT(parse(spec, CT_PREC_FP32, &f), 0);
  ct_gen_variant g1, g3, bad;
  ASSERT_EQ_INT(ct_gen_variant_from_name(&t, &lim, "gm:BM=128,BN=128,BK=32,STAGES=4", &g1),
                CT_OK);
  ASSERT_EQ_INT(ct_gen_variant_from_name(&f, &lim, "gm3:BM=128,BN=128,BK=32,STAGES=3,KC=4", &g3),
                CT_OK);
  ASSERT_EQ_INT(ct_gen_variant_from_name(&f, &lim, "gm:BM=128,BN=128,BK=32,STAGES=4", &bad),
                CT_ERR_UNSUPPORTED);
  ASSERT_EQ_INT(ct_gen_variant_from_name(&t, &lim, "gm3:BM=128,BN=128,BK=32,STAGES=3,KC=4",
                                         &bad), CT_ERR_UNSUPPORTED);
  ASSERT_EQ_INT(ct_gen_variant_from_name(&f, &lim, "gm3:BM=128,BN=256,BK=32,STAGES=2,KC=4",
                                         &bad), CT_ERR_UNSUPPORTED); /* not in the list */
  /* gm_nhwc's channel blocks (32 channels each over an NCHW x) stay within
  ** a grid's y (65535). */
  ct_problem wide;
  ASSERT_EQ_INT(parse("n=1,c=2097124,h=1,w=1,k=1,r=1,s=1", CT_PREC_FP32, &wide), 0);
  ASSERT_EQ_INT(ct_gen_variant_from_name(&wide, &lim, "gm3:BM=64,BN=64,BK=32,STAGES=6,KC=4",
                                         &bad), CT_ERR_UNSUPPORTED);
  ASSERT_EQ_INT(parse("n=1,c=2097120,h=1,w=1,k=1,r=1,s=1", CT_PREC_FP32, &wide), 0);
  ct_gen_variant fits;
  ASSERT_EQ_INT(ct_gen_variant_from_name(&wide, &lim, "gm3:BM=64,BN=64,BK=32,STAGES=6,KC=4",
                                         &fits), CT_OK);
  ASSERT_EQ_INT(fits.kernels[0].grid[1], 65535);
  /* Four stages of 64 KiB do not fit; three do. */
  ASSERT_EQ_INT(ct_gen_variant_from_name(&f, &lim, "gm3:BM=128,BN=128,BK=32,STAGES=4,KC=4",
                                         &bad), CT_ERR_UNSUPPORTED);
  ct_gen_variant k4;
  ASSERT_EQ_INT(ct_gen_variant_from_name(&f, &lim, "gm3:BM=64,BN=64,BK=32,STAGES=4,KC=4", &k4),
                CT_OK);
  ASSERT_EQ_INT(g1.n_maps, 2);
  ASSERT_EQ_INT(g3.n_maps, 2);
  const int64_t np = g1.kargs[16], kp = g1.kargs[17]; /* CT_GM_A_NP, CT_GM_A_KP */
  ASSERT_EQ_INT(np, 3);   /* 3 images of 10 x 11 x 260 floats: 128 KiB already */
  ASSERT_EQ_INT(kp, 200);
  ASSERT_EQ_INT(g3.kargs[16], np);
  ASSERT_EQ_INT(g3.kargs[17], kp);
  ASSERT_EQ_INT(g1.maps[0].dims[3], np);
  ASSERT_EQ_INT(g3.maps[0].dims[3], 2 * np);
  ASSERT_EQ_INT(g1.maps[1].dims[3], kp);
  ASSERT_EQ_INT(g3.maps[1].dims[3], 2 * kp);
  ASSERT_EQ_INT(g3.maps[0].dims[0], 260);
  ASSERT_EQ_INT(g3.maps[0].strides[2], g1.maps[0].strides[2]); /* one image's bytes */
  ASSERT_TRUE(g3.maps[1].offset >= (uint64_t)(2 * np * 10 * 11 * 260 * 4));
  ASSERT_TRUE(g3.workspace_bytes >= g3.maps[1].offset + 2 * kp * 3 * 3 * 260 * 4);
  ASSERT_TRUE(g3.workspace_bytes > 2 * g1.workspace_bytes - 2048);
  ASSERT_EQ_INT(g3.kernels[2].smem, 1024 + 3 * 2 * (128 + 128) * 32 * 4 + 16 * 3);
  char *src = NULL;
  ASSERT_EQ_INT(ct_gen_source(&f, &g3, &src), CT_OK);
  ASSERT_TRUE(strstr(src, "#define CT_GM_SPLIT 1\n") != NULL);
  ASSERT_TRUE(strstr(src, "#define KC 4\n") != NULL);
  free(src);
  ASSERT_EQ_INT(ct_gen_source(&t, &g1, &src), CT_OK);
  ASSERT_TRUE(strstr(src, "#define CT_GM_SPLIT 1\n") == NULL);
  free(src);
}

/* NHWC on the general families: gm with C % 4 = 0 and x and w of at least
** 128 KiB reads the caller's tensors (one kernel, no workspace, TFLOAT32
** maps over x and w with their own dims); with C % 4 != 0, a smaller x or
** at fp32 (gm3's hi and lo copies) the layout pass stays, over the
** workspace, and the source carries the layout either way. */
static void test_gm_nhwc_plans(void) {
  ct_gen_limits lim = h200();
  const char *gm = "gm:BM=128,BN=64,BK=32,STAGES=6";
  ct_problem p;
  ct_gen_variant v;
  /* x and w read in place: w of 161 KiB, and below 128 KiB where BN
  ** divides K and BK C (a 64 x 64 1x1, 16 KiB; a 3x3 over 32 channels,
  ** 72 KiB). */
  static const struct { const char *spec; long long c, k; } in_place[] = {
      {"n=4,c=64,h=15,w=13,k=70,r=3,s=3,pad=1,layout=nhwc", 64, 70},
      {"n=4,c=64,h=15,w=13,k=64,r=1,s=1,layout=nhwc", 64, 64},
      {"n=8,c=32,h=15,w=13,k=64,r=3,s=3,pad=1,layout=nhwc", 32, 64},
  };
  for (size_t i = 0; i < sizeof in_place / sizeof in_place[0]; i++) {
    ASSERT_EQ_INT(parse(in_place[i].spec, CT_PREC_TF32, &p), 0);
    ASSERT_EQ_INT(ct_gen_variant_from_name(&p, &lim, gm, &v), CT_OK);
    ASSERT_EQ_INT(v.n_kernels, 1);
    ASSERT_EQ_STR(v.kernels[0].name, "gm_conv");
    ASSERT_EQ_INT((long long)v.workspace_bytes, 0);
    ASSERT_EQ_INT(v.maps[0].buffer, CT_GEN_BUF_X);
    ASSERT_EQ_INT(v.maps[1].buffer, CT_GEN_BUF_W);
    ASSERT_TRUE(v.maps[0].tf32 && v.maps[1].tf32);
    ASSERT_EQ_INT((long long)v.maps[0].dims[0], in_place[i].c);
    ASSERT_EQ_INT((long long)v.maps[0].dims[3], p.n);
    ASSERT_EQ_INT((long long)v.maps[0].strides[2], 15 * 13 * in_place[i].c * 4);
    ASSERT_EQ_INT((long long)v.maps[1].dims[0], in_place[i].c);
    ASSERT_EQ_INT((long long)v.maps[1].dims[3], in_place[i].k);
    ASSERT_EQ_INT((long long)v.maps[1].offset, 0);
    char *src = NULL;
    ASSERT_EQ_INT(ct_gen_source(&p, &v, &src), CT_OK);
    ASSERT_TRUE(strstr(src, "#define CT_LAYOUT 1\n") != NULL);
    free(src);
  }
  /* The passes stay: x below 128 KiB, w below it with a box past K (70)
  ** or C (48), C % 4 != 0, NCHW, or gm3. */
  static const char *const passes[] = {
      "n=2,c=64,h=15,w=13,k=70,r=3,s=3,pad=1,layout=nhwc",
      "n=4,c=64,h=15,w=13,k=70,r=1,s=1,layout=nhwc",
      "n=6,c=48,h=15,w=13,k=64,r=1,s=1,layout=nhwc",
      "n=4,c=66,h=15,w=13,k=70,r=3,s=3,pad=1,layout=nhwc",
      "n=4,c=64,h=15,w=13,k=70,r=3,s=3,pad=1",
  };
  for (size_t i = 0; i < sizeof passes / sizeof passes[0]; i++) {
    ASSERT_EQ_INT(parse(passes[i], CT_PREC_TF32, &p), 0);
    ASSERT_EQ_INT(ct_gen_variant_from_name(&p, &lim, gm, &v), CT_OK);
    ASSERT_EQ_INT(v.n_kernels, 3);
    ASSERT_EQ_INT(v.maps[0].buffer, CT_GEN_BUF_WS);
    ASSERT_TRUE(!v.maps[0].tf32 && !v.maps[1].tf32);
  }
  ASSERT_EQ_INT(parse("n=4,c=64,h=15,w=13,k=70,r=3,s=3,pad=1,layout=nhwc", CT_PREC_FP32, &p), 0);
  ASSERT_EQ_INT(ct_gen_variant_from_name(&p, &lim, "gm3:BM=128,BN=64,BK=32,STAGES=4,KC=4", &v),
                CT_OK);
  ASSERT_EQ_INT(v.n_kernels, 3);
  ASSERT_EQ_INT(v.maps[0].buffer, CT_GEN_BUF_WS);
}

/* gm_nhwc's grid over an NCHW x: a block a 32-channel block (fewer where
** CP is less) of one image's whole plane where it fits in 8192 floats, else
** of a tile of 4096 floats; over an NHWC x, 32 pixels across the images x
** 64 channels. */
static void test_gm_nhwc_grid(void) {
  ct_gen_limits lim = h200();
  static const struct {
    const char *spec;
    long long tiles, gy; /* NCHW: blocks an image (tiles), grid.y */
  } cases[] = {
      {"n=32,c=512,h=7,w=7,k=64,r=1,s=1", 1, 16},                     /* whole planes */
      {"n=32,c=128,h=56,w=56,k=128,r=3,s=3,stride=2,pad=1", 25, 4},   /* 128-pixel tiles */
      {"n=16,c=16,h=1024,w=1024,k=128,r=3,s=3", 4096, 1},             /* 16 ch x 256 px */
      {"n=3,c=130,h=19,w=17,k=70,r=3,s=3,pad=1", 3, 5},               /* CP 132 */
      {"n=2,c=48,h=16,w=16,k=70,r=3,s=3,pad=1", 1, 2},                /* 32 x 256: whole */
      {"n=2,c=48,h=16,w=17,k=70,r=3,s=3,pad=1", 3, 2},                /* 32 x 272: tiles */
      {"n=4,c=3,h=45,w=45,k=8,r=3,s=3,pad=1", 1, 1},                  /* CP 4: 2025 px */
      {"n=4,c=3,h=46,w=46,k=8,r=3,s=3,pad=1", 3, 1},                  /* 1024-px tiles */
      {"n=4,c=64,h=15,w=13,k=70,r=3,s=3,pad=1,layout=nhwc", 0, 1},    /* 32 px x 64 ch */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    ct_problem p;
    ct_gen_variant v;
    ASSERT_EQ_INT(parse(cases[i].spec, CT_PREC_FP32, &p), 0);
    char name[64]; /* BK within CP, a ring that fits */
    const int bk = p.c >= 32 ? 32 : p.c >= 16 ? 16 : 8;
    snprintf(name, sizeof name, "gm3:BM=128,BN=64,BK=%d,STAGES=%d,KC=4", bk, bk == 32 ? 4 : 6);
    ASSERT_EQ_INT(ct_gen_variant_from_name(&p, &lim, name, &v), CT_OK);
    ASSERT_EQ_STR(v.kernels[0].name, "gm_nhwc");
    const long long np = v.kargs[16]; /* CT_GM_A_NP: images past 128 KiB of x */
    const long long gx = p.layout == CT_LAYOUT_NHWC ? (np * p.h * p.w + 31) / 32
                                                   : np * cases[i].tiles;
    ASSERT_EQ_INT((long long)v.kernels[0].grid[0], gx);
    ASSERT_EQ_INT((long long)v.kernels[0].grid[1], cases[i].gy);
    ASSERT_EQ_INT((long long)v.kernels[0].block[0], CT_GM_PREP_THREADS);
  }
}

/* gm on an NCHW 1x1 problem (ResNet-50's 7x7 layers, which pw declines:
** H W % 4 != 0): x through gm_nhwc, the weight map over the caller's w
** ([K][C] as KCRS with R = S = 1 is), TFLOAT32, no gm_pack; the
** workspace x's copy alone, gmk's partials after it; so too a w below
** 128 KiB that the variant's boxes stay inside.  A w below 128 KiB with a
** box past K or C, C % 4 != 0, a 3x3 filter and gm3 keep gm_pack. */
static void test_gm_nchw_1x1_weights(void) {
  ct_gen_limits lim = h200();
  ct_problem p;
  ct_gen_variant v;
  ASSERT_EQ_INT(parse("n=32,c=512,h=7,w=7,k=2048,r=1,s=1", CT_PREC_TF32, &p), 0);
  ASSERT_EQ_INT(ct_gen_variant_from_name(&p, &lim, "gm:BM=128,BN=128,BK=32,STAGES=4", &v), CT_OK);
  ASSERT_EQ_INT(v.n_kernels, 2);
  ASSERT_EQ_STR(v.kernels[0].name, "gm_nhwc");
  ASSERT_EQ_STR(v.kernels[1].name, "gm_conv");
  ASSERT_TRUE(!v.kernels[0].weights && !v.kernels[1].weights);
  const long long x_bytes = 32LL * 7 * 7 * 512 * 4;
  ASSERT_EQ_INT((long long)v.workspace_bytes, x_bytes);
  ASSERT_EQ_INT((long long)v.wpack_bytes, 0);
  ASSERT_EQ_INT(v.maps[0].buffer, CT_GEN_BUF_WS);
  ASSERT_TRUE(!v.maps[0].tf32);
  ASSERT_EQ_INT(v.maps[1].buffer, CT_GEN_BUF_W);
  ASSERT_TRUE(v.maps[1].tf32);
  ASSERT_EQ_INT((long long)v.maps[1].offset, 0);
  ASSERT_EQ_INT((long long)v.maps[1].dims[0], 512);
  ASSERT_EQ_INT((long long)v.maps[1].dims[3], 2048);
  ASSERT_EQ_INT((long long)v.maps[1].strides[0], 512 * 4);
  /* gmk: the partials right after x's copy. */
  ASSERT_EQ_INT(
      ct_gen_variant_from_name(&p, &lim, "gmk:BM=128,BN=256,BK=32,STAGES=4,SK=2", &v), CT_OK);
  ASSERT_EQ_INT(v.n_kernels, 3);
  ASSERT_EQ_STR(v.kernels[1].name, "gm_conv");
  ASSERT_EQ_STR(v.kernels[2].name, "gm_reduce");
  ASSERT_EQ_INT(v.maps[1].buffer, CT_GEN_BUF_W);
  ASSERT_EQ_INT((long long)v.workspace_bytes, x_bytes + 2LL * 32 * 49 * 2048 * 4);
  /* w of 64 KiB, BN = 64 and BK = 32 dividing K and C. */
  ASSERT_EQ_INT(parse("n=32,c=64,h=7,w=7,k=256,r=1,s=1", CT_PREC_TF32, &p), 0);
  ASSERT_EQ_INT(ct_gen_variant_from_name(&p, &lim, "gm:BM=128,BN=64,BK=32,STAGES=6", &v), CT_OK);
  ASSERT_EQ_INT(v.n_kernels, 2);
  ASSERT_EQ_INT(v.maps[1].buffer, CT_GEN_BUF_W);
  ASSERT_TRUE(v.maps[1].tf32 && v.maps[1].dims[0] == 64 && v.maps[1].dims[3] == 256);
  static const struct {
    const char *spec, *name;
    int prec;
  } packs[] = {
      {"n=32,c=64,h=7,w=7,k=200,r=1,s=1", "gm:BM=128,BN=64,BK=32,STAGES=6", CT_PREC_TF32},
      {"n=32,c=48,h=7,w=7,k=256,r=1,s=1", "gm:BM=128,BN=64,BK=32,STAGES=6", CT_PREC_TF32},
      {"n=32,c=514,h=7,w=7,k=2048,r=1,s=1", "gm:BM=128,BN=128,BK=32,STAGES=4", CT_PREC_TF32},
      {"n=32,c=512,h=7,w=7,k=512,r=3,s=3,pad=1", "gm:BM=128,BN=128,BK=32,STAGES=4", CT_PREC_TF32},
      {"n=32,c=512,h=7,w=7,k=2048,r=1,s=1", "gm3:BM=128,BN=128,BK=32,STAGES=3,KC=4", CT_PREC_FP32},
  };
  for (size_t i = 0; i < sizeof packs / sizeof packs[0]; i++) {
    ASSERT_EQ_INT(parse(packs[i].spec, packs[i].prec, &p), 0);
    ASSERT_EQ_INT(ct_gen_variant_from_name(&p, &lim, packs[i].name, &v), CT_OK);
    ASSERT_EQ_INT(v.n_kernels, 3);
    ASSERT_EQ_STR(v.kernels[1].name, "gm_pack");
    ASSERT_TRUE(v.kernels[1].weights);
    ASSERT_EQ_INT(v.maps[1].buffer, CT_GEN_BUF_WS);
    ASSERT_TRUE(v.wpack_bytes > 0);
  }
}

static void test_unknown_args_family_refused(void) {
  for (size_t i = 0; ct_gen_families[i] != NULL; i++) {
    ASSERT_TRUE(ct_gen_families[i]->args == CT_GEN_ARGS_POINTERS ||
                ct_gen_families[i]->args == CT_GEN_ARGS_TENSOR_MAPS);
    ASSERT_TRUE(ct_gen_family_launchable(ct_gen_families[i]));
  }
  ASSERT_TRUE(!ct_gen_family_launchable(NULL));
  ASSERT_TRUE(ct_gen_family_find("test_badargs") == NULL); /* test families off */
  ASSERT_EQ_INT(setenv("CONVTUNE_TEST_FAMILIES", "1", 1), 0);
  const ct_gen_family *f = ct_gen_family_find("test_badargs");
  int found = f != NULL && !ct_gen_family_launchable(f);
  ct_gen_limits lim = h200();
  ct_problem p;
  ct_problem_default(&p);
  ct_gen_variant *v = NULL, got;
  size_t n = 0, n_test = 0, n_tmap = 0;
  ct_status enum_rc = ct_gen_enumerate_all(&p, &lim, &v, &n);
  for (size_t i = 0; i < n; i++) {
    n_test += strncmp(v[i].family->name, "test_", 5) == 0;
    n_tmap += v[i].family == f;
  }
  free(v);
  ct_status name_rc = ct_gen_variant_from_name(&p, &lim, "test_badargs", &got);
  ct_status wrong_rc = ct_gen_variant_from_name(&p, &lim, "test_wrong", &got);
  memset(&got, 0, sizeof got);
  got.family = f;
  got.limits = lim;
  char *src = (char *)"untouched";
  ct_status src_rc = found ? ct_gen_source(&p, &got, &src) : CT_ERR_NOT_FOUND;
  ASSERT_EQ_INT(unsetenv("CONVTUNE_TEST_FAMILIES"), 0);
  ASSERT_TRUE(found);
  ASSERT_EQ_INT(enum_rc, CT_OK);
  ASSERT_EQ_INT(n_test, 5); /* the pointer-taking test families */
  ASSERT_EQ_INT(n_tmap, 0);
  ASSERT_EQ_INT(name_rc, CT_ERR_UNSUPPORTED);
  ASSERT_EQ_INT(wrong_rc, CT_OK);
  ASSERT_EQ_INT(src_rc, CT_ERR_UNSUPPORTED);
  ASSERT_TRUE(src == NULL);
}

/* wgr's RL 1 (a row's new input rows in the producer's registers) is
** offered only where they take one pass of 128/LP rows and at most 6 runs
** of 4 floats per thread: on the headline (12 new rows of 56 runs) with
** LP 10 alone; with C = 5 and stride 3 (15 rows of 10 runs) with LP 8
** alone.  RL 0 is offered with every LP.  (U: 1 .. 4 on the headline; 1
** and 2 where Q = 10.) */
static void test_wgr_register_loads(void) {
  ct_gen_limits lim = h200();
  const char *specs[] = {"n=256,c=3,h=224,w=224,k=96,r=11,s=11,stride=4,pad=2",
                         "n=1,c=5,h=30,w=40,k=96,r=5,s=7,stride=3x4,pad=1x3"};
  const int rl_lp[] = {10, 8}, n_u[] = {4, 2};
  for (int i = 0; i < 2; i++) {
    ct_problem p;
    ASSERT_EQ_INT(parse(specs[i], CT_PREC_TF32, &p), 0);
    ct_gen_variant *v = NULL;
    size_t n = 0, n_rl[2] = {0, 0};
    ASSERT_EQ_INT(ct_gen_enumerate(&p, &lim, &v, &n), CT_OK);
    for (size_t j = 0; j < n; j++) {
      if (strcmp(v[j].family->name, "wgr") != 0) continue;
      const int lp = v[j].values[1], rl = v[j].values[2];
      ASSERT_TRUE(rl == 0 || rl == 1);
      n_rl[rl]++;
      if (rl == 1 && lp != rl_lp[i]) fprintf(stderr, "  %s offered\n", v[j].name);
      ASSERT_TRUE(rl == 0 || lp == rl_lp[i]);
    }
    free(v);
    ASSERT_EQ_INT(n_rl[0], 3 * n_u[i]); /* U x LP 10, 8, 16 */
    ASSERT_EQ_INT(n_rl[1], n_u[i]);
  }
  ct_problem h;
  ct_problem_default(&h);
  ct_gen_variant w;
  ASSERT_EQ_INT(ct_gen_variant_from_name(&h, &lim, "wgr:U=1,LP=10,RL=1", &w), CT_OK);
  ASSERT_EQ_INT(ct_gen_variant_from_name(&h, &lim, "wgr:U=1,LP=8,RL=1", &w), CT_ERR_UNSUPPORTED);
  ASSERT_EQ_INT(ct_gen_variant_from_name(&h, &lim, "wgr:U=1,LP=16,RL=1", &w), CT_ERR_UNSUPPORTED);
}

/* Strides and paddings up to INT32_MAX are valid.  The families must
** decline (not overflow) where their sizes leave 32-bit range: the
** space-to-depth families fold C*SH*SW channels; wg and wgs stage bands of
** C * BR * BCP floats (here ~6.4e9 rows by ~2.1e9 columns), wgr rows of
** ~2e7 floats (the fourth problem, stride 4 along the width).  A modest
** stride still gets s2d variants, and whatever is offered fits. */
static void test_huge_strides(void) {
  ct_gen_limits lim = h200();
  const char *specs[] = {"n=12,c=1,h=1,w=1,k=1,r=1,s=1,stride=999999999",
                         "n=1,c=2147483647,h=1,w=1,k=1,r=1,s=1,stride=2147483647",
                         "n=1,c=1000,h=1,w=1,k=1,r=1,s=1,stride=2147483647x1,pad=0x1073741823",
                         "n=1,c=1000,h=1,w=1,k=100,r=1,s=1,stride=2147483647x4,pad=0x10000000",
                         "n=1,c=3,h=40,w=40,k=8,r=5,s=5,stride=2",
                         /* gm_shape_of's N x floats of an image (~3e18
                         ** floats in one family's view) overflowed */
                         "n=3,c=1000,h=1,w=1,k=1,r=1,s=1474836,pad=0x1073741823",
                         /* dw's and dwc's tiles: dw's input tile (its
                         ** extents' product overflowed int64) */
                         "n=2,c=6,h=1,w=1,k=12,r=1,s=1,stride=2147483647,pad=0x1073741823,groups=6",
                         "n=2,c=6,h=1,w=9,k=12,r=3,s=1474836,pad=1x1073741819,dil=1x3,groups=6",
                         "n=2,c=6,h=1,w=1,k=12,r=1,s=1,stride=2147483647,pad=0x1073741823,groups=6,"
                         "layout=nhwc"};
  for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
    ct_problem p;
    ASSERT_EQ_INT(parse(specs[i], CT_PREC_TF32, &p), 0);
    ct_gen_variant *v = NULL;
    size_t n = 0, n_s2d = 0, n_wg = 0;
    ASSERT_EQ_INT(ct_gen_enumerate(&p, &lim, &v, &n), CT_OK);
    for (size_t j = 0; j < n; j++) {
      n_s2d += strncmp(v[j].name, "s2d_", 4) == 0;
      n_wg += strncmp(v[j].name, "wg", 2) == 0;
      ASSERT_TRUE(launches_fit(&v[j], &lim));
    }
    free(v);
    if (i < 4) ASSERT_EQ_INT(n_s2d, 0);
    if (i == 2 || i == 3) ASSERT_EQ_INT(n_wg, 0); /* wg, wg3, wgs, wgr */
    if (i == 4) ASSERT_TRUE(n_s2d > 0);
  }
}

static void test_from_name_errors(void) {
  ct_gen_limits lim = h200();
  ct_problem p;
  ct_problem_default(&p);
  ct_gen_variant v;
  /* Accepted: canonical, and parameters in another order. */
  ASSERT_EQ_INT(ct_gen_variant_from_name(&p, &lim, "direct:THREADS=256,TP=2,TK=4", &v), CT_OK);
  ASSERT_EQ_STR(v.name, "direct:THREADS=256,TP=2,TK=4");
  ASSERT_EQ_INT(ct_gen_variant_from_name(&p, &lim, "direct:TK=4,THREADS=256,TP=2", &v), CT_OK);
  ASSERT_EQ_STR(v.name, "direct:THREADS=256,TP=2,TK=4");
  /* No such family. */
  ASSERT_EQ_INT(ct_gen_variant_from_name(&p, &lim, "nosuch:THREADS=128,TP=4,TK=8", &v),
                CT_ERR_NOT_FOUND);
  /* Malformed: unknown, duplicate or missing parameter, bad numbers. */
  const char *bad[] = {
    "",
    ":THREADS=128",
    "direct",
    "direct:",
    "direct:THREADS=128,TP=4",
    "direct:THREADS=128,TP=4,TK=8,",
    "direct:THREADS=128,TP=4,TK=8,TK=8",
    "direct:THREADS=128,TP=4,TK=8,XX=1",
    "direct:THREADS=128,TP=4,BAD=8",
    "direct:THREADS=128,TP=4,TK",
    "direct:THREADS=128,TP=4,TK=",
    "direct:THREADS=128,TP=4,TK=8x",
    "direct:THREADS=128,TP=4,TK=99999999999",
    "direct:THREADS=128,,TP=4,TK=8",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    ct_status rc = ct_gen_variant_from_name(&p, &lim, bad[i], &v);
    if (rc != CT_ERR_PARSE) fprintf(stderr, "  \"%s\" gave %d\n", bad[i], (int)rc);
    ASSERT_EQ_INT(rc, CT_ERR_PARSE);
  }
  /* A value outside the searched list. */
  ASSERT_EQ_INT(ct_gen_variant_from_name(&p, &lim, "direct:THREADS=128,TP=4,TK=2", &v),
                CT_ERR_UNSUPPORTED);
  ASSERT_EQ_INT(ct_gen_variant_from_name(&p, &lim, "direct:THREADS=96,TP=4,TK=8", &v),
                CT_ERR_UNSUPPORTED);
  /* Listed, but not valid for this problem (TK = 16 with K = 1). */
  ct_problem q;
  ASSERT_EQ_INT(parse("n=1,c=1,h=5,w=5,k=1,r=3,s=3", CT_PREC_TF32, &q), 0);
  ASSERT_EQ_INT(ct_gen_variant_from_name(&q, &lim, "direct:THREADS=128,TP=1,TK=16", &v),
                CT_ERR_UNSUPPORTED);
  /* Listed, but not valid on this device (256 threads > a tiny limit). */
  ct_gen_limits small = lim;
  small.max_threads_per_block = 128;
  ASSERT_EQ_INT(ct_gen_variant_from_name(&p, &small, "direct:THREADS=256,TP=4,TK=8", &v),
                CT_ERR_UNSUPPORTED);
  ASSERT_EQ_INT(ct_gen_variant_from_name(&p, &small, "direct:THREADS=128,TP=4,TK=8", &v),
                CT_OK);
  /* An invalid problem; NULL arguments. */
  ct_problem z = p;
  z.c = 0;
  ASSERT_EQ_INT(ct_gen_variant_from_name(&z, &lim, "direct:THREADS=128,TP=4,TK=8", &v),
                CT_ERR_INVALID_PROBLEM);
  ASSERT_EQ_INT(ct_gen_variant_from_name(&p, &lim, NULL, &v), CT_ERR_INVALID_ARG);
}

static void test_invalid_problem(void) {
  ct_gen_limits lim = h200();
  ct_problem p;
  ct_problem_default(&p);
  p.r = 300; /* larger than the padded input */
  ct_gen_variant *v = (ct_gen_variant *)&lim;
  size_t n = 7;
  ASSERT_EQ_INT(ct_gen_enumerate(&p, &lim, &v, &n), CT_ERR_INVALID_PROBLEM);
  ASSERT_TRUE(v == NULL);
  ASSERT_EQ_INT(n, 0);
  ct_gen_variant d;
  ASSERT_EQ_INT(ct_gen_default_variant(&p, &lim, &d), CT_ERR_INVALID_PROBLEM);
}

static void test_limits_for_arch(void) {
  ct_gen_limits lim;
  ASSERT_EQ_INT(ct_gen_limits_for_arch("sm_90a", &lim), CT_OK);
  ASSERT_EQ_STR(lim.arch, "sm_90a");
  ASSERT_EQ_INT(lim.cc_major, 9);
  ASSERT_EQ_INT(lim.cc_minor, 0);
  ASSERT_EQ_INT(lim.sm_count, 132);
  ASSERT_EQ_INT(lim.max_threads_per_block, 1024);
  ASSERT_EQ_INT(lim.max_smem_per_block, 232448);
  ASSERT_EQ_INT(lim.smem_per_sm, 233472);
  ASSERT_EQ_INT(lim.regs_per_sm, 65536);
  ASSERT_EQ_INT(ct_gen_limits_for_arch("sm_90", &lim), CT_OK);
  ASSERT_EQ_STR(lim.arch, "sm_90");
  ASSERT_EQ_INT(lim.max_smem_per_block, 232448);
  ASSERT_EQ_INT(ct_gen_limits_for_arch("sm_80", &lim), CT_OK);
  ASSERT_EQ_INT(lim.cc_major * 10 + lim.cc_minor, 80);
  ASSERT_EQ_INT(lim.max_smem_per_block, 166912);
  ASSERT_EQ_INT(ct_gen_limits_for_arch("sm_89", &lim), CT_OK);
  ASSERT_EQ_INT(lim.cc_major * 10 + lim.cc_minor, 89);
  ASSERT_EQ_INT(lim.max_smem_per_block, 101376);
  ASSERT_EQ_INT(ct_gen_limits_for_arch("sm_75", &lim), CT_ERR_UNSUPPORTED);
  ASSERT_EQ_INT(ct_gen_limits_for_arch("", &lim), CT_ERR_UNSUPPORTED);
  ASSERT_EQ_INT(ct_gen_limits_for_arch(NULL, &lim), CT_ERR_INVALID_ARG);
}

static void test_families_and_templates(void) {
  ASSERT_TRUE(ct_gen_families[0] != NULL);
  ASSERT_TRUE(ct_gen_family_find("direct") != NULL);
  ASSERT_TRUE(ct_gen_family_find("nosuch") == NULL);
  ASSERT_TRUE(ct_gen_family_find(NULL) == NULL);
  for (size_t i = 0; ct_gen_families[i] != NULL; i++) {
    const ct_gen_family *f = ct_gen_families[i];
    ASSERT_TRUE(ct_gen_family_find(f->name) == f);
    ASSERT_TRUE(f->precisions != 0 && f->valid != NULL && f->worth != NULL &&
                f->plan != NULL);
    ASSERT_TRUE(f->n_params >= 0 && f->n_params <= CT_GEN_MAX_PARAMS);
    ASSERT_TRUE(ct_gen_template(f->template_name) != NULL);
    /* Every tunable is guarded "#ifndef P / #define P default / #endif" in
    ** the template with its includes expanded (conv_s2d.cu's are conv_wg.cu's),
    ** and its list is non-empty without repeats. */
    char *t = NULL;
    ASSERT_EQ_INT(ct_gen_template_source(f->template_name, &t), CT_OK);
    for (int j = 0; j < f->n_params; j++) {
      const ct_gen_param *pr = &f->params[j];
      char guard[96];
      snprintf(guard, sizeof guard, "#ifndef %s\n#define %s ", pr->name, pr->name);
      if (strstr(t, guard) == NULL) fprintf(stderr, "  %s: no guard for %s\n", f->name, pr->name);
      ASSERT_TRUE(strstr(t, guard) != NULL);
      ASSERT_TRUE(pr->n_values >= 1 && pr->n_values <= CT_GEN_MAX_VALUES);
      for (int a = 0; a < pr->n_values; a++)
        for (int b = 0; b < a; b++) ASSERT_TRUE(pr->values[a] != pr->values[b]);
    }
    free(t);
  }
  ASSERT_TRUE(ct_gen_template("ref_f64.cu") != NULL);
  ASSERT_TRUE(ct_gen_template("nosuch.cu") == NULL);
  ASSERT_TRUE(ct_gen_template(NULL) == NULL);
  size_t count = 0;
  while (ct_gen_template_name(count) != NULL) count++;
  ASSERT_TRUE(count >= 2);
  ASSERT_TRUE(strstr(ct_gen_template("conv_direct.cu"), "extern \"C\"") != NULL);
}

static void test_hash(void) {
  /* FNV-1a 64 reference values. */
  ASSERT_TRUE(ct_gen_hash("", 0, CT_GEN_HASH_SEED) == 0xcbf29ce484222325ull);
  ASSERT_TRUE(ct_gen_hash("a", 1, CT_GEN_HASH_SEED) == 0xaf63dc4c8601ec8cull);
  ASSERT_TRUE(ct_gen_hash("foobar", 6, CT_GEN_HASH_SEED) == 0x85944171f73967e8ull);
  /* Chaining through the seed equals hashing the concatenation. */
  uint64_t h = ct_gen_hash("foo", 3, CT_GEN_HASH_SEED);
  ASSERT_TRUE(ct_gen_hash("bar", 3, h) == 0x85944171f73967e8ull);
}

/* wg and wg3 take an NHWC problem (x NHWC, w KRSC, y NPQK): the
** channels-last stem gets their variants at both precisions, each source
** with the layout's define, the same points and launches as on the NCHW
** stem but for wg3's KS 2 (its bulk copies are of NCHW rows), declined. */
static void test_wg_nhwc(void) {
  ct_gen_limits lim = h200();
  static const char *const stem = "n=32,c=3,h=224,w=224,k=64,r=7,s=7,stride=2,pad=3,act=relu";
  char nhwc_spec[128];
  snprintf(nhwc_spec, sizeof nhwc_spec, "%s,layout=nhwc", stem);
  for (int fp32 = 0; fp32 <= 1; fp32++) {
    const char *fam = fp32 ? "wg3" : "wg";
    ct_problem nchw, nhwc;
    ASSERT_EQ_INT(parse(stem, fp32 ? CT_PREC_FP32 : CT_PREC_TF32, &nchw), 0);
    ASSERT_EQ_INT(parse(nhwc_spec, fp32 ? CT_PREC_FP32 : CT_PREC_TF32, &nhwc), 0);
    ct_gen_variant *a = NULL, *b = NULL;
    size_t na = 0, nb = 0, n_wg_a = 0, n_wg_b = 0, n_ks2 = 0;
    ASSERT_EQ_INT(ct_gen_enumerate_all(&nchw, &lim, &a, &na), CT_OK);
    ASSERT_EQ_INT(ct_gen_enumerate_all(&nhwc, &lim, &b, &nb), CT_OK);
    for (size_t j = 0; j < nb; j++) {
      if (strcmp(b[j].family->name, fam) != 0) continue;
      n_wg_b++;
      ASSERT_TRUE(strstr(b[j].name, "KS=2") == NULL);
      char *src = NULL;
      ASSERT_EQ_INT(ct_gen_source(&nhwc, &b[j], &src), CT_OK);
      ASSERT_TRUE(strstr(src, "\n#define CT_LAYOUT 1\n") != NULL);
      free(src);
    }
    for (size_t j = 0; j < na; j++) {
      if (strcmp(a[j].family->name, fam) != 0) continue;
      n_wg_a++;
      const int ks2 = strstr(a[j].name, "KS=2") != NULL;
      n_ks2 += ks2;
      size_t twin = nb;
      for (size_t k = 0; k < nb; k++)
        if (strcmp(b[k].name, a[j].name) == 0) twin = k;
      ASSERT_TRUE(ks2 ? twin == nb : twin < nb);
      if (ks2) {
        ct_gen_variant v;
        ASSERT_EQ_INT(ct_gen_variant_from_name(&nhwc, &lim, a[j].name, &v), CT_ERR_UNSUPPORTED);
      } else {
        ASSERT_EQ_INT(b[twin].kernels[0].grid[0], a[j].kernels[0].grid[0]);
        ASSERT_EQ_INT(b[twin].kernels[0].block[0], a[j].kernels[0].block[0]);
        ASSERT_EQ_INT(b[twin].kernels[0].smem, a[j].kernels[0].smem);
      }
    }
    ASSERT_TRUE(n_wg_b > 0);
    ASSERT_EQ_INT((int)n_wg_b, (int)(n_wg_a - n_ks2));
    if (fp32) ASSERT_TRUE(n_ks2 > 0);
    free(a);
    free(b);
  }
}

/* Families gme and gme3: gm's kernel with its epilogue staged in shared
** memory and stored by bulk copies.  A gme point is its gm twin but for
** CT_GM_EP and the staging tile, [BN][BM + 4] floats past the ring; it is
** offered on NCHW output planes of a multiple of 4 pixels only (the bulk
** copies' 16-byte runs), never on NHWC, and gme3 not at BN = 128 (it
** spills).  pwe and pwqe are pw's and pwq's twins in the same way, pwqe
** with a staging tile for each consumer (`offered` counts the staging
** tiles). */
static void test_gme_staged(void) {
  ct_gen_limits lim = h200();
  static const struct {
    const char *spec, *name, *twin;
    ct_precision prec;
    int offered;
  } cases[] = {
      {"n=16,c=16,h=1024,w=1024,k=128,r=3,s=3,bias=0", "gme:BM=128,BN=128,BK=16,STAGES=8",
       "gm:BM=128,BN=128,BK=16,STAGES=8", CT_PREC_TF32, 1},
      {"n=32,c=256,h=14,w=14,k=256,r=3,s=3,pad=1", "gme3:BM=128,BN=64,BK=32,STAGES=3,KC=4",
       "gm3:BM=128,BN=64,BK=32,STAGES=3,KC=4", CT_PREC_FP32, 1},
      {"n=3,c=70,h=7,w=9,k=33,r=3,s=3,pad=1,dil=2", "gme:BM=64,BN=64,BK=32,STAGES=6",
       "gm:BM=64,BN=64,BK=32,STAGES=6", CT_PREC_TF32, 0}, /* 63 pixels a plane */
      {"n=4,c=64,h=16,w=16,k=70,r=3,s=3,pad=1,layout=nhwc", "gme:BM=64,BN=64,BK=32,STAGES=6",
       "gm:BM=64,BN=64,BK=32,STAGES=6", CT_PREC_TF32, 0},
      {"n=32,c=256,h=14,w=14,k=256,r=3,s=3,pad=1", "gme3:BM=128,BN=128,BK=32,STAGES=2,KC=4",
       "gm3:BM=128,BN=128,BK=32,STAGES=2,KC=4", CT_PREC_FP32, 0}, /* registers */
      /* pwe, pwqe: pw's and pwq's twins, pwqe with a staging tile a consumer */
      {"n=32,c=256,h=56,w=56,k=64,r=1,s=1", "pwe:BM=128,BN=64,BK=32,STAGES=6",
       "pw:BM=128,BN=64,BK=32,STAGES=6", CT_PREC_TF32, 1},
      {"n=32,c=256,h=56,w=56,k=64,r=1,s=1", "pwqe:BM=64,BN=64,BK=32,STAGES=8",
       "pwq:BM=64,BN=64,BK=32,STAGES=8", CT_PREC_TF32, 2},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    ct_problem p;
    ct_gen_variant v, t;
    ASSERT_EQ_INT(parse(cases[i].spec, cases[i].prec, &p), 0);
    ASSERT_EQ_INT(ct_gen_variant_from_name(&p, &lim, cases[i].twin, &t), CT_OK);
    const ct_status rc = ct_gen_variant_from_name(&p, &lim, cases[i].name, &v);
    if (!cases[i].offered) {
      ASSERT_EQ_INT(rc, CT_ERR_UNSUPPORTED);
      continue;
    }
    ASSERT_EQ_INT(rc, CT_OK);
    ASSERT_EQ_INT(v.n_kernels, t.n_kernels);
    const ct_gen_launch *a = &v.kernels[v.n_kernels - 1], *b = &t.kernels[t.n_kernels - 1];
    ASSERT_EQ_STR(a->name, strncmp(cases[i].name, "gme", 3) == 0 ? "gm_conv" : "gm_pw");
    ASSERT_EQ_INT(a->grid[0], b->grid[0]);
    ASSERT_EQ_INT(a->block[0], b->block[0]);
    const int bm = strstr(cases[i].name, "BM=128") ? 128 : 64;
    const int bn = strstr(cases[i].name, "BN=128") ? 128 : 64;
    ASSERT_EQ_INT(a->smem, b->smem + (unsigned)(cases[i].offered * bn * (bm + 4) * 4));
    ASSERT_TRUE(memcmp(v.kargs, t.kargs, sizeof v.kargs) == 0);
    ASSERT_TRUE(memcmp(v.maps, t.maps, sizeof v.maps) == 0);
    char *vs = NULL, *ts = NULL;
    ASSERT_EQ_INT(ct_gen_source(&p, &v, &vs), CT_OK);
    ASSERT_EQ_INT(ct_gen_source(&p, &t, &ts), CT_OK);
    ASSERT_TRUE(strstr(vs, "\n#define CT_GM_EP 1\n") != NULL);
    ASSERT_TRUE(strstr(ts, "\n#define CT_GM_EP 1\n") == NULL);
    free(vs);
    free(ts);
  }
}

int main(void) {
  RUN_TEST(test_enumerate_headline);
  RUN_TEST(test_enumerate_order_and_default);
  RUN_TEST(test_enumerate_few_channels_last);
  RUN_TEST(test_source_deterministic);
  RUN_TEST(test_reference_source);
  RUN_TEST(test_plans_fit_limits);
  RUN_TEST(test_default_variant_odd);
  RUN_TEST(test_small_k_and_q_prune);
  RUN_TEST(test_enumerate_all);
  RUN_TEST(test_unknown_args_family_refused);
  RUN_TEST(test_wgr_register_loads);
  RUN_TEST(test_huge_strides);
  RUN_TEST(test_from_name_errors);
  RUN_TEST(test_invalid_problem);
  RUN_TEST(test_limits_for_arch);
  RUN_TEST(test_families_and_templates);
  RUN_TEST(test_hash);
  RUN_TEST(test_gm_shape_generic);
  RUN_TEST(test_gm3_layout);
  RUN_TEST(test_gmp_patches);
  RUN_TEST(test_pw_layout);
  RUN_TEST(test_pw_resident);
  RUN_TEST(test_tap_plan);
  RUN_TEST(test_gmk_split);
  RUN_TEST(test_pwq_pingpong);
  RUN_TEST(test_pwq_ring_protocol);
  RUN_TEST(test_gm_nhwc_plans);
  RUN_TEST(test_gm_nhwc_grid);
  RUN_TEST(test_gm_nchw_1x1_weights);
  RUN_TEST(test_wg_nhwc);
  RUN_TEST(test_gme_staged);
  TEST_EXIT();
}
