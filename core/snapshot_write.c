/* SPDX-License-Identifier: MIT */
/*
 * weft_snapshot_save(): writes a world as the sections snapshot_format.h
 * lists. The small sections are built in memory first; ROWS, which holds
 * the column bytes, is streamed straight from the chunks to the sink (its
 * length is known up front), hashed on the way with XXH3.
 *
 * Payloads (all integers u32 unless said otherwise):
 *   META  chunk_size, max_gen, capacity, tag, change_version, 0, u64 tick,
 *         ncomp, narch (the id bound), nsegs, chunk_count, the next
 *         archetype creation stamp, 0
 *   COMP  per component, in id order: name_len, name, size, align, flags,
 *         nfields, then per field name_len, name, offset, size, type
 *   ARCH  per archetype id: npresent, ndisabled, count, nchunks,
 *         chunk_total, row_cap, creation stamp, npairs, npresent component
 *         indices (id - 1), ndisabled indices, npairs dense relation pairs
 *         (relation component index, 0, u64 target handle), nchunks row
 *         counts; a freed id is eight zeros (row_cap 0 marks it). Then
 *         nsegs segments, by archetype, each archetype's in its chunk
 *         list's order: archetype, n, the n chunk ids (ids reissued from
 *         the free stack need not be consecutive); then the chunk id free
 *         stack: n, n ids, bottom first (exactly the ids no segment
 *         holds), so that a load issues the ids the saved world would
 *   INDX  hwm, alive, retired, sweep, sweep_end, free_n, free_n slots,
 *         hwm records (a dead slot's record; 0x80000000 for a live one)
 *   ROWS  per archetype, per chunk holding rows: the handles (u64 each),
 *         then each saved column's arrays (an AoS column: one array of
 *         whole values; SoA: one per field, in field order), count
 *         elements each
 *   SECT  name_len, name, the section's bytes
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "core/snapshot_hash.h"

#include "core/check.h"
#include "core/relation.h"
#include "core/snapshot_state.h"
#include "core/world.h"

/* A growable byte buffer for the small sections. */
typedef struct buf_t {
  uint8_t *p;
  size_t n;
  size_t cap;
  bool oom;
} buf_t;

static void buf_put(buf_t *b, const void *data, size_t n) {
  if (b->oom)
    return;
  if (b->n + n > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->n + n)
      cap *= 2;
    uint8_t *p = realloc(b->p, cap);
    if (!p) {
      b->oom = true;
      return;
    }
    b->p = p;
    b->cap = cap;
  }
  if (n)
    memcpy(b->p + b->n, data, n);
  b->n += n;
}

static void buf_u32(buf_t *b, uint32_t v) {
  buf_put(b, &v, 4);
}
static void buf_u64(buf_t *b, uint64_t v) {
  buf_put(b, &v, 8);
}

static void buf_name(buf_t *b, const char *s) {
  uint32_t n = (uint32_t)strlen(s);
  buf_u32(b, n);
  buf_put(b, s, n);
}

/* The sink, and the hash of the section being written. */
typedef struct sink_t {
  const weft_snapshot_writer_t *w;
  weft__xxh3_state_t st;
  uint64_t pos;
  int rc;
} sink_t;

struct weft_snapshot_out_t {
  buf_t buf;
};

static void sink_raw(sink_t *s, const void *data, size_t n) {
  if (s->rc || n == 0)
    return;
  int rc = s->w->write(s->w->user, data, n);
  if (rc)
    s->rc = rc < 0 ? rc : WEFT_EIO;
  s->pos += n;
}

static void sink_put(sink_t *s, const void *data, size_t n) {
  if (s->rc || n == 0)
    return;
  weft__xxh3_update(&s->st, data, n);
  sink_raw(s, data, n);
}

static void sec_begin(sink_t *s, uint32_t tag, uint64_t len) {
  uint8_t head[WEFT__SNAP_SEC_HEAD] = {0};
  memcpy(head, &tag, 4);
  memcpy(head + 8, &len, 8);
  weft__xxh3_reset(&s->st);
  sink_put(s, head, sizeof head);
}

