/* SPDX-License-Identifier: MIT */
/*
 * Staged event emission, the scheduler's side of event channels.
 *
 * Systems running in parallel cannot append to a channel directly: the
 * order would depend on thread timing. Each worker stages its events in its
 * own slot instead, tagged with an ordering key (system order, chunk,
 * sequence), and the owner publishes them at the next sync point ordered by
 * (key, slot, order staged within the slot). A key is only ever used from
 * one slot at a time, so the slot index is only a tie-break and readers see
 * the same order whatever the number of workers.
 *
 * Self-contained (public headers only) so that tests can include it.
 */
#ifndef WEFT_CORE_RESOURCE_INTERNAL_H
#define WEFT_CORE_RESOURCE_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "weft/resource.h"

struct weft_pool_t;

/*
 * Makes sure worker slots [0, n) exist for staging. Owner thread, with no
 * thread staging (the slot array may move); may allocate. 0, WEFT_EINVAL
 * (NULL world) or WEFT_ENOMEM (the existing slots are unchanged).
 */
int weft__events_slots(weft_world_t *w, uint32_t n);

/*
 * Stages one event (the channel's size in bytes, copied) from worker slot
 * `slot` with ordering key `key`. Any thread, but one thread per slot at a
 * time; takes no lock and allocates nothing once the slot's buffers have
 * grown enough (they grow geometrically and keep their memory). 0,
 * WEFT_EINVAL (NULL argument, slot not made by weft__events_slots),
 * WEFT_ENONAME (unknown channel) or WEFT_ENOMEM (nothing staged). Staged
 * events are invisible to weft_event_read() until published. Allocations
 * made here are counted in the world's stats at the next publish.
 */
int weft__event_stage(weft_world_t *w, uint32_t slot, uint64_t key,
                      weft_channel_t ch, const void *event);

/*
 * Publishes everything staged in all slots into the channels, appended
 * after the events they already hold, ordered by (key, slot, order staged
 * within the slot); the slots are emptied and keep their memory. Owner
 * thread, with no thread staging. Returns the number of events published.
 * Allocates nothing in steady state; when a channel cannot grow (out of
 * memory) its events are dropped and the world's last error says so.
 * With @p pool (self: the calling thread's worker index there, or
 * WEFT_WORKER_EXTERNAL) and room reserved for parallel merges
 * (weft__events_reserve()), a large publish runs on the pool's workers;
 * the result is the same, byte for byte.
 */
uint32_t weft__events_publish(weft_world_t *w, struct weft_pool_t *pool,
                              uint32_t self);

/* Events currently staged, all slots. Owner thread, no thread staging. */
uint32_t weft__events_staged(const weft_world_t *w);

/* True for a registered channel id. Any thread while none registers. */
bool weft__channel_exists(const weft_world_t *w, weft_channel_t ch);

/*
 * Grows every slot (and the publish scratch) to hold all the events staged
 * right now, in all slots, so that staging as much again, spread over the
 * slots in any way, allocates nothing, and makes room for @p parts
 * parallel merges (at most 64; below 2: none). Call before publishing.
 * Owner thread, no thread staging. 0 or WEFT_ENOMEM.
 */
int weft__events_reserve(weft_world_t *w, uint32_t parts);

#endif /* WEFT_CORE_RESOURCE_INTERNAL_H */
