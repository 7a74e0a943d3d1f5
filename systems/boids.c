/* SPDX-License-Identifier: MIT */
/*
 * "weft.boids": separation, alignment and cohesion over a grid snapshot.
 *
 * Every boid reads its neighbours from the grid's snapshot (positions and
 * velocities as they were when the grid was rebuilt), never from the
 * chunks other jobs are writing, so the boids of one tick see one state
 * and the system can write velocities in place, chunk by chunk, on any
 * number of threads.
 *
 * The kernel (weft_boids_steer), for boid s with neighbours o_1 .. o_n in
 * key order (weft_grid_item_t.key: the Key's id, or the handle), with
 * d_i = s - o_i (positions), all in float:
 *
 *   sep = sum over i with 0 < |d_i|^2 < min_distance^2 of d_i / |d_i|^2
 *         (the unnormalized inverse-distance push: magnitude 1 / |d_i|;
 *         coincident boids give no direction and are left out)
 *   ali = (sum of o_i.v) / n - s.v
 *   coh = (sum of (o_i - s)) / n   (offsets, not absolute positions, so
 *         large coordinates lose no precision)
 *   v'  = s.v + dt * (ws * sep + wa * ali + wc * coh), per component,
 *         then scaled down to max_speed when faster.
 *
 * With no neighbour, v' is s.v (clamped). The sums run in the order the
 * neighbours are given; the system collects, row by row of the 3x3 cells
 * around the boid, the boids closer than the radius (self left out), puts
 * them in key order and feeds the same accumulator as
 * weft_boids_steer(), so a system step equals the kernel on the neighbour
 * list in key order, bit for bit. Ordering by key rather than handle
 * makes a keyed boid's step depend on its neighbours' values alone, not
 * on where or when they were spawned, which is what lets a world split in
 * regions (with ghost copies of the neighbours across a boundary) step
 * each boid as one world holding all would. Self is recognised by handle:
 * a ghost is another entity of this world, even with the key of the boid
 * it copies. How it orders them depends on how
 * many there are: by rank up to 16, by merging the cells' runs up to 512,
 * and past that by merging the cells' items on the fly, which needs no
 * buffer, however dense the flock.
 *
 * Two systems do the work. "weft.boids.plan", a task, steers every item
 * of the grid in the grid's own order, where a boid's neighbourhood is in
 * cache, and notes each step with the inputs it was made from;
 * "weft.boids", over the boids' chunks, then writes each boid's planned
 * step, or works it out itself where the plan has none made from the
 * boid's current position and velocity (see plan_run()).
 *
 * The resolved settings, the grid pointer and where the plan is live in a
 * world resource ("weft.boids.config"), so the caller's config may be
 * temporary; the plan itself is scratch the grid keeps for its consumer.
 */
#include <math.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>

#include <weft.h>
#include <weft/builtin.h>

#include "grid_internal.h"
#include "builtin_internal.h"

#define BOIDS_NAME "weft.boids"
#define BOIDS_CONFIG "weft.boids.config"
#define BOIDS_BATCH 256u
/* How many rows ahead a chunk's loop prefetches the grid rows, then the
 * first items, an entity will read (chunk order is unrelated to space). */
#define BOIDS_ROWS_AHEAD 16u
#define BOIDS_ITEMS_AHEAD 8u
/* Neighbours within the radius one boid buffers (12 KiB of stack); a
 * denser flock takes the streaming merge. */
#define BOIDS_NEAR_MAX 512u
/* Neighbours steer_one() puts in order by rank (n^2 comparisons); more go
 * to the run merge (9n). */
#define BOIDS_RANK_MAX 16u

/* Rows of grid cells one part of the plan covers (plan_run()). */
#define BOIDS_PLAN_ROWS 8u
/* How many rows ahead the planned chunk loop prefetches the slot map, then
 * the plan entry it names. */
#define BOIDS_MAP_AHEAD 16u
#define BOIDS_PLAN_AHEAD 8u
#define BOIDS_PLAN_NAME "weft.boids.plan"

/* One grid item's step, planned in grid order: the item's handle, the bits
 * of the position and velocity the step was worked out from, and the new
 * velocity. Half a cache line. */
typedef struct boid_plan_t {
  weft_entity_t e;
  uint32_t bits[4]; /* x, y, vx, vy */
  weft_vec2_t v;
} boid_plan_t;

