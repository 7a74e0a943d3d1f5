/* SPDX-License-Identifier: MIT */
/*
 * --svg: a scaling chart of the parallel workloads, as plain SVG that a
 * browser opens.
 *
 * A series is the rows that differ only in one name segment giving the
 * worker count: "<w>w", or "st" for a world without a pool (1 worker), so
 * heavy_compute/1w and heavy_compute/2w form "heavy_compute", update/2sys/st
 * and update/2sys/2w form "update/2sys". Only rows with workers > 0 count,
 * and a series is drawn when it has a 1-worker row and at least one other.
 * x: workers, y: time per operation relative to the same side's time on
 * 1 worker (lower is better), both on log scales so that the ideal,
 * 1 / workers, is a straight line. weft is the solid line, the
 * row's baseline the dashed line of the same colour, and the ideal the
 * grey dotted line. Each point's tooltip gives the row's
 * name and value.
 *
 * Lines that scale alike lie on top of each other, so colour alone does
 * not tell them apart: each series also has its own marker shape (filled
 * for weft, hollow for the baseline), and every line is labelled at its
 * end, in a column right of the plot where the labels are spread so that
 * none overlaps another, each joined to its line's end by a thin leader.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define SVG_MAX_POINTS 16
#define SVG_W 880.0
#define SVG_H 520.0
#define SVG_X0 70.0 /* plot area */
#define SVG_X1 540.0
#define SVG_Y0 60.0
#define SVG_Y1 460.0
#define SVG_LABEL_X (SVG_X1 + 24.0) /* the end labels' column */
#define SVG_LABEL_GAP 14.0          /* least distance between two labels */
#define SVG_CHAR_W 7.0              /* a character's width, about */
#define SVG_NSHAPES 6u

typedef struct svg_series_t {
  char key[64]; /* the name with the worker segment replaced by "*" */
  uint32_t count;
  const bench_result_t *rows[SVG_MAX_POINTS]; /* sorted by workers */
} svg_series_t;

static const char *const svg_colors[] = {"#1f77b4", "#d62728", "#2ca02c",
                                         "#ff7f0e", "#9467bd", "#8c564b",
                                         "#e377c2", "#17becf"};
#define SVG_NCOLORS (sizeof svg_colors / sizeof svg_colors[0])

/* A line's end and its label, placed by svg_place_labels(). */
typedef struct svg_end_t {
  double x, want; /* the line's last point */
  double y;       /* the label's baseline-centre, after placing */
  size_t series;
  int side; /* 0: weft, 1: baseline */
} svg_end_t;

/* True when [s, s + len) is "st" or digits followed by 'w'. */
static bool svg_worker_segment(const char *s, size_t len) {
  if (len == 2 && s[0] == 's' && s[1] == 't')
    return true;
  if (len < 2 || s[len - 1] != 'w')
    return false;
  for (size_t i = 0; i + 1 < len; ++i)
    if (s[i] < '0' || s[i] > '9')
      return false;
  return true;
}

/* The series key of @p name into @p key; false when the name has no
 * worker segment. */
static bool svg_key(const char *name, char *key, size_t size) {
  const char *seg = name;
  for (;;) {
    const char *end = strchr(seg, '/');
    size_t len = end ? (size_t)(end - seg) : strlen(seg);
    if (svg_worker_segment(seg, len)) {
      snprintf(key, size, "%.*s*%s", (int)(seg - name), name, seg + len);
      return true;
    }
    if (!end)
      return false;
    seg = end + 1;
  }
}

/* The key without its star segment and one of the slashes around it,
 * for the legend: "update/2sys/<star>" gives "update/2sys". */
static void svg_label(const char *key, char *out, size_t size) {
  const char *star = strchr(key, '*');
  size_t pre = (size_t)(star - key);
  if (pre > 0 && key[pre - 1] == '/')
    pre--;
  else if (star[1] == '/')
    star++;
  snprintf(out, size, "%.*s%s", (int)pre, key, star + 1);
}

static void svg_text(FILE *f, const char *s) {
  for (; *s; ++s) {
    switch (*s) {
    case '&':
      fputs("&amp;", f);
      break;
    case '<':
      fputs("&lt;", f);
      break;
    case '>':
      fputs("&gt;", f);
      break;
    case '"':
      fputs("&quot;", f);
      break;
    default:
      fputc(*s, f);
    }
  }
}

static bool svg_positive(double v) {
  return isfinite(v) && v > 0.0;
}

/* Groups the rows into series; returns how many are drawable (those come
 * first in @p out). */
