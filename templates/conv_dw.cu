// conv_dw.cu — family "dw": a depthwise convolution (groups = C: output
// channel k reads input channel k / M alone, K = M * C for a channel
// multiplier M) over NCHW tensors, any stride, padding and dilation, with
// or without bias, fused ReLU or residual.  Products and sums are IEEE
// fp32 fmaf, so it meets both the tf32 and the fp32 contracts.  A depthwise
// layer has (C/G) R S = R S products per output: it is bound by moving x
// and y, which `direct` (a block per channel tile, x read per tap through
// L1) does R times over; here each input element is read from global
// memory about once per tile.
//
// Work decomposition (the arithmetic is ct_dw.cuh's, shared with
// generator/family_dw.c)
//   block : BP output rows x BQ output columns of one (image, output
//           channel) plane; grid.x counts the tiles, column tile fastest,
//           then row tile, output channel, image
//   thread: TP columns of one output row, BQ / TP apart (so that a warp's
//           lanes read neighbouring words of shared memory and store
//           neighbouring outputs)
// The block first stages its input tile (IR x IC floats, zero where the
// tile overhangs the image: the padding; rows IP >= IC floats apart, so
// that the rows a warp reads together fall on distinct banks) and the
// channel's R x S weights in shared memory, then each thread sums its taps
// from there, in the
// float64 reference's order (r, then s).  Bias, residual and activation
// come last, in ct_fin.
//
// The generator prepends the problem (CT_*), the parameters (THREADS, TP,
// BQ) and the plan's launch quantities (CT_PLAN_*).  Without them the file
// compiles on its own for a depthwise 3x3 problem with the default
// parameters.

#ifndef CT_N
#define CT_N 32
#define CT_C 144
#define CT_H 56
#define CT_W 56
#define CT_K 144
#define CT_R 3
#define CT_S 3
#define CT_STRIDE_H 1
#define CT_STRIDE_W 1
#define CT_PAD_H 1
#define CT_PAD_W 1
#define CT_DIL_H 1
#define CT_DIL_W 1
#define CT_BIAS 0
#define CT_GROUPS 144
#endif

#define CT_TAKES_GROUPS 1 // each output channel reads its group's one channel (ct_act.cuh)
#include "ct_problem.cuh"
#include "ct_act.cuh"

#ifndef THREADS
#define THREADS 128 // threads per block
#endif
#ifndef TP
#define TP 2 // output columns per thread
#endif
#ifndef BQ
#define BQ 32 // output columns per tile
#endif

#include "ct_dw.cuh"

namespace dw {

CT_PROBLEM_CONSTANTS
CT_PROBLEM_CHECKS_SHAPE

constexpr int M = K / C;                    // output channels per input channel
constexpr int LPR = BQ / TP;                // threads along a row
constexpr int BP = (int)ct_dw_rows(THREADS, TP, BQ); // output rows per tile
constexpr int IR = (int)ct_dw_in_rows(BP, SH, DH, R); // input rows of a tile
constexpr int IC = (int)ct_dw_in_cols(BQ, SW, DW, S); // input columns of a tile
constexpr int IP = (int)ct_dw_pitch(IC, LPR, SH, SW);  // its row pitch in shared memory
constexpr unsigned kColTiles = (unsigned)(((long long)Q + BQ - 1) / BQ),
                   kRowTiles = (unsigned)(((long long)P + BP - 1) / BP);
constexpr long long kTiles = ct_dw_tiles(N, K, P, Q, BP, BQ);
constexpr int kSmemBytes = (int)ct_dw_smem_bytes(IR, IP, R, S);

static_assert(CT_GROUPS == C && K % C == 0, "dw: depthwise problems only (groups = C)");
static_assert(CT_LAYOUT == 0, "dw: NCHW tensors only");
static_assert(BP >= 1, "THREADS, TP, BQ: BQ / TP threads along a row must divide THREADS");
static_assert(THREADS % 32 == 0 && THREADS <= 1024, "THREADS: whole warps, <= 1024");
static_assert(kTiles <= 0x7fffffffLL, "too many tiles for grid.x");
// The rows and columns the last tiles span, and the tile indices, in int.
static_assert(((long long)kRowTiles * BP - 1) * SH + (long long)(R - 1) * DH <= 0x7fffffffLL &&
                  ((long long)kColTiles * BQ - 1) * SW + (long long)(S - 1) * DW <=
                      0x7fffffffLL &&
                  (long long)P + BP <= 0x7fffffffLL && (long long)Q + BQ <= 0x7fffffffLL,
              "tile coordinates overflow 32 bits");
static_assert(CT_PLAN_HAS_BLOCK_X(THREADS), "plan: block size != THREADS");
static_assert(CT_PLAN_GRID_X_IN(kTiles, kTiles), "plan: grid size != number of tiles");
static_assert(CT_PLAN_HAS_SMEM(kSmemBytes), "plan: shared memory size differs");

} // namespace dw

