/*
** cli.c — the `convtune` command line: the command table, option parsing
** and main; the hidden `__ct_worker` command the tuner starts its isolated
** GPU worker with.  The commands live in cmd_tune.c (space, tune, check),
** cmd_db.c (db ...) and cmd_report.c (report).
*/
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static const char usage_main[] =
    "usage: convtune COMMAND [OPTIONS]\n"
    "\n"
    "Autotunes CUDA conv2d kernels and keeps the winners in a tuning database.\n"
    "\n"
    "commands:\n"
    "  space     list the valid variants of a problem (no GPU needed)\n"
    "  tune      tune a problem on the attached GPU and store the winner\n"
    "  check     run the runtime's choice for a problem, verify it, time it\n"
    "  report    chart a problem's trials as SVG\n"
    "  kernelbench  write a self-contained KernelBench entry (ModelNew) for a problem\n"
    "  db list   list the tuned problems in the database\n"
    "  db show   show one problem's trials and winner\n"
    "  db check  check the database's integrity\n"
    "  db export / import / merge   move results between databases\n"
    "\n"
    "Run `convtune COMMAND --help` for a command's options.\n"
    "The database is --db PATH, else $CONVTUNE_DB, else\n"
    "$XDG_CACHE_HOME/convtune/tuning.db, else ~/.cache/convtune/tuning.db.\n";

/* ---------------------------------------------------------------------- */
/* Options                                                                 */

/* Each option's getopt_long value (above every character). */
enum {
  OPT_PROBLEM = 256, OPT_PROBLEMS, OPT_SHARD, OPT_LEVEL1, OPT_DEVICES, OPT_PRECISION, OPT_DB, OPT_ARCH, OPT_DEVICE,
  OPT_THREADS, OPT_TRIALS, OPT_FINAL_TRIALS, OPT_FINALISTS, OPT_SEED,
  OPT_MAX_VARIANTS, OPT_BUDGET, OPT_WATCHDOG, OPT_FAMILIES, OPT_OUT,
  OPT_FORCE, OPT_FRESH, OPT_WEIGHTED, OPT_NO_ISOLATE, OPT_NO_PRIORS, OPT_CUBINS, OPT_PACKED, OPT_JSON, OPT_QUIET,
  OPT_HELP = 'h'
};

/* Every option of every command; a command takes the ones its table
** lists. */
static const struct option cli_options[] = {
    {"problem", required_argument, NULL, OPT_PROBLEM},
    {"problems", required_argument, NULL, OPT_PROBLEMS},
    {"shard", required_argument, NULL, OPT_SHARD},
    {"level1", required_argument, NULL, OPT_LEVEL1},
    {"devices", required_argument, NULL, OPT_DEVICES},
    {"precision", required_argument, NULL, OPT_PRECISION},
    {"db", required_argument, NULL, OPT_DB},
    {"arch", required_argument, NULL, OPT_ARCH},
    {"device", required_argument, NULL, OPT_DEVICE},
    {"threads", required_argument, NULL, OPT_THREADS},
    {"trials", required_argument, NULL, OPT_TRIALS},
    {"final-trials", required_argument, NULL, OPT_FINAL_TRIALS},
    {"finalists", required_argument, NULL, OPT_FINALISTS},
    {"seed", required_argument, NULL, OPT_SEED},
    {"max-variants", required_argument, NULL, OPT_MAX_VARIANTS},
    {"budget", required_argument, NULL, OPT_BUDGET},
    {"watchdog", required_argument, NULL, OPT_WATCHDOG},
    {"families", required_argument, NULL, OPT_FAMILIES},
    {"out", required_argument, NULL, OPT_OUT},
    {"force", no_argument, NULL, OPT_FORCE},
    {"fresh", no_argument, NULL, OPT_FRESH},
    {"weighted", no_argument, NULL, OPT_WEIGHTED},
    {"no-isolate", no_argument, NULL, OPT_NO_ISOLATE},
    {"no-priors", no_argument, NULL, OPT_NO_PRIORS},
    {"cubins", no_argument, NULL, OPT_CUBINS},
    {"packed", no_argument, NULL, OPT_PACKED},
    {"json", no_argument, NULL, OPT_JSON},
    {"quiet", no_argument, NULL, OPT_QUIET},
    {"help", no_argument, NULL, OPT_HELP},
};
#define CLI_N_OPTIONS (sizeof cli_options / sizeof cli_options[0])

