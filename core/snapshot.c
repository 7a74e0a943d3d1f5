/* SPDX-License-Identifier: MIT */
/*
 * The second phase of a load, and the snapshot API around it: the section
 * registry, the loaders over memory, readers and files, and the atomic
 * file save.
 *
 * Once weft__snap_parse() accepted the input, the world is emptied (an
 * unused world needs nothing; a used one is cleared, trimmed and its
 * archetypes dropped, so that ids start over), the archetypes are created
 * in the snapshot's order, and, when every archetype has the rows per
 * chunk it had when saved, their segments are allocated in the saved
 * order of chunk ids, so that every entity lands at the chunk id and row
 * it had: the entity index, restored record by record, then equals the
 * saved one, and so does the world's digest. When a component's size
 * changed (a migration), rows per chunk may differ; the rows are then
 * packed into chunks as a spawn would, and only the handles and values
 * are kept. A world that already has the snapshot's archetypes and
 * segments keeps them: the validator staged the rows in fresh segment
 * memory (snapshot_stage.h), which replaces the old here.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/check.h"
#include "core/relation.h"
#include "core/snapshot_stage.h"
#include "core/snapshot_state.h"
#include "core/world.h"

/* ---- section registry --------------------------------------------------- */

static void snap_fini(weft_world_t *w) {
  if (w->snap)
    free(w->snap->scratch);
  free(w->snap);
  w->snap = NULL;
}

void weft__snapshot_fini(weft_world_t *w) {
  snap_fini(w);
}

const weft__snap_reg_t *weft__snap_registry(const weft_world_t *w) {
  return w ? w->snap : NULL;
}

weft__snap_reg_t *weft__snap_registry_get(weft_world_t *w) {
  if (!w->snap)
    w->snap = calloc(1, sizeof(*w->snap));
  return w->snap;
}

int weft_snapshot_section_register(weft_world_t *w,
                                   const weft_snapshot_section_desc_t *d) {
  WEFT_CHECK(w, w && d && d->name && d->save && d->load, WEFT_EINVAL,
             "a section needs a name, a save and a load callback");
  size_t len = strlen(d->name);
  WEFT_CHECK(w, len > 0 && len < WEFT_SNAPSHOT_NAME_MAX, WEFT_EINVAL,
             "section name must be 1..%u characters",
             WEFT_SNAPSHOT_NAME_MAX - 1);
  weft__snap_reg_t *reg = weft__snap_registry_get(w);
  WEFT_CHECK(w, reg, WEFT_ENOMEM, "out of memory for sections");
  uint32_t i = 0;
  while (i < reg->n && strcmp(reg->s[i].name, d->name))
    i++;
  WEFT_CHECK(w, i < WEFT__SNAP_MAX_SECTIONS, WEFT_ETOOMANY,
             "a world has at most %u snapshot sections",
             WEFT__SNAP_MAX_SECTIONS);
  memcpy(reg->s[i].name, d->name, len + 1);
  reg->s[i].d = *d;
  reg->s[i].d.name = reg->s[i].name;
  if (i == reg->n)
    reg->n++;
  return 0;
}

/* ---- emptying the world ------------------------------------------------- */

static bool unused(const weft_world_t *w) {
  return w->arch_count == 1 && w->chunks.count == 0 && w->index.hwm == 0;
}

/* An unused world's archetype ids and chunk ids start over, as a new
 * world's do. */
static void restart_ids(weft_world_t *w) {
  w->arch_born = 1; /* the root's is 0 */
  w->chunks.count = 0;
  w->chunks.nfree = 0;
}

/* Makes a used world look unused: no rows, no chunks, only the root
 * archetype, no slot ever issued. */
static int reset(weft_world_t *w) {
  int rc = weft_world_clear(w);
  if (rc)
    return rc;
  weft_world_trim(w);
  weft__archetypes_rollback(w, 1);
  WEFT_CHECK(w, w->arch_count == 1 && w->archs[0]->chunk_total == 0, WEFT_EBUSY,
             "the world's archetypes could not be dropped");
  restart_ids(w);
  weft__index_t *ix = &w->index;
  for (uint32_t s = 0; s < ix->hwm; s++)
    weft__index_rec(ix, s)->v = 0;
  ix->hwm = ix->alive = ix->retired = 0;
  ix->free_n = ix->sweep = ix->sweep_end = 0;
  return 0;
}

