/*
** family_wgr.c — the descriptor of family "wgr" (templates/conv_wgr.cu):
** the convolution as an implicit GEMM on Hopper's wgmma (m64nNk8 TF32,
** fp32 accumulation; sm_90a only) with the weights as the A operand, held
** by two consumer warpgroups (one m64 tile of output channels each) in
** registers for the CTA's life, the k-steps past KR in shared memory, and
** the pixels as B, read by the tensor cores from a ring of input rows in
** shared memory that a third warpgroup fills.  For stride 4 along the
** width without dilation there.  Meets the tf32 contract.
**
** Parameters (the list starts with the template's default):
**   U    pixel tiles per output row: the wgmma N is NPX = 8*ceil(Q/(8U))
**        pixels (at most 64)
**   LP   producer threads per input row (128/LP rows per pass, the
**        threads past those idle; ceil(ceil(W/4)/LP) runs of 4 floats per
**        thread and row)
**   RL   1: an output row's new input rows go through the producer's
**        registers, loaded one unit ahead (its registers 72, a consumer's
**        216); 0: through shared memory by cp.async (40 and 232)
**
** A point is declined (valid() == 0), never offered wrong, when: the device
** is not cc 9.0 with the arch-specific target "sm_90a"; the stride along
** the width is not 4 or the dilation there not 1; NPX is above 64, or a
** unit of the row would hold no pixel; not one k-step's weights fit a
** consumer's registers beside its NPX/2 accumulators (KR < 1); with RL 1,
** an output row's new input rows (C*min(SH, SPAN)) take more than one pass
** of 128/LP rows, or a thread more than 6 runs of a row (24 registers); shared
** memory (the ring of input rows, the staging, the output slabs, the
** weights past KR, 2 KB of slack) above the block's or the SM's limit; a
** size leaves 32-bit range (wgr_valid).  Pruned (wgr_worth): K <= 64, where
** the second consumer's channels would all lie past K (correct: the
** template guards every channel, but half the CTA idles).
**
** The arithmetic mirrors the template's derived quantities; the template
** static_asserts that the CT_PLAN_* values agree.
*/
#include <stdint.h>
#include <string.h>

#include "convtune.h"
#include "ct_gen.h"

enum { WGR_U, WGR_LP, WGR_RL };

typedef struct wgr_shape {
  int64_t P, Q, npx, sg, ksteps, kr, span, newr, bcp, band, kpr, nld, smem, rows, kblocks,
      grid_x;
} wgr_shape;

/* The template's register split (CONSUMER_REGS by RL, KR_SPARE), and
** the most runs per producer thread RL keeps in registers (KPR_REG). */
#define WGR_CONSUMER_REGS(rl) ((rl) ? 216 : 232)
#define WGR_KR_SPARE 32
#define WGR_KPR_REG 6

/* Fills *sh; returns 0 (then *sh is partial) when a factor of the band
** passes 2^24 (before multiplying them: every field is <= INT32_MAX) or
** the band passes INT32_MAX floats. */
static int wgr_shape_of(const ct_problem *p, const ct_gen_limits *lim, const int *v,
                        wgr_shape *sh) {
  int64_t u = v[WGR_U];
  ct_problem_output(p, &sh->P, &sh->Q);
  sh->npx = 8 * ((sh->Q + 8 * u - 1) / (8 * u));
  sh->sg = (p->s + 3) / 4;
  sh->ksteps = (p->c * p->r * sh->sg + 1) / 2;
  sh->kr = (WGR_CONSUMER_REGS(v[WGR_RL]) - sh->npx / 2 - WGR_KR_SPARE) / 4;
  if (sh->kr > sh->ksteps) sh->kr = sh->ksteps;
  sh->span = (p->r - 1) * p->dil_h + 1;
  sh->bcp = 4 * (u * sh->npx + sh->sg - 1);
  if (sh->span > (1 << 24) || sh->bcp > (1 << 24) || p->c > (1 << 24)) return 0;
  /* The ring: RB slots (2*SPAN + min(SH, SPAN) with P >= 2, else 3*SPAN)
  ** and SPAN-1 mirror slots per channel. */
  sh->newr = p->stride_h < sh->span ? p->stride_h : sh->span;
  int64_t rb = sh->P >= 2 ? 2 * sh->span + sh->newr : 3 * sh->span;
  const int64_t band[] = {p->c, rb + sh->span - 1, sh->bcp};
  sh->band = ct_gen_checked_product(band, 3);
  if (sh->band < 0 || sh->band > INT32_MAX || p->c * sh->span > INT32_MAX) return 0;
  /* The producer's staging chunks per thread: passes of 128/LP input rows,
  ** ceil(runs/LP) runs per thread and row (the template's KPR and NLD). */
  int64_t lp = v[WGR_LP], rpp = 128 / lp;
  sh->kpr = ((p->w + 3) / 4 + lp - 1) / lp;
  sh->nld = (p->c * sh->span + rpp - 1) / rpp * sh->kpr;
  /* Floats: the band; the staging, nld float4 per producer thread; two
  ** output slabs of 64 channels x OSP (NPX, + 8 when NPX is a multiple of
  ** 16); the weights of the k-steps past KR (2 x 512 floats each); 128
  ** biases; 4 unit addresses; rounded up to 8 bytes; the template's SLACK;
  ** then 12 mbarriers of 8 bytes. */
  int64_t osp = sh->npx + (sh->npx % 16 == 0 ? 8 : 0);
  int64_t fl = sh->band + sh->nld * 128 * 4 + 2 * 64 * osp + 2 * (sh->ksteps - sh->kr) * 512 +
               128 + 4;
  sh->smem = ((fl + 1) / 2 * 2 + 512) * 4 + 12 * 8;
  sh->rows = p->n * sh->P;
  sh->kblocks = (p->k + 127) / 128;
  int64_t ctas = ct_gen_sm_count(lim) / sh->kblocks;
  if (ctas < 1) ctas = 1;
  sh->grid_x = ctas < sh->rows ? ctas : sh->rows;
  return 1;
}

