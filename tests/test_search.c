/*
** test_search.c — the tuner's search order on CPU (tuner/search.c):
** exhaustive order, the stratified seeds, the budget, results recorded by an
** earlier run, failed variants, peek, and that best-first local search
** finds the optimum of a smooth landscape within a small budget.
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ct_tune.h"
#include "test.h"

/* Two made-up families: "a" (4 x 3 x 5 = 60 points) and "b" (3 x 4 = 12). */
static int always(const ct_problem *p, const ct_gen_limits *l, const int *v) {
  (void)p, (void)l, (void)v;
  return 1;
}
static const ct_gen_family fam_a = {
  .name = "a", .n_params = 3, .valid = always,
  .params = {{"X", 4, {1, 2, 3, 4}}, {"Y", 3, {10, 20, 30}}, {"Z", 5, {0, 1, 2, 3, 4}}},
};
static const ct_gen_family fam_b = {
  .name = "b", .n_params = 2, .valid = always,
  .params = {{"U", 3, {1, 2, 3}}, {"V", 4, {5, 6, 7, 8}}},
};

static ct_gen_variant vs[72];
static size_t nv;

static void build(void) {
  nv = 0;
  for (int x = 0; x < 4; x++)
    for (int y = 0; y < 3; y++)
      for (int z = 0; z < 5; z++) {
        ct_gen_variant *v = &vs[nv++];
        memset(v, 0, sizeof *v);
        v->family = &fam_a;
        v->values[0] = fam_a.params[0].values[x];
        v->values[1] = fam_a.params[1].values[y];
        v->values[2] = fam_a.params[2].values[z];
      }
  for (int u = 0; u < 3; u++)
    for (int w = 0; w < 4; w++) {
      ct_gen_variant *v = &vs[nv++];
      memset(v, 0, sizeof *v);
      v->family = &fam_b;
      v->values[0] = fam_b.params[0].values[u];
      v->values[1] = fam_b.params[1].values[w];
    }
}

/* A smooth landscape: family a's optimum at X=3, Y=30, Z=1 (0.5 ms); family
** b is slower everywhere. */
static double landscape(size_t i) {
  const ct_gen_variant *v = &vs[i];
  if (v->family == &fam_a)
    return 0.5 + 0.1 * fabs(v->values[0] - 3.0) + 0.004 * fabs(v->values[1] - 30.0) +
           0.07 * fabs(v->values[2] - 1.0);
  return 0.9 + 0.05 * v->values[0] + 0.01 * v->values[1];
}

static size_t optimum(void) {
  size_t best = 0;
  for (size_t i = 1; i < nv; i++)
    if (landscape(i) < landscape(best)) best = i;
  return best;
}

static void test_exhaustive(void) {
  ct_tune_search *s = NULL;
  size_t peek[8];
  ASSERT_EQ_INT(ct_tune_search_create(vs, nv, 0, 5, &s), CT_OK);
  ASSERT_EQ_INT(ct_tune_search_budgeted(s), 0);
  ASSERT_EQ_INT(ct_tune_search_peek(s, peek, 8), 8);
  for (size_t k = 0; k < 8; k++) ASSERT_EQ_INT(peek[k], k);
  for (size_t i = 0; i < nv; i++) {
    ASSERT_EQ_INT(ct_tune_search_next(s), (long)i);
    ct_tune_search_result(s, i, landscape(i));
  }
  ASSERT_EQ_INT(ct_tune_search_next(s), -1);
  ASSERT_EQ_INT(ct_tune_search_peek(s, peek, 8), 0);
  ct_tune_search_destroy(s);
  ct_tune_search_destroy(NULL);
}

/* Runs a budgeted search to its end; returns the best index found and the
** number screened in *count. */
static size_t run_budget(size_t max_screen, size_t *count, int *seen) {
  ct_tune_search *s = NULL;
  size_t best = nv;
  *count = 0;
  if (ct_tune_search_create(vs, nv, 1, max_screen, &s) != CT_OK) return nv;
  for (long i; (i = ct_tune_search_next(s)) >= 0;) {
    size_t peek[4];
    if (ct_tune_search_peek(s, peek, 4) < 1 || peek[0] != (size_t)i) return nv;
    if (seen) seen[i]++;
    ct_tune_search_result(s, (size_t)i, landscape((size_t)i));
    if (best == nv || landscape((size_t)i) < landscape(best)) best = (size_t)i;
    ++*count;
  }
  ct_tune_search_destroy(s);
  return best;
}

