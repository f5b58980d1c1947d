/*
** runtime.c — libconvtune: contexts, the kernel table and the forward pass.
**
** What runs for a problem is decided once per problem and context by
** lookup.c (exact tuned entry -> nearest tuned problem's winner -> default;
** see ct_lookup.h), loaded here, and kept in the context's table.
**
** The table is read-mostly: a fixed array of buckets, each a singly linked
** list of entries that are fully built before they are published with a
** release store and never change or go away until ct_close.  ct_forward
** finds its entry with acquire loads and no lock; only a problem's first
** call takes the context's load lock, which serialises loading (so two
** threads racing on a new problem load it once) and every use of the
** database handle.  After the first call, ct_forward allocates nothing and
** synchronises nothing (a variant with a workspace takes it stream-ordered
** from its own pool, see ct_rt_kernel_launch): a CUDA graph can capture it.
**
** Errors are per thread and per context, like errno (ct_last_error).
*/
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convtune.h"
#include "ct_cache.h"
#include "ct_drv.h"
#include "ct_gen.h"
#include "ct_lookup.h"
#include "ct_nvrtc.h"
#include "ct_rt.h"

/* ---------------------------------------------------------------------- */
/* Loaded kernels                                                          */

/* One set of encoded maps: the buffer addresses they were encoded for
** (indexed by ct_gen_map_buffer; 0 for a buffer no map describes).  Read
** without a lock as a sequence lock: seq is 0 while empty, odd while a
** writer (holding the cache's lock) rewrites the slot, and a reader keeps
** what it copied only if seq was even and unchanged around the copy. */
/* A slot's key: the base address of each buffer the maps describe, by
** ct_gen_map_buffer, then 1 for a launch with packed weights (RT_BUF_PACKED:
** the maps over the packed region are not in the slot, they come with the
** packed weights). */
#define RT_BUF_PACKED 4
#define RT_KEYS 5
typedef struct ct_rt_maps_slot {
  CUtensorMap map[CT_GEN_MAX_MAPS];
  CUdeviceptr key[RT_KEYS];
  atomic_uint seq;
} ct_rt_maps_slot;

_Static_assert(CT_GEN_MAX_MAPS == 2, "ct_rt_kernel_launch passes maps 0 and 1");
_Static_assert(CT_GEN_MAX_KARGS == 32, "kargs are templates/ct_tmap.cuh's ct_kargs");

struct ct_rt_maps {
  ct_rt_maps_slot slot[CT_RT_MAP_SLOTS];
  pthread_mutex_t lock;         /* writers */
  unsigned next;                /* the slot a miss fills next */
  unsigned long encodes;        /* maps encoded so far */
};

static CUtensorMapSwizzle rt_swizzle(int bytes) {
  return bytes == 128 ? CU_TENSOR_MAP_SWIZZLE_128B
         : bytes == 64 ? CU_TENSOR_MAP_SWIZZLE_64B
         : bytes == 32 ? CU_TENSOR_MAP_SWIZZLE_32B
                       : CU_TENSOR_MAP_SWIZZLE_NONE;
}

static CUtensorMapL2promotion rt_l2(int bytes) {
  return bytes == 256 ? CU_TENSOR_MAP_L2_PROMOTION_L2_256B
         : bytes == 128 ? CU_TENSOR_MAP_L2_PROMOTION_L2_128B
         : bytes == 64 ? CU_TENSOR_MAP_L2_PROMOTION_L2_64B
                       : CU_TENSOR_MAP_L2_PROMOTION_NONE;
}

