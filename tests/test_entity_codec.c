/* SPDX-License-Identifier: MIT */
/*
 * The per-entity codec (weft/entity_codec.h): random entities of every
 * kind of component (plain, tag, field-level SoA, tracked, transient, with
 * requirements) round-trip between worlds that register them in another
 * order, checked against a model; subset codecs; migration between
 * layouts; every truncation and single-bit flip of records and tables is
 * refused with the world unchanged or decodes to exactly what the bytes
 * say; stale handles miss; encoding and refreshing allocate nothing.
 */
#include "support/weft_test.h"

#include <stddef.h>
#include <stdlib.h>

#include "fuzz/entity_codec_world.h"

typedef struct pos_t {
  float x, y, z;
} pos_t;

typedef struct vel_t {
  float vx, vy;
} vel_t;

typedef struct cache_t {
  uint64_t v;
} cache_t;

/* armor requires cache, a transient component, with this default. */
static const cache_t CACHE_DEFAULT = {77};

enum { C_POS, C_VEL, C_HP, C_TAG, C_CACHE, C_ARMOR, NC };

typedef struct cw_t {
  weft_world_t *w;
  weft_component_t c[NC];
  weft_component_t likes; /* a relation, which no codec carries */
} cw_t;

static weft_component_t reg_pos(weft_world_t *w) {
  static const weft_field_desc_t f[] = {
      {"x", offsetof(pos_t, x), 4, WEFT_FIELD_F32},
      {"y", offsetof(pos_t, y), 4, WEFT_FIELD_F32},
      {"z", offsetof(pos_t, z), 4, WEFT_FIELD_F32}};
  weft_component_desc_t d = {.name = "pos",
                             .size = sizeof(pos_t),
                             .alignment = 4,
                             .fields = f,
                             .field_count = 3};
  weft_component_t id = 0;
  assert_int_equal(weft_component_register(w, &d, &id), WEFT_OK);
  return id;
}

static weft_component_t reg_vel(weft_world_t *w, uint32_t flags) {
  static const weft_field_desc_t f[] = {
      {"vx", offsetof(vel_t, vx), 4, WEFT_FIELD_F32},
      {"vy", offsetof(vel_t, vy), 4, WEFT_FIELD_F32}};
  weft_component_desc_t d = {.name = "vel",
                             .size = sizeof(vel_t),
                             .alignment = 4,
                             .fields = f,
                             .field_count = 2,
                             .flags = flags};
  weft_component_t id = 0;
  assert_int_equal(weft_component_register(w, &d, &id), WEFT_OK);
  return id;
}

static weft_component_t reg_flags(weft_world_t *w, const char *name,
                                  uint32_t size, uint32_t flags) {
  weft_component_desc_t d = {.name = name, .size = size, .flags = flags};
  weft_component_t id = 0;
  assert_int_equal(weft_component_register(w, &d, &id), WEFT_OK);
  return id;
}

/* A world with the six components (in reverse order when `reversed`, so
 * that ids differ between worlds) and a relation; armor requires cache
 * when `req`. */
static cw_t cw_new(uint8_t tag, bool reversed, bool req) {
  weft_world_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.world_tag = tag;
  cw_t x;
  memset(&x, 0, sizeof x);
  x.w = wt_world_new(&cfg);
  for (int k = 0; k < NC; k++) {
    int i = reversed ? NC - 1 - k : k;
    switch (i) {
    case C_POS:
      x.c[i] = reg_pos(x.w);
      break;
    case C_VEL:
      x.c[i] = reg_vel(x.w, WEFT_COMPONENT_SOA);
      break;
    case C_HP:
      x.c[i] = reg_flags(x.w, "hp", 4, WEFT_COMPONENT_TRACK_DIRTY);
      break;
    case C_TAG:
      x.c[i] = reg_flags(x.w, "tag", 0, 0);
      break;
    case C_CACHE:
      x.c[i] = reg_flags(x.w, "cache", 8, WEFT_COMPONENT_TRANSIENT);
      break;
    default:
      x.c[i] = reg_flags(x.w, "armor", 4, 0);
      break;
    }
  }
  weft_relation_desc_t rd;
  memset(&rd, 0, sizeof rd);
  rd.name = "likes";
  assert_int_equal(weft_relation_register(x.w, &rd, &x.likes), WEFT_OK);
  if (req)
    assert_int_equal(
        weft_component_require(x.w, x.c[C_ARMOR], x.c[C_CACHE], &CACHE_DEFAULT),
        WEFT_OK);
  return x;
}

/* ---- the model ---------------------------------------------------------- */

typedef struct ent_t {
  uint32_t has, off; /* bits by C_* */
  pos_t pos;
  vel_t vel;
  uint32_t hp;
  cache_t cache;
  uint32_t armor;
} ent_t;

