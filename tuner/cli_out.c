/*
** cli_out.c — the files the commands write (report's SVG, db export's
** text): never over the database they read, never half-written, never over
** a file of another kind without --force (cli.h, ct_cli_out_open).
**
** The output goes to a temporary file beside the target (same directory,
** so same file system) and is renamed over the target only once every
** byte is written, flushed and synced: a failed or interrupted write
** leaves the old file as it was.
*/
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

/* The files of a database: the file, its WAL, its WAL index, its rollback
** journal.  SQLite reads each beside the database by its name. */
static const char *const out_db_suffixes[] = {"", "-wal", "-shm", "-journal"};

/* Copies path's directory part into dir (len bytes). */
static void out_dirname(const char *path, char *dir, size_t len) {
  char buf[4200];
  snprintf(buf, sizeof buf, "%s", path);
  snprintf(dir, len, "%s", dirname(buf));
}

/* Copies path's last component into base (len bytes). */
static void out_basename(const char *path, char *base, size_t len) {
  char buf[4200];
  snprintf(buf, sizeof buf, "%s", path);
  snprintf(base, len, "%s", basename(buf));
}

/* 1 when a and b name the same file: the same inode when both exist, else
** the same name in the same directory (the directory compared by inode),
** so that a file not made yet (a database's -wal) is matched too. */
static int out_same_file(const char *a, const char *b) {
  struct stat sa, sb;
  int ea = stat(a, &sa) == 0, eb = stat(b, &sb) == 0;
  if (ea && eb) return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
  if (ea != eb) return 0;
  char da[4200], db[4200], na[1024], nb[1024];
  out_dirname(a, da, sizeof da);
  out_dirname(b, db, sizeof db);
  out_basename(a, na, sizeof na);
  out_basename(b, nb, sizeof nb);
  if (strcmp(na, nb) != 0 || stat(da, &sa) != 0 || stat(db, &sb) != 0) return 0;
  return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

int ct_cli_is_database_file(const char *path, const char *db, char *which,
                            size_t len) {
  for (size_t i = 0; i < sizeof out_db_suffixes / sizeof out_db_suffixes[0]; i++) {
    char name[4200];
    snprintf(name, sizeof name, "%s%s", db, out_db_suffixes[i]);
    if (out_same_file(path, name)) {
      snprintf(which, len, "%s", name);
      return 1;
    }
  }
  return 0;
}

/* 1 when the open file fd is the database or one of its files. */
static int out_fd_is_database(int fd, const char *db) {
  struct stat so, sd;
  if (fstat(fd, &so) != 0 || !S_ISREG(so.st_mode)) return 0;
  for (size_t i = 0; i < sizeof out_db_suffixes / sizeof out_db_suffixes[0]; i++) {
    char name[4200];
    snprintf(name, sizeof name, "%s%s", db, out_db_suffixes[i]);
    if (stat(name, &sd) == 0 && sd.st_dev == so.st_dev && sd.st_ino == so.st_ino)
      return 1;
  }
  return 0;
}

/* 1 when the file at path starts as a file of kind does. */
static int out_of_kind(const char *path, const ct_cli_out_kind *kind) {
  char head[1024];
  FILE *f = fopen(path, "rb");
  if (f == NULL) return 0;
  size_t n = fread(head, 1, sizeof head - 1, f);
  fclose(f);
  head[n] = '\0';
  for (int i = 0; i < 2 && kind->prefix[i]; i++)
    if (strncmp(head, kind->prefix[i], strlen(kind->prefix[i])) == 0) return 1;
  return 0;
}

int ct_cli_out_open(const char *cmd, const char *path, const char *db,
                    const ct_cli_out_kind *kind, int force, ct_cli_out *o) {
  struct stat st;
  char which[4200];
  memset(o, 0, sizeof *o);
  if (path == NULL || strcmp(path, "-") == 0) {
    if (db && out_fd_is_database(STDOUT_FILENO, db)) {
      fprintf(stderr, "convtune %s: the standard output is the database %s: "
                      "writing %s there would destroy it; use --out FILE\n",
              cmd, db, kind->name);
      return 1;
    }
    o->f = stdout;
    snprintf(o->path, sizeof o->path, "the standard output");
    return 0;
  }
  if (path[0] == '\0') {
    fprintf(stderr, "convtune %s: --out is empty: give a file name, or \"-\" "
                    "for the standard output\n", cmd);
    return 1;
  }
  if (db && ct_cli_is_database_file(path, db, which, sizeof which)) {
    fprintf(stderr, "convtune %s: %s is the database%s %s; writing %s there "
                    "would destroy it: choose another --out\n",
            cmd, path, strcmp(which, db) ? " file" : "", which, kind->name);
    return 1;
  }
  /* The target: path itself, or the file a symbolic link at path names
  ** (the rename replaces that file, never the link). */
  snprintf(o->path, sizeof o->path, "%s", path);
  if (lstat(path, &st) == 0) {
    if (S_ISLNK(st.st_mode)) {
      char *real = realpath(path, NULL);
      if (real == NULL) {
        fprintf(stderr, "convtune %s: %s is a symbolic link to nothing: "
                        "choose another --out\n", cmd, path);
        return 1;
      }
      snprintf(o->path, sizeof o->path, "%s", real);
      free(real);
      if (stat(o->path, &st) != 0) st.st_mode = 0;
    }
    if (S_ISDIR(st.st_mode)) {
      fprintf(stderr, "convtune %s: %s is a directory: --out wants a file name\n",
              cmd, path);
      return 1;
    }
    if (!S_ISREG(st.st_mode)) {
      fprintf(stderr, "convtune %s: %s is not a regular file: --out wants a "
                      "file name (\"-\": the standard output)\n", cmd, path);
      return 1;
    }
    if (st.st_size > 0 && !force && !out_of_kind(o->path, kind)) {
      fprintf(stderr, "convtune %s: %s exists and is not %s: not writing over "
                      "it; pass --force to replace it\n", cmd, path, kind->name);
      return 1;
    }
    o->mode = st.st_mode & 07777;
  } else if (errno != ENOENT) {
    fprintf(stderr, "convtune %s: cannot write %s: %s\n", cmd, path, strerror(errno));
    return 1;
  } else {
    mode_t mask = umask(0);
    umask(mask);
    o->mode = 0666 & ~mask;
  }
  char dir[4200], base[1024];
  out_dirname(o->path, dir, sizeof dir);
  out_basename(o->path, base, sizeof base);
  if ((size_t)snprintf(o->tmp, sizeof o->tmp, "%s/.%s.XXXXXX", dir, base) >= sizeof o->tmp) {
    fprintf(stderr, "convtune %s: %s: the name is too long\n", cmd, path);
    return 1;
  }
  int fd = mkstemp(o->tmp);
  if (fd < 0) {
    fprintf(stderr, "convtune %s: cannot write %s: cannot make a file in %s: %s\n",
            cmd, path, dir, strerror(errno));
    o->tmp[0] = '\0';
    return 1;
  }
  if (fchmod(fd, o->mode) != 0 || (o->f = fdopen(fd, "w")) == NULL) {
    fprintf(stderr, "convtune %s: cannot write %s: %s\n", cmd, o->tmp, strerror(errno));
    close(fd);
    unlink(o->tmp);
    o->tmp[0] = '\0';
    return 1;
  }
  return 0;
}

int ct_cli_out_close(const char *cmd, ct_cli_out *o, int ok) {
  if (o->f == NULL) return ok ? 0 : 1;
  if (o->f == stdout) {
    o->f = NULL;
    if (ok && (fflush(stdout) != 0 || ferror(stdout))) {
      fprintf(stderr, "convtune %s: cannot write the standard output: %s\n", cmd,
              strerror(errno));
      clearerr(stdout); /* said once: main need not say it again */
      return 1;
    }
    return ok ? 0 : 1;
  }
  int failed = ferror(o->f) != 0, e = 0;
  if (fflush(o->f) != 0) failed = 1, e = errno;
  if (!failed && fsync(fileno(o->f)) != 0 && errno != EINVAL) failed = 1, e = errno;
  if (fclose(o->f) != 0 && !failed) failed = 1, e = errno;
  o->f = NULL;
  if (ok && failed)
    fprintf(stderr, "convtune %s: cannot write %s: %s (the file is left as it was)\n",
            cmd, o->path, e ? strerror(e) : "a write failed");
  if (ok && !failed && rename(o->tmp, o->path) != 0) {
    fprintf(stderr, "convtune %s: cannot replace %s: %s\n", cmd, o->path,
            strerror(errno));
    failed = 1;
  }
  if (!ok || failed) unlink(o->tmp);
  o->tmp[0] = '\0';
  return ok && !failed ? 0 : 1;
}
