/* SPDX-License-Identifier: MIT */
/*
 * The validator's cursor over a snapshot (snapshot_read.c), shared with the
 * archetype-section reader (snapshot_arch.c): bounds-checked reads that
 * fail with the section and byte offset.
 */
#ifndef WEFT_CORE_SNAPSHOT_READ_H
#define WEFT_CORE_SNAPSHOT_READ_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "core/snapshot_format.h"

typedef struct weft__snap_rd_t {
  const weft_world_t *w;
  weft_snapshot_error_t *err;
  const uint8_t *data; /* the whole input */
  size_t n;
  uint32_t sec;       /* tag of the section being read */
  const uint8_t *p;   /* cursor in its payload */
  const uint8_t *end; /* the payload's end */
  size_t next;        /* offset of the next section */
} weft__snap_rd_t;

#define FAIL(r, code, ...)                                                     \
  weft__snap_fail((r)->w, (r)->err, (code), (r)->sec,                          \
                  (uint64_t)((r)->p - (r)->data), __VA_ARGS__)
#define BAD(r, ...) FAIL(r, WEFT_EFORMAT, __VA_ARGS__)

/* Whether n more payload bytes remain. */
static inline bool weft__snap_has(const weft__snap_rd_t *r, uint64_t n) {
  return (uint64_t)(r->end - r->p) >= n;
}

/* Whether two unterminated names are equal. */
static inline bool weft__snap_same_name(const char *a, uint32_t na,
                                        const char *b, uint32_t nb) {
  return na == nb && !memcmp(a, b, na);
}

/* Reads a u32; 0 or WEFT_EFORMAT (truncated, naming `what`). */
int weft__snap_get_u32(weft__snap_rd_t *r, uint32_t *v, const char *what);

/* Takes count * size bytes (overflow-checked) into *out. */
int weft__snap_get_bytes(weft__snap_rd_t *r, uint64_t count, uint64_t size,
                         const uint8_t **out, const char *what);

/* Checks the header shared by snapshots and codec tables: `size` bytes,
 * `magic`, the checksum of its first 24 bytes, a version in
 * 1..max_version (WEFT_EVERSION above it) and zero reserved bytes 16..23;
 * the word at 12 is left to the caller. Positions the reader after it.
 * `what` names the format in messages. */
int weft__snap_check_header(weft__snap_rd_t *r, const char *magic,
                            uint32_t size, uint32_t max_version,
                            const char *what, uint32_t *version);

/* Opens the next section, which must be `tag`: checks its length, checksum
 * and padding; positions the cursor on its payload. */
int weft__snap_open_section(weft__snap_rd_t *r, uint32_t tag);

/* Fails when the section's payload was not read to its end. */
int weft__snap_close_section(weft__snap_rd_t *r);

/* Reads the ARCH section: archetypes, chunk segments, the chunk free stack;
 * maps them to this program's components (snapshot_arch.c). */
int weft__snap_read_archs(weft__snap_rd_t *r, weft__snap_plan_t *pl);

/* Reads the fingerprint of component i (name, size, alignment, flags,
 * fields) into pl->comps[i], checking it against those before it and
 * looking its name up in the program; pl->comps has room for i + 1. The
 * per-entity codec's tables (entity_codec.c) use the COMP format too. */
int weft__snap_read_comp(weft__snap_rd_t *r, weft__snap_plan_t *pl, uint32_t i);

/* Decides how component c's bytes reach the program's (c->mode, c->from):
 * WEFT_ENOCOMP when the program does not register it, WEFT_EMIGRATE when
 * its layout cannot be migrated. `where` is the archetype (or record)
 * number the message names (snapshot_arch.c). */
int weft__snap_match_comp(weft__snap_rd_t *r, weft__snap_comp_t *c,
                          uint32_t where);

#endif /* WEFT_CORE_SNAPSHOT_READ_H */
