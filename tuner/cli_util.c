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

/* The database path: --db, else the default; 0 or 1. */
int ct_cli_db(const ct_cli *c, char *buf, size_t len) {
  if (c->db) {
    snprintf(buf, len, "%s", c->db);
    return 0;
  }
  if (ct_cache_default_path(buf, len) != CT_OK) {
    fprintf(stderr, "convtune: no database path: pass --db PATH or set "
                    "CONVTUNE_DB, XDG_CACHE_HOME or HOME\n");
    return 1;
  }
  return 0;
}

/* ---------------------------------------------------------------------- */
/* JSON                                                                    */

void ct_cli_json_str(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    unsigned char ch = (unsigned char)*s;
    if (ch == '"' || ch == '\\') fprintf(f, "\\%c", ch);
    else if (ch == '\n') fputs("\\n", f);
    else if (ch < 0x20) fprintf(f, "\\u%04x", ch);
    else fputc(ch, f);
  }
  fputc('"', f);
}

/* A number, or null for NaN/Inf (JSON has neither). */
void ct_cli_json_num(FILE *f, double v) {
  if (isfinite(v)) fprintf(f, "%.9g", v);
  else fputs("null", f);
}

void ct_cli_json_trial(FILE *f, const ct_cache_trial *t) {
  fprintf(f, "{\"id\": %" PRId64 ", \"variant\": ", t->id);
  ct_cli_json_str(f, t->variant);
  fputs(", \"status\": ", f);
  ct_cli_json_str(f, ct_trial_status_name(t->status));
  fputs(", \"mean_ms\": ", f); ct_cli_json_num(f, t->mean_ms);
  fputs(", \"median_ms\": ", f); ct_cli_json_num(f, t->median_ms);
  fputs(", \"min_ms\": ", f); ct_cli_json_num(f, t->min_ms);
  fputs(", \"max_ms\": ", f); ct_cli_json_num(f, t->max_ms);
  fprintf(f, ", \"n_timed\": %d", t->n_timed);
  fputs(", \"max_abs_err\": ", f); ct_cli_json_num(f, t->max_abs_err);
  fputs(", \"rel_err\": ", f); ct_cli_json_num(f, t->rel_err);
  fputs(", \"compile_ms\": ", f); ct_cli_json_num(f, t->compile_ms);
  fprintf(f, ", \"regs\": %d, \"spill_bytes\": %d, \"smem_bytes\": %d, "
             "\"source_hash\": \"%016" PRIx64 "\", \"created_at\": %" PRId64
             ", \"message\": ",
          t->regs, t->spill_bytes, t->smem_bytes, t->source_hash, t->created_at);
  ct_cli_json_str(f, t->message);
  fputc('}', f);
}

void ct_cli_print_trial_header(void) {
  printf("%-9s %-14s %10s %10s %10s %10s %4s %9s  %s\n", "trial", "status",
         "mean ms", "median ms", "max abs", "rel err", "regs", "compile s",
         "variant");
}

void ct_cli_print_trial(const ct_cache_trial *t, const char *mark) {
  char mean[16] = "-", med[16] = "-", mae[16] = "-", rel[16] = "-", comp[16] = "-";
  if (isfinite(t->mean_ms)) snprintf(mean, sizeof mean, "%.4f", t->mean_ms);
  if (isfinite(t->median_ms)) snprintf(med, sizeof med, "%.4f", t->median_ms);
  if (isfinite(t->max_abs_err)) snprintf(mae, sizeof mae, "%.2e", t->max_abs_err);
  if (isfinite(t->rel_err)) snprintf(rel, sizeof rel, "%.2e", t->rel_err);
  if (isfinite(t->compile_ms)) snprintf(comp, sizeof comp, "%.2f", t->compile_ms / 1e3);
  printf("%-9" PRId64 " %-14s %10s %10s %10s %10s %4d %9s  %s%s\n", t->id,
         ct_trial_status_name(t->status), mean, med, mae, rel, t->regs, comp,
         t->variant, mark);
  if (t->status != CT_TRIAL_TIMED && t->message[0])
    printf("%9s   %.150s\n", "", t->message);
}

/* Opens the database read-only; a missing file is *cache = NULL. */
int ct_cli_db_open(const ct_cli *c, const char *cmd, char *path, size_t len,
                   ct_cache **cache) {
  if (ct_cli_db(c, path, len)) return 1;
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
  if (ct_cli_db_open(c, cmd, path, len, cache)) return 1;
  if (*cache == NULL) {
    fprintf(stderr, "convtune %s: no tuning database at %s\n", cmd, path);
    return 1;
  }
  return 0;
}
