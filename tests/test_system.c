/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for building the schedule (include/weft/system.h and schedule.h):
 * registration, conflict and explicit edges, cycles, the dependency order,
 * sync segments, rebuild timing and user phases.
 */
#include "support/weft_test.h"

#include <stdlib.h>

#include "core/world.h" /* w->alloc.fail_in: injected allocation failures */

/* --- helpers ------------------------------------------------------------- */

#define LOG_CAP 256u

/* What recording callbacks write: the systems in call order, and what the
 * receiving systems saw. */
typedef struct rec_t {
  weft_system_t log[LOG_CAP];
  uint32_t n;
  bool spawn;        /* each call records one weft_cmd_spawn */
  weft_channel_t ch; /* emitters emit to it, receivers read it */
  uint32_t seen;     /* events a receiver saw on its last call */
  uint32_t overflow;
} rec_t;

static int rec_run(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  (void)chunk;
  rec_t *r = ctx->user;
  if (!r)
    return 0;
  if (r->n < LOG_CAP)
    r->log[r->n++] = ctx->system;
  else
    r->overflow++;
  if (r->spawn) {
    static const weft_component_t none[1] = {0};
    weft_entity_t e;
    int rc = weft_cmd_spawn(ctx->cmd, none, NULL, &e);
    if (rc)
      return rc;
  }
  return 0;
}

static int emit_run(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  rec_t *r = ctx->user;
  uint32_t v = 7;
  int rc = weft_sysctx_emit(ctx, r->ch, &v);
  return rc ? rc : rec_run(ctx, chunk);
}

static int receive_run(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  rec_t *r = ctx->user;
  weft_event_read(ctx->world, r->ch, &r->seen);
  return rec_run(ctx, chunk);
}

/* Registers a descriptor (default callback: rec_run) and asserts success. */
static weft_system_t reg(weft_world_t *w, weft_system_desc_t d) {
  if (!d.run)
    d.run = rec_run;
  weft_system_t id = 0;
  int rc = weft_system_register(w, &d, &id);
  if (rc)
    print_message("registering %s: %s\n", d.name ? d.name : "(null)",
                  weft_world_last_error(w));
  assert_int_equal(rc, WEFT_OK);
  assert_int_not_equal(id, 0);
  return id;
}

/* SYS(w, .name = "A", .query.include = {x}, ...) */
#define SYS(w, ...) reg((w), (weft_system_desc_t){__VA_ARGS__})

/* Registers a descriptor expected to fail; returns the code. */
static int reg_rc(weft_world_t *w, weft_system_desc_t d) {
  weft_system_t id = 0;
  int rc = weft_system_register(w, &d, &id);
  assert_int_not_equal(rc, WEFT_OK);
  return rc;
}

#define SYS_RC(w, ...) reg_rc((w), (weft_system_desc_t){__VA_ARGS__})

static void assert_error_mentions(const weft_world_t *w, const char *what) {
  const char *msg = weft_world_last_error(w);
  assert_non_null(msg);
  if (!strstr(msg, what))
    print_message("last error \"%s\" lacks \"%s\"\n", msg, what);
  assert_non_null(strstr(msg, what));
}

static weft_system_info_t info_of(weft_world_t *w, weft_system_t s) {
  weft_system_info_t in;
  memset(&in, 0, sizeof in);
  assert_int_equal(weft_system_info(w, s, &in), WEFT_OK);
  return in;
}

static uint32_t seg_of(weft_world_t *w, weft_system_t s) {
  return info_of(w, s).segment;
}

static uint64_t builds(const weft_world_t *w) {
  weft_pipeline_state_t st;
  memset(&st, 0, sizeof st);
  weft_pipeline_state(w, &st);
  return st.builds;
}

/* Asserts that the phase's dependency order is exactly want[0..n). */
static void assert_order(weft_world_t *w, weft_phase_t ph,
                         const weft_system_t *want, uint32_t n) {
  weft_system_t got[64];
  assert_true(n <= 64);
  assert_int_equal(weft_phase_systems(w, ph, got, 64), n);
  for (uint32_t i = 0; i < n; i++) {
    if (got[i] != want[i])
      print_message("position %u: got system %u, want %u\n", i, got[i],
                    want[i]);
    assert_int_equal(got[i], want[i]);
    assert_int_equal(info_of(w, got[i]).order, i);
  }
}

/* Asserts the log is exactly want[0..n). */
static void assert_log(const rec_t *r, const weft_system_t *want, uint32_t n) {
  assert_int_equal(r->overflow, 0);
  assert_int_equal(r->n, n);
  for (uint32_t i = 0; i < n; i++)
    assert_int_equal(r->log[i], want[i]);
}

static weft_component_t comp(weft_world_t *w, const char *name) {
  return wt_register(w, name, 4, 4);
}

static weft_phase_stats_t phase_stats(const weft_world_t *w, weft_phase_t ph) {
  weft_phase_stats_t st;
  memset(&st, 0, sizeof st);
  assert_int_equal(weft_phase_stats(w, ph, &st), WEFT_OK);
  return st;
}

#define FIXED WEFT_PHASE_FIXED_UPDATE
#define DT (1.0 / 60.0)

/* --- registration -------------------------------------------------------- */

static void test_system_register_rejects_bad_descriptors(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_component_t x = comp(w, "X");
  weft_resource_t res = 0;
  assert_int_equal(weft_resource_register(w, "Res", 8, 0, NULL, &res), 0);

  assert_int_equal(SYS_RC(w, .run = rec_run), WEFT_EINVAL);
  assert_error_mentions(w, "name");
  assert_int_equal(SYS_RC(w, .name = "", .run = rec_run), WEFT_EINVAL);
  assert_error_mentions(w, "name");
  assert_int_equal(SYS_RC(w, .name = "nocb"), WEFT_EINVAL);
  assert_error_mentions(w, "nocb");
  assert_error_mentions(w, "callback");

  assert_int_equal(SYS_RC(w, .name = "badphase", .phase = 99, .run = rec_run),
                   WEFT_ENONAME);
  assert_error_mentions(w, "phase");
  assert_error_mentions(w, "badphase");

  assert_int_equal(SYS_RC(w, .name = "r", .read = {x, 77}, .run = rec_run),
                   WEFT_ENOCOMP);
  assert_error_mentions(w, "77");
  assert_int_equal(SYS_RC(w, .name = "wr", .write = {99}, .run = rec_run),
                   WEFT_ENOCOMP);
  assert_int_equal(SYS_RC(w, .name = "cw", .cmd_write = {99}, .run = rec_run),
                   WEFT_ENOCOMP);
  assert_error_mentions(w, "cmd_write");
  assert_int_equal(SYS_RC(w, .name = "ch", .changed = {99}, .run = rec_run),
                   WEFT_ENOCOMP);
  /* Unknown components in the query terms, even far beyond any mask. */
  assert_int_equal(SYS_RC(w, .name = "qi", .query.include = {x, 0x40000000u},
                          .run = rec_run),
                   WEFT_ENOCOMP);
  assert_int_equal(SYS_RC(w, .name = "qe", .query.include = {x},
                          .query.exclude = {0x7fffffffu}, .run = rec_run),
                   WEFT_ENOCOMP);
  assert_int_equal(SYS_RC(w, .name = "qa", .query.any = {4000}, .run = rec_run),
                   WEFT_ENOCOMP);

  assert_int_equal(SYS_RC(w, .name = "acc", .query.include = {x},
                          .term_access = {WEFT_ACCESS_NONE + 1},
                          .run = rec_run),
                   WEFT_EINVAL);
  assert_error_mentions(w, "access");
  assert_int_equal(SYS_RC(w, .name = "fl", .flags = 1u << 7, .run = rec_run),
                   WEFT_EINVAL);
  assert_error_mentions(w, "flags");
  assert_int_equal(
      SYS_RC(w, .name = "rs", .res_read = {res + 5}, .run = rec_run),
      WEFT_ENONAME);
  assert_int_equal(
      SYS_RC(w, .name = "rw", .res_write = {res + 5}, .run = rec_run),
      WEFT_ENONAME);

  /* Nothing failed half-way into the registry. */
  const char *names[] = {"nocb", "badphase", "r",   "wr", "cw", "ch", "qi",
                         "qe",   "qa",       "acc", "fl", "rs", "rw"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    weft_system_t id = 0;
    assert_int_equal(weft_system_lookup(w, names[i], &id), WEFT_ENONAME);
  }
  assert_int_equal(weft_schedule_build(w), WEFT_OK);
  assert_int_equal(weft_phase_systems(w, FIXED, NULL, 0), 0);

  /* A valid one goes in; a second with its name does not. */
  weft_system_t a =
      SYS(w, .name = "walker", .query.include = {x}, .res_read = {res});
  assert_int_equal(SYS_RC(w, .name = "walker", .run = rec_run), WEFT_EEXIST);
  assert_error_mentions(w, "walker");
  weft_system_t found = 0;
  assert_int_equal(weft_system_lookup(w, "walker", &found), WEFT_OK);
  assert_int_equal(found, a);
  assert_int_equal(weft_phase_systems(w, FIXED, NULL, 0), 1);
  weft_world_destroy(w);
}

