/*
** test_report.c — `convtune report`'s SVG on CPU, from a database built
** through the cache API: one bar per timed variant coloured by family, the
** winner marked, failed variants listed, text escaped, a log axis when the
** times spread widely; and the CLI command on that database.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ct_tune.h"
#include "test.h"

static char dir[] = "/tmp/ct_report_XXXXXX";
static char db[256];
static const char *convtune;

static int count(const char *hay, const char *needle) {
  int n = 0;
  for (const char *p = hay; (p = strstr(p, needle)) != NULL; p++) n++;
  return n;
}

/* The SVG of trials as a malloc'd string. */
static char *svg_of(const ct_cache_trial *t, size_t n, const char *winner) {
  FILE *f = tmpfile();
  if (!f) return NULL;
  if (ct_tune_report_svg(f, "convtune: <test> & more", "sub", t, n, winner) != CT_OK) {
    fclose(f);
    return NULL;
  }
  long size = ftell(f);
  rewind(f);
  char *s = calloc(1, (size_t)size + 1);
  if (s && fread(s, 1, (size_t)size, f) != (size_t)size) s[0] = '\0';
  fclose(f);
  return s;
}

static void add(ct_cache *c, int64_t p, int64_t d, const char *variant,
                ct_trial_status st, double ms, const char *msg) {
  ct_cache_trial t;
  memset(&t, 0, sizeof t);
  t.problem_id = p;
  t.device_id = d;
  snprintf(t.variant, sizeof t.variant, "%s", variant);
  t.status = st;
  t.mean_ms = t.median_ms = t.min_ms = t.max_ms = ms;
  t.n_timed = isnan(ms) ? 0 : 10;
  t.max_abs_err = t.rel_err = t.compile_ms = NAN;
  snprintf(t.message, sizeof t.message, "%s", msg);
  ct_cache_trial_add(c, &t);
}

