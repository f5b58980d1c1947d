/*
** ct_cache.h — the tuning database: an SQLite file holding devices,
** problems, every tuning trial and the winner per (problem, device) with its
** cubin.  Internal to convtune (the tuner and the runtime use it); it never
** touches a GPU.
**
** A ct_cache is one SQLite connection.  Use a handle from one thread at a
** time; open one handle per thread.  Several handles, in one process or in
** several, may write the same file at once: the file is in WAL mode, every
** connection waits up to CT_CACHE_BUSY_MS for a lock, and each write is its
** own short transaction, so concurrent tuners lose nothing.
**
** THE CACHE KEY.  A winner is found by, in this order:
**   1. the problem's canonical spec text (ct_problem_format; it already
**      names the precision, e.g. "...,bias=1,prec=tf32"),
**   2. the device: name, cc_major, cc_minor, sm_count, driver_version,
**      nvrtc_version, arch — every field matched exactly.
** What invalidates an entry:
**   - another device, driver or NVRTC version: the key no longer matches,
**     ct_cache_winner_get says CT_ERR_NOT_FOUND and the runtime falls back;
**   - another schema version: older files are migrated on a writable open,
**     newer ones are refused (CT_ERR_UNSUPPORTED);
**   - another source hash: the runtime regenerates the winner's source from
**     its variant name and compares ct_gen_hash of it with source_hash; a
**     difference means the templates changed since tuning: stale entry.
** The runtime must not load a cubin whose hash, arch or NVRTC version differ
** from what it expects: ct_cache_winner_get checks the cubin's bytes against
** cubin_hash (CT_ERR_DB_CORRUPT on a mismatch); the runtime compares the
** winner's arch and nvrtc_version with its own compiler's.
**
** SCHEMA.  PRAGMA user_version is the schema version; version N means the
** first N scripts of the migration table (cache.c) were applied, each in one
** transaction that also sets user_version.  PRAGMA application_id marks the
** file as ours (CT_CACHE_APPLICATION_ID) and table meta holds
** ('application', 'convtune').
**   1: meta, devices, problems, trials, winners.
**   2: index trials_by_key on trials(problem_id, device_id, variant,
**      source_hash) for ct_cache_trials / ct_cache_trial_find, and column
**      winners.options (the NVRTC options the cubin was compiled with).
** 64-bit hashes are stored as INTEGER holding the same 64 bits (values above
** INT64_MAX read back negative in SQL).  NaN measurements are stored as NULL.
**
** Errors: every function returns a ct_status and, on failure, keeps a
** message naming the database path for ct_cache_errmsg.  SQLite errors give
** CT_ERR_DB, a damaged or foreign file CT_ERR_DB_CORRUPT.
*/
#ifndef CT_CACHE_H
#define CT_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "convtune.h"
#include "ct_gen.h"

typedef struct ct_cache ct_cache;

#define CT_CACHE_READONLY 1 /* open read-only; missing file -> CT_ERR_NOT_FOUND */
#define CT_CACHE_CREATE 2   /* create file and parent directories if missing */

#define CT_CACHE_SCHEMA_VERSION 2          /* the version this build writes */
#define CT_CACHE_APPLICATION_ID 0x43544442 /* "CTDB" in PRAGMA application_id */
#define CT_CACHE_BUSY_MS 5000              /* lock wait per statement */

/* ---------------------------------------------------------------------- */
/* Opening and closing                                                     */

/* Writes the default database path into buf (len bytes): $CONVTUNE_DB if
** set and non-empty, else $XDG_CACHE_HOME/convtune/tuning.db if that is an
** absolute path, else $HOME/.cache/convtune/tuning.db.  Creates nothing.
** Returns CT_OK, CT_ERR_INVALID_ARG (buf NULL, or the path does not fit in
** len bytes) or CT_ERR_IO (none of the variables gives a path). */
ct_status ct_cache_default_path(char *buf, size_t len);

