// ct_problem.cuh — the problem sizes every template reads: CT_N .. CT_BIAS
// and CT_GROUPS (1 unless given) as the generator defines them, CT_P and
// CT_Q derived as PyTorch does;
// CT_PROBLEM_CONSTANTS and CT_PROBLEM_CHECKS for the templates' namespaces,
// and the checks of the plan's launch quantities.
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
#ifndef CT_GROUPS
#define CT_GROUPS 1
#endif
#include "ct_layout.cuh"
#ifndef CT_P
#define CT_P ((CT_H + 2 * CT_PAD_H - CT_DIL_H * (CT_R - 1) - 1) / CT_STRIDE_H + 1)
#endif
#ifndef CT_Q
#define CT_Q ((CT_W + 2 * CT_PAD_W - CT_DIL_W * (CT_S - 1) - 1) / CT_STRIDE_W + 1)
#endif

// The problem as constants and its consistency checks, for a template's
// namespace.  Macros, expanded where they are used: a template that
// redefines CT_* before including another (conv_s2d.cu) gives that one the
// new values.
#define CT_PROBLEM_CONSTANTS                                                    \
  constexpr int N = CT_N, C = CT_C, H = CT_H, W = CT_W, K = CT_K, R = CT_R,     \
                S = CT_S, P = CT_P, Q = CT_Q;                                   \
  constexpr int SH = CT_STRIDE_H, SW = CT_STRIDE_W, PH = CT_PAD_H,              \
                PW = CT_PAD_W, DH = CT_DIL_H, DW = CT_DIL_W;
#define CT_PROBLEM_CHECKS_SHAPE                                                 \
  static_assert(N >= 1 && C >= 1 && H >= 1 && W >= 1 && K >= 1 && R >= 1 &&    \
                    S >= 1,                                                     \
                "sizes must be positive");                                      \
  static_assert(SH >= 1 && SW >= 1 && DH >= 1 && DW >= 1 && PH >= 0 && PW >= 0, \
                "bad stride, dilation or padding");                             \
  static_assert(P == ((long long)H + 2LL * PH - (long long)DH * (R - 1) - 1) /  \
                             SH + 1 &&                                          \
                    Q == ((long long)W + 2LL * PW - (long long)DW * (S - 1) -   \
                          1) / SW + 1,                                          \
                "CT_P / CT_Q disagree with the problem");                       \
  static_assert(P >= 1 && Q >= 1, "empty output");
// A template that indexes its tensors with 32-bit ints adds this check; one
// that forms 64-bit offsets where they are needed (conv_direct.cu) does not.
#define CT_PROBLEM_CHECKS                                                       \
  CT_PROBLEM_CHECKS_SHAPE                                                       \
  static_assert((long long)N * K * P * Q <= 0x7fffffffLL &&                     \
                    (long long)N * C * H * W <= 0x7fffffffLL &&                 \
                    (long long)K * C * R * S <= 0x7fffffffLL,                   \
                "32-bit indexing needs every tensor below 2^31 elements");

// True when a tensor of the problem has more than 2^31 - 1 elements (w has
// K * C/groups * R * S).
#define CT_PROBLEM_INDEX64                                                      \
  ((long long)CT_N * CT_K * CT_P * CT_Q > 0x7fffffffLL ||                       \
   (long long)CT_N * CT_C * CT_H * CT_W > 0x7fffffffLL ||                       \
   (long long)CT_K * (CT_C / CT_GROUPS) * CT_R * CT_S > 0x7fffffffLL)

// The plan's launch quantities (CT_PLAN_*, which the generator defines
// ahead of the template) against a template's own; true where a template
// compiles on its own without them.
#ifdef CT_PLAN_BLOCK_X
#define CT_PLAN_HAS_BLOCK_X(v) (CT_PLAN_BLOCK_X == (v))
#else
#define CT_PLAN_HAS_BLOCK_X(v) true
#endif
#ifdef CT_PLAN_GRID_X
#define CT_PLAN_GRID_X_IN(lo, hi) (CT_PLAN_GRID_X >= (lo) && CT_PLAN_GRID_X <= (hi))
#else
#define CT_PLAN_GRID_X_IN(lo, hi) true
#endif
#ifdef CT_PLAN_GRID_Y
#define CT_PLAN_HAS_GRID_Y(v) (CT_PLAN_GRID_Y == (v))
#else
#define CT_PLAN_HAS_GRID_Y(v) true
#endif
#ifdef CT_PLAN_SMEM
#define CT_PLAN_HAS_SMEM(v) (CT_PLAN_SMEM == (v))
#else
#define CT_PLAN_HAS_SMEM(v) true
#endif
// A persistent tiled kernel's plan: THREADS per block, grid.y = KBLOCKS,
// grid.x in 1 .. NTILES (any such grid is correct), SMEM_BYTES.
#define CT_PLAN_CHECKS_TILED                                                    \
  static_assert(CT_PLAN_HAS_BLOCK_X(THREADS), "plan: block size differs");      \
  static_assert(CT_PLAN_HAS_GRID_Y(KBLOCKS), "plan: grid.y != ceil(K/BN)");     \
  static_assert(CT_PLAN_GRID_X_IN(1, NTILES), "plan: grid.x must be 1..NTILES"); \
  static_assert(CT_PLAN_HAS_SMEM(SMEM_BYTES), "plan: shared memory size differs");
