/*
** family_gm.c — the descriptors of families "gm" and "gm3"
** (templates/conv_gm.cu): the convolution as an implicit GEMM for any
** groups = 1 problem on Hopper, with the pixels gathered by TMA im2col
** loads from an NHWC copy of x and the weights by tiled TMA loads from a
** KRSC copy, wgmma (sm_90a only) in a persistent warp-specialized kernel.
** gm rounds both operands to TF32 and meets the tf32 contract; gm3 splits
** each into TF32 hi and lo copies (3xTF32, its sums in fp32 masters every
** KC k8 steps) and meets the fp32 contract.  Shape-generic: the source
** holds only the tile configuration; the problem comes in the kernels'
** arguments (ct_gm.cuh).
**
** Parameters (each list starts with the template's default):
**   BM      pixels per tile: 64 x (consumer warpgroups)
**   BN      output channels per tile = the wgmma N (gm3: at most 128, its
**           accumulators and masters take BN registers a thread)
**   BK      channels per k-tile, one swizzled shared-memory row of 4 BK
**           bytes (the swizzle and the maps' box follow from it)
**   STAGES  k-tiles in flight in the mbarrier ring
**   KC      gm3: k8 steps per accumulator chunk (whole k-tiles)
**
** Workspace: the NHWC copy of x ([NP][H][W][CP], CP = C rounded up to 4),
** then at a 1024-byte boundary the packed weights ([KP][R][S][CP]); NP >= N
** and KP >= K make each at least CT_GM_MIN_MAP_BYTES (see ct_gm.cuh).  gm3
** has two copies of each, hi then lo ([2 NP][H][W][CP], [2 KP][R][S][CP]).
** Layouts: an NHWC problem (x NHWC, w KRSC) is copied along its channels
** instead of transposed; for gm, when C % 4 = 0 and x and w are big enough,
** not copied at all: the maps read the caller's x and w, TFLOAT32, and the
** call is gm_conv alone, without workspace (gm_reads_caller).
**
** A point is declined (valid() == 0), never offered wrong, when: the device
** is not cc 9.0 with the target "sm_90a"; a stride exceeds 8 (the im2col
** map's traversal stride); a padding exceeds 127 or dil_h - pad_h,
** (S-1) dil_w - pad_w exceeds 128 (the corners of a rank-4 im2col map lie
** in [-128, 127]); dil_h or (S-1) dil_w exceeds 255 (the tap offsets
** are 8 bits); M = N P Q, the tile count, a CTA's k-tiles or a launch's
** grid leaves 31 bits, or (when the layout passes run) gm_nhwc's grid.y
** (its channel blocks) 65535;
** the images or output channels of the workspace tensors (both copies for
** gm3: the TMA coordinates are s32) leave 31 bits, H or W exceeds 2^32 or
** a stride 2^40 bytes (the maps' limits); the block does not fit the
** device (gm_valid).  Pruned
** (gm_worth): BK other than the smallest one that holds CP (or 32), BN
** (above 64) of at least twice K rounded up to 64, BM = 64 when 128-pixel tiles already
** give every SM two tiles, and STAGES other than the two deepest rings
** of the list that fit.
*/
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "convtune.h"
#include "ct_gen.h"
#include "ct_gm.cuh"

enum { GM_BM, GM_BN, GM_BK, GM_STAGES, GM_KC /* gm3 */ };

/* gm_worth reads their STAGES lists. */
extern const ct_gen_family ct_gen_family_gm, ct_gen_family_gm3;

typedef struct gm_shape {
  int64_t P, Q, cp, np, kp, m, tiles_m, tiles_n, ncb;
  int64_t x_floats, w_off, w_floats, ws_bytes;
  int64_t nhwc_blocks, pack_blocks, grid;
} gm_shape;

static int64_t round_up(int64_t v, int64_t to) { return (v + to - 1) / to * to; }

