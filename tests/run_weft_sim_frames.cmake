# SPDX-License-Identifier: MIT
# Checks weft-sim's --frames (ctest label "unit"):
#
#   cmake -DWEFT_SIM=<path to weft-sim> -DWEFT_DIR=<scratch directory>
#         -P run_weft_sim_frames.cmake -- <weft-sim arguments...>
#
# Runs the arguments with --warmup 3 --ticks 9 --frames DIR --frame-every 4
# --frame-size 64 on 2 threads and without a pool, and once without
# --frames. Drawing must not change the world (the three digests agree);
# the frames are ticks 0, 4, 8 and 12 (warm-up included), PNG files; and
# the same world gives the same picture on any thread count.
cmake_minimum_required(VERSION 3.20)

include(${CMAKE_CURRENT_LIST_DIR}/tool_script.cmake)
weft_tool_script(weft-sim WEFT_SIM)
if(NOT WEFT_DIR)
  message(FATAL_ERROR "run_weft_sim_frames.cmake: -DWEFT_DIR is required")
endif()
file(REMOVE_RECURSE "${WEFT_DIR}")
file(MAKE_DIRECTORY "${WEFT_DIR}")

# run(<name> <extra args...>): runs weft-sim, sets <name>_digest and
# <name>_out in the caller's scope.
function(run name)
  execute_process(COMMAND "${WEFT_SIM}" ${args} --warmup 3 --ticks 9 ${ARGN}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "weft-sim ${args} ${ARGN}: exit status '${rc}'\n"
                        "${out}${err}")
  endif()
  if(NOT out MATCHES "digest ([0-9a-f]+)")
    message(FATAL_ERROR "weft-sim ${args} ${ARGN}: no digest\n${out}")
  endif()
  set(${name}_digest "${CMAKE_MATCH_1}" PARENT_SCOPE)
  set(${name}_out "${out}" PARENT_SCOPE)
endfunction()

run(plain --threads 2)
run(pool --threads 2 --frames "${WEFT_DIR}/pool" --frame-every 4
    --frame-size 64)
run(inline --threads 0 "--frames=${WEFT_DIR}/inline" --frame-every=4
    --frame-size=64)
if(NOT pool_digest STREQUAL plain_digest OR
   NOT inline_digest STREQUAL plain_digest)
  message(FATAL_ERROR "--frames changed the world: digests ${plain_digest} "
                      "(none), ${pool_digest}, ${inline_digest}")
endif()
if(NOT pool_out MATCHES "frames: 4 written to ")
  message(FATAL_ERROR "weft-sim --frames: no 'frames: 4 written'\n${pool_out}")
endif()

file(GLOB pool_files RELATIVE "${WEFT_DIR}/pool" "${WEFT_DIR}/pool/*")
list(SORT pool_files)
set(expected frame-000000.png frame-000004.png frame-000008.png
             frame-000012.png)
if(NOT pool_files STREQUAL expected)
  message(FATAL_ERROR "weft-sim --frames wrote '${pool_files}', expected "
                      "'${expected}'")
endif()
foreach(name IN LISTS expected)
  file(READ "${WEFT_DIR}/pool/${name}" head LIMIT 8 HEX)
  if(NOT head STREQUAL "89504e470d0a1a0a")
    message(FATAL_ERROR "${name} is not a PNG (starts ${head})")
  endif()
  file(SHA256 "${WEFT_DIR}/pool/${name}" a)
  file(SHA256 "${WEFT_DIR}/inline/${name}" b)
  if(NOT a STREQUAL b)
    message(FATAL_ERROR "${name} differs between 2 threads and no pool")
  endif()
endforeach()
message(STATUS "weft-sim --frames: 4 frames, same on any thread count, "
               "digest ${plain_digest} unchanged")
