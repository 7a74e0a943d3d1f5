/* SPDX-License-Identifier: MIT */
/*
 * The grid's rebuild: the builder system ("weft.grid.build") and the
 * passes it splits over the pool.
 *
 * The builder is a task (one call per run) that walks two cached queries,
 * Position without an enabled Velocity and Position with one: Velocity is
 * stored SoA, and the public iterator only hands out the field arrays of
 * include terms, so the two queries are how an optional SoA component is
 * read. Their chunk order does not matter: items are gathered in any
 * order, counting-sorted by cell and then sorted by key (the Key's id, or
 * the handle for an entity without one) inside each cell, so the grid is
 * the same whatever the chunk layout or thread count, and for keyed
 * entities whatever their handles.
 *
 * Every array is kept between rebuilds and grows geometrically, so a
 * steady world rebuilds without allocating.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <weft.h>
#include <weft/builtin.h>

#include "core/alloc.h"
#include "grid_internal.h"
#include "builtin_internal.h"

/* Cells up to this size are sorted by insertion, bigger ones by heapsort
 * (in place: no allocation, n log n at worst). */
#define GRID_SMALL_CELL 24u

/* Rows per piece of a run of chunks (see note_run()). */
#define GRID_PIECE 512u

/* Pieces per gather job. */
#define GRID_GATHER_GRAIN 16u

/* Bands per worker on a pool (at most GRID_BANDS in all): more bands
 * balance the sort better and give each band a smaller slice of the cell
 * table, fewer give the gather fewer streams to write. Measured design
 * parameters (see docs/performance-notes.md, systems/grid_build.c). */
#define GRID_BANDS_PER_WORKER 4u
#define GRID_BANDS_PER_FEW 2u /* ... below GRID_FEW_WORKERS workers */
#define GRID_FEW_WORKERS 4u

/* Bands for cache locality alone, on any number of threads: enough that
 * a band's share of the cell table and its items (gathered and sorted,
 * two copies) take at most GRID_BAND_BYTES (bands_for()). */
#define GRID_BAND_BYTES (4u << 20)

/* How far ahead the counting sort prefetches (items): the cell entries
 * the count bumps, those the placing takes slots from, and the slots an
 * item is then copied to: far enough to hide a miss to memory (see
 * docs/performance-notes.md, systems/grid_build.c). */
#define GRID_COUNT_AHEAD 64u
#define GRID_SLOT_AHEAD 64u
#define GRID_COPY_AHEAD 32u

/* How far ahead of an item's slot in its band's stretch the gather
 * prefetches for writing (items; the cell entries go four times as far, a
 * fourth the size). Each band is a stream of stores, and with tens of
 * bands the hardware prefetcher tracks too few of them: every line the
 * gather started was a read for ownership from memory (see
 * docs/performance-notes.md, systems/grid_build.c). */
#define GRID_GATHER_AHEAD 8u

/* One piece of the rebuild: up to GRID_PIECE consecutive rows of one run
 * of chunks, its arrays and where its items go. */
typedef struct grid_piece_t {
  const weft_entity_t *entities;
  const float *px, *py, *vx, *vy;
  const weft_collider_t *col;
  const weft_key_t *key; /* NULL: the handles are the keys */
  uint32_t count;
  uint32_t first; /* index of its first item in scratch/cells */
} grid_piece_t;

/* Makes room for @p need items in every per-item array, doubling. Nothing
 * changes on failure. */
