/*
** main.c — the `convtune` command line: tune, check, db list, db show.
*/
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    "  db list   list the tuned problems in the database\n"
    "  db show   show one problem's trials and winner\n"
    "\n"
    "Run `convtune COMMAND --help` for a command's options.\n"
    "The database is --db PATH, else $CONVTUNE_DB, else\n"
    "$XDG_CACHE_HOME/convtune/tuning.db, else ~/.cache/convtune/tuning.db.\n";

static const char *usage_tune =
    "usage: convtune tune [--problem SPEC] [--precision tf32|fp32] [--db PATH]\n"
    "                     [--device N] [--threads N] [--trials N]\n"
    "                     [--final-trials N] [--finalists N] [--seed N]\n"
    "                     [--json] [--quiet]\n"
    "\n"
    "Generates every valid variant of the problem, compiles them with NVRTC\n"
    "(--threads, default every core), checks each against a float64\n"
    "reference on fresh random inputs, times those that pass (--trials\n"
    "screening trials, default 10), re-times the --finalists fastest (default\n"
    "3) with the full protocol (--final-trials, default 100: L2 flushed before\n"
    "each, one discarded) and stores the winner and its cubin in the database.\n"
    "Every trial is recorded.  SPEC defaults to the headline problem:\n"
    "  n=256,c=3,h=224,w=224,k=96,r=11,s=11,stride=4,pad=2,dil=1,bias=1,prec=tf32\n"
    "--precision overrides the spec's prec.  --seed fixes the inputs.\n"
    "--json prints the result as JSON on stdout; --quiet drops progress lines.\n";

static const char *usage_check =
    "usage: convtune check [--problem SPEC] [--precision tf32|fp32] [--db PATH]\n"
    "                      [--device N] [--trials N] [--seed N] [--json]\n"
    "\n"
    "Runs what the runtime library would run for the problem (the tuned\n"
    "winner, else a default variant) on fresh random inputs, verifies it\n"
    "against a float64 reference under the problem's precision contract and\n"
    "times it with the full protocol (--trials, default 100).  Exits 1 when\n"
    "the result fails its contract.\n";

static const char *usage_space =
    "usage: convtune space [--problem SPEC] [--precision tf32|fp32]\n"
    "                      [--arch ARCH | --device N] [--json]\n"
    "\n"
    "Lists every valid variant of the problem: family, parameters, threads,\n"
    "shared memory, grid.  --arch plans against a named architecture's\n"
    "limits (sm_80, sm_89, sm_90, sm_90a) and needs no GPU; without it the\n"
    "attached GPU's limits are read (device --device, default 0).\n";

static const char *usage_db =
    "usage: convtune db list [--db PATH] [--json]\n"
    "       convtune db show ID [--db PATH] [--json]\n"
    "\n"
    "list: one line per tuned problem and device: id, spec, trials, winner.\n"
    "show: every trial of problem ID and its winner.  Neither needs a GPU.\n";

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
  int json, quiet, help;
  const char *args[4];     /* positional arguments */
  int n_args;
} cli;

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
  printf("%-9s %-14s %10s %10s %10s %10s %4s  %s\n", "trial", "status",
         "mean ms", "median ms", "max abs", "rel err", "regs", "variant");
}

static void print_trial(const ct_cache_trial *t, const char *mark) {
  char mean[16] = "-", med[16] = "-", mae[16] = "-", rel[16] = "-";
  if (isfinite(t->mean_ms)) snprintf(mean, sizeof mean, "%.4f", t->mean_ms);
  if (isfinite(t->median_ms)) snprintf(med, sizeof med, "%.4f", t->median_ms);
  if (isfinite(t->max_abs_err)) snprintf(mae, sizeof mae, "%.2e", t->max_abs_err);
  if (isfinite(t->rel_err)) snprintf(rel, sizeof rel, "%.2e", t->rel_err);
  printf("%-9" PRId64 " %-14s %10s %10s %10s %10s %4d  %s%s\n", t->id,
         ct_trial_status_name(t->status), mean, med, mae, rel, t->regs,
         t->variant, mark);
  if (t->status != CT_TRIAL_TIMED && t->message[0])
    printf("%9s   %.150s\n", "", t->message);
}

/* ---------------------------------------------------------------------- */
/* Commands                                                                */

