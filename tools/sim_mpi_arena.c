/* SPDX-License-Identifier: MIT */
/*
 * The distributed arena: its relations in a form that crosses ranks.
 *
 * The arena has two relations, and relation edges do not migrate (the
 * entity codec carries components, not edges):
 *
 * - a projectile is OwnedBy its turret, and a turret's death (sim.wreckage
 *   despawns dead turrets) takes its projectiles with it (the relation
 *   cascades). Turrets never move, so they stay on the rank that owns
 *   their position, but their projectiles fly to other ranks, without the
 *   edge. So each projectile also carries its turret's weft.Key
 *   ("sim.Owner"), stamped in the fixed step that spawned it, while it is
 *   still on its turret's rank and the edge is there.
 * - units are MemberOf squads, positionless entities that no region owns.
 *   The keyed scene gives each unit its squad's index ("sim.SquadOf")
 *   instead, and the squads live on rank 0 only.
 *
 * "sim.mpi.arena", an exclusive system at the end of the fixed step (after
 * health, lifetimes and spawners, after the in-tick exchange), applies
 * both rules on every rank at the same point:
 *
 * 1. new projectiles get sim.Owner from their OwnedBy edge;
 * 2. owned dead turrets are despawned (their edged projectiles cascade),
 *    and their keys gathered from every rank (MPI_Allgather of the counts,
 *    MPI_Allgatherv of the keys); every rank then despawns its remaining
 *    projectiles whose sim.Owner is among them (they lost the edge when
 *    they migrated). So a turret's
 *    projectiles vanish in the step it died, wherever they are: what one
 *    rank does with the cascade, the others do by key, before anything
 *    reads a projectile again (the next step's exchange);
 * 3. every rank counts its living owned units per squad index; one
 *    MPI_Reduce sums them on rank 0, which writes each squad's count and
 *    age and disbands a squad with none.
 *
 * One rank runs the same system and makes the same (trivial) collective
 * calls, so every rank count gives the same digest. weft-sim's arena
 * without --mpi keeps sim.wreckage and sim.squads, which apply the same
 * rules in the same step through the edges; their effects land at other
 * sync points of the step, and the entities carry neither key-based
 * component, so its digest is another one.
 *
 * The collective calls are reached on every rank even when a local part
 * failed (its error is returned after them), so that one rank's failure
 * is reported by weft_mpi_step()'s verdict instead of a hang. Buffers are
 * sized at creation (the turret and squad counts are fixed: every rank
 * built the whole scene) or grow geometrically, so steady steps allocate
 * nothing.
 *
 * A distributed checkpoint carries entities with a position and the
 * world's registered snapshot sections as rank 0 has them. The squads
 * have no position and the figures are this driver's, so the driver
 * registers the section "sim.mpi.arena": the squads (alive, members, age)
 * and the figures summed over the ranks, written by rank 0 into the
 * checkpoint's index. A restore gives the section to every rank; rank 0
 * writes it back into its squads (built afresh with the scene) and
 * disbands those that had disbanded. The OwnedBy edges are not saved
 * (edges name handles): after a restart every projectile of a dead turret
 * goes by its key, and the digest is the same.
 */
#include "sim_mpi_arena.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <weft.h>
#include <weft/relation.h>

struct sim_arena_mpi_t {
  sim_scene_t *scene;
  MPI_Comm comm;
  int rank, size;
  weft_query_t *fresh;   /* owned projectiles without sim.Owner */
  weft_query_t *wrecks;  /* owned dead turrets */
  weft_query_t *shots;   /* owned projectiles with sim.Owner */
  weft_query_t *members; /* owned living units of a squad */
  uint64_t *mine, *all;  /* dead turrets' keys: this rank's, every rank's */
  int *counts, *displs;  /* per rank, for MPI_Allgatherv */
  uint32_t *squad_n;     /* living members per squad index */
  weft_entity_t *listed; /* entities to stamp or despawn after a walk */
  uint32_t listed_cap;
  sim_arena_stats_t stats;
  sim_arena_stats_t totals; /* every rank's, on rank 0 (checkpoint) */
  bool restored;            /* a checkpoint's arena section was loaded */
  char why[160];            /* why a checkpoint's section was refused */
};

/* ---- test set-ups -------------------------------------------------------- */

/* The cuts every set-up straddles: x = side / 2 (2 and 4 ranks) and
 * x = side / 3 (3 ranks). */
