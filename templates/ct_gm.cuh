/* ct_gm.cuh — what templates/conv_gm.cu and its descriptors
** (generator/family_gm.c) share: the slots of the kernels' int64 arguments
** (ct_kargs), the threads of each kernel, the shared memory of the main
** kernels, the smallest tensor a map describes, and the index arithmetic
** that the kernels run and the CPU tests check (the patch matrix's
** columns, gm_conv's k-tile order, gm_pw's rows and shared-memory
** layout).  Valid as C and CUDA.  The generator expands this #include in
** place.
**
** The families are shape-generic: every problem size reaches the kernels
** as one of these slots, none as a #define.
*/
#ifndef CT_GM_CUH
#define CT_GM_CUH

/* Slots of ct_kargs (the plan's variant->kargs). */
#define CT_GM_A_N 0       /* images */
#define CT_GM_A_C 1       /* input channels */
#define CT_GM_A_H 2
#define CT_GM_A_W 3
#define CT_GM_A_K 4       /* output channels */
#define CT_GM_A_R 5
#define CT_GM_A_S 6
#define CT_GM_A_P 7       /* output rows */
#define CT_GM_A_Q 8       /* output columns */
#define CT_GM_A_SH 9      /* stride along the height (V) */
#define CT_GM_A_SW 10     /* ... along the width (U) */
#define CT_GM_A_PH 11     /* padding, top = bottom */
#define CT_GM_A_PW 12     /* padding, left = right */
#define CT_GM_A_DH 13     /* dilation */
#define CT_GM_A_DW 14
#define CT_GM_A_CP 15     /* channels in the workspace: C rounded up to 4 */
#define CT_GM_A_NP 16     /* images in a workspace copy of x (>= N, see
                             below); gm3's lo copy starts at image NP */
#define CT_GM_A_KP 17     /* output channels of a packed weight copy (>= K);
                             gm3's lo copy starts at channel KP */
#define CT_GM_A_M 18      /* GEMM rows: N * P * Q output pixels */
#define CT_GM_A_TILES_M 19 /* ceil(M / BM) */
#define CT_GM_A_TILES_N 20 /* ceil(K / BN) */
#define CT_GM_A_NCB 21    /* channel blocks per tap: ceil(CP / BK) */
#define CT_GM_A_WOFF 22   /* floats from the workspace's start to the weights */
#define CT_GM_A_SPLITS 23 /* gmk: units a tile's k-tiles are split into (1: gm) */
#define CT_GM_A_KTPER 24  /* gmk: k-tiles per unit (the last may have fewer) */
#define CT_GM_A_POFF 25   /* gmk: floats from the workspace's start to the
                             partials [SPLITS][M][K] */
#define CT_GM_A_COUNT 26

/* The layout kernels: their threads; gm_patch1's (and gm_nhwc's over an
** NHWC x) block of PX pixels x CH channels; gm_pack's threads.  gm_nhwc
** over an NCHW x: see ct_gm_nhwc_px. */
#define CT_GM_PREP_THREADS 256
#define CT_GM_PREP_PX 32
#define CT_GM_PREP_CH 64
#define CT_GM_NHWC_CH 32       /* channels a block, at most */
#define CT_GM_NHWC_TILE 4096   /* floats a block, where an image takes several */
#define CT_GM_NHWC_WHOLE 8192  /* floats a block, where an image takes one */
#define CT_GM_PACK_THREADS 128
#define CT_GM_REDUCE_THREADS 256

/* The main kernel: one producer warpgroup and BM / 64 consumers; shared
** memory for STAGES stages of A (BM x BK) and B (BN x BK) fp32, a_parts
** copies of A and b_parts of B (1 for gm; 2 for gm3, the TF32 hi and lo
** halves of the 3xTF32 split; pw3 splits A in registers: 1 and 2), their
** full and empty mbarriers, and 1024 bytes to align the first stage to
** the 128-byte swizzle's 1024-byte atom. */
#define CT_GM_THREADS(bm) (128 * ((bm) / 64 + 1))
#define CT_GM_STAGE_BYTES(bm, bn, bk, a_parts, b_parts) \
  (((a_parts) * (bm) + (b_parts) * (bn)) * (bk) * 4)
