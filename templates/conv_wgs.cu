// conv_wgs.cu — family "wgs": the convolution as an implicit GEMM on
// Hopper's wgmma with both operands read by the tensor cores from shared
// memory (wgmma.mma_async.sync.aligned.m64nNk8.f32.tf32.tf32, A and B by
// matrix descriptor; sm_90a only).  For problems with stride 4 along the
// width and no dilation there: then an input band row stored as plain
// floats already is the im2col matrix A, four taps at a time.
//
// Why: conv_wg gathers A into registers, 4 shared loads per thread and
// k-step, through an offset table; those loads, their bank conflicts and
// their latency share the shared-memory pipeline with the tensor cores'
// reads of B, and its main loop runs at about half the matrix rate
// (docs/PERFORMANCE.md, v4).  Here a warpgroup's main loop is its wgmma
// instructions alone.  Measured on the H200 for the headline problem it is
// slower all the same (0.384 against 0.314 ms): the tensor cores' own reads
// of A and B, the other warpgroup's stores and one output row per turn
// (shared memory holds two one-row bands beside 96 channels' weights) cost
// more than the gathers did.  The tuner keeps it in the search.
//
//   GEMM view   M = the Q pixels of one output row (MT m64 tiles), N = BN
//               output channels, K = taps in quads: quad (c, r, sg) holds
//               taps s = 4sg .. 4sg+3 of input channel c, kernel row r
//               (SG = ceil(S/4) quads per row, taps past S weight 0);
//               k-step ks = quads 2ks and 2ks+1 (one of weight 0 past the
//               last).  K = 8*KSTEPS >= 4*C*R*SG (the headline problem:
//               400 against conv_wg's 368).
//   band        [C][BR][BCP] floats per warpgroup: input rows ih0 .. ih0+BR-1
//               of the tile's TP output rows, input column iw at float
//               iw + PW of its row, zero outside the image, TF32-rounded
//               (round to nearest) as it is stored.  BCP = 4*(64*MT+SG-1)
//               covers every pixel row of every m64 tile.
//   A           for output row p (of the tile), m64 tile i, quad (c, r, sg):
//               pixel q = 64i + m reads floats 4(q+sg) .. 4(q+sg)+3 of band
//               row (c, (p-p0)*SH + r*DH): 8 pixels are one 128-byte core
//               matrix, the next 8 are 128 bytes on (SBO 128), and the
//               k-step's second quad lies LBO bytes from its first
//               (LBO = the difference of their offsets, per k-step).
//   B           the weights as in conv_wg (K-major core matrices, LBO 128,
//               SBO 256), k in quad order.
//
// Non-finite inputs: a quad's taps past S (weight 0) read the band floats
// of the next columns; 0 * inf is NaN, so an infinite or NaN input can make
// NaN of up to SG*4-S outputs to the left of those the convolution makes
// non-finite.  Finite inputs give the convolution exactly as specified.
//
// Work decomposition: two warpgroups per CTA in ping-pong (as conv_wg's PP):
// warpgroup v takes tiles 2*blockIdx.x + v + k*2*gridDim.x, each of TP output
// rows of one image, with its own band; one warpgroup's wgmma run while the
// other stores its outputs and loads its next band (global loads issued
// before the stores, rounded and stored to shared memory after them).
// Persistent grid (one CTA per SM): the weights are staged once per CTA.
//
// The generator prepends the problem (CT_*), the parameters (TP, BN) and
// the plan's lines (CT_PLAN_*).  Without them the file compiles on its own
// (sm_90a): the headline problem.

#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
#error "conv_wgs.cu needs the arch-specific target sm_90a (wgmma)"
#endif

#include "ct_problem.cuh"
#include "ct_act.cuh"

#ifndef TP
#define TP 1 // output rows per tile
#endif
#ifndef BN
#define BN 96 // output channels per CTA = the wgmma N: 48 or 96
#endif

#include "ct_ptx.cuh"
#include "ct_wgmma.cuh"

