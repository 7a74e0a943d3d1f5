/* SPDX-License-Identifier: MIT */
/*
 * The snapshot sections for what a world holds besides its rows: relation
 * edges (EDGE), resources (RESO), random streams and the world seed (RAND)
 * and published events (EVNT). Each has a writer, a checker that runs in
 * the first phase of a load (nothing changes), and a loader for the second.
 *
 * Payloads (u32 unless said otherwise; a name is u32 length + bytes):
 *   EDGE  u64 n; per edge: u64 source, u64 target, relation component
 *         index (id - 1), the position of its reverse entry among the
 *         target's (whose unsorted order a target's death walks), payload
 *         size, payload bytes (zeros for a dense payload: its column's
 *         bytes are in ROWS)
 *   RESO  n; per resource: name, size, flags, has_value, value bytes if
 *         has_value (scratch resources keep no value: it holds addresses)
 *   RAND  present, u64 seed, n; per stream: name, 4 u64 of state
 *   EVNT  n; per channel: name, event size, count, count events
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/relation.h"
#include "core/resource_state.h"
#include "core/snapshot_state.h"
#include "core/world.h"
#include "weft/random.h"

const uint32_t weft__snap_state_tags[WEFT__SNAP_NSTATE] = {
    WEFT__SNAP_EDGE, WEFT__SNAP_RESO, WEFT__SNAP_RAND, WEFT__SNAP_EVNT};

/* ---- writing ------------------------------------------------------------ */

static int put_u32(weft_snapshot_out_t *o, uint32_t v) {
  return weft_snapshot_put(o, &v, 4);
}
static int put_u64(weft_snapshot_out_t *o, uint64_t v) {
  return weft_snapshot_put(o, &v, 8);
}
static int put_name(weft_snapshot_out_t *o, const char *s) {
  uint32_t n = (uint32_t)strlen(s);
  int rc = put_u32(o, n);
  return rc ? rc : weft_snapshot_put(o, s, n);
}

/* The live handle in slot s (which has one: it is an edge's source). */
static weft_entity_t handle_of(const weft_world_t *w, uint32_t s) {
  const weft__index_t *ix = &w->index;
  uint32_t v = weft__index_rec(ix, s)->v;
  const weft__chunk_slot_t *cs = weft__index_slot(ix, ix->table, v);
  return cs->entities[v & ix->row_mask];
}

static int save_edges(const weft_world_t *w, weft_snapshot_out_t *o) {
  const weft__relations_t *r = w->rel;
  int rc = put_u64(o, r ? r->edges : 0);
  for (uint32_t s = 0; r && !rc && s < r->nslots; s++) {
    const weft__rel_vec_t *v = &r->out[s];
    for (uint32_t j = 0; !rc && j < v->n; j++) {
      const weft__rel_edge_t *x = &weft__rel_v(v)[j];
      const weft__rel_def_t *d = &r->defs[x->rel];
      rc = put_u64(o, handle_of(w, s));
      rc = rc ? rc : put_u64(o, x->other);
      rc = rc ? rc : put_u32(o, d->comp - 1);
      rc = rc ? rc : put_u32(o, x->back);
      rc = rc ? rc : put_u32(o, d->size);
      for (uint32_t k = 0; !rc && k < d->size; k++) {
        uint8_t b = x->slot == WEFT__REL_NOSLOT
                        ? 0
                        : d->slab[(size_t)x->slot * d->stride + k];
        rc = weft_snapshot_put(o, &b, 1);
      }
    }
  }
  return rc;
}

static int save_resources(const weft_world_t *w, weft_snapshot_out_t *o) {
  const weft__resources_t *r = w->resources;
  int rc = put_u32(o, r ? r->nres : 0);
  for (uint32_t i = 0; r && !rc && i < r->nres; i++) {
    const weft__res_t *x = &r->res[i];
    bool keep = !(x->flags & WEFT_RESOURCE_SCRATCH);
    rc = put_name(o, x->name);
    rc = rc ? rc : put_u32(o, (uint32_t)x->size);
    rc = rc ? rc : put_u32(o, x->flags);
    rc = rc ? rc : put_u32(o, keep);
    rc = rc || !keep ? rc : weft_snapshot_put(o, x->value, x->size);
  }
  return rc;
}

