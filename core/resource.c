/* SPDX-License-Identifier: MIT */
/*
 * Resources (typed singletons), event channels, and the per-worker staging
 * that lets systems running in parallel emit events in a deterministic
 * order (core/resource_internal.h); core/publish.c merges what is staged
 * at sync points.
 *
 * All of it hangs off w->resources, created on first use. Tables are small
 * (at most 256 entries each) and searched linearly by name: lookups by name
 * happen at setup, lookups by id are an index.
 */
#include "core/resource_internal.h"

#include <stdalign.h>
#include <stdbool.h>
#include <string.h>

#include "core/check.h"
#include "core/resource_state.h"
#include "core/world.h"
#include "weft/component.h" /* WEFT_NAME_MAX */

/* The default alignment of a resource. */
#define RES_ALIGN_DEFAULT 16u
/* The largest alignment a resource may ask for (one cache line). */
#define RES_ALIGN_MAX 64u

static weft__resources_t *state(weft_world_t *w) {
  if (!w->resources)
    w->resources = weft__calloc(&w->alloc, sizeof(*w->resources), 16);
  return w->resources;
}

static bool name_ok(const char *name) {
  return name && name[0] && strnlen(name, WEFT_NAME_MAX) < WEFT_NAME_MAX;
}

static bool is_pow2(size_t v) {
  return v && !(v & (v - 1));
}

static const weft__res_t *res_at(const weft_world_t *w, weft_resource_t id) {
  const weft__resources_t *s = w ? w->resources : NULL;
  if (!s || id == 0 || id > s->nres)
    return NULL;
  return &s->res[id - 1];
}

static weft__chan_t *chan_at(const weft_world_t *w, weft_channel_t id) {
  weft__resources_t *s = w ? w->resources : NULL;
  if (!s || id == 0 || id > s->nchans)
    return NULL;
  return &s->chans[id - 1];
}

/* The id of the resource named name, 0 if none. */
static weft_resource_t res_find(const weft__resources_t *s, const char *name) {
  for (uint32_t i = 0; s && i < s->nres; i++)
    if (strcmp(s->res[i].name, name) == 0)
      return i + 1;
  return 0;
}

static weft_channel_t chan_find(const weft__resources_t *s, const char *name) {
  for (uint32_t i = 0; s && i < s->nchans; i++)
    if (strcmp(s->chans[i].name, name) == 0)
      return i + 1;
  return 0;
}

void weft__resources_fini(weft_world_t *w) {
  weft__resources_t *s = w ? w->resources : NULL;
  if (!s)
    return;
  for (uint32_t i = 0; i < s->nres; i++)
    weft__free(s->res[i].value, s->res[i].size, s->res[i].align);
  weft__free(s->res, (size_t)s->res_cap * sizeof(*s->res), 16);
  for (uint32_t i = 0; i < s->nchans; i++)
    weft__free(s->chans[i].data, (size_t)s->chans[i].cap * s->chans[i].elem,
               16);
  weft__free(s->chans, (size_t)s->chan_cap * sizeof(*s->chans), 16);
  for (uint32_t i = 0; i < s->nslots; i++) {
    weft__free(s->slots[i].recs,
               (size_t)s->slots[i].cap * sizeof(weft__event_rec_t), 16);
    weft__free(s->slots[i].bytes, s->slots[i].bytes_cap, 16);
  }
  weft__free(s->slots, (size_t)s->nslots * sizeof(*s->slots),
             alignof(weft__event_slot_t));
  weft__free(s->merge, (size_t)s->nslots * 3 * sizeof(*s->merge), 16);
  weft__free(s->scratch, (size_t)s->scratch_cap * sizeof(*s->scratch), 16);
  weft__free(s->par, (size_t)s->par_parts * s->par_stride * sizeof(*s->par),
             64);
  weft__free(s, sizeof(*s), 16);
  w->resources = NULL;
}

/* --- resources ------------------------------------------------------------ */