/* Descriptors that name things that cannot apply were accepted and then
 * silently did nothing (an access for a missing term, a `changed`
 * component the query never visits) or worse (another world's run
 * condition, evaluated after that world freed it). */
static void test_system_register_rejects_misuse(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_world_t *other = wt_world_new(NULL);
  weft_component_t x = comp(w, "X"), y = comp(w, "Y"), z = comp(w, "Z");

  /* An access for a term the query does not have, valid value or not. */
  assert_int_equal(SYS_RC(w, .name = "acc.extra", .query.include = {x},
                          .term_access = {WEFT_ACCESS_READ, WEFT_ACCESS_READ},
                          .run = rec_run),
                   WEFT_EINVAL);
  assert_error_mentions(w, "term_access[1]");
  assert_int_equal(SYS_RC(w, .name = "acc.range", .query.include = {x},
                          .term_access = {[5] = 200}, .run = rec_run),
                   WEFT_EINVAL);
  assert_error_mentions(w, "term_access[5]");
  assert_int_equal(SYS_RC(w, .name = "acc.task",
                          .term_access = {WEFT_ACCESS_WRITE}, .run = rec_run),
                   WEFT_EINVAL);
  assert_error_mentions(w, "acc.task");

  /* `changed` outside the query's terms, or on a task. */
  assert_int_equal(SYS_RC(w, .name = "chg.out", .query.include = {x},
                          .changed = {y}, .run = rec_run),
                   WEFT_EINVAL);
  assert_error_mentions(w, "changed[0]");
  assert_int_equal(
      SYS_RC(w, .name = "chg.task", .changed = {x}, .run = rec_run),
      WEFT_EINVAL);
  assert_error_mentions(w, "chg.task");

  /* Another world's run condition. */
  weft_runif_t *foreign = NULL, *mine = NULL;
  assert_int_equal(weft_runif_every(other, 0.5, &foreign), WEFT_OK);
  assert_int_equal(weft_runif_every(w, 0.5, &mine), WEFT_OK);
  assert_int_equal(
      SYS_RC(w, .name = "cond.foreign", .run_if = foreign, .run = rec_run),
      WEFT_EINVAL);
  assert_error_mentions(w, "another world");

  const char *names[] = {"acc.extra", "acc.range", "acc.task",
                         "chg.out",   "chg.task",  "cond.foreign"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    weft_system_t id = 0;
    assert_int_equal(weft_system_lookup(w, names[i], &id), WEFT_ENONAME);
  }
  /* What is meant goes in: accesses for the terms there are, `changed`
   * on include, any and disabled terms, this world's condition. */
  (void)SYS(w, .name = "ok.acc", .query.include = {x, y},
            .term_access = {WEFT_ACCESS_READ, WEFT_ACCESS_NONE});
  (void)SYS(w, .name = "ok.chg", .query.include = {x}, .query.any = {y},
            .query.disabled = {z}, .changed = {x, y, z});
  (void)SYS(w, .name = "ok.cond", .run_if = mine);
  weft_world_destroy(other); /* w no longer refers to it */
  assert_int_equal(weft_world_progress(w, DT), WEFT_OK);
  weft_world_destroy(w);
}

/* Every allocation of the scheduler's creation fails in turn: the call
 * says WEFT_ENOMEM, the world works afterwards, and what was allocated
 * before the failure (the phase names among it) is freed (ASan's leak
 * checker sees the rest). */
static void test_system_scheduler_creation_out_of_memory(void **state) {
  (void)state;
  bool succeeded = false;
  for (uint64_t k = 1; !succeeded; k++) {
    assert_true(k < 200);
    weft_world_t *w = wt_world_new(NULL);
    w->alloc.fail_in = k;
    int rc = weft_schedule_build(w);
    bool failed_here = w->alloc.fail_in == 0;
    w->alloc.fail_in = 0;
    if (rc == WEFT_OK) {
      succeeded = true; /* every allocation was past k */
    } else {
      assert_true(failed_here);
      assert_int_equal(rc, WEFT_ENOMEM);
      assert_error_mentions(w, "out of memory");
      /* Nothing half-made stays behind: the next call creates it whole. */
      assert_int_equal(weft_phase_systems(w, FIXED, NULL, 0), 0);
      weft_phase_t p = 0;
      assert_int_equal(weft_phase_lookup(w, "PreRender", &p), WEFT_OK);
      (void)SYS(w, .name = "after");
      assert_int_equal(weft_world_progress(w, DT), WEFT_OK);
      assert_int_equal(weft_phase_systems(w, FIXED, NULL, 0), 1);
    }
    weft_world_destroy(w);
  }
}

/* The scheduler takes one command buffer id per worker slot. With every id
 * taken, creating it names that limit, not memory. */
static void test_system_scheduler_names_cmdbuf_limit(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_cmdbuf_t **bufs = calloc(WEFT_CMDBUF_MAX + 1, sizeof *bufs);
  assert_non_null(bufs);
  uint32_t n = 0;
  int rc;
  while ((rc = weft_cmdbuf_create(w, &bufs[n])) == WEFT_OK)
    n++;
  assert_int_equal(rc, WEFT_ELIMIT);
  assert_int_equal(n, WEFT_CMDBUF_MAX);
  assert_int_equal(weft_schedule_build(w), WEFT_ELIMIT);
  assert_error_mentions(w, "WEFT_CMDBUF_MAX");
  assert_error_mentions(w, "scheduler");
  assert_int_equal(SYS_RC(w, .name = "A", .run = rec_run), WEFT_ELIMIT);
  assert_int_equal(weft_world_progress(w, DT), WEFT_ELIMIT);
  /* One id free is enough without a pool (one slot). */
  weft_cmdbuf_destroy(bufs[--n]);
  assert_int_equal(weft_schedule_build(w), WEFT_OK);
  rec_t r = {0};
  weft_system_t a = SYS(w, .name = "A", .user = &r);
  assert_int_equal(weft_world_progress(w, DT), WEFT_OK);
  weft_system_t ran[] = {a};
  assert_log(&r, ran, 1);
  while (n)
    weft_cmdbuf_destroy(bufs[--n]);
  free(bufs);
  weft_world_destroy(w);
}

static void test_system_lookup_remove_and_ids(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_system_t a = SYS(w, .name = "A");
  weft_system_t b = SYS(w, .name = "B", .phase = WEFT_PHASE_PRE_UPDATE);
  assert_int_not_equal(a, b);
  weft_system_t id = 0;
  assert_int_equal(weft_system_lookup(w, "B", &id), WEFT_OK);
  assert_int_equal(id, b);
  assert_int_equal(weft_system_lookup(w, "nope", &id), WEFT_ENONAME);

  weft_system_info_t in = info_of(w, a);
  assert_string_equal(in.name, "A");
  assert_int_equal(in.phase, FIXED); /* 0 means FixedUpdate */
  assert_true(in.enabled);
  assert_false(in.exclusive);
  assert_int_equal(info_of(w, b).phase, WEFT_PHASE_PRE_UPDATE);

  assert_int_equal(weft_system_remove(w, a), WEFT_OK);
  assert_int_equal(weft_system_lookup(w, "A", &id), WEFT_ENONAME);
  assert_int_equal(weft_system_remove(w, a), WEFT_ENONAME);
  assert_int_equal(weft_system_enable(w, a, true), WEFT_ENONAME);
  assert_int_equal(weft_system_info(w, a, &in), WEFT_ENONAME);
  assert_int_equal(weft_system_remove(w, 0), WEFT_ENONAME);
  assert_int_equal(weft_system_remove(w, 12345), WEFT_ENONAME);
  assert_int_equal(weft_phase_systems(w, FIXED, NULL, 0), 0);

  /* The name is free again, the id is not reused. */
  weft_system_t a2 = SYS(w, .name = "A");
  assert_int_not_equal(a2, a);
  assert_int_not_equal(a2, b);
  assert_int_equal(weft_system_lookup(w, "A", &id), WEFT_OK);
  assert_int_equal(id, a2);
  weft_system_t c = SYS(w, .name = "C");
  assert_true(c != a && c != b && c != a2);
  weft_system_t want[] = {a2, c};
  assert_order(w, FIXED, want, 2);
  weft_world_destroy(w);
}

