// conv_wgr.cu — family "wgr": the convolution as an implicit GEMM on
// Hopper's wgmma (wgmma.mma_async.sync.aligned.m64nNk8.f32.tf32.tf32,
// sm_90a only) with the roles of conv_wg's operands swapped: A = the
// weights, held in registers for the CTA's whole life, B = the pixels, read
// by the tensor cores from the input band in shared memory by descriptor.
// For problems with stride 4 along the width and no dilation there (as
// conv_wgs): then a band row stored as plain floats already is the im2col
// matrix, four taps at a time.
//
// Why: conv_wg's main loop gathers A through shared memory (4 loads per
// thread and k-step, bank conflicts, an offset table) beside the tensor
// cores' reads of B, and runs at about half the matrix rate; conv_wgs reads
// both operands from shared memory (5 KB per m64n96k8).  Here a consumer
// warpgroup's main loop is its wgmma instructions alone, the tensor cores
// read only B from shared memory for most k-steps (32 bytes per pixel and
// k-step), and the input traffic is a third warpgroup's.  The price: M =
// output channels in m64 tiles (96 channels take two, a quarter of the
// products wasted) and 4 registers per k-step and thread for the weights.
//
//   GEMM view   M = output channels: consumer warpgroup v of the CTA holds
//               channels n0+64v .. n0+64v+63 (n0 = 128*blockIdx.y) as its A:
//               the m64nNk8 fragments of k-steps 0 .. KR-1 in registers, of
//               the rest in shared memory (TF32-rounded, ties away: see
//               to_tf32_rna); N = NPX pixels of one output row (a "unit":
//               the row's U pixel tiles are U units); K = taps in quads as
//               in conv_wgs: quad (c, r, sg) holds taps s = 4sg .. 4sg+3 of
//               input channel c, kernel row r (SG = ceil(S/4) quads per
//               row, taps past S weight 0); k-step
//               ks = quads 2ks and 2ks+1 (one of weight 0 past the last), the
//               one at the lower address first (LBO is unsigned).
//   band        a ring of input rows per channel, [C][RB + SPAN - 1][BCP]
//               floats: the input row at ring position pos (the CTA numbers
//               the rows it loads 0, 1, ...) sits in slot pos % RB and, when
//               that slot is below SPAN - 1, also in slot RB + pos % RB, so
//               that the SPAN = (R-1)*DH + 1 rows of any output row's window
//               are consecutive slots.  Input column iw at float iw + PW of
//               its row, zero outside the image, TF32-rounded (to_tf32: to
//               nearest, ties to even).  BCP = 4*(U*NPX + SG - 1) covers
//               every pixel's quads.
//   B           for a unit (output row with window at slot w0, pixel tile
//               pt) and quad (c, r, sg): pixel q = NPX*pt + n reads floats
//               4(q+sg) .. 4(q+sg)+3 of row (c, w0 + r*DH): 8 pixels are one
//               128-byte core matrix (K-major), the next 8 are 128 bytes on
//               (SBO 128), the k-step's second quad LBO bytes from its first.
//   staging     [NLD][128] float4: each producer thread's cp.async targets
//               (16-byte aligned), rounded into the band by the same thread
//               (with RL, only windows of more than one pass use it).
//   slabs       [2][64][OSP] floats: a consumer's outputs of one unit on
//               their way to y, each warp its 16 rows (see slab_put).
//   A           [2][KSTEPS-KR][512] floats: the consumers' weights of the
//               k-steps past KR, K-major core matrices.
//   then the CTA's biases, the B addresses of four units, the mbarriers.
//
// Non-finite inputs: as conv_wgs, a quad's taps past S (weight 0) read the
// band floats of the next columns; 0 * inf is NaN, so an infinite or NaN
// input can make NaN of up to SG*4-S outputs to the left of those the
// convolution makes non-finite.  Finite inputs give the convolution as
// specified.
//
// Work decomposition: a persistent grid; CTA b takes the output rows
// [b*ROWS/G, (b+1)*ROWS/G) of all images in order (G = gridDim.x, ROWS =
// N*P), so consecutive rows share SPAN - SH of their input rows.  Three
// warpgroups, the registers shared out by setmaxnreg (CONSUMER_REGS,
// PRODUCER_REGS):
//   consumers 0 and 1 take every unit, in turns on the tensor cores
//     (consumer 0's wgmma of unit t, then consumer 1's, then consumer 0's
//     of t+1, ...; named barriers as conv_wg's PP); after handing its turn
//     over, a consumer waits for its wgmma, signals done[t], and writes its
//     outputs (+ bias) through its slab rows, along output rows.
//   the producer keeps the band two units ahead: for unit t+2 (after both
//     consumers' done[t-1]: units up to t-1 have read the band) it rounds
//     the new input rows, loaded one unit earlier, into the ring, publishes
//     the unit's B address and signals ready[t+2]; then it starts the loads
//     of the next row and hints the L2 to fetch the rows PF rows after
//     that.  The loads: with RL, when a row's new input rows take one pass
//     of the producer's threads, into its registers (ld.global, KPR float4
//     per thread); else by cp.async into the staging.  The ring has RB
//     slots (see RB), so the rows stored for unit t+2 overwrite none that
//     units t and t+1 read.
//
// The generator prepends the problem (CT_*), the parameters U, LP, RL and
// the plan's lines (CT_PLAN_*).  Without them the file compiles on its own
// (sm_90a): the headline problem.

