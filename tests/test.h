/*
** test.h — a tiny test harness: TEST functions, ASSERT_* macros that print
** file:line and the failing expression, and the exit codes Meson reads
** (0 pass, 1 fail, 77 skip).
*/
#ifndef CT_TEST_H
#define CT_TEST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CT_TEST_SKIP 77

static int ct_test_failures = 0;

#define ASSERT_TRUE(cond)                                                     \
  do {                                                                        \
    if (!(cond)) {                                                            \
      fprintf(stderr, "%s:%d: ASSERT_TRUE(%s) failed\n", __FILE__, __LINE__,  \
              #cond);                                                         \
      ct_test_failures++;                                                     \
      return;                                                                 \
    }                                                                         \
  } while (0)

#define ASSERT_EQ_INT(a, b)                                                   \
  do {                                                                        \
    long long ct_a_ = (long long)(a), ct_b_ = (long long)(b);                 \
    if (ct_a_ != ct_b_) {                                                     \
      fprintf(stderr, "%s:%d: ASSERT_EQ_INT(%s, %s) failed: %lld != %lld\n",  \
              __FILE__, __LINE__, #a, #b, ct_a_, ct_b_);                      \
      ct_test_failures++;                                                     \
      return;                                                                 \
    }                                                                         \
  } while (0)

#define ASSERT_EQ_STR(a, b)                                                   \
  do {                                                                        \
    const char *ct_a_ = (a), *ct_b_ = (b);                                    \
    if (!ct_a_ || !ct_b_ || strcmp(ct_a_, ct_b_) != 0) {                      \
      fprintf(stderr, "%s:%d: ASSERT_EQ_STR(%s, %s) failed: \"%s\" != \"%s\"\n", \
              __FILE__, __LINE__, #a, #b, ct_a_ ? ct_a_ : "(null)",           \
              ct_b_ ? ct_b_ : "(null)");                                      \
      ct_test_failures++;                                                     \
      return;                                                                 \
    }                                                                         \
  } while (0)

#define ASSERT_NEAR(a, b, tol)                                                \
  do {                                                                        \
    double ct_a_ = (double)(a), ct_b_ = (double)(b);                          \
    if (!(ct_a_ - ct_b_ <= (tol) && ct_b_ - ct_a_ <= (tol))) {                \
      fprintf(stderr, "%s:%d: ASSERT_NEAR(%s, %s) failed: %.17g vs %.17g\n",  \
              __FILE__, __LINE__, #a, #b, ct_a_, ct_b_);                      \
      ct_test_failures++;                                                     \
      return;                                                                 \
    }                                                                         \
  } while (0)

/* Runs one test function and reports it by name. */
/* With CT_TEST_ONLY set, only the tests whose names contain it run. */
#define RUN_TEST(fn)                                                          \
  do {                                                                        \
    const char *ct_only_ = getenv("CT_TEST_ONLY");                            \
    if (ct_only_ && *ct_only_ && !strstr(#fn, ct_only_)) break;               \
    int ct_before_ = ct_test_failures;                                        \
    fn();                                                                     \
    fprintf(stderr, "%s %s\n", ct_test_failures == ct_before_ ? "ok  " : "FAIL", #fn); \
  } while (0)

/* Ends main(): 0 when every test passed, 1 otherwise. */
#define TEST_EXIT() return ct_test_failures == 0 ? 0 : 1

#endif /* CT_TEST_H */
