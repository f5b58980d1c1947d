/*
** lookup.c — which variant runs for a problem (see ct_lookup.h): the exact
** tuned entry, the nearest tuned problem's winner, or the default.  Reads
** the database, the generator and NVRTC's version only; no GPU.
*/
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ct_lookup.h"
#include "ct_nvrtc.h"

/* ---------------------------------------------------------------------- */
/* Reason text                                                             */

/* Appends printf-style text to buf (len bytes, NUL-terminated), truncating. */
__attribute__((format(printf, 3, 4)))
static void reason_add(char *buf, size_t len, const char *fmt, ...) {
  size_t used = strnlen(buf, len);
  if (used + 1 >= len) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf + used, len - used, fmt, ap);
  va_end(ap);
}

/* Why ct_gen_variant_from_name refused a stored name. */
static const char *refusal(ct_status rc) {
  switch (rc) {
  case CT_ERR_PARSE: return "the name does not parse";
  case CT_ERR_NOT_FOUND: return "no such family";
  case CT_ERR_UNSUPPORTED:
    return "not a point of this build's search space, or not valid for this "
           "problem on this device";
  default: return ct_status_string(rc);
  }
}

/* ---------------------------------------------------------------------- */
/* The tuned problems of a device                                          */

ct_status ct_rt_tuned_load(ct_cache *cache, const ct_cache_device *dev,
                           ct_rt_tuned_list *out, char *err, size_t len) {
  if (err && len) err[0] = '\0';
  if (out == NULL) return CT_ERR_INVALID_ARG;
  memset(out, 0, sizeof *out);
  out->loaded = 1;
  if (cache == NULL || dev == NULL) return out->status = CT_ERR_INVALID_ARG;

  int64_t device_id = 0;
  ct_status rc = ct_cache_device_id(cache, dev, &device_id);
  if (rc == CT_ERR_NOT_FOUND) return out->status = CT_OK; /* nothing here */
  if (rc != CT_OK) {
    if (err && len) snprintf(err, len, "%s", ct_cache_errmsg(cache));
    return out->status = rc;
  }
  ct_cache_entry *rows = NULL;
  size_t n = 0;
  rc = ct_cache_list(cache, &rows, &n);
  if (rc != CT_OK) {
    if (err && len) snprintf(err, len, "%s", ct_cache_errmsg(cache));
    return out->status = rc;
  }
  if (n > 0) {
    out->items = malloc(n * sizeof *out->items);
    if (out->items == NULL) {
      free(rows);
      if (err && len) snprintf(err, len, "out of host memory");
      return out->status = CT_ERR_NOMEM;
    }
  }
  for (size_t i = 0; i < n; i++) {
    const ct_cache_entry *e = &rows[i];
    if (e->device_id != device_id || e->variant[0] == '\0') continue;
    ct_rt_tuned *t = &out->items[out->n];
    memset(t, 0, sizeof *t);
    if (ct_problem_parse(e->spec, &t->problem, NULL, 0) != CT_OK) {
      out->n_skipped++;
      continue;
    }
    snprintf(t->spec, sizeof t->spec, "%s", e->spec);
    snprintf(t->variant, sizeof t->variant, "%s", e->variant);
    out->n++;
  }
  free(rows);
  return out->status = CT_OK;
}

void ct_rt_tuned_free(ct_rt_tuned_list *l) {
  if (l == NULL) return;
  free(l->items);
  memset(l, 0, sizeof *l);
}

/* ---------------------------------------------------------------------- */
/* Distance                                                                */

/* |ln(a/b)| for a, b >= 1. */
static double log_ratio(double a, double b) { return fabs(log(a / b)); }

double ct_rt_problem_distance(const ct_problem *a, const ct_problem *b) {
  if (a->precision != b->precision) return INFINITY;
  /* Another grouping is another computation: no winner carries over. */
  if (a->groups != b->groups) return INFINITY;
  int structure = 0;
  if (a->layout != b->layout) structure += 64;
  if (a->r != b->r || a->s != b->s) structure += 32;
  if (a->stride_h != b->stride_h || a->stride_w != b->stride_w) structure += 16;
  if (a->dil_h != b->dil_h || a->dil_w != b->dil_w) structure += 8;
  if (a->c != b->c) structure += 4;
  if (a->pad_h != b->pad_h || a->pad_w != b->pad_w) structure += 2;
  if (a->bias != b->bias || a->act != b->act || a->residual != b->residual) structure += 1;
  int64_t pa, qa, pb, qb;
  ct_problem_output(a, &pa, &qa);
  ct_problem_output(b, &pb, &qb);
  double ma = (double)a->n * (double)pa * (double)qa;
  double mb = (double)b->n * (double)pb * (double)qb;
  if (ma < 1) ma = 1;
  if (mb < 1) mb = 1;
  double size = log_ratio(ma, mb) + log_ratio((double)a->k, (double)b->k) +
                log_ratio((double)a->c, (double)b->c);
  return 100.0 * structure + size;
}

