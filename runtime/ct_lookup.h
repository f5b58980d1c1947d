/*
** ct_lookup.h — which variant the runtime runs for a problem, decided from
** the tuning database without touching a GPU.
**
** The database is untrusted input: every name, spec and hash read from it
** is checked before use, and a variant is only ever rebuilt through
** ct_gen_variant_from_name for the problem at hand, whose family validity
** check guards the shapes it accepts.  The order (convtune.h, ct_forward):
**   1. the exact problem's winner on this device: its stored cubin when
**      the recorded source hash, compile options, architecture and NVRTC
**      version equal this build's (CT_PATH_TUNED_CUBIN), else the same
**      variant, to be recompiled (CT_PATH_TUNED_COMPILED);
**   2. the nearest tuned problem of the same precision on this device
**      (ct_rt_problem_distance) whose winner is valid for the problem
**      (CT_PATH_NEAREST);
**   3. the generator's default variant (CT_PATH_DEFAULT).
** For 2. the nearest winner's own stored cubin is attached
** (ct_rt_choice.cubin) when it is of the variant's very source for the
** problem (a shape-generic variant); else the runtime looks the source up
** in the compile cache, then compiles it.
** A damaged exact entry (its cubin fails its hash, its variant is not a
** valid variant here) is passed over, never half-used.
**
** What the checks cannot see: a cubin that is not what its recorded source
** hash says (the hashes are integrity checks, not signatures).  A file
** written on purpose to pass them can run any kernel it holds; a tuning
** database is as trusted as a shared library the process loads.
**
** Threading: none of these functions locks; the caller serialises calls
** that share a ct_cache handle or a ct_rt_tuned_list.
*/
#ifndef CT_LOOKUP_H
#define CT_LOOKUP_H

#include <stddef.h>

#include "convtune.h"
#include "ct_cache.h"
#include "ct_gen.h"

#define CT_RT_REASON_MAX 640 /* a choice's reason text, NUL included */

/* One tuned problem of this device, a candidate for the nearest fallback. */
typedef struct ct_rt_tuned {
  ct_problem problem;             /* parsed from spec */
  char spec[CT_PROBLEM_SPEC_MAX]; /* canonical spec text, as stored */
  char variant[CT_GEN_NAME_MAX];  /* its winner's variant name, as stored */
} ct_rt_tuned;

/* The tuned problems of one device, read once. */
typedef struct ct_rt_tuned_list {
  int loaded;         /* 1 once ct_rt_tuned_load ran (even if it failed) */
  ct_status status;   /* what reading gave: CT_OK, or the failure */
  ct_rt_tuned *items; /* malloc'd, n of them */
  size_t n;
  size_t n_skipped;   /* rows whose spec did not parse (damaged rows) */
} ct_rt_tuned_list;

/* Reads, into *out, every problem with a winner on the device matching
** every field of *dev.  Rows whose spec does not parse are skipped and
** counted.  A device the database does not know gives an empty list.
** Sets out->loaded; out->status is the return value.  Returns CT_OK,
** CT_ERR_INVALID_ARG, CT_ERR_NOMEM, or the cache's CT_ERR_DB /
** CT_ERR_DB_CORRUPT (message in err, if not NULL, len bytes). */
ct_status ct_rt_tuned_load(ct_cache *cache, const ct_cache_device *dev,
                           ct_rt_tuned_list *out, char *err, size_t len);

/* Frees the list and zeroes it; NULL is a no-op. */
void ct_rt_tuned_free(ct_rt_tuned_list *l);

/* How far apart two problems are for borrowing a winner; smaller is nearer.
** INFINITY when the precisions differ (a winner is only borrowed under the
** precision it met) or the groups do (another grouping is another
** computation, and only some families run groups).  Lexicographic, as one
** double: first the structure the kernels specialise on, by weight (layout 64; kernel R,S 32; stride
** 16; dilation 8; C 4; padding 2; bias or activation 1) times 100, then the
** relative size,
** |ln(M/M')| + |ln(K/K')| + |ln(C/C')| with M = N*P*Q output pixels (each
** term < 22 for valid problems, so the size never outweighs a structural
** difference).  0 for equal problems.  Symmetric.  Both problems must be
** valid. */
double ct_rt_problem_distance(const ct_problem *a, const ct_problem *b);

/* One problem of a ct_rt_tuned_list (index) and its distance to another. */
typedef struct ct_rt_ranked {
  double distance;
  size_t index;
} ct_rt_ranked;

/* The problems of l other than p itself (an entry stored under p's
** canonical spec) whose distance to p is below max_distance (at most
** INFINITY: then every one of p's precision), nearest first (ties: list
** order), as a malloc'd array *out of *n (NULL when none) that the caller
** frees.  Returns CT_OK, CT_ERR_INVALID_ARG or CT_ERR_NOMEM. */
ct_status ct_rt_tuned_rank(const ct_rt_tuned_list *l, const ct_problem *p,
                           double max_distance, ct_rt_ranked **out, size_t *n);

/* What the runtime should run for a problem. */
typedef struct ct_rt_choice {
  ct_path path;                   /* TUNED_CUBIN, TUNED_COMPILED, NEAREST
                                  ** or DEFAULT */
  ct_gen_variant variant;         /* valid for the problem on the device */
  void *cubin;                    /* TUNED_CUBIN: the stored cubin; NEAREST:
                                  ** the nearest winner's, when it is of the
                                  ** variant's very source for this problem
                                  ** (a shape-generic variant); else NULL;
                                  ** owned */
  size_t cubin_size;
  char source[CT_PROBLEM_SPEC_MAX]; /* NEAREST: the tuned problem whose
                                  ** winner is used; "" otherwise */
  char reason[CT_RT_REASON_MAX];  /* one line: the path and why */
  ct_status db_error;             /* a database read that failed on the
                                  ** way (damaged entry, SQLite error);
                                  ** CT_OK when none */
  char db_message[256];           /* its message, "" when none */
} ct_rt_choice;

/* Decides what runs for the valid problem *p on the device described by
** *dev and *lim.  cache may be NULL (no database: the default).  tuned is
** the nearest candidates' list, read from cache on first need and kept by
** the caller across calls (may be NULL: no nearest fallback).  Failures to
** read the database are not errors: they are noted in out->reason and the
** lookup goes on down the order.  *out is always initialised; pass it to
** ct_rt_choice_clear.  Returns CT_OK, CT_ERR_INVALID_ARG,
** CT_ERR_INVALID_PROBLEM, CT_ERR_NOMEM, or CT_ERR_UNSUPPORTED when not
** even the default variant serves the problem on this device (out->reason
** says why). */
ct_status ct_rt_choose(ct_cache *cache, const ct_cache_device *dev,
                       const ct_gen_limits *lim, const ct_problem *p,
                       ct_rt_tuned_list *tuned, ct_rt_choice *out);

/* Frees the choice's cubin and zeroes it; NULL is a no-op. */
void ct_rt_choice_clear(ct_rt_choice *c);

/* Falls back from a choice whose variant could not be loaded or compiled:
** replaces *c with the default variant for *p, keeping the reason text and
** the database error, and appending "; <why>; default variant" (why may be
** NULL).  Returns CT_OK or
** CT_ERR_UNSUPPORTED (no default variant; c->reason says so). */
ct_status ct_rt_choice_default(ct_rt_choice *c, const ct_problem *p,
                               const ct_gen_limits *lim, const char *why);

#endif /* CT_LOOKUP_H */
