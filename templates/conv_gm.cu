// conv_gm.cu — family "gm": the convolution as an implicit GEMM for any
// groups = 1 problem on Hopper, TMA im2col + wgmma (TF32, fp32
// accumulation; sm_90a only), shape-generic: the problem's sizes come in
// ct_kargs (ct_gm.cuh's slots), only the tile configuration is compiled in.
// docs/GENERAL.md has the facts this follows.
//
// Three launches on the call's stream, each with the tensor-map family's
// arguments (x, w, b, y, ws, ct_kargs, map 0, map 1):
//   gm_nhwc  x (NCHW) -> the workspace's NHWC copy [NP][H][W][CP], channels
//            padded to CP = a multiple of 4 with zeros, values rounded to
//            TF32 (cvt.rna), images N .. NP-1 zero;
//   gm_pack  w (KCRS) -> the workspace's KRSC copy [KP][R][S][CP] at float
//            WOFF, rounded, zero past K and C;
//   gm_conv  the GEMM: D[m][k] = sum over (r, s, c) of A[m][(r, s, c)] *
//            B[k][(r, s, c)], m = (n P + p) Q + q, plus the bias, stored
//            as NCHW y.
//
// gm_conv.  A persistent grid walks the tiles (BM pixels x BN output
// channels; the channel tiles of one pixel block are neighbours in the
// walk, so its im2col rows are reread from L2).  Warpgroup 0 is the
// producer: one thread issues, for every k-tile (r, s, channel block cb),
// an im2col load of the BM pixels x BK channels of tap (r, s) (map 0) and
// a tiled load of the BN x BK weights of that tap (map 1) into a ring of
// STAGES stages, each with a full mbarrier (the loads' bytes) and an empty
// one (an arrival per consumer warpgroup).  Warpgroups 1 .. BM/64 are the
// consumers: each owns 64 of the BM rows, issues BK/8 m64nBNk8 wgmma per
// k-tile from the swizzled stages, keeps one k-tile of wgmma in flight and
// releases a stage once its wgmma retired.  The epilogue adds the bias and
// stores each accumulator row into y's channel planes (8 consecutive
// pixels per instruction and channel) while the producer already loads
// the next tile.
//
// Parameters (generator/family_gm.c): BM (64 or 128 pixels per tile), BN
// (64, 128 or 256 output channels), BK (8, 16 or 32 channels per k-tile:
// one 32-, 64- or 128-byte swizzled row), STAGES.

#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 128
#endif
#ifndef BK
#define BK 32
#endif
#ifndef STAGES
#define STAGES 4
#endif

#include "ct_ptx.cuh"
#include "ct_wgmma.cuh"
#include "ct_tmap.cuh"
#include "ct_gm.cuh"

namespace gm {

constexpr int CWG = BM / 64;                 // consumer warpgroups
constexpr int THREADS = CT_GM_THREADS(BM);
constexpr int ROW = BK * 4;                  // bytes of a stage row
constexpr int A_BYTES = BM * ROW, B_BYTES = BN * ROW;
constexpr int STAGE_BYTES = CT_GM_STAGE_BYTES(BM, BN, BK);
constexpr int SMEM_BYTES = CT_GM_SMEM(BM, BN, BK, STAGES);
constexpr int CONSUMER_REGS = 232, PRODUCER_REGS = 40;

static_assert(BM == 64 || BM == 128, "BM: 64 or 128");
static_assert(BN == 64 || BN == 128 || BN == 256, "BN: 64, 128 or 256");
static_assert(BK == 8 || BK == 16 || BK == 32, "BK: 8, 16 or 32 (one swizzled row)");
static_assert(STAGES >= 2 && SMEM_BYTES <= 232448, "stages exceed shared memory");
static_assert(A_BYTES % 1024 == 0 || BK < 32, "128-byte swizzle stages on 1024-byte atoms");
static_assert(A_BYTES % (8 * ROW) == 0 && B_BYTES % (8 * ROW) == 0, "stages on swizzle atoms");
// With two consumers the CTA holds 384 x 168 registers = 2 x 128 x 232 +
// 128 x 40, shared out by setmaxnreg; with one, no reallocation is needed.
static_assert(CWG == 1 || 2 * 128 * CONSUMER_REGS + 128 * PRODUCER_REGS <= 65536,
              "setmaxnreg within the CTA's registers");
#ifdef CT_PLAN_BLOCK_X
static_assert(CT_PLAN_BLOCK_X == THREADS, "plan: block size differs");
#endif
#ifdef CT_PLAN_SMEM
static_assert(CT_PLAN_SMEM == SMEM_BYTES, "plan: shared memory size differs");
#endif

}  // namespace gm

