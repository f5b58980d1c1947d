/*
** ct_gen.h — the generator: problem -> valid variants -> CUDA source text.
**
** The generator knows no driver and no GPU.  A template family is one
** CUDA source template (templates/<family>.cu, embedded at build time) plus
** one descriptor (ct_gen_family): its tunable parameters as data, its hard
** limits (valid) apart from its pruning heuristic (worth), both against the
** problem and the device's limits (ct_gen_limits; ct_gen_budget_fits does
** the threads / shared memory checks, ct_gen_regs_cap the register cap),
** the launch plan (grid, block, dynamic shared memory, workspace) of a
** valid variant on that device, and the kind of kernel arguments it takes.
** Constants and layout arithmetic the template and the descriptor share
** are written once, in a header under templates/ valid as C and CUDA that
** both include (templates/ct_direct.cuh is the pattern).
**
** Source of a variant = "#define" lines (problem sizes CT_*, the family's
** parameters, the launch quantities the plan computed) + the template text.
** Every template compiles on its own with its default parameters.
**
** A family declares the kind of arguments its kernels take (ct_gen_args).
** A family of plain pointers has extern "C" kernels
**   (const float *x, const float *w, const float *b, float *y, float *ws)
** x, w, b, y as in convtune.h (b is NULL when the problem has no bias), ws a
** device workspace of variant->workspace_bytes (NULL when 0).  A family of
** tensor maps has kernels taking three more, by value:
**   (..., float *ws, const __grid_constant__ ct_kargs a,
**    const __grid_constant__ ct_tmap m0, const __grid_constant__ ct_tmap m1)
** (templates/ct_tmap.cuh): a = the plan's variant->kargs, m0 and m1 the
** CUtensorMaps the launcher encodes from variant->maps (unused ones
** zero).  A variant runs its kernels in order on one stream.
**
** A shape-generic family (shape_generic set) reads the problem's sizes
** from its kernel arguments: its source holds no problem size, so one
** cubin serves every problem with the same parameters and plan defines.
*/
#ifndef CT_GEN_H
#define CT_GEN_H

#include <stddef.h>
#include <stdint.h>

#include "convtune.h"

#define CT_GEN_MAX_PARAMS 8   /* tunables per family */
#define CT_GEN_MAX_VALUES 8   /* values per tunable */
#define CT_GEN_MAX_KERNELS 4  /* launches per variant */
#define CT_GEN_NAME_MAX 160   /* "family:P1=v1,P2=v2,..." incl. NUL */
#define CT_GEN_MAX_MAPS 2     /* tensor maps per variant */
#define CT_GEN_MAX_KARGS 32   /* int64 kernel arguments of a tensor-map family */

/* What the generator needs to know of a device. */
typedef struct ct_gen_limits {
  char arch[16];            /* NVRTC target, e.g. "sm_90a" */
  int cc_major, cc_minor;   /* compute capability */
  int sm_count;             /* multiprocessors */
  int max_threads_per_block;
  int max_smem_per_block;   /* opt-in maximum dynamic shared memory, bytes */
  int smem_per_sm;          /* shared memory per multiprocessor, bytes */
  int regs_per_sm;          /* 32-bit registers per multiprocessor */
} ct_gen_limits;

/* One launch of a variant. */
typedef struct ct_gen_launch {
  char name[64];            /* extern "C" kernel name in the template */
  unsigned grid[3];
  unsigned block[3];
  unsigned smem;            /* dynamic shared memory, bytes */
  int weights;              /* 1: the weight pass, which reads w alone and
                               writes the variant's packed weights (the
                               workspace's wpack region) and nothing else */
  int early;                /* 1: launched with programmatic stream
                               serialization, so that its blocks may be
                               placed while the launch before it in the
                               stream finishes; the kernel waits for that
                               launch (griddepcontrol.wait) before it reads
                               or writes global memory (sm_90 and later) */
} ct_gen_launch;

struct ct_gen_family;

/* What a tensor map describes: the buffer its global address lies in. */
typedef enum ct_gen_map_buffer {
  CT_GEN_BUF_WS = 0,          /* the call's workspace */
  CT_GEN_BUF_X = 1,           /* the input x */
  CT_GEN_BUF_W = 2,           /* the weights w */
  CT_GEN_BUF_Y = 3            /* the output y */
} ct_gen_map_buffer;

