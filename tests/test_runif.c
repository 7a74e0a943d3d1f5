/* SPDX-License-Identifier: MIT */
/* Unit tests for run conditions: timers, states, combinators, jitter. */
#include "support/weft_test.h"

#include <math.h>

#include <weft/runif.h>

/* --- helpers ------------------------------------------------------------- */

static bool eval(weft_runif_t *c, double dt) {
  return weft_runif_eval(c, dt, NULL);
}

static weft_runif_t *mk_every(weft_world_t *w, double interval) {
  weft_runif_t *c = NULL;
  assert_int_equal(weft_runif_every(w, interval, &c), WEFT_OK);
  assert_non_null(c);
  return c;
}

static weft_runif_t *mk_after(weft_world_t *w, double delay) {
  weft_runif_t *c = NULL;
  assert_int_equal(weft_runif_after(w, delay, &c), WEFT_OK);
  assert_non_null(c);
  return c;
}

static weft_runif_t *mk_cooldown(weft_world_t *w, double period) {
  weft_runif_t *c = NULL;
  assert_int_equal(weft_runif_cooldown(w, period, &c), WEFT_OK);
  assert_non_null(c);
  return c;
}

static weft_runif_t *mk_in_state(weft_world_t *w, uint32_t state) {
  weft_runif_t *c = NULL;
  assert_int_equal(weft_runif_in_state(w, state, &c), WEFT_OK);
  assert_non_null(c);
  return c;
}

static weft_runif_t *mk_both(weft_world_t *w, weft_runif_t *a,
                             weft_runif_t *b) {
  weft_runif_t *c = NULL;
  assert_int_equal(weft_runif_both(w, a, b, &c), WEFT_OK);
  assert_non_null(c);
  return c;
}

static weft_runif_t *mk_either(weft_world_t *w, weft_runif_t *a,
                               weft_runif_t *b) {
  weft_runif_t *c = NULL;
  assert_int_equal(weft_runif_either(w, a, b, &c), WEFT_OK);
  assert_non_null(c);
  return c;
}

static weft_runif_t *mk_negate(weft_world_t *w, weft_runif_t *a) {
  weft_runif_t *c = NULL;
  assert_int_equal(weft_runif_negate(w, a, &c), WEFT_OK);
  assert_non_null(c);
  return c;
}

/* A custom predicate returning a settable value and counting its calls. */
typedef struct probe_t {
  bool value;
  int calls;
  double last_dt;
  weft_world_t *last_world;
} probe_t;

static bool probe_fn(weft_world_t *w, double dt, void *user) {
  probe_t *p = user;
  p->calls++;
  p->last_dt = dt;
  p->last_world = w;
  return p->value;
}

static weft_runif_t *mk_probe(weft_world_t *w, probe_t *p) {
  weft_runif_t *c = NULL;
  assert_int_equal(weft_runif_custom(w, probe_fn, p, &c), WEFT_OK);
  assert_non_null(c);
  return c;
}

/* The index of the first firing of c over n evaluations of dt, or -1. */
static int first_fire(weft_runif_t *c, double dt, int n) {
  for (int i = 0; i < n; i++)
    if (eval(c, dt))
      return i;
  return -1;
}

/* --- every --------------------------------------------------------------- */

static void test_runif_every_matches_oracle(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_runif_t *c = mk_every(w, 1.0);
  /* The oracle: accumulate, fire and subtract the interval. */
  double elapsed = 0.0;
  int fires = 0, first = -1;
  for (int i = 0; i < 20; i++) {
    elapsed += 0.4;
    bool want = false;
    if (elapsed >= 1.0) {
      elapsed -= 1.0;
      want = true;
      fires++;
      if (first < 0)
        first = i;
    }
    assert_int_equal(eval(c, 0.4), want);
  }
  /* 0.4, 0.8, 1.2: the third evaluation fires; 8 s give 7 or 8 firings
   * depending on rounding, never a firing per evaluation. */
  assert_int_equal(first, 2);
  assert_in_range(fires, 7, 8);
  weft_world_destroy(w);
}