static void test_seeds(void) {
  ct_tune_search *s = NULL;
  ASSERT_EQ_INT(ct_tune_search_create(vs, nv, 1, 12, &s), CT_OK);
  ASSERT_EQ_INT(ct_tune_search_budgeted(s), 1);
  /* Seeds round-robin: each family's default first. */
  long first = ct_tune_search_next(s);
  ASSERT_EQ_INT(first, 0);
  ct_tune_search_result(s, 0, landscape(0));
  long second = ct_tune_search_next(s);
  ASSERT_EQ_INT(second, 60);
  ct_tune_search_result(s, 60, landscape(60));
  /* 12 / 3 = 4 seeds: a gets 3 (60 of 72), b 1; a's spread over its order. */
  long third = ct_tune_search_next(s);
  ASSERT_EQ_INT(third, 20);
  ct_tune_search_result(s, 20, landscape(20));
  ASSERT_EQ_INT(ct_tune_search_next(s), 40);
  ct_tune_search_destroy(s);
}

/* Families with tensor cores are seeded first: with b marked so, its
** default leads, then a's; the round-robin goes on in that order. */
static void test_tensor_core_families_first(void) {
  static const ct_gen_family fam_bt = {
    .name = "bt", .n_params = 2, .valid = always, .tensor_cores = 1,
    .params = {{"U", 3, {1, 2, 3}}, {"V", 4, {5, 6, 7, 8}}},
  };
  for (size_t i = 60; i < nv; i++) vs[i].family = &fam_bt;
  ct_tune_search *s = NULL;
  ASSERT_EQ_INT(ct_tune_search_create(vs, nv, 1, 12, &s), CT_OK);
  static const long want[] = {60, 0, 20, 40};
  for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
    long i = ct_tune_search_next(s);
    ASSERT_EQ_INT(i, want[k]);
    if (i >= 0) ct_tune_search_result(s, (size_t)i, landscape((size_t)i));
  }
  ct_tune_search_destroy(s);
  /* With fewer seeds than families, the tensor-core family keeps its. */
  ASSERT_EQ_INT(ct_tune_search_create(vs, nv, 1, 1, &s), CT_OK);
  ASSERT_EQ_INT(ct_tune_search_next(s), 60);
  ct_tune_search_destroy(s);
  build();
}

/* A family of one variant beside one of sixty still gets its seed. */
static void test_small_family_seeded(void) {
  ct_tune_search *s = NULL;
  ASSERT_EQ_INT(ct_tune_search_create(vs, 61, 1, 9, &s), CT_OK); /* a + b's first */
  int saw_b = 0;
  for (int k = 0; k < 3; k++) {
    long i = ct_tune_search_next(s);
    ASSERT_TRUE(i >= 0);
    saw_b |= i == 60;
    ct_tune_search_result(s, (size_t)i, landscape((size_t)i));
  }
  ASSERT_TRUE(saw_b);
  ct_tune_search_destroy(s);
}

/* Parameters valid only together: family "c" has P=0 with S=2 (24 points)
** and P=1 with S=1 (2 points, last in enumeration order, twice as fast).
** No one-parameter move leads from one group to the other; the search's
** two-parameter moves must, within a budget that the seeds alone (all in
** the P=0 group) cannot reach. */
static const ct_gen_family fam_c = {
  .name = "c", .n_params = 4, .valid = always,
  .params = {{"P", 2, {0, 1}}, {"S", 2, {2, 1}}, {"X", 6, {1, 2, 3, 4, 5, 6}},
             {"Y", 4, {1, 2, 3, 4}}},
};

static double coupled_time(const ct_gen_variant *v) {
  if (v->values[0] == 1) return 0.5 + 0.01 * fabs(v->values[3] - 2.0);
  return 1.0 + 0.02 * fabs(v->values[2] - 3.0) + 0.01 * fabs(v->values[3] - 2.0);
}

