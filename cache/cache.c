/*
** cache.c — the tuning database (see ct_cache.h for the key and schema).
**
** Every query is a constant SQL text prepared with sqlite3_prepare_v2 and
** given its values through sqlite3_bind_*; the only texts run with
** sqlite3_exec are the constant migration scripts, pragmas and transaction
** verbs.
** Each function finalizes its statements on every path through a single
** `done:` label.
*/
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* GNU strerror_r */
#endif

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

#include <sqlite3.h>

#include "ct_cache.h"

struct ct_cache {
  sqlite3 *db;       /* the connection */
  char *path;        /* as given to ct_cache_open, for messages */
  int readonly;      /* opened with CT_CACHE_READONLY */
  int version;       /* schema version of the file */
  int sqlite_rc;     /* extended SQLite code of the last SQLite failure */
  char errmsg[512];  /* last failure, "" if none */
};

/* ---------------------------------------------------------------------- */
/* Migrations                                                              */

/* Script i takes the schema from version i to i + 1 and sets user_version
** itself; cache_migrate runs each in one transaction.  Never edit a script
** that has shipped: append a new one and bump CT_CACHE_SCHEMA_VERSION. */
static const char *const cache_migrations[] = {
  /* 1: the initial tables. */
  "CREATE TABLE meta(\n"
  "  key   TEXT PRIMARY KEY,\n"
  "  value TEXT NOT NULL);\n"
  "INSERT INTO meta(key, value) VALUES('application', 'convtune');\n"
  "CREATE TABLE devices(\n"
  "  id             INTEGER PRIMARY KEY,\n"
  "  name           TEXT NOT NULL,\n"
  "  cc_major       INTEGER NOT NULL,\n"
  "  cc_minor       INTEGER NOT NULL,\n"
  "  sm_count       INTEGER NOT NULL,\n"
  "  driver_version INTEGER NOT NULL,\n"
  "  nvrtc_version  TEXT NOT NULL,\n"
  "  arch           TEXT NOT NULL,\n"
  "  UNIQUE(name, cc_major, cc_minor, sm_count, driver_version,\n"
  "         nvrtc_version, arch));\n"
  "CREATE TABLE problems(\n"
  "  id        INTEGER PRIMARY KEY,\n"
  "  spec      TEXT NOT NULL UNIQUE,\n"
  "  precision TEXT NOT NULL);\n"
  "CREATE TABLE trials(\n"
  "  id          INTEGER PRIMARY KEY,\n"
  "  problem_id  INTEGER NOT NULL REFERENCES problems(id),\n"
  "  device_id   INTEGER NOT NULL REFERENCES devices(id),\n"
  "  variant     TEXT NOT NULL,\n"
  "  status      TEXT NOT NULL CHECK(status IN\n"
  "                ('timed', 'wrong', 'compile-failed', 'launch-failed')),\n"
  "  source_hash INTEGER NOT NULL,\n"
  "  compile_ms  REAL,\n"
  "  regs        INTEGER NOT NULL DEFAULT 0,\n"
  "  spill_bytes INTEGER NOT NULL DEFAULT 0,\n"
  "  smem_bytes  INTEGER NOT NULL DEFAULT 0,\n"
  "  max_abs_err REAL,\n"
  "  rel_err     REAL,\n"
  "  mean_ms     REAL,\n"
  "  median_ms   REAL,\n"
  "  min_ms      REAL,\n"
  "  max_ms      REAL,\n"
  "  n_timed     INTEGER NOT NULL DEFAULT 0,\n"
  "  message     TEXT NOT NULL DEFAULT '',\n"
  "  created_at  INTEGER NOT NULL);\n"
  "CREATE TABLE winners(\n"
  "  problem_id    INTEGER NOT NULL REFERENCES problems(id),\n"
  "  device_id     INTEGER NOT NULL REFERENCES devices(id),\n"
  "  trial_id      INTEGER REFERENCES trials(id),\n"
  "  variant       TEXT NOT NULL,\n"
  "  source_hash   INTEGER NOT NULL,\n"
  "  cubin         BLOB NOT NULL,\n"
  "  cubin_hash    INTEGER NOT NULL,\n"
  "  arch          TEXT NOT NULL,\n"
  "  nvrtc_version TEXT NOT NULL,\n"
  "  mean_ms       REAL,\n"
  "  created_at    INTEGER NOT NULL,\n"
  "  PRIMARY KEY(problem_id, device_id));\n"
  "PRAGMA application_id = 1129595970;\n" /* CT_CACHE_APPLICATION_ID */
  "PRAGMA user_version = 1;\n",

  /* 2: look trials up by key without a scan; keep the NVRTC options a
  ** winner's cubin was compiled with. */
  "CREATE INDEX trials_by_key\n"
  "  ON trials(problem_id, device_id, variant, source_hash);\n"
  "ALTER TABLE winners ADD COLUMN options TEXT NOT NULL DEFAULT '';\n"
  "PRAGMA user_version = 2;\n",

  /* 3: trial statuses 'faulted' and 'timeout'; the compile cache.  SQLite
  ** cannot alter a CHECK constraint, so trials is rebuilt (rows and ids
  ** kept).  winners.trial_id refers to trials: with foreign keys on (they
  ** cannot be switched off inside this transaction) dropping trials while
  ** winners points at it fails, so winners is set aside in a TEMP table,
  ** dropped first and rebuilt last, exactly as version 2 had it. */
  "CREATE TABLE trials_v3(\n"
  "  id          INTEGER PRIMARY KEY,\n"
  "  problem_id  INTEGER NOT NULL REFERENCES problems(id),\n"
  "  device_id   INTEGER NOT NULL REFERENCES devices(id),\n"
  "  variant     TEXT NOT NULL,\n"
  "  status      TEXT NOT NULL CHECK(status IN\n"
  "                ('timed', 'wrong', 'compile-failed', 'launch-failed',\n"
  "                 'faulted', 'timeout')),\n"
  "  source_hash INTEGER NOT NULL,\n"
  "  compile_ms  REAL,\n"
  "  regs        INTEGER NOT NULL DEFAULT 0,\n"
  "  spill_bytes INTEGER NOT NULL DEFAULT 0,\n"
  "  smem_bytes  INTEGER NOT NULL DEFAULT 0,\n"
  "  max_abs_err REAL,\n"
  "  rel_err     REAL,\n"
  "  mean_ms     REAL,\n"
  "  median_ms   REAL,\n"
  "  min_ms      REAL,\n"
  "  max_ms      REAL,\n"
  "  n_timed     INTEGER NOT NULL DEFAULT 0,\n"
  "  message     TEXT NOT NULL DEFAULT '',\n"
  "  created_at  INTEGER NOT NULL);\n"
  "INSERT INTO trials_v3(id, problem_id, device_id, variant, status,\n"
  "  source_hash, compile_ms, regs, spill_bytes, smem_bytes, max_abs_err,\n"
  "  rel_err, mean_ms, median_ms, min_ms, max_ms, n_timed, message,\n"
  "  created_at)\n"
  "  SELECT id, problem_id, device_id, variant, status, source_hash,\n"
  "  compile_ms, regs, spill_bytes, smem_bytes, max_abs_err, rel_err,\n"
  "  mean_ms, median_ms, min_ms, max_ms, n_timed, message, created_at\n"
  "  FROM trials;\n"
  "CREATE TEMP TABLE winners_v2 AS SELECT * FROM winners;\n"
  "DROP TABLE winners;\n"
  "DROP TABLE trials;\n"
  "ALTER TABLE trials_v3 RENAME TO trials;\n"
  "CREATE INDEX trials_by_key\n"
  "  ON trials(problem_id, device_id, variant, source_hash);\n"
  "CREATE TABLE winners(\n"
  "  problem_id    INTEGER NOT NULL REFERENCES problems(id),\n"
  "  device_id     INTEGER NOT NULL REFERENCES devices(id),\n"
  "  trial_id      INTEGER REFERENCES trials(id),\n"
  "  variant       TEXT NOT NULL,\n"
  "  source_hash   INTEGER NOT NULL,\n"
  "  cubin         BLOB NOT NULL,\n"
  "  cubin_hash    INTEGER NOT NULL,\n"
  "  arch          TEXT NOT NULL,\n"
  "  nvrtc_version TEXT NOT NULL,\n"
  "  mean_ms       REAL,\n"
  "  created_at    INTEGER NOT NULL,\n"
  "  options       TEXT NOT NULL DEFAULT '',\n"
  "  PRIMARY KEY(problem_id, device_id));\n"
  "INSERT INTO winners(problem_id, device_id, trial_id, variant,\n"
  "  source_hash, cubin, cubin_hash, arch, nvrtc_version, mean_ms,\n"
  "  created_at, options)\n"
  "  SELECT problem_id, device_id, trial_id, variant, source_hash, cubin,\n"
  "  cubin_hash, arch, nvrtc_version, mean_ms, created_at, options\n"
  "  FROM temp.winners_v2;\n"
  "DROP TABLE temp.winners_v2;\n"
  "CREATE TABLE cubins(\n"
  "  source_hash   INTEGER NOT NULL,\n"
  "  options       TEXT NOT NULL,\n"
  "  arch          TEXT NOT NULL,\n"
  "  nvrtc_version TEXT NOT NULL,\n"
  "  cubin         BLOB NOT NULL,\n"
  "  cubin_hash    INTEGER NOT NULL,\n"
  "  regs          INTEGER NOT NULL DEFAULT -1,\n"
  "  spill_bytes   INTEGER NOT NULL DEFAULT -1,\n"
  "  stack_bytes   INTEGER NOT NULL DEFAULT -1,\n"
  "  smem_static   INTEGER NOT NULL DEFAULT -1,\n"
  "  compile_ms    REAL,\n"
  "  created_at    INTEGER NOT NULL,\n"
  "  PRIMARY KEY(source_hash, options, arch, nvrtc_version));\n"
  "PRAGMA user_version = 3;\n",
};

