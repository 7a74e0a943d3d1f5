/* SPDX-License-Identifier: MIT */
/*
 * update: the "update systems" workloads of abeimler/ecs_benchmark at 2^20
 * entities (2^16 with --quick). One repetition is one frame: every system
 * once over every entity, through weft_world_run_phase(world, FixedUpdate,
 * 1/60), sync point included. Unit: ns per entity per frame.
 *
 * update/2sys: "for-each entities in 2 systems". Entities carry Position
 * and Velocity ({x, y} floats) and Data; the systems are MovementSystem
 * (pos += vel * dt) and DataSystem (thingy = (thingy + 1) % 1,000,000,
 * dingy += 0.0001 * dt, mingy = !mingy, numgy = the next draw of the
 * entity's xoshiro128** generator).
 *
 * update/7sys: "for-each entities in 7 systems". Entities also carry
 * Player (type), Health (hp, maxhp, status), Damage (atk, def) and Sprite
 * (a character), initialised as ecs_benchmark's hero/monster factory does
 * (3% NPC, 27% hero, 70% monster; hp 0, status Spawn). The systems, in
 * registration order: Movement, Data, MoreComplex (when thingy % 10 == 0,
 * two draws of the entity's generator pick a new velocity, its sign
 * depending on pos.x > pos.y), Health (the Spawn/Alive/Dead state
 * machine), Damage (hp -= atk - def when positive, floored at 0), Sprite
 * (a character from status and type) and Render (draws the sprite at
 * (int) pos into a 320x240 character frame buffer when inside it; main
 * thread only, since every entity writes the same buffer).
 *
 * Deviations from ecs_benchmark, so that every frame costs the same and the
 * baselines can be the best plain C: thingy starts at i % 10 instead of 0
 * (one tenth of the entities take MoreComplex's branch every frame, instead
 * of all of them every tenth frame: a round of this benchmark is only a
 * few frames); positions start spread over the frame buffer; Player keeps
 * only its type (its generator is used at creation only); Data, Health and
 * Damage are stored field-level SoA (WEFT_COMPONENT_SOA) and the baseline
 * uses the same arrays, so that their loops vectorize; `stringy` is left
 * out (ecs_benchmark formats it in a disabled line).
 *
 * Both sides call the same kernels (upd_*, upd_move wrapping
 * bench_integrate_flat for MovementSystem), out of line and 64-byte
 * aligned (BENCH_KERNEL) so that both run the same machine code wherever
 * the linker puts it: inlined, each side had its own copy, and adding an
 * unrelated file to the binary moved the ratio by 5%. Weft calls them once
 * per chunk, the
 * baselines over whole arrays or a thread's share of them, so the ratio is
 * what the scheduler and chunked storage cost. gcc 12 -O3
 * -fopt-info-vec-optimized (x86-64 baseline ISA, SSE2) reports "loop
 * vectorized using 16 byte vectors" for bench_integrate_flat, upd_data,
 * upd_health, upd_damage and upd_sprite, for the baselines and inside the weft
 * callbacks; upd_complex (a rarely taken branch that advances a generator)
 * and upd_render (a scatter into the frame buffer) stay scalar on both
 * sides.
 *
 * /st: a world without a pool against the seven (or two) loops in
 * registration order on one thread; target <= 1.05x.
 * /2w: a pool of two workers (the calling thread is worker 0) against one
 * OpenMP parallel region of two threads: each thread runs Movement, Data,
 * Health, Damage and Sprite over its static share of the arrays (all
 * element-wise, so the shares need no barrier between loops), then after a
 * barrier one thread renders while both take MoreComplex in blocks of 8192
 * entities (schedule(dynamic)). That is the best overlap the dependencies
 * allow (Render needs every Position and Sprite; MoreComplex only its own
 * entity's Position and Data), and weft's graph allows the same. Target
 * <= 1.05x. Run with OMP_WAIT_POLICY=passive.
 */
#include <omp.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <weft.h>

#include "bench_systems.h"
#include "bench_omp.h"
#include "harness.h"

