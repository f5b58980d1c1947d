/*
** fuzz_common.h — what the fuzz targets share: a fixed device (the key the
** database target's seeds are written under and its lookups use) and the
** problems it looks up.
*/
#ifndef CT_FUZZ_COMMON_H
#define CT_FUZZ_COMMON_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ct_cache.h"
#include "ct_gen.h"

/* Stops the run with a message: libFuzzer reports it as a crash with the
** input that caused it. */
#define FUZZ_CHECK(cond)                                                      \
  do {                                                                        \
    if (!(cond)) {                                                            \
      fprintf(stderr, "%s:%d: invariant broken: %s\n", __FILE__, __LINE__,    \
              #cond);                                                         \
      abort();                                                                \
    }                                                                         \
  } while (0)

static const ct_cache_device fuzz_device = {
    .name = "NVIDIA H200",
    .cc_major = 9,
    .cc_minor = 0,
    .sm_count = 132,
    .driver_version = 13000,
    .nvrtc_version = "13.0",
    .arch = "sm_90a",
};

/* Problems the database target looks up (and its seeds tune). */
static const char *const fuzz_specs[] = {
    "n=2,c=8,h=20,w=20,k=32,r=3,s=3,stride=1,pad=1,dil=1,bias=1,prec=tf32",
    "n=1,c=8,h=30,w=26,k=32,r=3,s=3,stride=1,pad=1,dil=1,bias=1,prec=tf32",
    "n=4,c=3,h=63,w=61,k=20,r=11,s=11,stride=4,pad=2,dil=1,bias=1,prec=tf32",
    "n=1,c=5,h=9,w=7,k=3,r=1,s=1,stride=2,pad=0,dil=1,bias=0,prec=fp32",
};
#define FUZZ_N_SPECS (sizeof fuzz_specs / sizeof fuzz_specs[0])

#endif /* CT_FUZZ_COMMON_H */
