/*
** transfer.c — moving tuning results between databases: ct_cache_export
** writes a database as text, ct_cache_import reads that text into another
** (see ct_cache.h, "Export and import", for the format and the rules).
**
** Built on the public ct_cache API only: every identity (device fields,
** problem spec, source and cubin hashes) crosses as it is, and import goes
** through the same functions the tuner writes with.
*/
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ct_cache.h"

#define XFER_MAGIC "convtune-export"
#define XFER_VERSION 1
#define XFER_MAX_FIELDS 32

/* ---------------------------------------------------------------------- */
/* Writing                                                                 */

typedef struct xfer_out {
  FILE *f;
  int failed; /* a write failed */
} xfer_out;

/* Writes "\tkey=" and value with '\\', TAB, LF, CR escaped. */
static void put_text(xfer_out *o, const char *key, const char *value)
{
  fprintf(o->f, "\t%s=", key);
  for (const char *s = value; *s; s++) {
    switch (*s) {
    case '\\': fputs("\\\\", o->f); break;
    case '\t': fputs("\\t", o->f); break;
    case '\n': fputs("\\n", o->f); break;
    case '\r': fputs("\\r", o->f); break;
    default: fputc(*s, o->f);
    }
  }
}

static void put_int(xfer_out *o, const char *key, int64_t v)
{
  fprintf(o->f, "\t%s=%" PRId64, key, v);
}

static void put_hash(xfer_out *o, const char *key, uint64_t v)
{
  fprintf(o->f, "\t%s=%016" PRIx64, key, v);
}

static void put_real(xfer_out *o, const char *key, double v)
{
  if (isnan(v)) fprintf(o->f, "\t%s=nan", key);
  else fprintf(o->f, "\t%s=%.17g", key, v);
}

