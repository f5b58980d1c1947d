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
**   3: trial statuses 'faulted' and 'timeout' (the CHECK constraint on
**      trials.status lists every status, so a new status means a migration;
**      SQLite cannot alter a CHECK, so migration 3 rebuilds trials with its
**      rows and ids, setting winners aside and back so that no foreign key
**      dangles), and table cubins, the compile cache (below).
**
** THE COMPILE CACHE (table cubins, schema 3).  Every cubin the tuner
** compiles is kept, keyed by, in this order: source_hash (ct_gen_hash of the
** whole generated source: problem, parameters and template text), options
** (the NVRTC option string), arch and nvrtc_version; any change to one of
** them is a different key, so a stale cubin is never found, only left
** behind.  Each row keeps the cubin, its hash (checked on every read) and
** ptxas's report, so a re-tune skips NVRTC for every variant it compiled
** before.
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
#include <stdio.h>

#include "convtune.h"
#include "ct_gen.h"

typedef struct ct_cache ct_cache;

#define CT_CACHE_READONLY 1 /* open read-only; missing file -> CT_ERR_NOT_FOUND */
#define CT_CACHE_CREATE 2   /* create file and parent directories if missing */

#define CT_CACHE_SCHEMA_VERSION 3          /* the version this build writes */
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
  CT_TRIAL_LAUNCH_FAILED,   /* the module did not load or the launch failed */
  CT_TRIAL_FAULTED,         /* a fault killed the GPU context (illegal
                               address, ...) or the measuring process */
  CT_TRIAL_TIMEOUT          /* no answer within the watchdog's limit (a hang):
                               the measuring process was killed */
} ct_trial_status;

/* "timed", "wrong", "compile-failed", "launch-failed", "faulted",
** "timeout"; NULL for an unknown value. */
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

/* ---------------------------------------------------------------------- */
/* The compile cache (schema 3)                                            */

typedef struct ct_cache_cubin {
  uint64_t source_hash;      /* key 1: ct_gen_hash of the generated source */
  char options[256];         /* key 2: NVRTC options, space-separated */
  char arch[16];             /* key 3: NVRTC target, "sm_90a" */
  char nvrtc_version[16];    /* key 4: NVRTC that compiled it, "13.0" */
  uint64_t cubin_hash;       /* ct_gen_hash(cubin, size, CT_GEN_HASH_SEED) */
  int regs, spill_bytes;     /* ptxas's report (see ct_nvrtc.h); -1 unknown */
  int stack_bytes, smem_static;
  double compile_ms;         /* NVRTC wall time of the compile that made it */
  int64_t created_at;        /* unix seconds */
  void *cubin;               /* after ct_cache_cubin_get: owned, free with
                                ct_cache_cubin_clear */
  size_t cubin_size;
} ct_cache_cubin;

/* Stores *cb under its key unless that key is already stored (the first
** cubin for a key stays: same key, same compiler, same source).
** created_at 0 means now.  *inserted (if not NULL) says whether a row was
** added.  Returns CT_OK, CT_ERR_INVALID_ARG (NULL, no cubin, cubin_hash not
** the bytes' hash, an unterminated string), CT_ERR_UNSUPPORTED (read-only),
** CT_ERR_DB. */
ct_status ct_cache_cubin_put(ct_cache *c, const ct_cache_cubin *cb,
                             int *inserted);

/* Reads the cubin stored under the key into *out (which the caller clears
** with ct_cache_cubin_clear; on failure *out owns nothing).  Returns CT_OK,
** CT_ERR_INVALID_ARG, CT_ERR_NOT_FOUND (also on a file older than schema
** 3), CT_ERR_NOMEM, CT_ERR_DB, or CT_ERR_DB_CORRUPT when the stored bytes
** do not hash to cubin_hash. */
ct_status ct_cache_cubin_get(ct_cache *c, uint64_t source_hash,
                             const char *options, const char *arch,
                             const char *nvrtc_version, ct_cache_cubin *out);

/* Frees cb->cubin and zeroes *cb.  NULL is a harmless no-op. */
void ct_cache_cubin_clear(ct_cache_cubin *cb);