static size_t svg_collect(const bench_ctx_t *ctx, svg_series_t *out) {
  size_t n = 0;
  for (size_t i = 0; i < ctx->count; ++i) {
    const bench_result_t *r = &ctx->results[i];
    char key[64];
    if (r->workers == 0 || !svg_positive(r->value) ||
        !svg_key(r->name, key, sizeof key))
      continue;
    size_t s = 0;
    while (s < n && strcmp(out[s].key, key) != 0)
      s++;
    if (s == n) {
      memset(&out[n], 0, sizeof out[n]);
      snprintf(out[n].key, sizeof out[n].key, "%s", key);
      n++;
    }
    svg_series_t *se = &out[s];
    uint32_t k = 0;
    while (k < se->count && se->rows[k]->workers < r->workers)
      k++;
    if (se->count == SVG_MAX_POINTS ||
        (k < se->count && se->rows[k]->workers == r->workers))
      continue; /* full, or a repeated worker count: the first one stays */
    memmove(&se->rows[k + 1], &se->rows[k],
            (se->count - k) * sizeof se->rows[0]);
    se->rows[k] = r;
    se->count++;
  }
  size_t drawable = 0;
  for (size_t s = 0; s < n; ++s) {
    if (out[s].count < 2 || out[s].rows[0]->workers != 1)
      continue;
    svg_series_t t = out[drawable];
    out[drawable++] = out[s];
    out[s] = t;
  }
  return drawable;
}

/* The axes: x is log2(workers) over [0, log2(max_w)], y is log2 of the
 * relative time over [ylo, yhi]. */
typedef struct svg_scale_t {
  uint32_t max_w;
  double ylo, yhi;
} svg_scale_t;

static double svg_x(const svg_scale_t *sc, double workers) {
  return SVG_X0 + (SVG_X1 - SVG_X0) * log2(workers) / log2(sc->max_w);
}

static double svg_y(const svg_scale_t *sc, double rel) {
  return SVG_Y1 -
         (SVG_Y1 - SVG_Y0) * (log2(rel) - sc->ylo) / (sc->yhi - sc->ylo);
}

/* Relative time of one side of a row: @p base selects the baseline. */
static double svg_rel(const svg_series_t *se, uint32_t k, bool base) {
  const bench_result_t *r = se->rows[k], *r1 = se->rows[0];
  return base ? r->baseline_value / r1->baseline_value : r->value / r1->value;
}

static bool svg_has_base(const svg_series_t *se) {
  for (uint32_t k = 0; k < se->count; ++k)
    if (!se->rows[k]->baseline[0] || !svg_positive(se->rows[k]->baseline_value))
      return false;
  return true;
}

/* One horizontal grid line with its label at relative time 2^e. */
static void svg_ytick(FILE *f, const svg_scale_t *sc, double e, bool major) {
  double y = svg_y(sc, exp2(e));
  fprintf(f,
          "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
          "stroke=\"%s\"/>\n<text x=\"%.1f\" y=\"%.1f\" "
          "text-anchor=\"end\">%g</text>\n",
          SVG_X0, y, SVG_X1, y, major ? "#ccc" : "#eee", SVG_X0 - 6, y + 4,
          exp2(e));
}

static void svg_axes(FILE *f, const svg_scale_t *sc) {
  fprintf(f,
          "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
          "fill=\"none\" stroke=\"#444\"/>\n",
          SVG_X0, SVG_Y0, SVG_X1 - SVG_X0, SVG_Y1 - SVG_Y0);
  /* Powers of two, and 1.5 times them when the axis spans few octaves. */
  bool minor = sc->yhi - sc->ylo <= 4.0;
  for (double e = ceil(sc->ylo); e <= sc->yhi + 1e-9; e += 1.0) {
    svg_ytick(f, sc, e, true);
    if (minor && e + log2(1.5) <= sc->yhi)
      svg_ytick(f, sc, e + log2(1.5), false);
  }
  if (minor && floor(sc->ylo) + log2(1.5) >= sc->ylo)
    svg_ytick(f, sc, floor(sc->ylo) + log2(1.5), false);
  for (uint32_t w = 1;; w *= 2) { /* powers of two, then max_w */
    uint32_t t = w < sc->max_w ? w : sc->max_w;
    double x = svg_x(sc, t);
    fprintf(f,
            "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
            "stroke=\"#ddd\"/>\n<text x=\"%.1f\" y=\"%.1f\" "
            "text-anchor=\"middle\">%u</text>\n",
            x, SVG_Y0, x, SVG_Y1, x, SVG_Y1 + 18, t);
    if (t == sc->max_w)
      break;
  }
  fprintf(f,
          "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">workers "
          "(log scale)</text>\n",
          (SVG_X0 + SVG_X1) / 2, SVG_Y1 + 42);
  fprintf(f,
          "<text transform=\"translate(%.1f %.1f) rotate(-90)\" "
          "text-anchor=\"middle\">time per operation / time on 1 "
          "worker (log scale)</text>\n",
          SVG_X0 - 48, (SVG_Y0 + SVG_Y1) / 2);
}

