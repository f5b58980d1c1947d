// ct_direct.cuh — family "direct"'s constants and launch arithmetic, written
// once for its template (conv_direct.cu) and its descriptor
// (generator/family_direct.c includes this file as C), so that the plan and
// the kernel agree by construction.  The arguments are the problem's sizes
// and the parameters (THREADS, TP, TK); all arithmetic is 64-bit.

#ifndef CT_DIRECT_CUH
#define CT_DIRECT_CUH

// Weight staging budget in floats (24 KB): a block stages as many filter
// rows (c, r) of S taps x TK channels as fit.
#define DIRECT_WBUF_FLOATS 6144

#ifdef __CUDACC__
#define CT_DIRECT_FN constexpr
#else
#define CT_DIRECT_FN static inline
#endif

// Blocks of work (grid.x): THREADS thread tiles of TP output columns of a
// row per pixel block, times the channel tiles of TK.
CT_DIRECT_FN long long ct_direct_tiles(long long n, long long p, long long q, long long k,
                                       long long threads, long long tp, long long tk) {
  return (n * p * ((q + tp - 1) / tp) + threads - 1) / threads * ((k + tk - 1) / tk);
}

// Filter rows staged per pass: as many as DIRECT_WBUF_FLOATS holds, at most
// C*R; 0 when not one fits (the weights are then read from global memory).
CT_DIRECT_FN long long ct_direct_rows(long long c, long long r, long long s, long long tk) {
  return c * r < DIRECT_WBUF_FLOATS / (tk * s) ? c * r : DIRECT_WBUF_FLOATS / (tk * s);
}

// Dynamic shared memory of a block, bytes: the staged rows [row][s][TK].
CT_DIRECT_FN long long ct_direct_smem_bytes(long long c, long long r, long long s,
                                            long long tk) {
  return ct_direct_rows(c, r, s, tk) * s * tk * 4;
}

#endif // CT_DIRECT_CUH