// gm_nhwc: grid (NP * ceil(H W / 32), ceil(CP / 32)), CT_GM_PREP_THREADS
// (256).  A block moves 32 pixels x 32 channels of one image through
// shared memory: it reads along the pixels (a warp per channel row) and
// writes 16-byte runs of 4 channels (for CP <= 32 the block's output is
// one contiguous run).  Indices in 32 bits where they fit by valid():
// blocks, channels, pixels within an image.
extern "C" __global__ void __launch_bounds__(CT_GM_PREP_THREADS)
    gm_nhwc(const float *__restrict__ x, const float *w, const float *b, float *y,
            float *__restrict__ ws, const __grid_constant__ ct_kargs a,
            const __grid_constant__ ct_tmap m0, const __grid_constant__ ct_tmap m1) {
  static_assert(CT_GM_PREP_THREADS == 256, "a block of 32 x 32 elements, 4 per thread");
  __shared__ float tile[32][33];
  const int N = (int)a.v[CT_GM_A_N], C = (int)a.v[CT_GM_A_C], CP = (int)a.v[CT_GM_A_CP];
  const int HW = (int)(a.v[CT_GM_A_H] * a.v[CT_GM_A_W]);
  const unsigned hwb = (unsigned)(HW + 31) / 32u;
  const unsigned n = blockIdx.x / hwb;
  const int hw0 = (int)(blockIdx.x - n * hwb) * 32, c0 = 32 * (int)blockIdx.y;
  const int tx = threadIdx.x % 32, ty = threadIdx.x / 32;
  const float *const xb = x + ((long long)n * C + c0) * HW + hw0;
#pragma unroll
  for (int i = ty; i < 32; i += CT_GM_PREP_THREADS / 32) {
    float v = 0.0f;
    if ((int)n < N && c0 + i < C && hw0 + tx < HW) v = __ldg(xb + (long long)i * HW + tx);
    tile[i][tx] = round_tf32(v);
  }
  __syncthreads();
  float *const wb = ws + ((long long)n * HW + hw0) * CP + c0;
  const int quads = (CP - c0 < 32 ? CP - c0 : 32) / 4; // CP is a multiple of 4
  for (int e = threadIdx.x; e < 32 * quads; e += CT_GM_PREP_THREADS) {
    const int pl = quads == 8 ? e >> 3 : e / quads, c4 = 4 * (e - pl * quads);
    if (hw0 + pl < HW)
      *reinterpret_cast<float4 *>(wb + (long long)pl * CP + c4) =
          make_float4(tile[c4][pl], tile[c4 + 1][pl], tile[c4 + 2][pl], tile[c4 + 3][pl]);
  }
  (void)w, (void)b, (void)y, (void)m0, (void)m1;
}

// gm_pack: grid KP R S, CT_GM_PACK_THREADS; block (k, r, s) writes the CP
// channels of that tap, rounded, zero past K and C.
extern "C" __global__ void __launch_bounds__(CT_GM_PACK_THREADS)
    gm_pack(const float *x, const float *__restrict__ w, const float *b, float *y,
            float *__restrict__ ws, const __grid_constant__ ct_kargs a,
            const __grid_constant__ ct_tmap m0, const __grid_constant__ ct_tmap m1) {
  const int C = (int)a.v[CT_GM_A_C], K = (int)a.v[CT_GM_A_K], CP = (int)a.v[CT_GM_A_CP];
  const unsigned RS = (unsigned)(a.v[CT_GM_A_R] * a.v[CT_GM_A_S]);
  const unsigned k = blockIdx.x / RS, rs = blockIdx.x - k * RS;
  const float *const src = w + (long long)k * C * RS + rs;
  float *const dst = ws + a.v[CT_GM_A_WOFF] + (long long)blockIdx.x * CP;
  for (int c = threadIdx.x; c < CP; c += CT_GM_PACK_THREADS)
    dst[c] = round_tf32((int)k < K && c < C ? __ldg(src + (long long)c * RS) : 0.0f);
  (void)x, (void)b, (void)y, (void)m0, (void)m1;
}

// gm_conv: grid 1 .. TILES_M * TILES_N (persistent), THREADS, SMEM_BYTES.
extern "C" __global__ void __launch_bounds__(gm::THREADS, 1)
    gm_conv(const float *x, const float *w, const float *__restrict__ b, float *__restrict__ y,
            float *ws, const __grid_constant__ ct_kargs a, const __grid_constant__ ct_tmap tx,
            const __grid_constant__ ct_tmap tw) {
  using namespace gm;
  extern __shared__ unsigned char smem_raw[];
  const unsigned raw = (unsigned)__cvta_generic_to_shared(smem_raw);
  unsigned char *const smem = smem_raw + (((raw + 1023u) & ~1023u) - raw);
  unsigned long long *const full =
      reinterpret_cast<unsigned long long *>(smem + STAGES * STAGE_BYTES);
  unsigned long long *const empty = full + STAGES;

  const int K = (int)a.v[CT_GM_A_K], R = (int)a.v[CT_GM_A_R], S = (int)a.v[CT_GM_A_S];
  const int P = (int)a.v[CT_GM_A_P], Q = (int)a.v[CT_GM_A_Q];
  const int PQ = P * Q, M = (int)a.v[CT_GM_A_M];
  const int tiles_n = (int)a.v[CT_GM_A_TILES_N];
  const int tiles = (int)a.v[CT_GM_A_TILES_M] * tiles_n;
  const int ncb = (int)a.v[CT_GM_A_NCB];
  const int ktiles = R * S * ncb;
  const int tid = threadIdx.x, wgi = tid / 128;

  if (tid == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(full + s, 1);
      mbar_init(empty + s, CWG);
    }
    fence_mbar_init();
  }
  __syncthreads();

  if (wgi == 0) {
    // The producer.
    if constexpr (CWG == 2) asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(PRODUCER_REGS));
    if (tid != 0) return;
    tmap_prefetch(&tx);
    tmap_prefetch(&tw);
    const int SH = (int)a.v[CT_GM_A_SH], SW = (int)a.v[CT_GM_A_SW];
    const int PH = (int)a.v[CT_GM_A_PH], PW = (int)a.v[CT_GM_A_PW];
    const int DH = (int)a.v[CT_GM_A_DH], DW = (int)a.v[CT_GM_A_DW];
    unsigned it = 0;
