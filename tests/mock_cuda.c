/*
** mock_cuda.c — a stand-in for libcuda.so.1 so that the runtime's CPU
** tests can open contexts and call ct_forward on machines without a GPU
** ($CONVTUNE_LIBCUDA names this library).
**
** It implements every entry of ct_drv.h's table with cuda.h's prototypes
** (so the versioned symbol names match).  One device, shaped like an H200
** (sm_90a limits).  Nothing runs: cuLaunchKernel only checks and records.
** Modules must be ELF images, as real cubins are, and a function must be
** named in its module's bytes.  Pointers handed out by cuMemAlloc are host
** memory.  The counters below say what the runtime asked the driver for:
** tests check that a hot path allocates and synchronises nothing, that a
** bad call launches nothing, and that pushes and pops balance per thread.
**
** Environment: CT_MOCK_DEVICES=0 makes the driver see no device.
*/
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>

#include "mock_cuda.h"

#define MOCK_EXPORT __attribute__((visibility("default")))

static atomic_long n_launch, n_launch_early, n_module_load, n_module_unload, n_mem_alloc,
    n_mem_free, n_sync, n_push, n_pop, n_bad_pop, n_launch_no_ctx, n_map_encode,
    n_map_refuse, n_copy;
static pthread_mutex_t last_lock = PTHREAD_MUTEX_INITIALIZER;
static ct_mock_launch last_launch;
static __thread int ctx_depth; /* pushes minus pops on this thread */

/* The one device's primary context: any non-NULL handle. */
static int primary_storage;
#define MOCK_PRIMARY ((CUcontext)(void *)&primary_storage)

typedef struct mock_module {
  unsigned char *image; /* a copy */
  size_t size;
  struct mock_function {
    char name[64];
  } fns[8];
  int n_fns;
} mock_module;

/* ---------------------------------------------------------------------- */
/* Control (for tests)                                                     */

MOCK_EXPORT void ct_mock_counters(ct_mock_stats *out) {
  out->launches = atomic_load(&n_launch);
  out->early_launches = atomic_load(&n_launch_early);
  out->module_loads = atomic_load(&n_module_load);
  out->module_unloads = atomic_load(&n_module_unload);
  out->mem_allocs = atomic_load(&n_mem_alloc);
  out->mem_frees = atomic_load(&n_mem_free);
  out->syncs = atomic_load(&n_sync);
  out->pushes = atomic_load(&n_push);
  out->pops = atomic_load(&n_pop);
  out->bad_pops = atomic_load(&n_bad_pop);
  out->launches_without_context = atomic_load(&n_launch_no_ctx);
  out->map_encodes = atomic_load(&n_map_encode);
  out->map_refusals = atomic_load(&n_map_refuse);
  out->copies = atomic_load(&n_copy);
  out->thread_depth = ctx_depth;
}

MOCK_EXPORT void ct_mock_last_launch(ct_mock_launch *out) {
  pthread_mutex_lock(&last_lock);
  *out = last_launch;
  pthread_mutex_unlock(&last_lock);
}

/* ---------------------------------------------------------------------- */
/* Initialisation, devices, errors                                         */

