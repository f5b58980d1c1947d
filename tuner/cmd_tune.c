/*
** cmd_tune.c — the commands on one problem: `convtune tune`, `check` and
** `space`.
*/
#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "ct_drv.h"

/* The usage below names the few-channel threshold (ct_gen.h). */
_Static_assert(CT_GEN_FEW_CHANNELS == 8, "convtune tune --help says 8 input channels");

const char ct_cli_usage_tune[] =
    "usage: convtune tune [--problem SPEC |\n"
    "                      --problems FILE [--shard I/N] [--weighted] [--devices LIST|all]]\n"
    "                     [--precision tf32|fp32] [--db PATH]\n"
    "                     [--device N] [--threads N] [--trials N]\n"
    "                     [--final-trials N] [--finalists N] [--seed N]\n"
    "                     [--max-variants N] [--budget SECONDS]\n"
    "                     [--families LIST] [--fresh] [--no-priors]\n"
    "                     [--watchdog SECONDS]\n"
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
    "time for the finalists (never before a variant has passed its check).\n"
    "Such a search screens first the winners of up to 4 of the nearest\n"
    "problems tuned on this device at this precision with the same layout,\n"
    "filter size and stride (priors: a network's layers share their best\n"
    "tiles; a quarter of --max-variants at most; --no-priors skips them),\n"
    "then a stratified sample of each family\n"
    "(tensor-core families first, those made for one kind of shape, such as\n"
    "pw for 1x1 layers, before the general gm; from 8 input channels on, the\n"
    "families made for few channels, wg, tc and their kin, after all of\n"
    "these), then local search around the fastest.\n"
    "--families tc,wg limits the search to those families.\n"
    "A search that stops before a family's first variant says which families\n"
    "it left untried (a note; with --json, \"unscreened_families\").\n"
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
    "as JSON on stdout.\n"
    "\n"
    "Problem lists: --problems FILE tunes each problem of FILE in turn, with\n"
    "the options above applying to each (--budget is per problem).  FILE\n"
    "holds one spec per line, or a name and a spec (bench/suites/public.txt's\n"
    "form), `#` starting a comment; or JSON, {\"problems\": [{\"spec\": SPEC,\n"
    "\"name\": NAME, \"calls\": N, \"weight\": W}, ...]} or a list of specs.\n"
    "A problem named twice is tuned once.\n"
    "Problems with a winner on this device are skipped (--fresh: tuned\n"
    "again; once the run has met the device, without starting its worker),\n"
    "so a rerun after an interruption goes on where it stopped.  It\n"
    "prints a line per problem (problem i of n, the winner, elapsed time and\n"
    "ETA) and a table at the end: status, winner, its time and its speed\n"
    "against the default variant's; --json prints that table as JSON.\n"
    "Exits 1 when a problem failed (the others still run).  --shard I/N\n"
    "(0 <= I < N) tunes only share I of N of the list: the problems at\n"
    "positions I, I+N, I+2N, ... counting from 0, the same on every host,\n"
    "for tuning one list on several machines and\n"
    "joining their databases with `convtune db merge`.  --devices LIST|all\n"
    "(e.g. 0,1,3) tunes the list on several GPUs of this machine at once,\n"
    "each with its own worker, taking the next problem when it is done, all\n"
    "into the one database; a GPU whose worker faults or hangs is restarted,\n"
    "one that cannot be used stops and the others go on.  --weighted shares\n"
    "the list's budget (--budget times its problems) in proportion to each\n"
    "problem's weight (in a JSON list, e.g. calls x measured ms; else its\n"
    "calls), at least a tenth of --budget each: time goes where the network\n"
    "spends it.\n";

const char ct_cli_usage_check[] =
    "usage: convtune check [--problem SPEC | --problems FILE] [--precision tf32|fp32]\n"
    "                      [--db PATH] [--device N] [--trials N] [--seed N] [--packed]\n"
    "                      [--json]\n"
    "\n"
    "Runs what the runtime library would run for the problem (the tuned\n"
    "winner, else the nearest tuned problem's winner, else a default\n"
    "variant; it prints which and why, and the database's state) on fresh\n"
    "random inputs, verifies it against a float64 reference under the\n"
    "problem's precision contract and times it with the full protocol\n"
    "(--trials, default 100).  Exits 1 when the result fails its contract.\n"
    "--problems FILE checks every problem of a list (`convtune tune --help`\n"
    "has its forms) and exits 1 when any fails or cannot run; --json then\n"
    "prints {\"problems\": [...], \"failed\": N, \"errors\": N}.\n"
    "--packed also runs it with the weights packed once (ct_weights_pack,\n"
    "ct_forward_packed: no weight pass in the call), checks that its output\n"
    "equals the plain call's bit for bit, and times it the same way.\n";

const char ct_cli_usage_space[] =
    "usage: convtune space [--problem SPEC] [--precision tf32|fp32]\n"
    "                      [--arch ARCH | --device N] [--families LIST] [--json]\n"
    "\n"
    "Lists every valid variant of the problem: family, parameters, threads,\n"
    "shared memory, grid.  --arch plans against a named architecture's\n"
    "limits (sm_80, sm_89, sm_90, sm_90a) and needs no GPU; without it the\n"
    "attached GPU's limits are read (device --device, default 0).\n";

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

/* A tune's search notes as JSON keys: "unscreened_families", the families
** it left untried (names); "priors", [{"variant": V, "from": SPEC}, ...];
** "priors_error" where the tuned problems could not be read for them. */
static void json_search_notes(ct_json *j, const ct_tune_result *r) {
  ct_json_key(j, "unscreened_families");
  ct_json_begin_array(j);
  for (size_t k = 0; k < r->n_unscreened; k++) ct_json_str(j, r->unscreened[k]->name);
  ct_json_end_array(j);
  ct_json_key(j, "priors");
  ct_json_begin_array(j);
  for (size_t k = 0; k < r->n_priors; k++) {
    ct_json_begin_object(j);
    ct_json_key_str(j, "variant", r->priors[k]);
    ct_json_key_str(j, "from", r->prior_sources[k]);
    ct_json_end_object(j);
  }
  ct_json_end_array(j);
  if (r->priors_error[0]) ct_json_key_str(j, "priors_error", r->priors_error);
}