int weft_resource_register(weft_world_t *w, const char *name, size_t size,
                           size_t align, const void *init,
                           weft_resource_t *out) {
  WEFT_CHECK(w, w, WEFT_EINVAL, "world must not be NULL");
  WEFT_CHECK(w, name_ok(name), WEFT_EINVAL,
             "resource name must be 1..%u characters", WEFT_NAME_MAX - 1);
  WEFT_CHECK(w, size > 0 && size <= WEFT_RESOURCE_MAX_SIZE, WEFT_EINVAL,
             "resource '%s': size %zu is not in 1..%u", name, size,
             WEFT_RESOURCE_MAX_SIZE);
  if (align == 0)
    align = RES_ALIGN_DEFAULT;
  WEFT_CHECK(w, is_pow2(align) && align <= RES_ALIGN_MAX, WEFT_EINVAL,
             "resource '%s': alignment %zu is not a power of two up to %u",
             name, align, RES_ALIGN_MAX);
  WEFT_CHECK(w, res_find(w->resources, name) == 0, WEFT_EEXIST,
             "a resource named '%s' already exists", name);
  weft__resources_t *s = state(w);
  WEFT_CHECK(w, s, WEFT_ENOMEM, "out of memory creating the resource table");
  WEFT_CHECK(w, s->nres < WEFT_MAX_RESOURCES, WEFT_ETOOMANY,
             "resource '%s': a world holds at most %u resources", name,
             WEFT_MAX_RESOURCES);
  int rc = weft__grow(&w->alloc, &s->res, &s->res_cap, s->nres + 1,
                      sizeof(*s->res), 8);
  WEFT_CHECK(w, rc == 0, rc, "out of memory growing the resource table");
  void *v = init ? weft__alloc(&w->alloc, size, align)
                 : weft__calloc(&w->alloc, size, align);
  WEFT_CHECK(w, v, WEFT_ENOMEM, "out of memory for resource '%s' (%zu bytes)",
             name, size);
  if (init)
    memcpy(v, init, size);
  weft__res_t *r = &s->res[s->nres++];
  memset(r, 0, sizeof(*r));
  r->value = v;
  r->size = size;
  r->align = align;
  memcpy(r->name, name, strlen(name) + 1);
  if (out)
    *out = s->nres;
  return 0;
}

int weft_resource_lookup(const weft_world_t *w, const char *name,
                         weft_resource_t *out) {
  WEFT_CHECK(w, w && name && out, WEFT_EINVAL, "NULL argument");
  weft_resource_t id = res_find(w->resources, name);
  WEFT_CHECK(w, id, WEFT_ENONAME, "no resource named '%s'", name);
  *out = id;
  return 0;
}

void *weft_resource_get(const weft_world_t *w, weft_resource_t res) {
  const weft__res_t *r = res_at(w, res);
  return r ? r->value : NULL;
}

int weft_resource_set(weft_world_t *w, weft_resource_t res, const void *value) {
  WEFT_CHECK(w, w && value, WEFT_EINVAL, "NULL argument");
  const weft__res_t *r = res_at(w, res);
  WEFT_CHECK(w, r, WEFT_ENONAME, "unknown resource id %u", res);
  memmove(r->value, value, r->size); /* value may be the resource itself */
  return 0;
}

int weft_resource_set_flags(weft_world_t *w, weft_resource_t res,
                            uint32_t flags) {
  WEFT_CHECK(w, w, WEFT_EINVAL, "world must not be NULL");
  WEFT_CHECK(w, (flags & ~WEFT_RESOURCE_SCRATCH) == 0, WEFT_EINVAL,
             "unknown resource flags 0x%x", flags);
  weft__res_t *r = (weft__res_t *)res_at(w, res);
  WEFT_CHECK(w, r, WEFT_ENONAME, "unknown resource id %u", res);
  r->flags = flags;
  return 0;
}

