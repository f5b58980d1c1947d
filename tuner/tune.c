/*
** tune.c — the tuning loop (see ct_tune.h).
**
** Three parties:
**   - the calling thread owns the database handle, the search and the
**     measuring worker (worker.c: a child process that owns the GPU);
**   - compile threads take variants off a queue and compile them with
**     NVRTC, each storing its cubins in the compile cache through its own
**     database handle;
**   - the worker verifies and times one variant at a time.
** The calling thread asks the search for the next variant, makes sure it
** and the few after it are compiling (or found in the compile cache), waits
** for its cubin, sends it to the worker and records the outcome as one
** trial, committed at once.  Compilation runs ahead of the GPU work.
**
** After screening, the fastest timed variants (from this run or recorded
** by an earlier one) are verified again and re-timed with the full
** protocol; the fastest of those is stored as the winner with its cubin.
*/
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "ct_lookup.h"
#include "ct_nvrtc.h"
#include "ct_rt.h"
#include "ct_tune.h"

void ct_tune_options_default(ct_tune_options *o) {
  memset(o, 0, sizeof *o);
  ct_problem_default(&o->problem);
  o->screen_trials = 10;
  o->final_trials = 100;
  o->finalists = 3;
  o->resume = 1;
  o->watchdog_s = 10.0;
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

static int stopped(const ct_tune_options *o) { return o->stop && *o->stop; }

/* ---------------------------------------------------------------------- */
/* Variants and the compile pool                                           */

enum { SLOT_IDLE, SLOT_QUEUED, SLOT_DONE };

typedef struct tune_slot {
  ct_gen_variant variant;
  char *src;             /* generated source; NULL when generation failed */
  uint64_t source_hash;
  ct_rt_compiled out;    /* cubin and ptxas report */
  ct_status rc;          /* of ct_gen_source / ct_rt_compile */
  int cached;            /* 1: cubin from the compile cache */
  int counted;           /* 1: its cubin is in r->n_compiled / n_cached */
  int state;             /* SLOT_*; guarded by the pool's lock */
} tune_slot;

typedef struct tune_pool {
  tune_slot *slots;
  size_t n;
  const char *arch, *options, *nvrtc_version, *db_path;
  size_t *queue;         /* slot indices to compile, FIFO */
  size_t q_head, q_len;
  int quit;              /* threads leave after their current compile */
  pthread_mutex_t lock;
  pthread_cond_t work;   /* queue not empty, or quit */
  pthread_cond_t done;   /* a slot became SLOT_DONE */
  size_t n_compiled;     /* compiles finished in this run */
  double compile_ms;     /* their NVRTC time */
} tune_pool;

/* Keeps a fresh cubin in the compile cache; failures only cost the cache. */
static void pool_store(tune_pool *pool, ct_cache **c, int *tried,
                       const tune_slot *s, const ct_rt_compiled *out) {
  if (*c == NULL && !*tried) {
    *tried = 1;
    if (ct_cache_open(pool->db_path, 0, c, NULL, 0) != CT_OK) *c = NULL;
  }
  if (*c == NULL) return;
  ct_cache_cubin cb;
  memset(&cb, 0, sizeof cb);
  cb.source_hash = s->source_hash;
  snprintf(cb.options, sizeof cb.options, "%s", pool->options);
  snprintf(cb.arch, sizeof cb.arch, "%s", pool->arch);
  snprintf(cb.nvrtc_version, sizeof cb.nvrtc_version, "%s", pool->nvrtc_version);
  cb.cubin = out->cubin;
  cb.cubin_size = out->cubin_size;
  cb.cubin_hash = ct_gen_hash(out->cubin, out->cubin_size, CT_GEN_HASH_SEED);
  cb.regs = out->regs;
  cb.spill_bytes = out->spill_bytes;
  cb.stack_bytes = out->stack_bytes;
  cb.smem_static = out->smem_static;
  cb.compile_ms = out->compile_ms;
  ct_cache_cubin_put(*c, &cb, NULL);
}

static void *pool_thread(void *arg) {
  tune_pool *pool = arg;
  ct_cache *c = NULL;
  int tried = 0;
  for (;;) {
    pthread_mutex_lock(&pool->lock);
    while (!pool->quit && pool->q_len == 0) pthread_cond_wait(&pool->work, &pool->lock);
    if (pool->quit) {
      pthread_mutex_unlock(&pool->lock);
      break;
    }
    size_t i = pool->queue[pool->q_head++];
    pool->q_len--;
    pthread_mutex_unlock(&pool->lock);

    tune_slot *s = &pool->slots[i];
    ct_rt_compiled out;
    ct_status rc = ct_rt_compile(s->src, s->variant.name, pool->arch, &out);
    if (rc == CT_OK) pool_store(pool, &c, &tried, s, &out);

    pthread_mutex_lock(&pool->lock);
    s->out = out;
    s->rc = rc;
    s->state = SLOT_DONE;
    pool->n_compiled++;
    pool->compile_ms += out.compile_ms;
    pthread_cond_broadcast(&pool->done);
    pthread_mutex_unlock(&pool->lock);
  }
  ct_cache_close(c);
  return NULL;
}

/* Makes sure slot i will get its cubin: from the compile cache (then it is
** done at once), else queued for a compile thread.  Calling thread only. */
static void pool_want(tune_pool *pool, ct_cache *cache, size_t i) {
  tune_slot *s = &pool->slots[i];
  pthread_mutex_lock(&pool->lock);
  int idle = s->state == SLOT_IDLE;
  pthread_mutex_unlock(&pool->lock);
  if (!idle) return;
  if (s->src == NULL) { /* generation failed: nothing to compile */
    pthread_mutex_lock(&pool->lock);
    s->state = SLOT_DONE;
    pthread_mutex_unlock(&pool->lock);
    return;
  }
  ct_cache_cubin cb;
  if (ct_cache_cubin_get(cache, s->source_hash, pool->options, pool->arch,
                         pool->nvrtc_version, &cb) == CT_OK) {
    memset(&s->out, 0, sizeof s->out);
    s->out.cubin = cb.cubin; /* ownership passes to the slot */
    s->out.cubin_size = cb.cubin_size;
    s->out.regs = cb.regs;
    s->out.spill_bytes = cb.spill_bytes;
    s->out.stack_bytes = cb.stack_bytes;
    s->out.smem_static = cb.smem_static;
    s->out.compile_ms = cb.compile_ms;
    s->rc = CT_OK;
    s->cached = 1;
    pthread_mutex_lock(&pool->lock);
    s->state = SLOT_DONE;
    pthread_mutex_unlock(&pool->lock);
    return;
  }
  pthread_mutex_lock(&pool->lock);
  s->state = SLOT_QUEUED;
  pool->queue[(pool->q_head + pool->q_len++) % pool->n] = i;
  pthread_cond_signal(&pool->work);
  pthread_mutex_unlock(&pool->lock);
}

/* ---------------------------------------------------------------------- */
/* Progress                                                                */

typedef struct tune_progress {
  const ct_tune_options *o;
  ct_tune_result *r;
  tune_pool *pool;
  size_t total;          /* variants the search means to have results for */
  size_t timed, wrong, failed;
  double screen_t0;      /* when screening began */
  double last_draw;
  const char *phase;     /* "screening", "finalists" */
  const char *current;   /* the variant in flight */
} tune_progress;

/* The single updating line on a terminal. */
static void progress_draw(tune_progress *pg, int force) {
  FILE *f = pg->o->progress;
  if (f == NULL || !pg->o->progress_bar) return;
  double t = now_s();
  if (!force && t - pg->last_draw < 0.1) return;
  pg->last_draw = t;
  ct_tune_result *r = pg->r;
  size_t known = r->n_screened + r->n_resumed;
  pthread_mutex_lock(&pg->pool->lock);
  size_t compiled = pg->pool->n_compiled;
  pthread_mutex_unlock(&pg->pool->lock);
  char eta[32] = "--";
  if (r->n_screened > 0 && pg->total > known) {
    double per = (t - pg->screen_t0) / (double)r->n_screened;
    int left = (int)(per * (double)(pg->total - known) + 0.5);
    snprintf(eta, sizeof eta, "%d:%02d", left / 60, left % 60);
  }
  const int width = 20;
  int fill = pg->total ? (int)((double)width * (double)known / (double)pg->total) : 0;
  char bar[32];
  for (int i = 0; i < width; i++) bar[i] = i < fill ? '#' : '-';
  bar[width] = '\0';
  char line[512];
  snprintf(line, sizeof line, "[%s] %zu/%zu ETA %s  timed %zu wrong %zu failed %zu"
           "  compiled %zu cached %zu resumed %zu  %s %s",
           bar, known, pg->total, eta, pg->timed, pg->wrong, pg->failed, compiled,
           r->n_cached, r->n_resumed, pg->phase, pg->current ? pg->current : "");
  /* One line: never wider than the terminal (a wrapped line cannot be
  ** redrawn in place). */
  struct winsize ws;
  size_t cols = ioctl(fileno(f), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 ? ws.ws_col : 80;
  if (cols < sizeof line) line[cols - 1] = '\0';
  fprintf(f, "\r%s\033[K", line);
  fflush(f);
}

static void progress_count(tune_progress *pg, const ct_cache_trial *t) {
  if (t->status == CT_TRIAL_TIMED) pg->timed++;
  else if (t->status == CT_TRIAL_WRONG) pg->wrong++;
  else pg->failed++;
}

/* One plain line per finished variant (not on a terminal). */
static void progress_line(tune_progress *pg, const ct_tune_row *row,
                          const char *tag, size_t index, size_t total) {
  FILE *f = pg->o->progress;
  if (f == NULL) return;
  if (pg->o->progress_bar) {
    progress_draw(pg, 1);
    return;
  }
  const ct_cache_trial *t = &row->trial;
  char comp[32];
  if (row->cubin_cached) snprintf(comp, sizeof comp, "cached");
  else if (isfinite(t->compile_ms)) snprintf(comp, sizeof comp, "%.1f s", t->compile_ms / 1e3);
  else snprintf(comp, sizeof comp, "-");
  if (t->status == CT_TRIAL_TIMED)
    fprintf(f, "[%s%zu/%zu] %-14s %9.4f ms  compile %-7s %s\n", tag, index,
            total, ct_trial_status_name(t->status), t->mean_ms, comp,
            t->variant);
  else
    fprintf(f, "[%s%zu/%zu] %-14s %12s  compile %-7s %s: %.160s\n", tag, index,
            total, ct_trial_status_name(t->status), "", comp, t->variant,
            t->message);
  fflush(f);
}

/* Waits until slot i is done, or the tune is stopped (returns 0 then). */
static int pool_wait(tune_pool *pool, size_t i, tune_progress *pg) {
  const ct_tune_options *o = pg->o;
  pthread_mutex_lock(&pool->lock);
  while (pool->slots[i].state != SLOT_DONE && !stopped(o)) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += 100 * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
      until.tv_sec++;
      until.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&pool->done, &pool->lock, &until);
    pthread_mutex_unlock(&pool->lock);
    progress_draw(pg, 0);
    pthread_mutex_lock(&pool->lock);
  }
  int done = pool->slots[i].state == SLOT_DONE;
  pthread_mutex_unlock(&pool->lock);
  return done;
}

