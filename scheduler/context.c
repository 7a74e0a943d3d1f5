/* SPDX-License-Identifier: MIT */
/*
 * The system context: what a running system's callback calls on the
 * weft_sysctx_t it was handed (context.h makes them). They run on the
 * thread running the callback, maybe while the owner registers systems
 * during the frame, so they reach the system through the context's pointer
 * (ctx_sys()), never through the id table.
 */
#include "scheduler/context.h"

#include "core/check.h"
#include "core/resource_internal.h"
#include "core/world_view.h"
#include "weft/random.h"

/* The system a callback's context belongs to; NULL for a context the
 * scheduler did not make. Never the id table, which a registration during
 * the frame may move under a worker. */
static weft__sys_t *ctx_sys(const weft_sysctx_t *ctx) {
  weft__sys_t *y = ctx ? ctx->sys_ : NULL;
  return y && y->world == ctx->world ? y : NULL;
}

int weft_sysctx_emit(weft_sysctx_t *ctx, weft_channel_t ch, const void *event) {
  if (!ctx_sys(ctx) || !event)
    return WEFT_EINVAL;
  return weft__event_stage(ctx->world, ctx->worker, ctx->key_, ch, event);
}

int weft_sysctx_part(const weft_sysctx_t *task, uint32_t worker, uint32_t part,
                     weft_sysctx_t *out) {
  const weft__sys_t *y = ctx_sys(task);
  if (!y || !out)
    return WEFT_EINVAL;
  const weft__sched_t *s = weft__sched_of(y->world);
  if (y->query || (worker != WEFT_WORKER_EXTERNAL && worker >= s->nslots - 1))
    return WEFT_EINVAL;
  if (part >= WEFT_SYSCTX_PARTS)
    return WEFT_ELIMIT;
  /* A task's own key has chunk 0; part p takes chunk p + 1, so the parts
   * sort after the task and by number, whichever slot stages them. */
  *out = *task;
  out->cmd = NULL;
  out->worker = weft__sched_slot(s, worker);
  out->chunk = part + 1;
  out->key_ = WEFT_CMD_KEY(y->order, part + 1, 0);
  return 0;
}

int weft_sysctx_commit(weft_sysctx_t *ctx) {
  if (!ctx || !ctx->world)
    return WEFT_EINVAL;
  weft__sys_t *y = ctx_sys(ctx);
  weft__sched_t *s = weft__sched_of(ctx->world);
  if (y && s && s->running) {
    atomic_store_explicit(&s->commit_asked, true, memory_order_relaxed);
    /* A segment that runs serially (no pool, or run_serial()) runs no
     * other system while y runs, and none of y's dependents has run:
     * the first request of the run holds them now, so that the serial
     * loops need no check of their own (the other parts of a task that
     * splits its work may ask at the same time: one marks). Otherwise
     * the dispatcher holds them when y completes (pipeline.c,
     * complete()). */
    if (!s->pool || s->serial) {
      if (!atomic_exchange_explicit(&y->commit_req, true, memory_order_relaxed))
        weft__sched_hold(y);
    } else {
      atomic_store_explicit(&y->commit_req, true, memory_order_relaxed);
    }
    return 0;
  }
  /* During a frame the caller may be a worker, which must not write the
   * world's error buffer; outside one it is the owner's thread. */
  if (s && s->running)
    return WEFT_EINVAL;
  return weft__fail(ctx->world, WEFT_EINVAL, WEFT__FILE, WEFT__LINE,
                    "weft_sysctx_commit() outside a running system (%s)",
                    y ? "no frame is running" : "not a system's context");
}

void weft_sysctx_count(weft_sysctx_t *ctx, uint64_t rows) {
  weft__sys_t *y = ctx_sys(ctx);
  if (!y)
    return;
  atomic_fetch_add_explicit(&y->counted, rows, memory_order_relaxed);
  weft__sched_of(y->world)->slots[ctx->worker].counted = true;
}

uint32_t weft_sysctx_pool_worker(const weft_sysctx_t *ctx) {
  const weft__sys_t *y = ctx_sys(ctx);
  const weft__sched_t *s = y ? weft__sched_of(y->world) : NULL;
  if (!s || !s->pool)
    return WEFT_WORKER_EXTERNAL;
  /* Slots are worker indices, except the last one: the driving thread
   * when it does not take part in the pool. */
  return ctx->worker + 1 == s->nslots ? WEFT_WORKER_EXTERNAL : ctx->worker;
}

uint64_t weft_sysctx_random(const weft_sysctx_t *ctx, weft_entity_t e,
                            uint32_t stream, uint32_t n) {
  if (!ctx || !ctx->world)
    return 0;
  return weft_random_at(weft_random_world_seed(ctx->world), e, ctx->tick,
                        stream, n);
}
