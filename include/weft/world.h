/* SPDX-License-Identifier: MIT */
/**
 * @file weft/world.h
 * @brief The world: the container of every entity, component and query.
 *
 * A world is an opaque, heavy object. Unless a function says otherwise, a
 * world is single-threaded: one thread at a time may call functions on it,
 * and functions taking `const weft_world_t *` may run concurrently with each
 * other but not with a mutating call.
 */
#ifndef WEFT_WORLD_H
#define WEFT_WORLD_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** An opaque world. Created by weft_world_create(), freed by
 * weft_world_destroy(). */
typedef struct weft_world_t weft_world_t;

/** Largest number of entity slots a world can have (its hard capacity bound).
 */
#define WEFT_ENTITY_MAX 0x7fffffffu

/** Generations a slot can issue before it retires, the largest allowed. */
#define WEFT_GENERATION_MAX 0x00ffffffu

/** Default bytes per chunk. */
#define WEFT_CHUNK_SIZE_DEFAULT (16u * 1024u)
/** Smallest and largest configurable chunk sizes (powers of two). */
#define WEFT_CHUNK_SIZE_MIN (4u * 1024u)
#define WEFT_CHUNK_SIZE_MAX (1024u * 1024u)
/** Rows in one chunk never exceed this, whatever the chunk size. */
#define WEFT_CHUNK_ROWS_MAX 65536u

/** Whether checked mode is on: misuse of unchecked fast paths panics. */
typedef enum weft_checked_t {
  /** On in debug builds (NDEBUG undefined), off in release builds. */
  WEFT_CHECKED_DEFAULT = 0,
  WEFT_CHECKED_ON = 1,
  WEFT_CHECKED_OFF = 2
} weft_checked_t;

/**
 * Called when checked mode catches misuse. The default handler prints the
 * message with file and line to stderr and aborts. A handler that returns
 * lets the call continue with its release-mode behaviour (tests use this).
 * Called on the thread that misused the API.
 */
typedef void (*weft_panic_fn)(void *user, const char *file, int line,
                              const char *message);

/**
 * World configuration. Zero-initialise it and set only what you need: every
 * zero field means "default".
 */
typedef struct weft_world_config_t {
  /** Hard cap on entity slots; 0 means WEFT_ENTITY_MAX. */
  uint32_t capacity;
  /** Bytes of rows (handles and component arrays) per chunk, which sets
   * how many rows a chunk holds: a power of two in [WEFT_CHUNK_SIZE_MIN,
   * WEFT_CHUNK_SIZE_MAX]; 0 means WEFT_CHUNK_SIZE_DEFAULT. A world holds
   * up to 16 GiB of chunks (32 GiB at WEFT_CHUNK_SIZE_MAX): entity records
   * name a chunk and row in 31 bits. Growing past that fails with
   * WEFT_ELIMIT. */
  uint32_t chunk_size;
  /** Generations a slot issues before it retires; 0 means
   * WEFT_GENERATION_MAX. Small values exercise rollover in tests. */
  uint32_t max_generation;
  /** Tag (1..255) stamped into this world's handles so that another world's
   * handles are rejected; 0 picks the next tag from a process-wide counter.
   * Worlds that must produce identical handles (determinism tests) set the
   * same tag. */
  uint8_t world_tag;
  /** Checked mode; see weft_checked_t. */
  weft_checked_t checked;
  /** Panic handler for checked mode; NULL means print and abort. */
  weft_panic_fn panic;
  /** Passed to @ref panic. */
  void *panic_user;
  /** A pool whose NUMA groups home the chunk memory (pool.h): an
   * archetype's segments of chunks go to the pool's groups in turn, each
   * from its node's jemalloc arena and bound to that node, and every chunk
   * records its home node (weft_iter_t.home_node). The pool must outlive
   * the world. NULL, or a one-node pool: ordinary memory, node 0. */
  struct weft_pool_t *pool;
} weft_world_config_t;