static const char b64_chars[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static void put_base64(xfer_out *o, const char *key, const void *data,
                       size_t n)
{
  const unsigned char *p = data;
  char quad[5] = {0};
  fprintf(o->f, "\t%s=", key);
  for (size_t i = 0; i < n; i += 3) {
    uint32_t v = (uint32_t)p[i] << 16;
    if (i + 1 < n) v |= (uint32_t)p[i + 1] << 8;
    if (i + 2 < n) v |= p[i + 2];
    quad[0] = b64_chars[(v >> 18) & 63];
    quad[1] = b64_chars[(v >> 12) & 63];
    quad[2] = i + 1 < n ? b64_chars[(v >> 6) & 63] : '=';
    quad[3] = i + 2 < n ? b64_chars[v & 63] : '=';
    fputs(quad, o->f);
  }
}

static void end_record(xfer_out *o)
{
  if (fputc('\n', o->f) == EOF) o->failed = 1;
}

static int cmp_trial_id(const void *a, const void *b)
{
  int64_t x = ((const ct_cache_trial *)a)->id, y = ((const ct_cache_trial *)b)->id;
  return (x > y) - (x < y);
}

typedef struct export_cubins {
  xfer_out *o;
  size_t count;
} export_cubins;

static ct_status export_cubin(void *arg, const ct_cache_cubin *cb)
{
  export_cubins *e = arg;
  xfer_out *o = e->o;
  fputs("cubin", o->f);
  put_hash(o, "source_hash", cb->source_hash);
  put_text(o, "options", cb->options);
  put_text(o, "arch", cb->arch);
  put_text(o, "nvrtc_version", cb->nvrtc_version);
  put_hash(o, "cubin_hash", cb->cubin_hash);
  put_int(o, "regs", cb->regs);
  put_int(o, "spill_bytes", cb->spill_bytes);
  put_int(o, "stack_bytes", cb->stack_bytes);
  put_int(o, "smem_static", cb->smem_static);
  put_real(o, "compile_ms", cb->compile_ms);
  put_int(o, "created_at", cb->created_at);
  put_base64(o, "cubin", cb->cubin, cb->cubin_size);
  end_record(o);
  e->count++;
  return o->failed ? CT_ERR_IO : CT_OK;
}

ct_status ct_cache_export(ct_cache *c, FILE *f, int flags,
                          ct_cache_transfer_stats *st)
{
  xfer_out o = {f, 0};
  ct_cache_transfer_stats s;
  ct_cache_device_row *devs = NULL;
  ct_cache_problem_row *probs = NULL;
  ct_cache_entry *entries = NULL;
  int64_t *trial_ids = NULL;
  size_t nd = 0, np = 0, ne = 0, n_ids = 0, cap_ids = 0;
  ct_status rc;

  memset(&s, 0, sizeof s);
  if (st) *st = s;
  if (!c || !f || (flags & ~CT_CACHE_EXPORT_CUBINS)) return CT_ERR_INVALID_ARG;
  rc = ct_cache_begin_read(c);
  if (rc != CT_OK) return rc;
  if ((rc = ct_cache_devices(c, &devs, &nd)) != CT_OK ||
      (rc = ct_cache_problems(c, &probs, &np)) != CT_OK ||
      (rc = ct_cache_list(c, &entries, &ne)) != CT_OK)
    goto done;

  fprintf(f, "%s\t%d\n", XFER_MAGIC, XFER_VERSION);
  fputs("# a convtune tuning database; the format: cache/ct_cache.h\n", f);
  for (size_t i = 0; i < nd; i++) {
    const ct_cache_device *d = &devs[i].device;
    fputs("device", f);
    put_int(&o, "id", devs[i].id);
    put_text(&o, "name", d->name);
    put_int(&o, "cc_major", d->cc_major);
    put_int(&o, "cc_minor", d->cc_minor);
    put_int(&o, "sm_count", d->sm_count);
    put_int(&o, "driver_version", d->driver_version);
    put_text(&o, "nvrtc_version", d->nvrtc_version);
    put_text(&o, "arch", d->arch);
    end_record(&o);
    s.devices++;
  }
  for (size_t i = 0; i < np; i++) {
    fputs("problem", f);
    put_int(&o, "id", probs[i].id);
    put_text(&o, "spec", probs[i].spec);
    put_text(&o, "precision", probs[i].precision);
    end_record(&o);
    s.problems++;
  }
  for (size_t i = 0; i < np; i++) {
    ct_cache_trial *t = NULL;
    size_t nt = 0;
    rc = ct_cache_trials(c, probs[i].id, 0, &t, &nt);
    if (rc != CT_OK) goto done;
    if (nt > 1) qsort(t, nt, sizeof *t, cmp_trial_id); /* t is NULL when nt is 0 */
    for (size_t j = 0; j < nt; j++) {
      fputs("trial", f);
      put_int(&o, "id", t[j].id);
      put_int(&o, "problem", t[j].problem_id);
      put_int(&o, "device", t[j].device_id);
      put_text(&o, "variant", t[j].variant);
      put_text(&o, "status", ct_trial_status_name(t[j].status));
      put_hash(&o, "source_hash", t[j].source_hash);
      put_real(&o, "compile_ms", t[j].compile_ms);
      put_int(&o, "regs", t[j].regs);
      put_int(&o, "spill_bytes", t[j].spill_bytes);
      put_int(&o, "smem_bytes", t[j].smem_bytes);
      put_real(&o, "max_abs_err", t[j].max_abs_err);
      put_real(&o, "rel_err", t[j].rel_err);
      put_real(&o, "mean_ms", t[j].mean_ms);
      put_real(&o, "median_ms", t[j].median_ms);
      put_real(&o, "min_ms", t[j].min_ms);
      put_real(&o, "max_ms", t[j].max_ms);
      put_int(&o, "n_timed", t[j].n_timed);
      put_text(&o, "message", t[j].message);
      put_int(&o, "created_at", t[j].created_at);
      end_record(&o);
      s.trials++;
      if (n_ids == cap_ids) {
        size_t ncap = cap_ids ? 2 * cap_ids : 256;
        int64_t *grown = realloc(trial_ids, ncap * sizeof *grown);
        if (!grown) {
          free(t);
          rc = CT_ERR_NOMEM;
          goto done;
        }
        trial_ids = grown;
        cap_ids = ncap;
      }
      trial_ids[n_ids++] = t[j].id;
    }
    free(t);
  }
  for (size_t i = 0; i < ne; i++) {
    ct_cache_winner w;
    int64_t trial = 0;
    if (!entries[i].variant[0]) continue;
    rc = ct_cache_winner_read(c, entries[i].problem_id, entries[i].device_id, &w);
    if (rc != CT_OK) goto done;
    for (size_t j = 0; j < n_ids; j++)
      if (trial_ids[j] == w.trial_id) trial = w.trial_id;
    fputs("winner", f);
    put_int(&o, "problem", w.problem_id);
    put_int(&o, "device", w.device_id);
    put_int(&o, "trial", trial);
    put_text(&o, "variant", w.variant);
    put_hash(&o, "source_hash", w.source_hash);
    put_hash(&o, "cubin_hash", w.cubin_hash);
    put_text(&o, "arch", w.arch);
    put_text(&o, "nvrtc_version", w.nvrtc_version);
    put_text(&o, "options", w.options);
    put_real(&o, "mean_ms", w.mean_ms);
    put_int(&o, "created_at", w.created_at);
    put_base64(&o, "cubin", w.cubin, w.cubin_size);
    end_record(&o);
    ct_cache_winner_clear(&w);
    s.winners++;
  }
  if (flags & CT_CACHE_EXPORT_CUBINS) {
    export_cubins e = {&o, 0};
    rc = ct_cache_cubin_foreach(c, export_cubin, &e);
    s.cubins = e.count;
    if (rc != CT_OK) goto done;
  }
  fputs("end", f);
  put_int(&o, "devices", (int64_t)s.devices);
  put_int(&o, "problems", (int64_t)s.problems);
  put_int(&o, "trials", (int64_t)s.trials);
  put_int(&o, "winners", (int64_t)s.winners);
  put_int(&o, "cubins", (int64_t)s.cubins);
  end_record(&o);
  if (fflush(f) != 0 || ferror(f)) o.failed = 1;
  rc = o.failed ? CT_ERR_IO : CT_OK;
done:
  ct_cache_rollback(c); /* ends the read transaction */
  free(devs);
  free(probs);
  free(entries);
  free(trial_ids);
  if (st) *st = s;
  return rc;
}

/* ---------------------------------------------------------------------- */
/* Reading                                                                 */

typedef struct xfer_field {
  char *key, *value; /* value unescaped in place */
} xfer_field;

typedef struct xfer_record {
  const char *kind;
  int n;
  xfer_field f[XFER_MAX_FIELDS];
} xfer_record;

/* id in the file -> id here. */
typedef struct xfer_map {
  int64_t *from, *to;
  size_t n, cap;
} xfer_map;

typedef struct xfer_in {
  ct_cache *c;
  long line;
  char *err;
  size_t len;
  xfer_map devices, problems, trials;
  ct_cache_transfer_stats s;
  size_t n_cubin_records;
} xfer_in;

__attribute__((format(printf, 3, 4)))
static ct_status in_fail(xfer_in *in, ct_status rc, const char *fmt, ...)
{
  if (in->err && in->len) {
    int n = snprintf(in->err, in->len, "line %ld: ", in->line);
    if (n >= 0 && (size_t)n < in->len) {
      va_list ap;
      va_start(ap, fmt);
      vsnprintf(in->err + n, in->len - (size_t)n, fmt, ap);
      va_end(ap);
    }
  }
  return rc;
}

static ct_status map_add(xfer_map *m, int64_t from, int64_t to)
{
  if (m->n == m->cap) {
    size_t ncap = m->cap ? 2 * m->cap : 64;
    int64_t *f = realloc(m->from, ncap * sizeof *f);
    if (!f) return CT_ERR_NOMEM;
    m->from = f;
    int64_t *t = realloc(m->to, ncap * sizeof *t);
    if (!t) return CT_ERR_NOMEM;
    m->to = t;
    m->cap = ncap;
  }
  m->from[m->n] = from;
  m->to[m->n] = to;
  m->n++;
  return CT_OK;
}

/* The latest mapping of from (ids may repeat only in a malformed file). */
static int64_t map_get(const xfer_map *m, int64_t from)
{
  for (size_t i = m->n; i-- > 0;)
    if (m->from[i] == from) return m->to[i];
  return 0;
}

static void map_free(xfer_map *m)
{
  free(m->from);
  free(m->to);
  memset(m, 0, sizeof *m);
}

/* Unescapes s in place.  Returns 0, or -1 on an unknown escape. */
static int unescape(char *s)
{
  char *d = s;
  for (; *s; s++) {
    if (*s != '\\') {
      *d++ = *s;
      continue;
    }
    s++;
    switch (*s) {
    case '\\': *d++ = '\\'; break;
    case 't': *d++ = '\t'; break;
    case 'n': *d++ = '\n'; break;
    case 'r': *d++ = '\r'; break;
    default: return -1;
    }
  }
  *d = '\0';
  return 0;
}

/* Splits a line (no newline) into a record.  Returns CT_OK or CT_ERR_PARSE. */
static ct_status split(xfer_in *in, char *line, xfer_record *r)
{
  char *save = NULL, *tok;
  r->n = 0;
  r->kind = strtok_r(line, "\t", &save);
  if (!r->kind) return in_fail(in, CT_ERR_PARSE, "empty record");
  while ((tok = strtok_r(NULL, "\t", &save)) != NULL) {
    char *eq = strchr(tok, '=');
    if (!eq) return in_fail(in, CT_ERR_PARSE, "field '%.40s' has no '='", tok);
    if (r->n == XFER_MAX_FIELDS)
      return in_fail(in, CT_ERR_PARSE, "too many fields");
    *eq = '\0';
    if (unescape(eq + 1) != 0)
      return in_fail(in, CT_ERR_PARSE, "bad escape in field %s", tok);
    r->f[r->n].key = tok;
    r->f[r->n].value = eq + 1;
    r->n++;
  }
  return CT_OK;
}

static const char *field(const xfer_record *r, const char *key)
{
  for (int i = 0; i < r->n; i++)
    if (strcmp(r->f[i].key, key) == 0) return r->f[i].value;
  return NULL;
}

/* The text of a required field that fits in len bytes. */
static ct_status get_text(xfer_in *in, const xfer_record *r, const char *key,
                          char *buf, size_t len)
{
  const char *v = field(r, key);
  if (!v) return in_fail(in, CT_ERR_PARSE, "%s: no field %s", r->kind, key);
  if (strlen(v) >= len)
    return in_fail(in, CT_ERR_PARSE, "%s: field %s is too long", r->kind, key);
  memcpy(buf, v, strlen(v) + 1);
  return CT_OK;
}

static ct_status get_int(xfer_in *in, const xfer_record *r, const char *key,
                         int64_t lo, int64_t hi, int64_t *out)
{
  const char *v = field(r, key);
  char *end;
  long long x;
  if (!v) return in_fail(in, CT_ERR_PARSE, "%s: no field %s", r->kind, key);
  errno = 0;
  x = strtoll(v, &end, 10);
  if (errno || end == v || *end || x < lo || x > hi)
    return in_fail(in, CT_ERR_PARSE, "%s: field %s='%.30s' is not an integer"
                   " in range", r->kind, key, v);
  *out = x;
  return CT_OK;
}

static ct_status get_i32(xfer_in *in, const xfer_record *r, const char *key,
                         int *out)
{
  int64_t v;
  ct_status rc = get_int(in, r, key, INT32_MIN, INT32_MAX, &v);
  if (rc == CT_OK) *out = (int)v;
  return rc;
}

static ct_status get_hash(xfer_in *in, const xfer_record *r, const char *key,
                          uint64_t *out)
{
  const char *v = field(r, key);
  char *end;
  if (!v) return in_fail(in, CT_ERR_PARSE, "%s: no field %s", r->kind, key);
  errno = 0;
  *out = strtoull(v, &end, 16);
  if (errno || strlen(v) != 16 || *end)
    return in_fail(in, CT_ERR_PARSE, "%s: field %s is not 16 hex digits",
                   r->kind, key);
  return CT_OK;
}

static ct_status get_real(xfer_in *in, const xfer_record *r, const char *key,
                          double *out)
{
  const char *v = field(r, key);
  char *end;
  if (!v) return in_fail(in, CT_ERR_PARSE, "%s: no field %s", r->kind, key);
  if (strcmp(v, "nan") == 0) {
    *out = NAN;
    return CT_OK;
  }
  errno = 0;
  *out = strtod(v, &end);
  if (errno == ERANGE || end == v || *end)
    return in_fail(in, CT_ERR_PARSE, "%s: field %s='%.30s' is not a number",
                   r->kind, key, v);
  return CT_OK;
}

static int b64_value(char ch)
{
  const char *p = ch ? strchr(b64_chars, ch) : NULL;
  return p ? (int)(p - b64_chars) : -1;
}

/* Decodes a base64 field into a malloc'd buffer. */
static ct_status get_base64(xfer_in *in, const xfer_record *r, const char *key,
                            void **out, size_t *size)
{
  const char *v = field(r, key);
  size_t n, i, o = 0;
  unsigned char *buf;
  *out = NULL;
  *size = 0;
  if (!v) return in_fail(in, CT_ERR_PARSE, "%s: no field %s", r->kind, key);
  n = strlen(v);
  if (n == 0 || n % 4 != 0)
    return in_fail(in, CT_ERR_PARSE, "%s: field %s is not base64", r->kind, key);
  buf = malloc(n / 4 * 3);
  if (!buf) return in_fail(in, CT_ERR_NOMEM, "out of memory");
  for (i = 0; i < n; i += 4) {
    int a = b64_value(v[i]), b = b64_value(v[i + 1]);
    int pad2 = v[i + 2] == '=', pad3 = v[i + 3] == '=';
    int c = pad2 ? 0 : b64_value(v[i + 2]), d = pad3 ? 0 : b64_value(v[i + 3]);
    if (a < 0 || b < 0 || c < 0 || d < 0 || (pad2 && !pad3) ||
        ((pad2 || pad3) && i + 4 != n)) {
      free(buf);
      return in_fail(in, CT_ERR_PARSE, "%s: field %s is not base64", r->kind,
                     key);
    }
    uint32_t x = (uint32_t)a << 18 | (uint32_t)b << 12 | (uint32_t)c << 6 |
                 (uint32_t)d;
    buf[o++] = (unsigned char)(x >> 16);
    if (!pad2) buf[o++] = (unsigned char)(x >> 8);
    if (!pad3) buf[o++] = (unsigned char)x;
  }
  *out = buf;
  *size = o;
  return CT_OK;
}

/* A local id for the file's id in field key, through map m. */
static ct_status get_ref(xfer_in *in, const xfer_record *r, const char *key,
                         const xfer_map *m, int64_t *out)
{
  int64_t id;
  ct_status rc = get_int(in, r, key, 1, INT64_MAX, &id);
  if (rc != CT_OK) return rc;
  *out = map_get(m, id);
  if (*out == 0)
    return in_fail(in, CT_ERR_PARSE, "%s: %s=%" PRId64 " names no earlier "
                   "record", r->kind, key, id);
  return CT_OK;
}

/* The cache's message after a failed call. */
static ct_status in_cache_fail(xfer_in *in, ct_status rc, const char *what)
{
  return in_fail(in, rc, "%s: %s", what, ct_cache_errmsg(in->c));
}

static ct_status import_device(xfer_in *in, const xfer_record *r)
{
  ct_cache_device d;
  int64_t file_id, id;
  ct_status rc;
  memset(&d, 0, sizeof d);
  if ((rc = get_int(in, r, "id", 1, INT64_MAX, &file_id)) ||
      (rc = get_text(in, r, "name", d.name, sizeof d.name)) ||
      (rc = get_i32(in, r, "cc_major", &d.cc_major)) ||
      (rc = get_i32(in, r, "cc_minor", &d.cc_minor)) ||
      (rc = get_i32(in, r, "sm_count", &d.sm_count)) ||
      (rc = get_i32(in, r, "driver_version", &d.driver_version)) ||
      (rc = get_text(in, r, "nvrtc_version", d.nvrtc_version,
                     sizeof d.nvrtc_version)) ||
      (rc = get_text(in, r, "arch", d.arch, sizeof d.arch)))
    return rc;
  rc = ct_cache_device_id(in->c, &d, &id);
  if (rc != CT_OK) return in_cache_fail(in, rc, "device");
  in->s.devices++;
  return map_add(&in->devices, file_id, id);
}

static ct_status import_problem(xfer_in *in, const xfer_record *r)
{
  char spec[CT_PROBLEM_SPEC_MAX], prec[8];
  int64_t file_id, id;
  ct_status rc;
  if ((rc = get_int(in, r, "id", 1, INT64_MAX, &file_id)) ||
      (rc = get_text(in, r, "spec", spec, sizeof spec)) ||
      (rc = get_text(in, r, "precision", prec, sizeof prec)))
    return rc;
  if (!spec[0] || !prec[0])
    return in_fail(in, CT_ERR_PARSE, "problem: empty spec or precision");
  /* The database keys a problem by its canonical spec: a spec that does
  ** not parse, or whose precision is not the record's, is refused; one in
  ** another form (keys reordered, defaults left out) is stored in
  ** canonical form, so that lookups find it. */
  ct_problem p;
  char perr[256], canon[CT_PROBLEM_SPEC_MAX];
  if (ct_problem_parse(spec, &p, perr, sizeof perr) != CT_OK)
    return in_fail(in, CT_ERR_PARSE, "problem %s: %s", spec, perr);
  if (strcmp(prec, ct_precision_name(p.precision)) != 0)
    return in_fail(in, CT_ERR_PARSE, "problem %s: precision %s, but its spec says %s", spec,
                   prec, ct_precision_name(p.precision));
  if (ct_problem_format(&p, canon, sizeof canon) != CT_OK)
    return in_fail(in, CT_ERR_PARSE, "problem %s: cannot put it in canonical form", spec);
  rc = ct_cache_problem_id(in->c, canon, prec, &id);
  if (rc != CT_OK) return in_cache_fail(in, rc, "problem");
  in->s.problems++;
  return map_add(&in->problems, file_id, id);
}

static ct_status import_trial(xfer_in *in, const xfer_record *r)
{
  ct_cache_trial t;
  char status[32];
  int64_t file_id, n_timed;
  int added = 0;
  ct_status rc;
  memset(&t, 0, sizeof t);
  if ((rc = get_int(in, r, "id", 1, INT64_MAX, &file_id)) ||
      (rc = get_ref(in, r, "problem", &in->problems, &t.problem_id)) ||
      (rc = get_ref(in, r, "device", &in->devices, &t.device_id)) ||
      (rc = get_text(in, r, "variant", t.variant, sizeof t.variant)) ||
      (rc = get_text(in, r, "status", status, sizeof status)) ||
      (rc = get_hash(in, r, "source_hash", &t.source_hash)) ||
      (rc = get_real(in, r, "compile_ms", &t.compile_ms)) ||
      (rc = get_i32(in, r, "regs", &t.regs)) ||
      (rc = get_i32(in, r, "spill_bytes", &t.spill_bytes)) ||
      (rc = get_i32(in, r, "smem_bytes", &t.smem_bytes)) ||
      (rc = get_real(in, r, "max_abs_err", &t.max_abs_err)) ||
      (rc = get_real(in, r, "rel_err", &t.rel_err)) ||
      (rc = get_real(in, r, "mean_ms", &t.mean_ms)) ||
      (rc = get_real(in, r, "median_ms", &t.median_ms)) ||
      (rc = get_real(in, r, "min_ms", &t.min_ms)) ||
      (rc = get_real(in, r, "max_ms", &t.max_ms)) ||
      (rc = get_int(in, r, "n_timed", 0, INT32_MAX, &n_timed)) ||
      (rc = get_text(in, r, "message", t.message, sizeof t.message)) ||
      (rc = get_int(in, r, "created_at", 1, INT64_MAX, &t.created_at)))
    return rc;
  if (ct_trial_status_parse(status, &t.status) != CT_OK)
    return in_fail(in, CT_ERR_PARSE, "trial: unknown status '%s'", status);
  if (!t.variant[0]) return in_fail(in, CT_ERR_PARSE, "trial: empty variant");
  t.n_timed = (int)n_timed;
  rc = ct_cache_trial_import(in->c, &t, &added);
  if (rc != CT_OK) return in_cache_fail(in, rc, "trial");
  in->s.trials++;
  in->s.trials_added += (size_t)added;
  return map_add(&in->trials, file_id, t.id);
}

static ct_status import_winner(xfer_in *in, const xfer_record *r)
{
  ct_cache_winner w;
  int64_t trial;
  int stored = 0;
  ct_status rc;
  memset(&w, 0, sizeof w);
  if ((rc = get_ref(in, r, "problem", &in->problems, &w.problem_id)) ||
      (rc = get_ref(in, r, "device", &in->devices, &w.device_id)) ||
      (rc = get_int(in, r, "trial", 0, INT64_MAX, &trial)) ||
      (rc = get_text(in, r, "variant", w.variant, sizeof w.variant)) ||
      (rc = get_hash(in, r, "source_hash", &w.source_hash)) ||
      (rc = get_hash(in, r, "cubin_hash", &w.cubin_hash)) ||
      (rc = get_text(in, r, "arch", w.arch, sizeof w.arch)) ||
      (rc = get_text(in, r, "nvrtc_version", w.nvrtc_version,
                     sizeof w.nvrtc_version)) ||
      (rc = get_text(in, r, "options", w.options, sizeof w.options)) ||
      (rc = get_real(in, r, "mean_ms", &w.mean_ms)) ||
      (rc = get_int(in, r, "created_at", 1, INT64_MAX, &w.created_at)))
    return rc;
  if (trial) {
    w.trial_id = map_get(&in->trials, trial);
    if (!w.trial_id)
      return in_fail(in, CT_ERR_PARSE, "winner: trial=%" PRId64 " names no "
                     "earlier record", trial);
  }
  rc = get_base64(in, r, "cubin", &w.cubin, &w.cubin_size);
  if (rc != CT_OK) return rc;
  if (ct_gen_hash(w.cubin, w.cubin_size, CT_GEN_HASH_SEED) != w.cubin_hash) {
    ct_cache_winner_clear(&w);
    return in_fail(in, CT_ERR_PARSE, "winner: the cubin does not match "
                   "cubin_hash");
  }
  rc = ct_cache_winner_import(in->c, &w, &stored);
  ct_cache_winner_clear(&w);
  if (rc != CT_OK) return in_cache_fail(in, rc, "winner");
  in->s.winners++;
  in->s.winners_stored += (size_t)stored;
  return CT_OK;
}

static ct_status import_cubin(xfer_in *in, const xfer_record *r)
{
  ct_cache_cubin cb;
  int added = 0;
  ct_status rc;
  memset(&cb, 0, sizeof cb);
  if ((rc = get_hash(in, r, "source_hash", &cb.source_hash)) ||
      (rc = get_text(in, r, "options", cb.options, sizeof cb.options)) ||
      (rc = get_text(in, r, "arch", cb.arch, sizeof cb.arch)) ||
      (rc = get_text(in, r, "nvrtc_version", cb.nvrtc_version,
                     sizeof cb.nvrtc_version)) ||
      (rc = get_hash(in, r, "cubin_hash", &cb.cubin_hash)) ||
      (rc = get_i32(in, r, "regs", &cb.regs)) ||
      (rc = get_i32(in, r, "spill_bytes", &cb.spill_bytes)) ||
      (rc = get_i32(in, r, "stack_bytes", &cb.stack_bytes)) ||
      (rc = get_i32(in, r, "smem_static", &cb.smem_static)) ||
      (rc = get_real(in, r, "compile_ms", &cb.compile_ms)) ||
      (rc = get_int(in, r, "created_at", 1, INT64_MAX, &cb.created_at)))
    return rc;
  rc = get_base64(in, r, "cubin", &cb.cubin, &cb.cubin_size);
  if (rc != CT_OK) return rc;
  if (ct_gen_hash(cb.cubin, cb.cubin_size, CT_GEN_HASH_SEED) != cb.cubin_hash) {
    ct_cache_cubin_clear(&cb);
    return in_fail(in, CT_ERR_PARSE, "cubin: the bytes do not match "
                   "cubin_hash");
  }
  rc = ct_cache_cubin_put(in->c, &cb, &added);
  ct_cache_cubin_clear(&cb);
  if (rc != CT_OK) return in_cache_fail(in, rc, "cubin");
  in->s.cubins++;
  in->s.cubins_added += (size_t)added;
  return CT_OK;
}

/* Checks the end record's counts against what was read. */
static ct_status import_end(xfer_in *in, const xfer_record *r)
{
  static const char *const keys[] = {"devices", "problems", "trials",
                                     "winners", "cubins"};
  size_t got[] = {in->s.devices, in->s.problems, in->s.trials,
                  in->s.winners, in->s.cubins};
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
    int64_t want;
    ct_status rc = get_int(in, r, keys[i], 0, INT64_MAX, &want);
    if (rc != CT_OK) return rc;
    if ((size_t)want != got[i])
      return in_fail(in, CT_ERR_PARSE, "end: %s=%" PRId64 " but %zu were read",
                     keys[i], want, got[i]);
  }
  return CT_OK;
}

