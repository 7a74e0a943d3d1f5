/* SPDX-License-Identifier: MIT */
/*
 * Must NOT compile (tests/CMakeLists.txt, layer_systems_includes_mpi): a
 * systems file including an mpi header. weft::mpi is a layer above the
 * systems (cmake/WeftLayers.cmake), so the systems' path lacks mpi/.
 */
#include "systems/builtin_internal.h"
#include "mpi/domain.h"

int weft_layer_probe(void);
int weft_layer_probe(void) {
  return 0;
}
