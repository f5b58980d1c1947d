/*
** test_cache.c — the tuning database on CPU: schema and migrations, default
** path, upserts, trials, winners and their cubins, damaged and foreign
** files, read-only opens, and two writers at once.  Every file lives in a
** fresh temporary directory that is removed at the end.
*/
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sqlite3.h>

#include "ct_cache.h"
#include "test.h"

static char tmp_dir[512];

/* A fresh path in the temporary directory. */
static const char *tmp_path(const char *name)
{
  static char buf[8][1024];
  static int next;
  char *p = buf[next++ % 8];
  snprintf(p, sizeof buf[0], "%s/%s", tmp_dir, name);
  return p;
}

static int file_exists(const char *path)
{
  struct stat sb;
  return stat(path, &sb) == 0;
}

/* ---------------------------------------------------------------------- */
/* Raw SQLite access, to inspect and damage files behind the cache's back  */

/* Runs a script on path; returns the SQLite result code. */
static int raw_exec(const char *path, const char *sql)
{
  sqlite3 *db = NULL;
  int rc = sqlite3_open(path, &db);
  if (rc == SQLITE_OK) rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
  sqlite3_close(db);
  return rc;
}

/* The first column of the first row of a query as an integer, or -999. */
static long long raw_int(const char *path, const char *sql)
{
  sqlite3 *db = NULL;
  sqlite3_stmt *st = NULL;
  long long v = -999;
  if (sqlite3_open(path, &db) == SQLITE_OK &&
      sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK &&
      sqlite3_step(st) == SQLITE_ROW)
    v = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  sqlite3_close(db);
  return v;
}

/* The first column of the first row as text into buf ("" on failure). */
static const char *raw_text(const char *path, const char *sql, char *buf,
                            size_t len)
{
  sqlite3 *db = NULL;
  sqlite3_stmt *st = NULL;
  buf[0] = '\0';
  if (sqlite3_open(path, &db) == SQLITE_OK &&
      sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK &&
      sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
    snprintf(buf, len, "%s", (const char *)sqlite3_column_text(st, 0));
  sqlite3_finalize(st);
  sqlite3_close(db);
  return buf;
}

/* Inverts byte `at` of the (one) stored winner's cubin; returns the SQLite
** result of the UPDATE (SQLITE_DONE on success). */
static int raw_flip_cubin_byte(const char *path, size_t at)
{
  sqlite3 *db = NULL;
  sqlite3_stmt *st = NULL;
  unsigned char *copy = NULL;
  size_t n = 0;
  int rc = sqlite3_open(path, &db);
  if (rc == SQLITE_OK)
    rc = sqlite3_prepare_v2(db, "SELECT cubin FROM winners", -1, &st, NULL);
  if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
    n = (size_t)sqlite3_column_bytes(st, 0);
    copy = malloc(n ? n : 1);
    if (copy && n) memcpy(copy, sqlite3_column_blob(st, 0), n);
    rc = copy && at < n ? SQLITE_OK : SQLITE_ERROR;
  }
  sqlite3_finalize(st);
  st = NULL;
  if (rc == SQLITE_OK) {
    copy[at] ^= 0xff;
    rc = sqlite3_prepare_v2(db, "UPDATE winners SET cubin = ?1", -1, &st,
                            NULL);
  }
  if (rc == SQLITE_OK)
    rc = sqlite3_bind_blob(st, 1, copy, (int)n, SQLITE_STATIC);
  if (rc == SQLITE_OK) rc = sqlite3_step(st);
  sqlite3_finalize(st);
  sqlite3_close(db);
  free(copy);
  return rc;
}

/* ---------------------------------------------------------------------- */
/* Fixtures                                                                */

static ct_cache_device test_device(void)
{
  ct_cache_device d;
  memset(&d, 0, sizeof d);
  strcpy(d.name, "NVIDIA H200");
  d.cc_major = 9;
  d.cc_minor = 0;
  d.sm_count = 132;
  d.driver_version = 12080;
  strcpy(d.nvrtc_version, "12.8");
  strcpy(d.arch, "sm_90a");
  return d;
}

static const char *const spec_a =
  "n=256,c=3,h=224,w=224,k=96,r=11,s=11,stride=4,pad=2,dil=1,bias=1,prec=tf32";
static const char *const spec_b =
  "n=1,c=64,h=56,w=56,k=64,r=3,s=3,stride=1,pad=1,dil=1,bias=0,prec=fp32";

static ct_cache_trial test_trial(int64_t problem_id, int64_t device_id,
                                 const char *variant, double mean_ms)
{
  ct_cache_trial t;
  memset(&t, 0, sizeof t);
  t.problem_id = problem_id;
  t.device_id = device_id;
  snprintf(t.variant, sizeof t.variant, "%s", variant);
  t.status = isnan(mean_ms) ? CT_TRIAL_WRONG : CT_TRIAL_TIMED;
  t.source_hash = 0xfedcba9876543210ull; /* above INT64_MAX */
  t.compile_ms = 123.5;
  t.regs = 128;
  t.spill_bytes = 8;
  t.smem_bytes = 49152;
  t.max_abs_err = 1.5e-4;
  t.rel_err = isnan(mean_ms) ? NAN : 2.5e-5;
  t.mean_ms = mean_ms;
  t.median_ms = mean_ms;
  t.min_ms = isnan(mean_ms) ? NAN : mean_ms - 0.01;
  t.max_ms = isnan(mean_ms) ? NAN : mean_ms + 0.01;
  t.n_timed = isnan(mean_ms) ? 0 : 100;
  snprintf(t.message, sizeof t.message, "%s", isnan(mean_ms) ? "bad" : "");
  return t;
}

/* A winner with an n-byte cubin filled from `fill`; cubin is malloc'd. */
static ct_cache_winner test_winner(int64_t problem_id, int64_t device_id,
                                   int64_t trial_id, size_t n, int fill)
{
  ct_cache_winner w;
  size_t i;
  memset(&w, 0, sizeof w);
  w.problem_id = problem_id;
  w.device_id = device_id;
  w.trial_id = trial_id;
  snprintf(w.variant, sizeof w.variant, "direct:TM=%d,TN=32", fill);
  w.source_hash = 0x8000000000000001ull;
  snprintf(w.arch, sizeof w.arch, "sm_90a");
  snprintf(w.nvrtc_version, sizeof w.nvrtc_version, "12.8");
  snprintf(w.options, sizeof w.options, "--gpu-architecture=sm_90a -O3");
  w.mean_ms = 0.25 * fill;
  w.cubin = malloc(n);
  for (i = 0; w.cubin && i < n; i++)
    ((unsigned char *)w.cubin)[i] = (unsigned char)(i * 31 + (size_t)fill);
  w.cubin_size = n;
  w.cubin_hash = ct_gen_hash(w.cubin, n, CT_GEN_HASH_SEED);
  return w;
}

/* ---------------------------------------------------------------------- */
/* Tests                                                                   */

static void test_schema_created(void)
{
  const char *path = tmp_path("new/sub/dir/tuning.db");
  ct_cache *c = NULL;
  char err[512], buf[64];
  ASSERT_TRUE(!file_exists(tmp_path("new")));
  ASSERT_EQ_INT(ct_cache_open(path, CT_CACHE_CREATE, &c, err, sizeof err),
                CT_OK);
  ASSERT_EQ_INT(ct_cache_schema_version(c), 3);
  ASSERT_EQ_INT(ct_cache_schema_version(c), CT_CACHE_SCHEMA_VERSION);
  ASSERT_EQ_STR(ct_cache_errmsg(c), "");
  ASSERT_EQ_INT(ct_cache_check(c), CT_OK);
  ct_cache_close(c);
  ct_cache_close(NULL);

  ASSERT_EQ_INT(raw_int(path, "PRAGMA user_version"), 3);
  ASSERT_EQ_INT(raw_int(path, "PRAGMA application_id"),
                CT_CACHE_APPLICATION_ID);
  ASSERT_EQ_STR(raw_text(path, "PRAGMA journal_mode", buf, sizeof buf),
                "wal");
  ASSERT_EQ_INT(raw_int(path,
                        "SELECT count(*) FROM sqlite_master WHERE type ="
                        " 'table' AND name IN ('meta', 'devices', 'problems',"
                        " 'trials', 'winners', 'cubins')"),
                6);
  ASSERT_EQ_INT(raw_int(path,
                        "SELECT count(*) FROM sqlite_master WHERE type ="
                        " 'index' AND name = 'trials_by_key'"),
                1);
  ASSERT_EQ_INT(raw_int(path,
                        "SELECT count(*) FROM pragma_table_info('winners')"
                        " WHERE name = 'options'"),
                1);
  ASSERT_EQ_STR(raw_text(path,
                         "SELECT value FROM meta WHERE key = 'application'",
                         buf, sizeof buf),
                "convtune");

  /* Reopening is idempotent. */
  ASSERT_EQ_INT(ct_cache_open(path, 0, &c, err, sizeof err), CT_OK);
  ASSERT_EQ_INT(ct_cache_schema_version(c), 3);
  ct_cache_close(c);
  ASSERT_EQ_INT(raw_int(path, "SELECT count(*) FROM meta"), 1);
}

