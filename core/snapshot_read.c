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

#include "core/check.h"
#include "core/relation.h"
#include "core/snapshot_state.h"
#include "core/world.h"

typedef struct rd_t {
  const weft_world_t *w;
  weft_snapshot_error_t *err;
  const uint8_t *data; /* the whole input */
  size_t n;
  uint32_t sec;       /* tag of the section being read */
  const uint8_t *p;   /* cursor in its payload */
  const uint8_t *end; /* the payload's end */
  size_t next;        /* offset of the next section */
} rd_t;

#define FAIL(r, code, ...)                                                     \
  weft__snap_fail((r)->w, (r)->err, (code), (r)->sec,                          \
                  (uint64_t)((r)->p - (r)->data), __VA_ARGS__)
#define BAD(r, ...) FAIL(r, WEFT_EFORMAT, __VA_ARGS__)

static bool has(const rd_t *r, uint64_t n) {
  return (uint64_t)(r->end - r->p) >= n;
}

static int get_u32(rd_t *r, uint32_t *v, const char *what) {
  if (!has(r, 4))
    return BAD(r, "truncated: %s missing", what);
  *v = weft__snap_u32(r->p);
  r->p += 4;
  return 0;
}

/* Takes n bytes of the payload (n * size, overflow-checked). */
static int get_bytes(rd_t *r, uint64_t count, uint64_t size,
                     const uint8_t **out, const char *what) {
  if (size && count > UINT64_MAX / size)
    return BAD(r, "%s: %llu entries overflow", what, (unsigned long long)count);
  if (!has(r, count * size))
    return BAD(r, "truncated: %s needs %llu bytes, %llu left", what,
               (unsigned long long)(count * size),
               (unsigned long long)(r->end - r->p));
  *out = r->p;
  r->p += count * size;
  return 0;
}

