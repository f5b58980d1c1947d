/* ct_gm.cuh — what templates/conv_gm.cu and its descriptor
** (generator/family_gm.c) share: the slots of the kernels' int64 arguments
** (ct_kargs), the threads of each kernel, the shared memory of the main
** kernel and the smallest tensor a map describes.  Valid as C and CUDA.
** The generator expands this #include in place.
**
** The family is shape-generic: every problem size reaches the kernels as
** one of these slots, none as a #define.
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
#define CT_GM_A_COUNT 23

/* The layout kernels: gm_nhwc's threads and its block of PX pixels x CH
** channels; gm_pack's threads. */
#define CT_GM_PREP_THREADS 256
#define CT_GM_PREP_PX 32
#define CT_GM_PREP_CH 64
#define CT_GM_PACK_THREADS 128

/* The main kernel: one producer warpgroup and BM / 64 consumers; shared
** memory for STAGES stages of A (BM x BK) and B (BN x BK) fp32, `parts`
** of each (1 for gm; 2 for gm3, the TF32 hi and lo halves of the 3xTF32
** split), their full and empty mbarriers, and 1024 bytes to align the
** first stage to the 128-byte swizzle's 1024-byte atom. */
#define CT_GM_THREADS(bm) (128 * ((bm) / 64 + 1))
#define CT_GM_STAGE_BYTES(bm, bn, bk, parts) ((parts) * ((bm) + (bn)) * (bk) * 4)
#define CT_GM_SMEM(bm, bn, bk, stages, parts) \
  (1024 + (stages) * CT_GM_STAGE_BYTES(bm, bn, bk, parts) + 16 * (stages))

/* A tensor map of a tensor below 128 KiB may get a wrong out-of-bounds
** mode on drivers up to 13.1 (CUTLASS's changelog): the workspace tensors
** are made at least this big, the input with extra zero images, the
** weights with extra zero output channels, which the GEMM's discarded
** rows and columns meet. */
#define CT_GM_MIN_MAP_BYTES (128 * 1024)

#endif /* CT_GM_CUH */