static void test_runif_every_big_dt_fires_once_keeps_excess(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_runif_t *c = mk_every(w, 1.0);
  assert_true(eval(c, 5.0)); /* 5 intervals pass, one firing: 4.0 left */
  /* The excess is kept: four small steps catch up, one at a time. */
  assert_true(eval(c, 0.125));  /* 4.125 -> 3.125 */
  assert_true(eval(c, 0.125));  /* 3.25 -> 2.25 */
  assert_true(eval(c, 0.125));  /* 2.375 -> 1.375 */
  assert_true(eval(c, 0.125));  /* 1.5 -> 0.5 */
  assert_false(eval(c, 0.125)); /* 0.625 */
  assert_false(eval(c, 0.25));  /* 0.875 */
  assert_true(eval(c, 0.125));  /* 1.0 -> 0 */
  assert_false(eval(c, 0.0));
  weft_world_destroy(w);
}

static void test_runif_every_zero_fires_each_evaluation(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_runif_t *c = mk_every(w, 0.0);
  for (int i = 0; i < 10; i++)
    assert_true(eval(c, i % 2 ? 0.0 : 0.3));
  weft_world_destroy(w);
}

/* --- after --------------------------------------------------------------- */

static void test_runif_after_fires_once_and_retires(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_runif_t *c = mk_after(w, 1.0);
  int fired = 0;
  for (int i = 0; i < 20; i++) {
    bool retire = false;
    bool r = weft_runif_eval(c, 0.25, &retire);
    /* 0.25 * 4 = 1.0 exactly: the fourth evaluation (index 3) fires. */
    assert_int_equal(r, i == 3);
    assert_int_equal(retire, i == 3);
    fired += r;
  }
  assert_int_equal(fired, 1);
  /* A huge dt later still does nothing. */
  bool retire = false;
  assert_false(weft_runif_eval(c, 100.0, &retire));
  assert_false(retire);
  /* after(0) fires at the first evaluation; retire is optional. */
  weft_runif_t *now = mk_after(w, 0.0);
  assert_true(weft_runif_eval(now, 0.0, NULL));
  assert_false(weft_runif_eval(now, 0.0, NULL));
  weft_world_destroy(w);
}

static void test_runif_after_retire_through_combinators(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  probe_t yes = {.value = true};
  /* Not evaluated (either decided by its first operand): no retire. */
  weft_runif_t *skipped = mk_after(w, 0.0);
  weft_runif_t *e = mk_either(w, mk_probe(w, &yes), skipped);
  bool retire = false;
  assert_true(weft_runif_eval(e, 1.0, &retire));
  assert_false(retire);
  /* both(in_state(1), after(0)): retires only once the state lets it run. */
  weft_runif_t *b = mk_both(w, mk_in_state(w, 1), mk_after(w, 0.0));
  assert_false(weft_runif_eval(b, 1.0, &retire));
  assert_false(retire);
  weft_world_set_state(w, 1);
  assert_true(weft_runif_eval(b, 1.0, &retire));
  assert_true(retire);
  /* negate(after): false when it fires, but the system still retires. */
  weft_runif_t *n = mk_negate(w, mk_after(w, 0.5));
  retire = false;
  assert_true(weft_runif_eval(n, 0.25, &retire));
  assert_false(retire);
  assert_false(weft_runif_eval(n, 0.25, &retire));
  assert_true(retire);
  /* retire is never cleared by a later, non-firing evaluation... */
  assert_true(weft_runif_eval(n, 0.25, &retire));
  assert_true(retire);
  /* ...nor by a second after() that is evaluated but does not fire. */
  weft_runif_t *two = mk_both(w, mk_after(w, 0.0), mk_after(w, 10.0));
  retire = false;
  assert_false(weft_runif_eval(two, 1.0, &retire));
  assert_true(retire);
  weft_world_destroy(w);
}

/* --- cooldown ------------------------------------------------------------ */

static void test_runif_cooldown_matches_oracle(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_runif_t *c = mk_cooldown(w, 1.0);
  /* The oracle: ready at start; fire and reset to 0 (excess dropped). */
  bool ready = true;
  double elapsed = 0.0;
  bool got[30];
  for (int i = 0; i < 30; i++) {
    elapsed += 0.3;
    bool want = false;
    if (ready || elapsed >= 1.0) {
      ready = false;
      elapsed = 0.0;
      want = true;
    }
    got[i] = eval(c, 0.3);
    assert_int_equal(got[i], want);
  }
  /* Fires at 0, then after four 0.3 steps each (1.2 >= 1.0). Keeping the
   * 0.2 excess would fire at 7 instead of 8. */
  for (int i = 0; i < 30; i++)
    assert_int_equal(got[i], i % 4 == 0);
  weft_world_destroy(w);
}