ct_status ct_cache_import(ct_cache *c, FILE *f, ct_cache_transfer_stats *st,
                          char *err, size_t len)
{
  xfer_in in;
  xfer_record r;
  char *line = NULL;
  size_t cap = 0;
  ssize_t got;
  int ended = 0, begun = 0;
  ct_status rc = CT_OK;

  memset(&in, 0, sizeof in);
  in.c = c;
  in.err = err;
  in.len = len;
  if (err && len) err[0] = '\0';
  if (st) memset(st, 0, sizeof *st);
  if (!c || !f) return CT_ERR_INVALID_ARG;

  /* The header. */
  in.line = 1;
  got = getline(&line, &cap, f);
  if (got < 0) {
    rc = ferror(f) ? in_fail(&in, CT_ERR_IO, "cannot read")
                   : in_fail(&in, CT_ERR_PARSE, "empty file");
    goto done;
  }
  if (got > 0 && line[got - 1] == '\n') line[--got] = '\0';
  {
    size_t m = strlen(XFER_MAGIC);
    char *end;
    long v;
    if (strncmp(line, XFER_MAGIC, m) != 0 || line[m] != '\t') {
      rc = in_fail(&in, CT_ERR_PARSE, "not a convtune export (no '%s' header)",
                   XFER_MAGIC);
      goto done;
    }
    errno = 0;
    v = strtol(line + m + 1, &end, 10);
    if (errno || end == line + m + 1 || *end || v < 1) {
      rc = in_fail(&in, CT_ERR_PARSE, "bad format version");
      goto done;
    }
    if (v > XFER_VERSION) {
      rc = in_fail(&in, CT_ERR_UNSUPPORTED, "format version %ld is newer than "
                   "this build's %d", v, XFER_VERSION);
      goto done;
    }
  }
  rc = ct_cache_begin(c);
  if (rc != CT_OK) {
    rc = in_cache_fail(&in, rc, "starting the import");
    goto done;
  }
  begun = 1;

  while ((got = getline(&line, &cap, f)) >= 0) {
    in.line++;
    if (got > 0 && line[got - 1] == '\n') line[--got] = '\0';
    if (got > 0 && line[got - 1] == '\r') line[--got] = '\0';
    if (line[0] == '\0' || line[0] == '#') continue;
    if (ended) {
      rc = in_fail(&in, CT_ERR_PARSE, "a record after the end record");
      goto done;
    }
    if ((size_t)got != strlen(line)) {
      rc = in_fail(&in, CT_ERR_PARSE, "a NUL byte in the line");
      goto done;
    }
    rc = split(&in, line, &r);
    if (rc != CT_OK) goto done;
    if (strcmp(r.kind, "device") == 0) rc = import_device(&in, &r);
    else if (strcmp(r.kind, "problem") == 0) rc = import_problem(&in, &r);
    else if (strcmp(r.kind, "trial") == 0) rc = import_trial(&in, &r);
    else if (strcmp(r.kind, "winner") == 0) rc = import_winner(&in, &r);
    else if (strcmp(r.kind, "cubin") == 0) rc = import_cubin(&in, &r);
    else if (strcmp(r.kind, "end") == 0) {
      rc = import_end(&in, &r);
      ended = 1;
    } else rc = in_fail(&in, CT_ERR_PARSE, "unknown record '%.30s'", r.kind);
    if (rc != CT_OK) goto done;
  }
  if (ferror(f)) {
    rc = in_fail(&in, CT_ERR_IO, "cannot read");
    goto done;
  }
  if (!ended) {
    rc = in_fail(&in, CT_ERR_PARSE, "no end record: the file is truncated");
    goto done;
  }
  rc = ct_cache_commit(c);
  begun = 0;
  if (rc != CT_OK) rc = in_cache_fail(&in, rc, "committing the import");
done:
  if (begun) ct_cache_rollback(c);
  free(line);
  map_free(&in.devices);
  map_free(&in.problems);
  map_free(&in.trials);
  if (st) {
    *st = in.s;
    if (rc != CT_OK) { /* nothing was kept */
      st->trials_added = st->winners_stored = st->cubins_added = 0;
    }
  }
  return rc;
}