#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
#error "conv_wgr.cu needs the arch-specific target sm_90a (wgmma)"
#endif

#include "ct_problem.cuh"
#include "ct_act.cuh"

#ifndef U
#define U 1 // pixel tiles (units) per output row
#endif
#ifndef LP
#define LP 10 // producer threads per input row
#endif
#ifndef RL
#define RL 1 // 1: a window's new rows of one pass through the producer's registers
#endif
// Registers per thread after the producer warpgroup gives its share to
// the two consumers (setmaxnreg): the CTA holds 384 x 168 (65536/384 in
// multiples of 8) = 2*128*232 + 128*40, or with RL 2*128*216 + 128*72 (the
// producer holds a window's runs); a consumer asking for more than the
// others leave would wait forever.
#if RL
#define CONSUMER_REGS 216
#define PRODUCER_REGS 72
#else
#define CONSUMER_REGS 232
#define PRODUCER_REGS 40
#endif

#include "ct_ptx.cuh"
#include "ct_wgmma.cuh"

namespace wgr {

CT_PROBLEM_CONSTANTS

constexpr int THREADS = 384;                       // three warpgroups
constexpr int PTHREADS = 128;                      // the producer warpgroup's
constexpr int BN = 128;                            // output channels per CTA
constexpr int NPX = 8 * ((Q + 8 * U - 1) / (8 * U)); // pixels per unit = the wgmma N
constexpr int NACC = NPX / 2;                      // accumulators per thread
constexpr int SG = (S + 3) / 4;                    // quads per kernel row
constexpr int NQ = C * R * SG;                     // quads with weights
constexpr int KSTEPS = (NQ + 1) / 2;               // k8 steps
// k-steps whose weights a consumer holds in registers (A from registers);
// the rest it reads from shared memory (A by descriptor), so that weights,
// accumulators and the loop's KR_SPARE other registers fit CONSUMER_REGS.
constexpr int KR_SPARE = 32;
constexpr int KR = (CONSUMER_REGS - NACC - KR_SPARE) / 4 < KSTEPS
                       ? (CONSUMER_REGS - NACC - KR_SPARE) / 4 : KSTEPS;
constexpr int KS_SM = KSTEPS - KR;                 // k-steps with A from shared memory
constexpr int SPAN = (R - 1) * DH + 1;             // input rows of one output row
constexpr int NEWR = SH < SPAN ? SH : SPAN;        // rows a row adds to the previous window
// Ring slots per channel: more than the positions two row advances and a
// window span (see "Work decomposition"); an advance is NEWR rows, SPAN at
// an image's first row, and with P >= 2 no two consecutive rows both start
// an image.
constexpr int RB = P >= 2 ? 2 * SPAN + NEWR : 3 * SPAN;
constexpr int CROWS = RB + SPAN - 1;               // slots per channel with the mirror
constexpr int BCP = 4 * (U * NPX + SG - 1);        // band row pitch, floats
constexpr int BAND = C * CROWS * BCP;
constexpr int RUNS = (W + 3) / 4;                  // runs of 4 floats per input row
// The producer's copies: LPR threads per input row, RPP rows per pass (the
// producer threads past RPP*LPR idle), KPR runs per thread and row, NLD
// staging chunks per thread (the most a fresh window needs).
constexpr int LPR = LP;
constexpr int RPP = PTHREADS / LPR;
constexpr int KPR = (RUNS + LPR - 1) / LPR;
constexpr int NLD = (C * SPAN + RPP - 1) / RPP * KPR;
// With RL, a window whose new rows take one pass (C*nnew <= RPP) is loaded
// into the producer's registers, KPR float4 per thread, one unit ahead
// (rows_load, rows_put); the others (RL 0: all) go through the staging by
// cp.async (rows_copy, rows_store), whose loops RL unrolls less (the
// registers of the runs stay live through them).
constexpr int KPR_REG = 6; // the most runs per thread RL keeps in registers
constexpr int STG_UNROLL = RL ? 1 : 2;
constexpr int PF = 2; // rows between a copy and the L2 prefetch issued with it
// 2 KB before the mbarriers, as conv_wgs: compute-sanitizer checks a wgmma
// operand as contiguous bytes from its start address.
constexpr int SLACK = 512;
// Output slab pitch: 8 or 24 mod 32, so that a half-warp's 64-bit stores
// (rows g = 0..3, columns 2t) hit 32 banks.
constexpr int OSP = NPX + (NPX % 16 == 0 ? 8 : 0);
constexpr int SLAB = 64 * OSP;                     // one warpgroup's unit
constexpr int NBAR = 4 + 2 * 4;                    // mbarriers: ready[4], done[2][4]
// Floats: band, staging, slabs, both consumers' A in shared memory, the
// CTA's biases, the units' B addresses (4), padding to 8 bytes; SLACK; then
// the mbarriers.
constexpr int ASM = 2 * KS_SM * 512;
constexpr int SMEM_FLOATS = (BAND + NLD * PTHREADS * 4 + 2 * SLAB + ASM + BN + 4 + 1) / 2 * 2;
constexpr int SMEM_BYTES = (SMEM_FLOATS + SLACK) * 4 + NBAR * 8;
constexpr int ROWS = N * P;
constexpr int KBLOCKS = (K + BN - 1) / BN;
constexpr int NTILES = ROWS; // grid.x: at most one CTA per output row
constexpr int PQ = P * Q;
// Input columns past the band row (never read by an output) are dropped.
constexpr bool CLIP = PW + W > BCP;

CT_PROBLEM_CHECKS
static_assert(SW == 4 && DW == 1, "wgr: stride 4 along the width, no dilation there");
static_assert(U >= 1 && NPX >= 8 && NPX <= 64, "NPX: 8 .. 64 pixels per unit");
static_assert(U * NPX >= Q && (U - 1) * NPX < Q, "every unit holds pixels");
static_assert(KR >= 1, "no k-step fits the registers");
static_assert(LP >= 1 && LP <= PTHREADS, "LP: 1 .. 128 producer threads per input row");
static_assert(!RL || (KPR <= KPR_REG && C * NEWR <= RPP),
              "RL: a row's new input rows in one load round, at most KPR_REG runs per thread");
static_assert(2 * 128 * CONSUMER_REGS + 128 * PRODUCER_REGS <= THREADS * ((65536 / THREADS) & ~7),
              "setmaxnreg: more registers than the CTA holds");
static_assert(4 * (U * NPX - 1) + 4 * SG <= BCP, "band row too short");
static_assert(SMEM_BYTES <= 232448, "shared memory above any device's 227 KB");
static_assert(SMEM_BYTES < (1 << 18), "beyond the descriptors' reach");
static_assert(KBLOCKS <= 65535, "grid.y above 65535");

CT_PLAN_CHECKS_TILED

// Quad qd's first float relative to the window's first row, for quads past
// NQ (weight 0) quad 0's.
__host__ __device__ constexpr int quad_off(int qd) {
  return qd >= NQ ? 0 : ((qd / (R * SG)) * CROWS + ((qd / SG) % R) * DH) * BCP + (qd % SG) * 4;
}
// Whether k-step ks's quads are held swapped (the second at the lower
// address first): only when the first is a padding quad.
__host__ __device__ constexpr bool step_swapped(int ks) {
  return quad_off(2 * ks + 1) < quad_off(2 * ks);
}

typedef unsigned long long u64;

// The wgmma of one warpgroup over one unit: KSTEPS steps issued back to
// back as one group; d0 is B's descriptor at the window's quad 0 (SBO 128,
// LBO filled per step).
// (k-steps KR on: A from shared memory at descriptor a0 + (KS-KR)*128.)
template <int KS>
__device__ __forceinline__ void issue(float (&acc)[NACC], const unsigned (&wr)[KR][4], u64 d0,
                                      u64 a0) {
  if constexpr (KS < KSTEPS) {
    constexpr int o0 = quad_off(2 * KS), o1 = quad_off(2 * KS + 1);
    constexpr int lo = o1 >= o0 ? o1 - o0 : o0 - o1;
    constexpr int first = o1 >= o0 ? o0 : o1;
    constexpr u64 dstep = ((u64)(first * 4 >> 4)) | ((u64)((lo * 4 >> 4) & 0x3FFF) << 16);
    if constexpr (KS < KR) CtWgmmaRS<NPX>::run(acc, wr[KS], d0 + dstep, KS != 0);
    else CtWgmmaSS<NPX>::run(acc, a0 + (u64)((KS - KR) * 128), d0 + dstep, KS != 0);
    issue<KS + 1>(acc, wr, d0, a0);
  }
}

// The rows of the window of output row gr (image img, row oh) that the ring
// does not hold yet: all SPAN when the row is the CTA's first or its
// image's first (fresh), else the last NEWR.
struct RowLoad {
  int img, oh, nnew, pos0; // pos0: ring position of the window's first row
};

// Calls f(m, c, i, ih) for this producer thread's rows of rl's NNEW new
// rows: groups of LPR threads take input rows (group lr: rows lr, lr+RPP,
// ... of the C x NNEW, in at most NPASS passes), m the pass, c the
// channel, i the row's place among the new rows, ih its input row.
template <int NNEW, int NPASS, class F>
__device__ __forceinline__ void for_new_rows(const RowLoad &rl, int tid, F &&f) {
  constexpr int PASSES = (C * NNEW + RPP - 1) / RPP < NPASS ? (C * NNEW + RPP - 1) / RPP : NPASS;
  const int lr = tid / LPR;
  if (lr >= RPP) return;
#pragma unroll 1
  for (int m = 0; m < PASSES; ++m) {
    const int row = lr + RPP * m;
    if (row >= C * NNEW) break;
    const int c = row / NNEW, i = row - c * NNEW;
    f(m, c, i, rl.oh * SH - PH + (SPAN - NNEW) + i);
  }
}
// f(IntC<SPAN>) for a fresh window, else f(IntC<NEWR>): the row counts as
// compile-time constants.
template <int V> struct IntC {
  static constexpr int value = V;
};
template <class F> __device__ __forceinline__ void with_nnew(const RowLoad &rl, F &&f) {
  if (rl.nnew == SPAN) f(IntC<SPAN>());
  else f(IntC<NEWR>());
}

// The group's threads take runs lk, lk+LPR, ... of a row; run k of pass m
// goes to staging chunk (m*KPR + k) of the thread.  rows_copy: the new
// rows of rl copied by cp.async (rows outside the image as zeros) ...
__device__ __forceinline__ void rows_copy(float4 *stg, const float *__restrict__ x,
                                          const RowLoad &rl, int tid, bool vec) {
  const int lk = tid % LPR;
  with_nnew(rl, [&](auto nn) {
    for_new_rows<decltype(nn)::value, RPP>(rl, tid, [&](int m, int c, int, int ih) {
      const bool in = (unsigned)ih < (unsigned)H;
      const float *src = x + ((rl.img * C + c) * H + (in ? ih : 0)) * W;
#pragma unroll STG_UNROLL
      for (int k = 0; k < KPR; ++k) {
        const int run = lk + LPR * k;
        if (run >= RUNS) break;
        float *dst = reinterpret_cast<float *>(stg + PTHREADS * (m * KPR + k) + tid);
        if (vec) {
          const unsigned saddr = (unsigned)__cvta_generic_to_shared(dst);
          asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(saddr),
                       "l"(src + 4 * run), "r"(in ? 16u : 0u)
                       : "memory");
        } else {
#pragma unroll
          for (int e = 0; e < 4; ++e) cp_async4(dst + e, src + 4 * run + e, in && 4 * run + e < W);
        }
      }
    });
  });
}

