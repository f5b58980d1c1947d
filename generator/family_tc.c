/*
** family_tc.c — the descriptors of families "tc" and "tc3", one template
** (templates/conv_tc.cu): the convolution as an implicit GEMM on tensor cores
** (mma.sync m16n8k8 TF32, fp32 accumulation), the input band of a tile of
** output rows staged in shared memory, the CTA's weights resident there.
**
**   tc   one TF32 mma per product (operands rounded to nearest even): meets
**        the tf32 contract only.
**   tc3  3xTF32 split, small terms first, the mma accumulators flushed into
**        fp32 masters every 2 k-steps: meets the fp32 contract.
**        Offered for fp32 only (for tf32 it is tc at a third of the speed).
**
** Parameters (each list starts with the template's default):
**   TP       output rows per tile (the CTA's M tile is TP*Q pixels)
**   BN       output channels per CTA (grid.y = G * ceil(K/G / BN) with G
**            groups), a multiple of 8
**   WARPS    warps per CTA
**   WN       warps along N; WARPS/WN along M
**   STAGES   1: band loaded synchronously; 2: cp.async double buffer
**   PERSIST  0: one tile per CTA; c: persistent grid, c CTAs per SM
**
** A point is declined (valid() == 0), never offered wrong, when: the tile
** does not divide into warps (WN must divide WARPS and BN/8; every warp must
** own an m16 tile); the accumulators would not stay in registers (at most
** 128 of them, and the register estimate below the cap that PERSIST's
** occupancy implies); shared memory (weights + offset table + bands) exceeds
** the device's block or, for PERSIST c, c blocks' share of an SM; or a size
** leaves 32-bit range (tc_fits).  Points that cannot win are pruned as
** well (tc_worth_common).  The direct family covers every declined problem.
**
** Grouped problems (groups = G): one GEMM per group over its C/G input
** channels, a CTA's BN output channels in one group (BN past K/G computes
** zeros it does not store), so that grouped convolutions with few
** channels per group (ResNeXt's 4 to 32) run on tensor cores.
**
** The tile layout and shared memory are templates/ct_tc.cuh's, which the
** template includes too; it static_asserts that the CT_PLAN_* values agree.
*/
#include <stdint.h>
#include <stdio.h>

#include "convtune.h"
#include "ct_gen.h"
#include "ct_tc.cuh"

enum { TC_TP, TC_BN, TC_WARPS, TC_WN, TC_STAGES, TC_PERSIST };

/* What a point needs on a problem: the template's layout (ct_tc.cuh) and
** the plan's grid.x. */
typedef struct tc_shape {
  int64_t P, Q;
  ct_tc_layout l;
  int64_t grid_x;
} tc_shape;

/* Fills *sh; returns 0 if the point's tiling is malformed or its band
** far too large (then *sh is partial). */
static int tc_shape_of(const ct_problem *p, const ct_gen_limits *lim, const int *v,
                       tc_shape *sh) {
  int64_t tp = v[TC_TP], bn = v[TC_BN], warps = v[TC_WARPS], wn = v[TC_WN];
  int64_t stages = v[TC_STAGES], persist = v[TC_PERSIST];
  if (tp < 1 || bn < 8 || bn % 8 != 0 || warps < 1 || wn < 1 ||
      warps % wn != 0 || (bn / 8) % wn != 0 || (stages != 1 && stages != 2) ||
      persist < 0)
    return 0;
  ct_problem_output(p, &sh->P, &sh->Q);
  /* Every field is <= INT32_MAX (validation); bound the band's factors
  ** before multiplying them (the template needs band <= 2^24 anyway). */
  int64_t br = ct_tc_band_rows(tp, p->stride_h, p->r, p->dil_h);
  int64_t bc = ct_tc_band_cols(sh->Q, p->stride_w, p->s, p->dil_w);
  if (br > (1 << 24) || bc > (1 << 24) || p->c / p->groups * br > (1 << 24)) return 0;
  sh->l = ct_tc_layout_of(p->n, p->c, p->k, p->groups, p->r, p->s, sh->P, sh->Q, p->stride_h,
                          p->stride_w, p->dil_h, p->dil_w, tp, bn, warps, wn, stages);
  /* PERSIST c: c CTAs per SM of the device, shared out over grid.y.  Any
  ** grid is correct (the template loops over tiles with a grid stride). */
  if (persist == 0) {
    sh->grid_x = sh->l.tiles;
  } else {
    int64_t ctas = ct_gen_sm_count(lim) * persist / sh->l.kblocks;
    if (ctas < 1) ctas = 1;
    sh->grid_x = ctas < sh->l.tiles ? ctas : sh->l.tiles;
  }
  return 1;
}