static void test_coupled_parameters(void) {
  ct_gen_variant cv[26];
  size_t n = 0;
  for (int x = 1; x <= 6; x++)
    for (int y = 1; y <= 4; y++) {
      memset(&cv[n], 0, sizeof cv[n]);
      cv[n].family = &fam_c;
      cv[n].values[0] = 0, cv[n].values[1] = 2, cv[n].values[2] = x, cv[n].values[3] = y;
      n++;
    }
  for (int y = 1; y <= 2; y++) {
    memset(&cv[n], 0, sizeof cv[n]);
    cv[n].family = &fam_c;
    cv[n].values[0] = 1, cv[n].values[1] = 1, cv[n].values[2] = 3, cv[n].values[3] = y;
    n++;
  }
  ct_tune_search *s = NULL;
  ASSERT_EQ_INT(ct_tune_search_create(cv, n, 1, 12, &s), CT_OK);
  double best = INFINITY;
  for (long i; (i = ct_tune_search_next(s)) >= 0;) {
    double t = coupled_time(&cv[i]);
    if (t < best) best = t;
    ct_tune_search_result(s, (size_t)i, t);
  }
  ct_tune_search_destroy(s);
  fprintf(stderr, "    coupled parameters: best %.3f within 12 of 26\n", best);
  ASSERT_TRUE(best < 0.75); /* a P=1 point was screened */
}

static void test_budget_and_quality(void) {
  size_t count = 0;
  size_t best = run_budget(15, &count, NULL);
  ASSERT_EQ_INT(count, 15);
  ASSERT_EQ_INT(best, optimum());
  /* Tighter: still within 3% of the optimum. */
  best = run_budget(10, &count, NULL);
  ASSERT_EQ_INT(count, 10);
  ASSERT_TRUE(landscape(best) <= 1.03 * landscape(optimum()));
  /* No count limit: every variant exactly once. */
  int seen[72] = {0};
  run_budget(0, &count, seen);
  ASSERT_EQ_INT(count, nv);
  for (size_t i = 0; i < nv; i++) ASSERT_EQ_INT(seen[i], 1);
  /* A budget as large as the space is exhaustive. */
  ct_tune_search *s = NULL;
  ASSERT_EQ_INT(ct_tune_search_create(vs, nv, 1, nv + 5, &s), CT_OK);
  ASSERT_EQ_INT(ct_tune_search_budgeted(s), 1);
  ct_tune_search_destroy(s);
}

static void test_resumed_results_count(void) {
  ct_tune_search *s = NULL;
  ASSERT_EQ_INT(ct_tune_search_create(vs, nv, 1, 10, &s), CT_OK);
  for (size_t i = 0; i < 6; i++) ct_tune_search_result(s, i * 7, landscape(i * 7));
  ct_tune_search_result(s, 0, landscape(0)); /* twice: counted once */
  size_t n = 0;
  for (long i; (i = ct_tune_search_next(s)) >= 0; n++) {
    ASSERT_TRUE(i % 7 != 0 || i / 7 >= 6);
    ct_tune_search_result(s, (size_t)i, landscape((size_t)i));
  }
  ASSERT_EQ_INT(n, 4);
  ct_tune_search_destroy(s);
}

static void test_failed_do_not_lead(void) {
  ct_tune_search *s = NULL;
  /* Budget 6: two seeds (each family's default), then four more. */
  ASSERT_EQ_INT(ct_tune_search_create(vs, nv, 1, 6, &s), CT_OK);
  ASSERT_EQ_INT(ct_tune_search_next(s), 0);
  ct_tune_search_result(s, 0, NAN); /* a's default fails */
  ASSERT_EQ_INT(ct_tune_search_next(s), 60);
  ct_tune_search_result(s, 60, 1.0); /* b's is timed */
  /* The search follows b's timed variant, not a's failed one: each pick is
  ** one parameter away from it. */
  for (int k = 0; k < 4; k++) {
    long i = ct_tune_search_next(s);
    ASSERT_TRUE(i >= 0);
    ASSERT_TRUE(vs[i].family == &fam_b);
    int diff = (vs[i].values[0] != vs[60].values[0]) +
               (vs[i].values[1] != vs[60].values[1]);
    ASSERT_EQ_INT(diff, 1);
    ct_tune_search_result(s, (size_t)i, 2.0); /* slower: 60 stays the best */
  }
  ASSERT_EQ_INT(ct_tune_search_next(s), -1);
  ct_tune_search_destroy(s);
}

