# SPDX-License-Identifier: MIT
# Packaging test (ctest label "install"), run as
#
#   cmake -DWEFT_BUILD_DIR=<weft build> -DWEFT_WORK_DIR=<scratch dir>
#         [-DWEFT_SANITIZE=<list>] [-DWEFT_C_COMPILER=<cc>]
#         [-DWEFT_GENERATOR=<generator>] [-DWEFT_CONFIG=<config>]
#         -P run_install_test.cmake
#
# It installs the already-built weft into <scratch dir>/prefix (checking
# that the licence comes with it), then builds consumer.c against that
# prefix the ways users do:
#   (a) cc consumer.c $(pkg-config --cflags --libs weft)
#   (a') cc consumer.c $(pkg-config --static --cflags --libs weft), the
#        static link line, which adds hwloc's private libraries (-ludev)
#   (b) find_package(weft REQUIRED) + weft::weft (tests/install/CMakeLists.txt)
# and runs the programs. In sanitizer builds libweft.a carries sanitizer
# instrumentation, so both consumers are compiled and linked with the same
# -fsanitize flags.
cmake_minimum_required(VERSION 3.20)

foreach(var WEFT_BUILD_DIR WEFT_WORK_DIR)
  if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
    message(FATAL_ERROR "run_install_test.cmake: -D${var}=... is required")
  endif()
endforeach()
if(NOT WEFT_C_COMPILER)
  set(WEFT_C_COMPILER cc)
endif()

set(consumer_src "${CMAKE_CURRENT_LIST_DIR}")
set(prefix "${WEFT_WORK_DIR}/prefix")

# Runs a command; stops the test with its output if it fails.
function(run_step what)
  message(STATUS "install test: ${what}")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc
                  OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    list(JOIN ARGN " " cmd)
    message(FATAL_ERROR
      "install test: ${what} failed (${rc})\n  command: ${cmd}\n${out}")
  endif()
  if(NOT "${out}" STREQUAL "")
    message("${out}")
  endif()
endfunction()

set(sanitize_flags "")
if(WEFT_SANITIZE)
  set(sanitize_flags -fsanitize=${WEFT_SANITIZE} -fno-omit-frame-pointer
                     -fno-sanitize-recover=all)
endif()
list(JOIN sanitize_flags " " sanitize_flags_string)

file(REMOVE_RECURSE "${WEFT_WORK_DIR}")
file(MAKE_DIRECTORY "${WEFT_WORK_DIR}")

# 1. Install into the scratch prefix.
set(config_args "")
if(WEFT_CONFIG)
  set(config_args --config "${WEFT_CONFIG}")
endif()
run_step("install into ${prefix}"
  "${CMAKE_COMMAND}" --install "${WEFT_BUILD_DIR}" --prefix "${prefix}"
  ${config_args})

# The licence travels with the headers and the library.
set(license "${prefix}/share/doc/weft/LICENSE")
if(NOT EXISTS "${license}")
  message(FATAL_ERROR "install test: ${license} was not installed")
endif()
file(READ "${license}" license_text)
if(NOT license_text MATCHES "MIT License" OR
   NOT license_text MATCHES "Copyright \\(c\\) 2026 the weft authors")
  message(FATAL_ERROR "install test: ${license} is not weft's MIT licence")
endif()

# 2a. pkg-config. GNUInstallDirs may pick lib, lib64 or lib/<multiarch>.
file(GLOB_RECURSE pc_files "${prefix}/*.pc")
list(FILTER pc_files INCLUDE REGEX "/pkgconfig/weft\\.pc$")
list(LENGTH pc_files pc_count)
if(NOT pc_count EQUAL 1)
  message(FATAL_ERROR "install test: expected one installed weft.pc under "
                      "${prefix}, found ${pc_count}: ${pc_files}")
