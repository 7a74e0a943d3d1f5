/* SPDX-License-Identifier: MIT */
/*
 * Change versions as the pipeline stamps them (pipeline.h): a `changed`
 * reader visits the chunks written by its systems and structural changes,
 * and read-only access marks nothing. Every other write path is in
 * test_changed.c.
 */
#define _GNU_SOURCE /* nanosleep (support/pipeline_test.h) */
#include "support/weft_test.h"

#include "support/pipeline_test.h"

typedef struct chg_t {
  weft_component_t pos, tag;
  bool write_now, rw_now;
  uint32_t writer_version;
  uint32_t visits, tagged_visits, stale_version, wrong_version;
  uint32_t first_last_run; /* ctx->last_run of the reader's first chunk */
  uint32_t last_version;   /* weft_iter_version of the last chunk visited */
  uint32_t reader_runs_chunks;
  weft_entity_t target;
  uint32_t target_found;
  uint32_t ro_versions[256];
  uint32_t ro_n;
} chg_t;

static bool chg_write_gate(weft_world_t *w, double dt, void *user) {
  (void)w;
  (void)dt;
  return ((chg_t *)user)->write_now;
}

static bool chg_rw_gate(weft_world_t *w, double dt, void *user) {
  (void)w;
  (void)dt;
  return ((chg_t *)user)->rw_now;
}

static int chg_writer(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  chg_t *c = ctx->user;
  pos_t *p = chunk->columns[0];
  for (uint32_t r = 0; r < chunk->count; r++)
    p[r].x += 1.0;
  c->writer_version = ctx->version;
  return 0;
}

static int chg_reader(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  chg_t *c = ctx->user;
  if (c->visits == 0)
    c->first_last_run = ctx->last_run;
  c->visits++;
  c->tagged_visits += weft_has(ctx->world, chunk->entities[0], c->tag);
  uint32_t v = weft_iter_version(chunk, c->pos);
  if (v <= ctx->last_run || v >= ctx->version)
    c->stale_version++;
  c->last_version = v;
  for (uint32_t r = 0; r < chunk->count; r++)
    if (chunk->entities[r] == c->target)
      c->target_found++;
  return 0;
}

/* Reads Pos only, recording its chunk versions. */
static int chg_read_only(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  chg_t *c = ctx->user;
  if (c->ro_n < 256)
    c->ro_versions[c->ro_n++] = weft_iter_version(chunk, c->pos);
  return 0;
}

static weft_system_t add_changed_reader(fx_t *f, chg_t *c) {
  weft_system_desc_t d =
      sys_desc("changed.reader", WEFT_PHASE_FIXED_UPDATE, chg_reader, c);
  d.query.include[0] = f->pos;
  d.term_access[0] = WEFT_ACCESS_READ;
  d.changed[0] = f->pos;
  return sys_add(f->w, &d);
}

/* A `changed` reader of one component: counts its chunks and rows, and
 * the chunks whose version of it is not the writer's last one. */
typedef struct chg2_t {
  weft_component_t comp;
  const uint32_t *writer_version;
  uint32_t chunks, rows, off_version;
} chg2_t;

static int chg2_writer(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  uint32_t *version = ctx->user;
  pos_t *p = chunk->columns[0];
  vel_t *v = chunk->columns[1];
  for (uint32_t r = 0; r < chunk->count; r++) {
    p[r].x += 1.0;
    v[r].dx += 1.0;
  }
  *version = ctx->version;
  return 0;
}

static int chg2_reader(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  chg2_t *c = ctx->user;
  c->chunks++;
  c->rows += chunk->count;
  if (weft_iter_version(chunk, c->comp) != *c->writer_version)
    c->off_version++;
  return 0;
}

/* Registers the two-column writer over Pos, Vel and Tag (runs of
 * chunks) and a reader of each column: with a `changed` filter, or
 * without one over the tagged (written) chunks. */
static void chg2_systems(fx_t *f, uint32_t *version, chg2_t rd[2],
                         bool filter) {
  weft_system_desc_t d =
      sys_desc("writer2", WEFT_PHASE_FIXED_UPDATE, chg2_writer, version);
  d.query.include[0] = f->pos;
  d.query.include[1] = f->vel;
  d.query.include[2] = f->tag;
  d.query.flags = WEFT_QUERY_CHUNK_RUNS;
  d.term_access[0] = WEFT_ACCESS_WRITE;
  d.term_access[1] = WEFT_ACCESS_WRITE;
  d.term_access[2] = WEFT_ACCESS_NONE;
  sys_add(f->w, &d);
  const char *names[2] = {"reader.pos", "reader.vel"};
  for (int k = 0; k < 2; k++) {
    rd[k] = (chg2_t){k ? f->vel : f->pos, version, 0, 0, 0};
    d = sys_desc(names[k], WEFT_PHASE_FIXED_UPDATE, chg2_reader, &rd[k]);
    d.query.include[0] = rd[k].comp;
    d.term_access[0] = WEFT_ACCESS_READ;
    if (filter) { /* the filter alone keeps it to the writer's chunks */
      d.changed[0] = rd[k].comp;
    } else {
      d.query.include[1] = f->tag;
      d.term_access[1] = WEFT_ACCESS_NONE;
    }
    sys_add(f->w, &d);
  }
}

