/*
** test_gpu_e2e.c — tune -> database -> runtime, end to end: tune a small
** problem into a fresh database, then in a second process open the runtime
** on that database and check that ct_forward runs the stored winner from
** its cubin (no NVRTC) and meets the precision contract; an untuned problem
** takes the default path, or the nearest tuned problem's winner.
*/
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gpu_common.h"

extern char **environ;

static const char *spec = "n=4,c=3,h=63,w=61,k=20,r=11,s=11,stride=4,pad=2";
static const char *untuned = "n=1,c=2,h=19,w=18,k=6,r=3,s=3,stride=1,pad=1";
static char db[512];

/* In the child: forward p through the runtime, expect `path`. */
static int child_check(const char *problem, ct_path want) {
  ct_tune_gpu g;
  gpu_open_or_skip(&g);
  ct_problem p;
  char err[512];
  if (ct_problem_parse(problem, &p, err, sizeof err) != CT_OK) return 1;
  ct_context *ctx = NULL;
  if (ct_open(db, 0, &ctx) != CT_OK) {
    fprintf(stderr, "ct_open: %s\n", ct_open_error());
    return 1;
  }
  ct_tune_data d;
  if (ct_tune_data_create(&g, &p, ct_tune_fresh_seed(), &d, err, sizeof err) != CT_OK) return 1;
  ct_tune_check chk;
  if (ct_tune_verify(&g, &d, ct_tune_run_forward, ctx, &chk, err, sizeof err) != CT_OK) {
    fprintf(stderr, "forward: %s\n", err);
    return 1;
  }
  ct_path path;
  char variant[CT_GEN_NAME_MAX];
  ct_forward_path(ctx, &p, &path, variant, sizeof variant);
  printf("child: %s -> %s %s, %s (rel err %.2e)\n", problem, ct_path_name(path),
         variant, chk.passes ? "pass" : chk.reason, chk.rel_err);
  /* An untuned problem may borrow the tuned one's winner (nearest). */
  int ok = chk.passes && (path == want || (want == CT_PATH_DEFAULT &&
                                           path == CT_PATH_NEAREST));
  ct_tune_data_destroy(&d);
  ct_close(ctx);
  ct_tune_gpu_close(&g);
  return ok ? 0 : 1;
}

static int spawn_child(const char *self, const char *problem, ct_path want) {
  char want_s[8];
  snprintf(want_s, sizeof want_s, "%d", (int)want);
  char *argv[] = {(char *)self, "--child", db, (char *)problem, want_s, NULL};
  pid_t pid;
  if (posix_spawn(&pid, self, NULL, NULL, argv, environ) != 0) return -1;
  int status;
  if (waitpid(pid, &status, 0) < 0) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static const char *self_path;

static void test_tune_then_load(void) {
  for (int prec = CT_PREC_TF32; prec <= CT_PREC_FP32; prec++) {
    ct_tune_options o;
    ct_tune_options_default(&o);
    ASSERT_EQ_INT(ct_problem_parse(spec, &o.problem, NULL, 0), CT_OK);
    o.problem.precision = (ct_precision)prec;
    o.db_path = db;
    o.screen_trials = 3;
    o.final_trials = 10;
    o.finalists = 2;
    ct_tune_result r;
    char err[1024];
    ct_status rc = ct_tune_run(&o, &r, err, sizeof err);
    if (rc != CT_OK) fprintf(stderr, "tune: %s\n", err);
    ASSERT_EQ_INT(rc, CT_OK);
    ASSERT_TRUE(r.winner >= 0);
    printf("tuned %s: %zu variants, winner %s\n", r.spec, r.n_rows,
           r.rows[r.winner].trial.variant);
    char full[CT_PROBLEM_SPEC_MAX];
    snprintf(full, sizeof full, "%s", r.spec);
    ct_tune_result_free(&r);
    ASSERT_EQ_INT(spawn_child(self_path, full, CT_PATH_TUNED_CUBIN), 0);
  }
  ASSERT_EQ_INT(spawn_child(self_path, untuned, CT_PATH_DEFAULT), 0);
}

int main(int argc, char **argv) {
  if (argc == 5 && !strcmp(argv[1], "--child")) {
    snprintf(db, sizeof db, "%s", argv[2]);
    return child_check(argv[3], (ct_path)atoi(argv[4]));
  }
  self_path = argv[0];
  ct_tune_gpu g;
  gpu_open_or_skip(&g); /* skips where there is no GPU */
  ct_tune_gpu_close(&g);
  char dir[] = "/tmp/convtune-e2e-XXXXXX";
  if (mkdtemp(dir) == NULL) return 1;
  snprintf(db, sizeof db, "%s/tuning.db", dir);
  RUN_TEST(test_tune_then_load);
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
  TEST_EXIT();
}
