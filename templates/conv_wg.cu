// conv_wg.cu — families "wg" and "wg3": the convolution as an implicit GEMM
// on Hopper's warpgroup tensor-core instruction,
// wgmma.mma_async.sync.aligned.m64nNk8.f32.tf32.tf32 (sm_90a only), with A
// (the im2col pixels) gathered into registers and B (the weights) read by
// the tensor cores straight from shared memory through a matrix descriptor.
// generator/family_wg.c holds both descriptors.
//
// Why: conv_tc's mma.sync needs every B fragment loaded with LDS by every
// warp; wgmma reads B once per instruction for 64 pixel rows, so shared
// memory carries A (4 LDS.32 per thread per m64 tile and k8 step) plus B
// (BN*32 bytes per wgmma) instead of A plus B per m16 tile.
//
//   GEMM view   M = output pixels, N = output channels (BN per CTA),
//               Kdim = C*R*S padded to KP = 8*KSTEPS; k = (c*R + r)*S + s.
//   wg  (CT_WG_SPLIT 0, precision tf32): A and B rounded to TF32 with
//               to_tf32 (B once at staging; A once per tile, the band
//               rounded in place after its copy lands, so a gather hands
//               its values on unchanged), one wgmma per k8 step, fp32
//               accumulation.
//   wg3 (CT_WG_SPLIT 1, precision fp32): 3xTF32.  a = ah + al with
//               ah = rn(a), al = rn(a - ah), likewise b (two weight arrays
//               in shared memory); per k8 step acc += al*bh, acc += ah*bl,
//               acc += ah*bh (small terms first).  Tensor cores may truncate
//               their fp32 sums, so as in conv_tc the wgmma accumulators are
//               added into fp32 masters (FADD, round to nearest) every KC
//               k-steps.  Chunk c accumulates into set c&1 (its first wgmma
//               with scale-d 0 restarts the set).  The first k-step of chunk
//               c+1 waits for every wgmma (wait_group 0: one pipeline drain
//               per chunk), adds set c&1 into the masters and issues its own
//               wgmma into the other set, so ptxas overlaps those FADDs with
//               them.  Reading a retired set while the other set's wgmma is
//               in flight would spare the drain, but ptxas 13.0 then
//               serializes every wgmma of the kernel (C7514, "non wgmma
//               instructions reading accumulator registers ...").  ptxas does
//               not check such hazards itself: the waits here are what makes
//               each register access safe.
//
// Work decomposition
//   tile  : TP consecutive output rows (all Q columns) of one image: the
//           TM = TP*Q pixels p0*Q .. p0*Q+TM-1, contiguous in every NCHW
//           output plane; MT = ceil(TM/64) m64 tiles.
//   CTA   : BN output channels (blockIdx.y) x one tile at a time; a
//           persistent grid (CTAS CTAs per SM) loops over the tiles, so the
//           weights are staged once per CTA.
//   warpgroups: WG of them (128 threads each); warpgroup v owns m64 tiles
//           v, v+WG, ... (MW = MT/WG each; WG divides MT).  Warp q (0..3) of a
//           warpgroup holds rows 16q .. 16q+15 of each of its m64 tiles.
//   KS 2 (wg3 with PP): a cluster of two CTAs takes each tile, CTA r of it
//           the k-steps of its half (rank 0 the first ceil(KSTEPS/2)), so
//           that the hi and lo weights of BN = 96 channels fit beside the
//           bands (each CTA holds half the reduction's weights, and its
//           band only the channels its half touches).  The two exchange
//           half their sums through distributed shared memory and each
//           writes half the channels (see exchange).  A third warpgroup,
//           the producer, copies the bands (bulk copies) and stores the
//           outputs, and the two consumer warpgroups take no turns (see
//           the kernel).  H200, fp32 headline: wg3:TP=1,BN=96,...,KC=8,
//           PP=1,KS=2 0.68 ms against 0.92 for the best KS 1 point (BN = 48:
//           each CTA gathers A for half the channels); 0.55 with the
//           producer.
//
// Shared memory (every part 16-byte aligned)
//   wsm   [NWARR][KSTEPS][BN/8][2][8][4] float — the CTA's BN x KP weights
//         (B, K-major), TF32-rounded (wg) or as hi and lo arrays (wg3), in
//         the canonical no-swizzle ("interleave") layout of 8x16-byte core
//         matrices: core matrix (ks, j, h) holds channels 8j..8j+7 (one 16-byte
//         row each) x k = 8ks+4h .. 8ks+4h+3, 128 contiguous bytes at byte
//         (ks*BN/8 + j)*256 + h*128.  So within one k8 step the K-adjacent
//         core matrices are 128 bytes apart and the N-adjacent ones 256.
//         Zero for channels >= K and k >= C*R*S.
//   koff  [KSTEPS+KG (wg) or +2 (wg3)][4 t] int2 — (koff(8ks+t), koff(8ks+t+4)) in bytes with
//         koff(k) = (c*BR*BCP + r*DH*BCP + s*DW)*4, 0 for padded k (weight 0)
//         and for the extra rows from KSTEPS on, which the pipeline's gathers
//         past the last step read (harmless, never used).
//   bsm   [BN] float — the CTA's biases (0 without bias or past K).
//   band  [NBANDS][C][BR][BCP] — input rows ih0 .. ih0+BR-1 (ih0 = p0*SH-PH),
//         columns -PW .. -PW+BC-1 at floats SHIFT .. SHIFT+BC-1 of a row
//         (SHIFT makes column 0 16-byte aligned for 16-byte cp.async), zero
//         outside the image, TF32-rounded for wg, raw fp32 for wg3; rows
//         BCP (a multiple of 4) apart.
//         BR = (TP-1)*SH + (R-1)*DH + 1, BC = (Q-1)*SW + (S-1)*DW + 1.  Pixel m
//         of the tile has pix(m) = (m/Q)*SH*BCP + (m%Q)*SW + SHIFT and the A element
//         (m, k) is band[pix(m) + koff(k)] (pixels past the tile use pix 0).
//   outs  KS 2: [WG][OUTF] float — each consumer warpgroup's output area
//         (the other CTA's sums, then the staged outputs; see OUTF).
//   bars  KS 2: ten mbarriers (see the kernel).
//
// Register fragments (PTX ISA, wgmma "Register Fragments and Shared Memory
// Matrix Layouts" > "Register Fragments" (9.7.15.5.1.1), the .m64nNk8
// figures for A and for the accumulator D; the same mapping as CUTLASS cute
// ALayout_64x8 and CLayout_64xN in mma_traits_sm90_gmma.hpp).  In a warpgroup, warp
// q = warp % 4, g = lane>>2, t = lane&3:
//   A (64x8, .tf32, four .b32):  a0 = A[16q+g][t]    a1 = A[16q+g+8][t]
//                                a2 = A[16q+g][t+4]  a3 = A[16q+g+8][t+4]
//   -- per warp, exactly mma.m16n8k8's A fragment, so the gather is
//   conv_tc's: band[pix(m)+koff(k)] for m = 16q+g (+8), k = 8ks+t (+4).
//   D (64xN, .f32, N/2 regs):    d[4j+2h+e] = D[16q+g+8h][8j+2t+e],
//                                j < N/8, h, e in {0, 1}.
//
// Matrix descriptor of B (PTX ISA, wgmma "Matrix Descriptor Format", anchor
// #asynchronous-warpgroup-level-matrix-shared-memory-layout-matrix-descriptor:
// bits 0-13 start address >> 4, 16-29 leading dimension byte offset >> 4,
// 32-45 stride dimension byte offset >> 4, 49-51 base offset 0, 62-63 swizzle
// mode, 0 = none).  The PTX ISA defines, for wgmma operands, the leading
// dimension byte offset (LBO) as "the distance, in bytes, between two adjacent
// core matrices in the K dimension" and the stride dimension byte offset
// (SBO) as the distance between two adjacent core matrices in the M or N
// dimension (for K-major without swizzling, in the newer wording: LBO "the
// stride from the first column to the second column of the 8x2 tile" of
// 128-bit elements, SBO from the first 8 rows to the next 8); CUTLASS's
// make_gmma_desc<Major::K> (INTERLEAVE: ((8,n),2):((1,SBO),LBO) in 16-byte
// units) agrees.  The other reading (the two offsets swapped) was tried on
// the H200 on 2026-11-29 and fails verification; this one passes.
//   LBO = 128 (K-adjacent core matrices), SBO = 256 (N-adjacent).
//
// Pipeline, per warpgroup and tile.
//   wg: two A register sets of KG k-steps each.  Group g: wgmma.fence; the
//   KG*MW wgmma of steps gKG .. gKG+KG-1 on set g&1; commit_group;
//   wait_group 1 (group g-1 retired, so set (g+1)&1 is free); the gather of
//   group g+1 into it, overlapping the running group.  A gather is a chain
//   of dependent shared loads (offset table, then band), so one k-step per
//   group (KG 1) leaves the tensor cores waiting on it; more steps per group
//   hide it.  The gather of the last group reads offset rows up to
//   KSTEPS+KG-1 (zero: harmless addresses; never multiplied).  With AS
//   (3) register sets the gather of group g+AS-1 follows group g's issue,
//   so each gather has AS-1 groups' time to land (the loop is unrolled:
//   set numbers are compile-time).  The main loop is bound by the shared
//   memory pipeline (each wgmma's 3 KB of B plus the gathers, beside the
//   other warpgroup's copies); the longer lead hides part of the gathers'
//   latency (H200, KG 4: 0.317 -> 0.310 and 0.321 -> 0.318 ms, two runs).
//   wg3: as wg with KG 1, plus the chunked accumulators described above
//   (KC k-steps per chunk); a step's gather is split in two: its band
//   values are loaded two steps ahead, right after a step's wgmma are
//   issued, and rounded into hi and lo one step ahead, so no wgmma waits
//   on a shared-memory load (H200, fp32: 0.714 -> 0.681 ms).
//   After the last group, wait_group 0, then the epilogue: the biases come
//   from shared memory, each pixel's outputs go out from one base pointer at
//   constant channel offsets (wg3 with PP stages them in the band buffer
//   first and stores coalesced runs; see SPITCH; with KS 2 the producer
//   stores them).  The band: STAGES 2
//   copies the next tile's band with cp.async while this tile computes (as
//   conv_tc); STAGES 1 loads it between two barriers (then CTAS 2 overlaps
//   one CTA's load with the other's math); PP (below, in the kernel) gives
//   each warpgroup its own band, copied while the other warpgroup computes.
//   The weights are written by ordinary stores and read by the async proxy
//   (wgmma): every thread issues fence.proxy.async.shared::cta after its
//   stores, before the barrier that publishes them.
//
// The generator prepends the problem (CT_*), the parameters (TP BN WG STAGES
// CTAS PP, and KG AS for wg or KC KS for wg3) and the plan's lines
// (CT_PLAN_*, CT_WG_SPLIT).  Without them
// the file compiles on its own (sm_90a): the headline problem, wg, default
// point.