#define UPD_DT (1.0 / 60.0)
#define UPD_FB_W 320
#define UPD_FB_H 240
#define UPD_BLOCK 8192u

enum { UPD_SPAWN = 0, UPD_DEAD = 1, UPD_ALIVE = 2 };
enum { UPD_NPC = 0, UPD_MONSTER = 1, UPD_HERO = 2 };

typedef struct upd_vec2_t {
  float x, y;
} upd_vec2_t;

/* Stored SoA: field order is the registration order below. */
typedef struct upd_data_t {
  uint32_t thingy;
  uint32_t numgy;
  double dingy;
  uint32_t s0, s1, s2, s3; /* xoshiro128** state */
  uint8_t mingy;
} upd_data_t;
enum {
  UPD_THINGY,
  UPD_NUMGY,
  UPD_DINGY,
  UPD_S0,
  UPD_S1,
  UPD_S2,
  UPD_S3,
  UPD_MINGY,
  UPD_DATA_FIELDS
};

typedef struct upd_health_t {
  int32_t hp, maxhp, status;
} upd_health_t;

typedef struct upd_damage_t {
  int32_t atk, def;
} upd_damage_t;

typedef struct upd_player_t {
  int32_t type;
} upd_player_t;

typedef struct upd_sprite_t {
  uint8_t c;
} upd_sprite_t;

/* Component ids, in spawn order (term order of the fill callback). */
enum {
  UPD_POS,
  UPD_VEL,
  UPD_DATA,
  UPD_PLAYER,
  UPD_HEALTH,
  UPD_DAMAGE,
  UPD_SPRITE,
  UPD_COMPS
};

/* Plain arrays: the baseline's storage, one array per (SoA) field. */
typedef struct upd_arrays_t {
  float *pos, *vel; /* 2n each, x y x y ... */
  uint32_t *thingy, *numgy, *s[4];
  double *dingy;
  uint8_t *mingy;
  int32_t *type, *hp, *maxhp, *status, *atk, *def;
  uint8_t *spr;
  uint8_t *fb;
} upd_arrays_t;

typedef struct upd_state_t {
  uint32_t n;
  bool seven;
  weft_pool_t *pool;
  weft_world_t *world;
  weft_component_t comp[UPD_COMPS];
  uint8_t *weft_fb; /* the frame buffer weft's Render draws into */
  upd_arrays_t a;
} upd_state_t;

/* ---- kernels (both sides) -------------------------------------------------
 */

static inline uint32_t upd_rotl(uint32_t x, int k) {
  return (x << k) | (x >> (32 - k));
}

/* One xoshiro128** step. */
static inline uint32_t upd_next(uint32_t *a, uint32_t *b, uint32_t *c,
                                uint32_t *d) {
  uint32_t r = upd_rotl(*b * 5u, 7) * 9u;
  uint32_t t = *b << 9;
  *c ^= *a;
  *d ^= *b;
  *b ^= *c;
  *a ^= *d;
  *c ^= t;
  *d = upd_rotl(*d, 11);
  return r;
}

/* A draw in [lo, hi] from r (multiply-shift). */
static inline int32_t upd_range(uint32_t r, int32_t lo, int32_t hi) {
  return lo + (int32_t)(((uint64_t)r * (uint64_t)(hi - lo + 1)) >> 32);
}

/* DataSystem. */
BENCH_KERNEL static void upd_data(uint32_t n, uint32_t *restrict thingy,
                                  uint32_t *restrict numgy,
                                  double *restrict dingy, uint32_t *restrict s0,
                                  uint32_t *restrict s1, uint32_t *restrict s2,
                                  uint32_t *restrict s3,
                                  uint8_t *restrict mingy, double dt) {
  const double inc = 0.0001 * dt;
  for (uint32_t i = 0; i < n; ++i) {
    uint32_t t = thingy[i] + 1u;
    thingy[i] = t == 1000000u ? 0u : t;
    dingy[i] += inc;
    mingy[i] = (uint8_t)(mingy[i] ^ 1u);
    uint32_t a = s0[i], b = s1[i], c = s2[i], d = s3[i];
    numgy[i] = upd_next(&a, &b, &c, &d);
    s0[i] = a;
    s1[i] = b;
    s2[i] = c;
    s3[i] = d;
  }
}

