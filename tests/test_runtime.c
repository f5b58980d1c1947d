/*
** test_runtime.c — libconvtune's runtime on CPU, against the mock driver
** (mock_cuda.c, named by $CONVTUNE_LIBCUDA) and real NVRTC: the lookup
** order (exact -> nearest -> default) and its reasons, stored cubins that
** spare NVRTC (a shape-generic winner for another problem, the compile
** cache), an untrusted
** database (stale, foreign, tampered, damaged, truncated, not a database),
** bad input through the API (nothing launched, nothing written), threads
** sharing a context, a context used after fork(), and the hot path's cost:
** no allocation, no synchronisation, host time per call.
**
**   test_runtime              the tests (needs CONVTUNE_LIBCUDA=mock)
**   test_runtime --no-driver  ct_open without a driver: CT_ERR_NO_DRIVER
**   test_runtime --no-device  with a driver that sees no GPU: CT_ERR_NO_DEVICE
*/
#include <dlfcn.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "convtune.h"
#include "ct_cache.h"
#include "ct_gen.h"
#include "ct_lookup.h"
#include "ct_nvrtc.h"
#include "mock_cuda.h"
#include "test.h"

#include "count_malloc.h" /* counting host allocations */

/* ---------------------------------------------------------------------- */
/* Setup                                                                   */

static ct_mock_counters_fn mock_counters;
static ct_mock_last_launch_fn mock_last_launch;
static char tmp_dir[256];
static ct_cache_device mock_dev;  /* what the runtime will key on */
static ct_gen_limits lim;         /* sm_90a, as the mock reports */

static ct_mock_stats stats(void) {
  ct_mock_stats s;
  mock_counters(&s);
  return s;
}

static const char *tmp_path(const char *name) {
  static char buf[8][512];
  static int next;
  char *p = buf[next++ % 8];
  snprintf(p, sizeof buf[0], "%s/%s", tmp_dir, name);
  return p;
}

static ct_problem parse(const char *spec) {
  ct_problem p;
  char err[256];
  if (ct_problem_parse(spec, &p, err, sizeof err) != CT_OK) {
    fprintf(stderr, "bad spec in the test: %s: %s\n", spec, err);
    exit(1);
  }
  return p;
}

/* Host buffers standing for device tensors: the mock never touches them. */
static float *bx, *bw, *bb, *by;
#define BUF_FLOATS (1 << 16)
#define SENTINEL 12345.0f

static int y_untouched(void) {
  for (size_t i = 0; i < BUF_FLOATS; i++)
    if (by[i] != SENTINEL) return 0;
  return 1;
}

static ct_status fwd(ct_context *ctx, const ct_problem *p) {
  return ct_forward(ctx, p, bx, bw, p->bias ? bb : NULL, by, NULL);
}

static int contains(const char *hay, const char *needle) {
  return hay && strstr(hay, needle) != NULL;
}

static ct_path path_of(ct_context *ctx, const ct_problem *p) {
  ct_path path = CT_PATH_NONE;
  ct_forward_path(ctx, p, &path, NULL, 0);
  return path;
}

static const char *reason_of(ct_context *ctx, const ct_problem *p) {
  static char buf[1024];
  ct_forward_reason(ctx, p, buf, sizeof buf);
  return buf;
}

/* ---------------------------------------------------------------------- */
/* Databases built behind the runtime's back                               */

/* The first variant of p of the family named, or (family NULL) the first
** of a family other than "direct" (the nearest and tuned paths are then
** told apart from the default) that runs as one launch, as the tests of
** the tuned path count launches; -1 when there is none. */
static int variant_of(const ct_problem *p, const char *family, ct_gen_variant *out) {
  ct_gen_variant *vs = NULL;
  size_t n = 0;
  if (ct_gen_enumerate(p, &lim, &vs, &n) != CT_OK) return -1;
  int found = -1;
  for (size_t i = 0; i < n && found < 0; i++)
    if (family ? strcmp(vs[i].family->name, family) == 0
               : strcmp(vs[i].family->name, "direct") != 0 && vs[i].n_kernels == 1) {
      *out = vs[i];
      found = 0;
    }
  free(vs);
  return found;
}

static int tuned_variant(const ct_problem *p, ct_gen_variant *out) {
  return variant_of(p, NULL, out);
}

/* A compiled variant: its cubin and source hash. */
typedef struct compiled {
  ct_gen_variant v;
  void *cubin;
  size_t size;
  uint64_t source_hash;
} compiled;

static int compile_variant(const ct_problem *p, const ct_gen_variant *v,
                           compiled *out) {
  char *src = NULL;
  if (ct_gen_source(p, v, &src) != CT_OK) return -1;
  ct_rt_compiled c;
  ct_status rc = ct_rt_compile(src, v->name, lim.arch, &c);
  out->v = *v;
  out->source_hash = ct_gen_hash(src, strlen(src), CT_GEN_HASH_SEED);
  free(src);
  if (rc != CT_OK) {
    fprintf(stderr, "compile %s: %s\n", v->name, c.log ? c.log : "");
    ct_rt_compiled_clear(&c);
    return -1;
  }
  out->cubin = c.cubin;
  out->size = c.cubin_size;
  c.cubin = NULL;
  ct_rt_compiled_clear(&c);
  return 0;
}

/* One winner row to store; empty fields take the right values. */
typedef struct row {
  const char *spec;         /* the problem */
  const char *variant;      /* "" : the compiled variant's name */
  const compiled *cubin;    /* the cubin and its source hash */
  int64_t hash_delta;       /* added to the source hash */
  const char *arch, *nvrtc, *options; /* NULL: this build's */
  const char *device_name;  /* NULL: the mock's */
  const void *blob;         /* replaces the cubin bytes when set */
  size_t blob_size;
} row;

static int db_write(const char *path, const row *rows, size_t n) {
  unlink(path);
  ct_cache *c = NULL;
  char err[256];
  if (ct_cache_open(path, CT_CACHE_CREATE, &c, err, sizeof err) != CT_OK) {
    fprintf(stderr, "%s\n", err);
    return -1;
  }
  int bad = 0;
  for (size_t i = 0; i < n && !bad; i++) {
    const row *r = &rows[i];
    ct_cache_device d = mock_dev;
    if (r->device_name) snprintf(d.name, sizeof d.name, "%s", r->device_name);
    int64_t did, pid;
    ct_problem p = parse(r->spec);
    char spec[CT_PROBLEM_SPEC_MAX];
    ct_problem_format(&p, spec, sizeof spec);
    ct_cache_winner w;
    memset(&w, 0, sizeof w);
    if (ct_cache_device_id(c, &d, &did) != CT_OK ||
        ct_cache_problem_id(c, spec, ct_precision_name(p.precision), &pid) !=
            CT_OK) {
      bad = 1;
      break;
    }
    w.problem_id = pid;
    w.device_id = did;
    snprintf(w.variant, sizeof w.variant, "%s",
             r->variant && r->variant[0] ? r->variant : r->cubin->v.name);
    w.source_hash = r->cubin->source_hash + (uint64_t)r->hash_delta;
    w.cubin = r->blob ? (void *)r->blob : r->cubin->cubin;
    w.cubin_size = r->blob ? r->blob_size : r->cubin->size;
    w.cubin_hash = ct_gen_hash(w.cubin, w.cubin_size, CT_GEN_HASH_SEED);
    snprintf(w.arch, sizeof w.arch, "%s", r->arch ? r->arch : lim.arch);
    snprintf(w.nvrtc_version, sizeof w.nvrtc_version, "%s",
             r->nvrtc ? r->nvrtc : mock_dev.nvrtc_version);
    snprintf(w.options, sizeof w.options, "%s",
             r->options ? r->options : ct_rt_compile_options(lim.arch));
    w.mean_ms = 1.0;
    if (ct_cache_winner_set(c, &w) != CT_OK) {
      fprintf(stderr, "winner_set: %s\n", ct_cache_errmsg(c));
      bad = 1;
    }
  }
  ct_cache_close(c);
  return bad ? -1 : 0;
}

static int raw_exec(const char *path, const char *sql) {
  sqlite3 *db = NULL;
  int rc = sqlite3_open(path, &db);
  if (rc == SQLITE_OK) rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
  sqlite3_close(db);
  return rc;
}

static int write_bytes(const char *path, const void *data, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f) return -1;
  size_t w = fwrite(data, 1, n, f);
  return fclose(f) == 0 && w == n ? 0 : -1;
}

static void *read_file(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  void *buf = malloc((size_t)size);
  if (buf && fread(buf, 1, (size_t)size, f) != (size_t)size) {
    free(buf);
    buf = NULL;
  }
  fclose(f);
  *n = (size_t)size;
  return buf;
}

/* The problems the tests tune, and their compiled winners. */
static const char *spec_a = "n=2,c=8,h=20,w=20,k=32,r=3,s=3,stride=1,pad=1,prec=tf32";
static const char *spec_b = "n=1,c=8,h=30,w=26,k=32,r=3,s=3,stride=1,pad=1,prec=tf32";
static const char *spec_big = "n=4,c=3,h=63,w=61,k=20,r=11,s=11,stride=4,pad=2,prec=tf32";
static compiled win_a, win_big, win_direct;

/* ---------------------------------------------------------------------- */
/* Distance (no driver)                                                    */

