/*
** problem.c — conv2d problems: the default, output size, validation, and
** the spec text.
**
** Spec text: comma-separated key=value items, no spaces, keys in any order,
** each at most once:
**
**   n=256,c=3,h=224,w=224,k=96,r=11,s=11,stride=4,pad=2,dil=1,bias=1,prec=tf32
**
** n c h w k r s are required integers.  stride, pad and dil are optional:
** "A" sets both axes, "AxB" sets height then width (defaults 1, 0, 1).
** bias is 0 or 1 (default 1), prec is tf32 or fp32 (default tf32), act is
** none, relu or relu6 (default none), layout is nchw or nhwc (default nchw),
** residual is 0 or 1 (default 0: y is only written; 1: y holds a residual
** on entry, y = act(conv + b + y)), groups is an integer >= 1 dividing c
** and k (default 1; c for a depthwise convolution).  The
** canonical form (ct_problem_format) lists every key in the order above,
** then ",act=relu" for a ReLU (",act=relu6" for a ReLU6), ",layout=nhwc"
** for channels-last tensors, ",residual=1" for a residual and ",groups=G"
** for G > 1 groups
** (the defaults are left out, so a problem without them keeps the text,
** and so the database key, it had before those keys existed), and prints a
** pair as "A" when both axes agree.
*/
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "convtune.h"

/* Writes a printf-style message into err (if err != NULL and errlen > 0). */
static void set_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void set_err(char *err, size_t errlen, const char *fmt, ...) {
  va_list ap;
  if (!err || errlen == 0) return;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
}

/* The headline problem: KernelBench level 1 problem 50 at tf32. */
size_t ct_problem_size(void) { return sizeof(ct_problem); }

void ct_problem_default(ct_problem *p) {
  if (!p) return;
  memset(p, 0, sizeof *p);
  p->n = 256;
  p->c = 3;
  p->h = 224;
  p->w = 224;
  p->k = 96;
  p->r = 11;
  p->s = 11;
  p->stride_h = p->stride_w = 4;
  p->pad_h = p->pad_w = 2;
  p->dil_h = p->dil_w = 1;
  p->bias = 1;
  p->precision = CT_PREC_TF32;
  p->groups = 1;
}

/* ---------------------------------------------------------------------- */
/* Output size and validation                                              */

/* floor((in + 2*pad - dil*(kern-1) - 1) / stride) + 1, as PyTorch computes
** it (may be < 1); INT64_MIN when stride < 1 or the arithmetic overflows. */
static int64_t raw_extent(int64_t in, int64_t pad, int64_t dil, int64_t kern,
                          int64_t stride) {
  int64_t num, span, q;
  if (stride < 1) return INT64_MIN;
  if (__builtin_mul_overflow(pad, 2, &num) ||
      __builtin_add_overflow(num, in, &num) ||
      __builtin_sub_overflow(kern, 1, &span) ||
      __builtin_mul_overflow(dil, span, &span) ||
      __builtin_sub_overflow(num, span, &num) ||
      __builtin_sub_overflow(num, 1, &num))
    return INT64_MIN;
  q = num / stride;
  if (num % stride != 0 && num < 0) q--; /* C truncates; PyTorch floors */
  return q + 1;
}

/* raw_extent clamped to 0 when it is < 1. */
static int64_t out_extent(int64_t in, int64_t pad, int64_t dil, int64_t kern,
                          int64_t stride) {
  int64_t e = raw_extent(in, pad, dil, kern, stride);
  return e < 1 ? 0 : e;
}

/* Output height and width as PyTorch computes them (see convtune.h); 0 for
** an empty output or an out-of-range field.  P and Q may be NULL. */
void ct_problem_output(const ct_problem *p, int64_t *P, int64_t *Q) {
  if (P) *P = p ? out_extent(p->h, p->pad_h, p->dil_h, p->r, p->stride_h) : 0;
  if (Q) *Q = p ? out_extent(p->w, p->pad_w, p->dil_w, p->s, p->stride_w) : 0;
}

