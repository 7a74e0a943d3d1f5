/* SPDX-License-Identifier: MIT */
/* Cached queries: matching archetypes, and chunk-at-a-time iteration. */
#include "core/query_internal.h"

#include <string.h>

#include "core/check.h"
#include "core/observer.h"
#include "core/world.h"

bool weft__query_matches(const weft_query_t *q, const weft__archetype_t *a) {
  /* Without MATCH_DISABLED a disabled component counts as absent. */
  const weft__mask_t *have =
      (q->flags & WEFT_QUERY_MATCH_DISABLED) ? &a->present : &a->enabled;
  if (!weft__mask_contains(have, &q->include))
    return false;
  if (weft__mask_intersects(have, &q->exclude))
    return false;
  if (!weft__mask_empty(&q->any) && !weft__mask_intersects(have, &q->any))
    return false;
  if (!weft__mask_contains(&a->disabled, &q->disabled))
    return false;
  return !(q->npairs | q->nxpairs) || weft__query_pairs_match(q, a);
}

static int add_match(weft_query_t *q, const weft__archetype_t *a) {
  if (weft__grow(&q->world->alloc, &q->matches, &q->cap, q->nmatches + 1,
                 sizeof(*q->matches), 8))
    return WEFT_ENOMEM;
  /* Without group_by the newest archetype goes last; with it, last of its
   * group (query_group.c). */
  uint32_t at = q->nmatches;
  uint64_t g = 0;
  if (q->group_by) {
    g = weft__query_group_of(q, a);
    at = weft__query_group_end(q, g);
    memmove(&q->matches[at + 1], &q->matches[at],
            (q->nmatches - at) * sizeof(*q->matches));
  }
  q->nmatches++;
  weft__match_t *m = &q->matches[at];
  memset(m, 0, sizeof(*m));
  m->arch = a;
  m->group = g;
  q->flat_bound += a->chunk_total;
  for (uint32_t t = 0; t < q->nterms; t++) {
    const weft__column_t *col = weft__archetype_col(a, q->terms[t]);
    if (col && !col->soa)
      m->term_array[t] = col->first_array + 1u;
    if (col && col->soa) {
      m->soa_first[t] = col->first_array;
      m->soa_count[t] = col->array_count;
    }
  }
  return 0;
}

/*
 * Makes the flat cache hold a slot for every chunk the matched archetypes
 * own, spares included, so that a rebuild on a reader thread never
 * allocates. Owner thread; @p more chunks were just added. flat_bound
 * counts up as archetypes gain chunks and is recounted before growing
 * (trimming frees chunks without telling the queries). Failure is not an
 * error: a cache short of room is not used (iteration walks the matches).
 */
static void reserve_flat(weft_query_t *q, uint64_t more) {
  q->flat_bound += more;
  if (q->flat_bound <= q->flat_cap)
    return;
  uint64_t need = 0;
  for (uint32_t i = 0; i < q->nmatches; i++)
    need += q->matches[i].arch->chunk_total;
  q->flat_bound = need;
  if (need <= q->flat_cap || need > UINT32_MAX)
    return;
  /* weft__grow counts in elements: grow an array of slots. */
  uint32_t cap = q->flat_cap;
  if (weft__grow(&q->world->alloc, &q->flat, &cap, (uint32_t)need,
                 weft__flat_slot_bytes(q->nterms), 8) == 0)
    q->flat_cap = cap;
}

/* The cache no longer describes the world (owner thread). */
static void invalidate_flat(weft_query_t *q) {
  atomic_store_explicit(&q->flat_version, 0, memory_order_relaxed);
}

int weft__queries_on_archetype(weft_world_t *w, weft__archetype_t *a) {
  for (uint32_t i = 0; i < w->query_count; i++) {
    weft_query_t *q = w->queries[i];
    if (weft__query_matches(q, a)) {
      int rc = add_match(q, a);
      WEFT_CHECK(w, rc == 0, rc, "out of memory recording an archetype");
      /* The slots point into the match list, which may have moved. */
      invalidate_flat(q);
      reserve_flat(q, 0);
    }
  }
  return 0;
}

/* Forgets q's matches of archetypes marked gone. */
static void drop_matches(weft_query_t *q) {
  if (weft__query_group_drop(q))
    invalidate_flat(q);
}

