/* SPDX-License-Identifier: MIT */
/*
 * One round of migration and ghost exchange (weft_mpi_exchange()).
 *
 * 1. Pack. Every owned entity is looked at once: when its position lies
 *    in another rank's region it is encoded for that rank (a migrant) and
 *    listed to leave; when it lies within the halo of other regions, its
 *    ghost record (key and ghost components) goes to each of those ranks,
 *    its own new owner excepted. The sender decides for the entity's new
 *    position, so a migrant's ghosts need no second round, and an entity
 *    that leaves but stays within this region's halo becomes a ghost here
 *    from the same record.
 * 2. Sizes. One MPI_Alltoall tells every rank what each other rank sends
 *    (bytes of migrants, bytes of ghosts) and whether it failed to pack;
 *    then nobody waits for a message that will not come.
 * 3. Payloads, non-blocking: MPI_Irecv and MPI_Isend for every non-empty
 *    section. While they fly the rank does the work that needs nothing
 *    from them: it despawns its emigrants and turns those still in its
 *    halo into local ghosts. It then waits for the migrants only and
 *    spawns them while the ghost messages may still be in flight.
 * 4. Ghosts: each record refreshes the ghost of its key or spawns one;
 *    ghosts that no rank sent this round (their entity moved away or
 *    died) are despawned.
 *
 * Every rank that owns an entity is the only one that sends records of
 * it, so a key arrives at most once per rank and round.
 */
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include <weft.h>

#include "core/alloc.h"
#include "mpi/dist.h"

/* Reads the position columns of a chunk (AoS or SoA). */
typedef struct pos_cols_t {
  const float *x, *y;
  uint32_t stride; /* floats between two rows */
} pos_cols_t;

static pos_cols_t pos_cols(const weft_mpi_t *m, const weft_iter_t *it) {
  if (m->position_soa)
    return (pos_cols_t){weft_iter_field(it, 1, 0), weft_iter_field(it, 1, 1),
                        1};
  const float *p = it->columns[1];
  return (pos_cols_t){p, p + 1, 2};
}

/* A ghost record: the key, a mask of the ghost components the entity has
 * (bit i: m->gcomp[i]), 4 bytes of padding, then every ghost component's
 * bytes in order, zeros for one it lacks (records have one size, so a
 * message is an array). m->grecord bytes. */
enum { GHOST_HEAD = 16 };

/* Appends the ghost record of e (key k, at x, y) to b. Ghost component 0
 * is the Position every owned entity has: the pack has read it already,
 * from its columns. */
static int put_ghost(weft_mpi_t *m, weft_entity_t e, uint64_t k, float x,
                     float y, weft__mbuf_t *b) {
  int rc = weft__mbuf_reserve(b, m->grecord);
  if (rc)
    return rc;
  uint8_t *rec = b->data + b->len, *p = rec + GHOST_HEAD;
  uint32_t mask = 1, pad = 0;
  memcpy(p, &x, 4);
  memcpy(p + 4, &y, 4);
  p += m->gsize[0];
  for (uint32_t i = 1; i < m->gcount; i++) {
    /* weft_get() resolves presence and row in one inline lookup; it
     * misses only for an absent component, a tag or an SoA one, which
     * take the general path. */
    const void *v = m->gsize[i] ? weft_get(m->world, e, m->gcomp[i]) : NULL;
    if (v) {
      mask |= 1u << i;
      memcpy(p, v, m->gsize[i]);
    } else if (weft_has(m->world, e, m->gcomp[i])) {
      mask |= 1u << i;
      rc = m->gsize[i] ? weft_read(m->world, e, m->gcomp[i], p) : 0;
      if (rc)
        return rc;
    } else {
      memset(p, 0, m->gsize[i]);
    }
    p += m->gsize[i];
  }
  memcpy(rec, &k, 8);
  memcpy(rec + 8, &mask, 4);
  memcpy(rec + 12, &pad, 4);
  b->len += m->grecord;
  return 0;
}

static int note_leaving(weft_mpi_t *m, weft_entity_t e) {
  if (m->leaving_n == m->leaving_cap) {
    /* Four times over: emigrant counts wander (see weft__mbuf_reserve). */
    uint32_t cap = m->leaving_cap ? m->leaving_cap * 4 : 256;
    weft_entity_t *p = weft__realloc(
        NULL, m->leaving, sizeof *p * m->leaving_cap, sizeof *p * cap);
    if (!p)
      return WEFT_ENOMEM;
    m->leaving = p;
    m->leaving_cap = cap;
  }
  m->leaving[m->leaving_n++] = e;
  return 0;
}

