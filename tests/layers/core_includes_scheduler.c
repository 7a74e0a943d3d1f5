/* SPDX-License-Identifier: MIT */
/*
 * Must NOT compile (tests/CMakeLists.txt, layer_core_no_scheduler): a core
 * file including a scheduler header. Core's include path holds core's
 * headers only (cmake/WeftLayers.cmake).
 */
#include "core/world.h"
#include "scheduler/pool_internal.h"

int weft_layer_probe(void);
int weft_layer_probe(void) {
  return 0;
}
