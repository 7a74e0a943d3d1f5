/* SPDX-License-Identifier: MIT */
/*
 * Resources in the schedule (pipeline.h): a resource's writer orders its
 * readers. The resource API itself is tested in test_resource.c.
 */
#define _GNU_SOURCE /* nanosleep (support/pipeline_test.h) */
#include "support/weft_test.h"

#include "support/pipeline_test.h"

typedef struct res_ctx_t {
  weft_resource_t r;
  uint64_t before[64], after[64];
  uint32_t nbefore, nafter;
} res_ctx_t;

static int res_writer(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  (void)chunk;
  res_ctx_t *c = ctx->user;
  sleep_us(500); /* a reader not ordered after it would win the race */
  uint64_t *v = weft_resource_get(ctx->world, c->r);
  *v = *v * 3 + 1;
  return 0;
}

static int res_read_before(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  (void)chunk;
  res_ctx_t *c = ctx->user;
  const uint64_t *v = weft_resource_get(ctx->world, c->r);
  if (c->nbefore < 64)
    c->before[c->nbefore++] = *v;
  return 0;
}

static int res_read_after(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  (void)chunk;
  res_ctx_t *c = ctx->user;
  const uint64_t *v = weft_resource_get(ctx->world, c->r);
  if (c->nafter < 64)
    c->after[c->nafter++] = *v;
  return 0;
}

static void test_system_resources_writer_orders_readers(void **state) {
  (void)state;
  fx_t f = fx_new(3, 0);
  /* inline_rows 1: even tasks go to the pool. */
  configure(f.w, FIXED, 8, WEFT_OVERLOAD_DROP, -1.0, 1);
  res_ctx_t c;
  memset(&c, 0, sizeof c);
  const uint64_t init = 5;
  assert_int_equal(
      weft_resource_register(f.w, "score", sizeof(uint64_t), 0, &init, &c.r),
      WEFT_OK);
  weft_system_desc_t d =
      sys_desc("reader.before", WEFT_PHASE_FIXED_UPDATE, res_read_before, &c);
  d.res_read[0] = c.r;
  weft_system_t rb = sys_add(f.w, &d);
  d = sys_desc("writer", WEFT_PHASE_FIXED_UPDATE, res_writer, &c);
  d.res_write[0] = c.r;
  weft_system_t wr = sys_add(f.w, &d);
  d = sys_desc("reader.after", WEFT_PHASE_FIXED_UPDATE, res_read_after, &c);
  d.res_read[0] = c.r;
  weft_system_t ra = sys_add(f.w, &d);
  assert_true(weft_system_edge(f.w, rb, wr));
  assert_true(weft_system_edge(f.w, wr, ra));
  assert_false(weft_system_edge(f.w, ra, wr));
  assert_false(weft_system_edge(f.w, rb, ra)); /* two readers: no conflict */
  for (uint32_t i = 0; i < 8; i++)
    progress_ok(f.w, 0.1);
  assert_int_equal(c.nbefore, 8);
  assert_int_equal(c.nafter, 8);
  uint64_t v = init;
  for (uint32_t i = 0; i < 8; i++) {
    assert_int_equal(c.before[i], v);
    v = v * 3 + 1;
    assert_int_equal(c.after[i], v);
  }
  assert_int_equal(*(const uint64_t *)weft_resource_get(f.w, c.r), v);
  fx_free(&f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_system_resources_writer_orders_readers),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
