# SPDX-License-Identifier: MIT
#
# weft's layers, enforced by the include path: core <- scheduler <- systems
# <- mpi, net (weft::mpi and weft::net, libraries of their own).
#
# Internal headers are included root-relative ("core/world.h",
# "scheduler/sched.h"). Each layer compiles with an include tree of its own
# in the build directory, made of links to the source directories of that
# layer and the layers below it, and nothing else: the source root itself is
# on no layer's path. A wrong-way include ("scheduler/..." in core,
# "systems/..." in the scheduler, core's private "core/world.h" above core)
# then finds no file and fails to compile.
# The links point into the source tree, so edits need no reconfigure; the
# tree lives in the (possibly out-of-tree, possibly a parent project's)
# build directory.

# Core headers that only core's own files may include: the world's
# internal functions (world.h; the layers above get core/world_view.h) and
# the parts of it nothing above core touches.
set(WEFT_CORE_PRIVATE_HEADERS bulk.h cmdbuf.h entity_ops.h observer.h relation.h resource_state.h
    stage.h world.h)

# weft_layer_tree(<layer> <visible dir>...): makes the include tree of
# <layer> and sets WEFT_LAYER_TREE_<layer> to its path. A visible dir is a
# link to the source directory, except core seen from above: a directory
# of links to core's headers less WEFT_CORE_PRIVATE_HEADERS (the glob
# re-runs at build time, so a new core header is linked without a manual
# reconfigure).
function(weft_layer_tree layer)
  set(tree ${PROJECT_BINARY_DIR}/weft_layers/${layer})
  file(MAKE_DIRECTORY ${tree})
  foreach(dir IN LISTS ARGN)
    file(REMOVE_RECURSE ${tree}/${dir}) # from an earlier configure
    if(dir STREQUAL "core" AND NOT layer STREQUAL "core")
      file(MAKE_DIRECTORY ${tree}/core)
      file(GLOB headers CONFIGURE_DEPENDS RELATIVE ${PROJECT_SOURCE_DIR}/core
           ${PROJECT_SOURCE_DIR}/core/*.h)
      list(REMOVE_ITEM headers ${WEFT_CORE_PRIVATE_HEADERS})
      foreach(h IN LISTS headers)
        weft_layer_link(${PROJECT_SOURCE_DIR}/core/${h} ${tree}/core/${h})
      endforeach()
    else()
      weft_layer_link(${PROJECT_SOURCE_DIR}/${dir} ${tree}/${dir})
    endif()
  endforeach()
  set(WEFT_LAYER_TREE_${layer} ${tree} PARENT_SCOPE)
endfunction()

# weft_layer_link(<target> <link>): a symbolic link, or a clear error.
function(weft_layer_link target link)
  file(CREATE_LINK ${target} ${link} SYMBOLIC RESULT rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "weft: cannot link ${link} to ${target}: ${rc}")
  endif()
endfunction()

# weft_layer_use(<target> <layer>): compiles <target> as part of <layer>:
# its include tree, the public headers and what every layer shares
# (weft_layer_common).
function(weft_layer_use target layer)
  target_include_directories(${target} PRIVATE ${WEFT_LAYER_TREE_${layer}})
  target_link_libraries(${target} PRIVATE weft_layer_common)
endfunction()

weft_layer_tree(core core)
weft_layer_tree(scheduler core scheduler)
weft_layer_tree(systems core scheduler systems)
weft_layer_tree(mpi core scheduler systems mpi)
weft_layer_tree(net core scheduler systems net)
