/*
** status.c — names and messages of the public enums: ct_status,
** ct_precision, ct_path.
*/
#include <string.h>

#include "convtune.h"

/* A static, human-readable message for every code; "unknown status" for a
** value outside the enum.  Never NULL. */
const char *ct_status_string(ct_status status) {
  switch (status) {
  case CT_OK: return "success";
  case CT_ERR_INVALID_ARG: return "invalid argument";
  case CT_ERR_INVALID_PROBLEM: return "invalid convolution problem";
  case CT_ERR_PARSE: return "problem spec does not parse";
  case CT_ERR_NOMEM: return "out of host memory";
  case CT_ERR_NO_DRIVER: return "CUDA driver (libcuda.so.1) unavailable";
  case CT_ERR_NO_DEVICE: return "no such CUDA device";
  case CT_ERR_CUDA: return "CUDA driver call failed";
  case CT_ERR_NVRTC: return "NVRTC compilation failed";
  case CT_ERR_DB: return "tuning database error";
  case CT_ERR_DB_CORRUPT:
    return "tuning database is damaged or not a convtune database";
  case CT_ERR_NOT_FOUND: return "not found";
  case CT_ERR_UNSUPPORTED: return "unsupported by this build";
  case CT_ERR_VERIFY: return "result failed its precision contract";
  case CT_ERR_IO: return "file read or write failed";
  case CT_STATUS_COUNT: break;
  }
  return "unknown status";
}

/* "tf32" / "fp32"; NULL for a value outside the enum. */
const char *ct_precision_name(ct_precision prec) {
  switch (prec) {
  case CT_PREC_TF32: return "tf32";
  case CT_PREC_FP32: return "fp32";
  }
  return NULL;
}

/* "none" / "relu" / "relu6"; NULL for a value outside the enum. */
const char *ct_activation_name(ct_activation act) {
  switch (act) {
  case CT_ACT_NONE: return "none";
  case CT_ACT_RELU: return "relu";
  case CT_ACT_RELU6: return "relu6";
  }
  return NULL;
}

/* "nchw" / "nhwc"; NULL for a value outside the enum. */
const char *ct_layout_name(ct_layout layout) {
  switch (layout) {
  case CT_LAYOUT_NCHW: return "nchw";
  case CT_LAYOUT_NHWC: return "nhwc";
  }
  return NULL;
}

/* Parses exactly "tf32" or "fp32" (case-sensitive) into *prec.  Returns
** CT_OK, CT_ERR_INVALID_ARG for a NULL argument, else CT_ERR_PARSE with
** *prec untouched. */
ct_status ct_precision_parse(const char *text, ct_precision *prec) {
  if (!text || !prec) return CT_ERR_INVALID_ARG;
  if (strcmp(text, "tf32") == 0) {
    *prec = CT_PREC_TF32;
    return CT_OK;
  }
  if (strcmp(text, "fp32") == 0) {
    *prec = CT_PREC_FP32;
    return CT_OK;
  }
  return CT_ERR_PARSE;
}

/* "none", "tuned-cubin", "tuned-compiled", "default", "nearest"; "unknown"
** for a value outside the enum.  Never NULL. */
const char *ct_path_name(ct_path path) {
  switch (path) {
  case CT_PATH_NONE: return "none";
  case CT_PATH_TUNED_CUBIN: return "tuned-cubin";
  case CT_PATH_TUNED_COMPILED: return "tuned-compiled";
  case CT_PATH_DEFAULT: return "default";
  case CT_PATH_NEAREST: return "nearest";
  }
  return "unknown";
}