void weft__queries_drop_archetypes(weft_world_t *w) {
  for (uint32_t i = 0; i < w->query_count; i++)
    drop_matches(w->queries[i]);
  /* A temporary query froze its archetypes, but one that is freed must
   * leave it too: this is the one event temporary queries hear of. */
  for (weft_query_t *q = w->temps; q; q = q->temp_next)
    drop_matches(q);
}

void weft__queries_on_chunks(weft_world_t *w, const weft__archetype_t *a,
                             uint32_t n) {
  for (uint32_t i = 0; i < w->query_count; i++) {
    weft_query_t *q = w->queries[i];
    if (weft__query_matches(q, a))
      reserve_flat(q, n);
  }
}

/* Reads one zero-terminated term list into a mask. */
static int read_terms(weft_world_t *w, const weft_component_t *list,
                      weft__mask_t *m, uint32_t *count) {
  uint32_t n = 0;
  while (n <= WEFT_QUERY_MAX_TERMS && list[n])
    n++;
  WEFT_CHECK(w, n <= WEFT_QUERY_MAX_TERMS, WEFT_ETOOMANY,
             "a query term list holds at most %u ids", WEFT_QUERY_MAX_TERMS);
  for (uint32_t i = 0; i < n; i++) {
    WEFT_CHECK(w, weft__registry_get(&w->registry, list[i]), WEFT_ENOCOMP,
               "query names unknown component id %u", list[i]);
    WEFT_CHECK(w, !weft__mask_test(m, list[i]), WEFT_EINVAL,
               "query names component %u twice in one list", list[i]);
    weft__mask_set(m, list[i]);
  }
  *count = n;
  return 0;
}

static int parse_desc(weft_world_t *w, const weft_query_desc_t *d,
                      weft_query_t *q) {
  uint32_t ni, ne, na, nd;
  int rc = read_terms(w, d->include, &q->include, &ni);
  if (!rc)
    rc = read_terms(w, d->exclude, &q->exclude, &ne);
  if (!rc)
    rc = read_terms(w, d->any, &q->any, &na);
  if (!rc)
    rc = read_terms(w, d->disabled, &q->disabled, &nd);
  if (!rc)
    rc = weft__query_pairs_parse(w, d, q);
  if (rc)
    return rc;
  WEFT_CHECK(w, ni + na + nd + q->npairs > 0, WEFT_EINVAL,
             "a query needs an include, any or disabled term");
  WEFT_CHECK(w, !weft__mask_intersects(&q->include, &q->exclude), WEFT_EINVAL,
             "a component is both included and excluded");
  WEFT_CHECK(
      w, (d->flags & ~(WEFT_QUERY_MATCH_DISABLED | WEFT_QUERY_CHUNK_RUNS)) == 0,
      WEFT_EINVAL, "unknown query flags 0x%x", d->flags);
  q->flags = d->flags;
  q->group_by = d->group_by;
  q->group_ctx = d->group_ctx;
  q->nterms = ni;
  memcpy(q->terms, d->include, ni * sizeof(weft_component_t));
  return 0;
}

/* Whether match m goes before match p: by group, then creation. */
static bool match_before(const weft__match_t *m, const weft__match_t *p) {
  return m->group < p->group ||
         (m->group == p->group && m->arch->born < p->arch->born);
}

/* Matches every archetype the world has now, in creation order. */
static int match_all(weft_world_t *w, weft_query_t *q) {
  for (uint32_t i = 0; i < w->arch_count; i++) {
    if (weft__query_matches(q, w->archs[i])) {
      int rc = add_match(q, w->archs[i]);
      if (rc)
        return rc;
    }
  }
  /* Ids follow creation order until compaction frees some and new
   * archetypes reuse them: the matches then go back to the order they
   * would have joined in one by one, so that a query made after a
   * compaction walks as one made before it. Nearly sorted: insertion. */
  for (uint32_t i = 1; i < q->nmatches; i++) {
    weft__match_t m = q->matches[i];
    uint32_t j = i;
    for (; j > 0 && match_before(&m, &q->matches[j - 1]); j--)
      q->matches[j] = q->matches[j - 1];
    q->matches[j] = m;
  }
  return 0;
}