typedef enum ct_gen_map_kind {
  CT_GEN_MAP_NONE = 0,
  CT_GEN_MAP_TILED = 1,       /* cuTensorMapEncodeTiled */
  CT_GEN_MAP_IM2COL = 2       /* cuTensorMapEncodeIm2col */
} ct_gen_map_kind;

/* A CUtensorMap as data: the arguments of cuTensorMapEncodeTiled or
** cuTensorMapEncodeIm2col for fp32 elements, no interleave, with the
** global address = buffer's address + offset.  The launcher encodes it;
** the generator never calls the driver. */
typedef struct ct_gen_map {
  ct_gen_map_kind kind;
  ct_gen_map_buffer buffer;
  int rank;                   /* 3 .. 5 */
  uint64_t offset;            /* bytes into the buffer, a multiple of 16 */
  uint64_t dims[5];           /* elements, innermost first */
  uint64_t strides[4];        /* bytes, of dims 1 .. rank-1 */
  uint32_t box[5];            /* TILED: the box, elements per dimension */
  int lower[3], upper[3];     /* IM2COL: pixel box corners, W first */
  uint32_t channels, pixels;  /* IM2COL: channelsPerPixel, pixelsPerColumn */
  uint32_t elem_strides[5];   /* traversal strides, 1 .. 8 */
  int tf32;                   /* 1: TFLOAT32 (rounded on load), 0: FLOAT32 */
  int swizzle;                /* bytes: 0 (none), 32, 64 or 128 */
  int l2_promote;             /* bytes: 0 (none), 64, 128 or 256 */
} ct_gen_map;

/* One point of a family's search space, planned for one problem on one
** device. */
typedef struct ct_gen_variant {
  const struct ct_gen_family *family;
  int values[CT_GEN_MAX_PARAMS];          /* one per family parameter */
  ct_gen_limits limits;                   /* the device it was planned for */
  char name[CT_GEN_NAME_MAX];             /* "family:P1=v1,P2=v2" */
  int n_kernels;
  ct_gen_launch kernels[CT_GEN_MAX_KERNELS];
  size_t workspace_bytes;                 /* 0: none */
  /* The packed weights' region of the workspace, [wpack_offset,
  ** wpack_offset + wpack_bytes), where its weight pass writes them and
  ** only maps read them (so they can live in a buffer of their own and be
  ** packed once: ct_weights_pack); wpack_bytes 0 where the variant reads
  ** w itself or its kernels read the packed weights by pointer. */
  size_t wpack_offset, wpack_bytes;
  /* A tensor-map family's (all zero otherwise): */
  int n_maps;                             /* maps[0 .. n_maps-1] */
  ct_gen_map maps[CT_GEN_MAX_MAPS];
  int64_t kargs[CT_GEN_MAX_KARGS];        /* the kernels' ct_kargs */
} ct_gen_variant;

/* A tunable parameter: its #define name and the values searched. */
typedef struct ct_gen_param {
  const char *name;
  int n_values;
  int values[CT_GEN_MAX_VALUES];
} ct_gen_param;

/* The kind of arguments a family's kernels take. */
typedef enum ct_gen_args {
  CT_GEN_ARGS_POINTERS = 0,   /* (x, w, b, y, ws) as plain device pointers */
  CT_GEN_ARGS_TENSOR_MAPS = 1 /* CUtensorMaps the host builds, passed as
                                 __grid_constant__ parameters */
} ct_gen_args;

/* The input channels from which ct_gen_enumerate lists the few-channel
** families (ct_gen_family.few_channels) after the others: AlexNet's and
** ResNet's stems (C = 3) run fastest on them, while at C = 16 tc took 3x
** gm's time and on a 1x1 layer of 256 channels wg and tc took 70x. */
#define CT_GEN_FEW_CHANNELS 8

