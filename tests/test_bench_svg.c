/* SPDX-License-Identifier: MIT */
/*
 * weft-bench's scaling chart (bench/svg.c): lines that scale alike lie on
 * top of each other, so every line is labelled at its end, the labels are
 * spread so that none overlaps another, and each series has a marker
 * shape of its own. The chart is written from hand-made rows and read
 * back as text.
 */
#define _POSIX_C_SOURCE 200809L
#include "support/weft_test.h"

#include <math.h>
#include <stdlib.h>
#include <unistd.h>

#include "bench/harness.h"

#define MAX_ROWS 16
#define MAX_LABELS 16

typedef struct chart_t {
  char *text; /* the whole SVG */
  uint32_t nlabels;
  double label_y[MAX_LABELS];
  char label[MAX_LABELS][96];
  double height;
} chart_t;

static void row(bench_result_t *r, const char *name, uint32_t workers,
                double value, const char *baseline, double base_value) {
  memset(r, 0, sizeof *r);
  snprintf(r->name, sizeof r->name, "%s", name);
  snprintf(r->baseline, sizeof r->baseline, "%s", baseline ? baseline : "");
  r->unit = "ns/op";
  r->workers = workers;
  r->value = value;
  r->baseline_value = base_value;
}

/* Writes the chart of @p rows and parses its end labels into @p c. */
static void chart(bench_result_t *rows, size_t n, chart_t *c) {
  bench_ctx_t ctx;
  memset(&ctx, 0, sizeof ctx);
  ctx.results = rows;
  ctx.count = n;
  char path[] = "/tmp/weft-svg-XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  close(fd);
  assert_int_equal(bench_write_svg(&ctx, path), 0);
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  memset(c, 0, sizeof *c);
  c->text = calloc((size_t)size + 1, 1);
  assert_non_null(c->text);
  assert_int_equal(fread(c->text, 1, (size_t)size, f), (size_t)size);
  fclose(f);
  unlink(path);
  const char *h = strstr(c->text, "height=\"");
  assert_non_null(h);
  c->height = atof(h + 8);
  const char *tag = "<text class=\"end-label\" x=\"";
  for (const char *p = strstr(c->text, tag); p; p = strstr(p + 1, tag)) {
    assert_true(c->nlabels < MAX_LABELS);
    const char *y = strstr(p, "y=\"");
    const char *open = strchr(p, '>'), *end = strstr(p, "</text>");
    assert_non_null(y);
    assert_non_null(open);
    assert_non_null(end);
    c->label_y[c->nlabels] = atof(y + 3);
    snprintf(c->label[c->nlabels], sizeof c->label[0], "%.*s",
             (int)(end - open - 1), open + 1);
    c->nlabels++;
  }
}

static bool has_label(const chart_t *c, const char *text) {
  for (uint32_t i = 0; i < c->nlabels; i++)
    if (!strcmp(c->label[i], text))
      return true;
  return false;
}

/* Three series, two with baselines, all on exactly the same line: five
 * labels, all present, none within a line's height of another, all on
 * the chart; and three marker shapes. */
static void test_bench_svg_overlapping_lines_are_labelled_apart(void **state) {
  (void)state;
  bench_result_t rows[MAX_ROWS];
  size_t n = 0;
  static const uint32_t w[] = {1, 2, 4};
  for (int i = 0; i < 3; i++) {
    char name[64];
    snprintf(name, sizeof name, "heavy_compute/%uw", w[i]);
    row(&rows[n++], name, w[i], 100.0 / w[i], "omp", 80.0 / w[i]);
    snprintf(name, sizeof name, "update/2sys/%s",
             w[i] == 1 ? "st" : (w[i] == 2 ? "2w" : "4w"));
    row(&rows[n++], name, w[i], 10.0 / w[i], "omp", 7.0 / w[i]);
    snprintf(name, sizeof name, "frame/%uw", w[i]);
    row(&rows[n++], name, w[i], 3.0 / w[i], NULL, 0);
  }
  chart_t c;
  chart(rows, n, &c);
  assert_int_equal(c.nlabels, 5);
  assert_true(has_label(&c, "heavy_compute"));
  assert_true(has_label(&c, "heavy_compute (omp)"));
  assert_true(has_label(&c, "update/2sys"));
  assert_true(has_label(&c, "update/2sys (omp)"));
  assert_true(has_label(&c, "frame"));
  for (uint32_t i = 0; i < c.nlabels; i++) {
    assert_true(c.label_y[i] > 0 && c.label_y[i] < c.height);
    for (uint32_t j = i + 1; j < c.nlabels; j++)
      assert_true(fabs(c.label_y[i] - c.label_y[j]) >= 13.9);
  }
  /* A marker shape per series. */
  assert_non_null(strstr(c.text, "class=\"marker m0\""));
  assert_non_null(strstr(c.text, "class=\"marker m1\""));
  assert_non_null(strstr(c.text, "class=\"marker m2\""));
  assert_null(strstr(c.text, "class=\"marker m3\""));
  free(c.text);
}

/* Many series ending at the same place: the labels still do not overlap,
 * and the chart grows to hold them. */
static void test_bench_svg_many_labels_fit(void **state) {
  (void)state;
  bench_result_t rows[MAX_ROWS];
  size_t n = 0;
  for (int s = 0; s < 7; s++)
    for (uint32_t wk = 1; wk <= 2; wk++) {
      char name[64];
      snprintf(name, sizeof name, "series%d/%uw", s, wk);
      row(&rows[n++], name, wk, 10.0 / wk, "c", 10.0 / wk);
    }
  chart_t c;
  chart(rows, n, &c);
  assert_int_equal(c.nlabels, 14);
  for (uint32_t i = 0; i < c.nlabels; i++) {
    assert_true(c.label_y[i] > 0 && c.label_y[i] < c.height);
    for (uint32_t j = i + 1; j < c.nlabels; j++)
      assert_true(fabs(c.label_y[i] - c.label_y[j]) >= 13.9);
  }
  /* Six shapes, then they repeat (with another colour). */
  for (int m = 0; m < 6; m++) {
    char cls[32];
    snprintf(cls, sizeof cls, "class=\"marker m%d\"", m);
    assert_non_null(strstr(c.text, cls));
  }
  free(c.text);
}

/* Lines far apart keep their labels level with their ends: the leader
 * from each end runs flat. */
static void test_bench_svg_lone_labels_stay_at_their_lines(void **state) {
  (void)state;
  bench_result_t rows[4];
  row(&rows[0], "fast/1w", 1, 10.0, NULL, 0);
  row(&rows[1], "fast/4w", 4, 2.5, NULL, 0);
  row(&rows[2], "slow/1w", 1, 10.0, NULL, 0);
  row(&rows[3], "slow/4w", 4, 12.0, NULL, 0);
  chart_t c;
  chart(rows, 4, &c);
  assert_int_equal(c.nlabels, 2);
  uint32_t leaders = 0;
  const char *tag = "stroke-opacity=\"0.6\" points=\"";
  for (const char *p = strstr(c.text, tag); p; p = strstr(p + 1, tag)) {
    double x0, y0, x1, y1;
    assert_int_equal(
        sscanf(p + strlen(tag), "%lf,%lf %lf,%lf", &x0, &y0, &x1, &y1), 4);
    assert_true(fabs(y0 - y1) < 0.05);
    leaders++;
  }
  assert_int_equal(leaders, 2);
  free(c.text);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bench_svg_overlapping_lines_are_labelled_apart),
      cmocka_unit_test(test_bench_svg_many_labels_fit),
      cmocka_unit_test(test_bench_svg_lone_labels_stay_at_their_lines),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
