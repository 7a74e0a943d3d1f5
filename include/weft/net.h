/* SPDX-License-Identifier: MIT */
/**
 * @file weft/net.h
 * @brief weft::net: delta replication of a world to remote clients
 * (library libweft_net.a, target weft::net; docs/protocol.md).
 *
 * A server (weft_net_t) replicates a chosen set of components of the
 * entities that have a position component to sessions, one per client.
 * Each session has a view (a centre and a radius); the entities in the
 * grid cells the view touches are what the session knows. Every fixed
 * step the server stamps, per entity and replicated component, the tick
 * it last changed (weft_net_stamp(), from the dirty bits: replicated
 * components must be WEFT_COMPONENT_TRACK_DIRTY). At each network tick
 * weft_net_build() writes one packet per session (weft_net_install()
 * runs both in the world's pipeline): learns (an entity's
 * full state) for entities that entered the view, deltas (only the
 * components whose stamp is newer than what the client acknowledged) and
 * forgets. A lost packet is never resent: the next packet diffs against
 * the last acknowledged state, so it covers what was lost. A session that
 * falls more than max_behind packets behind is reset to a fresh learn of
 * its view.
 *
 * The client side (weft_net_mirror_t) applies packets to a flat mirror
 * table and produces acks; both sides compute a view digest, equal when
 * the mirror has caught up.
 *
 * The wire format (docs/protocol.md) is little-endian and versioned; its
 * decoders (weft_net_decode_client(), weft_net_packet_next()) check every
 * field and return WEFT_EFORMAT (or WEFT_EVERSION, WEFT_ELIMIT) with a
 * message for malformed input. The socket transport (weft_net_serve_*
 * and weft_net_conn_*, WebSocket through libwebsockets) moves the bytes;
 * this header itself needs no socket library.
 */
#ifndef WEFT_NET_H
#define WEFT_NET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "weft/component.h"
#include "weft/entity.h"
#include "weft/error.h"
#include "weft/pool.h"
#include "weft/world.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The protocol version this library speaks (docs/protocol.md). */
#define WEFT_NET_PROTOCOL_VERSION 1u
/** The most components a server replicates (masks are 64 bits). */
#define WEFT_NET_MAX_COMPONENTS 64u
/** The largest client->server message, in bytes. */
#define WEFT_NET_MAX_CLIENT_MESSAGE 64u
/** The largest server->client packet any peer accepts, in bytes. */
#define WEFT_NET_MAX_PACKET (16u * 1024u * 1024u)
/** The most packets a session may fall behind before it is reset (the
 * per-entity history of sent packets is one 64-bit word). */
#define WEFT_NET_MAX_BEHIND 63u

/** Client->server message types. */
typedef enum weft_net_client_type_t {
  WEFT_NET_HELLO = 1,      /**< protocol version */
  WEFT_NET_VIEW = 2,       /**< view centre and radius */
  WEFT_NET_ACK = 3,        /**< the tick of the newest packet applied */
  WEFT_NET_DIGEST_REQ = 4, /**< a digest of the view, or of one entity */
} weft_net_client_type_t;

/** A decoded client->server message. */
typedef struct weft_net_client_msg_t {
  uint32_t type;    /**< a weft_net_client_type_t */
  uint32_t version; /**< HELLO: the client's protocol version */
  float x, y;       /**< VIEW: the centre (finite) */
  float radius;     /**< VIEW: the radius (finite, > 0) */
  uint64_t tick;    /**< ACK: the packet's tick */
  /** DIGEST_REQ: WEFT_ENTITY_NULL for the whole view, else one entity. */
  weft_entity_t entity;
} weft_net_client_msg_t;

/**
 * Encodes @p msg into @p buf (at least WEFT_NET_MAX_CLIENT_MESSAGE bytes)
 * and returns its length, or a negative WEFT_EINVAL for a message whose
 * fields are out of range. Any thread.
 */
int weft_net_encode_client(const weft_net_client_msg_t *msg, void *buf,
                           size_t cap);

/**
 * Decodes the client message [@p buf, @p buf + @p len) into *@p out.
 * Returns 0, or WEFT_EFORMAT (truncated, trailing bytes, unknown type, a
 * field out of range) and sets *@p why (when not NULL) to a static
 * message saying which; *out is then unspecified. Allocates nothing. Any
 * thread.
 */
