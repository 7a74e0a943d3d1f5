/* SPDX-License-Identifier: MIT */
/**
 * @file weft.h
 * @brief Umbrella header: include this to use weft.
 *
 * weft is a C11 archetype entity-component-system. See README.md for a tour
 * and ARCHITECTURE.md for the map of modules.
 */
#ifndef WEFT_H
#define WEFT_H

#define WEFT_VERSION_MAJOR 0
#define WEFT_VERSION_MINOR 1
#define WEFT_VERSION_PATCH 0

#include "weft/error.h"
#include "weft/world.h"
#include "weft/compact.h"
#include "weft/component.h"
#include "weft/require.h"
#include "weft/entity.h"
#include "weft/query.h"
#include "weft/command.h"
#include "weft/observer.h"
#include "weft/dirty.h"
#include "weft/transition.h"
#include "weft/relation.h"
#include "weft/topology.h"
#include "weft/pool.h"
#include "weft/random.h"
#include "weft/resource.h"
#include "weft/runif.h"
#include "weft/phase.h"
#include "weft/system.h"
#include "weft/context.h"
#include "weft/schedule.h"
#include "weft/pipeline.h"
#include "weft/trace.h"
#include "weft/builtin.h"
#include "weft/snapshot.h"
#include "weft/entity_codec.h"

#endif /* WEFT_H */
