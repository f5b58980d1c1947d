// ct_dw.cuh — the depthwise families' tile arithmetic, written once for
// their templates (conv_dw.cu, conv_dwc.cu) and their descriptors
// (generator/family_dw.c and family_dwc.c include this file as C), so that
// the plans and the kernels agree by construction.  All arithmetic is
// 64-bit.  Family "dw": a block computes a tile of BP output rows x BQ
// output columns of one output channel's plane: THREADS threads, BQ / TP
// of them along a row (each TP columns, BQ / TP apart), so BP = THREADS *
// TP / BQ rows.

#ifndef CT_DW_CUH
#define CT_DW_CUH

#ifdef __CUDACC__
#define CT_DW_FN constexpr
#else
#define CT_DW_FN static inline
#endif

// Output rows of a tile (0 when the parameters do not tile: BQ % TP or
// THREADS % (BQ / TP) not 0).
CT_DW_FN long long ct_dw_rows(long long threads, long long tp, long long bq) {
  return bq % tp != 0 || threads % (bq / tp) != 0 ? 0 : threads / (bq / tp);
}

// Blocks of work (grid.x): one per tile of each (image, output channel).
CT_DW_FN long long ct_dw_tiles(long long n, long long k, long long p, long long q,
                               long long bp, long long bq) {
  return n * k * ((p + bp - 1) / bp) * ((q + bq - 1) / bq);
}

// Input rows and columns a tile reads, its zero padding included.
CT_DW_FN long long ct_dw_in_rows(long long bp, long long stride_h, long long dil_h, long long r) {
  return (bp - 1) * stride_h + (r - 1) * dil_h + 1;
}
CT_DW_FN long long ct_dw_in_cols(long long bq, long long stride_w, long long dil_w, long long s) {
  return (bq - 1) * stride_w + (s - 1) * dil_w + 1;
}

// The input tile's row pitch in shared memory, floats: in_cols, or a few
// more so that the rows a warp reads together start 32 * j + LPR * SW
// banks apart (pitch * SH = LPR * SW mod 32), as if they were one row: a
// warp's lanes then read distinct banks (at SW = 1) where LPR < 32.
CT_DW_FN long long ct_dw_pitch(long long in_cols, long long lpr, long long stride_h,
                               long long stride_w) {
  if (lpr >= 32) return in_cols;
  for (long long pitch = in_cols; pitch < in_cols + 32; ++pitch)
    if ((pitch * stride_h - lpr * stride_w) % 32 == 0) return pitch;
  return in_cols; // no such pitch (an even SH): unpadded
}

// Dynamic shared memory of a block, bytes: the input tile (in_rows rows of
// pitch floats) and the channel's R x S weights.
CT_DW_FN long long ct_dw_smem_bytes(long long in_rows, long long pitch, long long r,
                                    long long s) {
  return (in_rows * pitch + r * s) * 4;
}

// Family "dwc" (conv_dwc.cu, generator/family_dwc.c): a block is CB output
// channels x RB strips of TP columns of one output row.  Blocks of work
// (grid.x), channel tile fastest:
CT_DW_FN long long ct_dwc_tiles(long long n, long long k, long long p, long long q,
                                long long cb, long long bq) {
  return n * p * ((q + bq - 1) / bq) * ((k + cb - 1) / cb);
}

// Its dynamic shared memory, bytes: the CB channels' R x S weights, a tap's
// CB + 1 floats apart.
CT_DW_FN long long ct_dwc_smem_bytes(long long r, long long s, long long cb) {
  return r * s * (cb + 1) * 4;
}

#endif // CT_DW_CUH