int weft_net_decode_client(const void *buf, size_t len,
                           weft_net_client_msg_t *out, const char **why);

/** The schema a client learns from the server's welcome. */
typedef struct weft_net_schema_t {
  uint32_t version;         /**< protocol version */
  uint32_t component_count; /**< replicated components, <= 64 */
  uint32_t max_packet;      /**< the largest packet the server sends */
  float cell_size;          /**< the server's grid cell edge */
  uint32_t sizes[WEFT_NET_MAX_COMPONENTS]; /**< value bytes per component */
  /** The server's entity codec table (weft/entity_codec.h) for the
   * replicated components: points into the welcome's bytes. */
  const void *table;
  uint32_t table_len; /**< its bytes */
} weft_net_schema_t;

/**
 * Decodes a welcome packet into *@p out (out->table points into @p buf).
 * Returns 0, WEFT_EFORMAT or WEFT_EVERSION (a newer protocol), with *why
 * as for weft_net_decode_client(). Any thread.
 */
int weft_net_decode_welcome(const void *buf, size_t len, weft_net_schema_t *out,
                            const char **why);

/** Item kinds of a tick packet. */
typedef enum weft_net_item_kind_t {
  WEFT_NET_ITEM_LEARN = 1,  /**< an entity's full state */
  WEFT_NET_ITEM_DELTA = 2,  /**< changed components of a known entity */
  WEFT_NET_ITEM_FORGET = 3, /**< the entity left the view */
  WEFT_NET_ITEM_EVENT = 4,  /**< a replicated event */
  WEFT_NET_ITEM_DIGEST = 5, /**< a digest the client asked for */
} weft_net_item_kind_t;

/** Digest item flag: the entity asked for is not in the view (or its
 * handle is stale). */
#define WEFT_NET_DIGEST_MISS 0x1u
/** The largest replicated event payload, in bytes. */
#define WEFT_NET_MAX_EVENT 256u

/** One decoded item of a tick packet. Pointers are into the packet. */
typedef struct weft_net_item_t {
  uint32_t kind;         /**< a weft_net_item_kind_t */
  weft_entity_t entity;  /**< the entity (LEARN, DELTA, FORGET, DIGEST;
                            EVENT: the first entity) */
  weft_entity_t other;   /**< EVENT: the second entity, or NULL */
  uint64_t mask;         /**< LEARN: components present; DELTA: changed */
  uint64_t present;      /**< DELTA: which changed ones are present */
  const uint8_t *values; /**< values of mask (LEARN) or mask & present
                            (DELTA), in component order, packed */
  uint32_t values_len;   /**< their bytes */
  uint32_t event_type;   /**< EVENT: the program's event type */
  uint64_t digest;       /**< DIGEST: the digest */
  uint32_t digest_count; /**< DIGEST: entities it covers */
  uint32_t flags;        /**< DIGEST: WEFT_NET_DIGEST_MISS */
} weft_net_item_t;

/** A reader over one tick packet. Lives on the caller's stack. */
typedef struct weft_net_reader_t {
  uint64_t tick; /**< the packet's tick */
  /** The session's reset epoch: a packet of another epoch than the last
   * one applied means the server dropped what it knew the client had
   * (the client fell behind), and a fresh learn of the view follows: the
   * client clears its mirror first. */
  uint32_t epoch;
  uint32_t count; /**< items in the packet */
  /* Private. */
  const uint8_t *p_, *end_;
  const weft_net_schema_t *schema_;
  uint32_t left_;
} weft_net_reader_t;

/**
 * Opens tick packet [@p buf, @p buf + @p len) written for @p schema and
 * reads its header. Returns 0, WEFT_EFORMAT (with *why) or WEFT_ELIMIT
 * (longer than the schema's max_packet). Any thread; @p buf and @p schema
 * must outlive the reader.
 */
int weft_net_packet_open(weft_net_reader_t *r, const weft_net_schema_t *schema,
                         const void *buf, size_t len, const char **why);

/**
 * Reads the next item into *@p item: returns 1, 0 at the end (after
 * checking that no byte is left over), or WEFT_EFORMAT with *why. A
 * packet is only known to be well-formed once this returned 0. Any
 * thread.
 */
int weft_net_packet_next(weft_net_reader_t *r, weft_net_item_t *item,
                         const char **why);