/* Opens the tuning database at path.  flags is 0 (read-write, the file must
** exist), CT_CACHE_READONLY or CT_CACHE_CREATE (read-write; the file and its
** parent directories are made if missing), not both.
**
** A writable open puts the file in WAL mode and migrates an older schema (or
** an empty file) to CT_CACHE_SCHEMA_VERSION.  A read-only open changes
** nothing: it reads schema versions 1..CT_CACHE_SCHEMA_VERSION as they are
** (on a version 1 file, winners read back with options ""), and writes
** through it fail with CT_ERR_UNSUPPORTED.  A read-only open of a file in
** a directory it cannot write (where SQLite cannot make the WAL's -shm) and
** with no -wal file reads it as immutable.  A file is checked before
** anything is written to it, so a foreign file is left untouched.
**
** On success *out is a new handle for ct_cache_close.  On failure *out is
** NULL and err (if not NULL, errlen bytes, NUL-terminated) gets a message
** naming the path.  Returns CT_OK, or
**   CT_ERR_INVALID_ARG  path or out NULL, unknown or conflicting flags;
**   CT_ERR_NOT_FOUND    no file (and no CT_CACHE_CREATE), or a read-only
**                       open of an empty file: nothing is tuned;
**   CT_ERR_DB_CORRUPT   not an SQLite file, or SQLite but not a convtune
**                       database (no application id / meta), or damaged;
**   CT_ERR_UNSUPPORTED  the schema is newer than this build knows;
**   CT_ERR_IO           a parent directory cannot be made;
**   CT_ERR_DB, CT_ERR_NOMEM. */
ct_status ct_cache_open(const char *path, int flags, ct_cache **out,
                        char *err, size_t errlen);

/* Closes the handle.  ct_cache_close(NULL) is a harmless no-op. */
void ct_cache_close(ct_cache *c);

/* The message of the last failure on c ("" if none); c NULL gives a static
** message.  Valid until the next call on c. */
const char *ct_cache_errmsg(ct_cache *c);

/* The schema version of the open file (CT_CACHE_SCHEMA_VERSION after a
** writable open); 0 when c is NULL. */
int ct_cache_schema_version(ct_cache *c);

/* Creates or migrates the database at path to exactly schema `version`
** (1..CT_CACHE_SCHEMA_VERSION) and closes it; for tests of migrations and
** for migrating a file on purpose.  Never downgrades.  Returns CT_OK,
** CT_ERR_INVALID_ARG (version out of range), CT_ERR_UNSUPPORTED (the file is
** already newer than version), or an error of ct_cache_open. */
ct_status ct_cache_migrate_to(const char *path, int version, char *err,
                              size_t errlen);

/* Runs PRAGMA integrity_check and checks every stored cubin against its
** hash.  Returns CT_OK, CT_ERR_DB_CORRUPT (ct_cache_errmsg says what is
** wrong), CT_ERR_INVALID_ARG or CT_ERR_DB. */
ct_status ct_cache_check(ct_cache *c);

/* ---------------------------------------------------------------------- */
/* Devices and problems                                                    */

typedef struct ct_cache_device {
  char name[128];          /* "NVIDIA H200" */
  int cc_major, cc_minor;  /* compute capability */
  int sm_count;            /* multiprocessors */
  int driver_version;      /* cuDriverGetVersion, e.g. 12080 */
  char nvrtc_version[16];  /* "12.8" */
  char arch[16];           /* NVRTC target, "sm_90a" */
} ct_cache_device;

/* Finds the device with all fields equal to *d, inserting it if absent
** (safe against a concurrent insert of the same device), and sets *id.  On
** a read-only handle it only finds.  Returns CT_OK, CT_ERR_INVALID_ARG,
** CT_ERR_NOT_FOUND (read-only and absent), CT_ERR_DB. */
ct_status ct_cache_device_id(ct_cache *c, const ct_cache_device *d,
                             int64_t *id);