static const char *origin_name(ct_tune_origin o) {
  return o == CT_TUNE_RESUMED ? "resumed" : o == CT_TUNE_SCREENED ? "screened"
                                                                  : "untried";
}

/* Where tune's progress goes for these options (NULL: nowhere). */
static FILE *o_progress_of(const ct_cli *c) {
  return c->quiet ? NULL : (c->json ? stderr : stdout);
}

/* The tuner's options from the command line (the problem aside). */
static void tune_options(const ct_cli *c, const char *db, ct_tune_options *out) {
  ct_tune_options o;
  ct_tune_options_default(&o);
  o.db_path = db;
  o.device = c->device;
  o.threads = c->threads;
  if (c->trials) o.screen_trials = c->trials;
  if (c->final_trials) o.final_trials = c->final_trials;
  if (c->finalists) o.finalists = c->finalists;
  o.seed = c->seed;
  o.resume = !c->fresh;
  o.no_priors = c->no_priors;
  o.max_variants = (size_t)c->max_variants;
  o.budget_s = c->budget;
  o.families = c->families;
  if (c->watchdog > 0) o.watchdog_s = c->watchdog;
  o.worker_exe = c->no_isolate ? NULL : "/proc/self/exe";
  o.progress = o_progress_of(c);
  o.progress_bar = o.progress != NULL && isatty(fileno(o.progress));
  o.stop = &tune_stop;
  *out = o;
}

static int tune_list(const ct_cli *c, const char *db);