_Static_assert(sizeof(boid_plan_t) == 32, "a plan entry is 32 bytes");
_Static_assert(offsetof(weft_grid_item_t, vy) ==
                   offsetof(weft_grid_item_t, x) + 3 * sizeof(float),
               "a grid item's x, y, vx, vy are contiguous");

typedef struct boids_cfg_t {
  weft_grid_t *grid;
  weft_boids_config_t c; /* resolved: no zero defaults left */
  /* The plan (see plan_run()), in the grid's scratch: current while
   * `builds` is the grid's and `dt` the step's. */
  uint64_t builds;
  float dt;
  boid_plan_t *plan;   /* nplan entries, in the grid's item order */
  uint32_t *slot_item; /* entity slot -> its item (unchecked), nslots */
  uint32_t nplan, nslots;
  weft_query_t *boids; /* the chunk loop's entities, counted */
} boids_cfg_t;

/* The neighbour sums of one boid. */
typedef struct acc_t {
  float sx, sy; /* separation */
  float vx, vy; /* neighbour velocities */
  float ox, oy; /* offsets other - self */
  uint32_t n;
} acc_t;

/* Fills the defaults; @p cell stands in for a zero radius. */
static weft_boids_config_t resolve(const weft_boids_config_t *in, float cell) {
  weft_boids_config_t c;
  memset(&c, 0, sizeof c);
  if (in)
    c = *in;
  if (c.radius == 0.0f)
    c.radius = cell;
  if (c.separation == 0.0f && c.alignment == 0.0f && c.cohesion == 0.0f) {
    c.separation = 1.5f;
    c.alignment = 1.0f;
    c.cohesion = 1.0f;
  }
  if (c.min_distance == 0.0f)
    c.min_distance = c.radius * 0.5f;
  if (c.max_speed == 0.0f)
    c.max_speed = 10.0f;
  return c;
}

/* Adds neighbour @p o; (dx, dy) = self - o and d2 its squared length. */
static inline void acc_add(acc_t *a, const weft_grid_item_t *o, float dx,
                           float dy, float d2, float min2) {
  if (d2 > 0.0f && d2 < min2) {
    a->sx += dx / d2;
    a->sy += dy / d2;
  }
  a->vx += o->vx;
  a->vy += o->vy;
  a->ox -= dx;
  a->oy -= dy;
  a->n++;
}

static inline weft_vec2_t acc_finish(const acc_t *a,
                                     const weft_boids_config_t *c,
                                     const weft_grid_item_t *self, float dt) {
  weft_vec2_t v = {self->vx, self->vy};
  if (a->n) {
    float n = (float)a->n;
    float ax = a->vx / n - self->vx, ay = a->vy / n - self->vy;
    float cx = a->ox / n, cy = a->oy / n;
    float fx = c->separation * a->sx + c->alignment * ax + c->cohesion * cx;
    float fy = c->separation * a->sy + c->alignment * ay + c->cohesion * cy;
    v.x += dt * fx;
    v.y += dt * fy;
  }
  float s2 = v.x * v.x + v.y * v.y;
  if (s2 > c->max_speed * c->max_speed) {
    float k = c->max_speed / sqrtf(s2);
    v.x *= k;
    v.y *= k;
  }
  return v;
}

weft_vec2_t weft_boids_steer(const weft_boids_config_t *config,
                             const weft_grid_item_t *self,
                             const weft_grid_item_t *nb, uint32_t n, float dt) {
  weft_vec2_t zero = {0.0f, 0.0f};
  if (!self)
    return zero;
  weft_boids_config_t c = resolve(config, 0.0f);
  float min2 = c.min_distance * c.min_distance;
  acc_t a;
  memset(&a, 0, sizeof a);
  for (uint32_t i = 0; nb && i < n; i++) {
    float dx = self->x - nb[i].x, dy = self->y - nb[i].y;
    acc_add(&a, &nb[i], dx, dy, dx * dx + dy * dy, min2);
  }
  return acc_finish(&a, &c, self, dt);
}

/* One cell's items not merged yet. */
typedef struct cursor_t {
  const weft_grid_item_t *p, *end;
} cursor_t;

/* The 3x3 cells around self's cell that hold items, as cursors, row by
 * row and left to right. A row's cells are read from one stretch of its
 * offsets (cells off the grid hold nothing), where a lookup per cell
 * repeated the row's checks nine times a boid. */