size_t weft_resource_size(const weft_world_t *w, weft_resource_t res) {
  const weft__res_t *r = res_at(w, res);
  return r ? r->size : 0;
}

/* --- channels ------------------------------------------------------------- */

int weft_channel_register(weft_world_t *w, const char *name, size_t size,
                          weft_channel_t *out) {
  WEFT_CHECK(w, w, WEFT_EINVAL, "world must not be NULL");
  WEFT_CHECK(w, name_ok(name), WEFT_EINVAL,
             "channel name must be 1..%u characters", WEFT_NAME_MAX - 1);
  WEFT_CHECK(w, size > 0 && size <= WEFT_EVENT_MAX_SIZE, WEFT_EINVAL,
             "channel '%s': event size %zu is not in 1..%u", name, size,
             WEFT_EVENT_MAX_SIZE);
  WEFT_CHECK(w, chan_find(w->resources, name) == 0, WEFT_EEXIST,
             "a channel named '%s' already exists", name);
  weft__resources_t *s = state(w);
  WEFT_CHECK(w, s, WEFT_ENOMEM, "out of memory creating the channel table");
  WEFT_CHECK(w, s->nchans < WEFT_MAX_CHANNELS, WEFT_ETOOMANY,
             "channel '%s': a world holds at most %u channels", name,
             WEFT_MAX_CHANNELS);
  int rc = weft__grow(&w->alloc, &s->chans, &s->chan_cap, s->nchans + 1,
                      sizeof(*s->chans), 8);
  WEFT_CHECK(w, rc == 0, rc, "out of memory growing the channel table");
  weft__chan_t *c = &s->chans[s->nchans++];
  memset(c, 0, sizeof(*c));
  c->elem = (uint32_t)size;
  memcpy(c->name, name, strlen(name) + 1);
  if (out)
    *out = s->nchans;
  return 0;
}

int weft_channel_lookup(const weft_world_t *w, const char *name,
                        weft_channel_t *out) {
  WEFT_CHECK(w, w && name && out, WEFT_EINVAL, "NULL argument");
  weft_channel_t id = chan_find(w->resources, name);
  WEFT_CHECK(w, id, WEFT_ENONAME, "no channel named '%s'", name);
  *out = id;
  return 0;
}

/* Makes room for `more` events after the channel's current ones. */
int weft__chan_reserve(weft_world_t *w, weft__chan_t *c, uint32_t more) {
  if (more > UINT32_MAX - c->count)
    return WEFT_ENOMEM;
  return weft__grow(&w->alloc, &c->data, &c->cap, c->count + more, c->elem, 16);
}

int weft_event_push(weft_world_t *w, weft_channel_t ch, const void *event) {
  WEFT_CHECK(w, w && event, WEFT_EINVAL, "NULL argument");
  weft__chan_t *c = chan_at(w, ch);
  WEFT_CHECK(w, c, WEFT_ENONAME, "unknown channel id %u", ch);
  int rc = weft__chan_reserve(w, c, 1);
  WEFT_CHECK(w, rc == 0, rc, "out of memory growing channel '%s'", c->name);
  memcpy(c->data + (size_t)c->count * c->elem, event, c->elem);
  c->count++;
  return 0;
}

const void *weft_event_read(const weft_world_t *w, weft_channel_t ch,
                            uint32_t *count) {
  const weft__chan_t *c = chan_at(w, ch);
  uint32_t n = c ? c->count : 0;
  if (count)
    *count = n;
  return n ? c->data : NULL;
}

void weft_event_clear(weft_world_t *w, weft_channel_t ch) {
  if (!w)
    return;
  if (ch == 0) {
    for (uint32_t i = 0; w->resources && i < w->resources->nchans; i++)
      w->resources->chans[i].count = 0;
    return;
  }
  weft__chan_t *c = chan_at(w, ch);
  if (!c) {
    (void)weft__fail(w, WEFT_ENONAME, WEFT__FILE, WEFT__LINE,
                     "unknown channel id %u", ch);
    return;
  }
  c->count = 0;
}

