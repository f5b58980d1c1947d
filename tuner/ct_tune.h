/*
** ct_tune.h — the tuner: GPU sessions, test data, verification against the
** float64 reference, KernelBench-protocol timing, and the tuning loop.
** Used by the `convtune` CLI and the GPU tests.
*/
#ifndef CT_TUNE_H
#define CT_TUNE_H

#include <signal.h>
#include <stdint.h>
#include <stdio.h>

#include <cuda.h>

#include "convtune.h"
#include "ct_cache.h"
#include "ct_gen.h"
#include "verify.h"

/* ---------------------------------------------------------------------- */
/* GPU sessions                                                            */

/* A device's primary context, current on the opening thread, with a stream
** and the L2-flush buffer of the timing protocol. */
typedef struct ct_tune_gpu {
  int ordinal;              /* CUDA device ordinal */
  CUdevice dev;
  CUcontext ctx;            /* retained primary context */
  CUstream stream;          /* non-blocking stream for all work */
  ct_gen_limits limits;     /* read off the device */
  ct_cache_device device;   /* the database's key for it */
  CUdeviceptr flush;        /* CT_TUNE_FLUSH_BYTES, written before each trial */
} ct_tune_gpu;

/* Bytes written before each timed trial to flush L2 (the protocol's 256 MB). */
#define CT_TUNE_FLUSH_BYTES ((size_t)256 << 20)

/* Opens device `ordinal`.  Returns CT_OK, CT_ERR_NO_DRIVER, CT_ERR_NO_DEVICE,
** CT_ERR_CUDA (message in err). */
ct_status ct_tune_gpu_open(int ordinal, ct_tune_gpu *g, char *err, size_t len);
/* Releases what ct_tune_gpu_open took; a zeroed g is a no-op. */
void ct_tune_gpu_close(ct_tune_gpu *g);

/* ---------------------------------------------------------------------- */
/* Test data and the float64 reference                                     */

typedef struct ct_tune_data {
  ct_problem p;
  uint64_t seed;                   /* the inputs' seed */
  size_t nx, nw, nb, ny;           /* element counts */
  CUdeviceptr x, w, b, y;          /* device tensors; b is 0 without bias */
  CUdeviceptr res;                 /* a residual problem's residual (ny floats,
                                      the output's layout), what y holds on
                                      entry to every verified run; else 0 */
  CUdeviceptr ref, abs_sum, sq_sum;/* float64 reference figures (device);
                                      0 when fused */
  int fused;                       /* 1: the check recomputes the reference */
  CUmodule mod;                    /* the reference and check kernels */
  CUfunction check_fn;             /* ct_check_f64, or ct_check_f64_fused */
  CUfunction unwritten_fn;         /* ct_unwritten (a residual problem) */
  CUdeviceptr unwritten;           /* its count (a residual problem) */
  int64_t n_tiles;                 /* ceil(ny / CT_CHECK_TILE) */
  CUdeviceptr tiles;               /* the check's figures per tile (device) */
  ct_check_tile *tiles_host;       /* and on the host: n_tiles of them */
} ct_tune_data;

/* Where the check finds the float64 reference. */
typedef enum ct_tune_ref_mode {
  CT_TUNE_REF_AUTO = 0,  /* stored when it fits beside the tensors, else fused */
  CT_TUNE_REF_STORED,    /* computed once, 24 bytes an output on the device */
  CT_TUNE_REF_FUSED      /* recomputed by every check: no storage */
} ct_tune_ref_mode;

