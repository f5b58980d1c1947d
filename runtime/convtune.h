/*
** convtune.h — the public interface of libconvtune.
**
** libconvtune runs 2D convolution forward passes (fp32, NCHW or NHWC, any
** groups) on an NVIDIA GPU with kernels chosen offline by the `convtune
** tune` command and stored in an SQLite tuning database.  A caller opens a
** context on a device, then calls ct_forward() with device pointers and a
** stream of the device's primary context (the one the CUDA runtime and
** PyTorch use).
**
** Every function returns a ct_status; CT_OK is 0.  ct_status_string() gives
** a message for every code.  The library never prints and never exits.
*/
#ifndef CONVTUNE_H
#define CONVTUNE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------- */
/* Status codes                                                            */

typedef enum ct_status {
  CT_OK = 0,              /* success */
  CT_ERR_INVALID_ARG,     /* a NULL pointer or an out-of-range argument */
  CT_ERR_INVALID_PROBLEM, /* the problem fails validation */
  CT_ERR_PARSE,           /* a problem spec string does not parse */
  CT_ERR_NOMEM,           /* host memory allocation failed */
  CT_ERR_NO_DRIVER,       /* libcuda.so.1 cannot be loaded or initialised */
  CT_ERR_NO_DEVICE,       /* no CUDA device, or the ordinal does not exist */
  CT_ERR_CUDA,            /* a CUDA Driver API call failed */
  CT_ERR_NVRTC,           /* NVRTC failed to compile a variant */
  CT_ERR_DB,              /* the tuning database could not be opened or used */
  CT_ERR_DB_CORRUPT,      /* the database is not a convtune database, or damaged */
  CT_ERR_NOT_FOUND,       /* no such entry */
  CT_ERR_UNSUPPORTED,     /* valid request that this build cannot serve */
  CT_ERR_VERIFY,          /* a result failed its precision contract */
  CT_ERR_IO,              /* a file could not be read or written */
  CT_STATUS_COUNT
} ct_status;

/* A static, human-readable message for every code; never NULL. */
const char *ct_status_string(ct_status status);

/* ---------------------------------------------------------------------- */
/* Problems                                                                */

typedef enum ct_precision {
  CT_PREC_TF32 = 0, /* TF32 products, fp32 accumulation (PyTorch's default) */
  CT_PREC_FP32 = 1  /* IEEE-fp32-class accuracy */
} ct_precision;

/* The activation a kernel applies to each output before its one store (a
** fused epilogue, as inference runs Conv -> BatchNorm (folded) -> ReLU). */
typedef enum ct_activation {
  CT_ACT_NONE = 0,  /* y as computed */
  CT_ACT_RELU = 1,  /* y < 0 ? 0 : y (NaN stays NaN, as torch.relu) */
  CT_ACT_RELU6 = 2  /* y < 0 ? 0 : y > 6 ? 6 : y (NaN stays NaN, as
                       torch.nn.functional.relu6; MobileNetV2's) */
} ct_activation;

/* The tensors' memory layout.  NCHW: x [N][C][H][W], w [K][C][R][S],
** y [N][K][P][Q] (PyTorch's contiguous tensors).  NHWC: x [N][H][W][C],
** w [K][R][S][C], y [N][P][Q][K] (PyTorch's channels_last tensors, weights
** included).  Either way b is [K]; with groups, w's C is C/groups. */
typedef enum ct_layout {
  CT_LAYOUT_NCHW = 0,
  CT_LAYOUT_NHWC = 1
} ct_layout;

