/*
 * Command buffers: lock-free recording on any thread, and the deterministic
 * merge that turns a set of buffers into one transaction (txn.c).
 *
 * A buffer is private to the thread recording into it: recording appends
 * to the buffer's own arrays and arena and only reads the world, so
 * buffers never synchronise with each other. Memory is kept across
 * applies, so a buffer that records the same amount every frame stops
 * allocating after the first one.
 *
 * Merge order is (key, position in the buffer). Keys are stored once per
 * segment of commands recorded under one key, not in each command. A
 * buffer whose segments were recorded in non-decreasing key order (the
 * usual case: a job walks its chunks in order) is merged as it is;
 * otherwise its segments are sorted first, stably, with scratch memory the
 * buffer keeps.
 */
#include <string.h>

#include "core/check.h"
#include "core/query_internal.h"
#include "core/stage.h"
#include "core/world.h"

/*
 * A recorded command, 24 bytes. The ordering key is not in it: a buffer's
 * commands come in segments of one key, each opened by a key record
 * (WEFT__OP_KEY) that carries the key in e and, in n, the merge position of
 * the next key record (ncmds for the last; set when the next one opens or
 * when the apply starts). A system records one key per chunk, so the key
 * costs a record per chunk instead of 8 bytes per command, and the merge
 * finds where a buffer stops winning by walking key records only.
 */
typedef struct weft__cmd_t {
  weft_entity_t e;  /* target: live or pending handle; a key record: the key */
  const void *data; /* value bytes, or the members of a query command */
  uint32_t n;       /* members of a query command; a key record: see above */
  uint16_t comp;
  uint8_t op;
  uint8_t inl; /* WEFT__OPF_INLINE: the value (8 bytes at most) sits in
                * data itself; 0 otherwise */
} weft__cmd_t;

_Static_assert(sizeof(weft__cmd_t) == 24, "a command is 24 bytes");

/* The value bytes a command carries, or NULL. */
static inline const void *cmd_value(const weft__cmd_t *c) {
  return c->inl ? (const void *)&c->data : c->data;
}

struct weft_cmdbuf_t {
  weft_world_t *world;
  uint32_t id;       /* 1..WEFT_CMDBUF_MAX, stamped into pending handles */
  uint32_t epoch;    /* 12 bits, advanced by each apply */
  uint64_t key;      /* set by weft_cmd_key() */
  uint64_t seg_key;  /* the key of the open segment */
  uint32_t seg;      /* its key record */
  uint32_t nsegs;    /* key records */
  bool sorted;       /* segments opened in non-decreasing key order */
  bool refs_pending; /* a command other than a spawn names a pending handle */
  weft__spawn_run_t *run; /* the open spawn run */
  uint32_t run_cmd;       /* its command */
  uint64_t run_key;       /* the key it was recorded under */
  bool applying;          /* part of the running weft_world_apply() */
  weft__cmd_t *cmds;
  uint32_t ncmds;
  uint32_t cmds_cap;
  /* Recording takes the slow path when ncmds reaches this: cmds_cap, or
   * ncmds itself while a key record is due (a new key, an empty buffer). */
  uint32_t cmds_lim;
  uint32_t nspawns; /* pending spawns recorded this epoch */
  uint32_t nruns;   /* spawn runs (each one command record) */
  /* Merge order when not sorted: command indices (and scratch for
   * sorting the segments). */
  uint32_t *order;
  uint32_t *scratch;
  uint32_t order_cap;
  /* What the pending spawns became, by sequence. */
  weft_entity_t *spawned;
  uint32_t spawned_cap;
  uint32_t spawned_n;
  uint32_t spawned_epoch;
  bool has_results;
  weft__arena_t arena;
  weft__alloc_stats_t alloc; /* this buffer's own: recording is concurrent */
};

#define PENDING_BIT UINT64_C(0x80000000)
#define ID_SHIFT 32
#define EPOCH_SHIFT 44
#define FIELD_MASK 0xfffu

/* ---- lifetime ------------------------------------------------------------ */

int weft_cmdbuf_create(weft_world_t *w, weft_cmdbuf_t **out) {
  WEFT_CHECK(w, w && out, WEFT_EINVAL, "NULL argument");
  weft__txn_t *t = &w->txn;
  uint32_t id = 1;
  while (id < t->nbufs && t->bufs[id])
    id++;
  WEFT_CHECK(w, id <= WEFT_CMDBUF_MAX, WEFT_ELIMIT,
             "a world holds at most %u command buffers", WEFT_CMDBUF_MAX);
  if (id >= t->nbufs) {
    int rc = weft__grow(&w->alloc, &t->bufs, &t->bufs_cap, id + 1,
                        sizeof(*t->bufs), 8);
    WEFT_CHECK(w, rc == 0, WEFT_ENOMEM, "out of memory adding a buffer");
    while (t->nbufs <= id)
      t->bufs[t->nbufs++] = NULL;
  }
  if (id >= t->buf_epochs_cap) {
    uint32_t old = t->buf_epochs_cap;
    int rc = weft__grow(&w->alloc, &t->buf_epochs, &t->buf_epochs_cap, id + 1,
                        sizeof(*t->buf_epochs), 8);
    WEFT_CHECK(w, rc == 0, WEFT_ENOMEM, "out of memory adding a buffer");
    memset(t->buf_epochs + old, 0,
           (t->buf_epochs_cap - old) * sizeof(*t->buf_epochs));
  }
  weft_cmdbuf_t *b = weft__calloc(&w->alloc, sizeof(*b), 64);
  WEFT_CHECK(w, b != NULL, WEFT_ENOMEM, "out of memory adding a buffer");
  b->world = w;
  b->id = id;
  /* A reused id continues the epochs of the buffer that had it, so that
   * the old buffer's pending handles stay stale. */
  b->epoch = t->buf_epochs[id];
  b->sorted = true;
  t->bufs[id] = b;
  t->live_bufs++;
  *out = b;
  return 0;
}