endif()
get_filename_component(pc_dir "${pc_files}" DIRECTORY)
find_program(PKG_CONFIG_EXECUTABLE NAMES pkg-config pkgconf REQUIRED)
if(DEFINED ENV{PKG_CONFIG_PATH} AND NOT "$ENV{PKG_CONFIG_PATH}" STREQUAL "")
  set(ENV{PKG_CONFIG_PATH} "${pc_dir}:$ENV{PKG_CONFIG_PATH}")
else()
  set(ENV{PKG_CONFIG_PATH} "${pc_dir}")
endif()
execute_process(
  COMMAND "${PKG_CONFIG_EXECUTABLE}" --cflags --libs weft
  RESULT_VARIABLE rc OUTPUT_VARIABLE pc_flags ERROR_VARIABLE pc_err
  OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "install test: pkg-config --cflags --libs weft "
                      "failed (${rc}):\n${pc_err}")
endif()
message(STATUS "install test: pkg-config weft: ${pc_flags}")
# The flags must point into the scratch prefix, not where the build was
# configured to install: weft.pc has to be relocatable.
string(FIND "${pc_flags}" "${prefix}/" at)
if(at EQUAL -1)
  message(FATAL_ERROR "install test: weft.pc does not point into ${prefix}: "
                      "${pc_flags}")
endif()
separate_arguments(pc_flags UNIX_COMMAND "${pc_flags}")
run_step("build consumer with pkg-config"
  "${WEFT_C_COMPILER}" -std=c11 -Wall -Wextra -Wpedantic -Werror -g
  ${sanitize_flags} "${consumer_src}/consumer.c" ${pc_flags}
  -o "${WEFT_WORK_DIR}/consumer-pkgconfig")
run_step("run pkg-config consumer" "${WEFT_WORK_DIR}/consumer-pkgconfig")

# 2a'. The static link line: every library in it must be found, including
# the private dependencies of hwloc (libudev-dev; tools/install-deps.sh).
execute_process(
  COMMAND "${PKG_CONFIG_EXECUTABLE}" --static --cflags --libs weft
  RESULT_VARIABLE rc OUTPUT_VARIABLE pc_static ERROR_VARIABLE pc_err
  OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "install test: pkg-config --static --cflags --libs "
                      "weft failed (${rc}):\n${pc_err}")
endif()
message(STATUS "install test: pkg-config --static weft: ${pc_static}")
separate_arguments(pc_static UNIX_COMMAND "${pc_static}")
foreach(lib -lweft -lhwloc)
  list(FIND pc_static "${lib}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "install test: ${lib} missing from the static "
                        "line: ${pc_static}")
  endif()
endforeach()
run_step("build consumer with pkg-config --static"
  "${WEFT_C_COMPILER}" -std=c11 -Wall -Wextra -Wpedantic -Werror -g
  ${sanitize_flags} "${consumer_src}/consumer.c" ${pc_static}
  -o "${WEFT_WORK_DIR}/consumer-pkgconfig-static")
run_step("run pkg-config --static consumer"
  "${WEFT_WORK_DIR}/consumer-pkgconfig-static")

# 2a''. weft-mpi.pc, where weft was built with MPI: <weft/mpi.h> and
# -lweft_mpi with MPI's flags, one rank run without mpirun.
file(GLOB_RECURSE mpi_pc "${prefix}/*/weft-mpi.pc")
if(mpi_pc)
  execute_process(
    COMMAND "${PKG_CONFIG_EXECUTABLE}" --cflags --libs weft-mpi
    RESULT_VARIABLE rc OUTPUT_VARIABLE mpi_flags ERROR_VARIABLE pc_err
    OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "install test: pkg-config weft-mpi failed (${rc}):"
                        "\n${pc_err}")
  endif()
  message(STATUS "install test: pkg-config weft-mpi: ${mpi_flags}")
  separate_arguments(mpi_flags UNIX_COMMAND "${mpi_flags}")
  run_step("build consumer_mpi with pkg-config"
    "${WEFT_C_COMPILER}" -std=c11 -Wall -Wextra -Werror -g
    ${sanitize_flags} "${consumer_src}/consumer_mpi.c" ${mpi_flags}
    -o "${WEFT_WORK_DIR}/consumer-mpi-pkgconfig")
  run_step("run pkg-config consumer_mpi"
    "${WEFT_WORK_DIR}/consumer-mpi-pkgconfig")
