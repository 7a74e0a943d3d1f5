/* SPDX-License-Identifier: MIT */
/**
 * @file weft/query.h
 * @brief Cached queries and chunk-at-a-time iteration.
 *
 * A query names the components an entity must have (include), must not have
 * (exclude), must have at least one of (any) and must have disabled
 * (disabled). It caches the matching archetypes and picks up archetypes
 * created later. Iteration hands out one chunk at a time as plain arrays, so
 * the inner loop of a system is an ordinary C loop.
 *
 * A disabled component counts as absent for include, any and exclude terms
 * unless the query sets WEFT_QUERY_MATCH_DISABLED, in which case presence is
 * what counts.
 */
#ifndef WEFT_QUERY_H
#define WEFT_QUERY_H

#include <stdbool.h>
#include <stdint.h>

#include "weft/component.h"
#include "weft/entity.h"
#include "weft/world.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Terms per list in a query descriptor. */
#define WEFT_QUERY_MAX_TERMS 16u

/** Include/any/exclude terms look at presence, enabled or disabled alike. */
#define WEFT_QUERY_MATCH_DISABLED 0x1u

/**
 * Iteration hands out runs of consecutive chunks whose arrays continue
 * each other in memory (an archetype's chunks are allocated column-major
 * in segments) instead of one chunk at a time: `count` can then exceed the
 * rows of a chunk. A streaming loop pays the per-chunk cost once per run.
 * Leave it off where work is split or tracked per chunk.
 */
#define WEFT_QUERY_CHUNK_RUNS 0x2u

/** An opaque cached query owned by its world. */
typedef struct weft_query_t weft_query_t;

/**
 * What a group_by callback is told about an archetype the query matches.
 * It lives on the caller's stack for the duration of the callback.
 */
typedef struct weft_archetype_view_t {
  uint32_t id;          /**< the archetype's id (0: the empty signature; an id
                             weft_world_compact() freed is reused) */
  uint32_t ncomponents; /**< present components, tags included */
  const weft_component_t *components; /**< their ids, ascending */
} weft_archetype_view_t;

/**
 * Assigns a matching archetype its group (see weft_query_desc_t.group_by).
 * Called once per archetype, on the owner thread, when the query is
 * created or the archetype is (which may be inside a drain): it must not
 * change the world (no structural calls, no query creation), only read
 * the view and its own @p ctx. Must be a pure function of the view: the
 * groups decide iteration order, which has to be the same in every run.
 */
typedef uint64_t (*weft_group_fn)(weft_world_t *world,
                                  const weft_archetype_view_t *arch, void *ctx);

/**
 * A (relation, target) pair term of a query: entities with the edge
 * (@p rel, @p target) of a dense relation (weft/relation.h). A list of
 * pairs ends at the first entry whose @p rel is 0.
 */
typedef struct weft_pair_t {
  weft_component_t rel; /**< a dense relation's id; 0 ends the list */
  uint32_t pad_;        /**< zero */
  weft_entity_t target; /**< a live entity when the query is created */
} weft_pair_t;

/**
 * Query terms. Each list is zero-terminated (component ids start at 1), so
 * `{.include = {pos, vel}}` is a complete descriptor.
 *
 * Pair terms select by edge: `pairs` lists (relation, target) pairs an
 * entity must have, `exclude_pairs` pairs it must not have. They work
 * for dense relations only, whose sources are placed in archetypes by
 * their pairs, so a pair term costs nothing per entity: it matches whole
 * archetypes. A pair term on a relation registered WEFT_RELATION_SPARSE,
 * or on an id that is not a relation, fails the query's creation with
 * WEFT_EINVAL; a target that is not live fails it with WEFT_ESTALE (a
 * counted stale handle). A target that dies later leaves the query
 * matching nothing through that term (its sources lost their edges).
 * The payload of an exclusive dense relation is a column: include the
 * relation id among `include` (or read it with weft_iter_column_of()),
 * and weft_iter_target() names the target of the chunk's pair.
 */
typedef struct weft_query_desc_t {
  weft_component_t include[WEFT_QUERY_MAX_TERMS + 1];  /**< all required */
  weft_component_t exclude[WEFT_QUERY_MAX_TERMS + 1];  /**< none allowed */
  weft_component_t any[WEFT_QUERY_MAX_TERMS + 1];      /**< at least one */
  weft_component_t disabled[WEFT_QUERY_MAX_TERMS + 1]; /**< present, disabled */
  weft_pair_t pairs[WEFT_QUERY_MAX_TERMS + 1];         /**< edges required */
  weft_pair_t exclude_pairs[WEFT_QUERY_MAX_TERMS + 1]; /**< edges refused */
  uint32_t flags; /**< WEFT_QUERY_MATCH_DISABLED, WEFT_QUERY_CHUNK_RUNS */
  /**
   * NULL: one group, 0. Otherwise each matching archetype's group, asked
   * once: iteration (weft_query_iter(), a system's visits, query-wide
   * commands) visits groups in ascending order, archetypes in creation
   * order inside a group.
   */
  weft_group_fn group_by;
  void *group_ctx; /**< passed to group_by */
} weft_query_desc_t;

