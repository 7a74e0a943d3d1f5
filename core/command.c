/* SPDX-License-Identifier: MIT */
/*
 * Command buffers: lock-free recording on any thread. The merge that
 * turns a set of buffers into one transaction is in merge.c.
 *
 * A buffer is private to the thread recording into it: recording appends
 * to the buffer's own arrays and arena and only reads the world, so
 * buffers never synchronise with each other. Memory is kept across
 * applies, so a buffer that records the same amount every frame stops
 * allocating after the first one.
 *
 * Keys are stored once per segment of commands recorded under one key,
 * not in each command (see cmdbuf.h); the buffer notes whether its
 * segments were opened in non-decreasing key order, which lets the merge
 * use it as it is.
 */
#include <string.h>

#include "core/relation.h"
#include "core/check.h"
#include "core/cmdbuf.h"
#include "core/query_internal.h"
#include "core/stage.h"
#include "core/world.h"

/* ---- lifetime ------------------------------------------------------------ */

/* The memory a buffer records into, which outlives the buffer in its husk
 * (see weft__cmdbuf_free()). */
typedef struct weft__cmdbuf_mem_t {
  weft__cmd_t *cmds;
  uint32_t cmds_cap;
  uint32_t *order;
  uint32_t *scratch;
  uint32_t order_cap;
  weft_entity_t *spawned;
  uint32_t spawned_cap;
  weft__arena_t arena;
} weft__cmdbuf_mem_t;

static weft__cmdbuf_mem_t take_memory(const weft_cmdbuf_t *b) {
  return (weft__cmdbuf_mem_t){b->cmds,        b->cmds_cap,  b->order,
                              b->scratch,     b->order_cap, b->spawned,
                              b->spawned_cap, b->arena};
}

/* Puts memory into a buffer that holds none (just zeroed); its arena
 * starts empty. */
static void give_memory(weft_cmdbuf_t *b, const weft__cmdbuf_mem_t *m) {
  b->cmds = m->cmds;
  b->cmds_cap = m->cmds_cap;
  b->order = m->order;
  b->scratch = m->scratch;
  b->order_cap = m->order_cap;
  b->spawned = m->spawned;
  b->spawned_cap = m->spawned_cap;
  b->arena = m->arena;
  weft__arena_reset(&b->arena);
}

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
  weft_cmdbuf_t *b = t->dead_bufs;
  if (b) { /* a destroyed buffer's memory, its arrays included */
    t->dead_bufs = b->next_dead;
    weft__cmdbuf_mem_t mem = take_memory(b);
    memset(b, 0, sizeof(*b));
    give_memory(b, &mem);
  } else {
    b = weft__calloc(&w->alloc, sizeof(*b), 64);
  }
  WEFT_CHECK(w, b != NULL, WEFT_ENOMEM, "out of memory adding a buffer");
  b->world = w;
  b->id = id;
  /* The buffer's large arrays live in the world's heap, so that a buffer
   * destroyed and made anew regrows into pages that are still there. */
  b->alloc.heap = w->alloc.heap;
  b->alloc.heap_min = w->alloc.heap_min;
  /* A reused id continues the epochs of the buffer that had it, so that
   * the old buffer's pending handles stay stale. */
  b->epoch = t->buf_epochs[id];
  b->sorted = true;
  t->bufs[id] = b;
  t->live_bufs++;
  *out = b;
  return 0;
}

void weft__cmdbuf_own(weft_cmdbuf_t *b) {
  b->owned = true;
}

/* Frees a buffer's arrays and value arena. */
static void free_memory(weft__cmdbuf_mem_t *m) {
  weft__free(m->cmds, 0, 16);
  weft__free(m->order, 0, 16);
  weft__free(m->scratch, 0, 16);
  weft__free(m->spawned, 0, 16);
  weft__arena_fini(&m->arena);
  memset(m, 0, sizeof(*m));
}

void weft__cmdbuf_free(weft_cmdbuf_t *b) {
  weft_world_t *w = b->world;
  weft__txn_t *t = &w->txn;
  t->bufs[b->id] = NULL;
  t->buf_epochs[b->id] = (uint16_t)((b->epoch + 1) & WEFT__CMD_FIELD_MASK);
  t->live_bufs--;
  /* Its allocations stay in the world's count, which only grows. */
  w->alloc.allocs += b->alloc.allocs;
  w->alloc.bytes += b->alloc.bytes;
  /* The husk stays: a later call through a stale pointer finds it dead.
   * It keeps the arrays too, at their high-water size, for the next
   * weft_cmdbuf_create() to take: a buffer made for a frame and
   * destroyed after it then records into memory that is already there,
   * with no allocation and no page faulted in again (issue 29). They go
   * when the world trims or is destroyed. */
  weft__cmdbuf_mem_t mem = take_memory(b);
  memset(b, 0, sizeof(*b));
  give_memory(b, &mem);
  b->world = w;
  b->dead = true;
  b->next_dead = t->dead_bufs;
  t->dead_bufs = b;
}

