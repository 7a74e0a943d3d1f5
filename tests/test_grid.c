/* SPDX-License-Identifier: MIT */
/*
 * The spatial grid (systems/grid.c) through its public API: configuration
 * checks, geometry and clamping, a rebuilt grid against a model of the
 * world (every entity once, in its cell, cells in handle order, the
 * snapshot's values), rebuilds after moves, despawns and respawns, the
 * `with` filter, names and ordering of several grids, and rebuilds that
 * allocate nothing once the grid has grown. Every test builds and destroys
 * its own world.
 */
#include "support/weft_test.h"

#include <math.h>
#include <stdlib.h>

/* The area most tests use: 10 x 6 cells of 10. */
#define MINX 0.0f
#define MINY 0.0f
#define MAXX 100.0f
#define MAXY 60.0f
#define CELL 10.0f
#define NX 10
#define NY 6

/* What the test believes one entity is. */
typedef struct body_t {
  weft_entity_t e;
  bool alive;
  float x, y;
  bool vel;     /* has Velocity, enabled */
  bool vel_off; /* has Velocity, disabled */
  float vx, vy;
  bool col;     /* has Collider, enabled */
  bool col_off; /* has Collider, disabled */
  bool dead;    /* has the Dead tag */
  bool tagged;  /* has the test's Mark tag */
  weft_collider_t c;
} body_t;

typedef struct gfx_t {
  weft_world_t *w;
  weft_std_t std;
  weft_component_t mark;
  weft_grid_t *grid;
  weft_system_t build;
  weft_pool_t *pool; /* NULL: none */
  body_t *b;
  uint32_t n, cap;
} gfx_t;

static weft_grid_config_t area(void) {
  weft_grid_config_t c;
  memset(&c, 0, sizeof c);
  c.cell = CELL;
  c.min = (weft_vec2_t){MINX, MINY};
  c.max = (weft_vec2_t){MAXX, MAXY};
  return c;
}

/* A world with the std components, a Mark tag and a grid over @p cfg whose
 * builder includes @p with_mark ? Mark : nothing, on a pool of @p workers
 * (0: none; the rebuild then splits its cells into that many bands). */
static gfx_t gfx_new_on(const weft_grid_config_t *cfg, bool with_mark,
                        uint32_t workers) {
  gfx_t f;
  memset(&f, 0, sizeof f);
  f.w = wt_world_pooled(workers, 0, &f.pool);
  assert_int_equal(weft_std_register(f.w, &f.std), WEFT_OK);
  f.mark = wt_register_tag(f.w, "Mark");
  assert_int_equal(weft_grid_create(f.w, cfg, &f.grid), WEFT_OK);
  assert_non_null(f.grid);
  int rc = weft_sys_grid(f.w, &f.std, f.grid, with_mark ? f.mark : 0,
                         WEFT_PHASE_FIXED_UPDATE, &f.build);
  if (rc)
    fail_msg("weft_sys_grid: %s (%s)", weft_strerror(rc),
             weft_world_last_error(f.w));
  assert_int_not_equal(f.build, 0);
  return f;
}

static gfx_t gfx_new(const weft_grid_config_t *cfg, bool with_mark) {
  return gfx_new_on(cfg, with_mark, 0);
}

static void gfx_free(gfx_t *f) {
  weft_grid_destroy(f->grid); /* before the world: it holds queries */
  weft_world_destroy(f->w);
  if (f->pool)
    weft_pool_destroy(f->pool);
  free(f->b);
  memset(f, 0, sizeof *f);
}

static void rebuild(gfx_t *f) {
  int rc = weft_world_run_phase(f->w, WEFT_PHASE_FIXED_UPDATE, 1.0 / 60);
  if (rc)
    fail_msg("run_phase: %s (%s)", weft_strerror(rc),
             weft_world_last_error(f->w));
}

/* A coordinate in cell k (k may be outside [0, n): the point then lies
 * outside the area), kept off the cell borders so that the expected cell
 * is unambiguous. */
static float coord(wt_rng_t *r, float lo, int32_t k) {
  float u = (float)wt_below(r, 1000) / 1000.0f;
  return lo + CELL * ((float)k + 0.05f + 0.9f * u);
}

/* The cell the documentation promises, computed independently. */
static int32_t expect_axis(float v, float lo, int32_t n) {
  double k = floor(((double)v - (double)lo) / (double)CELL);
  if (k < 0)
    return 0;
  if (k > n - 1)
    return n - 1;
  return (int32_t)k;
}

static void random_place(wt_rng_t *r, body_t *b) {
  /* About one in five lands outside, up to two cells beyond each side. */
  b->x = coord(r, MINX, (int32_t)wt_below(r, NX + 4) - 2);
  b->y = coord(r, MINY, (int32_t)wt_below(r, NY + 4) - 2);
}

/* Spawns one entity: with @p mixed, a random mix of Velocity (maybe
 * disabled), Collider (maybe disabled), Dead and Mark; else with
 * Velocity and Collider, both enabled (one archetype). */
