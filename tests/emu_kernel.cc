// emu_kernel.cc — runs one variant of a one-kernel family (the FFMA
// families `direct`, `dw`, `dwc`, and the mma.sync families `tc`, `tc3`:
// its generated source, included as KERNEL_SRC, its kernel KERNEL_FN) on
// the CPU and checks it against the float64 reference under the
// problem's precision contract; for tests/test_emulated.sh, which builds
// it per variant.
//
// The emulation: the blocks run one after another (blockIdx.y outer);
// within a block each CUDA thread is a std::thread, __syncthreads a
// std::barrier, and the dynamic shared memory one buffer (the kernel's
// `extern __shared__` array is this file's smem4).  CT_EMULATED leaves the
// templates' PTX helpers out and this file supplies them: cp.async as a
// plain copy (commit and wait do nothing), cvt.rna.tf32 on the bits, and
// mma.sync.m16n8k8 TF32 as its warp's 32 threads meeting at a barrier,
// each publishing its fragments and then summing its own four outputs
// from the whole A and B, their operands cut to TF32's bits as the tensor
// cores read them.  x, w and b are surrounded by NaN and y by a
// canary, so that a read past a tensor shows as a non-finite output and a
// write past y as a changed canary; y starts as NaN (or as the residual,
// which the reference then adds), so that an output never stored fails.
//
//   emu_kernel SPEC tf32|fp32 VARIANT   (exit 0: passes, 1: fails, 2: usage)
#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

struct float2 { float x, y; };
struct int2 { int x, y; };
using std::isnan;
struct float4 { float x, y, z, w; };
struct emu_dim { unsigned x = 0, y = 0, z = 0; };
static thread_local emu_dim threadIdx, blockIdx;
static emu_dim gridDim;
static thread_local std::barrier<> *emu_barrier;
float4 smem4[16384]; // 256 KiB: more than a block may have

#define __global__
#define __device__
#define __host__
#define __shared__
#define __forceinline__ inline
#define __launch_bounds__(...)
static inline void __syncthreads() { emu_barrier->arrive_and_wait(); }
template <class T> static inline T __ldg(const T *p) { return *p; }
template <class T> static inline T __ldcs(const T *p) { return *p; }
static inline unsigned __float_as_uint(float f) {
  unsigned u;
  memcpy(&u, &f, sizeof u);
  return u;
}
static inline float __uint_as_float(unsigned u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}
template <class T> static inline void __stcs(T *p, T v) { *p = v; }
static inline float2 make_float2(float a, float b) { return {a, b}; }
static inline float4 make_float4(float a, float b, float c, float d) { return {a, b, c, d}; }

// The PTX helpers (CT_EMULATED).  cvt.rna.tf32.f32: to nearest, ties away
// from zero, on the bits (a carry steps the exponent; NaN stays NaN).
static inline unsigned to_tf32_rna(float f) {
  const unsigned u = __float_as_uint(f);
  return std::isnan(f) ? u | 0x400000u : (u + 0x1000u) & 0xffffe000u;
}
static inline void cp_async4(float *dst, const float *src, bool valid) {
  *dst = valid ? *src : 0.0f;
}
static inline void cp_async_commit() {}
template <int pending> static inline void cp_async_wait() {}

// mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 of one warp: lane
// 4g+t holds a0 = A[g][t], a1 = A[g+8][t], a2 = A[g][t+4], a3 = A[g+8][t+4],
// b0 = B[t][g], b1 = B[t+4][g], and d = C[g][2t], C[g][2t+1], C[g+8][2t],
// C[g+8][2t+1] (PTX ISA, "Matrix Fragments for mma.m16n8k8").  The
// products are exact in double, each output's eight summed there and added
// to d once: a finer rounding than the tensor cores', never a coarser one.
struct emu_warp {
  std::barrier<> meet{32};
  unsigned a[32][4], b[32][2];
};
static emu_warp *emu_warps; // the block's, warp w at emu_warps[w]
static inline double tf32_operand(unsigned u) { return __uint_as_float(u & 0xffffe000u); }
static inline void mma_tf32(float (&d)[4], unsigned a0, unsigned a1, unsigned a2, unsigned a3,
                            unsigned b0, unsigned b1) {
  const unsigned lane = threadIdx.x & 31;
  emu_warp &wp = emu_warps[threadIdx.x >> 5];
  wp.a[lane][0] = a0, wp.a[lane][1] = a1, wp.a[lane][2] = a2, wp.a[lane][3] = a3;
  wp.b[lane][0] = b0, wp.b[lane][1] = b1;
  wp.meet.arrive_and_wait();
  auto A = [&](unsigned row, unsigned k) { // A[row][k], row < 16, k < 8
    return tf32_operand(wp.a[(row & 7) * 4 + (k & 3)][(row >> 3) + 2 * (k >> 2)]);
  };
  auto B = [&](unsigned k, unsigned n) { // B[k][n], k < 8, n < 8
    return tf32_operand(wp.b[n * 4 + (k & 3)][k >> 2]);
  };
  const unsigned g = lane >> 2, t = lane & 3;
  for (unsigned e = 0; e < 4; e++) {
    const unsigned row = g + 8 * (e >> 1), col = 2 * t + (e & 1);
    double sum = 0.0;
    for (unsigned k = 0; k < 8; k++) sum += A(row, k) * B(k, col);
    d[e] = (float)((double)d[e] + sum);
  }
  wp.meet.arrive_and_wait(); // no lane publishes again before all have read
}