/* ---------------------------------------------------------------------- */
/* The command table                                                       */

typedef struct cli_command {
  const char *name;             /* "tune", "db show" */
  int (*run)(const ct_cli *c);  /* the command */
  const char *usage;            /* --help's text */
  const char *synopsis;         /* the usage line of errors; NULL: usage's
                                   lines up to the first blank one */
  const int *options;           /* the options it takes, 0-terminated */
  int min_args, max_args;       /* positional arguments */
  const char *missing;          /* said when too few are given */
} cli_command;

#define P_PROBLEM OPT_PROBLEM, OPT_PRECISION
static const int opts_space[] = {P_PROBLEM, OPT_ARCH, OPT_DEVICE, OPT_FAMILIES,
                                 OPT_JSON, OPT_HELP, 0};
static const int opts_tune[] = {P_PROBLEM, OPT_PROBLEMS, OPT_SHARD, OPT_WEIGHTED, OPT_DEVICES, OPT_DB, OPT_DEVICE, OPT_THREADS,
                                OPT_TRIALS, OPT_FINAL_TRIALS, OPT_FINALISTS,
                                OPT_SEED, OPT_MAX_VARIANTS, OPT_BUDGET,
                                OPT_FAMILIES, OPT_FRESH, OPT_NO_PRIORS, OPT_WATCHDOG,
                                OPT_NO_ISOLATE, OPT_JSON, OPT_QUIET, OPT_HELP, 0};
static const int opts_check[] = {P_PROBLEM, OPT_PROBLEMS, OPT_DB, OPT_DEVICE, OPT_TRIALS,
                                 OPT_SEED, OPT_PACKED, OPT_JSON, OPT_HELP, 0};
static const int opts_report[] = {P_PROBLEM, OPT_DB, OPT_OUT, OPT_FORCE,
                                  OPT_HELP, 0};
static const int opts_db_json[] = {OPT_DB, OPT_JSON, OPT_HELP, 0};
static const int opts_kernelbench[] = {OPT_PROBLEM, OPT_LEVEL1, OPT_DB, OPT_ARCH, OPT_OUT,
                                       OPT_FORCE, OPT_HELP, 0};
static const int opts_db_list[] = {OPT_DB, OPT_PROBLEMS, OPT_PRECISION, OPT_JSON, OPT_HELP, 0};
static const int opts_db[] = {OPT_DB, OPT_HELP, 0};
static const int opts_db_export[] = {OPT_DB, OPT_OUT, OPT_CUBINS, OPT_FORCE,
                                     OPT_HELP, 0};

static const cli_command cli_commands[] = {
    {"space", ct_cli_space, ct_cli_usage_space, NULL, opts_space, 0, 0, NULL},
    {"tune", ct_cli_tune, ct_cli_usage_tune, NULL, opts_tune, 0, 0, NULL},
    {"check", ct_cli_check, ct_cli_usage_check, NULL, opts_check, 0, 0, NULL},
    {"report", ct_cli_report, ct_cli_usage_report, NULL, opts_report, 0, 1,
     NULL},
    {"kernelbench", ct_cli_kernelbench, ct_cli_usage_kernelbench, NULL, opts_kernelbench, 0,
     0, NULL},
    {"db list", ct_cli_db_list, ct_cli_usage_db,
     "usage: convtune db list [--db PATH] [--problems FILE [--precision P]] [--json]",
     opts_db_list, 0, 0, NULL},
    {"db show", ct_cli_db_show, ct_cli_usage_db,
     "usage: convtune db show ID [--db PATH] [--json]", opts_db_json, 1, 1,
     "needs one problem ID (see `convtune db list`)"},
    {"db check", ct_cli_db_check, ct_cli_usage_db,
     "usage: convtune db check [--db PATH]", opts_db, 0, 0, NULL},
    {"db export", ct_cli_db_export, ct_cli_usage_db,
     "usage: convtune db export [--db PATH] [--out FILE [--force]] [--cubins]",
     opts_db_export, 0, 0, NULL},
    {"db import", ct_cli_db_import, ct_cli_usage_db,
     "usage: convtune db import FILE [--db PATH]", opts_db, 1, 1,
     "needs one FILE (\"-\" for stdin)"},
    {"db merge", ct_cli_db_merge, ct_cli_usage_db,
     "usage: convtune db merge OTHER.db [--db PATH]", opts_db, 1, 1,
     "needs one OTHER.db"},
};
#define CLI_N_COMMANDS (sizeof cli_commands / sizeof cli_commands[0])

