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
// both operands from shared memory (5 KB per m64n96k8).  Here a warpgroup's
// main loop is its wgmma instructions alone and the tensor cores read only
// B from shared memory (32 bytes per pixel and k-step); the band is copied
// by cp.async and rounded once per input row, and both warpgroups read the
// same band.  The price: M = output channels in m64 tiles (96 channels take
// two, a quarter of the products wasted) and 4 registers per k-step and
// thread for the weights, so the reduction must be short (KSTEPS <= 50 at
// 56 pixels: 200 registers of weights).
//
//   GEMM view   M = output channels: warpgroup v of the CTA holds channels
//               n0+64v .. n0+64v+63 (n0 = 128*blockIdx.y) as its A, the
//               m64nNk8 fragments of every k-step in registers (TF32-
//               rounded); N = NPX pixels of one output row (a "unit": the
//               row's U pixel tiles are U units); K = taps in quads as in
//               conv_wgs: quad (c, r, sg) holds taps s = 4sg .. 4sg+3 of
//               input channel c, kernel row r (SG = ceil(S/4) quads per row,
//               taps past S weight 0); k-step ks = quads 2ks and 2ks+1 (one
//               of weight 0 past the last), the one at the lower address
//               first (LBO is unsigned).
//   band        a ring of input rows per channel, [C][RB + SPAN - 1][BCP]
//               floats: the input row at ring position pos (the CTA numbers
//               the rows it loads 0, 1, ...) sits in slot pos % RB and, when
//               that slot is below SPAN - 1, also in slot RB + pos % RB, so
//               that the SPAN = (R-1)*DH + 1 rows of any output row's window
//               are consecutive slots.  Input column iw at float iw + PW of
//               its row, zero outside the image, TF32-rounded (round to
//               nearest).  BCP = 4*(U*NPX + SG - 1) covers every pixel's quads.
//   B           for a unit (output row with window at slot w0, pixel tile
//               pt) and quad (c, r, sg): pixel q = NPX*pt + n reads floats
//               4(q+sg) .. 4(q+sg)+3 of row (c, w0 + r*DH): 8 pixels are one
//               128-byte core matrix (K-major), the next 8 are 128 bytes on
//               (SBO 128), the k-step's second quad LBO bytes from its first.
//   staging     [NLD][256] float4: each thread's cp.async targets (16-byte
//               aligned), rounded into the band by the same thread.
//   slabs       [8 warps][16][OSP] floats: a warp's outputs of one unit on
//               their way to y (see slab_put).
//
// Non-finite inputs: as conv_wgs, a quad's taps past S (weight 0) read the
// band floats of the next columns; 0 * inf is NaN, so an infinite or NaN
// input can make NaN of up to SG*4-S outputs to the left of those the
// convolution makes non-finite.  Finite inputs give the convolution as
// specified.
//
// Work decomposition: a persistent grid; CTA b takes the output rows
// [b*ROWS/G, (b+1)*ROWS/G) of all images in order (G = gridDim.x, ROWS =
// N*P), so consecutive rows share SPAN - SH of their input rows.  Both
// warpgroups take every unit, in turns on the tensor cores (warpgroup 0's
// wgmma of unit t, then warpgroup 1's of unit t, then warpgroup 0's of t+1,
// ...; named barriers as conv_wg's PP).  After handing its turn over, a
// warpgroup waits for its wgmma, puts its outputs (+ bias) into its slabs,
// rounds its half of the new input rows of the unit two ahead (when that
// unit starts a row; copied into the staging one unit earlier) into the
// band, and only then, after one proxy fence, starts global traffic: the
// outputs written from the slabs and its half of the cp.async of the unit
// three ahead; all while the other warpgroup's wgmma run.  The ring has RB
// slots (see RB), so the rows a store overwrites are older than any unit
// that can still be in flight (the two before the one stored for).
//
// The generator prepends the problem (CT_*), the parameters U and EP and the plan's
// lines (CT_PLAN_*).  Without them the file compiles on its own (sm_90a):
// the headline problem.

#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
#error "conv_wgr.cu needs the arch-specific target sm_90a (wgmma)"
#endif

#include "ct_problem.cuh"

#ifndef U
#define U 1 // pixel tiles (units) per output row
#endif
#ifndef EP
#define EP 1 // output rows written by 1: bulk copies, 0: coalesced stores
#endif

#include "ct_ptx.cuh"
#include "ct_wgmma.cuh"

