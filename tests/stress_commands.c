/* SPDX-License-Identifier: MIT */
/*
 * stress_commands.c: randomized determinism test of command buffers.
 *
 * A seeded generator writes a program of transactions. Each transaction is
 * a set of jobs; a job owns one ordering context (its commands carry keys
 * WEFT_CMD_KEY(context, chunk, row)) and records spawns with values,
 * despawns, add, set, remove, enable and disable, including commands that
 * name entities spawned earlier in the same transaction (pending handles,
 * from its own spawns or from jobs of an earlier recording round, which may
 * sit in other buffers), stale handles (dead entities, pending handles of
 * the previous transaction, the null handle) and now and then a query-wide
 * set, remove or despawn.
 *
 * The same program runs on several worlds ("distributions"), one per
 * buffer count (1, 2, 3, 4 and 8). Each transaction spreads the jobs over
 * the buffers differently (round-robin, random, reversed, in blocks), and
 * every buffer is recorded by its own thread; the threads start each round
 * together at a barrier. After each weft_world_apply() the test asserts
 * that every world has the same digest and statistics and that every
 * pending handle resolves to the same entity, then compares the worlds
 * with a single-threaded oracle (plain arrays: alive flag, present and
 * disabled bits and value bytes per entity) that applies the transaction
 * with the documented rules: merge order is key then record order; spawns
 * exist from the start of the transaction; per entity, despawn cancels
 * everything, add on a present component does nothing, set adds what is
 * missing, remove discards earlier writes, enable/disable only touch a
 * present component and a stale handle is a no-op; query-wide set/remove
 * apply afterwards, in call order, to the record-time members still alive,
 * and a query-wide despawn despawns each record-time member. Some
 * threads first record throw-away commands and weft_cmdbuf_clear() them,
 * which must leave no trace.
 *
 * Environment:
 *   WEFT_CMD_SEED       PRNG seed (default 0xc0ffee5eed0c3d5b)
 *   WEFT_CMD_OPS        commands per run (default 120000): 3/4 go to the
 *                       default-world test, 1/4 to the small-chunk one
 *   WEFT_CMD_TXN_OPS    commands per transaction (default 6000)
 * A failure prints the seed, the transaction, the distribution and the
 * commands of the transaction that touch the entity in question.
 */
#include "support/weft_test.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <weft.h>

#define DEFAULT_SEED UINT64_C(0xc0ffee5eed0c3d5b)
#define DEFAULT_OPS 120000u
#define DEFAULT_TXN_OPS 6000u
#define ROUNDS 3u /* recording rounds per transaction */
#define MAXBUF 8u /* buffers of the widest distribution */
#define NDIST 5u  /* distributions: 1, 2, 3, 4 and 8 buffers */
#define VMAX 24u  /* largest component value */
#define NOVAL UINT32_MAX
#define DEAD_RING 4096u
#define WORLD_TAG 0x5c

/* ------------------------------------------------------------------------ */
/* Components and queries                                                   */
/* ------------------------------------------------------------------------ */

/* Model components: A u32, B 24 bytes, S field-level SoA (16 bytes), P u64,
 * T a tag. */
enum { C_A, C_B, C_S, C_P, C_T, NC };

static const char *const cname[NC] = {"A", "B", "S", "P", "T"};
static const uint32_t csize[NC] = {4, 24, 16, 8, 0};

#define BIT(c) (1u << (c))

typedef struct qspec_t {
  uint8_t inc, exc, any, dis;
  uint32_t flags;
} qspec_t;

static const qspec_t qspecs[] = {
    {.inc = BIT(C_T)},
    {.inc = BIT(C_A), .exc = BIT(C_B)},
    {.inc = BIT(C_S), .flags = WEFT_QUERY_MATCH_DISABLED},
    {.any = BIT(C_B) | BIT(C_P), .dis = BIT(C_A)},
    {.inc = BIT(C_T) | BIT(C_P), .exc = BIT(C_S)},
    {.dis = BIT(C_S), .any = BIT(C_T) | BIT(C_A)},
};

#define NQ (sizeof qspecs / sizeof qspecs[0])

/* The query rules of query.h, over model bits. */
static bool q_match(const qspec_t *q, uint32_t present, uint32_t disabled) {
  uint32_t eff =
      (q->flags & WEFT_QUERY_MATCH_DISABLED) ? present : (present & ~disabled);
  if ((eff & q->inc) != q->inc || (eff & q->exc) != 0) {
    return false;
  }
  if (q->any != 0 && (eff & q->any) == 0) {
    return false;
  }
  return (present & disabled & q->dis) == q->dis;
}

/* ------------------------------------------------------------------------ */
/* The program                                                              */
/* ------------------------------------------------------------------------ */

enum {
  OP_SPAWN = 1,
  OP_DESPAWN,
  OP_ADD,
  OP_SET,
  OP_REMOVE,
  OP_ENABLE,
  OP_DISABLE,
  OP_SET_Q,
  OP_REMOVE_Q,
  OP_DESPAWN_Q
};

static const char *const op_name[] = {
    "?",      "spawn",   "despawn",   "add",          "set",          "remove",
    "enable", "disable", "set_query", "remove_query", "despawn_query"};

/* How a command names its entity. */
enum {
  TK_NONE,
  TK_MID,  /* a committed entity (live or dead) by model id */
  TK_PEND, /* the pending handle of spawn #target of this transaction */
  TK_OLD,  /* the pending handle of spawn #target of the previous one */
  TK_NULL  /* WEFT_ENTITY_NULL */
};

typedef struct pcmd_t {
  uint64_t key;
  uint32_t target; /* by tk; the query index of a query command */
  uint32_t val;    /* value offset in the pool, NOVAL: NULL */
  uint32_t aux;    /* spawn index (spawn); first member (query commands) */
  uint32_t naux;   /* members (query commands) */
  uint32_t job;
  uint8_t op, tk, comp, nsc;
  uint8_t sc[NC];  /* spawn: components in list order */
  uint32_t sv[NC]; /* spawn: value offsets */
} pcmd_t;

typedef struct job_t {
  uint32_t first, n;
  uint32_t ctx;
  uint32_t round;
} job_t;

typedef struct txn_t {
  pcmd_t *cmds;
  uint32_t ncmds, cmds_cap;
  job_t *jobs;
  uint32_t njobs, jobs_cap;
  uint32_t *spawn_mid; /* model id of each spawn */
  uint32_t nspawns, spawns_cap;
  uint32_t *mem; /* query members (model ids) */
  uint32_t nmem, mem_cap;
  unsigned char *vals;
  uint32_t nvals, vals_cap;
} txn_t;

/* ------------------------------------------------------------------------ */
/* The oracle                                                               */
/* ------------------------------------------------------------------------ */

typedef struct ment_t {
  uint8_t alive;
  uint8_t present;
  uint8_t disabled;
  uint8_t despawned; /* a despawn is staged in the current transaction */
  uint32_t born;     /* transaction that spawned it */
  unsigned char val[NC][VMAX];
} ment_t;

typedef struct kidx_t {
  uint64_t key;
  uint32_t idx;
  uint32_t pad;
} kidx_t;

