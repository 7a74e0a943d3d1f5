/*
 * weft-sim: the main demo. Spawns a particle world in one batch, advances
 * it for a number of ticks (position += velocity * dt, with a bounce at the
 * box walls) and prints spawn and update throughput plus a checksum of the
 * final state.
 *
 * Usage: weft-sim [--entities N] [--ticks K] [--seed S] [--chunk BYTES]
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <weft.h>

typedef struct sim_vec3_t {
  float x, y, z;
} sim_vec3_t;

typedef struct sim_args_t {
  uint32_t entities;
  uint32_t ticks;
  uint64_t seed;
  uint32_t chunk;
} sim_args_t;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void usage(FILE *f) {
  fprintf(f, "usage: weft-sim [--entities N] [--ticks K] [--seed S] "
             "[--chunk BYTES]\n"
             "  --entities N   particles to spawn (default 1000000)\n"
             "  --ticks K      update ticks to run (default 200)\n"
             "  --seed S       initial-state seed (default 1)\n"
             "  --chunk BYTES  chunk size, power of two 4096..1048576\n");
}

/* Parses an unsigned decimal in [lo, hi]; false when it is not one. */
static bool parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *out) {
  char *end;
  errno = 0;
  if (!s || !*s || *s == '-')
    return false;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || *end || v < lo || v > hi)
    return false;
  *out = v;
  return true;
}

static int parse_args(int argc, char **argv, sim_args_t *a) {
  *a = (sim_args_t){.entities = 1000000, .ticks = 200, .seed = 1};
  for (int i = 1; i < argc; i++) {
    const char *opt = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
    uint64_t v;
    if (!strcmp(opt, "-h") || !strcmp(opt, "--help")) {
      usage(stdout);
      exit(0);
    } else if (!strcmp(opt, "--entities") && parse_u64(val, 1, 100000000, &v))
      a->entities = (uint32_t)v;
    else if (!strcmp(opt, "--ticks") && parse_u64(val, 0, 1000000, &v))
      a->ticks = (uint32_t)v;
    else if (!strcmp(opt, "--seed") && parse_u64(val, 0, UINT64_MAX, &v))
      a->seed = v;
    else if (!strcmp(opt, "--chunk") && parse_u64(val, 4096, 1048576, &v))
      a->chunk = (uint32_t)v;
    else {
      fprintf(stderr, "weft-sim: bad argument '%s'%s%s\n", opt,
              val ? " with value " : "", val ? val : "");
      usage(stderr);
      return 2;
    }
    i++;
  }
  return 0;
}

/* splitmix64: a tiny, well-mixed generator for the initial state. */
static uint64_t sim_rand(uint64_t *s) {
  uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));
  z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
  return z ^ (z >> 31);
}

static float sim_unit(uint64_t *s) {
  return (float)(sim_rand(s) >> 40) * (1.0f / 16777216.0f);
}

/* Fills one chunk range of the batch with seeded positions and velocities. */
static void fill_particles(void *user, const weft_iter_t *v, uint32_t first) {
  uint64_t seed = *(const uint64_t *)user;
  for (uint32_t f = 0; f < 3; f++) {
    float *p = weft_iter_field(v, 0, f), *vel = weft_iter_field(v, 1, f);
    for (uint32_t i = 0; i < v->count; i++) {
      uint64_t s = seed ^ ((uint64_t)(first + i) << 2 | f);
      p[i] = sim_unit(&s) * 100.0f;
      vel[i] = sim_unit(&s) * 2.0f - 1.0f;
    }
  }
}

/* One tick: integrate, and reflect velocities at the walls of the box. */
static void tick(const weft_query_t *q, float dt) {
  weft_iter_t it;
  weft_query_iter(q, &it);
  while (weft_iter_next(&it)) {
    void *pf[WEFT_MAX_FIELDS], *vf[WEFT_MAX_FIELDS];
    weft_iter_fields(&it, 0, pf);
    weft_iter_fields(&it, 1, vf);
    for (uint32_t f = 0; f < 3; f++) {
      float *restrict p = pf[f];
      float *restrict v = vf[f];
      for (uint32_t i = 0; i < it.count; i++) {
        float np = p[i] + v[i] * dt;
        float out = (np < 0.0f) | (np > 100.0f) ? -1.0f : 1.0f;
        v[i] *= out;
        p[i] = np;
      }
    }
  }
}