static float cut_for(const sim_scene_t *s, uint32_t i) {
  return i % 2 ? s->side / 3.0f : s->side / 2.0f;
}

/* Turrets 3 units beside a cut, alternately left and right, with 100 hp:
 * a burst of their own overlaps them and takes about 30, so each dies
 * within a few bursts, while the projectiles of the earlier ones (25
 * units a second for 1.5 s) have crossed the cut. With @p move false,
 * turrets stay where they are and get hp enough never to die. */
static int turrets_die(sim_scene_t *s, bool move) {
  weft_query_t *q = NULL;
  weft_query_desc_t qd = {.include = {s->std.spawner, s->std.position}};
  int rc = weft_query_create(s->world, &qd, &q);
  weft_iter_t it;
  uint32_t k = 0;
  for (weft_query_iter(q, &it); !rc && weft_iter_next(&it);) {
    weft_health_t *h = weft_iter_column_of(&it, s->std.health);
    for (uint32_t i = 0; i < it.count; i++, k++) {
      weft_vec2_t p;
      rc = weft_read(s->world, it.entities[i], s->std.position, &p);
      p.x = move ? cut_for(s, k / 2) + (k % 2 ? 3.0f : -3.0f) : p.x;
      if (!rc)
        rc = weft_set(s->world, it.entities[i], s->std.position, &p);
      h[i].hp = h[i].max_hp = move ? 100.0f : 1e9f;
    }
  }
  if (rc)
    weft_iter_close(&it);
  weft_query_destroy(q);
  return rc;
}

/* The first four squads' units in overlapping pairs across a cut (0.3
 * apart, radius 0.5), standing still, with 3 hp and 5 damage: each pair
 * kills itself in its first contacts, the squads' members split between
 * the two sides. */
static int squads_die(sim_scene_t *s) {
  const uint32_t squads = s->squad_count < 4 ? s->squad_count : 4;
  weft_query_t *q = NULL;
  weft_query_desc_t qd = {.include = {s->squad_of, s->std.position}};
  int rc = weft_query_create(s->world, &qd, &q);
  weft_iter_t it;
  uint32_t pair[4] = {0, 0, 0, 0};
  for (weft_query_iter(q, &it); !rc && weft_iter_next(&it);) {
    const uint32_t *of = weft_iter_column_of(&it, s->squad_of);
    for (uint32_t i = 0; i < it.count && !rc; i++) {
      uint32_t sq = of[i];
      if (sq >= squads)
        continue;
      weft_entity_t e = it.entities[i];
      uint32_t n = pair[sq]++;
      weft_vec2_t p = {cut_for(s, sq) + (n % 2 ? 0.15f : -0.15f),
                       s->side * (0.05f + 0.9f * (float)(sq * 32 + n / 2) /
                                              (float)(squads * 32))};
      weft_vec2_t still = {0, 0};
      weft_health_t hp = {3.0f, 3.0f};
      weft_damage_t dmg = {5.0f};
      rc = weft_set(s->world, e, s->std.position, &p);
      if (!rc)
        rc = weft_set(s->world, e, s->std.velocity, &still);
      if (!rc)
        rc = weft_set(s->world, e, s->std.health, &hp);
      if (!rc)
        rc = weft_set(s->world, e, s->std.damage, &dmg);
    }
  }
  if (rc)
    weft_iter_close(&it);
  weft_query_destroy(q);
  return rc;
}

int sim_arena_case_apply(sim_scene_t *s, sim_arena_case_t kase) {
  if (!s || s->kind != SIM_ARENA || !s->squad_of)
    return WEFT_EINVAL;
  switch (kase) {
  case SIM_ARENA_PLAIN:
    return 0;
  case SIM_ARENA_TURRETS_DIE:
    return turrets_die(s, true);
  case SIM_ARENA_FIRING:
    return turrets_die(s, false);
  case SIM_ARENA_SQUADS_DIE:
    return squads_die(s);
  }
  return WEFT_EINVAL;
}

/* ---- the structure rule -------------------------------------------------- */

/* Makes room for n entities in a->listed (geometric: steady steps reuse). */
static int listed_reserve(sim_arena_mpi_t *a, uint32_t n) {
  if (n <= a->listed_cap)
    return 0;
  uint32_t cap = a->listed_cap ? a->listed_cap : 256;
  while (cap < n)
    cap *= 2;
  weft_entity_t *p = realloc(a->listed, cap * sizeof *p);
  if (!p)
    return WEFT_ENOMEM;
  a->listed = p;
  a->listed_cap = cap;
  return 0;
}

