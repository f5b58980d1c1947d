/*
** worker.c — the measuring worker (see ct_tune.h): the GPU half of a tune,
** isolated in a child process so that a variant which faults, hangs or
** takes the process down costs one worker, not the tune.
**
**   parent (the tuner)                     child (`EXE __ct_worker FD`)
**   ------------------                     ----------------------------
**   fork + exec, socketpair        --->    opens the device, says HELLO
**   SETUP problem, seed            --->    test data + float64 reference
**                                  <---    SETUP_DONE status
**   JOB variant, cubin (watchdog)  --->    load, verify, time
**                                  <---    OUTCOME (fatal: then it exits)
**   closes the socket              --->    exits
**
** Messages are a header (magic, type, payload length) and a payload of
** fixed structs: both ends are the same build (HELLO carries the protocol
** version and the struct sizes, and a mismatch is refused).  The parent
** waits with poll() in short slices so that a raised stop flag or the
** job's deadline ends the wait; on a deadline it kills the child (SIGKILL)
** and the job is a "timeout"; on EOF (the child died) it is "faulted".
** The child dies with its parent (PR_SET_PDEATHSIG) and ignores SIGINT: a
** terminal's ^C reaches the whole process group, and it is the parent's to
** handle.
*/
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ct_drv.h"
#include "ct_nvrtc.h"
#include "ct_rt.h"
#include "ct_tune.h"

static double wk_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void wk_sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

/* ---------------------------------------------------------------------- */
/* Serving: one device, one problem's data, one job at a time              */

typedef struct wk_serve {
  int isolated;            /* 1 in a worker process */
  int fake;                /* CONVTUNE_TEST_FAKE_GPU=1 */
  int fake_ms;             /* what each fake job takes */
  ct_tune_gpu g;           /* real: the device */
  ct_tune_data d;          /* real: the test data, after setup */
  int have_data;
  ct_gen_limits limits;
  ct_cache_device device;
  ct_problem problem;
} wk_serve;

static ct_status serve_open(wk_serve *s, int device, char *err, size_t len) {
  const char *fake = getenv("CONVTUNE_TEST_FAKE_GPU");
  s->fake = fake != NULL && strcmp(fake, "1") == 0;
  if (s->fake) {
    const char *nd = getenv("CONVTUNE_TEST_FAKE_DEVICES");
    int count = nd && *nd ? atoi(nd) : 1;
    if (device < 0 || device >= count) {
      snprintf(err, len, "no fake device %d (CONVTUNE_TEST_FAKE_DEVICES=%d)", device, count);
      return CT_ERR_NO_DEVICE;
    }
    const char *ms = getenv("CONVTUNE_TEST_FAKE_MS");
    s->fake_ms = ms && *ms ? atoi(ms) : 20;
    ct_gen_limits_for_arch("sm_90a", &s->limits);
    memset(&s->device, 0, sizeof s->device);
    snprintf(s->device.name, sizeof s->device.name, "convtune fake GPU");
    s->device.cc_major = s->limits.cc_major;
    s->device.cc_minor = s->limits.cc_minor;
    s->device.sm_count = s->limits.sm_count;
    snprintf(s->device.arch, sizeof s->device.arch, "%s", s->limits.arch);
    ct_rt_nvrtc_version(s->device.nvrtc_version, sizeof s->device.nvrtc_version);
    return CT_OK;
  }
  ct_status rc = ct_tune_gpu_open(device, &s->g, err, len);
  if (rc != CT_OK) return rc;
  s->limits = s->g.limits;
  s->device = s->g.device;
  return CT_OK;
}

static void serve_close(wk_serve *s) {
  if (s->have_data) ct_tune_data_destroy(&s->d);
  ct_tune_gpu_close(&s->g);
  memset(s, 0, sizeof *s);
}

static ct_status serve_setup(wk_serve *s, const ct_problem *p, uint64_t seed,
                             char *err, size_t len) {
  if (s->have_data) ct_tune_data_destroy(&s->d);
  s->have_data = 0;
  s->problem = *p;
  if (s->fake) {
    wk_sleep_ms(s->fake_ms);
    return CT_OK;
  }
  ct_status rc = ct_tune_data_create(&s->g, p, seed, &s->d, err, len);
  s->have_data = rc == CT_OK;
  return rc;
}