static double checksum(const weft_query_t *q) {
  double s = 0;
  weft_iter_t it;
  weft_query_iter(q, &it);
  while (weft_iter_next(&it))
    for (uint32_t f = 0; f < 3; f++) {
      const float *p = weft_iter_field(&it, 0, f);
      for (uint32_t i = 0; i < it.count; i++)
        s += p[i] * (double)(f + 1);
    }
  return s;
}

static int fail(const weft_world_t *w, int rc, const char *what) {
  fprintf(stderr, "weft-sim: %s: %s (%s)\n", what, weft_strerror(rc),
          w ? weft_world_last_error(w) : "");
  return 1;
}

static int run(const sim_args_t *a, weft_world_t *w) {
  weft_field_desc_t xyz[3] = {WEFT_FIELD(sim_vec3_t, x),
                              WEFT_FIELD(sim_vec3_t, y),
                              WEFT_FIELD(sim_vec3_t, z)};
  weft_component_desc_t dp = {.name = "Position",
                              .size = sizeof(sim_vec3_t),
                              .fields = xyz,
                              .field_count = 3,
                              .flags = WEFT_COMPONENT_SOA};
  weft_component_desc_t dv = dp;
  dv.name = "Velocity";
  weft_component_t pos, vel;
  int rc = weft_component_register(w, &dp, &pos);
  if (!rc)
    rc = weft_component_register(w, &dv, &vel);
  if (rc)
    return fail(w, rc, "register");
  double t0 = now_s();
  uint64_t seed = a->seed;
  rc = weft_spawn_batch(w, a->entities, (weft_component_t[]){pos, vel, 0},
                        fill_particles, &seed, NULL);
  if (rc)
    return fail(w, rc, "spawn");
  double t1 = now_s();
  weft_query_t *q;
  rc = weft_query_create(w, &(weft_query_desc_t){.include = {pos, vel}}, &q);
  if (rc)
    return fail(w, rc, "query");
  double t2 = now_s();
  for (uint32_t k = 0; k < a->ticks; k++)
    tick(q, 1.0f / 60.0f);
  double t3 = now_s();
  weft_world_stats_t st;
  weft_world_stats(w, &st);
  double updates = (double)a->entities * a->ticks;
  printf("weft-sim: particles, %u entities, %u ticks, seed %" PRIu64 "\n",
         a->entities, a->ticks, a->seed);
  printf("  spawn   %10.3f ms  %8.2f ns/entity\n", (t1 - t0) * 1e3,
         (t1 - t0) * 1e9 / a->entities);
  printf("  update  %10.3f ms  %8.2f ns/entity-update  %.1f M updates/s\n",
         (t3 - t2) * 1e3, a->ticks ? (t3 - t2) * 1e9 / updates : 0.0,
         a->ticks ? updates / (t3 - t2) / 1e6 : 0.0);
  printf("  memory  %u chunks of %u B, %.1f MiB chunks + %.1f MiB index\n",
         st.chunks_live, st.chunk_size, st.chunk_bytes / 1048576.0,
         st.index_bytes / 1048576.0);
  printf("  checksum %.6f\n", checksum(q));
  return 0;
}

int main(int argc, char **argv) {
  sim_args_t a;
  int rc = parse_args(argc, argv, &a);
  if (rc)
    return rc;
  weft_world_t *w = NULL;
  weft_world_config_t cfg = {.chunk_size = a.chunk};
  rc = weft_world_create(&cfg, &w);
  if (rc) {
    fprintf(stderr, "weft-sim: bad --chunk %u: %s\n", a.chunk,
            weft_strerror(rc));
    return 2;
  }
  rc = run(&a, w);
  weft_world_destroy(w);
  return rc;
}