static void test_distance(void) {
  ct_problem a = parse(spec_a), b = parse(spec_b), big = parse(spec_big);
  ASSERT_NEAR(ct_rt_problem_distance(&a, &a), 0.0, 0.0);
  ASSERT_NEAR(ct_rt_problem_distance(&a, &b), ct_rt_problem_distance(&b, &a), 1e-12);
  ASSERT_TRUE(ct_rt_problem_distance(&a, &b) < 100.0); /* same structure */
  ASSERT_TRUE(ct_rt_problem_distance(&a, &big) > ct_rt_problem_distance(&a, &b));
  ct_problem f = a;
  f.precision = CT_PREC_FP32;
  ASSERT_TRUE(isinf(ct_rt_problem_distance(&a, &f)));
  /* A different kernel size outweighs any size difference. */
  ct_problem r5 = a;
  r5.r = r5.s = 5;
  r5.pad_h = r5.pad_w = 2;
  ct_problem huge = a;
  huge.n = 64;
  huge.k = 512;
  ASSERT_TRUE(ct_rt_problem_distance(&a, &huge) < ct_rt_problem_distance(&a, &r5));
  /* Structure weights: stride > dilation > channels > padding > bias. */
  ct_problem s2 = a, d2 = a, c9 = a, p0 = a, nb = a;
  s2.stride_h = 2;
  d2.dil_w = 2;
  c9.c = 9;
  p0.pad_h = 0;
  nb.bias = 0;
  ASSERT_TRUE(ct_rt_problem_distance(&a, &s2) > ct_rt_problem_distance(&a, &d2));
  ASSERT_TRUE(ct_rt_problem_distance(&a, &d2) > ct_rt_problem_distance(&a, &c9));
  ASSERT_TRUE(ct_rt_problem_distance(&a, &c9) > ct_rt_problem_distance(&a, &p0));
  /* a residual weighs as the bias and the activation do */
  ct_problem res = a;
  res.residual = 1;
  ASSERT_NEAR(ct_rt_problem_distance(&a, &res), ct_rt_problem_distance(&a, &nb), 1e-12);
  ASSERT_TRUE(ct_rt_problem_distance(&a, &res) >= 100.0);
  ASSERT_TRUE(ct_rt_problem_distance(&a, &p0) > ct_rt_problem_distance(&a, &nb));
  /* another grouping: no winner is borrowed across it */
  ct_problem g2 = a;
  g2.groups = a.c;
  if (a.k % a.c != 0) g2.k = a.c;
  ASSERT_TRUE(isinf(ct_rt_problem_distance(&a, &g2)));
  ASSERT_TRUE(isinf(ct_rt_problem_distance(&g2, &a)));
  ASSERT_NEAR(ct_rt_problem_distance(&g2, &g2), 0.0, 0);
}

/* ---------------------------------------------------------------------- */
/* Opening                                                                 */

static void test_open_args(void) {
  ASSERT_EQ_INT(ct_open("", 0, NULL), CT_ERR_INVALID_ARG);
  ct_context *ctx = (ct_context *)&ctx; /* overwritten with NULL on failure */
  ASSERT_EQ_INT(ct_open("", 1, &ctx), CT_ERR_NO_DEVICE);
  ASSERT_TRUE(ctx == NULL);
  ASSERT_TRUE(contains(ct_open_error(), "no CUDA device 1"));
  ASSERT_EQ_INT(ct_open("", -1, &ctx), CT_ERR_NO_DEVICE);
  ct_close(NULL); /* harmless */
}

static void test_no_database(void) {
  ct_context *ctx = NULL;
  ASSERT_EQ_INT(ct_open("", 0, &ctx), CT_OK);
  char msg[512];
  ASSERT_EQ_INT(ct_database_status(ctx, msg, sizeof msg), CT_ERR_NOT_FOUND);
  ASSERT_TRUE(contains(msg, "no database"));
  ct_problem p = parse(spec_a);
  ASSERT_EQ_INT(path_of(ctx, &p), CT_PATH_NONE);
  ASSERT_EQ_STR(reason_of(ctx, &p), "not run yet");
  ct_mock_stats s0 = stats();
  ASSERT_EQ_INT(fwd(ctx, &p), CT_OK);
  ct_mock_stats s1 = stats();
  ASSERT_EQ_INT(s1.launches - s0.launches, 1);
  ASSERT_EQ_INT(s1.module_loads - s0.module_loads, 1);
  ASSERT_EQ_INT(path_of(ctx, &p), CT_PATH_DEFAULT);
  ASSERT_TRUE(contains(reason_of(ctx, &p), "no usable tuning database"));
  ct_mock_launch l;
  mock_last_launch(&l);
  ASSERT_EQ_STR(l.name, "conv_direct");
  ASSERT_EQ_INT(l.args[0], (uint64_t)(uintptr_t)bx);
  ASSERT_EQ_INT(l.args[1], (uint64_t)(uintptr_t)bw);
  ASSERT_EQ_INT(l.args[2], (uint64_t)(uintptr_t)bb);
  ASSERT_EQ_INT(l.args[3], (uint64_t)(uintptr_t)by);
  /* Without a bias, b goes in as NULL whatever the caller passed. */
  ct_problem nb = p;
  nb.bias = 0;
  ASSERT_EQ_INT(ct_forward(ctx, &nb, bx, bw, bb, by, NULL), CT_OK);
  mock_last_launch(&l);
  ASSERT_EQ_INT(l.args[2], 0);
  ct_close(ctx);
}

static void test_missing_file(void) {
  ct_context *ctx = NULL;
  const char *path = tmp_path("no-such.db");
  ASSERT_EQ_INT(ct_open(path, 0, &ctx), CT_OK);
  char msg[512];
  ASSERT_EQ_INT(ct_database_status(ctx, msg, sizeof msg), CT_ERR_NOT_FOUND);
  ASSERT_TRUE(contains(msg, path));
  ct_problem p = parse(spec_a);
  ASSERT_EQ_INT(fwd(ctx, &p), CT_OK);
  ASSERT_EQ_INT(path_of(ctx, &p), CT_PATH_DEFAULT);
  ct_close(ctx);
  struct stat sb;
  ASSERT_TRUE(stat(path, &sb) != 0); /* nothing was created */
}

/* ct_default_database names the file ct_open(NULL) opens (test_cache
** covers the rule's order); it says when no variable gives one. */
static void test_default_database(void) {
  const char *names[3] = {"CONVTUNE_DB", "XDG_CACHE_HOME", "HOME"};
  char *saved[3];
  for (int i = 0; i < 3; i++) {
    const char *v = getenv(names[i]);
    saved[i] = v ? strdup(v) : NULL;
  }
  const char *path = tmp_path("default-here.db");
  setenv("CONVTUNE_DB", path, 1);
  char buf[512], small[8];
  ASSERT_EQ_INT(ct_default_database(buf, sizeof buf), CT_OK);
  ASSERT_EQ_STR(buf, path);
  ct_context *ctx = NULL;
  ASSERT_EQ_INT(ct_open(NULL, 0, &ctx), CT_OK);
  char msg[512];
  ASSERT_EQ_INT(ct_database_status(ctx, msg, sizeof msg), CT_ERR_NOT_FOUND);
  ASSERT_TRUE(contains(msg, path));
  ct_close(ctx);
  ASSERT_EQ_INT(ct_default_database(small, sizeof small), CT_ERR_INVALID_ARG);
  ASSERT_EQ_INT(ct_default_database(NULL, sizeof buf), CT_ERR_INVALID_ARG);
  /* Paths that do not fit a context: said, not cut to a different file. */
  static char longpath[5000];
  memset(longpath, 'a', sizeof longpath - 1);
  longpath[0] = '/';
  setenv("CONVTUNE_DB", longpath, 1);
  ASSERT_EQ_INT(ct_open(NULL, 0, &ctx), CT_OK);
  ASSERT_EQ_INT(ct_database_status(ctx, msg, sizeof msg), CT_ERR_IO);
  ASSERT_TRUE(contains(msg, "longer than 4095 bytes"));
  ct_close(ctx);
  ASSERT_EQ_INT(ct_open(longpath, 0, &ctx), CT_OK);
  ASSERT_EQ_INT(ct_database_status(ctx, msg, sizeof msg), CT_ERR_IO);
  ASSERT_TRUE(contains(msg, "db_path is 4999 bytes long"));
  ct_close(ctx);
  for (int i = 0; i < 3; i++) unsetenv(names[i]);
  ASSERT_EQ_INT(ct_default_database(buf, sizeof buf), CT_ERR_IO);
  ASSERT_EQ_STR(buf, "");
  ASSERT_EQ_INT(ct_open(NULL, 0, &ctx), CT_OK);
  ASSERT_EQ_INT(ct_database_status(ctx, msg, sizeof msg), CT_ERR_IO);
  ASSERT_TRUE(contains(msg, "no tuning database path"));
  ct_close(ctx);
  for (int i = 0; i < 3; i++) {
    if (saved[i]) setenv(names[i], saved[i], 1);
    free(saved[i]);
  }
}

