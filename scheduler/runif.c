/* SPDX-License-Identifier: MIT */
/*
 * Run conditions: small predicate objects owned by the
 * world, evaluated by the scheduler at each system's turn.
 *
 * Every condition is one allocation linked into the world's run-condition
 * slot (weft__runifs()), so the world frees them all at destruction
 * whatever the systems did with them; there is no per-condition destroy.
 * Evaluation allocates nothing.
 */
#include <math.h>
#include <stdatomic.h>
#include <stddef.h>

#include "core/check.h"
#include "core/world_view.h"
#include "scheduler/sched.h"
#include "weft/runif.h"

typedef enum runif_kind_t {
  RUNIF_EVERY,
  RUNIF_AFTER,
  RUNIF_COOLDOWN,
  RUNIF_IN_STATE,
  RUNIF_BOTH,
  RUNIF_EITHER,
  RUNIF_NEGATE,
  RUNIF_CUSTOM,
} runif_kind_t;

struct weft_runif_t {
  struct weft_runif_t *next; /* the world's list, newest first */
  weft_world_t *world;
  runif_kind_t kind;
  union {
    struct {
      double base;    /* the configured interval */
      double jitter;  /* 0: no jitter */
      double current; /* the interval being waited out now */
      double elapsed;
      weft_rng_t *rng; /* NULL without jitter */
    } every;
    struct {
      double delay;
      double elapsed;
      bool fired;
    } after;
    struct {
      double period;
      double elapsed; /* since the last firing */
      bool ready;     /* true until the first evaluation */
    } cooldown;
    uint32_t state;
    struct {
      weft_runif_t *a, *b;
    } pair;
    struct {
      weft_runif_fn fn;
      void *user;
    } custom;
  } u;
};

#define RUNIF_ALIGN _Alignof(struct weft_runif_t)

/* A time argument: non-negative and finite (NaN fails both). */
static bool time_ok(double t) {
  return t >= 0.0 && isfinite(t);
}

static int make(weft_world_t *w, runif_kind_t kind, weft_runif_t **out) {
  weft_runif_t *c = weft__calloc(&w->alloc, sizeof(*c), RUNIF_ALIGN);
  WEFT_CHECK(w, c, WEFT_ENOMEM, "out of memory creating a run condition");
  c->world = w;
  c->kind = kind;
  c->next = weft__runifs(w);
  weft__world_ext_set(w, WEFT__EXT_RUNIF, c, weft__runif_fini);
  *out = c;
  return 0;
}

bool weft__runif_owned(const weft_world_t *w, const weft_runif_t *cond) {
  for (const weft_runif_t *c = weft__runifs(w); c; c = c->next)
    if (c == cond)
      return true;
  return false;
}

void weft__runif_fini(weft_world_t *w) {
  weft_runif_t *c = weft__runifs(w);
  while (c) {
    weft_runif_t *next = c->next;
    weft__free(c, sizeof(*c), RUNIF_ALIGN);
    c = next;
  }
  weft__world_ext_set(w, WEFT__EXT_RUNIF, NULL, NULL);
}

static int every(weft_world_t *w, double interval, double jitter,
                 weft_rng_t *rng, weft_runif_t **out) {
  weft_runif_t *c = NULL;
  int rc = make(w, RUNIF_EVERY, &c);
  if (rc)
    return rc;
  c->u.every.base = interval;
  c->u.every.jitter = jitter;
  c->u.every.current = interval; /* the first interval is never jittered */
  c->u.every.rng = rng;
  *out = c;
  return 0;
}

int weft_runif_every(weft_world_t *w, double interval, weft_runif_t **out) {
  WEFT_CHECK(w, w && out, WEFT_EINVAL, "NULL argument");
  WEFT_CHECK(w, time_ok(interval), WEFT_EINVAL,
             "every(): interval %g is negative or not finite", interval);
  return every(w, interval, 0.0, NULL, out);
}

int weft_runif_every_jitter(weft_world_t *w, double interval, double jitter,
                            weft_rng_t *rng, weft_runif_t **out) {
  WEFT_CHECK(w, w && rng && out, WEFT_EINVAL, "NULL argument");
  WEFT_CHECK(w, time_ok(interval), WEFT_EINVAL,
             "every(): interval %g is negative or not finite", interval);
  WEFT_CHECK(w, time_ok(jitter), WEFT_EINVAL,
             "every(): jitter %g is negative or not finite", jitter);
  return every(w, interval, jitter, rng, out);
}

int weft_runif_after(weft_world_t *w, double delay, weft_runif_t **out) {
  WEFT_CHECK(w, w && out, WEFT_EINVAL, "NULL argument");
  WEFT_CHECK(w, time_ok(delay), WEFT_EINVAL,
             "after(): delay %g is negative or not finite", delay);
  weft_runif_t *c = NULL;
  int rc = make(w, RUNIF_AFTER, &c);
  if (rc)
    return rc;
  c->u.after.delay = delay;
  *out = c;
  return 0;
}

int weft_runif_cooldown(weft_world_t *w, double period, weft_runif_t **out) {
  WEFT_CHECK(w, w && out, WEFT_EINVAL, "NULL argument");
  WEFT_CHECK(w, time_ok(period), WEFT_EINVAL,
             "cooldown(): period %g is negative or not finite", period);
  weft_runif_t *c = NULL;
  int rc = make(w, RUNIF_COOLDOWN, &c);
  if (rc)
    return rc;
  c->u.cooldown.period = period;
  c->u.cooldown.ready = true;
  *out = c;
  return 0;
}

