/* SPDX-License-Identifier: MIT */
/*
 * Publishing staged events at a sync point (core/resource_internal.h):
 * each worker's slot is sorted by key, and a k-way merge of the slots
 * appends every event to its channel in (key, slot, order staged) order,
 * the same on any number of threads. A large publish on a pool runs as
 * several merges, one per range of keys, on the pool's workers.
 */
#include "core/resource_internal.h"

#include <string.h>

#include "core/check.h"
#include "core/resource_state.h"
#include "core/world.h"
#include "core/hooks.h"

/* Most merges a parallel publish runs (publish_parallel()). */
#define EVENTS_PARTS_MAX 64u

/* Keys pick_splitters() draws, from all slots together. */
#define EVENTS_SAMPLES 512u

/* Fewer staged events than this are published on one thread: below it
 * the pool's hand-offs cost more than the copies. */
#define EVENTS_PAR_MIN 4096u

/* Makes room for @p parts parallel merges over the current slots and
 * channels (see publish_parallel()); keeps what is there when it fits. */
static int par_reserve(weft_world_t *w, weft__resources_t *s, uint32_t parts) {
  if (parts > EVENTS_PARTS_MAX)
    parts = EVENTS_PARTS_MAX;
  if (parts < 2 || (s->par_parts >= parts && s->par_slots >= s->nslots &&
                    s->par_chans >= s->nchans))
    return 0;
  /* Each block on its own cache lines: the merges run on different
   * threads and write their cursors all the time. */
  uint32_t stride = (3 * s->nslots + 2 * s->nchans + 1 + 15) & ~15u;
  uint32_t *par =
      weft__alloc(&w->alloc, (size_t)parts * stride * sizeof(*par), 64);
  if (!par)
    return WEFT_ENOMEM;
  weft__free(s->par, (size_t)s->par_parts * s->par_stride * sizeof(*s->par),
             64);
  s->par = par;
  s->par_parts = parts;
  s->par_slots = s->nslots;
  s->par_chans = s->nchans;
  s->par_stride = stride;
  return 0;
}

int weft__events_reserve(weft_world_t *w, uint32_t parts) {
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
    weft__event_slot_t *sl = &s->slots[i];
    rc = weft__grow(&w->alloc, &sl->recs, &sl->cap, (uint32_t)count,
                    sizeof(weft__event_rec_t), 64);
    if (!rc)
      rc = weft__grow(&w->alloc, &sl->bytes, &sl->bytes_cap, (uint32_t)used, 1,
                      4096);
  }
  return rc ? rc : par_reserve(w, s, parts);
}

static bool rec_less(const weft__event_rec_t *a, const weft__event_rec_t *b) {
  return a->key < b->key || (a->key == b->key && a->seq < b->seq);
}

/* Merges the sorted runs src[lo, mid) and src[mid, hi) into dst[lo, hi). */
static void merge_runs(const weft__event_rec_t *src, weft__event_rec_t *dst,
                       size_t lo, size_t mid, size_t hi) {
  size_t i = lo, j = mid, k = lo;
  while (i < mid && j < hi)
    dst[k++] = rec_less(&src[j], &src[i]) ? src[j++] : src[i++];
  while (i < mid)
    dst[k++] = src[i++];
  while (j < hi)
    dst[k++] = src[j++];
}

/* The end of the ascending run of a[lo, n) that starts at lo. */
static size_t run_end(const weft__event_rec_t *a, size_t lo, size_t n) {
  size_t i = lo + 1;
  while (i < n && !rec_less(&a[i], &a[i - 1]))
    i++;
  return i;
}

/*
 * Sorts a[0, n) by (key, seq) with tmp (n records) as the other buffer: a
 * natural merge sort, each pass merging pairs of the ascending runs it
 * finds. A slot is out of order because a worker ran parts out of order
 * (a steal), and each part stages an ascending run of records, so a slot
 * holds a few long runs and takes a few passes, where a bottom-up sort
 * from runs of one takes a pass per doubling.
 */
