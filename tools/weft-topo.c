/* SPDX-License-Identifier: MIT */
/*
 * weft-topo: prints a machine's topology as weft sees it (the CPUs it may
 * use, each NUMA node's memory) and the placement plan a pool would use on
 * it (each group's memory included).
 *
 *   weft-topo                                  this machine (the CPUs this
 *                                              process may run on)
 *   weft-topo --synthetic "pack:2 numa:2 l3:1 core:8 pu:2"
 *   weft-topo --xml machine.xml                an hwloc XML export
 *   weft-topo --restrict 0-5 --workers 4 --pin pu --nodes 0,1
 *
 * Bad arguments print a message and exit with status 2.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <weft.h>

static void usage(FILE *f) {
  fprintf(f, "usage: weft-topo [--synthetic DESC | --xml FILE] "
             "[--restrict CPULIST] [--workers N] [--pin core|pu|none] "
             "[--nodes LIST] [--caller]\n");
}

static int bad(const char *what, const char *arg) {
  fprintf(stderr, "weft-topo: %s: '%s'\n", what, arg ? arg : "");
  usage(stderr);
  return 2;
}

/* Parses "0,2,3" into a node mask; false on anything else. */
static bool parse_nodes(const char *s, uint64_t *mask) {
  *mask = 0;
  while (*s) {
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (end == s || errno || v >= WEFT_TOPOLOGY_MAX_NODES)
      return false;
    *mask |= UINT64_C(1) << v;
    s = *end == ',' ? end + 1 : end;
    if (*end && *end != ',')
      return false;
  }
  return *mask != 0;
}

static bool parse_u32(const char *s, uint32_t *out) {
  char *end;
  errno = 0;
  unsigned long v = strtoul(s, &end, 10);
  if (!*s || *end || errno || v > 65536)
    return false;
  *out = (uint32_t)v;
  return true;
}

int main(int argc, char **argv) {
  const char *synthetic = NULL, *xml = NULL, *restrict_pus = NULL;
  weft_placement_config_t cfg = {0};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      usage(stdout);
      return 0;
    } else if (!strcmp(a, "--caller")) {
      cfg.caller_participates = true;
      continue;
    }
    if (!v)
      return bad("missing value for", a);
    i++;
    if (!strcmp(a, "--synthetic"))
      synthetic = v;
    else if (!strcmp(a, "--xml"))
      xml = v;
    else if (!strcmp(a, "--restrict"))
      restrict_pus = v;
    else if (!strcmp(a, "--workers")) {
      if (!parse_u32(v, &cfg.workers))
        return bad("bad worker count", v);
    } else if (!strcmp(a, "--pin")) {
      if (!strcmp(v, "core"))
        cfg.pin = WEFT_PIN_CORE;
      else if (!strcmp(v, "pu"))
        cfg.pin = WEFT_PIN_PU;
      else if (!strcmp(v, "none"))
        cfg.pin = WEFT_PIN_NONE;
      else
        return bad("bad pin policy", v);
    } else if (!strcmp(a, "--nodes")) {
      if (!parse_nodes(v, &cfg.node_mask))
        return bad("bad node list", v);
    } else {
      return bad("unknown option", a);
    }
  }
  if (synthetic && xml)
    return bad("--synthetic and --xml exclude each other", xml);
  weft_topology_t *topo;
  int rc = xml ? weft_topology_load_xml(xml, restrict_pus, &topo)
               : weft_topology_load(synthetic, restrict_pus, &topo);
  if (rc) {
    fprintf(stderr, "weft-topo: cannot load the topology: %s\n",
            weft_strerror(rc));
    return 2;
  }
  /* This machine's CPU quota caps a default pool (see cpu_limit in
   * weft/pool.h): plan what such a pool would start. */
  const double quota = synthetic || xml ? 0 : weft_topology_cpu_quota();
  uint32_t cap = (uint32_t)quota + ((double)(uint32_t)quota < quota);
  weft_topology_info_t info;
  weft_topology_info(topo, &info);
  if (quota > 0 && cfg.workers == 0 && cap < info.cores)
    cfg.workers = cap;
  weft_plan_t *plan;
  rc = weft_plan_compute(topo, &cfg, &plan);
  if (rc) {
    fprintf(stderr, "weft-topo: cannot plan: %s\n", weft_strerror(rc));
    weft_topology_destroy(topo);
    return 2;
  }
  int need = weft_plan_describe(topo, plan, NULL, 0);
  char *text = malloc((size_t)need + 1);
  if (text) {
    weft_plan_describe(topo, plan, text, (uint32_t)need + 1);
    fputs(text, stdout);
    if (quota > 0)
      printf("cpu quota: %.2f CPUs (cgroup): pools keep at most %u "
             "worker(s) awake\n",
             quota, cap);
    else if (!synthetic && !xml)
      printf("cpu quota: none (cgroup)\n");
  }
  free(text);
  weft_plan_destroy(plan);
  weft_topology_destroy(topo);
  return text ? 0 : 1;
}
