/* SPDX-License-Identifier: MIT */
/*
 * Events through the pipeline (pipeline.h): emitted from parallel chunks and
 * task parts and received in a deterministic order, and cleared after
 * PostFixedUpdate.
 */
#define _GNU_SOURCE /* nanosleep (support/pipeline_test.h) */
#include "support/weft_test.h"

#include "support/pipeline_test.h"

typedef struct hit_t {
  uint64_t e;
  uint32_t chunk, row;
} hit_t;

typedef struct recv_t {
  weft_channel_t ch;
  hit_t *buf;
  uint32_t cap, n, calls;
} recv_t;

static int ev_emit(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  const weft_channel_t *ch = ctx->user;
  for (uint32_t r = 0; r < chunk->count; r++)
    if (weft_entity_index(chunk->entities[r]) % 3 == 0) {
      hit_t h = {chunk->entities[r], ctx->chunk, r};
      int rc = weft_sysctx_emit(ctx, *ch, &h);
      if (rc)
        return rc;
    }
  return 0;
}

static int ev_recv(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  (void)chunk;
  recv_t *v = ctx->user;
  uint32_t n = 0;
  const hit_t *h = weft_event_read(ctx->world, v->ch, &n);
  v->n = n;
  if (n)
    memcpy(v->buf, h, (size_t)(n < v->cap ? n : v->cap) * sizeof *h);
  v->calls++;
  return 0;
}

typedef struct ev_world_t {
  fx_t f;
  weft_channel_t ch;
  recv_t fixed, post;
  weft_system_t emit, fixed_id;
} ev_world_t;

static void ev_world_setup(ev_world_t *e, uint32_t workers, uint32_t cap) {
  memset(e, 0, sizeof *e);
  e->f = fx_new(workers, 0);
  configure(e->f.w, FIXED, 8, WEFT_OVERLOAD_DROP, -1.0, 0);
  populate(&e->f, BIG_N, 0);
  assert_int_equal(weft_channel_register(e->f.w, "hits", sizeof(hit_t), &e->ch),
                   WEFT_OK);
  recv_t *rs[2] = {&e->fixed, &e->post};
  for (uint32_t i = 0; i < 2; i++) {
    rs[i]->ch = e->ch;
    rs[i]->cap = cap;
    rs[i]->buf = calloc(cap, sizeof(hit_t));
    assert_non_null(rs[i]->buf);
  }
  weft_system_desc_t d =
      sys_desc("ev.emit", WEFT_PHASE_FIXED_UPDATE, ev_emit, &e->ch);
  d.query.include[0] = e->f.pos;
  d.term_access[0] = WEFT_ACCESS_READ;
  d.emit[0] = e->ch;
  d.batch = 512;
  e->emit = sys_add(e->f.w, &d);
  d = sys_desc("ev.fixed", WEFT_PHASE_FIXED_UPDATE, ev_recv, &e->fixed);
  d.receive[0] = e->ch;
  e->fixed_id = sys_add(e->f.w, &d);
  d = sys_desc("ev.post", WEFT_PHASE_POST_FIXED_UPDATE, ev_recv, &e->post);
  d.receive[0] = e->ch;
  sys_add(e->f.w, &d);
}

static void ev_world_free(ev_world_t *e) {
  free(e->fixed.buf);
  free(e->post.buf);
  fx_free(&e->f);
}

