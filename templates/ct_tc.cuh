// ct_tc.cuh — families "tc" and "tc3": the tile layout and shared memory of
// a point, written once for their template (conv_tc.cu) and their
// descriptors (generator/family_tc.c includes this file as C), so that the
// plan and the kernel agree by construction.  The arguments are the
// problem's sizes (g its groups: each GEMM runs over one group's C/g input
// channels, and a CTA's BN output channels lie in one group's K/g) and the
// parameters; all arithmetic is 64-bit (the
// descriptor bounds the band's factors, ct_tc_band_rows and
// ct_tc_band_cols, before it calls ct_tc_layout_of).

#ifndef CT_TC_CUH
#define CT_TC_CUH

#ifdef __CUDACC__
#define CT_TC_FN constexpr
#else
#define CT_TC_FN static inline
#endif

// A point's layout; the names are the template's.
typedef struct ct_tc_layout {
  long long threads;  // 32 * WARPS
  long long nt;       // n8 tiles per CTA (BN / 8)
  long long wgm;      // warps along M
  long long ntw;      // n8 tiles per warp
  long long tm;       // pixels per tile (TP * Q)
  long long mt;       // m16 tiles per tile
  long long mw;       // m16 tiles per warp
  long long crs;      // C/G * R * S: one output's reduction
  long long ksteps;   // k8 steps
  long long kp;       // padded reduction length
  long long br, bc;   // band rows and columns
  long long band;     // C/G * BR * BC floats
  long long band_pad; // rounded up to 4
  long long smem;     // dynamic shared memory, bytes: weights, offsets, bands
  long long tiles;    // N * ceil(P / TP)
  long long kbg;      // ceil(K/G / BN): CTAs along N per group
  long long kblocks;  // G * kbg = grid.y
} ct_tc_layout;

// Input band rows of a tile of TP output rows, and its columns.
CT_TC_FN long long ct_tc_band_rows(long long tp, long long sh, long long r, long long dh) {
  return (tp - 1) * sh + (r - 1) * dh + 1;
}
CT_TC_FN long long ct_tc_band_cols(long long q, long long sw, long long s, long long dw) {
  return (q - 1) * sw + (s - 1) * dw + 1;
}

CT_TC_FN ct_tc_layout ct_tc_layout_of(long long n, long long c, long long k, long long g,
                                      long long r, long long s, long long p, long long q,
                                      long long sh, long long sw, long long dh, long long dw,
                                      long long tp, long long bn, long long warps, long long wn,
                                      long long stages) {
  ct_tc_layout l = {0};
  l.threads = 32 * warps;
  l.nt = bn / 8;
  l.wgm = warps / wn;
  l.ntw = l.nt / wn;
  l.tm = tp * q;
  l.mt = (l.tm + 15) / 16;
  l.mw = (l.mt + l.wgm - 1) / l.wgm;
  l.crs = c / g * r * s;
  l.ksteps = (l.crs + 7) / 8;
  l.kp = l.ksteps * 8;
  l.br = ct_tc_band_rows(tp, sh, r, dh);
  l.bc = ct_tc_band_cols(q, sw, s, dw);
  l.band = c / g * l.br * l.bc;
  l.band_pad = (l.band + 3) / 4 * 4;
  l.smem = (l.ksteps * l.nt * 64 + l.ksteps * 8 + stages * l.band_pad) * 4;
  l.tiles = n * ((p + tp - 1) / tp);
  l.kbg = (k / g + bn - 1) / bn;
  l.kblocks = g * l.kbg;
  return l;
}

#endif // CT_TC_CUH
