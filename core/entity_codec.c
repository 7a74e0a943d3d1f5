/* SPDX-License-Identifier: MIT */
/*
 * The per-entity codec (weft/entity_codec.h): one entity's components as
 * a compact record, for moving entities between worlds.
 *
 * A table names the codec's components with the snapshot's fingerprints
 * (the COMP payload of snapshot_write.c, read by snapshot_read.c's
 * weft__snap_read_comp() and mapped onto this program by snapshot_arch.c's
 * weft__snap_match_comp(), so that a table migrates exactly as a snapshot
 * does). All integers little-endian:
 *
 *   table:  magic "WEFTENT\x1a", u32 version, u32 ncomp, u64 0, u64 XXH3
 *           of the 24 bytes before it; then one COMP section framed as in
 *           a snapshot (u32 tag, u32 0, u64 length, the payload, zero
 *           padding to 8 bytes, u64 XXH3 of tag + length + payload), and
 *           nothing after it
 *   record: u8 0xEC, u8 0, u16 n; ceil(n / 8) bytes of disabled bits (bit
 *           k: the k-th listed component is disabled; the bits past n
 *           are 0); n u16 table indices, ascending; then each listed
 *           component's bytes in list order, none for tags and transient
 *           components, a whole value for an AoS component, the fields
 *           one after the other in field order for an SoA one
 *
 * A record carries no checksum and no version: the transport checks its
 * bytes, and the table, sent once, fixes the format. Everything a decode
 * needs beyond the world's own spawn is sized when the codec is created
 * or bound, so encoding and refreshing entities allocate nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "weft/entity_codec.h"

#include "core/check.h"
#include "core/entity_ops.h"
#include "core/snapshot_hash.h"
#include "core/snapshot_read.h"
#include "core/world.h"

#define ENC_MAGIC "WEFTENT\x1a"
#define ENC_HEADER 32u
#define REC_MAGIC 0xECu
#define REC_HEAD 4u

/* One component of the codec's own set, in table order (ascending id). */
typedef struct enc_comp_t {
  weft_component_t id;
  uint32_t bytes; /* in a record: 0 for tags and transient components */
} enc_comp_t;

/* One field copy from a record's bytes into a program value. */
typedef struct dec_copy_t {
  uint32_t dst;
  uint32_t src;
  uint32_t size;
} dec_copy_t;

/* One component of the bound table. */
typedef struct dec_comp_t {
  weft_component_t target; /* the program's id */
  uint32_t mode;           /* WEFT__SNAP_* (snapshot_format.h) */
  uint32_t bytes;          /* in a record */
  uint32_t size;           /* the program's value */
  bool direct;             /* the record's bytes are the program's value */
  bool covered;            /* the copies write every byte of the value */
  uint32_t ncopy;          /* else these build it in the scratch */
  size_t scratch;          /* where: an offset into dec_t.scratch */
  dec_copy_t copy[WEFT_MAX_FIELDS];
} dec_comp_t;

/* A bound table and the decode's working room, sized for it. */
typedef struct dec_t {
  uint8_t *table; /* a copy of the table's bytes: names point into it */
  size_t table_len;
  uint32_t ncomp;
  dec_comp_t *comps;
  uint8_t *scratch;       /* program values being built */
  weft_component_t *ids;  /* a record's components, 0-terminated */
  const void **vals;      /* their values (NULL: zeros) */
  uint8_t *dis;           /* 1: disabled */
  const dec_comp_t **how; /* their table entries */
} dec_t;

struct weft_entity_codec_t {
  weft_world_t *w;
  uint32_t n;
  enc_comp_t *own;
  /* id -> table index + 1, 0 for components outside the set. */
  uint16_t idx[WEFT_MAX_COMPONENTS + 1];
  size_t max_record;
  uint8_t *table; /* the codec's own table */
  size_t table_len;
  dec_t dec;
};

/* ---- the codec's own table ------------------------------------------- */

static void put(uint8_t **p, const void *src, size_t n) {
  memcpy(*p, src, n);
  *p += n;
}