namespace wgs {

CT_PROBLEM_CONSTANTS

constexpr int THREADS = 256;            // two warpgroups
constexpr int NACC = BN / 2;            // accumulator floats per thread and m64 tile
constexpr int MT = (Q + 63) / 64;       // m64 tiles per output row
constexpr int MW = TP * MT;             // m64 tiles per warpgroup and tile
constexpr int SG = (S + 3) / 4;         // quads per kernel row
constexpr int NQ = C * R * SG;          // quads with weights
constexpr int KSTEPS = (NQ + 1) / 2;    // k8 steps
constexpr int KP = KSTEPS * 8;          // the reduction length, padded
constexpr int BR = (TP - 1) * SH + (R - 1) * DH + 1; // band rows
constexpr int BCP = 4 * (64 * MT + SG - 1);          // band row pitch, floats
constexpr int BAND = C * BR * BCP;
constexpr int W_FLOATS = BN * KP;
// 2 KB after the bands: compute-sanitizer checks each wgmma A operand as
// the 2048 contiguous bytes from its start address, while the A tiles here
// are strided (rows 16 bytes apart, the two quads LBO apart) and end within
// their band rows (static_asserts below); a tile in the last rows of the
// second band would otherwise count as reading past the allocation.
constexpr int SLACK = 512;
constexpr int SMEM_BYTES = (W_FLOATS + BN + 2 * BAND + SLACK) * 4;
constexpr unsigned SLAB_BYTES = BN * 32; // one k8 step of the weights
constexpr int TILES_PER_IMG = (P + TP - 1) / TP;
constexpr int NTILES = N * TILES_PER_IMG;
constexpr int KBLOCKS = (K + BN - 1) / BN;
constexpr int PQ = P * Q;
// The band's loads: runs of 4 floats of an input row (W % 4 == 0), up to
// LD_MAX per thread held in registers across the epilogue.
constexpr int RUNS = W / 4;
constexpr int NLD = (C * BR * RUNS + 127) / 128;
constexpr int LD_MAX = (160 - MW * NACC) / 4; // registers beside the accumulators
constexpr bool PREFETCH = W % 4 == 0 && NLD <= LD_MAX;
// Input columns past the band row (never read by an output) are dropped.
constexpr bool CLIP = PW + W > BCP;

CT_PROBLEM_CHECKS
static_assert(SW == 4 && DW == 1, "wgs: stride 4 along the width, no dilation there");
static_assert(BN == 48 || BN == 96, "BN: 48 or 96");
static_assert(TP >= 1 && MW * NACC <= 96, "accumulators: at most 96 per thread");
// Every float a pixel row of an m64 tile reads lies in its band row; the
// input's columns that matter (up to 4(Q-1)+S-1-PW) too.
static_assert(4 * (Q - 1) + S <= BCP, "band row too short");
static_assert(SMEM_BYTES <= 232448, "shared memory above any device's 227 KB");
static_assert(SMEM_BYTES < (1 << 18), "beyond the descriptors' reach");
static_assert(KBLOCKS <= 65535, "grid.y above 65535");
static_assert((long long)N * TILES_PER_IMG <= (1LL << 30), "too many tiles");

CT_PLAN_CHECKS_TILED

// Quad qd's first float in the band (relative to a pixel row's own base),
// for quads past NQ (weight 0) quad 0's.
__host__ __device__ constexpr int quad_off(int qd) {
  return qd >= NQ ? 0 : ((qd / (R * SG)) * BR + ((qd / SG) % R) * DH) * BCP + (qd % SG) * 4;
}

typedef unsigned long long u64;

// The wgmma of one warpgroup over one tile: KSTEPS steps x MW m64 tiles,
// issued back to back (nothing else competes for the registers) as one
// group.  a0[i] is the A descriptor of m64 tile i at quad 0 (SBO 128, LBO
// filled per step), db0 B's at step 0.
template <int KS> __device__ __forceinline__ void issue(float (&acc)[MW][NACC],
                                                        const u64 (&a0)[MW], u64 db0) {
  if constexpr (KS < KSTEPS) {
    constexpr int o0 = quad_off(2 * KS), o1 = quad_off(2 * KS + 1);
    constexpr int lo = o1 >= o0 ? o1 - o0 : o0 - o1;
    // The quad with the lower address goes first: LBO is unsigned.  The
    // weights hold the two quads in that order too (see the staging).
    constexpr int first = o1 >= o0 ? o0 : o1;
    constexpr u64 dstep = ((u64)(first * 4 >> 4)) | ((u64)((lo * 4 >> 4) & 0x3FFF) << 16);
    const u64 db = db0 + (u64)(KS * (int)(SLAB_BYTES >> 4));
#pragma unroll
    for (int i = 0; i < MW; ++i) CtWgmmaSS<BN>::run(acc[i], a0[i] + dstep, db, KS != 0);
    issue<KS + 1>(acc, a0, db0);
  }
}

// Whether k-step ks's quads are stored swapped (the second at the lower
// address; see issue): only when the first is a padding quad.
__host__ __device__ constexpr bool step_swapped(int ks) {
  return quad_off(2 * ks + 1) < quad_off(2 * ks);
}

// The band of tile (img, p0): input rows ih0 .. ih0+BR-1 of every channel.
// With pf (PREFETCH and x 16-byte aligned): this thread's runs of 4 floats
// (run u = tid128 + 128*j over C*BR rows of RUNS runs) are loaded into v
// (load) and stored rounded (store); else store loads and stores one float
// at a time.  Rows outside the image store zeros; columns outside the input
// are zero from the start and never written.
struct BandLoad {
  float4 v[PREFETCH ? NLD : 1];