static uint32_t cells_around(const boids_cfg_t *cfg,
                             const weft_grid_item_t *self, cursor_t cur[9]) {
  const weft_grid_t *g = cfg->grid;
  int32_t cx, cy;
  weft__grid_cell_xy(g, self->x, self->y, &cx, &cy);
  if (!g->items)
    return 0;
  const int32_t x0 = cx > 0 ? cx - 1 : 0;
  const int32_t x1 = cx + 1 < g->nx ? cx + 1 : g->nx - 1;
  uint32_t k = 0;
  for (int32_t y = cy - 1; y <= cy + 1; y++) {
    if (y < 0 || y >= g->ny)
      continue;
    const uint32_t *row = g->starts + (size_t)y * (uint32_t)g->nx;
    for (int32_t x = x0; x <= x1; x++) {
      uint32_t first = row[x], end = row[x + 1];
      cur[k].p = g->items + first;
      cur[k].end = g->items + end;
      k += end > first;
    }
  }
  return k;
}

/* The streaming form: a k-way merge by key of every item of the 3x3
 * cells (disjoint, each sorted), filtering as it goes. Needs no buffer,
 * however dense the flock; steer_one() takes it when its buffer is full. */
static weft_vec2_t steer_merge(const boids_cfg_t *cfg,
                               const weft_grid_item_t *self, float dt) {
  const weft_boids_config_t *c = &cfg->c;
  const float r2 = c->radius * c->radius;
  const float min2 = c->min_distance * c->min_distance;
  cursor_t cur[9];
  uint32_t k = cells_around(cfg, self, cur);
  acc_t a;
  memset(&a, 0, sizeof a);
  while (k) {
    uint32_t m = 0;
    for (uint32_t j = 1; j < k; j++)
      if (cur[j].p->key < cur[m].p->key)
        m = j;
    const weft_grid_item_t *o = cur[m].p++;
    if (cur[m].p == cur[m].end)
      cur[m] = cur[--k];
    if (o->e == self->e)
      continue;
    float dx = self->x - o->x, dy = self->y - o->y;
    float d2 = dx * dx + dy * dy;
    if (d2 < r2)
      acc_add(&a, o, dx, dy, d2, min2);
  }
  return acc_finish(&a, c, self, dt);
}

/* A neighbour within the radius, as the accumulator takes it, and its
 * key (the merge's). */
typedef struct near_t {
  const weft_grid_item_t *o;
  uint64_t key;
  float dx, dy, d2;
} near_t;

/*
 * One boid's new velocity from its neighbours' runs: the neighbours within
 * the radius are found first, cell by cell, into runs that stay in key
 * order (each cell is); only those runs are then merged by key into the
 * accumulator. Merging every item of the 3x3 cells instead, most of them
 * out of range (the circle covers a third of the square), had cost nine
 * comparisons per item. A flock denser than the buffer takes the streaming
 * merge. steer_one() takes this path for boids with many neighbours.
 */
static weft_vec2_t steer_runs(const boids_cfg_t *cfg,
                              const weft_grid_item_t *self, float dt) {
  const weft_boids_config_t *c = &cfg->c;
  const float r2 = c->radius * c->radius;
  const float min2 = c->min_distance * c->min_distance;
  cursor_t cell[9];
  const uint32_t ncells = cells_around(cfg, self, cell);
  /* One spare entry: every candidate is written at buf[n] and kept by
   * counting it, so the loop has no branch on the distance, which a third
   * of the candidates pass in no order a predictor could learn. */
  near_t buf[BOIDS_NEAR_MAX + 1];
  uint32_t run_at[9], run_end[9], nruns = 0, n = 0;
  for (uint32_t j = 0; j < ncells; j++) {
    uint32_t start = n;
    for (const weft_grid_item_t *o = cell[j].p; o < cell[j].end; o++) {
      float dx = self->x - o->x, dy = self->y - o->y;
      float d2 = dx * dx + dy * dy;
      buf[n] = (near_t){o, o->key, dx, dy, d2};
      n += (d2 < r2) & (o->e != self->e);
      if (n > BOIDS_NEAR_MAX)
        return steer_merge(cfg, self, dt);
    }
    run_at[nruns] = start;
    run_end[nruns] = n;
    nruns += n > start;
  }
  /* The merge, also without data-dependent branches: each run's head
   * key (UINT64_MAX once it is used up; every run, used or not, is
   * looked at), the smallest taken each step. Keys are unique, and
   * UINT64_MAX is no handle and a reserved key (weft_key_t). */
  uint64_t head[9];
  for (uint32_t j = 0; j < 9; j++)
    head[j] = j < nruns ? buf[run_at[j]].key : UINT64_MAX;
  acc_t a;
  memset(&a, 0, sizeof a);
  for (uint32_t left = n; left; left--) {
    uint32_t m = 0;
    for (uint32_t j = 1; j < 9; j++)
      m = head[j] < head[m] ? j : m;
    const near_t *q = &buf[run_at[m]++];
    /* buf[run_at[m]] is inside the buffer (run ends are at most n, and
     * buf holds one entry past the largest n) and read only when the run
     * still has it. */
    head[m] = run_at[m] < run_end[m] ? buf[run_at[m]].key : UINT64_MAX;
    acc_add(&a, q->o, q->dx, q->dy, q->d2, min2);
  }
  return acc_finish(&a, c, self, dt);
}