/* Fills *sh for `parts` copies of each operand (1: gm, 2: gm3); 0 when a
** size does not fit int64 on the way. */
static int gm_shape_of(const ct_problem *p, const ct_gen_limits *lim, const int *v,
                       int parts, gm_shape *sh) {
  memset(sh, 0, sizeof *sh);
  ct_problem_output(p, &sh->P, &sh->Q);
  sh->cp = round_up(p->c, 4);
  int64_t img[3] = {p->h, p->w, sh->cp}, tap[3] = {p->r, p->s, sh->cp};
  int64_t img_floats = ct_gen_checked_product(img, 3);
  int64_t tap_floats = ct_gen_checked_product(tap, 3);
  if (img_floats < 0 || tap_floats < 0) return 0;
  const int64_t min_floats = CT_GM_MIN_MAP_BYTES / 4;
  sh->np = p->n;
  if (sh->np * img_floats < min_floats) sh->np = (min_floats + img_floats - 1) / img_floats;
  sh->kp = p->k;
  if (sh->kp * tap_floats < min_floats) sh->kp = (min_floats + tap_floats - 1) / tap_floats;
  int64_t xf[3] = {parts, sh->np, img_floats}, wf[3] = {parts, sh->kp, tap_floats},
          mf[3] = {p->n, sh->P, sh->Q};
  sh->x_floats = ct_gen_checked_product(xf, 3);
  sh->w_floats = ct_gen_checked_product(wf, 3);
  sh->m = ct_gen_checked_product(mf, 3);
  if (sh->x_floats < 0 || sh->w_floats < 0 || sh->m < 0) return 0;
  if (sh->x_floats > (INT64_C(1) << 50) || sh->w_floats > (INT64_C(1) << 50)) return 0;
  sh->w_off = round_up(sh->x_floats, 256);
  sh->ws_bytes = (sh->w_off + sh->w_floats) * 4;
  sh->tiles_m = (sh->m + v[GM_BM] - 1) / v[GM_BM];
  sh->tiles_n = (p->k + v[GM_BN] - 1) / v[GM_BN];
  sh->ncb = (sh->cp + v[GM_BK] - 1) / v[GM_BK];
  sh->nhwc_blocks = (sh->np * p->h * p->w + CT_GM_PREP_PX - 1) / CT_GM_PREP_PX;
  sh->pack_blocks = sh->kp * p->r * p->s;
  int64_t tiles = sh->tiles_m * sh->tiles_n, sms = ct_gen_sm_count(lim);
  sh->grid = tiles < sms ? tiles : sms;
  return 1;
}

/* 1 when a block of (bm, bn, bk) with `stages` stages of `parts` copies
** fits the device. */
static int gm_fits(const ct_gen_limits *lim, int64_t bm, int64_t bn, int64_t bk,
                   int64_t stages, int parts) {
  ct_gen_budget bud = {.threads = CT_GM_THREADS(bm),
                       .smem = CT_GM_SMEM(bm, bn, bk, stages, parts),
                       .blocks_per_sm = 1};
  return ct_gen_budget_fits(lim, &bud);
}

/* 1 when gm (tf32, parts 1) needs no layout pass for p: an NHWC problem
** whose channels fill 16-byte rows (C % 4 = 0), so that the maps can read
** the caller's x and w as they are (TFLOAT32: rounded to nearest as they
** load), both at least CT_GM_MIN_MAP_BYTES (smaller tensors' maps may get a
** wrong out-of-bounds fill, and the GEMM's discarded rows and columns rely
** on zeros past the last image and output channel).  Then the call is one
** kernel with no workspace; its maps need x and w 16-byte aligned, which
** the runtime checks. */
static int gm_reads_caller(const ct_problem *p, int parts) {
  if (parts != 1 || p->layout != CT_LAYOUT_NHWC || p->c % 4 != 0) return 0;
  const int64_t min_floats = CT_GM_MIN_MAP_BYTES / 4;
  const int64_t xf[4] = {p->n, p->h, p->w, p->c}, wf[4] = {p->k, p->r, p->s, p->c};
  const int64_t nx = ct_gen_checked_product(xf, 4), nw = ct_gen_checked_product(wf, 4);
  return nx >= min_floats && nw >= min_floats;
}