static void sec_end(sink_t *s, uint64_t len) {
  static const uint8_t zeros[8] = {0};
  sink_raw(s, zeros, (8 - (len & 7)) & 7);
  uint64_t h = weft__xxh3_digest(&s->st);
  sink_raw(s, &h, 8);
}

static void sec_buf(sink_t *s, uint32_t tag, const buf_t *b) {
  sec_begin(s, tag, b->n);
  sink_put(s, b->p, b->n);
  sec_end(s, b->n);
}

static void write_meta(const weft_world_t *w, uint32_t nsegs, buf_t *b) {
  buf_u32(b, w->chunk_size);
  buf_u32(b, w->index.max_gen);
  buf_u32(b, w->index.capacity);
  buf_u32(b, w->tag);
  buf_u32(b, w->change_version);
  buf_u32(b, 0);
  buf_u64(b, w->tick);
  buf_u32(b, w->registry.count);
  buf_u32(b, w->arch_count);
  buf_u32(b, nsegs);
  buf_u32(b, w->chunks.count);
  buf_u32(b, w->arch_born);
  buf_u32(b, 0);
}

static void write_comps(const weft_world_t *w, buf_t *b) {
  for (uint32_t i = 0; i < w->registry.count; i++) {
    const weft__component_t *c = &w->registry.items[i];
    buf_name(b, c->name);
    buf_u32(b, c->size);
    buf_u32(b, c->alignment);
    buf_u32(b, c->flags);
    buf_u32(b, c->field_count);
    for (uint32_t f = 0; f < c->field_count; f++) {
      buf_name(b, c->fields[f].name);
      buf_u32(b, c->fields[f].offset);
      buf_u32(b, c->fields[f].size);
      buf_u32(b, c->fields[f].type);
    }
  }
}

static uint32_t mask_count(const weft__mask_t *m) {
  uint32_t n = 0;
  WEFT__MASK_FOREACH(m, id) {
    (void)id;
    n++;
  }
  return n;
}

static void write_archs(const weft_world_t *w, buf_t *b) {
  for (uint32_t i = 0; i < w->arch_count; i++) {
    const weft__archetype_t *a = w->archs[i];
    if (a == &w->arch_vacant) {
      for (int k = 0; k < 8; k++)
        buf_u32(b, 0);
      continue;
    }
    buf_u32(b, a->ncomps);
    buf_u32(b, mask_count(&a->disabled));
    buf_u32(b, a->count);
    buf_u32(b, a->nchunks);
    buf_u32(b, a->chunk_total);
    buf_u32(b, a->row_cap);
    buf_u32(b, a->born);
    buf_u32(b, a->npairs);
    for (uint32_t k = 0; k < a->ncomps; k++)
      buf_u32(b, a->comps[k] - 1);
    WEFT__MASK_FOREACH(&a->disabled, id) {
      buf_u32(b, id - 1);
    }
    for (uint32_t k = 0; k < a->npairs; k++) {
      buf_u32(b, a->pairs[k].rel - 1);
      buf_u32(b, 0);
      buf_u64(b, a->pairs[k].target);
    }
    for (uint32_t k = 0; k < a->nchunks; k++)
      buf_u32(b, a->chunks[k]->count);
  }
  for (uint32_t i = 0; i < w->arch_count; i++)
    for (uint32_t j = 0; j < w->archs[i]->nsegs; j++) {
      const weft__segment_t *sg = &w->archs[i]->segs[j];
      buf_u32(b, i);
      buf_u32(b, sg->nchunks);
      for (uint32_t k = 0; k < sg->nchunks; k++)
        buf_u32(b, sg->headers[k].id);
    }
  buf_u32(b, w->chunks.nfree);
  buf_put(b, w->chunks.free, (size_t)w->chunks.nfree * 4);
}

static void write_index(const weft__index_t *ix, buf_t *b) {
  buf_u32(b, ix->hwm);
  buf_u32(b, ix->alive);
  buf_u32(b, ix->retired);
  buf_u32(b, ix->sweep);
  buf_u32(b, ix->sweep_end);
  buf_u32(b, ix->free_n);
  buf_put(b, ix->free, (size_t)ix->free_n * 4);
  for (uint32_t base = 0; base < ix->hwm; base += WEFT__PAGE_SIZE) {
    const weft__record_t *page = ix->pages[base >> WEFT__PAGE_BITS];
    uint32_t n =
        ix->hwm - base < WEFT__PAGE_SIZE ? ix->hwm - base : WEFT__PAGE_SIZE;
    for (uint32_t k = 0; k < n; k++) {
      uint32_t v = page[k].v & WEFT__REC_LOC ? WEFT__REC_LOC : page[k].v;
      buf_u32(b, v);
    }
  }
}

