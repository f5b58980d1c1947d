/*
** cmd_tune.c — the commands on one problem: `convtune tune`, `check` and
** `space`.
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

const char ct_cli_usage_tune[] =
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

const char ct_cli_usage_check[] =
    "usage: convtune check [--problem SPEC] [--precision tf32|fp32] [--db PATH]\n"
    "                      [--device N] [--trials N] [--seed N] [--json]\n"
    "\n"
    "Runs what the runtime library would run for the problem (the tuned\n"
    "winner, else the nearest tuned problem's winner, else a default\n"
    "variant; it prints which and why, and the database's state) on fresh\n"
    "random inputs, verifies it against a float64 reference under the\n"
    "problem's precision contract and times it with the full protocol\n"
    "(--trials, default 100).  Exits 1 when the result fails its contract.\n";

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

static const char *origin_name(ct_tune_origin o) {
  return o == CT_TUNE_RESUMED ? "resumed" : o == CT_TUNE_SCREENED ? "screened"
                                                                  : "untried";
}

int ct_cli_tune(const ct_cli *c) {
  ct_tune_options o;
  ct_tune_options_default(&o);
  int rc = ct_cli_problem(c, &o.problem);
  if (rc) return rc;
  char db[4096];
  rc = ct_cli_db(c, "tune", CT_CLI_DB_WRITE, db, sizeof db);
  if (rc) return rc;
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

int ct_cli_check(const ct_cli *c) {
  ct_problem p;
  int rc = ct_cli_problem(c, &p);
  if (rc) return rc;
  char db[4096];
  rc = ct_cli_db(c, "check", CT_CLI_DB_READ, db, sizeof db);
  if (rc) return rc;
  int trials = c->trials ? c->trials : 100;
  char err[1024], spec[CT_PROBLEM_SPEC_MAX];
  ct_problem_format(&p, spec, sizeof spec);

  ct_tune_gpu g;
  ct_tune_data d;
  memset(&d, 0, sizeof d);
  ct_context *ctx = NULL;
  int exit_code = 1;
  ct_status gst = ct_tune_gpu_open(c->device, &g, err, sizeof err);
  if (gst != CT_OK) {
    fprintf(stderr, "convtune check: %s\n", err);
    if (gst == CT_ERR_NO_DRIVER || gst == CT_ERR_NO_DEVICE) ct_cli_no_gpu_hint("check");
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
    ct_json j;
    ct_json_init(&j, stdout);
    ct_json_begin_object(&j);
    ct_json_key_str(&j, "problem", spec);
    ct_json_key_str(&j, "device", g.device.name);
    ct_json_key_str(&j, "path", ct_path_name(path));
    ct_json_key_str(&j, "variant", variant);
    ct_json_key_str(&j, "why", why);
    ct_json_key_str(&j, "database", dbmsg);
    ct_json_key(&j, "seed");
    ct_json_uint(&j, seed);
    ct_json_key_bool(&j, "passes", chk.passes);
    ct_json_key_num(&j, "max_abs_err", chk.max_abs_err);
    ct_json_key_num(&j, "rel_err", chk.rel_err);
    ct_json_key_num(&j, "mean_ms", st.mean_ms);
    ct_json_key_num(&j, "median_ms", st.median_ms);
    ct_json_key_num(&j, "min_ms", st.min_ms);
    ct_json_key_num(&j, "max_ms", st.max_ms);
    ct_json_key_int(&j, "n_timed", st.n);
    ct_json_key_str(&j, "reason", chk.reason);
    ct_json_end_object(&j);
    ct_json_finish(&j);
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
    fprintf(stderr, "convtune space: no valid variant for %s on %s in families %s\n",
            spec, lim.arch, c->families);
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