static void put_u32(uint8_t **p, uint32_t v) {
  put(p, &v, 4);
}

static void put_name(uint8_t **p, const char *s) {
  uint32_t n = (uint32_t)strlen(s);
  put_u32(p, n);
  put(p, s, n);
}

/* The COMP payload's bytes for component c (snapshot_write.c's layout). */
static size_t comp_bytes(const weft__component_t *c) {
  size_t n = 4 + strlen(c->name) + 16;
  for (uint32_t f = 0; f < c->field_count; f++)
    n += 4 + strlen(c->fields[f].name) + 12;
  return n;
}

static void put_comp(uint8_t **p, const weft__component_t *c) {
  put_name(p, c->name);
  put_u32(p, c->size);
  put_u32(p, c->alignment);
  put_u32(p, c->flags);
  put_u32(p, c->field_count);
  for (uint32_t f = 0; f < c->field_count; f++) {
    put_name(p, c->fields[f].name);
    put_u32(p, c->fields[f].offset);
    put_u32(p, c->fields[f].size);
    put_u32(p, c->fields[f].type);
  }
}

/* Builds codec->table from the codec's set. */
static int build_table(weft_entity_codec_t *k) {
  const weft__registry_t *reg = &k->w->registry;
  size_t payload = 0;
  for (uint32_t i = 0; i < k->n; i++)
    payload += comp_bytes(weft__registry_get(reg, k->own[i].id));
  size_t pad = (8 - (payload & 7)) & 7;
  size_t len =
      ENC_HEADER + WEFT__SNAP_SEC_HEAD + payload + pad + WEFT__SNAP_SEC_TAIL;
  uint8_t *t = calloc(1, len);
  WEFT_CHECK(k->w, t, WEFT_ENOMEM, "out of memory for the codec's table");
  uint8_t *p = t;
  put(&p, ENC_MAGIC, 8);
  put_u32(&p, WEFT_ENTITY_CODEC_VERSION);
  put_u32(&p, k->n);
  p += 8;
  uint64_t h = weft__xxh3(t, 24);
  put(&p, &h, 8);
  uint8_t *sec = p;
  put_u32(&p, WEFT__SNAP_COMP);
  p += 4;
  uint64_t n64 = payload;
  put(&p, &n64, 8);
  for (uint32_t i = 0; i < k->n; i++)
    put_comp(&p, weft__registry_get(reg, k->own[i].id));
  h = weft__xxh3(sec, WEFT__SNAP_SEC_HEAD + payload);
  p += pad;
  put(&p, &h, 8);
  k->table = t;
  k->table_len = len;
  return 0;
}

/* ---- binding a table ------------------------------------------------- */

static void dec_free(dec_t *d) {
  free(d->table);
  free(d->comps);
  free(d->scratch);
  free(d->ids);
  free(d->vals);
  free(d->dis);
  free(d->how);
  memset(d, 0, sizeof(*d));
}

/* Where field g of a table component lies in its record bytes. */
static uint32_t src_of(const weft__snap_comp_t *c, uint32_t g) {
  if (!(c->flags & WEFT_COMPONENT_SOA))
    return c->fields[g].offset;
  uint32_t at = 0;
  for (uint32_t f = 0; f < g; f++)
    at += c->fields[f].size;
  return at;
}

static void add_copy(dec_comp_t *d, uint32_t dst, uint32_t src, uint32_t size) {
  d->copy[d->ncopy++] = (dec_copy_t){dst, src, size};
}

/* How a record's bytes of table component c become the program's value
 * (c->mode, decided by weft__snap_match_comp()). */