/* A register estimate per thread for the template's main loop: the
** accumulators (twice with the split: mma accumulators and fp32 masters),
** two k-steps of A and B fragments (the loop is software-pipelined), the
** split's hi/lo operands, the pixel offsets, and a fixed part for indices
** and addresses.  Within a few registers of ptxas 13.0's counts on sm_90a,
** either way; it only has to keep variants off a launch-bounds cap they
** would spill under (every variant CI compiles is checked for spills). */
static int64_t tc_regs_estimate(const tc_shape *sh, int split) {
  int64_t acc = 4 * sh->l.mw * sh->l.ntw * (split ? 2 : 1);
  int64_t frags = 2 * (4 * sh->l.mw + 2 * sh->l.ntw);
  int64_t hilo = split ? 8 * sh->l.mw + 4 * sh->l.ntw : 0;
  return acc + frags + hilo + 2 * sh->l.mw + 32;
}

extern const ct_gen_family ct_gen_family_tc;

/* The hard checks: the template compiles, keeps its accumulators in
** registers, fits the device, and is right. */
static int tc_fits(const ct_problem *p, const ct_gen_limits *lim, const int *v,
                   int split) {
  const int64_t lim32 = INT32_MAX;
  tc_shape sh;
  if (!tc_shape_of(p, lim, v, &sh)) return 0;
  int64_t stages = v[TC_STAGES], persist = v[TC_PERSIST];
  if (stages == 2 && persist == 0) return 0; /* nothing to overlap */
  if (sh.l.wgm > sh.l.mt) return 0; /* a warp without an m16 tile */
  /* 32-bit tensors (the problem's validation guarantees them; checked here
  ** too because the template asserts them) and the template's int sizes. */
  if (p->n * p->c * p->h * p->w > lim32 || p->k * sh.l.crs > lim32 ||
      p->n * p->k * sh.P * sh.Q > lim32)
    return 0;
  if (sh.l.band > (1 << 24) || sh.l.ksteps * sh.l.nt * 64 > (1 << 24) ||
      v[TC_BN] * sh.l.kp > (1 << 24) || sh.l.mt * 16 > (1 << 24) ||
      sh.l.tiles > (INT64_C(1) << 30) || sh.l.kblocks > 65535)
    return 0;
  /* Registers: accumulators capped; the estimate within the occupancy cap. */
  if (4 * sh.l.mw * sh.l.ntw * (split ? 2 : 1) > 128) return 0;
  if (tc_regs_estimate(&sh, split) > ct_gen_regs_cap(lim, persist > 0 ? persist : 1, sh.l.threads))
    return 0;
  /* Threads and shared memory: the block, and PERSIST blocks per SM. */
  return ct_gen_budget_fits(
      lim, &(ct_gen_budget){.threads = sh.l.threads, .smem = sh.l.smem, .blocks_per_sm = persist});
}

/* Channels computed beyond the K/G of each of p's G groups with BN
** channels per CTA. */
static int64_t tc_channel_waste(const ct_problem *p, int64_t bn) {
  const int64_t kg = p->k / p->groups;
  return ((kg + bn - 1) / bn * bn - kg) * p->groups;
}

