// conv_s2d.cu — families "s2d_wg" and "s2d_wg3": a layout transform, then
// conv_wg.cu on the transformed problem.  Three launches, in order, on one
// stream; the variant's time counts all three.
//
//   s2d_x   x (N, C, H, W) -> ws: x' (N, C', H', W'), space-to-depth by the
//           strides with the padding made explicit:
//             x'[n][(c*SH + ph)*SW + pw][i][j] = xpad[n][c][i*SH + ph][j*SW + pw]
//           where xpad is x with PH rows and PW columns of zeros around it.
//   s2d_w   w (K, C, R, S) -> ws + XS_OFF: w' (K, C', R', S'),
//             w'[k][(c*SH + ph)*SW + pw][r'][s'] = w[k][c][r'*SH + ph][s'*SW + pw]
//           and 0 where r'*SH + ph >= R or s'*SW + pw >= S (a kernel padded
//           to R'*SH x S'*SW with zeros).
//   conv_wg the transformed problem: C' = C*SH*SW channels of H' x W',
//           an R' x S' kernel, stride 1, no padding, no dilation, the same
//           bias and the same output (N, K, P, Q).
//
// Why it is the same convolution: with r = r'*SH + ph and s = s'*SW + pw,
//   y[n][k][p][q] = sum_{c,r,s} w[k][c][r][s] xpad[n][c][p*SH + r][q*SW + s]
//                 = sum_{c',r',s'} w'[k][c'][r'][s'] x'[n][c'][p + r'][q + s'],
// the taps past R or S carrying weight 0.  R' = ceil(R/SH), S' = ceil(S/SW),
// H' = P + R' - 1, W' = Q + S' - 1: exactly the rows and columns the output
// reads (a row or column of xpad past its end reads 0).  Dilation must be 1
// (generator/family_wg.c declines the rest).  For the headline problem:
// 48 channels of 57 x 57, a 3 x 3 kernel (12 x 12 with 23 zero taps, 19 %
// more products), stride 1: the gathers become regular, at the price of a
// pass over the input (154 MB read, 160 MB written).
//
// The generator prepends the problem as given (CT_*), the parameters of
// conv_wg.cu, the plan's lines for conv_wg (CT_PLAN_*, CT_WG_SPLIT) and for
// the transform (CT_S2D_*: the transformed sizes, the offset of w' in ws,
// the transform kernels' grids).  Without them the file compiles on its
// own (sm_90a): the headline problem.

#include "ct_problem.cuh"

#ifndef CT_S2D_C // on its own: the headline problem's numbers (checked below)
#define CT_S2D_C 48
#define CT_S2D_R 3
#define CT_S2D_S 3
#define CT_S2D_H 57
#define CT_S2D_W 57
#define CT_S2D_XS_OFF 39923712
#undef CT_P
#define CT_P 55
#undef CT_Q
#define CT_Q 55
#ifndef BN
#define BN 48 // conv_wg's default 96 with two bands is past 227 KB here
#endif
#endif

namespace s2d {

CT_PROBLEM_CONSTANTS
constexpr int C2 = CT_S2D_C, H2 = CT_S2D_H, W2 = CT_S2D_W, R2 = CT_S2D_R, S2 = CT_S2D_S;
constexpr long long XS_OFF = CT_S2D_XS_OFF; // floats from ws to w'
constexpr long long NX2 = (long long)N * C2 * H2 * W2;
constexpr long long NW2 = (long long)K * C2 * R2 * S2;

static_assert(CT_DIL_H == 1 && CT_DIL_W == 1, "space-to-depth needs dilation 1");
static_assert(C2 == C * SH * SW && R2 == (R + SH - 1) / SH && S2 == (S + SW - 1) / SW &&
                  H2 == CT_P + R2 - 1 && W2 == CT_Q + S2 - 1,
              "CT_S2D_* disagree with the problem");
static_assert(XS_OFF >= NX2 && XS_OFF % 4 == 0, "w' must follow x' 16-byte aligned");
static_assert(NX2 <= 0x7fffffffLL && NW2 <= 0x7fffffffLL && (long long)N * C * H * W <= 0x7fffffffLL,
              "32-bit indexing needs every tensor below 2^31 elements");

} // namespace s2d

// x -> x' (grid-stride over x' in its order: the stores are coalesced; the
// loads of one warp stride SW floats, their lines shared through L1/L2 by
// the SW*SH channels that read them).
extern "C" __global__ void __launch_bounds__(256)
s2d_x(const float *__restrict__ x, const float *__restrict__ w,
      const float *__restrict__ b, float *__restrict__ y, float *ws) {
  using namespace s2d;
  (void)w;
  (void)b;
  (void)y;
  for (int e = blockIdx.x * blockDim.x + threadIdx.x; e < (int)NX2;
       e += gridDim.x * blockDim.x) {
    const int j = e % W2, i = (e / W2) % H2, cc = (e / (W2 * H2)) % C2;
    const int n = e / (W2 * H2 * C2);
    const int c = cc / (SH * SW), ph = (cc / SW) % SH, pw = cc % SW;
    const int ih = i * SH + ph - PH, iw = j * SW + pw - PW;
    const bool in = (unsigned)ih < (unsigned)H && (unsigned)iw < (unsigned)W;
    ws[e] = in ? __ldg(x + ((n * C + c) * H + ih) * W + iw) : 0.0f;
  }
}

// w -> w' at ws + XS_OFF (grid-stride over w').
extern "C" __global__ void __launch_bounds__(256)
s2d_w(const float *__restrict__ x, const float *__restrict__ w,
      const float *__restrict__ b, float *__restrict__ y, float *ws) {
  using namespace s2d;
  (void)x;
  (void)b;
  (void)y;
  float *const w2 = ws + XS_OFF;
  for (int e = blockIdx.x * blockDim.x + threadIdx.x; e < (int)NW2;
       e += gridDim.x * blockDim.x) {
    const int s2 = e % S2, r2 = (e / S2) % R2, cc = (e / (S2 * R2)) % C2;
    const int k = e / (S2 * R2 * C2);
    const int c = cc / (SH * SW), ph = (cc / SW) % SH, pw = cc % SW;
    const int r = r2 * SH + ph, s = s2 * SW + pw;
    w2[e] = r < R && s < S ? __ldg(w + ((k * C + c) * R + r) * S + s) : 0.0f;
  }
}

// ----------------------------------------------------------------------------
// conv_wg on the transformed problem, reading x' and w' from the workspace.

#undef CT_C
#undef CT_H
#undef CT_W
#undef CT_R
#undef CT_S
#undef CT_STRIDE_H
#undef CT_STRIDE_W
#undef CT_PAD_H
#undef CT_PAD_W
#define CT_C CT_S2D_C
#define CT_H CT_S2D_H
#define CT_W CT_S2D_W
#define CT_R CT_S2D_R
#define CT_S CT_S2D_S
#define CT_STRIDE_H 1
#define CT_STRIDE_W 1
#define CT_PAD_H 0
#define CT_PAD_W 0
#define CT_XW_WS CT_S2D_XS_OFF

#include "conv_wg.cu"