static void test_runif_cooldown_ready_and_zero_period(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  /* Ready on the first evaluation even with dt 0. */
  weft_runif_t *c = mk_cooldown(w, 10.0);
  assert_true(eval(c, 0.0));
  assert_false(eval(c, 9.0));
  assert_true(eval(c, 1.0));
  assert_false(eval(c, 5.0));
  weft_runif_t *z = mk_cooldown(w, 0.0);
  for (int i = 0; i < 5; i++)
    assert_true(eval(z, 0.0));
  weft_world_destroy(w);
}

/* --- state --------------------------------------------------------------- */

static void test_runif_in_state_follows_world_state(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  assert_int_equal(weft_world_state(w), 0);
  weft_runif_t *zero = mk_in_state(w, 0);
  weft_runif_t *three = mk_in_state(w, 3);
  assert_true(eval(zero, 0.1));
  assert_false(eval(three, 0.1));
  weft_world_set_state(w, 3);
  assert_int_equal(weft_world_state(w), 3);
  assert_false(eval(zero, 0.1));
  assert_true(eval(three, 0.1));
  weft_world_set_state(w, 4);
  assert_false(eval(three, 0.1));
  weft_world_set_state(w, 0xffffffffu);
  assert_int_equal(weft_world_state(w), 0xffffffffu);
  /* State is per world. */
  weft_world_t *other = wt_world_new(NULL);
  assert_int_equal(weft_world_state(other), 0);
  weft_world_destroy(other);
  weft_world_destroy(w);
}

/* --- combinators --------------------------------------------------------- */

static void test_runif_both_short_circuits_timer(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  /* both(in_state(1), every(1)): while the state is off, every() is never
   * evaluated, so the 0.75 s that pass do not count. */
  weft_runif_t *c = mk_both(w, mk_in_state(w, 1), mk_every(w, 1.0));
  for (int i = 0; i < 3; i++)
    assert_false(eval(c, 0.25));
  weft_world_set_state(w, 1);
  assert_int_equal(first_fire(c, 0.25, 10), 3); /* a fresh second */
  /* Swapped: every() is evaluated first and advances while off. */
  weft_world_set_state(w, 0);
  weft_runif_t *s = mk_both(w, mk_every(w, 1.0), mk_in_state(w, 1));
  for (int i = 0; i < 3; i++)
    assert_false(eval(s, 0.25));
  weft_world_set_state(w, 1);
  assert_int_equal(first_fire(s, 0.25, 10), 0); /* 0.75 + 0.25 */
  weft_world_destroy(w);
}

static void test_runif_either_and_both_skip_second_operand(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  probe_t a = {.value = true}, b = {.value = false};
  weft_runif_t *pa = mk_probe(w, &a), *pb = mk_probe(w, &b);
  weft_runif_t *e = mk_either(w, pa, pb);
  weft_runif_t *both = mk_both(w, pa, pb);
  assert_true(eval(e, 0.5));
  assert_int_equal(a.calls, 1);
  assert_int_equal(b.calls, 0);
  assert_ptr_equal(a.last_world, w);
  assert_true(a.last_dt == 0.5);
  a.value = false;
  assert_false(eval(e, 0.5)); /* false || false */
  assert_int_equal(b.calls, 1);
  b.value = true;
  assert_true(eval(e, 0.5));
  assert_int_equal(b.calls, 2);
  /* both(a, b) with a false never calls b. */
  assert_false(eval(both, 0.5));
  assert_int_equal(a.calls, 4);
  assert_int_equal(b.calls, 2);
  a.value = true;
  assert_true(eval(both, 0.5));
  assert_int_equal(b.calls, 3);
  b.value = false;
  assert_false(eval(both, 0.5));
  assert_int_equal(b.calls, 4);
  weft_world_destroy(w);
}

static void test_runif_negate_inverts(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  probe_t p = {.value = true};
  weft_runif_t *n = mk_negate(w, mk_probe(w, &p));
  assert_false(eval(n, 0.1));
  p.value = false;
  assert_true(eval(n, 0.1));
  assert_int_equal(p.calls, 2);
  /* not every(1): true except at the firings. */
  weft_runif_t *ne = mk_negate(w, mk_every(w, 1.0));
  assert_true(eval(ne, 0.5));
  assert_false(eval(ne, 0.5));
  assert_true(eval(ne, 0.5));
  /* Double negation is the identity. */
  weft_runif_t *nn = mk_negate(w, mk_negate(w, mk_in_state(w, 0)));
  assert_true(eval(nn, 0.1));
  weft_world_set_state(w, 2);
  assert_false(eval(nn, 0.1));
  weft_world_destroy(w);
}