/* One owned entity: where it goes, and who sees it as a ghost. */
static int pack_one(weft_mpi_t *m, weft_entity_t e, uint64_t k, float x,
                    float y) {
  uint32_t owner = weft__domain_owner(&m->dom, x, y), halo[8];
  uint32_t nh = weft__domain_halo_ranks(&m->dom, x, y, owner, halo);
  int rc = 0;
  if (owner != m->rank) {
    rc = weft__record_put(m, e, k, &m->out_mig[owner]);
    if (!rc)
      rc = note_leaving(m, e);
  }
  for (uint32_t i = 0; i < nh && !rc; i++)
    rc = put_ghost(m, e, k, x, y, &m->out_ghost[halo[i]]);
  return rc;
}

/* This rank's interior: its region shrunk by the halo, unbounded on the
 * box's outer sides. A point inside it is this rank's and in no other
 * region's halo (the grown regions are half-open like the regions), so
 * the pack skips it with four compares: in a steady run that is nearly
 * every entity. */
typedef struct interior_t {
  float x0, x1, y0, y1;
} interior_t;

static interior_t interior(const weft_mpi_t *m) {
  const weft__domain_t *d = &m->dom;
  uint32_t ix = m->rank % d->px, iy = m->rank / d->px;
  return (interior_t){ix == 0 ? -INFINITY : d->cut_x[ix] + d->halo,
                      ix + 1 == d->px ? INFINITY : d->cut_x[ix + 1] - d->halo,
                      iy == 0 ? -INFINITY : d->cut_y[iy] + d->halo,
                      iy + 1 == d->py ? INFINITY : d->cut_y[iy + 1] - d->halo};
}

/* Marks in out[i] whether point i of n lies outside the interior (NaN
 * does). Branch-free, with the stride a constant in each loop, so that
 * the compiler vectorizes it: entities lie in no particular order, so
 * nearly every block of rows holds one in some halo, and the pack cannot
 * skip blocks; it can make the pass over the rest a test of one byte. */
static uint32_t mark_outside(const float *restrict x, const float *restrict y,
                             uint32_t stride, uint32_t n, interior_t in,
                             uint8_t *restrict out) {
  uint32_t any = 0;
  if (stride == 1) {
    for (uint32_t i = 0; i < n; i++) {
      out[i] = !((x[i] >= in.x0) & (x[i] < in.x1) & (y[i] >= in.y0) &
                 (y[i] < in.y1));
      any |= out[i];
    }
  } else {
    for (uint32_t i = 0; i < n; i++) {
      float a = x[2 * i], b = y[2 * i];
      out[i] = !((a >= in.x0) & (a < in.x1) & (b >= in.y0) & (b < in.y1));
      any |= out[i];
    }
  }
  return any;
}

/* Packs the entities of one chunk that leave or are seen elsewhere. */
static int pack_chunk(weft_mpi_t *m, const weft_iter_t *it, interior_t in) {
  enum { BLOCK = 256 };
  uint8_t out[BLOCK];
  const uint64_t *keys = it->columns[0];
  pos_cols_t p = pos_cols(m, it);
  for (uint32_t b = 0; b < it->count; b += BLOCK) {
    uint32_t n = it->count - b < BLOCK ? it->count - b : BLOCK;
    if (!mark_outside(p.x + (size_t)b * p.stride, p.y + (size_t)b * p.stride,
                      p.stride, n, in, out))
      continue;
    for (uint32_t i = 0; i < n; i++) {
      if (!out[i])
        continue;
      uint32_t r = b + i;
      int rc = pack_one(m, it->entities[r], keys[r], p.x[r * p.stride],
                        p.y[r * p.stride]);
      if (rc)
        return rc;
    }
  }
  return 0;
}

static int pack(weft_mpi_t *m) {
  for (uint32_t r = 0; r < m->size; r++)
    m->out_mig[r].len = m->out_ghost[r].len = 0;
  m->leaving_n = 0;
  interior_t in = interior(m);
  weft_iter_t it;
  for (weft_query_iter(m->owned, &it); weft_iter_next(&it);) {
    int rc = pack_chunk(m, &it, in);
    if (rc) {
      weft_iter_close(&it);
      return rc;
    }
  }
  return 0;
}

