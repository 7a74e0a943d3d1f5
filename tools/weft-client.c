/* SPDX-License-Identifier: MIT */
/*
 * weft-client: a native weft::net client. Connects to a server
 * (weft-sim --serve), sends HELLO and a VIEW, applies every packet to a
 * mirror and acknowledges it (a weft_net_client_t of one session, the
 * client code weft-bench's net/load rows run a thousand of), then asks
 * for a digest of its view and exits 0 when the mirror's digest equals
 * the server's, 1 when it differs or the connection fails, 2 for bad
 * arguments:
 *
 *   weft-client --port P [--host H] [--view X,Y,R] [--move DX]
 *               [--packets N] [--ack-loss P] [--ack-delay N]
 *               [--ack-reorder P] [--seed S] [--timeout S] [--retry S]
 *               [--abuse idle|garbage|big]
 *
 * The --ack-* options damage the acks as a bad network would (lost,
 * late, out of order): packets are cumulative, so the mirror must still
 * match. --abuse plays a hostile client for the server's tests: it
 * expects the server to close it and exits 0 when it does.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <weft/net.h>

#include "weft_tools_version.h"

#define ACK_RING 64u

typedef enum { ABUSE_NONE, ABUSE_IDLE, ABUSE_GARBAGE, ABUSE_BIG } abuse_t;

typedef struct client_args_t {
  const char *host;
  uint16_t port;
  float x, y, r, move;
  uint32_t packets, ack_delay;
  double ack_loss, ack_reorder;
  uint64_t seed;
  double timeout, retry;
  abuse_t abuse;
} client_args_t;

typedef struct client_t {
  const client_args_t *a;
  weft_net_client_t *set; /* one session: index 0 */
  uint64_t rng;
  uint64_t held[ACK_RING]; /* acks waiting (--ack-delay) */
  uint32_t held_head, held_count;
  uint32_t applied; /* packets applied */
} client_t;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void usage(FILE *f) {
  fputs("usage: weft-client --port P [--host H] [--view X,Y,R] [--move DX]\n"
        "                   [--packets N] [--ack-loss P] [--ack-delay N]\n"
        "                   [--ack-reorder P] [--seed S] [--timeout S]\n"
        "                   [--retry S] [--abuse idle|garbage|big]\n"
        "  --port P         the server's port (weft-sim --serve prints it)\n"
        "  --host H         its address (default 127.0.0.1)\n"
        "  --view X,Y,R     the view's centre and radius (default 0,0,50)\n"
        "  --move DX        move the view DX along x after every packet\n"
        "  --packets N      packets to apply before the digest check (60)\n"
        "  --ack-loss P     drop each ack with probability P (0..1)\n"
        "  --ack-delay N    hold each ack back N packets (0..32)\n"
        "  --ack-reorder P  swap two held acks with probability P\n"
        "  --seed S         seed of the loss and reordering draws\n"
        "  --timeout S      give up after S seconds (default 60)\n"
        "  --retry S        reconnect for S seconds while refused (0)\n"
        "  --abuse MODE     idle: send nothing; garbage: a malformed message;\n"
        "                   big: a message over the limit. Exits 0 once the\n"
        "                   server closes the connection.\n"
        "Exit status: 0 the mirror matches the server (or --abuse was\n"
        "closed), 1 it differs or the connection failed, 2 bad arguments.\n",
        f);
}

static int bad(const char *opt, const char *val, const char *why) {
  fprintf(stderr, "weft-client: %s %s: %s\n", opt, val ? val : "", why);
  usage(stderr);
  return 2;
}

static bool parse_num(const char *s, double lo, double hi, double *out) {
  char *end;
  errno = 0;
  double v = s && *s ? strtod(s, &end) : NAN;
  if (!s || !*s || errno || *end || !(v >= lo && v <= hi))
    return false;
  *out = v;
  return true;
}

static bool parse_view(const char *s, client_args_t *a) {
  float x, y, r;
  char tail;
  if (sscanf(s, "%f,%f,%f%c", &x, &y, &r, &tail) != 3 || !isfinite(x) ||
      !isfinite(y) || !(r > 0 && isfinite(r)))
    return false;
  a->x = x;
  a->y = y;
  a->r = r;
  return true;
}

enum {
  OPT_HOST = 256,
  OPT_PORT,
  OPT_VIEW,
  OPT_MOVE,
  OPT_PACKETS,
  OPT_LOSS,
  OPT_DELAY,
  OPT_REORDER,
  OPT_SEED,
  OPT_TIMEOUT,
  OPT_RETRY,
  OPT_ABUSE
};
static const struct option client_options[] = {
    {"host", required_argument, NULL, OPT_HOST},
    {"port", required_argument, NULL, OPT_PORT},
    {"view", required_argument, NULL, OPT_VIEW},
    {"move", required_argument, NULL, OPT_MOVE},
    {"packets", required_argument, NULL, OPT_PACKETS},
    {"ack-loss", required_argument, NULL, OPT_LOSS},
    {"ack-delay", required_argument, NULL, OPT_DELAY},
    {"ack-reorder", required_argument, NULL, OPT_REORDER},
    {"seed", required_argument, NULL, OPT_SEED},
    {"timeout", required_argument, NULL, OPT_TIMEOUT},
    {"retry", required_argument, NULL, OPT_RETRY},
    {"abuse", required_argument, NULL, OPT_ABUSE},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'V'},
    {NULL, 0, NULL, 0}};