endif()

# 2a''' (net). weft-net.pc, where weft was built with weft::net:
# <weft/net.h> and -lweft_net after weft's flags.
file(GLOB_RECURSE net_pc "${prefix}/*/weft-net.pc")
if(net_pc)
  execute_process(
    COMMAND "${PKG_CONFIG_EXECUTABLE}" --cflags --libs weft-net
    RESULT_VARIABLE rc OUTPUT_VARIABLE net_flags ERROR_VARIABLE pc_err
    OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "install test: pkg-config weft-net failed (${rc}):"
                        "\n${pc_err}")
  endif()
  message(STATUS "install test: pkg-config weft-net: ${net_flags}")
  separate_arguments(net_flags UNIX_COMMAND "${net_flags}")
  run_step("build consumer_net with pkg-config"
    "${WEFT_C_COMPILER}" -std=c11 -Wall -Wextra -Werror -g
    ${sanitize_flags} "${consumer_src}/consumer_net.c" ${net_flags}
    -o "${WEFT_WORK_DIR}/consumer-net-pkgconfig")
  run_step("run pkg-config consumer_net"
    "${WEFT_WORK_DIR}/consumer-net-pkgconfig")
endif()

# 2b. CMake package: find_package(weft REQUIRED) with the prefix on
# CMAKE_PREFIX_PATH.
set(generator_args "")
if(WEFT_GENERATOR)
  set(generator_args -G "${WEFT_GENERATOR}")
endif()
set(consumer_build "${WEFT_WORK_DIR}/consumer-build")
run_step("configure find_package consumer"
  "${CMAKE_COMMAND}" -S "${consumer_src}" -B "${consumer_build}"
  ${generator_args} -DCMAKE_BUILD_TYPE=Debug
  "-DCMAKE_PREFIX_PATH=${prefix}"
  "-DCMAKE_C_COMPILER=${WEFT_C_COMPILER}"
  "-DCMAKE_C_FLAGS=${sanitize_flags_string}"
  "-DCMAKE_EXE_LINKER_FLAGS=${sanitize_flags_string}")
# Make sure the package came from the scratch prefix and not from a weft
# installed elsewhere on the machine.
file(STRINGS "${consumer_build}/CMakeCache.txt" weft_dir_line
     REGEX "^weft_DIR:")
string(FIND "${weft_dir_line}" "${prefix}/" at)
if(at EQUAL -1)
  message(FATAL_ERROR "install test: find_package(weft) did not use "
                      "${prefix}: ${weft_dir_line}")
endif()
run_step("build find_package consumer"
  "${CMAKE_COMMAND}" --build "${consumer_build}")
if(EXISTS "${consumer_build}/consumer")
  set(consumer_bin "${consumer_build}/consumer")
else()
  file(GLOB_RECURSE consumer_bin "${consumer_build}/*/consumer")
endif()
run_step("run find_package consumer" ${consumer_bin})
if(mpi_pc)
  if(EXISTS "${consumer_build}/consumer_mpi")
    run_step("run find_package consumer_mpi" "${consumer_build}/consumer_mpi")
  else()
    message(FATAL_ERROR "install test: weft::mpi was installed, but "
                        "find_package(weft) gave no weft::mpi target")
  endif()
endif()
if(net_pc)
  if(EXISTS "${consumer_build}/consumer_net")
    run_step("run find_package consumer_net" "${consumer_build}/consumer_net")
  else()
    message(FATAL_ERROR "install test: weft::net was installed, but "
                        "find_package(weft) gave no weft::net target")
  endif()
endif()

message(STATUS "install test: pkg-config and find_package consumers passed")