static ct_status run_kernel(void *arg, const ct_tune_data *d, CUstream s,
                            char *err, size_t len) {
  const ct_rt_kernel *k = arg;
  CUresult cr;
  ct_status rc = ct_rt_kernel_launch(k, d->x, d->w, d->b, d->y, s, &cr);
  if (rc == CT_ERR_INVALID_ARG) {
    snprintf(err, len, "launch refused: a tensor map's buffer is not 16-byte aligned");
  } else if (rc != CT_OK) {
    char buf[256];
    snprintf(err, len, "launch failed: %s", ct_drv_error(cr, buf, sizeof buf));
  }
  return rc;
}

/* After a failure: 1 when the context is poisoned (a sticky error such as
** an illegal address), so the worker must end. */
static int context_lost(void) {
  return ct_drv.cuCtxSynchronize() != CUDA_SUCCESS;
}

/* A failed step of a job: launch-failed, or faulted when the context is
** lost.  Returns the job's fatal flag. */
static int job_failed(ct_tune_outcome *out, const char *what, const char *err) {
  int lost = context_lost();
  out->status = lost ? CT_TRIAL_FAULTED : CT_TRIAL_LAUNCH_FAILED;
  snprintf(out->message, sizeof out->message, "%s%.230s", what, err);
  return lost;
}

/* The fake device's time for a variant: smooth in the parameters' value
** indices around a per-family optimum, so local search has a slope to
** follow, with 1% of deterministic noise. */
static double fake_mean_ms(const ct_gen_variant *v) {
  const ct_gen_family *f = v->family;
  uint64_t h = ct_gen_hash(f->name, strlen(f->name), CT_GEN_HASH_SEED);
  double base = 0.5 + (double)(h % 100) / 100.0, cost = 0.0;
  for (int p = 0; p < f->n_params; p++) {
    int n = f->params[p].n_values, idx = 0;
    for (int i = 0; i < n; i++)
      if (f->params[p].values[i] == v->values[p]) idx = i;
    int target = (int)(ct_gen_hash(f->params[p].name, strlen(f->params[p].name), h) %
                       (uint64_t)n);
    cost += fabs((double)(idx - target)) / n;
  }
  uint64_t noise = ct_gen_hash(v->name, strlen(v->name), CT_GEN_HASH_SEED) % 11;
  return base * (1.0 + 0.5 * cost) * (1.0 + 0.002 * ((double)noise - 5.0));
}

/* The fake device: acts out the test families' faults. */
static int serve_fake_job(wk_serve *s, const ct_gen_variant *v,
                          const ct_tune_job *job, ct_tune_outcome *out) {
  wk_sleep_ms(s->fake_ms);
  const char *fam = v->family->name;
  if (strcmp(fam, "test_oob") == 0) {
    if (s->isolated) kill(getpid(), SIGKILL); /* dies without a word */
    out->status = CT_TRIAL_FAULTED;
    snprintf(out->message, sizeof out->message,
             "CUDA_ERROR_ILLEGAL_ADDRESS (fake)");
    return 1;
  }
  if (strcmp(fam, "test_hang") == 0) {
    if (s->isolated)
      for (;;) pause(); /* the parent's watchdog ends this */
    out->status = CT_TRIAL_TIMEOUT;
    snprintf(out->message, sizeof out->message, "hangs (fake, in-process)");
    return 1;
  }
  if (strcmp(fam, "test_refuse") == 0) {
    out->status = CT_TRIAL_LAUNCH_FAILED;
    snprintf(out->message, sizeof out->message,
             "launch failed: CUDA_ERROR_INVALID_VALUE (fake)");
    return 0;
  }
  if (job->verify) {
    out->max_abs_err = strcmp(fam, "test_wrong") == 0 ? 0.5 : 1e-6;
    out->rel_err = strcmp(fam, "test_wrong") == 0 ? 0.3 : 1e-7;
    if (strcmp(fam, "test_wrong") == 0) {
      out->status = CT_TRIAL_WRONG;
      snprintf(out->message, sizeof out->message, "Frobenius: far off (fake)");
      return 0;
    }
  }
  double m = fake_mean_ms(v);
  out->stats.mean_ms = out->stats.median_ms = m;
  out->stats.min_ms = 0.99 * m;
  out->stats.max_ms = 1.01 * m;
  out->stats.n = job->trials;
  out->status = CT_TRIAL_TIMED;
  return 0;
}

