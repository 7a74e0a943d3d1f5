/* SPDX-License-Identifier: MIT */
/*
 * weft-sim's pictures (tools/sim_frames.c): a scene of entities at known
 * places is drawn, written as a PNG, read back with libpng, and each
 * entity's pixels must hold its kind's colour while every other pixel is
 * background. A real scenario must draw the same bytes with and without
 * a pool, and bad folders and sizes are refused.
 */
#define _POSIX_C_SOURCE 200809L
#include "support/weft_test.h"

#include <errno.h>
#include <png.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sim_frames.h"
#include "support/sim_test.h"

/* A fresh folder under /tmp for one test's pictures. */
static void temp_dir(char *out, size_t size) {
  snprintf(out, size, "/tmp/weft-frames-XXXXXX");
  assert_non_null(mkdtemp(out));
}

/* A PNG read back: its header and RGB rows. */
typedef struct png_read_t {
  uint32_t width, height;
  int depth, color;
  uint8_t *rgb; /* width x height x 3 */
} png_read_t;

static void read_png(const char *path, png_read_t *out) {
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  png_structp png =
      png_create_read_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
  assert_non_null(png);
  png_infop info = png_create_info_struct(png);
  assert_non_null(info);
  if (setjmp(png_jmpbuf(png)))
    fail_msg("libpng cannot read %s", path);
  png_init_io(png, f);
  png_read_png(png, info, PNG_TRANSFORM_IDENTITY, NULL);
  png_uint_32 w, h;
  png_get_IHDR(png, info, &w, &h, &out->depth, &out->color, NULL, NULL, NULL);
  out->width = w;
  out->height = h;
  out->rgb = malloc((size_t)w * h * 3);
  assert_non_null(out->rgb);
  png_bytepp rows = png_get_rows(png, info);
  size_t stride = png_get_rowbytes(png, info);
  assert_int_equal(stride, (size_t)w * 3);
  for (png_uint_32 r = 0; r < h; r++)
    memcpy(out->rgb + (size_t)r * stride, rows[r], stride);
  png_destroy_read_struct(&png, &info, NULL);
  fclose(f);
}

static const uint8_t *pixel(const png_read_t *p, uint32_t col, uint32_t row) {
  return p->rgb + ((size_t)row * p->width + col) * 3;
}

static bool is_rgb(const uint8_t *px, uint8_t r, uint8_t g, uint8_t b) {
  return px[0] == r && px[1] == g && px[2] == b;
}

/* A world holding only the standard components, as a 100 x 100 scene. */
static void known_scene(sim_scene_t *s) {
  memset(s, 0, sizeof *s);
  s->kind = SIM_ARENA;
  s->world = wt_world_new(NULL);
  assert_int_equal(weft_std_register(s->world, &s->std), WEFT_OK);
  s->side = 100.0f;
}

static void spawn(sim_scene_t *s, const weft_component_t *comps,
                  const void *const *vals) {
  weft_entity_t e;
  assert_int_equal(weft_spawn_with(s->world, comps, vals, &e), WEFT_OK);
}

/* One entity of each kind at a known place; 100 pixels for 100 units, so
 * world (x, y) is column x, row 99 - y. */