static void merge_sort(weft__event_rec_t *a, weft__event_rec_t *tmp, size_t n) {
  weft__event_rec_t *src = a, *dst = tmp;
  for (;;) {
    size_t runs = 0;
    for (size_t lo = 0; lo < n; runs++) {
      size_t mid = run_end(src, lo, n);
      size_t hi = mid < n ? run_end(src, mid, n) : n;
      merge_runs(src, dst, lo, mid, hi);
      lo = hi;
    }
    weft__event_rec_t *t = src;
    src = dst;
    dst = t;
    if (runs <= 1)
      break;
  }
  if (src != a)
    memcpy(a, src, n * sizeof(*a));
}

/* The fallback when the merge buffer cannot grow: slow, but needs no
 * memory. */
static void insertion_sort(weft__event_rec_t *a, size_t n) {
  for (size_t i = 1; i < n; i++) {
    weft__event_rec_t x = a[i];
    size_t j = i;
    while (j > 0 && rec_less(&x, &a[j - 1])) {
      a[j] = a[j - 1];
      j--;
    }
    a[j] = x;
  }
}

/* Puts the records of a slot that is not in key order in (key, seq)
 * order. */
static void slot_sort(weft_world_t *w, weft__resources_t *s,
                      weft__event_slot_t *sl) {
  if (weft__grow(&w->alloc, &s->scratch, &s->scratch_cap, sl->count,
                 sizeof(*s->scratch), 64) == 0)
    merge_sort(sl->recs, s->scratch, sl->count);
  else
    insertion_sort(sl->recs, sl->count);
}

/*
 * One k-way merge of the slots' records in [pos, end) each: the serial
 * publish is one merge over every record; the parallel one, one merge per
 * range of keys. Arrays of nslots words, and at of one word per channel.
 */
typedef struct merge_t {
  uint32_t *heap; /* slots with records left, by head record */
  uint32_t *pos;  /* per slot: its next record */
  uint32_t *end;  /* per slot: the end of this merge's records */
  uint32_t *at;   /* per channel: the index its next event goes to */
} merge_t;

/* Heap order of slots a and b by their next record, then by slot index. */
static bool head_less(const weft__resources_t *s, const merge_t *m, uint32_t a,
                      uint32_t b) {
  uint64_t ka = s->slots[a].recs[m->pos[a]].key;
  uint64_t kb = s->slots[b].recs[m->pos[b]].key;
  return ka < kb || (ka == kb && a < b);
}

static void sift_down(const weft__resources_t *s, merge_t *m, uint32_t i,
                      uint32_t n) {
  uint32_t *h = m->heap;
  for (;;) {
    uint32_t l = 2 * i + 1, k = i;
    if (l < n && head_less(s, m, h[l], h[k]))
      k = l;
    if (l + 1 < n && head_less(s, m, h[l + 1], h[k]))
      k = l + 1;
    if (k == i)
      return;
    uint32_t t = h[i];
    h[i] = h[k];
    h[k] = t;
    i = k;
  }
}

/*
 * Where the merge may stop taking records from slot `top`, the heap's
 * head: at its first record that the other slots' smallest head precedes.
 * Until then the heap would pop `top` again every time, so those records
 * go out as one span, with no heap operation each.
 */
static uint32_t take_end(const weft__resources_t *s, const merge_t *m,
                         uint32_t top, uint32_t live) {
  const weft__event_slot_t *sl = &s->slots[top];
  uint32_t next = UINT32_MAX; /* the runner-up: a child of the head */
  if (live > 1)
    next = m->heap[1];
  if (live > 2 && head_less(s, m, m->heap[2], next))
    next = m->heap[2];
  const uint32_t last = m->end[top];
  if (next == UINT32_MAX)
    return last;
  const uint64_t bound = s->slots[next].recs[m->pos[next]].key;
  uint32_t end = m->pos[top] + 1; /* the head itself goes first */
  /* Equal keys go to the lower slot first. */
  if (top < next)
    while (end < last && sl->recs[end].key <= bound)
      end++;
  else
    while (end < last && sl->recs[end].key < bound)
      end++;
  return end;
}

/*
 * Copies records [from, to) of slot sl to their channels, at the merge's
 * places. Records staged one after the other for one channel have
 * consecutive bytes, so each such run is one copy: collide stages tens of
 * thousands of events a tick, and a copy and a heap operation per event
 * would cost more than the copy itself. The bytes still have to move, often
 * from another core's cache, and that is most of the time a merge takes.
 */
