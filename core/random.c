/* SPDX-License-Identifier: MIT */
/*
 * Deterministic randomness: xoshiro256** generators and the world's named
 * streams.
 *
 * A stream's seed is a function of the world seed and its name alone, so
 * its sequence never depends on which other streams exist or how much they
 * drew. Each stream is allocated on its own so that its address survives
 * the creation of later streams: users keep the weft_rng_t pointer.
 */
#include "weft/random.h"

#include <stdalign.h>
#include <string.h>

#include "core/check.h"
#include "core/world.h"

/* One named stream. The generator comes first; the name (NUL-terminated,
 * len bytes before the NUL) follows the struct in the same block. */
typedef struct stream_t {
  weft_rng_t rng;
  uint64_t hash; /* name_hash() of the name */
  size_t len;
  char name[];
} stream_t;

struct weft__random_t {
  uint64_t seed;
  stream_t **streams; /* creation order; the array moves, streams do not */
  uint32_t count;
  uint32_t cap;
};

/* The splitmix64 finalizer: a bijection with full avalanche. */
static uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return z ^ (z >> 31);
}

/* FNV-1a 64 over the name, finalized so that short names that differ in one
 * byte still give unrelated words. */
static uint64_t name_hash(const char *name, size_t len) {
  uint64_t h = 0xcbf29ce484222325u;
  for (size_t i = 0; i < len; i++) {
    h ^= (unsigned char)name[i];
    h *= 0x100000001b3u;
  }
  return mix64(h);
}

static void stream_start(stream_t *s, uint64_t world_seed) {
  /* Mixing the seed before the xor keeps (seed, name) pairs from cancelling
   * out for seeds that happen to equal a name hash. */
  weft_rng_seed(&s->rng, mix64(mix64(world_seed) ^ s->hash));
}

void weft_rng_seed(weft_rng_t *rng, uint64_t seed) {
  if (!rng)
    return;
  /* The four words are splitmix64 outputs of four distinct consecutive
   * states. The finalizer is a bijection, so at most one of them can be
   * zero: the state is never all zero, which xoshiro cannot leave. */
  uint64_t x = seed;
  for (int i = 0; i < 4; i++) {
    x += 0x9e3779b97f4a7c15u;
    rng->s[i] = mix64(x);
  }
}

uint32_t weft_rng_below(weft_rng_t *rng, uint32_t n) {
  if (n == 0)
    return 0;
  /* Lemire's multiply-shift: the high word of x * n is uniform over [0, n)
   * once the low words that would over-represent some results (those below
   * 2^32 mod n) are rejected. */
  uint64_t m = (weft_rng_next(rng) >> 32) * (uint64_t)n;
  uint32_t low = (uint32_t)m;
  if (low < n) {
    uint32_t threshold = (0u - n) % n;
    while (low < threshold) {
      m = (weft_rng_next(rng) >> 32) * (uint64_t)n;
      low = (uint32_t)m;
    }
  }
  return (uint32_t)(m >> 32);
}

double weft_rng_double(weft_rng_t *rng) {
  return (double)(weft_rng_next(rng) >> 11) * 0x1.0p-53;
}

/* The largest double below finite x (nextafter() without libm). */
static double below(double x) {
  if (x == 0.0)
    return -0x1.0p-1074;
  uint64_t bits;
  memcpy(&bits, &x, sizeof bits);
  bits = x > 0.0 ? bits - 1 : bits + 1;
  memcpy(&x, &bits, sizeof x);
  return x;
}

double weft_rng_uniform(weft_rng_t *rng, double lo, double hi) {
  double u = weft_rng_double(rng);
  if (!(lo < hi))
    return lo;
  double r = lo + (hi - lo) * u;
  /* Rounding can land on hi itself (u close to 1); keep the interval
   * half-open. */
  return r < hi ? r : below(hi);
}

void weft_rng_shuffle(weft_rng_t *rng, void *base, uint32_t n, uint32_t size) {
  if (!rng || !base || n < 2 || size == 0 || size > 64)
    return;
  unsigned char tmp[64];
  unsigned char *a = base;
  for (uint32_t i = n - 1; i > 0; i--) {
    uint32_t j = weft_rng_below(rng, i + 1);
    if (j == i)
      continue;
    unsigned char *x = a + (size_t)i * size;
    unsigned char *y = a + (size_t)j * size;
    memcpy(tmp, x, size);
    memcpy(x, y, size);
    memcpy(y, tmp, size);
  }
}

