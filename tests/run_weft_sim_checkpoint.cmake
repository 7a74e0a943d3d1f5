# SPDX-License-Identifier: MIT
# The split run of weft-sim (ctest label "unit"): for each thread count,
# K ticks straight through must end with the same digest as K/2 ticks, a
# checkpoint, and a new process restored from it running K/2 more. Then a
# run that rewrites the checkpoint every tick is killed part-way (its
# timeout), and the checkpoint it leaves must still restore.
#
#   cmake -DWEFT_SIM=<weft-sim> -DWEFT_THREADS=1,2 -DWEFT_TICKS=K
#         -DWEFT_DIR=<scratch folder> -P run_weft_sim_checkpoint.cmake --
#         <weft-sim arguments: --scenario, --entities, --seed>
cmake_minimum_required(VERSION 3.20)

include(${CMAKE_CURRENT_LIST_DIR}/tool_script.cmake)
weft_tool_script(weft-sim WEFT_SIM)

function(sim_digest out_var)
  execute_process(COMMAND "${WEFT_SIM}" ${args} ${ARGN}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "weft-sim ${args} ${ARGN}: exit status '${rc}'\n"
                        "${out}${err}")
  endif()
  string(REGEX MATCH "digest ([0-9a-f]+)" m "${out}")
  if(NOT m)
    message(FATAL_ERROR "weft-sim ${args} ${ARGN}: no digest\n${out}")
  endif()
  set(${out_var} "${CMAKE_MATCH_1}" PARENT_SCOPE)
endfunction()

file(MAKE_DIRECTORY "${WEFT_DIR}")
math(EXPR half "${WEFT_TICKS} / 2")
math(EXPR rest "${WEFT_TICKS} - ${half}")
string(REPLACE "," ";" threads "${WEFT_THREADS}")
foreach(t IN LISTS threads)
  set(ck "${WEFT_DIR}/checkpoint-${t}.snap")
  file(REMOVE "${ck}")
  sim_digest(straight --threads ${t} --ticks ${WEFT_TICKS})
  sim_digest(first --threads ${t} --ticks ${half} --checkpoint "${ck}"
             --checkpoint-every 3)
  sim_digest(second --threads ${t} --ticks ${rest} --restore "${ck}")
  message(STATUS "--threads ${t}: straight ${straight}, split ${second}")
  if(NOT straight STREQUAL second)
    message(FATAL_ERROR "weft-sim ${args} --threads ${t}: ${WEFT_TICKS} "
                        "ticks give ${straight}, ${half} + checkpoint + "
                        "${rest} give ${second}")
  endif()
  # Killed while it rewrites the checkpoint every tick: the file left
  # behind is the last whole one, which restores.
  execute_process(COMMAND "${WEFT_SIM}" ${args} --threads ${t}
                          --ticks 1000000 --restore "${ck}" --checkpoint
                          "${ck}" --checkpoint-every 1
    TIMEOUT 3 RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET)
  sim_digest(after --threads ${t} --ticks 1 --restore "${ck}")
  message(STATUS "--threads ${t}: killed run (status '${rc}') left a "
                 "checkpoint that restores")
endforeach()
