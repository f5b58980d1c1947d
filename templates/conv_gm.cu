// conv_gm.cu — families "gm" and "gm3": the convolution as an implicit
// GEMM for any groups = 1 problem on Hopper, TMA im2col + wgmma (sm_90a
// only), shape-generic: the problem's sizes come in ct_kargs (ct_gm.cuh's
// slots), only the tile configuration is compiled in.  docs/GENERAL.md
// has the facts this follows.  generator/family_gm.c holds both
// descriptors.
//
//   gm  (CT_GM_SPLIT 0, precision tf32): A and B rounded to TF32 (to_tf32)
//       by the layout passes, one wgmma per k8 step, fp32 accumulation.
//   gm3 (CT_GM_SPLIT 1, precision fp32): 3xTF32.  The layout passes write
//       two copies of each operand, a = ah + al with ah = rn(a) and
//       al = rn(a - ah) (the lo copy of x at image NP, of w at output
//       channel KP).  Per k8 step a second accumulator takes the cross
//       terms al*bh and ah*bl, the first takes ah*bh (al*bl, ~2^-22 of a
//       product, is dropped).  Tensor cores truncate their fp32 sums
//       towards zero, which shrinks every output alike: a bias that adds
//       up layer after layer through a network, where rounding errors
//       partly cancel.  So the big products' accumulator restarts every
//       chunk of KC k8 steps (scale-d 0) and is added into fp32 masters
//       (FADD, round to nearest) once its wgmma retired: the truncation
//       errs relative to a chunk's partial sum, not the whole
//       reduction's (wg3 and gm3 measured 2.4e-7 and 4.7e-7 relative
//       error at KC 4 and 8, nearly all of it that bias).  The cross
//       terms, 2^-11 of the big ones, run over the whole tile in their
//       own accumulator: their truncation is 2^-11 smaller, where in one
//       accumulator with the big products each of their wgmma truncated
//       the big partial sum too (two of the three per k8 step).
//
//   gmp, gmp3 (CT_GM_PATCH 1, with CT_GM_SPLIT 0 or 1): the same GEMM over
//       an explicit patch matrix instead of TMA im2col, for the problems
//       im2col cannot gather (a stride above 8, corners or taps past its
//       ranges: ViT's 16x16 patches at stride 16) or where padding every
//       tap's channels to BK wastes most of the depth (few channels); see
//       gm_patch below.
//
// Three launches on the call's stream, each with the tensor-map family's
// arguments (x, w, b, y, ws, ct_kargs, map 0, map 1):
//   gm_nhwc  x (NCHW, or NHWC with CT_LAYOUT 1) -> the workspace's NHWC
//            copy [NP][H][W][CP], channels padded to CP = a multiple of 4
//            with zeros, values rounded to TF32 (to_tf32), images N .. NP-1
//            zero (gm3: then the lo copy, the same layout);
//   gm_pack  w (KCRS, or KRSC) -> the workspace's KRSC copy [KP][R][S][CP]
//            at float WOFF, rounded, zero past K and C (gm3: then the lo
//            copy);
//   gm_conv  the GEMM: D[m][k] = sum over (r, s, c) of A[m][(r, s, c)] *
//            B[k][(r, s, c)], m = (n P + p) Q + q, plus the bias, through
//            the activation, stored as NCHW y (NHWC with CT_LAYOUT 1).
// gmp's first two are gm_patch (x -> the patch matrix; gm_patch1 for a 1x1
// NCHW problem) and gm_wpack (w -> [KP][KG]); its gm_conv is gm's with R =
// S = 1, stride 1, no padding.
// gm skips its first two when its maps read the caller's NHWC x and w
// (generator/family_gm.c).  pw, pw3, tap and tap3 launch gm_pack and gm_pw (below);
// pw skips gm_pack where its map reads the caller's w (C % 4 = 0, w at
// least 128 KiB, rounded to TF32 as it loads).
//
// gm_conv.  A persistent grid walks the tiles (BM pixels x BN output
// channels; the channel tiles of one pixel block are neighbours in the
// walk, so its im2col rows are reread from L2).  Warpgroup 0 is the
// producer: one thread issues, for every k-tile (r, s, channel block cb),
// an im2col load of the BM pixels x BK channels of tap (r, s) (map 0) and
// a tiled load of the BN x BK weights of that tap (map 1) into a ring of
// STAGES stages, each with a full mbarrier (the loads' bytes) and an empty
// one (an arrival per consumer warpgroup).  Warpgroups 1 .. BM/64 are the
// consumers: each owns 64 of the BM rows, issues BK/8 m64nBNk8 wgmma per
// k-tile from the swizzled stages, keeps one k-tile of wgmma in flight and
// releases a stage once its wgmma retired.  The epilogue adds the bias and
// stores each accumulator row into y's channel planes (8 consecutive
// pixels per instruction and channel; NHWC: along each pixel's channels)
// while the producer already loads the next tile.
//
// gm3 loads four boxes per k-tile (A hi and lo from images img and
// img + NP of map 0, B hi and lo from channels n0 and n0 + KP of map 1).
// A tile's rows past M may read the next copy's first image and its
// columns past KP the lo weights: rows and columns of D are independent,
// and the epilogue stores neither.
//
// Parameters (generator/family_gm.c): BM (64 or 128 pixels per tile), BN
// (64, 128 or 256 output channels; gm3 64 or 128, its masters and cross-term
// accumulator beside the first), BK (8, 16 or 32 channels per k-tile: one 32-, 64- or
// 128-byte swizzled row), STAGES; gm3 also KC (k8 steps per chunk, a
// multiple of BK / 8; the generator offers 4 alone: through ResNet-50's
// 53 layers 8's bias made the output err 4.1 times as much as PyTorch's
// fp32 path, 4's 2.8 times).

#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 128
#endif
#ifndef BK
#define BK 32
#endif
#ifndef CT_GM_SPLIT
#define CT_GM_SPLIT 0
#endif
#ifndef STAGES
#define STAGES (CT_GM_SPLIT ? 3 : 4) // gm3: 3 stages of 64 KiB at 128 x 128 x 32
#endif
#ifndef KC
#define KC 4
#endif
#ifndef CT_GM_PATCH
#define CT_GM_PATCH 0
#endif
#ifndef CT_GM_PW
#define CT_GM_PW 0
#endif
#ifndef CT_GM_SPLITK
#define CT_GM_SPLITK 0
#endif
#ifndef CT_GM_EP
#define CT_GM_EP 0 // gme: the epilogue staged in shared memory, stored by bulk copies
#endif
#ifndef CT_GM_PING
#define CT_GM_PING 0
#endif
#ifndef CT_GM_WRES
#define CT_GM_WRES 0 // pw: the channel blocks of the weights held in shared memory (0: streamed)
#endif
#ifndef BQ
#define BQ 32 // tap: output columns of a box (16: 2 rows of 16)
#endif
#ifndef SK
#define SK 4 // gmk: runs asked for; the plan's SPLITS slot has the runs made
#endif

// gm_conv and gm_pw add a residual (CT_RESIDUAL) into a tile's sums before
// their epilogues (RES_SUMS below), so ct_act.cuh's epilogue functions add
// none there.  gmk's gm_reduce adds it to the partials' sum (ct_out); the
// epilogues of gm and pw of BN = 256 and of pw3, tap3 and gmp3 add it as
// they store.
#define CT_RES_IN_SUMS (!CT_GM_SPLITK && (CT_GM_SPLIT ? !CT_GM_PW && !CT_GM_PATCH : BN <= 128))

#include "ct_ptx.cuh"
#include "ct_wgmma.cuh"
#include "ct_tmap.cuh"
#include "ct_gm.cuh"
#include "ct_act.cuh"
#include "ct_layout.cuh"

