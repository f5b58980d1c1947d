// ct_wgmma.cuh — helpers shared by the Hopper templates (conv_wg.cu,
// conv_wgs.cu, conv_wgr.cu): warpgroup barriers, the ping-pong turn,
// mbarriers (in the CTA and across a cluster), bulk copies, proxy fences, wgmma
// ordering, the shared-memory matrix descriptor, the
// accumulator operand lists, the wgmma instructions themselves, the CTA's
// biases in shared memory and the epilogue's per-pixel stores.  sm_90a
// only.
// The generator expands this #include in place.

#include "ct_act.cuh"

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

// mbarriers (PTX ISA, "Parallel Synchronization and Communication
// Instructions: mbarrier"): init with the expected arrival count; arrive
// (release); wait for the completion of the phase with the given parity
// (acquire).
__device__ __forceinline__ void mbar_init(unsigned long long *bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(
                   (unsigned)__cvta_generic_to_shared(bar)),
               "r"(count)
               : "memory");
}
__device__ __forceinline__ void mbar_arrive(unsigned long long *bar) {
  asm volatile("mbarrier.arrive.release.cta.shared::cta.b64 _, [%0];\n" ::"r"(
                   (unsigned)__cvta_generic_to_shared(bar))
               : "memory");
}
__device__ __forceinline__ void mbar_wait(unsigned long long *bar, unsigned parity) {
  asm volatile("{\n.reg .pred p;\nWAIT:\n"
               "mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 p, [%0], %1;\n"
               "@!p bra WAIT;\n}\n" ::"r"((unsigned)__cvta_generic_to_shared(bar)),
               "r"(parity)
               : "memory");
}

// The same across a cluster (conv_wg.cu with KS 2): the address of the
// variable at local shared address sa in CTA `rank`'s shared memory; an
// arrive on a barrier there, with no ordering of this thread's memory
// accesses (relaxed: no fence waits for its stores in flight); an arrive
// on a local barrier that also expects `bytes` of asynchronous stores; a
// 16-byte asynchronous store into another CTA's shared memory that counts
// its bytes on a barrier there (st.async ... complete_tx); the cluster's
// barrier (every thread of every CTA); and the fence that makes mbarrier
// inits visible to the other CTAs' arrives.
__device__ __forceinline__ unsigned cluster_addr(unsigned sa, unsigned rank) {
  unsigned r;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(r) : "r"(sa), "r"(rank));
  return r;
}
__device__ __forceinline__ void mbar_arrive_remote_relaxed(unsigned cluster_sa) {
  asm volatile("mbarrier.arrive.relaxed.cluster.shared::cluster.b64 _, [%0];\n" ::"r"(cluster_sa)
               : "memory");
}
__device__ __forceinline__ void mbar_arrive_expect_tx(unsigned long long *bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(
                   (unsigned)__cvta_generic_to_shared(bar)),
               "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void st_async4(unsigned cluster_sa, float4 v, unsigned cluster_bar) {
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.b32 [%0], {%1, %2, %3, %4}, "
               "[%5];\n" ::"r"(cluster_sa),
               "r"(__float_as_uint(v.x)), "r"(__float_as_uint(v.y)), "r"(__float_as_uint(v.z)),
               "r"(__float_as_uint(v.w)), "r"(cluster_bar)
               : "memory");
}
// Bulk copies (conv_wg.cu with KS 2): a copy of `bytes` (a multiple of 16,
// both addresses 16-byte aligned) from global to this CTA's shared memory
// by the tensor memory accelerator, counted on `bar` (cp.async.bulk ...
// complete_tx); a hint to bring such a range into the L2; and an arrival
// on `bar` once this thread's cp.async copies issued so far have landed
// (noinc: the arrival is one of those the barrier was initialized with).
__device__ __forceinline__ void bulk_copy_g2s(void *dst, const void *src, unsigned bytes,
                                              unsigned long long *bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, "
               "[%3];\n" ::"r"((unsigned)__cvta_generic_to_shared(dst)),
               "l"(src), "r"(bytes), "r"((unsigned)__cvta_generic_to_shared(bar))
               : "memory");
}
__device__ __forceinline__ void bulk_prefetch_l2(const void *src, unsigned bytes) {
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;\n" ::"l"(src), "r"(bytes) : "memory");
}
__device__ __forceinline__ void cp_async_mbar_arrive(unsigned long long *bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(
                   (unsigned)__cvta_generic_to_shared(bar))
               : "memory");
}
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\n"
               "barrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void fence_mbar_init() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
__device__ __forceinline__ unsigned cluster_rank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
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

// wgmma accumulator operands: CT_WGMMA_D<n> is the asm register list
// "{%0,...,%n-1}" and CT_WGMMA_OUT<n> the matching "+f"(d[0]) ... outputs
// for the n = N/2 fp32 accumulators of an m64nNk8 wgmma; the other
// operands follow them as %n, %n+1, ...
#define CT_WGMMA_D4 "{%0,%1,%2,%3}"
#define CT_WGMMA_OUT4 \
  "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
