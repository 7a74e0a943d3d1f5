/* SPDX-License-Identifier: MIT */
/*
 * Collisions: a narrowphase for circles and axis-aligned boxes, and a
 * system that runs it over the pairs a spatial grid (grid.c) proposes.
 *
 * The system is a task over the grid's snapshot, walked in cell order in
 * parts of a few grid rows spread over the pool. Each item with a solid
 * collider tests the items after it in its own cell, those of the cell to
 * its right and those of the three cells below, so every pair of items in
 * neighbouring cells is tested exactly once. Walking the grid keeps the
 * neighbourhoods in cache, where walking the entities in chunk order (as
 * this system first did) missed on almost every lookup. Each part emits
 * through its own part context (weft_sysctx_part()), so the events come
 * out in part order and, within a part, in the order of the walk: the same
 * on any number of threads.
 *
 * Completeness needs cell >= 2 * the largest circle radius or box half
 * extent: two overlapping shapes then have centres less than one cell
 * apart on each axis, so their (clamped) cells are neighbours.
 */
#include <math.h>
#include <stdatomic.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <weft.h>
#include <weft/builtin.h>

#include "grid_internal.h"
#include "builtin_internal.h"

/* What the system's callback needs; stored in a world resource, so the
 * world owns it and it lives as long as the system can run. */
typedef struct collide_ctx_t {
  const weft_grid_t *grid;
  weft_channel_t channel;
  weft_component_t ghost;
  weft_query_t *ghosts; /* the world's ghosts (NULL: no Ghost id) */
  /* Set by the task before its parts run: the world holds ghosts, so a
   * pair's parties are looked up for the tag. */
  bool any_ghost;
} collide_ctx_t;

/* A shape with no area is no collider (a zeroed grid item is one). */
static bool solid(const weft_collider_t *c) {
  if (c->shape == WEFT_SHAPE_CIRCLE)
    return c->r > 0.0f;
  if (c->shape == WEFT_SHAPE_BOX)
    return c->hx > 0.0f && c->hy > 0.0f;
  return false;
}

/* The sign of d, and for d == 0 the sign of the other axis' delta, then
 * +1: deterministic, and antisymmetric except for coincident centres. */
static float sign_of(float d, float other) {
  if (d != 0.0f)
    return d > 0.0f ? 1.0f : -1.0f;
  return other < 0.0f ? -1.0f : 1.0f;
}

static bool circle_circle(float ra, float rb, float dx, float dy, float *nx,
                          float *ny, float *depth) {
  float rs = ra + rb;
  float d2 = dx * dx + dy * dy;
  if (!(d2 < rs * rs))
    return false;
  float d = sqrtf(d2);
  if (d > 0.0f) {
    *nx = dx / d;
    *ny = dy / d;
  } else {
    *nx = 1.0f;
    *ny = 0.0f;
  }
  *depth = rs - d;
  return true;
}

/* Box of half extents (hx, hy) and a circle of radius r whose centre is at
 * (dx, dy) from the box's: the normal points from the box to the circle. */
static bool box_circle(float hx, float hy, float r, float dx, float dy,
                       float *nx, float *ny, float *depth) {
  float adx = fabsf(dx), ady = fabsf(dy);
  if (adx <= hx && ady <= hy) {
    /* The centre is inside: push out along the axis of least travel. */
    float px = hx - adx + r, py = hy - ady + r;
    if (px <= py) {
      *nx = sign_of(dx, dy);
      *ny = 0.0f;
      *depth = px;
    } else {
      *nx = 0.0f;
      *ny = sign_of(dy, dx);
      *depth = py;
    }
    return true;
  }
  /* Outside: from the closest point of the box. */
  float qx = dx < -hx ? -hx : (dx > hx ? hx : dx);
  float qy = dy < -hy ? -hy : (dy > hy ? hy : dy);
  float vx = dx - qx, vy = dy - qy;
  float d2 = vx * vx + vy * vy;
  if (!(d2 < r * r))
    return false;
  float d = sqrtf(d2); /* > 0: the centre is outside */
  *nx = vx / d;
  *ny = vy / d;
  *depth = r - d;
  return true;
}

static bool box_box(const weft_collider_t *a, const weft_collider_t *b,
                    float dx, float dy, float *nx, float *ny, float *depth) {
  float ox = a->hx + b->hx - fabsf(dx);
  float oy = a->hy + b->hy - fabsf(dy);
  if (!(ox > 0.0f && oy > 0.0f))
    return false;
  if (ox <= oy) {
    *nx = sign_of(dx, dy);
    *ny = 0.0f;
    *depth = ox;
  } else {
    *nx = 0.0f;
    *ny = sign_of(dy, dx);
    *depth = oy;
  }
  return true;
}

