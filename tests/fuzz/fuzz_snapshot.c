/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the snapshot loader (weft_snapshot_load_memory()):
 * one world built as weft-sim's arena scenario (so that snapshots written
 * by weft-sim, the seed corpus, name components and relations it knows),
 * and every input loaded into it. A load must return 0 or a negative code
 * and never crash, leak or read out of bounds (ASan, UBSan); a refused
 * input must leave the digest as it was.
 *
 * Built by -DWEFT_FUZZ=ON with clang (tools/fuzz.sh), which also defines
 * FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION: the loader then ignores
 * section checksums, so the fuzzer reaches the checks behind them.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <weft.h>

#include "sim_scenarios.h"

static weft_world_t *world;
static sim_scene_t scene;

static void setup(void) {
  weft_world_config_t wc = {.world_tag = 1};
  if (weft_world_create(&wc, &world) ||
      sim_scene_build(&scene, world, SIM_ARENA, 64, 1))
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!world)
    setup();
  uint64_t before = weft_world_digest(world);
  weft_snapshot_error_t err;
  int rc = weft_snapshot_load_memory(world, data, size, &err);
  if (rc > 0 ||
      (rc < 0 && (err.code != rc || weft_world_digest(world) != before)))
    abort();
  return 0;
}
