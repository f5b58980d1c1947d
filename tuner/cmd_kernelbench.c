/*
** cmd_kernelbench.c — `convtune kernelbench`: a self-contained KernelBench
** entry (one Python file, no import of convtune) from the tuning database.
**
** The file holds, per precision (tf32 and fp32), the winning variant's CUDA
** source (or the default variant's, said in the header) and a C++ launcher
** that runs its kernels with the plan's grids on torch's current stream,
** both built by torch.utils.cpp_extension.load_inline at the first call of
** that precision; ModelNew with the reference Model's constructor, module
** names and initialisation (the parameters are made and initialised as
** nn.Conv2d makes them, so one seed gives one state_dict); the reference's
** test code.  A call picks the tf32 kernels when
** torch.backends.cudnn.allow_tf32 is set, else the fp32 ones.
*/
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "ct_gen.h"

const char ct_cli_usage_kernelbench[] =
    "usage: convtune kernelbench [--level1 N | --problem SPEC] [--db PATH]\n"
    "                            [--arch ARCH] [--out FILE [--force]]\n"
    "\n"
    "Writes a KernelBench entry for a problem as one Python file (stdout, or\n"
    "--out FILE): ModelNew with the reference Model's constructor and module\n"
    "names, the tuned tf32 and fp32 variants' CUDA sources with their\n"
    "launchers, built with torch.utils.cpp_extension.load_inline, and the\n"
    "reference's get_inputs / get_init_inputs.  It imports torch only: no\n"
    "convtune.  Each call runs the tf32 kernels when\n"
    "torch.backends.cudnn.allow_tf32 is set, else the fp32 ones, on torch's\n"
    "current stream; an input of another shape, dtype, device or layout\n"
    "raises ValueError.\n"
    "\n"
    "--level1 N: KernelBench level 1 problem N (50, 55, 56, 62, 63, 80, 87),\n"
    "with that reference's constructor; default 50.  --problem SPEC: any\n"
    "problem without act or layout, with nn.Conv2d's constructor.  The\n"
    "variants are the database's winners for the problem on one device (the\n"
    "one of the newest winner, at either precision); where that device has\n"
    "none, the default variant for its architecture, or with nothing tuned\n"
    "for --arch (default sm_90a).\n"
    "The file's header says which variants it holds and where they came\n"
    "from: device, tuning time, measured time.\n";

/* ---------------------------------------------------------------------- */
/* The KernelBench level 1 conv2d problems                                 */

typedef struct kb_problem {
  int id;
  const char *file;       /* the reference's file name */
  const char *attr;       /* its conv module's attribute */
  const char *signature;  /* its __init__'s parameters after self */
  const char *conv;       /* the arguments of _Conv2dParams, in the names of
                             the signature: in, out, kernel, stride,
                             padding, dilation, groups, bias */
  const char *spec;       /* the problem of its test inputs */
  const char *test_code;  /* its test code, verbatim */
} kb_problem;

#define KB_SIG_SQUARE                                                           \
  "in_channels: int, out_channels: int, kernel_size: int, stride: int = 1, "    \
  "padding: int = 0, dilation: int = 1, groups: int = 1, bias: bool = False"
#define KB_CONV_ALL "in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias"
/* The test code's end shared by every reference but 50: get_inputs with x
** of (batch_size, in_channels, height, width), then get_init_inputs'
** return list, which each entry completes. */
#define KB_INPUTS_X                                                             \
  "\n"                                                                          \
  "def get_inputs():\n"                                                         \
  "    x = torch.rand(batch_size, in_channels, height, width)\n"                \
  "    return [x]\n"                                                            \
  "\n"                                                                          \
  "def get_init_inputs():\n"                                                    \
  "    return ["

