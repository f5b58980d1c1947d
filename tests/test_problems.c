/*
** test_problems.c — problem lists (tuner/problems.c) on CPU: the text form
** (specs, names, comments, repeats), the JSON forms, the precision
** override, and every refusal naming the file and line.
*/
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "problems.h"
#include "test.h"

static char dir[64];

/* Writes text (len bytes, -1: strlen) to a fresh file; returns its path. */
static const char *file_of(const char *name, const char *text, long len) {
  static char path[256];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  if (!f) return NULL;
  fwrite(text, 1, len < 0 ? strlen(text) : (size_t)len, f);
  fclose(f);
  return path;
}

static ct_status read_list(const char *name, const char *text, const char *prec,
                           ct_problem_list *l, char *err, size_t len) {
  const char *path = file_of(name, text, -1);
  if (!path) return CT_ERR_IO;
  return ct_problem_list_read(path, prec, l, err, len);
}

static void test_text(void) {
  ct_problem_list l;
  char err[512];
  ASSERT_EQ_INT(read_list("a.txt",
                          "# ResNet's first convs\n"
                          "\n"
                          "n=32,c=3,h=224,w=224,k=64,r=7,s=7,stride=2,pad=3,bias=0\n"
                          "  l1  n=32,c=64,h=56,w=56,k=64,r=1,s=1,bias=0   # 1x1\n"
                          "n=32,c=3,h=224,w=224,k=64,r=7,s=7,stride=2,pad=3,bias=0,prec=tf32\n"
                          "n=32,c=64,h=56,w=56,k=64,r=1,s=1,bias=0,prec=fp32",
                          NULL, &l, err, sizeof err),
                CT_OK);
  ASSERT_EQ_INT(l.n, 3);
  ASSERT_EQ_STR(l.e[0].spec,
                "n=32,c=3,h=224,w=224,k=64,r=7,s=7,stride=2,pad=3,dil=1,bias=0,prec=tf32");
  ASSERT_EQ_INT(l.e[0].calls, 2); /* named twice */
  ASSERT_TRUE(l.e[0].weight == 2.0);
  ASSERT_EQ_INT(l.e[0].line, 3);
  ASSERT_EQ_STR(l.e[1].name, "l1");
  ASSERT_EQ_INT(l.e[1].problem.precision, CT_PREC_TF32);
  ASSERT_EQ_INT(l.e[2].problem.precision, CT_PREC_FP32); /* another problem */
  ASSERT_EQ_INT(l.e[2].line, 6);
  ASSERT_TRUE(ct_problem_list_find(&l, l.e[1].spec) == 1);
  ASSERT_TRUE(ct_problem_list_find(&l, "n=1") == -1);
  ct_problem_list_free(&l);
  ASSERT_TRUE(l.n == 0 && l.e == NULL);
  /* --precision fp32: the 1x1 twice in fp32 is one problem. */
  ASSERT_EQ_INT(read_list("b.txt",
                          "n=32,c=64,h=56,w=56,k=64,r=1,s=1,bias=0\n"
                          "x n=32,c=64,h=56,w=56,k=64,r=1,s=1,bias=0,prec=fp32\n",
                          "fp32", &l, err, sizeof err),
                CT_OK);
  ASSERT_EQ_INT(l.n, 1);
  ASSERT_EQ_INT(l.e[0].problem.precision, CT_PREC_FP32);
  ASSERT_EQ_STR(l.e[0].name, "x");
  ct_problem_list_free(&l);
}