/* ---- filling it ---------------------------------------------------------- */

/* Extends the chunk id table to `count` ids, none of them in use, and
 * the free stack's room to as many. */
static int open_ids(weft_world_t *w, uint32_t count) {
  weft__chunk_store_t *cs = &w->chunks;
  if (weft__grow(&w->alloc, &cs->table, &cs->cap, count ? count : 1,
                 sizeof(*cs->table), 64) ||
      weft__grow(&w->alloc, &cs->free, &cs->free_cap, count ? count : 1,
                 sizeof(*cs->free), 64))
    return WEFT_ENOMEM;
  memset(&cs->table[cs->count], 0,
         (size_t)(count - cs->count) * sizeof(*cs->table));
  cs->count = count;
  w->index.table = cs->table;
  return 0;
}

/* Allocates the saved segments, each archetype's in its saved order, each
 * chunk with its saved id: the segment's ids go on the free stack, top
 * first, for the registration to take. Then the free stack is the saved
 * one, so that new chunks get the ids they would have got there. */
static int replay_segments(weft_world_t *w, const weft__snap_plan_t *pl) {
  weft__chunk_store_t *cs = &w->chunks;
  int rc = open_ids(w, pl->chunk_count);
  const uint8_t *p = pl->segs;
  for (uint32_t s = 0; !rc && s < pl->nsegs; s++) {
    weft__archetype_t *a = w->archs[weft__snap_u32(p)];
    uint32_t n = weft__snap_u32(p + 4);
    for (uint32_t k = 0; k < n; k++)
      cs->free[k] = weft__snap_u32(p + 8 + 4 * (size_t)(n - 1 - k));
    cs->nfree = n;
    p += 8 + 4 * (size_t)n;
    uint64_t rows = ((uint64_t)a->chunk_total + n) * a->row_cap;
    if (rows > UINT32_MAX)
      rc = WEFT_ELIMIT;
    /* With no chunk in use, asking for room for chunk_total + n chunks'
     * rows adds exactly one segment of n chunks. */
    if (!rc)
      rc = weft__archetype_reserve_rows(w, a, (uint32_t)rows);
    if (!rc && cs->nfree)
      rc = WEFT_EBUSY; /* the segment did not take its ids */
  }
  cs->nfree = 0;
  if (!rc) {
    if (pl->chunk_nfree)
      memcpy(cs->free, pl->chunk_free, (size_t)pl->chunk_nfree * 4);
    cs->nfree = pl->chunk_nfree;
  }
  return rc;
}

static int restore_index(weft_world_t *w, const weft__snap_plan_t *pl,
                         const weft__snap_stage_t *st) {
  weft__index_t *ix = &w->index;
  int rc = weft__index_reserve(ix, &w->alloc, pl->hwm);
  if (!rc)
    rc = weft__index_reserve_free(ix, &w->alloc, pl->free_n);
  if (rc)
    return rc;
  /* Page by page as saved: a live slot's marker (WEFT__REC_LOC alone)
   * is replaced by its row's place when the rows are filled. */
  for (uint32_t base = 0; base < pl->hwm; base += WEFT__PAGE_SIZE) {
    uint32_t n =
        pl->hwm - base < WEFT__PAGE_SIZE ? pl->hwm - base : WEFT__PAGE_SIZE;
    /* Staged: the records with the rows' places (snapshot_stage.h). */
    const void *from = st->on ? (const void *)(st->loc + base)
                              : (const void *)(pl->recs + 4 * (size_t)base);
    memcpy(ix->pages[base >> WEFT__PAGE_BITS], from, (size_t)n * 4);
  }
  ix->hwm = pl->hwm;
  ix->alive = pl->alive;
  ix->retired = pl->retired;
  ix->sweep = pl->sweep;
  ix->sweep_end = pl->sweep_end;
  ix->free_n = pl->free_n;
  if (pl->free_n)
    memcpy(ix->free, pl->free, (size_t)pl->free_n * 4);
  w->tag = pl->tag;
  ix->tag = (uint64_t)pl->tag << 56;
  return 0;
}