/* A conv2d forward: y[N,K,P,Q] = act(sum_{c,r,s} x[N,C,H,W] * w[K,C,R,S]
** (+ b[K]) (+ y[N,K,P,Q] on entry, with residual = 1)).
** With groups = G > 1 the channels split into G groups: output channel k
** reads the C/G input channels of its group g = k / (K/G), channels
** g*C/G .. (g+1)*C/G - 1, and w is [K][C/G][R][S] (NHWC: [K][R][S][C/G]),
** as PyTorch's grouped and depthwise (G = C) convolutions.
** All tensors are dense fp32 in the problem's layout.  P and Q are derived
** (see ct_problem_output). */
typedef struct ct_problem {
  int64_t n, c, h, w;         /* input: batch, channels, height, width */
  int64_t k, r, s;            /* filters: count, height, width */
  int64_t stride_h, stride_w; /* >= 1 */
  int64_t pad_h, pad_w;       /* >= 0, zero padding on both sides */
  int64_t dil_h, dil_w;       /* >= 1 */
  int bias;                   /* 1: add b[K]; 0: no bias */
  ct_precision precision;     /* the accuracy the result must meet */
  ct_activation act;          /* applied to each output, after the bias */
  ct_layout layout;           /* of x, w and y */
  int residual;               /* 1: y holds a residual on entry, added after
                                 the bias and before the activation (a
                                 ResNet block's conv, + identity, ReLU):
                                 y = act(conv + b + y); 0: y is only
                                 written */
  int64_t groups;             /* >= 1, dividing c and k; 1: an ordinary
                                 convolution.  0 is invalid: a struct
                                 filled field by field must set it
                                 (ct_problem_default and ct_problem_parse
                                 set every field) */
} ct_problem;

/* Longest canonical spec text, terminating NUL included. */
#define CT_PROBLEM_SPEC_MAX 256

/* sizeof(ct_problem) in this library: a binding that mirrors the struct
** (convtune's Python package does) checks its own size against it. */
size_t ct_problem_size(void);

/* The headline problem: KernelBench level 1 problem 50 at tf32. */
void ct_problem_default(ct_problem *p);

/* Output height and width as PyTorch computes them:
** P = floor((H + 2*pad_h - dil_h*(R-1) - 1) / stride_h) + 1, likewise Q.
** Values are meaningful only for a problem that ct_problem_validate accepts. */
void ct_problem_output(const ct_problem *p, int64_t *P, int64_t *Q);

/* Checks every field.  Returns CT_OK, CT_ERR_INVALID_ARG (p NULL) or
** CT_ERR_INVALID_PROBLEM; on error, writes a message naming the offending
** field into err (if err != NULL, at most errlen bytes, NUL-terminated). */
ct_status ct_problem_validate(const ct_problem *p, char *err, size_t errlen);

/* Parses the spec text (format in README.md, "Problem specs") into *p and
** validates it; *p is written only on CT_OK.  Returns CT_OK, CT_ERR_PARSE or
** CT_ERR_INVALID_PROBLEM with a message in err as for ct_problem_validate,
** or CT_ERR_INVALID_ARG (spec or p NULL). */
ct_status ct_problem_parse(const char *spec, ct_problem *p, char *err,
                           size_t errlen);

/* Writes the canonical spec text of *p into buf (CT_PROBLEM_SPEC_MAX bytes
** suffice for a valid problem).  Parsing it gives back *p.  Returns CT_OK, or
** CT_ERR_INVALID_ARG when an argument is NULL, the precision, activation or
** layout unknown, bias or residual not 0 or 1, groups below 1, or buf too
** small. */
ct_status ct_problem_format(const ct_problem *p, char *buf, size_t buflen);

/* "tf32" / "fp32"; NULL for an unknown value. */
const char *ct_precision_name(ct_precision prec);

/* "none", "relu" or "relu6"; NULL for an unknown activation. */
const char *ct_activation_name(ct_activation act);

/* "nchw" or "nhwc"; NULL for an unknown layout. */
const char *ct_layout_name(ct_layout layout);
/* Parses "tf32" / "fp32".  Returns CT_OK, CT_ERR_PARSE or CT_ERR_INVALID_ARG
** (an argument NULL). */
ct_status ct_precision_parse(const char *text, ct_precision *prec);

