/*
** cmd_db.c — `convtune db list / show / check / export / import / merge`.
*/
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "cli.h"

const char ct_cli_usage_db[] =
    "usage: convtune db list [--db PATH] [--problems FILE [--precision P]] [--json]\n"
    "       convtune db show ID [--db PATH] [--json]\n"
    "       convtune db check [--db PATH]\n"
    "       convtune db export [--db PATH] [--out FILE [--force]] [--cubins]\n"
    "       convtune db import FILE [--db PATH]\n"
    "       convtune db merge OTHER.db [--db PATH]\n"
    "\n"
    "list: one line per tuned problem and device: id, spec, trials, winner;\n"
    "with --problems only the problems of that list (`convtune tune --help`\n"
    "has its forms; --precision overrides its specs'), each one the database\n"
    "does not hold said as not tuned.\n"
    "show: every trial of problem ID and its winner.\n"
    "check: PRAGMA integrity_check, foreign keys and every stored cubin's hash.\n"
    "export: the whole database as text (stdout, or --out FILE): devices,\n"
    "problems, trials, winners with their cubins; --cubins adds the compile\n"
    "cache.  The format is documented in cache/ct_cache.h.  --out is written\n"
    "to a temporary file and renamed when complete; it may not be the\n"
    "database, and an existing file that is not an export is replaced only\n"
    "with --force.\n"
    "import: reads such a file (\"-\": stdin) into the database, all or\n"
    "nothing; importing twice adds nothing twice.  Entries keep their device,\n"
    "driver and NVRTC version, so the runtime uses them only on a matching\n"
    "machine; a winner replaces a local one only when it is newer.\n"
    "merge: imports another database file the same way.\n"
    "None of these needs a GPU.\n";

