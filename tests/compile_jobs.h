/*
** compile_jobs.h — tests that compile many generated sources with NVRTC:
** a job per source, compiled on up to 8 threads, as the tuner's are.
*/
#ifndef CT_COMPILE_JOBS_H
#define CT_COMPILE_JOBS_H

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "convtune.h"
#include "ct_gen.h"
#include "ct_nvrtc.h"

/* One compile job. */
typedef struct job {
  char name[CT_GEN_NAME_MAX + 64]; /* what is printed */
  char *src;                       /* owned */
  ct_status rc;
  ct_rt_compiled out;
} job;

typedef struct pool {
  job *jobs;
  size_t n, next;
  const char *arch;
  pthread_mutex_t lock;
} pool;

static void *worker(void *arg) {
  pool *pl = arg;
  for (;;) {
    pthread_mutex_lock(&pl->lock);
    size_t i = pl->next++;
    pthread_mutex_unlock(&pl->lock);
    if (i >= pl->n) return NULL;
    job *j = &pl->jobs[i];
    j->rc = ct_rt_compile(j->src, j->name, pl->arch, &j->out);
  }
}

/* Compiles every job for arch on up to 8 threads. */
static void compile_all(job *jobs, size_t n, const char *arch) {
  pool pl = {jobs, n, 0, arch, PTHREAD_MUTEX_INITIALIZER};
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  int nthreads = cpus < 1 ? 1 : cpus > 8 ? 8 : (int)cpus;
  pthread_t t[8];
  int started = 0;
  for (int i = 0; i < nthreads; i++)
    if (pthread_create(&t[started], NULL, worker, &pl) == 0) started++;
  if (started == 0) worker(&pl);
  for (int i = 0; i < started; i++) pthread_join(t[i], NULL);
}

static void jobs_free(job *jobs, size_t n) {
  for (size_t i = 0; i < n; i++) {
    free(jobs[i].src);
    ct_rt_compiled_clear(&jobs[i].out);
  }
  free(jobs);
}

/* Appends the job of variant v of p (its name after tag) at jobs[*n];
** -1 when its source cannot be made. */
static int add_variant_job(job *jobs, size_t *n, const ct_problem *p,
                           const ct_gen_variant *v, const char *tag) {
  job *j = &jobs[*n];
  memset(j, 0, sizeof *j);
  snprintf(j->name, sizeof j->name, "%s%s", tag, v->name);
  if (ct_gen_source(p, v, &j->src) != CT_OK) return -1;
  (*n)++;
  return 0;
}

/* Appends the job of p's float64 reference (named after tag) at jobs[*n];
** -1 when its source cannot be made. */
static inline int add_reference_job(job *jobs, size_t *n, const ct_problem *p, const char *tag) {
  job *j = &jobs[*n];
  memset(j, 0, sizeof *j);
  snprintf(j->name, sizeof j->name, "%sreference", tag);
  if (ct_gen_reference_source(p, &j->src) != CT_OK) return -1;
  (*n)++;
  return 0;
}

/* Which of a problem's variants a test compiles: 1 to keep all[i], asked
** in enumeration order (state: the test's own). */
typedef int (*variant_keep)(const ct_gen_variant *all, size_t i, void *state);

/* Enumerates p's variants on lim and compiles those keep() selects:
** (*jobs)[i] is the job of (*sel)[i], both malloc'd (jobs_free and free).
** Returns the count, or -1 when the enumeration, memory or a source
** fails (then nothing is left allocated). */
static inline long compile_kept(const ct_problem *p, const ct_gen_limits *lim, variant_keep keep,
                                void *state, job **jobs, ct_gen_variant **sel) {
  ct_gen_variant *all = NULL;
  size_t n_all = 0, nj = 0;
  *jobs = NULL;
  *sel = NULL;
  if (ct_gen_enumerate(p, lim, &all, &n_all) != CT_OK) return -1;
  job *js = calloc(n_all + 1, sizeof *js);
  ct_gen_variant *vs = calloc(n_all + 1, sizeof *vs);
  int ok = js != NULL && vs != NULL;
  for (size_t i = 0; i < n_all && ok; i++)
    if (keep(all, i, state)) {
      vs[nj] = all[i];
      ok = add_variant_job(js, &nj, p, &all[i], "") == 0;
    }
  free(all);
  if (!ok) {
    if (js != NULL) jobs_free(js, nj);
    free(vs);
    return -1;
  }
  compile_all(js, nj, lim->arch);
  *jobs = js;
  *sel = vs;
  return (long)nj;
}

#endif /* CT_COMPILE_JOBS_H */