void weft_cmdbuf_destroy(weft_cmdbuf_t *b) {
  if (!b)
    return;
  weft_world_t *w = b->world;
  w->txn.bufs[b->id] = NULL;
  w->txn.buf_epochs[b->id] = (uint16_t)((b->epoch + 1) & FIELD_MASK);
  w->txn.live_bufs--;
  weft__free(b->cmds, 0, 16);
  weft__free(b->order, 0, 16);
  weft__free(b->scratch, 0, 16);
  weft__free(b->spawned, 0, 16);
  weft__arena_fini(&b->arena);
  weft__free(b, sizeof(*b), 64);
}

/* Empties a buffer for the next transaction, keeping its memory. A new
 * epoch makes the pending handles it issued so far stale. */
static void restart(weft_cmdbuf_t *b) {
  b->ncmds = 0;
  b->cmds_lim = 0; /* the first record opens a segment */
  b->nsegs = 0;
  b->nspawns = 0;
  b->nruns = 0;
  b->sorted = true;
  b->refs_pending = false;
  b->run = NULL;
  b->key = b->seg_key = 0;
  b->epoch = (b->epoch + 1) & FIELD_MASK;
  weft__arena_reset(&b->arena);
}

void weft__cmdbuf_usage(const weft_cmdbuf_t *b, weft__cmdbuf_usage_t *u) {
  u->cmds = b->ncmds;
  u->spawns = b->nspawns;
  u->bytes = b->arena.taken;
}

/* Grows the order and scratch arrays to n entries. 0 or WEFT_ENOMEM. */
static int order_room(weft_cmdbuf_t *b, uint32_t n) {
  if (n <= b->order_cap)
    return 0;
  uint32_t cap = b->order_cap, cap2 = b->order_cap;
  int rc = weft__grow(&b->alloc, &b->order, &cap, n, sizeof(uint32_t), 1024);
  if (!rc)
    rc = weft__grow(&b->alloc, &b->scratch, &cap2, n, sizeof(uint32_t), 1024);
  b->order_cap = cap < cap2 ? cap : cap2;
  return rc ? WEFT_ENOMEM : 0;
}

int weft__cmdbuf_reserve(weft_cmdbuf_t *b, const weft__cmdbuf_usage_t *u) {
  int rc = 0;
  if (u->cmds > b->cmds_cap)
    rc = weft__grow(&b->alloc, &b->cmds, &b->cmds_cap, u->cmds,
                    sizeof(*b->cmds), 1024);
  if (!rc)
    rc = order_room(b, u->cmds);
  if (!rc && u->spawns > b->spawned_cap)
    rc = weft__grow(&b->alloc, &b->spawned, &b->spawned_cap, u->spawns,
                    sizeof(*b->spawned), 256);
  if (!rc && u->bytes)
    rc = weft__arena_reserve(&b->arena, &b->alloc, u->bytes);
  return rc;
}

void weft_cmdbuf_clear(weft_cmdbuf_t *b) {
  if (b)
    restart(b);
}

uint32_t weft_cmdbuf_count(const weft_cmdbuf_t *b) {
  /* A run of spawns is one record: count its spawns instead. Key records
   * are not commands. */
  return b ? b->ncmds - b->nruns - b->nsegs + b->nspawns : 0;
}

void weft__cmdbuf_alloc_stats(const weft_world_t *w, uint64_t *allocs,
                              uint64_t *bytes) {
  for (uint32_t i = 1; i < w->txn.nbufs; i++) {
    const weft_cmdbuf_t *b = w->txn.bufs[i];
    if (b) {
      *allocs += b->alloc.allocs;
      *bytes += b->alloc.bytes;
    }
  }
}

weft__alloc_stats_t *weft__cmdbuf_alloc(weft_cmdbuf_t *b) {
  return &b->alloc;
}

/* ---- recording -------------------------------------------------------------
 */

void weft_cmd_key(weft_cmdbuf_t *b, uint64_t key) {
  if (!b)
    return;
  b->key = key;
  /* The next record opens a segment: it can fail with WEFT_ENOMEM, this
   * call cannot. */
  if (key != b->seg_key)
    b->cmds_lim = b->ncmds;
}

/*
 * Makes room for one more record, first opening a segment with a key
 * record when the key changed or the buffer is empty. 0 or WEFT_ENOMEM
 * (nothing recorded).
 */