int64_t ct_gen_checked_product(const int64_t *f, int n) {
  int64_t prod = 1;
  for (int i = 0; i < n; i++)
    if (__builtin_mul_overflow(prod, f[i], &prod)) return -1;
  return prod;
}

/* The most elements a tensor may have: 2^48 (1 PiB of floats), far past any
** device's memory, so that every size and byte count the generator, the
** tuner and the families form from a valid problem fits in int64. */
#define CT_TENSOR_MAX ((int64_t)1 << 48)

/* The element count of a tensor of n dims f, when it is at most
** CT_TENSOR_MAX; -1 (with the message in err) otherwise. */
static int64_t check_count(const char *tensor, const char *dims,
                           const int64_t *f, int n, char *err, size_t errlen) {
  int64_t count = ct_gen_checked_product(f, n);
  if (count < 0 || count > CT_TENSOR_MAX) {
    if (count < 0)
      set_err(err, errlen,
              "%s has %s > 2^63 elements, more than 2^48: no device holds it",
              tensor, dims);
    else
      set_err(err, errlen,
              "%s has %s = %" PRId64 " elements, more than 2^48: no device "
              "holds it", tensor, dims, count);
    return -1;
  }
  return count;
}

int ct_gen_index64(const ct_problem *p) {
  int64_t P, Q;
  ct_problem_output(p, &P, &Q);
  const int64_t xf[] = {p->n, p->c, p->h, p->w};
  const int64_t wf[] = {p->k, p->groups > 1 ? p->c / p->groups : p->c, p->r, p->s};
  const int64_t yf[] = {p->n, p->k, P, Q};
  int64_t nx = ct_gen_checked_product(xf, 4), nw = ct_gen_checked_product(wf, 4),
          ny = ct_gen_checked_product(yf, 4);
  return nx < 0 || nw < 0 || ny < 0 || nx > INT32_MAX || nw > INT32_MAX ||
         ny > INT32_MAX;
}

