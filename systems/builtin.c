/* SPDX-License-Identifier: MIT */
/*
 * What the built-in systems share besides the standard components: one
 * way to register a system (a descriptor started by weft__builtin_desc(),
 * the name checked first by weft__builtin_unique(), registered by
 * weft__builtin_register()), settings kept in world resources, and the
 * pool helpers a task uses to spread its work.
 */
#include <stddef.h>
#include <string.h>

#include <weft.h>
#include <weft/builtin.h>

#include "builtin_internal.h"

weft_system_desc_t weft__builtin_desc(const char *name, weft_phase_t phase,
                                      weft_system_fn run, void *user) {
  weft_system_desc_t d;
  memset(&d, 0, sizeof d);
  d.name = name;
  d.phase = phase;
  d.run = run;
  d.user = user;
  return d;
}

int weft__builtin_unique(weft_world_t *w, const char *fn, const char *name) {
  weft_system_t found;
  if (weft_system_lookup(w, name, &found) == 0)
    return weft_world_fail(w, WEFT_EEXIST, "%s: '%s' exists already", fn, name);
  return 0;
}

int weft__builtin_register(weft_world_t *w, const weft_system_desc_t *d,
                           weft_system_t *out) {
  weft_system_t id = 0;
  int rc = weft_system_register(w, d, &id);
  if (!rc && out)
    *out = id;
  return rc;
}

int weft__builtin_state(weft_world_t *w, const char *name, const void *init,
                        size_t size, weft_resource_t *res) {
  int rc;
  if (weft_resource_lookup(w, name, res) == 0) {
    if (weft_resource_size(w, *res) != size)
      return weft_world_fail(w, WEFT_EEXIST,
                             "resource '%s' exists already, with another size",
                             name);
    rc = init ? weft_resource_set(w, *res, init) : 0;
  } else {
    rc = weft_resource_register(w, name, size, 0, init, res);
  }
  /* Settings with pointers in them, plans and caches: not world state
   * for the digest (the world's own parts hold the state they describe). */
  return rc ? rc : weft_resource_set_flags(w, *res, WEFT_RESOURCE_SCRATCH);
}

void weft__builtin_split(weft_sysctx_t *ctx, uint32_t n, uint32_t grain,
                         weft_range_fn fn, void *arg) {
  weft_pool_t *pool = weft_world_pool(ctx->world);
  if (pool && n > grain)
    weft_pool_parallel_for(pool, weft_sysctx_pool_worker(ctx), 0, n, grain, fn,
                           arg);
  else if (n)
    fn(arg, 0, n, WEFT_WORKER_EXTERNAL);
}

uint32_t weft__builtin_helpers(weft_sysctx_t *ctx, weft_job_fn fn, void *arg,
                               uint32_t max, weft_counter_t *done) {
  memset(done, 0, sizeof *done);
  weft_pool_t *pool = weft_world_pool(ctx->world);
  uint32_t n = pool ? weft_pool_workers(pool) - 1 : 0;
  if (n > max)
    n = max;
  uint32_t self = weft_sysctx_pool_worker(ctx);
  for (uint32_t i = 0; i < n; i++)
    weft_pool_submit(pool, self, fn, arg, done, WEFT_WORKER_EXTERNAL);
  return n;
}

void weft__builtin_join(weft_sysctx_t *ctx, weft_counter_t *done, uint32_t n) {
  if (n)
    weft_pool_wait(weft_world_pool(ctx->world), weft_sysctx_pool_worker(ctx),
                   done);
}