/* Where a saved value's field g of row j lies in a chunk's column bytes
 * (base: the column's first byte; n: the chunk's rows). */
static const uint8_t *file_field(const weft__snap_comp_t *c,
                                 const uint8_t *base, uint32_t n, uint32_t j,
                                 uint32_t g) {
  if (!(c->flags & WEFT_COMPONENT_SOA))
    return base + (size_t)j * c->size + c->fields[g].offset;
  size_t before = 0;
  for (uint32_t f = 0; f < g; f++)
    before += c->fields[f].size;
  return base + (size_t)n * before + (size_t)j * c->fields[g].size;
}

/* What a fill needs besides the plan. */
typedef struct fill_t {
  weft_world_t *w;
  const weft__snap_plan_t *pl;
  uint8_t *value; /* one component value, for migrations */
  bool exact;     /* chunks as saved */
  bool stream;    /* rows past the caches: stores bypass them */
  /* The handles and WEFT__SNAP_SAME columns are in place already: the
   * validator staged them (snapshot_stage.h). */
  bool staged;
  /* By program component id: 1 when its saved column is copied as it
   * lies (WEFT__SNAP_SAME), so its arrays need no zero-fill first. */
  uint8_t same[WEFT_MAX_COMPONENTS + 1];
} fill_t;

/* Builds one row's value in the program's layout from a saved column
 * that is not stored the same way (migrations, storage changes). */
static void migrate_value(const weft__component_t *t,
                          const weft__snap_comp_t *c, const uint8_t *base,
                          uint32_t n, uint32_t j, uint8_t *value) {
  memset(value, 0, t->size);
  if (c->mode == WEFT__SNAP_RAW && !(c->flags & WEFT_COMPONENT_SOA)) {
    memcpy(value, base + (size_t)j * c->size, c->size);
  } else if (c->mode == WEFT__SNAP_RAW) {
    for (uint32_t g = 0; g < c->nfields; g++)
      memcpy(value + c->fields[g].offset, file_field(c, base, n, j, g),
             c->fields[g].size);
  } else {
    for (uint32_t f = 0; f < t->field_count; f++)
      if (c->from[f] >= 0)
        memcpy(value + t->fields[f].offset,
               file_field(c, base, n, j, (uint32_t)c->from[f]),
               t->fields[f].size);
  }
}

/* Copies m rows of one saved column (from row j of a saved chunk of n
 * rows, its bytes at base) into column col of chunk ch from row row0. */
static void copy_column(const fill_t *f, const weft__archetype_t *a,
                        const weft__column_t *col, weft__chunk_t *ch,
                        uint32_t row0, const weft__snap_comp_t *c,
                        const uint8_t *base, uint32_t n, uint32_t j,
                        uint32_t m) {
  if (c->mode == WEFT__SNAP_SAME) {
    if (f->staged)
      return;
    size_t at = 0;
    for (uint32_t k = 0; k < col->array_count; k++) {
      uint32_t elem = a->arrays[col->first_array + k].elem;
      weft__snap_copy(f->stream,
                      ch->bases[col->first_array + k] + (size_t)row0 * elem,
                      base + at + (size_t)j * elem, (size_t)m * elem);
      at += (size_t)n * elem;
    }
    return;
  }
  const weft__component_t *t = weft__registry_get(&f->w->registry, col->comp);
  for (uint32_t r = 0; r < m; r++) {
    migrate_value(t, c, base, n, j + r, f->value);
    weft__column_write(a, col, ch, row0 + r, f->value);
  }
}

/* Zero-fills m rows of the arrays of chunk ch from row0 that no saved
 * column overwrites whole: transient components, migrated ones (added
 * fields, padding) and dirty bytes start as zeros. */