static int wgr_valid(const ct_problem *p, const ct_gen_limits *lim, const int *v) {
  if (lim->cc_major != 9 || lim->cc_minor != 0 || strcmp(lim->arch, "sm_90a") != 0) return 0;
  if (p->stride_w != 4 || p->dil_w != 1) return 0;
  int64_t u = v[WGR_U];
  if (u < 1 || u > 64) return 0;
  if (v[WGR_LP] < 1 || v[WGR_LP] > 128) return 0;
  if (v[WGR_RL] != 0 && v[WGR_RL] != 1) return 0;
  wgr_shape sh;
  if (!wgr_shape_of(p, lim, v, &sh)) return 0;
  /* RL 1: a row's new input rows in one pass, at most KPR_REG runs each. */
  if (v[WGR_RL] && (sh.kpr > WGR_KPR_REG || p->c * sh.newr > 128 / v[WGR_LP])) return 0;
  if (sh.npx > 64 || (u - 1) * sh.npx >= sh.Q) return 0;
  if (sh.kr < 1) return 0; /* registers */
  const int64_t lim32 = INT32_MAX;
  if (p->n * p->c * p->h * p->w > lim32 || p->k * p->c * p->r * p->s > lim32 ||
      p->n * p->k * sh.P * sh.Q > lim32 || sh.kblocks > 65535)
    return 0;
  if (sh.smem >= (1 << 18)) return 0; /* beyond the descriptors' reach */
  /* One CTA of 384 threads per SM. */
  return ct_gen_budget_fits(lim, &(ct_gen_budget){.threads = 384, .smem = sh.smem, .blocks_per_sm = 1});
}

static int wgr_worth(const ct_problem *p, const ct_gen_limits *lim, const int *v) {
  (void)lim;
  (void)v;
  return p->k > 64; /* else an idle consumer */
}

static void wgr_plan(const ct_problem *p, const ct_gen_limits *lim, const int *v,
                     ct_gen_variant *out, char *defines, size_t len) {
  wgr_shape sh;
  wgr_shape_of(p, lim, v, &sh);
  ct_gen_plan_one(out, "conv_wgr", (unsigned)sh.grid_x, (unsigned)sh.kblocks, 384,
                  (unsigned)sh.smem, NULL, 0, defines, len);
}

const ct_gen_family ct_gen_family_wgr = {
  .name = "wgr",
  .template_name = "conv_wgr.cu",
  .precisions = 1u << CT_PREC_TF32,
  .args = CT_GEN_ARGS_POINTERS,
  .tensor_cores = 1,
  .few_channels = 1,
  .n_params = 3,
  .params = {{"U", 4, {1, 2, 3, 4}}, {"LP", 3, {10, 8, 16}}, {"RL", 2, {1, 0}}},
  .valid = wgr_valid,
  .worth = wgr_worth,
  .plan = wgr_plan,
};