static int reserve(weft_grid_t *g, uint32_t need) {
  if (need <= g->cap)
    return 0;
  uint32_t cap = g->cap ? g->cap : 256;
  while (cap < need)
    cap = cap > UINT32_MAX / 2 ? need : cap * 2;
  weft_grid_item_t *items =
      weft__grid_alloc((size_t)cap * sizeof *items, false);
  weft_grid_item_t *scratch =
      weft__grid_alloc((size_t)cap * sizeof *scratch, false);
  uint32_t *cells = weft__grid_alloc((size_t)cap * sizeof *cells, false);
  uint32_t *multi = weft__grid_alloc((size_t)cap * sizeof *multi, false);
  if (!items || !scratch || !cells || !multi) {
    weft__free(items, 0, 0);
    weft__free(scratch, 0, 0);
    weft__free(cells, 0, 0);
    weft__free(multi, 0, 0);
    return WEFT_ENOMEM;
  }
  /* The rebuild that asked for room refills everything. */
  weft__free(g->items, 0, 0);
  weft__free(g->scratch, 0, 0);
  weft__free(g->cells, 0, 0);
  weft__free(g->multi, 0, 0);
  g->items = items;
  g->scratch = scratch;
  g->cells = cells;
  g->multi = multi;
  g->cap = cap;
  return 0;
}

/* Appends a piece, at item index *n. */
static int note_piece(weft_grid_t *g, grid_piece_t piece, uint32_t *n) {
  if (g->npieces == g->pieces_cap) {
    uint32_t cap = g->pieces_cap ? g->pieces_cap * 2 : 64;
    grid_piece_t *c =
        weft__realloc(NULL, g->pieces, 0, (size_t)cap * sizeof *c);
    if (c)
      g->pieces = c;
    uint32_t *at =
        weft__realloc(NULL, g->at, 0, (size_t)cap * GRID_BANDS * sizeof *at);
    if (at)
      g->at = at;
    if (!c || !at)
      return WEFT_ENOMEM;
    g->pieces_cap = cap;
  }
  piece.first = *n;
  g->pieces[g->npieces++] = piece;
  *n += piece.count;
  return 0;
}

/*
 * Notes a run of chunks that a query handed out (the queries ask for
 * runs: chunks whose arrays continue each other), cut in pieces of
 * GRID_PIECE rows, the units the per-band counts and the gather split
 * over the pool. Per run rather than per chunk because this pass is
 * serial and each chunk's header is a cache miss by the time the grid is
 * rebuilt.
 */
static int note_run(weft_grid_t *g, const weft_iter_t *it, bool moving,
                    uint32_t *n) {
  void *pos[WEFT_MAX_FIELDS] = {0}, *vel[WEFT_MAX_FIELDS] = {0};
  weft_iter_fields(it, 0, pos);
  if (moving)
    weft_iter_fields(it, 1, vel);
  const float *px = pos[0], *py = pos[1], *vx = vel[0], *vy = vel[1];
  /* A disabled Collider, or a Dead entity's, counts as none. */
  const weft_collider_t *col = NULL;
  if (g->collider && weft_iter_enabled(it, g->collider) &&
      !(g->dead && weft_iter_enabled(it, g->dead)))
    col = weft_iter_column_of(it, g->collider);
  /* Keyed entities are known by their key (a disabled Key still names
   * the entity), the others by their handle. */
  const weft_key_t *key = g->key ? weft_iter_column_of(it, g->key) : NULL;
  int rc = 0;
  for (uint32_t r = 0; !rc && r < it->count; r += GRID_PIECE) {
    uint32_t k = it->count - r < GRID_PIECE ? it->count - r : GRID_PIECE;
    rc = note_piece(g,
                    (grid_piece_t){it->entities + r, px + r, py + r,
                                   vx ? vx + r : NULL, vy ? vy + r : NULL,
                                   col ? col + r : NULL, key ? key + r : NULL,
                                   k, 0},
                    n);
  }
  return rc;
}

/* The first row of band b of nbands over ny rows (b == nbands: ny). */
static uint32_t band_row(uint32_t ny, uint32_t b, uint32_t nbands) {
  return (uint32_t)((uint64_t)ny * b / nbands);
}

/*
 * Splits the grid in bands of whole rows, nearly equal, at most one per
 * row: band b is rows [ny * b / nbands, ny * (b + 1) / nbands). Rows
 * rather than equal runs of cells because the per-item passes then find
 * an item's band with one table load from its row, cheaper than guessing
 * it from the cell index and correcting the guess, and the precount and
 * the gather pay that for every item.
 */
