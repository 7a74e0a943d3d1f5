# Included by the run_*.cmake test scripts: weft_expect_exit(<name> <program>)
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