/* Priors: screened before the seeds in the order given, each once (an
** index out of range or repeated passed over), a prior already known
** (resumed) skipped; counted towards max_screen; no effect on an
** exhaustive search. */
static void test_priors(void) {
  ct_tune_search *s = NULL;
  ASSERT_EQ_INT(ct_tune_search_create(vs, nv, 1, 10, &s), CT_OK);
  const size_t pri[] = {70, 5, 70, 999, 33};
  ASSERT_EQ_INT(ct_tune_search_prefer(s, pri, 5), 3);
  ct_tune_search_result(s, 5, landscape(5)); /* resumed */
  size_t peek[3];
  ASSERT_EQ_INT(ct_tune_search_peek(s, peek, 3), 3);
  ASSERT_EQ_INT(peek[0], 70);
  ASSERT_EQ_INT(peek[1], 33);
  ASSERT_TRUE(peek[2] != 5 && peek[2] != 70 && peek[2] != 33);
  ASSERT_EQ_INT(ct_tune_search_next(s), 70);
  ct_tune_search_result(s, 70, landscape(70));
  ASSERT_EQ_INT(ct_tune_search_next(s), 33);
  ct_tune_search_result(s, 33, landscape(33));
  size_t screened = 3;
  for (long i; (i = ct_tune_search_next(s)) >= 0; screened++) {
    ASSERT_TRUE(i != 5 && i != 70 && i != 33);
    ct_tune_search_result(s, (size_t)i, landscape((size_t)i));
  }
  ASSERT_EQ_INT(screened, 10);
  ct_tune_search_destroy(s);
  /* The same search without priors starts elsewhere: its first seed. */
  ASSERT_EQ_INT(ct_tune_search_create(vs, nv, 1, 10, &s), CT_OK);
  ASSERT_TRUE(ct_tune_search_next(s) != 70);
  ct_tune_search_destroy(s);
  /* Exhaustive: enumeration order stands. */
  ASSERT_EQ_INT(ct_tune_search_create(vs, nv, 0, 0, &s), CT_OK);
  ASSERT_EQ_INT(ct_tune_search_prefer(s, pri, 5), 0);
  ASSERT_EQ_INT(ct_tune_search_next(s), 0);
  ct_tune_search_destroy(s);
  ASSERT_EQ_INT(ct_tune_search_prefer(NULL, pri, 5), 0);
}

static void test_bad_args(void) {
  ct_tune_search *s = (ct_tune_search *)1;
  ASSERT_EQ_INT(ct_tune_search_create(NULL, 3, 0, 0, &s), CT_ERR_INVALID_ARG);
  ASSERT_EQ_INT(ct_tune_search_create(vs, nv, 0, 0, NULL), CT_ERR_INVALID_ARG);
  ASSERT_EQ_INT(ct_tune_search_next(NULL), -1);
  ASSERT_EQ_INT(ct_tune_search_create(vs, 0, 1, 0, &s), CT_OK);
  ASSERT_EQ_INT(ct_tune_search_next(s), -1);
  ct_tune_search_destroy(s);
}

int main(void) {
  build();
  RUN_TEST(test_exhaustive);
  RUN_TEST(test_seeds);
  RUN_TEST(test_small_family_seeded);
  RUN_TEST(test_tensor_core_families_first);
  RUN_TEST(test_budget_and_quality);
  RUN_TEST(test_coupled_parameters);
  RUN_TEST(test_resumed_results_count);
  RUN_TEST(test_failed_do_not_lead);
  RUN_TEST(test_priors);
  RUN_TEST(test_bad_args);
  TEST_EXIT();
}