/*
 * One boid's new velocity, the common case: a few neighbours. A row's
 * three cells are one stretch of the grid's items, so the candidates are
 * read in three loops, one a row, with no per-cell bookkeeping; the few
 * within the radius are then put in key order by rank (each one's
 * place is the number of smaller keys among them: n^2 comparisons, no
 * branch on the data) and summed in that order. That is the order
 * steer_runs() merges them into, so the result is the same, bit for bit,
 * without the cells' cursors and the nine-way merge (see
 * docs/performance-notes.md, systems/boids.c).
 * More than BOIDS_RANK_MAX neighbours go to steer_runs(), whose merge
 * costs n * 9 comparisons, not n^2.
 */
static weft_vec2_t steer_one(const boids_cfg_t *cfg,
                             const weft_grid_item_t *self, float dt) {
  const weft_boids_config_t *c = &cfg->c;
  const weft_grid_t *g = cfg->grid;
  const float r2 = c->radius * c->radius;
  const float min2 = c->min_distance * c->min_distance;
  if (!g->items)
    return acc_finish(&(acc_t){0}, c, self, dt);
  int32_t cx, cy;
  weft__grid_cell_xy(g, self->x, self->y, &cx, &cy);
  const int32_t x0 = cx > 0 ? cx - 1 : 0;
  const int32_t x1 = cx + 1 < g->nx ? cx + 1 : g->nx - 1;
  const int32_t y0 = cy > 0 ? cy - 1 : 0;
  const int32_t y1 = cy + 1 < g->ny ? cy + 1 : g->ny - 1;
  /* The three rows' clamps are worked out once here, where a call to
   * weft__grid_row() per row repeats them and its checks. As in
   * steer_runs(), every candidate is written and the kept ones
   * counted, with one spare entry; but only its address and key: the
   * few kept have their offsets worked out again below, the same
   * arithmetic on the same values. */
  const weft_grid_item_t *nb[BOIDS_RANK_MAX + 1];
  uint64_t key[BOIDS_RANK_MAX + 1];
  uint32_t n = 0;
  for (int32_t y = y0; y <= y1; y++) {
    const uint32_t *row = g->starts + (size_t)y * (uint32_t)g->nx;
    const weft_grid_item_t *o = g->items + row[x0];
    const weft_grid_item_t *end = g->items + row[x1 + 1];
    for (; o < end; o++) {
      float dx = self->x - o->x, dy = self->y - o->y;
      nb[n] = o;
      key[n] = o->key;
      n += (dx * dx + dy * dy < r2) & (o->e != self->e);
      if (n > BOIDS_RANK_MAX)
        return steer_runs(cfg, self, dt);
    }
  }
  uint8_t at[BOIDS_RANK_MAX]; /* at[rank] = index in nb */
  for (uint32_t i = 0; i < n; i++) {
    uint32_t rank = 0;
    for (uint32_t j = 0; j < n; j++)
      rank += key[j] < key[i];
    at[rank] = (uint8_t)i;
  }
  acc_t a;
  memset(&a, 0, sizeof a);
  for (uint32_t k = 0; k < n; k++) {
    const weft_grid_item_t *o = nb[at[k]];
    float dx = self->x - o->x, dy = self->y - o->y;
    acc_add(&a, o, dx, dy, dx * dx + dy * dy, min2);
  }
  return acc_finish(&a, c, self, dt);
}

