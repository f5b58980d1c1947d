// ct_act.cuh — the fused activation every conv template applies to an
// output value after its bias, right before the store: CT_ACT 0 (none) or
// 1 (ReLU), defined by the generator when the problem has act=relu.  ReLU
// keeps NaN as NaN, as torch.relu does (v < 0 is false for NaN), so an
// output the kernel got wrong is not hidden by the activation.  The float64
// reference (ref_f64.cu) applies ct_act_f64 the same way.  The generator
// expands this #include in place; the guard lets two templates include it.
#ifndef CT_ACT_CUH
#define CT_ACT_CUH

#ifndef CT_ACT
#define CT_ACT 0
#endif
static_assert(CT_ACT == 0 || CT_ACT == 1, "CT_ACT: 0 (none) or 1 (ReLU)");

__device__ __forceinline__ float ct_act(float v) { return CT_ACT == 1 && v < 0.0f ? 0.0f : v; }
__device__ __forceinline__ double ct_act_f64(double v) {
  return CT_ACT == 1 && v < 0.0 ? 0.0 : v;
}

#endif  // CT_ACT_CUH