static void test_events_parallel_keep_order(void **state) {
  (void)state;
  const uint32_t cap = BIG_N / 3 + 16;
  ev_world_t *ev = calloc(2, sizeof *ev);
  assert_non_null(ev);
  ev_world_setup(&ev[0], 0, cap);
  ev_world_setup(&ev[1], 3, cap);
  /* A sync point publishes them before the receiver in the same phase. */
  assert_int_equal(sinfo(ev[1].f.w, ev[1].emit).segment, 0);
  assert_int_equal(sinfo(ev[1].f.w, ev[1].fixed_id).segment, 1);
  /* The expected order: the query's rows in order. */
  hit_t *expect = calloc(cap, sizeof *expect);
  assert_non_null(expect);
  uint32_t nexp = 0;
  {
    weft_query_desc_t qd;
    memset(&qd, 0, sizeof qd);
    qd.include[0] = ev[1].f.pos;
    weft_query_t *q = NULL;
    assert_int_equal(weft_query_create(ev[1].f.w, &qd, &q), WEFT_OK);
    weft_iter_t it;
    weft_query_iter(q, &it);
    while (weft_iter_next(&it))
      for (uint32_t r = 0; r < it.count; r++)
        if (weft_entity_index(it.entities[r]) % 3 == 0)
          expect[nexp++].e = it.entities[r];
    weft_query_destroy(q);
  }
  assert_true(nexp > BIG_N / 4);
  for (uint32_t frame = 0; frame < 3; frame++) {
    for (uint32_t i = 0; i < 2; i++) {
      ev[i].fixed.n = ev[i].post.n = 0;
      progress_ok(ev[i].f.w, 0.1);
      assert_int_equal(ev[i].fixed.n, nexp);
      assert_int_equal(ev[i].post.n, nexp);
      for (uint32_t k = 0; k < nexp; k++) {
        if (ev[i].fixed.buf[k].e != expect[k].e)
          fail_msg("world %u frame %u: event %u out of order", i, frame, k);
        assert_true(ev[i].post.buf[k].e == expect[k].e);
      }
      /* Channels clear after PostFixedUpdate. */
      uint32_t left = 99;
      weft_event_read(ev[i].f.w, ev[i].ch, &left);
      assert_int_equal(left, 0);
    }
    /* Chunk numbers and rows too: identical to the single-threaded run. */
    assert_memory_equal(ev[0].fixed.buf, ev[1].fixed.buf, nexp * sizeof(hit_t));
    assert_memory_equal(ev[0].post.buf, ev[1].post.buf, nexp * sizeof(hit_t));
  }
  weft_system_stats_t es = sstats(ev[1].f.w, ev[1].emit);
  assert_int_equal(es.runs, 3);
  assert_true(es.jobs >= es.runs);
  free(expect);
  ev_world_free(&ev[0]);
  ev_world_free(&ev[1]);
  free(ev);
}

/* A task that splits its work in parts on the pool and emits from them. */
#define PARTS_N 300u
#define PARTS_MARK UINT64_MAX

typedef struct parts_t {
  weft_channel_t ch;
  const weft_sysctx_t *task;
  atomic_uint bad; /* part contexts that were refused or malformed */
  int rc_worker, rc_limit, rc_null, rc_query;
} parts_t;

/* Part p emits p % 5 + 1 events (p, i); parts of odd number spin a while
 * first, so that on a pool they finish out of order. */
static void parts_body(void *arg, uint32_t begin, uint32_t end,
                       uint32_t worker) {
  parts_t *pt = arg;
  for (uint32_t p = begin; p < end; p++) {
    weft_sysctx_t pc;
    memset(&pc, 0xa5, sizeof pc);
    if (weft_sysctx_part(pt->task, worker, p, &pc) != WEFT_OK ||
        pc.cmd != NULL || pc.world != pt->task->world) {
      atomic_fetch_add(&pt->bad, 1u);
      continue;
    }
    volatile uint32_t spin = 0;
    for (uint32_t k = 0; k < (p & 1u) * 20000u; k++)
      spin += k;
    for (uint32_t i = 0; i <= p % 5; i++) {
      hit_t h = {p, i, 0};
      if (weft_sysctx_emit(&pc, pt->ch, &h) != WEFT_OK)
        atomic_fetch_add(&pt->bad, 1u);
    }
    weft_sysctx_count(&pc, p % 5 + 1); /* the events count as its rows */
  }
}

static int parts_task(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  (void)chunk;
  parts_t *pt = ctx->user;
  pt->task = ctx;
  /* The task's own events come before every part's, even when emitted
   * after them. */
  weft_pool_t *pool = weft_world_pool(ctx->world);
  if (pool)
    weft_pool_parallel_for(pool, weft_sysctx_pool_worker(ctx), 0, PARTS_N, 1,
                           parts_body, pt);
  else
    parts_body(pt, 0, PARTS_N, WEFT_WORKER_EXTERNAL);
  hit_t mark = {PARTS_MARK, 0, 0};
  int rc = weft_sysctx_emit(ctx, pt->ch, &mark);
  weft_sysctx_count(ctx, 1);
  weft_sysctx_count(NULL, 1000); /* ignored */
  weft_sysctx_t pc;
  pt->rc_worker = weft_sysctx_part(ctx, 1000, 0, &pc);
  pt->rc_limit =
      weft_sysctx_part(ctx, WEFT_WORKER_EXTERNAL, WEFT_SYSCTX_PARTS, &pc);
  pt->rc_null = weft_sysctx_part(NULL, WEFT_WORKER_EXTERNAL, 0, &pc);
  return rc;
}

