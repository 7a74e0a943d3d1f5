/* SPDX-License-Identifier: MIT */
/*
 * The first phase of a load: weft__snap_parse() checks a whole snapshot
 * (header, every section's length and XXH3 checksum, names, fingerprints,
 * counts, handle ranges, the entity index's invariants) against the
 * program's registrations without changing the world, and returns a plan
 * that points into the input. Every failure says which section and byte
 * offset, and what. See snapshot_format.h for the layout and
 * snapshot_write.c for the payloads.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/snapshot_hash.h"
#include "core/snapshot_read.h"
#include "core/snapshot_stage.h"

#include "core/alloc.h"
#include "core/check.h"
#include "core/relation.h"
#include "core/snapshot_state.h"
#include "core/world.h"

/* Reads a u32 of the payload. */
int weft__snap_get_u32(weft__snap_rd_t *r, uint32_t *v, const char *what) {
  if (!weft__snap_has(r, 4))
    return BAD(r, "truncated: %s missing", what);
  *v = weft__snap_u32(r->p);
  r->p += 4;
  return 0;
}

/* Takes n bytes of the payload (n * size, overflow-checked). */
int weft__snap_get_bytes(weft__snap_rd_t *r, uint64_t count, uint64_t size,
                         const uint8_t **out, const char *what) {
  if (size && count > UINT64_MAX / size)
    return BAD(r, "%s: %llu entries overflow", what, (unsigned long long)count);
  if (!weft__snap_has(r, count * size))
    return BAD(r, "truncated: %s needs %llu bytes, %llu left", what,
               (unsigned long long)(count * size),
               (unsigned long long)(r->end - r->p));
  *out = r->p;
  r->p += count * size;
  return 0;
}

/* A name: u32 length (1..max-1), then the bytes, no NUL among them. */
static int get_name(weft__snap_rd_t *r, uint32_t max, const char **s,
                    uint32_t *len, const char *what) {
  uint32_t n = 0;
  int rc = weft__snap_get_u32(r, &n, what);
  if (rc)
    return rc;
  if (n == 0 || n >= max)
    return BAD(r, "%s: length %u outside 1..%u", what, n, max - 1);
  const uint8_t *p = NULL;
  rc = weft__snap_get_bytes(r, n, 1, &p, what);
  if (rc)
    return rc;
  if (memchr(p, 0, n))
    return BAD(r, "%s holds a NUL byte", what);
  *s = (const char *)p;
  *len = n;
  return 0;
}

static const char *tag_name(uint32_t tag, char out[5]) {
  memcpy(out, &tag, 4);
  for (int i = 0; i < 4; i++)
    if (out[i] < 32 || out[i] > 126)
      out[i] = '?';
  out[4] = 0;
  return out;
}

/* Opens the next section, which must be `tag`: checks its length and its
 * padding, positions the cursor on its payload and returns in *sum the
 * checksum the file gives it, which the caller checks. */
static int open_unhashed(weft__snap_rd_t *r, uint32_t tag, uint64_t *sum) {
  char want[5], got[5];
  r->sec = tag;
  r->p = r->data + r->next;
  r->end = r->data + r->n;
  if (!weft__snap_has(r, WEFT__SNAP_SEC_HEAD))
    return BAD(r, "truncated: section %s expected", tag_name(tag, want));
  uint32_t t = weft__snap_u32(r->p), zero = weft__snap_u32(r->p + 4);
  uint64_t len = weft__snap_u64(r->p + 8);
  if (t != tag)
    return BAD(r, "section %s found where %s belongs", tag_name(t, got),
               tag_name(tag, want));
  if (zero)
    return BAD(r, "section header's reserved word is %u, not 0", zero);
  uint64_t room = (uint64_t)(r->end - r->p) - WEFT__SNAP_SEC_HEAD;
  uint64_t pad = (8 - (len & 7)) & 7;
  if (len > room || room - len < pad + WEFT__SNAP_SEC_TAIL)
    return BAD(r, "truncated: section of %llu bytes, %llu left",
               (unsigned long long)len, (unsigned long long)room);
  const uint8_t *payload = r->p + WEFT__SNAP_SEC_HEAD;
  for (uint64_t i = 0; i < pad; i++)
    if (payload[len + i]) {
      r->p = payload + len + i;
      return BAD(r, "nonzero padding after the payload");
    }
  *sum = weft__snap_u64(payload + len + pad);
  r->p = payload;
  r->end = payload + len;
  r->next = (size_t)(payload + len + pad + WEFT__SNAP_SEC_TAIL - r->data);
  return 0;
}

/* Fails when h is not the checksum `sum` the file gives the section that
 * starts at byte `at`. (Fuzzing builds skip it, to reach the checks
 * behind it.) */