/* The sizes and statuses of every rank; returns the first failure of any
 * rank (lowest rank first), the same everywhere. */
static int trade_sizes(weft_mpi_t *m, int status) {
  for (uint32_t r = 0; r < m->size; r++) {
    uint64_t *h = &m->hdr_out[r * WEFT__HDR_WORDS];
    h[WEFT__HDR_MIGRANTS] = r == m->rank ? 0 : m->out_mig[r].len;
    h[WEFT__HDR_GHOSTS] = r == m->rank ? 0 : m->out_ghost[r].len;
    h[WEFT__HDR_STATUS] = (uint64_t)(int64_t)status;
  }
  if (MPI_Alltoall(m->hdr_out, WEFT__HDR_WORDS, MPI_UINT64_T, m->hdr_in,
                   WEFT__HDR_WORDS, MPI_UINT64_T, m->comm) != MPI_SUCCESS)
    return weft_world_fail(m->world, WEFT_EIO, "weft_mpi: MPI_Alltoall failed");
  for (uint32_t r = 0; r < m->size; r++) {
    int64_t s = (int64_t)m->hdr_in[r * WEFT__HDR_WORDS + WEFT__HDR_STATUS];
    if (s != 0) {
      if (r != m->rank)
        weft_world_fail(m->world, (int)s,
                        "weft_mpi: rank %u failed in the exchange (%s)", r,
                        weft_strerror_name((int)s));
      return (int)s;
    }
  }
  return 0;
}

static int make_room(weft__mbuf_t *b, uint64_t n) {
  b->len = 0;
  return weft__mbuf_reserve(b, (size_t)n);
}

/* Posts the receive of one message of n bytes from rank r into b. When b
 * cannot grow to n, a receive of 0 bytes still takes the message (it
 * ends in a truncation error, returned on the driver's communicator):
 * the sender must not wait for a receive that never comes. */
static int post_recv(weft_mpi_t *m, weft__mbuf_t *b, uint64_t n, uint32_t r,
                     int tag, MPI_Request *req) {
  static uint8_t swallow;
  int rc = make_room(b, n);
  b->len = rc ? 0 : (size_t)n;
  if (n && MPI_Irecv(rc ? &swallow : b->data, rc ? 0 : (int)n, MPI_BYTE, (int)r,
                     tag, m->comm, req) != MPI_SUCCESS)
    rc = rc ? rc : WEFT_EIO;
  return rc;
}

/* Posts every receive and send; the first 2 * size requests are the
 * receives (migrants, then ghosts), the rest the sends. Every message is
 * posted even after a failure, so that no rank waits for this one. */
static int post(weft_mpi_t *m) {
  uint32_t P = m->size;
  int rc = 0, bad = 0;
  for (uint32_t i = 0; i < 4 * P; i++)
    m->reqs[i] = MPI_REQUEST_NULL;
  for (uint32_t r = 0; r < P; r++) {
    const uint64_t *h = &m->hdr_in[r * WEFT__HDR_WORDS];
    int a = post_recv(m, &m->in_mig[r], h[WEFT__HDR_MIGRANTS], r,
                      WEFT__TAG_MIGRANTS, &m->reqs[r]);
    int b = post_recv(m, &m->in_ghost[r], h[WEFT__HDR_GHOSTS], r,
                      WEFT__TAG_GHOSTS, &m->reqs[P + r]);
    rc = rc ? rc : a ? a : b;
  }
  for (uint32_t r = 0; r < P; r++) {
    if (r == m->rank)
      continue;
    if (m->out_mig[r].len)
      bad |=
          MPI_Isend(m->out_mig[r].data, (int)m->out_mig[r].len, MPI_BYTE,
                    (int)r, WEFT__TAG_MIGRANTS, m->comm, &m->reqs[2 * P + r]);
    if (m->out_ghost[r].len)
      bad |= MPI_Isend(m->out_ghost[r].data, (int)m->out_ghost[r].len, MPI_BYTE,
                       (int)r, WEFT__TAG_GHOSTS, m->comm, &m->reqs[3 * P + r]);
    m->stats.bytes_sent += m->out_mig[r].len + m->out_ghost[r].len;
    m->stats.ghost_sent += m->out_ghost[r].len / m->grecord;
  }
  return rc ? rc : bad ? WEFT_EIO : 0;
}

