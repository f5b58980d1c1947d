/*
** nvrtc.c — NVRTC compilation of generated sources to cubins, and the
** ptxas resource report.
**
** Options: the target is a real architecture so that NVRTC runs ptxas and
** returns a cubin (nvrtcGetCUBIN); -std=c++17 for if constexpr and
** static_assert; -default-device so plain functions are device code;
** --ptxas-options=-v for the resource report.  --use_fast_math is NOT
** passed: fp32 division and square root stay IEEE.  No -lineinfo.
**
** No state is kept between calls but a count of them (for tests); NVRTC
** itself is thread-safe per program.
*/
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <nvrtc.h>

#include "ct_nvrtc.h"

#define CT_RT_ARCH_MAX 15   /* "sm_" + up to 12 of [0-9a-z] */
#define CT_RT_OPTIONS_MAX 128
#define CT_RT_MAX_OPTIONS 8

/* 1 if arch is "sm_" followed by 1..12 of [0-9a-z]. */
static int arch_ok(const char *arch) {
  if (arch == NULL || strncmp(arch, "sm_", 3) != 0) return 0;
  size_t n = strlen(arch);
  if (n <= 3 || n > CT_RT_ARCH_MAX) return 0;
  for (size_t i = 3; i < n; i++) {
    char ch = arch[i];
    if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z'))) return 0;
  }
  return 1;
}

/* Writes the option string for a checked arch into buf. */
static void options_format(const char *arch, char *buf, size_t len) {
  snprintf(buf, len,
           "--gpu-architecture=%s -std=c++17 -default-device --ptxas-options=-v",
           arch);
}

const char *ct_rt_compile_options(const char *arch) {
  static _Thread_local char buf[CT_RT_OPTIONS_MAX];
  if (!arch_ok(arch)) return NULL;
  options_format(arch, buf, sizeof buf);
  return buf;
}

ct_status ct_rt_nvrtc_version(char *buf, size_t len) {
  if (buf == NULL || len == 0) return CT_ERR_INVALID_ARG;
  buf[0] = '\0';
  int major = 0, minor = 0;
  if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) return CT_ERR_NVRTC;
  int n = snprintf(buf, len, "%d.%d", major, minor);
  if (n < 0 || (size_t)n >= len) {
    buf[0] = '\0';
    return CT_ERR_INVALID_ARG;
  }
  return CT_OK;
}

void ct_rt_compiled_clear(ct_rt_compiled *c) {
  if (c == NULL) return;
  free(c->cubin);
  free(c->log);
  memset(c, 0, sizeof *c);
}

/* ---------------------------------------------------------------------- */
/* The ptxas report                                                        */

/* The decimal number that ends right before s[pos] (spaces skipped), or -1. */
static long number_before(const char *line, const char *pos) {
  const char *e = pos;
  while (e > line && e[-1] == ' ') e--;
  const char *b = e;
  while (b > line && b[-1] >= '0' && b[-1] <= '9') b--;
  if (b == e) return -1;
  return strtol(b, NULL, 10);
}

/* Reads, per function, lines such as
**   ptxas info    : Used 40 registers, used 1 barriers, 256 bytes smem
**   ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
** into c: regs and smem_static are maxima over kernels, spill_bytes the sum
** over all functions, stack_bytes the largest frame.  All -1 when the log
** holds no "Used N registers" line. */
static void ptxas_parse(const char *log, ct_rt_compiled *c) {
  c->regs = c->spill_bytes = c->stack_bytes = c->smem_static = -1;
  if (log == NULL) return;
  int found = 0;
  long regs = 0, spill = 0, stack = 0, smem = 0;
  const char *line = log;
  while (*line) {
    const char *end = strchr(line, '\n');
    if (end == NULL) end = line + strlen(line);
    char buf[512];
    size_t n = (size_t)(end - line);
    if (n >= sizeof buf) n = sizeof buf - 1;
    memcpy(buf, line, n);
    buf[n] = '\0';

    const char *at;
    if ((at = strstr(buf, "Used ")) != NULL && strstr(buf, " registers") != NULL) {
      long r = strtol(at + 5, NULL, 10);
      if (r > regs) regs = r;
      found = 1;
      if ((at = strstr(buf, " bytes smem")) != NULL) {
        long s = number_before(buf, at);
        if (s > smem) smem = s;
      }
    }
    if ((at = strstr(buf, " bytes stack frame")) != NULL) {
      long s = number_before(buf, at);
      if (s > stack) stack = s;
    }
    if ((at = strstr(buf, " bytes spill stores")) != NULL) {
      long s = number_before(buf, at);
      if (s > 0) spill += s;
    }
    if ((at = strstr(buf, " bytes spill loads")) != NULL) {
      long s = number_before(buf, at);
      if (s > 0) spill += s;
    }
    line = *end ? end + 1 : end;
  }
  if (!found) return;
  c->regs = (int)regs;
  c->spill_bytes = (int)spill;
  c->stack_bytes = (int)stack;
  c->smem_static = (int)smem;
}