static void set_bands(weft_grid_t *g, uint32_t nbands) {
  _Static_assert(GRID_BANDS <= 256, "row_band holds a band in a byte");
  const uint32_t ny = (uint32_t)g->ny;
  if (nbands > ny)
    nbands = ny;
  g->nbands = nbands;
  for (uint32_t b = 0; b <= nbands; b++)
    g->band_lo[b] = band_row(ny, b, nbands) * (uint32_t)g->nx;
  if (g->nbands_filled == nbands)
    return;
  for (uint32_t b = 0; b < nbands; b++) {
    uint32_t y0 = band_row(ny, b, nbands);
    memset(g->row_band + y0, (int)b, band_row(ny, b + 1, nbands) - y0);
  }
  g->nbands_filled = nbands;
}

/* The cells of band b: [lo, hi). */
static void band_cells(const weft_grid_t *g, uint32_t b, uint32_t *lo,
                       uint32_t *hi) {
  *lo = g->band_lo[b];
  *hi = g->band_lo[b + 1];
}

/*
 * What the per-item passes need of the grid, copied into a local: the
 * item stores those loops make may alias the grid's fields as far as the
 * compiler knows, so through the grid pointer every field was loaded
 * again for every item (and the top cell converted to float again).
 */
typedef struct grid_map_t {
  float minx, miny, inv, topx, topy;
  uint32_t nx, nbands;
  const uint8_t *row_band;
} grid_map_t;

static grid_map_t grid_map(const weft_grid_t *g) {
  return (grid_map_t){g->minx,
                      g->miny,
                      g->inv_cell,
                      (float)(g->nx - 1),
                      (float)(g->ny - 1),
                      (uint32_t)g->nx,
                      g->nbands,
                      g->row_band};
}

/* The row of a position. */
static inline uint32_t map_row(const grid_map_t *m, float y) {
  return (uint32_t)weft__grid_axis_top(y - m->miny, m->inv, m->topy);
}

/* The cell of a position in row cy, as an index into the cell table. */
static inline uint32_t map_cell(const grid_map_t *m, uint32_t cy, float x) {
  return cy * m->nx +
         (uint32_t)weft__grid_axis_top(x - m->minx, m->inv, m->topx);
}

/*
 * Counts the bands of items [0, n & ~3) of a piece four at a time and
 * returns how many it counted: with SSE2 the four rows are computed as a
 * vector, with the same operations in the same order as map_row() (max
 * with 0 takes a NaN to 0 as its test does), so each item gets the band
 * the gather will put it in.
 */
static inline uint32_t count_rows4(const grid_map_t *m, const float *py,
                                   uint32_t n, uint32_t *count) {
  uint32_t r = 0;
#if defined(__SSE2__)
  const __m128 miny = _mm_set1_ps(m->miny), inv = _mm_set1_ps(m->inv);
  const __m128 top = _mm_set1_ps(m->topy), zero = _mm_setzero_ps();
  for (; r + 4 <= n; r += 4) {
    __m128 f = _mm_mul_ps(_mm_sub_ps(_mm_loadu_ps(py + r), miny), inv);
    f = _mm_min_ps(_mm_max_ps(f, zero), top);
    uint32_t y[4];
    _mm_storeu_si128((__m128i *)y, _mm_cvttps_epi32(f));
    count[m->row_band[y[0]]]++;
    count[m->row_band[y[1]]]++;
    count[m->row_band[y[2]]]++;
    count[m->row_band[y[3]]]++;
  }
#else
  (void)m;
  (void)py;
  (void)n;
  (void)count;
#endif
  return r;
}

/* Counts, for pieces [begin, end), how many of their items fall in each
 * band (into g->at, nbands words per piece). */