/* ---------------------------------------------------------------------- */
/* Contexts and the forward pass                                           */

typedef struct ct_context ct_context;

/* Opens a context on CUDA device `device` (an ordinal) using its primary
** context, and the tuning database at db_path (NULL: $CONVTUNE_DB, else
** $XDG_CACHE_HOME/convtune/tuning.db, else ~/.cache/convtune/tuning.db;
** "": no database, default variants only).
** The database is untrusted input: it is opened read-only, and no state of
** the file fails ct_open.  A missing, unreadable, corrupt, truncated,
** foreign or too new file leaves the context working with default variants;
** ct_database_status() says which and why.
** On success *out is a new context for ct_close.
** Returns CT_OK, CT_ERR_INVALID_ARG (out NULL), CT_ERR_NO_DRIVER,
** CT_ERR_NO_DEVICE, CT_ERR_CUDA or CT_ERR_NOMEM; on failure *out is NULL
** (when out is not NULL) and ct_open_error() (thread-local) says why. */
ct_status ct_open(const char *db_path, int device, ct_context **out);

/* The message of the last ct_open failure in this thread; never NULL. */
const char *ct_open_error(void);

/* The tuning database that ct_open(NULL, ...) opens and that `convtune`
** uses without --db: $CONVTUNE_DB, else $XDG_CACHE_HOME/convtune/tuning.db
** (an absolute XDG_CACHE_HOME), else $HOME/.cache/convtune/tuning.db, as
** the environment is now.  Writes its path into buf (len bytes,
** NUL-terminated).  Returns CT_OK; CT_ERR_IO when none of those variables
** is set; CT_ERR_INVALID_ARG when buf is NULL or the path does not fit. */
ct_status ct_default_database(char *buf, size_t len);

/* Releases the context, every module it loaded and the device memory of
** weights packed on it and not yet freed (their handles then only need
** ct_weights_free).  No other thread may be using the context, nor use it
** afterwards.  ct_close(NULL) is a harmless no-op. */
void ct_close(ct_context *ctx);

/* Runs the convolution described by *p on `stream` (a CUstream /
** cudaStream_t of the device's primary context; NULL for the legacy default
** stream).  x, w, b, y are device pointers to dense fp32 tensors in the
** problem's layout, 4-byte
** aligned; y must not overlap x, w or b; b may be NULL only when p->bias is
** 0.  A kernel that reads x or w through a TMA tensor map (pw, pwq and
** tap read x so; gm on an NHWC problem with C % 4 = 0 reads x and w so;
** gm and pw on an NCHW 1x1 problem with C % 4 = 0 read w so) needs that
** tensor 16-byte aligned, and returns CT_ERR_INVALID_ARG, saying so,
** otherwise (PyTorch's allocations are).  With p->act = CT_ACT_RELU, y
** holds the ReLU of the sum (plus bias); with CT_ACT_RELU6, its ReLU6.
** With p->residual = 1, y is read too: each output element is the residual
** it held on entry plus the sum (plus bias), through the activation; the
** same holds for ct_forward_packed.
** Asynchronous: returns once the work is queued.
**
** The first call for a problem (per context) validates it and loads its
** kernel, in this order (ct_forward_path / ct_forward_reason say which and
** why):
**   1. the database's winner for this exact problem and device: its stored
**      cubin when the recorded source hash, compile options, architecture
**      and NVRTC version all match this build's (CT_PATH_TUNED_CUBIN), else
**      the same variant recompiled with NVRTC (CT_PATH_TUNED_COMPILED);
**   2. the winner of the nearest tuned problem of the same precision and
**      groups on this device whose variant is valid for this problem
**      (CT_PATH_NEAREST;
**      the tuned problems are read once per context, at the first call that
**      needs them);
**   3. a safe default variant (CT_PATH_DEFAULT).
**   A variant not loaded from its own tuned cubin loads a stored cubin of
**   its very source for this problem where the database has one (for 2.
**   the nearest winner's own, when the variant is shape-generic; for any,
**   the tuner's compile cache), else is compiled with NVRTC;
**   ct_forward_reason says which.
** A variant runs only on a problem its family's validity check accepted.
** Every later call for the problem takes no lock, allocates nothing and
** does not synchronise: it can be captured in a CUDA graph (make the first
** call, or ct_prepare, before capturing).  The one exception to
** "allocates nothing": a variant with a workspace (the s2d_* families and
** the general ones but gm on a map-read NHWC problem) takes one per call,
** stream-ordered on `stream` from a memory pool of its own that keeps its
** memory, so calls on several streams never share one.  A variant whose
** maps read x or w needs them 16-byte aligned (CT_ERR_INVALID_ARG else).
** A context may be shared by threads; concurrent first calls load each
** problem once.
** On failure nothing is launched and nothing is written.
** Returns CT_OK; CT_ERR_INVALID_ARG (ctx not an open context, a NULL or
** misaligned pointer, b NULL with a bias, y overlapping an input);
** CT_ERR_INVALID_PROBLEM; CT_ERR_UNSUPPORTED (no variant serves this
** problem, or the context was opened before a fork()); CT_ERR_CUDA;
** CT_ERR_NVRTC; CT_ERR_NOMEM.  ct_last_error() gives details. */
ct_status ct_forward(ct_context *ctx, const ct_problem *p, const float *x,
                     const float *w, const float *b, float *y, void *stream);