/* Opens path, checks the database status, and that forward still runs the
** default for spec_a. */
static void expect_default_with(const char *path, ct_status want,
                                const char *needle) {
  ct_context *ctx = NULL;
  ASSERT_EQ_INT(ct_open(path, 0, &ctx), CT_OK);
  char msg[512];
  ct_status st = ct_database_status(ctx, msg, sizeof msg);
  if (st != want) fprintf(stderr, "  %s: status %d (%s)\n", path, st, msg);
  ASSERT_EQ_INT(st, want);
  ASSERT_TRUE(contains(msg, needle));
  ct_problem p = parse(spec_a);
  ct_mock_stats s0 = stats();
  ASSERT_EQ_INT(fwd(ctx, &p), CT_OK);
  ASSERT_EQ_INT(stats().launches - s0.launches, 1);
  ASSERT_EQ_INT(path_of(ctx, &p), CT_PATH_DEFAULT);
  ASSERT_TRUE(contains(reason_of(ctx, &p), "no usable tuning database"));
  ct_close(ctx);
}

static void test_bad_files(void) {
  const char *junk = tmp_path("junk.db");
  const char text[] = "this is not a database, just some bytes that go on "
                      "for a while and a while and a while................";
  ASSERT_EQ_INT(write_bytes(junk, text, sizeof text), 0);
  expect_default_with(junk, CT_ERR_DB_CORRUPT, junk);

  const char *empty = tmp_path("empty.db");
  ASSERT_EQ_INT(write_bytes(empty, "", 0), 0);
  expect_default_with(empty, CT_ERR_NOT_FOUND, "empty");

  const char *foreign = tmp_path("foreign.db");
  ASSERT_EQ_INT(raw_exec(foreign, "CREATE TABLE t(x); INSERT INTO t VALUES(1);"),
                SQLITE_OK);
  expect_default_with(foreign, CT_ERR_DB_CORRUPT, "not a convtune database");

  const char *newer = tmp_path("newer.db");
  row r = {.spec = spec_a, .cubin = &win_a};
  ASSERT_EQ_INT(db_write(newer, &r, 1), 0);
  ASSERT_EQ_INT(raw_exec(newer, "PRAGMA user_version = 99;"), SQLITE_OK);
  expect_default_with(newer, CT_ERR_UNSUPPORTED, "newer");

  /* A directory where the file should be. */
  const char *dir = tmp_path("dir.db");
  ASSERT_EQ_INT(mkdir(dir, 0700), 0);
  ct_context *ctx = NULL;
  ASSERT_EQ_INT(ct_open(dir, 0, &ctx), CT_OK);
  ASSERT_TRUE(ct_database_status(ctx, NULL, 0) != CT_OK);
  ct_problem p = parse(spec_a);
  ASSERT_EQ_INT(fwd(ctx, &p), CT_OK);
  ct_close(ctx);
}

/* A database damaged after it was written: truncated, or bytes flipped.
** Whatever is hit, forward runs a kernel that was built for the problem
** (the default or the tuned variant, never a stale or damaged cubin). */
static void test_damaged_files(void) {
  const char *good = tmp_path("good.db");
  row rows[] = {
      {.spec = spec_a, .cubin = &win_a},
      {.spec = spec_big, .cubin = &win_big},
  };
  ASSERT_EQ_INT(db_write(good, rows, 2), 0);
  ASSERT_EQ_INT(raw_exec(good, "PRAGMA journal_mode = DELETE;"), SQLITE_OK);
  size_t n = 0;
  unsigned char *bytes = read_file(good, &n);
  ASSERT_TRUE(bytes != NULL && n > 4096);
  ct_problem p = parse(spec_a);
  const char *bad = tmp_path("damaged.db");
  /* Truncated at several points, then a byte flipped at several. */
  size_t cuts[] = {100, 4096, n / 2, n - 1};
  for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
    ASSERT_EQ_INT(write_bytes(bad, bytes, cuts[i]), 0);
    ct_context *ctx = NULL;
    ASSERT_EQ_INT(ct_open(bad, 0, &ctx), CT_OK);
    ct_mock_stats s0 = stats();
    ASSERT_EQ_INT(fwd(ctx, &p), CT_OK);
    ASSERT_EQ_INT(stats().launches - s0.launches, 1);
    char msg[512];
    ct_status st = ct_database_status(ctx, msg, sizeof msg);
    ct_path path = path_of(ctx, &p);
    printf("  truncated at %zu of %zu: db %s (%s); %s\n", cuts[i], n,
           ct_status_string(st), msg, ct_path_name(path));
    ASSERT_TRUE(path != CT_PATH_TUNED_CUBIN || st == CT_OK);
    ct_close(ctx);
  }
  for (size_t off = 1000; off < n; off += n / 5) {
    unsigned char *copy = malloc(n);
    ASSERT_TRUE(copy != NULL);
    memcpy(copy, bytes, n);
    for (size_t k = 0; k < 64 && off + k < n; k++) copy[off + k] ^= 0x5a;
    ASSERT_EQ_INT(write_bytes(bad, copy, n), 0);
    free(copy);
    ct_context *ctx = NULL;
    ASSERT_EQ_INT(ct_open(bad, 0, &ctx), CT_OK);
    ct_mock_stats s0 = stats();
    ASSERT_EQ_INT(fwd(ctx, &p), CT_OK);
    ASSERT_EQ_INT(stats().launches - s0.launches, 1);
    char msg[512];
    ct_status st = ct_database_status(ctx, msg, sizeof msg);
    printf("  64 bytes flipped at %zu: db %s; %s: %s\n", off,
           ct_status_string(st), ct_path_name(path_of(ctx, &p)),
           reason_of(ctx, &p));
    ct_close(ctx);
  }
  free(bytes);
}

/* ---------------------------------------------------------------------- */
/* The lookup order                                                        */

static void test_tuned_cubin(void) {
  const char *db = tmp_path("tuned.db");
  row r = {.spec = spec_a, .cubin = &win_a};
  ASSERT_EQ_INT(db_write(db, &r, 1), 0);
  ct_context *ctx = NULL;
  ASSERT_EQ_INT(ct_open(db, 0, &ctx), CT_OK);
  char msg[512];
  ASSERT_EQ_INT(ct_database_status(ctx, msg, sizeof msg), CT_OK);
  ct_problem p = parse(spec_a);
  ct_mock_stats s0 = stats();
  ASSERT_EQ_INT(fwd(ctx, &p), CT_OK);
  ct_mock_stats s1 = stats();
  ASSERT_EQ_INT(s1.module_loads - s0.module_loads, 1);
  ASSERT_EQ_INT(path_of(ctx, &p), CT_PATH_TUNED_CUBIN);
  char variant[CT_GEN_NAME_MAX];
  ct_path path;
  ASSERT_EQ_INT(ct_forward_path(ctx, &p, &path, variant, sizeof variant), CT_OK);
  ASSERT_EQ_STR(variant, win_a.v.name);
  ASSERT_TRUE(contains(reason_of(ctx, &p), "matches this build"));
  ct_mock_launch l;
  mock_last_launch(&l);
  ASSERT_EQ_STR(l.name, win_a.v.kernels[0].name);
  ASSERT_EQ_INT(l.grid[0], win_a.v.kernels[0].grid[0]);
  ASSERT_EQ_INT(l.grid[1], win_a.v.kernels[0].grid[1]);
  ASSERT_EQ_INT(l.block[0], win_a.v.kernels[0].block[0]);
  ASSERT_EQ_INT(l.smem, win_a.v.kernels[0].smem);
  ct_close(ctx);
}

/* Stores one tampered winner for spec_a, forwards spec_a, and checks the
** path and that the reason holds `needle`. */
static void expect_tampered(const char *what, row r, ct_path want,
                            const char *needle) {
  const char *db = tmp_path("tampered.db");
  if (db_write(db, &r, 1) != 0) {
    fprintf(stderr, "  %s: cannot write the database\n", what);
    ct_test_failures++;
    return;
  }
  ct_context *ctx = NULL;
  ASSERT_EQ_INT(ct_open(db, 0, &ctx), CT_OK);
  ct_problem p = parse(spec_a);
  ct_mock_stats s0 = stats();
  ct_status rc = fwd(ctx, &p);
  ct_path path = path_of(ctx, &p);
  const char *reason = reason_of(ctx, &p);
  printf("  %-28s %-15s %s\n", what, ct_path_name(path), reason);
  ASSERT_EQ_INT(rc, CT_OK);
  ASSERT_EQ_INT(stats().launches - s0.launches, 1);
  ASSERT_EQ_INT(path, want);
  ASSERT_TRUE(contains(reason, needle));
  ct_close(ctx);
}

