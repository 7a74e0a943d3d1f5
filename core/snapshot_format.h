/* SPDX-License-Identifier: MIT */
/*
 * The snapshot format (weft/snapshot.h), shared by the writer
 * (snapshot_write.c), the validator (snapshot_read.c) and the loader
 * (snapshot.c).
 *
 * A file is a 32-byte header and a run of sections, little-endian:
 *
 *   header:  magic "WEFTSNP\x1a", u32 version, u32 flags (0), u64 0,
 *            u64 XXH3 of the 24 bytes before it
 *   section: u32 tag, u32 0, u64 length, length bytes of payload, zero
 *            padding to 8 bytes, u64 XXH3 of tag + length + payload
 *
 * Sections come in a fixed order: META, COMP, ARCH, INDX, ROWS, EDGE,
 * RESO, RAND, EVNT (snapshot_state.c), any number of SECT (registered sections:
 * a name, then its bytes), END. Their payloads are described where they are
 * written (snapshot_write.c).
 */
#ifndef WEFT_CORE_SNAPSHOT_FORMAT_H
#define WEFT_CORE_SNAPSHOT_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/archetype.h"
#include "core/bitset.h"
#include "weft/snapshot.h"

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
               "snapshots are little-endian and copied as they lie in memory");

#define WEFT__SNAP_MAGIC "WEFTSNP\x1a"
#define WEFT__SNAP_HEADER 32u
#define WEFT__SNAP_SEC_HEAD 16u
#define WEFT__SNAP_SEC_TAIL 8u
#define WEFT__SNAP_MAX_SECTIONS 32u

#define WEFT__FOURCC(a, b, c, d)                                               \
  ((uint32_t)(a) | (uint32_t)(b) << 8 | (uint32_t)(c) << 16 |                  \
   (uint32_t)(d) << 24)
#define WEFT__SNAP_META WEFT__FOURCC('M', 'E', 'T', 'A')
#define WEFT__SNAP_COMP WEFT__FOURCC('C', 'O', 'M', 'P')
#define WEFT__SNAP_ARCH WEFT__FOURCC('A', 'R', 'C', 'H')
#define WEFT__SNAP_INDX WEFT__FOURCC('I', 'N', 'D', 'X')
#define WEFT__SNAP_ROWS WEFT__FOURCC('R', 'O', 'W', 'S')
#define WEFT__SNAP_EDGE WEFT__FOURCC('E', 'D', 'G', 'E')
#define WEFT__SNAP_RESO WEFT__FOURCC('R', 'E', 'S', 'O')
#define WEFT__SNAP_RAND WEFT__FOURCC('R', 'A', 'N', 'D')
#define WEFT__SNAP_EVNT WEFT__FOURCC('E', 'V', 'N', 'T')
#define WEFT__SNAP_SECT WEFT__FOURCC('S', 'E', 'C', 'T')
#define WEFT__SNAP_END WEFT__FOURCC('E', 'N', 'D', ' ')

/* Component flags as the file keeps them. */
#define WEFT__SNAP_C_SOA 0x1u
#define WEFT__SNAP_C_TRANSIENT 0x4u

/* How a snapshot component's bytes reach the program's component. */
enum {
  WEFT__SNAP_UNUSED = 0, /* no archetype names it: ignored */
  WEFT__SNAP_SAME,       /* same layout and storage: columns memcpy'd */
  WEFT__SNAP_MIGRATE,    /* field by field, by name */
  WEFT__SNAP_RAW,        /* no fields on one side: whole values, same size */
  WEFT__SNAP_ZERO,       /* transient (here or there): zero-filled */
  WEFT__SNAP_TAG         /* a tag: nothing to copy */
};

typedef struct weft__snap_field_t {
  const char *name; /* into the input, name_len bytes, not terminated */
  uint32_t name_len;
  uint32_t offset;
  uint32_t size;
  uint32_t type;
} weft__snap_field_t;

typedef struct weft__snap_comp_t {
  const char *name;
  uint32_t name_len;
  uint32_t size;
  uint32_t align;
  uint32_t flags;
  uint32_t nfields;
  weft__snap_field_t fields[WEFT_MAX_FIELDS];
  uint32_t target; /* the program's id, 0: not registered */
  uint32_t mode;   /* WEFT__SNAP_* */
  /* For MIGRATE: per program field, the snapshot field it takes, or -1. */
  int8_t from[WEFT_MAX_FIELDS];
  uint64_t row_bytes; /* bytes per row in ROWS (0: none saved) */
} weft__snap_comp_t;