/* ---------------------------------------------------------------------- */
/* Weights packed once                                                     */

/* A problem's weights in the form its kernel reads, made once: for an
** inference layer whose weights do not change, ct_forward_packed then
** runs the problem without the per-call weight pass (the general
** families' repacking of w, rounded to TF32, for fp32 also the low
** halves).  Opaque; see ct_weights_pack. */
typedef struct ct_weights ct_weights;

/* Loads *p's kernel as ct_prepare does, allocates device memory of its
** own (cuMemAlloc, the device's primary context) and queues on `stream`
** the making of w's packed form there: the kernel's own weight pass, or a
** copy of w for a kernel that reads w as it is (or packs it per call
** anyway).  w is read on `stream` only, so it may change once that work
** is done; the packed weights do not follow it (pack again).  Allocates:
** call it outside a graph capture.  *out is NULL after a failure.
** Returns CT_OK; ct_prepare's failures; CT_ERR_INVALID_ARG (ctx not an
** open context, p, w or out NULL, w not 4-byte aligned); CT_ERR_CUDA (the
** allocation or the launch failed; ct_last_error says which). */
ct_status ct_weights_pack(ct_context *ctx, const ct_problem *p, const float *w,
                          void *stream, ct_weights **out);

/* ct_forward for *p with weights packed by ct_weights_pack on this context
** for the same problem: the same kernels, less its weight pass, reading
** wp; the result equals ct_forward's with the w that was packed, bit for
** bit.  Work on another stream than the packing's must be ordered after
** it by the caller.  Warm calls take no lock and allocate only what
** ct_forward's do (a workspace from the kernel's pool, less the packed
** region), whatever the number of weights packed for the problem.
** Returns ct_forward's statuses; CT_ERR_INVALID_ARG also
** when wp is NULL or was packed on another context or for another
** problem. */
ct_status ct_forward_packed(ct_context *ctx, const ct_problem *p, const float *x,
                            const ct_weights *wp, const float *b, float *y, void *stream);

/* The bytes of device memory wp holds (0 for NULL). */
size_t ct_weights_bytes(const ct_weights *wp);

/* Frees wp: synchronises its context (work queued with wp finishes
** first; so not during a graph capture on that device), then releases the
** memory.  After ct_close of its context (which released the memory of
** every packed weights still on it) it frees the handle alone; not at the
** same time as that ct_close.  NULL is a no-op. */
void ct_weights_free(ct_weights *wp);

