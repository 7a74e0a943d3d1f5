/* SPDX-License-Identifier: MIT */
/*
 * The validator's ARCH section (part of weft__snap_parse, snapshot_read.c):
 * every archetype's components, pairs and chunk row counts, the chunk
 * segments and free stack (each chunk id once), then the mapping of the
 * archetypes onto this program's component ids.
 */
#include <stdlib.h>
#include <string.h>

#include "core/snapshot_read.h"

#include "core/relation.h"
#include "core/world.h"

/* Reads u32 component indices: ascending, below ncomp. */
static int read_comp_list(weft__snap_rd_t *r, const weft__snap_plan_t *pl,
                          uint32_t n, const uint8_t **out, const char *what) {
  int rc = weft__snap_get_bytes(r, n, 4, out, what);
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
static int read_pairs(weft__snap_rd_t *r, const weft__snap_plan_t *pl,
                      weft__snap_arch_t *a, uint32_t i) {
  int rc = weft__snap_get_bytes(r, a->npairs, 16, &a->praw, "archetype pairs");
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

static int read_arch(weft__snap_rd_t *r, weft__snap_plan_t *pl, uint32_t i) {
  weft__snap_arch_t *a = &pl->archs[i];
  uint32_t nd = 0;
  int rc = weft__snap_get_u32(r, &a->npresent, "archetype component count");
  if (!rc)
    rc = weft__snap_get_u32(r, &nd, "archetype disabled count");
  if (!rc)
    rc = weft__snap_get_u32(r, &a->count, "archetype row count");
  if (!rc)
    rc = weft__snap_get_u32(r, &a->nchunks, "archetype chunk count");
  if (!rc)
    rc = weft__snap_get_u32(r, &a->chunk_total, "archetype chunks owned");
  if (!rc)
    rc = weft__snap_get_u32(r, &a->row_cap, "archetype rows per chunk");
  if (!rc)
    rc = weft__snap_get_u32(r, &a->born, "archetype creation stamp");
  if (!rc)
    rc = weft__snap_get_u32(r, &a->npairs, "archetype pair count");
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
      (rc = weft__snap_get_bytes(r, a->nchunks, 4, &a->counts,
                                 "chunk row counts")))
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
static int read_chunk_free(weft__snap_rd_t *r, weft__snap_plan_t *pl,
                           uint8_t *seen, uint64_t held) {
  int rc = weft__snap_get_u32(r, &pl->chunk_nfree, "chunk free count");
  if (!rc)
    rc = weft__snap_get_bytes(r, pl->chunk_nfree, 4, &pl->chunk_free,
                              "chunk free ids");
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
static int read_seg(weft__snap_rd_t *r, const weft__snap_plan_t *pl,
                    uint8_t *seen, uint32_t s, uint32_t *owned) {
  uint32_t a = 0, n = 0;
  const uint8_t *ids = NULL;
  int rc = weft__snap_get_u32(r, &a, "segment archetype");
  if (!rc)
    rc = weft__snap_get_u32(r, &n, "segment chunks");
  if (!rc)
    rc = weft__snap_get_bytes(r, n, 4, &ids, "segment chunk ids");
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

static int read_segs(weft__snap_rd_t *r, weft__snap_plan_t *pl) {
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
static int match_comp(weft__snap_rd_t *r, weft__snap_comp_t *c, uint32_t arch) {
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
        if (!weft__snap_same_name(sf->name, sf->name_len, tf->name,
                                  strlen(tf->name)))
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
static int map_pairs(weft__snap_rd_t *r, weft__snap_plan_t *pl,
                     weft__snap_arch_t *a, uint32_t i) {
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
static int order_archs(weft__snap_rd_t *r, weft__snap_plan_t *pl) {
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

static int map_archs(weft__snap_rd_t *r, weft__snap_plan_t *pl) {
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

int weft__snap_read_archs(weft__snap_rd_t *r, weft__snap_plan_t *pl) {
  int rc = weft__snap_open_section(r, WEFT__SNAP_ARCH);
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
  if ((rc = read_segs(r, pl)) || (rc = weft__snap_close_section(r)))
    return rc;
  return map_archs(r, pl);
}

int weft__snap_match_comp(weft__snap_rd_t *r, weft__snap_comp_t *c,
                          uint32_t where) {
  return match_comp(r, c, where);
}