static const kb_problem kb_level1[] = {
    {50, "50_conv_standard_2D__square_input__square_kernel.py", "conv1",
     "num_classes=1000", "3, 96, 11, 4, 2, 1, 1, True",
     "n=256,c=3,h=224,w=224,k=96,r=11,s=11,stride=4,pad=2,bias=1",
     "batch_size = 256\n"
     "num_classes = 1000\n"
     "\n"
     "def get_inputs():\n"
     "    return [torch.rand(batch_size, 3, 224, 224)]\n"
     "\n"
     "def get_init_inputs():\n"
     "    return [num_classes]\n"},
    {55, "55_conv_standard_2D__asymmetric_input__square_kernel.py", "conv2d", KB_SIG_SQUARE,
     KB_CONV_ALL, "n=8,c=64,h=512,w=1024,k=128,r=3,s=3,bias=0",
     "batch_size = 8\n"
     "height = 512\n"
     "width = 1024\n"
     "in_channels = 64\n"
     "out_channels = 128\n"
     "kernel_size = 3\n"
     KB_INPUTS_X "in_channels, out_channels, kernel_size]\n"},
    {56, "56_conv_standard_2D__asymmetric_input__asymmetric_kernel.py", "conv2d",
     "in_channels: int, out_channels: int, kernel_size: tuple, stride: tuple = (1, 1), "
     "padding: tuple = (0, 0), dilation: tuple = (1, 1), groups: int = 1, bias: bool = False",
     KB_CONV_ALL, "n=8,c=64,h=512,w=256,k=128,r=5,s=7,bias=0",
     "batch_size = 8\n"
     "in_channels = 64\n"
     "out_channels = 128\n"
     "kernel_size = (5, 7)\n"
     "height = 512\n"
     "width = 256\n"
     KB_INPUTS_X "in_channels, out_channels, kernel_size]\n"},
    {62, "62_conv_standard_2D__square_input__asymmetric_kernel.py", "conv2d",
     "in_channels: int, out_channels: int, kernel_size: tuple, stride: int = 1, "
     "padding: int = 0, dilation: int = 1, groups: int = 1, bias: bool = False",
     KB_CONV_ALL, "n=8,c=32,h=512,w=512,k=64,r=5,s=9,bias=0",
     "batch_size = 8\n"
     "in_channels = 32\n"
     "out_channels = 64\n"
     "kernel_size = (5, 9)\n"
     "width = 512\n"
     "height = 512\n"
     KB_INPUTS_X "in_channels, out_channels, kernel_size]\n"},
    {63, "63_conv_standard_2D__square_input__square_kernel.py", "conv2d", KB_SIG_SQUARE,
     KB_CONV_ALL, "n=16,c=16,h=1024,w=1024,k=128,r=3,s=3,bias=0",
     "batch_size = 16\n"
     "in_channels = 16\n"
     "out_channels = 128\n"
     "kernel_size = 3\n"
     "width = 1024\n"
     "height = 1024\n"
     KB_INPUTS_X "in_channels, out_channels, kernel_size]\n"},
    {80, "80_conv_standard_2D_square_input_asymmetric_kernel___dilated____padded__.py", "conv2d",
     "in_channels: int, out_channels: int, kernel_size: tuple, stride: int = 1, "
     "padding: tuple = (0, 0), dilation: tuple = (1, 1), bias: bool = False",
     "in_channels, out_channels, kernel_size, stride, padding, dilation, 1, bias",
     "n=8,c=32,h=512,w=512,k=64,r=5,s=9,pad=2x4,dil=2x3,bias=0",
     "batch_size = 8\n"
     "in_channels = 32\n"
     "out_channels = 64\n"
     "kernel_size = (5, 9)\n"
     "width = 512\n"
     "height = 512\n"
     "stride = 1\n"
     "padding = (2, 4)\n"
     "dilation = (2, 3)\n"
     KB_INPUTS_X "in_channels, out_channels, kernel_size, stride, padding, dilation]\n"},
    {87, "87_conv_pointwise_2D.py", "conv1d",
     "in_channels: int, out_channels: int, bias: bool = False",
     "in_channels, out_channels, 1, 1, 0, 1, 1, bias",
     "n=16,c=64,h=1024,w=1024,k=128,r=1,s=1,bias=0",
     "batch_size = 16\n"
     "in_channels = 64\n"
     "out_channels = 128\n"
     "width = 1024\n"
     "height = 1024\n"
     KB_INPUTS_X "in_channels, out_channels]\n"},
};
#define KB_N_LEVEL1 (sizeof kb_level1 / sizeof kb_level1[0])

/* ---------------------------------------------------------------------- */
/* The variants                                                            */

/* One precision's variant and where it came from. */
typedef struct kb_variant {
  ct_problem p;
  ct_gen_variant v;
  char *kernels;          /* its CUDA source, comments removed */
  int tuned;              /* 1: the database's winner */
  ct_cache_device device; /* tuned: the device */
  double mean_ms;         /* tuned: its full-protocol mean */
  int64_t created_at;     /* tuned: when it was stored */
} kb_variant;

/* The source without C and C++ comments (string and character literals
** kept), so that no comment word reaches a checker of the file.  NULL when
** out of memory. */
static char *kb_strip_comments(const char *s) {
  size_t n = strlen(s);
  char *out = malloc(n + 1), *o = out;
  if (out == NULL) return NULL;
  for (size_t i = 0; i < n;) {
    if (s[i] == '"' || s[i] == '\'') {
      char q = s[i];
      *o++ = s[i++];
      while (i < n && s[i] != q && s[i] != '\n') {
        if (s[i] == '\\' && i + 1 < n) *o++ = s[i++];
        *o++ = s[i++];
      }
      if (i < n && s[i] == q) *o++ = s[i++];
    } else if (s[i] == '/' && i + 1 < n && s[i + 1] == '/') {
      while (i < n && s[i] != '\n') i++;
    } else if (s[i] == '/' && i + 1 < n && s[i + 1] == '*') {
      i += 2;
      while (i + 1 < n && !(s[i] == '*' && s[i + 1] == '/')) {
        if (s[i] == '\n') *o++ = '\n'; /* keep the line numbers */
        i++;
      }
      i = i + 1 < n ? i + 2 : n;
      *o++ = ' ';
    } else {
      *o++ = s[i++];
    }
  }
  *o = '\0';
  return out;
}

