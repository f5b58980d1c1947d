// conv_tc.cu — families "tc" and "tc3": the convolution as an implicit GEMM
// on tensor cores, mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32.
// generator/family_tc.c holds both descriptors.
//
//   GEMM view   M = output pixels, N = output channels, Kdim = C*R*S, padded
//               to KP = 8*KSTEPS; k = (c*R + r)*S + s.
//   groups      With CT_GROUPS G > 1, one GEMM per group: N = the group's
//               KG = K/G output channels, Kdim = CG*R*S over its CG = C/G
//               input channels (w is [K][CG][R][S]).  Below, C reads CG and
//               K reads the group's channel range: grid.y holds KBG =
//               ceil(KG/BN) CTAs per group, and a CTA's channels past its
//               group's last get zero weights and are not stored.
//   tc  (SPLIT 0, precision tf32): both operands rounded to TF32 with
//               to_tf32 (round to nearest, ties to even; truncation would double
//               the error), one mma per product, fp32 accumulation.
//   tc3 (SPLIT 1, precision fp32): 3xTF32.  a = ah + al with
//               ah = rn(a), al = rn(a - ah), likewise b; per k-step
//               acc += al*bh, acc += ah*bl, acc += ah*bh (small terms first).
//               Tensor cores may truncate their fp32 sums (round toward zero);
//               a bias that grows with the number of mma into one accumulator.
//               So every 2 k-steps the mma accumulator is added into an
//               fp32 master with FADD (round to nearest) and restarted at 0.
//               (A CPU model with RZ accumulation: rel. Frobenius error 3.4e-6
//               without the flush, 1.8e-7 with it every 2 k-steps, for the
//               headline problem.)
//
// Work decomposition
//   tile  : TP consecutive output rows (all Q columns) of one image: the
//           TM = TP*Q pixels p0*Q .. p0*Q+TM-1 of the image's P*Q, which are
//           contiguous in every NCHW output plane.  MT = ceil(TM/16) m16 tiles.
//   CTA   : BN output channels (blockIdx.y) x one tile at a time; tiles in a
//           grid-stride loop (PERSIST > 0: a persistent grid, the weights are
//           staged once per CTA; PERSIST = 0: one tile per CTA).
//   warps : WARPS = WGM x WN, warp = wm*WN + wn.  Warp (wm, wn) owns the m16
//           tiles wm, wm+WGM, ... (MW = ceil(MT/WGM) of them; the last one
//           may not exist and is skipped) and the NTW = BN/8/WN n8 tiles
//           wn*NTW .. wn*NTW+NTW-1: MW*NTW accumulator fragments.
//
// Shared memory (floats; every part 16-byte aligned)
//   wfrag [KSTEPS][NT][32 lanes] float2 — the CTA's BN x KP weights in mma B
//         fragment order: entry (ks, j, lane = 4g+t) = (W[8j+g][8ks+t],
//         W[8j+g][8ks+t+4]) = (b0, b1), so a lane loads its two B values of
//         one n8 tile with one conflict-free 64-bit LDS.  Zero for channels
//         >= K and k >= C*R*S.  TF32-rounded (tc) or raw (tc3).
//   koff  [KSTEPS][4 t] int2 — byte offsets (4*koff(8ks+t), 4*koff(8ks+t+4))
//         with koff(k) = c*BR*BC + r*DH*BC + s*DW; 0 for padded k, whose
//         weight is 0: they add 0 * (the first element of the pixel's own
//         window), which is non-finite only when the reference is too.
//   band  [STAGES][CG][BR][BC] — input rows ih0 .. ih0+BR-1 (ih0 = p0*SH-PH),
//         columns -PW .. -PW+BC-1, zero outside the image (written explicitly:
//         the gather needs no bounds checks).  BR = (TP-1)*SH + (R-1)*DH + 1,
//         BC = (Q-1)*SW + (S-1)*DW + 1.  Pixel m of the tile (row m/Q, col
//         m%Q) has pix(m) = (m/Q)*SH*BC + (m%Q)*SW (kept per lane in
//         bytes), and the A element (m, k) is band[pix(m) + koff(k)]: one
//         integer add per load; the largest index is exactly CG*BR*BC - 1.
//         tc rounds the band to TF32 once per tile (at store for STAGES 1;
//         for STAGES 2 in place, each element by the thread that copied it).
//
// Fragment mapping (PTX ISA, "Matrix Fragments for mma.m16n8k8", .tf32;
// g = lane>>2, t = lane&3; A 16x8 row-major, B 8x8 column-major, C 16x8):
//   a0 = A[g][t]  a1 = A[g+8][t]  a2 = A[g][t+4]  a3 = A[g+8][t+4]
//   b0 = B[t][g]  b1 = B[t+4][g]
//   c0 = C[g][2t] c1 = C[g][2t+1] c2 = C[g+8][2t] c3 = C[g+8][2t+1]
// so a lane gathers band[pix(m0)+ko.x], band[pix(m0+8)+ko.x],
// band[pix(m0)+ko.y], band[pix(m0+8)+ko.y] with m0 = 16*mt + g.  For stride-4
// pixels and 4 consecutive k on one filter row the 32 addresses are
// 4g + t + const: distinct banks.  The 8 lanes of one t store 8 consecutive
// pixels of one channel plane: 32-byte runs, written once (st.global.cs).
//
// Main loop: software-pipelined in registers.  While the mma of k-step ks
// run, the lane already holds the A/B fragments of ks+1 in flight and the
// k offsets of ks+2, so no LDS -> IADD -> LDS -> mma chain is exposed (the
// first version, without this, measured 24% tensor-pipe use on an H200).
// tc3 issues its three products term by term over all MW x NTW
// accumulators, so no mma waits on the one before it.
//
// Pipeline (STAGES 2, PERSIST > 0): the next tile's band is copied with
// cp.async (4-byte copies, zero-fill through src-size 0 at the padding) into
// the other buffer while this tile computes; one __syncthreads per tile
// before and one after the math.
//
// Limits (tc3): |x|, |w| above ~3.4e38 round to Inf in TF32, and an Inf
// operand gives NaN (Inf - Inf in the split) where IEEE fp32 gives Inf.
//
// The generator prepends the problem (CT_*), the parameters (TP BN WARPS WN
// STAGES PERSIST) and the plan's lines (CT_PLAN_*, CT_TC_SPLIT).  Without
// them the file compiles on its own: the headline problem, tc, default point.

