// ct_problem.cuh — the problem sizes every template reads: CT_N .. CT_BIAS
// as the generator defines them, CT_P and CT_Q derived as PyTorch does.
// The defaults (the headline problem, KernelBench level 1 problem 50) let a
// template compile on its own.  The generator expands this #include in place.

#ifndef CT_N
#define CT_N 256
#endif
#ifndef CT_C
#define CT_C 3
#endif
#ifndef CT_H
#define CT_H 224
#endif
#ifndef CT_W
#define CT_W 224
#endif
#ifndef CT_K
#define CT_K 96
#endif
#ifndef CT_R
#define CT_R 11
#endif
#ifndef CT_S
#define CT_S 11
#endif
#ifndef CT_STRIDE_H
#define CT_STRIDE_H 4
#endif
#ifndef CT_STRIDE_W
#define CT_STRIDE_W 4
#endif
#ifndef CT_PAD_H
#define CT_PAD_H 2
#endif
#ifndef CT_PAD_W
#define CT_PAD_W 2
#endif
#ifndef CT_DIL_H
#define CT_DIL_H 1
#endif
#ifndef CT_DIL_W
#define CT_DIL_W 1
#endif
#ifndef CT_BIAS
#define CT_BIAS 1
#endif
#ifndef CT_P
#define CT_P ((CT_H + 2 * CT_PAD_H - CT_DIL_H * (CT_R - 1) - 1) / CT_STRIDE_H + 1)
#endif
#ifndef CT_Q
#define CT_Q ((CT_W + 2 * CT_PAD_W - CT_DIL_W * (CT_S - 1) - 1) / CT_STRIDE_W + 1)
#endif