/* Says "convtune CMD: MESSAGE" and the command's usage line on stderr;
** returns CT_CLI_EXIT_USAGE. */
static int cli_usage_error(const cli_command *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int cli_usage_error(const cli_command *cmd, const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "convtune %s: ", cmd->name);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  if (cmd->synopsis) {
    fprintf(stderr, "\n%s\n", cmd->synopsis);
  } else {
    const char *end = strstr(cmd->usage, "\n\n");
    fprintf(stderr, "\n%.*s\n", end ? (int)(end - cmd->usage) : (int)strlen(cmd->usage),
            cmd->usage);
  }
  fprintf(stderr, "(`convtune %s --help` says more)\n", cmd->name);
  return CT_CLI_EXIT_USAGE;
}

/* The entry of cli_options with getopt value val. */
static const struct option *cli_option(int val) {
  for (size_t i = 0; i < CLI_N_OPTIONS; i++)
    if (cli_options[i].val == val) return &cli_options[i];
  return NULL;
}

static int parse_seconds(const char *opt, const char *text, double *out) {
  char *end;
  errno = 0;
  double v = strtod(text, &end);
  if (errno || end == text || *end || !(v > 0) || v > 1e7) {
    fprintf(stderr, "convtune: --%s wants a number of seconds > 0, not '%s'\n",
            opt, text);
    return -1;
  }
  *out = v;
  return 0;
}

