/* SPDX-License-Identifier: MIT */
/*
 * Runs a fuzz target over files: each argument is a file or a folder of
 * files (not recursive), each file one input. The target aborts on a
 * failed check, so the process's status is the test's. Linked into every
 * target when it is built without libFuzzer, so that the seed corpus and
 * every crash input kept under tests/fuzz/regress/ run in the normal
 * suite, under every sanitizer of the build.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

/* Reads a whole file into a fresh buffer (exactly its size, so that a
 * read past the input is a heap overflow ASan sees). */
static int run_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "fuzz_replay: cannot open %s\n", path);
    return 1;
  }
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *buf = malloc(n > 0 ? (size_t)n : 1);
  if (!buf || (n > 0 && fread(buf, 1, (size_t)n, f) != (size_t)n)) {
    fprintf(stderr, "fuzz_replay: cannot read %s\n", path);
    free(buf);
    fclose(f);
    return 1;
  }
  fclose(f);
  LLVMFuzzerTestOneInput(buf, (size_t)n);
  free(buf);
  return 0;
}

static int cmp_names(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Runs every regular file of a folder, in name order. */
static int run_dir(const char *path, unsigned *count) {
  DIR *d = opendir(path);
  if (!d)
    return run_file(path) == 0 ? (++*count, 0) : 1;
  char **names = NULL;
  size_t n = 0, cap = 0;
  int err = 0;
  for (struct dirent *e; (e = readdir(d));) {
    size_t nl = strlen(e->d_name);
    if (e->d_name[0] == '.' ||
        (nl > 3 && strcmp(e->d_name + nl - 3, ".md") == 0))
      continue; /* hidden files and notes are not inputs */
    if (n == cap) {
      cap = cap ? 2 * cap : 64;
      char **grown = realloc(names, cap * sizeof *names);
      if (!grown) {
        err = 1;
        break;
      }
      names = grown;
    }
    size_t len = strlen(path) + strlen(e->d_name) + 2;
    names[n] = malloc(len);
    if (!names[n]) {
      err = 1;
      break;
    }
    snprintf(names[n++], len, "%s/%s", path, e->d_name);
  }
  closedir(d);
  if (n) /* an empty folder has no list (qsort's base must not be NULL) */
    qsort(names, n, sizeof *names, cmp_names);
  for (size_t i = 0; i < n; i++) {
    struct stat st;
    if (!err && stat(names[i], &st) == 0 && S_ISREG(st.st_mode)) {
      err |= run_file(names[i]);
      ++*count;
    }
    free(names[i]);
  }
  free(names);
  return err;
}

int main(int argc, char **argv) {
  unsigned count = 0;
  int err = 0;
  for (int i = 1; i < argc; i++)
    err |= run_dir(argv[i], &count);
  /* The empty input too: every target must take it. */
  LLVMFuzzerTestOneInput((const uint8_t *)"", 0);
  printf("fuzz_replay: %u inputs passed\n", count + 1);
  return err;
}
