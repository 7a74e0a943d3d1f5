/*
 * Entry points of the system-scheduler scenarios (bench_schedule.c,
 * bench_heavy_compute.c, bench_frame.c, bench_update.c, bench_bandwidth.c,
 * bench_affinity.c, bench_oversub.c).
 * They live here rather than in harness.h so that the harness stays the
 * measurement code only; main.c includes both.
 */
#ifndef WEFT_BENCH_SYSTEMS_H
#define WEFT_BENCH_SYSTEMS_H

#include "harness.h"

void bench_schedule(bench_ctx_t *ctx);
void bench_heavy_compute(bench_ctx_t *ctx);
void bench_frame(bench_ctx_t *ctx);
void bench_update(bench_ctx_t *ctx);
void bench_bandwidth(bench_ctx_t *ctx);
void bench_arena(bench_ctx_t *ctx);
void bench_affinity(bench_ctx_t *ctx);
void bench_oversub(bench_ctx_t *ctx);

#endif /* WEFT_BENCH_SYSTEMS_H */