/* Counts a done slot's cubin once: compiled now, or from the cache. */
static void count_cubin(ct_tune_result *r, tune_slot *s) {
  if (s->counted || s->src == NULL) return;
  s->counted = 1;
  if (s->cached) {
    r->n_cached++;
  } else {
    r->n_compiled++;
    r->compile_s += s->out.compile_ms / 1e3;
  }
}

/* ---------------------------------------------------------------------- */
/* Trials                                                                  */

static void trial_init(ct_cache_trial *t, int64_t problem_id,
                       int64_t device_id, const tune_slot *s) {
  memset(t, 0, sizeof *t);
  t->problem_id = problem_id;
  t->device_id = device_id;
  snprintf(t->variant, sizeof t->variant, "%s", s->variant.name);
  t->source_hash = s->source_hash;
  t->compile_ms = s->out.cubin || s->out.log ? s->out.compile_ms : NAN;
  t->regs = s->out.regs;
  t->spill_bytes = s->out.spill_bytes;
  int smem = 0;
  for (int i = 0; i < s->variant.n_kernels; i++)
    if ((int)s->variant.kernels[i].smem > smem) smem = (int)s->variant.kernels[i].smem;
  t->smem_bytes = smem + (s->out.smem_static > 0 ? s->out.smem_static : 0);
  t->max_abs_err = t->rel_err = NAN;
  t->mean_ms = t->median_ms = t->min_ms = t->max_ms = NAN;
}

