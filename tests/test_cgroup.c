/* SPDX-License-Identifier: MIT */
/*
 * The cgroup CPU quota reader (scheduler/cgroup.c), on fixture trees: a
 * /proc directory of its own (cgroup, mountinfo) whose mountinfo names
 * mount points inside a temporary directory, as cgroup v2, v1 and both
 * (hybrid) lay them out, inside and outside a container's namespace.
 * Then the pool's use of the limit: a CPU limit caps the default worker
 * count and the workers awake at once.
 */
#define _DEFAULT_SOURCE /* mkdtemp */
#include "support/weft_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "scheduler/cgroup.h"

typedef struct fixture_t {
  char root[64]; /* the temporary directory */
  char proc[128];
} fixture_t;

/* Writes text to root/rel, making the directories on the way. */
static void put(const fixture_t *f, const char *rel, const char *text) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", f->root, rel);
  for (char *s = path + strlen(f->root) + 1; (s = strchr(s, '/')); s++) {
    *s = '\0';
    (void)mkdir(path, 0700);
    *s = '/';
  }
  FILE *fp = fopen(path, "w");
  assert_non_null(fp);
  fputs(text, fp);
  assert_int_equal(fclose(fp), 0);
}

static int setup(void **state) {
  fixture_t *f = calloc(1, sizeof *f);
  assert_non_null(f);
  snprintf(f->root, sizeof f->root, "/tmp/weft-cgroup-XXXXXX");
  assert_non_null(mkdtemp(f->root));
  snprintf(f->proc, sizeof f->proc, "%s/proc", f->root);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture_t *f = *state;
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->root);
  assert_int_equal(system(cmd), 0);
  free(f);
  return 0;
}

/* A mountinfo line for a cgroup v2 mount at root/mnt showing `shows`. */
static void mount_v2(const fixture_t *f, const char *mnt, const char *shows) {
  char line[512];
  snprintf(line, sizeof line,
           "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
           "30 22 0:26 %s %s/%s rw,nosuid,nodev shared:4 - cgroup2 cgroup2 "
           "rw,nsdelegate\n",
           shows, f->root, mnt);
  put(f, "proc/mountinfo", line);
}

static void test_cgroup_v2_smallest_quota_on_the_path(void **state) {
  fixture_t *f = *state;
  mount_v2(f, "cg", "/");
  put(f, "proc/cgroup", "0::/user.slice/job\n");
  put(f, "cg/user.slice/job/cpu.max", "max 100000\n");
  put(f, "cg/user.slice/cpu.max", "150000 100000\n");
  put(f, "cg/cpu.max", "400000 100000\n");
  assert_float_equal(weft__cgroup_cpu_limit(f->proc), 1.5, 1e-9);
  /* A tighter child wins over its parent. */
  put(f, "cg/user.slice/job/cpu.max", "50000 100000\n");
  assert_float_equal(weft__cgroup_cpu_limit(f->proc), 0.5, 1e-9);
}

static void test_cgroup_v2_no_quota_is_no_limit(void **state) {
  fixture_t *f = *state;
  mount_v2(f, "cg", "/");
  put(f, "proc/cgroup", "0::/a\n");
  put(f, "cg/a/cpu.max", "max 100000\n");
  assert_float_equal(weft__cgroup_cpu_limit(f->proc), 0.0, 0);
}

/* In a container's cgroup namespace the mount shows the container's own
 * cgroup, and /proc/self/cgroup names it "/" or by its host path. */
static void test_cgroup_v2_inside_a_container(void **state) {
  fixture_t *f = *state;
  mount_v2(f, "cg", "/");
  put(f, "proc/cgroup", "0::/\n");
  put(f, "cg/cpu.max", "200000 100000\n");
  assert_float_equal(weft__cgroup_cpu_limit(f->proc), 2.0, 1e-9);
  mount_v2(f, "cg", "/docker/abc");
  put(f, "proc/cgroup", "0::/docker/abc\n");
  assert_float_equal(weft__cgroup_cpu_limit(f->proc), 2.0, 1e-9);
  /* A cgroup the mount does not show cannot be read: no limit known. */
  put(f, "proc/cgroup", "0::/elsewhere\n");
  assert_float_equal(weft__cgroup_cpu_limit(f->proc), 0.0, 0);
}