/* Checks every field of *p: sizes >= 1, stride >= 1, pad >= 0, dil >= 1,
** each <= INT32_MAX, bias and residual 0 or 1, groups dividing c and k, a
** known precision,
** activation and layout, a non-empty output,
** padded extents <= INT32_MAX (kernels index along a row or a column with
** 32-bit ints; every input index a kernel forms lies inside the padded
** extent), and x, w, y element counts <= 2^48 (tensors past 2^31 - 1
** elements are valid: the families that take them form 64-bit offsets).  Returns CT_OK, CT_ERR_INVALID_ARG (p NULL) or
** CT_ERR_INVALID_PROBLEM with a message naming the field in err (if err is
** not NULL, at most errlen bytes, NUL-terminated). */
ct_status ct_problem_validate(const ct_problem *p, char *err, size_t errlen) {
  if (!p) {
    set_err(err, errlen, "problem is NULL");
    return CT_ERR_INVALID_ARG;
  }
  const struct {
    const char *name;
    int64_t value, min;
  } fields[] = {
      {"n", p->n, 1},
      {"c", p->c, 1},
      {"h", p->h, 1},
      {"w", p->w, 1},
      {"k", p->k, 1},
      {"r", p->r, 1},
      {"s", p->s, 1},
      {"stride_h", p->stride_h, 1},
      {"stride_w", p->stride_w, 1},
      {"pad_h", p->pad_h, 0},
      {"pad_w", p->pad_w, 0},
      {"dil_h", p->dil_h, 1},
      {"dil_w", p->dil_w, 1},
      {"groups", p->groups, 1},
  };
  for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
    if (fields[i].value < fields[i].min) {
      set_err(err, errlen, "%s = %" PRId64 " must be >= %" PRId64,
              fields[i].name, fields[i].value, fields[i].min);
      return CT_ERR_INVALID_PROBLEM;
    }
    if (fields[i].value > INT32_MAX) {
      set_err(err, errlen, "%s = %" PRId64 " exceeds INT32_MAX (%" PRId32 ")",
              fields[i].name, fields[i].value, INT32_MAX);
      return CT_ERR_INVALID_PROBLEM;
    }
  }
  if (p->bias != 0 && p->bias != 1) {
    set_err(err, errlen, "bias = %d must be 0 or 1", p->bias);
    return CT_ERR_INVALID_PROBLEM;
  }
  if (p->residual != 0 && p->residual != 1) {
    set_err(err, errlen, "residual = %d must be 0 or 1", p->residual);
    return CT_ERR_INVALID_PROBLEM;
  }
  if (!ct_precision_name(p->precision)) {
    set_err(err, errlen, "precision = %d is unknown (tf32 = %d, fp32 = %d)",
            (int)p->precision, CT_PREC_TF32, CT_PREC_FP32);
    return CT_ERR_INVALID_PROBLEM;
  }
  if (!ct_activation_name(p->act)) {
    set_err(err, errlen, "act = %d is unknown (none = %d, relu = %d, relu6 = %d)",
            (int)p->act, CT_ACT_NONE, CT_ACT_RELU, CT_ACT_RELU6);
    return CT_ERR_INVALID_PROBLEM;
  }
  if (!ct_layout_name(p->layout)) {
    set_err(err, errlen, "layout = %d is unknown (nchw = %d, nhwc = %d)",
            (int)p->layout, CT_LAYOUT_NCHW, CT_LAYOUT_NHWC);
    return CT_ERR_INVALID_PROBLEM;
  }
  if (p->c % p->groups != 0 || p->k % p->groups != 0) {
    set_err(err, errlen,
            "groups = %" PRId64 " must divide both c = %" PRId64 " and k = %" PRId64,
            p->groups, p->c, p->k);
    return CT_ERR_INVALID_PROBLEM;
  }

  /* Every field is in [0, INT32_MAX] now: no int64 expression below
  ** overflows. */
  int64_t hp = p->h + 2 * p->pad_h, wp = p->w + 2 * p->pad_w;
  int64_t rd = p->dil_h * (p->r - 1) + 1, sd = p->dil_w * (p->s - 1) + 1;
  int64_t P, Q;
  ct_problem_output(p, &P, &Q);
  if (P < 1) {
    set_err(err, errlen,
            "output height P = %" PRId64 " < 1: padded height H + 2*pad_h = %"
            PRId64 " is less than the dilated kernel height dil_h*(R-1)+1 = %"
            PRId64,
            raw_extent(p->h, p->pad_h, p->dil_h, p->r, p->stride_h), hp, rd);
    return CT_ERR_INVALID_PROBLEM;
  }
  if (Q < 1) {
    set_err(err, errlen,
            "output width Q = %" PRId64 " < 1: padded width W + 2*pad_w = %"
            PRId64 " is less than the dilated kernel width dil_w*(S-1)+1 = %"
            PRId64,
            raw_extent(p->w, p->pad_w, p->dil_w, p->s, p->stride_w), wp, sd);
    return CT_ERR_INVALID_PROBLEM;
  }
  if (hp > INT32_MAX) {
    set_err(err, errlen,
            "padded height H + 2*pad_h = %" PRId64 " exceeds INT32_MAX (%"
            PRId32 "): kernels index with 32-bit ints", hp, INT32_MAX);
    return CT_ERR_INVALID_PROBLEM;
  }
  if (wp > INT32_MAX) {
    set_err(err, errlen,
            "padded width W + 2*pad_w = %" PRId64 " exceeds INT32_MAX (%"
            PRId32 "): kernels index with 32-bit ints", wp, INT32_MAX);
    return CT_ERR_INVALID_PROBLEM;
  }
  const int64_t xf[] = {p->n, p->c, p->h, p->w};
  const int64_t wf[] = {p->k, p->c / p->groups, p->r, p->s};
  const int64_t yf[] = {p->n, p->k, P, Q};
  if (check_count("input x", "N*C*H*W", xf, 4, err, errlen) < 0 ||
      check_count("weights w", "K*(C/groups)*R*S", wf, 4, err, errlen) < 0 ||
      check_count("output y", "N*K*P*Q", yf, 4, err, errlen) < 0)
    return CT_ERR_INVALID_PROBLEM;
  return CT_OK;
}

/* ---------------------------------------------------------------------- */
/* Spec text                                                               */