#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
#error "conv_wg.cu needs the arch-specific target sm_90a (wgmma)"
#endif

// ----------------------------------------------------------------------------
// Problem (defaults: KernelBench level 1 problem 50)

#include "ct_problem.cuh"
#include "ct_act.cuh"
#include "ct_layout.cuh"

// ----------------------------------------------------------------------------
// Tunable parameters (generator/family_wg.c lists the values searched)

#ifndef TP
#define TP 2 // output rows per tile
#endif
#ifndef BN
#define BN 96 // output channels per CTA = the wgmma N: 16, 32, 48, 64 or 96
#endif
#ifndef WG
#define WG 1 // warpgroups per CTA (1 or 2); WG must divide the m64 tile count
#endif
#ifndef STAGES
#define STAGES 2 // input band buffers: 1, or 2 (cp.async double buffering)
#endif
#ifndef CTAS
#define CTAS 1 // CTAs per SM the persistent grid is sized for
#endif
#ifndef KG
#define KG 4 // wg: k8 steps per wgmma group (the gather runs a group ahead)
#endif
#ifndef PP
#define PP 0 // 1: each warpgroup works its own tiles with its own band (ping-pong)
#endif
#ifndef KC
#define KC 2 // wg3: k8 steps per accumulator chunk (the flush period)
#endif
#ifndef AS
#define AS 2 // wg: A register sets; the gathers run AS-1 groups ahead
#endif
#ifndef KS
#define KS 1 // wg3 with PP 1: CTAs of a cluster that share out the k-steps (1 or 2)
#endif

// Set by the plan of family wg3: 1 = 3xTF32 (fp32 accuracy), 0 = TF32.
#ifndef CT_WG_SPLIT
#define CT_WG_SPLIT 0
#endif

// ----------------------------------------------------------------------------
// Derived quantities

#include "ct_ptx.cuh"
#include "ct_wgmma.cuh"

