/* SPDX-License-Identifier: MIT */
/*
 * weft::net's server state: the replication table (replicate.c), the
 * sessions (session.c) and the server that holds them (server.c).
 * Internal to weft::net.
 */
#ifndef WEFT_NET_INTERNAL_H
#define WEFT_NET_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "core/alloc.h"
#include "net/wire.h"
#include "weft/entity_codec.h"
#include "weft/net.h"
#include "weft/query.h"
#include "weft/system.h"

/* One entity of the grid: its handle and cell. */
typedef struct weft__net_grid_item {
  weft_entity_t e;
  int32_t cx, cy;
} weft__net_grid_item;

/*
 * Per entity slot (flat arrays indexed by weft_entity_index(), grown as
 * the world grows): the handle living there when last stamped (the
 * generation check: another handle is a miss), its replicated components,
 * the tick each last changed, its grid cell. Plus the grid: the stamped
 * entities' slots sorted by a hash of their cell.
 */
typedef struct weft__net_repl {
  weft__alloc_stats_t *alloc; /* the server's */
  uint32_t cap;               /* slots the arrays hold */
  uint32_t ncomp;             /* replicated components */
  weft_entity_t *handle;      /* [cap] 0: no replicated entity */
  uint64_t *next_mask;        /* [cap] scratch of the stamp in progress */
  uint32_t *seen;             /* [cap] stamp number that last saw the slot */
  int32_t *cell;              /* [cap * 2] cell x, y */
  uint32_t *stamped;          /* [cap] the slots the last stamp saw */
  /* The same entities sorted by cell bucket, each with its cell, so
   * that a view's walk over its cells reads them in order rather than one
   * slot at a time from the per-slot arrays (and the stamp's sort writes
   * one line per entity). */
  weft__net_grid_item *grid; /* [cap] */
  uint32_t count;            /* entries of stamped and the grid */
  uint32_t *bucket;          /* [nbuckets + 1] start of each bucket */
  uint32_t nbuckets;         /* a power of two */
  uint32_t stamp_no;
  /* One record per slot ([cap * rstride] bytes): the components present
   * (a u64), the tick each last changed (ncomp u32s from byte 8) and the
   * values as of the last stamp (component k at vbase + voff[k]). A
   * packet's item for an entity reads one record rather than a line of
   * each of three arrays, and rather than the world's entity index and
   * chunks for every session that knows the entity. */
  uint8_t *rec;
  uint32_t rstride; /* a multiple of 8 */
  uint32_t vbase;
  uint32_t voff[WEFT_NET_MAX_COMPONENTS];
  uint64_t soa; /* components stored SoA: copied through weft_read() */
} weft__net_repl;

/* A slot's record: its component mask, its versions, its values. */
static inline uint64_t *weft__net_rec_mask(const weft__net_repl *r,
                                           uint32_t slot) {
  return (uint64_t *)(void *)(r->rec + (size_t)slot * r->rstride);
}
static inline uint32_t *weft__net_rec_versions(const weft__net_repl *r,
                                               uint32_t slot) {
  return (uint32_t *)(void *)(r->rec + (size_t)slot * r->rstride + 8);
}
static inline uint8_t *weft__net_rec_values(const weft__net_repl *r,
                                            uint32_t slot) {
  return r->rec + (size_t)slot * r->rstride + r->vbase;
}

/* Entry states of a session's table (the seed's known set and pending
 * learns and forgets, with "pending" meaning "not yet acknowledged"). */
enum { WEFT__NET_LEARNING = 1, WEFT__NET_KNOWN, WEFT__NET_FORGETTING };

/* One entity a session knows or is forgetting. */
typedef struct weft__net_entry {
  weft_entity_t e; /* 0: an empty table slot */
  /* Bit i: this entry's item went whole into the packet built i builds
   * ago (a known entity without changes counts as sent). */
  uint64_t sent;
  uint32_t acked; /* KNOWN: the tick as of which the client holds it */
  uint32_t seen;  /* the build that last found it in the view */
  uint8_t state;
  uint8_t prev;      /* FORGETTING: the state it left */
  uint8_t sent_ever; /* the current state's item went out at least once */
  uint8_t scanned;   /* 2 | build parity: this build's scan handled it */
} weft__net_entry;

typedef struct weft__net_session {
  uint32_t gen;  /* odd while open: ids are (gen << 16 | index) */
  bool hello;    /* the client said HELLO */
  bool has_view; /* the client set a view */
  float x, y, radius;
  weft__net_entry *table; /* open addressing, linear probing */
  uint32_t table_cap;     /* the part in use: a power of two */
  uint32_t table_max;     /* its allocated entries, a power of two */
  uint32_t table_count;
  weft__net_entry *stage;  /* [table_max / 2]: the entries while it grows */
  uint32_t limit;          /* entries at most (max_known + forgetting) */
  uint32_t epoch;          /* reset epoch, sent in every packet header */
  uint64_t last_ack;       /* newest acknowledged tick */
  uint32_t last_ack_build; /* the build number it named */
  /* Acks received since the last build, not yet applied to the table:
   * bit a for the packet built a builds before the next one (the bits of
   * the entries' `sent`). The next build's scan applies them, so that an
   * ack costs no walk over the table of its own. */
  uint64_t ack_pending;
  bool digest_pending;
  weft_entity_t digest_entity;
  uint8_t *packet;  /* max_packet bytes, after the headroom */
  uint8_t *scratch; /* one entity's values, for digests */
  size_t packet_len;
} weft__net_session;