typedef struct weft__snap_arch_t {
  weft__mask_t present; /* program ids */
  weft__mask_t disabled;
  const uint8_t *comps; /* npresent u32 snapshot component indices */
  uint32_t npresent;
  uint32_t count;
  uint32_t nchunks;      /* chunks holding rows */
  uint32_t chunk_total;  /* chunks owned */
  uint32_t row_cap;      /* in the saving program */
  uint32_t born;         /* creation stamp */
  bool vacant;           /* a freed id (row_cap 0 in the file) */
  uint32_t npairs;       /* dense relation pairs */
  const uint8_t *praw;   /* npairs * (u32 component index, u32 0, u64) */
  weft__pair_t *pairs;   /* mapped to program ids and sorted (map_archs) */
  const uint8_t *counts; /* nchunks u32 */
  const uint8_t *rows;   /* this archetype's part of ROWS */
  uint64_t rows_bytes;
} weft__snap_arch_t;

typedef struct weft__snap_ext_t {
  char name[WEFT_SNAPSHOT_NAME_MAX];
  const uint8_t *data;
  size_t n;
  int slot; /* the world's registration, -1 when none */
} weft__snap_ext_t;

/* A validated snapshot: everything the loader needs, pointing into the
 * input (which outlives it). */
typedef struct weft__snap_plan_t {
  uint32_t chunk_size;
  uint32_t max_gen;
  uint32_t capacity;
  uint8_t tag;
  uint32_t change_version;
  uint64_t tick;
  uint32_t ncomp;
  weft__snap_comp_t *comps;
  uint32_t narch;
  weft__snap_arch_t *archs;
  uint32_t nsegs;
  /* nsegs * (archetype, n, n chunk ids), u32 each (checked: together
   * with the free stack, the ids are [0, chunk_count) once each). */
  const uint8_t *segs;
  uint32_t chunk_count;
  uint32_t arch_born; /* the saving world's next creation stamp */
  uint32_t chunk_nfree;
  const uint8_t *chunk_free; /* chunk_nfree u32: the chunk id free stack */
  /* The live archetypes by creation stamp: (born << 32 | id), norder of
   * them (the root first). */
  uint64_t *order;
  uint32_t norder;
  /* The entity index. */
  uint32_t hwm;
  uint32_t alive;
  uint32_t retired;
  uint32_t sweep;
  uint32_t sweep_end;
  uint32_t free_n;
  const uint8_t *free; /* free_n u32 */
  const uint8_t *recs; /* hwm u32: dead records, or WEFT__REC_LOC */
  struct {
    const uint8_t *p;
    size_t n;
  } state[4]; /* EDGE, RESO, RAND, EVNT payloads */
  uint32_t next_ext;
  weft__snap_ext_t ext[WEFT__SNAP_MAX_SECTIONS];
} weft__snap_plan_t;

/* The registered sections of a world (snapshot.c). */
typedef struct weft__snap_reg_t {
  uint32_t n;
  struct {
    char name[WEFT_SNAPSHOT_NAME_MAX];
    weft_snapshot_section_desc_t d;
  } s[WEFT__SNAP_MAX_SECTIONS];
  /* The loader's per-slot scratch, kept between loads so that a load
   * into a world of the same size touches no fresh pages. */
  uint32_t *scratch;
  size_t scratch_n;
} weft__snap_reg_t;

/* Reads a little-endian u32 / u64 at p (any alignment). */
static inline uint32_t weft__snap_u32(const uint8_t *p) {
  uint32_t v;
  __builtin_memcpy(&v, p, 4);
  return v;
}
static inline uint64_t weft__snap_u64(const uint8_t *p) {
  uint64_t v;
  __builtin_memcpy(&v, p, 8);
  return v;
}

/* Fills *err (may be NULL) and the world's last error; returns code. */
int weft__snap_fail(const weft_world_t *w, weft_snapshot_error_t *err, int code,
                    uint32_t section, uint64_t offset, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

/* Validates [data, data + n) against w; fills plan (free with
 * weft__snap_plan_free). 0 or an error (*err filled). */
int weft__snap_parse(const weft_world_t *w, const uint8_t *data, size_t n,
                     weft__snap_plan_t *plan, weft_snapshot_error_t *err);
void weft__snap_plan_free(weft__snap_plan_t *plan);

/* The same, staging the rows on the way when stage is not NULL: the
 * validator calls weft__snap_stage_begin() and weft__snap_stage_chunk()
 * (snapshot_stage.h) on it; the caller commits or frees it. */
struct weft__snap_stage_t;
int weft__snap_parse_staged(const weft_world_t *w, const uint8_t *data,
                            size_t n, weft__snap_plan_t *plan,
                            struct weft__snap_stage_t *stage,
                            weft_snapshot_error_t *err);

/* The world's section registry, or NULL (snapshot.c). */
const weft__snap_reg_t *weft__snap_registry(const weft_world_t *w);

/* The world's registry, created if needed; NULL when out of memory. */
weft__snap_reg_t *weft__snap_registry_get(weft_world_t *w);

#endif /* WEFT_CORE_SNAPSHOT_FORMAT_H */
