/* SPDX-License-Identifier: MIT */
/*
 * Must NOT compile (tests/CMakeLists.txt, layer_scheduler_no_systems): a
 * scheduler file including a systems header. The scheduler's include path
 * holds core's and its own headers only (cmake/WeftLayers.cmake).
 */
#include "scheduler/sched.h"
#include "systems/builtin_internal.h"

int weft_layer_probe(void);
int weft_layer_probe(void) {
  return 0;
}
