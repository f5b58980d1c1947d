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
** gmp and gmp3 run the same GEMM kernel (CT_GM_PATCH 1) over an explicit
** patch matrix instead of an im2col map: gm_patch writes [NP][P][Q][KG]
** (KG = R S C rounded up to 4; ct_gm.cuh has the column order, which
** makes the packed weights w's own rows), gm_wpack [KP][KG], and gm_conv
** sees a 1x1, stride-1, unpadded convolution over a P x Q image of KG
** channels (gm_patch_view).  So they take what im2col cannot (a stride
** above 8, ViT's patches; corners or tap offsets past its ranges), and
** save the depth that padding each tap's channels to BK wastes when C is
** small; their cost is the matrix, R S / (stride_h stride_w) times x.
** gmk and gmk3 are gm and gm3 with each tile's reduction split into SK
** runs (split-K: partials in the workspace, gm_reduce adds them), for
** problems whose tiles leave SMs idle.  gme and gme3 are gm and gm3 with
** the epilogue staged: the consumers write a tile's outputs (bias and
** activation applied) into shared memory, [BN][BM + 4], and one bulk copy
** per output channel and image segment stores each channel's run of
** pixels, so that the consumers go on to the next tile while the copies
** drain (the stores were in series with the mainloop, most of the time
** of output-bound layers such as KernelBench 63's); NCHW output planes of
** a multiple of 4 pixels only (16-byte runs).  pw and pw3 (below) read a 1x1
** NCHW problem's x in place; pwq is pw at BM = 64 with two consumer
** warpgroups taking the CTA's tiles in turn (ping-pong: one's epilogue
** beside the other's mainloop), offered where its tiles give every
** consumer two or more.
**
** Parameters (each list starts with the template's default):
**   BM      pixels per tile: 64 x (consumer warpgroups); pwq: 64, each
**           of its two consumers on tiles of its own
**   BN      output channels per tile = the wgmma N (gm3: at most 128, its
**           accumulators and masters take BN registers a thread)
**   BK      channels per k-tile, one swizzled shared-memory row of 4 BK
**           bytes (the swizzle and the maps' box follow from it)
**   STAGES  k-tiles in flight in the mbarrier ring
**   KC      gm3: k8 steps per accumulator chunk (whole k-tiles): 4 only,
**           the bias of the chunks' truncated sums in proportion to it
**           (conv_gm.cu): ResNet-50's fp32 output erred 4.1 times as much
**           as PyTorch's (1.86e-6 relative) with 8, 2.8 times with 4, which
**           cost 0.6 % of a layer's time
**   SK      gmk: runs a tile's k-tiles are split into
**
** Workspace: the NHWC copy of x ([NP][H][W][CP], CP = C rounded up to 4;
** gmp: the patch matrix [NP][P][Q][KG]), then at a 1024-byte boundary the
** packed weights ([KP][R][S][CP]; gmp: [KP][KG]), then gmk's partials
** [SPLITS][M][K]; NP >= N and KP >= K make each copy at least
** CT_GM_MIN_MAP_BYTES (see ct_gm.cuh).  gm3 has two copies of each, hi
** then lo ([2 NP][H][W][CP], [2 KP][R][S][CP]); so have gmp3 and gmk3.
** Layouts: an NHWC problem (x NHWC, w KRSC) is copied along its channels
** instead of transposed; for gm, when C % 4 = 0, x is big enough and w too
** (or the variant's weight boxes stay inside it), not copied at all: the
** maps read the caller's x and w, TFLOAT32, and the call is gm_conv
** alone, without workspace; an NCHW 1x1 problem's weight map reads the
** caller's w, [K][C] already, with no gm_pack, and so does gmp's (at
** tf32) where R S C % 4 = 0, with no gm_wpack (gm_reads).
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
** of the list that fit.  gmp and gmp3 check the same limits on their
** GEMM view (no im2col limit applies), KG and the patch kernel's grid in
** 31 bits; they are pruned as gm is (on the view), and wherever gm can
** gather the problem itself unless the patch matrix saves a quarter of
** gm's depth (R S ceil(CP / BK) BK) and is at most 4 times the NHWC copy,
** or is at most half that copy (strides skipping most of x).
*/
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "convtune.h"
#include "ct_gen.h"
#include "ct_gm.cuh"

enum { GM_BM, GM_BN, GM_BK, GM_STAGES, GM_KC /* gm3 */ };
/* tap's BQ: its last parameter (after KC in tap3). */
#define TAP_BQ(v, parts) ((v)[(parts) == 2 ? 5 : 4])

/* gm_worth reads their STAGES lists. */
extern const ct_gen_family ct_gen_family_gm, ct_gen_family_gm3, ct_gen_family_gmp,
    ct_gen_family_gmp3, ct_gen_family_gmk, ct_gen_family_gmk3, ct_gen_family_pw,
    ct_gen_family_pw3, ct_gen_family_tap, ct_gen_family_tap3, ct_gen_family_pwq,
    ct_gen_family_gme, ct_gen_family_gme3, ct_gen_family_pwe, ct_gen_family_pwqe;

/* Which of the eight families (gm, gmp, gmk, gme and their 3xTF32 twins):
** operand copies (1: TF32, 2: 3xTF32 hi and lo), patch matrix or im2col,
** the reduction split or not, the descriptor (its STAGES list; gmk's SK is
** its last parameter), and the epilogue staged or not. */
typedef struct gm_kind {
  int parts, patch, splitk;
  const ct_gen_family *family;
  int ep; /* gme: the staged epilogue */
} gm_kind;

static const gm_kind kind_gm = {1, 0, 0, &ct_gen_family_gm, 0},
                     kind_gm3 = {2, 0, 0, &ct_gen_family_gm3, 0},
                     kind_gmp = {1, 1, 0, &ct_gen_family_gmp, 0},
                     kind_gmp3 = {2, 1, 0, &ct_gen_family_gmp3, 0},
                     kind_gmk = {1, 0, 1, &ct_gen_family_gmk, 0},
                     kind_gmk3 = {2, 0, 1, &ct_gen_family_gmk3, 0},
                     kind_gme = {1, 0, 0, &ct_gen_family_gme, 1},
                     kind_gme3 = {2, 0, 0, &ct_gen_family_gme3, 1};

typedef struct gm_shape {
  int64_t P, Q, cp, np, kp, m, tiles_m, tiles_n, ncb;
  int64_t x_floats, w_off, w_floats, ws_bytes;
  int64_t nhwc_blocks, nhwc_blocks_y, pack_blocks, patch_blocks, grid;
} gm_shape;

static int64_t round_up(int64_t v, int64_t to) { return (v + to - 1) / to * to; }

/* Fills *sh for `parts` copies of each operand (1: gm, 2: gm3) of the
** problem gm_conv sees (gmp: its view); 0 when a size does not fit int64
** on the way. */
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
  /* At least min_floats each: n or k images (channels) of img (tap)
  ** floats, raised to the ceiling quotient (compared, not multiplied: the
  ** product of int32 sizes may pass 2^63). */
  const int64_t np_min = (min_floats + img_floats - 1) / img_floats;
  const int64_t kp_min = (min_floats + tap_floats - 1) / tap_floats;
  sh->np = p->n < np_min ? np_min : p->n;
  sh->kp = p->k < kp_min ? kp_min : p->k;
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
  /* gm_nhwc's grid: NHWC x, tiles of pixels across the images; NCHW x,
  ** tiles within an image (ct_gm_nhwc_px). */
  if (p->layout == CT_LAYOUT_NHWC) {
    sh->nhwc_blocks = (sh->np * p->h * p->w + CT_GM_PREP_PX - 1) / CT_GM_PREP_PX;
    sh->nhwc_blocks_y = (sh->cp + CT_GM_PREP_CH - 1) / CT_GM_PREP_CH;
  } else {
    const int64_t hw = (int64_t)p->h * p->w, px = ct_gm_nhwc_px(sh->cp, hw);
    const int64_t ch = ct_gm_nhwc_ch(sh->cp);
    sh->nhwc_blocks = (hw + px - 1) / px;
    if (sh->np > INT64_MAX / sh->nhwc_blocks) return 0;
    sh->nhwc_blocks *= sh->np;
    sh->nhwc_blocks_y = (sh->cp + ch - 1) / ch;
  }
  sh->pack_blocks = sh->kp * p->r * p->s;
  /* gm_patch's grid when p is gmp's view (the patch matrix's rows). */
  const int64_t rb = CT_GM_PATCH_ROWS(sh->cp);
  sh->patch_blocks = (sh->np * p->h * p->w + rb - 1) / rb;
  int64_t tiles = sh->tiles_m * sh->tiles_n, sms = ct_gen_sm_count(lim);
  sh->grid = tiles < sms ? tiles : sms;
  return 1;
}

/* The shared memory of a block of (bm, bn, bk) with `stages` stages of
** a_parts copies of A and `parts` of B; bq > 0: tap's A, boxes of bq + 4
** columns (ct_gm.cuh); ep: the staging tiles after the ring (gme, pwe: 1;
** pwqe: 2, one a consumer). */
static int64_t gm_smem(int64_t bm, int64_t bn, int64_t bk, int64_t stages, int a_parts,
                       int parts, int64_t bq, int ep) {
  return (bq > 0 ? CT_GM_RING_SMEM(CT_GM_TAP_STAGE_BYTES(bm, bn, bk, bq, parts), stages)
                 : CT_GM_SMEM(bm, bn, bk, stages, a_parts, parts)) +
         ep * CT_GM_EPI_BYTES(bm, bn);
}

/* 1 when such a block fits the device (ping: pwq's, three warpgroups
** at BM = 64). */
static int gm_fits(const ct_gen_limits *lim, int64_t bm, int64_t bn, int64_t bk,
                   int64_t stages, int a_parts, int parts, int64_t bq, int ping, int ep) {
  ct_gen_budget bud = {.threads = CT_GM_THREADS(ping ? 128 : bm),
                       .smem = gm_smem(bm, bn, bk, stages, a_parts, parts, bq, ep),
                       .blocks_per_sm = 1};
  return ct_gen_budget_fits(lim, &bud);
}

/* gmp's GEMM view of p (the head of the file): a 1x1, stride-1, unpadded
** convolution over the patch matrix, P x Q pixels of KG channels; 0 when
** R S C rounded up to 4 leaves 31 bits. */
static int gm_patch_view(const ct_problem *p, ct_problem *g) {
  int64_t P, Q;
  ct_problem_output(p, &P, &Q);
  const int64_t rsc3[3] = {p->r, p->s, p->c};
  const int64_t rsc = ct_gen_checked_product(rsc3, 3);
  if (rsc < 0 || rsc > INT32_MAX - 3) return 0;
  *g = *p;
  g->c = round_up(rsc, 4);
  g->h = P;
  g->w = Q;
  g->r = g->s = 1;
  g->stride_h = g->stride_w = 1;
  g->pad_h = g->pad_w = 0;
  g->dil_h = g->dil_w = 1;
  return 1;
}

/* 1 when gmp writes p's patch matrix with gm_patch1 (a 1x1 NCHW problem:
** a row is one pixel's channels, read along the pixels). */
static int gm_patch1(const ct_problem *p) {
  return p->r == 1 && p->s == 1 && p->layout == CT_LAYOUT_NCHW;
}

/* The problem gm_conv sees: p itself, or gmp's view of it; 0 when none. */
static int gm_gemm_problem(const ct_problem *p, const gm_kind *kd, ct_problem *g) {
  if (kd->patch) return gm_patch_view(p, g);
  *g = *p;
  return 1;
}

/* 1 when a rank-4 TMA im2col map gathers p's pixels: traversal strides
** 1..8, corners in [-128, 127], tap offsets below 256. */
static int gm_im2col_fits(const ct_problem *p) {
  if (p->stride_h > 8 || p->stride_w > 8) return 0;
  if (p->pad_h > 127 || p->pad_w > 127) return 0;
  const int64_t span_h = (p->r - 1) * p->dil_h, span_w = (p->s - 1) * p->dil_w;
  if (span_h > 255 || span_w > 255) return 0;
  return span_h - p->pad_h <= 128 && span_w - p->pad_w <= 128;
}

/* gm_worth_kind's cap on gmp's patch matrix where it is offered for few
** channels: 1 GiB, all images and copies. */
#define GM_FEW_PATCH_FLOATS (INT64_C(1) << 28)

/* The k-tile depth gm_worth keeps for cp channels: the smallest that
** holds them, or 32. */
static int64_t gm_want_bk(int64_t cp) { return cp <= 8 ? 8 : cp <= 16 ? 16 : 32; }

/* What gm's maps read of the caller's tensors (gm_reads).  GM_READS_XW:
** an NHWC problem whose channels fill 16-byte rows (C % 4 = 0), so that
** the maps read the caller's x and w as they are (TFLOAT32: rounded to
** nearest as they load), x at least CT_GM_MIN_MAP_BYTES (smaller
** tensors' maps may get a wrong out-of-bounds fill, and the padding and
** the GEMM's discarded rows rely on zeros past x's edges and last image),
** w too or the variant's boxes inside it (w_boxes_inside); the call is
** gm_conv alone with no workspace (gmk: then gm_reduce, the partials its
** only workspace).  GM_READS_W: an NCHW 1x1 problem, whose KCRS w is
** [K][C], the order the weight map reads, with C % 4 = 0 and w at least
** CT_GM_MIN_MAP_BYTES or the boxes inside it (pw_reads_w), or gmp's
** problem whose w is its packed weights already (gmp_reads_w): x still
** goes through gm_nhwc (gmp: gm_patch), the weights through no pass (no
** gm_pack, gm_wpack), the workspace is x's copy (and gmk's partials).
** GM_COPY: both passes.
** The maps over the caller's tensors need them 16-byte aligned, which the
** runtime checks. */
enum { GM_COPY, GM_READS_XW, GM_READS_W };

/* 1 when a TFLOAT32 map of the caller's w as [K][row] can be made: parts
** 1 (the map rounds; gm3's hi and lo are copies), row % 4 = 0 (its rows'
** 16-byte stride) and w at least CT_GM_MIN_MAP_BYTES. */
static int w_rows_mapped(const ct_problem *p, int parts, int64_t row) {
  return parts == 1 && row % 4 == 0 && p->k * row >= CT_GM_MIN_MAP_BYTES / 4;
}

/* 1 when no box of variant v's weight map ({BK, 1, 1, BN}, or BN / 2
** rows) crosses the bounds of the caller's KRSC or KCRS w: K % BN = 0 and
** C % BK = 0.  Such a map never relies on the out-of-bounds fill, so it
** may be made over a w below CT_GM_MIN_MAP_BYTES (the size rule guards
** that fill: the small-tensor caveat). */
static int w_boxes_inside(const ct_problem *p, const int *v) {
  return p->k % v[GM_BN] == 0 && p->c % v[GM_BK] == 0;
}

/* 1 when variant v (gm's kinds, pw's) can map the caller's w as [K][C]
** (pw, and gm's GM_READS_W): w_rows_mapped over C, or a smaller w with
** the same rows whose boxes stay inside it (ResNet's 64 x 64, 256 x 64
** and 64 x 256 layers). */
static int pw_reads_w(const ct_problem *p, int parts, const int *v) {
  return w_rows_mapped(p, parts, p->c) ||
         (parts == 1 && p->c % 4 == 0 && w_boxes_inside(p, v));
}

/* 1 when gmp's weight map can read the caller's w as the packed weights:
** the patch matrix's columns are in the order of w's own rows (KCRS for
** NCHW, KRSC for NHWC: ct_gm_patch_src), so w is [K][KG] already, KG = R
** S C. */
static int gmp_reads_w(const ct_problem *p, int parts) {
  return w_rows_mapped(p, parts, p->r * p->s * p->c);
}

static int gm_reads(const ct_problem *p, const gm_kind *kd, const int *v) {
  if (kd->patch) return gmp_reads_w(p, kd->parts) ? GM_READS_W : GM_COPY;
  if (kd->parts != 1 || p->c % 4 != 0) return GM_COPY;
  if (p->layout == CT_LAYOUT_NCHW)
    return p->r == 1 && p->s == 1 && pw_reads_w(p, kd->parts, v) ? GM_READS_W : GM_COPY;
  const int64_t min_floats = CT_GM_MIN_MAP_BYTES / 4;
  const int64_t xf[4] = {p->n, p->h, p->w, p->c}, wf[4] = {p->k, p->r, p->s, p->c};
  const int64_t nx = ct_gen_checked_product(xf, 4), nw = ct_gen_checked_product(wf, 4);
  return nx >= min_floats && (nw >= min_floats || w_boxes_inside(p, v)) ? GM_READS_XW : GM_COPY;
}

/* gmk's split of the reduction: each tile's ktiles k-tiles in `splits`
** runs of kt_per (SK asked for, fewer when the runs would leave one
** empty), units = tiles x splits walked by a grid of min(units, SMs), the
** partials [splits][M][K] at float poff (after the layout copies); for the
** other families one run, no partials.  0 when a size leaves int64. */
typedef struct gm_split {
  int64_t splits, kt_per, units, grid, poff, part_floats;
} gm_split;

static int gm_split_of(const ct_problem *p, const gm_kind *kd, const int *v,
                       const ct_gen_limits *lim, const gm_shape *sh, int64_t ktiles, int reads,
                       gm_split *sp) {
  const int64_t tiles = sh->tiles_m * sh->tiles_n;
  const int64_t sk = kd->splitk ? v[kd->family->n_params - 1] : 1;
  if (sk < 1 || ktiles < 1) return 0;
  sp->kt_per = (ktiles + sk - 1) / sk;
  sp->splits = (ktiles + sp->kt_per - 1) / sp->kt_per;
  sp->units = tiles * sp->splits;
  const int64_t sms = ct_gen_sm_count(lim);
  sp->grid = sp->units < sms ? sp->units : sms;
  sp->poff = !kd->splitk || reads == GM_READS_XW ? 0
             : reads == GM_READS_W             ? sh->w_off
                                               : round_up(sh->w_off + sh->w_floats, 256);
  const int64_t pf[3] = {sp->splits, sh->m, p->k};
  sp->part_floats = kd->splitk ? ct_gen_checked_product(pf, 3) : 0;
  return sp->part_floats >= 0 && sp->part_floats <= (INT64_C(1) << 50);
}

/* The limits every gm point shares: an sm_90a device, the tile sizes the
** template takes, and for 3xTF32 (parts 2) at most 128 output channels
** (accumulators and masters in registers) and whole k-tiles per chunk. */
static int gm_point_valid(const ct_gen_limits *lim, const int *v, int parts) {
  if (lim->cc_major != 9 || lim->cc_minor != 0 || strcmp(lim->arch, "sm_90a") != 0) return 0;
  const int64_t bm = v[GM_BM], bn = v[GM_BN], bk = v[GM_BK], stages = v[GM_STAGES];
  if ((bm != 64 && bm != 128) || (bn != 64 && bn != 128 && bn != 256) ||
      (bk != 8 && bk != 16 && bk != 32) || stages < 2)
    return 0;
  return parts != 2 || (bn <= 128 && v[GM_KC] >= 1 && v[GM_KC] % (bk / 8) == 0);
}

/* The pruning rule every gm point shares: STAGES one of the two deepest
** rings of family f's list that fit (a_parts copies of A, parts of B; bq
** as gm_smem's). */
static int gm_ring_worth(const ct_gen_limits *lim, const int *v, const ct_gen_family *f,
                         int a_parts, int parts, int64_t bq, int ep) {
  const ct_gen_param *sp = &f->params[GM_STAGES];
  int deeper = 0;
  for (int i = 0; i < sp->n_values; i++)
    deeper += sp->values[i] > v[GM_STAGES] &&
              gm_fits(lim, v[GM_BM], v[GM_BN], v[GM_BK], sp->values[i], a_parts, parts, bq, 0, ep);
  return deeper <= 1;
}

/* The hard limits of the eight families. */
static int gm_valid_kind(const ct_problem *p, const ct_gen_limits *lim, const int *v,
                         const gm_kind *kd) {
  const int64_t bm = v[GM_BM], bn = v[GM_BN], bk = v[GM_BK], stages = v[GM_STAGES];
  const int parts = kd->parts;
  if (!gm_point_valid(lim, v, parts)) return 0;
  if (!kd->patch && !gm_im2col_fits(p)) return 0;
  ct_problem g;
  gm_shape sh;
  if (!gm_gemm_problem(p, kd, &g) || !gm_shape_of(&g, lim, v, parts, &sh)) return 0;
  const int64_t lim31 = INT32_MAX;
  /* The kernels' int arithmetic: M, the tiles, the grids; K P Q, the
  ** k-tiles (and a run's end, split x KTPER + KTPER) and the coordinates
  ** below 2^31 as well; a tile's last row (m0 + BM - 1), the walk over the
  ** units (u + grid) and the ring's counter of one CTA's k-tiles
  ** (unsigned) stay in range. */
  const int64_t ktiles = g.r * g.s * sh.ncb, tiles = sh.tiles_m * sh.tiles_n;
  gm_split sp;
  if (!gm_split_of(&g, kd, v, lim, &sh, ktiles, gm_reads(p, kd, v), &sp)) return 0;
  if (ktiles > lim31 - sp.kt_per || sh.m > lim31 - 256 || tiles > lim31 / 2 ||
      sp.units > lim31 / 2 ||
      (sp.units + sp.grid - 1) / sp.grid > lim31 / sp.kt_per || p->k * sh.P * sh.Q > lim31 ||
      g.h * g.w > lim31 || sh.cp > lim31)
    return 0;
  /* gmk: at least two runs; gm_reduce's grid. */
  if (kd->splitk && (sp.splits < 2 || (sp.part_floats / sp.splits + CT_GM_REDUCE_THREADS - 1) /
                                              CT_GM_REDUCE_THREADS > lim31))
    return 0;
  /* The layout passes' grids (none when the maps read the caller's x, w). */
  if (kd->patch) {
    if (sh.patch_blocks > lim31 || sh.kp > lim31) return 0;
    if (gm_patch1(p) && ((sh.np * sh.P * sh.Q + CT_GM_PREP_PX - 1) / CT_GM_PREP_PX > lim31 ||
                         (sh.cp + CT_GM_PREP_CH - 1) / CT_GM_PREP_CH > 65535))
      return 0;
  } else if (gm_reads(p, kd, v) != GM_READS_XW &&
             (sh.nhwc_blocks > lim31 || sh.nhwc_blocks_y > 65535 ||
              (gm_reads(p, kd, v) == GM_COPY && sh.pack_blocks > lim31))) {
    return 0;
  }
  /* The maps: every dimension <= 2^32, every stride < 2^40 bytes; the
  ** copies' coordinates (image, output channel) are s32. */
  const int64_t d32 = INT64_C(1) << 32, s40 = INT64_C(1) << 40;
  if (parts * sh.np > lim31 || g.h > d32 || g.w > d32 || parts * sh.kp > lim31 ||
      sh.x_floats / (parts * sh.np) * 4 >= s40 || sh.w_floats / (parts * sh.kp) * 4 >= s40)
    return 0;
  /* gme: an NCHW output whose planes P Q are a multiple of 4 pixels, so
  ** that a tile's channel runs (its rows, cut at the images' ends) start
  ** and end on 16 bytes, as its bulk copies need. */
  if (kd->ep && (p->layout != CT_LAYOUT_NCHW || (sh.P * sh.Q) % 4 != 0)) return 0;
  /* gme3 at BN = 128: its masters, cross terms and accumulators (192
  ** registers a thread) beside the staging's addresses spill (ptxas 13.0,
  ** 4 bytes with a fused ReLU). */
  if (kd->ep && parts == 2 && bn > 64) return 0;
  return gm_fits(lim, bm, bn, bk, stages, parts, parts, 0, 0, kd->ep);
}

/* The pruning heuristic of the eight families. */
static int gm_worth_kind(const ct_problem *p, const ct_gen_limits *lim, const int *v,
                         const gm_kind *kd) {
  const int64_t bm = v[GM_BM], bn = v[GM_BN], bk = v[GM_BK];
  ct_problem g;
  if (!gm_gemm_problem(p, kd, &g)) return 0;
  const int64_t cp = round_up(g.c, 4);
  if (bk != gm_want_bk(cp)) return 0;
  if (bn > 64 && bn / 2 >= round_up(p->k, 64)) return 0;
  int64_t P, Q;
  ct_problem_output(p, &P, &Q);
  if (bm == 64) {
    int64_t tiles128 = (p->n * P * Q + 127) / 128 * ((p->k + bn - 1) / bn);
    if (tiles128 >= 2 * ct_gen_sm_count(lim)) return 0;
  }
  /* gmp where gm gathers p itself: a shallower GEMM (a quarter of gm's
  ** depth saved) from a patch matrix at most 4 times the NHWC copy, or a
  ** matrix at most half that copy (a stride that skips most of x, as a
  ** 1x1 at stride 2: the pass then writes less than gm's copy of x), or,
  ** where gm's channel blocks are half padding (C <= 4: 4 channels in a
  ** block of 8, each im2col row 32 bytes), a matrix up to 16 times the
  ** copy (ResNet's 7x7 stride-2 stem, about 9 times; AlexNet's 11x11
  ** stride 4, about 5.5: the NHWC stems, which the few-channel families
  ** do not take, had only gm and direct) and at most GM_FEW_PATCH_FLOATS
  ** in all (a winner's workspace stays with its loaded kernel). */
  if (kd->patch && gm_im2col_fits(p)) {
    const int64_t cpx = round_up(p->c, 4);
    const int64_t depth_gm = p->r * p->s * round_up(cpx, gm_want_bk(cpx));
    const int64_t mat[3] = {P, Q, cp}, copy[3] = {p->h, p->w, cpx};
    const int64_t mat_floats = ct_gen_checked_product(mat, 3);
    const int64_t copy_floats = ct_gen_checked_product(copy, 3);
    if (mat_floats < 0 || copy_floats < 0) return 0;
    const int shallower = 4 * round_up(cp, bk) <= 3 * depth_gm && mat_floats / 4 <= copy_floats;
    const int smaller = 2 * mat_floats <= copy_floats;
    const int few = 2 * cpx <= gm_want_bk(cpx) && mat_floats / 16 <= copy_floats &&
                    mat_floats <= GM_FEW_PATCH_FLOATS / kd->parts / p->n;
    if (!shallower && !smaller && !few) return 0;
  }
  /* gmk only where gm leaves SMs idle (fewer tiles than SMs), split into
  ** half an SM's worth of units or more (else the most runs of 2 k-tiles
  ** or more that SK offers) and no further than two an SM, each run at
  ** least 2 k-tiles. */
  if (kd->splitk) {
    gm_shape sh;
    gm_split sp;
    if (!gm_shape_of(&g, lim, v, kd->parts, &sh)) return 0;
    const int64_t tiles = sh.tiles_m * sh.tiles_n, sms = ct_gen_sm_count(lim);
    if (!gm_split_of(&g, kd, v, lim, &sh, g.r * g.s * sh.ncb, gm_reads(p, kd, v), &sp) ||
        tiles >= sms || sp.units > 2 * sms || sp.kt_per < 2)
      return 0;
    const ct_gen_param *skp = &kd->family->params[kd->family->n_params - 1];
    const int64_t ktiles = g.r * g.s * sh.ncb;
    int most = 0;
    for (int i = 0; i < skp->n_values; i++)
      if (skp->values[i] > most && (ktiles + skp->values[i] - 1) / skp->values[i] >= 2)
        most = skp->values[i];
    if (2 * sp.units < sms && v[kd->family->n_params - 1] != most) return 0;
  }
  return gm_ring_worth(lim, v, kd->family, kd->parts, kd->parts, 0, kd->ep);
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
  l->weights = 0;
  l->early = 1; /* every kernel of conv_gm.cu waits for the launch before it */
}

/* The problem's own sizes into kargs' first slots (N, C, H, W, K, R, S). */
static void gm_kargs_problem(int64_t *a, const ct_problem *p) {
  a[CT_GM_A_N] = p->n;
  a[CT_GM_A_C] = p->c;
  a[CT_GM_A_H] = p->h;
  a[CT_GM_A_W] = p->w;
  a[CT_GM_A_K] = p->k;
  a[CT_GM_A_R] = p->r;
  a[CT_GM_A_S] = p->s;
}

/* A rank-4 tiled map over buf at `offset` bytes: dims innermost first,
** the byte strides of dims 1..3, the box, traversal strides 1; TFLOAT32
** (rounded as it loads) when tf32, else FLOAT32. */
static void gm_tiled_map(ct_gen_map *m, ct_gen_map_buffer buf, uint64_t offset, int tf32,
                         const uint64_t dims[4], const uint64_t strides[3],
                         const uint32_t box[4], int swizzle, int l2_promote) {
  m->kind = CT_GEN_MAP_TILED;
  m->buffer = buf;
  m->tf32 = tf32;
  m->rank = 4;
  m->offset = offset;
  for (int i = 0; i < 4; i++) {
    m->dims[i] = dims[i];
    m->box[i] = box[i];
    m->elem_strides[i] = 1;
  }
  for (int i = 0; i < 3; i++) m->strides[i] = strides[i];
  m->swizzle = swizzle;
  m->l2_promote = l2_promote;
}

/* The plan of the eight families. */
static void gm_plan_kind(const ct_problem *p, const ct_gen_limits *lim, const int *v,
                         ct_gen_variant *out, char *defines, size_t len,
                         const gm_kind *kd) {
  const int parts = kd->parts;
  ct_problem g;
  gm_shape sh;
  gm_gemm_problem(p, kd, &g);
  gm_shape_of(&g, lim, v, parts, &sh);
  const int64_t bm = v[GM_BM], bn = v[GM_BN], bk = v[GM_BK], stages = v[GM_STAGES];
  const unsigned threads = (unsigned)CT_GM_THREADS(bm);
  const unsigned smem = (unsigned)gm_smem(bm, bn, bk, stages, parts, parts, 0, kd->ep);
  const int reads = gm_reads(p, kd, v);
  const int caller = reads == GM_READS_XW, wcaller = reads != GM_COPY;
  gm_split sp;
  gm_split_of(&g, kd, v, lim, &sh, g.r * g.s * sh.ncb, reads, &sp);
  if (caller) {
    out->n_kernels = 1;
    gm_launch(&out->kernels[0], "gm_conv", sp.grid, 1, threads, smem);
    out->workspace_bytes = 0;
  } else {
    out->n_kernels = 3;
    if (kd->patch && gm_patch1(p)) {
      gm_launch(&out->kernels[0], "gm_patch1", (sh.np * sh.P * sh.Q + CT_GM_PREP_PX - 1) / CT_GM_PREP_PX,
                (sh.cp + CT_GM_PREP_CH - 1) / CT_GM_PREP_CH, CT_GM_PREP_THREADS, 0);
      gm_launch(&out->kernels[1], "gm_wpack", sh.kp, 1, CT_GM_PACK_THREADS, 0);
    } else if (kd->patch) {
      gm_launch(&out->kernels[0], "gm_patch", sh.patch_blocks, 1, CT_GM_PATCH_THREADS, 0);
      gm_launch(&out->kernels[1], "gm_wpack", sh.kp, 1, CT_GM_PACK_THREADS, 0);
    } else {
      gm_launch(&out->kernels[0], "gm_nhwc", sh.nhwc_blocks, sh.nhwc_blocks_y,
                CT_GM_PREP_THREADS, 0);
      gm_launch(&out->kernels[1], "gm_pack", sh.pack_blocks, 1, CT_GM_PACK_THREADS, 0);
    }
    if (wcaller) { /* x's pass alone; map 1 reads w */
      out->n_kernels = 2;
      gm_launch(&out->kernels[1], "gm_conv", sp.grid, 1, threads, smem);
      out->workspace_bytes = (size_t)(sh.x_floats * 4);
    } else {
      out->kernels[1].weights = 1;
      gm_launch(&out->kernels[2], "gm_conv", sp.grid, 1, threads, smem);
      out->workspace_bytes = (size_t)sh.ws_bytes;
      out->wpack_offset = (size_t)(sh.w_off * 4); /* read by map 1 alone */
      out->wpack_bytes = (size_t)(sh.w_floats * 4);
    }
  }
  if (kd->splitk) { /* then gm_reduce over the partials */
    gm_launch(&out->kernels[out->n_kernels++], "gm_reduce",
              (sp.part_floats / sp.splits + CT_GM_REDUCE_THREADS - 1) / CT_GM_REDUCE_THREADS, 1,
              CT_GM_REDUCE_THREADS, 0);
    out->workspace_bytes = (size_t)((sp.poff + sp.part_floats) * 4);
  }

  /* The problem's own sizes (gm_patch reads them; gm_conv, under
  ** CT_GM_PATCH, takes R = S = 1, stride 1, no padding instead), then the
  ** workspace's and the GEMM's (gmp: CP is KG). */
  int64_t *a = out->kargs;
  gm_kargs_problem(a, p);
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
  a[CT_GM_A_SPLITS] = sp.splits;
  a[CT_GM_A_KTPER] = sp.kt_per;
  a[CT_GM_A_POFF] = sp.poff;

  /* Map 0: im2col over the NHWC copy, dims {CP, W, H, NP} (gm3: 2 NP,
  ** the lo copy after the hi one), or over the caller's NHWC x, dims
  ** {C, W, H, N}, rounded to TF32 as it loads; gmp: over the patch
  ** matrix, dims {KG, Q, P, NP}, with a 1x1 filter's corners. */
  out->n_maps = 2;
  ct_gen_map *mx = &out->maps[0];
  mx->kind = CT_GEN_MAP_IM2COL;
  mx->buffer = caller ? CT_GEN_BUF_X : CT_GEN_BUF_WS;
  mx->tf32 = caller;
  mx->rank = 4;
  mx->offset = 0;
  mx->dims[0] = (uint64_t)sh.cp;
  mx->dims[1] = (uint64_t)g.w;
  mx->dims[2] = (uint64_t)g.h;
  mx->dims[3] = (uint64_t)(caller ? g.n : parts * sh.np);
  mx->strides[0] = (uint64_t)(sh.cp * 4);
  mx->strides[1] = (uint64_t)(g.w * sh.cp * 4);
  mx->strides[2] = (uint64_t)(g.h * g.w * sh.cp * 4);
  mx->lower[0] = (int)-g.pad_w;
  mx->lower[1] = (int)-g.pad_h;
  mx->upper[0] = (int)(g.pad_w - (g.s - 1) * g.dil_w);
  mx->upper[1] = (int)(g.pad_h - (g.r - 1) * g.dil_h);
  mx->channels = (uint32_t)bk;
  mx->pixels = (uint32_t)bm;
  mx->elem_strides[0] = 1;
  mx->elem_strides[1] = (uint32_t)g.stride_w;
  mx->elem_strides[2] = (uint32_t)g.stride_h;
  mx->elem_strides[3] = 1;
  mx->swizzle = (int)(bk * 4);
  mx->l2_promote = 0;

  /* Map 1: tiled over the packed weights, dims {CP, S, R, KP} (gm3: 2 KP),
  ** or over the caller's KRSC w (GM_READS_XW; GM_READS_W: KCRS, R = S =
  ** 1), dims {C, S, R, K}, rounded as it loads;
  ** gmp: {KG, 1, 1, KP}; box {BK, 1, 1, BN}. */
  const uint64_t wdims[4] = {(uint64_t)sh.cp, (uint64_t)g.s, (uint64_t)g.r,
                             (uint64_t)(wcaller ? g.k : parts * sh.kp)};
  const uint64_t wstrides[3] = {(uint64_t)(sh.cp * 4), (uint64_t)(g.s * sh.cp * 4),
                                (uint64_t)(g.r * g.s * sh.cp * 4)};
  const uint32_t wbox[4] = {(uint32_t)bk, 1, 1, (uint32_t)bn};
  gm_tiled_map(&out->maps[1], wcaller ? CT_GEN_BUF_W : CT_GEN_BUF_WS,
               wcaller ? 0 : (uint64_t)(sh.w_off * 4), wcaller, wdims, wstrides, wbox,
               (int)(bk * 4), 128);

  snprintf(defines, len, "%s%s%s%s#define CT_PLAN_BLOCK_X %u\n#define CT_PLAN_SMEM %u\n",
           parts == 2 ? "#define CT_GM_SPLIT 1\n" : "",
           kd->patch ? "#define CT_GM_PATCH 1\n" : "",
           kd->splitk ? "#define CT_GM_SPLITK 1\n" : "", kd->ep ? "#define CT_GM_EP 1\n" : "",
           threads, smem);
}

/* Families pw and pw3 (gm_pw): a 1x1, stride-1, unpadded NCHW problem as
** the GEMM y[n] = W x[n], x read in place by tiled TMA (map 0 {HW, C, N,
** 1}, boxes of 32 pixels x BK channels, 128-byte swizzle; pw: TFLOAT32,
** rounded as it loads) and fed to wgmma from registers (pw3: a FLOAT32
** map, each value split there into TF32 hi and lo,
** 3xTF32 with gm3's chunked masters); the weights packed by gm_pack (R = S
** = 1: [KP][CP], pw3 hi then lo, the workspace's only tensors), or pw's
** read in place too where a TFLOAT32 map of them can be made (C % 4 = 0,
** w at least 128 KiB or the variant's boxes inside it: pw_reads_w; one
** launch, no workspace).  No layout pass over x.  Planes of H W % 4 != 0
** up to 64 pixels (ResNet's 7 x 7), which that map cannot stride, go as
** whole-image runs (pw_runs, CT_GM_PW 4: x as {4 HW, C / 4, N, 1}).
** At tf32, where one tile of channels covers K and the whole weight block
** fits beside the ring, the weights are loaded once per CTA and held
** (pw_wres; pwq, pwe and pwqe too).
** Declined where x's map cannot be made: HW % 4 != 0 (its channel planes'
** 16-byte stride) unless the runs take it, x below CT_GM_MIN_MAP_BYTES, or a size
** past the maps' or the kernel's int ranges; x must be 16-byte aligned
** (the runtime checks).  pw3 also where a consumer thread's registers
** (accumulators, cross terms, masters: 3 BN / 2; two sets of hi and lo
** fragments: 16 BK / 8; about 24 more) pass the 232 setmaxnreg gives it:
** BN = 128 only with BK = 8 (tap3, about 8 more: never).  Pruned as gm
** is (pw3's BN = 128 at BK = 8 kept).
**
** Family pwq (gm_pw with CT_GM_PING): pw at BM = 64 with three
** warpgroups, the two consumers on tiles of their own, the CTA's tiles
** in turn (tile i of its walk to consumer i mod 2), their mainloops
** ordered (ct_gm_ping_* in ct_gm.cuh) so that one's epilogue runs beside
** the other's loads and wgmma; pw's grid, maps and workspace.  Declined
** where pw is.  Pruned as pw, but at BM = 64 where 128-pixel tiles give
** every SM two or more (the inverse of pw's rule): memory-bound 1x1
** layers, where the stores of one tile can overlap the next tile's
** loads.  TF32 only: a 3xTF32 form (pw3's kernel in turn) won one of
** twelve ResNet-50 1x1 layers at fp32, where pw3's three wgmma a k8 step
** outweigh the stores, and its variants took the search's time from
** pw3's.
**
** Families pwe and pwqe (gm_pw with CT_GM_EP): pw and pwq with gme's
** staged epilogue: the tile's outputs into shared memory ([BN][BM + 4],
** pwqe one a consumer), then one bulk copy per output channel of the
** tile's run of pixels (a tile lies in one image; H W % 4 = 0 makes the
** runs 16-byte aligned), the consumers going on meanwhile.  Declined and
** pruned as pw and pwq, with the staging tiles in the shared memory.
**
** Families tap and tap3 (gm_pw with CT_GM_PW 2): the same kernel over any
** filter, padding, dilation and vertical stride of an NCHW problem whose
** horizontal stride is 1, x read in place as {W, H, C, N} (W % 4 = 0 for
** its rows' 16-byte stride), one box of 32 output columns x BK channels
** per tile row and tap, TMA's zero fill the padding (a box starts on a
** 16-byte boundary, 4 columns wider: ct_gm.cuh); the weights always
** packed ([KP][R][S][CP], gm's).  A tile is BM / 32 output rows of one
** 32-column segment, so Q past a multiple of 32 computes dead columns;
** BQ = 16 (boxes of 2 rows x 16 columns, BM / 16 rows of 16 columns a
** tile; a vertical stride up to 8, TMA's traversal stride) fits narrower
** images.  Where both strides are 1, H W % 4 = 0 and Q <= W (any W:
** ResNet's 14-wide layers), the plan takes the flattened plane instead
** (CT_GM_PW 3): x as pw's {HW, C, N, 1}, the output W wide, each tap a
** shift along the plane, wrapped columns zeroed in registers; BQ = 32
** only.  Declined (worth) where more than half of a segment's (flat: a
** row's) columns are dead, BQ = 16 where it leaves no fewer dead than 32,
** and where pw takes the problem. */
typedef struct pw_shape {
  int64_t hw, P, Q, cp, kp, mt, tiles_m, tiles_n, tiles, ncb, nkt, grid;
} pw_shape;

/* 1 when tap takes p over the flattened plane (CT_GM_PW 3): both strides
** 1, H W % 4 = 0, and an output row no wider than x's (Q <= W; a padding
** past the filter's reach widens it, and the W-wide virtual rows would
** leave columns W .. Q - 1 unwritten). */
static int tap_flat(const ct_problem *p) {
  if (p->stride_h != 1 || p->stride_w != 1 || (p->h * p->w) % 4 != 0) return 0;
  int64_t P, Q;
  ct_problem_output(p, &P, &Q);
  return Q <= p->w;
}

static int pw_shape_of(const ct_problem *p, const ct_gen_limits *lim, const int *v, int parts,
                       int taps, pw_shape *sh) {
  memset(sh, 0, sizeof *sh);
  const int64_t lim31 = INT32_MAX;
  if (p->h > lim31 || p->w > lim31 || p->n > lim31 || p->c > lim31 || p->k > lim31 ||
      p->r > lim31 || p->s > lim31)
    return 0;
  ct_problem_output(p, &sh->P, &sh->Q);
  if (sh->P < 1 || sh->Q < 1 || sh->P > lim31 || sh->Q > lim31) return 0;
  sh->hw = sh->P * sh->Q; /* below 2^62 */
  /* The kernel's int pixel arithmetic: the output plane (flat: W wide). */
  if (sh->hw > lim31 - 256 || (taps && tap_flat(p) && sh->P * p->w > lim31 - 256)) return 0;
  sh->cp = round_up(p->c, 4);
  const int64_t min_floats = CT_GM_MIN_MAP_BYTES / 4, rs = p->r * p->s;
  const int64_t tf[3] = {p->r, p->s, sh->cp};
  const int64_t tap_floats = ct_gen_checked_product(tf, 3);
  if (tap_floats < 0) return 0;
  const int64_t kp_min = (min_floats + tap_floats - 1) / tap_floats;
  sh->kp = p->k < kp_min ? kp_min : p->k;
  if (taps && tap_flat(p)) {
    sh->mt = (sh->P * p->w + v[GM_BM] - 1) / v[GM_BM];
  } else if (taps) {
    const int64_t bq = TAP_BQ(v, parts), rows = v[GM_BM] / 32 * (32 / bq);
    sh->mt = (sh->P + rows - 1) / rows * ((sh->Q + bq - 1) / bq);
  } else {
    sh->mt = (sh->hw + v[GM_BM] - 1) / v[GM_BM];
  }
  sh->tiles_m = p->n * sh->mt; /* mt below 2^31 */
  sh->tiles_n = (p->k + v[GM_BN] - 1) / v[GM_BN];
  sh->ncb = (sh->cp + v[GM_BK] - 1) / v[GM_BK];
  const int64_t tiles_f[2] = {sh->tiles_m, sh->tiles_n}, kt_f[2] = {sh->ncb, taps ? rs : 1};
  sh->tiles = ct_gen_checked_product(tiles_f, 2);
  sh->nkt = ct_gen_checked_product(kt_f, 2);
  if (sh->tiles < 0 || sh->nkt < 0) return 0;
  const int64_t sms = ct_gen_sm_count(lim);
  sh->grid = sh->tiles < sms ? sh->tiles : sms;
  return 1;
}

/* 1 when p is pw's kind of problem: a 1x1, stride-1, unpadded convolution
** of NCHW x (y[n] = W x[n]). */
static int pw_kind(const ct_problem *p) {
  return p->r == 1 && p->s == 1 && p->stride_h == 1 && p->stride_w == 1 && p->pad_h == 0 &&
         p->pad_w == 0 && p->layout == CT_LAYOUT_NCHW;
}

/* 1 when pw takes p through its map of x's planes: pw_kind, HW % 4 = 0. */
static int pw_fits_problem(const ct_problem *p) {
  return pw_kind(p) && (p->h * p->w) % 4 == 0;
}

/* 1 when pw takes p as whole-image runs (CT_GM_PW 4, ct_gm_runs_smem):
** pw_kind over planes of H W % 4 != 0 (no 16-byte plane stride for pw's
** map: ResNet's 7 x 7 layers), H W <= 64 (4 channels' planes one box row
** of at most 256 floats; a 64-row tile an image) and C % 4 = 0 (those
** rows within an image).  pw and pw3 only (BM = 64). */
static int pw_runs(const ct_problem *p) {
  const int64_t hw = p->h * p->w; /* h, w below 2^31 */
  return pw_kind(p) && hw % 4 != 0 && hw <= 64 && p->c % 4 == 0;
}

/* gm_pw's shared memory: the ring of STAGES stages (x's boxes and, where
** the weights are streamed, their tile), with wres > 0 the weights'
** wres channel blocks resident before it, and pwe's (pwqe's) staging
** tiles. */
static int64_t pw_smem(int64_t bm, int64_t bn, int64_t bk, int64_t stages, int parts, int64_t bq,
                       int ping, int ep, int64_t wres) {
  const int64_t staging = ep ? (ping ? 2 : 1) : 0;
  if (wres == 0) return gm_smem(bm, bn, bk, stages, 1, parts, bq, staging);
  return CT_GM_RING_SMEM(CT_GM_STAGE_BYTES(bm, bn, bk, 1, 0), stages) +
         CT_GM_WRES_SMEM(wres * parts * bn * bk * 4) + staging * CT_GM_EPI_BYTES(bm, bn);
}

/* gm_pw's weights resident (CT_GM_WRES): where one tile of channels
** covers K (TILES_N = 1) and the whole [BN][CP] block fits in shared
** memory beside STAGES stages of x alone, the producer loads it once and
** each k-tile reads channel block kt of it, so the ring carries x alone
** and the weights cross from L2 once per CTA instead of once per tile
** (a tile's weights are as many bytes as its x where BN = BM).
** Returns the channel blocks held (NCB), else 0 (the weights streamed
** with x, a stage each).  TF32 only: pw3, compute-bound by its three
** wgmma a k8 step, measured no faster with them resident (PERFORMANCE.md
** v33). */
static int64_t pw_wres(const ct_problem *p, const ct_gen_limits *lim, const int *v, int parts,
                       int taps, int ping, int ep) {
  const int64_t bm = v[GM_BM], bn = v[GM_BN], bk = v[GM_BK], stages = v[GM_STAGES];
  if (taps || parts != 1 || p->k > bn) return 0;
  const int64_t ncb = (round_up(p->c, 4) + bk - 1) / bk;
  if (ncb * bn * bk * 4 > lim->max_smem_per_block) return 0;
  ct_gen_budget bud = {.threads = CT_GM_THREADS(ping ? 128 : bm),
                       .smem = pw_smem(bm, bn, bk, stages, parts, 0, ping, ep, ncb),
                       .blocks_per_sm = 1};
  return ct_gen_budget_fits(lim, &bud) ? ncb : 0;
}

static int pw_valid_parts(const ct_problem *p, const ct_gen_limits *lim, const int *v,
                          int parts, int taps, int ping, int ep) {
  const int64_t bm = v[GM_BM], bn = v[GM_BN], bk = v[GM_BK], stages = v[GM_STAGES];
  if (!gm_point_valid(lim, v, parts) || (ping && (bm != 64 || taps || parts != 1))) return 0;
  /* pw3's consumer registers (above); tap3's tile origin and sizes take
  ** about 8 more (BN = 128 at BK = 8 spilled 32 bytes). */
  if (parts == 2 && 3 * bn / 2 + 16 * (bk / 8) + 24 + (taps ? 8 : 0) > 232) return 0;
  if (p->layout != CT_LAYOUT_NCHW) return 0;
  if (!taps && !pw_fits_problem(p) && !(pw_runs(p) && bm == 64 && !ping && !ep)) return 0;
  if (taps && !tap_flat(p) && (p->stride_w != 1 || p->w % 4 != 0)) return 0;
  if (taps && tap_flat(p) && TAP_BQ(v, parts) != 32) return 0;
  pw_shape sh;
  if (taps && TAP_BQ(v, parts) == 16 && p->stride_h > 8) return 0; /* traversal stride */
  if (!pw_shape_of(p, lim, v, parts, taps, &sh)) return 0;
  const int64_t xf[4] = {p->n, p->c, p->h, p->w};
  const int64_t x_floats = ct_gen_checked_product(xf, 4);
  const int64_t lim31 = INT32_MAX;
  /* x's map: 16-byte plane (tap: row) stride, at least 128 KiB, strides
  ** below 2^40 bytes; the kernel's int arithmetic: HW and its tiles, a
  ** tap's box coordinates, the tile walk, the ring's counter; gm_pack's
  ** grid. */
  if (x_floats < CT_GM_MIN_MAP_BYTES / 4 || x_floats >= (INT64_C(1) << 38)) return 0;
  if (taps) { /* in double: the products of int32 fields may pass 2^63 */
    const double reach_h = (double)(sh.P + 8) * p->stride_h + p->pad_h + (double)(p->r - 1) * p->dil_h;
    const double reach_w = (double)sh.Q + 36 + p->pad_w + (double)(p->s - 1) * p->dil_w;
    /* flat: a box's start along the plane, tap shifts included */
    const double reach_flat = (reach_h + 1) * ((double)p->w + 1) + reach_w + (double)v[GM_BM];
    if (reach_h > lim31 || reach_w > lim31 || reach_flat > lim31) return 0;
  }
  const int64_t tiles = sh.tiles;
  const int64_t packs_f[3] = {parts, sh.kp, p->r * p->s}, wf[2] = {sh.kp, p->r * p->s};
  const int64_t packs = ct_gen_checked_product(packs_f, 3); /* gm_pack's grid */
  const int64_t w_rows = ct_gen_checked_product(wf, 2);
  if (tiles > lim31 / 2 || sh.nkt > lim31 || (tiles + sh.grid - 1) / sh.grid > lim31 / sh.nkt ||
      packs < 0 || packs > lim31 || w_rows < 0 || w_rows > (INT64_C(1) << 38) / sh.cp)
    return 0;
  return gm_fits(lim, bm, bn, bk, stages, 1, parts, taps ? TAP_BQ(v, parts) : 0, ping,
                 ep ? (ping ? 2 : 1) : 0);
}

static int pw_worth_parts(const ct_problem *p, const ct_gen_limits *lim, const int *v,
                          const ct_gen_family *f, int parts, int taps, int ping, int ep) {
  const int64_t bm = v[GM_BM], bn = v[GM_BN], bk = v[GM_BK];
  if (bk != gm_want_bk(round_up(p->c, 4)) && !(parts == 2 && bn == 128)) return 0;
  if (bn > 64 && bn / 2 >= round_up(p->k, 64)) return 0;
  int64_t P, Q;
  ct_problem_output(p, &P, &Q);
  const int flat = taps && tap_flat(p);
  const int64_t bq = taps ? TAP_BQ(v, parts) : 32;
  const int64_t span = flat ? p->w : (Q + bq - 1) / bq * bq; /* computed columns of a row */
  if (taps && (pw_fits_problem(p) || 2 * Q < span)) return 0;
  /* BQ = 16 only where it leaves fewer dead columns than 32 (Q / span up). */
  if (taps && !flat && bq == 16 && span >= (Q + 31) / 32 * 32) return 0;
  if (bm == 64 && (taps || !pw_runs(p))) { /* runs: BM = 64 only */
    const int64_t rows128 = 4 * (32 / bq);
    const int64_t m128 = flat   ? (P * p->w + 127) / 128
                         : taps ? (P + rows128 - 1) / rows128 * (span / bq)
                                : (P * Q + 127) / 128;
    const int64_t tiles128 = p->n * m128 * ((p->k + bn - 1) / bn);
    /* as gm's: pwq only where its tiles give every consumer two or more */
    if (!ping && tiles128 >= 2 * ct_gen_sm_count(lim)) return 0;
    if (ping && tiles128 < 2 * ct_gen_sm_count(lim)) return 0;
  }
  return gm_ring_worth(lim, v, f, 1, parts, taps ? bq : 0, ep ? (ping ? 2 : 1) : 0);
}

static void pw_plan_parts(const ct_problem *p, const ct_gen_limits *lim, const int *v,
                          ct_gen_variant *out, char *defines, size_t len, int parts, int taps,
                          int ping, int ep) {
  pw_shape sh;
  pw_shape_of(p, lim, v, parts, taps, &sh);
  const int64_t bm = v[GM_BM], bn = v[GM_BN], bk = v[GM_BK], stages = v[GM_STAGES];
  const unsigned threads = (unsigned)CT_GM_THREADS(ping ? 128 : bm);
  const int64_t bq = taps ? TAP_BQ(v, parts) : 0, bh = taps ? 32 / bq : 1;
  const int64_t wres = pw_wres(p, lim, v, parts, taps, ping, ep);
  const unsigned smem = (unsigned)pw_smem(bm, bn, bk, stages, parts, bq, ping, ep, wres);
  /* pw reads the caller's w ([K][C], KCRS with R = S = 1) where a TFLOAT32
  ** map of it can be made (rows of 16-byte multiples, at least 128 KiB or
  ** no box past its bounds: pw_reads_w): no gm_pack launch and no
  ** workspace.  pw3, tap and tap3 pack (gm_pack: [KP][R][S][CP], pw3 and
  ** tap3 hi then lo). */
  const int wdirect = !taps && pw_reads_w(p, parts, v);
  const int64_t rs = p->r * p->s;
  out->n_kernels = 0;
  if (!wdirect) {
    gm_launch(&out->kernels[out->n_kernels], "gm_pack", sh.kp * rs, 1, CT_GM_PACK_THREADS, 0);
    out->kernels[out->n_kernels++].weights = 1;
  }
  gm_launch(&out->kernels[out->n_kernels++], "gm_pw", sh.grid, 1, threads, smem);
  out->workspace_bytes = wdirect ? 0 : (size_t)(parts * sh.kp * rs * sh.cp * 4);
  out->wpack_offset = 0; /* the whole workspace, read by map 1 alone */
  out->wpack_bytes = out->workspace_bytes;

  int64_t *a = out->kargs;
  gm_kargs_problem(a, p);
  a[CT_GM_A_P] = sh.P;
  a[CT_GM_A_Q] = sh.Q;
  a[CT_GM_A_SH] = p->stride_h;
  a[CT_GM_A_SW] = p->stride_w;
  a[CT_GM_A_PH] = p->pad_h;
  a[CT_GM_A_PW] = p->pad_w;
  a[CT_GM_A_DH] = p->dil_h;
  a[CT_GM_A_DW] = p->dil_w;
  a[CT_GM_A_CP] = sh.cp;
  a[CT_GM_A_NP] = p->n;
  a[CT_GM_A_KP] = sh.kp;
  a[CT_GM_A_M] = p->n * sh.hw;
  a[CT_GM_A_TILES_M] = sh.tiles_m;
  a[CT_GM_A_TILES_N] = sh.tiles_n;
  a[CT_GM_A_NCB] = sh.ncb;
  a[CT_GM_A_WOFF] = 0;

  /* Map 0: tiled over the caller's x, TFLOAT32 (rounded to nearest even as
  ** it loads: the consumers feed its bits to wgmma as they are), pw3 and
  ** tap3 FLOAT32 (the consumers split each value): pw {HW, C,
  ** N, 1}, box {32, BK, 1, 1}, a channel's 32 pixels one 128-byte swizzled
  ** row; tap's boxes BQ + 4 columns from a 16-byte boundary, unswizzled
  ** (ct_gm.cuh), flat {HW, C, N, 1}, box {36, BK, 1, 1}, or {W, H, C, N},
  ** box {BQ + 4, 1, BK, 1} (BQ = 16: 2 rows SH apart, the traversal
  ** stride SH, box SH x 2 rows), each box a row segment whose start may
  ** lie outside x (the padding, read as zeros).  Map 1
  ** over the packed weights {CP, S, R, KP} (pw3, tap3: 2 KP), box {BK, 1,
  ** 1, BN}, or pw's over the caller's w, {C, 1, 1, K}, TFLOAT32 (rounded
  ** as it loads; the columns and rows past C and K read as zeros). */
  out->n_maps = 2;
  const int flat = taps && tap_flat(p), runs = !taps && pw_runs(p);
  if (taps && !flat) {
    const uint64_t row = (uint64_t)p->w * 4, plane = row * (uint64_t)p->h;
    const uint64_t xdims[4] = {(uint64_t)p->w, (uint64_t)p->h, (uint64_t)p->c, (uint64_t)p->n};
    const uint64_t xstrides[3] = {row, plane, plane * (uint64_t)p->c};
    const uint32_t xbox[4] = {(uint32_t)(bq + 4), (uint32_t)(bh * (bh > 1 ? p->stride_h : 1)),
                              (uint32_t)bk, 1};
    gm_tiled_map(&out->maps[0], CT_GEN_BUF_X, 0, parts == 1, xdims, xstrides, xbox, 0, 256);
    if (bh > 1) out->maps[0].elem_strides[1] = (uint32_t)p->stride_h;
  } else if (runs) { /* {4 HW, C / 4, N, 1}, box {4 HW, BK / 4, 1, 1}, unswizzled */
    const uint64_t run = (uint64_t)(4 * p->h * p->w), c = (uint64_t)p->c;
    const uint64_t xdims[4] = {run, c / 4, (uint64_t)p->n, 1};
    const uint64_t xstrides[3] = {run * 4, run * c, run * c * (uint64_t)p->n};
    const uint32_t xbox[4] = {(uint32_t)run, (uint32_t)(bk / 4), 1, 1};
    gm_tiled_map(&out->maps[0], CT_GEN_BUF_X, 0, parts == 1, xdims, xstrides, xbox, 0, 256);
  } else {
    const uint64_t hw4 = (uint64_t)(p->h * p->w) * 4; /* x's plane (pw: = P Q) */
    const uint64_t xdims[4] = {(uint64_t)(p->h * p->w), (uint64_t)p->c, (uint64_t)p->n, 1};
    const uint64_t xstrides[3] = {hw4, hw4 * (uint64_t)p->c, hw4 * (uint64_t)(p->c * p->n)};
    const uint32_t xbox[4] = {taps ? 36 : 32, (uint32_t)bk, 1, 1};
    gm_tiled_map(&out->maps[0], CT_GEN_BUF_X, 0, parts == 1, xdims, xstrides, xbox, taps ? 0 : 128,
                 256);
  }
  const uint64_t wrows = (uint64_t)(wdirect ? p->k : parts * sh.kp);
  const uint64_t wdims[4] = {(uint64_t)sh.cp, (uint64_t)p->s, (uint64_t)p->r, wrows};
  const uint64_t wrow = (uint64_t)sh.cp * 4;
  const uint64_t wstrides[3] = {wrow, wrow * (uint64_t)p->s, wrow * (uint64_t)rs};
  const uint32_t wbox[4] = {(uint32_t)bk, 1, 1, (uint32_t)bn};
  gm_tiled_map(&out->maps[1], wdirect ? CT_GEN_BUF_W : CT_GEN_BUF_WS, 0, wdirect, wdims,
               wstrides, wbox, (int)(bk * 4), 128);

  char wres_line[40] = "";
  if (wres > 0) snprintf(wres_line, sizeof wres_line, "#define CT_GM_WRES %d\n", (int)wres);
  snprintf(defines, len,
           "%s%s%s%s#define CT_GM_PW %d\n#define CT_PLAN_BLOCK_X %u\n#define CT_PLAN_SMEM %u\n",
           parts == 2 ? "#define CT_GM_SPLIT 1\n" : "", ping ? "#define CT_GM_PING 1\n" : "",
           ep ? "#define CT_GM_EP 1\n" : "", wres_line, runs ? 4 : flat ? 3 : taps ? 2 : 1, threads,
           smem);
}

/* The entry points of pw, pw3, tap, tap3, pwq, pwe and pwqe: parts, taps,
** ping, ep (the staged epilogue). */
#define PW_ENTRIES(fam, parts, taps, ping, ep)                                            \
  static int fam##_valid(const ct_problem *p, const ct_gen_limits *lim, const int *v) {  \
    return pw_valid_parts(p, lim, v, parts, taps, ping, ep);                             \
  }                                                                                       \
  static int fam##_worth(const ct_problem *p, const ct_gen_limits *lim, const int *v) {  \
    return pw_worth_parts(p, lim, v, &ct_gen_family_##fam, parts, taps, ping, ep);       \
  }                                                                                       \
  static void fam##_plan(const ct_problem *p, const ct_gen_limits *lim, const int *v,    \
                         ct_gen_variant *out, char *defines, size_t len) {               \
    pw_plan_parts(p, lim, v, out, defines, len, parts, taps, ping, ep);                  \
  }
PW_ENTRIES(pw, 1, 0, 0, 0)
PW_ENTRIES(pw3, 2, 0, 0, 0)
PW_ENTRIES(tap, 1, 1, 0, 0)
PW_ENTRIES(tap3, 2, 1, 0, 0)
PW_ENTRIES(pwq, 1, 0, 1, 0)
PW_ENTRIES(pwe, 1, 0, 0, 1)
PW_ENTRIES(pwqe, 1, 0, 1, 1)

/* The descriptors' entry points. */
#define GM_ENTRIES(fam)                                                                   \
  static int fam##_valid(const ct_problem *p, const ct_gen_limits *lim, const int *v) {  \
    return gm_valid_kind(p, lim, v, &kind_##fam);                                        \
  }                                                                                       \
  static int fam##_worth(const ct_problem *p, const ct_gen_limits *lim, const int *v) {  \
    return gm_worth_kind(p, lim, v, &kind_##fam);                                        \
  }                                                                                       \
  static void fam##_plan(const ct_problem *p, const ct_gen_limits *lim, const int *v,    \
                         ct_gen_variant *out, char *defines, size_t len) {               \
    gm_plan_kind(p, lim, v, out, defines, len, &kind_##fam);                             \
  }
GM_ENTRIES(gm)
GM_ENTRIES(gm3)
GM_ENTRIES(gmp)
GM_ENTRIES(gmp3)
GM_ENTRIES(gmk)
GM_ENTRIES(gmk3)
GM_ENTRIES(gme)
GM_ENTRIES(gme3)

/* The parameter lists: gm, gmp and pw take the same, gm3, gmp3 and pw3
** too; gmk and gmk3 add SK, the runs a tile's reduction is split into
** (fewer when runs would be empty); tap and tap3 add BQ, a box's output
** columns. */
#define GM_TF32_LIST                                                                     \
  {"BM", 2, {128, 64}}, {"BN", 3, {128, 64, 256}}, {"BK", 3, {32, 16, 8}},                 \
      {"STAGES", 4, {4, 3, 6, 8}}
#define GM_FP32_LIST                                                                     \
  {"BM", 2, {128, 64}}, {"BN", 2, {128, 64}}, {"BK", 3, {32, 16, 8}},                      \
      {"STAGES", 5, {3, 4, 2, 6, 8}}, {"KC", 1, {4}}
#define GM_SK {"SK", 5, {4, 2, 8, 16, 32}}
#define GM_BQ {"BQ", 2, {32, 16}}
#define GM_TF32_PARAMS .n_params = 4, .params = {GM_TF32_LIST}
#define GM_FP32_PARAMS .n_params = 5, .params = {GM_FP32_LIST}
#define GM_TF32_SK_PARAMS .n_params = 5, .params = {GM_TF32_LIST, GM_SK}
#define GM_FP32_SK_PARAMS .n_params = 6, .params = {GM_FP32_LIST, GM_SK}
#define GM_TF32_BQ_PARAMS .n_params = 5, .params = {GM_TF32_LIST, GM_BQ}
#define GM_FP32_BQ_PARAMS .n_params = 6, .params = {GM_FP32_LIST, GM_BQ}
/* pw, pw3, tap and tap3 read NCHW x in place: no NHWC (nhwc 0).  gme,
** gme3, pwe and pwqe store through the staged epilogue, which takes no
** residual (residual 0). */
#define GM_FAMILY(fam, prec, params, nhwc_too, residual_too)                             \
  const ct_gen_family ct_gen_family_##fam = {                                            \
    .name = #fam,                                                                        \
    .template_name = "conv_gm.cu",                                                       \
    .precisions = 1u << (prec),                                                          \
    .nhwc = (nhwc_too),                                                                  \
    .residual = (residual_too),                                                          \
    .args = CT_GEN_ARGS_TENSOR_MAPS,                                                     \
    .tensor_cores = 1,                                                                   \
    .big_tensors = 1,                                                                    \
    .shape_generic = 1,                                                                  \
    params,                                                                              \
    .valid = fam##_valid,                                                                \
    .worth = fam##_worth,                                                                \
    .plan = fam##_plan,                                                                  \
  };
GM_FAMILY(gm, CT_PREC_TF32, GM_TF32_PARAMS, 1, 1)
GM_FAMILY(gm3, CT_PREC_FP32, GM_FP32_PARAMS, 1, 1)
GM_FAMILY(gmp, CT_PREC_TF32, GM_TF32_PARAMS, 1, 1)
GM_FAMILY(gmp3, CT_PREC_FP32, GM_FP32_PARAMS, 1, 1)

GM_FAMILY(gmk, CT_PREC_TF32, GM_TF32_SK_PARAMS, 1, 1)
GM_FAMILY(gmk3, CT_PREC_FP32, GM_FP32_SK_PARAMS, 1, 1)
GM_FAMILY(gme, CT_PREC_TF32, GM_TF32_PARAMS, 0, 0)
GM_FAMILY(gme3, CT_PREC_FP32, GM_FP32_PARAMS, 0, 0)

GM_FAMILY(pw, CT_PREC_TF32, GM_TF32_PARAMS, 0, 1)
GM_FAMILY(pw3, CT_PREC_FP32, GM_FP32_PARAMS, 0, 1)
GM_FAMILY(pwq, CT_PREC_TF32, GM_TF32_PARAMS, 0, 1)
GM_FAMILY(pwe, CT_PREC_TF32, GM_TF32_PARAMS, 0, 0)
GM_FAMILY(pwqe, CT_PREC_TF32, GM_TF32_PARAMS, 0, 0)
GM_FAMILY(tap, CT_PREC_TF32, GM_TF32_BQ_PARAMS, 0, 1)
GM_FAMILY(tap3, CT_PREC_FP32, GM_FP32_BQ_PARAMS, 0, 1)