/* Runs one job into *out.  Returns 1 when the worker must end (its context
** is lost), else 0. */
static int serve_job(wk_serve *s, const ct_tune_job *job, ct_tune_outcome *out) {
  memset(out, 0, sizeof *out);
  out->max_abs_err = out->rel_err = NAN;
  out->stats.mean_ms = out->stats.median_ms = out->stats.min_ms =
      out->stats.max_ms = NAN;
  ct_gen_variant v;
  ct_status rc = ct_gen_variant_from_name(&s->problem, &s->limits, job->variant, &v);
  if (rc != CT_OK) {
    out->status = CT_TRIAL_LAUNCH_FAILED;
    snprintf(out->message, sizeof out->message,
             "the worker cannot rebuild the variant: %s", ct_status_string(rc));
    return 0;
  }
  if (job->cubin == NULL || job->cubin_size == 0) {
    out->status = CT_TRIAL_LAUNCH_FAILED;
    snprintf(out->message, sizeof out->message, "no cubin");
    return 0;
  }
  if (s->fake) return serve_fake_job(s, &v, job, out);
  if (!s->have_data) {
    out->status = CT_TRIAL_LAUNCH_FAILED;
    snprintf(out->message, sizeof out->message, "the worker has no test data");
    return 0;
  }

  char err[512] = "";
  ct_rt_kernel k;
  CUresult cr;
  if (ct_rt_kernel_load(&v, job->cubin, &k, &cr) != CT_OK) {
    ct_drv_error(cr, err, sizeof err);
    return job_failed(out, "load: ", err);
  }
  int fatal = 0;
  if (job->verify) {
    ct_tune_check chk;
    rc = ct_tune_verify(&s->g, &s->d, run_kernel, &k, &chk, err, sizeof err);
    if (rc != CT_OK) {
      fatal = job_failed(out, "", err);
      goto out;
    }
    out->max_abs_err = chk.max_abs_err;
    out->rel_err = chk.rel_err;
    if (!chk.passes) {
      out->status = CT_TRIAL_WRONG;
      snprintf(out->message, sizeof out->message, "%.191s", chk.reason);
      goto out;
    }
  }
  if (job->trials > 0) {
    rc = ct_tune_time(&s->g, &s->d, run_kernel, &k, job->trials, &out->stats,
                      err, sizeof err);
    if (rc != CT_OK) {
      fatal = job_failed(out, "", err);
      goto out;
    }
  }
  out->status = CT_TRIAL_TIMED;
out:
  ct_rt_kernel_unload(&k);
  return fatal;
}

/* ---------------------------------------------------------------------- */
/* The wire                                                                */

#define WK_MAGIC 0x43545752u /* "CTWR" */
#define WK_PROTOCOL 1

enum { WK_HELLO = 1, WK_SETUP, WK_SETUP_DONE, WK_JOB, WK_OUTCOME };

typedef struct wk_header {
  uint32_t magic, type;
  uint64_t len; /* payload bytes after the header */
} wk_header;

typedef struct wk_hello {
  uint32_t protocol;      /* WK_PROTOCOL */
  uint32_t sizes;         /* the structs' sizes, folded: same build? */
  int32_t status;         /* of opening the device */
  char err[512];
  ct_gen_limits limits;
  ct_cache_device device;
} wk_hello;

typedef struct wk_setup {
  ct_problem problem;
  uint64_t seed;
} wk_setup;

typedef struct wk_status {
  int32_t status;
  char err[512];
} wk_status;

typedef struct wk_job {     /* followed by cubin_size bytes */
  char variant[CT_GEN_NAME_MAX];
  int32_t verify, trials;
  uint64_t cubin_size;
} wk_job;

typedef struct wk_outcome {
  ct_tune_outcome out;
  int32_t fatal;
} wk_outcome;

static uint32_t wk_sizes(void) {
  return (uint32_t)(sizeof(wk_hello) * 31u + sizeof(wk_setup) * 37u +
                    sizeof(wk_job) * 41u + sizeof(wk_outcome) * 43u);
}