static void band_precount(void *arg, uint32_t begin, uint32_t end,
                          uint32_t worker) {
  (void)worker;
  weft_grid_t *g = arg;
  const grid_map_t m = grid_map(g);
  for (uint32_t k = begin; k < end; k++) {
    const grid_piece_t *c = &g->pieces[k];
    const float *py = c->py;
    /* Counted on the stack: g->at packs several pieces to a cache line,
     * and pieces next to each other may be counted on different threads. */
    uint32_t count[GRID_BANDS] = {0};
    const uint32_t n = c->count;
    uint32_t r = count_rows4(&m, py, n, count);
    for (; r < n; r++)
      count[m.row_band[map_row(&m, py[r])]]++;
    memcpy(g->at + (size_t)k * m.nbands, count, m.nbands * sizeof *count);
  }
}

/*
 * Gathers one piece: item r goes to slot at[band of its cell]++ (to
 * at[0]++ when there is one band). Each field is stored straight into its
 * slot: an item built in a local and then stored whole was staged on the
 * stack by the compiler, and each of the three 16-byte loads that copied it
 * out spanned two smaller stores, which the CPU cannot forward, so every
 * item waited on three failed store forwards. The piece's pointers are
 * locals, and the tests for Velocity and Collider hold for the whole
 * piece, so they predict perfectly. Every byte of an item is written (it
 * has no padding), so the grid stays the same byte for byte.
 */
static inline __attribute__((always_inline)) void
gather_piece(const grid_piece_t *c, const grid_map_t *m, bool banded,
             uint32_t *at, weft_grid_item_t *restrict scratch,
             uint32_t *restrict cells) {
  static const weft_collider_t none;
  const weft_entity_t *ent = c->entities;
  const float *px = c->px, *py = c->py, *vx = c->vx, *vy = c->vy;
  const weft_collider_t *col = c->col;
  const weft_key_t *key = c->key;
  for (uint32_t r = 0, n = c->count; r < n; r++) {
    const float x = px[r], y = py[r];
    uint32_t cy = map_row(m, y);
    uint32_t cell = map_cell(m, cy, x);
    uint32_t i = at[banded ? m->row_band[cy] : 0]++;
    if (banded) { /* one stream has the hardware prefetcher */
      __builtin_prefetch(&scratch[i + GRID_GATHER_AHEAD], 1);
      __builtin_prefetch(&cells[i + 4 * GRID_GATHER_AHEAD], 1);
    }
    weft_grid_item_t *d = &scratch[i];
    d->e = ent[r];
    d->key = key ? key[r].id : ent[r];
    d->x = x;
    d->y = y;
    d->vx = vx ? vx[r] : 0.0f;
    d->vy = vy ? vy[r] : 0.0f;
    d->collider = col ? col[r] : none;
    cells[i] = cell;
  }
}

/*
 * Gathers pieces [begin, end) into scratch and cells: with one band at
 * the piece's own place, else each item at the next place its piece has
 * in the item's band (g->at, from the prefix over the counts), so that
 * each band's items lie together, in piece and row order.
 */
static void gather(void *arg, uint32_t begin, uint32_t end, uint32_t worker) {
  (void)worker;
  weft_grid_t *g = arg;
  const grid_map_t m = grid_map(g);
  weft_grid_item_t *scratch = g->scratch;
  uint32_t *cells = g->cells;
  for (uint32_t k = begin; k < end; k++) {
    const grid_piece_t *c = &g->pieces[k];
    /* The piece's cursors, copied: g->at packs several pieces to a cache
     * line, and pieces next to each other may be gathered on different
     * threads. */
    uint32_t at[GRID_BANDS];
    if (m.nbands > 1) {
      memcpy(at, g->at + (size_t)k * m.nbands, m.nbands * sizeof *at);
      gather_piece(c, &m, true, at, scratch, cells);
    } else {
      at[0] = c->first;
      gather_piece(c, &m, false, at, scratch, cells);
    }
  }
}

