/* SPDX-License-Identifier: MIT */
/* Component registration and validation. */
#include "core/component.h"

#include <string.h>

#include "core/check.h"
#include "core/require.h"
#include "core/world.h"

void weft__registry_fini(weft__registry_t *reg) {
  weft__requires_fini(reg);
  for (uint32_t i = 0; i < reg->count; i++)
    weft__free(reg->items[i].fields,
               reg->items[i].field_count * sizeof(weft__field_t), 16);
  weft__free(reg->items, reg->cap * sizeof(*reg->items), 16);
  memset(reg, 0, sizeof(*reg));
}

static bool name_ok(const char *name) {
  return name && name[0] && strnlen(name, WEFT_NAME_MAX) < WEFT_NAME_MAX;
}

static bool is_pow2(uint32_t v) {
  return v && !(v & (v - 1));
}

/* The default alignment: largest power of two dividing size, at most 16. */
static uint32_t default_alignment(uint32_t size) {
  uint32_t a = 1;
  while (a < 16 && size % (a * 2) == 0)
    a *= 2;
  return a;
}

static int check_fields(weft_world_t *w, const weft_component_desc_t *d) {
  WEFT_CHECK(w, d->field_count <= WEFT_MAX_FIELDS, WEFT_ETOOMANY,
             "component '%s': %u fields, at most %u", d->name, d->field_count,
             WEFT_MAX_FIELDS);
  WEFT_CHECK(w, d->field_count == 0 || d->fields, WEFT_ELAYOUT,
             "component '%s': field_count %u but fields is NULL", d->name,
             d->field_count);
  WEFT_CHECK(w, d->size > 0 || d->field_count == 0, WEFT_ELAYOUT,
             "tag '%s' cannot have fields", d->name);
  WEFT_CHECK(w, !(d->flags & WEFT_COMPONENT_SOA) || d->field_count > 0,
             WEFT_ELAYOUT, "component '%s': SoA needs at least one field",
             d->name);
  for (uint32_t i = 0; i < d->field_count; i++) {
    const weft_field_desc_t *f = &d->fields[i];
    WEFT_CHECK(w, name_ok(f->name), WEFT_ELAYOUT,
               "component '%s': field %u has no valid name", d->name, i);
    WEFT_CHECK(w, f->size > 0 && (uint64_t)f->offset + f->size <= d->size,
               WEFT_ELAYOUT,
               "component '%s': field '%s' (offset %u, size %u) is outside "
               "the %u-byte value",
               d->name, f->name, f->offset, f->size, d->size);
    WEFT_CHECK(w, f->type < WEFT_FIELD_TYPE_COUNT_, WEFT_ELAYOUT,
               "component '%s': field '%s' has unknown type %u", d->name,
               f->name, f->type);
    for (uint32_t j = 0; j < i; j++) {
      const weft_field_desc_t *g = &d->fields[j];
      WEFT_CHECK(w, strcmp(f->name, g->name) != 0, WEFT_ELAYOUT,
                 "component '%s': duplicate field '%s'", d->name, f->name);
      bool disjoint =
          f->offset + f->size <= g->offset || g->offset + g->size <= f->offset;
      WEFT_CHECK(w, disjoint, WEFT_ELAYOUT,
                 "component '%s': fields '%s' and '%s' overlap", d->name,
                 g->name, f->name);
    }
  }
  return 0;
}

static int check_desc(weft_world_t *w, const weft_component_desc_t *d,
                      uint32_t *align_out) {
  WEFT_CHECK(w, d && name_ok(d->name), WEFT_EINVAL,
             "component name must be 1..%u characters", WEFT_NAME_MAX - 1);
  WEFT_CHECK(w,
             (d->flags & ~(WEFT_COMPONENT_SOA | WEFT_COMPONENT_TRACK_DIRTY |
                           WEFT_COMPONENT_TRANSIENT)) == 0,
             WEFT_EINVAL, "component '%s': unknown flags 0x%x", d->name,
             d->flags);
  WEFT_CHECK(w, d->size > 0 || !(d->flags & WEFT_COMPONENT_TRACK_DIRTY),
             WEFT_EINVAL, "tag '%s' has no value to track dirty", d->name);
  weft_component_t dup;
  WEFT_CHECK(w, weft_component_lookup(w, d->name, &dup) != 0, WEFT_EEXIST,
             "component '%s' is already registered (id %u)", d->name, dup);
  WEFT_CHECK(w, w->registry.count < WEFT_MAX_COMPONENTS, WEFT_ETOOMANY,
             "component '%s': the world already has %u components", d->name,
             WEFT_MAX_COMPONENTS);
  uint32_t align = d->alignment;
  if (align == 0)
    align = d->size ? default_alignment(d->size) : 1;
  WEFT_CHECK(w, is_pow2(align) && align <= WEFT_ALIGN_MAX, WEFT_ELAYOUT,
             "component '%s': alignment %u is not a power of two <= %u",
             d->name, align, WEFT_ALIGN_MAX);
  WEFT_CHECK(w, d->size % align == 0, WEFT_ELAYOUT,
             "component '%s': size %u is not a multiple of alignment %u",
             d->name, d->size, align);
  WEFT_CHECK(w, d->size <= w->chunk_size / 4, WEFT_ELAYOUT,
             "component '%s': size %u exceeds a quarter chunk (%u bytes)",
             d->name, d->size, w->chunk_size / 4);
  *align_out = align;
  return check_fields(w, d);
}