// ----------------------------------------------------------------------------
// Problem (defaults: KernelBench level 1 problem 50)

#include "ct_problem.cuh"
#define CT_TAKES_GROUPS 1 // a CTA's channels lie in one group (ct_act.cuh)
#include "ct_act.cuh"

// ----------------------------------------------------------------------------
// Tunable parameters (generator/family_tc.c lists the values searched)

#ifndef TP
#define TP 2 // output rows per tile
#endif
#ifndef BN
#define BN 96 // output channels per CTA, a multiple of 8
#endif
#ifndef WARPS
#define WARPS 4 // warps per CTA
#endif
#ifndef WN
#define WN 4 // warps side by side along N (WARPS / WN along M)
#endif
#ifndef STAGES
#define STAGES 2 // input band buffers: 1, or 2 (cp.async double buffering)
#endif
#ifndef PERSIST
#define PERSIST 1 // 0: one tile per CTA; c >= 1: persistent, c CTAs per SM
#endif

// Set by the plan of family tc3: 1 = 3xTF32 (fp32 accuracy), 0 = TF32.
#ifndef CT_TC_SPLIT
#define CT_TC_SPLIT 0
#endif

// ----------------------------------------------------------------------------
// Derived quantities

#include "ct_ptx.cuh"
#include "ct_tc.cuh"