static void spawn_body(gfx_t *f, wt_rng_t *r, bool mixed) {
  if (f->n == f->cap) {
    f->cap = f->cap ? 2 * f->cap : 1024;
    f->b = realloc(f->b, f->cap * sizeof *f->b);
    assert_non_null(f->b);
  }
  body_t *b = &f->b[f->n++];
  memset(b, 0, sizeof *b);
  b->alive = true;
  random_place(r, b);
  weft_component_t comps[8] = {f->std.position};
  const void *vals[8] = {0};
  weft_vec2_t p = {b->x, b->y}, v;
  vals[0] = &p;
  uint32_t k = 1;
  if (!mixed || wt_chance(r, 1, 2)) {
    b->vel = true;
    b->vx = (float)wt_below(r, 200) / 10.0f - 10.0f;
    b->vy = (float)wt_below(r, 200) / 10.0f - 10.0f;
    v = (weft_vec2_t){b->vx, b->vy};
    comps[k] = f->std.velocity;
    vals[k++] = &v;
  }
  if (!mixed || wt_chance(r, 2, 3)) {
    b->col = true;
    b->c.shape = wt_below(r, 2);
    b->c.r = 0.5f + (float)wt_below(r, 40) / 10.0f;
    b->c.hx = 0.25f + (float)wt_below(r, 40) / 10.0f;
    b->c.hy = 0.75f + (float)wt_below(r, 40) / 10.0f;
    b->c.layer = (uint32_t)wt_next(r);
    b->c.mask = (uint32_t)wt_next(r);
    comps[k] = f->std.collider;
    vals[k++] = &b->c;
  }
  if (mixed && wt_chance(r, 1, 10)) {
    b->dead = true;
    comps[k++] = f->std.dead;
  }
  if (mixed && wt_chance(r, 1, 2)) {
    b->tagged = true;
    comps[k++] = f->mark;
  }
  comps[k] = 0;
  b->e = wt_spawn_with(f->w, comps, vals);
  if (mixed && b->vel && wt_chance(r, 1, 5)) {
    assert_int_equal(weft_disable(f->w, b->e, f->std.velocity), WEFT_OK);
    b->vel = false;
    b->vel_off = true;
  }
  if (mixed && b->col && wt_chance(r, 1, 5)) {
    assert_int_equal(weft_disable(f->w, b->e, f->std.collider), WEFT_OK);
    b->col = false;
    b->col_off = true;
  }
}

static void spawn_random(gfx_t *f, wt_rng_t *r) {
  spawn_body(f, r, true);
}

/* Maps slot indices to the model's live bodies, so that lookups are O(1). */
typedef struct slots_t {
  int32_t *at;
  uint32_t n;
} slots_t;

static slots_t slots_of(const gfx_t *f) {
  slots_t s = {NULL, 1};
  for (uint32_t i = 0; i < f->n; i++)
    if (weft_entity_index(f->b[i].e) + 1 > s.n)
      s.n = weft_entity_index(f->b[i].e) + 1;
  s.at = malloc(s.n * sizeof *s.at);
  assert_non_null(s.at);
  for (uint32_t i = 0; i < s.n; i++)
    s.at[i] = -1;
  for (uint32_t i = 0; i < f->n; i++)
    if (f->b[i].alive)
      s.at[weft_entity_index(f->b[i].e)] = (int32_t)i;
  return s;
}

static int find_body(const gfx_t *f, const slots_t *s, weft_entity_t e) {
  uint32_t k = weft_entity_index(e);
  if (k >= s->n || s->at[k] < 0 || f->b[s->at[k]].e != e)
    return -1;
  return s->at[k];
}

/*
 * Walks every cell and checks the grid against the model: each entity that
 * should be there appears exactly once, in the cell the documentation
 * gives for its position (weft_grid_cell_of agrees), cells are in strictly
 * increasing handle order, and the item carries the snapshot's values.
 */
static void check_grid(const gfx_t *f, bool only_marked) {
  uint32_t expected = 0;
  for (uint32_t i = 0; i < f->n; i++)
    if (f->b[i].alive && (!only_marked || f->b[i].tagged))
      expected++;
  assert_int_equal(weft_grid_count(f->grid), expected);

  uint8_t *seen = calloc(f->n ? f->n : 1, 1);
  assert_non_null(seen);
  slots_t slots = slots_of(f);
  int32_t nx = -1, ny = -1;
  weft_grid_dims(f->grid, &nx, &ny);
  uint32_t total = 0;
  for (int32_t cy = 0; cy < ny; cy++) {
    for (int32_t cx = 0; cx < nx; cx++) {
      uint32_t n = 12345;
      const weft_grid_item_t *it = weft_grid_cell(f->grid, cx, cy, &n);
      if (n)
        assert_non_null(it);
      total += n;
      for (uint32_t k = 0; k < n; k++) {
        if (k > 0 && !(it[k - 1].e < it[k].e))
          fail_msg("cell (%d,%d): item %u (%#llx) not after %#llx", cx, cy, k,
                   (unsigned long long)it[k].e,
                   (unsigned long long)it[k - 1].e);
        int i = find_body(f, &slots, it[k].e);
        if (i < 0)
          fail_msg("cell (%d,%d) holds %#llx, which is not alive", cx, cy,
                   (unsigned long long)it[k].e);
        const body_t *b = &f->b[i];
        if (seen[i])
          fail_msg("%#llx appears twice", (unsigned long long)b->e);
        seen[i] = 1;
        if (only_marked)
          assert_true(b->tagged);
        assert_true(it[k].x == b->x && it[k].y == b->y);
        assert_int_equal(expect_axis(b->x, MINX, NX), cx);
        assert_int_equal(expect_axis(b->y, MINY, NY), cy);
        int32_t gx = -1, gy = -1;
        weft_grid_cell_of(f->grid, b->x, b->y, &gx, &gy);
        assert_int_equal(gx, cx);
        assert_int_equal(gy, cy);
        if (b->vel) {
          assert_true(it[k].vx == b->vx && it[k].vy == b->vy);
        } else {
          assert_true(it[k].vx == 0.0f && it[k].vy == 0.0f);
        }
        weft_collider_t want;
        memset(&want, 0, sizeof want);
        if (b->col && !b->dead)
          want = b->c;
        assert_memory_equal(&it[k].collider, &want, sizeof want);
      }
    }
  }
  assert_int_equal(total, expected);
  for (uint32_t i = 0; i < f->n; i++)
    if (f->b[i].alive && (!only_marked || f->b[i].tagged) && !seen[i])
      fail_msg("%#llx is missing", (unsigned long long)f->b[i].e);
  free(seen);
  free(slots.at);
}