_Static_assert(sizeof cache_migrations / sizeof cache_migrations[0] ==
                   CT_CACHE_SCHEMA_VERSION,
               "one migration script per schema version");
_Static_assert(CT_CACHE_APPLICATION_ID == 1129595970,
               "migration 1 writes CT_CACHE_APPLICATION_ID as a literal");

/* ---------------------------------------------------------------------- */
/* Helpers                                                                 */

/* Copies src (NULL: "") into dst of n > 0 bytes, truncating, always
** NUL-terminated. */
static void cache_copy(char *dst, size_t n, const char *src)
{
  size_t len;
  if (!src) src = "";
  len = strnlen(src, n - 1);
  memcpy(dst, src, len);
  dst[len] = '\0';
}

/* 1 if s is a NUL-terminated string shorter than n bytes. */
static int cache_fits(const char *s, size_t n)
{
  return s != NULL && strnlen(s, n) < n;
}

/* Hashes are stored as the INTEGER with the same 64 bits. */
static sqlite3_int64 cache_u2i(uint64_t u)
{
  sqlite3_int64 i;
  memcpy(&i, &u, sizeof i);
  return i;
}

static uint64_t cache_i2u(sqlite3_int64 i)
{
  uint64_t u;
  memcpy(&u, &i, sizeof u);
  return u;
}

/* The ct_status for an SQLite result code. */
static ct_status cache_status(int src)
{
  switch (src & 0xff) {
  case SQLITE_OK:
  case SQLITE_ROW:
  case SQLITE_DONE: return CT_OK;
  case SQLITE_CORRUPT:
  case SQLITE_NOTADB: return CT_ERR_DB_CORRUPT;
  case SQLITE_NOMEM: return CT_ERR_NOMEM;
  default: return CT_ERR_DB;
  }
}

/* Records "path: message" as c's last error and returns st. */
__attribute__((format(printf, 3, 4)))
static ct_status cache_fail(ct_cache *c, ct_status st, const char *fmt, ...)
{
  va_list ap;
  int n = snprintf(c->errmsg, sizeof c->errmsg, "%s: ", c->path);
  if (n < 0 || (size_t)n >= sizeof c->errmsg) return st;
  va_start(ap, fmt);
  vsnprintf(c->errmsg + n, sizeof c->errmsg - (size_t)n, fmt, ap);
  va_end(ap);
  return st;
}

/* Records a failed SQLite call (src its result code) while doing `what`. */
static ct_status cache_sqlfail(ct_cache *c, int src, const char *what)
{
  ct_status rc = cache_status(src) == CT_OK ? CT_ERR_DB : cache_status(src);
  c->sqlite_rc = sqlite3_extended_errcode(c->db);
  if ((src & 0xff) == SQLITE_BUSY || (src & 0xff) == SQLITE_LOCKED)
    return cache_fail(c, rc,
                      "%s: the database is locked by another process (a "
                      "tune or an import writing to it?) and stayed locked "
                      "for %d s; try again when it has finished", what,
                      CT_CACHE_BUSY_MS / 1000);
  return cache_fail(c, rc, "%s: %s", what, sqlite3_errmsg(c->db));
}

static ct_status cache_prepare(ct_cache *c, const char *sql,
                               sqlite3_stmt **st)
{
  int src = sqlite3_prepare_v2(c->db, sql, -1, st, NULL);
  if (src != SQLITE_OK) return cache_sqlfail(c, src, "preparing a query");
  return CT_OK;
}

/* Runs a constant script (no values in it). */
static ct_status cache_exec(ct_cache *c, const char *sql, const char *what)
{
  int src = sqlite3_exec(c->db, sql, NULL, NULL, NULL);
  if (src != SQLITE_OK) return cache_sqlfail(c, src, what);
  return CT_OK;
}

/* Ends a failed transaction; keeps the error already recorded. */
static void cache_rollback(ct_cache *c)
{
  if (!sqlite3_get_autocommit(c->db))
    sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL);
}

/* Runs a one-row, one-integer query (no parameters) into *v. */
static ct_status cache_int(ct_cache *c, const char *sql, int *v)
{
  sqlite3_stmt *st = NULL;
  ct_status rc = cache_prepare(c, sql, &st);
  int src;
  if (rc != CT_OK) goto done;
  src = sqlite3_step(st);
  if (src != SQLITE_ROW) {
    rc = cache_sqlfail(c, src == SQLITE_DONE ? SQLITE_ERROR : src,
                       "reading the schema");
    goto done;
  }
  *v = sqlite3_column_int(st, 0);
done:
  sqlite3_finalize(st);
  return rc;
}

/* Binds v, or NULL for NaN. */
static int cache_bind_real(sqlite3_stmt *st, int i, double v)
{
  return isnan(v) ? sqlite3_bind_null(st, i) : sqlite3_bind_double(st, i, v);
}

/* A REAL column, NaN for NULL. */
static double cache_column_real(sqlite3_stmt *st, int i)
{
  if (sqlite3_column_type(st, i) == SQLITE_NULL) return NAN;
  return sqlite3_column_double(st, i);
}

static void cache_column_text(sqlite3_stmt *st, int i, char *dst, size_t n)
{
  cache_copy(dst, n, (const char *)sqlite3_column_text(st, i));
}

static ct_status cache_writable(ct_cache *c)
{
  if (c->readonly)
    return cache_fail(c, CT_ERR_UNSUPPORTED, "opened read-only");
  return CT_OK;
}

/* ---------------------------------------------------------------------- */
/* Opening                                                                 */

ct_status ct_cache_default_path(char *buf, size_t len)
{
  const char *db = getenv("CONVTUNE_DB");
  const char *xdg = getenv("XDG_CACHE_HOME");
  const char *home = getenv("HOME");
  int n;

  if (!buf || len == 0) return CT_ERR_INVALID_ARG;
  buf[0] = '\0';
  if (db && db[0])
    n = snprintf(buf, len, "%s", db);
  else if (xdg && xdg[0] == '/') /* XDG: relative values are ignored */
    n = snprintf(buf, len, "%s/convtune/tuning.db", xdg);
  else if (home && home[0])
    n = snprintf(buf, len, "%s/.cache/convtune/tuning.db", home);
  else
    return CT_ERR_IO;
  if (n < 0 || (size_t)n >= len) {
    buf[0] = '\0';
    return CT_ERR_INVALID_ARG;
  }
  return CT_OK;
}

/* Makes every missing parent directory of c->path (mkdir -p of its
** dirname). */
static ct_status cache_mkdirs(ct_cache *c)
{
  ct_status rc = CT_OK;
  char *p = strdup(c->path);
  char *s;
  if (!p) return cache_fail(c, CT_ERR_NOMEM, "out of memory");
  for (s = p + 1; *s; s++) {
    if (*s != '/') continue;
    *s = '\0';
    if (mkdir(p, 0777) != 0 && errno != EEXIST) {
      char ebuf[128];
      rc = cache_fail(c, CT_ERR_IO, "cannot make directory %s: %s", p,
                      strerror_r(errno, ebuf, sizeof ebuf));
      break;
    }
    *s = '/';
  }
  free(p);
  return rc;
}

/* Checks that the file is ours and sets *version to its schema version, 0
** for an empty database.  Run inside a transaction so that the three reads
** see one snapshot. */
static ct_status cache_identify(ct_cache *c, int *version)
{
  int app = 0, uv = 0, ntables = 0, nmeta = 0;
  ct_status rc;

  rc = cache_int(c, "PRAGMA application_id", &app);
  if (rc != CT_OK) return rc;
  rc = cache_int(c, "PRAGMA user_version", &uv);
  if (rc != CT_OK) return rc;
  rc = cache_int(c, "SELECT count(*) FROM sqlite_master", &ntables);
  if (rc != CT_OK) return rc;
  if (app == 0 && uv == 0 && ntables == 0) {
    *version = 0;
    return CT_OK;
  }
  if (app != CT_CACHE_APPLICATION_ID)
    return cache_fail(c, CT_ERR_DB_CORRUPT,
                      "not a convtune database (an SQLite file of another "
                      "application)");
  if (uv > CT_CACHE_SCHEMA_VERSION)
    return cache_fail(c, CT_ERR_UNSUPPORTED,
                      "schema version %d is newer than this build's %d; use "
                      "a newer convtune", uv, CT_CACHE_SCHEMA_VERSION);
  if (uv < 1)
    return cache_fail(c, CT_ERR_DB_CORRUPT,
                      "damaged convtune database: no schema version");
  rc = cache_int(c,
                 "SELECT count(*) FROM sqlite_master"
                 " WHERE type = 'table' AND name = 'meta'", &nmeta);
  if (rc == CT_OK && nmeta == 1)
    rc = cache_int(c,
                   "SELECT count(*) FROM meta"
                   " WHERE key = 'application' AND value = 'convtune'",
                   &nmeta);
  if (rc != CT_OK) return rc;
  if (nmeta != 1)
    return cache_fail(c, CT_ERR_DB_CORRUPT,
                      "damaged convtune database: no meta entry");
  *version = uv;
  return CT_OK;
}