/* Writes all n bytes; never raises SIGPIPE.  Returns 0 or -1. */
static int wk_write(int fd, const void *buf, size_t n) {
  const char *p = buf;
  while (n > 0) {
    ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return -1;
    p += k;
    n -= (size_t)k;
  }
  return 0;
}

static int wk_send(int fd, uint32_t type, const void *a, size_t na,
                   const void *b, size_t nb) {
  wk_header h = {WK_MAGIC, type, (uint64_t)(na + nb)};
  if (wk_write(fd, &h, sizeof h) || wk_write(fd, a, na)) return -1;
  return nb ? wk_write(fd, b, nb) : 0;
}

enum { WK_OK = 0, WK_EOF = -1, WK_TIMEOUT = -2, WK_STOPPED = -3, WK_BROKEN = -4 };

/* Reads exactly n bytes.  deadline <= 0: wait for ever; else until that
** wk_now() time.  stop (may be NULL) is polled every 100 ms. */
static int wk_read(int fd, void *buf, size_t n, double deadline,
                   volatile sig_atomic_t *stop) {
  char *p = buf;
  while (n > 0) {
    if (stop && *stop) return WK_STOPPED;
    int slice = 100;
    if (deadline > 0) {
      double left = deadline - wk_now();
      if (left <= 0) return WK_TIMEOUT;
      if (left < 0.1) slice = (int)(left * 1000) + 1;
    } else if (stop == NULL) {
      slice = -1;
    }
    struct pollfd pfd = {fd, POLLIN, 0};
    int r = poll(&pfd, 1, slice);
    if (r < 0 && errno != EINTR) return WK_BROKEN;
    if (r <= 0) continue;
    ssize_t k = read(fd, p, n);
    if (k < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (k < 0) return WK_BROKEN;
    if (k == 0) return WK_EOF;
    p += k;
    n -= (size_t)k;
  }
  return WK_OK;
}

/* Reads a message of type `type` whose payload is exactly `size` bytes. */
static int wk_recv(int fd, uint32_t type, void *payload, size_t size,
                   double deadline, volatile sig_atomic_t *stop) {
  wk_header h;
  int r = wk_read(fd, &h, sizeof h, deadline, stop);
  if (r != WK_OK) return r;
  if (h.magic != WK_MAGIC || h.type != type || h.len != size) return WK_BROKEN;
  return wk_read(fd, payload, size, deadline, stop);
}

/* ---------------------------------------------------------------------- */
/* The worker process                                                      */

int ct_tune_worker_main(int argc, char **argv) {
  if (argc != 4 || strcmp(argv[1], CT_TUNE_WORKER_ARG) != 0) {
    fprintf(stderr, "usage: %s %s FD DEVICE (started by the tuner)\n", argv[0],
            CT_TUNE_WORKER_ARG);
    return 2;
  }
  int fd = atoi(argv[2]), device = atoi(argv[3]);
  wk_serve s;
  memset(&s, 0, sizeof s);
  s.isolated = 1;
  wk_hello hello;
  memset(&hello, 0, sizeof hello);
  hello.protocol = WK_PROTOCOL;
  hello.sizes = wk_sizes();
  hello.status = serve_open(&s, device, hello.err, sizeof hello.err);
  hello.limits = s.limits;
  hello.device = s.device;
  if (wk_send(fd, WK_HELLO, &hello, sizeof hello, NULL, 0) != 0) return 1;
  if (hello.status != CT_OK) return 1;

  void *cubin = NULL;
  size_t cap = 0;
  for (;;) {
    wk_header h;
    if (wk_read(fd, &h, sizeof h, 0, NULL) != WK_OK) break; /* parent gone */
    if (h.magic != WK_MAGIC) return 1;
    if (h.type == WK_SETUP && h.len == sizeof(wk_setup)) {
      wk_setup m;
      wk_status st;
      memset(&st, 0, sizeof st);
      if (wk_read(fd, &m, sizeof m, 0, NULL) != WK_OK) break;
      st.status = serve_setup(&s, &m.problem, m.seed, st.err, sizeof st.err);
      if (wk_send(fd, WK_SETUP_DONE, &st, sizeof st, NULL, 0) != 0) break;
    } else if (h.type == WK_JOB && h.len >= sizeof(wk_job)) {
      wk_job m;
      if (wk_read(fd, &m, sizeof m, 0, NULL) != WK_OK) break;
      if (m.cubin_size != h.len - sizeof m) return 1;
      if (m.cubin_size > cap) {
        free(cubin);
        cap = m.cubin_size;
        cubin = malloc(cap);
        if (cubin == NULL) return 1;
      }
      if (m.cubin_size && wk_read(fd, cubin, m.cubin_size, 0, NULL) != WK_OK) break;
      ct_tune_job job;
      memset(&job, 0, sizeof job);
      memcpy(job.variant, m.variant, sizeof job.variant);
      job.variant[sizeof job.variant - 1] = '\0';
      job.verify = m.verify;
      job.trials = m.trials;
      job.cubin = cubin;
      job.cubin_size = m.cubin_size;
      wk_outcome o;
      memset(&o, 0, sizeof o);
      o.fatal = serve_job(&s, &job, &o.out);
      if (wk_send(fd, WK_OUTCOME, &o, sizeof o, NULL, 0) != 0) break;
      if (o.fatal) _exit(3); /* the context is gone: so is this process */
    } else {
      return 1;
    }
  }
  free(cubin);
  serve_close(&s);
  return 0;
}

/* ---------------------------------------------------------------------- */
/* The parent's handle                                                     */

struct ct_tune_worker {
  char *exe;                   /* NULL: in-process */
  int device;
  volatile sig_atomic_t *stop;
  pid_t pid;                   /* isolated: the child, 0 when none */
  int fd;                      /* isolated: the socket, -1 when none */
  int alive;
  int restarts;
  wk_serve local;              /* in-process */
  ct_gen_limits limits;
  ct_cache_device device_key;
  int have_setup;              /* setup done once: repeated on restart */
  ct_problem problem;
  uint64_t seed;
  double setup_timeout_s;
};

/* "exited with status N" / "killed by signal N (NAME)" for a wait status. */
static void describe_exit(int status, char *buf, size_t len) {
  if (WIFSIGNALED(status))
    snprintf(buf, len, "killed by signal %d (%s)", WTERMSIG(status),
             strsignal(WTERMSIG(status)));
  else if (WIFEXITED(status))
    snprintf(buf, len, "exited with status %d", WEXITSTATUS(status));
  else
    snprintf(buf, len, "ended");
}

/* Ends the child: kill (if asked) and reap; describes how it ended. */
static void child_end(ct_tune_worker *w, int kill_it, char *why, size_t len) {
  if (w->fd >= 0) close(w->fd);
  w->fd = -1;
  w->alive = 0;
  if (w->pid <= 0) {
    if (why && len) snprintf(why, len, "no worker process");
    return;
  }
  int status = 0;
  if (kill_it) kill(w->pid, SIGKILL);
  /* A child that closed its socket exits at once; one stuck in the driver
  ** gets two seconds, then SIGKILL. */
  for (int i = 0; !kill_it && i < 200; i++) {
    pid_t r = waitpid(w->pid, &status, WNOHANG);
    if (r == w->pid) {
      if (why && len) describe_exit(status, why, len);
      w->pid = 0;
      return;
    }
    if (r < 0) break;
    wk_sleep_ms(10);
  }
  kill(w->pid, SIGKILL);
  while (waitpid(w->pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (why && len) describe_exit(status, why, len);
  w->pid = 0;
}

static ct_status spawn(ct_tune_worker *w, char *err, size_t len) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    snprintf(err, len, "cannot make the worker's socket: %s", strerror(errno));
    return CT_ERR_IO;
  }
  /* Everything the child needs is made before fork: after it, only
  ** async-signal-safe calls until exec. */
  char fd_arg[16], dev_arg[16];
  snprintf(fd_arg, sizeof fd_arg, "%d", sv[1]);
  snprintf(dev_arg, sizeof dev_arg, "%d", w->device);
  char *argv[] = {w->exe, CT_TUNE_WORKER_ARG, fd_arg, dev_arg, NULL};
  struct sigaction ign, dfl;
  memset(&ign, 0, sizeof ign);
  memset(&dfl, 0, sizeof dfl);
  ign.sa_handler = SIG_IGN;
  dfl.sa_handler = SIG_DFL;
  sigset_t none;
  sigemptyset(&none);
  pid_t parent = getpid();
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) {
    snprintf(err, len, "cannot start the worker: %s", strerror(errno));
    close(sv[0]);
    close(sv[1]);
    return CT_ERR_IO;
  }
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    sigaction(SIGINT, &ign, NULL);
    sigaction(SIGTERM, &dfl, NULL);
    sigaction(SIGPIPE, &dfl, NULL);
    sigprocmask(SIG_SETMASK, &none, NULL);
    fcntl(sv[1], F_SETFD, 0); /* the one descriptor that crosses exec */
    execv(w->exe, argv);
    _exit(127);
  }
  close(sv[1]);
  w->pid = pid;
  w->fd = sv[0];

  wk_hello hello;
  int r = wk_recv(w->fd, WK_HELLO, &hello, sizeof hello, wk_now() + 120.0, w->stop);
  if (r != WK_OK) {
    char why[128];
    child_end(w, r != WK_EOF, why, sizeof why);
    snprintf(err, len, "the GPU worker (%s %s) did not start: %s%s", w->exe,
             CT_TUNE_WORKER_ARG,
             r == WK_TIMEOUT ? "no answer in 120 s; " :
             r == WK_STOPPED ? "interrupted; " :
             r == WK_BROKEN ? "it speaks another protocol; " : "", why);
    return CT_ERR_IO;
  }
  if (hello.protocol != WK_PROTOCOL || hello.sizes != wk_sizes()) {
    child_end(w, 1, NULL, 0);
    snprintf(err, len, "the GPU worker %s is another build of convtune", w->exe);
    return CT_ERR_IO;
  }
  hello.err[sizeof hello.err - 1] = '\0';
  if (hello.status != CT_OK) {
    child_end(w, 0, NULL, 0);
    snprintf(err, len, "%s", hello.err);
    return (ct_status)hello.status;
  }
  w->limits = hello.limits;
  w->device_key = hello.device;
  w->alive = 1;
  return CT_OK;
}

