/*
 * Collisions: a narrowphase for circles and axis-aligned boxes, and a
 * system that runs it over the pairs a spatial grid (grid.c) proposes.
 *
 * The system iterates the entities with Position and Collider chunk by
 * chunk; each entity looks at the 3x3 cells around its own and tests only
 * the items with a larger handle, so every pair is tested once, by the
 * chunk of its smaller handle, and the events a chunk emits follow its rows
 * and the grid's cell order. The events are therefore the same, in the same
 * order, on any number of threads.
 *
 * Completeness needs cell >= 2 * the largest circle radius or box half
 * extent: two overlapping shapes then have centres less than one cell
 * apart on each axis, so their (clamped) cells are neighbours.
 */
#include <math.h>
#include <string.h>

#include <weft.h>
#include <weft/systems.h>

#include "grid_internal.h"
#include "sys_internal.h"

/* How many rows ahead the callback prefetches the grid rows an entity
 * will look up, and the first items of those rows: entities come in chunk
 * order, unrelated to space, so each lookup would otherwise miss. */
#define COLLIDE_ROWS_AHEAD 16u
#define COLLIDE_ITEMS_AHEAD 8u
/* Rows whose cells the callback computes at a time (on the stack). */
#define COLLIDE_BLOCK 256u

/* What the system's callback needs; stored in a world resource, so the
 * world owns it and it lives as long as the system can run. */
typedef struct collide_ctx_t {
  const weft_grid_t *grid;
  weft_channel_t channel;
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

/* Tests entity e (collider self at (x, y), in cell (cx, cy)) against the
 * grid items of the 3x3 cells around it with a larger handle, emitting
 * what collides. */
static int collide_one(weft_sysctx_t *ctx, const collide_ctx_t *cc,
                       weft_entity_t e, const weft_collider_t *self, float x,
                       float y, int32_t cx, int32_t cy) {
  /* Three rows of three cells, each one contiguous stretch (cell by cell,
   * handle order within a cell): the events come out in the same order as
   * a cell-by-cell walk. */
  for (int32_t gy = cy - 1; gy <= cy + 1; gy++) {
    uint32_t n = 0;
    const weft_grid_item_t *items =
        weft__grid_row(cc->grid, cx - 1, cx + 1, gy, &n);
    for (uint32_t i = 0; i < n; i++) {
      const weft_grid_item_t *o = &items[i];
      if (o->e <= e || !layers_match(self, &o->collider))
        continue;
      weft_collision_t ev;
      memset(&ev, 0, sizeof ev);
      if (!weft_collide_test(self, x, y, &o->collider, o->x, o->y, &ev.nx,
                             &ev.ny, &ev.depth))
        continue;
      ev.a = e;
      ev.b = o->e;
      int rc = weft_sysctx_emit(ctx, cc->channel, &ev);
      if (rc)
        return rc;
    }
  }
  return 0;
}

static int collide(weft_sysctx_t *ctx, const weft_iter_t *it) {
  const collide_ctx_t *cc = ctx->user;
  const weft_grid_t *grid = cc->grid;
  void *pos[WEFT_MAX_FIELDS] = {0};
  weft_iter_fields(it, 0, pos);
  const float *px = pos[0], *py = pos[1];
  const weft_collider_t *col = weft_iter_column(it, 1);
  const uint32_t count = it->count;
  /* The cells of a block of rows and of the rows the prefetches look
   * ahead to, computed once in a loop of their own (branch-free, it
   * vectorizes) rather than three times per entity. */
  int32_t cxs[COLLIDE_BLOCK + COLLIDE_ROWS_AHEAD];
  int32_t cys[COLLIDE_BLOCK + COLLIDE_ROWS_AHEAD];
  for (uint32_t b0 = 0; b0 < count; b0 += COLLIDE_BLOCK) {
    uint32_t nb = count - b0 < COLLIDE_BLOCK ? count - b0 : COLLIDE_BLOCK;
    uint32_t nc = count - b0 < COLLIDE_BLOCK + COLLIDE_ROWS_AHEAD
                      ? count - b0
                      : COLLIDE_BLOCK + COLLIDE_ROWS_AHEAD;
    for (uint32_t i = 0; i < nc; i++)
      weft__grid_cell_xy(grid, px[b0 + i], py[b0 + i], &cxs[i], &cys[i]);
    for (uint32_t i = 0; i < nb; i++) {
      if (i + COLLIDE_ROWS_AHEAD < nc)
        weft__grid_prefetch_rows_at(grid, cxs[i + COLLIDE_ROWS_AHEAD],
                                    cys[i + COLLIDE_ROWS_AHEAD]);
      if (i + COLLIDE_ITEMS_AHEAD < nc)
        weft__grid_prefetch_items_at(grid, cxs[i + COLLIDE_ITEMS_AHEAD],
                                     cys[i + COLLIDE_ITEMS_AHEAD]);
      uint32_t r = b0 + i;
      const weft_collider_t *self = &col[r];
      if (!solid(self))
        continue;
      int rc = collide_one(ctx, cc, it->entities[r], self, px[r], py[r], cxs[i],
                           cys[i]);
      if (rc)
        return rc;
    }
  }
  return 0;
}

int weft_sys_collide(weft_world_t *world, const weft_std_t *std,
                     weft_grid_t *grid, weft_phase_t phase,
                     weft_system_t *out) {
  if (!world || !std || !grid || !weft_grid_resource(grid))
    return WEFT_EINVAL;
  static const char name[] = "weft.collide";
  weft_system_t found;
  if (weft_system_lookup(world, name, &found) == 0)
    return WEFT_EEXIST;

  /* The callback's context lives in a resource of the same name (a
   * separate namespace), reused if an earlier registration left one. */
  collide_ctx_t cc = {grid, std->collisions};
  weft_resource_t res = 0;
  int rc = weft__sys_state(world, name, &cc, sizeof cc, &res);
  if (rc)
    return rc;

  weft_system_desc_t d;
  memset(&d, 0, sizeof d);
  d.name = name;
  d.phase = phase;
  d.run = collide;
  d.user = weft_resource_get(world, res);
  d.query.include[0] = std->position;
  d.query.include[1] = std->collider;
  d.query.exclude[0] = std->dead;
  d.term_access[0] = WEFT_ACCESS_READ;
  d.term_access[1] = WEFT_ACCESS_READ;
  d.res_read[0] = weft_grid_resource(grid);
  d.emit[0] = std->collisions;
  /* Pairs cost far more than rows: smaller jobs spread the work. */
  d.batch = 512;
  weft_system_t id = 0;
  rc = weft_system_register(world, &d, &id);
  if (!rc && out)
    *out = id;
  return rc;
}
