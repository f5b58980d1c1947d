/*
** json.h — a small JSON writer for the CLI's --json output: every string
** escaped and made valid UTF-8 (an invalid byte becomes U+FFFD), every
** number finite or null, commas and nesting kept by the writer.
**
**   ct_json j;
**   ct_json_init(&j, stdout);
**   ct_json_begin_object(&j);
**   ct_json_key_str(&j, "problem", spec);
**   ct_json_key(&j, "trials"); ct_json_begin_array(&j); ... ct_json_end_array(&j);
**   ct_json_end_object(&j);
**   ct_json_finish(&j);          -- a newline; the stream's errors are the caller's
**
** Writes go straight to the FILE; the writer checks nothing but its own
** nesting (asserts): check the stream at close.
*/
#ifndef CT_JSON_H
#define CT_JSON_H

#include <stdint.h>
#include <stdio.h>

#define CT_JSON_DEPTH 16 /* deepest nesting */

typedef struct ct_json {
  FILE *f;                          /* where it goes */
  int depth;                        /* open objects and arrays */
  unsigned char empty[CT_JSON_DEPTH]; /* 1 while level i has no member */
  int after_key;                    /* a key was written: its value next */
} ct_json;

/* Starts a document on f. */
void ct_json_init(ct_json *j, FILE *f);
/* Ends the document: writes a newline.  Every object and array must be
** closed. */
void ct_json_finish(ct_json *j);

void ct_json_begin_object(ct_json *j);
void ct_json_end_object(ct_json *j);
void ct_json_begin_array(ct_json *j);
void ct_json_end_array(ct_json *j);

/* The key of the next member of the current object. */
void ct_json_key(ct_json *j, const char *key);

/* Values.  str: s escaped, invalid UTF-8 replaced by U+FFFD; NULL writes
** null.  num: %.9g, or null when v is not finite (JSON has no NaN). */
void ct_json_str(ct_json *j, const char *s);
void ct_json_num(ct_json *j, double v);
void ct_json_int(ct_json *j, int64_t v);
void ct_json_uint(ct_json *j, uint64_t v);
void ct_json_bool(ct_json *j, int v);
void ct_json_null(ct_json *j);

/* A key and its value in one call. */
void ct_json_key_str(ct_json *j, const char *key, const char *s);
void ct_json_key_num(ct_json *j, const char *key, double v);
void ct_json_key_int(ct_json *j, const char *key, int64_t v);
void ct_json_key_bool(ct_json *j, const char *key, int v);

#endif /* CT_JSON_H */