#define CT_GM_RING_SMEM(stage_bytes, stages) (1024 + (stages) * ((stage_bytes) + 16))
#define CT_GM_SMEM(bm, bn, bk, stages, a_parts, b_parts) \
  CT_GM_RING_SMEM(CT_GM_STAGE_BYTES(bm, bn, bk, a_parts, b_parts), stages)
/* gm_pw with its weights resident (CT_GM_WRES): w_bytes of them before
** the ring, and one more mbarrier (16 bytes, keeping what follows
** aligned). */
#define CT_GM_WRES_SMEM(w_bytes) ((w_bytes) > 0 ? (w_bytes) + 16 : 0)
/* Families gme and gme3 (CT_GM_EP 1): past the ring, the epilogue's
** staging tile, [BN][BM + 4] floats (a channel's BM pixels one 16-byte
** aligned run, rows 4 floats longer so that a warp's fragment writes hit
** 32 banks). */
#define CT_GM_EPI_LD(bm) ((bm) + 4)
#define CT_GM_EPI_BYTES(bm, bn) ((bn) * CT_GM_EPI_LD(bm) * 4)

/* Families gmp and gmp3 (CT_GM_PATCH 1): the convolution as a GEMM over
** an explicit patch matrix in the workspace, [NP][P][Q][KG] with KG = R S C
** rounded up to 4 (in the CP slot), which gm_conv reads as a 1x1,
** stride-1, unpadded convolution of a P x Q image with KG channels.
** gm_patch writes it, CT_GM_PATCH_ROWS(KG) rows a block of
** CT_GM_PATCH_THREADS threads, a 4-float run per thread and step;
** gm_wpack copies w's rows [K][R S C] into [KP][KG], a block per row. */
#define CT_GM_PATCH_THREADS 128
#define CT_GM_PATCH_ROWS(kg) \
  ((kg) / 4 >= CT_GM_PATCH_THREADS ? 1 : CT_GM_PATCH_THREADS / ((kg) / 4))

/* Column j < R S C of the patch row of output pixel (n, p, q) holds x at
** channel c, row p SH - PH + r DH, column q SW - PW + s DW, where
** j = (c R + r) S + s for an NCHW problem, the order of KCRS weights, and
** j = (r S + s) C + c for NHWC, that of KRSC: either way column j of the
** packed weights is w's own element j of each output channel.  Returns
** x's offset of that element, or -1 where it lies in the padding. */
typedef struct ct_gm_geom {
  long long C, H, W, R, S, SH, SW, PH, PW, DH, DW;
  int nhwc;
} ct_gm_geom;

#ifdef __CUDACC__
#define CT_GM_FN static __device__ __forceinline__
#else
#define CT_GM_FN static inline
#endif

/* gm_nhwc over an NCHW x: a block moves ct_gm_nhwc_ch(CP) channels of one
** image through shared memory, the ct_gm_nhwc_px(CP, H W) pixels of one
** tile of that image: the whole image where its channels' planes fit in
** CT_GM_NHWC_WHOLE floats (they are then one run of x), else tiles of
** CT_GM_NHWC_TILE floats (a multiple of 4 pixels; fewer in the image's
** last).  Grid (NP ceil(H W / px), ceil(CP / ch)). */
CT_GM_FN int ct_gm_nhwc_ch(long long cp) {
  return cp < CT_GM_NHWC_CH ? (int)cp : CT_GM_NHWC_CH;
}
CT_GM_FN long long ct_gm_nhwc_px(long long cp, long long hw) {
  const int ch = ct_gm_nhwc_ch(cp);
  return ch * hw <= CT_GM_NHWC_WHOLE ? hw : CT_GM_NHWC_TILE / ch / 4 * 4;
}

