/*
** runtime.c — libconvtune: contexts, kernel lookup and the forward pass.
**
** Lookup for a problem, done once per problem and context, then kept in the
** context's table:
**   1. the database's winner for (spec, this device): its stored cubin when
**      the cubin's architecture matches and its source hash equals the hash
**      of the source this build generates for that variant (so a template
**      change makes old cubins stale); else the same variant recompiled;
**   2. nothing tuned (or the winner is no longer a valid variant here): the
**      generator's default variant, compiled with NVRTC.
** ct_forward_path reports which.
*/
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convtune.h"
#include "ct_cache.h"
#include "ct_drv.h"
#include "ct_gen.h"
#include "ct_nvrtc.h"
#include "ct_rt.h"

/* ---------------------------------------------------------------------- */
/* Loaded kernels                                                          */

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
    if (l->smem > 48 * 1024) {
      r = ct_drv.cuFuncSetAttribute(
          k->fn[i], CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
          (int)l->smem);
      if (r != CUDA_SUCCESS) goto fail;
    }
  }
  if (v->workspace_bytes > 0) {
    r = ct_drv.cuMemAlloc(&k->ws, v->workspace_bytes);
    if (r != CUDA_SUCCESS) goto fail;
  }
  *cr = CUDA_SUCCESS;
  return CT_OK;
fail:
  *cr = r;
  ct_rt_kernel_unload(k);
  return CT_ERR_CUDA;
}

ct_status ct_rt_kernel_launch(const ct_rt_kernel *k, CUdeviceptr x,
                              CUdeviceptr w, CUdeviceptr b, CUdeviceptr y,
                              CUstream stream, CUresult *cr) {
  void *args[] = {&x, &w, &b, &y, (void *)&k->ws};
  for (int i = 0; i < k->variant.n_kernels; i++) {
    const ct_gen_launch *l = &k->variant.kernels[i];
    CUresult r = ct_drv.cuLaunchKernel(k->fn[i], l->grid[0], l->grid[1],
                                       l->grid[2], l->block[0], l->block[1],
                                       l->block[2], l->smem, stream, args,
                                       NULL);
    if (r != CUDA_SUCCESS) {
      *cr = r;
      return CT_ERR_CUDA;
    }
  }
  *cr = CUDA_SUCCESS;
  return CT_OK;
}