namespace gm {

constexpr bool SPLIT = CT_GM_SPLIT != 0;
constexpr bool PATCH = CT_GM_PATCH != 0;     // gmp: the GEMM over the patch matrix
constexpr bool POINTWISE = CT_GM_PW != 0;    // pw, tap: NCHW x read in place, gm_pw
constexpr bool TAPS = CT_GM_PW == 2 || CT_GM_PW == 3; // tap: any filter, a box per tap
constexpr bool FLAT = CT_GM_PW == 3;         // tap over the flattened plane
constexpr bool RUNS = CT_GM_PW == 4;         // pw over planes of H W % 4 != 0: whole-image runs
constexpr int TAP_BH = 32 / BQ;              // tap: output rows of a box
constexpr bool SPLITK = CT_GM_SPLITK != 0;   // gmk: the reduction split, gm_reduce
constexpr bool EP = CT_GM_EP != 0;           // gme: staged epilogue, bulk copies of channel runs
constexpr int PARTS = SPLIT ? 2 : 1;         // copies of each operand: hi (, lo)
constexpr int A_PARTS = POINTWISE ? 1 : PARTS; // pw3 splits A in registers
constexpr bool PING = CT_GM_PING != 0;       // pwq: a 64-row tile per consumer, in turn
constexpr int WRES = CT_GM_WRES;             // pw: weights resident, WRES channel blocks
constexpr bool RESIDENT = WRES > 0;
// RES_SUMS: a tile's residual, y's values at its outputs on entry (0 past
// M and K), is loaded before its mainloop: gm3 starts its fp32 masters
// from it, gm, pw and tap load it into rsum and add their sums to it at
// the tile's end.  Every load of the tile is in flight at once and waited
// for at the first chunk's flush (gm3) or the tile's end, where the
// epilogue waited for them a batch at a time: 64 values a thread of a
// 128 x 128 tile against a batch's 8.  (Not into the wgmma accumulators
// themselves: an accumulator defined by a load makes ptxas serialize
// every wgmma of the kernel, its C7515.  rsum's BN / 2 registers beside
// d's fit where BN <= 128; BN = 256 keeps the epilogue's batches, as pw3,
// tap3 and gmp3 do: the masters' loads made some of their variants
// spill.)  The epilogues below then have no residual to add:
// their ct_res loads nothing, ct_fin and ct_fin4 add nothing
// (CT_RES_IN_SUMS).
constexpr bool RES_SUMS = CT_RESIDUAL && CT_RES_IN_SUMS;
constexpr int RSUM = RES_SUMS && !SPLIT ? BN / 2 : 1; // rsum's floats
// An epilogue's batch (ct_act.cuh's ct_res): channel steps j whose loads,
// the bias pair (and, without RES_SUMS, the residuals), are all issued
// before any of their stores, since every __stcs is a barrier to the
// compiler: one load latency a batch, not one a step.  The 3xTF32
// kernels keep more live and take less, so that none spills: gm3 half,
// pw3 (A split in registers too) one step, its loads where the loop of one
// store a step had them.  (Whether there is a bias is the call's: b may
// be null, and then nothing is loaded.)
constexpr int EPI_BATCH = (BN / 8 < CT_RES_BATCH ? BN / 8 : CT_RES_BATCH) /
                          (!SPLIT ? 1 : POINTWISE ? CT_RES_BATCH : 2);
static_assert(EPI_BATCH >= 1 && BN / 8 % EPI_BATCH == 0, "whole epilogue batches");
constexpr int CWG = PING ? 2 : BM / 64;      // consumer warpgroups
constexpr int THREADS = CT_GM_THREADS(PING ? 128 : BM);
constexpr int ROW = BK * 4;                  // bytes of a stage row
// A stage: A hi, (A lo,) B hi, (B lo).
constexpr int A_BYTES = BM * ROW, B_BYTES = BN * ROW;
// tap: a stage's x boxes, BQ + 4 columns each (ct_gm.cuh), then B from
// the next 1024-byte boundary.
constexpr int TAP_BOX = BK * CT_GM_TAP_PITCH(BQ) * 4, TAP_A = CT_GM_TAP_A_BYTES(BM, BK, BQ);
constexpr int B_OFF = TAPS ? CT_GM_TAP_B_OFF(BM, BK, BQ) : A_PARTS * A_BYTES; // B hi within a stage
constexpr int STAGE_BYTES = TAPS ? CT_GM_TAP_STAGE_BYTES(BM, BN, BK, BQ, PARTS)
                                 : CT_GM_STAGE_BYTES(BM, BN, BK, A_PARTS, RESIDENT ? 0 : PARTS);
constexpr int TX_BYTES = TAPS ? TAP_A + PARTS * B_BYTES : STAGE_BYTES; // a stage's loads
// pw's runs (RUNS): a stage's x is BK channels of the tile's whole image,
// BK HW floats from its start, the runs of 4 channels back to back
// (ct_gm_runs_smem); its loads, HW a kernel argument: ct_gm_runs_tx.
// pw, weights resident: the whole [BN][C] block (each channel block's B
// hi, then lo), from the first 1024-byte boundary, the ring after it and
// one more mbarrier (wfull) after the ring's.
constexpr int W_BYTES = WRES * PARTS * B_BYTES;
constexpr int RING_BYTES = CT_GM_RING_SMEM(STAGE_BYTES, STAGES) + CT_GM_WRES_SMEM(W_BYTES);
constexpr int BAR_BYTES = STAGES * 16 + (RESIDENT ? 16 : 0); // the mbarriers past the stages
// gme, pwe: then the staging tile [BN][BM + 4] (STG_LD, CT_GM_EPI_BYTES);
// pwqe: one per consumer.
constexpr int SMEM_BYTES = RING_BYTES + (EP ? (PING ? 2 : 1) * CT_GM_EPI_BYTES(BM, BN) : 0);
constexpr int KTC = SPLIT ? KC / (BK / 8) : 1; // gm3: k-tiles per chunk
constexpr int CONSUMER_REGS = 232, PRODUCER_REGS = 40;

static_assert(BM == 64 || BM == 128, "BM: 64 or 128");
static_assert(BN == 64 || BN == 128 || BN == 256, "BN: 64, 128 or 256");
static_assert(BK == 8 || BK == 16 || BK == 32, "BK: 8, 16 or 32 (one swizzled row)");
static_assert(STAGES >= 2 && SMEM_BYTES <= 232448, "stages exceed shared memory");
static_assert(!SPLIT || BN <= 128, "gm3: two accumulators and masters of BN <= 128");
static_assert(!SPLIT || (KC % (BK / 8) == 0 && KTC >= 1), "KC: whole k-tiles");
static_assert(TAPS || STAGE_BYTES == A_PARTS * A_BYTES + (RESIDENT ? 0 : PARTS) * B_BYTES,
              "stage layout");
static_assert(!TAPS || (STAGE_BYTES % 1024 == 0 && TAP_BOX % 128 == 0), "tap: aligned stages, boxes");
static_assert(!POINTWISE || (!PATCH && CT_LAYOUT == 0), "pw: NCHW, x read in place");
static_assert(BQ == 32 || (TAPS && !FLAT && BQ == 16), "BQ: 32, or 16 for tap's rows");
static_assert(!SPLITK || (!POINTWISE && !PATCH && SK >= 2), "gmk: gm_conv over im2col, split");
static_assert(!EP || !CT_RESIDUAL, "gme, pwe: the staged epilogue takes no residual (the family declines it)");
static_assert(!EP || (!SPLITK && !TAPS && !PATCH && CT_LAYOUT == 0),
              "gme, pwe: gm_conv's im2col GEMM or gm_pw's 1x1, NCHW output");
static_assert(!PING || (POINTWISE && BM == 64 && !TAPS && !SPLIT), "pwq: a 64-row tile per consumer");
static_assert(!RESIDENT || (POINTWISE && !TAPS), "weights resident: gm_pw's 1x1");
static_assert(!RUNS || (BM == 64 && !PING && !EP), "pw's runs: one image a 64-row tile");
static_assert((A_BYTES % 1024 == 0 && B_BYTES % 1024 == 0) || BK < 32,
              "128-byte swizzle stages on 1024-byte atoms");
static_assert(A_BYTES % (8 * ROW) == 0 && B_BYTES % (8 * ROW) == 0, "stages on swizzle atoms");
// With two consumers the CTA holds 384 x 168 registers = 2 x 128 x 232 +
// 128 x 40, shared out by setmaxnreg; with one, no reallocation is needed.
static_assert(CWG == 1 || 2 * 128 * CONSUMER_REGS + 128 * PRODUCER_REGS <= 65536,
              "setmaxnreg within the CTA's registers");
#ifdef CT_PLAN_BLOCK_X
static_assert(CT_PLAN_BLOCK_X == THREADS, "plan: block size differs");
#endif
#ifdef CT_PLAN_SMEM
static_assert(CT_PLAN_SMEM == SMEM_BYTES, "plan: shared memory size differs");
#endif

// The main kernels' shared memory: STAGES stages from the first 1024-byte
// boundary (returned; gm_pw with its weights resident: W_BYTES past it,
// the weights before), then the ring's mbarriers, full (the loads' bytes,
// one arrival: the producer's expect_tx) and empty (an arrival per
// consumer warpgroup), and with the weights resident wfull (empty +
// STAGES: the weights' bytes), initialized by thread 0 before the CTA's
// barrier.
__device__ __forceinline__ unsigned char *ring_setup(unsigned char *smem_raw,
                                                     unsigned long long *&full,
                                                     unsigned long long *&empty) {
  const unsigned raw = (unsigned)__cvta_generic_to_shared(smem_raw);
  unsigned char *const smem = smem_raw + (((raw + 1023u) & ~1023u) - raw) + W_BYTES;
  full = reinterpret_cast<unsigned long long *>(smem + STAGES * STAGE_BYTES);
  empty = full + STAGES;
  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(full + s, 1);
      mbar_init(empty + s, PING ? 1 : CWG); // pwq: one consumer reads a stage
    }
    if constexpr (RESIDENT) mbar_init(empty + STAGES, 1);
    fence_mbar_init();
  }
  __syncthreads();
  return smem;
}

// Every kernel here is launched with programmatic stream serialization
// (ct_gen_launch.early): its blocks may be placed while the launch before
// it in the stream (the call's previous pass, or whatever ran before the
// call) still finishes.  Each calls this before it reads or writes global
// memory: it returns once that launch completed and its writes are
// visible (at once when there is none), so the order of the passes is the
// stream's, and only the launch's latency overlaps.
__device__ __forceinline__ void after_previous_launch() {
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
}

// gme's staged epilogue: the consumer warpgroups' barrier (named barrier 5,
// CWG * 128 threads; 1, 2 are wg_sync's, 3, 4 the ping-pong turns), a bulk
// copy of `bytes` (a multiple of 16) from shared address src to global dst
// (16-byte aligned) in this thread's bulk group, the group's commit, and
// the waits: until this thread's groups have read their shared memory
// (the staging tile is free again), or have completed.
__device__ __forceinline__ void consumers_sync() {
  asm volatile("bar.sync 5, %0;\n" ::"n"(CWG * 128) : "memory");
}
// pwqe: consumer c's own warpgroup (named barriers 6 and 7).
__device__ __forceinline__ void consumer_sync(int c) {
  asm volatile("bar.sync %0, 128;\n" ::"r"(6 + c) : "memory");
}
__device__ __forceinline__ void bulk_store(float *dst, unsigned src, unsigned bytes) {
  asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;\n" ::"l"(dst), "r"(src),
               "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }
__device__ __forceinline__ void bulk_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
}
__device__ __forceinline__ void bulk_wait_all() {
  asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");
}
// The bias of channel k (0 without a bias: b null), and of channels k0,
// k0 + 1, 0 for a channel past K (in0, in1 false).
__device__ __forceinline__ float bias_at(const float *__restrict__ b, int k) {
  return b ? __ldg(b + k) : 0.0f;
}
__device__ __forceinline__ float2 bias_pair(const float *__restrict__ b, int k0, bool in0, bool in1) {
  return make_float2(in0 ? bias_at(b, k0) : 0.0f, in1 ? bias_at(b, k0 + 1) : 0.0f);
}

// The staging tile (gme, pwe): [BN][STG_LD], a row an output channel, its
// rows BM + 4 floats apart (the 32 lanes' writes of one register hit 32
// banks).  stage_tile writes this thread's sums, bias and activation
// applied, acc[4j + 2h + e] (D's row g + 8h, column 8j + 2t + e) into
// stg[8j + 2t + e][rows[h]].
constexpr int STG_LD = CT_GM_EPI_LD(BM);
__device__ __forceinline__ void stage_tile(float *stg, const float *acc,
                                           const float *__restrict__ b, int n0, int K, int t,
                                           const int (&rows)[2]) {
  constexpr int LD = STG_LD;
#pragma unroll
  for (int j = 0; j < BN / 8; ++j) {
    const int k0 = n0 + 8 * j + 2 * t;
    const float2 bp = bias_pair(b, k0, k0 < K, k0 + 1 < K);
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float *const sp = stg + (8 * j + 2 * t) * LD + rows[h];
      sp[0] = ct_act(acc[4 * j + 2 * h] + bp.x);
      sp[LD] = ct_act(acc[4 * j + 2 * h + 1] + bp.y);
    }
  }
}

// A compile-time flag as a value: a generic lambda's copies (the epilogues'
// whole-tile and edge-tile loops).
template <bool V> struct ct_flag {
  static constexpr bool value = V;
};

// 3xTF32's sums (gm3, gmk3, gmp3, pw3; gm's kernels keep d alone): d
// takes a chunk's big products, e the tile's cross terms, master the
// chunks' fp32 sums.  flush_chunk: master += d, every wgmma writing d
// retired.  tile_sums: at a tile's end, its wgmma retired, the sums the
// epilogue stores (d, or the masters with the last chunk and e added).
__device__ __forceinline__ void flush_chunk(float (&master)[SPLIT ? BN / 2 : 1], float (&d)[BN / 2]) {
#pragma unroll
  for (int i = 0; i < (SPLIT ? BN / 2 : 0); ++i) {
    reg_fence(d[i]);
    master[i] += d[i];
  }
}
__device__ __forceinline__ const float *tile_sums(float (&master)[SPLIT ? BN / 2 : 1], float (&d)[BN / 2],
                                                  float (&e)[BN / 2]) {
#pragma unroll
  for (int i = 0; i < BN / 2; ++i) reg_fence(d[i]);
  if constexpr (SPLIT) {
    flush_chunk(master, d);
#pragma unroll
    for (int i = 0; i < BN / 2; ++i) {
      reg_fence(e[i]);
      master[i] += e[i];
    }
  }
  return SPLIT ? master : d;
}
// gm and pw with RES_SUMS: the tile's sums acc (wgmma retired) added to
// its residual in rsum, which the epilogue then stores; else acc.
__device__ __forceinline__ const float *add_residual(const float *acc, float (&rsum)[RSUM]) {
  if constexpr (RSUM > 1) {
#pragma unroll
    for (int i = 0; i < BN / 2; ++i) rsum[i] += acc[i];
    return rsum;
  }
  return acc;
}

