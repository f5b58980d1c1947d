/*
** gpu_db.h — tuning databases written by tests and benchmarks without
** running the tuner: a chosen variant compiled here with NVRTC and stored
** as a problem's winner, exactly as `convtune tune` stores one (real cubin,
** this build's source hash and NVRTC options, the device's key).  Needs no
** GPU itself; the device description comes from the caller.
*/
#ifndef CT_GPU_DB_H
#define CT_GPU_DB_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ct_cache.h"
#include "ct_gen.h"
#include "ct_nvrtc.h"

/* The which-th distinct family other than the default ("direct") among p's
** valid variants, wrapping around; its first variant into *out.  Returns 0,
** or -1 when p has no such variant. */
static int gpu_db_pick(const ct_problem *p, const ct_gen_limits *lim,
                       int which, ct_gen_variant *out) {
  ct_gen_variant *vs = NULL;
  size_t n = 0;
  if (ct_gen_enumerate(p, lim, &vs, &n) != CT_OK) return -1;
  size_t firsts[16], nf = 0;
  for (size_t i = 0; i < n && nf < 16; i++) {
    if (strcmp(vs[i].family->name, "direct") == 0) continue;
    if (nf == 0 || vs[firsts[nf - 1]].family != vs[i].family) firsts[nf++] = i;
  }
  if (nf > 0) *out = vs[firsts[(size_t)which % nf]];
  free(vs);
  return nf > 0 ? 0 : -1;
}

/* Compiles v for p and stores it as p's winner on device dev in the
** database at path (created if missing).  Returns CT_OK or a failure with
** a message in err (len bytes). */
static ct_status gpu_db_store(const char *path, const ct_cache_device *dev,
                              const ct_gen_limits *lim, const ct_problem *p,
                              const ct_gen_variant *v, char *err, size_t len) {
  char spec[CT_PROBLEM_SPEC_MAX];
  ct_problem_format(p, spec, sizeof spec);
  char *src = NULL;
  ct_status rc = ct_gen_source(p, v, &src);
  if (rc != CT_OK) {
    snprintf(err, len, "cannot generate %s", v->name);
    return rc;
  }
  ct_rt_compiled out;
  rc = ct_rt_compile(src, v->name, lim->arch, &out);
  uint64_t source_hash = ct_gen_hash(src, strlen(src), CT_GEN_HASH_SEED);
  free(src);
  if (rc != CT_OK) {
    snprintf(err, len, "NVRTC failed on %s: %.300s", v->name,
             out.log ? out.log : "");
    ct_rt_compiled_clear(&out);
    return rc;
  }
  ct_cache *c = NULL;
  rc = ct_cache_open(path, CT_CACHE_CREATE, &c, err, len);
  int64_t did = 0, pid = 0;
  if (rc == CT_OK) rc = ct_cache_device_id(c, dev, &did);
  if (rc == CT_OK)
    rc = ct_cache_problem_id(c, spec, ct_precision_name(p->precision), &pid);
  if (rc == CT_OK) {
    ct_cache_winner w;
    memset(&w, 0, sizeof w);
    w.problem_id = pid;
    w.device_id = did;
    snprintf(w.variant, sizeof w.variant, "%s", v->name);
    w.source_hash = source_hash;
    w.cubin = out.cubin;
    w.cubin_size = out.cubin_size;
    w.cubin_hash = ct_gen_hash(out.cubin, out.cubin_size, CT_GEN_HASH_SEED);
    snprintf(w.arch, sizeof w.arch, "%s", lim->arch);
    snprintf(w.nvrtc_version, sizeof w.nvrtc_version, "%s", dev->nvrtc_version);
    snprintf(w.options, sizeof w.options, "%s", ct_rt_compile_options(lim->arch));
    w.mean_ms = 1.0;
    rc = ct_cache_winner_set(c, &w);
  }
  if (rc != CT_OK && c) snprintf(err, len, "%s", ct_cache_errmsg(c));
  ct_cache_close(c);
  ct_rt_compiled_clear(&out);
  return rc;
}

#endif /* CT_GPU_DB_H */