static void test_system_enable_disable_keeps_place_and_edges(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_component_t x = comp(w, "X");
  rec_t r = {0};
  weft_system_t a = SYS(w, .name = "A", .write = {x}, .user = &r);
  weft_system_t b = SYS(w, .name = "B", .write = {x}, .user = &r,
                        .flags = WEFT_SYSTEM_DISABLED);
  weft_system_t c = SYS(w, .name = "C", .write = {x}, .user = &r);
  assert_false(info_of(w, b).enabled);
  assert_true(weft_system_edge(w, a, b));
  assert_true(weft_system_edge(w, b, c));
  uint64_t b0 = builds(w);

  assert_int_equal(weft_world_run_phase(w, FIXED, DT), WEFT_OK);
  weft_system_t ran1[] = {a, c};
  assert_log(&r, ran1, 2);

  r.n = 0;
  assert_int_equal(weft_system_enable(w, b, true), WEFT_OK);
  assert_true(info_of(w, b).enabled);
  assert_int_equal(weft_world_run_phase(w, FIXED, DT), WEFT_OK);
  weft_system_t ran2[] = {a, b, c};
  assert_log(&r, ran2, 3);

  r.n = 0;
  assert_int_equal(weft_system_enable(w, a, false), WEFT_OK);
  assert_false(info_of(w, a).enabled);
  assert_int_equal(weft_world_run_phase(w, FIXED, DT), WEFT_OK);
  weft_system_t ran3[] = {b, c};
  assert_log(&r, ran3, 2);
  assert_true(weft_system_edge(w, a, b));
  weft_system_t order[] = {a, b, c};
  assert_order(w, FIXED, order, 3);
  assert_int_equal(builds(w), b0); /* enabling is not a schedule change */
  weft_world_destroy(w);
}

/* --- conflicts ----------------------------------------------------------- */

static void test_system_write_write_edge_follows_registration(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_component_t x = comp(w, "X");
  weft_system_t a = SYS(w, .name = "A", .query.include = {x},
                        .term_access = {WEFT_ACCESS_WRITE});
  weft_system_t b = SYS(w, .name = "B", .query.include = {x});
  weft_system_t c = SYS(w, .name = "C", .write = {x});
  assert_true(weft_system_edge(w, a, b));
  assert_false(weft_system_edge(w, b, a));
  assert_true(weft_system_edge(w, b, c));
  assert_false(weft_system_edge(w, c, b));
  assert_true(weft_system_edge(w, a, c));
  assert_false(weft_system_edge(w, a, a));
  weft_system_t want[] = {a, b, c};
  assert_order(w, FIXED, want, 3);
  weft_world_destroy(w);
}

static void test_system_read_write_edge_and_read_read_none(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_component_t x = comp(w, "X");
  weft_component_t y = comp(w, "Y");
  /* Writer registered last: the reader goes first. */
  weft_system_t r1 = SYS(w, .name = "R1", .query.include = {x},
                         .term_access = {WEFT_ACCESS_READ});
  weft_system_t r2 = SYS(w, .name = "R2", .read = {x});
  weft_system_t wx = SYS(w, .name = "W", .query.include = {x, y},
                         .term_access = {WEFT_ACCESS_WRITE, WEFT_ACCESS_READ});
  weft_system_t ry = SYS(w, .name = "RY", .query.include = {y},
                         .term_access = {WEFT_ACCESS_READ});
  weft_system_t fy = SYS(w, .name = "FY", .query.include = {y, x},
                         .term_access = {WEFT_ACCESS_NONE, WEFT_ACCESS_READ});
  assert_true(weft_system_edge(w, r1, wx));
  assert_true(weft_system_edge(w, r2, wx));
  assert_false(weft_system_edge(w, wx, r1));
  assert_false(weft_system_edge(w, r1, r2)); /* read/read */
  assert_false(weft_system_edge(w, r2, r1));
  assert_false(weft_system_edge(w, wx, ry)); /* both only read Y */
  assert_false(weft_system_edge(w, ry, wx));
  assert_true(weft_system_edge(w, wx, fy)); /* W writes X, FY reads X */
  assert_false(weft_system_edge(w, ry, fy));
  assert_false(weft_system_edge(w, fy, ry));
  weft_world_destroy(w);
}

static void test_system_disjoint_queries_do_not_conflict(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_component_t x = comp(w, "X");
  weft_component_t p = comp(w, "P");
  weft_component_t q = comp(w, "Q");
  weft_component_t rr = comp(w, "R");
  /* A: entities with X; B: entities without X. Both write P. */
  weft_system_t a = SYS(w, .name = "A", .query.include = {x, p});
  weft_system_t b =
      SYS(w, .name = "B", .query.include = {p}, .query.exclude = {x});
  /* C overlaps with both (no exclusion): it is ordered with both. */
  weft_system_t c = SYS(w, .name = "C", .query.include = {p});
  /* D excludes X and writes P through its extra list: no exemption. */
  weft_system_t d = SYS(w, .name = "D", .query.include = {q},
                        .query.exclude = {x}, .write = {p});
  /* E excludes X and reads P through its extra list: no exemption. */
  weft_system_t e = SYS(w, .name = "E", .query.include = {rr},
                        .query.exclude = {x}, .read = {p});
  assert_false(weft_system_edge(w, a, b));
  assert_false(weft_system_edge(w, b, a));
  assert_true(weft_system_edge(w, a, c));
  assert_true(weft_system_edge(w, b, c));
  assert_true(weft_system_edge(w, a, d));
  assert_true(weft_system_edge(w, a, e));
  assert_true(weft_system_edge(w, d, e)); /* D writes P, E reads it */
  weft_world_destroy(w);
}

/* A filter term (WEFT_ACCESS_NONE) only asks whether a component is there;
 * writing its data, even through an extra list, does not conflict. */
static void test_system_filter_term_does_not_conflict(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_component_t x = comp(w, "X");
  weft_component_t y = comp(w, "Y");
  weft_system_t f = SYS(w, .name = "F", .query.include = {x, y},
                        .term_access = {WEFT_ACCESS_NONE, WEFT_ACCESS_READ});
  weft_system_t wq = SYS(w, .name = "WQ", .query.include = {x},
                         .term_access = {WEFT_ACCESS_WRITE});
  weft_system_t wl = SYS(w, .name = "WL", .write = {x});
  weft_system_t wy = SYS(w, .name = "WY", .write = {y});
  assert_false(weft_system_edge(w, f, wq));
  assert_false(weft_system_edge(w, f, wl));
  assert_true(weft_system_edge(w, f, wy));
  assert_true(weft_system_edge(w, wq, wl));
  weft_world_destroy(w);
}

static void test_system_resources_conflict(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_resource_t r1 = 0, r2 = 0;
  assert_int_equal(weft_resource_register(w, "R1", 8, 0, NULL, &r1), 0);
  assert_int_equal(weft_resource_register(w, "R2", 8, 0, NULL, &r2), 0);
  weft_system_t a = SYS(w, .name = "A", .res_read = {r1});
  weft_system_t b = SYS(w, .name = "B", .res_read = {r1});
  weft_system_t c = SYS(w, .name = "C", .res_write = {r1});
  weft_system_t d = SYS(w, .name = "D", .res_write = {r1});
  weft_system_t e = SYS(w, .name = "E", .res_write = {r2});
  assert_false(weft_system_edge(w, a, b)); /* read/read */
  assert_false(weft_system_edge(w, b, a));
  assert_true(weft_system_edge(w, a, c)); /* read/write */
  assert_true(weft_system_edge(w, b, c));
  assert_true(weft_system_edge(w, c, d)); /* write/write */
  assert_false(weft_system_edge(w, d, c));
  for (weft_system_t s = a; s <= d; s++) {
    assert_false(weft_system_edge(w, s, e));
    assert_false(weft_system_edge(w, e, s));
  }
  weft_world_destroy(w);
}

static void test_system_channels_order_emitter_before_receiver(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_channel_t ch = 0, other = 0;
  assert_int_equal(weft_channel_register(w, "hits", 4, &ch), 0);
  assert_int_equal(weft_channel_register(w, "misses", 4, &other), 0);
  weft_system_t e = SYS(w, .name = "E", .emit = {ch});
  weft_system_t r = SYS(w, .name = "R", .receive = {ch});
  weft_system_t r2 = SYS(w, .name = "R2", .receive = {ch});
  weft_system_t o = SYS(w, .name = "O", .receive = {other});
  assert_true(weft_system_edge(w, e, r));
  assert_false(weft_system_edge(w, r, e));
  assert_true(weft_system_edge(w, e, r2));
  assert_false(weft_system_edge(w, r, r2)); /* both only receive */
  assert_false(weft_system_edge(w, e, o));
  assert_false(weft_system_edge(w, o, e));
  weft_world_destroy(w);
}