static void trial_from_outcome(ct_cache_trial *t, const ct_tune_outcome *oc) {
  t->status = oc->status;
  t->max_abs_err = oc->max_abs_err;
  t->rel_err = oc->rel_err;
  if (oc->status == CT_TRIAL_TIMED) {
    t->mean_ms = oc->stats.mean_ms;
    t->median_ms = oc->stats.median_ms;
    t->min_ms = oc->stats.min_ms;
    t->max_ms = oc->stats.max_ms;
    t->n_timed = oc->stats.n;
  } else {
    t->mean_ms = t->median_ms = t->min_ms = t->max_ms = NAN;
    t->n_timed = 0;
  }
  snprintf(t->message, sizeof t->message, "%s", oc->message);
}

/* The watchdog for a job: the floor, plus 20 ns an output for poisoning,
** checking and reading back this many (the GPU check scans ~28 bytes an
** output, or recomputes the reference when it is not stored), plus 50x
** the variant's expected time per run. */
static double job_timeout(const ct_tune_options *o, size_t outputs, int trials,
                          double expected_ms) {
  double t = o->watchdog_s + 2e-8 * (double)outputs;
  if (isfinite(expected_ms)) t += (trials + 1) * 50.0 * expected_ms / 1e3;
  return t;
}

/* Verifies slot s's cubin in the worker and times it over `trials` runs,
** under a watchdog of timeout_s.  Fails (the message in err) only when the
** worker is gone; *oc says what came of the variant. */
static ct_status run_job(ct_tune_worker *w, const tune_slot *s, int trials,
                         double timeout_s, ct_tune_outcome *oc, char *err,
                         size_t len) {
  ct_tune_job job;
  memset(&job, 0, sizeof job);
  snprintf(job.variant, sizeof job.variant, "%s", s->variant.name);
  job.verify = 1;
  job.trials = trials;
  job.cubin = s->out.cubin;
  job.cubin_size = s->out.cubin_size;
  job.timeout_s = timeout_s;
  ct_status rc = ct_tune_worker_run(w, &job, oc);
  if (rc != CT_OK) snprintf(err, len, "the GPU worker is gone");
  return rc;
}

static int cmp_mean(const void *a, const void *b, void *rows) {
  const ct_tune_row *r = rows;
  double x = r[*(const size_t *)a].trial.mean_ms, y = r[*(const size_t *)b].trial.mean_ms;
  return (x > y) - (x < y);
}

/* ---------------------------------------------------------------------- */
/* The loop                                                                */

/* What ct_tune_run's phases share. */
typedef struct tune_run {
  const ct_tune_options *o;
  ct_tune_result *r;
  double t0;                 /* when the run began */
  ct_cache *cache;           /* the calling thread's handle */
  ct_tune_worker *w;         /* the measuring worker */
  ct_tune_search *search;
  ct_gen_variant *variants;  /* the search space, n of them */
  size_t n;
  size_t *order;             /* finalist candidates, fastest first */
  tune_pool pool;            /* the compile threads' work */
  pthread_t *threads;
  int n_threads;
  size_t *peek, ahead;       /* the variants to compile ahead */
  char options[256], nvrtc_version[16], arch[16];
  int64_t device_id, problem_id;
  size_t outputs;            /* output elements of the problem */
  size_t prior_rows[CT_TUNE_PRIORS_MAX]; /* the priors' rows, r->priors' order */
  tune_progress pg;
} tune_run;