static ent_t ent_random(wt_rng_t *r, bool req) {
  ent_t m;
  memset(&m, 0, sizeof m);
  m.has = (uint32_t)wt_below(r, 1u << NC);
  if (req && (m.has & 1u << C_ARMOR))
    m.has |= 1u << C_CACHE;
  m.off = m.has & (uint32_t)wt_below(r, 1u << NC);
  m.pos = (pos_t){(float)wt_below(r, 1000), (float)wt_below(r, 1000), 0.5f};
  m.vel = (vel_t){(float)wt_below(r, 100), -(float)wt_below(r, 100)};
  m.hp = (uint32_t)wt_next(r);
  m.cache.v = wt_next(r);
  m.armor = (uint32_t)wt_next(r);
  return m;
}

static const void *ent_value(const ent_t *m, int i) {
  switch (i) {
  case C_POS:
    return &m->pos;
  case C_VEL:
    return &m->vel;
  case C_HP:
    return &m->hp;
  case C_CACHE:
    return &m->cache;
  case C_ARMOR:
    return &m->armor;
  default:
    return NULL;
  }
}

static weft_entity_t ent_spawn(const cw_t *x, const ent_t *m) {
  weft_component_t ids[NC + 1];
  const void *vals[NC];
  uint32_t n = 0;
  for (int i = 0; i < NC; i++)
    if (m->has >> i & 1) {
      ids[n] = x->c[i];
      vals[n++] = ent_value(m, i);
    }
  ids[n] = 0;
  weft_entity_t e = wt_spawn_with(x->w, ids, vals);
  for (int i = 0; i < NC; i++)
    if (m->off >> i & 1)
      assert_int_equal(weft_disable(x->w, e, x->c[i]), WEFT_OK);
  return e;
}

/* What entity e of world x must hold: m, except that after a trip
 * (`arrived`) the transient cache holds its requirement default (armor
 * requires it) or zeros. */
static void ent_check(const cw_t *x, weft_entity_t e, const ent_t *m,
                      bool arrived) {
  for (int i = 0; i < NC; i++) {
    bool has = m->has >> i & 1;
    assert_int_equal(weft_has(x->w, e, x->c[i]), has);
    if (!has)
      continue;
    assert_int_equal(weft_is_enabled(x->w, e, x->c[i]), !(m->off >> i & 1));
    if (i == C_TAG)
      continue;
    uint8_t got[16], want[16];
    memset(got, 0, sizeof got);
    memset(want, 0, sizeof want);
    assert_int_equal(weft_read(x->w, e, x->c[i], got), WEFT_OK);
    const void *v = ent_value(m, i);
    weft_component_info_t info;
    assert_int_equal(weft_component_info(x->w, x->c[i], &info), WEFT_OK);
    if (i == C_CACHE && arrived) {
      if (m->has >> C_ARMOR & 1)
        memcpy(want, &CACHE_DEFAULT, sizeof CACHE_DEFAULT);
    } else {
      memcpy(want, v, info.size);
    }
    assert_memory_equal(got, want, info.size);
  }
}

static weft_entity_codec_t *codec(const cw_t *x) {
  weft_entity_codec_t *k = NULL;
  assert_int_equal(weft_entity_codec_new(x->w, NULL, &k), WEFT_OK);
  return k;
}

/* Binds b to a's table. */
static void bind_to(weft_entity_codec_t *b, const weft_entity_codec_t *a) {
  size_t len = 0;
  assert_int_equal(weft_entity_codec_table(a, NULL, 0, &len), WEFT_ELIMIT);
  uint8_t *t = malloc(len);
  assert_int_equal(weft_entity_codec_table(a, t, len, &len), WEFT_OK);
  int rc = weft_entity_codec_bind(b, t, len);
  if (rc)
    fail_msg("bind: %s", weft_strerror(rc));
  free(t);
}

static size_t encode(weft_entity_codec_t *k, weft_entity_t e, uint8_t *buf,
                     size_t cap) {
  size_t len = 0;
  assert_int_equal(weft_entity_encode(k, e, buf, cap, &len), WEFT_OK);
  assert_true(len <= weft_entity_codec_max_record(k));
  return len;
}

/* ---- tests -------------------------------------------------------------- */

/* Random entities of every kind go from one world to another that
 * registers the components in the opposite order, and into the same
 * world, and come out as the model says. */
static void test_entity_codec_round_trip(void **state) {
  (void)state;
  cw_t a = cw_new(1, false, true), b = cw_new(2, true, true);
  weft_entity_codec_t *ka = codec(&a), *kb = codec(&b);
  bind_to(kb, ka);
  wt_rng_t r = wt_rng(11);
  uint8_t buf[256];
  weft_entity_t hub = wt_spawn(a.w);
  for (int i = 0; i < 400; i++) {
    ent_t m = ent_random(&r, true);
    weft_entity_t e = ent_spawn(&a, &m);
    if (i % 2) /* never travels */
      assert_int_equal(weft_relation_add(a.w, e, a.likes, hub, NULL), 0);
    ent_check(&a, e, &m, false);
    size_t len = encode(ka, e, buf, sizeof buf);
    weft_entity_t f = 0, g = 0;
    assert_int_equal(weft_entity_decode(kb, buf, len, &f), WEFT_OK);
    ent_check(&b, f, &m, true);
    assert_false(weft_has(b.w, f, b.likes));
    /* Into its own world, with its own (unbound) table. */
    assert_int_equal(weft_entity_decode(ka, buf, len, &g), WEFT_OK);
    ent_check(&a, g, &m, true);
    /* And back: b's record is a's bytes again. */
    uint8_t back[256];
    size_t blen = encode(kb, f, back, sizeof back);
    weft_entity_t h = 0;
    assert_int_equal(weft_entity_codec_bind(ka, NULL, 0), WEFT_EFORMAT);
    bind_to(ka, kb);
    assert_int_equal(weft_entity_decode(ka, back, blen, &h), WEFT_OK);
    ent_check(&a, h, &m, true);
    bind_to(ka, ka);
  }
  weft_entity_codec_free(ka);
  weft_entity_codec_free(kb);
  weft_world_destroy(a.w);
  weft_world_destroy(b.w);
}

