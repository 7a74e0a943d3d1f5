/* SPDX-License-Identifier: MIT */
/*
 * A small, strict JSON parser for tests (RFC 8259): it rejects what a
 * strict reader would (trailing commas, bare control characters in
 * strings, lone surrogates, leading zeros, trailing text), so that a test
 * that parses weft's output proves the output is valid JSON. Strings are
 * decoded to UTF-8; numbers keep their text as well as their value.
 * Header-only; every function is static. Not fast: tests only.
 */
#ifndef WEFT_TEST_JSON_PARSE_H
#define WEFT_TEST_JSON_PARSE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef enum jp_type_t {
  JP_NULL,
  JP_BOOL,
  JP_NUMBER,
  JP_STRING,
  JP_ARRAY,
  JP_OBJECT
} jp_type_t;

typedef struct jp_value_t jp_value_t;
struct jp_value_t {
  jp_type_t type;
  bool boolean;
  double number;
  char *text;  /* a string's UTF-8 bytes, a number's text */
  size_t len;  /* of text */
  char **keys; /* an object's, in order */
  jp_value_t **items;
  size_t n;
};

typedef struct jp_parser_t {
  const char *p, *end;
  int depth;
} jp_parser_t;

static inline void jp_free(jp_value_t *v) {
  if (!v)
    return;
  for (size_t i = 0; i < v->n; i++) {
    if (v->keys)
      free(v->keys[i]);
    jp_free(v->items[i]);
  }
  free(v->keys);
  free(v->items);
  free(v->text);
  free(v);
}

static inline void jp_ws(jp_parser_t *ps) {
  while (ps->p < ps->end &&
         (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
    ps->p++;
}

static inline bool jp_lit(jp_parser_t *ps, const char *word) {
  size_t n = strlen(word);
  if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n) != 0)
    return false;
  ps->p += n;
  return true;
}

static inline bool jp_push(char **buf, size_t *len, size_t *cap, const char *s,
                           size_t n) {
  if (*len + n + 1 > *cap) {
    size_t c = (*cap ? *cap * 2 : 16) + n;
    char *b = (char *)realloc(*buf, c);
    if (!b)
      return false;
    *buf = b;
    *cap = c;
  }
  memcpy(*buf + *len, s, n);
  *len += n;
  (*buf)[*len] = 0;
  return true;
}

static inline int jp_hex4(const char *p) {
  int v = 0;
  for (int i = 0; i < 4; i++) {
    char c = p[i];
    int d = c >= '0' && c <= '9'   ? c - '0'
            : c >= 'a' && c <= 'f' ? c - 'a' + 10
            : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                   : -1;
    if (d < 0)
      return -1;
    v = v * 16 + d;
  }
  return v;
}

static inline size_t jp_utf8(uint32_t cp, char *out) {
  if (cp < 0x80) {
    out[0] = (char)cp;
    return 1;
  }
  if (cp < 0x800) {
    out[0] = (char)(0xc0 | cp >> 6);
    out[1] = (char)(0x80 | (cp & 0x3f));
    return 2;
  }
  if (cp < 0x10000) {
    out[0] = (char)(0xe0 | cp >> 12);
    out[1] = (char)(0x80 | (cp >> 6 & 0x3f));
    out[2] = (char)(0x80 | (cp & 0x3f));
    return 3;
  }
  out[0] = (char)(0xf0 | cp >> 18);
  out[1] = (char)(0x80 | (cp >> 12 & 0x3f));
  out[2] = (char)(0x80 | (cp >> 6 & 0x3f));
  out[3] = (char)(0x80 | (cp & 0x3f));
  return 4;
}

/* Parses a string at ps->p (on its opening quote) into *out. */
static inline bool jp_string(jp_parser_t *ps, char **out, size_t *out_len) {
  char *buf = NULL;
  size_t len = 0, cap = 0;
  if (!jp_push(&buf, &len, &cap, "", 0))
    return false;
  ps->p++;
  while (ps->p < ps->end && *ps->p != '"') {
    unsigned char c = (unsigned char)*ps->p;
    if (c < 0x20)
      goto bad; /* control characters must be escaped */
    if (c != '\\') {
      if (!jp_push(&buf, &len, &cap, ps->p, 1))
        goto bad;
      ps->p++;
      continue;
    }
    if (ps->end - ps->p < 2)
      goto bad;
    char e = ps->p[1], one;
    ps->p += 2;
    switch (e) {
    case '"':
    case '\\':
    case '/':
      one = e;
      break;
    case 'b':
      one = '\b';
      break;
    case 'f':
      one = '\f';
      break;
    case 'n':
      one = '\n';
      break;
    case 'r':
      one = '\r';
      break;
    case 't':
      one = '\t';
      break;
    case 'u': {
      if (ps->end - ps->p < 4)
        goto bad;
      int hi = jp_hex4(ps->p);
      ps->p += 4;
      if (hi < 0 || (hi >= 0xdc00 && hi <= 0xdfff))
        goto bad;
      uint32_t cp = (uint32_t)hi;
      if (hi >= 0xd800 && hi <= 0xdbff) {
        if (ps->end - ps->p < 6 || ps->p[0] != '\\' || ps->p[1] != 'u')
          goto bad;
        int lo = jp_hex4(ps->p + 2);
        if (lo < 0xdc00 || lo > 0xdfff)
          goto bad;
        ps->p += 6;
        cp =
            0x10000 + (((uint32_t)hi - 0xd800) << 10) + ((uint32_t)lo - 0xdc00);
      }
      char u[4];
      size_t n = jp_utf8(cp, u);
      if (!jp_push(&buf, &len, &cap, u, n))
        goto bad;
      continue;
    }
    default:
      goto bad;
    }
    if (!jp_push(&buf, &len, &cap, &one, 1))
      goto bad;
  }
  if (ps->p >= ps->end)
    goto bad;
  ps->p++;
  *out = buf;
  *out_len = len;
  return true;
bad:
  free(buf);
  return false;
}