static int cmd_tune(const cli *c) {
  if (c->help) { fputs(usage_tune, stdout); return 0; }
  if (c->n_args) { fprintf(stderr, "convtune tune: unexpected argument '%s'\n", c->args[0]); return EXIT_USAGE; }
  ct_tune_options o;
  ct_tune_options_default(&o);
  int rc = cli_problem(c, &o.problem);
  if (rc) return rc;
  char db[4096];
  if (cli_db(c, db, sizeof db)) return 1;
  o.db_path = db;
  o.device = c->device;
  o.threads = c->threads;
  if (c->trials) o.screen_trials = c->trials;
  if (c->final_trials) o.final_trials = c->final_trials;
  if (c->finalists) o.finalists = c->finalists;
  o.seed = c->seed;
  o.progress = c->quiet ? NULL : (c->json ? stderr : stdout);

  ct_tune_result r;
  char err[1024];
  ct_status st = ct_tune_run(&o, &r, err, sizeof err);
  if (st != CT_OK) {
    fprintf(stderr, "convtune tune: %s\n", err);
    ct_tune_result_free(&r);
    return 1;
  }
  size_t n_timed = 0, n_wrong = 0, n_failed = 0;
  for (size_t i = 0; i < r.n_rows; i++) {
    ct_trial_status s = r.rows[i].trial.status;
    n_timed += s == CT_TRIAL_TIMED;
    n_wrong += s == CT_TRIAL_WRONG;
    n_failed += s == CT_TRIAL_COMPILE_FAILED || s == CT_TRIAL_LAUNCH_FAILED;
  }
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
           "\"threads\": %d, \"winner\": ",
           r.seed, r.wall_s, r.compile_s, r.threads);
    if (r.winner >= 0) json_str(stdout, r.rows[r.winner].trial.variant);
    else fputs("null", stdout);
    printf(", \"trials\": [");
    for (size_t i = 0; i < r.n_rows; i++) {
      if (i) fputs(", ", stdout);
      json_trial(stdout, &r.rows[i].trial);
    }
    printf("]}\n");
  } else {
    printf("\nproblem  %s\ndevice   %s (%s, %d SMs, driver %d, NVRTC %s)\n"
           "database %s\nseed     %" PRIu64 "\n\n",
           r.spec, r.device.name, r.device.arch, r.device.sm_count,
           r.device.driver_version, r.device.nvrtc_version, db, r.seed);
    print_trial_header();
    for (size_t i = 0; i < r.n_rows; i++)
      print_trial(&r.rows[i].trial, (long)i == r.winner ? "  <- winner"
                                    : r.rows[i].finalist ? "  (finalist)" : "");
    printf("\n%zu variants: %zu timed, %zu wrong, %zu failed; %.1f s wall, "
           "%.1f s NVRTC on %d threads (%.1f variants/s)\n",
           r.n_rows, n_timed, n_wrong, n_failed, r.wall_s, r.compile_s,
           r.threads, r.wall_s > 0 ? (double)r.n_rows / r.wall_s : 0.0);
    if (r.winner >= 0) {
      const ct_cache_trial *t = &r.rows[r.winner].trial;
      printf("winner   %s\n         mean %.4f ms, median %.4f ms, min %.4f, max "
             "%.4f (%d trials)\n",
             t->variant, t->mean_ms, t->median_ms, t->min_ms, t->max_ms, t->n_timed);
    }
  }
  int ok = r.winner >= 0;
  if (!ok) fprintf(stderr, "convtune tune: no variant passed its precision contract\n");
  ct_tune_result_free(&r);
  return ok ? 0 : 1;
}

typedef struct check_arg {
  ct_context *ctx;
} check_arg;

static ct_status run_forward(void *arg, const ct_tune_data *d, CUstream s,
                             char *err, size_t len) {
  check_arg *a = arg;
  ct_status rc = ct_forward(a->ctx, &d->p, (const float *)(uintptr_t)d->x,
                            (const float *)(uintptr_t)d->w,
                            (const float *)(uintptr_t)d->b,
                            (float *)(uintptr_t)d->y, s);
  if (rc != CT_OK) {
    const char *log = ct_last_nvrtc_log(a->ctx);
    snprintf(err, len, "ct_forward: %s%s%s", ct_last_error(a->ctx),
             log[0] ? "\n" : "", log);
  }
  return rc;
}

static int cmd_check(const cli *c) {
  if (c->help) { fputs(usage_check, stdout); return 0; }
  if (c->n_args) { fprintf(stderr, "convtune check: unexpected argument '%s'\n", c->args[0]); return EXIT_USAGE; }
  ct_problem p;
  int rc = cli_problem(c, &p);
  if (rc) return rc;
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
  check_arg arg = {ctx};
  ct_tune_check chk;
  if (ct_tune_verify(&g, &d, run_forward, &arg, &chk, err, sizeof err) != CT_OK) {
    fprintf(stderr, "convtune check: %s\n", err);
    goto out;
  }
  ct_path path;
  char variant[CT_GEN_NAME_MAX];
  ct_forward_path(ctx, &p, &path, variant, sizeof variant);
  ct_tune_stats st;
  memset(&st, 0, sizeof st);
  st.mean_ms = st.median_ms = st.min_ms = st.max_ms = NAN;
  if (chk.passes &&
      ct_tune_time(&g, &d, run_forward, &arg, trials, &st, err, sizeof err) != CT_OK) {
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
           "seed      %" PRIu64 "\n",
           spec, g.device.name, g.limits.arch, ct_path_name(path), variant, seed);
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
  if (c->help) { fputs(usage_space, stdout); return 0; }
  if (c->n_args) { fprintf(stderr, "convtune space: unexpected argument '%s'\n", c->args[0]); return EXIT_USAGE; }
  ct_problem p;
  int rc = cli_problem(c, &p);
  if (rc) return rc;
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
  if (db_open(c, "db show", path, sizeof path, &cache)) return 1;
  if (cache == NULL) {
    fprintf(stderr, "convtune db show: no tuning database at %s\n", path);
    return 1;
  }
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
  fprintf(stderr, "convtune db: unknown subcommand '%s' (list, show)\n", c->args[0]);
  return EXIT_USAGE;
}

int main(int argc, char **argv) {
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
      {"space", cmd_space}, {"tune", cmd_tune}, {"check", cmd_check}, {"db", cmd_db}};
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