namespace wg {

CT_PROBLEM_CONSTANTS
constexpr bool SPLIT = CT_WG_SPLIT != 0;
// CT_LAYOUT 1: x NHWC, w KRSC, y NPQK.  The band keeps its [channel][row]
// [column] layout, filled one float at a time (a channel's columns are C
// floats apart in x); the weights are staged in the same KCRS order, read
// from KRSC; the epilogue stores a pixel's channels side by side.  KS 2
// (its bulk row copies) and the staged epilogue (a channel's pixels as
// runs) are NCHW only.
constexpr bool NHWC = CT_LAYOUT == 1;
constexpr int KCHUNK = KC;

// KS 2: a producer warpgroup besides the two consumers (see the kernel),
// the registers shared out by setmaxnreg: the CTA holds 384 x 168 (65536/384
// in multiples of 8) = 2*128*232 + 128*40.
constexpr int PRODUCER = KS == 2 ? 128 : 0;
constexpr int THREADS = 128 * WG + PRODUCER;
constexpr int CONSUMER_REGS = 232, PRODUCER_REGS = 40;
constexpr int NACC = BN / 2;            // accumulator floats per thread and m64 tile
constexpr int TM = TP * Q;              // pixels per tile
constexpr int MT = (TM + 63) / 64;      // m64 tiles per tile
constexpr int MW = PP ? MT : MT / WG;   // m64 tiles per warpgroup
constexpr int MSTEP = PP ? 1 : WG;      // a warpgroup's m64 tiles: base + i*MSTEP
constexpr int NBANDS = PP ? WG * STAGES : STAGES; // band buffers
constexpr int CRS = C * R * S;
// k8 steps of this CTA: all, or with KS 2 (a cluster of two CTAs on the same
// tiles) the first or the second half, by the CTA's rank in the cluster.
constexpr int KSTEPS = ((CRS + 7) / 8 + KS - 1) / KS;
constexpr int KP = KSTEPS * 8;          // padded reduction length of this CTA
constexpr int KU = 2 * KCHUNK;          // wg3: k-steps per unrolled loop body
constexpr int KMAIN = KSTEPS / KU * KU; // k-steps in whole loop bodies
constexpr int NSETS = SPLIT ? 2 : 1;    // accumulator sets
constexpr int NWARR = SPLIT ? 2 : 1;    // weight arrays (hi, lo)
constexpr int BR = (TP - 1) * SH + (R - 1) * DH + 1; // band rows
constexpr int BC = (Q - 1) * SW + (S - 1) * DW + 1;  // band columns
// A band row holds input column iw at float SHIFT + PW + iw: iw = 0 falls on
// a multiple of 4, so runs of 4 columns copy as one 16-byte cp.async.  Rows
// are BCP floats apart (a multiple of 4).
constexpr int SHIFT = (4 - PW % 4) % 4;
constexpr int BCP = (SHIFT + BC + 3) / 4 * 4;
// Channels of a band: all C, or with KS 2 those the CTA's half of the
// k-steps touches (channels CLO(rank) .. CLO(rank)+CB-1, those past C
// zero).
__host__ __device__ constexpr int k_chan(int k) { return k / (R * S) < C ? k / (R * S) : C - 1; }
__host__ __device__ constexpr int rank_chans(int r) {
  return (r + 1) * KP < CRS ? k_chan((r + 1) * KP - 1) - k_chan(r * KP) + 1
                            : (r * KP < CRS ? C - k_chan(r * KP) : 1);
}
constexpr int CB = KS == 1 ? C : rank_chans(0) > rank_chans(1) ? rank_chans(0) : rank_chans(1);
constexpr int BAND = CB * BR * BCP;
constexpr int BAND_PAD = (BAND + 3) / 4 * 4;
constexpr int W_FLOATS = BN * KP;       // one weight array
// wg3 with PP: the epilogue goes through the warpgroup's band buffer (free
// between its main loop and its next band copy) as [channel][pixel] rows
// SPITCH floats apart (SPITCH = 4 mod 32: the fragment stores hit 32 banks),
// SCH channels per pass; then every channel's pixels leave as coalesced runs
// instead of 32-byte pieces.  The next band's copy then waits for the
// stores: with wg3's long main loop that costs nothing (H200: 0.950 ->
// 0.909 ms); wg's short one cannot hide it (0.318 -> 0.385 ms), so wg
// stores its fragments directly while the copy runs.  Without room for 8
// channels, wg3 stores directly too.
// KS 2: a CTA writes NBO = BN/2 of the channels, after adding the other
// CTA's sums for them, which arrive in the warpgroup's output area (OUTF
// floats of its own): RECV floats, [MW][NACC/8][128 threads] float4, half a
// fragment per thread and m64 tile.  The sums then leave through the same
// area as [channel][pixel] rows SPITCH apart (all NBO channels).
constexpr int NBO = BN / KS;
constexpr int RECV = KS == 2 ? MW * 128 * (NACC / 2) : 0;
constexpr unsigned XBYTES = RECV * 4; // bytes one exchange brings
constexpr int SPITCH = MT * 64 + 4;
constexpr int OUTF = KS == 2 ? ((RECV > NBO * SPITCH ? RECV : NBO * SPITCH) + 3) / 4 * 4 : 0;
constexpr int SCH_FIT = BAND_PAD / SPITCH / 8 * 8;
constexpr int SCH = SCH_FIT < NBO ? SCH_FIT : NBO;
constexpr bool STAGED = SPLIT && PP && KS == 1 && SCH >= 8 && !NHWC;
// KS 2: the producer copies each band row that lies in the image with one
// bulk copy of input columns 0 .. BCOLS-1 (those the band holds, rounded up
// to 16 bytes), when image rows are 16-byte aligned (BULK, and x itself at
// run time); else with cp.async (band_fill).
constexpr int BCOLS_IN = W < BC - PW ? W : BC - PW;
constexpr int BCOLS = (BCOLS_IN + 3) / 4 * 4;
constexpr bool BULK = W % 4 == 0 && BCOLS_IN > 0 && !NHWC;
// KS 2: ten mbarriers, two per warpgroup of each kind (see the kernel).
constexpr int NMBAR = KS == 2 ? 10 : 0;
constexpr int KOFF_INTS = (KSTEPS + (SPLIT ? 2 : KG)) * 8; // + the rows gathered past the end
// KS 2: then the warpgroups' output areas and the mbarriers.
constexpr int SMEM_BYTES =
    (NWARR * W_FLOATS + KOFF_INTS + BN + NBANDS * BAND_PAD + WG * OUTF) * 4 + NMBAR * 8;
constexpr unsigned SLAB_BYTES = BN * 32; // one k8 step of one weight array
constexpr unsigned LBO = 128; // see "Matrix descriptor"
constexpr unsigned SBO = 256;
constexpr int TILES_PER_IMG = (P + TP - 1) / TP;
constexpr int NTILES = N * TILES_PER_IMG;
constexpr int KBLOCKS = (K + BN - 1) / BN;
constexpr int PQ = P * Q;
// The accumulator set of the last chunk (SPLIT), flushed after the loop.
constexpr int CS_LAST = SPLIT ? ((KSTEPS - 1) / KCHUNK) & 1 : 0;

CT_PROBLEM_CHECKS
static_assert(BN == 16 || BN == 32 || BN == 48 || BN == 64 || BN == 96,
              "BN: 16, 32, 48, 64 or 96");
static_assert((WG == 1 || WG == 2) && (PP || MT % WG == 0), "WG: 1 or 2, dividing the m64 tiles");
static_assert(PP == 0 || (PP == 1 && WG == 2 && STAGES == 1),
              "PP: 0, or 1 with two warpgroups and one band each");
static_assert(TP >= 1 && (STAGES == 1 || STAGES == 2) && CTAS >= 1,
              "TP >= 1, STAGES 1 or 2, CTAS >= 1");
static_assert(KG >= 1 && KG <= 8, "KG: 1 .. 8");
static_assert(KCHUNK >= 1 && KCHUNK <= 8, "KC: 1 .. 8");
static_assert(AS == 2 || (AS >= 3 && AS <= 5 && !SPLIT), "AS: 2, or 3 .. 5 for wg");
static_assert(KS == 1 || (KS == 2 && SPLIT && PP == 1 && BN % 16 == 0 && !NHWC),
              "KS: 1, or 2 for wg3 with PP 1, BN a multiple of 16 and NCHW tensors");
static_assert(KS == 1 || (CTAS == 1 && 2 * 128 * CONSUMER_REGS + 128 * PRODUCER_REGS <=
                                           THREADS * ((65536 / THREADS) & ~7)),
              "KS 2: one CTA per SM, setmaxnreg within the CTA's registers");
static_assert(SMEM_BYTES <= 232448, "shared memory above any device's 227 KB");
// Descriptor fields: 14 bits of (byte offset >> 4), so every weight byte
// below 256 KB (it is: SMEM_BYTES is checked above).
static_assert(NWARR * W_FLOATS * 4 < (1 << 18), "weights beyond the descriptor's reach");
static_assert(KBLOCKS <= 65535, "grid.y above 65535");
// Sizes formed in int below (the family declines larger points first).
static_assert((long long)C * BR * BCP <= (1LL << 24) && (long long)BN * KP <= (1LL << 24) &&
              (long long)MT * 64 <= (1LL << 24) &&
              (long long)N * TILES_PER_IMG <= (1LL << 30),
              "tile sizes out of range"); // tile + gridDim.x stays below 2^31
// Accumulators (and with SPLIT their second set and masters) stay in registers.
static_assert(MW * NACC * (SPLIT ? 3 : 1) <= (SPLIT ? 160 : 128), "too many accumulators");

// The plan's launch (ct_problem.cuh's CT_PLAN_CHECKS_TILED, with KS CTAs
// per tile: grid.x a multiple of KS, at most KS * NTILES).
static_assert(CT_PLAN_HAS_BLOCK_X(THREADS), "plan: block size differs");
static_assert(CT_PLAN_HAS_GRID_Y(KBLOCKS), "plan: grid.y != ceil(K/BN)");
static_assert(CT_PLAN_GRID_X_IN(KS, KS * NTILES), "plan: grid.x must be KS..KS*NTILES");
static_assert(CT_PLAN_HAS_SMEM(SMEM_BYTES), "plan: shared memory size differs");
#ifdef CT_PLAN_GRID_X
static_assert(CT_PLAN_GRID_X % KS == 0, "plan: grid.x a multiple of the cluster size");
#endif

// ----------------------------------------------------------------------------
// PTX helpers (and those of ct_ptx.cuh)

// 16-byte global -> shared copy (both 16-byte aligned); zero-fills dst when
// !valid (src not read).
__device__ __forceinline__ void cp_async16(float *dst, const float *src, bool valid) {
  const unsigned saddr = (unsigned)__cvta_generic_to_shared(dst);
  const unsigned bytes = valid ? 16u : 0u;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(saddr),
               "l"(src), "r"(bytes)
               : "memory");
}

// The descriptor of the weights' k-step 0 at shared address saddr (see
// "Matrix descriptor"); step ks is desc + ks * (SLAB_BYTES >> 4).
__device__ __forceinline__ unsigned long long make_desc(unsigned saddr) {
  return wgmma_desc(saddr, LBO, SBO);
}

typedef unsigned long long u64;

// ----------------------------------------------------------------------------
// Staging