/* MoreComplexSystem. */
BENCH_KERNEL static void
upd_complex(uint32_t n, const float *restrict pos, float *restrict vel,
            const uint32_t *restrict thingy, uint32_t *restrict s0,
            uint32_t *restrict s1, uint32_t *restrict s2,
            uint32_t *restrict s3) {
  for (uint32_t i = 0; i < n; ++i) {
    if (thingy[i] % 10u != 0)
      continue;
    uint32_t a = s0[i], b = s1[i], c = s2[i], d = s3[i];
    uint32_t r1 = upd_next(&a, &b, &c, &d);
    uint32_t r2 = upd_next(&a, &b, &c, &d);
    s0[i] = a;
    s1[i] = b;
    s2[i] = c;
    s3[i] = d;
    if (pos[2 * i] > pos[2 * i + 1]) {
      vel[2 * i] = (float)upd_range(r1, 3, 19) - 10.0f;
      vel[2 * i + 1] = (float)upd_range(r2, 0, 5);
    } else {
      vel[2 * i] = (float)upd_range(r1, 0, 5);
      vel[2 * i + 1] = (float)upd_range(r2, 3, 19) - 10.0f;
    }
  }
}

/* HealthSystem. */
BENCH_KERNEL static void upd_health(uint32_t n, int32_t *restrict hp,
                                    const int32_t *restrict maxhp,
                                    int32_t *restrict status) {
  for (uint32_t i = 0; i < n; ++i) {
    int32_t h = hp[i], m = maxhp[i], st = status[i];
    int32_t nh = h, ns = UPD_ALIVE;
    if (h <= 0 && st != UPD_DEAD) {
      nh = 0;
      ns = UPD_DEAD;
    } else if (st == UPD_DEAD && h == 0) {
      nh = m;
      ns = UPD_SPAWN;
    } else if (h >= m && st != UPD_ALIVE) {
      nh = m;
    }
    hp[i] = nh;
    status[i] = ns;
  }
}

/* DamageSystem. */
BENCH_KERNEL static void upd_damage(uint32_t n, int32_t *restrict hp,
                                    const int32_t *restrict atk,
                                    const int32_t *restrict def) {
  for (uint32_t i = 0; i < n; ++i) {
    int32_t total = atk[i] - def[i], h = hp[i];
    int32_t left = h - total > 0 ? h - total : 0;
    hp[i] = h > 0 && total > 0 ? left : h;
  }
}

/* SpriteSystem. */
BENCH_KERNEL static void upd_sprite(uint32_t n, uint8_t *restrict spr,
                                    const int32_t *restrict type,
                                    const int32_t *restrict status) {
  for (uint32_t i = 0; i < n; ++i) {
    int32_t st = status[i], ty = type[i];
    uint8_t alive = ty == UPD_HERO ? '@' : (ty == UPD_MONSTER ? 'k' : 'h');
    spr[i] = st == UPD_ALIVE ? alive : (st == UPD_DEAD ? '|' : '_');
  }
}

/* RenderSystem. */
BENCH_KERNEL static void upd_render(uint32_t n, const float *restrict pos,
                                    const uint8_t *restrict spr,
                                    uint8_t *restrict fb) {
  for (uint32_t i = 0; i < n; ++i) {
    int x = (int)pos[2 * i], y = (int)pos[2 * i + 1];
    if ((unsigned)x < UPD_FB_W && (unsigned)y < UPD_FB_H)
      fb[y * UPD_FB_W + x] = spr[i];
  }
}

/* ---- weft systems ---------------------------------------------------------
 */

/* MovementSystem's kernel, out of line like the others. */
BENCH_KERNEL static void upd_move(uint32_t n, float *restrict pos,
                                  const float *restrict vel, float dt) {
  bench_integrate_flat(n, pos, vel, dt);
}

