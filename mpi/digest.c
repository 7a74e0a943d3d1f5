/* SPDX-License-Identifier: MIT */
/*
 * The global digest (weft_mpi_digest()): a sum over entities, so that it
 * does not depend on which rank holds an entity or in what row.
 *
 * Each owned entity is hashed with XXH3 over its key and, for every
 * component it has in id order (every rank registers the same components
 * in the same order), the component's name and bytes. Ghosts, the ghost
 * tag, transient components and relations are left out, and so are the
 * bytes of fields typed WEFT_FIELD_ENTITY: handles differ between ranks.
 * The hashes are added mod 2^64 and the sums reduced with MPI_Allreduce.
 */
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <weft.h>

#include "core/alloc.h"
#include "core/component.h"
#include "core/world_view.h"
#include "mpi/dist.h"

/* Zeroes the handle fields of a component value. */
static void blank_handles(const weft__component_t *c, uint8_t *v) {
  for (uint32_t f = 0; f < c->field_count; f++)
    if (c->fields[f].type == WEFT_FIELD_ENTITY)
      memset(v + c->fields[f].offset, 0, c->fields[f].size);
}

/* Appends component c of e (name, then bytes) to the scratch buffer. */
static int put_component(weft_mpi_t *m, weft_entity_t e,
                         const weft__component_t *c, weft_component_t id) {
  size_t name = strlen(c->name) + 1;
  int rc = weft__mbuf_reserve(&m->scratch, name + c->size);
  if (rc)
    return rc;
  uint8_t *p = m->scratch.data + m->scratch.len;
  memcpy(p, c->name, name);
  if (c->size) {
    rc = weft_read(m->world, e, id, p + name);
    if (rc)
      return rc;
    blank_handles(c, p + name);
  }
  m->scratch.len += name + c->size;
  return 0;
}

static int hash_entity(weft_mpi_t *m, weft_entity_t e, uint64_t key,
                       uint64_t *out) {
  const weft__registry_t *reg = &m->world->registry;
  m->scratch.len = 0;
  int rc = weft__mbuf_reserve(&m->scratch, 8);
  if (rc)
    return rc;
  memcpy(m->scratch.data, &key, 8);
  m->scratch.len = 8;
  for (weft_component_t id = 1; id <= reg->count; id++) {
    const weft__component_t *c = weft__registry_get(reg, id);
    if (id == m->ghost || id == m->key ||
        (c->flags & (WEFT_COMPONENT_TRANSIENT | WEFT_COMPONENT_RELATION)) ||
        !weft_has(m->world, e, id))
      continue;
    rc = put_component(m, e, c, id);
    if (rc)
      return rc;
  }
  *out = XXH3_64bits(m->scratch.data, m->scratch.len);
  return 0;
}

int weft_mpi_digest(weft_mpi_t *m, weft_mpi_digest_t *out) {
  if (!m || !out)
    return WEFT_EINVAL;
  memset(out, 0, sizeof *out);
  uint64_t mine[2] = {0, 0};
  int rc = 0;
  weft_iter_t it;
  for (weft_query_iter(m->owned, &it); !rc && weft_iter_next(&it);) {
    const uint64_t *keys = it.columns[0];
    for (uint32_t i = 0; i < it.count && !rc; i++) {
      uint64_t h = 0;
      rc = hash_entity(m, it.entities[i], keys[i], &h);
      mine[0] += h;
      mine[1]++;
    }
  }
  if (rc)
    weft_iter_close(&it);
  uint64_t all[2] = {0, 0};
  if (MPI_Allreduce(mine, all, 2, MPI_UINT64_T, MPI_SUM, m->comm) !=
      MPI_SUCCESS)
    rc = rc ? rc : WEFT_EIO;
  out->digest = all[0];
  out->entities = all[1];
  out->local = mine[1];
  out->local_hash = mine[0];
  return rc;
}
