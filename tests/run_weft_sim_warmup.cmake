# SPDX-License-Identifier: MIT
# Checks weft-sim's --warmup (ctest label "unit"):
#
#   cmake -DWEFT_SIM=<path to weft-sim> -DWEFT_DIR=<scratch directory>
#         -P run_weft_sim_warmup.cmake -- <weft-sim arguments...>
#
# Runs the arguments with --warmup 4 --ticks 6 and with --ticks 10 and
# checks that both end at the same digest (the warm-up ticks are simulated)
# while the first run's JSON counts only its 6 timed ticks: every system
# ran 6 times there (10 in the second), and the second handed its systems
# more rows.
cmake_minimum_required(VERSION 3.20)

include(${CMAKE_CURRENT_LIST_DIR}/tool_script.cmake)
weft_tool_script(weft-sim WEFT_SIM)
if(NOT WEFT_DIR)
  message(FATAL_ERROR "run_weft_sim_warmup.cmake: -DWEFT_DIR is required")
endif()
file(MAKE_DIRECTORY "${WEFT_DIR}")

# run(<name> <extra args...>): runs weft-sim, sets <name>_json and
# <name>_digest in the caller's scope.
function(run name)
  set(json "${WEFT_DIR}/${name}.json")
  file(REMOVE "${json}")
  execute_process(COMMAND "${WEFT_SIM}" ${args} ${ARGN} --json "${json}"
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "weft-sim ${args} ${ARGN}: exit status '${rc}'\n"
                        "${out}${err}")
  endif()
  file(READ "${json}" text)
  string(JSON digest GET "${text}" digest)
  set(${name}_json "${text}" PARENT_SCOPE)
  set(${name}_digest "${digest}" PARENT_SCOPE)
endfunction()

run(warm --warmup 4 --ticks 6)
run(cold --ticks 10)
if(NOT warm_digest STREQUAL cold_digest)
  message(FATAL_ERROR "digest after 4 + 6 ticks (${warm_digest}) differs "
                      "from the one after 10 ticks (${cold_digest})")
endif()
foreach(field ticks warmup)
  string(JSON v GET "${warm_json}" args ${field})
  list(APPEND got ${v})
endforeach()
if(NOT got STREQUAL "6;4")
  message(FATAL_ERROR "ticks and warmup in the JSON: ${got}, expected 6;4")
endif()

string(JSON n LENGTH "${warm_json}" systems)
if(n EQUAL 0)
  message(FATAL_ERROR "no systems in the JSON:\n${warm_json}")
endif()
math(EXPR last "${n} - 1")
set(warm_rows 0)
set(cold_rows 0)
foreach(i RANGE ${last})
  foreach(name warm cold)
    string(JSON runs GET "${${name}_json}" systems ${i} runs)
    string(JSON rows GET "${${name}_json}" systems ${i} entities)
    math(EXPR ${name}_rows "${${name}_rows} + ${rows}")
    set(${name}_runs ${runs})
  endforeach()
  string(JSON sys GET "${warm_json}" systems ${i} name)
  if(NOT warm_runs EQUAL 6 OR NOT cold_runs EQUAL 10)
    message(FATAL_ERROR "${sys} ran ${warm_runs} times in the timed ticks "
                        "after a warm-up (expected 6) and ${cold_runs} "
                        "times without (expected 10)")
  endif()
endforeach()
if(NOT warm_rows LESS cold_rows OR warm_rows EQUAL 0)
  message(FATAL_ERROR "rows handed to the systems: ${warm_rows} in 6 timed "
                      "ticks, ${cold_rows} in 10")
endif()
message(STATUS "digest ${warm_digest}; ${n} systems ran 6 timed ticks "
               "(${warm_rows} rows) against 10 (${cold_rows})")
