/* SPDX-License-Identifier: MIT */
/*
 * Migrant records: one entity's encoding by the snapshot codec's
 * per-entity codec (weft/entity_codec.h), which names the components and
 * migrates layouts as a snapshot load would, behind a 16-byte head (the
 * record's length, 4 bytes of padding, the key: the receiver finds the
 * key's ghost without decoding); and the growable buffers the exchange
 * packs into.
 *
 * Every rank encodes with its own table and decodes with it unbound:
 * weft_mpi_new() checks that all ranks' tables are the same bytes (the
 * same components, sizes and fields), so a record means the same
 * everywhere.
 */
#include <string.h>

#include <weft.h>
#include <weft/entity_codec.h>

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

int weft__record_init(weft_mpi_t *m) {
  return weft_entity_codec_new(m->world, NULL, &m->codec);
}

void weft__record_fini(weft_mpi_t *m) {
  weft_entity_codec_free(m->codec);
  m->codec = NULL;
}

int weft__record_put(weft_mpi_t *m, weft_entity_t e, uint64_t key,
                     weft__mbuf_t *b) {
  size_t most = weft_entity_codec_max_record(m->codec), n = 0;
  int rc = weft__mbuf_reserve(b, WEFT__MIGRANT_HEAD + most);
  if (!rc)
    rc = weft_entity_encode(m->codec, e, b->data + b->len + WEFT__MIGRANT_HEAD,
                            most, &n);
  if (rc)
    return rc;
  uint32_t head[2] = {(uint32_t)n, 0};
  memcpy(b->data + b->len, head, 8);
  memcpy(b->data + b->len + 8, &key, 8);
  b->len += WEFT__MIGRANT_HEAD + n;
  return 0;
}

int weft__record_spawn(weft_mpi_t *m, const uint8_t *p, size_t n,
                       weft_entity_t *out) {
  return weft_entity_decode(m->codec, p, n, out);
}
