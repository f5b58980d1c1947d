// ct_check.cuh — the precision contract's scan of a variant's output, written
// once for the GPU check (ref_f64.cu's ct_check_f64) and for the CPU
// (tuner/verify.c includes this file as C), so the two give the same figures
// bit for bit on the same data.  tuner/verify.h gives the contract.
//
// The order of the arithmetic is part of the definition:
//   - The outputs are cut into tiles of CT_CHECK_TILE = LANES * STEPS
//     consecutive elements (the last one may be short).
//   - Lane t of a tile scans elements t, t + LANES, ..., t + (STEPS-1)*LANES
//     of it, in that order, into its own ct_check_tile.
//   - The lanes are then merged pairwise: for s = LANES/2, ..., 2, 1, lane t
//     (t < s) takes in lane t + s.  Lane 0 holds the tile's figures.
//   - The tiles are merged in order, 0 first (verify.c).
// Every sum is a plain IEEE double add of a plainly rounded product: CUDA's
// __dadd_rn / __dmul_rn are never contracted into FMAs, and the C build
// compiles with -ffp-contract=off.  The maxima, counts and first indices do
// not depend on the order at all.

#ifndef CT_CHECK_CUH
#define CT_CHECK_CUH

#define CT_CHECK_LANES 256
#define CT_CHECK_STEPS 16
#define CT_CHECK_TILE (CT_CHECK_LANES * CT_CHECK_STEPS)

#ifdef __CUDACC__
#define CT_CHECK_FN __host__ __device__ __forceinline__
#define CT_CHECK_ADD(a, b) __dadd_rn((a), (b))
#define CT_CHECK_MUL(a, b) __dmul_rn((a), (b))
#define CT_CHECK_FINITE(v) isfinite(v)
#else
#include <math.h>
#define CT_CHECK_FN static inline
#define CT_CHECK_ADD(a, b) ((a) + (b))
#define CT_CHECK_MUL(a, b) ((a) * (b))
#define CT_CHECK_FINITE(v) isfinite(v)
#endif

// The figures of a set of outputs.
typedef struct ct_check_tile {
  double err2;        // sum (y - ref)^2 over the finite outputs
  double ref2;        // sum ref^2 over the finite outputs
  double a2;          // sum sq_sum over all outputs
  double max_abs;     // max |y - ref| over the finite outputs
  double max_close;   // max |y - ref| / (tol + tol*|ref|) (the headline's fp32 figure)
  double max_ratio;   // max |y - ref| / elementwise bound
  double worst_err;   // |y - ref| at worst
  double worst_bound; // the elementwise bound at worst
  long long worst;       // first index with the largest ratio; -1: no finite output
  long long first_bad;   // first non-finite output; -1: none
  long long n_nonfinite; // non-finite outputs
} ct_check_tile;

CT_CHECK_FN void ct_check_tile_init(ct_check_tile *t) {
  t->err2 = t->ref2 = t->a2 = 0.0;
  t->max_abs = t->max_close = t->max_ratio = 0.0;
  t->worst_err = t->worst_bound = 0.0;
  t->worst = t->first_bad = -1;
  t->n_nonfinite = 0;
}

// Adds output i (y against its reference figures ref, abs_sum, sq_sum).
// elem_coef is the elementwise bound's coefficient, close_tol the headline's
// atol = rtol.  Outputs must come in increasing i within one ct_check_tile.
CT_CHECK_FN void ct_check_tile_add(ct_check_tile *t, long long i, float y,
                                   double ref, double abs_sum, double sq_sum,
                                   double elem_coef, double close_tol) {
  t->a2 = CT_CHECK_ADD(t->a2, sq_sum);
  if (!CT_CHECK_FINITE(y)) {
    if (t->first_bad < 0) t->first_bad = i;
    t->n_nonfinite++;
    return;
  }
  const double d = fabs((double)y - ref);
  const double bound = CT_CHECK_ADD(CT_CHECK_MUL(elem_coef, abs_sum), 1e-37);
  const double ratio = d / bound;
  const double close =
      d / CT_CHECK_ADD(close_tol, CT_CHECK_MUL(close_tol, fabs(ref)));
  if (d > t->max_abs) t->max_abs = d;
  if (close > t->max_close) t->max_close = close;
  if (t->worst < 0 || ratio > t->max_ratio) {
    t->max_ratio = ratio;
    t->worst = i;
    t->worst_err = d;
    t->worst_bound = bound;
  }
  t->err2 = CT_CHECK_ADD(t->err2, CT_CHECK_MUL(d, d));
  t->ref2 = CT_CHECK_ADD(t->ref2, CT_CHECK_MUL(ref, ref));
}

// a := a and then b: sums added (a's first), maxima kept, the worst output
// the one with the larger ratio (the lower index on a tie), the first
// non-finite one the lower index.
CT_CHECK_FN void ct_check_tile_merge(ct_check_tile *a, const ct_check_tile *b) {
  a->err2 = CT_CHECK_ADD(a->err2, b->err2);
  a->ref2 = CT_CHECK_ADD(a->ref2, b->ref2);
  a->a2 = CT_CHECK_ADD(a->a2, b->a2);
  if (b->max_abs > a->max_abs) a->max_abs = b->max_abs;
  if (b->max_close > a->max_close) a->max_close = b->max_close;
  if (b->worst >= 0 &&
      (a->worst < 0 || b->max_ratio > a->max_ratio ||
       (b->max_ratio == a->max_ratio && b->worst < a->worst))) {
    a->max_ratio = b->max_ratio;
    a->worst = b->worst;
    a->worst_err = b->worst_err;
    a->worst_bound = b->worst_bound;
  }
  if (b->first_bad >= 0 && (a->first_bad < 0 || b->first_bad < a->first_bad))
    a->first_bad = b->first_bad;
  a->n_nonfinite += b->n_nonfinite;
}

#endif // CT_CHECK_CUH
