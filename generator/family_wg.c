/*
** family_wg.c — the descriptors of families "wg" and "wg3", one template
** (templates/conv_wg.cu): the convolution as an implicit GEMM on Hopper's
** warpgroup tensor-core instruction (wgmma.mma_async m64nNk8 TF32, fp32
** accumulation; sm_90a only), A (the pixels) gathered from a shared-memory
** input band into registers, B (the CTA's weights) resident in shared memory
** and read by the tensor cores through a matrix descriptor.
**
**   wg   one TF32 wgmma per product (operands rounded to nearest even): meets
**        the tf32 contract only.
**   wg3  3xTF32 split, small terms first, the wgmma accumulators flushed
**        into fp32 masters every KC k-steps: meets the fp32 contract.
**        Offered for fp32 only.
**   s2d_wg, s2d_wg3 (templates/conv_s2d.cu, below the wg descriptors): a
**        space-to-depth pass of x and w into a workspace, then wg / wg3 on
**        the stride-1, unpadded problem it makes (three launches).
**
** Parameters (each list starts with the template's default):
**   TP       output rows per tile (the CTA's M tile is TP*Q pixels, in m64
**            tiles)
**   BN       output channels per CTA = the wgmma N (grid.y = ceil(K/BN))
**   WG       warpgroups (128 threads) per CTA; each owns MT/WG m64 tiles
**   STAGES   1: band loaded between barriers; 2: cp.async double buffer
**   CTAS     CTAs per SM of the persistent grid
**   KG       wg: k8 steps per wgmma group; the gather of the next group
**            overlaps the running one
**   KC       wg3: k8 steps per accumulator chunk (the flush period into the
**            fp32 masters).  8 doubles the headline's error against 4, to
**            4.5e-7 relative, within the contract's 1e-6, but that error
**            is a bias towards zero, which adds up through a network's
**            layers: gm3's families offer 4 alone (conv_gm.cu); wg3
**            keeps 8, where the headline wins, for the stems of 4
**            channels or fewer; past that, 2 and 4 (ResNet-50's batch-1
**            fp32 output erred 4.0 times as much as PyTorch's with 8 on
**            its 64-channel 1x1 layers, past the network check's 4)
**   PP       1: ping-pong, each of the two warpgroups works its own tiles
**            with its own band (STAGES 1), so one's band load and epilogue
**            overlap the other's wgmma; 0: both on one tile
**   AS       wg: A register sets; the gathers run AS-1 groups ahead of the
**            wgmma that use them (wg3, s2d_wg, s2d_wg3: 2)
**   KS       wg3: CTAs of a cluster that share out the k-steps of each tile
**            (2: each holds the weights of half of them, so BN = 96 fits
**            with its hi and lo arrays; the two add their sums through
**            distributed shared memory; a producer warpgroup copies the
**            bands and stores the outputs).  With PP 1 and BN a multiple of
**            16 only.
**
** A point is declined (valid() == 0), never offered wrong, when: the device
** is not cc 9.0 with the arch-specific target "sm_90a" (wgmma); BN is not
** one of the template's wgmma widths; WG does not divide the m64 tile count;
** the accumulators would not stay in registers (at most 128 for wg, 160 with
** the split's second set and masters; the register estimate below the cap
** that CTAS's occupancy implies); shared memory (weights + offset table +
** bands) exceeds the device's block or CTAS blocks' share of an SM (which
** also bounds C*R*S: the weights of BN channels must fit); or a size leaves
** 32-bit range (wg_fits).  Points that cannot win are pruned as well
** (wg_worth_common).  The direct family covers every declined problem.
**
** Layouts: wg and wg3 take an NHWC problem (x NHWC, w KRSC, y NPQK) at
** the same points, but for KS 2 (its producer's bulk copies are of NCHW
** rows): the band is filled a float at a time and keeps its layout, the
** weights are staged in KCRS order from KRSC, the outputs stored a
** pixel's channels side by side (conv_wg.cu).  The 3-channel stems of
** channels-last networks are theirs: ResNet-50's at batch 32 (H200) takes
** wg 0.093 ms and wg3 0.184 ms, against direct's 0.47 ms at both
** precisions, which was all it had.
**
** The launch arithmetic below mirrors the template's derived quantities;
** the template static_asserts that the CT_PLAN_* values agree.
*/
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "convtune.h"
#include "ct_gen.h"

enum { WG_TP, WG_BN, WG_WG, WG_STAGES, WG_CTAS, WG_KGC /* KG (wg) or KC (wg3) */, WG_PP,
       WG_ASKS /* AS (wg) or KS (wg3) */ };