static int check_sum(weft__snap_rd_t *r, size_t at, uint64_t h, uint64_t sum) {
#ifndef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
  if (h != sum) {
    r->p = r->data + at;
    return BAD(r, "checksum mismatch (damaged section)");
  }
#else
  (void)r, (void)at, (void)h, (void)sum;
#endif
  return 0;
}

int weft__snap_open_section(weft__snap_rd_t *r, uint32_t tag) {
  size_t at = r->next;
  uint64_t sum = 0;
  int rc = open_unhashed(r, tag, &sum);
  if (rc)
    return rc;
  const uint8_t *p = r->p;
  rc = check_sum(
      r, at, weft__xxh3(r->data + at, (size_t)(r->end - r->data) - at), sum);
  r->p = p;
  return rc;
}

int weft__snap_close_section(weft__snap_rd_t *r) {
  if (r->p != r->end)
    return BAD(r, "%llu unread bytes at the end of the section",
               (unsigned long long)(r->end - r->p));
  return 0;
}

int weft__snap_check_header(weft__snap_rd_t *r, const char *magic,
                            uint32_t size, uint32_t max_version,
                            const char *what, uint32_t *version) {
  r->p = r->data;
  r->end = r->data + r->n;
  if (!weft__snap_has(r, size))
    return BAD(r, "truncated: %zu bytes, a header is %u", r->n, size);
  if (memcmp(r->data, magic, 8))
    return BAD(r, "not a weft %s (bad magic)", what);
#ifndef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
  if (weft__snap_u64(r->data + 24) != weft__xxh3(r->data, 24))
    return BAD(r, "header checksum mismatch");
#endif
  *version = weft__snap_u32(r->data + 8);
  if (*version > max_version)
    return FAIL(r, WEFT_EVERSION, "%s format version %u, this library reads %u",
                what, *version, max_version);
  if (*version == 0 || weft__snap_u64(r->data + 16))
    return BAD(r, "bad version (%u) or nonzero reserved header words",
               *version);
  r->next = size;
  return 0;
}

static int read_header(weft__snap_rd_t *r) {
  uint32_t version;
  int rc = weft__snap_check_header(r, WEFT__SNAP_MAGIC, WEFT__SNAP_HEADER,
                                   WEFT_SNAPSHOT_VERSION, "snapshot", &version);
  if (!rc && weft__snap_u32(r->data + 12))
    rc = BAD(r, "bad version (%u) or nonzero reserved header words", version);
  return rc;
}

static int read_meta(weft__snap_rd_t *r, weft__snap_plan_t *pl) {
  int rc = weft__snap_open_section(r, WEFT__SNAP_META);
  if (rc)
    return rc;
  const uint8_t *m = NULL;
  rc = weft__snap_get_bytes(r, 56, 1, &m, "META");
  if (rc || (rc = weft__snap_close_section(r)))
    return rc;
  pl->chunk_size = weft__snap_u32(m);
  pl->max_gen = weft__snap_u32(m + 4);
  pl->capacity = weft__snap_u32(m + 8);
  uint32_t tag = weft__snap_u32(m + 12);
  pl->change_version = weft__snap_u32(m + 16);
  pl->tick = weft__snap_u64(m + 24);
  pl->ncomp = weft__snap_u32(m + 32);
  pl->narch = weft__snap_u32(m + 36);
  pl->nsegs = weft__snap_u32(m + 40);
  pl->chunk_count = weft__snap_u32(m + 44);
  pl->arch_born = weft__snap_u32(m + 48);
  const weft_world_t *w = r->w;
  if (tag == 0 || tag > 255 || weft__snap_u32(m + 20) || weft__snap_u32(m + 52))
    return BAD(r, "world tag %u is not 1..255", tag);
  pl->tag = (uint8_t)tag;
  if (pl->chunk_size != w->chunk_size)
    return FAIL(r, WEFT_ELIMIT,
                "snapshot chunk size %u, this world's %u (create the world "
                "with the same chunk_size)",
                pl->chunk_size, w->chunk_size);
  /* The world's limit, so below 2^24: the record and handle checks
   * count on it (check_records, check_handles). */
  if (pl->max_gen != w->index.max_gen || pl->max_gen > WEFT__GEN_MASK)
    return FAIL(r, WEFT_ELIMIT, "snapshot generation limit %u, this world's %u",
                pl->max_gen, w->index.max_gen);
  if (pl->ncomp > WEFT_MAX_COMPONENTS || pl->narch == 0 ||
      pl->chunk_count > w->chunks.id_max || pl->nsegs > pl->chunk_count ||
      pl->arch_born < pl->narch)
    return BAD(r,
               "counts out of range: %u components, %u archetypes, %u "
               "segments, %u chunk ids, creation stamp %u",
               pl->ncomp, pl->narch, pl->nsegs, pl->chunk_count, pl->arch_born);
  return 0;
}