void ct_rt_kernel_unload(ct_rt_kernel *k) {
  if (k == NULL) return;
  if (k->ws) ct_drv.cuMemFree(k->ws);
  if (k->module) ct_drv.cuModuleUnload(k->module);
  k->ws = 0;
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

typedef struct ct_rt_entry {
  ct_problem problem;  /* the key */
  ct_rt_kernel kernel; /* loaded variant */
  ct_path path;        /* how it was obtained */
} ct_rt_entry;

struct ct_context {
  int ordinal;                  /* CUDA device ordinal */
  CUdevice dev;                 /* that device */
  CUcontext primary;            /* its retained primary context */
  ct_gen_limits limits;         /* what the generator plans against */
  ct_cache_device device;       /* the database's key for this device */
  ct_cache *cache;              /* read-only; NULL when no database file */
  pthread_mutex_t lock;         /* guards entries and the error fields */
  ct_rt_entry *entries;         /* problems loaded so far */
  size_t n_entries, cap_entries;
  char error[512];              /* last failure message */
  int cuda_result;              /* last failing CUresult, 0 when none */
  int nvrtc_result;             /* last failing nvrtcResult, 0 when none */
  char *nvrtc_log;              /* log of the last failed compile, or NULL */
};

static __thread char open_error[512] = "no error";

const char *ct_open_error(void) { return open_error; }

ct_status ct_open(const char *db_path, int device, ct_context **out) {
  if (out == NULL) return CT_ERR_INVALID_ARG;
  *out = NULL;
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
  pthread_mutex_init(&ctx->lock, NULL);
  ctx->ordinal = device;
  char buf[256];
  CUresult r = ct_drv.cuDeviceGet(&ctx->dev, device);
  if (r == CUDA_SUCCESS) r = ct_drv.cuDevicePrimaryCtxRetain(&ctx->primary, ctx->dev);
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
  char path[4096];
  if (db_path == NULL) {
    rc = ct_cache_default_path(path, sizeof path);
    if (rc != CT_OK) {
      snprintf(open_error, sizeof open_error,
               "no tuning database path: set CONVTUNE_DB, XDG_CACHE_HOME or "
               "HOME");
      goto fail;
    }
    db_path = path;
  }
  char err[512];
  rc = ct_cache_open(db_path, CT_CACHE_READONLY, &ctx->cache, err, sizeof err);
  if (rc == CT_ERR_NOT_FOUND) {
    ctx->cache = NULL; /* nothing tuned yet: default variants */
  } else if (rc != CT_OK) {
    snprintf(open_error, sizeof open_error, "%s", err);
    goto fail;
  }
  *out = ctx;
  return CT_OK;
fail:
  ct_close(ctx);
  return rc;
}

void ct_close(ct_context *ctx) {
  if (ctx == NULL) return;
  if (ctx->primary) {
    CUcontext popped;
    if (ct_drv.cuCtxPushCurrent(ctx->primary) == CUDA_SUCCESS) {
      for (size_t i = 0; i < ctx->n_entries; i++)
        ct_rt_kernel_unload(&ctx->entries[i].kernel);
      ct_drv.cuCtxPopCurrent(&popped);
    }
    ct_drv.cuDevicePrimaryCtxRelease(ctx->dev);
  }
  ct_cache_close(ctx->cache);
  free(ctx->entries);
  free(ctx->nvrtc_log);
  pthread_mutex_destroy(&ctx->lock);
  free(ctx);
}

/* ---------------------------------------------------------------------- */
/* Errors                                                                  */

static ct_status ctx_fail(ct_context *ctx, ct_status rc, CUresult cr,
                          const char *what) {
  char buf[256];
  ctx->cuda_result = (int)cr;
  if (cr != CUDA_SUCCESS)
    snprintf(ctx->error, sizeof ctx->error, "%s: %s", what,
             ct_drv_error(cr, buf, sizeof buf));
  else
    snprintf(ctx->error, sizeof ctx->error, "%s", what);
  return rc;
}

const char *ct_last_error(const ct_context *ctx) {
  return ctx ? ctx->error : "no context";
}
int ct_last_cuda_result(const ct_context *ctx) {
  return ctx ? ctx->cuda_result : 0;
}
int ct_last_nvrtc_result(const ct_context *ctx) {
  return ctx ? ctx->nvrtc_result : 0;
}
const char *ct_last_nvrtc_log(const ct_context *ctx) {
  return ctx && ctx->nvrtc_log ? ctx->nvrtc_log : "";
}

/* ---------------------------------------------------------------------- */
/* Lookup                                                                  */

static int problem_eq(const ct_problem *a, const ct_problem *b) {
  return a->n == b->n && a->c == b->c && a->h == b->h && a->w == b->w &&
         a->k == b->k && a->r == b->r && a->s == b->s &&
         a->stride_h == b->stride_h && a->stride_w == b->stride_w &&
         a->pad_h == b->pad_h && a->pad_w == b->pad_w &&
         a->dil_h == b->dil_h && a->dil_w == b->dil_w && a->bias == b->bias &&
         a->precision == b->precision;
}

static ct_rt_entry *entry_find(ct_context *ctx, const ct_problem *p) {
  for (size_t i = 0; i < ctx->n_entries; i++)
    if (problem_eq(&ctx->entries[i].problem, p)) return &ctx->entries[i];
  return NULL;
}

/* Compiles variant v for p with NVRTC and loads it into k. */
static ct_status compile_and_load(ct_context *ctx, const ct_problem *p,
                                  const ct_gen_variant *v, ct_rt_kernel *k) {
  char *src = NULL;
  ct_status rc = ct_gen_source(p, v, &src);
  if (rc != CT_OK) return ctx_fail(ctx, rc, CUDA_SUCCESS, "cannot generate source");
  ct_rt_compiled out;
  rc = ct_rt_compile(src, v->name, ctx->limits.arch, &out);
  free(src);
  if (rc != CT_OK) {
    ctx->nvrtc_result = out.nvrtc_result;
    free(ctx->nvrtc_log);
    ctx->nvrtc_log = out.log ? strdup(out.log) : NULL;
    ct_rt_compiled_clear(&out);
    char what[256];
    snprintf(what, sizeof what, "NVRTC failed to compile %s (see the log)", v->name);
    return ctx_fail(ctx, rc, CUDA_SUCCESS, what);
  }
  CUresult cr;
  rc = ct_rt_kernel_load(v, out.cubin, k, &cr);
  ct_rt_compiled_clear(&out);
  if (rc != CT_OK) return ctx_fail(ctx, rc, cr, "cannot load the compiled variant");
  return CT_OK;
}

/* Tries the database's winner for p.  CT_OK with *path set when it loaded;
** CT_ERR_NOT_FOUND when there is none usable (the caller falls back). */
static ct_status load_tuned(ct_context *ctx, const ct_problem *p,
                            ct_rt_kernel *k, ct_path *path) {
  if (ctx->cache == NULL) return CT_ERR_NOT_FOUND;
  char spec[CT_PROBLEM_SPEC_MAX];
  ct_problem_format(p, spec, sizeof spec);
  ct_cache_winner win;
  memset(&win, 0, sizeof win);
  ct_status rc = ct_cache_winner_get(ctx->cache, spec, &ctx->device, &win);
  if (rc != CT_OK) return CT_ERR_NOT_FOUND; /* absent, or failed integrity */
  ct_gen_variant v;
  rc = ct_gen_variant_from_name(p, &ctx->limits, win.variant, &v);
  if (rc != CT_OK) {
    ct_cache_winner_clear(&win);
    return CT_ERR_NOT_FOUND; /* that variant no longer exists here */
  }
  char *src = NULL;
  rc = ct_gen_source(p, &v, &src);
  if (rc != CT_OK) {
    ct_cache_winner_clear(&win);
    return ctx_fail(ctx, rc, CUDA_SUCCESS, "cannot generate source");
  }
  uint64_t source_hash = ct_gen_hash(src, strlen(src), CT_GEN_HASH_SEED);
  free(src);
  if (source_hash == win.source_hash && strcmp(win.arch, ctx->limits.arch) == 0) {
    CUresult cr;
    if (ct_rt_kernel_load(&v, win.cubin, k, &cr) == CT_OK) {
      ct_cache_winner_clear(&win);
      *path = CT_PATH_TUNED_CUBIN;
      return CT_OK;
    }
  }
  ct_cache_winner_clear(&win);
  rc = compile_and_load(ctx, p, &v, k);
  if (rc != CT_OK) return rc;
  *path = CT_PATH_TUNED_COMPILED;
  return CT_OK;
}

/* Finds or loads the entry for p; called with ctx->lock held. */
static ct_status entry_get(ct_context *ctx, const ct_problem *p,
                           ct_rt_entry **out) {
  ct_rt_entry *e = entry_find(ctx, p);
  if (e) {
    *out = e;
    return CT_OK;
  }
  if (ctx->n_entries == ctx->cap_entries) {
    size_t cap = ctx->cap_entries ? 2 * ctx->cap_entries : 8;
    ct_rt_entry *grown = realloc(ctx->entries, cap * sizeof *grown);
    if (grown == NULL) return ctx_fail(ctx, CT_ERR_NOMEM, CUDA_SUCCESS, "out of host memory");
    ctx->entries = grown;
    ctx->cap_entries = cap;
  }
  ct_rt_entry fresh;
  memset(&fresh, 0, sizeof fresh);
  fresh.problem = *p;
  ct_status rc = load_tuned(ctx, p, &fresh.kernel, &fresh.path);
  if (rc == CT_ERR_NOT_FOUND) {
    ct_gen_variant v;
    rc = ct_gen_default_variant(p, &ctx->limits, &v);
    if (rc != CT_OK)
      return ctx_fail(ctx, rc, CUDA_SUCCESS, "no default variant for this problem");
    rc = compile_and_load(ctx, p, &v, &fresh.kernel);
    fresh.path = CT_PATH_DEFAULT;
  }
  if (rc != CT_OK) return rc;
  ctx->entries[ctx->n_entries] = fresh;
  *out = &ctx->entries[ctx->n_entries++];
  return CT_OK;
}

/* ---------------------------------------------------------------------- */
/* The forward pass                                                        */

ct_status ct_forward(ct_context *ctx, const ct_problem *p, const float *x,
                     const float *w, const float *b, float *y, void *stream) {
  if (ctx == NULL) return CT_ERR_INVALID_ARG;
  pthread_mutex_lock(&ctx->lock);
  ct_status rc;
  char err[256];
  if (p == NULL || x == NULL || w == NULL || y == NULL) {
    rc = ctx_fail(ctx, CT_ERR_INVALID_ARG, CUDA_SUCCESS,
                  "ct_forward: the problem, x, w and y must not be NULL");
    goto out;
  }
  rc = ct_problem_validate(p, err, sizeof err);
  if (rc != CT_OK) {
    rc = ctx_fail(ctx, rc, CUDA_SUCCESS, err);
    goto out;
  }
  if (p->bias && b == NULL) {
    rc = ctx_fail(ctx, CT_ERR_INVALID_ARG, CUDA_SUCCESS,
                  "ct_forward: the problem has a bias but b is NULL");
    goto out;
  }
  CUcontext popped;
  CUresult cr = ct_drv.cuCtxPushCurrent(ctx->primary);
  if (cr != CUDA_SUCCESS) {
    rc = ctx_fail(ctx, CT_ERR_CUDA, cr, "cannot make the device's primary context current");
    goto out;
  }
  ct_rt_entry *e = NULL;
  rc = entry_get(ctx, p, &e);
  if (rc == CT_OK) {
    rc = ct_rt_kernel_launch(&e->kernel, (CUdeviceptr)(uintptr_t)x, (CUdeviceptr)(uintptr_t)w,
                             (CUdeviceptr)(uintptr_t)(p->bias ? b : NULL),
                             (CUdeviceptr)(uintptr_t)y,
                             (CUstream)stream, &cr);
    if (rc != CT_OK) ctx_fail(ctx, rc, cr, "kernel launch failed");
  }
  ct_drv.cuCtxPopCurrent(&popped);
out:
  pthread_mutex_unlock(&ctx->lock);
  return rc;
}

ct_status ct_forward_path(ct_context *ctx, const ct_problem *p, ct_path *path,
                          char *variant, size_t len) {
  if (ctx == NULL || p == NULL || path == NULL) return CT_ERR_INVALID_ARG;
  pthread_mutex_lock(&ctx->lock);
  ct_rt_entry *e = entry_find(ctx, p);
  *path = e ? e->path : CT_PATH_NONE;
  if (variant && len > 0)
    snprintf(variant, len, "%s", e ? e->kernel.variant.name : "");
  pthread_mutex_unlock(&ctx->lock);
  return CT_OK;
}
