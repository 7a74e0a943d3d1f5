/* SPDX-License-Identifier: MIT */
/*
 * The distributed driver's state (weft_mpi_t), shared by dist.c (life
 * cycle, the tick), exchange.c (migration and ghosts), record.c (the
 * migrants' encoding) and digest.c.
 */
#ifndef WEFT_MPI_DIST_H
#define WEFT_MPI_DIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <weft/mpi.h>
#include <weft/query.h>

#include "mpi/domain.h"
#include "mpi/keymap.h"

#include <weft/entity_codec.h>

/* A growable byte buffer; kept between ticks, so that a steady run stops
 * allocating once each has reached its largest size. */
typedef struct weft__mbuf_t {
  uint8_t *data;
  size_t len, cap;
} weft__mbuf_t;

/* What one rank tells each other rank before the payloads: the bytes of
 * migrants and of ghosts it sends, and its status (0 or a WEFT_E* code),
 * so that a rank that failed to pack is known everywhere and nobody waits
 * for its messages. */
enum {
  WEFT__HDR_MIGRANTS = 0,
  WEFT__HDR_GHOSTS,
  WEFT__HDR_STATUS,
  WEFT__HDR_WORDS
};

/* Bins an axis of the load balance's histograms (balance.c). */
#define WEFT__BALANCE_BINS 1024u

/* Message tags on the driver's own communicator. */
enum { WEFT__TAG_MIGRANTS = 1, WEFT__TAG_GHOSTS = 2 };

struct weft_mpi_t {
  weft_world_t *world;
  MPI_Comm comm; /* duplicated from the caller's */
  uint32_t rank, size;
  weft__domain_t dom;

  weft_component_t position, key, ghost;
  bool position_soa;
  /* Ghost components, Position first (at most 32, for the record's
   * mask); a ghost record is a 16-byte head (key, mask of the components
   * present) and each one's bytes (sizes gsize[i]) in this order: grecord
   * bytes (exchange.c). */
  weft_component_t gcomp[WEFT_MPI_GHOST_MAX + 1];
  uint32_t gsize[WEFT_MPI_GHOST_MAX + 1];
  uint32_t gcount;
  uint32_t grecord;

  weft_query_t *owned; /* Key and Position, not Ghost */
  /* The exchange as a system of the tick (config exchange_after/before),
   * or not (in_tick false: weft_mpi_step() exchanges first). */
  weft_system_t exchange_sys;
  bool in_tick;
  uint64_t placement; /* a hash of where it runs; 0: before the tick */
  weft_mpi_tick_fn tick;
  void *tick_user;
  weft_entity_codec_t *codec; /* migrants' records (record.c) */

  /* Per peer rank: outgoing and incoming migrants and ghosts. The own
   * rank's ghost buffer holds the records of entities that leave but stay
   * in this region's halo: they become ghosts here. */
  weft__mbuf_t *out_mig, *out_ghost, *in_mig, *in_ghost;
  uint64_t *hdr_out, *hdr_in; /* size * WEFT__HDR_WORDS */
  MPI_Request *reqs;          /* 4 * size */
  weft__mbuf_t scratch;       /* one record's values while decoding */

  weft_entity_t *leaving; /* owned entities that left the region */
  uint32_t leaving_n, leaving_cap;
  uint64_t *stale; /* keys of ghosts no rank sent this round */
  uint32_t stale_cap;

  uint64_t *hist; /* 2 * WEFT__BALANCE_BINS: x, then y (balance.c) */
  uint32_t balance_every;
  weft_mpi_balance_t balance_by;
  weft_mpi_cost_fn cost;
  void *cost_user;
  /* The process's CPU seconds in ticks (without the exchange) and in the
   * exchange inside the tick: WEFT_MPI_BALANCE_TIME's measured cost, CPU
   * rather than wall time so that a rank the OS descheduled does not
   * look costly (balance.c). */
  double tick_cpu_s, exchange_cpu_s;
  double balance_cpu_s; /* tick_cpu_s at the last rebalance */

  weft__keymap_t ghosts;
  uint64_t round;
  weft_mpi_stats_t stats;

  /* The neighbour-only round and its split (exchange.c). */
  uint32_t nbr[8], nbr_n; /* the 3 x 3 block's other ranks, ascending */
  uint64_t *leaving_key;  /* per emigrant (leaving_cap): key, new owner */
  uint32_t *leaving_to;
  uint8_t *far_mark; /* size bytes: far_to's members */
  uint32_t *far_to;  /* ranks outside the block this round sends to */
  uint32_t far_n;
  int round_status; /* this rank's failure in the posted round */
  bool posted;      /* posted, not yet completed */
  uint64_t agree_out[2], agree_in[2];
  MPI_Request agree_req;
  /* "weft.mpi.ghosts", the completion, where the exchange is split
   * (config exchange_overlap). */
  weft_system_t ghosts_sys;
  bool split;
};

/* Makes room for @p more bytes at the end of @p b (0 or WEFT_ENOMEM). */
int weft__mbuf_reserve(weft__mbuf_t *b, size_t more);
void weft__mbuf_free(weft__mbuf_t *b);

/* A migrant's head in a message: u32 record bytes, u32 0, u64 key. */
#define WEFT__MIGRANT_HEAD 16u

/* Appends the migrant record of owned entity @p e (key @p key) to @p b:
 * the head, then the entity's encoding (record.c). */
int weft__record_put(weft_mpi_t *m, weft_entity_t e, uint64_t key,
                     weft__mbuf_t *b);

/* Spawns the entity of the record at @p p (@p n bytes, past the length)
 * into the world; *out gets it. */
int weft__record_spawn(weft_mpi_t *m, const uint8_t *p, size_t n,
                       weft_entity_t *out);

/* Sets up (and frees) what record.c needs. */
int weft__record_init(weft_mpi_t *m);
void weft__record_fini(weft_mpi_t *m);

/* The process's CPU time in seconds, every thread (balance.c). */
double weft__cpu_now(void);

/* Every rank's verdict on a collective call: the lowest failing rank's
 * code and message (dist.c), or 0. Collective. */
int weft__agree_code(weft_mpi_t *m, int rc);

/* One round of migration and ghost exchange (exchange.c). Collective. */
int weft__exchange(weft_mpi_t *m);

/* Joins the round the other ranks are in with failure @p status instead
 * of packing (exchange.c); returns @p status. Collective. */
int weft__exchange_abort(weft_mpi_t *m, int status);

/* The round in two halves (exchange.c): the post packs, starts the
 * round's agreement and sends the ghosts; the completion sends the
 * migrants, receives, and applies. weft__exchange() is both. Collective. */
int weft__exchange_post(weft_mpi_t *m);
int weft__exchange_complete(weft_mpi_t *m);

/* Frees what the rounds allocated beyond the buffers above. */
void weft__exchange_fini(weft_mpi_t *m);

#endif /* WEFT_MPI_DIST_H */