static void zero_rows(const fill_t *f, const weft__archetype_t *a,
                      weft__chunk_t *ch, uint32_t row0, uint32_t m) {
  for (uint32_t c = 0; c < a->ncols; c++) {
    const weft__column_t *col = &a->cols[c];
    for (uint32_t k = 0; !f->same[col->comp] && k < col->array_count; k++) {
      uint32_t i = col->first_array + k;
      memset(ch->bases[i] + (size_t)row0 * a->arrays[i].elem, 0,
             (size_t)m * a->arrays[i].elem);
    }
  }
  for (uint32_t i = a->narrays - a->ndirty; i < a->narrays; i++)
    memset(ch->bases[i] + row0, 0, m);
}

/* The default a requirement gives transient component t in archetype a:
 * the first component of a (by id) whose requirements reach t with a
 * value; NULL for zeros. */
static const void *transient_default(const weft_world_t *w,
                                     const weft__archetype_t *a,
                                     weft_component_t t) {
  for (uint32_t k = 0; k < a->ncomps; k++) {
    const weft__req_comp_t *r = weft__req_of(&w->registry, a->comps[k]);
    for (uint32_t i = 0; r && i < r->nclosure; i++)
      if (r->closure[i].comp == t && r->closure[i].value)
        return r->closure[i].value;
  }
  return NULL;
}

/* Fills rows [row0, row0 + m) of chunk ch from rows [j, j + m) of the
 * saved chunk at p (n rows) of saved archetype sa. */
static void fill_rows(const fill_t *f, const weft__snap_arch_t *sa,
                      weft__archetype_t *a, weft__chunk_t *ch, uint32_t row0,
                      const uint8_t *p, uint32_t n, uint32_t j, uint32_t m) {
  /* Every column reads as written at the loaded change version: a system
   * that filters on changes sees the loaded rows once (change versions
   * are not saved). */
  for (uint32_t c = 0; c < a->ncols; c++)
    ch->versions[c] = f->pl->change_version;
  ch->sversion = f->pl->change_version;
  /* A loaded world has no dirty rows: the flags go with the bytes. */
  memset(ch->all_dirty, 0, sizeof(ch->all_dirty));
  if (!f->staged)
    weft__snap_copy(f->stream, ch->entities + row0, p + (size_t)8 * j,
                    (size_t)m * 8);
  /* The slots come from the input: the rows just streamed out are not
   * read back. */
  const weft__index_t *ix = &f->w->index;
  const uint32_t loc = WEFT__REC_LOC | ch->id << weft__index_row_bits(ix);
  weft__record_t *const *pages = ix->pages;
  for (uint32_t r = 0; !f->staged && r < m; r++)
    weft__pages_rec(pages, (uint32_t)weft__snap_u64(p + 8 * (j + r)))->v =
        loc | (row0 + r);
  zero_rows(f, a, ch, row0, m);
  size_t at = (size_t)8 * n;
  for (uint32_t k = 0; k < sa->npresent; k++) {
    const weft__snap_comp_t *c =
        &f->pl->comps[weft__snap_u32(sa->comps + 4 * k)];
    if (c->mode != WEFT__SNAP_ZERO && c->mode != WEFT__SNAP_TAG)
      copy_column(f, a, weft__archetype_col(a, c->target), ch, row0, c, p + at,
                  n, j, m);
    /* Transient: zeros, or the default a requirement would give it. */
    const void *def = c->mode == WEFT__SNAP_ZERO
                          ? transient_default(f->w, a, c->target)
                          : NULL;
    for (uint32_t r = 0; def && r < m; r++)
      weft__column_write(a, weft__archetype_col(a, c->target), ch, row0 + r,
                         def);
    at += (size_t)n * c->row_bytes;
  }
}

/* Puts the next saved chunk's rows in place: in the chunk it had
 * (exact), or wherever the archetype has room. */
