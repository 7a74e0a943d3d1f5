/* SPDX-License-Identifier: MIT */
/*
 * Must compile (tests/CMakeLists.txt, layer_net_includes_below): weft::net
 * sees its own headers and those of every layer below it. The control for
 * layer_systems_includes_net.
 */
#include "core/world_view.h"
#include "net/net_internal.h"
#include "scheduler/sched.h"
#include "systems/builtin_internal.h"

int weft_layer_probe(void);
int weft_layer_probe(void) {
  return (int)sizeof(weft__sched_t) > 0 && sizeof(weft__net_session) > 0 ? 0
                                                                         : 1;
}
