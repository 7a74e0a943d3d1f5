/* SPDX-License-Identifier: MIT */
/*
 * snapshot: a world of 1M entities (Position and Velocity, vec3 each, and
 * a float Health) saved with weft_snapshot_save() into a preallocated
 * memory sink, and loaded back with weft_snapshot_load_memory() into a
 * world that holds the same 1M (so every load validates the whole input,
 * XXH3 included, staging the rows in fresh segment memory as it goes, and
 * swaps them in). Each is measured
 * against a memcpy of the snapshot's bytes (the baseline any format that
 * copies columns is bound by); target <= 2x. Unit: ns per entity.
 *
 * snapshot/save_file and snapshot/load_file report MB/s to and from a
 * file in $TMPDIR (or /tmp): the save is weft_snapshot_save_file(), with
 * its fsync and rename; the load weft_snapshot_load_file(). One timing
 * per pass, no baseline: a disk's speed is its own.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <weft.h>

#include "harness.h"

typedef struct snap_state_t {
  weft_world_t *src;
  weft_world_t *dst;
  uint8_t *buf; /* the snapshot (save's sink) */
  size_t n;
  size_t cap;
  uint8_t *copy; /* the baseline's destination */
} snap_state_t;

static int sink_write(void *user, const void *data, size_t n) {
  snap_state_t *s = user;
  if (s->n + n > s->cap)
    return WEFT_EIO;
  memcpy(s->buf + s->n, data, n);
  s->n += n;
  return 0;
}

static uint64_t snap_save(void *p, uint64_t reps) {
  snap_state_t *s = p;
  weft_snapshot_writer_t wr = {sink_write, s};
  for (uint64_t r = 0; r < reps; r++) {
    s->n = 0;
    bench_check(weft_snapshot_save(s->src, &wr, NULL), "weft_snapshot_save");
    bench_clobber();
  }
  return s->n;
}

static uint64_t snap_load(void *p, uint64_t reps) {
  snap_state_t *s = p;
  for (uint64_t r = 0; r < reps; r++) {
    bench_check(weft_snapshot_load_memory(s->dst, s->buf, s->n, NULL),
                "weft_snapshot_load_memory");
    bench_clobber();
  }
  return weft_world_count(s->dst);
}

/* Baseline: the snapshot's bytes copied once (memcpy is vectorized). */
static uint64_t snap_copy(void *p, uint64_t reps) {
  snap_state_t *s = p;
  for (uint64_t r = 0; r < reps; r++) {
    memcpy(s->copy, s->buf, s->n);
    bench_clobber();
  }
  return s->copy[s->n - 1];
}

static void fill(void *user, const weft_iter_t *it, uint32_t first) {
  (void)user;
  (void)first;
  bench_vec3_t *pos = weft_iter_column(it, 0);
  bench_vec3_t *vel = weft_iter_column(it, 1);
  float *hp = weft_iter_column(it, 2);
  for (uint32_t i = 0; i < it->count; i++) {
    float f = (float)(it->entities[i] & 0xffff);
    pos[i] = (bench_vec3_t){f, f * 2, f * 3};
    vel[i] = (bench_vec3_t){1, 0, -1};
    hp[i] = 100.0f;
  }
}

static weft_world_t *snap_world(weft_component_t comps[4]) {
  weft_world_t *w;
  weft_world_config_t cfg = {.world_tag = 3};
  bench_check(weft_world_create(&cfg, &w), "weft_world_create");
  weft_component_desc_t d = WEFT_COMPONENT_DESC(bench_vec3_t);
  bench_register_pos_vel(w, d, comps);
  weft_component_desc_t h = {.name = "Health", .size = 4};
  bench_check(weft_component_register(w, &h, &comps[2]), "register Health");
  comps[3] = WEFT_COMPONENT_NONE;
  return w;
}

/* One timed file operation: MB/s of the snapshot's bytes. */
static void file_row(bench_ctx_t *ctx, const char *name, snap_state_t *s,
                     const char *path, bool save) {
  if (!bench_selected(ctx, name))
    return;
  double t0 = bench_now_ns();
  if (save)
    bench_check(weft_snapshot_save_file(s->src, path, NULL),
                "weft_snapshot_save_file");
  else
    bench_check(weft_snapshot_load_file(s->dst, path, NULL),
                "weft_snapshot_load_file");
  double ns = bench_now_ns() - t0;
  bench_result_t r = {
      .unit = "MB/s",
      .n = weft_world_count(s->src),
      .value = (double)s->n / (ns > 0 ? ns : 1) * 1e3,
      .baseline_value = NAN,
      .ratio = NAN,
      .ratio_min = NAN,
      .ratio_max = NAN,
      .efficiency = NAN,
  };
  snprintf(r.name, sizeof r.name, "%s", name);
  bench_record(ctx, &r);
}

void bench_snapshot(bench_ctx_t *ctx) {
  const uint32_t n = 1000000;
  static const char *const rows[] = {"snapshot/save/1M", "snapshot/load/1M",
                                     "snapshot/save_file/1M",
                                     "snapshot/load_file/1M"};
  bool any = false;
  for (uint32_t i = 0; i < 4; i++)
    any |= bench_selected(ctx, rows[i]);
  if (!any)
    return;
  snap_state_t s = {0};
  weft_component_t comps[4];
  s.src = snap_world(comps);
  bench_check(weft_spawn_batch(s.src, n, comps, fill, NULL, NULL),
              "weft_spawn_batch");
  s.dst = snap_world(comps);
  /* Handles, three columns, index records, and room for the tables. */
  s.cap = (size_t)n * (8 + 12 + 12 + 4 + 4) + (1u << 20);
  s.buf = bench_alloc(s.cap);
  s.copy = bench_alloc(s.cap);
  snap_save(&s, 1); /* the bytes the baseline copies */
  snap_load(&s, 1); /* and the destination world in its steady state */

  bench_case_t save = {
      .name = rows[0],
      .unit = "ns/entity",
      .n = n,
      .work = {"weft", snap_save, &s, n},
      .base = {"c_memcpy", snap_copy, &s, n},
      .target_kind = BENCH_TARGET_RATIO,
      .target = 2.0,
  };
  if (bench_selected(ctx, rows[0]))
    bench_compare(ctx, &save);
  bench_case_t load = save;
  load.name = rows[1];
  load.work = (bench_side_t){"weft", snap_load, &s, n, false};
  if (bench_selected(ctx, rows[1]))
    bench_compare(ctx, &load);

  const char *dir = getenv("TMPDIR");
  char path[512];
  snprintf(path, sizeof path, "%s/weft-bench-%d.snap",
           dir && *dir ? dir : "/tmp", (int)getpid());
  file_row(ctx, rows[2], &s, path, true);
  if (access(path, R_OK) == 0)
    file_row(ctx, rows[3], &s, path, false);
  unlink(path);

  bench_free(s.buf);
  bench_free(s.copy);
  weft_world_destroy(s.src);
  weft_world_destroy(s.dst);
}