/* How ct_forward obtained the kernel it runs for a problem. */
typedef enum ct_path {
  CT_PATH_NONE = 0,       /* ct_forward has not run this problem yet */
  CT_PATH_TUNED_CUBIN,    /* the tuned winner, loaded from its stored cubin */
  CT_PATH_TUNED_COMPILED, /* the tuned winner, its stored cubin unusable:
                          ** the compile cache's, else NVRTC-compiled */
  CT_PATH_DEFAULT,        /* nothing usable tuned: a default variant */
  CT_PATH_NEAREST         /* the nearest tuned problem's winner, for this
                          ** problem (a stored cubin of the same source, else
                          ** NVRTC-compiled) */
} ct_path;

/* "none", "tuned-cubin", "tuned-compiled", "default", "nearest"; "unknown"
** for a value outside the enum. */
const char *ct_path_name(ct_path path);

/* Reports the path taken for *p and the variant's name ("family:params")
** into variant (if not NULL, at most len bytes).  Returns CT_OK, or
** CT_ERR_INVALID_ARG. */
ct_status ct_forward_path(ct_context *ctx, const ct_problem *p, ct_path *path,
                          char *variant, size_t len);

/* Details of the last failure of a call on ctx made by the calling thread
** (like errno, each thread has its own): a message (never NULL; "no error"
** when this thread has none on ctx), the raw CUresult and nvrtcResult (0
** when none), and the NVRTC log of the last failed compile ("" when none).
** Strings stay valid until this thread's next call on the context, or
** until this thread's calls have failed on 8 other contexts since (each
** thread keeps the last failure of its 8 most recently failing contexts). */
const char *ct_last_error(const ct_context *ctx);
int ct_last_cuda_result(const ct_context *ctx);
int ct_last_nvrtc_result(const ct_context *ctx);
const char *ct_last_nvrtc_log(const ct_context *ctx);

/* ---------------------------------------------------------------------- */
/* Lookup reports and preparation                                          */

/* Why ct_forward runs what it runs for *p: one line of text naming the
** path, the database entry used or passed over and why (for
** CT_PATH_NEAREST, the tuned problem whose winner is used, as a spec), into
** buf (at most len bytes, NUL-terminated).  "not run yet" before the first
** call for *p.  Returns CT_OK or CT_ERR_INVALID_ARG. */
ct_status ct_forward_reason(ct_context *ctx, const ct_problem *p, char *buf,
                            size_t len);

/* Does the first-call work of ct_forward for *p (validation, lookup,
** loading) without launching anything, so that a later ct_forward can be
** captured in a CUDA graph or timed without it.  Returns what ct_forward
** would for the same reasons (no pointer is checked). */
ct_status ct_prepare(ct_context *ctx, const ct_problem *p);

/* The state of the context's tuning database.  Writes the database's path
** and a message saying what was found into msg (if not NULL, at most len
** bytes, NUL-terminated).  Returns:
**   CT_OK              the database is open and usable;
**   CT_ERR_NOT_FOUND   no database (no file, an empty file, or db_path "");
**   CT_ERR_DB_CORRUPT  not a convtune database, or damaged (found at open,
**                      or by a later query);
**   CT_ERR_UNSUPPORTED its schema is newer than this build's;
**   CT_ERR_DB, CT_ERR_IO, CT_ERR_NOMEM  it could not be read (CT_ERR_IO
**                      also: no path was set, or the path is longer than
**                      4095 bytes);
**   CT_ERR_INVALID_ARG ctx is not an open context.
** A file found unusable at ct_open leaves every problem to default
** variants; damage found by a later query (a cubin that fails its hash, a
** page that does not read) only passes over what it touches. */
ct_status ct_database_status(ct_context *ctx, char *msg, size_t len);

#ifdef __cplusplus
}
#endif
#endif /* CONVTUNE_H */
