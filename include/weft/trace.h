/* SPDX-License-Identifier: MIT */
/**
 * @file weft/trace.h
 * @brief Traces: recording the spans of the frames that follow and
 * writing them for Perfetto or chrome://tracing.
 *
 * Threads: every function here is owner-thread API.
 */
#ifndef WEFT_TRACE_H
#define WEFT_TRACE_H

#include <stdint.h>

#include "weft/world.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Starts recording a trace of the frames that follow: per worker, at most
 * @p events_per_worker spans (system jobs, inline runs, sync points);
 * later spans are counted but dropped. Memory is taken now, so tracing does
 * not allocate inside frames. Owner thread. WEFT_EINVAL, WEFT_ENOMEM.
 */
int weft_trace_start(weft_world_t *world, uint32_t events_per_worker);

/** Stops recording (the spans recorded stay until the next start).
 * Owner thread. */
void weft_trace_stop(weft_world_t *world);

/**
 * Writes the recorded spans as Chrome trace-event JSON, which Perfetto and
 * chrome://tracing open: a named process, one named lane per worker slot
 * that recorded a span, times in whole nanoseconds, and slices on a lane
 * that never overlap unless one nests in the other. Owner thread.
 * Returns 0, WEFT_EINVAL (no trace), or WEFT_EIO when the file cannot be
 * written (the message names the path).
 */
int weft_trace_write(weft_world_t *world, const char *path);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_TRACE_H */
