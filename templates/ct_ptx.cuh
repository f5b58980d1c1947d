// ct_ptx.cuh — PTX helpers shared by the tensor-core templates: TF32
// rounding and cp.async.  The generator expands this #include in place.

// fp32 -> TF32, round to nearest, ties to even (cuDNN's rounding of its
// TF32 operands, so that a tf32 result differs from cuDNN's by the sums'
// order alone); the result is an fp32 bit pattern whose low 13 bits are
// zero.  cvt.rna (ties away, the one TF32 rounding PTX has before sm_90)
// of the value one unit lower where it is a tie that rounds down to even
// (low 14 bits 0x1000): fewer registers than sm_90's cvt.rn, which
// spills register-bound kernels (wgr, tc3).  A NaN stays a NaN: cvt.rna
// keeps a NaN's top mantissa bits alone, which makes one whose payload
// lies in the 13 dropped bits infinite; the quiet bit is set back.
__device__ __forceinline__ unsigned to_tf32(float f) {
  const unsigned u = __float_as_uint(f);
  unsigned r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(__uint_as_float(u - ((u & 0x3fffu) == 0x1000u))));
  return r | ((u << 1) > 0xff000000u ? 0x400000u : 0u);
}
// Ties away: wgr's weight fragments alone (its consumers have no register
// for to_tf32's adjust); it differs from to_tf32 on exact ties and on the
// NaNs whose payload lies in the dropped bits.
__device__ __forceinline__ unsigned to_tf32_rna(float f) {
  unsigned r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(f));
  return r;
}
__device__ __forceinline__ float round_tf32(float f) {
  return __uint_as_float(to_tf32(f));
}

// 4-byte global -> shared copy; zero-fills dst when !valid (src not read).
__device__ __forceinline__ void cp_async4(float *dst, const float *src, bool valid) {
  const unsigned saddr = (unsigned)__cvta_generic_to_shared(dst);
  const unsigned bytes = valid ? 4u : 0u;
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(saddr),
               "l"(src), "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}
// Waits until at most `pending` of this thread's groups are in flight.
template <int pending> __device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(pending) : "memory");
}