static void test_untrusted_entries(void) {
  row base = {.spec = spec_a, .cubin = &win_a};
  row r;
  r = base, r.hash_delta = 1;
  expect_tampered("source hash", r, CT_PATH_TUNED_COMPILED, "source hash");
  r = base, r.arch = "sm_80";
  expect_tampered("architecture", r, CT_PATH_TUNED_COMPILED, "architecture");
  r = base, r.nvrtc = "11.0";
  expect_tampered("NVRTC version", r, CT_PATH_TUNED_COMPILED, "NVRTC version");
  r = base, r.options = "--gpu-architecture=sm_90a -O0";
  expect_tampered("options", r, CT_PATH_TUNED_COMPILED, "options");
  static const char not_elf[] = "definitely not a cubin";
  r = base, r.blob = not_elf, r.blob_size = sizeof not_elf;
  expect_tampered("cubin not an image", r, CT_PATH_TUNED_COMPILED,
                  "did not load");
  /* Another family's cubin under spec_a's entry, with spec_a's source
  ** hash: the image loads but lacks the variant's kernels. */
  r = base, r.blob = win_direct.cubin, r.blob_size = win_direct.size;
  expect_tampered("another family's cubin", r, CT_PATH_TUNED_COMPILED,
                  "did not load");
  /* Variant names that are not valid variants for spec_a here. */
  r = base, r.variant = "nosuch:A=1";
  expect_tampered("unknown family", r, CT_PATH_DEFAULT, "no such family");
  char name[CT_GEN_NAME_MAX];
  const char *eq = strchr(win_a.v.name, '='), *comma = strchr(win_a.v.name, ',');
  ASSERT_TRUE(eq != NULL && comma != NULL);
  snprintf(name, sizeof name, "%.*s999%s", (int)(eq + 1 - win_a.v.name),
           win_a.v.name, comma); /* first parameter 999 */
  r = base, r.variant = name;
  expect_tampered("parameter off the space", r, CT_PATH_DEFAULT,
                  "search space");
  r = base, r.variant = "direct:THREADS=128,TP=4";
  expect_tampered("malformed name", r, CT_PATH_DEFAULT, "does not parse");
  /* Another device's entry is not this device's. */
  r = base, r.device_name = "NVIDIA A100-SXM4-80GB";
  expect_tampered("another device", r, CT_PATH_DEFAULT, "no tuned entry");
}

/* The stored cubin fails its hash: the entry is passed over, the database
** is reported damaged, the default runs. */
static void test_cubin_hash_mismatch(void) {
  const char *db = tmp_path("badhash.db");
  row r = {.spec = spec_a, .cubin = &win_a};
  ASSERT_EQ_INT(db_write(db, &r, 1), 0);
  ASSERT_EQ_INT(raw_exec(db, "UPDATE winners SET cubin = x'7f454c46deadbeef';"),
                SQLITE_OK);
  ct_context *ctx = NULL;
  ASSERT_EQ_INT(ct_open(db, 0, &ctx), CT_OK);
  ASSERT_EQ_INT(ct_database_status(ctx, NULL, 0), CT_OK);
  ct_problem p = parse(spec_a);
  ASSERT_EQ_INT(fwd(ctx, &p), CT_OK);
  ASSERT_EQ_INT(path_of(ctx, &p), CT_PATH_DEFAULT);
  ASSERT_TRUE(contains(reason_of(ctx, &p), "does not match its hash"));
  char msg[512];
  ASSERT_EQ_INT(ct_database_status(ctx, msg, sizeof msg), CT_ERR_DB_CORRUPT);
  ASSERT_TRUE(contains(msg, "hash"));
  ct_close(ctx);
}

static void test_nearest(void) {
  const char *db = tmp_path("nearest.db");
  row rows[] = {
      {.spec = spec_a, .cubin = &win_a},
      {.spec = spec_big, .cubin = &win_big},
  };
  ASSERT_EQ_INT(db_write(db, rows, 2), 0);
  ct_context *ctx = NULL;
  ASSERT_EQ_INT(ct_open(db, 0, &ctx), CT_OK);
  char spec_a_canon[CT_PROBLEM_SPEC_MAX];
  ct_problem a = parse(spec_a);
  ct_problem_format(&a, spec_a_canon, sizeof spec_a_canon);

  /* b is near a (3x3, stride 1, C = 8): a's winner, compiled for b. */
  ct_problem b = parse(spec_b);
  ct_gen_variant v;
  int valid = ct_gen_variant_from_name(&b, &lim, win_a.v.name, &v) == CT_OK;
  ASSERT_TRUE(valid); /* the test's shapes are chosen so */
  ct_mock_stats s0 = stats();
  ASSERT_EQ_INT(fwd(ctx, &b), CT_OK);
  ASSERT_EQ_INT(stats().module_loads - s0.module_loads, 1);
  ASSERT_EQ_INT(path_of(ctx, &b), CT_PATH_NEAREST);
  const char *reason = reason_of(ctx, &b);
  printf("  nearest: %s\n", reason);
  ASSERT_TRUE(contains(reason, spec_a_canon));
  ASSERT_TRUE(contains(reason, "no tuned entry for this problem"));
  ct_mock_launch l;
  mock_last_launch(&l);
  ASSERT_EQ_INT(l.grid[0], v.kernels[0].grid[0]); /* b's plan, not a's */
  ASSERT_EQ_INT(l.grid[1], v.kernels[0].grid[1]);

  /* The same shape at fp32: tf32 winners are not borrowed. */
  ct_problem bf = b;
  bf.precision = CT_PREC_FP32;
  ASSERT_EQ_INT(fwd(ctx, &bf), CT_OK);
  ASSERT_EQ_INT(path_of(ctx, &bf), CT_PATH_DEFAULT);
  ASSERT_TRUE(contains(reason_of(ctx, &bf), "no other problem is tuned at fp32"));

  /* A shape near the big problem borrows its winner, if valid there;
  ** otherwise the next nearest's, or the default. */
  ct_problem c = parse("n=2,c=3,h=59,w=67,k=24,r=11,s=11,stride=4,pad=2,prec=tf32");
  ASSERT_EQ_INT(fwd(ctx, &c), CT_OK);
  reason = reason_of(ctx, &c);
  printf("  near the big one: %s: %s\n", ct_path_name(path_of(ctx, &c)), reason);
  if (ct_gen_variant_from_name(&c, &lim, win_big.v.name, &v) == CT_OK) {
    ASSERT_EQ_INT(path_of(ctx, &c), CT_PATH_NEAREST);
    char canon[CT_PROBLEM_SPEC_MAX];
    ct_problem big = parse(spec_big);
    ct_problem_format(&big, canon, sizeof canon);
    ASSERT_TRUE(contains(reason, canon));
  }

  /* A shape no winner is valid for falls through to the default: find one
  ** by asking the generator. */
  const char *odd[] = {
      "n=1,c=1,h=1,w=1,k=1,r=1,s=1,prec=tf32",
      "n=3,c=5,h=7,w=200,k=1,r=1,s=7,stride=5,pad=4,dil=3,prec=tf32",
  };
  for (size_t i = 0; i < sizeof odd / sizeof odd[0]; i++) {
    ct_problem o = parse(odd[i]);
    int any = ct_gen_variant_from_name(&o, &lim, win_a.v.name, &v) == CT_OK ||
              ct_gen_variant_from_name(&o, &lim, win_big.v.name, &v) == CT_OK;
    ASSERT_EQ_INT(fwd(ctx, &o), CT_OK);
    printf("  %s: %s: %s\n", odd[i], ct_path_name(path_of(ctx, &o)),
           reason_of(ctx, &o));
    ASSERT_EQ_INT(path_of(ctx, &o), any ? CT_PATH_NEAREST : CT_PATH_DEFAULT);
    if (!any) ASSERT_TRUE(contains(reason_of(ctx, &o), "is valid for this problem"));
  }
  ct_close(ctx);
}

static ct_context *open_tuned_family(const char *spec, const char *family, const char *db_name,
                                     ct_gen_variant *v);

/* A problem seen only at run time (another batch, another image size)
** next to a tuned shape-generic winner (family gm): nearest, the winner's
** own stored cubin, no NVRTC; its plan is the new problem's.  And with no
** winner at all, a default variant whose cubin the compile cache holds:
** no NVRTC either. */
static void test_stored_cubin_without_nvrtc(void) {
  ct_gen_variant v;
  ct_context *ctx = open_tuned_family(spec_big, "gm", "generic.db", &v);
  ASSERT_TRUE(ctx != NULL);
  ct_problem seven = parse("n=7,c=3,h=63,w=61,k=20,r=11,s=11,stride=4,pad=2,prec=tf32");
  ct_problem wider = parse("n=2,c=3,h=90,w=131,k=20,r=11,s=11,stride=4,pad=2,prec=tf32");
  ct_problem probs[] = {seven, wider};
  for (int i = 0; i < 2; i++) {
    ct_gen_variant mine;
    ASSERT_EQ_INT(ct_gen_variant_from_name(&probs[i], &lim, v.name, &mine), CT_OK);
    long compiles = ct_rt_compile_count();
    ct_mock_stats s0 = stats();
    ASSERT_EQ_INT(fwd(ctx, &probs[i]), CT_OK);
    ASSERT_EQ_INT(ct_rt_compile_count() - compiles, 0);
    ASSERT_EQ_INT(stats().module_loads - s0.module_loads, 1);
    ASSERT_EQ_INT(path_of(ctx, &probs[i]), CT_PATH_NEAREST);
    const char *reason = reason_of(ctx, &probs[i]);
    printf("  %s\n", reason);
    ASSERT_TRUE(contains(reason, "shape-generic"));
    ASSERT_TRUE(contains(reason, "no NVRTC"));
    ct_mock_launch l;
    mock_last_launch(&l);
    ASSERT_EQ_STR(l.name, "gm_conv");
    ASSERT_EQ_INT(l.grid[0], mine.kernels[2].grid[0]);
  }
  ct_close(ctx);

  /* The compile cache alone: spec_a's default variant compiled and kept
  ** there, no winner anywhere. */
  const char *db = tmp_path("ccache.db");
  unlink(db);
  ct_problem a = parse(spec_a);
  ct_gen_variant dv;
  ASSERT_EQ_INT(ct_gen_default_variant(&a, &lim, &dv), CT_OK);
  compiled c;
  ASSERT_EQ_INT(compile_variant(&a, &dv, &c), 0);
  ct_cache *cache = NULL;
  ASSERT_EQ_INT(ct_cache_open(db, CT_CACHE_CREATE, &cache, NULL, 0), CT_OK);
  ct_cache_cubin cb;
  memset(&cb, 0, sizeof cb);
  cb.source_hash = c.source_hash;
  snprintf(cb.options, sizeof cb.options, "%s", ct_rt_compile_options(lim.arch));
  snprintf(cb.arch, sizeof cb.arch, "%s", lim.arch);
  snprintf(cb.nvrtc_version, sizeof cb.nvrtc_version, "%s", mock_dev.nvrtc_version);
  cb.cubin = c.cubin;
  cb.cubin_size = c.size;
  cb.cubin_hash = ct_gen_hash(c.cubin, c.size, CT_GEN_HASH_SEED);
  cb.regs = cb.spill_bytes = cb.stack_bytes = cb.smem_static = -1;
  ASSERT_EQ_INT(ct_cache_cubin_put(cache, &cb, NULL), CT_OK);
  ct_cache_close(cache);
  free(c.cubin);
  ASSERT_EQ_INT(ct_open(db, 0, &ctx), CT_OK);
  long compiles = ct_rt_compile_count();
  ASSERT_EQ_INT(fwd(ctx, &a), CT_OK);
  ASSERT_EQ_INT(ct_rt_compile_count() - compiles, 0);
  ASSERT_EQ_INT(path_of(ctx, &a), CT_PATH_DEFAULT);
  ASSERT_TRUE(contains(reason_of(ctx, &a), "compile cache, no NVRTC"));
  /* Another problem's default is not there: compiled. */
  ct_problem b = parse(spec_b);
  ASSERT_EQ_INT(fwd(ctx, &b), CT_OK);
  ASSERT_EQ_INT(ct_rt_compile_count() - compiles, 1);
  ASSERT_TRUE(!contains(reason_of(ctx, &b), "no NVRTC"));
  ct_close(ctx);
}

