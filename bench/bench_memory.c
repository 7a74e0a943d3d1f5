/* SPDX-License-Identifier: MIT */
/*
 * memory: bytes per entity beyond the component payload, for 1M entities
 * (256k with --quick) with Position and Velocity (vec3, 24 bytes together).
 * From weft_world_stats(): (chunk_bytes + index_bytes) / alive - 24, which
 * counts the handle column, the index record, chunk headers, per-column
 * alignment padding and unused rows of the last chunk. Target <= 16 bytes.
 * A computed value: no timing, no baseline.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include <weft.h>

#include "harness.h"

void bench_memory(bench_ctx_t *ctx) {
  uint32_t n = ctx->quick ? 256000 : 1000000;
  char label[16], name[64];
  bench_size_label(label, sizeof label, n);
  snprintf(name, sizeof name, "memory/%s", label);
  if (!bench_selected(ctx, name))
    return;

  weft_world_t *world;
  bench_check(weft_world_create(NULL, &world), "weft_world_create");
  weft_component_desc_t d = WEFT_COMPONENT_DESC(bench_vec3_t);
  weft_component_t comps[3] = {0, 0, WEFT_COMPONENT_NONE};
  bench_register_pos_vel(world, d, comps);
  bench_check(weft_spawn_batch(world, n, comps, NULL, NULL, NULL),
              "weft_spawn_batch");

  weft_world_stats_t st;
  weft_world_stats(world, &st);
  double payload = 2.0 * sizeof(bench_vec3_t);
  double alive = st.alive ? (double)st.alive : 1.0;
  double chunk = (double)st.chunk_bytes / alive;
  double index = (double)st.index_bytes / alive;

  bench_result_t r = {
      .unit = "B/entity",
      .n = n,
      .value = chunk + index - payload,
      .baseline_value = NAN,
      .ratio = NAN,
      .ratio_min = NAN,
      .ratio_max = NAN,
      .target_kind = BENCH_TARGET_VALUE,
      .target = 16.0,
      .efficiency = NAN,
  };
  snprintf(r.name, sizeof r.name, "%s", name);
  fprintf(stderr,
          "%-28s chunks %.2f B/entity (%u live, %u spare), index %.2f "
          "B/entity, payload %.0f -> overhead %.2f B/entity\n",
          name, chunk, st.chunks_live, st.chunks_spare, index, payload,
          r.value);
  bench_record(ctx, &r);
  weft_world_destroy(world);
}