static ct_status start(ct_tune_worker *w, char *err, size_t len) {
  if (w->exe) return spawn(w, err, len);
  memset(&w->local, 0, sizeof w->local);
  ct_status rc = serve_open(&w->local, w->device, err, len);
  if (rc != CT_OK) return rc;
  w->limits = w->local.limits;
  w->device_key = w->local.device;
  w->alive = 1;
  return CT_OK;
}

ct_status ct_tune_worker_start(const char *exe, int device,
                               volatile sig_atomic_t *stop,
                               ct_tune_worker **out, char *err, size_t len) {
  if (out) *out = NULL;
  if (out == NULL || err == NULL) return CT_ERR_INVALID_ARG;
  ct_tune_worker *w = calloc(1, sizeof *w);
  if (w == NULL || (exe && (w->exe = strdup(exe)) == NULL)) {
    free(w);
    snprintf(err, len, "out of host memory");
    return CT_ERR_NOMEM;
  }
  w->device = device;
  w->stop = stop;
  w->fd = -1;
  ct_status rc = start(w, err, len);
  if (rc != CT_OK) {
    ct_tune_worker_stop(w);
    return rc;
  }
  *out = w;
  return CT_OK;
}

const ct_gen_limits *ct_tune_worker_limits(const ct_tune_worker *w) {
  return &w->limits;
}