/* Parses a whole decimal integer (optional '-', digits, nothing after)
** from text[0..len).  Returns CT_OK or CT_ERR_PARSE with a message naming
** the key. */
static ct_status parse_int(const char *key, const char *text, size_t len,
                           int64_t *out, char *err, size_t errlen) {
  size_t i = 0;
  int neg = 0;
  int64_t v = 0;
  if (i < len && text[i] == '-') {
    neg = 1;
    i++;
  }
  if (i == len) {
    set_err(err, errlen, "%s: '%.*s' is not an integer", key, (int)len, text);
    return CT_ERR_PARSE;
  }
  for (; i < len; i++) {
    if (text[i] < '0' || text[i] > '9') {
      set_err(err, errlen, "%s: '%.*s' is not an integer (junk at '%.*s')",
              key, (int)len, text, (int)(len - i), text + i);
      return CT_ERR_PARSE;
    }
    int d = text[i] - '0';
    /* accumulate negatively so INT64_MIN parses too */
    if (__builtin_mul_overflow(v, 10, &v) ||
        __builtin_sub_overflow(v, d, &v)) {
      set_err(err, errlen, "%s: '%.*s' overflows a 64-bit integer", key,
              (int)len, text);
      return CT_ERR_PARSE;
    }
  }
  if (!neg) {
    if (v == INT64_MIN) {
      set_err(err, errlen, "%s: '%.*s' overflows a 64-bit integer", key,
              (int)len, text);
      return CT_ERR_PARSE;
    }
    v = -v;
  }
  *out = v;
  return CT_OK;
}

/* Parses "A" or "AxB" into a (height, width) pair. */
static ct_status parse_pair(const char *key, const char *text, size_t len,
                            int64_t *a, int64_t *b, char *err,
                            size_t errlen) {
  const char *x = memchr(text, 'x', len);
  if (!x) {
    ct_status rc = parse_int(key, text, len, a, err, errlen);
    if (rc == CT_OK) *b = *a;
    return rc;
  }
  size_t la = (size_t)(x - text);
  ct_status rc = parse_int(key, text, la, a, err, errlen);
  if (rc != CT_OK) return rc;
  return parse_int(key, x + 1, len - la - 1, b, err, errlen);
}

enum { K_N, K_C, K_H, K_W, K_K, K_R, K_S, K_STRIDE, K_PAD, K_DIL, K_BIAS,
       K_PREC, K_ACT, K_LAYOUT, K_RESIDUAL, K_GROUPS, K_COUNT, K_REQUIRED = K_STRIDE };

/* Keys in canonical order; the first K_REQUIRED are required. */
static const char *const key_names[K_COUNT] = {
    "n",      "c",   "h",   "w",    "k",    "r",   "s",
    "stride", "pad", "dil", "bias", "prec", "act", "layout", "residual", "groups"};

/* Parses the value v[0 .. vlen) of a key with n (2 or 3) named choices
** into *index, the position of its name in names; CT_ERR_PARSE, with
** "key: 'v' must be a or b" ("a, b or c") in err, for anything else. */
static ct_status parse_choice(const char *key, const char *v, size_t vlen,
                              const char *const *names, int n, int *index, char *err,
                              size_t errlen) {
  for (int i = 0; i < n; i++)
    if (vlen == strlen(names[i]) && memcmp(v, names[i], vlen) == 0) {
      *index = i;
      return CT_OK;
    }
  set_err(err, errlen, "%s: '%.*s' must be %s%s%s or %s", key, (int)vlen, v, names[0],
          n > 2 ? ", " : "", n > 2 ? names[1] : "", names[n - 1]);
  return CT_ERR_PARSE;
}

