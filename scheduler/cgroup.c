/* SPDX-License-Identifier: MIT */
/*
 * Reading the process's cgroup CPU quota (see cgroup.h).
 *
 * /proc/self/cgroup names the process's cgroup per hierarchy, relative to
 * the root of the hierarchy as the process's cgroup namespace sees it;
 * /proc/self/mountinfo says where each hierarchy is mounted and which of
 * its directories the mount shows (a container often sees its own cgroup
 * as the mount's root). The cgroup's directory is then the mount point
 * joined with the cgroup path less the mount's root, and each level up to
 * the mount point may set a quota; the smallest one binds.
 */
#include "scheduler/cgroup.h"

#include "weft/topology.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CG_PATH 4096
#define CG_LINE 8192

/* A hierarchy: where it is mounted, the cgroup directory that mount shows,
 * and the process's cgroup in it (all empty when unknown). */
typedef struct cg_hier_t {
  char mount[CG_PATH];
  char root[CG_PATH];
  char path[CG_PATH];
} cg_hier_t;

/* True when @p word is one of the comma-separated words of @p list. */
static bool has_word(const char *list, const char *word) {
  size_t n = strlen(word);
  for (const char *p = list; p && *p;) {
    const char *end = strchr(p, ',');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    if (len == n && strncmp(p, word, n) == 0)
      return true;
    p = end ? end + 1 : NULL;
  }
  return false;
}

static bool copy_str(char *dst, const char *src) {
  size_t n = strlen(src);
  if (n >= CG_PATH)
    return false;
  memcpy(dst, src, n + 1);
  return true;
}

/*
 * One mountinfo line: "id parent major:minor root mount-point options
 * [optional fields...] - fstype source super-options". Keeps the mount of
 * cgroup v2 in *v2 and that of the v1 hierarchy with the cpu controller
 * in *v1.
 */
static void parse_mount(char *line, cg_hier_t *v2, cg_hier_t *v1) {
  char *field[6], *save = NULL, *tok = strtok_r(line, " \n", &save);
  int n = 0;
  for (; tok && n < 6; tok = strtok_r(NULL, " \n", &save))
    field[n++] = tok;
  while (tok && strcmp(tok, "-") != 0)
    tok = strtok_r(NULL, " \n", &save);
  if (n < 6 || !tok)
    return;
  const char *fstype = strtok_r(NULL, " \n", &save);
  const char *source = strtok_r(NULL, " \n", &save);
  const char *opts = strtok_r(NULL, " \n", &save);
  if (!fstype || !source)
    return;
  cg_hier_t *h = NULL;
  if (strcmp(fstype, "cgroup2") == 0 && !v2->mount[0])
    h = v2;
  else if (strcmp(fstype, "cgroup") == 0 && opts && has_word(opts, "cpu") &&
           !v1->mount[0])
    h = v1;
  if (h && !(copy_str(h->root, field[3]) && copy_str(h->mount, field[4])))
    h->mount[0] = h->root[0] = '\0';
}

/* One /proc/self/cgroup line: "id:controllers:path" ("0::path" for v2). */
static void parse_cgroup(char *line, cg_hier_t *v2, cg_hier_t *v1) {
  char *c1 = strchr(line, ':');
  char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
  if (!c2)
    return;
  *c1 = *c2 = '\0';
  char *path = c2 + 1;
  path[strcspn(path, "\n")] = '\0';
  if (strcmp(line, "0") == 0 && c1[1] == '\0') {
    if (!copy_str(v2->path, path))
      v2->path[0] = '\0';
  } else if (has_word(c1 + 1, "cpu")) {
    if (!copy_str(v1->path, path))
      v1->path[0] = '\0';
  }
}