typedef struct model_t {
  const char *name;
  uint64_t seed;
  uint64_t rng;
  uint32_t txn; /* current transaction number */
  uint32_t pop_lo, pop_hi;

  ment_t *ents;
  weft_entity_t *hndl; /* world handle per model id (0: none yet) */
  uint32_t nents, ents_cap;
  uint32_t *live; /* alive model ids at the start of the transaction */
  uint32_t nlive, live_cap;
  uint32_t dead[DEAD_RING];
  uint32_t ndead, dead_pos;
  uint32_t prev_nspawns;
  uint32_t *seen; /* per spawn: merge position reached (oracle stats) */

  txn_t tx;
  kidx_t *order; /* merge order of the current transaction */
  uint32_t order_cap;

  /* coverage */
  uint64_t n_cmds, n_spawned, n_cancelled, n_despawned, n_stale, n_ignored;
  uint64_t n_pend_refs, n_pend_early, n_q, n_q_members, n_q_skipped;
  uint64_t n_unsorted_jobs, n_txns;
} model_t;

/* ------------------------------------------------------------------------ */
/* Helpers                                                                  */
/* ------------------------------------------------------------------------ */

/* Grows *p (elements of size sz) to hold at least need. */
static void grow(void *pp, uint32_t *cap, uint32_t need, size_t sz) {
  void **p = (void **)pp;
  if (need <= *cap) {
    return;
  }
  uint32_t n = *cap ? *cap : 256;
  while (n < need) {
    n *= 2;
  }
  void *q = realloc(*p, (size_t)n * sz);
  assert_non_null(q);
  *p = q;
  *cap = n;
}

static const unsigned char tag_dummy[1] = {0};

/* ------------------------------------------------------------------------ */
/* Failure reporting                                                        */
/* ------------------------------------------------------------------------ */

static uint32_t cmd_mid(const model_t *m, const pcmd_t *c) {
  if (c->tk == TK_MID) {
    return c->target;
  }
  if (c->tk == TK_PEND) {
    return m->tx.spawn_mid[c->target];
  }
  if (c->op == OP_SPAWN) {
    return m->tx.spawn_mid[c->aux];
  }
  return UINT32_MAX;
}

static bool cmd_touches(const model_t *m, const pcmd_t *c, uint32_t mid) {
  if (c->op >= OP_SET_Q) {
    for (uint32_t i = 0; i < c->naux; i++) {
      if (m->tx.mem[c->aux + i] == mid) {
        return true;
      }
    }
    return false;
  }
  return cmd_mid(m, c) == mid;
}

/* Prints the commands of this transaction that touch model entity mid, in
 * merge order. */
static void dump_entity(const model_t *m, uint32_t mid) {
  if (mid >= m->nents) {
    return;
  }
  const ment_t *e = &m->ents[mid];
  print_error("  entity m%" PRIu32 " (born in txn %" PRIu32
              ", handle 0x%016" PRIx64
              "): oracle alive %u present 0x%x disabled 0x%x\n",
              mid, e->born, m->hndl[mid], e->alive, e->present, e->disabled);
  print_error("  its commands in merge order:\n");
  uint32_t shown = 0;
  for (uint32_t i = 0; i < m->tx.ncmds && shown < 48; i++) {
    const pcmd_t *c = &m->tx.cmds[m->order[i].idx];
    if (!cmd_touches(m, c, mid)) {
      continue;
    }
    const job_t *j = &m->tx.jobs[c->job];
    char what[64] = "";
    if (c->op == OP_SPAWN) {
      size_t len = 0;
      for (uint32_t k = 0; k < c->nsc && len + 8 < sizeof what; k++) {
        len += (size_t)snprintf(what + len, sizeof what - len, "%s%s%s",
                                k ? "," : "", cname[c->sc[k]],
                                c->sv[k] == NOVAL ? "=0" : "");
      }
    } else if (c->op >= OP_SET_Q) {
      snprintf(what, sizeof what, "query %" PRIu32 " (%" PRIu32 " members)",
               c->target, c->naux);
    }
    print_error("    #%" PRIu32 " key 0x%016" PRIx64 " job %" PRIu32
                " round %" PRIu32 ": %s %s %s%s\n",
                m->order[i].idx, c->key, c->job, j->round, op_name[c->op],
                c->op == OP_SPAWN ? "" : cname[c->comp % NC],
                c->tk == TK_PEND ? "(pending) " : "",
                c->op == OP_SPAWN || c->op >= OP_SET_Q ? what
                : c->val == NOVAL                      ? "(no value)"
                                                       : "");
    shown++;
  }
}

static void fail_at(const model_t *m, const char *dist, uint32_t mid, int line,
                    const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static void fail_at(const model_t *m, const char *dist, uint32_t mid, int line,
                    const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  print_error("\n%s: MISMATCH in transaction %" PRIu32
              " (stress_commands.c:%d), distribution %s\n  %s\n",
              m->name, m->txn, line, dist ? dist : "-", msg);
  if (mid != UINT32_MAX) {
    dump_entity(m, mid);
  }
  print_error("reproduce: WEFT_CMD_SEED=0x%016" PRIx64
              " with the same WEFT_CMD_OPS / WEFT_CMD_TXN_OPS\n",
              m->seed);
  fail();
}

#define CHECK(m, dist, mid, cond, ...)                                         \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fail_at((m), (dist), (mid), __LINE__, __VA_ARGS__);                      \
    }                                                                          \
  } while (0)

/* ------------------------------------------------------------------------ */
/* Generator                                                                */
/* ------------------------------------------------------------------------ */

static uint32_t new_value(model_t *m, uint32_t c) {
  txn_t *tx = &m->tx;
  uint32_t size = csize[c];
  if (size == 0) {
    return NOVAL;
  }
  grow(&tx->vals, &tx->vals_cap, tx->nvals + size, 1);
  uint32_t off = tx->nvals;
  for (uint32_t i = 0; i < size; i += 8) {
    uint64_t x = wt_splitmix64(&m->rng);
    /* Small values now and then, zero included. */
    if (wt_draw_below(&m->rng, 8) == 0) {
      x &= 3;
    }
    memcpy(tx->vals + off + i, &x, size - i < 8 ? size - i : 8);
  }
  tx->nvals += size;
  return off;
}

static pcmd_t *new_cmd(model_t *m, uint32_t job, uint64_t key, uint32_t op) {
  txn_t *tx = &m->tx;
  grow(&tx->cmds, &tx->cmds_cap, tx->ncmds + 1, sizeof *tx->cmds);
  pcmd_t *c = &tx->cmds[tx->ncmds++];
  memset(c, 0, sizeof *c);
  c->key = key;
  c->job = job;
  c->op = (uint8_t)op;
  c->val = NOVAL;
  return c;
}