static int parse_one(int c, const char *v, client_args_t *a) {
  double d;
  switch (c) {
  case OPT_HOST:
    a->host = v;
    return 0;
  case OPT_PORT:
    if (!parse_num(v, 1, 65535, &d) || d != floor(d))
      return bad("--port", v, "expected 1..65535");
    a->port = (uint16_t)d;
    return 0;
  case OPT_VIEW:
    return parse_view(v, a) ? 0 : bad("--view", v, "expected X,Y,R, R > 0");
  case OPT_MOVE:
    if (!parse_num(v, -1e6, 1e6, &d))
      return bad("--move", v, "expected a number");
    a->move = (float)d;
    return 0;
  case OPT_PACKETS:
    if (!parse_num(v, 1, 1e7, &d) || d != floor(d))
      return bad("--packets", v, "expected 1..10000000");
    a->packets = (uint32_t)d;
    return 0;
  case OPT_LOSS:
  case OPT_REORDER:
    if (!parse_num(v, 0, 1, &d))
      return bad(c == OPT_LOSS ? "--ack-loss" : "--ack-reorder", v,
                 "expected 0..1");
    *(c == OPT_LOSS ? &a->ack_loss : &a->ack_reorder) = d;
    return 0;
  case OPT_DELAY:
    if (!parse_num(v, 0, 32, &d) || d != floor(d))
      return bad("--ack-delay", v, "expected 0..32");
    a->ack_delay = (uint32_t)d;
    return 0;
  case OPT_SEED:
    if (!parse_num(v, 0, 1e18, &d) || d != floor(d))
      return bad("--seed", v, "expected an unsigned integer");
    a->seed = (uint64_t)d;
    return 0;
  case OPT_TIMEOUT:
  case OPT_RETRY:
    if (!parse_num(v, 0, 86400, &d))
      return bad(c == OPT_TIMEOUT ? "--timeout" : "--retry", v,
                 "expected 0..86400 seconds");
    *(c == OPT_TIMEOUT ? &a->timeout : &a->retry) = d;
    return 0;
  default: /* OPT_ABUSE */
    if (!strcmp(v, "idle"))
      a->abuse = ABUSE_IDLE;
    else if (!strcmp(v, "garbage"))
      a->abuse = ABUSE_GARBAGE;
    else if (!strcmp(v, "big"))
      a->abuse = ABUSE_BIG;
    else
      return bad("--abuse", v, "expected idle, garbage or big");
    return 0;
  }
}

static int parse_args(int argc, char **argv, client_args_t *a) {
  *a = (client_args_t){
      .host = "127.0.0.1", .r = 50, .packets = 60, .seed = 1, .timeout = 60};
  opterr = 0;
  int c, rc;
  while ((c = getopt_long(argc, argv, ":hV", client_options, NULL)) != -1) {
    if (c == 'h') {
      usage(stdout);
      exit(0);
    }
    if (c == 'V') {
      printf("weft-client (weft) %s\n", WEFT_TOOLS_VERSION);
      exit(0);
    }
    if (c == ':' || c == '?')
      return bad(argv[optind - 1], NULL,
                 c == ':' ? "needs a value" : "unknown option");
    if ((rc = parse_one(c, optarg, a)) != 0)
      return rc;
  }
  if (optind < argc)
    return bad(argv[optind], NULL, "unknown option");
  if (!a->port)
    return bad("--port", NULL, "is required");
  return 0;
}

/* xorshift64*: the loss and reordering draws, in [0, 1). */
static double draw(client_t *cl) {
  cl->rng ^= cl->rng >> 12;
  cl->rng ^= cl->rng << 25;
  cl->rng ^= cl->rng >> 27;
  return (double)((cl->rng * 2685821657736338717ull) >> 11) * 0x1p-53;
}

static int send_msg(client_t *cl, const weft_net_client_msg_t *m) {
  return weft_net_client_send(cl->set, 0, m);
}

/* An applied packet's ack through the simulated network: lost with
 * --ack-loss, held --ack-delay packets, swapped with --ack-reorder. */
static int ack(client_t *cl, uint64_t tick) {
  const client_args_t *a = cl->a;
  if (a->ack_loss > 0 && draw(cl) < a->ack_loss)
    return 0;
  cl->held[(cl->held_head + cl->held_count++) % ACK_RING] = tick;
  while (cl->held_count > a->ack_delay) {
    uint32_t h = cl->held_head;
    if (cl->held_count > 1 && a->ack_reorder > 0 && draw(cl) < a->ack_reorder) {
      uint32_t n = (h + 1) % ACK_RING;
      uint64_t t = cl->held[h];
      cl->held[h] = cl->held[n];
      cl->held[n] = t;
    }
    weft_net_client_msg_t m = {.type = WEFT_NET_ACK, .tick = cl->held[h]};
    cl->held_head = (h + 1) % ACK_RING;
    cl->held_count--;
    int rc = send_msg(cl, &m);
    if (rc)
      return rc;
  }
  return 0;
}