/* The newest winner of spec in the database (cache may be NULL) into *kv,
** on device device_id only when that is > 0; *device_out (if not NULL) gets
** its device id.  0 when there is none, -1 on a database error (said). */
static int kb_find_winner(ct_cache *cache, const char *spec, int64_t device_id, kb_variant *kv,
                          char *name, size_t len, int64_t *device_out) {
  if (cache == NULL) return 0;
  ct_cache_entry *rows = NULL;
  size_t n = 0;
  if (ct_cache_list(cache, &rows, &n) != CT_OK) {
    fprintf(stderr, "convtune kernelbench: %s\n", ct_cache_errmsg(cache));
    return -1;
  }
  int found = 0;
  for (size_t i = 0; i < n; i++) {
    if (strcmp(rows[i].spec, spec) != 0 || rows[i].device_id <= 0 || !rows[i].variant[0] ||
        (device_id > 0 && rows[i].device_id != device_id))
      continue;
    ct_cache_winner w;
    ct_cache_device d;
    if (ct_cache_winner_read(cache, rows[i].problem_id, rows[i].device_id, &w) != CT_OK) {
      fprintf(stderr, "convtune kernelbench: %s\n", ct_cache_errmsg(cache));
      free(rows);
      return -1;
    }
    if (ct_cache_device_get(cache, rows[i].device_id, &d) != CT_OK) {
      fprintf(stderr, "convtune kernelbench: %s\n", ct_cache_errmsg(cache));
      ct_cache_winner_clear(&w);
      free(rows);
      return -1;
    }
    if (!found || w.created_at > kv->created_at) {
      found = 1;
      kv->device = d;
      kv->mean_ms = w.mean_ms;
      kv->created_at = w.created_at;
      snprintf(name, len, "%s", w.variant);
      if (device_out) *device_out = rows[i].device_id;
    }
    ct_cache_winner_clear(&w);
  }
  free(rows);
  return found;
}

/* The variant of problem p (its precision set) into *kv: its winner on
** device device_id (none when 0), else the default variant for arch.  0, or
** 1 after saying why not. */
static int kb_variant_of(ct_cache *cache, const ct_problem *p, int64_t device_id,
                         const char *arch, kb_variant *kv) {
  memset(kv, 0, sizeof *kv);
  kv->p = *p;
  kv->mean_ms = NAN;
  char spec[CT_PROBLEM_SPEC_MAX], name[CT_GEN_NAME_MAX];
  ct_problem_format(p, spec, sizeof spec);
  int found = device_id > 0
                  ? kb_find_winner(cache, spec, device_id, kv, name, sizeof name, NULL)
                  : 0;
  if (found < 0) return 1;
  ct_gen_limits lim;
  const char *target = found ? kv->device.arch : arch;
  if (ct_gen_limits_for_arch(target, &lim) != CT_OK) {
    fprintf(stderr, "convtune kernelbench: no limits known for architecture %s\n", target);
    return 1;
  }
  if (found && kv->device.sm_count > 0) lim.sm_count = kv->device.sm_count;
  ct_status rc;
  if (found) {
    rc = ct_gen_variant_from_name(p, &lim, name, &kv->v);
    if (rc != CT_OK) {
      fprintf(stderr, "convtune kernelbench: the database's winner %s for %s is not a variant "
                      "this build can generate (%s); re-tune the problem\n",
              name, spec, ct_status_string(rc));
      return 1;
    }
    kv->tuned = 1;
  } else if ((rc = ct_gen_default_variant(p, &lim, &kv->v)) != CT_OK) {
    fprintf(stderr, "convtune kernelbench: no default variant for %s: %s\n", spec,
            ct_status_string(rc));
    return 1;
  }
  char *src = NULL;
  if ((rc = ct_gen_source(p, &kv->v, &src)) != CT_OK) {
    fprintf(stderr, "convtune kernelbench: cannot generate %s: %s\n", kv->v.name,
            ct_status_string(rc));
    return 1;
  }
  kv->kernels = kb_strip_comments(src);
  free(src);
  if (kv->kernels == NULL) {
    fprintf(stderr, "convtune kernelbench: out of host memory\n");
    return 1;
  }
  return 0;
}

/* ---------------------------------------------------------------------- */
/* The launcher                                                            */

static const char *kb_swizzle(int bytes) {
  return bytes == 128 ? "CU_TENSOR_MAP_SWIZZLE_128B"
         : bytes == 64 ? "CU_TENSOR_MAP_SWIZZLE_64B"
         : bytes == 32 ? "CU_TENSOR_MAP_SWIZZLE_32B"
                       : "CU_TENSOR_MAP_SWIZZLE_NONE";
}

static const char *kb_l2(int bytes) {
  return bytes == 256 ? "CU_TENSOR_MAP_L2_PROMOTION_L2_256B"
         : bytes == 128 ? "CU_TENSOR_MAP_L2_PROMOTION_L2_128B"
         : bytes == 64 ? "CU_TENSOR_MAP_L2_PROMOTION_L2_64B"
                       : "CU_TENSOR_MAP_L2_PROMOTION_NONE";
}

static void kb_u64_list(FILE *f, const uint64_t *v, int n) {
  for (int i = 0; i < n; i++) fprintf(f, "%s%" PRIu64 "ull", i ? ", " : "", v[i]);
}

static void kb_u32_list(FILE *f, const uint32_t *v, int n) {
  for (int i = 0; i < n; i++) fprintf(f, "%s%" PRIu32 "u", i ? ", " : "", v[i]);
}