/*
 * A system that writes two components stamps both, in every chunk of
 * its runs (the writer iterates runs of chunks). With `changed` readers
 * in the segment the stamps are written when the run is planned, else by
 * the writer's jobs: either way the readers, which run after the writer,
 * find its version on every chunk of both columns, and the filtered ones
 * visit exactly the writer's rows. On a pool of two.
 */
static void
test_change_versions_changed_sees_every_written_column(void **state) {
  (void)state;
  for (int filter = 0; filter < 2; filter++) {
    fx_t f = fx_new(2, 4096);
    configure(f.w, FIXED, 8, WEFT_OVERLOAD_DROP, -1.0, 0);
    populate(&f, 3000, f.tag);
    populate(&f, 2000, 0);
    uint32_t version = 0;
    chg2_t rd[2];
    chg2_systems(&f, &version, rd, filter);
    progress_ok(f.w, 0.1);
    for (uint32_t frame = 0; frame < 3; frame++) {
      for (int k = 0; k < 2; k++)
        rd[k].chunks = rd[k].rows = rd[k].off_version = 0;
      progress_ok(f.w, 0.1);
      for (int k = 0; k < 2; k++) {
        assert_int_equal(rd[k].rows, 3000); /* the tagged rows */
        assert_true(rd[k].chunks > 1);
        assert_int_equal(rd[k].off_version, 0);
      }
    }
    fx_free(&f);
  }
}

static void test_change_versions_changed_skips_unwritten_chunks(void **state) {
  (void)state;
  fx_t f = fx_new(0, 4096);
  configure(f.w, FIXED, 8, WEFT_OVERLOAD_DROP, -1.0, 0);
  populate(&f, 3000, 0);
  populate(&f, 2000, f.tag);
  uint32_t na = count_chunks(f.w, f.pos, f.tag, 1, NULL);
  uint32_t nb = count_chunks(f.w, f.tag, 0, 1, NULL);
  assert_true(na >= 10 && nb >= 5);
  chg_t *c = calloc(1, sizeof *c);
  assert_non_null(c);
  c->pos = f.pos;
  c->tag = f.tag;
  c->target = WEFT_ENTITY_NULL;
  weft_runif_t *gate = NULL;
  assert_int_equal(weft_runif_custom(f.w, chg_write_gate, c, &gate), WEFT_OK);
  /* The writer touches only the tagged archetype's chunks. */
  weft_system_desc_t d =
      sys_desc("writer", WEFT_PHASE_FIXED_UPDATE, chg_writer, c);
  d.query.include[0] = f.pos;
  d.query.include[1] = f.tag;
  d.term_access[0] = WEFT_ACCESS_WRITE;
  d.term_access[1] = WEFT_ACCESS_NONE;
  d.run_if = gate;
  sys_add(f.w, &d);
  weft_system_t reader = add_changed_reader(&f, c);

  /* First run: every chunk, with last_run 0. */
  uint32_t cv0 = weft_world_change_version(f.w);
  progress_ok(f.w, 0.1);
  assert_int_equal(c->visits, na + nb);
  assert_int_equal(c->first_last_run, 0);
  assert_int_equal(c->stale_version, 0);
  assert_true(weft_world_change_version(f.w) > cv0);
  /* Nothing written since: nothing visited. */
  c->visits = 0;
  progress_ok(f.w, 0.1);
  assert_int_equal(c->visits, 0);
  /* The writer ran: exactly its chunks, stamped with its version. */
  uint32_t prev = c->last_version;
  for (uint32_t frame = 2; frame < 14; frame++) {
    c->write_now = frame % 3 == 0;
    c->visits = c->tagged_visits = 0;
    progress_ok(f.w, 0.1);
    if (!c->write_now) {
      assert_int_equal(c->visits, 0);
      continue;
    }
    assert_int_equal(c->visits, nb);
    assert_int_equal(c->tagged_visits, nb);
    assert_int_equal(c->last_version, c->writer_version);
    assert_true(c->last_version > prev); /* versions increase */
    prev = c->last_version;
  }
  assert_int_equal(c->stale_version, 0);
  weft_system_stats_t s = sstats(f.w, reader);
  assert_int_equal(s.runs, 14);
  assert_int_equal(s.chunks, na + nb + 4 * nb);
  free(c);
  fx_free(&f);
}

static int chg_cmd_spawn(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  (void)chunk;
  fx_t *f = ctx->user;
  if (ctx->tick != 2)
    return 0;
  const weft_component_t comps[] = {f->pos, f->vel, 0};
  weft_entity_t e;
  return weft_cmd_spawn(ctx->cmd, comps, NULL, &e);
}

