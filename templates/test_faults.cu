// test_faults.cu — TEST ONLY: deliberately broken kernels that prove the
// tuner's fault isolation.  generator/family_test.c offers them only when
// the environment says CONVTUNE_TEST_FAMILIES=1; no real tune sees them.
//
//   test_oob     a correct conv, then one thread writes a terabyte past y:
//                an illegal address that poisons the CUDA context
//   test_hang    one thread spins forever on a volatile read: a kernel
//                that never finishes (the tuner's watchdog must kill it)
//   test_wrong   a conv that drops the last input channel: runs, is wrong
//   test_refuse  launched with more threads per block than any GPU allows
//                (plan: 2048): the driver refuses the launch
//   test_skip    a residual problem's conv (y read, then written, through
//                the activation) that stores 64 outputs, in the middle of
//                y, in its module's first launch only: the tuner's first
//                run passes, its second must find them unwritten (all but
//                those whose sum lies within the contract's bound of 0,
//                which a written output could match: about 0.5 % at tf32)
//
// All four share the arguments of every family and one thread per output
// element (256 per block; test_refuse's plan asks for 2048).  The generator
// prepends the problem (CT_*) and CT_TEST_MODE; without them the file
// compiles on its own for the headline problem as test_wrong.

#include "ct_problem.cuh"
#include "ct_act.cuh"

// 1 test_oob, 2 test_hang, 3 test_wrong, 4 test_refuse, 5 test_skip
#ifndef CT_TEST_MODE
#define CT_TEST_MODE 3
#endif

// ----------------------------------------------------------------------------
// A plain conv, one output per thread; `skip_last_channel` makes it wrong.

#if CT_TEST_MODE == 5
// test_skip: the outputs left unwritten after the first launch, and the
// count of their threads' visits (zero at load): a launch's CT_TEST_SKIP
// threads all run before the next launch starts, so a visit numbered
// CT_TEST_SKIP or more is a later launch's.
#define CT_TEST_SKIP 64
__device__ unsigned long long ct_test_skip_visits;
#endif

__device__ void conv_one(const float *x, const float *w, const float *b,
                         float *y, long long i, bool skip_last_channel) {
  const long long total = (long long)CT_N * CT_K * CT_P * CT_Q;
  if (i >= total) return;
  const int q = (int)(i % CT_Q);
  const int p = (int)(i / CT_Q % CT_P);
  const int k = (int)(i / ((long long)CT_Q * CT_P) % CT_K);
  const long long n = i / ((long long)CT_Q * CT_P * CT_K);
  float acc = 0.0f;
  const int channels = skip_last_channel && CT_C > 1 ? CT_C - 1 : CT_C;
  for (int c = 0; c < channels; c++)
    for (int r = 0; r < CT_R; r++) {
      const int h = p * CT_STRIDE_H - CT_PAD_H + r * CT_DIL_H;
      if (h < 0 || h >= CT_H) continue;
      for (int s = 0; s < CT_S; s++) {
        const int ww = q * CT_STRIDE_W - CT_PAD_W + s * CT_DIL_W;
        if (ww < 0 || ww >= CT_W) continue;
        acc = fmaf(x[((n * CT_C + c) * CT_H + h) * CT_W + ww],
                   w[((k * CT_C + c) * CT_R + r) * CT_S + s], acc);
      }
    }
  if (skip_last_channel && CT_C == 1) acc = 0.0f;
#if CT_BIAS
  acc += b[k];
#endif
#if CT_TEST_MODE == 5
  if (i >= total / 2 && i < total / 2 + CT_TEST_SKIP &&
      atomicAdd(&ct_test_skip_visits, 1ull) >= CT_TEST_SKIP)
    return; // test_skip
#endif
  y[i] = CT_TEST_MODE == 5 ? ct_out(acc, y + i) : acc;
}

// ----------------------------------------------------------------------------
// The kernels

extern "C" __global__ void test_fault(const float *x, const float *w,
                                      const float *b, float *y, float *ws) {
  (void)ws;
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
#if CT_TEST_MODE == 1
  conv_one(x, w, b, y, i, false);
  if (i == 0) {
    // A terabyte past the output: no allocation is there.
    volatile float *far = y + (1ll << 38);
    *far = 1.0f;
  }
#elif CT_TEST_MODE == 2
  if (i == 0) {
    // x is in [0, 1): never below -1.  The volatile read cannot be elided.
    while (*(volatile const float *)x >= -1.0f) {
    }
  }
  conv_one(x, w, b, y, i, false);
#elif CT_TEST_MODE == 3
  conv_one(x, w, b, y, i, true);
#else
  conv_one(x, w, b, y, i, false);
#endif
}