// The band of tile (img, p0) into band[CB][BR][BCP] (channels c0 ..
// c0+CB-1, those past C zero): warps take rows, lanes columns (coalesced;
// NHWC: a channel's columns C floats apart, its neighbours' rows reading
// the same lines).
// ASYNC: cp.async, raw fp32 (wg rounds it afterwards with band_round);
// else loaded and stored, TF32-rounded for wg.  Offsets are 32-bit element
// indices from x (every tensor is below 2^31 elements); an element outside
// the image reads x[0] with 0 bytes copied.
template <bool ASYNC, int NWARPS = THREADS / 32>
__device__ __forceinline__ void band_fill(float *band, const float *__restrict__ x,
                                          int img, int p0, int warp, int lane, int c0 = 0) {
  constexpr int RUNS = BCP / 4;                 // 4-float runs per band row
  constexpr int RPL = (RUNS + 31) / 32;         // runs per lane
  const int ih0 = p0 * SH - PH;
  // 16-byte copies when every image row starts 16-byte aligned: then a run
  // lies wholly inside or wholly outside its row.
  if (ASYNC && !NHWC && W % 4 == 0 && ((unsigned long long)x & 15) == 0) {
    // This lane's runs j = lane + 32u: input column iw0 = 4j - SHIFT - PW.
    int col[RPL];
    bool col_in[RPL];
#pragma unroll
    for (int u = 0; u < RPL; ++u) {
      const int j = lane + 32 * u;
      col[u] = 4 * j - SHIFT - PW;
      col_in[u] = j < RUNS && col[u] >= 0 && col[u] < W;
    }
    int c = c0 + warp / BR, r = warp % BR; // row = (c-c0)*BR + r, stepped by NWARPS
#pragma unroll 1
    for (int row = warp; row < CB * BR; row += NWARPS) {
      const int ih = ih0 + r;
      const bool row_in = (unsigned)ih < (unsigned)H && c < C;
      const int xrow = (img * C + c) * (H * W) + ih * W;
      float *drow = band + row * BCP;
#pragma unroll
      for (int u = 0; u < RPL; ++u) {
        const int j = lane + 32 * u;
        if (RUNS % 32 == 0 || j < RUNS) {
          const bool in = row_in && col_in[u];
          cp_async16(drow + 4 * j, x + (in ? xrow + col[u] : 0), in);
        }
      }
      r += NWARPS;
      while (r >= BR) { r -= BR; ++c; }
    }
    return;
  }
#pragma unroll 1
  for (int row = warp; row < CB * BR; row += NWARPS) {
    const int cb = row / BR, c = c0 + cb;
    const int ih = ih0 + (row - cb * BR);
    const bool row_in = (unsigned)ih < (unsigned)H && c < C;
    // Column iw of the row at x[xrow + iw * XCOL].
    constexpr int XCOL = NHWC ? C : 1;
    const int ihc = row_in ? ih : 0;
    const int xrow = NHWC ? (img * H + ihc) * (W * C) + c : (img * C + c) * (H * W) + ihc * W;
    float *drow = band + row * BCP;
#pragma unroll 4
    for (int e = lane; e < BCP; e += 32) {
      const int iw = e - SHIFT - PW;
      const bool in = row_in && (unsigned)iw < (unsigned)W;
      const int xi = in ? xrow + iw * XCOL : 0;
      if constexpr (ASYNC)
        cp_async4(drow + e, x + xi, in);
      else
        drow[e] = in ? (SPLIT ? __ldg(x + xi) : round_tf32(__ldg(x + xi))) : 0.0f;
    }
  }
}

// wg: rounds a band that cp.async filled to TF32 in place (the gathers then
// hand the values to the tensor cores as they are); float4 e = i0, i0+NTHR, ...
template <int NTHR> __device__ __forceinline__ void band_round(float *band, int i0) {
  float4 *const b4 = reinterpret_cast<float4 *>(band);
#pragma unroll 4
  for (int e = i0; e < BAND_PAD / 4; e += NTHR) {
    float4 v = b4[e];
    v.x = round_tf32(v.x);
    v.y = round_tf32(v.y);
    v.z = round_tf32(v.z);
    v.w = round_tf32(v.w);
    b4[e] = v;
  }
}

// ----------------------------------------------------------------------------
// The main loop of one warpgroup over one tile

__device__ __forceinline__ float lds_at(const char *bandb, int byte_off) {
  return *reinterpret_cast<const float *>(bandb + byte_off);
}

// A fragments of one k8 step: hi (TF32 of a) and, with SPLIT, lo.
struct Frag {
  unsigned hi[MW][4];
  unsigned lo[MW][4];
};

struct Mainloop {
  static constexpr int NF = SPLIT ? 1 : KG; // k-steps per A register set
  float acc[NSETS][MW][NACC];            // wgmma accumulators
  float master[MW][NACC];                // SPLIT: the fp32 sums (else unused)
  Frag fr[AS][NF];                       // AS A register sets
  int pb[MW][2];                         // band byte offsets of rows g, g+8
  const char *bandb;                     // this tile's band
  const int2 *kq;                        // koff row 0, this lane's t
  u64 desc0;                             // weights (hi) at k-step 0

  // The A fragments of one m64 tile from its 4 band values a0 .. a3 into
  // fr[SET][J]: hi, and with SPLIT lo.
  template <int SET, int J> __device__ __forceinline__ void put(int i, const float (&v)[4]) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      if constexpr (SPLIT) {
        split_tf32(v[e], fr[SET][J].hi[i][e], fr[SET][J].lo[i][e]);
      } else {
        fr[SET][J].hi[i][e] = __float_as_uint(v[e]); // the band holds TF32 values
      }
    }
  }

  // The A fragments of step ks into fr[SET][J]: rows g, g+8 of each m64
  // tile (of this warp's 16 rows), k = 8ks+t, 8ks+t+4.
  template <int SET, int J = 0> __device__ __forceinline__ void gather(int ks) {
    const int2 kb = kq[ks * 4];
#pragma unroll
    for (int i = 0; i < MW; ++i) {
      float v[4];
      v[0] = lds_at(bandb, pb[i][0] + kb.x); // a0 = A[g][t]
      v[1] = lds_at(bandb, pb[i][1] + kb.x); // a1 = A[g+8][t]
      v[2] = lds_at(bandb, pb[i][0] + kb.y); // a2 = A[g][t+4]
      v[3] = lds_at(bandb, pb[i][1] + kb.y); // a3 = A[g+8][t+4]
      put<SET, J>(i, v);
    }
  }

  // master += acc[CS] (SPLIT only; every wgmma writing acc[CS] retired).
  template <int CS> __device__ __forceinline__ void flush() {
#pragma unroll
    for (int i = 0; i < MW; ++i)
#pragma unroll
      for (int e = 0; e < NACC; ++e) {
        reg_fence(acc[CS][i][e]);
        master[i][e] += acc[CS][i][e];
      }
  }

  // ---- wg3 (SPLIT): one k-step per group, chunked accumulators ----------

  // One k8 step on A set SET into accumulator set CS; FIRST: the step opens
  // a chunk.
  template <int SET, int CS, bool FIRST> __device__ __forceinline__ void step(int ks) {
    if constexpr (FIRST) {
      // Retire the previous chunk (set CS^1, written up to step ks-1) and add
      // it into the masters, before the wgmma.fence: the placement ptxas
      // accepts without serializing (see the head of the file).
      wgmma_wait<0>();
      flush<CS ^ 1>();
    }
#pragma unroll
    for (int i = 0; i < MW; ++i)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        reg_fence(fr[SET][0].hi[i][e]);
        reg_fence(fr[SET][0].lo[i][e]);
      }
    wgmma_fence();
    const u64 dh = desc0 + (u64)(ks * (int)(SLAB_BYTES >> 4));
    const u64 dl = dh + (u64)(W_FLOATS * 4 >> 4);
#pragma unroll
    for (int i = 0; i < MW; ++i) CtWgmmaRS<BN>::run(acc[CS][i], fr[SET][0].lo[i], dh, FIRST ? 0 : 1);
#pragma unroll
    for (int i = 0; i < MW; ++i) CtWgmmaRS<BN>::run(acc[CS][i], fr[SET][0].hi[i], dl, 1);
