// conv_direct.cu — family "direct": a register-tiled direct convolution that
// is correct for every valid problem (any N, C, H, W, K, R, S, stride,
// padding, dilation, groups, with or without bias, fused ReLU or not; NCHW /
// KCRS fp32, or with CT_LAYOUT 1 NHWC / KRSC: the same loops, x read along a
// row at a stride of C, w gathered per tap, y stored channel-innermost;
// correct, not fast, in that layout).  Products and
// sums are IEEE fp32 fmaf, so it meets both the tf32 and the fp32 contracts.
// It is the safe default family: generator/family_direct.c is its descriptor.
//
// Work decomposition
//   thread : TK output channels k0 .. k0+TK-1  x  TP consecutive output
//            columns q0 .. q0+TP-1 of one output row (n, p)
//   block  : THREADS threads side by side along the flattened (n, p, q-group)
//            index, all on the same channel tile
//   grid   : one block per (pixel block, channel tile), the channel tile
//            fastest so that blocks reading the same input rows run together
// The reduction runs over the C*R filter rows (c, r) of S taps each, padded
// taps reading zero.  With CT_GROUPS G > 1 it runs over the C/G channels of
// the block's group: a channel tile lies in one group (TK divides K/G), so
// the block reads x from its group's first channel on, and w holds C/G
// channels per output channel; with G = 1 that offset is the constant 0.
// The block's weights are staged in shared memory kRows filter rows at a
// time (as many as DIRECT_WBUF_FLOATS holds), laid out
// [row][s][TK] so that the TK weights of one tap are contiguous (float4
// loads, broadcast across the warp).  Should a single filter row not fit
// (a filter thousands of taps wide), weights are read straight from global
// memory instead.  x is read through the read-only path; when the input
// columns a thread needs in one filter row span few enough columns, they are
// loaded once into registers.  Bias is added after the reduction.
//
// Tensors of any size: when x, w or y has more than 2^31 - 1 elements, every
// tensor offset (type I below) is 64-bit; otherwise all of it is 32-bit, as
// the arithmetic of smaller problems needs.  Coordinates within a row stay
// 32-bit either way (the problem's validation bounds the padded extents).
//
// The generator prepends the problem (CT_*), the parameters (THREADS, TP,
// TK) and the plan's launch quantities (CT_PLAN_*).  Without them the file
// compiles on its own for the headline problem with the default parameters.

// ----------------------------------------------------------------------------
// Problem (defaults: KernelBench level 1 problem 50)

#define CT_TAKES_GROUPS 1 // channels indexed by group (ct_act.cuh)
#include "ct_problem.cuh"
#include "ct_act.cuh"

// ----------------------------------------------------------------------------
// Tunable parameters

#ifndef THREADS
#define THREADS 128 // threads per block
#endif
#ifndef TP
#define TP 4 // output columns per thread
#endif
#ifndef TK
#define TK 8 // output channels per thread (and per block)
#endif

// DIRECT_WBUF_FLOATS and the launch arithmetic (blocks, staged rows, shared
// memory), shared with generator/family_direct.c.
#include "ct_direct.cuh"

// ----------------------------------------------------------------------------
// Derived quantities