static void test_default_path(void)
{
  char *saved[3];
  const char *names[3] = {"CONVTUNE_DB", "XDG_CACHE_HOME", "HOME"};
  char buf[256], small[8];
  int i, ok = 1;

  for (i = 0; i < 3; i++) {
    const char *v = getenv(names[i]);
    saved[i] = v ? strdup(v) : NULL;
  }
  setenv("CONVTUNE_DB", "/data/x.db", 1);
  setenv("XDG_CACHE_HOME", "/xdg", 1);
  setenv("HOME", "/home/u", 1);
  if (ct_cache_default_path(buf, sizeof buf) != CT_OK ||
      strcmp(buf, "/data/x.db") != 0) {
    fprintf(stderr, "CONVTUNE_DB: %s\n", buf);
    ok = 0;
  }
  if (ct_cache_default_path(small, sizeof small) != CT_ERR_INVALID_ARG) ok = 0;
  setenv("CONVTUNE_DB", "", 1); /* empty counts as unset */
  if (ct_cache_default_path(buf, sizeof buf) != CT_OK ||
      strcmp(buf, "/xdg/convtune/tuning.db") != 0) {
    fprintf(stderr, "XDG_CACHE_HOME: %s\n", buf);
    ok = 0;
  }
  unsetenv("CONVTUNE_DB");
  setenv("XDG_CACHE_HOME", "relative/dir", 1); /* ignored: not absolute */
  if (ct_cache_default_path(buf, sizeof buf) != CT_OK ||
      strcmp(buf, "/home/u/.cache/convtune/tuning.db") != 0) {
    fprintf(stderr, "relative XDG_CACHE_HOME: %s\n", buf);
    ok = 0;
  }
  unsetenv("XDG_CACHE_HOME");
  if (ct_cache_default_path(buf, sizeof buf) != CT_OK ||
      strcmp(buf, "/home/u/.cache/convtune/tuning.db") != 0) {
    fprintf(stderr, "HOME: %s\n", buf);
    ok = 0;
  }
  unsetenv("HOME");
  if (ct_cache_default_path(buf, sizeof buf) != CT_ERR_IO) ok = 0;
  if (ct_cache_default_path(NULL, 10) != CT_ERR_INVALID_ARG) ok = 0;

  for (i = 0; i < 3; i++) {
    if (saved[i]) setenv(names[i], saved[i], 1);
    else unsetenv(names[i]);
    free(saved[i]);
  }
  ASSERT_TRUE(ok);
}

static void test_device_problem_upsert(void)
{
  const char *path = tmp_path("upsert.db");
  ct_cache *c = NULL;
  ct_cache_device d = test_device(), d2, got;
  int64_t id1 = 0, id2 = 0, id3 = 0, p1 = 0, p2 = 0, p3 = 0, pf = 0;
  char err[512];

  ASSERT_EQ_INT(ct_cache_open(path, CT_CACHE_CREATE, &c, err, sizeof err),
                CT_OK);
  ASSERT_EQ_INT(ct_cache_device_id(c, &d, &id1), CT_OK);
  ASSERT_EQ_INT(ct_cache_device_id(c, &d, &id2), CT_OK);
  ASSERT_TRUE(id1 > 0);
  ASSERT_EQ_INT(id1, id2);
  d2 = d;
  d2.driver_version = 12090; /* any field makes another device */
  ASSERT_EQ_INT(ct_cache_device_id(c, &d2, &id3), CT_OK);
  ASSERT_TRUE(id3 != id1);
  ASSERT_EQ_INT(ct_cache_device_get(c, id3, &got), CT_OK);
  ASSERT_EQ_STR(got.name, "NVIDIA H200");
  ASSERT_EQ_INT(got.cc_major, 9);
  ASSERT_EQ_INT(got.cc_minor, 0);
  ASSERT_EQ_INT(got.sm_count, 132);
  ASSERT_EQ_INT(got.driver_version, 12090);
  ASSERT_EQ_STR(got.nvrtc_version, "12.8");
  ASSERT_EQ_STR(got.arch, "sm_90a");
  ASSERT_EQ_INT(ct_cache_device_get(c, 9999, &got), CT_ERR_NOT_FOUND);

  ASSERT_EQ_INT(ct_cache_problem_find(c, spec_a, &pf), CT_ERR_NOT_FOUND);
  ASSERT_TRUE(strstr(ct_cache_errmsg(c), path) != NULL);
  ASSERT_EQ_INT(ct_cache_problem_id(c, spec_a, "tf32", &p1), CT_OK);
  ASSERT_EQ_INT(ct_cache_problem_id(c, spec_a, "tf32", &p2), CT_OK);
  ASSERT_EQ_INT(p1, p2);
  ASSERT_EQ_INT(ct_cache_problem_id(c, spec_b, "fp32", &p3), CT_OK);
  ASSERT_TRUE(p3 != p1);
  ASSERT_EQ_INT(ct_cache_problem_find(c, spec_a, &pf), CT_OK);
  ASSERT_EQ_INT(pf, p1);
  ct_cache_close(c);
  ASSERT_EQ_INT(raw_int(path, "SELECT count(*) FROM devices"), 2);
  ASSERT_EQ_INT(raw_int(path, "SELECT count(*) FROM problems"), 2);
  ASSERT_EQ_INT(raw_int(path, "SELECT count(*) FROM problems WHERE"
                              " precision = 'fp32'"),
                1);

  /* Read-only: finds, never inserts. */
  ASSERT_EQ_INT(ct_cache_open(path, CT_CACHE_READONLY, &c, err, sizeof err),
                CT_OK);
  ASSERT_EQ_INT(ct_cache_device_id(c, &d, &id2), CT_OK);
  ASSERT_EQ_INT(id2, id1);
  d2.sm_count = 114;
  ASSERT_EQ_INT(ct_cache_device_id(c, &d2, &id2), CT_ERR_NOT_FOUND);
  ASSERT_EQ_INT(ct_cache_problem_id(c, spec_b, "fp32", &pf), CT_OK);
  ASSERT_EQ_INT(pf, p3);
  ASSERT_EQ_INT(ct_cache_problem_id(c, "n=1,other", "fp32", &pf),
                CT_ERR_NOT_FOUND);
  ct_cache_close(c);
  ASSERT_EQ_INT(raw_int(path, "SELECT count(*) FROM devices"), 2);
}

static void test_invalid_args(void)
{
  const char *path = tmp_path("args.db");
  ct_cache *c = NULL;
  ct_cache_device d = test_device();
  ct_cache_trial t;
  ct_cache_winner w;
  ct_cache_trial *tv = NULL;
  size_t n = 0;
  int64_t id = 0;
  char err[512], long_spec[CT_PROBLEM_SPEC_MAX + 8];

  ASSERT_EQ_INT(ct_cache_open(NULL, 0, &c, err, sizeof err),
                CT_ERR_INVALID_ARG);
  ASSERT_EQ_INT(ct_cache_open(path, 0, NULL, err, sizeof err),
                CT_ERR_INVALID_ARG);
  ASSERT_EQ_INT(ct_cache_open(path, CT_CACHE_READONLY | CT_CACHE_CREATE, &c,
                              err, sizeof err),
                CT_ERR_INVALID_ARG);
  ASSERT_TRUE(c == NULL);
  ASSERT_EQ_INT(ct_cache_migrate_to(path, 0, err, sizeof err),
                CT_ERR_INVALID_ARG);
  ASSERT_EQ_INT(ct_cache_migrate_to(path, CT_CACHE_SCHEMA_VERSION + 1, err,
                                    sizeof err),
                CT_ERR_INVALID_ARG);
  ASSERT_EQ_INT(ct_cache_open(path, CT_CACHE_CREATE, &c, err, sizeof err),
                CT_OK);
  ASSERT_EQ_INT(ct_cache_device_id(NULL, &d, &id), CT_ERR_INVALID_ARG);
  ASSERT_EQ_INT(ct_cache_device_id(c, NULL, &id), CT_ERR_INVALID_ARG);
  ASSERT_EQ_INT(ct_cache_device_id(c, &d, NULL), CT_ERR_INVALID_ARG);
  memset(d.arch, 'x', sizeof d.arch); /* unterminated */
  ASSERT_EQ_INT(ct_cache_device_id(c, &d, &id), CT_ERR_INVALID_ARG);
  memset(long_spec, 'a', sizeof long_spec - 1);
  long_spec[sizeof long_spec - 1] = '\0';
  ASSERT_EQ_INT(ct_cache_problem_id(c, long_spec, "tf32", &id),
                CT_ERR_INVALID_ARG);
  ASSERT_EQ_INT(ct_cache_problem_id(c, spec_a, NULL, &id),
                CT_ERR_INVALID_ARG);
  ASSERT_EQ_INT(ct_cache_problem_find(c, NULL, &id), CT_ERR_INVALID_ARG);
  t = test_trial(0, 1, "direct:TM=1", 1.0); /* problem_id 0 */
  ASSERT_EQ_INT(ct_cache_trial_add(c, &t), CT_ERR_INVALID_ARG);
  t = test_trial(1, 1, "direct:TM=1", 1.0);
  t.status = (ct_trial_status)42;
  ASSERT_EQ_INT(ct_cache_trial_add(c, &t), CT_ERR_INVALID_ARG);
  t = test_trial(77, 77, "direct:TM=1", 1.0); /* no such problem: FK */
  ASSERT_EQ_INT(ct_cache_trial_add(c, &t), CT_ERR_DB);
  ASSERT_TRUE(strstr(ct_cache_errmsg(c), "FOREIGN KEY") != NULL);
  ASSERT_EQ_INT(ct_cache_trials(c, 0, 0, &tv, &n), CT_ERR_INVALID_ARG);
  ASSERT_EQ_INT(ct_cache_trials(c, 1, 0, NULL, &n), CT_ERR_INVALID_ARG);
  ASSERT_EQ_INT(ct_cache_trial_find(c, 1, 1, NULL, 0, &t),
                CT_ERR_INVALID_ARG);
  w = test_winner(1, 1, 0, 64, 1);
  ASSERT_TRUE(w.cubin != NULL);
  w.cubin_hash ^= 1; /* not the bytes' hash */
  ASSERT_EQ_INT(ct_cache_winner_set(c, &w), CT_ERR_INVALID_ARG);
  ct_cache_winner_clear(&w);
  ASSERT_TRUE(w.cubin == NULL);
  ct_cache_winner_clear(NULL);
  ASSERT_EQ_INT(ct_cache_winner_set(c, NULL), CT_ERR_INVALID_ARG);
  ASSERT_EQ_INT(ct_cache_winner_get(c, spec_a, NULL, &w), CT_ERR_INVALID_ARG);
  ASSERT_EQ_INT(ct_cache_list(c, NULL, &n), CT_ERR_INVALID_ARG);
  ASSERT_EQ_INT(ct_cache_check(NULL), CT_ERR_INVALID_ARG);
  ASSERT_EQ_INT(ct_cache_schema_version(NULL), 0);
  ASSERT_TRUE(ct_cache_errmsg(NULL) != NULL);
  ct_cache_close(c);
}