// One run (floats 4run .. 4run+3 of an input row, v) TF32-rounded into
// the band row drow (input column 0 at drow[0]) and, with mirror, into its
// mirror slot: the columns below W that the row keeps.
__device__ __forceinline__ void store_run(float *drow, int run, bool mirror, float4 v) {
  const float e[4] = {round_tf32(v.x), round_tf32(v.y), round_tf32(v.z), round_tf32(v.w)};
  float *d = drow + 4 * run;
  if (PW % 2 == 0 && 4 * run + 3 < W && (!CLIP || PW + 4 * run + 3 < BCP)) {
    // The whole run, 8-byte aligned (rows are 16-byte aligned, PW even).
    const float2 lo = make_float2(e[0], e[1]), hi = make_float2(e[2], e[3]);
    *reinterpret_cast<float2 *>(d) = lo;
    *reinterpret_cast<float2 *>(d + 2) = hi;
    if (mirror) {
      *reinterpret_cast<float2 *>(d + RB * BCP) = lo;
      *reinterpret_cast<float2 *>(d + RB * BCP + 2) = hi;
    }
  } else {
#pragma unroll
    for (int q = 0; q < 4; ++q)
      if (4 * run + q < W && (!CLIP || PW + 4 * run + q < BCP)) {
        d[q] = e[q];
        if (mirror) d[q + RB * BCP] = e[q];
      }
  }
}