/* The hard limits of gm (parts 1) and gm3 (parts 2). */
static int gm_valid_parts(const ct_problem *p, const ct_gen_limits *lim, const int *v,
                          int parts) {
  if (lim->cc_major != 9 || lim->cc_minor != 0 || strcmp(lim->arch, "sm_90a") != 0) return 0;
  const int64_t bm = v[GM_BM], bn = v[GM_BN], bk = v[GM_BK], stages = v[GM_STAGES];
  if ((bm != 64 && bm != 128) || (bn != 64 && bn != 128 && bn != 256) ||
      (bk != 8 && bk != 16 && bk != 32) || stages < 2)
    return 0;
  /* gm3: accumulators and masters in registers, whole k-tiles per chunk. */
  if (parts == 2 && (bn > 128 || v[GM_KC] < 1 || v[GM_KC] % (bk / 8) != 0)) return 0;
  /* The im2col map: traversal strides 1..8, corners in [-128, 127], tap
  ** offsets below 256. */
  if (p->stride_h > 8 || p->stride_w > 8) return 0;
  if (p->pad_h > 127 || p->pad_w > 127) return 0;
  const int64_t span_h = (p->r - 1) * p->dil_h, span_w = (p->s - 1) * p->dil_w;
  if (span_h > 255 || span_w > 255) return 0;
  if (span_h - p->pad_h > 128 || span_w - p->pad_w > 128) return 0;
  gm_shape sh;
  if (!gm_shape_of(p, lim, v, parts, &sh)) return 0;
  const int64_t lim31 = INT32_MAX;
  /* The kernels' int arithmetic: M, the tiles, the grids; K P Q, the
  ** k-tiles and the coordinates below 2^31 as well; a tile's last row (m0 +
  ** BM - 1), the walk over the tiles (u + grid) and the ring's counter of
  ** one CTA's k-tiles (unsigned) stay in range. */
  const int64_t ktiles = p->r * p->s * sh.ncb, tiles = sh.tiles_m * sh.tiles_n;
  if (ktiles > lim31 || sh.m > lim31 - 256 || tiles > lim31 / 2 ||
      (tiles + sh.grid - 1) / sh.grid > lim31 / ktiles || p->k * sh.P * sh.Q > lim31 ||
      p->h * p->w > lim31 || sh.cp > lim31)
    return 0;
  /* The layout passes' grids (none when the maps read the caller's x, w). */
  if (!gm_reads_caller(p, parts) &&
      (sh.nhwc_blocks > lim31 || sh.pack_blocks > lim31 ||
       (sh.cp + CT_GM_PREP_CH - 1) / CT_GM_PREP_CH > 65535))
    return 0;
  /* The maps: every dimension <= 2^32, every stride < 2^40 bytes; the
  ** copies' coordinates (image, output channel) are s32. */
  const int64_t d32 = INT64_C(1) << 32, s40 = INT64_C(1) << 40;
  if (parts * sh.np > lim31 || p->h > d32 || p->w > d32 || parts * sh.kp > lim31 ||
      sh.x_floats / (parts * sh.np) * 4 >= s40 || sh.w_floats / (parts * sh.kp) * 4 >= s40)
    return 0;
  return gm_fits(lim, bm, bn, bk, stages, parts);
}

static int gm_valid(const ct_problem *p, const ct_gen_limits *lim, const int *v) {
  return gm_valid_parts(p, lim, v, 1);
}

static int gm3_valid(const ct_problem *p, const ct_gen_limits *lim, const int *v) {
  return gm_valid_parts(p, lim, v, 2);
}

/* The pruning heuristic of gm (parts 1) and gm3 (parts 2), whose
** descriptor is f (its STAGES list). */
static int gm_worth_parts(const ct_problem *p, const ct_gen_limits *lim, const int *v,
                          const ct_gen_family *f, int parts) {
  const int64_t bm = v[GM_BM], bn = v[GM_BN], bk = v[GM_BK], stages = v[GM_STAGES];
  const int64_t cp = round_up(p->c, 4);
  const int64_t want_bk = cp <= 8 ? 8 : cp <= 16 ? 16 : 32;
  if (bk != want_bk) return 0;
  if (bn > 64 && bn / 2 >= round_up(p->k, 64)) return 0;
  if (bm == 64) {
    int64_t P, Q;
    ct_problem_output(p, &P, &Q);
    int64_t tiles128 = (p->n * P * Q + 127) / 128 * ((p->k + bn - 1) / bn);
    if (tiles128 >= 2 * ct_gen_sm_count(lim)) return 0;
  }
  /* The two deepest rings of the list that fit. */
  const ct_gen_param *sp = &f->params[GM_STAGES];
  int deeper = 0;
  for (int i = 0; i < sp->n_values; i++)
    deeper += sp->values[i] > stages && gm_fits(lim, bm, bn, bk, sp->values[i], parts);
  return deeper <= 1;
}

static int gm_worth(const ct_problem *p, const ct_gen_limits *lim, const int *v) {
  return gm_worth_parts(p, lim, v, &ct_gen_family_gm, 1);
}