/* Series @p idx's marker at (x, y): a shape of its own (circle, square,
 * triangle, diamond, inverted triangle, plus), filled for weft and hollow
 * for the baseline. The element is left open for a <title>; @p close is
 * its closing tag. */
static void svg_marker(FILE *f, size_t idx, int side, double x, double y,
                       const char *color, const char **close) {
  unsigned shape = (unsigned)(idx % SVG_NSHAPES);
  double r = side ? 3.0 : 4.0;
  const char *fill = side ? "white" : color;
  if (shape == 0) {
    fprintf(f,
            "<circle class=\"marker m0\" cx=\"%.1f\" cy=\"%.1f\" r=\"%.1f\" "
            "fill=\"%s\" stroke=\"%s\" stroke-width=\"1.5\">",
            x, y, r, fill, color);
    *close = "</circle>";
    return;
  }
  fprintf(f,
          "<path class=\"marker m%u\" fill=\"%s\" stroke=\"%s\" "
          "stroke-width=\"1.5\" d=\"",
          shape, shape == 5 ? "none" : fill, color);
  switch (shape) {
  case 1: /* square */
    fprintf(f, "M%.1f %.1fh%.1fv%.1fh%.1fz", x - r, y - r, 2 * r, 2 * r,
            -2 * r);
    break;
  case 2: /* triangle */
    fprintf(f, "M%.1f %.1fL%.1f %.1fL%.1f %.1fz", x, y - 1.25 * r, x + r,
            y + 0.85 * r, x - r, y + 0.85 * r);
    break;
  case 3: /* diamond */
    fprintf(f, "M%.1f %.1fL%.1f %.1fL%.1f %.1fL%.1f %.1fz", x, y - 1.3 * r,
            x + 1.3 * r, y, x, y + 1.3 * r, x - 1.3 * r, y);
    break;
  case 4: /* inverted triangle */
    fprintf(f, "M%.1f %.1fL%.1f %.1fL%.1f %.1fz", x, y + 1.25 * r, x + r,
            y - 0.85 * r, x - r, y - 0.85 * r);
    break;
  default: /* plus, drawn with the stroke */
    fprintf(f, "M%.1f %.1fH%.1fM%.1f %.1fV%.1f", x - 1.3 * r, y, x + 1.3 * r, x,
            y - 1.3 * r, y + 1.3 * r);
    break;
  }
  fputs("\">", f);
  *close = "</path>";
}

/* Draws series @p idx's lines and points, adds its legend lines at
 * @p legend_x, and records its lines' ends in @p ends. */
static void svg_series(FILE *f, const svg_series_t *se, size_t idx,
                       const svg_scale_t *sc, double legend_x, double *legend_y,
                       svg_end_t *ends, size_t *nends) {
  const char *color = svg_colors[idx % SVG_NCOLORS];
  bool base = svg_has_base(se);
  char label[64];
  svg_label(se->key, label, sizeof label);
  for (int side = 0; side <= (int)base; ++side) {
    fprintf(f,
            "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\"%s "
            "points=\"",
            color, side ? " stroke-dasharray=\"6 4\"" : "");
    for (uint32_t k = 0; k < se->count; ++k)
      fprintf(f, "%s%.1f,%.1f", k ? " " : "", svg_x(sc, se->rows[k]->workers),
              svg_y(sc, svg_rel(se, k, side)));
    fputs("\"/>\n", f);
    for (uint32_t k = 0; k < se->count; ++k) {
      const bench_result_t *r = se->rows[k];
      const char *close;
      svg_marker(f, idx, side, svg_x(sc, r->workers),
                 svg_y(sc, svg_rel(se, k, side)), color, &close);
      fputs("<title>", f);
      svg_text(f, r->name);
      fputs(side ? " baseline " : " ", f);
      if (side)
        svg_text(f, r->baseline);
      fprintf(f, ": %.4g %s on %u worker%s, %.3f of 1 worker</title>",
              side ? r->baseline_value : r->value, r->unit, r->workers,
              r->workers == 1 ? "" : "s", svg_rel(se, k, side));
      fprintf(f, "%s\n", close);
    }
    uint32_t last = se->count - 1;
    ends[*nends] =
        (svg_end_t){svg_x(sc, se->rows[last]->workers),
                    svg_y(sc, svg_rel(se, last, side)), 0, idx, side};
    (*nends)++;
    /* Legend entry: the line with the series' marker on it. */
    double y = *legend_y;
    const char *close;
    fprintf(f,
            "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
            "stroke=\"%s\" stroke-width=\"2\"%s/>\n",
            legend_x, y, legend_x + 28, y, color,
            side ? " stroke-dasharray=\"6 4\"" : "");
    svg_marker(f, idx, side, legend_x + 14, y, color, &close);
    fprintf(f, "%s\n<text x=\"%.1f\" y=\"%.1f\">", close, legend_x + 36, y + 4);
    svg_text(f, label);
    if (side) {
      fputs(" baseline (", f);
      svg_text(f, se->rows[se->count - 1]->baseline);
      fputs(")", f);
    } else {
      fputs(" weft", f);
    }
    fputs("</text>\n", f);
    *legend_y += 20;
  }
}