#define CT_WGMMA_D8 "{%0,%1,%2,%3,%4,%5,%6,%7}"
#define CT_WGMMA_OUT8 \
  "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), \
  "+f"(d[6]), "+f"(d[7])
#define CT_WGMMA_D12 "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11}"
#define CT_WGMMA_OUT12 \
  "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), \
  "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11])
#define CT_WGMMA_D16 "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15}"
#define CT_WGMMA_OUT16 \
  "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), \
  "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), \
  "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
#define CT_WGMMA_D20 "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19}"
#define CT_WGMMA_OUT20 \
  "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), \
  "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), \
  "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), \
  "+f"(d[18]), "+f"(d[19])
#define CT_WGMMA_D24 "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23}"
#define CT_WGMMA_OUT24 \
  "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), \
  "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), \
  "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), \
  "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23])
#define CT_WGMMA_D28 "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27}"
#define CT_WGMMA_OUT28 \
  "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), \
  "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), \
  "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), \
  "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
  "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27])
#define CT_WGMMA_D32 "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}"
#define CT_WGMMA_OUT32 \
  "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), \
  "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), \
  "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), \
  "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
  "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), \
  "+f"(d[30]), "+f"(d[31])
#define CT_WGMMA_D48 "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47}"
#define CT_WGMMA_OUT48 \
  "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), \
  "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), \
  "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), \
  "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
  "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), \
  "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), \
  "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), \
  "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47])

#define CT_WGMMA_D64 "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}"
#define CT_WGMMA_OUT64 \
  "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), \
  "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), \
  "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), \
  "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
  "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), \
  "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), \
  "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), \
  "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), \
  "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), \
  "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), \
  "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
#define CT_WGMMA_D128 "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63,%64,%65,%66,%67,%68,%69,%70,%71,%72,%73,%74,%75,%76,%77,%78,%79,%80,%81,%82,%83,%84,%85,%86,%87,%88,%89,%90,%91,%92,%93,%94,%95,%96,%97,%98,%99,%100,%101,%102,%103,%104,%105,%106,%107,%108,%109,%110,%111,%112,%113,%114,%115,%116,%117,%118,%119,%120,%121,%122,%123,%124,%125,%126,%127}"
#define CT_WGMMA_OUT128 \
  "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), \
  "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), \
  "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), \
  "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
  "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), \
  "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), \
  "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), \
  "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), \
  "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), \
  "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), \
  "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), \
  "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), \
  "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), \
  "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), \
  "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), \
  "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), \
  "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), \
  "+f"(d[102]), "+f"(d[103]), "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), \
  "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), \
  "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), \
  "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), \
  "+f"(d[126]), "+f"(d[127])