/* Encodes map m over the buffer at base into *out. */
static CUresult rt_encode_map(const ct_gen_map *m, CUdeviceptr base, CUtensorMap *out) {
  void *addr = (void *)(uintptr_t)(base + m->offset);
  CUtensorMapDataType dt =
      m->tf32 ? CU_TENSOR_MAP_DATA_TYPE_TFLOAT32 : CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
  cuuint64_t dims[5], strides[4];
  cuuint32_t box[5], es[5];
  if (m->rank < 1 || m->rank > 5) return CUDA_ERROR_INVALID_VALUE;
  for (int i = 0; i < m->rank; i++) {
    dims[i] = m->dims[i];
    box[i] = m->box[i];
    es[i] = m->elem_strides[i];
    if (i + 1 < m->rank) strides[i] = m->strides[i];
  }
  if (m->kind == CT_GEN_MAP_TILED)
    return ct_drv.cuTensorMapEncodeTiled(out, dt, (cuuint32_t)m->rank, addr, dims, strides, box,
                                         es, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                         rt_swizzle(m->swizzle), rt_l2(m->l2_promote),
                                         CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (m->kind == CT_GEN_MAP_IM2COL)
    return ct_drv.cuTensorMapEncodeIm2col(out, dt, (cuuint32_t)m->rank, addr, dims, strides,
                                          m->lower, m->upper, m->channels, m->pixels, es,
                                          CU_TENSOR_MAP_INTERLEAVE_NONE,
                                          rt_swizzle(m->swizzle), rt_l2(m->l2_promote),
                                          CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  return CUDA_ERROR_INVALID_VALUE;
}

/* Copies slot sl's maps into out when it holds key; 1 on a hit.  No
** lock (see ct_rt_maps_slot). */
static int rt_maps_read(ct_rt_maps_slot *sl, const CUdeviceptr key[RT_KEYS], int n_maps,
                        CUtensorMap *out) {
  unsigned v = atomic_load_explicit(&sl->seq, memory_order_acquire);
  if (v == 0 || (v & 1u)) return 0;
  if (memcmp(sl->key, key, RT_KEYS * sizeof key[0]) != 0) return 0;
  memcpy(out, sl->map, sizeof(CUtensorMap) * (size_t)n_maps);
  atomic_thread_fence(memory_order_acquire);
  return atomic_load_explicit(&sl->seq, memory_order_relaxed) == v;
}

/* 1 when map m of v reads the packed weights in a packed call: a map in
** the workspace's packed region, or for a variant without one (packed
** weights: a copy of w) a map over w. */
static int rt_map_packed(const ct_gen_variant *v, const ct_gen_map *m) {
  if (v->wpack_bytes == 0) return m->buffer == CT_GEN_BUF_W;
  return m->buffer == CT_GEN_BUF_WS && m->offset >= v->wpack_offset &&
         m->offset - v->wpack_offset < v->wpack_bytes;
}

/* The maps of k's variant for buffers bufs (by ct_gen_map_buffer) into
** out: from k's cache without a lock, else encoded under the cache's lock
** and published.  packed: those over the packed region are left out (the
** packed weights carry them, ct_rt_kernel_pack). */
static CUresult rt_maps_for(const ct_rt_kernel *k, const CUdeviceptr bufs[4], int packed,
                            CUtensorMap out[CT_GEN_MAX_MAPS]) {
  const ct_gen_variant *v = &k->variant;
  struct ct_rt_maps *c = k->maps;
  CUdeviceptr key[RT_KEYS] = {0, 0, 0, 0, (CUdeviceptr)(packed != 0)};
  for (int i = 0; i < v->n_maps; i++) {
    unsigned b = (unsigned)v->maps[i].buffer;
    if (b >= 4) return CUDA_ERROR_INVALID_VALUE;
    if (!(packed && rt_map_packed(v, &v->maps[i]))) key[b] = bufs[b];
  }
  for (int s = 0; s < CT_RT_MAP_SLOTS; s++)
    if (rt_maps_read(&c->slot[s], key, v->n_maps, out)) return CUDA_SUCCESS;
  /* A miss: encode (another thread may have done it meanwhile). */
  CUresult r = CUDA_SUCCESS;
  pthread_mutex_lock(&c->lock);
  for (int s = 0; s < CT_RT_MAP_SLOTS; s++)
    if (rt_maps_read(&c->slot[s], key, v->n_maps, out)) {
      pthread_mutex_unlock(&c->lock);
      return CUDA_SUCCESS;
    }
  for (int i = 0; i < v->n_maps && r == CUDA_SUCCESS; i++) {
    if (packed && rt_map_packed(v, &v->maps[i])) {
      memset(&out[i], 0, sizeof out[i]);
      continue;
    }
    r = rt_encode_map(&v->maps[i], key[v->maps[i].buffer], &out[i]);
    c->encodes++;
  }
  if (r == CUDA_SUCCESS) {
    ct_rt_maps_slot *sl = &c->slot[c->next++ % CT_RT_MAP_SLOTS];
    unsigned seq = atomic_load_explicit(&sl->seq, memory_order_relaxed);
    atomic_store_explicit(&sl->seq, seq + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    memcpy(sl->map, out, sizeof(CUtensorMap) * (size_t)v->n_maps);
    memcpy(sl->key, key, sizeof key);
    atomic_store_explicit(&sl->seq, seq + 2, memory_order_release);
  }
  pthread_mutex_unlock(&c->lock);
  return r;
}

unsigned long ct_rt_kernel_map_encodes(const ct_rt_kernel *k) {
  if (k == NULL || k->maps == NULL) return 0;
  pthread_mutex_lock(&k->maps->lock);
  unsigned long n = k->maps->encodes;
  pthread_mutex_unlock(&k->maps->lock);
  return n;
}

ct_status ct_rt_kernel_load(const ct_gen_variant *v, const void *cubin,
                            ct_rt_kernel *k, CUresult *cr) {
  memset(k, 0, sizeof *k);
  k->variant = *v;
  CUresult r = ct_drv.cuModuleLoadData(&k->module, cubin);
  if (r != CUDA_SUCCESS) goto fail;
  for (int i = 0; i < v->n_kernels; i++) {
    const ct_gen_launch *l = &v->kernels[i];
    r = ct_drv.cuModuleGetFunction(&k->fn[i], k->module, l->name);
    if (r != CUDA_SUCCESS) goto fail;
    /* Reading an attribute also makes a lazily loaded function resident
    ** now, not at its first launch (which may be inside a graph capture).
    ** A function that cannot run the plan's block (a cubin built for other
    ** parameters) is refused here, as its launch would be. */
    int max_threads = 0;
    r = ct_drv.cuFuncGetAttribute(&max_threads,
                                  CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
                                  k->fn[i]);
    if (r != CUDA_SUCCESS) goto fail;
    if ((long long)l->block[0] * l->block[1] * l->block[2] > max_threads) {
      r = CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
      goto fail;
    }
    if (l->smem > 48 * 1024) {
      r = ct_drv.cuFuncSetAttribute(
          k->fn[i], CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
          (int)l->smem);
      if (r != CUDA_SUCCESS) goto fail;
    }
  }
  /* Workspaces come per call from a pool of this kernel's (see
  ** ct_rt_kernel_launch), pinned to the current context's device. */
  if (v->workspace_bytes > 0) {
    CUdevice dev;
    r = ct_drv.cuCtxGetDevice(&dev);
    if (r != CUDA_SUCCESS) goto fail;
    CUmemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = dev;
    r = ct_drv.cuMemPoolCreate(&k->pool, &props);
    if (r != CUDA_SUCCESS) goto fail;
    cuuint64_t keep = UINT64_MAX; /* never give memory back at a sync */
    r = ct_drv.cuMemPoolSetAttribute(k->pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep);
    if (r != CUDA_SUCCESS) goto fail;
  }
  if (v->family != NULL && v->family->args == CT_GEN_ARGS_TENSOR_MAPS) {
    void *mem = NULL;
    if (v->n_maps < 0 || v->n_maps > CT_GEN_MAX_MAPS) {
      r = CUDA_ERROR_INVALID_VALUE;
      goto fail;
    }
    if (posix_memalign(&mem, _Alignof(struct ct_rt_maps), sizeof(struct ct_rt_maps)) != 0) {
      r = CUDA_ERROR_OUT_OF_MEMORY;
      goto fail;
    }
    memset(mem, 0, sizeof(struct ct_rt_maps));
    k->maps = mem;
    pthread_mutex_init(&k->maps->lock, NULL);
  }
  *cr = CUDA_SUCCESS;
  return CT_OK;
fail:
  *cr = r;
  ct_rt_kernel_unload(k);
  return CT_ERR_CUDA;
}

/* Queues k's launches with args on stream: every one (weights < 0), all
** but the weight pass (0), or the weight pass alone (1).  An early launch
** (ct_gen_launch.early) goes through cuLaunchKernelEx with programmatic
** stream serialization. */
static CUresult rt_launch_each(const ct_rt_kernel *k, void **args, CUstream stream, int weights) {
  CUresult r = CUDA_SUCCESS;
  for (int i = 0; i < k->variant.n_kernels && r == CUDA_SUCCESS; i++) {
    const ct_gen_launch *l = &k->variant.kernels[i];
    if (weights >= 0 && (l->weights != 0) != (weights != 0)) continue;
    if (!l->early) {
      r = ct_drv.cuLaunchKernel(k->fn[i], l->grid[0], l->grid[1], l->grid[2], l->block[0],
                                l->block[1], l->block[2], l->smem, stream, args, NULL);
      continue;
    }
    CUlaunchAttribute attr;
    memset(&attr, 0, sizeof attr);
    attr.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attr.value.programmaticStreamSerializationAllowed = 1;
    CUlaunchConfig cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.gridDimX = l->grid[0];
    cfg.gridDimY = l->grid[1];
    cfg.gridDimZ = l->grid[2];
    cfg.blockDimX = l->block[0];
    cfg.blockDimY = l->block[1];
    cfg.blockDimZ = l->block[2];
    cfg.sharedMemBytes = l->smem;
    cfg.hStream = stream;
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
    r = ct_drv.cuLaunchKernelEx(&cfg, k->fn[i], args, NULL);
  }
  return r;
}

/* Queues k's launches; with packed weights (pmaps: their maps, encoded by
** ct_rt_kernel_pack) all but the weight pass, with a workspace that stops
** where the packed region starts when that region ends it. */
static ct_status rt_launch(const ct_rt_kernel *k, CUdeviceptr x, CUdeviceptr w, CUdeviceptr b,
                           CUdeviceptr y, const CUtensorMap *pmaps, CUstream stream,
                           CUresult *cr) {
  const int packed = pmaps != NULL;
  CUdeviceptr ws = 0;
  CUresult r = CUDA_SUCCESS;
  /* A map over the caller's tensors needs a 16-byte aligned address. */
  const CUdeviceptr caller[4] = {0, x, w, y};
  for (int i = 0; i < k->variant.n_maps; i++) {
    const ct_gen_map *m = &k->variant.maps[i];
    if (m->buffer != CT_GEN_BUF_WS && (unsigned)m->buffer < 4 &&
        ((caller[m->buffer] + m->offset) & 15) != 0) {
      *cr = CUDA_SUCCESS;
      return CT_ERR_INVALID_ARG;
    }
  }
  /* With packed weights the workspace's packed region, when it ends the
  ** workspace (gm, gmp, pw and tap: all of it), is not needed. */
  const ct_gen_variant *v = &k->variant;
  size_t ws_bytes = v->workspace_bytes;
  if (packed && v->wpack_bytes > 0 && v->wpack_offset + v->wpack_bytes == ws_bytes)
    ws_bytes = v->wpack_offset;
  if (ws_bytes > 0) {
    r = ct_drv.cuMemAllocFromPoolAsync(&ws, ws_bytes, k->pool, stream);
    if (r != CUDA_SUCCESS) {
      *cr = r;
      return CT_ERR_CUDA;
    }
  }
  void *args[] = {&x, &w, &b, &y, &ws, NULL, NULL, NULL};
  /* A tensor-map variant's extra arguments: kargs and the maps (both
  ** copied by cuLaunchKernel at the call). */
  CUtensorMap maps[CT_GEN_MAX_MAPS]; /* aligned as cuda.h declares it (128 bytes) */
  if (k->maps != NULL) {
    memset(maps, 0, sizeof maps);
    const CUdeviceptr bufs[4] = {ws, x, w, y};
    if (v->n_maps > 0) r = rt_maps_for(k, bufs, packed, maps);
    for (int i = 0; packed && i < v->n_maps; i++)
      if (rt_map_packed(v, &v->maps[i])) maps[i] = pmaps[i];
    args[5] = (void *)k->variant.kargs;
    args[6] = &maps[0];
    args[7] = &maps[1];
  }
  if (r == CUDA_SUCCESS) r = rt_launch_each(k, args, stream, packed ? 0 : -1);
  /* Freed after what was queued, also when a launch failed. */
  if (ws) {
    CUresult rf = ct_drv.cuMemFreeAsync(ws, stream);
    if (r == CUDA_SUCCESS) r = rf;
  }
  *cr = r;
  return r == CUDA_SUCCESS ? CT_OK : CT_ERR_CUDA;
}

ct_status ct_rt_kernel_launch(const ct_rt_kernel *k, CUdeviceptr x,
                              CUdeviceptr w, CUdeviceptr b, CUdeviceptr y,
                              CUstream stream, CUresult *cr) {
  return rt_launch(k, x, w, b, y, NULL, stream, cr);
}

ct_status ct_rt_kernel_launch_packed(const ct_rt_kernel *k, CUdeviceptr x, CUdeviceptr packed,
                                     const CUtensorMap *pmaps, CUdeviceptr b, CUdeviceptr y,
                                     CUstream stream, CUresult *cr) {
  return rt_launch(k, x, packed, b, y, pmaps, stream, cr);
}

size_t ct_rt_kernel_packed_bytes(const ct_rt_kernel *k, size_t w_bytes) {
  return k->variant.wpack_bytes > 0 ? k->variant.wpack_bytes : w_bytes;
}

ct_status ct_rt_kernel_pack(const ct_rt_kernel *k, CUdeviceptr w, size_t w_bytes,
                            CUdeviceptr packed, CUstream stream,
                            CUtensorMap pmaps[CT_GEN_MAX_MAPS], CUresult *cr) {
  const ct_gen_variant *v = &k->variant;
  CUresult r = CUDA_SUCCESS;
  memset(pmaps, 0, sizeof(CUtensorMap) * CT_GEN_MAX_MAPS);
  if (v->wpack_bytes == 0) r = ct_drv.cuMemcpyDtoDAsync(packed, w, w_bytes, stream);
  /* The maps over the packed weights: a copy of w at its own address; the
  ** packed region at the buffer's base less wpack_offset, so that each
  ** map's offset lands where it should. */
  const CUdeviceptr base = v->wpack_bytes > 0 ? packed - v->wpack_offset : packed;
  for (int i = 0; i < v->n_maps && r == CUDA_SUCCESS; i++)
    if (rt_map_packed(v, &v->maps[i])) {
      r = rt_encode_map(&v->maps[i], base, &pmaps[i]);
      if (k->maps) {
        pthread_mutex_lock(&k->maps->lock);
        k->maps->encodes++;
        pthread_mutex_unlock(&k->maps->lock);
      }
    }
  if (r == CUDA_SUCCESS && v->wpack_bytes > 0) {
    /* The weight pass writes at ws + wpack_offset: give it the packed
    ** buffer less that offset (it touches nothing else); its maps, which
    ** it does not read, are left zero. */
    CUdeviceptr x = 0, b = 0, y = 0, ws = packed - v->wpack_offset;
    CUtensorMap maps[CT_GEN_MAX_MAPS];
    memset(maps, 0, sizeof maps);
    void *args[] = {&x, &w, &b, &y, &ws, (void *)v->kargs, &maps[0], &maps[1]};
    if (k->maps == NULL) args[5] = args[6] = args[7] = NULL;
    r = rt_launch_each(k, args, stream, 1);
  }
  *cr = r;
  return r == CUDA_SUCCESS ? CT_OK : CT_ERR_CUDA;
}

void ct_rt_kernel_unload(ct_rt_kernel *k) {
  if (k == NULL) return;
  if (k->maps) {
    pthread_mutex_destroy(&k->maps->lock);
    free(k->maps);
  }
  k->maps = NULL;
  if (k->pool) ct_drv.cuMemPoolDestroy(k->pool);
  if (k->module) ct_drv.cuModuleUnload(k->module);
  k->pool = NULL;
  k->module = NULL;
}

ct_status ct_rt_device_describe(CUdevice dev, const ct_gen_limits *lim,
                                ct_cache_device *out) {
  memset(out, 0, sizeof *out);
  if (ct_drv.cuDeviceGetName(out->name, (int)sizeof out->name, dev) !=
      CUDA_SUCCESS)
    return CT_ERR_CUDA;
  if (ct_drv.cuDriverGetVersion(&out->driver_version) != CUDA_SUCCESS)
    return CT_ERR_CUDA;
  out->cc_major = lim->cc_major;
  out->cc_minor = lim->cc_minor;
  out->sm_count = lim->sm_count;
  snprintf(out->arch, sizeof out->arch, "%s", lim->arch);
  return ct_rt_nvrtc_version(out->nvrtc_version, sizeof out->nvrtc_version);
}

/* ---------------------------------------------------------------------- */
/* Contexts                                                                */

#define CT_RT_MAGIC 0x78637463u /* "ctcx": an open context */
#define CT_RT_BUCKETS 128       /* table buckets (chains grow past that) */

/* One problem's kernel.  Immutable once published. */
typedef struct ct_rt_entry {
  struct ct_rt_entry *next;       /* next in the bucket's chain */
  uint64_t hash;                  /* problem_hash(&problem) */
  ct_problem problem;             /* the key (a valid problem) */
  ct_rt_kernel kernel;            /* loaded variant */
  uint64_t x_bytes, w_bytes, b_bytes, y_bytes; /* tensor sizes */
  ct_path path;                   /* how it was obtained */
  char source[CT_PROBLEM_SPEC_MAX]; /* NEAREST: the tuned problem used */
  char reason[CT_RT_REASON_MAX];  /* why */
} ct_rt_entry;

struct ct_context {
  uint32_t magic;               /* CT_RT_MAGIC while open */
  unsigned fork_generation;     /* rt_fork_generation at ct_open */
  uint64_t serial;              /* unique per ct_open in this process */
  int ordinal;                  /* CUDA device ordinal */
  CUdevice dev;                 /* that device */
  CUcontext primary;            /* its retained primary context */
  ct_gen_limits limits;         /* what the generator plans against */
  ct_cache_device device;       /* the database's key for this device */
  _Atomic(ct_rt_entry *) table[CT_RT_BUCKETS]; /* chains, read lock-free */
  pthread_mutex_t load_lock;    /* first calls; guards the fields below */
  ct_cache *cache;              /* read-only; NULL when unusable */
  ct_rt_tuned_list tuned;       /* nearest candidates, read on first need */
  ct_status db_status;          /* ct_database_status */
  char db_path[4096];           /* "" when none */
  char db_message[512];         /* what was found */
  struct ct_weights *weights;   /* packed on this context, not yet freed
                                   (a list, under load_lock) */
};

static void rt_release_weights(ct_context *ctx, int pushed);

/* Per-process state: fork detection and the serial counter. */
static pthread_once_t rt_once = PTHREAD_ONCE_INIT;
static atomic_uint rt_fork_generation;
static atomic_uint_fast64_t rt_next_serial = 1;
static pthread_key_t rt_log_key; /* frees a thread's NVRTC logs at exit */

static void rt_after_fork_child(void) {
  atomic_fetch_add_explicit(&rt_fork_generation, 1, memory_order_relaxed);
}

static void rt_errors_free(void *errors); /* below */

static void rt_init(void) {
  pthread_atfork(NULL, NULL, rt_after_fork_child);
  pthread_key_create(&rt_log_key, rt_errors_free);
}

static int ctx_ok(const ct_context *ctx) {
  return ctx != NULL && ctx->magic == CT_RT_MAGIC;
}

/* ---------------------------------------------------------------------- */
/* Errors (per thread)                                                     */

typedef struct rt_error {
  uint64_t serial;      /* the context the failure is about; 0: none */
  uint64_t stamp;       /* when it was recorded, in this thread's count */
  char message[512];
  int cuda_result;      /* CUresult, 0 when none */
  int nvrtc_result;     /* nvrtcResult, 0 when none */
  char *nvrtc_log;      /* malloc'd (freed through rt_log_key at exit), or NULL */
} rt_error;

/* A thread's last failure on each of the last RT_ERROR_SLOTS contexts it
** failed on: a failure on one context leaves another's strings alone
** (convtune.h: valid until this thread's next call on that context; past
** RT_ERROR_SLOTS contexts, the least recent one's are dropped). */
#define RT_ERROR_SLOTS 8
static __thread rt_error rt_errors[RT_ERROR_SLOTS];
static __thread uint64_t rt_error_count;
static __thread rt_error *rt_last; /* the slot ctx_fail last wrote */

static void rt_errors_free(void *errors) {
  rt_error *e = errors;
  for (int i = 0; i < RT_ERROR_SLOTS; i++) {
    free(e[i].nvrtc_log);
    e[i].nvrtc_log = NULL;
  }
}

/* This thread's slot of ctx's failures, or NULL. */
static rt_error *rt_error_of(const ct_context *ctx) {
  for (int i = 0; i < RT_ERROR_SLOTS; i++)
    if (rt_errors[i].serial != 0 && rt_errors[i].serial == ctx->serial) return &rt_errors[i];
  return NULL;
}

static void rt_set_log(const char *log) {
  free(rt_last->nvrtc_log);
  rt_last->nvrtc_log = log ? strdup(log) : NULL;
  pthread_setspecific(rt_log_key, rt_errors);
}

/* Records a failure of a call on ctx in this thread and returns rc: in
** ctx's slot, else a free one, else the least recently written. */
__attribute__((format(printf, 4, 5)))
static ct_status ctx_fail(const ct_context *ctx, ct_status rc, CUresult cr,
                          const char *fmt, ...) {
  rt_error *e = rt_error_of(ctx);
  for (int i = 0; e == NULL && i < RT_ERROR_SLOTS; i++)
    if (rt_errors[i].serial == 0) e = &rt_errors[i];
  if (e == NULL) {
    e = &rt_errors[0];
    for (int i = 1; i < RT_ERROR_SLOTS; i++)
      if (rt_errors[i].stamp < e->stamp) e = &rt_errors[i];
  }
  rt_last = e;
  rt_last->serial = ctx->serial;
  rt_last->stamp = ++rt_error_count;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(rt_last->message, sizeof rt_last->message, fmt, ap);
  va_end(ap);
  if (cr != CUDA_SUCCESS) {
    char buf[256];
    size_t used = strlen(rt_last->message);
    snprintf(rt_last->message + used, sizeof rt_last->message - used, ": %s",
             ct_drv_error(cr, buf, sizeof buf));
  }
  rt_last->cuda_result = (int)cr;
  rt_last->nvrtc_result = 0;
  rt_set_log(NULL);
  return rc;
}

/* ctx's slot when ctx is an open context, else NULL. */
static const rt_error *rt_error_for(const ct_context *ctx) {
  return ctx_ok(ctx) ? rt_error_of(ctx) : NULL;
}

const char *ct_last_error(const ct_context *ctx) {
  if (ctx == NULL) return "no context";
  if (!ctx_ok(ctx)) return "not an open convtune context";
  const rt_error *e = rt_error_for(ctx);
  return e ? e->message : "no error";
}
int ct_last_cuda_result(const ct_context *ctx) {
  const rt_error *e = rt_error_for(ctx);
  return e ? e->cuda_result : 0;
}
int ct_last_nvrtc_result(const ct_context *ctx) {
  const rt_error *e = rt_error_for(ctx);
  return e ? e->nvrtc_result : 0;
}
const char *ct_last_nvrtc_log(const ct_context *ctx) {
  const rt_error *e = rt_error_for(ctx);
  return e && e->nvrtc_log ? e->nvrtc_log : "";
}

/* ---------------------------------------------------------------------- */
/* Opening and closing                                                     */

static __thread char open_error[512] = "no error";

const char *ct_open_error(void) { return open_error; }

ct_status ct_default_database(char *buf, size_t len) {
  return ct_cache_default_path(buf, len);
}

/* Opens the database for ctx; never fails: records what it found in
** ctx->db_status and ctx->db_message, leaving ctx->cache NULL unless the
** file is usable. */
static void db_open(ct_context *ctx, const char *db_path) {
  ctx->cache = NULL;
  if (db_path != NULL && db_path[0] == '\0') {
    ctx->db_status = CT_ERR_NOT_FOUND;
    snprintf(ctx->db_message, sizeof ctx->db_message,
             "no database (db_path \"\"): default variants only");
    return;
  }
  if (db_path == NULL) {
    ct_status prc = ct_cache_default_path(ctx->db_path, sizeof ctx->db_path);
    if (prc != CT_OK) {
      ctx->db_path[0] = '\0';
      ctx->db_status = CT_ERR_IO;
      snprintf(ctx->db_message, sizeof ctx->db_message, "%s",
               prc == CT_ERR_IO
                   ? "no tuning database path: set CONVTUNE_DB, "
                     "XDG_CACHE_HOME or HOME"
                   : "the tuning database path from CONVTUNE_DB, "
                     "XDG_CACHE_HOME or HOME is longer than 4095 bytes");
      return;
    }
  } else if (strlen(db_path) >= sizeof ctx->db_path) {
    ctx->db_path[0] = '\0';
    ctx->db_status = CT_ERR_IO;
    snprintf(ctx->db_message, sizeof ctx->db_message,
             "db_path is %zu bytes long: at most %zu", strlen(db_path),
             sizeof ctx->db_path - 1);
    return;
  } else {
    snprintf(ctx->db_path, sizeof ctx->db_path, "%s", db_path);
  }
  char err[512];
  ct_status rc = ct_cache_open(ctx->db_path, CT_CACHE_READONLY, &ctx->cache,
                               err, sizeof err);
  if (rc == CT_OK) rc = ct_cache_untrusted(ctx->cache);
  ctx->db_status = rc;
  if (rc == CT_OK) {
    snprintf(ctx->db_message, sizeof ctx->db_message,
             "%.400s: open, schema version %d", ctx->db_path,
             ct_cache_schema_version(ctx->cache));
  } else {
    snprintf(ctx->db_message, sizeof ctx->db_message, "%s",
             err[0] ? err : ct_status_string(rc));
    ct_cache_close(ctx->cache);
    ctx->cache = NULL;
  }
}

/* Notes a database failure found after ct_open (a damaged entry, an SQLite
** error); called with the load lock held.  The first one is kept. */
static void db_note(ct_context *ctx, ct_status rc, const char *message) {
  if (ctx->db_status != CT_OK) return;
  ctx->db_status = rc;
  snprintf(ctx->db_message, sizeof ctx->db_message, "%s", message);
}

ct_status ct_open(const char *db_path, int device, ct_context **out) {
  if (out == NULL) {
    snprintf(open_error, sizeof open_error, "ct_open: out is NULL");
    return CT_ERR_INVALID_ARG;
  }
  *out = NULL;
  pthread_once(&rt_once, rt_init);
  const char *why = NULL;
  ct_status rc = ct_drv_load(&why);
  if (rc != CT_OK) {
    snprintf(open_error, sizeof open_error, "%s", why);
    return rc;
  }
  int count = 0;
  ct_drv.cuDeviceGetCount(&count);
  if (device < 0 || device >= count) {
    snprintf(open_error, sizeof open_error,
             "no CUDA device %d: the driver sees %d device(s)", device, count);
    return CT_ERR_NO_DEVICE;
  }
  ct_context *ctx = calloc(1, sizeof *ctx);
  if (ctx == NULL) {
    snprintf(open_error, sizeof open_error, "out of host memory");
    return CT_ERR_NOMEM;
  }
  pthread_mutex_init(&ctx->load_lock, NULL);
  for (size_t i = 0; i < CT_RT_BUCKETS; i++) atomic_init(&ctx->table[i], NULL);
  ctx->magic = CT_RT_MAGIC;
  ctx->fork_generation =
      atomic_load_explicit(&rt_fork_generation, memory_order_relaxed);
  ctx->serial = atomic_fetch_add(&rt_next_serial, 1);
  ctx->ordinal = device;
  char buf[256];
  CUresult r = ct_drv.cuDeviceGet(&ctx->dev, device);
  if (r == CUDA_SUCCESS)
    r = ct_drv.cuDevicePrimaryCtxRetain(&ctx->primary, ctx->dev);
  if (r != CUDA_SUCCESS) {
    snprintf(open_error, sizeof open_error, "cannot use CUDA device %d: %s",
             device, ct_drv_error(r, buf, sizeof buf));
    rc = CT_ERR_CUDA;
    goto fail;
  }
  if (ct_drv_limits(ctx->dev, &ctx->limits) != CT_OK ||
      ct_rt_device_describe(ctx->dev, &ctx->limits, &ctx->device) != CT_OK) {
    snprintf(open_error, sizeof open_error,
             "cannot read the attributes of CUDA device %d", device);
    rc = CT_ERR_CUDA;
    goto fail;
  }
  db_open(ctx, db_path);
  *out = ctx;
  return CT_OK;
fail:
  ct_close(ctx);
  return rc;
}

void ct_close(ct_context *ctx) {
  if (!ctx_ok(ctx)) return;
  ctx->magic = 0;
  int pushed = 0;
  CUcontext popped;
  if (ctx->primary && ct_drv.cuCtxPushCurrent(ctx->primary) == CUDA_SUCCESS)
    pushed = 1;
  rt_release_weights(ctx, pushed);
  for (size_t i = 0; i < CT_RT_BUCKETS; i++) {
    ct_rt_entry *e = atomic_load(&ctx->table[i]);
    while (e != NULL) {
      ct_rt_entry *next = e->next;
      if (pushed) ct_rt_kernel_unload(&e->kernel);
      free(e);
      e = next;
    }
  }
  if (pushed) ct_drv.cuCtxPopCurrent(&popped);
  if (ctx->primary) ct_drv.cuDevicePrimaryCtxRelease(ctx->dev);
  ct_cache_close(ctx->cache);
  ct_rt_tuned_free(&ctx->tuned);
  pthread_mutex_destroy(&ctx->load_lock);
  free(ctx);
}

ct_status ct_database_status(ct_context *ctx, char *msg, size_t len) {
  if (!ctx_ok(ctx)) {
    if (msg && len) snprintf(msg, len, "not an open convtune context");
    return CT_ERR_INVALID_ARG;
  }
  pthread_mutex_lock(&ctx->load_lock);
  ct_status rc = ctx->db_status;
  if (msg && len) snprintf(msg, len, "%s", ctx->db_message);
  pthread_mutex_unlock(&ctx->load_lock);
  return rc;
}

/* ---------------------------------------------------------------------- */
/* The table                                                               */

/* The fields of *p as int64s: what the table hashes and compares, field by
** field, so that neither depends on the struct's bytes between or after
** its fields. */
enum { PROBLEM_FIELDS = 19 };
static void problem_fields(const ct_problem *p, int64_t f[PROBLEM_FIELDS]) {
  const int64_t v[PROBLEM_FIELDS] = {
      p->n,        p->c,     p->h,     p->w,     p->k,
      p->r,        p->s,     p->stride_h, p->stride_w, p->pad_h,
      p->pad_w,    p->dil_h, p->dil_w, p->bias,  (int64_t)p->precision,
      (int64_t)p->act, (int64_t)p->layout, p->residual, p->groups};
  memcpy(f, v, sizeof v);
}

static uint64_t problem_hash(const ct_problem *p) {
  int64_t f[PROBLEM_FIELDS];
  problem_fields(p, f);
  uint64_t h = 0x9e3779b97f4a7c15ull;
  for (size_t i = 0; i < PROBLEM_FIELDS; i++) {
    h = (h ^ (uint64_t)f[i]) * 0xff51afd7ed558ccdull;
    h ^= h >> 32;
  }
  return h;
}

static int same_problem(const ct_problem *a, const ct_problem *b) {
  int64_t fa[PROBLEM_FIELDS], fb[PROBLEM_FIELDS];
  problem_fields(a, fa);
  problem_fields(b, fb);
  return memcmp(fa, fb, sizeof fa) == 0;
}

static ct_rt_entry *table_find(ct_context *ctx, const ct_problem *p,
                               uint64_t h) {
  ct_rt_entry *e = atomic_load_explicit(&ctx->table[h % CT_RT_BUCKETS],
                                        memory_order_acquire);
  for (; e != NULL; e = e->next)
    if (e->hash == h && same_problem(&e->problem, p)) return e;
  return NULL;
}

/* Loads variant v for p into k: the database's compile cache's cubin of
** its source where there is one that loads (*cached = 1), else compiled
** with NVRTC (*cached = 0).  A failure is recorded as this thread's error
** on ctx; a damaged cache entry as the database's state. */
static ct_status compile_and_load(ct_context *ctx, const ct_problem *p,
                                  const ct_gen_variant *v, ct_rt_kernel *k,
                                  int *cached) {
  *cached = 0;
  char *src = NULL;
  ct_status rc = ct_gen_source(p, v, &src);
  if (rc != CT_OK)
    return ctx_fail(ctx, rc, CUDA_SUCCESS, "cannot generate the source of %s",
                    v->name);
  const char *options = ct_rt_compile_options(ctx->limits.arch);
  if (ctx->cache != NULL && options != NULL) {
    ct_cache_cubin cb;
    rc = ct_cache_cubin_get(ctx->cache, ct_gen_hash(src, strlen(src), CT_GEN_HASH_SEED),
                            options, ctx->limits.arch, ctx->device.nvrtc_version, &cb);
    if (rc == CT_OK) {
      CUresult cr;
      *cached = ct_rt_kernel_load(v, cb.cubin, k, &cr) == CT_OK;
      ct_cache_cubin_clear(&cb);
      if (*cached) {
        free(src);
        return CT_OK;
      }
    } else if (rc != CT_ERR_NOT_FOUND && rc != CT_ERR_NOMEM) {
      db_note(ctx, rc, ct_cache_errmsg(ctx->cache));
    }
  }
  ct_rt_compiled out;
  rc = ct_rt_compile(src, v->name, ctx->limits.arch, &out);
  free(src);
  if (rc != CT_OK) {
    ctx_fail(ctx, rc, CUDA_SUCCESS, "NVRTC failed to compile %s (see the log)",
             v->name);
    rt_last->nvrtc_result = out.nvrtc_result;
    rt_set_log(out.log);
    ct_rt_compiled_clear(&out);
    return rc;
  }
  CUresult cr;
  rc = ct_rt_kernel_load(v, out.cubin, k, &cr);
  ct_rt_compiled_clear(&out);
  if (rc != CT_OK)
    return ctx_fail(ctx, rc, cr, "cannot load the compiled variant %s",
                    v->name);
  return CT_OK;
}

/* Appends ", text" style additions to an entry's reason. */
__attribute__((format(printf, 2, 3)))
static void reason_append(ct_rt_entry *e, const char *fmt, ...) {
  size_t used = strlen(e->reason);
  if (used + 1 >= sizeof e->reason) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(e->reason + used, sizeof e->reason - used, fmt, ap);
  va_end(ap);
}

/* Decides and loads e's kernel for the valid problem p; called with the
** load lock held and the primary context current. */
static ct_status entry_build(ct_context *ctx, const ct_problem *p,
                             ct_rt_entry *e) {
  ct_rt_choice ch;
  ct_status rc = ct_rt_choose(ctx->cache, &ctx->device, &ctx->limits, p,
                              &ctx->tuned, &ch);
  if (ch.db_error != CT_OK) db_note(ctx, ch.db_error, ch.db_message);
  if (ctx->cache == NULL && rc == CT_OK) {
    /* Say why there is no database rather than just that. */
    snprintf(e->reason, sizeof e->reason, "no usable tuning database (%s); ",
             ctx->db_message);
    reason_append(e, "%s", "default variant");
  } else {
    snprintf(e->reason, sizeof e->reason, "%s", ch.reason);
  }
  if (rc != CT_OK) {
    ctx_fail(ctx, rc, CUDA_SUCCESS, "no kernel for this problem: %s",
             ch.reason);
    ct_rt_choice_clear(&ch);
    return rc;
  }
  int loaded = 0;
  if (ch.cubin != NULL) {
    CUresult cr;
    rc = ct_rt_kernel_load(&ch.variant, ch.cubin, &e->kernel, &cr);
    loaded = rc == CT_OK;
    if (!loaded) {
      char buf[256];
      if (ch.path == CT_PATH_TUNED_CUBIN) ch.path = CT_PATH_TUNED_COMPILED;
      reason_append(e, "; but it did not load (%s)", ct_drv_error(cr, buf, sizeof buf));
    }
  }
  int cached = 0;
  if (!loaded) {
    rc = compile_and_load(ctx, p, &ch.variant, &e->kernel, &cached);
    if (rc != CT_OK && ch.path != CT_PATH_DEFAULT) {
      /* A tuned or borrowed variant that does not build falls back. */
      char why[CT_RT_REASON_MAX];
      snprintf(why, sizeof why, "but %s failed (%s)", ch.variant.name,
               ct_last_error(ctx));
      snprintf(ch.reason, sizeof ch.reason, "%s", e->reason);
      rc = ct_rt_choice_default(&ch, p, &ctx->limits, why);
      snprintf(e->reason, sizeof e->reason, "%s", ch.reason);
      if (rc == CT_OK) rc = compile_and_load(ctx, p, &ch.variant, &e->kernel, &cached);
      else ctx_fail(ctx, rc, CUDA_SUCCESS, "%s", ch.reason);
    }
    if (rc == CT_OK)
      reason_append(e, "; %s", cached ? "its cubin for this source is in the database's "
                                        "compile cache, no NVRTC"
                                      : "compiled with NVRTC");
  }
  if (rc == CT_OK) {
    e->path = ch.path;
    snprintf(e->source, sizeof e->source, "%s", ch.source);
  }
  ct_rt_choice_clear(&ch);
  return rc;
}

/* Byte sizes of a valid problem's tensors. */
static void entry_sizes(ct_rt_entry *e, const ct_problem *p) {
  int64_t P, Q;
  ct_problem_output(p, &P, &Q);
  e->x_bytes = (uint64_t)(p->n * p->c * p->h * p->w) * sizeof(float);
  e->w_bytes = (uint64_t)(p->k * (p->c / p->groups) * p->r * p->s) * sizeof(float);
  e->b_bytes = p->bias ? (uint64_t)p->k * sizeof(float) : 0;
  e->y_bytes = (uint64_t)(p->n * p->k * P * Q) * sizeof(float);
}

/* The first call for p: validates it, then finds or builds its entry under
** the load lock and publishes it.  The caller has checked ctx. */
static ct_status entry_load(ct_context *ctx, const ct_problem *p, uint64_t h,
                            ct_rt_entry **out) {
  char err[256];
  ct_status rc = ct_problem_validate(p, err, sizeof err);
  if (rc != CT_OK)
    return ctx_fail(ctx, rc, CUDA_SUCCESS, "invalid problem: %s", err);
  pthread_mutex_lock(&ctx->load_lock);
  ct_rt_entry *e = table_find(ctx, p, h); /* another thread's, maybe */
  if (e != NULL) goto out;
  e = calloc(1, sizeof *e);
  if (e == NULL) {
    rc = ctx_fail(ctx, CT_ERR_NOMEM, CUDA_SUCCESS, "out of host memory");
    goto out;
  }
  CUcontext popped;
  CUresult cr = ct_drv.cuCtxPushCurrent(ctx->primary);
  if (cr != CUDA_SUCCESS) {
    free(e);
    e = NULL;
    rc = ctx_fail(ctx, CT_ERR_CUDA, cr,
                  "cannot make the device's primary context current");
    goto out;
  }
  rc = entry_build(ctx, p, e);
  ct_drv.cuCtxPopCurrent(&popped);
  if (rc != CT_OK) {
    free(e);
    e = NULL;
    goto out;
  }
  e->hash = h;
  e->problem = *p;
  entry_sizes(e, p);
  _Atomic(ct_rt_entry *) *bucket = &ctx->table[h % CT_RT_BUCKETS];
  e->next = atomic_load_explicit(bucket, memory_order_relaxed);
  atomic_store_explicit(bucket, e, memory_order_release);
out:
  pthread_mutex_unlock(&ctx->load_lock);
  *out = e;
  return rc;
}

/* Checks the context is usable in this process. */
static ct_status ctx_check(ct_context *ctx) {
  if (!ctx_ok(ctx)) return CT_ERR_INVALID_ARG;
  if (ctx->fork_generation !=
      atomic_load_explicit(&rt_fork_generation, memory_order_relaxed))
    return ctx_fail(ctx, CT_ERR_UNSUPPORTED, CUDA_SUCCESS,
                    "this context was opened before a fork(): CUDA state "
                    "does not survive into the child; open a new context "
                    "there");
  return CT_OK;
}

/* ---------------------------------------------------------------------- */
/* The forward pass                                                        */

/* 1 if [a, a+na) and [b, b+nb) share a byte. */
static int overlaps(uintptr_t a, uint64_t na, uintptr_t b, uint64_t nb) {
  return a < b + nb && b < a + na;
}

/* The entry of p on ctx, loaded if needed. */
static ct_status entry_of(ct_context *ctx, const ct_problem *p, ct_rt_entry **e) {
  uint64_t h = problem_hash(p);
  *e = table_find(ctx, p, h);
  return *e ? CT_OK : entry_load(ctx, p, h, e);
}

/* The checks ct_forward and ct_forward_packed (`who`, which passes no w)
** make of the tensors before the problem is loaded: none NULL, b given
** for a bias, every one 4-byte aligned. */
static ct_status check_tensors(ct_context *ctx, const char *who, const ct_problem *p,
                               const float *x, const float *w, int with_w, const float *b,
                               const float *y) {
  if (p == NULL || x == NULL || (with_w && w == NULL) || y == NULL)
    return ctx_fail(ctx, CT_ERR_INVALID_ARG, CUDA_SUCCESS,
                    "%s: the problem, %s must not be NULL", who, with_w ? "x, w and y" : "x and y");
  if (p->bias != 0 && b == NULL)
    return ctx_fail(ctx, CT_ERR_INVALID_ARG, CUDA_SUCCESS,
                    "%s: the problem has a bias but b is NULL", who);
  const uintptr_t u = (uintptr_t)x | (with_w ? (uintptr_t)w : 0) | (uintptr_t)y |
                      (p->bias ? (uintptr_t)b : 0);
  if (u & (sizeof(float) - 1))
    return ctx_fail(ctx, CT_ERR_INVALID_ARG, CUDA_SUCCESS,
                    "%s: x, %sb and y must be 4-byte aligned fp32 pointers", who,
                    with_w ? "w, " : "");
  return CT_OK;
}

/* The check once e (the problem's sizes) is known: y overlaps none of x,
** w (0: none) and b (0: none). */
static ct_status check_overlaps(ct_context *ctx, const char *who, const ct_rt_entry *e,
                                uintptr_t x, uintptr_t w, uintptr_t b, uintptr_t y) {
  if (overlaps(y, e->y_bytes, x, e->x_bytes) || (w && overlaps(y, e->y_bytes, w, e->w_bytes)) ||
      (b && overlaps(y, e->y_bytes, b, e->b_bytes)))
    return ctx_fail(ctx, CT_ERR_INVALID_ARG, CUDA_SUCCESS,
                    "%s: y overlaps an input (%s); the kernels do not work in place", who,
                    w ? "x, w or b" : "x or b");
  return CT_OK;
}

/* Queues e's kernel on stream in ctx's primary context, for ct_forward
** (packed 0) or ct_forward_packed (those weights and their maps pmaps; w
** unused). */
static ct_status forward_launch(ct_context *ctx, const ct_rt_entry *e, uintptr_t x,
                                uintptr_t w, uintptr_t b, uintptr_t y, CUdeviceptr packed,
                                const CUtensorMap *pmaps, void *stream) {
  CUcontext popped;
  CUresult cr = ct_drv.cuCtxPushCurrent(ctx->primary);
  if (cr != CUDA_SUCCESS)
    return ctx_fail(ctx, CT_ERR_CUDA, cr, "cannot make the device's primary context current");
  ct_status rc = packed ? ct_rt_kernel_launch_packed(&e->kernel, (CUdeviceptr)x, packed, pmaps,
                                                     (CUdeviceptr)b, (CUdeviceptr)y,
                                                     (CUstream)stream, &cr)
                        : ct_rt_kernel_launch(&e->kernel, (CUdeviceptr)x, (CUdeviceptr)w,
                                              (CUdeviceptr)b, (CUdeviceptr)y,
                                              (CUstream)stream, &cr);
  ct_drv.cuCtxPopCurrent(&popped);
  if (rc == CT_ERR_INVALID_ARG)
    return ctx_fail(ctx, rc, cr,
                    "%s: this problem's kernel reads %s through TMA tensor maps, which need "
                    "16-byte aligned addresses; %s not 16-byte aligned (copy it into a "
                    "fresh allocation)",
                    packed ? "ct_forward_packed" : "ct_forward", packed ? "x" : "x and w",
                    packed ? "x is" : "x or w is");
  if (rc != CT_OK) return ctx_fail(ctx, rc, cr, "kernel launch failed");
  return CT_OK;
}

ct_status ct_forward(ct_context *ctx, const ct_problem *p, const float *x,
                     const float *w, const float *b, float *y, void *stream) {
  ct_status rc = ctx_check(ctx);
  if (rc == CT_OK) rc = check_tensors(ctx, "ct_forward", p, x, w, 1, b, y);
  if (rc != CT_OK) return rc;
  const uintptr_t ux = (uintptr_t)x, uw = (uintptr_t)w, uy = (uintptr_t)y;
  const uintptr_t ub = p->bias ? (uintptr_t)b : 0;
  ct_rt_entry *e;
  rc = entry_of(ctx, p, &e);
  if (rc == CT_OK) rc = check_overlaps(ctx, "ct_forward", e, ux, uw, ub, uy);
  if (rc != CT_OK) return rc;
  return forward_launch(ctx, e, ux, uw, ub, uy, 0, NULL, stream);
}

ct_status ct_prepare(ct_context *ctx, const ct_problem *p) {
  ct_status rc = ctx_check(ctx);
  if (rc != CT_OK) return rc;
  if (p == NULL)
    return ctx_fail(ctx, CT_ERR_INVALID_ARG, CUDA_SUCCESS,
                    "ct_prepare: the problem must not be NULL");
  ct_rt_entry *e;
  return entry_of(ctx, p, &e);
}

/* ---------------------------------------------------------------------- */
/* Weights packed once                                                     */

#define CT_RT_WEIGHTS_MAGIC 0x74776374u /* "ctwt" */

struct ct_weights {
  CUtensorMap pmaps[CT_GEN_MAX_MAPS]; /* the maps over them (cuda.h: 128-byte aligned) */
  uint32_t magic;           /* CT_RT_WEIGHTS_MAGIC while allocated */
  ct_context *ctx;          /* packed on; NULL once that context closed */
  uint64_t serial;          /* ctx->serial then */
  const ct_rt_entry *e;     /* the problem's kernel (immutable) */
  CUdeviceptr mem;          /* the packed weights */
  size_t bytes;
  struct ct_weights *prev, *next; /* ctx->weights */
};

/* At ct_close (its primary context current when pushed): the memory of
** every packed weights not yet freed is released, and each is detached,
** so that a later ct_weights_free only frees the handle. */
static void rt_release_weights(ct_context *ctx, int pushed) {
  pthread_mutex_lock(&ctx->load_lock);
  if (pushed && ctx->weights) ct_drv.cuCtxSynchronize();
  for (ct_weights *wp = ctx->weights; wp != NULL; wp = wp->next) {
    if (pushed) ct_drv.cuMemFree(wp->mem);
    wp->ctx = NULL;
    wp->mem = 0;
    wp->bytes = 0;
  }
  ctx->weights = NULL;
  pthread_mutex_unlock(&ctx->load_lock);
}

ct_status ct_weights_pack(ct_context *ctx, const ct_problem *p, const float *w,
                          void *stream, ct_weights **out) {
  if (out) *out = NULL;
  ct_status rc = ctx_check(ctx);
  if (rc != CT_OK) return rc;
  if (p == NULL || w == NULL || out == NULL)
    return ctx_fail(ctx, CT_ERR_INVALID_ARG, CUDA_SUCCESS,
                    "ct_weights_pack: the problem, w and out must not be NULL");
  if ((uintptr_t)w & (sizeof(float) - 1))
    return ctx_fail(ctx, CT_ERR_INVALID_ARG, CUDA_SUCCESS,
                    "ct_weights_pack: w must be a 4-byte aligned fp32 pointer");
  ct_rt_entry *e;
  rc = entry_of(ctx, p, &e);
  if (rc != CT_OK) return rc;
  ct_weights *wp = NULL;
  if (posix_memalign((void **)&wp, _Alignof(ct_weights), sizeof *wp) != 0)
    return ctx_fail(ctx, CT_ERR_NOMEM, CUDA_SUCCESS, "out of host memory");
  memset(wp, 0, sizeof *wp);
  wp->ctx = ctx;
  wp->serial = ctx->serial;
  wp->e = e;
  wp->bytes = ct_rt_kernel_packed_bytes(&e->kernel, (size_t)e->w_bytes);
  CUcontext popped;
  CUresult cr = ct_drv.cuCtxPushCurrent(ctx->primary);
  if (cr != CUDA_SUCCESS) {
    free(wp);
    return ctx_fail(ctx, CT_ERR_CUDA, cr, "cannot make the device's primary context current");
  }
  const char *what = "allocating the packed weights";
  cr = ct_drv.cuMemAlloc(&wp->mem, wp->bytes);
  if (cr == CUDA_SUCCESS) {
    what = "queuing the weight pass";
    rc = ct_rt_kernel_pack(&e->kernel, (CUdeviceptr)(uintptr_t)w, (size_t)e->w_bytes, wp->mem,
                           (CUstream)stream, wp->pmaps, &cr);
    if (rc != CT_OK) ct_drv.cuMemFree(wp->mem);
  }
  ct_drv.cuCtxPopCurrent(&popped);
  if (cr != CUDA_SUCCESS) {
    const size_t bytes = wp->bytes;
    free(wp);
    return ctx_fail(ctx, CT_ERR_CUDA, cr, "ct_weights_pack: %s (%zu bytes) failed", what, bytes);
  }
  wp->magic = CT_RT_WEIGHTS_MAGIC;
  pthread_mutex_lock(&ctx->load_lock);
  wp->next = ctx->weights;
  if (wp->next) wp->next->prev = wp;
  ctx->weights = wp;
  pthread_mutex_unlock(&ctx->load_lock);
  *out = wp;
  return CT_OK;
}

ct_status ct_forward_packed(ct_context *ctx, const ct_problem *p, const float *x,
                            const ct_weights *wp, const float *b, float *y, void *stream) {
  ct_status rc = ctx_check(ctx);
  if (rc != CT_OK) return rc;
  if (wp == NULL || wp->magic != CT_RT_WEIGHTS_MAGIC)
    return ctx_fail(ctx, CT_ERR_INVALID_ARG, CUDA_SUCCESS,
                    "ct_forward_packed: wp is not packed weights (NULL, or not from "
                    "ct_weights_pack)");
  if (wp->ctx != ctx || wp->serial != ctx->serial)
    return ctx_fail(ctx, CT_ERR_INVALID_ARG, CUDA_SUCCESS,
                    "ct_forward_packed: the weights were packed on another context");
  if (p == NULL || !same_problem(&wp->e->problem, p))
    return ctx_fail(ctx, CT_ERR_INVALID_ARG, CUDA_SUCCESS,
                    "ct_forward_packed: the weights were packed for another problem");
  const uintptr_t ux = (uintptr_t)x, uy = (uintptr_t)y, ub = p->bias ? (uintptr_t)b : 0;
  rc = check_tensors(ctx, "ct_forward_packed", p, x, NULL, 0, b, y);
  if (rc == CT_OK) rc = check_overlaps(ctx, "ct_forward_packed", wp->e, ux, 0, ub, uy);
  if (rc != CT_OK) return rc;
  return forward_launch(ctx, wp->e, ux, 0, ub, uy, wp->mem, wp->pmaps, stream);
}

size_t ct_weights_bytes(const ct_weights *wp) {
  return wp != NULL && wp->magic == CT_RT_WEIGHTS_MAGIC ? wp->bytes : 0;
}

void ct_weights_free(ct_weights *wp) {
  if (wp == NULL || wp->magic != CT_RT_WEIGHTS_MAGIC) return;
  wp->magic = 0;
  ct_context *ctx = wp->ctx; /* NULL: its context closed, the memory with it */
  if (ctx != NULL) {
    pthread_mutex_lock(&ctx->load_lock);
    if (wp->prev) wp->prev->next = wp->next;
    else ctx->weights = wp->next;
    if (wp->next) wp->next->prev = wp->prev;
    pthread_mutex_unlock(&ctx->load_lock);
    CUcontext popped;
    if (ct_drv.cuCtxPushCurrent(ctx->primary) == CUDA_SUCCESS) {
      ct_drv.cuCtxSynchronize();
      ct_drv.cuMemFree(wp->mem);
      ct_drv.cuCtxPopCurrent(&popped);
    }
  }
  free(wp);
}

/* ---------------------------------------------------------------------- */
/* Reports                                                                 */

ct_status ct_forward_path(ct_context *ctx, const ct_problem *p, ct_path *path,
                          char *variant, size_t len) {
  if (!ctx_ok(ctx) || p == NULL || path == NULL) return CT_ERR_INVALID_ARG;
  ct_rt_entry *e = table_find(ctx, p, problem_hash(p));
  *path = e ? e->path : CT_PATH_NONE;
  if (variant && len > 0)
    snprintf(variant, len, "%s", e ? e->kernel.variant.name : "");
  return CT_OK;
}

ct_status ct_forward_reason(ct_context *ctx, const ct_problem *p, char *buf,
                            size_t len) {
  if (!ctx_ok(ctx) || p == NULL || buf == NULL || len == 0)
    return CT_ERR_INVALID_ARG;
  ct_rt_entry *e = table_find(ctx, p, problem_hash(p));
  snprintf(buf, len, "%s", e ? e->reason : "not run yet");
  return CT_OK;
}
