// conv_dwc.cu — family "dwc": a depthwise convolution (groups = C: output
// channel k reads input channel k / M alone, K = M * C for a channel
// multiplier M) over channels-last tensors (CT_LAYOUT 1: x NHWC, w KRSC with
// one channel, y NPQK), any stride, padding and dilation, with or without
// bias, fused ReLU or residual.  Products and sums are IEEE fp32 fmaf, so
// it meets both the tf32 and the fp32 contracts.
//
// Work decomposition
//   thread: one output channel k, TP consecutive output columns of one
//           output row; the channels are the fastest index of x and y, so
//           a warp's 32 lanes, 32 neighbouring channels, read and write
//           whole 128-byte lines
//   block : CB channels x RB column strips of one output row (THREADS =
//           CB * RB); grid.x counts the tiles, channel tile fastest, then
//           column tile, output row, image
// The block first stages its CB channels' R x S weights in shared memory,
// [tap][channel] with a pitch of CB + 1 (the lanes read one tap's weights
// from consecutive words; the staging writes them without conflicts).
// Then for each filter row a thread loads the input columns its TP
// outputs need once into registers (when they span few enough columns;
// else it reads each tap from memory, through L1), and sums the taps in
// the float64 reference's order (r, then s).  Bias, residual and
// activation come last, in ct_fin.
//
// The generator prepends the problem (CT_*), the parameters (CB, TP, RB)
// and the plan's launch quantities (CT_PLAN_*).  Without them the file
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
#define CT_LAYOUT 1
#endif

#define CT_TAKES_GROUPS 1 // each output channel reads its group's one channel (ct_act.cuh)
#include "ct_problem.cuh"
#include "ct_act.cuh"

#ifndef CB
#define CB 32 // output channels per block, one per thread
#endif
#ifndef TP
#define TP 4 // output columns per thread
#endif
#ifndef RB
#define RB 4 // column strips per block
#endif

#include "ct_dw.cuh"

namespace dwc {

CT_PROBLEM_CONSTANTS
CT_PROBLEM_CHECKS_SHAPE

constexpr int THREADS = CB * RB;
constexpr int M = K / C;                        // output channels per input channel
constexpr int BQ = RB * TP;                     // output columns per tile
constexpr unsigned kChanTiles = (unsigned)(((long long)K + CB - 1) / CB),
                   kColTiles = (unsigned)(((long long)Q + BQ - 1) / BQ);
constexpr long long kTiles = ct_dwc_tiles(N, K, P, Q, CB, BQ);
constexpr int kWPitch = CB + 1;                 // a tap's weights in shared memory
constexpr int kSmemBytes = (int)ct_dwc_smem_bytes(R, S, CB);
// Input columns a thread's TP outputs read in one filter row, first to last.
constexpr long long kSpan = (long long)(TP - 1) * SW + (long long)(S - 1) * DW + 1;
constexpr bool kSegment = S <= 32 && kSpan <= 48; // load them once, s unrolled

static_assert(CT_GROUPS == C && K % C == 0, "dwc: depthwise problems only (groups = C)");
static_assert(CT_LAYOUT == 1, "dwc: channels-last (NHWC) tensors only");
static_assert(THREADS % 32 == 0 && THREADS <= 256, "CB * RB: whole warps, <= 256");
static_assert(kTiles <= 0x7fffffffLL, "too many tiles for grid.x");
// The channel and column indices, and the columns a thread reads, in int.
static_assert((long long)K + CB <= 0x7fffffffLL && (long long)Q + BQ <= 0x7fffffffLL &&
                  (long long)(Q - 1 + TP - 1) * SW + (long long)(S - 1) * DW <= 0x7fffffffLL,
              "channel or column coordinates overflow 32 bits");
static_assert(CT_PLAN_HAS_BLOCK_X(THREADS), "plan: block size != CB * RB");
static_assert(CT_PLAN_GRID_X_IN(kTiles, kTiles), "plan: grid size != number of tiles");
static_assert(CT_PLAN_HAS_SMEM(kSmemBytes), "plan: shared memory size differs");

} // namespace dwc