/** Server configuration. */
typedef struct weft_net_config_t {
  /** The replicated components (tracked-dirty, at most 64, none twice).
   * Copied. */
  const weft_component_t *components;
  uint32_t component_count;
  /** The position: a component whose first two fields are floats x, y at
   * offsets 0 and 4 (not SoA). Entities without it are not replicated. */
  weft_component_t position;
  float cell_size;       /**< grid cell edge, > 0 */
  float max_radius;      /**< the largest view radius a client may ask */
  uint32_t max_sessions; /**< open sessions at most, > 0 */
  /** Entities one session may know at most (its memory bound); entities
   * beyond it in a view are not sent. > 0. */
  uint32_t max_known;
  /** Packets a session may fall behind before it is reset, 1..63. */
  uint32_t max_behind;
  /** The largest packet, 256..WEFT_NET_MAX_PACKET bytes: items that do
   * not fit wait for the next packet. */
  uint32_t max_packet;
  /** When not NULL, weft_net_build() builds sessions in parallel on it. */
  weft_pool_t *pool;
} weft_net_config_t;

/** A replication server of one world. Opaque. */
typedef struct weft_net_t weft_net_t;

/**
 * Creates a server for @p world. Allocates the per-session memory when
 * sessions open and the per-entity tables as the world grows; nothing in
 * steady state. *out is the caller's, freed with weft_net_destroy(); it
 * must not outlive the world (or the pool). Owner thread. Returns 0,
 * WEFT_EINVAL (a bad configuration, with the world's last error),
 * WEFT_ENOCOMP or WEFT_ENOMEM.
 */
int weft_net_create(weft_world_t *world, const weft_net_config_t *cfg,
                    weft_net_t **out);

/** Frees the server and all its sessions (NULL is a no-op). Owner
 * thread. */
void weft_net_destroy(weft_net_t *net);

/**
 * The welcome packet for new clients: protocol version, the replicated
 * components' sizes and the entity codec table of them. Points into the
 * server, valid until weft_net_destroy(). Any thread.
 */
int weft_net_welcome(const weft_net_t *net, const void **data, size_t *len);

/**
 * Stamps the tick @p tick on every replicated component written since the
 * last dirty clear (and on components added or removed), keeps a copy of
 * the values it stamped (packets and digests carry the state as of the
 * last stamp) and rebuilds the grid of replicated entities. Call once per fixed
 * step, after the step's writes and before the dirty clear (a POST_FIXED_UPDATE
 * system). Owner thread, while no system writes. Returns 0 or WEFT_ENOMEM (the
 * world grew and the tables could not).
 */
int weft_net_stamp(weft_net_t *net, uint64_t tick);

/**
 * Runs the server in the world's pipeline (weft/pipeline.h): registers
 * the exclusive systems "weft.net.stamp" (PostFixedUpdate, after the
 * phase's writers of the replicated components that registered before
 * it; tick = fixed steps completed) and "weft.net.build" (NetworkTick,
 * at the last stamp's tick; sessions split over the pool from the driving
 * thread). Do not call weft_net_stamp() or weft_net_build() besides.
 * weft_net_destroy() removes the systems. Owner thread, outside a frame.
 * Returns 0, WEFT_EINVAL (installed already) or a registration's error.
 */
int weft_net_install(weft_net_t *net);

/**
 * Opens a session (its memory allocated now) and returns its id in *@p id.
 * The session's view is empty until a VIEW message. Owner thread. Returns
 * 0, WEFT_ELIMIT (max_sessions open) or WEFT_ENOMEM.
 */
int weft_net_session_open(weft_net_t *net, uint32_t *id);

/**
 * Closes session @p id and frees its memory. A stale id is a checked miss
 * (WEFT_ESTALE). Owner thread.
 */
int weft_net_session_close(weft_net_t *net, uint32_t id);

/**
 * Applies client message [@p msg, @p msg + @p len) to session @p id: a
 * view change, an ack, a digest request (answered in the next packet).
 * A malformed message returns WEFT_EFORMAT (or WEFT_EVERSION for a HELLO
 * of a newer protocol) with the server's last error; the transport should
 * close the session. An ack of a tick the server never sent, or older than
 * its history, is ignored. Owner thread, not during weft_net_build().
 * Returns 0, WEFT_ESTALE (a stale session id), or those codes.
 */
