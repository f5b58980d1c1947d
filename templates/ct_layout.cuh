// ct_layout.cuh — the tensors' layout every template reads: CT_LAYOUT 0
// (NCHW x, KCRS w, NKPQ y) or 1 (NHWC x, KRSC w, NPQK y: PyTorch's
// channels_last), defined by the generator when the problem has
// layout=nhwc.  Only the families whose descriptor says nhwc are given 1.
// The generator expands this #include in place; the guard lets two
// templates include it.
#ifndef CT_LAYOUT_CUH
#define CT_LAYOUT_CUH

#ifndef CT_LAYOUT
#define CT_LAYOUT 0
#endif
static_assert(CT_LAYOUT == 0 || CT_LAYOUT == 1, "CT_LAYOUT: 0 (NCHW) or 1 (NHWC)");

#endif  // CT_LAYOUT_CUH