/* The C++ of map i of v, encoded into CUtensorMap ct_cu<i> and copied into
** ct_tmap ct_m<i>. */
static void kb_launcher_map(FILE *f, const ct_gen_map *m, int i) {
  static const char *const base[] = {"(char *)wsp", "(char *)xp", "(char *)wp", "(char *)yp"};
  fprintf(f, "  CUtensorMap ct_cu%d;\n  {\n", i);
  fprintf(f, "    const cuuint64_t dims[%d] = {", m->rank);
  kb_u64_list(f, m->dims, m->rank);
  fprintf(f, "};\n    const cuuint64_t strides[%d] = {", m->rank > 1 ? m->rank - 1 : 1);
  kb_u64_list(f, m->strides, m->rank > 1 ? m->rank - 1 : 1);
  fprintf(f, "};\n    const cuuint32_t es[%d] = {", m->rank);
  kb_u32_list(f, m->elem_strides, m->rank);
  fprintf(f, "};\n");
  const char *addr = base[(unsigned)m->buffer < 4 ? m->buffer : 0];
  if (m->kind == CT_GEN_MAP_IM2COL) {
    fprintf(f, "    const int lower[%d] = {", m->rank - 2);
    for (int k = 0; k < m->rank - 2; k++) fprintf(f, "%s%d", k ? ", " : "", m->lower[k]);
    fprintf(f, "}, upper[%d] = {", m->rank - 2);
    for (int k = 0; k < m->rank - 2; k++) fprintf(f, "%s%d", k ? ", " : "", m->upper[k]);
    fprintf(f,
            "};\n"
            "    ct_cu_check(cuTensorMapEncodeIm2col(&ct_cu%d, %s, %d, %s + %" PRIu64
            "ull, dims, strides, lower, upper, %" PRIu32 "u, %" PRIu32 "u, es,\n"
            "        CU_TENSOR_MAP_INTERLEAVE_NONE, %s, %s, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),\n"
            "        \"cuTensorMapEncodeIm2col (map %d)\");\n",
            i, m->tf32 ? "CU_TENSOR_MAP_DATA_TYPE_TFLOAT32" : "CU_TENSOR_MAP_DATA_TYPE_FLOAT32",
            m->rank, addr, m->offset, m->channels, m->pixels, kb_swizzle(m->swizzle),
            kb_l2(m->l2_promote), i);
  } else {
    fprintf(f, "    const cuuint32_t box[%d] = {", m->rank);
    kb_u32_list(f, m->box, m->rank);
    fprintf(f,
            "};\n"
            "    ct_cu_check(cuTensorMapEncodeTiled(&ct_cu%d, %s, %d, %s + %" PRIu64
            "ull, dims, strides, box, es,\n"
            "        CU_TENSOR_MAP_INTERLEAVE_NONE, %s, %s, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),\n"
            "        \"cuTensorMapEncodeTiled (map %d)\");\n",
            i, m->tf32 ? "CU_TENSOR_MAP_DATA_TYPE_TFLOAT32" : "CU_TENSOR_MAP_DATA_TYPE_FLOAT32",
            m->rank, addr, m->offset, kb_swizzle(m->swizzle), kb_l2(m->l2_promote), i);
  }
  fprintf(f, "  }\n  std::memcpy(&ct_m%d, &ct_cu%d, sizeof ct_m%d);\n", i, i, i);
}

