/* SPDX-License-Identifier: MIT */
/*
 * Migrant records: one entity's components, to be spawned on another
 * rank. With the snapshot codec's per-entity encoding
 * (weft/entity_codec.h) a record is its encoding, components named and
 * migrated as a snapshot load would; until weft has it, a plain encoding
 * stands in: every saved component the entity has (not transient, not a
 * relation, not the ghost tag), as its id and bytes. Every rank runs the
 * same program, so ids agree between ranks.
 */
#include <string.h>

#include <weft.h>

#include "core/alloc.h"
#include "mpi/dist.h"

int weft__mbuf_reserve(weft__mbuf_t *b, size_t more) {
  if (b->len + more <= b->cap)
    return 0;
  /* Room for twice the need: message sizes wander from tick to tick, and
   * a buffer sized to the largest so far would grow again at each new
   * high; with this headroom it stops once the run has seen half its
   * largest message. */
  size_t cap = b->cap ? b->cap : 256;
  while (cap < 2 * (b->len + more))
    cap *= 2;
  uint8_t *p = weft__realloc(NULL, b->data, b->cap, cap);
  if (!p)
    return WEFT_ENOMEM;
  b->data = p;
  b->cap = cap;
  return 0;
}

void weft__mbuf_free(weft__mbuf_t *b) {
  weft__free(b->data, 0, 0);
  memset(b, 0, sizeof *b);
}

#ifdef WEFT__MPI_CODEC

int weft__record_init(weft_mpi_t *m) {
  return weft_entity_codec_new(m->world, NULL, &m->codec);
}

void weft__record_fini(weft_mpi_t *m) {
  weft_entity_codec_free(m->codec);
  m->codec = NULL;
}

int weft__record_put(weft_mpi_t *m, weft_entity_t e, weft__mbuf_t *b) {
  size_t most = weft_entity_codec_max_record(m->codec), n = 0;
  int rc = weft__mbuf_reserve(b, 4 + most);
  if (!rc)
    rc = weft_entity_encode(m->codec, e, b->data + b->len + 4, most, &n);
  if (rc)
    return rc;
  uint32_t len = (uint32_t)n;
  memcpy(b->data + b->len, &len, 4);
  b->len += 4 + n;
  return 0;
}

int weft__record_spawn(weft_mpi_t *m, const uint8_t *p, size_t n,
                       weft_entity_t *out) {
  return weft_entity_decode(m->codec, p, n, out);
}

#else /* no codec yet: the plain encoding */

int weft__record_init(weft_mpi_t *m) {
  (void)m;
  return 0;
}

void weft__record_fini(weft_mpi_t *m) {
  (void)m;
}

/* Whether component c travels with a migrant. */
static bool travels(const weft_mpi_t *m, weft_component_t c,
                    weft_component_info_t *info) {
  return c != m->ghost && weft_component_info(m->world, c, info) == 0 &&
         !(info->flags & (WEFT_COMPONENT_TRANSIENT | WEFT_COMPONENT_RELATION));
}

int weft__record_put(weft_mpi_t *m, weft_entity_t e, weft__mbuf_t *b) {
  size_t start = b->len;
  int rc = weft__mbuf_reserve(b, 4);
  if (rc)
    return rc;
  b->len += 4;
  uint32_t count = weft_component_count(m->world);
  for (weft_component_t c = 1; c <= count; c++) {
    weft_component_info_t info;
    if (!travels(m, c, &info) || !weft_has(m->world, e, c))
      continue;
    rc = weft__mbuf_reserve(b, 8 + info.size);
    if (rc)
      return rc;
    uint32_t head[2] = {c, info.size};
    memcpy(b->data + b->len, head, 8);
    if (info.size)
      rc = weft_read(m->world, e, c, b->data + b->len + 8);
    if (rc)
      return rc;
    b->len += 8 + info.size;
  }
  uint32_t len = (uint32_t)(b->len - start - 4);
  memcpy(b->data + start, &len, 4);
  return 0;
}

int weft__record_spawn(weft_mpi_t *m, const uint8_t *p, size_t n,
                       weft_entity_t *out) {
  /* Values are copied to an aligned scratch buffer: a record packs them
   * back to back, at any alignment. */
  weft_component_t comps[65];
  size_t offs[64];
  uint32_t k = 0;
  m->scratch.len = 0;
  for (size_t at = 0; at < n; k++) {
    uint32_t head[2];
    if (k == 64 || n - at < 8)
      return weft_world_fail(m->world, WEFT_EINVAL,
                             "weft_mpi: a migrant record is damaged");
    memcpy(head, p + at, 8);
    weft_component_info_t info;
    if (weft_component_info(m->world, head[0], &info) != 0 ||
        info.size != head[1] || n - at - 8 < head[1])
      return weft_world_fail(m->world, WEFT_EINVAL,
                             "weft_mpi: a migrant record names component %u "
                             "of %u bytes, which this rank does not have",
                             head[0], head[1]);
    size_t size = (head[1] + 15u) & ~(size_t)15u;
    int rc = weft__mbuf_reserve(&m->scratch, size);
    if (rc)
      return rc;
    offs[k] = m->scratch.len;
    memcpy(m->scratch.data + m->scratch.len, p + at + 8, head[1]);
    m->scratch.len += size;
    comps[k] = head[0];
    at += 8 + head[1];
  }
  comps[k] = WEFT_COMPONENT_NONE;
  const void *values[64];
  for (uint32_t i = 0; i < k; i++)
    values[i] = m->scratch.data + offs[i];
  return weft_spawn_with(m->world, comps, values, out);
}

#endif