static void plan_copies(const weft__snap_comp_t *c, const weft__component_t *t,
                        dec_comp_t *d) {
  bool file_soa = c->flags & WEFT_COMPONENT_SOA;
  d->target = c->target;
  d->mode = c->mode;
  d->bytes = (uint32_t)c->row_bytes;
  d->size = t->size;
  if (c->mode == WEFT__SNAP_ZERO || c->mode == WEFT__SNAP_TAG)
    return;
  if (c->mode == WEFT__SNAP_MIGRATE) {
    for (uint32_t f = 0; f < t->field_count; f++)
      if (c->from[f] >= 0)
        add_copy(d, t->fields[f].offset, src_of(c, (uint32_t)c->from[f]),
                 t->fields[f].size);
    return;
  }
  /* SAME or RAW: the sizes agree; only a file SoA value needs its fields
   * put back at their offsets (the file's, which SAME shares). */
  if (!file_soa) {
    d->direct = true;
    return;
  }
  for (uint32_t g = 0; g < c->nfields; g++)
    add_copy(d, c->fields[g].offset, src_of(c, g), c->fields[g].size);
}

/* The table's header: magic, checksum, version, counts. */
static int read_head(weft__snap_rd_t *r, uint32_t *ncomp) {
  uint32_t version;
  int rc = weft__snap_check_header(r, ENC_MAGIC, ENC_HEADER,
                                   WEFT_ENTITY_CODEC_VERSION,
                                   "entity codec table", &version);
  if (rc)
    return rc;
  *ncomp = weft__snap_u32(r->data + 12);
  if (*ncomp > WEFT_MAX_COMPONENTS)
    return BAD(r, "%u components, at most %u", *ncomp, WEFT_MAX_COMPONENTS);
  return 0;
}

/* Checks that table component i is one this codec covers and can read. */
static int check_comp(const weft_entity_codec_t *k, weft__snap_rd_t *r,
                      weft__snap_comp_t *c, uint32_t i) {
  if (c->flags & WEFT_COMPONENT_RELATION)
    return BAD(r, "component %u '%.*s' is a relation, which no record holds", i,
               (int)c->name_len, c->name);
  if (!c->target)
    return FAIL(r, WEFT_ENOCOMP,
                "component %u '%.*s' is not registered in this program", i,
                (int)c->name_len, c->name);
  if (!k->idx[c->target])
    return FAIL(r, WEFT_ENOCOMP,
                "component %u '%.*s' is not in this codec's set", i,
                (int)c->name_len, c->name);
  return weft__snap_match_comp(r, c, i);
}

/* Builds d's decode plan from the checked table components pl and sizes
 * its working room. */
static int plan_table(const weft_entity_codec_t *k, const weft__snap_plan_t *pl,
                      dec_t *d) {
  d->comps = calloc(pl->ncomp ? pl->ncomp : 1, sizeof(*d->comps));
  if (!d->comps)
    return WEFT_ENOMEM;
  size_t room = 0;
  for (uint32_t i = 0; i < pl->ncomp; i++) {
    dec_comp_t *dc = &d->comps[i];
    plan_copies(&pl->comps[i],
                weft__registry_get(&k->w->registry, pl->comps[i].target), dc);
    uint32_t sum = 0;
    for (uint32_t c = 0; c < dc->ncopy; c++)
      sum += dc->copy[c].size;
    dc->covered = sum == dc->size; /* copies never overlap: fields don't */
    dc->scratch = room;
    room += ((size_t)dc->size + 63) & ~(size_t)63;
  }
  size_t n = (size_t)d->ncomp + 1;
  d->scratch = aligned_alloc(64, room ? room : 64);
  d->ids = calloc(n, sizeof(*d->ids));
  d->vals = calloc(n, sizeof(*d->vals));
  d->dis = calloc(n, 1);
  d->how = calloc(n, sizeof(*d->how));
  return d->scratch && d->ids && d->vals && d->dis && d->how ? 0 : WEFT_ENOMEM;
}