#define CT_EMULATED 1
#define __CUDACC__ 1 // the templates' constexpr launch arithmetic (ct_direct.cuh, ct_dw.cuh)
#include KERNEL_SRC
#undef __CUDACC__

#define STR_(s) #s
#define STR(s) STR_(s)

extern "C" {
#include "convtune.h"
#include "ct_gen.h"
#include "verify.h"
}

static uint64_t rng_state = 0x2545f4914f6cdd1dull;
static float unit() { // uniform [0, 1), 24 bits
  rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
  return (float)((rng_state >> 40) * (1.0 / 16777216.0));
}

// A tensor of n floats between two guards of G floats each.
struct guarded {
  static constexpr size_t G = 4096;
  std::vector<float> all;
  explicit guarded(size_t n, float guard) : all(n + 2 * G, guard) {}
  float *data() { return all.data() + G; }
  bool guards_are(float guard) const {
    for (size_t i = 0; i < G; i++)
      if (memcmp(&all[i], &guard, 4) || memcmp(&all[all.size() - 1 - i], &guard, 4)) return false;
    return true;
  }
};

int main(int argc, char **argv) {
  ct_problem p;
  char err[256];
  ct_gen_limits lim;
  ct_gen_variant v;
  if (argc != 4) {
    fprintf(stderr, "usage: emu_kernel SPEC tf32|fp32 VARIANT\n");
    return 2;
  }
  if (ct_problem_parse(argv[1], &p, err, sizeof err) != CT_OK) {
    fprintf(stderr, "emu_kernel: %s\n", err);
    return 2;
  }
  p.precision = strcmp(argv[2], "fp32") == 0 ? CT_PREC_FP32 : CT_PREC_TF32;
  if (ct_gen_limits_for_arch("sm_90a", &lim) != CT_OK ||
      ct_gen_variant_from_name(&p, &lim, argv[3], &v) != CT_OK || v.n_kernels != 1 ||
      v.kernels[0].smem > sizeof smem4 || strcmp(v.kernels[0].name, STR(KERNEL_FN)) != 0) {
    fprintf(stderr, "emu_kernel: %s: not a one-kernel variant of %s running %s\n", argv[3],
            argv[1], STR(KERNEL_FN));
    return 2;
  }
  int64_t P, Q;
  ct_problem_output(&p, &P, &Q);
  const size_t nx = p.n * p.c * p.h * p.w, nw = p.k * (p.c / p.groups) * p.r * p.s;
  const size_t ny = p.n * p.k * P * Q;
  const float bound = 1.0f / sqrtf((float)(p.c / p.groups * p.r * p.s));
  const float canary = -1234.5f;
  guarded x(nx, NAN), w(nw, NAN), b(p.k, NAN), y(ny, canary);
  std::vector<float> res(ny);
  // Under ReLU6, x in [0, 32): sums of O(10), so that outputs fall below 0,
  // within [0, 6] and above 6.
  const float xscale = p.act == CT_ACT_RELU6 ? 32.0f : 1.0f;
  for (size_t i = 0; i < nx; i++) x.data()[i] = unit() * xscale;
  for (size_t i = 0; i < nw; i++) w.data()[i] = (2 * unit() - 1) * bound;
  for (int64_t i = 0; i < p.k; i++) b.data()[i] = (2 * unit() - 1) * bound;
  for (size_t i = 0; i < ny; i++) {
    res[i] = 2 * unit() - 1;
    y.data()[i] = p.residual ? res[i] : NAN;
  }

  const ct_gen_launch &l = v.kernels[0];
  gridDim.x = l.grid[0], gridDim.y = l.grid[1], gridDim.z = l.grid[2];
  std::vector<emu_warp> warps((l.block[0] + 31) / 32);
  emu_warps = warps.data();
  for (unsigned by = 0; by < l.grid[1]; by++)
    for (unsigned bx = 0; bx < l.grid[0]; bx++) {
      std::barrier<> barrier(l.block[0]);
      std::vector<std::thread> threads;
      for (unsigned t = 0; t < l.block[0]; t++)
        threads.emplace_back([&, t, bx, by] {
          threadIdx.x = t;
          blockIdx.x = bx;
          blockIdx.y = by;
          emu_barrier = &barrier;
          KERNEL_FN(x.data(), w.data(), b.data(), y.data(), nullptr);
        });
      for (auto &t : threads) t.join();
    }

  std::vector<double> ref(ny), abs_sum(ny), sq_sum(ny);
  if (ct_tune_reference_cpu_residual(&p, x.data(), w.data(), p.bias ? b.data() : nullptr,
                                     p.residual ? res.data() : nullptr, ref.data(),
                                     abs_sum.data(), sq_sum.data()) != CT_OK) {
    fprintf(stderr, "emu_kernel: the reference refused %s\n", argv[1]);
    return 2;
  }
  ct_tune_check ck;
  ct_tune_contract(&p, y.data(), ref.data(), abs_sum.data(), sq_sum.data(), (int64_t)ny, &ck);
  const bool fenced = y.guards_are(canary);
  const bool ok = ck.passes && fenced;
  printf("%s %s %s %s%s%s%s\n", ok ? "ok  " : "FAIL", argv[1], argv[2], argv[3], ok ? "" : ": ",
         ck.passes ? "" : ck.reason, fenced ? "" : " wrote past y");
  return ok ? 0 : 1;
}
