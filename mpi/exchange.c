/* SPDX-License-Identifier: MIT */
/*
 * One round of migration and ghost exchange (weft_mpi_exchange()), among
 * the 3 x 3 block of regions around each rank's only, in two halves that
 * the tick may hold apart (weft__exchange_post(), _complete()).
 *
 * 1. Post. Every owned entity is looked at once: when its position lies
 *    in another rank's region it is listed to leave for that rank; when
 *    it lies within the halo of other regions, its ghost record (key and
 *    ghost components) goes to each of those ranks, its own new owner
 *    excepted. The sender decides for the entity's new position, so a
 *    migrant's ghosts need no second round, and an entity that leaves but
 *    stays within this region's halo becomes a ghost here from the same
 *    record. The round's agreement starts (MPI_Iallreduce of two words:
 *    the lowest rank that failed to pack, and whether any rank sends
 *    outside its block), and one ghost message goes to every neighbour,
 *    empty or not: its size travels with it (the receiver probes), so no
 *    round of sizes goes ahead and nobody waits for a message that will
 *    not come.
 * 2. Complete. The emigrants' records are encoded (after any system that
 *    ran between the halves) and one migrant message goes to every
 *    neighbour; the neighbours' messages are received as they arrive,
 *    and the agreement is finished. A round some rank failed to post
 *    applies nothing on any rank.
 * 3. Apply: emigrants leave, migrants arrive (a ghost of the same key
 *    gives way), each ghost record refreshes the ghost of its key or
 *    spawns one.
 * 4. Far. Where the agreement says some rank sends outside its block (an
 *    entity that crossed more than one region, a migrant's ghost two
 *    regions away, cuts a rebalance moved), every rank makes a global
 *    step: an all-to-all of sizes, then those messages.
 * 5. Ghosts that no rank sent this round (their entity moved away or
 *    died) are despawned.
 *
 * Every rank that owns an entity is the only one that sends records of
 * it, so a key arrives at most once per rank and round. Per round a rank
 * sends two messages to each of at most 8 neighbours and takes part in
 * one small all-reduce, whatever the rank count.
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

/* Lists owned entity e (key k) to leave for rank to. Its record is
 * encoded when the round completes, so that systems between the post and
 * the completion (docs/mpi.md, "Overlap") may still write it. */
static int note_leaving(weft_mpi_t *m, weft_entity_t e, uint64_t k,
                        uint32_t to) {
  if (m->leaving_n == m->leaving_cap) {
    /* Four times over: emigrant counts wander (see weft__mbuf_reserve). */
    uint32_t old = m->leaving_cap, cap = old ? old * 4 : 256;
    weft_entity_t *p =
        weft__realloc(NULL, m->leaving, sizeof *p * old, sizeof *p * cap);
    if (p)
      m->leaving = p;
    uint64_t *kp =
        p ? weft__realloc(NULL, m->leaving_key, 8 * old, 8 * cap) : NULL;
    if (kp)
      m->leaving_key = kp;
    uint32_t *tp =
        kp ? weft__realloc(NULL, m->leaving_to, 4 * old, 4 * cap) : NULL;
    if (!tp)
      return WEFT_ENOMEM; /* the arrays that grew are kept, cap is not */
    m->leaving_to = tp;
    m->leaving_cap = cap;
  }
  m->leaving[m->leaving_n] = e;
  m->leaving_key[m->leaving_n] = k;
  m->leaving_to[m->leaving_n++] = to;
  return 0;
}

/* Whether rank r lies in the 3 x 3 block of regions around this rank's
 * (itself included): the ranks it exchanges with every round. The block
 * is a matter of grid indices, so moving cuts never changes it. */
static bool is_near(const weft_mpi_t *m, uint32_t r) {
  uint32_t px = m->dom.px;
  int64_t dx = (int64_t)(r % px) - (int64_t)(m->rank % px);
  int64_t dy = (int64_t)(r / px) - (int64_t)(m->rank / px);
  return dx >= -1 && dx <= 1 && dy >= -1 && dy <= 1;
}

/* Notes that this round sends to rank r; a rank outside the block makes
 * the round "far" (a second, global step, see far_round()). */
