// ct_act.cuh — the fused epilogue every conv template applies to an output
// value after its bias, right before the store: with CT_RESIDUAL 1 (the
// problem has residual=1) the value y held on entry is added (the
// templates whose families take a residual use ct_out, or ct_res and
// ct_fin below, loading it from the address they then store to, or add it
// to their sums themselves: CT_RES_IN_SUMS), then the activation, CT_ACT
// 0 (none), 1 (ReLU) or 2 (ReLU6, min(max(v, 0), 6)), defined by the
// generator when the problem has act=relu or act=relu6.
// Both keep NaN as NaN, as torch.relu and torch.nn.functional.relu6 do
// (v < 0 and v > 6 are false for NaN), so an output the kernel got wrong is
// not hidden by the activation.  The float64 reference (ref_f64.cu)
// applies ct_act_f64 the same way.  The generator expands this #include in
// place; the guard lets two templates include it.
#ifndef CT_ACT_CUH
#define CT_ACT_CUH

#ifndef CT_ACT
#define CT_ACT 0
#endif
static_assert(CT_ACT == 0 || CT_ACT == 1 || CT_ACT == 2, "CT_ACT: 0 (none), 1 (ReLU) or 2 (ReLU6)");
#ifndef CT_RESIDUAL
#define CT_RESIDUAL 0
#endif
static_assert(CT_RESIDUAL == 0 || CT_RESIDUAL == 1, "CT_RESIDUAL: 0 (y written) or 1 (y read, then written)");
// CT_RES_IN_SUMS 1: the template adds the residual to its sums itself,
// before its epilogue (conv_gm.cu's RES_SUMS), so the functions below see
// none: ct_res loads nothing, ct_fin and ct_fin4 add nothing, and
// ct_act_early is the activation.
#ifndef CT_RES_IN_SUMS
#define CT_RES_IN_SUMS 0
#endif
constexpr bool CT_RES_EPI = CT_RESIDUAL && !CT_RES_IN_SUMS; // the epilogue adds the residual
// Groups (CT_GROUPS > 1, the problem's groups): only a template that
// defines CT_TAKES_GROUPS before this #include indexes its channels by
// group; any other stops here, so that a grouped problem can never compile
// into a kernel that would mix the groups' channels.
#ifndef CT_GROUPS
#define CT_GROUPS 1
#endif
#if CT_GROUPS != 1 && !defined(CT_TAKES_GROUPS)
#error "this template runs ungrouped problems only (its family declines groups > 1)"
#endif

__device__ __forceinline__ float ct_act(float v) {
  if constexpr (CT_ACT == 2) v = v > 6.0f ? 6.0f : v;
  return CT_ACT != 0 && v < 0.0f ? 0.0f : v;
}
__device__ __forceinline__ double ct_act_f64(double v) {
  if constexpr (CT_ACT == 2) v = v > 6.0 ? 6.0 : v;
  return CT_ACT != 0 && v < 0.0 ? 0.0 : v;
}
// For epilogues that move finished values between lanes before the store
// (gm_pw's 16-byte runs): ct_act_early before the exchange (the activation
// when no residual is still to be added), then ct_fin4 (below) on the four
// values stored together: the residual and the activation.
__device__ __forceinline__ float ct_act_early(float v) { return CT_RES_EPI ? v : ct_act(v); }

// Residuals loaded ahead of their stores.  ct_out's load comes right before
// its store, and every __stcs is a barrier to the compiler (its asm clobbers
// "memory"), so in an epilogue of many ct_out stores each load waits out
// its whole latency after the store before it: 2 * BN / 8 round trips in
// series in gm's.  Those epilogues instead load a batch of residuals with
// ct_res (under the predicate of the store that follows, 0 without
// CT_RESIDUAL: no load), then store each through ct_fin, ct_fin2 or
// ct_fin4 (ct_out's arithmetic on the value already loaded; ct_fin4 after
// ct_act_early, the activation of a value without a residual applied).
// CT_RES_BATCH: how many of an epilogue's channel steps one batch covers.
#define CT_RES_BATCH 4
template <class T> __device__ __forceinline__ T ct_res(const T *yp) {
  if constexpr (CT_RES_EPI) return __ldcs(yp);
  return T{};
}
__device__ __forceinline__ float ct_fin(float v, float r) {
  if constexpr (CT_RES_EPI) v += r;
  return ct_act(v);
}
// The output at yp: v (the sum plus the bias), plus the residual *yp when
// CT_RESIDUAL, through the activation, loaded right before the store (for
// epilogues of one store a thread).  Called only where the caller then
// stores to yp, so the load is bounded as the store is.
__device__ __forceinline__ float ct_out(float v, const float *yp) { return ct_fin(v, ct_res(yp)); }
__device__ __forceinline__ float2 ct_fin2(float2 v, float2 r) {
  return make_float2(ct_fin(v.x, r.x), ct_fin(v.y, r.y));
}
__device__ __forceinline__ float4 ct_fin4(float4 v, float4 r) {
  if constexpr (CT_RES_EPI)
    v = make_float4(ct_act(v.x + r.x), ct_act(v.y + r.y), ct_act(v.z + r.z), ct_act(v.w + r.w));
  return v;
}

#endif  // CT_ACT_CUH
