/* SPDX-License-Identifier: MIT */
/*
 * The distributed driver's life cycle and tick (weft/mpi.h): creation
 * with a collective verdict on the configuration, the step, accessors.
 *
 * Every collective call ends with every rank knowing every rank's result,
 * so that one rank's failure (a bad configuration, an allocation, a
 * system that failed) is an error everywhere instead of a hang.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <weft.h>

#include "core/alloc.h"
#include "mpi/dist.h"

#define MSG_MAX 256

int weft_mpi_grid(uint32_t ranks, uint32_t *px, uint32_t *py) {
  if (ranks == 0 || !px || !py)
    return WEFT_EINVAL;
  weft__domain_grid(ranks, px, py);
  return 0;
}

/*
 * Agrees on a result: every rank returns the failure of the lowest rank
 * that failed (its code, and its message with the rank named), or 0.
 * Collective on comm.
 */
static int agree(weft_world_t *w, MPI_Comm comm, int rank, int rc,
                 const char *msg) {
  int first = rc ? rank : INT32_MAX, lowest = INT32_MAX;
  if (MPI_Allreduce(&first, &lowest, 1, MPI_INT, MPI_MIN, comm) != MPI_SUCCESS)
    return weft_world_fail(w, WEFT_EIO, "weft_mpi: MPI_Allreduce failed");
  if (lowest == INT32_MAX)
    return 0;
  struct {
    int code;
    char msg[MSG_MAX];
  } v;
  memset(&v, 0, sizeof v);
  v.code = rc;
  if (msg)
    snprintf(v.msg, sizeof v.msg, "%s", msg);
  if (MPI_Bcast(&v, (int)sizeof v, MPI_BYTE, lowest, comm) != MPI_SUCCESS)
    return weft_world_fail(w, WEFT_EIO, "weft_mpi: MPI_Bcast failed");
  /* A world's last error starts with its code's name, which
   * weft_world_fail() adds again: said once. */
  const char *text = v.msg, *name = weft_strerror_name(v.code);
  size_t len = strlen(name);
  if (strncmp(text, name, len) == 0 && strncmp(text + len, ": ", 2) == 0)
    text += len + 2;
  return weft_world_fail(w, v.code, "%s (rank %d)", text, lowest);
}

/* A tick's result on every rank: the lowest failing rank's code. */
int weft__agree_code(weft_mpi_t *m, int rc) {
  const char *msg = rc ? weft_world_last_error(m->world) : NULL;
  char copy[MSG_MAX];
  snprintf(copy, sizeof copy, "%s", msg ? msg : weft_strerror(rc));
  return agree(m->world, m->comm, (int)m->rank, rc, copy);
}

/* Finds component @p name, or registers it (size 8: a key; 0: a tag) the
 * way weft_std_register() does, so that either may come first. */
static int find_or_register(weft_world_t *w, const char *name, uint32_t size,
                            weft_component_t *out) {
  if (weft_component_lookup(w, name, out) == 0)
    return 0;
  weft_component_desc_t d = {
      .name = name, .size = size, .alignment = size ? 8 : 0};
  return weft_component_register(w, &d, out);
}

