# SPDX-License-Identifier: MIT
# Runs weft-sim once per thread count and checks that every run succeeds
# and prints the same world digest (ctest label "unit"):
#
#   cmake -DWEFT_SIM=<path to weft-sim> -DWEFT_THREADS=1,2
#         -P run_weft_sim.cmake -- <weft-sim arguments...>
#
# With -DWEFT_EXPECT_RC=<status> and -DWEFT_EXPECT_OUT=<text>[|<text>...]
# it instead runs once and checks the exit status and that each text
# appears (tool_script.cmake).
cmake_minimum_required(VERSION 3.20)

include(${CMAKE_CURRENT_LIST_DIR}/tool_script.cmake)
weft_tool_script(weft-sim WEFT_SIM)

set(first "")
string(REPLACE "," ";" threads "${WEFT_THREADS}")
foreach(t IN LISTS threads)
  execute_process(COMMAND "${WEFT_SIM}" ${args} --threads ${t}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "weft-sim ${args} --threads ${t}: exit status "
                        "'${rc}'\n${out}${err}")
  endif()
  string(REGEX MATCH "digest ([0-9a-f]+)" m "${out}")
  if(NOT m)
    message(FATAL_ERROR "weft-sim ${args} --threads ${t}: no digest\n${out}")
  endif()
  set(d "${CMAKE_MATCH_1}")
  message(STATUS "--threads ${t}: digest ${d}")
  if(first STREQUAL "")
    set(first "${d}")
  elseif(NOT d STREQUAL first)
    message(FATAL_ERROR "weft-sim ${args}: digest ${d} with --threads ${t} "
                        "differs from ${first}\n${out}")
  endif()
endforeach()
