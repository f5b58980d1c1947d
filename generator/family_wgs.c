/*
** family_wgs.c — the descriptor of family "wgs" (templates/conv_wgs.cu):
** the convolution as an implicit GEMM on Hopper's wgmma (m64nNk8 TF32,
** fp32 accumulation; sm_90a only) with both operands read from shared
** memory by descriptor.  For stride 4 along the width without dilation
** there, an input band row in shared memory is itself the im2col matrix,
** four taps at a time, so there is no gather.  Meets the tf32 contract.
**
** Parameters (each list starts with the template's default):
**   TP   output rows per tile (each warpgroup's m64 tiles: TP rows of
**        ceil(Q/64) tiles)
**   BN   output channels per CTA = the wgmma N (grid.y = ceil(K/BN))
**
** A point is declined (valid() == 0), never offered wrong, when: the device
** is not cc 9.0 with the arch-specific target "sm_90a"; the stride along
** the width is not 4 or the dilation there not 1; more than 96 accumulators
** per thread; shared memory (weights, biases, two bands, 2 KB of slack)
** above the block's or the SM's limit; or a size leaves 32-bit range
** (wgs_valid).  Pruned as well (wgs_worth): BN wasting more channels than
** the rule of family wg allows, and m64 tiles less than half full
** (Q < 32).
**
** The arithmetic mirrors the template's derived quantities; the template
** static_asserts that the CT_PLAN_* values agree.
*/
#include <stdint.h>
#include <string.h>

#include "convtune.h"
#include "ct_gen.h"

enum { WGS_TP, WGS_BN };

typedef struct wgs_shape {
  int64_t P, Q, mt, mw, sg, nq, ksteps, kp, br, bcp, band;
  int64_t smem, tiles, kblocks, grid_x;
} wgs_shape;

/* Fills *sh; returns 0 (then *sh is partial) when the band's factors pass
** 2^24, where the template's int band sizes end (and before multiplying
** them: every field is <= INT32_MAX, their product may not fit 64 bits). */
static int wgs_shape_of(const ct_problem *p, const ct_gen_limits *lim, const int *v,
                        wgs_shape *sh) {
  int64_t tp = v[WGS_TP], bn = v[WGS_BN];
  ct_problem_output(p, &sh->P, &sh->Q);
  sh->mt = (sh->Q + 63) / 64;
  sh->mw = tp * sh->mt;
  sh->sg = (p->s + 3) / 4;
  sh->nq = p->c * p->r * sh->sg;
  sh->ksteps = (sh->nq + 1) / 2;
  sh->kp = sh->ksteps * 8;
  sh->br = (tp - 1) * p->stride_h + (p->r - 1) * p->dil_h + 1;
  sh->bcp = 4 * (64 * sh->mt + sh->sg - 1);
  if (sh->br > (1 << 24) || sh->bcp > (1 << 24) || p->c * sh->br > (1 << 24)) return 0;
  sh->band = p->c * sh->br * sh->bcp;
  sh->smem = (bn * sh->kp + bn + 2 * sh->band + 512 /* the template's SLACK */) * 4;
  sh->tiles = p->n * ((sh->P + tp - 1) / tp);
  sh->kblocks = (p->k + bn - 1) / bn;
  /* One CTA per SM, two warpgroups taking tiles each: no more CTAs than
  ** pairs of tiles. */
  int64_t ctas = ct_gen_sm_count(lim) / sh->kblocks, pairs = (sh->tiles + 1) / 2;
  if (ctas < 1) ctas = 1;
  sh->grid_x = ctas < pairs ? ctas : pairs;
  return 1;
}

/* Channels computed beyond K with BN channels per CTA. */
static int64_t wgs_waste(int64_t k, int64_t bn) { return (k + bn - 1) / bn * bn - k; }

static int wgs_valid(const ct_problem *p, const ct_gen_limits *lim, const int *v) {
  if (lim->cc_major != 9 || lim->cc_minor != 0 || strcmp(lim->arch, "sm_90a") != 0) return 0;
  if (p->stride_w != 4 || p->dil_w != 1) return 0;
  int64_t tp = v[WGS_TP], bn = v[WGS_BN];
  if (tp < 1 || (bn != 48 && bn != 96)) return 0;
  wgs_shape sh;
  if (!wgs_shape_of(p, lim, v, &sh)) return 0;
  if (sh.mw * (bn / 2) > 96) return 0;      /* accumulators in registers */
  const int64_t lim32 = INT32_MAX;
  if (p->n * p->c * p->h * p->w > lim32 || p->k * p->c * p->r * p->s > lim32 ||
      p->n * p->k * sh.P * sh.Q > lim32 || sh.tiles > (INT64_C(1) << 30) ||
      sh.kblocks > 65535)
    return 0;
  if (sh.smem >= (1 << 18)) return 0; /* beyond the descriptors' reach */
  /* One CTA of 256 threads per SM. */
  if (!ct_gen_budget_fits(lim, &(ct_gen_budget){.threads = 256, .smem = sh.smem, .blocks_per_sm = 1}))
    return 0;
  return 1;
}

/* The pruning heuristic: m64 tiles at least half full, and BN wasting at
** most K/4 channels more than the other width. */
static int wgs_worth(const ct_problem *p, const ct_gen_limits *lim, const int *v) {
  (void)lim;
  int64_t bn = v[WGS_BN], P, Q;
  ct_problem_output(p, &P, &Q);
  if (Q < 32) return 0;
  int64_t other = bn == 96 ? 48 : 96;
  return 4 * wgs_waste(p->k, bn) <= 4 * wgs_waste(p->k, other) + p->k;
}

static void wgs_plan(const ct_problem *p, const ct_gen_limits *lim, const int *v,
                     ct_gen_variant *out, char *defines, size_t len) {
  wgs_shape sh;
  wgs_shape_of(p, lim, v, &sh);
  ct_gen_plan_one(out, "conv_wgs", (unsigned)sh.grid_x, (unsigned)sh.kblocks, 256,
                  (unsigned)sh.smem, NULL, 0, defines, len);
}

const ct_gen_family ct_gen_family_wgs = {
  .name = "wgs",
  .template_name = "conv_wgs.cu",
  .precisions = 1u << CT_PREC_TF32,
  .args = CT_GEN_ARGS_POINTERS,
  .tensor_cores = 1,
  .few_channels = 1,
  .n_params = 2,
  .params = {{"TP", 2, {1, 2}}, {"BN", 2, {96, 48}}},
  .valid = wgs_valid,
  .worth = wgs_worth,
  .plan = wgs_plan,
};