/* FNV-1a over n bytes, continuing from h. */
static uint64_t fnv(uint64_t h, const void *data, size_t n) {
  const uint8_t *p = data;
  for (size_t i = 0; i < n; i++)
    h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

/* A hash of what every rank must agree on: the box, the halo, how often
 * to rebalance, the ghost components' names and sizes, and the codec's
 * table (every component's
 * name, size and fields), so that a record means the same on every rank.
 * 0 when the table cannot be read (a failure then). */
static uint64_t config_hash(const weft_mpi_t *m) {
  float f[5] = {m->dom.min.x, m->dom.min.y, m->dom.max.x, m->dom.max.y,
                m->dom.halo};
  uint64_t h = fnv(0xcbf29ce484222325ull, f, sizeof f);
  /* Ranks that rebalanced or exchanged at different points would
   * mismatch their collectives. */
  h = fnv(h, &m->balance_every, sizeof m->balance_every);
  h = fnv(h, &m->balance_by, sizeof m->balance_by);
  h = fnv(h, &m->placement, sizeof m->placement);
  size_t len = 0;
  weft_entity_codec_table(m->codec, NULL, 0, &len);
  void *table = len ? weft__alloc(NULL, len, 16) : NULL;
  if (!table || weft_entity_codec_table(m->codec, table, len, &len) != 0) {
    weft__free(table, 0, 0);
    return 0;
  }
  h = fnv(h, table, len);
  weft__free(table, 0, 0);
  for (uint32_t i = 0; i < m->gcount; i++) {
    weft_component_info_t info;
    if (weft_component_info(m->world, m->gcomp[i], &info) != 0)
      continue;
    h = fnv(h, info.name, strlen(info.name));
    h = fnv(h, &info.size, sizeof info.size);
  }
  return h;
}

/* Checks the components and fills the driver's ids; msg on failure. */
static int setup_components(weft_mpi_t *m, const weft_mpi_config_t *c,
                            char *msg) {
  weft_world_t *w = m->world;
  weft_component_info_t info;
  int rc = 0;
  m->position = c->position;
  if (!m->position &&
      weft_component_lookup(w, "weft.Position", &m->position) != 0)
    return snprintf(msg, MSG_MAX,
                    "weft_mpi: no position component "
                    "(weft.Position is not registered)"),
           WEFT_EINVAL;
  if (weft_component_info(w, m->position, &info) != 0 || info.size != 8)
    return snprintf(msg, MSG_MAX,
                    "weft_mpi: the position component must "
                    "be two floats (weft_vec2_t)"),
           WEFT_EINVAL;
  m->position_soa = (info.flags & WEFT_COMPONENT_SOA) != 0;
  m->key = c->key;
  m->ghost = c->ghost;
  if (!m->key)
    rc = find_or_register(w, "weft.Key", 8, &m->key);
  if (!rc && !m->ghost)
    rc = find_or_register(w, "weft.Ghost", 0, &m->ghost);
  if (rc)
    return snprintf(msg, MSG_MAX,
                    "weft_mpi: cannot register weft.Key or "
                    "weft.Ghost: %s",
                    weft_world_last_error(w)),
           rc;
  if (weft_component_info(w, m->key, &info) != 0 || info.size != 8 ||
      (info.flags & WEFT_COMPONENT_SOA))
    return snprintf(msg, MSG_MAX,
                    "weft_mpi: the key component must be one "
                    "uint64_t"),
           WEFT_EINVAL;
  if (weft_component_info(w, m->ghost, &info) != 0 || info.size != 0)
    return snprintf(msg, MSG_MAX,
                    "weft_mpi: the ghost component must be a "
                    "tag"),
           WEFT_EINVAL;
  if (c->ghost_count > WEFT_MPI_GHOST_MAX)
    return snprintf(msg, MSG_MAX,
                    "weft_mpi: %u ghost components, at most "
                    "%u",
                    c->ghost_count, WEFT_MPI_GHOST_MAX),
           WEFT_EINVAL;
  m->gcomp[0] = m->position;
  m->gsize[0] = 8;
  m->gcount = 1;
  m->grecord = 24; /* the record's head, then Position */
  for (uint32_t i = 0; i < c->ghost_count; i++) {
    weft_component_t g = c->ghost_components[i];
    if (g == m->position)
      continue;
    if (weft_component_info(w, g, &info) != 0 || g == m->key || g == m->ghost ||
        (info.flags & WEFT_COMPONENT_RELATION))
      return snprintf(msg, MSG_MAX,
                      "weft_mpi: ghost component %u is "
                      "unknown, a relation, the key or the "
                      "ghost tag",
                      g),
             WEFT_EINVAL;
    m->gcomp[m->gcount] = g;
    m->gsize[m->gcount++] = info.size;
    m->grecord += info.size;
  }
  return 0;
}

static int alloc_buffers(weft_mpi_t *m) {
  size_t P = m->size;
  m->out_mig = weft__calloc(NULL, sizeof(weft__mbuf_t) * P * 4, 16);
  m->hdr_out =
      weft__calloc(NULL, sizeof(uint64_t) * P * WEFT__HDR_WORDS * 2, 16);
  m->reqs = weft__alloc(NULL, sizeof(MPI_Request) * P * 4, 16);
  m->hist = weft__alloc(NULL, sizeof(uint64_t) * 2 * WEFT__BALANCE_BINS, 16);
  if (!m->out_mig || !m->hdr_out || !m->reqs || !m->hist)
    return WEFT_ENOMEM;
  m->out_ghost = m->out_mig + P;
  m->in_mig = m->out_mig + 2 * P;
  m->in_ghost = m->out_mig + 3 * P;
  m->hdr_in = m->hdr_out + P * WEFT__HDR_WORDS;
  /* The neighbours' buffers start with room for a few dozen records: a
   * corner neighbour may get its first ghost late in a run, and a steady
   * run should not allocate then. */
  uint32_t nb[9];
  uint32_t n = weft__domain_neighbours(&m->dom, m->rank, nb);
  nb[n++] = m->rank;
  int rc = weft__mbuf_reserve(&m->scratch, m->grecord);
  for (uint32_t i = 0; i < n && !rc; i++) {
    weft__mbuf_t *b[4] = {&m->out_mig[nb[i]], &m->out_ghost[nb[i]],
                          &m->in_mig[nb[i]], &m->in_ghost[nb[i]]};
    for (int k = 0; k < 4 && !rc; k++)
      rc = weft__mbuf_reserve(b[k], 2048);
  }
  return rc;
}

/* "weft.mpi.exchange": the exchange at its place in the tick. */
static int exchange_run(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  (void)chunk;
  weft_mpi_t *m = ctx->user;
  double t0 = MPI_Wtime(), c0 = weft__cpu_now();
  int rc = weft__exchange(m);
  m->stats.exchange_s += MPI_Wtime() - t0;
  m->exchange_cpu_s += weft__cpu_now() - c0;
  return rc;
}

/* The split exchange: "weft.mpi.exchange" posts the round,
 * "weft.mpi.ghosts" completes it, and the overlap systems run between. */
static int exchange_post_run(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  (void)chunk;
  weft_mpi_t *m = ctx->user;
  double t0 = MPI_Wtime(), c0 = weft__cpu_now();
  int rc = weft__exchange_post(m);
  m->stats.exchange_s += MPI_Wtime() - t0;
  m->exchange_cpu_s += weft__cpu_now() - c0;
  return rc;
}

static int exchange_complete_run(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  (void)chunk;
  weft_mpi_t *m = ctx->user;
  double t0 = MPI_Wtime(), c0 = weft__cpu_now();
  int rc = weft__exchange_complete(m);
  m->stats.exchange_s += MPI_Wtime() - t0;
  m->exchange_cpu_s += weft__cpu_now() - c0;
  return rc;
}

/* Copies the non-NULL names of @p names into @p out, each into the
 * placement hash *h behind @p mark; returns the count. */
static uint32_t take_names(const char *const *names, const char **out,
                           const char *mark, uint64_t *h) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < WEFT_SYSTEM_MAX_ORDER; i++)
    if (names[i]) {
      out[n++] = names[i];
      *h = fnv(fnv(*h, mark, 1), names[i], strlen(names[i]) + 1);
    }
  return n;
}

