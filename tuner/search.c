/*
** search.c — which variant the tuner screens next (see ct_tune.h, "The
** search order").  Pure CPU logic over the enumerated variants: their
** families and parameter values, and the results recorded so far.
**
** Budgeted search, in three stages after the priors (variants the caller
** prefers, ct_tune_search_prefer: the winners of the nearest problems
** tuned on this device), screened first in the order given:
**   1. seeds: a stratified sample, about a third of the budget (sqrt(n)
**      without a count limit, as under a time budget).  Each
**      family gets a share in proportion to its size (at least one: its
**      default, the first enumerated point), spread evenly over its
**      enumeration order; the seeds are taken round-robin over the families
**      so that, under a time budget, every family is seen early, the
**      families with tensor cores first (on a large problem an FFMA
**      variant's screening alone can take a whole time budget).
**   2. hill climbing guided by a cheap model: the candidates are the
**      untried neighbours (same family, one parameter different, or two
**      where no one-parameter step between them is valid)
**      of the fastest timed variant, and the next is the one the model
**      predicts fastest (ties: enumeration order); once that neighbourhood
**      is exhausted, the second fastest's, and so on.  A faster find moves
**      the search to its own neighbourhood at once.
**   3. the rest (regions no timed variant reaches), the model's favourites
**      first, then enumeration order.
** The model, refitted on every pick, is per family and additive in log
** time: log t(v) = mu_F + sum over parameters p of e_F,p(value of p in v),
** mu_F the mean log time of the family's timed variants and e_F,p(x) the
** mean residual of those with p = x (0 while unknown).  Variants that
** failed (NAN) neither lead the search nor enter the model.  It stops once
** max_screen variants have a result.
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ct_tune.h"

struct ct_tune_search {
  size_t n;              /* variants */
  size_t max_screen;     /* results wanted */
  int budgeted;
  double *mean;          /* per variant: screened mean, NAN failed */
  unsigned char *known;  /* per variant: has a result */
  size_t n_known;
  long *seed_rank;       /* per variant: position among seeds, -1 if none */
  long *prior_rank;      /* per variant: position among priors, -1 if none */
  size_t *adj_start;     /* neighbours of i: adj[adj_start[i] .. [i+1]) */
  size_t *adj;
  /* The model: per variant its family's index and its parameters' value
  ** indices; per family, per parameter, per value index: a slot. */
  size_t nf;             /* families */
  const ct_gen_family **fam;
  int *fam_of;           /* per variant */
  int *value_index;      /* per variant, CT_GEN_MAX_PARAMS each; -1 unknown */
  double *pred;          /* per variant: predicted log time, scratch */
};

#define SEARCH_SLOTS (CT_GEN_MAX_PARAMS * CT_GEN_MAX_VALUES)

void ct_tune_search_destroy(ct_tune_search *s) {
  if (s == NULL) return;
  free(s->fam);
  free(s->fam_of);
  free(s->value_index);
  free(s->pred);
  free(s->mean);
  free(s->known);
  free(s->seed_rank);
  free(s->prior_rank);
  free(s->adj_start);
  free(s->adj);
  free(s);
}

/* 1 when one of the n variants v is family f at these parameter values. */
static int enumerated(const ct_gen_variant *v, size_t n, const ct_gen_family *f,
                      const int *values) {
  for (size_t k = 0; k < n; k++)
    if (v[k].family == f &&
        memcmp(v[k].values, values, (size_t)f->n_params * sizeof *values) == 0)
      return 1;
  return 0;
}

/* 1 when a and b (of the n variants v) are neighbours: same family, and one
** parameter apart, or two apart where neither one-parameter step between
** them is a valid variant.  The second kind bridges parameters that are
** only valid together (wg's PP=1 needs STAGES=1, which valid() prunes for
** PP=0), which one-parameter moves could never cross. */
static int neighbours(const ct_gen_variant *a, const ct_gen_variant *b,
                      const ct_gen_variant *v, size_t n) {
  const ct_gen_family *f = a->family;
  if (f != b->family || f == NULL) return 0;
  int diff = 0, at[2] = {0, 0};
  for (int p = 0; p < f->n_params; p++)
    if (a->values[p] != b->values[p]) {
      if (diff < 2) at[diff] = p;
      diff++;
    }
  if (diff == 1) return 1;
  if (diff != 2) return 0;
  int step[CT_GEN_MAX_PARAMS];
  for (int k = 0; k < 2; k++) {
    memcpy(step, a->values, sizeof step);
    step[at[k]] = b->values[at[k]];
    if (enumerated(v, n, f, step)) return 0;
  }
  return 1;
}