static void test_trial_status_names(void)
{
  ct_trial_status s = CT_TRIAL_TIMED;
  ASSERT_EQ_STR(ct_trial_status_name(CT_TRIAL_TIMED), "timed");
  ASSERT_EQ_STR(ct_trial_status_name(CT_TRIAL_WRONG), "wrong");
  ASSERT_EQ_STR(ct_trial_status_name(CT_TRIAL_COMPILE_FAILED),
                "compile-failed");
  ASSERT_EQ_STR(ct_trial_status_name(CT_TRIAL_LAUNCH_FAILED),
                "launch-failed");
  ASSERT_EQ_STR(ct_trial_status_name(CT_TRIAL_FAULTED), "faulted");
  ASSERT_EQ_STR(ct_trial_status_name(CT_TRIAL_TIMEOUT), "timeout");
  ASSERT_TRUE(ct_trial_status_name((ct_trial_status)6) == NULL);
  ASSERT_EQ_INT(ct_trial_status_parse("timeout", &s), CT_OK);
  ASSERT_EQ_INT(s, CT_TRIAL_TIMEOUT);
  ASSERT_EQ_INT(ct_trial_status_parse("launch-failed", &s), CT_OK);
  ASSERT_EQ_INT(s, CT_TRIAL_LAUNCH_FAILED);
  ASSERT_EQ_INT(ct_trial_status_parse("fast", &s), CT_ERR_PARSE);
}

static void test_trials(void)
{
  const char *path = tmp_path("trials.db");
  ct_cache *c = NULL;
  ct_cache_device d = test_device(), d2 = test_device();
  ct_cache_trial t[6], found, *v = NULL;
  const char *variants[6] = {"a:X=3", "a:X=1", "a:X=9", "a:X=2", "a:X=1",
                             "a:X=4"};
  const double means[6] = {3.0, 1.0, NAN, 2.0, 0.5, 0.1};
  int64_t dev = 0, dev2 = 0, prob = 0;
  size_t n = 0, i;
  char err[512];

  ASSERT_EQ_INT(ct_cache_open(path, CT_CACHE_CREATE, &c, err, sizeof err),
                CT_OK);
  d2.sm_count = 114;
  ASSERT_EQ_INT(ct_cache_device_id(c, &d, &dev), CT_OK);
  ASSERT_EQ_INT(ct_cache_device_id(c, &d2, &dev2), CT_OK);
  ASSERT_EQ_INT(ct_cache_problem_id(c, spec_a, "tf32", &prob), CT_OK);
  for (i = 0; i < 6; i++) {
    t[i] = test_trial(prob, i == 5 ? dev2 : dev, variants[i], means[i]);
    ASSERT_EQ_INT(ct_cache_trial_add(c, &t[i]), CT_OK);
    ASSERT_TRUE(t[i].id > 0);
    ASSERT_TRUE(t[i].created_at > 1600000000);
  }
  t[2].status = CT_TRIAL_COMPILE_FAILED; /* checked below */
  ASSERT_TRUE(t[4].id > t[1].id);

  /* Device 1 only: 0.5, 1, 2, 3, then untimed. */
  ASSERT_EQ_INT(ct_cache_trials(c, prob, dev, &v, &n), CT_OK);
  ASSERT_EQ_INT(n, 5);
  ASSERT_EQ_INT(v[0].id, t[4].id);
  ASSERT_EQ_INT(v[1].id, t[1].id);
  ASSERT_EQ_INT(v[2].id, t[3].id);
  ASSERT_EQ_INT(v[3].id, t[0].id);
  ASSERT_EQ_INT(v[4].id, t[2].id);
  /* Every field round-trips; NaN stays NaN; a hash above INT64_MAX too. */
  ASSERT_EQ_INT(v[3].problem_id, prob);
  ASSERT_EQ_INT(v[3].device_id, dev);
  ASSERT_EQ_STR(v[3].variant, "a:X=3");
  ASSERT_EQ_INT(v[3].status, CT_TRIAL_TIMED);
  ASSERT_TRUE(v[3].source_hash == 0xfedcba9876543210ull);
  ASSERT_NEAR(v[3].compile_ms, 123.5, 0);
  ASSERT_EQ_INT(v[3].regs, 128);
  ASSERT_EQ_INT(v[3].spill_bytes, 8);
  ASSERT_EQ_INT(v[3].smem_bytes, 49152);
  ASSERT_NEAR(v[3].max_abs_err, 1.5e-4, 0);
  ASSERT_NEAR(v[3].rel_err, 2.5e-5, 0);
  ASSERT_NEAR(v[3].mean_ms, 3.0, 0);
  ASSERT_NEAR(v[3].median_ms, 3.0, 0);
  ASSERT_NEAR(v[3].min_ms, 2.99, 0);
  ASSERT_NEAR(v[3].max_ms, 3.01, 0);
  ASSERT_EQ_INT(v[3].n_timed, 100);
  ASSERT_EQ_INT(v[3].created_at, t[0].created_at);
  ASSERT_EQ_INT(v[4].status, CT_TRIAL_WRONG);
  ASSERT_TRUE(isnan(v[4].mean_ms) && isnan(v[4].rel_err) &&
              isnan(v[4].min_ms));
  ASSERT_EQ_INT(v[4].n_timed, 0);
  ASSERT_EQ_STR(v[4].message, "bad");
  free(v);
  v = NULL;

  /* Every device: device 2's 0.1 comes first. */
  ASSERT_EQ_INT(ct_cache_trials(c, prob, 0, &v, &n), CT_OK);
  ASSERT_EQ_INT(n, 6);
  ASSERT_EQ_INT(v[0].id, t[5].id);
  ASSERT_EQ_INT(v[0].device_id, dev2);
  free(v);
  v = NULL;
  ASSERT_EQ_INT(ct_cache_trials(c, prob + 100, 0, &v, &n), CT_OK);
  ASSERT_EQ_INT(n, 0);
  free(v);

  /* The latest of two trials of one variant and source. */
  ASSERT_EQ_INT(ct_cache_trial_find(c, prob, dev, "a:X=1",
                                    0xfedcba9876543210ull, &found),
                CT_OK);
  ASSERT_EQ_INT(found.id, t[4].id);
  ASSERT_NEAR(found.mean_ms, 0.5, 0);
  ASSERT_EQ_INT(ct_cache_trial_find(c, prob, dev, "a:X=1", 1, &found),
                CT_ERR_NOT_FOUND);
  ASSERT_EQ_INT(ct_cache_trial_find(c, prob, dev2, "a:X=1",
                                    0xfedcba9876543210ull, &found),
                CT_ERR_NOT_FOUND);
  ASSERT_EQ_INT(ct_cache_trial_find(c, prob, dev, "a:X=7",
                                    0xfedcba9876543210ull, &found),
                CT_ERR_NOT_FOUND);

  /* A failed compile keeps its status and message. */
  t[2] = test_trial(prob, dev, "b:Y=1", NAN);
  t[2].status = CT_TRIAL_COMPILE_FAILED;
  t[2].compile_ms = NAN;
  snprintf(t[2].message, sizeof t[2].message, "error: 'x' undefined");
  ASSERT_EQ_INT(ct_cache_trial_add(c, &t[2]), CT_OK);
  ASSERT_EQ_INT(ct_cache_trial_find(c, prob, dev, "b:Y=1", t[2].source_hash,
                                    &found),
                CT_OK);
  ASSERT_EQ_INT(found.status, CT_TRIAL_COMPILE_FAILED);
  ASSERT_TRUE(isnan(found.compile_ms));
  ASSERT_EQ_STR(found.message, "error: 'x' undefined");
  ct_cache_close(c);
  ASSERT_EQ_INT(raw_int(path, "SELECT count(*) FROM trials WHERE status ="
                              " 'compile-failed'"),
                1);
}