/**
 * Private: one entry of a query's flat cache of chunks, followed in memory
 * by one array pointer per include term (at least one, NULL when there is
 * no include term). weft_iter_next() copies it into the iterator. May
 * change between releases.
 */
typedef struct weft_iter_slot_t_ {
  void *chunk;
  const void *match;
  void *const *bases; /* the chunk's array bases */
  uint32_t count;
  uint32_t home_node;
  const weft_entity_t *entities;
} weft_iter_slot_t_;

/**
 * A chunk-at-a-time iterator. It lives on the caller's stack; starting and
 * advancing it allocates nothing. The public fields are valid after
 * weft_iter_next() returned true; the rest is private.
 */
typedef struct weft_iter_t {
  uint32_t count;                /**< rows in this chunk (> 0) */
  uint32_t home_node;            /**< NUMA node the chunk's memory lives on */
  const weft_entity_t *entities; /**< count handles */
  void *columns[WEFT_QUERY_MAX_TERMS]; /**< include term i's array, NULL for
                                          tags and SoA components */
  /* Private: may change between releases. */
  const weft_iter_slot_t_ *slot_; /* next flat-cache slot to hand out */
  /* Where weft_iter_next() stops handing out slots inline: slot_stop_, or
   * slot_ in checked mode, whose per-chunk check is out of line. */
  const weft_iter_slot_t_ *slot_end_;
  const weft_iter_slot_t_ *slot_stop_; /* end of the query's slots */
  const weft_iter_slot_t_ *slot0_;     /* the first slot */
  /* Off the flat cache (walking the matches, a system's chunk): the
   * current chunk's array bases, and its archetype's SoA layout per
   * include term (first field's array[WEFT_QUERY_MAX_TERMS], then field
   * counts[WEFT_QUERY_MAX_TERMS]) for the inline weft_iter_field(s). On
   * the flat cache the last slot handed out has both, and soa_ is NULL. */
  void *const *bases_;
  const uint16_t *soa_;
  uint32_t term_count_;
  uint32_t slot_bytes_; /* bytes per slot */
  const uint64_t *world_version_;
  uint64_t version_;
  void *chunk_; /* current chunk (its header names the archetype) when
                   walking the matches or a view; NULL on the flat cache,
                   where the last slot handed out names it */
  uint32_t chunk_index_;
  const weft_world_t *world_;
  const weft_component_t *terms_;
  void *const *chunks_;    /* the current archetype's chunk list */
  const void *match_;      /* the query's cache entry being walked */
  const void *match_next_; /* the next entry to look at */
  const void *match_end_;
  uint32_t nchunks_;
  uint32_t row0_;
  uint32_t runs_;     /* nonzero: hand out runs of contiguous chunks */
  uint32_t scoped_;   /* nonzero: holds an iteration scope (command.h), taken
                         after unwind number scoped_ - 1 */
  const void *query_; /* the query iterated (its open iterations count) */
  uint32_t counted_;  /* nonzero: counted in the query, else the world's
                         first open iteration (core/txn.h, solo_query) */
} weft_iter_t;

/**
 * Creates a cached query. Owner thread. *out belongs to the world, lives
 * until weft_query_destroy() or the world's destruction. Returns WEFT_EINVAL
 * (no include, any or disabled term; a component both included and
 * excluded), WEFT_ENOCOMP, WEFT_ETOOMANY or WEFT_ENOMEM.
 */
int weft_query_create(weft_world_t *world, const weft_query_desc_t *desc,
                      weft_query_t **out);

/**
 * Destroys a query. Owner thread; NULL is a no-op returning 0. Returns
 * WEFT_EBUSY, destroying nothing, while an iteration of the query is open
 * (started and not yet ended by weft_iter_next() returning false,
 * weft_iter_close() or weft_world_unwind()), in every build: its iterator
 * walks the query's memory.
 */
int weft_query_destroy(weft_query_t *query);