static void test_cgroup_v1_cfs_quota(void **state) {
  fixture_t *f = *state;
  char line[512];
  snprintf(line, sizeof line,
           "40 22 0:35 / %s/cpu,cpuacct rw,nosuid shared:9 - cgroup cgroup "
           "rw,cpu,cpuacct\n"
           "41 22 0:36 / %s/memory rw shared:10 - cgroup cgroup rw,memory\n",
           f->root, f->root);
  put(f, "proc/mountinfo", line);
  put(f, "proc/cgroup", "5:memory:/job\n4:cpu,cpuacct:/job\n");
  put(f, "cpu,cpuacct/cpu.cfs_quota_us", "-1\n");
  put(f, "cpu,cpuacct/cpu.cfs_period_us", "100000\n");
  put(f, "cpu,cpuacct/job/cpu.cfs_quota_us", "250000\n");
  put(f, "cpu,cpuacct/job/cpu.cfs_period_us", "100000\n");
  put(f, "memory/job/cpu.cfs_quota_us", "1000\n"); /* not the cpu hierarchy */
  assert_float_equal(weft__cgroup_cpu_limit(f->proc), 2.5, 1e-9);
  put(f, "cpu,cpuacct/job/cpu.cfs_quota_us", "-1\n");
  assert_float_equal(weft__cgroup_cpu_limit(f->proc), 0.0, 0);
}

/* Hybrid: v1 controllers and a v2 tree; the smaller quota binds. */
static void test_cgroup_hybrid_takes_the_smaller(void **state) {
  fixture_t *f = *state;
  char line[768];
  snprintf(line, sizeof line,
           "30 22 0:26 / %s/unified rw - cgroup2 cgroup2 rw\n"
           "40 22 0:35 / %s/cpu rw - cgroup cgroup rw,cpu\n",
           f->root, f->root);
  put(f, "proc/mountinfo", line);
  put(f, "proc/cgroup", "1:cpu:/j\n0::/j\n");
  put(f, "cpu/j/cpu.cfs_quota_us", "300000\n");
  put(f, "cpu/j/cpu.cfs_period_us", "100000\n");
  put(f, "unified/j/cpu.max", "120000 100000\n");
  assert_float_equal(weft__cgroup_cpu_limit(f->proc), 1.2, 1e-9);
}

/* Missing and malformed files mean no known limit, never a crash. */
static void test_cgroup_bad_files_are_no_limit(void **state) {
  fixture_t *f = *state;
  char missing[160];
  snprintf(missing, sizeof missing, "%s/no-such-proc", f->root);
  assert_float_equal(weft__cgroup_cpu_limit(missing), 0.0, 0);
  mount_v2(f, "cg", "/");
  assert_float_equal(weft__cgroup_cpu_limit(f->proc), 0.0, 0); /* no cgroup */
  static const char *const bad[] = {
      "",           "garbage\n",   "100000\n",  "0 100000\n",    "-5 100000\n",
      "150000 0\n", "150000 -1\n", "max max\n", "12abc 100000\n"};
  put(f, "proc/cgroup", "0::/x\n");
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    put(f, "cg/x/cpu.max", bad[i]);
    assert_float_equal(weft__cgroup_cpu_limit(f->proc), 0.0, 0);
  }
  put(f, "proc/cgroup", "not a cgroup line\n::\n0:\n");
  assert_float_equal(weft__cgroup_cpu_limit(f->proc), 0.0, 0);
  put(f, "proc/mountinfo", "1 2\n- - -\n30 22 0:26 / x - cgroup2\n");
  put(f, "proc/cgroup", "0::/x\n");
  assert_float_equal(weft__cgroup_cpu_limit(f->proc), 0.0, 0);
  /* This process's own cgroup: whatever it says, a number >= 0, the same
   * through the public call. */
  assert_true(weft__cgroup_cpu_limit(NULL) >= 0.0);
  assert_float_equal(weft_topology_cpu_quota(), weft__cgroup_cpu_limit(NULL),
                     0);
}