static void test_winners(void)
{
  const char *path = tmp_path("winners.db");
  ct_cache *c = NULL;
  ct_cache_device d = test_device(), other;
  ct_cache_trial t;
  ct_cache_winner w1, w2, got;
  ct_cache_entry *e = NULL;
  int64_t dev = 0, prob = 0, prob_b = 0;
  size_t n = 0;
  char err[512];

  memset(&got, 0, sizeof got);
  ASSERT_EQ_INT(ct_cache_open(path, CT_CACHE_CREATE, &c, err, sizeof err),
                CT_OK);
  ASSERT_EQ_INT(ct_cache_device_id(c, &d, &dev), CT_OK);
  ASSERT_EQ_INT(ct_cache_problem_id(c, spec_a, "tf32", &prob), CT_OK);
  ASSERT_EQ_INT(ct_cache_problem_id(c, spec_b, "fp32", &prob_b), CT_OK);
  t = test_trial(prob, dev, "direct:TM=1,TN=32", 0.25);
  ASSERT_EQ_INT(ct_cache_trial_add(c, &t), CT_OK);
  ASSERT_EQ_INT(ct_cache_trial_add(c, &t), CT_OK);

  ASSERT_EQ_INT(ct_cache_winner_get(c, spec_a, &d, &got), CT_ERR_NOT_FOUND);
  w1 = test_winner(prob, dev, t.id, 100000, 1);
  ASSERT_TRUE(w1.cubin != NULL);
  ASSERT_EQ_INT(ct_cache_winner_set(c, &w1), CT_OK);
  ASSERT_EQ_INT(ct_cache_winner_get(c, spec_a, &d, &got), CT_OK);
  ASSERT_EQ_INT(got.problem_id, prob);
  ASSERT_EQ_INT(got.device_id, dev);
  ASSERT_EQ_INT(got.trial_id, t.id);
  ASSERT_EQ_STR(got.spec, spec_a);
  ASSERT_EQ_STR(got.precision, "tf32");
  ASSERT_EQ_STR(got.variant, "direct:TM=1,TN=32");
  ASSERT_TRUE(got.source_hash == 0x8000000000000001ull);
  ASSERT_TRUE(got.cubin_hash == w1.cubin_hash);
  ASSERT_EQ_STR(got.arch, "sm_90a");
  ASSERT_EQ_STR(got.nvrtc_version, "12.8");
  ASSERT_EQ_STR(got.options, "--gpu-architecture=sm_90a -O3");
  ASSERT_NEAR(got.mean_ms, 0.25, 0);
  ASSERT_TRUE(got.created_at > 1600000000);
  ASSERT_EQ_INT(got.cubin_size, 100000);
  ASSERT_TRUE(got.cubin != w1.cubin);
  ASSERT_TRUE(memcmp(got.cubin, w1.cubin, 100000) == 0);
  ct_cache_winner_clear(&got);
  ASSERT_TRUE(got.cubin == NULL && got.cubin_size == 0);

  /* Replace: the same key gets the new cubin; still one row. */
  w2 = test_winner(prob, dev, 0, 4097, 2);
  ASSERT_TRUE(w2.cubin != NULL);
  w2.mean_ms = NAN;
  ASSERT_EQ_INT(ct_cache_winner_set(c, &w2), CT_OK);
  ASSERT_EQ_INT(ct_cache_winner_get(c, spec_a, &d, &got), CT_OK);
  ASSERT_EQ_STR(got.variant, "direct:TM=2,TN=32");
  ASSERT_EQ_INT(got.trial_id, 0);
  ASSERT_TRUE(isnan(got.mean_ms));
  ASSERT_EQ_INT(got.cubin_size, 4097);
  ASSERT_TRUE(memcmp(got.cubin, w2.cubin, 4097) == 0);
  ct_cache_winner_clear(&got);

  /* Every device field is part of the key. */
  other = d;
  other.driver_version++;
  ASSERT_EQ_INT(ct_cache_winner_get(c, spec_a, &other, &got),
                CT_ERR_NOT_FOUND);
  other = d;
  snprintf(other.nvrtc_version, sizeof other.nvrtc_version, "12.9");
  ASSERT_EQ_INT(ct_cache_winner_get(c, spec_a, &other, &got),
                CT_ERR_NOT_FOUND);
  other = d;
  other.cc_minor = 1;
  ASSERT_EQ_INT(ct_cache_winner_get(c, spec_a, &other, &got),
                CT_ERR_NOT_FOUND);
  ASSERT_TRUE(got.cubin == NULL);
  ASSERT_EQ_INT(ct_cache_winner_get(c, spec_b, &d, &got), CT_ERR_NOT_FOUND);

  /* The list: problem a with its winner, problem b without one. */
  ASSERT_EQ_INT(ct_cache_list(c, &e, &n), CT_OK);
  ASSERT_EQ_INT(n, 2);
  ASSERT_EQ_INT(e[0].problem_id, prob);
  ASSERT_EQ_STR(e[0].spec, spec_a);
  ASSERT_EQ_STR(e[0].precision, "tf32");
  ASSERT_EQ_INT(e[0].n_trials, 2);
  ASSERT_EQ_INT(e[0].n_timed, 2);
  ASSERT_EQ_INT(e[0].device_id, dev);
  ASSERT_EQ_STR(e[0].device, "NVIDIA H200");
  ASSERT_EQ_STR(e[0].variant, "direct:TM=2,TN=32");
  ASSERT_EQ_INT(e[1].problem_id, prob_b);
  ASSERT_EQ_STR(e[1].precision, "fp32");
  ASSERT_EQ_INT(e[1].n_trials, 0);
  ASSERT_EQ_INT(e[1].device_id, 0);
  ASSERT_EQ_STR(e[1].device, "");
  ASSERT_EQ_STR(e[1].variant, "");
  ASSERT_TRUE(isnan(e[1].mean_ms));
  free(e);
  e = NULL;
  ct_cache_close(c);
  ASSERT_EQ_INT(raw_int(path, "SELECT count(*) FROM winners"), 1);

  /* Read-only: reads work, writes are refused. */
  ASSERT_EQ_INT(ct_cache_open(path, CT_CACHE_READONLY, &c, err, sizeof err),
                CT_OK);
  ASSERT_EQ_INT(ct_cache_winner_get(c, spec_a, &d, &got), CT_OK);
  ASSERT_EQ_INT(got.cubin_size, 4097);
  ct_cache_winner_clear(&got);
  ASSERT_EQ_INT(ct_cache_winner_set(c, &w1), CT_ERR_UNSUPPORTED);
  ASSERT_EQ_INT(ct_cache_trial_add(c, &t), CT_ERR_UNSUPPORTED);
  ASSERT_EQ_INT(ct_cache_list(c, &e, &n), CT_OK);
  ASSERT_EQ_INT(n, 2);
  free(e);
  ct_cache_close(c);
  ct_cache_winner_clear(&w1);
  ct_cache_winner_clear(&w2);
}

static void test_tampered_cubin(void)
{
  const char *path = tmp_path("tamper.db");
  ct_cache *c = NULL;
  ct_cache_device d = test_device();
  ct_cache_winner w, got;
  int64_t dev = 0, prob = 0;
  char err[512];

  ASSERT_EQ_INT(ct_cache_open(path, CT_CACHE_CREATE, &c, err, sizeof err),
                CT_OK);
  ASSERT_EQ_INT(ct_cache_device_id(c, &d, &dev), CT_OK);
  ASSERT_EQ_INT(ct_cache_problem_id(c, spec_a, "tf32", &prob), CT_OK);
  w = test_winner(prob, dev, 0, 2048, 3);
  ASSERT_TRUE(w.cubin != NULL);
  ASSERT_EQ_INT(ct_cache_winner_set(c, &w), CT_OK);
  ct_cache_winner_clear(&w);
  ASSERT_EQ_INT(ct_cache_winner_get(c, spec_a, &d, &got), CT_OK);
  ct_cache_winner_clear(&got);
  ASSERT_EQ_INT(ct_cache_check(c), CT_OK);
  ct_cache_close(c);

  /* Flip one byte in the middle of the stored cubin. */
  ASSERT_EQ_INT(raw_flip_cubin_byte(path, 1000), SQLITE_DONE);
  ASSERT_EQ_INT(raw_int(path, "SELECT length(cubin) FROM winners"), 2048);

  ASSERT_EQ_INT(ct_cache_open(path, 0, &c, err, sizeof err), CT_OK);
  ASSERT_EQ_INT(ct_cache_winner_get(c, spec_a, &d, &got), CT_ERR_DB_CORRUPT);
  ASSERT_TRUE(got.cubin == NULL);
  ASSERT_TRUE(strstr(ct_cache_errmsg(c), "hash") != NULL);
  ASSERT_EQ_INT(ct_cache_check(c), CT_ERR_DB_CORRUPT);
  ct_cache_close(c);
}

static void test_migrate_v1(void)
{
  const char *path = tmp_path("v1/old.db");
  ct_cache *c = NULL;
  ct_cache_device d = test_device();
  ct_cache_winner got;
  ct_cache_trial *v = NULL;
  size_t n = 0;
  int64_t prob = 0;
  char err[512], sql[1024];
  static const unsigned char cubin[] = "ELF-like bytes of a v1 cubin";
  uint64_t h = ct_gen_hash(cubin, sizeof cubin, CT_GEN_HASH_SEED);

  ASSERT_EQ_INT(ct_cache_migrate_to(path, 1, err, sizeof err), CT_OK);
  ASSERT_EQ_INT(raw_int(path, "PRAGMA user_version"), 1);
  ASSERT_EQ_INT(raw_int(path,
                        "SELECT count(*) FROM pragma_table_info('winners')"
                        " WHERE name = 'options'"),
                0);
  ASSERT_EQ_INT(raw_int(path,
                        "SELECT count(*) FROM sqlite_master WHERE name ="
                        " 'trials_by_key'"),
                0);

  /* Data written by a version-1 build, in version-1 columns. */
  snprintf(sql, sizeof sql,
           "INSERT INTO devices VALUES(1, 'NVIDIA H200', 9, 0, 132, 12080,"
           " '12.8', 'sm_90a');"
           "INSERT INTO problems VALUES(1, '%s', 'tf32');"
           "INSERT INTO trials(id, problem_id, device_id, variant, status,"
           " source_hash, mean_ms, n_timed, created_at)"
           " VALUES(5, 1, 1, 'direct:TM=1', 'timed', -7, 1.25, 100, 1700000000);"
           "INSERT INTO winners VALUES(1, 1, 5, 'direct:TM=1', -7, x'00', %lld,"
           " 'sm_90a', '12.8', 1.25, 1700000000);",
           spec_a, (long long)h);
  /* The cubin goes in through a bound blob below; x'00' holds its place. */
  ASSERT_EQ_INT(raw_exec(path, sql), SQLITE_OK);
  {
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_open(path, &db);
    if (rc == SQLITE_OK)
      rc = sqlite3_prepare_v2(db, "UPDATE winners SET cubin = ?1", -1, &st,
                              NULL);
    if (rc == SQLITE_OK)
      rc = sqlite3_bind_blob(st, 1, cubin, sizeof cubin, SQLITE_STATIC);
    if (rc == SQLITE_OK) rc = sqlite3_step(st);
    sqlite3_finalize(st);
    sqlite3_close(db);
    ASSERT_EQ_INT(rc, SQLITE_DONE);
  }

  /* Read-only: version 1 is read as it is. */
  ASSERT_EQ_INT(ct_cache_open(path, CT_CACHE_READONLY, &c, err, sizeof err),
                CT_OK);
  ASSERT_EQ_INT(ct_cache_schema_version(c), 1);
  ASSERT_EQ_INT(ct_cache_winner_get(c, spec_a, &d, &got), CT_OK);
  ASSERT_EQ_STR(got.options, "");
  ASSERT_EQ_INT(got.cubin_size, sizeof cubin);
  ct_cache_winner_clear(&got);
  ct_cache_close(c);
  ASSERT_EQ_INT(raw_int(path, "PRAGMA user_version"), 1);

  /* A writable open migrates and keeps every row. */
  ASSERT_EQ_INT(ct_cache_open(path, 0, &c, err, sizeof err), CT_OK);
  ASSERT_EQ_INT(ct_cache_schema_version(c), CT_CACHE_SCHEMA_VERSION);
  ASSERT_EQ_INT(ct_cache_problem_find(c, spec_a, &prob), CT_OK);
  ASSERT_EQ_INT(prob, 1);
  ASSERT_EQ_INT(ct_cache_trials(c, prob, 1, &v, &n), CT_OK);
  ASSERT_EQ_INT(n, 1);
  ASSERT_EQ_INT(v[0].id, 5);
  ASSERT_TRUE(v[0].source_hash == (uint64_t)-7);
  ASSERT_TRUE(isnan(v[0].compile_ms));
  free(v);
  ASSERT_EQ_INT(ct_cache_winner_get(c, spec_a, &d, &got), CT_OK);
  ASSERT_EQ_STR(got.options, "");
  ASSERT_EQ_INT(got.trial_id, 5);
  ASSERT_EQ_INT(got.created_at, 1700000000);
  ASSERT_TRUE(memcmp(got.cubin, cubin, sizeof cubin) == 0);
  ct_cache_winner_clear(&got);
  ASSERT_EQ_INT(ct_cache_check(c), CT_OK);
  ct_cache_close(c);
  ASSERT_EQ_INT(raw_int(path, "PRAGMA user_version"), CT_CACHE_SCHEMA_VERSION);
  ASSERT_EQ_INT(raw_int(path,
                        "SELECT count(*) FROM sqlite_master WHERE name ="
                        " 'trials_by_key'"),
                1);
  ASSERT_EQ_INT(raw_int(path, "SELECT count(*) FROM meta"), 1);

  /* Never downgrades. */
  ASSERT_EQ_INT(ct_cache_migrate_to(path, 1, err, sizeof err),
                CT_ERR_UNSUPPORTED);
  ASSERT_EQ_INT(raw_int(path, "PRAGMA user_version"), CT_CACHE_SCHEMA_VERSION);
}