static int upd_sys_move(weft_sysctx_t *ctx, const weft_iter_t *ch) {
  upd_move(2 * ch->count, ch->columns[0], ch->columns[1], (float)ctx->dt);
  return 0;
}

static int upd_sys_data(weft_sysctx_t *ctx, const weft_iter_t *ch) {
  void *f[WEFT_MAX_FIELDS];
  weft_iter_fields(ch, 0, f);
  upd_data(ch->count, f[UPD_THINGY], f[UPD_NUMGY], f[UPD_DINGY], f[UPD_S0],
           f[UPD_S1], f[UPD_S2], f[UPD_S3], f[UPD_MINGY], ctx->dt);
  return 0;
}

static int upd_sys_complex(weft_sysctx_t *ctx, const weft_iter_t *ch) {
  (void)ctx;
  void *f[WEFT_MAX_FIELDS];
  weft_iter_fields(ch, 2, f);
  upd_complex(ch->count, ch->columns[0], ch->columns[1], f[UPD_THINGY],
              f[UPD_S0], f[UPD_S1], f[UPD_S2], f[UPD_S3]);
  return 0;
}

static int upd_sys_health(weft_sysctx_t *ctx, const weft_iter_t *ch) {
  (void)ctx;
  void *h[WEFT_MAX_FIELDS];
  weft_iter_fields(ch, 0, h);
  upd_health(ch->count, h[0], h[1], h[2]);
  return 0;
}

static int upd_sys_damage(weft_sysctx_t *ctx, const weft_iter_t *ch) {
  (void)ctx;
  void *h[WEFT_MAX_FIELDS], *d[WEFT_MAX_FIELDS];
  weft_iter_fields(ch, 0, h);
  weft_iter_fields(ch, 1, d);
  upd_damage(ch->count, h[0], d[0], d[1]);
  return 0;
}

static int upd_sys_sprite(weft_sysctx_t *ctx, const weft_iter_t *ch) {
  (void)ctx;
  void *h[WEFT_MAX_FIELDS];
  weft_iter_fields(ch, 2, h);
  upd_sprite(ch->count, ch->columns[0], ch->columns[1], h[2]);
  return 0;
}

static int upd_sys_render(weft_sysctx_t *ctx, const weft_iter_t *ch) {
  upd_render(ch->count, ch->columns[0], ch->columns[1], ctx->user);
  return 0;
}

static uint64_t upd_weft(void *p, uint64_t reps) {
  upd_state_t *s = p;
  return bench_fixed_phases(s->world, UPD_DT, reps);
}

/* ---- baselines ------------------------------------------------------------
 */

/* The per-entity systems over entities [lo, hi). */
static inline void upd_base_range(const upd_arrays_t *a, bool seven,
                                  bool complex, uint32_t lo, uint32_t hi) {
  uint32_t k = hi - lo;
  upd_move(2 * k, a->pos + 2 * lo, a->vel + 2 * lo, (float)UPD_DT);
  upd_data(k, a->thingy + lo, a->numgy + lo, a->dingy + lo, a->s[0] + lo,
           a->s[1] + lo, a->s[2] + lo, a->s[3] + lo, a->mingy + lo, UPD_DT);
  if (!seven)
    return;
  if (complex)
    upd_complex(k, a->pos + 2 * lo, a->vel + 2 * lo, a->thingy + lo,
                a->s[0] + lo, a->s[1] + lo, a->s[2] + lo, a->s[3] + lo);
  upd_health(k, a->hp + lo, a->maxhp + lo, a->status + lo);
  upd_damage(k, a->hp + lo, a->atk + lo, a->def + lo);
  upd_sprite(k, a->spr + lo, a->type + lo, a->status + lo);
}