int weft_net_receive(weft_net_t *net, uint32_t id, const void *msg, size_t len);

/**
 * Builds every open session's packet for tick @p tick (sessions in
 * parallel on the configured pool, one job per session; each session's
 * packet depends only on its own state). @p tick must grow from call to
 * call. Allocates nothing. Owner thread. Returns 0 or WEFT_EINVAL.
 */
int weft_net_build(weft_net_t *net, uint64_t tick);

/**
 * The packet weft_net_build() last wrote for session @p id (0 bytes
 * before the first build). Points into the session, valid until the next
 * build or its close. Owner thread. Returns 0 or WEFT_ESTALE.
 */
int weft_net_packet(const weft_net_t *net, uint32_t id, const void **data,
                    size_t *len);

/**
 * The digest of session @p id's view as the server has it: the replicated
 * state as of the last stamp of the entities the session knows (learned
 * and not forgotten), order-independent; *@p count receives how many. Owner
 * thread. Returns 0 or WEFT_ESTALE.
 */
int weft_net_session_digest(const weft_net_t *net, uint32_t id,
                            uint64_t *digest, uint32_t *count);

/**
 * Queues a replicated event touching @p a and @p b (either may be NULL)
 * for the next build: it goes once, unacknowledged, to each session that
 * knows one of them. Payload up to WEFT_NET_MAX_EVENT bytes, copied.
 * Owner thread. Returns 0, WEFT_EINVAL or WEFT_ELIMIT (the tick's event
 * buffer is full).
 */
int weft_net_event(weft_net_t *net, weft_entity_t a, weft_entity_t b,
                   uint32_t type, const void *payload, uint32_t len);

/** A server's counters. */
typedef struct weft_net_stats_t {
  uint64_t allocs;      /**< allocations the server made, ever */
  uint64_t alloc_bytes; /**< their bytes */
  uint32_t sessions;    /**< open sessions */
  uint32_t builds;      /**< packets built (network ticks) so far */
  uint32_t replicated;  /**< entities the last stamp replicated */
} weft_net_stats_t;

/** Copies the server's counters. Owner thread. Returns 0 or
 * WEFT_EINVAL. */
int weft_net_stats(const weft_net_t *net, weft_net_stats_t *out);

/** The server's last error message ("" when none). Owner thread. */
const char *weft_net_last_error(const weft_net_t *net);

/** A client's mirror of its view: a flat table, no world needed. Opaque.
 * Every mirror function may be called from any thread, one thread at a
 * time per mirror; what they return by pointer lives in the caller's
 * memory. */
typedef struct weft_net_mirror_t weft_net_mirror_t;

/**
 * Creates a mirror for the server whose welcome is [@p welcome,
 * + @p len), holding at most @p max_entities entities (allocated now).
 * *out is the caller's, freed with weft_net_mirror_free(). Any thread
 * (one at a time per mirror). Returns 0, WEFT_EFORMAT, WEFT_EVERSION,
 * WEFT_EINVAL or WEFT_ENOMEM.
 */
int weft_net_mirror_new(const void *welcome, size_t len, uint32_t max_entities,
                        weft_net_mirror_t **out);

/** Frees a mirror (NULL is a no-op). */
void weft_net_mirror_free(weft_net_mirror_t *m);

/**
 * Applies a tick packet. A packet no newer than the last one applied is
 * dropped (returns 0, *ack_len 0): packets are cumulative. Otherwise the
 * packet is checked whole first (a malformed one changes nothing and
 * returns WEFT_EFORMAT with the mirror's last error), applied, and an ACK
 * message is written to @p ack (WEFT_NET_MAX_CLIENT_MESSAGE bytes) with
 * its length in *@p ack_len. WEFT_ELIMIT when the mirror is full (the
 * packet is then partly applied; the next reset repairs it).
 */
int weft_net_mirror_apply(weft_net_mirror_t *m, const void *packet, size_t len,
                          void *ack, size_t *ack_len);

/** The digest of the mirror (same function as the server's) and its
 * entity count. */
uint64_t weft_net_mirror_digest(const weft_net_mirror_t *m, uint32_t *count);

/** Copies component @p index (a position in the server's list) of @p e
 * to @p out (schema size bytes). Returns 0, WEFT_ENOTFOUND or
 * WEFT_ESTALE (an entity the mirror does not hold). */