/* The view after @p n packets (--move slides it along x). */
static int send_view(client_t *cl, uint32_t n) {
  weft_net_client_msg_t m = {.type = WEFT_NET_VIEW,
                             .x = cl->a->x + cl->a->move * (float)n,
                             .y = cl->a->y,
                             .radius = cl->a->r};
  return send_msg(cl, &m);
}

/* After each packet the set applied: the ack (damaged as asked), the
 * view's move, and after --packets the view check (the set asks for the
 * digest and compares, asking again while items still wait). */
static int on_packet(void *user, uint32_t session, uint64_t tick) {
  client_t *cl = user;
  (void)session;
  if (cl->a->abuse)
    return 0; /* a hostile client acknowledges nothing */
  cl->applied++;
  int rc = ack(cl, tick);
  if (!rc && cl->a->move != 0)
    rc = send_view(cl, cl->applied);
  if (!rc && cl->applied == cl->a->packets)
    rc = weft_net_client_check(cl->set, 0);
  return rc;
}

/* The first messages: HELLO, then the view (or the abuse). */
static int greet(client_t *cl) {
  const client_args_t *a = cl->a;
  if (a->abuse == ABUSE_IDLE)
    return 0;
  weft_net_client_msg_t m = {.type = WEFT_NET_HELLO,
                             .version = WEFT_NET_PROTOCOL_VERSION};
  int rc = send_msg(cl, &m);
  if (rc || a->abuse == ABUSE_NONE)
    return rc ? rc : send_view(cl, 0);
  uint8_t junk[256];
  for (size_t i = 0; i < sizeof junk; i++)
    junk[i] = (uint8_t)(draw(cl) * 256);
  junk[0] = 0x7f; /* no such message type */
  return weft_net_client_send_raw(cl->set, 0, junk,
                                  a->abuse == ABUSE_BIG ? sizeof junk : 9);
}

/* The check's verdict: 0 the mirror matches, 1 it differs, -1 not yet. */
static int verdict(const weft_net_client_state_t *st) {
  if (st->check == WEFT_NET_CHECK_MATCH) {
    printf("weft-client: mirror matches the server: digest %016" PRIx64
           " over %u entities (%u packets, %" PRIu64 " bytes)\n",
           st->digest, st->count, st->packets, st->bytes);
    return 0;
  }
  if (st->check == WEFT_NET_CHECK_DIFFER) {
    printf("weft-client: mirror differs: digest %016" PRIx64
           " over %u entities, server %016" PRIx64 " over %u (%u digest "
           "requests)\n",
           st->digest, st->count, st->server_digest, st->server_count,
           st->asked);
    return 1;
  }
  return -1;
}

/* One connection until the check ends, it fails or the deadline passes.
 * Returns the exit status, or -1 to reconnect (refused before the
 * welcome). */
static int session(client_t *cl, double deadline) {
  const client_args_t *a = cl->a;
  weft_net_client_config_t cc = {.host = a->host,
                                 .port = a->port,
                                 .sessions = 1,
                                 .max_entities = 1u << 20,
                                 .manual_ack = true,
                                 .on_packet = on_packet,
                                 .user = cl};
  int rc = weft_net_client_new(&cc, &cl->set);
  if (rc) {
    fprintf(stderr, "weft-client: cannot connect to %s:%u: %s\n", a->host,
            a->port, weft_strerror(rc));
    return -1;
  }
  if ((rc = greet(cl)) != 0) {
    fprintf(stderr, "weft-client: %s\n", weft_strerror(rc));
    return 1;
  }
  weft_net_client_state_t st;
  while (now_s() < deadline) {
    weft_net_client_run(cl->set, 50);
    weft_net_client_state(cl->set, 0, &st);
    int v = a->abuse ? -1 : verdict(&st);
    if (v >= 0)
      return v;
    if (st.status < 0) {
      const char *why = weft_net_client_error(cl->set, 0);
      if (a->abuse) {
        printf("weft-client: closed as expected (%s)\n", why);
        return 0;
      }
      fprintf(stderr,
              "weft-client: connection lost: %s (%u packets applied, %u "
              "digest requests)\n",
              why, st.packets, st.asked);
      return st.welcomed ? 1 : -1;
    }
  }
  fprintf(stderr, "weft-client: timed out (%u packets applied)\n", cl->applied);
  return 1;
}

int main(int argc, char **argv) {
  client_args_t a;
  int rc = parse_args(argc, argv, &a);
  if (rc)
    return rc;
  double t0 = now_s();
  double deadline = t0 + a.timeout;
  for (;;) {
    client_t cl = {.a = &a, .rng = a.seed * 0x9e3779b97f4a7c15ull | 1};
    rc = session(&cl, deadline);
    weft_net_client_free(cl.set);
    if (rc >= 0)
      return rc;
    if (now_s() - t0 >= a.retry || now_s() >= deadline)
      return 1;
    struct timespec ts = {0, 200 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
}
