# SPDX-License-Identifier: MIT
# Builds one layer probe (tests/layers/) in this build tree and checks the
# outcome: WEFT_EXPECT=fail must fail with the compiler saying it cannot
# find WEFT_MISSING (the wrong-way header), WEFT_EXPECT=pass must build.
#
#   cmake -DWEFT_BUILD_DIR=... -DWEFT_TARGET=... -DWEFT_CONFIG=...
#         -DWEFT_EXPECT=fail|pass [-DWEFT_MISSING=scheduler/x.h]
#         -P run_layer_probe.cmake
foreach(var WEFT_BUILD_DIR WEFT_TARGET WEFT_EXPECT)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "run_layer_probe.cmake: ${var} is not set")
  endif()
endforeach()
set(config_args "")
if(WEFT_CONFIG)
  set(config_args --config ${WEFT_CONFIG})
endif()
execute_process(
  COMMAND ${CMAKE_COMMAND} --build ${WEFT_BUILD_DIR} --target ${WEFT_TARGET}
          ${config_args}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(WEFT_EXPECT STREQUAL "fail")
  if(rc EQUAL 0)
    message(FATAL_ERROR "${WEFT_TARGET} compiled, but its wrong-way include "
                        "(${WEFT_MISSING}) must not be found:\n${out}")
  endif()
  string(REPLACE "." "\\." missing_re "${WEFT_MISSING}")
  if(NOT out MATCHES "${missing_re}: No such file or directory")
    message(FATAL_ERROR "${WEFT_TARGET} failed, but not for want of "
                        "${WEFT_MISSING}:\n${out}")
  endif()
  string(REGEX MATCH "[^\n]*${missing_re}: No such file or directory"
         line "${out}")
  message(STATUS "refused as expected: ${line}")
elseif(WEFT_EXPECT STREQUAL "pass")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${WEFT_TARGET} must compile:\n${out}")
  endif()
else()
  message(FATAL_ERROR "WEFT_EXPECT must be fail or pass, not ${WEFT_EXPECT}")
endif()