void weft__cmdbufs_trim(weft_world_t *w) {
  for (weft_cmdbuf_t *b = w->txn.dead_bufs; b; b = b->next_dead) {
    weft__cmdbuf_mem_t mem = take_memory(b);
    free_memory(&mem);
    give_memory(b, &mem);
  }
}

int weft_cmdbuf_destroy(weft_cmdbuf_t *b) {
  if (!b)
    return 0;
  weft_world_t *w = b->world;
  WEFT_CHECK(w, !b->dead, WEFT_EINVAL,
             "command buffer %p was destroyed already", (void *)b);
  WEFT_CHECK(w, !b->owned, WEFT_EINVAL,
             "command buffer %u belongs to the scheduler (a system's "
             "ctx->cmd); it goes with the world",
             b->id);
  WEFT_CHECK(w, !b->applying, WEFT_EBUSY, "command buffer %u is being applied",
             b->id);
  weft__cmdbuf_free(b);
  return 0;
}

void weft__cmdbufs_fini(weft_world_t *w) {
  weft__txn_t *t = &w->txn;
  for (uint32_t i = 1; i < t->nbufs; i++)
    if (t->bufs[i])
      weft__cmdbuf_free(t->bufs[i]);
  while (t->dead_bufs) {
    weft_cmdbuf_t *b = t->dead_bufs;
    t->dead_bufs = b->next_dead;
    weft__cmdbuf_mem_t mem = take_memory(b);
    free_memory(&mem);
    weft__free(b, sizeof(*b), 64);
  }
}

/* Empties a buffer for the next transaction, keeping its memory. A new
 * epoch makes the pending handles it issued so far stale. */
void weft__cmdbuf_restart(weft_cmdbuf_t *b) {
  b->ncmds = 0;
  b->cmds_lim = 0; /* the first record opens a segment */
  b->nsegs = 0;
  b->nspawns = 0;
  b->nruns = 0;
  b->sorted = true;
  b->refs_pending = false;
  b->run = NULL;
  b->key = b->seg_key = 0;
  b->epoch = (b->epoch + 1) & WEFT__CMD_FIELD_MASK;
  weft__arena_reset(&b->arena);
}

void weft__cmdbuf_usage(const weft_cmdbuf_t *b, weft__cmdbuf_usage_t *u) {
  u->cmds = b->ncmds;
  u->spawns = b->nspawns;
  u->bytes = b->arena.taken;
}

/* Grows the order and scratch arrays to n entries. 0 or WEFT_ENOMEM. */
int weft__cmdbuf_order_room(weft_cmdbuf_t *b, uint32_t n) {
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
    rc = weft__cmdbuf_order_room(b, u->cmds);
  if (!rc && u->spawns > b->spawned_cap)
    rc = weft__grow(&b->alloc, &b->spawned, &b->spawned_cap, u->spawns,
                    sizeof(*b->spawned), 256);
  if (!rc && u->bytes)
    rc = weft__arena_reserve(&b->arena, &b->alloc, u->bytes);
  return rc;
}

void weft_cmdbuf_clear(weft_cmdbuf_t *b) {
  if (b && !b->dead)
    weft__cmdbuf_restart(b);
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
  /* The next record opens a segment: it can fail with WEFT_ENOMEM, this
   * call cannot. */
  weft__cmdkey_set(&b->keys, key);
}

/*
 * Makes room for one more record, first opening a segment with a key
 * record when the key changed or the buffer is empty. 0 or WEFT_ENOMEM
 * (nothing recorded).
 */
static int make_room(weft_cmdbuf_t *b) {
  if (WEFT__UNLIKELY(b->dead))
    return WEFT_EINVAL; /* a destroyed buffer records nothing */
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

int weft__cmd_push(weft_cmdbuf_t *b, uint32_t op, weft_entity_t e,
                   weft_component_t c, const void *data, uint32_t n) {
  return push(b, op, e, c, data, n);
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
  if (b->dead)
    return WEFT_EINVAL; /* its arena is gone: take nothing from it */
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
  weft_entity_t e = b->world->index.tag |
                    ((uint64_t)b->epoch << WEFT__CMD_EPOCH_SHIFT) |
                    ((uint64_t)b->id << WEFT__CMD_ID_SHIFT) |
                    WEFT__CMD_PENDING_BIT | b->nspawns;
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
  if (b->dead)
    return WEFT_EINVAL; /* its arena is gone: copy nothing into it */
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
  if (!b || b->dead || !q || q->world != b->world)
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