static void test_system_exclusive_conflicts_with_everything(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_component_t x = comp(w, "X");
  weft_system_t a = SYS(w, .name = "A");
  weft_system_t b = SYS(w, .name = "B", .query.include = {x},
                        .term_access = {WEFT_ACCESS_READ});
  weft_system_t xs = SYS(w, .name = "X", .flags = WEFT_SYSTEM_EXCLUSIVE);
  weft_system_t c = SYS(w, .name = "C");
  assert_true(info_of(w, xs).exclusive);
  assert_false(weft_system_edge(w, a, b));
  assert_false(weft_system_edge(w, a, c));
  assert_false(weft_system_edge(w, b, c));
  assert_true(weft_system_edge(w, a, xs));
  assert_true(weft_system_edge(w, b, xs));
  assert_true(weft_system_edge(w, xs, c));
  assert_false(weft_system_edge(w, c, xs));
  weft_world_destroy(w);
}

/* --- explicit edges ------------------------------------------------------ */

static void test_system_explicit_before_after_edges(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_system_t a = SYS(w, .name = "A", .before = {"B"});
  weft_system_t b = SYS(w, .name = "B");
  weft_system_t c = SYS(w, .name = "C", .after = {"A"});
  /* D names a system registered after it. */
  weft_system_t d = SYS(w, .name = "D", .after = {"E"});
  weft_system_t e = SYS(w, .name = "E");
  assert_true(weft_system_edge(w, a, b));
  assert_false(weft_system_edge(w, b, a));
  assert_true(weft_system_edge(w, a, c));
  assert_false(weft_system_edge(w, c, a));
  assert_false(weft_system_edge(w, b, c));
  assert_false(weft_system_edge(w, c, b));
  assert_true(weft_system_edge(w, e, d));
  assert_false(weft_system_edge(w, d, e));
  /* Ready first: A, B, C; D waits for E. */
  weft_system_t want[] = {a, b, c, e, d};
  assert_order(w, FIXED, want, 5);
  weft_world_destroy(w);
}

static void test_system_explicit_before_reverses_conflict(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_component_t x = comp(w, "X");
  weft_system_t a = SYS(w, .name = "A", .write = {x});
  weft_system_t b = SYS(w, .name = "B", .write = {x}, .before = {"A"});
  assert_int_equal(weft_schedule_build(w), WEFT_OK);
  assert_true(weft_system_edge(w, b, a));
  assert_false(weft_system_edge(w, a, b));
  weft_system_t want[] = {b, a};
  assert_order(w, FIXED, want, 2);

  /* Bare registration order would close a cycle here (A -> B -> C from
   * the conflicts, C -> A explicit): conflicts follow the explicit
   * order instead, and only user-written cycles fail. */
  weft_world_t *v = wt_world_new(NULL);
  weft_component_t p = comp(v, "P");
  weft_component_t q = comp(v, "Q");
  weft_system_t va = SYS(v, .name = "A", .write = {p});
  weft_system_t vb = SYS(v, .name = "B", .write = {p, q});
  weft_system_t vc = SYS(v, .name = "C", .write = {q}, .before = {"A"});
  assert_int_equal(weft_schedule_build(v), WEFT_OK);
  assert_true(weft_system_edge(v, vc, va));
  assert_true(weft_system_edge(v, vb, va));
  assert_true(weft_system_edge(v, vb, vc));
  assert_false(weft_system_edge(v, va, vb));
  weft_system_t vwant[] = {vb, vc, va};
  assert_order(v, FIXED, vwant, 3);
  weft_world_destroy(v);
  weft_world_destroy(w);
}

static void test_system_explicit_unknown_self_and_foreign_names(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_system_t p = SYS(w, .name = "P", .phase = WEFT_PHASE_PRE_UPDATE,
                        .before = {"A"}, .after = {"B"});
  /* Of all these names only "B" in A's after list is a system of A's
   * phase other than A itself. */
  weft_system_t a = SYS(w, .name = "A", .before = {"nope", "A", "P"},
                        .after = {"A", "ghost", "B", "P"});
  weft_system_t b =
      SYS(w, .name = "B", .after = {"P", "B"}, .before = {"Q", "ghost"});
  weft_system_t c = SYS(w, .name = "C", .after = {"A"});
  assert_int_equal(weft_schedule_build(w), WEFT_OK);
  assert_true(weft_system_edge(w, b, a));
  assert_true(weft_system_edge(w, a, c));
  assert_false(weft_system_edge(w, a, a));
  assert_false(weft_system_edge(w, b, b));
  assert_false(weft_system_edge(w, p, a));
  assert_false(weft_system_edge(w, a, p));
  assert_false(weft_system_edge(w, b, p));
  assert_false(weft_system_edge(w, p, b));
  weft_system_t fixed[] = {b, a, c};
  assert_order(w, FIXED, fixed, 3);
  weft_system_t pre[] = {p};
  assert_order(w, WEFT_PHASE_PRE_UPDATE, pre, 1);

  /* A cycle through another phase is no cycle. */
  weft_world_t *v = wt_world_new(NULL);
  weft_system_t x = SYS(v, .name = "X", .before = {"Y"});
  weft_system_t y =
      SYS(v, .name = "Y", .phase = WEFT_PHASE_PRE_RENDER, .before = {"X"});
  assert_int_equal(weft_schedule_build(v), WEFT_OK);
  assert_false(weft_system_edge(v, x, y));
  assert_false(weft_system_edge(v, y, x));
  weft_world_destroy(v);
  weft_world_destroy(w);
}

/* --- cycles -------------------------------------------------------------- */

static void test_system_cycle_fails_build_and_names_it(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  rec_t r = {0};
  weft_system_t echo =
      SYS(w, .name = "echo", .phase = WEFT_PHASE_PRE_UPDATE, .user = &r);
  /* delta hangs off the cycle without being on it. */
  weft_system_t delta =
      SYS(w, .name = "delta", .after = {"charlie"}, .user = &r);
  weft_system_t alpha =
      SYS(w, .name = "alpha", .before = {"bravo"}, .user = &r);
  weft_system_t bravo =
      SYS(w, .name = "bravo", .before = {"charlie"}, .user = &r);
  weft_system_t charlie =
      SYS(w, .name = "charlie", .before = {"alpha"}, .user = &r);

  assert_int_equal(weft_schedule_build(w), WEFT_ECYCLE);
  const char *msg = weft_world_last_error(w);
  assert_non_null(msg);
  assert_non_null(strstr(msg, "FixedUpdate"));
  assert_non_null(strstr(msg, "alpha"));
  assert_non_null(strstr(msg, "bravo"));
  assert_non_null(strstr(msg, "charlie"));
  assert_null(strstr(msg, "delta"));
  assert_null(strstr(msg, "echo"));

  weft_system_info_t in;
  assert_int_equal(weft_system_info(w, alpha, &in), WEFT_ECYCLE);
  assert_int_equal(weft_system_info(w, echo, &in), WEFT_ECYCLE);
  assert_int_equal(weft_phase_systems(w, FIXED, NULL, 0), 0);
  assert_int_equal(weft_phase_systems(w, WEFT_PHASE_PRE_UPDATE, NULL, 0), 0);
  assert_false(weft_system_edge(w, alpha, bravo));
  assert_int_equal(weft_world_progress(w, DT), WEFT_ECYCLE);
  assert_int_equal(weft_world_run_phase(w, WEFT_PHASE_PRE_UPDATE, DT),
                   WEFT_ECYCLE);
  assert_int_equal(r.n, 0); /* nothing ran, not even another phase */

  /* Disabling a system on the cycle does not repair it, and the failed
   * build is not retried per call or per frame. */
  uint64_t b0 = builds(w);
  assert_int_equal(weft_system_enable(w, charlie, false), WEFT_OK);
  assert_int_equal(weft_schedule_build(w), WEFT_ECYCLE);
  assert_int_equal(weft_world_progress(w, DT), WEFT_ECYCLE);
  assert_int_equal(r.n, 0);
  assert_int_equal(weft_system_enable(w, charlie, true), WEFT_OK);
  assert_int_equal(weft_schedule_build(w), WEFT_ECYCLE);
  assert_int_equal(builds(w), b0);

  /* Removing one does. */
  assert_int_equal(weft_system_remove(w, charlie), WEFT_OK);
  assert_int_equal(weft_schedule_build(w), WEFT_OK);
  assert_int_equal(builds(w), b0 + 1);
  assert_true(weft_system_edge(w, alpha, bravo));
  weft_system_t want[] = {delta, alpha, bravo};
  assert_order(w, FIXED, want, 3);
  weft_pipeline_config_t cfg = {.net_dt = -1};
  assert_int_equal(weft_pipeline_configure(w, &cfg), WEFT_OK);
  assert_int_equal(weft_world_progress(w, DT), WEFT_OK);
  weft_system_t ran[] = {echo, delta, alpha, bravo};
  assert_log(&r, ran, 4);
  weft_world_destroy(w);
}