static int drop_ghost(weft_mpi_t *m, weft__keyslot_t *s) {
  weft_entity_t g = s->ghost;
  weft__keymap_erase(&m->ghosts, s);
  return weft_despawn(m->world, g);
}

/* Spawns the migrants of one buffer; a ghost of the same key (the entity
 * was in this rank's halo) gives way to it first. */
static int spawn_migrants(weft_mpi_t *m, const weft__mbuf_t *b) {
  for (size_t at = 0; at < b->len;) {
    uint32_t n;
    uint64_t k;
    if (b->len - at < WEFT__MIGRANT_HEAD)
      return weft_world_fail(m->world, WEFT_EINVAL,
                             "weft_mpi: a migrant message is damaged");
    memcpy(&n, b->data + at, 4);
    memcpy(&k, b->data + at + 8, 8);
    if (b->len - at - WEFT__MIGRANT_HEAD < n)
      return weft_world_fail(m->world, WEFT_EINVAL,
                             "weft_mpi: a migrant message is damaged");
    weft__keyslot_t *s = weft__keymap_find(&m->ghosts, k);
    int rc = s ? drop_ghost(m, s) : 0;
    weft_entity_t e;
    if (!rc)
      rc = weft__record_spawn(m, b->data + at + WEFT__MIGRANT_HEAD, n, &e);
    if (rc)
      return rc;
    m->stats.immigrants++;
    at += WEFT__MIGRANT_HEAD + n;
  }
  return 0;
}

/* Brings an existing ghost up to its record: components set, added or
 * removed as the owner has them. */
static int refresh_ghost(weft_mpi_t *m, weft_entity_t g, uint32_t mask,
                         const void *const *values) {
  for (uint32_t i = 0; i < m->gcount; i++) {
    weft_component_t c = m->gcomp[i];
    /* A ghost that has the component already (every refresh of a steady
     * run) takes the value by a direct row write; weft_get_mut() marks
     * the chunk changed as weft_set() would. */
    void *row =
        (mask >> i & 1) && m->gsize[i] ? weft_get_mut(m->world, g, c) : NULL;
    if (row) {
      memcpy(row, values[i], m->gsize[i]);
      continue;
    }
    int rc = !(mask >> i & 1) ? weft_remove(m->world, g, c)
             : m->gsize[i]    ? weft_set(m->world, g, c, values[i])
                              : weft_add(m->world, g, c, NULL);
    if (rc)
      return rc;
  }
  return 0;
}

/* Refreshes or spawns the ghost of one record. */
static int take_ghost(weft_mpi_t *m, const uint8_t *p) {
  uint64_t k;
  uint32_t mask;
  memcpy(&k, p, 8);
  memcpy(&mask, p + 8, 4);
  /* Values are copied out to aligned storage first (records are packed). */
  uint8_t *vals = m->scratch.data;
  memcpy(vals, p + GHOST_HEAD, m->grecord - GHOST_HEAD);
  const void *values[WEFT_MPI_GHOST_MAX + 1];
  size_t off = 0;
  for (uint32_t i = 0; i < m->gcount; i++) {
    values[i] = vals + off;
    off += m->gsize[i];
  }
  weft__keyslot_t *s = weft__keymap_find(&m->ghosts, k);
  if (s) {
    s->round = m->round;
    return refresh_ghost(m, s->ghost, mask, values);
  }
  weft_component_t comps[WEFT_MPI_GHOST_MAX + 4];
  const void *cvals[WEFT_MPI_GHOST_MAX + 4];
  uint32_t n = 0;
  comps[n] = m->key;
  cvals[n++] = &k;
  comps[n] = m->ghost;
  cvals[n++] = NULL;
  for (uint32_t i = 0; i < m->gcount; i++)
    if (mask >> i & 1) {
      comps[n] = m->gcomp[i];
      cvals[n++] = values[i];
    }
  comps[n] = WEFT_COMPONENT_NONE;
  weft_entity_t g;
  int rc = weft__keymap_reserve(&m->ghosts);
  if (!rc)
    rc = weft_spawn_with(m->world, comps, cvals, &g);
  if (rc)
    return rc;
  weft__keymap_put(&m->ghosts, k, g)->round = m->round;
  return 0;
}

static int take_ghosts(weft_mpi_t *m, const weft__mbuf_t *b) {
  if (b->len % m->grecord)
    return weft_world_fail(m->world, WEFT_EINVAL,
                           "weft_mpi: a ghost message is damaged");
  for (size_t at = 0; at < b->len; at += m->grecord) {
    int rc = take_ghost(m, b->data + at);
    if (rc)
      return rc;
  }
  return 0;
}