int ct_cli_tune(const ct_cli *c) {
  char db[4096];
  if (c->problems && c->problem) {
    fprintf(stderr, "convtune tune: --problem and --problems exclude each other\n");
    return CT_CLI_EXIT_USAGE;
  }
  if (c->weighted && (!c->problems || c->budget <= 0)) {
    fprintf(stderr, "convtune tune: --weighted shares a list's budget: it needs "
                    "--problems FILE and --budget SECONDS\n");
    return CT_CLI_EXIT_USAGE;
  }
  if (c->devices && !c->problems) {
    fprintf(stderr, "convtune tune: --devices spreads a list over GPUs: it needs --problems "
                    "FILE (one problem's variants are not split across GPUs)\n");
    return CT_CLI_EXIT_USAGE;
  }
  if (c->shard_n && !c->problems) {
    fprintf(stderr, "convtune tune: --shard splits a list: it needs --problems FILE\n");
    return CT_CLI_EXIT_USAGE;
  }
  ct_tune_options o;
  ct_problem problem;
  int rc = c->problems ? 0 : ct_cli_problem(c, &problem);
  if (rc) return rc;
  rc = ct_cli_db(c, "tune", CT_CLI_DB_WRITE, db, sizeof db);
  if (rc) return rc;
  if (c->problems) return tune_list(c, db);
  tune_options(c, db, &o);
  o.problem = problem;
  tune_signals();

  ct_tune_result r;
  char err[1024];
  /* The handlers stay until the command returns: a signal that lands
  ** after the tune finished is reported too, not a silent death. */
  ct_status st = ct_tune_run(&o, &r, err, sizeof err);
  if (st != CT_OK) {
    fprintf(stderr, "convtune tune: %s\n", err);
    if (st == CT_ERR_NO_DRIVER || st == CT_ERR_NO_DEVICE) ct_cli_no_gpu_hint("tune");
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
  /* The rate of screening; none when nothing was screened (all resumed). */
  double per_s = r.n_screened > 0 && r.wall_s > 0 ? (double)r.n_screened / r.wall_s : NAN;
  if (c->json) {
    ct_json j;
    ct_json_init(&j, stdout);
    ct_json_begin_object(&j);
    ct_json_key_str(&j, "problem", r.spec);
    ct_json_key_str(&j, "device", r.device.name);
    ct_json_key_str(&j, "arch", r.device.arch);
    ct_json_key_str(&j, "db", db);
    ct_json_key(&j, "seed");
    ct_json_uint(&j, r.seed);
    ct_json_key_num(&j, "wall_s", r.wall_s);
    ct_json_key_num(&j, "compile_s", r.compile_s);
    ct_json_key_int(&j, "threads", r.threads);
    ct_json_key_str(&j, "search", r.budgeted ? "budgeted" : "exhaustive");
    ct_json_key_int(&j, "variants", (int64_t)r.n_rows);
    ct_json_key_int(&j, "screened", (int64_t)r.n_screened);
    ct_json_key_int(&j, "resumed", (int64_t)r.n_resumed);
    ct_json_key_int(&j, "compiled", (int64_t)r.n_compiled);
    ct_json_key_int(&j, "cached", (int64_t)r.n_cached);
    ct_json_key_int(&j, "restarts", r.restarts);
    ct_json_key_num(&j, "variants_per_s", per_s);
    ct_json_key_bool(&j, "interrupted", r.interrupted);
    ct_json_key_str(&j, "winner", r.winner >= 0 ? r.rows[r.winner].trial.variant : NULL);
    ct_json_key_num(&j, "winner_mean_ms", r.winner >= 0 ? r.rows[r.winner].trial.mean_ms : NAN);
    json_search_notes(&j, &r);
    ct_json_key(&j, "trials");
    ct_json_begin_array(&j);
    for (size_t i = 0; i < r.n_rows; i++)
      if (r.rows[i].origin != CT_TUNE_UNTRIED) ct_cli_json_trial(&j, &r.rows[i].trial);
    ct_json_end_array(&j);
    ct_json_key(&j, "rows");
    ct_json_begin_array(&j);
    for (size_t i = 0; i < r.n_rows; i++) {
      if (r.rows[i].origin == CT_TUNE_UNTRIED) continue;
      ct_json_begin_object(&j);
      ct_json_key_str(&j, "variant", r.rows[i].trial.variant);
      ct_json_key_str(&j, "origin", origin_name(r.rows[i].origin));
      ct_json_key_bool(&j, "finalist", r.rows[i].finalist);
      ct_json_key_bool(&j, "cubin_cached", r.rows[i].cubin_cached);
      ct_json_end_object(&j);
    }
    ct_json_end_array(&j);
    ct_json_end_object(&j);
    ct_json_finish(&j);
  } else {
    printf("\nproblem  %s\ndevice   %s (%s, %d SMs, driver %d, NVRTC %s)\n"
           "database %s\nseed     %" PRIu64 "\n\n",
           r.spec, r.device.name, r.device.arch, r.device.sm_count,
           r.device.driver_version, r.device.nvrtc_version, db, r.seed);
    ct_cli_print_trial_header();
    for (size_t i = 0; i < r.n_rows; i++) {
      const ct_tune_row *row = &r.rows[i];
      if (row->origin == CT_TUNE_UNTRIED) continue;
      ct_cli_print_trial(&row->trial, (long)i == r.winner ? "  <- winner"
                               : row->finalist ? "  (finalist)"
                               : row->origin == CT_TUNE_RESUMED ? "  (resumed)" : "");
    }
    char rate[64] = "nothing screened: every variant resumed";
    if (isfinite(per_s)) snprintf(rate, sizeof rate, "%.1f variants/s", per_s);
    printf("\n%zu %s: %zu timed, %zu wrong, %zu failed; %.1f s wall, "
           "%.1f s NVRTC on %d %s (%s)\n",
           n_tried, ct_cli_plural(n_tried, "variant", "variants"), n_timed,
           n_wrong, n_failed, r.wall_s, r.compile_s, r.threads,
           ct_cli_plural((size_t)r.threads, "thread", "threads"), rate);
    printf("search   %s: %zu of %zu %s screened now, %zu resumed from "
           "the database; %zu compiled, %zu %s from the compile cache",
           r.budgeted ? "budgeted" : "exhaustive", r.n_screened, r.n_rows,
           ct_cli_plural(r.n_rows, "variant", "variants"), r.n_resumed,
           r.n_compiled, r.n_cached, ct_cli_plural(r.n_cached, "cubin", "cubins"));
    if (r.restarts)
      printf("; GPU worker restarted %d %s", r.restarts,
             ct_cli_plural((size_t)r.restarts, "time", "times"));
    printf("\n");
    if (r.n_priors > 0) {
      printf("priors   screened first: ");
      for (size_t k = 0; k < r.n_priors; k++)
        printf("%s%s (won %s)", k ? ", " : "", r.priors[k], r.prior_sources[k]);
      printf("\n");
    }
    if (r.priors_error[0])
      printf("note     no priors: the tuned problems could not be read (%s)\n", r.priors_error);
    if (r.n_unscreened > 0 && !r.interrupted) {
      printf("note     the search stopped before any variant of %s ",
             ct_cli_plural(r.n_unscreened, "family", "families"));
      for (size_t k = 0; k < r.n_unscreened; k++)
        printf("%s%s", k ? ", " : "", r.unscreened[k]->name);
      printf(" was tried; a larger --budget or --max-variants, or --families, reaches %s\n",
             r.n_unscreened == 1 ? "it" : "them");
    }
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
                    "was dropped, the %zu %s finished in this run %s "
                    "kept; run the same command again to resume\n",
            sig == SIGTERM ? "SIGTERM" : "SIGINT", r.n_screened,
            ct_cli_plural(r.n_screened, "trial", "trials"),
            ct_cli_plural(r.n_screened, "is", "are"));
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

/* ---------------------------------------------------------------------- */
/* Problem lists                                                           */

typedef struct list_row {
  const ct_problem_entry *e;
  const char *status;        /* "tuned", "skipped", "failed", "interrupted",
                                "not run" */
  ct_tune_result r;          /* the brief outcome (rows freed) */
  double wall_s;
  double budget_s;           /* its screening budget; 0: none */
  char error[512];
} list_row;

/* Why a tune that ran ended without a winner: how many variants were
** tried, by outcome, and the first failure's variant and message. */
static void no_winner_reason(const ct_tune_result *r, char *buf, size_t len) {
  size_t count[CT_TRIAL_TIMEOUT + 1] = {0}, tried = 0;
  const ct_tune_row *first = NULL;
  for (size_t i = 0; i < r->n_rows; i++) {
    const ct_tune_row *row = &r->rows[i];
    if (row->origin == CT_TUNE_UNTRIED || (unsigned)row->trial.status > CT_TRIAL_TIMEOUT)
      continue;
    tried++;
    count[row->trial.status]++;
    if (!first && row->trial.status != CT_TRIAL_TIMED) first = row;
  }
  size_t used = (size_t)snprintf(buf, len, "no variant passed its precision contract (%zu tried",
                                 tried);
  for (int s = 0; s <= CT_TRIAL_TIMEOUT && used < len; s++)
    if (count[s])
      used += (size_t)snprintf(buf + used, len - used, ", %zu %s", count[s],
                               ct_trial_status_name((ct_trial_status)s));
  if (first && used < len)
    used += (size_t)snprintf(buf + used, len - used, "; %s: %s", first->trial.variant,
                             first->trial.message);
  if (used < len) snprintf(buf + used, len - used, ")");
}

static double list_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* "1.62x" (default / winner), or "-" when either time is unknown. */
static void list_speed(const ct_tune_result *r, char *buf, size_t len) {
  if (isfinite(r->winner_ms) && isfinite(r->default_ms) && r->winner_ms > 0)
    snprintf(buf, len, "%.2fx", r->default_ms / r->winner_ms);
  else
    snprintf(buf, len, "-");
}

static void list_time(double s, char *buf, size_t len) {
  if (!isfinite(s) || s < 0) s = 0;
  long t = (long)(s + 0.5);
  if (t >= 3600)
    snprintf(buf, len, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
  else
    snprintf(buf, len, "%ld:%02ld", t / 60, t % 60);
}

static void list_summary_json(const list_row *rows, size_t n, double wall_s) {
  ct_json j;
  ct_json_init(&j, stdout);
  ct_json_begin_object(&j);
  ct_json_key_num(&j, "wall_s", wall_s);
  ct_json_key(&j, "problems");
  ct_json_begin_array(&j);
  for (size_t i = 0; i < n; i++) {
    const list_row *l = &rows[i];
    ct_json_begin_object(&j);
    ct_json_key_str(&j, "problem", l->e->spec);
    ct_json_key_str(&j, "name", l->e->name[0] ? l->e->name : NULL);
    ct_json_key_int(&j, "calls", l->e->calls);
    ct_json_key_num(&j, "weight", l->e->weight);
    ct_json_key_str(&j, "status", l->status);
    ct_json_key_str(&j, "winner", l->r.winner_variant[0] ? l->r.winner_variant : NULL);
    ct_json_key_num(&j, "winner_mean_ms", l->r.winner_ms);
    ct_json_key_str(&j, "default", l->r.default_variant[0] ? l->r.default_variant : NULL);
    ct_json_key_num(&j, "default_mean_ms", l->r.default_ms);
    ct_json_key_num(&j, "speedup_vs_default",
                    isfinite(l->r.winner_ms) && isfinite(l->r.default_ms) && l->r.winner_ms > 0
                        ? l->r.default_ms / l->r.winner_ms
                        : NAN);
    ct_json_key_num(&j, "wall_s", l->wall_s);
    ct_json_key_num(&j, "budget_s", l->budget_s > 0 ? l->budget_s : NAN);
    ct_json_key_int(&j, "screened", (int64_t)l->r.n_screened);
    json_search_notes(&j, &l->r);
    ct_json_key_str(&j, "error", l->error[0] ? l->error : NULL);
    ct_json_end_object(&j);
  }
  ct_json_end_array(&j);
  ct_json_end_object(&j);
  ct_json_finish(&j);
}

static void list_summary_text(const list_row *rows, size_t n, double wall_s) {
  size_t tuned = 0, skipped = 0, failed = 0, untried = 0;
  printf("\n%-4s %-11s %10s %9s  %-40s %s\n", "#", "status", "winner ms", "vs dflt",
         "winner", "problem");
  for (size_t i = 0; i < n; i++) {
    const list_row *l = &rows[i];
    char ms[16] = "-", speed[16];
    if (isfinite(l->r.winner_ms)) snprintf(ms, sizeof ms, "%.4f", l->r.winner_ms);
    list_speed(&l->r, speed, sizeof speed);
    printf("%-4zu %-11s %10s %9s  %-40s %s%s%s%s\n", i + 1, l->status, ms, speed,
           l->r.winner_variant[0] ? l->r.winner_variant : "-", l->e->spec,
           l->e->name[0] ? " (" : "", l->e->name, l->e->name[0] ? ")" : "");
    if (l->error[0]) printf("     %s\n", l->error);
    tuned += strcmp(l->status, "tuned") == 0;
    skipped += strcmp(l->status, "skipped") == 0;
    failed += strcmp(l->status, "failed") == 0;
    untried += l->r.n_unscreened > 0 && !l->r.interrupted;
  }
  char t[32];
  list_time(wall_s, t, sizeof t);
  printf("\n%zu %s: %zu tuned, %zu skipped (tuned before), %zu failed; %s wall\n"
         "vs dflt: the default variant's recorded screening mean / the winner's "
         "full-protocol mean\n",
         n, ct_cli_plural(n, "problem", "problems"), tuned, skipped, failed, t);
  if (untried)
    printf("note: %zu %s stopped before some families had a variant tried "
           "(--json: unscreened_families); a larger --budget reaches them\n",
           untried, ct_cli_plural(untried, "problem's search", "problems' searches"));
}

/* A list tune in progress: what the devices share. */
typedef struct list_run {
  const ct_cli *c;
  const char *db;
  const ct_problem_list *list;
  list_row *rows;
  size_t listed;           /* problems before --shard */
  double wsum;             /* their weights */
  int n_dev;               /* devices tuning at once */
  double t0;
  pthread_mutex_t lock;    /* guards what follows, and the progress lines */
  size_t next;             /* the next problem to take */
  size_t done, n_tuned, n_failed;
  double tuning_s;         /* wall time of the problems tuned (not skipped) */
  int no_gpu;              /* a device could not be used */
  int stop_all;            /* a database error or an interruption */
  FILE *pg;                /* progress lines, or NULL */
} list_run;

/* One device's share of the work: it takes the next problem until none is
** left. */
typedef struct list_dev {
  list_run *run;
  int device;
  size_t n_done;           /* problems it finished */
  pthread_t thread;
} list_dev;

static void *list_device(void *arg) {
  list_dev *d = arg;
  list_run *run = d->run;
  const ct_cli *c = run->c;
  ct_tune_options o;
  tune_options(c, run->db, &o);
  o.skip_tuned = !c->fresh;
  o.device = d->device;
  char tag[24] = "";
  if (run->n_dev > 1) {
    /* One line per problem and device; the variants' lines would mix. */
    o.progress = NULL;
    o.progress_bar = 0;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (!c->threads) o.threads = cores > run->n_dev ? (int)(cores / run->n_dev) : 1;
    snprintf(tag, sizeof tag, "[gpu %d] ", d->device);
  }
  ct_cache_device known_device; /* the device, once a run has found it */
  ct_gen_limits known_limits;
  for (;;) {
    pthread_mutex_lock(&run->lock);
    if (tune_stop || run->stop_all || run->next >= run->list->n) {
      pthread_mutex_unlock(&run->lock);
      break;
    }
    const size_t i = run->next++;
    list_row *l = &run->rows[i];
    l->e = &run->list->e[i];
    l->status = "running";
    l->budget_s = c->budget;
    if (c->weighted && run->wsum > 0) {
      double share = c->budget * (double)run->listed * l->e->weight / run->wsum;
      l->budget_s = share > c->budget / 10 ? share : c->budget / 10;
    }
    if (run->pg) {
      char bud[48] = "";
      if (l->budget_s > 0) snprintf(bud, sizeof bud, ", budget %.1f s", l->budget_s);
      fprintf(run->pg, "%s== problem %zu/%zu: %s%s%s%s%s\n", tag, i + 1, run->list->n,
              l->e->spec, l->e->name[0] ? " (" : "", l->e->name, l->e->name[0] ? ")" : "",
              bud);
      fflush(run->pg);
    }
    pthread_mutex_unlock(&run->lock);

    o.budget_s = l->budget_s;
    o.problem = l->e->problem;
    const double t1 = list_now();
    ct_status st = ct_tune_run(&o, &l->r, l->error, sizeof l->error);
    l->wall_s = list_now() - t1;
    if (st == CT_OK && !l->r.interrupted && !l->r.skipped && !l->r.winner_variant[0])
      no_winner_reason(&l->r, l->error, sizeof l->error); /* before the rows go */
    ct_tune_result brief = l->r;
    brief.rows = NULL;
    brief.n_rows = 0;
    ct_tune_result_free(&l->r);
    l->r = brief;

    pthread_mutex_lock(&run->lock);
    int quit = 0;
    if (st != CT_OK) {
      l->status = "failed";
      run->n_failed++;
      if (run->pg) fprintf(run->pg, "%s   failed: %s\n", tag, l->error);
      if (st == CT_ERR_NO_DRIVER || st == CT_ERR_NO_DEVICE) {
        run->no_gpu = 1; /* this device cannot go on; the others can */
        quit = 1;
      } else if (st == CT_ERR_DB || st == CT_ERR_DB_CORRUPT) {
        run->stop_all = 1; /* no device can fare better */
        quit = 1;
      }
    } else if (l->r.interrupted) {
      l->status = "interrupted";
      run->stop_all = quit = 1;
    } else {
      if (l->r.winner_variant[0] || l->r.skipped) l->error[0] = '\0';
      if (!o.known_device) {
        known_device = l->r.device;
        known_limits = l->r.limits;
        o.known_device = &known_device;
        o.known_limits = &known_limits;
      }
      if (l->r.skipped) {
        l->status = "skipped";
      } else {
        run->n_tuned++;
        run->tuning_s += l->wall_s;
        l->status = l->r.winner_variant[0] ? "tuned" : "failed";
        if (!l->r.winner_variant[0]) run->n_failed++; /* l->error: no_winner_reason's */
      }
      run->done++;
      d->n_done++;
      if (run->pg) {
        char ms[16] = "-", speed[16], eta[32], el[32];
        if (isfinite(l->r.winner_ms)) snprintf(ms, sizeof ms, "%.4f ms", l->r.winner_ms);
        list_speed(&l->r, speed, sizeof speed);
        /* The rest at the mean time of the problems tuned so far, on
        ** every device at once. */
        double left = run->n_tuned ? run->tuning_s / (double)run->n_tuned *
                                         (double)(run->list->n - run->done) / run->n_dev
                                   : 0;
        list_time(left, eta, sizeof eta);
        list_time(list_now() - run->t0, el, sizeof el);
        fprintf(run->pg, "%s   %s: %s %s (%s the default); %zu/%zu done, %s elapsed, ETA %s\n",
                tag, l->status, l->r.winner_variant[0] ? l->r.winner_variant : "-", ms, speed,
                run->done, run->list->n, el, run->n_tuned ? eta : "-");
        fflush(run->pg);
      }
    }
    pthread_mutex_unlock(&run->lock);
    if (quit) break;
  }
  return NULL;
}

/* The devices of --devices LIST|all into dev (at most max); their count,
** or -1 after saying why. */
static int list_devices(const char *text, int *dev, int max) {
  if (text == NULL) return 0;
  if (strcmp(text, "all") == 0) {
    int count = 0;
    const char *fake = getenv("CONVTUNE_TEST_FAKE_GPU");
    if (fake && strcmp(fake, "1") == 0) {
      const char *n = getenv("CONVTUNE_TEST_FAKE_DEVICES");
      count = n && *n ? atoi(n) : 1;
    } else {
      const char *why = NULL;
      if (ct_drv_load(&why) != CT_OK || ct_drv.cuDeviceGetCount(&count) != CUDA_SUCCESS) {
        fprintf(stderr, "convtune tune: --devices all: no CUDA device: %s\n",
                why ? why : "cuDeviceGetCount failed");
        return -1;
      }
    }
    if (count < 1) {
      fprintf(stderr, "convtune tune: --devices all: no CUDA device\n");
      return -1;
    }
    if (count > max) count = max;
    for (int i = 0; i < count; i++) dev[i] = i;
    return count;
  }
  int n = 0;
  for (const char *p = text; *p;) {
    char *end;
    errno = 0;
    long v = strtol(p, &end, 10);
    if (errno || end == p || v < 0 || v > 1023 || (*end && *end != ',') || n == max ||
        !isdigit((unsigned char)*p)) {
      fprintf(stderr, "convtune tune: --devices wants 'all' or device ordinals like 0,1,3 "
                      "(at most %d), not '%s'\n", max, text);
      return -1;
    }
    for (int k = 0; k < n; k++)
      if (dev[k] == (int)v) {
        fprintf(stderr, "convtune tune: --devices names device %ld twice\n", v);
        return -1;
      }
    dev[n++] = (int)v;
    p = *end ? end + 1 : end;
    if (*end && !*p) {
      fprintf(stderr, "convtune tune: --devices: nothing after the last ','\n");
      return -1;
    }
  }
  return n;
}

#define LIST_MAX_DEVICES 64

/* `convtune tune --problems FILE`: each problem in turn (over the devices
** of --devices at once, each taking the next problem), those with a winner
** on the device skipped unless --fresh. */
static int tune_list(const ct_cli *c, const char *db) {
  int devs[LIST_MAX_DEVICES];
  int n_dev = c->devices ? list_devices(c->devices, devs, LIST_MAX_DEVICES) : 0;
  if (n_dev < 0) return CT_CLI_EXIT_USAGE;
  if (n_dev == 0) {
    devs[0] = c->device;
    n_dev = 1;
  }
  ct_problem_list list;
  char err[1024];
  if (ct_problem_list_read(c->problems, c->precision, &list, err, sizeof err) != CT_OK) {
    fprintf(stderr, "convtune tune: --problems %s\n", err);
    return CT_CLI_EXIT_USAGE;
  }
  list_run run;
  memset(&run, 0, sizeof run);
  run.c = c;
  run.db = db;
  run.listed = list.n;
  /* --weighted shares the whole list's budget, also under --shard. */
  for (size_t k = 0; k < list.n; k++) run.wsum += list.e[k].weight;
  run.pg = o_progress_of(c);
  /* --shard I/N: the problems at positions I, I + N, I + 2N, ... of the
  ** list (repeats merged first), the same share on every host. */
  if (c->shard_n) {
    size_t kept = 0;
    for (size_t k = (size_t)c->shard_i; k < list.n; k += (size_t)c->shard_n)
      list.e[kept++] = list.e[k];
    list.n = kept;
    if (run.pg)
      fprintf(run.pg, "shard %d/%d: %zu of the list's %zu %s\n", c->shard_i, c->shard_n, kept,
              run.listed, ct_cli_plural(run.listed, "problem", "problems"));
  }
  if ((size_t)n_dev > list.n && list.n > 0) n_dev = (int)list.n;
  run.list = &list;
  run.n_dev = n_dev;
  run.rows = calloc(list.n ? list.n : 1, sizeof *run.rows);
  list_dev *dv = calloc((size_t)n_dev, sizeof *dv);
  if (run.rows == NULL || dv == NULL) {
    fprintf(stderr, "convtune tune: out of host memory\n");
    free(run.rows);
    free(dv);
    ct_problem_list_free(&list);
    return 1;
  }
  pthread_mutex_init(&run.lock, NULL);
  tune_signals();
  run.t0 = list_now();
  if (n_dev > 1 && run.pg)
    fprintf(run.pg, "%zu %s on %d devices\n", list.n, ct_cli_plural(list.n, "problem", "problems"),
            n_dev);
  for (int k = 0; k < n_dev; k++) {
    dv[k].run = &run;
    dv[k].device = devs[k];
    if (n_dev == 1) {
      list_device(&dv[k]);
    } else if (pthread_create(&dv[k].thread, NULL, list_device, &dv[k]) != 0) {
      fprintf(stderr, "convtune tune: cannot start the thread of device %d\n", devs[k]);
      dv[k].device = -1;
    }
  }
  for (int k = 0; k < n_dev; k++)
    if (n_dev > 1 && dv[k].device >= 0) pthread_join(dv[k].thread, NULL);
  for (size_t k = 0; k < list.n; k++) {
    list_row *l = &run.rows[k];
    if (l->status == NULL) {
      l->e = &list.e[k];
      l->status = "not run";
      l->r.winner_ms = l->r.default_ms = NAN;
    }
  }
  const double wall = list_now() - run.t0;
  if (c->json)
    list_summary_json(run.rows, list.n, wall);
  else
    list_summary_text(run.rows, list.n, wall);
  if (n_dev > 1 && !c->json) {
    printf("per device:");
    for (int k = 0; k < n_dev; k++)
      if (dv[k].device >= 0) printf(" gpu %d: %zu", dv[k].device, dv[k].n_done);
    printf("\n");
  }
  fflush(stdout);
  if (run.no_gpu) ct_cli_no_gpu_hint("tune");
  size_t n_failed = run.n_failed, not_run = 0;
  for (size_t k = 0; k < list.n; k++) not_run += strcmp(run.rows[k].status, "not run") == 0;
  pthread_mutex_destroy(&run.lock);
  free(run.rows);
  free(dv);
  ct_problem_list_free(&list);
  if (tune_stop) {
    fprintf(stderr, "convtune tune: interrupted by %s: the problems finished are "
                    "kept, and so is every trial of the one in flight; run the "
                    "same command again to resume\n",
            tune_stop == SIGTERM ? "SIGTERM" : "SIGINT");
    return 128 + tune_stop;
  }
  return n_failed || not_run ? 1 : 0;
}

/* check --packed: the problem through weights packed once. */
typedef struct packed_run {
  ct_context *ctx;
  const ct_weights *wp;
} packed_run;

static ct_status run_packed(void *arg, const ct_tune_data *d, CUstream s, char *err,
                            size_t len) {
  const packed_run *pr = arg;
  ct_status rc = ct_forward_packed(pr->ctx, &d->p, (const float *)(uintptr_t)d->x, pr->wp,
                                   (const float *)(uintptr_t)d->b, (float *)(uintptr_t)d->y, s);
  if (rc != CT_OK) snprintf(err, len, "ct_forward_packed: %s", ct_last_error(pr->ctx));
  return rc;
}

/* d's output, after g's stream's work, into a new host array (NULL and
** err on failure). */
static float *output_copy(ct_tune_gpu *g, const ct_tune_data *d, char *err, size_t len) {
  float *h = malloc(d->ny * sizeof(float));
  CUresult r = CUDA_ERROR_OUT_OF_MEMORY;
  if (h == NULL || (r = ct_drv.cuStreamSynchronize(g->stream)) != CUDA_SUCCESS ||
      (r = ct_drv.cuMemcpyDtoH(h, d->y, d->ny * sizeof(float))) != CUDA_SUCCESS) {
    char buf[256];
    snprintf(err, len, "reading the output back: %s", ct_drv_error(r, buf, sizeof buf));
    free(h);
    return NULL;
  }
  return h;
}

/* The --packed half of check_one: packs d's weights, verifies the packed
** call (its output must equal `plain`, d->ny floats, bit for bit) and
** times it into *st.  Returns 0 (passes), 1 (differs or fails its
** contract; why in why) or -1 (an error in err). */
static int check_packed(const ct_cli *c, ct_tune_gpu *g, ct_context *ctx, ct_tune_data *d,
                        const float *plain, ct_tune_check *chk, ct_tune_stats *st,
                        size_t *bytes, char *why, size_t why_len, char *err, size_t len) {
  ct_weights *wp = NULL;
  if (ct_weights_pack(ctx, &d->p, (const float *)(uintptr_t)d->w, g->stream, &wp) != CT_OK) {
    snprintf(err, len, "ct_weights_pack: %s", ct_last_error(ctx));
    return -1;
  }
  *bytes = ct_weights_bytes(wp);
  packed_run pr = {ctx, wp};
  int result = -1;
  float *got = NULL;
  if (ct_tune_verify(g, d, run_packed, &pr, chk, err, len) != CT_OK ||
      (got = output_copy(g, d, err, len)) == NULL)
    goto out;
  const int same = memcmp(got, plain, d->ny * sizeof(float)) == 0;
  snprintf(why, why_len, "%s", !chk->passes ? chk->reason
                               : same ? ""
                                      : "its output differs from the plain call's");
  result = chk->passes && same ? 0 : 1;
  if (result == 0 &&
      ct_tune_time(g, d, run_packed, &pr, c->trials ? c->trials : 100, st, err, len) != CT_OK)
    result = -1;
out:
  free(got);
  ct_weights_free(wp);
  return result;
}

/* One problem of `convtune check` on g with ctx; with j, its JSON object
** goes there, else text to stdout.  Returns 0 (passes), 1 (fails its
** contract) or -1 (an error, said on stderr). */
static int check_one(const ct_cli *c, ct_tune_gpu *g, ct_context *ctx, const ct_problem *pp,
                     ct_json *j) {
  const ct_problem p = *pp;
  int trials = c->trials ? c->trials : 100;
  char err[1024], spec[CT_PROBLEM_SPEC_MAX];
  ct_problem_format(&p, spec, sizeof spec);
  ct_tune_data d;
  memset(&d, 0, sizeof d);
  int result = -1;
  uint64_t seed = c->seed ? c->seed : ct_tune_fresh_seed();
  if (ct_tune_data_create(g, &p, seed, &d, err, sizeof err) != CT_OK) {
    fprintf(stderr, "convtune check: %s: %s\n", spec, err);
    goto out;
  }
  ct_tune_check chk;
  if (ct_tune_verify(g, &d, ct_tune_run_forward, ctx, &chk, err, sizeof err) != CT_OK) {
    fprintf(stderr, "convtune check: %s: %s\n", spec, err);
    goto out;
  }
  ct_path path;
  char variant[CT_GEN_NAME_MAX];
  ct_forward_path(ctx, &p, &path, variant, sizeof variant);
  char why[1024], dbmsg[512];
  ct_forward_reason(ctx, &p, why, sizeof why);
  ct_database_status(ctx, dbmsg, sizeof dbmsg);
  /* --packed compares with the verified plain call's output, kept before
  ** the timed runs (a residual problem's runs each add to y). */
  float *plain = NULL;
  if (c->packed && chk.passes && (plain = output_copy(g, &d, err, sizeof err)) == NULL) {
    fprintf(stderr, "convtune check: %s: --packed: %s\n", spec, err);
    goto out;
  }
  ct_tune_stats st;
  memset(&st, 0, sizeof st);
  st.mean_ms = st.median_ms = st.min_ms = st.max_ms = NAN;
  if (chk.passes &&
      ct_tune_time(g, &d, ct_tune_run_forward, ctx, trials, &st, err, sizeof err) != CT_OK) {
    fprintf(stderr, "convtune check: %s: %s\n", spec, err);
    free(plain);
    goto out;
  }
  int packed = -2; /* not asked, or not run: the plain call failed */
  ct_tune_check pchk;
  ct_tune_stats pst;
  memset(&pchk, 0, sizeof pchk);
  memset(&pst, 0, sizeof pst);
  pst.mean_ms = pst.median_ms = pst.min_ms = pst.max_ms = NAN;
  size_t pbytes = 0;
  char pwhy[512] = "";
  if (plain) {
    packed = check_packed(c, g, ctx, &d, plain, &pchk, &pst, &pbytes, pwhy, sizeof pwhy, err,
                          sizeof err);
    free(plain);
    if (packed < 0) {
      fprintf(stderr, "convtune check: %s: --packed: %s\n", spec, err);
      goto out;
    }
  }
  if (j) {
    ct_json_begin_object(j);
    ct_json_key_str(j, "problem", spec);
    ct_json_key_str(j, "device", g->device.name);
    ct_json_key_str(j, "path", ct_path_name(path));
    ct_json_key_str(j, "variant", variant);
    ct_json_key_str(j, "why", why);
    ct_json_key_str(j, "database", dbmsg);
    ct_json_key(j, "seed");
    ct_json_uint(j, seed);
    ct_json_key_bool(j, "passes", chk.passes);
    ct_json_key_num(j, "max_abs_err", chk.max_abs_err);
    ct_json_key_num(j, "rel_err", chk.rel_err);
    ct_json_key_num(j, "mean_ms", st.mean_ms);
    ct_json_key_num(j, "median_ms", st.median_ms);
    ct_json_key_num(j, "min_ms", st.min_ms);
    ct_json_key_num(j, "max_ms", st.max_ms);
    ct_json_key_int(j, "n_timed", st.n);
    ct_json_key_str(j, "reason", chk.reason);
    if (packed >= 0) {
      ct_json_key(j, "packed");
      ct_json_begin_object(j);
      ct_json_key_bool(j, "passes", packed == 0);
      ct_json_key_int(j, "bytes", (long long)pbytes);
      ct_json_key_num(j, "mean_ms", pst.mean_ms);
      ct_json_key_num(j, "median_ms", pst.median_ms);
      ct_json_key_num(j, "min_ms", pst.min_ms);
      ct_json_key_num(j, "max_ms", pst.max_ms);
      ct_json_key_int(j, "n_timed", pst.n);
      ct_json_key_str(j, "reason", pwhy);
      ct_json_end_object(j);
    }
    ct_json_end_object(j);
  } else {
    printf("problem   %s\ndevice    %s (%s)\npath      %s\nvariant   %s\n"
           "why       %s\ndatabase  %s\nseed      %" PRIu64 "\n",
           spec, g->device.name, g->limits.arch, ct_path_name(path), variant,
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
    if (packed == 0)
      printf("packed    PASS, the plain call's output bit for bit (%zu bytes of weights); "
             "mean %.4f ms, median %.4f ms, min %.4f, max %.4f (%d trials): %.2fx the "
             "plain call\n",
             pbytes, pst.mean_ms, pst.median_ms, pst.min_ms, pst.max_ms, pst.n,
             st.mean_ms / pst.mean_ms);
    else if (packed == 1)
      printf("packed    FAIL: %s\n", pwhy);
  }
  fflush(stdout);
  result = chk.passes && packed != 1 ? 0 : 1;
out:
  ct_tune_data_destroy(&d);
  return result;
}

int ct_cli_check(const ct_cli *c) {
  if (c->problems && c->problem) {
    fprintf(stderr, "convtune check: --problem and --problems exclude each other\n");
    return CT_CLI_EXIT_USAGE;
  }
  ct_problem_list list = {0};
  ct_problem one;
  char err[1024];
  if (c->problems) {
    if (ct_problem_list_read(c->problems, c->precision, &list, err, sizeof err) != CT_OK) {
      fprintf(stderr, "convtune check: --problems %s\n", err);
      return CT_CLI_EXIT_USAGE;
    }
  } else {
    int rc = ct_cli_problem(c, &one);
    if (rc) return rc;
  }
  char db[4096];
  int rc = ct_cli_db(c, "check", CT_CLI_DB_READ, db, sizeof db);
  if (rc) {
    ct_problem_list_free(&list);
    return rc;
  }
  ct_tune_gpu g;
  ct_context *ctx = NULL;
  int exit_code = 1;
  ct_status gst = ct_tune_gpu_open(c->device, &g, err, sizeof err);
  if (gst != CT_OK) {
    fprintf(stderr, "convtune check: %s\n", err);
    if (gst == CT_ERR_NO_DRIVER || gst == CT_ERR_NO_DEVICE) ct_cli_no_gpu_hint("check");
    ct_problem_list_free(&list);
    return 1;
  }
  if (ct_open(db, c->device, &ctx) != CT_OK) {
    fprintf(stderr, "convtune check: %s\n", ct_open_error());
    goto out;
  }
  if (!c->problems) {
    ct_json j;
    if (c->json) ct_json_init(&j, stdout);
    int r = check_one(c, &g, ctx, &one, c->json ? &j : NULL);
    if (c->json && r >= 0) ct_json_finish(&j);
    exit_code = r == 0 ? 0 : 1;
    goto out;
  }
  /* A list: every problem, the failures counted, one JSON document. */
  ct_json j;
  if (c->json) {
    ct_json_init(&j, stdout);
    ct_json_begin_object(&j);
    ct_json_key(&j, "problems");
    ct_json_begin_array(&j);
  }
  size_t fails = 0, errors = 0;
  for (size_t i = 0; i < list.n; i++) {
    if (!c->json) printf("%s== problem %zu/%zu%s%s%s\n", i ? "\n" : "", i + 1, list.n,
                         list.e[i].name[0] ? " (" : "", list.e[i].name,
                         list.e[i].name[0] ? ")" : "");
    int r = check_one(c, &g, ctx, &list.e[i].problem, c->json ? &j : NULL);
    fails += r == 1;
    errors += r < 0;
  }
  if (c->json) {
    ct_json_end_array(&j);
    ct_json_key_int(&j, "failed", (int64_t)fails);
    ct_json_key_int(&j, "errors", (int64_t)errors);
    ct_json_end_object(&j);
    ct_json_finish(&j);
  } else {
    printf("\n%zu %s checked: %zu pass, %zu fail their contract, %zu could not run\n",
           list.n, ct_cli_plural(list.n, "problem", "problems"), list.n - fails - errors,
           fails, errors);
  }
  exit_code = fails || errors ? 1 : 0;
out:
  ct_close(ctx);
  ct_tune_gpu_close(&g);
  ct_problem_list_free(&list);
  return exit_code;
}

int ct_cli_space(const ct_cli *c) {
  ct_problem p;
  int rc = ct_cli_problem(c, &p);
  if (rc) return rc;
  ct_gen_limits lim;
  if (c->arch) {
    if (ct_gen_limits_for_arch(c->arch, &lim) != CT_OK) {
      fprintf(stderr, "convtune space: unknown architecture '%s' (sm_80, sm_89, "
                      "sm_90, sm_90a)\n", c->arch);
      return CT_CLI_EXIT_USAGE;
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
  n = ct_tune_families_keep(c->families, vs, n);
  char spec[CT_PROBLEM_SPEC_MAX];
  ct_problem_format(&p, spec, sizeof spec);
  if (n == 0) { /* as tune says it */
    char why[512];
    ct_tune_families_why(c->families, &p, why, sizeof why);
    fprintf(stderr, "convtune space: no valid variant for %s on %s%s%s%s\n", spec, lim.arch,
            c->families ? " in families " : "", c->families ? c->families : "", why);
    free(vs);
    return 1;
  }
  ct_json j;
  if (c->json) {
    ct_json_init(&j, stdout);
    ct_json_begin_object(&j);
    ct_json_key_str(&j, "problem", spec);
    ct_json_key_str(&j, "arch", lim.arch);
    ct_json_key(&j, "variants");
    ct_json_begin_array(&j);
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
      ct_json_begin_object(&j);
      ct_json_key_str(&j, "family", v->family->name);
      ct_json_key_str(&j, "variant", v->name);
      ct_json_key_int(&j, "threads", threads);
      ct_json_key_int(&j, "smem_bytes", smem);
      ct_json_key(&j, "grid");
      ct_json_begin_array(&j);
      for (int k = 0; k < 3; k++) ct_json_int(&j, l->grid[k]);
      ct_json_end_array(&j);
      ct_json_key_int(&j, "kernels", v->n_kernels);
      ct_json_key_int(&j, "workspace_bytes", (int64_t)v->workspace_bytes);
      ct_json_end_object(&j);
    } else {
      char grid[48];
      snprintf(grid, sizeof grid, "%ux%ux%u", l->grid[0], l->grid[1], l->grid[2]);
      printf("%-8s %7u %9.1f %16s  %s\n", v->family->name, threads, smem / 1024.0,
             grid, v->name);
    }
  }
  if (c->json) {
    ct_json_end_array(&j);
    ct_json_end_object(&j);
    ct_json_finish(&j);
  }
  else
    printf("\n%zu valid %s in %zu %s\n", n, ct_cli_plural(n, "variant", "variants"),
           families, ct_cli_plural(families, "family", "families"));
  free(vs);
  return 0;
}