/* Lists the entities of @p q into a->listed; returns their count or -1. */
static int64_t list_all(sim_arena_mpi_t *a, weft_query_t *q) {
  if (listed_reserve(a, weft_query_count(q)))
    return -1;
  uint32_t n = 0;
  weft_iter_t it;
  for (weft_query_iter(q, &it); weft_iter_next(&it);) {
    memcpy(a->listed + n, it.entities, it.count * sizeof *it.entities);
    n += it.count;
  }
  return n;
}

/* Step 1: each projectile spawned this step takes its turret's key from
 * the OwnedBy edge the spawner recorded. */
static int stamp_owners(sim_arena_mpi_t *a, weft_world_t *w) {
  const sim_scene_t *s = a->scene;
  int64_t n = list_all(a, a->fresh);
  if (n < 0)
    return WEFT_ENOMEM;
  int rc = 0;
  for (int64_t i = 0; i < n && !rc; i++) {
    weft_entity_t turret;
    weft_key_t key = {UINT64_MAX}; /* no owner: never despawned by key */
    if (weft_relation_first(w, a->listed[i], s->std.owned_by, &turret) == 0 &&
        weft_read(w, turret, s->std.key, &key) != 0)
      key.id = UINT64_MAX;
    rc = weft_add(w, a->listed[i], s->owner, &key.id);
  }
  return rc;
}

/* Step 2, local part: despawns the owned dead turrets and lists their
 * keys in a->mine. Returns the count, or -1 (error in *rc). */
static int wreck(sim_arena_mpi_t *a, weft_world_t *w, int *rc) {
  const sim_scene_t *s = a->scene;
  int n = 0;
  weft_iter_t it;
  for (weft_query_iter(a->wrecks, &it); weft_iter_next(&it);) {
    const weft_key_t *k = weft_iter_column_of(&it, s->std.key);
    for (uint32_t i = 0; i < it.count; i++)
      if (k && (uint32_t)n < s->turret_count)
        a->mine[n++] = k[i].id;
  }
  int64_t m = list_all(a, a->wrecks);
  *rc = m < 0 ? WEFT_ENOMEM : 0;
  for (int64_t i = 0; i < m && !*rc; i++)
    *rc = weft_despawn(w, a->listed[i]);
  a->stats.turrets_died += (uint64_t)(m > 0 ? m : 0);
  return n;
}

static int by_u64(const void *x, const void *y) {
  uint64_t p = *(const uint64_t *)x, q = *(const uint64_t *)y;
  return p < q ? -1 : p > q;
}

/* Step 2, every rank's part: despawns this rank's projectiles whose
 * turret died anywhere this step (those still linked to it went with the
 * cascade). Collective. */
static int orphans(sim_arena_mpi_t *a, weft_world_t *w, int mine, int rc) {
  const sim_scene_t *s = a->scene;
  if (MPI_Allgather(&mine, 1, MPI_INT, a->counts, 1, MPI_INT, a->comm))
    return WEFT_EIO;
  int total = 0;
  for (int r = 0; r < a->size; r++) {
    a->displs[r] = total;
    total += a->counts[r];
  }
  if (total == 0)
    return rc;
  if (MPI_Allgatherv(a->mine, mine, MPI_UINT64_T, a->all, a->counts, a->displs,
                     MPI_UINT64_T, a->comm))
    return WEFT_EIO;
  if (rc)
    return rc;
  qsort(a->all, (size_t)total, sizeof *a->all, by_u64);
  if (listed_reserve(a, weft_query_count(a->shots)))
    return WEFT_ENOMEM;
  uint32_t n = 0;
  weft_iter_t it;
  for (weft_query_iter(a->shots, &it); weft_iter_next(&it);) {
    const uint64_t *owner = weft_iter_column_of(&it, s->owner);
    for (uint32_t i = 0; i < it.count; i++)
      if (bsearch(&owner[i], a->all, (size_t)total, sizeof *a->all, by_u64))
        a->listed[n++] = it.entities[i];
  }
  /* The turrets' own rank despawned them already, which cascaded: what is
   * left lost its edge when it migrated. */
  for (uint32_t i = 0; i < n && !rc; i++)
    rc = weft_despawn(w, a->listed[i]);
  a->stats.orphans += n;
  return rc;
}

