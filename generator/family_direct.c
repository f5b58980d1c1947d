/*
** family_direct.c — the descriptor of family "direct" (templates/conv_direct.cu):
** a register-tiled direct convolution in IEEE fp32 that accepts every valid
** problem, grouped ones included (TK must then divide K/groups; TK = 1
** always does).  It is the safe default family (ct_gen_default_variant).
**
** Parameters (each list starts with the template's default, so the first
** valid point, the default variant, is a sensible one):
**   THREADS  threads per block
**   TP       consecutive output columns per thread
**   TK       output channels per thread and per block
**
** The launch arithmetic (blocks, staged rows, shared memory) and the weight
** staging budget are templates/ct_direct.cuh's, which the template
** includes too; it static_asserts that the CT_PLAN_* values agree.
*/
#include <stdint.h>
#include <stdio.h>

#include "convtune.h"
#include "ct_direct.cuh"
#include "ct_gen.h"

enum { DIRECT_THREADS, DIRECT_TP, DIRECT_TK };

/* What a point needs on a problem, in 64-bit arithmetic. */
typedef struct direct_shape {
  int64_t P, Q;
  int64_t tiles;  /* blocks of work = grid.x */
  int64_t rows;   /* filter rows staged per pass; 0: weights from global */
  int64_t smem;   /* dynamic shared memory, bytes */
} direct_shape;

static void direct_shape_of(const ct_problem *p, const int *v, direct_shape *sh) {
  int64_t threads = v[DIRECT_THREADS], tp = v[DIRECT_TP], tk = v[DIRECT_TK];
  ct_problem_output(p, &sh->P, &sh->Q);
  sh->tiles = ct_direct_tiles(p->n, sh->P, sh->Q, p->k, threads, tp, tk);
  sh->rows = ct_direct_rows(p->c / p->groups, p->r, p->s, tk);
  sh->smem = ct_direct_smem_bytes(p->c / p->groups, p->r, p->s, tk);
}

/* The hard limits: with groups, TK divides K/groups; the block fits the
** device; the coordinates along a row
** and a column and the block count fit in 32 bits.  Tensors of any size
** the problem's validation admits: the template forms 64-bit offsets when
** a tensor has 2^31 elements or more.  The problem itself is assumed valid. */
static int direct_valid(const ct_problem *p, const ct_gen_limits *lim,
                        const int *v) {
  const int64_t lim32 = INT32_MAX;
  int64_t threads = v[DIRECT_THREADS], tp = v[DIRECT_TP], tk = v[DIRECT_TK];
  if (threads < 32 || threads % 32 != 0) return 0;
  if (tp < 1 || tk < 1) return 0;
  /* Grouped: a block's TK channels lie in one group. */
  if (p->groups > 1 && (p->k / p->groups) % tk != 0) return 0;
  direct_shape sh;
  direct_shape_of(p, v, &sh);
  /* Coordinates in 32 bits (see the template's static_asserts), and the
  ** rounded-up counts of column groups and channel tiles (Q + TP - 1,
  ** K + TK - 1: the template's int divisions). */
  if (sh.Q + tp - 1 > lim32 || p->k + tk - 1 > lim32) return 0;
  if (p->pad_h > lim32 || p->pad_w > lim32 ||
      (sh.Q - 1 + tp - 1) * p->stride_w + (p->s - 1) * p->dil_w > lim32 ||
      (sh.P - 1) * p->stride_h + (p->r - 1) * p->dil_h > lim32)
    return 0;
  if (sh.tiles < 1 || sh.tiles > lim32) return 0;
  return ct_gen_budget_fits(lim, &(ct_gen_budget){.threads = threads, .smem = sh.smem});
}

/* The pruning heuristic: TK and TP waste less than half a tile (TK < 2K,
** TP < 2Q) unless they are 1. */
static int direct_worth(const ct_problem *p, const ct_gen_limits *lim,
                        const int *v) {
  (void)lim;
  int64_t tp = v[DIRECT_TP], tk = v[DIRECT_TK], P, Q;
  ct_problem_output(p, &P, &Q);
  if (tk > 1 && tk >= 2 * p->k) return 0;
  if (tp > 1 && tp >= 2 * Q) return 0;
  return 1;
}

static void direct_plan(const ct_problem *p, const ct_gen_limits *lim, const int *v,
                        ct_gen_variant *out, char *defines, size_t len) {
  (void)lim;
  direct_shape sh;
  direct_shape_of(p, v, &sh);
  out->n_kernels = 1;
  ct_gen_launch *l = &out->kernels[0];
  snprintf(l->name, sizeof l->name, "conv_direct");
  l->grid[0] = (unsigned)sh.tiles;
  l->grid[1] = 1;
  l->grid[2] = 1;
  l->block[0] = (unsigned)v[DIRECT_THREADS];
  l->block[1] = 1;
  l->block[2] = 1;
  l->smem = (unsigned)sh.smem;
  out->workspace_bytes = 0;
  snprintf(defines, len,
           "#define CT_PLAN_GRID_X %u\n"
           "#define CT_PLAN_BLOCK_X %u\n"
           "#define CT_PLAN_SMEM %u\n",
           l->grid[0], l->block[0], l->smem);
}

const ct_gen_family ct_gen_family_direct = {
  .name = "direct",
  .template_name = "conv_direct.cu",
  .precisions = (1u << CT_PREC_TF32) | (1u << CT_PREC_FP32),
  .nhwc = 1,
  .residual = 1,
  .groups = 1,
  .args = CT_GEN_ARGS_POINTERS,
  .big_tensors = 1,
  .n_params = 3,
  .params = {
    {"THREADS", 3, {128, 256, 64}},
    {"TP", 3, {4, 2, 1}},
    {"TK", 4, {8, 4, 16, 1}},
  },
  .valid = direct_valid,
  .worth = direct_worth,
  .plan = direct_plan,
};
