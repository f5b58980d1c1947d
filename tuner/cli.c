/*
** cli.c — the `convtune` command line: the command table, option parsing
** and main; the hidden `__ct_worker` command the tuner starts its isolated
** GPU worker with.  The commands live in cmd_tune.c (space, tune, check),
** cmd_db.c (db ...) and cmd_report.c (report).
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
#include "ct_drv.h"

static const char *usage_main =
    "usage: convtune COMMAND [OPTIONS]\n"
    "\n"
    "Autotunes CUDA conv2d kernels and keeps the winners in a tuning database.\n"
    "\n"
    "commands:\n"
    "  space     list the valid variants of a problem (no GPU needed)\n"
    "  tune      tune a problem on the attached GPU and store the winner\n"
    "  check     run the runtime's choice for a problem, verify it, time it\n"
    "  report    chart a problem's trials as SVG\n"
    "  db list   list the tuned problems in the database\n"
    "  db show   show one problem's trials and winner\n"
    "  db check  check the database's integrity\n"
    "  db export / import / merge   move results between databases\n"
    "\n"
    "Run `convtune COMMAND --help` for a command's options.\n"
    "The database is --db PATH, else $CONVTUNE_DB, else\n"
    "$XDG_CACHE_HOME/convtune/tuning.db, else ~/.cache/convtune/tuning.db.\n";

static int parse_seconds(const char *opt, const char *text, double *out) {
  char *end;
  errno = 0;
  double v = strtod(text, &end);
  if (errno || end == text || *end || !(v > 0) || v > 1e7) {
    fprintf(stderr, "convtune: %s wants a number of seconds > 0, not '%s'\n",
            opt, text);
    return -1;
  }
  *out = v;
  return 0;
}

/* Parses argv[first..]; returns 0 or CT_CLI_EXIT_USAGE after saying why. */
static int parse_cli(int argc, char **argv, int first, ct_cli *c) {
  memset(c, 0, sizeof *c);
  for (int i = first; i < argc; i++) {
    const char *a = argv[i];
    const char *val = i + 1 < argc ? argv[i + 1] : NULL;
    long v;
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) { c->help = 1; continue; }
    if (!strcmp(a, "--json")) { c->json = 1; continue; }
    if (!strcmp(a, "--quiet")) { c->quiet = 1; continue; }
    if (!strcmp(a, "--fresh")) { c->fresh = 1; continue; }
    if (!strcmp(a, "--no-isolate")) { c->no_isolate = 1; continue; }
    if (!strcmp(a, "--cubins")) { c->cubins = 1; continue; }
    if (a[0] == '-' && a[1] == '-') {
      if (val == NULL) {
        fprintf(stderr, "convtune: %s needs a value\n", a);
        return CT_CLI_EXIT_USAGE;
      }
      i++;
      if (!strcmp(a, "--problem")) c->problem = val;
      else if (!strcmp(a, "--precision")) c->precision = val;
      else if (!strcmp(a, "--db")) c->db = val;
      else if (!strcmp(a, "--arch")) c->arch = val;
      else if (!strcmp(a, "--families")) c->families = val;
      else if (!strcmp(a, "--out")) c->out = val;
      else if (!strcmp(a, "--budget")) {
        if (parse_seconds(a, val, &c->budget)) return CT_CLI_EXIT_USAGE;
      } else if (!strcmp(a, "--watchdog")) {
        if (parse_seconds(a, val, &c->watchdog)) return CT_CLI_EXIT_USAGE;
      } else if (!strcmp(a, "--max-variants")) {
        if (ct_cli_parse_int(a, val, 1, 1000000, &c->max_variants)) return CT_CLI_EXIT_USAGE;
      }
      else if (!strcmp(a, "--seed")) {
        char *end;
        errno = 0;
        c->seed = strtoull(val, &end, 0);
        if (errno || *end || end == val || c->seed == 0) {
          fprintf(stderr, "convtune: --seed wants a non-zero integer, not '%s'\n", val);
          return CT_CLI_EXIT_USAGE;
        }
      } else {
        struct { const char *name; long lo, hi; int *dst; } ints[] = {
            {"--device", 0, 1023, &c->device},
            {"--threads", 1, 1024, &c->threads},
            {"--trials", 1, 100000, &c->trials},
            {"--final-trials", 1, 100000, &c->final_trials},
            {"--finalists", 1, 1000, &c->finalists},
        };
        size_t j;
        for (j = 0; j < sizeof ints / sizeof ints[0]; j++)
          if (!strcmp(a, ints[j].name)) break;
        if (j == sizeof ints / sizeof ints[0]) {
          fprintf(stderr, "convtune: unknown option %s (see --help)\n", a);
          return CT_CLI_EXIT_USAGE;
        }
        if (ct_cli_parse_int(a, val, ints[j].lo, ints[j].hi, &v)) return CT_CLI_EXIT_USAGE;
        *ints[j].dst = (int)v;
      }
      continue;
    }
    if (c->n_args == (int)(sizeof c->args / sizeof c->args[0])) {
      fprintf(stderr, "convtune: unexpected argument '%s'\n", a);
      return CT_CLI_EXIT_USAGE;
    }
    c->args[c->n_args++] = a;
  }
  return 0;
}

int main(int argc, char **argv) {
  /* The tuner's isolated GPU worker (ct_tune.h); not for people. */
  if (argc >= 2 && !strcmp(argv[1], CT_TUNE_WORKER_ARG))
    return ct_tune_worker_main(argc, argv);
  if (argc < 2) {
    fputs(usage_main, stderr);
    return CT_CLI_EXIT_USAGE;
  }
  const char *cmd = argv[1];
  if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
    fputs(usage_main, stdout);
    return 0;
  }
  if (!strcmp(cmd, "--version")) {
    printf("convtune %s\n", CT_VERSION);
    return 0;
  }
  static const struct {
    const char *name;
    int (*run)(const ct_cli *);
  } commands[] = {
      {"space", ct_cli_space}, {"tune", ct_cli_tune}, {"check", ct_cli_check},
      {"report", ct_cli_report}, {"db", ct_cli_db_command}};
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
    if (strcmp(cmd, commands[i].name)) continue;
    ct_cli c;
    int rc = parse_cli(argc, argv, 2, &c);
    if (rc) return rc;
    return commands[i].run(&c);
  }
  fprintf(stderr, "convtune: unknown command '%s'\n\n%s", cmd, usage_main);
  return CT_CLI_EXIT_USAGE;
}
