/* SPDX-License-Identifier: MIT */
/**
 * @file resource.h
 * Resources (typed singletons) and event channels.
 *
 * A **resource** is one value of a registered size, owned by the world and
 * keyed by a small id (such as the fixed delta time). Systems
 * declare the resources they read and write so the scheduler orders them
 * like components.
 *
 * An **event channel** is a typed, append-only list (an event bus).
 * Events emitted by systems running in parallel (weft_sysctx_emit() in
 * system.h) are staged per worker and published at the next sync point in
 * the order of their keys (system order, chunk, sequence), so readers see
 * the same order on 1 or 64 threads. weft_event_push() appends at once,
 * from the owner thread. The pipeline clears every channel after each
 * fixed tick (after PostFixedUpdate); weft_event_clear() clears by hand.
 */
#ifndef WEFT_RESOURCE_H
#define WEFT_RESOURCE_H

#include <stddef.h>
#include <stdint.h>

#include "weft/world.h"

#ifdef __cplusplus
extern "C" {
#endif

/** A resource id; 0 is never a valid one. */
typedef uint32_t weft_resource_t;

/** An event channel id; 0 is never a valid one. */
typedef uint32_t weft_channel_t;

/** Resources per world. */
#define WEFT_MAX_RESOURCES 256u

/** Event channels per world. */
#define WEFT_MAX_CHANNELS 256u

/** Largest event, in bytes. */
#define WEFT_EVENT_MAX_SIZE 256u

/**
 * Largest resource, in bytes (16 MiB). A resource is one value, not a
 * store: bigger data belongs in components or in memory the resource
 * points to.
 */
#define WEFT_RESOURCE_MAX_SIZE (16u * 1024u * 1024u)

/**
 * Registers a resource named @p name (1 to WEFT_NAME_MAX - 1 characters,
 * copied) of @p size bytes (1 to WEFT_RESOURCE_MAX_SIZE) aligned to
 * @p align (a power of two up to 64; 0 means 16), zero-filled, or copied
 * from @p init when not NULL. Ids count up from 1 in registration order;
 * *out receives the new one (@p out may be NULL). Owner thread, not while
 * systems run. Returns WEFT_EINVAL (NULL world, NULL/empty/too long name,
 * bad size or alignment), WEFT_EEXIST (name taken), WEFT_ETOOMANY (already
 * WEFT_MAX_RESOURCES) or WEFT_ENOMEM; nothing is registered then.
 */
int weft_resource_register(weft_world_t *world, const char *name, size_t size,
                           size_t align, const void *init,
                           weft_resource_t *out);

/**
 * Finds a resource by name. WEFT_EINVAL for a NULL argument, WEFT_ENONAME
 * when there is none. Any thread while none registers.
 */
int weft_resource_lookup(const weft_world_t *world, const char *name,
                         weft_resource_t *out);

/**
 * The resource's value, or NULL for an unknown id. The pointer lives as
 * long as the world and never moves (registering more resources does not
 * move it). Any thread; concurrent access follows the read/write sets
 * systems declare.
 */
void *weft_resource_get(const weft_world_t *world, weft_resource_t res);

/**
 * Copies @p value (the resource's size in bytes) over the resource. Owner
 * thread. WEFT_EINVAL for a NULL argument, WEFT_ENONAME for an unknown id.
 */
int weft_resource_set(weft_world_t *world, weft_resource_t res,
                      const void *value);

/** The size a resource was registered with (0 for an unknown id). Any
 * thread. */
size_t weft_resource_size(const weft_world_t *world, weft_resource_t res);

/**
 * Resource flag: the value is scratch, not world state (a cache, a plan
 * rebuilt every run, pointers), so weft_world_digest() hashes its name and
 * size but not its bytes, which would differ between two worlds in the
 * same state (addresses) or between runs.
 */
#define WEFT_RESOURCE_SCRATCH 0x1u

/**
 * Sets a resource's flags (WEFT_RESOURCE_SCRATCH, or 0), replacing the
 * previous ones. Owner thread, not while systems run. WEFT_EINVAL (NULL
 * world, unknown flag bits), WEFT_ENONAME (unknown id).
 */
int weft_resource_set_flags(weft_world_t *world, weft_resource_t res,
                            uint32_t flags);

/**
 * Registers an event channel named @p name (1 to WEFT_NAME_MAX - 1
 * characters, copied) for events of @p size bytes (1 to
 * WEFT_EVENT_MAX_SIZE). Ids count up from 1, separately from resource ids;
 * @p out may be NULL. Owner thread, not while systems run. WEFT_EINVAL,
 * WEFT_EEXIST, WEFT_ETOOMANY (already WEFT_MAX_CHANNELS), WEFT_ENOMEM.
 */
int weft_channel_register(weft_world_t *world, const char *name, size_t size,
                          weft_channel_t *out);

/**
 * Finds a channel by name. WEFT_EINVAL for a NULL argument, WEFT_ENONAME
 * when there is none. Any thread while none registers.
 */
int weft_channel_lookup(const weft_world_t *world, const char *name,
                        weft_channel_t *out);

/**
 * Appends one event (the channel's size in bytes, copied) now. Owner
 * thread, not while systems run (they use weft_sysctx_emit()). Allocates
 * only when the channel outgrows the memory it kept. WEFT_EINVAL (NULL
 * argument), WEFT_ENONAME (unknown channel) or WEFT_ENOMEM.
 */
int weft_event_push(weft_world_t *world, weft_channel_t ch, const void *event);

/**
 * The published events of @p ch, oldest first; *count receives how many.
 * The array belongs to the world and is valid until the channel next
 * changes (a sync point, a push or a clear). Any thread while no sync point
 * runs. NULL with *count = 0 for an unknown or empty channel.
 */
const void *weft_event_read(const weft_world_t *world, weft_channel_t ch,
                            uint32_t *count);

/**
 * Empties one channel (0: every channel), keeping its memory. Events staged
 * for the next sync point are not affected. An unknown id changes nothing
 * (and is described by weft_world_last_error()). Owner thread.
 */
void weft_event_clear(weft_world_t *world, weft_channel_t ch);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_RESOURCE_H */