/* Calls fn(arg, cubin) for every stored cubin, in key order; the cubin is
** valid during the call only.  Stops at the first status fn returns other
** than CT_OK and returns it.  Returns CT_OK (also on a file older than
** schema 3), CT_ERR_INVALID_ARG, CT_ERR_DB, or CT_ERR_DB_CORRUPT (stored
** bytes that do not match their hash). */
ct_status ct_cache_cubin_foreach(ct_cache *c,
                                 ct_status (*fn)(void *arg,
                                                 const ct_cache_cubin *cb),
                                 void *arg);

/* ---------------------------------------------------------------------- */
/* Transactions                                                            */

/* Every write above commits on its own.  To make several writes one atomic
** change (an import), wrap them: ct_cache_begin takes the write lock (BEGIN
** IMMEDIATE, waiting up to CT_CACHE_BUSY_MS), ct_cache_commit makes them
** durable, ct_cache_rollback drops them (a no-op outside a transaction).
** Keep such transactions short: other writers wait for them.
** begin/commit return CT_OK, CT_ERR_INVALID_ARG, CT_ERR_UNSUPPORTED
** (read-only), CT_ERR_DB. */
ct_status ct_cache_begin(ct_cache *c);
ct_status ct_cache_commit(ct_cache *c);
/* A read transaction: every read until ct_cache_commit sees one snapshot
** (writers carry on meanwhile).  Works on read-only handles too. */
ct_status ct_cache_begin_read(ct_cache *c);
void ct_cache_rollback(ct_cache *c);

/* ---------------------------------------------------------------------- */
/* The whole database, row by row (export, import, reports)                */

typedef struct ct_cache_device_row {
  int64_t id;
  ct_cache_device device;
} ct_cache_device_row;

typedef struct ct_cache_problem_row {
  int64_t id;
  char spec[CT_PROBLEM_SPEC_MAX];
  char precision[8];
} ct_cache_problem_row;

/* Every device / problem, by id.  *out is a malloc'd array of *n entries
** (NULL when *n is 0) the caller frees.  Returns CT_OK, CT_ERR_INVALID_ARG,
** CT_ERR_NOMEM, CT_ERR_DB. */
ct_status ct_cache_devices(ct_cache *c, ct_cache_device_row **out, size_t *n);
ct_status ct_cache_problems(ct_cache *c, ct_cache_problem_row **out,
                            size_t *n);

/* Reads the winner of (problem_id, device_id) as ct_cache_winner_get does
** by key.  Returns as ct_cache_winner_get. */
ct_status ct_cache_winner_read(ct_cache *c, int64_t problem_id,
                               int64_t device_id, ct_cache_winner *out);

/* Adds a trial from another database, keeping its created_at (which must
** be > 0).  A trial equal in problem, device, variant, source_hash, status,
** n_timed, mean_ms and created_at is the same trial: it is not added
** again, t->id is set to the stored one's and *inserted (if not NULL) to 0.
** Returns as ct_cache_trial_add. */
ct_status ct_cache_trial_import(ct_cache *c, ct_cache_trial *t,
                                int *inserted);

/* Stores a winner from another database, keeping its created_at (> 0),
** when (problem_id, device_id) has no winner yet or the stored one is
** older; *stored (if not NULL) says whether it was.  Returns as
** ct_cache_winner_set. */
ct_status ct_cache_winner_import(ct_cache *c, const ct_cache_winner *w,
                                 int *stored);

/* ---------------------------------------------------------------------- */
/* Export and import (cache/transfer.c)                                    */