static int gm3_worth(const ct_problem *p, const ct_gen_limits *lim, const int *v) {
  return gm_worth_parts(p, lim, v, &ct_gen_family_gm3, 2);
}

static void gm_launch(ct_gen_launch *l, const char *name, int64_t gx, int64_t gy,
                      unsigned threads, unsigned smem) {
  snprintf(l->name, sizeof l->name, "%s", name);
  l->grid[0] = (unsigned)gx;
  l->grid[1] = (unsigned)gy;
  l->grid[2] = 1;
  l->block[0] = threads;
  l->block[1] = l->block[2] = 1;
  l->smem = smem;
}

/* The plan of gm (parts 1) and gm3 (parts 2). */
static void gm_plan_parts(const ct_problem *p, const ct_gen_limits *lim, const int *v,
                          ct_gen_variant *out, char *defines, size_t len, int parts) {
  gm_shape sh;
  gm_shape_of(p, lim, v, parts, &sh);
  const int64_t bm = v[GM_BM], bn = v[GM_BN], bk = v[GM_BK], stages = v[GM_STAGES];
  const unsigned threads = (unsigned)CT_GM_THREADS(bm);
  const unsigned smem = (unsigned)CT_GM_SMEM(bm, bn, bk, stages, parts);
  const int caller = gm_reads_caller(p, parts);
  if (caller) {
    out->n_kernels = 1;
    gm_launch(&out->kernels[0], "gm_conv", sh.grid, 1, threads, smem);
    out->workspace_bytes = 0;
  } else {
    out->n_kernels = 3;
    gm_launch(&out->kernels[0], "gm_nhwc", sh.nhwc_blocks,
              (sh.cp + CT_GM_PREP_CH - 1) / CT_GM_PREP_CH, CT_GM_PREP_THREADS, 0);
    gm_launch(&out->kernels[1], "gm_pack", sh.pack_blocks, 1, CT_GM_PACK_THREADS, 0);
    gm_launch(&out->kernels[2], "gm_conv", sh.grid, 1, threads, smem);
    out->workspace_bytes = (size_t)sh.ws_bytes;
  }

  int64_t *a = out->kargs;
  a[CT_GM_A_N] = p->n;
  a[CT_GM_A_C] = p->c;
  a[CT_GM_A_H] = p->h;
  a[CT_GM_A_W] = p->w;
  a[CT_GM_A_K] = p->k;
  a[CT_GM_A_R] = p->r;
  a[CT_GM_A_S] = p->s;
  a[CT_GM_A_P] = sh.P;
  a[CT_GM_A_Q] = sh.Q;
  a[CT_GM_A_SH] = p->stride_h;
  a[CT_GM_A_SW] = p->stride_w;
  a[CT_GM_A_PH] = p->pad_h;
  a[CT_GM_A_PW] = p->pad_w;
  a[CT_GM_A_DH] = p->dil_h;
  a[CT_GM_A_DW] = p->dil_w;
  a[CT_GM_A_CP] = sh.cp;
  a[CT_GM_A_NP] = sh.np;
  a[CT_GM_A_KP] = sh.kp;
  a[CT_GM_A_M] = sh.m;
  a[CT_GM_A_TILES_M] = sh.tiles_m;
  a[CT_GM_A_TILES_N] = sh.tiles_n;
  a[CT_GM_A_NCB] = sh.ncb;
  a[CT_GM_A_WOFF] = sh.w_off;

  /* Map 0: im2col over the NHWC copy, dims {CP, W, H, NP} (gm3: 2 NP,
  ** the lo copy after the hi one), or over the caller's NHWC x, dims
  ** {C, W, H, N}, rounded to TF32 as it loads. */
  out->n_maps = 2;
  ct_gen_map *mx = &out->maps[0];
  mx->kind = CT_GEN_MAP_IM2COL;
  mx->buffer = caller ? CT_GEN_BUF_X : CT_GEN_BUF_WS;
  mx->tf32 = caller;
  mx->rank = 4;
  mx->offset = 0;
  mx->dims[0] = (uint64_t)sh.cp;
  mx->dims[1] = (uint64_t)p->w;
  mx->dims[2] = (uint64_t)p->h;
  mx->dims[3] = (uint64_t)(caller ? p->n : parts * sh.np);
  mx->strides[0] = (uint64_t)(sh.cp * 4);
  mx->strides[1] = (uint64_t)(p->w * sh.cp * 4);
  mx->strides[2] = (uint64_t)(p->h * p->w * sh.cp * 4);
  mx->lower[0] = (int)-p->pad_w;
  mx->lower[1] = (int)-p->pad_h;
  mx->upper[0] = (int)(p->pad_w - (p->s - 1) * p->dil_w);
  mx->upper[1] = (int)(p->pad_h - (p->r - 1) * p->dil_h);
  mx->channels = (uint32_t)bk;
  mx->pixels = (uint32_t)bm;
  mx->elem_strides[0] = 1;
  mx->elem_strides[1] = (uint32_t)p->stride_w;
  mx->elem_strides[2] = (uint32_t)p->stride_h;
  mx->elem_strides[3] = 1;
  mx->swizzle = (int)(bk * 4);
  mx->l2_promote = 0;

  /* Map 1: tiled over the packed weights, dims {CP, S, R, KP} (gm3: 2 KP),
  ** or over the caller's KRSC w, dims {C, S, R, K}, rounded as it loads;
  ** box {BK, 1, 1, BN}. */
  ct_gen_map *mw = &out->maps[1];
  mw->kind = CT_GEN_MAP_TILED;
  mw->buffer = caller ? CT_GEN_BUF_W : CT_GEN_BUF_WS;
  mw->tf32 = caller;
  mw->rank = 4;
  mw->offset = caller ? 0 : (uint64_t)(sh.w_off * 4);
  mw->dims[0] = (uint64_t)sh.cp;
  mw->dims[1] = (uint64_t)p->s;
  mw->dims[2] = (uint64_t)p->r;
  mw->dims[3] = (uint64_t)(caller ? p->k : parts * sh.kp);
  mw->strides[0] = (uint64_t)(sh.cp * 4);
  mw->strides[1] = (uint64_t)(p->s * sh.cp * 4);
  mw->strides[2] = (uint64_t)(p->r * p->s * sh.cp * 4);
  mw->box[0] = (uint32_t)bk;
  mw->box[1] = mw->box[2] = 1;
  mw->box[3] = (uint32_t)bn;
  for (int i = 0; i < 4; i++) mw->elem_strides[i] = 1;
  mw->swizzle = (int)(bk * 4);
  mw->l2_promote = 128;

  snprintf(defines, len, "%s#define CT_PLAN_BLOCK_X %u\n#define CT_PLAN_SMEM %u\n",
           parts == 2 ? "#define CT_GM_SPLIT 1\n" : "", threads, smem);
}