static int make_room(weft_cmdbuf_t *b) {
  bool open = b->ncmds == 0 || b->key != b->seg_key;
  uint32_t need = b->ncmds + 1 + (open ? 1u : 0u);
  if (need > b->cmds_cap && weft__grow(&b->alloc, &b->cmds, &b->cmds_cap, need,
                                       sizeof(*b->cmds), 1024))
    return WEFT_ENOMEM;
  if (open) {
    if (b->ncmds) {
      if (b->key < b->seg_key)
        b->sorted = false;
      b->cmds[b->seg].n = b->ncmds;
    }
    b->seg = b->ncmds;
    b->cmds[b->ncmds++] = (weft__cmd_t){.e = b->key, .op = WEFT__OP_KEY};
    b->seg_key = b->key;
    b->nsegs++;
  }
  b->cmds_lim = b->cmds_cap;
  return 0;
}

static int push(weft_cmdbuf_t *b, uint32_t op, weft_entity_t e,
                weft_component_t c, const void *data, uint32_t n) {
  int rc = make_room(b);
  if (rc)
    return rc;
  b->cmds[b->ncmds++] = (weft__cmd_t){
      .e = e, .data = data, .n = n, .comp = (uint16_t)c, .op = (uint8_t)op};
  return 0;
}

/* Copies a value into the buffer's arena (NULL stays NULL: zero-fill). */
static inline __attribute__((always_inline)) int copy_value(weft_cmdbuf_t *b,
                                                            weft_component_t c,
                                                            const void *value,
                                                            const void **out) {
  return weft__arena_dup(&b->arena, &b->alloc, value,
                         b->world->registry.items[c - 1].size, out);
}

/* Recording does not write the world, not even its error buffer: errors
 * are plain codes here because many threads record at once. */
static inline bool comp_ok(const weft_cmdbuf_t *b, weft_component_t c) {
  return c >= 1 && c <= b->world->registry.count;
}

/* Rows of the first run of a shape; later runs double up to RUN_MAX. */
#define RUN_FIRST 16u
#define RUN_MAX 4096u

/* Checks a spawn list; 0 or a WEFT_E* code (no message: recording threads
 * do not write the world). */
static int check_list(const weft_cmdbuf_t *b, const weft_component_t *comps,
                      uint32_t *count) {
  weft__mask_t seen;
  return weft__list_check(&b->world->registry, comps, WEFT__SPAWN_MAX, &seen,
                          count);
}

/* True if comps is the list of the buffer's open run (already checked). */
static bool same_as_run(const weft_cmdbuf_t *b, const weft_component_t *comps) {
  const weft__spawn_run_t *r = b->run;
  if (!r)
    return false;
  static const weft_component_t none[1] = {0};
  const weft_component_t *l = comps ? comps : none;
  for (uint32_t i = 0; i <= r->n; i++)
    if (l[i] != r->comps[i])
      return false;
  return true;
}

/* Starts a new run for the list, sized after the previous run of the same
 * list so that long streams of one shape make few, large runs. */
static int open_run(weft_cmdbuf_t *b, const weft_component_t *comps, uint32_t n,
                    bool same, const weft_entity_t e) {
  /* Grow only a stream that filled its run under one key: a run closed
   * by a key change says nothing about the next key's spawns, and sizing
   * by it would make the memory a buffer needs depend on which jobs it
   * happened to record. */
  const weft__spawn_run_t *prev = b->run;
  bool stream =
      same && prev && prev->count == prev->cap && b->run_key == b->key;
  uint32_t cap = stream ? prev->cap * 2 : RUN_FIRST;
  if (cap > RUN_MAX)
    cap = RUN_MAX;
  weft__spawn_run_t *r = weft__arena_take(&b->arena, &b->alloc,
                                          sizeof(*r) + n * sizeof(r->cols[0]));
  if (!r)
    return WEFT_ENOMEM;
  /* Every run keeps its own copy of the list, even when the previous run
   * had the same one: the bytes a run takes then do not depend on what the
   * buffer recorded before it. */
  weft_component_t *l =
      weft__arena_take(&b->arena, &b->alloc, (n + 1) * sizeof(*l));
  uint32_t *sz = weft__arena_take(&b->arena, &b->alloc, n * sizeof(*sz) + 1);
  if (!l || !sz)
    return WEFT_ENOMEM;
  for (uint32_t i = 0; i < n; i++) {
    l[i] = same ? prev->comps[i] : comps[i];
    sz[i] = same ? prev->sizes[i] : b->world->registry.items[comps[i] - 1].size;
  }
  l[n] = WEFT_COMPONENT_NONE;
  r->comps = l;
  r->sizes = sz;
  r->n = n;
  r->count = 0;
  r->cap = cap;
  r->seq0 = b->nspawns;
  for (uint32_t i = 0; i < n; i++) {
    r->cols[i] = NULL;
    if (r->sizes[i] && !(r->cols[i] = weft__arena_take(
                             &b->arena, &b->alloc, (size_t)cap * r->sizes[i])))
      return WEFT_ENOMEM;
  }
  int rc = push(b, WEFT__OP_SPAWN, e, 0, r, 0);
  if (rc)
    return rc;
  b->run = r;
  b->run_cmd = b->ncmds - 1;
  b->run_key = b->key;
  b->nruns++;
  return 0;
}