#pragma unroll
    for (int i = 0; i < MW; ++i) CtWgmmaRS<BN>::run(acc[CS][i], fr[SET][0].hi[i], dh, 1);
    wgmma_commit();
    load<SET>(ks + 2); // raw values two steps ahead (raw[SET] held step ks's)
    wgmma_wait<1>();   // step ks-1 retired: A set SET^1 free
    convert<SET ^ 1>(); // step ks+1's, loaded a step ago
  }

  // wg3: the gathers run in two halves, so that a step's wgmma wait on no
  // shared-memory load: step ks+2's raw band values are loaded after step
  // ks's wgmma are issued, and split into A set (ks+2)&1 one step later.
  // raw[R]: the values of the steps of parity R.
  float raw[2][MW][4];
  template <int R> __device__ __forceinline__ void load(int ks) {
    const int2 kb = kq[ks * 4];
#pragma unroll
    for (int i = 0; i < MW; ++i) {
      raw[R][i][0] = lds_at(bandb, pb[i][0] + kb.x); // a0 = A[g][t]
      raw[R][i][1] = lds_at(bandb, pb[i][1] + kb.x); // a1 = A[g+8][t]
      raw[R][i][2] = lds_at(bandb, pb[i][0] + kb.y); // a2 = A[g][t+4]
      raw[R][i][3] = lds_at(bandb, pb[i][1] + kb.y); // a3 = A[g+8][t+4]
    }
  }
  template <int R> __device__ __forceinline__ void convert() {
#pragma unroll
    for (int i = 0; i < MW; ++i) put<R, 0>(i, raw[R][i]);
  }

  // Steps ks0+KK .. ks0+KN-1, unrolled.  ks0 is a multiple of KU, so the A set
  // (step parity), the chunk's accumulator set and FIRST are compile-time.
  template <int KK, int KN> __device__ __forceinline__ void steps(int ks0) {
    if constexpr (KK < KN) {
      step<(KK & 1), (KK / KCHUNK) & 1, (KK % KCHUNK == 0)>(ks0 + KK);
      steps<KK + 1, KN>(ks0);
    }
  }

  // ---- wg: KG k-steps per group -----------------------------------------

  // Gathers steps ks .. ks+KG-1 into set SET (from J on).
  template <int SET, int J = 0> __device__ __forceinline__ void gather_group(int ks) {
    if constexpr (J < NF) {
      gather<SET, J>(ks + J);
      gather_group<SET, J + 1>(ks);
    }
  }

  // Issues steps ks .. ks+NK-1 from set SET as one wgmma group.
  template <int SET, int NK> __device__ __forceinline__ void issue_group(int ks) {
#pragma unroll
    for (int j = 0; j < NK; ++j)
#pragma unroll
      for (int i = 0; i < MW; ++i)
#pragma unroll
        for (int e = 0; e < 4; ++e) reg_fence(fr[SET][j].hi[i][e]);
    wgmma_fence();
#pragma unroll
    for (int j = 0; j < NK; ++j) {
      const u64 dh = desc0 + (u64)((ks + j) * (int)(SLAB_BYTES >> 4));
#pragma unroll
      for (int i = 0; i < MW; ++i) CtWgmmaRS<BN>::run(acc[0][i], fr[SET][j].hi[i], dh, ks + j != 0);
    }
    wgmma_commit();
  }

  // AS >= 3: from group G on (set G % AS); groups G .. G+AS-2 are
  // gathered.  Issues G, waits for G-1 (whose set G+AS-1 reuses) and
  // gathers G+AS-1, so a gather has AS-1 groups' time to land.  Unrolled:
  // the sets are compile-time.
  static constexpr int NGRP = (KSTEPS + KG - 1) / KG;
  template <int G> __device__ __forceinline__ void run_deep() {
    constexpr int NK = KSTEPS - G * KG < KG ? KSTEPS - G * KG : KG;
    issue_group<G % AS, NK>(G * KG);
    if constexpr (G + AS - 1 < NGRP) {
      wgmma_wait<1>();
      gather_group<(G + AS - 1) % AS>((G + AS - 1) * KG);
    }
    if constexpr (G + 1 < NGRP) run_deep<G + 1>();
  }
  // The groups gathered before the loop: 1 .. AS-2 (0 is start()'s).
  template <int G> __device__ __forceinline__ void gather_ahead() {
    if constexpr (G < AS - 1 && G < NGRP) {
      gather_group<G>(G * KG);
      gather_ahead<G + 1>();
    }
  }

  // Before run(): the first gather (and with SPLIT the zeroed sums), which
  // needs only this tile's band, so a warpgroup does it before its turn.
  __device__ __forceinline__ void start() {
    if constexpr (SPLIT) {
      // acc[1] is flushed at step 0 (as the "previous chunk"): make that 0.
#pragma unroll
      for (int i = 0; i < MW; ++i)
#pragma unroll
        for (int e = 0; e < NACC; ++e) master[i][e] = acc[NSETS - 1][i][e] = 0.0f;
      load<0>(0);
      convert<0>();
      load<1>(1);
    } else {
      gather_group<0>(0);
      gather_ahead<1>();
    }
  }

  // The whole reduction of one tile, after start().  issued() runs once the
  // last wgmma is issued, before they retire (PP hands the tensor cores to
  // the other warpgroup there, so its wgmma queue behind these without a
  // drain).  Result: master (SPLIT) or acc[0].
  template <class Issued> __device__ __forceinline__ void run(Issued &&issued) {
    if constexpr (SPLIT) {
#pragma unroll 1
      for (int ks0 = 0; ks0 < KMAIN; ks0 += KU) steps<0, KU>(ks0);
      steps<0, KSTEPS - KMAIN>(KMAIN);
    } else if constexpr (AS >= 3) {
      run_deep<0>();
    } else {
      // Pairs of groups (set 0, then set 1); then the tail of T steps.
      constexpr int PAIR = 2 * KG;
      constexpr int T = KSTEPS % PAIR;
      int ks = 0;
#pragma unroll 1
      for (; ks + PAIR <= KSTEPS; ks += PAIR) {
        issue_group<0, KG>(ks);
        wgmma_wait<1>(); // the previous group retired: set 1 is free
        gather_group<1>(ks + KG);
        issue_group<1, KG>(ks + KG);
        wgmma_wait<1>();
        gather_group<0>(ks + PAIR);
      }
      if constexpr (T > KG) {
        issue_group<0, KG>(ks);
        wgmma_wait<1>();
        gather_group<1>(ks + KG);
        issue_group<1, T - KG>(ks + KG);
      } else if constexpr (T > 0) {
        issue_group<0, T>(ks);
      }
    }
    issued();
    wgmma_wait<0>();
#pragma unroll
    for (int s = 0; s < NSETS; ++s)
#pragma unroll
      for (int i = 0; i < MW; ++i)
#pragma unroll
        for (int e = 0; e < NACC; ++e) reg_fence(acc[s][i][e]);
    if constexpr (SPLIT) flush<CS_LAST>();
  }
};

// Writes a warpgroup's results (+ bias, bsm = the CTA's BN biases in shared
// memory) for tile (img, p0): its m64 tiles mbase + i*MSTEP; pixel m valid
// when m < mlim, channel when < K.  Lane (g, t) holds channels n0+8j+2t(+1)
// of pixels m: one base pointer per pixel, the channels at constant offsets.
__device__ __forceinline__ void epilogue(const float (&res)[MW][NACC], const float *bsm,
                                         float *__restrict__ y, int img, int p0,
                                         int n0, int mbase, int wq, int g, int t) {
  constexpr bool FULL_K = K % BN == 0; // every CTA's channels are all < K
  const int mlim = TM < (P - p0) * Q ? TM : (P - p0) * Q;
  float2 bias[BN / 8];
  load_bias_pairs<BN>(bias, bsm, t);
  // channel n0+2t, pixel 0 of the tile (64-bit: channels past K go beyond
  // y); NCHW: pixels 1 and channels PQ floats apart, NHWC: K and 1.
  constexpr int PX = NHWC ? K : 1, CH = NHWC ? 1 : PQ;
  float *__restrict__ yt = NHWC ? y + ((long long)img * PQ + p0 * Q) * K + n0 + 2 * t
                                : y + ((long long)img * K + n0 + 2 * t) * PQ + p0 * Q;
#pragma unroll
  for (int i = 0; i < MW; ++i) {
#pragma unroll
    for (int hh = 0; hh < 2; ++hh) {
      const int m = (mbase + i * MSTEP) * 64 + 16 * wq + g + 8 * hh;
      if (m < mlim) store_pixel<BN, FULL_K>(yt + (long long)m * PX, res[i], hh, bias, n0, t, K, CH);
    }
  }
}

// The fragments of channels c0 .. c0+nc-1 (c0, nc multiples of 8) of an
// m64nNB tile per m64 tile i into st[channel - c0][pixel], rows SPITCH
// apart (SPITCH = 4 mod 32: the fragment stores hit 32 banks).
template <int NB>
__device__ __forceinline__ void stage_frags(const float (&res)[MW][NB / 2], float *st, int c0,
                                            int nc, int wq, int g, int t) {
#pragma unroll
  for (int j = 0; j < NB / 8; ++j) {
    if (8 * j < c0 || 8 * j >= c0 + nc) continue;
#pragma unroll
    for (int i = 0; i < MW; ++i)
#pragma unroll
      for (int hh = 0; hh < 2; ++hh)
#pragma unroll
        for (int e = 0; e < 2; ++e)
          st[(8 * j + 2 * t + e - c0) * SPITCH + i * 64 + 16 * wq + g + 8 * hh] =
              res[i][4 * j + 2 * hh + e];
  }
}