static ct_status build_neighbours(ct_tune_search *s, const ct_gen_variant *v) {
  size_t n = s->n, edges = 0;
  s->adj_start = calloc(n + 1, sizeof *s->adj_start);
  if (s->adj_start == NULL) return CT_ERR_NOMEM;
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; j < n; j++) edges += i != j && neighbours(&v[i], &v[j], v, n);
  s->adj = malloc((edges ? edges : 1) * sizeof *s->adj);
  if (s->adj == NULL) return CT_ERR_NOMEM;
  size_t e = 0;
  for (size_t i = 0; i < n; i++) {
    s->adj_start[i] = e;
    for (size_t j = 0; j < n; j++)
      if (i != j && neighbours(&v[i], &v[j], v, n)) s->adj[e++] = j;
  }
  s->adj_start[n] = e;
  return CT_OK;
}

/* Indexes families and parameter values for the model. */
static ct_status build_model(ct_tune_search *s, const ct_gen_variant *v) {
  size_t n = s->n;
  s->fam = calloc(n ? n : 1, sizeof *s->fam);
  s->fam_of = calloc(n ? n : 1, sizeof *s->fam_of);
  s->value_index = malloc((n ? n : 1) * CT_GEN_MAX_PARAMS * sizeof *s->value_index);
  s->pred = calloc(n ? n : 1, sizeof *s->pred);
  if (!s->fam || !s->fam_of || !s->value_index || !s->pred) return CT_ERR_NOMEM;
  for (size_t i = 0; i < n; i++) {
    size_t f = 0;
    while (f < s->nf && s->fam[f] != v[i].family) f++;
    if (f == s->nf) s->fam[s->nf++] = v[i].family;
    s->fam_of[i] = (int)f;
    for (int p = 0; p < CT_GEN_MAX_PARAMS; p++) {
      int k = -1;
      if (v[i].family && p < v[i].family->n_params)
        for (int j = 0; j < v[i].family->params[p].n_values; j++)
          if (v[i].family->params[p].values[j] == v[i].values[p]) k = j;
      s->value_index[i * CT_GEN_MAX_PARAMS + (size_t)p] = k;
    }
  }
  return CT_OK;
}

/* Fits the model on the timed results and fills s->pred (INFINITY for a
** family with no timed variant). */
static void predict(ct_tune_search *s) {
  size_t nf = s->nf ? s->nf : 1;
  double *mu = calloc(nf, sizeof *mu), *sum = calloc(nf * SEARCH_SLOTS, sizeof *sum);
  int *cnt = calloc(nf, sizeof *cnt), *scnt = calloc(nf * SEARCH_SLOTS, sizeof *scnt);
  if (!mu || !sum || !cnt || !scnt) {
    for (size_t i = 0; i < s->n; i++) s->pred[i] = 0.0; /* no model: ties */
    goto out;
  }
  for (size_t i = 0; i < s->n; i++)
    if (s->known[i] && s->mean[i] > 0) {
      mu[s->fam_of[i]] += log(s->mean[i]);
      cnt[s->fam_of[i]]++;
    }
  for (size_t f = 0; f < s->nf; f++)
    if (cnt[f]) mu[f] /= cnt[f];
  for (size_t i = 0; i < s->n; i++) {
    if (!s->known[i] || !(s->mean[i] > 0)) continue;
    size_t f = (size_t)s->fam_of[i];
    double r = log(s->mean[i]) - mu[f];
    for (int p = 0; p < CT_GEN_MAX_PARAMS; p++) {
      int k = s->value_index[i * CT_GEN_MAX_PARAMS + (size_t)p];
      if (k < 0) continue;
      sum[f * SEARCH_SLOTS + (size_t)(p * CT_GEN_MAX_VALUES + k)] += r;
      scnt[f * SEARCH_SLOTS + (size_t)(p * CT_GEN_MAX_VALUES + k)]++;
    }
  }
  for (size_t i = 0; i < s->n; i++) {
    size_t f = (size_t)s->fam_of[i];
    if (!cnt[f]) {
      s->pred[i] = INFINITY;
      continue;
    }
    double t = mu[f];
    for (int p = 0; p < CT_GEN_MAX_PARAMS; p++) {
      int k = s->value_index[i * CT_GEN_MAX_PARAMS + (size_t)p];
      size_t slot = f * SEARCH_SLOTS + (size_t)(p * CT_GEN_MAX_VALUES + (k < 0 ? 0 : k));
      if (k >= 0 && scnt[slot]) t += sum[slot] / scnt[slot];
    }
    s->pred[i] = t;
  }
out:
  free(mu);
  free(sum);
  free(cnt);
  free(scnt);
}

