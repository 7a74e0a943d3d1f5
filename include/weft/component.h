/* SPDX-License-Identifier: MIT */
/**
 * @file weft/component.h
 * @brief Component registration: names, layouts and field-level SoA.
 *
 * Components are registered per world from a descriptor and named by a
 * small integer id. Ids start at 1; 0 (WEFT_COMPONENT_NONE) never names a
 * component, which lets id lists be zero-terminated.
 */
#ifndef WEFT_COMPONENT_H
#define WEFT_COMPONENT_H

#include <stddef.h>
#include <stdint.h>

#include "weft/world.h"

#ifdef __cplusplus
extern "C" {
#endif

/** A component id, 1..WEFT_MAX_COMPONENTS. */
typedef uint32_t weft_component_t;

/** Never a component; terminates id lists. */
#define WEFT_COMPONENT_NONE ((weft_component_t)0)
/** Components one world can register. */
#define WEFT_MAX_COMPONENTS 512u
/** Fields one component can declare. */
#define WEFT_MAX_FIELDS 16u
/** Longest component or field name, including the terminating NUL. */
#define WEFT_NAME_MAX 64u
/** Largest alignment a component may ask for (one cache line). */
#define WEFT_ALIGN_MAX 64u

/** Store each field as its own array (field-level SoA). Needs fields. */
#define WEFT_COMPONENT_SOA 0x1u
/** Keep per-row dirty bits for this data component (weft/dirty.h): every
 * write path marks the rows it writes. Untracked components cost nothing.
 * Not for tags. */
#define WEFT_COMPONENT_TRACK_DIRTY 0x2u
/** Not saved in snapshots (weft/snapshot.h): entities keep the component
 * when loaded, with its bytes zero-filled. For caches and derived data. */
#define WEFT_COMPONENT_TRANSIENT 0x4u
/** Set by weft_relation_register() (weft/relation.h) in the flags
 * weft_component_info() reports for a relation's id; never accepted by
 * weft_component_register(). */
#define WEFT_COMPONENT_RELATION 0x100u

/** One field of a component: a named byte range inside the value. */
typedef struct weft_field_desc_t {
  const char *name; /**< unique within the component */
  uint32_t offset;  /**< byte offset inside the component value */
  uint32_t size;    /**< byte size, > 0 */
  /** What the bytes are (WEFT_FIELD_*), for snapshot fingerprints: a
   * snapshot field of another type is not loaded into this one. 0 (raw
   * bytes) matches any type of the same size. */
  uint32_t type;
} weft_field_desc_t;

/** Field types for weft_field_desc_t.type; 0 means raw bytes. */
enum {
  WEFT_FIELD_RAW = 0,
  WEFT_FIELD_I8,
  WEFT_FIELD_U8,
  WEFT_FIELD_I16,
  WEFT_FIELD_U16,
  WEFT_FIELD_I32,
  WEFT_FIELD_U32,
  WEFT_FIELD_I64,
  WEFT_FIELD_U64,
  WEFT_FIELD_F32,
  WEFT_FIELD_F64,
  WEFT_FIELD_ENTITY, /**< a weft_entity_t handle */
  WEFT_FIELD_BOOL,
  WEFT_FIELD_TYPE_COUNT_
};

/** Describes a component to weft_component_register(). Zero means default. */
typedef struct weft_component_desc_t {
  const char *name;   /**< unique within the world, 1..WEFT_NAME_MAX-1 chars */
  uint32_t size;      /**< value size in bytes; 0 registers a tag */
  uint32_t alignment; /**< power of two <= WEFT_ALIGN_MAX; 0 means 1 for
                           tags, else the largest power of two dividing size
                           (capped at 16) */
  const weft_field_desc_t *fields; /**< optional field list */
  uint32_t field_count;            /**< entries in @ref fields */
  uint32_t flags; /**< WEFT_COMPONENT_SOA, WEFT_COMPONENT_TRACK_DIRTY,
                       WEFT_COMPONENT_TRANSIENT */
} weft_component_desc_t;

/** Read-only facts about a registered component. */
typedef struct weft_component_info_t {
  const char *name; /**< owned by the world, lives as long as it */
  uint32_t size;
  uint32_t alignment;
  uint32_t field_count;
  uint32_t flags;
} weft_component_info_t;

#ifdef __cplusplus
/* C++17 has neither compound literals nor designated initializers: the
 * C++ macros build the same values, in member order. */
/** Builds a descriptor for a C++ type: WEFT_COMPONENT_DESC(Position). Any
 * thread; the name is the string literal #T. */
#define WEFT_COMPONENT_DESC(T)                                                 \
  (weft_component_desc_t{#T, static_cast<uint32_t>(sizeof(T)),                 \
                         static_cast<uint32_t>(alignof(T)), nullptr, 0u, 0u})
/** Builds a field descriptor for member @p m of type @p T. */
#define WEFT_FIELD(T, m)                                                       \
  (weft_field_desc_t{                                                          \
      #m, static_cast<uint32_t>(offsetof(T, m)),                               \
      static_cast<uint32_t>(sizeof(static_cast<T *>(nullptr)->m)), 0u})
#else
/** Builds a descriptor for a C type: WEFT_COMPONENT_DESC(Position). Any
 * thread; the name is the string literal #T. */
#define WEFT_COMPONENT_DESC(T)                                                 \
  ((weft_component_desc_t){.name = #T,                                         \
                           .size = (uint32_t)sizeof(T),                        \
                           .alignment = (uint32_t) _Alignof(T)})

/** Builds a field descriptor for member @p m of type @p T. */
#define WEFT_FIELD(T, m)                                                       \
  ((weft_field_desc_t){.name = #m,                                             \
                       .offset = (uint32_t)offsetof(T, m),                     \
                       .size = (uint32_t)sizeof(((T *)0)->m)})
#endif

/**
 * Registers a component. Owner thread, before or between structural use.
 *
 * Validation failures change nothing and return: WEFT_EINVAL (NULL or empty
 * name, name too long, unknown flags), WEFT_EEXIST (duplicate name),
 * WEFT_ELAYOUT (size not a multiple of alignment, alignment not a power of
 * two or above WEFT_ALIGN_MAX, too large for a quarter chunk, fields out of
 * range, overlapping, unnamed or duplicated, SoA without fields, fields on a
 * tag), WEFT_ETOOMANY (WEFT_MAX_COMPONENTS reached or too many fields).
 * On success *out receives the id; the world copies every string.
 */
int weft_component_register(weft_world_t *world,
                            const weft_component_desc_t *desc,
                            weft_component_t *out);

/** Finds a component by name. WEFT_ENOTFOUND if none. Reader threads. */
int weft_component_lookup(const weft_world_t *world, const char *name,
                          weft_component_t *out);

/** Fills @p out for component @p id; WEFT_ENOCOMP if unknown. Reader
 * threads; the strings in *out live as long as the world. */
int weft_component_info(const weft_world_t *world, weft_component_t id,
                        weft_component_info_t *out);

/** Finds a field of a component by name; *out gets its index. Reader
 * threads. */
int weft_component_field(const weft_world_t *world, weft_component_t id,
                         const char *field_name, uint32_t *out);

/** Number of registered components. Reader threads. */
uint32_t weft_component_count(const weft_world_t *world);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_COMPONENT_H */