/* ---- tests --------------------------------------------------------------- */

static void test_grid_create_rejects_bad_config(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_grid_t *g = NULL;
  weft_grid_config_t c = area();
  assert_int_equal(weft_grid_create(NULL, &c, &g), WEFT_EINVAL);
  assert_int_equal(weft_grid_create(w, NULL, &g), WEFT_EINVAL);
  assert_int_equal(weft_grid_create(w, &c, NULL), WEFT_EINVAL);
  c.max.x = c.min.x; /* empty along x */
  assert_int_equal(weft_grid_create(w, &c, &g), WEFT_EINVAL);
  c = area();
  c.max.y = c.min.y - 1.0f;
  assert_int_equal(weft_grid_create(w, &c, &g), WEFT_EINVAL);
  c = area();
  c.cell = -1.0f;
  assert_int_equal(weft_grid_create(w, &c, &g), WEFT_EINVAL);
  c.cell = NAN;
  assert_int_equal(weft_grid_create(w, &c, &g), WEFT_EINVAL);
  c = area();
  c.max.x = INFINITY;
  assert_int_equal(weft_grid_create(w, &c, &g), WEFT_EINVAL);
  c = area();
  c.cell = 1e-3f; /* 10^5 x 6 * 10^4 cells */
  assert_int_equal(weft_grid_create(w, &c, &g), WEFT_EINVAL);
  assert_non_null(strstr(weft_world_last_error(w), "max_cells"));
  assert_null(g);
  /* Nothing registered a builder; a grid from another world is refused. */
  c = area();
  assert_int_equal(weft_grid_create(w, &c, &g), WEFT_OK);
  weft_world_t *other = wt_world_new(NULL);
  weft_std_t std;
  assert_int_equal(weft_std_register(other, &std), WEFT_OK);
  assert_int_equal(weft_sys_grid(other, &std, g, 0, 0, NULL), WEFT_EINVAL);
  assert_non_null(strstr(weft_world_last_error(other), "another world"));
  assert_int_equal(weft_sys_grid(w, NULL, g, 0, 0, NULL), WEFT_EINVAL);
  assert_non_null(strstr(weft_world_last_error(w), "std is NULL"));
  weft_grid_destroy(g);
  weft_grid_destroy(NULL);
  weft_world_destroy(other);
  weft_world_destroy(w);
}

/* The cell limit: a grid of more cells than 2^24 is refused by default,
 * saying so, and made when max_cells allows it; there, the last cells
 * (indices past 2^24) hold what lies in them. */
static void test_grid_max_cells_lifts_the_limit(void **state) {
  (void)state;
  const int32_t side = 4100; /* 16,810,000 cells > 2^24 */
  const uint32_t need = (uint32_t)side * (uint32_t)side;
  weft_grid_config_t c;
  memset(&c, 0, sizeof c);
  c.cell = 1.0f;
  c.max = (weft_vec2_t){(float)side, (float)side};
  weft_world_t *w = wt_world_new(NULL);
  weft_grid_t *g = NULL;
  assert_int_equal(weft_grid_create(w, &c, &g), WEFT_EINVAL);
  assert_non_null(strstr(weft_world_last_error(w), "4100 x 4100 cells"));
  assert_non_null(strstr(weft_world_last_error(w), "max_cells (16777216)"));
  c.max_cells = need - 1;
  assert_int_equal(weft_grid_create(w, &c, &g), WEFT_EINVAL);
  c.max_cells = WEFT_GRID_CELLS_MAX + 1u;
  assert_int_equal(weft_grid_create(w, &c, &g), WEFT_EINVAL);
  assert_non_null(strstr(weft_world_last_error(w), "WEFT_GRID_CELLS_MAX"));
  assert_null(g);
  weft_world_destroy(w);

  c.max_cells = need;
  gfx_t f = gfx_new(&c, false);
  int32_t nx = 0, ny = 0;
  weft_grid_dims(f.grid, &nx, &ny);
  assert_int_equal(nx, side);
  assert_int_equal(ny, side);
  /* One entity per corner cell and one in the middle. */
  const float at[][2] = {{0.5f, 0.5f},
                         {side - 0.5f, side - 0.5f},
                         {side - 0.5f, 0.5f},
                         {0.5f, side - 0.5f},
                         {side / 2 + 0.5f, side / 2 + 0.5f}};
  weft_entity_t e[5];
  for (uint32_t i = 0; i < 5; i++) {
    weft_vec2_t p = {at[i][0], at[i][1]};
    e[i] = wt_spawn_with(f.w, (weft_component_t[]){f.std.position, 0},
                         (const void *[]){&p});
  }
  rebuild(&f);
  assert_int_equal(weft_grid_count(f.grid), 5);
  for (uint32_t i = 0; i < 5; i++) {
    uint32_t n = 0;
    const weft_grid_item_t *it =
        weft_grid_cell(f.grid, (int32_t)at[i][0], (int32_t)at[i][1], &n);
    assert_int_equal(n, 1);
    assert_int_equal(it[0].e, e[i]);
    assert_true(it[0].x == at[i][0] && it[0].y == at[i][1]);
  }
  uint32_t n = 9;
  (void)weft_grid_cell(f.grid, side - 2, side - 1, &n);
  assert_int_equal(n, 0);
  gfx_free(&f);
}