/* Chooses the seeds (stage 1) and numbers them in s->seed_rank. */
static ct_status choose_seeds(ct_tune_search *s, const ct_gen_variant *v) {
  size_t n = s->n;
  /* Families with tensor cores first, then the others, each group in
  ** order of first appearance; members in enumeration order. */
  const ct_gen_family **fam = calloc(n, sizeof *fam);
  size_t *size = calloc(n, sizeof *size), *quota = calloc(n, sizeof *quota);
  size_t *first = calloc(n, sizeof *first), *member = calloc(n, sizeof *member);
  ct_status rc = CT_ERR_NOMEM;
  if (!fam || !size || !quota || !first || !member) goto out;
  size_t nf = 0;
  for (int tc = 1; tc >= 0; tc--)
    for (size_t i = 0; i < n; i++) {
      if ((v[i].family->tensor_cores != 0) != tc) continue;
      size_t f = 0;
      while (f < nf && fam[f] != v[i].family) f++;
      if (f == nf) fam[nf++] = v[i].family;
    }
  for (size_t i = 0; i < n; i++) {
    size_t f = 0;
    while (fam[f] != v[i].family) f++;
    size[f]++;
  }
  /* members grouped by family: first[f] is family f's start in member[]. */
  for (size_t f = 1; f < nf; f++) first[f] = first[f - 1] + size[f - 1];
  {
    size_t *fill = calloc(nf ? nf : 1, sizeof *fill);
    if (fill == NULL) goto out;
    for (size_t i = 0; i < n; i++) {
      size_t f = 0;
      while (fam[f] != v[i].family) f++;
      member[first[f] + fill[f]++] = i;
    }
    free(fill);
  }
  /* A third of the budget; with no count (a time budget), sqrt(n). */
  size_t want = s->max_screen < n ? (s->max_screen + 2) / 3
                                  : (size_t)ceil(sqrt((double)n));
  if (want < nf) want = nf;
  if (want > s->max_screen) want = s->max_screen;
  if (want > n) want = n;
  /* Every family its default (the first families', should there be fewer
  ** seeds than families), then the rest in proportion to the families'
  ** sizes (D'Hondt: each next seed to the family with most points per
  ** seed). */
  size_t total = 0;
  for (size_t f = 0; f < nf && total < want; f++) quota[f] = 1, total++;
  while (total < want) {
    size_t best = nf;
    for (size_t f = 0; f < nf; f++)
      if (quota[f] < size[f] &&
          (best == nf || size[f] * (quota[best] + 1) > size[best] * (quota[f] + 1)))
        best = f;
    if (best == nf) break;
    quota[best]++;
    total++;
  }
  /* Round-robin over the families: every family's j-th pick in turn. */
  long rank = 0;
  for (size_t j = 0; rank < (long)total; j++)
    for (size_t f = 0; f < nf; f++)
      if (j < quota[f]) s->seed_rank[member[first[f] + j * size[f] / quota[f]]] = rank++;
  rc = CT_OK;
out:
  free(fam);
  free(size);
  free(quota);
  free(first);
  free(member);
  return rc;
}

ct_status ct_tune_search_create(const ct_gen_variant *v, size_t n,
                                int budgeted, size_t max_screen,
                                ct_tune_search **out) {
  if (out) *out = NULL;
  if (out == NULL || (v == NULL && n > 0)) return CT_ERR_INVALID_ARG;
  ct_tune_search *s = calloc(1, sizeof *s);
  if (s == NULL) return CT_ERR_NOMEM;
  s->n = n;
  s->budgeted = budgeted != 0;
  s->max_screen = budgeted && max_screen > 0 && max_screen < n ? max_screen : n;
  s->mean = malloc((n ? n : 1) * sizeof *s->mean);
  s->known = calloc(n ? n : 1, 1);
  s->seed_rank = malloc((n ? n : 1) * sizeof *s->seed_rank);
  s->prior_rank = malloc((n ? n : 1) * sizeof *s->prior_rank);
  ct_status rc = CT_ERR_NOMEM;
  if (s->mean && s->known && s->seed_rank && s->prior_rank) {
    for (size_t i = 0; i < n; i++) {
      s->mean[i] = NAN;
      s->seed_rank[i] = s->prior_rank[i] = -1;
    }
    rc = CT_OK;
    if (s->budgeted) {
      rc = choose_seeds(s, v);
      if (rc == CT_OK) rc = build_neighbours(s, v);
      if (rc == CT_OK) rc = build_model(s, v);
    }
  }
  if (rc != CT_OK) {
    ct_tune_search_destroy(s);
    return rc;
  }
  *out = s;
  return CT_OK;
}