/* A squad's share of the digest (splitmix64 over its index and values). */
static uint64_t mix(uint64_t h) {
  h += 0x9e3779b97f4a7c15ull;
  h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull;
  h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
  return h ^ (h >> 31);
}

/* sim_scenarios.c's squad record. */
typedef struct squad_t {
  uint32_t members, ticks;
} squad_t;

/* Step 3: living members per squad, summed on rank 0, which updates the
 * squads and disbands the empty ones. Collective. */
static int squads(sim_arena_mpi_t *a, weft_world_t *w, int rc) {
  const sim_scene_t *s = a->scene;
  const uint32_t ns = s->squad_count;
  if (ns == 0)
    return rc;
  memset(a->squad_n, 0, ns * sizeof *a->squad_n);
  weft_iter_t it;
  for (weft_query_iter(a->members, &it); weft_iter_next(&it);) {
    const uint32_t *of = weft_iter_column_of(&it, s->squad_of);
    for (uint32_t i = 0; i < it.count; i++)
      if (of[i] < ns)
        a->squad_n[of[i]]++;
  }
  int mrc = a->rank == 0 ? MPI_Reduce(MPI_IN_PLACE, a->squad_n, (int)ns,
                                      MPI_UINT32_T, MPI_SUM, 0, a->comm)
                         : MPI_Reduce(a->squad_n, NULL, (int)ns, MPI_UINT32_T,
                                      MPI_SUM, 0, a->comm);
  if (mrc)
    return WEFT_EIO;
  for (uint32_t i = 0; i < ns && a->rank == 0 && !rc; i++) {
    squad_t *sq = weft_is_alive(w, s->squads[i])
                      ? weft_get_mut(w, s->squads[i], s->squad)
                      : NULL;
    if (!sq)
      continue;
    sq->members = a->squad_n[i];
    sq->ticks++;
    if (sq->members == 0) {
      rc = weft_despawn(w, s->squads[i]);
      a->stats.squads_disbanded++;
    }
  }
  return rc;
}

static int arena_run(weft_sysctx_t *ctx, const weft_iter_t *none) {
  (void)none;
  sim_arena_mpi_t *a = ctx->user;
  weft_world_t *w = ctx->world;
  int rc = stamp_owners(a, w), wrc = 0;
  int dead = wreck(a, w, &wrc);
  rc = rc ? rc : wrc;
  /* Every rank makes both collective calls, whatever failed here. */
  rc = orphans(a, w, rc ? 0 : dead, rc);
  return squads(a, w, rc);
}

/* ---- the checkpoint section -----------------------------------------------
 */

/* The section's layout: this header, then per squad (by index) three
 * uint32_t: alive (0 or 1), members, age in fixed steps. */
#define ARENA_CK_MAGIC 0x31414b43u /* "CKA1" */
typedef struct arena_ck_head_t {
  uint32_t magic, squads;
  uint64_t turrets_died, orphans, squads_disbanded;
} arena_ck_head_t;

static int ck_put_u32(weft_snapshot_out_t *out, uint32_t v) {
  return weft_snapshot_put(out, &v, sizeof v);
}

/* Rank 0's squads and the figures (sim_arena_mpi_checkpoint_prepare()
 * summed them here). Only rank 0 writes the index, so only its save runs
 * in a distributed checkpoint. */
static int ck_save(weft_world_t *w, void *user, weft_snapshot_out_t *out) {
  sim_arena_mpi_t *a = user;
  const sim_scene_t *s = a->scene;
  arena_ck_head_t h = {ARENA_CK_MAGIC, s->squad_count, a->totals.turrets_died,
                       a->totals.orphans, a->totals.squads_disbanded};
  int rc = weft_snapshot_put(out, &h, sizeof h);
  for (uint32_t i = 0; i < s->squad_count && !rc; i++) {
    const squad_t *sq = weft_is_alive(w, s->squads[i])
                            ? weft_get(w, s->squads[i], s->squad)
                            : NULL;
    rc = ck_put_u32(out, sq != NULL);
    if (!rc)
      rc = ck_put_u32(out, sq ? sq->members : 0);
    if (!rc)
      rc = ck_put_u32(out, sq ? sq->ticks : 0);
  }
  return rc;
}

