/* SPDX-License-Identifier: MIT */
/*
 * The server in the world's pipeline: a stamp at the end of every fixed
 * step (the last system of PostFixedUpdate, before the dirty clear) and a
 * build at every NetworkTick. Both are exclusive systems: they run on the
 * driving thread with the world to themselves, the build splitting its
 * sessions over the pool from there. Their ticks count fixed steps
 * completed, so a build's tick is the stamp's it follows, and the next
 * stamp's is newer.
 */
#include <string.h>

#include "net/net_internal.h"
#include "weft/context.h"
#include "weft/system.h"

static int stamp_run(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  (void)chunk;
  weft_net_t *net = ctx->user;
  return weft_net_stamp(net, ctx->tick + 1);
}

static int build_run(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  (void)chunk;
  weft_net_t *net = ctx->user;
  if (!net->stamped || (net->built && net->last_build >= net->last_stamp))
    return 0; /* no fixed step since the last build: nothing new */
  return weft__net_build_on(net, net->last_stamp, weft_sysctx_pool_worker(ctx));
}

int weft_net_install(weft_net_t *net) {
  if (!net || net->installed)
    return WEFT_EINVAL;
  weft_system_desc_t d;
  memset(&d, 0, sizeof d);
  d.name = "weft.net.stamp";
  d.phase = WEFT_PHASE_POST_FIXED_UPDATE;
  d.flags = WEFT_SYSTEM_EXCLUSIVE;
  d.run = stamp_run;
  d.user = net;
  /* Reads of the replicated components order it after the phase's
   * writers of them that registered before it. */
  for (uint32_t k = 0, n = 0;
       k < net->cfg.component_count && n < WEFT_SYSTEM_MAX_ACCESS; k++)
    d.read[n++] = net->comps[k];
  int rc = weft_system_register(net->world, &d, &net->systems[0]);
  if (rc)
    return rc;
  memset(&d, 0, sizeof d);
  d.name = "weft.net.build";
  d.phase = WEFT_PHASE_NETWORK_TICK;
  d.flags = WEFT_SYSTEM_EXCLUSIVE;
  d.run = build_run;
  d.user = net;
  rc = weft_system_register(net->world, &d, &net->systems[1]);
  if (rc) {
    weft_system_remove(net->world, net->systems[0]);
    return rc;
  }
  net->installed = true;
  return 0;
}

void weft__net_uninstall(weft_net_t *net) {
  if (!net->installed)
    return;
  weft_system_remove(net->world, net->systems[0]);
  weft_system_remove(net->world, net->systems[1]);
  net->installed = false;
}
