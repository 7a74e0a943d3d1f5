/* SPDX-License-Identifier: MIT */
/*
 * Commands recorded by systems and applied at their phase's sync point
 * (system.h), and the digest of a small simulation of parallel commands,
 * equal with and without a pool.
 */
#define _GNU_SOURCE /* nanosleep (support/pipeline_test.h) */
#include "support/weft_test.h"

#include "support/pipeline_test.h"

typedef struct cmd_ctx_t {
  weft_component_t pos, vel, mark, tag;
  uint32_t count0;
  uint32_t wrong; /* callbacks that saw the world changed mid-phase */
  uint32_t chunks, peeks, seen, later_count, post_count;
  uint32_t marks[512];
  uint32_t nvictims;
  weft_entity_t victims[128], tagged[128];
} cmd_ctx_t;

static int cmd_spawner(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  cmd_ctx_t *c = ctx->user;
  if (weft_world_count(ctx->world) != c->count0)
    c->wrong++;
  for (uint32_t k = 0; k < 2; k++) {
    pos_t p = {(double)ctx->chunk, (double)k};
    uint32_t m = ctx->chunk * 2 + k + 1;
    const weft_component_t comps[] = {c->pos, c->mark, 0};
    const void *vals[] = {&p, &m};
    weft_entity_t pending = WEFT_ENTITY_NULL;
    if (weft_cmd_spawn(ctx->cmd, comps, vals, &pending) != WEFT_OK ||
        !weft_entity_is_pending(pending))
      c->wrong++;
  }
  weft_entity_t first = chunk->entities[0];
  weft_entity_t last = chunk->entities[chunk->count - 1];
  if (weft_cmd_add(ctx->cmd, first, c->tag, NULL) != WEFT_OK)
    c->wrong++;
  if (weft_cmd_despawn(ctx->cmd, last) != WEFT_OK)
    c->wrong++;
  if (c->nvictims < 128) {
    c->tagged[c->nvictims] = first;
    c->victims[c->nvictims++] = last;
  }
  c->chunks++;
  return 0;
}

/* Same segment as the spawner: its commands are not applied yet. */
static int cmd_peek(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  (void)chunk;
  cmd_ctx_t *c = ctx->user;
  if (weft_world_count(ctx->world) != c->count0)
    c->wrong++;
  for (uint32_t i = 0; i < c->nvictims; i++)
    if (!weft_is_alive(ctx->world, c->victims[i]) ||
        weft_has(ctx->world, c->tagged[i], c->tag))
      c->wrong++;
  c->peeks++;
  return 0;
}

/* After a sync point: sees the spawned rows. */
static int cmd_see(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  cmd_ctx_t *c = ctx->user;
  const uint32_t *m = chunk->columns[0];
  for (uint32_t r = 0; r < chunk->count && c->seen < 512; r++)
    c->marks[c->seen++] = m[r];
  c->later_count = weft_world_count(ctx->world);
  return 0;
}

static int cmd_post(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  (void)chunk;
  cmd_ctx_t *c = ctx->user;
  c->post_count = weft_world_count(ctx->world);
  return 0;
}

