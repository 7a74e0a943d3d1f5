/* SPDX-License-Identifier: MIT */
/*
 * Distributed checkpoints (weft_mpi_checkpoint(), weft_mpi_restore()):
 * one file per rank and an index, restartable on any rank count.
 *
 * PREFIX.index (rank 0): "WEFTMPIX", u32 version, u32 ranks, u64 entities.
 * PREFIX.R (rank R): "WEFTMPI1", u32 version, u32 rank, u32 ranks,
 * u32 table bytes, u64 entities, the entity codec's table, then per owned
 * entity: its position (two floats), u32 record bytes, the codec record.
 * Host byte order (little-endian on every machine weft is tested on).
 * Each file is written to PREFIX.R.tmp and renamed, so a crash leaves the
 * previous checkpoint whole.
 *
 * A restore reads every rank's file and spawns the entities whose
 * position this rank owns under the current decomposition, decoded
 * through the file's table (weft_entity_codec_bind(): components matched
 * by name and migrated as a snapshot load would), so the rank count and
 * the cuts may differ from the run that wrote it. Every rank reads all the
 * files: fine at the rank counts tested; a rank reading only the files
 * whose regions overlap its own is the next step.
 */
#include <stdio.h>
#include <string.h>

#include <weft.h>
#include <weft/entity_codec.h>

#include "core/alloc.h"
#include "mpi/dist.h"

#define CK_VERSION 1u

typedef struct ck_head_t {
  char magic[8];
  uint32_t version, rank, ranks, table_len;
  uint64_t count;
} ck_head_t;

typedef struct ck_index_t {
  char magic[8];
  uint32_t version, ranks;
  uint64_t entities;
} ck_index_t;

static int ck_fail(weft_mpi_t *m, int code, const char *path, const char *why) {
  return weft_world_fail(m->world, code, "weft_mpi checkpoint %s: %s", path,
                         why);
}

/* The codec's own table, in m->scratch. */
static int own_table(weft_mpi_t *m, size_t *len) {
  int rc = weft_entity_codec_table(m->codec, NULL, 0, len);
  m->scratch.len = 0;
  if (rc && rc != WEFT_ELIMIT)
    return rc;
  rc = weft__mbuf_reserve(&m->scratch, *len);
  return rc ? rc
            : weft_entity_codec_table(m->codec, m->scratch.data, *len, len);
}

/* Writes one owned entity: position, record length, record. */
static int put_entity(weft_mpi_t *m, FILE *f, weft_entity_t e, size_t most) {
  weft_vec2_t p;
  size_t n = 0;
  int rc = weft_read(m->world, e, m->position, &p);
  if (!rc)
    rc = weft_entity_encode(m->codec, e, m->scratch.data, most, &n);
  uint32_t len = (uint32_t)n;
  if (!rc && (fwrite(&p, sizeof p, 1, f) != 1 || fwrite(&len, 4, 1, f) != 1 ||
              fwrite(m->scratch.data, 1, n, f) != n))
    rc = WEFT_EIO;
  return rc;
}

/* Writes this rank's file; *count gets the entities written. */
static int write_rank(weft_mpi_t *m, const char *path, uint64_t *count) {
  size_t tlen = 0;
  int rc = own_table(m, &tlen);
  FILE *f = rc ? NULL : fopen(path, "wb");
  if (!rc && !f)
    return ck_fail(m, WEFT_EIO, path, "cannot be written");
  ck_head_t h = {"WEFTMPI1", CK_VERSION, m->rank, m->size, (uint32_t)tlen, 0};
  if (!rc && (fwrite(&h, sizeof h, 1, f) != 1 ||
              fwrite(m->scratch.data, 1, tlen, f) != tlen))
    rc = WEFT_EIO;
  size_t most = weft_entity_codec_max_record(m->codec);
  if (!rc)
    rc = weft__mbuf_reserve(&m->scratch, most);
  weft_iter_t it;
  for (weft_query_iter(m->owned, &it); !rc && weft_iter_next(&it);)
    for (uint32_t i = 0; i < it.count && !rc; i++, h.count++)
      rc = put_entity(m, f, it.entities[i], most);
  if (rc)
    weft_iter_close(&it);
  /* The count goes in last, over the header's placeholder. */
  if (!rc && (fseek(f, 0, SEEK_SET) != 0 || fwrite(&h, sizeof h, 1, f) != 1))
    rc = WEFT_EIO;
  if (f && fclose(f) != 0 && !rc)
    rc = WEFT_EIO;
  *count = h.count;
  return rc == WEFT_EIO ? ck_fail(m, rc, path, "write failed") : rc;
}