/* Reads device device_id into *out.  Returns CT_OK, CT_ERR_INVALID_ARG,
** CT_ERR_NOT_FOUND, CT_ERR_DB. */
ct_status ct_cache_device_get(ct_cache *c, int64_t device_id,
                              ct_cache_device *out);

/* Finds the problem whose spec text equals spec, inserting it with
** precision ("tf32" / "fp32", shorter than 8 bytes) if absent, and sets
** *id.  spec must be shorter than CT_PROBLEM_SPEC_MAX.  On a read-only handle
** it only finds.  Returns CT_OK, CT_ERR_INVALID_ARG, CT_ERR_NOT_FOUND
** (read-only and absent), CT_ERR_DB. */
ct_status ct_cache_problem_id(ct_cache *c, const char *spec,
                              const char *precision, int64_t *id);

/* Finds the problem whose spec text equals spec.  Returns CT_OK,
** CT_ERR_INVALID_ARG, CT_ERR_NOT_FOUND, CT_ERR_DB. */
ct_status ct_cache_problem_find(ct_cache *c, const char *spec, int64_t *id);

/* ---------------------------------------------------------------------- */
/* Trials                                                                  */

typedef enum ct_trial_status {
  CT_TRIAL_TIMED = 0,       /* verified and timed */
  CT_TRIAL_WRONG,           /* ran, failed its precision contract */
  CT_TRIAL_COMPILE_FAILED,  /* NVRTC rejected the source */
  CT_TRIAL_LAUNCH_FAILED    /* the module did not load or the launch failed */
} ct_trial_status;

/* "timed", "wrong", "compile-failed", "launch-failed"; NULL for an unknown
** value. */
const char *ct_trial_status_name(ct_trial_status s);

/* Parses a name of ct_trial_status_name.  Returns CT_OK or CT_ERR_PARSE. */
ct_status ct_trial_status_parse(const char *name, ct_trial_status *s);

typedef struct ct_cache_trial {
  int64_t id, problem_id, device_id; /* id set by ct_cache_trial_add */
  char variant[CT_GEN_NAME_MAX];     /* "family:P=v,..." */
  ct_trial_status status;
  uint64_t source_hash;              /* ct_gen_hash of the variant's source */
  double compile_ms;                 /* NVRTC wall time */
  int regs, spill_bytes, smem_bytes; /* per thread / per thread / per CTA */
  double max_abs_err, rel_err;       /* NAN when not measured */
  double mean_ms, median_ms, min_ms, max_ms; /* NAN when not timed */
  int n_timed;                       /* timed runs behind mean_ms; 0 if none */
  char message[256];                 /* why it failed, or "" */
  int64_t created_at;                /* unix seconds, set on insert */
} ct_cache_trial;

/* Inserts *t (problem_id, device_id > 0 must exist) and commits it; sets
** t->id and t->created_at.  Returns CT_OK, CT_ERR_INVALID_ARG (NULL, an
** id <= 0, an unknown status, an unterminated string), CT_ERR_UNSUPPORTED
** (read-only handle), CT_ERR_DB. */
ct_status ct_cache_trial_add(ct_cache *c, ct_cache_trial *t);

/* Every trial of problem_id on device_id (0: on every device), ordered by
** mean_ms ascending, trials without one (NaN) last, ties by id.  *out is a
** malloc'd array of *n entries (NULL when *n is 0) the caller frees.
** Returns CT_OK, CT_ERR_INVALID_ARG, CT_ERR_NOMEM, CT_ERR_DB,
** CT_ERR_DB_CORRUPT (a row with an unknown status). */
ct_status ct_cache_trials(ct_cache *c, int64_t problem_id, int64_t device_id,
                          ct_cache_trial **out, size_t *n);