int weft_net_mirror_read(const weft_net_mirror_t *m, weft_entity_t e,
                         uint32_t index, void *out);

/** The last digest item the mirror received (tick 0 when none). */
typedef struct weft_net_digest_reply_t {
  uint64_t tick, digest;
  weft_entity_t entity;
  uint32_t count, flags;
} weft_net_digest_reply_t;

/** The mirror's last digest reply (zeroed when none). */
void weft_net_mirror_last_digest(const weft_net_mirror_t *m,
                                 weft_net_digest_reply_t *out);

/** The tick of the newest packet applied (0 when none). */
uint64_t weft_net_mirror_tick(const weft_net_mirror_t *m);

/** The mirror's last error message ("" when none). */
const char *weft_net_mirror_last_error(const weft_net_mirror_t *m);

/* ---- transport: WebSocket over TCP (libwebsockets) ---------------------- */

/** Whether this weft::net was built with its socket transport, 1 or 0
 * (the functions below then fail with WEFT_EIO). Any thread. */
int weft_net_transport_available(void);

/** Socket server limits and settings; zero means the default for every
 * field. */
typedef struct weft_net_serve_config_t {
  /** TCP port; 0 picks a free one (read it with weft_net_serve_port()). */
  uint16_t port;
  /** The address to listen on, copied; NULL: "127.0.0.1" (loopback
   * only). */
  const char *bind;
  /** Connections at most (WebSocket or not); 0: the server's
   * max_sessions. Connections beyond it are closed at once. */
  uint32_t max_sessions;
  /** The largest client message in bytes; 0: WEFT_NET_MAX_CLIENT_MESSAGE.
   * A longer one closes its session. */
  uint32_t max_message;
  /** Bytes a session may have waiting to be written; 0: the server's
   * max_packet. A session holds at most one unsent packet (a newer one
   * replaces it: packets are cumulative) plus what the socket has not
   * taken of the one being written. */
  uint32_t max_outgoing;
  /** Seconds a connection may send nothing before it is closed; 0: 10. */
  uint32_t idle_timeout_s;
  /** Folder of static files served over HTTP on the same port (index.html
   * at "/"); NULL: no HTTP files. The path is copied. */
  const char *http_root;
  /** Called with one line for every session opened or closed and why;
   * NULL: lines go to stderr. Owner thread. */
  void (*log)(void *user, const char *line);
  void *log_user;
} weft_net_serve_config_t;

/** A socket server for one weft_net_t. Opaque. */
typedef struct weft_net_serve_t weft_net_serve_t;

/** A socket server's counters. */
typedef struct weft_net_serve_stats_t {
  uint64_t accepted;  /**< WebSocket sessions opened */
  uint64_t refused;   /**< connections closed because the server is full */
  uint64_t malformed; /**< sessions closed for a bad message */
  uint64_t idle;      /**< sessions closed for idleness */
  uint64_t closed;    /**< sessions closed, for any reason */
  uint64_t packets;   /**< packets written */
  uint64_t replaced;  /**< packets replaced unsent by a newer one */
  uint64_t bytes_out; /**< bytes of packets and welcomes written */
  uint32_t open;      /**< sessions open now */
} weft_net_serve_stats_t;

/**
 * Starts listening for WebSocket clients of @p net (binary frames, one
 * message per frame, subprotocol "weft-net"): each connection opens a
 * session, gets the welcome, then every packet weft_net_build() writes
 * for it; its messages go to weft_net_receive(). All I/O happens in
 * weft_net_serve_run() on the owner thread, between ticks: no thread is
 * started. *out is the caller's, freed with weft_net_serve_destroy()
 * before @p net. Owner thread. Returns 0, WEFT_EINVAL, WEFT_EIO (cannot
 * listen, or built without libwebsockets: the reason in the net's last
 * error) or WEFT_ENOMEM.
 */
int weft_net_serve_create(weft_net_t *net, const weft_net_serve_config_t *cfg,
                          weft_net_serve_t **out);

/** The TCP port the server listens on (0 for NULL), the one the kernel
 * picked when the configuration said 0. Owner thread. */
uint16_t weft_net_serve_port(const weft_net_serve_t *s);