/* decode_into overwrites, adds what is missing and sets the record's
 * enabled state; other components stay; a present transient keeps its
 * value. */
static void test_entity_codec_decode_into(void **state) {
  (void)state;
  cw_t a = cw_new(1, false, true), b = cw_new(2, true, true);
  weft_entity_codec_t *ka = codec(&a), *kb = codec(&b);
  bind_to(kb, ka);
  wt_rng_t r = wt_rng(5);
  uint8_t buf[256];
  for (int i = 0; i < 300; i++) {
    ent_t m = ent_random(&r, true), old = ent_random(&r, true);
    weft_entity_t e = ent_spawn(&a, &m), f = ent_spawn(&b, &old);
    size_t len = encode(ka, e, buf, sizeof buf);
    assert_int_equal(weft_entity_decode_into(kb, f, buf, len), WEFT_OK);
    ent_t want = m;
    want.has |= old.has;
    want.off = m.off | (old.off & ~m.has);
    for (int c = 0; c < NC; c++)
      if ((old.has >> c & 1) && !(m.has >> c & 1) && c != C_TAG)
        memcpy((void *)ent_value(&want, c), ent_value(&old, c),
               c == C_POS     ? sizeof(pos_t)
               : c == C_VEL   ? sizeof(vel_t)
               : c == C_CACHE ? 8
                              : 4);
    /* The transient cache: kept when f had it, else as a decode. */
    bool kept = old.has >> C_CACHE & 1;
    if (kept)
      want.cache = old.cache;
    ent_check(&b, f, &want, !kept);
  }
  weft_entity_codec_free(ka);
  weft_entity_codec_free(kb);
  weft_world_destroy(a.w);
  weft_world_destroy(b.w);
}

/* A codec of a few components carries only those; bad lists are
 * refused; a table with more than a subset codec covers is refused. */
static void test_entity_codec_subset(void **state) {
  (void)state;
  cw_t a = cw_new(1, false, false), b = cw_new(2, true, false);
  weft_component_t only[] = {a.c[C_TAG], a.c[C_VEL]};
  weft_entity_codec_config_t cfg = {only, 2};
  weft_entity_codec_t *ka = NULL, *full = codec(&a);
  assert_int_equal(weft_entity_codec_new(a.w, &cfg, &ka), WEFT_OK);
  assert_true(weft_entity_codec_max_record(ka) <
              weft_entity_codec_max_record(full));
  weft_component_t ob[] = {b.c[C_VEL], b.c[C_TAG]};
  weft_entity_codec_config_t cb = {ob, 2};
  weft_entity_codec_t *kb = NULL;
  assert_int_equal(weft_entity_codec_new(b.w, &cb, &kb), WEFT_OK);
  bind_to(kb, ka);
  ent_t m;
  memset(&m, 0, sizeof m);
  m.has = (1u << NC) - 1;
  m.off = 1u << C_TAG;
  m.vel = (vel_t){3, 4};
  m.pos = (pos_t){1, 2, 3};
  weft_entity_t e = ent_spawn(&a, &m), f = 0;
  uint8_t buf[256];
  size_t len = encode(ka, e, buf, sizeof buf);
  assert_int_equal(len, 4 + 1 + 2 * 2 + sizeof(vel_t));
  assert_int_equal(weft_entity_decode(kb, buf, len, &f), WEFT_OK);
  ent_t want = m;
  want.has = 1u << C_TAG | 1u << C_VEL;
  ent_check(&b, f, &want, false);
  /* The full table names components kb does not cover. */
  size_t tlen = 0;
  uint8_t table[4096];
  assert_int_equal(weft_entity_codec_table(full, table, sizeof table, &tlen),
                   WEFT_OK);
  assert_int_equal(weft_entity_codec_bind(kb, table, tlen), WEFT_ENOCOMP);
  assert_non_null(strstr(weft_world_last_error(b.w), "codec's set"));
  /* kb keeps its binding. */
  assert_int_equal(weft_entity_decode(kb, buf, len, &f), WEFT_OK);
  /* Bad lists. */
  weft_entity_codec_t *bad = NULL;
  weft_component_t rel[] = {a.likes};
  weft_component_t twice[] = {a.c[C_POS], a.c[C_POS]};
  weft_component_t unknown[] = {999};
  cfg = (weft_entity_codec_config_t){rel, 1};
  assert_int_equal(weft_entity_codec_new(a.w, &cfg, &bad), WEFT_EINVAL);
  cfg = (weft_entity_codec_config_t){twice, 2};
  assert_int_equal(weft_entity_codec_new(a.w, &cfg, &bad), WEFT_EINVAL);
  cfg = (weft_entity_codec_config_t){unknown, 1};
  assert_int_equal(weft_entity_codec_new(a.w, &cfg, &bad), WEFT_ENOCOMP);
  cfg = (weft_entity_codec_config_t){NULL, 3};
  assert_int_equal(weft_entity_codec_new(a.w, &cfg, &bad), WEFT_EINVAL);
  assert_null(bad);
  weft_entity_codec_free(ka);
  weft_entity_codec_free(kb);
  weft_entity_codec_free(full);
  weft_world_destroy(a.w);
  weft_world_destroy(b.w);
}