/* A name: u32 length (1..max-1), then the bytes, no NUL among them. */
static int get_name(rd_t *r, uint32_t max, const char **s, uint32_t *len,
                    const char *what) {
  uint32_t n = 0;
  int rc = get_u32(r, &n, what);
  if (rc)
    return rc;
  if (n == 0 || n >= max)
    return BAD(r, "%s: length %u outside 1..%u", what, n, max - 1);
  const uint8_t *p = NULL;
  rc = get_bytes(r, n, 1, &p, what);
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

/* Opens the next section, which must be `tag`: checks its length, its
 * checksum and its padding; positions the cursor on its payload. */
static int open_section(rd_t *r, uint32_t tag) {
  char want[5], got[5];
  r->sec = tag;
  r->p = r->data + r->next;
  r->end = r->data + r->n;
  if (!has(r, WEFT__SNAP_SEC_HEAD))
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
  uint64_t h = weft__xxh3(r->p, WEFT__SNAP_SEC_HEAD + len);
  for (uint64_t i = 0; i < pad; i++)
    if (payload[len + i]) {
      r->p = payload + len + i;
      return BAD(r, "nonzero padding after the payload");
    }
#ifndef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
  /* (Fuzzing builds skip it, to reach the checks behind it.) */
  if (weft__snap_u64(payload + len + pad) != h)
    return BAD(r, "checksum mismatch (damaged section)");
#else
  (void)h;
#endif
  r->p = payload;
  r->end = payload + len;
  r->next = (size_t)(payload + len + pad + WEFT__SNAP_SEC_TAIL - r->data);
  return 0;
}

static int close_section(rd_t *r) {
  if (r->p != r->end)
    return BAD(r, "%llu unread bytes at the end of the section",
               (unsigned long long)(r->end - r->p));
  return 0;
}

static int read_header(rd_t *r) {
  r->p = r->data;
  r->end = r->data + r->n;
  if (!has(r, WEFT__SNAP_HEADER))
    return BAD(r, "truncated: %zu bytes, a header is %u", r->n,
               WEFT__SNAP_HEADER);
  if (memcmp(r->data, WEFT__SNAP_MAGIC, 8))
    return BAD(r, "not a weft snapshot (bad magic)");
#ifndef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
  if (weft__snap_u64(r->data + 24) != weft__xxh3(r->data, 24))
    return BAD(r, "header checksum mismatch");
#endif
  uint32_t version = weft__snap_u32(r->data + 8);
  if (version > WEFT_SNAPSHOT_VERSION)
    return FAIL(r, WEFT_EVERSION, "format version %u, this library reads %u",
                version, WEFT_SNAPSHOT_VERSION);
  if (version == 0 || weft__snap_u32(r->data + 12) ||
      weft__snap_u64(r->data + 16))
    return BAD(r, "bad version (%u) or nonzero reserved header words", version);
  r->next = WEFT__SNAP_HEADER;
  return 0;
}

static int read_meta(rd_t *r, weft__snap_plan_t *pl) {
  int rc = open_section(r, WEFT__SNAP_META);
  if (rc)
    return rc;
  const uint8_t *m = NULL;
  rc = get_bytes(r, 56, 1, &m, "META");
  if (rc || (rc = close_section(r)))
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
  if (pl->max_gen != w->index.max_gen)
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

static int read_field(rd_t *r, const weft__snap_comp_t *c,
                      weft__snap_field_t *f) {
  int rc = get_name(r, WEFT_NAME_MAX, &f->name, &f->name_len, "field name");
  if (!rc)
    rc = get_u32(r, &f->offset, "field offset");
  if (!rc)
    rc = get_u32(r, &f->size, "field size");
  if (!rc)
    rc = get_u32(r, &f->type, "field type");
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

static bool same_name(const char *a, uint32_t na, const char *b, uint32_t nb) {
  return na == nb && memcmp(a, b, na) == 0;
}

static int read_comp(rd_t *r, weft__snap_plan_t *pl, uint32_t i) {
  weft__snap_comp_t *c = &pl->comps[i];
  int rc = get_name(r, WEFT_NAME_MAX, &c->name, &c->name_len, "component name");
  if (!rc)
    rc = get_u32(r, &c->size, "component size");
  if (!rc)
    rc = get_u32(r, &c->align, "component alignment");
  if (!rc)
    rc = get_u32(r, &c->flags, "component flags");
  if (!rc)
    rc = get_u32(r, &c->nfields, "field count");
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
      if (same_name(c->fields[f].name, c->fields[f].name_len, c->fields[g].name,
                    c->fields[g].name_len))
        return BAD(r, "component '%.*s': field '%.*s' twice", (int)c->name_len,
                   c->name, (int)c->fields[f].name_len, c->fields[f].name);
  }
  for (uint32_t j = 0; j < i; j++)
    if (same_name(c->name, c->name_len, pl->comps[j].name,
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

static int read_comps(rd_t *r, weft__snap_plan_t *pl) {
  int rc = open_section(r, WEFT__SNAP_COMP);
  if (rc)
    return rc;
  pl->comps = calloc(pl->ncomp ? pl->ncomp : 1, sizeof(*pl->comps));
  if (!pl->comps)
    return FAIL(r, WEFT_ENOMEM, "out of memory reading components");
  for (uint32_t i = 0; i < pl->ncomp; i++)
    if ((rc = read_comp(r, pl, i)))
      return rc;
  return close_section(r);
}

/* Reads u32 component indices: ascending, below ncomp. */
static int read_comp_list(rd_t *r, const weft__snap_plan_t *pl, uint32_t n,
                          const uint8_t **out, const char *what) {
  int rc = get_bytes(r, n, 4, out, what);
  for (uint32_t k = 0; !rc && k < n; k++) {
    uint32_t v = weft__snap_u32(*out + 4 * k);
    if (v >= pl->ncomp || (k && v <= weft__snap_u32(*out + 4 * (k - 1))))
      return BAD(r, "%s: entry %u (%u) is unknown or out of order", what, k, v);
  }
  return rc;
}

/* Whether component index v is in archetype a's (ascending) list. */
static bool arch_has(const weft__snap_arch_t *a, uint32_t v) {
  for (uint32_t k = 0; k < a->npresent; k++)
    if (weft__snap_u32(a->comps + 4 * k) == v)
      return true;
  return false;
}

/* Archetype a's dense relation pairs: relations a holds, targets of this
 * world (dead ones too: compaction prunes their archetypes later). Their
 * order is checked once mapped to this program's ids (map_archs). */
static int read_pairs(rd_t *r, const weft__snap_plan_t *pl,
                      weft__snap_arch_t *a, uint32_t i) {
  int rc = get_bytes(r, a->npairs, 16, &a->praw, "archetype pairs");
  for (uint32_t k = 0; !rc && k < a->npairs; k++) {
    const uint8_t *p = a->praw + 16 * k;
    uint32_t ci = weft__snap_u32(p);
    uint64_t t = weft__snap_u64(p + 8);
    if (ci >= pl->ncomp || weft__snap_u32(p + 4) ||
        !(pl->comps[ci].flags & WEFT_COMPONENT_RELATION) || !arch_has(a, ci) ||
        (t >> 56) != pl->tag || (uint32_t)t >= pl->capacity)
      return BAD(r,
                 "archetype %u pair %u: relation %u or target 0x%016llx "
                 "is not the archetype's",
                 i, k, ci, (unsigned long long)t);
  }
  return rc;
}

static int read_arch(rd_t *r, weft__snap_plan_t *pl, uint32_t i) {
  weft__snap_arch_t *a = &pl->archs[i];
  uint32_t nd = 0;
  int rc = get_u32(r, &a->npresent, "archetype component count");
  if (!rc)
    rc = get_u32(r, &nd, "archetype disabled count");
  if (!rc)
    rc = get_u32(r, &a->count, "archetype row count");
  if (!rc)
    rc = get_u32(r, &a->nchunks, "archetype chunk count");
  if (!rc)
    rc = get_u32(r, &a->chunk_total, "archetype chunks owned");
  if (!rc)
    rc = get_u32(r, &a->row_cap, "archetype rows per chunk");
  if (!rc)
    rc = get_u32(r, &a->born, "archetype creation stamp");
  if (!rc)
    rc = get_u32(r, &a->npairs, "archetype pair count");
  if (rc)
    return rc;
  if (a->row_cap == 0 && i > 0 && i + 1 < pl->narch && !a->npresent && !nd &&
      !a->count && !a->nchunks && !a->chunk_total && !a->born && !a->npairs) {
    a->vacant = true; /* a freed id */
    return 0;
  }
  if (a->born >= pl->arch_born || (i == 0) != (a->born == 0) ||
      (a->npairs && !a->npresent))
    return BAD(r, "archetype %u: creation stamp %u (next %u) or %u pairs", i,
               a->born, pl->arch_born, a->npairs);
  if (a->npresent > WEFT_MAX_COMPONENTS || nd > a->npresent ||
      a->nchunks > a->chunk_total || a->chunk_total > pl->chunk_count ||
      a->row_cap == 0 || a->row_cap > WEFT_CHUNK_ROWS_MAX ||
      (i == 0 && a->npresent))
    return BAD(r,
               "archetype %u: bad counts (%u components, %u disabled, %u "
               "of %u chunks, %u rows per chunk)",
               i, a->npresent, nd, a->nchunks, a->chunk_total, a->row_cap);
  const uint8_t *dis = NULL;
  if ((rc = read_comp_list(r, pl, a->npresent, &a->comps, "archetype")) ||
      (rc = read_comp_list(r, pl, nd, &dis, "disabled list")) ||
      (rc = read_pairs(r, pl, a, i)) ||
      (rc = get_bytes(r, a->nchunks, 4, &a->counts, "chunk row counts")))
    return rc;
  uint64_t sum = 0;
  for (uint32_t k = 0; k < a->nchunks; k++) {
    uint32_t c = weft__snap_u32(a->counts + 4 * k);
    if (c == 0 || c > a->row_cap)
      return BAD(r, "archetype %u chunk %u: %u rows, 1..%u allowed", i, k, c,
                 a->row_cap);
    sum += c;
  }
  if (sum != a->count)
    return BAD(r, "archetype %u: chunks hold %llu rows, not %u", i,
               (unsigned long long)sum, a->count);
  /* Disabled components must be present (both lists ascend). */
  for (uint32_t d = 0, k = 0; d < nd; d++) {
    uint32_t v = weft__snap_u32(dis + 4 * d);
    while (k < a->npresent && weft__snap_u32(a->comps + 4 * k) < v)
      k++;
    if (k == a->npresent || weft__snap_u32(a->comps + 4 * k) != v)
      return BAD(r, "archetype %u: disabled component %u is not present", i, v);
    weft__mask_set(&a->disabled, v); /* snapshot indices for now */
  }
  return 0;
}

/* Marks chunk id c seen; false when it is out of range or seen twice. */
static bool see_chunk(uint8_t *seen, uint32_t count, uint32_t c) {
  if (c >= count || (seen[c >> 3] >> (c & 7) & 1u))
    return false;
  seen[c >> 3] |= (uint8_t)(1u << (c & 7));
  return true;
}

/* The chunk id free stack: the ids no segment holds, each once. */
static int read_chunk_free(rd_t *r, weft__snap_plan_t *pl, uint8_t *seen,
                           uint64_t held) {
  int rc = get_u32(r, &pl->chunk_nfree, "chunk free count");
  if (!rc)
    rc = get_bytes(r, pl->chunk_nfree, 4, &pl->chunk_free, "chunk free ids");
  if (rc)
    return rc;
  if ((uint64_t)pl->chunk_nfree + held != pl->chunk_count)
    return BAD(r, "%u free chunk ids and %llu held are not %u", pl->chunk_nfree,
               (unsigned long long)held, pl->chunk_count);
  for (uint32_t k = 0; k < pl->chunk_nfree; k++) {
    uint32_t c = weft__snap_u32(pl->chunk_free + 4 * k);
    if (!see_chunk(seen, pl->chunk_count, c))
      return BAD(r, "free chunk id %u is repeated, held or past %u", c,
                 pl->chunk_count);
  }
  return 0;
}

/* One segment: an archetype's n chunks, their ids unseen so far. */
static int read_seg(rd_t *r, const weft__snap_plan_t *pl, uint8_t *seen,
                    uint32_t s, uint32_t *owned) {
  uint32_t a = 0, n = 0;
  const uint8_t *ids = NULL;
  int rc = get_u32(r, &a, "segment archetype");
  if (!rc)
    rc = get_u32(r, &n, "segment chunks");
  if (!rc)
    rc = get_bytes(r, n, 4, &ids, "segment chunk ids");
  if (rc)
    return rc;
  if (a >= pl->narch || pl->archs[a].vacant || n == 0)
    return BAD(r, "segment %u: archetype %u, %u chunks", s, a, n);
  for (uint32_t k = 0; k < n; k++) {
    uint32_t c = weft__snap_u32(ids + 4 * k);
    if (!see_chunk(seen, pl->chunk_count, c))
      return BAD(r, "segment %u: chunk id %u is repeated or past %u", s, c,
                 pl->chunk_count);
  }
  owned[a] += n;
  return 0;
}

static int read_segs(rd_t *r, weft__snap_plan_t *pl) {
  /* Every chunk id is in the rest of the section once (4 bytes): a count
   * beyond that must not size the allocation below. */
  if (pl->chunk_count > (uint64_t)(r->end - r->p) / 4)
    return BAD(r, "%u chunk ids cannot fit %llu bytes", pl->chunk_count,
               (unsigned long long)(r->end - r->p));
  pl->segs = r->p;
  uint32_t *owned = calloc(pl->narch, sizeof(*owned));
  uint8_t *seen = calloc((size_t)pl->chunk_count / 8 + 1, 1);
  int rc = owned && seen
               ? 0
               : FAIL(r, WEFT_ENOMEM, "out of memory checking segments");
  for (uint32_t s = 0; s < pl->nsegs && !rc; s++)
    rc = read_seg(r, pl, seen, s, owned);
  uint64_t held = 0;
  for (uint32_t a = 0; a < pl->narch && !rc; a++) {
    if (owned[a] != pl->archs[a].chunk_total)
      rc = BAD(r, "archetype %u owns %u chunks, its segments %u", a,
               pl->archs[a].chunk_total, owned[a]);
    held += owned[a];
  }
  if (!rc)
    rc = read_chunk_free(r, pl, seen, held);
  free(owned);
  free(seen);
  return rc;
}

/* Decides how each used component's bytes load (snapshot_format.h). */
static int match_comp(rd_t *r, weft__snap_comp_t *c, uint32_t arch) {
  if (!c->target)
    return FAIL(r, WEFT_ENOCOMP,
                "component '%.*s' (archetype %u) is not registered in this "
                "program",
                (int)c->name_len, c->name, arch);
  if (c->mode != WEFT__SNAP_UNUSED)
    return 0;
  const weft__component_t *t = weft__registry_get(&r->w->registry, c->target);
  const char *why = NULL;
  if ((c->size == 0) != (t->size == 0))
    why = "a tag on one side, data on the other";
  else if ((c->flags ^ t->flags) & WEFT_COMPONENT_RELATION)
    why = "a relation on one side only";
  if (why)
    return FAIL(r, WEFT_EMIGRATE, "component '%s': %s", t->name, why);
  bool soa_same = !((c->flags ^ t->flags) & WEFT_COMPONENT_SOA);
  if (t->size == 0) {
    c->mode = WEFT__SNAP_TAG;
  } else if ((c->flags | t->flags) & WEFT_COMPONENT_TRANSIENT) {
    c->mode = WEFT__SNAP_ZERO;
  } else if (c->nfields == 0 || t->field_count == 0) {
    if (c->size != t->size || c->align != t->alignment)
      return FAIL(r, WEFT_EMIGRATE,
                  "component '%s': %u bytes aligned %u in the snapshot, %u "
                  "aligned %u here, and no fields to migrate by",
                  t->name, c->size, c->align, t->size, t->alignment);
    c->mode = (c->nfields == t->field_count && soa_same) ? WEFT__SNAP_SAME
                                                         : WEFT__SNAP_RAW;
  } else {
    bool same = soa_same && c->size == t->size && c->align == t->alignment &&
                c->nfields == t->field_count;
    for (uint32_t f = 0; f < t->field_count; f++) {
      const weft__field_t *tf = &t->fields[f];
      c->from[f] = -1;
      for (uint32_t g = 0; g < c->nfields; g++) {
        const weft__snap_field_t *sf = &c->fields[g];
        if (!same_name(sf->name, sf->name_len, tf->name, strlen(tf->name)))
          continue;
        if (sf->size != tf->size)
          return FAIL(r, WEFT_EMIGRATE,
                      "component '%s' field '%s': %u bytes in the snapshot, "
                      "%u here",
                      t->name, tf->name, sf->size, tf->size);
        if (sf->type && tf->type && sf->type != tf->type)
          return FAIL(r, WEFT_EMIGRATE,
                      "component '%s' field '%s': type %u in the snapshot, "
                      "%u here",
                      t->name, tf->name, sf->type, tf->type);
        c->from[f] = (int8_t)g;
      }
      same &= c->from[f] == (int8_t)f && c->fields[f].offset == tf->offset;
    }
    c->mode = same ? WEFT__SNAP_SAME : WEFT__SNAP_MIGRATE;
  }
  return 0;
}

/* Maps the archetypes' snapshot indices to this program's ids and checks
 * that no two archetypes become one. */
static int pair_cmp(const void *x, const void *y) {
  const weft__pair_t *a = x, *b = y;
  if (a->rel != b->rel)
    return a->rel < b->rel ? -1 : 1;
  return a->target < b->target ? -1 : a->target > b->target;
}

/* Maps archetype a's pairs to this program's relation ids and sorts them
 * as a signature keeps them; each relation must be dense here too. */
static int map_pairs(rd_t *r, weft__snap_plan_t *pl, weft__snap_arch_t *a,
                     uint32_t i) {
  if (!a->npairs)
    return 0;
  a->pairs = calloc(a->npairs, sizeof(*a->pairs));
  if (!a->pairs)
    return FAIL(r, WEFT_ENOMEM, "out of memory reading pairs");
  for (uint32_t k = 0; k < a->npairs; k++) {
    const uint8_t *p = a->praw + 16 * k;
    const weft__snap_comp_t *c = &pl->comps[weft__snap_u32(p)];
    const weft__rel_def_t *d = weft__rel_def(r->w->rel, c->target);
    if (!d || !weft__rel_dense(d))
      return FAIL(r, WEFT_EMIGRATE,
                  "archetype %u: relation '%.*s' is not a dense relation "
                  "in this program",
                  i, (int)c->name_len, c->name);
    a->pairs[k] =
        (weft__pair_t){.target = weft__snap_u64(p + 8), .rel = c->target};
  }
  qsort(a->pairs, a->npairs, sizeof(*a->pairs), pair_cmp);
  for (uint32_t k = 1; k < a->npairs; k++) {
    const weft__pair_t *x = &a->pairs[k - 1], *y = &a->pairs[k];
    bool exclusive =
        weft__rel_def(r->w->rel, y->rel)->flags & WEFT_RELATION_EXCLUSIVE;
    if (!pair_cmp(x, y) || (x->rel == y->rel && exclusive))
      return BAD(r,
                 "archetype %u: a pair twice, or two of an exclusive "
                 "relation",
                 i);
  }
  return 0;
}

static bool same_pairs(const weft__snap_arch_t *a, const weft__snap_arch_t *b) {
  return a->npairs == b->npairs &&
         (!a->npairs ||
          !memcmp(a->pairs, b->pairs, a->npairs * sizeof(*a->pairs)));
}

static int born_cmp(const void *x, const void *y) {
  uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
  return a < b ? -1 : a > b;
}

/* Orders the live archetypes by creation stamp (pl->order), which must be
 * distinct: the loader creates them in that order. */
static int order_archs(rd_t *r, weft__snap_plan_t *pl) {
  pl->order = malloc((size_t)pl->narch * 8);
  if (!pl->order)
    return FAIL(r, WEFT_ENOMEM, "out of memory ordering archetypes");
  uint64_t *o = pl->order;
  uint32_t n = 0;
  for (uint32_t i = 0; i < pl->narch; i++)
    if (!pl->archs[i].vacant)
      o[n++] = (uint64_t)pl->archs[i].born << 32 | i;
  qsort(o, n, 8, born_cmp);
  for (uint32_t k = 1; k < n; k++)
    if (o[k] >> 32 == o[k - 1] >> 32)
      return BAD(r, "archetypes %u and %u share creation stamp %u",
                 (uint32_t)o[k - 1], (uint32_t)o[k], (uint32_t)(o[k] >> 32));
  pl->norder = n;
  return 0;
}

static int map_archs(rd_t *r, weft__snap_plan_t *pl) {
  for (uint32_t i = 0; i < pl->narch; i++) {
    weft__snap_arch_t *a = &pl->archs[i];
    if (a->vacant)
      continue;
    weft__mask_t dis = a->disabled;
    memset(&a->disabled, 0, sizeof(a->disabled));
    for (uint32_t k = 0; k < a->npresent; k++) {
      uint32_t s = weft__snap_u32(a->comps + 4 * k);
      int rc = match_comp(r, &pl->comps[s], i);
      if (rc)
        return rc;
      weft__mask_set(&a->present, pl->comps[s].target);
      if (weft__mask_test(&dis, s))
        weft__mask_set(&a->disabled, pl->comps[s].target);
    }
    int rc = map_pairs(r, pl, a, i);
    if (rc)
      return rc;
    for (uint32_t j = 0; j < i; j++)
      if (!pl->archs[j].vacant &&
          weft__mask_eq(&a->present, &pl->archs[j].present) &&
          weft__mask_eq(&a->disabled, &pl->archs[j].disabled) &&
          same_pairs(a, &pl->archs[j]))
        return BAD(r, "archetypes %u and %u have the same signature", j, i);
  }
  return order_archs(r, pl);
}

static int read_archs(rd_t *r, weft__snap_plan_t *pl) {
  int rc = open_section(r, WEFT__SNAP_ARCH);
  if (rc)
    return rc;
  /* Each archetype takes 32 bytes at least: a count beyond that is a lie
   * that must not size an allocation. */
  if (pl->narch > (uint64_t)(r->end - r->p) / 32)
    return BAD(r, "%u archetypes cannot fit %llu bytes", pl->narch,
               (unsigned long long)(r->end - r->p));
  pl->archs = calloc(pl->narch, sizeof(*pl->archs));
  if (!pl->archs)
    return FAIL(r, WEFT_ENOMEM, "out of memory reading archetypes");
  for (uint32_t i = 0; i < pl->narch; i++)
    if ((rc = read_arch(r, pl, i)))
      return rc;
  if ((rc = read_segs(r, pl)) || (rc = close_section(r)))
    return rc;
  return map_archs(r, pl);
}

/* Checks the dead records and the free list; marks live slots in `live`. */
static int check_records(rd_t *r, const weft__snap_plan_t *pl, uint32_t *live) {
  uint32_t nlive = 0, nretired = 0;
  for (uint32_t s = 0; s < pl->hwm; s++) {
    uint32_t v = weft__snap_u32(pl->recs + 4 * s);
    if (v == WEFT__REC_LOC) {
      live[s] = WEFT__SNAP_LIVE_REC;
      nlive++;
      if (s >= pl->sweep && s < pl->sweep_end)
        return BAD(r, "slot %u is live inside the sweep range", s);
      continue;
    }
    uint32_t gen = v & WEFT__GEN_MASK, flags = v & ~WEFT__GEN_MASK;
    bool retired = flags == WEFT__REC_RETIRED;
    if ((flags && !retired) || gen > pl->max_gen ||
        (!retired && gen >= pl->max_gen))
      return BAD(r, "slot %u: record 0x%08x is not a dead slot's", s, v);
    nretired += retired;
  }
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

static int read_index(rd_t *r, weft__snap_plan_t *pl, weft__snap_live_t *lv) {
  int rc = open_section(r, WEFT__SNAP_INDX);
  if (rc)
    return rc;
  uint32_t *f[6] = {&pl->hwm,   &pl->alive,     &pl->retired,
                    &pl->sweep, &pl->sweep_end, &pl->free_n};
  for (int i = 0; i < 6 && !rc; i++)
    rc = get_u32(r, f[i], "index header");
  if (rc)
    return rc;
  if (pl->hwm > r->w->index.capacity)
    return FAIL(r, WEFT_ELIMIT,
                "snapshot uses %u entity slots, this world holds %u", pl->hwm,
                r->w->index.capacity);
  if (pl->free_n > pl->hwm || pl->sweep > pl->sweep_end ||
      pl->sweep_end > pl->hwm || pl->alive > pl->hwm ||
      pl->retired > pl->hwm - pl->alive)
    return BAD(r,
               "index counts inconsistent (hwm %u, alive %u, retired %u, "
               "sweep %u..%u, free %u)",
               pl->hwm, pl->alive, pl->retired, pl->sweep, pl->sweep_end,
               pl->free_n);
  if ((rc = get_bytes(r, pl->free_n, 4, &pl->free, "free list")) ||
      (rc = get_bytes(r, pl->hwm, 4, &pl->recs, "records")) ||
      (rc = close_section(r)))
    return rc;
  uint64_t rows = 0;
  for (uint32_t i = 0; i < pl->narch; i++)
    rows += pl->archs[i].count;
  if (rows != pl->alive)
    return BAD(r, "%u live slots but %llu rows", pl->alive,
               (unsigned long long)rows);
  /* The world's scratch (snapshot_format.h): the registry exists, the
   * loader made sure of it; reusing it is no change of the world. */
  weft__snap_reg_t *reg = (weft__snap_reg_t *)weft__snap_registry(r->w);
  if (reg->scratch_n < pl->hwm || !reg->scratch) {
    free(reg->scratch);
    size_t n = pl->hwm ? pl->hwm : 1;
    /* Two words per slot: its state, and its row's archetype. */
    reg->scratch = malloc(2 * n * sizeof(*reg->scratch));
    reg->scratch_n = reg->scratch ? n : 0;
    if (!reg->scratch)
      return FAIL(r, WEFT_ENOMEM, "out of memory checking the index");
  }
  lv->v = reg->scratch;
  lv->arch = reg->scratch + reg->scratch_n;
  memset(lv->v, 0, (size_t)pl->hwm * sizeof(*lv->v));
  return check_records(r, pl, lv->v);
}

/* Checks one chunk's handles: this world tag, live slots, each once. */
static int check_handles(rd_t *r, const weft__snap_plan_t *pl, const uint8_t *p,
                         uint32_t n, const weft__snap_live_t *lv,
                         uint32_t arch) {
  uint32_t *live = lv->v;
  const uint64_t tag = (uint64_t)pl->tag << 56;
  for (uint32_t k = 0; k < n; k++) {
    uint64_t e = weft__snap_u64(p + 8 * k);
    uint32_t slot = (uint32_t)e, gen = (uint32_t)(e >> 32) & WEFT__GEN_MASK;
    if ((e & WEFT__TAG_MASK) != tag || slot >= pl->hwm ||
        live[slot] != WEFT__SNAP_LIVE_REC || gen == 0 || gen > pl->max_gen) {
      r->p = p + 8 * k;
      return BAD(r,
                 "handle 0x%016llx is foreign, not live, repeated or of "
                 "a bad generation",
                 (unsigned long long)e);
    }
    live[slot] = WEFT__SNAP_LIVE_ROW | gen;
    lv->arch[slot] = arch;
  }
  return 0;
}

static int read_rows(rd_t *r, weft__snap_plan_t *pl,
                     const weft__snap_live_t *live) {
  int rc = open_section(r, WEFT__SNAP_ROWS);
  for (uint32_t i = 0; !rc && i < pl->narch; i++) {
    weft__snap_arch_t *a = &pl->archs[i];
    uint64_t row = 8;
    for (uint32_t k = 0; k < a->npresent; k++)
      row += pl->comps[weft__snap_u32(a->comps + 4 * k)].row_bytes;
    a->rows = r->p;
    for (uint32_t k = 0; !rc && k < a->nchunks; k++) {
      uint32_t n = weft__snap_u32(a->counts + 4 * k);
      const uint8_t *p = NULL;
      rc = get_bytes(r, n, row, &p, "chunk rows");
      if (!rc)
        rc = check_handles(r, pl, p, n, live, i);
    }
    a->rows_bytes = (uint64_t)(r->p - a->rows);
  }
  return rc ? rc : close_section(r);
}

/* EDGE, RESO, RAND, EVNT, each checked by snapshot_state.c. */
static int read_state(rd_t *r, weft__snap_plan_t *pl,
                      const weft__snap_live_t *lv) {
  for (uint32_t i = 0; i < WEFT__SNAP_NSTATE; i++) {
    int rc = open_section(r, weft__snap_state_tags[i]);
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

static int read_ext(rd_t *r, weft__snap_plan_t *pl) {
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
static int read_tail(rd_t *r, weft__snap_plan_t *pl) {
  for (;;) {
    if (r->n - r->next >= 4 &&
        weft__snap_u32(r->data + r->next) == WEFT__SNAP_SECT) {
      int rc = open_section(r, WEFT__SNAP_SECT);
      if (rc || (rc = read_ext(r, pl)))
        return rc;
      continue;
    }
    int rc = open_section(r, WEFT__SNAP_END);
    if (rc || (rc = close_section(r)))
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
  memset(pl, 0, sizeof(*pl));
  rd_t r = {.w = w, .err = err, .data = data, .n = n};
  weft__snap_live_t live = {0};
  int rc = read_header(&r);
  if (!rc)
    rc = read_meta(&r, pl);
  if (!rc)
    rc = read_comps(&r, pl);
  if (!rc)
    rc = read_archs(&r, pl);
  if (!rc)
    rc = read_index(&r, pl, &live);
  if (!rc)
    rc = read_rows(&r, pl, &live);
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