// The band row of new row i of channel c of window rl, and whether its
// slot has a mirror.
__device__ __forceinline__ float *new_row_dst(float *band, const RowLoad &rl, int nnew, int c,
                                              int i, bool &mirror) {
  const int slot = (rl.pos0 + (SPAN - nnew) + i) % RB;
  mirror = slot < SPAN - 1;
  return band + (c * CROWS + slot) * BCP + PW;
}

// ... rows_store: once they have landed, stored TF32-rounded into their
// ring slots (and mirror slots) ...
__device__ __forceinline__ void rows_store(float *band, const float4 *stg, const RowLoad &rl,
                                           int tid) {
  const int lk = tid % LPR;
  with_nnew(rl, [&](auto nn) {
    constexpr int NNEW = decltype(nn)::value;
    for_new_rows<NNEW, RPP>(rl, tid, [&](int m, int c, int i, int) {
      bool mirror;
      float *const drow = new_row_dst(band, rl, NNEW, c, i, mirror);
#pragma unroll STG_UNROLL
      for (int k = 0; k < KPR; ++k) {
        const int run = lk + LPR * k;
        if (run >= RUNS) break;
        store_run(drow, run, mirror, stg[PTHREADS * (m * KPR + k) + tid]);
      }
    });
  });
}

// With RL, a window of one pass: rows_load puts this thread's runs
// of the new rows into v (zeros for runs past the row and rows outside
// the image), rows_put stores them as rows_store does.
struct RegRuns {
  float4 v[RL ? KPR : 1];
};
__device__ __forceinline__ void rows_load(RegRuns &r, const float *__restrict__ x,
                                          const RowLoad &rl, int tid, bool vec) {
  const int lk = tid % LPR;
  with_nnew(rl, [&](auto nn) {
    for_new_rows<decltype(nn)::value, 1>(rl, tid, [&](int, int c, int, int ih) {
      const bool in = (unsigned)ih < (unsigned)H;
      const float *src = x + ((rl.img * C + c) * H + (in ? ih : 0)) * W + 4 * lk;
      if (vec) {
#pragma unroll
        for (int k = 0; k < KPR; ++k)
          r.v[k] = in && lk + LPR * k < RUNS
                       ? __ldg(reinterpret_cast<const float4 *>(src + 4 * LPR * k))
                       : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      } else {
#pragma unroll
        for (int k = 0; k < KPR; ++k) {
          float e[4];
#pragma unroll
          for (int q = 0; q < 4; ++q)
            e[q] = in && 4 * (lk + LPR * k) + q < W ? __ldg(src + 4 * LPR * k + q) : 0.0f;
          r.v[k] = make_float4(e[0], e[1], e[2], e[3]);
        }
      }
    });
  });
}
__device__ __forceinline__ void rows_put(float *band, const RegRuns &r, const RowLoad &rl,
                                         int tid) {
  const int lk = tid % LPR;
  with_nnew(rl, [&](auto nn) {
    constexpr int NNEW = decltype(nn)::value;
    for_new_rows<NNEW, 1>(rl, tid, [&](int, int c, int i, int) {
      bool mirror;
      float *const drow = new_row_dst(band, rl, NNEW, c, i, mirror);
#pragma unroll
      for (int k = 0; k < KPR; ++k)
        if (lk + LPR * k < RUNS) store_run(drow, lk + LPR * k, mirror, r.v[k]);
    });
  });
}

