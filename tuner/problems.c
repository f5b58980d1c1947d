/*
** problems.c — problem lists (problems.h): the text form, a small JSON
** reader for the other, and the merging of repeated problems.
*/
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ct_gen.h"
#include "problems.h"

#define LIST_FILE_MAX (64u << 20) /* bytes a list file may have */

/* The list being built, and where its text came from (for messages);
** slots: an open-addressing index of its specs (entry + 1, 0 empty). */
typedef struct list_build {
  ct_problem_list *l;
  size_t cap;
  size_t *slots, n_slots;
  const char *path;
  const ct_precision *prec;       /* NULL: the specs' own */
  char *err;
  size_t len;
} list_build;

static ct_status fail(list_build *b, int line, ct_status rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static ct_status fail(list_build *b, int line, ct_status rc, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (line > 0)
    snprintf(b->err, b->len, "%s:%d: %s", b->path, line, msg);
  else
    snprintf(b->err, b->len, "%s: %s", b->path, msg);
  return rc;
}

long ct_problem_list_find(const ct_problem_list *l, const char *spec) {
  if (l == NULL || spec == NULL) return -1;
  for (size_t i = 0; i < l->n; i++)
    if (strcmp(l->e[i].spec, spec) == 0) return (long)i;
  return -1;
}

/* The index slot of spec: its entry's, else the empty one it would take. */
static size_t find_slot(const list_build *b, const char *spec) {
  size_t i = (size_t)ct_gen_hash(spec, strlen(spec), CT_GEN_HASH_SEED) & (b->n_slots - 1);
  while (b->slots[i] && strcmp(b->l->e[b->slots[i] - 1].spec, spec) != 0)
    i = (i + 1) & (b->n_slots - 1);
  return i;
}

/* Doubles the index (at least 64 slots) and puts every entry back. */
static ct_status grow_slots(list_build *b) {
  size_t n = b->n_slots ? 2 * b->n_slots : 64;
  size_t *slots = calloc(n, sizeof *slots);
  if (slots == NULL) return CT_ERR_NOMEM;
  free(b->slots);
  b->slots = slots;
  b->n_slots = n;
  for (size_t k = 0; k < b->l->n; k++) b->slots[find_slot(b, b->l->e[k].spec)] = k + 1;
  return CT_OK;
}

/* Adds one problem (spec text, optional name, calls, weight <= 0: calls). */
static ct_status add(list_build *b, int line, const char *spec, const char *name,
                     long calls, double weight) {
  ct_problem p;
  char perr[256];
  ct_status rc = ct_problem_parse(spec, &p, perr, sizeof perr);
  if (rc != CT_OK) return fail(b, line, CT_ERR_PARSE, "%s", perr);
  if (b->prec) p.precision = *b->prec;
  char canon[CT_PROBLEM_SPEC_MAX];
  if (ct_problem_format(&p, canon, sizeof canon) != CT_OK)
    return fail(b, line, CT_ERR_PARSE, "cannot format the problem");
  if (weight <= 0) weight = (double)calls;
  if (2 * (b->l->n + 1) > b->n_slots && grow_slots(b) != CT_OK)
    return fail(b, 0, CT_ERR_NOMEM, "out of host memory");
  size_t slot = find_slot(b, canon);
  long at = b->slots[slot] ? (long)b->slots[slot] - 1 : -1;
  if (at >= 0) {
    ct_problem_entry *e = &b->l->e[at];
    if (e->calls > CT_PROBLEM_CALLS_MAX - calls)
      return fail(b, line, CT_ERR_PARSE, "the calls of this problem add up past %lld",
                  (long long)CT_PROBLEM_CALLS_MAX);
    if (e->weight > CT_PROBLEM_WEIGHT_MAX - weight)
      return fail(b, line, CT_ERR_PARSE, "the weights of this problem add up past %g",
                  CT_PROBLEM_WEIGHT_MAX);
    e->calls += calls;
    e->weight += weight;
    if (!e->name[0] && name) snprintf(e->name, sizeof e->name, "%s", name);
    return CT_OK;
  }
  if (b->l->n >= CT_PROBLEM_LIST_MAX)
    return fail(b, line, CT_ERR_PARSE, "more than %d problems", CT_PROBLEM_LIST_MAX);
  if (b->l->n == b->cap) {
    size_t cap = b->cap ? 2 * b->cap : 16;
    ct_problem_entry *grown = realloc(b->l->e, cap * sizeof *grown);
    if (grown == NULL) return fail(b, 0, CT_ERR_NOMEM, "out of host memory");
    b->l->e = grown;
    b->cap = cap;
  }
  ct_problem_entry *e = &b->l->e[b->l->n++];
  b->slots[slot] = b->l->n;
  memset(e, 0, sizeof *e);
  snprintf(e->spec, sizeof e->spec, "%s", canon);
  if (name) snprintf(e->name, sizeof e->name, "%s", name);
  e->problem = p;
  e->calls = calls;
  e->weight = weight;
  e->line = line;
  return CT_OK;
}

/* ---------------------------------------------------------------------- */
/* Text                                                                    */

static ct_status read_text(list_build *b, char *text) {
  int line = 0;
  for (char *p = text; *p;) {
    char *eol = strchr(p, '\n');
    if (eol) *eol = '\0';
    line++;
    char *hash = strchr(p, '#');
    if (hash) *hash = '\0';
    char *tok[3] = {NULL, NULL, NULL};
    int nt = 0;
    for (char *q = p; *q;) {
      while (*q && isspace((unsigned char)*q)) *q++ = '\0';
      if (!*q) break;
      if (nt == 3) break;
      tok[nt++] = q;
      while (*q && !isspace((unsigned char)*q)) q++;
    }
    ct_status rc = CT_OK;
    if (nt == 1) {
      rc = add(b, line, tok[0], NULL, 1, 0);
    } else if (nt == 2) {
      if (strchr(tok[0], '=') || strlen(tok[0]) >= sizeof b->l->e[0].name)
        return fail(b, line, CT_ERR_PARSE,
                    "two fields, but '%s' is not a name (a name has no '=' and "
                    "at most 63 characters)", tok[0]);
      rc = add(b, line, tok[1], tok[0], 1, 0);
    } else if (nt == 3) {
      return fail(b, line, CT_ERR_PARSE,
                  "more than two fields: a line is a spec, or a name and a spec");
    }
    if (rc != CT_OK) return rc;
    if (!eol) break;
    p = eol + 1;
  }
  return CT_OK;
}

/* ---------------------------------------------------------------------- */
/* JSON: values are read and checked, only the entries' fields are kept.   */

typedef struct json_in {
  const char *s, *p;
  list_build *b;
  const char *counted;          /* lines are counted up to here ... */
  int line;                     /* ... where this one starts or runs */
} json_in;

/* The line of j->p, counting on from where the last call stopped. */
static int json_line(json_in *j) {
  if (j->counted == NULL || j->counted > j->p) {
    j->counted = j->s;
    j->line = 1;
  }
  for (; j->counted < j->p; j->counted++) j->line += *j->counted == '\n';
  return j->line;
}

static ct_status json_fail(json_in *j, const char *what) {
  if (!*j->p) return fail(j->b, json_line(j), CT_ERR_PARSE, "JSON: %s at the end of the file", what);
  return fail(j->b, json_line(j), CT_ERR_PARSE, "JSON: %s at '%.12s'", what, j->p);
}

static void json_ws(json_in *j) {
  while (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r') j->p++;
}

/* A string into out (len bytes, NULL: skipped); escapes decoded, \u to
** ASCII only (others become '?').  With *too_long not NULL, a string longer
** than out holds is cut short and *too_long set, else it is an error. */
static ct_status json_string_cut(json_in *j, char *out, size_t len, int *too_long) {
  if (*j->p != '"') return json_fail(j, "a string expected");
  j->p++;
  size_t n = 0;
  for (;;) {
    char c = *j->p;
    if (c == '\0') return json_fail(j, "unterminated string");
    if ((unsigned char)c < 0x20) return json_fail(j, "a control character in a string");
    j->p++;
    if (c == '"') break;
    if (c == '\\') {
      char e = *j->p;
      if (e == '\0') return json_fail(j, "unterminated string");
      j->p++;
      switch (e) {
      case '"': case '\\': case '/': c = e; break;
      case 'b': c = '\b'; break;
      case 'f': c = '\f'; break;
      case 'n': c = '\n'; break;
      case 'r': c = '\r'; break;
      case 't': c = '\t'; break;
      case 'u': {
        unsigned v = 0;
        for (int i = 0; i < 4; i++) {
          char h = *j->p;
          if (!isxdigit((unsigned char)h)) return json_fail(j, "a bad \\u escape");
          j->p++;
          v = v * 16 + (unsigned)(isdigit((unsigned char)h) ? h - '0' : (tolower(h) - 'a' + 10));
        }
        c = v < 0x80 && v > 0 ? (char)v : '?';
        break;
      }
      default: j->p--; return json_fail(j, "a bad escape");
      }
    }
    if (out) {
      if (n + 1 >= len) {
        if (!too_long) return json_fail(j, "a string too long");
        *too_long = 1;
      } else {
        out[n++] = c;
      }
    }
  }
  if (out) out[n] = '\0';
  return CT_OK;
}

static ct_status json_string(json_in *j, char *out, size_t len) {
  return json_string_cut(j, out, len, NULL);
}

static ct_status json_number(json_in *j, double *v) {
  const char *q = j->p;
  if (*q == '-') q++;
  if (!isdigit((unsigned char)*q)) return json_fail(j, "a number expected");
  char *end;
  errno = 0;
  double d = strtod(j->p, &end);
  if (errno || end == j->p || !isfinite(d)) return json_fail(j, "a bad number");
  j->p = end;
  *v = d;
  return CT_OK;
}

static ct_status json_skip(json_in *j, int depth);

static ct_status json_skip_container(json_in *j, int depth, char open, char close) {
  if (depth > 64) return json_fail(j, "nesting too deep");
  j->p++; /* open */
  json_ws(j);
  if (*j->p == close) {
    j->p++;
    return CT_OK;
  }
  for (;;) {
    ct_status rc;
    if (open == '{') {
      if ((rc = json_string(j, NULL, 0)) != CT_OK) return rc;
      json_ws(j);
      if (*j->p != ':') return json_fail(j, "':' expected");
      j->p++;
      json_ws(j);
    }
    if ((rc = json_skip(j, depth + 1)) != CT_OK) return rc;
    json_ws(j);
    if (*j->p == ',') {
      j->p++;
      json_ws(j);
      continue;
    }
    if (*j->p == close) {
      j->p++;
      return CT_OK;
    }
    return json_fail(j, open == '{' ? "',' or '}' expected" : "',' or ']' expected");
  }
}

/* Any value, checked and dropped. */
static ct_status json_skip(json_in *j, int depth) {
  double d;
  switch (*j->p) {
  case '"': return json_string(j, NULL, 0);
  case '{': return json_skip_container(j, depth, '{', '}');
  case '[': return json_skip_container(j, depth, '[', ']');
  case 't': if (!strncmp(j->p, "true", 4)) { j->p += 4; return CT_OK; } break;
  case 'f': if (!strncmp(j->p, "false", 5)) { j->p += 5; return CT_OK; } break;
  case 'n': if (!strncmp(j->p, "null", 4)) { j->p += 4; return CT_OK; } break;
  default: return json_number(j, &d);
  }
  return json_fail(j, "a value expected");
}

/* One entry: a spec string or an object. */
static ct_status json_entry(json_in *j) {
  int line = json_line(j);
  char spec[CT_PROBLEM_SPEC_MAX * 2] = "", name[64] = "";
  double calls = 1, weight = 0;
  int have_spec = 0;
  ct_status rc;
  if (*j->p == '"') {
    if ((rc = json_string(j, spec, sizeof spec)) != CT_OK) return rc;
    return add(j->b, line, spec, NULL, 1, 0);
  }
  if (*j->p != '{') return json_fail(j, "a problem (a spec string or an object) expected");
  j->p++;
  json_ws(j);
  while (*j->p != '}') {
    char key[32];
    int long_key = 0;
    if ((rc = json_string_cut(j, key, sizeof key, &long_key)) != CT_OK) return rc;
    if (long_key) key[0] = '\0'; /* longer than any field: an unknown key */
    json_ws(j);
    if (*j->p != ':') return json_fail(j, "':' expected");
    j->p++;
    json_ws(j);
    if (!strcmp(key, "spec")) {
      if ((rc = json_string(j, spec, sizeof spec)) != CT_OK) return rc;
      have_spec = 1;
    } else if (!strcmp(key, "name")) {
      if ((rc = json_string(j, name, sizeof name)) != CT_OK) return rc;
    } else if (!strcmp(key, "calls")) {
      if ((rc = json_number(j, &calls)) != CT_OK) return rc;
      if (calls < 1 || calls > (double)CT_PROBLEM_CALLS_MAX || calls != floor(calls))
        return fail(j->b, json_line(j), CT_ERR_PARSE, "\"calls\" must be a whole number >= 1");
    } else if (!strcmp(key, "weight")) {
      if ((rc = json_number(j, &weight)) != CT_OK) return rc;
      if (!(weight > 0 && weight <= CT_PROBLEM_WEIGHT_MAX))
        return fail(j->b, json_line(j), CT_ERR_PARSE, "\"weight\" must be > 0 and at most %g",
                    CT_PROBLEM_WEIGHT_MAX);
    } else if ((rc = json_skip(j, 1)) != CT_OK) {
      return rc;
    }
    json_ws(j);
    if (*j->p == ',') {
      j->p++;
      json_ws(j);
      if (*j->p == '}') return json_fail(j, "a key expected");
    } else if (*j->p != '}') {
      return json_fail(j, "',' or '}' expected");
    }
  }
  j->p++;
  if (!have_spec) return fail(j->b, line, CT_ERR_PARSE, "a problem object without \"spec\"");
  return add(j->b, line, spec, name[0] ? name : NULL, (long)calls, weight);
}

static ct_status json_entries(json_in *j) {
  if (*j->p != '[') return json_fail(j, "'[' expected");
  j->p++;
  json_ws(j);
  if (*j->p == ']') {
    j->p++;
    return CT_OK;
  }
  for (;;) {
    ct_status rc = json_entry(j);
    if (rc != CT_OK) return rc;
    json_ws(j);
    if (*j->p == ',') {
      j->p++;
      json_ws(j);
      continue;
    }
    if (*j->p == ']') {
      j->p++;
      return CT_OK;
    }
    return json_fail(j, "',' or ']' expected");
  }
}

static ct_status read_json(list_build *b, const char *text) {
  json_in j = {text, text, b, NULL, 1};
  ct_status rc;
  json_ws(&j);
  if (*j.p == '[') {
    rc = json_entries(&j);
  } else {
    j.p++; /* '{' */
    json_ws(&j);
    int have = 0;
    rc = CT_OK;
    while (rc == CT_OK && *j.p != '}') {
      char key[32];
      int long_key = 0;
      if ((rc = json_string_cut(&j, key, sizeof key, &long_key)) != CT_OK) break;
      if (long_key) key[0] = '\0';
      json_ws(&j);
      if (*j.p != ':') return json_fail(&j, "':' expected");
      j.p++;
      json_ws(&j);
      if (!strcmp(key, "problems")) {
        if (have) return json_fail(&j, "a second \"problems\" array");
        rc = json_entries(&j);
        have = 1;
      } else {
        rc = json_skip(&j, 1);
      }
      if (rc != CT_OK) break;
      json_ws(&j);
      if (*j.p == ',') {
        j.p++;
        json_ws(&j);
        if (*j.p == '}') return json_fail(&j, "a key expected after ','");
      } else if (*j.p != '}') {
        return json_fail(&j, "',' or '}' expected");
      }
    }
    if (rc != CT_OK) return rc;
    j.p++;
    if (!have) return fail(b, 0, CT_ERR_PARSE, "JSON: no \"problems\" array");
  }
  if (rc != CT_OK) return rc;
  json_ws(&j);
  if (*j.p) return json_fail(&j, "text after the JSON value");
  return CT_OK;
}

/* ---------------------------------------------------------------------- */

/* The whole file (NUL-terminated, no NUL inside) into *out. */
static ct_status slurp(list_build *b, char **out) {
  FILE *f = strcmp(b->path, "-") == 0 ? stdin : fopen(b->path, "rb");
  if (f == NULL) return fail(b, 0, CT_ERR_IO, "cannot open: %s", strerror(errno));
  size_t cap = 4096, n = 0;
  char *buf = malloc(cap);
  ct_status rc = buf ? CT_OK : CT_ERR_NOMEM;
  while (rc == CT_OK) {
    if (n + 1 >= cap) {
      if (cap >= LIST_FILE_MAX) {
        rc = fail(b, 0, CT_ERR_PARSE, "larger than %u MiB", LIST_FILE_MAX >> 20);
        break;
      }
      char *grown = realloc(buf, cap * 2);
      if (!grown) {
        rc = CT_ERR_NOMEM;
        break;
      }
      buf = grown;
      cap *= 2;
    }
    size_t got = fread(buf + n, 1, cap - 1 - n, f);
    n += got;
    if (got == 0) {
      if (ferror(f)) rc = fail(b, 0, CT_ERR_IO, "cannot read: %s", strerror(errno));
      break;
    }
  }
  if (f != stdin) fclose(f);
  if (rc == CT_OK && memchr(buf, '\0', n)) rc = fail(b, 0, CT_ERR_PARSE, "a NUL byte: not a text file");
  if (rc == CT_ERR_NOMEM) fail(b, 0, rc, "out of host memory");
  if (rc != CT_OK) {
    free(buf);
    return rc;
  }
  buf[n] = '\0';
  *out = buf;
  return CT_OK;
}

ct_status ct_problem_list_read(const char *path, const char *precision,
                               ct_problem_list *out, char *err, size_t len) {
  if (out) memset(out, 0, sizeof *out);
  if (err && len) err[0] = '\0';
  if (path == NULL || out == NULL || err == NULL || len == 0) return CT_ERR_INVALID_ARG;
  ct_precision prec;
  list_build b = {out, 0, NULL, 0, path, NULL, err, len};
  if (precision) {
    if (ct_precision_parse(precision, &prec) != CT_OK) {
      snprintf(err, len, "precision must be tf32 or fp32, not '%s'", precision);
      return CT_ERR_INVALID_ARG;
    }
    b.prec = &prec;
  }
  char *text = NULL;
  ct_status rc = slurp(&b, &text);
  if (rc != CT_OK) return rc;
  /* A UTF-8 byte order mark (some editors write one) is not text. */
  char *const start = strncmp(text, "\xEF\xBB\xBF", 3) == 0 ? text + 3 : text;
  const char *first = start;
  while (isspace((unsigned char)*first)) first++;
  rc = *first == '{' || *first == '[' ? read_json(&b, start) : read_text(&b, start);
  free(text);
  free(b.slots);
  if (rc == CT_OK && out->n == 0) rc = fail(&b, 0, CT_ERR_PARSE, "no problem in the list");
  if (rc != CT_OK) ct_problem_list_free(out);
  return rc;
}

void ct_problem_list_free(ct_problem_list *l) {
  if (l == NULL) return;
  free(l->e);
  l->e = NULL;
  l->n = 0;
}