int weft_cmd_spawn(weft_cmdbuf_t *b, const weft_component_t *comps,
                   const void *const *values, weft_entity_t *out) {
  if (!b || !out)
    return WEFT_EINVAL;
  if (b->nspawns >= WEFT_CMD_SPAWNS_MAX)
    return WEFT_ELIMIT;
  weft_entity_t e = b->world->index.tag | ((uint64_t)b->epoch << EPOCH_SHIFT) |
                    ((uint64_t)b->id << ID_SHIFT) | PENDING_BIT | b->nspawns;
  /* The spawn joins the open run when nothing was recorded since, under
   * the same key, with the same list. */
  bool same = same_as_run(b, comps);
  weft__spawn_run_t *r = b->run;
  if (!same || b->run_cmd != b->ncmds - 1 || r->count == r->cap ||
      b->run_key != b->key) {
    uint32_t n = 0;
    int rc = same ? 0 : check_list(b, comps, &n);
    if (rc == 0)
      rc = open_run(b, comps, same ? r->n : n, same, e);
    if (rc)
      return rc;
    r = b->run;
  }
  for (uint32_t i = 0; i < r->n; i++) {
    uint32_t size = r->sizes[i];
    if (!size)
      continue;
    uint8_t *dst = r->cols[i] + (size_t)r->count * size;
    if (values && values[i])
      weft__copy_elem(dst, values[i], size);
    else
      memset(dst, 0, size);
  }
  r->count++;
  b->cmds[b->run_cmd].n = r->count;
  b->nspawns++;
  *out = e;
  return 0;
}

int weft_cmd_despawn(weft_cmdbuf_t *b, weft_entity_t e) {
  if (!b)
    return WEFT_EINVAL;
  b->refs_pending |= weft_entity_is_pending(e);
  return push(b, WEFT__OP_DESPAWN, e, 0, NULL, 0);
}

/* The rare cases of a value op: a full command array, or a value too big
 * to ride in the command. Out of line, so that the common path below
 * saves no registers. */
static __attribute__((noinline)) int record_slow(weft_cmdbuf_t *b, uint32_t op,
                                                 weft_entity_t e,
                                                 weft_component_t c,
                                                 const void *value) {
  b->refs_pending |= weft_entity_is_pending(e);
  uint32_t size = b->world->registry.items[c - 1].size;
  if (value && size && size <= sizeof(void *)) {
    /* Small values ride in the command: no arena copy, no pointer to
     * chase when the command is applied. */
    int rc = push(b, op, e, c, NULL, 0);
    if (rc == 0) {
      weft__cmd_t *cmd = &b->cmds[b->ncmds - 1];
      memcpy(&cmd->data, value, size);
      cmd->inl = WEFT__OPF_INLINE;
    }
    return rc;
  }
  const void *copy;
  int rc = copy_value(b, c, value, &copy);
  return rc ? rc : push(b, op, e, c, copy, 0);
}

/* Records a component op. Every command of a system's inner loop comes
 * through here, so the common case (room in the array, a value of at most
 * 8 bytes or none) writes the command directly. */
static inline __attribute__((always_inline)) int
record_value_op(weft_cmdbuf_t *b, uint32_t op, weft_entity_t e,
                weft_component_t c, const void *value) {
  if (!b)
    return WEFT_EINVAL;
  if (!comp_ok(b, c))
    return WEFT_ENOCOMP;
  uint32_t size = b->world->registry.items[c - 1].size;
  if (WEFT__UNLIKELY(b->ncmds == b->cmds_lim ||
                     (value && size > sizeof(void *))))
    return record_slow(b, op, e, c, value);
  b->refs_pending |= weft_entity_is_pending(e);
  weft__cmd_t *cmd = &b->cmds[b->ncmds++];
  /* Long streams of commands write far ahead of the cache: ask for the
   * lines early, so that the stores do not wait for them one by one. */
  __builtin_prefetch(cmd + 20, 1);
  *cmd = (weft__cmd_t){.e = e, .comp = (uint16_t)c, .op = (uint8_t)op};
  if (value && size) {
    weft__copy_elem((uint8_t *)&cmd->data, value, size);
    cmd->inl = WEFT__OPF_INLINE;
  }
  return 0;
}

int weft_cmd_add(weft_cmdbuf_t *b, weft_entity_t e, weft_component_t c,
                 const void *value) {
  return record_value_op(b, WEFT__OP_ADD, e, c, value);
}

int weft_cmd_set(weft_cmdbuf_t *b, weft_entity_t e, weft_component_t c,
                 const void *value) {
  if (!value)
    return WEFT_EINVAL;
  return record_value_op(b, WEFT__OP_SET, e, c, value);
}

int weft_cmd_remove(weft_cmdbuf_t *b, weft_entity_t e, weft_component_t c) {
  return record_value_op(b, WEFT__OP_REMOVE, e, c, NULL);
}

int weft_cmd_enable(weft_cmdbuf_t *b, weft_entity_t e, weft_component_t c) {
  return record_value_op(b, WEFT__OP_ENABLE, e, c, NULL);
}

int weft_cmd_disable(weft_cmdbuf_t *b, weft_entity_t e, weft_component_t c) {
  return record_value_op(b, WEFT__OP_DISABLE, e, c, NULL);
}

/* Captures the query's current members into the arena. The walk reads
 * the query's cache directly and opens no iteration scope, so it is safe
 * from any recording thread. */