/* Reads and maps the table in d->table into d. */
static int read_table(const weft_entity_codec_t *k, dec_t *d) {
  weft__snap_rd_t r = {
      .w = k->w, .err = NULL, .data = d->table, .n = d->table_len};
  weft__snap_plan_t pl;
  memset(&pl, 0, sizeof pl);
  int rc = read_head(&r, &pl.ncomp);
  if (!rc)
    rc = weft__snap_open_section(&r, WEFT__SNAP_COMP);
  if (!rc) {
    pl.comps = calloc(pl.ncomp ? pl.ncomp : 1, sizeof(*pl.comps));
    if (!pl.comps)
      rc = FAIL(&r, WEFT_ENOMEM, "out of memory reading the table");
  }
  for (uint32_t i = 0; !rc && i < pl.ncomp; i++)
    rc = weft__snap_read_comp(&r, &pl, i);
  if (!rc)
    rc = weft__snap_close_section(&r);
  if (!rc && r.next != r.n) {
    r.p = r.data + r.next;
    rc = BAD(&r, "%zu bytes after the table", r.n - r.next);
  }
  for (uint32_t i = 0; !rc && i < pl.ncomp; i++)
    rc = check_comp(k, &r, &pl.comps[i], i);
  d->ncomp = pl.ncomp;
  if (!rc)
    rc = plan_table(k, &pl, d);
  free(pl.comps);
  return rc;
}

/* Binds a copy of [table, table + len); the binding the codec had stays on
 * failure. */
static int bind(weft_entity_codec_t *k, const void *table, size_t len) {
  dec_t d;
  memset(&d, 0, sizeof d);
  d.table = malloc(len ? len : 1);
  WEFT_CHECK(k->w, d.table, WEFT_ENOMEM, "out of memory for a codec table");
  if (len)
    memcpy(d.table, table, len);
  d.table_len = len;
  int rc = read_table(k, &d);
  if (rc) {
    dec_free(&d);
    /* Say what was wrong as the codec's, not a snapshot's. */
    char msg[256];
    const char *why = weft_world_last_error(k->w);
    snprintf(msg, sizeof msg, "%s",
             rc == WEFT_ENOMEM ? "out of memory"
             : why             ? why
                               : "");
    return weft__fail(k->w, rc, WEFT__FILE, WEFT__LINE,
                      "entity codec table rejected: %s", msg);
  }
  dec_free(&k->dec);
  k->dec = d;
  return 0;
}

/* ---- creating a codec -------------------------------------------------- */

/* Appends component id to the set, numbering it (table index + 1). */
static void own_add(weft_entity_codec_t *k, const weft__component_t *c,
                    weft_component_t id) {
  uint32_t bytes = 0;
  if (c->size && !(c->flags & WEFT_COMPONENT_TRANSIENT)) {
    bytes = c->size;
    if (c->flags & WEFT_COMPONENT_SOA) {
      bytes = 0;
      for (uint32_t f = 0; f < c->field_count; f++)
        bytes += c->fields[f].size;
    }
  }
  k->own[k->n++] = (enc_comp_t){id, bytes};
  k->idx[id] = (uint16_t)k->n;
}

/* Fills the set: cfg->only, or every non-relation component; the table
 * lists it in id order, whatever the list's. */
static int choose(weft_entity_codec_t *k, const weft_entity_codec_config_t *c) {
  weft_world_t *w = k->w;
  const weft__registry_t *reg = &w->registry;
  bool all = !c || !c->only;
  uint32_t n = all ? reg->count : c->only_count;
  for (uint32_t i = 0; i < n; i++) {
    weft_component_t id = all ? i + 1 : c->only[i];
    const weft__component_t *t = weft__registry_get(reg, id);
    WEFT_CHECK(w, t, WEFT_ENOCOMP, "codec component %u: unknown id %u", i,
               (unsigned)id);
    bool rel = t->flags & WEFT_COMPONENT_RELATION;
    if (all && rel)
      continue;
    WEFT_CHECK(w, !rel, WEFT_EINVAL,
               "codec component '%s' is a relation: its targets are this "
               "world's handles",
               t->name);
    WEFT_CHECK(w, !k->idx[id], WEFT_EINVAL, "codec component '%s' listed twice",
               t->name);
    k->idx[id] = 1;
  }
  k->own = calloc(n ? n : 1, sizeof(*k->own));
  WEFT_CHECK(w, k->own, WEFT_ENOMEM, "out of memory for a codec");
  for (weft_component_t id = 1; id <= reg->count; id++)
    if (k->idx[id])
      own_add(k, weft__registry_get(reg, id), id);
  size_t max = REC_HEAD + ((size_t)k->n + 7) / 8 + 2 * (size_t)k->n;
  for (uint32_t i = 0; i < k->n; i++)
    max += k->own[i].bytes;
  k->max_record = max;
  return 0;
}