static int read_field(weft__snap_rd_t *r, const weft__snap_comp_t *c,
                      weft__snap_field_t *f) {
  int rc = get_name(r, WEFT_NAME_MAX, &f->name, &f->name_len, "field name");
  if (!rc)
    rc = weft__snap_get_u32(r, &f->offset, "field offset");
  if (!rc)
    rc = weft__snap_get_u32(r, &f->size, "field size");
  if (!rc)
    rc = weft__snap_get_u32(r, &f->type, "field type");
  if (rc)
    return rc;
  if (f->size == 0 || (uint64_t)f->offset + f->size > c->size ||
      f->type >= WEFT_FIELD_TYPE_COUNT_)
    return BAD(r,
               "component '%.*s': field '%.*s' (offset %u, size %u, type "
               "%u) is invalid",
               (int)c->name_len, c->name, (int)f->name_len, f->name, f->offset,
               f->size, f->type);
  return 0;
}

static int read_comp(weft__snap_rd_t *r, weft__snap_plan_t *pl, uint32_t i) {
  weft__snap_comp_t *c = &pl->comps[i];
  int rc = get_name(r, WEFT_NAME_MAX, &c->name, &c->name_len, "component name");
  if (!rc)
    rc = weft__snap_get_u32(r, &c->size, "component size");
  if (!rc)
    rc = weft__snap_get_u32(r, &c->align, "component alignment");
  if (!rc)
    rc = weft__snap_get_u32(r, &c->flags, "component flags");
  if (!rc)
    rc = weft__snap_get_u32(r, &c->nfields, "field count");
  if (rc)
    return rc;
  const uint32_t known = WEFT_COMPONENT_SOA | WEFT_COMPONENT_TRACK_DIRTY |
                         WEFT_COMPONENT_TRANSIENT | WEFT_COMPONENT_RELATION;
  bool soa = c->flags & WEFT_COMPONENT_SOA;
  if ((c->flags & ~known) || c->nfields > WEFT_MAX_FIELDS || c->align == 0 ||
      c->align > WEFT_ALIGN_MAX || (c->align & (c->align - 1)) ||
      (c->size == 0 && (c->nfields || soa)) || (soa && c->nfields == 0))
    return BAD(r,
               "component '%.*s': bad size %u, alignment %u, flags 0x%x "
               "or field count %u",
               (int)c->name_len, c->name, c->size, c->align, c->flags,
               c->nfields);
  uint64_t fsum = 0;
  for (uint32_t f = 0; f < c->nfields; f++) {
    if ((rc = read_field(r, c, &c->fields[f])))
      return rc;
    fsum += c->fields[f].size;
    for (uint32_t g = 0; g < f; g++)
      if (weft__snap_same_name(c->fields[f].name, c->fields[f].name_len,
                               c->fields[g].name, c->fields[g].name_len))
        return BAD(r, "component '%.*s': field '%.*s' twice", (int)c->name_len,
                   c->name, (int)c->fields[f].name_len, c->fields[f].name);
  }
  for (uint32_t j = 0; j < i; j++)
    if (weft__snap_same_name(c->name, c->name_len, pl->comps[j].name,
                             pl->comps[j].name_len))
      return BAD(r, "component '%.*s' twice", (int)c->name_len, c->name);
  bool transient = c->flags & WEFT_COMPONENT_TRANSIENT;
  c->row_bytes = transient ? 0 : soa ? fsum : c->size;
  char name[WEFT_NAME_MAX];
  memcpy(name, c->name, c->name_len);
  name[c->name_len] = 0;
  weft_component_t id = 0;
  if (weft_component_lookup(r->w, name, &id) != 0)
    id = 0;
  c->target = id;
  return 0;
}

static int read_comps(weft__snap_rd_t *r, weft__snap_plan_t *pl) {
  int rc = weft__snap_open_section(r, WEFT__SNAP_COMP);
  if (rc)
    return rc;
  pl->comps = calloc(pl->ncomp ? pl->ncomp : 1, sizeof(*pl->comps));
  if (!pl->comps)
    return FAIL(r, WEFT_ENOMEM, "out of memory reading components");
  for (uint32_t i = 0; i < pl->ncomp; i++)
    if ((rc = read_comp(r, pl, i)))
      return rc;
  return weft__snap_close_section(r);
}

/* Finds the first record check_records() refuses and reports it. */
static int bad_record(weft__snap_rd_t *r, const weft__snap_plan_t *pl) {
  for (uint32_t s = 0; s < pl->hwm; s++) {
    uint32_t v = weft__snap_u32(pl->recs + 4 * s);
    if (v == WEFT__REC_LOC) {
      if (s >= pl->sweep && s < pl->sweep_end)
        return BAD(r, "slot %u is live inside the sweep range", s);
      continue;
    }
    uint32_t gen = v & WEFT__GEN_MASK, flags = v & ~WEFT__GEN_MASK;
    bool retired = flags == WEFT__REC_RETIRED;
    if ((flags && !retired) || gen > pl->max_gen ||
        (!retired && gen >= pl->max_gen))
      return BAD(r, "slot %u: record 0x%08x is not a dead slot's", s, v);
  }
  return BAD(r, "a record is refused"); /* not reached */
}

