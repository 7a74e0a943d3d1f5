/*
 * Resources (typed singletons), event channels, and the per-worker staging
 * that lets systems running in parallel emit events in a deterministic
 * order (core/resource_internal.h).
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
#include "core/world.h"
#include "weft/component.h" /* WEFT_NAME_MAX */

typedef struct weft__resources_t weft__resources_t;

/* The default alignment of a resource. */
#define RES_ALIGN_DEFAULT 16u
/* The largest alignment a resource may ask for (one cache line). */
#define RES_ALIGN_MAX 64u

typedef struct res_t {
  void *value; /* its own block, so it never moves */
  size_t size;
  size_t align;
  char name[WEFT_NAME_MAX];
} res_t;

typedef struct chan_t {
  uint8_t *data; /* count events of elem bytes, 16-aligned */
  uint32_t count;
  uint32_t cap;
  uint32_t elem;
  uint32_t pending; /* publish only: staged events bound here */
  bool drop;        /* publish only: could not grow, drop them */
  char name[WEFT_NAME_MAX];
} chan_t;

/* One staged event; its bytes are in the slot's arena at off. */
typedef struct rec_t {
  uint64_t key;
  uint32_t ch;
  uint32_t seq; /* order staged within the slot */
  uint32_t off;
} rec_t;

/*
 * One worker's staging area. Written by one thread at a time, so each slot
 * has its own cache lines; its allocations are counted here and folded
 * into the world's counters by the owner at publish, because the world's
 * counters are not atomic.
 */
typedef struct slot_t {
  alignas(64) rec_t *recs;
  uint32_t count;
  uint32_t cap;
  uint8_t *bytes;
  uint32_t used;
  uint32_t bytes_cap;
  uint32_t pos; /* publish only: the merge cursor */
  weft__alloc_stats_t alloc;
} slot_t;

struct weft__resources_t {
  res_t *res; /* id - 1 */
  uint32_t nres;
  uint32_t res_cap;
  chan_t *chans; /* id - 1 */
  uint32_t nchans;
  uint32_t chan_cap;
  slot_t *slots;
  uint32_t nslots;
  uint32_t *heap; /* publish: non-empty slots by head record, nslots */
  rec_t *scratch; /* publish: merge sort buffer; only grows */
  uint32_t scratch_cap;
};

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

static const res_t *res_at(const weft_world_t *w, weft_resource_t id) {
  const weft__resources_t *s = w ? w->resources : NULL;
  if (!s || id == 0 || id > s->nres)
    return NULL;
  return &s->res[id - 1];
}

static chan_t *chan_at(const weft_world_t *w, weft_channel_t id) {
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
    weft__free(s->slots[i].recs, (size_t)s->slots[i].cap * sizeof(rec_t), 16);
    weft__free(s->slots[i].bytes, s->slots[i].bytes_cap, 16);
  }
  weft__free(s->slots, (size_t)s->nslots * sizeof(*s->slots), alignof(slot_t));
  weft__free(s->heap, (size_t)s->nslots * sizeof(*s->heap), 16);
  weft__free(s->scratch, (size_t)s->scratch_cap * sizeof(*s->scratch), 16);
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
  res_t *r = &s->res[s->nres++];
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
  const res_t *r = res_at(w, res);
  return r ? r->value : NULL;
}

int weft_resource_set(weft_world_t *w, weft_resource_t res, const void *value) {
  WEFT_CHECK(w, w && value, WEFT_EINVAL, "NULL argument");
  const res_t *r = res_at(w, res);
  WEFT_CHECK(w, r, WEFT_ENONAME, "unknown resource id %u", res);
  memmove(r->value, value, r->size); /* value may be the resource itself */
  return 0;
}

