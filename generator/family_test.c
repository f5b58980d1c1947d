/*
** family_test.c — TEST ONLY: the descriptors of the deliberately broken
** families of templates/test_faults.cu.  They exist to prove the tuner's
** fault isolation (an illegal address, a hang, a wrong result, a refused
** launch must each be recorded and the tune go on); ct_gen_enumerate and
** ct_gen_family_find offer them only when CONVTUNE_TEST_FAMILIES=1 is set
** in the environment (generator/gen.c), never otherwise.
**
** Each family has one variant (no parameters) that accepts every problem:
** one thread per output element, 256 per block (test_refuse: 2048, more
** than any GPU allows, so the driver refuses the launch).  test_badargs
** declares a kind of kernel arguments no launcher knows: the generator
** never offers it and refuses its name and its source.  test_skip leaves
** one output unwritten; it takes residual problems (NCHW) too.
*/
#include <stdio.h>

#include "convtune.h"
#include "ct_gen.h"

static int test_valid(const ct_problem *p, const ct_gen_limits *lim,
                      const int *values) {
  (void)lim;
  (void)values;
  int64_t P, Q;
  ct_problem_output(p, &P, &Q);
  return p->n * p->k * P * Q / 256 < 2147483647; /* grid.x fits */
}

static void test_plan_mode(const ct_problem *p, int mode, unsigned threads,
                           ct_gen_variant *v, char *defines, size_t len) {
  int64_t P, Q;
  ct_problem_output(p, &P, &Q);
  int64_t total = p->n * p->k * P * Q;
  v->n_kernels = 1;
  ct_gen_launch *l = &v->kernels[0];
  snprintf(l->name, sizeof l->name, "test_fault");
  l->grid[0] = (unsigned)((total + 255) / 256);
  l->grid[1] = l->grid[2] = 1;
  l->block[0] = threads;
  l->block[1] = l->block[2] = 1;
  l->smem = 0;
  v->workspace_bytes = 0;
  snprintf(defines, len, "#define CT_TEST_MODE %d\n", mode);
}

#define TEST_FAMILY(NAME, MODE, THREADS, ARGS, RESIDUAL)                       \
  static void NAME##_plan(const ct_problem *p, const ct_gen_limits *lim,       \
                          const int *values, ct_gen_variant *v,                \
                          char *defines, size_t len) {                         \
    (void)lim;                                                                 \
    (void)values;                                                              \
    test_plan_mode(p, MODE, THREADS, v, defines, len);                         \
  }                                                                            \
  const ct_gen_family ct_gen_family_##NAME = {                                 \
      .name = #NAME,                                                           \
      .template_name = "test_faults.cu",                                       \
      .precisions = (1u << CT_PREC_TF32) | (1u << CT_PREC_FP32),               \
      .args = ARGS,                                                            \
      .residual = RESIDUAL,                                                    \
      .n_params = 0,                                                           \
      .valid = test_valid,                                                     \
      .plan = NAME##_plan,                                                     \
  };

TEST_FAMILY(test_oob, 1, 256, CT_GEN_ARGS_POINTERS, 0)
TEST_FAMILY(test_hang, 2, 256, CT_GEN_ARGS_POINTERS, 0)
TEST_FAMILY(test_wrong, 3, 256, CT_GEN_ARGS_POINTERS, 0)
TEST_FAMILY(test_refuse, 4, 2048, CT_GEN_ARGS_POINTERS, 0)
/* Declares an argument kind past the known ones (its kernel is
** test_wrong's): the generator must refuse it (ct_gen_family_launchable). */
TEST_FAMILY(test_badargs, 3, 256, (ct_gen_args)99, 0)
/* A residual problem's conv (NCHW) that never stores one output. */
TEST_FAMILY(test_skip, 5, 256, CT_GEN_ARGS_POINTERS, 1)