/* ---------------------------------------------------------------------- */
/* Compiling                                                               */

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* Copies the program's log into c->log.  Returns CT_OK or CT_ERR_NOMEM. */
static ct_status take_log(nvrtcProgram prog, ct_rt_compiled *c) {
  size_t size = 0;
  if (nvrtcGetProgramLogSize(prog, &size) != NVRTC_SUCCESS || size == 0) size = 1;
  c->log = malloc(size);
  if (c->log == NULL) return CT_ERR_NOMEM;
  c->log[0] = '\0';
  if (size > 1 && nvrtcGetProgramLog(prog, c->log) != NVRTC_SUCCESS) c->log[0] = '\0';
  c->log[size - 1] = '\0';
  return CT_OK;
}

static atomic_long compiles;

long ct_rt_compile_count(void) { return atomic_load(&compiles); }

ct_status ct_rt_compile(const char *src, const char *name, const char *arch,
                        ct_rt_compiled *out) {
  if (out == NULL) return CT_ERR_INVALID_ARG;
  atomic_fetch_add(&compiles, 1);
  memset(out, 0, sizeof *out);
  out->regs = out->spill_bytes = out->stack_bytes = out->smem_static = -1;
  if (src == NULL || !arch_ok(arch)) return CT_ERR_INVALID_ARG;

  /* Split the recorded option string into argv form. */
  char opts[CT_RT_OPTIONS_MAX];
  options_format(arch, opts, sizeof opts);
  const char *argv[CT_RT_MAX_OPTIONS];
  int argc = 0;
  char *save = NULL;
  for (char *tok = strtok_r(opts, " ", &save); tok && argc < CT_RT_MAX_OPTIONS;
       tok = strtok_r(NULL, " ", &save))
    argv[argc++] = tok;

  double t0 = now_ms();
  nvrtcProgram prog = NULL;
  nvrtcResult r = nvrtcCreateProgram(&prog, src, name ? name : "variant.cu", 0,
                                     NULL, NULL);
  if (r != NVRTC_SUCCESS) {
    out->nvrtc_result = (int)r;
    out->log = strdup(nvrtcGetErrorString(r));
    return r == NVRTC_ERROR_OUT_OF_MEMORY ? CT_ERR_NOMEM : CT_ERR_NVRTC;
  }
  r = nvrtcCompileProgram(prog, argc, argv);
  ct_status rc = take_log(prog, out);
  if (rc == CT_OK && r != NVRTC_SUCCESS) {
    out->nvrtc_result = (int)r;
    rc = CT_ERR_NVRTC;
  }
  if (rc == CT_OK) {
    size_t size = 0;
    r = nvrtcGetCUBINSize(prog, &size);
    if (r == NVRTC_SUCCESS && size == 0) r = NVRTC_ERROR_INVALID_OPTION;
    if (r == NVRTC_SUCCESS) {
      out->cubin = malloc(size);
      if (out->cubin == NULL) rc = CT_ERR_NOMEM;
      else r = nvrtcGetCUBIN(prog, out->cubin);
    }
    if (rc == CT_OK && r != NVRTC_SUCCESS) {
      out->nvrtc_result = (int)r;
      rc = CT_ERR_NVRTC;
    }
    if (rc == CT_OK) out->cubin_size = size;
  }
  nvrtcDestroyProgram(&prog);
  out->compile_ms = now_ms() - t0;
  if (rc != CT_OK) {
    free(out->cubin);
    out->cubin = NULL;
    out->cubin_size = 0;
    return rc;
  }
  ptxas_parse(out->log, out);
  return CT_OK;
}
