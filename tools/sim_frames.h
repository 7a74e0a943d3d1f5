/* SPDX-License-Identifier: MIT */
/*
 * weft-sim's pictures: a top-down PNG of a scene's world (sim_scenarios.h)
 * every few ticks, so that a person can watch the arena, the boids and the
 * particles move. Rendering reads the world between ticks on the owner
 * thread; it never changes the world, so the digest is the same with or
 * without frames.
 *
 * Each entity with a Position is a dot at its place, coloured by kind:
 * turrets (Spawner) are orange squares, projectiles (Lifetime) yellow,
 * units (Health) blue fading to red as they lose health, dead units grey,
 * and everything else that moves (boids, particles) takes a hue from its
 * heading. A pixel several entities share is drawn brighter. The picture
 * depends only on the entities, never on the order they are visited in,
 * so the same world gives the same bytes on any thread count.
 */
#ifndef WEFT_TOOLS_SIM_FRAMES_H
#define WEFT_TOOLS_SIM_FRAMES_H

#include <stdint.h>

#include "sim_scenarios.h"

/** The default picture side in pixels, and the range a caller may ask. */
#define SIM_FRAME_SIZE 800u
#define SIM_FRAME_MIN_SIZE 16u
#define SIM_FRAME_MAX_SIZE 4096u

/* One pixel's tally while rendering (private to sim_frames.c). */
typedef struct sim_frame_px_t sim_frame_px_t;

/* A frame writer: where the pictures go and the scratch to draw them. */
typedef struct sim_frames_t {
  char dir[1024]; /* the pictures' folder */
  uint32_t size;  /* the pictures' side in pixels */
  uint32_t written;
  char why[1280]; /* after a failed write: the file and what libpng said */
  sim_frame_px_t *tally; /* size x size */
  uint8_t *rgb;          /* size x size x 3, the last frame drawn */
} sim_frames_t;

/*
 * Prepares @p f to write size x size pictures into @p dir, creating the
 * folder (one level) when it is missing. Returns 0, WEFT_EINVAL (a size out
 * of range, a path too long), WEFT_EIO (the folder cannot be made or
 * written: errno says why) or WEFT_ENOMEM.
 */
int sim_frames_init(sim_frames_t *f, const char *dir, uint32_t size);

/* Frees the scratch; the pictures stay. */
void sim_frames_free(sim_frames_t *f);

/*
 * Draws the scene's world into f->rgb (rows top to bottom, y up, the
 * square [0, side)^2 filling the picture). Owner thread, between ticks.
 * Returns 0 or the error of a query it made (WEFT_ENOMEM...).
 */
int sim_frames_render(sim_frames_t *f, const sim_scene_t *scene);

/*
 * Draws the scene and writes it as <dir>/frame-<tick, 6 digits>.png, an
 * 8-bit RGB PNG. Owner thread, between ticks. Returns 0, a render error,
 * or WEFT_EIO (the file could not be written; f->why says why).
 */
int sim_frames_write(sim_frames_t *f, const sim_scene_t *scene, uint64_t tick);

#endif /* WEFT_TOOLS_SIM_FRAMES_H */