// A run of 4 floats into a workspace copy at dst (16-byte aligned), rounded
// to TF32; gm3: then its lo parts, lo_off floats further.
__device__ __forceinline__ void store_run4(float *dst, const float (&v)[4], long long lo_off) {
  const float4 hi = make_float4(round_tf32(v[0]), round_tf32(v[1]), round_tf32(v[2]),
                                round_tf32(v[3]));
  *reinterpret_cast<float4 *>(dst) = hi;
  if constexpr (SPLIT)
    *reinterpret_cast<float4 *>(dst + lo_off) =
        make_float4(round_tf32(v[0] - hi.x), round_tf32(v[1] - hi.y), round_tf32(v[2] - hi.z),
                    round_tf32(v[3] - hi.w));
}

// gm_patch1's shared-memory transpose: a block's tile, tile[c][pl] =
// channel c0 + c of row row0 + pl, written to the workspace's rows of
// row_len floats as 16-byte runs of 4 channels
// (store_run4: rounded; gm3 also the lo parts), the rows at or past `rows`
// skipped.  row_len and the channels left are multiples of 4.
__device__ __forceinline__ void store_tile(const float (&tile)[CT_GM_PREP_CH][CT_GM_PREP_PX + 1],
                                           float *ws, long long row0, long long rows,
                                           long long row_len, int c0, long long lo_off) {
  constexpr int CH = CT_GM_PREP_CH, PX = CT_GM_PREP_PX;
  const int quads = (row_len - c0 < CH ? (int)(row_len - c0) : CH) / 4;
  for (int e = threadIdx.x; e < PX * quads; e += CT_GM_PREP_THREADS) {
    // A whole tile's quads per row divide by a constant.
    const int pl = quads == CH / 4 ? e / (CH / 4) : e / quads, c4 = 4 * (e - pl * quads);
    if (row0 + pl >= rows) continue;
    const float v[4] = {tile[c4][pl], tile[c4 + 1][pl], tile[c4 + 2][pl], tile[c4 + 3][pl]};
    store_run4(ws + (row0 + pl) * row_len + c0 + c4, v, lo_off);
  }
}

// The problem's geometry from the kernels' arguments (gmp's passes).
__device__ __forceinline__ ct_gm_geom patch_geom(const ct_kargs &a) {
  ct_gm_geom g;
  g.C = a.v[CT_GM_A_C];
  g.H = a.v[CT_GM_A_H];
  g.W = a.v[CT_GM_A_W];
  g.R = a.v[CT_GM_A_R];
  g.S = a.v[CT_GM_A_S];
  g.SH = a.v[CT_GM_A_SH];
  g.SW = a.v[CT_GM_A_SW];
  g.PH = a.v[CT_GM_A_PH];
  g.PW = a.v[CT_GM_A_PW];
  g.DH = a.v[CT_GM_A_DH];
  g.DW = a.v[CT_GM_A_DW];
  g.nhwc = CT_LAYOUT == 1;
  return g;
}

}  // namespace gm

#if !CT_GM_PATCH && !CT_GM_PW
// gm_nhwc: x -> the workspace's NHWC copy, rounded (gm3: the hi copy, then
// the lo copy NP images further), zero past C and past image N.
// CT_GM_PREP_THREADS threads.
//
// An NCHW x: grid (NP tiles, ceil(CP / ch)), a block's ch channels of one
// image's tile of px pixels (ct_gm.cuh's ct_gm_nhwc_px: all the image's
// pixels, or a tile of 4096 floats).  Its x is ch runs of px floats, one
// per channel plane (one run when the tile is the whole image), read with
// 16-byte loads where x's runs start on 16 bytes, into tile[c][pl] rows
// ld floats apart (ld odd where the tile is less than the image, so that
// a warp's reads along the channels meet each bank once).  Then each thread writes
// 16-byte runs of 4 channels of a pixel.  (Tiles of 32 pixels across the
// images, this kernel's earlier form, moved the same bytes 1.4-2x slower
// on ResNet-50's and KernelBench's planes: 128-byte runs per channel.)
//
// An NHWC x (CT_LAYOUT 1): grid (ceil(NP H W / CT_GM_PREP_PX),
// ceil(CP / CT_GM_PREP_CH)), a block's 32 pixels x 64 channels read and
// written along the channels, a 4-channel run per thread and step.
//
// Pixel indices are 64-bit; channels, the pixel within an image and the
// blocks in 32 bits where they fit by valid().
extern "C" __global__ void __launch_bounds__(CT_GM_PREP_THREADS)
    gm_nhwc(const float *__restrict__ x, const float *w, const float *b, float *y,
            float *__restrict__ ws, const __grid_constant__ ct_kargs a,
            const __grid_constant__ ct_tmap m0, const __grid_constant__ ct_tmap m1) {
  gm::after_previous_launch();
  constexpr int T = CT_GM_PREP_THREADS;
  const int C = (int)a.v[CT_GM_A_C], CP = (int)a.v[CT_GM_A_CP];
  const long long N = a.v[CT_GM_A_N], NP = a.v[CT_GM_A_NP];
  const long long lo_off = NP * a.v[CT_GM_A_H] * a.v[CT_GM_A_W] * CP; // gm3's lo copy
  (void)w, (void)b, (void)y, (void)m0, (void)m1;
  if constexpr (CT_LAYOUT == 1) {
    constexpr int PX = CT_GM_PREP_PX, CH = CT_GM_PREP_CH;
    const long long pixels = NP * a.v[CT_GM_A_H] * a.v[CT_GM_A_W];
    const long long real = N * a.v[CT_GM_A_H] * a.v[CT_GM_A_W];
    const long long pix0 = (long long)blockIdx.x * PX;
    const int c0 = CH * (int)blockIdx.y;
    const int quads = (CP - c0 < CH ? CP - c0 : CH) / 4;
    for (int e = threadIdx.x; e < PX * quads; e += T) {
      const int pl = e / quads, c = c0 + 4 * (e - pl * quads);
      const long long pix = pix0 + pl;
      if (pix >= pixels) continue;
      float v[4];
#pragma unroll
      for (int j = 0; j < 4; ++j)
        v[j] = pix < real && c + j < C ? __ldg(x + pix * C + c + j) : 0.0f;
      gm::store_run4(ws + pix * CP + c, v, lo_off);
    }
    return;
  }
  __shared__ __align__(16) float tile[CT_GM_NHWC_WHOLE];
  const int HW = (int)(a.v[CT_GM_A_H] * a.v[CT_GM_A_W]);
  const int ch = ct_gm_nhwc_ch(CP), px = (int)ct_gm_nhwc_px(CP, HW);
  const int tiles = (HW + px - 1) / px;
  const int bx = (int)blockIdx.x, ni = bx / tiles;
  const long long n = ni;
  const int p0 = px * (bx - ni * tiles), c0 = ch * (int)blockIdx.y;
  const int npx = HW - p0 < px ? HW - p0 : px;     // this tile's pixels
  const int nq = (CP - c0 < ch ? CP - c0 : ch) / 4; // its 4-channel runs
  const int ncx = n < N ? (C - c0 < ch ? C - c0 : ch) : 0; // channels read from x
  const bool whole = npx == HW;
  const int ld = whole ? HW : npx | 1;
  const float *const xb = x + (n * C + c0) * HW + p0;
  // 16-byte loads: every run starts on 16 bytes (x's address is the caller's).
  const bool vec = (reinterpret_cast<unsigned long long>(xb) & 15) == 0 && (whole || HW % 4 == 0);
  if (whole) {
    // The block's channel planes are one run of ncx HW floats.
    const int count = ncx * HW, q4 = vec ? count / 4 : 0;
    for (int e = threadIdx.x; e < q4; e += T)
      *reinterpret_cast<float4 *>(tile + 4 * e) = __ldg(reinterpret_cast<const float4 *>(xb) + e);
    for (int e = 4 * q4 + threadIdx.x; e < count; e += T) tile[e] = __ldg(xb + e);
  } else if (vec) {
    const int rq = npx / 4; // 16-byte loads a channel's run
    for (int e = threadIdx.x; e < ncx * rq; e += T) {
      const int c = e / rq, pl = 4 * (e - c * rq);
      const float4 v = __ldg(reinterpret_cast<const float4 *>(xb + (long long)c * HW + pl));
      float *const t = tile + c * ld + pl;
      t[0] = v.x, t[1] = v.y, t[2] = v.z, t[3] = v.w;
    }
  } else {
    for (int e = threadIdx.x; e < ncx * npx; e += T) {
      const int c = e / npx, pl = e - c * npx;
      tile[c * ld + pl] = __ldg(xb + (long long)c * HW + pl);
    }
  }
  __syncthreads();
  float *const wb = ws + (n * HW + p0) * CP + c0;
  for (int e = threadIdx.x; e < npx * nq; e += T) {
    // A whole block's runs per pixel divide by a constant.
    const int pl = nq == CT_GM_NHWC_CH / 4 ? e / (CT_GM_NHWC_CH / 4) : e / nq;
    const int c = 4 * (e - pl * nq);
    float v[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) v[j] = c + j < ncx ? tile[(c + j) * ld + pl] : 0.0f;
    gm::store_run4(wb + (long long)pl * CP + c, v, lo_off);
  }
}
#endif

#if !CT_GM_PATCH
// gm_pack: grid KP R S, CT_GM_PACK_THREADS; block (k, r, s) writes the CP
// channels of that tap, rounded, zero past K and C (gm3: hi, and lo KP
// output channels further), read from KCRS w or, with CT_LAYOUT 1, KRSC.
extern "C" __global__ void __launch_bounds__(CT_GM_PACK_THREADS)
    gm_pack(const float *x, const float *__restrict__ w, const float *b, float *y,
            float *__restrict__ ws, const __grid_constant__ ct_kargs a,
            const __grid_constant__ ct_tmap m0, const __grid_constant__ ct_tmap m1) {
  gm::after_previous_launch();
  const int C = (int)a.v[CT_GM_A_C], K = (int)a.v[CT_GM_A_K], CP = (int)a.v[CT_GM_A_CP];
  const unsigned RS = (unsigned)(a.v[CT_GM_A_R] * a.v[CT_GM_A_S]);
  const unsigned k = blockIdx.x / RS, rs = blockIdx.x - k * RS;
  // KCRS: the tap's channels RS apart; KRSC (CT_LAYOUT 1): adjacent.
  const float *const src = w + (long long)k * C * RS + (CT_LAYOUT == 1 ? (long long)rs * C : rs);
  const long long cstride = CT_LAYOUT == 1 ? 1 : RS;
  float *const dst = ws + a.v[CT_GM_A_WOFF] + (long long)blockIdx.x * CP;
  const long long lo_off = (long long)a.v[CT_GM_A_KP] * RS * CP; // gm3's lo copy
  for (int c = threadIdx.x; c < CP; c += CT_GM_PACK_THREADS) {
    const float v = (int)k < K && c < C ? __ldg(src + c * cstride) : 0.0f;
    dst[c] = round_tf32(v);
    if constexpr (gm::SPLIT) dst[lo_off + c] = round_tf32(v - round_tf32(v));
  }
  (void)x, (void)b, (void)y, (void)m0, (void)m1;
}
#else
// gm_patch: grid ceil(NP P Q / RB), CT_GM_PATCH_THREADS, RB =
// CT_GM_PATCH_ROWS(KG).  Writes rows row0 .. row0 + RB - 1 of the patch
// matrix [NP][P][Q][KG] (ct_gm.cuh: row (n, p, q), column j from
// ct_gm_patch_src), rounded, zero in the padding, past R S C and past the
// real images (gm3's lo copy NP P Q rows further).  Its threads walk the
// block's RB KG / 4 runs of 4 columns in order, so consecutive threads
// write consecutive 16 bytes, and read along x's rows (NCHW: s fastest) or
// channels (NHWC: c fastest).  Rows are 64-bit, columns 32-bit (KG < 2^31
// by valid()).
extern "C" __global__ void __launch_bounds__(CT_GM_PATCH_THREADS)
    gm_patch(const float *__restrict__ x, const float *w, const float *b, float *y,
             float *__restrict__ ws, const __grid_constant__ ct_kargs a,
             const __grid_constant__ ct_tmap m0, const __grid_constant__ ct_tmap m1) {
  gm::after_previous_launch();
  const ct_gm_geom g = gm::patch_geom(a);
  const int KG = (int)a.v[CT_GM_A_CP], QG = KG / 4, RB = CT_GM_PATCH_ROWS(KG);
  const int RSC = (int)(g.R * g.S * g.C);
  const long long Q = a.v[CT_GM_A_Q], PQ = a.v[CT_GM_A_P] * Q;
  const long long rows = a.v[CT_GM_A_NP] * PQ, real = a.v[CT_GM_A_N] * PQ;
  const long long row0 = (long long)blockIdx.x * RB, lo_off = rows * KG;
  for (int e = threadIdx.x; e < RB * QG; e += CT_GM_PATCH_THREADS) {
    const int rl = e / QG, j0 = 4 * (e - rl * QG);
    const long long row = row0 + rl;
    if (row >= rows) break; // rl only grows along the walk
    float v[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    if (row < real) {
      const long long n = row / PQ, pq = row - n * PQ, p = pq / Q, q = pq - p * Q;
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const long long src = j0 + i < RSC ? ct_gm_patch_src(&g, n, p, q, j0 + i) : -1;
        if (src >= 0) v[i] = __ldg(x + src);
      }
    }
    gm::store_run4(ws + row * KG + j0, v, lo_off);
  }
  (void)w, (void)b, (void)y, (void)m0, (void)m1;
}