/* A chunk callback is no task: it may not make part contexts. */
static int parts_not_task(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  (void)chunk;
  parts_t *pt = ctx->user;
  weft_sysctx_t pc;
  pt->rc_query = weft_sysctx_part(ctx, WEFT_WORKER_EXTERNAL, 0, &pc);
  return 0;
}

/* Events emitted from the parts of a task publish in part order, then
 * emission order, after the task's own, whatever the number of workers
 * and the order the parts finish in; bad part requests are refused; rows
 * the task and its parts count add up in the system's stats. */
static void test_events_task_parts_keep_order(void **state) {
  (void)state;
  const uint32_t cap = PARTS_N * 5 + 16;
  hit_t *got[2];
  uint32_t ngot[2];
  for (uint32_t i = 0; i < 2; i++) {
    fx_t f = fx_new(i ? 3 : 0, 0);
    configure(f.w, FIXED, 8, WEFT_OVERLOAD_DROP, -1.0, 0);
    populate(&f, 100, 0);
    parts_t pt;
    memset(&pt, 0, sizeof pt);
    atomic_init(&pt.bad, 0u);
    pt.rc_query = 1;
    assert_int_equal(weft_channel_register(f.w, "parts", sizeof(hit_t), &pt.ch),
                     WEFT_OK);
    recv_t rv = {pt.ch, calloc(cap, sizeof(hit_t)), cap, 0, 0};
    assert_non_null(rv.buf);
    weft_system_desc_t d =
        sys_desc("parts", WEFT_PHASE_FIXED_UPDATE, parts_task, &pt);
    d.emit[0] = pt.ch;
    weft_system_t task = sys_add(f.w, &d);
    d = sys_desc("parts.query", WEFT_PHASE_FIXED_UPDATE, parts_not_task, &pt);
    d.query.include[0] = f.pos;
    d.term_access[0] = WEFT_ACCESS_READ;
    sys_add(f.w, &d);
    d = sys_desc("parts.recv", WEFT_PHASE_FIXED_UPDATE, ev_recv, &rv);
    d.receive[0] = pt.ch;
    sys_add(f.w, &d);
    progress_ok(f.w, 0.1);

    assert_int_equal(atomic_load(&pt.bad), 0);
    assert_int_equal(pt.rc_worker, WEFT_EINVAL);
    assert_int_equal(pt.rc_limit, WEFT_ELIMIT);
    assert_int_equal(pt.rc_null, WEFT_EINVAL);
    assert_int_equal(pt.rc_query, WEFT_EINVAL);
    assert_int_equal(rv.calls, 1);
    /* The oracle: the mark, then part by part, event by event. */
    assert_true(rv.buf[0].e == PARTS_MARK);
    uint32_t k = 1;
    for (uint32_t p = 0; p < PARTS_N; p++)
      for (uint32_t e = 0; e <= p % 5; e++, k++) {
        if (k >= rv.n || rv.buf[k].e != p || rv.buf[k].chunk != e)
          fail_msg("world %u: event %u is not (%u, %u)", i, k, p, e);
      }
    assert_int_equal(rv.n, k);
    /* Rows counted by the task and its parts, from any worker: one per
     * event. */
    assert_int_equal(sstats(f.w, task).entities, k);
    got[i] = rv.buf;
    ngot[i] = rv.n;
    fx_free(&f);
  }
  assert_int_equal(ngot[0], ngot[1]);
  assert_memory_equal(got[0], got[1], ngot[0] * sizeof(hit_t));
  free(got[0]);
  free(got[1]);
}

/* Logs the events of a channel as letters: [abc]. */
typedef struct evlog_t {
  weft_channel_t ch;
  xlog_t log;
} evlog_t;

static int evlog_read(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  (void)chunk;
  evlog_t *l = ctx->user;
  uint32_t n = 0;
  const uint32_t *v = weft_event_read(ctx->world, l->ch, &n);
  log_put(&l->log, '[');
  for (uint32_t i = 0; i < n; i++)
    log_put(&l->log, (char)('a' + v[i]));
  log_put(&l->log, ']');
  return 0;
}