/* Checks the bytes against this scene before anything changes; the
 * reason goes to a->why (the load's own message is generic). Every rank
 * checks the same bytes, so every rank refuses them alike. */
static int ck_check(const weft_world_t *w, void *user, const void *data,
                    size_t n) {
  (void)w;
  sim_arena_mpi_t *a = user;
  const uint32_t ns = a->scene->squad_count;
  arena_ck_head_t h;
  a->why[0] = '\0';
  if (n < sizeof h) {
    snprintf(a->why, sizeof a->why, "the arena section is truncated");
    return WEFT_EFORMAT;
  }
  memcpy(&h, data, sizeof h);
  if (h.magic != ARENA_CK_MAGIC || n != sizeof h + (size_t)h.squads * 12) {
    snprintf(a->why, sizeof a->why, "the arena section is damaged");
    return WEFT_EFORMAT;
  }
  if (h.squads != ns) {
    snprintf(a->why, sizeof a->why,
             "the arena section holds %u squads, this scene %u (another "
             "--entities or --seed?)",
             h.squads, ns);
    return WEFT_EFORMAT;
  }
  const uint8_t *p = (const uint8_t *)data + sizeof h;
  for (uint32_t i = 0; i < ns; i++, p += 12) {
    uint32_t v[3];
    memcpy(v, p, sizeof v);
    if (v[0] > 1 || (!v[0] && (v[1] || v[2]))) {
      snprintf(a->why, sizeof a->why,
               "the arena section's squad %u is "
               "damaged",
               i);
      return WEFT_EFORMAT;
    }
  }
  return 0;
}

/* Rank 0 writes the squads back and takes the figures; every rank notes
 * that the section was there. Checked already: nothing here fails but a
 * despawn, which a live squad's handle does not. */
static int ck_load(weft_world_t *w, void *user, const void *data, size_t n) {
  (void)n;
  sim_arena_mpi_t *a = user;
  const sim_scene_t *s = a->scene;
  arena_ck_head_t h;
  memcpy(&h, data, sizeof h);
  a->restored = true;
  if (a->rank != 0)
    return 0;
  a->stats = (sim_arena_stats_t){h.turrets_died, h.orphans, h.squads_disbanded};
  const uint8_t *p = (const uint8_t *)data + sizeof h;
  int rc = 0;
  for (uint32_t i = 0; i < s->squad_count && !rc; i++, p += 12) {
    uint32_t v[3];
    memcpy(v, p, sizeof v);
    squad_t *sq = weft_is_alive(w, s->squads[i])
                      ? weft_get_mut(w, s->squads[i], s->squad)
                      : NULL;
    if (sq && v[0])
      *sq = (squad_t){v[1], v[2]};
    else if (sq)
      rc = weft_despawn(w, s->squads[i]);
  }
  return rc;
}

/* A turret's key and handle, sorted by key for relink(). */
typedef struct keyed_t {
  uint64_t key;
  weft_entity_t e;
} keyed_t;

static int by_key(const void *x, const void *y) {
  return by_u64(&((const keyed_t *)x)->key, &((const keyed_t *)y)->key);
}

/* Lists the owned turrets by key into *out (malloc'd; *n of them). */
static int list_turrets(sim_arena_mpi_t *a, keyed_t **out, uint32_t *n) {
  const weft_std_t *d = &a->scene->std;
  weft_query_desc_t qd = {.include = {d->spawner, d->key},
                          .exclude = {d->ghost}};
  weft_query_t *q = NULL;
  int rc = weft_query_create(a->scene->world, &qd, &q);
  if (rc)
    return rc;
  uint32_t cap = weft_query_count(q), k = 0;
  keyed_t *t = malloc((cap ? cap : 1) * sizeof *t);
  if (!t) {
    weft_query_destroy(q);
    return WEFT_ENOMEM;
  }
  weft_iter_t it;
  for (weft_query_iter(q, &it); weft_iter_next(&it);) {
    const weft_key_t *key = weft_iter_column_of(&it, d->key);
    for (uint32_t i = 0; i < it.count && k < cap; i++, k++)
      t[k] = (keyed_t){key[i].id, it.entities[i]};
  }
  weft_query_destroy(q);
  qsort(t, k, sizeof *t, by_key);
  *out = t;
  *n = k;
  return 0;
}