// gm_patch1: gm_patch for a 1x1 NCHW problem (any stride and padding),
// whose matrix row is one pixel's C channels: a channel's values lie a
// plane apart in x, so this one reads along the pixels instead, through
// shared memory as gm_nhwc does.  Grid (ceil(NP P Q / CT_GM_PREP_PX),
// ceil(KG / CT_GM_PREP_CH)), CT_GM_PREP_THREADS: a block's 32 rows x 64
// columns, a warp per channel row reading 32 output pixels (SW apart in
// x), then 16-byte runs of 4 channels per row written.
extern "C" __global__ void __launch_bounds__(CT_GM_PREP_THREADS)
    gm_patch1(const float *__restrict__ x, const float *w, const float *b, float *y,
              float *__restrict__ ws, const __grid_constant__ ct_kargs a,
              const __grid_constant__ ct_tmap m0, const __grid_constant__ ct_tmap m1) {
  gm::after_previous_launch();
  constexpr int PX = CT_GM_PREP_PX, CH = CT_GM_PREP_CH, ROWS = CT_GM_PREP_THREADS / PX;
  static_assert(PX == 32 && CH % ROWS == 0 && CH % 4 == 0, "a warp per channel row");
  __shared__ float tile[CH][PX + 1];
  const ct_gm_geom g = gm::patch_geom(a);
  const int C = (int)g.C, KG = (int)a.v[CT_GM_A_CP];
  const long long Q = a.v[CT_GM_A_Q], PQ = a.v[CT_GM_A_P] * Q;
  const long long rows = a.v[CT_GM_A_NP] * PQ, real = a.v[CT_GM_A_N] * PQ;
  const long long row0 = (long long)blockIdx.x * PX, lo_off = rows * KG;
  const int c0 = CH * (int)blockIdx.y;
  const int tx = threadIdx.x % PX, ty = threadIdx.x / PX;
  // This thread's pixel (n, p, q) of row row0 + tx; channel c0's offset in
  // x (ct_gm_patch_src, column c0 of a 1x1), -1 in the padding; the next
  // channels a plane apart.
  const long long row = row0 + tx, n = row / PQ, pq = row - n * PQ, p = pq / Q, q = pq - p * Q;
  const long long src = row < real && c0 < C ? ct_gm_patch_src(&g, n, p, q, c0) : -1;
#pragma unroll
  for (int i = ty; i < CH; i += ROWS)
    tile[i][tx] = src >= 0 && c0 + i < C ? __ldg(x + src + (long long)i * g.H * g.W) : 0.0f;
  __syncthreads();
  gm::store_tile(tile, ws, row0, rows, KG, c0, lo_off); // KG is a multiple of 4
  (void)w, (void)b, (void)y, (void)m0, (void)m1;
}

// gm_wpack: grid KP, CT_GM_PACK_THREADS; block k writes row k of the
// packed weights [KP][KG] at float WOFF: w's R S C elements of output
// channel k (either layout: ct_gm.cuh), rounded, zero past R S C and K
// (gm3: hi, and lo KP rows further).
extern "C" __global__ void __launch_bounds__(CT_GM_PACK_THREADS)
    gm_wpack(const float *x, const float *__restrict__ w, const float *b, float *y,
             float *__restrict__ ws, const __grid_constant__ ct_kargs a,
             const __grid_constant__ ct_tmap m0, const __grid_constant__ ct_tmap m1) {
  gm::after_previous_launch();
  const int K = (int)a.v[CT_GM_A_K], KG = (int)a.v[CT_GM_A_CP];
  const int RSC = (int)(a.v[CT_GM_A_R] * a.v[CT_GM_A_S] * a.v[CT_GM_A_C]);
  const int k = (int)blockIdx.x;
  const float *const src = w + (long long)k * RSC;
  float *const dst = ws + a.v[CT_GM_A_WOFF] + (long long)k * KG;
  const long long lo_off = a.v[CT_GM_A_KP] * KG; // gm3's lo copy
  for (int j = threadIdx.x; j < KG; j += CT_GM_PACK_THREADS) {
    const float v = k < K && j < RSC ? __ldg(src + j) : 0.0f;
    dst[j] = round_tf32(v);
    if constexpr (gm::SPLIT) dst[lo_off + j] = round_tf32(v - round_tf32(v));
  }
  (void)x, (void)b, (void)y, (void)m0, (void)m1;
}
#endif // CT_GM_PATCH

#if !CT_GM_PW
// gm_conv: grid 1 .. TILES_M * TILES_N (persistent), THREADS, SMEM_BYTES.
// gmk (CT_GM_SPLITK 1): the persistent walk is over TILES_M * TILES_N *
// SPLITS units, unit u being split u % SPLITS of tile u / SPLITS: k-tiles
// KTPER * split .. (the tap-major order of gm's loop, cut in runs); its
// sum, without bias or activation, goes to the workspace's partials
// [SPLITS][M][K] at float POFF, which gm_reduce adds up.
extern "C" __global__ void __launch_bounds__(gm::THREADS, 1)
    gm_conv(const float *x, const float *w, const float *__restrict__ b, float *__restrict__ y,
            float *ws, const __grid_constant__ ct_kargs a, const __grid_constant__ ct_tmap tx,
            const __grid_constant__ ct_tmap tw) {
  using namespace gm;
  extern __shared__ unsigned char smem_raw[];
  unsigned long long *full, *empty;
  unsigned char *const smem = ring_setup(smem_raw, full, empty);
  after_previous_launch();

  // gmp: a 1x1, stride-1, unpadded convolution over the patch matrix.
  const int K = (int)a.v[CT_GM_A_K];
  const int R = PATCH ? 1 : (int)a.v[CT_GM_A_R], S = PATCH ? 1 : (int)a.v[CT_GM_A_S];
  const int P = (int)a.v[CT_GM_A_P], Q = (int)a.v[CT_GM_A_Q];
  const int PQ = P * Q, M = (int)a.v[CT_GM_A_M];
  const int tiles_n = (int)a.v[CT_GM_A_TILES_N];
  const int tiles = (int)a.v[CT_GM_A_TILES_M] * tiles_n;
  const int ncb = (int)a.v[CT_GM_A_NCB];
  const int ktiles = R * S * ncb;
  const int splits = SPLITK ? (int)a.v[CT_GM_A_SPLITS] : 1;
  const int kt_per = SPLITK ? (int)a.v[CT_GM_A_KTPER] : ktiles;
  const int units = tiles * splits;
  const int tid = threadIdx.x, wgi = tid / 128;

  if (wgi == 0) {
    // The producer.
    if constexpr (CWG == 2) asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(PRODUCER_REGS));
    if (tid != 0) return;
    tmap_prefetch(&tx);
    tmap_prefetch(&tw);
    const int SH = PATCH ? 1 : (int)a.v[CT_GM_A_SH], SW = PATCH ? 1 : (int)a.v[CT_GM_A_SW];
    const int PH = PATCH ? 0 : (int)a.v[CT_GM_A_PH], PW = PATCH ? 0 : (int)a.v[CT_GM_A_PW];
    const int DH = PATCH ? 1 : (int)a.v[CT_GM_A_DH], DW = PATCH ? 1 : (int)a.v[CT_GM_A_DW];
    const int NP = (int)a.v[CT_GM_A_NP], KP = (int)a.v[CT_GM_A_KP];
    unsigned it = 0;
#pragma unroll 1
    for (int u = blockIdx.x; u < units; u += gridDim.x) {
      const int tile = u / splits, kt0 = (u - tile * splits) * kt_per;
      const int kt1 = kt0 + kt_per < ktiles ? kt0 + kt_per : ktiles;
      const int tm = tile / tiles_n, n0 = (tile - tm * tiles_n) * BN;
      const int m0 = tm * BM, img = m0 / PQ, rem = m0 - img * PQ;
      const int p0 = rem / Q, q0 = rem - p0 * Q;
      const int hb = p0 * SH - PH, wb = q0 * SW - PW;
      if constexpr (CT_RESIDUAL && CT_LAYOUT == 1 && !SPLITK) {
        // NHWC: the tile's residual (a run of its channels per pixel)
        // brought to L2, one bulk prefetch a pixel, ahead of the consumers'
        // loads at the tile's start (RES_SUMS) by as far as the ring runs
        // ahead of them.
        if ((K & 3) == 0 && (reinterpret_cast<unsigned long long>(y) & 15u) == 0) {
          const int cols = K - n0 < BN ? K - n0 : BN;
          for (int i = 0; i < BM && m0 + i < M; ++i)
            bulk_prefetch_l2(y + (long long)(m0 + i) * K + n0, 4u * cols);
        }
      }
      int r, s, cb;
      ct_gm_ktile(kt0, ncb, S, &r, &s, &cb);
#pragma unroll 1
      for (int kt = kt0; kt < kt1; ++kt, ++it) {
        const unsigned st = it % STAGES, ph = (it / STAGES) & 1u;
        unsigned char *const sa = smem + st * STAGE_BYTES;
        mbar_wait(empty + st, ph ^ 1u);
        mbar_arrive_expect_tx(full + st, STAGE_BYTES);
        tma_load_im2col4(sa, &tx, full + st, cb * BK, wb, hb, img,
                         (unsigned short)(s * DW), (unsigned short)(r * DH));
        tma_load_tile4(sa + B_OFF, &tw, full + st, cb * BK, s, r, n0);
        if constexpr (SPLIT) {
          tma_load_im2col4(sa + A_BYTES, &tx, full + st, cb * BK, wb, hb, img + NP,
                           (unsigned short)(s * DW), (unsigned short)(r * DH));
          tma_load_tile4(sa + B_OFF + B_BYTES, &tw, full + st, cb * BK, s, r, n0 + KP);
        }
        if (++cb == ncb) {
          cb = 0;
          if (++s == S) {
            s = 0;
            ++r;
          }
        }
      }
    }
    return;
  }

  // A consumer: rows 64 * c .. 64 * c + 63 of each tile.
  if constexpr (CWG == 2) asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(CONSUMER_REGS));
  const int c = wgi - 1, lt = tid % 128;
  const int warp = lt / 32, g = (lt % 32) / 4, t = lt % 4;
  const unsigned sbase = (unsigned)__cvta_generic_to_shared(smem);
  // gme: the staging tile past the ring and its mbarriers; bulk copies
  // need y 16-byte aligned (the plan: P Q % 4 = 0, so every channel run of
  // a tile starts and ends on 16 bytes), else the stores below.
  float *const stg = reinterpret_cast<float *>(smem + STAGES * STAGE_BYTES + BAR_BYTES);
  const bool bulk = EP && (reinterpret_cast<unsigned long long>(y) & 15u) == 0 && PQ % 4 == 0;
  float d[BN / 2], e[BN / 2], master[SPLIT ? BN / 2 : 1]; // gm3's sums: see tile_sums (gm: d alone)
  float rsum[RSUM]; // gm: the tile's residual (RES_SUMS), then its sums added
  // Row h (0, 1) of this thread in tile tm: the address in y of its pixel
  // m at channel n0 + 2t, and whether m < M (valid).  (kst, y's stride
  // from a channel to the next, and pair are computed where they are used:
  // kept across the tile loop they cost registers and instructions.)
  auto out_row = [&](int tm, int n0, int h, bool &valid) {
    const int m = tm * BM + c * 64 + warp * 16 + 8 * h + g;
    const int img = m / PQ, pq = m - img * PQ;
    valid = m < M;
    return (CT_LAYOUT == 1 ? y + (long long)m * K : y + ((long long)img * K * PQ + pq)) +
           (n0 + 2 * t) * (CT_LAYOUT == 1 ? 1LL : (long long)PQ);
  };
  // RES_SUMS: the tile's residual into s (gm3's masters, gm's rsum; an
  // array of one float is never loaded), in the accumulator's layout (the
  // epilogue's below).  The address steps 8 channels a j and the tests
  // compare 8 j (+ 1) with the channels left, so that nothing per j is
  // kept across tiles (ptxas kept each j's channel, and spilled).
  auto residual_sums = [&](auto &s, int tm, int n0) {
    if constexpr (sizeof(s) == BN / 2 * sizeof(float)) {
      const long long kst = CT_LAYOUT == 1 ? 1 : PQ;
      const bool pair = CT_LAYOUT == 1 && (K & 1) == 0 && (reinterpret_cast<unsigned long long>(y) & 7u) == 0;
      const int kl = K - n0 - 2 * t; // channels from n0 + 2t on
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        bool rv;
        const float *yp = out_row(tm, n0, h, rv);
#pragma unroll
        for (int j = 0; j < BN / 8; ++j, yp += 8 * kst) {
          float2 v{};
          if (CT_LAYOUT == 1 && pair) {
            if (rv && 8 * j < kl) v = __ldcs(reinterpret_cast<const float2 *>(yp));
          } else {
            if (rv && 8 * j < kl) v.x = __ldcs(yp);
            if (rv && 8 * j + 1 < kl) v.y = __ldcs(yp + kst);
          }
          s[4 * j + 2 * h] = v.x;
          s[4 * j + 2 * h + 1] = v.y;
        }
      }
    }
  };
  unsigned it = 0;