/* ---------------------------------------------------------------------- */
/* Choosing                                                                */

void ct_rt_choice_clear(ct_rt_choice *c) {
  if (c == NULL) return;
  free(c->cubin);
  memset(c, 0, sizeof *c);
}

/* Why a stored cubin may not be loaded for variant source hash `hash`:
** NULL when every recorded field matches this build, else a phrase. */
static const char *cubin_mismatch(const ct_cache_winner *win, uint64_t hash,
                                  const ct_cache_device *dev,
                                  const ct_gen_limits *lim) {
  const char *options = ct_rt_compile_options(lim->arch);
  if (win->source_hash != hash)
    return "its source hash differs from this build's source for the "
           "variant (templates changed since tuning, or a damaged entry)";
  if (strcmp(win->arch, lim->arch) != 0)
    return "it was compiled for another architecture";
  if (strcmp(win->nvrtc_version, dev->nvrtc_version) != 0)
    return "it was compiled by another NVRTC version";
  if (options == NULL || strcmp(win->options, options) != 0)
    return "it was compiled with other NVRTC options";
  if (win->cubin == NULL || win->cubin_size == 0) return "it is empty";
  return NULL;
}

/* Records a database read that failed (rc) in out->db_error and
** out->db_message, unless an earlier one is recorded. */
static void note_db_error(ct_cache *cache, ct_status rc, ct_rt_choice *out) {
  if (out->db_error != CT_OK) return;
  out->db_error = rc;
  snprintf(out->db_message, sizeof out->db_message, "%s", ct_cache_errmsg(cache));
}

/* The source hash of variant v for p into *hash; CT_OK, CT_ERR_NOMEM or
** another generator status. */
static ct_status variant_hash(const ct_problem *p, const ct_gen_variant *v,
                              uint64_t *hash) {
  char *src = NULL;
  ct_status rc = ct_gen_source(p, v, &src);
  if (rc != CT_OK) return rc;
  *hash = ct_gen_hash(src, strlen(src), CT_GEN_HASH_SEED);
  free(src);
  return CT_OK;
}

/* For a NEAREST choice: the nearest problem's winner `win` when its
** stored cubin is of out->variant's very source for p (a shape-generic
** variant's source is the same for every problem with the same plan
** defines) and of this build: moves that cubin into out->cubin and says so
** in out->reason, so that no NVRTC compile is needed.  Leaves out alone
** otherwise (the runtime then tries the compile cache, then NVRTC).
** Returns CT_ERR_NOMEM or CT_OK. */
static ct_status attach_winner_cubin(const ct_cache_device *dev, const ct_gen_limits *lim,
                                     const ct_problem *p, ct_cache_winner *win,
                                     ct_rt_choice *out) {
  if (strcmp(win->variant, out->variant.name) != 0) return CT_OK;
  uint64_t hash;
  ct_status rc = variant_hash(p, &out->variant, &hash);
  if (rc != CT_OK) return rc == CT_ERR_NOMEM ? rc : CT_OK;
  if (cubin_mismatch(win, hash, dev, lim) != NULL) return CT_OK;
  out->cubin = win->cubin; /* ownership moves to the choice */
  out->cubin_size = win->cubin_size;
  win->cubin = NULL;
  reason_add(out->reason, sizeof out->reason,
             "; the same source as that problem's (the variant is shape-generic): "
             "its stored cubin, no NVRTC");
  return CT_OK;
}