/* The outcome's default variant and its recorded time, then with
** o->skip_tuned whether the problem has a winner on r->device: 1 (r->skipped
** set, the winner's name and time filled), 0 (tune it), or -1 with err set.
** Needs t->cache and the ids. */
static int tune_known(tune_run *t, const ct_gen_limits *lim, ct_status *rc, char *err,
                      size_t len) {
  const ct_tune_options *o = t->o;
  ct_tune_result *r = t->r;
  ct_gen_variant dv;
  if (ct_gen_default_variant(&o->problem, lim, &dv) == CT_OK) {
    snprintf(r->default_variant, sizeof r->default_variant, "%s", dv.name);
    char *src = NULL;
    ct_cache_trial tr;
    if (ct_gen_source(&o->problem, &dv, &src) == CT_OK &&
        ct_cache_trial_find(t->cache, t->problem_id, t->device_id, dv.name,
                            ct_gen_hash(src, strlen(src), CT_GEN_HASH_SEED), &tr) == CT_OK &&
        tr.status == CT_TRIAL_TIMED)
      r->default_ms = tr.mean_ms;
    free(src);
  }
  if (!o->skip_tuned) return 0;
  ct_cache_winner w;
  *rc = ct_cache_winner_get(t->cache, r->spec, &r->device, &w);
  if (*rc == CT_ERR_NOT_FOUND) {
    *rc = CT_OK;
    return 0;
  }
  if (*rc != CT_OK) {
    snprintf(err, len, "%s", ct_cache_errmsg(t->cache));
    return -1;
  }
  r->skipped = 1;
  snprintf(r->winner_variant, sizeof r->winner_variant, "%s", w.variant);
  r->winner_ms = w.mean_ms;
  ct_cache_winner_clear(&w);
  return 1;
}

/* The database opened, the device and problem found or added. */
static ct_status tune_ids(tune_run *t, char *err, size_t len) {
  ct_tune_result *r = t->r;
  char cerr[512];
  ct_status rc = ct_cache_open(t->o->db_path, CT_CACHE_CREATE, &t->cache, cerr, sizeof cerr);
  if (rc != CT_OK) {
    snprintf(err, len, "%s", cerr);
    return rc;
  }
  if ((rc = ct_cache_device_id(t->cache, &r->device, &t->device_id)) != CT_OK ||
      (rc = ct_cache_problem_id(t->cache, r->spec,
                                ct_precision_name(t->o->problem.precision),
                                &t->problem_id)) != CT_OK)
    snprintf(err, len, "%s", ct_cache_errmsg(t->cache));
  return rc;
}

/* Setup: the problem and families checked, the worker started on the
** device (first: a machine without one gets no database file), the
** database opened, the device and problem found or added, the variants
** enumerated and filtered.  CT_OK with r->interrupted when a signal came
** while the worker started. */
static ct_status tune_setup(tune_run *t, char *err, size_t len) {
  const ct_tune_options *o = t->o;
  ct_tune_result *r = t->r;
  ct_status rc;
  if ((rc = ct_problem_validate(&o->problem, err, len)) != CT_OK) return rc;
  ct_problem_format(&o->problem, r->spec, sizeof r->spec);
  if ((rc = ct_tune_families_check(o->families, err, len)) != CT_OK) return rc;

  /* A device seen before in this process: a problem tuned on it before is
  ** skipped without starting a worker. */
  if (o->skip_tuned && o->known_device && o->known_limits) {
    r->device = *o->known_device;
    r->limits = *o->known_limits;
    if ((rc = tune_ids(t, err, len)) != CT_OK) return rc;
    int known = tune_known(t, &r->limits, &rc, err, len);
    if (known != 0) return rc;
    ct_cache_close(t->cache);
    t->cache = NULL;
  }

  rc = ct_tune_worker_start(o->worker_exe, o->device, o->stop, &t->w, err, len);
  if (rc != CT_OK) {
    if (stopped(o)) { /* a signal while the worker started: nothing to keep */
      r->interrupted = 1;
      rc = CT_OK;
    }
    return rc;
  }
  r->device = *ct_tune_worker_device(t->w);
  const ct_gen_limits *lim = ct_tune_worker_limits(t->w);
  r->limits = *lim;
  if ((rc = tune_ids(t, err, len)) != CT_OK) return rc;
  snprintf(t->arch, sizeof t->arch, "%s", lim->arch);
  const char *opts = ct_rt_compile_options(t->arch);
  snprintf(t->options, sizeof t->options, "%s", opts ? opts : "");
  ct_rt_nvrtc_version(t->nvrtc_version, sizeof t->nvrtc_version);

  if (tune_known(t, lim, &rc, err, len) != 0) return rc;

  /* The search space: every valid variant, or the families asked for. */
  rc = ct_gen_enumerate(&o->problem, lim, &t->variants, &t->n);
  if (rc != CT_OK) {
    snprintf(err, len, "cannot enumerate variants: %s", ct_status_string(rc));
    return rc;
  }
  t->n = ct_tune_families_keep(o->families, t->variants, t->n);
  if (t->n == 0) {
    char why[512];
    ct_tune_families_why(o->families, &o->problem, why, sizeof why);
    snprintf(err, len, "no valid variant for %s on %s%s%s%s", r->spec, t->arch,
             o->families ? " in families " : "", o->families ? o->families : "", why);
    return CT_ERR_UNSUPPORTED;
  }
  return CT_OK;
}

/* Priors come from tuned problems this near (ct_rt_problem_distance):
** the same layout, filter size and stride (other channels, padding,
** dilation, bias or activation, and sizes allowed). */
#define TUNE_PRIOR_DISTANCE 1600.0