/* Version 2 -> 3: trials are rebuilt with their ids, the winner that
** refers to one survives with its foreign key, the new statuses fit and an
** unknown one is still refused, and the compile cache appears. */
static void test_migrate_v2(void)
{
  const char *path = tmp_path("v2/old.db");
  ct_cache *c = NULL;
  ct_cache_device d = test_device();
  ct_cache_winner w, got;
  ct_cache_trial t, *v = NULL;
  ct_cache_cubin cb;
  int64_t dev = 0, prob = 0, ids[3];
  size_t n = 0;
  char err[512], buf[64];

  ASSERT_EQ_INT(ct_cache_migrate_to(path, 2, err, sizeof err), CT_OK);
  ASSERT_EQ_INT(ct_cache_open(path, CT_CACHE_READONLY, &c, err, sizeof err),
                CT_OK);
  ASSERT_EQ_INT(ct_cache_schema_version(c), 2);
  ct_cache_close(c);
  /* Rows written by a version-2 build, in version-2 columns. */
  {
    static const unsigned char bytes[] = {0};
    char sql[2048];
    snprintf(sql, sizeof sql,
             "INSERT INTO devices VALUES(7, 'NVIDIA H200', 9, 0, 132, 12080,"
             " '12.8', 'sm_90a');"
             "INSERT INTO problems VALUES(3, '%s', 'tf32');"
             "INSERT INTO trials(id, problem_id, device_id, variant, status,"
             " source_hash, mean_ms, n_timed, message, created_at) VALUES"
             " (11, 3, 7, 'direct:A=1', 'timed', 5, 0.5, 10, '', 1700000001),"
             " (12, 3, 7, 'direct:A=2', 'wrong', 6, NULL, 0, 'off', 1700000002),"
             " (15, 3, 7, 'direct:A=1', 'timed', 5, 0.45, 100, '', 1700000003);"
             "INSERT INTO winners(problem_id, device_id, trial_id, variant,"
             " source_hash, cubin, cubin_hash, arch, nvrtc_version, mean_ms,"
             " created_at, options) VALUES(3, 7, 15, 'direct:A=1', 5, x'00',"
             " %lld, 'sm_90a', '12.8', 0.45, 1700000003, '-O3');",
             spec_a, (long long)ct_gen_hash(bytes, 1, CT_GEN_HASH_SEED));
    ASSERT_EQ_INT(raw_exec(path, sql), SQLITE_OK);
  }
  ASSERT_EQ_INT(raw_exec(path, "INSERT INTO trials(problem_id, device_id,"
                               " variant, status, source_hash, created_at)"
                               " VALUES(3, 7, 'x', 'faulted', 1, 1)"),
                SQLITE_CONSTRAINT); /* version 2 does not know 'faulted' */

  /* Read-only: version 2 as it is; no compile cache. */
  ASSERT_EQ_INT(ct_cache_open(path, CT_CACHE_READONLY, &c, err, sizeof err),
                CT_OK);
  ASSERT_EQ_INT(ct_cache_cubin_get(c, 5, "-O3", "sm_90a", "12.8", &cb),
                CT_ERR_NOT_FOUND);
  ct_cache_close(c);

  /* Migrate. */
  ASSERT_EQ_INT(ct_cache_open(path, 0, &c, err, sizeof err), CT_OK);
  ASSERT_EQ_INT(ct_cache_schema_version(c), 3);
  ASSERT_EQ_INT(ct_cache_device_id(c, &d, &dev), CT_OK);
  ASSERT_EQ_INT(dev, 7);
  ASSERT_EQ_INT(ct_cache_problem_find(c, spec_a, &prob), CT_OK);
  ASSERT_EQ_INT(prob, 3);
  ASSERT_EQ_INT(ct_cache_trials(c, prob, dev, &v, &n), CT_OK);
  ASSERT_EQ_INT(n, 3);
  ids[0] = v[0].id, ids[1] = v[1].id, ids[2] = v[2].id;
  ASSERT_NEAR(v[0].mean_ms, 0.45, 0);
  ASSERT_EQ_STR(v[2].message, "off");
  free(v);
  ASSERT_EQ_INT(ids[0], 15);
  ASSERT_EQ_INT(ids[1], 11);
  ASSERT_EQ_INT(ids[2], 12);
  ASSERT_EQ_INT(ct_cache_winner_get(c, spec_a, &d, &got), CT_OK);
  ASSERT_EQ_INT(got.trial_id, 15);
  ASSERT_EQ_STR(got.options, "-O3");
  ASSERT_EQ_INT(got.created_at, 1700000003);
  ct_cache_winner_clear(&got);
  /* The new statuses are accepted, with ids after the old ones. */
  t = test_trial(prob, dev, "test_oob", NAN);
  t.status = CT_TRIAL_FAULTED;
  ASSERT_EQ_INT(ct_cache_trial_add(c, &t), CT_OK);
  ASSERT_EQ_INT(t.id, 16);
  t.status = CT_TRIAL_TIMEOUT;
  ASSERT_EQ_INT(ct_cache_trial_add(c, &t), CT_OK);
  ASSERT_EQ_INT(ct_cache_trial_find(c, prob, dev, "test_oob", t.source_hash,
                                    &t),
                CT_OK);
  ASSERT_EQ_INT(t.status, CT_TRIAL_TIMEOUT);
  /* The winner's foreign key still points at trials. */
  w = test_winner(prob, dev, 999, 32, 2);
  ASSERT_EQ_INT(ct_cache_winner_set(c, &w), CT_ERR_DB);
  ct_cache_winner_clear(&w);
  ASSERT_EQ_INT(ct_cache_check(c), CT_OK);
  ct_cache_close(c);
  ASSERT_EQ_INT(raw_exec(path, "INSERT INTO trials(problem_id, device_id,"
                               " variant, status, source_hash, created_at)"
                               " VALUES(3, 7, 'x', 'bogus', 1, 1)"),
                SQLITE_CONSTRAINT);
  ASSERT_EQ_INT(raw_int(path, "SELECT count(*) FROM sqlite_master WHERE"
                              " name IN ('trials_v3', 'winners_v2')"),
                0);
  ASSERT_EQ_INT(raw_int(path, "SELECT count(*) FROM sqlite_master WHERE"
                              " name = 'trials_by_key'"),
                1);
  ASSERT_EQ_INT(raw_int(path, "SELECT count(*) FROM sqlite_master WHERE"
                              " name = 'cubins'"),
                1);
  ASSERT_EQ_STR(raw_text(path, "PRAGMA integrity_check", buf, sizeof buf),
                "ok");
  ASSERT_EQ_INT(raw_int(path, "SELECT count(*) FROM pragma_foreign_key_check"),
                0);
}

/* A cubin of n bytes for source_hash h, malloc'd. */
static ct_cache_cubin test_cubin(uint64_t h, size_t n, int fill)
{
  ct_cache_cubin cb;
  memset(&cb, 0, sizeof cb);
  cb.source_hash = h;
  snprintf(cb.options, sizeof cb.options, "--gpu-architecture=sm_90a -std=c++17");
  snprintf(cb.arch, sizeof cb.arch, "sm_90a");
  snprintf(cb.nvrtc_version, sizeof cb.nvrtc_version, "13.0");
  cb.cubin = malloc(n);
  for (size_t i = 0; cb.cubin && i < n; i++)
    ((unsigned char *)cb.cubin)[i] = (unsigned char)(i * 7 + (size_t)fill);
  cb.cubin_size = n;
  cb.cubin_hash = ct_gen_hash(cb.cubin, n, CT_GEN_HASH_SEED);
  cb.regs = 96;
  cb.spill_bytes = 0;
  cb.stack_bytes = 16;
  cb.smem_static = 1024;
  cb.compile_ms = 812.5;
  return cb;
}

static ct_status count_cubin(void *arg, const ct_cache_cubin *cb)
{
  (void)cb;
  ++*(int *)arg;
  return CT_OK;
}