/**
 * Creates a temporary query: the archetypes that match now, frozen. It
 * reads their live rows (spawns into them show up, despawns leave), but an
 * archetype created later never joins, and the world keeps no
 * subscription for it, so it costs nothing when archetypes are created
 * and little to make and destroy (one walk over the archetypes, one
 * allocation for the query and one for its matches). It iterates by
 * walking its matches (no flat cache) and cannot serve an ENTER/LEAVE
 * observer. group_by applies as for a cached query.
 *
 * An archetype is freed only when the call that created it failed before
 * any row landed in it (the rollback of core/archetype.c) or when
 * weft_world_compact() prunes it (it is empty); the world tells its
 * temporary queries then too, so they forget it and never dangle, and
 * they never adopt an archetype that later reuses its id. Owner thread. *out
 * belongs to the world and lives until weft_query_destroy() or the world's
 * destruction. Same errors as weft_query_create().
 */
int weft_query_create_temp(weft_world_t *world, const weft_query_desc_t *desc,
                           weft_query_t **out);

/** Whether @p query was made by weft_query_create_temp(). Reader threads. */
bool weft_query_is_temp(const weft_query_t *query);

/** Number of entities the query currently matches. Reader threads. */
uint32_t weft_query_count(const weft_query_t *query);

/**
 * Rows of the query's archetypes in group @p group (a query without
 * group_by has one group, 0). Reader threads.
 */
uint32_t weft_query_group_count(const weft_query_t *query, uint64_t group);

/**
 * Lists the query's non-empty groups (those with at least one row) in
 * ascending order: the first min(n, @p cap) go to out[0..), and n is
 * returned (call with cap 0 to size the array; @p out may then be NULL).
 * Reader threads; the list is the world's state at the call.
 */
uint32_t weft_query_groups(const weft_query_t *query, uint64_t *out,
                           uint32_t cap);

/** Number of archetypes the query caches (matching, empty or not). Reader
 * threads. */
uint32_t weft_query_archetype_count(const weft_query_t *query);

/**
 * Starts iterating @p query. Reader threads; several iterators may run at
 * once. The iteration opens a scope (see command.h): structural calls made
 * on the owner thread while it runs are staged, and applied when the last
 * open scope closes. The scope closes when weft_iter_next() returns false
 * or at weft_iter_close(); a loop that stops early must call the latter (or
 * weft_world_unwind()), or later structural calls keep staging.
 */
void weft_query_iter(const weft_query_t *query, weft_iter_t *it);

/**
 * Starts iterating group @p group of @p query alone: its archetypes in
 * creation order, chunks in order, as weft_query_iter() would visit them
 * within the whole query. A group the query does not have yields nothing.
 * Threads, scope and end as weft_query_iter().
 */
void weft_query_iter_group(const weft_query_t *query, uint64_t group,
                           weft_iter_t *it);

/* Private: the inline step's branch hint. Without it gcc 12 moves the
 * hand-out off the loop's straight line, behind a taken branch, once the
 * version compare joins the condition. */
#if defined(__GNUC__)
#define WEFT_ITER_LIKELY_(x) __builtin_expect(!!(x), 1)
#else
#define WEFT_ITER_LIKELY_(x) (x)
#endif

/** Private: the out-of-line part of weft_iter_next(). */
bool weft_iter_next_slow_(weft_iter_t *it);

/**
 * Advances to the next non-empty chunk. Returns false at the end, closing
 * the iteration's scope (which may apply staged changes; the result of that
 * drain is weft_world_last_drain()). The thread that started the
 * iteration.
 *
 * An iteration cannot see the world change structurally (structural calls
 * stage while it is open) unless weft_world_unwind() ended its scope:
 * after an unwind the iterators it orphaned are invalid, and in every
 * build their next step returns false, with the reason in
 * weft_world_last_error() (checked mode also reports it to the panic
 * handler), as do the accessors below (NULL or 0), instead of walking
 * memory the world may have freed since.
 *
 * Inline: handing out a chunk of the query's flat cache is a handful of
 * loads and stores and one compare of the world's structural version. The
 * end of the iteration, iterators that walk the matches and every chunk
 * in checked mode take the call.
 */
static inline bool weft_iter_next(weft_iter_t *it) {
  const weft_iter_slot_t_ *s = it ? it->slot_ : (const weft_iter_slot_t_ *)0;
  if (WEFT_ITER_LIKELY_(s != (it ? it->slot_end_ : s) &&
                        *it->world_version_ == it->version_)) {
    void *const *cols = (void *const *)(s + 1);
    it->count = s->count;
    it->home_node = s->home_node;
    it->entities = s->entities;
    /* A slot holds at least one column (NULL without include terms). */
    it->columns[0] = cols[0];
    for (uint32_t t = 1, n = it->term_count_; t < n; t++)
      it->columns[t] = cols[t];
    it->slot_ =
        (const weft_iter_slot_t_ *)((const unsigned char *)s + it->slot_bytes_);
    return 1;
  }
  return weft_iter_next_slow_(it);
}

/**
 * Ends an iteration early, closing its scope. Safe to call after the end
 * or twice. Same thread as the iteration.
 */
