/* SPDX-License-Identifier: MIT */
/* The parent project's own test_world: spawns entities and counts them
 * through a query. */
#include <stdio.h>

#include <weft.h>

typedef struct mass {
  float kg;
} mass;

enum { ENTITIES = 500 };

int main(void) {
  weft_world_t *w = NULL;
  if (weft_world_create(NULL, &w) != 0) {
    return 1;
  }
  weft_component_desc_t desc = WEFT_COMPONENT_DESC(mass);
  weft_component_t m = WEFT_COMPONENT_NONE;
  int rc = weft_component_register(w, &desc, &m);
  const weft_component_t types[] = {m, WEFT_COMPONENT_NONE};
  for (int i = 0; rc == 0 && i < ENTITIES; i++) {
    mass value = {(float)i};
    const void *values[] = {&value};
    weft_entity_t e;
    rc = weft_spawn_with(w, types, values, &e);
  }
  weft_query_t *q = NULL;
  weft_query_desc_t qd = {.include = {m}};
  if (rc == 0) {
    rc = weft_query_create(w, &qd, &q);
  }
  double total = 0;
  if (rc == 0) {
    weft_iter_t it;
    for (weft_query_iter(q, &it); weft_iter_next(&it);) {
      const mass *kg = it.columns[0];
      for (uint32_t i = 0; i < it.count; i++) {
        total += kg[i].kg;
      }
    }
  }
  weft_world_destroy(w);
  if (rc != 0 || total != ENTITIES * (ENTITIES - 1) / 2.0) {
    fprintf(stderr, "parent test_world: rc %d, total %.1f\n", rc, total);
    return 1;
  }
  printf("parent test_world: OK\n");
  return 0;
}
