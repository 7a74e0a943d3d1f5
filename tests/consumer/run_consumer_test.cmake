# SPDX-License-Identifier: MIT
# Subproject test (ctest label "install"), run as
#
#   cmake -DWEFT_SOURCE=<weft source> -DWEFT_WORK_DIR=<scratch dir>
#         -DWEFT_PARENT_MODE=subdirectory|fetchcontent
#         [-DWEFT_PARENT_BUILD_TYPE=<type>] [-DWEFT_ASK_TESTS=ON]
#         [-DWEFT_C_COMPILER=<cc>] [-DWEFT_GENERATOR=<generator>]
#         -P run_consumer_test.cmake
#
# Configures, builds, tests and installs the parent project in this
# directory, which pulls weft in as a subproject, and checks what weft must
# leave alone: the parent's build type (in the cache too), the parent's
# ctest (only its own test_pool and test_world), and the parent's install
# (no weft headers, library or package).
#
# With WEFT_ASK_TESTS the parent turns WEFT_BUILD_TESTS on: then it only
# configures, and checks that weft's tests join the parent's ctest and that
# its test targets live beside the parent's test_pool and test_world.
cmake_minimum_required(VERSION 3.21)

foreach(var WEFT_SOURCE WEFT_WORK_DIR WEFT_PARENT_MODE)
  if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
    message(FATAL_ERROR "run_consumer_test.cmake: -D${var}=... is required")
  endif()
endforeach()

# Runs a command; stops the test with its output if it fails. The output
# is left in step_out.
function(run_step what)
  message(STATUS "subproject test: ${what}")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc
                  OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    list(JOIN ARGN " " cmd)
    message(FATAL_ERROR
      "subproject test: ${what} failed (${rc})\n  command: ${cmd}\n${out}")
  endif()
  set(step_out "${out}" PARENT_SCOPE)
endfunction()

set(build "${WEFT_WORK_DIR}/build")
set(prefix "${WEFT_WORK_DIR}/prefix")
file(REMOVE_RECURSE "${WEFT_WORK_DIR}")
file(MAKE_DIRECTORY "${WEFT_WORK_DIR}")

set(args -S "${CMAKE_CURRENT_LIST_DIR}" -B "${build}"
         "-DWEFT_PARENT_MODE=${WEFT_PARENT_MODE}"
         "-DWEFT_SOURCE=${WEFT_SOURCE}"
         "-DFETCHCONTENT_SOURCE_DIR_WEFT=${WEFT_SOURCE}"
         -DFETCHCONTENT_FULLY_DISCONNECTED=ON)
if(WEFT_GENERATOR)
  list(APPEND args -G "${WEFT_GENERATOR}")
endif()
if(WEFT_C_COMPILER)
  list(APPEND args "-DCMAKE_C_COMPILER=${WEFT_C_COMPILER}")
endif()
if(DEFINED WEFT_PARENT_BUILD_TYPE)
  list(APPEND args "-DCMAKE_BUILD_TYPE=${WEFT_PARENT_BUILD_TYPE}")
else()
  set(WEFT_PARENT_BUILD_TYPE "")
endif()
if(WEFT_ASK_TESTS)
  list(APPEND args -DWEFT_BUILD_TESTS=ON)
endif()
run_step("configure the parent (${WEFT_PARENT_MODE})" "${CMAKE_COMMAND}"
         ${args})

# Lists the parent's ctest names, sorted, into the variable <out>.
function(list_tests out)
  run_step("list the parent's tests" "${CMAKE_CTEST_COMMAND}" -N
           --test-dir "${build}")
  string(REGEX MATCHALL "Test +#[0-9]+: [^\n]+" listed "${step_out}")
  string(REGEX REPLACE "Test +#[0-9]+: " "" listed "${listed}")
  list(SORT listed)
  set(${out} "${listed}" PARENT_SCOPE)
endfunction()

if(WEFT_ASK_TESTS)
  list_tests(listed)
  foreach(name test_pool test_world test_cxx readme_quickstart)
    list(FIND listed ${name} at)
    if(at EQUAL -1)
      message(FATAL_ERROR "subproject test: asked for weft's tests, but "
                          "the parent's ctest lacks ${name}: ${listed}")
    endif()
  endforeach()
  list(LENGTH listed count)
  if(count LESS 10)
    message(FATAL_ERROR "subproject test: asked for weft's tests, but the "
                        "parent's ctest lists only ${listed}")
  endif()
  message(STATUS "subproject test: ${count} tests with weft's, as asked")
  return()
endif()

# The parent's CMakeLists checks the build type during its configure; the
# cache as written must agree, and weft's options must be off.
file(STRINGS "${build}/CMakeCache.txt" cache)
set(expect
  "CMAKE_BUILD_TYPE:STRING=${WEFT_PARENT_BUILD_TYPE}"
  "WEFT_BUILD_TESTS:BOOL=OFF" "WEFT_BUILD_BENCH:BOOL=OFF"
  "WEFT_BUILD_TOOLS:BOOL=OFF" "WEFT_INSTALL:BOOL=OFF"
  "WEFT_MPI:STRING=OFF")
foreach(line ${expect})
  list(FIND cache "${line}" at)
  if(at EQUAL -1)
    string(REGEX REPLACE ":.*" "" name "${line}")
    list(FILTER cache INCLUDE REGEX "^${name}:")
    message(FATAL_ERROR "subproject test: expected '${line}' in the "
                        "parent's cache, found '${cache}'")
  endif()
endforeach()

run_step("build the parent" "${CMAKE_COMMAND}" --build "${build}")

# The parent's ctest holds its two tests and none of weft's.
list_tests(listed)
if(NOT "${listed}" STREQUAL "test_pool;test_world")
  message(FATAL_ERROR "subproject test: the parent's ctest lists "
                      "'${listed}', want only 'test_pool;test_world'")
endif()
run_step("run the parent's tests" "${CMAKE_CTEST_COMMAND}"
         --output-on-failure --test-dir "${build}")

# The parent's install holds the parent's programs and nothing of weft's.
run_step("install the parent" "${CMAKE_COMMAND}" --install "${build}"
         --prefix "${prefix}")
foreach(program test_pool test_world)
  if(NOT EXISTS "${prefix}/bin/${program}")
    message(FATAL_ERROR "subproject test: the parent's install lacks "
                        "bin/${program}")
  endif()
endforeach()
file(GLOB_RECURSE installed RELATIVE "${prefix}" "${prefix}/*")
list(FILTER installed INCLUDE REGEX "weft")
if(installed)
  message(FATAL_ERROR "subproject test: weft's install rules ran in the "
                      "parent's install: ${installed}")
endif()
message(STATUS "subproject test: ${WEFT_PARENT_MODE} parent passed")