static int save_random(const weft_world_t *w, weft_snapshot_out_t *o) {
  const char *name = NULL;
  weft_rng_t *rng = NULL;
  uint32_t n = weft__random_stream_at(w, 0, &name, &rng);
  int rc = put_u32(o, w->random != NULL);
  rc = rc ? rc : put_u64(o, weft_random_world_seed(w));
  rc = rc ? rc : put_u32(o, n);
  for (uint32_t i = 0; !rc && i < n; i++) {
    weft__random_stream_at(w, i, &name, &rng);
    rc = put_name(o, name);
    rc = rc ? rc : weft_snapshot_put(o, rng->s, sizeof(rng->s));
  }
  return rc;
}

static int save_events(const weft_world_t *w, weft_snapshot_out_t *o) {
  const weft__resources_t *r = w->resources;
  int rc = put_u32(o, r ? r->nchans : 0);
  for (uint32_t i = 0; r && !rc && i < r->nchans; i++) {
    const weft__chan_t *c = &r->chans[i];
    rc = put_name(o, c->name);
    rc = rc ? rc : put_u32(o, c->elem);
    rc = rc ? rc : put_u32(o, c->count);
    rc = rc ? rc : weft_snapshot_put(o, c->data, (size_t)c->count * c->elem);
  }
  return rc;
}

int weft__snap_state_save(const weft_world_t *w, uint32_t tag,
                          weft_snapshot_out_t *out) {
  switch (tag) {
  case WEFT__SNAP_EDGE:
    return save_edges(w, out);
  case WEFT__SNAP_RESO:
    return save_resources(w, out);
  case WEFT__SNAP_RAND:
    return save_random(w, out);
  default:
    return save_events(w, out);
  }
}

/* ---- checking ------------------------------------------------------------ */

typedef struct cur_t {
  const uint8_t *p, *start, *end;
  weft__snap_why_t *why;
} cur_t;

static int why(cur_t *c, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int why(cur_t *c, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->why->msg, sizeof(c->why->msg), fmt, ap);
  va_end(ap);
  c->why->at = (uint64_t)(c->p - c->start);
  return code;
}

static bool take(cur_t *c, uint64_t n, const uint8_t **out) {
  if ((uint64_t)(c->end - c->p) < n)
    return false;
  *out = c->p;
  c->p += n;
  return true;
}

static bool u32(cur_t *c, uint32_t *v) {
  const uint8_t *p = NULL;
  if (!take(c, 4, &p))
    return false;
  *v = weft__snap_u32(p);
  return true;
}

static bool u64(cur_t *c, uint64_t *v) {
  const uint8_t *p = NULL;
  if (!take(c, 8, &p))
    return false;
  *v = weft__snap_u64(p);
  return true;
}

/* A name into buf (NUL-terminated): 1..max-1 bytes, no NUL among them. */
static bool name(cur_t *c, char *buf, uint32_t max) {
  uint32_t n = 0;
  const uint8_t *p = NULL;
  if (!u32(c, &n) || n == 0 || n >= max || !take(c, n, &p) || memchr(p, 0, n))
    return false;
  memcpy(buf, p, n);
  buf[n] = 0;
  return true;
}

#define TRUNC(c, what) why(c, WEFT_EFORMAT, "truncated or malformed %s", what)

static bool live_handle(const weft__snap_plan_t *pl,
                        const weft__snap_live_t *lv, uint64_t e) {
  uint32_t s = (uint32_t)e;
  return (e >> 56) == pl->tag && s < pl->hwm && lv->gen &&
         lv->v[s] == WEFT__SNAP_LIVE_ROW &&
         lv->gen[s] == ((uint32_t)(e >> 32) & WEFT__GEN_MASK);
}

/* One saved edge, for the checks across edges. */
typedef struct edge_key_t {
  uint64_t src;
  uint64_t tgt;
  uint32_t ci;
  uint32_t back;
} edge_key_t;

static int by_source(const void *x, const void *y) {
  const edge_key_t *a = x, *b = y;
  if (a->src != b->src)
    return a->src < b->src ? -1 : 1;
  if (a->ci != b->ci)
    return a->ci < b->ci ? -1 : 1;
  return a->tgt < b->tgt ? -1 : a->tgt > b->tgt;
}