/* The walk of check_records(), with and without the copy into locs (the
 * compiler clones it for each constant `copy`, and the `if` folds away).
 * Not inlined: its restrict pointers are what lets it vectorize. */
static __attribute__((noinline)) uint32_t
records_loop(const uint8_t *recs, uint32_t max_gen, uint32_t s0, uint32_t s1,
             uint8_t *restrict live, uint32_t *restrict locs, bool copy,
             uint32_t *nlive, uint32_t *nretired) {
  uint32_t bad = 0, nl = 0, nr = 0;
  /* A dead record is a generation below max_gen with no flag, or one up
   * to max_gen with the retired flag alone (max_gen < 2^24, so neither
   * range reaches a flag bit): two unsigned compares. */
  for (uint32_t s = s0; s < s1; s++) {
    uint32_t v = weft__snap_u32(recs + 4 * s);
    uint32_t is_live = v == WEFT__REC_LOC;
    uint32_t retired = v - WEFT__REC_RETIRED <= max_gen;
    /* Neither live nor dead (ok is 0 or 1). */
    uint32_t ok = is_live | (v < max_gen) | retired;
    bad |= ok ^ 1u;
    /* WEFT__SNAP_LIVE_REC or 0: the scratch needs no clearing pass. */
    live[s] = (uint8_t)is_live;
    if (copy)
      locs[s] = v;
    nl += is_live;
    nr += retired;
  }
  *nlive += nl;
  *nretired += nr;
  return bad;
}

/* What the walk over the records found (records_walk()). */
typedef struct walk_t {
  bool done; /* the walk ran (while INDX was hashed) */
  uint32_t bad, nlive, nretired;
} walk_t;

/* Walks records [s0, s1) into the scratch (locs: NULL unless staging). */
static void records_walk(const weft__snap_plan_t *pl, uint8_t *live,
                         uint32_t *locs, uint32_t s0, uint32_t s1, walk_t *wk) {
  if (locs)
    wk->bad |= records_loop(pl->recs, pl->max_gen, s0, s1, live, locs, true,
                            &wk->nlive, &wk->nretired);
  else
    wk->bad |= records_loop(pl->recs, pl->max_gen, s0, s1, live, NULL, false,
                            &wk->nlive, &wk->nretired);
}

/* Checks the dead records and the free list; sets every slot's state in
 * `live` (below hwm), and copies the records into locs (not NULL when
 * staging: the row check then overwrites the live ones with their places,
 * and the index is restored from there). The records, one per slot ever
 * issued, are walked without branches, so that the compiler vectorizes
 * the walk: a fault only sets `bad`, and bad_record() then walks again to
 * name it. The walk may have run already, block by block as INDX was
 * hashed (wk->done). */
static int check_records(weft__snap_rd_t *r, const weft__snap_plan_t *pl,
                         uint8_t *live, uint32_t *locs, walk_t *wk) {
  const uint8_t *recs = pl->recs;
  if (!wk->done)
    records_walk(pl, live, locs, 0, pl->hwm, wk);
  uint32_t bad = wk->bad, nlive = wk->nlive, nretired = wk->nretired;
  /* No live record in the sweep range (a short one, walked apart). */
  for (uint32_t s = pl->sweep; s < pl->sweep_end; s++)
    bad |= weft__snap_u32(recs + 4 * s) == WEFT__REC_LOC;
  if (bad)
    return bad_record(r, pl);
  if (nlive != pl->alive || nretired != pl->retired)
    return BAD(r, "%u live and %u retired records, the header says %u and %u",
               nlive, nretired, pl->alive, pl->retired);
  for (uint32_t k = 0; k < pl->free_n; k++) {
    uint32_t s = weft__snap_u32(pl->free + 4 * k);
    if (s >= pl->hwm || live[s] ||
        (weft__snap_u32(pl->recs + 4 * s) & WEFT__REC_RETIRED) ||
        (s >= pl->sweep && s < pl->sweep_end))
      return BAD(r, "free slot %u (entry %u) is not a free dead slot", s, k);
    live[s] = WEFT__SNAP_LIVE_FREE; /* a second entry finds it marked */
  }
  return 0;
}

/* Points lv into the world's scratch (snapshot_format.h), grown to
 * pl->hwm slots; WEFT_ENOMEM. The registry exists (the loader made sure
 * of it), and reusing its scratch is no change of the world. */
