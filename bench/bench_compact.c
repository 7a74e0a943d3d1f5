/* SPDX-License-Identifier: MIT */
/*
 * compact: weft_world_compact() shrinking a world of 1M entities (256k
 * with --quick) with Position and Velocity after 90% of them were
 * despawned. The spawn puts every row in one segment, so the survivors'
 * rows (the first tenth) sit in a segment nine tenths spare: the rebuild
 * copies them into a segment of their own and frees the big one.
 *
 * Self-timed: each repetition builds its world (spawn, despawn) untimed
 * and times the compaction only. Baseline: memcpy of the surviving bytes
 * (handles and both components) between two 64-byte aligned buffers,
 * which is the copy a rebuild cannot avoid. Unit: ns per surviving row.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <weft.h>

#include "harness.h"

typedef struct compact_state_t {
  uint32_t n;    /* entities spawned */
  uint32_t kept; /* the first tenth survives */
  weft_entity_t *handles;
  unsigned char *src, *dst; /* the baseline's buffers */
  size_t bytes;             /* surviving bytes */
} compact_state_t;

/* Builds the fragmented world: n spawned in one segment, the last 90%
 * despawned (the last rows: nothing moves until the compaction). */
static weft_world_t *fragmented(compact_state_t *s) {
  weft_world_t *w;
  bench_check(weft_world_create(NULL, &w), "weft_world_create");
  weft_component_desc_t d = WEFT_COMPONENT_DESC(bench_vec3_t);
  weft_component_t comps[3] = {0, 0, WEFT_COMPONENT_NONE};
  bench_register_pos_vel(w, d, comps);
  bench_check(weft_spawn_batch(w, s->n, comps, NULL, NULL, s->handles),
              "weft_spawn_batch");
  for (uint32_t i = s->n; i-- > s->kept;)
    bench_check(weft_despawn(w, s->handles[i]), "weft_despawn");
  return w;
}

static uint64_t compact_weft(void *state, uint64_t reps) {
  compact_state_t *s = state;
  double ns = 0.0;
  for (uint64_t r = 0; r < reps; r++) {
    weft_world_t *w = fragmented(s);
    weft_compact_stats_t st;
    double t0 = bench_now_ns();
    bench_check(weft_world_compact(w, NULL, &st), "weft_world_compact");
    ns += bench_now_ns() - t0;
    if (st.rebuilt != 1)
      bench_die("the compaction rebuilt no chunk list", WEFT_EINVAL);
    weft_world_destroy(w);
  }
  return (uint64_t)ns;
}

static uint64_t compact_memcpy(void *state, uint64_t reps) {
  compact_state_t *s = state;
  uint64_t sum = 0;
  for (uint64_t r = 0; r < reps; r++) {
    memcpy(s->dst, s->src, s->bytes);
    bench_clobber();
    sum += s->dst[r % s->bytes];
  }
  return sum;
}

void bench_compact(bench_ctx_t *ctx) {
  compact_state_t s;
  s.n = ctx->quick ? 256000 : 1000000;
  s.kept = s.n / 10;
  char label[16], name[64];
  bench_size_label(label, sizeof label, s.n);
  snprintf(name, sizeof name, "compact/shrink_90pct/%s", label);
  if (!bench_selected(ctx, name))
    return;
  s.handles = bench_alloc((size_t)s.n * sizeof *s.handles);
  s.bytes = (size_t)s.kept * (sizeof(weft_entity_t) + 2 * sizeof(bench_vec3_t));
  s.src = bench_alloc(s.bytes);
  s.dst = bench_alloc(s.bytes);
  memset(s.src, 1, s.bytes);
  bench_case_t c = {
      .name = name,
      .unit = "ns/row",
      .n = s.kept,
      .work = {"weft_world_compact", compact_weft, &s, s.kept, true},
      .base = {"memcpy", compact_memcpy, &s, s.kept, false},
  };
  bench_compare(ctx, &c);
  bench_free(s.dst);
  bench_free(s.src);
  bench_free(s.handles);
}
