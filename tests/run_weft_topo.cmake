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

include(${CMAKE_CURRENT_LIST_DIR}/expect_exit.cmake)
weft_expect_exit(weft-topo "${WEFT_TOPO}")