/* The grid's order within a cell: by key, then by handle, so that even
 * duplicate keys (a caller's mistake) give one order. */
static inline bool item_after(const weft_grid_item_t *a,
                              const weft_grid_item_t *b) {
  return a->key > b->key || (a->key == b->key && a->e > b->e);
}

static void sort_small(weft_grid_item_t *a, uint32_t n) {
  for (uint32_t i = 1; i < n; i++) {
    weft_grid_item_t v = a[i];
    uint32_t j = i;
    for (; j > 0 && item_after(&a[j - 1], &v); j--)
      a[j] = a[j - 1];
    a[j] = v;
  }
}

static void sift_down(weft_grid_item_t *a, uint32_t root, uint32_t n) {
  weft_grid_item_t v = a[root];
  for (;;) {
    uint32_t child = 2 * root + 1;
    if (child >= n)
      break;
    if (child + 1 < n && item_after(&a[child + 1], &a[child]))
      child++;
    if (!item_after(&a[child], &v))
      break;
    a[root] = a[child];
    root = child;
  }
  a[root] = v;
}

/* (key, handle) pairs are unique, so an unstable sort gives one order. */
static void sort_by_key(weft_grid_item_t *a, uint32_t n) {
  if (n <= GRID_SMALL_CELL) {
    sort_small(a, n);
    return;
  }
  for (uint32_t i = n / 2; i-- > 0;)
    sift_down(a, i, n);
  for (uint32_t end = n - 1; end > 0; end--) {
    weft_grid_item_t t = a[0];
    a[0] = a[end];
    a[end] = t;
    sift_down(a, 0, end);
  }
}

/* Counts the items of each cell of band b into the cells' entries of
 * starts (scatter_band() turns them into offsets). A band's items lie
 * together in scratch and cells (see gather()). */
static void count_band(weft_grid_t *g, uint32_t b) {
  uint32_t *count = g->starts;
  uint32_t lo, hi;
  band_cells(g, b, &lo, &hi);
  memset(count + lo, 0, (size_t)(hi - lo) * sizeof *count);
  const uint32_t *cells = g->cells + g->band_base[b];
  for (uint32_t i = 0, n = g->band_total[b]; i < n; i++) {
    if (i + GRID_COUNT_AHEAD < n)
      __builtin_prefetch(count + cells[i + GRID_COUNT_AHEAD], 1);
    count[cells[i]]++;
  }
}

/*
 * Places the n items from index first of scratch and cells, from the
 * last, each at its cell's last free slot. Items come in chunk order, so
 * the entries they take slots from and the slots are hit at random, and
 * both are prefetched. Two loops: the first takes every item's slot (the
 * item's entry of cells becomes its slot, which nothing reads after), the
 * second copies the items. Apart, each loop's misses are independent of
 * one another and overlap; in one loop, each copy's address waited on the
 * entry's miss. An item (48 bytes) often spans two lines: both are
 * prefetched.
 */
static void place(weft_grid_t *g, uint32_t first, uint32_t n) {
  uint32_t *restrict starts = g->starts;
  weft_grid_item_t *restrict items = g->items;
  uint32_t *restrict slot = g->cells + first;
  const weft_grid_item_t *restrict from = g->scratch + first;
  for (uint32_t k = n; k-- > 0;) {
    if (k >= GRID_SLOT_AHEAD)
      __builtin_prefetch(starts + slot[k - GRID_SLOT_AHEAD], 1);
    slot[k] = --starts[slot[k]];
  }
  for (uint32_t k = n; k-- > 0;) {
    if (k >= GRID_COPY_AHEAD) {
      const char *to = (const char *)(items + slot[k - GRID_COPY_AHEAD]);
      __builtin_prefetch(to, 1);
      __builtin_prefetch(to + sizeof *items - 1, 1);
    }
    items[slot[k]] = from[k];
  }
}

/* cell_ends() for cells [c, hi) one at a time, from `at` on; returns the
 * words noted in multi, after the `noted` there already. */