/* pos as another program lays it out: y removed, w added, z first. */
typedef struct pos2_t {
  float z, x, w, pad;
} pos2_t;

static weft_component_t reg_pos2(weft_world_t *w) {
  weft_field_desc_t f[] = {{"z", offsetof(pos2_t, z), 4, WEFT_FIELD_F32},
                           {"x", offsetof(pos2_t, x), 4, WEFT_FIELD_F32},
                           {"w", offsetof(pos2_t, w), 4, WEFT_FIELD_F32}};
  weft_component_desc_t d = {.name = "pos",
                             .size = sizeof(pos2_t),
                             .alignment = 4,
                             .fields = f,
                             .field_count = 3};
  weft_component_t id = 0;
  assert_int_equal(weft_component_register(w, &d, &id), WEFT_OK);
  return id;
}

/* pos with x a double. */
static weft_component_t reg_posd(weft_world_t *w) {
  weft_field_desc_t f[] = {{"z", 0, 4, WEFT_FIELD_F32},
                           {"x", 8, 8, WEFT_FIELD_F64}};
  weft_component_desc_t d = {
      .name = "pos", .size = 16, .alignment = 8, .fields = f, .field_count = 2};
  weft_component_t id = 0;
  assert_int_equal(weft_component_register(w, &d, &id), WEFT_OK);
  return id;
}

/* Records cross between layouts by field name: pos migrates, vel changes
 * from SoA to AoS and back; a changed field size is refused. */
static void test_entity_codec_migrate(void **state) {
  (void)state;
  weft_world_t *a = wt_world_new(NULL), *b = wt_world_new(NULL),
               *c = wt_world_new(NULL), *d = wt_world_new(NULL);
  weft_component_t apos = reg_pos(a), avel = reg_vel(a, WEFT_COMPONENT_SOA);
  weft_component_t bvel = reg_vel(b, 0), bpos = reg_pos2(b);
  reg_vel(c, 0);
  reg_posd(c); /* x is a double there */
  reg_pos(d);
  reg_flags(d, "extra", 4, 0);
  weft_entity_codec_t *ka = NULL, *kb = NULL, *kc = NULL, *kd = NULL;
  assert_int_equal(weft_entity_codec_new(a, NULL, &ka), WEFT_OK);
  assert_int_equal(weft_entity_codec_new(b, NULL, &kb), WEFT_OK);
  assert_int_equal(weft_entity_codec_new(c, NULL, &kc), WEFT_OK);
  assert_int_equal(weft_entity_codec_new(d, NULL, &kd), WEFT_OK);
  bind_to(kb, ka);
  uint8_t buf[128];
  for (int i = 0; i < 20; i++) {
    pos_t p = {(float)i, (float)(i * 2), (float)(i * 3)};
    vel_t v = {(float)-i, (float)(i + 7)};
    weft_component_t ids[] = {apos, avel, 0};
    const void *vals[] = {&p, &v};
    weft_entity_t e = wt_spawn_with(a, ids, vals), f = 0;
    size_t len = encode(ka, e, buf, sizeof buf);
    assert_int_equal(weft_entity_decode(kb, buf, len, &f), WEFT_OK);
    pos2_t q;
    vel_t u;
    assert_int_equal(weft_read(b, f, bpos, &q), WEFT_OK);
    assert_int_equal(weft_read(b, f, bvel, &u), WEFT_OK);
    assert_true(q.x == p.x && q.z == p.z && q.w == 0.0f);
    assert_true(u.vx == v.vx && u.vy == v.vy);
    /* Back to a: y, which b does not have, arrives as zero. */
    weft_entity_t g = 0;
    bind_to(ka, kb);
    len = encode(kb, f, buf, sizeof buf);
    assert_int_equal(weft_entity_decode(ka, buf, len, &g), WEFT_OK);
    pos_t back;
    vel_t vb;
    assert_int_equal(weft_read(a, g, apos, &back), WEFT_OK);
    assert_int_equal(weft_read(a, g, avel, &vb), WEFT_OK);
    assert_true(back.x == p.x && back.y == 0.0f && back.z == p.z);
    assert_true(vb.vx == v.vx && vb.vy == v.vy);
    bind_to(ka, ka);
  }
  /* Refusals: a field's size changed; a component c does not register. */
  size_t tlen = 0;
  uint8_t table[1024];
  assert_int_equal(weft_entity_codec_table(kb, table, sizeof table, &tlen), 0);
  assert_int_equal(weft_entity_codec_bind(kc, table, tlen), WEFT_EMIGRATE);
  assert_non_null(strstr(weft_world_last_error(c), "'x'"));
  assert_int_equal(weft_entity_codec_table(kd, table, sizeof table, &tlen), 0);
  assert_int_equal(weft_entity_codec_bind(ka, table, tlen), WEFT_ENOCOMP);
  assert_non_null(strstr(weft_world_last_error(a), "extra"));
  weft_entity_codec_free(ka);
  weft_entity_codec_free(kb);
  weft_entity_codec_free(kc);
  weft_entity_codec_free(kd);
  weft_world_destroy(a);
  weft_world_destroy(b);
  weft_world_destroy(c);
  weft_world_destroy(d);
}

