/*
** ct_nvrtc.h — compiling generated CUDA source to a cubin with NVRTC, and
** reading ptxas's resource report (registers, spills, stack, shared memory).
**
** Every function is thread-safe: the tuner compiles variants on a pool of
** CPU threads.  Nothing here needs a GPU or the CUDA driver.
*/
#ifndef CT_NVRTC_H
#define CT_NVRTC_H

#include <stddef.h>

#include "convtune.h"

/* One compiled module.  The ptxas figures cover every kernel (and every
** non-inlined function) of the module; -1 where the log held no report. */
typedef struct ct_rt_compiled {
  void *cubin;        /* the cubin (malloc'd), NULL on failure */
  size_t cubin_size;  /* its size in bytes */
  char *log;          /* NVRTC's log (malloc'd, NUL-terminated), kept on
                      ** success too; NULL only when out of memory */
  int regs;           /* most registers any kernel uses */
  int spill_bytes;    /* spill stores + spill loads, bytes, all functions */
  int stack_bytes;    /* largest stack frame, bytes */
  int smem_static;    /* largest static shared memory of a kernel, bytes */
  double compile_ms;  /* wall time of the compile */
  int nvrtc_result;   /* the nvrtcResult of the failing call, 0 on success */
} ct_rt_compiled;

/* Compiles src (NUL-terminated CUDA C++; name is the file name shown in
** diagnostics, may be NULL) for arch (an NVRTC real architecture such as
** "sm_90a") with the options ct_rt_compile_options(arch) gives, and reads
** the cubin and the ptxas report.  *out is always initialised, so
** ct_rt_compiled_clear(out) is right after any return.
** Returns CT_OK; CT_ERR_INVALID_ARG (NULL src/out, or an arch that is not
** "sm_" followed by [0-9a-z]); CT_ERR_NVRTC (out->nvrtc_result set, out->log
** holds the compiler's messages when there are any); CT_ERR_NOMEM. */
ct_status ct_rt_compile(const char *src, const char *name, const char *arch,
                        ct_rt_compiled *out);

/* How many times ct_rt_compile was called in this process (for tests:
** whether a path compiled). */
long ct_rt_compile_count(void);

/* Frees what ct_rt_compile allocated and zeroes *c.  NULL is a no-op. */
void ct_rt_compiled_clear(ct_rt_compiled *c);

/* NVRTC's version as "MAJOR.MINOR" (e.g. "13.0") into buf (len bytes).
** Returns CT_OK, CT_ERR_INVALID_ARG (buf too small or NULL), CT_ERR_NVRTC. */
ct_status ct_rt_nvrtc_version(char *buf, size_t len);

/* The NVRTC options ct_rt_compile passes for arch, space-separated, in a
** fixed order: what the cache records as the compile options.  The string
** lives in thread-local storage until this thread's next call.  NULL for an
** arch ct_rt_compile would refuse. */
const char *ct_rt_compile_options(const char *arch);

#endif /* CT_NVRTC_H */
