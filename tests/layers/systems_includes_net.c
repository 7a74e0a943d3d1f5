/* SPDX-License-Identifier: MIT */
/*
 * Must not compile (tests/CMakeLists.txt, layer_systems_includes_net):
 * weft::net is a layer above systems, which cannot see its headers.
 */
#include "net/wire.h"

int weft_layer_probe(void);
int weft_layer_probe(void) {
  return 0;
}
