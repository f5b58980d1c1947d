/*
** cmd_report.c — `convtune report`: a problem's trials as an SVG chart.
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

const char ct_cli_usage_report[] =
    "usage: convtune report [ID | --problem SPEC [--precision tf32|fp32]]\n"
    "                       [--db PATH] [--out FILE.svg [--force]]\n"
    "\n"
    "Writes an SVG chart of every trial of a problem (problem ID of `convtune\n"
    "db list`, else --problem, default the headline problem) on the device\n"
    "of its winner: one bar per variant (its latest timed mean), coloured by\n"
    "family, the winner marked, failed variants listed with their status.\n"
    "--out defaults to convtune-report.svg (\"-\": the standard output).  The\n"
    "chart is written to a temporary file and renamed over --out only when\n"
    "complete; --out may not be the database, and an existing file that is\n"
    "not an SVG is replaced only with --force.  Needs no GPU.\n";

int ct_cli_report(const ct_cli *c) {
  if (c->n_args == 1 && (c->problem || c->precision)) {
    fprintf(stderr, "convtune report: a problem ID names its problem and precision: give it, "
                    "or --problem and --precision, not both\n");
    return CT_CLI_EXIT_USAGE;
  }
  long id = 0;
  if (c->n_args == 1 && ct_cli_parse_int("report ID", c->args[0], 1, INT32_MAX, &id))
    return CT_CLI_EXIT_USAGE;
  char path[4096], spec[CT_PROBLEM_SPEC_MAX];
  ct_problem p;
  int rc = ct_cli_problem(c, &p);
  if (rc) return rc;
  ct_problem_format(&p, spec, sizeof spec);
  ct_cache *cache = NULL;
  int opened = ct_cli_db_open_existing(c, "report", path, sizeof path, &cache);
  if (opened) return opened;
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
  static const ct_cli_out_kind svg = {"an SVG file", {"<?xml", "<svg"}};
  const char *name = c->out ? c->out : "convtune-report.svg";
  int to_stdout = strcmp(name, "-") == 0;
  ct_cli_out out;
  if (ct_cli_out_open("report", name, path, &svg, c->force, &out))
    goto out;
  ct_status st = ct_tune_report_svg(out.f, title, sub, trials, kept,
                                    entry->variant[0] ? entry->variant : NULL);
  if (st != CT_OK && st != CT_ERR_IO)
    fprintf(stderr, "convtune report: %s\n", ct_status_string(st));
  if (ct_cli_out_close("report", &out, st == CT_OK || st == CT_ERR_IO) || st != CT_OK)
    goto out;
  fprintf(to_stdout ? stderr : stdout, /* the chart may be on stdout */
          "wrote %s: %zu %s of problem %" PRId64 " on %s\n",
          to_stdout ? "the chart" : name, kept, ct_cli_plural(kept, "trial", "trials"), pid,
          d.name[0] ? d.name : "no device");
  exit_code = 0;
out:
  free(rows);
  free(trials);
  ct_cache_close(cache);
  return exit_code;
}