/*
 * Planning, the first of the two systems: every item of the grid steered
 * in the grid's own order, rows of cells in parts over the pool. A boid's
 * neighbourhood is then the few rows the walk is on, in cache, where in
 * chunk order (unrelated to space) each boid's three rows and their items
 * were misses. Each item's step goes to its plan entry,
 * with the inputs it was worked out from, and the item's index to the
 * entry of the entity's slot in slot_item; the chunk loop (boids_run())
 * then only copies it, after checking it was made for that entity and
 * its current position and velocity (see docs/performance-notes.md,
 * systems/boids.c).
 */
typedef struct plan_job_t {
  boids_cfg_t *cfg;
  float dt;
  _Atomic uint32_t slot_end; /* 1 + the largest slot past nslots, or 0 */
} plan_job_t;

/* Plans the items of parts [begin, end). */
static void plan_rows(void *arg, uint32_t begin, uint32_t end,
                      uint32_t worker) {
  (void)worker;
  plan_job_t *job = arg;
  const boids_cfg_t *cfg = job->cfg;
  const weft_grid_t *g = cfg->grid;
  const uint32_t nx = (uint32_t)g->nx, ny = (uint32_t)g->ny;
  uint32_t y0 = begin * BOIDS_PLAN_ROWS, y1 = end * BOIDS_PLAN_ROWS;
  if (y1 > ny)
    y1 = ny;
  boid_plan_t *plan = cfg->plan;
  uint32_t *slot_item = cfg->slot_item;
  const uint32_t nslots = cfg->nslots;
  uint32_t top = 0;
  for (uint32_t i = g->starts[(size_t)y0 * nx],
                last = g->starts[(size_t)y1 * nx];
       i < last; i++) {
    const weft_grid_item_t *it = &g->items[i];
    boid_plan_t *p = &plan[i];
    p->e = it->e;
    memcpy(p->bits, &it->x, sizeof p->bits);
    p->v = steer_one(cfg, it, job->dt);
    const uint32_t s = weft_entity_index(it->e);
    if (s < nslots)
      slot_item[s] = i;
    else if (s >= top)
      top = s + 1;
  }
  /* A slot past the map: the task grows it after the parts. */
  uint32_t seen = atomic_load_explicit(&job->slot_end, memory_order_relaxed);
  while (top > seen && !atomic_compare_exchange_weak_explicit(
                           &job->slot_end, &seen, top, memory_order_relaxed,
                           memory_order_relaxed))
    ;
}

static int plan_run(weft_sysctx_t *ctx, const weft_iter_t *none) {
  (void)none;
  boids_cfg_t *cfg = ctx->user;
  weft_grid_t *g = cfg->grid;
  cfg->builds = 0; /* no plan until this one is complete */
  const uint32_t n = g->items ? g->count : 0;
  /* A grid of more than the boids (one over every entity, shared with
   * collide, say) would have every item steered for a few boids: past
   * twice as many items as boids, the chunk loop steers them itself. */
  if (n == 0 || g->ny <= 0 || n / 2 > weft_query_count(cfg->boids))
    return 0;
  boid_plan_t *plan = weft__grid_aux(g, 0, (size_t)n * sizeof *plan);
  if (!plan)
    return weft_world_fail(ctx->world, WEFT_ENOMEM,
                           "weft.boids.plan: out of memory for %u entries", n);
  cfg->plan = plan;
  plan_job_t job = {.cfg = cfg, .dt = (float)ctx->dt};
  atomic_init(&job.slot_end, 0);
  /* Parts of BOIDS_PLAN_ROWS rows over the pool. Taking first the parts
   * of the bands a worker sorted in the rebuild, as collide does, made no
   * difference here (400k boids, two workers, alternated three times). */
  const uint32_t parts =
      ((uint32_t)g->ny + BOIDS_PLAN_ROWS - 1) / BOIDS_PLAN_ROWS;
  weft__builtin_split(ctx, parts, 1, plan_rows, &job);
  /* Slots the map did not reach (the first run, or more entities since):
   * grow it and fill it from the plan, once. */
  const uint32_t end =
      atomic_load_explicit(&job.slot_end, memory_order_relaxed);
  if (end > cfg->nslots) {
    uint32_t *map = weft__grid_aux(g, 1, (size_t)end * sizeof *map);
    if (!map)
      return weft_world_fail(ctx->world, WEFT_ENOMEM,
                             "weft.boids.plan: out of memory for %u slots",
                             end);
    cfg->slot_item = map;
    cfg->nslots = (uint32_t)(g->aux_bytes[1] / sizeof *map);
    /* Slots with no item this run name none (past any plan), so that
     * the chunk loop never reads an uninitialised word. */
    memset(map, 0xff, (size_t)cfg->nslots * sizeof *map);
    for (uint32_t i = 0; i < n; i++)
      map[weft_entity_index(plan[i].e)] = i;
  }
  cfg->nplan = n;
  cfg->dt = job.dt;
  cfg->builds = g->builds;
  weft_sysctx_count(ctx, n);
  return 0;
}

