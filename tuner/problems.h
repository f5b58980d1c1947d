/*
** problems.h — problem lists: the files `convtune tune --problems`,
** `check --problems` and `db list --problems` read.
**
** Two forms, told apart by the first character that is not white space:
**
**   text  one problem per line: a spec ("n=32,c=64,...", README.md
**         "Problem specs"), or a name and a spec separated by white space
**         (the suite files' form, bench/suites/public.txt); `#` starts a
**         comment; blank lines are skipped.
**   JSON  '{' or '[': {"problems": [ENTRY, ...]} or [ENTRY, ...], ENTRY
**         being a spec string or an object {"spec": SPEC, "name": NAME,
**         "calls": N, "weight": W} (spec required; calls a whole number
**         >= 1, default 1, summed over repeats up to CT_PROBLEM_CALLS_MAX;
**         weight a number > 0, default calls, summed up to
**         CT_PROBLEM_WEIGHT_MAX; other keys ignored): the form for lists
**         that programs write.
**
** Each spec is parsed and put in canonical form; a precision given to the
** reader overrides the specs' own.  The same problem twice is one entry:
** its calls and weights add up, the first name stays.
*/
#ifndef CT_PROBLEMS_H
#define CT_PROBLEMS_H

#include <stddef.h>

#include "convtune.h"

#define CT_PROBLEM_LIST_MAX 100000 /* entries a list may hold */
#define CT_PROBLEM_CALLS_MAX 1000000000000LL /* calls of one problem, summed */
#define CT_PROBLEM_WEIGHT_MAX 1e15 /* weight of one problem, summed (shares stay finite) */

typedef struct ct_problem_entry {
  char spec[CT_PROBLEM_SPEC_MAX]; /* canonical, precision included */
  char name[64];                  /* "" when the list gives none */
  ct_problem problem;
  long calls;                     /* >= 1 */
  double weight;                  /* > 0 */
  int line;                       /* line of the file it came from, 1-based */
} ct_problem_entry;

typedef struct ct_problem_list {
  size_t n;
  ct_problem_entry *e;            /* malloc'd, n entries */
} ct_problem_list;

/* Reads the list in file path ("-" for stdin) into *out, precision (NULL:
** each spec's own) overriding the specs'.  Returns CT_OK, CT_ERR_IO (the
** file cannot be read), CT_ERR_PARSE (a malformed line or JSON, a bad
** spec, an empty list: err says where, "FILE:LINE: ..."), CT_ERR_NOMEM or
** CT_ERR_INVALID_ARG.  On failure *out is empty. */
ct_status ct_problem_list_read(const char *path, const char *precision,
                               ct_problem_list *out, char *err, size_t len);

/* The index of the entry whose canonical spec is spec, or -1. */
long ct_problem_list_find(const ct_problem_list *l, const char *spec);

/* Frees l's entries and empties it; NULL is a no-op. */
void ct_problem_list_free(ct_problem_list *l);

#endif /* CT_PROBLEMS_H */