static int snapshot(weft_cmdbuf_t *b, const weft_query_t *q,
                    const weft_entity_t **out, uint32_t *n) {
  uint32_t total = weft_query_count(q);
  weft_entity_t *dst = NULL;
  if (total) {
    dst = weft__arena_alloc(&b->arena, &b->alloc, total * sizeof(*dst));
    if (!dst)
      return WEFT_ENOMEM;
  }
  uint32_t k = 0;
  for (uint32_t m = 0; m < q->nmatches; m++) {
    const weft__archetype_t *a = q->matches[m].arch;
    for (uint32_t i = 0; i < a->nchunks; i++) {
      const weft__chunk_t *c = a->chunks[i];
      memcpy(dst + k, c->entities, c->count * sizeof(*dst));
      k += c->count;
    }
  }
  *out = dst;
  *n = k;
  return 0;
}

static int record_query(weft_cmdbuf_t *b, uint32_t op, const weft_query_t *q,
                        weft_component_t c, const void *value) {
  if (!b || !q || q->world != b->world)
    return WEFT_EINVAL;
  if (op != WEFT__OP_DESPAWN_Q && !comp_ok(b, c))
    return WEFT_ENOCOMP;
  const void *copy = NULL;
  int rc = op == WEFT__OP_SET_Q ? copy_value(b, c, value, &copy) : 0;
  const weft_entity_t *members;
  uint32_t n;
  if (rc == 0)
    rc = snapshot(b, q, &members, &n);
  if (rc == 0)
    rc = push(b, op, WEFT_ENTITY_NULL, c, op == WEFT__OP_SET_Q ? copy : members,
              n);
  if (rc == 0 && op == WEFT__OP_SET_Q) {
    /* A set carries both the value and the members: the members go in a
     * second slot right behind it. */
    rc = push(b, 0, WEFT_ENTITY_NULL, c, members, n);
    if (rc)
      b->ncmds--; /* both slots or neither: the merge reads them as one */
  }
  return rc;
}

int weft_cmd_set_query(weft_cmdbuf_t *b, const weft_query_t *q,
                       weft_component_t c, const void *value) {
  if (!value)
    return WEFT_EINVAL;
  return record_query(b, WEFT__OP_SET_Q, q, c, value);
}

int weft_cmd_remove_query(weft_cmdbuf_t *b, const weft_query_t *q,
                          weft_component_t c) {
  return record_query(b, WEFT__OP_REMOVE_Q, q, c, NULL);
}

int weft_cmd_despawn_query(weft_cmdbuf_t *b, const weft_query_t *q) {
  return record_query(b, WEFT__OP_DESPAWN_Q, q, 0, NULL);
}

/* ---- merge ------------------------------------------------------------------
 */

/*
 * Puts a buffer whose segments were not opened in key order into merge
 * order: a stable bottom-up merge sort of its segments by key (a handful
 * per job, not one entry per command), then order[] lists the command
 * indices segment by segment, and each key record's n becomes the merge
 * position of the next key record.
 */
static int sort_buffer(weft_cmdbuf_t *b) {
  if (order_room(b, b->ncmds))
    return WEFT_ENOMEM;
  uint32_t nseg = b->nsegs;
  weft__cmd_t *c = b->cmds;
  uint32_t *src = b->order, *dst = b->scratch;
  for (uint32_t s = 0, p = 0; s < nseg; s++, p = c[p].n)
    src[s] = p; /* the key records, in recording order */
  for (uint32_t width = 1; width < nseg; width *= 2) {
    for (uint32_t lo = 0; lo < nseg; lo += 2 * width) {
      uint32_t mid = lo + width < nseg ? lo + width : nseg;
      uint32_t hi = lo + 2 * width < nseg ? lo + 2 * width : nseg;
      uint32_t i = lo, j = mid, k = lo;
      while (i < mid && j < hi)
        dst[k++] = c[src[j]].e < c[src[i]].e ? src[j++] : src[i++];
      while (i < mid)
        dst[k++] = src[i++];
      while (j < hi)
        dst[k++] = src[j++];
    }
    uint32_t *tmp = src;
    src = dst;
    dst = tmp;
  }
  /* The sorted segments go to scratch; order[] receives the positions. */
  if (src != b->scratch)
    memcpy(b->scratch, src, nseg * sizeof(uint32_t));
  uint32_t p = 0;
  for (uint32_t s = 0; s < nseg; s++) {
    uint32_t c0 = b->scratch[s], len = c[c0].n - c0;
    for (uint32_t j = 0; j < len; j++)
      b->order[p + j] = c0 + j;
    p += len;
    c[c0].n = p;
  }
  return 0;
}

/*
 * A k-way merge over the buffers' commands in (key, position) order, handed
 * out as spans: positions [p0, p1) of one buffer that come next in merge
 * order, one after the other. Buffers usually hold disjoint key ranges (one
 * job's chunks each), so a span is usually a whole buffer and the commands
 * in it are walked as a plain array. A span is whole segments: it starts at
 * a key record, and a buffer's position always sits on one.
 */
typedef struct merge_t {
  weft_cmdbuf_t *const *bufs;
  uint32_t n;
  uint32_t *pos; /* per buffer */
} merge_t;

/* The command at merge position p of a buffer. */
static inline const weft__cmd_t *cmd_at(const weft_cmdbuf_t *b, uint32_t p) {
  return &b->cmds[b->sorted ? p : b->order[p]];
}

/* True if buffer a's head (key ka) comes before buffer b's (key kb). */
static inline bool before(uint64_t ka, uint32_t a, uint64_t kb, uint32_t b) {
  return ka < kb || (ka == kb && a < b);
}