/* The world's random state, created on first use; NULL when out of memory. */
static struct weft__random_t *random_state(weft_world_t *w) {
  if (!w->random) {
    struct weft__random_t *r =
        weft__calloc(&w->alloc, sizeof(*r), alignof(struct weft__random_t));
    if (!r)
      return NULL;
    r->seed = WEFT_RANDOM_SEED_DEFAULT;
    w->random = r;
  }
  return w->random;
}

int weft_random_stream(weft_world_t *w, const char *name, weft_rng_t **out) {
  if (out)
    *out = NULL;
  WEFT_CHECK(w, w && name && out, WEFT_EINVAL, "NULL argument");
  WEFT_CHECK(w, name[0] != '\0', WEFT_EINVAL, "a stream needs a name");
  size_t len = strlen(name);
  uint64_t hash = name_hash(name, len);
  struct weft__random_t *r = random_state(w);
  WEFT_CHECK(w, r, WEFT_ENOMEM, "out of memory creating random streams");
  /* Worlds hold a handful of streams and systems look theirs up once, so
   * a scan that compares hashes first is enough. */
  for (uint32_t i = 0; i < r->count; i++) {
    stream_t *s = r->streams[i];
    if (s->hash == hash && s->len == len && memcmp(s->name, name, len) == 0) {
      *out = &s->rng;
      return 0;
    }
  }
  WEFT_CHECK(w, r->count < UINT32_MAX, WEFT_ELIMIT, "too many random streams");
  int rc = weft__grow(&w->alloc, &r->streams, &r->cap, r->count + 1,
                      sizeof(*r->streams), 8);
  WEFT_CHECK(w, rc == 0, WEFT_ENOMEM, "out of memory adding stream '%s'", name);
  stream_t *s = weft__alloc(&w->alloc, sizeof(*s) + len + 1, alignof(stream_t));
  WEFT_CHECK(w, s, WEFT_ENOMEM, "out of memory adding stream '%s'", name);
  s->hash = hash;
  s->len = len;
  memcpy(s->name, name, len + 1);
  stream_start(s, r->seed);
  r->streams[r->count++] = s;
  *out = &s->rng;
  return 0;
}

void weft_random_seed(weft_world_t *w, uint64_t seed) {
  if (!w)
    return;
  struct weft__random_t *r = random_state(w);
  if (!r) {
    (void)weft__fail(w, WEFT_ENOMEM, WEFT__FILE, WEFT__LINE,
                     "out of memory setting the random seed");
    return;
  }
  r->seed = seed;
  for (uint32_t i = 0; i < r->count; i++)
    stream_start(r->streams[i], seed);
}

uint64_t weft_random_world_seed(const weft_world_t *w) {
  if (!w || !w->random)
    return WEFT_RANDOM_SEED_DEFAULT;
  return w->random->seed;
}

uint64_t weft__random_digest(const weft_world_t *w) {
  const struct weft__random_t *r = w->random;
  /* Streams are found by name, so their creation order is no state: a
   * sum of per-stream hashes does not depend on it. */
  uint64_t sum = 0, n = r ? r->count : 0;
  for (uint32_t i = 0; i < n; i++) {
    const stream_t *s = r->streams[i];
    uint64_t x = s->hash;
    for (int j = 0; j < 4; j++)
      x = mix64(x ^ s->rng.s[j]);
    sum += x;
  }
  return mix64(mix64(mix64(weft_random_world_seed(w)) ^ n) ^ sum);
}

void weft__random_fini(weft_world_t *w) {
  struct weft__random_t *r = w->random;
  if (!r)
    return;
  for (uint32_t i = 0; i < r->count; i++)
    weft__free(r->streams[i], sizeof(stream_t) + r->streams[i]->len + 1,
               alignof(stream_t));
  /* weft__grow allocates through weft__realloc, which aligns to 16. */
  weft__free(r->streams, (size_t)r->cap * sizeof(*r->streams), 16);
  weft__free(r, sizeof(*r), alignof(struct weft__random_t));
  w->random = NULL;
}

uint32_t weft__random_stream_at(const weft_world_t *w, uint32_t i,
                                const char **name, weft_rng_t **rng) {
  const struct weft__random_t *r = w->random;
  uint32_t n = r ? r->count : 0;
  if (i < n) {
    *name = r->streams[i]->name;
    *rng = &r->streams[i]->rng;
  }
  return n;
}
