/*
** main.c — the `convtune` command line: space, tune, check, report, db
** list/show/export/import/merge; and the hidden `__ct_worker` command the
** tuner starts its isolated GPU worker with.
*/
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ct_cache.h"
#include "ct_drv.h"
#include "ct_tune.h"

#define EXIT_USAGE 2

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

static const char *usage_tune =
    "usage: convtune tune [--problem SPEC] [--precision tf32|fp32] [--db PATH]\n"
    "                     [--device N] [--threads N] [--trials N]\n"
    "                     [--final-trials N] [--finalists N] [--seed N]\n"
    "                     [--max-variants N] [--budget SECONDS]\n"
    "                     [--families LIST] [--fresh] [--watchdog SECONDS]\n"
    "                     [--no-isolate] [--json] [--quiet]\n"
    "\n"
    "Generates the valid variants of the problem, compiles them with NVRTC\n"
    "(--threads, default every core; cubins compiled before come from the\n"
    "database's compile cache), checks each against a float64 reference on\n"
    "fresh random inputs, times those that pass (--trials screening trials,\n"
    "default 10), re-checks and re-times the --finalists fastest (default 3)\n"
    "with the full protocol (--final-trials, default 100: L2 flushed before\n"
    "each, one discarded) and stores the winner and its cubin in the database.\n"
    "Every trial is committed the moment it finishes.  SPEC defaults to the\n"
    "headline problem:\n"
    "  n=256,c=3,h=224,w=224,k=96,r=11,s=11,stride=4,pad=2,dil=1,bias=1,prec=tf32\n"
    "--precision overrides the spec's prec.  --seed fixes the inputs.\n"
    "\n"
    "Search: every variant when there are at most 512 (else 512 of them).\n"
    "--max-variants N screens at most N, --budget SECONDS stops screening in\n"
    "time for the finalists; both pick variants by a stratified sample of each\n"
    "family, then local search around the fastest.  --families tc,wg limits\n"
    "the search to those families.\n"
    "\n"
    "Resume: a variant already recorded for this problem, device and source is\n"
    "not screened again (its trial stands), so a rerun after an interruption\n"
    "continues where it stopped; the finalists are always re-timed.  --fresh\n"
    "screens everything again.\n"
    "\n"
    "Isolation: the GPU work runs in a child process; a variant that faults or\n"
    "hangs (no answer within --watchdog seconds, default 10, plus time for\n"
    "large outputs) is recorded as faulted / timeout and the child restarted.\n"
    "--no-isolate runs it in this process (no watchdog; a fault ends the tune).\n"
    "SIGINT / SIGTERM stop it cleanly: the variant in flight is dropped,\n"
    "everything finished is kept; exit status 130 / 143.\n"
    "\n"
    "Progress: one updating line on a terminal, one line per variant in a\n"
    "pipe (stderr with --json); --quiet drops it.  --json prints the result\n"
    "as JSON on stdout.\n";

static const char *usage_check =
    "usage: convtune check [--problem SPEC] [--precision tf32|fp32] [--db PATH]\n"
    "                      [--device N] [--trials N] [--seed N] [--json]\n"
    "\n"
    "Runs what the runtime library would run for the problem (the tuned\n"
    "winner, else the nearest tuned problem's winner, else a default\n"
    "variant; it prints which and why, and the database's state) on fresh\n"
    "random inputs, verifies it against a float64 reference under the\n"
    "problem's precision contract and times it with the full protocol\n"
    "(--trials, default 100).  Exits 1 when the result fails its contract.\n";

static const char *usage_space =
    "usage: convtune space [--problem SPEC] [--precision tf32|fp32]\n"
    "                      [--arch ARCH | --device N] [--families LIST] [--json]\n"
    "\n"
    "Lists every valid variant of the problem: family, parameters, threads,\n"
    "shared memory, grid.  --arch plans against a named architecture's\n"
    "limits (sm_80, sm_89, sm_90, sm_90a) and needs no GPU; without it the\n"
    "attached GPU's limits are read (device --device, default 0).\n";

static const char *usage_db =
    "usage: convtune db list [--db PATH] [--json]\n"
    "       convtune db show ID [--db PATH] [--json]\n"
    "       convtune db check [--db PATH]\n"
    "       convtune db export [--db PATH] [--out FILE] [--cubins]\n"
    "       convtune db import FILE [--db PATH]\n"
    "       convtune db merge OTHER.db [--db PATH]\n"
    "\n"
    "list: one line per tuned problem and device: id, spec, trials, winner.\n"
    "show: every trial of problem ID and its winner.\n"
    "check: PRAGMA integrity_check, foreign keys and every stored cubin's hash.\n"
    "export: the whole database as text (stdout, or --out FILE): devices,\n"
    "problems, trials, winners with their cubins; --cubins adds the compile\n"
    "cache.  The format is documented in cache/ct_cache.h.\n"
    "import: reads such a file (\"-\": stdin) into the database, all or\n"
    "nothing; importing twice adds nothing twice.  Entries keep their device,\n"
    "driver and NVRTC version, so the runtime uses them only on a matching\n"
    "machine; a winner replaces a local one only when it is newer.\n"
    "merge: imports another database file the same way.\n"
    "None of these needs a GPU.\n";