static int fill_chunk(const fill_t *f, const weft__snap_arch_t *sa,
                      weft__archetype_t *a, uint32_t k, const uint8_t *p,
                      uint32_t n) {
  weft_world_t *w = f->w;
  if (f->exact) {
    weft__chunk_t *ch = a->chunks[k];
    ch->count = n;
    a->nchunks = k + 1;
    a->tail = ch;
    a->count += n;
    w->chunks_live++;
    w->chunks_spare--;
    fill_rows(f, sa, a, ch, 0, p, n, 0, n);
    return 0;
  }
  for (uint32_t j = 0; j < n;) {
    weft__chunk_t *ch;
    uint32_t row0 = 0, m = 0;
    int rc = weft__archetype_push_range(w, a, n - j, &ch, &row0, &m);
    if (rc)
      return rc;
    fill_rows(f, sa, a, ch, row0, p, n, j, m);
    j += m;
  }
  return 0;
}

static int fill_archetypes(const fill_t *f) {
  const weft__snap_plan_t *pl = f->pl;
  for (uint32_t i = 0; i < pl->narch; i++) {
    const weft__snap_arch_t *sa = &pl->archs[i];
    weft__archetype_t *a = f->w->archs[i];
    uint64_t row = 8;
    for (uint32_t k = 0; k < sa->npresent; k++)
      row += pl->comps[weft__snap_u32(sa->comps + 4 * k)].row_bytes;
    const uint8_t *p = sa->rows;
    for (uint32_t k = 0; k < sa->nchunks; k++) {
      uint32_t n = weft__snap_u32(sa->counts + 4 * k);
      int rc = fill_chunk(f, sa, a, k, p, n);
      if (rc)
        return rc;
      p += row * n;
    }
  }
  return 0;
}

/* Creates the archetypes in the order the saved world did, each with the
 * id and stamp it had there: ids freed there are vacant and free here,
 * and query matches, kept in creation order, come out the same. */
static int create_archetypes(weft_world_t *w, const weft__snap_plan_t *pl,
                             bool *exact) {
  *exact = w->archs[0]->row_cap == pl->archs[0].row_cap;
  for (uint32_t k = 1; k < pl->norder; k++) {
    uint32_t i = (uint32_t)pl->order[k];
    const weft__snap_arch_t *sa = &pl->archs[i];
    weft__archetype_t *a = NULL;
    int rc = weft__archetype_restore(w, i, sa->born, &sa->present,
                                     &sa->disabled, sa->pairs, sa->npairs, &a);
    if (rc)
      return rc;
    *exact &= a->row_cap == sa->row_cap;
  }
  WEFT_CHECK(w, w->arch_count == pl->narch, WEFT_EBUSY,
             "%u archetype ids restored, the snapshot has %u", w->arch_count,
             pl->narch);
  w->arch_born = pl->arch_born;
  return 0;
}

/* The largest component value of the program (the migration buffer). */
static uint32_t max_value(const weft_world_t *w) {
  uint32_t m = 1;
  for (uint32_t i = 0; i < w->registry.count; i++)
    if (w->registry.items[i].size > m)
      m = w->registry.items[i].size;
  return m;
}

/* Empties w but keeps its archetypes and chunks (weft__snap_same_layout()):
 * what weft_world_clear() does, less releasing the rows' slots one by one, as
 * the index is replaced whole (restore_index() writes the records below
 * the new high-water mark; those above it are zeroed here). */
static void clear_keep(weft_world_t *w, uint32_t hwm) {
  for (uint32_t i = 0; i < w->arch_count; i++) {
    weft__archetype_t *a = w->archs[i];
    for (uint32_t c = 0; c < a->nchunks; c++)
      a->chunks[c]->count = 0;
    w->chunks_live -= a->nchunks;
    w->chunks_spare += a->nchunks;
    a->nchunks = 0;
    a->tail = NULL;
    a->count = 0;
  }
  weft__rel_clear(w);
  weft__index_t *ix = &w->index;
  for (uint32_t s = hwm; s < ix->hwm; s++)
    weft__index_rec(ix, s)->v = 0;
  w->version++;
}

/* The second phase: the plan is sound; replace the world's contents.
 * Rows the validator staged go in by a swap of segment memory. */
