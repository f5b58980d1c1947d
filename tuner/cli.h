/*
** cli.h — what the `convtune` command line's files share: the parsed
** options, the helpers every command uses (problem, database path,
** printing trials, JSON) and the commands themselves.
*/
#ifndef CT_CLI_H
#define CT_CLI_H

#include <stdint.h>
#include <stdio.h>

#include "ct_cache.h"
#include "ct_tune.h"
#include "json.h"
#include "problems.h"

#define CT_CLI_EXIT_USAGE 2 /* exit status of a usage error */

/* The options of a command line, as parsed (cli.c): only those the
** command takes are ever set; zero means not given. */
typedef struct ct_cli {
  const char *problem;     /* --problem */
  const char *problems;    /* --problems FILE */
  int shard_i, shard_n;    /* --shard I/N (shard_n 0: not given) */
  int weighted;            /* --weighted */
  int level1;              /* --level1 N (0: not given) */
  const char *devices;     /* --devices LIST|all */
  const char *precision;   /* --precision */
  const char *db;          /* --db */
  const char *arch;        /* --arch */
  int device;              /* --device */
  int threads;             /* --threads */
  int trials;              /* --trials (0: the command's default) */
  int final_trials;        /* --final-trials */
  int finalists;           /* --finalists */
  uint64_t seed;           /* --seed */
  long max_variants;       /* --max-variants */
  double budget;           /* --budget seconds */
  double watchdog;         /* --watchdog seconds (0: default) */
  const char *families;    /* --families */
  const char *out;         /* --out */
  int fresh, no_isolate;   /* --fresh, --no-isolate */
  int no_priors;           /* --no-priors */
  int cubins;              /* --cubins */
  int packed;              /* --packed */
  int force;               /* --force */
  int json, quiet, help;
  const char *args[2];     /* positional arguments, as many as the command
                              takes (cli.c checks how many) */
  int n_args;
} ct_cli;

/* ---------------------------------------------------------------------- */
/* Helpers (cli_util.c)                                                    */

/* Parses an integer in [lo, hi] given to option opt; 0, or -1 after
** saying why on stderr. */
int ct_cli_parse_int(const char *opt, const char *text, long lo, long hi,
                     long *out);
/* The problem from --problem and --precision; 0 or CT_CLI_EXIT_USAGE. */
int ct_cli_problem(const ct_cli *c, ct_problem *p);
#define CT_CLI_DB_READ 0  /* the command only reads the database */
#define CT_CLI_DB_WRITE 1 /* it writes (and may create) it */

/* The database path into buf (len bytes): --db, else the default
** (ct_cache_default_path), checked for what the command (cmd, for
** messages) does with it (mode): a directory, a file that is not a
** regular one, and an empty --db are refused; for CT_CLI_DB_WRITE a
** read-only file, a directory where SQLite cannot make the -wal and -shm
** files, and a directory that does not exist are too, except the default
** path's, which is made.  Nothing else is ever created.  Each refusal says
** what is wrong and what to do on stderr.  Returns 0, 1, or
** CT_CLI_EXIT_USAGE (an empty --db). */
int ct_cli_db(const ct_cli *c, const char *cmd, int mode, char *buf,
              size_t len);
/* one when n is 1, else many: "1 family", "2 families". */
const char *ct_cli_plural(size_t n, const char *one, const char *many);
/* Says on stderr what works on a machine without a GPU; for tune and
** check when no driver or no device is found. */
void ct_cli_no_gpu_hint(const char *cmd);

/* Opens the database read-only (ct_cli_db, CT_CLI_DB_READ); a missing
** file is *cache = NULL.  Returns 0, or the exit status after saying why;
** cmd names the command in messages. */
int ct_cli_db_open(const ct_cli *c, const char *cmd, char *path, size_t len,
                   ct_cache **cache);
/* As ct_cli_db_open, for commands that need the file: a missing one is an
** error. */
int ct_cli_db_open_existing(const ct_cli *c, const char *cmd, char *path,
                            size_t len, ct_cache **cache);