/* The C++ after the kernels: forward(x, w, b) running v's launches on
** torch's current stream; the caller checked the tensors. */
static void kb_launcher(FILE *f, const kb_variant *kv) {
  const ct_gen_variant *v = &kv->v;
  int64_t P = 0, Q = 0;
  ct_problem_output(&kv->p, &P, &Q);
  const int maps = v->family->args == CT_GEN_ARGS_TENSOR_MAPS;
  fprintf(f,
          "\n"
          "static void ct_rt_check(cudaError_t e, const char *what) {\n"
          "  TORCH_CHECK(e == cudaSuccess, \"convtune: \", what, \": \", cudaGetErrorString(e));\n"
          "}\n");
  if (maps)
    fprintf(f,
            "static void ct_cu_check(CUresult r, const char *what) {\n"
            "  const char *msg = \"unknown error\";\n"
            "  cuGetErrorString(r, &msg);\n"
            "  TORCH_CHECK(r == CUDA_SUCCESS, \"convtune: \", what, \": \", msg);\n"
            "}\n");
  fprintf(f,
          "\n"
          "torch::Tensor forward(torch::Tensor x, torch::Tensor w, torch::Tensor b) {\n"
          "  const c10::cuda::CUDAGuard guard(x.device());\n"
          "  cudaStream_t stream = at::cuda::getCurrentCUDAStream();\n"
          "  torch::Tensor y = torch::empty({%" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64
          "}, x.options());\n"
          "  const float *xp = x.data_ptr<float>(), *wp = w.data_ptr<float>();\n"
          "  const float *bp = b.numel() ? b.data_ptr<float>() : nullptr;\n"
          "  float *yp = y.data_ptr<float>(), *wsp = nullptr;\n"
          "  torch::Tensor ws;\n",
          kv->p.n, kv->p.k, P, Q);
  if (v->workspace_bytes)
    fprintf(f,
            "  ws = torch::empty({%zull}, x.options()); /* %zu bytes, on this stream */\n"
            "  wsp = ws.data_ptr<float>();\n",
            (v->workspace_bytes + 3) / 4, v->workspace_bytes);
  if (maps) {
    fprintf(f, "  ct_kargs ct_a;\n  std::memset(&ct_a, 0, sizeof ct_a);\n");
    for (int i = 0; i < CT_GEN_MAX_KARGS; i++)
      if (v->kargs[i]) fprintf(f, "  ct_a.v[%d] = %" PRId64 "ll;\n", i, v->kargs[i]);
    fprintf(f, "  ct_tmap ct_m0, ct_m1;\n  std::memset(&ct_m0, 0, sizeof ct_m0);\n"
               "  std::memset(&ct_m1, 0, sizeof ct_m1);\n");
    for (int i = 0; i < v->n_maps; i++) kb_launcher_map(f, &v->maps[i], i);
  }
  for (int i = 0; i < v->n_kernels; i++) {
    const ct_gen_launch *l = &v->kernels[i];
    if (l->smem > 48 * 1024)
      fprintf(f,
              "  ct_rt_check(cudaFuncSetAttribute((const void *)%s, "
              "cudaFuncAttributeMaxDynamicSharedMemorySize, %u), \"shared memory of %s\");\n",
              l->name, l->smem, l->name);
    if (!l->early) {
      fprintf(f,
              "  %s<<<dim3(%uu, %uu, %uu), dim3(%uu, %uu, %uu), %uu, stream>>>(xp, wp, bp, yp, "
              "wsp%s);\n",
              l->name, l->grid[0], l->grid[1], l->grid[2], l->block[0], l->block[1],
              l->block[2], l->smem, maps ? ", ct_a, ct_m0, ct_m1" : "");
      fprintf(f, "  ct_rt_check(cudaGetLastError(), \"launch of %s\");\n", l->name);
      continue;
    }
    /* As the runtime launches it: programmatic stream serialization (the
    ** kernel waits for the launch before it). */
    fprintf(f,
            "  {\n"
            "    cudaLaunchConfig_t cfg = {};\n"
            "    cfg.gridDim = dim3(%uu, %uu, %uu);\n"
            "    cfg.blockDim = dim3(%uu, %uu, %uu);\n"
            "    cfg.dynamicSmemBytes = %uu;\n"
            "    cfg.stream = stream;\n"
            "    cudaLaunchAttribute attr[1];\n"
            "    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;\n"
            "    attr[0].val.programmaticStreamSerializationAllowed = 1;\n"
            "    cfg.attrs = attr;\n"
            "    cfg.numAttrs = 1;\n"
            "    ct_rt_check(cudaLaunchKernelEx(&cfg, %s, xp, wp, bp, yp, wsp%s), "
            "\"launch of %s\");\n"
            "  }\n",
            l->grid[0], l->grid[1], l->grid[2], l->block[0], l->block[1], l->block[2], l->smem,
            l->name, maps ? ", ct_a, ct_m0, ct_m1" : "", l->name);
  }
  fprintf(f, "  return y;\n}\n");
}

/* ---------------------------------------------------------------------- */
/* The file                                                                */

/* Removes spec's ",prec=..." field (the keys after it stay). */
static void kb_drop_prec(char *spec) {
  char *at = strstr(spec, ",prec=");
  if (at == NULL) return;
  char *end = strchr(at + 1, ',');
  if (end)
    memmove(at, end, strlen(end) + 1);
  else
    *at = '\0';
}

/* What a build depends on: the kernels, and the problem, variant and
** architecture the launcher follows from. */
static uint64_t kb_digest(const kb_variant *kv) {
  char key[CT_PROBLEM_SPEC_MAX + CT_GEN_NAME_MAX + 32];
  char spec[CT_PROBLEM_SPEC_MAX];
  ct_problem_format(&kv->p, spec, sizeof spec);
  kb_drop_prec(spec); /* one build for both precisions when they agree */
  snprintf(key, sizeof key, "%s|%s|%s", spec, kv->v.name, kv->v.limits.arch);
  uint64_t h = ct_gen_hash(kv->kernels, strlen(kv->kernels), CT_GEN_HASH_SEED);
  return ct_gen_hash(key, strlen(key), h);
}

static void kb_tuple(FILE *f, int64_t a, int64_t b) {
  fprintf(f, "(%" PRId64 ", %" PRId64 ")", a, b);
}

static void kb_header_line(FILE *f, const char *prec, const kb_variant *kv) {
  if (kv->tuned) {
    char when[64] = "an unknown time";
    time_t t = (time_t)kv->created_at;
    struct tm tmv;
    if (kv->created_at > 0 && gmtime_r(&t, &tmv))
      strftime(when, sizeof when, "%Y-%m-%d %H:%M UTC", &tmv);
    fprintf(f,
            "#   %s: %s\n"
            "#         tuned on %s (%s, %d SMs, driver %d, NVRTC %s) at %s;\n"
            "#         measured %.4f ms (mean, full protocol)\n",
            prec, kv->v.name, kv->device.name, kv->device.arch, kv->device.sm_count,
            kv->device.driver_version, kv->device.nvrtc_version, when, kv->mean_ms);
  } else {
    fprintf(f,
            "#   %s: %s\n"
            "#         the default variant: the database has no tuned entry for this\n"
            "#         problem at %s (not timed)\n",
            prec, kv->v.name, prec);
  }
}