/* Decodes `rec` (len bytes) into b as a new entity and into `into`: on
 * failure b's digest and count are unchanged; on success the entities
 * encode back to exactly these bytes (b has no requirements, so a record
 * is all its entity holds). Returns whether it decoded. */
static bool decode_or_refuse(weft_entity_codec_t *kb, weft_world_t *w,
                             weft_entity_t into, const uint8_t *rec,
                             size_t len) {
  uint64_t d0 = weft_world_digest(w);
  uint32_t n0 = weft_world_count(w);
  weft_entity_t f = 0;
  uint8_t back[256];
  size_t blen = 0;
  int rc = weft_entity_decode(kb, rec, len, &f);
  if (rc) {
    assert_true(rc < 0);
    assert_true(strlen(weft_world_last_error(w)) > 0);
    assert_int_equal(weft_world_digest(w), d0);
    assert_int_equal(weft_world_count(w), n0);
    assert_int_equal(weft_entity_decode_into(kb, into, rec, len), rc);
    assert_int_equal(weft_world_digest(w), d0);
    return false;
  }
  assert_int_equal(weft_entity_encode(kb, f, back, sizeof back, &blen), 0);
  assert_int_equal(blen, len);
  assert_memory_equal(back, rec, len);
  assert_int_equal(weft_despawn(w, f), WEFT_OK);
  /* A fresh, empty target takes exactly the record too. */
  weft_entity_t g = wt_spawn(w);
  assert_int_equal(weft_entity_decode_into(kb, g, rec, len), WEFT_OK);
  assert_int_equal(weft_entity_encode(kb, g, back, sizeof back, &blen), 0);
  assert_memory_equal(back, rec, len);
  assert_int_equal(weft_despawn(w, g), WEFT_OK);
  return true;
}

/* Every truncation and every single-bit flip of records: refused with
 * the world unchanged, or decoded to exactly what the bytes say. */
static void test_entity_codec_damaged_records(void **state) {
  (void)state;
  /* The same order: b's own table (its encodes) is a's. */
  cw_t a = cw_new(1, false, false), b = cw_new(2, false, false);
  weft_entity_codec_t *ka = codec(&a), *kb = codec(&b);
  bind_to(kb, ka);
  weft_entity_t into = wt_spawn(b.w);
  wt_rng_t r = wt_rng(3);
  uint8_t rec[256];
  uint32_t decoded = 0, refused = 0;
  for (int i = 0; i < 12; i++) {
    ent_t m = ent_random(&r, false);
    m.has &= ~(1u << C_CACHE); /* a transient's bytes do not travel */
    m.off &= m.has;
    size_t len = encode(ka, ent_spawn(&a, &m), rec, sizeof rec);
    assert_true(decode_or_refuse(kb, b.w, into, rec, len));
    for (size_t cut = 0; cut < len; cut++) {
      assert_false(decode_or_refuse(kb, b.w, into, rec, cut));
      refused++;
    }
    for (size_t bit = 0; bit < 8 * len; bit++) {
      rec[bit / 8] ^= (uint8_t)(1u << bit % 8);
      if (decode_or_refuse(kb, b.w, into, rec, len))
        decoded++;
      else
        refused++;
      rec[bit / 8] ^= (uint8_t)(1u << bit % 8);
    }
  }
  /* Value bits decode (as other values); structure bits are refused. */
  assert_true(decoded > 0 && refused > 0);
  weft_entity_codec_free(ka);
  weft_entity_codec_free(kb);
  weft_world_destroy(a.w);
  weft_world_destroy(b.w);
}

/* Every truncation and single-bit flip of a table is refused, and the
 * codec keeps decoding with the binding it had. */
