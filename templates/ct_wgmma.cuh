// ct_wgmma.cuh — helpers shared by the Hopper templates (conv_wg.cu,
// conv_wgs.cu): warpgroup barriers, the ping-pong turn, proxy fences,
// wgmma ordering, and the shared-memory matrix descriptor.  sm_90a only.
// The generator expands this #include in place.

// A barrier for warpgroup wgi's 128 threads only (named barrier 1 + wgi;
// __syncthreads uses 0).
__device__ __forceinline__ void wg_sync(int wgi) {
  asm volatile("bar.sync %0, 128;\n" ::"r"(1 + wgi) : "memory");
}

// The turn of warpgroup `to` on the tensor cores (PP): named barrier 3 + to
// joins the 128 threads of each warpgroup; the one waiting for its turn
// syncs, the one handing it over arrives without waiting.
__device__ __forceinline__ void turn_wait(int to) {
  asm volatile("bar.sync %0, 256;\n" ::"r"(3 + to) : "memory");
}
__device__ __forceinline__ void turn_pass(int to) {
  asm volatile("bar.arrive %0, 256;\n" ::"r"(3 + to) : "memory");
}

// Generic-proxy shared-memory writes -> visible to the async proxy (wgmma).
__device__ __forceinline__ void fence_proxy_async() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// wgmma ordering: fence before the first wgmma and after any register
// access by other instructions to registers a wgmma uses; commit the issued
// wgmma as a group; wait until at most `pending` groups are in flight.
__device__ __forceinline__ void wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
template <int pending> __device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(pending) : "memory");
}

// Compiler-only fences (as CUTLASS's warpgroup_fence_operand): the register
// looks rewritten here, so the compiler neither reads an accumulator before
// the wgmma_wait that retired it nor sinks a fragment's computation below
// the wgmma_fence that precedes its wgmma.
__device__ __forceinline__ void reg_fence(float &r) { asm volatile("" : "+f"(r)::"memory"); }
__device__ __forceinline__ void reg_fence(unsigned &r) { asm volatile("" : "+r"(r)::"memory"); }

// A wgmma shared-memory matrix descriptor (PTX ISA, wgmma "Matrix
// Descriptor Format": bits 0-13 start address >> 4, 16-29 leading dimension
// byte offset >> 4, 32-45 stride dimension byte offset >> 4, 49-51 base
// offset 0, 62-63 swizzle mode 0 = none).  For K-major operands without
// swizzling the leading offset (lbo) is the distance in bytes between the
// two core matrices (8 rows x 16 bytes) adjacent along K, the stride offset
// (sbo) between those adjacent along M or N; see conv_wg.cu's "Matrix
// descriptor" for the reading that was checked on the H200.  Adding
// (bytes >> 4) to a descriptor moves its start address (no carry: every
// address used is below 256 KB).
__device__ __forceinline__ unsigned long long wgmma_desc(unsigned saddr, unsigned lbo,
                                                         unsigned sbo) {
  return (unsigned long long)((saddr >> 4) & 0x3FFFu) |
         ((unsigned long long)((lbo >> 4) & 0x3FFFu) << 16) |
         ((unsigned long long)((sbo >> 4) & 0x3FFFu) << 32);
}