/* Registers "weft.mpi.exchange" where the configuration puts it (and,
 * split, "weft.mpi.ghosts"), and notes the placement (phase and names) in
 * m->placement for the configuration's hash: ranks that exchanged at
 * different points of the tick would mismatch their collectives. */
static int register_exchange(weft_mpi_t *m, const weft_mpi_config_t *c) {
  weft_system_desc_t d = {.name = "weft.mpi.exchange",
                          .phase = c->exchange_phase,
                          .flags =
                              WEFT_SYSTEM_EXCLUSIVE | WEFT_SYSTEM_COMMIT_AFTER,
                          .run = exchange_run,
                          .user = m};
  weft_system_desc_t g = d;
  uint64_t h = fnv(0xcbf29ce484222325ull, &d.phase, sizeof d.phase);
  uint32_t na = take_names(c->exchange_after, d.after, "<", &h);
  uint32_t nb = take_names(c->exchange_before, d.before, ">", &h);
  uint32_t no = take_names(c->exchange_overlap, g.after, "~", &h);
  if (na + nb + no == 0)
    return 0;
  int rc = 0;
  if (no) {
    /* post -> overlap systems -> completion -> the readers */
    memcpy(g.before, d.before, sizeof g.before);
    memcpy(d.before, g.after, sizeof d.before);
    d.run = exchange_post_run;
    g.name = "weft.mpi.ghosts";
    g.run = exchange_complete_run;
    rc = weft_system_register(m->world, &g, &m->ghosts_sys);
    m->split = rc == 0;
  }
  if (!rc)
    rc = weft_system_register(m->world, &d, &m->exchange_sys);
  m->in_tick = rc == 0;
  m->placement = m->in_tick ? h : 0;
  return rc;
}