size_t weft_resource_size(const weft_world_t *w, weft_resource_t res) {
  const res_t *r = res_at(w, res);
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
  chan_t *c = &s->chans[s->nchans++];
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
static int chan_reserve(weft_world_t *w, chan_t *c, uint32_t more) {
  if (more > UINT32_MAX - c->count)
    return WEFT_ENOMEM;
  return weft__grow(&w->alloc, &c->data, &c->cap, c->count + more, c->elem, 16);
}

int weft_event_push(weft_world_t *w, weft_channel_t ch, const void *event) {
  WEFT_CHECK(w, w && event, WEFT_EINVAL, "NULL argument");
  chan_t *c = chan_at(w, ch);
  WEFT_CHECK(w, c, WEFT_ENONAME, "unknown channel id %u", ch);
  int rc = chan_reserve(w, c, 1);
  WEFT_CHECK(w, rc == 0, rc, "out of memory growing channel '%s'", c->name);
  memcpy(c->data + (size_t)c->count * c->elem, event, c->elem);
  c->count++;
  return 0;
}

const void *weft_event_read(const weft_world_t *w, weft_channel_t ch,
                            uint32_t *count) {
  const chan_t *c = chan_at(w, ch);
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
  chan_t *c = chan_at(w, ch);
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
  slot_t *slots =
      weft__calloc(&w->alloc, (size_t)n * sizeof(*slots), alignof(slot_t));
  uint32_t *heap = weft__alloc(&w->alloc, (size_t)n * sizeof(*heap), 16);
  if (!slots || !heap) {
    weft__free(slots, (size_t)n * sizeof(*slots), alignof(slot_t));
    weft__free(heap, (size_t)n * sizeof(*heap), 16);
    return weft__fail(w, WEFT_ENOMEM, WEFT__FILE, WEFT__LINE,
                      "out of memory for %u worker slots", n);
  }
  if (s->nslots)
    memcpy(slots, s->slots, (size_t)s->nslots * sizeof(*slots));
  weft__free(s->slots, (size_t)s->nslots * sizeof(*s->slots), alignof(slot_t));
  weft__free(s->heap, (size_t)s->nslots * sizeof(*s->heap), 16);
  s->slots = slots;
  s->heap = heap;
  s->nslots = n;
  return 0;
}

int weft__event_stage(weft_world_t *w, uint32_t slot, uint64_t key,
                      weft_channel_t ch, const void *event) {
  WEFT_CHECK(w, w && event, WEFT_EINVAL, "NULL argument");
  weft__resources_t *s = w->resources;
  WEFT_CHECK(w, s && slot < s->nslots, WEFT_EINVAL,
             "worker slot %u was not prepared (weft__events_slots)", slot);
  const chan_t *c = chan_at(w, ch);
  WEFT_CHECK(w, c, WEFT_ENONAME, "unknown channel id %u", ch);
  slot_t *sl = &s->slots[slot];
  uint32_t elem = c->elem;
  WEFT_CHECK(w, sl->count < UINT32_MAX && sl->used <= UINT32_MAX - elem,
             WEFT_ENOMEM, "worker slot %u is full", slot);
  int rc = weft__grow(&sl->alloc, &sl->recs, &sl->cap, sl->count + 1,
                      sizeof(rec_t), 64);
  WEFT_CHECK(w, rc == 0, rc, "out of memory staging in worker slot %u", slot);
  rc = weft__grow(&sl->alloc, &sl->bytes, &sl->bytes_cap, sl->used + elem, 1,
                  4096);
  WEFT_CHECK(w, rc == 0, rc, "out of memory staging in worker slot %u", slot);
  rec_t *r = &sl->recs[sl->count];
  r->key = key;
  r->ch = ch;
  r->seq = sl->count;
  r->off = sl->used;
  memcpy(sl->bytes + sl->used, event, elem);
  sl->used += elem;
  sl->count++;
  return 0;
}

int weft__events_reserve(weft_world_t *w) {
  weft__resources_t *s = w ? w->resources : NULL;
  uint64_t count = 0, used = 0;
  for (uint32_t i = 0; s && i < s->nslots; i++) {
    count += s->slots[i].count;
    used += s->slots[i].used;
  }
  if (count == 0)
    return 0;
  if (count > UINT32_MAX || used > UINT32_MAX)
    return WEFT_ENOMEM;
  /* Which slot stages how much depends on timing: give every slot room
   * for all of it, and the sort its scratch. */
  int rc = weft__grow(&w->alloc, &s->scratch, &s->scratch_cap, (uint32_t)count,
                      sizeof(*s->scratch), 64);
  for (uint32_t i = 0; !rc && i < s->nslots; i++) {
    slot_t *sl = &s->slots[i];
    rc = weft__grow(&w->alloc, &sl->recs, &sl->cap, (uint32_t)count,
                    sizeof(rec_t), 64);
    if (!rc)
      rc = weft__grow(&w->alloc, &sl->bytes, &sl->bytes_cap, (uint32_t)used, 1,
                      4096);
  }
  return rc;
}

uint32_t weft__events_staged(const weft_world_t *w) {
  const weft__resources_t *s = w ? w->resources : NULL;
  uint64_t n = 0;
  for (uint32_t i = 0; s && i < s->nslots; i++)
    n += s->slots[i].count;
  return n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
}

static bool rec_less(const rec_t *a, const rec_t *b) {
  return a->key < b->key || (a->key == b->key && a->seq < b->seq);
}

/* Merges the sorted runs src[lo, mid) and src[mid, hi) into dst[lo, hi). */
static void merge_runs(const rec_t *src, rec_t *dst, size_t lo, size_t mid,
                       size_t hi) {
  size_t i = lo, j = mid, k = lo;
  while (i < mid && j < hi)
    dst[k++] = rec_less(&src[j], &src[i]) ? src[j++] : src[i++];
  while (i < mid)
    dst[k++] = src[i++];
  while (j < hi)
    dst[k++] = src[j++];
}

/* Sorts a[0, n) by (key, seq) with tmp (n records) as the other buffer. */
static void merge_sort(rec_t *a, rec_t *tmp, size_t n) {
  rec_t *src = a, *dst = tmp;
  for (size_t width = 1; width < n; width *= 2) {
    for (size_t lo = 0; lo < n; lo += 2 * width) {
      size_t mid = lo + width < n ? lo + width : n;
      size_t hi = lo + 2 * width < n ? lo + 2 * width : n;
      merge_runs(src, dst, lo, mid, hi);
    }
    rec_t *t = src;
    src = dst;
    dst = t;
  }
  if (src != a)
    memcpy(a, src, n * sizeof(*a));
}

/* The fallback when the merge buffer cannot grow: slow, but needs no
 * memory. */
static void insertion_sort(rec_t *a, size_t n) {
  for (size_t i = 1; i < n; i++) {
    rec_t x = a[i];
    size_t j = i;
    while (j > 0 && rec_less(&x, &a[j - 1])) {
      a[j] = a[j - 1];
      j--;
    }
    a[j] = x;
  }
}

/* Puts a slot's records in (key, seq) order. They usually are already: a
 * worker runs its jobs in key order. */
static void slot_sort(weft_world_t *w, weft__resources_t *s, slot_t *sl) {
  uint32_t i = 1;
  while (i < sl->count && sl->recs[i - 1].key <= sl->recs[i].key)
    i++;
  if (i >= sl->count)
    return;
  if (weft__grow(&w->alloc, &s->scratch, &s->scratch_cap, sl->count,
                 sizeof(*s->scratch), 64) == 0)
    merge_sort(sl->recs, s->scratch, sl->count);
  else
    insertion_sort(sl->recs, sl->count);
}

/* Heap order of slots a and b by their next record, then by slot index. */
static bool head_less(const weft__resources_t *s, uint32_t a, uint32_t b) {
  uint64_t ka = s->slots[a].recs[s->slots[a].pos].key;
  uint64_t kb = s->slots[b].recs[s->slots[b].pos].key;
  return ka < kb || (ka == kb && a < b);
}

static void sift_down(weft__resources_t *s, uint32_t i, uint32_t n) {
  uint32_t *h = s->heap;
  for (;;) {
    uint32_t l = 2 * i + 1, m = i;
    if (l < n && head_less(s, h[l], h[m]))
      m = l;
    if (l + 1 < n && head_less(s, h[l + 1], h[m]))
      m = l + 1;
    if (m == i)
      return;
    uint32_t t = h[i];
    h[i] = h[m];
    h[m] = t;
    i = m;
  }
}

/*
 * Where the merge may stop taking records from slot `top`, the heap's
 * head: at its first record that the other slots' smallest head precedes.
 * Until then the heap would pop `top` again every time, so those records
 * go out as one span, with no heap operation each.
 */
static uint32_t take_end(const weft__resources_t *s, uint32_t top,
                         uint32_t live) {
  const slot_t *sl = &s->slots[top];
  uint32_t next = UINT32_MAX; /* the runner-up: a child of the head */
  if (live > 1)
    next = s->heap[1];
  if (live > 2 && head_less(s, s->heap[2], next))
    next = s->heap[2];
  if (next == UINT32_MAX)
    return sl->count;
  const uint64_t bound = s->slots[next].recs[s->slots[next].pos].key;
  uint32_t end = sl->pos + 1; /* the head itself goes first */
  /* Equal keys go to the lower slot first. */
  if (top < next)
    while (end < sl->count && sl->recs[end].key <= bound)
      end++;
  else
    while (end < sl->count && sl->recs[end].key < bound)
      end++;
  return end;
}

/*
 * Appends records [from, to) of slot sl to their channels. Records staged
 * one after the other for one channel have consecutive bytes, so each such
 * run is one copy: collide stages tens of thousands of events a tick, and
 * a copy and a heap operation per event cost 29% more instructions. The
 * bytes still have to move, often from another core's cache, and that
 * is most of this serial step's time.
 */
static uint32_t publish_span(weft__resources_t *s, const slot_t *sl,
                             uint32_t from, uint32_t to) {
  uint32_t published = 0;
  while (from < to) {
    const rec_t *r = &sl->recs[from];
    chan_t *c = &s->chans[r->ch - 1];
    uint32_t k = from + 1;
    while (k < to && sl->recs[k].ch == r->ch &&
           sl->recs[k].off == sl->recs[k - 1].off + c->elem)
      k++;
    if (!c->drop) {
      memcpy(c->data + (size_t)c->count * c->elem, sl->bytes + r->off,
             (size_t)(k - from) * c->elem);
      c->count += k - from;
      published += k - from;
    }
    from = k;
  }
  return published;
}

uint32_t weft__events_publish(weft_world_t *w) {
  weft__resources_t *s = w ? w->resources : NULL;
  if (!s)
    return 0;
  /* Sort each slot by key, count what each channel receives, and fold the
   * slots' allocation counters into the world's. */
  uint32_t live = 0;
  for (uint32_t i = 0; i < s->nslots; i++) {
    slot_t *sl = &s->slots[i];
    w->alloc.allocs += sl->alloc.allocs;
    w->alloc.bytes += sl->alloc.bytes;
    memset(&sl->alloc, 0, sizeof(sl->alloc));
    if (sl->count == 0)
      continue;
    for (uint32_t j = 0; j < sl->count; j++)
      s->chans[sl->recs[j].ch - 1].pending++;
    slot_sort(w, s, sl);
    sl->pos = 0;
    s->heap[live++] = i;
  }
  if (live == 0)
    return 0;
  for (uint32_t i = 0; i < s->nchans; i++) {
    chan_t *c = &s->chans[i];
    if (c->pending && chan_reserve(w, c, c->pending) != 0) {
      c->drop = true;
      (void)weft__fail(w, WEFT_ENOMEM, WEFT__FILE, WEFT__LINE,
                       "out of memory: %u events for channel '%s' dropped",
                       c->pending, c->name);
    }
  }
  /* K-way merge of the slots by (key, slot); each slot is in (key, seq)
   * order, so the result is in (key, slot, seq) order. */
  for (uint32_t i = live / 2; i-- > 0;)
    sift_down(s, i, live);
  uint32_t published = 0;
  while (live) {
    uint32_t top = s->heap[0];
    slot_t *sl = &s->slots[top];
    uint32_t end = take_end(s, top, live);
    published += publish_span(s, sl, sl->pos, end);
    sl->pos = end;
    if (sl->pos == sl->count)
      s->heap[0] = s->heap[--live];
    sift_down(s, 0, live);
  }
  for (uint32_t i = 0; i < s->nslots; i++) {
    s->slots[i].count = 0;
    s->slots[i].used = 0;
    s->slots[i].pos = 0;
  }
  for (uint32_t i = 0; i < s->nchans; i++) {
    s->chans[i].pending = 0;
    s->chans[i].drop = false;
  }
  return published;
}

bool weft__channel_exists(const weft_world_t *w, weft_channel_t ch) {
  return chan_at(w, ch) != NULL;
}