/* --- staged emission ------------------------------------------------------ */

int weft__events_slots(weft_world_t *w, uint32_t n) {
  WEFT_CHECK(w, w, WEFT_EINVAL, "world must not be NULL");
  weft__resources_t *s = state(w);
  WEFT_CHECK(w, s, WEFT_ENOMEM, "out of memory creating the event state");
  if (n <= s->nslots)
    return 0;
  weft__event_slot_t *slots = weft__calloc(
      &w->alloc, (size_t)n * sizeof(*slots), alignof(weft__event_slot_t));
  uint32_t *merge = weft__alloc(&w->alloc, (size_t)n * 3 * sizeof(*merge), 16);
  if (!slots || !merge) {
    weft__free(slots, (size_t)n * sizeof(*slots), alignof(weft__event_slot_t));
    weft__free(merge, (size_t)n * 3 * sizeof(*merge), 16);
    return weft__fail(w, WEFT_ENOMEM, WEFT__FILE, WEFT__LINE,
                      "out of memory for %u worker slots", n);
  }
  if (s->nslots)
    memcpy(slots, s->slots, (size_t)s->nslots * sizeof(*slots));
  weft__free(s->slots, (size_t)s->nslots * sizeof(*s->slots),
             alignof(weft__event_slot_t));
  weft__free(s->merge, (size_t)s->nslots * 3 * sizeof(*s->merge), 16);
  s->slots = slots;
  s->merge = merge;
  s->nslots = n;
  return 0;
}

int weft__event_stage(weft_world_t *w, uint32_t slot, uint64_t key,
                      weft_channel_t ch, const void *event) {
  WEFT_CHECK(w, w && event, WEFT_EINVAL, "NULL argument");
  weft__resources_t *s = w->resources;
  WEFT_CHECK(w, s && slot < s->nslots, WEFT_EINVAL,
             "worker slot %u was not prepared (weft__events_slots)", slot);
  const weft__chan_t *c = chan_at(w, ch);
  WEFT_CHECK(w, c, WEFT_ENONAME, "unknown channel id %u", ch);
  weft__event_slot_t *sl = &s->slots[slot];
  uint32_t elem = c->elem;
  WEFT_CHECK(w, sl->count < UINT32_MAX && sl->used <= UINT32_MAX - elem,
             WEFT_ENOMEM, "worker slot %u is full", slot);
  int rc = weft__grow(&sl->alloc, &sl->recs, &sl->cap, sl->count + 1,
                      sizeof(weft__event_rec_t), 64);
  WEFT_CHECK(w, rc == 0, rc, "out of memory staging in worker slot %u", slot);
  rc = weft__grow(&sl->alloc, &sl->bytes, &sl->bytes_cap, sl->used + elem, 1,
                  4096);
  WEFT_CHECK(w, rc == 0, rc, "out of memory staging in worker slot %u", slot);
  weft__event_rec_t *r = &sl->recs[sl->count];
  if (sl->count == 0) {
    sl->disorder = false;
    sl->only_ch = ch;
  } else {
    sl->disorder |= key < r[-1].key;
    if (ch != sl->only_ch)
      sl->only_ch = 0;
  }
  r->key = key;
  r->ch = ch;
  r->seq = sl->count;
  r->off = sl->used;
  memcpy(sl->bytes + sl->used, event, elem);
  sl->used += elem;
  sl->count++;
  return 0;
}

uint32_t weft__events_staged(const weft_world_t *w) {
  const weft__resources_t *s = w ? w->resources : NULL;
  uint64_t n = 0;
  for (uint32_t i = 0; s && i < s->nslots; i++)
    n += s->slots[i].count;
  return n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
}

bool weft__channel_exists(const weft_world_t *w, weft_channel_t ch) {
  return chan_at(w, ch) != NULL;
}