static uint64_t upd_base_st(void *p, uint64_t reps) {
  upd_state_t *s = p;
  const upd_arrays_t *a = &s->a;
  for (uint64_t r = 0; r < reps; ++r) {
    upd_base_range(a, s->seven, true, 0, s->n);
    if (s->seven)
      upd_render(s->n, a->pos, a->spr, a->fb);
    bench_clobber();
  }
  return bench_f32_bits(a->pos[0]) ^ a->numgy[s->n - 1];
}

static uint64_t upd_base_omp(void *p, uint64_t reps) {
  upd_state_t *s = p;
  const upd_arrays_t *a = &s->a;
  const uint32_t n = s->n;
  const bool seven = s->seven;
  const uint32_t blocks = (n + UPD_BLOCK - 1) / UPD_BLOCK;
  for (uint64_t r = 0; r < reps; ++r) {
#pragma omp parallel num_threads(2)
    {
      uint32_t lo, hi;
      bench_omp_share(n, &lo, &hi);
      upd_base_range(a, seven, false, lo, hi);
      if (seven) {
#pragma omp barrier
#pragma omp single nowait
        upd_render(n, a->pos, a->spr, a->fb);
#pragma omp for schedule(dynamic) nowait
        for (uint32_t b = 0; b < blocks; ++b) {
          uint32_t b0 = b * UPD_BLOCK;
          uint32_t k = n - b0 < UPD_BLOCK ? n - b0 : UPD_BLOCK;
          upd_complex(k, a->pos + 2 * b0, a->vel + 2 * b0, a->thingy + b0,
                      a->s[0] + b0, a->s[1] + b0, a->s[2] + b0, a->s[3] + b0);
        }
      }
    }
    bench_clobber();
  }
  return bench_f32_bits(a->pos[0]) ^ a->numgy[n - 1];
}

/* ---- setup ----------------------------------------------------------------
 */

/* The initial state of entity i, written through per-field pointers. */
typedef struct upd_init_t {
  upd_vec2_t pos, vel;
  upd_data_t data;
  int32_t type;
  upd_health_t health;
  upd_damage_t damage;
} upd_init_t;

static upd_init_t upd_initial(uint32_t i) {
  upd_init_t v;
  memset(&v, 0, sizeof v);
  v.pos = (upd_vec2_t){(float)(i % UPD_FB_W) + 0.5f,
                       (float)((i / UPD_FB_W) % UPD_FB_H) + 0.5f};
  v.vel = (upd_vec2_t){1.0f, 1.0f};
  uint64_t rs = 0x5eed0000u + (uint64_t)i;
  uint64_t x = bench_rng_next(&rs), y = bench_rng_next(&rs);
  v.data.thingy = i % 10u;
  v.data.s0 = (uint32_t)x | 1u; /* never the all-zero state */
  v.data.s1 = (uint32_t)(x >> 32);
  v.data.s2 = (uint32_t)y;
  v.data.s3 = (uint32_t)(y >> 32);
  uint64_t z = bench_rng_next(&rs);
  int32_t rate = 1 + (int32_t)(z % 100u);
#define UPD_R(k, lo, hi)                                                       \
  ((lo) + (int32_t)(((z >> (8 * (k))) & 0xffu) % ((hi) - (lo) + 1)))
  if (rate <= 3) {
    v.type = UPD_NPC;
    v.health.maxhp = UPD_R(2, 6, 12);
    v.damage.def = UPD_R(3, 3, 8);
    v.damage.atk = 0;
  } else if (rate <= 30) {
    v.type = UPD_HERO;
    v.health.maxhp = UPD_R(2, 5, 15);
    v.damage.def = UPD_R(3, 2, 6);
    v.damage.atk = UPD_R(4, 4, 10);
  } else {
    v.type = UPD_MONSTER;
    v.health.maxhp = UPD_R(2, 4, 12);
    v.damage.def = UPD_R(3, 2, 8);
    v.damage.atk = UPD_R(4, 3, 9);
  }
#undef UPD_R
  v.health.hp = 0;
  v.health.status = UPD_SPAWN;
  return v;
}

