// ct_ptx.cuh — PTX helpers shared by the tensor-core templates: TF32
// rounding and cp.async.  The generator expands this #include in place.

// fp32 -> TF32, round to nearest (ties away); the result is an fp32 bit
// pattern whose low 13 bits are zero.
__device__ __forceinline__ unsigned to_tf32(float f) {
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