/* ---------------------------------------------------------------------- */
/* Bad input                                                               */

/* Expects `call` to give `want` with nothing launched, y untouched and a
** message holding needle. */
#define EXPECT_REFUSED(ctx, call, want, needle)                               \
  do {                                                                        \
    ct_mock_stats s0_ = stats();                                              \
    ct_status rc_ = (call);                                                   \
    ct_mock_stats s1_ = stats();                                              \
    if (rc_ != (want) || !contains(ct_last_error(ctx), (needle)))             \
      fprintf(stderr, "  %s -> %d: %s\n", #call, rc_, ct_last_error(ctx));    \
    ASSERT_EQ_INT(rc_, (want));                                               \
    ASSERT_EQ_INT(s1_.launches - s0_.launches, 0);                            \
    ASSERT_EQ_INT(s1_.module_loads - s0_.module_loads, 0);                    \
    ASSERT_TRUE(y_untouched());                                               \
    ASSERT_TRUE(contains(ct_last_error(ctx), (needle)));                      \
  } while (0)

static void test_bad_input(void) {
  ct_context *ctx = NULL;
  ASSERT_EQ_INT(ct_open("", 0, &ctx), CT_OK);
  ct_problem p = parse(spec_a);
  ASSERT_EQ_INT(fwd(ctx, &p), CT_OK); /* loaded: refusals are not load errors */

  EXPECT_REFUSED(NULL, ct_forward(NULL, &p, bx, bw, bb, by, NULL),
                 CT_ERR_INVALID_ARG, "no context");
  static char not_a_context[4096];
  EXPECT_REFUSED((ct_context *)not_a_context,
                 ct_forward((ct_context *)not_a_context, &p, bx, bw, bb, by, NULL),
                 CT_ERR_INVALID_ARG, "not an open convtune context");
  EXPECT_REFUSED(ctx, ct_forward(ctx, NULL, bx, bw, bb, by, NULL),
                 CT_ERR_INVALID_ARG, "must not be NULL");
  EXPECT_REFUSED(ctx, ct_forward(ctx, &p, NULL, bw, bb, by, NULL),
                 CT_ERR_INVALID_ARG, "must not be NULL");
  EXPECT_REFUSED(ctx, ct_forward(ctx, &p, bx, NULL, bb, by, NULL),
                 CT_ERR_INVALID_ARG, "must not be NULL");
  EXPECT_REFUSED(ctx, ct_forward(ctx, &p, bx, bw, bb, NULL, NULL),
                 CT_ERR_INVALID_ARG, "must not be NULL");
  EXPECT_REFUSED(ctx, ct_forward(ctx, &p, bx, bw, NULL, by, NULL),
                 CT_ERR_INVALID_ARG, "b is NULL");
  EXPECT_REFUSED(ctx, ct_forward(ctx, &p, (const float *)((char *)bx + 2), bw,
                                 bb, by, NULL),
                 CT_ERR_INVALID_ARG, "aligned");
  EXPECT_REFUSED(ctx, ct_forward(ctx, &p, bx, bw, bb, (float *)((char *)by + 1),
                                 NULL),
                 CT_ERR_INVALID_ARG, "aligned");
  EXPECT_REFUSED(ctx, ct_forward(ctx, &p, by, bw, bb, by, NULL),
                 CT_ERR_INVALID_ARG, "overlaps");
  EXPECT_REFUSED(ctx, ct_forward(ctx, &p, bx, by + 100, bb, by, NULL),
                 CT_ERR_INVALID_ARG, "overlaps");

  /* Invalid problems: every field out of range, overflows, precision. */
  ct_problem q;
#define BAD_FIELD(assign, needle)                                             \
  q = p;                                                                      \
  assign;                                                                     \
  EXPECT_REFUSED(ctx, fwd(ctx, &q), CT_ERR_INVALID_PROBLEM, needle);          \
  ASSERT_EQ_INT(path_of(ctx, &q), CT_PATH_NONE)
  BAD_FIELD(q.n = -1, "n = -1");
  BAD_FIELD(q.c = 0, "c = 0");
  BAD_FIELD(q.h = INT64_MAX, "h = ");
  BAD_FIELD(q.k = INT64_MIN, "k = ");
  BAD_FIELD(q.stride_w = 0, "stride_w");
  BAD_FIELD(q.pad_h = -3, "pad_h");
  BAD_FIELD(q.dil_h = 0, "dil_h");
  BAD_FIELD((q.k = 1 << 24, q.c = 1 << 25, q.r = 1, q.s = 1, q.pad_h = q.pad_w = 0),
            "weights w");
  BAD_FIELD((q.n = 1 << 24, q.c = 1 << 24), "input x");
  BAD_FIELD((q.h = 2, q.pad_h = 0), "output height");
  BAD_FIELD(q.precision = (ct_precision)7, "precision");
  BAD_FIELD(q.bias = 2, "bias");
#undef BAD_FIELD

  /* Reports and preparation with bad arguments. */
  ct_path path;
  char buf[64];
  ASSERT_EQ_INT(ct_forward_path(NULL, &p, &path, NULL, 0), CT_ERR_INVALID_ARG);
  ASSERT_EQ_INT(ct_forward_path(ctx, NULL, &path, NULL, 0), CT_ERR_INVALID_ARG);
  ASSERT_EQ_INT(ct_forward_path(ctx, &p, NULL, NULL, 0), CT_ERR_INVALID_ARG);
  ASSERT_EQ_INT(ct_forward_reason(NULL, &p, buf, sizeof buf), CT_ERR_INVALID_ARG);
  ASSERT_EQ_INT(ct_forward_reason(ctx, &p, NULL, 9), CT_ERR_INVALID_ARG);
  ASSERT_EQ_INT(ct_forward_reason(ctx, &p, buf, 0), CT_ERR_INVALID_ARG);
  ASSERT_EQ_INT(ct_forward_reason(ctx, &p, buf, 8), CT_OK); /* truncated */
  ASSERT_EQ_INT(strlen(buf), 7);
  ASSERT_EQ_INT(ct_database_status(NULL, buf, sizeof buf), CT_ERR_INVALID_ARG);
  ASSERT_EQ_INT(ct_database_status((ct_context *)not_a_context, NULL, 0),
                CT_ERR_INVALID_ARG);
  EXPECT_REFUSED(ctx, ct_prepare(ctx, NULL), CT_ERR_INVALID_ARG, "NULL");
  ASSERT_EQ_INT(ct_prepare(NULL, &p), CT_ERR_INVALID_ARG);
  q = p;
  q.w = -5;
  EXPECT_REFUSED(ctx, ct_prepare(ctx, &q), CT_ERR_INVALID_PROBLEM, "w = -5");
  ASSERT_EQ_STR(ct_last_error(NULL), "no context");
  ASSERT_EQ_INT(ct_last_cuda_result(NULL), 0);
  ASSERT_EQ_STR(ct_last_nvrtc_log(NULL), "");

  /* Errors are per thread: this thread's last failure is not another's. */
  ASSERT_TRUE(contains(ct_last_error(ctx), "w = -5"));
  ct_close(ctx);
}

static void *other_thread_error(void *arg) {
  return (void *)ct_last_error((ct_context *)arg);
}

static void test_errors_per_thread(void) {
  ct_context *ctx = NULL;
  ASSERT_EQ_INT(ct_open("", 0, &ctx), CT_OK);
  ASSERT_EQ_STR(ct_last_error(ctx), "no error");
  ct_problem p = parse(spec_a);
  p.n = 0;
  ASSERT_EQ_INT(fwd(ctx, &p), CT_ERR_INVALID_PROBLEM);
  pthread_t t;
  void *seen = NULL;
  ASSERT_EQ_INT(pthread_create(&t, NULL, other_thread_error, ctx), 0);
  pthread_join(t, &seen);
  ASSERT_EQ_STR((const char *)seen, "no error");
  ASSERT_TRUE(contains(ct_last_error(ctx), "n = 0"));
  /* And per context: a failure on another context leaves ctx's message
  ** (and the string it gave) alone, until 8 other contexts have failed. */
  ct_context *other = NULL;
  ASSERT_EQ_INT(ct_open("", 0, &other), CT_OK);
  ASSERT_EQ_STR(ct_last_error(other), "no error");
  const char *mine = ct_last_error(ctx);
  ct_problem q = parse(spec_a);
  q.c = -9;
  ASSERT_EQ_INT(fwd(other, &q), CT_ERR_INVALID_PROBLEM);
  ASSERT_TRUE(contains(ct_last_error(other), "c = -9"));
  ASSERT_TRUE(contains(ct_last_error(ctx), "n = 0"));
  ASSERT_TRUE(contains(mine, "n = 0"));
  ct_context *more[8];
  for (int i = 0; i < 8; i++) {
    ASSERT_EQ_INT(ct_open("", 0, &more[i]), CT_OK);
    ASSERT_EQ_INT(fwd(more[i], &q), CT_ERR_INVALID_PROBLEM);
  }
  ASSERT_EQ_STR(ct_last_error(ctx), "no error"); /* the least recent, dropped */
  ASSERT_TRUE(contains(ct_last_error(more[0]), "c = -9"));
  for (int i = 0; i < 8; i++) ct_close(more[i]);
  ct_close(other);
  ct_close(ctx);
}

/* ---------------------------------------------------------------------- */
/* Threads, fork, the hot path                                             */

#define N_THREADS 8
#define N_CALLS 400

static const char *thread_specs[] = {
    "n=1,c=2,h=9,w=9,k=3,r=3,s=3,pad=1,prec=fp32",
    "n=2,c=2,h=9,w=9,k=3,r=3,s=3,pad=1,prec=fp32",
    "n=1,c=2,h=9,w=11,k=3,r=3,s=3,pad=1,bias=0,prec=fp32",
    "n=1,c=2,h=9,w=9,k=5,r=1,s=1,prec=fp32",
};

typedef struct thread_arg {
  ct_context *ctx;
  pthread_barrier_t *start;
  int index;
  int failures;
} thread_arg;

static void *thread_main(void *argp) {
  thread_arg *a = argp;
  ct_problem ps[4];
  for (int i = 0; i < 4; i++) ps[i] = parse(thread_specs[i]);
  pthread_barrier_wait(a->start);
  for (int i = 0; i < N_CALLS; i++) {
    const ct_problem *p = &ps[(i + a->index) % 4];
    if (fwd(a->ctx, p) != CT_OK) {
      a->failures++;
      fprintf(stderr, "  thread %d: %s\n", a->index, ct_last_error(a->ctx));
    }
  }
  ct_mock_stats s;
  mock_counters(&s);
  if (s.thread_depth != 0) a->failures++; /* pushes and pops balance */
  return NULL;
}

static void test_threads(void) {
  ct_context *ctx = NULL;
  ASSERT_EQ_INT(ct_open("", 0, &ctx), CT_OK);
  pthread_barrier_t start;
  pthread_barrier_init(&start, NULL, N_THREADS);
  pthread_t t[N_THREADS];
  thread_arg args[N_THREADS];
  ct_mock_stats s0 = stats();
  for (int i = 0; i < N_THREADS; i++) {
    args[i] = (thread_arg){ctx, &start, i, 0};
    ASSERT_EQ_INT(pthread_create(&t[i], NULL, thread_main, &args[i]), 0);
  }
  int failures = 0;
  for (int i = 0; i < N_THREADS; i++) {
    pthread_join(t[i], NULL);
    failures += args[i].failures;
  }
  pthread_barrier_destroy(&start);
  ct_mock_stats s1 = stats();
  ASSERT_EQ_INT(failures, 0);
  ASSERT_EQ_INT(s1.launches - s0.launches, N_THREADS * N_CALLS);
  ASSERT_EQ_INT(s1.module_loads - s0.module_loads, 4); /* each problem once */
  ASSERT_EQ_INT(s1.bad_pops, 0);
  ASSERT_EQ_INT(s1.launches_without_context, 0);
  for (int i = 0; i < 4; i++) {
    ct_problem p = parse(thread_specs[i]);
    ASSERT_EQ_INT(path_of(ctx, &p), CT_PATH_DEFAULT);
  }
  ct_close(ctx);
}

static void test_fork(void) {
  ct_context *ctx = NULL;
  ASSERT_EQ_INT(ct_open("", 0, &ctx), CT_OK);
  ct_problem p = parse(spec_a);
  ASSERT_EQ_INT(fwd(ctx, &p), CT_OK);
  fflush(NULL);
  pid_t pid = fork();
  ASSERT_TRUE(pid >= 0);
  if (pid == 0) {
    ct_mock_stats s0 = stats();
    ct_status rc = fwd(ctx, &p);
    int ok = rc == CT_ERR_UNSUPPORTED && stats().launches == s0.launches &&
             contains(ct_last_error(ctx), "fork") && y_untouched();
    _exit(ok ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ_INT(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  ASSERT_EQ_INT(fwd(ctx, &p), CT_OK); /* the parent's context still works */
  ct_close(ctx);
}

static void test_prepare(void) {
  ct_context *ctx = NULL;
  ASSERT_EQ_INT(ct_open("", 0, &ctx), CT_OK);
  ct_problem p = parse(thread_specs[0]);
  ct_mock_stats s0 = stats();
  ASSERT_EQ_INT(ct_prepare(ctx, &p), CT_OK);
  ct_mock_stats s1 = stats();
  ASSERT_EQ_INT(s1.module_loads - s0.module_loads, 1);
  ASSERT_EQ_INT(s1.launches - s0.launches, 0);
  ASSERT_EQ_INT(path_of(ctx, &p), CT_PATH_DEFAULT);
  ASSERT_EQ_INT(ct_prepare(ctx, &p), CT_OK); /* already loaded */
  ASSERT_EQ_INT(stats().module_loads - s1.module_loads, 0);
  ct_close(ctx);
}

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* A context on a database whose one entry is spec's first variant of
** family, compiled (*v gets the variant); NULL when a step fails. */
static ct_context *open_tuned_family(const char *spec, const char *family, const char *db_name,
                                     ct_gen_variant *v) {
  ct_problem p = parse(spec);
  compiled win;
  memset(&win, 0, sizeof win);
  if (variant_of(&p, family, v) != 0 || compile_variant(&p, v, &win) != 0) return NULL;
  const char *db = tmp_path(db_name);
  row r = {.spec = spec, .cubin = &win};
  int written = db_write(db, &r, 1);
  free(win.cubin);
  ct_context *ctx = NULL;
  if (written != 0 || ct_open(db, 0, &ctx) != CT_OK) return NULL;
  return ctx;
}

/* Three warm calls of p on ctx: each makes `launches` launches, takes one
** workspace and gives it back, encodes no tensor map, synchronises
** nothing. */
static void warm_calls(ct_context *ctx, const ct_problem *p, long launches) {
  for (int call = 0; call < 3; call++) {
    ct_mock_stats s0 = stats();
    ASSERT_EQ_INT(fwd(ctx, p), CT_OK);
    ct_mock_stats s1 = stats();
    ASSERT_EQ_INT(s1.launches - s0.launches, launches);
    ASSERT_EQ_INT(s1.mem_allocs - s0.mem_allocs, 1);
    ASSERT_EQ_INT(s1.mem_frees - s0.mem_frees, 1);
    ASSERT_EQ_INT(s1.map_encodes - s0.map_encodes, 0);
    ASSERT_EQ_INT(s1.syncs - s0.syncs, 0);
  }
}

/* A tuned winner with a workspace (space-to-depth, three launches): every
** call takes its own workspace from the kernel's pool before its launches
** and gives it back after them, on the caller's stream. */
static void test_workspace(void) {
  ct_problem p = parse(spec_big);
  ct_gen_variant v;
  ct_context *ctx = open_tuned_family(spec_big, "s2d_wg", "workspace.db", &v);
  ASSERT_TRUE(ctx != NULL);
  ASSERT_EQ_INT(v.n_kernels, 3);
  ASSERT_TRUE(v.workspace_bytes > 0);
  ASSERT_EQ_INT(fwd(ctx, &p), CT_OK);
  ASSERT_EQ_INT(path_of(ctx, &p), CT_PATH_TUNED_CUBIN);
  ct_mock_stats s0 = stats();
  warm_calls(ctx, &p, 3);
  ASSERT_EQ_INT(stats().early_launches - s0.early_launches, 0); /* cuLaunchKernel */
  ct_mock_launch l;
  mock_last_launch(&l);
  ASSERT_EQ_STR(l.name, "conv_wg");
  ASSERT_EQ_INT(l.early, 0);
  ASSERT_EQ_INT(l.grid[0], v.kernels[2].grid[0]);
  ASSERT_EQ_INT(l.smem, v.kernels[2].smem);
  ct_close(ctx);
}

/* A tuned winner taking tensor maps (family gm: layout passes, then the
** TMA kernel): the first call encodes its two maps for the workspace the
** pool hands out; warm calls get the same workspace and encode nothing. */
static void test_tensor_maps(void) {
  ct_problem p = parse(spec_big);
  ct_gen_variant v;
  ct_context *ctx = open_tuned_family(spec_big, "gm", "tmaps.db", &v);
  ASSERT_TRUE(ctx != NULL);
  ASSERT_EQ_INT(v.n_kernels, 3);
  ASSERT_EQ_INT(v.n_maps, 2);
  ASSERT_TRUE(v.workspace_bytes > 0);
  ct_mock_stats s0 = stats();
  ASSERT_EQ_INT(fwd(ctx, &p), CT_OK);
  ct_mock_stats s1 = stats();
  ASSERT_EQ_INT(path_of(ctx, &p), CT_PATH_TUNED_CUBIN);
  ASSERT_EQ_INT(s1.map_encodes - s0.map_encodes, 2);
  ASSERT_EQ_INT(s1.map_refusals - s0.map_refusals, 0);
  /* Every launch of gm's (v.kernels[i].early) with programmatic stream
  ** serialization. */
  for (int i = 0; i < v.n_kernels; i++) ASSERT_EQ_INT(v.kernels[i].early, 1);
  ASSERT_EQ_INT(s1.early_launches - s0.early_launches, 3);
  warm_calls(ctx, &p, 3);
  ct_mock_launch l;
  mock_last_launch(&l);
  ASSERT_EQ_STR(l.name, "gm_conv");
  ASSERT_EQ_INT(l.early, 1);
  ASSERT_EQ_INT(l.grid[0], v.kernels[2].grid[0]);
  ASSERT_EQ_INT(l.block[0], v.kernels[2].block[0]);
  ASSERT_EQ_INT(l.smem, v.kernels[2].smem);
  ct_close(ctx);
}

/* Weights packed once (a tuned gm winner): ct_weights_pack loads the
** problem, encodes the weight map over memory of its own and queues the
** weight pass alone (gm_pack) into it; ct_forward_packed runs the layout
** pass and the GEMM, x's map encoded at the first call, warm calls
** encoding nothing, taking only the workspace; plain ct_forward still
** runs all three.  Twelve packings of the one problem (a network's
** repeated layers, past the map cache's 8 slots) all run warm.
** Misuse is refused: NULL weights or w, another problem, another
** context, an overlapping y.  ct_weights_free synchronises and frees. */
static void test_packed_weights(void) {
  ct_problem p = parse(spec_big);
  ct_gen_variant v;
  ct_context *ctx = open_tuned_family(spec_big, "gm", "packed.db", &v);
  ASSERT_TRUE(ctx != NULL);
  ASSERT_EQ_INT(v.n_kernels, 3);
  ASSERT_TRUE(v.wpack_bytes > 0 && v.kernels[1].weights && !v.kernels[0].weights &&
              !v.kernels[2].weights);
  ct_weights *wp = NULL;
  ct_mock_stats s0 = stats();
  ASSERT_EQ_INT(ct_weights_pack(ctx, &p, bw, NULL, &wp), CT_OK);
  ct_mock_stats s1 = stats();
  ASSERT_TRUE(wp != NULL);
  ASSERT_EQ_INT(s1.module_loads - s0.module_loads, 1);
  ASSERT_EQ_INT(s1.launches - s0.launches, 1);
  ASSERT_EQ_INT(s1.mem_allocs - s0.mem_allocs, 1);
  ASSERT_EQ_INT(s1.map_encodes - s0.map_encodes, 1); /* the weight map, over the packed memory */
  ASSERT_EQ_INT(s1.copies - s0.copies, 0);
  ASSERT_EQ_INT(ct_weights_bytes(wp), v.wpack_bytes);
  ct_mock_launch l;
  mock_last_launch(&l);
  ASSERT_EQ_STR(l.name, "gm_pack");
  ASSERT_EQ_INT(l.args[1], (uint64_t)(uintptr_t)bw);
  for (int call = 0; call < 4; call++) {
    s0 = stats();
    ASSERT_EQ_INT(ct_forward_packed(ctx, &p, bx, wp, bb, by, NULL), CT_OK);
    s1 = stats();
    ASSERT_EQ_INT(s1.launches - s0.launches, 2);
    ASSERT_EQ_INT(s1.map_encodes - s0.map_encodes, call == 0 ? 1 : 0); /* x's */
    ASSERT_EQ_INT(s1.mem_allocs - s0.mem_allocs, 1);
    ASSERT_EQ_INT(s1.mem_frees - s0.mem_frees, 1);
    ASSERT_EQ_INT(s1.syncs - s0.syncs, 0);
    mock_last_launch(&l);
    ASSERT_EQ_STR(l.name, "gm_conv");
    ASSERT_TRUE(l.args[1] != (uint64_t)(uintptr_t)bw);
  }
  s0 = stats();
  ASSERT_EQ_INT(fwd(ctx, &p), CT_OK);
  ASSERT_EQ_INT(stats().launches - s0.launches, 3);
  ct_weights *many[12];
  for (int i = 0; i < 12; i++) ASSERT_EQ_INT(ct_weights_pack(ctx, &p, bw, NULL, &many[i]), CT_OK);
  for (int round = 0; round < 2; round++)
    for (int i = 0; i < 12; i++) {
      s0 = stats();
      ASSERT_EQ_INT(ct_forward_packed(ctx, &p, bx, many[i], bb, by, NULL), CT_OK);
      ASSERT_EQ_INT(stats().map_encodes - s0.map_encodes, 0);
    }
  for (int i = 0; i < 12; i++) ct_weights_free(many[i]);

  ct_problem other = parse(thread_specs[0]);
  EXPECT_REFUSED(ctx, ct_forward_packed(ctx, &other, bx, wp, bb, by, NULL), CT_ERR_INVALID_ARG,
                 "another problem");
  EXPECT_REFUSED(ctx, ct_forward_packed(ctx, &p, bx, NULL, bb, by, NULL), CT_ERR_INVALID_ARG,
                 "not packed weights");
  EXPECT_REFUSED(ctx, ct_forward_packed(ctx, &p, bx, wp, bb, (float *)bx, NULL),
                 CT_ERR_INVALID_ARG, "overlaps");
  ct_weights *bad = wp;
  EXPECT_REFUSED(ctx, ct_weights_pack(ctx, &p, NULL, NULL, &bad), CT_ERR_INVALID_ARG, "NULL");
  ASSERT_TRUE(bad == NULL); /* a failed pack clears *out */
  ct_weights_free(wp);
  ASSERT_EQ_INT(ct_weights_pack(ctx, &p, bw, NULL, &wp), CT_OK);
  ct_context *ctx2 = NULL;
  ASSERT_EQ_INT(ct_open("", 0, &ctx2), CT_OK);
  EXPECT_REFUSED(ctx2, ct_forward_packed(ctx2, &p, bx, wp, bb, by, NULL), CT_ERR_INVALID_ARG,
                 "another context");
  ct_close(ctx2);
  s0 = stats();
  ct_weights_free(wp);
  s1 = stats();
  ASSERT_EQ_INT(s1.mem_frees - s0.mem_frees, 1);
  ASSERT_EQ_INT(s1.syncs - s0.syncs, 1);
  ct_weights_free(NULL);
  ct_close(ctx);
}

/* Packed weights for a gm winner whose weight map reads w in place (an
** NCHW 1x1 problem, C % 4 = 0: no gm_pack, wpack_bytes 0): packing is a
** copy of w with the weight map encoded over it, no launch;
** ct_forward_packed runs the layout pass and the GEMM with the copy as w;
** plain ct_forward the same two launches with the caller's w. */
static void test_packed_gm_in_place(void) {
  static const char *spec = "n=4,c=512,h=7,w=7,k=64,r=1,s=1,prec=tf32";
  ct_problem p = parse(spec);
  ct_gen_variant v;
  ct_context *ctx = open_tuned_family(spec, "gm", "packed_in_place.db", &v);
  ASSERT_TRUE(ctx != NULL);
  ASSERT_EQ_INT(v.n_kernels, 2);
  ASSERT_TRUE(v.wpack_bytes == 0 && !v.kernels[0].weights && !v.kernels[1].weights);
  ct_weights *wp = NULL;
  ct_mock_stats s0 = stats();
  ASSERT_EQ_INT(ct_weights_pack(ctx, &p, bw, NULL, &wp), CT_OK);
  ct_mock_stats s1 = stats();
  ASSERT_EQ_INT(s1.launches - s0.launches, 0);
  ASSERT_EQ_INT(s1.copies - s0.copies, 1);
  ASSERT_EQ_INT(s1.map_encodes - s0.map_encodes, 1); /* the weight map, over the copy */
  ASSERT_EQ_INT(ct_weights_bytes(wp), (size_t)(p.k * p.c) * sizeof(float));
  ct_mock_launch l;
  s0 = stats();
  ASSERT_EQ_INT(ct_forward_packed(ctx, &p, bx, wp, bb, by, NULL), CT_OK);
  ASSERT_EQ_INT(stats().launches - s0.launches, 2);
  mock_last_launch(&l);
  ASSERT_EQ_STR(l.name, "gm_conv");
  ASSERT_TRUE(l.args[1] != (uint64_t)(uintptr_t)bw && l.args[1] != 0);
  s0 = stats();
  ASSERT_EQ_INT(fwd(ctx, &p), CT_OK);
  ASSERT_EQ_INT(stats().launches - s0.launches, 2);
  mock_last_launch(&l);
  ASSERT_EQ_STR(l.name, "gm_conv");
  ASSERT_EQ_INT(l.args[1], (uint64_t)(uintptr_t)bw);
  ct_weights_free(wp);
  ct_close(ctx);
}

/* Packed weights for a kernel that reads w as it is (the default direct
** variant): a copy of w, which ct_forward_packed passes as w; a context
** closed with weights still packed releases their memory, and a later
** ct_weights_free frees only the handle. */
static void test_packed_copy(void) {
  ct_context *ctx = NULL;
  ASSERT_EQ_INT(ct_open("", 0, &ctx), CT_OK);
  ct_problem p = parse(thread_specs[0]);
  ct_weights *wp = NULL;
  ct_mock_stats s0 = stats();
  ASSERT_EQ_INT(ct_weights_pack(ctx, &p, bw, NULL, &wp), CT_OK);
  ct_mock_stats s1 = stats();
  ASSERT_EQ_INT(path_of(ctx, &p), CT_PATH_DEFAULT);
  ASSERT_EQ_INT(s1.copies - s0.copies, 1);
  ASSERT_EQ_INT(s1.launches - s0.launches, 0);
  ASSERT_EQ_INT(ct_weights_bytes(wp), (size_t)(p.k * p.c * p.r * p.s) * sizeof(float));
  s0 = stats();
  ASSERT_EQ_INT(ct_forward_packed(ctx, &p, bx, wp, bb, by, NULL), CT_OK);
  ASSERT_EQ_INT(stats().launches - s0.launches, 1);
  ct_mock_launch l;
  mock_last_launch(&l);
  ASSERT_TRUE(l.args[1] != (uint64_t)(uintptr_t)bw && l.args[1] != 0);
  ASSERT_EQ_INT(l.args[0], (uint64_t)(uintptr_t)bx);
  s0 = stats();
  ct_close(ctx);
  ASSERT_EQ_INT(stats().mem_frees - s0.mem_frees, 1);
  s0 = stats();
  ct_weights_free(wp);
  ASSERT_EQ_INT(stats().mem_frees - s0.mem_frees, 0);
}

static void test_hot_path(void) {
  ct_context *ctx = NULL;
  ASSERT_EQ_INT(ct_open("", 0, &ctx), CT_OK);
  ct_problem ps[4];
  for (int i = 0; i < 4; i++) {
    ps[i] = parse(thread_specs[i]);
    ASSERT_EQ_INT(fwd(ctx, &ps[i]), CT_OK);
  }
  enum { CALLS = 200000 };
  ct_mock_stats s0 = stats();
#if CT_COUNT_MALLOC
  n_allocs = 0;
  counting = 1;
#endif
  double t0 = now_ns();
  int failures = 0;
  for (int i = 0; i < CALLS; i++) failures += fwd(ctx, &ps[i & 3]) != CT_OK;
  double ns = (now_ns() - t0) / CALLS;
#if CT_COUNT_MALLOC
  counting = 0;
  printf("  host allocations in %d warm calls: %ld\n", CALLS, n_allocs);
  ASSERT_EQ_INT(n_allocs, 0);
#else
  printf("  host allocations: not counted under AddressSanitizer\n");
#endif
  ct_mock_stats s1 = stats();
  printf("  %.0f ns of host time per warm ct_forward (mock driver: the "
         "runtime's own cost)\n", ns);
  ASSERT_EQ_INT(failures, 0);
  ASSERT_EQ_INT(s1.launches - s0.launches, CALLS);
  ASSERT_EQ_INT(s1.mem_allocs - s0.mem_allocs, 0);
  ASSERT_EQ_INT(s1.syncs - s0.syncs, 0);
  ASSERT_EQ_INT(s1.module_loads - s0.module_loads, 0);
  ASSERT_EQ_INT(s1.pushes - s0.pushes, s1.pops - s0.pops);
  ASSERT_TRUE(ns < 5000.0);
  ct_close(ctx);
}

/* ---------------------------------------------------------------------- */

static int remove_dir(const char *dir) {
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  return system(cmd);
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IONBF, 0);
  if (argc == 2 && (!strcmp(argv[1], "--no-driver") || !strcmp(argv[1], "--no-device"))) {
    int no_dev = !strcmp(argv[1], "--no-device");
    ct_context *ctx = (ct_context *)argv; /* must come back NULL */
    ct_status rc = ct_open("", 0, &ctx);
    printf("ct_open: %s: %s\n", ct_status_string(rc), ct_open_error());
    int ok = rc == (no_dev ? CT_ERR_NO_DEVICE : CT_ERR_NO_DRIVER) && ctx == NULL &&
             contains(ct_open_error(), no_dev ? "no CUDA device" : "no CUDA driver");
    /* The same answer again (the driver is loaded once per process). */
    ok = ok && ct_open(NULL, 0, &ctx) == rc;
    return ok ? 0 : 1;
  }
  const char *mock = getenv("CONVTUNE_LIBCUDA");
  void *lib = mock ? dlopen(mock, RTLD_NOW) : NULL;
  if (lib) {
    mock_counters = (ct_mock_counters_fn)dlsym(lib, "ct_mock_counters");
    mock_last_launch = (ct_mock_last_launch_fn)dlsym(lib, "ct_mock_last_launch");
  }
  if (!mock_counters || !mock_last_launch) {
    printf("SKIP: CONVTUNE_LIBCUDA must name the mock driver (tests/mock_cuda.c)\n");
    return CT_TEST_SKIP;
  }
  snprintf(tmp_dir, sizeof tmp_dir, "/tmp/convtune-rt-XXXXXX");
  if (!mkdtemp(tmp_dir)) return 1;
  if (ct_gen_limits_for_arch("sm_90a", &lim) != CT_OK) return 1;
  memset(&mock_dev, 0, sizeof mock_dev);
  snprintf(mock_dev.name, sizeof mock_dev.name, "%s", CT_MOCK_DEVICE_NAME);
  mock_dev.cc_major = 9;
  mock_dev.cc_minor = 0;
  mock_dev.sm_count = 132;
  mock_dev.driver_version = CT_MOCK_DRIVER_VERSION;
  snprintf(mock_dev.arch, sizeof mock_dev.arch, "sm_90a");
  if (ct_rt_nvrtc_version(mock_dev.nvrtc_version, sizeof mock_dev.nvrtc_version) != CT_OK)
    return 1;

  bx = malloc(BUF_FLOATS * sizeof(float));
  bw = malloc(BUF_FLOATS * sizeof(float));
  bb = malloc(BUF_FLOATS * sizeof(float));
  by = malloc(BUF_FLOATS * sizeof(float));
  for (size_t i = 0; i < BUF_FLOATS; i++) by[i] = SENTINEL;

  /* The tuned winners, compiled once. */
  ct_problem a = parse(spec_a), big = parse(spec_big);
  ct_gen_variant va, vbig, vdirect;
  if (tuned_variant(&a, &va) || tuned_variant(&big, &vbig) ||
      ct_gen_default_variant(&a, &lim, &vdirect) != CT_OK ||
      compile_variant(&a, &va, &win_a) || compile_variant(&big, &vbig, &win_big) ||
      compile_variant(&a, &vdirect, &win_direct)) {
    fprintf(stderr, "cannot prepare the tuned winners\n");
    return 1;
  }
  printf("winners: %s, %s\n", win_a.v.name, win_big.v.name);

  RUN_TEST(test_distance);
  RUN_TEST(test_open_args);
  RUN_TEST(test_no_database);
  RUN_TEST(test_default_database);
  RUN_TEST(test_missing_file);
  RUN_TEST(test_bad_files);
  RUN_TEST(test_damaged_files);
  RUN_TEST(test_tuned_cubin);
  RUN_TEST(test_untrusted_entries);
  RUN_TEST(test_cubin_hash_mismatch);
  RUN_TEST(test_nearest);
  RUN_TEST(test_stored_cubin_without_nvrtc);
  RUN_TEST(test_bad_input);
  RUN_TEST(test_errors_per_thread);
  RUN_TEST(test_threads);
  RUN_TEST(test_fork);
  RUN_TEST(test_prepare);
  RUN_TEST(test_hot_path);
  RUN_TEST(test_workspace);
  RUN_TEST(test_tensor_maps);
  RUN_TEST(test_packed_weights);
  RUN_TEST(test_packed_copy);
  RUN_TEST(test_packed_gm_in_place);

  free(win_a.cubin);
  free(win_big.cubin);
  free(win_direct.cubin);
  free(bx), free(bw), free(bb), free(by);
  if (remove_dir(tmp_dir) != 0) fprintf(stderr, "could not remove %s\n", tmp_dir);
  TEST_EXIT();
}
