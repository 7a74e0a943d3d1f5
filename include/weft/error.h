/* SPDX-License-Identifier: MIT */
/**
 * @file weft/error.h
 * @brief Error codes shared by every weft module.
 *
 * Every fallible weft function returns 0 on success or one negative
 * `WEFT_E*` code. The codes come from one X-macro so that the enum, the
 * names and the messages cannot drift apart.
 */
#ifndef WEFT_ERROR_H
#define WEFT_ERROR_H

#ifdef __cplusplus
extern "C" {
#endif

/**
 * The error table: X(name, value, message). Values are stable ABI; new codes
 * are appended with the next free negative value.
 */
#define WEFT_ERRORS(X)                                                         \
  X(OK, 0, "success")                                                          \
  X(EINVAL, -1, "invalid argument")                                            \
  X(ESTALE, -2, "stale, forged or foreign entity handle")                      \
  X(ENOCOMP, -3, "unknown component id")                                       \
  X(ENOMEM, -4, "out of memory")                                               \
  X(EFULL, -5, "entity capacity exhausted: every slot is alive")               \
  X(ERETIRED, -6,                                                              \
    "entity capacity exhausted: remaining slots retired by generation "        \
    "rollover")                                                                \
  X(EEXIST, -7, "already exists: the name or registration is taken")           \
  X(ELAYOUT, -8, "invalid component layout (size, alignment or fields)")       \
  X(ETOOMANY, -9, "too many components or terms")                              \
  X(ENOTFOUND, -10, "the entity does not have this component")                 \
  X(ESOA, -11, "component is stored field-level SoA; use the field accessors") \
  X(ETAG, -12, "component is a tag and stores no data")                        \
  X(ELIMIT, -13, "an internal table limit was reached")                        \
  X(EBUSY, -14, "not allowed while a deferred scope or iteration is open")     \
  X(ECASCADE, -15,                                                             \
    "observer cascade: commands still pending after 64 drain waves")           \
  X(ECYCLE, -16, "the system order has a cycle")                               \
  X(ENONAME, -17, "no system, phase, resource or channel with this id/name")   \
  X(ESYSTEM, -18, "a system callback reported an error")                       \
  X(EIO, -19, "a file could not be opened, read or written")                   \
  X(EFORMAT, -20, "malformed or damaged snapshot")                             \
  X(EVERSION, -21, "snapshot written by a newer format version")               \
  X(EMIGRATE, -22, "a component layout in the snapshot cannot be migrated")

/** Error codes. `WEFT_OK` is 0; every failure is negative. */
typedef enum weft_error_t {
#define WEFT_ERROR_ENUM_(name, value, msg) WEFT_##name = (value),
  WEFT_ERRORS(WEFT_ERROR_ENUM_)
#undef WEFT_ERROR_ENUM_
} weft_error_t;

/**
 * Returns a static, human-readable message for an error code.
 *
 * Any thread may call it. The returned string is owned by the library and
 * lives for the whole process; unknown codes yield "unknown error".
 */
const char *weft_strerror(int code);

/**
 * Returns the enum's symbolic name ("WEFT_ESTALE") for a code, or
 * "WEFT_E?" for unknown codes. Any thread; static storage.
 */
const char *weft_strerror_name(int code);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_ERROR_H */