/* The next span in merge order; false when every buffer is spent. Ties on
 * the key go to the buffer listed first. */
static bool merge_span(merge_t *m, const weft_cmdbuf_t **out, uint32_t *p0,
                       uint32_t *p1) {
  uint32_t best = UINT32_MAX, second = UINT32_MAX;
  uint64_t best_key = 0, second_key = 0;
  for (uint32_t i = 0; i < m->n; i++) {
    const weft_cmdbuf_t *b = m->bufs[i];
    if (m->pos[i] >= b->ncmds)
      continue;
    uint64_t k = cmd_at(b, m->pos[i])->e; /* a key record */
    if (best == UINT32_MAX || k < best_key) {
      second = best;
      second_key = best_key;
      best = i;
      best_key = k;
    } else if (second == UINT32_MAX || k < second_key) {
      second = i;
      second_key = k;
    }
  }
  if (best == UINT32_MAX)
    return false;
  const weft_cmdbuf_t *b = m->bufs[best];
  uint32_t p = m->pos[best], end = b->ncmds;
  if (second != UINT32_MAX) {
    /* The buffer keeps winning while its head stays before the
     * runner-up's (the others' heads do not move meanwhile): segment by
     * segment, as keys do not decrease in merge order. */
    uint32_t q = cmd_at(b, p)->n;
    while (q < end && before(cmd_at(b, q)->e, best, second_key, second))
      q = cmd_at(b, q)->n;
    end = q;
  }
  m->pos[best] = end;
  *out = b;
  *p0 = p;
  *p1 = end;
  return true;
}

/* Starts (or restarts) a merge over the buffers. */
static void merge_start(merge_t *m) {
  memset(m->pos, 0, m->n * sizeof(*m->pos));
}

/* The buffer that issued pending handle e (NULL if none of this world),
 * with the handle's epoch and sequence. */
static weft_cmdbuf_t *pending_buffer(const weft_world_t *w, weft_entity_t e,
                                     uint32_t *epoch, uint32_t *seq) {
  uint32_t id = (uint32_t)(e >> ID_SHIFT) & FIELD_MASK;
  *epoch = (uint32_t)(e >> EPOCH_SHIFT) & FIELD_MASK;
  *seq = (uint32_t)e & 0x7fffffffu;
  if ((e & UINT64_C(0xff00000000000000)) != w->index.tag || id >= w->txn.nbufs)
    return NULL;
  return w->txn.bufs[id];
}

/* The real handle a command names: itself, or what its pending spawn
 * became in this apply. 0 when stale. */
static weft_entity_t target_of(weft_world_t *w, weft_entity_t e) {
  if (!weft_entity_is_pending(e))
    return e;
  uint32_t epoch, seq;
  const weft_cmdbuf_t *b = pending_buffer(w, e, &epoch, &seq);
  if (!b || !b->applying || b->epoch != epoch || seq >= b->nspawns)
    return 0;
  return b->spawned[seq];
}

/* Pass 0 over one span: its pending spawns get their slots and stages. */
static int place_span(weft_world_t *w, const weft_cmdbuf_t *sb, uint32_t p0,
                      uint32_t p1, int err) {
  for (uint32_t p = p0; p < p1; p++) {
    const weft__cmd_t *c = cmd_at(sb, p);
    if (c->op != WEFT__OP_SPAWN)
      continue;
    uint32_t epoch, seq;
    weft_cmdbuf_t *b = pending_buffer(w, c->e, &epoch, &seq);
    const weft__spawn_run_t *r = c->data;
    for (uint32_t j = 0; j < r->count; j++) {
      weft_entity_t e = 0;
      int rc = err ? err : weft__reserve_slot(w, &e);
      if (rc == 0)
        rc = weft__stage_spawn(w, e);
      if (rc) {
        if (e)
          weft__unreserve_slot(w,
                               (uint32_t)e); /* could not stage: give it back */
        e = 0;
        w->txn.dropped++;
        err = rc;
      }
      b->spawned[r->seq0 + j] = e;
    }
  }
  return err;
}

/* Pass 0: every pending spawn gets its slot and a stage, in merge order. */
static int place_pending(weft_world_t *w, merge_t *m) {
  int err = 0;
  const weft_cmdbuf_t *b;
  uint32_t p0, p1;
  while (merge_span(m, &b, &p0, &p1))
    err = place_span(w, b, p0, p1, err);
  return err;
}

/* A spawn run in pass 1: on the fast path it is queued for the drain; on
 * the staged path (pass 0 made the stages) its values become ADD ops. */
static int spawn_ops(weft_world_t *w, const weft__cmd_t *c) {
  uint32_t epoch, seq;
  weft_cmdbuf_t *b = pending_buffer(w, c->e, &epoch, &seq);
  const weft__spawn_run_t *r = c->data;
  if (w->txn.fast_spawns)
    return weft__txn_fast_spawn(w, r, &b->spawned[r->seq0]);
  int err = 0;
  for (uint32_t j = 0; j < r->count; j++) {
    weft_entity_t e = b->spawned[r->seq0 + j];
    for (uint32_t i = 0; e && i < r->n; i++) {
      int rc = weft__stage_op(w, e, WEFT__OP_ADD, r->comps[i],
                              r->sizes[i] ? r->cols[i] + (size_t)j * r->sizes[i]
                                          : NULL);
      if (rc && !err)
        err = rc;
    }
  }
  return err;
}