/* --- dependency order ---------------------------------------------------- */

static void test_system_order_prefers_earliest_registered(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_system_t s[6];
  char name[8];
  for (uint32_t i = 0; i < 6; i++) {
    snprintf(name, sizeof name, "s%u", i);
    s[i] = SYS(w, .name = name);
  }
  weft_system_t plain[] = {s[0], s[1], s[2], s[3], s[4], s[5]};
  assert_order(w, FIXED, plain, 6);
  assert_int_equal(weft_phase_systems(w, FIXED, NULL, 0), 6);
  weft_system_t two[2] = {0, 0};
  assert_int_equal(weft_phase_systems(w, FIXED, two, 2), 6);
  assert_int_equal(two[0], s[0]);
  assert_int_equal(two[1], s[1]);

  /* D before A: B and C are ready before D, and earlier registered. */
  weft_world_t *v = wt_world_new(NULL);
  weft_system_t a = SYS(v, .name = "A");
  weft_system_t b = SYS(v, .name = "B");
  weft_system_t c = SYS(v, .name = "C");
  weft_system_t d = SYS(v, .name = "D", .before = {"A"});
  weft_system_t want[] = {b, c, d, a};
  assert_order(v, FIXED, want, 4);
  weft_world_destroy(v);
  weft_world_destroy(w);
}

static void test_system_order_small_dag_matches_hand_oracle(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_component_t p = comp(w, "P");
  weft_component_t v = comp(w, "V");
  weft_component_t h = comp(w, "H");
  enum { PLACE, PHYSICS, UI, HEALTH, RENDER, LOG, N };
  weft_system_t s[N];
  s[PLACE] = SYS(w, .name = "place", .query.include = {p},
                 .term_access = {WEFT_ACCESS_WRITE});
  s[PHYSICS] = SYS(w, .name = "physics", .query.include = {p, v},
                   .term_access = {WEFT_ACCESS_READ, WEFT_ACCESS_WRITE});
  s[UI] = SYS(w, .name = "ui", .before = {"physics"});
  s[HEALTH] = SYS(w, .name = "health", .query.include = {h});
  s[RENDER] =
      SYS(w, .name = "render", .query.include = {p, v, h},
          .term_access = {WEFT_ACCESS_READ, WEFT_ACCESS_READ, WEFT_ACCESS_READ},
          .after = {"ui"});
  s[LOG] = SYS(w, .name = "log");
  /* Conflicts: place-physics (P), place-render (P), physics-render (V),
   * health-render (H). Explicit: ui -> physics, ui -> render. */
  bool edge[N][N] = {{false}};
  edge[PLACE][PHYSICS] = edge[PLACE][RENDER] = true;
  edge[PHYSICS][RENDER] = edge[HEALTH][RENDER] = true;
  edge[UI][PHYSICS] = edge[UI][RENDER] = true;
  for (uint32_t i = 0; i < N; i++)
    for (uint32_t j = 0; j < N; j++) {
      if (weft_system_edge(w, s[i], s[j]) != edge[i][j])
        print_message("edge %u -> %u\n", i, j);
      assert_true(weft_system_edge(w, s[i], s[j]) == edge[i][j]);
    }
  /* Kahn, earliest registered among the ready: place; physics waits for
   * ui; ui; physics; health; render; log. */
  weft_system_t want[] = {s[PLACE],  s[UI],     s[PHYSICS],
                          s[HEALTH], s[RENDER], s[LOG]};
  assert_order(w, FIXED, want, N);
  for (uint32_t i = 0; i < N; i++)
    assert_int_equal(seg_of(w, s[i]), 0);

  weft_world_destroy(w);

  /* The same graph with tasks only, run (no pool: inline, in order). */
  rec_t r = {0};
  w = wt_world_new(NULL);
  p = comp(w, "P");
  v = comp(w, "V");
  h = comp(w, "H");
  s[PLACE] = SYS(w, .name = "place", .write = {p}, .user = &r);
  s[PHYSICS] = SYS(w, .name = "physics", .read = {p}, .write = {v}, .user = &r);
  s[UI] = SYS(w, .name = "ui", .before = {"physics"}, .user = &r);
  s[HEALTH] = SYS(w, .name = "health", .write = {h}, .user = &r);
  s[RENDER] =
      SYS(w, .name = "render", .read = {p, v, h}, .after = {"ui"}, .user = &r);
  s[LOG] = SYS(w, .name = "log", .user = &r);
  weft_system_t want2[] = {s[PLACE],  s[UI],     s[PHYSICS],
                           s[HEALTH], s[RENDER], s[LOG]};
  assert_order(w, FIXED, want2, N);
  assert_int_equal(weft_world_run_phase(w, FIXED, DT), WEFT_OK);
  assert_log(&r, want2, N);
  weft_world_destroy(w);
}

/* The randomized check: systems with random access over 8 components and
 * random explicit edges consistent with a hidden permutation. */
#define RND_N 30u
#define RND_C 8u

typedef struct rnd_sys_t {
  uint32_t inc, exc, rd, wr, xr, xw; /* bit k: component k */
  bool query;
  bool before[RND_N], after[RND_N]; /* names listed */
  uint32_t nbefore, nafter;
} rnd_sys_t;

/* The conflict rule of schedule.h, recomputed from the sets. */
static bool rnd_conflict(const rnd_sys_t *a, const rnd_sys_t *b) {
  uint32_t ar = a->rd | a->xr, aw = a->wr | a->xw;
  uint32_t br = b->rd | b->xr, bw = b->wr | b->xw;
  if ((a->xw & (br | bw)) || (b->xw & (ar | aw)) || (aw & b->xr) ||
      (bw & a->xr))
    return true; /* extra lists: no disjointness exemption */
  bool rw = (aw & br) || (aw & bw) || (bw & ar);
  bool disjoint =
      a->query && b->query && ((a->inc & b->exc) || (b->inc & a->exc));
  return rw && !disjoint;
}

/* Kahn over m, earliest index first; returns how many it placed. */
static uint32_t rnd_kahn(bool m[RND_N][RND_N], uint32_t *out) {
  uint32_t indeg[RND_N] = {0};
  bool done[RND_N] = {false};
  for (uint32_t i = 0; i < RND_N; i++)
    for (uint32_t j = 0; j < RND_N; j++)
      indeg[j] += m[i][j];
  uint32_t placed = 0;
  for (;;) {
    uint32_t pick = RND_N;
    for (uint32_t j = 0; j < RND_N && pick == RND_N; j++)
      if (!done[j] && indeg[j] == 0)
        pick = j;
    if (pick == RND_N)
      return placed;
    done[pick] = true;
    out[placed++] = pick;
    for (uint32_t j = 0; j < RND_N; j++)
      if (m[pick][j])
        indeg[j]--;
  }
}

