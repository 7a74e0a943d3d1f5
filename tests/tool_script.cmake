# SPDX-License-Identifier: MIT
# Included by the run_*.cmake test scripts. weft_expect_exit(<name> <program>)
# runs <program> with the script's `args` (script_args.cmake) and checks
# that it exits with status WEFT_EXPECT_RC and that every '|'-separated
# text of WEFT_EXPECT_OUT (if set) appears in its stdout + stderr. <name>
# labels the failure messages.
function(weft_expect_exit name program)
  execute_process(COMMAND "${program}" ${args}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  set(all "${out}${err}")
  if(NOT "${rc}" STREQUAL "${WEFT_EXPECT_RC}")
    message(FATAL_ERROR "${name} ${args}: exit status '${rc}', expected "
                        "${WEFT_EXPECT_RC}\n${all}")
  endif()
  if(DEFINED WEFT_EXPECT_OUT)
    string(REPLACE "|" ";" wanted "${WEFT_EXPECT_OUT}")
    foreach(text IN LISTS wanted)
      string(FIND "${all}" "${text}" at)
      if(at EQUAL -1)
        message(FATAL_ERROR "${name} ${args}: output lacks '${text}'\n${all}")
      endif()
    endforeach()
  endif()
  message(STATUS "${name} ${args}: exit status ${rc} as expected")
endfunction()

# The common start of a run_<tool>.cmake script: fails unless -D<var>
# names the tool, collects its arguments, and with -DWEFT_EXPECT_RC runs
# it once through weft_expect_exit() and ends the script. A macro, so that
# `args` lands in the script's scope and return() ends the script.
macro(weft_tool_script name var)
  if(NOT ${var})
    message(FATAL_ERROR "${name} test script: -D${var} is required")
  endif()
  include(${CMAKE_CURRENT_LIST_DIR}/script_args.cmake)
  if(DEFINED WEFT_EXPECT_RC)
    weft_expect_exit(${name} "${${var}}")
    return()
  endif()
endmacro()
