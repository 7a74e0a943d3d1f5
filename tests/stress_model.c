/* SPDX-License-Identifier: MIT */
/*
 * stress_model.c: randomized model test of weft's entity API.
 *
 * Every test drives a weft world with a long reproducible stream of mixed
 * operations (spawn, spawn_with, spawn_batch, despawn, add, remove, set,
 * enable, disable, pointer writes, clear, reads including weft_get_many,
 * stale and forged handles) and mirrors each one in a trivially correct
 * oracle: one record per slot (last issued generation) and one per live
 * entity (present and enabled bits, value bytes). After every operation
 * the touched entity and the cheap invariants (counts, stats) are checked
 * against the oracle; every 2,000 to 125,000 operations, depending on the
 * world's size, a full cross-check compares every live entity, every dead
 * handle and the result of several queries with what the oracle predicts.
 *
 * Environment:
 *   WEFT_MODEL_SEED         PRNG seed (default 0x5eed0f3e1f7ab1e5)
 *   WEFT_MODEL_OPS          operations per test (default 1000000)
 *   WEFT_MODEL_CHECK_EVERY  overrides the full cross-check interval; the
 *                           operation sequence does not depend on it, so
 *                           a failure can be re-run with 1 to find the
 *                           first operation that breaks the model
 * A failure prints the seed, the operation number and the last operations.
 */
#include "support/weft_test.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <weft.h>

#define DEFAULT_SEED 0x5eed0f3e1f7ab1e5u
#define DEFAULT_OPS 1000000u

/* ------------------------------------------------------------------------ */
/* Components                                                               */
/* ------------------------------------------------------------------------ */

/* Component slots of the model, 1..NCOMP (0 terminates lists). */
enum {
  C_U8 = 1,
  C_U32,
  C_U64,
  C_V3,
  C_V4,
  C_S24,
  C_LINE,
  C_TAG_A,
  C_TAG_B,
  C_SOA,
  C_SOA4,
  C_BIG,
  NCOMP = C_BIG
};

#define VAL_MAX 96u    /* largest component value */
#define VAL_BYTES 272u /* sum of every component's size, rounded up */
#define FIELDS_MAX 4u

typedef struct cspec_t {
  const char *name;
  uint32_t size;
  uint32_t align;      /* given to the descriptor; 0 asks for the default */
  uint32_t real_align; /* the alignment weft must report and honour */
  uint32_t flags;
  uint32_t nfields;
  weft_field_desc_t fields[FIELDS_MAX];
  uint32_t p_present;  /* per mille: how often add wins over remove */
  uint32_t p_disabled; /* per mille: how often disable wins over enable */
} cspec_t;

static const cspec_t specs[NCOMP + 1] = {
    [C_U8] = {.name = "m_u8",
              .size = 1,
              .real_align = 1,
              .p_present = 120,
              .p_disabled = 100},
    [C_U32] = {.name = "m_u32",
               .size = 4,
               .real_align = 4,
               .p_present = 500,
               .p_disabled = 150},
    [C_U64] = {.name = "m_u64",
               .size = 8,
               .real_align = 8,
               .p_present = 100,
               .p_disabled = 60},
    [C_V3] = {.name = "m_v3",
              .size = 12,
              .real_align = 4,
              .nfields = 3,
              .fields = {{"x", 0, 4}, {"y", 4, 4}, {"z", 8, 4}},
              .p_present = 450,
              .p_disabled = 80},
    [C_V4] = {.name = "m_v4",
              .size = 16,
              .real_align = 16,
              .p_present = 80,
              .p_disabled = 60},
    [C_S24] = {.name = "m_s24",
               .size = 24,
               .align = 8,
               .real_align = 8,
               .p_present = 80,
               .p_disabled = 60},
    [C_LINE] = {.name = "m_line64",
                .size = 64,
                .align = 64,
                .real_align = 64,
                .p_present = 100,
                .p_disabled = 80},
    [C_TAG_A] = {.name = "m_tag_a",
                 .size = 0,
                 .real_align = 1,
                 .p_present = 400,
                 .p_disabled = 150},
    [C_TAG_B] = {.name = "m_tag_b",
                 .size = 0,
                 .real_align = 1,
                 .p_present = 80,
                 .p_disabled = 60},
    /* SoA with gaps: bytes 4..7 and 22..23 belong to no field. */
    [C_SOA] = {.name = "m_soa",
               .size = 24,
               .align = 8,
               .real_align = 8,
               .flags = WEFT_COMPONENT_SOA,
               .nfields = 3,
               .fields = {{"a", 0, 4}, {"b", 8, 8}, {"c", 16, 6}},
               .p_present = 300,
               .p_disabled = 100},
    /* SoA whose fields cover the value, declared out of order. */
    [C_SOA4] = {.name = "m_soa4",
                .size = 16,
                .align = 4,
                .real_align = 4,
                .flags = WEFT_COMPONENT_SOA,
                .nfields = 4,
                .fields = {{"w", 12, 4}, {"x", 0, 4}, {"z", 8, 4}, {"y", 4, 4}},
                .p_present = 100,
                .p_disabled = 60},
    [C_BIG] = {.name = "m_big96",
               .size = 96,
               .real_align = 16,
               .p_present = 70,
               .p_disabled = 60},
};

/* Offset of each component's bytes inside an oracle value buffer. */
static uint32_t g_off[NCOMP + 1];

static void comp_offsets(void) {
  uint32_t off = 0;
  for (uint32_t c = 1; c <= NCOMP; c++) {
    g_off[c] = off;
    off += specs[c].size;
  }
  assert_true(off <= VAL_BYTES);
}

static bool is_tag(uint32_t c) {
  return specs[c].size == 0;
}

static bool is_soa(uint32_t c) {
  return (specs[c].flags & WEFT_COMPONENT_SOA) != 0;
}

/* Compares the significant bytes of two values of component c. */
static bool val_eq(uint32_t c, const void *a, const void *b) {
  const cspec_t *sp = &specs[c];
  if (!is_soa(c)) {
    return memcmp(a, b, sp->size) == 0;
  }
  for (uint32_t f = 0; f < sp->nfields; f++) {
    const weft_field_desc_t *fd = &sp->fields[f];
    if (memcmp((const unsigned char *)a + fd->offset,
               (const unsigned char *)b + fd->offset, fd->size) != 0) {
      return false;
    }
  }
  return true;
}

/* ------------------------------------------------------------------------ */
/* Queries                                                                  */
/* ------------------------------------------------------------------------ */

/* A query in model terms: zero-terminated lists of model components. */
typedef struct qdef_t {
  uint8_t inc[NCOMP + 1];
  uint8_t exc[NCOMP + 1];
  uint8_t any[NCOMP + 1];
  uint8_t dis[NCOMP + 1];
  uint32_t flags;
} qdef_t;

static const qdef_t fixed_queries[] = {
    {.inc = {C_V3, C_U32}},
    {.inc = {C_SOA}, .exc = {C_TAG_A}},
    {.any = {C_U64, C_LINE, C_TAG_B}, .exc = {C_S24}},
    {.inc = {C_TAG_A}, .dis = {C_U32}},
    {.inc = {C_V3, C_SOA4}, .exc = {C_U8}, .flags = WEFT_QUERY_MATCH_DISABLED},
    {.any = {C_TAG_A, C_BIG},
     .dis = {C_SOA},
     .flags = WEFT_QUERY_MATCH_DISABLED},
    {.inc = {C_TAG_A}},
    {.inc = {C_LINE, C_U32},
     .any = {C_U8, C_SOA},
     .exc = {C_BIG},
     .dis = {C_V3}},
    {.inc = {C_U8, C_U64, C_V4, C_S24, C_LINE, C_BIG, C_SOA4, C_SOA},
     .flags = WEFT_QUERY_MATCH_DISABLED},
    {.dis = {C_TAG_A}},
    {.inc = {C_U32}, .exc = {C_V3, C_SOA, C_TAG_A, C_U8}},
    /* Runs of contiguous chunks: columns and fields must hold across chunk
     * borders. */
    {.inc = {C_V3, C_U32}, .flags = WEFT_QUERY_CHUNK_RUNS},
    {.inc = {C_SOA},
     .flags = WEFT_QUERY_CHUNK_RUNS | WEFT_QUERY_MATCH_DISABLED},
};

#define NQ (sizeof fixed_queries / sizeof fixed_queries[0])

typedef struct mquery_t {
  qdef_t def;
  uint32_t ninc;
  uint32_t minc, mexc, many, mdis; /* bit masks, bit c for component c */
  weft_query_t *q;
} mquery_t;

/* ------------------------------------------------------------------------ */
/* Oracle and model state                                                   */
/* ------------------------------------------------------------------------ */

/* One record per slot index weft has issued. */
typedef struct oslot_t {
  weft_entity_t handle; /* the live handle, 0 when the slot is dead */
  uint32_t last_gen;    /* last generation issued, 0: never issued */
  uint32_t fuzz;        /* clears since death that may have advanced it */
  uint32_t live_pos;    /* index into live[] while alive */
  uint32_t stamp;       /* query duplicate detection */
} oslot_t;

/* One record per live entity. */
typedef struct olive_t {
  uint32_t slot;
  uint32_t present; /* bit c: has component c */
  uint32_t enabled; /* bit c: component c enabled (subset of present) */
  unsigned char val[VAL_BYTES];
} olive_t;

typedef struct oplog_t {
  uint64_t opno;
  const char *what;
  weft_entity_t e;
  uint32_t comp;
  uint32_t arg;
  int rc;
} oplog_t;

#define LOG_N 32u

/* A world configuration for one epoch of a test. */
typedef struct wconf_t {
  uint32_t capacity;       /* 0: default (WEFT_ENTITY_MAX) */
  uint32_t max_generation; /* 0: default */
  uint32_t chunk_size;     /* 0: default */
  uint32_t period;         /* population target period, in ops */
  uint32_t tmin, tmax;     /* population target range */
  uint32_t check_every;    /* ops between full cross-checks */
  uint32_t batch_pct;      /* percent of spawns that are batches */
  uint32_t batch_max;      /* largest batch */
  uint32_t mass_pct;       /* percent of despawns that are runs */
  uint32_t mass_max;       /* longest despawn run */
  uint32_t clear_odds;     /* one clear in this many ops */
  uint32_t grave_cap;      /* graveyard size */
} wconf_t;

typedef struct model_t {
  const char *name;
  uint64_t seed;
  uint64_t rng;  /* the operation stream */
  uint64_t qrng; /* random queries of the full checks */
  uint64_t opno;
  uint64_t epoch_op;
  uint64_t next_check;
  wconf_t conf;
  uint64_t check_every_env;

  weft_world_t *w;
  uint32_t cap;
  uint32_t max_gen;
  uint8_t tag;
  uint8_t next_tag;
  weft_component_t ids[NCOMP + 1];
  mquery_t queries[NQ];

  oslot_t *slots;
  uint32_t nslots;
  olive_t *live;
  uint32_t nlive, live_cap;
  weft_entity_t *grave;
  uint32_t ngrave;
  uint32_t max_idx; /* highest slot index issued + 1 */

  uint32_t retired;
  uint64_t spawns, despawns, moves, stale;
  int moves_expect; /* -1: any non-decreasing value */
  int stale_expect; /* -1: up to stale_max more */
  uint32_t stale_max;
  uint32_t stamp;

  weft_entity_t *bout;
  weft_entity_t *bents;
  uint8_t *bcover;
  uint32_t bcap;

  /* coverage counters */
  uint64_t n_efull, n_eretired, n_batch_full, n_clear, n_full_checks;
  uint64_t n_batches, n_batch_ents, n_stale_ops, n_retire, n_worlds;
  uint64_t n_exhausted, n_spawn_ok, n_despawn, n_contig;

  oplog_t log[LOG_N];
  uint32_t log_next;
} model_t;