static int apply(weft_world_t *w, const weft__snap_plan_t *pl,
                 weft__snap_stage_t *st) {
  bool exact = false, staged = st->on;
  int rc;
  if (staged || weft__snap_same_layout(w, pl)) {
    clear_keep(w, pl->hwm);
    weft__snap_stage_commit(st);
    rc = 0;
    exact = true;
  } else {
    if (unused(w)) {
      restart_ids(w);
      rc = 0;
    } else {
      rc = reset(w);
    }
    if (!rc)
      rc = create_archetypes(w, pl, &exact);
    if (!rc && exact)
      rc = replay_segments(w, pl);
  }
  if (!rc)
    rc = restore_index(w, pl, st);
  fill_t f = {.w = w, .pl = pl, .exact = exact, .staged = staged};
  uint64_t rows_bytes = 0;
  for (uint32_t i = 0; i < pl->narch; i++)
    rows_bytes += pl->archs[i].rows_bytes;
  f.stream = rows_bytes >= WEFT__SNAP_STREAM_MIN;
  for (uint32_t i = 0; i < pl->ncomp; i++)
    if (pl->comps[i].mode == WEFT__SNAP_SAME)
      f.same[pl->comps[i].target] = 1;
  if (!rc) {
    f.value = aligned_alloc(64, ((size_t)max_value(w) + 63) & ~(size_t)63);
    rc = f.value ? fill_archetypes(&f) : WEFT_ENOMEM;
    free(f.value);
    /* The streamed stores, staged ones included, are visible before the
     * world is. */
    weft__snap_copy_fence();
  }
  for (uint32_t i = 0; !rc && i < WEFT__SNAP_NSTATE; i++)
    rc = weft__snap_state_load(w, weft__snap_state_tags[i], pl, pl->state[i].p,
                               pl->state[i].n);
  if (rc) {
    /* Out of memory half-way: an empty world is better than a torn one.
     * The index counts no live entity that has no row. */
    w->index.alive = 0;
    reset(w);
    return rc;
  }
  w->change_version = pl->change_version;
  w->tick = pl->tick;
  w->version++;
  const weft__snap_reg_t *reg = w->snap;
  for (uint32_t i = 0; i < pl->next_ext; i++) {
    const weft__snap_ext_t *x = &pl->ext[i];
    if (x->slot >= 0)
      reg->s[x->slot].d.load(w, reg->s[x->slot].d.user, x->data, x->n);
  }
  return 0;
}

/* ---- entry points -------------------------------------------------------- */

int weft_snapshot_load_memory(weft_world_t *w, const void *data, size_t n,
                              weft_snapshot_error_t *err) {
  if (err)
    memset(err, 0, sizeof(*err));
  if (!w || (!data && n))
    return weft__snap_fail(w, err, WEFT_EINVAL, 0, 0,
                           "world must be set, and data unless n is 0");
  if (weft__txn_in_scope(&w->txn) || w->txn.draining || w->txn.reserved)
    return weft__snap_fail(w, err, WEFT_EBUSY, 0, 0,
                           "load only at a sync point: no open scope and no "
                           "staged spawn");
  if (!weft__snap_registry_get(w))
    return weft__snap_fail(w, err, WEFT_ENOMEM, 0, 0, "out of memory");
  weft__snap_plan_t pl;
  weft__snap_stage_t st = {.w = w};
  int rc = weft__snap_parse_staged(w, data, n, &pl, &st, err);
  if (rc) {
    weft__snap_stage_free(&st); /* the world never saw it */
    return rc;
  }
  rc = apply(w, &pl, &st);
  weft__snap_stage_free(&st);
  weft__snap_plan_free(&pl);
  if (rc)
    return weft__snap_fail(w, err, rc, 0, 0,
                           "loading failed after validation (%s); the world "
                           "was left empty",
                           weft_strerror(rc));
  return 0;
}