static void test_change_versions_structural_change_marks_chunk(void **state) {
  (void)state;
  fx_t f = fx_new(0, 4096);
  configure(f.w, FIXED, 8, WEFT_OVERLOAD_DROP, -1.0, 0);
  populate(&f, 3000, 0);
  uint32_t na = count_chunks(f.w, f.pos, 0, 1, NULL);
  chg_t *c = calloc(1, sizeof *c);
  assert_non_null(c);
  c->pos = f.pos;
  c->tag = f.tag;
  add_changed_reader(&f, c);
  /* A PostFixedUpdate system spawns one row by command on tick 3. */
  weft_system_desc_t d =
      sys_desc("cmd.spawn", WEFT_PHASE_POST_FIXED_UPDATE, chg_cmd_spawn, &f);
  d.cmd_write[0] = f.pos;
  d.cmd_write[1] = f.vel;
  sys_add(f.w, &d);
  progress_ok(f.w, 0.1);
  assert_int_equal(c->visits, na);
  c->visits = 0;
  progress_ok(f.w, 0.1);
  assert_int_equal(c->visits, 0);
  /* A direct spawn between frames lands in one chunk, which changed. */
  const weft_component_t pv[] = {f.pos, f.vel, 0};
  c->target = wt_spawn_with(f.w, pv, NULL);
  progress_ok(f.w, 0.1);
  assert_int_equal(c->visits, 1);
  assert_int_equal(c->target_found, 1);
  assert_int_equal(c->stale_version, 0);
  /* That frame's tick 2 spawned by command: the next frame sees one chunk
   * again (the row it received), then nothing. */
  c->visits = 0;
  progress_ok(f.w, 0.1);
  assert_int_equal(c->visits, 1);
  c->visits = 0;
  progress_ok(f.w, 0.1);
  assert_int_equal(c->visits, 0);
  assert_int_equal(weft_world_count(f.w), 3002);
  assert_int_equal(c->stale_version, 0);
  free(c);
  fx_free(&f);
}

static void test_change_versions_read_only_does_not_mark(void **state) {
  (void)state;
  fx_t f = fx_new(0, 4096);
  configure(f.w, FIXED, 8, WEFT_OVERLOAD_DROP, -1.0, 0);
  populate(&f, 2000, 0);
  uint32_t na = count_chunks(f.w, f.pos, 0, 1, NULL);
  chg_t *c = calloc(1, sizeof *c);
  assert_non_null(c);
  c->pos = f.pos;
  c->tag = f.tag;
  weft_runif_t *gate = NULL;
  assert_int_equal(weft_runif_custom(f.w, chg_rw_gate, c, &gate), WEFT_OK);
  weft_system_desc_t d =
      sys_desc("read.only", WEFT_PHASE_FIXED_UPDATE, chg_read_only, c);
  d.query.include[0] = f.pos;
  d.term_access[0] = WEFT_ACCESS_READ;
  sys_add(f.w, &d);
  /* Default access (read and write): stamps. */
  d = sys_desc("read.write", WEFT_PHASE_FIXED_UPDATE, chg_read_only, c);
  d.query.include[0] = f.pos;
  d.run_if = gate;
  sys_add(f.w, &d);
  add_changed_reader(&f, c);
  progress_ok(f.w, 0.1);
  assert_int_equal(c->visits, na);
  assert_int_equal(c->ro_n, na);
  uint32_t first[256];
  memcpy(first, c->ro_versions, sizeof first);
  for (uint32_t i = 0; i < 4; i++) {
    c->visits = 0;
    c->ro_n = 0;
    progress_ok(f.w, 0.1);
    assert_int_equal(c->visits, 0);
    assert_int_equal(c->ro_n, na);
    assert_memory_equal(c->ro_versions, first, na * sizeof(uint32_t));
  }
  /* A system that may write Pos marks every chunk it visits. */
  c->rw_now = true;
  c->visits = 0;
  c->ro_n = 0;
  progress_ok(f.w, 0.1);
  assert_int_equal(c->visits, na);
  assert_int_equal(c->ro_n, 2 * na);
  /* Afterwards the chunks carry its newer version, and nothing is new. */
  c->rw_now = false;
  c->visits = 0;
  c->ro_n = 0;
  progress_ok(f.w, 0.1);
  assert_int_equal(c->visits, 0);
  assert_int_equal(c->ro_n, na);
  for (uint32_t i = 0; i < na; i++)
    assert_true(c->ro_versions[i] > first[i]);
  assert_int_equal(c->stale_version, 0);
  free(c);
  fx_free(&f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_change_versions_changed_skips_unwritten_chunks),
      cmocka_unit_test(test_change_versions_changed_sees_every_written_column),
      cmocka_unit_test(test_change_versions_structural_change_marks_chunk),
      cmocka_unit_test(test_change_versions_read_only_does_not_mark),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