// ... and rows_prefetch: the L2 hinted to fetch the first pass of them (a
// row's 128-byte lines by its group's threads), so that their copy, some
// units later, finds them there.
__device__ __forceinline__ void rows_prefetch(const float *__restrict__ x, const RowLoad &rl,
                                              int tid) {
  const int lk = tid % LPR;
  with_nnew(rl, [&](auto nn) {
    for_new_rows<decltype(nn)::value, 1>(rl, tid, [&](int, int c, int, int ih) {
      if ((unsigned)ih < (unsigned)H)
        for (int l = lk; l * 32 < W; l += LPR)
          asm volatile("prefetch.global.L2 [%0];\n" ::"l"(x + ((rl.img * C + c) * H + ih) * W + 32 * l));
    });
  });
}

// A window's new rows loaded (into registers or the staging), and stored
// into the band once they have landed.
__device__ __forceinline__ bool one_pass(const RowLoad &rl) { return RL && C * rl.nnew <= RPP; }
__device__ __forceinline__ void window_load(RegRuns &r, float4 *stg, const float *__restrict__ x,
                                            const RowLoad &rl, int tid, bool vec) {
  if (one_pass(rl)) {
    rows_load(r, x, rl, tid, vec);
  } else {
    rows_copy(stg, x, rl, tid, vec);
    cp_async_commit();
  }
}
__device__ __forceinline__ void window_store(float *band, const RegRuns &r, const float4 *stg,
                                             const RowLoad &rl, int tid) {
  if (one_pass(rl)) {
    rows_put(band, r, rl, tid);
  } else {
    cp_async_wait<0>();
    rows_store(band, stg, rl, tid);
  }
}