static void test_frames_entities_where_they_are(void **state) {
  (void)state;
  sim_scene_t s;
  known_scene(&s);
  const weft_std_t *d = &s.std;
  weft_vec2_t unit = {25.5f, 75.5f}, turret = {70.5f, 30.5f},
              shot = {50.5f, 50.5f}, boid = {10.5f, 10.5f},
              corpse = {90.5f, 90.5f}, still = {0, 0}, east = {3.0f, 0};
  weft_health_t full = {100.0f, 100.0f};
  weft_lifetime_t life;
  memset(&life, 0, sizeof life);
  weft_spawner_t sp;
  memset(&sp, 0, sizeof sp);
  spawn(&s, (weft_component_t[]){d->position, d->velocity, d->health, 0},
        (const void *[]){&unit, &still, &full});
  spawn(&s, (weft_component_t[]){d->position, d->spawner, d->health, 0},
        (const void *[]){&turret, &sp, &full});
  spawn(&s, (weft_component_t[]){d->position, d->velocity, d->lifetime, 0},
        (const void *[]){&shot, &east, &life});
  spawn(&s, (weft_component_t[]){d->position, d->velocity, d->boid, 0},
        (const void *[]){&boid, &east, NULL});
  spawn(&s, (weft_component_t[]){d->position, d->health, d->dead, 0},
        (const void *[]){&corpse, &full, NULL});
  /* Off the picture: drawn nowhere. */
  weft_vec2_t away = {-5.0f, 150.0f};
  spawn(&s, (weft_component_t[]){d->position, d->velocity, d->health, 0},
        (const void *[]){&away, &still, &full});

  char dir[64], path[128];
  temp_dir(dir, sizeof dir);
  sim_frames_t f;
  assert_int_equal(sim_frames_init(&f, dir, 100), WEFT_OK);
  assert_int_equal(sim_frames_write(&f, &s, 42), WEFT_OK);
  assert_int_equal(f.written, 1);
  snprintf(path, sizeof path, "%s/frame-000042.png", dir);
  png_read_t p;
  read_png(path, &p);
  assert_int_equal(p.width, 100);
  assert_int_equal(p.height, 100);
  assert_int_equal(p.depth, 8);
  assert_int_equal(p.color, PNG_COLOR_TYPE_RGB);
  /* The file holds what was drawn. */
  assert_memory_equal(p.rgb, f.rgb, 100 * 100 * 3);

  /* The unit: blue at full health. */
  const uint8_t *u = pixel(&p, 25, 24);
  assert_true(u[2] > 200 && u[2] > u[0] && u[2] > u[1]);
  /* The turret: an orange 3 x 3 square around it. */
  for (uint32_t r = 68; r <= 70; r++)
    for (uint32_t c = 69; c <= 71; c++)
      assert_true(is_rgb(pixel(&p, c, r), 255, 160, 40));
  /* The projectile: a yellow plus. */
  static const int plus[5][2] = {{0, 0}, {-1, 0}, {1, 0}, {0, -1}, {0, 1}};
  for (int k = 0; k < 5; k++) {
    const uint8_t *px =
        pixel(&p, (uint32_t)(50 + plus[k][0]), (uint32_t)(49 + plus[k][1]));
    assert_true(px[0] > 200 && px[1] > 180 && px[2] < 120);
  }
  /* The dead unit grey, the boid some colour that is not background. */
  assert_true(is_rgb(pixel(&p, 90, 9), 110, 110, 110));
  assert_false(is_rgb(pixel(&p, 10, 89), 14, 17, 22));
  /* Every other pixel is background: 1 + 9 + 5 + 1 + 1 drawn. */
  uint32_t drawn = 0;
  for (uint32_t r = 0; r < 100; r++)
    for (uint32_t c = 0; c < 100; c++)
      drawn += !is_rgb(pixel(&p, c, r), 14, 17, 22);
  assert_int_equal(drawn, 17);

  free(p.rgb);
  sim_frames_free(&f);
  weft_world_destroy(s.world);
  assert_int_equal(unlink(path), 0);
  assert_int_equal(rmdir(dir), 0);
}

/* A hurt unit turns red: health is part of the picture. */
static void test_frames_hurt_units_turn_red(void **state) {
  (void)state;
  sim_scene_t s;
  known_scene(&s);
  const weft_std_t *d = &s.std;
  weft_vec2_t a = {20.5f, 20.5f}, b = {80.5f, 80.5f}, still = {0, 0};
  weft_health_t full = {100.0f, 100.0f}, low = {5.0f, 100.0f};
  spawn(&s, (weft_component_t[]){d->position, d->velocity, d->health, 0},
        (const void *[]){&a, &still, &full});
  spawn(&s, (weft_component_t[]){d->position, d->velocity, d->health, 0},
        (const void *[]){&b, &still, &low});
  char dir[64];
  temp_dir(dir, sizeof dir);
  sim_frames_t f;
  assert_int_equal(sim_frames_init(&f, dir, 100), WEFT_OK);
  assert_int_equal(sim_frames_render(&f, &s), WEFT_OK);
  const uint8_t *healthy = f.rgb + ((size_t)79 * 100 + 20) * 3;
  const uint8_t *hurt = f.rgb + ((size_t)19 * 100 + 80) * 3;
  assert_true(healthy[2] > healthy[0]);
  assert_true(hurt[0] > hurt[2]);
  sim_frames_free(&f);
  weft_world_destroy(s.world);
  assert_int_equal(rmdir(dir), 0);
}