static void gm_plan(const ct_problem *p, const ct_gen_limits *lim, const int *v,
                    ct_gen_variant *out, char *defines, size_t len) {
  gm_plan_parts(p, lim, v, out, defines, len, 1);
}

static void gm3_plan(const ct_problem *p, const ct_gen_limits *lim, const int *v,
                     ct_gen_variant *out, char *defines, size_t len) {
  gm_plan_parts(p, lim, v, out, defines, len, 2);
}

const ct_gen_family ct_gen_family_gm = {
  .name = "gm",
  .template_name = "conv_gm.cu",
  .precisions = 1u << CT_PREC_TF32,
  .nhwc = 1,
  .args = CT_GEN_ARGS_TENSOR_MAPS,
  .tensor_cores = 1,
  .big_tensors = 1,
  .shape_generic = 1,
  .n_params = 4,
  .params = {{"BM", 2, {128, 64}},
             {"BN", 3, {128, 64, 256}},
             {"BK", 3, {32, 16, 8}},
             {"STAGES", 4, {4, 3, 6, 8}}},
  .valid = gm_valid,
  .worth = gm_worth,
  .plan = gm_plan,
};

const ct_gen_family ct_gen_family_gm3 = {
  .name = "gm3",
  .template_name = "conv_gm.cu",
  .precisions = 1u << CT_PREC_FP32,
  .nhwc = 1,
  .args = CT_GEN_ARGS_TENSOR_MAPS,
  .tensor_cores = 1,
  .big_tensors = 1,
  .shape_generic = 1,
  .n_params = 5,
  .params = {{"BM", 2, {128, 64}},
             {"BN", 2, {128, 64}},
             {"BK", 3, {32, 16, 8}},
             {"STAGES", 5, {3, 4, 2, 6, 8}},
             {"KC", 2, {8, 4}}},
  .valid = gm3_valid,
  .worth = gm3_worth,
  .plan = gm3_plan,
};