static const char *usage_report =
    "usage: convtune report [ID] [--problem SPEC] [--precision tf32|fp32]\n"
    "                       [--db PATH] [--out FILE.svg]\n"
    "\n"
    "Writes an SVG chart of every trial of a problem (problem ID of `convtune\n"
    "db list`, else --problem, default the headline problem) on the device\n"
    "of its winner: one bar per variant (its latest timed mean), coloured by\n"
    "family, the winner marked, failed variants listed with their status.\n"
    "--out defaults to convtune-report.svg.  Needs no GPU.\n";

/* ---------------------------------------------------------------------- */
/* Options                                                                 */

typedef struct cli {
  const char *problem;     /* --problem */
  const char *precision;   /* --precision */
  const char *db;          /* --db */
  const char *arch;        /* --arch */
  int device;              /* --device */
  int threads;             /* --threads */
  int trials;              /* --trials (0: the command's default) */
  int final_trials;        /* --final-trials */
  int finalists;           /* --finalists */
  uint64_t seed;           /* --seed */
  long max_variants;       /* --max-variants */
  double budget;           /* --budget seconds */
  double watchdog;         /* --watchdog seconds (0: default) */
  const char *families;    /* --families */
  const char *out;         /* --out */
  int fresh, no_isolate;   /* --fresh, --no-isolate */
  int cubins;              /* --cubins */
  int json, quiet, help;
  const char *args[4];     /* positional arguments */
  int n_args;
} cli;

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

static int parse_int(const char *opt, const char *text, long lo, long hi,
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

/* Parses argv[first..]; returns 0 or EXIT_USAGE after saying why. */
static int parse_cli(int argc, char **argv, int first, cli *c) {
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
        return EXIT_USAGE;
      }
      i++;
      if (!strcmp(a, "--problem")) c->problem = val;
      else if (!strcmp(a, "--precision")) c->precision = val;
      else if (!strcmp(a, "--db")) c->db = val;
      else if (!strcmp(a, "--arch")) c->arch = val;
      else if (!strcmp(a, "--families")) c->families = val;
      else if (!strcmp(a, "--out")) c->out = val;
      else if (!strcmp(a, "--budget")) {
        if (parse_seconds(a, val, &c->budget)) return EXIT_USAGE;
      } else if (!strcmp(a, "--watchdog")) {
        if (parse_seconds(a, val, &c->watchdog)) return EXIT_USAGE;
      } else if (!strcmp(a, "--max-variants")) {
        if (parse_int(a, val, 1, 1000000, &c->max_variants)) return EXIT_USAGE;
      }
      else if (!strcmp(a, "--seed")) {
        char *end;
        errno = 0;
        c->seed = strtoull(val, &end, 0);
        if (errno || *end || end == val || c->seed == 0) {
          fprintf(stderr, "convtune: --seed wants a non-zero integer, not '%s'\n", val);
          return EXIT_USAGE;
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
          return EXIT_USAGE;
        }
        if (parse_int(a, val, ints[j].lo, ints[j].hi, &v)) return EXIT_USAGE;
        *ints[j].dst = (int)v;
      }
      continue;
    }
    if (c->n_args == (int)(sizeof c->args / sizeof c->args[0])) {
      fprintf(stderr, "convtune: unexpected argument '%s'\n", a);
      return EXIT_USAGE;
    }
    c->args[c->n_args++] = a;
  }
  return 0;
}

/* The problem from --problem and --precision; 0 or EXIT_USAGE. */
static int cli_problem(const cli *c, ct_problem *p) {
  char err[256];
  if (c->problem) {
    if (ct_problem_parse(c->problem, p, err, sizeof err) != CT_OK) {
      fprintf(stderr, "convtune: --problem: %s\n", err);
      return EXIT_USAGE;
    }
  } else {
    ct_problem_default(p);
  }
  if (c->precision && ct_precision_parse(c->precision, &p->precision) != CT_OK) {
    fprintf(stderr, "convtune: --precision must be tf32 or fp32, not '%s'\n",
            c->precision);
    return EXIT_USAGE;
  }
  return 0;
}