static void test_entity_codec_damaged_tables(void **state) {
  (void)state;
  cw_t a = cw_new(1, false, true), b = cw_new(2, true, true);
  weft_entity_codec_t *ka = codec(&a), *kb = codec(&b);
  size_t len = 0;
  weft_entity_codec_table(ka, NULL, 0, &len);
  uint8_t *t = malloc(len);
  assert_int_equal(weft_entity_codec_table(ka, t, len, &len), WEFT_OK);
  ent_t m;
  memset(&m, 0, sizeof m);
  m.has = 1u << C_POS | 1u << C_TAG;
  m.pos = (pos_t){1, 2, 3};
  uint8_t rec[128];
  size_t rlen = encode(ka, ent_spawn(&a, &m), rec, sizeof rec);
  bind_to(kb, ka);
  for (size_t cut = 0; cut < len; cut++) {
    int rc = weft_entity_codec_bind(kb, t, cut);
    assert_int_equal(rc, WEFT_EFORMAT);
  }
  for (size_t bit = 0; bit < 8 * len; bit++) {
    t[bit / 8] ^= (uint8_t)(1u << bit % 8);
    int rc = weft_entity_codec_bind(kb, t, len);
    if (rc == 0)
      fail_msg("bit %zu flipped: the table was accepted", bit);
    assert_non_null(strstr(weft_world_last_error(b.w), "table rejected"));
    t[bit / 8] ^= (uint8_t)(1u << bit % 8);
  }
  weft_entity_t f = 0;
  assert_int_equal(weft_entity_decode(kb, rec, rlen, &f), WEFT_OK);
  ent_check(&b, f, &m, true);
  free(t);
  weft_entity_codec_free(ka);
  weft_entity_codec_free(kb);
  weft_world_destroy(a.w);
  weft_world_destroy(b.w);
}

/* Stale, foreign and null handles miss, counted, and change nothing;
 * small buffers say how much is needed. */
static void test_entity_codec_stale_and_small(void **state) {
  (void)state;
  cw_t a = cw_new(1, false, true), b = cw_new(2, false, true);
  weft_entity_codec_t *ka = codec(&a);
  ent_t m;
  memset(&m, 0, sizeof m);
  m.has = 1u << C_POS | 1u << C_HP;
  weft_entity_t e = ent_spawn(&a, &m), dead = ent_spawn(&a, &m);
  weft_entity_t foreign = ent_spawn(&b, &m);
  assert_int_equal(weft_despawn(a.w, dead), WEFT_OK);
  uint8_t buf[128];
  size_t len = 0;
  uint64_t stale0 = wt_stats(a.w).stale;
  assert_int_equal(weft_entity_encode(ka, dead, buf, sizeof buf, &len),
                   WEFT_ESTALE);
  assert_int_equal(weft_entity_encode(ka, foreign, buf, sizeof buf, &len),
                   WEFT_ESTALE);
  assert_int_equal(weft_entity_encode(ka, 0, buf, sizeof buf, &len),
                   WEFT_ESTALE);
  len = encode(ka, e, buf, sizeof buf);
  uint64_t d0 = weft_world_digest(a.w);
  assert_int_equal(weft_entity_decode_into(ka, dead, buf, len), WEFT_ESTALE);
  assert_int_equal(weft_entity_decode_into(ka, foreign, buf, len), WEFT_ESTALE);
  assert_int_equal(weft_world_digest(a.w), d0);
  assert_true(wt_stats(a.w).stale >= stale0 + 5);
  /* Too small: nothing written, the size needed reported. */
  uint8_t small[8];
  memset(small, 0xab, sizeof small);
  size_t need = 0;
  assert_int_equal(weft_entity_encode(ka, e, small, sizeof small, &need),
                   WEFT_ELIMIT);
  assert_int_equal(need, len);
  for (size_t i = 0; i < sizeof small; i++)
    assert_int_equal(small[i], 0xab);
  assert_int_equal(weft_entity_encode(ka, e, NULL, 0, &need), WEFT_ELIMIT);
  assert_int_equal(need, len);
  assert_int_equal(weft_entity_codec_table(ka, small, sizeof small, &need),
                   WEFT_ELIMIT);
  assert_true(need > sizeof small);
  assert_int_equal(weft_entity_encode(NULL, e, buf, sizeof buf, &len),
                   WEFT_EINVAL);
  assert_int_equal(weft_entity_decode(ka, NULL, 4, &e), WEFT_EINVAL);
  weft_entity_codec_free(ka);
  weft_world_destroy(a.w);
  weft_world_destroy(b.w);
}

/* Encoding entities and refreshing copies that have their components
 * allocate nothing, by the world's count and jemalloc's. */