  __device__ __forceinline__ void load(const float *__restrict__ x, int img, int p0, int tid128,
                                       bool pf) {
    if constexpr (PREFETCH) {
      if (!pf) return;
      const int ih0 = p0 * SH - PH;
#pragma unroll
      for (int j = 0; j < NLD; ++j) {
        const int u = tid128 + 128 * j;
        const int row = u / RUNS, run = u - row * RUNS;
        const int c = row / BR, ih = ih0 + (row - c * BR);
        const bool in = u < C * BR * RUNS && (unsigned)ih < (unsigned)H;
        v[j] = in ? __ldg(reinterpret_cast<const float4 *>(x + ((img * C + c) * H + ih) * W) + run)
                  : make_float4(0.f, 0.f, 0.f, 0.f);
      }
    }
  }

  __device__ __forceinline__ void store(float *band, const float *__restrict__ x, int img,
                                        int p0, int tid128, bool pf) {
    if (PREFETCH && pf) {
#pragma unroll
      for (int j = 0; j < (PREFETCH ? NLD : 1); ++j) {
        const int u = tid128 + 128 * j;
        if (u < C * BR * RUNS) {
          const int row = u / RUNS, run = u - row * RUNS;
          float *d = band + row * BCP + PW + 4 * run;
          const float e[4] = {v[j].x, v[j].y, v[j].z, v[j].w};
#pragma unroll
          for (int k = 0; k < 4; ++k)
            if (!CLIP || PW + 4 * run + k < BCP) d[k] = round_tf32(e[k]);
        }
      }
    } else {
      const int ih0 = p0 * SH - PH;
#pragma unroll 8
      for (int u = tid128; u < C * BR * W; u += 128) {
        const int row = u / W, iw = u - row * W;
        const int c = row / BR, ih = ih0 + (row - c * BR);
        const float f = (unsigned)ih < (unsigned)H ? __ldg(x + ((img * C + c) * H + ih) * W + iw) : 0.0f;
        if (iw + PW < BCP) band[row * BCP + PW + iw] = round_tf32(f);
      }
    }
  }
};

// Writes a warpgroup's results (+ bias from shared memory): m64 tile
// i = rr*MT + mt holds output row p0+rr, pixels 64mt + 16wq + g (+8);
// lane (g, t) holds channels n0+8j+2t(+1).
__device__ __forceinline__ void epilogue(const float (&acc)[MW][NACC], const float *bsm,
                                         float *__restrict__ y, int img, int p0, int n0,
                                         int wq, int g, int t) {
  constexpr bool FULL_K = K % BN == 0;
  float2 bias[BN / 8];
  load_bias_pairs<BN>(bias, bsm, t);
  float *__restrict__ yt = y + ((long long)img * K + n0 + 2 * t) * PQ + p0 * Q;
#pragma unroll
  for (int i = 0; i < MW; ++i) {
    const int rr = i / MT, mt = i - rr * MT;
    if (p0 + rr >= P) break; // uniform: the image's last tile may be short
#pragma unroll
    for (int hh = 0; hh < 2; ++hh) {
      const int q = 64 * mt + 16 * wq + g + 8 * hh;
      if (q < Q) store_pixel<BN, FULL_K>(yt + rr * Q + q, acc[i], hh, bias, n0, t, K, PQ);
    }
  }
}

} // namespace wgs

// ----------------------------------------------------------------------------
// The kernel.  Launch: grid (CT_PLAN_GRID_X, ceil(K/BN)), block 256,
// CT_PLAN_SMEM bytes of dynamic shared memory.  Any grid.x in 1 .. NTILES is
// correct.  ws is unused.