int weft_runif_in_state(weft_world_t *w, uint32_t state, weft_runif_t **out) {
  WEFT_CHECK(w, w && out, WEFT_EINVAL, "NULL argument");
  weft_runif_t *c = NULL;
  int rc = make(w, RUNIF_IN_STATE, &c);
  if (rc)
    return rc;
  c->u.state = state;
  *out = c;
  return 0;
}

static int pair(weft_world_t *w, runif_kind_t kind, weft_runif_t *a,
                weft_runif_t *b, weft_runif_t **out) {
  WEFT_CHECK(w, w && a && b && out, WEFT_EINVAL, "NULL argument");
  WEFT_CHECK(w, a->world == w && b->world == w, WEFT_EINVAL,
             "an operand belongs to another world");
  weft_runif_t *c = NULL;
  int rc = make(w, kind, &c);
  if (rc)
    return rc;
  c->u.pair.a = a;
  c->u.pair.b = b;
  *out = c;
  return 0;
}

int weft_runif_both(weft_world_t *w, weft_runif_t *a, weft_runif_t *b,
                    weft_runif_t **out) {
  return pair(w, RUNIF_BOTH, a, b, out);
}

int weft_runif_either(weft_world_t *w, weft_runif_t *a, weft_runif_t *b,
                      weft_runif_t **out) {
  return pair(w, RUNIF_EITHER, a, b, out);
}

int weft_runif_negate(weft_world_t *w, weft_runif_t *a, weft_runif_t **out) {
  /* b = a only to share the checks; negate never looks at b. */
  return pair(w, RUNIF_NEGATE, a, a, out);
}

int weft_runif_custom(weft_world_t *w, weft_runif_fn fn, void *user,
                      weft_runif_t **out) {
  WEFT_CHECK(w, w && fn && out, WEFT_EINVAL, "NULL argument");
  weft_runif_t *c = NULL;
  int rc = make(w, RUNIF_CUSTOM, &c);
  if (rc)
    return rc;
  c->u.custom.fn = fn;
  c->u.custom.user = user;
  *out = c;
  return 0;
}

/* The interval after a firing: base + uniform[-jitter, +jitter), at least
 * 1% of base. The draw is inlined (53 bits, as weft_rng_double) so that
 * the sequence depends on the generator alone. */
static double next_interval(weft_runif_t *c) {
  double base = c->u.every.base, jitter = c->u.every.jitter;
  double u = (double)(weft_rng_next(c->u.every.rng) >> 11) * 0x1.0p-53;
  double next = base + (-jitter + u * (2.0 * jitter));
  double floor = 0.01 * base;
  return next < floor ? floor : next;
}

static bool eval(weft_runif_t *c, double dt, bool *retire) {
  switch (c->kind) {
  case RUNIF_EVERY:
    c->u.every.elapsed += dt;
    if (c->u.every.elapsed < c->u.every.current)
      return false;
    /* Keep the excess but fire once: a long frame does not replay the
     * missed firings in one evaluation; the next ones catch up. */
    c->u.every.elapsed -= c->u.every.current;
    if (c->u.every.rng)
      c->u.every.current = next_interval(c);
    return true;
  case RUNIF_AFTER:
    if (c->u.after.fired)
      return false;
    c->u.after.elapsed += dt;
    if (c->u.after.elapsed < c->u.after.delay)
      return false;
    c->u.after.fired = true;
    if (retire)
      *retire = true;
    return true;
  case RUNIF_COOLDOWN:
    c->u.cooldown.elapsed += dt;
    if (!c->u.cooldown.ready && c->u.cooldown.elapsed < c->u.cooldown.period)
      return false;
    c->u.cooldown.ready = false;
    c->u.cooldown.elapsed = 0.0; /* the excess is discarded */
    return true;
  case RUNIF_IN_STATE:
    return weft_world_state(c->world) == c->u.state;
  case RUNIF_BOTH:
    return eval(c->u.pair.a, dt, retire) && eval(c->u.pair.b, dt, retire);
  case RUNIF_EITHER:
    return eval(c->u.pair.a, dt, retire) || eval(c->u.pair.b, dt, retire);
  case RUNIF_NEGATE:
    return !eval(c->u.pair.a, dt, retire);
  case RUNIF_CUSTOM:
    return c->u.custom.fn(c->world, dt, c->u.custom.user);
  }
  return false;
}

bool weft_runif_eval(weft_runif_t *cond, double dt, bool *retire) {
  if (!cond)
    return false;
  /* A bad dt is the caller's bug; without checked mode it counts as 0 so
   * that no timer is poisoned with a NaN or an infinity. */
  if (!WEFT_ASSERT_CHECKED(cond->world, time_ok(dt),
                           "run condition evaluated with a negative or "
                           "non-finite dt"))
    dt = 0.0;
  return eval(cond, dt, retire);
}

void weft_world_set_state(weft_world_t *w, uint32_t state) {
  if (w)
    atomic_store_explicit(&w->state, state, memory_order_relaxed);
}

uint32_t weft_world_state(const weft_world_t *w) {
  if (!w)
    return 0;
  return atomic_load_explicit(&((weft_world_t *)w)->state,
                              memory_order_relaxed);
}