#pragma unroll 1
  for (int u = blockIdx.x; u < units; u += gridDim.x) {
    const int tile = u / splits, split = u - tile * splits;
    const int kt1 = (split + 1) * kt_per < ktiles ? (split + 1) * kt_per : ktiles;
    const int nk = kt1 - split * kt_per; // this unit's k-tiles (>= 1 by the plan)
    const int tm = tile / tiles_n, n0 = (tile - tm * tiles_n) * BN;
    if constexpr (RES_SUMS) {
      if constexpr (SPLIT)
        residual_sums(master, tm, n0);
      else
        residual_sums(rsum, tm, n0);
    } else if constexpr (SPLIT) {
#pragma unroll
      for (int i = 0; i < BN / 2; ++i) master[i] = 0.0f;
    }
    unsigned prev = 0;
#pragma unroll 1
    for (int kt = 0; kt < nk; ++kt, ++it) {
      const unsigned st = it % STAGES, ph = (it / STAGES) & 1u;
      mbar_wait(full + st, ph);
      const unsigned sa = sbase + st * STAGE_BYTES;
      const unsigned long long da = wgmma_desc_swizzled(sa + c * 64 * ROW, ROW);
      const unsigned long long db = wgmma_desc_swizzled(sa + B_OFF, ROW);
      if constexpr (SPLIT) {
        // A chunk opens every KTC k-tiles: the last one's wgmma retire (a
        // drain, see the head of the file) and it goes into the masters.
        const bool opens = kt % KTC == 0;
        if (opens && kt > 0) {
          wgmma_wait<0>();
          flush_chunk(master, d);
        }
        const unsigned long long dal = da + (A_BYTES >> 4), dbl = db + (B_BYTES >> 4);
        wgmma_fence();
#pragma unroll
        for (int j = 0; j < BK / 8; ++j) {
          CtWgmmaSS<BN>::run(e, dal + 2 * j, db + 2 * j, (kt | j) != 0);
          CtWgmmaSS<BN>::run(e, da + 2 * j, dbl + 2 * j, 1);
          CtWgmmaSS<BN>::run(d, da + 2 * j, db + 2 * j, !opens || j != 0);
        }
      } else {
        wgmma_fence();
#pragma unroll
        for (int j = 0; j < BK / 8; ++j)
          CtWgmmaSS<BN>::run(d, da + 2 * j, db + 2 * j, (kt | j) != 0);
      }
      wgmma_commit();
      wgmma_wait<1>();
      if (kt > 0 && lt == 0) mbar_arrive(empty + prev);
      prev = st;
    }
    wgmma_wait<0>();
    if (lt == 0) mbar_arrive(empty + prev);
    const float *const acc = add_residual(tile_sums(master, d, e), rsum);

    if constexpr (SPLITK) {
      // The unit's sum into partials[split][m][k], as it is.
      float *const part = ws + a.v[CT_GM_A_POFF] + (long long)split * M * K;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int m = tm * BM + c * 64 + warp * 16 + 8 * h + g;
        if (m >= M) continue;
#pragma unroll
        for (int j = 0; j < BN / 8; ++j) {
          const int k0 = n0 + 8 * j + 2 * t;
          if (k0 < K) part[(long long)m * K + k0] = acc[4 * j + 2 * h];
          if (k0 + 1 < K) part[(long long)m * K + k0 + 1] = acc[4 * j + 2 * h + 1];
        }
      }
    } else if (bulk) {
      // gme: the tile's sums, bias and activation applied, into stg[k][m]
      // (stage_tile), then one bulk copy per output channel and image
      // segment of the tile (its rows below M, m0 .. m0 + rows - 1, may
      // span images), issued by consumer thread k, in its bulk group; the
      // consumers then go on to the next tile while the copies drain.
      // First, each thread's copies of the tile before have read stg.
      constexpr int LD = STG_LD;
      bulk_wait_read();
      consumers_sync();
      const int srows[2] = {c * 64 + warp * 16 + g, c * 64 + warp * 16 + 8 + g};
      stage_tile(stg, acc, b, n0, K, t, srows);
      fence_proxy_async(); // the generic proxy's writes, before the copies read them
      consumers_sync();
      const int m0 = tm * BM, rows = M - m0 < BM ? M - m0 : BM;
      for (int kl = c * 128 + lt; kl < BN && n0 + kl < K; kl += CWG * 128) {
        const unsigned src = (unsigned)__cvta_generic_to_shared(stg + kl * LD);
        for (int done = 0; done < rows;) {
          const int m = m0 + done, img = m / PQ, pq = m - img * PQ;
          const int len = rows - done < PQ - pq ? rows - done : PQ - pq;
          bulk_store(y + ((long long)img * K + n0 + kl) * PQ + pq, src + 4u * done, 4u * len);
          done += len;
        }
      }
      bulk_commit();
    } else {
      // Epilogue: accumulator acc[4j + 2h + e] = D[16 warp + g + 8h][8j + 2t + e],
      // plus the bias, through the activation, at pixel m's channel k:
      // y[img][k][pq] (NHWC: y[m][k]).  Rows past M and channels past K are
      // not stored.  A tile whose BN channels all exist runs a copy of the
      // loop without the channel tests, the stores predicated on the row
      // alone, and a j's bias pair serves both rows: about 4 instructions
      // a value where a branch per value took some 20, with the epilogue
      // in series with the next tile's mainloop (docs/PERFORMANCE.md v23).
      // NHWC: a row's channels k0, k0 + 1 are neighbours in y; where K is
      // even and y 8-byte aligned (k0 is even) they go as one 8-byte store,
      // so a warp's stores fill whole 32-byte sectors (two scalar stores
      // fill half of each, which HBM's ECC turns into a read-modify-write).
      const long long kst = CT_LAYOUT == 1 ? 1 : PQ;
      const bool pair = CT_LAYOUT == 1 && (K & 1) == 0 &&
                        (reinterpret_cast<unsigned long long>(y) & 7u) == 0;
      float *yr[2]; // the rows' pixels in channel n0 + 2t's plane
      bool rv[2];
#pragma unroll
      for (int h = 0; h < 2; ++h) yr[h] = out_row(tm, n0, h, rv[h]);
      // The bias pairs and the residuals (CT_RESIDUAL) are loaded
      // EPI_BATCH channel steps j at a time, before any of their stores
      // (ct_act.cuh's ct_res).
      auto store = [&](auto whole) {
        constexpr bool WHOLE = decltype(whole)::value;
#pragma unroll
        for (int j0 = 0; j0 < BN / 8; j0 += EPI_BATCH) {
          float2 r[EPI_BATCH][2]; // the residuals of row h's channels k0, k0 + 1
          float2 bias[EPI_BATCH]; // the bias of channels k0, k0 + 1
#pragma unroll
          for (int jj = 0; jj < EPI_BATCH; ++jj) {
            const int k0 = n0 + 8 * (j0 + jj) + 2 * t;
            const bool in0 = WHOLE || k0 < K, in1 = WHOLE || k0 + 1 < K;
            if (EPI_BATCH > 1) bias[jj] = bias_pair(b, k0, in0, in1);
#pragma unroll
            for (int h = 0; h < 2; ++h) {
              const float *const yp = yr[h] + 8 * (j0 + jj) * kst;
              if (CT_LAYOUT == 1 && pair)
                r[jj][h] = rv[h] && in0 ? ct_res(reinterpret_cast<const float2 *>(yp)) : float2{};
              else
                r[jj][h] = make_float2(rv[h] && in0 ? ct_res(yp) : 0.0f, rv[h] && in1 ? ct_res(yp + kst) : 0.0f);
            }
          }
#pragma unroll
          for (int jj = 0; jj < EPI_BATCH; ++jj) {
            const int j = j0 + jj, k0 = n0 + 8 * j + 2 * t;
            const bool in0 = WHOLE || k0 < K, in1 = WHOLE || k0 + 1 < K;
            const float2 bp = EPI_BATCH > 1 ? bias[jj] : bias_pair(b, k0, in0, in1);
            const float b0 = bp.x, b1 = bp.y;
#pragma unroll
            for (int h = 0; h < 2; ++h) {
              float *const yp = yr[h] + 8 * j * kst;
              if (CT_LAYOUT == 1 && pair) { // in0 implies in1: K and k0 are even
                float2 *const yv = reinterpret_cast<float2 *>(yp);
                if (rv[h] && in0)
                  __stcs(yv, ct_fin2(make_float2(acc[4 * j + 2 * h] + b0, acc[4 * j + 2 * h + 1] + b1),
                                     r[jj][h]));
                continue;
              }
              if (rv[h] && in0) __stcs(yp, ct_fin(acc[4 * j + 2 * h] + b0, r[jj][h].x));
              if (rv[h] && in1) __stcs(yp + kst, ct_fin(acc[4 * j + 2 * h + 1] + b1, r[jj][h].y));
            }
          }
        }
      };
      if (n0 + BN <= K)
        store(ct_flag<true>{});
      else
        store(ct_flag<false>{});
    }
  }
  if (bulk) bulk_wait_all(); // gme: the last tile's copies done before the CTA ends
  (void)x, (void)w, (void)ws, (void)stg;
}