static int by_target(const void *x, const void *y) {
  const edge_key_t *a = x, *b = y;
  if (a->tgt != b->tgt)
    return a->tgt < b->tgt ? -1 : 1;
  return a->back < b->back ? -1 : a->back > b->back;
}

/* Whether the saved row of source src carries what edge (c, tgt) puts
 * there: the relation's tag, and for a dense relation the pair. */
static bool fits_row(const weft__snap_plan_t *pl, const weft__snap_live_t *lv,
                     uint64_t src, weft_component_t c, uint64_t tgt,
                     bool dense) {
  if (!lv->arch)
    return false; /* no saved relation: no row carries one */
  const weft__snap_arch_t *a = &pl->archs[lv->arch[(uint32_t)src]];
  if (!weft__mask_test(&a->present, c))
    return false;
  for (uint32_t k = 0; dense && k < a->npairs; k++)
    if (a->pairs[k].rel == c && a->pairs[k].target == tgt)
      return true;
  return !dense;
}

/* Across the edges: none twice, one per source of an exclusive relation,
 * and each target's reverse positions 0..n-1 once each. */
static int check_edge_set(const weft_world_t *w, const weft__snap_plan_t *pl,
                          edge_key_t *k, uint64_t n, cur_t *c) {
  qsort(k, n, sizeof(*k), by_source);
  for (uint64_t i = 1; i < n; i++) {
    if (k[i].src != k[i - 1].src || k[i].ci != k[i - 1].ci)
      continue;
    const weft__rel_def_t *d = weft__rel_def(w->rel, pl->comps[k[i].ci].target);
    if (k[i].tgt == k[i - 1].tgt || (d->flags & WEFT_RELATION_EXCLUSIVE))
      return why(c, WEFT_EFORMAT,
                 "an edge twice, or two of an exclusive relation from "
                 "0x%016llx",
                 (unsigned long long)k[i].src);
  }
  qsort(k, n, sizeof(*k), by_target);
  for (uint64_t i = 0, at = 0; i < n; i++) {
    at = i && k[i].tgt == k[i - 1].tgt ? at + 1 : 0;
    if (k[i].back != at)
      return why(c, WEFT_EFORMAT,
                 "target 0x%016llx: reverse positions are no permutation",
                 (unsigned long long)k[i].tgt);
  }
  return 0;
}

static int check_edges(const weft_world_t *w, const weft__snap_plan_t *pl,
                       const weft__snap_live_t *lv, cur_t *c) {
  uint64_t n = 0, dense = 0, pairs = 0;
  if (!u64(c, &n))
    return TRUNC(c, "edge count");
  /* An edge takes 28 bytes at least: a count beyond that must not size
   * the allocation below. */
  if (n > (uint64_t)(c->end - c->p) / 28)
    return TRUNC(c, "edge list");
  edge_key_t *keys = malloc((size_t)(n ? n : 1) * sizeof(*keys));
  if (!keys)
    return why(c, WEFT_ENOMEM, "out of memory checking edges");
  int rc = 0;
  for (uint64_t i = 0; !rc && i < n; i++) {
    uint64_t src = 0, tgt = 0;
    uint32_t ci = 0, back = 0, size = 0;
    const uint8_t *p = NULL;
    if (!u64(c, &src) || !u64(c, &tgt) || !u32(c, &ci) || !u32(c, &back) ||
        !u32(c, &size) || !take(c, size, &p)) {
      rc = TRUNC(c, "edge");
      break;
    }
    if (!live_handle(pl, lv, src) || !live_handle(pl, lv, tgt)) {
      rc = why(c, WEFT_EFORMAT, "edge %llu names a handle that is not live",
               (unsigned long long)i);
      break;
    }
    if (ci >= pl->ncomp || !(pl->comps[ci].flags & WEFT_COMPONENT_RELATION)) {
      rc = why(c, WEFT_EFORMAT, "edge %llu: component %u is no relation",
               (unsigned long long)i, ci);
      break;
    }
    const weft__snap_comp_t *sc = &pl->comps[ci];
    const weft__rel_def_t *d = weft__rel_def(w->rel, sc->target);
    if (!d)
      rc = why(c, WEFT_ENOCOMP,
               "relation '%.*s' is not registered in this program",
               (int)sc->name_len, sc->name);
    else if (d->size != size)
      rc = why(c, WEFT_EMIGRATE,
               "relation '%.*s': payload %u bytes in the snapshot, %u here",
               (int)sc->name_len, sc->name, size, d->size);
    else if (!fits_row(pl, lv, src, sc->target, tgt, weft__rel_dense(d)))
      rc = why(c, WEFT_EFORMAT,
               "edge %llu: its source's row lacks the relation or its pair",
               (unsigned long long)i);
    dense += d && weft__rel_dense(d);
    keys[i] = (edge_key_t){src, tgt, ci, back};
  }
  /* Every pair of a row has its edge: with no edge twice, as many dense
   * edges as pairs in rows. */
  for (uint32_t i = 0; !rc && i < pl->narch; i++)
    pairs += (uint64_t)pl->archs[i].npairs * pl->archs[i].count;
  if (!rc && dense != pairs)
    rc = why(c, WEFT_EFORMAT, "%llu dense edges for %llu pairs in rows",
             (unsigned long long)dense, (unsigned long long)pairs);
  if (!rc)
    rc = check_edge_set(w, pl, keys, n, c);
  free(keys);
  return rc;
}

