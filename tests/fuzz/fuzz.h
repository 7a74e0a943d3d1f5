/* SPDX-License-Identifier: MIT */
/*
 * What every fuzz target shares: the libFuzzer entry point each one
 * defines, and the check that fails it. A target runs under libFuzzer
 * (tools/fuzz.sh, clang -fsanitize=fuzzer) or under fuzz_replay.c's main,
 * which feeds it the seed corpus and the kept crash inputs as a normal
 * test, with any compiler.
 */
#ifndef WEFT_FUZZ_H
#define WEFT_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A property the target checks failed: say which and abort, so that
 * libFuzzer keeps the input and the replay test fails. */
#define FUZZ_CHECK(cond)                                                       \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: fuzz check failed: %s\n", __FILE__, __LINE__,    \
              #cond);                                                          \
      abort();                                                                 \
    }                                                                          \
  } while (0)

#endif /* WEFT_FUZZ_H */
