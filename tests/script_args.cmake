# SPDX-License-Identifier: MIT
# Included by the run_*.cmake test scripts: collects the arguments that
# follow "--" on a `cmake -P script.cmake -- ...` command line into `args`,
# so that they may hold spaces and semicolons.
set(args "")
set(after_dashes FALSE)
math(EXPR last "${CMAKE_ARGC} - 1")
foreach(i RANGE ${last})
  if(after_dashes)
    list(APPEND args "${CMAKE_ARGV${i}}")
  elseif("${CMAKE_ARGV${i}}" STREQUAL "--")
    set(after_dashes TRUE)
  endif()
endforeach()