static int register_query(weft_world_t *w, weft_query_t *q) {
  if (weft__grow(&w->alloc, &w->queries, &w->query_cap, w->query_count + 1,
                 sizeof(*w->queries), 8))
    return WEFT_ENOMEM;
  int rc = match_all(w, q);
  if (rc)
    return rc;
  w->queries[w->query_count++] = q;
  reserve_flat(q, 0);
  return 0;
}

/* A temporary query joins the world's temporary list only, which no new
 * archetype walks. */
static int register_temp(weft_world_t *w, weft_query_t *q) {
  int rc = match_all(w, q);
  if (rc)
    return rc;
  q->temp = true;
  q->temp_next = w->temps;
  if (w->temps)
    w->temps->temp_prev = q;
  w->temps = q;
  return 0;
}

static int create(weft_world_t *w, const weft_query_desc_t *d,
                  weft_query_t **out, bool temp) {
  WEFT_CHECK(w, w && d && out, WEFT_EINVAL, "NULL argument");
  weft_query_t *q = weft__calloc(&w->alloc, sizeof(*q), 64);
  WEFT_CHECK(w, q, WEFT_ENOMEM, "out of memory creating a query");
  q->world = w;
  atomic_flag_clear(&q->flat_lock);
  int rc = parse_desc(w, d, q);
  if (!rc) {
    rc = temp ? register_temp(w, q) : register_query(w, q);
    if (rc)
      weft__fail(w, rc, WEFT__FILE, WEFT__LINE, "out of memory in a query");
  }
  if (rc) {
    weft__free(q->matches, 0, 16);
    weft__free(q->flat, 0, 16);
    weft__free(q, sizeof(*q), 64);
    return rc;
  }
  *out = q;
  return 0;
}

int weft_query_create(weft_world_t *w, const weft_query_desc_t *d,
                      weft_query_t **out) {
  return create(w, d, out, false);
}

int weft_query_create_temp(weft_world_t *w, const weft_query_desc_t *d,
                           weft_query_t **out) {
  return create(w, d, out, true);
}

bool weft_query_is_temp(const weft_query_t *q) {
  return q && q->temp;
}

int weft_query_destroy(weft_query_t *q) {
  if (!q)
    return 0;
  const weft__txn_t *t = &q->world->txn;
  uint32_t open = atomic_load_explicit(&q->iters, memory_order_relaxed) +
                  (atomic_load_explicit(&t->solo_query, memory_order_relaxed) ==
                   (uintptr_t)q);
  WEFT_CHECK(q->world, open == 0, WEFT_EBUSY,
             "the query has %u open iterations: end them (weft_iter_next "
             "returning false, weft_iter_close or weft_world_unwind) first",
             open);
  weft__query_free(q);
  return 0;
}

void weft__queries_unwound(weft_world_t *w) {
  atomic_store_explicit(&w->txn.solo_query, 0, memory_order_relaxed);
  for (uint32_t i = 0; i < w->query_count; i++)
    atomic_store_explicit(&w->queries[i]->iters, 0, memory_order_relaxed);
  for (weft_query_t *q = w->temps; q; q = q->temp_next)
    atomic_store_explicit(&q->iters, 0, memory_order_relaxed);
}

void weft__query_free(weft_query_t *q) {
  weft_world_t *w = q->world;
  /* Observers of the query go with it. */
  weft__obs_forget_query(w, q);
  if (q->temp) { /* unlinked in O(1): destroying one stays cheap */
    if (q->temp_prev)
      q->temp_prev->temp_next = q->temp_next;
    else
      w->temps = q->temp_next;
    if (q->temp_next)
      q->temp_next->temp_prev = q->temp_prev;
  }
  for (uint32_t i = 0; !q->temp && i < w->query_count; i++) {
    if (w->queries[i] == q) {
      /* Keep registration order: later archetypes notify in that order. */
      memmove(&w->queries[i], &w->queries[i + 1],
              (w->query_count - i - 1) * sizeof(void *));
      w->query_count--;
      break;
    }
  }
  weft__free(q->matches, 0, 16);
  weft__free(q->flat, 0, 16);
  weft__free(q, sizeof(*q), 64);
}

uint32_t weft_query_count(const weft_query_t *q) {
  uint32_t n = 0;
  for (uint32_t i = 0; q && i < q->nmatches; i++)
    n += q->matches[i].arch->count;
  return n;
}