/* A budgeted search's priors (ct_tune_search_prefer): the winners of the
** problems tuned on this device at this precision within
** TUNE_PRIOR_DISTANCE, nearest first (the problem itself passed over),
** each that is in this search space (valid, kept by the pruning and
** o->families), has no result yet (resumed) and is not taken yet, up to
** CT_TUNE_PRIORS_MAX (with o->max_variants a quarter of that, none below
** 4: the seeds keep the budget).  Where the database cannot list them the
** search goes on without (r->priors_error says why). */
static void tune_priors(tune_run *t) {
  const ct_tune_options *o = t->o;
  ct_tune_result *r = t->r;
  if (o->no_priors || !r->budgeted) return;
  size_t cap = CT_TUNE_PRIORS_MAX;
  if (o->max_variants > 0 && o->max_variants / 4 < cap) cap = o->max_variants / 4;
  if (cap == 0) return;
  ct_rt_tuned_list tuned;
  char err[200];
  ct_rt_ranked *order = NULL;
  size_t n = 0;
  ct_status rc = ct_rt_tuned_load(t->cache, &r->device, &tuned, err, sizeof err);
  if (rc == CT_OK &&
      (rc = ct_rt_tuned_rank(&tuned, &o->problem, TUNE_PRIOR_DISTANCE, &order, &n)) != CT_OK)
    snprintf(err, sizeof err, "out of host memory");
  if (rc != CT_OK) {
    snprintf(r->priors_error, sizeof r->priors_error, "%s: %s", ct_status_string(rc), err);
    ct_rt_tuned_free(&tuned);
    return;
  }
  size_t *const idx = t->prior_rows;
  for (size_t j = 0; j < n && r->n_priors < cap; j++) {
    const ct_rt_tuned *tp = &tuned.items[order[j].index];
    size_t v = 0;
    while (v < t->n && strcmp(t->variants[v].name, tp->variant) != 0) v++;
    int taken = v == t->n || r->rows[v].origin == CT_TUNE_RESUMED;
    for (size_t k = 0; k < r->n_priors && !taken; k++) taken = idx[k] == v;
    if (taken) continue;
    idx[r->n_priors] = v;
    snprintf(r->priors[r->n_priors], sizeof r->priors[0], "%s", tp->variant);
    snprintf(r->prior_sources[r->n_priors], sizeof r->prior_sources[0], "%s", tp->spec);
    r->n_priors++;
  }
  ct_tune_search_prefer(t->search, idx, r->n_priors);
  ct_rt_tuned_free(&tuned);
  free(order);
}

/* Planning: a row and a compile slot per variant with its source and
** hash, the search order, and (resume) what earlier runs recorded. */
static ct_status tune_plan(tune_run *t, char *err, size_t len) {
  const ct_tune_options *o = t->o;
  ct_tune_result *r = t->r;
  tune_pool *pool = &t->pool;
  size_t n = t->n;
  ct_status rc;
  r->rows = calloc(n, sizeof *r->rows);
  pool->slots = calloc(n, sizeof *pool->slots);
  pool->queue = calloc(n, sizeof *pool->queue);
  t->order = calloc(n, sizeof *t->order);
  if (!r->rows || !pool->slots || !pool->queue || !t->order) {
    snprintf(err, len, "out of host memory");
    return CT_ERR_NOMEM;
  }
  r->n_rows = n;
  pool->n = n;
  pool->arch = t->arch;
  pool->options = t->options;
  pool->nvrtc_version = t->nvrtc_version;
  pool->db_path = o->db_path;

  /* Sources and their hashes (cheap), then what earlier runs recorded. */
  for (size_t i = 0; i < n; i++) {
    tune_slot *s = &pool->slots[i];
    s->variant = t->variants[i];
    s->out.regs = s->out.spill_bytes = s->out.stack_bytes = s->out.smem_static = -1;
    s->rc = ct_gen_source(&o->problem, &s->variant, &s->src);
    if (s->rc == CT_OK)
      s->source_hash = ct_gen_hash(s->src, strlen(s->src), CT_GEN_HASH_SEED);
    trial_init(&r->rows[i].trial, t->problem_id, t->device_id, s);
  }
  int budgeted = o->max_variants > 0 || o->budget_s > 0 || n > CT_TUNE_EXHAUSTIVE_MAX;
  size_t max_screen = o->max_variants ? o->max_variants
                      : o->budget_s > 0 ? 0 : CT_TUNE_EXHAUSTIVE_MAX;
  rc = ct_tune_search_create(t->variants, n, budgeted, max_screen, &t->search);
  if (rc != CT_OK) {
    snprintf(err, len, "out of host memory");
    return rc;
  }
  r->budgeted = ct_tune_search_budgeted(t->search);
  if (o->resume) {
    for (size_t i = 0; i < n; i++) {
      ct_cache_trial tr;
      rc = ct_cache_trial_find(t->cache, t->problem_id, t->device_id,
                               t->variants[i].name, pool->slots[i].source_hash, &tr);
      if (rc == CT_ERR_NOT_FOUND) continue;
      if (rc != CT_OK) {
        snprintf(err, len, "%s", ct_cache_errmsg(t->cache));
        return rc;
      }
      r->rows[i].trial = tr;
      r->rows[i].origin = CT_TUNE_RESUMED;
      r->n_resumed++;
      ct_tune_search_result(t->search, i, tr.status == CT_TRIAL_TIMED ? tr.mean_ms : NAN);
      progress_count(&t->pg, &tr);
    }
  }
  tune_priors(t);
  t->pg.total = r->budgeted && max_screen && max_screen < n ? max_screen : n;
  return CT_OK;
}