/* Draws inputs like PyTorch's (x uniform [0,1), w and b uniform
** +-1/sqrt((C/groups)*R*S); a residual problem's residual uniform [-1,1), the scale
** of a ResNet block's input) from seed, uploads them, compiles the reference and
** check kernels and, unless the mode is fused, computes the float64
** reference on the GPU.  Host memory stays small whatever the problem's
** size: inputs are drawn and uploaded 64 MiB at a time, and only the
** check's per-tile figures (88 bytes per 4096 outputs) live on the host.
** Returns CT_OK, CT_ERR_CUDA, CT_ERR_NVRTC, CT_ERR_NOMEM (host memory, or a
** problem whose tensors do not fit in the device's free memory: err says
** how much each needs) (message in err). */
ct_status ct_tune_data_create_mode(ct_tune_gpu *g, const ct_problem *p,
                                   uint64_t seed, ct_tune_ref_mode mode,
                                   ct_tune_data *d, char *err, size_t len);
/* ct_tune_data_create_mode with CT_TUNE_REF_AUTO. */
ct_status ct_tune_data_create(ct_tune_gpu *g, const ct_problem *p,
                              uint64_t seed, ct_tune_data *d, char *err,
                              size_t len);
void ct_tune_data_destroy(ct_tune_data *d);

/* Copies the stored reference figures to malloc'd host arrays of d->ny
** doubles each (for tests on small problems; the caller frees them).
** Returns CT_OK, CT_ERR_UNSUPPORTED (d is fused), CT_ERR_NOMEM or
** CT_ERR_CUDA (message in err; the pointers are NULL then). */
ct_status ct_tune_data_reference_host(const ct_tune_data *d, double **ref,
                                      double **abs_sum, double **sq_sum,
                                      char *err, size_t len);

/* A seed that differs from run to run (time, pid, a counter). */
uint64_t ct_tune_fresh_seed(void);

/* Queues one forward pass of d->p on stream s. */
typedef ct_status (*ct_tune_run_fn)(void *arg, const ct_tune_data *d,
                                    CUstream s, char *err, size_t len);

/* A ct_tune_run_fn that runs ct_forward on d's tensors with the context
** `ctx` (a ct_context *): what the library does for a caller.  On failure
** err gets ct_last_error and the NVRTC log, if any. */
ct_status ct_tune_run_forward(void *ctx, const ct_tune_data *d, CUstream s,
                              char *err, size_t len);

/* Applies the precision contract to an output y of d's problem on the
** device (d->ny floats), on the GPU: the check kernel scans it against the
** reference (ct_check.cuh's order) and only its per-tile figures come back;
** *check is then what ct_tune_contract gives on the same data, bit for bit.
** Returns CT_OK (then check->passes says pass/fail), CT_ERR_CUDA or
** CT_ERR_INVALID_PROBLEM (message in err). */
ct_status ct_tune_check_output(ct_tune_gpu *g, ct_tune_data *d, CUdeviceptr y,
                               ct_tune_check *check, char *err, size_t len);

/* Poisons y with NaN, runs once, waits and applies the precision contract
** (ct_tune_check_output).  A residual problem's variant reads y: y gets
** d->res for that run instead; where the output passes, a second run on y
** filled with 2^-100 counts the outputs left as they were (ct_unwritten in
** templates/ref_f64.cu), and any fails the check ("N of M outputs never
** written").  Returns CT_OK (then check->passes says
** pass/fail) or the run's / CUDA's failure (message in err). */
ct_status ct_tune_verify(ct_tune_gpu *g, ct_tune_data *d, ct_tune_run_fn run,
                         void *arg, ct_tune_check *check, char *err,
                         size_t len);

typedef struct ct_tune_stats {
  double mean_ms, median_ms, min_ms, max_ms;
  int n;  /* trials averaged */
} ct_tune_stats;

/* The KernelBench protocol: per trial, write CT_TUNE_FLUSH_BYTES to flush
** L2, record events around the run on the stream; one discarded trial, then
** `trials` timed.  Returns CT_OK or a failure (message in err). */
ct_status ct_tune_time(ct_tune_gpu *g, ct_tune_data *d, ct_tune_run_fn run,
                       void *arg, int trials, ct_tune_stats *st, char *err,
                       size_t len);