/* What a point needs on a problem, in 64-bit arithmetic; the names are the
** template's. */
typedef struct wg_shape {
  int64_t P, Q;
  int64_t threads, nacc, tm, mt, mw;
  int64_t crs, ksteps, kp, br, bc, band, band_pad;
  int64_t smem;          /* dynamic shared memory, bytes */
  int64_t tiles;         /* N * ceil(P/TP) */
  int64_t kblocks;       /* ceil(K/BN) = grid.y */
  int64_t grid_x;        /* KS * clusters with KS 2 */
} wg_shape;

/* 1 if the template accepts N = bn (its static_assert on BN). */
static int wg_bn_supported(int64_t bn) {
  return bn == 16 || bn == 32 || bn == 48 || bn == 64 || bn == 96;
}

/* Fills *sh; returns 0 if the point's tiling is malformed (then *sh is
** partial). */
static int wg_shape_of(const ct_problem *p, const ct_gen_limits *lim, const int *v,
                       int split, int ks, wg_shape *sh) {
  int64_t tp = v[WG_TP], bn = v[WG_BN], nwg = v[WG_WG];
  int64_t stages = v[WG_STAGES], ctas = v[WG_CTAS];
  if (tp < 1 || !wg_bn_supported(bn) || (nwg != 1 && nwg != 2) ||
      (stages != 1 && stages != 2) || ctas < 1 || v[WG_KGC] < 1 || v[WG_KGC] > 8 ||
      (v[WG_PP] != 0 && v[WG_PP] != 1))
    return 0;
  int pp = v[WG_PP];
  if (pp && (nwg != 2 || stages != 1)) return 0; /* the template's PP shape */
  if (ks != 1 && (ks != 2 || !split || pp != 1 || bn % 16 != 0)) return 0;
  ct_problem_output(p, &sh->P, &sh->Q);
  sh->threads = 128 * nwg + (ks == 2 ? 128 : 0); /* KS 2: and the producer */
  sh->nacc = bn / 2;
  sh->tm = tp * sh->Q;
  sh->mt = (sh->tm + 63) / 64;
  if (!pp && sh->mt % nwg != 0) return 0; /* a warpgroup would lack an m64 tile */
  sh->mw = pp ? sh->mt : sh->mt / nwg;
  sh->crs = p->c * p->r * p->s;
  sh->ksteps = ((sh->crs + 7) / 8 + ks - 1) / ks; /* this CTA's */
  sh->kp = sh->ksteps * 8;
  sh->br = (tp - 1) * p->stride_h + (p->r - 1) * p->dil_h + 1;
  sh->bc = (sh->Q - 1) * p->stride_w + (p->s - 1) * p->dil_w + 1;
  /* the template's SHIFT and BCP: rows padded so input column 0 is 16-byte
  ** aligned */
  int64_t shift = (4 - p->pad_w % 4) % 4, bcp = (shift + sh->bc + 3) / 4 * 4;
  /* Every field is <= INT32_MAX (validation); bound the band's factors
  ** before multiplying them (the template needs band <= 2^24 anyway). */
  if (sh->br > (1 << 24) || bcp > (1 << 24) || p->c * sh->br > (1 << 24)) return 0;
  /* the band's channels: C, or with KS 2 the most either half of the
  ** k-steps touches (the template's CB) */
  int64_t cb = p->c;
  if (ks == 2) {
    int64_t rs = p->r * p->s, c0 = p->c, c1 = 1; /* rank 0's, rank 1's */
    if (sh->kp < sh->crs) {
      c0 = (sh->kp - 1) / rs + 1;
      c1 = p->c - sh->kp / rs;
    }
    cb = c0 > c1 ? c0 : c1;
  }
  sh->band = cb * sh->br * bcp;
  sh->band_pad = (sh->band + 3) / 4 * 4;
  /* weights, offset table (KSTEPS rows plus those gathered past the end:
  ** KG for wg, 2 for wg3), biases, bands */
  sh->smem = ((split ? 2 : 1) * bn * sh->kp + (sh->ksteps + (split ? 2 : v[WG_KGC])) * 8 +
              bn /* biases */ + (pp ? nwg : 1) * stages * sh->band_pad) * 4;
  /* KS 2: each warpgroup's output area (the other CTA's sums, then its
  ** staged outputs: the template's OUTF) and ten mbarriers. */
  if (ks == 2) {
    int64_t recv = sh->mw * 128 * (bn / 4), staged = (bn / 2) * (sh->mt * 64 + 4);
    int64_t outf = ((recv > staged ? recv : staged) + 3) / 4 * 4;
    sh->smem += nwg * outf * 4 + 10 * 8;
  }
  sh->tiles = p->n * ((sh->P + tp - 1) / tp);
  sh->kblocks = (p->k + bn - 1) / bn;
  /* CTAS per SM of the device, shared out over grid.y; KS 2: clusters of
  ** two CTAs, each cluster on tiles of its own.  Any grid is correct: the
  ** template loops over tiles with a grid stride. */
  int64_t ctas_total = ct_gen_sm_count(lim) * ctas / sh->kblocks / ks;
  if (ctas_total < 1) ctas_total = 1;
  sh->grid_x = ks * (ctas_total < sh->tiles ? ctas_total : sh->tiles);
  return 1;
}