/* Writes the whole file. */
static void kb_write(FILE *f, const kb_problem *kb, const char *db, int have_db,
                     const kb_variant *kv) {
  const ct_problem *p = &kv[0].p;
  char spec[CT_PROBLEM_SPEC_MAX];
  ct_problem_format(p, spec, sizeof spec);
  kb_drop_prec(spec);
  int64_t P = 0, Q = 0;
  ct_problem_output(p, &P, &Q);
  fprintf(f, "# convtune's entry for ");
  if (kb->id)
    fprintf(f, "KernelBench level 1 problem %d (%s)\n", kb->id, kb->file);
  else
    fprintf(f, "the conv2d %s\n", spec);
  fprintf(f,
          "# Generated by `convtune kernelbench` from the tuning database %s%s;\n"
          "# self-contained: it needs torch only.\n"
          "#\n"
          "# The problem: %s\n"
          "# Variants (the tf32 one runs when torch.backends.cudnn.allow_tf32 is set,\n"
          "# else the fp32 one):\n",
          db, have_db ? "" : " (absent)", spec);
  kb_header_line(f, "tf32", &kv[0]);
  kb_header_line(f, "fp32", &kv[1]);
  fprintf(f,
          "import math\n"
          "\n"
          "import torch\n"
          "import torch.nn as nn\n"
          "from torch.utils.cpp_extension import load_inline\n"
          "\n"
          "# The problem the kernels compute: x (N, C, H, W) -> y (N, K, P, Q).\n"
          "_N, _C, _H, _W = %" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64 "\n"
          "_K, _P, _Q = %" PRId64 ", %" PRId64 ", %" PRId64 "\n"
          "_KERNEL = ",
          p->n, p->c, p->h, p->w, p->k, P, Q);
  kb_tuple(f, p->r, p->s);
  fprintf(f, "\n_STRIDE = ");
  kb_tuple(f, p->stride_h, p->stride_w);
  fprintf(f, "\n_PADDING = ");
  kb_tuple(f, p->pad_h, p->pad_w);
  fprintf(f, "\n_DILATION = ");
  kb_tuple(f, p->dil_h, p->dil_w);
  fprintf(f, "\n_GROUPS = %" PRId64 "\n", p->groups);
  fprintf(f, "_BIAS = %s\n", p->bias ? "True" : "False");
  fprintf(f, "_SPEC = \"%s\"\n\n", spec);

  /* Sources: the launcher's head, each precision's kernels and launcher. */
  fprintf(f,
          "_HEAD = r'''\n"
          "#include <torch/extension.h>\n"
          "#include <ATen/cuda/CUDAContext.h>\n"
          "#include <c10/cuda/CUDAGuard.h>\n"
          "#include <cuda.h>\n"
          "#include <cstring>\n"
          "'''\n\n");
  static const char *const precs[2] = {"tf32", "fp32"};
  for (int i = 0; i < 2; i++) {
    fprintf(f, "# %s: %s\n_KERNELS_%s = r'''\n%s'''\n\n", precs[i], kv[i].v.name,
            i ? "FP32" : "TF32", kv[i].kernels);
    fprintf(f, "_LAUNCH_%s = r'''", i ? "FP32" : "TF32");
    kb_launcher(f, &kv[i]);
    fprintf(f, "'''\n\n");
  }
  char tag[16] = "conv";
  if (kb->id) snprintf(tag, sizeof tag, "kb%d", kb->id);
  uint64_t h0 = kb_digest(&kv[0]), h1 = kb_digest(&kv[1]);
  fprintf(f,
          "_SOURCES = {\n"
          "    \"tf32\": (_KERNELS_TF32, _LAUNCH_TF32, \"%016" PRIx64 "\", \"%s\"),\n"
          "    \"fp32\": (_KERNELS_FP32, _LAUNCH_FP32, \"%016" PRIx64 "\", \"%s\"),\n"
          "}\n"
          "_BUILT = {}\n"
          "\n"
          "\n"
          "def _extension(precision):\n"
          "    \"\"\"The precision's kernels, built at their first call (torch caches the build;\n"
          "    the same kernels at both precisions are built once).\"\"\"\n"
          "    kernels, launch, digest, arch = _SOURCES[precision]\n"
          "    ext = _BUILT.get(digest)\n"
          "    if ext is None:\n"
          "        ext = load_inline(\n"
          "            name=\"convtune_%s_\" + digest,\n"
          "            cpp_sources=[\"torch::Tensor forward(torch::Tensor x, torch::Tensor w, torch::Tensor b);\"],\n"
          "            cuda_sources=[_HEAD + kernels + launch],\n"
          "            functions=[\"forward\"],\n"
          "            extra_cuda_cflags=[\"-O3\", \"-std=c++17\",\n"
          "                               \"-gencode=arch=compute_\" + arch + \",code=sm_\" + arch],\n"
          "            extra_ldflags=[\"-lcuda\"],\n"
          "            verbose=False)\n"
          "        _BUILT[digest] = ext\n"
          "    return ext\n"
          "\n"
          "\n",
          h0, kv[0].v.limits.arch + 3, h1, kv[1].v.limits.arch + 3, tag);
  fprintf(f,
          "def _pair(v, what):\n"
          "    if isinstance(v, int) and not isinstance(v, bool):\n"
          "        return (v, v)\n"
          "    if isinstance(v, (tuple, list)) and len(v) == 2 and all(isinstance(e, int) for e in v):\n"
          "        return (int(v[0]), int(v[1]))\n"
          "    raise ValueError(\"%%s must be an int or a pair of ints, not %%r\" %% (what, v))\n"
          "\n"
          "\n"
          "class _Conv2dParams(nn.Module):\n"
          "    \"\"\"nn.Conv2d's parameters, made and initialised as nn.Conv2d makes them.\"\"\"\n"
          "\n"
          "    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation,\n"
          "                 groups, bias):\n"
          "        super().__init__()\n"
          "        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups\n"
          "        self.kernel_size = _pair(kernel_size, \"kernel_size\")\n"
          "        self.stride = _pair(stride, \"stride\")\n"
          "        self.padding = _pair(padding, \"padding\")\n"
          "        self.dilation = _pair(dilation, \"dilation\")\n"
          "        if groups < 1 or in_channels %% groups or out_channels %% groups:\n"
          "            raise ValueError(\"groups must divide in_channels and out_channels\")\n"
          "        self.weight = nn.Parameter(torch.empty(out_channels, in_channels // groups,\n"
          "                                               *self.kernel_size))\n"
          "        if bias:\n"
          "            self.bias = nn.Parameter(torch.empty(out_channels))\n"
          "        else:\n"
          "            self.register_parameter(\"bias\", None)\n"
          "        nn.init.kaiming_uniform_(self.weight, a=math.sqrt(5))\n"
          "        if self.bias is not None:\n"
          "            fan_in = (in_channels // groups) * self.kernel_size[0] * self.kernel_size[1]\n"
          "            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0\n"
          "            nn.init.uniform_(self.bias, -bound, bound)\n"
          "\n"
          "\n"
          "def _check(t, what, shape):\n"
          "    if not isinstance(t, torch.Tensor):\n"
          "        raise ValueError(\"%%s must be a torch.Tensor, not %%s\" %% (what, type(t).__name__))\n"
          "    if t.dtype != torch.float32:\n"
          "        raise ValueError(\"%%s must be float32, not %%s\" %% (what, t.dtype))\n"
          "    if not t.is_cuda:\n"
          "        raise ValueError(\"%%s must be on a CUDA device, not %%s\" %% (what, t.device))\n"
          "    if tuple(t.shape) != shape:\n"
          "        raise ValueError(\"%%s must have the shape %%s, not %%s (these kernels were made for %%s)\"\n"
          "                         %% (what, shape, tuple(t.shape), _SPEC))\n"
          "    if not t.is_contiguous():\n"
          "        raise ValueError(\"%%s must be contiguous (NCHW), not strided %%s\" %% (what, t.stride()))\n"
          "\n"
          "\n");
  fprintf(f,
          "class ModelNew(nn.Module):\n"
          "    \"\"\"The reference Model's conv2d on convtune's tuned kernels.\"\"\"\n"
          "\n"
          "    def __init__(self, %s):\n"
          "        super().__init__()\n"
          "        self.%s = _Conv2dParams(%s)\n"
          "        conv = self.%s\n"
          "        built = (conv.in_channels, conv.out_channels, conv.kernel_size, conv.stride,\n"
          "                 conv.padding, conv.dilation, conv.groups, conv.bias is not None)\n"
          "        if built != (_C, _K, _KERNEL, _STRIDE, _PADDING, _DILATION, _GROUPS, _BIAS):\n"
          "            raise ValueError(\"these kernels compute %%s; this ModelNew asks for in=%%d out=%%d \"\n"
          "                             \"kernel=%%s stride=%%s padding=%%s dilation=%%s groups=%%d bias=%%s\"\n"
          "                             %% ((_SPEC,) + built))\n"
          "\n"
          "    def forward(self, x: torch.Tensor) -> torch.Tensor:\n"
          "        conv = self.%s\n"
          "        _check(x, \"x\", (_N, _C, _H, _W))\n"
          "        _check(conv.weight, \"the weight\", (_K, _C // _GROUPS) + _KERNEL)\n"
          "        if conv.weight.device != x.device:\n"
          "            raise ValueError(\"x is on %%s, the weights on %%s\" %% (x.device, conv.weight.device))\n"
          "        b = conv.bias\n"
          "        if b is not None:\n"
          "            _check(b, \"the bias\", (_K,))\n"
          "            if b.device != x.device:\n"
          "                raise ValueError(\"x is on %%s, the bias on %%s\" %% (x.device, b.device))\n"
          "        else:\n"
          "            b = conv.weight.new_empty(0)\n"
          "        precision = \"tf32\" if torch.backends.cudnn.allow_tf32 else \"fp32\"\n"
          "        return _extension(precision).forward(x.detach(), conv.weight.detach(), b.detach())\n"
          "\n"
          "\n",
          kb->signature, kb->attr, kb->conv, kb->attr, kb->attr);
  fprintf(f, "# Test code (as in the reference)\n%s", kb->test_code);
}