static uint32_t cell_ends_scalar(uint32_t *restrict starts, uint32_t c,
                                 uint32_t hi, uint32_t at,
                                 uint32_t *restrict multi, uint32_t noted) {
  for (; c < hi; c++) {
    uint32_t k = starts[c];
    if (k > 1) {
      multi[noted++] = at;
      multi[noted++] = k;
    }
    at += k;
    starts[c] = at;
  }
  return noted;
}

/*
 * Turns the item counts of cells [lo, hi) into the ends of their slots,
 * counted on from `at`, and notes the first slot and count of every cell
 * that holds more than one item in multi. Returns the words noted.
 *
 * A sparse grid has several cells per item, so this pass over the cells,
 * not the items, was most of the instructions of a rebuild: with SSE2 it
 * takes four cells at a time (a prefix sum in two shifted adds), and
 * hands the rare groups with a cell to note to the scalar loop. The
 * signed compare that finds those needs counts below 2^31, so a band of
 * more items (never seen in practice) takes the scalar loop.
 */
static uint32_t cell_ends(uint32_t *restrict starts, uint32_t lo, uint32_t hi,
                          uint32_t at, uint32_t items,
                          uint32_t *restrict multi) {
  uint32_t c = lo, noted = 0;
#if defined(__SSE2__)
  if (items < (1u << 31)) {
    const __m128i one = _mm_set1_epi32(1);
    __m128i carry = _mm_set1_epi32((int32_t)at);
    for (; hi - c >= 4; c += 4) {
      __m128i v = _mm_loadu_si128((const __m128i *)(starts + c));
      if (__builtin_expect(_mm_movemask_epi8(_mm_cmpgt_epi32(v, one)), 0)) {
        /* A group with a cell to note takes the scalar loop. */
        noted = cell_ends_scalar(
            starts, c, c + 4, (uint32_t)_mm_cvtsi128_si32(carry), multi, noted);
        carry = _mm_set1_epi32((int32_t)starts[c + 3]);
        continue;
      }
      v = _mm_add_epi32(v, _mm_slli_si128(v, 4));
      v = _mm_add_epi32(v, _mm_slli_si128(v, 8));
      v = _mm_add_epi32(v, carry);
      _mm_storeu_si128((__m128i *)(starts + c), v);
      carry = _mm_shuffle_epi32(v, 0xff);
    }
    at = (uint32_t)_mm_cvtsi128_si32(carry);
  }
#else
  (void)items;
#endif
  return cell_ends_scalar(starts, c, hi, at, multi, noted);
}

/*
 * Scattering, per band. One pass over its cells turns each count into the
 * end of the cell's slots (counted from the band's base), noting the cells
 * that will hold more than one item; the items are then placed from the
 * last to the first, each at its cell's last free slot, so a cell's items
 * keep item order (hence chunk order) and every entry of starts ends at
 * its cell's first slot: one array of cells serves as counts, cursors and
 * offsets, a third of the memory traffic over the cells of a separate
 * cursor array. The noted cells are then sorted by key. The cells far
 * outnumber the items in a sparse world, so the sort visits only the noted
 * ones rather than every cell again. The items of a band are a stretch of
 * their own, so the bands never write the same memory.
 */
static void scatter_band(weft_grid_t *g, uint32_t b) {
  uint32_t lo, hi, at = g->band_base[b];
  uint32_t *multi = g->multi + at;
  band_cells(g, b, &lo, &hi);
  uint32_t nmulti = cell_ends(g->starts, lo, hi, at, g->band_total[b], multi);
  place(g, g->band_base[b], g->band_total[b]);
  for (uint32_t j = 0; j < nmulti; j += 2)
    sort_by_key(g->items + multi[j], multi[j + 1]);
}

/* Sorts bands [begin, end), each counted and scattered in one job: its
 * slice of the cell table and its stretch of items stay on one core
 * between the two, and the rebuild waits for the pool once, not twice. */