/* A register estimate per thread for the template's main loop: the
** accumulators (x3 with the split: two sets and the masters), two A register
** sets (hi, and lo with the split), the pixel offsets, and a fixed part for
** indices, descriptors and addresses.  Checked against ptxas 13.0 on sm_90a
** (it overestimates; the point is never to pass a variant that spills). */
static int64_t wg_regs_estimate(const wg_shape *sh, const int *v, int split, int as) {
  int64_t acc = sh->mw * sh->nacc * (split ? 3 : 1);
  int64_t a = as * 4 * sh->mw * (split ? 2 : v[WG_KGC]);
  if (split) a += 2 * 4 * sh->mw; /* the raw values loaded ahead */
  return acc + a + 2 * sh->mw + 40;
}

/* The hard checks: the template compiles, keeps its accumulators in
** registers, fits the device, and is right. */
static int wg_fits(const ct_problem *p, const ct_gen_limits *lim, const int *v,
                   int split, int as, int ks) {
  const int64_t lim32 = INT32_MAX;
  if (lim->cc_major != 9 || lim->cc_minor != 0 || strcmp(lim->arch, "sm_90a") != 0)
    return 0;
  wg_shape sh;
  if (!wg_shape_of(p, lim, v, split, ks, &sh)) return 0;
  int64_t ctas = v[WG_CTAS];
  /* 32-bit tensors (the problem's validation guarantees them; checked here
  ** too because the template asserts them) and the template's int sizes. */
  if (p->n * p->c * p->h * p->w > lim32 || p->k * sh.crs > lim32 ||
      p->n * p->k * sh.P * sh.Q > lim32)
    return 0;
  if (sh.band > (1 << 24) || v[WG_BN] * sh.kp > (1 << 24) || sh.mt * 64 > (1 << 24) ||
      sh.tiles > (INT64_C(1) << 30) || sh.kblocks > 65535)
    return 0;
  /* Registers: accumulators capped; the estimate within the occupancy cap. */
  if (sh.mw * sh.nacc * (split ? 3 : 1) > (split ? 160 : 128)) return 0;
  int64_t cap = ct_gen_regs_cap(lim, ctas, sh.threads);
  /* KS 2: the template's setmaxnreg gives each consumer thread 232 of the
  ** 384 x 168 (2*128*232 + 128*40), with one CTA per SM. */
  if (ks == 2) {
    /* and its producer's bulk copies of NCHW rows */
    if (ctas != 1 || lim->regs_per_sm < 65536 || p->layout != CT_LAYOUT_NCHW) return 0;
    cap = 232;
  }
  if (as < 2 || as > 3 || (split && as != 2)) return 0;
  if (wg_regs_estimate(&sh, v, split, as) > cap) return 0;
  /* Threads and shared memory: the block (the template asserts 227 KB; the
  ** weights' descriptors reach 256 KB), and CTAS blocks per SM. */
  return ct_gen_budget_fits(
      lim, &(ct_gen_budget){.threads = sh.threads, .smem = sh.smem, .blocks_per_sm = ctas});
}

/* Channels computed beyond K with BN channels per CTA. */
static int64_t wg_channel_waste(int64_t k, int64_t bn) {
  return (k + bn - 1) / bn * bn - k;
}

extern const ct_gen_family ct_gen_family_wg;

/* 1 if bn passes the channel-waste rule: it wastes at most K/4 channels
** beyond the least waste of any BN listed. */
static int wg_bn_waste_ok(int64_t k, int64_t bn) {
  const ct_gen_param *bns = &ct_gen_family_wg.params[WG_BN];
  int64_t least = INT64_MAX;
  for (int i = 0; i < bns->n_values; i++) {
    int64_t wst = wg_channel_waste(k, bns->values[i]);
    if (wst < least) least = wst;
  }
  return 4 * wg_channel_waste(k, bn) <= 4 * least + k;
}