static uint32_t new_entity(model_t *m) {
  uint32_t cap = m->ents_cap;
  grow(&m->ents, &m->ents_cap, m->nents + 1, sizeof *m->ents);
  if (m->ents_cap != cap) {
    m->hndl = realloc(m->hndl, (size_t)m->ents_cap * sizeof *m->hndl);
    assert_non_null(m->hndl);
  }
  uint32_t mid = m->nents++;
  memset(&m->ents[mid], 0, sizeof m->ents[mid]);
  m->ents[mid].born = m->txn;
  m->hndl[mid] = WEFT_ENTITY_NULL;
  return mid;
}

/* Picks the entity a per-entity command names. Pending spawns of this
 * transaction may come from the job itself (spawns >= own0) or from jobs of
 * earlier rounds (spawns < round0): those were recorded before this job's
 * round started. */
static void pick_target(model_t *m, pcmd_t *c, uint32_t round0, uint32_t own0) {
  txn_t *tx = &m->tx;
  uint32_t own = tx->nspawns - own0;
  uint32_t r = wt_draw_below(&m->rng, 100);
  if (r < 58 && m->nlive > 0) {
    c->tk = TK_MID;
    c->target = m->live[wt_draw_below(&m->rng, m->nlive)];
  } else if (r < 73 && round0 > 0) {
    c->tk = TK_PEND;
    c->target = wt_draw_below(&m->rng, round0);
  } else if (r < 85 && own > 0) {
    c->tk = TK_PEND;
    c->target = own0 + wt_draw_below(&m->rng, own);
  } else if (r < 93 && m->ndead > 0) {
    c->tk = TK_MID;
    c->target = m->dead[wt_draw_below(&m->rng, m->ndead)];
  } else if (r < 98 && m->prev_nspawns > 0) {
    c->tk = TK_OLD;
    c->target = wt_draw_below(&m->rng, m->prev_nspawns);
  } else if (r >= 99 && m->nlive > 0) {
    c->tk = TK_MID;
    c->target = m->live[wt_draw_below(&m->rng, m->nlive)];
  } else if (r >= 99 && own > 0) {
    c->tk = TK_PEND;
    c->target = own0;
  } else {
    c->tk = TK_NULL;
  }
}

static uint32_t members_of(model_t *m, uint32_t q, bool store) {
  txn_t *tx = &m->tx;
  uint32_t n = 0;
  for (uint32_t i = 0; i < m->nlive; i++) {
    const ment_t *e = &m->ents[m->live[i]];
    if (q_match(&qspecs[q], e->present, e->disabled)) {
      if (store) {
        grow(&tx->mem, &tx->mem_cap, tx->nmem + 1, sizeof *tx->mem);
        tx->mem[tx->nmem++] = m->live[i];
      }
      n++;
    }
  }
  return n;
}

/* One command of a job. *est tracks the population. */
static void gen_cmd(model_t *m, uint32_t job, uint64_t key, uint32_t round0,
                    uint32_t own0, int64_t *est) {
  txn_t *tx = &m->tx;
  uint32_t tgt = (m->txn / 4) % 2 ? m->pop_lo : m->pop_hi;
  bool grow_pop = *est < (int64_t)tgt;
  uint32_t w_spawn = grow_pop ? 260 : 70;
  uint32_t w_despawn = grow_pop ? 50 : 170;
  uint32_t r = wt_draw_below(&m->rng, 1000);
  if (r < 3) {
    /* Query-wide commands: about 3 in 1000. */
    uint32_t q = wt_draw_below(&m->rng, NQ);
    uint32_t kind = wt_draw_below(&m->rng, 5);
    uint32_t n = members_of(m, q, false);
    uint32_t op = kind < 2 ? OP_SET_Q : kind < 4 ? OP_REMOVE_Q : OP_DESPAWN_Q;
    if (op == OP_DESPAWN_Q && n > m->nlive / 12 + 4) {
      op = OP_REMOVE_Q; /* keep the population */
    }
    pcmd_t *c = new_cmd(m, job, key, op);
    c->target = q;
    c->aux = tx->nmem;
    c->naux = members_of(m, q, true);
    c->comp = (uint8_t)wt_draw_below(&m->rng, NC);
    if (op == OP_SET_Q) {
      c->val = new_value(m, c->comp);
    }
    if (op == OP_DESPAWN_Q) {
      *est -= n;
    }
    return;
  }
  r = wt_draw_below(&m->rng, 1000);
  if (r < w_spawn) {
    pcmd_t *c = new_cmd(m, job, key, OP_SPAWN);
    grow(&tx->spawn_mid, &tx->spawns_cap, tx->nspawns + 1,
         sizeof *tx->spawn_mid);
    c->aux = tx->nspawns;
    tx->spawn_mid[tx->nspawns++] = new_entity(m);
    uint8_t perm[NC];
    for (uint32_t i = 0; i < NC; i++) {
      perm[i] = (uint8_t)i;
    }
    for (uint32_t i = NC - 1; i > 0; i--) {
      uint32_t k = wt_draw_below(&m->rng, i + 1);
      uint8_t t = perm[i];
      perm[i] = perm[k];
      perm[k] = t;
    }
    for (uint32_t i = 0; i < NC; i++) {
      if (wt_draw_below(&m->rng, 100) < 45) {
        uint32_t comp = perm[i];
        c->sc[c->nsc] = (uint8_t)comp;
        c->sv[c->nsc] =
            wt_draw_below(&m->rng, 4) == 0 ? NOVAL : new_value(m, comp);
        c->nsc++;
      }
    }
    *est += 1;
    return;
  }
  r -= w_spawn;
  uint32_t op;
  if (r < w_despawn) {
    op = OP_DESPAWN;
    *est -= 1;
  } else {
    uint32_t k = wt_draw_below(&m->rng, 100);
    op = k < 22   ? OP_ADD
         : k < 52 ? OP_SET
         : k < 72 ? OP_REMOVE
         : k < 84 ? OP_ENABLE
                  : OP_DISABLE;
  }
  pcmd_t *c = new_cmd(m, job, key, op);
  pick_target(m, c, round0, own0);
  if (op != OP_DESPAWN) {
    c->comp = (uint8_t)wt_draw_below(&m->rng, NC);
    if (op == OP_SET || (op == OP_ADD && wt_draw_below(&m->rng, 10) < 7)) {
      c->val = new_value(m, c->comp);
    }
  }
}

