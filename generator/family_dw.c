/*
** family_dw.c — the descriptor of family "dw" (templates/conv_dw.cu): a
** depthwise convolution (groups = C, K a multiple of C) over NCHW tensors,
** each block a tile of one output channel's plane staged in shared memory,
** in IEEE fp32 (FFMA), so at both precisions.
**
** Parameters (each list starts with the template's default):
**   THREADS  threads per block
**   TP       output columns per thread
**   BQ       output columns per tile (the tile's rows follow:
**            THREADS * TP / BQ)
**
** The tile arithmetic is templates/ct_dw.cuh's, which the template
** includes too; it static_asserts that the CT_PLAN_* values agree.
*/
#include <stdint.h>
#include <stdio.h>

#include "convtune.h"
#include "ct_dw.cuh"
#include "ct_gen.h"

enum { DW_THREADS, DW_TP, DW_BQ };

/* What a point needs on a problem, in 64-bit arithmetic. */
typedef struct dw_shape {
  int64_t P, Q;
  int64_t bp;    /* output rows per tile; 0: the point does not tile */
  int64_t tiles; /* blocks = grid.x */
  int64_t smem;  /* dynamic shared memory, bytes; -1: past any device's */
} dw_shape;

/* The input tile's extents of a valid problem stay below 2^63 ((BP - 1)
** strides plus a dilated filter, each below 2^62); their product need
** not, so a tile past 2^20 in either is refused before it is formed. */
#define DW_TILE_EXTENT_MAX (1 << 20)

static void dw_shape_of(const ct_problem *p, const int *v, dw_shape *sh) {
  ct_problem_output(p, &sh->P, &sh->Q);
  sh->bp = ct_dw_rows(v[DW_THREADS], v[DW_TP], v[DW_BQ]);
  sh->tiles = sh->bp ? ct_dw_tiles(p->n, p->k, sh->P, sh->Q, sh->bp, v[DW_BQ]) : 0;
  const int64_t rows = ct_dw_in_rows(sh->bp, p->stride_h, p->dil_h, p->r),
                cols = ct_dw_in_cols(v[DW_BQ], p->stride_w, p->dil_w, p->s);
  sh->smem = sh->bp && rows <= DW_TILE_EXTENT_MAX && cols <= DW_TILE_EXTENT_MAX
                 ? ct_dw_smem_bytes(rows,
                                    ct_dw_pitch(cols, v[DW_BQ] / v[DW_TP], p->stride_h,
                                                p->stride_w),
                                    p->r, p->s)
                 : -1;
}

/* 1 when the input rows and columns the last tiles span (the tiles
** overhang the output by up to BP - 1 rows and BQ - 1 columns) and the
** tile counts' sums stay within int, as the template forms them. */
static int dw_ranges_fit(const ct_problem *p, const dw_shape *sh, int64_t bq) {
  const int64_t rows = (sh->P + sh->bp - 1) / sh->bp * sh->bp,
                cols = (sh->Q + bq - 1) / bq * bq;
  return (rows - 1) * p->stride_h + (p->r - 1) * p->dil_h <= INT32_MAX &&
         (cols - 1) * p->stride_w + (p->s - 1) * p->dil_w <= INT32_MAX &&
         sh->P + sh->bp <= INT32_MAX && sh->Q + bq <= INT32_MAX;
}

/* The hard limits: a depthwise NCHW problem (groups = C, any channel
** multiplier K / C); whole warps; the point tiles (BQ / TP threads along
** a row divide THREADS); the tile count fits grid.x; the input tile and
** the weights fit shared memory.  Offsets are 64-bit, so tensors of any
** size the problem's validation admits. */
static int dw_valid(const ct_problem *p, const ct_gen_limits *lim, const int *v) {
  const int64_t threads = v[DW_THREADS], tp = v[DW_TP], bq = v[DW_BQ];
  if (p->groups != p->c || p->k % p->c != 0 || p->layout != CT_LAYOUT_NCHW) return 0;
  if (threads < 32 || threads % 32 != 0 || tp < 1 || bq < tp) return 0;
  dw_shape sh;
  dw_shape_of(p, v, &sh);
  if (sh.bp < 1 || sh.tiles < 1 || sh.tiles > INT32_MAX || sh.smem < 0) return 0;
  if (!dw_ranges_fit(p, &sh, bq)) return 0;
  return ct_gen_budget_fits(lim, &(ct_gen_budget){.threads = threads, .smem = sh.smem});
}

/* The pruning heuristic: a tile wastes less than half its columns and
** rows (BQ < 2Q, BP < 2P) unless it is the smallest of its kind; the
** smallest tile of all (64 threads, TP = 1, BQ = 8: 8 x 8 outputs) is
** always offered, so that a small output plane keeps a point. */
static int dw_worth(const ct_problem *p, const ct_gen_limits *lim, const int *v) {
  (void)lim;
  if (v[DW_THREADS] == 64 && v[DW_TP] == 1 && v[DW_BQ] == 8) return 1;
  dw_shape sh;
  dw_shape_of(p, v, &sh);
  if (v[DW_BQ] > 8 && v[DW_BQ] >= 2 * sh.Q) return 0;
  if (sh.bp > 1 && sh.bp >= 2 * sh.P) return 0;
  return 1;
}

static void dw_plan(const ct_problem *p, const ct_gen_limits *lim, const int *v,
                    ct_gen_variant *out, char *defines, size_t len) {
  (void)lim;
  dw_shape sh;
  dw_shape_of(p, v, &sh);
  ct_gen_plan_one(out, "conv_dw", (unsigned)sh.tiles, 1, (unsigned)v[DW_THREADS],
                  (unsigned)sh.smem, NULL, 0, defines, len);
}

const ct_gen_family ct_gen_family_dw = {
  .name = "dw",
  .template_name = "conv_dw.cu",
  .precisions = (1u << CT_PREC_TF32) | (1u << CT_PREC_FP32),
  .residual = 1,
  .groups = 1,
  .args = CT_GEN_ARGS_POINTERS,
  .big_tensors = 1,
  .n_params = 3,
  .params = {
    {"THREADS", 3, {128, 256, 64}},
    {"TP", 3, {2, 4, 1}},
    {"BQ", 5, {32, 64, 16, 8, 128}},
  },
  .valid = dw_valid,
  .worth = dw_worth,
  .plan = dw_plan,
};