CT_GM_FN long long ct_gm_patch_src(const ct_gm_geom *g, long long n, long long p,
                                   long long q, int j) {
  const int C = (int)g->C, S = (int)g->S, RS = (int)(g->R * g->S);
  int c, rs;
  if (g->nhwc) {
    rs = j / C;
    c = j - rs * C;
  } else {
    c = j / RS;
    rs = j - c * RS;
  }
  const int r = rs / S, s = rs - r * S;
  const long long h = p * g->SH - g->PH + r * g->DH, w = q * g->SW - g->PW + s * g->DW;
  if (h < 0 || h >= g->H || w < 0 || w >= g->W) return -1;
  return g->nhwc ? ((n * g->H + h) * g->W + w) * g->C + c
                 : ((n * g->C + c) * g->H + h) * g->W + w;
}

/* gm_conv's k-tile kt of a tile: tap (r, s) and channel block cb, cb
** fastest, then s (gmk's runs start at any kt; gm_conv steps on from
** there in the same order). */
CT_GM_FN void ct_gm_ktile(int kt, int ncb, int S, int *r, int *s, int *cb) {
  const int rs = kt / ncb;
  *cb = kt - rs * ncb;
  *r = rs / S;
  *s = rs - *r * S;
}

/* Family pwq (gm_pw, CT_GM_PING): unit i of a CTA's walk (u = block + i
** grid) is consumer i mod 2's; the ring holds every unit's k-tiles in walk
** order, nk each, so unit i's start at ring index i nk.  Their
** mainloops take turns: unit i's waits for unit i - 1's to end (i > 0)
** and hands over to unit i + 1's where the walk has one, so a consumer
** never waits on a stage more than one fill ahead of the producer (an
** mbarrier's parity wait cannot tell that fill from the completed one two
** phases earlier).  test_generator runs the protocol. */
CT_GM_FN unsigned ct_gm_ping_ring(int i, int nk) { return (unsigned)i * (unsigned)nk; }
CT_GM_FN int ct_gm_ping_waits(int i) { return i > 0; }
CT_GM_FN int ct_gm_ping_passes(int i, int block, int grid, int units) {
  return block + (i + 1) * grid < units;
}

/* Family pw (gm_pw): the tile pixel that row g of warp `warp` of consumer
** warpgroup c holds (row g + 8: the next pixel), and the float offset of
** (channel cl, pixel px) of a k-tile's x boxes as TMA's 128-byte swizzle
** lays them out: box px / 32 of 32 pixels x BK channels, a channel's 32
** pixels one 128-byte row, its 16-byte chunks XORed with the row's index
** mod 8.  The order of the rows makes the fragment reads of a half-warp
** (g 0..3 or 4..7 x t 0..3, channels t mod 8 apart, 8 bytes each) cover
** the 32 banks once (conv_gm.cu, gm_pw). */
CT_GM_FN int ct_gm_pw_pixel(int c, int warp, int g) {
  const int chunk = 4 * ((g >> 1) & 1) + 2 * (warp & 1) + (g >> 2);
  return 32 * (2 * c + (warp >> 1)) + 4 * chunk + 2 * (g & 1);
}
CT_GM_FN int ct_gm_pw_smem(int bk, int cl, int px) {
  return (px >> 5) * 32 * bk + cl * 32 + ((((px & 31) >> 2) ^ (cl & 7)) << 2) + (px & 3);
}

/* Family pw over planes of H W % 4 != 0, H W <= 64 (CT_GM_PW 4, "runs"):
** a tile is one image; x's map {4 HW, C / 4, N, 1} makes each run of 4
** channels' planes (16 HW bytes, contiguous in NCHW) one row, and a
** k-tile's box {4 HW, BK / 4, 1, 1} lands them back to back, unswizzled:
** channel cl, pixel px at float cl HW + px.  Its bytes, then the weights'
** b_bytes, are the stage's transaction. */
CT_GM_FN int ct_gm_runs_smem(int hw, int cl, int px) { return cl * hw + px; }
CT_GM_FN int ct_gm_runs_tx(int bk, int hw, int b_bytes) { return bk * hw * 4 + b_bytes; }

