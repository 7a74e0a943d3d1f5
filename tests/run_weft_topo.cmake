# SPDX-License-Identifier: MIT
# Runs weft-topo and checks its exit status and output (ctest label "unit"):
#
#   cmake -DWEFT_TOPO=<path to weft-topo> -DWEFT_EXPECT_RC=<status>
#         [-DWEFT_EXPECT_OUT=<text>[|<text>...]]
#         -P run_weft_topo.cmake -- <weft-topo arguments...>
#
# Every '|'-separated text must appear in stdout + stderr. The tool's
# arguments come after "--" so that they may hold spaces and semicolons.
cmake_minimum_required(VERSION 3.20)

include(${CMAKE_CURRENT_LIST_DIR}/tool_script.cmake)
weft_tool_script(weft-topo WEFT_TOPO)
message(FATAL_ERROR "weft-topo test script: -DWEFT_EXPECT_RC is required")