namespace direct {

CT_PROBLEM_CONSTANTS

__host__ __device__ constexpr int imin(int a, int b) { return a < b ? a : b; }

// Tensor offsets: 64-bit only where a tensor needs it.
template <bool Wide> struct IndexType { typedef int type; };
template <> struct IndexType<true> { typedef long long type; };
constexpr bool kIndex64 = CT_PROBLEM_INDEX64;
typedef IndexType<kIndex64>::type I;

constexpr bool kNHWC = CT_LAYOUT == 1;        // x NHWC, w KRSC, y NPQK
constexpr int NG = CT_GROUPS;                 // groups
constexpr int CG = C / NG, KG = K / NG;       // input, output channels per group
constexpr I kXCol = kNHWC ? C : 1;            // x: elements from a column to the next
constexpr I kCR = (I)CG * R;                  // filter rows per output channel
constexpr I kCRS = (I)CG * R * S;             // weights per output channel
constexpr I kCHW = (I)C * H * W;              // input elements per image
constexpr I kKPQ = (I)K * P * Q;              // output elements per image
constexpr int kQG = (Q + TP - 1) / TP;        // column groups per output row
constexpr long long kGroups = (long long)N * P * kQG; // thread tiles of pixels
constexpr long long kPixBlocks = (kGroups + THREADS - 1) / THREADS;
constexpr int kKTiles = (K + TK - 1) / TK;    // channel tiles
constexpr long long kTiles = ct_direct_tiles(N, P, Q, K, THREADS, TP, TK); // blocks of work
static_assert(kTiles == kPixBlocks * kKTiles, "blocks: pixel blocks x channel tiles");
constexpr int kRows = (int)ct_direct_rows(CG, R, S, TK); // staged rows
constexpr int kSmemBytes = (int)ct_direct_smem_bytes(CG, R, S, TK);
// Input columns a thread touches in one filter row, first to last.
constexpr long long kSpan = (long long)(TP - 1) * SW + (long long)(S - 1) * DW + 1;
// Load that span into registers once per filter row (s loop fully unrolled).
constexpr bool kSegment = S <= 32 && kSpan <= 48;

CT_PROBLEM_CHECKS_SHAPE
static_assert(kIndex64 || ((long long)N * K * P * Q <= 0x7fffffffLL &&
                           (long long)N * C * H * W <= 0x7fffffffLL &&
                           (long long)K * CG * R * S <= 0x7fffffffLL),
              "32-bit offsets need every tensor below 2^31 elements");
static_assert(NG >= 1 && C % NG == 0 && K % NG == 0, "groups must divide C and K");
static_assert(NG == 1 || KG % TK == 0, "groups: a channel tile must lie in one group (TK | K/G)");
// Largest |index| formed along a row / column before the bounds checks.
static_assert((long long)(Q - 1 + TP - 1) * SW + (long long)(S - 1) * DW <= 0x7fffffffLL &&
              (long long)(P - 1) * SH + (long long)(R - 1) * DH <= 0x7fffffffLL,
              "input coordinates overflow 32 bits");
static_assert(kTiles <= 0x7fffffffLL, "too many blocks");
static_assert(THREADS % 32 == 0 && THREADS <= 1024, "THREADS: whole warps, <= 1024");
static_assert(TP >= 1 && TK >= 1, "TP, TK >= 1");

static_assert(CT_PLAN_HAS_BLOCK_X(THREADS), "plan: block size != THREADS");
static_assert(CT_PLAN_GRID_X_IN(kTiles, kTiles), "plan: grid size != number of tiles");
static_assert(CT_PLAN_HAS_SMEM(kSmemBytes), "plan: shared memory size differs");

// ----------------------------------------------------------------------------
// Helpers

// The TK weights of one tap, from shared memory laid out [tap][TK].
__device__ __forceinline__ void load_w_smem(float (&wv)[TK], const float *tap) {
  if constexpr (TK % 4 == 0) {
#pragma unroll
    for (int kk = 0; kk < TK; kk += 4) {
      const float4 v = *reinterpret_cast<const float4 *>(tap + kk);
      wv[kk] = v.x;
      wv[kk + 1] = v.y;
      wv[kk + 2] = v.z;
      wv[kk + 3] = v.w;
    }
  } else {
#pragma unroll
    for (int kk = 0; kk < TK; ++kk) wv[kk] = tap[kk];
  }
}

// The output pixels of thread tid in pixel block pb: row (n, p), columns
// q0 .. q0+TP-1; active is false past the last group.  With clamp, an
// inactive thread gets the last group's coordinates (safe to read with).
struct Pixels {
  int n, p, q0;
  bool active;
};
// The group index is unsigned: 32-bit when the tensors are (then it stays
// below 2^31 + THREADS: no wrap), 64-bit otherwise.
template <bool Wide> struct GroupType { typedef unsigned type; };
template <> struct GroupType<true> { typedef unsigned long long type; };
typedef GroupType<kIndex64>::type G;
__device__ __forceinline__ Pixels pixels_of(int pb, unsigned tid, bool clamp) {
  G g = (G)pb * THREADS + tid;
  Pixels px;
  px.active = g < (unsigned long long)kGroups;
  if (clamp && !px.active) g = (G)(kGroups - 1);
  px.n = (int)(g / (G)((I)P * kQG));
  const I pq = (I)(g - (G)px.n * (G)((I)P * kQG));
  px.p = (int)(pq / kQG);
  px.q0 = (int)(pq - (I)px.p * kQG) * TP;
  return px;
}

// threadIdx.x and blockIdx.x read afresh: asm volatile is never merged with
// an earlier read, so values needed only after the reduction are recomputed
// there instead of being held (or spilled) through it.
__device__ __forceinline__ unsigned fresh_tid() {
#ifdef __CUDA_ARCH__
  unsigned r;
  asm volatile("mov.u32 %0, %%tid.x;" : "=r"(r));
  return r;
#else
  return threadIdx.x;
#endif
}
__device__ __forceinline__ unsigned fresh_ctaid() {
#ifdef __CUDA_ARCH__
  unsigned r;
  asm volatile("mov.u32 %0, %%ctaid.x;" : "=r"(r));
  return r;
#else
  return blockIdx.x;
#endif
}

// x[row][col], zero outside 0 <= col < W (padding).
__device__ __forceinline__ float load_x(const float *__restrict__ xrow, int col) {
  return (unsigned)col < (unsigned)W ? __ldg(xrow + (I)col * kXCol) : 0.0f;
}

// Offset of input row (c, h) of an image: column 0 of channel c.
__device__ __forceinline__ I x_row(I c, int h) {
  return kNHWC ? (I)h * W * C + c : (c * H + h) * W;
}

// Offset in w of tap s of filter row cr = c * R + r of output channel k (c
// counted within the group).
__device__ __forceinline__ I w_tap(int k, I cr, int s) {
  if constexpr (kNHWC) {
    const I c = cr / R;
    return (I)k * kCRS + ((cr - c * R) * S + s) * CG + c;
  } else {
    return (I)k * kCRS + cr * S + s;
  }
}

__device__ __forceinline__ void tap_fma(float (&acc)[TK][TP], const float (&wv)[TK],
                                        const float (&xv)[TP]) {
#pragma unroll
  for (int kk = 0; kk < TK; ++kk)
#pragma unroll
    for (int i = 0; i < TP; ++i) acc[kk][i] = fmaf(wv[kk], xv[i], acc[kk][i]);
}

// One filter row (S taps) of a thread's TK x TP tile.  xrow is the input row,
// col0 the input column of tap 0 of output column q0; weights come from
// wrow[s * TK + kk] (shared memory).
__device__ __forceinline__ void row_fma_smem(float (&acc)[TK][TP],
                                             const float *__restrict__ xrow,
                                             int col0, const float *wrow) {
  if constexpr (kSegment) {
    float seg[kSegment ? kSpan : 1]; // loads no tap uses are dead code
#pragma unroll
    for (int e = 0; e < kSpan; ++e) seg[e] = load_x(xrow, col0 + e);
#pragma unroll
    for (int s = 0; s < S; ++s) {
      float wv[TK], xv[TP];
      load_w_smem(wv, wrow + s * TK);
#pragma unroll
      for (int i = 0; i < TP; ++i) xv[i] = seg[i * SW + s * DW];
      tap_fma(acc, wv, xv);
    }
  } else {
#pragma unroll 4
    for (int s = 0; s < S; ++s) {
      float wv[TK], xv[TP];
      load_w_smem(wv, wrow + s * TK);
#pragma unroll
      for (int i = 0; i < TP; ++i) xv[i] = load_x(xrow, col0 + i * SW + s * DW);
      tap_fma(acc, wv, xv);
    }
  }
}

} // namespace direct