/* Whether column col's bytes go into the snapshot. */
static bool saved(const weft_world_t *w, const weft__column_t *col) {
  const weft__component_t *c = weft__registry_get(&w->registry, col->comp);
  return !(c->flags & WEFT_COMPONENT_TRANSIENT);
}

static uint64_t rows_bytes(const weft_world_t *w) {
  uint64_t total = 0;
  for (uint32_t i = 0; i < w->arch_count; i++) {
    const weft__archetype_t *a = w->archs[i];
    uint64_t row = sizeof(weft_entity_t);
    for (uint32_t c = 0; c < a->ncols; c++) {
      const weft__column_t *col = &a->cols[c];
      for (uint32_t j = 0; saved(w, col) && j < col->array_count; j++)
        row += a->arrays[col->first_array + j].elem;
    }
    total += row * a->count;
  }
  return total;
}

static void write_rows(const weft_world_t *w, sink_t *s) {
  for (uint32_t i = 0; i < w->arch_count; i++) {
    const weft__archetype_t *a = w->archs[i];
    for (uint32_t k = 0; k < a->nchunks; k++) {
      const weft__chunk_t *ch = a->chunks[k];
      sink_put(s, ch->entities, (size_t)ch->count * sizeof(weft_entity_t));
      for (uint32_t c = 0; c < a->ncols; c++) {
        const weft__column_t *col = &a->cols[c];
        if (!saved(w, col))
          continue;
        for (uint32_t j = 0; j < col->array_count; j++) {
          uint32_t arr = col->first_array + j;
          sink_put(s, ch->bases[arr], (size_t)ch->count * a->arrays[arr].elem);
        }
      }
    }
  }
}

/* The registered sections, each run into its own buffer and written. */
static int write_sections(weft_world_t *w, sink_t *s,
                          weft_snapshot_error_t *err) {
  const weft__snap_reg_t *reg = weft__snap_registry(w);
  for (uint32_t i = 0; reg && i < reg->n && !s->rc; i++) {
    struct weft_snapshot_out_t out = {0};
    buf_name(&out.buf, reg->s[i].name);
    int rc = reg->s[i].d.save(w, reg->s[i].d.user, &out);
    if (!rc && out.buf.oom)
      rc = WEFT_ENOMEM;
    if (!rc)
      sec_buf(s, WEFT__SNAP_SECT, &out.buf);
    free(out.buf.p);
    if (rc)
      return weft__snap_fail(w, err, rc, WEFT__SNAP_SECT, s->pos,
                             "section '%s' failed to save (%s)", reg->s[i].name,
                             weft_strerror(rc));
  }
  return 0;
}

/* EDGE, RESO, RAND, EVNT (snapshot_state.c). */
static int write_state(const weft_world_t *w, sink_t *s,
                       weft_snapshot_error_t *err) {
  for (uint32_t i = 0; i < WEFT__SNAP_NSTATE && !s->rc; i++) {
    struct weft_snapshot_out_t out = {0};
    int rc = weft__snap_state_save(w, weft__snap_state_tags[i], &out);
    if (!rc)
      sec_buf(s, weft__snap_state_tags[i], &out.buf);
    free(out.buf.p);
    if (rc)
      return weft__snap_fail(w, err, rc, weft__snap_state_tags[i], s->pos,
                             "out of memory saving world state");
  }
  return 0;
}

int weft_snapshot_put(weft_snapshot_out_t *out, const void *data, size_t n) {
  if (!out || (n && !data))
    return WEFT_EINVAL;
  buf_put(&out->buf, data, n);
  return out->buf.oom ? WEFT_ENOMEM : 0;
}