/* ---- the pool's use of the limit ------------------------------------------
 */

static void test_cgroup_limit_caps_default_workers(void **state) {
  (void)state;
  weft_pool_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.synthetic = "pack:1 core:4 pu:1"; /* four cores */
  cfg.cpu_limit = 2;
  weft_pool_t *p = NULL;
  assert_int_equal(weft_pool_create(&cfg, &p), WEFT_OK);
  assert_int_equal(weft_pool_workers(p), 2);
  weft_pool_stats_t st;
  assert_int_equal(weft_pool_stats(p, &st), WEFT_OK);
  assert_int_equal(st.cpus, 2);
  weft_pool_destroy(p);
  /* Explicit workers stay; the limit then says how many are awake. */
  cfg.placement.workers = 4;
  cfg.cpu_limit = 1;
  assert_int_equal(weft_pool_create(&cfg, &p), WEFT_OK);
  assert_int_equal(weft_pool_workers(p), 4);
  assert_int_equal(weft_pool_stats(p, &st), WEFT_OK);
  assert_int_equal(st.cpus, 1);
  weft_pool_destroy(p);
  /* No limit on a foreign machine unless asked for. */
  cfg.placement.workers = 0;
  cfg.cpu_limit = 0;
  assert_int_equal(weft_pool_create(&cfg, &p), WEFT_OK);
  assert_int_equal(weft_pool_workers(p), 4);
  assert_int_equal(weft_pool_stats(p, &st), WEFT_OK);
  assert_int_equal(st.cpus, 0);
  weft_pool_destroy(p);
  cfg.cpu_limit = WEFT_POOL_NO_CPU_LIMIT;
  assert_int_equal(weft_pool_create(&cfg, &p), WEFT_OK);
  assert_int_equal(weft_pool_workers(p), 4);
  weft_pool_destroy(p);
}

/* Run by tests/run_cgroup.sh inside a cgroup with a quota, which it names
 * in WEFT_TEST_EXPECT_CPU_LIMIT: this process's own limit must be that,
 * and a default pool must keep to it. Skipped when run otherwise. */
static void test_cgroup_this_process_quota(void **state) {
  (void)state;
  const char *want = getenv("WEFT_TEST_EXPECT_CPU_LIMIT");
  if (!want || getenv("HWLOC_XMLFILE") || getenv("HWLOC_SYNTHETIC"))
    skip();
  double q = strtod(want, NULL);
  assert_float_equal(weft__cgroup_cpu_limit(NULL), q, 1e-9);
  assert_float_equal(weft_topology_cpu_quota(), q, 1e-9);
  uint32_t cap = (uint32_t)q + ((double)(uint32_t)q < q);
  weft_pool_t *p = NULL;
  assert_int_equal(weft_pool_create(NULL, &p), WEFT_OK);
  weft_pool_stats_t st;
  assert_int_equal(weft_pool_stats(p, &st), WEFT_OK);
  assert_true(weft_pool_workers(p) <= cap);
  assert_true(st.cpus <= cap);
  weft_pool_destroy(p);
  weft_pool_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.placement.workers = 4 * cap;
  assert_int_equal(weft_pool_create(&cfg, &p), WEFT_OK);
  assert_int_equal(weft_pool_stats(p, &st), WEFT_OK);
  assert_int_equal(st.cpus, cap);
  weft_pool_destroy(p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_cgroup_v2_smallest_quota_on_the_path,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(test_cgroup_v2_no_quota_is_no_limit,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(test_cgroup_v2_inside_a_container, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_cgroup_v1_cfs_quota, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_cgroup_hybrid_takes_the_smaller,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(test_cgroup_bad_files_are_no_limit, setup,
                                      teardown),
      cmocka_unit_test(test_cgroup_limit_caps_default_workers),
      cmocka_unit_test(test_cgroup_this_process_quota),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
