// ct_ptx.cuh — PTX helpers shared by the tensor-core templates: TF32
// rounding and cp.async.  The generator expands this #include in place.
// With CT_EMULATED defined (tests/emu_kernel.cc, which runs kernels on the
// CPU; never for NVRTC) the helpers written in PTX are left out and the
// emulation supplies its own.

// fp32 -> TF32, round to nearest, ties to even (cuDNN's rounding of its
// TF32 operands, so that a tf32 result differs from cuDNN's by the sums'
// order alone); the result is an fp32 bit pattern whose low 13 bits are
// zero.  On the bits: add just under half a TF32 unit plus the kept
// lowest bit (a tie rounds up only from an odd value), then drop the 13
// bits; a carry steps the exponent, so subnormals round alike and values
// past TF32's largest become infinite, and infinities stay.  A NaN keeps
// its sign and top payload bits with the quiet bit set: one whose payload
// lies in the dropped bits stays a NaN, and an all-ones payload cannot
// carry into the sign.
// Six integer and compare instructions a value (cvt.rna with a tie and a
// NaN adjust took eleven; sm_90's cvt.rn spills the register-bound
// kernels, wgr and tc3): the templates that round their tf32 fragments
// in registers call it per value, and so do the layout passes' 3xTF32
// splits; the splits in registers take split_tf32 below.
__device__ __forceinline__ unsigned to_tf32(float f) {
  const unsigned u = __float_as_uint(f);
  const unsigned r = u + 0xfffu + ((u >> 13) & 1u);
  return (isnan(f) ? u | 0x400000u : r) & 0xffffe000u;
}
// Ties away: wgr's weight fragments alone (its consumers have no register
// for to_tf32's adjust); it differs from to_tf32 on exact ties and on the
// NaNs whose payload lies in the dropped bits.
#ifndef CT_EMULATED
__device__ __forceinline__ unsigned to_tf32_rna(float f) {
  unsigned r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(f));
  return r;
}
#endif
__device__ __forceinline__ float round_tf32(float f) {
  return __uint_as_float(to_tf32(f));
}
// A 3xTF32 split in registers: hi is v rounded to TF32 and lo the rest,
// v - hi (exact in fp32), rounded to TF32.  hi + lo is v to within about
// 2^-23 |v| whichever way hi's ties go, so the split needs no tie rule
// and takes cvt.rna, one conversion a value, not to_tf32's six integer
// instructions: the templates that split their fragments in the mainloop
// (wg3, tc3, pw3, tap3) are bound by it.  Not a tf32 operand: a NaN may
// lose its payload (it stays a NaN).
__device__ __forceinline__ void split_tf32(float v, unsigned &hi, unsigned &lo) {
  hi = to_tf32_rna(v);
  lo = to_tf32_rna(v - __uint_as_float(hi));
}

#ifndef CT_EMULATED
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
#endif // CT_EMULATED