/** Per-world counters and sizes, filled by weft_world_stats(). */
typedef struct weft_world_stats_t {
  uint32_t alive;          /**< live entities */
  uint32_t retired;        /**< slots retired by generation rollover */
  uint32_t remaining;      /**< capacity - alive - retired - staged_spawns */
  uint32_t capacity;       /**< hard capacity */
  uint32_t slots_used;     /**< slots ever handed out (high-water mark) */
  uint32_t slots_reserved; /**< slots with index memory allocated */
  uint32_t components;     /**< registered components */
  uint32_t archetypes;     /**< archetypes registered (created and not pruned by
                              weft_world_compact()), the empty one included */
  uint32_t queries;        /**< live queries */
  uint32_t chunks_live;    /**< chunks holding at least one row */
  uint32_t chunks_spare;   /**< spare chunks: empty, kept by their
                                archetypes for reuse */
  uint32_t chunk_size;     /**< bytes per chunk */
  uint64_t chunk_bytes;    /**< bytes of chunk memory owned (live + spare,
                                headers included) */
  uint64_t index_bytes;    /**< bytes of the entity index: its pages
                                (4 bytes per slot) and free stack */
  uint64_t spawns;         /**< entities spawned since creation */
  uint64_t despawns;       /**< entities despawned since creation */
  uint64_t moves;          /**< archetype moves since creation */
  uint64_t stale;          /**< calls rejected for a stale/forged handle */
  uint32_t staged_spawns;  /**< slots held by spawns not yet applied */
  uint64_t commands;       /**< commands and staged calls applied */
  uint64_t commands_stale; /**< commands dropped for a stale handle */
  uint64_t commands_dropped; /**< staged changes dropped (cascade, full) */
  uint64_t drain_waves;      /**< drain waves run */
  uint64_t allocs;           /**< heap allocations made by the world */
  uint64_t alloc_bytes;      /**< bytes requested by those allocations */
} weft_world_stats_t;

/**
 * Creates a world.
 *
 * Any thread. @p config may be NULL for all defaults. On success *out owns
 * the new world until weft_world_destroy(). Returns WEFT_EINVAL for a bad
 * configuration (chunk size not a power of two in range, capacity above
 * WEFT_ENTITY_MAX, max_generation above WEFT_GENERATION_MAX) or WEFT_ENOMEM.
 */
int weft_world_create(const weft_world_config_t *config, weft_world_t **out);

/**
 * Destroys a world and everything it owns: chunks, queries, the index.
 * Its memory goes back to the kernel, the pages it kept resident too.
 * Every handle, query and pointer obtained from it dies with it.
 * First it runs the Shutdown systems that have not run yet (phase.h;
 * weft_world_shutdown() in pipeline.h runs them earlier and reports
 * their failures, which this call cannot), unless it is called from a
 * callback or inside a deferred scope. Owner thread only. NULL is a no-op.
 */
void weft_world_destroy(weft_world_t *world);

/**
 * Pre-allocates the entity index for @p entities slots: the records, and
 * room on the free stack for that many despawned slots, so that spawning
 * and despawning up to that many entities allocates no index memory
 * (without a reserve, the free stack grows when the number of free slots
 * reaches a new peak). Records never move, so pointers into chunks stay
 * valid. Owner thread. Returns WEFT_EFULL if @p entities exceeds the
 * capacity, WEFT_ENOMEM on allocation failure (what was reserved before
 * stays; nothing else changes).
 */
int weft_world_reserve(weft_world_t *world, uint32_t entities);

/**
 * Empties the world without freeing memory: every entity dies, every chunk
 * stays with its archetype as a spare, and every earlier handle becomes
 * stale (slots come back in index order with their generation advanced).
 * Slots whose generations are exhausted stay retired (a handle is never
 * issued twice). Components, archetypes and queries survive. Owner thread.
 * Returns 0, WEFT_EINVAL for NULL, or WEFT_EBUSY while a deferred or
 * iteration scope is open (nothing changes then).
 */
int weft_world_clear(weft_world_t *world);

/**
 * Returns chunk memory that no entity uses to the allocator. Empty chunks
 * normally stay with their archetype so that it can grow again without
 * allocating; trimming frees each archetype's trailing segments whose
 * chunks are all empty. Returns the number of bytes freed. With weft's
 * jemalloc (the default build), memory a world frees otherwise stays
 * resident with it (its pages are not handed back to the kernel while it
 * runs, so that reusing them never faults them in again); trimming hands
 * those pages back too. Owner thread; inside a
 * deferred or iteration scope it frees nothing and returns 0.
 */
uint64_t weft_world_trim(weft_world_t *world);

/** Number of live entities. Any thread that may read the world. */
uint32_t weft_world_count(const weft_world_t *world);