/* Everything weft_mpi_new() checks and builds on one rank. */
static int setup(weft_mpi_t *m, const weft_mpi_config_t *c, char *msg) {
  int rc = weft__domain_init(&m->dom, m->size, c->min, c->max, c->halo, msg,
                             MSG_MAX);
  if (!rc && (unsigned)c->balance_by > WEFT_MPI_BALANCE_TIME) {
    snprintf(msg, MSG_MAX, "weft_mpi: unknown balance_by %u",
             (unsigned)c->balance_by);
    rc = WEFT_EINVAL;
  }
  if (!rc)
    rc = setup_components(m, c, msg);
  if (!rc) {
    weft_query_desc_t q = {.include = {m->key, m->position},
                           .exclude = {m->ghost}};
    rc = weft_query_create(m->world, &q, &m->owned);
  }
  if (!rc)
    rc = weft__record_init(m);
  if (!rc)
    rc = alloc_buffers(m);
  if (!rc)
    rc = register_exchange(m, c);
  if (rc && !msg[0])
    snprintf(msg, MSG_MAX, "weft_mpi: %s", weft_world_last_error(m->world));
  return rc;
}

/* The configuration must be the same on every rank: the smallest and the
 * largest hash over the ranks that set up agree. (A rank that failed
 * already sends neutral values; its failure wins in agree().) */
static int check_same(const weft_mpi_t *m, MPI_Comm comm, int rc, char *msg) {
  uint64_t h = rc ? 0 : config_hash(m);
  if (!rc && h == 0) {
    snprintf(msg, MSG_MAX, "weft_mpi: cannot read the entity codec's table");
    rc = WEFT_ENOMEM;
  }
  uint64_t v[2] = {rc ? UINT64_MAX : h, rc ? UINT64_MAX : ~h}, r[2];
  if (MPI_Allreduce(v, r, 2, MPI_UINT64_T, MPI_MIN, comm) != MPI_SUCCESS)
    return WEFT_EIO;
  uint64_t lo = r[0], hi = ~r[1];
  if (!rc && lo != hi) {
    snprintf(msg, MSG_MAX,
             "weft_mpi: the configuration (box, halo, ghost components, "
             "component layouts) differs between ranks");
    return WEFT_EINVAL;
  }
  return rc;
}

int weft_mpi_new(weft_world_t *world, MPI_Comm comm,
                 const weft_mpi_config_t *config, weft_mpi_t **out) {
  if (out)
    *out = NULL;
  weft_mpi_t *m = weft__calloc(NULL, sizeof *m, 16);
  char msg[MSG_MAX] = "";
  int rc = m ? 0 : WEFT_ENOMEM, rank = 0, size = 1;
  if (m)
    m->comm = MPI_COMM_NULL;
  if (m && MPI_Comm_dup(comm, &m->comm) != MPI_SUCCESS) {
    weft__free(m, 0, 0);
    return weft_world_fail(world, WEFT_EINVAL, "weft_mpi_new: bad comm");
  }
  /* MPI errors on the driver's messages come back as codes (checked
   * everywhere) instead of aborting the job. */
  if (m)
    MPI_Comm_set_errhandler(m->comm, MPI_ERRORS_RETURN);
  MPI_Comm c = m ? m->comm : comm;
  MPI_Comm_rank(c, &rank);
  MPI_Comm_size(c, &size);
  if (!rc && (!world || !config || !out)) {
    snprintf(msg, sizeof msg,
             "weft_mpi_new: world, config and out must not be NULL");
    rc = WEFT_EINVAL;
  }
  if (m) {
    m->world = world;
    m->rank = (uint32_t)rank;
    m->size = (uint32_t)size;
    if (!rc) {
      m->tick = config->tick;
      m->balance_every = config->balance_every;
      m->balance_by = config->balance_by;
      m->cost = config->cost;
      m->cost_user = config->cost_user;
      m->tick_user = config->tick_user;
      rc = setup(m, config, msg);
    }
  }
  rc = check_same(m, c, rc, msg);
  rc = agree(world, c, rank, rc, rc ? msg : NULL);
  if (rc) {
    weft_mpi_free(m);
    return rc;
  }
  *out = m;
  return 0;
}