/* The entity's planned step, if the plan holds one for it made from
 * exactly these values; NULL otherwise. */
static inline const boid_plan_t *planned(const boids_cfg_t *cfg,
                                         weft_entity_t e, const float v[4]) {
  const uint32_t s = weft_entity_index(e);
  if (s >= cfg->nslots)
    return NULL;
  const uint32_t i = cfg->slot_item[s];
  if (i >= cfg->nplan)
    return NULL;
  const boid_plan_t *p = &cfg->plan[i];
  return p->e == e && !memcmp(p->bits, v, sizeof p->bits) ? p : NULL;
}

/* The chunk loop with no plan to read: every boid steered here, its
 * neighbourhood prefetched rows ahead. */
static void run_direct(const boids_cfg_t *cfg, const weft_iter_t *chunk,
                       const float *px, const float *py, float *vx, float *vy,
                       float dt) {
  weft_grid_item_t self;
  memset(&self, 0, sizeof self);
  for (uint32_t r = 0; r < chunk->count; r++) {
    if (r + BOIDS_ROWS_AHEAD < chunk->count)
      weft__grid_prefetch_rows(cfg->grid, px[r + BOIDS_ROWS_AHEAD],
                               py[r + BOIDS_ROWS_AHEAD]);
    if (r + BOIDS_ITEMS_AHEAD < chunk->count)
      weft__grid_prefetch_items(cfg->grid, px[r + BOIDS_ITEMS_AHEAD],
                                py[r + BOIDS_ITEMS_AHEAD]);
    self.e = chunk->entities[r];
    self.x = px[r];
    self.y = py[r];
    self.vx = vx[r];
    self.vy = vy[r];
    weft_vec2_t v = steer_one(cfg, &self, dt);
    vx[r] = v.x;
    vy[r] = v.y;
  }
}

/*
 * The chunk loop with a plan: each boid's step is copied from its plan
 * entry (prefetched in two stages, the slot map's word, then the entry),
 * or worked out here when the plan has none for it (a boid the grid does
 * not hold, or whose position or velocity changed after the rebuild).
 */
static void run_planned(const boids_cfg_t *cfg, const weft_iter_t *chunk,
                        const float *px, const float *py, float *vx, float *vy,
                        float dt) {
  const weft_entity_t *ents = chunk->entities;
  const uint32_t n = chunk->count;
  weft_grid_item_t self;
  memset(&self, 0, sizeof self);
  for (uint32_t r = 0; r < n; r++) {
    if (r + BOIDS_MAP_AHEAD < n) {
      uint32_t s = weft_entity_index(ents[r + BOIDS_MAP_AHEAD]);
      if (s < cfg->nslots)
        __builtin_prefetch(&cfg->slot_item[s], 0, 0);
    }
    if (r + BOIDS_PLAN_AHEAD < n) {
      uint32_t s = weft_entity_index(ents[r + BOIDS_PLAN_AHEAD]);
      uint32_t i = s < cfg->nslots ? cfg->slot_item[s] : UINT32_MAX;
      if (i < cfg->nplan)
        __builtin_prefetch(&cfg->plan[i], 0, 0);
    }
    const float now[4] = {px[r], py[r], vx[r], vy[r]};
    const boid_plan_t *p = planned(cfg, ents[r], now);
    weft_vec2_t v;
    if (p) {
      v = p->v;
    } else {
      self.e = ents[r];
      self.x = now[0];
      self.y = now[1];
      self.vx = now[2];
      self.vy = now[3];
      v = steer_one(cfg, &self, dt);
    }
    vx[r] = v.x;
    vy[r] = v.y;
  }
}

