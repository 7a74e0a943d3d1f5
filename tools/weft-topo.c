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
 *   weft-topo --help                           what it all means
 *
 * Bad arguments print a message and exit with status 2.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <weft.h>

#include "weft_tools_version.h"

static void usage(FILE *f) {
  fprintf(f, "usage: weft-topo [--synthetic DESC | --xml FILE] "
             "[--restrict CPULIST]\n"
             "                 [--workers N] [--pin core|pu|none] "
             "[--nodes LIST] [--caller]\n"
             "       weft-topo --help | --version\n");
}

/* --help: what each option takes and what each output line means. */
static void help(void) {
  usage(stdout);
  fputs(
      "\n"
      "Prints a machine's topology as weft sees it and the placement plan a\n"
      "pool would use on it: which CPU each worker is pinned to, whom it\n"
      "steals from, and which NUMA memory each group's chunks come from.\n"
      "\n"
      "Which machine (default: this one, only the CPUs this process may\n"
      "run on: taskset, numactl, cgroup cpusets):\n"
      "  -s, --synthetic DESC  an imaginary machine in hwloc's synthetic\n"
      "                        syntax: levels from the top down, each\n"
      "                        'type:count' per parent, separated by spaces;\n"
      "                        types pack (package), numa, l3, l2, core, pu.\n"
      "                        \"pack:2 numa:2 l3:1 core:8 pu:2\" is 2\n"
      "                        packages x 2 NUMA nodes x 1 L3 x 8 cores x 2\n"
      "                        hyper-threads = 64 PUs (see hwloc's\n"
      "                        'Synthetic topologies' documentation)\n"
      "  -x, --xml FILE        another machine, from an hwloc XML export\n"
      "                        made there with 'lstopo --of xml FILE': plan\n"
      "                        a pool for a server without logging in to it\n"
      "  -r, --restrict LIST   keep only these OS CPU numbers (as the\n"
      "                        kernel numbers them, 'cpu' in the output):\n"
      "                        decimal numbers and inclusive ranges joined\n"
      "                        by commas, such as 0-5,8,10-11 (taskset -c's\n"
      "                        format)\n"
      "\n"
      "The plan (as weft_pool_create() would make it):\n"
      "  -w, --workers N       workers (default: one per core, capped by a\n"
      "                        cgroup CPU quota on this machine)\n"
      "  -p, --pin POLICY      core (default), pu (one hyper-thread each) or\n"
      "                        none (placed, not bound)\n"
      "  -n, --nodes LIST      only these NUMA nodes, as weft numbers them\n"
      "                        (the N of the 'node N' lines this tool\n"
      "                        prints, which may differ from the OS's\n"
      "                        'numa' numbers), comma-separated: 0,2\n"
      "  -c, --caller          the calling thread is worker 0\n"
      "  -h, --help            this text\n"
      "  -V, --version         weft's version (and git commit)\n"
      "\n"
      "Output:\n"
      "  topology: counts of packages, NUMA nodes, L3 groups, cores and PUs\n"
      "            (PU: a hardware thread), and whether it is this machine\n"
      "  cpus:     the OS CPU numbers kept, and the machine's when fewer\n"
      "  distances: the NUMA distance matrix, a row per node, rows\n"
      "            separated by '|' (10: local; larger: farther)\n"
      "  node N (package P): memory numa M (KIND, SIZE)\n"
      "            weft's NUMA node N and the OS NUMA node(s) M whose\n"
      "            memory it uses\n"
      "  plan: W worker(s), pin POLICY\n"
      "  worker K: pu P (cpu C) core . l3 . node . package .; steals from ..\n"
      "            worker K's place: logical PU P (OS CPU C), its core, L3,\n"
      "            node and package numbers (weft's, dense from 0), and the\n"
      "            workers it steals from, nearest first\n"
      "  group G (node N): workers; memory ...\n"
      "            the workers of one NUMA node and where their chunks live\n"
      "  cpu quota: this machine's cgroup CPU limit, if any\n"
      "\n"
      "Bad arguments print a message and exit with status 2.\n",
      stdout);
}

static void version(void) {
  printf("weft-topo (weft) %s\n", WEFT_TOOLS_VERSION);
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

/* Long options; each has a short form. */
static const struct option topo_options[] = {
    {"synthetic", required_argument, NULL, 's'},
    {"xml", required_argument, NULL, 'x'},
    {"restrict", required_argument, NULL, 'r'},
    {"workers", required_argument, NULL, 'w'},
    {"pin", required_argument, NULL, 'p'},
    {"nodes", required_argument, NULL, 'n'},
    {"caller", no_argument, NULL, 'c'},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'V'},
    {NULL, 0, NULL, 0}};

int main(int argc, char **argv) {
  const char *synthetic = NULL, *xml = NULL, *restrict_pus = NULL;
  weft_placement_config_t cfg = {0};
  opterr = 0; /* our messages, not getopt's */
  int c;
  while ((c = getopt_long(argc, argv, ":s:x:r:w:p:n:chV", topo_options,
                          NULL)) != -1) {
    const char *v = optarg;
    switch (c) {
    case 'h':
      help();
      return 0;
    case 'V':
      version();
      return 0;
    case 'c':
      cfg.caller_participates = true;
      break;
    case 's':
      synthetic = v;
      break;
    case 'x':
      xml = v;
      break;
    case 'r':
      restrict_pus = v;
      break;
    case 'w':
      if (!parse_u32(v, &cfg.workers))
        return bad("bad worker count", v);
      break;
    case 'p':
      if (!strcmp(v, "core"))
        cfg.pin = WEFT_PIN_CORE;
      else if (!strcmp(v, "pu"))
        cfg.pin = WEFT_PIN_PU;
      else if (!strcmp(v, "none"))
        cfg.pin = WEFT_PIN_NONE;
      else
        return bad("bad pin policy", v);
      break;
    case 'n':
      if (!parse_nodes(v, &cfg.node_mask))
        return bad("bad node list", v);
      break;
    case ':':
      return bad("missing value for", argv[optind - 1]);
    default: {
      /* An unknown short option is optopt (maybe inside "-cz"); a long
       * one is the word getopt just passed. */
      char opt[3] = {'-', (char)optopt, 0};
      return bad("unknown option", optopt ? opt : argv[optind - 1]);
    }
    }
  }
  if (optind < argc)
    return bad("unexpected argument", argv[optind]);
  if (synthetic && xml)
    return bad("--synthetic and --xml exclude each other", xml);
  char why[512];
  weft_topology_load_config_t lc = {.synthetic = synthetic,
                                    .xml = xml,
                                    .restrict_pus = restrict_pus,
                                    .error = why,
                                    .error_size = sizeof why};
  weft_topology_t *topo;
  int rc = weft_topology_load_ex(&lc, &topo);
  if (rc) {
    fprintf(stderr, "weft-topo: cannot load the topology: %s\n",
            why[0] ? why : weft_strerror(rc));
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