void weft_mpi_free(weft_mpi_t *m) {
  if (!m)
    return;
  if (m->in_tick)
    weft_system_remove(m->world, m->exchange_sys);
  if (m->split)
    weft_system_remove(m->world, m->ghosts_sys);
  weft__exchange_fini(m);
  if (m->owned)
    weft_query_destroy(m->owned);
  weft__record_fini(m);
  if (m->out_mig)
    for (uint32_t i = 0; i < 4 * m->size; i++)
      weft__mbuf_free(&m->out_mig[i]);
  weft__mbuf_free(&m->scratch);
  weft__free(m->out_mig, 0, 0);
  weft__free(m->hdr_out, 0, 0);
  weft__free(m->reqs, 0, 0);
  weft__free(m->hist, 0, 0);
  weft__free(m->leaving, 0, 0);
  weft__free(m->stale, 0, 0);
  weft__keymap_free(&m->ghosts);
  weft__domain_free(&m->dom);
  if (m->comm != MPI_COMM_NULL)
    MPI_Comm_free(&m->comm);
  weft__free(m, 0, 0);
}

uint32_t weft_mpi_rank(const weft_mpi_t *m) {
  return m ? m->rank : 0;
}

uint32_t weft_mpi_size(const weft_mpi_t *m) {
  return m ? m->size : 0;
}

int weft_mpi_region(const weft_mpi_t *m, uint32_t rank, weft_vec2_t *min,
                    weft_vec2_t *max) {
  if (!m || !min || !max || rank >= m->size)
    return WEFT_EINVAL;
  weft__domain_region(&m->dom, rank, min, max);
  return 0;
}

uint32_t weft_mpi_owner(const weft_mpi_t *m, float x, float y) {
  return m ? weft__domain_owner(&m->dom, x, y) : 0;
}

uint32_t weft_mpi_neighbours(const weft_mpi_t *m, uint32_t out[8]) {
  return m && out ? weft__domain_neighbours(&m->dom, m->rank, out) : 0;
}

int weft_mpi_exchange(weft_mpi_t *m) {
  if (!m)
    return WEFT_EINVAL;
  double t0 = MPI_Wtime();
  int rc = weft__exchange(m);
  m->stats.exchange_s += MPI_Wtime() - t0;
  return weft__agree_code(m, rc);
}

int weft_mpi_step(weft_mpi_t *m, double dt) {
  if (!m)
    return WEFT_EINVAL;
  double t0 = MPI_Wtime();
  int rc = 0;
  if (m->balance_every && m->stats.ticks > 0 &&
      m->stats.ticks % m->balance_every == 0)
    rc = weft_mpi_rebalance(m);
  if (!rc && !m->in_tick)
    rc = weft__exchange(m);
  double t1 = MPI_Wtime();
  m->stats.exchange_s += t1 - t0;
  double inside = m->stats.exchange_s; /* the tick's own exchange, if any */
  double c1 = weft__cpu_now(), inside_cpu = m->exchange_cpu_s;
  const uint64_t round = m->round;
  if (!rc) {
    rc = m->tick ? m->tick(m->tick_user, m->world, dt)
                 : weft_world_progress(m->world, dt);
    /* A tick that stopped before its exchange ran (a failure in an
     * earlier phase, or in the tick callback before the pipeline) leaves
     * the other ranks waiting in theirs: they are told. A failure in the
     * exchange's own phase does not stop it: the pipeline runs every
     * segment of a phase and reports the first failure after. (Checked
     * for the tick's first fixed step, the only one when dt is the fixed
     * step.) */
    if (rc && m->in_tick && (m->round == round || m->posted))
      (void)weft__exchange_abort(m, rc);
  }
  m->stats.tick_s += MPI_Wtime() - t1 - (m->stats.exchange_s - inside);
  m->tick_cpu_s += weft__cpu_now() - c1 - (m->exchange_cpu_s - inside_cpu);
  m->stats.ticks++;
  return weft__agree_code(m, rc);
}

void weft_mpi_stats(const weft_mpi_t *m, weft_mpi_stats_t *out) {
  if (!out)
    return;
  memset(out, 0, sizeof *out);
  if (m)
    *out = m->stats;
}