static int boids_run(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  const boids_cfg_t *cfg = ctx->user;
  void *pos[WEFT_MAX_FIELDS], *vel[WEFT_MAX_FIELDS];
  if (weft_iter_fields(chunk, 0, pos) != 2 ||
      weft_iter_fields(chunk, 1, vel) != 2)
    return WEFT_ELAYOUT; /* not the std Position / Velocity */
  const float dt = (float)ctx->dt;
  if (cfg->builds && cfg->builds == cfg->grid->builds && cfg->dt == dt)
    run_planned(cfg, chunk, pos[0], pos[1], vel[0], vel[1], dt);
  else
    run_direct(cfg, chunk, pos[0], pos[1], vel[0], vel[1], dt);
  return 0;
}

static bool finite_nonneg(float x) {
  return isfinite(x) && x >= 0.0f;
}

int weft_sys_boids(weft_world_t *world, const weft_std_t *std,
                   weft_grid_t *grid, const weft_boids_config_t *config,
                   weft_system_t *out) {
  if (!world || !std || !grid)
    return weft_world_fail(world, WEFT_EINVAL, "weft_sys_boids: %s is NULL",
                           !std ? "std" : "the grid");
  const float cell = weft_grid_cell_size(grid);
  weft_boids_config_t c = resolve(config, cell);
  /* A radius past the cell size would miss neighbours two cells away. */
  if (!finite_nonneg(c.radius) || !(c.radius > 0.0f) || c.radius > cell ||
      !finite_nonneg(c.min_distance) || !finite_nonneg(c.max_speed) ||
      !isfinite(c.separation) || !isfinite(c.alignment) ||
      !isfinite(c.cohesion))
    return weft_world_fail(
        world, WEFT_EINVAL,
        "weft_sys_boids: bad config (radius %g must be in (0, cell %g]; "
        "min_distance, max_speed finite and >= 0; weights finite)",
        (double)c.radius, (double)cell);
  int rc = weft__builtin_unique(world, "weft_sys_boids", BOIDS_NAME);
  if (rc)
    return rc;
  boids_cfg_t init;
  memset(&init, 0, sizeof init);
  init.grid = grid;
  init.c = c;
  /* A previous, removed registration left the resource; reuse it, and
   * drop the query it made. */
  weft_resource_t res = 0;
  if (weft_resource_lookup(world, BOIDS_CONFIG, &res) == 0) {
    boids_cfg_t *old = weft_resource_get(world, res);
    if (old && old->boids)
      weft_query_destroy(old->boids);
  }
  rc = weft__builtin_state(world, BOIDS_CONFIG, &init, sizeof init, &res);
  if (rc)
    return rc;

  boids_cfg_t *cfg = weft_resource_get(world, res);
  weft_query_desc_t qd;
  memset(&qd, 0, sizeof qd);
  qd.include[0] = std->position;
  qd.include[1] = std->velocity;
  qd.include[2] = std->boid;
  qd.exclude[0] = std->ghost;
  rc = weft_query_create(world, &qd, &cfg->boids);
  if (rc)
    return rc;
  /* A plan left by an earlier registration (whose "weft.boids" was since
   * removed) goes: the new one is registered first, so that it runs
   * before the chunk loop that reads it. */
  weft_system_t plan_sys = 0;
  if (weft_system_lookup(world, BOIDS_PLAN_NAME, &plan_sys) == 0 &&
      (rc = weft_system_remove(world, plan_sys)) != 0)
    return rc;
  /* A task: it reads the grid's snapshot only. */
  weft_system_desc_t d =
      weft__builtin_desc(BOIDS_PLAN_NAME, c.phase, plan_run, cfg);
  d.res_read[0] = weft_grid_resource(grid);
  d.res_write[0] = res;
  rc = weft__builtin_register(world, &d, &plan_sys);
  if (rc)
    return rc;

  d = weft__builtin_desc(BOIDS_NAME, c.phase, boids_run, cfg);
  d.query.include[0] = std->position;
  d.query.include[1] = std->velocity;
  d.query.include[2] = std->boid;
  d.query.exclude[0] = std->ghost; /* read as neighbours, never written */
  d.term_access[0] = WEFT_ACCESS_READ;
  d.term_access[1] = WEFT_ACCESS_WRITE;
  d.term_access[2] = WEFT_ACCESS_NONE;
  d.res_read[0] = weft_grid_resource(grid);
  d.res_read[1] = res; /* the plan */
  d.batch = BOIDS_BATCH;
  rc = weft__builtin_register(world, &d, out);
  if (rc)
    (void)weft_system_remove(world, plan_sys);
  return rc;
}