/* Every grid takes a resource; when the world has none left, creation
 * fails with WEFT_ETOOMANY and gives back what it allocated (ASan checks
 * the leak), and the grids made before keep working. */
static void test_grid_create_runs_out_of_resources(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_grid_config_t c = area();
  weft_grid_t **grids = calloc(WEFT_MAX_RESOURCES + 1, sizeof *grids);
  assert_non_null(grids);
  uint32_t made = 0;
  int rc = WEFT_OK;
  while (made <= WEFT_MAX_RESOURCES &&
         (rc = weft_grid_create(w, &c, &grids[made])) == WEFT_OK)
    made++;
  assert_int_equal(rc, WEFT_ETOOMANY);
  assert_int_equal(made, WEFT_MAX_RESOURCES);
  assert_null(grids[made]);
  int32_t cx = -1, cy = -1;
  weft_grid_cell_of(grids[made - 1], 1.5f, 2.5f, &cx, &cy);
  assert_true(cx >= 0 && cy >= 0);
  /* Resources are never unregistered: destroying one frees no name. */
  weft_grid_destroy(grids[0]);
  weft_grid_t *again = NULL;
  assert_int_equal(weft_grid_create(w, &c, &again), WEFT_ETOOMANY);
  assert_null(again);
  for (uint32_t i = 1; i < made; i++)
    weft_grid_destroy(grids[i]);
  free(grids);
  weft_world_destroy(w);
}

static void test_grid_geometry_and_clamping(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_grid_t *g = NULL;
  weft_grid_config_t c = area();
  c.max.x = 95.0f; /* 9.5 cells round up to 10 */
  assert_int_equal(weft_grid_create(w, &c, &g), WEFT_OK);
  int32_t nx = 0, ny = 0;
  weft_grid_dims(g, &nx, &ny);
  assert_int_equal(nx, 10);
  assert_int_equal(ny, 6);
  assert_true(weft_grid_cell_size(g) == CELL);
  assert_int_equal(weft_grid_count(g), 0);

  int32_t cx = -7, cy = -7;
  weft_grid_cell_of(g, 15.0f, 25.0f, &cx, &cy);
  assert_int_equal(cx, 1);
  assert_int_equal(cy, 2);
  weft_grid_cell_of(g, 0.0f, 0.0f, &cx, &cy);
  assert_int_equal(cx, 0);
  assert_int_equal(cy, 0);
  weft_grid_cell_of(g, 9.999f, 10.0f, &cx, &cy);
  assert_int_equal(cx, 0);
  assert_int_equal(cy, 1);
  /* Outside: the border cells, whatever the distance. */
  weft_grid_cell_of(g, -0.001f, -1e30f, &cx, &cy);
  assert_int_equal(cx, 0);
  assert_int_equal(cy, 0);
  weft_grid_cell_of(g, 1e30f, 60.0f, &cx, &cy);
  assert_int_equal(cx, 9);
  assert_int_equal(cy, 5);
  weft_grid_cell_of(g, 99.0f, 59.999f, &cx, &cy); /* past max.x, in cell 9 */
  assert_int_equal(cx, 9);
  assert_int_equal(cy, 5);
  weft_grid_cell_of(g, -INFINITY, INFINITY, &cx, &cy);
  assert_int_equal(cx, 0);
  assert_int_equal(cy, 5);
  weft_grid_cell_of(g, NAN, 35.0f, &cx, &cy);
  assert_int_equal(cx, 0);
  assert_int_equal(cy, 3);

  /* Cells outside the grid: NULL and 0; inside but never built: empty. */
  uint32_t n = 99;
  assert_null(weft_grid_cell(g, -1, 0, &n));
  assert_int_equal(n, 0);
  n = 99;
  assert_null(weft_grid_cell(g, 10, 0, &n));
  assert_int_equal(n, 0);
  n = 99;
  assert_null(weft_grid_cell(g, 0, 6, &n));
  assert_int_equal(n, 0);
  n = 99;
  weft_grid_cell(g, 9, 5, &n);
  assert_int_equal(n, 0);
  weft_grid_destroy(g);

  /* Cell 0 means 1.0; an area smaller than a cell is one cell. */
  c = area();
  c.cell = 0.0f;
  assert_int_equal(weft_grid_create(w, &c, &g), WEFT_OK);
  assert_true(weft_grid_cell_size(g) == 1.0f);
  weft_grid_dims(g, &nx, &ny);
  assert_int_equal(nx, 100);
  assert_int_equal(ny, 60);
  weft_grid_destroy(g);
  c.cell = 1000.0f;
  assert_int_equal(weft_grid_create(w, &c, &g), WEFT_OK);
  weft_grid_dims(g, &nx, &ny);
  assert_int_equal(nx, 1);
  assert_int_equal(ny, 1);
  weft_grid_destroy(g);
  weft_world_destroy(w);
}