/* A template family.  Adding a family touches its own files and the build
** lists only:
**   - templates/<name>.cu, compiling on its own with default parameters
**     (every tunable "#ifndef P / #define P v / #endif"), static_asserting
**     the plan's CT_PLAN_* against its own quantities; listed in
**     templates/meson.build (with any templates/ct_<name>.cuh it shares
**     with the descriptor);
**   - generator/family_<name>.c, defining const ct_gen_family
**     ct_gen_family_<name>; listed in generator/meson.build;
**   - one X(<name>) line in CT_GEN_FAMILY_LIST (generator/gen.c), which
**     places it in the enumeration order. */
typedef struct ct_gen_family {
  const char *name;           /* short, [a-z0-9_] */
  const char *template_name;  /* embedded template file, e.g. "conv_direct.cu" */
  unsigned precisions;        /* bit (1u << ct_precision) for each precision met */
  ct_gen_args args;           /* the kind of kernel arguments it takes */
  int big_tensors;            /* 1: its template forms 64-bit offsets, so it
                                 takes tensors of 2^31 elements or more; 0:
                                 the generator never asks valid() about such
                                 a problem (ct_gen_index64) */
  int shape_generic;          /* 1: its source holds no problem size (the
                                 kernels read them from kargs) */
  int tensor_cores;           /* 1: its products run on tensor cores; a
                                 budgeted search screens such families'
                                 seeds before the others' (on a large
                                 problem one FFMA variant's screening can
                                 take a whole time budget) */
  int few_channels;           /* 1: made for few input channels (it keeps
                                 all the weights and an input band in
                                 shared memory: wg, tc and their kin);
                                 where the problem has CT_GEN_FEW_CHANNELS
                                 or more, ct_gen_enumerate lists it after
                                 the other families, so that a budgeted
                                 search seeds the general ones first */
  int nhwc;                   /* 1: its template also runs the NHWC layout
                                 (CT_LAYOUT 1); 0: it declines NHWC
                                 problems (ct_gen_enumerate offers none of
                                 its variants, naming one is unsupported) */
  int residual;               /* 1: its template adds the residual y holds
                                 on entry (CT_RESIDUAL 1, ct_act.cuh's
                                 ct_out); 0: it declines residual problems,
                                 as nhwc 0 declines NHWC ones */
  int groups;                 /* 1: its template runs grouped problems
                                 (groups > 1, CT_GROUPS); 0: it declines
                                 them */
  int n_params;
  ct_gen_param params[CT_GEN_MAX_PARAMS];
  /* The hard limits: 1 if this parameter point compiles and runs
  ** correctly for the problem on the device (arch, shapes the template
  ** accepts, tile divisibility, its static_asserts, 32-bit ranges,
  ** registers, threads, shared memory); 0 if it cannot. */
  int (*valid)(const ct_problem *p, const ct_gen_limits *lim,
               const int *values);
  /* The pruning heuristic, asked only of valid points: 1 to offer the
  ** point, 0 when it is correct but cannot win (channels or tiles wasted,
  ** a better-buffered twin that fits).  NULL: every valid point is
  ** offered. */
  int (*worth)(const ct_problem *p, const ct_gen_limits *lim,
               const int *values);
  /* Fills v->n_kernels, v->kernels and v->workspace_bytes (and a
  ** tensor-map family's v->n_maps, v->maps and v->kargs) for a valid
  ** point on the device lim describes (a persistent grid is sized by
  ** lim->sm_count, see ct_gen_sm_count); also returns extra "#define NAME
  ** value" lines (may be empty) in defines (at most len bytes) for launch
  ** quantities the template uses. */
  void (*plan)(const ct_problem *p, const ct_gen_limits *lim,
               const int *values, ct_gen_variant *v, char *defines,
               size_t len);
} ct_gen_family;

/* For a family's plan(): one launch of `kernel` with grid (gx, gy, 1),
** block (threads, 1, 1), smem bytes of dynamic shared memory and no
** workspace, into *v; and into defines (len bytes) the line
** "#define <split_macro> <split>" (none when split_macro is NULL) followed
** by CT_PLAN_GRID_X, CT_PLAN_GRID_Y,
** CT_PLAN_BLOCK_X and CT_PLAN_SMEM, which the templates static_assert
** against their own derived quantities. */
void ct_gen_plan_one(ct_gen_variant *v, const char *kernel, unsigned gx,
                     unsigned gy, unsigned threads, unsigned smem,
                     const char *split_macro, int split, char *defines,
                     size_t len);

/* For a family's plan(): the SMs a persistent grid is sized for,
** lim->sm_count, at least 1. */
int64_t ct_gen_sm_count(const ct_gen_limits *lim);

/* Shared memory a template may ask for on any device the generator knows,
** bytes (227 KB, sm_90's opt-in maximum; the templates static_assert it). */
#define CT_GEN_SMEM_MAX 232448

/* Shared memory the driver reserves per resident block (sm_80 .. sm_90). */
#define CT_GEN_SMEM_RESERVED 1024