// A consumer warpgroup's outputs of one unit into its slab: d[4j+2h+e]
// (channel 16wq+g+8h of the warpgroup, pixel 8j+2t+e) at
// slab[(16wq+g+8h)*OSP + 8j+2t+e].
__device__ __forceinline__ void slab_put(const float (&acc)[NACC], float *slab, int wq, int g,
                                         int t) {
#pragma unroll
  for (int hh = 0; hh < 2; ++hh) {
    float *o = slab + (16 * wq + g + 8 * hh) * OSP + 2 * t;
#pragma unroll
    for (int j = 0; j < NPX / 8; ++j)
      *reinterpret_cast<float2 *>(o + 8 * j) = make_float2(acc[4 * j + 2 * hh], acc[4 * j + 2 * hh + 1]);
  }
}

// A consumer warp's writes of its rows of the slab, channels 16wq ..
// 16wq+15 of the warpgroup (+ the biases bs of the warpgroup's channels),
// those below nch: its lanes take pixels 0 .. nq-1 along the output row
// (consecutive lanes, consecutive pixels).  yc: the output row of the
// warpgroup's first channel.
__device__ __forceinline__ void slab_write(const float *slab, const float *bs,
                                           float *__restrict__ yc, int nch, int nq, int wq,
                                           int lane) {
  // 8 rows at a time: their values into registers first, then the stores,
  // predicated, a row's pixels one after another.  The loads overlap, and
  // no store sits behind a branch of its own (what NVRTC made of a loop
  // that left at the first row past nch: 0.31 ms for U = 1, 0.25 ms now).
  constexpr int NQH = (NPX + 31) / 32;
#pragma unroll
  for (int r0 = 16 * wq; r0 < 16 * wq + 16; r0 += 8) {
    float v[8][NQH];
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const float bc = bs[r0 + i];
#pragma unroll
      for (int h = 0; h < NQH; ++h) {
        const int q = 32 * h + lane;
        v[i][h] = q < NPX ? ct_act(slab[(r0 + i) * OSP + q] + bc) : 0.0f;
      }
    }
#pragma unroll
    for (int i = 0; i < 8; ++i)
#pragma unroll
      for (int h = 0; h < NQH; ++h)
        if (r0 + i < nch && 32 * h + lane < nq) __stcs(yc + (r0 + i) * PQ + 32 * h + lane, v[i][h]);
  }
}

// The CTA's units, (re - rb) * U: computed by each warpgroup after its
// setmaxnreg from the special registers read afresh, so that the count
// does not live across the register reallocation (a spill there, for some
// points, otherwise).
__device__ __forceinline__ int cta_units() {
  unsigned bx, gx;
  asm volatile("mov.u32 %0, %%ctaid.x;\n" : "=r"(bx));
  asm volatile("mov.u32 %0, %%nctaid.x;\n" : "=r"(gx));
  const int rb = (int)((long long)bx * ROWS / gx), re = (int)((long long)(bx + 1) * ROWS / gx);
  return (re - rb) * U;
}

} // namespace wgr

// ----------------------------------------------------------------------------
// The kernel.  Launch: grid (CT_PLAN_GRID_X, ceil(K/128)), block 384,
// CT_PLAN_SMEM bytes of dynamic shared memory.  Any grid.x in 1 .. N*P is
// correct.  ws is unused.