static void test_grid_items_sorted_in_their_cells(void **state) {
  (void)state;
  weft_grid_config_t c = area();
  gfx_t f = gfx_new(&c, false);
  wt_rng_t r = wt_rng(0x6121d);
  for (uint32_t i = 0; i < 3000; i++)
    spawn_random(&f, &r);
  /* Despawn and respawn some so that generations (and so handle order)
   * differ from slot order and from chunk order. */
  for (uint32_t i = 0; i < f.n; i += 3) {
    assert_int_equal(weft_despawn(f.w, f.b[i].e), WEFT_OK);
    f.b[i].alive = false;
  }
  for (uint32_t i = 0; i < 500; i++)
    spawn_random(&f, &r);
  rebuild(&f);
  check_grid(&f, false);
  /* The border cells took the outside points. */
  uint32_t n = 0;
  weft_grid_cell(f.grid, 0, 0, &n);
  assert_true(n > 0);
  weft_grid_cell(f.grid, NX - 1, NY - 1, &n);
  assert_true(n > 0);
  gfx_free(&f);
}

/* The rebuild on a pool cuts bands of whole rows, two or four per worker
 * but at most one per row. Grids where that matters, each built on a pool and
 * without one from the same entities, must be equal byte for byte:
 * - three cells by one row on 8 workers (32 bands wanted, one taken);
 * - three cells by five rows on 8 workers (five bands of one row);
 * - the area in cells a seventh of the size (70 x 42) on 5 workers: 20
 *   bands of two or three rows; on 3 workers, six bands of seven rows. */
static void test_grid_bands_of_rows(void **state) {
  (void)state;
  static const struct {
    float cell;
    int32_t nx, ny;
    uint32_t workers;
  } cases[] = {{CELL, 3, 1, 8},
               {CELL, 3, 5, 8},
               {CELL / 7, 7 * NX, 7 * NY, 5},
               {CELL / 7, 7 * NX, 7 * NY, 3}};
  for (uint32_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
    weft_grid_config_t c = area();
    c.cell = cases[t].cell;
    c.max = (weft_vec2_t){MINX + (float)cases[t].nx * c.cell,
                          MINY + (float)cases[t].ny * c.cell};
    gfx_t f[2] = {gfx_new_on(&c, false, 0),
                  gfx_new_on(&c, false, cases[t].workers)};
    for (int k = 0; k < 2; k++) {
      wt_rng_t r = wt_rng(0x3ce11 + t);
      for (uint32_t i = 0; i < 500; i++)
        spawn_random(&f[k], &r);
      rebuild(&f[k]);
    }
    int32_t nx = 0, ny = 0;
    weft_grid_dims(f[1].grid, &nx, &ny);
    assert_true(nx == cases[t].nx && ny == cases[t].ny);
    for (int k = 0; k < 2; k++) {
      assert_int_equal(weft_grid_count(f[k].grid), 500);
      weft_system_stats_t st;
      assert_int_equal(weft_system_stats(f[k].w, f[k].build, &st), WEFT_OK);
      assert_int_equal(st.entities, 500); /* the items it gathered */
    }
    uint32_t total = 0;
    for (int32_t cy = 0; cy < ny; cy++)
      for (int32_t cx = 0; cx < nx; cx++) {
        uint32_t n0 = 0, n1 = 0;
        const weft_grid_item_t *a = weft_grid_cell(f[0].grid, cx, cy, &n0);
        const weft_grid_item_t *b = weft_grid_cell(f[1].grid, cx, cy, &n1);
        assert_int_equal(n0, n1);
        if (n0)
          assert_memory_equal(a, b, n0 * sizeof *a);
        total += n0;
      }
    assert_int_equal(total, 500);
    gfx_free(&f[1]);
    gfx_free(&f[0]);
  }
}

/* A grid whose cell table alone outgrows several times a band's cache
 * budget (4 MiB: here 2,858 x 1,715 cells, 19.6 MB) is rebuilt in bands of
 * rows even without a pool (five), for locality. Built that way, and on a
 * pool of three (six bands), from the same entities, the grids must be equal
 * byte for byte, and hold every live entity once, in the cell
 * weft_grid_cell_of() gives, in handle order. */
static void test_grid_large_grid_bands_without_pool(void **state) {
  (void)state;
  weft_grid_config_t c = area();
  c.cell = 0.035f;
  c.max_cells = 5000000;
  gfx_t f[2] = {gfx_new_on(&c, false, 0), gfx_new_on(&c, false, 3)};
  for (int k = 0; k < 2; k++) {
    wt_rng_t r = wt_rng(0x1a29e);
    for (uint32_t i = 0; i < 3000; i++)
      spawn_random(&f[k], &r);
    for (uint32_t i = 0; i < f[k].n; i += 7) {
      assert_int_equal(weft_despawn(f[k].w, f[k].b[i].e), WEFT_OK);
      f[k].b[i].alive = false;
    }
    rebuild(&f[k]);
  }
  int32_t nx = 0, ny = 0;
  weft_grid_dims(f[0].grid, &nx, &ny);
  assert_true((uint64_t)nx * (uint64_t)ny * 4u > 16u << 20);
  uint32_t live = 0;
  slots_t slots = slots_of(&f[0]);
  uint8_t *seen = calloc(f[0].n, 1);
  assert_non_null(seen);
  for (uint32_t i = 0; i < f[0].n; i++) {
    const body_t *b = &f[0].b[i];
    if (!b->alive)
      continue;
    live++;
    int32_t cx = -1, cy = -1;
    weft_grid_cell_of(f[0].grid, b->x, b->y, &cx, &cy);
    uint32_t n0 = 0, n1 = 0;
    const weft_grid_item_t *a = weft_grid_cell(f[0].grid, cx, cy, &n0);
    const weft_grid_item_t *p = weft_grid_cell(f[1].grid, cx, cy, &n1);
    assert_int_equal(n0, n1);
    assert_memory_equal(a, p, n0 * sizeof *a);
    bool found = false;
    for (uint32_t k = 0; k < n0; k++) {
      if (k > 0)
        assert_true(a[k - 1].e < a[k].e);
      int j = find_body(&f[0], &slots, a[k].e);
      assert_true(j >= 0);
      found |= (uint32_t)j == i;
      if ((uint32_t)j == i) {
        assert_false(seen[i]);
        seen[i] = 1;
        assert_true(a[k].x == b->x && a[k].y == b->y);
      }
    }
    assert_true(found);
  }
  assert_true(live > 2500);
  assert_int_equal(weft_grid_count(f[0].grid), live);
  assert_int_equal(weft_grid_count(f[1].grid), live);
  free(seen);
  free(slots.at);
  gfx_free(&f[1]);
  gfx_free(&f[0]);
}