int weft_entity_codec_new(weft_world_t *w,
                          const weft_entity_codec_config_t *cfg,
                          weft_entity_codec_t **out) {
  WEFT_CHECK(w, w && out, WEFT_EINVAL, "NULL argument");
  WEFT_CHECK(w, !cfg || cfg->only || !cfg->only_count, WEFT_EINVAL,
             "only_count %u with no list", cfg ? cfg->only_count : 0);
  *out = NULL;
  weft_entity_codec_t *k = calloc(1, sizeof(*k));
  WEFT_CHECK(w, k, WEFT_ENOMEM, "out of memory for a codec");
  k->w = w;
  int rc = choose(k, cfg);
  if (!rc)
    rc = build_table(k);
  if (!rc)
    rc = bind(k, k->table, k->table_len);
  if (rc) {
    weft_entity_codec_free(k);
    return rc;
  }
  *out = k;
  return 0;
}

void weft_entity_codec_free(weft_entity_codec_t *k) {
  if (!k)
    return;
  dec_free(&k->dec);
  free(k->own);
  free(k->table);
  free(k);
}

int weft_entity_codec_table(const weft_entity_codec_t *k, void *buf, size_t cap,
                            size_t *len) {
  WEFT_CHECK(k ? k->w : NULL, k && len && (buf || !cap), WEFT_EINVAL,
             "NULL argument");
  *len = k->table_len;
  WEFT_CHECK(k->w, cap >= k->table_len, WEFT_ELIMIT,
             "the codec's table needs %zu bytes, the buffer holds %zu",
             k->table_len, cap);
  memcpy(buf, k->table, k->table_len);
  return 0;
}

int weft_entity_codec_bind(weft_entity_codec_t *k, const void *table,
                           size_t len) {
  WEFT_CHECK(k ? k->w : NULL, k && (table || !len), WEFT_EINVAL,
             "NULL argument");
  return bind(k, table, len);
}

size_t weft_entity_codec_max_record(const weft_entity_codec_t *k) {
  return k ? k->max_record : 0;
}

/* ---- encoding ------------------------------------------------------- */

/* The components of the codec's set that archetype a holds (*n), and
 * the size of their record. */
static size_t record_size(const weft_entity_codec_t *k,
                          const weft__archetype_t *a, uint32_t *n) {
  size_t bytes = 0;
  *n = 0;
  for (uint32_t c = 0; c < a->ncomps; c++) {
    uint32_t t = a->comps[c] <= WEFT_MAX_COMPONENTS ? k->idx[a->comps[c]] : 0;
    if (t) {
      ++*n;
      bytes += k->own[t - 1].bytes;
    }
  }
  return REC_HEAD + (*n + 7) / 8 + 2 * (size_t)*n + bytes;
}