/**
 * Does the server's I/O for @p wait_ms milliseconds (0: what is ready
 * now): accepts connections, applies client messages, closes sessions
 * that sent a malformed message or nothing for idle_timeout_s, and hands
 * each session the packet of the last build if it has not had it. Call
 * it between ticks, outside weft_net_build(). Owner thread. Returns 0 or
 * WEFT_EINVAL.
 */
int weft_net_serve_run(weft_net_serve_t *s, uint32_t wait_ms);

/** Copies the server's counters. Owner thread. Returns 0 or WEFT_EINVAL. */
int weft_net_serve_stats(const weft_net_serve_t *s,
                         weft_net_serve_stats_t *out);

/** Closes every connection, their sessions and the listener (NULL is a
 * no-op). Owner thread. */
void weft_net_serve_destroy(weft_net_serve_t *s);

/** A WebSocket client connection to a weft::net server. Opaque. */
typedef struct weft_net_conn_t weft_net_conn_t;

/** Called for each complete message the server sent (the welcome first,
 * then packets), from inside weft_net_conn_run(); @p msg lives until the
 * callback returns. A nonzero return closes the connection. */
typedef int (*weft_net_conn_fn)(void *user, const void *msg, size_t len);

/**
 * Connects to ws://@p host:@p port/ (the connection completes inside
 * weft_net_conn_run()). Messages longer than @p max_message bytes (0:
 * WEFT_NET_MAX_PACKET) close the connection. *out is the caller's, freed
 * with weft_net_conn_close(). The thread that calls it owns the
 * connection. Returns 0, WEFT_EINVAL, WEFT_EIO (also: built without
 * libwebsockets) or WEFT_ENOMEM.
 */
int weft_net_conn_open(const char *host, uint16_t port, uint32_t max_message,
                       weft_net_conn_fn on_message, void *user,
                       weft_net_conn_t **out);

/**
 * Queues message [@p msg, + @p len) (at most 256 bytes; up to 64
 * messages wait) to be written by weft_net_conn_run(). Owner thread.
 * Returns 0, WEFT_EINVAL or WEFT_ELIMIT (the queue is full).
 */
int weft_net_conn_send(weft_net_conn_t *c, const void *msg, size_t len);

/**
 * Does the connection's I/O for @p wait_ms milliseconds: connects,
 * writes queued messages, calls on_message for each message received.
 * Returns 1 while connected, 0 while still connecting, or WEFT_EIO once
 * the connection failed or closed (the reason in
 * weft_net_conn_error()). Owner thread.
 */
int weft_net_conn_run(weft_net_conn_t *c, uint32_t wait_ms);

/** Why the connection closed ("" while open); the server's close reason
 * when it gave one. Points into the connection, valid until
 * weft_net_conn_close(). Owner thread. */
const char *weft_net_conn_error(const weft_net_conn_t *c);

/** Closes the connection and frees it (NULL is a no-op). Owner thread. */
void weft_net_conn_close(weft_net_conn_t *c);

/* ---- many client sessions in one thread ---------------------------------- */

/** A set of client sessions to one server, sharing one libwebsockets
 * context and serviced by one thread: each session is a WebSocket
 * connection with its own mirror (weft_net_mirror_t), acknowledged
 * packets and an optional check of its mirror against the server's view
 * digest. weft-client runs one; weft-bench's net/load row a thousand.
 * Opaque. */
typedef struct weft_net_client_t weft_net_client_t;

/** Called after each packet a session applied (@p tick: the packet's),
 * from inside weft_net_client_run(). A nonzero return closes that
 * session. */
typedef int (*weft_net_client_packet_fn)(void *user, uint32_t session,
                                         uint64_t tick);

/** Client set settings; zero means the default for every field. */
typedef struct weft_net_client_config_t {
  const char *host;      /**< the server's address; NULL: "127.0.0.1" */
  uint16_t port;         /**< the server's port, required */
  uint32_t sessions;     /**< connections, 1..65535 */
  uint32_t max_entities; /**< per mirror; 0: 65536 */
  uint32_t max_message;  /**< longest server message; 0: WEFT_NET_MAX_PACKET */
  /** When true the set does not acknowledge packets: the callback does,
   * through weft_net_client_send() (weft-client's damaged acks). */
  bool manual_ack;
  weft_net_client_packet_fn on_packet; /**< NULL: none */
  void *user;                          /**< passed to on_packet */
} weft_net_client_config_t;