static int index_scratch(const weft_world_t *w, const weft__snap_plan_t *pl,
                         weft__snap_live_t *lv) {
  weft__snap_reg_t *reg = (weft__snap_reg_t *)weft__snap_registry(w);
  if (reg->scratch_n < pl->hwm || !reg->scratch) {
    free(reg->scratch);
    size_t n = pl->hwm ? pl->hwm : 1;
    /* Per slot: its row's generation, archetype and staged record (a
     * word each), and its state (a byte). A large scratch is read at
     * random (by handle), so it goes on huge pages where the kernel gives
     * them: fewer TLB misses. */
    size_t bytes = (3 * n + (n + 3) / 4) * sizeof(*reg->scratch);
    const size_t huge = (size_t)2 << 20;
    if (bytes >= huge) {
      reg->scratch = aligned_alloc(huge, (bytes + huge - 1) & ~(huge - 1));
      weft__advise_huge(reg->scratch, bytes);
    } else {
      reg->scratch = malloc(bytes);
    }
    reg->scratch_n = reg->scratch ? n : 0;
    if (!reg->scratch)
      return WEFT_ENOMEM;
  }
  lv->v = (uint8_t *)(reg->scratch + 3 * reg->scratch_n);
  lv->loc = reg->scratch + 2 * reg->scratch_n;
  /* Rows' generations and archetypes matter to edges alone
   * (snapshot_state.c), and an edge names a saved relation component:
   * without one, they are not recorded. */
  lv->gen = lv->arch = NULL;
  for (uint32_t i = 0; i < pl->ncomp; i++)
    if (pl->comps[i].flags & WEFT_COMPONENT_RELATION) {
      lv->gen = reg->scratch;
      lv->arch = reg->scratch + reg->scratch_n;
    }
  return 0;
}

/* The index header's six counts, at p: hwm, alive, retired, the sweep
 * range and the free list's length. */
static void index_header(weft__snap_plan_t *pl, const uint8_t *p) {
  pl->hwm = weft__snap_u32(p);
  pl->alive = weft__snap_u32(p + 4);
  pl->retired = weft__snap_u32(p + 8);
  pl->sweep = weft__snap_u32(p + 12);
  pl->sweep_end = weft__snap_u32(p + 16);
  pl->free_n = weft__snap_u32(p + 20);
}

/* Whether the counts in pl pass read_index()'s checks. */
static bool index_counts_ok(const weft__snap_plan_t *pl) {
  return pl->free_n <= pl->hwm && pl->sweep <= pl->sweep_end &&
         pl->sweep_end <= pl->hwm && pl->alive <= pl->hwm &&
         pl->retired <= pl->hwm - pl->alive;
}

/* Whether INDX's payload (len bytes at p) passes every check of
 * read_index() up to the records: then the records can be walked as they
 * are hashed. Sets pl's counts. */
static bool index_fits(const weft_world_t *w, weft__snap_plan_t *pl,
                       const uint8_t *p, size_t len) {
  if (len < 24)
    return false;
  index_header(pl, p);
  uint64_t rows = 0;
  for (uint32_t i = 0; i < pl->narch; i++)
    rows += pl->archs[i].count;
  return pl->hwm <= w->index.capacity && index_counts_ok(pl) &&
         len == 24 + 4 * ((uint64_t)pl->free_n + pl->hwm) && rows == pl->alive;
}

/* Records hashed, then walked, at a time: a block is walked while it is
 * in cache, so INDX is read from memory once. */
#define WEFT__SNAP_INDX_BLOCK 4096u

/* INDX: hashed, and when its counts allow, its records walked block by
 * block as they are hashed (check_records() then only judges the walk);
 * then checked in order, so that damage is reported as a checksum
 * mismatch first and any other fault as before. */
