/*
** count_malloc.h — counts this thread's host allocations, for the tests and
** benchmarks that check a hot path allocates nothing.  Replaces malloc,
** calloc, realloc and free with counting wrappers around glibc's own
** (include it in one translation unit of a program).  Not under
** AddressSanitizer, which owns malloc: there CT_COUNT_MALLOC is 0 and
** nothing is counted.  Set `counting` to 1 around the code measured and read
** `n_allocs`.
*/
#ifndef CT_COUNT_MALLOC_H
#define CT_COUNT_MALLOC_H

#include <stddef.h>

#if defined(__SANITIZE_ADDRESS__)
#define CT_COUNT_MALLOC 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CT_COUNT_MALLOC 0
#endif
#endif
#ifndef CT_COUNT_MALLOC
#define CT_COUNT_MALLOC 1
#endif

/* Unused where counting is off (AddressSanitizer), hence the attribute. */
static __thread int counting __attribute__((unused));  /* 1 while this thread counts */
static __thread long n_allocs __attribute__((unused)); /* allocations counted */

#if CT_COUNT_MALLOC
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);
void *malloc(size_t n) {
  if (counting) n_allocs++;
  return __libc_malloc(n);
}
void *calloc(size_t n, size_t size) {
  if (counting) n_allocs++;
  return __libc_calloc(n, size);
}
void *realloc(void *p, size_t n) {
  if (counting) n_allocs++;
  return __libc_realloc(p, n);
}
void free(void *p) {
  if (counting && p) n_allocs++;
  __libc_free(p);
}
#endif

#endif /* CT_COUNT_MALLOC_H */