static void test_entity_codec_allocates_nothing(void **state) {
  (void)state;
  cw_t a = cw_new(1, false, true), b = cw_new(2, true, true);
  weft_entity_codec_t *ka = codec(&a), *kb = codec(&b);
  bind_to(kb, ka);
  wt_rng_t r = wt_rng(9);
  enum { N = 64 };
  weft_entity_t src[N], dst[N];
  uint8_t buf[256];
  for (int i = 0; i < N; i++) {
    ent_t m = ent_random(&r, true);
    src[i] = ent_spawn(&a, &m);
    size_t len = encode(ka, src[i], buf, sizeof buf);
    assert_int_equal(weft_entity_decode(kb, buf, len, &dst[i]), WEFT_OK);
  }
  wt_alloc_probe_t pa = wt_alloc_probe(a.w);
  for (int i = 0; i < N; i++)
    encode(ka, src[i], buf, sizeof buf);
  wt_assert_no_alloc(a.w, &pa, "encode");
  wt_alloc_probe_t p = wt_alloc_probe(b.w);
  pa = wt_alloc_probe(a.w);
  for (int round = 0; round < 10; round++)
    for (int i = 0; i < N; i++) {
      if (weft_has(a.w, src[i], a.c[C_HP])) /* a value that changes */
        assert_int_equal(weft_set(a.w, src[i], a.c[C_HP], &round), 0);
      size_t len = encode(ka, src[i], buf, sizeof buf);
      assert_int_equal(weft_entity_decode_into(kb, dst[i], buf, len), 0);
    }
  wt_assert_no_alloc(a.w, &pa, "set + encode");
  wt_assert_no_alloc(b.w, &p, "decode_into");
  /* The refreshed copies hold the last values. */
  for (int i = 0; i < N; i++)
    for (int c = 0; c < NC; c++) {
      assert_int_equal(weft_has(a.w, src[i], a.c[c]),
                       weft_has(b.w, dst[i], b.c[c]));
      uint8_t x[16] = {0}, y[16] = {0};
      if (c == C_TAG || c == C_CACHE || !weft_has(a.w, src[i], a.c[c]))
        continue;
      assert_int_equal(weft_read(a.w, src[i], a.c[c], x), 0);
      assert_int_equal(weft_read(b.w, dst[i], b.c[c], y), 0);
      assert_memory_equal(x, y, sizeof x);
    }
  weft_entity_codec_free(ka);
  weft_entity_codec_free(kb);
  weft_world_destroy(a.w);
  weft_world_destroy(b.w);
}

/* More components than a spawn list holds: the rest are added, and a
 * decode inside a deferred scope is staged like a spawn. */
static void test_entity_codec_many_and_staged(void **state) {
  (void)state;
  weft_world_t *a = wt_world_new(NULL), *b = wt_world_new(NULL);
  enum { M = 80 };
  weft_component_t ia[M + 1], ib[M + 1];
  const void *vals[M];
  uint32_t v[M];
  char name[16];
  for (int i = 0; i < M; i++) {
    snprintf(name, sizeof name, "c%d", i);
    ia[i] = reg_flags(a, name, i % 3 ? 4 : 0, 0);
    snprintf(name, sizeof name, "c%d", M - 1 - i);
    ib[M - 1 - i] = reg_flags(b, name, (M - 1 - i) % 3 ? 4 : 0, 0);
    v[i] = (uint32_t)i * 1000u;
    vals[i] = i % 3 ? &v[i] : NULL;
  }
  ia[M] = 0;
  weft_entity_t e = wt_spawn(a);
  for (int i = 0; i < M; i++)
    assert_int_equal(weft_add(a, e, ia[i], vals[i]), WEFT_OK);
  weft_entity_codec_t *ka = NULL, *kb = NULL;
  assert_int_equal(weft_entity_codec_new(a, NULL, &ka), WEFT_OK);
  assert_int_equal(weft_entity_codec_new(b, NULL, &kb), WEFT_OK);
  bind_to(kb, ka);
  uint8_t buf[1024];
  size_t len = encode(ka, e, buf, sizeof buf);
  assert_int_equal(len, weft_entity_codec_max_record(ka));
  weft_entity_t f = 0, g = 0;
  assert_int_equal(weft_entity_decode(kb, buf, len, &f), WEFT_OK);
  assert_int_equal(weft_world_defer_begin(b), 1);
  assert_int_equal(weft_entity_decode(kb, buf, len, &g), WEFT_OK);
  assert_int_equal(weft_world_defer_end(b), WEFT_OK);
  for (int i = 0; i < M; i++) {
    assert_true(weft_has(b, f, ib[i]) && weft_has(b, g, ib[i]));
    uint32_t x = 0, y = 0;
    if (i % 3) {
      assert_int_equal(weft_read(b, f, ib[i], &x), WEFT_OK);
      assert_int_equal(weft_read(b, g, ib[i], &y), WEFT_OK);
      assert_int_equal(x, v[i]);
      assert_int_equal(y, v[i]);
    }
  }
  weft_entity_codec_free(ka);
  weft_entity_codec_free(kb);
  weft_world_destroy(a);
  weft_world_destroy(b);
}

static void count_spawns(weft_world_t *w, const weft_event_t *ev, void *user) {
  (void)w;
  if (ev->kind == WEFT_EVENT_SPAWN)
    ++*(uint32_t *)user;
}

/* In a world with observers (every structural call drains at once), a
 * decode is told as a spawn and lands whole, disabled components
 * included; a requirement the receiving program declares (and the
 * sending one does not) brings its component with its default. */
