/*
** report.c — `convtune report`: a chart of a problem's trials as SVG,
** written by hand (no dependency).  One row per variant, sorted by time: a
** bar for its latest timed trial, coloured by family, the winner outlined
** and labelled; variants that never timed are listed below with their
** status.  The time axis is logarithmic when the times span more than 20x.
*/
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ct_tune.h"

/* Colours for families, in order of first appearance (colour-blind safe,
** Okabe-Ito, then a few more). */
static const char *const report_palette[] = {
  "#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9",
  "#D55E00", "#F0E442", "#000000", "#999933", "#882255",
};
#define REPORT_COLOURS (sizeof report_palette / sizeof report_palette[0])

/* Writes s with XML's special characters escaped. */
static void xml(FILE *f, const char *s) {
  for (; *s; s++) {
    switch (*s) {
    case '<': fputs("&lt;", f); break;
    case '>': fputs("&gt;", f); break;
    case '&': fputs("&amp;", f); break;
    case '"': fputs("&quot;", f); break;
    case '\'': fputs("&apos;", f); break;
    default:
      if ((unsigned char)*s >= 0x20 || *s == '\t') fputc(*s, f);
    }
  }
}

/* The family part of "family:P=v,...". */
static void family_of(const char *variant, char *buf, size_t len) {
  const char *colon = strchr(variant, ':');
  size_t n = colon ? (size_t)(colon - variant) : strlen(variant);
  snprintf(buf, len, "%.*s", (int)n, variant);
}

typedef struct report_row {
  const ct_cache_trial *t; /* the variant's latest trial */
  const ct_cache_trial *timed; /* its latest timed trial, or NULL */
  int family;              /* index into the families seen */
  size_t n_trials;         /* its trials */
} report_row;

static int cmp_rows(const void *a, const void *b) {
  const report_row *x = a, *y = b;
  double tx = x->timed ? x->timed->mean_ms : INFINITY;
  double ty = y->timed ? y->timed->mean_ms : INFINITY;
  if (tx != ty) return tx < ty ? -1 : 1;
  return strcmp(x->t->variant, y->t->variant);
}

