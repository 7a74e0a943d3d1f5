/* SPDX-License-Identifier: MIT */
/*
 * What the relation tests share: registering a relation, and the "linker"
 * program, in which a system on any number of workers links every entity
 * to one of four hubs, unlinks it or makes it a cascading source through
 * command buffers, and hub 1 dies after frame 3: the same program must
 * give the same world on any worker count. Header-only; every function is
 * static.
 */
#ifndef WEFT_TEST_RELATION_TEST_H
#define WEFT_TEST_RELATION_TEST_H

#include "support/weft_test.h"

/* Registers relation @p name (asserting success) and returns its id. */
static inline weft_component_t wt_rel(weft_world_t *w, const char *name,
                                      uint32_t size, uint32_t flags) {
  weft_relation_desc_t d = {.name = name, .size = size, .flags = flags};
  weft_component_t r = 0;
  assert_int_equal(weft_relation_register(w, &d, &r), WEFT_OK);
  assert_int_not_equal(r, 0);
  return r;
}

/* A weft_relation_sources() / weft_relation_each() callback that counts
 * the edges it is shown into the uint32_t at @p user. */
static inline bool wt_count_edge(weft_entity_t src, weft_entity_t tgt,
                                 void *payload, void *user) {
  (void)src;
  (void)tgt;
  (void)payload;
  (*(uint32_t *)user)++;
  return true;
}

/* The linker program's world: its pool (NULL for 0 workers), the
 * component its entities have, the hubs, and the two relations the
 * system writes through commands (rels[0] with a payload, rels[1]
 * exclusive and cascading), filled in by the caller. */
typedef struct wt_linker_t {
  weft_world_t *w;
  weft_pool_t *pool;
  weft_component_t pos;
  weft_component_t rels[2];
  weft_entity_t hubs[4];
} wt_linker_t;

/* A world of 3000 entities with Pos and four hubs, every system
 * dispatched to the pool when there is one. */
static inline void wt_linker_open(wt_linker_t *l, uint32_t workers) {
  memset(l, 0, sizeof *l);
  l->w = wt_world_pooled(workers, 4096, &l->pool);
  if (workers)
    wt_dispatch_everything(l->w);
  l->pos = wt_register(l->w, "Pos", 4, 4);
}

/* Spawns the hubs and the entities, registers system @p run over Pos
 * (batches of 64, user @p l, writing both relations through commands). */
static inline void wt_linker_start(wt_linker_t *l, weft_system_fn run) {
  for (int i = 0; i < 4; i++)
    l->hubs[i] = wt_spawn(l->w);
  weft_component_t comps[] = {l->pos, 0};
  for (int i = 0; i < 3000; i++)
    wt_spawn_with(l->w, comps, NULL);
  weft_system_desc_t d;
  memset(&d, 0, sizeof d);
  d.name = "linker";
  d.query.include[0] = l->pos;
  d.batch = 64;
  d.run = run;
  d.user = l;
  d.cmd_write[0] = l->rels[0];
  d.cmd_write[1] = l->rels[1];
  weft_system_t sys;
  assert_int_equal(weft_system_register(l->w, &d, &sys), WEFT_OK);
}

/* Runs six fixed steps; hub 1 dies after the fourth (the cascade takes
 * its sources along). */
static inline void wt_linker_frames(wt_linker_t *l) {
  for (int f = 0; f < 6; f++) {
    int rc = weft_world_run_phase(l->w, WEFT_PHASE_FIXED_UPDATE, 0.016);
    if (rc)
      fail_msg("frame %d: %s", f, weft_world_last_error(l->w));
    if (f == 3)
      assert_int_equal(weft_despawn(l->w, l->hubs[1]), WEFT_OK);
  }
}

/* The world's digest; destroys the world and its pool. */
static inline uint64_t wt_linker_close(wt_linker_t *l) {
  uint64_t h = weft_world_digest(l->w);
  weft_world_destroy(l->w);
  if (l->pool)
    weft_pool_destroy(l->pool);
  return h;
}

#endif /* WEFT_TEST_RELATION_TEST_H */