/* ---------------------------------------------------------------------- */
/* The measuring worker (worker.c)                                         */

/* The GPU work of a tune runs in a worker: by default a child process (the
** tuner's own binary, started as `EXE __ct_worker FD`) that owns the CUDA
** context, the test data and the float64 reference, and answers one job
** at a time over a socket.  A variant that poisons the context (an illegal
** address), kills the process, or does not answer within the job's
** timeout (a hang: the worker is killed) ends as a "faulted" or "timeout"
** outcome; the caller restarts the worker and carries on.  The parent
** never creates a CUDA context.  Without an executable the worker runs in
** the calling process: no watchdog, and a fault ends the tune.
**
** CONVTUNE_TEST_FAKE_GPU=1 (tests only) makes the worker pretend: no CUDA,
** a device named "convtune fake GPU" with sm_90a's limits, every variant
** correct and timed from a smooth function of its parameters (so searches
** can be tested), the test families' faults acted out (test_oob kills the
** worker, test_hang never answers, test_wrong is wrong, test_refuse is
** refused), each job taking CONVTUNE_TEST_FAKE_MS milliseconds (default
** 20). */

#define CT_TUNE_WORKER_ARG "__ct_worker" /* argv[1] of a worker process */

typedef struct ct_tune_worker ct_tune_worker;

/* One job: load the variant's cubin, verify it, time it. */
typedef struct ct_tune_job {
  char variant[CT_GEN_NAME_MAX];  /* the worker rebuilds it by name */
  int verify;                     /* 1: check the precision contract first */
  int trials;                     /* timed trials (one more is discarded) */
  const void *cubin;              /* the variant compiled for the worker's arch */
  size_t cubin_size;
  double timeout_s;               /* watchdog (isolated workers); <= 0: none */
} ct_tune_job;

/* What came of it. */
typedef struct ct_tune_outcome {
  ct_trial_status status;     /* timed, wrong, launch-failed, faulted, timeout */
  double max_abs_err, rel_err;/* NAN when not verified */
  ct_tune_stats stats;        /* when timed; NAN means otherwise */
  double wall_s;              /* the job's wall time, as the caller saw it */
  int interrupted;            /* the stop flag was raised: the job was
                                 abandoned (worker stopped), nothing measured */
  char message[256];          /* why it failed, "" */
} ct_tune_outcome;

/* Starts a worker on CUDA device `device`: a child process running `exe`
** (e.g. "/proc/self/exe"), or in this process when exe is NULL.  stop (may
** be NULL) is polled while waiting for the worker: once it is non-zero,
** waits end and the worker is stopped.  On success the worker has opened
** the device (ct_tune_worker_device/_limits).  Returns CT_OK, or
** CT_ERR_NO_DRIVER, CT_ERR_NO_DEVICE, CT_ERR_CUDA (the device did not open),
** CT_ERR_IO (the process did not start or answer), CT_ERR_NOMEM, with a
** message in err; *out is NULL then. */
ct_status ct_tune_worker_start(const char *exe, int device,
                               volatile sig_atomic_t *stop,
                               ct_tune_worker **out, char *err, size_t len);

/* The device the worker opened. */
const ct_gen_limits *ct_tune_worker_limits(const ct_tune_worker *w);
const ct_cache_device *ct_tune_worker_device(const ct_tune_worker *w);

/* Makes the test data of problem p from seed and its float64 reference
** (ct_tune_data_create) in the worker; remembered for restarts.  Returns
** CT_OK, or a failure with a message in err (CT_ERR_IO when the worker died
** or the stop flag was raised). */
ct_status ct_tune_worker_setup(ct_tune_worker *w, const ct_problem *p,
                               uint64_t seed, double timeout_s, char *err,
                               size_t len);