/* Step 1: the exact entry.  CT_OK with *out filled when it serves;
** CT_ERR_NOT_FOUND (a note in out->reason) when the lookup goes on;
** CT_ERR_NOMEM. */
static ct_status choose_exact(ct_cache *cache, const ct_cache_device *dev,
                              const ct_gen_limits *lim, const ct_problem *p,
                              ct_rt_choice *out) {
  char spec[CT_PROBLEM_SPEC_MAX];
  ct_status rc = ct_problem_format(p, spec, sizeof spec);
  if (rc != CT_OK) return CT_ERR_INVALID_PROBLEM;
  ct_cache_winner win;
  rc = ct_cache_winner_get(cache, spec, dev, &win);
  if (rc == CT_ERR_NOMEM) return rc;
  if (rc == CT_ERR_NOT_FOUND) {
    reason_add(out->reason, sizeof out->reason,
               "no tuned entry for this problem on this device");
    return CT_ERR_NOT_FOUND;
  }
  if (rc != CT_OK) {
    out->db_error = rc;
    snprintf(out->db_message, sizeof out->db_message, "%s",
             ct_cache_errmsg(cache));
    reason_add(out->reason, sizeof out->reason,
               "the tuned entry for this problem was passed over (%s: %s)",
               ct_status_string(rc), out->db_message);
    return CT_ERR_NOT_FOUND;
  }
  ct_gen_variant v;
  rc = ct_gen_variant_from_name(p, lim, win.variant, &v);
  if (rc != CT_OK) {
    reason_add(out->reason, sizeof out->reason,
               "the tuned winner '%.*s' was passed over: %s",
               (int)(CT_GEN_NAME_MAX - 1), win.variant, refusal(rc));
    ct_cache_winner_clear(&win);
    return CT_ERR_NOT_FOUND;
  }
  uint64_t hash;
  rc = variant_hash(p, &v, &hash);
  if (rc != CT_OK) {
    ct_cache_winner_clear(&win);
    return rc == CT_ERR_NOMEM ? rc : CT_ERR_NOT_FOUND;
  }
  out->variant = v;
  const char *why = cubin_mismatch(&win, hash, dev, lim);
  if (why == NULL) {
    out->path = CT_PATH_TUNED_CUBIN;
    out->cubin = win.cubin; /* ownership moves to the choice */
    out->cubin_size = win.cubin_size;
    win.cubin = NULL;
    reason_add(out->reason, sizeof out->reason,
               "tuned winner for this problem on this device; its stored "
               "cubin matches this build (source hash, options, %s, NVRTC %s)",
               lim->arch, dev->nvrtc_version);
  } else {
    out->path = CT_PATH_TUNED_COMPILED;
    reason_add(out->reason, sizeof out->reason,
               "tuned winner for this problem on this device; its stored "
               "cubin was not used: %s", why);
  }
  ct_cache_winner_clear(&win);
  return CT_OK;
}

static int ranked_cmp(const void *pa, const void *pb) {
  const ct_rt_ranked *a = pa, *b = pb;
  if (a->distance < b->distance) return -1;
  if (a->distance > b->distance) return 1;
  return a->index < b->index ? -1 : a->index > b->index;
}

ct_status ct_rt_tuned_rank(const ct_rt_tuned_list *l, const ct_problem *p,
                           double max_distance, ct_rt_ranked **out, size_t *n) {
  if (out) *out = NULL;
  if (n) *n = 0;
  if (l == NULL || p == NULL || out == NULL || n == NULL) return CT_ERR_INVALID_ARG;
  if (l->n == 0) return CT_OK;
  char spec[CT_PROBLEM_SPEC_MAX];
  ct_problem_format(p, spec, sizeof spec);
  ct_rt_ranked *order = malloc(l->n * sizeof *order);
  if (order == NULL) return CT_ERR_NOMEM;
  size_t k = 0;
  for (size_t i = 0; i < l->n; i++) {
    const ct_rt_tuned *t = &l->items[i];
    if (strcmp(t->spec, spec) == 0) continue; /* the exact entry, passed over */
    const double d = ct_rt_problem_distance(p, &t->problem);
    if (!(d < max_distance)) continue; /* INFINITY (another precision) never is */
    order[k].distance = d;
    order[k++].index = i;
  }
  if (k == 0) {
    free(order);
    return CT_OK;
  }
  qsort(order, k, sizeof *order, ranked_cmp);
  *out = order;
  *n = k;
  return CT_OK;
}