static void test_runif_shared_condition_shares_state(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  probe_t never = {.value = false};
  weft_runif_t *shared = mk_every(w, 1.0);
  /* Two systems' conditions that both reach the same every(1). */
  weft_runif_t *sys1 = mk_both(w, mk_in_state(w, 0), shared);
  weft_runif_t *sys2 = mk_either(w, mk_probe(w, &never), shared);
  /* Each frame advances the shared timer twice: 0.5 + 0.5. */
  for (int frame = 0; frame < 5; frame++) {
    assert_false(eval(sys1, 0.5));
    assert_true(eval(sys2, 0.5));
  }
  /* A separate every(1) evaluated once a frame would fire every other. */
  weft_runif_t *alone = mk_every(w, 1.0);
  assert_false(eval(alone, 0.5));
  assert_true(eval(alone, 0.5));
  weft_world_destroy(w);
}

/* --- jitter -------------------------------------------------------------- */

/* The jitter oracle: draws from its own copy of the generator in the same
 * order (one draw per firing), as documented in runif.h. */
typedef struct jit_oracle_t {
  weft_rng_t rng;
  double base, jitter, current, elapsed;
  int clamped;
} jit_oracle_t;

static bool jit_step(jit_oracle_t *o, double dt) {
  o->elapsed += dt;
  if (o->elapsed < o->current)
    return false;
  o->elapsed -= o->current;
  double u = (double)(weft_rng_next(&o->rng) >> 11) * 0x1.0p-53;
  double next = o->base + (-o->jitter + u * (2.0 * o->jitter));
  if (next < 0.01 * o->base) {
    next = 0.01 * o->base;
    o->clamped++;
  }
  o->current = next;
  return true;
}

static bool rng_equal(const weft_rng_t *a, const weft_rng_t *b) {
  return memcmp(a->s, b->s, sizeof a->s) == 0;
}

static void test_runif_jitter_matches_oracle(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_rng_t rng = {{1, 2, 3, 4}};
  const weft_rng_t start = rng;
  jit_oracle_t o = {.rng = rng, .base = 1.0, .jitter = 0.3, .current = 1.0};
  weft_runif_t *c = NULL;
  assert_int_equal(weft_runif_every_jitter(w, 1.0, 0.3, &rng, &c), WEFT_OK);
  /* The first interval is the base one and draws nothing: with exact
   * 0.125 steps it fires at the eighth evaluation, and the generator is
   * untouched until then. */
  for (int i = 0; i < 7; i++) {
    assert_false(eval(c, 0.125));
    assert_false(jit_step(&o, 0.125));
    assert_true(rng_equal(&rng, &start));
  }
  assert_true(eval(c, 0.125));
  assert_true(jit_step(&o, 0.125));
  assert_false(rng_equal(&rng, &start));
  assert_true(rng_equal(&rng, &o.rng));
  /* Later firings follow the oracle's jittered intervals. */
  int fires = 1, gaps_differ = 0, last = 7;
  for (int i = 8; i < 800; i++) {
    bool want = jit_step(&o, 0.05);
    assert_int_equal(eval(c, 0.05), want);
    if (want) {
      gaps_differ += (i - last) != 20; /* an unjittered gap is 20 steps */
      last = i;
      fires++;
    }
  }
  assert_true(rng_equal(&rng, &o.rng));
  assert_in_range(fires, 25, 55);
  assert_true(gaps_differ > 0); /* the jitter really shows */
  weft_world_destroy(w);
}

static void test_runif_jitter_clamps_to_one_percent(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_rng_t rng = {{1, 2, 3, 4}};
  /* Jitter 5 x base: about 40% of the draws fall below 1% of the base. */
  jit_oracle_t o = {.rng = rng, .base = 2.0, .jitter = 10.0, .current = 2.0};
  weft_runif_t *c = NULL;
  assert_int_equal(weft_runif_every_jitter(w, 2.0, 10.0, &rng, &c), WEFT_OK);
  /* Steps of 0.004 s: a clamped 0.02 s interval takes five of them; a
   * clamp to 0 (or a negative interval) would fire at the next step, one
   * to an absolute 0.01 s at the third. */
  int fires = 0, last = -1, min_gap = 1 << 30;
  for (int i = 0; i < 40000; i++) {
    bool want = jit_step(&o, 0.004);
    assert_int_equal(eval(c, 0.004), want);
    if (want) {
      if (last >= 0 && i - last < min_gap)
        min_gap = i - last;
      last = i;
      fires++;
    }
  }
  assert_true(o.clamped >= 5);
  assert_true(fires > o.clamped);
  assert_true(rng_equal(&rng, &o.rng));
  assert_in_range(min_gap, 4, 6); /* 0.02 s in 0.004 s steps, give or take
                                     rounding of the accumulation */
  weft_world_destroy(w);
}

