/* SPDX-License-Identifier: MIT */
/*
 * Must compile (tests/CMakeLists.txt, layer_systems_sees_below): the top
 * layer sees its own headers and those of every layer below. The control
 * for the two probes that must fail: their failure is the layer rule, not
 * a broken include path.
 */
#include "core/world_view.h"
#include "scheduler/sched.h"
#include "systems/builtin_internal.h"

int weft_layer_probe(void);
int weft_layer_probe(void) {
  return (int)sizeof(weft__sched_t) > 0 ? 0 : 1;
}