/* Generates transaction m->txn from the oracle's state at its start. */
static void gen_txn(model_t *m, uint32_t txn_ops) {
  txn_t *tx = &m->tx;
  tx->ncmds = tx->njobs = tx->nspawns = tx->nmem = tx->nvals = 0;
  /* Contexts increase with the job index in even transactions (ascending
   * buffers stay sorted, pending handles are named after their spawn) and
   * are scrambled in odd ones. Both maps are injective below 2^24. */
  bool scrambled = m->txn % 2 != 0;
  uint32_t salt = wt_draw_below(&m->rng, 1u << 24);
  int64_t est = m->nlive;
  for (uint32_t round = 0; round < ROUNDS; round++) {
    uint32_t round0 = tx->nspawns;
    uint32_t goal =
        round + 1 == ROUNDS ? txn_ops : txn_ops / ROUNDS * (round + 1);
    while (tx->ncmds < goal) {
      grow(&tx->jobs, &tx->jobs_cap, tx->njobs + 1, sizeof *tx->jobs);
      uint32_t j = tx->njobs++;
      job_t *job = &tx->jobs[j];
      job->first = tx->ncmds;
      job->round = round;
      job->ctx = scrambled ? ((j * 0x9e3779b1u) ^ salt) & 0xffffffu : j * 3 + 1;
      uint32_t n = wt_draw_below(&m->rng, 20) == 0
                       ? 1 + wt_draw_below(&m->rng, 600)
                       : 1 + wt_draw_below(&m->rng, 100);
      uint32_t mode =
          wt_draw_below(&m->rng, 4); /* 0-1 ascending, 2 random, 3 one */
      uint32_t chunk = wt_draw_below(&m->rng, 64),
               row = wt_draw_below(&m->rng, 1000);
      uint32_t own0 = tx->nspawns;
      if (mode == 2) {
        m->n_unsorted_jobs++;
      }
      for (uint32_t i = 0; i < n; i++) {
        if (mode == 2) {
          chunk = wt_draw_below(&m->rng, 256);
          row = wt_draw_below(&m->rng, 65536);
        } else if (mode < 2 && wt_draw_below(&m->rng, 2) == 0) {
          row += 1 + wt_draw_below(&m->rng, 50);
          if (row > 0xffff) {
            chunk++;
            row = 0;
          }
        }
        gen_cmd(m, j, WEFT_CMD_KEY(job->ctx, chunk, row), round0, own0, &est);
      }
      tx->jobs[j].n = tx->ncmds - tx->jobs[j].first;
    }
  }
}

/* ------------------------------------------------------------------------ */
/* Oracle: applying a transaction                                           */
/* ------------------------------------------------------------------------ */