namespace wgr {

CT_PROBLEM_CONSTANTS

constexpr int THREADS = 256;                       // two warpgroups
constexpr int BN = 128;                            // output channels per CTA
constexpr int NPX = 8 * ((Q + 8 * U - 1) / (8 * U)); // pixels per unit = the wgmma N
constexpr int NACC = NPX / 2;                      // accumulators per thread
constexpr int SG = (S + 3) / 4;                    // quads per kernel row
constexpr int NQ = C * R * SG;                     // quads with weights
constexpr int KSTEPS = (NQ + 1) / 2;               // k8 steps
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
constexpr int NLD = (C * SPAN * RUNS + THREADS - 1) / THREADS; // runs per thread, at most
// 2 KB after the staging, as conv_wgs: compute-sanitizer checks a wgmma
// operand as contiguous bytes from its start address.
constexpr int SLACK = 512;
constexpr int OSP = NPX + 4; // output slab pitch: a row and 16-byte alignment
constexpr int SMEM_BYTES = (BAND + NLD * THREADS * 4 + 8 * 16 * OSP + SLACK) * 4;
constexpr int ROWS = N * P;
constexpr int KBLOCKS = (K + BN - 1) / BN;
constexpr int NTILES = ROWS; // grid.x: at most one CTA per output row
constexpr int PQ = P * Q;
// Input columns past the band row (never read by an output) are dropped.
constexpr bool CLIP = PW + W > BCP;

CT_PROBLEM_CHECKS
static_assert(SW == 4 && DW == 1, "wgr: stride 4 along the width, no dilation there");
static_assert(U >= 1 && NPX >= 8 && NPX <= 64, "NPX: 8 .. 64 pixels per unit");
static_assert(EP == 0 || EP == 1, "EP: 0 or 1");
static_assert(U * NPX >= Q && (U - 1) * NPX < Q, "every unit holds pixels");
static_assert(4 * KSTEPS + NACC <= 228, "weights and accumulators beyond the registers");
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

// D (64 x NN) += A (64 x 8, this thread's a[0..3]) * B (8 x NN at desc);
// with scale_d == 0, D = A * B.  The operand numbers follow the NN/2
// accumulators.
typedef unsigned long long u64;
template <int NN> struct Mma;
#define WGR_MMA(NN, DL, OL, A0, A1, A2, A3, DS, SC)                                    \
  template <> struct Mma<NN> {                                                       \
    static __device__ __forceinline__ void run(float (&d)[NN / 2], const unsigned (&a)[4], \
                                               u64 desc, int scale_d) {              \
      asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" SC ", 0;\n"                    \
                   "wgmma.mma_async.sync.aligned.m64n" #NN "k8.f32.tf32.tf32 " DL ", "  \
                   "{%" A0 ",%" A1 ",%" A2 ",%" A3 "}, %" DS ", p, 1, 1;\n}\n"          \
                   : OL                                                                \
                   : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc), "r"(scale_d)); \
    }                                                                                  \
  };
WGR_MMA(8, CT_WGMMA_D4, CT_WGMMA_OUT4, "4", "5", "6", "7", "8", "9")
WGR_MMA(16, CT_WGMMA_D8, CT_WGMMA_OUT8, "8", "9", "10", "11", "12", "13")
WGR_MMA(24, CT_WGMMA_D12, CT_WGMMA_OUT12, "12", "13", "14", "15", "16", "17")
WGR_MMA(32, CT_WGMMA_D16, CT_WGMMA_OUT16, "16", "17", "18", "19", "20", "21")
WGR_MMA(40, CT_WGMMA_D20, CT_WGMMA_OUT20, "20", "21", "22", "23", "24", "25")
WGR_MMA(48, CT_WGMMA_D24, CT_WGMMA_OUT24, "24", "25", "26", "27", "28", "29")
WGR_MMA(56, CT_WGMMA_D28, CT_WGMMA_OUT28, "28", "29", "30", "31", "32", "33")
WGR_MMA(64, CT_WGMMA_D32, CT_WGMMA_OUT32, "32", "33", "34", "35", "36", "37")
#undef WGR_MMA

// The wgmma of one warpgroup over one unit: KSTEPS steps issued back to
// back as one group; d0 is B's descriptor at the window's quad 0 (SBO 128,
// LBO filled per step).
template <int KS>
__device__ __forceinline__ void issue(float (&acc)[NACC], const unsigned (&wr)[KSTEPS][4],
                                      u64 d0) {
  if constexpr (KS < KSTEPS) {
    constexpr int o0 = quad_off(2 * KS), o1 = quad_off(2 * KS + 1);
    constexpr int lo = o1 >= o0 ? o1 - o0 : o0 - o1;
    constexpr int first = o1 >= o0 ? o0 : o1;
    constexpr u64 dstep = ((u64)(first * 4 >> 4)) | ((u64)((lo * 4 >> 4) & 0x3FFF) << 16);
    Mma<NPX>::run(acc, wr[KS], d0 + dstep, KS != 0);
    issue<KS + 1>(acc, wr, d0);
  }
}

// The rows of the window of output row gr (image img, row oh) that the ring
// does not hold yet: all SPAN when the row is the CTA's first or its
// image's first (fresh), else the last NEWR.
struct RowLoad {
  int img, oh, nnew, pos0; // pos0: ring position of the window's first row
};

// This thread's runs of row rl's NNEW new rows: run u = tid + THREADS*j of
// C x NNEW rows x RUNS, copied by cp.async into its staging slots (rows
// outside the image as zeros) ...
template <int NNEW>
__device__ __forceinline__ void rows_copy_n(float4 *stg, const float *__restrict__ x,
                                            const RowLoad &rl, int tid, bool vec) {
#pragma unroll 1
  for (int j = 0; j < NLD; ++j) {
    const int u = tid + THREADS * j;
    if (u >= C * NNEW * RUNS) break;
    const int c = u / (NNEW * RUNS), rem = u - c * (NNEW * RUNS);
    const int i = rem / RUNS, run = rem - i * RUNS;
    const int ih = rl.oh * SH - PH + (SPAN - NNEW) + i;
    const bool in = (unsigned)ih < (unsigned)H;
    const float *src = x + ((rl.img * C + c) * H + (in ? ih : 0)) * W + 4 * run;
    float *dst = reinterpret_cast<float *>(stg + THREADS * j + tid);
    if (vec) {
      const unsigned saddr = (unsigned)__cvta_generic_to_shared(dst);
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(saddr), "l"(src),
                   "r"(in ? 16u : 0u)
                   : "memory");
    } else {
#pragma unroll
      for (int k = 0; k < 4; ++k) cp_async4(dst + k, src + k, in && 4 * run + k < W);
    }
  }
}

// ... and, once they have landed, stored TF32-rounded into their ring slots
// (and mirror slots).
template <int NNEW>
__device__ __forceinline__ void rows_store_n(float *band, const float4 *stg, const RowLoad &rl,
                                             int tid) {
#pragma unroll 1
  for (int j = 0; j < NLD; ++j) {
    const int u = tid + THREADS * j;
    if (u >= C * NNEW * RUNS) break;
    const int c = u / (NNEW * RUNS), rem = u - c * (NNEW * RUNS);
    const int i = rem / RUNS, run = rem - i * RUNS;
    const int slot = (rl.pos0 + (SPAN - NNEW) + i) % RB;
    const float4 v = stg[THREADS * j + tid];
    const float e[4] = {round_tf32(v.x), round_tf32(v.y), round_tf32(v.z), round_tf32(v.w)};
    float *d = band + (c * CROWS + slot) * BCP + PW + 4 * run;
    const bool mirror = slot < SPAN - 1;
#pragma unroll
    for (int k = 0; k < 4; ++k)
      if (4 * run + k < W && (!CLIP || PW + 4 * run + k < BCP)) {
        d[k] = e[k];
        if (mirror) d[k + RB * BCP] = e[k];
      }
  }
}

// Both, for the row's count of new rows (SPAN when fresh, else NEWR).
__device__ __forceinline__ void rows_copy(float4 *stg, const float *__restrict__ x,
                                          const RowLoad &rl, int tid, bool vec) {
  if (rl.nnew == SPAN) rows_copy_n<SPAN>(stg, x, rl, tid, vec);
  else rows_copy_n<NEWR>(stg, x, rl, tid, vec);
}
__device__ __forceinline__ void rows_store(float *band, const float4 *stg, const RowLoad &rl,
                                           int tid) {
  if (rl.nnew == SPAN) rows_store_n<SPAN>(band, stg, rl, tid);
  else rows_store_n<NEWR>(band, stg, rl, tid);
}

// A unit's outputs (+ bias) go through the warp's slab of shared memory,
// in two halves around the proxy fence that also publishes the band.
// slab_put: lane (g, t) puts d[4j+2h+e] (channel cl = g+8h of the warp's
// 16, pixel 8j+2t+e) at ost[cl*OSP + ph(cl) + 8j+2t+e], where ph(cl) = the
// float offset mod 4 of the channel's output row in y (EP 1; 0 with EP 0),
// so that a slab row and its output row agree mod 16 bytes.  yc: the output
// row of the warp's first channel.
__device__ __forceinline__ void slab_put(const float (&acc)[NACC], const float (&bias)[2],
                                         float *ost, const float *yc, int g, int t) {
  if constexpr (EP == 1) // the slab's previous bulk copies have read it
    asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
  __syncwarp();
#pragma unroll
  for (int hh = 0; hh < 2; ++hh) {
    const int cl = g + 8 * hh;
    const int ph = EP == 1 ? (int)((unsigned long long)(yc + cl * PQ) >> 2) & 3 : 0;
    float *o = ost + cl * OSP + ph + 2 * t;
#pragma unroll
    for (int j = 0; j < NPX / 8; ++j) {
      o[8 * j] = acc[4 * j + 2 * hh] + bias[hh];
      o[8 * j + 1] = acc[4 * j + 2 * hh + 1] + bias[hh];
    }
  }
}

// slab_write (after the fence and a __syncwarp): the nch channels of the
// warp below K, pixels 0 .. nq-1 of the unit.  EP 1: lane cl < 16 writes
// channel cl's 16-byte-aligned middle with one bulk copy (cp.async.bulk,
// shared -> global) and lane 16+cl the up to 3 floats before and after it.
// EP 0: the lanes store each channel's pixels, consecutive lanes,
// consecutive pixels.
__device__ __forceinline__ void slab_write(const float *ost, float *__restrict__ yc, int nch,
                                           int nq, int lane) {
  if constexpr (EP == 1) {
    const int cl = lane & 15;
    if (cl < nch) {
      float *__restrict__ row = yc + cl * PQ;
      const int ph = (int)((unsigned long long)row >> 2) & 3;
      const int head = min((4 - ph) & 3, nq);
      const int body = (nq - head) & ~3;
      const float *o = ost + cl * OSP + ph;
      if (lane < 16) {
        if (body > 0) {
          const unsigned sa = (unsigned)__cvta_generic_to_shared(o + head);
          asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;\n" ::"l"(
                           row + head),
                       "r"(sa), "r"(body * 4)
                       : "memory");
        }
      } else {
#pragma unroll
        for (int k = 0; k < 3; ++k) {
          if (k < head) __stcs(row + k, o[k]);
          if (head + body + k < nq) __stcs(row + head + body + k, o[head + body + k]);
        }
      }
    }
    asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
  } else {
#pragma unroll 4
    for (int cl = 0; cl < 16; ++cl) {
      if (cl >= nch) break;
#pragma unroll
      for (int q = lane; q < NPX; q += 32)
        if (q < nq) __stcs(yc + cl * PQ + q, ost[cl * OSP + q]);
    }
  }
}

} // namespace wgr