static void test_cubins(void)
{
  const char *path = tmp_path("cubins.db");
  ct_cache *c = NULL;
  ct_cache_cubin a = test_cubin(0xfedcba9876543210ull, 3000, 1);
  ct_cache_cubin b = test_cubin(42, 100, 2), got;
  char err[512];
  int added = -1, count = 0;

  ASSERT_TRUE(a.cubin && b.cubin);
  ASSERT_EQ_INT(ct_cache_open(path, CT_CACHE_CREATE, &c, err, sizeof err),
                CT_OK);
  ASSERT_EQ_INT(ct_cache_cubin_get(c, a.source_hash, a.options, a.arch,
                                   a.nvrtc_version, &got),
                CT_ERR_NOT_FOUND);
  ASSERT_EQ_INT(ct_cache_cubin_put(c, &a, &added), CT_OK);
  ASSERT_EQ_INT(added, 1);
  ASSERT_EQ_INT(ct_cache_cubin_put(c, &a, &added), CT_OK); /* kept once */
  ASSERT_EQ_INT(added, 0);
  ASSERT_EQ_INT(ct_cache_cubin_put(c, &b, NULL), CT_OK);
  ASSERT_EQ_INT(ct_cache_cubin_get(c, a.source_hash, a.options, a.arch,
                                   a.nvrtc_version, &got),
                CT_OK);
  ASSERT_EQ_INT(got.cubin_size, 3000);
  ASSERT_TRUE(memcmp(got.cubin, a.cubin, 3000) == 0);
  ASSERT_EQ_INT(got.regs, 96);
  ASSERT_EQ_INT(got.stack_bytes, 16);
  ASSERT_EQ_INT(got.smem_static, 1024);
  ASSERT_NEAR(got.compile_ms, 812.5, 0);
  ASSERT_TRUE(got.created_at > 0);
  ct_cache_cubin_clear(&got);
  ASSERT_TRUE(got.cubin == NULL);
  /* Any other key field: a miss. */
  ASSERT_EQ_INT(ct_cache_cubin_get(c, a.source_hash, a.options, a.arch,
                                   "13.1", &got),
                CT_ERR_NOT_FOUND);
  ASSERT_EQ_INT(ct_cache_cubin_get(c, a.source_hash, a.options, "sm_90",
                                   a.nvrtc_version, &got),
                CT_ERR_NOT_FOUND);
  ASSERT_EQ_INT(ct_cache_cubin_get(c, a.source_hash, "-O3", a.arch,
                                   a.nvrtc_version, &got),
                CT_ERR_NOT_FOUND);
  ASSERT_EQ_INT(ct_cache_cubin_foreach(c, count_cubin, &count), CT_OK);
  ASSERT_EQ_INT(count, 2);
  /* Bad arguments. */
  b.cubin_hash ^= 1;
  ASSERT_EQ_INT(ct_cache_cubin_put(c, &b, NULL), CT_ERR_INVALID_ARG);
  ASSERT_EQ_INT(ct_cache_cubin_put(NULL, &a, NULL), CT_ERR_INVALID_ARG);
  ASSERT_EQ_INT(ct_cache_cubin_get(c, 1, NULL, "a", "b", &got),
                CT_ERR_INVALID_ARG);
  ASSERT_EQ_INT(ct_cache_check(c), CT_OK);
  ct_cache_close(c);

  /* A damaged blob: a miss for the tuner (DB_CORRUPT), and check finds it. */
  ASSERT_EQ_INT(raw_exec(path, "UPDATE cubins SET cubin = x'0102'"
                               " WHERE source_hash = 42"),
                SQLITE_OK);
  ASSERT_EQ_INT(ct_cache_open(path, 0, &c, err, sizeof err), CT_OK);
  ASSERT_EQ_INT(ct_cache_cubin_get(c, 42, a.options, a.arch, a.nvrtc_version,
                                   &got),
                CT_ERR_DB_CORRUPT);
  ASSERT_TRUE(got.cubin == NULL);
  ASSERT_EQ_INT(ct_cache_check(c), CT_ERR_DB_CORRUPT);
  ct_cache_close(c);
  ct_cache_cubin_clear(&a);
  ct_cache_cubin_clear(&b);
}

/* ---------------------------------------------------------------------- */
/* Export and import                                                       */

/* Fills a database with two devices, two problems, trials with awkward
** text, winners and cubins; returns the first problem's id. */
static int64_t fill_for_export(ct_cache *c)
{
  ct_cache_device d1 = test_device(), d2 = test_device();
  ct_cache_trial t;
  ct_cache_winner w;
  ct_cache_cubin cb;
  int64_t dev1 = 0, dev2 = 0, p1 = 0, p2 = 0;
  d2.driver_version = 13000; /* another driver: another device key */
  snprintf(d2.name, sizeof d2.name, "NVIDIA \"H200\"\twith a tab");
  if (ct_cache_device_id(c, &d1, &dev1) || ct_cache_device_id(c, &d2, &dev2) ||
      ct_cache_problem_id(c, spec_a, "tf32", &p1) ||
      ct_cache_problem_id(c, spec_b, "fp32", &p2))
    return 0;
  for (int i = 0; i < 5; i++) {
    char name[64];
    snprintf(name, sizeof name, "tc:TP=%d", i);
    t = test_trial(i % 2 ? p2 : p1, i % 3 ? dev1 : dev2, name,
                   i == 3 ? NAN : 0.1 * (i + 1));
    if (i == 4) {
      t.status = CT_TRIAL_FAULTED;
      snprintf(t.message, sizeof t.message, "line one\nline\\two\tthree");
    }
    if (ct_cache_trial_add(c, &t)) return 0;
  }
  w = test_winner(p1, dev1, 1, 700, 3);
  if (ct_cache_winner_set(c, &w)) return 0;
  ct_cache_winner_clear(&w);
  w = test_winner(p1, dev2, 0, 1, 4); /* no trial, a 1-byte cubin */
  if (ct_cache_winner_set(c, &w)) return 0;
  ct_cache_winner_clear(&w);
  cb = test_cubin(7, 2, 5);
  if (ct_cache_cubin_put(c, &cb, NULL)) return 0;
  ct_cache_cubin_clear(&cb);
  cb = test_cubin(8, 4096, 6);
  if (ct_cache_cubin_put(c, &cb, NULL)) return 0;
  ct_cache_cubin_clear(&cb);
  return p1;
}

/* Exports path's database to a file; returns the file's size or -1. */
static long export_to(const char *path, const char *file, int flags,
                      ct_cache_transfer_stats *st)
{
  ct_cache *c = NULL;
  char err[512];
  FILE *f;
  long size = -1;
  if (ct_cache_open(path, CT_CACHE_READONLY, &c, err, sizeof err) != CT_OK)
    return -1;
  f = fopen(file, "w");
  if (f && ct_cache_export(c, f, flags, st) == CT_OK) size = ftell(f);
  if (f) fclose(f);
  ct_cache_close(c);
  return size;
}

static ct_status import_from(const char *path, const char *file,
                             ct_cache_transfer_stats *st, char *err,
                             size_t len)
{
  ct_cache *c = NULL;
  FILE *f = fopen(file, "r");
  ct_status rc;
  if (!f) return CT_ERR_IO;
  rc = ct_cache_open(path, CT_CACHE_CREATE, &c, err, len);
  if (rc == CT_OK) rc = ct_cache_import(c, f, st, err, len);
  fclose(f);
  ct_cache_close(c);
  return rc;
}

static void test_export_import(void)
{
  /* tmp_path's buffers rotate: keep copies. */
  char a[1024], b[1024], file[1024], file2[1024], bad[1024], c_db[1024],
      b2[1024];
  ct_cache *c = NULL;
  ct_cache_transfer_stats st;
  ct_cache_device d = test_device();
  ct_cache_winner got;
  char err[512];
  long size, size2;

  snprintf(a, sizeof a, "%s", tmp_path("xfer/a.db"));
  snprintf(b, sizeof b, "%s", tmp_path("xfer/b.db"));
  snprintf(file, sizeof file, "%s", tmp_path("xfer/a.txt"));
  snprintf(file2, sizeof file2, "%s", tmp_path("xfer/b.txt"));
  snprintf(bad, sizeof bad, "%s", tmp_path("xfer/bad.txt"));
  snprintf(c_db, sizeof c_db, "%s", tmp_path("xfer/c.db"));
  snprintf(b2, sizeof b2, "%s", tmp_path("xfer/b2.db"));
  ASSERT_EQ_INT(ct_cache_open(a, CT_CACHE_CREATE, &c, err, sizeof err), CT_OK);
  ASSERT_TRUE(fill_for_export(c) > 0);
  ct_cache_close(c);

  size = export_to(a, file, CT_CACHE_EXPORT_CUBINS, &st);
  ASSERT_TRUE(size > 0);
  ASSERT_EQ_INT(st.devices, 2);
  ASSERT_EQ_INT(st.problems, 2);
  ASSERT_EQ_INT(st.trials, 5);
  ASSERT_EQ_INT(st.winners, 2);
  ASSERT_EQ_INT(st.cubins, 2);

  /* Into an empty database: everything arrives. */
  ASSERT_EQ_INT(import_from(b, file, &st, err, sizeof err), CT_OK);
  ASSERT_EQ_INT(st.trials_added, 5);
  ASSERT_EQ_INT(st.winners_stored, 2);
  ASSERT_EQ_INT(st.cubins_added, 2);
  /* A copy of the copy exports to the same text (the first copy's ids
  ** may differ from a's: import numbers trials in the file's order). */
  size2 = export_to(b, file2, CT_CACHE_EXPORT_CUBINS, NULL);
  ASSERT_EQ_INT(size2, size);
  ASSERT_EQ_INT(import_from(b2, file2, &st, err,
                            sizeof err),
                CT_OK);
  ASSERT_EQ_INT(export_to(b2, bad, CT_CACHE_EXPORT_CUBINS,
                          NULL),
                size);
  {
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "cmp -s '%s' '%s'", file2, bad);
    ASSERT_EQ_INT(system(cmd), 0);
  }
  ASSERT_EQ_INT(ct_cache_open(b, 0, &c, err, sizeof err), CT_OK);
  ASSERT_EQ_INT(ct_cache_winner_get(c, spec_a, &d, &got), CT_OK);
  ASSERT_EQ_INT(got.cubin_size, 700);
  ASSERT_TRUE(got.trial_id > 0);
  ct_cache_winner_clear(&got);
  ASSERT_EQ_INT(ct_cache_check(c), CT_OK);
  ct_cache_close(c);

  /* Again: nothing new, nothing doubled. */
  ASSERT_EQ_INT(import_from(b, file, &st, err, sizeof err), CT_OK);
  ASSERT_EQ_INT(st.trials, 5);
  ASSERT_EQ_INT(st.trials_added, 0);
  ASSERT_EQ_INT(st.winners_stored, 0);
  ASSERT_EQ_INT(st.cubins_added, 0);
  ASSERT_EQ_INT(raw_int(b, "SELECT count(*) FROM trials"), 5);
  ASSERT_EQ_INT(raw_int(b, "SELECT count(*) FROM devices"), 2);

  /* Without cubins. */
  ASSERT_TRUE(export_to(a, file2, 0, &st) > 0);
  ASSERT_EQ_INT(st.cubins, 0);

  /* A truncated file is refused whole. */
  {
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "head -n -1 '%s' > '%s'", file, bad);
    ASSERT_EQ_INT(system(cmd), 0);
  }
  ASSERT_EQ_INT(import_from(c_db, bad, &st, err, sizeof err),
                CT_ERR_PARSE);
  ASSERT_TRUE(strstr(err, "truncated") != NULL);
  ASSERT_EQ_INT(raw_int(c_db, "SELECT count(*) FROM devices"),
                0);
  /* A damaged cubin, a dangling reference, a newer version, not ours. */
  {
    static const struct { const char *sed, *want; ct_status rc; } cases[] = {
      {"s/cubin=\\(...\\)/cubin=\\1A/", "base64", CT_ERR_PARSE},
      {"s/^\\(trial\tid=[0-9]*\tproblem=\\)[0-9]*/\\199/", "no earlier",
       CT_ERR_PARSE},
      {"1s/\t1$/\t2/", "newer", CT_ERR_UNSUPPORTED},
      {"1s/convtune/something/", "not a convtune export", CT_ERR_PARSE},
      {"s/^end\tdevices=2/end\tdevices=3/", "were read", CT_ERR_PARSE},
      {"s/status=faulted/status=slow/", "unknown status", CT_ERR_PARSE},
      {"s/spec=n=256,/spec=n=0,/", "n=0,c=3", CT_ERR_PARSE},                /* no problem */
      {"s/spec=n=256,\\(.*\\)prec=tf32/spec=n=256,\\1prec=fp32/", "but its spec says fp32",
       CT_ERR_PARSE},                                                        /* precisions differ */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
      char cmd[4200];
      snprintf(cmd, sizeof cmd, "sed '%s' '%s' > '%s'", cases[i].sed, file, bad);
      ASSERT_EQ_INT(system(cmd), 0);
      ASSERT_EQ_INT(import_from(c_db, bad, &st, err,
                                sizeof err),
                    cases[i].rc);
      if (!strstr(err, cases[i].want)) fprintf(stderr, "case %zu: %s\n", i, err);
      ASSERT_TRUE(strstr(err, cases[i].want) != NULL);
      ASSERT_EQ_INT(raw_int(c_db,
                            "SELECT count(*) FROM trials"),
                    0);
    }
  }

  /* A spec in another form (keys reordered, a default left out) is stored
  ** in canonical form, where lookups find it. */
  {
    char cmd[4200], db[1024], buf[256];
    snprintf(db, sizeof db, "%s", tmp_path("xfer/canon.db"));
    snprintf(cmd, sizeof cmd, "sed 's/spec=n=256,c=3,\\(.*\\),dil=1,/spec=c=3,n=256,\\1,/' '%s' > '%s'",
             file, bad);
    ASSERT_EQ_INT(system(cmd), 0);
    snprintf(cmd, sizeof cmd, "grep -q 'spec=c=3,n=256,.*pad=2,bias=1' '%s'", bad);
    ASSERT_EQ_INT(system(cmd), 0); /* the file has the other form */
    ASSERT_EQ_INT(import_from(db, bad, &st, err, sizeof err), CT_OK);
    ASSERT_EQ_STR(raw_text(db, "SELECT spec FROM problems WHERE precision = 'tf32'", buf,
                           sizeof buf), spec_a);
  }

  /* An older winner does not replace a newer one; a newer one does. */
  ASSERT_EQ_INT(raw_exec(b, "UPDATE winners SET created_at = created_at + 100,"
                            " mean_ms = 9"),
                SQLITE_OK);
  ASSERT_EQ_INT(import_from(b, file, &st, err, sizeof err), CT_OK);
  ASSERT_EQ_INT(st.winners_stored, 0);
  ASSERT_EQ_INT(raw_int(b, "SELECT count(*) FROM winners WHERE mean_ms = 9"),
                2);
  ASSERT_EQ_INT(raw_exec(b, "UPDATE winners SET created_at = 5"), SQLITE_OK);
  ASSERT_EQ_INT(import_from(b, file, &st, err, sizeof err), CT_OK);
  ASSERT_EQ_INT(st.winners_stored, 2);
  ASSERT_EQ_INT(raw_int(b, "SELECT count(*) FROM winners WHERE mean_ms = 9"),
                0);
}