/* --- bad input ----------------------------------------------------------- */

static void test_runif_rejects_bad_input(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_rng_t rng = {{1, 2, 3, 4}};
  weft_runif_t *sentinel = (weft_runif_t *)&rng; /* never written */
  weft_runif_t *out = sentinel;
  weft_runif_t *ok = mk_every(w, 1.0);
  const double bad[] = {-1.0, -1e-300, NAN, INFINITY, -INFINITY};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    assert_int_equal(weft_runif_every(w, bad[i], &out), WEFT_EINVAL);
    assert_int_equal(weft_runif_after(w, bad[i], &out), WEFT_EINVAL);
    assert_int_equal(weft_runif_cooldown(w, bad[i], &out), WEFT_EINVAL);
    assert_int_equal(weft_runif_every_jitter(w, bad[i], 0.1, &rng, &out),
                     WEFT_EINVAL);
    assert_int_equal(weft_runif_every_jitter(w, 1.0, bad[i], &rng, &out),
                     WEFT_EINVAL);
  }
  assert_true(strlen(weft_world_last_error(w)) > 0);
  /* NULL world, out, rng, operands, fn. */
  assert_int_equal(weft_runif_every(NULL, 1.0, &out), WEFT_EINVAL);
  assert_int_equal(weft_runif_every(w, 1.0, NULL), WEFT_EINVAL);
  assert_int_equal(weft_runif_every_jitter(NULL, 1.0, 0.1, &rng, &out),
                   WEFT_EINVAL);
  assert_int_equal(weft_runif_every_jitter(w, 1.0, 0.1, NULL, &out),
                   WEFT_EINVAL);
  assert_int_equal(weft_runif_every_jitter(w, 1.0, 0.1, &rng, NULL),
                   WEFT_EINVAL);
  assert_int_equal(weft_runif_after(NULL, 1.0, &out), WEFT_EINVAL);
  assert_int_equal(weft_runif_after(w, 1.0, NULL), WEFT_EINVAL);
  assert_int_equal(weft_runif_cooldown(NULL, 1.0, &out), WEFT_EINVAL);
  assert_int_equal(weft_runif_cooldown(w, 1.0, NULL), WEFT_EINVAL);
  assert_int_equal(weft_runif_in_state(NULL, 1, &out), WEFT_EINVAL);
  assert_int_equal(weft_runif_in_state(w, 1, NULL), WEFT_EINVAL);
  assert_int_equal(weft_runif_both(NULL, ok, ok, &out), WEFT_EINVAL);
  assert_int_equal(weft_runif_both(w, NULL, ok, &out), WEFT_EINVAL);
  assert_int_equal(weft_runif_both(w, ok, NULL, &out), WEFT_EINVAL);
  assert_int_equal(weft_runif_both(w, ok, ok, NULL), WEFT_EINVAL);
  assert_int_equal(weft_runif_either(NULL, ok, ok, &out), WEFT_EINVAL);
  assert_int_equal(weft_runif_either(w, NULL, ok, &out), WEFT_EINVAL);
  assert_int_equal(weft_runif_either(w, ok, NULL, &out), WEFT_EINVAL);
  assert_int_equal(weft_runif_either(w, ok, ok, NULL), WEFT_EINVAL);
  assert_int_equal(weft_runif_negate(NULL, ok, &out), WEFT_EINVAL);
  assert_int_equal(weft_runif_negate(w, NULL, &out), WEFT_EINVAL);
  assert_int_equal(weft_runif_negate(w, ok, NULL), WEFT_EINVAL);
  assert_int_equal(weft_runif_custom(NULL, probe_fn, NULL, &out), WEFT_EINVAL);
  assert_int_equal(weft_runif_custom(w, NULL, NULL, &out), WEFT_EINVAL);
  assert_int_equal(weft_runif_custom(w, probe_fn, NULL, NULL), WEFT_EINVAL);
  /* An operand from another world. */
  weft_world_t *other = wt_world_new(NULL);
  weft_runif_t *foreign = mk_every(other, 1.0);
  assert_int_equal(weft_runif_both(w, ok, foreign, &out), WEFT_EINVAL);
  assert_int_equal(weft_runif_either(w, foreign, ok, &out), WEFT_EINVAL);
  assert_int_equal(weft_runif_negate(w, foreign, &out), WEFT_EINVAL);
  weft_world_destroy(other);
  assert_ptr_equal(out, sentinel); /* failures leave *out alone */
  /* Edge values that are fine: zero times, zero jitter. */
  assert_int_equal(weft_runif_every(w, 0.0, &out), WEFT_OK);
  assert_int_equal(weft_runif_after(w, 0.0, &out), WEFT_OK);
  assert_int_equal(weft_runif_cooldown(w, 0.0, &out), WEFT_OK);
  assert_int_equal(weft_runif_every_jitter(w, 0.0, 0.0, &rng, &out), WEFT_OK);
  assert_true(eval(out, 0.0));
  assert_true(eval(out, 0.0));
  /* Evaluating NULL is false; NULL worlds' state is 0. */
  bool retire = false;
  assert_false(weft_runif_eval(NULL, 1.0, &retire));
  assert_false(retire);
  assert_int_equal(weft_world_state(NULL), 0);
  weft_world_set_state(NULL, 5); /* no-op */
  weft_world_destroy(w);
}

