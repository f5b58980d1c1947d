/*
** cli_util.c — helpers the commands share: the problem and database
** options, opening the database, printing trials as text and JSON.
*/
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <libgen.h>
#include <sys/stat.h>

#include "cli.h"

int ct_cli_parse_int(const char *opt, const char *text, long lo, long hi,
                     long *out) {
  char *end;
  errno = 0;
  long v = strtol(text, &end, 10);
  if (errno || end == text || *end || v < lo || v > hi) {
    fprintf(stderr, "convtune: %s wants an integer in [%ld, %ld], not '%s'\n",
            opt, lo, hi, text);
    return -1;
  }
  *out = v;
  return 0;
}

/* The problem from --problem and --precision; 0 or CT_CLI_EXIT_USAGE. */
int ct_cli_problem(const ct_cli *c, ct_problem *p) {
  char err[256];
  if (c->problem) {
    if (ct_problem_parse(c->problem, p, err, sizeof err) != CT_OK) {
      fprintf(stderr, "convtune: --problem: %s\n", err);
      return CT_CLI_EXIT_USAGE;
    }
  } else {
    ct_problem_default(p);
  }
  if (c->precision && ct_precision_parse(c->precision, &p->precision) != CT_OK) {
    fprintf(stderr, "convtune: --precision must be tf32 or fp32, not '%s'\n",
            c->precision);
    return CT_CLI_EXIT_USAGE;
  }
  return 0;
}

const char *ct_cli_plural(size_t n, const char *one, const char *many) {
  return n == 1 ? one : many;
}

void ct_cli_no_gpu_hint(const char *cmd) {
  fprintf(stderr,
          "convtune %s: without a GPU these work: `convtune space --arch sm_90a`"
          " (a problem's variants), the db commands (list, show, check, export,"
          " import, merge) and report; CONVTUNE_TEST_FAKE_GPU=1 convtune tune"
          " tries the tuner on a fake GPU (made-up times, real NVRTC"
          " compiles)\n", cmd);
}

/* mkdir -p of dir; 0 or -1 (errno set). */
static int cli_mkdirs(const char *dir) {
  char p[4096];
  snprintf(p, sizeof p, "%s", dir);
  for (char *s = p + 1;; s++) {
    if (*s != '/' && *s != '\0') continue;
    char was = *s;
    *s = '\0';
    if (mkdir(p, 0777) != 0 && errno != EEXIST) return -1;
    if (was == '\0') return 0;
    *s = was;
  }
}

int ct_cli_db(const ct_cli *c, const char *cmd, int mode, char *buf, size_t len) {
  const char *env = getenv("CONVTUNE_DB");
  int is_default = c->db == NULL && (env == NULL || env[0] == '\0');
  struct stat st;
  if (c->db && c->db[0] == '\0') {
    fprintf(stderr, "convtune %s: --db is empty: give the database file's path, "
                    "or leave --db out for the default (`convtune --help` "
                    "says which)\n", cmd);
    return CT_CLI_EXIT_USAGE;
  }
  if (c->db) {
    snprintf(buf, len, "%s", c->db);
  } else if (ct_cache_default_path(buf, len) != CT_OK) {
    fprintf(stderr, "convtune %s: no database path: pass --db PATH or set "
                    "CONVTUNE_DB, XDG_CACHE_HOME or HOME\n", cmd);
    return 1;
  }
  char dir[4096], tmp[4096];
  snprintf(tmp, sizeof tmp, "%s", buf);
  snprintf(dir, sizeof dir, "%s", dirname(tmp));
  if (stat(buf, &st) == 0) {
    if (S_ISDIR(st.st_mode)) {
      fprintf(stderr, "convtune %s: %s is a directory; the database is a file: "
                      "pass --db %s/tuning.db, say\n", cmd, buf, buf);
      return 1;
    }
    if (!S_ISREG(st.st_mode)) {
      fprintf(stderr, "convtune %s: %s is not a regular file; the database is "
                      "an SQLite file: pass another --db\n", cmd, buf);
      return 1;
    }
    if (mode != CT_CLI_DB_WRITE) return 0;
    if (access(buf, W_OK) != 0) {
      fprintf(stderr, "convtune %s: %s is read-only (%s) and `convtune %s` "
                      "writes to it: make it writable (chmod u+w), or copy it "
                      "and pass --db COPY; db list, db show, db export, check "
                      "and report read it as it is\n",
              cmd, buf, strerror(errno), cmd);
      return 1;
    }
    if (access(dir, W_OK | X_OK) != 0) {
      fprintf(stderr, "convtune %s: the directory %s is not writable (%s): "
                      "SQLite keeps %s-wal and %s-shm beside the database "
                      "while writing; make the directory writable or move "
                      "the database to one that is\n",
              cmd, dir, strerror(errno), buf, buf);
      return 1;
    }
    /* A read of a database made read-only then (SQLite gives its -wal and
    ** -shm files the database's mode) may have left them read-only. */
    static const char *const sides[] = {"-wal", "-shm"};
    for (int i = 0; i < 2; i++) {
      char side[4096 + 8];
      snprintf(side, sizeof side, "%s%s", buf, sides[i]);
      if (access(side, F_OK) == 0 && access(side, W_OK) != 0) {
        fprintf(stderr, "convtune %s: %s is read-only (%s) and `convtune %s` writes "
                        "through it (a read of the database while it was read-only makes "
                        "it so): make it writable (chmod u+w %s)\n",
                cmd, side, strerror(errno), cmd, side);
        return 1;
      }
    }
    return 0;
  }
  if (errno != ENOENT) {
    fprintf(stderr, "convtune %s: cannot use %s: %s\n", cmd, buf, strerror(errno));
    return 1;
  }
  if (mode != CT_CLI_DB_WRITE) return 0; /* a missing file: nothing tuned */
  if (stat(dir, &st) != 0) {
    if (!is_default) {
      fprintf(stderr, "convtune %s: the directory %s does not exist; convtune "
                      "makes only its default directory: make it first "
                      "(mkdir -p %s) or pass another --db\n", cmd, dir, dir);
      return 1;
    }
    if (cli_mkdirs(dir) != 0) {
      fprintf(stderr, "convtune %s: cannot make the default directory %s: %s; "
                      "pass --db PATH\n", cmd, dir, strerror(errno));
      return 1;
    }
  } else if (!S_ISDIR(st.st_mode)) {
    fprintf(stderr, "convtune %s: %s is not a directory: pass another --db\n",
            cmd, dir);
    return 1;
  }
  if (access(dir, W_OK | X_OK) != 0) {
    fprintf(stderr, "convtune %s: cannot create %s: the directory %s is not "
                    "writable (%s); pass --db to a place you can write\n",
            cmd, buf, dir, strerror(errno));
    return 1;
  }
  return 0;
}