static int dispatch(weft_world_t *w, const weft__cmd_t *c,
                    const weft__cmd_t *next) {
  switch (c->op) {
  case WEFT__OP_DESPAWN_Q: {
    int err = 0;
    for (uint32_t i = 0; i < c->n; i++) {
      int rc = weft__stage_despawn(w, ((const weft_entity_t *)c->data)[i]);
      if (rc && !err)
        err = rc;
    }
    return err;
  }
  case WEFT__OP_SET_Q:
    return weft__stage_batch(w, WEFT__OP_SET, c->comp, c->data, next->data,
                             next->n);
  case WEFT__OP_REMOVE_Q:
    return weft__stage_batch(w, WEFT__OP_REMOVE, c->comp, NULL, c->data, c->n);
  case WEFT__OP_SPAWN:
    return spawn_ops(w, c);
  case 0:
    return 0; /* the members slot of a query set */
  case WEFT__OP_KEY:
    return 0;
  default:
    break;
  }
  weft_entity_t e = target_of(w, c->e);
  if (!e) {
    w->txn.stale++;
    weft__count_stale(w);
    return 0;
  }
  if (c->op == WEFT__OP_DESPAWN)
    return weft__stage_despawn(w, e);
  return weft__stage_op(w, e, c->op, c->comp, cmd_value(c));
}

/*
 * Stages commands [p, p1) of a span as long as each is a component op on a
 * live entity that has no open stage yet: a new stage with that one op.
 * That is the usual apply (one command per entity), so the loop keeps the
 * transaction's state and a copy of the index header in locals, which the
 * stores to the stages cannot alias. `order` is NULL for a sorted buffer;
 * inlined once for each case. Returns the position of the first command it
 * left for dispatch().
 */
static inline __attribute__((always_inline)) uint32_t
stage_fresh_in(weft_world_t *w, const weft__cmd_t *cmds, const uint32_t *order,
               uint32_t p, uint32_t p1) {
  weft__txn_t *t = &w->txn;
  const weft__index_t ix = w->index;
  const weft__chunk_slot_t *table = w->chunks.table;
  const uint32_t n0 = t->nstages;
  /* Stages of a wave being drained never exist here (apply runs outside
   * drains): every stage found is open. The slot map covers every live
   * slot, so the lookup's bound check covers the map's too. */
  if (t->open_from != 0 || weft__stage_of_reserve(w, ix.hwm))
    return p;
  if (p1 - p > t->stages_cap - n0)
    p1 = p + (t->stages_cap - n0); /* dispatch() grows the stages */
  weft__stage_t *stages = t->stages;
  uint32_t *stage_of = t->stage_of;
  uint32_t n = n0;
  for (; p < p1; p++) {
    const weft__cmd_t *c = order ? &cmds[order[p]] : &cmds[p];
    uint32_t op = c->op;
    weft_entity_t e = c->e;
    uint32_t slot = (uint32_t)e;
    /* Pending handles fail the lookup (their index has the top bit set)
     * and go through dispatch(), as do stale and reserved ones. */
    if (op < WEFT__OP_ADD || op > WEFT__OP_DISABLE ||
        !weft__index_lookup(&ix, table, e))
      break;
    uint32_t i = stage_of[slot];
    if (i < n && (uint32_t)stages[i].e == slot)
      break; /* the entity has a stage: add to it */
    /* The stage array is written ahead of any read: ask for its lines
     * early, or the store waits for each one. */
    __builtin_prefetch(&stages[n + 16], 1);
    stage_of[slot] = n;
    /* An inline value moves into the stage with the command's bytes.
     * Field by field: fewer instructions than a whole-struct store. */
    weft__stage_t *s = &stages[n++];
    s->e = e;
    s->op0.value = c->data;
    s->op0.next = WEFT__TXN_NIL;
    s->op0.comp = c->comp;
    s->op0.op = (uint8_t)op;
    s->op0.flags =
        (uint8_t)(c->inl | (WEFT__ST_MUTATE << WEFT__OPF_KIND_SHIFT));
  }
  t->nstages = n;
  t->kinds[WEFT__ST_MUTATE] += n - n0;
  t->commands += n - n0;
  return p;
}

static __attribute__((noinline)) uint32_t
stage_fresh_sorted(weft_world_t *w, const weft_cmdbuf_t *b, uint32_t p,
                   uint32_t p1) {
  return stage_fresh_in(w, b->cmds, NULL, p, p1);
}

static __attribute__((noinline)) uint32_t
stage_fresh_ordered(weft_world_t *w, const weft_cmdbuf_t *b, uint32_t p,
                    uint32_t p1) {
  return stage_fresh_in(w, b->cmds, b->order, p, p1);
}

static uint32_t stage_fresh(weft_world_t *w, const weft_cmdbuf_t *b, uint32_t p,
                            uint32_t p1) {
  return b->sorted ? stage_fresh_sorted(w, b, p, p1)
                   : stage_fresh_ordered(w, b, p, p1);
}