/* The pruning heuristic, points that tc_fits passes but cannot win, to keep
** the space small:
**  - BN wasting more than K/4 channels beyond the least waste of any BN
**    listed (for K = 96: 64 is out, 96 48 32 16 stay; with groups, the
**    waste of every group);
**  - warp tiles whose shared-memory loads per mma exceed 2.5 wavefronts
**    (4 per m16 tile for A, 2 per n8 tile for B, 1 for the offsets),
**    unless K <= 16 or the problem is grouped (nothing better to offer
**    then: only FFMA runs it otherwise);
**  - grouped problems with fewer than 4 output channels a group (a
**    depthwise one's K/G of 1 or 2 fills at most a quarter of an n8
**    tile: dw and dwc run those);
**  - PERSIST 0 when the weight tile it re-stages per tile exceeds 16 KB;
**  - STAGES 1 with PERSIST 1 when the same point fits double-buffered or
**    with two CTAs per SM (either hides the band load; this one cannot). */
static int tc_worth_common(const ct_problem *p, const ct_gen_limits *lim,
                           const int *v, int split) {
  tc_shape sh;
  tc_shape_of(p, lim, v, &sh);
  const ct_gen_param *bns = &ct_gen_family_tc.params[TC_BN];
  int64_t least = INT64_MAX;
  for (int i = 0; i < bns->n_values; i++) {
    int64_t wst = tc_channel_waste(p, bns->values[i]);
    if (wst < least) least = wst;
  }
  if (4 * tc_channel_waste(p, v[TC_BN]) > 4 * least + p->k) return 0;
  if (p->groups > 1 && p->k / p->groups < 4) return 0;
  if (p->k > 16 && p->groups == 1 &&
      2 * (4 * sh.l.mw + 2 * sh.l.ntw + 1) > 5 * sh.l.mw * sh.l.ntw)
    return 0;
  if (v[TC_PERSIST] == 0 && v[TC_BN] * sh.l.kp * 4 > 16384) return 0;
  if (v[TC_STAGES] == 1 && v[TC_PERSIST] == 1) {
    int alt[CT_GEN_MAX_PARAMS];
    for (int i = 0; i < CT_GEN_MAX_PARAMS; i++) alt[i] = v[i];
    alt[TC_STAGES] = 2;
    if (tc_fits(p, lim, alt, split)) return 0;
    alt[TC_STAGES] = 1;
    alt[TC_PERSIST] = 2;
    if (tc_fits(p, lim, alt, split)) return 0;
  }
  return 1;
}

static int tc_valid(const ct_problem *p, const ct_gen_limits *lim,
                    const int *v) {
  return tc_fits(p, lim, v, 0);
}

static int tc3_valid(const ct_problem *p, const ct_gen_limits *lim,
                     const int *v) {
  return tc_fits(p, lim, v, 1);
}

static int tc_worth(const ct_problem *p, const ct_gen_limits *lim,
                    const int *v) {
  return tc_worth_common(p, lim, v, 0);
}

static int tc3_worth(const ct_problem *p, const ct_gen_limits *lim,
                     const int *v) {
  return tc_worth_common(p, lim, v, 1);
}

static void tc_plan_common(const ct_problem *p, const ct_gen_limits *lim,
                           const int *v, ct_gen_variant *out, char *defines,
                           size_t len, int split) {
  tc_shape sh;
  tc_shape_of(p, lim, v, &sh);
  ct_gen_plan_one(out, "conv_tc", (unsigned)sh.grid_x, (unsigned)sh.l.kblocks,
                  (unsigned)sh.l.threads, (unsigned)sh.l.smem, "CT_TC_SPLIT", split, defines,
                  len);
}

static void tc_plan(const ct_problem *p, const ct_gen_limits *lim, const int *v,
                    ct_gen_variant *out, char *defines, size_t len) {
  tc_plan_common(p, lim, v, out, defines, len, 0);
}

static void tc3_plan(const ct_problem *p, const ct_gen_limits *lim, const int *v,
                     ct_gen_variant *out, char *defines, size_t len) {
  tc_plan_common(p, lim, v, out, defines, len, 1);
}

#define TC_PARAMS                        \
  {                                      \
    {"TP", 4, {2, 1, 4, 3}},             \
    {"BN", 6, {96, 48, 32, 64, 16, 8}},  \
    {"WARPS", 2, {4, 8}},                \
    {"WN", 3, {4, 2, 1}},                \
    {"STAGES", 2, {2, 1}},               \
    {"PERSIST", 3, {1, 2, 0}},           \
  }

const ct_gen_family ct_gen_family_tc = {
  .name = "tc",
  .template_name = "conv_tc.cu",
  .precisions = 1u << CT_PREC_TF32,
  .args = CT_GEN_ARGS_POINTERS,
  .tensor_cores = 1,
  .few_channels = 1,
  .groups = 1,
  .n_params = 6,
  .params = TC_PARAMS,
  .valid = tc_valid,
  .worth = tc_worth,
  .plan = tc_plan,
};

const ct_gen_family ct_gen_family_tc3 = {
  .name = "tc3",
  .template_name = "conv_tc.cu",
  .precisions = 1u << CT_PREC_FP32,
  .args = CT_GEN_ARGS_POINTERS,
  .tensor_cores = 1,
  .few_channels = 1,
  .groups = 1,
  .n_params = 6,
  .params = TC_PARAMS,
  .valid = tc3_valid,
  .worth = tc3_worth,
  .plan = tc3_plan,
};