int ct_cli_db_list(const ct_cli *c) {
  if (c->precision && !c->problems) {
    fprintf(stderr, "convtune db list: --precision sets a list's precision: it needs "
                    "--problems FILE (the list shows every precision's rows)\n");
    return CT_CLI_EXIT_USAGE;
  }
  char path[4096];
  ct_cache *cache = NULL;
  int opened = ct_cli_db_open(c, "db list", path, sizeof path, &cache);
  if (opened) return opened;
  ct_cache_entry *rows = NULL;
  size_t n = 0;
  if (cache && ct_cache_list(cache, &rows, &n) != CT_OK) {
    fprintf(stderr, "convtune db list: %s\n", ct_cache_errmsg(cache));
    ct_cache_close(cache);
    return 1;
  }
  /* --problems: the rows of the list's problems; the others it names are
  ** missing. */
  ct_problem_list list = {0};
  unsigned char *seen = NULL;
  if (c->problems) {
    char err[1024];
    if (ct_problem_list_read(c->problems, c->precision, &list, err, sizeof err) != CT_OK) {
      fprintf(stderr, "convtune db list: --problems %s\n", err);
      free(rows);
      ct_cache_close(cache);
      return CT_CLI_EXIT_USAGE; /* as tune's and check's */
    }
    seen = calloc(list.n, 1);
    if (seen == NULL) {
      fprintf(stderr, "convtune db list: out of host memory\n");
      ct_problem_list_free(&list);
      free(rows);
      ct_cache_close(cache);
      return 1;
    }
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
      long at = ct_problem_list_find(&list, rows[i].spec);
      if (at < 0) continue;
      seen[at] = 1;
      rows[kept++] = rows[i];
    }
    n = kept;
  }
  if (c->json) {
    ct_json j;
    ct_json_init(&j, stdout);
    ct_json_begin_array(&j);
    for (size_t i = 0; i < n; i++) {
      ct_json_begin_object(&j);
      ct_json_key_int(&j, "id", rows[i].problem_id);
      ct_json_key_str(&j, "problem", rows[i].spec);
      ct_json_key_str(&j, "precision", rows[i].precision);
      ct_json_key_int(&j, "trials", rows[i].n_trials);
      ct_json_key_int(&j, "timed", rows[i].n_timed);
      ct_json_key_str(&j, "device", rows[i].device);
      ct_json_key_str(&j, "winner", rows[i].variant[0] ? rows[i].variant : NULL);
      ct_json_key_num(&j, "mean_ms", rows[i].mean_ms);
      ct_json_end_object(&j);
    }
    for (size_t i = 0; i < list.n; i++) {
      if (seen[i]) continue;
      ct_json_begin_object(&j);
      ct_json_key(&j, "id");
      ct_json_null(&j);
      ct_json_key_str(&j, "problem", list.e[i].spec);
      ct_json_key_str(&j, "precision", ct_precision_name(list.e[i].problem.precision));
      ct_json_key_int(&j, "trials", 0);
      ct_json_key_int(&j, "timed", 0);
      ct_json_key_str(&j, "device", NULL);
      ct_json_key_str(&j, "winner", NULL);
      ct_json_key_num(&j, "mean_ms", NAN);
      ct_json_end_object(&j);
    }
    ct_json_end_array(&j);
    ct_json_finish(&j);
  } else if (cache == NULL && list.n == 0) {
    printf("no tuning database at %s: nothing tuned yet\n", path);
  } else if (n == 0 && list.n == 0) {
    printf("%s: no problems tuned yet\n", path);
  } else {
    printf("%-5s %-6s %7s %10s  %-24s %s\n", "id", "prec", "trials", "mean ms",
           "device", "problem / winner");
    for (size_t i = 0; i < n; i++) {
      char mean[16] = "-";
      if (isfinite(rows[i].mean_ms)) snprintf(mean, sizeof mean, "%.4f", rows[i].mean_ms);
      char dev[sizeof rows[i].device], spec[sizeof rows[i].spec], var[sizeof rows[i].variant],
          prec[sizeof rows[i].precision];
      printf("%-5" PRId64 " %-6s %7d %10s  %-24s %s\n", rows[i].problem_id,
             ct_cli_shown(rows[i].precision, prec, sizeof prec), rows[i].n_trials, mean,
             rows[i].device[0] ? ct_cli_shown(rows[i].device, dev, sizeof dev) : "-",
             ct_cli_shown(rows[i].spec, spec, sizeof spec));
      printf("%-5s %-6s %7s %10s  %-24s %s\n", "", "", "", "", "",
             rows[i].variant[0] ? ct_cli_shown(rows[i].variant, var, sizeof var) : "(no winner)");
    }
    size_t missing = 0;
    for (size_t i = 0; i < list.n; i++) {
      if (seen[i]) continue;
      missing++;
      printf("%-5s %-6s %7s %10s  %-24s %s\n", "-",
             ct_precision_name(list.e[i].problem.precision), "0", "-", "-", list.e[i].spec);
      printf("%-5s %-6s %7s %10s  %-24s %s\n", "", "", "", "", "", "(not tuned)");
    }
    if (list.n)
      printf("\n%zu of the list's %zu %s in %s, %zu not tuned\n", list.n - missing, list.n,
             ct_cli_plural(list.n, "problem", "problems"), path, missing);
  }
  free(seen);
  ct_problem_list_free(&list);
  free(rows);
  ct_cache_close(cache);
  return 0;
}

