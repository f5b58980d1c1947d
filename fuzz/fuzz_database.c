/*
** fuzz_database.c — libFuzzer target for the tuning database as the
** runtime reads it: the input bytes are written to a file, which is opened
** read-only and hardened (ct_cache_untrusted) as ct_open does, then read
** every way the runtime reads it: the list of tuned problems, the winner
** of each looked-up problem, the runtime's whole lookup (ct_rt_choose:
** exact entry, nearest, default) and the integrity check.
**
** Invariants on every input, however damaged:
**   - nothing crashes, hangs (the statement budget), leaks, or reads out
**     of bounds; every status is a documented one;
**   - whatever ct_rt_choose picks is a valid variant of the problem it was
**     asked about (rebuilding it by name succeeds): a damaged file can
**     never get a kernel launched on a shape its family did not accept;
**   - a stored cubin is only handed out together with a name that
**     rebuilds, never empty, and only for the exact winner or a nearest
**     winner of the same source.
**
**   fuzz_database --make-seeds DIR   writes seed databases into DIR and
**                                    exits (fuzz/run.sh does this)
*/
#include <fcntl.h>
#include <stdint.h>
#include <unistd.h>

#include <sqlite3.h>

#include "ct_lookup.h"
#include "ct_nvrtc.h"
#include "fuzz_common.h"

static char path[256];
static char wal[270], shm[270];
static ct_gen_limits lim;

/* ---------------------------------------------------------------------- */
/* Seeds: small but complete databases                                     */

/* Stores spec's first non-default variant (or the default) as its winner,
** with a fake cubin whose hash is right and the real source hash when
** `honest`. */
static void seed_winner(ct_cache *c, const char *spec, int honest) {
  ct_problem p;
  FUZZ_CHECK(ct_problem_parse(spec, &p, NULL, 0) == CT_OK);
  ct_gen_variant *vs = NULL;
  size_t n = 0;
  FUZZ_CHECK(ct_gen_enumerate(&p, &lim, &vs, &n) == CT_OK && n > 0);
  size_t pick = 0;
  for (size_t i = 0; i < n; i++)
    if (strcmp(vs[i].family->name, "direct") != 0) {
      pick = i;
      break;
    }
  char *src = NULL;
  FUZZ_CHECK(ct_gen_source(&p, &vs[pick], &src) == CT_OK);
  int64_t did, pid;
  FUZZ_CHECK(ct_cache_device_id(c, &fuzz_device, &did) == CT_OK);
  FUZZ_CHECK(ct_cache_problem_id(c, spec, ct_precision_name(p.precision), &pid) == CT_OK);
  static const char cubin[] = "\177ELF fake cubin for the fuzzer";
  ct_cache_winner w;
  memset(&w, 0, sizeof w);
  w.problem_id = pid;
  w.device_id = did;
  snprintf(w.variant, sizeof w.variant, "%s", vs[pick].name);
  w.source_hash = ct_gen_hash(src, strlen(src), CT_GEN_HASH_SEED) + (honest ? 0 : 1);
  w.cubin = (void *)cubin;
  w.cubin_size = sizeof cubin;
  w.cubin_hash = ct_gen_hash(cubin, sizeof cubin, CT_GEN_HASH_SEED);
  snprintf(w.arch, sizeof w.arch, "%s", fuzz_device.arch);
  snprintf(w.nvrtc_version, sizeof w.nvrtc_version, "%s", fuzz_device.nvrtc_version);
  snprintf(w.options, sizeof w.options, "%s", ct_rt_compile_options(fuzz_device.arch));
  w.mean_ms = 0.5;
  FUZZ_CHECK(ct_cache_winner_set(c, &w) == CT_OK);
  free(src);
  free(vs);
}

static void make_seed(const char *dir, const char *name, int n_winners) {
  char file[512];
  snprintf(file, sizeof file, "%s/%s", dir, name);
  unlink(file);
  ct_cache *c = NULL;
  char err[256];
  FUZZ_CHECK(ct_cache_open(file, CT_CACHE_CREATE, &c, err, sizeof err) == CT_OK);
  for (int i = 0; i < n_winners; i++) seed_winner(c, fuzz_specs[i], i != 1);
  ct_cache_close(c);
  /* Out of WAL mode, so the seed is one self-contained file. */
  sqlite3 *db = NULL;
  FUZZ_CHECK(sqlite3_open(file, &db) == SQLITE_OK);
  FUZZ_CHECK(sqlite3_exec(db, "PRAGMA journal_mode = DELETE; VACUUM;", NULL,
                          NULL, NULL) == SQLITE_OK);
  sqlite3_close(db);
}