static uint32_t publish_span(const weft__resources_t *s, merge_t *m,
                             const weft__event_slot_t *sl, uint32_t from,
                             uint32_t to) {
  uint32_t published = 0;
  while (from < to) {
    const weft__event_rec_t *r = &sl->recs[from];
    const weft__chan_t *c = &s->chans[r->ch - 1];
    uint32_t k = from + 1;
    while (k < to && sl->recs[k].ch == r->ch &&
           sl->recs[k].off == sl->recs[k - 1].off + c->elem)
      k++;
    if (!c->drop) {
      uint32_t *at = &m->at[r->ch - 1];
      memcpy(c->data + (size_t)*at * c->elem, sl->bytes + r->off,
             (size_t)(k - from) * c->elem);
      *at += k - from;
      published += k - from;
    }
    from = k;
  }
  return published;
}

/* Runs merge m: every slot's records [pos, end) to their channels, in
 * (key, slot, seq) order (each slot is in (key, seq) order). Returns the
 * events copied. */
static uint32_t merge_run(const weft__resources_t *s, merge_t *m) {
  uint32_t live = 0;
  for (uint32_t i = 0; i < s->nslots; i++)
    if (m->pos[i] < m->end[i])
      m->heap[live++] = i;
  for (uint32_t i = live / 2; i-- > 0;)
    sift_down(s, m, i, live);
  uint32_t published = 0;
  while (live) {
    uint32_t top = m->heap[0];
    uint32_t end = take_end(s, m, top, live);
    published += publish_span(s, m, &s->slots[top], m->pos[top], end);
    m->pos[top] = end;
    if (end == m->end[top])
      m->heap[0] = m->heap[--live];
    sift_down(s, m, 0, live);
  }
  return published;
}

/* Grows each channel for its pending events; one that cannot grow drops
 * them, and the world's last error says so. */
static void chans_reserve(weft_world_t *w, weft__resources_t *s) {
  for (uint32_t i = 0; i < s->nchans; i++) {
    weft__chan_t *c = &s->chans[i];
    if (c->pending && weft__chan_reserve(w, c, c->pending) != 0) {
      c->drop = true;
      (void)weft__fail(w, WEFT_ENOMEM, WEFT__FILE, WEFT__LINE,
                       "out of memory: %u events for channel '%s' dropped",
                       c->pending, c->name);
    }
  }
}

/* Adds records [from, to) of slot sl to counts per channel (cnt[ch - 1]):
 * one addition when they all name one channel, as they usually do. */
static void count_channels(const weft__event_slot_t *sl, uint32_t from,
                           uint32_t to, uint32_t *cnt) {
  if (sl->only_ch) {
    cnt[sl->only_ch - 1] += to - from;
    return;
  }
  for (uint32_t j = from; j < to; j++)
    cnt[sl->recs[j].ch - 1]++;
}

/* Sorts the slots staged out of key order (what staging noted). */
static void sort_slots(weft_world_t *w, weft__resources_t *s) {
  for (uint32_t i = 0; i < s->nslots; i++)
    if (s->slots[i].count && s->slots[i].disorder)
      slot_sort(w, s, &s->slots[i]);
}

/* The whole publish as one merge on this thread. */
static uint32_t publish_serial(weft_world_t *w, weft__resources_t *s) {
  uint32_t pending[WEFT_MAX_CHANNELS] = {0};
  for (uint32_t i = 0; i < s->nslots; i++)
    count_channels(&s->slots[i], 0, s->slots[i].count, pending);
  for (uint32_t i = 0; i < s->nchans; i++)
    s->chans[i].pending += pending[i];
  sort_slots(w, s);
  chans_reserve(w, s);
  uint32_t at[WEFT_MAX_CHANNELS];
  for (uint32_t i = 0; i < s->nchans; i++)
    at[i] = s->chans[i].count;
  merge_t m = {s->merge, s->merge + s->nslots, s->merge + 2 * s->nslots, at};
  for (uint32_t i = 0; i < s->nslots; i++) {
    m.pos[i] = 0;
    m.end[i] = s->slots[i].count;
  }
  uint32_t published = merge_run(s, &m);
  for (uint32_t i = 0; i < s->nchans; i++)
    s->chans[i].count = at[i];
  return published;
}