int ct_cli_kernelbench(const ct_cli *c) {
  if (c->problem && c->level1) {
    fprintf(stderr, "convtune kernelbench: --problem and --level1 exclude each other\n");
    return CT_CLI_EXIT_USAGE;
  }
  kb_problem generic;
  const kb_problem *kb = NULL;
  ct_problem p;
  char err[256];
  char sig[512], conv[256], test[1024];
  if (c->problem) {
    if (ct_problem_parse(c->problem, &p, err, sizeof err) != CT_OK) {
      fprintf(stderr, "convtune kernelbench: --problem: %s\n", err);
      return CT_CLI_EXIT_USAGE;
    }
    if (p.act != CT_ACT_NONE || p.layout != CT_LAYOUT_NCHW || p.residual) {
      fprintf(stderr, "convtune kernelbench: --problem: %s%s: an entry is a plain "
                      "nn.Conv2d on contiguous (NCHW) tensors; leave act, layout and "
                      "residual out\n",
              p.act != CT_ACT_NONE ? "act=" : "",
              p.act != CT_ACT_NONE ? ct_activation_name(p.act)
              : p.residual         ? "residual=1"
                                   : "layout=nhwc");
      return CT_CLI_EXIT_USAGE;
    }
    snprintf(sig, sizeof sig,
             "in_channels: int, out_channels: int, kernel_size=(%" PRId64 ", %" PRId64
             "), stride=(%" PRId64 ", %" PRId64 "), padding=(%" PRId64 ", %" PRId64
             "), dilation=(%" PRId64 ", %" PRId64 "), groups: int = %" PRId64 ", bias: bool = %s",
             p.r, p.s, p.stride_h, p.stride_w, p.pad_h, p.pad_w, p.dil_h, p.dil_w, p.groups,
             p.bias ? "True" : "False");
    snprintf(conv, sizeof conv, "%s", KB_CONV_ALL);
    snprintf(test, sizeof test,
             "batch_size = %" PRId64 "\n"
             "in_channels = %" PRId64 "\n"
             "out_channels = %" PRId64 "\n"
             "height = %" PRId64 "\n"
             "width = %" PRId64 "\n" KB_INPUTS_X "in_channels, out_channels]\n",
             p.n, p.c, p.k, p.h, p.w);
    generic = (kb_problem){0, "", "conv2d", sig, conv, c->problem, test};
    kb = &generic;
  } else {
    int want = c->level1 ? c->level1 : 50;
    for (size_t i = 0; i < KB_N_LEVEL1; i++)
      if (kb_level1[i].id == want) kb = &kb_level1[i];
    if (kb == NULL) {
      fprintf(stderr, "convtune kernelbench: --level1 %d: not a conv2d problem this command "
                      "knows (50, 55, 56, 62, 63, 80, 87)\n", want);
      return CT_CLI_EXIT_USAGE;
    }
    if (ct_problem_parse(kb->spec, &p, err, sizeof err) != CT_OK) {
      fprintf(stderr, "convtune kernelbench: %s\n", err);
      return 1;
    }
  }
  const char *arch = c->arch ? c->arch : "sm_90a";
  ct_gen_limits lim;
  if (ct_gen_limits_for_arch(arch, &lim) != CT_OK) {
    fprintf(stderr, "convtune kernelbench: --arch %s: not sm_80, sm_89, sm_90 or sm_90a\n", arch);
    return CT_CLI_EXIT_USAGE;
  }
  char path[4096];
  ct_cache *cache = NULL;
  int opened = ct_cli_db_open(c, "kernelbench", path, sizeof path, &cache);
  if (opened) return opened;
  kb_variant kv[2];
  memset(kv, 0, sizeof kv);
  int rc = 1;
  ct_problem pt = p, pf = p;
  pt.precision = CT_PREC_TF32;
  pf.precision = CT_PREC_FP32;
  /* One device for both precisions: the newest winner's (its
  ** architecture for a default variant too), so that the entry builds for
  ** one GPU. */
  int64_t device_id = 0, dt = 0, df = 0;
  kb_variant probe[2];
  char name[CT_GEN_NAME_MAX], st[CT_PROBLEM_SPEC_MAX], sf[CT_PROBLEM_SPEC_MAX];
  ct_problem_format(&pt, st, sizeof st);
  ct_problem_format(&pf, sf, sizeof sf);
  memset(probe, 0, sizeof probe);
  int ft = kb_find_winner(cache, st, 0, &probe[0], name, sizeof name, &dt);
  int ff = kb_find_winner(cache, sf, 0, &probe[1], name, sizeof name, &df);
  if (ft < 0 || ff < 0) {
    ct_cache_close(cache);
    return 1;
  }
  if (ft && (!ff || probe[0].created_at >= probe[1].created_at)) {
    device_id = dt;
    arch = probe[0].device.arch;
  } else if (ff) {
    device_id = df;
    arch = probe[1].device.arch;
  }
  if (kb_variant_of(cache, &pt, device_id, arch, &kv[0]) == 0 &&
      kb_variant_of(cache, &pf, device_id, arch, &kv[1]) == 0) {
    static const ct_cli_out_kind py = {"a Python file", {"# ", "import"}};
    ct_cli_out out;
    if (ct_cli_out_open("kernelbench", c->out, path, &py, c->force, &out) == 0) {
      kb_write(out.f, kb, path, cache != NULL, kv);
      rc = ct_cli_out_close("kernelbench", &out, 1);
    }
  }
  free(kv[0].kernels);
  free(kv[1].kernels);
  ct_cache_close(cache);
  return rc;
}