static void note_dest(weft_mpi_t *m, uint32_t r) {
  if (!m->far_mark[r] && !is_near(m, r)) {
    m->far_mark[r] = 1;
    m->far_to[m->far_n++] = r;
  }
}

/* One owned entity: where it goes, and who sees it as a ghost. */
static int pack_one(weft_mpi_t *m, weft_entity_t e, uint64_t k, float x,
                    float y) {
  uint32_t owner = weft__domain_owner(&m->dom, x, y), halo[8];
  uint32_t nh = weft__domain_halo_ranks(&m->dom, x, y, owner, halo);
  int rc = 0;
  if (owner != m->rank) {
    note_dest(m, owner);
    rc = note_leaving(m, e, k, owner);
  }
  for (uint32_t i = 0; i < nh && !rc; i++) {
    note_dest(m, halo[i]);
    rc = put_ghost(m, e, k, x, y, &m->out_ghost[halo[i]]);
  }
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

/* Empties this round's outgoing buffers (the block's and the far ones
 * of the last round) and the emigrant list. */
static void clear_out(weft_mpi_t *m) {
  m->out_mig[m->rank].len = m->out_ghost[m->rank].len = 0;
  for (uint32_t i = 0; i < m->nbr_n; i++)
    m->out_mig[m->nbr[i]].len = m->out_ghost[m->nbr[i]].len = 0;
  for (uint32_t i = 0; i < m->far_n; i++) {
    uint32_t r = m->far_to[i];
    m->out_mig[r].len = m->out_ghost[r].len = 0;
    m->far_mark[r] = 0;
  }
  m->far_n = 0;
  m->leaving_n = 0;
}

static int pack(weft_mpi_t *m) {
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

static int make_room(weft__mbuf_t *b, uint64_t n) {
  b->len = 0;
  return weft__mbuf_reserve(b, (size_t)n);
}

/* Takes the probed message @p msg (of @p st) into b. When b cannot grow
 * to the message, a receive of 0 bytes still takes it (a truncation
 * error): a message left unreceived would be matched in a later round. */
static int take_message(weft_mpi_t *m, MPI_Message *msg, MPI_Status *st,
                        weft__mbuf_t *b) {
  int n = 0;
  MPI_Get_count(st, MPI_BYTE, &n);
  int rc = make_room(b, (uint64_t)n);
  b->len = rc ? 0 : (size_t)n;
  if (MPI_Mrecv(b->data, rc ? 0 : n, MPI_BYTE, msg, MPI_STATUS_IGNORE) !=
          MPI_SUCCESS &&
      !rc)
    rc = WEFT_EIO;
  m->stats.bytes_recv += b->len;
  return rc;
}

/* Receives the block's 2 x nbr_n messages of this round (ghosts, then
 * migrants, from each neighbour), in the order they arrive: their sizes
 * come with them (probed), so no round of sizes goes ahead. */
static int receive_block(weft_mpi_t *m) {
  uint32_t n = m->nbr_n, left = 2 * n;
  bool got[16] = {false};
  int rc = 0;
  while (left) {
    for (uint32_t i = 0; i < 2 * n; i++) {
      if (got[i])
        continue;
      uint32_t r = m->nbr[i % n];
      int flag = 0;
      MPI_Message msg;
      MPI_Status st;
      if (MPI_Improbe((int)r, i < n ? WEFT__TAG_GHOSTS : WEFT__TAG_MIGRANTS,
                      m->comm, &flag, &msg, &st) != MPI_SUCCESS)
        return WEFT_EIO; /* MPI is broken: nothing to keep in step */
      if (!flag)
        continue;
      int a =
          take_message(m, &msg, &st, i < n ? &m->in_ghost[r] : &m->in_mig[r]);
      rc = rc ? rc : a;
      got[i] = true;
      left--;
    }
  }
  return rc;
}

/* Posts the receive of one message of n bytes from rank r into b (the
 * far round, whose sizes are known): as take_message(), a buffer that
 * cannot grow takes it with a receive of 0 bytes. */
static int post_recv(weft_mpi_t *m, weft__mbuf_t *b, uint64_t n, uint32_t r,
                     int tag, MPI_Request *req) {
  int rc = make_room(b, n);
  b->len = rc ? 0 : (size_t)n;
  if (MPI_Irecv(b->data, rc ? 0 : (int)n, MPI_BYTE, (int)r, tag, m->comm,
                req) != MPI_SUCCESS)
    rc = rc ? rc : WEFT_EIO;
  return rc;
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

/* Emigrants leave, and those still in this region's halo come back as
 * ghosts from their own records. */
static int local_work(weft_mpi_t *m) {
  for (uint32_t i = 0; i < m->leaving_n; i++) {
    int rc = weft_despawn(m->world, m->leaving[i]);
    if (rc)
      return rc;
  }
  m->stats.emigrants += m->leaving_n;
  return take_ghosts(m, &m->out_ghost[m->rank]);
}

/* MPI counts are ints: a message past INT_MAX bytes is refused. */
static int check_size(weft_mpi_t *m, const weft__mbuf_t *b, uint32_t r) {
  if (b->len <= INT_MAX)
    return 0;
  return weft_world_fail(m->world, WEFT_ELIMIT,
                         "weft_mpi: more than 2 GiB for rank %u in one tick",
                         r);
}

/* The far round's and the block's destinations: rank out of the list
 * i < nbr_n (the block), then far_to. */
static uint32_t dest(const weft_mpi_t *m, uint32_t i) {
  return i < m->nbr_n ? m->nbr[i] : m->far_to[i - m->nbr_n];
}

/* Encodes the emigrants' records for their new owners (the block and the
 * far ranks alike). */
static int encode_migrants(weft_mpi_t *m) {
  for (uint32_t i = 0; i < m->leaving_n; i++) {
    int rc = weft__record_put(m, m->leaving[i], m->leaving_key[i],
                              &m->out_mig[m->leaving_to[i]]);
    if (rc)
      return rc;
  }
  for (uint32_t i = 0; i < m->nbr_n + m->far_n; i++) {
    int rc = check_size(m, &m->out_mig[dest(m, i)], dest(m, i));
    if (rc)
      return rc;
  }
  return 0;
}

/* The rare second step of a round where some rank sends outside its
 * block: an entity that crossed more than one region, a migrant's ghost
 * for a region two away, or cuts that a rebalance moved. Every rank
 * knows it from the round's agreement, so every rank makes it: an
 * all-to-all of the sizes, then the messages. */
static int far_round(weft_mpi_t *m) {
  uint32_t P = m->size, nreq = 0;
  memset(m->hdr_out, 0, sizeof *m->hdr_out * P * WEFT__HDR_WORDS);
  for (uint32_t i = 0; i < m->far_n; i++) {
    uint64_t *h = &m->hdr_out[m->far_to[i] * WEFT__HDR_WORDS];
    h[WEFT__HDR_MIGRANTS] = m->out_mig[m->far_to[i]].len;
    h[WEFT__HDR_GHOSTS] = m->out_ghost[m->far_to[i]].len;
  }
  if (MPI_Alltoall(m->hdr_out, WEFT__HDR_WORDS, MPI_UINT64_T, m->hdr_in,
                   WEFT__HDR_WORDS, MPI_UINT64_T, m->comm) != MPI_SUCCESS)
    return weft_world_fail(m->world, WEFT_EIO, "weft_mpi: MPI_Alltoall failed");
  int rc = 0, bad = 0;
  for (uint32_t r = 0; r < P; r++) {
    const uint64_t *h = &m->hdr_in[r * WEFT__HDR_WORDS];
    for (int t = 0; t < 2; t++) {
      uint64_t n = h[t ? WEFT__HDR_GHOSTS : WEFT__HDR_MIGRANTS];
      if (!n)
        continue;
      int a = post_recv(m, t ? &m->in_ghost[r] : &m->in_mig[r], n, r,
                        t ? WEFT__TAG_GHOSTS : WEFT__TAG_MIGRANTS,
                        &m->reqs[nreq++]);
      rc = rc ? rc : a;
    }
  }
  for (uint32_t i = 0; i < m->far_n; i++) {
    uint32_t r = m->far_to[i];
    const weft__mbuf_t *b[2] = {&m->out_mig[r], &m->out_ghost[r]};
    for (int t = 0; t < 2; t++)
      if (b[t]->len)
        bad |= MPI_Isend(b[t]->data, (int)b[t]->len, MPI_BYTE, (int)r,
                         t ? WEFT__TAG_GHOSTS : WEFT__TAG_MIGRANTS, m->comm,
                         &m->reqs[nreq++]);
    m->stats.bytes_sent += b[0]->len + b[1]->len;
    m->stats.ghost_sent += b[1]->len / m->grecord;
  }
  if (MPI_Waitall((int)nreq, m->reqs, MPI_STATUSES_IGNORE) != MPI_SUCCESS ||
      bad)
    rc = rc ? rc
            : weft_world_fail(m->world, WEFT_EIO, "weft_mpi: a message failed");
  for (uint32_t r = 0; r < P && !rc; r++)
    if (m->hdr_in[r * WEFT__HDR_WORDS + WEFT__HDR_MIGRANTS]) {
      m->stats.bytes_recv += m->in_mig[r].len;
      rc = spawn_migrants(m, &m->in_mig[r]);
    }
  for (uint32_t r = 0; r < P && !rc; r++)
    if (m->hdr_in[r * WEFT__HDR_WORDS + WEFT__HDR_GHOSTS]) {
      m->stats.bytes_recv += m->in_ghost[r].len;
      rc = take_ghosts(m, &m->in_ghost[r]);
    }
  return rc;
}

/* Sets up what the rounds need once: the far ranks' marks and list
 * (a byte and a slot per rank), and a record's scratch. */
static int ensure_state(weft_mpi_t *m) {
  if (!m->far_mark) {
    m->far_mark = weft__calloc(NULL, m->size, 16);
    m->far_to = weft__alloc(NULL, sizeof *m->far_to * m->size, 16);
    if (!m->far_mark || !m->far_to)
      return WEFT_ENOMEM;
  }
  return weft__mbuf_reserve(&m->scratch, m->grecord);
}

/* The round's agreement, started when the round is posted and completed
 * before anything is applied: the lowest failing rank and its code (one
 * word, UINT64_MAX for none) and whether any rank sends outside its block
 * (0: some rank does), both reduced by MPI_MIN. */
static void agreement_out(weft_mpi_t *m, int status, bool far) {
  m->agree_out[0] =
      status ? (uint64_t)m->rank << 32 | (uint32_t)-status : UINT64_MAX;
  m->agree_out[1] = far ? 0 : 1;
}

/* Step 1 (see the top of the file): pack unless @p status is a failure
 * already, start the agreement, send the ghosts to the block. Every rank
 * posts every round, failed or not, with empty messages where it has
 * nothing, so that nobody waits for a message that will not come. */
static int post_round(weft_mpi_t *m, int status, bool do_pack) {
  m->round++;
  m->nbr_n = weft__domain_neighbours(&m->dom, m->rank, m->nbr);
  int rc = status ? status : ensure_state(m);
  if (m->far_to)
    clear_out(m);
  if (!rc && do_pack)
    rc = pack(m);
  for (uint32_t i = 0; i < m->nbr_n && !rc; i++)
    rc = check_size(m, &m->out_ghost[m->nbr[i]], m->nbr[i]);
  if (rc && m->far_to)
    clear_out(m); /* nothing leaves, nothing is sent */
  m->round_status = rc;
  agreement_out(m, rc, !rc && m->far_n > 0);
  int bad = MPI_Iallreduce(m->agree_out, m->agree_in, 2, MPI_UINT64_T, MPI_MIN,
                           m->comm, &m->agree_req) != MPI_SUCCESS;
  for (uint32_t i = 0; i < m->nbr_n; i++) {
    const weft__mbuf_t *b = &m->out_ghost[m->nbr[i]];
    bad |= MPI_Isend(b->data, (int)b->len, MPI_BYTE, (int)m->nbr[i],
                     WEFT__TAG_GHOSTS, m->comm, &m->reqs[i]) != MPI_SUCCESS;
    m->stats.bytes_sent += b->len;
    m->stats.ghost_sent += b->len / m->grecord;
  }
  m->posted = true;
  return bad ? weft_world_fail(m->world, WEFT_EIO, "weft_mpi: MPI failed") : 0;
}

int weft__exchange_post(weft_mpi_t *m) {
  return post_round(m, 0, true);
}

/* The other ranks' verdict on the round: 0, or the lowest failing
 * rank's code (with a message naming it when it is not this one). */
static int agreed_status(weft_mpi_t *m) {
  if (m->agree_in[0] == UINT64_MAX)
    return 0;
  uint32_t r = (uint32_t)(m->agree_in[0] >> 32);
  int code = -(int)(uint32_t)m->agree_in[0];
  if (r != m->rank)
    weft_world_fail(m->world, code,
                    "weft_mpi: rank %u failed in the exchange (%s)", r,
                    weft_strerror_name(code));
  return code;
}

/* Steps 2 to 4: encode and send the migrants, receive the block's
 * messages, finish the agreement, then apply: emigrants leave, migrants
 * arrive, ghosts are refreshed, the far round runs where any rank needs
 * it, and ghosts nobody sent go. A round some rank failed to post
 * applies nothing anywhere. A rank whose migrants cannot be encoded sends
 * none and keeps them (nothing is lost or doubled) and returns its
 * failure; the tick's verdict makes it everyone's. */
int weft__exchange_complete(weft_mpi_t *m) {
  if (!m->posted)
    return weft_world_fail(m->world, WEFT_EINVAL,
                           "weft_mpi: the exchange completes no posted round");
  m->posted = false;
  uint32_t n = m->nbr_n;
  int enc = m->round_status ? m->round_status : encode_migrants(m);
  int bad = 0;
  for (uint32_t i = 0; i < n; i++) {
    weft__mbuf_t *b = &m->out_mig[m->nbr[i]];
    if (enc)
      b->len = 0;
    bad |=
        MPI_Isend(b->data, (int)b->len, MPI_BYTE, (int)m->nbr[i],
                  WEFT__TAG_MIGRANTS, m->comm, &m->reqs[n + i]) != MPI_SUCCESS;
    m->stats.bytes_sent += b->len;
  }
  for (uint32_t i = 0; enc && i < m->far_n; i++)
    m->out_mig[m->far_to[i]].len = 0;
  int rrc = receive_block(m);
  bad |= MPI_Waitall((int)(2 * n), m->reqs, MPI_STATUSES_IGNORE) != MPI_SUCCESS;
  bad |= MPI_Wait(&m->agree_req, MPI_STATUS_IGNORE) != MPI_SUCCESS;
  if (bad)
    return weft_world_fail(m->world, WEFT_EIO, "weft_mpi: a message failed");
  int global = agreed_status(m);
  if (global)
    return global;
  int rc = enc ? 0 : local_work(m);
  for (uint32_t i = 0; i < n && !rc && !rrc; i++)
    rc = spawn_migrants(m, &m->in_mig[m->nbr[i]]);
  for (uint32_t i = 0; i < n && !rc && !rrc; i++)
    rc = take_ghosts(m, &m->in_ghost[m->nbr[i]]);
  int frc = 0;
  if (m->agree_in[1] == 0) { /* on every rank */
    m->stats.far_rounds++;
    frc = far_round(m);
  }
  rc = enc ? enc : rrc ? rrc : rc ? rc : frc;
  if (!rc)
    rc = sweep(m);
  m->stats.ghosts = m->ghosts.count;
  return rc;
}

int weft__exchange(weft_mpi_t *m) {
  int rc = weft__exchange_post(m);
  int c = weft__exchange_complete(m);
  return rc ? rc : c;
}

/* The rank's part in a round it cannot pack: its tick failed ahead of the
 * in-tick exchange, while the other ranks are in that round. It posts
 * (or, split, completes) the round with its failure and nothing to send,
 * so that they return it from their exchange instead of waiting. */
int weft__exchange_abort(weft_mpi_t *m, int status) {
  if (!m->posted)
    (void)post_round(m, status, false);
  else if (!m->round_status)
    m->round_status = status; /* posted fine: keep what would leave */
  (void)weft__exchange_complete(m);
  return status;
}

void weft__exchange_fini(weft_mpi_t *m) {
  weft__free(m->leaving_key, 0, 0);
  weft__free(m->leaving_to, 0, 0);
  weft__free(m->far_mark, 0, 0);
  weft__free(m->far_to, 0, 0);
}
