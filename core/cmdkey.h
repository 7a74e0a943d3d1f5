/* SPDX-License-Identifier: MIT */
/*
 * Keying a command buffer inline: the fields weft_cmd_key() writes sit
 * first in every buffer (core/cmdbuf.h asserts the layout), so a pointer
 * to a buffer is a pointer to them. The scheduler keys its slots' buffers
 * once per chunk it runs; a call per chunk cost more than the keying.
 */
#ifndef WEFT_CORE_CMDKEY_H
#define WEFT_CORE_CMDKEY_H

#include <stdint.h>

#include "weft/command.h"

typedef struct weft__cmdkey_t {
  uint64_t key;      /* the key the next record goes under */
  uint64_t seg_key;  /* the key of the open segment */
  uint32_t ncmds;    /* records in the buffer */
  uint32_t cmds_lim; /* recording takes the slow path at this count */
} weft__cmdkey_t;

/* The keying fields of buffer b (not NULL). */
static inline weft__cmdkey_t *weft__cmdbuf_keys(weft_cmdbuf_t *b) {
  return (weft__cmdkey_t *)(void *)b;
}

/* weft_cmd_key(), inline: the next record of the buffer goes under @p key,
 * opening a segment (the slow path) when the key differs from the open
 * one. The buffer's thread. */
static inline void weft__cmdkey_set(weft__cmdkey_t *k, uint64_t key) {
  k->key = key;
  if (key != k->seg_key)
    k->cmds_lim = k->ncmds;
}

#endif /* WEFT_CORE_CMDKEY_H */
