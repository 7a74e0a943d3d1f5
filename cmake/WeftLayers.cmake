# SPDX-License-Identifier: MIT
#
# weft's layers, enforced by the include path: core <- scheduler <- systems.
#
# Internal headers are included root-relative ("core/world.h",
# "scheduler/sched.h"). Each layer compiles with an include tree of its own
# in the build directory, made of links to the source directories of that
# layer and the layers below it, and nothing else: the source root itself is
# on no layer's path. A wrong-way include ("scheduler/..." in core,
# "systems/..." in the scheduler) then finds no file and fails to compile.
# The links point into the source tree, so edits need no reconfigure; the
# tree lives in the (possibly out-of-tree, possibly a parent project's)
# build directory.

# weft_layer_tree(<layer> <visible dir>...): makes the include tree of
# <layer> and sets WEFT_LAYER_TREE_<layer> to its path.
function(weft_layer_tree layer)
  set(tree ${PROJECT_BINARY_DIR}/weft_layers/${layer})
  file(MAKE_DIRECTORY ${tree})
  foreach(dir IN LISTS ARGN)
    file(REMOVE ${tree}/${dir}) # the link only, from an earlier configure
    file(CREATE_LINK ${PROJECT_SOURCE_DIR}/${dir} ${tree}/${dir} SYMBOLIC
         RESULT rc)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "weft: cannot link ${tree}/${dir} to "
                          "${PROJECT_SOURCE_DIR}/${dir}: ${rc}")
    endif()
  endforeach()
  set(WEFT_LAYER_TREE_${layer} ${tree} PARENT_SCOPE)
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