// ----------------------------------------------------------------------------
// The kernel.  Launch: grid (CT_PLAN_GRID_X, ceil(K/128)), block 256,
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
  float *const ost0 = reinterpret_cast<float *>(stg + NLD * THREADS); // output slabs
  static_assert(OSP % 4 == 0, "output slab rows 16-byte aligned");
  (void)ws;

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int wgi = warp >> 2, wq = warp & 3;
  const int g = lane >> 2, t = lane & 3;
  const int nw = blockIdx.y * BN + 64 * wgi; // the warpgroup's first channel
  const int rb = (int)((long long)blockIdx.x * ROWS / gridDim.x);
  const int re = (int)((long long)(blockIdx.x + 1) * ROWS / gridDim.x);
  if ((int)blockIdx.x >= NTILES || rb >= re) return; // never with a planned grid

  // The warpgroup's weights as A fragments: a0 = A[16wq+g][t], a1 = row +8,
  // a2 = A[16wq+g][t+4], a3 = row +8 (conv_wg.cu's "Register fragments").
  unsigned wr[KSTEPS][4];
#pragma unroll
  for (int ks = 0; ks < KSTEPS; ++ks)
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int h = i >> 1;
      const int qd = 2 * ks + (step_swapped(ks) ? 1 - h : h);
      const int c = qd / (R * SG), r = (qd / SG) % R, s = (qd % SG) * 4 + t;
      const int ch = nw + 16 * wq + g + 8 * (i & 1);
      const float v = (qd < NQ && s < S && ch < K) ? __ldg(w + ((ch * C + c) * R + r) * S + s) : 0.0f;
      wr[ks][i] = to_tf32(v);
    }
  float bias[2];