uint32_t weft_query_archetype_count(const weft_query_t *q) {
  return q ? q->nmatches : 0;
}

/*
 * Fills the flat cache from the matches: a slot per chunk with rows (per
 * run of contiguous chunks for WEFT_QUERY_CHUNK_RUNS). False when the
 * cache is too small (an allocation failed on the owner thread).
 */
static bool build_flat(weft_query_t *q) {
  uint64_t need = 0;
  for (uint32_t i = 0; i < q->nmatches; i++)
    need += q->matches[i].arch->nchunks;
  if (need > q->flat_cap)
    return false;
  bool runs = (q->flags & WEFT_QUERY_CHUNK_RUNS) != 0;
  uint32_t nterms = q->nterms, n = 0;
  size_t bytes = weft__flat_slot_bytes(nterms);
  unsigned char *at = q->flat;
  for (uint32_t i = 0; i < q->nmatches; i++) {
    const weft__match_t *m = &q->matches[i];
    const weft__archetype_t *a = m->arch;
    bool merge = runs && a->contiguous;
    for (uint32_t k = 0; k < a->nchunks;) {
      weft__chunk_t *c = a->chunks[k++];
      uint32_t count = c->count;
      if (!count)
        continue;
      /* A run grows over the following chunks while each one before is
       * full and the next continues its arrays: within a segment of an
       * archetype whose arrays need no padding, consecutive chunks'
       * handles (and so every array) are adjacent. */
      for (const weft__chunk_t *cur = c;
           merge && k < a->nchunks && cur->count == a->row_cap; k++) {
        const weft__chunk_t *next = a->chunks[k];
        if (next->entities != cur->entities + a->row_cap)
          break;
        count += next->count;
        cur = next;
      }
      weft_iter_slot_t_ *s = (weft_iter_slot_t_ *)at;
      s->count = count;
      s->home_node = c->node;
      s->entities = c->entities;
      s->chunk = c;
      s->match = m;
      s->bases = (void *const *)c->bases;
      void **cols = (void **)(s + 1);
      cols[0] = NULL;
      for (uint32_t t = 0; t < nterms; t++) {
        uint32_t j = m->term_array[t];
        cols[t] = j ? c->bases[j - 1] : NULL;
      }
      at += bytes;
      n++;
    }
  }
  q->flat_count = n;
  return true;
}

/*
 * True when the flat cache describes world version v, rebuilding it if
 * needed. Reader threads: one rebuilds at a time; a reader that finds
 * another rebuilding does not wait, it walks the matches.
 */
static bool flat_ready(const weft_query_t *cq, uint64_t v) {
  weft_query_t *q = (weft_query_t *)cq; /* the cache is not the query */
  if (WEFT__LIKELY(atomic_load_explicit(&q->flat_version,
                                        memory_order_acquire) == v + 1))
    return true;
  if (atomic_flag_test_and_set_explicit(&q->flat_lock, memory_order_acquire))
    return false;
  bool ok =
      atomic_load_explicit(&q->flat_version, memory_order_relaxed) == v + 1;
  if (!ok && build_flat(q)) {
    atomic_store_explicit(&q->flat_version, v + 1, memory_order_release);
    ok = true;
  }
  atomic_flag_clear_explicit(&q->flat_lock, memory_order_release);
  return ok;
}

/*
 * Starts an iteration of q: every field but where it walks, and its scope.
 * Inline into both starts, so that weft_query_iter() stays one function.
 */