int weft_snapshot_load(weft_world_t *w, const weft_snapshot_reader_t *reader,
                       weft_snapshot_error_t *err) {
  if (!reader || !reader->read)
    return weft__snap_fail(w, err, WEFT_EINVAL, 0, 0,
                           "reader and reader->read must be set");
  size_t n = 0, cap = 1u << 16;
  uint8_t *buf = malloc(cap);
  for (;;) {
    if (buf && n == cap) {
      uint8_t *p = realloc(buf, cap * 2);
      if (!p) {
        free(buf);
        buf = NULL;
      } else {
        buf = p;
        cap *= 2;
      }
    }
    if (!buf)
      return weft__snap_fail(w, err, WEFT_ENOMEM, 0, n,
                             "out of memory reading the input");
    long long got = reader->read(reader->user, buf + n, cap - n);
    if (got < 0 || (size_t)got > cap - n) {
      free(buf);
      return weft__snap_fail(w, err, got < 0 ? (int)got : WEFT_EINVAL, 0, n,
                             "the reader failed");
    }
    if (got == 0)
      break;
    n += (size_t)got;
  }
  int rc = weft_snapshot_load_memory(w, buf, n, err);
  free(buf);
  return rc;
}

static int fd_write(void *user, const void *data, size_t n) {
  int fd = *(int *)user;
  const uint8_t *p = data;
  while (n) {
    ssize_t k = write(fd, p, n);
    if (k < 0 && errno == EINTR)
      continue;
    if (k <= 0)
      return WEFT_EIO;
    p += k;
    n -= (size_t)k;
  }
  return 0;
}

int weft_snapshot_save_file(weft_world_t *w, const char *path,
                            weft_snapshot_error_t *err) {
  if (!path)
    return weft__snap_fail(w, err, WEFT_EINVAL, 0, 0, "path is NULL");
  char tmp[4096];
  int len = snprintf(tmp, sizeof tmp, "%s.tmp", path);
  if (len < 0 || (size_t)len >= sizeof tmp)
    return weft__snap_fail(w, err, WEFT_EINVAL, 0, 0, "path too long");
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0)
    return weft__snap_fail(w, err, WEFT_EIO, 0, 0, "cannot create %s: %s", tmp,
                           strerror(errno));
  weft_snapshot_writer_t wr = {fd_write, &fd};
  int rc = weft_snapshot_save(w, &wr, err);
  /* The bytes reach the disk before the name does: a crash leaves the
   * old file or the new one, never a torn one. */
  if (!rc && fsync(fd) != 0)
    rc = weft__snap_fail(w, err, WEFT_EIO, 0, 0, "fsync %s: %s", tmp,
                         strerror(errno));
  if (close(fd) != 0 && !rc)
    rc = weft__snap_fail(w, err, WEFT_EIO, 0, 0, "close %s: %s", tmp,
                         strerror(errno));
  if (!rc && rename(tmp, path) != 0)
    rc = weft__snap_fail(w, err, WEFT_EIO, 0, 0, "rename %s: %s", tmp,
                         strerror(errno));
  if (rc) {
    unlink(tmp);
    return rc;
  }
  /* And the rename reaches the disk with its folder's entry. */
  char *slash = strrchr(tmp, '/');
  if (slash)
    slash[slash == tmp ? 1 : 0] = 0;
  int dir = open(slash ? tmp : ".", O_RDONLY | O_DIRECTORY);
  if (dir >= 0) {
    (void)fsync(dir);
    close(dir);
  }
  return 0;
}

int weft_snapshot_load_file(weft_world_t *w, const char *path,
                            weft_snapshot_error_t *err) {
  if (err)
    memset(err, 0, sizeof(*err));
  FILE *fp = path ? fopen(path, "rb") : NULL;
  if (!fp)
    return weft__snap_fail(w, err, WEFT_EIO, 0, 0, "cannot open %s: %s",
                           path ? path : "(null)", strerror(errno));
  uint8_t *buf = NULL;
  long size = -1;
  if (fseek(fp, 0, SEEK_END) == 0)
    size = ftell(fp);
  if (size >= 0 && fseek(fp, 0, SEEK_SET) == 0)
    buf = malloc(size ? (size_t)size : 1);
  size_t got = buf ? fread(buf, 1, (size_t)size, fp) : 0;
  fclose(fp);
  if (!buf || got != (size_t)size) {
    free(buf);
    return weft__snap_fail(w, err, buf ? WEFT_EIO : WEFT_ENOMEM, 0, got,
                           "cannot read %s", path);
  }
  int rc = weft_snapshot_load_memory(w, buf, got, err);
  free(buf);
  return rc;
}
