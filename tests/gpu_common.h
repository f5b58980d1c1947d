/*
** gpu_common.h — shared by the GPU tests: open the device or skip (77).
*/
#ifndef CT_GPU_COMMON_H
#define CT_GPU_COMMON_H

#include "ct_tune.h"
#include "test.h"

/* Opens device 0 into *g, or exits 77 saying why there is no GPU. */
static void gpu_open_or_skip(ct_tune_gpu *g) {
  char err[512];
  ct_status rc = ct_tune_gpu_open(0, g, err, sizeof err);
  if (rc == CT_ERR_NO_DRIVER || rc == CT_ERR_NO_DEVICE) {
    printf("SKIP: no usable GPU: %s\n", err);
    exit(CT_TEST_SKIP);
  }
  if (rc != CT_OK) {
    fprintf(stderr, "cannot open the GPU: %s\n", err);
    exit(1);
  }
}

#endif /* CT_GPU_COMMON_H */