/* The pruning heuristic, points that wg_fits passes but cannot win, to keep
** the space small:
**  - BN wasting more than K/4 channels beyond the least waste of any BN
**    listed (for K = 96: 64 is out), and BN below 48 when a larger listed
**    BN passes that rule (each CTA along N gathers A again: narrow ones
**    only pay off for small K);
**  - m64 tiles less than half full (TP*Q < 32*MT: tiny Q);
**  - STAGES 1 with CTAS 1 when the same point fits double-buffered or with
**    two CTAs per SM (either hides the band load; this one cannot). */
static int wg_worth_common(const ct_problem *p, const ct_gen_limits *lim,
                           const int *v, int split, int as, int ks) {
  wg_shape sh;
  wg_shape_of(p, lim, v, split, ks, &sh);
  if (!wg_bn_waste_ok(p->k, v[WG_BN])) return 0;
  if (v[WG_BN] < 48) {
    const ct_gen_param *bns = &ct_gen_family_wg.params[WG_BN];
    for (int i = 0; i < bns->n_values; i++)
      if (bns->values[i] > v[WG_BN] && wg_bn_waste_ok(p->k, bns->values[i])) return 0;
  }
  if (2 * sh.tm < 64 * sh.mt) return 0;
  if (v[WG_STAGES] == 1 && v[WG_CTAS] == 1 && !v[WG_PP]) {
    int alt[CT_GEN_MAX_PARAMS];
    for (int i = 0; i < CT_GEN_MAX_PARAMS; i++) alt[i] = v[i];
    alt[WG_STAGES] = 2;
    if (wg_fits(p, lim, alt, split, as, ks)) return 0;
    alt[WG_STAGES] = 1;
    alt[WG_CTAS] = 2;
    if (wg_fits(p, lim, alt, split, as, ks)) return 0;
  }
  return 1;
}

static int wg_valid(const ct_problem *p, const ct_gen_limits *lim,
                    const int *v) {
  return wg_fits(p, lim, v, 0, v[WG_ASKS], 1);
}

static int wg3_valid(const ct_problem *p, const ct_gen_limits *lim,
                     const int *v) {
  return wg_fits(p, lim, v, 1, 2, v[WG_ASKS]);
}

static int wg_worth(const ct_problem *p, const ct_gen_limits *lim,
                    const int *v) {
  return wg_worth_common(p, lim, v, 0, v[WG_ASKS], 1);
}

static int wg3_worth(const ct_problem *p, const ct_gen_limits *lim,
                     const int *v) {
  /* KC = 8 for the few-channel stems alone (see KC above). */
  if (v[WG_KGC] == 8 && p->c > 4) return 0;
  return wg_worth_common(p, lim, v, 1, 2, v[WG_ASKS]);
}

static void wg_plan_common(const ct_problem *p, const ct_gen_limits *lim,
                           const int *v, ct_gen_variant *out, char *defines,
                           size_t len, int split, int ks) {
  wg_shape sh;
  wg_shape_of(p, lim, v, split, ks, &sh);
  ct_gen_plan_one(out, "conv_wg", (unsigned)sh.grid_x, (unsigned)sh.kblocks,
                  (unsigned)sh.threads, (unsigned)sh.smem, "CT_WG_SPLIT", split, defines,
                  len);
}

static void wg_plan(const ct_problem *p, const ct_gen_limits *lim, const int *v,
                    ct_gen_variant *out, char *defines, size_t len) {
  wg_plan_common(p, lim, v, out, defines, len, 0, 1);
}

static void wg3_plan(const ct_problem *p, const ct_gen_limits *lim, const int *v,
                     ct_gen_variant *out, char *defines, size_t len) {
  wg_plan_common(p, lim, v, out, defines, len, 1, v[WG_ASKS]);
}

/* ---------------------------------------------------------------------- */
/* s2d_wg, s2d_wg3: a space-to-depth pass, then wg / wg3 on its result     */
/* (templates/conv_s2d.cu has the transform and why it is the same conv).  */