const ct_cache_device *ct_tune_worker_device(const ct_tune_worker *w) {
  return &w->device_key;
}

int ct_tune_worker_alive(const ct_tune_worker *w) { return w && w->alive; }

int ct_tune_worker_restarts(const ct_tune_worker *w) { return w ? w->restarts : 0; }

static ct_status setup(ct_tune_worker *w, char *err, size_t len) {
  if (!w->alive) {
    snprintf(err, len, "the GPU worker is not running");
    return CT_ERR_IO;
  }
  if (!w->exe)
    return serve_setup(&w->local, &w->problem, w->seed, err, len);
  wk_setup m;
  memset(&m, 0, sizeof m);
  m.problem = w->problem;
  m.seed = w->seed;
  wk_status st;
  int r = wk_send(w->fd, WK_SETUP, &m, sizeof m, NULL, 0) == 0
              ? wk_recv(w->fd, WK_SETUP_DONE, &st, sizeof st,
                        wk_now() + w->setup_timeout_s, w->stop)
              : WK_EOF;
  if (r != WK_OK) {
    char why[128];
    child_end(w, r != WK_EOF, why, sizeof why);
    snprintf(err, len, "the GPU worker failed while making the test data: %s%s",
             r == WK_TIMEOUT ? "no answer in time; " :
             r == WK_STOPPED ? "interrupted; " : "", why);
    return CT_ERR_IO;
  }
  st.err[sizeof st.err - 1] = '\0';
  if (st.status != CT_OK) snprintf(err, len, "%s", st.err);
  return (ct_status)st.status;
}