/* Stores option val's value (text, NULL for a flag) in *c.  Returns 0, or
** -1 after saying why the value is wrong. */
static int cli_set(ct_cli *c, int val, const char *text) {
  struct { int val; long lo, hi; int *dst; } ints[] = {
      {OPT_DEVICE, 0, 1023, &c->device},
      {OPT_THREADS, 1, 1024, &c->threads},
      {OPT_TRIALS, 1, 100000, &c->trials},
      {OPT_FINAL_TRIALS, 1, 100000, &c->final_trials},
      {OPT_FINALISTS, 1, 1000, &c->finalists},
      {OPT_LEVEL1, 1, 100000, &c->level1},
  };
  const char *name = cli_option(val)->name;
  char opt[32], err[512];
  long v;
  snprintf(opt, sizeof opt, "--%s", name);
  for (size_t j = 0; j < sizeof ints / sizeof ints[0]; j++) {
    if (ints[j].val != val) continue;
    if (ct_cli_parse_int(opt, text, ints[j].lo, ints[j].hi, &v)) return -1;
    *ints[j].dst = (int)v;
    return 0;
  }
  switch (val) {
  case OPT_PROBLEM: c->problem = text; break;
  case OPT_PROBLEMS: c->problems = text; break;
  case OPT_DEVICES: c->devices = text; break;
  case OPT_SHARD: {
    char *end;
    errno = 0;
    long i = strtol(text, &end, 10), n = -1;
    if (!errno && end != text && *end == '/' && end[1] && end[1] != '-' && end[1] != '+') {
      const char *ns = end + 1;
      n = strtol(ns, &end, 10);
      if (errno || end == ns || *end) n = -1;
    }
    if (n < 1 || n > 100000 || i < 0 || i >= n || text[0] == '-' || text[0] == '+') {
      fprintf(stderr, "convtune: --shard wants I/N with 0 <= I < N <= 100000, not '%s'\n", text);
      return -1;
    }
    c->shard_i = (int)i;
    c->shard_n = (int)n;
    break;
  }
  case OPT_PRECISION: {
    ct_precision prec;
    if (ct_precision_parse(text, &prec) != CT_OK) {
      fprintf(stderr, "convtune: --precision must be tf32 or fp32, not '%s'\n", text);
      return -1;
    }
    c->precision = text;
    break;
  }
  case OPT_DB: c->db = text; break;
  case OPT_ARCH: c->arch = text; break;
  case OPT_OUT: c->out = text; break;
  case OPT_FAMILIES:
    if (ct_tune_families_check(text, err, sizeof err) != CT_OK) {
      fprintf(stderr, "convtune: --families: %s\n", err);
      return -1;
    }
    c->families = text;
    break;
  case OPT_BUDGET: return parse_seconds(name, text, &c->budget);
  case OPT_WATCHDOG: return parse_seconds(name, text, &c->watchdog);
  case OPT_MAX_VARIANTS:
    if (ct_cli_parse_int(opt, text, 1, 1000000, &v)) return -1;
    c->max_variants = v;
    break;
  case OPT_SEED: {
    char *end;
    errno = 0;
    c->seed = strtoull(text, &end, 0);
    if (errno || *end || end == text || c->seed == 0 || text[0] == '-') {
      fprintf(stderr, "convtune: --seed wants a non-zero integer, not '%s'\n", text);
      return -1;
    }
    break;
  }
  case OPT_FORCE: c->force = 1; break;
  case OPT_FRESH: c->fresh = 1; break;
  case OPT_WEIGHTED: c->weighted = 1; break;
  case OPT_NO_ISOLATE: c->no_isolate = 1; break;
  case OPT_NO_PRIORS: c->no_priors = 1; break;
  case OPT_CUBINS: c->cubins = 1; break;
  case OPT_PACKED: c->packed = 1; break;
  case OPT_JSON: c->json = 1; break;
  case OPT_QUIET: c->quiet = 1; break;
  case OPT_HELP: c->help = 1; break;
  }
  return 0;
}

/* Parses the options of cmd in argv[1..argc) (argv[0] is the command's
** name) with getopt_long: --opt value, --opt=value, options and arguments
** in any order, "--" ends the options.  Returns 0, or CT_CLI_EXIT_USAGE
** after saying what is wrong and the command's usage line. */
static int cli_parse(const cli_command *cmd, int argc, char **argv, ct_cli *c) {
  struct option longs[CLI_N_OPTIONS + 1];
  size_t n = 0;
  memset(c, 0, sizeof *c);
  memset(longs, 0, sizeof longs);
  for (const int *o = cmd->options; *o; o++) longs[n++] = *cli_option(*o);
  opterr = 0;
  optind = 0; /* 0: glibc starts a fresh scan */
  for (;;) {
    int ch = getopt_long(argc, argv, ":h", longs, NULL);
    if (ch == -1) break;
    const char *arg = argv[optind - 1];
    if (ch == ':') {
      const struct option *o = cli_option(optopt);
      return cli_usage_error(cmd, "--%s needs a value", o ? o->name : "?");
    }
    if (ch == '?') {
      if (optopt != 0 && optopt != '?' && cli_option(optopt) && strchr(arg, '='))
        return cli_usage_error(cmd, "--%s takes no value", cli_option(optopt)->name);
      if (arg[0] == '-' && arg[1] == '-') {
        size_t len = strcspn(arg + 2, "=");
        for (size_t i = 0; i < CLI_N_OPTIONS; i++)
          if (strlen(cli_options[i].name) == len &&
              strncmp(cli_options[i].name, arg + 2, len) == 0)
            return cli_usage_error(cmd, "--%s is not an option of `convtune %s`",
                                   cli_options[i].name, cmd->name);
        return cli_usage_error(cmd, "unknown option %.*s", (int)len + 2, arg);
      }
      return cli_usage_error(cmd, "unknown option -%c", optopt ? optopt : '?');
    }
    if (cli_set(c, ch, optarg)) return CT_CLI_EXIT_USAGE;
  }
  if (c->help) return 0;
  for (int i = optind; i < argc; i++) {
    if (c->n_args == cmd->max_args)
      return cli_usage_error(cmd, "unexpected argument '%s'", argv[i]);
    c->args[c->n_args++] = argv[i];
  }
  if (c->n_args < cmd->min_args)
    return cli_usage_error(cmd, "%s", cmd->missing);
  return 0;
}