int ct_cli_db_show(const ct_cli *c) {
  long id;
  if (ct_cli_parse_int("db show ID", c->args[0], 1, INT32_MAX, &id)) return CT_CLI_EXIT_USAGE;
  char path[4096];
  ct_cache *cache = NULL;
  int opened = ct_cli_db_open_existing(c, "db show", path, sizeof path, &cache);
  if (opened) return opened;
  int exit_code = 1;
  ct_cache_entry *rows = NULL;
  ct_cache_trial *trials = NULL;
  size_t n = 0, nt = 0;
  if (ct_cache_list(cache, &rows, &n) != CT_OK ||
      ct_cache_trials(cache, id, 0, &trials, &nt) != CT_OK) {
    fprintf(stderr, "convtune db show: %s\n", ct_cache_errmsg(cache));
    goto out;
  }
  size_t first = n;
  for (size_t i = 0; i < n; i++)
    if (rows[i].problem_id == id) { first = i; break; }
  if (first == n) {
    fprintf(stderr, "convtune db show: no problem %ld in %s\n", id, path);
    goto out;
  }
  if (c->json) {
    ct_json j;
    ct_json_init(&j, stdout);
    ct_json_begin_object(&j);
    ct_json_key_int(&j, "id", id);
    ct_json_key_str(&j, "problem", rows[first].spec);
    ct_json_key_str(&j, "precision", rows[first].precision);
    ct_json_key(&j, "winners");
    ct_json_begin_array(&j);
    for (size_t i = first; i < n && rows[i].problem_id == id; i++) {
      if (!rows[i].variant[0]) continue;
      ct_json_begin_object(&j);
      ct_json_key_str(&j, "device", rows[i].device);
      ct_json_key_str(&j, "variant", rows[i].variant);
      ct_json_key_num(&j, "mean_ms", rows[i].mean_ms);
      ct_json_end_object(&j);
    }
    ct_json_end_array(&j);
    ct_json_key(&j, "trials");
    ct_json_begin_array(&j);
    for (size_t i = 0; i < nt; i++) ct_cli_json_trial(&j, &trials[i]);
    ct_json_end_array(&j);
    ct_json_end_object(&j);
    ct_json_finish(&j);
  } else {
    char spec[sizeof rows[first].spec], var[sizeof rows[first].variant],
        dev[sizeof rows[first].device];
    printf("problem %ld  %s\n", id, ct_cli_shown(rows[first].spec, spec, sizeof spec));
    for (size_t i = first; i < n && rows[i].problem_id == id; i++)
      if (rows[i].variant[0])
        printf("winner  %s on %s: %.4f ms\n", ct_cli_shown(rows[i].variant, var, sizeof var),
               ct_cli_shown(rows[i].device, dev, sizeof dev), rows[i].mean_ms);
    printf("\n");
    ct_cli_print_trial_header();
    for (size_t i = 0; i < nt; i++) ct_cli_print_trial(&trials[i], "");
  }
  exit_code = 0;
out:
  free(rows);
  free(trials);
  ct_cache_close(cache);
  return exit_code;
}

int ct_cli_db_check(const ct_cli *c) {
  char path[4096];
  ct_cache *cache = NULL;
  int opened = ct_cli_db_open_existing(c, "db check", path, sizeof path, &cache);
  if (opened) return opened;
  ct_status rc = ct_cache_check(cache);
  if (rc != CT_OK) fprintf(stderr, "convtune db check: %s\n", ct_cache_errmsg(cache));
  else printf("ok: %s (schema %d): integrity, foreign keys, every cubin's hash\n",
              path, ct_cache_schema_version(cache));
  ct_cache_close(cache);
  return rc == CT_OK ? 0 : 1;
}

int ct_cli_db_export(const ct_cli *c) {
  char path[4096];
  ct_cache *cache = NULL;
  int opened = ct_cli_db_open_existing(c, "db export", path, sizeof path, &cache);
  if (opened) return opened;
  static const ct_cli_out_kind text = {"a convtune export",
                                       {"convtune-export\t", NULL}};
  ct_cli_out out;
  if (ct_cli_out_open("db export", c->out, path, &text, c->force, &out)) {
    ct_cache_close(cache);
    return 1;
  }
  ct_cache_transfer_stats st;
  ct_status rc = ct_cache_export(cache, out.f, c->cubins ? CT_CACHE_EXPORT_CUBINS : 0, &st);
  if (rc != CT_OK && rc != CT_ERR_IO)
    fprintf(stderr, "convtune db export: %s\n", ct_cache_errmsg(cache));
  /* CT_ERR_IO: a write failed; closing the output says which. */
  if (ct_cli_out_close("db export", &out, rc == CT_OK || rc == CT_ERR_IO) ||
      rc != CT_OK) {
    ct_cache_close(cache);
    return 1;
  }
  fprintf(stderr, "exported %zu %s, %zu %s, %zu %s, %zu %s, %zu %s from %s\n",
          st.devices, ct_cli_plural(st.devices, "device", "devices"),
          st.problems, ct_cli_plural(st.problems, "problem", "problems"),
          st.trials, ct_cli_plural(st.trials, "trial", "trials"),
          st.winners, ct_cli_plural(st.winners, "winner", "winners"),
          st.cubins, ct_cli_plural(st.cubins, "cubin", "cubins"), path);
  ct_cache_close(cache);
  return 0;
}