/* Reads every line of @p dir/@p name through @p fn; false if unreadable. */
static bool read_lines(const char *dir, const char *name,
                       void (*fn)(char *, cg_hier_t *, cg_hier_t *),
                       cg_hier_t *v2, cg_hier_t *v1) {
  char path[CG_PATH];
  if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path)
    return false;
  FILE *f = fopen(path, "r");
  if (!f)
    return false;
  char *line = malloc(CG_LINE);
  while (line && fgets(line, CG_LINE, f))
    fn(line, v2, v1);
  free(line);
  fclose(f);
  return line != NULL;
}

/* Reads the first line of @p dir/@p name into buf; false if unreadable. */
static bool read_first(const char *dir, const char *name, char *buf,
                       size_t size) {
  char path[CG_PATH + 64];
  if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path)
    return false;
  FILE *f = fopen(path, "r");
  if (!f)
    return false;
  bool ok = fgets(buf, (int)size, f) != NULL;
  fclose(f);
  return ok;
}

/* A strictly positive integer from the start of s (after blanks). */
static bool parse_count(const char *s, char **end, double *out) {
  char *e;
  long long v = strtoll(s, &e, 10);
  if (e == s || v <= 0)
    return false;
  *out = (double)v;
  if (end)
    *end = e;
  return true;
}

/* The quota one directory sets, in CPUs; 0 for none. */
static double level_quota(const char *dir, bool v2) {
  char buf[128];
  double quota, period;
  char *rest;
  if (v2) {
    /* cpu.max: "max 100000" or "150000 100000". */
    if (!read_first(dir, "cpu.max", buf, sizeof buf) ||
        !parse_count(buf, &rest, &quota) || !parse_count(rest, NULL, &period))
      return 0;
  } else {
    /* cpu.cfs_quota_us: -1 for none. */
    char pbuf[128];
    if (!read_first(dir, "cpu.cfs_quota_us", buf, sizeof buf) ||
        !read_first(dir, "cpu.cfs_period_us", pbuf, sizeof pbuf) ||
        !parse_count(buf, NULL, &quota) || !parse_count(pbuf, NULL, &period))
      return 0;
  }
  return quota / period;
}

/* The smallest quota from the process's cgroup up to the mount point. */
static double hier_limit(const cg_hier_t *h, bool v2) {
  if (!h->mount[0] || !h->path[0])
    return 0;
  /* The cgroup path less the mount's root ("/" shows the whole tree); a
   * cgroup outside what the mount shows cannot be read. */
  const char *rel = h->path;
  size_t rl = strlen(h->root);
  if (strcmp(h->root, "/") != 0) {
    if (strncmp(rel, h->root, rl) != 0 || (rel[rl] && rel[rl] != '/'))
      return 0;
    rel += rl;
  }
  char dir[2 * CG_PATH];
  int n = snprintf(dir, sizeof dir, "%s%s", h->mount, rel);
  if (n < 0 || n >= (int)sizeof dir)
    return 0;
  size_t base = strlen(h->mount);
  while (n > (int)base && dir[n - 1] == '/')
    dir[--n] = '\0';
  double best = 0;
  for (;;) {
    double q = level_quota(dir, v2);
    if (q > 0 && (best == 0 || q < best))
      best = q;
    char *slash = strrchr(dir, '/');
    if (strlen(dir) <= base || !slash || (size_t)(slash - dir) < base)
      break;
    *slash = '\0';
  }
  return best;
}

double weft__cgroup_cpu_limit(const char *proc) {
  if (!proc)
    proc = "/proc/self";
  /* Large buffers: off the stack of whatever thread creates a pool. */
  cg_hier_t *h = calloc(2, sizeof(*h));
  if (!h)
    return 0;
  cg_hier_t *v2 = &h[0], *v1 = &h[1];
  double limit = 0;
  if (read_lines(proc, "mountinfo", parse_mount, v2, v1) &&
      read_lines(proc, "cgroup", parse_cgroup, v2, v1)) {
    double a = hier_limit(v2, true), b = hier_limit(v1, false);
    limit = a > 0 && (b == 0 || a < b) ? a : b;
  }
  free(h);
  return limit;
}

double weft_topology_cpu_quota(void) {
  return weft__cgroup_cpu_limit(NULL);
}