#pragma unroll
  for (int hh = 0; hh < 2; ++hh) {
    const int ch = nw + 16 * wq + g + 8 * hh;
#if CT_BIAS
    bias[hh] = ch < K ? __ldg(b + ch) : 0.0f;
#else
    bias[hh] = 0.0f;
    (void)b;
    (void)ch;
#endif
  }

  // The band zero (columns outside the input stay so), then the windows of
  // the first two units' rows stored and the third's copy in flight.  The
  // rows a CTA loads are its rows rb, rb+1, ... in order, each copied into
  // the staging one unit before it is stored.
  for (int e = tid; e < BAND; e += THREADS) band[e] = 0.0f;
  __syncthreads();
  const bool vec = W % 4 == 0 && ((unsigned long long)x & 15) == 0;
  // Ring state: cur = the row of the unit being issued, cp = the last row
  // copied, st = the last row stored.
  RowLoad cur;
  cur.img = rb / P;
  cur.oh = rb - cur.img * P;
  cur.nnew = SPAN;
  cur.pos0 = 0;
  // The next output row's window: SH rows on, or a fresh one in the next
  // image.
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
  const int T = (re - rb) * U;
  RowLoad cp = cur, st = cur;
  rows_copy(stg, x, cur, tid, vec);
  cp_async_commit();
  cp_async_wait<0>();
  rows_store(band, stg, cur, tid);
  if (U == 1 && T > 1) { // unit 1's row
    advance(cp);
    rows_copy(stg, x, cp, tid, vec);
    cp_async_commit();
    cp_async_wait<0>();
    advance(st);
    rows_store(band, stg, st, tid);
  }
  if (T > 2 && 2 % U == 0) { // unit 2's row: copied, stored in the loop
    advance(cp);
    rows_copy(stg, x, cp, tid, vec);
    cp_async_commit();
  }
  fence_proxy_async(); // the band's stores -> the wgmma (async proxy)
  __syncthreads();

  const unsigned band_sa = (unsigned)__cvta_generic_to_shared(band);
  float *const ost = ost0 + warp * (16 * OSP); // the warp's output slab
  // The plane of the warp's first channel; its channels below K.
  float *__restrict__ const yw = y + (long long)(nw + 16 * wq) * PQ;
  const int nch = K - (nw + 16 * wq) < 16 ? K - (nw + 16 * wq) : 16;
  float acc[NACC];
