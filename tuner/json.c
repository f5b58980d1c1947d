/*
** json.c — the CLI's JSON writer (json.h).
*/
#include <assert.h>
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "json.h"

void ct_json_init(ct_json *j, FILE *f) {
  memset(j, 0, sizeof *j);
  j->f = f;
}

void ct_json_finish(ct_json *j) {
  assert(j->depth == 0);
  fputc('\n', j->f);
}

/* Before a value: the comma after the previous member of an array. */
static void json_value(ct_json *j) {
  if (j->after_key) {
    j->after_key = 0;
    return;
  }
  if (j->depth > 0) {
    if (!j->empty[j->depth - 1]) fputs(", ", j->f);
    j->empty[j->depth - 1] = 0;
  }
}

static void json_open(ct_json *j, int ch) {
  json_value(j);
  assert(j->depth < CT_JSON_DEPTH);
  fputc(ch, j->f);
  j->empty[j->depth++] = 1;
}

static void json_close(ct_json *j, int ch) {
  assert(j->depth > 0 && !j->after_key);
  j->depth--;
  fputc(ch, j->f);
}

void ct_json_begin_object(ct_json *j) { json_open(j, '{'); }
void ct_json_end_object(ct_json *j) { json_close(j, '}'); }
void ct_json_begin_array(ct_json *j) { json_open(j, '['); }
void ct_json_end_array(ct_json *j) { json_close(j, ']'); }

/* The length of the valid UTF-8 sequence at s (1..4), or 0 when the bytes
** there are not one (a stray continuation byte, a truncated sequence, an
** overlong form, a surrogate, a code point above U+10FFFF). */
static size_t json_utf8_len(const unsigned char *s) {
  unsigned c = s[0];
  size_t n;
  unsigned cp;
  if (c < 0x80) return 1;
  if (c >= 0xc2 && c <= 0xdf) n = 2, cp = c & 0x1f;
  else if (c >= 0xe0 && c <= 0xef) n = 3, cp = c & 0x0f;
  else if (c >= 0xf0 && c <= 0xf4) n = 4, cp = c & 0x07;
  else return 0;
  for (size_t i = 1; i < n; i++) {
    if ((s[i] & 0xc0) != 0x80) return 0; /* also stops at the NUL */
    cp = cp << 6 | (s[i] & 0x3f);
  }
  if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10ffff ||
      (cp >= 0xd800 && cp <= 0xdfff))
    return 0;
  return n;
}

/* s as a JSON string: quotes, backslashes and control characters
** escaped, bytes that are not UTF-8 written as U+FFFD. */
static void json_string(FILE *f, const char *s) {
  const unsigned char *p = (const unsigned char *)s;
  fputc('"', f);
  while (*p) {
    unsigned char ch = *p;
    size_t n = json_utf8_len(p);
    if (n == 0) {
      fputs("\\ufffd", f);
      p++;
      continue;
    }
    if (n > 1) {
      fwrite(p, 1, n, f);
      p += n;
      continue;
    }
    switch (ch) {
    case '"': fputs("\\\"", f); break;
    case '\\': fputs("\\\\", f); break;
    case '\n': fputs("\\n", f); break;
    case '\r': fputs("\\r", f); break;
    case '\t': fputs("\\t", f); break;
    case '\b': fputs("\\b", f); break;
    case '\f': fputs("\\f", f); break;
    default:
      if (ch < 0x20 || ch == 0x7f) fprintf(f, "\\u%04x", ch);
      else fputc(ch, f);
    }
    p++;
  }
  fputc('"', f);
}

void ct_json_key(ct_json *j, const char *key) {
  assert(j->depth > 0 && !j->after_key);
  json_value(j);
  json_string(j->f, key);
  fputs(": ", j->f);
  j->after_key = 1;
}

void ct_json_str(ct_json *j, const char *s) {
  if (s == NULL) {
    ct_json_null(j);
    return;
  }
  json_value(j);
  json_string(j->f, s);
}

void ct_json_num(ct_json *j, double v) {
  json_value(j);
  if (isfinite(v)) fprintf(j->f, "%.9g", v);
  else fputs("null", j->f);
}

void ct_json_int(ct_json *j, int64_t v) {
  json_value(j);
  fprintf(j->f, "%" PRId64, v);
}

void ct_json_uint(ct_json *j, uint64_t v) {
  json_value(j);
  fprintf(j->f, "%" PRIu64, v);
}

void ct_json_bool(ct_json *j, int v) {
  json_value(j);
  fputs(v ? "true" : "false", j->f);
}

void ct_json_null(ct_json *j) {
  json_value(j);
  fputs("null", j->f);
}

void ct_json_key_str(ct_json *j, const char *key, const char *s) {
  ct_json_key(j, key);
  ct_json_str(j, s);
}

void ct_json_key_num(ct_json *j, const char *key, double v) {
  ct_json_key(j, key);
  ct_json_num(j, v);
}

void ct_json_key_int(ct_json *j, const char *key, int64_t v) {
  ct_json_key(j, key);
  ct_json_int(j, v);
}

void ct_json_key_bool(ct_json *j, const char *key, int v) {
  ct_json_key(j, key);
  ct_json_bool(j, v);
}