static int read_index(weft__snap_rd_t *r, weft__snap_plan_t *pl,
                      weft__snap_live_t *lv, bool staging) {
  size_t at = r->next;
  uint64_t sum = 0;
  int rc = open_unhashed(r, WEFT__SNAP_INDX, &sum);
  if (rc)
    return rc;
  const uint8_t *p0 = r->p;
  const size_t len = (size_t)(r->end - r->p);
  weft__xxh3_state_t hs;
  weft__xxh3_reset(&hs);
  weft__xxh3_update(&hs, r->data + at, WEFT__SNAP_SEC_HEAD);
  walk_t wk = {0};
  size_t hashed = 0;
  if (index_fits(r->w, pl, p0, len) && !index_scratch(r->w, pl, lv)) {
    size_t head = 24 + 4 * (size_t)pl->free_n;
    weft__xxh3_update(&hs, p0, head);
    pl->recs = p0 + head;
    for (uint32_t s = 0; s < pl->hwm; s += WEFT__SNAP_INDX_BLOCK) {
      uint32_t e = pl->hwm - s < WEFT__SNAP_INDX_BLOCK
                       ? pl->hwm
                       : s + WEFT__SNAP_INDX_BLOCK;
      weft__xxh3_update(&hs, pl->recs + 4 * (size_t)s, 4 * (size_t)(e - s));
      records_walk(pl, lv->v, staging ? lv->loc : NULL, s, e, &wk);
    }
    wk.done = true;
    hashed = len;
  }
  weft__xxh3_update(&hs, p0 + hashed, len - hashed);
  if ((rc = check_sum(r, at, weft__xxh3_digest(&hs), sum)))
    return rc;
  r->p = p0;
  uint32_t *f[6] = {&pl->hwm,   &pl->alive,     &pl->retired,
                    &pl->sweep, &pl->sweep_end, &pl->free_n};
  for (int i = 0; i < 6 && !rc; i++)
    rc = weft__snap_get_u32(r, f[i], "index header");
  if (rc)
    return rc;
  if (pl->hwm > r->w->index.capacity)
    return FAIL(r, WEFT_ELIMIT,
                "snapshot uses %u entity slots, this world holds %u", pl->hwm,
                r->w->index.capacity);
  if (!index_counts_ok(pl))
    return BAD(r,
               "index counts inconsistent (hwm %u, alive %u, retired %u, "
               "sweep %u..%u, free %u)",
               pl->hwm, pl->alive, pl->retired, pl->sweep, pl->sweep_end,
               pl->free_n);
  if ((rc = weft__snap_get_bytes(r, pl->free_n, 4, &pl->free, "free list")) ||
      (rc = weft__snap_get_bytes(r, pl->hwm, 4, &pl->recs, "records")) ||
      (rc = weft__snap_close_section(r)))
    return rc;
  uint64_t rows = 0;
  for (uint32_t i = 0; i < pl->narch; i++)
    rows += pl->archs[i].count;
  if (rows != pl->alive)
    return BAD(r, "%u live slots but %llu rows", pl->alive,
               (unsigned long long)rows);
  if (!wk.done && index_scratch(r->w, pl, lv))
    return FAIL(r, WEFT_ENOMEM, "out of memory checking the index");
  return check_records(r, pl, lv->v, staging ? lv->loc : NULL, &wk);
}

/* Where a staged chunk's rows go: locs (the stage's records, NULL when
 * not staging) and the record of the chunk's row 0. */
typedef struct place_t {
  uint32_t *locs;
  uint32_t first;
} place_t;

/* Checks one chunk's handles: this world tag, live slots, each once; and
 * records, when staging, each row's place in the index. Returns the first
 * of the n handles at p that is foreign, not live, repeated or of a bad
 * generation; n when all are good. Inlined once for each combination of
 * what is recorded (the `if`s then fold away): this loop runs once per
 * row of the snapshot. */
static inline __attribute__((always_inline)) uint32_t
handles_loop(const weft__snap_plan_t *pl, const uint8_t *p, uint32_t n,
             const weft__snap_live_t *lv, uint32_t arch, place_t at,
             bool staged, bool edges) {
  /* The plan's limits in locals: the stores below could alias them. */
  uint8_t *restrict live = lv->v;
  uint32_t *restrict gens = lv->gen, *restrict where = lv->arch;
  uint32_t *restrict locs = at.locs;
  const uint32_t hwm = pl->hwm, max_gen = pl->max_gen;
  /* A handle's high word is its tag (8 bits) over its generation (24):
   * it is at least first (this tag, generation 1), and at most max_gen -
   * 1 above it (max_gen < 2^24), in one unsigned compare. */
  const uint32_t first = (uint32_t)pl->tag << 24 | 1u;
  for (uint32_t k = 0; k < n; k++) {
    uint64_t e = weft__snap_u64(p + 8 * (size_t)k);
    uint32_t slot = (uint32_t)e, hi = (uint32_t)(e >> 32);
    if ((hi - first >= max_gen) | (slot >= hwm) ||
        live[slot] != WEFT__SNAP_LIVE_REC)
      return k;
    live[slot] = WEFT__SNAP_LIVE_ROW;
    if (staged)
      locs[slot] = at.first | k;
    if (edges) {
      gens[slot] = hi & WEFT__GEN_MASK;
      where[slot] = arch;
    }
  }
  return n;
}

static uint32_t check_handles(const weft__snap_plan_t *pl, const uint8_t *p,
                              uint32_t n, const weft__snap_live_t *lv,
                              uint32_t arch, place_t at) {
  if (at.locs && lv->gen)
    return handles_loop(pl, p, n, lv, arch, at, true, true);
  if (at.locs)
    return handles_loop(pl, p, n, lv, arch, at, true, false);
  if (lv->gen)
    return handles_loop(pl, p, n, lv, arch, at, false, true);
  return handles_loop(pl, p, n, lv, arch, at, false, false);
}

/* What hash_chunk found. */
enum { ROWS_OK, ROWS_SHORT, ROWS_BAD_HANDLE };

/* Hashes one saved chunk's rows and checks their handles while the bytes
 * are in cache. On ROWS_SHORT (the rows do not fit the section) r->p
 * stays on the chunk; on ROWS_BAD_HANDLE it is on the first bad one. */