/* The problem conv_wg sees after the transform: C*SH*SW channels of
** (P+R'-1) x (Q+S'-1), an R' x S' kernel (R' = ceil(R/SH), S' =
** ceil(S/SW)), stride 1, no padding.  Returns 0 where the transform does
** not apply: dilation other than 1, stride 1 x 1 (nothing to fold), or
** C*SH*SW beyond INT32_MAX (every stride up to INT32_MAX is valid). */
static int s2d_problem(const ct_problem *p, ct_problem *t) {
  if (p->dil_h != 1 || p->dil_w != 1 || (p->stride_h == 1 && p->stride_w == 1)) return 0;
  int64_t c = ct_gen_checked_product((const int64_t[]){p->c, p->stride_h, p->stride_w}, 3);
  if (c < 0 || c > INT32_MAX) return 0;
  int64_t P, Q;
  ct_problem_output(p, &P, &Q);
  *t = *p;
  t->c = c;
  t->r = (p->r + p->stride_h - 1) / p->stride_h;
  t->s = (p->s + p->stride_w - 1) / p->stride_w;
  t->h = P + t->r - 1;
  t->w = Q + t->s - 1;
  t->stride_h = t->stride_w = 1;
  t->pad_h = t->pad_w = 0;
  return 1;
}

/* Floats of x' (rounded up to 16 bytes: w' follows it in the workspace)
** and of w'; -1 for a count beyond INT32_MAX. */
static void s2d_sizes(const ct_problem *t, int64_t *nx, int64_t *nw) {
  *nx = ct_gen_checked_product((const int64_t[]){t->n, t->c, t->h, t->w}, 4);
  *nw = ct_gen_checked_product((const int64_t[]){t->k, t->c, t->r, t->s}, 4);
  if (*nx > INT32_MAX) *nx = -1;
  if (*nw > INT32_MAX) *nw = -1;
  if (*nx >= 0) *nx = (*nx + 3) / 4 * 4;
}

/* The hard limits: the transform applies, its workspace counts fit 32
** bits, and wg / wg3 fit the transformed problem. */
static int s2d_valid_common(const ct_problem *p, const ct_gen_limits *lim,
                            const int *v, int split) {
  ct_problem t;
  if (!s2d_problem(p, &t)) return 0;
  int64_t nx, nw;
  s2d_sizes(&t, &nx, &nw);
  if (nx < 0 || nw < 0 || nx + nw > INT32_MAX) return 0;
  return wg_fits(&t, lim, v, split, 2, 1);
}

static int s2d_wg_valid(const ct_problem *p, const ct_gen_limits *lim,
                        const int *v) {
  return s2d_valid_common(p, lim, v, 0);
}

static int s2d_wg3_valid(const ct_problem *p, const ct_gen_limits *lim,
                         const int *v) {
  return s2d_valid_common(p, lim, v, 1);
}

/* The pruning heuristic: wg's, on the transformed problem. */
static int s2d_worth_common(const ct_problem *p, const ct_gen_limits *lim,
                            const int *v, int split) {
  ct_problem t;
  s2d_problem(p, &t);
  return wg_worth_common(&t, lim, v, split, 2, 1);
}

static int s2d_wg_worth(const ct_problem *p, const ct_gen_limits *lim,
                        const int *v) {
  return s2d_worth_common(p, lim, v, 0);
}

static int s2d_wg3_worth(const ct_problem *p, const ct_gen_limits *lim,
                         const int *v) {
  return s2d_worth_common(p, lim, v, 1);
}

/* Blocks of 256 threads for a grid-stride pass over n elements: at most
** cap (a multiple of the device's SMs), never more than the elements
** need. */
static unsigned s2d_blocks(int64_t n, int64_t cap) {
  int64_t b = (n + 255) / 256;
  return (unsigned)(b < cap ? (b > 0 ? b : 1) : cap);
}