/* On a pool the rebuild partitions the items into bands of rows (two or
 * four per worker, uneven with three) and sorts each band in a job of its own:
 * the grid must be the model's all the same, rebuild after rebuild. */
static void test_grid_bands_on_a_pool(void **state) {
  (void)state;
  static const uint32_t workers[] = {2, 3, 5};
  for (uint32_t k = 0; k < sizeof workers / sizeof workers[0]; k++) {
    weft_grid_config_t c = area();
    gfx_t f = gfx_new_on(&c, false, workers[k]);
    wt_rng_t r = wt_rng(0xba4d + k);
    for (uint32_t i = 0; i < 4000; i++)
      spawn_random(&f, &r);
    for (uint32_t i = 0; i < f.n; i += 4) {
      assert_int_equal(weft_despawn(f.w, f.b[i].e), WEFT_OK);
      f.b[i].alive = false;
    }
    for (uint32_t i = 0; i < 700; i++)
      spawn_random(&f, &r);
    rebuild(&f);
    check_grid(&f, false);
    for (uint32_t i = 1; i < f.n; i += 5) { /* fewer items: rebuild again */
      if (f.b[i].alive) {
        assert_int_equal(weft_despawn(f.w, f.b[i].e), WEFT_OK);
        f.b[i].alive = false;
      }
    }
    rebuild(&f);
    check_grid(&f, false);
    gfx_free(&f);
  }
}

/* Positions that are not finite land in border cells as
 * weft_grid_cell_of() says: NaN and -inf in cell 0 of their axis, +inf in
 * the last. The rebuild computes cells on its own path, so it is checked
 * here, with no pool and with bands on a pool. */
static void test_grid_non_finite_positions_land_in_border_cells(void **state) {
  (void)state;
  static const weft_vec2_t at[] = {
      {NAN, 35.0f}, {-INFINITY, INFINITY}, {INFINITY, NAN},   {1e30f, -1e30f},
      {NAN, NAN},   {55.0f, -INFINITY},    {INFINITY, 25.0f}, {-0.0f, 59.99f},
      {-NAN, 5.0f},
  };
  static const int32_t want[][2] = {{0, 3},      {0, NY - 1}, {NX - 1, 0},
                                    {NX - 1, 0}, {0, 0},      {5, 0},
                                    {NX - 1, 2}, {0, NY - 1}, {0, 0}};
  const uint32_t n = sizeof at / sizeof at[0];
  static const uint32_t workers[] = {0, 3};
  for (uint32_t k = 0; k < 2; k++) {
    weft_grid_config_t c = area();
    gfx_t f = gfx_new_on(&c, false, workers[k]);
    weft_entity_t e[sizeof at / sizeof at[0]];
    for (uint32_t i = 0; i < n; i++)
      e[i] = wt_spawn_with(f.w, (weft_component_t[]){f.std.position, 0},
                           (const void *[]){&at[i]});
    rebuild(&f);
    assert_int_equal(weft_grid_count(f.grid), n);
    for (uint32_t i = 0; i < n; i++) {
      int32_t gx = -1, gy = -1;
      weft_grid_cell_of(f.grid, at[i].x, at[i].y, &gx, &gy);
      assert_int_equal(gx, want[i][0]);
      assert_int_equal(gy, want[i][1]);
      uint32_t m = 0, found = 0;
      const weft_grid_item_t *it = weft_grid_cell(f.grid, gx, gy, &m);
      for (uint32_t j = 0; j < m; j++)
        found += it[j].e == e[i];
      if (found != 1)
        fail_msg("entity %u at (%g, %g): found %u times in cell (%d, %d)", i,
                 (double)at[i].x, (double)at[i].y, found, gx, gy);
    }
    gfx_free(&f);
  }
}

/* Thousands of entities of one archetype: the queries hand the builder
 * runs of many chunks, which it cuts in pieces of a few hundred rows, the
 * cuts falling inside chunks and across their borders. The grid must be
 * the model's, with no pool and on one of three workers. */
static void test_grid_long_runs_cut_in_pieces(void **state) {
  (void)state;
  static const uint32_t workers[] = {0, 3};
  for (uint32_t k = 0; k < 2; k++) {
    weft_grid_config_t c = area();
    gfx_t f = gfx_new_on(&c, false, workers[k]);
    wt_rng_t r = wt_rng(0x91ece5 + k);
    for (uint32_t i = 0; i < 6000; i++)
      spawn_body(&f, &r, false);
    for (uint32_t i = 0; i < 300; i++) /* and a few other archetypes */
      spawn_random(&f, &r);
    rebuild(&f);
    check_grid(&f, false);
    weft_system_stats_t st;
    assert_int_equal(weft_system_stats(f.w, f.build, &st), WEFT_OK);
    assert_int_equal(st.entities, 6300);
    gfx_free(&f);
  }
}