void weft_iter_close(weft_iter_t *it);

/** The array of include term @p term (as it->columns[term]). Same thread
 * as the iteration; valid while the chunk is current. */
static inline void *weft_iter_column(const weft_iter_t *it, uint32_t term) {
  return term < WEFT_QUERY_MAX_TERMS ? it->columns[term] : (void *)0;
}

/**
 * Private: the SoA layout (see soa_) and array bases of the chunk @p it is
 * on, or NULL when only the out-of-line accessors know them (views of part
 * of a chunk, an iterator not on a chunk).
 */
static inline const uint16_t *weft_iter_soa_(const weft_iter_t *it,
                                             void *const **bases) {
  if (it->world_version_ && *it->world_version_ != it->version_)
    return (const uint16_t *)0; /* invalidated: see weft_iter_next() */
  if (it->soa_) {
    *bases = it->bases_;
    return it->soa_;
  }
  if (it->slot_ == it->slot0_)
    return (const uint16_t *)0;
  /* On the flat cache: the slot handed out last (its match starts with
   * the layout). */
  const weft_iter_slot_t_ *s =
      (const weft_iter_slot_t_ *)((const unsigned char *)it->slot_ -
                                  it->slot_bytes_);
  *bases = s->bases;
  return (const uint16_t *)s->match;
}

/** Private: the out-of-line part of weft_iter_field(). */
void *weft_iter_field_slow_(const weft_iter_t *it, uint32_t term,
                            uint32_t field);

/**
 * The array of field @p field of include term @p term when that component is
 * stored field-level SoA; NULL otherwise. In checked mode an out-of-range
 * term or field panics. Same thread as the iteration; the array lives as
 * long as the chunk is current.
 *
 * Inline on a query iterator or a system's chunk (two loads); views of
 * part of a chunk and misuse take the call.
 */
static inline void *weft_iter_field(const weft_iter_t *it, uint32_t term,
                                    uint32_t field) {
  void *const *bases = (void *const *)0;
  const uint16_t *soa = it ? weft_iter_soa_(it, &bases) : (const uint16_t *)0;
  if (soa && term < it->term_count_ && field < soa[WEFT_QUERY_MAX_TERMS + term])
    return bases[soa[term] + field];
  return weft_iter_field_slow_(it, term, field);
}

/** Private: the out-of-line part of weft_iter_fields(). */
uint32_t weft_iter_fields_slow_(const weft_iter_t *it, uint32_t term,
                                void **out);

/**
 * Stores the arrays of every field of SoA include term @p term in
 * out[0..n) and returns n, the component's field count (out must hold
 * WEFT_MAX_FIELDS pointers); returns 0 when the term is not stored SoA.
 * One call per term instead of one per field keeps the per-chunk cost of
 * an SoA loop low. Field order is the registration order. Same thread as
 * the iteration; the arrays live as long as the chunk is current.
 *
 * Inline on a query iterator or a system's chunk; views of part of a
 * chunk take the call.
 */
static inline uint32_t weft_iter_fields(const weft_iter_t *it, uint32_t term,
                                        void **out) {
  void *const *bases = (void *const *)0;
  const uint16_t *soa = it ? weft_iter_soa_(it, &bases) : (const uint16_t *)0;
  if (soa && out && term < it->term_count_) {
    void *const *src = bases + soa[term];
    uint32_t n = soa[WEFT_QUERY_MAX_TERMS + term];
    for (uint32_t f = 0; f < n; f++)
      out[f] = src[f];
    return n;
  }
  return weft_iter_fields_slow_(it, term, out);
}

/**
 * The array of any component @p c in the current chunk (for example an
 * `any` term), or NULL when the chunk's archetype lacks it or it is a tag
 * or SoA component. Same thread as the iteration; valid while the chunk
 * is current.
 */
void *weft_iter_column_of(const weft_iter_t *it, weft_component_t c);

/**
 * The target of dense relation @p rel that every entity of the current
 * chunk has an edge to (its archetype's pair): the first in ascending
 * handle order when they have several, WEFT_ENTITY_NULL when they have
 * none, @p rel is not a dense relation or no chunk is current. Same
 * thread as the iteration.
 */
weft_entity_t weft_iter_target(const weft_iter_t *it, weft_component_t rel);

/** True if the current chunk's entities have @p c enabled. Same thread as
 * the iteration. */
bool weft_iter_enabled(const weft_iter_t *it, weft_component_t c);

/**
 * The change version of component @p c in the iterator's current chunk:
 * the latest of its last write by a system and the chunk's last structural
 * change (0 when the chunk lacks @p c or it is a tag). Reader threads.
 */
uint32_t weft_iter_version(const weft_iter_t *it, weft_component_t c);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_QUERY_H */