#pragma unroll 1
  for (int un = 0; un < T; ++un) {
    const int pt = U == 1 ? 0 : un % U;
    if (un > 0 && pt == 0) advance(cur);
    if (wgi == 1 || un != 0) turn_wait(wgi);
#pragma unroll
    for (int e = 0; e < NACC; ++e) reg_fence(acc[e]);
    wgmma_fence();
    const unsigned wsa = band_sa + (unsigned)(((cur.pos0 % RB) * BCP + pt * NPX * 4) * 4);
    issue<0>(acc, wr, wgmma_desc(wsa, 0, 128));
    wgmma_commit();
    if (wgi == 0 || un + 1 < T) turn_pass(wgi ^ 1);
    wgmma_wait<0>();
#pragma unroll
    for (int e = 0; e < NACC; ++e) reg_fence(acc[e]);
    // The shared-memory stores first (outputs into the slab; the new input
    // rows of the unit two ahead, if it starts a row, into the band), one
    // proxy fence for both while no global access of this thread is in
    // flight (it would wait for them), then the global traffic: the outputs
    // written, the new rows of the unit three ahead copied.
    float *__restrict__ const yc = yw + ((long long)cur.img * K) * PQ + cur.oh * Q + NPX * pt;
    slab_put(acc, bias, ost, yc, g, t);
    const bool store = un + 2 < T && (un + 2) % U == 0;
    if (store) {
      cp_async_wait<0>();
      advance(st);
      rows_store(band, stg, st, tid);
    }
    // The band -> both warpgroups' wgmma after the turns; the slab -> the
    // bulk copies (EP 1).
    if (EP == 1 || store) fence_proxy_async();
    __syncwarp();
    slab_write(ost, yc, nch, Q - NPX * pt < NPX ? Q - NPX * pt : NPX, lane);
    if (un + 3 < T && (un + 3) % U == 0) {
      advance(cp);
      rows_copy(stg, x, cp, tid, vec);
      cp_async_commit();
    }
  }
  if constexpr (EP == 1) // the outputs written before the CTA's shared memory goes
    asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");
}
