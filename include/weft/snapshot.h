/* SPDX-License-Identifier: MIT */
/**
 * @file snapshot.h
 * Binary snapshots of a whole world: save, validate, load.
 *
 * A snapshot holds every entity with its handle (slot and generation, so
 * handles stored inside components stay valid), every component value
 * (columns copied as columns), the disabled state, the entity index's
 * free-list and retired slots (so later spawns issue the same handles as
 * in the saved world), the archetypes in creation order and their chunk
 * ids (so the loaded world's digest equals the saved one's), and the
 * sections registered with weft_snapshot_section_register() (the
 * scheduler's tick, a program's own data).
 *
 * Components are matched by registered name, never by id. Each records a
 * fingerprint of its fields (name, offset, size, type): a program whose
 * layout changed loads an older snapshot by moving fields by name (an
 * added field gets zero bytes, a removed one is dropped, a moved one is
 * moved); a field whose size or type changed is refused with
 * WEFT_EMIGRATE. Components declared WEFT_COMPONENT_TRANSIENT keep their
 * membership but not their bytes: they load zero-filled, or with the
 * default a requirement (weft/require.h) of another component of the row
 * gives them.
 *
 * Loading is two-phase: the whole input is checked first (structure,
 * XXH3 checksums of every section, names, fingerprints, handle ranges,
 * counts); only then is the world cleared and filled. A rejected input
 * leaves the world exactly as it was, and @ref weft_snapshot_error_t
 * says what was wrong and where.
 *
 * The format is little-endian and versioned (docs in ARCHITECTURE.md,
 * "Snapshots").
 */
#ifndef WEFT_SNAPSHOT_H
#define WEFT_SNAPSHOT_H

#include <stddef.h>
#include <stdint.h>

#include "weft/world.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The format version this library writes (and the newest it reads). */
#define WEFT_SNAPSHOT_VERSION 1u

/** Longest section name, terminator included. */
#define WEFT_SNAPSHOT_NAME_MAX 32u

/**
 * A byte sink: write(user, data, n) stores n bytes and returns 0, or a
 * negative code (WEFT_EIO) that aborts the save.
 */
typedef struct weft_snapshot_writer_t {
  int (*write)(void *user, const void *data, size_t n);
  void *user;
} weft_snapshot_writer_t;

/**
 * A byte source: read(user, buf, cap) fills up to cap bytes and returns
 * how many (0 at the end of the input), or a negative code.
 */
typedef struct weft_snapshot_reader_t {
  long long (*read)(void *user, void *buf, size_t cap);
  void *user;
} weft_snapshot_reader_t;

/**
 * What went wrong, and where: filled by the save and load functions when
 * they fail (left zeroed on success). Owned by the caller.
 */
typedef struct weft_snapshot_error_t {
  int code;                             /**< the returned WEFT_E* code */
  char section[WEFT_SNAPSHOT_NAME_MAX]; /**< section name, "" if none */
  uint64_t offset;                      /**< byte offset in the input */
  char message[224];                    /**< what, in words */
} weft_snapshot_error_t;

/** Where a section's save callback writes its bytes. Opaque. */
typedef struct weft_snapshot_out_t weft_snapshot_out_t;

/**
 * Appends n bytes to the section being saved. Call only from a section's
 * save callback, with the out it was given. Returns 0 or the sink's error.
 */
int weft_snapshot_put(weft_snapshot_out_t *out, const void *data, size_t n);

/**
 * A named section of a snapshot, saved and loaded by callbacks: how the
 * scheduler keeps its tick and a program its own data (the user hook).
 *
 * - save(world, user, out) writes the section's bytes through
 *   weft_snapshot_put(); returns 0 or a negative code (which aborts the
 *   save).
 * - check(world, user, data, n), optional, validates the bytes during the
 *   first phase of a load, before anything changed; a negative code
 *   rejects the snapshot (the world stays as it was).
 * - load(world, user, data, n) applies them once everything validated
 *   and the world's entities are in place; it should not fail.
 *
 * A load calls load() only for sections the input holds; sections in the
 * input that no registration names are skipped.
 */
typedef struct weft_snapshot_section_desc_t {
  const char *name; /**< 1..WEFT_SNAPSHOT_NAME_MAX-1 chars, unique */
  int (*save)(weft_world_t *world, void *user, weft_snapshot_out_t *out);
  int (*check)(const weft_world_t *world, void *user, const void *data,
               size_t n);
  int (*load)(weft_world_t *world, void *user, const void *data, size_t n);
  void *user; /**< passed to the callbacks; not owned */
} weft_snapshot_section_desc_t;

/**
 * Registers (or, for a name already registered, replaces) a snapshot
 * section. The desc is copied (the name too). Owner thread, not while
 * systems run. Returns 0, WEFT_EINVAL (bad name or no save/load
 * callback), WEFT_ETOOMANY (more than 32 sections) or WEFT_ENOMEM.
 */
int weft_snapshot_section_register(weft_world_t *world,
                                   const weft_snapshot_section_desc_t *desc);

/**
 * Writes a snapshot of @p world to @p writer. Owner thread, at a sync
 * point (no open scope, no staged spawn). The world is not changed.
 * Returns 0, WEFT_EINVAL, WEFT_EBUSY, or the sink's or a section's
 * error; @p err (may be NULL) says more.
 */
int weft_snapshot_save(weft_world_t *world,
                       const weft_snapshot_writer_t *writer,
                       weft_snapshot_error_t *err);

/**
 * Validates the snapshot in [data, data + n) against @p world's
 * registrations and, if it is sound, replaces the world's entities (and
 * the registered sections' state) with it. Owner thread, at a sync point.
 * The bytes are only read, and not kept. Returns 0, or WEFT_EFORMAT
 * (malformed or damaged), WEFT_EVERSION (a newer format), WEFT_EMIGRATE
 * (a component's layout cannot be migrated), WEFT_ENOCOMP (a component the
 * program does not register), WEFT_ELIMIT (the world's capacity or chunk
 * size does not fit), WEFT_EBUSY, WEFT_ENOMEM; on any failure the world
 * is unchanged, except that WEFT_ENOMEM while filling it leaves it empty.
 *
 * Memory: when the world already has the snapshot's archetypes and chunk
 * segments (reloading into the world that saved it, or into one restored
 * from the same snapshot), the rows are copied into fresh segment copies
 * while the input is checked, and swapped in only once all of it is
 * valid; during such a load the world's rows are allocated twice. When
 * the copies cannot be allocated, the load validates first and copies
 * afterwards instead.
 */
int weft_snapshot_load_memory(weft_world_t *world, const void *data, size_t n,
                              weft_snapshot_error_t *err);

/**
 * weft_snapshot_load_memory() over the whole input of @p reader, which is
 * read to its end first. Same threads, results and guarantees.
 */
int weft_snapshot_load(weft_world_t *world,
                       const weft_snapshot_reader_t *reader,
                       weft_snapshot_error_t *err);

/**
 * Saves to the file at @p path atomically: to "<path>.tmp" first, then
 * fsync and rename, so that a crash mid-write leaves any earlier file at
 * @p path intact. Returns 0, WEFT_EIO, or weft_snapshot_save()'s codes.
 */
int weft_snapshot_save_file(weft_world_t *world, const char *path,
                            weft_snapshot_error_t *err);

/** Loads the file at @p path (weft_snapshot_load_memory()), or WEFT_EIO. */
int weft_snapshot_load_file(weft_world_t *world, const char *path,
                            weft_snapshot_error_t *err);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_SNAPSHOT_H */