/** Fills @p out with the world's counters. Reader threads. */
void weft_world_stats(const weft_world_t *world, weft_world_stats_t *out);

/**
 * A number that changes whenever an entity is spawned or despawned, a row
 * moves to another archetype or place, or a relationship edge is added or
 * removed, and stays the same otherwise. While it stays the same, pointers
 * from weft_get() and weft_get_mut() stay valid and edges stay as they
 * were, so a system may cache both and rebuild its caches only when it
 * moves. Reader threads; 0 for NULL.
 */
uint64_t weft_world_structure_version(const weft_world_t *world);

/**
 * Describes the most recent failure on this world: the message and, in debug
 * builds, the file and line of the check that failed. The string is owned by
 * the world and valid until the next failing call on it. Owner thread.
 */
const char *weft_world_last_error(const weft_world_t *world);

/**
 * Records a failure on @p world, as the library's own checks do, and
 * returns @p code: weft_world_last_error() then reads "NAME: message", NAME
 * being @p code's name (weft_strerror_name()). For systems and extensions
 * built on the public API, so that a configuration they refuse is
 * explained and not only coded. @p fmt is a printf format; the message is
 * cut to the world's buffer. A NULL world or format records nothing.
 * Owner thread, like weft_world_last_error(): not from system callbacks
 * (return the code from the callback instead).
 */
int weft_world_fail(weft_world_t *world, int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/** Parts of a world's state weft_world_digest_ex() hashes. */
enum {
  /** The components registered (names, sizes), the signature and rows in
   * order (handles and component bytes, disabled components included) of
   * every archetype that holds rows, whatever its id, and the entity index
   * (generations, free order, retirement; not which chunk a row sits in),
   * so that weft_world_compact() leaves it as it was. */
  WEFT_DIGEST_ENTITIES = 1u << 0,
  /** Every resource's name, size and bytes, in id order; a resource
   * marked WEFT_RESOURCE_SCRATCH (resource.h) counts by name and size
   * only. */
  WEFT_DIGEST_RESOURCES = 1u << 1,
  /** Every event channel's name, event size and published events in
   * order, and the events staged for the next sync point (by key, channel
   * and bytes, whichever worker staged them). */
  WEFT_DIGEST_EVENTS = 1u << 2,
  /** The world's random seed and every named stream's state (by name,
   * whatever the order the streams were created in). */
  WEFT_DIGEST_RANDOM = 1u << 3,
  /** All of the above: what weft_world_digest() hashes. */
  WEFT_DIGEST_ALL = 0xfu
};

/**
 * A stable 64-bit hash of the parts of the world's state named in
 * @p parts (WEFT_DIGEST_* bits; unknown bits are ignored, 0 hashes
 * nothing). Two worlds built by the same program, with the same
 * components, resources and channels registered in the same order and the
 * same world tag, have the same digest whatever the thread count; any
 * difference in the parts hashed changes it with overwhelming
 * probability. Component and resource bytes are hashed raw, padding
 * included. Systems, phases, run conditions, observers, queries and the
 * pipeline's settings and clock are not state here. Reader threads, while
 * nothing writes; O(world size). 0 for a NULL world.
 */
uint64_t weft_world_digest_ex(const weft_world_t *world, uint32_t parts);

/**
 * weft_world_digest_ex(world, WEFT_DIGEST_ALL): entities and components,
 * resources, event channels (pending events included) and random
 * streams, so that two worlds with equal digests also run the next tick
 * alike. Reader threads, while nothing writes; O(world size).
 */
uint64_t weft_world_digest(const weft_world_t *world);

/**
 * The result of the last drain that ran at the end of an iteration scope
 * (0 or a negative WEFT_E* code). Owner thread.
 */
int weft_world_last_drain(const weft_world_t *world);

/**
 * The pool the world was created with (weft_world_config_t.pool), or NULL.
 * Any thread. The caller does not own it; it outlives the world.
 */
struct weft_pool_t *weft_world_pool(const weft_world_t *world);

/** True if checked mode is on for this world. Any thread. */
bool weft_world_checked(const weft_world_t *world);

/** The tag (1..255) stamped into this world's handles. Any thread. */
uint8_t weft_world_tag(const weft_world_t *world);

/** The world's current change version. Any thread while no frame runs. */
uint32_t weft_world_change_version(const weft_world_t *world);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_WORLD_H */