extern "C" __global__ void __launch_bounds__(wgr::THREADS, 1)
conv_wgr(const float *__restrict__ x, const float *__restrict__ w,
         const float *__restrict__ b, float *__restrict__ y, float *ws) {
  using namespace wgr;
  extern __shared__ float4 smem4[];
  float *const band = reinterpret_cast<float *>(smem4);
  float4 *const stg = smem4 + BAND / 4;
  static_assert(BAND % 4 == 0, "staging 16-byte aligned");
  float *const slabs = reinterpret_cast<float *>(stg + NLD * PTHREADS); // [2 wg][SLAB]
  float *const asm_ = slabs + 2 * SLAB;                                  // [2 wg][KS_SM][512]
  float *const bsm = asm_ + ASM;                                         // [BN] biases
  unsigned *const uaddr = reinterpret_cast<unsigned *>(bsm + BN);        // [4] unit u's B address
  unsigned long long *const bars =
      reinterpret_cast<unsigned long long *>(smem4) + (SMEM_FLOATS + SLACK) / 2;
  unsigned long long *const ready = bars;      // [4]: unit u's band, u % 4
  unsigned long long *const done = bars + 4;   // [2 wg][4]: unit u's wgmma retired, u % 4
  (void)ws;

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int wgi = warp >> 2, wq = warp & 3;
  const int rb = (int)((long long)blockIdx.x * ROWS / gridDim.x);
  const int re = (int)((long long)(blockIdx.x + 1) * ROWS / gridDim.x);
  if ((int)blockIdx.x >= NTILES || rb >= re) return; // never with a planned grid

  // The band zero (columns outside the input stay so); the biases; the
  // mbarriers.
  for (int e = tid; e < BAND; e += THREADS) band[e] = 0.0f;
  stage_bias(bsm, b, blockIdx.y * BN, BN, K, tid, THREADS);
  if (tid == 0) {
    for (int i = 0; i < 4; ++i) mbar_init(ready + i, PTHREADS);
    for (int i = 0; i < 8; ++i) mbar_init(done + i, 128);
  }
  __syncthreads();

  // The window of the CTA's first row; advance: the next output row's, SH
  // rows on, or a fresh one in the next image.
  RowLoad cur;
  cur.img = rb / P;
  cur.oh = rb - cur.img * P;
  cur.nnew = SPAN;
  cur.pos0 = 0;
  const auto advance = [](RowLoad &rl) {
    ++rl.oh;
    const bool fresh = rl.oh == P;
    if (fresh) {
      rl.oh = 0;
      ++rl.img;
    }
    rl.pos0 += fresh ? SPAN : NEWR;
    rl.nnew = fresh ? SPAN : NEWR;
  };

  if (wgi == 2) {
    // The producer (see "Work decomposition"): the windows of units 0 and
    // 1, then per unit t the window of unit t+2 and the copy of the row
    // after it.
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(PRODUCER_REGS));
    const int T = cta_units();
    const int ptid = tid - 256;
    const bool vec = W % 4 == 0 && ((unsigned long long)x & 15) == 0;
    RegRuns rr;
    RowLoad cp = cur, st = cur;
    window_load(rr, stg, x, cur, ptid, vec);
    window_store(band, rr, stg, cur, ptid);
    if (U == 1 && T > 1) { // unit 1's row
      advance(cp);
      window_load(rr, stg, x, cp, ptid, vec);
      advance(st);
      window_store(band, rr, stg, st, ptid);
    }
    fence_proxy_async(); // the band's stores -> the wgmma (async proxy)
    // Unit u's B address: its row's window, its pixel tile.
    const unsigned band_sa = (unsigned)__cvta_generic_to_shared(band);
    const auto unit_addr = [&](const RowLoad &rl, int pt) {
      return band_sa + (unsigned)(((rl.pos0 % RB) * BCP + pt * NPX * 4) * 4);
    };
    if (ptid == 0) {
      uaddr[0] = unit_addr(cur, 0);
      if (T > 1) uaddr[1] = unit_addr(U == 1 ? st : cur, U == 1 ? 0 : 1);
    }
    mbar_arrive(ready + 0);
    if (T > 1) mbar_arrive(ready + 1);
    if (T > 2 && 2 % U == 0) { // unit 2's row
      advance(cp);
      window_load(rr, stg, x, cp, ptid, vec);
    }
    // Prefetched into the L2 with each copy: the row PF rows after it.
    RowLoad pf = cp;
    for (int k = 0; k < PF; ++k) advance(pf);
#pragma unroll 1
    for (int un = 0; un < T; ++un) {
      // Both consumers' wgmma of unit un-1 retired: the rows of unit un+2
      // may overwrite what units before un read.
      if (un >= 1)
#pragma unroll
        for (int c = 0; c < 2; ++c) mbar_wait(done + 4 * c + (un - 1) % 4, ((un - 1) >> 2) & 1);
      if (un + 2 < T) {
        if ((un + 2) % U == 0) {
          advance(st);
          window_store(band, rr, stg, st, ptid);
          fence_proxy_async();
        }
        if (ptid == 0) uaddr[(un + 2) % 4] = unit_addr(st, (un + 2) % U);
        mbar_arrive(ready + (un + 2) % 4);
      }
      if (un + 3 < T && (un + 3) % U == 0) {
        advance(cp);
        window_load(rr, stg, x, cp, ptid, vec);
        if (PF > 0) { // the new rows of the row PF after it, into the L2
          advance(pf);
          if (pf.img < N) rows_prefetch(x, pf, ptid);
        }
      }
    }
    return;
  }

  // The consumers: warpgroup wgi's channels nw .. nw+63.
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(CONSUMER_REGS));
  const int T = cta_units();
  const int g = lane >> 2, t = lane & 3;
  const int nw = blockIdx.y * BN + 64 * wgi;
  // The warpgroup's weights as A fragments: a0 = A[16wq+g][t], a1 = row +8,
  // a2 = A[16wq+g][t+4], a3 = row +8 (conv_wg.cu's "Register fragments").
  // Steps KR on: the same values at A[m][k] = asm_[(ks-KR)*512 + (m/8)*64 +
  // (k/4)*32 + (m%8)*4 + k%4] of the warpgroup's part (8 x 16-byte core
  // matrices, K-adjacent 128 bytes apart, M-adjacent 256).
  unsigned wr[KR][4];
  float *const aw = asm_ + wgi * (KS_SM * 512);