static void test_grid_rebuild_follows_changes(void **state) {
  (void)state;
  weft_grid_config_t c = area();
  gfx_t f = gfx_new(&c, false);
  wt_rng_t r = wt_rng(77);
  for (uint32_t i = 0; i < 2000; i++)
    spawn_random(&f, &r);
  rebuild(&f);
  check_grid(&f, false);

  for (uint32_t round = 0; round < 3; round++) {
    for (uint32_t i = 0; i < f.n; i++) {
      body_t *b = &f.b[i];
      if (!b->alive)
        continue;
      switch (wt_below(&r, 8)) {
      case 0:
        assert_int_equal(weft_despawn(f.w, b->e), WEFT_OK);
        b->alive = false;
        break;
      case 1:
      case 2: {
        random_place(&r, b);
        weft_vec2_t p = {b->x, b->y};
        assert_int_equal(weft_set(f.w, b->e, f.std.position, &p), WEFT_OK);
        break;
      }
      case 3:
        if (b->vel) {
          assert_int_equal(weft_disable(f.w, b->e, f.std.velocity), WEFT_OK);
          b->vel = false;
          b->vel_off = true;
        } else if (b->vel_off) {
          assert_int_equal(weft_enable(f.w, b->e, f.std.velocity), WEFT_OK);
          b->vel = true;
          b->vel_off = false;
        }
        break;
      case 4:
        if (b->col_off) {
          assert_int_equal(weft_enable(f.w, b->e, f.std.collider), WEFT_OK);
          b->col = true;
          b->col_off = false;
        } else if (!b->dead) {
          assert_int_equal(weft_add(f.w, b->e, f.std.dead, NULL), WEFT_OK);
          b->dead = true;
        }
        break;
      default:
        break;
      }
    }
    for (uint32_t i = 0; i < 300; i++)
      spawn_random(&f, &r);
    rebuild(&f);
    check_grid(&f, false);
  }
  /* An empty world empties the grid. */
  assert_int_equal(weft_world_clear(f.w), WEFT_OK);
  for (uint32_t i = 0; i < f.n; i++)
    f.b[i].alive = false;
  rebuild(&f);
  assert_int_equal(weft_grid_count(f.grid), 0);
  check_grid(&f, false);
  gfx_free(&f);
}

/* One cell holding everything: the big-cell sort path. */
static void test_grid_one_cell_in_handle_order(void **state) {
  (void)state;
  weft_grid_config_t c = area();
  c.cell = 0.0f;
  c.min = (weft_vec2_t){1000.0f, 1000.0f}; /* everything clamps to (0, 0) */
  c.max = (weft_vec2_t){1001.0f, 1001.0f};
  gfx_t f = gfx_new(&c, false);
  wt_rng_t r = wt_rng(5);
  for (uint32_t i = 0; i < 1500; i++)
    spawn_random(&f, &r);
  for (uint32_t i = 0; i < f.n; i += 2) {
    assert_int_equal(weft_despawn(f.w, f.b[i].e), WEFT_OK);
    f.b[i].alive = false;
  }
  for (uint32_t i = 0; i < 400; i++)
    spawn_random(&f, &r);
  rebuild(&f);
  uint32_t n = 0, alive = 0;
  const weft_grid_item_t *it = weft_grid_cell(f.grid, 0, 0, &n);
  for (uint32_t i = 0; i < f.n; i++)
    alive += f.b[i].alive;
  assert_int_equal(n, alive);
  assert_int_equal(weft_grid_count(f.grid), alive);
  for (uint32_t k = 1; k < n; k++)
    assert_true(it[k - 1].e < it[k].e);
  slots_t slots = slots_of(&f);
  for (uint32_t k = 0; k < n; k++)
    assert_true(find_body(&f, &slots, it[k].e) >= 0);
  free(slots.at);
  gfx_free(&f);
}

static void test_grid_with_filters_entities(void **state) {
  (void)state;
  weft_grid_config_t c = area();
  gfx_t f = gfx_new(&c, true);
  wt_rng_t r = wt_rng(901);
  for (uint32_t i = 0; i < 1500; i++)
    spawn_random(&f, &r);
  rebuild(&f);
  check_grid(&f, true);
  uint32_t tagged = 0;
  for (uint32_t i = 0; i < f.n; i++)
    tagged += f.b[i].tagged;
  assert_true(tagged > 0 && tagged < f.n);
  gfx_free(&f);
}

/* Reads the grid from a system ordered after the builder. */
typedef struct reader_t {
  const weft_grid_t *grid;
  uint32_t seen;
} reader_t;

static int read_grid(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  (void)chunk;
  reader_t *rd = ctx->user;
  rd->seen = weft_grid_count(rd->grid);
  return 0;
}