static int hash_chunk(weft__snap_rd_t *r, const weft__snap_plan_t *pl,
                      weft__xxh3_state_t *hs, uint64_t row, uint32_t n,
                      const weft__snap_live_t *lv, uint32_t arch, place_t at) {
  if (n > (uint64_t)(r->end - r->p) / row)
    return ROWS_SHORT; /* get_bytes reports it once the checksum holds */
  /* The caller's hash goes on from the chunk's end (r->p, or n * row
   * past it when a handle is bad). */
  weft__xxh3_update(hs, r->p, (size_t)(n * row));
  uint32_t k = check_handles(pl, r->p, n, lv, arch, at);
  if (k < n) {
    r->p += 8 * (size_t)k;
    return ROWS_BAD_HANDLE;
  }
  r->p += n * row;
  return ROWS_OK;
}

/* ROWS, the bulk of a snapshot, is read once: its checksum runs chunk by
 * chunk (streaming XXH3 gives the one-shot hash) and each chunk's handles
 * are checked right after it is hashed, while it is in cache, and then
 * its rows are staged when the load stages them (snapshot_stage.h). The
 * first fault found stops the walk; the rest of the section is hashed and
 * a damaged section is reported as such first, as for any other
 * section. */
static int read_rows(weft__snap_rd_t *r, weft__snap_plan_t *pl,
                     const weft__snap_live_t *live, weft__snap_stage_t *st) {
  size_t at = r->next;
  uint64_t sum = 0;
  int rc = open_unhashed(r, WEFT__SNAP_ROWS, &sum);
  if (rc)
    return rc;
  weft__xxh3_state_t hs;
  weft__xxh3_reset(&hs);
  weft__xxh3_update(&hs, r->data + at, WEFT__SNAP_SEC_HEAD);
  if (st)
    st->stream = (uint64_t)(r->end - r->p) >= WEFT__SNAP_STREAM_MIN;
  bool staging = st && st->on;
  int got = ROWS_OK;
  uint64_t row = 8;
  uint32_t n = 0;
  const uint8_t *chunk = r->p; /* the last chunk hash_chunk was given */
  for (uint32_t i = 0; got == ROWS_OK && i < pl->narch; i++) {
    weft__snap_arch_t *a = &pl->archs[i];
    row = 8;
    for (uint32_t c = 0; c < a->npresent; c++)
      row += pl->comps[weft__snap_u32(a->comps + 4 * c)].row_bytes;
    a->rows = r->p;
    for (uint32_t k = 0; got == ROWS_OK && k < a->nchunks; k++) {
      n = weft__snap_u32(a->counts + 4 * k);
      chunk = r->p;
      place_t to = {NULL, 0};
      if (staging)
        to = (place_t){st->loc, weft__snap_stage_place(st, i, k)};
      got = hash_chunk(r, pl, &hs, row, n, live, i, to);
      if (got == ROWS_OK && staging)
        weft__snap_stage_chunk(st, pl, i, k, chunk, n);
    }
    a->rows_bytes = (uint64_t)(r->p - a->rows);
  }
  /* A chunk with a bad handle was hashed whole. */
  const uint8_t *stop = r->p;
  const uint8_t *hashed = got == ROWS_BAD_HANDLE ? chunk + n * row : stop;
  weft__xxh3_update(&hs, hashed, (size_t)(r->end - hashed));
  if ((rc = check_sum(r, at, weft__xxh3_digest(&hs), sum)))
    return rc;
  r->p = stop;
  if (got == ROWS_OK)
    return weft__snap_close_section(r);
  const uint8_t *p = NULL;
  if (got == ROWS_SHORT)
    return weft__snap_get_bytes(r, n, row, &p, "chunk rows");
  return BAD(r,
             "handle 0x%016llx is foreign, not live, repeated or of a bad "
             "generation",
             (unsigned long long)weft__snap_u64(stop));
}

/* EDGE, RESO, RAND, EVNT, each checked by snapshot_state.c. */
static int read_state(weft__snap_rd_t *r, weft__snap_plan_t *pl,
                      const weft__snap_live_t *lv) {
  for (uint32_t i = 0; i < WEFT__SNAP_NSTATE; i++) {
    int rc = weft__snap_open_section(r, weft__snap_state_tags[i]);
    if (rc)
      return rc;
    pl->state[i].p = r->p;
    pl->state[i].n = (size_t)(r->end - r->p);
    weft__snap_why_t why = {0};
    rc = weft__snap_state_check(r->w, weft__snap_state_tags[i], pl, lv, r->p,
                                pl->state[i].n, &why);
    if (rc) {
      r->p += why.at;
      return FAIL(r, rc, "%s", why.msg);
    }
    r->p = r->end;
  }
  return 0;
}