static void test_entity_codec_observers_and_requirements(void **state) {
  (void)state;
  cw_t a = cw_new(1, false, false), b = cw_new(2, true, false);
  weft_component_t regen = reg_flags(b.w, "regen", 4, 0);
  const uint32_t regen_default = 5;
  assert_int_equal(
      weft_component_require(b.w, b.c[C_HP], regen, &regen_default), 0);
  uint32_t spawns = 0;
  weft_observer_desc_t od = {
      .events = WEFT_EVENT_SPAWN, .fn = count_spawns, .user = &spawns};
  weft_observer_t *obs = NULL;
  assert_int_equal(weft_observer_create(b.w, &od, &obs), WEFT_OK);
  weft_entity_codec_t *ka = codec(&a), *kb = codec(&b);
  bind_to(kb, ka);
  wt_rng_t r = wt_rng(21);
  uint8_t buf[256];
  for (uint32_t i = 0; i < 50; i++) {
    ent_t m = ent_random(&r, false);
    weft_entity_t e = ent_spawn(&a, &m), f = 0;
    size_t len = encode(ka, e, buf, sizeof buf);
    assert_int_equal(weft_entity_decode(kb, buf, len, &f), WEFT_OK);
    assert_int_equal(spawns, i + 1);
    ent_t want = m;
    if (want.has >> C_CACHE & 1) /* no requirement gives it a default */
      want.cache.v = 0;
    ent_check(&b, f, &want, false);
    bool hp = m.has >> C_HP & 1;
    assert_int_equal(weft_has(b.w, f, regen), hp);
    uint32_t v = 0;
    if (hp) {
      assert_int_equal(weft_read(b.w, f, regen, &v), WEFT_OK);
      assert_int_equal(v, regen_default);
    }
    /* A refresh through the observed path (nothing in place to write
     * when the copy lost a component). */
    if (hp)
      assert_int_equal(weft_remove(b.w, f, b.c[C_HP]), WEFT_OK);
    assert_int_equal(weft_entity_decode_into(kb, f, buf, len), WEFT_OK);
    ent_check(&b, f, &want, false);
  }
  weft_entity_codec_free(ka);
  weft_entity_codec_free(kb);
  weft_world_destroy(a.w);
  weft_world_destroy(b.w);
}

/* Writes one seed: a mode byte, then n bytes. */
static void seed_file(const char *dir, const char *name, uint8_t mode,
                      const uint8_t *p, size_t n) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(&mode, 1, 1, f), 1);
  assert_int_equal(fwrite(p, 1, n, f), n);
  assert_int_equal(fclose(f), 0);
}

/* The fuzz target's world (fuzz/entity_codec_world.h): each sample
 * entity's record decodes, as a new entity and into the target, and both
 * tables bind. With WEFT_ENTITY_CODEC_SEEDS naming a folder, the records
 * and tables are written there as the target's seed corpus. */
static void test_entity_codec_fuzz_seeds(void **state) {
  (void)state;
  const char *dir = getenv("WEFT_ENTITY_CODEC_SEEDS");
  fz_world_t f;
  assert_int_equal(fz_world_build(&f), WEFT_OK);
  uint8_t buf[512];
  char name[64];
  for (uint32_t i = 0; i < 16; i++) {
    weft_entity_t e = 0, g = 0;
    assert_int_equal(fz_sample(&f, i, &e), WEFT_OK);
    size_t len = encode(f.codec, e, buf, sizeof buf);
    assert_int_equal(weft_entity_decode(f.codec, buf, len, &g), WEFT_OK);
    assert_int_equal(weft_entity_decode_into(f.codec, f.target, buf, len), 0);
    if (dir && i % 3 == 0) {
      snprintf(name, sizeof name, "record%02u.bin", i);
      seed_file(dir, name, FZ_DECODE, buf, len);
      snprintf(name, sizeof name, "into%02u.bin", i);
      seed_file(dir, name, FZ_DECODE_INTO, buf, len);
    }
  }
  weft_entity_codec_t *tables[] = {f.codec, f.peer};
  for (int t = 0; t < 2; t++) {
    size_t len = 0;
    assert_int_equal(weft_entity_codec_table(tables[t], buf, sizeof buf, &len),
                     WEFT_OK);
    assert_int_equal(weft_entity_codec_bind(f.codec, buf, len), WEFT_OK);
    if (dir) {
      snprintf(name, sizeof name, "table%d.bin", t);
      seed_file(dir, name, FZ_BIND, buf, len);
    }
  }
  weft_entity_codec_free(f.codec);
  weft_entity_codec_free(f.peer);
  weft_world_destroy(f.w);
}

int main(void) {
  /* Writing the fuzz seeds (tools/fuzz.sh, whose build skips checksums,
   * which the damage tests rely on): that test alone. */
  const struct CMUnitTest seeds[] = {
      cmocka_unit_test(test_entity_codec_fuzz_seeds),
  };
  if (getenv("WEFT_ENTITY_CODEC_SEEDS"))
    return cmocka_run_group_tests(seeds, NULL, NULL);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_entity_codec_round_trip),
      cmocka_unit_test(test_entity_codec_decode_into),
      cmocka_unit_test(test_entity_codec_subset),
      cmocka_unit_test(test_entity_codec_migrate),
      cmocka_unit_test(test_entity_codec_damaged_records),
      cmocka_unit_test(test_entity_codec_damaged_tables),
      cmocka_unit_test(test_entity_codec_stale_and_small),
      cmocka_unit_test(test_entity_codec_allocates_nothing),
      cmocka_unit_test(test_entity_codec_many_and_staged),
      cmocka_unit_test(test_entity_codec_observers_and_requirements),
      cmocka_unit_test(test_entity_codec_fuzz_seeds),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