/* The command line of the command at cmd; returns the exit status. */
static int cli_run(const cli_command *cmd, int argc, char **argv) {
  ct_cli c;
  int rc = cli_parse(cmd, argc, argv, &c);
  if (rc) return rc;
  if (c.help) {
    fputs(cmd->usage, stdout);
    return 0;
  }
  return cmd->run(&c);
}

static int cli_main(int argc, char **argv) {
  if (argc < 2) {
    fputs(usage_main, stderr);
    return CT_CLI_EXIT_USAGE;
  }
  const char *name = argv[1];
  if (!strcmp(name, "--help") || !strcmp(name, "-h") || !strcmp(name, "help")) {
    fputs(usage_main, stdout);
    return 0;
  }
  if (!strcmp(name, "--version")) {
    printf("convtune %s\n", CT_VERSION);
    return 0;
  }
  if (!strcmp(name, "db")) {
    const char *sub = argc > 2 ? argv[2] : NULL;
    if (sub && (!strcmp(sub, "--help") || !strcmp(sub, "-h"))) {
      fputs(ct_cli_usage_db, stdout);
      return 0;
    }
    for (size_t i = 0; sub && i < CLI_N_COMMANDS; i++)
      if (!strncmp(cli_commands[i].name, "db ", 3) && !strcmp(cli_commands[i].name + 3, sub))
        return cli_run(&cli_commands[i], argc - 2, argv + 2);
    if (sub == NULL)
      fprintf(stderr, "convtune db: needs a subcommand\n\n");
    else if (sub[0] == '-')
      fprintf(stderr, "convtune db: the subcommand comes first, not '%s'\n\n", sub);
    else
      fprintf(stderr, "convtune db: unknown subcommand '%s'\n\n", sub);
    fputs(ct_cli_usage_db, stderr);
    return CT_CLI_EXIT_USAGE;
  }
  for (size_t i = 0; i < CLI_N_COMMANDS; i++)
    if (!strcmp(cli_commands[i].name, name))
      return cli_run(&cli_commands[i], argc - 1, argv + 1);
  fprintf(stderr, "convtune: unknown command '%s'\n\n%s", name, usage_main);
  return CT_CLI_EXIT_USAGE;
}

/* Flushes and closes stdout: output that never arrived (a full disk, a
** closed pipe) must not pass for success.  Returns rc, or 1 when rc is 0
** and the output failed (after saying why on stderr). */
static int cli_close_stdout(int rc) {
  int failed = ferror(stdout), e = 0;
  if (fflush(stdout) != 0) failed = 1, e = errno;
  if (fclose(stdout) != 0 && !failed) failed = 1, e = errno;
  if (!failed) return rc;
  if (e) fprintf(stderr, "convtune: writing the standard output: %s\n", strerror(e));
  else fprintf(stderr, "convtune: writing the standard output failed\n");
  return rc ? rc : 1;
}

int main(int argc, char **argv) {
  /* The tuner's isolated GPU worker (ct_tune.h); not for people. */
  if (argc >= 2 && !strcmp(argv[1], CT_TUNE_WORKER_ARG))
    return ct_tune_worker_main(argc, argv);
  return cli_close_stdout(cli_main(argc, argv));
}
