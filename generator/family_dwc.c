/*
** family_dwc.c — the descriptor of family "dwc" (templates/conv_dwc.cu): a
** depthwise convolution (groups = C, K a multiple of C) over channels-last
** tensors, a thread per output channel and TP output columns, in IEEE fp32
** (FFMA), so at both precisions.
**
** Parameters (each list starts with the template's default):
**   CB  output channels per block (one per thread)
**   TP  output columns per thread
**   RB  column strips per block (THREADS = CB * RB)
*/
#include <stdint.h>
#include <stdio.h>

#include "convtune.h"
#include "ct_dw.cuh"
#include "ct_gen.h"

enum { DWC_CB, DWC_TP, DWC_RB };

/* Dynamic shared memory of a block, bytes (ct_dwc_smem_bytes); -1 past
** any device's (R * S alone may be up to 2^62). */
static int64_t dwc_smem(const ct_problem *p, const int *v) {
  if (p->r > (1 << 20) || p->s > (1 << 20) || p->r * p->s > (1 << 20)) return -1;
  return ct_dwc_smem_bytes(p->r, p->s, v[DWC_CB]);
}

/* Blocks of work (grid.x, ct_dwc_tiles). */
static int64_t dwc_tiles(const ct_problem *p, const int *v) {
  int64_t P, Q;
  ct_problem_output(p, &P, &Q);
  return ct_dwc_tiles(p->n, p->k, P, Q, v[DWC_CB], (int64_t)v[DWC_RB] * v[DWC_TP]);
}

/* The hard limits: a depthwise NHWC problem (groups = C, any channel
** multiplier K / C); CB * RB whole warps, at most 256 (a thread holds up
** to 48 input columns and TP sums in registers); the channel and column
** indices, the columns a thread reads and the tile count in 32 bits; the
** weights fit shared memory.  Offsets are 64-bit, so tensors of any size
** the problem's validation admits. */
static int dwc_valid(const ct_problem *p, const ct_gen_limits *lim, const int *v) {
  const int64_t threads = (int64_t)v[DWC_CB] * v[DWC_RB], tp = v[DWC_TP];
  const int64_t bq = (int64_t)v[DWC_RB] * tp, smem = dwc_smem(p, v);
  int64_t P, Q;
  if (p->groups != p->c || p->k % p->c != 0 || p->layout != CT_LAYOUT_NHWC) return 0;
  if (threads < 32 || threads % 32 != 0 || threads > 256 || tp < 1 || smem < 0) return 0;
  ct_problem_output(p, &P, &Q);
  if ((Q - 1 + tp - 1) * p->stride_w + (p->s - 1) * p->dil_w > INT32_MAX ||
      p->k + v[DWC_CB] > INT32_MAX || Q + bq > INT32_MAX)
    return 0;
  const int64_t tiles = dwc_tiles(p, v);
  if (tiles < 1 || tiles > INT32_MAX) return 0;
  return ct_gen_budget_fits(lim, &(ct_gen_budget){.threads = threads, .smem = smem});
}

/* The pruning heuristic: the channel tiles pad K by at most a quarter
** (K = 144 keeps CB = 16 and 32: 160 channels; not 64: 192) and a tile
** wastes less than half its columns (RB * TP < 2Q), unless it is the
** smallest of its kind; the smallest block of all (32 threads, TP = 1) is
** always offered, so that a small problem keeps a point. */
static int dwc_worth(const ct_problem *p, const ct_gen_limits *lim, const int *v) {
  (void)lim;
  if (v[DWC_CB] * v[DWC_RB] == 32 && v[DWC_TP] == 1) return 1;
  int64_t P, Q, bq = (int64_t)v[DWC_RB] * v[DWC_TP];
  ct_problem_output(p, &P, &Q);
  if (v[DWC_CB] > 16 && (p->k + v[DWC_CB] - 1) / v[DWC_CB] * v[DWC_CB] * 4 > 5 * p->k) return 0;
  if (bq > 1 && bq >= 2 * Q) return 0;
  return 1;
}

static void dwc_plan(const ct_problem *p, const ct_gen_limits *lim, const int *v,
                     ct_gen_variant *out, char *defines, size_t len) {
  (void)lim;
  ct_gen_plan_one(out, "conv_dwc", (unsigned)dwc_tiles(p, v), 1,
                  (unsigned)(v[DWC_CB] * v[DWC_RB]), (unsigned)dwc_smem(p, v), NULL, 0, defines,
                  len);
}

const ct_gen_family ct_gen_family_dwc = {
  .name = "dwc",
  .template_name = "conv_dwc.cu",
  .precisions = (1u << CT_PREC_TF32) | (1u << CT_PREC_FP32),
  .nhwc = 1,
  .residual = 1,
  .groups = 1,
  .args = CT_GEN_ARGS_POINTERS,
  .big_tensors = 1,
  .n_params = 3,
  .params = {
    {"CB", 4, {32, 64, 16, 128}},
    {"TP", 4, {4, 2, 8, 1}},
    {"RB", 4, {4, 8, 2, 1}},
  },
  .valid = dwc_valid,
  .worth = dwc_worth,
  .plan = dwc_plan,
};
