/* SPDX-License-Identifier: MIT */
/*
 * "weft.health" (builtin.h) through the public API: collision events
 * pushed onto the std channel become damage after armour, checked against
 * hand computations and against an oracle over plain arrays; death adds
 * Dead once and disables Velocity and Collider; the dead, stale handles and
 * self contacts take and deal nothing; event order decides the outcome;
 * a pool gives the same world; the declared access orders the system
 * after an emitter and before readers. Every test builds and destroys its
 * own world (and pool).
 */
#include "support/weft_test.h"

#include <math.h>
#include <stdlib.h>

#include <weft/builtin.h>

#include "support/health_test.h"

#define assert_float_exact(a, b)                                               \
  do {                                                                         \
    float a_ = (a), b_ = (b);                                                  \
    if (!(a_ == b_))                                                           \
      fail_msg("%s = %.9g, expected %.9g", #a, (double)a_, (double)b_);        \
  } while (0)

static uint64_t commands(const hx_t *h) {
  weft_phase_stats_t ps;
  memset(&ps, 0, sizeof ps);
  assert_int_equal(weft_phase_stats(h->w, WEFT_PHASE_FIXED_UPDATE, &ps),
                   WEFT_OK);
  return ps.commands;
}

/* Dead, with Velocity and Collider present but disabled. */
static void assert_killed(const hx_t *h, weft_entity_t e) {
  assert_true(weft_has(h->w, e, h->s.dead));
  assert_true(weft_has(h->w, e, h->s.velocity));
  assert_true(weft_has(h->w, e, h->s.collider));
  assert_false(weft_is_enabled(h->w, e, h->s.velocity));
  assert_false(weft_is_enabled(h->w, e, h->s.collider));
}

static void assert_untouched(const hx_t *h, weft_entity_t e) {
  assert_false(weft_has(h->w, e, h->s.dead));
  assert_true(weft_is_enabled(h->w, e, h->s.velocity));
  assert_true(weft_is_enabled(h->w, e, h->s.collider));
}

/* --- tests ---------------------------------------------------------------- */

static void test_health_register_rejects_bad_calls(void **state) {
  (void)state;
  hx_t h = hx_new(0, false);
  weft_system_t sys = 0;
  assert_int_equal(weft_sys_health(NULL, &h.s, 0, &sys), WEFT_EINVAL);
  assert_int_equal(weft_sys_health(h.w, NULL, 0, &sys), WEFT_EINVAL);
  assert_int_equal(weft_sys_health(h.w, &h.s, 0, NULL), WEFT_OK);
  assert_int_equal(weft_system_lookup(h.w, "weft.health", &sys), WEFT_OK);
  weft_system_info_t info;
  assert_int_equal(weft_system_info(h.w, sys, &info), WEFT_OK);
  assert_int_equal(info.phase, WEFT_PHASE_FIXED_UPDATE); /* 0: FixedUpdate */
  weft_system_t again = 0;
  assert_int_equal(weft_sys_health(h.w, &h.s, 0, &again), WEFT_EEXIST);
  assert_non_null(strstr(weft_world_last_error(h.w), "exists already"));
  /* Removed, it registers again (the kept config is reused). */
  assert_int_equal(weft_system_remove(h.w, sys), WEFT_OK);
  assert_int_equal(weft_sys_health(h.w, &h.s, WEFT_PHASE_PRE_UPDATE, &again),
                   WEFT_OK);
  assert_int_not_equal(again, sys);
  assert_int_equal(weft_system_info(h.w, again, &info), WEFT_OK);
  assert_int_equal(info.phase, WEFT_PHASE_PRE_UPDATE);
  hx_free(&h);

  /* The system's resource names taken by something else of another size:
   * a clear error, and no system. */
  static const char *const names[] = {"weft.health.plan", "weft.health.config"};
  for (int k = 0; k < 2; k++) {
    h = hx_new(0, false);
    assert_int_equal(weft_resource_register(h.w, names[k], 3, 0, NULL, NULL),
                     WEFT_OK);
    sys = 0;
    assert_int_equal(weft_sys_health(h.w, &h.s, 0, &sys), WEFT_EEXIST);
    /* The message names the resource (WEFT_EEXIST's own is generic). */
    assert_non_null(strstr(weft_world_last_error(h.w), names[k]));
    assert_int_equal(sys, 0);
    assert_int_equal(weft_system_lookup(h.w, "weft.health", &sys),
                     WEFT_ENONAME);
    hx_free(&h);
  }

  /* Room for one resource only: WEFT_ETOOMANY and no system; with room
   * again (a fresh world) it registers. */
  h = hx_new(0, false);
  char name[32];
  for (uint32_t k = 0;; k++) {
    snprintf(name, sizeof name, "filler.%u", k);
    weft_resource_t r = 0;
    if (weft_resource_register(h.w, name, 4, 0, NULL, &r) != WEFT_OK)
      fail_msg("filler %u refused", k);
    if (r == WEFT_MAX_RESOURCES - 1)
      break;
  }
  sys = 0;
  assert_int_equal(weft_sys_health(h.w, &h.s, 0, &sys), WEFT_ETOOMANY);
  assert_int_equal(sys, 0);
  assert_int_equal(weft_system_lookup(h.w, "weft.health", &sys), WEFT_ENONAME);
  hx_free(&h);
}

/* Hand-computed hits: armour flat then fraction, both ways, zero hits. */
static void test_health_damage_after_armor(void **state) {
  (void)state;
  hx_t h = hx_new(0, true);
  const float d10 = 10.0f, d5 = 5.0f, d7 = 7.0f, d3 = 3.0f;
  const float h100 = 100.0f, h50 = 50.0f, h30 = 30.0f, h40 = 40.0f;
  const weft_armor_t light = {2.0f, 0.25f}, thick = {10.0f, 0.0f};
  const weft_armor_t half = {0.0f, 0.5f};
  weft_entity_t gun = spawn_unit(&h, (unit_t){.damage = &d10});
  weft_entity_t tank = spawn_unit(&h, (unit_t){.hp = &h100, .armor = &light});
  weft_entity_t bare = spawn_unit(&h, (unit_t){.hp = &h50});
  weft_entity_t m1 = spawn_unit(&h, (unit_t){.hp = &h30, .damage = &d5});
  weft_entity_t m2 =
      spawn_unit(&h, (unit_t){.hp = &h40, .damage = &d7, .armor = &thick});
  weft_entity_t soft = spawn_unit(&h, (unit_t){.hp = &h50, .armor = &half});
  weft_entity_t rock = spawn_unit(&h, (unit_t){.damage = &d3}); /* no hp */

  push(&h, gun, tank);  /* tank: (10 - 2) * 0.75 = 6 */
  push(&h, bare, gun);  /* b has the damage: bare takes 10 */
  push(&h, m1, m2);     /* m2: 5 - 10 < 0: 0; m1: 7 */
  push(&h, tank, gun);  /* tank: 6 more */
  push(&h, soft, gun);  /* soft: 10 * 0.5 = 5 */
  push(&h, gun, rock);  /* neither has Health */
  push(&h, soft, bare); /* neither has Damage */
  push(&h, rock, m1);   /* m1: 3 */
  tick(&h);
  assert_float_exact(hp_of(&h, tank), 88.0f);
  assert_float_exact(hp_of(&h, bare), 40.0f);
  assert_float_exact(hp_of(&h, m1), 20.0f);
  assert_float_exact(hp_of(&h, m2), 40.0f);
  assert_float_exact(hp_of(&h, soft), 45.0f);
  /* max_hp is not touched; nobody died, no command recorded. */
  const weft_health_t *t = weft_get(h.w, tank, h.s.health);
  assert_float_exact(t->max_hp, 100.0f);
  assert_int_equal(commands(&h), 0);
  weft_entity_t all[] = {gun, tank, bare, m1, m2, soft, rock};
  for (uint32_t i = 0; i < 7; i++)
    assert_untouched(&h, all[i]);

  /* The channel was cleared: the next run applies nothing again. */
  tick(&h);
  assert_float_exact(hp_of(&h, tank), 88.0f);
  assert_float_exact(hp_of(&h, m1), 20.0f);

  /* A fraction outside [0, 1] is clamped: armour never heals nor
   * amplifies. */
  const weft_armor_t over = {0.0f, 1.5f}, under = {1.0f, -0.5f};
  weft_entity_t o = spawn_unit(&h, (unit_t){.hp = &h50, .armor = &over});
  weft_entity_t u = spawn_unit(&h, (unit_t){.hp = &h50, .armor = &under});
  push(&h, gun, o);
  push(&h, gun, u);
  tick(&h);
  assert_float_exact(hp_of(&h, o), 50.0f);
  assert_float_exact(hp_of(&h, u), 41.0f);
  hx_free(&h);
}

/* Two lethal hits in one run: one Dead tag, one pair of disables; the
 * corpse then takes nothing, neither this run nor the next. */
static void test_health_death_tags_once(void **state) {
  (void)state;
  hx_t h = hx_new(0, true);
  const float d6 = 6.0f, h10 = 10.0f, h3 = 3.0f;
  weft_entity_t gun = spawn_unit(&h, (unit_t){.damage = &d6});
  weft_entity_t t = spawn_unit(&h, (unit_t){.hp = &h10});
  weft_entity_t u = spawn_unit(&h, (unit_t){.hp = &h3});
  push(&h, gun, t); /* 4 */
  push(&h, t, gun); /* -2: dies */
  push(&h, gun, t); /* dead within the run: nothing */
  push(&h, gun, t);
  tick(&h);
  assert_float_exact(hp_of(&h, t), -2.0f); /* not floored */
  assert_killed(&h, t);
  assert_untouched(&h, gun);
  assert_untouched(&h, u);
  assert_int_equal(commands(&h), 3); /* add Dead, disable x2: once */
  weft_system_stats_t st;
  assert_int_equal(weft_system_stats(h.w, h.sys, &st), WEFT_OK);
  assert_int_equal(st.entities, 4); /* the events it read */

  /* Tagged now: further contacts change nothing. */
  push(&h, gun, t);
  push(&h, t, u);
  tick(&h);
  assert_float_exact(hp_of(&h, t), -2.0f);
  assert_int_equal(commands(&h), 3);
  assert_int_equal(weft_system_stats(h.w, h.sys, &st), WEFT_OK);
  assert_int_equal(st.entities, 6);

  /* Exactly 0 is dead too. */
  const float d3 = 3.0f;
  weft_entity_t g3 = spawn_unit(&h, (unit_t){.damage = &d3});
  push(&h, g3, u);
  tick(&h);
  assert_float_exact(hp_of(&h, u), 0.0f);
  assert_killed(&h, u);
  assert_int_equal(commands(&h), 6);
  hx_free(&h);
}

/* A Dead entity neither takes nor deals damage; nor does one killed by an
 * earlier event of the same run; an entity without Dead but out of hp
 * counts as dead already. The two hits of one event are simultaneous. */
static void test_health_dead_take_and_deal_nothing(void **state) {
  (void)state;
  hx_t h = hx_new(0, true);
  const float d5 = 5.0f, d20 = 20.0f, h50 = 50.0f, h10 = 10.0f, h0 = 0.0f;
  weft_entity_t corpse =
      spawn_unit(&h, (unit_t){.hp = &h50, .damage = &d20, .dead = true});
  weft_entity_t spent = spawn_unit(&h, (unit_t){.hp = &h0, .damage = &d20});
  weft_entity_t a = spawn_unit(&h, (unit_t){.hp = &h10, .damage = &d20});
  weft_entity_t b = spawn_unit(&h, (unit_t){.hp = &h10, .damage = &d5});
  weft_entity_t c = spawn_unit(&h, (unit_t){.hp = &h50});
  push(&h, corpse, c); /* the corpse deals nothing */
  push(&h, c, corpse); /* and takes nothing */
  push(&h, spent, c);  /* hp 0, no tag: dead already */
  push(&h, a, b);      /* b: -10 dies; a still takes b's 5 (simultaneous) */
  push(&h, b, c);      /* b died in this run: deals nothing */
  push(&h, a, c);      /* a is alive: c takes 20 */
  tick(&h);
  assert_float_exact(hp_of(&h, corpse), 50.0f);
  assert_float_exact(hp_of(&h, spent), 0.0f);
  assert_float_exact(hp_of(&h, a), 5.0f);
  assert_float_exact(hp_of(&h, b), -10.0f);
  assert_float_exact(hp_of(&h, c), 30.0f);
  assert_killed(&h, b);
  assert_untouched(&h, a);
  assert_untouched(&h, c);
  assert_untouched(&h, spent); /* never reached 0 by a hit */
  /* The pre-tagged corpse keeps its enabled components. */
  assert_true(weft_is_enabled(h.w, corpse, h.s.velocity));
  assert_int_equal(commands(&h), 3);
  hx_free(&h);
}

/* Stale, forged, foreign and self handles are ignored; a reused slot's new
 * occupant is not hit through the old handle. */
static void test_health_stale_handles_ignored(void **state) {
  (void)state;
  hx_t h = hx_new(0, true);
  const float d9 = 9.0f, h20 = 20.0f;
  weft_entity_t gun = spawn_unit(&h, (unit_t){.hp = &h20, .damage = &d9});
  weft_entity_t gone = spawn_unit(&h, (unit_t){.hp = &h20, .damage = &d9});
  assert_int_equal(weft_despawn(h.w, gone), WEFT_OK);
  weft_entity_t heir = spawn_unit(&h, (unit_t){.hp = &h20, .damage = &d9});
  assert_int_equal(weft_entity_index(heir), weft_entity_index(gone));
  assert_true(heir != gone);
  weft_entity_t forged =
      wt_handle(weft_entity_index(gun), weft_entity_generation(gun) + 5, 42);
  weft_entity_t foreign =
      wt_handle(weft_entity_index(gun), weft_entity_generation(gun), 7);
  push(&h, gun, gone);
  push(&h, gone, heir);
  push(&h, forged, gun);
  push(&h, gun, foreign);
  push(&h, WEFT_ENTITY_NULL, gun);
  push(&h, gun, gun); /* a self contact is not a contact */
  push(&h, wt_handle(123456, 1, 42), heir);
  tick(&h);
  assert_float_exact(hp_of(&h, gun), 20.0f);
  assert_float_exact(hp_of(&h, heir), 20.0f);
  assert_int_equal(commands(&h), 0);
  /* The system still works on live handles after the noise. */
  push(&h, gun, heir);
  tick(&h);
  assert_float_exact(hp_of(&h, gun), 11.0f);
  assert_float_exact(hp_of(&h, heir), 11.0f);
  hx_free(&h);
}

/* The same contacts in another order give another outcome: a kill first
 * silences the victim's later hit. */
static void test_health_event_order_matters(void **state) {
  (void)state;
  float u_hp[2];
  uint64_t digest[2][2];
  for (uint32_t order = 0; order < 2; order++) {
    for (uint32_t rep = 0; rep < 2; rep++) {
      hx_t h = hx_new(0, true);
      const float d10 = 10.0f, d4 = 4.0f, h10 = 10.0f;
      weft_entity_t a = spawn_unit(&h, (unit_t){.damage = &d10});
      weft_entity_t t = spawn_unit(&h, (unit_t){.hp = &h10, .damage = &d4});
      weft_entity_t u = spawn_unit(&h, (unit_t){.hp = &h10});
      if (order == 0) {
        push(&h, a, t); /* t dies ... */
        push(&h, t, u); /* ... and cannot hurt u */
      } else {
        push(&h, t, u); /* u: 6 */
        push(&h, a, t); /* then t dies */
      }
      tick(&h);
      assert_float_exact(hp_of(&h, t), 0.0f);
      assert_killed(&h, t);
      u_hp[order] = hp_of(&h, u);
      digest[order][rep] = weft_world_digest(h.w);
      hx_free(&h);
    }
    assert_int_equal(digest[order][0], digest[order][1]); /* deterministic */
  }
  assert_float_exact(u_hp[0], 10.0f);
  assert_float_exact(u_hp[1], 6.0f);
  assert_int_not_equal(digest[0][0], digest[1][0]);
}

/* --- the oracle -------------------------------------------------------------
 */

typedef struct ent_t {
  weft_entity_t e;
  bool stale, has_h, has_d, has_a, dead, killed, corpse;
  float hp, amount, flat, frac;
} ent_t;

static float oracle_hit(const ent_t *to, float amount) {
  float flat = to->has_a ? to->flat : 0.0f;
  float frac = to->has_a ? to->frac : 0.0f;
  frac = frac < 0.0f ? 0.0f : frac > 1.0f ? 1.0f : frac;
  float rest = amount - flat;
  return rest > 0.0f ? rest * (1.0f - frac) : 0.0f;
}

static bool oracle_alive(const ent_t *x) {
  return x && !x->stale && !x->dead && !x->killed &&
         (!x->has_h || x->hp > 0.0f);
}

static uint32_t oracle_apply(ent_t *from, ent_t *to) {
  if (!from->has_d || !to->has_h || !(to->hp > 0.0f))
    return 0;
  to->hp -= oracle_hit(to, from->amount);
  if (to->hp <= 0.0f) {
    to->killed = true;
    return 1;
  }
  return 0;
}

static float frand(wt_rng_t *r, float lo, float hi) {
  return lo + (hi - lo) * (float)wt_below(r, 1001) / 1000.0f;
}

/* One oracle run: its size, and what it saw. */
typedef struct oracle_cfg_t {
  uint32_t workers, units, events, rounds;
  float hp_max; /* units start with hp in [1, hp_max] (or 0) */
} oracle_cfg_t;

typedef struct oracle_out_t {
  uint64_t digest, kills;
  uint32_t last_kill; /* index in its round of the last event that killed */
} oracle_out_t;

/* Random units and contacts (stale, forged, repeated, self) over
 * cfg->rounds runs of cfg->events each, checked after every run against
 * the rules computed over plain arrays. */
static oracle_out_t oracle_run(const oracle_cfg_t *cfg) {
  oracle_out_t out = {0, 0, 0};
  hx_t h = hx_new(cfg->workers, true);
  wt_rng_t r = wt_rng(2024);
  ent_t *ents = calloc(cfg->units, sizeof *ents);
  assert_non_null(ents);
  for (uint32_t i = 0; i < cfg->units; i++) {
    ent_t *x = &ents[i];
    x->has_h = wt_chance(&r, 7, 10);
    x->has_d = wt_chance(&r, 1, 2);
    x->has_a = x->has_h && wt_chance(&r, 3, 10);
    x->dead = wt_chance(&r, 1, 10);
    x->hp = wt_chance(&r, 1, 20) ? 0.0f : frand(&r, 1.0f, cfg->hp_max);
    x->amount = frand(&r, -1.0f, 15.0f);
    x->flat = frand(&r, 0.0f, 5.0f);
    x->frac = frand(&r, -0.2f, 1.2f);
    weft_armor_t ar = {x->flat, x->frac};
    x->e = spawn_unit(&h, (unit_t){.hp = x->has_h ? &x->hp : NULL,
                                   .damage = x->has_d ? &x->amount : NULL,
                                   .armor = x->has_a ? &ar : NULL,
                                   .dead = x->dead});
  }
  for (uint32_t i = 0; i < cfg->units; i++) {
    if (wt_chance(&r, 1, 10)) {
      assert_int_equal(weft_despawn(h.w, ents[i].e), WEFT_OK);
      ents[i].stale = true;
    }
  }
  for (uint32_t round = 0; round < cfg->rounds; round++) {
    for (uint32_t k = 0; k < cfg->events; k++) {
      uint32_t i = wt_below(&r, cfg->units), j = wt_below(&r, cfg->units);
      weft_entity_t a = ents[i].e, b = ents[j].e;
      ent_t *xa = &ents[i], *xb = &ents[j];
      if (wt_chance(&r, 1, 50)) { /* a forged handle */
        a = wt_handle(cfg->units + 7, 3, 42);
        xa = NULL;
      }
      push(&h, a, b);
      if (i == j && xa)
        continue; /* a self contact */
      if (oracle_alive(xa) && oracle_alive(xb)) {
        uint32_t kills = oracle_apply(xa, xb) + oracle_apply(xb, xa);
        if (kills)
          out.last_kill = k;
        out.kills += kills;
      }
    }
    tick(&h);
    for (uint32_t i = 0; i < cfg->units; i++) {
      ent_t *x = &ents[i];
      if (x->stale)
        continue;
      if (x->has_h &&
          !(weft_get(h.w, x->e, h.s.health) && hp_of(&h, x->e) == x->hp))
        fail_msg("round %u, unit %u: hp %.9g, oracle %.9g", round, i,
                 (double)hp_of(&h, x->e), (double)x->hp);
      if (x->killed) {
        x->dead = x->corpse = true;
        x->killed = false;
      }
      if (x->corpse) {
        assert_killed(&h, x->e);
      } else if (!x->dead) {
        assert_untouched(&h, x->e);
      } else { /* tagged at spawn: the system did not touch it */
        assert_true(weft_is_enabled(h.w, x->e, h.s.velocity));
      }
    }
    assert_int_equal(commands(&h), 3 * out.kills);
  }
  /* The run did kill, and not everyone at once. */
  assert_true(out.kills > 20);
  assert_true(out.kills < cfg->units / 2 + cfg->units / 4);
  weft_system_stats_t st;
  assert_int_equal(weft_system_stats(h.w, h.sys, &st), WEFT_OK);
  assert_int_equal(st.runs, cfg->rounds);
  if (cfg->workers)
    assert_true(st.jobs > 0); /* it ran on the pool */
  out.digest = weft_world_digest(h.w);
  free(ents);
  hx_free(&h);
  return out;
}

/* Three runs of 1,500 events over 300 units; the same on a pool of two
 * (the task and its planning ranges run there), to the digest. */
static void test_health_random_matches_oracle(void **state) {
  (void)state;
  oracle_cfg_t cfg = {0, 300, 1500, 3, 40.0f};
  oracle_out_t inline_run = oracle_run(&cfg);
  cfg.workers = 2;
  assert_int_equal(oracle_run(&cfg).digest, inline_run.digest);
}

/* One run of 150,000 events: 147 of the system's blocks of 1,024 events,
 * nine times round its ring of 16, planned on the pool while earlier
 * blocks apply, with kills up to the last block. The same as the oracle
 * inline and on a pool of three, to the digest. */
static void test_health_blocks_match_oracle(void **state) {
  (void)state;
  oracle_cfg_t cfg = {0, 4000, 150000, 1, 1200.0f};
  oracle_out_t inline_run = oracle_run(&cfg);
  assert_true(inline_run.last_kill >= 150000 / 1024 * 1024);
  cfg.workers = 3;
  oracle_out_t pooled = oracle_run(&cfg);
  assert_int_equal(pooled.digest, inline_run.digest);
  assert_int_equal(pooled.kills, inline_run.kills);
}

/* Steady runs allocate nothing: after two warm-up runs, ten more runs of
 * 5,000 events each (hits that kill nobody) change neither the world's
 * allocation count nor this thread's jemalloc counter; the hits landed. */
static void test_health_steady_runs_allocate_nothing(void **state) {
  (void)state;
  hx_t h = hx_new(0, true);
  enum { UNITS = 500, EVENTS = 5000 };
  static weft_entity_t u[UNITS];
  float hp = 1e5f, dmg = 1.0f;
  for (uint32_t i = 0; i < UNITS; i++)
    u[i] = spawn_unit(&h, (unit_t){.hp = &hp, .damage = &dmg});
  wt_rng_t r = wt_rng(5);
  wt_alloc_probe_t probe;
  memset(&probe, 0, sizeof probe);
  for (uint32_t round = 0; round < 12; round++) {
    if (round == 2)
      probe = wt_alloc_probe(h.w);
    for (uint32_t k = 0; k < EVENTS; k++)
      push(&h, u[wt_below(&r, UNITS)], u[wt_below(&r, UNITS)]);
    tick(&h);
  }
  wt_assert_no_alloc(h.w, &probe, "10 runs");
  float lost = 0.0f;
  for (uint32_t i = 0; i < UNITS; i++)
    lost += hp - hp_of(&h, u[i]);
  assert_true(lost > 0.0f);
  hx_free(&h);
}

/* --- declared access ------------------------------------------------------ */

typedef struct emit_t {
  weft_collision_t ev[4];
  uint32_t n;
} emit_t;

static int emit_run(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  (void)chunk;
  const emit_t *e = ctx->user;
  weft_channel_t ch = 0;
  if (weft_channel_lookup(ctx->world, "weft.collisions", &ch) != 0)
    return WEFT_ENONAME;
  for (uint32_t i = 0; i < e->n; i++) {
    int rc = weft_sysctx_emit(ctx, ch, &e->ev[i]);
    if (rc)
      return rc;
  }
  return 0;
}

static int noop_run(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  (void)ctx;
  (void)chunk;
  return 0;
}

/* An emitter registered before it is read in the same phase (a sync point
 * publishes its events first); a Health reader comes after it. */
static void test_health_declared_access_orders(void **state) {
  (void)state;
  hx_t h = hx_new(0, false);
  emit_t em;
  memset(&em, 0, sizeof em);
  weft_system_desc_t d;
  memset(&d, 0, sizeof d);
  d.name = "test.emit";
  d.emit[0] = h.s.collisions;
  d.run = emit_run;
  d.user = &em;
  weft_system_t emitter = 0, reader = 0;
  assert_int_equal(weft_system_register(h.w, &d, &emitter), WEFT_OK);
  assert_int_equal(weft_sys_health(h.w, &h.s, 0, &h.sys), WEFT_OK);
  memset(&d, 0, sizeof d);
  d.name = "test.reader";
  d.read[0] = h.s.health;
  d.run = noop_run;
  assert_int_equal(weft_system_register(h.w, &d, &reader), WEFT_OK);

  assert_true(weft_system_edge(h.w, emitter, h.sys));
  assert_true(weft_system_edge(h.w, h.sys, reader));
  assert_false(weft_system_edge(h.w, reader, h.sys));
  weft_system_info_t ie, ih;
  assert_int_equal(weft_system_info(h.w, emitter, &ie), WEFT_OK);
  assert_int_equal(weft_system_info(h.w, h.sys, &ih), WEFT_OK);
  assert_true(ih.segment > ie.segment);

  const float d8 = 8.0f, h10 = 10.0f;
  weft_entity_t a = spawn_unit(&h, (unit_t){.damage = &d8});
  weft_entity_t b = spawn_unit(&h, (unit_t){.hp = &h10});
  em.ev[0] = (weft_collision_t){a, b, 1.0f, 0.0f, 0.1f};
  em.ev[1] = (weft_collision_t){a, b, 1.0f, 0.0f, 0.1f};
  em.n = 2;
  tick(&h); /* one run: emitted, published, applied, committed */
  assert_float_exact(hp_of(&h, b), -6.0f);
  assert_killed(&h, b);
  hx_free(&h);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_health_register_rejects_bad_calls),
      cmocka_unit_test(test_health_damage_after_armor),
      cmocka_unit_test(test_health_death_tags_once),
      cmocka_unit_test(test_health_dead_take_and_deal_nothing),
      cmocka_unit_test(test_health_stale_handles_ignored),
      cmocka_unit_test(test_health_event_order_matters),
      cmocka_unit_test(test_health_random_matches_oracle),
      cmocka_unit_test(test_health_blocks_match_oracle),
      cmocka_unit_test(test_health_steady_runs_allocate_nothing),
      cmocka_unit_test(test_health_declared_access_orders),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