void ct_tune_search_result(ct_tune_search *s, size_t i, double mean_ms) {
  if (s == NULL || i >= s->n) return;
  if (!s->known[i]) s->n_known++;
  s->known[i] = 1;
  s->mean[i] = mean_ms;
}

int ct_tune_search_budgeted(const ct_tune_search *s) {
  return s != NULL && s->budgeted;
}

size_t ct_tune_search_prefer(ct_tune_search *s, const size_t *idx, size_t k) {
  if (s == NULL || !s->budgeted || (idx == NULL && k > 0)) return 0;
  size_t ranked = 0;
  for (size_t j = 0; j < k; j++)
    if (idx[j] < s->n && s->prior_rank[idx[j]] < 0) s->prior_rank[idx[j]] = (long)ranked++;
  return ranked;
}

/* The pick of the rules above, treating taken[] as tried; -1 if none.
** s->pred must be fresh (predict). */
static long pick(const ct_tune_search *s, const unsigned char *taken) {
  long best = -1;
  if (!s->budgeted) {
    for (size_t i = 0; i < s->n; i++)
      if (!taken[i]) return (long)i;
    return -1;
  }
  /* 0. The untried prior of lowest rank, then 1. the untried seed of
  ** lowest rank. */
  for (size_t i = 0; i < s->n; i++)
    if (!taken[i] && s->prior_rank[i] >= 0 &&
        (best < 0 || s->prior_rank[i] < s->prior_rank[best]))
      best = (long)i;
  if (best >= 0) return best;
  for (size_t i = 0; i < s->n; i++)
    if (!taken[i] && s->seed_rank[i] >= 0 &&
        (best < 0 || s->seed_rank[i] < s->seed_rank[best]))
      best = (long)i;
  if (best >= 0) return best;
  /* 2. Among the untried neighbours of the fastest timed variant that has
  ** any, the model's favourite. */
  double floor = -INFINITY;
  for (;;) {
    long lead = -1;
    for (size_t j = 0; j < s->n; j++)
      if (s->known[j] && s->mean[j] > floor &&
          (lead < 0 || s->mean[j] < s->mean[lead]))
        lead = (long)j; /* NAN never compares greater: failed never lead */
    if (lead < 0) break;
    for (size_t e = s->adj_start[lead]; e < s->adj_start[lead + 1]; e++) {
      size_t i = s->adj[e];
      if (!taken[i] && (best < 0 || s->pred[i] < s->pred[best] ||
                        (s->pred[i] == s->pred[best] && (long)i < best)))
        best = (long)i;
    }
    if (best >= 0) return best;
    floor = s->mean[lead];
  }
  /* 3. The rest: the model's favourite, else enumeration order. */
  for (size_t i = 0; i < s->n; i++)
    if (!taken[i] && (best < 0 || s->pred[i] < s->pred[best])) best = (long)i;
  return best;
}

long ct_tune_search_next(ct_tune_search *s) {
  if (s == NULL || s->n_known >= s->max_screen) return -1;
  if (s->budgeted) predict(s);
  return pick(s, s->known);
}

size_t ct_tune_search_peek(ct_tune_search *s, size_t *out, size_t k) {
  if (s == NULL || out == NULL || s->n_known >= s->max_screen) return 0;
  if (s->budgeted) predict(s);
  size_t left = s->max_screen - s->n_known;
  if (k > left) k = left;
  unsigned char *taken = malloc(s->n ? s->n : 1);
  if (taken == NULL) return 0;
  memcpy(taken, s->known, s->n);
  size_t got = 0;
  while (got < k) {
    long i = pick(s, taken);
    if (i < 0) break;
    taken[i] = 1;
    out[got++] = (size_t)i;
  }
  free(taken);
  return got;
}