static int evlog_emit(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  (void)chunk;
  const weft_channel_t *ch = ctx->user;
  uint32_t a = 10, b = 11;
  int rc = weft_sysctx_emit(ctx, *ch, &a);
  return rc ? rc : weft_sysctx_emit(ctx, *ch, &b);
}

static void test_events_clear_after_post_fixed(void **state) {
  (void)state;
  fx_t f = fx_new(0, 0);
  configure(f.w, FIXED, 8, WEFT_OVERLOAD_DROP, -1.0, 0);
  weft_channel_t ch = 0;
  assert_int_equal(weft_channel_register(f.w, "ev", sizeof(uint32_t), &ch),
                   WEFT_OK);
  evlog_t *l = calloc(4, sizeof *l);
  assert_non_null(l);
  const weft_phase_t phases[4] = {
      WEFT_PHASE_PRE_UPDATE, WEFT_PHASE_FIXED_UPDATE,
      WEFT_PHASE_POST_FIXED_UPDATE, WEFT_PHASE_PRE_RENDER};
  const char *const names[4] = {"read.pre", "read.fixed", "read.post",
                                "read.render"};
  weft_system_desc_t d =
      sys_desc("emit", WEFT_PHASE_FIXED_UPDATE, evlog_emit, &ch);
  d.emit[0] = ch;
  sys_add(f.w, &d);
  for (uint32_t i = 0; i < 4; i++) {
    l[i].ch = ch;
    d = sys_desc(names[i], phases[i], evlog_read, &l[i]);
    d.receive[0] = ch;
    sys_add(f.w, &d);
  }
  /* Frame 1: one step. Pushed events are readable at once. */
  uint32_t v = 0, n = 0;
  assert_int_equal(weft_event_push(f.w, ch, &v), WEFT_OK);
  assert_non_null(weft_event_read(f.w, ch, &n));
  assert_int_equal(n, 1);
  progress_ok(f.w, 0.1);
  assert_string_equal(l[0].log.s, "[a]");
  assert_string_equal(l[1].log.s, "[akl]");
  assert_string_equal(l[2].log.s, "[akl]");
  assert_string_equal(l[3].log.s, "[]");
  assert_null(weft_event_read(f.w, ch, &n));
  assert_int_equal(n, 0);
  /* Frame 2: two steps; the second starts from a cleared channel. */
  for (uint32_t i = 0; i < 4; i++)
    log_reset(&l[i].log);
  v = 1;
  assert_int_equal(weft_event_push(f.w, ch, &v), WEFT_OK);
  progress_ok(f.w, 0.2);
  assert_int_equal(pstate(f.w).tick, 3);
  assert_string_equal(l[0].log.s, "[b]");
  assert_string_equal(l[1].log.s, "[bkl][kl]");
  assert_string_equal(l[2].log.s, "[bkl][kl]");
  assert_string_equal(l[3].log.s, "[]");
  /* Frame 3: no fixed step, nothing clears. */
  for (uint32_t i = 0; i < 4; i++)
    log_reset(&l[i].log);
  v = 2;
  assert_int_equal(weft_event_push(f.w, ch, &v), WEFT_OK);
  progress_ok(f.w, 0.01);
  assert_int_equal(pstate(f.w).tick, 3);
  assert_string_equal(l[0].log.s, "[c]");
  assert_string_equal(l[1].log.s, "");
  assert_string_equal(l[3].log.s, "[c]");
  weft_event_read(f.w, ch, &n);
  assert_int_equal(n, 1);
  /* Frame 4: one step. */
  for (uint32_t i = 0; i < 4; i++)
    log_reset(&l[i].log);
  progress_ok(f.w, 0.1);
  assert_int_equal(pstate(f.w).tick, 4);
  assert_string_equal(l[0].log.s, "[c]");
  assert_string_equal(l[1].log.s, "[ckl]");
  assert_string_equal(l[2].log.s, "[ckl]");
  assert_string_equal(l[3].log.s, "[]");
  free(l);
  fx_free(&f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_events_parallel_keep_order),
      cmocka_unit_test(test_events_task_parts_keep_order),
      cmocka_unit_test(test_events_clear_after_post_fixed),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
