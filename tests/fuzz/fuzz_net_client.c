/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: the server's decoder of client messages (weft/net.h,
 * weft_net_decode_client()), the bytes a remote client controls. Whatever
 * the input, the decoder returns 0 or WEFT_EFORMAT with a reason; a
 * message it accepts has every field in range (a finite view, a positive
 * radius, a nonzero version) and encodes back to the same bytes.
 */
#include <math.h>
#include <string.h>

#include "fuzz.h"
#include "weft/net.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  weft_net_client_msg_t m;
  const char *why = NULL;
  int rc = weft_net_decode_client(data, size, &m, &why);
  if (rc != 0) {
    FUZZ_CHECK(rc == WEFT_EFORMAT);
    FUZZ_CHECK(why && *why);
    return 0;
  }
  FUZZ_CHECK(size <= WEFT_NET_MAX_CLIENT_MESSAGE);
  if (m.type == WEFT_NET_VIEW)
    FUZZ_CHECK(isfinite(m.x) && isfinite(m.y) && isfinite(m.radius) &&
               m.radius > 0);
  if (m.type == WEFT_NET_HELLO)
    FUZZ_CHECK(m.version > 0 && m.version <= 0xffffu);
  uint8_t again[WEFT_NET_MAX_CLIENT_MESSAGE];
  int n = weft_net_encode_client(&m, again, sizeof again);
  FUZZ_CHECK(n > 0 && (size_t)n == size);
  FUZZ_CHECK(memcmp(again, data, size) == 0);
  return 0;
}
