/* SPDX-License-Identifier: MIT */
/*
 * weft's private jemalloc (builds with WEFT_JEMALLOC only).
 *
 * The build renames every symbol of jemalloc's static archive to
 * weft__je_<name> and keeps only the four below global
 * (cmake/weft_jemalloc_object.cmake), so that the host program's malloc and
 * free stay its own. jemalloc's header still gives the MALLOCX_* flags; the
 * macros make its declarations, and weft's calls, name the private copies.
 * Include this, never <jemalloc/jemalloc.h>.
 */
#ifndef WEFT_CORE_JEMALLOC_H
#define WEFT_CORE_JEMALLOC_H

#ifndef WEFT_JEMALLOC
#error "core/jemalloc.h is for builds with WEFT_JEMALLOC"
#endif

#define mallocx weft__je_mallocx
#define rallocx weft__je_rallocx
#define dallocx weft__je_dallocx
#define mallctl weft__je_mallctl

#include <jemalloc/jemalloc.h>
#include <strings.h> /* ffs(), used by MALLOCX_ALIGN */

#endif /* WEFT_CORE_JEMALLOC_H */