// ----------------------------------------------------------------------------
// The kernel.  Launch: grid (CT_PLAN_GRID_X), block (CB * RB), CT_PLAN_SMEM
// bytes of dynamic shared memory.  ws is unused.

extern "C" __global__ void __launch_bounds__(dwc::THREADS)
conv_dwc(const float *__restrict__ x, const float *__restrict__ w,
         const float *__restrict__ b, float *__restrict__ y, float *ws) {
  using namespace dwc;
  extern __shared__ float4 smem4[]; // float4: 16-byte aligned
  float *wt = reinterpret_cast<float *>(smem4); // [R * S][kWPitch], CB channels used
  (void)ws; // no workspace
  (void)b;  // unread when CT_BIAS is 0

  unsigned t = blockIdx.x;
  const unsigned kt = t % kChanTiles;
  t /= kChanTiles;
  const unsigned qt = t % kColTiles;
  t /= kColTiles;
  const int p = (int)(t % P), n = (int)(t / P);
  const int lane = (int)(threadIdx.x % CB);
  const int k = (int)kt * CB + lane;
  const int q0 = (int)qt * BQ + (int)(threadIdx.x / CB) * TP;

  // The block's weights, read in w's order (channel, tap: consecutive
  // threads, consecutive words), stored [tap][channel].
  for (int e = threadIdx.x; e < CB * R * S; e += THREADS) {
    const int kk = e / (R * S), rs = e - kk * (R * S);
    const long long kg = (long long)kt * CB + kk;
    wt[rs * kWPitch + kk] = kg < K ? __ldg(w + kg * R * S + rs) : 0.0f;
  }
  __syncthreads();
  if (k >= K || q0 >= Q) return; // past the last barrier
  const int c = k / M;
  const int col0 = q0 * SW - PW; // input column of tap s = 0, output q0

  float acc[TP];
#pragma unroll
  for (int i = 0; i < TP; ++i) acc[i] = 0.0f;
  for (int r = 0; r < R; ++r) {
    const int h = p * SH - PH + r * DH;
    if ((unsigned)h >= (unsigned)H) continue; // zero padding
    const float *__restrict__ xrow = x + ((long long)n * H + h) * W * C + c;
    const float *wrow = wt + r * S * kWPitch + lane; // tap (r, s) at wrow[s * kWPitch]
    // x[n][h][col][c], zero outside the image.
    auto load = [&](int col) {
      return (unsigned)col < (unsigned)W ? __ldg(xrow + (long long)col * C) : 0.0f;
    };
    if constexpr (kSegment) {
      float seg[kSegment ? kSpan : 1];
#pragma unroll
      for (int e = 0; e < kSpan; ++e) seg[e] = load(col0 + e);
#pragma unroll
      for (int s = 0; s < S; ++s) {
        const float wv = wrow[s * kWPitch];
#pragma unroll
        for (int i = 0; i < TP; ++i) acc[i] = fmaf(wv, seg[i * SW + s * DW], acc[i]);
      }
    } else {
      for (int s = 0; s < S; ++s) {
        const float wv = wrow[s * kWPitch];
#pragma unroll
        for (int i = 0; i < TP; ++i) acc[i] = fmaf(wv, load(col0 + i * SW + s * DW), acc[i]);
      }
    }
  }

#if CT_BIAS
  const float bv = __ldg(b + k);
#else
  const float bv = 0.0f;
#endif
  float *__restrict__ yp = y + (((long long)n * P + p) * Q + q0) * K + k;
  float r[TP]; // a residual: all TP loaded before any is stored (ct_act.cuh's ct_res)
#pragma unroll
  for (int i = 0; i < TP; ++i) r[i] = q0 + i < Q ? ct_res(yp + (long long)i * K) : 0.0f;
#pragma unroll
  for (int i = 0; i < TP; ++i)
    if (q0 + i < Q) yp[(long long)i * K] = ct_fin(acc[i] + bv, r[i]);
}