/* Runs one job after setup.  Returns CT_OK with *out filled (a faulted or
** timed-out job, or an interrupted one, leaves the worker stopped:
** ct_tune_worker_alive says 0), CT_ERR_INVALID_ARG, or CT_ERR_IO when the
** worker was not alive. */
ct_status ct_tune_worker_run(ct_tune_worker *w, const ct_tune_job *job,
                             ct_tune_outcome *out);

/* 1 while the worker can take jobs. */
int ct_tune_worker_alive(const ct_tune_worker *w);

/* Restarts a stopped worker on the same device and repeats its setup.
** Returns as ct_tune_worker_start / _setup. */
ct_status ct_tune_worker_restart(ct_tune_worker *w, char *err, size_t len);

/* Starts (isolated: how many times) the worker was restarted. */
int ct_tune_worker_restarts(const ct_tune_worker *w);

/* Stops the worker (kills an isolated one) and frees w.  NULL is a no-op. */
void ct_tune_worker_stop(ct_tune_worker *w);

/* The worker process's main: `EXE __ct_worker FD` serves jobs on socket FD
** until the parent closes it.  Returns the process's exit status. */
int ct_tune_worker_main(int argc, char **argv);

/* ---------------------------------------------------------------------- */
/* The search order (search.c)                                             */

/* Decides which variant to screen next.  Exhaustive: enumeration order,
** every variant.  Budgeted: first the priors the caller gives
** (ct_tune_search_prefer), then a stratified sample of every family (a
** third of max_screen, or sqrt(n) under a time budget alone; each family
** in proportion to its size and at least its default variant, points
** spread evenly over its enumeration order; round-robin over the
** families, those with tensor cores first, in enumeration order: the
** families made for one kind of shape before the general gm, and from
** CT_GEN_FEW_CHANNELS input channels on the few-channel ones last,
** gen.c), then
** hill climbing: the untried neighbours (same family, one parameter
** different, or two where no one-parameter step between them is valid) of
** the fastest timed variant, the one a cheap model predicts fastest first
** (per family, log time additive in each parameter's value, refitted on
** every result); that neighbourhood exhausted, the next fastest's; then
** the rest.  Stops once max_screen variants have a result (results
** recorded by an earlier run count).  Pure CPU logic; search.c has the
** details. */
typedef struct ct_tune_search ct_tune_search;

/* budgeted 0: exhaustive.  budgeted 1: the budgeted order, stopping after
** max_screen results (0 or >= n: once every variant has one).  Returns
** CT_OK, CT_ERR_INVALID_ARG, CT_ERR_NOMEM. */
ct_status ct_tune_search_create(const ct_gen_variant *v, size_t n,
                                int budgeted, size_t max_screen,
                                ct_tune_search **out);
void ct_tune_search_destroy(ct_tune_search *s);

/* Records variant i's result: its screened mean, or NAN when it failed. */
void ct_tune_search_result(ct_tune_search *s, size_t i, double mean_ms);

/* The next variant to screen, or -1 when the search is done. */
long ct_tune_search_next(ct_tune_search *s);

/* Up to k variants the search would pick next if no result arrived (the
** first is what ct_tune_search_next returns), into out; returns how many.
** The tuner compiles them ahead. */
size_t ct_tune_search_peek(ct_tune_search *s, size_t *out, size_t k);

/* 1 when budgeted, 0 when exhaustive. */
int ct_tune_search_budgeted(const ct_tune_search *s);

/* Budgeted: variants idx[0 .. k) (indices into the enumeration) are
** screened before the seeds, in that order, each once (an index out of
** range or given twice is passed over); they count towards max_screen.
** Call before the first pick.  Exhaustive: no effect.  Returns how many
** were taken. */
size_t ct_tune_search_prefer(ct_tune_search *s, const size_t *idx, size_t k);

/* ---------------------------------------------------------------------- */
/* The family filter (families.c): --families of every command             */

/* Checks list, comma-separated family names (NULL: every family): each
** must name a family (ct_gen_family_find), none may be empty.  Returns
** CT_OK, or CT_ERR_INVALID_ARG with the first bad name and the known
** families in err (len bytes). */
ct_status ct_tune_families_check(const char *list, char *err, size_t len);