static void test_report_from_cache(void) {
  ct_cache *c = NULL;
  char err[512];
  ct_cache_device d;
  memset(&d, 0, sizeof d);
  snprintf(d.name, sizeof d.name, "NVIDIA H200");
  d.cc_major = 9;
  d.sm_count = 132;
  d.driver_version = 13000;
  snprintf(d.nvrtc_version, sizeof d.nvrtc_version, "13.0");
  snprintf(d.arch, sizeof d.arch, "sm_90a");
  int64_t dev, prob;
  const char *spec = "n=2,c=3,h=45,w=47,k=20,r=11,s=11,stride=4,pad=2,dil=1,bias=1,prec=tf32";
  ASSERT_EQ_INT(ct_cache_open(db, CT_CACHE_CREATE, &c, err, sizeof err), CT_OK);
  ASSERT_EQ_INT(ct_cache_device_id(c, &d, &dev), CT_OK);
  ASSERT_EQ_INT(ct_cache_problem_id(c, spec, "tf32", &prob), CT_OK);
  add(c, prob, dev, "direct:THREADS=128,TP=4,TK=8", CT_TRIAL_TIMED, 2.5, "");
  add(c, prob, dev, "direct:THREADS=64,TP=1,TK=1", CT_TRIAL_TIMED, 9.0, "");
  add(c, prob, dev, "tc:TP=2,BN=32", CT_TRIAL_TIMED, 0.31, "");
  add(c, prob, dev, "tc:TP=2,BN=32", CT_TRIAL_TIMED, 0.30, ""); /* finalist re-time */
  add(c, prob, dev, "tc:TP=1,BN=16", CT_TRIAL_TIMED, 0.42, "");
  add(c, prob, dev, "test_oob", CT_TRIAL_FAULTED, NAN, "illegal <address> & co");
  add(c, prob, dev, "wg:TP=4", CT_TRIAL_WRONG, NAN, "Frobenius");
  ct_cache_winner w;
  memset(&w, 0, sizeof w);
  w.problem_id = prob;
  w.device_id = dev;
  snprintf(w.variant, sizeof w.variant, "tc:TP=2,BN=32");
  snprintf(w.arch, sizeof w.arch, "sm_90a");
  snprintf(w.nvrtc_version, sizeof w.nvrtc_version, "13.0");
  static const char bytes[] = "cubin";
  w.cubin = (void *)bytes;
  w.cubin_size = sizeof bytes;
  w.cubin_hash = ct_gen_hash(bytes, sizeof bytes, CT_GEN_HASH_SEED);
  w.mean_ms = 0.30;
  ASSERT_EQ_INT(ct_cache_winner_set(c, &w), CT_OK);

  ct_cache_trial *t = NULL;
  size_t n = 0;
  ASSERT_EQ_INT(ct_cache_trials(c, prob, dev, &t, &n), CT_OK);
  ct_cache_close(c);
  ASSERT_EQ_INT(n, 7);
  char *s = svg_of(t, n, "tc:TP=2,BN=32");
  free(t);
  ASSERT_TRUE(s != NULL);
  ASSERT_TRUE(strncmp(s, "<?xml", 5) == 0);
  ASSERT_TRUE(strstr(s, "</svg>\n") != NULL);
  ASSERT_TRUE(strstr(s, "convtune: &lt;test&gt; &amp; more") != NULL);
  ASSERT_TRUE(strstr(s, "7 trials of 6 variants: 4 timed") != NULL);
  ASSERT_TRUE(strstr(s, "(log scale)") != NULL); /* 0.30 .. 9.0 ms */
  /* bars: one per timed variant, each with a tooltip */
  ASSERT_EQ_INT(count(s, "<title>"), 4);
  /* the winner's latest time, outlined and labelled */
  ASSERT_TRUE(strstr(s, "0.3000 ms  \xe2\x98\x85 winner") != NULL);
  ASSERT_EQ_INT(count(s, "stroke=\"black\" stroke-width=\"2\""), 1);
  /* families in the legend, in order of appearance */
  ASSERT_TRUE(strstr(s, ">direct</text>") != NULL);
  ASSERT_TRUE(strstr(s, ">tc</text>") != NULL);
  ASSERT_TRUE(strstr(s, ">test_oob</text>") != NULL);
  /* failed variants listed with status and escaped message, after the bars */
  ASSERT_TRUE(strstr(s, "faulted: illegal &lt;address&gt; &amp; co") != NULL);
  ASSERT_TRUE(strstr(s, "wrong: Frobenius") != NULL);
  ASSERT_TRUE(strstr(s, "tc:TP=2,BN=32") < strstr(s, "direct:THREADS=64,TP=1,TK=1"));
  ASSERT_TRUE(strstr(s, "direct:THREADS=64,TP=1,TK=1") < strstr(s, "faulted: "));
  free(s);

  /* No trials: still a document. */
  s = svg_of(NULL, 0, NULL);
  ASSERT_TRUE(s != NULL && strstr(s, "0 trials of 0 variants") && strstr(s, "</svg>"));
  free(s);
  ASSERT_EQ_INT(ct_tune_report_svg(NULL, "t", NULL, NULL, 0, NULL), CT_ERR_INVALID_ARG);
}

static void test_report_command(void) {
  if (convtune == NULL) return;
  char cmd[1024], out[300];
  snprintf(out, sizeof out, "%s/chart.svg", dir);
  snprintf(cmd, sizeof cmd,
           "'%s' report --problem n=2,c=3,h=45,w=47,k=20,r=11,s=11,stride=4,pad=2"
           " --db '%s' --out '%s' > /dev/null", convtune, db, out);
  ASSERT_EQ_INT(system(cmd), 0);
  FILE *f = fopen(out, "r");
  ASSERT_TRUE(f != NULL);
  char buf[65536];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  ASSERT_TRUE(strstr(buf, "winner tc:TP=2,BN=32, 0.3000 ms") != NULL);
  ASSERT_TRUE(strstr(buf, "NVIDIA H200") != NULL);
}

int main(int argc, char **argv) {
  convtune = argc > 1 ? argv[1] : NULL;
  if (mkdtemp(dir) == NULL) return 1;
  snprintf(db, sizeof db, "%s/t.db", dir);
  RUN_TEST(test_report_from_cache);
  RUN_TEST(test_report_command);
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "cannot remove %s\n", dir);
  TEST_EXIT();
}
