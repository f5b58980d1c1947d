/*
** families.c — the --families filter every command shares (ct_tune.h):
** checking a list of family names and keeping the variants it names.
*/
#include <stdio.h>
#include <string.h>

#include "ct_tune.h"

/* 1 when name is one of the comma-separated names of list. */
static int families_has(const char *list, const char *name) {
  size_t n = strlen(name);
  for (const char *p = list;;) {
    const char *e = strchr(p, ',');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    if (len == n && strncmp(p, name, n) == 0) return 1;
    if (e == NULL) return 0;
    p = e + 1;
  }
}

ct_status ct_tune_families_check(const char *list, char *err, size_t len) {
  if (list == NULL) return CT_OK;
  for (const char *p = list;;) {
    const char *e = strchr(p, ',');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    char name[64];
    if (n == 0) {
      snprintf(err, len, "an empty family name in '%s'", list);
      return CT_ERR_INVALID_ARG;
    }
    snprintf(name, sizeof name, "%.*s", (int)n, p);
    if (n >= sizeof name || ct_gen_family_find(name) == NULL) {
      size_t k = (size_t)snprintf(err, len, "unknown family '%.*s' (families:", (int)n, p);
      for (size_t i = 0; ct_gen_families[i] != NULL && k < len; i++)
        k += (size_t)snprintf(err + k, len - k, " %s", ct_gen_families[i]->name);
      if (k < len) snprintf(err + k, len - k, ")");
      return CT_ERR_INVALID_ARG;
    }
    if (e == NULL) return CT_OK;
    p = e + 1;
  }
}

void ct_tune_families_why(const char *list, const ct_problem *p, char *buf, size_t len) {
  if (len == 0) return;
  buf[0] = '\0';
  if (list == NULL) return;
  size_t k = 0;
  for (size_t i = 0; ct_gen_families[i] != NULL && k < len; i++) {
    const char *why = ct_gen_family_declines(ct_gen_families[i], p);
    if (why && families_has(list, ct_gen_families[i]->name))
      k += (size_t)snprintf(buf + k, len - k, "%s%s: %s", k ? "; " : " (", ct_gen_families[i]->name,
                            why);
  }
  if (k > 0 && k < len) snprintf(buf + k, len - k, ")");
}

size_t ct_tune_families_keep(const char *list, ct_gen_variant *v, size_t n) {
  if (list == NULL) return n;
  size_t kept = 0;
  for (size_t i = 0; i < n; i++)
    if (families_has(list, v[i].family->name)) v[kept++] = v[i];
  return kept;
}