/* Writes the record of the row at `at` (n components of the set) to p. */
static void write_record(const weft_entity_codec_t *k, const weft__where_t *at,
                         uint32_t n, uint8_t *p) {
  const weft__archetype_t *a = at->arch;
  size_t mask = (n + 7) / 8;
  uint8_t *dis = p + REC_HEAD, *ix = dis + mask, *v = ix + 2 * (size_t)n;
  p[0] = REC_MAGIC;
  p[1] = 0;
  uint16_t n16 = (uint16_t)n;
  memcpy(p + 2, &n16, 2);
  for (size_t i = 0; i < mask; i++) /* one byte, mostly: no call */
    dis[i] = 0;
  uint32_t j = 0;
  for (uint32_t c = 0; c < a->ncomps; c++) {
    weft_component_t id = a->comps[c];
    uint32_t t = id <= WEFT_MAX_COMPONENTS ? k->idx[id] : 0;
    if (!t)
      continue;
    uint16_t t16 = (uint16_t)(t - 1);
    memcpy(ix + 2 * (size_t)j, &t16, 2);
    if (weft__mask_test(&a->disabled, id))
      dis[j >> 3] |= (uint8_t)(1u << (j & 7));
    j++;
    if (!k->own[t - 1].bytes)
      continue;
    const weft__column_t *col = weft__archetype_col(a, id);
    /* An SoA column's arrays are its fields, in field order. */
    for (uint32_t q = 0; q < col->array_count; q++) {
      uint32_t arr = col->first_array + q, elem = a->arrays[arr].elem;
      weft__copy_elem(v, weft__chunk_at(at->chunk, arr, elem, at->row), elem);
      v += elem;
    }
  }
}

int weft_entity_encode(weft_entity_codec_t *k, weft_entity_t e, void *buf,
                       size_t cap, size_t *len) {
  WEFT_CHECK(k ? k->w : NULL, k && len && (buf || !cap), WEFT_EINVAL,
             "NULL argument");
  weft_world_t *w = k->w;
  weft__where_t at;
  WEFT_CHECK(w, weft__resolve(w, e, &at), WEFT_ESTALE,
             "encode: handle %#llx is not a live entity",
             (unsigned long long)e);
  uint32_t n = 0;
  size_t need = record_size(k, at.arch, &n);
  *len = need;
  WEFT_CHECK(w, cap >= need, WEFT_ELIMIT,
             "encode: the record needs %zu bytes, the buffer holds %zu", need,
             cap);
  write_record(k, &at, n, buf);
  return 0;
}

/* ---- decoding ------------------------------------------------------- */

/* The default a requirement of the record's components gives transient
 * component t, as a snapshot load finds it (snapshot.c): the first
 * component of the entity (by id) whose requirements reach t with a
 * value; NULL for zeros. */
static const void *transient_default(const weft_world_t *w,
                                     const weft__mask_t *m,
                                     weft_component_t t) {
  WEFT__MASK_FOREACH(m, id) {
    const weft__req_comp_t *r = weft__req_of(&w->registry, id);
    for (uint32_t i = 0; r && i < r->nclosure; i++)
      if (r->closure[i].comp == t && r->closure[i].value)
        return r->closure[i].value;
  }
  return NULL;
}

/* Component dc's value in the program's layout, from its record bytes at
 * v: those bytes themselves, or built in the scratch; NULL for tags and
 * transient components (zeros, until transient_defaults()). */
static const void *value_of(const dec_t *d, const dec_comp_t *dc,
                            const uint8_t *v) {
  if (dc->direct)
    return v;
  if (dc->mode == WEFT__SNAP_ZERO || dc->mode == WEFT__SNAP_TAG)
    return NULL;
  uint8_t *val = d->scratch + dc->scratch;
  if (!dc->covered) /* added fields and padding read as zeros */
    memset(val, 0, dc->size);
  for (uint32_t c = 0; c < dc->ncopy; c++)
    weft__copy_elem(val + dc->copy[c].dst, v + dc->copy[c].src,
                    dc->copy[c].size);
  return val;
}

/* Gives the record's n transient components (in d) their defaults. */
static void transient_defaults(const weft_world_t *w, dec_t *d, uint32_t n) {
  weft__mask_t m;
  memset(&m, 0, sizeof m);
  for (uint32_t j = 0; j < n; j++)
    weft__mask_set(&m, d->ids[j]);
  if (w->registry.req)
    weft__req_expand_list(&w->registry, d->ids, n, &m);
  for (uint32_t j = 0; j < n; j++)
    if (d->how[j]->mode == WEFT__SNAP_ZERO)
      d->vals[j] = transient_default(w, &m, d->ids[j]);
}

