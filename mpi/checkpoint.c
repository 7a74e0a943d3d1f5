/* SPDX-License-Identifier: MIT */
/*
 * Distributed checkpoints (weft_mpi_checkpoint(), weft_mpi_restore()):
 * one file per rank and an index, restartable on any rank count.
 *
 * PREFIX.index (rank 0): "WEFTMPIX", u32 version, u32 ranks, u64 entities,
 * u64 state bytes, u64 their XXH3, then the world's state beside its
 * rows as rank 0 has it: resources, random streams and seed, and the
 * registered snapshot sections, the pipeline's clock among them
 * (weft__snap_globals_save(), the bytes a snapshot holds for them).
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
 *
 * The state is world-wide, not per entity: every rank runs the same
 * clock, and a program whose streams and resources differ between ranks
 * (drawn by entity on the owning rank) is not rank-count independent in
 * the first place. So rank 0's copy is saved, and a restore gives it to
 * every rank: the restarted run's clock (tick, fixed-step accumulator),
 * world seed, streams and resources are the saved run's, and the caller
 * sets none of them by hand. Events and relation edges are not saved
 * (they name this world's handles and rows).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <weft.h>
#include <weft/entity_codec.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "core/alloc.h"
#include "core/snapshot_state.h"
#include "mpi/dist.h"

#define CK_VERSION 2u

/* A state larger than this in an index is damage, not a world's. */
#define CK_STATE_MAX ((uint64_t)1 << 32)

typedef struct ck_head_t {
  char magic[8];
  uint32_t version, rank, ranks, table_len;
  uint64_t count;
} ck_head_t;

typedef struct ck_index_t {
  char magic[8];
  uint32_t version, ranks;
  uint64_t entities;
  uint64_t state_len, state_hash;
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

/* Rank 0's index: the header and the world's state, through a temporary
 * and a rename as the rank files. */
static int write_index(weft_mpi_t *m, const char *prefix, uint64_t total) {
  char path[4096], tmp[4200];
  snprintf(path, sizeof path, "%s.index", prefix);
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  uint8_t *state = NULL;
  size_t n = 0;
  int rc = weft__snap_globals_save(m->world, &state, &n);
  if (rc)
    return weft_world_fail(m->world, rc,
                           "weft_mpi checkpoint %s: cannot save the world's "
                           "state (%s)",
                           path, weft_strerror(rc));
  ck_index_t x = {"WEFTMPIX", CK_VERSION, m->size,
                  total,      n,          XXH3_64bits(state, n)};
  FILE *f = fopen(tmp, "wb");
  if (!f || fwrite(&x, sizeof x, 1, f) != 1 || fwrite(state, 1, n, f) != n)
    rc = WEFT_EIO;
  if (f && fclose(f) != 0)
    rc = WEFT_EIO;
  free(state);
  if (!rc && rename(tmp, path) != 0)
    rc = WEFT_EIO;
  return rc ? ck_fail(m, rc, path, "cannot be written") : 0;
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
  if (!rc && m->rank == 0)
    rc = write_index(m, prefix, total);
  return weft__agree_code(m, rc);
}

/* Reads the index: the rank count of the run that wrote it, and the
 * world's state into *state (malloc'd, *n bytes; the caller frees it). */
static int read_index(weft_mpi_t *m, const char *prefix, uint32_t *ranks,
                      uint8_t **state, size_t *n) {
  char path[4096];
  snprintf(path, sizeof path, "%s.index", prefix);
  FILE *f = fopen(path, "rb");
  ck_index_t x;
  int ok = f && fread(&x, sizeof x, 1, f) == 1 &&
           memcmp(x.magic, "WEFTMPIX", 8) == 0 && x.version == CK_VERSION &&
           x.ranks > 0 && x.state_len < CK_STATE_MAX;
  if (!ok) {
    if (f)
      fclose(f);
    return ck_fail(m, WEFT_EFORMAT, path,
                   "missing, or not a weft_mpi checkpoint index");
  }
  uint8_t *p = malloc(x.state_len ? x.state_len : 1);
  size_t got = p ? fread(p, 1, x.state_len, f) : 0;
  int extra = fgetc(f);
  fclose(f);
  if (!p)
    return WEFT_ENOMEM;
  if (got != x.state_len || extra != EOF ||
      XXH3_64bits(p, x.state_len) != x.state_hash) {
    free(p);
    return ck_fail(m, WEFT_EFORMAT, path,
                   "the world's state is truncated or damaged");
  }
  *ranks = x.ranks;
  *state = p;
  *n = x.state_len;
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

/* Gives the world the saved state (clock, seed, streams, resources). */
static int load_state(weft_mpi_t *m, const char *prefix, const uint8_t *state,
                      size_t n) {
  weft__snap_why_t why;
  int rc = weft__snap_globals_load(m->world, state, n, &why);
  if (!rc)
    return 0;
  char path[4096];
  snprintf(path, sizeof path, "%s.index", prefix);
  return weft_world_fail(m->world, rc,
                         "weft_mpi checkpoint %s: the world's state at byte "
                         "%llu: %s",
                         path, (unsigned long long)why.at, why.msg);
}

int weft_mpi_restore(weft_mpi_t *m, const char *prefix) {
  if (!m || !prefix)
    return WEFT_EINVAL;
  uint32_t ranks = 0;
  uint8_t *state = NULL;
  size_t n = 0;
  int rc = read_index(m, prefix, &ranks, &state, &n);
  for (uint32_t r = 0; r < ranks && !rc; r++)
    rc = read_rank(m, prefix, r, ranks);
  /* The state last, once every file was read whole: a damaged file
   * leaves the clock and streams as they were. */
  if (!rc)
    rc = load_state(m, prefix, state, n);
  free(state);
  /* Back to decoding this rank's own records (migrants). Reading the
   * table's size records an error of its own: a failure's message is
   * kept across it. */
  char why[512] = "";
  if (rc)
    snprintf(why, sizeof why, "%s", weft_world_last_error(m->world));
  size_t tlen = 0;
  int brc = own_table(m, &tlen);
  if (!brc)
    brc = weft_entity_codec_bind(m->codec, m->scratch.data, tlen);
  if (rc) {
    const char *name = weft_strerror_name(rc), *text = why;
    size_t len = strlen(name);
    if (strncmp(text, name, len) == 0 && strncmp(text + len, ": ", 2) == 0)
      text += len + 2;
    weft_world_fail(m->world, rc, "%s", text);
  }
  return weft__agree_code(m, rc ? rc : brc);
}
