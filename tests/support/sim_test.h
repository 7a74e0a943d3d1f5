/* SPDX-License-Identifier: MIT */
/*
 * Tests over weft-sim's scenarios (tools/sim_scenarios.c): a world with a
 * fixed step of 1/60 s, optionally on its own pool, holding one scene.
 * Include after weft_test.h; the test links tools/sim_scenarios.c.
 */
#ifndef WEFT_TEST_SIM_TEST_H
#define WEFT_TEST_SIM_TEST_H

#include "sim_scenarios.h"

#define WT_SIM_DT (1.0 / 60.0)

typedef struct wt_sim_t {
  weft_world_t *w;
  weft_pool_t *pool; /* NULL without workers */
  sim_scene_t scene;
} wt_sim_t;

/* Builds scenario @p kind of @p entities from @p seed on a world with
 * @p workers pool workers (0: no pool). */
static inline void wt_sim_open(wt_sim_t *s, sim_kind_t kind, uint32_t workers,
                               uint32_t entities, uint64_t seed) {
  memset(s, 0, sizeof *s);
  s->w = wt_world_pooled(workers, 0, &s->pool);
  weft_pipeline_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.fixed_dt = WT_SIM_DT;
  assert_int_equal(weft_pipeline_configure(s->w, &cfg), WEFT_OK);
  int rc = sim_scene_build(&s->scene, s->w, kind, entities, seed);
  if (rc != WEFT_OK)
    fail_msg("sim_scene_build: %s (%s)", weft_strerror(rc),
             weft_world_last_error(s->w));
}

static inline void wt_sim_close(wt_sim_t *s) {
  sim_scene_free(&s->scene);
  weft_world_destroy(s->w); /* before the pool it uses */
  if (s->pool)
    weft_pool_destroy(s->pool);
}

/* One fixed step; fails the test on an error. */
static inline void wt_sim_tick(wt_sim_t *s) {
  int rc = weft_world_progress(s->w, WT_SIM_DT);
  if (rc != WEFT_OK)
    fail_msg("weft_world_progress: %s (%s)", weft_strerror(rc),
             weft_world_last_error(s->w));
}

#endif /* WEFT_TEST_SIM_TEST_H */
