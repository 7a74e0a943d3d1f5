/* SPDX-License-Identifier: MIT */
/**
 * @file weft/entity.h
 * @brief Entity handles and per-entity operations.
 *
 * A handle is 64 bits: slot index (bits 0-31), generation (bits 32-55) and
 * the owning world's tag (bits 56-63). Generations start at 1 and tags are
 * never 0, so handle 0 (WEFT_ENTITY_NULL) is never live. Every function
 * below rejects a stale, forged or other-world handle with WEFT_ESTALE (or
 * NULL/false) without reading the slot's current occupant.
 *
 * Structural functions (spawn, despawn, add, remove, enable, disable) take
 * effect at once, except inside a scope (a deferred scope, a query
 * iteration, a batch spawn, an observer callback) or when the world has
 * observers: then they stage and apply when the last scope closes (see
 * command.h). A staged call returns 0 once it is recorded; a spawn returns
 * its real handle, live after the drain. With observers, a direct call
 * drains before it returns and may report WEFT_ECASCADE.
 */
#ifndef WEFT_ENTITY_H
#define WEFT_ENTITY_H

#include <stdbool.h>
#include <stdint.h>

#include "weft/component.h"
#include "weft/world.h"

#ifdef __cplusplus
extern "C" {
#endif

/** A generational entity handle. */
typedef uint64_t weft_entity_t;

/** Never a live entity. */
#define WEFT_ENTITY_NULL ((weft_entity_t)0)

/** The slot index of a handle. Any thread. */
static inline uint32_t weft_entity_index(weft_entity_t e) {
  return (uint32_t)e;
}
/** The generation of a handle. Any thread. */
static inline uint32_t weft_entity_generation(weft_entity_t e) {
  return (uint32_t)(e >> 32) & 0x00ffffffu;
}
/** The world tag of a handle. Any thread. */
static inline uint32_t weft_entity_tag(weft_entity_t e) {
  return (uint32_t)(e >> 56);
}

struct weft_iter_t;

/**
 * Fills one chunk range of a batch spawn. @p view describes the range:
 * view->count rows, view->entities the new handles, and column i of the
 * view is the storage of comps[i] (NULL for tags; SoA components expose
 * fields through weft_iter_field()). @p first is the batch-relative index of
 * the range's first entity. Called on the spawning thread.
 */
typedef void (*weft_fill_fn)(void *user, const struct weft_iter_t *view,
                             uint32_t first);

/** Spawns an entity with no components. Owner thread. */
int weft_spawn(weft_world_t *world, weft_entity_t *out);

/**
 * Spawns an entity with the zero-terminated component list @p comps (at
 * most 64 ids; duplicates are an error). @p values may be NULL, or hold one
 * pointer per component (NULL entries and tags are zero-filled). On failure
 * nothing is spawned. Returns WEFT_EFULL/WEFT_ERETIRED when no slot is
 * left, WEFT_ENOCOMP, WEFT_EINVAL or WEFT_ENOMEM. Owner thread.
 */
int weft_spawn_with(weft_world_t *world, const weft_component_t *comps,
                    const void *const *values, weft_entity_t *out);

/**
 * Spawns @p n entities with the zero-terminated component list @p comps,
 * calling @p fill once per chunk range (NULL: zero-filled). Fresh slots are
 * taken above the high-water mark while capacity allows so that the ids are
 * contiguous; otherwise freed slots are reused. If @p out is non-NULL it
 * receives the n handles. All or nothing: on error none are spawned.
 * Owner thread; @p fill runs on it too.
 */
int weft_spawn_batch(weft_world_t *world, uint32_t n,
                     const weft_component_t *comps, weft_fill_fn fill,
                     void *user, weft_entity_t *out);

/**
 * Spawns an entity with a given handle, for restoring saved worlds: the
 * slot and generation of @p handle (its tag bits are ignored: the entity
 * gets this world's tag), the components and values as weft_spawn_with()
 * takes them (requirements included, weft/require.h). *out (may be NULL)
 * receives the new handle. The slot must be free and the generation newer
 * than the last the slot issued, so that a handle a user still holds
 * stays a miss; a slot above the high-water mark grows the index, the
 * slots it skips becoming free (issued lowest first by later spawns).
 * Later spawns never return the slot while the entity lives. Inside a
 * scope or with observers the spawn is staged like weft_spawn_with()'s,
 * its slot taken at once. Owner thread.
 *
 * Errors change nothing: WEFT_EINVAL (NULL world, generation 0 or above
 * the world's max_generation, slot beyond the capacity, a bad list),
 * WEFT_EEXIST (the slot holds a live or staged entity), WEFT_ESTALE (the
 * slot is retired, or the generation is not newer than its last),
 * WEFT_ENOCOMP, WEFT_ETOOMANY, WEFT_EFULL / WEFT_ERETIRED (no slot
 * left), WEFT_ENOMEM.
 */
int weft_spawn_at(weft_world_t *world, weft_entity_t handle,
                  const weft_component_t *comps, const void *const *values,
                  weft_entity_t *out);

/**
 * Spawns @p n entities with the given handles (see weft_spawn_at()) and
 * the component list @p comps, like weft_spawn_batch(): @p fill runs once
 * per chunk range (NULL: zero-filled, plus requirement defaults), and
 * @p out (may be NULL) receives the n handles. Every handle is validated
 * before anything changes, two handles naming one slot included
 * (WEFT_EINVAL); the errors are weft_spawn_at()'s, plus WEFT_EBUSY inside
 * a scope. All or nothing. Owner thread; @p fill runs on it too.
 */
int weft_spawn_batch_at(weft_world_t *world, uint32_t n,
                        const weft_entity_t *handles,
                        const weft_component_t *comps, weft_fill_fn fill,
                        void *user, weft_entity_t *out);

/**
 * Destroys an entity and its components. Its slot's generation advances;
 * when the generations are exhausted the slot retires for good.
 * WEFT_ESTALE for a handle that is not live. Owner thread.
 */
int weft_despawn(weft_world_t *world, weft_entity_t e);

/** True if @p e is a live entity of this world. Reader threads. */
bool weft_is_alive(const weft_world_t *world, weft_entity_t e);

/**
 * Adds component @p c to @p e, zero-filled or copied from @p value (may be
 * NULL). If @p e already has @p c this is a no-op that keeps the current
 * value (use weft_set() to overwrite) and returns 0. Owner thread.
 */
int weft_add(weft_world_t *world, weft_entity_t e, weft_component_t c,
             const void *value);

/** Removes @p c from @p e; a no-op returning 0 if absent. Owner thread. */
int weft_remove(weft_world_t *world, weft_entity_t e, weft_component_t c);

/**
 * Copies @p value into component @p c of @p e, adding the component first
 * if it is missing. Works for SoA components (the value is scattered into
 * the field arrays). Allocates nothing when the component is present. The
 * entity's chunk is marked changed for @p c (system.h, "Change
 * versions"). Owner thread.
 */
int weft_set(weft_world_t *world, weft_entity_t e, weft_component_t c,
             const void *value);

/**
 * Copies component @p c of @p e into @p out (gathering SoA fields).
 * Returns WEFT_ESTALE, WEFT_ENOCOMP, WEFT_ENOTFOUND or WEFT_ETAG. Reader
 * threads.
 */
int weft_read(const weft_world_t *world, weft_entity_t e, weft_component_t c,
              void *out);

/* Private: the layout the inline weft_get() reads. May change between
 * releases; the library checks at compile time that it matches its own. */
#if defined(__GNUC__)
#define WEFT_GET_ALIAS_ __attribute__((__may_alias__))
#else
#define WEFT_GET_ALIAS_
#endif
#define WEFT_GET_PAGE_BITS_ 12u
#define WEFT_GET_REC_LOC_ 0x80000000u
#define WEFT_GET_SLOT_BITS_ 6u

/** Private: the entity index fields a world begins with. */
typedef struct WEFT_GET_ALIAS_ weft_get_view_t_ {
  const uint32_t *const *pages_; /* records, in pages of 4096 */
  const unsigned char *table_;   /* chunk table, 64-byte entries */
  uint32_t hwm_;                 /* slots ever issued */
  uint32_t slot_shift_;          /* a located record's row bits, less 6 */
  uint32_t row_mask_;
  uint32_t slot_mask_; /* record >> slot_shift_ & this: entry offset */
} weft_get_view_t_;

/** Private: an archetype's entry for a component: where a chunk table
 * entry holds the base of its array (a NULL base: none there), and the
 * bytes per row. */
typedef struct WEFT_GET_ALIAS_ weft_get_col_t_ {
  uint16_t off_;
  uint16_t size_;
} weft_get_col_t_;

/** Private: the first fields of a chunk table entry. */
typedef struct WEFT_GET_ALIAS_ weft_get_slot_t_ {
  const weft_entity_t *entities_; /* the handle of every row */
  const weft_get_col_t_ *cols_;   /* the owner's entries, by component */
} weft_get_slot_t_;

/** Private: weft_get() for what its inline part does not resolve: misses
 * (counted in the stats' stale handles when the handle is not live) and
 * values whose array base the chunk table entry does not hold. */
const void *weft_get_slow_(const weft_world_t *world, weft_entity_t e,
                           weft_component_t c);

/**
 * Returns a read-only pointer to component @p c of @p e, or NULL if the
 * handle is stale, the component unknown or absent, a tag, or stored
 * field-level SoA (use weft_get_field()). Disabled components are still
 * readable. Reader threads; the pointer points into the world's storage
 * and is valid until the next structural change.
 *
 * Inline: a hit on one of the first four arrays of a chunk (every
 * component of an archetype with up to four arrays) is a handful of
 * loads in the caller, where the compiler can overlap the cache misses of
 * consecutive calls. Everything else, misses included, takes the call;
 * a stale, forged or foreign handle is never mistaken for a live one (a
 * hit requires the row to hold exactly this handle, tag included).
 */
static inline const void *weft_get(const weft_world_t *world, weft_entity_t e,
                                   weft_component_t c) {
  const weft_get_view_t_ *v = (const weft_get_view_t_ *)(const void *)world;
  const uint32_t i = (uint32_t)e;
  if (world && i < v->hwm_ && c <= WEFT_MAX_COMPONENTS) {
    const uint32_t r = v->pages_[i >> WEFT_GET_PAGE_BITS_]
                                [i & ((1u << WEFT_GET_PAGE_BITS_) - 1u)];
    if (r & WEFT_GET_REC_LOC_) {
      const unsigned char *s =
          v->table_ + (r >> v->slot_shift_ & v->slot_mask_);
      const weft_get_slot_t_ *slot = (const weft_get_slot_t_ *)(const void *)s;
      const uint32_t row = r & v->row_mask_;
      const weft_get_col_t_ col = slot->cols_[c];
      const unsigned char *base =
          *(const unsigned char *const *)(const void *)(s + col.off_);
      if (base && slot->entities_[row] == e)
        return base + (size_t)row * col.size_;
    }
  }
  return weft_get_slow_(world, e, c);
}

/**
 * Resolves @p n handles at once: out[i] receives what weft_get() would
 * return for handles[i] (NULL on any miss). The lookups are pipelined with
 * prefetches so that the cache misses of independent handles overlap,
 * which makes random access over a large world several times faster than
 * calling weft_get() in a loop; the rows are prefetched too, so reading
 * them right after the call hits the cache for blocks of up to a few
 * hundred handles. Returns the number of hits. Reader threads; pointers
 * are valid until the next structural change.
 */
uint32_t weft_get_many(const weft_world_t *world, const weft_entity_t *handles,
                       uint32_t n, weft_component_t c, const void **out);

/** Most components weft_get_many_n() resolves in one call. */
#define WEFT_GET_MANY_MAX 8u

/**
 * weft_get_many() for @p k components at once (1 to WEFT_GET_MANY_MAX):
 * out[i * k + j] receives what weft_get() would return for handles[i] and
 * comps[j]. Each handle is resolved once, so reading several components of
 * the same random entities costs little more than reading one. @p out has
 * room for n * k pointers. Returns the number of non-NULL pointers written;
 * 0, writing nothing, for a NULL argument or k out of range. Reader
 * threads; pointers are valid until the next structural change.
 */
uint32_t weft_get_many_n(const weft_world_t *world,
                         const weft_entity_t *handles, uint32_t n,
                         const weft_component_t *comps, uint32_t k,
                         const void **out);

/**
 * What weft_get_many_ex() does besides weft_get_many_n(). All zero (or a
 * NULL pointer to it) means nothing more.
 */
typedef struct weft_get_many_opts_t {
  /**
   * Bit j set: comps[j] is only addressed, its value read or written later
   * (perhaps on another thread), so its rows are not prefetched. A row
   * prefetched into this core's cache and then written from another core
   * costs that core a transfer; one not read at all costs bandwidth.
   */
  uint32_t address_only;
  /** The component (or tag) that has_out reports on. */
  weft_component_t has;
  /** When not NULL, has_out[i] receives what weft_has() would return for
   * handles[i] and `has`, from the same lookup as the pointers. */
  bool *has_out;
  /**
   * Bit j set: comps[j] is written through the pointers returned for it
   * (cast the const away). Every chunk holding such a row gets its change
   * version for comps[j] stamped, so that systems with a `changed` filter
   * see the writes (system.h, "Change versions"). Pool workers may make
   * such calls at once, over rows of the same chunks.
   */
  uint32_t write;
} weft_get_many_opts_t;

/**
 * weft_get_many_n() with options (@p opts, may be NULL): rows not to
 * prefetch, and weft_has() for one more component in the same pass, which
 * saves a second walk over the handles when a tag decides what the
 * pointers are used for. @p k may be 0 when @p opts asks for has_out (out
 * is then not written). Returns the number of non-NULL pointers written
 * plus the number of true has_out entries; 0, writing nothing, for a NULL
 * world or handles, k above WEFT_GET_MANY_MAX, k > 0 with NULL comps or
 * out, or k = 0 without has_out. A handle that is not live counts once as
 * stale. Reader threads; pointers are valid until the next structural
 * change, and @p out and has_out are the caller's.
 */
uint32_t weft_get_many_ex(const weft_world_t *world,
                          const weft_entity_t *handles, uint32_t n,
                          const weft_component_t *comps, uint32_t k,
                          const void **out, const weft_get_many_opts_t *opts);

/** Like weft_get() but writable: the entity's chunk is marked changed for
 * @p c (system.h, "Change versions"). Owner thread; same lifetime. */
void *weft_get_mut(weft_world_t *world, weft_entity_t e, weft_component_t c);

/**
 * Like weft_get() with the reason for a miss: WEFT_ESTALE, WEFT_ENOCOMP,
 * WEFT_ENOTFOUND, WEFT_ETAG or WEFT_ESOA. Same threads and lifetime.
 */
int weft_try_get(const weft_world_t *world, weft_entity_t e, weft_component_t c,
                 const void **out);

/**
 * Returns a writable pointer to field @p field of component @p c of @p e,
 * for SoA and plain components alike, or NULL on any miss; the entity's
 * chunk is marked changed for @p c, as by weft_get_mut(). Owner thread;
 * valid until the next structural change.
 */
void *weft_get_field(weft_world_t *world, weft_entity_t e, weft_component_t c,
                     uint32_t field);

/** True if @p e is live and has @p c, enabled or disabled. Reader
 * threads. */
bool weft_has(const weft_world_t *world, weft_entity_t e, weft_component_t c);

/**
 * weft_has() for @p n handles at once: out[i] receives what weft_has()
 * would return for handles[i], with the lookups pipelined as in
 * weft_get_many(), and a handle that is not live counts once as stale, as
 * in weft_has(). Works for tags, which weft_get_many() cannot see. Returns
 * the number of true entries; 0, writing nothing, for a NULL argument.
 * Reader threads; @p out is the caller's.
 */
uint32_t weft_has_many(const weft_world_t *world, const weft_entity_t *handles,
                       uint32_t n, weft_component_t c, bool *out);

/** True if @p e is live and has @p c enabled. Reader threads. */
bool weft_is_enabled(const weft_world_t *world, weft_entity_t e,
                     weft_component_t c);

/**
 * Disables @p c on @p e: the value is kept, but queries skip the entity
 * unless they ask for disabled components. WEFT_ENOTFOUND if absent;
 * disabling a disabled component is a no-op. Owner thread.
 */
int weft_disable(weft_world_t *world, weft_entity_t e, weft_component_t c);

/** Enables a disabled component; its value is unchanged. Owner thread. */
int weft_enable(weft_world_t *world, weft_entity_t e, weft_component_t c);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_ENTITY_H */