/* Despawns the ghosts no rank sent this round. */
static int sweep(weft_mpi_t *m) {
  uint32_t n = 0;
  if (m->stale_cap < m->ghosts.count) {
    uint64_t *p = weft__realloc(NULL, m->stale, sizeof *p * m->stale_cap,
                                sizeof *p * m->ghosts.cap);
    if (!p)
      return WEFT_ENOMEM;
    m->stale = p;
    m->stale_cap = m->ghosts.cap;
  }
  for (uint32_t i = 0; i < m->ghosts.cap; i++) {
    const weft__keyslot_t *s = &m->ghosts.slots[i];
    if (s->ghost != WEFT_ENTITY_NULL && s->round != m->round)
      m->stale[n++] = s->key;
  }
  for (uint32_t i = 0; i < n; i++) {
    int rc = drop_ghost(m, weft__keymap_find(&m->ghosts, m->stale[i]));
    if (rc)
      return rc;
  }
  return 0;
}

/* The work that needs no message: emigrants leave, and those still in
 * this region's halo come back as ghosts from their own records. */
static int local_work(weft_mpi_t *m) {
  for (uint32_t i = 0; i < m->leaving_n; i++) {
    int rc = weft_despawn(m->world, m->leaving[i]);
    if (rc)
      return rc;
  }
  m->stats.emigrants += m->leaving_n;
  return take_ghosts(m, &m->out_ghost[m->rank]);
}

/* Waits for requests [from, from + n); 0 or WEFT_EIO. */
static int wait_range(weft_mpi_t *m, uint32_t from, uint32_t n) {
  return MPI_Waitall((int)n, m->reqs + from, MPI_STATUSES_IGNORE) == MPI_SUCCESS
             ? 0
             : WEFT_EIO;
}

/* Steps 3 and 4 (see the top of the file), once every rank has packed. */
static int deliver(weft_mpi_t *m) {
  uint32_t P = m->size;
  int rc = post(m);
  if (!rc)
    rc = local_work(m);
  int wrc = wait_range(m, 0, P); /* migrants */
  for (uint32_t r = 0; r < P && !rc && !wrc; r++)
    rc = spawn_migrants(m, &m->in_mig[r]);
  int grc = wait_range(m, P, P); /* ghosts */
  for (uint32_t r = 0; r < P && !rc && !wrc && !grc; r++) {
    m->stats.bytes_recv += m->in_mig[r].len + m->in_ghost[r].len;
    rc = take_ghosts(m, &m->in_ghost[r]);
  }
  int src = wait_range(m, 2 * P, 2 * P); /* sends: buffers reusable */
  if (!rc)
    rc = sweep(m);
  if (!rc && (wrc || grc || src))
    rc = weft_world_fail(m->world, WEFT_EIO, "weft_mpi: a message failed");
  return rc;
}

/* MPI counts are ints: a message past INT_MAX bytes is refused (on
 * every rank, through the status in the sizes' exchange). */
static int check_sizes(weft_mpi_t *m) {
  for (uint32_t r = 0; r < m->size; r++)
    if (m->out_mig[r].len > INT_MAX || m->out_ghost[r].len > INT_MAX)
      return weft_world_fail(m->world, WEFT_ELIMIT,
                             "weft_mpi: more than 2 GiB for rank %u in one "
                             "tick",
                             r);
  return 0;
}

int weft__exchange(weft_mpi_t *m) {
  m->round++;
  int rc = pack(m);
  if (!rc)
    rc = check_sizes(m);
  if (!rc)
    rc = weft__mbuf_reserve(&m->scratch, m->grecord);
  rc = trade_sizes(m, rc);
  if (!rc)
    rc = deliver(m);
  m->stats.ghosts = m->ghosts.count;
  return rc;
}

/* The rank's part in a round it cannot pack: its tick failed ahead of the
 * in-tick exchange, while the other ranks wait in that exchange's sizes.
 * It sends them its failure as its status (nothing else), so that they
 * return it from their exchange instead of waiting. */
int weft__exchange_abort(weft_mpi_t *m, int status) {
  m->round++;
  for (uint32_t r = 0; r < m->size; r++)
    m->out_mig[r].len = m->out_ghost[r].len = 0;
  return trade_sizes(m, status);
}