static void test_json(void) {
  ct_problem_list l;
  char err[512];
  ASSERT_EQ_INT(read_list("a.json",
                          " {\"model\": {\"name\": \"r50\", \"layers\": [1, 2.5e3, true, null]},\n"
                          "  \"problems\": [\n"
                          "   {\"spec\": \"n=1,c=3,h=9,w=9,k=2,r=3,s=3\", \"calls\": 3, \"weight\": 0.25,\n"
                          "    \"extra\": {\"a\": [\"\\u0041\\n\"]}},\n"
                          "   \"n=1,c=3,h=9,w=9,k=2,r=3,s=3\",\n"
                          "   {\"name\": \"b\\\"q\", \"spec\": \"n=2,c=3,h=9,w=9,k=2,r=3,s=3,prec=fp32\"}\n"
                          "  ]}\n",
                          NULL, &l, err, sizeof err),
                CT_OK);
  ASSERT_EQ_INT(l.n, 2);
  ASSERT_EQ_INT(l.e[0].calls, 4);
  ASSERT_TRUE(l.e[0].weight == 1.25);
  ASSERT_EQ_STR(l.e[1].name, "b\"q");
  ASSERT_EQ_INT(l.e[1].problem.precision, CT_PREC_FP32);
  ASSERT_EQ_INT(l.e[1].line, 6);
  ct_problem_list_free(&l);
  ASSERT_EQ_INT(read_list("b.json", "[\"n=1,c=1,h=4,w=4,k=1,r=1,s=1\"]", NULL, &l, err,
                          sizeof err),
                CT_OK);
  ASSERT_EQ_INT(l.n, 1);
  ct_problem_list_free(&l);
  /* A key longer than any field is an unknown key, skipped with its value. */
  ASSERT_EQ_INT(read_list("c.json",
                          "{\"a_key_much_longer_than_any_field_of_an_entry\": {\"x\": 1},\n"
                          " \"problems\": [{\"measured_mean_ms_on_h200_cudnn_x_y_z\": 2.5,\n"
                          "                \"spec\": \"n=1,c=1,h=4,w=4,k=1,r=1,s=1\"}]}",
                          NULL, &l, err, sizeof err),
                CT_OK);
  ASSERT_EQ_INT(l.n, 1);
  ct_problem_list_free(&l);
  /* Many entries, repeats among them: read in linear time. */
  size_t big = 20000, cap = big * 40 + 16, at = 0;
  char *text = malloc(cap);
  ASSERT_TRUE(text != NULL);
  at += (size_t)snprintf(text + at, cap - at, "[");
  for (size_t i = 0; i < big; i++)
    at += (size_t)snprintf(text + at, cap - at, "%s\"n=1,c=1,h=4,w=%zu,k=1,r=1,s=1\"",
                           i ? ",\n" : "", 1 + i % 10000);
  snprintf(text + at, cap - at, "]");
  ct_status rc = read_list("big.json", text, NULL, &l, err, sizeof err);
  free(text);
  ASSERT_EQ_INT(rc, CT_OK);
  ASSERT_EQ_INT(l.n, 10000);
  ASSERT_EQ_INT(l.e[9999].calls, 2);
  ASSERT_EQ_INT(l.e[9999].line, 10000);
  ct_problem_list_free(&l);
}