#pragma unroll 1
    for (int u = blockIdx.x; u < tiles; u += gridDim.x) {
      const int tm = u / tiles_n, n0 = (u - tm * tiles_n) * BN;
      const int m0 = tm * BM, img = m0 / PQ, rem = m0 - img * PQ;
      const int p0 = rem / Q, q0 = rem - p0 * Q;
      const int hb = p0 * SH - PH, wb = q0 * SW - PW;
#pragma unroll 1
      for (int r = 0; r < R; ++r)
#pragma unroll 1
        for (int s = 0; s < S; ++s)
#pragma unroll 1
          for (int cb = 0; cb < ncb; ++cb, ++it) {
            const unsigned st = it % STAGES, ph = (it / STAGES) & 1u;
            unsigned char *const sa = smem + st * STAGE_BYTES;
            mbar_wait(empty + st, ph ^ 1u);
            mbar_arrive_expect_tx(full + st, STAGE_BYTES);
            tma_load_im2col4(sa, &tx, full + st, cb * BK, wb, hb, img,
                             (unsigned short)(s * DW), (unsigned short)(r * DH));
            tma_load_tile4(sa + A_BYTES, &tw, full + st, cb * BK, s, r, n0);
          }
    }
    return;
  }

  // A consumer: rows 64 * c .. 64 * c + 63 of each tile.
  if constexpr (CWG == 2) asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(CONSUMER_REGS));
  const int c = wgi - 1, lt = tid % 128;
  const int warp = lt / 32, g = (lt % 32) / 4, t = lt % 4;
  const unsigned sbase = (unsigned)__cvta_generic_to_shared(smem);
  float d[BN / 2];
  unsigned it = 0;
#pragma unroll 1
  for (int u = blockIdx.x; u < tiles; u += gridDim.x) {
    const int tm = u / tiles_n, n0 = (u - tm * tiles_n) * BN;
    unsigned prev = 0;
#pragma unroll 1
    for (int kt = 0; kt < ktiles; ++kt, ++it) {
      const unsigned st = it % STAGES, ph = (it / STAGES) & 1u;
      mbar_wait(full + st, ph);
      const unsigned sa = sbase + st * STAGE_BYTES;
      const unsigned long long da = wgmma_desc_swizzled(sa + c * 64 * ROW, ROW);
      const unsigned long long db = wgmma_desc_swizzled(sa + A_BYTES, ROW);
      wgmma_fence();
#pragma unroll
      for (int j = 0; j < BK / 8; ++j)
        CtWgmmaSS<BN>::run(d, da + 2 * j, db + 2 * j, (kt | j) != 0);
      wgmma_commit();
      wgmma_wait<1>();
      if (kt > 0 && lt == 0) mbar_arrive(empty + prev);
      prev = st;
    }
    wgmma_wait<0>();
    if (lt == 0) mbar_arrive(empty + prev);
#pragma unroll
    for (int i = 0; i < BN / 2; ++i) reg_fence(d[i]);

    // Epilogue: accumulator d[4j + 2h + e] = D[16 warp + g + 8h][8j + 2t + e].
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int m = tm * BM + c * 64 + warp * 16 + 8 * h + g;
      if (m >= M) continue;
      const int img = m / PQ, pq = m - img * PQ;
      float *const yp = y + ((long long)img * K * PQ + pq);
#pragma unroll
      for (int j = 0; j < BN / 8; ++j) {
        const int k0 = n0 + 8 * j + 2 * t;
        if (k0 < K) __stcs(yp + (long long)k0 * PQ, d[4 * j + 2 * h] + (b ? __ldg(b + k0) : 0.0f));
        if (k0 + 1 < K)
          __stcs(yp + (long long)(k0 + 1) * PQ,
                 d[4 * j + 2 * h + 1] + (b ? __ldg(b + k0 + 1) : 0.0f));
      }
    }
  }
  (void)x, (void)w, (void)ws;
}