/* Part k's merge, in its block of s->par (layout: see par_reserve()). */
static merge_t part_merge(const weft__resources_t *s, uint32_t k) {
  uint32_t *b = s->par + (size_t)k * s->par_stride;
  const uint32_t n = s->par_slots;
  return (merge_t){b, b + n, b + 2 * n, b + 3 * n};
}

/* Part k's per-channel counts, after its merge's at. */
static uint32_t *part_counts(const weft__resources_t *s, uint32_t k) {
  return s->par + (size_t)k * s->par_stride + 3 * s->par_slots + s->par_chans;
}

/* The first record of sorted slot sl whose key is at least key. */
static uint32_t lower_bound(const weft__event_slot_t *sl, uint64_t key) {
  uint32_t lo = 0, hi = sl->count;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (sl->recs[mid].key < key)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

static void par_count(void *arg, uint32_t begin, uint32_t end,
                      uint32_t worker) {
  (void)worker;
  const weft__resources_t *s = arg;
  for (uint32_t k = begin; k < end; k++) {
    merge_t m = part_merge(s, k);
    uint32_t *cnt = part_counts(s, k);
    memset(cnt, 0, s->nchans * sizeof(*cnt));
    for (uint32_t i = 0; i < s->nslots; i++)
      count_channels(&s->slots[i], m.pos[i], m.end[i], cnt);
  }
}

static void par_merge(void *arg, uint32_t begin, uint32_t end,
                      uint32_t worker) {
  (void)worker;
  const weft__resources_t *s = arg;
  for (uint32_t k = begin; k < end; k++) {
    merge_t m = part_merge(s, k);
    part_counts(s, k)[s->par_chans] = merge_run(s, &m);
  }
}

/* A key drawn from a slot and the number of records it stands for. */
typedef struct sample_t {
  uint64_t key;
  uint32_t weight;
} sample_t;

static void sample_sift(sample_t *a, uint32_t root, uint32_t n) {
  sample_t v = a[root];
  for (;;) {
    uint32_t child = 2 * root + 1;
    if (child >= n)
      break;
    if (child + 1 < n && a[child + 1].key > a[child].key)
      child++;
    if (a[child].key <= v.key)
      break;
    a[root] = a[child];
    root = child;
  }
  a[root] = v;
}

/* Heapsort by key: in place, no allocation (qsort may allocate). */
static void sample_sort(sample_t *a, uint32_t n) {
  for (uint32_t i = n / 2; i-- > 0;)
    sample_sift(a, i, n);
  for (uint32_t end = n; end-- > 1;) {
    sample_t t = a[0];
    a[0] = a[end];
    a[end] = t;
    sample_sift(a, 0, end);
  }
}

/*
 * Picks parts - 1 nondecreasing splitter keys into split[1, parts) so that
 * about total / parts records lie between each two: from every slot, keys
 * at even steps through it, each weighing the records up to its next
 * step, sorted; a splitter is the key at which the weight passes the next
 * share. Slots hold different key ranges (each worker its own jobs), so
 * drawing from one slot alone would cut the others badly.
 */
static void pick_splitters(const weft__resources_t *s, uint32_t parts,
                           uint64_t total, uint64_t *split) {
  sample_t smp[EVENTS_SAMPLES];
  uint32_t per = EVENTS_SAMPLES / s->nslots, n = 0;
  if (per > 32)
    per = 32;
  for (uint32_t i = 0; i < s->nslots && per; i++) {
    const weft__event_slot_t *sl = &s->slots[i];
    for (uint32_t j = 0; j < per && sl->count; j++) {
      uint32_t a = (uint32_t)((uint64_t)sl->count * j / per);
      uint32_t b = (uint32_t)((uint64_t)sl->count * (j + 1) / per);
      if (b > a)
        smp[n++] = (sample_t){sl->recs[a].key, b - a};
    }
  }
  sample_sort(smp, n);
  uint64_t seen = 0;
  uint32_t j = 0;
  for (uint32_t k = 1; k < parts; k++) {
    uint64_t want = total * k / parts;
    while (j < n && seen + smp[j].weight <= want)
      seen += smp[j++].weight;
    split[k] = j < n ? smp[j].key : UINT64_MAX;
  }
}

/*
 * The publish as par_parts merges on the pool, one per range of keys:
 * splitter keys (pick_splitters()) cut every slot (binary searches), so
 * all records of one key fall in one range and each range's merge gives
 * the order the serial merge gives. A pass
 * counts each range's events per channel (without reading them where
 * each slot's events are of one channel, as staging noted); the prefix over the
 * ranges then fixes where each range's events of a channel start, and the
 * ranges merge at once, each into its own places. Same result as
 * publish_serial(), byte for byte, on any number of threads.
 */
static uint32_t publish_parallel(weft_world_t *w, weft__resources_t *s,
                                 struct weft_pool_t *pool, uint32_t self,
                                 uint64_t total) {
  const uint32_t parts = s->par_parts;
  const weft__pool_hooks_t *hk = weft__pool_hooks(pool);
  sort_slots(w, s);
  uint64_t split[EVENTS_PARTS_MAX];
  pick_splitters(s, parts, total, split);
  for (uint32_t k = 0; k < parts; k++) {
    merge_t m = part_merge(s, k);
    for (uint32_t i = 0; i < s->nslots; i++) {
      const weft__event_slot_t *sl = &s->slots[i];
      m.pos[i] = k ? lower_bound(sl, split[k]) : 0;
      m.end[i] = k + 1 < parts ? lower_bound(sl, split[k + 1]) : sl->count;
    }
  }
  /* Counting per channel reads every record only where a slot holds
   * events of several channels; otherwise it is a sum of lengths. */
  bool mixed = false;
  for (uint32_t i = 0; i < s->nslots; i++)
    mixed |= s->slots[i].count && !s->slots[i].only_ch;
  if (mixed)
    hk->parallel_for(pool, self, 0, parts, 1, par_count, s);
  else
    par_count(s, 0, parts, self);
  for (uint32_t k = 0; k < parts; k++) {
    const uint32_t *cnt = part_counts(s, k);
    for (uint32_t c = 0; c < s->nchans; c++)
      s->chans[c].pending += cnt[c];
  }
  chans_reserve(w, s);
  for (uint32_t c = 0; c < s->nchans; c++) {
    uint32_t at = s->chans[c].count;
    for (uint32_t k = 0; k < parts; k++) {
      part_merge(s, k).at[c] = at;
      at += part_counts(s, k)[c];
    }
  }
  hk->parallel_for(pool, self, 0, parts, 1, par_merge, s);
  uint32_t published = 0;
  for (uint32_t k = 0; k < parts; k++)
    published += part_counts(s, k)[s->par_chans];
  for (uint32_t c = 0; c < s->nchans; c++)
    if (!s->chans[c].drop)
      s->chans[c].count += s->chans[c].pending;
  return published;
}

uint32_t weft__events_publish(weft_world_t *w, struct weft_pool_t *pool,
                              uint32_t self) {
  weft__resources_t *s = w ? w->resources : NULL;
  if (!s)
    return 0;
  /* Fold the slots' allocation counters into the world's. */
  uint64_t total = 0;
  for (uint32_t i = 0; i < s->nslots; i++) {
    weft__event_slot_t *sl = &s->slots[i];
    w->alloc.allocs += sl->alloc.allocs;
    w->alloc.bytes += sl->alloc.bytes;
    memset(&sl->alloc, 0, sizeof(sl->alloc));
    total += sl->count;
  }
  if (total == 0)
    return 0;
  bool par = pool && weft__pool_hooks(pool)->workers(pool) > 1 &&
             s->par_parts >= 2 && s->par_slots >= s->nslots &&
             s->par_chans >= s->nchans && total >= EVENTS_PAR_MIN;
  uint32_t published =
      par ? publish_parallel(w, s, pool, self, total) : publish_serial(w, s);
  for (uint32_t i = 0; i < s->nslots; i++) {
    s->slots[i].count = 0;
    s->slots[i].used = 0;
  }
  for (uint32_t i = 0; i < s->nchans; i++) {
    s->chans[i].pending = 0;
    s->chans[i].drop = false;
  }
  return published;
}