namespace tc {

CT_PROBLEM_CONSTANTS
constexpr bool SPLIT = CT_TC_SPLIT != 0;

// The layout, shared with generator/family_tc.c (ct_tc.cuh); a function,
// not a variable, so that no copy of it is emitted.
constexpr ct_tc_layout layout() {
  return ct_tc_layout_of(N, C, K, CT_GROUPS, R, S, P, Q, SH, SW, DH, DW, TP, BN, WARPS, WN,
                         STAGES);
}
constexpr int CG = C / CT_GROUPS, KG = K / CT_GROUPS; // channels per group, in and out
constexpr int THREADS = (int)layout().threads;
constexpr int NT = (int)layout().nt;      // n8 tiles per CTA
constexpr int WGM = (int)layout().wgm;    // warps along M
constexpr int NTW = (int)layout().ntw;    // n8 tiles per warp
constexpr int TM = (int)layout().tm;      // pixels per tile
constexpr int MT = (int)layout().mt;      // m16 tiles per tile
constexpr int MW = (int)layout().mw;      // m16 tiles per warp
constexpr int CRS = (int)layout().crs;
constexpr int KSTEPS = (int)layout().ksteps; // k8 steps
constexpr int KP = (int)layout().kp;      // padded reduction length
constexpr int BR = (int)layout().br;      // band rows
constexpr int BC = (int)layout().bc;      // band columns
constexpr int BAND = (int)layout().band;
constexpr int BAND_PAD = (int)layout().band_pad;
constexpr int WFRAG_FLOATS = KSTEPS * NT * 64;
constexpr int KOFF_INTS = KSTEPS * 8;
constexpr int SMEM_BYTES = (int)layout().smem;
static_assert(SMEM_BYTES == (WFRAG_FLOATS + KOFF_INTS + STAGES * BAND_PAD) * 4,
              "shared memory: weights, offsets, bands");
constexpr int TILES_PER_IMG = (P + TP - 1) / TP;
constexpr int NTILES = (int)layout().tiles;
constexpr int KBG = (int)layout().kbg;  // CTAs along N per group
constexpr int KBLOCKS = (int)layout().kblocks;
constexpr int PQ = P * Q;
constexpr int CHW = C * H * W;
constexpr int MINB = PERSIST > 0 ? PERSIST : 1;

CT_PROBLEM_CHECKS
static_assert(BN >= 8 && BN % 8 == 0, "BN: a multiple of 8");
static_assert(WARPS >= 1 && WN >= 1 && WARPS % WN == 0 && NT % WN == 0,
              "WN must divide WARPS and BN/8");
static_assert(WGM <= MT, "a warp without an m16 tile");
static_assert(TP >= 1 && (STAGES == 1 || STAGES == 2) && PERSIST >= 0,
              "TP >= 1, STAGES 1 or 2, PERSIST >= 0");
static_assert(STAGES == 1 || PERSIST > 0, "double buffering needs a persistent grid");
static_assert(SMEM_BYTES <= 232448, "shared memory above any device's 227 KB");
static_assert(KBLOCKS <= 65535, "grid.y above 65535");
// Sizes formed in int below (the family declines larger points first).
static_assert((long long)CG * BR * BC <= (1LL << 24) &&
              (long long)KSTEPS * NT * 64 <= (1LL << 24) &&
              (long long)BN * KP <= (1LL << 24) &&
              (long long)MT * 16 <= (1LL << 24) &&
              (long long)N * TILES_PER_IMG <= (1LL << 30),
              "tile sizes out of range"); // tile + gridDim.x stays below 2^31
// Accumulators (and with SPLIT their masters) must stay in registers.
static_assert(MW * NTW * 4 * (SPLIT ? 2 : 1) <= 128, "too many accumulators");

CT_PLAN_CHECKS_TILED
static_assert(PERSIST > 0 || CT_PLAN_GRID_X_IN(NTILES, NTILES),
              "plan: grid.x must be NTILES (PERSIST 0)");

// ----------------------------------------------------------------------------
// PTX helpers (and those of ct_ptx.cuh)

// d += A(16x8) * B(8x8), TF32 in, fp32 accumulate.  (CT_EMULATED: the CPU
// emulation's, tests/emu_kernel.cc.)
#ifndef CT_EMULATED
__device__ __forceinline__ void mma_tf32(float (&d)[4], unsigned a0, unsigned a1,
                                         unsigned a2, unsigned a3, unsigned b0,
                                         unsigned b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
      "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}
#endif

// ----------------------------------------------------------------------------
// Staging

// The band of tile (img, p0) into band[CG][BR][BC], from input channel c0
// (the CTA's group's first) on: warps take rows, lanes columns (coalesced).
// ASYNC: cp.async, raw values; else loaded, rounded to TF32 unless SPLIT,
// and stored.
template <bool ASYNC>
__device__ __forceinline__ void band_fill(float *band, const float *__restrict__ x,
                                          int img, int p0, int c0, int warp, int lane) {
  const int ih0 = p0 * SH - PH;
  const float *__restrict__ xn = x + img * CHW + c0 * H * W;
#pragma unroll 1
  for (int row = warp; row < CG * BR; row += WARPS) {
    const int c = row / BR;
    const int ih = ih0 + (row - c * BR);
    const bool row_in = (unsigned)ih < (unsigned)H;
    const float *__restrict__ xrow = xn + (c * H + (row_in ? ih : 0)) * W;
    float *drow = band + row * BC;
#pragma unroll 4
    for (int col = lane; col < BC; col += 32) {
      const int iw = col - PW;
      const bool in = row_in && (unsigned)iw < (unsigned)W;
      if constexpr (ASYNC) {
        cp_async4(drow + col, in ? xrow + iw : x, in);
      } else {
        const float v = in ? __ldg(xrow + iw) : 0.0f;
        drow[col] = SPLIT ? v : round_tf32(v);
      }
    }
  }
}

// TF32-rounds in place the elements this thread copied with band_fill<true>
// (its own cp.async writes are visible to it after cp_async_wait).
__device__ __forceinline__ void band_round_own(float *band, int warp, int lane) {
#pragma unroll 1
  for (int row = warp; row < CG * BR; row += WARPS) {
    float *drow = band + row * BC;
#pragma unroll 4
    for (int col = lane; col < BC; col += 32) drow[col] = round_tf32(drow[col]);
  }
}

// ----------------------------------------------------------------------------
// The main loop's pieces.  A k-step's fragments of one lane: A for its MW
// m16 tiles (rows g, g+8 x k = 8ks+t, 8ks+t+4), B for its NTW n8 tiles.
// Raw floats: TF32-rounded already (tc) or split at use (tc3).
struct Frag {
  float a[MW][4];
  float2 b[NTW];
};

// Loads the fragments of one k-step.  bandb is the band stage as bytes,
// pb[i][0|1] the byte offsets of this lane's pixels (rows g, g+8 of its i-th
// m16 tile), kb its byte offsets of k = 8ks+t and 8ks+t+4, wq its B entry of
// n8 tile wn*NTW of the step.  Every A address is one add.
__device__ __forceinline__ float lds_at(const char *bandb, int byte_off) {
  return *reinterpret_cast<const float *>(bandb + byte_off);
}

__device__ __forceinline__ void frag_load(Frag &f, const char *bandb,
                                          const int (&pb)[MW][2],
                                          const float2 *wq, int2 kb,
                                          bool last_live) {
#pragma unroll
  for (int j = 0; j < NTW; ++j) f.b[j] = wq[j * 32];
#pragma unroll
  for (int i = 0; i < MW; ++i) {
    if constexpr (MT % WGM != 0) {
      if (i == MW - 1 && !last_live) break; // warp-uniform: no such m16 tile
    }
    f.a[i][0] = lds_at(bandb, pb[i][0] + kb.x); // A[g][t]
    f.a[i][1] = lds_at(bandb, pb[i][1] + kb.x); // A[g+8][t]
    f.a[i][2] = lds_at(bandb, pb[i][0] + kb.y); // A[g][t+4]
    f.a[i][3] = lds_at(bandb, pb[i][1] + kb.y); // A[g+8][t+4]
  }
}

// The MW x NTW mma of one k-step (x3 with SPLIT, one term at a time over
// all accumulators: acc += al*bh, then ah*bl, then ah*bh).
__device__ __forceinline__ void frag_mma(float (&acc)[MW][NTW][4], const Frag &f,
                                         bool last_live) {
  constexpr bool kGuard = MT % WGM != 0;
  if constexpr (SPLIT) {
    unsigned bh[NTW][2], bl[NTW][2], ah[MW][4], al[MW][4];
#pragma unroll
    for (int j = 0; j < NTW; ++j) {
      split_tf32(f.b[j].x, bh[j][0], bl[j][0]);
      split_tf32(f.b[j].y, bh[j][1], bl[j][1]);
    }
#pragma unroll
    for (int i = 0; i < MW; ++i) {
      if (kGuard && i == MW - 1 && !last_live) break;
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        split_tf32(f.a[i][e], ah[i][e], al[i][e]);
      }
    }
#pragma unroll
    for (int term = 0; term < 3; ++term)
#pragma unroll
      for (int i = 0; i < MW; ++i) {
        if (kGuard && i == MW - 1 && !last_live) break;
        const unsigned(&a)[4] = term == 0 ? al[i] : ah[i];
#pragma unroll
        for (int j = 0; j < NTW; ++j) {
          const unsigned(&bb)[2] = term == 1 ? bl[j] : bh[j];
          mma_tf32(acc[i][j], a[0], a[1], a[2], a[3], bb[0], bb[1]);
        }
      }
  } else {
#pragma unroll
    for (int i = 0; i < MW; ++i) {
      if (kGuard && i == MW - 1 && !last_live) break;
#pragma unroll
      for (int j = 0; j < NTW; ++j)
        mma_tf32(acc[i][j], __float_as_uint(f.a[i][0]), __float_as_uint(f.a[i][1]),
                 __float_as_uint(f.a[i][2]), __float_as_uint(f.a[i][3]),
                 __float_as_uint(f.b[j].x), __float_as_uint(f.b[j].y));
    }
  }
}

// master += acc; acc = 0 (SPLIT only).
__device__ __forceinline__ void flush(float (&master)[MW][NTW][4],
                                      float (&acc)[MW][NTW][4]) {
#pragma unroll
  for (int i = 0; i < MW; ++i)
#pragma unroll
    for (int j = 0; j < NTW; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        master[i][j][e] += acc[i][j][e];
        acc[i][j][e] = 0.0f;
      }
}

// Writes a warp's results (+ bias) for tile (img, p0): pixel m valid when
// m < mlim, channel when < kend (the end of the CTA's group).
__device__ __forceinline__ void epilogue(const float (&res)[MW][NTW][4],
                                         const float *__restrict__ b,
                                         float *__restrict__ y, int img, int p0,
                                         int n0, int kend, int wm, int wn, int g, int t) {
  const int mlim = TM < (P - p0) * Q ? TM : (P - p0) * Q;
  float *__restrict__ yt = y + img * K * PQ + p0 * Q; // channel 0, pixel 0
#pragma unroll
  for (int j = 0; j < NTW; ++j) {
    const int k0 = n0 + (wn * NTW + j) * 8 + 2 * t; // channel of c0 / c2
    float bias0 = 0.0f, bias1 = 0.0f;
#if CT_BIAS
    if (k0 < kend) bias0 = __ldg(b + k0);
    if (k0 + 1 < kend) bias1 = __ldg(b + k0 + 1);
#else
    (void)b;
#endif
#pragma unroll
    for (int i = 0; i < MW; ++i) {
      const int mt = wm + i * WGM;
      if (mt >= MT) break;
#pragma unroll
      for (int hh = 0; hh < 2; ++hh) {
        const int m = mt * 16 + g + 8 * hh; // row g (c0, c1) or g+8 (c2, c3)
        if (m < mlim) {
          if (k0 < kend) __stcs(yt + k0 * PQ + m, ct_act(res[i][j][2 * hh] + bias0));
          if (k0 + 1 < kend)
            __stcs(yt + (k0 + 1) * PQ + m, ct_act(res[i][j][2 * hh + 1] + bias1));
        }
      }
    }
  }
}

} // namespace tc

