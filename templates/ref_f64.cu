// ref_f64.cu — the float64 reference convolution the tuner checks every
// variant against, and the check itself.  Written to be obviously right, not
// fast: one thread per output element, plain loops over c, r, s, padded taps
// skipped, 64-bit indices, every product formed in double (a product of two
// floats is exact in double; only the sums round).  The sums are taken in
// the CPU reference's order (tuner/verify.c) with adds and multiplies that
// are never fused, so the two agree bit for bit.
//
// Besides y the reference gives, per output element, the two figures the
// precision contract scales its tolerance with: abs_sum = sum |x*w| (+|b|)
// and sq_sum = sum (x*w)^2 (+b^2).  A residual problem (CT_RESIDUAL 1) adds
// its residual res (y's value on entry, in the output's layout) last, as
// one more term of all three.  With act=relu (CT_ACT 1) y is relu(sum),
// with act=relu6 (CT_ACT 2) relu6(sum); abs_sum and sq_sum are the sum's.
//
// Kernels (256 threads per block, no shared memory beyond the static):
//   ct_ref_f64          ceil(N*K*P*Q / 256) blocks: writes y, abs_sum, sq_sum
//   ct_check_f64        ceil(N*K*P*Q / CT_CHECK_TILE) blocks: one tile each of
//                       the contract's scan (ct_check.cuh) of a variant's
//                       output against the stored reference
//   ct_check_f64_fused  the same, computing the reference as it goes (for
//                       problems whose reference does not fit beside them)
//   ct_unwritten        ceil(N*K*P*Q / 256) blocks: counts the outputs a
//                       residual problem's variant left as they were
//                       (below)
// The generator prepends the problem (CT_*); without it the file compiles for
// the headline problem.

#define CT_TAKES_GROUPS 1 // the reference reads each output's group (ct_act.cuh)
#include "ct_problem.cuh"
#include "ct_act.cuh"
#include "ct_check.cuh"

#define CT_REF_THREADS 256

namespace ref {

typedef long long i64;

constexpr i64 N = CT_N, C = CT_C, H = CT_H, W = CT_W, K = CT_K, R = CT_R,
              S = CT_S, P = CT_P, Q = CT_Q;
constexpr i64 CG = C / CT_GROUPS, KG = K / CT_GROUPS; // channels per group
constexpr i64 kOutputs = N * K * P * Q;

static_assert(CT_REF_THREADS == CT_CHECK_LANES, "a check tile's lanes are its block");

struct Figures {
  double y, abs_sum, sq_sum;
};

// The reference figures of output idx = ((n*K + k)*P + p)*Q + q (NHWC,
// CT_LAYOUT 1: ((n*P + p)*Q + q)*K + k).
__device__ __forceinline__ void add_term(double v, double &acc, double &asum, double &ssum) {
  acc = __dadd_rn(acc, v);
  asum = __dadd_rn(asum, fabs(v));
  ssum = __dadd_rn(ssum, __dmul_rn(v, v));
}

// reference_sum: the figures before the activation (y the sum itself).
__device__ __forceinline__ Figures reference_sum(const float *x, const float *w,
                                                 const float *b, const float *res, i64 idx) {
  constexpr bool nhwc = CT_LAYOUT == 1;
  const i64 k = nhwc ? idx % K : (idx / (Q * P)) % K;
  const i64 q = nhwc ? (idx / K) % Q : idx % Q;
  const i64 p = nhwc ? (idx / (K * Q)) % P : (idx / Q) % P;
  const i64 n = idx / (Q * P * K);

  // Output channel k reads the CG input channels of its group, from c0 on;
  // w holds CG channels per output channel.
  const i64 c0 = k / KG * CG;
  double acc = 0.0, asum = 0.0, ssum = 0.0;
  for (i64 c = 0; c < CG; ++c) {
    for (i64 r = 0; r < R; ++r) {
      const i64 h = p * CT_STRIDE_H - CT_PAD_H + r * CT_DIL_H;
      if (h < 0 || h >= H) continue; // zero padding
      for (i64 s = 0; s < S; ++s) {
        const i64 col = q * CT_STRIDE_W - CT_PAD_W + s * CT_DIL_W;
        if (col < 0 || col >= W) continue; // zero padding
        const double xv = (double)x[nhwc ? ((n * H + h) * W + col) * C + c0 + c
                                         : ((n * C + c0 + c) * H + h) * W + col];
        const double wv = (double)w[nhwc ? ((k * R + r) * S + s) * CG + c
                                         : ((k * CG + c) * R + r) * S + s];
        add_term(__dmul_rn(xv, wv), acc, asum, ssum);
      }
    }
  }
#if CT_BIAS
  add_term((double)b[k], acc, asum, ssum);
#else
  (void)b;
#endif
#if CT_RESIDUAL
  if (res) add_term((double)res[idx], acc, asum, ssum); // NULL: the convolution's terms alone
#else
  (void)res;
#endif
  return Figures{acc, asum, ssum};
}

// The activation on y only: ReLU and ReLU6 move no output further from
// another (|relu(a) - relu(b)| <= |a - b|, and so for the clamp to 6), so
// the tolerances' figures stay those of the sum.
__device__ __forceinline__ Figures reference_at(const float *x, const float *w,
                                                const float *b, const float *res, i64 idx) {
  const Figures f = reference_sum(x, w, b, res, idx);
  return Figures{ct_act_f64(f.y), f.abs_sum, f.sq_sum};
}

// One tile of the contract's scan (ct_check.cuh's order) into tiles[tile];
// FIG(i) gives output i's reference figures.
template <class Fig>
__device__ __forceinline__ void check_tile(const float *y, double elem_coef,
                                           double close_tol, ct_check_tile *tiles,
                                           Fig fig) {
  __shared__ ct_check_tile lane[CT_CHECK_LANES];
  const int t = threadIdx.x;
  const i64 base = (i64)blockIdx.x * CT_CHECK_TILE;
  ct_check_tile mine;
  ct_check_tile_init(&mine);
  for (int j = 0; j < CT_CHECK_STEPS; ++j) {
    const i64 i = base + (i64)j * CT_CHECK_LANES + t;
    if (i < kOutputs) {
      const Figures f = fig(i);
      ct_check_tile_add(&mine, i, y[i], f.y, f.abs_sum, f.sq_sum, elem_coef,
                        close_tol);
    }
  }
  lane[t] = mine;
  __syncthreads();
  for (int s = CT_CHECK_LANES / 2; s >= 1; s /= 2) {
    if (t < s) ct_check_tile_merge(&lane[t], &lane[t + s]);
    __syncthreads();
  }
  if (t == 0) tiles[blockIdx.x] = lane[0];
}

} // namespace ref