/* Applies migrations until the file is at `target`, each in its own
** BEGIN IMMEDIATE transaction that first re-reads the version, so that
** several processes migrating one file at once apply each script once. */
static ct_status cache_migrate(ct_cache *c, int target)
{
  ct_status rc = CT_OK;
  int v = 0, after = 0;

  for (;;) {
    rc = cache_exec(c, "BEGIN IMMEDIATE", "starting a migration");
    if (rc != CT_OK) return rc;
    rc = cache_identify(c, &v);
    if (rc != CT_OK) goto fail;
    if (v > target) {
      rc = cache_fail(c, CT_ERR_UNSUPPORTED,
                      "schema version %d is newer than the %d asked for", v,
                      target);
      goto fail;
    }
    if (v == target) break;
    rc = cache_exec(c, cache_migrations[v], "migrating the schema");
    if (rc != CT_OK) goto fail;
    rc = cache_int(c, "PRAGMA user_version", &after);
    if (rc != CT_OK) goto fail;
    if (after != v + 1) {
      rc = cache_fail(c, CT_ERR_DB, "migration %d set user_version %d",
                      v + 1, after);
      goto fail;
    }
    rc = cache_exec(c, "COMMIT", "committing a migration");
    if (rc != CT_OK) goto fail;
  }
  rc = cache_exec(c, "COMMIT", "ending a migration");
  if (rc != CT_OK) goto fail;
  c->version = v;
  return CT_OK;
fail:
  cache_rollback(c);
  return rc;
}

/* Opens c->db on c->path; with immutable, through a "file:" URI that tells
** SQLite nobody changes the file (no locks, no -shm). */
static ct_status cache_connect(ct_cache *c, int oflags, int immutable)
{
  static const char hex[] = "0123456789abcdef";
  char *uri = NULL;
  const char *name = c->path;
  int src;

  if (immutable) {
    size_t len = strlen(c->path), i, j = 0;
    uri = malloc(3 * len + sizeof "file:?immutable=1");
    if (!uri) return cache_fail(c, CT_ERR_NOMEM, "out of memory");
    j = (size_t)sprintf(uri, "file:");
    for (i = 0; i < len; i++) { /* escape all but unreserved bytes and '/' */
      unsigned char ch = (unsigned char)c->path[i];
      if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
          (ch >= '0' && ch <= '9') || strchr("/-._~", ch)) {
        uri[j++] = (char)ch;
      } else {
        uri[j++] = '%';
        uri[j++] = hex[ch >> 4];
        uri[j++] = hex[ch & 15];
      }
    }
    strcpy(uri + j, "?immutable=1");
    name = uri;
    oflags |= SQLITE_OPEN_URI;
  }
  src = sqlite3_open_v2(name, &c->db, oflags, NULL);
  free(uri);
  if (!c->db) return cache_fail(c, CT_ERR_NOMEM, "out of memory");
  if (src != SQLITE_OK) return cache_sqlfail(c, src, "opening");
  sqlite3_extended_result_codes(c->db, 1);
  sqlite3_busy_timeout(c->db, CT_CACHE_BUSY_MS);
  return CT_OK;
}