static int check_resources(const weft_world_t *w, cur_t *c) {
  uint32_t n = 0;
  if (!u32(c, &n))
    return TRUNC(c, "resource count");
  for (uint32_t i = 0; i < n; i++) {
    char nm[WEFT_NAME_MAX];
    uint32_t size = 0, flags = 0, has = 0;
    const uint8_t *p = NULL;
    if (!name(c, nm, WEFT_NAME_MAX) || !u32(c, &size) || !u32(c, &flags) ||
        !u32(c, &has) || has > 1 || !take(c, has ? size : 0, &p))
      return TRUNC(c, "resource");
    weft_resource_t id = 0;
    if (weft_resource_lookup(w, nm, &id) == 0 &&
        weft_resource_size(w, id) != size)
      return why(c, WEFT_EMIGRATE,
                 "resource '%s': %u bytes in the snapshot, %zu here", nm, size,
                 weft_resource_size(w, id));
  }
  return 0;
}

static int check_random(cur_t *c) {
  uint32_t present = 0, n = 0;
  uint64_t seed = 0;
  if (!u32(c, &present) || present > 1 || !u64(c, &seed) || !u32(c, &n))
    return TRUNC(c, "random header");
  for (uint32_t i = 0; i < n; i++) {
    char nm[256];
    const uint8_t *p = NULL;
    if (!name(c, nm, sizeof nm) || !take(c, 32, &p))
      return TRUNC(c, "random stream");
  }
  return 0;
}

static int check_events(const weft_world_t *w, cur_t *c) {
  uint32_t n = 0;
  if (!u32(c, &n))
    return TRUNC(c, "channel count");
  for (uint32_t i = 0; i < n; i++) {
    char nm[WEFT_NAME_MAX];
    uint32_t elem = 0, count = 0;
    const uint8_t *p = NULL;
    if (!name(c, nm, WEFT_NAME_MAX) || !u32(c, &elem) || !u32(c, &count) ||
        !take(c, (uint64_t)elem * count, &p))
      return TRUNC(c, "channel");
    weft_channel_t ch = 0;
    if (weft_channel_lookup(w, nm, &ch) == 0 &&
        w->resources->chans[ch - 1].elem != elem)
      return why(c, WEFT_EMIGRATE,
                 "channel '%s': events of %u bytes in the snapshot, %u here",
                 nm, elem, w->resources->chans[ch - 1].elem);
  }
  return 0;
}