/* What one block of a point needs of the device, for ct_gen_budget_fits. */
typedef struct ct_gen_budget {
  int64_t threads;       /* threads per block */
  int64_t smem;          /* dynamic shared memory per block, bytes */
  int64_t blocks_per_sm; /* blocks that must be resident on one SM together
                            (a family's CTAS or PERSIST); 0: no per-SM check */
} ct_gen_budget;

/* For a family's valid(): 1 when blocks of *b fit the device lim describes:
** threads <= lim->max_threads_per_block; smem <= lim->max_smem_per_block
** and <= CT_GEN_SMEM_MAX; and with blocks_per_sm c > 0,
** c * (smem + CT_GEN_SMEM_RESERVED) <= lim->smem_per_sm and c * threads <=
** ct_gen_threads_per_sm(lim). */
int ct_gen_budget_fits(const ct_gen_limits *lim, const ct_gen_budget *b);

/* Threads an SM of compute capability lim->cc_major.cc_minor holds: 1536
** for 8.6 .. 8.9, else 2048 (ct_gen_limits does not carry it). */
int64_t ct_gen_threads_per_sm(const ct_gen_limits *lim);

/* For a family's valid(): the registers per thread that blocks_per_sm
** blocks of `threads` threads (both >= 1) can each have resident on one SM:
** lim->regs_per_sm / (blocks_per_sm * threads), rounded down to a multiple
** of 8 (the allocation unit), at most 255. */
int64_t ct_gen_regs_cap(const ct_gen_limits *lim, int64_t blocks_per_sm,
                        int64_t threads);

/* For families too: the product of n factors, or -1 when it overflows
** int64. */
int64_t ct_gen_checked_product(const int64_t *f, int n);

/* 1 when x, w or y of the (valid) problem *p has more than 2^31 - 1
** elements: only families with big_tensors set take it. */
int ct_gen_index64(const ct_problem *p);

/* The families, NULL-terminated. */
extern const ct_gen_family *const ct_gen_families[];

/* Looks a family up by name; NULL if none. */
const ct_gen_family *ct_gen_family_find(const char *name);

/* Why family f offers no variant of any problem like *p, whatever its
** sizes: "not at this precision", "no NHWC layout", "no residual" or "no
** groups"; NULL when it meets p's precision, layout, residual and groups
** (its variants may still not fit p's sizes). */
const char *ct_gen_family_declines(const ct_gen_family *f, const ct_problem *p);

/* 1 when the runtime and the tuner can launch the kernels of family f:
** those of a family taking plain pointers or tensor maps (ct_gen_args).
** ct_gen_enumerate and ct_gen_enumerate_all leave any other out;
** ct_gen_variant_from_name, ct_gen_default_variant and ct_gen_source return
** CT_ERR_UNSUPPORTED for it.  0 for NULL. */
int ct_gen_family_launchable(const ct_gen_family *f);

/* Limits of a named architecture for use without a GPU: "sm_90a" and
** "sm_90" give an H100/H200's, "sm_89" an L40S's, "sm_80" an A100's.
** Returns CT_OK, CT_ERR_UNSUPPORTED (other names) or CT_ERR_INVALID_ARG. */
ct_status ct_gen_limits_for_arch(const char *arch, ct_gen_limits *lim);

/* Enumerates every variant of every family meeting p->precision that is
** valid and worth offering (both the family's hard limits and its pruning
** heuristic pass), in a fixed order (families in table order, except
** that from CT_GEN_FEW_CHANNELS input channels on the few_channels families
** come after the others on an ungrouped problem; parameters odometer-wise,
** last parameter
** fastest).  *out is a malloc'd array the caller frees; *count may be 0.
** Each variant is zero-filled before it is written, so variants
** compare with memcmp.  Returns CT_OK, CT_ERR_INVALID_ARG,
** CT_ERR_INVALID_PROBLEM or CT_ERR_NOMEM (then *out is NULL, *count 0). */
ct_status ct_gen_enumerate(const ct_problem *p, const ct_gen_limits *lim,
                           ct_gen_variant **out, size_t *count);

/* As ct_gen_enumerate, but every valid point, the pruning heuristics off:
** the points ct_gen_enumerate offers and those it prunes, in the same
** order.  For tests and studies of the heuristics; the tuner searches
** ct_gen_enumerate's set. */
ct_status ct_gen_enumerate_all(const ct_problem *p, const ct_gen_limits *lim,
                               ct_gen_variant **out, size_t *count);