/* ------------------------------------------------------------------------ */
/* Failure reporting                                                        */
/* ------------------------------------------------------------------------ */

static const char *handle_str(weft_entity_t e, char *buf, size_t n) {
  snprintf(buf, n,
           "0x%016" PRIx64 " (idx %" PRIu32 " gen %" PRIu32 " tag %" PRIu32 ")",
           e, weft_entity_index(e), weft_entity_generation(e),
           weft_entity_tag(e));
  return buf;
}

/* Formats a handle into a compound literal; only evaluated on failure. */
#define HS(e) handle_str((e), (char[96]){0}, 96)

static void model_dump_log(const model_t *m) {
  print_error("last operations, oldest first:\n");
  for (uint32_t i = 0; i < LOG_N; i++) {
    const oplog_t *l = &m->log[(m->log_next + i) % LOG_N];
    char h[96];
    if (l->what == NULL) {
      continue;
    }
    handle_str(l->e, h, sizeof h);
    print_error("  op %" PRIu64 ": %s e=%s comp=%s arg=%" PRIu32
                " rc=%d (%s)\n",
                l->opno, l->what, h,
                l->comp <= NCOMP && l->comp ? specs[l->comp].name : "-", l->arg,
                l->rc, weft_strerror_name(l->rc));
  }
}

