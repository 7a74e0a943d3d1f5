/* SPDX-License-Identifier: MIT */
/*
 * A minimal program written against an installed weft, the way a user would
 * write one: it includes only <weft.h> and links through pkg-config or the
 * weft::weft CMake target. tests/install/run_install_test.cmake builds it
 * both ways and runs it; it exits 0 when every check passes.
 */
#define _GNU_SOURCE 1 /* RTLD_DEFAULT, dladdr() */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include <weft.h>

typedef struct position {
  float x, y;
} position;

typedef struct velocity {
  float dx, dy;
} velocity;

enum { MOVING = 1000, STILL = 250 };

static int failures;

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "consumer: %s:%d: check failed: %s\n", __FILE__,         \
              __LINE__, #cond);                                                \
      failures++;                                                              \
    }                                                                          \
  } while (0)

#define CHECK_OK(call)                                                         \
  do {                                                                         \
    int rc_ = (call);                                                          \
    if (rc_ != 0) {                                                            \
      fprintf(stderr, "consumer: %s:%d: %s returned %s (%s)\n", __FILE__,      \
              __LINE__, #call, weft_strerror_name(rc_), weft_strerror(rc_));   \
      failures++;                                                              \
    }                                                                          \
  } while (0)

/* Moves every entity that has both components once; returns rows visited. */
static unsigned move_all(const weft_query_t *query) {
  unsigned rows = 0;
  weft_iter_t it;
  weft_query_iter(query, &it);
  while (weft_iter_next(&it)) {
    position *pos = it.columns[0];
    const velocity *vel = it.columns[1];
    for (uint32_t i = 0; i < it.count; i++) {
      pos[i].x += vel[i].dx;
      pos[i].y += vel[i].dy;
    }
    rows += it.count;
  }
  return rows;
}

/* Linking weft leaves this program's allocator alone: no jemalloc API in
 * the process (weft's jemalloc is a private, renamed copy inside
 * libweft.a), and malloc is not jemalloc's. */
static void check_host_malloc(void) {
  CHECK(dlsym(RTLD_DEFAULT, "mallocx") == NULL);
  CHECK(dlsym(RTLD_DEFAULT, "mallctl") == NULL);
  Dl_info info;
  memset(&info, 0, sizeof info);
  void *host_malloc = dlsym(RTLD_DEFAULT, "malloc");
  CHECK(host_malloc != NULL);
  if (host_malloc != NULL && dladdr(host_malloc, &info) != 0 &&
      info.dli_fname != NULL) {
    CHECK(strstr(info.dli_fname, "jemalloc") == NULL);
  }
}

int main(void) {
  check_host_malloc();
  weft_world_t *world = NULL;
  CHECK_OK(weft_world_create(NULL, &world));
  if (world == NULL) {
    return 1;
  }

  weft_component_desc_t pos_desc = WEFT_COMPONENT_DESC(position);
  weft_component_desc_t vel_desc = WEFT_COMPONENT_DESC(velocity);
  weft_component_t pos = WEFT_COMPONENT_NONE, vel = WEFT_COMPONENT_NONE;
  CHECK_OK(weft_component_register(world, &pos_desc, &pos));
  CHECK_OK(weft_component_register(world, &vel_desc, &vel));
  CHECK(pos != WEFT_COMPONENT_NONE && vel != WEFT_COMPONENT_NONE);

  /* MOVING entities with position and velocity, STILL with position only. */
  static weft_entity_t moving[MOVING];
  const weft_component_t both[] = {pos, vel, WEFT_COMPONENT_NONE};
  const weft_component_t only_pos[] = {pos, WEFT_COMPONENT_NONE};
  for (int i = 0; i < MOVING; i++) {
    position p = {(float)i, 0.0f};
    velocity v = {1.0f, 2.0f};
    const void *values[] = {&p, &v};
    CHECK_OK(weft_spawn_with(world, both, values, &moving[i]));
  }
  for (int i = 0; i < STILL; i++) {
    weft_entity_t e;
    CHECK_OK(weft_spawn_with(world, only_pos, NULL, &e));
  }
  CHECK(weft_world_count(world) == MOVING + STILL);

  weft_query_t *query = NULL;
  weft_query_desc_t qdesc = {.include = {pos, vel}};
  CHECK_OK(weft_query_create(world, &qdesc, &query));
  if (query != NULL) {
    CHECK(weft_query_count(query) == MOVING);
    CHECK(move_all(query) == MOVING);
    CHECK(move_all(query) == MOVING);
  }

  /* Two ticks moved each entity by (2, 4); the still ones never matched. */
  for (int i = 0; i < MOVING; i++) {
    const position *p = weft_get(world, moving[i], pos);
    CHECK(p != NULL);
    if (p != NULL) {
      CHECK(p->x == (float)i + 2.0f && p->y == 4.0f);
    }
  }

  CHECK_OK(weft_despawn(world, moving[0]));
  CHECK(!weft_is_alive(world, moving[0]));
  CHECK(weft_despawn(world, moving[0]) == WEFT_ESTALE);
  CHECK(strcmp(weft_strerror(WEFT_OK), "success") == 0);
  if (query != NULL) {
    CHECK(weft_query_count(query) == MOVING - 1);
  }

  weft_query_destroy(query);
  weft_world_destroy(world);

  if (failures != 0) {
    fprintf(stderr, "consumer: %d check(s) failed\n", failures);
    return 1;
  }
  printf("consumer: weft %d.%d.%d OK\n", WEFT_VERSION_MAJOR, WEFT_VERSION_MINOR,
         WEFT_VERSION_PATCH);
  return 0;
}