static void test_grid_names_and_order(void **state) {
  (void)state;
  weft_grid_config_t c = area();
  gfx_t f = gfx_new(&c, false);
  weft_system_t found = 0;
  assert_int_equal(weft_system_lookup(f.w, "weft.grid.build", &found), WEFT_OK);
  assert_int_equal(found, f.build);
  weft_resource_t res = 0;
  assert_int_equal(weft_resource_lookup(f.w, "weft.grid.1", &res), WEFT_OK);
  assert_int_equal(res, weft_grid_resource(f.grid));
  /* One builder per grid. */
  assert_int_equal(weft_sys_grid(f.w, &f.std, f.grid, 0, 0, NULL), WEFT_EEXIST);

  /* A second grid: its own resource and a suffixed builder. */
  weft_grid_t *g2 = NULL;
  assert_int_equal(weft_grid_create(f.w, &c, &g2), WEFT_OK);
  assert_int_not_equal(weft_grid_resource(g2), weft_grid_resource(f.grid));
  assert_int_equal(weft_resource_lookup(f.w, "weft.grid.2", &res), WEFT_OK);
  assert_int_equal(res, weft_grid_resource(g2));
  weft_system_t b2 = 0;
  assert_int_equal(
      weft_sys_grid(f.w, &f.std, g2, 0, WEFT_PHASE_PRE_UPDATE, &b2), WEFT_OK);
  assert_int_equal(weft_system_lookup(f.w, "weft.grid.build.2", &found),
                   WEFT_OK);
  assert_int_equal(found, b2);

  /* A reader declared after the builder runs after it and sees the
   * rebuilt grid in the same phase. */
  reader_t rd = {f.grid, 12345};
  weft_system_desc_t d;
  memset(&d, 0, sizeof d);
  d.name = "reader";
  d.phase = WEFT_PHASE_FIXED_UPDATE;
  d.run = read_grid;
  d.user = &rd;
  d.res_read[0] = weft_grid_resource(f.grid);
  weft_system_t reader = 0;
  assert_int_equal(weft_system_register(f.w, &d, &reader), WEFT_OK);
  assert_true(weft_system_edge(f.w, f.build, reader));
  assert_false(weft_system_edge(f.w, reader, f.build));

  wt_rng_t r = wt_rng(3);
  for (uint32_t i = 0; i < 700; i++)
    spawn_random(&f, &r);
  rebuild(&f);
  assert_int_equal(rd.seen, 700);
  /* The second grid's builder is in PreUpdate and has not run. */
  assert_int_equal(weft_grid_count(g2), 0);
  assert_int_equal(weft_world_run_phase(f.w, WEFT_PHASE_PRE_UPDATE, 1.0 / 60),
                   WEFT_OK);
  assert_int_equal(weft_grid_count(g2), 700);

  assert_int_equal(weft_system_remove(f.w, b2), WEFT_OK);
  weft_grid_destroy(g2);
  /* A destroyed grid's number is not reused. */
  weft_grid_t *g3 = NULL;
  assert_int_equal(weft_grid_create(f.w, &c, &g3), WEFT_OK);
  assert_int_equal(weft_resource_lookup(f.w, "weft.grid.3", &res), WEFT_OK);
  assert_int_equal(res, weft_grid_resource(g3));
  weft_grid_destroy(g3);
  gfx_free(&f);
}

/*
 * Rebuilds of a world whose entities move but whose size stays allocate
 * nothing: not in the world (its counter), not on this thread (jemalloc's
 * counter, where the build uses jemalloc), and the grid keeps its arrays
 * (the item array would move: the grid allocates new arrays before it
 * frees the old ones). Growing the world then makes the grid grow, which
 * both probes see.
 */
static void test_grid_rebuild_allocates_nothing(void **state) {
  (void)state;
  weft_grid_config_t c = area();
  gfx_t f = gfx_new(&c, false);
  wt_rng_t r = wt_rng(11);
  for (uint32_t i = 0; i < 5000; i++)
    spawn_random(&f, &r);
  rebuild(&f);
  rebuild(&f);
  uint32_t n = 0;
  const weft_grid_item_t *base = weft_grid_cell(f.grid, 0, 0, &n);
  assert_non_null(base);
  wt_alloc_probe_t probe = wt_alloc_probe(f.w);
  for (uint32_t round = 0; round < 20; round++) {
    for (uint32_t i = 0; i < f.n; i += 7) {
      random_place(&r, &f.b[i]);
      weft_vec2_t p = {f.b[i].x, f.b[i].y};
      assert_int_equal(weft_set(f.w, f.b[i].e, f.std.position, &p), WEFT_OK);
    }
    rebuild(&f);
    assert_int_equal(weft_grid_count(f.grid), 5000);
    assert_ptr_equal(weft_grid_cell(f.grid, 0, 0, &n), base);
  }
  wt_assert_no_alloc(f.w, &probe, "20 rebuilds");
  check_grid(&f, false);

  /* Past the grid's capacity the arrays must grow, and the probes see it. */
  for (uint32_t i = 0; i < 20000; i++)
    spawn_random(&f, &r);
  probe = wt_alloc_probe(f.w);
  rebuild(&f);
  assert_int_equal(weft_grid_count(f.grid), 25000);
  assert_ptr_not_equal(weft_grid_cell(f.grid, 0, 0, &n), base);
  if (probe.counter)
    assert_true(*probe.counter - probe.bytes >=
                25000 * sizeof(weft_grid_item_t));
  check_grid(&f, false);
  gfx_free(&f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_grid_create_rejects_bad_config),
      cmocka_unit_test(test_grid_create_runs_out_of_resources),
      cmocka_unit_test(test_grid_max_cells_lifts_the_limit),
      cmocka_unit_test(test_grid_geometry_and_clamping),
      cmocka_unit_test(test_grid_items_sorted_in_their_cells),
      cmocka_unit_test(test_grid_bands_on_a_pool),
      cmocka_unit_test(test_grid_bands_of_rows),
      cmocka_unit_test(test_grid_large_grid_bands_without_pool),
      cmocka_unit_test(test_grid_long_runs_cut_in_pieces),
      cmocka_unit_test(test_grid_non_finite_positions_land_in_border_cells),
      cmocka_unit_test(test_grid_rebuild_follows_changes),
      cmocka_unit_test(test_grid_one_cell_in_handle_order),
      cmocka_unit_test(test_grid_with_filters_entities),
      cmocka_unit_test(test_grid_names_and_order),
      cmocka_unit_test(test_grid_rebuild_allocates_nothing),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