static void model_fail(const model_t *m, int line, const char *cond,
                       const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void model_fail(const model_t *m, int line, const char *cond,
                       const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  print_error("\n%s: MODEL MISMATCH at op %" PRIu64 " (stress_model.c:%d)\n"
              "  check: %s\n  %s\n",
              m->name, m->opno, line, cond, msg);
  if (m->w != NULL) {
    print_error("  world: capacity %" PRIu32 ", max_generation %" PRIu32
                ", tag %u, oracle alive %" PRIu32 ", retired %" PRIu32
                "\n  weft_world_last_error: %s\n",
                m->cap, m->max_gen, (unsigned)m->tag, m->nlive, m->retired,
                weft_world_last_error(m->w));
  }
  model_dump_log(m);
  print_error("reproduce: WEFT_MODEL_SEED=0x%016" PRIx64
              " (ops per test as in this run; failing op %" PRIu64 ")\n",
              m->seed, m->opno);
  fail();
}

#define MCHECK(m, cond, ...)                                                   \
  do {                                                                         \
    if (!(cond)) {                                                             \
      model_fail((m), __LINE__, #cond, __VA_ARGS__);                           \
    }                                                                          \
  } while (0)

static oplog_t *op_log(model_t *m, const char *what, weft_entity_t e,
                       uint32_t comp, uint32_t arg) {
  oplog_t *l = &m->log[m->log_next];
  m->log_next = (m->log_next + 1) % LOG_N;
  l->opno = m->opno;
  l->what = what;
  l->e = e;
  l->comp = comp;
  l->arg = arg;
  l->rc = 0;
  return l;
}

/* ------------------------------------------------------------------------ */
/* PRNG (splitmix64)                                                        */
/* ------------------------------------------------------------------------ */

static uint64_t rng_next(model_t *m) {
  return wt_splitmix64(&m->rng);
}

static uint32_t rng_below(model_t *m, uint32_t n) {
  return wt_draw_below(&m->rng, n);
}

static void fill_bytes(uint64_t *s, unsigned char *p, uint32_t n) {
  while (n >= 8) {
    uint64_t x = wt_splitmix64(s);
    memcpy(p, &x, 8);
    p += 8;
    n -= 8;
  }
  if (n > 0) {
    uint64_t x = wt_splitmix64(s);
    memcpy(p, &x, n);
  }
}

static void rand_bytes(model_t *m, unsigned char *p, uint32_t n) {
  fill_bytes(&m->rng, p, n);
}

/* The value a batch fill writes for row i of component c. */
static void gen_value(uint64_t key, uint32_t i, uint32_t c, unsigned char *p) {
  uint64_t s = key ^ ((uint64_t)i * 0xd1342543de82ef95u) ^ ((uint64_t)c << 52);
  fill_bytes(&s, p, specs[c].size);
}

/* ------------------------------------------------------------------------ */
/* Oracle helpers                                                           */
/* ------------------------------------------------------------------------ */

static weft_entity_t mk_handle(uint32_t idx, uint32_t gen, uint32_t tag) {
  return (weft_entity_t)idx | ((weft_entity_t)(gen & 0x00ffffffu) << 32) |
         ((weft_entity_t)(tag & 0xffu) << 56);
}

static unsigned char *oval(olive_t *l, uint32_t c) {
  return l->val + g_off[c];
}

static bool has_bit(uint32_t mask, uint32_t c) {
  return (mask >> c & 1u) != 0;
}

static weft_component_t max_id(const model_t *m) {
  weft_component_t x = 0;
  for (uint32_t c = 1; c <= NCOMP; c++) {
    x = m->ids[c] > x ? m->ids[c] : x;
  }
  return x;
}

static void grow_slots(model_t *m, uint32_t idx) {
  uint32_t n = m->nslots ? m->nslots : 1024;
  while (n <= idx) {
    n = n * 2 > n ? n * 2 : idx + 1;
  }
  oslot_t *s = realloc(m->slots, (size_t)n * sizeof *s);
  assert_non_null(s);
  memset(s + m->nslots, 0, (size_t)(n - m->nslots) * sizeof *s);
  m->slots = s;
  m->nslots = n;
}

static void grave_push(model_t *m, weft_entity_t e) {
  if (m->conf.grave_cap == 0) {
    return;
  }
  if (m->ngrave < m->conf.grave_cap) {
    m->grave[m->ngrave++] = e;
  } else {
    m->grave[rng_below(m, m->ngrave)] = e;
  }
}

/* The error a single spawn must return when no slot can be issued: EFULL
 * when every slot is alive, ERETIRED when the slots that are not alive are
 * retired. */
static int full_code(const model_t *m) {
  return m->retired == 0 ? WEFT_EFULL : WEFT_ERETIRED;
}

static bool world_full(const model_t *m) {
  return (uint64_t)m->nlive + m->retired >= m->cap;
}

/* Records a handle weft just issued and checks it against the slot's
 * history: right tag, index within capacity, slot not alive, generation
 * exactly one past the last one issued (or within the range a clear may
 * have advanced it), never above max_generation. */
static olive_t *oracle_issue(model_t *m, weft_entity_t e) {
  uint32_t idx = weft_entity_index(e);
  uint32_t gen = weft_entity_generation(e);
  MCHECK(m, weft_entity_tag(e) == m->tag, "issued %s, world tag %u", HS(e),
         (unsigned)m->tag);
  MCHECK(m, idx < m->cap, "issued %s beyond capacity %" PRIu32, HS(e), m->cap);
  if (idx >= m->nslots) {
    grow_slots(m, idx);
  }
  oslot_t *s = &m->slots[idx];
  MCHECK(m, s->handle == 0, "issued %s but the slot is alive in the oracle",
         HS(e));
  MCHECK(m, gen >= 1 && gen <= m->max_gen,
         "issued %s outside generations 1..%" PRIu32, HS(e), m->max_gen);
  MCHECK(m, gen > s->last_gen,
         "issued %s: generation not above the slot's last one %" PRIu32
         " (a handle issued twice or a retired slot reused)",
         HS(e), s->last_gen);
  MCHECK(m, gen <= s->last_gen + 1 + s->fuzz,
         "issued %s: generation skips ahead of last %" PRIu32
         " (clears since: %" PRIu32 ")",
         HS(e), s->last_gen, s->fuzz);
  if (m->nlive == m->live_cap) {
    uint32_t n = m->live_cap ? m->live_cap * 2 : 1024;
    olive_t *l = realloc(m->live, (size_t)n * sizeof *l);
    assert_non_null(l);
    m->live = l;
    m->live_cap = n;
  }
  s->handle = e;
  s->last_gen = gen;
  s->fuzz = 0;
  s->live_pos = m->nlive;
  olive_t *l = &m->live[m->nlive++];
  l->slot = idx;
  l->present = 0;
  l->enabled = 0;
  memset(l->val, 0, sizeof l->val);
  if (idx + 1 > m->max_idx) {
    m->max_idx = idx + 1;
  }
  m->spawns++;
  m->n_spawn_ok++;
  return l;
}

/* Kills the live entity at live position pos. Returns its handle. */
static weft_entity_t oracle_kill(model_t *m, uint32_t pos) {
  olive_t *l = &m->live[pos];
  oslot_t *s = &m->slots[l->slot];
  weft_entity_t e = s->handle;
  s->handle = 0;
  if (s->last_gen >= m->max_gen) {
    m->retired++;
    m->n_retire++;
  }
  m->nlive--;
  if (pos != m->nlive) {
    *l = m->live[m->nlive];
    m->slots[l->slot].live_pos = pos;
  }
  grave_push(m, e);
  return e;
}

/* The live record for a handle, or NULL if the oracle holds it dead. */
static olive_t *oracle_find(model_t *m, weft_entity_t e) {
  uint32_t idx = weft_entity_index(e);
  if (idx >= m->nslots || m->slots[idx].handle != e || e == 0) {
    return NULL;
  }
  return &m->live[m->slots[idx].live_pos];
}

static bool q_match(const mquery_t *q, const olive_t *l) {
  uint32_t eff =
      (q->def.flags & WEFT_QUERY_MATCH_DISABLED) ? l->present : l->enabled;
  uint32_t off = l->present & ~l->enabled;
  if ((eff & q->minc) != q->minc) {
    return false;
  }
  if ((eff & q->mexc) != 0) {
    return false;
  }
  if (q->many != 0 && (eff & q->many) == 0) {
    return false;
  }
  return (off & q->mdis) == q->mdis;
}

/* ------------------------------------------------------------------------ */
/* Per-entity checks                                                        */
/* ------------------------------------------------------------------------ */

static void check_comp(model_t *m, olive_t *l, uint32_t c) {
  const cspec_t *sp = &specs[c];
  weft_entity_t e = m->slots[l->slot].handle;
  weft_component_t id = m->ids[c];
  bool present = has_bit(l->present, c);
  bool en = has_bit(l->enabled, c);
  const void *p = NULL;
  unsigned char buf[VAL_MAX + 16];
  int rc;

  MCHECK(m, weft_has(m->w, e, id) == present, "weft_has(%s, %s) != %d", HS(e),
         sp->name, present);
  MCHECK(m, weft_is_enabled(m->w, e, id) == (present && en),
         "weft_is_enabled(%s, %s) != %d", HS(e), sp->name, present && en);
  if (is_tag(c)) {
    rc = weft_read(m->w, e, id, buf);
    if (present) {
      MCHECK(m, rc == WEFT_ETAG, "weft_read(%s, tag %s) = %s, want ETAG", HS(e),
             sp->name, weft_strerror_name(rc));
    } else {
      MCHECK(m, rc == WEFT_ENOTFOUND || rc == WEFT_ETAG,
             "weft_read(%s, absent tag %s) = %s", HS(e), sp->name,
             weft_strerror_name(rc));
    }
    MCHECK(m, weft_get(m->w, e, id) == NULL, "weft_get(%s, tag %s) != NULL",
           HS(e), sp->name);
    rc = weft_try_get(m->w, e, id, &p);
    MCHECK(m, rc == WEFT_ETAG || (!present && rc == WEFT_ENOTFOUND),
           "weft_try_get(%s, tag %s) = %s", HS(e), sp->name,
           weft_strerror_name(rc));
    return;
  }

  memset(buf, 0xa5, sizeof buf);
  rc = weft_read(m->w, e, id, buf);
  if (!present) {
    MCHECK(m, rc == WEFT_ENOTFOUND, "weft_read(%s, absent %s) = %s", HS(e),
           sp->name, weft_strerror_name(rc));
    MCHECK(m, weft_get(m->w, e, id) == NULL, "weft_get(%s, absent %s) != NULL",
           HS(e), sp->name);
    rc = weft_try_get(m->w, e, id, &p);
    MCHECK(m, rc == WEFT_ENOTFOUND || (is_soa(c) && rc == WEFT_ESOA),
           "weft_try_get(%s, absent %s) = %s", HS(e), sp->name,
           weft_strerror_name(rc));
    if (sp->nfields > 0) {
      MCHECK(m, weft_get_field(m->w, e, id, 0) == NULL,
             "weft_get_field(%s, absent %s, 0) != NULL", HS(e), sp->name);
    }
    return;
  }
  MCHECK(m, rc == 0, "weft_read(%s, %s) = %s", HS(e), sp->name,
         weft_strerror_name(rc));
  MCHECK(m, val_eq(c, buf, oval(l, c)),
         "weft_read(%s, %s): value differs from the oracle", HS(e), sp->name);
  MCHECK(m, buf[sp->size] == 0xa5,
         "weft_read(%s, %s) wrote past the value's %" PRIu32 " bytes", HS(e),
         sp->name, sp->size);
  if (is_soa(c)) {
    MCHECK(m, weft_get(m->w, e, id) == NULL, "weft_get(%s, SoA %s) != NULL",
           HS(e), sp->name);
    rc = weft_try_get(m->w, e, id, &p);
    MCHECK(m, rc == WEFT_ESOA, "weft_try_get(%s, SoA %s) = %s, want ESOA",
           HS(e), sp->name, weft_strerror_name(rc));
    for (uint32_t f = 0; f < sp->nfields; f++) {
      const weft_field_desc_t *fd = &sp->fields[f];
      const unsigned char *fp = weft_get_field(m->w, e, id, f);
      MCHECK(m, fp != NULL, "weft_get_field(%s, %s, %" PRIu32 ") = NULL", HS(e),
             sp->name, f);
      MCHECK(m, memcmp(fp, oval(l, c) + fd->offset, fd->size) == 0,
             "weft_get_field(%s, %s, %" PRIu32 ") value differs", HS(e),
             sp->name, f);
    }
    return;
  }
  p = weft_get(m->w, e, id);
  MCHECK(m, p != NULL, "weft_get(%s, %s) = NULL", HS(e), sp->name);
  MCHECK(m, (uintptr_t)p % sp->real_align == 0,
         "weft_get(%s, %s) = %p not %" PRIu32 "-aligned", HS(e), sp->name, p,
         sp->real_align);
  MCHECK(m, memcmp(p, oval(l, c), sp->size) == 0,
         "weft_get(%s, %s) value differs from the oracle", HS(e), sp->name);
  {
    const void *q = NULL;
    rc = weft_try_get(m->w, e, id, &q);
    MCHECK(m, rc == 0 && q == p, "weft_try_get(%s, %s) = %s, %p (get %p)",
           HS(e), sp->name, weft_strerror_name(rc), q, p);
  }
  for (uint32_t f = 0; f < sp->nfields; f++) {
    const unsigned char *fp = weft_get_field(m->w, e, id, f);
    MCHECK(m, fp == (const unsigned char *)p + sp->fields[f].offset,
           "weft_get_field(%s, %s, %" PRIu32 ") = %p, value at %p", HS(e),
           sp->name, f, (const void *)fp, p);
  }
}

static void check_entity(model_t *m, olive_t *l) {
  weft_entity_t e = m->slots[l->slot].handle;
  MCHECK(m, weft_is_alive(m->w, e), "live entity %s reported dead", HS(e));
  for (uint32_t c = 1; c <= NCOMP; c++) {
    check_comp(m, l, c);
  }
}

/* A handle the oracle holds dead must be rejected by the cheap readers. */
static void check_dead_handle(model_t *m, weft_entity_t e) {
  unsigned char buf[VAL_MAX];
  const void *p = NULL;
  MCHECK(m, !weft_is_alive(m->w, e), "dead handle %s reported alive", HS(e));
  MCHECK(m, !weft_has(m->w, e, m->ids[C_U32]), "weft_has(dead %s) true", HS(e));
  int rc = weft_read(m->w, e, m->ids[C_V3], buf);
  MCHECK(m, rc == WEFT_ESTALE, "weft_read(dead %s) = %s", HS(e),
         weft_strerror_name(rc));
  rc = weft_try_get(m->w, e, m->ids[C_TAG_A], &p);
  MCHECK(m, rc == WEFT_ESTALE, "weft_try_get(dead %s) = %s", HS(e),
         weft_strerror_name(rc));
  MCHECK(m, weft_get(m->w, e, m->ids[C_LINE]) == NULL,
         "weft_get(dead %s) != NULL", HS(e));
}

/* ------------------------------------------------------------------------ */
/* Query checks                                                             */
/* ------------------------------------------------------------------------ */

static void mquery_init(mquery_t *q, const qdef_t *def) {
  memset(q, 0, sizeof *q);
  q->def = *def;
  for (uint32_t i = 0; def->inc[i]; i++) {
    q->minc |= 1u << def->inc[i];
    q->ninc++;
  }
  for (uint32_t i = 0; def->exc[i]; i++) {
    q->mexc |= 1u << def->exc[i];
  }
  for (uint32_t i = 0; def->any[i]; i++) {
    q->many |= 1u << def->any[i];
  }
  for (uint32_t i = 0; def->dis[i]; i++) {
    q->mdis |= 1u << def->dis[i];
  }
}

static int mquery_create(model_t *m, mquery_t *q) {
  weft_query_desc_t d;
  memset(&d, 0, sizeof d);
  for (uint32_t i = 0; q->def.inc[i]; i++) {
    d.include[i] = m->ids[q->def.inc[i]];
  }
  for (uint32_t i = 0; q->def.exc[i]; i++) {
    d.exclude[i] = m->ids[q->def.exc[i]];
  }
  for (uint32_t i = 0; q->def.any[i]; i++) {
    d.any[i] = m->ids[q->def.any[i]];
  }
  for (uint32_t i = 0; q->def.dis[i]; i++) {
    d.disabled[i] = m->ids[q->def.dis[i]];
  }
  d.flags = q->def.flags;
  return weft_query_create(m->w, &d, &q->q);
}

static void qdef_str(const qdef_t *d, char *buf, size_t n) {
  const uint8_t *lists[4] = {d->inc, d->exc, d->any, d->dis};
  const char *names[4] = {"inc", "exc", "any", "dis"};
  size_t k = 0;
  for (uint32_t j = 0; j < 4 && k < n; j++) {
    k += (size_t)snprintf(buf + k, n - k, "%s{", names[j]);
    for (uint32_t i = 0; lists[j][i] && k < n; i++) {
      k += (size_t)snprintf(buf + k, n - k, "%s%s", i ? "," : "",
                            specs[lists[j][i]].name + 2);
    }
    if (k < n) {
      k += (size_t)snprintf(buf + k, n - k, "} ");
    }
  }
  if (k < n) {
    snprintf(buf + k, n - k, "flags=%" PRIu32, d->flags);
  }
}

static void check_query(model_t *m, const mquery_t *q) {
  uint32_t expect = 0, seen = 0, stamp;
  char qs[256];
  weft_iter_t it;

  qdef_str(&q->def, qs, sizeof qs);
  for (uint32_t i = 0; i < m->nlive; i++) {
    expect += q_match(q, &m->live[i]);
  }
  MCHECK(m, weft_query_count(q->q) == expect,
         "weft_query_count = %" PRIu32 ", oracle %" PRIu32 " for %s",
         weft_query_count(q->q), expect, qs);
  stamp = ++m->stamp;
  weft_query_iter(q->q, &it);
  while (weft_iter_next(&it)) {
    const unsigned char *colof[NCOMP + 1];
    bool en[NCOMP + 1];
    const unsigned char *fp[NCOMP + 1][FIELDS_MAX];

    MCHECK(m, it.count > 0 && it.count <= WEFT_CHUNK_ROWS_MAX,
           "chunk of %" PRIu32 " rows for %s", it.count, qs);
    MCHECK(m, it.entities != NULL, "chunk without entities for %s", qs);
    for (uint32_t c = 1; c <= NCOMP; c++) {
      colof[c] = weft_iter_column_of(&it, m->ids[c]);
      en[c] = weft_iter_enabled(&it, m->ids[c]);
    }
    for (uint32_t t = 0; t < q->ninc; t++) {
      uint32_t c = q->def.inc[t];
      const cspec_t *sp = &specs[c];
      void *col = weft_iter_column(&it, t);
      MCHECK(m, col == it.columns[t], "weft_iter_column(%" PRIu32 ") differs",
             t);
      if (is_tag(c) || is_soa(c)) {
        MCHECK(m, col == NULL, "column %" PRIu32 " (%s) not NULL for %s", t,
               sp->name, qs);
      } else {
        MCHECK(m, col != NULL, "column %" PRIu32 " (%s) NULL for %s", t,
               sp->name, qs);
        MCHECK(m, (uintptr_t)col % sp->real_align == 0,
               "column %" PRIu32 " (%s) misaligned", t, sp->name);
        MCHECK(m, (const void *)col == (const void *)colof[c],
               "column %" PRIu32 " != weft_iter_column_of(%s)", t, sp->name);
      }
      if (is_soa(c)) {
        for (uint32_t f = 0; f < sp->nfields; f++) {
          fp[t][f] = weft_iter_field(&it, t, f);
          MCHECK(m, fp[t][f] != NULL,
                 "weft_iter_field(%" PRIu32 ", %" PRIu32 ") NULL for %s", t, f,
                 qs);
        }
      } else if (!is_tag(c) && sp->nfields > 0) {
        MCHECK(m, weft_iter_field(&it, t, 0) == NULL,
               "weft_iter_field on non-SoA %s not NULL", sp->name);
      }
    }
    for (uint32_t r = 0; r < it.count; r++) {
      weft_entity_t e = it.entities[r];
      olive_t *l = oracle_find(m, e);
      MCHECK(m, l != NULL, "query %s yielded %s, dead in the oracle", qs,
             HS(e));
      oslot_t *s = &m->slots[l->slot];
      MCHECK(m, s->stamp != stamp, "query %s yielded %s twice", qs, HS(e));
      s->stamp = stamp;
      seen++;
      MCHECK(m, q_match(q, l),
             "query %s yielded %s (present 0x%" PRIx32 " enabled 0x%" PRIx32
             "), which it must not match",
             qs, HS(e), l->present, l->enabled);
      for (uint32_t c = 1; c <= NCOMP; c++) {
        const cspec_t *sp = &specs[c];
        bool present = has_bit(l->present, c);
        MCHECK(m, en[c] == (present && has_bit(l->enabled, c)),
               "weft_iter_enabled(%s) = %d for %s in query %s", sp->name, en[c],
               HS(e), qs);
        if (is_tag(c) || is_soa(c) || !present) {
          MCHECK(m, colof[c] == NULL,
                 "weft_iter_column_of(%s) not NULL for %s in query %s",
                 sp->name, HS(e), qs);
          continue;
        }
        MCHECK(m, colof[c] != NULL,
               "weft_iter_column_of(%s) NULL for %s in query %s", sp->name,
               HS(e), qs);
        MCHECK(m,
               memcmp(colof[c] + (size_t)r * sp->size, oval(l, c), sp->size) ==
                   0,
               "query %s: %s's %s column value differs", qs, HS(e), sp->name);
      }
      for (uint32_t t = 0; t < q->ninc; t++) {
        uint32_t c = q->def.inc[t];
        const cspec_t *sp = &specs[c];
        if (!is_soa(c)) {
          continue;
        }
        for (uint32_t f = 0; f < sp->nfields; f++) {
          const weft_field_desc_t *fd = &sp->fields[f];
          MCHECK(m,
                 memcmp(fp[t][f] + (size_t)r * fd->size,
                        oval(l, c) + fd->offset, fd->size) == 0,
                 "query %s: %s's %s field %s differs", qs, HS(e), sp->name,
                 fd->name);
        }
      }
    }
  }
  MCHECK(m, seen == expect,
         "query %s iterated %" PRIu32 " entities, oracle %" PRIu32, qs, seen,
         expect);
}

/* Draws from its own stream so that the check interval does not change
 * the operation sequence. */
static void random_qdef(uint64_t *rs, qdef_t *d) {
  uint32_t ni, ne, na, nd;
  do {
    memset(d, 0, sizeof *d);
    ni = ne = na = nd = 0;
    for (uint32_t c = 1; c <= NCOMP; c++) {
      uint32_t r = wt_draw_below(rs, 100);
      if (r < 14) {
        d->inc[ni++] = (uint8_t)c;
      } else if (r < 24) {
        d->exc[ne++] = (uint8_t)c;
      } else if (r < 32) {
        d->any[na++] = (uint8_t)c;
      } else if (r < 37) {
        d->dis[nd++] = (uint8_t)c;
      }
    }
  } while (ni + na + nd == 0);
  /* Shuffle the include order so that columns follow terms, not ids. */
  for (uint32_t i = ni; i > 1; i--) {
    uint32_t j = wt_draw_below(rs, i);
    uint8_t t = d->inc[i - 1];
    d->inc[i - 1] = d->inc[j];
    d->inc[j] = t;
  }
  d->flags = wt_draw_below(rs, 2) ? WEFT_QUERY_MATCH_DISABLED : 0;
}

/* ------------------------------------------------------------------------ */
/* Post-operation and full checks                                           */
/* ------------------------------------------------------------------------ */

static void post_op(model_t *m) {
  weft_world_stats_t st;
  weft_world_stats(m->w, &st);
  MCHECK(m, weft_world_count(m->w) == m->nlive,
         "weft_world_count = %" PRIu32 ", oracle %" PRIu32,
         weft_world_count(m->w), m->nlive);
  MCHECK(m, st.alive == m->nlive, "stats.alive = %" PRIu32 ", oracle %" PRIu32,
         st.alive, m->nlive);
  MCHECK(m, st.retired == m->retired,
         "stats.retired = %" PRIu32 ", oracle %" PRIu32, st.retired,
         m->retired);
  MCHECK(m, (uint64_t)st.alive + st.retired + st.remaining == st.capacity,
         "alive %" PRIu32 " + retired %" PRIu32 " + remaining %" PRIu32
         " != capacity %" PRIu32,
         st.alive, st.retired, st.remaining, st.capacity);
  MCHECK(m, st.capacity == m->cap,
         "stats.capacity = %" PRIu32 ", want %" PRIu32, st.capacity, m->cap);
  MCHECK(m, st.slots_used >= m->max_idx && st.slots_used <= st.capacity,
         "stats.slots_used = %" PRIu32 ", highest issued slot + 1 = %" PRIu32,
         st.slots_used, m->max_idx);
  MCHECK(m, st.spawns == m->spawns,
         "stats.spawns = %" PRIu64 ", oracle %" PRIu64, st.spawns, m->spawns);
  MCHECK(m, st.despawns == m->despawns,
         "stats.despawns = %" PRIu64 ", oracle %" PRIu64, st.despawns,
         m->despawns);
  if (m->stale_expect >= 0) {
    MCHECK(m, st.stale == m->stale + (uint64_t)m->stale_expect,
           "stats.stale = %" PRIu64 ", want %" PRIu64 " + %d", st.stale,
           m->stale, m->stale_expect);
  } else {
    MCHECK(m, st.stale >= m->stale && st.stale <= m->stale + m->stale_max,
           "stats.stale = %" PRIu64 ", want %" PRIu64 " + 0..%" PRIu32,
           st.stale, m->stale, m->stale_max);
  }
  m->stale = st.stale;
  m->stale_max = 1;
  if (m->moves_expect >= 0) {
    MCHECK(m, st.moves == m->moves + (uint64_t)m->moves_expect,
           "stats.moves = %" PRIu64 ", want %" PRIu64 " + %d", st.moves,
           m->moves, m->moves_expect);
  } else {
    MCHECK(m, st.moves >= m->moves, "stats.moves went down");
  }
  m->moves = st.moves;
  m->moves_expect = 0;
  m->stale_expect = 0;
}

static void full_check(model_t *m) {
  weft_world_stats_t st;
  uint64_t stale0;

  m->n_full_checks++;
  weft_world_stats(m->w, &st);
  stale0 = st.stale;
  MCHECK(m, st.components == NCOMP, "stats.components = %" PRIu32,
         st.components);
  MCHECK(m, st.queries == NQ, "stats.queries = %" PRIu32, st.queries);
  MCHECK(m, st.archetypes >= 1, "stats.archetypes = 0");
  MCHECK(m, weft_component_count(m->w) == NCOMP, "component count");
  for (uint32_t i = 0; i < m->nlive; i++) {
    check_entity(m, &m->live[i]);
  }
  for (uint32_t i = 0; i < m->ngrave; i++) {
    check_dead_handle(m, m->grave[i]);
  }
  /* Every dead slot's last handle and its next (never issued) handle. */
  for (uint32_t idx = 0; idx < m->nslots && idx < m->max_idx; idx++) {
    const oslot_t *s = &m->slots[idx];
    if (s->last_gen == 0) {
      continue;
    }
    if (s->handle == 0) {
      check_dead_handle(m, mk_handle(idx, s->last_gen, m->tag));
      MCHECK(m, !weft_is_alive(m->w, mk_handle(idx, s->last_gen + 1, m->tag)),
             "never issued handle idx %" PRIu32 " gen %" PRIu32 " alive", idx,
             s->last_gen + 1);
    } else if (s->last_gen > 1) {
      check_dead_handle(m, mk_handle(idx, s->last_gen - 1, m->tag));
    }
  }
  for (uint32_t i = 0; i < NQ; i++) {
    check_query(m, &m->queries[i]);
  }
  /* A query created now must see the archetypes that already exist. */
  {
    mquery_t tq;
    qdef_t d;
    random_qdef(&m->qrng, &d);
    mquery_init(&tq, &d);
    int rc = mquery_create(m, &tq);
    MCHECK(m, rc == 0, "weft_query_create(random) = %s",
           weft_strerror_name(rc));
    check_query(m, &tq);
    weft_query_destroy(tq.q);
  }
  weft_world_stats(m->w, &st);
  MCHECK(m, st.queries == NQ, "stats.queries = %" PRIu32 " after destroy",
         st.queries);
  MCHECK(m, st.stale >= stale0, "stats.stale went down");
  m->stale = st.stale; /* const readers may or may not count rejections */
}

/* ------------------------------------------------------------------------ */
/* World lifetime                                                           */
/* ------------------------------------------------------------------------ */

static void model_open(model_t *m) {
  weft_world_config_t cfg;
  int rc;

  memset(&cfg, 0, sizeof cfg);
  cfg.capacity = m->conf.capacity;
  cfg.max_generation = m->conf.max_generation;
  cfg.chunk_size = m->conf.chunk_size;
  m->tag = m->next_tag;
  m->next_tag = (uint8_t)(m->next_tag == 255 ? 1 : m->next_tag + 1);
  cfg.world_tag = m->tag;
  rc = weft_world_create(&cfg, &m->w);
  assert_int_equal(rc, 0);
  assert_non_null(m->w);
  assert_int_equal(weft_world_tag(m->w), m->tag);
  m->cap = cfg.capacity ? cfg.capacity : WEFT_ENTITY_MAX;
  m->max_gen = cfg.max_generation ? cfg.max_generation : WEFT_GENERATION_MAX;
  m->n_worlds++;

  for (uint32_t c = 1; c <= NCOMP; c++) {
    const cspec_t *sp = &specs[c];
    weft_component_desc_t d;
    weft_component_info_t info;
    memset(&d, 0, sizeof d);
    d.name = sp->name;
    d.size = sp->size;
    d.alignment = sp->align;
    d.fields = sp->nfields ? sp->fields : NULL;
    d.field_count = sp->nfields;
    d.flags = sp->flags;
    rc = weft_component_register(m->w, &d, &m->ids[c]);
    if (rc != 0) {
      print_error("register %s: %s\n", sp->name, weft_world_last_error(m->w));
    }
    assert_int_equal(rc, 0);
    assert_true(m->ids[c] != WEFT_COMPONENT_NONE);
    rc = weft_component_info(m->w, m->ids[c], &info);
    assert_int_equal(rc, 0);
    assert_int_equal(info.size, sp->size);
    assert_int_equal(info.alignment, sp->real_align);
    assert_int_equal(info.field_count, sp->nfields);
    assert_int_equal(info.flags, sp->flags);
    assert_string_equal(info.name, sp->name);
  }
  /* Invalid queries change nothing. */
  {
    weft_query_desc_t d;
    weft_query_t *q = NULL;
    memset(&d, 0, sizeof d);
    assert_int_equal(weft_query_create(m->w, &d, &q), WEFT_EINVAL);
    d.include[0] = m->ids[C_U32];
    d.exclude[0] = m->ids[C_U32];
    assert_int_equal(weft_query_create(m->w, &d, &q), WEFT_EINVAL);
    memset(&d, 0, sizeof d);
    d.include[0] = max_id(m) + 100;
    assert_int_equal(weft_query_create(m->w, &d, &q), WEFT_ENOCOMP);
  }
  for (uint32_t i = 0; i < NQ; i++) {
    mquery_init(&m->queries[i], &fixed_queries[i]);
    rc = mquery_create(m, &m->queries[i]);
    assert_int_equal(rc, 0);
  }

  /* Fresh oracle. */
  m->nlive = 0;
  m->ngrave = 0;
  m->max_idx = 0;
  m->retired = 0;
  m->spawns = m->despawns = m->moves = m->stale = 0;
  m->moves_expect = 0;
  m->stale_expect = 0;
  m->stale_max = 1;
  m->epoch_op = 0;
  if (m->nslots) {
    memset(m->slots, 0, (size_t)m->nslots * sizeof *m->slots);
  }
  if (m->conf.capacity && m->nslots < m->conf.capacity) {
    grow_slots(m, m->conf.capacity - 1);
  }
  free(m->grave);
  m->grave = NULL;
  if (m->conf.grave_cap) {
    m->grave = calloc(m->conf.grave_cap, sizeof *m->grave);
    assert_non_null(m->grave);
  }
  if (m->bcap < m->conf.batch_max) {
    free(m->bout);
    free(m->bents);
    free(m->bcover);
    m->bcap = m->conf.batch_max;
    m->bout = calloc(m->bcap, sizeof *m->bout);
    m->bents = calloc(m->bcap, sizeof *m->bents);
    m->bcover = calloc(m->bcap, 1);
    assert_true(m->bout && m->bents && m->bcover);
  }
  post_op(m);
}

static void model_close(model_t *m) {
  full_check(m);
  weft_world_destroy(m->w);
  m->w = NULL;
}

static model_t *model_new(const char *name) {
  model_t *m = calloc(1, sizeof *m);
  assert_non_null(m);
  comp_offsets();
  m->name = name;
  m->seed = wt_env_u64("stress_model", "WEFT_MODEL_SEED", DEFAULT_SEED);
  m->rng = m->seed;
  m->qrng = m->seed ^ 0x0123456789abcdefu;
  m->check_every_env = wt_env_u64("stress_model", "WEFT_MODEL_CHECK_EVERY", 0);
  m->next_tag = 1;
  return m;
}

static void model_free(model_t *m) {
  free(m->slots);
  free(m->live);
  free(m->grave);
  free(m->bout);
  free(m->bents);
  free(m->bcover);
  free(m);
}

/* ------------------------------------------------------------------------ */
/* Operations                                                               */
/* ------------------------------------------------------------------------ */

static uint32_t target(const model_t *m) {
  uint64_t period = m->conf.period ? m->conf.period : 1;
  uint64_t ph = m->epoch_op % period, half = period / 2 ? period / 2 : 1;
  uint64_t x = ph < half ? ph : period - ph;
  if (x > half) {
    x = half;
  }
  return m->conf.tmin +
         (uint32_t)((uint64_t)(m->conf.tmax - m->conf.tmin) * x / half);
}

/* Picks a random component list, probabilities as in the steady state. */
static uint32_t pick_set(model_t *m, uint8_t *list) {
  uint32_t n = 0;
  for (uint32_t c = 1; c <= NCOMP; c++) {
    if (rng_below(m, 1000) < specs[c].p_present) {
      list[n++] = (uint8_t)c;
    }
  }
  for (uint32_t i = n; i > 1; i--) {
    uint32_t j = rng_below(m, i);
    uint8_t t = list[i - 1];
    list[i - 1] = list[j];
    list[j] = t;
  }
  return n;
}

static uint32_t pick_comp(model_t *m) {
  return 1 + rng_below(m, NCOMP);
}

static uint32_t pick_data_comp(model_t *m) {
  uint32_t c;
  do {
    c = pick_comp(m);
  } while (is_tag(c));
  return c;
}

static olive_t *pick_live(model_t *m) {
  return m->nlive ? &m->live[rng_below(m, m->nlive)] : NULL;
}

static weft_entity_t live_handle(const model_t *m, const olive_t *l) {
  return m->slots[l->slot].handle;
}

static void expect_spawn_failure(model_t *m, int rc, const char *what) {
  int want = full_code(m);
  MCHECK(m, rc == want,
         "%s with no slot left (alive %" PRIu32 ", retired %" PRIu32
         ", capacity %" PRIu32 ") = %s, want %s",
         what, m->nlive, m->retired, m->cap, weft_strerror_name(rc),
         weft_strerror_name(want));
  if (rc == WEFT_EFULL) {
    m->n_efull++;
  } else {
    m->n_eretired++;
  }
  const char *le = weft_world_last_error(m->w);
  MCHECK(m, le != NULL && le[0] != '\0', "no last_error after %s", what);
}

static void op_spawn(model_t *m) {
  weft_entity_t e = WEFT_ENTITY_NULL;
  bool full = world_full(m);
  oplog_t *lg = op_log(m, "spawn", 0, 0, full);
  int rc = weft_spawn(m->w, &e);
  lg->rc = rc;
  lg->e = e;
  m->moves_expect = -1;
  if (full) {
    expect_spawn_failure(m, rc, "weft_spawn");
    return;
  }
  MCHECK(m, rc == 0,
         "weft_spawn = %s (alive %" PRIu32 ", retired %" PRIu32
         ", capacity %" PRIu32 ")",
         weft_strerror_name(rc), m->nlive, m->retired, m->cap);
  check_entity(m, oracle_issue(m, e));
}

static void op_spawn_with(model_t *m) {
  uint8_t cl[NCOMP];
  weft_component_t ids[NCOMP + 1];
  const void *vals[NCOMP + 1];
  unsigned char vb[NCOMP][VAL_MAX];
  uint32_t n = pick_set(m, cl);
  uint32_t mode = rng_below(m, 3); /* 0: values NULL; 1: all; 2: some */
  weft_entity_t e = WEFT_ENTITY_NULL;
  bool full = world_full(m);
  oplog_t *lg = op_log(m, "spawn_with", 0, n ? cl[0] : 0, n * 10 + mode);

  for (uint32_t i = 0; i < n; i++) {
    uint32_t c = cl[i];
    ids[i] = m->ids[c];
    vals[i] = NULL;
    if (mode == 0 || (mode == 2 && rng_below(m, 100) < 35)) {
      continue;
    }
    rand_bytes(m, vb[i], specs[c].size ? specs[c].size : 8);
    vals[i] = vb[i];
  }
  ids[n] = WEFT_COMPONENT_NONE;
  vals[n] = NULL;
  int rc = weft_spawn_with(m->w, ids, mode ? vals : NULL, &e);
  lg->rc = rc;
  lg->e = e;
  m->moves_expect = -1;
  if (full) {
    expect_spawn_failure(m, rc, "weft_spawn_with");
    return;
  }
  MCHECK(m, rc == 0, "weft_spawn_with(%" PRIu32 " comps) = %s", n,
         weft_strerror_name(rc));
  olive_t *l = oracle_issue(m, e);
  for (uint32_t i = 0; i < n; i++) {
    uint32_t c = cl[i];
    l->present |= 1u << c;
    l->enabled |= 1u << c;
    if (mode && vals[i] && !is_tag(c)) {
      memcpy(oval(l, c), vals[i], specs[c].size);
    }
  }
  check_entity(m, l);
}

/* Batch spawn fill callback: writes gen_value() into every column. */
typedef struct bctx_t {
  model_t *m;
  const uint8_t *cl;
  uint32_t nc;
  uint32_t n;
  uint64_t key;
  uint32_t calls;
  uint32_t covered;
  char err[256];
} bctx_t;

static void batch_fill(void *user, const weft_iter_t *view, uint32_t first) {
  bctx_t *b = user;
  model_t *m = b->m;
  unsigned char v[VAL_MAX];

  b->calls++;
  if (b->err[0]) {
    return;
  }
  if (view == NULL || view->count == 0 || first >= b->n ||
      view->count > b->n - first || view->entities == NULL) {
    snprintf(b->err, sizeof b->err,
             "bad view: first %" PRIu32 " count %" PRIu32 " of %" PRIu32, first,
             view ? view->count : 0, b->n);
    return;
  }
  for (uint32_t r = 0; r < view->count; r++) {
    if (m->bcover[first + r]) {
      snprintf(b->err, sizeof b->err, "row %" PRIu32 " filled twice",
               first + r);
      return;
    }
    m->bcover[first + r] = 1;
    m->bents[first + r] = view->entities[r];
    b->covered++;
  }
  for (uint32_t i = 0; i < b->nc; i++) {
    uint32_t c = b->cl[i];
    const cspec_t *sp = &specs[c];
    unsigned char *col = view->columns[i];
    if (is_tag(c) || is_soa(c)) {
      if (col != NULL) {
        snprintf(b->err, sizeof b->err, "view column %" PRIu32 " (%s) not NULL",
                 i, sp->name);
        return;
      }
    }
    if (is_tag(c)) {
      continue;
    }
    if (is_soa(c)) {
      for (uint32_t f = 0; f < sp->nfields; f++) {
        const weft_field_desc_t *fd = &sp->fields[f];
        unsigned char *fp = weft_iter_field(view, i, f);
        if (fp == NULL) {
          snprintf(b->err, sizeof b->err,
                   "weft_iter_field(view, %" PRIu32 ", %" PRIu32 ") NULL", i,
                   f);
          return;
        }
        for (uint32_t r = 0; r < view->count; r++) {
          gen_value(b->key, first + r, c, v);
          memcpy(fp + (size_t)r * fd->size, v + fd->offset, fd->size);
        }
      }
      continue;
    }
    if (col == NULL || (uintptr_t)col % sp->real_align != 0) {
      snprintf(b->err, sizeof b->err,
               "view column %" PRIu32 " (%s) NULL or misaligned: %p", i,
               sp->name, (void *)col);
      return;
    }
    for (uint32_t r = 0; r < view->count; r++) {
      gen_value(b->key, first + r, c, v);
      memcpy(col + (size_t)r * sp->size, v, sp->size);
    }
  }
}

static void op_spawn_batch(model_t *m, uint32_t tgt) {
  uint8_t cl[NCOMP];
  weft_component_t ids[NCOMP + 1];
  uint32_t nc = pick_set(m, cl);
  uint32_t room = tgt > m->nlive ? tgt - m->nlive : 1;
  uint32_t lim = room < m->conf.batch_max ? room : m->conf.batch_max;
  uint32_t n = 1 + rng_below(m, lim ? lim : 1);
  uint32_t mode = rng_below(m, 4); /* 0: no fill; 1: fill; 2: fill, no out */
  weft_world_stats_t st;
  bctx_t b;
  bool fits;
  int rc;

  if (mode == 3) {
    mode = 1;
  }
  weft_world_stats(m->w, &st);
  fits = (uint64_t)m->nlive + m->retired + n <= m->cap;
  for (uint32_t i = 0; i < nc; i++) {
    ids[i] = m->ids[cl[i]];
  }
  ids[nc] = WEFT_COMPONENT_NONE;
  memset(&b, 0, sizeof b);
  b.m = m;
  b.cl = cl;
  b.nc = nc;
  b.n = n;
  b.key = rng_next(m);
  memset(m->bcover, 0, n);
  oplog_t *lg = op_log(m, "spawn_batch", 0, nc ? cl[0] : 0, n);
  m->n_batches++;
  rc = weft_spawn_batch(m->w, n, ids, mode ? batch_fill : NULL,
                        mode ? &b : NULL, mode == 2 ? NULL : m->bout);
  lg->rc = rc;
  m->moves_expect = -1;
  if (!fits) {
    MCHECK(m, rc == WEFT_EFULL || rc == WEFT_ERETIRED,
           "weft_spawn_batch(%" PRIu32 ") with %" PRIu64 " issuable slots = %s",
           n, (uint64_t)m->cap - m->nlive - m->retired, weft_strerror_name(rc));
    m->n_batch_full++;
    return;
  }
  MCHECK(m, rc == 0, "weft_spawn_batch(%" PRIu32 ", %" PRIu32 " comps) = %s", n,
         nc, weft_strerror_name(rc));
  MCHECK(m, b.err[0] == '\0', "batch fill: %s", b.err);
  if (mode) {
    MCHECK(m, b.covered == n && b.calls > 0,
           "batch fill covered %" PRIu32 " of %" PRIu32 " rows", b.covered, n);
  }
  bool contig = (uint64_t)st.slots_used + n <= m->cap;
  if (contig) {
    m->n_contig++;
  }
  for (uint32_t i = 0; i < n; i++) {
    weft_entity_t e = mode == 2 ? m->bents[i] : m->bout[i];
    if (mode == 1) {
      MCHECK(m, m->bents[i] == m->bout[i],
             "batch out[%" PRIu32 "] differs from the fill view", i);
    }
    if (contig) {
      MCHECK(m, weft_entity_index(e) == st.slots_used + i,
             "batch entity %" PRIu32 " has slot %" PRIu32
             ", want fresh contiguous slot %" PRIu32,
             i, weft_entity_index(e), st.slots_used + i);
    }
    olive_t *l = oracle_issue(m, e);
    for (uint32_t j = 0; j < nc; j++) {
      uint32_t c = cl[j];
      l->present |= 1u << c;
      l->enabled |= 1u << c;
      if (mode && !is_tag(c)) {
        gen_value(b.key, i, c, oval(l, c));
      }
    }
  }
  m->n_batch_ents += n;
  /* Spot-check a few rows now; the full check sees the rest. */
  for (uint32_t k = 0; k < 4; k++) {
    weft_entity_t e =
        mode == 2 ? m->bents[rng_below(m, n)] : m->bout[rng_below(m, n)];
    check_entity(m, oracle_find(m, e));
  }
}

static void despawn_at(model_t *m, uint32_t pos) {
  weft_entity_t e = live_handle(m, &m->live[pos]);
  oplog_t *lg = op_log(m, "despawn", e, 0, 0);
  int rc = weft_despawn(m->w, e);
  lg->rc = rc;
  MCHECK(m, rc == 0, "weft_despawn(live %s) = %s", HS(e),
         weft_strerror_name(rc));
  oracle_kill(m, pos);
  m->despawns++;
  m->n_despawn++;
  m->moves_expect = -1;
  MCHECK(m, !weft_is_alive(m->w, e), "despawned %s still alive", HS(e));
}

static void op_despawn(model_t *m) {
  if (m->nlive == 0) {
    op_spawn(m);
    return;
  }
  uint32_t k = 1;
  if (rng_below(m, 100) < m->conf.mass_pct) {
    k = 1 + rng_below(m, m->conf.mass_max);
  }
  for (uint32_t i = 0; i < k && m->nlive > 0; i++) {
    if (i > 0) {
      post_op(m);
      m->opno++;
      m->epoch_op++;
    }
    despawn_at(m, rng_below(m, m->nlive));
  }
}

static void op_population(model_t *m) {
  uint32_t t = target(m);
  uint32_t bias = m->nlive < t ? 750 : 250;
  if (m->nlive == 0) {
    bias = 1000;
  }
  if (rng_below(m, 1000) < bias) {
    uint32_t r = rng_below(m, 100);
    if (r < m->conf.batch_pct) {
      op_spawn_batch(m, t);
    } else if (r < m->conf.batch_pct + 15) {
      op_spawn(m);
    } else {
      op_spawn_with(m);
    }
  } else {
    op_despawn(m);
  }
}

/* add or remove of one component, add winning with p_present. */
static void op_toggle(model_t *m) {
  olive_t *l = pick_live(m);
  uint32_t c = pick_comp(m);
  weft_entity_t e = live_handle(m, l);
  bool present = has_bit(l->present, c);
  int rc;

  if (rng_below(m, 1000) < specs[c].p_present) {
    unsigned char v[VAL_MAX];
    bool with = rng_below(m, 10) < 7;
    if (with) {
      rand_bytes(m, v, specs[c].size ? specs[c].size : 1);
    }
    oplog_t *lg = op_log(m, "add", e, c, with);
    rc = weft_add(m->w, e, m->ids[c], with ? v : NULL);
    lg->rc = rc;
    MCHECK(m, rc == 0, "weft_add = %s", weft_strerror_name(rc));
    if (!present) {
      l->present |= 1u << c;
      l->enabled |= 1u << c;
      memset(oval(l, c), 0, specs[c].size);
      if (with && !is_tag(c)) {
        memcpy(oval(l, c), v, specs[c].size);
      }
    }
    m->moves_expect = present ? 0 : 1;
  } else {
    oplog_t *lg = op_log(m, "remove", e, c, 0);
    rc = weft_remove(m->w, e, m->ids[c]);
    lg->rc = rc;
    MCHECK(m, rc == 0, "weft_remove = %s", weft_strerror_name(rc));
    l->present &= ~(1u << c);
    l->enabled &= ~(1u << c);
    m->moves_expect = present ? 1 : 0;
  }
  check_entity(m, l);
}

static void op_set(model_t *m) {
  olive_t *l = pick_live(m);
  uint32_t c = pick_data_comp(m);
  weft_entity_t e = live_handle(m, l);
  bool present = has_bit(l->present, c);
  unsigned char v[VAL_MAX];

  rand_bytes(m, v, specs[c].size);
  oplog_t *lg = op_log(m, "set", e, c, present);
  int rc = weft_set(m->w, e, m->ids[c], v);
  lg->rc = rc;
  MCHECK(m, rc == 0, "weft_set = %s", weft_strerror_name(rc));
  if (!present) {
    l->present |= 1u << c;
    l->enabled |= 1u << c;
  }
  memcpy(oval(l, c), v, specs[c].size);
  m->moves_expect = present ? 0 : 1;
  check_entity(m, l);
}

static void op_enable(model_t *m) {
  olive_t *l = pick_live(m);
  uint32_t c = pick_comp(m);
  weft_entity_t e = live_handle(m, l);
  bool present = has_bit(l->present, c);
  bool en = has_bit(l->enabled, c);
  bool dis = rng_below(m, 1000) < specs[c].p_disabled;
  oplog_t *lg = op_log(m, dis ? "disable" : "enable", e, c, present);
  int rc =
      dis ? weft_disable(m->w, e, m->ids[c]) : weft_enable(m->w, e, m->ids[c]);
  lg->rc = rc;
  if (!present) {
    MCHECK(m, rc == WEFT_ENOTFOUND, "%s(absent %s) = %s",
           dis ? "weft_disable" : "weft_enable", specs[c].name,
           weft_strerror_name(rc));
  } else {
    MCHECK(m, rc == 0, "%s(%s) = %s", dis ? "weft_disable" : "weft_enable",
           specs[c].name, weft_strerror_name(rc));
    if (dis) {
      l->enabled &= ~(1u << c);
    } else {
      l->enabled |= 1u << c;
    }
    m->moves_expect = (en == !dis) ? 0 : -1;
  }
  check_entity(m, l);
}

/* Writes through weft_get_mut() or weft_get_field(). */
static void op_write_ptr(model_t *m) {
  olive_t *l = pick_live(m);
  uint32_t c = pick_data_comp(m);
  weft_entity_t e = live_handle(m, l);
  const cspec_t *sp = &specs[c];
  unsigned char v[VAL_MAX];

  if (!has_bit(l->present, c)) {
    op_set(m);
    return;
  }
  if (!is_soa(c) && (sp->nfields == 0 || rng_below(m, 2))) {
    oplog_t *lg = op_log(m, "get_mut write", e, c, 0);
    unsigned char *p = weft_get_mut(m->w, e, m->ids[c]);
    lg->rc = p ? 0 : -100;
    MCHECK(m, p != NULL, "weft_get_mut(%s) = NULL", sp->name);
    MCHECK(m, (uintptr_t)p % sp->real_align == 0, "weft_get_mut(%s) misaligned",
           sp->name);
    rand_bytes(m, v, sp->size);
    memcpy(p, v, sp->size);
    memcpy(oval(l, c), v, sp->size);
  } else {
    uint32_t f = rng_below(m, sp->nfields);
    const weft_field_desc_t *fd = &sp->fields[f];
    oplog_t *lg = op_log(m, "get_field write", e, c, f);
    unsigned char *p = weft_get_field(m->w, e, m->ids[c], f);
    lg->rc = p ? 0 : -100;
    MCHECK(m, p != NULL, "weft_get_field(%s, %" PRIu32 ") = NULL", sp->name, f);
    rand_bytes(m, v, fd->size);
    memcpy(p, v, fd->size);
    memcpy(oval(l, c) + fd->offset, v, fd->size);
  }
  check_entity(m, l);
}

static void op_read(model_t *m) {
  olive_t *l = pick_live(m);
  op_log(m, "read", live_handle(m, l), 0, 0);
  check_entity(m, l);
}

/* A handle that names no live entity of this world. */
static weft_entity_t pick_stale(model_t *m, uint32_t *kind) {
  uint32_t r = rng_below(m, 100);
  olive_t *l = pick_live(m);
  if (r < 55 && m->ngrave > 0) {
    *kind = 0;
    return m->grave[rng_below(m, m->ngrave)];
  }
  *kind = 1 + rng_below(m, 6);
  switch (*kind) {
  case 1:
    return WEFT_ENTITY_NULL;
  case 2: /* a live handle stamped with another tag */
    if (l != NULL) {
      weft_entity_t e = live_handle(m, l);
      uint32_t t = (m->tag + 1 + rng_below(m, 255)) & 0xffu;
      return mk_handle(weft_entity_index(e), weft_entity_generation(e), t);
    }
    return WEFT_ENTITY_NULL;
  case 3: /* a live slot with another generation */
    if (l != NULL) {
      weft_entity_t e = live_handle(m, l);
      uint32_t g = weft_entity_generation(e);
      uint32_t g2;
      switch (rng_below(m, 4)) {
      case 0:
        g2 = g + 1;
        break;
      case 1:
        g2 = g - 1;
        break;
      case 2:
        g2 = 0;
        break;
      default:
        g2 = rng_below(m, 0x01000000u);
        break;
      }
      if ((g2 & 0x00ffffffu) == g) {
        g2 = g + 2;
      }
      return mk_handle(weft_entity_index(e), g2, m->tag);
    }
    return WEFT_ENTITY_NULL;
  case 4: /* beyond capacity */
    if (rng_below(m, 4) == 0) {
      return mk_handle(UINT32_MAX, 1, m->tag);
    }
    return mk_handle(m->cap + rng_below(m, 1000), 1 + rng_below(m, 3), m->tag);
  case 5: /* a dead or never used slot's next, not yet issued handle */
    for (uint32_t i = 0; i < 8; i++) {
      uint32_t idx = rng_below(m, m->max_idx + 16);
      if (idx >= m->cap) {
        continue;
      }
      if (idx >= m->nslots || m->slots[idx].handle == 0) {
        uint32_t g = idx < m->nslots ? m->slots[idx].last_gen + 1 : 1;
        return mk_handle(idx, g, m->tag);
      }
    }
    return WEFT_ENTITY_NULL;
  default: /* garbage in the unused bits of a live handle */
    if (l != NULL) {
      weft_entity_t e = live_handle(m, l);
      return e ^ ((weft_entity_t)1 << (32 + rng_below(m, 32)));
    }
    return WEFT_ENTITY_NULL;
  }
}

static void op_stale(model_t *m) {
  uint32_t kind = 0;
  weft_entity_t e = pick_stale(m, &kind);
  uint32_t c = pick_comp(m);
  weft_component_t id = m->ids[c];
  uint32_t action = rng_below(m, 14);
  unsigned char v[VAL_MAX];
  const void *p = NULL;
  olive_t *occ;
  int rc = 0;
  bool mutating = false;

  MCHECK(m, oracle_find(m, e) == NULL, "test bug: picked a live handle");
  m->n_stale_ops++;
  rand_bytes(m, v, VAL_MAX);
  oplog_t *lg = op_log(m, "stale op", e, c, kind * 100 + action);
  switch (action) {
  case 0:
    rc = weft_despawn(m->w, e);
    mutating = true;
    break;
  case 1:
    rc = weft_add(m->w, e, id, rng_below(m, 2) ? v : NULL);
    mutating = true;
    break;
  case 2:
    rc = weft_remove(m->w, e, id);
    mutating = true;
    break;
  case 3:
    rc = weft_set(m->w, e, m->ids[pick_data_comp(m)], v);
    mutating = true;
    break;
  case 4:
    rc = weft_enable(m->w, e, id);
    mutating = true;
    break;
  case 5:
    rc = weft_disable(m->w, e, id);
    mutating = true;
    break;
  case 6:
    rc = weft_read(m->w, e, id, v);
    break;
  case 7:
    rc = weft_try_get(m->w, e, id, &p);
    break;
  case 8:
    MCHECK(m, weft_get(m->w, e, id) == NULL, "weft_get(stale %s) != NULL",
           HS(e));
    break;
  case 9:
    MCHECK(m, weft_get_mut(m->w, e, id) == NULL,
           "weft_get_mut(stale %s) != NULL", HS(e));
    break;
  case 10:
    MCHECK(m, weft_get_field(m->w, e, m->ids[C_SOA], rng_below(m, 3)) == NULL,
           "weft_get_field(stale %s) != NULL", HS(e));
    break;
  case 11:
    MCHECK(m, !weft_has(m->w, e, id), "weft_has(stale %s) true", HS(e));
    break;
  case 12:
    MCHECK(m, !weft_is_enabled(m->w, e, id), "weft_is_enabled(stale %s) true",
           HS(e));
    break;
  default:
    MCHECK(m, !weft_is_alive(m->w, e), "weft_is_alive(stale %s) true", HS(e));
    break;
  }
  lg->rc = rc;
  if (action <= 7) {
    MCHECK(m, rc == WEFT_ESTALE, "action %" PRIu32 " on stale %s = %s", action,
           HS(e), weft_strerror_name(rc));
  }
  if (mutating) {
    const char *le = weft_world_last_error(m->w);
    MCHECK(m, le != NULL && le[0] != '\0', "no last_error after ESTALE");
  }
  m->stale_expect = mutating ? 1 : -1;
  m->moves_expect = 0;
  /* Whoever lives in that slot now is untouched. */
  if (weft_entity_index(e) < m->nslots &&
      m->slots[weft_entity_index(e)].handle != 0) {
    occ = &m->live[m->slots[weft_entity_index(e)].live_pos];
    check_entity(m, occ);
  }
}

/* weft_get_many() over live, stale and forged handles must agree with
 * weft_get() and the oracle, entry by entry. */
static void op_get_many(model_t *m) {
  weft_entity_t hs[64];
  const void *out[64];
  uint32_t n = 1 + rng_below(m, 64), c = pick_comp(m), nstale = 0;
  uint32_t hits, want = 0;
  const cspec_t *sp = &specs[c];

  for (uint32_t i = 0; i < n; i++) {
    uint32_t kind;
    if (rng_below(m, 100) < 75) {
      hs[i] = live_handle(m, pick_live(m));
    } else {
      hs[i] = pick_stale(m, &kind);
      nstale++;
    }
    out[i] = &out[i]; /* must be overwritten */
  }
  oplog_t *lg = op_log(m, "get_many", hs[0], c, n);
  hits = weft_get_many(m->w, hs, n, m->ids[c], out);
  lg->rc = (int)hits;
  for (uint32_t i = 0; i < n; i++) {
    weft_entity_t e = hs[i];
    olive_t *l = oracle_find(m, e);
    bool hit = l != NULL && has_bit(l->present, c) && !is_tag(c) && !is_soa(c);
    if (!hit) {
      MCHECK(m, out[i] == NULL, "weft_get_many[%" PRIu32 "] (%s, %s) not NULL",
             i, HS(e), sp->name);
      continue;
    }
    want++;
    MCHECK(m, out[i] != NULL && out[i] == weft_get(m->w, e, m->ids[c]),
           "weft_get_many[%" PRIu32 "] (%s, %s) = %p, weft_get %p", i, HS(e),
           sp->name, out[i], weft_get(m->w, e, m->ids[c]));
    MCHECK(m, memcmp(out[i], oval(l, c), sp->size) == 0,
           "weft_get_many[%" PRIu32 "] (%s, %s) value differs", i, HS(e),
           sp->name);
  }
  MCHECK(m, hits == want,
         "weft_get_many returned %" PRIu32 ", %" PRIu32 " hits expected", hits,
         want);
  m->stale_expect = -1;
  m->stale_max = nstale;
}

/* Documented misses on a live entity: unknown ids, absent components,
 * fields out of range, invalid spawn lists. */
static void op_errors(model_t *m) {
  olive_t *l = pick_live(m);
  weft_entity_t e = live_handle(m, l);
  static const weft_component_t bad_extra[] = {0,   511,    512,
                                               513, 100000, UINT32_MAX};
  uint32_t nb = sizeof bad_extra / sizeof bad_extra[0];
  uint32_t which = rng_below(m, 4);
  unsigned char v[VAL_MAX];
  const void *p = NULL;
  int rc;

  rand_bytes(m, v, VAL_MAX);
  if (which == 0) {
    uint32_t k = rng_below(m, nb + 1);
    weft_component_t bad = k == nb ? max_id(m) + 1 : bad_extra[k];
    if (bad != 0 && bad <= max_id(m)) {
      bad = max_id(m) + 1;
    }
    uint32_t action = rng_below(m, 12);
    oplog_t *lg = op_log(m, "unknown comp", e, 0, action);
    switch (action) {
    case 0:
      rc = weft_add(m->w, e, bad, v);
      break;
    case 1:
      rc = weft_set(m->w, e, bad, v);
      break;
    case 2:
      rc = weft_remove(m->w, e, bad);
      break;
    case 3:
      rc = weft_enable(m->w, e, bad);
      break;
    case 4:
      rc = weft_disable(m->w, e, bad);
      break;
    case 5:
      rc = weft_read(m->w, e, bad, v);
      break;
    case 6:
      rc = weft_try_get(m->w, e, bad, &p);
      break;
    case 7:
      rc = weft_get(m->w, e, bad) == NULL ? WEFT_ENOCOMP : 0;
      break;
    case 8:
      rc = weft_get_mut(m->w, e, bad) == NULL ? WEFT_ENOCOMP : 0;
      break;
    case 9:
      rc = weft_get_field(m->w, e, bad, 0) == NULL ? WEFT_ENOCOMP : 0;
      break;
    case 10:
      rc = weft_has(m->w, e, bad) ? 0 : WEFT_ENOCOMP;
      break;
    default:
      rc = weft_is_enabled(m->w, e, bad) ? 0 : WEFT_ENOCOMP;
      break;
    }
    lg->rc = rc;
    MCHECK(m, rc == WEFT_ENOCOMP,
           "action %" PRIu32 " with unknown component id %" PRIu32 " = %s",
           action, bad, weft_strerror_name(rc));
  } else if (which == 1) {
    /* Fields out of range, pointers to tags and SoA components. */
    uint32_t c = pick_comp(m);
    const cspec_t *sp = &specs[c];
    uint32_t f = rng_below(m, 3) == 0 ? UINT32_MAX : sp->nfields;
    op_log(m, "field miss", e, c, f);
    MCHECK(m, weft_get_field(m->w, e, m->ids[c], f) == NULL,
           "weft_get_field(%s, field %" PRIu32 ") != NULL", sp->name, f);
    if (is_tag(c) || is_soa(c)) {
      MCHECK(m, weft_get_mut(m->w, e, m->ids[c]) == NULL,
             "weft_get_mut(%s) != NULL for a tag/SoA", sp->name);
    }
    if (is_tag(c)) {
      MCHECK(m, weft_get_field(m->w, e, m->ids[c], 0) == NULL,
             "weft_get_field(tag %s, 0) != NULL", sp->name);
    }
  } else if (which == 2) {
    /* Invalid spawn lists spawn nothing. */
    weft_component_t ids[4];
    weft_entity_t out = WEFT_ENTITY_NULL;
    bool dup = rng_below(m, 2) != 0;
    if (world_full(m)) {
      op_read(m);
      return;
    }
    ids[0] = m->ids[pick_comp(m)];
    ids[1] = dup ? ids[0] : max_id(m) + 1 + rng_below(m, 50);
    ids[2] = m->ids[C_U32] == ids[0] ? m->ids[C_V3] : m->ids[C_U32];
    ids[3] = WEFT_COMPONENT_NONE;
    if (rng_below(m, 2)) {
      weft_component_t t = ids[1];
      ids[1] = ids[2];
      ids[2] = t;
    }
    oplog_t *lg =
        op_log(m, dup ? "spawn_with dup" : "spawn_with unknown", 0, 0, 0);
    rc = weft_spawn_with(m->w, ids, NULL, &out);
    lg->rc = rc;
    MCHECK(m, rc == (dup ? WEFT_EINVAL : WEFT_ENOCOMP),
           "weft_spawn_with(%s) = %s", dup ? "duplicate" : "unknown id",
           weft_strerror_name(rc));
    if (rng_below(m, 4) == 0 && (uint64_t)m->nlive + m->retired + 3 <= m->cap) {
      lg = op_log(m, "spawn_batch invalid", 0, 0, 0);
      rc = weft_spawn_batch(m->w, 3, ids, NULL, NULL, m->bout);
      lg->rc = rc;
      MCHECK(m, rc == (dup ? WEFT_EINVAL : WEFT_ENOCOMP),
             "weft_spawn_batch(%s) = %s", dup ? "duplicate" : "unknown id",
             weft_strerror_name(rc));
    }
  } else {
    /* Reading an absent component, enabling an absent one. */
    uint32_t c = pick_comp(m);
    if (has_bit(l->present, c)) {
      op_read(m);
      return;
    }
    oplog_t *lg = op_log(m, "absent", e, c, 0);
    rc = rng_below(m, 2) ? weft_enable(m->w, e, m->ids[c])
                         : weft_disable(m->w, e, m->ids[c]);
    lg->rc = rc;
    MCHECK(m, rc == WEFT_ENOTFOUND, "enable/disable(absent %s) = %s",
           specs[c].name, weft_strerror_name(rc));
  }
  m->moves_expect = 0;
  check_entity(m, l);
}

static void op_reserve(model_t *m) {
  weft_world_stats_t st;
  int rc;
  if (m->cap < WEFT_ENTITY_MAX) {
    oplog_t *lg = op_log(m, "reserve over capacity", 0, 0, m->cap + 1);
    rc = weft_world_reserve(m->w, m->cap + 1);
    lg->rc = rc;
    MCHECK(m, rc == WEFT_EFULL, "weft_world_reserve(capacity + 1) = %s",
           weft_strerror_name(rc));
  }
  uint32_t n = m->nlive + 1 + rng_below(m, 4096);
  if (n > m->cap) {
    n = m->cap;
  }
  oplog_t *lg = op_log(m, "reserve", 0, 0, n);
  rc = weft_world_reserve(m->w, n);
  lg->rc = rc;
  MCHECK(m, rc == 0, "weft_world_reserve(%" PRIu32 ") = %s", n,
         weft_strerror_name(rc));
  weft_world_stats(m->w, &st);
  MCHECK(m, st.slots_reserved >= n,
         "slots_reserved %" PRIu32 " after reserving %" PRIu32,
         st.slots_reserved, n);
}

/* Frees empty chunk memory; the chunk bytes drop by exactly what it says
 * and a full check right after proves no live row moved or changed. */
static void op_trim(model_t *m) {
  weft_world_stats_t before, after;
  weft_world_stats(m->w, &before);
  oplog_t *lg = op_log(m, "trim", 0, 0, 0);
  uint64_t freed = weft_world_trim(m->w);
  lg->rc = 0;
  weft_world_stats(m->w, &after);
  MCHECK(m, after.chunk_bytes + freed == before.chunk_bytes,
         "trim freed %" PRIu64 " but chunk_bytes went %" PRIu64 " -> %" PRIu64,
         freed, before.chunk_bytes, after.chunk_bytes);
  MCHECK(m, after.chunks_live == before.chunks_live,
         "trim changed live chunks %" PRIu32 " -> %" PRIu32, before.chunks_live,
         after.chunks_live);
  full_check(m);
}

static void op_clear(model_t *m) {
  weft_world_stats_t st;
  uint32_t nl = m->nlive, old_retired = m->retired, definite = 0, maybe = 0;
  uint64_t despawns0 = m->despawns;

  op_log(m, "clear", 0, 0, nl);
  m->n_clear++;
  /* Dead slots: the clear may advance their generation once more. */
  for (uint32_t idx = 0; idx < m->nslots && idx < m->max_idx; idx++) {
    oslot_t *s = &m->slots[idx];
    if (s->handle == 0 && s->last_gen > 0 && s->last_gen < m->max_gen) {
      s->fuzz++;
    }
  }
  weft_world_clear(m->w);
  while (m->nlive > 0) {
    weft_entity_t e = oracle_kill(m, m->nlive - 1);
    MCHECK(m, !weft_is_alive(m->w, e), "entity alive after clear");
  }
  for (uint32_t idx = 0; idx < m->nslots && idx < m->max_idx; idx++) {
    const oslot_t *s = &m->slots[idx];
    if (s->last_gen >= m->max_gen) {
      definite++;
    } else if (s->last_gen > 0 && s->last_gen + 1 + s->fuzz > m->max_gen) {
      maybe++;
    }
  }
  weft_world_stats(m->w, &st);
  MCHECK(m, st.alive == 0 && weft_world_count(m->w) == 0,
         "alive %" PRIu32 " after clear", st.alive);
  MCHECK(m, st.retired >= definite && st.retired <= definite + maybe,
         "after clear: retired %" PRIu32 ", oracle says %" PRIu32
         " retired for sure and %" PRIu32 " maybe",
         st.retired, definite, maybe);
  MCHECK(m, st.retired >= m->retired && m->retired >= old_retired,
         "retired count went down over a clear: %" PRIu32 " -> %" PRIu32,
         m->retired, st.retired);
  MCHECK(m, st.despawns == despawns0 || st.despawns == despawns0 + nl,
         "stats.despawns %" PRIu64 " after clearing %" PRIu32
         " entities (was %" PRIu64 ")",
         st.despawns, nl, despawns0);
  MCHECK(m, st.chunks_live == 0, "chunks_live %" PRIu32 " after clear",
         st.chunks_live);
  m->despawns = st.despawns;
  m->retired = st.retired;
  m->moves_expect = -1;
  /* Empty world: the full check is cheap now and covers the queries. */
  post_op(m);
  full_check(m);
}

static void model_step(model_t *m) {
  uint32_t r;
  m->opno++;
  m->epoch_op++;
  if (m->conf.clear_odds && rng_below(m, m->conf.clear_odds) == 0) {
    op_clear(m);
    return;
  }
  r = rng_below(m, 1000);
  if (r < 280 || m->nlive == 0) {
    op_population(m);
  } else if (r < 460) {
    op_toggle(m);
  } else if (r < 560) {
    op_set(m);
  } else if (r < 650) {
    op_enable(m);
  } else if (r < 710) {
    op_write_ptr(m);
  } else if (r < 780) {
    op_read(m);
  } else if (r < 800) {
    op_get_many(m);
  } else if (r < 930) {
    op_stale(m);
  } else if (r < 998) {
    op_errors(m);
  } else if (r < 999 || rng_below(m, 128) != 0) {
    op_reserve(m);
  } else {
    op_trim(m);
  }
}

/* Runs ops operations in the current configuration, replacing the world
 * whenever every one of its slots has retired. */
static void model_run(model_t *m, uint64_t ops) {
  uint64_t end = m->opno + ops;
  uint64_t every =
      m->check_every_env ? m->check_every_env : m->conf.check_every;
  model_open(m);
  m->next_check = m->opno + every;
  while (m->opno < end) {
    model_step(m);
    post_op(m);
    if (m->opno >= m->next_check) {
      full_check(m);
      m->next_check = m->opno + every;
    }
    if (m->nlive == 0 && m->retired == m->cap) {
      /* Exhausted: spawns must keep failing with ERETIRED. */
      op_spawn(m);
      post_op(m);
      m->n_exhausted++;
      model_close(m);
      model_open(m);
      m->next_check = m->opno + every;
    }
  }
  model_close(m);
}

static void model_report(const model_t *m, double secs) {
  print_message("%s: seed 0x%016" PRIx64 ", %" PRIu64 " ops in %.1f s: %" PRIu64
                " worlds (%" PRIu64 " exhausted), %" PRIu64 " spawned, %" PRIu64
                " despawned, %" PRIu64 " batches (%" PRIu64
                " entities, %" PRIu64 " contiguous, %" PRIu64
                " refused), %" PRIu64 " EFULL, %" PRIu64 " ERETIRED, %" PRIu64
                " slots retired, %" PRIu64 " clears, %" PRIu64
                " stale ops, %" PRIu64 " full checks\n",
                m->name, m->seed, m->opno, secs, m->n_worlds, m->n_exhausted,
                m->n_spawn_ok, m->n_despawn, m->n_batches, m->n_batch_ents,
                m->n_contig, m->n_batch_full, m->n_efull, m->n_eretired,
                m->n_retire, m->n_clear, m->n_stale_ops, m->n_full_checks);
}

/* ------------------------------------------------------------------------ */
/* Tests                                                                    */
/* ------------------------------------------------------------------------ */

/* Small worlds: capacity 20,000 with 64 generations per slot, then much
 * smaller ones that run out of slots and retire every slot, so that EFULL,
 * ERETIRED and retirement are exercised against the oracle. */
static void test_model_small_world_retirement(void **state) {
  (void)state;
  uint64_t ops = wt_env_u64("stress_model", "WEFT_MODEL_OPS", DEFAULT_OPS);
  model_t *m = model_new("small_world_retirement");
  double t0 = wt_now_s();
  static const wconf_t epochs[] = {
      {.capacity = 20000,
       .max_generation = 64,
       .chunk_size = WEFT_CHUNK_SIZE_MIN,
       .period = 240000,
       .tmin = 0,
       .tmax = 22000,
       .check_every = 50000,
       .batch_pct = 6,
       .batch_max = 48,
       .mass_pct = 10,
       .mass_max = 16,
       .clear_odds = 20000,
       .grave_cap = 4096},
      {.capacity = 1000,
       .max_generation = 8,
       .period = 12000,
       .tmin = 0,
       .tmax = 1100,
       .check_every = 10000,
       .batch_pct = 6,
       .batch_max = 40,
       .mass_pct = 10,
       .mass_max = 8,
       .clear_odds = 20000,
       .grave_cap = 1024},
      {.capacity = 64,
       .max_generation = 3,
       .period = 900,
       .tmin = 0,
       .tmax = 72,
       .check_every = 2000,
       .batch_pct = 6,
       .batch_max = 12,
       .mass_pct = 10,
       .mass_max = 4,
       .clear_odds = 20000,
       .grave_cap = 256},
  };
  static const uint32_t share[] = {55, 30, 15};
  uint64_t done = 0;
  for (uint32_t i = 0; i < 3; i++) {
    uint64_t n = i == 2 ? ops - done : ops * share[i] / 100;
    m->conf = epochs[i];
    model_run(m, n);
    done += n;
  }
  model_report(m, wt_now_s() - t0);
  if (ops >= DEFAULT_OPS) {
    /* The default run must reach the paths this test exists for. */
    assert_true(m->n_efull > 0);
    assert_true(m->n_eretired > 0);
    assert_true(m->n_retire > 0);
    assert_true(m->n_exhausted > 0);
    assert_true(m->n_clear > 0);
    assert_true(m->n_batch_full > 0);
  }
  model_free(m);
}

/* A default world (capacity WEFT_ENTITY_MAX, full generations) with a
 * population of up to ~100,000 built mostly by filled batch spawns. */
static void test_model_large_world_batches(void **state) {
  (void)state;
  uint64_t ops = wt_env_u64("stress_model", "WEFT_MODEL_OPS", DEFAULT_OPS);
  model_t *m = model_new("large_world_batches");
  double t0 = wt_now_s();
  static const wconf_t conf = {.period = 400000,
                               .tmin = 10000,
                               .tmax = 100000,
                               .check_every = 125000,
                               .batch_pct = 10,
                               .batch_max = 2000,
                               .mass_pct = 25,
                               .mass_max = 64,
                               .clear_odds = 250000,
                               .grave_cap = 16384};
  m->conf = conf;
  m->next_tag = 200;
  model_run(m, ops);
  model_report(m, wt_now_s() - t0);
  if (ops >= DEFAULT_OPS) {
    assert_true(m->n_batch_ents > 10000);
    assert_true(m->n_contig > 0);
  }
  model_free(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_model_small_world_retirement),
      cmocka_unit_test(test_model_large_world_batches),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
