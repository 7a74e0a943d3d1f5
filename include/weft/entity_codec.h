/* SPDX-License-Identifier: MIT */
/**
 * @file weft/entity_codec.h
 * @brief One entity's components as bytes, for moving entities between
 * worlds (MPI ranks, processes), with the snapshot codec's layout checks.
 *
 * A codec covers a set of components: by default every component of the
 * world registered when it is created except relations (their values and
 * targets are local handles, which mean nothing in another world); a
 * subset on request. A record holds the components of that set an entity
 * has, which of them are disabled, and their bytes. Components declared
 * WEFT_COMPONENT_TRANSIENT travel as membership only: they arrive
 * zero-filled, or with the default a requirement (weft/require.h) of
 * another component of the entity gives them, as on a snapshot load.
 *
 * Components are identified by registered name, with the same field
 * fingerprints as snapshots (weft/snapshot.h): a codec's table, sent to a
 * peer once, lets the peer's codec read records written by a program
 * whose layout differs (fields added, removed or moved are migrated by
 * name; a changed field size or type is refused with WEFT_EMIGRATE).
 *
 * The formats are little-endian and versioned by the table (docs in
 * ARCHITECTURE.md, "Per-entity codec"). Malformed input (a table with a
 * bad checksum, a truncated record, an unknown component index) is an
 * error code plus the world's last error, never a crash; a decode that
 * fails leaves the world as it was.
 *
 * The codec keeps no handle to decoded entities: identity across worlds
 * is the program's (a global id component, say), carried like any other
 * component.
 */
#ifndef WEFT_ENTITY_CODEC_H
#define WEFT_ENTITY_CODEC_H

#include <stddef.h>
#include <stdint.h>

#include "weft/component.h"
#include "weft/entity.h"
#include "weft/world.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The table format version this library writes (and the newest it
 * reads). */
#define WEFT_ENTITY_CODEC_VERSION 1u

/** A per-entity codec of one world. Opaque; used by the world's owner
 * thread. */
typedef struct weft_entity_codec_t weft_entity_codec_t;

/** Which components a codec covers. */
typedef struct weft_entity_codec_config_t {
  /** NULL: every component registered when the codec is created, except
   * relations (transient ones as membership only). Otherwise the
   * only_count components listed (no relation, none twice). Copied. */
  const weft_component_t *only;
  uint32_t only_count;
} weft_entity_codec_config_t;

/**
 * Creates a codec for @p world's components (@p cfg may be NULL: the
 * default set). All of the codec's memory is allocated here (and by
 * weft_entity_codec_bind()); the encode and decode calls allocate none of
 * their own. Owner thread. *out is the caller's, freed with
 * weft_entity_codec_free(); it must not outlive the world. Returns 0,
 * WEFT_EINVAL (a NULL argument, a relation or an id twice in
 * cfg->only), WEFT_ENOCOMP (an unknown id) or WEFT_ENOMEM.
 */
int weft_entity_codec_new(weft_world_t *world,
                          const weft_entity_codec_config_t *cfg,
                          weft_entity_codec_t **out);

/** Frees a codec (NULL is a no-op). Owner thread. */
void weft_entity_codec_free(weft_entity_codec_t *codec);

/**
 * Writes the codec's table (a header and the components' names, sizes,
 * flags and field fingerprints, with an XXH3 checksum) to @p buf, to send
 * to peers once. *len receives the table's size; when @p cap is below it,
 * nothing is written and WEFT_ELIMIT is returned (call with cap 0 to size
 * the buffer; @p buf may then be NULL). Owner thread, or any thread while
 * no call changes the codec. Returns 0, WEFT_EINVAL or WEFT_ELIMIT.
 */
int weft_entity_codec_table(const weft_entity_codec_t *codec, void *buf,
                            size_t cap, size_t *len);

/**
 * Makes the codec decode records written by a peer whose table is
 * [@p table, @p table + @p len): the table is validated against this world
 * (structure and checksum, WEFT_EFORMAT; a newer format, WEFT_EVERSION; a
 * component this world does not register or the codec does not cover,
 * WEFT_ENOCOMP; a layout that cannot be migrated, WEFT_EMIGRATE) and the
 * migration plan is built. The bytes are copied. On failure the codec
 * keeps the binding it had. Until bound, a codec decodes records of its
 * own table; encoding always writes its own. Owner thread.
 */
int weft_entity_codec_bind(weft_entity_codec_t *codec, const void *table,
                           size_t len);

/** The largest record weft_entity_encode() can write with this codec
 * (an entity with every component of the set). Any thread. */
size_t weft_entity_codec_max_record(const weft_entity_codec_t *codec);

/**
 * Writes entity @p e's record to @p buf: the components of the codec's
 * set it has (enabled or disabled, and which) and their bytes (SoA
 * components gathered field by field). *len receives the record's size;
 * when @p cap is below it, nothing is written and WEFT_ELIMIT is
 * returned. Allocates nothing. Owner thread (or readers, while nothing
 * changes the world). Returns 0, WEFT_EINVAL, WEFT_ESTALE (a handle that
 * is not live: a checked miss) or WEFT_ELIMIT.
 */
int weft_entity_encode(weft_entity_codec_t *codec, weft_entity_t e, void *buf,
                       size_t cap, size_t *len);

/**
 * Spawns a new entity from the record in [@p buf, @p buf + @p len) and
 * returns its handle in *out: the record's components with their values
 * (migrated to this program's layouts), the components their
 * requirements bring, transient components zero-filled or with their
 * requirement default, and the record's disabled components disabled.
 * The whole record is checked first: a malformed one returns WEFT_EFORMAT
 * (WEFT_ENOCOMP for a component the bound table lacks a match for) and
 * spawns nothing. Allocates only what the spawn itself needs (a new
 * archetype or chunk). Owner thread; inside a scope or with observers the
 * spawn is staged as weft_spawn_with()'s is. Returns 0, those codes, or a
 * spawn's (WEFT_EFULL, WEFT_ENOMEM, ...), after which nothing is spawned.
 */
int weft_entity_decode(weft_entity_codec_t *codec, const void *buf, size_t len,
                       weft_entity_t *out);

/**
 * Overwrites existing entity @p e's components with the record's values,
 * adding those it lacks (with their requirements), and gives them the
 * record's enabled or disabled state; its other components are left as
 * they are, and a transient component it already has keeps its value.
 * For refreshing ghost copies. The record is checked first (as
 * weft_entity_decode()) and a stale handle is a checked miss (WEFT_ESTALE):
 * then nothing changes. Allocates nothing when @p e already has every
 * component of the record in the record's state. Owner thread. Returns 0,
 * WEFT_EINVAL, WEFT_ESTALE, WEFT_EFORMAT, WEFT_ENOCOMP, or (after the
 * record's earlier components were written) WEFT_ENOMEM.
 */
int weft_entity_decode_into(weft_entity_codec_t *codec, weft_entity_t e,
                            const void *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_ENTITY_CODEC_H */