static void upd_fill(void *user, const weft_iter_t *view, uint32_t first) {
  const upd_state_t *s = user;
  upd_vec2_t *pos = view->columns[UPD_POS], *vel = view->columns[UPD_VEL];
  void *df[WEFT_MAX_FIELDS], *hf[WEFT_MAX_FIELDS], *mf[WEFT_MAX_FIELDS];
  weft_iter_fields(view, UPD_DATA, df);
  upd_player_t *player = NULL;
  upd_sprite_t *spr = NULL;
  if (s->seven) {
    player = view->columns[UPD_PLAYER];
    spr = view->columns[UPD_SPRITE];
    weft_iter_fields(view, UPD_HEALTH, hf);
    weft_iter_fields(view, UPD_DAMAGE, mf);
  }
  for (uint32_t i = 0; i < view->count; ++i) {
    upd_init_t v = upd_initial(first + i);
    pos[i] = v.pos;
    vel[i] = v.vel;
    ((uint32_t *)df[UPD_THINGY])[i] = v.data.thingy;
    ((uint32_t *)df[UPD_NUMGY])[i] = 0;
    ((double *)df[UPD_DINGY])[i] = 0.0;
    ((uint32_t *)df[UPD_S0])[i] = v.data.s0;
    ((uint32_t *)df[UPD_S1])[i] = v.data.s1;
    ((uint32_t *)df[UPD_S2])[i] = v.data.s2;
    ((uint32_t *)df[UPD_S3])[i] = v.data.s3;
    ((uint8_t *)df[UPD_MINGY])[i] = 0;
    if (!s->seven)
      continue;
    player[i].type = v.type;
    ((int32_t *)hf[0])[i] = v.health.hp;
    ((int32_t *)hf[1])[i] = v.health.maxhp;
    ((int32_t *)hf[2])[i] = v.health.status;
    ((int32_t *)mf[0])[i] = v.damage.atk;
    ((int32_t *)mf[1])[i] = v.damage.def;
    spr[i].c = ' ';
  }
}

static void upd_register(upd_state_t *s) {
  weft_world_t *w = s->world;
  weft_component_desc_t d = WEFT_COMPONENT_DESC(upd_vec2_t);
  d.name = "Position";
  bench_check(weft_component_register(w, &d, &s->comp[UPD_POS]), "Position");
  d.name = "Velocity";
  bench_check(weft_component_register(w, &d, &s->comp[UPD_VEL]), "Velocity");

  weft_field_desc_t df[UPD_DATA_FIELDS] = {
      WEFT_FIELD(upd_data_t, thingy), WEFT_FIELD(upd_data_t, numgy),
      WEFT_FIELD(upd_data_t, dingy),  WEFT_FIELD(upd_data_t, s0),
      WEFT_FIELD(upd_data_t, s1),     WEFT_FIELD(upd_data_t, s2),
      WEFT_FIELD(upd_data_t, s3),     WEFT_FIELD(upd_data_t, mingy)};
  d = WEFT_COMPONENT_DESC(upd_data_t);
  d.name = "Data";
  d.fields = df;
  d.field_count = UPD_DATA_FIELDS;
  d.flags = WEFT_COMPONENT_SOA;
  bench_check(weft_component_register(w, &d, &s->comp[UPD_DATA]), "Data");
  if (!s->seven)
    return;

  d = WEFT_COMPONENT_DESC(upd_player_t);
  d.name = "Player";
  bench_check(weft_component_register(w, &d, &s->comp[UPD_PLAYER]), "Player");
  weft_field_desc_t hf[3] = {WEFT_FIELD(upd_health_t, hp),
                             WEFT_FIELD(upd_health_t, maxhp),
                             WEFT_FIELD(upd_health_t, status)};
  d = WEFT_COMPONENT_DESC(upd_health_t);
  d.name = "Health";
  d.fields = hf;
  d.field_count = 3;
  d.flags = WEFT_COMPONENT_SOA;
  bench_check(weft_component_register(w, &d, &s->comp[UPD_HEALTH]), "Health");
  weft_field_desc_t mf[2] = {WEFT_FIELD(upd_damage_t, atk),
                             WEFT_FIELD(upd_damage_t, def)};
  d = WEFT_COMPONENT_DESC(upd_damage_t);
  d.name = "Damage";
  d.fields = mf;
  d.field_count = 2;
  d.flags = WEFT_COMPONENT_SOA;
  bench_check(weft_component_register(w, &d, &s->comp[UPD_DAMAGE]), "Damage");
  d = WEFT_COMPONENT_DESC(upd_sprite_t);
  d.name = "Sprite";
  bench_check(weft_component_register(w, &d, &s->comp[UPD_SPRITE]), "Sprite");
}

