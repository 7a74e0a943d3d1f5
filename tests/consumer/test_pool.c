/* SPDX-License-Identifier: MIT */
/* The parent project's own test_pool: a weft pool sums 0..N-1. */
#include <stdatomic.h>
#include <stdio.h>

#include <weft.h>

enum { N = 100000 };

static void sum_range(void *arg, uint32_t begin, uint32_t end,
                      uint32_t worker) {
  (void)worker;
  uint64_t local = 0;
  for (uint32_t i = begin; i < end; i++) {
    local += i;
  }
  atomic_fetch_add((_Atomic uint64_t *)arg, local);
}

int main(void) {
  weft_pool_config_t config = {0};
  config.placement.workers = 2;
  weft_pool_t *pool = NULL;
  int rc = weft_pool_create(&config, &pool);
  if (rc != 0) {
    fprintf(stderr, "parent test_pool: %s\n", weft_strerror(rc));
    return 1;
  }
  _Atomic uint64_t sum = 0;
  weft_pool_parallel_for(pool, WEFT_WORKER_EXTERNAL, 0, N, 1000, sum_range,
                         &sum);
  weft_pool_destroy(pool);
  const uint64_t want = (uint64_t)N * (N - 1) / 2;
  if (atomic_load(&sum) != want) {
    fprintf(stderr, "parent test_pool: sum %llu, want %llu\n",
            (unsigned long long)atomic_load(&sum), (unsigned long long)want);
    return 1;
  }
  printf("parent test_pool: OK\n");
  return 0;
}
