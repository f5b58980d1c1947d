// ref_f64.cu — the float64 reference convolution the tuner checks every
// variant against.  Written to be obviously right, not fast: one thread per
// output element, plain loops over c, r, s, padded taps skipped, 64-bit
// indices, every product formed in double (a product of two floats is exact
// in double; only the sums round).
//
// Besides y it writes, per output element, the two figures the precision
// contract scales its tolerance with: abs_sum = sum |x*w| (+|b|) and
// sq_sum = sum (x*w)^2 (+b^2).
//
// Launch: 256 threads per block, ceil(N*K*P*Q / 256) blocks, no shared memory.
// The generator prepends the problem (CT_*); without it the file compiles for
// the headline problem.

#include "ct_problem.cuh"

#define CT_REF_THREADS 256

extern "C" __global__ void __launch_bounds__(CT_REF_THREADS)
ct_ref_f64(const float *x, const float *w, const float *b, double *y,
           double *abs_sum, double *sq_sum) {
  typedef long long i64;
  const i64 N = CT_N, C = CT_C, H = CT_H, W = CT_W, K = CT_K, R = CT_R, S = CT_S;
  const i64 P = CT_P, Q = CT_Q;
  const i64 idx = (i64)blockIdx.x * CT_REF_THREADS + threadIdx.x;
  if (idx >= N * K * P * Q) return;

  // idx = ((n*K + k)*P + p)*Q + q
  const i64 q = idx % Q;
  const i64 p = (idx / Q) % P;
  const i64 k = (idx / (Q * P)) % K;
  const i64 n = idx / (Q * P * K);

  double acc = 0.0, asum = 0.0, ssum = 0.0;
  for (i64 c = 0; c < C; ++c) {
    for (i64 r = 0; r < R; ++r) {
      const i64 h = p * CT_STRIDE_H - CT_PAD_H + r * CT_DIL_H;
      if (h < 0 || h >= H) continue; // zero padding
      for (i64 s = 0; s < S; ++s) {
        const i64 col = q * CT_STRIDE_W - CT_PAD_W + s * CT_DIL_W;
        if (col < 0 || col >= W) continue; // zero padding
        const double xv = (double)x[((n * C + c) * H + h) * W + col];
        const double wv = (double)w[((k * C + c) * R + r) * S + s];
        const double prod = xv * wv;
        acc += prod;
        asum += fabs(prod);
        ssum += prod * prod;
      }
    }
  }
#if CT_BIAS
  const double bv = (double)b[k];
  acc += bv;
  asum += fabs(bv);
  ssum += bv * bv;
#else
  (void)b;
#endif
  y[idx] = acc;
  abs_sum[idx] = asum;
  sq_sum[idx] = ssum;
}
