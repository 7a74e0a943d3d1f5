/* SPDX-License-Identifier: MIT */
/*
 * Must NOT compile (tests/CMakeLists.txt,
 * layer_scheduler_includes_core_world): a scheduler file including core's
 * private world header. Above core, the scheduler sees core/world_view.h
 * (the world's layout) but not core/world.h (core's internal functions).
 */
#include "core/world_view.h"
#include "core/world.h"

int weft_layer_probe(void);
int weft_layer_probe(void) {
  return 0;
}
