/* SPDX-License-Identifier: MIT */
/*
 * Must compile (tests/CMakeLists.txt, layer_mpi_includes_below): the mpi
 * layer sees its own headers and those of every layer below (core's
 * public-to-the-layers ones). The control for layer_systems_includes_mpi.
 */
#include "core/world_view.h"
#include "mpi/domain.h"
#include "mpi/keymap.h"
#include "scheduler/sched.h"
#include "systems/builtin_internal.h"

int weft_layer_probe(void);
int weft_layer_probe(void) {
  weft__domain_t d = {0};
  return (int)sizeof(weft__sched_t) > 0 && d.ranks == 0 ? 0 : 1;
}