static void rnd_round(uint64_t seed) {
  wt_rng_t rng = wt_rng(seed);
  weft_world_t *w = wt_world_new(NULL);
  weft_component_t c[RND_C];
  char name[16];
  for (uint32_t k = 0; k < RND_C; k++) {
    snprintf(name, sizeof name, "C%u", k);
    c[k] = comp(w, name);
  }
  rnd_sys_t sy[RND_N];
  memset(sy, 0, sizeof sy);
  for (uint32_t i = 0; i < RND_N; i++) {
    rnd_sys_t *s = &sy[i];
    for (uint32_t k = 0; k < RND_C; k++) {
      uint32_t bit = 1u << k;
      switch (wt_chance(&rng, 1, 2) ? 0 : 1 + wt_below(&rng, 7)) {
      case 1: /* include, read */
        s->inc |= bit, s->rd |= bit;
        break;
      case 2: /* include, write */
        s->inc |= bit, s->wr |= bit;
        break;
      case 3: /* include, default */
        s->inc |= bit, s->rd |= bit, s->wr |= bit;
        break;
      case 4: /* include, filter */
        s->inc |= bit;
        break;
      case 5:
        s->exc |= bit;
        break;
      case 6:
        s->xr |= bit;
        break;
      case 7:
        s->xw |= bit;
        break;
      default:
        break;
      }
    }
    if (!s->inc)
      s->exc = 0; /* a query needs an include term */
    s->query = s->inc != 0;
  }
  /* Explicit edges along a hidden permutation, plus names that add
   * nothing (self references, unknown names). */
  uint32_t perm[RND_N], rank[RND_N];
  for (uint32_t i = 0; i < RND_N; i++)
    perm[i] = i;
  for (uint32_t i = RND_N - 1; i > 0; i--) {
    uint32_t j = wt_below(&rng, i + 1), t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
  for (uint32_t i = 0; i < RND_N; i++)
    rank[perm[i]] = i;
  bool ex[RND_N][RND_N];
  memset(ex, 0, sizeof ex);
  for (uint32_t e = 0; e < 40; e++) {
    uint32_t i = wt_below(&rng, RND_N), j = wt_below(&rng, RND_N);
    if (i == j)
      continue;
    if (rank[i] > rank[j]) {
      uint32_t t = i;
      i = j;
      j = t;
    }
    if (wt_chance(&rng, 1, 2) && sy[i].nbefore < WEFT_SYSTEM_MAX_ORDER - 1 &&
        !sy[i].before[j]) {
      sy[i].before[j] = true;
      sy[i].nbefore++;
      ex[i][j] = true;
    } else if (sy[j].nafter < WEFT_SYSTEM_MAX_ORDER - 1 && !sy[j].after[i]) {
      sy[j].after[i] = true;
      sy[j].nafter++;
      ex[i][j] = true;
    }
  }
  char names[RND_N][8];
  for (uint32_t i = 0; i < RND_N; i++)
    snprintf(names[i], sizeof names[i], "s%02u", i);
  weft_system_t id[RND_N];
  for (uint32_t i = 0; i < RND_N; i++) {
    const rnd_sys_t *s = &sy[i];
    weft_system_desc_t d;
    memset(&d, 0, sizeof d);
    d.name = names[i];
    d.run = rec_run;
    uint32_t ni = 0, ne = 0, nr = 0, nw = 0, nb = 0, na = 0;
    for (uint32_t k = 0; k < RND_C; k++) {
      uint32_t bit = 1u << k;
      if (s->inc & bit) {
        d.term_access[ni] = (s->rd & bit) && (s->wr & bit) ? WEFT_ACCESS_DEFAULT
                            : (s->rd & bit)                ? WEFT_ACCESS_READ
                            : (s->wr & bit)                ? WEFT_ACCESS_WRITE
                                                           : WEFT_ACCESS_NONE;
        d.query.include[ni++] = c[k];
      }
      if (s->exc & bit)
        d.query.exclude[ne++] = c[k];
      if (s->xr & bit)
        d.read[nr++] = c[k];
      if (s->xw & bit)
        d.write[nw++] = c[k];
    }
    for (uint32_t j = 0; j < RND_N; j++) {
      if (s->before[j])
        d.before[nb++] = names[j];
      if (s->after[j])
        d.after[na++] = names[j];
    }
    /* One name that adds nothing, in one of the lists. */
    if (wt_chance(&rng, 1, 2))
      d.before[nb++] = wt_chance(&rng, 1, 2) ? names[i] : "nobody";
    else
      d.after[na++] = wt_chance(&rng, 1, 2) ? names[i] : "nobody";
    id[i] = reg(w, d);
  }

  /* The oracle: conflicts follow the explicit graph's order (earliest
   * registered among the ready), then the whole graph is ordered so. */
  uint32_t xorder[RND_N], pos[RND_N], want[RND_N];
  assert_int_equal(rnd_kahn(ex, xorder), RND_N);
  for (uint32_t t = 0; t < RND_N; t++)
    pos[xorder[t]] = t;
  bool full[RND_N][RND_N], conf[RND_N][RND_N];
  memcpy(full, ex, sizeof full);
  for (uint32_t i = 0; i < RND_N; i++)
    for (uint32_t j = 0; j < RND_N; j++) {
      conf[i][j] = i != j && rnd_conflict(&sy[i], &sy[j]);
      assert_true(conf[i][j] == (i != j && rnd_conflict(&sy[j], &sy[i])));
      if (conf[i][j] && pos[i] < pos[j])
        full[i][j] = true;
    }
  assert_int_equal(rnd_kahn(full, want), RND_N);

  assert_int_equal(weft_schedule_build(w), WEFT_OK);
  weft_system_t got[RND_N];
  assert_int_equal(weft_phase_systems(w, FIXED, got, RND_N), RND_N);
  uint32_t at[RND_N]; /* position of system i in the produced order */
  for (uint32_t t = 0; t < RND_N; t++) {
    assert_int_equal(got[t], id[want[t]]);
    at[want[t]] = t;
    weft_system_info_t in = info_of(w, got[t]);
    assert_int_equal(in.order, t);
    assert_int_equal(in.segment, 0); /* no commands, no syncs */
  }
  for (uint32_t i = 0; i < RND_N; i++)
    for (uint32_t j = 0; j < RND_N; j++) {
      bool e = weft_system_edge(w, id[i], id[j]);
      if (e != full[i][j])
        print_message("seed %llu: edge s%02u -> s%02u is %d\n",
                      (unsigned long long)seed, i, j, (int)e);
      assert_true(e == full[i][j]);
      if (ex[i][j]) /* every explicit edge is kept */
        assert_true(e && at[i] < at[j]);
      if (conf[i][j]) /* one direction, the one the order has */
        assert_true(e != weft_system_edge(w, id[j], id[i]) &&
                    e == (at[i] < at[j]));
      if (!conf[i][j] && !ex[i][j] && !ex[j][i])
        assert_false(e);
    }
  weft_world_destroy(w);
}

static void test_system_order_random_graphs_match_oracle(void **state) {
  (void)state;
  for (uint64_t seed = 1; seed <= 40; seed++)
    rnd_round(seed * 0x51ed2701u);
}

/* --- sync segments ------------------------------------------------------- */

static void test_system_segment_after_cmd_write_dependency(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_component_t x = comp(w, "X");
  weft_component_t y = comp(w, "Y");
  weft_component_t z = comp(w, "Z");
  weft_component_t all[] = {x, y, z, 0};
  (void)wt_spawn_with(w, all, NULL);
  rec_t r = {0};
  /* A may add X through commands and reads Y. */
  weft_system_t a =
      SYS(w, .name = "A", .query.include = {y},
          .term_access = {WEFT_ACCESS_READ}, .cmd_write = {x}, .user = &r);
  /* B reads X and writes Y: a conflict orders it after A. */
  weft_system_t b =
      SYS(w, .name = "B", .query.include = {x, y},
          .term_access = {WEFT_ACCESS_READ, WEFT_ACCESS_WRITE}, .user = &r);
  /* C reads X but does not depend on A. */
  weft_system_t c = SYS(w, .name = "C", .query.include = {x},
                        .term_access = {WEFT_ACCESS_READ}, .user = &r);
  /* D depends on A but reads only Z. */
  weft_system_t d =
      SYS(w, .name = "D", .query.include = {z},
          .term_access = {WEFT_ACCESS_READ}, .after = {"A"}, .user = &r);
  /* E depends on A through D and reads X through its list. */
  weft_system_t e =
      SYS(w, .name = "E", .read = {x}, .after = {"D"}, .user = &r);
  /* F queries X only as a filter, after A: it still touches X. */
  weft_system_t f = SYS(w, .name = "F", .query.include = {x, z},
                        .term_access = {WEFT_ACCESS_NONE, WEFT_ACCESS_READ},
                        .after = {"A"}, .user = &r);
  assert_true(weft_system_edge(w, a, b));
  assert_false(weft_system_edge(w, a, c));
  assert_false(weft_system_edge(w, c, a));
  assert_int_equal(seg_of(w, a), 0);
  assert_int_equal(seg_of(w, b), 1);
  assert_int_equal(seg_of(w, c), 0);
  assert_int_equal(seg_of(w, d), 0);
  assert_int_equal(seg_of(w, e), 1);
  assert_int_equal(seg_of(w, f), 1);
  weft_system_t want[] = {a, c, d, b, e, f};
  assert_order(w, FIXED, want, 6);

  /* Every segment records something: one sync point per segment. */
  r.spawn = true;
  assert_int_equal(weft_world_run_phase(w, FIXED, DT), WEFT_OK);
  assert_log(&r, want, 6);
  weft_phase_stats_t st = phase_stats(w, FIXED);
  assert_int_equal(st.runs, 1);
  assert_int_equal(st.sync_points, 2);
  assert_int_equal(st.commands, 6);
  assert_int_equal(weft_world_count(w), 1 + 6);

  /* Nothing recorded: no sync point applied anything. */
  r.spawn = false;
  r.n = 0;
  assert_int_equal(weft_world_run_phase(w, FIXED, DT), WEFT_OK);
  assert_log(&r, want, 6);
  st = phase_stats(w, FIXED);
  assert_int_equal(st.runs, 2);
  assert_int_equal(st.sync_points, 2);

  /* Without the command access nobody needs a sync point. */
  weft_world_t *v = wt_world_new(NULL);
  x = comp(v, "X");
  y = comp(v, "Y");
  a = SYS(v, .name = "A", .query.include = {y},
          .term_access = {WEFT_ACCESS_READ});
  b = SYS(v, .name = "B", .query.include = {x, y},
          .term_access = {WEFT_ACCESS_READ, WEFT_ACCESS_WRITE});
  assert_true(weft_system_edge(v, a, b));
  assert_int_equal(seg_of(v, b), 0);
  weft_world_destroy(v);
  weft_world_destroy(w);
}

static void test_system_segment_after_despawns(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_component_t x = comp(w, "X");
  weft_component_t y = comp(w, "Y");
  weft_component_t z = comp(w, "Z");
  /* A writes X on entities without Z, and may despawn them. */
  weft_system_t a = SYS(w, .name = "A", .query.include = {x},
                        .query.exclude = {z}, .flags = WEFT_SYSTEM_DESPAWNS);
  /* B reads X: a conflict after A, overlapping queries. */
  weft_system_t b = SYS(w, .name = "B", .query.include = {x},
                        .term_access = {WEFT_ACCESS_READ});
  /* C reads X on entities with Z: disjoint from A. */
  weft_system_t c =
      SYS(w, .name = "C", .query.include = {x, z},
          .term_access = {WEFT_ACCESS_READ, WEFT_ACCESS_READ}, .after = {"A"});
  /* D, after A, touches nothing A's query names. */
  weft_system_t d = SYS(w, .name = "D", .query.include = {y},
                        .term_access = {WEFT_ACCESS_READ}, .after = {"A"});
  /* G, after A, asks for X only as a filter: it still sees the rows. */
  weft_system_t g =
      SYS(w, .name = "G", .query.include = {x, y},
          .term_access = {WEFT_ACCESS_NONE, WEFT_ACCESS_READ}, .after = {"A"});
  assert_true(weft_system_edge(w, a, b));
  assert_true(weft_system_edge(w, a, g));
  assert_int_equal(seg_of(w, g), 1);
  assert_false(weft_system_edge(w, b, c)); /* both only read */
  assert_true(weft_system_edge(w, a, c));
  assert_true(weft_system_edge(w, a, d));
  assert_int_equal(seg_of(w, a), 0);
  assert_int_equal(seg_of(w, b), 1);
  assert_int_equal(seg_of(w, c), 0);
  assert_int_equal(seg_of(w, d), 0);

  /* The same without WEFT_SYSTEM_DESPAWNS: no sync at all. */
  weft_world_t *v = wt_world_new(NULL);
  x = comp(v, "X");
  a = SYS(v, .name = "A", .query.include = {x});
  b = SYS(v, .name = "B", .query.include = {x},
          .term_access = {WEFT_ACCESS_READ});
  assert_true(weft_system_edge(v, a, b));
  assert_int_equal(seg_of(v, b), 0);
  weft_world_destroy(v);
  weft_world_destroy(w);
}

static void test_system_segment_after_emit(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  rec_t r = {0};
  assert_int_equal(weft_channel_register(w, "hits", 4, &r.ch), 0);
  weft_system_t e =
      SYS(w, .name = "E", .emit = {r.ch}, .run = emit_run, .user = &r);
  weft_system_t u = SYS(w, .name = "U", .user = &r);
  weft_system_t rv =
      SYS(w, .name = "R", .receive = {r.ch}, .run = receive_run, .user = &r);
  assert_true(weft_system_edge(w, e, rv));
  assert_int_equal(seg_of(w, e), 0);
  assert_int_equal(seg_of(w, u), 0);
  assert_int_equal(seg_of(w, rv), 1);
  weft_system_t want[] = {e, u, rv};
  assert_order(w, FIXED, want, 3);

  assert_int_equal(weft_world_run_phase(w, FIXED, DT), WEFT_OK);
  assert_log(&r, want, 3);
  assert_int_equal(r.seen, 1); /* published at the sync point before R */
  weft_phase_stats_t st = phase_stats(w, FIXED);
  assert_int_equal(st.sync_points, 1); /* R's segment applied nothing */
  weft_world_destroy(w);
}

static void test_system_segment_commit_flags(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  rec_t r = {.spawn = true};
  weft_system_t f =
      SYS(w, .name = "F", .flags = WEFT_SYSTEM_COMMIT_BEFORE, .user = &r);
  weft_system_t a = SYS(w, .name = "A", .user = &r);
  weft_system_t b =
      SYS(w, .name = "B", .flags = WEFT_SYSTEM_COMMIT_BEFORE, .user = &r);
  weft_system_t c = SYS(w, .name = "C", .user = &r);
  assert_int_equal(seg_of(w, f), 0); /* the phase starts synced */
  assert_int_equal(seg_of(w, a), 0);
  assert_int_equal(seg_of(w, b), 1);
  assert_int_equal(seg_of(w, c), 0);
  weft_system_t want[] = {f, a, c, b};
  assert_order(w, FIXED, want, 4);
  assert_int_equal(weft_world_run_phase(w, FIXED, DT), WEFT_OK);
  assert_log(&r, want, 4);
  assert_int_equal(phase_stats(w, FIXED).sync_points, 2);

  weft_world_t *v = wt_world_new(NULL);
  rec_t q = {.spawn = true};
  weft_system_t p = SYS(v, .name = "P", .user = &q);
  weft_system_t ca =
      SYS(v, .name = "CA", .flags = WEFT_SYSTEM_COMMIT_AFTER, .user = &q);
  weft_system_t s = SYS(v, .name = "S", .user = &q);
  weft_system_t t = SYS(v, .name = "T", .user = &q);
  assert_int_equal(seg_of(v, p), 0);
  assert_int_equal(seg_of(v, ca), 0);
  assert_int_equal(seg_of(v, s), 1);
  assert_int_equal(seg_of(v, t), 1);
  assert_int_equal(weft_world_run_phase(v, FIXED, DT), WEFT_OK);
  weft_system_t vwant[] = {p, ca, s, t};
  assert_log(&q, vwant, 4);
  assert_int_equal(phase_stats(v, FIXED).sync_points, 2);
  weft_world_destroy(v);
  weft_world_destroy(w);
}

static void test_system_segment_exclusive_runs_alone(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_component_t x = comp(w, "X");
  weft_component_t both[] = {x, 0};
  (void)wt_spawn_with(w, both, NULL);
  rec_t r = {.spawn = true};
  weft_system_t a = SYS(w, .name = "A", .user = &r);
  weft_system_t b = SYS(w, .name = "B", .query.include = {x}, .user = &r);
  weft_system_t xs =
      SYS(w, .name = "X", .flags = WEFT_SYSTEM_EXCLUSIVE, .user = &r);
  weft_system_t c = SYS(w, .name = "C", .user = &r);
  weft_system_t d = SYS(w, .name = "D", .query.include = {x}, .user = &r);
  uint32_t sx = seg_of(w, xs);
  weft_system_t all[] = {a, b, xs, c, d};
  for (uint32_t i = 0; i < 5; i++) {
    uint32_t sg = seg_of(w, all[i]);
    if (i < 2)
      assert_true(sg < sx);
    else if (i > 2)
      assert_true(sg > sx);
  }
  assert_int_equal(seg_of(w, a), 0);
  assert_int_equal(sx, 1);
  assert_int_equal(seg_of(w, c), 2);
  assert_order(w, FIXED, all, 5);

  assert_int_equal(weft_world_run_phase(w, FIXED, DT), WEFT_OK);
  assert_log(&r, all, 5);
  /* Segments 0, 1 (X alone) and 2, each recorded a spawn. */
  weft_phase_stats_t st = phase_stats(w, FIXED);
  assert_int_equal(st.sync_points, 3);
  assert_int_equal(st.commands, 5);

  /* An exclusive system first in the phase still gets its own segment. */
  weft_world_t *v = wt_world_new(NULL);
  weft_system_t v0 = SYS(v, .name = "V0", .flags = WEFT_SYSTEM_EXCLUSIVE);
  weft_system_t v1 = SYS(v, .name = "V1");
  weft_system_t v2 = SYS(v, .name = "V2");
  assert_int_equal(seg_of(v, v0), 0);
  assert_int_equal(seg_of(v, v1), 1);
  assert_int_equal(seg_of(v, v2), 1);
  weft_world_destroy(v);
  weft_world_destroy(w);
}

/* --- rebuild timing ------------------------------------------------------ */

static void test_system_rebuilds_once_per_schedule_change(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_component_t x = comp(w, "X");
  rec_t r = {0};
  weft_system_t a = SYS(w, .name = "A", .write = {x}, .user = &r);
  (void)SYS(w, .name = "B", .read = {x}, .phase = WEFT_PHASE_PRE_UPDATE,
            .user = &r);
  assert_int_equal(weft_schedule_build(w), WEFT_OK);
  uint64_t b0 = builds(w);
  assert_true(b0 >= 1);
  assert_int_equal(weft_schedule_build(w), WEFT_OK);
  assert_int_equal(builds(w), b0);

  for (int i = 0; i < 100; i++)
    assert_int_equal(weft_world_progress(w, DT), WEFT_OK);
  assert_int_equal(builds(w), b0);
  assert_true(r.n >= 100);

  assert_int_equal(weft_system_enable(w, a, false), WEFT_OK);
  assert_int_equal(weft_world_progress(w, DT), WEFT_OK);
  assert_int_equal(weft_system_enable(w, a, true), WEFT_OK);
  assert_int_equal(weft_world_progress(w, DT), WEFT_OK);
  assert_int_equal(builds(w), b0);

  weft_system_t c = SYS(w, .name = "C", .read = {x}, .user = &r);
  assert_int_equal(builds(w), b0); /* built lazily */
  assert_int_equal(weft_world_progress(w, DT), WEFT_OK);
  assert_int_equal(builds(w), b0 + 1);
  assert_true(weft_system_edge(w, a, c));
  (void)info_of(w, c);
  for (int i = 0; i < 100; i++)
    assert_int_equal(weft_world_progress(w, DT), WEFT_OK);
  assert_int_equal(builds(w), b0 + 1);

  assert_int_equal(weft_system_remove(w, c), WEFT_OK);
  assert_int_equal(weft_world_progress(w, DT), WEFT_OK);
  assert_int_equal(builds(w), b0 + 2);
  assert_int_equal(weft_phase_systems(w, FIXED, NULL, 0), 1);
  for (int i = 0; i < 100; i++)
    assert_int_equal(weft_world_progress(w, DT), WEFT_OK);
  assert_int_equal(builds(w), b0 + 2);
  weft_world_destroy(w);
}

/* --- user phases --------------------------------------------------------- */

static void test_system_phase_register_and_lookup(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  static const char *const builtin[] = {"PreUpdate", "FixedUpdate",
                                        "PostFixedUpdate", "NetworkTick",
                                        "PreRender"};
  for (uint32_t i = 0; i < 5; i++) {
    weft_phase_t ph = 0;
    assert_int_equal(weft_phase_lookup(w, builtin[i], &ph), WEFT_OK);
    assert_int_equal(ph, WEFT_PHASE_PRE_UPDATE + i);
  }
  weft_phase_t ph = 0;
  assert_int_equal(weft_phase_lookup(w, "Nope", &ph), WEFT_ENONAME);

  weft_phase_t u = 0;
  assert_int_equal(weft_phase_register(w, "Late", FIXED, &u), WEFT_OK);
  assert_true(u > WEFT_PHASE_PRE_RENDER);
  assert_int_equal(weft_phase_lookup(w, "Late", &ph), WEFT_OK);
  assert_int_equal(ph, u);
  assert_int_equal(weft_phase_register(w, "Late", FIXED, &ph), WEFT_EEXIST);
  assert_int_equal(weft_phase_register(w, "PreRender", FIXED, &ph),
                   WEFT_EEXIST);
  assert_int_equal(weft_phase_register(w, "Orphan", 0, &ph), WEFT_ENONAME);
  assert_int_equal(weft_phase_register(w, "Orphan", 99, &ph), WEFT_ENONAME);
  assert_int_equal(weft_phase_register(w, "", FIXED, &ph), WEFT_EINVAL);
  assert_int_equal(weft_phase_register(w, NULL, FIXED, &ph), WEFT_EINVAL);
  assert_int_equal(weft_phase_lookup(w, "Orphan", &ph), WEFT_ENONAME);

  /* A system can live in the user phase; its graph is its own. */
  weft_system_t s = SYS(w, .name = "S", .phase = u);
  assert_int_equal(info_of(w, s).phase, u);
  weft_system_t one[] = {s};
  assert_order(w, u, one, 1);
  assert_int_equal(weft_phase_systems(w, FIXED, NULL, 0), 0);
  weft_world_destroy(w);
}

static void test_system_user_phases_run_after_their_anchor(void **state) {
  (void)state;
  weft_world_t *w = wt_world_new(NULL);
  weft_pipeline_config_t cfg = {.net_dt = -1};
  assert_int_equal(weft_pipeline_configure(w, &cfg), WEFT_OK);
  weft_phase_t after_pre = 0, after_pre2 = 0, nested = 0, after_fixed = 0;
  assert_int_equal(
      weft_phase_register(w, "AfterPre", WEFT_PHASE_PRE_UPDATE, &after_pre), 0);
  assert_int_equal(weft_phase_register(w, "AfterFixed", FIXED, &after_fixed),
                   0);
  assert_int_equal(
      weft_phase_register(w, "AfterPre2", WEFT_PHASE_PRE_UPDATE, &after_pre2),
      0);
  assert_int_equal(weft_phase_register(w, "Nested", after_pre, &nested), 0);
  rec_t r = {0};
  /* Registered in an order unrelated to the expected run order. */
  weft_system_t render =
      SYS(w, .name = "render", .phase = WEFT_PHASE_PRE_RENDER, .user = &r);
  weft_system_t sfixed = SYS(w, .name = "fixed", .user = &r);
  weft_system_t safter_fixed =
      SYS(w, .name = "afterfixed", .phase = after_fixed, .user = &r);
  weft_system_t spost =
      SYS(w, .name = "post", .phase = WEFT_PHASE_POST_FIXED_UPDATE, .user = &r);
  weft_system_t snested = SYS(w, .name = "nested", .phase = nested, .user = &r);
  weft_system_t safter_pre2 =
      SYS(w, .name = "afterpre2", .phase = after_pre2, .user = &r);
  weft_system_t safter_pre =
      SYS(w, .name = "afterpre", .phase = after_pre, .user = &r);
  weft_system_t spre =
      SYS(w, .name = "pre", .phase = WEFT_PHASE_PRE_UPDATE, .user = &r);

  assert_int_equal(weft_world_progress(w, DT), WEFT_OK); /* one fixed step */
  weft_system_t frame[] = {spre,   safter_pre,   snested, safter_pre2,
                           sfixed, safter_fixed, spost,   render};
  assert_log(&r, frame, 8);

  /* No fixed step: the fixed phases and the one anchored there stay. */
  r.n = 0;
  assert_int_equal(weft_world_progress(w, 0.0), WEFT_OK);
  weft_system_t idle[] = {spre, safter_pre, snested, safter_pre2, render};
  assert_log(&r, idle, 5);

  /* Running the anchor alone brings its user phases along. */
  r.n = 0;
  assert_int_equal(weft_world_run_phase(w, FIXED, DT), WEFT_OK);
  weft_system_t fixed_only[] = {sfixed, safter_fixed};
  assert_log(&r, fixed_only, 2);
  assert_int_equal(phase_stats(w, after_fixed).runs, 2);
  weft_world_destroy(w);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_system_register_rejects_bad_descriptors),
      cmocka_unit_test(test_system_register_rejects_misuse),
      cmocka_unit_test(test_system_scheduler_creation_out_of_memory),
      cmocka_unit_test(test_system_scheduler_names_cmdbuf_limit),
      cmocka_unit_test(test_system_lookup_remove_and_ids),
      cmocka_unit_test(test_system_enable_disable_keeps_place_and_edges),
      cmocka_unit_test(test_system_write_write_edge_follows_registration),
      cmocka_unit_test(test_system_read_write_edge_and_read_read_none),
      cmocka_unit_test(test_system_disjoint_queries_do_not_conflict),
      cmocka_unit_test(test_system_filter_term_does_not_conflict),
      cmocka_unit_test(test_system_resources_conflict),
      cmocka_unit_test(test_system_channels_order_emitter_before_receiver),
      cmocka_unit_test(test_system_exclusive_conflicts_with_everything),
      cmocka_unit_test(test_system_explicit_before_after_edges),
      cmocka_unit_test(test_system_explicit_before_reverses_conflict),
      cmocka_unit_test(test_system_explicit_unknown_self_and_foreign_names),
      cmocka_unit_test(test_system_cycle_fails_build_and_names_it),
      cmocka_unit_test(test_system_order_prefers_earliest_registered),
      cmocka_unit_test(test_system_order_small_dag_matches_hand_oracle),
      cmocka_unit_test(test_system_order_random_graphs_match_oracle),
      cmocka_unit_test(test_system_segment_after_cmd_write_dependency),
      cmocka_unit_test(test_system_segment_after_despawns),
      cmocka_unit_test(test_system_segment_after_emit),
      cmocka_unit_test(test_system_segment_commit_flags),
      cmocka_unit_test(test_system_segment_exclusive_runs_alone),
      cmocka_unit_test(test_system_rebuilds_once_per_schedule_change),
      cmocka_unit_test(test_system_phase_register_and_lookup),
      cmocka_unit_test(test_system_user_phases_run_after_their_anchor),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