// ----------------------------------------------------------------------------
// The kernel.  Launch: grid (CT_PLAN_GRID_X), block (THREADS), CT_PLAN_SMEM
// bytes of dynamic shared memory.  ws is unused.

extern "C" __global__ void __launch_bounds__(THREADS)
conv_dw(const float *__restrict__ x, const float *__restrict__ w,
        const float *__restrict__ b, float *__restrict__ y, float *ws) {
  using namespace dw;
  extern __shared__ float4 smem4[]; // float4: 16-byte aligned
  float *tile = reinterpret_cast<float *>(smem4); // [IR][IP], IC columns used
  float *wt = tile + IR * IP;                     // [R][S]
  (void)ws; // no workspace
  (void)b;  // unread when CT_BIAS is 0

  unsigned t = blockIdx.x;
  const unsigned qt = t % kColTiles;
  t /= kColTiles;
  const unsigned pt = t % kRowTiles;
  t /= kRowTiles;
  const int k = (int)(t % K), n = (int)(t / K);
  const int p0 = (int)pt * BP, q0 = (int)qt * BQ;
  const int h0 = p0 * SH - PH, w0 = q0 * SW - PW; // the tile's first input row, column

  // Stage the input tile (zero outside the image) and the weights.
  const float *__restrict__ xp = x + ((long long)n * C + k / M) * H * W;
#pragma unroll 4
  for (int e = threadIdx.x; e < IR * IC; e += THREADS) {
    const int i = e / IC, j = e - i * IC;
    const int h = h0 + i, v = w0 + j;
    tile[i * IP + j] = (unsigned)h < (unsigned)H && (unsigned)v < (unsigned)W
                           ? __ldg(xp + (long long)h * W + v)
                           : 0.0f;
  }
  for (int e = threadIdx.x; e < R * S; e += THREADS) wt[e] = __ldg(w + (long long)k * R * S + e);
  __syncthreads();

  const int lane = threadIdx.x % LPR, row = threadIdx.x / LPR;
  float acc[TP];
#pragma unroll
  for (int i = 0; i < TP; ++i) acc[i] = 0.0f;
  for (int r = 0; r < R; ++r) {
    const float *trow = tile + (row * SH + r * DH) * IP + lane * SW;
    for (int s = 0; s < S; ++s) {
      const float wv = wt[r * S + s];
#pragma unroll
      for (int i = 0; i < TP; ++i) acc[i] = fmaf(wv, trow[i * LPR * SW + s * DW], acc[i]);
    }
  }

  const int p = p0 + row;
  if (p < P) {
#if CT_BIAS
    const float bv = __ldg(b + k);
#else
    const float bv = 0.0f;
#endif
    float *__restrict__ yrow = y + (((long long)n * K + k) * P + p) * Q;
    float r[TP]; // a residual: all TP loaded before any is stored (ct_act.cuh's ct_res)
#pragma unroll
    for (int i = 0; i < TP; ++i) {
      const int q = q0 + lane + i * LPR;
      r[i] = 0.0f;
      if (q < Q) r[i] = ct_res(yrow + q);
    }
#pragma unroll
    for (int i = 0; i < TP; ++i) {
      const int q = q0 + lane + i * LPR;
      if (q < Q) yrow[q] = ct_fin(acc[i] + bv, r[i]);
    }
  }
}