static void band_sort(void *arg, uint32_t begin, uint32_t end,
                      uint32_t worker) {
  weft_grid_t *g = arg;
  for (uint32_t b = begin; b < end; b++) {
    count_band(g, b);
    scatter_band(g, b);
    g->band_worker[b] = worker;
  }
}

/* Places each band's stretch of items, and within it each piece's part:
 * a prefix over the counts of band_precount(), band by band, piece by
 * piece, so the places depend on the data alone. Both passes walk g->at
 * in memory order, where walking it band by band (a stride of nbands
 * words) misses on every word. */
static void band_places(weft_grid_t *g) {
  const uint32_t nb = g->nbands;
  uint32_t cur[GRID_BANDS] = {0};
  for (uint32_t k = 0; k < g->npieces; k++)
    for (uint32_t b = 0; b < nb; b++)
      cur[b] += g->at[(size_t)k * nb + b];
  uint32_t at = 0;
  for (uint32_t b = 0; b < nb; b++) {
    g->band_base[b] = at;
    g->band_total[b] = cur[b];
    at += cur[b];
    cur[b] = g->band_base[b];
  }
  for (uint32_t k = 0; k < g->npieces; k++) {
    uint32_t *slot = &g->at[(size_t)k * nb];
    for (uint32_t b = 0; b < nb; b++) {
      uint32_t n = slot[b];
      slot[b] = cur[b];
      cur[b] += n;
    }
  }
}

/*
 * How many bands a rebuild of @p n items uses (set_bands() takes at most
 * one per row). On a pool, several per worker, so that a worker that
 * finishes its band early takes another (bands differ in items). And on
 * any number of threads, enough that a band's slice of the cell table and
 * its items, gathered and sorted, fit in GRID_BAND_BYTES: the count and
 * the placing hit those at random, and a band that stays in the last
 * level cache, next to the one another core sorts at the same time, is
 * sorted from cache, not memory (see docs/performance-notes.md,
 * systems/grid_build.c). A small grid
 * keeps one band on one thread, which needs no per-band counts.
 */
static uint32_t bands_for(const weft_grid_t *g, uint32_t workers, uint32_t n) {
  uint32_t per =
      workers < GRID_FEW_WORKERS ? GRID_BANDS_PER_FEW : GRID_BANDS_PER_WORKER;
  uint64_t want = workers > 1 ? workers * per : 1;
  uint64_t bytes = 2u * (uint64_t)n * sizeof(weft_grid_item_t) +
                   (uint64_t)g->ncells * sizeof *g->starts;
  uint64_t local = (bytes + GRID_BAND_BYTES - 1) / GRID_BAND_BYTES;
  if (local > want)
    want = local;
  return want > GRID_BANDS ? GRID_BANDS : (uint32_t)want;
}

/*
 * The rebuild: note every piece of the queries' chunk runs and its place
 * (one pass over the runs); with more than one band, count each piece's
 * items per band of cells (pieces in parallel) and place each band's
 * stretch and each piece's part of it (a prefix); gather the pieces in
 * parallel, each item into its band's stretch; then a counting sort by
 * cell per band, each band a job that reads its own stretch only, so no
 * pass costs every thread all the items. Every step writes places fixed by the
 * data, so the grid is the same on any number of threads.
 */
