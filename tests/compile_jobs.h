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

#endif /* CT_COMPILE_JOBS_H */