static int kidx_cmp(const void *a, const void *b) {
  const kidx_t *x = a, *y = b;
  if (x->key != y->key) {
    return x->key < y->key ? -1 : 1;
  }
  return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static void m_write(ment_t *e, uint32_t c, const model_t *m, uint32_t val) {
  memset(e->val[c], 0, VMAX);
  if (val != NOVAL) {
    memcpy(e->val[c], m->tx.vals + val, csize[c]);
  }
}

/* One per-entity operation, applied in sequence (the documented fold). */
static void m_op(model_t *m, ment_t *e, uint32_t op, uint32_t c, uint32_t val) {
  uint32_t bit = BIT(c);
  bool has = (e->present & bit) != 0;
  switch (op) {
  case OP_ADD:
    if (!has) {
      e->present |= bit;
      e->disabled &= ~bit;
      m_write(e, c, m, val);
    }
    break;
  case OP_SET:
    if (!has) {
      e->present |= bit;
      e->disabled &= ~bit;
    }
    m_write(e, c, m, val);
    break;
  case OP_REMOVE:
    e->present &= ~bit;
    e->disabled &= ~bit;
    break;
  case OP_ENABLE:
    e->disabled &= ~bit;
    break;
  case OP_DISABLE:
    if (has) {
      e->disabled |= bit;
    }
    break;
  default:
    fail();
  }
}

/* The model id a command acts on, or UINT32_MAX for a stale handle. */
static uint32_t m_target(model_t *m, const pcmd_t *c) {
  switch (c->tk) {
  case TK_MID:
    return m->ents[c->target].alive ? c->target : UINT32_MAX;
  case TK_PEND:
    m->n_pend_refs++;
    if (m->seen[c->target] == 0) {
      m->n_pend_early++; /* named before its spawn in merge order */
    }
    return m->tx.spawn_mid[c->target];
  default:
    return UINT32_MAX;
  }
}

static void model_apply(model_t *m) {
  txn_t *tx = &m->tx;
  grow(&m->order, &m->order_cap, tx->ncmds, sizeof *m->order);
  for (uint32_t i = 0; i < tx->ncmds; i++) {
    m->order[i] = (kidx_t){.key = tx->cmds[i].key, .idx = i};
  }
  qsort(m->order, tx->ncmds, sizeof *m->order, kidx_cmp);
  m->seen = realloc(m->seen, (size_t)(tx->nspawns + 1) * sizeof *m->seen);
  assert_non_null(m->seen);
  memset(m->seen, 0, (size_t)(tx->nspawns + 1) * sizeof *m->seen);

  /* Pass 1: per-entity changes in merge order; query-wide set/remove are
   * remembered (their positions in merge order are their call order). */
  for (uint32_t i = 0; i < tx->ncmds; i++) {
    const pcmd_t *c = &tx->cmds[m->order[i].idx];
    m->n_cmds++;
    if (c->op == OP_SPAWN) {
      m->seen[c->aux] = 1;
      ment_t *e = &m->ents[tx->spawn_mid[c->aux]];
      for (uint32_t k = 0; k < c->nsc && !e->despawned; k++) {
        m_op(m, e, OP_ADD, c->sc[k], c->sv[k]);
      }
      continue;
    }
    if (c->op == OP_DESPAWN_Q) {
      m->n_q++;
      m->n_q_members += c->naux;
      for (uint32_t k = 0; k < c->naux; k++) {
        m->ents[tx->mem[c->aux + k]].despawned = 1;
      }
      continue;
    }
    if (c->op == OP_SET_Q || c->op == OP_REMOVE_Q) {
      continue;
    }
    uint32_t mid = m_target(m, c);
    if (mid == UINT32_MAX) {
      m->n_stale++;
      continue;
    }
    ment_t *e = &m->ents[mid];
    if (e->despawned) {
      m->n_ignored++;
      continue;
    }
    if (c->op == OP_DESPAWN) {
      e->despawned = 1;
    } else {
      m_op(m, e, c->op, c->comp, c->val);
    }
  }

  /* Commit: despawned entities die, the other spawns come alive. */
  for (uint32_t i = 0; i < m->nlive; i++) {
    ment_t *e = &m->ents[m->live[i]];
    if (e->despawned) {
      e->alive = 0;
      m->n_despawned++;
    }
  }
  for (uint32_t s = 0; s < tx->nspawns; s++) {
    ment_t *e = &m->ents[tx->spawn_mid[s]];
    if (e->despawned) {
      m->n_cancelled++;
    } else {
      e->alive = 1;
      m->n_spawned++;
    }
  }

  /* Pass 2: query-wide set/remove, in call order, to the record-time
   * members still alive. */
  for (uint32_t i = 0; i < tx->ncmds; i++) {
    const pcmd_t *c = &tx->cmds[m->order[i].idx];
    if (c->op != OP_SET_Q && c->op != OP_REMOVE_Q) {
      continue;
    }
    m->n_q++;
    m->n_q_members += c->naux;
    for (uint32_t k = 0; k < c->naux; k++) {
      ment_t *e = &m->ents[tx->mem[c->aux + k]];
      if (!e->alive) {
        m->n_q_skipped++;
        continue;
      }
      m_op(m, e, c->op == OP_SET_Q ? OP_SET : OP_REMOVE, c->comp, c->val);
    }
  }
}

/* After the checks: the live list, the graveyard and cleared flags. */
static void model_commit(model_t *m) {
  txn_t *tx = &m->tx;
  for (uint32_t i = 0; i < m->nlive; i++) {
    uint32_t mid = m->live[i];
    ment_t *e = &m->ents[mid];
    if (!e->alive) {
      m->dead[m->dead_pos] = mid;
      m->dead_pos = (m->dead_pos + 1) % DEAD_RING;
      if (m->ndead < DEAD_RING) {
        m->ndead++;
      }
    }
    e->despawned = 0;
  }
  for (uint32_t s = 0; s < tx->nspawns; s++) {
    m->ents[tx->spawn_mid[s]].despawned = 0;
  }
  m->nlive = 0;
  for (uint32_t mid = 0; mid < m->nents; mid++) {
    if (m->ents[mid].alive) {
      grow(&m->live, &m->live_cap, m->nlive + 1, sizeof *m->live);
      m->live[m->nlive++] = mid;
    }
  }
  m->prev_nspawns = tx->nspawns;
}

/* ------------------------------------------------------------------------ */
/* Distributions: worlds, buffers and recording threads                     */
/* ------------------------------------------------------------------------ */

typedef struct dist_t {
  char name[32];
  uint32_t index;
  uint32_t nbufs;
  uint64_t rng;
  weft_world_t *w;
  weft_cmdbuf_t *bufs[MAXBUF];
  weft_cmdbuf_t *apply[MAXBUF]; /* the order given to weft_world_apply */
  weft_query_t *q[NQ];
  weft_component_t ids[NC];
  weft_entity_t *pend, *prev_pend; /* pending handle per spawn */
  uint32_t pend_cap, prev_cap;
  uint32_t *bjobs;             /* jobs grouped by buffer, in record order */
  uint32_t bstart[MAXBUF + 1]; /* buffer b owns bjobs[bstart[b]..bstart[b+1]) */
  uint32_t bjobs_cap;
  uint32_t strategy;
} dist_t;

typedef struct worker_t {
  dist_t *d;
  const model_t *m;
  uint32_t b;
  pthread_barrier_t *bar;
  uint64_t rng;
  bool junk; /* record throw-away commands and clear them first */
  int err;
  uint32_t err_cmd;
} worker_t;

static const char *const strategy_name[] = {"round-robin", "random", "reversed",
                                            "blocks"};

static void dist_open(dist_t *d, uint32_t nbufs, uint32_t index, uint64_t seed,
                      const weft_world_config_t *cfg) {
  memset(d, 0, sizeof *d);
  d->index = index;
  d->nbufs = nbufs;
  d->rng = seed ^ (UINT64_C(0x51ed270b27a1f00d) * (index + 1));
  snprintf(d->name, sizeof d->name, "%u buffer%s", (unsigned)nbufs,
           nbufs == 1 ? "" : "s");
  assert_int_equal(weft_world_create(cfg, &d->w), WEFT_OK);
  for (uint32_t c = 0; c < NC; c++) {
    weft_component_desc_t desc;
    memset(&desc, 0, sizeof desc);
    desc.name = cname[c];
    desc.size = csize[c];
    desc.alignment = c == C_B || c == C_S || c == C_P ? 8 : 0;
    /* S: {x u32, y u32, z u64} stored field by field, declared out of
     * order. */
    static const weft_field_desc_t sfields[] = {
        {"z", 8, 8, 0}, {"x", 0, 4, 0}, {"y", 4, 4, 0}};
    if (c == C_S) {
      desc.fields = sfields;
      desc.field_count = 3;
      desc.flags = WEFT_COMPONENT_SOA;
    }
    assert_int_equal(weft_component_register(d->w, &desc, &d->ids[c]), WEFT_OK);
  }
  for (uint32_t q = 0; q < NQ; q++) {
    weft_query_desc_t qd;
    memset(&qd, 0, sizeof qd);
    uint32_t ni = 0, ne = 0, na = 0, nd = 0;
    for (uint32_t c = 0; c < NC; c++) {
      if (qspecs[q].inc & BIT(c)) {
        qd.include[ni++] = d->ids[c];
      }
      if (qspecs[q].exc & BIT(c)) {
        qd.exclude[ne++] = d->ids[c];
      }
      if (qspecs[q].any & BIT(c)) {
        qd.any[na++] = d->ids[c];
      }
      if (qspecs[q].dis & BIT(c)) {
        qd.disabled[nd++] = d->ids[c];
      }
    }
    qd.flags = qspecs[q].flags;
    assert_int_equal(weft_query_create(d->w, &qd, &d->q[q]), WEFT_OK);
  }
  for (uint32_t b = 0; b < nbufs; b++) {
    assert_int_equal(weft_cmdbuf_create(d->w, &d->bufs[b]), WEFT_OK);
  }
}

static void dist_close(dist_t *d) {
  for (uint32_t b = 0; b < d->nbufs; b++) {
    weft_cmdbuf_destroy(d->bufs[b]);
  }
  weft_world_destroy(d->w);
  free(d->pend);
  free(d->prev_pend);
  free(d->bjobs);
  memset(d, 0, sizeof *d);
}

/* Spreads the jobs over the buffers and picks each buffer's record order
 * and the order of the buffers in the apply call. */
static void distribute(dist_t *d, const txn_t *tx, uint32_t strategy) {
  uint32_t n = d->nbufs, nj = tx->njobs;
  uint32_t *owner = malloc((size_t)(nj ? nj : 1) * sizeof *owner);
  assert_non_null(owner);
  d->strategy = strategy;
  for (uint32_t j = 0; j < nj; j++) {
    switch (strategy) {
    case 0:
      owner[j] = j % n;
      break;
    case 1:
      owner[j] = wt_draw_below(&d->rng, n);
      break;
    case 2:
      owner[j] = n - 1 - j % n;
      break;
    default:
      owner[j] = (uint32_t)((uint64_t)j * n / nj);
      break;
    }
  }
  grow(&d->bjobs, &d->bjobs_cap, nj + 1, sizeof *d->bjobs);
  memset(d->bstart, 0, sizeof d->bstart);
  for (uint32_t j = 0; j < nj; j++) {
    d->bstart[owner[j] + 1]++;
  }
  for (uint32_t b = 0; b < n; b++) {
    d->bstart[b + 1] += d->bstart[b];
  }
  uint32_t fill[MAXBUF];
  memcpy(fill, d->bstart, sizeof fill);
  for (uint32_t j = 0; j < nj; j++) {
    d->bjobs[fill[owner[j]]++] = j;
  }
  for (uint32_t b = 0; b < n; b++) {
    uint32_t *l = d->bjobs + d->bstart[b];
    uint32_t k = d->bstart[b + 1] - d->bstart[b];
    if (strategy == 2) {
      for (uint32_t i = 0; i < k / 2; i++) {
        uint32_t t = l[i];
        l[i] = l[k - 1 - i];
        l[k - 1 - i] = t;
      }
    } else if (strategy == 1) {
      for (uint32_t i = k; i > 1; i--) {
        uint32_t r = wt_draw_below(&d->rng, i);
        uint32_t t = l[i - 1];
        l[i - 1] = l[r];
        l[r] = t;
      }
    }
  }
  for (uint32_t b = 0; b < n; b++) {
    d->apply[b] = d->bufs[strategy == 2 ? n - 1 - b : b];
  }
  if (strategy == 1) {
    for (uint32_t i = n; i > 1; i--) {
      uint32_t r = wt_draw_below(&d->rng, i);
      weft_cmdbuf_t *t = d->apply[i - 1];
      d->apply[i - 1] = d->apply[r];
      d->apply[r] = t;
    }
  }
  free(owner);
}

static weft_entity_t handle_of(const dist_t *d, const model_t *m,
                               const pcmd_t *c) {
  switch (c->tk) {
  case TK_MID:
    return m->hndl[c->target];
  case TK_PEND:
    return d->pend[c->target];
  case TK_OLD:
    return d->prev_pend[c->target];
  default:
    return WEFT_ENTITY_NULL;
  }
}

static int record_cmd(dist_t *d, const model_t *m, weft_cmdbuf_t *b,
                      const pcmd_t *c) {
  const txn_t *tx = &m->tx;
  const void *val = c->val == NOVAL ? NULL : tx->vals + c->val;
  weft_cmd_key(b, c->key);
  switch (c->op) {
  case OP_SPAWN: {
    weft_component_t comps[NC + 1];
    const void *vals[NC];
    for (uint32_t i = 0; i < c->nsc; i++) {
      comps[i] = d->ids[c->sc[i]];
      vals[i] = c->sv[i] == NOVAL ? NULL : tx->vals + c->sv[i];
    }
    comps[c->nsc] = WEFT_COMPONENT_NONE;
    weft_entity_t e = WEFT_ENTITY_NULL;
    int rc = weft_cmd_spawn(b, comps, vals, &e);
    if (rc == 0 && !weft_entity_is_pending(e)) {
      rc = WEFT_EINVAL;
    }
    d->pend[c->aux] = e;
    return rc;
  }
  case OP_DESPAWN:
    return weft_cmd_despawn(b, handle_of(d, m, c));
  case OP_ADD:
    return weft_cmd_add(b, handle_of(d, m, c), d->ids[c->comp], val);
  case OP_SET:
    return weft_cmd_set(b, handle_of(d, m, c), d->ids[c->comp],
                        val ? val : tag_dummy);
  case OP_REMOVE:
    return weft_cmd_remove(b, handle_of(d, m, c), d->ids[c->comp]);
  case OP_ENABLE:
    return weft_cmd_enable(b, handle_of(d, m, c), d->ids[c->comp]);
  case OP_DISABLE:
    return weft_cmd_disable(b, handle_of(d, m, c), d->ids[c->comp]);
  case OP_SET_Q:
    return weft_cmd_set_query(b, d->q[c->target], d->ids[c->comp],
                              val ? val : tag_dummy);
  case OP_REMOVE_Q:
    return weft_cmd_remove_query(b, d->q[c->target], d->ids[c->comp]);
  case OP_DESPAWN_Q:
    return weft_cmd_despawn_query(b, d->q[c->target]);
  default:
    return WEFT_EINVAL;
  }
}

/* One recording thread: its buffer's jobs, round by round. The barrier
 * starts every round on all threads at once and makes the pending handles
 * of earlier rounds visible. */
/* Commands that weft_cmdbuf_clear() must drop: if any survived, the
 * oracle would see spawns, despawns and writes it never made. */
static int record_junk(worker_t *wk, weft_cmdbuf_t *b) {
  const model_t *m = wk->m;
  const dist_t *d = wk->d;
  uint32_t n = 1 + wt_draw_below(&wk->rng, 64);
  int rc = 0;
  for (uint32_t i = 0; i < n && rc == 0; i++) {
    weft_entity_t e = m->nlive
                          ? m->hndl[m->live[wt_draw_below(&wk->rng, m->nlive)]]
                          : WEFT_ENTITY_NULL;
    uint64_t v = wt_splitmix64(&wk->rng);
    weft_component_t c = d->ids[wt_draw_below(&wk->rng, NC)];
    weft_cmd_key(b, wt_splitmix64(&wk->rng));
    switch (wt_draw_below(&wk->rng, 6)) {
    case 0: {
      const weft_component_t comps[] = {d->ids[C_A], d->ids[C_T], 0};
      rc = weft_cmd_spawn(b, comps, NULL, &e);
      if (rc == 0) {
        rc = weft_cmd_set(b, e, d->ids[C_P], &v);
      }
      break;
    }
    case 1:
      rc = weft_cmd_despawn(b, e);
      break;
    case 2:
      rc = weft_cmd_set(b, e, c, (unsigned char[VMAX]){0});
      break;
    case 3:
      rc = weft_cmd_remove(b, e, c);
      break;
    case 4:
      rc = weft_cmd_disable(b, e, c);
      break;
    default:
      rc = weft_cmd_despawn_query(b, d->q[wt_draw_below(&wk->rng, NQ)]);
      break;
    }
  }
  if (rc == 0 && weft_cmdbuf_count(b) == 0) {
    rc = WEFT_EINVAL;
  }
  weft_cmdbuf_clear(b);
  if (rc == 0 && weft_cmdbuf_count(b) != 0) {
    rc = WEFT_EINVAL;
  }
  return rc;
}

static void *worker_main(void *arg) {
  worker_t *wk = arg;
  dist_t *d = wk->d;
  const txn_t *tx = &wk->m->tx;
  weft_cmdbuf_t *b = d->bufs[wk->b];
  for (uint32_t round = 0; round < ROUNDS; round++) {
    pthread_barrier_wait(wk->bar);
    if (round == 0 && wk->junk) {
      int rc = record_junk(wk, b);
      if (rc != 0 && wk->err == 0) {
        wk->err = rc;
        wk->err_cmd = UINT32_MAX;
      }
    }
    for (uint32_t i = d->bstart[wk->b]; i < d->bstart[wk->b + 1]; i++) {
      const job_t *j = &tx->jobs[d->bjobs[i]];
      if (j->round != round) {
        continue;
      }
      for (uint32_t k = j->first; k < j->first + j->n; k++) {
        int rc = record_cmd(d, wk->m, b, &tx->cmds[k]);
        if (rc != 0 && wk->err == 0) {
          wk->err = rc;
          wk->err_cmd = k;
        }
      }
    }
  }
  return NULL;
}

/* Records the transaction into d's buffers from one thread per buffer and
 * applies it. */
static void dist_run(dist_t *d, model_t *m) {
  txn_t *tx = &m->tx;
  weft_entity_t *t = d->prev_pend;
  uint32_t tc = d->prev_cap;
  d->prev_pend = d->pend;
  d->prev_cap = d->pend_cap;
  d->pend = t;
  d->pend_cap = tc;
  grow(&d->pend, &d->pend_cap, tx->nspawns + 1, sizeof *d->pend);
  distribute(d, tx, (m->txn + d->index) % 4);

  pthread_barrier_t bar;
  pthread_t th[MAXBUF];
  worker_t wk[MAXBUF];
  assert_int_equal(pthread_barrier_init(&bar, NULL, d->nbufs), 0);
  for (uint32_t b = 0; b < d->nbufs; b++) {
    wk[b] = (worker_t){.d = d,
                       .m = m,
                       .b = b,
                       .bar = &bar,
                       .rng = wt_splitmix64(&d->rng),
                       .junk = wt_draw_below(&d->rng, 3) == 0};
    assert_int_equal(pthread_create(&th[b], NULL, worker_main, &wk[b]), 0);
  }
  for (uint32_t b = 0; b < d->nbufs; b++) {
    assert_int_equal(pthread_join(th[b], NULL), 0);
  }
  pthread_barrier_destroy(&bar);
  for (uint32_t b = 0; b < d->nbufs; b++) {
    CHECK(m, d->name, UINT32_MAX, wk[b].err == 0,
          "recording command #%" PRIu32 " (%s) failed: %s", wk[b].err_cmd,
          wk[b].err_cmd == UINT32_MAX ? "junk + weft_cmdbuf_clear"
                                      : op_name[tx->cmds[wk[b].err_cmd].op],
          weft_strerror_name(wk[b].err));
  }
  int rc = weft_world_apply(d->w, d->apply, d->nbufs);
  CHECK(m, d->name, UINT32_MAX, rc == 0, "weft_world_apply: %s (%s)",
        weft_strerror_name(rc), weft_world_last_error(d->w));
  for (uint32_t b = 0; b < d->nbufs; b++) {
    CHECK(m, d->name, UINT32_MAX, weft_cmdbuf_count(d->bufs[b]) == 0,
          "buffer %" PRIu32 " not emptied by the apply", b);
  }
}

/* ------------------------------------------------------------------------ */
/* Checks                                                                   */
/* ------------------------------------------------------------------------ */

static int handle_cmp(const void *a, const void *b) {
  weft_entity_t x = *(const weft_entity_t *)a, y = *(const weft_entity_t *)b;
  return x < y ? -1 : x > y;
}

/* Pending handles: identical resolution everywhere, as the oracle says. */
static void check_resolve(model_t *m, dist_t *dists) {
  txn_t *tx = &m->tx;
  for (uint32_t s = 0; s < tx->nspawns; s++) {
    uint32_t mid = tx->spawn_mid[s];
    bool alive = m->ents[mid].alive;
    weft_entity_t h0 = WEFT_ENTITY_NULL;
    for (uint32_t di = 0; di < NDIST; di++) {
      dist_t *d = &dists[di];
      weft_entity_t h = WEFT_ENTITY_NULL;
      int rc = weft_cmd_resolve(d->w, d->pend[s], &h);
      CHECK(m, d->name, mid, rc == (alive ? 0 : WEFT_ESTALE),
            "resolve of spawn #%" PRIu32 " (oracle: %s) returned %s", s,
            alive ? "alive" : "cancelled", weft_strerror_name(rc));
      if (!alive) {
        continue;
      }
      CHECK(m, d->name, mid, weft_is_alive(d->w, h),
            "spawn #%" PRIu32 " resolved to 0x%016" PRIx64 ", not alive", s, h);
      if (di == 0) {
        h0 = h;
      }
      CHECK(m, d->name, mid, h == h0,
            "spawn #%" PRIu32 " resolved to 0x%016" PRIx64
            ", distribution %s to 0x%016" PRIx64,
            s, h, dists[0].name, h0);
    }
    m->hndl[mid] = h0;
  }
  /* The previous transaction's pending handles are stale now. */
  for (uint32_t di = 0; di < NDIST; di++) {
    dist_t *d = &dists[di];
    for (uint32_t s = 0; s < m->prev_nspawns; s += 7) {
      weft_entity_t h = 1;
      int rc = weft_cmd_resolve(d->w, d->prev_pend[s], &h);
      CHECK(m, d->name, UINT32_MAX, rc == WEFT_ESTALE && h == 0,
            "old pending handle #%" PRIu32 " resolved: %s", s,
            weft_strerror_name(rc));
    }
  }
}

/* Digests and counters must agree across distributions. */
static void check_same(model_t *m, dist_t *dists) {
  uint64_t g0 = weft_world_digest(dists[0].w);
  weft_world_stats_t s0;
  weft_world_stats(dists[0].w, &s0);
  for (uint32_t di = 0; di < NDIST; di++) {
    dist_t *d = &dists[di];
    weft_world_stats_t s;
    weft_world_stats(d->w, &s);
    CHECK(m, d->name, UINT32_MAX,
          s.commands_dropped == 0 && s.staged_spawns == 0,
          "%" PRIu64 " commands dropped, %" PRIu32 " spawns still staged",
          s.commands_dropped, s.staged_spawns);
    CHECK(m, d->name, UINT32_MAX,
          s.alive + s.retired + s.remaining == s.capacity,
          "slot accounting: alive %" PRIu32 " retired %" PRIu32
          " remaining %" PRIu32 " capacity %" PRIu32,
          s.alive, s.retired, s.remaining, s.capacity);
    if (di == 0) {
      continue;
    }
    uint64_t g = weft_world_digest(d->w);
    CHECK(m, d->name, UINT32_MAX, g == g0,
          "digest 0x%016" PRIx64 " differs from %s's 0x%016" PRIx64
          " (strategy %s)",
          g, dists[0].name, g0, strategy_name[d->strategy]);
    CHECK(m, d->name, UINT32_MAX,
          s.alive == s0.alive && s.spawns == s0.spawns &&
              s.despawns == s0.despawns && s.moves == s0.moves &&
              s.retired == s0.retired && s.slots_used == s0.slots_used,
          "entity counters differ from %s's", dists[0].name);
    CHECK(m, d->name, UINT32_MAX,
          s.commands == s0.commands && s.commands_stale == s0.commands_stale,
          "commands %" PRIu64 "/%" PRIu64 " stale, %s: %" PRIu64 "/%" PRIu64,
          s.commands, s.commands_stale, dists[0].name, s0.commands,
          s0.commands_stale);
  }
}

/* The world against the oracle: population, then every live entity's
 * components, enabled state and values; this transaction's dead are dead. */
static void check_model(model_t *m, dist_t *d, weft_entity_t *scratch) {
  uint32_t nalive = 0;
  for (uint32_t mid = 0; mid < m->nents; mid++) {
    const ment_t *e = &m->ents[mid];
    weft_entity_t h = m->hndl[mid];
    if (!e->alive) {
      if (h != WEFT_ENTITY_NULL &&
          (e->despawned || e->born == m->txn || mid % 16 == 0)) {
        CHECK(m, d->name, mid, !weft_is_alive(d->w, h),
              "oracle entity is dead, world handle 0x%016" PRIx64 " alive", h);
      }
      continue;
    }
    CHECK(m, d->name, mid, weft_is_alive(d->w, h),
          "oracle entity is alive, world handle 0x%016" PRIx64 " is not", h);
    scratch[nalive++] = h;
    for (uint32_t c = 0; c < NC; c++) {
      weft_component_t id = d->ids[c];
      bool present = (e->present & BIT(c)) != 0;
      bool enabled = present && (e->disabled & BIT(c)) == 0;
      CHECK(m, d->name, mid, weft_has(d->w, h, id) == present,
            "component %s: oracle %s, world %s", cname[c],
            present ? "present" : "absent", present ? "absent" : "present");
      CHECK(m, d->name, mid, weft_is_enabled(d->w, h, id) == enabled,
            "component %s: oracle %s, world %s", cname[c],
            enabled ? "enabled" : "not enabled",
            enabled ? "not enabled" : "enabled");
      if (!present || csize[c] == 0) {
        continue;
      }
      unsigned char got[VMAX];
      memset(got, 0xee, sizeof got);
      int rc = weft_read(d->w, h, id, got);
      CHECK(m, d->name, mid, rc == 0, "weft_read(%s): %s", cname[c],
            weft_strerror_name(rc));
      if (memcmp(got, e->val[c], csize[c]) != 0) {
        char a[2 * VMAX + 1], b[2 * VMAX + 1];
        for (uint32_t i = 0; i < csize[c]; i++) {
          snprintf(a + 2 * i, 3, "%02x", e->val[c][i]);
          snprintf(b + 2 * i, 3, "%02x", got[i]);
        }
        CHECK(m, d->name, mid, false, "component %s value: oracle %s, world %s",
              cname[c], a, b);
      }
    }
  }
  CHECK(m, d->name, UINT32_MAX, weft_world_count(d->w) == nalive,
        "world has %" PRIu32 " live entities, oracle %" PRIu32,
        weft_world_count(d->w), nalive);
  /* Distinct handles: with the count equal, the live sets are equal. */
  qsort(scratch, nalive, sizeof *scratch, handle_cmp);
  for (uint32_t i = 1; i < nalive; i++) {
    CHECK(m, d->name, UINT32_MAX, scratch[i] != scratch[i - 1],
          "two oracle entities share handle 0x%016" PRIx64, scratch[i]);
  }
}

/* ------------------------------------------------------------------------ */
/* Driver                                                                   */
/* ------------------------------------------------------------------------ */

static void run(const char *name, uint64_t ops, uint32_t txn_ops,
                const weft_world_config_t *cfg, uint32_t pop_lo,
                uint32_t pop_hi) {
  static const uint32_t nbufs[NDIST] = {1, 2, 3, 4, 8};
  model_t *m = calloc(1, sizeof *m);
  dist_t *dists = calloc(NDIST, sizeof *dists);
  assert_non_null(m);
  assert_non_null(dists);
  m->name = name;
  m->seed = wt_env_u64("stress_commands", "WEFT_CMD_SEED", DEFAULT_SEED);
  m->rng = m->seed ^ (uint64_t)strlen(name) * UINT64_C(0x9e3779b97f4a7c15);
  m->pop_lo = pop_lo;
  m->pop_hi = pop_hi;
  for (uint32_t i = 0; i < NDIST; i++) {
    dist_open(&dists[i], nbufs[i], i, m->seed, cfg);
  }
  weft_entity_t *scratch = NULL;
  uint32_t scratch_cap = 0;
  double t0 = wt_now_s();
  uint64_t done = 0;
  if (txn_ops < ROUNDS) {
    txn_ops = ROUNDS;
  }
  for (m->txn = 0; done < ops; m->txn++) {
    uint32_t n = ops - done < txn_ops ? (uint32_t)(ops - done) : txn_ops;
    if (n < ROUNDS) {
      n = ROUNDS;
    }
    gen_txn(m, n);
    done += m->tx.ncmds;
    model_apply(m);
    for (uint32_t i = 0; i < NDIST; i++) {
      dist_run(&dists[i], m);
    }
    check_resolve(m, dists);
    check_same(m, dists);
    grow(&scratch, &scratch_cap, m->nents + 1, sizeof *scratch);
    for (uint32_t i = 0; i < NDIST; i++) {
      check_model(m, &dists[i], scratch);
    }
    model_commit(m);
    m->n_txns++;
  }
  print_message("%s: seed 0x%016" PRIx64 ", %" PRIu64 " commands in %" PRIu64
                " transactions x %u distributions in %.1f s: %" PRIu64
                " spawned, %" PRIu64 " cancelled, %" PRIu64
                " despawned, %" PRIu64 " stale, %" PRIu64
                " after despawn, %" PRIu64 " pending refs (%" PRIu64
                " before their spawn), %" PRIu64 " query commands over %" PRIu64
                " members (%" PRIu64 " dead by then), %" PRIu64
                " unsorted jobs, %" PRIu32 " alive at the end\n",
                name, m->seed, done, m->n_txns, NDIST, wt_now_s() - t0,
                m->n_spawned, m->n_cancelled, m->n_despawned, m->n_stale,
                m->n_ignored, m->n_pend_refs, m->n_pend_early, m->n_q,
                m->n_q_members, m->n_q_skipped, m->n_unsorted_jobs, m->nlive);
  if (ops >= DEFAULT_OPS / 2) {
    /* The default run must reach the paths this test exists for. */
    assert_true(m->n_cancelled > 0);
    assert_true(m->n_pend_early > 0);
    assert_true(m->n_q_skipped > 0);
    assert_true(m->n_ignored > 0);
    assert_true(m->n_stale > 0);
  }
  for (uint32_t i = 0; i < NDIST; i++) {
    dist_close(&dists[i]);
  }
  free(scratch);
  free(m->tx.cmds);
  free(m->tx.jobs);
  free(m->tx.spawn_mid);
  free(m->tx.mem);
  free(m->tx.vals);
  free(m->ents);
  free(m->hndl);
  free(m->live);
  free(m->seen);
  free(m->order);
  free(m);
  free(dists);
}

/* Default chunks and generations, a population of 1,500 to 5,000. */
static void test_commands_default(void **state) {
  (void)state;
  uint64_t ops = wt_env_u64("stress_commands", "WEFT_CMD_OPS", DEFAULT_OPS);
  uint32_t txn_ops = (uint32_t)wt_env_u64("stress_commands", "WEFT_CMD_TXN_OPS",
                                          DEFAULT_TXN_OPS);
  weft_world_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.world_tag = WORLD_TAG;
  run("commands_default", ops - ops / 4, txn_ops, &cfg, 1500, 5000);
}

/* The smallest chunks and 8 generations per slot, so that slots retire and
 * handles recycle quickly under pending spawns; a smaller population. */
static void test_commands_small_chunks(void **state) {
  (void)state;
  uint64_t ops = wt_env_u64("stress_commands", "WEFT_CMD_OPS", DEFAULT_OPS);
  uint32_t txn_ops = (uint32_t)wt_env_u64("stress_commands", "WEFT_CMD_TXN_OPS",
                                          DEFAULT_TXN_OPS);
  weft_world_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.world_tag = WORLD_TAG;
  cfg.chunk_size = WEFT_CHUNK_SIZE_MIN;
  cfg.max_generation = 8;
  run("commands_small_chunks", ops / 4, txn_ops / 2, &cfg, 200, 1200);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_commands_default),
      cmocka_unit_test(test_commands_small_chunks),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