static inline bool jp_digits(jp_parser_t *ps) {
  const char *s = ps->p;
  while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9')
    ps->p++;
  return ps->p > s;
}

static inline bool jp_number(jp_parser_t *ps, jp_value_t *v) {
  const char *s = ps->p;
  if (ps->p < ps->end && *ps->p == '-')
    ps->p++;
  if (ps->p < ps->end && *ps->p == '0')
    ps->p++; /* no leading zeros */
  else if (!jp_digits(ps))
    return false;
  if (ps->p < ps->end && *ps->p == '.') {
    ps->p++;
    if (!jp_digits(ps))
      return false;
  }
  if (ps->p < ps->end && (*ps->p == 'e' || *ps->p == 'E')) {
    ps->p++;
    if (ps->p < ps->end && (*ps->p == '+' || *ps->p == '-'))
      ps->p++;
    if (!jp_digits(ps))
      return false;
  }
  v->len = (size_t)(ps->p - s);
  v->text = (char *)malloc(v->len + 1);
  if (!v->text)
    return false;
  memcpy(v->text, s, v->len);
  v->text[v->len] = 0;
  v->number = strtod(v->text, NULL);
  v->type = JP_NUMBER;
  return true;
}

static inline jp_value_t *jp_value(jp_parser_t *ps);

static inline bool jp_add(jp_value_t *v, char *key, jp_value_t *item) {
  jp_value_t **items =
      (jp_value_t **)realloc(v->items, (v->n + 1) * sizeof *items);
  if (!items)
    return false;
  v->items = items;
  if (v->type == JP_OBJECT) {
    char **keys = (char **)realloc(v->keys, (v->n + 1) * sizeof *keys);
    if (!keys)
      return false;
    v->keys = keys;
    keys[v->n] = key;
  }
  items[v->n++] = item;
  return true;
}

/* An array or object after its opening bracket. */
static inline bool jp_container(jp_parser_t *ps, jp_value_t *v) {
  char close = v->type == JP_OBJECT ? '}' : ']';
  jp_ws(ps);
  if (ps->p < ps->end && *ps->p == close) {
    ps->p++;
    return true;
  }
  for (;;) {
    char *key = NULL;
    size_t klen;
    jp_ws(ps);
    if (v->type == JP_OBJECT) {
      if (ps->p >= ps->end || *ps->p != '"' || !jp_string(ps, &key, &klen))
        return false;
      jp_ws(ps);
      if (ps->p >= ps->end || *ps->p != ':') {
        free(key);
        return false;
      }
      ps->p++;
    }
    jp_value_t *item = jp_value(ps);
    if (!item || !jp_add(v, key, item)) {
      free(key);
      jp_free(item);
      return false;
    }
    jp_ws(ps);
    if (ps->p < ps->end && *ps->p == ',') {
      ps->p++;
      continue;
    }
    if (ps->p < ps->end && *ps->p == close) {
      ps->p++;
      return true;
    }
    return false;
  }
}

static inline jp_value_t *jp_value(jp_parser_t *ps) {
  jp_value_t *v = (jp_value_t *)calloc(1, sizeof *v);
  if (!v)
    return NULL;
  jp_ws(ps);
  bool ok = false;
  if (ps->p >= ps->end || ps->depth > 64) {
    ok = false;
  } else if (*ps->p == '{' || *ps->p == '[') {
    v->type = *ps->p == '{' ? JP_OBJECT : JP_ARRAY;
    ps->p++;
    ps->depth++;
    ok = jp_container(ps, v);
    ps->depth--;
  } else if (*ps->p == '"') {
    v->type = JP_STRING;
    ok = jp_string(ps, &v->text, &v->len);
  } else if (jp_lit(ps, "null")) {
    ok = true;
  } else if (jp_lit(ps, "true") || jp_lit(ps, "false")) {
    v->type = JP_BOOL;
    v->boolean = ps->p[-1] == 'e' && ps->p[-2] == 'u';
    ok = true;
  } else {
    ok = jp_number(ps, v);
  }
  if (!ok) {
    jp_free(v);
    return NULL;
  }
  return v;
}

/* Parses a whole document of @p len bytes; NULL when it is not valid JSON.
 * Free with jp_free(). */
static inline jp_value_t *jp_parse(const char *text, size_t len) {
  jp_parser_t ps = {text, text + len, 0};
  jp_value_t *v = jp_value(&ps);
  jp_ws(&ps);
  if (v && ps.p != ps.end) {
    jp_free(v);
    return NULL;
  }
  return v;
}

/* An object's member @p key, or NULL (also when @p v is not an object). */
static inline jp_value_t *jp_get(const jp_value_t *v, const char *key) {
  if (!v || v->type != JP_OBJECT)
    return NULL;
  for (size_t i = 0; i < v->n; i++)
    if (strcmp(v->keys[i], key) == 0)
      return v->items[i];
  return NULL;
}

/* Reads a whole file (NUL-terminated); NULL when it cannot. */
static inline char *jp_read_file(const char *path, size_t *len) {
  FILE *fp = fopen(path, "rb");
  if (!fp)
    return NULL;
  char *buf = NULL;
  size_t n = 0, cap = 0, got;
  char chunk[4096];
  while ((got = fread(chunk, 1, sizeof chunk, fp)) > 0)
    if (!jp_push(&buf, &n, &cap, chunk, got))
      break;
  fclose(fp);
  *len = n;
  return buf;
}

#endif /* WEFT_TEST_JSON_PARSE_H */