/* Step 2: the nearest tuned problem whose winner is valid for p.  CT_OK
** with *out filled, CT_ERR_NOT_FOUND (a note added), CT_ERR_NOMEM. */
static ct_status choose_nearest(ct_cache *cache, const ct_cache_device *dev,
                                const ct_gen_limits *lim, const ct_problem *p,
                                ct_rt_tuned_list *tuned, ct_rt_choice *out) {
  if (!tuned->loaded) {
    char err[256];
    ct_rt_tuned_load(cache, dev, tuned, err, sizeof err);
    if (tuned->status != CT_OK) {
      if (out->db_error == CT_OK) {
        out->db_error = tuned->status;
        snprintf(out->db_message, sizeof out->db_message, "%s", err);
      }
      reason_add(out->reason, sizeof out->reason,
                 "; the tuned problems could not be read (%s: %s)",
                 ct_status_string(tuned->status), err);
    }
  }
  if (tuned->status == CT_ERR_NOMEM) return CT_ERR_NOMEM;
  if (tuned->status != CT_OK) return CT_ERR_NOT_FOUND;

  ct_rt_ranked *order = NULL;
  size_t n = 0;
  if (ct_rt_tuned_rank(tuned, p, INFINITY, &order, &n) == CT_ERR_NOMEM) return CT_ERR_NOMEM;
  if (n == 0) {
    reason_add(out->reason, sizeof out->reason,
               "; no other problem is tuned at %s on this device",
               ct_precision_name(p->precision));
    return CT_ERR_NOT_FOUND;
  }
  for (size_t j = 0; j < n; j++) {
    const ct_rt_tuned *t = &tuned->items[order[j].index];
    ct_gen_variant v;
    if (ct_gen_variant_from_name(p, lim, t->variant, &v) != CT_OK) continue;
    out->path = CT_PATH_NEAREST;
    out->variant = v;
    snprintf(out->source, sizeof out->source, "%s", t->spec);
    reason_add(out->reason, sizeof out->reason,
               "; nearest tuned problem %s (distance %.2f, %zu of %zu tuned "
               "problems tried): its winner %s is valid for this problem",
               t->spec, order[j].distance, j + 1, n, v.name);
    free(order);
    ct_cache_winner win;
    ct_status rc = ct_cache_winner_get(cache, t->spec, dev, &win);
    if (rc == CT_ERR_NOMEM) return rc;
    if (rc != CT_OK) {
      if (rc != CT_ERR_NOT_FOUND) note_db_error(cache, rc, out);
      return CT_OK;
    }
    rc = attach_winner_cubin(dev, lim, p, &win, out);
    ct_cache_winner_clear(&win);
    return rc;
  }
  free(order);
  reason_add(out->reason, sizeof out->reason,
             "; none of the winners of the %zu other tuned %s problems on "
             "this device is valid for this problem",
             n, ct_precision_name(p->precision));
  return CT_ERR_NOT_FOUND;
}

ct_status ct_rt_choice_default(ct_rt_choice *c, const ct_problem *p,
                               const ct_gen_limits *lim, const char *why) {
  char reason[CT_RT_REASON_MAX], db_message[sizeof c->db_message];
  ct_status db_error = c->db_error;
  snprintf(reason, sizeof reason, "%s", c->reason);
  snprintf(db_message, sizeof db_message, "%s", c->db_message);
  ct_rt_choice_clear(c);
  snprintf(c->reason, sizeof c->reason, "%s", reason);
  c->db_error = db_error;
  snprintf(c->db_message, sizeof c->db_message, "%s", db_message);
  if (why && why[0])
    reason_add(c->reason, sizeof c->reason, "%s%s", c->reason[0] ? "; " : "",
               why);
  ct_status rc = ct_gen_default_variant(p, lim, &c->variant);
  if (rc != CT_OK) {
    reason_add(c->reason, sizeof c->reason,
               "%sno default variant serves this problem on this device (%s)",
               c->reason[0] ? "; " : "", ct_status_string(rc));
    return CT_ERR_UNSUPPORTED;
  }
  c->path = CT_PATH_DEFAULT;
  reason_add(c->reason, sizeof c->reason, "%sdefault variant",
             c->reason[0] ? "; " : "");
  return CT_OK;
}

ct_status ct_rt_choose(ct_cache *cache, const ct_cache_device *dev,
                       const ct_gen_limits *lim, const ct_problem *p,
                       ct_rt_tuned_list *tuned, ct_rt_choice *out) {
  if (out == NULL) return CT_ERR_INVALID_ARG;
  memset(out, 0, sizeof *out);
  if (dev == NULL || lim == NULL || p == NULL) return CT_ERR_INVALID_ARG;
  if (ct_problem_validate(p, NULL, 0) != CT_OK) return CT_ERR_INVALID_PROBLEM;

  if (cache == NULL)
    return ct_rt_choice_default(out, p, lim, "no tuning database");
  ct_status rc = choose_exact(cache, dev, lim, p, out);
  if (rc != CT_ERR_NOT_FOUND) return rc;
  if (tuned != NULL) {
    rc = choose_nearest(cache, dev, lim, p, tuned, out);
    if (rc != CT_ERR_NOT_FOUND) return rc;
  }
  return ct_rt_choice_default(out, p, lim, NULL);
}