/* Into buf (len bytes): "" when every family list names (NULL: none)
** meets p's precision, layout, residual and groups, else " (NAME: why; ...)" with
** ct_gen_family_declines' reason for each that does not: what a "no valid
** variant" message adds. */
void ct_tune_families_why(const char *list, const ct_problem *p, char *buf, size_t len);

/* Keeps, in their order, the variants of v[0..n) whose family list names
** (NULL: all of them); returns how many are kept. */
size_t ct_tune_families_keep(const char *list, ct_gen_variant *v, size_t n);

/* ---------------------------------------------------------------------- */
/* The tuning loop                                                         */

/* Spaces up to this many variants are searched exhaustively by default;
** larger ones get a budgeted search of this many. */
#define CT_TUNE_EXHAUSTIVE_MAX 512

/* A budgeted search screens first the winners of at most this many of the
** nearest problems tuned on the device (fewer with --max-variants: a
** quarter of it, none below 4). */
#define CT_TUNE_PRIORS_MAX 4

typedef struct ct_tune_options {
  ct_problem problem;      /* what to tune, precision included */
  const char *db_path;     /* tuning database, created if missing */
  int device;              /* CUDA ordinal */
  int threads;             /* NVRTC compile threads; 0 = every core */
  int screen_trials;       /* timed trials per verified variant */
  int final_trials;        /* full-protocol trials per finalist */
  int finalists;           /* variants re-timed before a winner is named */
  uint64_t seed;           /* 0 = fresh */
  FILE *progress;          /* one line per variant, or NULL */
  int progress_bar;        /* 1: progress is a terminal: one updating line */
  int resume;              /* 1: reuse recorded trials (see ct_tune_run) */
  size_t max_variants;     /* 0: no limit; else screen at most this many */
  double budget_s;         /* 0: none; else stop screening after this long */
  const char *families;    /* comma-separated family names; NULL: all */
  const char *worker_exe;  /* NULL: GPU work in this process; else the
                              binary run as the isolated worker */
  double watchdog_s;       /* floor of each job's timeout, seconds */
  volatile sig_atomic_t *stop; /* NULL, or polled: non-zero stops the tune */
  int skip_tuned;          /* 1: a problem with a winner on this device is
                              not tuned again (r->skipped) */
  /* With skip_tuned: o->device as an earlier ct_tune_run of this process
  ** found it (its r->device, r->limits), or NULL.  A problem tuned before
  ** is then skipped without starting a worker. */
  const ct_cache_device *known_device;
  const ct_gen_limits *known_limits;
  int no_priors;           /* 1: a budgeted search does not screen the
                              nearest tuned problems' winners first */
} ct_tune_options;

/* Defaults: device 0, all cores, 10 screening trials, 100 final, 3
** finalists, resume on, no budget, in-process worker, 10 s watchdog. */
void ct_tune_options_default(ct_tune_options *o);

typedef enum ct_tune_origin {
  CT_TUNE_UNTRIED = 0,    /* not screened (budgeted search, or interrupted) */
  CT_TUNE_SCREENED,       /* screened in this run */
  CT_TUNE_RESUMED         /* its recorded trial was reused */
} ct_tune_origin;

typedef struct ct_tune_row {
  ct_cache_trial trial;   /* as recorded (screening, or final for finalists) */
  ct_tune_origin origin;
  int finalist;           /* 1 when re-timed with the full protocol */
  int cubin_cached;       /* 1: its cubin came from the compile cache */
} ct_tune_row;