#define REC_BAD(w, ...)                                                        \
  weft__fail((w), WEFT_EFORMAT, WEFT__FILE, WEFT__LINE,                        \
             "entity record: " __VA_ARGS__)

/* Checks the record's structure; returns its component count in *n. */
static int parse_head(const weft_entity_codec_t *k, const uint8_t *p,
                      size_t len, uint32_t *n) {
  weft_world_t *w = k->w;
  const dec_t *d = &k->dec;
  if (len < REC_HEAD)
    return REC_BAD(w, "truncated: %zu bytes, a header is %u", len, REC_HEAD);
  if (p[0] != REC_MAGIC || p[1])
    return REC_BAD(w, "bad magic byte 0x%02x or reserved byte 0x%02x", p[0],
                   p[1]);
  uint16_t n16;
  memcpy(&n16, p + 2, 2);
  *n = n16;
  if (*n > d->ncomp)
    return REC_BAD(w, "%u components, the table has %u", *n, d->ncomp);
  size_t mask = (*n + 7) / 8;
  if (len < REC_HEAD + mask + 2 * (size_t)*n)
    return REC_BAD(w, "truncated: %zu bytes, %u components' list needs %zu",
                   len, *n, REC_HEAD + mask + 2 * (size_t)*n);
  if (*n & 7 && p[REC_HEAD + mask - 1] >> (*n & 7))
    return REC_BAD(w, "disabled bits set past the %u components", *n);
  return 0;
}

/* Checks the whole record and builds the decode's lists in k->dec: ids,
 * values (in the program's layouts), disabled flags. Changes no world. */
static int parse(weft_entity_codec_t *k, const uint8_t *p, size_t len,
                 uint32_t *count) {
  weft_world_t *w = k->w;
  dec_t *d = &k->dec;
  uint32_t n = 0;
  int rc = parse_head(k, p, len, &n);
  if (rc)
    return rc;
  const uint8_t *dis = p + REC_HEAD, *ix = dis + (n + 7) / 8;
  const uint8_t *v = ix + 2 * (size_t)n, *end = p + len;
  bool zero = false;
  for (uint32_t j = 0; j < n; j++) {
    uint16_t t;
    memcpy(&t, ix + 2 * (size_t)j, 2);
    uint16_t prev = 0;
    if (j)
      memcpy(&prev, ix + 2 * (size_t)(j - 1), 2);
    if (t >= d->ncomp || (j && t <= prev))
      return REC_BAD(w,
                     "component index %u (entry %u) is unknown or out of "
                     "order",
                     t, j);
    const dec_comp_t *dc = &d->comps[t];
    if ((size_t)(end - v) < dc->bytes)
      return REC_BAD(w, "truncated: component %u needs %u bytes, %zu left", t,
                     dc->bytes, (size_t)(end - v));
    d->ids[j] = dc->target;
    d->dis[j] = dis[j >> 3] >> (j & 7) & 1;
    d->how[j] = dc;
    zero |= dc->mode == WEFT__SNAP_ZERO;
    d->vals[j] = value_of(d, dc, v);
    v += dc->bytes;
  }
  if (v != end)
    return REC_BAD(w, "%zu bytes after the record's values", (size_t)(end - v));
  d->ids[n] = WEFT_COMPONENT_NONE;
  if (zero)
    transient_defaults(w, d, n);
  *count = n;
  return 0;
}

/* Gives e the record's disabled state for component j. */
static int set_state(weft_world_t *w, weft_entity_t e, const dec_t *d,
                     uint32_t j) {
  bool off = !weft_is_enabled(w, e, d->ids[j]);
  if (off == (bool)d->dis[j])
    return 0;
  return d->dis[j] ? weft_disable(w, e, d->ids[j])
                   : weft_enable(w, e, d->ids[j]);
}