static void remove_files(void) {
  unlink(path);
  unlink(wal);
  unlink(shm);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  FUZZ_CHECK(ct_gen_limits_for_arch("sm_90a", &lim) == CT_OK);
  if (*argc == 3 && strcmp((*argv)[1], "--make-seeds") == 0) {
    make_seed((*argv)[2], "empty-schema.db", 0);
    make_seed((*argv)[2], "one.db", 1);
    make_seed((*argv)[2], "three.db", 3);
    exit(0);
  }
  const char *tmp = getenv("TMPDIR");
  snprintf(path, sizeof path, "%s/convtune-fuzz-db-XXXXXX",
           tmp && tmp[0] ? tmp : "/tmp");
  int fd = mkstemp(path);
  FUZZ_CHECK(fd >= 0);
  close(fd);
  snprintf(wal, sizeof wal, "%s-wal", path);
  snprintf(shm, sizeof shm, "%s-shm", path);
  atexit(remove_files);
  return 0;
}

/* ---------------------------------------------------------------------- */

static int known_status(ct_status rc) {
  return rc == CT_OK || rc == CT_ERR_NOT_FOUND || rc == CT_ERR_DB ||
         rc == CT_ERR_DB_CORRUPT || rc == CT_ERR_UNSUPPORTED ||
         rc == CT_ERR_NOMEM || rc == CT_ERR_IO;
}

static void check_choice(const ct_problem *p, const ct_rt_choice *ch) {
  FUZZ_CHECK(memchr(ch->reason, '\0', sizeof ch->reason) != NULL);
  FUZZ_CHECK(ch->path == CT_PATH_TUNED_CUBIN || ch->path == CT_PATH_TUNED_COMPILED ||
             ch->path == CT_PATH_NEAREST || ch->path == CT_PATH_DEFAULT);
  ct_gen_variant again;
  FUZZ_CHECK(ct_gen_variant_from_name(p, &lim, ch->variant.name, &again) == CT_OK);
  FUZZ_CHECK(memcmp(&again, &ch->variant, sizeof again) == 0);
  /* The exact winner's cubin, or the nearest winner's own cubin when its
  ** source is this variant's; never one for a compiled or default pick. */
  if (ch->path == CT_PATH_TUNED_CUBIN)
    FUZZ_CHECK(ch->cubin != NULL && ch->cubin_size > 0);
  else if (ch->path == CT_PATH_NEAREST)
    FUZZ_CHECK(ch->cubin == NULL ? ch->cubin_size == 0 : ch->cubin_size > 0);
  else
    FUZZ_CHECK(ch->cubin == NULL);
  if (ch->path == CT_PATH_NEAREST) FUZZ_CHECK(ch->source[0] != '\0');
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > (1u << 20)) return 0;
  unlink(wal);
  unlink(shm);
  int fd = open(path, O_WRONLY | O_TRUNC);
  FUZZ_CHECK(fd >= 0);
  FUZZ_CHECK(size == 0 || write(fd, data, size) == (ssize_t)size);
  close(fd);

  ct_cache *c = NULL;
  char err[256];
  ct_status rc = ct_cache_open(path, CT_CACHE_READONLY, &c, err, sizeof err);
  FUZZ_CHECK(known_status(rc));
  if (rc != CT_OK) {
    FUZZ_CHECK(c == NULL && memchr(err, '\0', sizeof err) != NULL);
    return 0;
  }
  FUZZ_CHECK(ct_cache_untrusted(c) == CT_OK);

  ct_cache_entry *entries = NULL;
  size_t n = 0;
  rc = ct_cache_list(c, &entries, &n);
  FUZZ_CHECK(known_status(rc));
  for (size_t i = 0; i < n && i < 16; i++) {
    ct_problem p;
    FUZZ_CHECK(memchr(entries[i].spec, '\0', sizeof entries[i].spec) != NULL);
    if (ct_problem_parse(entries[i].spec, &p, NULL, 0) == CT_OK)
      FUZZ_CHECK(ct_problem_validate(&p, NULL, 0) == CT_OK);
  }
  free(entries);

  ct_rt_tuned_list tuned;
  memset(&tuned, 0, sizeof tuned);
  for (size_t i = 0; i < FUZZ_N_SPECS; i++) {
    ct_problem p;
    FUZZ_CHECK(ct_problem_parse(fuzz_specs[i], &p, NULL, 0) == CT_OK);
    ct_cache_winner w;
    rc = ct_cache_winner_get(c, fuzz_specs[i], &fuzz_device, &w);
    FUZZ_CHECK(known_status(rc));
    if (rc == CT_OK) FUZZ_CHECK(w.cubin != NULL && w.cubin_size > 0);
    ct_cache_winner_clear(&w);

    ct_rt_choice ch;
    rc = ct_rt_choose(c, &fuzz_device, &lim, &p, &tuned, &ch);
    FUZZ_CHECK(rc == CT_OK || rc == CT_ERR_NOMEM);
    if (rc == CT_OK) check_choice(&p, &ch);
    ct_rt_choice_clear(&ch);
  }
  ct_rt_tuned_free(&tuned);
  rc = ct_cache_check(c);
  FUZZ_CHECK(known_status(rc) || rc == CT_ERR_INVALID_ARG);
  ct_cache_close(c);
  return 0;
}