static void test_sync_points_commands_apply_at_phase_end(void **state) {
  (void)state;
  fx_t f = fx_new(0, 4096);
  configure(f.w, FIXED, 8, WEFT_OVERLOAD_DROP, -1.0, 0);
  populate(&f, 1000, 0);
  uint32_t nchunks = count_chunks(f.w, f.pos, f.mark, 1, NULL);
  assert_true(nchunks >= 3 && nchunks <= 100);
  cmd_ctx_t *c = calloc(1, sizeof *c);
  assert_non_null(c);
  c->pos = f.pos;
  c->vel = f.vel;
  c->mark = f.mark;
  c->tag = f.tag;
  c->count0 = weft_world_count(f.w);

  weft_system_desc_t d =
      sys_desc("spawner", WEFT_PHASE_FIXED_UPDATE, cmd_spawner, c);
  d.query.include[0] = f.pos;
  d.query.exclude[0] = f.mark;
  d.term_access[0] = WEFT_ACCESS_READ;
  d.cmd_write[0] = f.pos;
  d.cmd_write[1] = f.mark;
  d.cmd_write[2] = f.tag;
  d.flags = WEFT_SYSTEM_DESPAWNS;
  weft_system_t spawner = sys_add(f.w, &d);
  d = sys_desc("peek", WEFT_PHASE_FIXED_UPDATE, cmd_peek, c);
  d.query.include[0] = f.vel;
  d.term_access[0] = WEFT_ACCESS_READ;
  d.after[0] = "spawner";
  weft_system_t peek = sys_add(f.w, &d);
  d = sys_desc("see", WEFT_PHASE_FIXED_UPDATE, cmd_see, c);
  d.query.include[0] = f.mark;
  d.term_access[0] = WEFT_ACCESS_READ;
  d.after[0] = "spawner";
  weft_system_t see = sys_add(f.w, &d);
  d = sys_desc("post", WEFT_PHASE_POST_FIXED_UPDATE, cmd_post, c);
  sys_add(f.w, &d);

  /* The sync point goes before "see" (it follows the spawner and queries
   * what the spawner's commands write) and nowhere else. */
  assert_true(weft_system_edge(f.w, spawner, peek));
  assert_int_equal(sinfo(f.w, spawner).segment, 0);
  assert_int_equal(sinfo(f.w, peek).segment, 0);
  assert_int_equal(sinfo(f.w, see).segment, 1);

  progress_ok(f.w, 0.1);
  assert_int_equal(c->chunks, nchunks);
  assert_int_equal(c->wrong, 0);
  assert_true(c->peeks > 0);
  /* The later segment saw every spawn, in key order. */
  assert_int_equal(c->seen, 2 * nchunks);
  for (uint32_t i = 0; i < c->seen; i++)
    assert_int_equal(c->marks[i], i + 1);
  assert_int_equal(c->later_count, c->count0 + nchunks);
  assert_int_equal(c->post_count, c->count0 + nchunks);
  assert_int_equal(weft_world_count(f.w), c->count0 + nchunks);
  for (uint32_t i = 0; i < c->nvictims; i++) {
    assert_false(weft_is_alive(f.w, c->victims[i]));
    assert_true(weft_has(f.w, c->tagged[i], f.tag));
  }
  weft_phase_stats_t ps = phstats(f.w, WEFT_PHASE_FIXED_UPDATE);
  assert_int_equal(ps.runs, 1);
  assert_int_equal(ps.sync_points, 1); /* segment 1 recorded nothing */
  /* An add and a despawn per chunk, and its two spawns, which a buffer may
   * record as one run (weft_cmdbuf_count() counts records). */
  assert_true(ps.commands >= 3 * nchunks && ps.commands <= 4 * nchunks);
  wt_check_slot_invariant(f.w);
  free(c);
  fx_free(&f);
}

static void test_sync_points_pool_digest_matches_inline(void **state) {
  (void)state;
  fx_t f[3];
  sim_t s[3];
  const uint32_t workers[3] = {0, 2, 3};
  for (uint32_t i = 0; i < 3; i++) {
    f[i] = fx_new(workers[i], 0);
    sim_setup(&f[i], &s[i]);
    assert_int_equal(weft_pipeline_slots(f[i].w), workers[i] + 1);
  }
  assert_int_equal(weft_world_digest(f[0].w), weft_world_digest(f[1].w));
  const double dts[] = {0.1, 0.1, 0.3, 0.1, 0.05, 0.15, 0.2, 0.1, 0.1, 0.25};
  for (uint32_t k = 0; k < sizeof dts / sizeof dts[0]; k++) {
    for (uint32_t i = 0; i < 3; i++)
      progress_ok(f[i].w, dts[k]);
    uint64_t d0 = weft_world_digest(f[0].w);
    for (uint32_t i = 1; i < 3; i++) {
      if (weft_world_digest(f[i].w) != d0)
        fail_msg("frame %u: %u workers diverge from the inline run", k,
                 workers[i]);
      assert_int_equal(weft_world_count(f[i].w), weft_world_count(f[0].w));
    }
  }
  /* The runs really did work: commands applied, jobs spread. */
  weft_world_stats_t ws = wt_stats(f[0].w);
  assert_true(ws.spawns > BIG_N + 1000);
  assert_true(ws.despawns > 100);
  assert_true(ws.moves > 100);
  /* Every pooled run went through the pool (at least one job each); how
   * often idle workers split them is timing, which
   * test_stats_idle_workers_split_jobs covers. */
  weft_system_stats_t m0 = sstats(f[0].w, s[0].move);
  assert_true(m0.runs >= 10);
  assert_int_equal(m0.jobs, 0);
  for (uint32_t i = 1; i < 3; i++) {
    weft_system_stats_t m = sstats(f[i].w, s[i].move);
    assert_int_equal(m.runs, m0.runs);
    assert_true(m.jobs >= m.runs);
  }
  for (uint32_t i = 0; i < 3; i++) {
    wt_check_slot_invariant(f[i].w);
    fx_free(&f[i]);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sync_points_commands_apply_at_phase_end),
      cmocka_unit_test(test_sync_points_pool_digest_matches_inline),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