/* Rebuilds a variant from its name ("family:P=v,..."): the family must
** exist, meet p->precision, every parameter must appear once (any order)
** with a value from its list, and the point must be valid.  out->name is
** the canonical name; out equals (memcmp) the enumerated variant.
** Returns CT_OK, CT_ERR_PARSE (malformed; unknown, repeated or missing
** parameter), CT_ERR_NOT_FOUND (no such family), CT_ERR_UNSUPPORTED (a value
** outside its list, a family the runtime cannot launch
** (ct_gen_family_launchable), a precision the family does not meet, or a point not
** valid or pruned for this problem or device), CT_ERR_INVALID_PROBLEM or
** CT_ERR_INVALID_ARG. */
ct_status ct_gen_variant_from_name(const ct_problem *p,
                                   const ct_gen_limits *lim, const char *name,
                                   ct_gen_variant *out);

/* The default variant of a problem: the first valid variant of the safe
** default family "direct" (a plain direct conv that accepts every valid
** problem, tensors of any size included).  Returns CT_OK, CT_ERR_INVALID_ARG,
** CT_ERR_INVALID_PROBLEM or CT_ERR_UNSUPPORTED (no valid point). */
ct_status ct_gen_default_variant(const ct_problem *p, const ct_gen_limits *lim,
                                 ct_gen_variant *out);

/* The CUDA source text of a variant for a problem, planned as for
** v->limits.  Same inputs -> same bytes; the precision is not part of the
** text.  Layout: a "// convtune:"
** comment line; "#define" lines for CT_N CT_C CT_H CT_W CT_K CT_R CT_S CT_P
** CT_Q CT_STRIDE_H CT_STRIDE_W CT_PAD_H CT_PAD_W CT_DIL_H CT_DIL_W CT_BIAS
** (none for a shape-generic family, whose comment line names no problem
** either: its text is the same for every problem its plan defines agree
** on); the family's parameters in order; the plan's lines; "#line 1" and
** the template.  *src is malloc'd; the caller frees it.  Returns CT_OK,
** CT_ERR_INVALID_ARG, CT_ERR_NOT_FOUND (template missing),
** CT_ERR_UNSUPPORTED (a family the runtime cannot launch,
** ct_gen_family_launchable) or CT_ERR_NOMEM. */
ct_status ct_gen_source(const ct_problem *p, const ct_gen_variant *v,
                        char **src);

/* The float64 reference kernel for a problem (templates/ref_f64.cu): kernel
** "ct_ref_f64" with arguments (const float *x, const float *w,
** const float *b, const float *res, double *y, double *abs_sum,
** double *sq_sum), one thread per output element: y = exact-as-f64 conv
** (+ b, + res with a residual), abs_sum = sum |x*w| (+|b|, +|res|),
** sq_sum = sum (x*w)^2 (+b^2, +res^2), the figures the precision contract
** scales with (res is read only with p->residual).  Launch: 256 threads per block, ceil(N*K*P*Q / 256) blocks.
** Source layout as for ct_gen_source, without parameters.  *src is
** malloc'd.  Returns CT_OK, CT_ERR_INVALID_ARG, CT_ERR_NOT_FOUND (template
** missing) or CT_ERR_NOMEM. */
ct_status ct_gen_reference_source(const ct_problem *p, char **src);

/* A template as it compiles on its own (its defaults): its text with the
** embedded headers it includes (templates/ct_*.cuh) expanded, as
** ct_gen_source does.  *src is malloc'd.  Returns CT_OK, CT_ERR_INVALID_ARG,
** CT_ERR_NOT_FOUND or CT_ERR_NOMEM. */
ct_status ct_gen_template_source(const char *file_name, char **src);

/* An embedded template's text by file name; NULL if none.  The text is
** static and NUL-terminated. */
const char *ct_gen_template(const char *file_name);

/* The file name of the i-th embedded template (0-based, build order); NULL
** past the last.  Lets tests compile every template on its own. */
const char *ct_gen_template_name(size_t i);

/* 64-bit FNV-1a of bytes, for source and cubin hashes. */
uint64_t ct_gen_hash(const void *data, size_t len, uint64_t seed);
#define CT_GEN_HASH_SEED 0xcbf29ce484222325ull

#endif /* CT_GEN_H */
