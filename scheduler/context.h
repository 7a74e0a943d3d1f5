/* SPDX-License-Identifier: MIT */
/*
 * The system context (weft_sysctx_t): made by the dispatcher (pipeline.c)
 * for each job and keyed for each chunk, inline because keying is on the
 * per-chunk path; the functions a running system calls on it are in
 * context.c.
 */
#ifndef WEFT_SCHEDULER_CONTEXT_H
#define WEFT_SCHEDULER_CONTEXT_H

#include <stdint.h>

#include "core/cmdkey.h"
#include "scheduler/sched.h"
#include "weft/command.h"
#include "weft/system.h"

/* The context a callback of y gets on slot k. */
static inline weft_sysctx_t weft__sysctx_make(weft__sched_t *s, weft__sys_t *y,
                                              uint32_t k) {
  return (weft_sysctx_t){y->world,   s->slots[k].cmd, y->user, s->dt,
                         s->tick,    y->id,           k,       0,
                         y->version, y->last_run,     0,       y};
}

/* Keys the context's buffer for chunk sequence seq (0 for a task). */
/* Points ctx, made for another system on the same slot in the same
 * segment, at system y: what differs from system to system. */
static inline void weft__sysctx_switch(weft_sysctx_t *ctx, weft__sys_t *y) {
  ctx->user = y->user;
  ctx->system = y->id;
  ctx->version = y->version;
  ctx->last_run = y->last_run;
  ctx->sys_ = y;
}

static inline void weft__sysctx_key(weft_sysctx_t *ctx, const weft__sys_t *y,
                                    uint32_t seq) {
  ctx->chunk = seq;
  ctx->key_ = y->key_base | WEFT_CMD_KEY(0, seq, 0);
  if (ctx->cmd)
    weft__cmdkey_set(weft__cmdbuf_keys(ctx->cmd), ctx->key_);
}

#endif /* WEFT_SCHEDULER_CONTEXT_H */