/* Draws scenario @p kind after some ticks on @p workers into @p rgb. */
static void draw_scenario(sim_kind_t kind, uint32_t workers, uint8_t *rgb,
                          uint32_t *drawn) {
  wt_sim_t s;
  wt_sim_open(&s, kind, workers, 3000, 9);
  for (int t = 0; t < 40; t++)
    wt_sim_tick(&s);
  char dir[64];
  temp_dir(dir, sizeof dir);
  sim_frames_t f;
  assert_int_equal(sim_frames_init(&f, dir, 200), WEFT_OK);
  assert_int_equal(sim_frames_render(&f, &s.scene), WEFT_OK);
  memcpy(rgb, f.rgb, 200 * 200 * 3);
  *drawn = 0;
  for (size_t i = 0; i < 200 * 200; i++)
    *drawn +=
        !(rgb[i * 3] == 14 && rgb[i * 3 + 1] == 17 && rgb[i * 3 + 2] == 22);
  sim_frames_free(&f);
  wt_sim_close(&s);
  assert_int_equal(rmdir(dir), 0);
}

/* The same world gives the same picture with or without a pool (the
 * chunks are visited in another order), for each scenario. */
static void test_frames_same_picture_on_any_pool(void **state) {
  (void)state;
  uint8_t *a = malloc(200 * 200 * 3), *b = malloc(200 * 200 * 3);
  assert_non_null(a);
  assert_non_null(b);
  for (int k = SIM_ARENA; k <= SIM_PARTICLES; k++) {
    uint32_t na, nb;
    draw_scenario((sim_kind_t)k, 0, a, &na);
    draw_scenario((sim_kind_t)k, 2, b, &nb);
    assert_true(na > 500); /* 3000 entities show */
    assert_int_equal(na, nb);
    assert_memory_equal(a, b, 200 * 200 * 3);
  }
  free(a);
  free(b);
}

static void test_frames_rejects_bad_input(void **state) {
  (void)state;
  sim_frames_t f;
  char dir[64], file[128];
  temp_dir(dir, sizeof dir);
  assert_int_equal(sim_frames_init(&f, dir, 8), WEFT_EINVAL);
  assert_int_equal(sim_frames_init(&f, dir, 5000), WEFT_EINVAL);
  assert_int_equal(sim_frames_init(&f, NULL, 100), WEFT_EINVAL);
  /* A file where the folder should be, and a missing parent. */
  snprintf(file, sizeof file, "%s/plain", dir);
  FILE *fp = fopen(file, "w");
  assert_non_null(fp);
  fclose(fp);
  assert_int_equal(sim_frames_init(&f, file, 100), WEFT_EIO);
  assert_int_equal(errno, ENOTDIR);
  snprintf(file, sizeof file, "%s/no/such", dir);
  assert_int_equal(sim_frames_init(&f, file, 100), WEFT_EIO);
  assert_int_equal(errno, ENOENT);
  /* A missing folder one level down is made. */
  snprintf(file, sizeof file, "%s/made", dir);
  assert_int_equal(sim_frames_init(&f, file, 100), WEFT_OK);
  struct stat st;
  assert_int_equal(stat(file, &st), 0);
  assert_true(S_ISDIR(st.st_mode));
  sim_frames_free(&f);
  assert_int_equal(rmdir(file), 0);
  snprintf(file, sizeof file, "%s/plain", dir);
  assert_int_equal(unlink(file), 0);
  assert_int_equal(rmdir(dir), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_frames_entities_where_they_are),
      cmocka_unit_test(test_frames_hurt_units_turn_red),
      cmocka_unit_test(test_frames_same_picture_on_any_pool),
      cmocka_unit_test(test_frames_rejects_bad_input),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