/* The database path: --db, else the default; 0 or 1. */
static int cli_db(const cli *c, char *buf, size_t len) {
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

static void json_str(FILE *f, const char *s) {
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
static void json_num(FILE *f, double v) {
  if (isfinite(v)) fprintf(f, "%.9g", v);
  else fputs("null", f);
}

static void json_trial(FILE *f, const ct_cache_trial *t) {
  fprintf(f, "{\"id\": %" PRId64 ", \"variant\": ", t->id);
  json_str(f, t->variant);
  fputs(", \"status\": ", f);
  json_str(f, ct_trial_status_name(t->status));
  fputs(", \"mean_ms\": ", f); json_num(f, t->mean_ms);
  fputs(", \"median_ms\": ", f); json_num(f, t->median_ms);
  fputs(", \"min_ms\": ", f); json_num(f, t->min_ms);
  fputs(", \"max_ms\": ", f); json_num(f, t->max_ms);
  fprintf(f, ", \"n_timed\": %d", t->n_timed);
  fputs(", \"max_abs_err\": ", f); json_num(f, t->max_abs_err);
  fputs(", \"rel_err\": ", f); json_num(f, t->rel_err);
  fputs(", \"compile_ms\": ", f); json_num(f, t->compile_ms);
  fprintf(f, ", \"regs\": %d, \"spill_bytes\": %d, \"smem_bytes\": %d, "
             "\"source_hash\": \"%016" PRIx64 "\", \"created_at\": %" PRId64
             ", \"message\": ",
          t->regs, t->spill_bytes, t->smem_bytes, t->source_hash, t->created_at);
  json_str(f, t->message);
  fputc('}', f);
}

static void print_trial_header(void) {
  printf("%-9s %-14s %10s %10s %10s %10s %4s %9s  %s\n", "trial", "status",
         "mean ms", "median ms", "max abs", "rel err", "regs", "compile s",
         "variant");
}

static void print_trial(const ct_cache_trial *t, const char *mark) {
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

/* ---------------------------------------------------------------------- */
/* Commands                                                                */

/* The signal that stopped a tune (0: none).  The first SIGINT / SIGTERM
** asks the tuner to stop cleanly; the handler then resets itself, so a
** second one ends the process at once (the database stays consistent). */
static volatile sig_atomic_t tune_stop;

static void on_stop_signal(int sig) { tune_stop = sig; }

static void tune_signals(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_stop_signal;
  sa.sa_flags = SA_RESETHAND;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
}

static const char *origin_name(ct_tune_origin o) {
  return o == CT_TUNE_RESUMED ? "resumed" : o == CT_TUNE_SCREENED ? "screened"
                                                                  : "untried";
}

/* The start of the commands on one problem (tune, check, space): --help
** prints usage, a positional argument is refused, the problem goes to *p.
** Returns -1 to go on, else the exit status. */
static int cmd_problem_start(const cli *c, const char *name, const char *usage,
                             ct_problem *p) {
  if (c->help) { fputs(usage, stdout); return 0; }
  if (c->n_args) { fprintf(stderr, "convtune %s: unexpected argument '%s'\n", name, c->args[0]); return EXIT_USAGE; }
  int rc = cli_problem(c, p);
  return rc ? rc : -1;
}

static int cmd_tune(const cli *c) {
  ct_tune_options o;
  ct_tune_options_default(&o);
  int rc = cmd_problem_start(c, "tune", usage_tune, &o.problem);
  if (rc >= 0) return rc;
  char db[4096];
  if (cli_db(c, db, sizeof db)) return 1;
  o.db_path = db;
  o.device = c->device;
  o.threads = c->threads;
  if (c->trials) o.screen_trials = c->trials;
  if (c->final_trials) o.final_trials = c->final_trials;
  if (c->finalists) o.finalists = c->finalists;
  o.seed = c->seed;
  o.resume = !c->fresh;
  o.max_variants = (size_t)c->max_variants;
  o.budget_s = c->budget;
  o.families = c->families;
  if (c->watchdog > 0) o.watchdog_s = c->watchdog;
  o.worker_exe = c->no_isolate ? NULL : "/proc/self/exe";
  o.progress = c->quiet ? NULL : (c->json ? stderr : stdout);
  o.progress_bar = o.progress != NULL && isatty(fileno(o.progress));
  o.stop = &tune_stop;
  tune_signals();

  ct_tune_result r;
  char err[1024];
  /* The handlers stay until the command returns: a signal that lands
  ** after the tune finished is reported too, not a silent death. */
  ct_status st = ct_tune_run(&o, &r, err, sizeof err);
  if (st != CT_OK) {
    fprintf(stderr, "convtune tune: %s\n", err);
    ct_tune_result_free(&r);
    if (tune_stop) return 128 + tune_stop;
    return 1;
  }
  size_t n_tried = 0, n_timed = 0, n_wrong = 0, n_failed = 0;
  for (size_t i = 0; i < r.n_rows; i++) {
    if (r.rows[i].origin == CT_TUNE_UNTRIED) continue;
    ct_trial_status s = r.rows[i].trial.status;
    n_tried++;
    n_timed += s == CT_TRIAL_TIMED;
    n_wrong += s == CT_TRIAL_WRONG;
    n_failed += s != CT_TRIAL_TIMED && s != CT_TRIAL_WRONG;
  }
  double per_s = r.wall_s > 0 ? (double)r.n_screened / r.wall_s : 0.0;
  if (c->json) {
    printf("{\"problem\": ");
    json_str(stdout, r.spec);
    printf(", \"device\": ");
    json_str(stdout, r.device.name);
    printf(", \"arch\": ");
    json_str(stdout, r.device.arch);
    printf(", \"db\": ");
    json_str(stdout, db);
    printf(", \"seed\": %" PRIu64 ", \"wall_s\": %.3f, \"compile_s\": %.3f, "
           "\"threads\": %d, \"search\": \"%s\", \"variants\": %zu, "
           "\"screened\": %zu, \"resumed\": %zu, \"compiled\": %zu, "
           "\"cached\": %zu, \"restarts\": %d, \"variants_per_s\": %.3f, "
           "\"interrupted\": %s, \"winner\": ",
           r.seed, r.wall_s, r.compile_s, r.threads,
           r.budgeted ? "budgeted" : "exhaustive", r.n_rows, r.n_screened,
           r.n_resumed, r.n_compiled, r.n_cached, r.restarts, per_s,
           r.interrupted ? "true" : "false");
    if (r.winner >= 0) json_str(stdout, r.rows[r.winner].trial.variant);
    else fputs("null", stdout);
    printf(", \"winner_mean_ms\": ");
    json_num(stdout, r.winner >= 0 ? r.rows[r.winner].trial.mean_ms : NAN);
    printf(", \"trials\": [");
    int first = 1;
    for (size_t i = 0; i < r.n_rows; i++) {
      if (r.rows[i].origin == CT_TUNE_UNTRIED) continue;
      if (!first) fputs(", ", stdout);
      first = 0;
      json_trial(stdout, &r.rows[i].trial);
    }
    printf("], \"rows\": [");
    first = 1;
    for (size_t i = 0; i < r.n_rows; i++) {
      if (r.rows[i].origin == CT_TUNE_UNTRIED) continue;
      printf("%s{\"variant\": ", first ? "" : ", ");
      first = 0;
      json_str(stdout, r.rows[i].trial.variant);
      printf(", \"origin\": \"%s\", \"finalist\": %s, \"cubin_cached\": %s}",
             origin_name(r.rows[i].origin), r.rows[i].finalist ? "true" : "false",
             r.rows[i].cubin_cached ? "true" : "false");
    }
    printf("]}\n");
  } else {
    printf("\nproblem  %s\ndevice   %s (%s, %d SMs, driver %d, NVRTC %s)\n"
           "database %s\nseed     %" PRIu64 "\n\n",
           r.spec, r.device.name, r.device.arch, r.device.sm_count,
           r.device.driver_version, r.device.nvrtc_version, db, r.seed);
    print_trial_header();
    for (size_t i = 0; i < r.n_rows; i++) {
      const ct_tune_row *row = &r.rows[i];
      if (row->origin == CT_TUNE_UNTRIED) continue;
      print_trial(&row->trial, (long)i == r.winner ? "  <- winner"
                               : row->finalist ? "  (finalist)"
                               : row->origin == CT_TUNE_RESUMED ? "  (resumed)" : "");
    }
    printf("\n%zu variants: %zu timed, %zu wrong, %zu failed; %.1f s wall, "
           "%.1f s NVRTC on %d threads (%.1f variants/s)\n",
           n_tried, n_timed, n_wrong, n_failed, r.wall_s, r.compile_s,
           r.threads, per_s);
    printf("search   %s: %zu of %zu variants screened now, %zu resumed from "
           "the database; %zu compiled, %zu cubins from the compile cache",
           r.budgeted ? "budgeted" : "exhaustive", r.n_screened, r.n_rows,
           r.n_resumed, r.n_compiled, r.n_cached);
    if (r.restarts) printf("; GPU worker restarted %d times", r.restarts);
    printf("\n");
    if (r.winner >= 0) {
      const ct_cache_trial *t = &r.rows[r.winner].trial;
      printf("winner   %s\n         mean %.4f ms, median %.4f ms, min %.4f, max "
             "%.4f (%d trials)\n",
             t->variant, t->mean_ms, t->median_ms, t->min_ms, t->max_ms, t->n_timed);
    }
  }
  fflush(stdout);
  if (r.interrupted) {
    int sig = tune_stop ? tune_stop : SIGINT;
    fprintf(stderr, "convtune tune: interrupted by %s: the variant in flight "
                    "was dropped, the %zu trials finished in this run are "
                    "kept; run the same command again to resume\n",
            sig == SIGTERM ? "SIGTERM" : "SIGINT", r.n_screened);
    ct_tune_result_free(&r);
    return 128 + sig;
  }
  int ok = r.winner >= 0;
  if (!ok) fprintf(stderr, "convtune tune: no variant passed its precision contract\n");
  ct_tune_result_free(&r);
  if (tune_stop) {
    fprintf(stderr, "convtune tune: interrupted by %s after the tune had "
                    "finished: everything above is recorded\n",
            tune_stop == SIGTERM ? "SIGTERM" : "SIGINT");
    return 128 + tune_stop;
  }
  return ok ? 0 : 1;
}

static int cmd_check(const cli *c) {
  ct_problem p;
  int rc = cmd_problem_start(c, "check", usage_check, &p);
  if (rc >= 0) return rc;
  char db[4096];
  if (cli_db(c, db, sizeof db)) return 1;
  int trials = c->trials ? c->trials : 100;
  char err[1024], spec[CT_PROBLEM_SPEC_MAX];
  ct_problem_format(&p, spec, sizeof spec);

  ct_tune_gpu g;
  ct_tune_data d;
  memset(&d, 0, sizeof d);
  ct_context *ctx = NULL;
  int exit_code = 1;
  if (ct_tune_gpu_open(c->device, &g, err, sizeof err) != CT_OK) {
    fprintf(stderr, "convtune check: %s\n", err);
    return 1;
  }
  if (ct_open(db, c->device, &ctx) != CT_OK) {
    fprintf(stderr, "convtune check: %s\n", ct_open_error());
    goto out;
  }
  uint64_t seed = c->seed ? c->seed : ct_tune_fresh_seed();
  if (ct_tune_data_create(&g, &p, seed, &d, err, sizeof err) != CT_OK) {
    fprintf(stderr, "convtune check: %s\n", err);
    goto out;
  }
  ct_tune_check chk;
  if (ct_tune_verify(&g, &d, ct_tune_run_forward, ctx, &chk, err, sizeof err) != CT_OK) {
    fprintf(stderr, "convtune check: %s\n", err);
    goto out;
  }
  ct_path path;
  char variant[CT_GEN_NAME_MAX];
  ct_forward_path(ctx, &p, &path, variant, sizeof variant);
  char why[1024], dbmsg[512];
  ct_forward_reason(ctx, &p, why, sizeof why);
  ct_database_status(ctx, dbmsg, sizeof dbmsg);
  ct_tune_stats st;
  memset(&st, 0, sizeof st);
  st.mean_ms = st.median_ms = st.min_ms = st.max_ms = NAN;
  if (chk.passes &&
      ct_tune_time(&g, &d, ct_tune_run_forward, ctx, trials, &st, err, sizeof err) != CT_OK) {
    fprintf(stderr, "convtune check: %s\n", err);
    goto out;
  }
  if (c->json) {
    printf("{\"problem\": ");
    json_str(stdout, spec);
    printf(", \"device\": ");
    json_str(stdout, g.device.name);
    printf(", \"path\": ");
    json_str(stdout, ct_path_name(path));
    printf(", \"variant\": ");
    json_str(stdout, variant);
    printf(", \"why\": ");
    json_str(stdout, why);
    printf(", \"database\": ");
    json_str(stdout, dbmsg);
    printf(", \"seed\": %" PRIu64 ", \"passes\": %s, \"max_abs_err\": ", seed,
           chk.passes ? "true" : "false");
    json_num(stdout, chk.max_abs_err);
    printf(", \"rel_err\": ");
    json_num(stdout, chk.rel_err);
    printf(", \"mean_ms\": "); json_num(stdout, st.mean_ms);
    printf(", \"median_ms\": "); json_num(stdout, st.median_ms);
    printf(", \"min_ms\": "); json_num(stdout, st.min_ms);
    printf(", \"max_ms\": "); json_num(stdout, st.max_ms);
    printf(", \"n_timed\": %d, \"reason\": ", st.n);
    json_str(stdout, chk.reason);
    printf("}\n");
  } else {
    printf("problem   %s\ndevice    %s (%s)\npath      %s\nvariant   %s\n"
           "why       %s\ndatabase  %s\nseed      %" PRIu64 "\n",
           spec, g.device.name, g.limits.arch, ct_path_name(path), variant,
           why, dbmsg, seed);
    printf("accuracy  %s under the %s contract: max abs err %.3e, rel err %.3e "
           "(bounds used: %.2f elementwise, %.2f Frobenius)\n",
           chk.passes ? "PASS" : "FAIL", ct_precision_name(p.precision),
           chk.max_abs_err, chk.rel_err, chk.elem_ratio, chk.frob_ratio);
    if (!chk.passes) printf("          %s\n", chk.reason);
    else
      printf("time      mean %.4f ms, median %.4f ms, min %.4f, max %.4f "
             "(%d trials, L2 flushed)\n",
             st.mean_ms, st.median_ms, st.min_ms, st.max_ms, st.n);
  }
  exit_code = chk.passes ? 0 : 1;
out:
  ct_tune_data_destroy(&d);
  ct_close(ctx);
  ct_tune_gpu_close(&g);
  return exit_code;
}

static int cmd_space(const cli *c) {
  ct_problem p;
  int rc = cmd_problem_start(c, "space", usage_space, &p);
  if (rc >= 0) return rc;
  ct_gen_limits lim;
  if (c->arch) {
    if (ct_gen_limits_for_arch(c->arch, &lim) != CT_OK) {
      fprintf(stderr, "convtune space: unknown architecture '%s' (sm_80, sm_89, "
                      "sm_90, sm_90a)\n", c->arch);
      return EXIT_USAGE;
    }
  } else {
    ct_tune_gpu g;
    char err[512];
    if (ct_tune_gpu_open(c->device, &g, err, sizeof err) != CT_OK) {
      fprintf(stderr, "convtune space: %s (pass --arch to list without a GPU)\n", err);
      return 1;
    }
    lim = g.limits;
    ct_tune_gpu_close(&g);
  }
  ct_gen_variant *vs = NULL;
  size_t n = 0;
  if (ct_gen_enumerate(&p, &lim, &vs, &n) != CT_OK) {
    fprintf(stderr, "convtune space: cannot enumerate variants\n");
    return 1;
  }
  if (c->families) { /* keep the families asked for */
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
      const char *name = vs[i].family->name, *l = c->families;
      size_t len = strlen(name);
      for (const char *e; *l; l = e ? e + 1 : l + strlen(l)) {
        e = strchr(l, ',');
        if ((e ? (size_t)(e - l) : strlen(l)) == len && !strncmp(l, name, len)) {
          vs[kept++] = vs[i];
          break;
        }
      }
    }
    n = kept;
  }
  char spec[CT_PROBLEM_SPEC_MAX];
  ct_problem_format(&p, spec, sizeof spec);
  if (c->json) {
    printf("{\"problem\": ");
    json_str(stdout, spec);
    printf(", \"arch\": ");
    json_str(stdout, lim.arch);
    printf(", \"variants\": [");
  } else {
    printf("problem %s\narch    %s (%d SMs, %d KB shared memory per block)\n\n",
           spec, lim.arch, lim.sm_count, lim.max_smem_per_block / 1024);
    printf("%-8s %7s %9s %16s  %s\n", "family", "threads", "smem KB", "grid", "variant");
  }
  size_t families = 0;
  for (size_t i = 0; i < n; i++) {
    const ct_gen_variant *v = &vs[i];
    if (i == 0 || v->family != vs[i - 1].family) families++;
    const ct_gen_launch *l = &v->kernels[0];
    unsigned threads = l->block[0] * l->block[1] * l->block[2], smem = 0;
    for (int k = 0; k < v->n_kernels; k++)
      if (v->kernels[k].smem > smem) smem = v->kernels[k].smem;
    if (c->json) {
      printf("%s{\"family\": ", i ? ", " : "");
      json_str(stdout, v->family->name);
      printf(", \"variant\": ");
      json_str(stdout, v->name);
      printf(", \"threads\": %u, \"smem_bytes\": %u, \"grid\": [%u, %u, %u], "
             "\"kernels\": %d, \"workspace_bytes\": %zu}",
             threads, smem, l->grid[0], l->grid[1], l->grid[2], v->n_kernels,
             v->workspace_bytes);
    } else {
      char grid[48];
      snprintf(grid, sizeof grid, "%ux%ux%u", l->grid[0], l->grid[1], l->grid[2]);
      printf("%-8s %7u %9.1f %16s  %s\n", v->family->name, threads, smem / 1024.0,
             grid, v->name);
    }
  }
  if (c->json) printf("]}\n");
  else printf("\n%zu valid variants in %zu families\n", n, families);
  free(vs);
  return 0;
}

/* Opens the database read-only; a missing file is *cache = NULL. */
static int db_open(const cli *c, const char *cmd, char *path, size_t len,
                   ct_cache **cache) {
  if (cli_db(c, path, len)) return 1;
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
static int db_open_existing(const cli *c, const char *cmd, char *path,
                            size_t len, ct_cache **cache) {
  if (db_open(c, cmd, path, len, cache)) return 1;
  if (*cache == NULL) {
    fprintf(stderr, "convtune %s: no tuning database at %s\n", cmd, path);
    return 1;
  }
  return 0;
}

static int cmd_db_list(const cli *c) {
  char path[4096];
  ct_cache *cache = NULL;
  if (db_open(c, "db list", path, sizeof path, &cache)) return 1;
  ct_cache_entry *rows = NULL;
  size_t n = 0;
  if (cache && ct_cache_list(cache, &rows, &n) != CT_OK) {
    fprintf(stderr, "convtune db list: %s\n", ct_cache_errmsg(cache));
    ct_cache_close(cache);
    return 1;
  }
  if (c->json) {
    printf("[");
    for (size_t i = 0; i < n; i++) {
      printf("%s{\"id\": %" PRId64 ", \"problem\": ", i ? ", " : "", rows[i].problem_id);
      json_str(stdout, rows[i].spec);
      printf(", \"precision\": ");
      json_str(stdout, rows[i].precision);
      printf(", \"trials\": %d, \"timed\": %d, \"device\": ", rows[i].n_trials,
             rows[i].n_timed);
      json_str(stdout, rows[i].device);
      printf(", \"winner\": ");
      if (rows[i].variant[0]) json_str(stdout, rows[i].variant);
      else fputs("null", stdout);
      printf(", \"mean_ms\": ");
      json_num(stdout, rows[i].mean_ms);
      printf("}");
    }
    printf("]\n");
  } else if (cache == NULL) {
    printf("no tuning database at %s: nothing tuned yet\n", path);
  } else if (n == 0) {
    printf("%s: no problems tuned yet\n", path);
  } else {
    printf("%-5s %-6s %7s %10s  %-24s %s\n", "id", "prec", "trials", "mean ms",
           "device", "problem / winner");
    for (size_t i = 0; i < n; i++) {
      char mean[16] = "-";
      if (isfinite(rows[i].mean_ms)) snprintf(mean, sizeof mean, "%.4f", rows[i].mean_ms);
      printf("%-5" PRId64 " %-6s %7d %10s  %-24s %s\n", rows[i].problem_id,
             rows[i].precision, rows[i].n_trials, mean,
             rows[i].device[0] ? rows[i].device : "-", rows[i].spec);
      printf("%-5s %-6s %7s %10s  %-24s %s\n", "", "", "", "", "",
             rows[i].variant[0] ? rows[i].variant : "(no winner)");
    }
  }
  free(rows);
  ct_cache_close(cache);
  return 0;
}

static int cmd_db_show(const cli *c) {
  if (c->n_args != 2) {
    fprintf(stderr, "convtune db show: needs one problem ID (see `convtune db list`)\n");
    return EXIT_USAGE;
  }
  long id;
  if (parse_int("db show ID", c->args[1], 1, INT32_MAX, &id)) return EXIT_USAGE;
  char path[4096];
  ct_cache *cache = NULL;
  if (db_open_existing(c, "db show", path, sizeof path, &cache)) return 1;
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
    printf("{\"id\": %ld, \"problem\": ", id);
    json_str(stdout, rows[first].spec);
    printf(", \"precision\": ");
    json_str(stdout, rows[first].precision);
    printf(", \"winners\": [");
    int k = 0;
    for (size_t i = first; i < n && rows[i].problem_id == id; i++) {
      if (!rows[i].variant[0]) continue;
      printf("%s{\"device\": ", k++ ? ", " : "");
      json_str(stdout, rows[i].device);
      printf(", \"variant\": ");
      json_str(stdout, rows[i].variant);
      printf(", \"mean_ms\": ");
      json_num(stdout, rows[i].mean_ms);
      printf("}");
    }
    printf("], \"trials\": [");
    for (size_t i = 0; i < nt; i++) {
      if (i) fputs(", ", stdout);
      json_trial(stdout, &trials[i]);
    }
    printf("]}\n");
  } else {
    printf("problem %ld  %s\n", id, rows[first].spec);
    for (size_t i = first; i < n && rows[i].problem_id == id; i++)
      if (rows[i].variant[0])
        printf("winner  %s on %s: %.4f ms\n", rows[i].variant, rows[i].device,
               rows[i].mean_ms);
    printf("\n");
    print_trial_header();
    for (size_t i = 0; i < nt; i++) print_trial(&trials[i], "");
  }
  exit_code = 0;
out:
  free(rows);
  free(trials);
  ct_cache_close(cache);
  return exit_code;
}

static int cmd_db_check(const cli *c) {
  if (c->n_args != 1) {
    fprintf(stderr, "convtune db check: unexpected argument '%s'\n", c->args[1]);
    return EXIT_USAGE;
  }
  char path[4096];
  ct_cache *cache = NULL;
  if (db_open_existing(c, "db check", path, sizeof path, &cache)) return 1;
  ct_status rc = ct_cache_check(cache);
  if (rc != CT_OK) fprintf(stderr, "convtune db check: %s\n", ct_cache_errmsg(cache));
  else printf("ok: %s (schema %d): integrity, foreign keys, every cubin's hash\n",
              path, ct_cache_schema_version(cache));
  ct_cache_close(cache);
  return rc == CT_OK ? 0 : 1;
}

static int cmd_db_export(const cli *c) {
  if (c->n_args != 1) {
    fprintf(stderr, "convtune db export: unexpected argument '%s' (use --out FILE)\n",
            c->args[1]);
    return EXIT_USAGE;
  }
  char path[4096];
  ct_cache *cache = NULL;
  if (db_open_existing(c, "db export", path, sizeof path, &cache)) return 1;
  FILE *f = c->out ? fopen(c->out, "w") : stdout;
  if (f == NULL) {
    fprintf(stderr, "convtune db export: cannot write %s: %s\n", c->out,
            strerror(errno));
    ct_cache_close(cache);
    return 1;
  }
  ct_cache_transfer_stats st;
  ct_status rc = ct_cache_export(cache, f, c->cubins ? CT_CACHE_EXPORT_CUBINS : 0, &st);
  int closed = c->out ? fclose(f) : fflush(f);
  if (rc == CT_OK && closed != 0) rc = CT_ERR_IO;
  if (rc != CT_OK) {
    fprintf(stderr, "convtune db export: %s\n",
            rc == CT_ERR_IO ? "cannot write the output" : ct_cache_errmsg(cache));
    ct_cache_close(cache);
    return 1;
  }
  fprintf(stderr, "exported %zu devices, %zu problems, %zu trials, %zu winners, "
                  "%zu cubins from %s\n",
          st.devices, st.problems, st.trials, st.winners, st.cubins, path);
  ct_cache_close(cache);
  return 0;
}

/* Imports the export text in f into the database of c; `what` names it. */
static int db_import_file(const cli *c, const char *cmd, FILE *f,
                          const char *what) {
  char path[4096], err[1024];
  if (cli_db(c, path, sizeof path)) return 1;
  ct_cache *cache = NULL;
  if (ct_cache_open(path, CT_CACHE_CREATE, &cache, err, sizeof err) != CT_OK) {
    fprintf(stderr, "convtune %s: %s\n", cmd, err);
    return 1;
  }
  ct_cache_transfer_stats st;
  ct_status rc = ct_cache_import(cache, f, &st, err, sizeof err);
  ct_cache_close(cache);
  if (rc != CT_OK) {
    fprintf(stderr, "convtune %s: %s: %s (nothing imported)\n", cmd, what, err);
    return 1;
  }
  printf("%s into %s: %zu trials (%zu new), %zu winners (%zu stored), "
         "%zu cubins (%zu new), %zu devices, %zu problems\n",
         what, path, st.trials, st.trials_added, st.winners, st.winners_stored,
         st.cubins, st.cubins_added, st.devices, st.problems);
  return 0;
}

static int cmd_db_import(const cli *c) {
  if (c->n_args != 2) {
    fprintf(stderr, "convtune db import: needs one FILE (\"-\" for stdin)\n");
    return EXIT_USAGE;
  }
  const char *name = c->args[1];
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
static int cmd_db_merge(const cli *c) {
  if (c->n_args != 2) {
    fprintf(stderr, "convtune db merge: needs one OTHER.db\n");
    return EXIT_USAGE;
  }
  const char *other = c->args[1];
  char err[1024], path[4096];
  if (cli_db(c, path, sizeof path)) return 1;
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

static int cmd_db(const cli *c) {
  if (c->help || c->n_args == 0) {
    fputs(usage_db, c->help ? stdout : stderr);
    return c->help ? 0 : EXIT_USAGE;
  }
  if (!strcmp(c->args[0], "list")) {
    if (c->n_args != 1) {
      fprintf(stderr, "convtune db list: unexpected argument '%s'\n", c->args[1]);
      return EXIT_USAGE;
    }
    return cmd_db_list(c);
  }
  if (!strcmp(c->args[0], "show")) return cmd_db_show(c);
  if (!strcmp(c->args[0], "export")) return cmd_db_export(c);
  if (!strcmp(c->args[0], "check")) return cmd_db_check(c);
  if (!strcmp(c->args[0], "import")) return cmd_db_import(c);
  if (!strcmp(c->args[0], "merge")) return cmd_db_merge(c);
  fprintf(stderr, "convtune db: unknown subcommand '%s' (list, show, check, "
                  "export, import, merge)\n", c->args[0]);
  return EXIT_USAGE;
}

static int cmd_report(const cli *c) {
  if (c->help) { fputs(usage_report, stdout); return 0; }
  if (c->n_args > 1) {
    fprintf(stderr, "convtune report: unexpected argument '%s'\n", c->args[1]);
    return EXIT_USAGE;
  }
  long id = 0;
  if (c->n_args == 1 && parse_int("report ID", c->args[0], 1, INT32_MAX, &id))
    return EXIT_USAGE;
  char path[4096], spec[CT_PROBLEM_SPEC_MAX];
  ct_problem p;
  int rc = cli_problem(c, &p);
  if (rc) return rc;
  ct_problem_format(&p, spec, sizeof spec);
  ct_cache *cache = NULL;
  if (db_open_existing(c, "report", path, sizeof path, &cache)) return 1;
  int exit_code = 1;
  ct_cache_entry *rows = NULL;
  ct_cache_trial *trials = NULL;
  size_t n = 0, nt = 0;
  int64_t pid = id;
  if (!pid && ct_cache_problem_find(cache, spec, &pid) != CT_OK) {
    fprintf(stderr, "convtune report: %s is not in %s (see `convtune db list`)\n",
            spec, path);
    goto out;
  }
  if (ct_cache_list(cache, &rows, &n) != CT_OK) {
    fprintf(stderr, "convtune report: %s\n", ct_cache_errmsg(cache));
    goto out;
  }
  /* The device: the winner's, else the one with the most trials. */
  const ct_cache_entry *entry = NULL;
  for (size_t i = 0; i < n; i++)
    if (rows[i].problem_id == pid && (entry == NULL || (!entry->variant[0] && rows[i].variant[0])))
      entry = &rows[i];
  if (entry == NULL) {
    fprintf(stderr, "convtune report: no problem %" PRId64 " in %s\n", pid, path);
    goto out;
  }
  int64_t dev = entry->device_id;
  if (ct_cache_trials(cache, pid, 0, &trials, &nt) != CT_OK) {
    fprintf(stderr, "convtune report: %s\n", ct_cache_errmsg(cache));
    goto out;
  }
  if (dev == 0) {
    size_t best = 0;
    for (size_t i = 0; i < nt; i++) {
      size_t k = 0;
      for (size_t j = 0; j < nt; j++) k += trials[j].device_id == trials[i].device_id;
      if (k > best) best = k, dev = trials[i].device_id;
    }
  }
  size_t kept = 0;
  for (size_t i = 0; i < nt; i++)
    if (trials[i].device_id == dev) trials[kept++] = trials[i];
  ct_cache_device d;
  memset(&d, 0, sizeof d);
  if (dev) ct_cache_device_get(cache, dev, &d);
  char title[CT_PROBLEM_SPEC_MAX + 32], sub[512];
  snprintf(title, sizeof title, "convtune: %s", entry->spec);
  if (entry->variant[0])
    snprintf(sub, sizeof sub, "%s (%s, driver %d, NVRTC %s); winner %s, %.4f ms",
             d.name, d.arch, d.driver_version, d.nvrtc_version, entry->variant,
             entry->mean_ms);
  else
    snprintf(sub, sizeof sub, "%s (%s, driver %d, NVRTC %s); no winner",
             d.name[0] ? d.name : "no device", d.arch, d.driver_version,
             d.nvrtc_version);
  const char *out = c->out ? c->out : "convtune-report.svg";
  FILE *f = fopen(out, "w");
  if (f == NULL) {
    fprintf(stderr, "convtune report: cannot write %s: %s\n", out, strerror(errno));
    goto out;
  }
  ct_status st = ct_tune_report_svg(f, title, sub, trials, kept,
                                    entry->variant[0] ? entry->variant : NULL);
  if (fclose(f) != 0 && st == CT_OK) st = CT_ERR_IO;
  if (st != CT_OK) {
    fprintf(stderr, "convtune report: writing %s: %s\n", out, ct_status_string(st));
    goto out;
  }
  printf("wrote %s: %zu trials of problem %" PRId64 " on %s\n", out, kept, pid,
         d.name[0] ? d.name : "no device");
  exit_code = 0;
out:
  free(rows);
  free(trials);
  ct_cache_close(cache);
  return exit_code;
}

int main(int argc, char **argv) {
  /* The tuner's isolated GPU worker (ct_tune.h); not for people. */
  if (argc >= 2 && !strcmp(argv[1], CT_TUNE_WORKER_ARG))
    return ct_tune_worker_main(argc, argv);
  if (argc < 2) {
    fputs(usage_main, stderr);
    return EXIT_USAGE;
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
    int (*run)(const cli *);
  } commands[] = {
      {"space", cmd_space}, {"tune", cmd_tune}, {"check", cmd_check},
      {"report", cmd_report}, {"db", cmd_db}};
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
    if (strcmp(cmd, commands[i].name)) continue;
    cli c;
    int rc = parse_cli(argc, argv, 2, &c);
    if (rc) return rc;
    return commands[i].run(&c);
  }
  fprintf(stderr, "convtune: unknown command '%s'\n\n%s", cmd, usage_main);
  return EXIT_USAGE;
}