bool weft_collide_test(const weft_collider_t *a, float ax, float ay,
                       const weft_collider_t *b, float bx, float by, float *nx,
                       float *ny, float *depth) {
  if (!a || !b || !solid(a) || !solid(b))
    return false;
  float dx = bx - ax, dy = by - ay;
  float n0 = 0.0f, n1 = 0.0f, dep = 0.0f;
  bool hit;
  if (a->shape == WEFT_SHAPE_CIRCLE && b->shape == WEFT_SHAPE_CIRCLE) {
    hit = circle_circle(a->r, b->r, dx, dy, &n0, &n1, &dep);
  } else if (a->shape == WEFT_SHAPE_BOX && b->shape == WEFT_SHAPE_BOX) {
    hit = box_box(a, b, dx, dy, &n0, &n1, &dep);
  } else if (a->shape == WEFT_SHAPE_BOX) {
    hit = box_circle(a->hx, a->hy, b->r, dx, dy, &n0, &n1, &dep);
  } else {
    /* Circle a, box b: the box-to-circle normal, reversed. */
    hit = box_circle(b->hx, b->hy, a->r, -dx, -dy, &n0, &n1, &dep);
    n0 = -n0;
    n1 = -n1;
  }
  if (!hit)
    return false;
  if (nx)
    *nx = n0;
  if (ny)
    *ny = n1;
  if (depth)
    *depth = dep;
  return true;
}

/* Layer filtering as weft_collider_t documents it; a collider with layer
 * and mask both 0 is not filtered. */
static inline bool layers_match(const weft_collider_t *a,
                                const weft_collider_t *b) {
  if ((a->layer | a->mask) == 0 || (b->layer | b->mask) == 0)
    return true;
  return (a->layer & b->mask) != 0 || (b->layer & a->mask) != 0;
}

/* One part of a run: a band of COLLIDE_PART_ROWS grid rows. */
#define COLLIDE_PART_ROWS 8u

/* A run in progress, shared by its parts (on the task's stack). The
 * parts are taken band by band of the grid's last rebuild: band b's are
 * [next[b], end[b]). */
typedef struct collide_run_t {
  const weft_sysctx_t *task;
  const collide_ctx_t *cc;
  _Atomic int rc; /* the first error a part met; later parts stop */
  uint32_t nbands;
  uint32_t end[GRID_BANDS];
  _Atomic uint32_t next[GRID_BANDS];
} collide_run_t;

/* Tests items a and b, emitting their collision if they collide: the
 * smaller key (weft_grid_item_t.key: the handle without Key) is always the
 * event's a, and the narrowphase sees it first, so an event does not
 * depend on which item found the pair, nor, for keyed entities, on their
 * handles. */
static int collide_pair(weft_sysctx_t *ctx, const collide_ctx_t *cc,
                        const weft_grid_item_t *a, const weft_grid_item_t *b) {
  if (!layers_match(&a->collider, &b->collider))
    return 0;
  if (b->key < a->key || (b->key == a->key && b->e < a->e)) {
    const weft_grid_item_t *t = a;
    a = b;
    b = t;
  }
  weft_collision_t ev;
  memset(&ev, 0, sizeof ev);
  if (!weft_collide_test(&a->collider, a->x, a->y, &b->collider, b->x, b->y,
                         &ev.nx, &ev.ny, &ev.depth))
    return 0;
  /* Two ghosts: the worlds that own them report their contact. Looked up
   * only for pairs that touch, in worlds that hold ghosts. */
  if (cc->any_ghost && weft_has(ctx->world, a->e, cc->ghost) &&
      weft_has(ctx->world, b->e, cc->ghost))
    return 0;
  ev.a = a->e;
  ev.b = b->e;
  return weft_sysctx_emit(ctx, cc->channel, &ev);
}

/* How far a collider reaches from its centre along x and y: its radius
 * for a circle, its half extents for a box. */
static inline void reach(const weft_collider_t *c, float *rx, float *ry) {
  bool circle = c->shape == WEFT_SHAPE_CIRCLE;
  *rx = circle ? c->r : c->hx;
  *ry = circle ? c->r : c->hy;
}

/* The margin on the reach test below: far more than the rounding of the
 * narrowphase's few operations, so a pair it rejects is one the
 * narrowphase would have rejected too. */
#define COLLIDE_REACH_SLACK (1.0f + 1.0f / 256.0f)