extern "C" __global__ void __launch_bounds__(CT_REF_THREADS)
ct_ref_f64(const float *x, const float *w, const float *b, const float *res, double *y,
           double *abs_sum, double *sq_sum) {
  const ref::i64 idx = (ref::i64)blockIdx.x * CT_REF_THREADS + threadIdx.x;
  if (idx >= ref::kOutputs) return;
  const ref::Figures f = ref::reference_at(x, w, b, res, idx);
  y[idx] = f.y;
  abs_sum[idx] = f.abs_sum;
  sq_sum[idx] = f.sq_sum;
}

extern "C" __global__ void __launch_bounds__(CT_REF_THREADS)
ct_check_f64(const float *y, const double *ref_y, const double *abs_sum,
             const double *sq_sum, double elem_coef, double close_tol,
             ct_check_tile *tiles) {
  ref::check_tile(y, elem_coef, close_tol, tiles, [=](ref::i64 i) {
    return ref::Figures{ref_y[i], abs_sum[i], sq_sum[i]};
  });
}

extern "C" __global__ void __launch_bounds__(CT_REF_THREADS)
ct_check_f64_fused(const float *x, const float *w, const float *b, const float *res,
                   const float *y, double elem_coef, double close_tol,
                   ct_check_tile *tiles) {
  ref::check_tile(y, elem_coef, close_tol, tiles, [=](ref::i64 i) {
    return ref::reference_at(x, w, b, res, i);
  });
}

// A residual problem's variant reads y, so its output cannot be poisoned
// with NaN to show an element it never stores.  Instead the tuner fills y
// with `probe` (2^-100), runs the variant and counts here the outputs still
// equal to it, bit for bit.  A stored output is act(s + 2^-100), s the
// kernel's conv + b in fp32, and that is 2^-100 again where s rounds to 0:
// where every term is zero (a tap set all on the padding, without bias), and
// also, about once in 10^7 outputs, where the terms cancel to exactly 0.0f.
// An output is counted only where the contract forbids such an s = 0: where
// the float64 sum is further from 0 than the elementwise bound,
// elem_coef * abs_sum + 1e-37 (ct_check.cuh's), allows.  An output left unwritten
// there would pass the first check as well (it holds the residual, the
// reference the residual plus a sum within its bound of 0).
extern "C" __global__ void __launch_bounds__(CT_REF_THREADS)
ct_unwritten(const float *x, const float *w, const float *b, const float *y, float probe,
             double elem_coef, unsigned long long *count) {
  const ref::i64 idx = (ref::i64)blockIdx.x * CT_REF_THREADS + threadIdx.x;
  if (idx >= ref::kOutputs || __float_as_uint(y[idx]) != __float_as_uint(probe)) return;
  const ref::Figures f = ref::reference_sum(x, w, b, nullptr, idx);
  if (fabs(f.y) > __dadd_rn(__dmul_rn(elem_coef, f.abs_sum), 1e-37)) atomicAdd(count, 1ull);
}