// The epilogue of a ping-pong warpgroup (STAGED), through its band buffer
// st: per pass, the fragments of SCH channels into st[channel][pixel]; then
// warp wq takes channels wq, wq+4, ... and its lanes store consecutive
// pixels of one channel (the tile's TM pixels are contiguous in each NCHW
// plane).  Ends with st free again (warpgroup barrier).
__device__ __forceinline__ void epilogue_staged(const float (&res)[MW][NACC],
                                                const float *bsm, float *st,
                                                float *__restrict__ y, int img, int p0,
                                                int n0, int wgi, int wq, int lane, int g,
                                                int t) {
  constexpr bool FULL_K = K % BN == 0;
  const int mlim = TM < (P - p0) * Q ? TM : (P - p0) * Q;
  float *__restrict__ yt = y + ((long long)img * K + n0) * PQ + p0 * Q;
#pragma unroll
  for (int cb = 0; cb < BN; cb += SCH) {
    stage_frags<BN>(res, st, cb, SCH, wq, g, t);
    wg_sync(wgi);
    const int nch = BN - cb < SCH ? BN - cb : SCH;
#pragma unroll 2
    for (int c = wq; c < nch; c += 4) {
      const int kc = cb + c; // channel n0 + kc
      if (FULL_K || n0 + kc < K) {
        // The channel's MT * 2 values read first, then stored: a read after
        // a __stcs (whose asm clobbers memory) waits out its latency.
        // SPITCH >= MT * 64: the reads stay in the channel's row.
        const float bias = bsm[kc];
        const float *sc = st + c * SPITCH;
        float *__restrict__ yc = yt + kc * PQ;
        float v[MT * 2];
#pragma unroll
        for (int u = 0; u < MT * 2; ++u) v[u] = ct_act(sc[lane + 32 * u] + bias);
#pragma unroll
        for (int u = 0; u < MT * 2; ++u)
          if (lane + 32 * u < mlim) __stcs(yc + lane + 32 * u, v[u]);
      }
    }
    wg_sync(wgi);
  }
}

// KS 2: the two CTAs of a cluster computed the same tile over the two
// halves of the k-steps.  Each keeps the sums of half the channels (rank
// 0 the first NBO, rank 1 the rest: fragment elements [0, NACC/2) or
// [NACC/2, NACC), as j < BN/16 or not), sends the other half to the same
// thread of the other CTA's same warpgroup, and adds what it receives:
// m[i][e] + the other's, one fp32 addition per output, the same result in
// either order.  They arrive in the warpgroup's output area (recvf):
//   xfree (in the sender): the other CTA's output area is free (its
//         producer has stored what it held: relaxed arrivals, one per
//         warp, after the warp's loads of it have returned); the sender
//         waits, then stores (st.async);
//   xfull (in the receiver): one arrival, by the receiver's thread 0,
//         which also expects XBYTES (armed by the kernel for the next
//         exchange); the sender's asynchronous stores count their bytes on
//         it.  The receiver waits, reads and adds.  (The waits acquire at
//         CTA scope: the bytes of a completed transaction are visible to
//         the threads that observe the phase.)
// (Release fences here would wait for the warpgroup's stores in flight.)
// ph: the parity of the warpgroup's exchanges so far.  Returns the kept
// half in kept.
__device__ __forceinline__ void exchange(const float (&m)[MW][NACC], float (&kept)[MW][NBO / 2],
                                         float *recvf, unsigned long long *xfree,
                                         unsigned long long *xfull, unsigned rank, int ltid,
                                         unsigned ph) {
  constexpr int HF = NACC / 2;
  const unsigned peer = rank ^ 1;
  float4 *const recv = reinterpret_cast<float4 *>(recvf);
  mbar_wait(xfree, ph);
  const unsigned rdst = cluster_addr((unsigned)__cvta_generic_to_shared(recv), peer);
  const unsigned rbar = cluster_addr((unsigned)__cvta_generic_to_shared(xfull), peer);
#pragma unroll
  for (int i = 0; i < MW; ++i)
#pragma unroll
    for (int q = 0; q < HF / 4; ++q) {
      float4 v;
      v.x = rank == 0 ? m[i][HF + 4 * q] : m[i][4 * q];
      v.y = rank == 0 ? m[i][HF + 4 * q + 1] : m[i][4 * q + 1];
      v.z = rank == 0 ? m[i][HF + 4 * q + 2] : m[i][4 * q + 2];
      v.w = rank == 0 ? m[i][HF + 4 * q + 3] : m[i][4 * q + 3];
      st_async4(rdst + (unsigned)(((i * (HF / 4) + q) * 128 + ltid) * 16), v, rbar);
    }
  mbar_wait(xfull, ph);
#pragma unroll
  for (int i = 0; i < MW; ++i)
#pragma unroll
    for (int q = 0; q < HF / 4; ++q) {
      const float4 v = recv[(i * (HF / 4) + q) * 128 + ltid];
      const float r[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
      for (int e = 0; e < 4; ++e)
        kept[i][4 * q + e] = (rank == 0 ? m[i][4 * q + e] : m[i][HF + 4 * q + e]) + r[e];
    }
}

// KS 2, the producer warpgroup (warp pw): the band of tile
// `tile` (this CTA's channels from clo) into band, completing the current
// phase of `full` (128 arrivals and the bulk copies' bytes).  Bulk: a
// thread per band row, one copy per row in the image, its bytes expected
// by the thread's arrival before it issues the copy; rows outside the
// image (or past C) are zeroed with ordinary stores, fenced for the bulk
// copies that may later write them.  Columns outside the image are never
// written: the band is zeroed once before the first tile.  Bulk also
// prefetches the rows of tile pf into the L2 (pf >= NTILES: none), so that
// their copy, a tile later, waits less (H200, fp32 headline: 0.557 ->
// 0.542 ms).  Else cp.async (band_fill), each thread's arrival counted when
// its copies land.
__device__ __forceinline__ void produce_band(float *band, const float *__restrict__ x, int tile,
                                             int clo, bool bulk, unsigned long long *full,
                                             int pw, int lane, int pf) {
  const int img = tile / TILES_PER_IMG;
  const int p0 = (tile - img * TILES_PER_IMG) * TP;
  if (BULK && bulk) {
    const int ih0 = p0 * SH - PH;
    const int nc = C - clo < CB ? C - clo : CB;  // channels below C
    const int rlo = ih0 < 0 ? -ih0 : 0;          // rows in the image:
    const int rhi = H - ih0 < BR ? H - ih0 : BR; // rlo .. rhi-1
    // Row r is thread (r%4)*32 + r/4's: each warp issues a quarter of the
    // copies.
    unsigned bytes = 0;
#pragma unroll 1
    for (int row = pw + 4 * lane; row < CB * BR; row += 128) {
      const int cb = row / BR, r = row - cb * BR;
      if (cb < nc && r >= rlo && r < rhi) {
        bytes += BCOLS * 4;
      } else {
        float *const drow = band + row * BCP;
        for (int e = 0; e < BCP; e += 4)
          *reinterpret_cast<float4 *>(drow + e) = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        fence_proxy_async();
      }
    }
    mbar_arrive_expect_tx(full, bytes);
#pragma unroll 1
    for (int row = pw + 4 * lane; row < CB * BR; row += 128) {
      const int cb = row / BR, r = row - cb * BR;
      if (cb < nc && r >= rlo && r < rhi)
        bulk_copy_g2s(band + row * BCP + SHIFT + PW,
                      x + ((img * C + clo + cb) * H + ih0 + r) * W, BCOLS * 4, full);
    }
    if (pf < NTILES) {
      const int pimg = pf / TILES_PER_IMG;
      const int pih0 = (pf - pimg * TILES_PER_IMG) * TP * SH - PH;
#pragma unroll 1
      for (int row = pw + 4 * lane; row < CB * BR; row += 128) {
        const int cb = row / BR, ih = pih0 + row - cb * BR;
        if (cb < nc && ih >= 0 && ih < H)
          bulk_prefetch_l2(x + ((pimg * C + clo + cb) * H + ih) * W, BCOLS * 4);
      }
    }
  } else {
    band_fill<true, 4>(band, x, img, p0, pw, lane, clo);
    cp_async_mbar_arrive(full);
  }
}

// KS 2, the producer warpgroup: a consumer's staged sums of tile `tile`
// (st, as stage_frags leaves them) + bias to y, channels nlo .. nlo+NBO-1 (bsm their
// biases); warp pw takes channels pw, pw+4, ..., its lanes consecutive
// pixels of one channel (the tile's TM pixels are contiguous in each NCHW
// plane).
__device__ __forceinline__ void produce_out(const float *st, const float *bsm,
                                            float *__restrict__ y, int tile, int nlo, int pw,
                                            int lane) {
  constexpr bool FULL_K = K % BN == 0;
  const int img = tile / TILES_PER_IMG;
  const int p0 = (tile - img * TILES_PER_IMG) * TP;
  const int mlim = TM < (P - p0) * Q ? TM : (P - p0) * Q;
  float *__restrict__ yt = y + ((long long)img * K + nlo + pw) * PQ + p0 * Q;
  constexpr int NM = MT * 2; // pixels m = lane + 32u, u < NM
  constexpr int CU = 4;      // channels per batch: all loads, then the stores
#pragma unroll 1
  for (int c0 = pw; c0 < NBO; c0 += 4 * CU) {
    float v[CU][NM];
#pragma unroll
    for (int cc = 0; cc < CU; ++cc) {
      const int c = c0 + 4 * cc < NBO ? c0 + 4 * cc : NBO - 1; // rows past NBO: unused
      const float bias = bsm[c];
#pragma unroll
      for (int u = 0; u < NM; ++u) v[cc][u] = ct_act(st[c * SPITCH + lane + 32 * u] + bias);
    }
#pragma unroll
    for (int cc = 0; cc < CU; ++cc) {
      const int c = c0 + 4 * cc;
      if (c < NBO && (FULL_K || nlo + c < K)) {
        float *__restrict__ yc = yt + (c - pw) * PQ;
#pragma unroll
        for (int u = 0; u < NM; ++u)
          if (lane + 32 * u < mlim) __stcs(yc + lane + 32 * u, v[cc][u]);
      }
    }
  }
}

} // namespace wg