int sim_arena_mpi_relink(sim_arena_mpi_t *a) {
  const sim_scene_t *s = a->scene;
  keyed_t *t = NULL;
  uint32_t nt = 0, n = 0;
  int rc = list_turrets(a, &t, &nt);
  if (rc)
    return rc;
  uint32_t most = weft_query_count(a->shots);
  weft_entity_t *to = malloc((most ? most : 1) * sizeof *to);
  if (!to || listed_reserve(a, most)) {
    free(t);
    free(to);
    return WEFT_ENOMEM;
  }
  weft_iter_t it;
  for (weft_query_iter(a->shots, &it); weft_iter_next(&it);) {
    const uint64_t *owner = weft_iter_column_of(&it, s->owner);
    for (uint32_t i = 0; i < it.count && n < most; i++) {
      keyed_t want = {owner[i], 0};
      const keyed_t *hit = bsearch(&want, t, nt, sizeof *t, by_key);
      if (hit) {
        a->listed[n] = it.entities[i];
        to[n++] = hit->e;
      }
    }
  }
  /* Edges change the projectiles' archetypes: added after the walk. */
  for (uint32_t i = 0; i < n && !rc; i++)
    rc =
        weft_relation_add(s->world, a->listed[i], s->std.owned_by, to[i], NULL);
  free(t);
  free(to);
  return rc;
}

static int register_section(sim_arena_mpi_t *a) {
  weft_snapshot_section_desc_t d = {.name = "sim.mpi.arena",
                                    .save = ck_save,
                                    .check = ck_check,
                                    .load = ck_load,
                                    .user = a};
  return weft_snapshot_section_register(a->scene->world, &d);
}

/* ---- life cycle ---------------------------------------------------------- */

static int make_queries(sim_arena_mpi_t *a) {
  const sim_scene_t *s = a->scene;
  const weft_std_t *d = &s->std;
  weft_world_t *w = s->world;
  weft_query_desc_t fresh = {.include = {d->lifetime, d->collider},
                             .exclude = {s->owner, d->ghost}};
  weft_query_desc_t wrecks = {.include = {d->spawner, d->dead, d->key},
                              .exclude = {d->ghost}};
  weft_query_desc_t shots = {.include = {s->owner}, .exclude = {d->ghost}};
  weft_query_desc_t members = {.include = {s->squad_of},
                               .exclude = {d->ghost, d->dead}};
  int rc = weft_query_create(w, &fresh, &a->fresh);
  if (!rc)
    rc = weft_query_create(w, &wrecks, &a->wrecks);
  if (!rc)
    rc = weft_query_create(w, &shots, &a->shots);
  if (!rc)
    rc = weft_query_create(w, &members, &a->members);
  return rc;
}

static int register_system(sim_arena_mpi_t *a) {
  weft_system_desc_t d;
  memset(&d, 0, sizeof d);
  d.name = "sim.mpi.arena";
  d.phase = WEFT_PHASE_FIXED_UPDATE;
  d.flags = WEFT_SYSTEM_EXCLUSIVE;
  d.after[0] = "weft.health";
  d.after[1] = "weft.lifetime";
  d.after[2] = "weft.spawners";
  d.run = arena_run;
  d.user = a;
  weft_system_t id;
  return weft_system_register(a->scene->world, &d, &id);
}

/* The arena's ghosts, halo and exchange placement. */
static void configure(const sim_scene_t *s, weft_mpi_config_t *mc) {
  const weft_std_t *d = &s->std;
  const weft_component_t ghosts[] = {d->velocity, d->collider, d->health,
                                     d->armor,    d->damage,   d->lifetime,
                                     d->dead};
  mc->ghost_count = sizeof ghosts / sizeof *ghosts;
  memcpy(mc->ghost_components, ghosts, sizeof ghosts);
  /* Twice the grid's cell (the largest collider, 2 x 2): past the longest
   * contact, a turret's corner and a unit's radius, 1.92 units. */
  mc->halo = 4.0f;
  /* weft-sim registers the integration first: the exchange goes after the
   * move, before everything that reads other entities or their state as
   * of the exchange (docs/mpi.md, "The arena"). */
  mc->exchange_after[0] = "weft.bounds";
  static const char *const before[] = {"weft.grid.build", "weft.collide",
                                       "weft.health",     "weft.lifetime",
                                       "weft.spawners",   "sim.mpi.arena"};
  for (uint32_t i = 0; i < sizeof before / sizeof *before; i++)
    mc->exchange_before[i] = before[i];
}