/* The latest trial (highest id) of variant with source_hash for problem_id
** on device_id, so a re-tune can skip work already done.  Returns CT_OK,
** CT_ERR_INVALID_ARG, CT_ERR_NOT_FOUND, CT_ERR_DB, CT_ERR_DB_CORRUPT. */
ct_status ct_cache_trial_find(ct_cache *c, int64_t problem_id,
                              int64_t device_id, const char *variant,
                              uint64_t source_hash, ct_cache_trial *out);

/* ---------------------------------------------------------------------- */
/* Winners                                                                 */

typedef struct ct_cache_winner {
  int64_t problem_id, device_id;   /* the key (as ids) */
  int64_t trial_id;                /* the trial it won with; 0: none */
  char spec[CT_PROBLEM_SPEC_MAX];  /* filled by ct_cache_winner_get */
  char precision[8];               /* filled by ct_cache_winner_get */
  char variant[CT_GEN_NAME_MAX];
  uint64_t source_hash;            /* ct_gen_hash of the source compiled */
  uint64_t cubin_hash;             /* ct_gen_hash(cubin, size, CT_GEN_HASH_SEED) */
  char arch[16];                   /* NVRTC target the cubin is for */
  char nvrtc_version[16];          /* NVRTC that compiled it */
  char options[256];               /* NVRTC options, space-separated */
  double mean_ms;                  /* full-protocol mean; NAN if unknown */
  int64_t created_at;              /* unix seconds, set on ct_cache_winner_set */
  void *cubin;                     /* owned: free with ct_cache_winner_clear */
  size_t cubin_size;
} ct_cache_winner;

/* Stores *w as the winner of (w->problem_id, w->device_id), replacing any
** previous one, and commits it.  spec and precision are ignored (they come
** from the problem row); created_at is set to now.  The caller computes
** cubin_hash; it is checked against the bytes.  Returns CT_OK,
** CT_ERR_INVALID_ARG (NULL, ids <= 0, no cubin, cubin_hash not the bytes'
** hash, an unterminated string), CT_ERR_UNSUPPORTED (read-only), CT_ERR_DB. */
ct_status ct_cache_winner_set(ct_cache *c, const ct_cache_winner *w);

/* Reads the winner for problem spec on the device matching every field of
** *d into *out (which the caller later passes to ct_cache_winner_clear;
** on failure *out is cleared and owns nothing).  Returns CT_OK,
** CT_ERR_INVALID_ARG, CT_ERR_NOT_FOUND, CT_ERR_NOMEM, CT_ERR_DB, or
** CT_ERR_DB_CORRUPT when the stored cubin's bytes do not hash to cubin_hash. */
ct_status ct_cache_winner_get(ct_cache *c, const char *spec,
                              const ct_cache_device *d, ct_cache_winner *out);

/* Frees w->cubin and zeroes *w.  NULL is a harmless no-op. */
void ct_cache_winner_clear(ct_cache_winner *w);

/* ---------------------------------------------------------------------- */
/* Listing                                                                 */

typedef struct ct_cache_entry {     /* one row of `convtune db list` */
  int64_t problem_id;
  char spec[CT_PROBLEM_SPEC_MAX];
  char precision[8];
  int n_trials, n_timed;  /* trials on this row's device; all if no winner */
  int64_t device_id;      /* device of the winner; 0 if none */
  char device[128];       /* its name; "" if none */
  char variant[CT_GEN_NAME_MAX]; /* the winner; "" if none */
  double mean_ms;                /* the winner's; NAN if none */
} ct_cache_entry;

/* One entry per (problem, device with a winner) plus one per problem with
** no winner, ordered by problem id, then device id.  *out is a malloc'd
** array of *n entries (NULL when *n is 0) the caller frees.  Returns CT_OK,
** CT_ERR_INVALID_ARG, CT_ERR_NOMEM, CT_ERR_DB. */
ct_status ct_cache_list(ct_cache *c, ct_cache_entry **out, size_t *n);

#endif /* CT_CACHE_H */