/* PRAGMA journal_mode = WAL.  The change takes an exclusive lock, and
** where this connection's shared lock and another's pending write could
** deadlock (several processes or threads opening a new database at once)
** SQLite answers SQLITE_BUSY at once, without the busy handler.  The
** statement holds no lock once it fails, so it is tried again every 2 ms
** until CT_CACHE_BUSY_MS have passed. */
static ct_status cache_set_wal(ct_cache *c)
{
  const struct timespec pause = {0, 2 * 1000 * 1000};
  struct timespec t0, now;
  int src;

  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (;;) {
    src = sqlite3_exec(c->db, "PRAGMA journal_mode = WAL", NULL, NULL, NULL);
    if ((src & 0xff) != SQLITE_BUSY) break;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if ((now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000 >=
        CT_CACHE_BUSY_MS)
      break;
    nanosleep(&pause, NULL);
  }
  return src == SQLITE_OK ? CT_OK : cache_sqlfail(c, src, "setting WAL mode");
}

/* Identifies the file (cache_identify) in a read transaction, writing
** nothing. */
static ct_status cache_read_version(ct_cache *c, int *version)
{
  ct_status rc = cache_exec(c, "BEGIN", "reading the schema");
  if (rc == CT_OK) rc = cache_identify(c, version);
  if (rc == CT_OK) rc = cache_exec(c, "COMMIT", "reading the schema");
  if (rc != CT_OK) cache_rollback(c);
  return rc;
}

/* 1 if the last failure was a read-only connection unable to set up WAL
** shared memory (the directory is not writable and there is no -shm;
** SQLite says READONLY_DIRECTORY or READONLY_CANTINIT) while
** no -wal file exists: then no writer can be changing the file, and it can
** be read as immutable. */
static int cache_wal_unreadable(ct_cache *c)
{
  struct stat sb;
  char *wal;
  int absent;

  if (c->sqlite_rc != SQLITE_READONLY_CANTINIT &&
      c->sqlite_rc != SQLITE_READONLY_DIRECTORY)
    return 0;
  wal = malloc(strlen(c->path) + sizeof "-wal");
  if (!wal) return 0;
  sprintf(wal, "%s-wal", c->path);
  absent = stat(wal, &sb) != 0 && errno == ENOENT;
  free(wal);
  return absent;
}

/* ct_cache_open with the schema version a writable open migrates to. */
static ct_status cache_open(const char *path, int flags, int target,
                            ct_cache **out, char *err, size_t errlen)
{
  ct_cache *c = NULL;
  ct_status rc = CT_OK;
  struct stat sb;
  int oflags, v = 0;

  if (out) *out = NULL;
  if (err && errlen) err[0] = '\0';
  if (!path || !path[0] || !out || (flags & ~(CT_CACHE_READONLY |
                                               CT_CACHE_CREATE)) ||
      flags == (CT_CACHE_READONLY | CT_CACHE_CREATE)) {
    if (err && errlen) cache_copy(err, errlen, "invalid arguments");
    return CT_ERR_INVALID_ARG;
  }
  c = calloc(1, sizeof *c);
  if (c) c->path = strdup(path);
  if (!c || !c->path) {
    if (err && errlen) cache_copy(err, errlen, "out of memory");
    free(c);
    return CT_ERR_NOMEM;
  }
  c->readonly = (flags & CT_CACHE_READONLY) != 0;

  if (stat(path, &sb) != 0) {
    char ebuf[128];
    int e = errno;
    if (e != ENOENT) {
      rc = cache_fail(c, CT_ERR_IO, "%s", strerror_r(e, ebuf, sizeof ebuf));
      goto done;
    }
    if (!(flags & CT_CACHE_CREATE)) {
      rc = cache_fail(c, CT_ERR_NOT_FOUND, "no such file");
      goto done;
    }
    rc = cache_mkdirs(c);
    if (rc != CT_OK) goto done;
  }

  oflags = c->readonly ? SQLITE_OPEN_READONLY
                       : SQLITE_OPEN_READWRITE |
                             ((flags & CT_CACHE_CREATE) ? SQLITE_OPEN_CREATE
                                                        : 0);
  /* Identify the file before writing anything to it. */
  rc = cache_connect(c, oflags, 0);
  if (rc == CT_OK) rc = cache_read_version(c, &v);
  if (rc != CT_OK && c->readonly && cache_wal_unreadable(c)) {
    sqlite3_close(c->db);
    c->db = NULL;
    rc = cache_connect(c, oflags, 1);
    if (rc == CT_OK) rc = cache_read_version(c, &v);
  }
  if (rc != CT_OK) goto done;

  if (c->readonly) {
    if (v == 0) {
      rc = cache_fail(c, CT_ERR_NOT_FOUND, "empty database: nothing tuned");
      goto done;
    }
    c->version = v;
    goto done;
  }
  if (v > target) {
    rc = cache_fail(c, CT_ERR_UNSUPPORTED,
                    "schema version %d is newer than the %d asked for", v,
                    target);
    goto done;
  }

  /* WAL lets readers and one writer proceed together; the setting is
  ** stored in the file. */
  rc = cache_set_wal(c);
  if (rc == CT_OK)
    rc = cache_exec(c, "PRAGMA foreign_keys = ON", "enabling foreign keys");
  if (rc == CT_OK) rc = cache_migrate(c, target);

done:
  if (rc != CT_OK) {
    if (err && errlen) cache_copy(err, errlen, c->errmsg);
    ct_cache_close(c);
    return rc;
  }
  c->errmsg[0] = '\0';
  *out = c;
  return CT_OK;
}

ct_status ct_cache_open(const char *path, int flags, ct_cache **out,
                        char *err, size_t errlen)
{
  return cache_open(path, flags, CT_CACHE_SCHEMA_VERSION, out, err, errlen);
}

ct_status ct_cache_migrate_to(const char *path, int version, char *err,
                              size_t errlen)
{
  ct_cache *c = NULL;
  ct_status rc;
  if (version < 1 || version > CT_CACHE_SCHEMA_VERSION) {
    if (err && errlen) cache_copy(err, errlen, "schema version out of range");
    return CT_ERR_INVALID_ARG;
  }
  rc = cache_open(path, CT_CACHE_CREATE, version, &c, err, errlen);
  ct_cache_close(c);
  return rc;
}

void ct_cache_close(ct_cache *c)
{
  if (!c) return;
  sqlite3_close(c->db); /* every statement is finalized: closes now */
  free(c->path);
  free(c);
}

const char *ct_cache_errmsg(ct_cache *c)
{
  return c ? c->errmsg : "no cache handle";
}

int ct_cache_schema_version(ct_cache *c)
{
  return c ? c->version : 0;
}

/* For ct_cache_check: ct_cache_cubin_foreach already checked the hash. */
static ct_status cache_cubin_accept(void *arg, const ct_cache_cubin *cb)
{
  (void)arg;
  (void)cb;
  return CT_OK;
}

ct_status ct_cache_check(ct_cache *c)
{
  sqlite3_stmt *st = NULL;
  ct_status rc;
  int src;

  if (!c) return CT_ERR_INVALID_ARG;
  rc = cache_prepare(c, "PRAGMA integrity_check", &st);
  if (rc != CT_OK) goto done;
  src = sqlite3_step(st);
  if (src != SQLITE_ROW) {
    rc = cache_sqlfail(c, src, "checking integrity");
    goto done;
  }
  if (strcmp((const char *)sqlite3_column_text(st, 0), "ok") != 0) {
    rc = cache_fail(c, CT_ERR_DB_CORRUPT, "integrity check: %s",
                    (const char *)sqlite3_column_text(st, 0));
    goto done;
  }
  sqlite3_finalize(st);
  st = NULL;

  rc = cache_prepare(c, "PRAGMA foreign_key_check", &st);
  if (rc != CT_OK) goto done;
  src = sqlite3_step(st);
  if (src == SQLITE_ROW) {
    rc = cache_fail(c, CT_ERR_DB_CORRUPT,
                    "row %lld of %s refers to a missing %s row",
                    (long long)sqlite3_column_int64(st, 1),
                    (const char *)sqlite3_column_text(st, 0),
                    (const char *)sqlite3_column_text(st, 2));
    goto done;
  }
  if (src != SQLITE_DONE) {
    rc = cache_sqlfail(c, src, "checking foreign keys");
    goto done;
  }
  sqlite3_finalize(st);
  st = NULL;

  rc = cache_prepare(c,
                     "SELECT problem_id, device_id, cubin, cubin_hash"
                     " FROM winners",
                     &st);
  if (rc != CT_OK) goto done;
  while ((src = sqlite3_step(st)) == SQLITE_ROW) {
    const void *b = sqlite3_column_blob(st, 2);
    size_t size = (size_t)sqlite3_column_bytes(st, 2);
    uint64_t want = cache_i2u(sqlite3_column_int64(st, 3));
    if (ct_gen_hash(b, size, CT_GEN_HASH_SEED) != want) {
      rc = cache_fail(c, CT_ERR_DB_CORRUPT,
                      "cubin of problem %lld on device %lld does not match "
                      "its hash",
                      (long long)sqlite3_column_int64(st, 0),
                      (long long)sqlite3_column_int64(st, 1));
      goto done;
    }
  }
  if (src != SQLITE_DONE) {
    rc = cache_sqlfail(c, src, "reading winners");
    goto done;
  }
  if (c->version >= 3)
    rc = ct_cache_cubin_foreach(c, cache_cubin_accept, NULL);
done:
  sqlite3_finalize(st);
  return rc;
}

/* ---------------------------------------------------------------------- */
/* Devices and problems                                                    */

static const char cache_sql_device_find[] =
  "SELECT id FROM devices WHERE name = ?1 AND cc_major = ?2"
  " AND cc_minor = ?3 AND sm_count = ?4 AND driver_version = ?5"
  " AND nvrtc_version = ?6 AND arch = ?7";
static const char cache_sql_device_insert[] =
  "INSERT OR IGNORE INTO devices(name, cc_major, cc_minor, sm_count,"
  " driver_version, nvrtc_version, arch) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)";

/* Binds a device's fields to ?first .. ?first+6. */
static int cache_bind_device(sqlite3_stmt *st, int first,
                             const ct_cache_device *d)
{
  int src;
  if ((src = sqlite3_bind_text(st, first, d->name, -1, SQLITE_STATIC)) ||
      (src = sqlite3_bind_int(st, first + 1, d->cc_major)) ||
      (src = sqlite3_bind_int(st, first + 2, d->cc_minor)) ||
      (src = sqlite3_bind_int(st, first + 3, d->sm_count)) ||
      (src = sqlite3_bind_int(st, first + 4, d->driver_version)) ||
      (src = sqlite3_bind_text(st, first + 5, d->nvrtc_version, -1,
                               SQLITE_STATIC)) ||
      (src = sqlite3_bind_text(st, first + 6, d->arch, -1, SQLITE_STATIC)))
    return src;
  return SQLITE_OK;
}

static int cache_device_ok(const ct_cache_device *d)
{
  return d && cache_fits(d->name, sizeof d->name) &&
         cache_fits(d->nvrtc_version, sizeof d->nvrtc_version) &&
         cache_fits(d->arch, sizeof d->arch);
}

/* Runs a device statement: with id, a lookup (CT_ERR_NOT_FOUND when no
** row); without, a write. */
static ct_status cache_device_run(ct_cache *c, const char *sql,
                                  const ct_cache_device *d, int64_t *id)
{
  sqlite3_stmt *st = NULL;
  ct_status rc = cache_prepare(c, sql, &st);
  int src;
  if (rc != CT_OK) goto done;
  src = cache_bind_device(st, 1, d);
  if (src == SQLITE_OK) src = sqlite3_step(st);
  if (id && src == SQLITE_ROW) {
    *id = sqlite3_column_int64(st, 0);
  } else if (id && src == SQLITE_DONE) {
    rc = cache_fail(c, CT_ERR_NOT_FOUND, "no device \"%s\" with these fields",
                    d->name);
  } else if (src != SQLITE_DONE) {
    rc = cache_sqlfail(c, src, id ? "finding a device" : "adding a device");
  }
done:
  sqlite3_finalize(st);
  return rc;
}

ct_status ct_cache_device_id(ct_cache *c, const ct_cache_device *d,
                             int64_t *id)
{
  ct_status rc;
  if (!c || !cache_device_ok(d) || !id) return CT_ERR_INVALID_ARG;
  rc = cache_device_run(c, cache_sql_device_find, d, id);
  if (rc != CT_ERR_NOT_FOUND || c->readonly) return rc;
  /* OR IGNORE: another writer may have inserted it since the lookup. */
  rc = cache_device_run(c, cache_sql_device_insert, d, NULL);
  if (rc != CT_OK) return rc;
  return cache_device_run(c, cache_sql_device_find, d, id);
}

ct_status ct_cache_device_get(ct_cache *c, int64_t device_id,
                              ct_cache_device *out)
{
  sqlite3_stmt *st = NULL;
  ct_status rc;
  int src;

  if (!c || !out || device_id <= 0) return CT_ERR_INVALID_ARG;
  rc = cache_prepare(c,
                     "SELECT name, cc_major, cc_minor, sm_count,"
                     " driver_version, nvrtc_version, arch"
                     " FROM devices WHERE id = ?1",
                     &st);
  if (rc != CT_OK) goto done;
  src = sqlite3_bind_int64(st, 1, device_id);
  if (src == SQLITE_OK) src = sqlite3_step(st);
  if (src == SQLITE_DONE) {
    rc = cache_fail(c, CT_ERR_NOT_FOUND, "no device %lld",
                    (long long)device_id);
    goto done;
  }
  if (src != SQLITE_ROW) {
    rc = cache_sqlfail(c, src, "reading a device");
    goto done;
  }
  memset(out, 0, sizeof *out);
  cache_column_text(st, 0, out->name, sizeof out->name);
  out->cc_major = sqlite3_column_int(st, 1);
  out->cc_minor = sqlite3_column_int(st, 2);
  out->sm_count = sqlite3_column_int(st, 3);
  out->driver_version = sqlite3_column_int(st, 4);
  cache_column_text(st, 5, out->nvrtc_version, sizeof out->nvrtc_version);
  cache_column_text(st, 6, out->arch, sizeof out->arch);
done:
  sqlite3_finalize(st);
  return rc;
}

/* Runs a problem statement binding spec to ?1 and, if not NULL, precision
** to ?2: with id, a lookup; without, a write. */
static ct_status cache_problem_run(ct_cache *c, const char *sql,
                                   const char *spec, const char *precision,
                                   int64_t *id)
{
  sqlite3_stmt *st = NULL;
  ct_status rc = cache_prepare(c, sql, &st);
  int src;
  if (rc != CT_OK) goto done;
  src = sqlite3_bind_text(st, 1, spec, -1, SQLITE_STATIC);
  if (src == SQLITE_OK && precision)
    src = sqlite3_bind_text(st, 2, precision, -1, SQLITE_STATIC);
  if (src == SQLITE_OK) src = sqlite3_step(st);
  if (id && src == SQLITE_ROW) {
    *id = sqlite3_column_int64(st, 0);
  } else if (id && src == SQLITE_DONE) {
    rc = cache_fail(c, CT_ERR_NOT_FOUND, "no problem \"%s\"", spec);
  } else if (src != SQLITE_DONE) {
    rc = cache_sqlfail(c, src, id ? "finding a problem" : "adding a problem");
  }
done:
  sqlite3_finalize(st);
  return rc;
}

static const char cache_sql_problem_find[] =
  "SELECT id FROM problems WHERE spec = ?1";

ct_status ct_cache_problem_find(ct_cache *c, const char *spec, int64_t *id)
{
  if (!c || !spec || !spec[0] || !id) return CT_ERR_INVALID_ARG;
  if (!cache_fits(spec, CT_PROBLEM_SPEC_MAX)) return CT_ERR_INVALID_ARG;
  return cache_problem_run(c, cache_sql_problem_find, spec, NULL, id);
}

ct_status ct_cache_problem_id(ct_cache *c, const char *spec,
                              const char *precision, int64_t *id)
{
  ct_status rc;
  if (!c || !spec || !spec[0] || !precision || !precision[0] || !id)
    return CT_ERR_INVALID_ARG;
  if (!cache_fits(spec, CT_PROBLEM_SPEC_MAX) ||
      !cache_fits(precision, sizeof ((ct_cache_winner *)0)->precision))
    return CT_ERR_INVALID_ARG;
  rc = cache_problem_run(c, cache_sql_problem_find, spec, NULL, id);
  if (rc != CT_ERR_NOT_FOUND || c->readonly) return rc;
  rc = cache_problem_run(c,
                         "INSERT OR IGNORE INTO problems(spec, precision)"
                         " VALUES(?1, ?2)",
                         spec, precision, NULL);
  if (rc != CT_OK) return rc;
  return cache_problem_run(c, cache_sql_problem_find, spec, NULL, id);
}

/* ---------------------------------------------------------------------- */
/* Trials                                                                  */

static const char *const cache_trial_names[] = {
  [CT_TRIAL_TIMED] = "timed",
  [CT_TRIAL_WRONG] = "wrong",
  [CT_TRIAL_COMPILE_FAILED] = "compile-failed",
  [CT_TRIAL_LAUNCH_FAILED] = "launch-failed",
  [CT_TRIAL_FAULTED] = "faulted",
  [CT_TRIAL_TIMEOUT] = "timeout",
};
#define CACHE_N_TRIAL_STATUS \
  (sizeof cache_trial_names / sizeof cache_trial_names[0])

const char *ct_trial_status_name(ct_trial_status s)
{
  if ((unsigned)s >= CACHE_N_TRIAL_STATUS) return NULL;
  return cache_trial_names[s];
}

ct_status ct_trial_status_parse(const char *name, ct_trial_status *s)
{
  size_t i;
  if (!name || !s) return CT_ERR_PARSE;
  for (i = 0; i < CACHE_N_TRIAL_STATUS; i++) {
    if (strcmp(name, cache_trial_names[i]) == 0) {
      *s = (ct_trial_status)i;
      return CT_OK;
    }
  }
  return CT_ERR_PARSE;
}

/* The columns cache_read_trial reads, in its order. */
#define CACHE_TRIAL_COLUMNS                                                   \
  "id, problem_id, device_id, variant, status, source_hash, compile_ms,"      \
  " regs, spill_bytes, smem_bytes, max_abs_err, rel_err, mean_ms,"            \
  " median_ms, min_ms, max_ms, n_timed, message, created_at"

static ct_status cache_read_trial(ct_cache *c, sqlite3_stmt *st,
                                  ct_cache_trial *t)
{
  const char *status = (const char *)sqlite3_column_text(st, 4);
  memset(t, 0, sizeof *t);
  t->id = sqlite3_column_int64(st, 0);
  t->problem_id = sqlite3_column_int64(st, 1);
  t->device_id = sqlite3_column_int64(st, 2);
  cache_column_text(st, 3, t->variant, sizeof t->variant);
  if (ct_trial_status_parse(status, &t->status) != CT_OK)
    return cache_fail(c, CT_ERR_DB_CORRUPT,
                      "trial %lld has an unknown status", (long long)t->id);
  t->source_hash = cache_i2u(sqlite3_column_int64(st, 5));
  t->compile_ms = cache_column_real(st, 6);
  t->regs = sqlite3_column_int(st, 7);
  t->spill_bytes = sqlite3_column_int(st, 8);
  t->smem_bytes = sqlite3_column_int(st, 9);
  t->max_abs_err = cache_column_real(st, 10);
  t->rel_err = cache_column_real(st, 11);
  t->mean_ms = cache_column_real(st, 12);
  t->median_ms = cache_column_real(st, 13);
  t->min_ms = cache_column_real(st, 14);
  t->max_ms = cache_column_real(st, 15);
  t->n_timed = sqlite3_column_int(st, 16);
  cache_column_text(st, 17, t->message, sizeof t->message);
  t->created_at = sqlite3_column_int64(st, 18);
  return CT_OK;
}

/* The checks before a trial is written: its ids, its strings and its
** status (whose name goes to *status), and a writable database. */
static ct_status trial_check(ct_cache *c, const ct_cache_trial *t, const char **status)
{
  if (!c || !t || t->problem_id <= 0 || t->device_id <= 0 ||
      !cache_fits(t->variant, sizeof t->variant) || !t->variant[0] ||
      !cache_fits(t->message, sizeof t->message))
    return CT_ERR_INVALID_ARG;
  *status = ct_trial_status_name(t->status);
  if (!*status) return CT_ERR_INVALID_ARG;
  return cache_writable(c);
}

/* Inserts *t stamped created_at; sets t->id and t->created_at.  The work of
** ct_cache_trial_add (now) and ct_cache_trial_import (the trial's own time). */
static ct_status trial_insert(ct_cache *c, ct_cache_trial *t, int64_t created_at)
{
  sqlite3_stmt *st = NULL;
  const char *status;
  ct_status rc;
  int src;

  rc = trial_check(c, t, &status);
  if (rc != CT_OK) return rc;

  rc = cache_prepare(c,
                     "INSERT INTO trials(problem_id, device_id, variant,"
                     " status, source_hash, compile_ms, regs, spill_bytes,"
                     " smem_bytes, max_abs_err, rel_err, mean_ms, median_ms,"
                     " min_ms, max_ms, n_timed, message, created_at)"
                     " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11,"
                     " ?12, ?13, ?14, ?15, ?16, ?17, ?18)",
                     &st);
  if (rc != CT_OK) goto done;
  if ((src = sqlite3_bind_int64(st, 1, t->problem_id)) ||
      (src = sqlite3_bind_int64(st, 2, t->device_id)) ||
      (src = sqlite3_bind_text(st, 3, t->variant, -1, SQLITE_STATIC)) ||
      (src = sqlite3_bind_text(st, 4, status, -1, SQLITE_STATIC)) ||
      (src = sqlite3_bind_int64(st, 5, cache_u2i(t->source_hash))) ||
      (src = cache_bind_real(st, 6, t->compile_ms)) ||
      (src = sqlite3_bind_int(st, 7, t->regs)) ||
      (src = sqlite3_bind_int(st, 8, t->spill_bytes)) ||
      (src = sqlite3_bind_int(st, 9, t->smem_bytes)) ||
      (src = cache_bind_real(st, 10, t->max_abs_err)) ||
      (src = cache_bind_real(st, 11, t->rel_err)) ||
      (src = cache_bind_real(st, 12, t->mean_ms)) ||
      (src = cache_bind_real(st, 13, t->median_ms)) ||
      (src = cache_bind_real(st, 14, t->min_ms)) ||
      (src = cache_bind_real(st, 15, t->max_ms)) ||
      (src = sqlite3_bind_int(st, 16, t->n_timed)) ||
      (src = sqlite3_bind_text(st, 17, t->message, -1, SQLITE_STATIC)) ||
      (src = sqlite3_bind_int64(st, 18, created_at)))
    goto bad;
  src = sqlite3_step(st);
  if (src != SQLITE_DONE) goto bad;
  t->id = sqlite3_last_insert_rowid(c->db);
  t->created_at = created_at;
  goto done;
bad:
  rc = cache_sqlfail(c, src, "adding a trial");
done:
  sqlite3_finalize(st);
  return rc;
}

ct_status ct_cache_trial_add(ct_cache *c, ct_cache_trial *t)
{
  return trial_insert(c, t, (int64_t)time(NULL));
}

ct_status ct_cache_trials(ct_cache *c, int64_t problem_id, int64_t device_id,
                          ct_cache_trial **out, size_t *n)
{
  sqlite3_stmt *st = NULL;
  ct_cache_trial *v = NULL;
  size_t count = 0, cap = 0;
  ct_status rc;
  int src;

  if (out) *out = NULL;
  if (n) *n = 0;
  if (!c || !out || !n || problem_id <= 0 || device_id < 0)
    return CT_ERR_INVALID_ARG;
  rc = cache_prepare(c,
                     "SELECT " CACHE_TRIAL_COLUMNS " FROM trials"
                     " WHERE problem_id = ?1 AND (?2 = 0 OR device_id = ?2)"
                     " ORDER BY mean_ms IS NULL, mean_ms, id",
                     &st);
  if (rc != CT_OK) goto done;
  src = sqlite3_bind_int64(st, 1, problem_id);
  if (src == SQLITE_OK) src = sqlite3_bind_int64(st, 2, device_id);
  if (src != SQLITE_OK) {
    rc = cache_sqlfail(c, src, "listing trials");
    goto done;
  }
  while ((src = sqlite3_step(st)) == SQLITE_ROW) {
    if (count == cap) {
      size_t ncap = cap ? 2 * cap : 16;
      ct_cache_trial *nv = realloc(v, ncap * sizeof *nv);
      if (!nv) {
        rc = cache_fail(c, CT_ERR_NOMEM, "out of memory");
        goto done;
      }
      v = nv;
      cap = ncap;
    }
    rc = cache_read_trial(c, st, &v[count]);
    if (rc != CT_OK) goto done;
    count++;
  }
  if (src != SQLITE_DONE) rc = cache_sqlfail(c, src, "listing trials");
done:
  sqlite3_finalize(st);
  if (rc != CT_OK) {
    free(v);
    return rc;
  }
  *out = v;
  *n = count;
  return CT_OK;
}

ct_status ct_cache_trial_find(ct_cache *c, int64_t problem_id,
                              int64_t device_id, const char *variant,
                              uint64_t source_hash, ct_cache_trial *out)
{
  sqlite3_stmt *st = NULL;
  ct_status rc;
  int src;

  if (!c || problem_id <= 0 || device_id <= 0 || !variant || !out)
    return CT_ERR_INVALID_ARG;
  rc = cache_prepare(c,
                     "SELECT " CACHE_TRIAL_COLUMNS " FROM trials"
                     " WHERE problem_id = ?1 AND device_id = ?2"
                     " AND variant = ?3 AND source_hash = ?4"
                     " ORDER BY id DESC LIMIT 1",
                     &st);
  if (rc != CT_OK) goto done;
  if ((src = sqlite3_bind_int64(st, 1, problem_id)) ||
      (src = sqlite3_bind_int64(st, 2, device_id)) ||
      (src = sqlite3_bind_text(st, 3, variant, -1, SQLITE_STATIC)) ||
      (src = sqlite3_bind_int64(st, 4, cache_u2i(source_hash))))
    goto bad;
  src = sqlite3_step(st);
  if (src == SQLITE_ROW) {
    rc = cache_read_trial(c, st, out);
    goto done;
  }
  if (src == SQLITE_DONE) {
    rc = cache_fail(c, CT_ERR_NOT_FOUND, "no trial of %s", variant);
    goto done;
  }
bad:
  rc = cache_sqlfail(c, src, "finding a trial");
done:
  sqlite3_finalize(st);
  return rc;
}

/* ---------------------------------------------------------------------- */
/* Winners                                                                 */

ct_status ct_cache_winner_set(ct_cache *c, const ct_cache_winner *w)
{
  sqlite3_stmt *st = NULL;
  ct_status rc;
  int src;

  if (!c || !w || w->problem_id <= 0 || w->device_id <= 0 ||
      w->trial_id < 0 || !w->cubin || w->cubin_size == 0 ||
      !cache_fits(w->variant, sizeof w->variant) || !w->variant[0] ||
      !cache_fits(w->arch, sizeof w->arch) ||
      !cache_fits(w->nvrtc_version, sizeof w->nvrtc_version) ||
      !cache_fits(w->options, sizeof w->options))
    return CT_ERR_INVALID_ARG;
  if (ct_gen_hash(w->cubin, w->cubin_size, CT_GEN_HASH_SEED) !=
      w->cubin_hash)
    return CT_ERR_INVALID_ARG;
  rc = cache_writable(c);
  if (rc != CT_OK) return rc;

  /* Writable handles are always at the current schema (options exists). */
  rc = cache_prepare(c,
                     "INSERT OR REPLACE INTO winners(problem_id, device_id,"
                     " trial_id, variant, source_hash, cubin, cubin_hash,"
                     " arch, nvrtc_version, options, mean_ms, created_at)"
                     " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11,"
                     " ?12)",
                     &st);
  if (rc != CT_OK) goto done;
  if ((src = sqlite3_bind_int64(st, 1, w->problem_id)) ||
      (src = sqlite3_bind_int64(st, 2, w->device_id)) ||
      (src = w->trial_id ? sqlite3_bind_int64(st, 3, w->trial_id)
                         : sqlite3_bind_null(st, 3)) ||
      (src = sqlite3_bind_text(st, 4, w->variant, -1, SQLITE_STATIC)) ||
      (src = sqlite3_bind_int64(st, 5, cache_u2i(w->source_hash))) ||
      (src = sqlite3_bind_blob64(st, 6, w->cubin, w->cubin_size,
                                 SQLITE_STATIC)) ||
      (src = sqlite3_bind_int64(st, 7, cache_u2i(w->cubin_hash))) ||
      (src = sqlite3_bind_text(st, 8, w->arch, -1, SQLITE_STATIC)) ||
      (src = sqlite3_bind_text(st, 9, w->nvrtc_version, -1,
                               SQLITE_STATIC)) ||
      (src = sqlite3_bind_text(st, 10, w->options, -1, SQLITE_STATIC)) ||
      (src = cache_bind_real(st, 11, w->mean_ms)) ||
      (src = sqlite3_bind_int64(st, 12, (int64_t)time(NULL))))
    goto bad;
  src = sqlite3_step(st);
  if (src == SQLITE_DONE) goto done;
bad:
  rc = cache_sqlfail(c, src, "storing a winner");
done:
  sqlite3_finalize(st);
  return rc;
}

/* The winner query; OPTIONS is the options column, or '' before schema 2. */
#define CACHE_WINNER_SELECT(OPTIONS)                                          \
  "SELECT w.problem_id, w.device_id, w.trial_id, p.spec, p.precision,"        \
  " w.variant, w.source_hash, w.cubin_hash, w.arch, w.nvrtc_version, "        \
  OPTIONS ", w.mean_ms, w.created_at, w.cubin"                                \
  " FROM winners w JOIN problems p ON p.id = w.problem_id"                    \
  " JOIN devices d ON d.id = w.device_id"                                     \
  " WHERE p.spec = ?1 AND d.name = ?2 AND d.cc_major = ?3"                    \
  " AND d.cc_minor = ?4 AND d.sm_count = ?5 AND d.driver_version = ?6"        \
  " AND d.nvrtc_version = ?7 AND d.arch = ?8"

ct_status ct_cache_winner_get(ct_cache *c, const char *spec,
                              const ct_cache_device *d, ct_cache_winner *out)
{
  sqlite3_stmt *st = NULL;
  const void *blob;
  size_t size;
  ct_status rc;
  int src;

  if (out) memset(out, 0, sizeof *out);
  if (!c || !spec || !cache_device_ok(d) || !out) return CT_ERR_INVALID_ARG;
  rc = cache_prepare(c,
                     c->version >= 2 ? CACHE_WINNER_SELECT("w.options")
                                     : CACHE_WINNER_SELECT("''"),
                     &st);
  if (rc != CT_OK) goto done;
  if ((src = sqlite3_bind_text(st, 1, spec, -1, SQLITE_STATIC)) ||
      (src = cache_bind_device(st, 2, d)))
    goto bad;
  src = sqlite3_step(st);
  if (src == SQLITE_DONE) {
    rc = cache_fail(c, CT_ERR_NOT_FOUND, "no winner for %s on %s %s", spec,
                    d->name, d->arch);
    goto done;
  }
  if (src != SQLITE_ROW) goto bad;

  out->problem_id = sqlite3_column_int64(st, 0);
  out->device_id = sqlite3_column_int64(st, 1);
  out->trial_id = sqlite3_column_int64(st, 2); /* NULL reads as 0 */
  cache_column_text(st, 3, out->spec, sizeof out->spec);
  cache_column_text(st, 4, out->precision, sizeof out->precision);
  cache_column_text(st, 5, out->variant, sizeof out->variant);
  out->source_hash = cache_i2u(sqlite3_column_int64(st, 6));
  out->cubin_hash = cache_i2u(sqlite3_column_int64(st, 7));
  cache_column_text(st, 8, out->arch, sizeof out->arch);
  cache_column_text(st, 9, out->nvrtc_version, sizeof out->nvrtc_version);
  cache_column_text(st, 10, out->options, sizeof out->options);
  out->mean_ms = cache_column_real(st, 11);
  out->created_at = sqlite3_column_int64(st, 12);
  blob = sqlite3_column_blob(st, 13);
  size = (size_t)sqlite3_column_bytes(st, 13);
  if (size == 0 ||
      ct_gen_hash(blob, size, CT_GEN_HASH_SEED) != out->cubin_hash) {
    rc = cache_fail(c, CT_ERR_DB_CORRUPT,
                    "cubin of the winner for %s on %s does not match its "
                    "hash",
                    spec, d->name);
    goto done;
  }
  out->cubin = malloc(size);
  if (!out->cubin) {
    rc = cache_fail(c, CT_ERR_NOMEM, "out of memory");
    goto done;
  }
  memcpy(out->cubin, blob, size);
  out->cubin_size = size;
  goto done;
bad:
  rc = cache_sqlfail(c, src, "reading a winner");
done:
  sqlite3_finalize(st);
  if (rc != CT_OK) ct_cache_winner_clear(out);
  return rc;
}

void ct_cache_winner_clear(ct_cache_winner *w)
{
  if (!w) return;
  free(w->cubin);
  memset(w, 0, sizeof *w);
}

/* ---------------------------------------------------------------------- */
/* Listing                                                                 */

ct_status ct_cache_list(ct_cache *c, ct_cache_entry **out, size_t *n)
{
  sqlite3_stmt *st = NULL;
  ct_cache_entry *v = NULL;
  size_t count = 0, cap = 0;
  ct_status rc;
  int src;

  if (out) *out = NULL;
  if (n) *n = 0;
  if (!c || !out || !n) return CT_ERR_INVALID_ARG;
  /* Trials counted on the winner's device, or on all devices without one. */
  rc = cache_prepare(c,
                     "SELECT p.id, p.spec, p.precision,"
                     " (SELECT count(*) FROM trials t WHERE t.problem_id = p.id"
                     "   AND (w.device_id IS NULL OR t.device_id = w.device_id)),"
                     " (SELECT count(*) FROM trials t WHERE t.problem_id = p.id"
                     "   AND (w.device_id IS NULL OR t.device_id = w.device_id)"
                     "   AND t.status = 'timed'),"
                     " w.device_id, d.name, w.variant, w.mean_ms"
                     " FROM problems p"
                     " LEFT JOIN winners w ON w.problem_id = p.id"
                     " LEFT JOIN devices d ON d.id = w.device_id"
                     " ORDER BY p.id, w.device_id",
                     &st);
  if (rc != CT_OK) goto done;
  while ((src = sqlite3_step(st)) == SQLITE_ROW) {
    ct_cache_entry *e;
    if (count == cap) {
      size_t ncap = cap ? 2 * cap : 16;
      ct_cache_entry *nv = realloc(v, ncap * sizeof *nv);
      if (!nv) {
        rc = cache_fail(c, CT_ERR_NOMEM, "out of memory");
        goto done;
      }
      v = nv;
      cap = ncap;
    }
    e = &v[count++];
    memset(e, 0, sizeof *e);
    e->problem_id = sqlite3_column_int64(st, 0);
    cache_column_text(st, 1, e->spec, sizeof e->spec);
    cache_column_text(st, 2, e->precision, sizeof e->precision);
    e->n_trials = sqlite3_column_int(st, 3);
    e->n_timed = sqlite3_column_int(st, 4);
    e->device_id = sqlite3_column_int64(st, 5); /* NULL reads as 0 */
    cache_column_text(st, 6, e->device, sizeof e->device);
    cache_column_text(st, 7, e->variant, sizeof e->variant);
    e->mean_ms = cache_column_real(st, 8);
  }
  if (src != SQLITE_DONE) rc = cache_sqlfail(c, src, "listing problems");
done:
  sqlite3_finalize(st);
  if (rc != CT_OK) {
    free(v);
    return rc;
  }
  *out = v;
  *n = count;
  return CT_OK;
}

/* ---------------------------------------------------------------------- */
/* The compile cache                                                       */

static int cache_cubin_ok(const ct_cache_cubin *cb)
{
  return cb && cache_fits(cb->options, sizeof cb->options) &&
         cache_fits(cb->arch, sizeof cb->arch) &&
         cache_fits(cb->nvrtc_version, sizeof cb->nvrtc_version);
}

ct_status ct_cache_cubin_put(ct_cache *c, const ct_cache_cubin *cb,
                             int *inserted)
{
  sqlite3_stmt *st = NULL;
  ct_status rc;
  int src;

  if (inserted) *inserted = 0;
  if (!c || !cache_cubin_ok(cb) || !cb->cubin || cb->cubin_size == 0 ||
      ct_gen_hash(cb->cubin, cb->cubin_size, CT_GEN_HASH_SEED) !=
          cb->cubin_hash)
    return CT_ERR_INVALID_ARG;
  rc = cache_writable(c);
  if (rc != CT_OK) return rc;
  rc = cache_prepare(c,
                     "INSERT OR IGNORE INTO cubins(source_hash, options, arch,"
                     " nvrtc_version, cubin, cubin_hash, regs, spill_bytes,"
                     " stack_bytes, smem_static, compile_ms, created_at)"
                     " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11,"
                     " ?12)",
                     &st);
  if (rc != CT_OK) goto done;
  if ((src = sqlite3_bind_int64(st, 1, cache_u2i(cb->source_hash))) ||
      (src = sqlite3_bind_text(st, 2, cb->options, -1, SQLITE_STATIC)) ||
      (src = sqlite3_bind_text(st, 3, cb->arch, -1, SQLITE_STATIC)) ||
      (src = sqlite3_bind_text(st, 4, cb->nvrtc_version, -1,
                               SQLITE_STATIC)) ||
      (src = sqlite3_bind_blob64(st, 5, cb->cubin, cb->cubin_size,
                                 SQLITE_STATIC)) ||
      (src = sqlite3_bind_int64(st, 6, cache_u2i(cb->cubin_hash))) ||
      (src = sqlite3_bind_int(st, 7, cb->regs)) ||
      (src = sqlite3_bind_int(st, 8, cb->spill_bytes)) ||
      (src = sqlite3_bind_int(st, 9, cb->stack_bytes)) ||
      (src = sqlite3_bind_int(st, 10, cb->smem_static)) ||
      (src = cache_bind_real(st, 11, cb->compile_ms)) ||
      (src = sqlite3_bind_int64(st, 12, cb->created_at > 0
                                            ? cb->created_at
                                            : (int64_t)time(NULL))))
    goto bad;
  src = sqlite3_step(st);
  if (src != SQLITE_DONE) goto bad;
  if (inserted) *inserted = sqlite3_changes(c->db) > 0;
  goto done;
bad:
  rc = cache_sqlfail(c, src, "storing a cubin");
done:
  sqlite3_finalize(st);
  return rc;
}

/* The columns cache_read_cubin reads, in its order. */
#define CACHE_CUBIN_COLUMNS                                                   \
  "source_hash, options, arch, nvrtc_version, cubin_hash, regs,"              \
  " spill_bytes, stack_bytes, smem_static, compile_ms, created_at, cubin"

/* Reads a row of CACHE_CUBIN_COLUMNS into *out; with copy, out->cubin is a
** malloc'd copy, else it points into the statement (valid until the next
** step).  Checks the bytes against the hash. */
static ct_status cache_read_cubin(ct_cache *c, sqlite3_stmt *st,
                                  ct_cache_cubin *out, int copy)
{
  const void *blob;
  size_t size;

  memset(out, 0, sizeof *out);
  out->source_hash = cache_i2u(sqlite3_column_int64(st, 0));
  cache_column_text(st, 1, out->options, sizeof out->options);
  cache_column_text(st, 2, out->arch, sizeof out->arch);
  cache_column_text(st, 3, out->nvrtc_version, sizeof out->nvrtc_version);
  out->cubin_hash = cache_i2u(sqlite3_column_int64(st, 4));
  out->regs = sqlite3_column_int(st, 5);
  out->spill_bytes = sqlite3_column_int(st, 6);
  out->stack_bytes = sqlite3_column_int(st, 7);
  out->smem_static = sqlite3_column_int(st, 8);
  out->compile_ms = cache_column_real(st, 9);
  out->created_at = sqlite3_column_int64(st, 10);
  blob = sqlite3_column_blob(st, 11);
  size = (size_t)sqlite3_column_bytes(st, 11);
  if (size == 0 ||
      ct_gen_hash(blob, size, CT_GEN_HASH_SEED) != out->cubin_hash)
    return cache_fail(c, CT_ERR_DB_CORRUPT,
                      "cached cubin %016llx for %s does not match its hash",
                      (unsigned long long)out->source_hash, out->arch);
  if (!copy) {
    out->cubin = (void *)blob;
  } else {
    out->cubin = malloc(size);
    if (!out->cubin) return cache_fail(c, CT_ERR_NOMEM, "out of memory");
    memcpy(out->cubin, blob, size);
  }
  out->cubin_size = size;
  return CT_OK;
}

ct_status ct_cache_cubin_get(ct_cache *c, uint64_t source_hash,
                             const char *options, const char *arch,
                             const char *nvrtc_version, ct_cache_cubin *out)
{
  sqlite3_stmt *st = NULL;
  ct_status rc;
  int src;

  if (out) memset(out, 0, sizeof *out);
  if (!c || !options || !arch || !nvrtc_version || !out)
    return CT_ERR_INVALID_ARG;
  if (c->version < 3)
    return cache_fail(c, CT_ERR_NOT_FOUND, "no compile cache before schema 3");
  rc = cache_prepare(c,
                     "SELECT " CACHE_CUBIN_COLUMNS " FROM cubins"
                     " WHERE source_hash = ?1 AND options = ?2 AND arch = ?3"
                     " AND nvrtc_version = ?4",
                     &st);
  if (rc != CT_OK) goto done;
  if ((src = sqlite3_bind_int64(st, 1, cache_u2i(source_hash))) ||
      (src = sqlite3_bind_text(st, 2, options, -1, SQLITE_STATIC)) ||
      (src = sqlite3_bind_text(st, 3, arch, -1, SQLITE_STATIC)) ||
      (src = sqlite3_bind_text(st, 4, nvrtc_version, -1, SQLITE_STATIC)))
    goto bad;
  src = sqlite3_step(st);
  if (src == SQLITE_ROW) {
    rc = cache_read_cubin(c, st, out, 1);
    goto done;
  }
  if (src == SQLITE_DONE) {
    rc = cache_fail(c, CT_ERR_NOT_FOUND, "no cached cubin %016llx for %s",
                    (unsigned long long)source_hash, arch);
    goto done;
  }
bad:
  rc = cache_sqlfail(c, src, "reading a cached cubin");
done:
  sqlite3_finalize(st);
  if (rc != CT_OK) ct_cache_cubin_clear(out);
  return rc;
}

void ct_cache_cubin_clear(ct_cache_cubin *cb)
{
  if (!cb) return;
  free(cb->cubin);
  memset(cb, 0, sizeof *cb);
}

ct_status ct_cache_cubin_foreach(ct_cache *c,
                                 ct_status (*fn)(void *arg,
                                                 const ct_cache_cubin *cb),
                                 void *arg)
{
  sqlite3_stmt *st = NULL;
  ct_cache_cubin cb;
  ct_status rc;
  int src;

  if (!c || !fn) return CT_ERR_INVALID_ARG;
  if (c->version < 3) return CT_OK;
  rc = cache_prepare(c,
                     "SELECT " CACHE_CUBIN_COLUMNS " FROM cubins ORDER BY"
                     " source_hash, options, arch, nvrtc_version",
                     &st);
  if (rc != CT_OK) goto done;
  while ((src = sqlite3_step(st)) == SQLITE_ROW) {
    rc = cache_read_cubin(c, st, &cb, 0);
    if (rc == CT_OK) rc = fn(arg, &cb);
    if (rc != CT_OK) goto done;
  }
  if (src != SQLITE_DONE) rc = cache_sqlfail(c, src, "listing cubins");
done:
  sqlite3_finalize(st);
  return rc;
}

/* ---------------------------------------------------------------------- */
/* Transactions                                                            */

ct_status ct_cache_begin(ct_cache *c)
{
  ct_status rc;
  if (!c) return CT_ERR_INVALID_ARG;
  rc = cache_writable(c);
  if (rc != CT_OK) return rc;
  return cache_exec(c, "BEGIN IMMEDIATE", "starting a transaction");
}

ct_status ct_cache_begin_read(ct_cache *c)
{
  if (!c) return CT_ERR_INVALID_ARG;
  return cache_exec(c, "BEGIN", "starting a read transaction");
}

ct_status ct_cache_commit(ct_cache *c)
{
  ct_status rc;
  if (!c) return CT_ERR_INVALID_ARG;
  rc = cache_exec(c, "COMMIT", "committing");
  if (rc != CT_OK) cache_rollback(c);
  return rc;
}

void ct_cache_rollback(ct_cache *c)
{
  if (c) cache_rollback(c);
}

/* ---------------------------------------------------------------------- */
/* The whole database, row by row                                          */

/* Grows *v (of *cap elements of size) to hold count + 1.  Returns CT_OK or
** CT_ERR_NOMEM. */
static ct_status cache_grow(ct_cache *c, void **v, size_t *cap, size_t count,
                            size_t size)
{
  void *nv;
  size_t ncap;
  if (count < *cap) return CT_OK;
  ncap = *cap ? 2 * *cap : 16;
  nv = realloc(*v, ncap * size);
  if (!nv) return cache_fail(c, CT_ERR_NOMEM, "out of memory");
  *v = nv;
  *cap = ncap;
  return CT_OK;
}

ct_status ct_cache_devices(ct_cache *c, ct_cache_device_row **out, size_t *n)
{
  sqlite3_stmt *st = NULL;
  ct_cache_device_row *v = NULL;
  size_t count = 0, cap = 0;
  ct_status rc;
  int src;

  if (out) *out = NULL;
  if (n) *n = 0;
  if (!c || !out || !n) return CT_ERR_INVALID_ARG;
  rc = cache_prepare(c,
                     "SELECT id, name, cc_major, cc_minor, sm_count,"
                     " driver_version, nvrtc_version, arch FROM devices"
                     " ORDER BY id",
                     &st);
  if (rc != CT_OK) goto done;
  while ((src = sqlite3_step(st)) == SQLITE_ROW) {
    ct_cache_device_row *e;
    rc = cache_grow(c, (void **)&v, &cap, count, sizeof *v);
    if (rc != CT_OK) goto done;
    e = &v[count++];
    memset(e, 0, sizeof *e);
    e->id = sqlite3_column_int64(st, 0);
    cache_column_text(st, 1, e->device.name, sizeof e->device.name);
    e->device.cc_major = sqlite3_column_int(st, 2);
    e->device.cc_minor = sqlite3_column_int(st, 3);
    e->device.sm_count = sqlite3_column_int(st, 4);
    e->device.driver_version = sqlite3_column_int(st, 5);
    cache_column_text(st, 6, e->device.nvrtc_version,
                      sizeof e->device.nvrtc_version);
    cache_column_text(st, 7, e->device.arch, sizeof e->device.arch);
  }
  if (src != SQLITE_DONE) rc = cache_sqlfail(c, src, "listing devices");
done:
  sqlite3_finalize(st);
  if (rc != CT_OK) {
    free(v);
    return rc;
  }
  *out = v;
  *n = count;
  return CT_OK;
}

ct_status ct_cache_problems(ct_cache *c, ct_cache_problem_row **out,
                            size_t *n)
{
  sqlite3_stmt *st = NULL;
  ct_cache_problem_row *v = NULL;
  size_t count = 0, cap = 0;
  ct_status rc;
  int src;

  if (out) *out = NULL;
  if (n) *n = 0;
  if (!c || !out || !n) return CT_ERR_INVALID_ARG;
  rc = cache_prepare(c, "SELECT id, spec, precision FROM problems ORDER BY id",
                     &st);
  if (rc != CT_OK) goto done;
  while ((src = sqlite3_step(st)) == SQLITE_ROW) {
    ct_cache_problem_row *e;
    rc = cache_grow(c, (void **)&v, &cap, count, sizeof *v);
    if (rc != CT_OK) goto done;
    e = &v[count++];
    memset(e, 0, sizeof *e);
    e->id = sqlite3_column_int64(st, 0);
    cache_column_text(st, 1, e->spec, sizeof e->spec);
    cache_column_text(st, 2, e->precision, sizeof e->precision);
  }
  if (src != SQLITE_DONE) rc = cache_sqlfail(c, src, "listing problems");
done:
  sqlite3_finalize(st);
  if (rc != CT_OK) {
    free(v);
    return rc;
  }
  *out = v;
  *n = count;
  return CT_OK;
}

ct_status ct_cache_winner_read(ct_cache *c, int64_t problem_id,
                               int64_t device_id, ct_cache_winner *out)
{
  ct_cache_device d;
  ct_cache_problem_row *probs = NULL;
  size_t np = 0, i;
  char spec[CT_PROBLEM_SPEC_MAX] = "";
  ct_status rc;

  if (out) memset(out, 0, sizeof *out);
  if (!c || !out || problem_id <= 0 || device_id <= 0)
    return CT_ERR_INVALID_ARG;
  rc = ct_cache_device_get(c, device_id, &d);
  if (rc != CT_OK) return rc;
  rc = ct_cache_problems(c, &probs, &np);
  if (rc != CT_OK) return rc;
  for (i = 0; i < np; i++)
    if (probs[i].id == problem_id) cache_copy(spec, sizeof spec, probs[i].spec);
  free(probs);
  if (!spec[0])
    return cache_fail(c, CT_ERR_NOT_FOUND, "no problem %lld",
                      (long long)problem_id);
  /* Devices are unique in all their fields: the key finds this row. */
  return ct_cache_winner_get(c, spec, &d, out);
}

ct_status ct_cache_trial_import(ct_cache *c, ct_cache_trial *t, int *inserted)
{
  sqlite3_stmt *st = NULL;
  const char *status;
  ct_status rc;
  int src;

  if (inserted) *inserted = 0;
  if (t && t->created_at <= 0) return CT_ERR_INVALID_ARG;
  rc = trial_check(c, t, &status);
  if (rc != CT_OK) return rc;

  /* The same trial already here? */
  rc = cache_prepare(c,
                     "SELECT id FROM trials WHERE problem_id = ?1"
                     " AND device_id = ?2 AND variant = ?3"
                     " AND source_hash = ?4 AND status = ?5"
                     " AND n_timed = ?6 AND mean_ms IS ?7"
                     " AND created_at = ?8 ORDER BY id LIMIT 1",
                     &st);
  if (rc != CT_OK) goto done;
  if ((src = sqlite3_bind_int64(st, 1, t->problem_id)) ||
      (src = sqlite3_bind_int64(st, 2, t->device_id)) ||
      (src = sqlite3_bind_text(st, 3, t->variant, -1, SQLITE_STATIC)) ||
      (src = sqlite3_bind_int64(st, 4, cache_u2i(t->source_hash))) ||
      (src = sqlite3_bind_text(st, 5, status, -1, SQLITE_STATIC)) ||
      (src = sqlite3_bind_int(st, 6, t->n_timed)) ||
      (src = cache_bind_real(st, 7, t->mean_ms)) ||
      (src = sqlite3_bind_int64(st, 8, t->created_at)))
    goto bad;
  src = sqlite3_step(st);
  if (src == SQLITE_ROW) {
    t->id = sqlite3_column_int64(st, 0);
    goto done;
  }
  if (src != SQLITE_DONE) goto bad;
  sqlite3_finalize(st);
  st = NULL;

  rc = trial_insert(c, t, t->created_at);
  if (rc == CT_OK && inserted) *inserted = 1;
  goto done;
bad:
  rc = cache_sqlfail(c, src, "importing a trial");
done:
  sqlite3_finalize(st);
  return rc;
}

ct_status ct_cache_winner_import(ct_cache *c, const ct_cache_winner *w,
                                 int *stored)
{
  sqlite3_stmt *st = NULL;
  ct_status rc;
  int src, newer = 1;

  if (stored) *stored = 0;
  if (!c || !w || w->created_at <= 0) return CT_ERR_INVALID_ARG;
  rc = cache_prepare(c,
                     "SELECT created_at FROM winners WHERE problem_id = ?1"
                     " AND device_id = ?2",
                     &st);
  if (rc != CT_OK) return rc;
  src = sqlite3_bind_int64(st, 1, w->problem_id);
  if (src == SQLITE_OK) src = sqlite3_bind_int64(st, 2, w->device_id);
  if (src == SQLITE_OK) src = sqlite3_step(st);
  if (src == SQLITE_ROW) newer = sqlite3_column_int64(st, 0) < w->created_at;
  else if (src != SQLITE_DONE) rc = cache_sqlfail(c, src, "importing a winner");
  sqlite3_finalize(st);
  st = NULL;
  if (rc != CT_OK || !newer) return rc;

  rc = ct_cache_winner_set(c, w);
  if (rc != CT_OK) return rc;
  rc = cache_prepare(c,
                     "UPDATE winners SET created_at = ?1 WHERE problem_id = ?2"
                     " AND device_id = ?3",
                     &st);
  if (rc != CT_OK) return rc;
  if ((src = sqlite3_bind_int64(st, 1, w->created_at)) ||
      (src = sqlite3_bind_int64(st, 2, w->problem_id)) ||
      (src = sqlite3_bind_int64(st, 3, w->device_id)) ||
      (src = sqlite3_step(st)) != SQLITE_DONE)
    rc = cache_sqlfail(c, src, "importing a winner");
  sqlite3_finalize(st);
  if (rc == CT_OK && stored) *stored = 1;
  return rc;
}

/* ====================================================================== */
/* Untrusted files (for the runtime; see ct_cache_untrusted in ct_cache.h) */

/* Virtual-machine steps between two calls of the progress handler. */
#define CACHE_UNTRUSTED_PERIOD 1000

/* The statement budget of the running thread: reset when a statement
** starts, spent by the progress handler.  Thread-local, so no state is
** kept per handle. */
static __thread long cache_budget;

static int cache_untrusted_trace(unsigned type, void *ctx, void *p, void *x)
{
  (void)ctx, (void)p, (void)x;
  if (type == SQLITE_TRACE_STMT)
    cache_budget = CT_CACHE_UNTRUSTED_STEPS / CACHE_UNTRUSTED_PERIOD;
  return 0;
}

static int cache_untrusted_progress(void *ctx)
{
  (void)ctx;
  return --cache_budget < 0; /* non-zero interrupts the statement */
}

ct_status ct_cache_untrusted(ct_cache *c)
{
  if (!c || !c->db) return CT_ERR_INVALID_ARG;
  sqlite3_db_config(c->db, SQLITE_DBCONFIG_DEFENSIVE, 1, (int *)NULL);
#ifdef SQLITE_DBCONFIG_TRUSTED_SCHEMA
  sqlite3_db_config(c->db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, (int *)NULL);
#endif
  sqlite3_limit(c->db, SQLITE_LIMIT_LENGTH, CT_CACHE_UNTRUSTED_LENGTH);
  sqlite3_exec(c->db, "PRAGMA cell_size_check = ON", NULL, NULL, NULL);
  cache_budget = CT_CACHE_UNTRUSTED_STEPS / CACHE_UNTRUSTED_PERIOD;
  sqlite3_trace_v2(c->db, SQLITE_TRACE_STMT, cache_untrusted_trace, NULL);
  sqlite3_progress_handler(c->db, CACHE_UNTRUSTED_PERIOD,
                           cache_untrusted_progress, NULL);
  return CT_OK;
}