/* Parses one item's value for key index `key` into *q. */
static ct_status parse_value(int key, const char *v, size_t vlen,
                             ct_problem *q, char *err, size_t errlen) {
  const char *name = key_names[key];
  int64_t *single[K_REQUIRED] = {&q->n, &q->c, &q->h, &q->w,
                                 &q->k, &q->r, &q->s};
  if (key < K_REQUIRED)
    return parse_int(name, v, vlen, single[key], err, errlen);
  static const char *const bits[] = {"0", "1"};
  int i = 0; /* a named key's choice */
  ct_status rc;
  switch (key) {
  case K_STRIDE:
    return parse_pair(name, v, vlen, &q->stride_h, &q->stride_w, err, errlen);
  case K_PAD:
    return parse_pair(name, v, vlen, &q->pad_h, &q->pad_w, err, errlen);
  case K_DIL:
    return parse_pair(name, v, vlen, &q->dil_h, &q->dil_w, err, errlen);
  case K_BIAS:
    rc = parse_choice(name, v, vlen, bits, 2, &i, err, errlen);
    if (rc == CT_OK) q->bias = i;
    return rc;
  case K_PREC:
  {
    const char *const precs[] = {ct_precision_name(CT_PREC_TF32),
                                 ct_precision_name(CT_PREC_FP32)};
    rc = parse_choice(name, v, vlen, precs, 2, &i, err, errlen);
    if (rc == CT_OK) q->precision = i ? CT_PREC_FP32 : CT_PREC_TF32;
    return rc;
  }
  case K_ACT:
  {
    const char *const acts[] = {ct_activation_name(CT_ACT_NONE), ct_activation_name(CT_ACT_RELU),
                                ct_activation_name(CT_ACT_RELU6)}; /* the enum's order */
    rc = parse_choice(name, v, vlen, acts, 3, &i, err, errlen);
    if (rc == CT_OK) q->act = (ct_activation)i;
    return rc;
  }
  case K_LAYOUT:
  {
    const char *const layouts[] = {ct_layout_name(CT_LAYOUT_NCHW),
                                   ct_layout_name(CT_LAYOUT_NHWC)};
    rc = parse_choice(name, v, vlen, layouts, 2, &i, err, errlen);
    if (rc == CT_OK) q->layout = i ? CT_LAYOUT_NHWC : CT_LAYOUT_NCHW;
    return rc;
  }
  case K_RESIDUAL:
    rc = parse_choice(name, v, vlen, bits, 2, &i, err, errlen);
    if (rc == CT_OK) q->residual = i;
    return rc;
  case K_GROUPS:
    return parse_int(name, v, vlen, &q->groups, err, errlen);
  }
  return CT_ERR_PARSE; /* unreachable */
}

/* Parses the spec text into *p and validates it.  *p is written only on
** CT_OK.  Returns CT_OK, CT_ERR_INVALID_ARG (spec or p NULL), CT_ERR_PARSE
** (unknown, duplicate or missing key; a value that is not a whole integer
** or overflows int64; a bad bias, prec, act, layout or residual) or
** CT_ERR_INVALID_PROBLEM, with a message naming the key or field in err (if
** err is not NULL, at most errlen bytes, NUL-terminated). */
ct_status ct_problem_parse(const char *spec, ct_problem *p, char *err,
                           size_t errlen) {
  if (!spec || !p) {
    set_err(err, errlen, "%s is NULL", !spec ? "spec" : "problem");
    return CT_ERR_INVALID_ARG;
  }
  ct_problem q;
  int seen[K_COUNT] = {0};
  memset(&q, 0, sizeof q);
  q.stride_h = q.stride_w = 1;
  q.dil_h = q.dil_w = 1;
  q.bias = 1;
  q.precision = CT_PREC_TF32;
  q.act = CT_ACT_NONE;
  q.layout = CT_LAYOUT_NCHW;
  q.groups = 1;

  const char *item = spec;
  for (;;) {
    const char *end = strchr(item, ',');
    size_t len = end ? (size_t)(end - item) : strlen(item);
    const char *eq = memchr(item, '=', len);
    if (len == 0) {
      set_err(err, errlen, "empty item at offset %td of the spec",
              item - spec);
      return CT_ERR_PARSE;
    }
    if (!eq) {
      set_err(err, errlen, "item '%.*s' is not key=value", (int)len, item);
      return CT_ERR_PARSE;
    }
    size_t klen = (size_t)(eq - item);
    int key = -1;
    for (int i = 0; i < K_COUNT; i++)
      if (strlen(key_names[i]) == klen &&
          memcmp(key_names[i], item, klen) == 0)
        key = i;
    if (key < 0) {
      set_err(err, errlen, "unknown key '%.*s'", (int)klen, item);
      return CT_ERR_PARSE;
    }
    if (seen[key]) {
      set_err(err, errlen, "duplicate key '%s'", key_names[key]);
      return CT_ERR_PARSE;
    }
    seen[key] = 1;
    ct_status rc = parse_value(key, eq + 1, len - klen - 1, &q, err, errlen);
    if (rc != CT_OK) return rc;
    if (!end) break;
    item = end + 1;
  }
  for (int i = 0; i < K_REQUIRED; i++) {
    if (!seen[i]) {
      set_err(err, errlen, "missing required key '%s'", key_names[i]);
      return CT_ERR_PARSE;
    }
  }
  ct_status rc = ct_problem_validate(&q, err, errlen);
  if (rc != CT_OK) return rc;
  *p = q;
  return CT_OK;
}

