# Runs weft-topo and checks its exit status and output (ctest label "unit"):
#
#   cmake -DWEFT_TOPO=<path to weft-topo> -DWEFT_EXPECT_RC=<status>
#         [-DWEFT_EXPECT_OUT=<text>[|<text>...]]
#         -P run_weft_topo.cmake -- <weft-topo arguments...>
#
# Every '|'-separated text must appear in stdout + stderr. The tool's
# arguments come after "--" so that they may hold spaces and semicolons.
cmake_minimum_required(VERSION 3.20)

if(NOT WEFT_TOPO OR "${WEFT_EXPECT_RC}" STREQUAL "")
  message(FATAL_ERROR "run_weft_topo.cmake: -DWEFT_TOPO and -DWEFT_EXPECT_RC "
                      "are required")
endif()

include(${CMAKE_CURRENT_LIST_DIR}/script_args.cmake)

execute_process(COMMAND "${WEFT_TOPO}" ${args}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(all "${out}${err}")
if(NOT "${rc}" STREQUAL "${WEFT_EXPECT_RC}")
  message(FATAL_ERROR "weft-topo ${args}: exit status '${rc}', expected "
                      "${WEFT_EXPECT_RC}\n${all}")
endif()
if(DEFINED WEFT_EXPECT_OUT)
  string(REPLACE "|" ";" wanted "${WEFT_EXPECT_OUT}")
  foreach(text IN LISTS wanted)
    string(FIND "${all}" "${text}" at)
    if(at EQUAL -1)
      message(FATAL_ERROR "weft-topo ${args}: output lacks '${text}'\n${all}")
    endif()
  endforeach()
endif()
message(STATUS "weft-topo ${args}: exit status ${rc} as expected")