/* Each refusal: CT_ERR_PARSE (or IO) and the message names file and line. */
static void test_errors(void) {
  static const struct {
    const char *text, *where;
  } bad[] = {
      {"n=1,c=1,h=4,w=4,k=1,r=1,s=1\na b c\n", ":2: more than two fields"},
      {"n=1,c=0,h=4,w=4,k=1,r=1,s=1\n", ":1: "},
      {"k=v n=1,c=1,h=4,w=4,k=1,r=1,s=1\n", ":1: two fields"},
      {"# only a comment\n\n", "no problem in the list"},
      {"[]", "no problem in the list"},
      {"{\"other\": []}", "no \"problems\" array"},
      {"{\"problems\": [\"n=1,c=1,h=4,w=4,k=1,r=1,s=1\"],}", "a key expected after ','"},
      {"{\"problems\": [\"n=1,c=1,h=4,w=4,k=1,r=1,s=1\"], \"problems\": []}", "a second"},
      {"[\"n=1,c=1,h=4,w=4,k=1,r=1,s=1\",]", "a problem"},
      {"[{\"calls\": 2}]", "without \"spec\""},
      {"[{\"spec\": \"n=1,c=1,h=4,w=4,k=1,r=1,s=1\", \"calls\": 0}]", "\"calls\""},
      {"[{\"spec\": \"n=1,c=1,h=4,w=4,k=1,r=1,s=1\", \"calls\": 1.5}]", "\"calls\""},
      {"[{\"spec\": \"n=1,c=1,h=4,w=4,k=1,r=1,s=1\", \"weight\": -1}]", "\"weight\""},
      {"[{\"spec\": \"n=1,c=1,h=4,w=4,k=1,r=1,s=1\", \"weight\": 1e308}]", "at most"},
      {"[{\"spec\": \"n=1,c=1,h=4,w=4,k=1,r=1,s=1\", \"weight\": 9e14},\n"
       " {\"spec\": \"n=1,c=1,h=4,w=4,k=1,r=1,s=1\", \"weight\": 9e14}]", ":2: the weights"},
      {"[\"n=1,c=1,h=4,w=4,k=1,r=1,s=1\"] x", "text after"},
      {"[\"n=1,c=1,h=4", "unterminated"},
      {"[\"n=1,c=1,h=4\\u1", "a bad \\u escape at the end"},
      {"[\"n=1,c=1,h=4\\", "unterminated"},
      {"[{\"spec\": \"n=1,c=1,h=4,w=4,k=1,r=1,s=1\", \"calls\": 900000000000},\n"
       " {\"spec\": \"n=1,c=1,h=4,w=4,k=1,r=1,s=1\", \"calls\": 900000000000}]", ":2: the calls"},
      {"{\"problems\": [\n\n  \"n=1,c=1,h=4,w=4,k=1,r=1,s=1,q=2\"]}", ":3: "},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    ct_problem_list l;
    char err[512], name[32];
    snprintf(name, sizeof name, "bad%zu", i);
    ct_status rc = read_list(name, bad[i].text, NULL, &l, err, sizeof err);
    int ok = rc == CT_ERR_PARSE && strstr(err, name) && strstr(err, bad[i].where) && l.n == 0;
    if (!ok) fprintf(stderr, "  case %zu: %s -> %s\n", i, ct_status_string(rc), err);
    ASSERT_TRUE(ok);
  }
  ct_problem_list l;
  char err[512];
  const char *nul = file_of("nul.txt", "n=1,c=1,h=4,w=4,k=1,r=1,s=1\n\0x", 31);
  ASSERT_EQ_INT(ct_problem_list_read(nul, NULL, &l, err, sizeof err), CT_ERR_PARSE);
  ASSERT_TRUE(strstr(err, "NUL") != NULL);
  char missing[128];
  snprintf(missing, sizeof missing, "%s/none.txt", dir);
  ASSERT_EQ_INT(ct_problem_list_read(missing, NULL, &l, err, sizeof err), CT_ERR_IO);
  ASSERT_TRUE(strstr(err, "none.txt") != NULL);
  ASSERT_EQ_INT(read_list("p.txt", "n=1,c=1,h=4,w=4,k=1,r=1,s=1\n", "fp16", &l, err, sizeof err),
                CT_ERR_INVALID_ARG);
  ASSERT_EQ_INT(ct_problem_list_read(NULL, NULL, &l, err, sizeof err), CT_ERR_INVALID_ARG);
  /* A directory: the reason, not a bare "read error". */
  ASSERT_EQ_INT(ct_problem_list_read(dir, NULL, &l, err, sizeof err), CT_ERR_IO);
  ASSERT_TRUE(strstr(err, strerror(EISDIR)) != NULL);
}

/* A UTF-8 byte order mark before either form is skipped. */
static void test_bom(void) {
  ct_problem_list l;
  char err[512];
  ASSERT_EQ_INT(read_list("bom.json", "\xEF\xBB\xBF{\"problems\": [\"n=1,c=1,h=4,w=4,k=1,r=1,s=1\"]}",
                          NULL, &l, err, sizeof err), CT_OK);
  ASSERT_EQ_INT((int)l.n, 1);
  ct_problem_list_free(&l);
  ASSERT_EQ_INT(read_list("bom.txt", "\xEF\xBB\xBFn=1,c=1,h=4,w=4,k=1,r=1,s=1\nx n=2,c=1,h=4,w=4,k=1,r=1,s=1\n",
                          NULL, &l, err, sizeof err), CT_OK);
  ASSERT_EQ_INT((int)l.n, 2);
  ASSERT_EQ_STR(l.e[0].spec, "n=1,c=1,h=4,w=4,k=1,r=1,s=1,stride=1,pad=0,dil=1,bias=1,prec=tf32");
  ct_problem_list_free(&l);
}

int main(void) {
  snprintf(dir, sizeof dir, "/tmp/convtune-lists-XXXXXX");
  if (!mkdtemp(dir)) return 1;
  RUN_TEST(test_text);
  RUN_TEST(test_json);
  RUN_TEST(test_errors);
  RUN_TEST(test_bom);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
  TEST_EXIT();
}