/* Registers a system over the listed terms (zero-terminated) with their
 * access. */
static void upd_system(upd_state_t *s, const char *name, weft_system_fn fn,
                       const int *terms, const uint8_t *access, uint32_t flags,
                       void *user) {
  weft_system_desc_t d = {.name = name, .run = fn, .flags = flags};
  d.user = user;
  /* Streaming loops: one call per run of chunks whose arrays continue each
   * other, as ecs_benchmark's contenders iterate their storage. */
  d.query.flags = WEFT_QUERY_CHUNK_RUNS;
  for (uint32_t t = 0; terms[t] >= 0; ++t) {
    d.query.include[t] = s->comp[terms[t]];
    d.term_access[t] = access[t];
  }
  weft_system_t id;
  bench_check(weft_system_register(s->world, &d, &id), name);
}

static void upd_systems(upd_state_t *s) {
  const uint8_t R = WEFT_ACCESS_READ, W = WEFT_ACCESS_DEFAULT;
  upd_system(s, "Movement", upd_sys_move, (const int[]){UPD_POS, UPD_VEL, -1},
             (const uint8_t[]){W, R}, 0, NULL);
  upd_system(s, "Data", upd_sys_data, (const int[]){UPD_DATA, -1},
             (const uint8_t[]){W}, 0, NULL);
  if (!s->seven)
    return;
  upd_system(s, "MoreComplex", upd_sys_complex,
             (const int[]){UPD_POS, UPD_VEL, UPD_DATA, -1},
             (const uint8_t[]){R, W, W}, 0, NULL);
  upd_system(s, "Health", upd_sys_health, (const int[]){UPD_HEALTH, -1},
             (const uint8_t[]){W}, 0, NULL);
  upd_system(s, "Damage", upd_sys_damage,
             (const int[]){UPD_HEALTH, UPD_DAMAGE, -1}, (const uint8_t[]){W, R},
             0, NULL);
  upd_system(s, "Sprite", upd_sys_sprite,
             (const int[]){UPD_SPRITE, UPD_PLAYER, UPD_HEALTH, -1},
             (const uint8_t[]){W, R, R}, 0, NULL);
  upd_system(s, "Render", upd_sys_render,
             (const int[]){UPD_POS, UPD_SPRITE, -1}, (const uint8_t[]){R, R},
             WEFT_SYSTEM_MAIN_THREAD, s->weft_fb);
}

static void upd_arrays(upd_state_t *s) {
  upd_arrays_t *a = &s->a;
  size_t n = s->n;
  a->pos = bench_alloc(2 * n * sizeof(float));
  a->vel = bench_alloc(2 * n * sizeof(float));
  a->thingy = bench_alloc(n * sizeof(uint32_t));
  a->numgy = bench_alloc(n * sizeof(uint32_t));
  for (int k = 0; k < 4; ++k)
    a->s[k] = bench_alloc(n * sizeof(uint32_t));
  a->dingy = bench_alloc(n * sizeof(double));
  a->mingy = bench_alloc(n);
  if (s->seven) {
    a->type = bench_alloc(n * sizeof(int32_t));
    a->hp = bench_alloc(n * sizeof(int32_t));
    a->maxhp = bench_alloc(n * sizeof(int32_t));
    a->status = bench_alloc(n * sizeof(int32_t));
    a->atk = bench_alloc(n * sizeof(int32_t));
    a->def = bench_alloc(n * sizeof(int32_t));
    a->spr = bench_alloc(n);
    a->fb = bench_alloc(UPD_FB_W * UPD_FB_H);
  }
  for (uint32_t i = 0; i < s->n; ++i) {
    upd_init_t v = upd_initial(i);
    a->pos[2 * i] = v.pos.x;
    a->pos[2 * i + 1] = v.pos.y;
    a->vel[2 * i] = v.vel.x;
    a->vel[2 * i + 1] = v.vel.y;
    a->thingy[i] = v.data.thingy;
    a->s[0][i] = v.data.s0;
    a->s[1][i] = v.data.s1;
    a->s[2][i] = v.data.s2;
    a->s[3][i] = v.data.s3;
    if (!s->seven)
      continue;
    a->type[i] = v.type;
    a->hp[i] = v.health.hp;
    a->maxhp[i] = v.health.maxhp;
    a->status[i] = v.health.status;
    a->atk[i] = v.damage.atk;
    a->def[i] = v.damage.def;
    a->spr[i] = ' ';
  }
}