/* The column of the cell of row `row` that holds item i: the cell of the
 * item's position when that is where the builder put it (always, bar
 * rounding in a caller's build), else found by walking the row. */
static int32_t collide_cell_of(const weft_grid_t *g, const uint32_t *row,
                               uint32_t i) {
  int32_t cx, cy;
  weft__grid_cell_xy(g, g->items[i].x, g->items[i].y, &cx, &cy);
  if (row[cx] <= i && i < row[cx + 1])
    return cx;
  cx = 0;
  while (row[cx + 1] <= i)
    cx++;
  return cx;
}

/*
 * The items of grid rows [y0, y1), each against half of its neighbourhood:
 * the items after it in its own cell and in the cell to its right (one
 * stretch, cells being contiguous within a row), and the three cells
 * below (another stretch). Every pair of items in neighbouring cells is
 * then tested exactly once, with no handle comparison to decide which
 * side tests it. The grid is cell-major, so consecutive items read nearly
 * the same stretches; empty cells cost nothing, the walk going from item
 * to item.
 */
/* Candidate pairs collide_rows() lists before testing them, and the most
 * candidates one item adds without a branch per candidate. */
#define COLLIDE_PAIRS 1024u
#define COLLIDE_NEAR 4u

/* A candidate pair: item indices into the grid's items. */
typedef struct collide_cand_t {
  uint32_t a, b;
} collide_cand_t;

/*
 * Tests the listed pairs, in order. Most neighbours in a neighbourhood do
 * not touch (nine in ten in the arena), so each pair is first rejected
 * when the centres lie farther apart, on either axis, than the two reaches
 * together: no pair of these shapes can overlap then. That test reads the
 * items' own fields, where the full one goes through the layer filter,
 * the solidity checks and the shape dispatch. A NaN fails both comparisons
 * and so still reaches the narrowphase. The pairs within reach are
 * compacted without a branch (one in ten, in no order a predictor could
 * learn), then the narrowphase runs over them.
 */
static int collide_listed(weft_sysctx_t *ctx, const collide_ctx_t *cc,
                          collide_cand_t *pairs, uint32_t n) {
  const weft_grid_item_t *items = cc->grid->items;
  uint32_t near = 0;
  for (uint32_t k = 0; k < n; k++) {
    const weft_grid_item_t *a = &items[pairs[k].a], *b = &items[pairs[k].b];
    float arx, ary, brx, bry;
    reach(&a->collider, &arx, &ary);
    reach(&b->collider, &brx, &bry);
    bool in = !(fabsf(b->x - a->x) > (arx + brx) * COLLIDE_REACH_SLACK) &
              !(fabsf(b->y - a->y) > (ary + bry) * COLLIDE_REACH_SLACK);
    pairs[near] = pairs[k];
    near += in;
  }
  for (uint32_t k = 0; k < near; k++) {
    int rc = collide_pair(ctx, cc, &items[pairs[k].a], &items[pairs[k].b]);
    if (rc)
      return rc;
  }
  return 0;
}

/* Candidate t of item i: the t-th item after it in its right stretch
 * (nright items), then the stretch below, from item below0 on. */
static inline collide_cand_t candidate(uint32_t i, uint32_t nright,
                                       uint32_t below0, uint32_t t) {
  return (collide_cand_t){i, t < nright ? i + 1 + t : below0 + (t - nright)};
}

/*
 * Lists item i's first COLLIDE_NEAR candidates at pairs[np...] whether or
 * not it has that many (the caller counts only the first m): no branch
 * per candidate. With SSE2 the four are worked out and stored at once,
 * where one at a time costs a select, a store and a counted add each.
 */
static inline void list_near(collide_cand_t *pairs, uint32_t i, uint32_t nright,
                             uint32_t below0) {
#if defined(__SSE2__)
  _Static_assert(COLLIDE_NEAR == 4 && sizeof(collide_cand_t) == 8,
                 "list_near stores four pairs of two words");
  /* nright <= COLLIDE_NEAR here, so the signed compare is exact. */
  const __m128i t = _mm_set_epi32(3, 2, 1, 0);
  const __m128i right = _mm_add_epi32(_mm_set1_epi32((int32_t)(i + 1)), t);
  const __m128i below =
      _mm_add_epi32(_mm_set1_epi32((int32_t)(below0 - nright)), t);
  const __m128i in_right = _mm_cmplt_epi32(t, _mm_set1_epi32((int32_t)nright));
  const __m128i b = _mm_or_si128(_mm_and_si128(in_right, right),
                                 _mm_andnot_si128(in_right, below));
  const __m128i a = _mm_set1_epi32((int32_t)i);
  _mm_storeu_si128((__m128i *)pairs, _mm_unpacklo_epi32(a, b));
  _mm_storeu_si128((__m128i *)(pairs + 2), _mm_unpackhi_epi32(a, b));
#else
  for (uint32_t t = 0; t < COLLIDE_NEAR; t++)
    pairs[t] = candidate(i, nright, below0, t);
#endif
}

