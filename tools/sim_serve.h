/* SPDX-License-Identifier: MIT */
/*
 * weft-sim --serve: runs a scenario and serves it to weft::net clients
 * (weft-client, a browser) over WebSocket.
 */
#ifndef WEFT_TOOLS_SIM_SERVE_H
#define WEFT_TOOLS_SIM_SERVE_H

#include <stdbool.h>
#include <stdint.h>

#include "sim_scenarios.h"

/* The --serve options; all zero: not serving. */
typedef struct sim_serve_opts_t {
  bool on;               /* --serve given */
  uint16_t port;         /* --serve PORT (0: a free port, printed) */
  uint32_t ticks;        /* --serve-ticks: stop after N ticks (0: never) */
  double seconds;        /* --serve-seconds: stop after S seconds (0) */
  uint32_t max_sessions; /* --serve-max-sessions (0: 64) */
  uint32_t idle_s;       /* --serve-idle: idle timeout seconds (0: 10) */
  const char *web;       /* --serve-web: the page's folder (NULL: built-in) */
  const char *bind;      /* --serve-bind: the address (NULL: 127.0.0.1) */
} sim_serve_opts_t;

/* Parses the value of --serve* option @p name (without "--") into @p o.
 * Returns NULL, or why the value is bad. */
const char *sim_serve_option(const char *name, const char *val,
                             sim_serve_opts_t *o);

/* Runs the built scene at 60 ticks a second while serving it, until the
 * bounds in @p o or SIGINT/SIGTERM. Prints the port first ("serving on
 * HOST:PORT") and the counters at the end. Returns the exit status. */
int sim_serve_run(const sim_serve_opts_t *o, sim_scene_t *scene, double dt);

#endif /* WEFT_TOOLS_SIM_SERVE_H */