static int read_ext(weft__snap_rd_t *r, weft__snap_plan_t *pl) {
  if (pl->next_ext == WEFT__SNAP_MAX_SECTIONS)
    return BAD(r, "more than %u named sections", WEFT__SNAP_MAX_SECTIONS);
  weft__snap_ext_t *x = &pl->ext[pl->next_ext];
  const char *name = NULL;
  uint32_t len = 0;
  int rc = get_name(r, WEFT_SNAPSHOT_NAME_MAX, &name, &len, "section name");
  if (rc)
    return rc;
  memcpy(x->name, name, len);
  x->name[len] = 0;
  for (uint32_t i = 0; i < pl->next_ext; i++)
    if (!strcmp(pl->ext[i].name, x->name))
      return BAD(r, "section '%s' twice", x->name);
  x->data = r->p;
  x->n = (size_t)(r->end - r->p);
  r->p = r->end;
  x->slot = -1;
  const weft__snap_reg_t *reg = weft__snap_registry(r->w);
  for (uint32_t i = 0; reg && i < reg->n; i++)
    if (!strcmp(reg->s[i].name, x->name))
      x->slot = (int)i;
  if (x->slot >= 0 && reg->s[x->slot].d.check) {
    rc = reg->s[x->slot].d.check(r->w, reg->s[x->slot].d.user, x->data, x->n);
    if (rc)
      return FAIL(r, rc < 0 ? rc : WEFT_EFORMAT,
                  "section '%s' rejected its bytes", x->name);
  }
  pl->next_ext++;
  return 0;
}

/* The named sections, then END, which must close the input. */
static int read_tail(weft__snap_rd_t *r, weft__snap_plan_t *pl) {
  for (;;) {
    if (r->n - r->next >= 4 &&
        weft__snap_u32(r->data + r->next) == WEFT__SNAP_SECT) {
      int rc = weft__snap_open_section(r, WEFT__SNAP_SECT);
      if (rc || (rc = read_ext(r, pl)))
        return rc;
      continue;
    }
    int rc = weft__snap_open_section(r, WEFT__SNAP_END);
    if (rc || (rc = weft__snap_close_section(r)))
      return rc;
    if (r->next != r->n) {
      r->p = r->data + r->next;
      return BAD(r, "%zu bytes after the end section", r->n - r->next);
    }
    return 0;
  }
}

int weft__snap_parse(const weft_world_t *w, const uint8_t *data, size_t n,
                     weft__snap_plan_t *pl, weft_snapshot_error_t *err) {
  return weft__snap_parse_staged(w, data, n, pl, NULL, err);
}

int weft__snap_parse_staged(const weft_world_t *w, const uint8_t *data,
                            size_t n, weft__snap_plan_t *pl,
                            weft__snap_stage_t *stage,
                            weft_snapshot_error_t *err) {
  memset(pl, 0, sizeof(*pl));
  weft__snap_rd_t r = {.w = w, .err = err, .data = data, .n = n};
  weft__snap_live_t live = {0};
  int rc = read_header(&r);
  if (!rc)
    rc = read_meta(&r, pl);
  if (!rc)
    rc = read_comps(&r, pl);
  if (!rc)
    rc = weft__snap_read_archs(&r, pl);
  if (!rc && stage)
    weft__snap_stage_begin(stage, pl);
  if (!rc)
    rc = read_index(&r, pl, &live, stage && stage->on);
  if (!rc && stage)
    stage->loc = live.loc;
  if (!rc)
    rc = read_rows(&r, pl, &live, stage);
  if (!rc)
    rc = read_state(&r, pl, &live);
  if (!rc)
    rc = read_tail(&r, pl);

  if (rc)
    weft__snap_plan_free(pl);
  return rc;
}

void weft__snap_plan_free(weft__snap_plan_t *pl) {
  for (uint32_t i = 0; pl->archs && i < pl->narch; i++)
    free(pl->archs[i].pairs);
  free(pl->comps);
  free(pl->archs);
  free(pl->order);
  pl->comps = NULL;
  pl->archs = NULL;
  pl->order = NULL;
}

int weft__snap_fail(const weft_world_t *w, weft_snapshot_error_t *err, int code,
                    uint32_t section, uint64_t offset, const char *fmt, ...) {
  char msg[sizeof(err->message)];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  char sec[5] = "";
  if (section)
    tag_name(section, sec);
  if (err) {
    err->code = code;
    memcpy(err->section, sec, sizeof sec);
    err->offset = offset;
    memcpy(err->message, msg, sizeof msg);
  }
  if (w)
    weft__fail(w, code, WEFT__FILE, WEFT__LINE, "snapshot %s at byte %llu: %s",
               section ? sec : "-", (unsigned long long)offset, msg);
  return code;
}

int weft__snap_read_comp(weft__snap_rd_t *r, weft__snap_plan_t *pl,
                         uint32_t i) {
  return read_comp(r, pl, i);
}