ct_status ct_tune_report_svg(FILE *f, const char *title, const char *subtitle,
                             const ct_cache_trial *trials, size_t n,
                             const char *winner) {
  if (f == NULL || title == NULL || (trials == NULL && n > 0))
    return CT_ERR_INVALID_ARG;
  report_row *rows = calloc(n ? n : 1, sizeof *rows);
  char (*fams)[64] = calloc(n ? n : 1, sizeof *fams);
  if (rows == NULL || fams == NULL) {
    free(rows);
    free(fams);
    return CT_ERR_NOMEM;
  }
  size_t nr = 0, nf = 0, n_timed = 0;
  for (size_t i = 0; i < n; i++) {
    const ct_cache_trial *t = &trials[i];
    size_t r = 0;
    while (r < nr && strcmp(rows[r].t->variant, t->variant) != 0) r++;
    if (r == nr) {
      char fam[64];
      family_of(t->variant, fam, sizeof fam);
      size_t k = 0;
      while (k < nf && strcmp(fams[k], fam) != 0) k++;
      if (k == nf) snprintf(fams[nf++], sizeof fams[0], "%s", fam);
      rows[nr].t = t;
      rows[nr].family = (int)k;
      nr++;
    }
    report_row *row = &rows[r];
    row->n_trials++;
    if (t->id > row->t->id) row->t = t;
    if (t->status == CT_TRIAL_TIMED && isfinite(t->mean_ms) &&
        (row->timed == NULL || t->id > row->timed->id))
      row->timed = t;
  }
  qsort(rows, nr, sizeof *rows, cmp_rows);
  double lo = INFINITY, hi = 0;
  for (size_t r = 0; r < nr; r++)
    if (rows[r].timed) {
      n_timed++;
      if (rows[r].timed->mean_ms < lo) lo = rows[r].timed->mean_ms;
      if (rows[r].timed->mean_ms > hi) hi = rows[r].timed->mean_ms;
    }
  int logscale = n_timed > 1 && lo > 0 && hi / lo > 20.0;

  const int width = 1100, left = 400, bar_w = 560, row_h = 16, top = 86;
  int height = top + (int)nr * row_h + 50;
  fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
             "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\""
             " viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"11\">\n"
             "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
          width, height, width, height);
  fputs("<text x=\"10\" y=\"20\" font-size=\"15\" font-weight=\"bold\">", f);
  xml(f, title);
  fputs("</text>\n<text x=\"10\" y=\"38\">", f);
  xml(f, subtitle ? subtitle : "");
  fprintf(f, "</text>\n<text x=\"10\" y=\"54\">%zu trials of %zu variants: %zu "
             "timed; bars: latest timed mean, ms (%s scale)</text>\n",
          n, nr, n_timed, logscale ? "log" : "linear");
  /* Legend. */
  for (size_t k = 0; k < nf; k++) {
    int x = 10 + (int)k * 130;
    fprintf(f, "<rect x=\"%d\" y=\"62\" width=\"12\" height=\"12\" fill=\"%s\"/>"
               "<text x=\"%d\" y=\"72\">",
            x, report_palette[k % REPORT_COLOURS], x + 16);
    xml(f, fams[k]);
    fputs("</text>\n", f);
  }
  /* Rows. */
  for (size_t r = 0; r < nr; r++) {
    const report_row *row = &rows[r];
    int y = top + (int)r * row_h;
    int is_winner = winner && strcmp(row->t->variant, winner) == 0;
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\" font-family=\"monospace\""
               " font-size=\"10\"%s>",
            left - 6, y + 11, is_winner ? " font-weight=\"bold\"" : "");
    xml(f, row->t->variant);
    fputs("</text>\n", f);
    if (row->timed) {
      double v = row->timed->mean_ms, frac;
      if (logscale) frac = 0.05 + 0.95 * log(v / lo) / log(hi / lo);
      else frac = hi > 0 ? v / hi : 0;
      int w = (int)(frac * bar_w + 0.5);
      if (w < 1) w = 1;
      fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\"%s>"
                 "<title>",
              left, y + 2, w, row_h - 4, report_palette[row->family % REPORT_COLOURS],
              is_winner ? " stroke=\"black\" stroke-width=\"2\"" : "");
      xml(f, row->t->variant);
      fprintf(f, ": %.4f ms (%d runs, %zu trials)</title></rect>\n", v,
              row->timed->n_timed, row->n_trials);
      fprintf(f, "<text x=\"%d\" y=\"%d\"%s>%.4f ms%s</text>\n", left + w + 4, y + 11,
              is_winner ? " font-weight=\"bold\"" : "", v,
              is_winner ? "  \xe2\x98\x85 winner" : "");
    } else {
      fprintf(f, "<text x=\"%d\" y=\"%d\" fill=\"#888888\">", left, y + 11);
      xml(f, ct_trial_status_name(row->t->status));
      if (row->t->message[0]) {
        fputs(": ", f);
        char msg[96];
        snprintf(msg, sizeof msg, "%.90s", row->t->message);
        for (char *p = msg; *p; p++)
          if (*p == '\n') *p = ' ';
        xml(f, msg);
      }
      fputs("</text>\n", f);
    }
  }
  /* Axis. */
  int ay = top + (int)nr * row_h + 6;
  fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"black\"/>\n",
          left, ay, left + bar_w, ay);
  if (n_timed > 0) {
    fprintf(f, "<text x=\"%d\" y=\"%d\">%s</text>\n", left, ay + 16,
            logscale ? "" : "0");
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%.4f ms</text>\n",
            left + bar_w, ay + 16, hi);
    if (logscale)
      fprintf(f, "<text x=\"%d\" y=\"%d\">%.4f ms</text>\n",
              left + (int)(0.05 * bar_w), ay + 16, lo);
  }
  fputs("</svg>\n", f);
  free(rows);
  free(fams);
  return ferror(f) ? CT_ERR_IO : CT_OK;
}