// ----------------------------------------------------------------------------
// The kernel.  Launch: grid (CT_PLAN_GRID_X), block (THREADS), CT_PLAN_SMEM
// bytes of dynamic shared memory.  ws is unused.

extern "C" __global__ void __launch_bounds__(THREADS)
conv_direct(const float *__restrict__ x, const float *__restrict__ w,
            const float *__restrict__ b, float *__restrict__ y, float *ws) {
  using namespace direct;
  extern __shared__ float4 smem4[]; // float4: 16-byte aligned
  float *sw = reinterpret_cast<float *>(smem4);
  (void)ws; // no workspace
  (void)b;  // unread when CT_BIAS is 0
  const int tid = threadIdx.x;

  const unsigned tile = blockIdx.x; // one block per tile
  if (tile >= kTiles) return;       // the whole block: no barrier skipped
  const int kt = (int)(tile % kKTiles);
  const int pb = (int)(tile / kKTiles);
  const int k0 = kt * TK;

  // This thread's pixels; threads past the end compute a clamped copy
  // (they must take part in __syncthreads) and store nothing.
  const Pixels px = pixels_of(pb, tid, true);
  const int n = px.n, p = px.p, q0 = px.q0;
  const int h0 = p * SH - PH;  // input row of filter row r = 0
  const int col0 = q0 * SW - PW; // input column of tap s = 0, output q0
  // Image n from the first channel of the tile's group on (c below counts
  // within the group).
  const float *__restrict__ xn = x + (I)n * kCHW + x_row(NG > 1 ? (I)(k0 / KG) * CG : 0, 0);

  float acc[TK][TP];
#pragma unroll
  for (int kk = 0; kk < TK; ++kk)
#pragma unroll
    for (int i = 0; i < TP; ++i) acc[kk][i] = 0.0f;

  if constexpr (kRows > 0) {
    // Weights staged in shared memory, kRows filter rows at a time.
#pragma unroll 1
    for (I row0 = 0; row0 < kCR; row0 += kRows) {
      const int nrows = (int)(kCR - row0 < kRows ? kCR - row0 : kRows);
      __syncthreads(); // the previous rows are consumed
#pragma unroll 1
      for (int kk = 0; kk < TK; ++kk) {
        const int k = k0 + kk;
        if (k < K && !kNHWC) {
          const float *__restrict__ src = w + (I)k * kCRS + row0 * S;
          for (int e = tid; e < nrows * S; e += THREADS) sw[e * TK + kk] = __ldg(src + e);
        } else if (k < K) {
          for (int e = tid; e < nrows * S; e += THREADS)
            sw[e * TK + kk] = __ldg(w + w_tap(k, row0 + e / S, e % S));
        } else {
          for (int e = tid; e < nrows * S; e += THREADS) sw[e * TK + kk] = 0.0f;
        }
      }
      __syncthreads();
      I c = row0 / R;
      int r = (int)(row0 - c * R);
#pragma unroll 1
      for (int j = 0; j < nrows; ++j) {
        const int h = h0 + r * DH;
        if ((unsigned)h < (unsigned)H)
          row_fma_smem(acc, xn + x_row(c, h), col0, sw + j * S * TK);
        if (++r == R) {
          r = 0;
          ++c;
        }
      }
    }
  } else {
    // A filter row does not fit the staging budget: weights from global
    // memory.  Channels past K read channel K-1 (their results are dropped).
    int kc[TK];
#pragma unroll
    for (int kk = 0; kk < TK; ++kk) kc[kk] = imin(k0 + kk, K - 1);
#pragma unroll 1
    for (I cr = 0; cr < kCR; ++cr) {
      const I c = cr / R;
      const int r = (int)(cr - c * R);
      const int h = h0 + r * DH;
      if ((unsigned)h >= (unsigned)H) continue;
      const float *__restrict__ xrow = xn + x_row(c, h);
#pragma unroll 4
      for (int s = 0; s < S; ++s) {
        float wv[TK], xv[TP];
#pragma unroll
        for (int kk = 0; kk < TK; ++kk) wv[kk] = __ldg(w + w_tap(kc[kk], cr, s));
#pragma unroll
        for (int i = 0; i < TP; ++i) xv[i] = load_x(xrow, col0 + i * SW + s * DW);
        tap_fma(acc, wv, xv);
      }
    }
  }

  // The epilogue recomputes its indices from fresh reads (see fresh_tid).
  const unsigned tile_e = fresh_ctaid();
  const int k0_e = (int)(tile_e % kKTiles) * TK;
  const Pixels out = pixels_of((int)(tile_e / kKTiles), fresh_tid(), false);
  if (out.active) {
    // y[n][k0][p][q0] (NHWC: y[n][p][q0][k0]), channels kYK apart, columns kYQ.
    constexpr I kYK = kNHWC ? 1 : (I)P * Q, kYQ = kNHWC ? K : 1;
    float *__restrict__ yk0 =
        y + (kNHWC ? (((I)out.n * P + out.p) * Q + out.q0) * K + k0_e
                   : (I)out.n * kKPQ + ((I)k0_e * P + out.p) * Q + out.q0);
#pragma unroll
    for (int kk = 0; kk < TK; ++kk) {
      if (k0_e + kk < K) {
        // The bias is added last (loaded late: fewer live registers), then
        // the activation.
#if CT_BIAS
        const float bv = __ldg(b + k0_e + kk);
#else
        const float bv = 0.0f;
#endif
        // A residual: the row's TP loaded before any is stored (ct_act.cuh's ct_res).
        float r[TP];
#pragma unroll
        for (int i = 0; i < TP; ++i)
          r[i] = out.q0 + i < Q ? ct_res(yk0 + (I)kk * kYK + (I)i * kYQ) : 0.0f;
#pragma unroll
        for (int i = 0; i < TP; ++i)
          if (out.q0 + i < Q) yk0[(I)kk * kYK + (I)i * kYQ] = ct_fin(acc[kk][i] + bv, r[i]);
      }
    }
  }
}