/* Starting: the compile threads, the first variants the search wants
** queued, then the test data and its reference in the worker (on the GPU,
** while the threads compile).  CT_OK with r->interrupted when a signal
** came meanwhile. */
static ct_status tune_start(tune_run *t, char *err, size_t len) {
  const ct_tune_options *o = t->o;
  ct_tune_result *r = t->r;
  ct_status rc;
  t->n_threads = o->threads > 0 ? o->threads : (int)sysconf(_SC_NPROCESSORS_ONLN);
  if (t->n_threads < 1) t->n_threads = 1;
  if ((size_t)t->n_threads > t->n) t->n_threads = (int)t->n;
  r->threads = t->n_threads;
  t->threads = calloc((size_t)t->n_threads, sizeof *t->threads);
  if (t->threads == NULL) {
    snprintf(err, len, "out of host memory");
    return CT_ERR_NOMEM;
  }
  for (int i = 0; i < t->n_threads; i++)
    if (pthread_create(&t->threads[i], NULL, pool_thread, &t->pool) != 0) {
      t->n_threads = i;
      snprintf(err, len, "cannot start compile threads");
      return CT_ERR_NOMEM;
    }
  t->ahead = (size_t)t->n_threads * 2;
  t->peek = calloc(t->ahead, sizeof *t->peek);
  if (t->peek == NULL) {
    snprintf(err, len, "out of host memory");
    return CT_ERR_NOMEM;
  }
  size_t np = ct_tune_search_peek(t->search, t->peek, t->ahead);
  for (size_t k = 0; k < np; k++) pool_want(&t->pool, t->cache, t->peek[k]);

  r->seed = o->seed ? o->seed : ct_tune_fresh_seed();
  int64_t P, Q;
  ct_problem_output(&o->problem, &P, &Q);
  t->outputs = (size_t)(o->problem.n * o->problem.k * P * Q);
  size_t inputs = (size_t)(o->problem.n * o->problem.c * o->problem.h * o->problem.w);
  t->pg.phase = "reference";
  progress_draw(&t->pg, 1);
  rc = ct_tune_worker_setup(t->w, &o->problem, r->seed,
                            120.0 + 1e-7 * (double)(inputs + t->outputs), err, len);
  if (rc != CT_OK && stopped(o)) {
    r->interrupted = 1;
    rc = CT_OK;
  }
  return rc;
}

/* The worker, dead after trial tr, started again.  When it cannot be, err
** names the variant that ended it and how: in process, a sticky fault
** (an illegal address or instruction) loses the process's CUDA context
** for good, and a later variant would fail in the context's first call. */
static ct_status restart_after(tune_run *t, const ct_cache_trial *tr, char *err, size_t len) {
  char why[512];
  ct_status rc = ct_tune_worker_restart(t->w, why, sizeof why);
  t->r->restarts++;
  if (rc != CT_OK)
    snprintf(err, len, "the GPU worker cannot start again (%.300s) after variant %s ended it (%s: %.200s)%s",
             why, tr->variant, ct_trial_status_name(tr->status), tr->message,
             t->o->worker_exe ? ""
                              : "; in process a fault loses the CUDA context, so tune in an "
                                "isolated worker to record it and go on");
  return rc;
}

/* Screening, in the search's order: each variant's cubin (compiled ahead),
** verified and timed in the worker, recorded the moment it is known; a
** worker that died is restarted.  Under a budget, stops in time for the
** finalists.  CT_OK (r->interrupted when stopped), or a failure of the
** worker or the database. */
static ct_status tune_screen(tune_run *t, char *err, size_t len) {
  const ct_tune_options *o = t->o;
  ct_tune_result *r = t->r;
  tune_pool *pool = &t->pool;
  ct_status rc = CT_OK;
  t->pg.phase = "screening";
  t->pg.screen_t0 = now_s();
  double slowest = NAN, job_wall = 0.0, best_ms = INFINITY;
  int passed = 0; /* a variant passed: screened now, or resumed */
  for (size_t i = 0; i < t->n; i++)
    passed |= r->rows[i].origin == CT_TUNE_RESUMED && r->rows[i].trial.status == CT_TRIAL_TIMED;
  for (;;) {
    if (stopped(o)) {
      r->interrupted = 1;
      break;
    }
    if (o->budget_s > 0 && passed && r->n_screened > 0) {
      /* Keep time for the finalists: each a verification and a re-time.
      ** Not before a variant has passed: past the budget, the search goes
      ** on until one does (or the space is done), so that a short budget
      ** whose first screens failed still ends with a winner. */
      double per = job_wall / (double)r->n_screened;
      double reserve = o->finalists * (per + o->final_trials *
                                       (isfinite(best_ms) ? best_ms : 1.0) / 1e3);
      if (now_s() - t->t0 + per + reserve > o->budget_s) break;
    }
    long next = ct_tune_search_next(t->search);
    if (next < 0) break;
    size_t i = (size_t)next;
    size_t np = ct_tune_search_peek(t->search, t->peek, t->ahead);
    for (size_t k = 0; k < np; k++) pool_want(pool, t->cache, t->peek[k]);
    pool_want(pool, t->cache, i);
    tune_slot *s = &pool->slots[i];
    t->pg.current = s->variant.name;
    if (!pool_wait(pool, i, &t->pg)) {
      r->interrupted = 1;
      break;
    }
    ct_tune_row *row = &r->rows[i];
    ct_cache_trial *tr = &row->trial;
    trial_init(tr, t->problem_id, t->device_id, s);
    row->cubin_cached = s->cached;
    count_cubin(r, s);
    if (s->rc != CT_OK) {
      tr->status = CT_TRIAL_COMPILE_FAILED;
      const char *log = s->out.log ? s->out.log : "";
      snprintf(tr->message, sizeof tr->message, "%s: %.200s",
               ct_status_string(s->rc), log);
    } else {
      ct_tune_outcome oc;
      rc = run_job(t->w, s, o->screen_trials,
                   job_timeout(o, t->outputs, o->screen_trials, slowest), &oc, err, len);
      if (rc != CT_OK) return rc;
      if (oc.interrupted) {
        r->interrupted = 1;
        break;
      }
      job_wall += oc.wall_s;
      trial_from_outcome(tr, &oc);
      if (tr->status == CT_TRIAL_TIMED) {
        passed = 1;
        if (!(tr->mean_ms <= slowest)) slowest = tr->mean_ms;
        if (tr->mean_ms < best_ms) best_ms = tr->mean_ms;
      }
    }
    if (ct_cache_trial_add(t->cache, tr) != CT_OK) {
      snprintf(err, len, "cannot record a trial: %s", ct_cache_errmsg(t->cache));
      return CT_ERR_DB;
    }
    row->origin = CT_TUNE_SCREENED;
    r->n_screened++;
    ct_tune_search_result(t->search, i, tr->status == CT_TRIAL_TIMED ? tr->mean_ms : NAN);
    progress_count(&t->pg, tr);
    progress_line(&t->pg, row, "", r->n_screened + r->n_resumed, t->pg.total);
    if (tr->status != CT_TRIAL_TIMED) ct_rt_compiled_clear(&s->out);
    if (!ct_tune_worker_alive(t->w)) {
      rc = restart_after(t, tr, err, len);
      if (rc != CT_OK) {
        if (stopped(o)) {
          r->interrupted = 1;
          rc = CT_OK;
        }
        break;
      }
    }
  }
  return rc;
}

