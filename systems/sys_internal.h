/*
 * Helpers shared by the built-in systems (the files of systems/), on top
 * of the public API.
 */
#ifndef WEFT_SYSTEMS_SYS_INTERNAL_H
#define WEFT_SYSTEMS_SYS_INTERNAL_H

#include <stddef.h>

#include <weft.h>
#include <weft/systems.h>

/*
 * Stores a system's settings in the world resource @p name (the callback's
 * user pointer is then weft_resource_get() of *res, which lives as long
 * as the world): registered with @p init, or overwritten when an earlier,
 * since removed, registration left it. WEFT_EEXIST when the name holds a
 * resource of another size; otherwise 0 or the registration's error.
 */
int weft__sys_state(weft_world_t *world, const char *name, const void *init,
                    size_t size, weft_resource_t *res);

/*
 * Prefetch hints for a 3x3 neighbourhood query around (x, y), for loops
 * that visit entities in an order unrelated to space (chunk order), where
 * every row lookup would otherwise miss: stage 1 fetches the three rows'
 * cell offsets, stage 2 (a few entities later, once those arrived) the
 * first items of each row. Reader threads; they change nothing.
 */
void weft__grid_prefetch_rows(const weft_grid_t *g, float x, float y);
void weft__grid_prefetch_items(const weft_grid_t *g, float x, float y);

#endif /* WEFT_SYSTEMS_SYS_INTERNAL_H */