static int copy_fields(weft_world_t *w, weft__component_t *c,
                       const weft_component_desc_t *d) {
  if (d->field_count == 0)
    return 0;
  c->fields =
      weft__alloc(&w->alloc, d->field_count * sizeof(weft__field_t), 16);
  if (!c->fields)
    return WEFT_ENOMEM;
  for (uint32_t i = 0; i < d->field_count; i++) {
    memset(c->fields[i].name, 0, WEFT_NAME_MAX);
    strcpy(c->fields[i].name, d->fields[i].name);
    c->fields[i].offset = d->fields[i].offset;
    c->fields[i].size = d->fields[i].size;
    c->fields[i].type = d->fields[i].type;
  }
  c->field_count = d->field_count;
  return 0;
}

int weft_component_register(weft_world_t *w, const weft_component_desc_t *d,
                            weft_component_t *out) {
  WEFT_CHECK(w, w && out, WEFT_EINVAL, "world and out must not be NULL");
  uint32_t align = 0;
  int rc = check_desc(w, d, &align);
  if (rc)
    return rc;
  weft__registry_t *reg = &w->registry;
  rc = weft__grow(&w->alloc, &reg->items, &reg->cap, reg->count + 1,
                  sizeof(*reg->items), 32);
  WEFT_CHECK(w, rc == 0, rc, "out of memory growing the registry");
  weft__component_t *c = &reg->items[reg->count];
  memset(c, 0, sizeof(*c));
  strcpy(c->name, d->name);
  c->size = d->size;
  c->alignment = align;
  c->flags = d->flags;
  rc = copy_fields(w, c, d);
  WEFT_CHECK(w, rc == 0, rc, "out of memory copying fields of '%s'", d->name);
  reg->count++;
  w->dirty_comps += (d->flags & WEFT_COMPONENT_TRACK_DIRTY) != 0;
  *out = reg->count;
  return 0;
}

int weft_component_lookup(const weft_world_t *w, const char *name,
                          weft_component_t *out) {
  WEFT_CHECK(w, w && name && out, WEFT_EINVAL, "NULL argument");
  for (uint32_t i = 0; i < w->registry.count; i++) {
    if (strcmp(w->registry.items[i].name, name) == 0) {
      *out = i + 1;
      return 0;
    }
  }
  return WEFT_ENOTFOUND;
}

int weft_component_info(const weft_world_t *w, weft_component_t id,
                        weft_component_info_t *out) {
  WEFT_CHECK(w, w && out, WEFT_EINVAL, "NULL argument");
  const weft__component_t *c = weft__registry_get(&w->registry, id);
  WEFT_CHECK(w, c, WEFT_ENOCOMP, "unknown component id %u", id);
  out->name = c->name;
  out->size = c->size;
  out->alignment = c->alignment;
  out->field_count = c->field_count;
  out->flags = c->flags;
  return 0;
}

int weft_component_field(const weft_world_t *w, weft_component_t id,
                         const char *field_name, uint32_t *out) {
  WEFT_CHECK(w, w && field_name && out, WEFT_EINVAL, "NULL argument");
  const weft__component_t *c = weft__registry_get(&w->registry, id);
  WEFT_CHECK(w, c, WEFT_ENOCOMP, "unknown component id %u", id);
  for (uint32_t i = 0; i < c->field_count; i++) {
    if (strcmp(c->fields[i].name, field_name) == 0) {
      *out = i;
      return 0;
    }
  }
  return weft__fail(w, WEFT_ENOTFOUND, WEFT__FILE, WEFT__LINE,
                    "component '%s' has no field '%s'", c->name, field_name);
}

uint32_t weft_component_count(const weft_world_t *w) {
  return w ? w->registry.count : 0;
}

int weft__list_check(const weft__registry_t *reg, const weft_component_t *comps,
                     uint32_t max, weft__mask_t *m, uint32_t *count) {
  memset(m, 0, sizeof(*m));
  uint32_t n = 0;
  int rc = 0;
  for (; comps && comps[n]; n++) {
    if (n >= max)
      rc = WEFT_ETOOMANY;
    else if (comps[n] > reg->count)
      rc = WEFT_ENOCOMP;
    else if (weft__mask_test(m, comps[n]) ||
             (reg->items[comps[n] - 1].flags & WEFT_COMPONENT_RELATION))
      rc = WEFT_EINVAL; /* twice, or a relation: its edges need targets */
    if (rc)
      break;
    weft__mask_set(m, comps[n]);
  }
  *count = n;
  return rc;
}
