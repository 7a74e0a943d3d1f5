/* SPDX-License-Identifier: MIT */
/*
 * png_lit: counts the coloured pixels of a PNG, for tests/net/browser.sh
 * (which must not depend on Python or ImageMagick). The live view draws
 * its background and its text in greys and every entity in a saturated
 * colour, so a coloured pixel is a drawn entity, and a page that shows
 * only its text or an error counts none.
 * usage: png_lit FILE.png MIN
 * Prints "WxH, N lit pixels" and exits 0 when N >= MIN, 1 when fewer,
 * 2 when the file is not a readable PNG.
 */
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The least spread between a pixel's brightest and darkest channel that
   counts as coloured: the entity colours (tools/web/weft-view.js) spread
   far more, while greys and their antialiased edges spread hardly at all. */
enum { MIN_CHROMA = 64 };

static int coloured(const png_byte *p) {
  int hi = p[0], lo = p[0];
  for (int c = 1; c < 3; c++) {
    hi = p[c] > hi ? p[c] : hi;
    lo = p[c] < lo ? p[c] : lo;
  }
  return hi - lo >= MIN_CHROMA;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: png_lit FILE.png MIN\n");
    return 2;
  }
  long min = strtol(argv[2], NULL, 10);
  png_image img;
  memset(&img, 0, sizeof img);
  img.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_file(&img, argv[1])) {
    fprintf(stderr, "png_lit: %s: %s\n", argv[1], img.message);
    return 2;
  }
  img.format = PNG_FORMAT_RGB;
  size_t size = PNG_IMAGE_SIZE(img);
  png_bytep px = malloc(size);
  if (!px || !png_image_finish_read(&img, NULL, px, 0, NULL)) {
    fprintf(stderr, "png_lit: %s: %s\n", argv[1],
            px ? img.message : "no memory");
    free(px);
    png_image_free(&img);
    return 2;
  }
  long lit = 0;
  for (size_t i = 0; i < (size_t)img.width * img.height; i++)
    lit += coloured(px + 3 * i);
  printf("%ux%u, %ld lit pixels\n", img.width, img.height, lit);
  free(px);
  return lit >= min ? 0 : 1;
}