// One wgmma, D (64 x NN) += A (64 x 8) * B (8 x NN at descriptor db); with
// scale_d == 0, D = A * B (tf32 operands, fp32 accumulators, no
// transpose).  CtWgmmaRS<NN>: A as this thread's four registers of the
// fragment; CtWgmmaSS<NN>: A from shared memory at descriptor da.  One
// specialisation per N a template uses; the operand numbers follow the
// NN/2 accumulators.
template <int NN> struct CtWgmmaRS;
template <int NN> struct CtWgmmaSS;
#define CT_WGMMA_RS(NN, DL, OL, A0, A1, A2, A3, DB, SC)                                   \
  template <> struct CtWgmmaRS<NN> {                                                     \
    static __device__ __forceinline__ void run(float (&d)[NN / 2], const unsigned (&a)[4], \
                                               unsigned long long db, int scale_d) {     \
      asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" SC ", 0;\n"                        \
                   "wgmma.mma_async.sync.aligned.m64n" #NN "k8.f32.tf32.tf32 " DL ", "      \
                   "{%" A0 ",%" A1 ",%" A2 ",%" A3 "}, %" DB ", p, 1, 1;\n}\n"              \
                   : OL                                                                    \
                   : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(scale_d));  \
    }                                                                                      \
  };
#define CT_WGMMA_SS(NN, DL, OL, DA, DB, SC)                                               \
  template <> struct CtWgmmaSS<NN> {                                                     \
    static __device__ __forceinline__ void run(float (&d)[NN / 2], unsigned long long da, \
                                               unsigned long long db, int scale_d) {     \
      asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" SC ", 0;\n"                        \
                   "wgmma.mma_async.sync.aligned.m64n" #NN "k8.f32.tf32.tf32 " DL ", "      \
                   "%" DA ", %" DB ", p, 1, 1;\n}\n"                                        \
                   : OL                                                                    \
                   : "l"(da), "l"(db), "r"(scale_d));                                     \
    }                                                                                      \
  };
CT_WGMMA_RS(8, CT_WGMMA_D4, CT_WGMMA_OUT4, "4", "5", "6", "7", "8", "9")
CT_WGMMA_RS(16, CT_WGMMA_D8, CT_WGMMA_OUT8, "8", "9", "10", "11", "12", "13")
CT_WGMMA_RS(24, CT_WGMMA_D12, CT_WGMMA_OUT12, "12", "13", "14", "15", "16", "17")
CT_WGMMA_RS(32, CT_WGMMA_D16, CT_WGMMA_OUT16, "16", "17", "18", "19", "20", "21")
CT_WGMMA_RS(40, CT_WGMMA_D20, CT_WGMMA_OUT20, "20", "21", "22", "23", "24", "25")
CT_WGMMA_RS(48, CT_WGMMA_D24, CT_WGMMA_OUT24, "24", "25", "26", "27", "28", "29")
CT_WGMMA_RS(56, CT_WGMMA_D28, CT_WGMMA_OUT28, "28", "29", "30", "31", "32", "33")
CT_WGMMA_RS(64, CT_WGMMA_D32, CT_WGMMA_OUT32, "32", "33", "34", "35", "36", "37")
CT_WGMMA_RS(96, CT_WGMMA_D48, CT_WGMMA_OUT48, "48", "49", "50", "51", "52", "53")
CT_WGMMA_RS(128, CT_WGMMA_D64, CT_WGMMA_OUT64, "64", "65", "66", "67", "68", "69")
CT_WGMMA_RS(256, CT_WGMMA_D128, CT_WGMMA_OUT128, "128", "129", "130", "131", "132", "133")
CT_WGMMA_SS(8, CT_WGMMA_D4, CT_WGMMA_OUT4, "4", "5", "6")
CT_WGMMA_SS(16, CT_WGMMA_D8, CT_WGMMA_OUT8, "8", "9", "10")
CT_WGMMA_SS(24, CT_WGMMA_D12, CT_WGMMA_OUT12, "12", "13", "14")
CT_WGMMA_SS(32, CT_WGMMA_D16, CT_WGMMA_OUT16, "16", "17", "18")
CT_WGMMA_SS(40, CT_WGMMA_D20, CT_WGMMA_OUT20, "20", "21", "22")
CT_WGMMA_SS(48, CT_WGMMA_D24, CT_WGMMA_OUT24, "24", "25", "26")
CT_WGMMA_SS(56, CT_WGMMA_D28, CT_WGMMA_OUT28, "28", "29", "30")
CT_WGMMA_SS(64, CT_WGMMA_D32, CT_WGMMA_OUT32, "32", "33", "34")
CT_WGMMA_SS(96, CT_WGMMA_D48, CT_WGMMA_OUT48, "48", "49", "50")
CT_WGMMA_SS(128, CT_WGMMA_D64, CT_WGMMA_OUT64, "64", "65", "66")
CT_WGMMA_SS(256, CT_WGMMA_D128, CT_WGMMA_OUT128, "128", "129", "130")
#undef CT_WGMMA_RS
#undef CT_WGMMA_SS

// The biases of output channels n0 .. n0+bn-1 into bsm (0 past channel k,
// and all 0 without a bias: CT_BIAS 0), by the block's threads from tid.
__device__ __forceinline__ void stage_bias(float *bsm, const float *__restrict__ b, int n0,
                                           int bn, int k, int tid, int threads) {
  for (int e = tid; e < bn; e += threads) {
#if CT_BIAS
    bsm[e] = n0 + e < k ? __ldg(b + n0 + e) : 0.0f;
#else
    bsm[e] = 0.0f;
#endif
  }
  (void)b;
  (void)k;
  (void)n0;
}

// The epilogue's per-lane pieces for an m64nNk8 accumulator fragment d, N = NB
// (NB/2 floats, d[4j+2h+e] = D[16q+g+8h][8j+2t+e]): lane t's biases of
// channels n0+8j+2t and +1 for j < NB/8, from the CTA's bsm (stage_bias) ...
template <int NB>
__device__ __forceinline__ void load_bias_pairs(float2 (&bias)[NB / 8], const float *bsm, int t) {
#pragma unroll
  for (int j = 0; j < NB / 8; ++j) bias[j] = *reinterpret_cast<const float2 *>(bsm + 8 * j + 2 * t);
}
// ... and one pixel's outputs, row hh of d plus those biases through the
// activation (ct_act.cuh), stored from
// yp (the pixel in channel n0+2t's plane) at planes pq floats apart, the
// channels from k on (past the problem's K) left out unless FULL_K.
template <int NB, bool FULL_K>
__device__ __forceinline__ void store_pixel(float *__restrict__ yp, const float (&d)[NB / 2],
                                            int hh, const float2 (&bias)[NB / 8], int n0, int t,
                                            int k, int pq) {
#pragma unroll
  for (int j = 0; j < NB / 8; ++j) {
    const int k0 = n0 + 8 * j + 2 * t;
    if (FULL_K || k0 < k) __stcs(yp + 8 * j * pq, ct_act(d[4 * j + 2 * hh] + bias[j].x));
    if (FULL_K || k0 + 1 < k)
      __stcs(yp + (8 * j + 1) * pq, ct_act(d[4 * j + 2 * hh + 1] + bias[j].y));
  }
}