int weft_entity_decode(weft_entity_codec_t *k, const void *buf, size_t len,
                       weft_entity_t *out) {
  WEFT_CHECK(k ? k->w : NULL, k && out && (buf || !len), WEFT_EINVAL,
             "NULL argument");
  weft_world_t *w = k->w;
  const dec_t *d = &k->dec;
  uint32_t n = 0;
  int rc = parse(k, buf, len, &n);
  if (rc)
    return rc;
  /* A spawn list holds at most WEFT__SPAWN_MAX ids: the rest are added. */
  uint32_t first = n < WEFT__SPAWN_MAX ? n : WEFT__SPAWN_MAX;
  weft_component_t keep = d->ids[first];
  d->ids[first] = WEFT_COMPONENT_NONE;
  weft_entity_t e = WEFT_ENTITY_NULL;
  rc = weft_spawn_with(w, d->ids, d->vals, &e);
  d->ids[first] = keep;
  for (uint32_t j = first; !rc && j < n; j++)
    rc = weft_add(w, e, d->ids[j], d->vals[j]);
  /* A new entity's components start enabled. */
  for (uint32_t j = 0; !rc && j < n; j++)
    if (d->dis[j])
      rc = weft_disable(w, e, d->ids[j]);
  if (rc) {
    if (e != WEFT_ENTITY_NULL)
      (void)weft_despawn(w, e); /* no half-made entity */
    return rc;
  }
  *out = e;
  return 0;
}

/* The common refresh: e (at `at`) already has every component of the
 * record, each in the record's state, and nothing stages: the values go
 * straight into its row, written and marked as weft_set() does, with one
 * handle lookup for the whole record. False, having written nothing, in
 * every other case. */
static bool refresh_in_place(weft_world_t *w, const dec_t *d, uint32_t n,
                             const weft__where_t *at) {
  const weft__archetype_t *a = at->arch;
  if (weft__routing(w))
    return false;
  for (uint32_t j = 0; j < n; j++)
    if (!weft__mask_test(&a->present, d->ids[j]) ||
        weft__mask_test(&a->disabled, d->ids[j]) != (bool)d->dis[j])
      return false;
  for (uint32_t j = 0; j < n; j++) {
    uint32_t mode = d->how[j]->mode;
    if (mode == WEFT__SNAP_ZERO || mode == WEFT__SNAP_TAG)
      continue; /* present, and a transient keeps its value */
    const weft__column_t *col = weft__archetype_col(a, d->ids[j]);
    const uint8_t *v = d->vals[j];
    /* weft__column_write(), with the common sizes' copies inline. */
    for (uint32_t q = 0; q < col->array_count; q++) {
      const weft__array_t *ar = &a->arrays[col->first_array + q];
      weft__copy_elem(
          weft__chunk_at(at->chunk, col->first_array + q, ar->elem, at->row),
          v + ar->value_off, ar->elem);
    }
    weft__mark_write(w, at->chunk, col, at->row);
  }
  return true;
}

int weft_entity_decode_into(weft_entity_codec_t *k, weft_entity_t e,
                            const void *buf, size_t len) {
  WEFT_CHECK(k ? k->w : NULL, k && (buf || !len), WEFT_EINVAL, "NULL argument");
  weft_world_t *w = k->w;
  const dec_t *d = &k->dec;
  uint32_t n = 0;
  int rc = parse(k, buf, len, &n);
  if (rc)
    return rc;
  weft__where_t at;
  WEFT_CHECK(w, weft__resolve(w, e, &at), WEFT_ESTALE,
             "decode_into: handle %#llx is not a live entity",
             (unsigned long long)e);
  if (refresh_in_place(w, d, n, &at))
    return 0;
  for (uint32_t j = 0; !rc && j < n; j++) {
    const dec_comp_t *dc = d->how[j];
    bool data = dc->mode != WEFT__SNAP_ZERO && dc->mode != WEFT__SNAP_TAG;
    if (data)
      rc = weft_set(w, e, d->ids[j], d->vals[j]);
    else if (!weft_has(w, e, d->ids[j]))
      rc = weft_add(w, e, d->ids[j], d->vals[j]);
    if (!rc)
      rc = set_state(w, e, d, j);
  }
  return rc;
}
