/* SPDX-License-Identifier: MIT */
/*
 * The component registry: validated layouts by id, names for lookup.
 */
#ifndef WEFT_CORE_COMPONENT_H
#define WEFT_CORE_COMPONENT_H

#include <stdint.h>

#include "core/bitset.h"
#include "weft/component.h"

typedef struct weft__field_t {
  char name[WEFT_NAME_MAX];
  uint32_t offset;
  uint32_t size;
  uint32_t type; /* WEFT_FIELD_* */
} weft__field_t;

typedef struct weft__component_t {
  char name[WEFT_NAME_MAX];
  uint32_t size;
  uint32_t alignment;
  uint32_t flags;
  uint32_t field_count;
  weft__field_t *fields; /* field_count entries, or NULL */
} weft__component_t;

typedef struct weft__registry_t {
  weft__component_t *items; /* index id-1 */
  uint32_t count;
  uint32_t cap;
  /* Component requirements (core/require.h), NULL until the first. */
  struct weft__requires_t *req;
} weft__registry_t;

struct weft_world_t;

void weft__registry_fini(weft__registry_t *reg);

/* The component for a valid id, or NULL. */
static inline const weft__component_t *
weft__registry_get(const weft__registry_t *reg, weft_component_t id) {
  return (id >= 1 && id <= reg->count) ? &reg->items[id - 1] : 0;
}

/*
 * Checks a zero-terminated component list: at most max ids, each known,
 * none twice; fills *m with them. Returns 0 with *count the length, or
 * WEFT_ETOOMANY / WEFT_ENOCOMP / WEFT_EINVAL with *count the position of
 * the offending id. Writes nothing but its outputs, so command buffers on
 * any thread use it too.
 */
int weft__list_check(const weft__registry_t *reg, const weft_component_t *comps,
                     uint32_t max, weft__mask_t *m, uint32_t *count);

#endif /* WEFT_CORE_COMPONENT_H */