int weft_mpi_checkpoint(weft_mpi_t *m, const char *prefix) {
  if (!m || !prefix)
    return WEFT_EINVAL;
  char path[4096], tmp[4200];
  snprintf(path, sizeof path, "%s.%u", prefix, m->rank);
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  uint64_t count = 0, total = 0;
  int rc = write_rank(m, tmp, &count);
  if (!rc && rename(tmp, path) != 0)
    rc = ck_fail(m, WEFT_EIO, path, "cannot be renamed into place");
  rc = weft__agree_code(m, rc);
  if (!rc && MPI_Reduce(&count, &total, 1, MPI_UINT64_T, MPI_SUM, 0, m->comm) !=
                 MPI_SUCCESS)
    rc = WEFT_EIO;
  if (!rc && m->rank == 0) {
    ck_index_t x = {"WEFTMPIX", CK_VERSION, m->size, total};
    snprintf(path, sizeof path, "%s.index", prefix);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(&x, sizeof x, 1, f) != 1)
      rc = ck_fail(m, WEFT_EIO, path, "cannot be written");
    if (f && fclose(f) != 0 && !rc)
      rc = ck_fail(m, WEFT_EIO, path, "cannot be written");
  }
  return weft__agree_code(m, rc);
}

/* Reads the index: the rank count of the run that wrote it. */
static int read_index(weft_mpi_t *m, const char *prefix, uint32_t *ranks) {
  char path[4096];
  snprintf(path, sizeof path, "%s.index", prefix);
  FILE *f = fopen(path, "rb");
  ck_index_t x;
  int ok = f && fread(&x, sizeof x, 1, f) == 1 &&
           memcmp(x.magic, "WEFTMPIX", 8) == 0 && x.version == CK_VERSION &&
           x.ranks > 0;
  if (f)
    fclose(f);
  if (!ok)
    return ck_fail(m, WEFT_EFORMAT, path,
                   "missing, or not a weft_mpi checkpoint index");
  *ranks = x.ranks;
  return 0;
}

/* Spawns the entities of one rank's file that this rank owns. */
static int read_entities(weft_mpi_t *m, FILE *f, uint64_t count,
                         const char *path) {
  size_t most = weft_entity_codec_max_record(m->codec) * 4 + 4096;
  for (uint64_t i = 0; i < count; i++) {
    weft_vec2_t p;
    uint32_t len;
    if (fread(&p, sizeof p, 1, f) != 1 || fread(&len, 4, 1, f) != 1 ||
        len > most)
      return ck_fail(m, WEFT_EFORMAT, path, "truncated or damaged");
    if (weft__domain_owner(&m->dom, p.x, p.y) != m->rank) {
      if (fseek(f, len, SEEK_CUR) != 0)
        return ck_fail(m, WEFT_EFORMAT, path, "truncated");
      continue;
    }
    int rc = weft__mbuf_reserve(&m->scratch, len);
    if (rc)
      return rc;
    weft_entity_t e;
    if (fread(m->scratch.data, 1, len, f) != len)
      return ck_fail(m, WEFT_EFORMAT, path, "truncated");
    rc = weft_entity_decode(m->codec, m->scratch.data, len, &e);
    if (rc)
      return rc;
  }
  return 0;
}

/* Reads one rank's file: its table bound, then its entities. */
static int read_rank(weft_mpi_t *m, const char *prefix, uint32_t r,
                     uint32_t ranks) {
  char path[4096];
  snprintf(path, sizeof path, "%s.%u", prefix, r);
  FILE *f = fopen(path, "rb");
  ck_head_t h;
  if (!f || fread(&h, sizeof h, 1, f) != 1 ||
      memcmp(h.magic, "WEFTMPI1", 8) != 0 || h.version != CK_VERSION ||
      h.rank != r || h.ranks != ranks) {
    if (f)
      fclose(f);
    return ck_fail(m, WEFT_EFORMAT, path,
                   "missing, or not this checkpoint's file");
  }
  m->scratch.len = 0;
  int rc = weft__mbuf_reserve(&m->scratch, h.table_len);
  if (!rc && fread(m->scratch.data, 1, h.table_len, f) != h.table_len)
    rc = ck_fail(m, WEFT_EFORMAT, path, "truncated");
  if (!rc)
    rc = weft_entity_codec_bind(m->codec, m->scratch.data, h.table_len);
  if (!rc)
    rc = read_entities(m, f, h.count, path);
  fclose(f);
  return rc;
}

int weft_mpi_restore(weft_mpi_t *m, const char *prefix) {
  if (!m || !prefix)
    return WEFT_EINVAL;
  uint32_t ranks = 0;
  int rc = read_index(m, prefix, &ranks);
  for (uint32_t r = 0; r < ranks && !rc; r++)
    rc = read_rank(m, prefix, r, ranks);
  /* Back to decoding this rank's own records (migrants). */
  size_t tlen = 0;
  int brc = own_table(m, &tlen);
  if (!brc)
    brc = weft_entity_codec_bind(m->codec, m->scratch.data, tlen);
  return weft__agree_code(m, rc ? rc : brc);
}
