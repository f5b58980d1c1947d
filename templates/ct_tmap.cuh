// ct_tmap.cuh — the kernel arguments of a tensor-map family (generator/
// ct_gen.h, "kind of arguments"): the int64 slots ct_kargs and the opaque
// CUtensorMap, both passed by value as __grid_constant__ parameters; and
// the Tensor Memory Accelerator's loads through them, the tensor-map
// prefetch, and the wgmma descriptor of a swizzled K-major operand.
// sm_90a only.  The generator expands this #include in place.

// The launcher's variant->kargs (CT_GEN_MAX_KARGS int64).
struct ct_kargs {
  long long v[32];
};
// A CUtensorMap: 128 opaque bytes, 64-byte aligned (cuda.h).
struct __align__(64) ct_tmap {
  unsigned long long v[16];
};
static_assert(sizeof(ct_kargs) == 256 && sizeof(ct_tmap) == 128, "argument layout");

// Brings a tensor map (a __grid_constant__ parameter's address) into the
// descriptor cache before its first use.
__device__ __forceinline__ void tmap_prefetch(const ct_tmap *m) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<unsigned long long>(m))
               : "memory");
}

// A 4-D im2col load (PTX ISA, cp.async.bulk.tensor, .im2col): the box of
// the map's pixelsPerColumn pixels x channelsPerPixel channels whose filter
// base is (c, w, h, n), shifted by the tap offsets (ow, oh), into dst, its
// bytes counted on bar (complete_tx).  Pixels outside the tensor read 0.
__device__ __forceinline__ void tma_load_im2col4(void *dst, const ct_tmap *m,
                                                 unsigned long long *bar, int c, int w, int h,
                                                 int n, unsigned short ow, unsigned short oh) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4, %5, %6}], [%2], {%7, %8};\n" ::"r"(
          (unsigned)__cvta_generic_to_shared(dst)),
      "l"(reinterpret_cast<unsigned long long>(m)),
      "r"((unsigned)__cvta_generic_to_shared(bar)), "r"(c), "r"(w), "r"(h), "r"(n), "h"(ow),
      "h"(oh)
      : "memory");
}

// A 4-D tiled load: the map's box at coordinates (c0, c1, c2, c3),
// innermost first, into dst, counted on bar.  Elements outside read 0.
__device__ __forceinline__ void tma_load_tile4(void *dst, const ct_tmap *m,
                                               unsigned long long *bar, int c0, int c1, int c2,
                                               int c3) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4, %5, %6}], [%2];\n" ::"r"((unsigned)__cvta_generic_to_shared(dst)),
      "l"(reinterpret_cast<unsigned long long>(m)),
      "r"((unsigned)__cvta_generic_to_shared(bar)), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
      : "memory");
}

// The wgmma descriptor of a K-major operand that a tensor map wrote with
// a swizzle of `row_bytes` (32, 64 or 128 = the operand's row): rows of
// row_bytes, 8-row atoms sbo = 8 * row_bytes apart, the leading offset
// unused (1), base offset 0 (every stage starts on a 1024-byte boundary),
// and the mode in bits 62-63 (1: 128 B, 2: 64 B, 3: 32 B; PTX ISA, wgmma
// "Matrix Descriptor Format").  The k8 step j of a row starts 32 * j bytes
// in: add 2 * j to the descriptor.
__device__ __forceinline__ unsigned long long wgmma_desc_swizzled(unsigned saddr,
                                                                  unsigned row_bytes) {
  const unsigned long long mode = row_bytes == 128 ? 1ull : row_bytes == 64 ? 2ull : 3ull;
  return (unsigned long long)((saddr >> 4) & 0x3FFFu) | (1ull << 16) |
         ((unsigned long long)(((8u * row_bytes) >> 4) & 0x3FFFu) << 32) | (mode << 62);
}