/* A queued replicated event: its payload in the server's event bytes. */
typedef struct weft__net_event {
  weft_entity_t a, b;
  uint32_t type, len, offset;
} weft__net_event;

/* Writable bytes before each session's packet (weft_net_packet()'s data),
 * where a transport puts its frame header so that it writes the packet
 * where the build left it rather than a copy (serve.c: LWS_PRE). */
#define WEFT__NET_PACKET_HEADROOM 32u

/* Entries of a session table in use when it opens (see table_grow()). */
#define WEFT__NET_TABLE_START 256u

#define WEFT__NET_MAX_EVENTS 1024u
#define WEFT__NET_EVENT_BYTES (64u * 1024u)

struct weft_net_t {
  weft_world_t *world;
  weft__alloc_stats_t alloc; /* every table's memory: steady ticks add none */
  weft_net_config_t cfg;
  weft_component_t comps[WEFT_NET_MAX_COMPONENTS];
  weft_net_schema_t schema; /* sizes, limits; table -> welcome's copy */
  weft_query_t *pos_query;  /* {position} */
  uint32_t pos_size;        /* the position component's row bytes */
  weft_query_t *comp_query[WEFT_NET_MAX_COMPONENTS]; /* {component, pos} */
  weft__net_repl repl;
  uint8_t *welcome;
  size_t welcome_len;
  weft__net_session *sessions; /* [max_sessions] */
  uint32_t open;
  uint32_t builds;          /* packets built so far */
  uint64_t build_ticks[64]; /* tick of build b at [b & 63] */
  uint64_t last_stamp, last_build;
  bool stamped, built;
  bool installed;           /* weft_net_install() added the systems */
  weft_system_t systems[2]; /* stamp, build */
  weft__net_event *events;  /* [WEFT__NET_MAX_EVENTS] */
  uint8_t *event_bytes;     /* [WEFT__NET_EVENT_BYTES] */
  uint32_t event_count, event_used;
  char error[160];
};

/* server.c: weft_net_build() with the calling pool worker @p self. */
int weft__net_build_on(weft_net_t *net, uint64_t tick, uint32_t self);
/* install.c: removes the systems weft_net_install() added. */
void weft__net_uninstall(weft_net_t *net);

/* replicate.c */
int weft__net_repl_init(weft_net_t *net);
void weft__net_repl_free(weft__net_repl *r);
int weft__net_repl_stamp(weft_net_t *net, uint32_t tick);
/* The grid bucket of cell (cx, cy): its stamped entities are among
 * grid[bucket[b] .. bucket[b + 1]) (other cells share buckets). */
static inline uint32_t weft__net_cell_bucket(const weft__net_repl *r,
                                             int32_t cx, int32_t cy) {
  uint64_t h = (uint64_t)(uint32_t)cx * 0x9e3779b97f4a7c15ull ^
               (uint64_t)(uint32_t)cy * 0xc2b2ae3d27d4eb4full;
  return (uint32_t)(h >> 32) & (r->nbuckets - 1);
}
/* The slot of @p e when it is a stamped, live replicated entity, else
 * UINT32_MAX (a stale handle is a miss). */
uint32_t weft__net_repl_slot(const weft__net_repl *r, weft_entity_t e);

/* session.c */
int weft__net_session_init(weft_net_t *net, weft__net_session *s);
void weft__net_session_free(weft__net_session *s);
void weft__net_session_build(weft_net_t *net, weft__net_session *s,
                             uint64_t tick);
void weft__net_session_ack(weft_net_t *net, weft__net_session *s,
                           uint64_t tick);
/* The seed's learnEntity and forgetEntity on entry @p x (NULL: none) of
 * entity @p e; forget returns whether the entry was erased. */
void weft__net_session_learn(weft__net_session *s, weft__net_entry *x,
                             weft_entity_t e, uint32_t build);
bool weft__net_session_forget(weft__net_session *s, weft__net_entry *x);
weft__net_entry *weft__net_session_find(const weft__net_session *s,
                                        weft_entity_t e);
/* Writes @p slot's entity's values of @p mask as of the last stamp to
 * dst (room for all of them) and returns their bytes. */
uint32_t weft__net_read_values(const weft_net_t *net, uint32_t slot,
                               uint64_t mask, uint8_t *dst);
uint64_t weft__net_view_digest(const weft_net_t *net,
                               const weft__net_session *s, uint32_t *count);

/* conn.c (with libwebsockets): services @p ctx for @p wait_ms ms. */
struct lws_context;
void weft__net_service(struct lws_context *ctx, uint32_t wait_ms);
/* conn.c: sets libwebsockets' log level (errors; WEFT_LWS_LOG). */
void weft__net_lws_log(void);

#endif /* WEFT_NET_INTERNAL_H */