int weft_snapshot_save(weft_world_t *w, const weft_snapshot_writer_t *writer,
                       weft_snapshot_error_t *err) {
  if (err)
    memset(err, 0, sizeof(*err));
  if (!w || !writer || !writer->write)
    return weft__snap_fail(w, err, WEFT_EINVAL, 0, 0,
                           "world, writer and writer->write must be set");
  if (weft__txn_in_scope(&w->txn) || w->txn.draining || w->txn.reserved ||
      weft__rel_pending(w->rel))
    return weft__snap_fail(w, err, WEFT_EBUSY, 0, 0,
                           "save only at a sync point: no open scope, no "
                           "staged spawn or edge");
  uint32_t nsegs = 0;
  for (uint32_t i = 0; i < w->arch_count; i++)
    nsegs += w->archs[i]->nsegs;
  buf_t meta = {0}, comps = {0}, archs = {0}, index = {0};
  write_meta(w, nsegs, &meta);
  write_comps(w, &comps);
  write_archs(w, &archs);
  write_index(&w->index, &index);
  int rc = 0;
  if (meta.oom || comps.oom || archs.oom || index.oom)
    rc = weft__snap_fail(w, err, WEFT_ENOMEM, 0, 0,
                         "out of memory building the snapshot's tables");
  sink_t s = {.w = writer};
  if (!rc) {
    uint8_t head[WEFT__SNAP_HEADER] = {0};
    uint32_t version = WEFT_SNAPSHOT_VERSION;
    memcpy(head, WEFT__SNAP_MAGIC, 8);
    memcpy(head + 8, &version, 4);
    uint64_t h = weft__xxh3(head, 24);
    memcpy(head + 24, &h, 8);
    sink_raw(&s, head, sizeof head);
    sec_buf(&s, WEFT__SNAP_META, &meta);
    sec_buf(&s, WEFT__SNAP_COMP, &comps);
    sec_buf(&s, WEFT__SNAP_ARCH, &archs);
    sec_buf(&s, WEFT__SNAP_INDX, &index);
    uint64_t rows = rows_bytes(w);
    sec_begin(&s, WEFT__SNAP_ROWS, rows);
    write_rows(w, &s);
    sec_end(&s, rows);
    rc = s.rc ? 0 : write_state(w, &s, err);
    if (!rc && !s.rc)
      rc = write_sections(w, &s, err);
    if (!rc) {
      sec_begin(&s, WEFT__SNAP_END, 0);
      sec_end(&s, 0);
    }
    if (!rc && s.rc)
      rc = weft__snap_fail(w, err, s.rc, 0, s.pos, "the writer failed (%s)",
                           weft_strerror(s.rc));
  }
  free(meta.p);
  free(comps.p);
  free(archs.p);
  free(index.p);
  return rc;
}

/* The world's state beside its rows, for a distributed checkpoint
 * (weft::mpi, whose files carry the entities themselves): RESO, RAND and
 * every registered section (the pipeline's clock), each as u32 tag, u32
 * 0, u64 length and the bytes a snapshot would hold. Relation edges and
 * events are left out: they name this world's handles and rows. */
int weft__snap_globals_save(weft_world_t *w, uint8_t **data, size_t *n) {
  buf_t all = {0};
  const weft__snap_reg_t *reg = weft__snap_registry(w);
  uint32_t count = 2 + (reg ? reg->n : 0);
  const uint32_t state[2] = {WEFT__SNAP_RESO, WEFT__SNAP_RAND};
  int rc = 0;
  for (uint32_t i = 0; i < count && !rc; i++) {
    struct weft_snapshot_out_t out = {0};
    uint32_t tag = i < 2 ? state[i] : WEFT__SNAP_SECT;
    if (i < 2) {
      rc = weft__snap_state_save(w, tag, &out);
    } else {
      buf_name(&out.buf, reg->s[i - 2].name);
      rc = reg->s[i - 2].d.save(w, reg->s[i - 2].d.user, &out);
    }
    if (!rc && out.buf.oom)
      rc = WEFT_ENOMEM;
    buf_u32(&all, tag);
    buf_u32(&all, 0);
    buf_u64(&all, out.buf.n);
    buf_put(&all, out.buf.p, out.buf.n);
    free(out.buf.p);
  }
  if (!rc && all.oom)
    rc = WEFT_ENOMEM;
  if (rc) {
    free(all.p);
    return rc;
  }
  *data = all.p;
  *n = all.n;
  return 0;
}