// ----------------------------------------------------------------------------
// The kernel.  Launch: grid (CT_PLAN_GRID_X, ceil(K/BN)), block (128*WG),
// CT_PLAN_SMEM bytes of dynamic shared memory.  Any grid.x in 1 .. NTILES is
// correct.  ws is unused, except with CT_XW_WS (set by conv_s2d.cu): then x
// and w are read from it.

#if KS == 2
#define CT_WG_CLUSTER __cluster_dims__(2, 1, 1)
#else
#define CT_WG_CLUSTER
#endif
extern "C" __global__ void CT_WG_CLUSTER __launch_bounds__(wg::THREADS, CTAS)
conv_wg(const float *__restrict__ x, const float *__restrict__ w,
        const float *__restrict__ b, float *__restrict__ y, float *ws) {
  using namespace wg;
  extern __shared__ float4 smem4[]; // float4: 16-byte aligned
  float *const smem = reinterpret_cast<float *>(smem4);
  float *const wsm = smem;                                                 // weights
  int *const koff = reinterpret_cast<int *>(smem + NWARR * W_FLOATS);     // koff
  float *const bsm = smem + NWARR * W_FLOATS + KOFF_INTS;                 // biases
  float *const band0 = bsm + BN;                                          // bands
#ifdef CT_XW_WS
  // A layout pass (conv_s2d.cu) left this problem's x and w in ws.
  x = ws;
  w = ws + CT_XW_WS;
#else
  (void)ws;
#endif

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int wgi = warp >> 2, wq = warp & 3; // warpgroup, warp in it
  const int g = lane >> 2, t = lane & 3;
  const int n0 = blockIdx.y * BN;
  // KS 2: the CTA's rank in its cluster (its half of the k-steps); the two
  // take the same tiles.
  const unsigned rank = KS == 2 ? cluster_rank() : 0u;
  const int clo = KS == 2 ? k_chan((int)rank * KP) : 0; // the band's first channel
  const int tile0 = blockIdx.x / KS;
  if (tile0 >= NTILES) return; // never with a planned grid; uniform per cluster

  // The first band's copy overlaps the weight staging.
  if constexpr (STAGES == 2 && !PP) {
    const int img = tile0 / TILES_PER_IMG;
    band_fill<true>(band0, x, img, (tile0 - img * TILES_PER_IMG) * TP, warp, lane);
    cp_async_commit();
  }

  // Weights in the core-matrix layout, read along KCRS (coalesced; KRSC
  // w: reduction index kk = (c R + r) S + s at (r S + s) C + c).
#pragma unroll 4
  for (int u = tid; u < BN * KP; u += THREADS) {
    const int nl = u / KP, k = u - nl * KP;
    const int kg = n0 + nl, kk = (int)rank * KP + k;
    const int wi = NHWC ? (kk % (R * S)) * C + kk / (R * S) : kk;
    const float v = (kk < CRS && kg < K) ? __ldg(w + kg * CRS + wi) : 0.0f;
    // core matrix (ks, j, h) = (k>>3, nl>>3, (k>>2)&1); row nl&7; column k&3
    const int e = (k >> 3) * (BN * 8) + (nl >> 3) * 64 + ((k >> 2) & 1) * 32 +
                  (nl & 7) * 4 + (k & 3);
    const unsigned hi = to_tf32(v);
    wsm[e] = __uint_as_float(hi);
    if constexpr (SPLIT) wsm[W_FLOATS + e] = __uint_as_float(to_tf32(v - __uint_as_float(hi)));
  }
  // k -> band offset in bytes, as int2 pairs (k = 8ks+t, 8ks+t+4) at [ks][t];
  // row KSTEPS all 0.
  for (int e = tid; e < KOFF_INTS; e += THREADS) {
    const int kl = (e >> 3) * 8 + ((e >> 1) & 3) + 4 * (e & 1), k = (int)rank * KP + kl;
    int off = 0;
    if (kl < KP && k < CRS) {
      const int c = k / (R * S), rs = k - c * (R * S);
      const int r = rs / S, s = rs - r * S;
      off = (c - clo) * BR * BCP + r * DH * BCP + s * DW;
    }
    koff[e] = off * 4; // bytes
  }
  stage_bias(bsm, b, n0, BN, K, tid, THREADS);
  if constexpr (KS == 2) {
    // Bulk copies write only the columns in the image: the rest stay 0.
    float4 *const b4 = reinterpret_cast<float4 *>(band0);
    for (int e = tid; e < NBANDS * BAND_PAD / 4; e += THREADS)
      b4[e] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  }
  // This thread's weight (and band) stores -> the wgmma and bulk copies
  // (async proxy).
  fence_proxy_async();

  Mainloop ml;
  // With PP each warpgroup owns whole tiles: its m64 tiles start at 0.
  const int mbase = PP ? 0 : wgi;
  // This lane's pixel offsets in the band, in bytes: rows g and g+8 of its
  // warp's 16 rows of each m64 tile (0, a valid element, past the tile).
#pragma unroll
  for (int i = 0; i < MW; ++i)
#pragma unroll
    for (int hh = 0; hh < 2; ++hh) {
      const int m = (mbase + i * MSTEP) * 64 + 16 * wq + g + 8 * hh;
      ml.pb[i][hh] = m < TM ? ((m / Q) * SH * BCP + (m % Q) * SW + SHIFT) * 4 : 0;
    }
  ml.kq = reinterpret_cast<const int2 *>(koff) + t;
  ml.desc0 = make_desc((unsigned)__cvta_generic_to_shared(wsm));

  if constexpr (KS == 2) {
    // A cluster of two CTAs per tile (see the head of the file), each with
    // two consumer warpgroups (as PP below: warpgroup wgi takes tiles
    // first + k*step, with first = WG*tile0 + wgi, with a band of its own)
    // and a producer warpgroup.  Per tile, a consumer waits for its band,
    // gathers, issues and retires its wgmma, exchanges the halves with the
    // other CTA's same warpgroup, stages the kept half in its output area
    // and hands it to the producer.  The producer copies each warpgroup's
    // next band as soon as its main loop has read the last one, and stores
    // the staged outputs, so a consumer's work off the tensor cores is
    // short; the two consumers take no turns (PP's), so each one's
    // pipeline bubbles (its drains, its waits) are the other's chances.
    // H200, fp32 headline, stand-alone timing in one run: 0.682 ms with
    // turns and no producer, 0.600 with the producer and turns, 0.554
    // with the producer and no turns (0.541 with produce_band's L2
    // prefetch).  mbarriers, per warpgroup v (phase k = the warpgroup's
    // k-th tile):
    //   bfull[v]  the band of tile k has landed (producer, 128 arrivals
    //             and the bulk copies' bytes);
    //   bfree[v]  the consumer's main loop has read band k (128);
    //   ofull[v]  the consumer has staged the outputs of tile k (128);
    //   xfree[v], xfull[v]: the exchange (see exchange); xfree's first
    //             phase is the other CTA's producer's arrivals at the start,
    //             each later one its arrivals after storing a tile of v
    //             (4: one per warp).
    // The output area receives the other CTA's sums, then holds the
    // staged outputs: the other CTA sends the next sums only once this
    // CTA's producer has stored these, so thread 0's arming of xfull
    // (before its ofull arrival) precedes them.
    unsigned long long *const bars =
        reinterpret_cast<unsigned long long *>(band0 + NBANDS * BAND_PAD + WG * OUTF);
    unsigned long long *const xfree = bars, *const xfull = bars + 2, *const bfull = bars + 4,
                              *const bfree = bars + 6, *const ofull = bars + 8;
    float *const outs = band0 + NBANDS * BAND_PAD;
    if (tid == 0) {
      for (int v = 0; v < 2; ++v) {
        mbar_init(xfree + v, 4);
        mbar_init(xfull + v, 1);
        mbar_arrive_expect_tx(xfull + v, XBYTES); // armed for the first exchange
        mbar_init(bfull + v, 128);
        mbar_init(bfree + v, 128);
        mbar_init(ofull + v, 128);
      }
      fence_mbar_init();
    }
    // Both CTAs' barriers initialized, weights, koff and zeroed bands
    // visible to every thread.
    cluster_sync();
    const int step = (gridDim.x / KS) * WG;
    if (wgi == 2) {
      // The producer warpgroup.
      asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(PRODUCER_REGS));
      const bool bulk = ((unsigned long long)x & 15) == 0;
      const auto peer_xfree = [&](int v) {
        return cluster_addr((unsigned)__cvta_generic_to_shared(xfree + v), rank ^ 1);
      };
      if (lane == 0)
        for (int v = 0; v < 2; ++v) mbar_arrive_remote_relaxed(peer_xfree(v));
      for (int v = 0; v < 2; ++v)
        if (tile0 * WG + v < NTILES)
          produce_band(band0 + v * BAND_PAD, x, tile0 * WG + v, clo, bulk, bfull + v, wq, lane,
                       tile0 * WG + v + step);
#pragma unroll 1
      for (int k = 0, tile = tile0 * WG; tile < NTILES; ++k, tile += step) {
        const unsigned ph = k & 1;
#pragma unroll 1
        for (int v = 0; v < 2 && tile + v < NTILES; ++v) {
          if (tile + v + step < NTILES) {
            mbar_wait(bfree + v, ph);
            produce_band(band0 + v * BAND_PAD, x, tile + v + step, clo, bulk, bfull + v, wq,
                         lane, tile + v + 2 * step);
          }
          mbar_wait(ofull + v, ph);
          produce_out(outs + v * OUTF, bsm + rank * NBO, y, tile + v, n0 + (int)rank * NBO, wq,
                      lane);
          __syncwarp();
          if (lane == 0) mbar_arrive_remote_relaxed(peer_xfree(v));
        }
      }
    } else {
      // A consumer warpgroup.
      asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(CONSUMER_REGS));
      ml.bandb = reinterpret_cast<const char *>(band0 + wgi * BAND_PAD);
      float *const outb = outs + wgi * OUTF;
      const int first = tile0 * WG + wgi;
      unsigned ph = 0; // parity of the warpgroup's tiles so far
#pragma unroll 1
      for (int tile = first; tile < NTILES; tile += step, ph ^= 1) {
        mbar_wait(bfull + wgi, ph);
        ml.start();
        ml.run([] {});
        mbar_arrive(bfree + wgi);
        float kept[MW][NBO / 2];
        exchange(ml.master, kept, outb, xfree + wgi, xfull + wgi, rank, tid & 127, ph);
        wg_sync(wgi); // the other CTA's sums are read: the area takes the outputs
        stage_frags<NBO>(kept, outb, 0, NBO, wq, g, t);
        if ((tid & 127) == 0) mbar_arrive_expect_tx(xfull + wgi, XBYTES); // the next exchange
        mbar_arrive(ofull + wgi);
      }
    }
    // No CTA leaves while the other may still write its shared memory.
    cluster_sync();
    return;
  }

  if constexpr (PP) {
    // Ping-pong: warpgroup wgi takes tiles first + k*step (first =
    // WG*tile0 + wgi: tile0 is the CTA's index) with its own band and its
    // own named barrier, and the two take turns on the tensor cores:
    // warpgroup 0's main loop of its k-th tile, then warpgroup 1's of its
    // k-th, then warpgroup 0's k+1-th...
    // While one computes, the other writes its outputs and loads its next
    // band (cp.async, during its epilogue).  Each turn handed over is taken:
    // warpgroup 0 passes after its k-th tile only if warpgroup 1 has a k-th
    // (first + 1 + k*step), warpgroup 1 only if warpgroup 0 has a k+1-th.
    __syncthreads(); // weights and koff visible to every warpgroup
    float *const band = band0 + wgi * BAND_PAD;
    ml.bandb = reinterpret_cast<const char *>(band);
    const int first = tile0 * WG + wgi, step = gridDim.x * WG;
    if (first < NTILES) {
      const int img = first / TILES_PER_IMG;
      band_fill<true, 4>(band, x, img, (first - img * TILES_PER_IMG) * TP, wq, lane);
    }
    cp_async_commit();
#pragma unroll 1
    for (int tile = first; tile < NTILES; tile += step) {
      const int img = tile / TILES_PER_IMG;
      const int p0 = (tile - img * TILES_PER_IMG) * TP;
      cp_async_wait<0>();
      wg_sync(wgi); // this tile's band visible to the warpgroup
      if constexpr (!SPLIT) {
        band_round<128>(band, tid & 127);
        wg_sync(wgi);
      }
      ml.start(); // the first gather, before the turn
      if (wgi == 1 || tile != first) turn_wait(wgi);
      const bool hand_on = wgi == 0 ? tile + 1 < NTILES : tile - 1 + step < NTILES;
      ml.run([&] {
        if (hand_on) turn_pass(wgi ^ 1);
      });
      wg_sync(wgi); // the warpgroup is done reading the band
      // STAGED: the outputs leave through the band buffer before the next
      // band comes in; else the copy overlaps the direct stores.
      if constexpr (STAGED)
        epilogue_staged(ml.master, bsm, band, y, img, p0, n0, wgi, wq, lane, g, t);
      const int next = tile + step;
      if (next < NTILES) {
        const int nimg = next / TILES_PER_IMG;
        band_fill<true, 4>(band, x, nimg, (next - nimg * TILES_PER_IMG) * TP, wq, lane);
      }
      cp_async_commit();
      if constexpr (!STAGED) {
        if constexpr (SPLIT)
          epilogue(ml.master, bsm, y, img, p0, n0, 0, wq, g, t);
        else
          epilogue(ml.acc[0], bsm, y, img, p0, n0, 0, wq, g, t);
      }
    }
    return;
  }

  // Both warpgroups on one tile (its m64 tiles split between them).
  int stage = 0;
