# SPDX-License-Identifier: MIT
# Runs a test binary under taskset with one CPU (ctest label "unit"):
#
#   cmake -DWEFT_TEST=<test binary> -DWEFT_TASKSET=<taskset> -P run_taskset.cmake
#
# The CPU is the first one this process may use (the binary prints it when
# given --first-cpu), and WEFT_TEST_EXPECT_CPUS names it, so that the test
# fails if the mask did not apply.
cmake_minimum_required(VERSION 3.20)

if(NOT WEFT_TEST OR NOT WEFT_TASKSET)
  message(FATAL_ERROR "run_taskset.cmake: -DWEFT_TEST and -DWEFT_TASKSET are required")
endif()
execute_process(COMMAND "${WEFT_TEST}" --first-cpu
  RESULT_VARIABLE rc OUTPUT_VARIABLE cpu OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT rc EQUAL 0 OR NOT cpu MATCHES "^[0-9]+$")
  message(FATAL_ERROR "${WEFT_TEST} --first-cpu: status ${rc}, output '${cpu}'")
endif()
set(ENV{WEFT_TEST_EXPECT_CPUS} "${cpu}")
execute_process(COMMAND "${WEFT_TASKSET}" -c "${cpu}" "${WEFT_TEST}"
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "taskset -c ${cpu} ${WEFT_TEST}: status ${rc}\n${out}${err}")
endif()
message(STATUS "taskset -c ${cpu} ${WEFT_TEST}: passed")