#pragma unroll
  for (int ks = 0; ks < KSTEPS; ++ks)
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int h = i >> 1;
      const int qd = 2 * ks + (step_swapped(ks) ? 1 - h : h);
      const int c = qd / (R * SG), r = (qd / SG) % R, s = (qd % SG) * 4 + t;
      const int m = 16 * wq + g + 8 * (i & 1), ch = nw + m;
      const float v = (qd < NQ && s < S && ch < K) ? __ldg(w + ((ch * C + c) * R + r) * S + s) : 0.0f;
      if (ks < KR) wr[ks < KR ? ks : 0][i] = to_tf32_rna(v);
      else aw[(ks - KR) * 512 + (m >> 3) * 64 + h * 32 + (m & 7) * 4 + t] = __uint_as_float(to_tf32_rna(v));
    }
  fence_proxy_async(); // the weights' stores -> the wgmma (async proxy)
  wg_sync(wgi);
  const u64 a0 = wgmma_desc((unsigned)__cvta_generic_to_shared(aw), 128, 256);
  float *const slab = slabs + wgi * SLAB;
  float acc[NACC];
  RowLoad out = cur; // the row of the unit
#pragma unroll 1
  for (int un = 0; un < T; ++un) {
    const int pt = U == 1 ? 0 : un % U;
    if (un > 0 && pt == 0) advance(out);
    mbar_wait(ready + un % 4, (un >> 2) & 1);
    const unsigned wsa = uaddr[un % 4];
    if (wgi == 1 || un != 0) turn_wait(wgi);
#pragma unroll
    for (int e = 0; e < NACC; ++e) reg_fence(acc[e]);
    wgmma_fence();
    issue<0>(acc, wr, wgmma_desc(wsa, 0, 128), a0);
    wgmma_commit();
    if (wgi == 0 || un + 1 < T) turn_pass(wgi ^ 1);
    wgmma_wait<0>();
#pragma unroll
    for (int e = 0; e < NACC; ++e) reg_fence(acc[e]);
    mbar_arrive(done + 4 * wgi + un % 4);
    // The outputs through the warp's rows of the slab.
    slab_put(acc, slab, wq, g, t);
    __syncwarp();
    slab_write(slab, bsm + 64 * wgi, y + ((long long)out.img * K + nw) * PQ + out.oh * Q + NPX * pt,
               K - nw, Q - NPX * pt < NPX ? Q - NPX * pt : NPX, wq, lane);
    __syncwarp(); // the slab rows free for the next unit
  }
}