static int build(weft_sysctx_t *ctx, const weft_iter_t *chunk) {
  (void)chunk;
  weft_grid_t *g = ctx->user;
  uint32_t need = weft_query_count(g->still) + weft_query_count(g->moving);
  int rc = reserve(g, need);
  if (rc)
    return rc;
  uint32_t n = 0;
  g->npieces = 0;
  weft_iter_t it;
  weft_query_iter(g->still, &it); /* a NULL query yields nothing */
  while (!rc && weft_iter_next(&it))
    rc = note_run(g, &it, false, &n);
  weft_iter_close(&it);
  weft_query_iter(g->moving, &it);
  while (!rc && weft_iter_next(&it))
    rc = note_run(g, &it, true, &n);
  weft_iter_close(&it);
  if (rc)
    return rc;
  g->count = n;
  weft_pool_t *pool = weft_world_pool(ctx->world);
  set_bands(g, bands_for(g, pool ? weft_pool_workers(pool) : 1, n));
  if (g->nbands > 1) {
    weft__builtin_split(ctx, g->npieces, GRID_GATHER_GRAIN, band_precount, g);
    band_places(g);
  } else { /* one band: every item, in piece order */
    g->band_base[0] = 0;
    g->band_total[0] = n;
  }
  weft__builtin_split(ctx, g->npieces, GRID_GATHER_GRAIN, gather, g);
  weft__builtin_split(ctx, g->nbands, 1, band_sort, g);
  g->starts[g->ncells] = n;
  g->builds++;
  weft_sysctx_count(ctx, n); /* the entities the system processed */
  return 0;
}

int weft_sys_grid(weft_world_t *world, const weft_std_t *std, weft_grid_t *g,
                  weft_component_t with, weft_phase_t phase,
                  weft_system_t *out) {
  if (!world || !std || !g)
    return weft_world_fail(world, WEFT_EINVAL, "weft_sys_grid: %s is NULL",
                           !std ? "std" : "the grid");
  if (g->world != world)
    return weft_world_fail(world, WEFT_EINVAL,
                           "weft_sys_grid: the grid belongs to another world");
  if (g->still || g->moving) /* one builder per grid */
    return weft_world_fail(world, WEFT_EEXIST,
                           "weft_sys_grid: grid %u has a builder already",
                           g->number);
  if (with == std->position)
    with = 0;

  char name[WEFT_NAME_MAX];
  if (g->number == 1)
    snprintf(name, sizeof name, "weft.grid.build");
  else
    snprintf(name, sizeof name, "weft.grid.build.%u", g->number);
  int rc = weft__builtin_unique(world, "weft_sys_grid", name);
  if (rc)
    return rc;

  /* Position without an enabled Velocity (a disabled one counts as
   * absent for an exclude term), unless `with` requires Velocity. */
  weft_query_t *still = NULL, *moving = NULL;
  weft_query_desc_t qd;
  if (with != std->velocity) {
    memset(&qd, 0, sizeof qd);
    qd.include[0] = std->position;
    qd.include[1] = with;
    qd.exclude[0] = std->velocity;
    qd.flags = WEFT_QUERY_CHUNK_RUNS;
    rc = weft_query_create(world, &qd, &still);
  }
  if (!rc) {
    memset(&qd, 0, sizeof qd);
    qd.include[0] = std->position;
    qd.include[1] = std->velocity;
    qd.include[2] = with == std->velocity ? 0 : with;
    qd.flags = WEFT_QUERY_CHUNK_RUNS;
    rc = weft_query_create(world, &qd, &moving);
  }

  weft_system_desc_t d = weft__builtin_desc(name, phase, build, g);
  /* The list ends at its first 0: a std made by hand may lack some ids. */
  const weft_component_t reads[] = {std->position, std->velocity, std->collider,
                                    std->dead,     std->key,      with};
  uint32_t nr = 0;
  for (uint32_t i = 0; i < sizeof reads / sizeof *reads; i++) {
    bool seen = reads[i] == 0;
    for (uint32_t j = 0; j < nr && !seen; j++)
      seen = d.read[j] == reads[i];
    if (!seen)
      d.read[nr++] = reads[i];
  }
  d.res_write[0] = g->res;
  weft_system_t id = 0;
  if (!rc)
    rc = weft__builtin_register(world, &d, &id);
  if (rc) {
    weft_query_destroy(still);
    weft_query_destroy(moving);
    return rc;
  }
  g->still = still;
  g->moving = moving;
  g->collider = std->collider;
  g->dead = std->dead;
  g->key = std->key;
  if (out)
    *out = id;
  return 0;
}