int weft__snap_state_check(const weft_world_t *w, uint32_t tag,
                           const weft__snap_plan_t *pl,
                           const weft__snap_live_t *lv, const uint8_t *p,
                           size_t n, weft__snap_why_t *out) {
  cur_t c = {p, p, p + n, out};
  int rc;
  switch (tag) {
  case WEFT__SNAP_EDGE:
    rc = check_edges(w, pl, lv, &c);
    break;
  case WEFT__SNAP_RESO:
    rc = check_resources(w, &c);
    break;
  case WEFT__SNAP_RAND:
    rc = check_random(&c);
    break;
  default:
    rc = check_events(w, &c);
    break;
  }
  if (!rc && c.p != c.end)
    rc = why(&c, WEFT_EFORMAT, "%zu unread bytes", (size_t)(c.end - c.p));
  return rc;
}

/* ---- loading (after the checks passed: reads need no checks) ----------- */

/* The archetype of live entity e. */
static const weft__archetype_t *arch_of(const weft_world_t *w,
                                        weft_entity_t e) {
  const weft__index_t *ix = &w->index;
  uint32_t v = weft__index_rec(ix, (uint32_t)e)->v;
  return weft__index_slot(ix, ix->table, v)->arch;
}

/* Whether the restored row of src carries what edge (c, tgt) puts there:
 * the relation's tag, and for a dense relation the pair. The rows and
 * the edges are checked apart in the first phase; only the loaded world
 * can tell whether they agree. */
static int edge_fits_row(const weft_world_t *w, weft_entity_t src,
                         weft_component_t c, weft_entity_t tgt) {
  const weft__archetype_t *a = arch_of(w, src);
  if (!weft__mask_test(&a->present, c))
    return WEFT_EFORMAT;
  if (weft__rel_dense(weft__rel_def(w->rel, c)) &&
      !weft__archetype_has_pair(a, c, tgt))
    return WEFT_EFORMAT;
  return 0;
}

/* Pairs the rows hold: one dense edge each when rows and edges agree. */
static uint64_t dense_pairs(const weft_world_t *w) {
  uint64_t n = 0;
  for (uint32_t i = 0; i < w->arch_count; i++)
    n += (uint64_t)w->archs[i]->npairs * w->archs[i]->count;
  return n;
}

static int load_edges(weft_world_t *w, const weft__snap_plan_t *pl, cur_t *c) {
  uint64_t n = 0, dense = 0;
  u64(c, &n);
  for (uint64_t i = 0; i < n; i++) {
    uint64_t src = 0, tgt = 0;
    uint32_t ci = 0, back = 0, size = 0;
    const uint8_t *p = NULL;
    u64(c, &src);
    u64(c, &tgt);
    u32(c, &ci);
    u32(c, &back);
    u32(c, &size);
    take(c, size, &p);
    weft_component_t rel = pl->comps[ci].target;
    int rc = edge_fits_row(w, src, rel, tgt);
    if (!rc)
      rc = weft__rel_restore_edge(w, src, rel, tgt, size ? p : NULL, back);
    if (rc)
      return rc == WEFT_EEXIST ? WEFT_EFORMAT : rc;
    dense += weft__rel_dense(weft__rel_def(w->rel, rel));
  }
  if (dense != dense_pairs(w))
    return WEFT_EFORMAT;
  return weft__rel_restore_finish(w);
}

static int load_resources(weft_world_t *w, cur_t *c) {
  uint32_t n = 0;
  u32(c, &n);
  for (uint32_t i = 0; i < n; i++) {
    char nm[WEFT_NAME_MAX];
    uint32_t size = 0, flags = 0, has = 0;
    const uint8_t *p = NULL;
    name(c, nm, WEFT_NAME_MAX);
    u32(c, &size);
    u32(c, &flags);
    u32(c, &has);
    take(c, has ? size : 0, &p);
    weft_resource_t id = 0;
    /* A resource this program no longer registers is dropped. */
    if (has && weft_resource_lookup(w, nm, &id) == 0)
      memcpy(weft_resource_get(w, id), p, size);
  }
  return 0;
}

static int load_random(weft_world_t *w, cur_t *c) {
  uint32_t present = 0, n = 0;
  uint64_t seed = 0;
  u32(c, &present);
  u64(c, &seed);
  u32(c, &n);
  if (present)
    weft_random_seed(w, seed);
  for (uint32_t i = 0; i < n; i++) {
    char nm[256];
    const uint8_t *p = NULL;
    name(c, nm, sizeof nm);
    take(c, 32, &p);
    weft_rng_t *rng;
    int rc = weft_random_stream(w, nm, &rng);
    if (rc)
      return rc;
    memcpy(rng->s, p, 32);
  }
  return 0;
}