/* ---------------------------------------------------------------------- */
/* Trials as JSON and text                                                 */

void ct_cli_json_trial(ct_json *j, const ct_cache_trial *t) {
  char hash[24];
  snprintf(hash, sizeof hash, "%016" PRIx64, t->source_hash);
  ct_json_begin_object(j);
  ct_json_key_int(j, "id", t->id);
  ct_json_key_str(j, "variant", t->variant);
  ct_json_key_str(j, "status", ct_trial_status_name(t->status));
  ct_json_key_num(j, "mean_ms", t->mean_ms);
  ct_json_key_num(j, "median_ms", t->median_ms);
  ct_json_key_num(j, "min_ms", t->min_ms);
  ct_json_key_num(j, "max_ms", t->max_ms);
  ct_json_key_int(j, "n_timed", t->n_timed);
  ct_json_key_num(j, "max_abs_err", t->max_abs_err);
  ct_json_key_num(j, "rel_err", t->rel_err);
  ct_json_key_num(j, "compile_ms", t->compile_ms);
  ct_json_key_int(j, "regs", t->regs);
  ct_json_key_int(j, "spill_bytes", t->spill_bytes);
  ct_json_key_int(j, "smem_bytes", t->smem_bytes);
  ct_json_key_str(j, "source_hash", hash);
  ct_json_key_int(j, "created_at", t->created_at);
  ct_json_key_str(j, "message", t->message);
  ct_json_end_object(j);
}

void ct_cli_print_trial_header(void) {
  printf("%-9s %-14s %10s %10s %10s %10s %4s %9s  %s\n", "trial", "status",
         "mean ms", "median ms", "max abs", "rel err", "regs", "compile s",
         "variant");
}

const char *ct_cli_shown(const char *s, char *buf, size_t len) {
  size_t i = 0;
  for (; s[i] && i + 1 < len; i++) {
    const unsigned char ch = (unsigned char)s[i];
    buf[i] = ch == '\n' || ch == '\r' ? ' ' : (ch < 0x20 && ch != '\t') || ch == 0x7f ? '?' : (char)ch;
  }
  if (len) buf[i] = '\0';
  return buf;
}

void ct_cli_print_trial(const ct_cache_trial *t, const char *mark) {
  char mean[16] = "-", med[16] = "-", mae[16] = "-", rel[16] = "-", comp[16] = "-";
  if (isfinite(t->mean_ms)) snprintf(mean, sizeof mean, "%.4f", t->mean_ms);
  if (isfinite(t->median_ms)) snprintf(med, sizeof med, "%.4f", t->median_ms);
  if (isfinite(t->max_abs_err)) snprintf(mae, sizeof mae, "%.2e", t->max_abs_err);
  if (isfinite(t->rel_err)) snprintf(rel, sizeof rel, "%.2e", t->rel_err);
  if (isfinite(t->compile_ms)) snprintf(comp, sizeof comp, "%.2f", t->compile_ms / 1e3);
  char variant[sizeof t->variant], message[sizeof t->message];
  printf("%-9" PRId64 " %-14s %10s %10s %10s %10s %4d %9s  %s%s\n", t->id,
         ct_trial_status_name(t->status), mean, med, mae, rel, t->regs, comp,
         ct_cli_shown(t->variant, variant, sizeof variant), mark);
  if (t->status != CT_TRIAL_TIMED && t->message[0])
    printf("%9s   %.150s\n", "", ct_cli_shown(t->message, message, sizeof message));
}

/* Opens the database read-only; a missing file is *cache = NULL. */
int ct_cli_db_open(const ct_cli *c, const char *cmd, char *path, size_t len,
                   ct_cache **cache) {
  int rc = ct_cli_db(c, cmd, CT_CLI_DB_READ, path, len);
  if (rc) return rc;
  char err[512];
  ct_status st = ct_cache_open(path, CT_CACHE_READONLY, cache, err, sizeof err);
  if (st == CT_ERR_NOT_FOUND) {
    *cache = NULL;
    return 0;
  }
  if (st != CT_OK) {
    fprintf(stderr, "convtune %s: %s\n", cmd, err);
    return 1;
  }
  return 0;
}

/* As db_open, for commands that need the file: a missing one is an error. */
int ct_cli_db_open_existing(const ct_cli *c, const char *cmd, char *path,
                            size_t len, ct_cache **cache) {
  int rc = ct_cli_db_open(c, cmd, path, len, cache);
  if (rc) return rc;
  if (*cache == NULL) {
    fprintf(stderr, "convtune %s: no tuning database at %s\n", cmd, path);
    return 1;
  }
  return 0;
}
