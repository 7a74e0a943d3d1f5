/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: the client's decoders of server bytes (weft/net.h): the
 * welcome, the tick packet reader and a mirror applying the packet. The
 * input is a little-endian u32 length, a welcome of that length, and a
 * packet (seeds from test_net_wire, WEFT_NET_SEEDS). A welcome that does
 * not decode is replaced by a fixed schema, so that packets are fuzzed
 * either way. Whatever the input: errors are codes with reasons, every
 * item's values lie inside the packet, a refused packet leaves the
 * mirror as it was, and nothing crashes.
 */
#include <string.h>

#include "fuzz.h"
#include "weft/net.h"

/* A welcome for sizes 8, 8, 4, 0 (the tests' components) and no table. */
static size_t fixed_welcome(uint8_t *w) {
  static const uint8_t head[] = {0x81, 'W', 'F', 'N', 'T', 1, 0,  4, 0,
                                 0,    0,   1,   0,   0,   0, 32, 65};
  memcpy(w, head, sizeof head); /* max_packet 64 KiB, cell 10.0f */
  static const uint8_t sizes[] = {8, 0, 0, 0, 8, 0, 0, 0, 4, 0,
                                  0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  memcpy(w + sizeof head, sizes, sizeof sizes);
  return sizeof head + sizeof sizes;
}

static void check_reader(const weft_net_schema_t *s, const uint8_t *p,
                         size_t len) {
  weft_net_reader_t r;
  weft_net_item_t it;
  const char *why = NULL;
  int rc = weft_net_packet_open(&r, s, p, len, &why);
  while (rc == 0 && (rc = weft_net_packet_next(&r, &it, &why)) == 1) {
    if (it.values_len)
      FUZZ_CHECK(it.values >= p && it.values + it.values_len <= p + len);
    rc = 0;
  }
  if (rc < 0)
    FUZZ_CHECK(why && *why);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 4)
    return 0;
  size_t wlen = (size_t)data[0] | (size_t)data[1] << 8 | (size_t)data[2] << 16 |
                (size_t)data[3] << 24;
  data += 4;
  size -= 4;
  uint8_t fixed[64];
  const uint8_t *wel = data;
  if (wlen > size) {
    wlen = fixed_welcome(fixed);
    wel = fixed;
  } else {
    data += wlen;
    size -= wlen;
  }
  weft_net_schema_t s;
  int rc = weft_net_decode_welcome(wel, wlen, &s, NULL);
  if (rc != 0) {
    wlen = fixed_welcome(fixed);
    wel = fixed;
    FUZZ_CHECK(weft_net_decode_welcome(wel, wlen, &s, NULL) == 0);
  }
  check_reader(&s, data, size);
  weft_net_mirror_t *m = NULL;
  if (weft_net_mirror_new(wel, wlen, 64, &m) != 0)
    return 0;
  uint8_t ack[WEFT_NET_MAX_CLIENT_MESSAGE];
  size_t ack_len = 0;
  uint32_t before = 0, after = 0;
  uint64_t d0 = weft_net_mirror_digest(m, &before);
  rc = weft_net_mirror_apply(m, data, size, ack, &ack_len);
  uint64_t d1 = weft_net_mirror_digest(m, &after);
  if (rc == WEFT_EFORMAT || rc == WEFT_ELIMIT) {
    if (rc == WEFT_EFORMAT)
      FUZZ_CHECK(d0 == d1 && before == after && ack_len == 0);
  } else {
    FUZZ_CHECK(rc == 0);
    FUZZ_CHECK(after <= 64);
  }
  /* The same packet again is a duplicate: dropped. */
  if (rc == 0 && ack_len) {
    FUZZ_CHECK(weft_net_mirror_apply(m, data, size, ack, &ack_len) == 0);
    FUZZ_CHECK(ack_len == 0);
  }
  weft_net_mirror_free(m);
  return 0;
}
