/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the per-entity codec (weft/entity_codec.h): the
 * input's first byte says whether the rest is a record to decode as a new
 * entity, a record to decode into an existing one, or a table to bind
 * (entity_codec_world.h). Whatever the bytes, a call returns 0 or a
 * negative code and never crashes, leaks or reads out of bounds; a
 * refused record leaves the world's digest as it was; a decoded entity
 * encodes again to a record of at most the codec's maximum size, which
 * decodes too. The seeds (tests/fuzz/corpus/entity_codec) are written by
 * test_entity_codec with WEFT_ENTITY_CODEC_SEEDS set (tools/fuzz.sh).
 *
 * Under libFuzzer (FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION) tables'
 * checksums are not checked, so mutated tables reach the checks behind
 * them.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <weft.h>

#include "entity_codec_world.h"
#include "fuzz.h"

static fz_world_t fz;
static bool ready;

/* A decoded entity: it encodes again, and that record decodes. */
static void check_decoded(weft_entity_t e) {
  uint8_t back[512];
  size_t len = 0;
  FUZZ_CHECK(weft_entity_encode(fz.codec, e, back, sizeof back, &len) == 0);
  FUZZ_CHECK(len <= weft_entity_codec_max_record(fz.codec));
  weft_entity_t again = 0;
  FUZZ_CHECK(weft_entity_decode(fz.codec, back, len, &again) == 0);
  FUZZ_CHECK(weft_despawn(fz.w, again) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!ready) {
    if (fz_world_build(&fz))
      abort();
    ready = true;
  }
  if (size == 0)
    return 0;
  const uint8_t *p = data + 1;
  size_t n = size - 1;
  uint64_t before = weft_world_digest(fz.w);
  weft_entity_t e = 0;
  int rc = 0;
  switch (data[0] % FZ_MODES) {
  case FZ_DECODE:
    rc = weft_entity_decode(fz.codec, p, n, &e);
    FUZZ_CHECK(rc <= 0);
    if (rc == 0) {
      check_decoded(e);
      FUZZ_CHECK(weft_despawn(fz.w, e) == 0);
    }
    break;
  case FZ_DECODE_INTO:
    rc = weft_entity_decode_into(fz.codec, fz.target, p, n);
    FUZZ_CHECK(rc <= 0);
    if (rc == 0)
      check_decoded(fz.target);
    break;
  default: {
    rc = weft_entity_codec_bind(fz.codec, p, n);
    FUZZ_CHECK(rc <= 0);
    /* Back to its own table. */
    uint8_t table[4096];
    size_t len = 0;
    FUZZ_CHECK(weft_entity_codec_table(fz.codec, table, sizeof table, &len) ==
               0);
    FUZZ_CHECK(weft_entity_codec_bind(fz.codec, table, len) == 0);
    break;
  }
  }
  if (rc < 0)
    FUZZ_CHECK(weft_world_digest(fz.w) == before);
  return 0;
}