/* Pass 1 over one span. */
static int stage_span(weft_world_t *w, const weft_cmdbuf_t *b, uint32_t p,
                      uint32_t p1) {
  int err = 0;
  while ((p = stage_fresh(w, b, p, p1)) < p1) {
    const weft__cmd_t *c = cmd_at(b, p++);
    /* A query set's members sit in the slot right after it, in the same
     * buffer and with the same key, so they are in the same span. */
    const weft__cmd_t *next = NULL;
    if (c->op == WEFT__OP_SET_Q) {
      if (p == p1)
        break; /* cannot happen: recording pushes both or neither */
      next = cmd_at(b, p++);
    }
    int rc = dispatch(w, c, next);
    if (rc && !err)
      err = rc;
  }
  return err;
}

/* Pass 1: every other command, in merge order. */
static int stage_all(weft_world_t *w, merge_t *m) {
  int err = 0;
  const weft_cmdbuf_t *b;
  uint32_t p0, p1;
  while (merge_span(m, &b, &p0, &p1)) {
    int rc = stage_span(w, b, p0, p1);
    if (rc && !err)
      err = rc;
  }
  return err;
}

static int prepare(weft_world_t *w, weft_cmdbuf_t *const *bufs, uint32_t n) {
  for (uint32_t i = 0; i < n; i++) {
    weft_cmdbuf_t *b = bufs[i];
    WEFT_CHECK(w, b && b->world == w, WEFT_EINVAL,
               "buffer %u is NULL or belongs to another world", i);
    WEFT_CHECK(w, !b->applying, WEFT_EINVAL, "buffer %u is listed twice", i);
    b->applying = true;
  }
  for (uint32_t i = 0; i < n; i++) {
    weft_cmdbuf_t *b = bufs[i];
    if (b->ncmds)
      b->cmds[b->seg].n = b->ncmds; /* the last segment ends the buffer */
    int rc = b->sorted ? 0 : sort_buffer(b);
    if (rc == 0 && b->nspawns > b->spawned_cap)
      rc = weft__grow(&b->alloc, &b->spawned, &b->spawned_cap, b->nspawns,
                      sizeof(*b->spawned), 256);
    WEFT_CHECK(w, rc == 0, WEFT_ENOMEM, "out of memory merging buffers");
  }
  return 0;
}

static void finish(weft_cmdbuf_t *const *bufs, uint32_t n) {
  for (uint32_t i = 0; i < n; i++) {
    weft_cmdbuf_t *b = bufs[i];
    if (!b || !b->applying)
      continue;
    b->spawned_n = b->nspawns;
    b->spawned_epoch = b->epoch;
    b->has_results = true;
    b->applying = false;
    restart(b);
  }
}

int weft_world_apply(weft_world_t *w, weft_cmdbuf_t *const *bufs, uint32_t n) {
  WEFT_CHECK(w, w && (bufs || n == 0), WEFT_EINVAL, "NULL argument");
  WEFT_CHECK(w, !weft__txn_in_scope(&w->txn) && !w->txn.draining, WEFT_EBUSY,
             "cannot apply buffers inside a deferred or iteration scope");
  WEFT_CHECK(w, n <= WEFT_CMDBUF_MAX, WEFT_EINVAL, "too many buffers");
  uint32_t pos[64];
  uint32_t *cursor = pos;
  if (n > 64) { /* kept by the world: a big pool applies every frame */
    int grc = weft__grow(&w->alloc, &w->txn.merge_pos, &w->txn.merge_pos_cap, n,
                         sizeof(uint32_t), 128);
    WEFT_CHECK(w, grc == 0, WEFT_ENOMEM, "out of memory merging");
    cursor = w->txn.merge_pos;
  }
  int rc = prepare(w, bufs, n);
  if (rc) {
    for (uint32_t i = 0; i < n; i++)
      if (bufs[i] && bufs[i]->world == w)
        bufs[i]->applying = false; /* nothing applied, nothing dropped */
  } else {
    merge_t m = {bufs, n, cursor};
    uint64_t spawns = 0;
    for (uint32_t i = 0; i < n; i++)
      spawns += bufs[i]->nspawns;
    /* Spawns nothing else names, in a world without observers, are
     * placed in bulk by the drain; otherwise each gets a stage now. */
    bool refs = false;
    for (uint32_t i = 0; i < n; i++)
      refs |= bufs[i]->refs_pending;
    w->txn.fast_spawns = spawns && !refs && !w->obs_events;
    merge_start(&m);
    int err = spawns && !w->txn.fast_spawns ? place_pending(w, &m) : 0;
    merge_start(&m);
    int err2 = stage_all(w, &m);
    int err3 = weft__txn_drain(w);
    rc = err ? err : err2 ? err2 : err3;
    if (err && err != err3)
      weft__fail(w, err, WEFT__FILE, WEFT__LINE,
                 "%u spawns did not fit and were dropped",
                 (unsigned)w->txn.dropped);
  }
  finish(bufs, n);
  return rc;
}

int weft_cmd_resolve(const weft_world_t *w, weft_entity_t e,
                     weft_entity_t *out) {
  if (!w || !out)
    return WEFT_EINVAL;
  *out = WEFT_ENTITY_NULL;
  if (!weft_entity_is_pending(e)) {
    *out = e;
    return 0;
  }
  uint32_t epoch, seq;
  const weft_cmdbuf_t *b = pending_buffer(w, e, &epoch, &seq);
  if (!b || !b->has_results || b->spawned_epoch != epoch ||
      seq >= b->spawned_n || !weft__lookup(w, b->spawned[seq]))
    return WEFT_ESTALE;
  *out = b->spawned[seq];
  return 0;
}