/* Finalists: the fastest timed variants, recorded or screened now,
** verified again and re-timed with the full protocol (recorded as further
** trials); the fastest of those is r->winner.  CT_OK (r->interrupted
** when stopped: then no winner), or a failure of the worker or the
** database. */
static ct_status tune_finalists(tune_run *t, char *err, size_t len) {
  const ct_tune_options *o = t->o;
  ct_tune_result *r = t->r;
  tune_pool *pool = &t->pool;
  ct_status rc;
  t->pg.phase = "finalists";
  size_t n_cand = 0;
  for (size_t i = 0; i < t->n; i++)
    if (r->rows[i].origin != CT_TUNE_UNTRIED &&
        r->rows[i].trial.status == CT_TRIAL_TIMED && isfinite(r->rows[i].trial.mean_ms))
      t->order[n_cand++] = i;
  qsort_r(t->order, n_cand, sizeof *t->order, cmp_mean, r->rows);
  double best = INFINITY;
  int good = 0;
  for (size_t c = 0; c < n_cand && good < o->finalists; c++) {
    size_t i = t->order[c];
    tune_slot *s = &pool->slots[i];
    ct_tune_row *row = &r->rows[i];
    t->pg.current = s->variant.name;
    pool_want(pool, t->cache, i);
    if (!pool_wait(pool, i, &t->pg)) {
      r->interrupted = 1;
      break;
    }
    count_cubin(r, s);
    if (s->rc != CT_OK || s->out.cubin == NULL) continue; /* cannot happen */
    ct_tune_outcome oc;
    rc = run_job(t->w, s, o->final_trials,
                 job_timeout(o, t->outputs, o->final_trials, row->trial.mean_ms), &oc,
                 err, len);
    if (rc != CT_OK) return rc;
    if (oc.interrupted) {
      r->interrupted = 1;
      break;
    }
    ct_cache_trial *tr = &row->trial;
    trial_init(tr, t->problem_id, t->device_id, s);
    trial_from_outcome(tr, &oc);
    if (ct_cache_trial_add(t->cache, tr) != CT_OK) {
      snprintf(err, len, "cannot record a trial: %s", ct_cache_errmsg(t->cache));
      return CT_ERR_DB;
    }
    row->finalist = 1;
    row->cubin_cached = s->cached;
    progress_count(&t->pg, tr);
    progress_line(&t->pg, row, "final ", (size_t)good + 1, (size_t)o->finalists);
    if (tr->status == CT_TRIAL_TIMED) {
      good++;
      if (tr->mean_ms < best) {
        best = tr->mean_ms;
        r->winner = (long)i;
      }
    }
    if (!ct_tune_worker_alive(t->w)) {
      rc = restart_after(t, tr, err, len);
      if (rc != CT_OK) return rc;
    }
  }
  if (r->interrupted) r->winner = -1;
  return CT_OK;
}