typedef struct panic_log_t {
  int calls;
} panic_log_t;

static void record_panic(void *user, const char *file, int line,
                         const char *msg) {
  (void)file;
  (void)line;
  (void)msg;
  ((panic_log_t *)user)->calls++;
}

static void test_runif_bad_dt_panics_and_counts_as_zero(void **state) {
  (void)state;
  panic_log_t log = {0};
  weft_world_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.checked = WEFT_CHECKED_ON;
  cfg.panic = record_panic;
  cfg.panic_user = &log;
  weft_world_t *w = wt_world_new(&cfg);
  weft_runif_t *c = mk_every(w, 1.0);
  assert_false(eval(c, 0.75));
  assert_false(eval(c, NAN));
  assert_false(eval(c, -5.0));
  assert_false(eval(c, INFINITY));
  assert_int_equal(log.calls, 3);
  /* The timer was not poisoned: 0.75 + 0.25 fires, then it is quiet. */
  assert_true(eval(c, 0.25));
  assert_false(eval(c, 0.5));
  assert_int_equal(log.calls, 3);
  weft_world_destroy(w);
}

static void test_runif_eval_allocates_nothing(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_rng_t rng = {{1, 2, 3, 4}};
  weft_runif_t *j = NULL;
  assert_int_equal(weft_runif_every_jitter(w, 0.5, 0.1, &rng, &j), WEFT_OK);
  weft_runif_t *c =
      mk_either(w, mk_both(w, mk_cooldown(w, 0.3), mk_after(w, 2.0)),
                mk_negate(w, mk_both(w, j, mk_in_state(w, 0))));
  uint64_t before = wt_stats(w).allocs;
  int fired = 0;
  for (int i = 0; i < 1000; i++)
    fired += weft_runif_eval(c, 0.01, NULL);
  assert_int_equal(wt_stats(w).allocs, before);
  assert_true(fired > 0 && fired < 1000);
  weft_world_destroy(w);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_runif_every_matches_oracle),
      cmocka_unit_test(test_runif_every_big_dt_fires_once_keeps_excess),
      cmocka_unit_test(test_runif_every_zero_fires_each_evaluation),
      cmocka_unit_test(test_runif_after_fires_once_and_retires),
      cmocka_unit_test(test_runif_after_retire_through_combinators),
      cmocka_unit_test(test_runif_cooldown_matches_oracle),
      cmocka_unit_test(test_runif_cooldown_ready_and_zero_period),
      cmocka_unit_test(test_runif_in_state_follows_world_state),
      cmocka_unit_test(test_runif_both_short_circuits_timer),
      cmocka_unit_test(test_runif_either_and_both_skip_second_operand),
      cmocka_unit_test(test_runif_negate_inverts),
      cmocka_unit_test(test_runif_shared_condition_shares_state),
      cmocka_unit_test(test_runif_jitter_matches_oracle),
      cmocka_unit_test(test_runif_jitter_clamps_to_one_percent),
      cmocka_unit_test(test_runif_rejects_bad_input),
      cmocka_unit_test(test_runif_bad_dt_panics_and_counts_as_zero),
      cmocka_unit_test(test_runif_eval_allocates_nothing),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