/* The text format, version 1: UTF-8 lines ending in '\n'.  The first line
** is "convtune-export\t1"; then records, one per line: a kind, then
** TAB-separated key=value fields (any order; unknown keys are ignored, so a
** newer writer can add fields).  In values, '\\', TAB, LF and CR are
** written "\\\\", "\\t", "\\n", "\\r"; hashes are 16 hex digits; reals are
** "%.17g" or "nan"; cubins are base64 (RFC 4648, no line breaks).
**   device   id name cc_major cc_minor sm_count driver_version
**            nvrtc_version arch
**   problem  id spec precision
**   trial    id problem device variant status source_hash compile_ms regs
**            spill_bytes smem_bytes max_abs_err rel_err mean_ms median_ms
**            min_ms max_ms n_timed message created_at
**   winner   problem device trial variant source_hash cubin_hash arch
**            nvrtc_version options mean_ms created_at cubin
**   cubin    source_hash options arch nvrtc_version cubin_hash regs
**            spill_bytes stack_bytes smem_static compile_ms created_at cubin
**   end      devices problems trials winners cubins   (record counts)
** ids are the exporting file's and only link records of the same export
** (problem=, device=, trial= name an earlier record); a record refers only
** to records before it.  Lines starting with '#' are comments.  A file
** without its "end" record (a truncated copy) is refused whole.
**
** Import keeps every identity as it is: a device is found or added with all
** its fields (name, compute capability, SM count, driver, NVRTC version,
** arch), a problem by its spec, trials as ct_cache_trial_import, winners as
** ct_cache_winner_import, cubins as ct_cache_cubin_put.  An entry from
** another device, driver or NVRTC version is therefore kept under that
** device and never matched by the runtime here, which uses exact keys only;
** a winner whose templates have changed since is kept too, and the runtime
** refuses its cubin (source_hash no longer matches) and recompiles. */

typedef struct ct_cache_transfer_stats {
  size_t devices, problems;        /* records read or written */
  size_t trials, trials_added;     /* trial records; how many were new */
  size_t winners, winners_stored;  /* winner records; how many were stored */
  size_t cubins, cubins_added;     /* cubin records; how many were new */
} ct_cache_transfer_stats;

#define CT_CACHE_EXPORT_CUBINS 1 /* also write the compile cache */

/* Writes every device, problem, trial and winner (and, with
** CT_CACHE_EXPORT_CUBINS, every cached cubin) of c to f in the format
** above, reading in one transaction so the copy is consistent.  *st (if not
** NULL) counts the records.  Returns CT_OK, CT_ERR_INVALID_ARG, CT_ERR_IO
** (a write failed), CT_ERR_NOMEM, CT_ERR_DB, CT_ERR_DB_CORRUPT. */
ct_status ct_cache_export(ct_cache *c, FILE *f, int flags,
                          ct_cache_transfer_stats *st);

/* Reads a file in the format above into c, all of it in one transaction:
** on any failure nothing is imported.  *st (if not NULL) counts what was
** read and added.  err (if not NULL, len bytes) says what failed, with the
** line number.  Returns CT_OK, CT_ERR_INVALID_ARG, CT_ERR_PARSE (not this
** format, a bad or missing field, a dangling reference, no end record),
** CT_ERR_UNSUPPORTED (a newer format version, or c read-only), CT_ERR_IO,
** CT_ERR_NOMEM, CT_ERR_DB. */
ct_status ct_cache_import(ct_cache *c, FILE *f, ct_cache_transfer_stats *st,
                          char *err, size_t len);

/* ====================================================================== */
/* Untrusted files                                                         */

#define CT_CACHE_UNTRUSTED_STEPS 100000000L  /* VM steps per statement */
#define CT_CACHE_UNTRUSTED_LENGTH (64 << 20) /* longest string or blob, bytes */

/* Readies a handle for reading a file that may be corrupt or crafted (the
** runtime reads any file it is pointed at): SQLite's defensive mode, no
** trust in functions the file's schema uses (views, triggers), cell-size
** checks on every page read, no string or blob longer than
** CT_CACHE_UNTRUSTED_LENGTH, and at most about CT_CACHE_UNTRUSTED_STEPS
** virtual-machine steps per statement, so that a crafted file (a view that
** never ends, say) fails a query with CT_ERR_DB instead of hanging it.  A
** damaged page then gives CT_ERR_DB_CORRUPT or CT_ERR_DB from the query
** that reads it.  Meant for read-only handles; replaces any progress
** handler and trace callback on the connection.  Returns CT_OK or
** CT_ERR_INVALID_ARG (c NULL). */
ct_status ct_cache_untrusted(ct_cache *c);

#endif /* CT_CACHE_H */