typedef struct ct_tune_result {
  char spec[CT_PROBLEM_SPEC_MAX];
  ct_cache_device device;
  ct_gen_limits limits;   /* the device's, as the generator planned for */
  uint64_t seed;
  size_t n_rows;
  ct_tune_row *rows;      /* one per variant, enumeration order */
  long winner;            /* index into rows, -1 when nothing passed */
  double wall_s;          /* whole tune */
  double compile_s;       /* NVRTC CPU time summed over this run's compiles */
  int threads;            /* compile threads used */
  size_t n_screened;      /* variants screened in this run */
  size_t n_resumed;       /* variants whose recorded trial was reused */
  size_t n_compiled;      /* NVRTC compiles in this run */
  size_t n_cached;        /* cubins read from the compile cache */
  int restarts;           /* worker restarts after a fault or hang */
  int budgeted;           /* 1: budgeted search, 0: exhaustive */
  int interrupted;        /* o->stop ended the run early */
  int skipped;            /* o->skip_tuned and a winner was found: no rows */
  /* The outcome in brief, tuned or skipped: */
  char winner_variant[CT_GEN_NAME_MAX]; /* "" when none */
  double winner_ms;       /* its full-protocol mean; NAN when none */
  char default_variant[CT_GEN_NAME_MAX]; /* the runtime's default variant */
  double default_ms;      /* its recorded mean (screening trials); NAN when
                             it has none on this device */
  /* The families of the search space that this run left with no trial
  ** (none screened now or resumed: a budget or --max-variants that ran
  ** out first), in enumeration order. */
  const ct_gen_family *unscreened[64];
  size_t n_unscreened;
  /* The priors a budgeted search screened in this run, in that order (the
  ** first it screened): the winners of the nearest problems tuned on this
  ** device at this precision with the same layout, filter size and stride
  ** (ct_rt_problem_distance) that are in this search space, and the
  ** problem each won; priors_error: why the tuned problems could not be
  ** read for them ("" when they could). */
  char priors[CT_TUNE_PRIORS_MAX][CT_GEN_NAME_MAX];
  char prior_sources[CT_TUNE_PRIORS_MAX][CT_PROBLEM_SPEC_MAX];
  size_t n_priors;
  char priors_error[256];
} ct_tune_result;

/* Enumerates the variants of o->problem (only o->families' when given),
** screens them in the search's order and records each as one trial the
** moment it finishes: compile-failed, launch-failed, faulted, timeout,
** wrong (failed its precision contract) or timed (o->screen_trials).
** Cubins come from the compile cache when there (no NVRTC); the others are
** compiled on o->threads threads, overlapped with the GPU work, and
** cached.  With o->resume, a variant that already has a trial for this
** problem, device and source hash is not screened again: its recorded
** trial stands (so a rerun after an interruption picks up where it
** stopped).  Then the o->finalists fastest timed variants, from this run
** or recorded, are verified again and re-timed with the full protocol
** (recorded as further trials), and the fastest is stored as the winner
** with its cubin.  A raised o->stop abandons the job in flight (not
** recorded) and returns with r->interrupted set and no new winner.
** Returns CT_OK (r->winner may be -1), or a setup failure (message in
** err).  Free r with ct_tune_result_free. */
ct_status ct_tune_run(const ct_tune_options *o, ct_tune_result *r, char *err,
                      size_t len);
void ct_tune_result_free(ct_tune_result *r);

/* ---------------------------------------------------------------------- */
/* Reports (report.c)                                                      */

/* Writes an SVG chart of trials (any order; several per variant allowed)
** to f: one row per variant, sorted by time, a bar for its latest timed
** trial's mean coloured by family (the part of the name before ':'), the
** variant named winner (may be NULL) outlined and labelled, the variants
** that never timed listed with their latest status.  title and subtitle
** (may be NULL) head it.  Returns CT_OK, CT_ERR_INVALID_ARG, CT_ERR_NOMEM,
** CT_ERR_IO (a write failed). */
ct_status ct_tune_report_svg(FILE *f, const char *title, const char *subtitle,
                             const ct_cache_trial *trials, size_t n,
                             const char *winner);

#endif /* CT_TUNE_H */