#if CT_GM_SPLITK
// gm_reduce: gmk's last launch, grid ceil(M K / CT_GM_REDUCE_THREADS):
// element (m, k) of the output, m-major, is the sum of the SPLITS
// partials in split order (fp32, rounded to nearest), plus the bias,
// through the activation, stored at pixel m's channel k of y.
extern "C" __global__ void __launch_bounds__(CT_GM_REDUCE_THREADS)
    gm_reduce(const float *x, const float *w, const float *__restrict__ b, float *__restrict__ y,
              float *ws, const __grid_constant__ ct_kargs a, const __grid_constant__ ct_tmap m0,
              const __grid_constant__ ct_tmap m1) {
  gm::after_previous_launch();
  const long long M = a.v[CT_GM_A_M], K = a.v[CT_GM_A_K], MK = M * K;
  const long long i = (long long)blockIdx.x * CT_GM_REDUCE_THREADS + threadIdx.x;
  if (i >= MK) return;
  const int splits = (int)a.v[CT_GM_A_SPLITS];
  const float *const part = ws + a.v[CT_GM_A_POFF] + i;
  float sum = 0.0f;
  for (int s = 0; s < splits; ++s) sum += part[s * MK];
  const long long m = i / K, k = i - m * K;
  const long long PQ = a.v[CT_GM_A_P] * a.v[CT_GM_A_Q], img = m / PQ;
  float *const yp = CT_LAYOUT == 1 ? y + i : y + (img * K + k) * PQ + (m - img * PQ);
  *yp = ct_out(sum + (b ? __ldg(b + k) : 0.0f), yp);
  (void)x, (void)w, (void)m0, (void)m1;
}
#endif
#else
// gm_pw: family pw, a 1x1, stride-1, unpadded convolution of NCHW x, read
// in place: y[n] = W x[n], a GEMM of pixels x channels whose A, x[n]'s
// channel planes, is pixel-major in memory, which tf32 wgmma cannot read
// from shared memory.  So A goes through registers (wgmma's RS form):
// grid 1 .. TILES_M * TILES_N (persistent), THREADS, SMEM_BYTES, the tiles
// BM pixels of one image (TILES_M = N ceil(HW / BM)) x BN output channels.
// The producer loads, per k-tile of BK channels, BM / 32 boxes of 32
// pixels x BK channels of x (map 0: {HW, C, N, 1}, 128-byte swizzle: a
// channel's 32 pixels are one 128-byte row whose 16-byte chunks are XORed
// with the channel's row index mod 8) and the BN x BK weights (map 1, as
// gm: packed, or the caller's [K][C] rounded as it loads).  Map 0 is
// TFLOAT32: TMA rounds x to nearest even as it loads, so a consumer
// thread reads its fragment from the boxes (ld.shared of 2 pixels, two
// channels a k8 step) and issues one RS wgmma per k8 step with no
// instruction between; fragments alternate between two register sets,
// the one a wgmma in flight reads left alone.  pw3 (CT_GM_SPLIT 1, fp32):
// map 0 FLOAT32, the fragments split in registers, hi = rn(a) and lo =
// rn(a - hi) (split_tf32), the weights' hi and lo copies loaded
// (gm_pack's, KP rows apart), and the three wgmma per k8 step with gm3's
// chunked masters; x itself is read once, with no copy.
//
// Weights resident (CT_GM_WRES = NCB, the plan's choice where TILES_N = 1
// and they fit): the producer loads the whole [BN][CP] block once, before
// the CTA's first tile, into W_BYTES before the ring (channel block cb at
// cb PARTS B_BYTES, barrier wfull = empty + STAGES); the stages carry x's
// boxes alone and k-tile kt's wgmma reads channel block kt.
//
// Rows of D are pixels in an order chosen for the shared-memory reads
// (ct_gm_pw_pixel: warps 2 b and 2 b + 1 of consumer c share box 2 c + b,
// and a half-warp's 16 8-byte loads hit the 32 banks once; ct_gm_pw_smem
// is the boxes' swizzled layout).  The epilogue stores each accumulator
// at its pixel, y[n][k][hw].
//
// pwq (CT_GM_PING 1, BM = 64, tf32): the two consumers on tiles of their
// own, the CTA's tiles in turn, so that one's epilogue (its stores) runs
// beside the other's loads and wgmma; each stage is read, and released,
// by one consumer (the empty barriers' count is 1).
//
// tap, tap3 (CT_GM_PW 2): the same kernel over any filter, padding,
// dilation and vertical stride (the horizontal stride 1).  Map 0 is x as
// {W, H, C, N}; a tile is BM / 32 output rows of one 32-column segment
// (ct_gm_tap_tile), box i its row p0 + i (BQ = 16: BM / 16 rows of 16
// columns, box i rows p0 + 2 i and p0 + 2 i + 1); a tile's k-tiles go over
// the taps (r, s) and channel blocks as gm_conv's (ct_gm_ktile), each box
// loaded from where tap (r, s)'s window starts, (q0 - PW + s DW, (p0 + i)
// SH - PH + r DH), TMA filling what lies outside x with zeros: the
// padding.  TMA's tile loads start on 16 bytes, so a box starts at the
// window's column rounded down to a multiple of 4, BQ + 4 columns wide
// and unswizzled, and the consumers read it sigma = (s DW - PW) mod 4
// columns in, one float at a time (ct_gm_tap_window, ct_gm_tap_pixel and
// ct_gm_tap_smem: conflict-free for every sigma; rows g and g + 8 are
// pixels 4 apart, so the epilogue stores single floats).  The weights
// are gm_pack's [KP][R][S][CP], box (cb BK, s, r, n0).  Rows and columns
// past the image are computed and not stored.
// CT_GM_PW 3 (tap's plan where both strides are 1, H W % 4 = 0 and Q <= W,
// any W): x is pw's map {HW, C, N, 1}; the output is taken W wide (columns Q
// .. W - 1 computed and not stored), so tap (r, s) of a run of 32 output
// pixels is a run of 32 input pixels (r DH - PH) W + s DW - PW further:
// one box (from the 16-byte boundary before, 36 wide, as the row form's,
// sigma = ((r DH - PH) W + s DW - PW) mod 4);
// rows above or below x lie outside the plane (zeros), and the consumers
// zero the pixels whose input column wrapped into a neighbouring row
// (their registers hold A anyway).
// CT_GM_PW 4 (pw's "runs": a 1x1 over planes of H W % 4 != 0, H W <= 64,
// C % 4 = 0): no 16-byte plane stride for pw's map, so x is viewed as
// {4 HW, C / 4, N, 1}, 4 channels' planes a row; a tile is one image (BM =
// 64, rows past HW computed and not stored) and a k-tile one unswizzled
// box {4 HW, BK / 4, 1, 1} of BK HW floats (the stage's transaction set
// from HW at run time, ct_gm_runs_tx), read one float at a time at
// ct_gm_runs_smem; single-float stores (the planes are not 16-byte runs).
extern "C" __global__ void __launch_bounds__(gm::THREADS, 1)
    gm_pw(const float *x, const float *w, const float *__restrict__ b, float *__restrict__ y,
          float *ws, const __grid_constant__ ct_kargs a, const __grid_constant__ ct_tmap tx,
          const __grid_constant__ ct_tmap tw) {
  using namespace gm;
  static_assert(BM % 32 == 0 && BK % 8 == 0, "pw: 32-pixel boxes, k8 steps");
  extern __shared__ unsigned char smem_raw[];
  unsigned long long *full, *empty;
  unsigned char *const smem = ring_setup(smem_raw, full, empty);
  after_previous_launch();

  const int K = (int)a.v[CT_GM_A_K], P = (int)a.v[CT_GM_A_P], Q = (int)a.v[CT_GM_A_Q];
  const int HW = P * Q, W = (int)a.v[CT_GM_A_W];
  const int PV = FLAT ? P * W : HW; // pixels of an image's (tap, flat: virtual, W wide) output
  const int DW = (int)a.v[CT_GM_A_DW], PW = (int)a.v[CT_GM_A_PW];
  const int tiles_n = (int)a.v[CT_GM_A_TILES_N];
  const int tiles = (int)a.v[CT_GM_A_TILES_M] * tiles_n;
  const int ncb = (int)a.v[CT_GM_A_NCB];
  const int S = (int)a.v[CT_GM_A_S];
  const int nkt = TAPS ? ncb * (int)a.v[CT_GM_A_R] * S : ncb; // k-tiles of a tile
  const int tid = threadIdx.x, wgi = tid / 128;
  // Tile tm's image and first pixel: pw, hw0 = p0 along the flattened
  // plane; tap, output row p0 and column q0 of its BM / 32 box rows.
  // tap (r, s)'s window along map 0's first dimension, from the box's
  // output column (flat: pixel), a multiple of 4: its shift mod 4 is where
  // the window lies in the 16-byte-aligned box.
  auto tap_shift = [&](int r, int s) {
    return (FLAT ? (r * (int)a.v[CT_GM_A_DH] - (int)a.v[CT_GM_A_PH]) * W : 0) + s * DW - PW;
  };
  auto origin = [&](int tm, int &img, int &p0, int &q0) {
    if constexpr (TAPS && !FLAT) {
      ct_gm_tap_tile(tm, P, Q, BM / 32 * TAP_BH, BQ, &img, &p0, &q0);
    } else {
      const int mt = (PV + BM - 1) / BM;
      img = tm / mt;
      p0 = (tm - img * mt) * BM;
      q0 = 0;
    }
  };

  if (wgi == 0) {
    // The producer.
    if constexpr (CWG == 2) asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(PRODUCER_REGS));
    if (tid != 0) return;
    tmap_prefetch(&tx);
    tmap_prefetch(&tw);
    const int KP = (int)a.v[CT_GM_A_KP];
    const int SH = (int)a.v[CT_GM_A_SH], PH = (int)a.v[CT_GM_A_PH], DH = (int)a.v[CT_GM_A_DH];
    if constexpr (RESIDENT) {
      // The weights once (one tile of channels, TILES_N = 1): channel
      // block cb's B (hi, lo) at cb PARTS B_BYTES.
      if (blockIdx.x < tiles) {
        mbar_arrive_expect_tx(empty + STAGES, W_BYTES);
        for (int cb = 0; cb < WRES; ++cb) {
          unsigned char *const sw = smem - W_BYTES + cb * PARTS * B_BYTES;
          tma_load_tile4(sw, &tw, empty + STAGES, cb * BK, 0, 0, 0);
          if constexpr (SPLIT) tma_load_tile4(sw + B_BYTES, &tw, empty + STAGES, cb * BK, 0, 0, KP);
        }
      }
    }
    unsigned it = 0;
#pragma unroll 1
    for (int u = blockIdx.x; u < tiles; u += gridDim.x) {
      const int tm = u / tiles_n, n0 = (u - tm * tiles_n) * BN;
      int img, p0, q0;
      origin(tm, img, p0, q0);
      if constexpr (CT_RESIDUAL && !TAPS && !RUNS) {
        // The tile's residual (a run of its pixels per channel) brought to
        // L2, one bulk prefetch a channel, ahead of the consumers' loads at
        // the tile's start (RES_SUMS) by as far as the ring runs ahead of
        // them; where y and the runs are 16-byte aligned, as bulk
        // prefetches need.
        if ((reinterpret_cast<unsigned long long>(y) & 15u) == 0 && (HW & 3) == 0) {
          const int rows = HW - p0 < BM ? HW - p0 : BM;
          for (int k = n0; k < n0 + BN && k < K; ++k)
            bulk_prefetch_l2(y + ((long long)img * K + k) * HW + p0, 4u * rows);
        }
      }
#pragma unroll 1
      for (int kt = 0; kt < nkt; ++kt, ++it) {
        int r = 0, s = 0, cb = kt;
        if constexpr (TAPS) ct_gm_ktile(kt, ncb, S, &r, &s, &cb);
        const unsigned st = it % STAGES, ph = (it / STAGES) & 1u;
        unsigned char *const sa = smem + st * STAGE_BYTES;
        mbar_wait(empty + st, ph ^ 1u);
        mbar_arrive_expect_tx(full + st,
                              RUNS ? ct_gm_runs_tx(BK, HW, RESIDENT ? 0 : PARTS * B_BYTES)
                                   : TX_BYTES);
        // tap: box i is output rows p0 + i TAP_BH .. (map 0 steps SH input
        // rows between them), columns q0 .. q0 + BQ - 1, at tap (r, s); its
        // input rows and columns start where that tap's window does, TMA's
        // zero fill outside x being the padding, the columns from the
        // 16-byte boundary at or before (ct_gm_tap_window).
        // tap, flat: box i is virtual pixels p0 + 32 i .., tap (r, s) the
        // input pixels (r DH - PH) W + s DW - PW further along the plane:
        // rows outside x fall outside the plane (zeros); columns that wrap
        // into the next or previous row the consumers zero.
        // pw's runs: one box, BK / 4 runs of 4 channels x HW pixels.
        int col;
        if constexpr (RUNS)
          tma_load_tile4(sa, &tx, full + st, 0, cb * (BK / 4), img, 0);
#pragma unroll
        for (int i = 0; i < (RUNS ? 0 : BM / 32); ++i) {
          if constexpr (FLAT) {
            ct_gm_tap_window(p0 + 32 * i + tap_shift(r, s), &col);
            tma_load_tile4(sa + i * TAP_BOX, &tx, full + st, col, cb * BK, img, 0);
          } else if constexpr (TAPS) {
            ct_gm_tap_window(q0 + tap_shift(r, s), &col);
            tma_load_tile4(sa + i * TAP_BOX, &tx, full + st, col,
                           (p0 + i * TAP_BH) * SH - PH + r * DH, cb * BK, img);
          } else {
            tma_load_tile4(sa + i * 32 * ROW, &tx, full + st, p0 + 32 * i, cb * BK, img, 0);
          }
        }
        if constexpr (!RESIDENT) {
          tma_load_tile4(sa + B_OFF, &tw, full + st, cb * BK, s, r, n0);
          if constexpr (SPLIT)
            tma_load_tile4(sa + B_OFF + B_BYTES, &tw, full + st, cb * BK, s, r, n0 + KP);
        }
      }
    }
    return;
  }

  // A consumer: rows 64 * c .. 64 * c + 63 of each tile, boxes 2 c, 2 c + 1;
  // pwq (PING): rows 0 .. 63, boxes 0 and 1, of every other tile of the
  // CTA's walk (tile i to consumer i mod 2), their mainloops in turn
  // (turn_wait / turn_pass, named barriers 3 and 4) as ct_gm_ping_* says,
  // so that one's epilogue runs beside the other's mainloop.
  if constexpr (CWG == 2) asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(CONSUMER_REGS));
  const int c = wgi - 1, lt = tid % 128;
  const int warp = lt / 32, g = (lt % 32) / 4, t = lt % 4;
  // The pixels of rows g and g + 8: pw, px and px + 1; tap, 4 apart.
  const int px = TAPS ? ct_gm_tap_pixel(c, warp, g, 0) : ct_gm_pw_pixel(PING ? 0 : c, warp, g);
  const int pxs[2] = {px, TAPS ? ct_gm_tap_pixel(c, warp, g, 1) : px + 1};
  // pw: the epilogue's 16-byte stores where y is 16-byte aligned (its
  // plane's runs whole: HW % 4 = 0); else, and for tap and pw's runs, one
  // float at a time.
  const bool vec_store = !TAPS && !RUNS && (reinterpret_cast<unsigned long long>(y) & 15u) == 0;
  // pwe, pwqe: the tile's outputs staged in stg[k][pixel] (pwqe: each
  // consumer its own), then one bulk copy per output channel of the tile's
  // run of pixels (HW % 4 = 0 and p0 a multiple of BM: 16-byte runs).
  float *const stg = reinterpret_cast<float *>(smem + STAGES * STAGE_BYTES + BAR_BYTES) +
                     (PING ? c * BN * STG_LD : 0);
  const bool bulk = EP && vec_store;
  // Pixel pi of the tile at (p0, q0): 1 when it is in the image, its offset
  // in an output channel plane in off.
  auto pixel = [&](int p0, int q0, int pi, int &off) {
    if constexpr (FLAT) {
      const int v = p0 + pi, p = v / W, q = v - p * W;
      off = p * Q + q;
      return v < PV && q < Q;
    } else if constexpr (TAPS) {
      const int p = p0 + pi / 32 * TAP_BH + pi % 32 / BQ, q = q0 + pi % BQ;
      off = p * Q + q;
      return p < P && q < Q;
    } else {
      off = p0 + pi;
      return off < HW;
    }
  };
  const unsigned sbase = (unsigned)__cvta_generic_to_shared(smem);
  float d[BN / 2], e[BN / 2], master[SPLIT ? BN / 2 : 1]; // pw3's sums: see tile_sums (pw: d alone)
  float rsum[RSUM]; // pw: the tile's residual (RES_SUMS), then its sums added
  // RES_SUMS: the tile's residual into s (rsum; an array of one float is
  // never loaded), as gm_conv's: rows g, g + 8 are pixels pxs[0], pxs[1],
  // for pw neighbours px, px + 1 (px even), one 8-byte load a channel
  // where the plane's runs are 16-byte aligned (vec_store).
  auto residual_sums = [&](auto &s, int img, int p0, int q0, int n0) {
    if constexpr (sizeof(s) == BN / 2 * sizeof(float)) {
      int off[2];
      bool in[2];
#pragma unroll
      for (int h = 0; h < 2; ++h) in[h] = pixel(p0, q0, pxs[h], off[h]);
      const int kl = K - n0 - 2 * t; // channels from n0 + 2t on
      const float *yk = y + ((long long)img * K + n0 + 2 * t) * HW;
#pragma unroll
      for (int j = 0; j < BN / 8; ++j, yk += 8LL * HW)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const float *const ye = yk + (e ? HW : 0); // channel n0 + 8j + 2t + e's plane
          float2 v{};
          if (vec_store) {
            if (in[0] && 8 * j + e < kl) v = __ldcs(reinterpret_cast<const float2 *>(ye + off[0]));
          } else {
            if (in[0] && 8 * j + e < kl) v.x = __ldcs(ye + off[0]);
            if (in[1] && 8 * j + e < kl) v.y = __ldcs(ye + off[1]);
          }
          s[4 * j + e] = v.x;
          s[4 * j + 2 + e] = v.y;
        }
    }
  };
  // Two sets of fragments, hi (and pw3's lo, rn(a - hi)) per k8 step.
  unsigned fa[PARTS][BK / 8][4], fb[PARTS][BK / 8][4];
  unsigned it = 0, prev = 0;
  // Flat: the input columns of this thread's two pixels at tap column 0,
  // set per tile; a tap whose column falls outside [0, W) reads a wrapped
  // neighbour, zeroed.
  int col0 = 0, col1 = 0;
  // One k-tile: the fragments into fr, the wgmma, the stage before released.
  auto ktile = [&](unsigned (&fr)[PARTS][BK / 8][4], int kt) {
    const unsigned st = it % STAGES, ph = (it / STAGES) & 1u;
    bool in0 = true, in1 = true;
    int sigma = 0; // tap: the window's columns into the boxes
    if constexpr (TAPS) {
      int r, s, cb, start;
      ct_gm_ktile(kt, ncb, S, &r, &s, &cb);
      sigma = ct_gm_tap_window(tap_shift(r, s), &start);
      if constexpr (FLAT) {
        in0 = (unsigned)(col0 + s * DW) < (unsigned)W;
        in1 = (unsigned)(col1 + s * DW) < (unsigned)W;
      }
    }
    mbar_wait(full + st, ph);
    const float *const as = reinterpret_cast<const float *>(smem + st * STAGE_BYTES);
#pragma unroll
    for (int j = 0; j < BK / 8; ++j) {
      const int c0 = 8 * j + t, c1 = c0 + 4;
      float v[4]; // rows g, g + 8 at channel c0, then at c1
      if constexpr (TAPS) {
        // Scalar reads: the window's columns start sigma floats in.
        const float *const a0 = as + sigma;
        v[0] = a0[ct_gm_tap_smem(BK, BQ, c0, pxs[0])];
        v[1] = a0[ct_gm_tap_smem(BK, BQ, c0, pxs[1])];
        v[2] = a0[ct_gm_tap_smem(BK, BQ, c1, pxs[0])];
        v[3] = a0[ct_gm_tap_smem(BK, BQ, c1, pxs[1])];
        if (!in0) v[0] = v[2] = 0.0f;
        if (!in1) v[1] = v[3] = 0.0f;
      } else if constexpr (RUNS) {
        // Scalar reads (a channel's run starts at any float); rows past HW
        // read other floats of the stage, their outputs never stored.
        v[0] = as[ct_gm_runs_smem(HW, c0, px)];
        v[1] = as[ct_gm_runs_smem(HW, c0, px + 1)];
        v[2] = as[ct_gm_runs_smem(HW, c1, px)];
        v[3] = as[ct_gm_runs_smem(HW, c1, px + 1)];
      } else {
        const float2 v0 = *reinterpret_cast<const float2 *>(as + ct_gm_pw_smem(BK, c0, px));
        const float2 v1 = *reinterpret_cast<const float2 *>(as + ct_gm_pw_smem(BK, c1, px));
        v[0] = v0.x, v[1] = v0.y, v[2] = v1.x, v[3] = v1.y;
      }
      // pw, pwq, tap: x's map is TFLOAT32, so the stage holds x rounded
      // (to nearest even, as to_tf32) and the fragments are its bits;
      // pw3, tap3: FLOAT32, each value split here into hi and lo.
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        if constexpr (SPLIT)
          split_tf32(v[i], fr[0][j][i], fr[PARTS - 1][j][i]);
        else
          fr[0][j][i] = __float_as_uint(v[i]);
      }
    }
    const unsigned long long db =
        RESIDENT ? wgmma_desc_swizzled(sbase - W_BYTES + kt * PARTS * B_BYTES, ROW)
                 : wgmma_desc_swizzled(sbase + st * STAGE_BYTES + B_OFF, ROW);
    // The fragments written before the fence (the rounding may not sink past it).