/** Where a session's view check stands (weft_net_client_check()). */
typedef enum weft_net_check_t {
  WEFT_NET_CHECK_NONE = 0,    /**< not asked */
  WEFT_NET_CHECK_PENDING = 1, /**< asked, no conclusive reply yet */
  WEFT_NET_CHECK_MATCH = 2,   /**< the mirror equals the server's view */
  WEFT_NET_CHECK_DIFFER = 3,  /**< it did not, after retries */
} weft_net_check_t;

/** A session's state, copied by weft_net_client_state(). */
typedef struct weft_net_client_state_t {
  int32_t status;   /**< 0 connecting, 1 open, WEFT_EIO closed or failed */
  bool welcomed;    /**< the welcome arrived (the mirror exists) */
  uint32_t packets; /**< packets applied */
  uint64_t bytes;   /**< bytes of the packets applied */
  uint64_t tick;    /**< the newest packet's tick (0: none) */
  uint32_t check;   /**< a weft_net_check_t */
  uint32_t asked;   /**< digest requests sent by the check */
  uint64_t digest;  /**< MATCH, DIFFER: the mirror's digest */
  uint32_t count;   /**< ... over this many entities */
  uint64_t server_digest; /**< MATCH, DIFFER: the server's */
  uint32_t server_count;  /**< ... over this many */
} weft_net_client_state_t;

/**
 * Opens cfg->sessions connections to ws://host:port/ (they complete
 * inside weft_net_client_run()). Sends nothing: say HELLO and set a view
 * with weft_net_client_send(). The welcome creates each session's
 * mirror; every packet after it is applied and (unless manual_ack)
 * acknowledged. *out is the caller's, freed with weft_net_client_free();
 * the thread that calls this owns the set. Returns 0, WEFT_EINVAL,
 * WEFT_EIO (also: built without libwebsockets) or WEFT_ENOMEM.
 */
int weft_net_client_new(const weft_net_client_config_t *cfg,
                        weft_net_client_t **out);

/**
 * Does the set's I/O for @p wait_ms milliseconds (0: what is ready):
 * connects, writes queued messages, applies received packets and
 * advances the view checks. Returns the sessions open (connected and not
 * closed), or WEFT_EINVAL. Owner thread.
 */
int weft_net_client_run(weft_net_client_t *c, uint32_t wait_ms);

/**
 * Queues message @p m for session @p session (written by the next run).
 * Owner thread. Returns 0, WEFT_EINVAL (a bad message or index),
 * WEFT_EIO (the session is closed) or WEFT_ELIMIT (64 messages wait).
 */
int weft_net_client_send(weft_net_client_t *c, uint32_t session,
                         const weft_net_client_msg_t *m);

/**
 * Queues raw bytes (1..256) for session @p session: a hostile client's
 * malformed or oversized messages, for the server's tests. Owner thread.
 * Returns as weft_net_client_send().
 */
int weft_net_client_send_raw(weft_net_client_t *c, uint32_t session,
                             const void *bytes, size_t len);

/**
 * Starts session @p session's view check: it asks the server for the
 * digest of its view, and once a reply newer than the request arrives,
 * compares it with its mirror's (MATCH). A reply that differs (items
 * still waiting for room in later packets) or none within 30 packets
 * asks again, up to 5 times, then the check says DIFFER. Owner thread.
 * Returns 0, WEFT_EINVAL or WEFT_EIO (closed, or no welcome yet).
 */
int weft_net_client_check(weft_net_client_t *c, uint32_t session);

/** Copies session @p session's state. Owner thread. Returns 0 or
 * WEFT_EINVAL. */
int weft_net_client_state(const weft_net_client_t *c, uint32_t session,
                          weft_net_client_state_t *out);

/** Session @p session's mirror, NULL before the welcome (or for a bad
 * index). Owned by the set, valid until weft_net_client_free(). Owner
 * thread. */
const weft_net_mirror_t *weft_net_client_mirror(const weft_net_client_t *c,
                                                uint32_t session);

/** Why session @p session closed ("" while open; the server's reason when
 * it gave one). Points into the set, valid until weft_net_client_free().
 * Owner thread. */
const char *weft_net_client_error(const weft_net_client_t *c, uint32_t session);

/** Closes every connection and frees the set (NULL is a no-op). Owner
 * thread. */
void weft_net_client_free(weft_net_client_t *c);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_NET_H */