static void s2d_plan_common(const ct_problem *p, const ct_gen_limits *lim,
                            const int *v, ct_gen_variant *out, char *defines,
                            size_t len, int split) {
  ct_problem t;
  s2d_problem(p, &t);
  int64_t nx, nw;
  s2d_sizes(&t, &nx, &nw);
  wg_plan_common(&t, lim, v, out, defines, len, split, 1); /* launch 0: conv_wg */
  out->kernels[2] = out->kernels[0];
  ct_gen_launch *lx = &out->kernels[0], *lw = &out->kernels[1];
  memset(lx, 0, sizeof *lx);
  memset(lw, 0, sizeof *lw);
  snprintf(lx->name, sizeof lx->name, "s2d_x");
  snprintf(lw->name, sizeof lw->name, "s2d_w");
  lx->grid[0] = s2d_blocks(nx, 16 * ct_gen_sm_count(lim));
  lw->grid[0] = s2d_blocks(nw, 4 * ct_gen_sm_count(lim));
  lx->grid[1] = lx->grid[2] = lw->grid[1] = lw->grid[2] = 1;
  lx->block[0] = lw->block[0] = 256;
  lx->block[1] = lx->block[2] = lw->block[1] = lw->block[2] = 1;
  out->n_kernels = 3;
  out->workspace_bytes = (size_t)(nx + nw) * sizeof(float);
  size_t used = strlen(defines);
  snprintf(defines + used, len - used,
           "#define CT_S2D_C %" PRId64 "\n#define CT_S2D_H %" PRId64
           "\n#define CT_S2D_W %" PRId64 "\n#define CT_S2D_R %" PRId64
           "\n#define CT_S2D_S %" PRId64 "\n#define CT_S2D_XS_OFF %" PRId64 "\n",
           t.c, t.h, t.w, t.r, t.s, nx);
}

static void s2d_wg_plan(const ct_problem *p, const ct_gen_limits *lim, const int *v,
                        ct_gen_variant *out, char *defines, size_t len) {
  s2d_plan_common(p, lim, v, out, defines, len, 0);
}

static void s2d_wg3_plan(const ct_problem *p, const ct_gen_limits *lim, const int *v,
                         ct_gen_variant *out, char *defines, size_t len) {
  s2d_plan_common(p, lim, v, out, defines, len, 1);
}

/* The parameters wg and wg3 share, in order (WG_TP .. WG_CTAS). */
#define WG_HEAD_PARAMS                   \
    {"TP", 3, {2, 1, 4}},                \
    {"BN", 5, {96, 48, 64, 32, 16}},     \
    {"WG", 2, {1, 2}},                   \
    {"STAGES", 2, {2, 1}},               \
    {"CTAS", 2, {1, 2}}

const ct_gen_family ct_gen_family_wg = {
  .name = "wg",
  .template_name = "conv_wg.cu",
  .precisions = 1u << CT_PREC_TF32,
  .nhwc = 1,
  .args = CT_GEN_ARGS_POINTERS,
  .tensor_cores = 1,
  .few_channels = 1,
  .n_params = 8,
  .params = {WG_HEAD_PARAMS, {"KG", 3, {4, 2, 1}}, {"PP", 2, {0, 1}}, {"AS", 2, {2, 3}}},
  .valid = wg_valid,
  .worth = wg_worth,
  .plan = wg_plan,
};

const ct_gen_family ct_gen_family_wg3 = {
  .name = "wg3",
  .template_name = "conv_wg.cu",
  .precisions = 1u << CT_PREC_FP32,
  .nhwc = 1,
  .args = CT_GEN_ARGS_POINTERS,
  .tensor_cores = 1,
  .few_channels = 1,
  .n_params = 8,
  .params = {WG_HEAD_PARAMS, {"KC", 3, {2, 4, 8}}, {"PP", 2, {0, 1}}, {"KS", 2, {1, 2}}},
  .valid = wg3_valid,
  .worth = wg3_worth,
  .plan = wg3_plan,
};

/* wg's points, less KG and KC values other than the ones that win on wg
** and wg3 (the transformed problems are stride-1 ones with a short kernel,
** where the pass costs more than those parameters move). */
const ct_gen_family ct_gen_family_s2d_wg = {
  .name = "s2d_wg",
  .template_name = "conv_s2d.cu",
  .precisions = 1u << CT_PREC_TF32,
  .args = CT_GEN_ARGS_POINTERS,
  .tensor_cores = 1,
  .few_channels = 1,
  .n_params = 7,
  .params = {WG_HEAD_PARAMS, {"KG", 1, {4}}, {"PP", 2, {0, 1}}},
  .valid = s2d_wg_valid,
  .worth = s2d_wg_worth,
  .plan = s2d_wg_plan,
};

const ct_gen_family ct_gen_family_s2d_wg3 = {
  .name = "s2d_wg3",
  .template_name = "conv_s2d.cu",
  .precisions = 1u << CT_PREC_FP32,
  .args = CT_GEN_ARGS_POINTERS,
  .tensor_cores = 1,
  .few_channels = 1,
  .n_params = 7,
  .params = {WG_HEAD_PARAMS, {"KC", 1, {4}}, {"PP", 2, {0, 1}}},
  .valid = s2d_wg3_valid,
  .worth = s2d_wg3_worth,
  .plan = s2d_wg3_plan,
};