#pragma unroll
    for (int q = 0; q < PARTS; ++q)
#pragma unroll
      for (int j = 0; j < BK / 8; ++j)
#pragma unroll
        for (int i = 0; i < 4; ++i) reg_fence(fr[q][j][i]);
    if constexpr (SPLIT) {
      // As gm_conv: a chunk opens every KTC k-tiles, the last one drained
      // into the masters; the cross terms in e over the whole tile.
      const bool opens = kt % KTC == 0;
      if (opens && kt > 0) {
        wgmma_wait<0>();
        flush_chunk(master, d);
      }
      const unsigned long long dbl = db + (B_BYTES >> 4);
      wgmma_fence();
#pragma unroll
      for (int j = 0; j < BK / 8; ++j) {
        CtWgmmaRS<BN>::run(e, fr[PARTS - 1][j], db + 2 * j, (kt | j) != 0);
        CtWgmmaRS<BN>::run(e, fr[0][j], dbl + 2 * j, 1);
        CtWgmmaRS<BN>::run(d, fr[0][j], db + 2 * j, !opens || j != 0);
      }
    } else {
      wgmma_fence();
#pragma unroll
      for (int j = 0; j < BK / 8; ++j) CtWgmmaRS<BN>::run(d, fr[0][j], db + 2 * j, (kt | j) != 0);
    }
    wgmma_commit();
    wgmma_wait<1>();
    // One arrival for the warpgroup: every thread's reads of the stage
    // before went into the wgmma that just retired.
    if (kt > 0 && lt == 0) mbar_arrive(empty + prev);
    prev = st;
    ++it;
  };
  // The weights, resident, are in before the first k-tile (a CTA with no
  // tile has none loaded, and waits for none).
  if (RESIDENT && blockIdx.x < tiles) mbar_wait(empty + STAGES, 0);