/* Family tap (gm_pw over any filter): tile tm's image and first output
** pixel.  A tile is `rows` output rows of bq columns, rows p0 .. p0 +
** rows - 1 and columns q0 .. q0 + bq - 1 of one image; the tiles of an
** image go along its rows of bq-column segments, then down. */
CT_GM_FN void ct_gm_tap_tile(int tm, int P, int Q, int rows, int bq, int *img, int *p0,
                             int *q0) {
  const int segs = (Q + bq - 1) / bq, per = (P + rows - 1) / rows * segs;
  *img = tm / per;
  const int rem = tm - *img * per, pb = rem / segs;
  *p0 = pb * rows;
  *q0 = (rem - pb * segs) * bq;
}

/* Family tap's x boxes.  TMA's tile loads start on a 16-byte boundary of
** x's rows (a box whose first column is not a multiple of 4 floats is an
** illegal instruction), so a tap's box starts at its window's first column
** rounded down to a multiple of 4 and is BQ + 4 columns wide, the window
** sigma = (first column) mod 4 columns into it (ct_gm_tap_window: the
** start, sigma returned).  A box of BQ = 32 is one output row of 32
** columns; of BQ = 16, two rows of 16 (rows SH apart in x).  The boxes are
** unswizzled, TMA's dense [BK][32 / BQ][BQ + 4]: a channel's rows are
** CT_GM_TAP_PITCH(bq) floats, 36 or 40, so 4 channels t mod 4 apart fall
** on banks 4 t (8 t) apart.  A stage holds the BM / 32 boxes, then B from
** the next 1024-byte boundary (where its wgmma descriptors, base offset 0,
** expect a swizzle atom to start). */
#define CT_GM_TAP_PITCH(bq) ((32 / (bq)) * ((bq) + 4))
#define CT_GM_TAP_A_BYTES(bm, bk, bq) ((bm) / 32 * (bk) * CT_GM_TAP_PITCH(bq) * 4)
#define CT_GM_TAP_B_OFF(bm, bk, bq) ((CT_GM_TAP_A_BYTES(bm, bk, bq) + 1023) / 1024 * 1024)
#define CT_GM_TAP_STAGE_BYTES(bm, bn, bk, bq, b_parts) \
  (CT_GM_TAP_B_OFF(bm, bk, bq) + (b_parts) * (bn) * (bk) * 4)

CT_GM_FN int ct_gm_tap_window(int col, int *start) {
  *start = col & ~3; /* down, negative columns too (two's complement) */
  return col & 3;
}

/* Row g + 8 h of warp `warp` of consumer c holds tile pixel
** ct_gm_tap_pixel: box 2 c + warp / 2, and within it pixel 16 (g / 4) +
** 4 (2 (warp mod 2) + h) + g mod 4 (pixel i of a box: row i / BQ, column
** i mod BQ).  A warp's 32 scalar reads of one fragment register (8 g x 4
** channels t) are then 4 runs of 4 columns in each of 2 groups 16 apart
** (BQ = 32) or in each of the 2 rows (BQ = 16), channels t on banks 4 t
** (8 t) apart: the 32 banks once, whatever sigma.  ct_gm_tap_smem is the
** float offset of (channel cl, tile pixel px) in a stage's boxes, sigma
** not added. */
CT_GM_FN int ct_gm_tap_pixel(int c, int warp, int g, int h) {
  return 32 * (2 * c + (warp >> 1)) + 16 * (g >> 2) + 4 * (2 * (warp & 1) + h) + (g & 3);
}
CT_GM_FN int ct_gm_tap_smem(int bk, int bq, int cl, int px) {
  const int pitch = CT_GM_TAP_PITCH(bq), i = px & 31;
  return (px >> 5) * bk * pitch + cl * pitch + i / bq * (bq + 4) + i % bq;
}

/* A tensor map of a tensor below 128 KiB may get a wrong out-of-bounds
** mode on drivers up to 13.1 (CUTLASS's changelog): the workspace tensors
** are made at least this big, the input with extra zero images, the
** weights with extra zero output channels, which the GEMM's discarded
** rows and columns meet. */
#define CT_GM_MIN_MAP_BYTES (128 * 1024)

#endif /* CT_GM_CUH */