static void upd_setup(upd_state_t *s, uint32_t n, bool seven,
                      uint32_t workers) {
  memset(s, 0, sizeof *s);
  s->n = n;
  s->seven = seven;
  weft_world_config_t wc = {0};
  if (workers) {
    s->pool = bench_pool_new(workers, false);
    wc.pool = s->pool;
  }
  bench_check(weft_world_create(&wc, &s->world), "weft_world_create");
  upd_register(s);
  weft_component_t comps[UPD_COMPS + 1];
  uint32_t nc = seven ? UPD_COMPS : 3u;
  memcpy(comps, s->comp, nc * sizeof comps[0]);
  comps[nc] = WEFT_COMPONENT_NONE;
  bench_check(weft_world_reserve(s->world, n), "weft_world_reserve");
  bench_check(weft_spawn_batch(s->world, n, comps, upd_fill, s, NULL),
              "weft_spawn_batch");
  if (seven)
    s->weft_fb = bench_alloc(UPD_FB_W * UPD_FB_H);
  upd_systems(s);
  bench_check(weft_schedule_build(s->world), "weft_schedule_build");
  upd_arrays(s);
}

static void upd_teardown(upd_state_t *s) {
  weft_world_destroy(s->world);
  weft_pool_destroy(s->pool);
  bench_free(s->weft_fb);
  upd_arrays_t *a = &s->a;
  void *all[] = {a->pos,   a->vel,    a->thingy, a->numgy, a->s[0], a->s[1],
                 a->s[2],  a->s[3],   a->dingy,  a->mingy, a->type, a->hp,
                 a->maxhp, a->status, a->atk,    a->def,   a->spr,  a->fb};
  for (size_t k = 0; k < sizeof all / sizeof all[0]; ++k)
    bench_free(all[k]);
}

static void upd_run(bench_ctx_t *ctx, const char *name, uint32_t n, bool seven,
                    uint32_t workers) {
  if (!bench_selected(ctx, name))
    return;
  upd_state_t s;
  upd_setup(&s, n, seven, workers);
  bench_case_t c = {
      .name = name,
      .unit = "ns/entity",
      .n = n,
      .work = {"weft", upd_weft, &s, n, false},
      .base = workers ? (bench_side_t){"omp_2t", upd_base_omp, &s, n, false}
                      : (bench_side_t){"c_loops", upd_base_st, &s, n, false},
      .target_kind = BENCH_TARGET_RATIO,
      .target = 1.05,
      .workers = workers ? workers : 1,
  };
  bench_compare(ctx, &c);
  upd_teardown(&s);
}

void bench_update(bench_ctx_t *ctx) {
  uint32_t n = ctx->quick ? (1u << 16) : (1u << 20);
  upd_run(ctx, "update/2sys/st", n, false, 0);
  upd_run(ctx, "update/7sys/st", n, true, 0);
  upd_run(ctx, "update/2sys/2w", n, false, 2);
  upd_run(ctx, "update/7sys/2w", n, true, 2);
}