ct_status ct_tune_worker_setup(ct_tune_worker *w, const ct_problem *p,
                               uint64_t seed, double timeout_s, char *err,
                               size_t len) {
  if (w == NULL || p == NULL || err == NULL) return CT_ERR_INVALID_ARG;
  w->problem = *p;
  w->seed = seed;
  w->setup_timeout_s = timeout_s > 0 ? timeout_s : 120.0;
  w->have_setup = 1;
  return setup(w, err, len);
}

ct_status ct_tune_worker_run(ct_tune_worker *w, const ct_tune_job *job,
                             ct_tune_outcome *out) {
  if (w == NULL || job == NULL || out == NULL) return CT_ERR_INVALID_ARG;
  if (!w->alive) return CT_ERR_IO;
  double t0 = wk_now();
  if (!w->exe) {
    if (serve_job(&w->local, job, out)) {
      w->alive = 0; /* in-process: the context is gone for this process */
    }
    out->wall_s = wk_now() - t0;
    return CT_OK;
  }
  memset(out, 0, sizeof *out);
  wk_job m;
  memset(&m, 0, sizeof m);
  snprintf(m.variant, sizeof m.variant, "%s", job->variant);
  m.verify = job->verify;
  m.trials = job->trials;
  m.cubin_size = job->cubin_size;
  wk_outcome o;
  int r = wk_send(w->fd, WK_JOB, &m, sizeof m, job->cubin, job->cubin_size) == 0
              ? wk_recv(w->fd, WK_OUTCOME, &o, sizeof o,
                        job->timeout_s > 0 ? t0 + job->timeout_s : 0, w->stop)
              : WK_EOF;
  out->wall_s = wk_now() - t0;
  if (r == WK_OK) {
    *out = o.out;
    out->message[sizeof out->message - 1] = '\0';
    out->wall_s = wk_now() - t0;
    if (o.fatal) child_end(w, 0, NULL, 0);
    return CT_OK;
  }
  out->max_abs_err = out->rel_err = NAN;
  out->stats.mean_ms = out->stats.median_ms = out->stats.min_ms =
      out->stats.max_ms = NAN;
  char why[128];
  child_end(w, r != WK_EOF, why, sizeof why);
  if (r == WK_STOPPED) {
    out->interrupted = 1;
    snprintf(out->message, sizeof out->message, "interrupted");
  } else if (r == WK_TIMEOUT) {
    out->status = CT_TRIAL_TIMEOUT;
    snprintf(out->message, sizeof out->message,
             "no answer within %.1f s (watchdog): the worker was %s",
             job->timeout_s, why);
  } else {
    out->status = CT_TRIAL_FAULTED;
    snprintf(out->message, sizeof out->message, "the worker died: %s", why);
  }
  return CT_OK;
}

ct_status ct_tune_worker_restart(ct_tune_worker *w, char *err, size_t len) {
  if (w == NULL || err == NULL) return CT_ERR_INVALID_ARG;
  if (w->exe) child_end(w, 1, NULL, 0);
  else serve_close(&w->local);
  w->alive = 0;
  w->restarts++;
  ct_status rc = start(w, err, len);
  if (rc == CT_OK && w->have_setup) rc = setup(w, err, len);
  return rc;
}

void ct_tune_worker_stop(ct_tune_worker *w) {
  if (w == NULL) return;
  if (w->exe) {
    /* Closing the socket ends an idle worker; a busy one is killed. */
    if (w->fd >= 0) close(w->fd);
    w->fd = -1;
    if (w->pid > 0) child_end(w, !w->alive, NULL, 0);
  } else {
    serve_close(&w->local);
  }
  free(w->exe);
  free(w);
}