static int svg_end_cmp(const void *pa, const void *pb) {
  const svg_end_t *a = pa, *b = pb;
  if (a->want != b->want)
    return a->want < b->want ? -1 : 1;
  /* Equal ends: a stable order, series then side. */
  if (a->series != b->series)
    return a->series < b->series ? -1 : 1;
  return a->side - b->side;
}

/*
 * Places the labels in one column: each as near its line's end as it can
 * be while every two are at least SVG_LABEL_GAP apart and all lie within
 * [top, bottom] (the caller makes that range tall enough). Sorted by the
 * ends' heights, pushed down past their upper neighbours, then back up
 * from the bottom where they ran past it.
 */
static void svg_place_labels(svg_end_t *ends, size_t n, double top,
                             double bottom) {
  qsort(ends, n, sizeof *ends, svg_end_cmp);
  for (size_t i = 0; i < n; ++i) {
    double lo = i ? ends[i - 1].y + SVG_LABEL_GAP : top;
    ends[i].y = fmax(ends[i].want, lo);
  }
  for (size_t i = n; i-- > 0;) {
    double hi = i + 1 < n ? ends[i + 1].y - SVG_LABEL_GAP : bottom;
    ends[i].y = fmin(ends[i].y, hi);
  }
}

/* The end labels, with a leader from each line's end. */
static void svg_end_labels(FILE *f, const svg_series_t *series,
                           const svg_end_t *ends, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const svg_end_t *e = &ends[i];
    const svg_series_t *se = &series[e->series];
    const char *color = svg_colors[e->series % SVG_NCOLORS];
    char label[64];
    svg_label(se->key, label, sizeof label);
    fprintf(f,
            "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1\" "
            "stroke-opacity=\"0.6\" points=\"%.1f,%.1f %.1f,%.1f "
            "%.1f,%.1f\"/>\n",
            color, e->x + 5, e->want, SVG_LABEL_X - 14, e->y, SVG_LABEL_X - 3,
            e->y);
    fprintf(f, "<text class=\"end-label\" x=\"%.1f\" y=\"%.1f\" fill=\"%s\">",
            SVG_LABEL_X, e->y + 4, color);
    svg_text(f, label);
    if (e->side) {
      fputs(" (", f);
      svg_text(f, se->rows[se->count - 1]->baseline);
      fputs(")", f);
    }
    fputs("</text>\n", f);
  }
}

/* Longest end label, in characters. */
static size_t svg_end_chars(const svg_series_t *series, size_t n) {
  size_t most = 0;
  for (size_t s = 0; s < n; ++s) {
    const svg_series_t *se = &series[s];
    size_t len =
        strlen(se->key) + 3 + strlen(se->rows[se->count - 1]->baseline);
    if (len > most)
      most = len;
  }
  return most;
}

/* Longest legend line of the series, in characters. */
static size_t svg_legend_chars(const svg_series_t *series, size_t n) {
  size_t most = 20; /* "ideal (1 / workers)" */
  for (size_t s = 0; s < n; ++s) {
    const svg_series_t *se = &series[s];
    size_t len =
        strlen(se->key) + 12 + strlen(se->rows[se->count - 1]->baseline);
    if (len > most)
      most = len;
  }
  return most;
}