static inline __attribute__((always_inline)) void
iter_open(const weft_query_t *q, weft_iter_t *it, uint64_t v) {
  const weft_world_t *w = q->world;
  /* Field by field rather than a memset of the whole iterator, and the
   * columns in halves: compilers store those inline, where a memset that
   * size becomes a `rep stos` whose start-up alone costs more than the
   * rest of starting an iteration over a small query. */
  it->count = 0;
  it->home_node = 0;
  it->entities = NULL;
  memset(it->columns, 0, sizeof(it->columns) / 2);
  memset(it->columns + WEFT_QUERY_MAX_TERMS / 2, 0, sizeof(it->columns) / 2);
  it->slot0_ = it->slot_ = it->slot_end_ = it->slot_stop_ = NULL;
  it->bases_ = NULL;
  it->soa_ = NULL;
  it->slot_bytes_ = 0;
  it->world_ = w;
  it->world_version_ = &w->version;
  it->version_ = v;
  it->terms_ = q->terms;
  it->term_count_ = q->nterms;
  it->chunk_ = NULL;
  it->chunks_ = NULL;
  it->match_ = it->match_next_ = it->match_end_ = NULL;
  it->nchunks_ = it->chunk_index_ = it->row0_ = 0;
  it->runs_ = (q->flags & WEFT_QUERY_CHUNK_RUNS) != 0;
  it->scoped_ = w->txn.unwinds + 1;
  it->query_ = q;
  /* The world's only open iteration names its query in one store; one
   * opened beside others counts in its query (txn.h, solo_query). */
  weft_world_t *ww = (weft_world_t *)w;
  it->counted_ = weft__txn_iter_enter(w) != 0;
  if (it->counted_)
    atomic_fetch_add_explicit(&((weft_query_t *)q)->iters, 1,
                              memory_order_relaxed);
  else
    atomic_store_explicit(&ww->txn.solo_query, (uintptr_t)q,
                          memory_order_relaxed);
}

/* Points an iterator at flat-cache slots [from, to) of q. */
static inline __attribute__((always_inline)) void
iter_slots(const weft_query_t *q, weft_iter_t *it, const unsigned char *from,
           const unsigned char *to, size_t bytes) {
  it->slot0_ = it->slot_ = (const weft_iter_slot_t_ *)from;
  it->slot_stop_ = (const weft_iter_slot_t_ *)to;
  /* Checked mode checks the world's version before every chunk, so no
   * chunk is handed out inline (weft_iter_next). */
  it->slot_end_ = q->world->checked ? it->slot_ : it->slot_stop_;
  it->slot_bytes_ = (uint32_t)bytes;
}

void weft_query_iter(const weft_query_t *q, weft_iter_t *it) {
  if (!it)
    return;
  if (!q) {
    memset(it, 0, sizeof(*it));
    return; /* a zeroed iterator yields nothing */
  }
  uint64_t v = q->world->version;
  iter_open(q, it, v);
  if (!q->nmatches)
    return;
  if (flat_ready(q, v)) {
    size_t bytes = weft__flat_slot_bytes(q->nterms);
    iter_slots(q, it, q->flat, q->flat + (size_t)q->flat_count * bytes, bytes);
    return;
  }
  /* The first call to weft_iter_next() advances to the first entry. */
  it->match_next_ = q->matches;
  it->match_end_ = q->matches + q->nmatches;
}

/* The first of slots [0, n) whose match is at or after match m (slots
 * follow match order). */