/* Writes n bytes of pseudo-random data to path. */
static int write_garbage(const char *path, size_t n)
{
  FILE *f = fopen(path, "wb");
  uint32_t x = 12345;
  size_t i;
  if (!f) return -1;
  for (i = 0; i < n; i++) {
    x = x * 1664525u + 1013904223u;
    fputc((int)(x >> 24), f);
  }
  return fclose(f);
}

static void test_not_sqlite(void)
{
  const char *path = tmp_path("garbage.db");
  ct_cache *c = NULL;
  char err[512];
  struct stat before, after;

  ASSERT_EQ_INT(write_garbage(path, 8192), 0);
  ASSERT_EQ_INT(stat(path, &before), 0);
  ASSERT_EQ_INT(ct_cache_open(path, CT_CACHE_CREATE, &c, err, sizeof err),
                CT_ERR_DB_CORRUPT);
  ASSERT_TRUE(c == NULL);
  ASSERT_TRUE(strstr(err, path) != NULL);
  ASSERT_EQ_INT(ct_cache_open(path, CT_CACHE_READONLY, &c, err, sizeof err),
                CT_ERR_DB_CORRUPT);
  ASSERT_TRUE(strstr(err, path) != NULL);
  ASSERT_EQ_INT(stat(path, &after), 0);
  ASSERT_EQ_INT(after.st_size, before.st_size);
  ASSERT_EQ_INT(after.st_mtime, before.st_mtime);
}

static void test_foreign_sqlite(void)
{
  const char *path = tmp_path("foreign.db");
  ct_cache *c = NULL;
  char err[512], buf[32];

  ASSERT_EQ_INT(raw_exec(path, "CREATE TABLE photos(id INTEGER, name TEXT);"
                               "INSERT INTO photos VALUES(1, 'cat');"),
                SQLITE_OK);
  ASSERT_EQ_INT(ct_cache_open(path, CT_CACHE_CREATE, &c, err, sizeof err),
                CT_ERR_DB_CORRUPT);
  ASSERT_TRUE(c == NULL);
  ASSERT_TRUE(strstr(err, path) != NULL);
  ASSERT_TRUE(strstr(err, "not a convtune database") != NULL);
  ASSERT_EQ_INT(ct_cache_open(path, CT_CACHE_READONLY, &c, err, sizeof err),
                CT_ERR_DB_CORRUPT);
  ASSERT_TRUE(strstr(err, path) != NULL);
  /* Left untouched: no tables added, journal mode unchanged. */
  ASSERT_EQ_INT(raw_int(path, "SELECT count(*) FROM sqlite_master"), 1);
  ASSERT_EQ_STR(raw_text(path, "PRAGMA journal_mode", buf, sizeof buf),
                "delete");

  /* Our application id but no meta table: damaged. */
  ASSERT_EQ_INT(raw_exec(path, "PRAGMA application_id = 1129595970;"
                               "PRAGMA user_version = 2;"),
                SQLITE_OK);
  ASSERT_EQ_INT(ct_cache_open(path, 0, &c, err, sizeof err),
                CT_ERR_DB_CORRUPT);
  ASSERT_TRUE(strstr(err, path) != NULL);
}

static void test_too_new(void)
{
  const char *path = tmp_path("future.db");
  ct_cache *c = NULL;
  char err[512];

  ASSERT_EQ_INT(ct_cache_migrate_to(path, CT_CACHE_SCHEMA_VERSION, err,
                                    sizeof err),
                CT_OK);
  ASSERT_EQ_INT(raw_exec(path, "PRAGMA user_version = 99"), SQLITE_OK);
  ASSERT_EQ_INT(ct_cache_open(path, CT_CACHE_CREATE, &c, err, sizeof err),
                CT_ERR_UNSUPPORTED);
  ASSERT_TRUE(c == NULL);
  ASSERT_TRUE(strstr(err, path) != NULL);
  ASSERT_TRUE(strstr(err, "99") != NULL);
  ASSERT_EQ_INT(ct_cache_open(path, CT_CACHE_READONLY, &c, err, sizeof err),
                CT_ERR_UNSUPPORTED);
  ASSERT_EQ_INT(raw_int(path, "PRAGMA user_version"), 99);
}

static void test_missing_and_empty(void)
{
  const char *path = tmp_path("nothere/tuning.db");
  const char *empty = tmp_path("empty.db");
  ct_cache *c = NULL;
  char err[512];
  int fd;

  ASSERT_EQ_INT(ct_cache_open(path, CT_CACHE_READONLY, &c, err, sizeof err),
                CT_ERR_NOT_FOUND);
  ASSERT_TRUE(c == NULL);
  ASSERT_TRUE(strstr(err, path) != NULL);
  ASSERT_EQ_INT(ct_cache_open(path, 0, &c, err, sizeof err),
                CT_ERR_NOT_FOUND);
  ASSERT_TRUE(!file_exists(path));
  ASSERT_TRUE(!file_exists(tmp_path("nothere")));

  /* An empty file: nothing tuned when read, initialised when written. */
  fd = open(empty, O_CREAT | O_WRONLY | O_TRUNC, 0644);
  ASSERT_TRUE(fd >= 0);
  close(fd);
  ASSERT_EQ_INT(ct_cache_open(empty, CT_CACHE_READONLY, &c, err, sizeof err),
                CT_ERR_NOT_FOUND);
  ASSERT_EQ_INT(ct_cache_open(empty, 0, &c, err, sizeof err), CT_OK);
  ASSERT_EQ_INT(ct_cache_schema_version(c), CT_CACHE_SCHEMA_VERSION);
  ct_cache_close(c);
}

/* Reads the winner stored by test_readonly_directory; 0 if all is well,
** else the failing line. */
static int readonly_directory_read(const char *path)
{
  ct_cache *c = NULL;
  ct_cache_device d = test_device();
  ct_cache_winner got;
  char err[512];
  int line = 0;

  if (ct_cache_open(path, CT_CACHE_READONLY, &c, err, sizeof err) != CT_OK) {
    fprintf(stderr, "%s\n", err);
    return __LINE__;
  }
  if (ct_cache_schema_version(c) != CT_CACHE_SCHEMA_VERSION) line = __LINE__;
  if (!line && ct_cache_winner_get(c, spec_a, &d, &got) != CT_OK)
    line = __LINE__;
  if (!line && got.cubin_size != 512) line = __LINE__;
  ct_cache_winner_clear(&got);
  ct_cache_close(c);
  return line;
}