/* ---------------------------------------------------------------------- */
/* Output files (cli_out.c)                                                */

/* A kind of file a command writes: how to tell one (it starts with one of
** the prefixes) and its name in messages. */
typedef struct ct_cli_out_kind {
  const char *name;       /* "an SVG file" */
  const char *prefix[2];  /* how such a file starts; NULL: unused */
} ct_cli_out_kind;

/* An output being written: the temporary file, or stdout. */
typedef struct ct_cli_out {
  FILE *f;                /* write here */
  char path[4096];        /* the target (a link's target, resolved) */
  char tmp[4200];         /* the temporary file beside it; "" for stdout */
  unsigned mode;          /* the permissions it gets */
} ct_cli_out;

/* Opens the output of command cmd: path NULL or "-" is stdout; else a
** temporary file beside path that ct_cli_out_close renames over it.
** Refuses (after saying why and what to do on stderr): path the database
** db (may be NULL) or one of its -wal / -shm / -journal files, compared
** by identity (the same inode, or for a file not made yet the same name in
** the same directory), or stdout redirected to one of them; a directory or
** another file that is not a regular one; an existing non-empty file that
** is not of kind, unless force.  Returns 0 (o->f open), or 1. */
int ct_cli_out_open(const char *cmd, const char *path, const char *db,
                    const ct_cli_out_kind *kind, int force, ct_cli_out *o);

/* Ends the output: with ok, flushes, syncs and closes the temporary file,
** checking every step, and renames it over the target; without ok (the
** command failed), or when a step fails, removes it and leaves the target
** as it was.  Returns 0 when ok and everything was written, else 1 (a
** failure said on stderr). */
int ct_cli_out_close(const char *cmd, ct_cli_out *o, int ok);

/* 1 when path is the database db or one of its files (by identity, as
** ct_cli_out_open compares); which gets the file's name. */
int ct_cli_is_database_file(const char *path, const char *db, char *which,
                            size_t len);

/* ---------------------------------------------------------------------- */
/* JSON and text                                                            */

/* A trial as a JSON object. */
void ct_cli_json_trial(ct_json *j, const ct_cache_trial *t);
/* The header of the trial table, and one trial's row (mark after the
** variant's name; its message below a failure's), on stdout. */
void ct_cli_print_trial_header(void);
void ct_cli_print_trial(const ct_cache_trial *t, const char *mark);

/* s as the text listings print it, into buf (len bytes, s's size will do):
** a line break as a space, any other control character but the tab as
** '?' (a database's text may come from an imported file, and a terminal
** acts on an escape).  Returns buf. */
const char *ct_cli_shown(const char *s, char *buf, size_t len);

/* ---------------------------------------------------------------------- */
/* The commands: each returns the process's exit status                    */

/* cli.c has parsed the options and the positional arguments (their count
** is within the command's range) and handled --help. */

extern const char ct_cli_usage_tune[], ct_cli_usage_check[],
    ct_cli_usage_space[], ct_cli_usage_db[], ct_cli_usage_report[],
    ct_cli_usage_kernelbench[];

int ct_cli_tune(const ct_cli *c);          /* cmd_tune.c */
int ct_cli_check(const ct_cli *c);         /* cmd_tune.c */
int ct_cli_space(const ct_cli *c);         /* cmd_tune.c */
int ct_cli_db_list(const ct_cli *c);       /* cmd_db.c */
int ct_cli_db_show(const ct_cli *c);
int ct_cli_db_check(const ct_cli *c);
int ct_cli_db_export(const ct_cli *c);
int ct_cli_db_import(const ct_cli *c);
int ct_cli_db_merge(const ct_cli *c);
int ct_cli_report(const ct_cli *c);        /* cmd_report.c */
int ct_cli_kernelbench(const ct_cli *c);   /* cmd_kernelbench.c */

#endif /* CT_CLI_H */