#pragma unroll 1
  for (int tile = tile0; tile < NTILES; tile += gridDim.x) {
    const int img = tile / TILES_PER_IMG;
    const int p0 = (tile - img * TILES_PER_IMG) * TP;
    float *const band = band0 + stage * BAND_PAD;

    if constexpr (STAGES == 2) {
      // Prefetch the next tile into the other buffer (freed by the barrier
      // that ended the previous iteration); always commit so that
      // wait_group 1 means "this tile's copies are done".
      const int next = tile + gridDim.x;
      if (next < NTILES) {
        const int nimg = next / TILES_PER_IMG;
        band_fill<true>(band0 + (stage ^ 1) * BAND_PAD, x, nimg,
                        (next - nimg * TILES_PER_IMG) * TP, warp, lane);
      }
      cp_async_commit();
      cp_async_wait<1>();
      __syncthreads(); // band (and on the first tile weights, koff) visible
      if constexpr (!SPLIT) {
        band_round<THREADS>(band, tid);
        __syncthreads();
      }
    } else {
      __syncthreads(); // the previous tile's gathers are done with the band
      band_fill<false>(band, x, img, p0, warp, lane);
      __syncthreads();
    }

    ml.bandb = reinterpret_cast<const char *>(band);
    ml.start();
    ml.run([] {});
    if constexpr (SPLIT)
      epilogue(ml.master, bsm, y, img, p0, n0, wgi, wq, g, t);
    else
      epilogue(ml.acc[0], bsm, y, img, p0, n0, wgi, wq, g, t);

    if constexpr (STAGES == 2) {
      __syncthreads(); // everyone is done with this band before it is refilled
      stage ^= 1;
    }
  }
}