/* Tests and empties the list when fewer than @p room pairs fit in it. */
static inline int make_room(weft_sysctx_t *ctx, const collide_ctx_t *cc,
                            collide_cand_t *pairs, uint32_t *np,
                            uint32_t room) {
  if (*np + room <= COLLIDE_PAIRS)
    return 0;
  int rc = collide_listed(ctx, cc, pairs, *np);
  *np = 0;
  return rc;
}

/*
 * The items of grid rows [y0, y1), each against half of its neighbourhood:
 * the items after it in its own cell and in the cell to its right (one
 * stretch, cells being contiguous within a row), and the three cells
 * below (another stretch). Every pair of items in neighbouring cells is
 * then tested exactly once, with no handle comparison to decide which
 * side tests it. The grid is cell-major, so consecutive items read nearly
 * the same stretches; empty cells cost nothing, the walk going from item
 * to item. The pairs are listed first and tested in blocks, in the order
 * listed: an item's candidates are few and vary (most have none), and a
 * loop over them per item mispredicted its end about once an item.
 */
static int collide_rows(weft_sysctx_t *ctx, const collide_ctx_t *cc, int32_t y0,
                        int32_t y1) {
  const weft_grid_t *g = cc->grid;
  const int32_t nx = g->nx;
  collide_cand_t pairs[COLLIDE_PAIRS];
  uint32_t np = 0;
  for (int32_t cy = y0; cy < y1; cy++) {
    const uint32_t *row = g->starts + (size_t)cy * (uint32_t)nx;
    /* Item by item, each finding its own cell: a cell holds about one
     * item, and a loop over a cell's items mispredicted its end whenever
     * one held two. */
    for (uint32_t i = row[0], end = row[nx]; i < end; i++) {
      int rc = make_room(ctx, cc, pairs, &np, COLLIDE_NEAR);
      if (rc)
        return rc;
      const int32_t cx = collide_cell_of(g, row, i);
      const uint32_t right_end = cx + 2 <= nx ? row[cx + 2] : row[nx];
      uint32_t nbelow = 0;
      const weft_grid_item_t *below =
          weft__grid_row(g, cx - 1, cx + 1, cy + 1, &nbelow);
      const uint32_t below0 = below ? (uint32_t)(below - g->items) : 0;
      const uint32_t nright = right_end - i - 1, m = nright + nbelow;
      const bool solid_a = solid(&g->items[i].collider);
      if (m <= COLLIDE_NEAR) {
        list_near(pairs + np, i, nright, below0);
        np += solid_a ? m : 0;
        continue;
      }
      if (!solid_a)
        continue;
      for (uint32_t t = 0; t < m; t++) {
        rc = make_room(ctx, cc, pairs, &np, 1);
        if (rc)
          return rc;
        pairs[np++] = candidate(i, nright, below0, t);
      }
    }
  }
  return np ? collide_listed(ctx, cc, pairs, np) : 0;
}

/* Parts [begin, end) of a run, on pool worker `worker`. */
static void collide_parts(void *arg, uint32_t begin, uint32_t end,
                          uint32_t worker) {
  collide_run_t *run = arg;
  const weft_grid_t *g = run->cc->grid;
  for (uint32_t p = begin; p < end; p++) {
    if (atomic_load_explicit(&run->rc, memory_order_relaxed))
      return;
    weft_sysctx_t part;
    int rc = weft_sysctx_part(run->task, worker, p, &part);
    if (!rc) {
      uint32_t y0 = p * COLLIDE_PART_ROWS, y1 = y0 + COLLIDE_PART_ROWS;
      if (y1 > (uint32_t)g->ny)
        y1 = (uint32_t)g->ny;
      rc = collide_rows(&part, run->cc, (int32_t)y0, (int32_t)y1);
      /* The part's items count as the entities the system processed. */
      const uint32_t *starts = g->starts + (size_t)y0 * (uint32_t)g->nx;
      weft_sysctx_count(&part, starts[(size_t)(y1 - y0) * (uint32_t)g->nx] -
                                   starts[0]);
    }
    if (rc) {
      int none = 0;
      atomic_compare_exchange_strong(&run->rc, &none, rc);
      return;
    }
  }
}