/* Appends "A" or "AxB" for a (height, width) pair. */
static int format_pair(char *buf, size_t len, const char *key, int64_t a,
                       int64_t b) {
  if (a == b) return snprintf(buf, len, ",%s=%" PRId64, key, a);
  return snprintf(buf, len, ",%s=%" PRId64 "x%" PRId64, key, a, b);
}

/* Writes the canonical spec text of *p into buf.  CT_PROBLEM_SPEC_MAX bytes
** suffice for any problem whose fields fit in int32; parsing the text of a
** valid problem gives back *p.  Returns CT_OK, or CT_ERR_INVALID_ARG for a
** NULL argument, an unknown precision, activation or layout, a residual
** other than 0 or 1, groups < 1, or a buf too
** small (then buf holds "" when buflen > 0). */
ct_status ct_problem_format(const ct_problem *p, char *buf, size_t buflen) {
  if (!p || !buf || buflen == 0) return CT_ERR_INVALID_ARG;
  const char *prec = ct_precision_name(p->precision);
  if (!prec || !ct_activation_name(p->act) || !ct_layout_name(p->layout) ||
      (p->residual != 0 && p->residual != 1) || (p->bias != 0 && p->bias != 1) ||
      p->groups < 1) {
    buf[0] = '\0';
    return CT_ERR_INVALID_ARG;
  }
  char tmp[512]; /* holds any int64 field values */
  size_t used = 0;
  int n = snprintf(tmp, sizeof tmp,
                   "n=%" PRId64 ",c=%" PRId64 ",h=%" PRId64 ",w=%" PRId64
                   ",k=%" PRId64 ",r=%" PRId64 ",s=%" PRId64,
                   p->n, p->c, p->h, p->w, p->k, p->r, p->s);
  used += (size_t)n;
  used += (size_t)format_pair(tmp + used, sizeof tmp - used, "stride",
                              p->stride_h, p->stride_w);
  used += (size_t)format_pair(tmp + used, sizeof tmp - used, "pad", p->pad_h,
                              p->pad_w);
  used += (size_t)format_pair(tmp + used, sizeof tmp - used, "dil", p->dil_h,
                              p->dil_w);
  used += (size_t)snprintf(tmp + used, sizeof tmp - used, ",bias=%d,prec=%s",
                           p->bias, prec);
  if (p->act != CT_ACT_NONE)
    used += (size_t)snprintf(tmp + used, sizeof tmp - used, ",act=%s",
                             ct_activation_name(p->act));
  if (p->layout != CT_LAYOUT_NCHW)
    used += (size_t)snprintf(tmp + used, sizeof tmp - used, ",layout=%s",
                             ct_layout_name(p->layout));
  if (p->residual)
    used += (size_t)snprintf(tmp + used, sizeof tmp - used, ",residual=1");
  if (p->groups != 1)
    used += (size_t)snprintf(tmp + used, sizeof tmp - used, ",groups=%" PRId64, p->groups);
  if (used + 1 > buflen) {
    buf[0] = '\0';
    return CT_ERR_INVALID_ARG;
  }
  memcpy(buf, tmp, used + 1);
  return CT_OK;
}