CUresult CUDAAPI cuInit(unsigned int Flags) {
  return Flags == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult CUDAAPI cuDriverGetVersion(int *driverVersion) {
  if (!driverVersion) return CUDA_ERROR_INVALID_VALUE;
  *driverVersion = CT_MOCK_DRIVER_VERSION;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGetErrorString(CUresult error, const char **pStr) {
  if (!pStr) return CUDA_ERROR_INVALID_VALUE;
  *pStr = error == CUDA_SUCCESS ? "no error" : "mock driver error";
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGetErrorName(CUresult error, const char **pStr) {
  if (!pStr) return CUDA_ERROR_INVALID_VALUE;
  switch (error) {
  case CUDA_SUCCESS: *pStr = "CUDA_SUCCESS"; break;
  case CUDA_ERROR_INVALID_IMAGE: *pStr = "CUDA_ERROR_INVALID_IMAGE"; break;
  case CUDA_ERROR_NOT_FOUND: *pStr = "CUDA_ERROR_NOT_FOUND"; break;
  case CUDA_ERROR_INVALID_CONTEXT: *pStr = "CUDA_ERROR_INVALID_CONTEXT"; break;
  default: *pStr = "CUDA_ERROR_MOCK"; break;
  }
  return CUDA_SUCCESS;
}

static int device_count(void) {
  const char *env = getenv("CT_MOCK_DEVICES");
  return env && env[0] == '0' ? 0 : 1;
}

CUresult CUDAAPI cuDeviceGetCount(int *count) {
  if (!count) return CUDA_ERROR_INVALID_VALUE;
  *count = device_count();
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGet(CUdevice *device, int ordinal) {
  if (!device || ordinal < 0 || ordinal >= device_count())
    return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetName(char *name, int len, CUdevice dev) {
  if (!name || len <= 0 || dev != 0) return CUDA_ERROR_INVALID_VALUE;
  snprintf(name, (size_t)len, "%s", CT_MOCK_DEVICE_NAME);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib,
                                      CUdevice dev) {
  if (!pi || dev != 0) return CUDA_ERROR_INVALID_VALUE;
  switch (attrib) { /* an H200 SXM */
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *pi = 9; break;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *pi = 0; break;
  case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *pi = 132; break;
  case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *pi = 1024; break;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *pi = 232448; break;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: *pi = 233472; break;
  case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR: *pi = 65536; break;
  default: *pi = 0; break;
  }
  return CUDA_SUCCESS;
}

/* ---------------------------------------------------------------------- */
/* Contexts                                                                */

CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev) {
  if (!pctx || dev != 0) return CUDA_ERROR_INVALID_VALUE;
  *pctx = MOCK_PRIMARY;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice dev) {
  return dev == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

CUresult CUDAAPI cuCtxPushCurrent(CUcontext ctx) {
  if (ctx != MOCK_PRIMARY) return CUDA_ERROR_INVALID_CONTEXT;
  ctx_depth++;
  atomic_fetch_add(&n_push, 1);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxPopCurrent(CUcontext *pctx) {
  if (ctx_depth <= 0) {
    atomic_fetch_add(&n_bad_pop, 1);
    return CUDA_ERROR_INVALID_CONTEXT;
  }
  ctx_depth--;
  atomic_fetch_add(&n_pop, 1);
  if (pctx) *pctx = MOCK_PRIMARY;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxGetCurrent(CUcontext *pctx) {
  if (!pctx) return CUDA_ERROR_INVALID_VALUE;
  *pctx = ctx_depth > 0 ? MOCK_PRIMARY : NULL;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxSynchronize(void) {
  atomic_fetch_add(&n_sync, 1);
  return ctx_depth > 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

/* ---------------------------------------------------------------------- */
/* Modules                                                                 */

/* The size of a 64-bit ELF image from its header (section headers last),
** 0 if it is not one. */
static size_t elf_size(const unsigned char *p) {
  if (memcmp(p, "\177ELF", 4) != 0 || p[4] != 2 /* ELFCLASS64 */) return 0;
  uint64_t shoff, phoff;
  uint16_t shentsize, shnum, phentsize, phnum;
  memcpy(&phoff, p + 0x20, 8);
  memcpy(&shoff, p + 0x28, 8);
  memcpy(&phentsize, p + 0x36, 2);
  memcpy(&phnum, p + 0x38, 2);
  memcpy(&shentsize, p + 0x3a, 2);
  memcpy(&shnum, p + 0x3c, 2);
  uint64_t end1 = shoff + (uint64_t)shentsize * shnum;
  uint64_t end2 = phoff + (uint64_t)phentsize * phnum;
  uint64_t end = end1 > end2 ? end1 : end2;
  if (end < 64 || end > ((uint64_t)256 << 20)) return 0;
  return (size_t)end;
}

CUresult CUDAAPI cuModuleLoadData(CUmodule *module, const void *image) {
  if (!module || !image) return CUDA_ERROR_INVALID_VALUE;
  if (ctx_depth <= 0) return CUDA_ERROR_INVALID_CONTEXT;
  size_t size = elf_size(image);
  if (size == 0) return CUDA_ERROR_INVALID_IMAGE;
  mock_module *m = calloc(1, sizeof *m);
  if (!m) return CUDA_ERROR_OUT_OF_MEMORY;
  m->image = malloc(size);
  if (!m->image) {
    free(m);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  memcpy(m->image, image, size);
  m->size = size;
  atomic_fetch_add(&n_module_load, 1);
  *module = (CUmodule)(void *)m;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuModuleUnload(CUmodule hmod) {
  mock_module *m = (mock_module *)(void *)hmod;
  if (!m) return CUDA_ERROR_INVALID_HANDLE;
  atomic_fetch_add(&n_module_unload, 1);
  free(m->image);
  free(m);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod,
                                     const char *name) {
  mock_module *m = (mock_module *)(void *)hmod;
  if (!hfunc || !m || !name) return CUDA_ERROR_INVALID_VALUE;
  size_t n = strlen(name);
  if (n == 0 || n >= sizeof m->fns[0].name || m->n_fns >= 8 ||
      memmem(m->image, m->size, name, n + 1) == NULL) /* with its NUL */
    return CUDA_ERROR_NOT_FOUND;
  struct mock_function *f = &m->fns[m->n_fns++];
  memcpy(f->name, name, n + 1);
  *hfunc = (CUfunction)(void *)f;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib,
                                    int value) {
  if (!hfunc) return CUDA_ERROR_INVALID_HANDLE;
  if (attrib == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES &&
      (value < 0 || value > 232448))
    return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuFuncGetAttribute(int *pi, CUfunction_attribute attrib,
                                    CUfunction hfunc) {
  if (!pi || !hfunc) return CUDA_ERROR_INVALID_VALUE;
  *pi = attrib == CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK ? 1024 : 0;
  return CUDA_SUCCESS;
}

/* Both launch entries: checks and records a launch (early: with
** programmatic stream serialization). */
static CUresult mock_launch(CUfunction f, const unsigned grid[3], const unsigned block[3],
                            unsigned smem, CUstream stream, void **params, int early) {
  if (ctx_depth <= 0) {
    atomic_fetch_add(&n_launch_no_ctx, 1);
    return CUDA_ERROR_INVALID_CONTEXT;
  }
  const unsigned long long threads = (unsigned long long)block[0] * block[1] * block[2];
  if (!f || !params || grid[0] == 0 || grid[1] == 0 || grid[2] == 0 || threads > 1024 ||
      threads == 0)
    return CUDA_ERROR_INVALID_VALUE;
  atomic_fetch_add(&n_launch, 1);
  if (early) atomic_fetch_add(&n_launch_early, 1);
  pthread_mutex_lock(&last_lock);
  snprintf(last_launch.name, sizeof last_launch.name, "%s",
           ((struct mock_function *)(void *)f)->name);
  memcpy(last_launch.grid, grid, sizeof last_launch.grid);
  memcpy(last_launch.block, block, sizeof last_launch.block);
  last_launch.smem = smem;
  last_launch.stream = (void *)stream;
  last_launch.early = early;
  for (int i = 0; i < 4; i++)
    memcpy(&last_launch.args[i], params[i], sizeof(CUdeviceptr));
  pthread_mutex_unlock(&last_lock);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuLaunchKernel(CUfunction f, unsigned int gridDimX,
                                unsigned int gridDimY, unsigned int gridDimZ,
                                unsigned int blockDimX, unsigned int blockDimY,
                                unsigned int blockDimZ,
                                unsigned int sharedMemBytes, CUstream hStream,
                                void **kernelParams, void **extra) {
  (void)extra;
  const unsigned grid[3] = {gridDimX, gridDimY, gridDimZ};
  const unsigned block[3] = {blockDimX, blockDimY, blockDimZ};
  return mock_launch(f, grid, block, sharedMemBytes, hStream, kernelParams, 0);
}

/* Accepts the one attribute the runtime sets; any other is refused. */
CUresult CUDAAPI cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f,
                                  void **kernelParams, void **extra) {
  (void)extra;
  if (!config || (config->numAttrs > 0 && !config->attrs)) return CUDA_ERROR_INVALID_VALUE;
  int early = 0;
  for (unsigned i = 0; i < config->numAttrs; i++) {
    if (config->attrs[i].id != CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION)
      return CUDA_ERROR_INVALID_VALUE;
    early = config->attrs[i].value.programmaticStreamSerializationAllowed != 0;
  }
  const unsigned grid[3] = {config->gridDimX, config->gridDimY, config->gridDimZ};
  const unsigned block[3] = {config->blockDimX, config->blockDimY, config->blockDimZ};
  return mock_launch(f, grid, block, config->sharedMemBytes, config->hStream, kernelParams,
                     early);
}

/* ---------------------------------------------------------------------- */
/* Memory, streams, events: host stand-ins                                 */

CUresult CUDAAPI cuMemAlloc(CUdeviceptr *dptr, size_t bytesize) {
  if (!dptr || bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
  void *p = calloc(1, bytesize);
  if (!p) return CUDA_ERROR_OUT_OF_MEMORY;
  atomic_fetch_add(&n_mem_alloc, 1);
  *dptr = (CUdeviceptr)(uintptr_t)p;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemFree(CUdeviceptr dptr) {
  atomic_fetch_add(&n_mem_free, 1);
  free((void *)(uintptr_t)dptr);
  return CUDA_SUCCESS;
}

/* Pools: a handle standing for nothing; stream-ordered allocations are host
** memory, counted with the others. */
static int pool_storage;

CUresult CUDAAPI cuCtxGetDevice(CUdevice *device) {
  if (!device) return CUDA_ERROR_INVALID_VALUE;
  if (ctx_depth <= 0) return CUDA_ERROR_INVALID_CONTEXT;
  *device = 0;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *poolProps) {
  if (!pool || !poolProps || poolProps->location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
      poolProps->location.id != 0)
    return CUDA_ERROR_INVALID_VALUE;
  *pool = (CUmemoryPool)(void *)&pool_storage;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemPoolDestroy(CUmemoryPool pool) {
  return pool == (CUmemoryPool)(void *)&pool_storage ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult CUDAAPI cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr,
                                       void *value) {
  (void)attr;
  return pool && value ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* Like a pool whose release threshold is unlimited, memory freed
** stream-ordered is handed out again to the next allocation of its size
** (so a warm call gets the same workspace address); up to 16 blocks are
** kept, each counted as an allocation every time it is handed out. */
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
  CUdeviceptr ptr;
  size_t size;
  int in_use;
} pool_blocks[16];

CUresult CUDAAPI cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize,
                                         CUmemoryPool pool, CUstream hStream) {
  (void)hStream;
  if (!pool || !dptr || bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&pool_lock);
  for (size_t i = 0; i < sizeof pool_blocks / sizeof pool_blocks[0]; i++)
    if (pool_blocks[i].ptr && !pool_blocks[i].in_use && pool_blocks[i].size == bytesize) {
      pool_blocks[i].in_use = 1;
      *dptr = pool_blocks[i].ptr;
      atomic_fetch_add(&n_mem_alloc, 1);
      pthread_mutex_unlock(&pool_lock);
      return CUDA_SUCCESS;
    }
  CUresult r = cuMemAlloc(dptr, bytesize);
  for (size_t i = 0; r == CUDA_SUCCESS && i < sizeof pool_blocks / sizeof pool_blocks[0]; i++)
    if (!pool_blocks[i].ptr) {
      pool_blocks[i].ptr = *dptr;
      pool_blocks[i].size = bytesize;
      pool_blocks[i].in_use = 1;
      break;
    }
  pthread_mutex_unlock(&pool_lock);
  return r;
}

CUresult CUDAAPI cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream) {
  (void)hStream;
  pthread_mutex_lock(&pool_lock);
  for (size_t i = 0; i < sizeof pool_blocks / sizeof pool_blocks[0]; i++)
    if (pool_blocks[i].ptr == dptr && pool_blocks[i].in_use) {
      pool_blocks[i].in_use = 0;
      atomic_fetch_add(&n_mem_free, 1);
      pthread_mutex_unlock(&pool_lock);
      return CUDA_SUCCESS;
    }
  pthread_mutex_unlock(&pool_lock);
  return cuMemFree(dptr);
}

/* ---------------------------------------------------------------------- */
/* Tensor maps: the rules cuda.h 13.0 states for fp32 elements, no          */
/* interleave; the map's bytes are a digest of the arguments.              */

static CUresult map_common(CUtensorMapDataType dt, cuuint32_t rank, void *addr,
                           const cuuint64_t *dims, const cuuint64_t *strides,
                           const cuuint32_t *es, CUtensorMapInterleave il) {
  if (ctx_depth <= 0) return CUDA_ERROR_INVALID_CONTEXT;
  if ((dt != CU_TENSOR_MAP_DATA_TYPE_FLOAT32 && dt != CU_TENSOR_MAP_DATA_TYPE_TFLOAT32) ||
      rank < 1 || rank > 5 || ((uintptr_t)addr & 15) != 0 || il != CU_TENSOR_MAP_INTERLEAVE_NONE)
    return CUDA_ERROR_INVALID_VALUE;
  for (cuuint32_t i = 0; i < rank; i++) {
    if (dims[i] == 0 || dims[i] > (UINT64_C(1) << 32)) return CUDA_ERROR_INVALID_VALUE;
    if (es[i] == 0 || es[i] > 8) return CUDA_ERROR_INVALID_VALUE;
    if (i + 1 < rank && (strides[i] % 16 != 0 || strides[i] >= (UINT64_C(1) << 40)))
      return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

static cuuint32_t swizzle_span(CUtensorMapSwizzle sw) {
  return sw == CU_TENSOR_MAP_SWIZZLE_128B ? 128
         : sw == CU_TENSOR_MAP_SWIZZLE_64B ? 64
         : sw == CU_TENSOR_MAP_SWIZZLE_32B ? 32
                                           : 0;
}

static CUresult map_finish(CUresult r, CUtensorMap *m, const void *what, size_t len) {
  if (r != CUDA_SUCCESS) {
    atomic_fetch_add(&n_map_refuse, 1);
    return r;
  }
  memset(m, 0, sizeof *m);
  memcpy(m, what, len < sizeof *m ? len : sizeof *m);
  atomic_fetch_add(&n_map_encode, 1);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuTensorMapEncodeTiled(CUtensorMap *tensorMap, CUtensorMapDataType dt,
                                        cuuint32_t rank, void *addr, const cuuint64_t *dims,
                                        const cuuint64_t *strides, const cuuint32_t *box,
                                        const cuuint32_t *es, CUtensorMapInterleave il,
                                        CUtensorMapSwizzle sw, CUtensorMapL2promotion l2,
                                        CUtensorMapFloatOOBfill oob) {
  (void)l2;
  (void)oob;
  if (!tensorMap || ((uintptr_t)tensorMap & 63) != 0 || !dims || !box || !es ||
      (rank > 1 && !strides))
    return map_finish(CUDA_ERROR_INVALID_VALUE, tensorMap, NULL, 0);
  CUresult r = map_common(dt, rank, addr, dims, strides, es, il);
  for (cuuint32_t i = 0; r == CUDA_SUCCESS && i < rank; i++)
    if (box[i] == 0 || box[i] > 256) r = CUDA_ERROR_INVALID_VALUE;
  cuuint32_t span = swizzle_span(sw);
  if (r == CUDA_SUCCESS && ((box[0] * 4) % 16 != 0 || (span && box[0] * 4 > span)))
    r = CUDA_ERROR_INVALID_VALUE;
  cuuint64_t digest[4] = {1, (uintptr_t)addr, dims[0], box[0]};
  return map_finish(r, tensorMap, digest, sizeof digest);
}

CUresult CUDAAPI cuTensorMapEncodeIm2col(CUtensorMap *tensorMap, CUtensorMapDataType dt,
                                         cuuint32_t rank, void *addr, const cuuint64_t *dims,
                                         const cuuint64_t *strides, const int *lower,
                                         const int *upper, cuuint32_t channels,
                                         cuuint32_t pixels, const cuuint32_t *es,
                                         CUtensorMapInterleave il, CUtensorMapSwizzle sw,
                                         CUtensorMapL2promotion l2,
                                         CUtensorMapFloatOOBfill oob) {
  (void)l2;
  (void)oob;
  if (!tensorMap || ((uintptr_t)tensorMap & 63) != 0 || !dims || !strides || !lower ||
      !upper || !es || rank < 3)
    return map_finish(CUDA_ERROR_INVALID_VALUE, tensorMap, NULL, 0);
  CUresult r = map_common(dt, rank, addr, dims, strides, es, il);
  /* Corners: rank 3 16 bits, rank 4 8 bits, rank 5 5 bits, signed. */
  int bits = rank == 3 ? 16 : rank == 4 ? 8 : 5;
  int lo = -(1 << (bits - 1)), hi = (1 << (bits - 1)) - 1;
  for (cuuint32_t i = 0; r == CUDA_SUCCESS && i < rank - 2; i++)
    if (lower[i] < lo || lower[i] > hi || upper[i] < lo || upper[i] > hi)
      r = CUDA_ERROR_INVALID_VALUE;
  cuuint32_t span = swizzle_span(sw);
  if (r == CUDA_SUCCESS && (channels == 0 || channels > 256 || pixels == 0 || pixels > 1024 ||
                            (channels * 4) % 16 != 0 || (span && channels * 4 > span)))
    r = CUDA_ERROR_INVALID_VALUE;
  cuuint64_t digest[4] = {2, (uintptr_t)addr, dims[0], pixels};
  return map_finish(r, tensorMap, digest, sizeof digest);
}

/* A device of 80 GiB, all of it free. */
CUresult CUDAAPI cuMemGetInfo(size_t *free_bytes, size_t *total_bytes) {
  if (!free_bytes || !total_bytes) return CUDA_ERROR_INVALID_VALUE;
  *free_bytes = *total_bytes = (size_t)80 << 30;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemcpyHtoD(CUdeviceptr dstDevice, const void *srcHost,
                              size_t ByteCount) {
  memcpy((void *)(uintptr_t)dstDevice, srcHost, ByteCount);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemcpyDtoH(void *dstHost, CUdeviceptr srcDevice,
                              size_t ByteCount) {
  atomic_fetch_add(&n_sync, 1); /* a blocking copy synchronises */
  memcpy(dstHost, (const void *)(uintptr_t)srcDevice, ByteCount);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemcpyDtoDAsync(CUdeviceptr dstDevice, CUdeviceptr srcDevice,
                                   size_t ByteCount, CUstream hStream) {
  (void)hStream;
  if (ctx_depth == 0) return CUDA_ERROR_INVALID_CONTEXT;
  atomic_fetch_add(&n_copy, 1);
  memcpy((void *)(uintptr_t)dstDevice, (const void *)(uintptr_t)srcDevice, ByteCount);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemsetD32Async(CUdeviceptr dstDevice, unsigned int ui,
                                  size_t N, CUstream hStream) {
  (void)hStream;
  unsigned int *p = (unsigned int *)(uintptr_t)dstDevice;
  for (size_t i = 0; i < N; i++) p[i] = ui;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc,
                                 size_t N, CUstream hStream) {
  (void)hStream;
  memset((void *)(uintptr_t)dstDevice, uc, N);
  return CUDA_SUCCESS;
}

static int stream_storage[64];

CUresult CUDAAPI cuStreamCreate(CUstream *phStream, unsigned int Flags) {
  (void)Flags;
  if (!phStream) return CUDA_ERROR_INVALID_VALUE;
  *phStream = (CUstream)(void *)&stream_storage[1];
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamDestroy(CUstream hStream) {
  (void)hStream;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamSynchronize(CUstream hStream) {
  (void)hStream;
  atomic_fetch_add(&n_sync, 1);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamQuery(CUstream hStream) {
  (void)hStream;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamGetCtx(CUstream hStream, CUcontext *pctx) {
  (void)hStream;
  if (!pctx) return CUDA_ERROR_INVALID_VALUE;
  *pctx = MOCK_PRIMARY;
  return CUDA_SUCCESS;
}

static int event_storage;

CUresult CUDAAPI cuEventCreate(CUevent *phEvent, unsigned int Flags) {
  (void)Flags;
  if (!phEvent) return CUDA_ERROR_INVALID_VALUE;
  *phEvent = (CUevent)(void *)&event_storage;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventDestroy(CUevent hEvent) {
  (void)hEvent;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventRecord(CUevent hEvent, CUstream hStream) {
  (void)hEvent, (void)hStream;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventSynchronize(CUevent hEvent) {
  (void)hEvent;
  atomic_fetch_add(&n_sync, 1);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventElapsedTime(float *pMilliseconds, CUevent hStart,
                                    CUevent hEnd) {
  (void)hStart, (void)hEnd;
  if (!pMilliseconds) return CUDA_ERROR_INVALID_VALUE;
  *pMilliseconds = 0.0f;
  return CUDA_SUCCESS;
}