#pragma unroll 1
  for (int wi = PING ? c : 0;; wi += PING ? 2 : 1) {
    const int u = blockIdx.x + wi * gridDim.x; // tile wi of the CTA's walk
    if (u >= tiles) break;
    if constexpr (PING) it = ct_gm_ping_ring(wi, nkt);
    const int tm = u / tiles_n, n0 = (u - tm * tiles_n) * BN;
    int img, p0, q0;
    origin(tm, img, p0, q0);
    if constexpr (FLAT) {
      col0 = (p0 + pxs[0]) % W - PW;
      col1 = (p0 + pxs[1]) % W - PW;
    }
    if constexpr (RES_SUMS) {
      residual_sums(rsum, img, p0, q0, n0); // pw, tap (pw3 and tap3 add it as they store)
    } else if constexpr (SPLIT) {
#pragma unroll
      for (int i = 0; i < BN / 2; ++i) master[i] = 0.0f;
    }
    int kt = 0;
    if (PING && ct_gm_ping_waits(wi)) turn_wait(c); // tile wi - 1's mainloop ended
#pragma unroll 1
    for (; kt + 1 < nkt; kt += 2) {
      ktile(fa, kt);
      ktile(fb, kt + 1);
    }
    if (kt < nkt) ktile(fa, kt);
    wgmma_wait<0>();
    if (lt == 0) mbar_arrive(empty + prev);
    if (PING && ct_gm_ping_passes(wi, blockIdx.x, gridDim.x, tiles)) turn_pass(1 - c);
    const float *const acc = add_residual(tile_sums(master, d, e), rsum);

    // Epilogue: acc[4j + 2h + e] = D[row g + 8h][8j + 2t + e], pixel pxs[h].
    if (bulk) {
      // pwe, pwqe (gme's staging, the tile within one image): each thread's
      // copies of the tile before have read stg, the outputs go in, then
      // consumer thread k copies channel k's run of the tile's pixels.
      // pwqe: each consumer stages its own tiles, so its warpgroup alone syncs.
      constexpr int LD = STG_LD;
      auto staging_sync = [&] {
        if constexpr (PING)
          consumer_sync(c);
        else
          consumers_sync();
      };
      bulk_wait_read();
      staging_sync();
      stage_tile(stg, acc, b, n0, K, t, pxs);
      fence_proxy_async();
      staging_sync();
      const int rows = HW - p0 < BM ? HW - p0 : BM;
      for (int kl = (PING ? 0 : c * 128) + lt; kl < BN && n0 + kl < K; kl += PING ? 128 : CWG * 128)
        bulk_store(y + ((long long)img * K + n0 + kl) * HW + p0,
                   (unsigned)__cvta_generic_to_shared(stg + kl * LD), 4u * rows);
      bulk_commit();
    } else if (vec_store) {
      // Lanes g and g ^ 1 (4 apart) hold pixels px .. px + 3 of channels
      // k0, k0 + 1 (ct_gm_pw_pixel: px + 2 is g ^ 1's, px % 4 = 0 for even
      // g); one exchange gives the even lane channel k0's four, the odd
      // lane k0 + 1's, each stored as one 16-byte run, so a warp's store
      // fills whole 32-byte sectors (2-pixel-strided scalar stores fill
      // half of each, and HBM's ECC turns a half-sector write into a
      // read-modify-write).  HW % 4 = 0 and px0 % 4 = 0 keep the runs
      // aligned and within the image.
      // The exchange moves finished values, bias and activation applied: a
      // shuffle of the accumulators themselves makes ptxas serialize every
      // wgmma (its C7514).
      // A tile whose BN channels all exist runs a copy of the loop without
      // the channel tests (as gm_conv's epilogue).
      const int odd = g & 1;
      int off;
      const bool live = pixel(p0, q0, px - 2 * odd, off);
      // Channel n0 + 2t + odd's plane at the run's first pixel.
      float *const yp = y + (long long)img * K * HW + off + (long long)(n0 + 2 * t + odd) * HW;
      // EPI_BATCH steps' bias pairs and residual runs loaded, then their
      // runs exchanged, then stored (ct_res).
      auto store = [&](auto whole) {
        constexpr bool WHOLE = decltype(whole)::value;
#pragma unroll
        for (int j0 = 0; j0 < BN / 8; j0 += EPI_BATCH) {
          float4 res[EPI_BATCH], out[EPI_BATCH]; // the residual runs, the runs to store
          float2 bias[EPI_BATCH];                 // channels k0, k0 + 1
#pragma unroll
          for (int jj = 0; jj < EPI_BATCH; ++jj) {
            const int k0 = n0 + 8 * (j0 + jj) + 2 * t, k = k0 + odd;
            if (EPI_BATCH > 1) { // one step: loaded in the loop below, the residual after the exchange
              bias[jj] = bias_pair(b, k0, WHOLE || k0 < K, WHOLE || k0 + 1 < K);
              res[jj] = live && (WHOLE || k < K)
                            ? ct_res(reinterpret_cast<const float4 *>(yp + 8LL * (j0 + jj) * HW))
                            : float4{};
            }
          }
#pragma unroll
          for (int jj = 0; jj < EPI_BATCH; ++jj) {
            // q: pixels px, px + 1 of channel k0 (q[0], q[2]) and k0 + 1 (q[1], q[3]).
            const int j = j0 + jj, k0 = n0 + 8 * j + 2 * t, k = k0 + odd;
            const float2 bp = EPI_BATCH > 1 ? bias[jj] : bias_pair(b, k0, WHOLE || k0 < K, WHOLE || k0 + 1 < K);
            const float b0 = bp.x, b1 = bp.y;
            float q[4];
#pragma unroll
            for (int i = 0; i < 4; ++i) q[i] = ct_act_early(acc[4 * j + i] + (i % 2 ? b1 : b0));
            const float r0 = __shfl_xor_sync(0xffffffffu, odd ? q[0] : q[1], 4);
            const float r1 = __shfl_xor_sync(0xffffffffu, odd ? q[2] : q[3], 4);
            auto run = [&] { return odd ? make_float4(r0, r1, q[1], q[3]) : make_float4(q[0], q[2], r0, r1); };
            float4 *const yv = reinterpret_cast<float4 *>(yp + 8LL * j * HW);
            if (EPI_BATCH > 1)
              out[jj] = ct_fin4(run(), res[jj]);
            else if (live && (WHOLE || k < K))
              __stcs(yv, ct_fin4(run(), ct_res(yv)));
          }
          // The batch's exchanges done, its stores in a row (a shuffle does
          // not move across a __stcs either).
#pragma unroll
          for (int jj = 0; jj < (EPI_BATCH > 1 ? EPI_BATCH : 0); ++jj) {
            const int j = j0 + jj, k = n0 + 8 * j + 2 * t + odd;
            if (live && (WHOLE || k < K)) __stcs(reinterpret_cast<float4 *>(yp + 8LL * j * HW), out[jj]);
          }
        }
      };
      if (n0 + BN <= K)
        store(ct_flag<true>{});
      else
        store(ct_flag<false>{});
    } else {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        int off;
        if (!pixel(p0, q0, pxs[h], off)) continue;
        float *const yp = y + (long long)img * K * HW + off;
#pragma unroll
        for (int j0 = 0; j0 < BN / 8; j0 += EPI_BATCH) {
          // A batch's loads first (ct_res): channels k0, k0 + 1's residuals and bias.
          float2 r[EPI_BATCH], bias[EPI_BATCH];
#pragma unroll
          for (int jj = 0; jj < EPI_BATCH; ++jj) {
            const int k0 = n0 + 8 * (j0 + jj) + 2 * t;
            const float *const y0 = yp + (long long)k0 * HW;
            r[jj] = make_float2(k0 < K ? ct_res(y0) : 0.0f, k0 + 1 < K ? ct_res(y0 + HW) : 0.0f);
            if (EPI_BATCH > 1) bias[jj] = bias_pair(b, k0, k0 < K, k0 + 1 < K);
          }
#pragma unroll
          for (int jj = 0; jj < EPI_BATCH; ++jj) {
            const int j = j0 + jj, k0 = n0 + 8 * j + 2 * t;
            float *const y0 = yp + (long long)k0 * HW, *const y1 = y0 + HW;
            // One step a batch (pw3): each bias loaded under its store's test.
            if (k0 < K)
              __stcs(y0, ct_fin(acc[4 * j + 2 * h] + (EPI_BATCH > 1 ? bias[jj].x : bias_at(b, k0)), r[jj].x));
            if (k0 + 1 < K)
              __stcs(y1,
                     ct_fin(acc[4 * j + 2 * h + 1] + (EPI_BATCH > 1 ? bias[jj].y : bias_at(b, k0 + 1)), r[jj].y));
          }
        }
      }
    }
  }
  if (bulk) bulk_wait_all(); // pwe: the last tile's copies done before the CTA ends
  (void)x, (void)w, (void)ws, (void)stg;
}
#endif // CT_GM_PW