// ----------------------------------------------------------------------------
// The kernel.  Launch: grid (CT_PLAN_GRID_X, G * ceil(K/G / BN)): blockIdx.y
// is the group times KBG plus the CTA's channel block in it; block (32*WARPS),
// CT_PLAN_SMEM bytes of dynamic shared memory.  Any grid.x in 1 .. NTILES is
// correct.  ws is unused.

extern "C" __global__ void __launch_bounds__(tc::THREADS, tc::MINB)
conv_tc(const float *__restrict__ x, const float *__restrict__ w,
        const float *__restrict__ b, float *__restrict__ y, float *ws) {
  using namespace tc;
  extern __shared__ float4 smem4[]; // float4: 16-byte aligned
  float *const smem = reinterpret_cast<float *>(smem4);
  float *const wsm = smem;                                         // wfrag
  int *const koff = reinterpret_cast<int *>(smem + WFRAG_FLOATS); // koff
  float *const band0 = smem + WFRAG_FLOATS + KOFF_INTS;           // bands
  (void)ws;

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, t = lane & 3;
  // wn fastest: with 8 warps, the two sharing an SM sub-partition (warp % 4)
  // get different wm, which evens out their m16 tile counts when WGM does
  // not divide MT.
  const int wn = warp % WN, wm = warp / WN;
  // The CTA's group: 0 without groups, so that the three below fold into
  // constants and an ungrouped kernel holds no register more for them.
  const int grp = CT_GROUPS > 1 ? (int)blockIdx.y / KBG : 0;
  const int n0 = grp * KG + (blockIdx.y - grp * KBG) * BN; // its first channel
  const int kend = (grp + 1) * KG;                       // past its group's last
  const int c0 = grp * CG;                               // the group's first input
  const int tile0 = blockIdx.x;
  if (tile0 >= NTILES) return; // never with a planned grid; uniform per CTA

  // The first band's copy overlaps the weight staging.
  if constexpr (STAGES == 2) {
    const int img = tile0 / TILES_PER_IMG;
    band_fill<true>(band0, x, img, (tile0 - img * TILES_PER_IMG) * TP, c0, warp, lane);
    cp_async_commit();
  }

  // Weights in B fragment order, read along KCRS (coalesced).
#pragma unroll 4
  for (int u = tid; u < BN * KP; u += THREADS) {
    const int nl = u / KP, k = u - nl * KP;
    const int kg = n0 + nl;
    const float v = (k < CRS && kg < kend) ? __ldg(w + kg * CRS + k) : 0.0f;
    const int ks = k >> 3, kk = k & 7;
    const int e = (((ks * NT + (nl >> 3)) * 32 + (nl & 7) * 4 + (kk & 3)) << 1) + (kk >> 2);
    wsm[e] = SPLIT ? v : round_tf32(v);
  }
  // k -> band offset in bytes, as int2 pairs (k = 8ks+t, 8ks+t+4) at [ks][t].
  for (int e = tid; e < KOFF_INTS; e += THREADS) {
    const int k = (e >> 3) * 8 + ((e >> 1) & 3) + 4 * (e & 1);
    int off = 0;
    if (k < CRS) {
      const int c = k / (R * S), rs = k - c * (R * S);
      const int r = rs / S, s = rs - r * S;
      off = c * BR * BC + r * DH * BC + s * DW;
    }
    koff[e] = off * 4; // bytes
  }

  // This lane's pixel offsets in the band, in bytes: rows g and g+8 of its
  // m16 tiles (0, a valid element, for pixels past the tile; never stored).
  int pb[MW][2];
#pragma unroll
  for (int i = 0; i < MW; ++i)
#pragma unroll
    for (int hh = 0; hh < 2; ++hh) {
      const int m = (wm + i * WGM) * 16 + g + 8 * hh;
      pb[i][hh] = m < TM ? ((m / Q) * SH * BC + (m % Q) * SW) * 4 : 0;
    }
  const bool last_live = wm + (MW - 1) * WGM < MT; // warp-uniform

  const float2 *const wq0 = reinterpret_cast<const float2 *>(wsm) + wn * NTW * 32 + lane;
  const int2 *const kq0 = reinterpret_cast<const int2 *>(koff) + t;

  int stage = 0;
#pragma unroll 1
  for (int tile = tile0; tile < NTILES; tile += gridDim.x) {
    const int img = tile / TILES_PER_IMG;
    const int p0 = (tile - img * TILES_PER_IMG) * TP;
    float *const band = band0 + stage * BAND_PAD;

    if constexpr (STAGES == 2) {
      // Prefetch the next tile into the other buffer (freed by the barrier
      // that ended the previous iteration); always commit so that
      // wait_group<1> means "this tile's copies are done".
      const int next = tile + gridDim.x;
      if (next < NTILES) {
        const int nimg = next / TILES_PER_IMG;
        band_fill<true>(band0 + (stage ^ 1) * BAND_PAD, x, nimg,
                        (next - nimg * TILES_PER_IMG) * TP, c0, warp, lane);
      }
      cp_async_commit();
      cp_async_wait<1>();
      if constexpr (!SPLIT) band_round_own(band, warp, lane);
      __syncthreads(); // band (and on the first tile wfrag, koff) visible
    } else {
      __syncthreads(); // the previous tile's math is done with the band
      band_fill<false>(band, x, img, p0, c0, warp, lane);
      __syncthreads();
    }

    const char *const bandb = reinterpret_cast<const char *>(band);
    float acc[MW][NTW][4];
    float master[MW][NTW][4]; // SPLIT only
#pragma unroll
    for (int i = 0; i < MW; ++i)
#pragma unroll
      for (int j = 0; j < NTW; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[i][j][e] = master[i][j][e] = 0.0f;

    // Steps ks, ks+1 per iteration.  Invariant at the top: fa holds the
    // fragments of step ks, kbn the k offsets of step ks+1 (clamped).
    Frag fa, fb;
    frag_load(fa, bandb, pb, wq0, kq0[0], last_live);
    int2 kbn = kq0[(KSTEPS > 1 ? 1 : 0) * 4];
    int ks = 0;
#pragma unroll 1
    for (; ks + 2 < KSTEPS; ks += 2) {
      frag_load(fb, bandb, pb, wq0 + (ks + 1) * NT * 32, kbn, last_live);
      kbn = kq0[(ks + 2) * 4];
      frag_mma(acc, fa, last_live);
      frag_load(fa, bandb, pb, wq0 + (ks + 2) * NT * 32, kbn, last_live);
      kbn = kq0[(ks + 3 < KSTEPS ? ks + 3 : KSTEPS - 1) * 4];
      frag_mma(acc, fb, last_live);
      if constexpr (SPLIT) flush(master, acc);
    }
    if (ks + 1 < KSTEPS) { // two steps left
      frag_load(fb, bandb, pb, wq0 + (ks + 1) * NT * 32, kbn, last_live);
      frag_mma(acc, fa, last_live);
      frag_mma(acc, fb, last_live);
    } else { // one step left
      frag_mma(acc, fa, last_live);
    }
    if constexpr (SPLIT) flush(master, acc);

    if constexpr (SPLIT)
      epilogue(master, b, y, img, p0, n0, kend, wm, wn, g, t);
    else
      epilogue(acc, b, y, img, p0, n0, kend, wm, wn, g, t);

    if constexpr (STAGES == 2) {
      __syncthreads(); // everyone is done with this band before it is refilled
      stage ^= 1;
    }
  }
}