/* A database in a directory the reader cannot write (a read-only install):
** SQLite cannot make the WAL's -shm there; the read-only open still works.
** The directory name needs escaping in a file: URI.  As root, permissions
** do not bind, so the reading runs in a child that becomes nobody. */
static void test_readonly_directory(void)
{
  const char *dir = tmp_path("ro dir%41#?");
  char path[1100], wal[1200];
  ct_cache *c = NULL;
  ct_cache_device d = test_device();
  ct_cache_winner w;
  int64_t dev = 0, prob = 0;
  int line = -1, status = 0;
  char err[512];
  pid_t pid;

  snprintf(path, sizeof path, "%s/tuning.db", dir);
  snprintf(wal, sizeof wal, "%s-wal", path);
  ASSERT_EQ_INT(ct_cache_open(path, CT_CACHE_CREATE, &c, err, sizeof err),
                CT_OK);
  ASSERT_EQ_INT(ct_cache_device_id(c, &d, &dev), CT_OK);
  ASSERT_EQ_INT(ct_cache_problem_id(c, spec_a, "tf32", &prob), CT_OK);
  w = test_winner(prob, dev, 0, 512, 5);
  ASSERT_TRUE(w.cubin != NULL);
  ASSERT_EQ_INT(ct_cache_winner_set(c, &w), CT_OK);
  ct_cache_winner_clear(&w);
  ct_cache_close(c);
  ASSERT_TRUE(!file_exists(wal)); /* the last close checkpoints */

  ASSERT_EQ_INT(chmod(dir, 0555), 0);
  if (geteuid() != 0) {
    line = readonly_directory_read(path);
  } else {
    ASSERT_EQ_INT(chmod(tmp_dir, 0711), 0);
    fflush(NULL);
    pid = fork();
    if (pid == 0) {
      if (setgid(65534) != 0 || setuid(65534) != 0) _exit(255);
      _exit(readonly_directory_read(path) ? 1 : 0);
    }
    if (pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status))
      line = WEXITSTATUS(status) == 255 ? 0 /* cannot drop root: skip */
                                        : WEXITSTATUS(status);
    chmod(tmp_dir, 0700);
  }
  chmod(dir, 0755);
  ASSERT_EQ_INT(line, 0);
  ASSERT_TRUE(!file_exists(wal));
}

/* ---------------------------------------------------------------------- */
/* Two writers                                                             */

#define WRITER_TRIALS 200

typedef struct writer {
  const char *path;
  int index;
  pthread_barrier_t *start;
  int64_t device_id, problem_id;
  int failures;         /* calls that did not return CT_OK */
  char error[512];      /* the first failure */
} writer;

static void *writer_main(void *arg)
{
  writer *w = arg;
  ct_cache *c = NULL;
  ct_cache_device d = test_device();
  ct_status rc;
  int i;

  pthread_barrier_wait(w->start);
  /* Both open a file that does not exist yet: creation and migration race. */
  rc = ct_cache_open(w->path, CT_CACHE_CREATE, &c, w->error, sizeof w->error);
  if (rc != CT_OK) {
    w->failures++;
    return NULL;
  }
  if (ct_cache_device_id(c, &d, &w->device_id) != CT_OK ||
      ct_cache_problem_id(c, spec_a, "tf32", &w->problem_id) != CT_OK) {
    w->failures++;
    snprintf(w->error, sizeof w->error, "%s", ct_cache_errmsg(c));
    ct_cache_close(c);
    return NULL;
  }
  for (i = 0; i < WRITER_TRIALS; i++) {
    char name[64];
    ct_cache_trial t;
    snprintf(name, sizeof name, "w%d:i=%d", w->index, i);
    t = test_trial(w->problem_id, w->device_id, name, 1.0 + i);
    t.source_hash = (uint64_t)i;
    if (ct_cache_trial_add(c, &t) != CT_OK) {
      if (w->failures++ == 0)
        snprintf(w->error, sizeof w->error, "%s", ct_cache_errmsg(c));
    }
  }
  ct_cache_close(c);
  return NULL;
}

/* Threads that open one new database at the same moment: changing it to
** WAL takes an exclusive lock, and SQLite answers SQLITE_BUSY at once,
** without waiting, where two openers' locks could deadlock; the open must
** wait and retry rather than fail.  100 rounds of 4 openers, each round a
** new file. */
typedef struct opener {
  const char *path;
  pthread_barrier_t *start;
  ct_status rc;
  char error[512];
} opener;

static void *opener_main(void *arg)
{
  opener *o = arg;
  ct_cache *c = NULL;
  pthread_barrier_wait(o->start);
  o->rc = ct_cache_open(o->path, CT_CACHE_CREATE, &c, o->error, sizeof o->error);
  ct_cache_close(c);
  return NULL;
}

static void test_concurrent_create(void)
{
  enum { OPENERS = 4, ROUNDS = 100 };
  pthread_barrier_t start;
  pthread_t th[OPENERS];
  opener o[OPENERS];
  char name[64];
  const char *path;
  int round, i;

  for (round = 0; round < ROUNDS; round++) {
    snprintf(name, sizeof name, "create%d/tuning.db", round);
    path = tmp_path(name);
    ASSERT_EQ_INT(pthread_barrier_init(&start, NULL, OPENERS), 0);
    for (i = 0; i < OPENERS; i++) {
      memset(&o[i], 0, sizeof o[i]);
      o[i].path = path;
      o[i].start = &start;
      ASSERT_EQ_INT(pthread_create(&th[i], NULL, opener_main, &o[i]), 0);
    }
    for (i = 0; i < OPENERS; i++) pthread_join(th[i], NULL);
    pthread_barrier_destroy(&start);
    for (i = 0; i < OPENERS; i++) {
      if (o[i].rc != CT_OK)
        fprintf(stderr, "round %d, opener %d: %s\n", round, i, o[i].error);
      ASSERT_EQ_INT(o[i].rc, CT_OK);
    }
  }
}

static void test_concurrent_writers(void)
{
  const char *path = tmp_path("concurrent/tuning.db");
  pthread_barrier_t start;
  pthread_t th[2];
  writer w[2];
  ct_cache *c = NULL;
  ct_cache_trial *v = NULL, found;
  size_t n = 0;
  char err[512], buf[64];
  int i, j;

  ASSERT_EQ_INT(pthread_barrier_init(&start, NULL, 2), 0);
  for (i = 0; i < 2; i++) {
    memset(&w[i], 0, sizeof w[i]);
    w[i].path = path;
    w[i].index = i;
    w[i].start = &start;
    ASSERT_EQ_INT(pthread_create(&th[i], NULL, writer_main, &w[i]), 0);
  }
  for (i = 0; i < 2; i++) pthread_join(th[i], NULL);
  pthread_barrier_destroy(&start);
  for (i = 0; i < 2; i++) {
    if (w[i].failures) fprintf(stderr, "writer %d: %s\n", i, w[i].error);
    ASSERT_EQ_INT(w[i].failures, 0);
  }
  ASSERT_EQ_INT(w[0].device_id, w[1].device_id);
  ASSERT_EQ_INT(w[0].problem_id, w[1].problem_id);

  ASSERT_EQ_INT(ct_cache_open(path, CT_CACHE_READONLY, &c, err, sizeof err),
                CT_OK);
  ASSERT_EQ_INT(ct_cache_trials(c, w[0].problem_id, 0, &v, &n), CT_OK);
  free(v);
  ASSERT_EQ_INT(n, 2 * WRITER_TRIALS);
  for (i = 0; i < 2; i++) {
    for (j = 0; j < WRITER_TRIALS; j++) {
      char name[64];
      snprintf(name, sizeof name, "w%d:i=%d", i, j);
      ASSERT_EQ_INT(ct_cache_trial_find(c, w[0].problem_id, w[0].device_id,
                                        name, (uint64_t)j, &found),
                    CT_OK);
      ASSERT_NEAR(found.mean_ms, 1.0 + j, 0);
    }
  }
  ASSERT_EQ_INT(ct_cache_check(c), CT_OK);
  ct_cache_close(c);
  ASSERT_EQ_STR(raw_text(path, "PRAGMA integrity_check", buf, sizeof buf),
                "ok");
  ASSERT_EQ_INT(raw_int(path, "SELECT count(*) FROM devices"), 1);
  ASSERT_EQ_INT(raw_int(path, "SELECT count(*) FROM problems"), 1);
  ASSERT_EQ_INT(raw_int(path, "PRAGMA user_version"), CT_CACHE_SCHEMA_VERSION);
  ASSERT_EQ_INT(raw_int(path, "SELECT count(*) FROM meta"), 1);
}

/* ---------------------------------------------------------------------- */

static int remove_entry(const char *path, const struct stat *sb, int flag,
                        struct FTW *ftw)
{
  (void)sb;
  (void)flag;
  (void)ftw;
  return remove(path);
}

int main(void)
{
  const char *base = getenv("TMPDIR");
  snprintf(tmp_dir, sizeof tmp_dir, "%s/ct_cache_XXXXXX",
           base && base[0] ? base : "/tmp");
  if (!mkdtemp(tmp_dir)) {
    fprintf(stderr, "mkdtemp %s: %s\n", tmp_dir, strerror(errno));
    return 1;
  }

  RUN_TEST(test_schema_created);
  RUN_TEST(test_default_path);
  RUN_TEST(test_device_problem_upsert);
  RUN_TEST(test_invalid_args);
  RUN_TEST(test_trial_status_names);
  RUN_TEST(test_trials);
  RUN_TEST(test_winners);
  RUN_TEST(test_tampered_cubin);
  RUN_TEST(test_migrate_v1);
  RUN_TEST(test_migrate_v2);
  RUN_TEST(test_cubins);
  RUN_TEST(test_export_import);
  RUN_TEST(test_not_sqlite);
  RUN_TEST(test_foreign_sqlite);
  RUN_TEST(test_too_new);
  RUN_TEST(test_missing_and_empty);
  RUN_TEST(test_readonly_directory);
  RUN_TEST(test_concurrent_writers);
  RUN_TEST(test_concurrent_create);

  nftw(tmp_dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
  TEST_EXIT();
}