/* Storing: the winner (when there is one) and its cubin. */
static ct_status tune_store_winner(tune_run *t, char *err, size_t len) {
  ct_tune_result *r = t->r;
  if (r->winner < 0) return CT_OK;
  const tune_slot *s = &t->pool.slots[r->winner];
  const ct_cache_trial *tr = &r->rows[r->winner].trial;
  ct_cache_winner win;
  memset(&win, 0, sizeof win);
  win.problem_id = t->problem_id;
  win.device_id = t->device_id;
  win.trial_id = tr->id;
  snprintf(win.variant, sizeof win.variant, "%s", tr->variant);
  win.source_hash = s->source_hash;
  win.cubin = s->out.cubin;
  win.cubin_size = s->out.cubin_size;
  win.cubin_hash = ct_gen_hash(win.cubin, win.cubin_size, CT_GEN_HASH_SEED);
  snprintf(win.arch, sizeof win.arch, "%s", t->arch);
  snprintf(win.nvrtc_version, sizeof win.nvrtc_version, "%s", r->device.nvrtc_version);
  snprintf(win.options, sizeof win.options, "%s", t->options);
  win.mean_ms = tr->mean_ms;
  if (ct_cache_winner_set(t->cache, &win) != CT_OK) {
    snprintf(err, len, "cannot store the winner: %s", ct_cache_errmsg(t->cache));
    return CT_ERR_DB;
  }
  return CT_OK;
}

/* The outcome in brief: the winner's name and time, the default
** variant's time from this run's rows when it was screened now, and the
** families left with no trial. */
static void tune_outcome(tune_run *t) {
  ct_tune_result *r = t->r;
  for (size_t f = 0; ct_gen_families[f] != NULL && t->variants; f++) {
    int offered = 0, tried = 0;
    for (size_t i = 0; i < r->n_rows && !tried; i++)
      if (t->variants[i].family == ct_gen_families[f]) {
        offered = 1;
        tried = r->rows[i].origin != CT_TUNE_UNTRIED;
      }
    if (offered && !tried && r->n_unscreened < sizeof r->unscreened / sizeof r->unscreened[0])
      r->unscreened[r->n_unscreened++] = ct_gen_families[f];
  }
  /* The priors this run screened (a budget spent before, or a stop, may
  ** leave some untried). */
  size_t kept = 0;
  for (size_t k = 0; k < r->n_priors; k++)
    if (r->rows[t->prior_rows[k]].origin == CT_TUNE_SCREENED) {
      if (kept != k) {
        memcpy(r->priors[kept], r->priors[k], sizeof r->priors[0]);
        memcpy(r->prior_sources[kept], r->prior_sources[k], sizeof r->prior_sources[0]);
        t->prior_rows[kept] = t->prior_rows[k];
      }
      kept++;
    }
  r->n_priors = kept;
  if (r->winner >= 0) {
    const ct_cache_trial *w = &r->rows[r->winner].trial;
    snprintf(r->winner_variant, sizeof r->winner_variant, "%s", w->variant);
    r->winner_ms = w->mean_ms;
  }
  for (size_t i = 0; i < r->n_rows; i++) {
    const ct_cache_trial *tr = &r->rows[i].trial;
    if (r->rows[i].origin != CT_TUNE_UNTRIED && tr->status == CT_TRIAL_TIMED &&
        strcmp(tr->variant, r->default_variant) == 0)
      r->default_ms = tr->mean_ms;
  }
}

/* Ending: the progress line finished, the compile threads joined, the
** worker stopped, everything freed; r->wall_s set. */
static void tune_finish(tune_run *t) {
  const ct_tune_options *o = t->o;
  tune_pool *pool = &t->pool;
  if (o->progress && o->progress_bar && t->pg.last_draw > 0) {
    progress_draw(&t->pg, 1);
    fputc('\n', o->progress);
  }
  if (t->threads) {
    pthread_mutex_lock(&pool->lock);
    pool->quit = 1;
    pthread_cond_broadcast(&pool->work);
    pthread_mutex_unlock(&pool->lock);
    for (int i = 0; i < t->n_threads; i++) pthread_join(t->threads[i], NULL);
    free(t->threads);
  }
  ct_tune_worker_stop(t->w);
  if (pool->slots)
    for (size_t i = 0; i < pool->n; i++) {
      ct_rt_compiled_clear(&pool->slots[i].out);
      free(pool->slots[i].src);
    }
  free(pool->slots);
  free(pool->queue);
  pthread_mutex_destroy(&pool->lock);
  pthread_cond_destroy(&pool->work);
  pthread_cond_destroy(&pool->done);
  ct_tune_search_destroy(t->search);
  free(t->variants);
  free(t->order);
  free(t->peek);
  ct_cache_close(t->cache);
  t->r->wall_s = now_s() - t->t0;
}

ct_status ct_tune_run(const ct_tune_options *o, ct_tune_result *r, char *err,
                      size_t len) {
  tune_run t;
  ct_status rc;
  memset(r, 0, sizeof *r);
  r->winner = -1;
  r->winner_ms = r->default_ms = NAN;
  memset(&t, 0, sizeof t);
  t.o = o;
  t.r = r;
  t.t0 = now_s();
  pthread_mutex_init(&t.pool.lock, NULL);
  pthread_cond_init(&t.pool.work, NULL);
  pthread_cond_init(&t.pool.done, NULL);
  t.pg.o = o;
  t.pg.r = r;
  t.pg.pool = &t.pool;
  t.pg.phase = "starting";

  rc = tune_setup(&t, err, len);
  if (rc == CT_OK && (r->interrupted || r->skipped)) {
    tune_finish(&t);
    return rc;
  }
  if (rc == CT_OK) rc = tune_plan(&t, err, len);
  if (rc == CT_OK && !r->interrupted) rc = tune_start(&t, err, len);
  if (rc == CT_OK && !r->interrupted) rc = tune_screen(&t, err, len);
  if (rc == CT_OK && !r->interrupted) rc = tune_finalists(&t, err, len);
  if (rc == CT_OK && !r->interrupted) rc = tune_store_winner(&t, err, len);
  tune_outcome(&t);
  tune_finish(&t);
  return rc;
}