/* Takes and runs the parts of band b left, one at a time. */
static void take_band(collide_run_t *run, uint32_t b, uint32_t worker) {
  for (;;) {
    uint32_t p =
        atomic_fetch_add_explicit(&run->next[b], 1, memory_order_relaxed);
    if (p >= run->end[b])
      return;
    collide_parts(run, p, p + 1, worker);
  }
}

/*
 * A worker's share of a run: first the parts of the bands it sorted in the
 * grid's rebuild, whose items and cells are in its cache, then what is
 * left of the others: a line sorted on another core (whose L3 may not be
 * this one's) is slow to come over, and spread over the pool as one
 * range each, half of a worker's rows had been sorted elsewhere.
 */
static void collide_job(void *arg, uint32_t worker) {
  collide_run_t *run = arg;
  const weft_grid_t *g = run->cc->grid;
  for (uint32_t b = 0; b < run->nbands; b++)
    if (g->band_worker[b] == worker)
      take_band(run, b, worker);
  for (uint32_t b = 0; b < run->nbands; b++)
    take_band(run, b, worker);
}

/*
 * The task: the grid's rows in parts of COLLIDE_PART_ROWS, spread over the
 * pool (one job per worker, each taking parts band by band). Each part
 * emits through its own part context, so the events come out in part
 * order, hence in cell order, whichever worker ran which part. A part
 * belongs to the band of its first row.
 */
static int collide(weft_sysctx_t *ctx, const weft_iter_t *none) {
  (void)none;
  collide_ctx_t *cc = ctx->user;
  const weft_grid_t *g = cc->grid;
  if (!g->items || g->count == 0 || g->ny <= 0)
    return 0;
  cc->any_ghost = cc->ghosts && weft_query_count(cc->ghosts) > 0;
  collide_run_t run = {.task = ctx, .cc = cc, .nbands = g->nbands};
  atomic_init(&run.rc, 0);
  const uint32_t nx = (uint32_t)g->nx, rows = COLLIDE_PART_ROWS;
  for (uint32_t b = 0; b < run.nbands; b++) {
    uint32_t y0 = g->band_lo[b] / nx, y1 = g->band_lo[b + 1] / nx;
    atomic_init(&run.next[b], (y0 + rows - 1) / rows);
    run.end[b] = (y1 + rows - 1) / rows;
  }
  weft_counter_t done;
  uint32_t helpers =
      weft__builtin_helpers(ctx, collide_job, &run, UINT32_MAX, &done);
  collide_job(&run, weft_sysctx_pool_worker(ctx));
  weft__builtin_join(ctx, &done, helpers); /* the jobs read the run here */
  return atomic_load_explicit(&run.rc, memory_order_relaxed);
}

int weft_sys_collide(weft_world_t *world, const weft_std_t *std,
                     weft_grid_t *grid, weft_phase_t phase,
                     weft_system_t *out) {
  if (!world || !std || !grid || !weft_grid_resource(grid))
    return weft_world_fail(world, WEFT_EINVAL, "weft_sys_collide: %s",
                           !std    ? "std is NULL"
                           : !grid ? "the grid is NULL"
                                   : "the grid has no resource");
  static const char name[] = "weft.collide";
  int rc = weft__builtin_unique(world, "weft_sys_collide", name);
  if (rc)
    return rc;

  /* The callback's context lives in a resource of the same name (a
   * separate namespace), reused if an earlier registration left one. */
  collide_ctx_t cc = {grid, std->collisions, std->ghost, NULL, false};
  weft_resource_t res = 0;
  if (weft_resource_lookup(world, name, &res) == 0 &&
      weft_resource_size(world, res) == sizeof cc) {
    collide_ctx_t *old = weft_resource_get(world, res);
    if (old && old->ghosts)
      weft_query_destroy(old->ghosts);
  }
  rc = weft__builtin_state(world, name, &cc, sizeof cc, &res);
  if (rc)
    return rc;
  collide_ctx_t *kept = weft_resource_get(world, res);
  if (std->ghost) {
    weft_query_desc_t qd;
    memset(&qd, 0, sizeof qd);
    qd.include[0] = std->ghost;
    rc = weft_query_create(world, &qd, &kept->ghosts);
    if (rc)
      return rc;
  }

  weft_system_desc_t d = weft__builtin_desc(name, phase, collide, kept);
  /* A task: everything it reads is the grid's snapshot, and the Ghost
   * tags of the pairs that touch. */
  d.res_read[0] = weft_grid_resource(grid);
  d.read[0] = std->ghost;
  d.emit[0] = std->collisions;
  return weft__builtin_register(world, &d, out);
}