extern "C" __global__ void __launch_bounds__(wgs::THREADS, 1)
conv_wgs(const float *__restrict__ x, const float *__restrict__ w,
         const float *__restrict__ b, float *__restrict__ y, float *ws) {
  using namespace wgs;
  extern __shared__ float4 smem4[];
  float *const smem = reinterpret_cast<float *>(smem4);
  float *const wsm = smem;                 // weights
  float *const bsm = smem + W_FLOATS;      // biases
  float *const band0 = bsm + BN;           // two bands
  (void)ws;

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int wgi = warp >> 2, wq = warp & 3, tid128 = tid & 127;
  const int g = lane >> 2, t = lane & 3;
  const int n0 = blockIdx.y * BN;

  // Weights, K-major core matrices (as conv_wg): core matrix (ks, j, h)
  // holds channels 8j..8j+7 x k = 8ks+4h .. 8ks+4h+3.  k-step ks's half h
  // is quad 2ks+h, or 2ks+1-h when the step is stored swapped.
  for (int u = tid; u < BN * KP; u += THREADS) {
    const int nl = u / KP, k = u - nl * KP;
    const int ks = k >> 3, h = (k >> 2) & 1, pw = k & 3;
    const int qd = 2 * ks + (step_swapped(ks) ? 1 - h : h);
    const int c = qd / (R * SG), r = (qd / SG) % R, s = (qd % SG) * 4 + pw;
    const int kg = n0 + nl;
    const float v = (qd < NQ && s < S && kg < K) ? __ldg(w + ((kg * C + c) * R + r) * S + s) : 0.0f;
    wsm[ks * (BN * 8) + (nl >> 3) * 64 + h * 32 + (nl & 7) * 4 + pw] = round_tf32(v);
  }
  stage_bias(bsm, b, n0, BN, K, tid, THREADS);
  // Both bands zero: the columns outside the input stay so.
  for (int e = tid; e < 2 * BAND; e += THREADS) band0[e] = 0.0f;
  __syncthreads();

  float *const band = band0 + wgi * BAND;
  const unsigned band_sa = (unsigned)__cvta_generic_to_shared(band);
  const u64 db0 = wgmma_desc((unsigned)__cvta_generic_to_shared(wsm), 128, 256);
  // A descriptors at quad 0 of each m64 tile (row rr of the tile, pixels
  // 64mt ..): LBO per step (added in issue), SBO 128.
  u64 a0[MW];
#pragma unroll
  for (int i = 0; i < MW; ++i) {
    const int rr = i / MT, mt = i - rr * MT;
    a0[i] = wgmma_desc(band_sa + (unsigned)((rr * SH * BCP + 256 * mt) * 4), 0, 128);
  }

  // Ping-pong, as conv_wg's PP: each turn handed over is taken.
  const int first = blockIdx.x * 2 + wgi, step = gridDim.x * 2;
  BandLoad bl;
  const bool pf = ((unsigned long long)x & 15) == 0; // float4 loads of x
  if (first < NTILES) {
    const int img = first / TILES_PER_IMG;
    bl.load(x, img, (first - img * TILES_PER_IMG) * TP, tid128, pf);
    bl.store(band, x, img, (first - img * TILES_PER_IMG) * TP, tid128, pf);
  }
  fence_proxy_async(); // the band's stores -> the wgmma (async proxy)
  wg_sync(wgi);
  float acc[MW][NACC];
#pragma unroll 1
  for (int tile = first; tile < NTILES; tile += step) {
    const int img = tile / TILES_PER_IMG;
    const int p0 = (tile - img * TILES_PER_IMG) * TP;
    if (wgi == 1 || tile != first) turn_wait(wgi);
#pragma unroll
    for (int i = 0; i < MW; ++i)
#pragma unroll
      for (int e = 0; e < NACC; ++e) reg_fence(acc[i][e]);
    wgmma_fence();
    issue<0>(acc, a0, db0);
    wgmma_commit();
    const bool hand_on = wgi == 0 ? tile + 1 < NTILES : tile - 1 + step < NTILES;
    if (hand_on) turn_pass(wgi ^ 1);
    const int next = tile + step;
    const int nimg = next / TILES_PER_IMG;
    const int np0 = (next - nimg * TILES_PER_IMG) * TP;
    if (next < NTILES) bl.load(x, nimg, np0, tid128, pf); // in flight during the drain
    wgmma_wait<0>();
#pragma unroll
    for (int i = 0; i < MW; ++i)
#pragma unroll
      for (int e = 0; e < NACC; ++e) reg_fence(acc[i][e]);
    wg_sync(wgi); // every wgmma of the warpgroup has read the band
    epilogue(acc, bsm, y, img, p0, n0, wq, g, t);
    if (next < NTILES) bl.store(band, x, nimg, np0, tid128, pf);
    fence_proxy_async();
    wg_sync(wgi); // the next band visible to the warpgroup's wgmma
  }
}