static int load_events(weft_world_t *w, cur_t *c) {
  uint32_t n = 0;
  u32(c, &n);
  for (uint32_t i = 0; i < n; i++) {
    char nm[WEFT_NAME_MAX];
    uint32_t elem = 0, count = 0;
    const uint8_t *p = NULL;
    name(c, nm, WEFT_NAME_MAX);
    u32(c, &elem);
    u32(c, &count);
    take(c, (uint64_t)elem * count, &p);
    weft_channel_t ch = 0;
    if (weft_channel_lookup(w, nm, &ch) != 0)
      continue;
    weft_event_clear(w, ch);
    for (uint32_t k = 0; k < count; k++) {
      int rc = weft_event_push(w, ch, p + (size_t)k * elem);
      if (rc)
        return rc;
    }
  }
  return 0;
}

int weft__snap_state_load(weft_world_t *w, uint32_t tag,
                          const weft__snap_plan_t *pl, const uint8_t *p,
                          size_t n) {
  weft__snap_why_t unused;
  cur_t c = {p, p, p + n, &unused};
  switch (tag) {
  case WEFT__SNAP_EDGE:
    return load_edges(w, pl, &c);
  case WEFT__SNAP_RESO:
    return load_resources(w, &c);
  case WEFT__SNAP_RAND:
    return load_random(w, &c);
  default:
    return load_events(w, &c);
  }
}

/* ---- the state alone (a distributed checkpoint's) ---------------------- */

/* The registered section an SECT entry names (its bytes start with the
 * name, which *ok says was well formed), or NULL when none is. */
static const weft_snapshot_section_desc_t *
globals_section(const weft_world_t *w, cur_t *c, bool *ok) {
  char nm[WEFT_SNAPSHOT_NAME_MAX];
  *ok = name(c, nm, sizeof nm);
  const weft__snap_reg_t *reg = *ok ? weft__snap_registry(w) : NULL;
  for (uint32_t i = 0; reg && i < reg->n; i++)
    if (strcmp(reg->s[i].name, nm) == 0)
      return &reg->s[i].d;
  return NULL;
}

/* One pass over the entries: checks them (apply false) or applies them. */
static int globals_pass(weft_world_t *w, const uint8_t *data, size_t n,
                        weft__snap_why_t *out, bool apply) {
  cur_t c = {data, data, data + n, out};
  while (c.p != c.end) {
    uint32_t tag = 0, pad = 0;
    uint64_t len = 0;
    const uint8_t *p = NULL;
    if (!u32(&c, &tag) || !u32(&c, &pad) || !u64(&c, &len) ||
        !take(&c, len, &p))
      return TRUNC(&c, "state entry");
    int rc = 0;
    if (tag == WEFT__SNAP_RESO || tag == WEFT__SNAP_RAND) {
      rc = apply ? weft__snap_state_load(w, tag, NULL, p, len)
                 : weft__snap_state_check(w, tag, NULL, NULL, p, len, out);
    } else if (tag == WEFT__SNAP_SECT) {
      cur_t s = {p, p, p + len, out};
      bool ok = false;
      const weft_snapshot_section_desc_t *d = globals_section(w, &s, &ok);
      if (!ok)
        return TRUNC(&c, "section name");
      size_t rest = (size_t)(s.end - s.p);
      if (d && apply)
        rc = d->load(w, d->user, s.p, rest);
      else if (d && d->check)
        rc = d->check(w, d->user, s.p, rest);
    } else {
      return why(&c, WEFT_EFORMAT, "unknown state entry %08x", tag);
    }
    if (rc)
      return rc;
  }
  return 0;
}

int weft__snap_globals_load(weft_world_t *w, const uint8_t *data, size_t n,
                            weft__snap_why_t *why) {
  memset(why, 0, sizeof *why);
  int rc = globals_pass(w, data, n, why, false);
  if (rc && !why->msg[0])
    snprintf(why->msg, sizeof why->msg, "a state section was refused (%s)",
             weft_strerror(rc));
  return rc ? rc : globals_pass(w, data, n, why, true);
}
