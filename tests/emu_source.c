/*
** emu_source.c — prints the CUDA source of one variant of a problem, as
** the tuner compiles it, for tests/test_emulated.sh:
**
**   emu_source SPEC PREC VARIANT > kernel.cu
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convtune.h"
#include "ct_gen.h"

int main(int argc, char **argv) {
  ct_problem p;
  char err[256];
  ct_gen_limits lim;
  ct_gen_variant v;
  char *src = NULL;
  if (argc != 4) {
    fprintf(stderr, "usage: emu_source SPEC tf32|fp32 VARIANT\n");
    return 2;
  }
  if (ct_problem_parse(argv[1], &p, err, sizeof err) != CT_OK) {
    fprintf(stderr, "emu_source: %s: %s\n", argv[1], err);
    return 2;
  }
  p.precision = strcmp(argv[2], "fp32") == 0 ? CT_PREC_FP32 : CT_PREC_TF32;
  if (ct_gen_limits_for_arch("sm_90a", &lim) != CT_OK ||
      ct_gen_variant_from_name(&p, &lim, argv[3], &v) != CT_OK ||
      ct_gen_source(&p, &v, &src) != CT_OK) {
    fprintf(stderr, "emu_source: %s: no such variant of %s\n", argv[3], argv[1]);
    return 2;
  }
  fputs(src, stdout);
  free(src);
  return 0;
}