static uint32_t first_slot_from(const unsigned char *flat, uint32_t n,
                                size_t bytes, const weft__match_t *m) {
  uint32_t lo = 0, hi = n;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    const weft_iter_slot_t_ *s =
        (const weft_iter_slot_t_ *)(flat + (size_t)mid * bytes);
    if ((const weft__match_t *)s->match < m)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

void weft_query_iter_group(const weft_query_t *q, uint64_t group,
                           weft_iter_t *it) {
  if (!it)
    return;
  if (!q) {
    memset(it, 0, sizeof(*it));
    return;
  }
  uint64_t v = q->world->version;
  iter_open(q, it, v);
  uint32_t lo, hi;
  weft__query_group_range(q, group, &lo, &hi);
  if (lo == hi)
    return; /* nothing to walk: the first step ends the iteration */
  if (flat_ready(q, v)) {
    size_t bytes = weft__flat_slot_bytes(q->nterms);
    uint32_t a =
        first_slot_from(q->flat, q->flat_count, bytes, q->matches + lo);
    uint32_t b =
        first_slot_from(q->flat, q->flat_count, bytes, q->matches + hi);
    iter_slots(q, it, q->flat + (size_t)a * bytes, q->flat + (size_t)b * bytes,
               bytes);
    return;
  }
  it->match_next_ = q->matches + lo;
  it->match_end_ = q->matches + hi;
}

/* The iteration was invalidated (weft__iter_stale()): it ends here, with
 * the reason on the world, in every build, before anything reads the
 * slots or chunks it was walking. */
static WEFT__COLD bool invalidated(weft_iter_t *it) {
  static const char msg[] =
      "the world changed structurally during query iteration (after "
      "weft_world_unwind): the iteration ends";
  weft__panic(it->world_, __FILE__, __LINE__, msg);
  (void)weft__fail(it->world_, WEFT_EINVAL, WEFT__FILE, WEFT__LINE, "%s", msg);
  it->slot0_ = it->slot_ = it->slot_end_ = it->slot_stop_ = NULL;
  it->match_next_ = it->match_end_ = NULL;
  it->chunk_ = NULL;
  it->nchunks_ = it->chunk_index_ = 0;
  it->count = 0;
  weft_iter_close(it);
  it->world_version_ = NULL; /* ended: later steps answer as at the end */
  return false;
}

/*
 * Grows the current hand-out over the following chunks while each one
 * before is full and the next continues its arrays: within a segment of an
 * archetype whose arrays need no padding, consecutive chunks' handles (and
 * so every array) are adjacent.
 */
static void extend_run(weft_iter_t *it, const weft__chunk_t *c) {
  const weft__chunk_t *cur = c;
  uint32_t cap = c->arch->row_cap;
  while (it->chunk_index_ < it->nchunks_ && cur->count == cap) {
    const weft__chunk_t *next = it->chunks_[it->chunk_index_];
    if (next->entities != cur->entities + cap)
      break;
    it->count += next->count;
    it->chunk_index_++;
    cur = next;
  }
}

/* Hands out chunk chunk_index_ of the current archetype. */
static inline bool emit(weft_iter_t *it) {
  const weft__match_t *m = it->match_;
  weft__chunk_t *c = (weft__chunk_t *)it->chunks_[it->chunk_index_++];
  it->count = c->count;
  if (it->runs_ && m->arch->contiguous)
    extend_run(it, c);
  it->home_node = c->node;
  it->entities = c->entities;
  it->chunk_ = c;
  weft__iter_soa(it, m, c);
  for (uint32_t t = 0; t < it->term_count_; t++) {
    uint32_t k = m->term_array[t];
    it->columns[t] = k ? c->bases[k - 1] : NULL;
  }
  return true;
}

/* Moves to the next cached archetype that has chunks. */
static bool next_archetype(weft_iter_t *it) {
  const weft__match_t *m = it->match_next_, *end = it->match_end_;
  for (; m && m < end; m++) {
    const weft__archetype_t *a = m->arch;
    if (a->nchunks) {
      it->match_ = m;
      it->match_next_ = m + 1;
      it->chunks_ = (void *const *)a->chunks;
      it->nchunks_ = a->nchunks;
      it->chunk_index_ = 0;
      return emit(it);
    }
  }
  it->match_next_ = end;
  it->nchunks_ = it->chunk_index_ = 0;
  it->count = 0;
  weft_iter_close(it);
  return false;
}

void weft_iter_close(weft_iter_t *it) {
  if (it && it->scoped_) {
    /* An iterator opened before an unwind lost its scope to the unwind
     * (and its query may be gone since). */
    bool holds = it->scoped_ - 1 == it->world_->txn.unwinds;
    it->scoped_ = 0;
    if (holds) {
      weft_world_t *w = (weft_world_t *)it->world_;
      if (it->counted_)
        atomic_fetch_sub_explicit(&((weft_query_t *)it->query_)->iters, 1,
                                  memory_order_relaxed);
      else /* before the scope closes: no other can be the first yet */
        atomic_store_explicit(&w->txn.solo_query, 0, memory_order_relaxed);
      weft__txn_iter_leave(w);
    }
  }
}

void weft__iter_view(const weft_world_t *w, weft__chunk_t *c, uint32_t row0,
                     uint32_t k, const weft_component_t *terms, uint32_t nterms,
                     weft_iter_t *v) {
  const weft__archetype_t *a = c->arch;
  memset(v, 0, sizeof(*v));
  v->count = k;
  v->home_node = c->node;
  v->entities = c->entities + row0;
  for (uint32_t t = 0; t < nterms && t < WEFT_QUERY_MAX_TERMS; t++) {
    const weft__column_t *col = weft__archetype_col(a, terms[t]);
    v->columns[t] = (col && !col->soa)
                        ? weft__chunk_at(c, col->first_array, col->size, row0)
                        : NULL;
  }
  v->world_ = w;
  v->world_version_ = &w->version;
  v->chunk_ = c;
  v->terms_ = terms;
  v->term_count_ = nterms;
  v->row0_ = row0;
  v->version_ = w->version;
}

/* Hands out the next slot of the query's flat cache. */
static inline bool emit_slot(weft_iter_t *it) {
  const weft_iter_slot_t_ *s = it->slot_;
  void *const *cols = (void *const *)(s + 1);
  it->count = s->count;
  it->home_node = s->home_node;
  it->entities = s->entities;
  for (uint32_t t = 0; t < it->term_count_; t++)
    it->columns[t] = cols[t];
  it->slot_ =
      (const weft_iter_slot_t_ *)((const unsigned char *)s + it->slot_bytes_);
  return true;
}

bool weft_iter_next_slow_(weft_iter_t *it) {
  if (WEFT__UNLIKELY(!it || !it->world_version_))
    return false; /* a zeroed iterator: nothing to walk */
  if (WEFT__UNLIKELY(it->version_ != *it->world_version_))
    return invalidated(it);
  if (it->slot_ != it->slot_stop_) {
    emit_slot(it);
    if (it->slot_end_ != it->slot_stop_) /* checked: the next one here too */
      it->slot_end_ = it->slot_;
    return true;
  }
  if (WEFT__LIKELY(it->chunk_index_ < it->nchunks_))
    return emit(it);
  return next_archetype(it);
}

/*
 * The out-of-line field accessors serve what the inline ones in
 * weft/query.h leave them: views of part of a chunk (batch fill callbacks,
 * observers), an iterator on no chunk, and misuse. They resolve the field
 * through the chunk's archetype.
 */

/* The array of field f of SoA column col in chunk c, from the view's row. */
static inline void *field_array(const weft_iter_t *it, const weft__chunk_t *c,
                                const weft__column_t *col, uint32_t f) {
  uint32_t k = col->first_array + f;
  return weft__chunk_at(c, k, c->arch->arrays[k].elem, it->row0_);
}

void *weft_iter_field_slow_(const weft_iter_t *it, uint32_t term,
                            uint32_t field) {
  if (!it || weft__iter_stale(it))
    return NULL;
  const weft__chunk_t *c = weft__iter_chunk(it);
  const weft_world_t *w = it->world_;
  if (!WEFT_ASSERT_CHECKED(w, term < it->term_count_ && c,
                           "weft_iter_field: term out of range"))
    return NULL;
  const weft__column_t *col = weft__archetype_col(c->arch, it->terms_[term]);
  if (!col || !col->soa)
    return NULL;
  if (!WEFT_ASSERT_CHECKED(w, field < col->array_count,
                           "weft_iter_field: field out of range"))
    return NULL;
  return field_array(it, c, col, field);
}

uint32_t weft_iter_fields_slow_(const weft_iter_t *it, uint32_t term,
                                void **out) {
  if (!it || !out)
    return 0;
  const weft__chunk_t *c = weft__iter_chunk(it);
  if (!c || term >= it->term_count_)
    return 0;
  const weft__column_t *col = weft__archetype_col(c->arch, it->terms_[term]);
  if (!col || !col->soa)
    return 0;
  for (uint32_t f = 0; f < col->array_count; f++)
    out[f] = field_array(it, c, col, f);
  return col->array_count;
}

void *weft_iter_column_of(const weft_iter_t *it, weft_component_t c) {
  const weft__chunk_t *ch = it ? weft__iter_chunk(it) : NULL;
  if (!ch)
    return NULL;
  const weft__column_t *col = weft__archetype_col(ch->arch, c);
  if (!col || col->soa)
    return NULL;
  return weft__chunk_at(ch, col->first_array, col->size, it->row0_);
}

/* The archetype of the iterator's current chunk. */
static inline const weft__archetype_t *iter_arch(const weft_iter_t *it) {
  const weft__chunk_t *c = weft__iter_chunk(it);
  return c ? c->arch : NULL;
}

bool weft_iter_enabled(const weft_iter_t *it, weft_component_t c) {
  const weft__archetype_t *a = it ? iter_arch(it) : NULL;
  return a && c >= 1 && c <= WEFT_MAX_COMPONENTS &&
         weft__mask_test(&a->enabled, c);
}
