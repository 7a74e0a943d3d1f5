# SPDX-License-Identifier: MIT
# Makes weft's private copy of jemalloc, run at build time as
#
#   cmake -DWEFT_JEMALLOC_ARCHIVE=<libjemalloc_pic.a> -DWEFT_OUTPUT=<obj.o>
#         -DWEFT_WORK_DIR=<scratch> -DWEFT_C_COMPILER=<cc> -DWEFT_AR=<ar>
#         -DWEFT_NM=<nm> -DWEFT_OBJCOPY=<objcopy>
#         -P weft_jemalloc_object.cmake
#
# Debian's jemalloc is built without a symbol prefix: linking it makes it
# the whole program's malloc/free. weft must not change its host's
# allocator, so it takes the position-independent archive apart, links its
# C objects into one relocatable object (the C++ operator new/delete are
# left out), renames every symbol it defines to weft__je_<name> (the
# references between jemalloc's objects with them) and makes all of them
# local except the four entry points weft calls. What comes out defines no
# global malloc, free or anything else a program could bind to; the script
# checks that and fails otherwise.
cmake_minimum_required(VERSION 3.20)

foreach(var WEFT_JEMALLOC_ARCHIVE WEFT_OUTPUT WEFT_WORK_DIR WEFT_C_COMPILER
            WEFT_AR WEFT_NM WEFT_OBJCOPY)
  if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
    message(FATAL_ERROR "weft_jemalloc_object.cmake: -D${var}=... is required")
  endif()
endforeach()

# The jemalloc functions weft calls (core/jemalloc.h): these stay global,
# renamed.
set(kept mallocx rallocx dallocx mallctl)

function(run what)
  execute_process(COMMAND ${ARGN} WORKING_DIRECTORY "${WEFT_WORK_DIR}"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    list(JOIN ARGN " " cmd)
    message(FATAL_ERROR "jemalloc: ${what} failed (${rc}): ${cmd}\n${out}${err}")
  endif()
  set(run_out "${out}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE "${WEFT_WORK_DIR}")
file(MAKE_DIRECTORY "${WEFT_WORK_DIR}/objs")

# 1. The archive's objects, without the C++ ones.
execute_process(COMMAND "${WEFT_AR}" x "${WEFT_JEMALLOC_ARCHIVE}"
                WORKING_DIRECTORY "${WEFT_WORK_DIR}/objs" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "jemalloc: cannot unpack ${WEFT_JEMALLOC_ARCHIVE}")
endif()
file(GLOB objs "${WEFT_WORK_DIR}/objs/*.o")
list(FILTER objs EXCLUDE REGEX "/jemalloc_cpp[^/]*\\.o$")
list(SORT objs)
if(NOT objs)
  message(FATAL_ERROR "jemalloc: ${WEFT_JEMALLOC_ARCHIVE} holds no objects")
endif()

# 2. One relocatable object: the references between jemalloc's objects
# are now inside it.
run("ld -r" "${WEFT_C_COMPILER}" -r -nostdlib -o combined.o ${objs})

# 3. Every global it defines gets the private prefix.
run("nm" "${WEFT_NM}" -g --defined-only --format=posix combined.o)
string(REPLACE "\n" ";" lines "${run_out}")
set(map "")
foreach(line IN LISTS lines)
  if(line MATCHES "^([^ ]+) ")
    string(APPEND map "${CMAKE_MATCH_1} weft__je_${CMAKE_MATCH_1}\n")
  endif()
endforeach()
if(map STREQUAL "")
  message(FATAL_ERROR "jemalloc: no symbols found in ${WEFT_JEMALLOC_ARCHIVE}")
endif()
file(WRITE "${WEFT_WORK_DIR}/rename.map" "${map}")
set(keep_args "")
foreach(sym IN LISTS kept)
  list(APPEND keep_args "--keep-global-symbol=weft__je_${sym}")
endforeach()
run("objcopy" "${WEFT_OBJCOPY}" "--redefine-syms=rename.map" ${keep_args}
    combined.o private.o)

# 4. Check: the only global definitions left are the kept ones.
run("nm" "${WEFT_NM}" -g --defined-only --format=posix private.o)
string(REPLACE "\n" ";" lines "${run_out}")
set(globals "")
foreach(line IN LISTS lines)
  if(line MATCHES "^([^ ]+) ")
    list(APPEND globals "${CMAKE_MATCH_1}")
  endif()
endforeach()
list(SORT globals)
set(expected "")
foreach(sym IN LISTS kept)
  list(APPEND expected "weft__je_${sym}")
endforeach()
list(SORT expected)
if(NOT globals STREQUAL expected)
  message(FATAL_ERROR "jemalloc: the private object defines the globals "
                      "'${globals}', expected exactly '${expected}'")
endif()
file(COPY_FILE "${WEFT_WORK_DIR}/private.o" "${WEFT_OUTPUT}")