int sim_arena_mpi_new(sim_scene_t *s, MPI_Comm comm, weft_mpi_config_t *mc,
                      sim_arena_mpi_t **out) {
  *out = NULL;
  if (!s || s->kind != SIM_ARENA || !s->owner || !s->squad_of)
    return WEFT_EINVAL;
  sim_arena_mpi_t *a = calloc(1, sizeof *a);
  if (!a)
    return WEFT_ENOMEM;
  a->scene = s;
  /* A communicator of its own, so that its collectives never match the
   * caller's or the driver's. */
  a->comm = MPI_COMM_NULL;
  if (MPI_Comm_dup(comm, &a->comm) != MPI_SUCCESS) {
    free(a);
    return WEFT_EIO;
  }
  MPI_Comm_rank(a->comm, &a->rank);
  MPI_Comm_size(a->comm, &a->size);
  size_t nt = s->turret_count ? s->turret_count : 1;
  a->mine = malloc(nt * sizeof *a->mine);
  a->all = malloc(nt * sizeof *a->all);
  a->counts = malloc((size_t)a->size * sizeof *a->counts);
  a->displs = malloc((size_t)a->size * sizeof *a->displs);
  a->squad_n = malloc((s->squad_count ? s->squad_count : 1) * sizeof(uint32_t));
  int rc = a->mine && a->all && a->counts && a->displs && a->squad_n
               ? 0
               : WEFT_ENOMEM;
  if (!rc)
    rc = make_queries(a);
  if (!rc)
    rc = register_system(a);
  if (!rc)
    rc = register_section(a);
  if (rc) {
    sim_arena_mpi_free(a);
    return rc;
  }
  configure(s, mc);
  *out = a;
  return 0;
}

int sim_arena_mpi_split(sim_arena_mpi_t *a) {
  const sim_scene_t *s = a->scene;
  int rc = 0;
  for (uint32_t i = 0; i < s->squad_count && a->rank != 0 && !rc; i++)
    rc = weft_despawn(s->world, s->squads[i]);
  return rc;
}

void sim_arena_mpi_digest(const sim_arena_mpi_t *a, uint64_t *hash,
                          uint64_t *count) {
  const sim_scene_t *s = a->scene;
  *hash = *count = 0;
  for (uint32_t i = 0; i < s->squad_count && a->rank == 0; i++) {
    const squad_t *sq = weft_is_alive(s->world, s->squads[i])
                            ? weft_get(s->world, s->squads[i], s->squad)
                            : NULL;
    if (!sq)
      continue;
    *hash += mix(mix(i) ^ ((uint64_t)sq->members << 32 | sq->ticks));
    *count += 1;
  }
}

void sim_arena_mpi_stats(const sim_arena_mpi_t *a, sim_arena_stats_t *out) {
  *out = a->stats;
}

int sim_arena_mpi_checkpoint_prepare(sim_arena_mpi_t *a) {
  uint64_t mine[3] = {a->stats.turrets_died, a->stats.orphans,
                      a->stats.squads_disbanded},
           all[3] = {0, 0, 0};
  if (MPI_Reduce(mine, all, 3, MPI_UINT64_T, MPI_SUM, 0, a->comm))
    return WEFT_EIO;
  a->totals = (sim_arena_stats_t){all[0], all[1], all[2]};
  return 0;
}

int sim_arena_mpi_restored(sim_arena_mpi_t *a, const char *prefix) {
  int mine = a->restored, all = 0;
  if (MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, a->comm))
    return WEFT_EIO;
  if (all)
    return 0;
  return weft_world_fail(a->scene->world, WEFT_EFORMAT,
                         "%s.index holds no arena section "
                         "(sim.mpi.arena): not a checkpoint of the "
                         "distributed arena",
                         prefix);
}

const char *sim_arena_mpi_refused(const sim_arena_mpi_t *a) {
  return a->why;
}

void sim_arena_mpi_free(sim_arena_mpi_t *a) {
  if (!a)
    return;
  weft_query_destroy(a->fresh);
  weft_query_destroy(a->wrecks);
  weft_query_destroy(a->shots);
  weft_query_destroy(a->members);
  free(a->mine);
  free(a->all);
  free(a->counts);
  free(a->displs);
  free(a->squad_n);
  free(a->listed);
  if (a->comm != MPI_COMM_NULL)
    MPI_Comm_free(&a->comm);
  free(a);
}
