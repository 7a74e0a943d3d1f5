/* SPDX-License-Identifier: MIT */
/*
 * A minimal weft::mpi program written against an installed weft:
 * <weft/mpi.h>, linked through `pkg-config weft-mpi` or the weft::mpi
 * CMake target (tests/install/run_install_test.cmake builds it both ways
 * where weft was built with MPI). Run alone, it is one rank owning the
 * whole box; it exits 0 when every check passes.
 */
#include <stdio.h>

#include <weft.h>
#include <weft/mpi.h>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  weft_world_t *w = NULL;
  weft_std_t std;
  weft_mpi_t *mpi = NULL;
  weft_mpi_config_t mc = {.min = {0, 0}, .max = {10, 10}, .halo = 1};
  int rc = weft_world_create(NULL, &w);
  if (!rc)
    rc = weft_std_register(w, &std);
  if (!rc)
    rc = weft_mpi_new(w, MPI_COMM_WORLD, &mc, &mpi);
  weft_component_t key = 0;
  if (!rc)
    rc = weft_component_lookup(w, "weft.Key", &key);
  weft_vec2_t p = {5, 5}, v = {1, 0};
  uint64_t k = 42;
  weft_entity_t e;
  if (!rc)
    rc = weft_spawn_with(
        w, (weft_component_t[]){std.position, std.velocity, key, 0},
        (const void *[]){&p, &v, &k}, &e);
  if (!rc)
    rc = weft_mpi_step(mpi, 1.0 / 60);
  weft_mpi_digest_t d = {0};
  if (!rc)
    rc = weft_mpi_digest(mpi, &d);
  int ok = !rc && d.entities == 1 && d.local == 1 && d.digest != 0 &&
           weft_mpi_size(mpi) >= 1;
  if (!ok)
    fprintf(stderr, "consumer_mpi: %s\n",
            rc ? weft_world_last_error(w) : "wrong digest");
  else
    printf("consumer_mpi: weft::mpi OK, digest 0x%016llx\n",
           (unsigned long long)d.digest);
  weft_mpi_free(mpi);
  weft_world_destroy(w);
  MPI_Finalize();
  return ok ? 0 : 1;
}