int bench_write_svg(const bench_ctx_t *ctx, const char *path) {
  svg_series_t *series = calloc(ctx->count ? ctx->count : 1, sizeof *series);
  if (!series) {
    errno = ENOMEM;
    return -1;
  }
  size_t n = svg_collect(ctx, series);
  /* y spans the ideal's range and every point, in octaves, with a margin. */
  svg_scale_t sc = {.max_w = 2};
  for (size_t s = 0; s < n; ++s)
    for (uint32_t k = 0; k < series[s].count; ++k)
      if (series[s].rows[k]->workers > sc.max_w)
        sc.max_w = series[s].rows[k]->workers;
  double lo = 1.0 / sc.max_w, hi = 1.0;
  for (size_t s = 0; s < n; ++s) {
    const svg_series_t *se = &series[s];
    bool base = svg_has_base(se);
    for (uint32_t k = 0; k < se->count; ++k)
      for (int side = 0; side <= (int)base; ++side) {
        lo = fmin(lo, svg_rel(se, k, side));
        hi = fmax(hi, svg_rel(se, k, side));
      }
  }
  sc.ylo = log2(lo) - 0.15;
  sc.yhi = log2(hi) + 0.15;
  /* The end labels take a column right of the plot, at least
   * SVG_LABEL_GAP a label; the legend follows it, 20 px a line: the
   * ideal, then two per series. */
  double legend_x =
      SVG_LABEL_X + 24 + SVG_CHAR_W * (double)svg_end_chars(series, n);
  double labels_bottom = fmax(SVG_Y1, SVG_Y0 + SVG_LABEL_GAP * (double)(2 * n));
  double height = fmax(fmax(SVG_H, SVG_Y0 + 28 + 20.0 * (double)(1 + 2 * n)),
                       labels_bottom + 60);
  double width = fmax(
      SVG_W, legend_x + 46 + SVG_CHAR_W * (double)svg_legend_chars(series, n));
  svg_end_t *ends = calloc(2 * n + 1, sizeof *ends);
  if (!ends) {
    free(series);
    errno = ENOMEM;
    return -1;
  }

  FILE *f = fopen(path, "w");
  if (!f) {
    free(ends);
    free(series);
    return -1;
  }
  fprintf(f,
          "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
          "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" "
          "height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
          "font-family=\"sans-serif\" font-size=\"12\">\n"
          "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
          "<text x=\"%.1f\" y=\"24\" font-size=\"16\">weft-bench: scaling "
          "of the parallel workloads</text>\n"
          "<text x=\"%.1f\" y=\"42\" fill=\"#555\">%s run; time per "
          "operation relative to the same side on 1 worker, lower is "
          "better</text>\n",
          width, height, width, height, SVG_X0, SVG_X0,
          ctx->quick ? "quick" : "full");
  svg_axes(f, &sc);

  double legend_y = SVG_Y0 + 8;
  fprintf(f,
          "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
          "stroke=\"#888\" stroke-width=\"2\" stroke-dasharray=\"2 3\"/>\n"
          "<text x=\"%.1f\" y=\"%.1f\">ideal (1 / workers)</text>\n",
          legend_x, legend_y, legend_x + 28, legend_y, legend_x + 36,
          legend_y + 4);
  legend_y += 20;

  size_t nends = 0;
  for (size_t s = 0; s < n; ++s)
    svg_series(f, &series[s], s, &sc, legend_x, &legend_y, ends, &nends);
  svg_place_labels(ends, nends, SVG_Y0, labels_bottom);
  svg_end_labels(f, series, ends, nends);
  /* The ideal, 1 / workers: a straight line on these axes, drawn
   * last so that no series hides it. */
  fprintf(f,
          "<polyline fill=\"none\" stroke=\"#888\" stroke-width=\"2\" "
          "stroke-dasharray=\"2 3\" points=\"%.1f,%.1f %.1f,%.1f",
          svg_x(&sc, 1.0), svg_y(&sc, 1.0), svg_x(&sc, sc.max_w),
          svg_y(&sc, 1.0 / sc.max_w));
  fputs("\"/>\n", f);
  if (n == 0)
    fprintf(f,
            "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" "
            "fill=\"#a00\">no parallel workload with a 1-worker row in "
            "this run</text>\n",
            (SVG_X0 + SVG_X1) / 2, (SVG_Y0 + SVG_Y1) / 2);
  fputs("</svg>\n", f);
  free(ends);
  free(series);
  return bench_fclose(f);
}
