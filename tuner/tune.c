/*
** tune.c — the tuning loop (see ct_tune.h).
**
** Compile threads take variants in enumeration order and compile them with
** NVRTC; the calling thread owns the GPU and walks the same order, waiting
** for each variant's cubin, so compilation overlaps verification and timing.
** Every variant ends as one recorded trial: compile-failed, launch-failed,
** wrong (failed its precision contract) or timed (screening trials).  The
** fastest timed variants are re-timed with the full protocol, recorded as
** further trials, and the best of those is stored as the winner.
*/
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ct_drv.h"
#include "ct_nvrtc.h"
#include "ct_rt.h"
#include "ct_tune.h"

void ct_tune_options_default(ct_tune_options *o) {
  memset(o, 0, sizeof *o);
  ct_problem_default(&o->problem);
  o->screen_trials = 10;
  o->final_trials = 100;
  o->finalists = 3;
}

void ct_tune_result_free(ct_tune_result *r) {
  if (r == NULL) return;
  free(r->rows);
  r->rows = NULL;
  r->n_rows = 0;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---------------------------------------------------------------------- */
/* The compile pool                                                        */

typedef struct tune_slot {
  ct_gen_variant variant;
  uint64_t source_hash;
  ct_rt_compiled out;   /* cubin and report */
  ct_status rc;         /* of ct_gen_source / ct_rt_compile */
  int done;
} tune_slot;

typedef struct tune_pool {
  const ct_problem *p;
  const char *arch;
  tune_slot *slots;
  size_t n, next;          /* next slot to claim */
  pthread_mutex_t lock;
  pthread_cond_t done;     /* signalled as each slot finishes */
} tune_pool;

static void *pool_worker(void *arg) {
  tune_pool *pool = arg;
  for (;;) {
    pthread_mutex_lock(&pool->lock);
    size_t i = pool->next < pool->n ? pool->next++ : pool->n;
    pthread_mutex_unlock(&pool->lock);
    if (i == pool->n) return NULL;
    tune_slot *s = &pool->slots[i];
    char *src = NULL;
    s->rc = ct_gen_source(pool->p, &s->variant, &src);
    if (s->rc == CT_OK) {
      s->source_hash = ct_gen_hash(src, strlen(src), CT_GEN_HASH_SEED);
      s->rc = ct_rt_compile(src, s->variant.name, pool->arch, &s->out);
    }
    free(src);
    pthread_mutex_lock(&pool->lock);
    s->done = 1;
    pthread_cond_broadcast(&pool->done);
    pthread_mutex_unlock(&pool->lock);
  }
}

static void pool_wait(tune_pool *pool, size_t i) {
  pthread_mutex_lock(&pool->lock);
  while (!pool->slots[i].done) pthread_cond_wait(&pool->done, &pool->lock);
  pthread_mutex_unlock(&pool->lock);
}

/* ---------------------------------------------------------------------- */
/* Running a loaded variant                                                */

static ct_status run_kernel(void *arg, const ct_tune_data *d, CUstream s,
                            char *err, size_t len) {
  const ct_rt_kernel *k = arg;
  CUresult cr;
  ct_status rc = ct_rt_kernel_launch(k, d->x, d->w, d->b, d->y, s, &cr);
  if (rc != CT_OK) {
    char buf[256];
    snprintf(err, len, "launch failed: %s", ct_drv_error(cr, buf, sizeof buf));
  }
  return rc;
}

static void trial_init(ct_cache_trial *t, int64_t problem_id,
                       int64_t device_id, const tune_slot *s) {
  memset(t, 0, sizeof *t);
  t->problem_id = problem_id;
  t->device_id = device_id;
  snprintf(t->variant, sizeof t->variant, "%s", s->variant.name);
  t->source_hash = s->source_hash;
  t->compile_ms = s->out.compile_ms;
  t->regs = s->out.regs;
  t->spill_bytes = s->out.spill_bytes;
  int smem = 0;
  for (int i = 0; i < s->variant.n_kernels; i++)
    if ((int)s->variant.kernels[i].smem > smem) smem = (int)s->variant.kernels[i].smem;
  t->smem_bytes = smem + s->out.smem_static;
  t->max_abs_err = t->rel_err = NAN;
  t->mean_ms = t->median_ms = t->min_ms = t->max_ms = NAN;
}

/* Loads, verifies and screens one compiled variant into trial t.  A CUDA
** error that leaves the context unusable is returned; everything else ends
** in t->status. */
static ct_status tune_one(ct_tune_gpu *g, ct_tune_data *d, tune_slot *s,
                          int screen_trials, ct_cache_trial *t) {
  char err[512] = "";
  if (s->rc != CT_OK) {
    t->status = CT_TRIAL_COMPILE_FAILED;
    const char *log = s->out.log ? s->out.log : "";
    snprintf(t->message, sizeof t->message, "%s: %.200s",
             ct_status_string(s->rc), log);
    return CT_OK;
  }
  ct_rt_kernel k;
  CUresult cr;
  if (ct_rt_kernel_load(&s->variant, s->out.cubin, &k, &cr) != CT_OK) {
    t->status = CT_TRIAL_LAUNCH_FAILED;
    ct_drv_error(cr, err, sizeof err);
    snprintf(t->message, sizeof t->message, "load: %.240s", err);
    return CT_OK;
  }
  ct_tune_check chk;
  ct_status rc = ct_tune_verify(g, d, run_kernel, &k, &chk, err, sizeof err);
  if (rc != CT_OK) {
    t->status = CT_TRIAL_LAUNCH_FAILED;
    snprintf(t->message, sizeof t->message, "%.255s", err);
    ct_rt_kernel_unload(&k);
    /* A fault poisons the context: the caller stops. */
    return ct_drv.cuCtxSynchronize() == CUDA_SUCCESS ? CT_OK : CT_ERR_CUDA;
  }
  t->max_abs_err = chk.max_abs_err;
  t->rel_err = chk.rel_err;
  if (!chk.passes) {
    t->status = CT_TRIAL_WRONG;
    snprintf(t->message, sizeof t->message, "%.191s", chk.reason);
    ct_rt_kernel_unload(&k);
    return CT_OK;
  }
  ct_tune_stats st;
  rc = ct_tune_time(g, d, run_kernel, &k, screen_trials, &st, err, sizeof err);
  ct_rt_kernel_unload(&k);
  if (rc != CT_OK) {
    t->status = CT_TRIAL_LAUNCH_FAILED;
    snprintf(t->message, sizeof t->message, "%.255s", err);
    return ct_drv.cuCtxSynchronize() == CUDA_SUCCESS ? CT_OK : CT_ERR_CUDA;
  }
  t->status = CT_TRIAL_TIMED;
  t->mean_ms = st.mean_ms;
  t->median_ms = st.median_ms;
  t->min_ms = st.min_ms;
  t->max_ms = st.max_ms;
  t->n_timed = st.n;
  return CT_OK;
}

static void progress_line(FILE *f, size_t i, size_t n, const ct_cache_trial *t) {
  if (f == NULL) return;
  if (t->status == CT_TRIAL_TIMED)
    fprintf(f, "[%zu/%zu] %-14s %9.4f ms  %s\n", i + 1, n,
            ct_trial_status_name(t->status), t->mean_ms, t->variant);
  else
    fprintf(f, "[%zu/%zu] %-14s %12s  %s: %s\n", i + 1, n,
            ct_trial_status_name(t->status), "", t->variant, t->message);
  fflush(f);
}

/* ---------------------------------------------------------------------- */
/* The loop                                                                */

ct_status ct_tune_run(const ct_tune_options *o, ct_tune_result *r, char *err,
                      size_t len) {
  memset(r, 0, sizeof *r);
  r->winner = -1;
  double t0 = now_s();
  ct_status rc;
  ct_tune_gpu g;
  memset(&g, 0, sizeof g);
  ct_tune_data d;
  memset(&d, 0, sizeof d);
  ct_cache *cache = NULL;
  ct_gen_variant *variants = NULL;
  size_t n = 0;
  tune_pool pool;
  memset(&pool, 0, sizeof pool);
  pthread_t *threads = NULL;
  int n_threads = 0;
  pthread_mutex_init(&pool.lock, NULL);
  pthread_cond_init(&pool.done, NULL);

  if ((rc = ct_problem_validate(&o->problem, err, len)) != CT_OK) goto out;
  ct_problem_format(&o->problem, r->spec, sizeof r->spec);
  if ((rc = ct_tune_gpu_open(o->device, &g, err, len)) != CT_OK) goto out;
  r->device = g.device;

  char cerr[512];
  rc = ct_cache_open(o->db_path, CT_CACHE_CREATE, &cache, cerr, sizeof cerr);
  if (rc != CT_OK) {
    snprintf(err, len, "%s", cerr);
    goto out;
  }
  int64_t device_id, problem_id;
  if ((rc = ct_cache_device_id(cache, &g.device, &device_id)) != CT_OK ||
      (rc = ct_cache_problem_id(cache, r->spec,
                                ct_precision_name(o->problem.precision),
                                &problem_id)) != CT_OK) {
    snprintf(err, len, "%s", ct_cache_errmsg(cache));
    goto out;
  }

  rc = ct_gen_enumerate(&o->problem, &g.limits, &variants, &n);
  if (rc != CT_OK) {
    snprintf(err, len, "cannot enumerate variants: %s", ct_status_string(rc));
    goto out;
  }
  if (n == 0) {
    snprintf(err, len, "no valid variant for %s on %s", r->spec, g.limits.arch);
    rc = CT_ERR_UNSUPPORTED;
    goto out;
  }
  r->rows = calloc(n, sizeof *r->rows);
  pool.slots = calloc(n, sizeof *pool.slots);
  if (r->rows == NULL || pool.slots == NULL) {
    snprintf(err, len, "out of host memory");
    rc = CT_ERR_NOMEM;
    goto out;
  }
  r->n_rows = n;
  for (size_t i = 0; i < n; i++) pool.slots[i].variant = variants[i];
  pool.p = &o->problem;
  pool.arch = g.limits.arch;
  pool.n = n;

  n_threads = o->threads > 0 ? o->threads : (int)sysconf(_SC_NPROCESSORS_ONLN);
  if (n_threads < 1) n_threads = 1;
  if ((size_t)n_threads > n) n_threads = (int)n;
  r->threads = n_threads;
  threads = calloc((size_t)n_threads, sizeof *threads);
  if (threads == NULL) {
    rc = CT_ERR_NOMEM;
    snprintf(err, len, "out of host memory");
    goto out;
  }
  for (int i = 0; i < n_threads; i++)
    if (pthread_create(&threads[i], NULL, pool_worker, &pool) != 0) {
      n_threads = i;
      rc = CT_ERR_NOMEM;
      snprintf(err, len, "cannot start compile threads");
      goto out;
    }

  r->seed = o->seed ? o->seed : ct_tune_fresh_seed();
  rc = ct_tune_data_create(&g, &o->problem, r->seed, &d, err, len);
  if (rc != CT_OK) goto out;

  /* Screening: every variant, in order, as its compile finishes. */
  for (size_t i = 0; i < n; i++) {
    pool_wait(&pool, i);
    tune_slot *s = &pool.slots[i];
    ct_cache_trial *t = &r->rows[i].trial;
    trial_init(t, problem_id, device_id, s);
    r->compile_s += s->out.compile_ms / 1e3;
    rc = tune_one(&g, &d, s, o->screen_trials, t);
    if (ct_cache_trial_add(cache, t) != CT_OK) {
      snprintf(err, len, "cannot record a trial: %s", ct_cache_errmsg(cache));
      rc = CT_ERR_DB;
      goto out;
    }
    progress_line(o->progress, i, n, t);
    if (rc != CT_OK) {
      snprintf(err, len, "%s left the GPU context unusable (%s); stopping",
               t->variant, t->message);
      goto out;
    }
    if (t->status != CT_TRIAL_TIMED) ct_rt_compiled_clear(&s->out);
  }

  /* Finalists: the fastest screened variants, re-timed with the protocol. */
  double best = INFINITY;
  for (int f = 0; f < o->finalists; f++) {
    long pick = -1;
    for (size_t i = 0; i < n; i++) {
      const ct_tune_row *row = &r->rows[i];
      if (row->trial.status != CT_TRIAL_TIMED || row->finalist) continue;
      if (pick < 0 || row->trial.mean_ms < r->rows[pick].trial.mean_ms) pick = (long)i;
    }
    if (pick < 0) break;
    tune_slot *s = &pool.slots[pick];
    ct_cache_trial *t = &r->rows[pick].trial;
    r->rows[pick].finalist = 1;
    ct_rt_kernel k;
    CUresult cr;
    char terr[512];
    ct_tune_stats st;
    if (ct_rt_kernel_load(&s->variant, s->out.cubin, &k, &cr) != CT_OK) continue;
    rc = ct_tune_time(&g, &d, run_kernel, &k, o->final_trials, &st, terr, sizeof terr);
    ct_rt_kernel_unload(&k);
    if (rc != CT_OK) {
      snprintf(err, len, "re-timing %s: %s", t->variant, terr);
      goto out;
    }
    t->mean_ms = st.mean_ms;
    t->median_ms = st.median_ms;
    t->min_ms = st.min_ms;
    t->max_ms = st.max_ms;
    t->n_timed = st.n;
    if (ct_cache_trial_add(cache, t) != CT_OK) {
      snprintf(err, len, "cannot record a trial: %s", ct_cache_errmsg(cache));
      rc = CT_ERR_DB;
      goto out;
    }
    if (st.mean_ms < best) {
      best = st.mean_ms;
      r->winner = pick;
    }
  }

  if (r->winner >= 0) {
    const tune_slot *s = &pool.slots[r->winner];
    const ct_cache_trial *t = &r->rows[r->winner].trial;
    ct_cache_winner win;
    memset(&win, 0, sizeof win);
    win.problem_id = problem_id;
    win.device_id = device_id;
    win.trial_id = t->id;
    snprintf(win.spec, sizeof win.spec, "%s", r->spec);
    snprintf(win.precision, sizeof win.precision, "%s",
             ct_precision_name(o->problem.precision));
    snprintf(win.variant, sizeof win.variant, "%s", t->variant);
    win.source_hash = s->source_hash;
    win.cubin = s->out.cubin;
    win.cubin_size = s->out.cubin_size;
    win.cubin_hash = ct_gen_hash(win.cubin, win.cubin_size, CT_GEN_HASH_SEED);
    snprintf(win.arch, sizeof win.arch, "%s", g.limits.arch);
    snprintf(win.nvrtc_version, sizeof win.nvrtc_version, "%s", g.device.nvrtc_version);
    snprintf(win.options, sizeof win.options, "%s", ct_rt_compile_options(g.limits.arch));
    win.mean_ms = t->mean_ms;
    if (ct_cache_winner_set(cache, &win) != CT_OK) {
      snprintf(err, len, "cannot store the winner: %s", ct_cache_errmsg(cache));
      rc = CT_ERR_DB;
      goto out;
    }
  }
  rc = CT_OK;

out:
  if (threads) {
    /* Let the workers drain: no slot is left unclaimed after this. */
    pthread_mutex_lock(&pool.lock);
    pool.next = pool.n;
    pthread_mutex_unlock(&pool.lock);
    for (int i = 0; i < n_threads; i++) pthread_join(threads[i], NULL);
    free(threads);
  }
  if (pool.slots)
    for (size_t i = 0; i < pool.n; i++) ct_rt_compiled_clear(&pool.slots[i].out);
  free(pool.slots);
  pthread_mutex_destroy(&pool.lock);
  pthread_cond_destroy(&pool.done);
  free(variants);
  ct_tune_data_destroy(&d);
  ct_cache_close(cache);
  ct_tune_gpu_close(&g);
  r->wall_s = now_s() - t0;
  return rc;
}