/* Removes a database this command made: the file, its -wal and -shm. */
static void db_remove(const char *path) {
  char name[4200];
  unlink(path);
  snprintf(name, sizeof name, "%s-wal", path);
  unlink(name);
  snprintf(name, sizeof name, "%s-shm", path);
  unlink(name);
}

/* Imports the export text in f into the database of c; `what` names it. */
static int db_import_file(const ct_cli *c, const char *cmd, FILE *f,
                          const char *what) {
  char path[4096], err[1024];
  struct stat sb;
  int rc = ct_cli_db(c, cmd, CT_CLI_DB_WRITE, path, sizeof path);
  if (rc) return rc;
  int existed = stat(path, &sb) == 0;
  ct_cache *cache = NULL;
  ct_cache_transfer_stats st;
  ct_status ok = ct_cache_open(path, CT_CACHE_CREATE, &cache, err, sizeof err);
  if (ok == CT_OK) {
    ok = ct_cache_import(cache, f, &st, err, sizeof err);
    if (ok != CT_OK)
      fprintf(stderr, "convtune %s: %s: %s (nothing imported)\n", cmd, what, err);
  } else {
    fprintf(stderr, "convtune %s: %s\n", cmd, err);
  }
  ct_cache_close(cache);
  if (ok != CT_OK) {
    if (!existed) db_remove(path); /* no empty database left behind */
    return 1;
  }
  printf("%s into %s: %zu %s (%zu new), %zu %s (%zu stored), %zu %s (%zu new), "
         "%zu %s, %zu %s\n", what, path,
         st.trials, ct_cli_plural(st.trials, "trial", "trials"), st.trials_added,
         st.winners, ct_cli_plural(st.winners, "winner", "winners"), st.winners_stored,
         st.cubins, ct_cli_plural(st.cubins, "cubin", "cubins"), st.cubins_added,
         st.devices, ct_cli_plural(st.devices, "device", "devices"),
         st.problems, ct_cli_plural(st.problems, "problem", "problems"));
  return 0;
}

int ct_cli_db_import(const ct_cli *c) {
  const char *name = c->args[0];
  FILE *f = strcmp(name, "-") == 0 ? stdin : fopen(name, "r");
  if (f == NULL) {
    fprintf(stderr, "convtune db import: cannot read %s: %s\n", name, strerror(errno));
    return 1;
  }
  int rc = db_import_file(c, "db import", f, name);
  if (f != stdin) fclose(f);
  return rc;
}

/* merge = export the other database into a temporary file, import that. */
int ct_cli_db_merge(const ct_cli *c) {
  const char *other = c->args[0];
  char err[1024], path[4096], which[4200];
  int rc0 = ct_cli_db(c, "db merge", CT_CLI_DB_WRITE, path, sizeof path);
  if (rc0) return rc0;
  if (ct_cli_is_database_file(other, path, which, sizeof which)) {
    fprintf(stderr, "convtune db merge: %s is the database itself: nothing to merge\n",
            other);
    return 1;
  }
  ct_cache *src = NULL;
  if (ct_cache_open(other, CT_CACHE_READONLY, &src, err, sizeof err) != CT_OK) {
    fprintf(stderr, "convtune db merge: %s\n", err);
    return 1;
  }
  FILE *tmp = tmpfile();
  if (tmp == NULL) {
    fprintf(stderr, "convtune db merge: no temporary file: %s\n", strerror(errno));
    ct_cache_close(src);
    return 1;
  }
  ct_status rc = ct_cache_export(src, tmp, CT_CACHE_EXPORT_CUBINS, NULL);
  if (rc != CT_OK) {
    fprintf(stderr, "convtune db merge: reading %s: %s\n", other,
            rc == CT_ERR_IO ? "cannot write a temporary file" : ct_cache_errmsg(src));
    ct_cache_close(src);
    fclose(tmp);
    return 1;
  }
  ct_cache_close(src);
  rewind(tmp);
  int ret = db_import_file(c, "db merge", tmp, other);
  fclose(tmp);
  return ret;
}
