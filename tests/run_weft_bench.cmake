# SPDX-License-Identifier: MIT
# Runs weft-bench and checks its JSON report (ctest label "unit"):
#
#   cmake -DWEFT_BENCH=<path to weft-bench> -DWEFT_EXPECT_ROUNDS=<n>
#         -DWEFT_JSON=<report path> -P run_weft_bench.cmake -- <arguments...>
#
# The report must carry its format, version and run metadata (the commit
# of this checkout, the settings as run); in a --quick run every target
# must be marked indicative, in the table and the JSON. Every row must
# appear once, however many passes ran, and every timed
# row must carry n per-round ratios (the rounds of all passes) and n / 2
# pair ratios, each between its two rounds' ratios, with its reported
# ratio the pairs' median and its extremes their minimum and maximum.
# With -DWEFT_EXPECT_RC=<status> and -DWEFT_EXPECT_OUT=<text>[|<text>...]
# it instead checks the exit status and that each text appears
# (tool_script.cmake).
cmake_minimum_required(VERSION 3.20)

include(${CMAKE_CURRENT_LIST_DIR}/tool_script.cmake)
weft_tool_script(weft-bench WEFT_BENCH)

execute_process(COMMAND "${WEFT_BENCH}" ${args}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "weft-bench ${args}: exit status '${rc}'\n${out}${err}")
endif()

file(READ "${WEFT_JSON}" report)
string(JSON format GET "${report}" format)
string(JSON version GET "${report}" version)
if(NOT format STREQUAL "weft-bench" OR NOT version EQUAL 1)
  message(FATAL_ERROR "format '${format}' version '${version}', expected "
                      "weft-bench 1")
endif()

# The run's metadata: every field present, the settings as run.
set(quick OFF) # string(JSON GET) reads booleans as ON and OFF
if("--quick" IN_LIST args)
  set(quick ON)
endif()
foreach(field commit compiler flags cpu_model cpus_online cores quick
              rounds passes omp_wait_policy)
  string(JSON type ERROR_VARIABLE missing TYPE "${report}" meta ${field})
  if(missing)
    message(FATAL_ERROR "meta.${field} is missing: ${missing}")
  endif()
endforeach()
string(JSON meta_quick GET "${report}" meta quick)
string(JSON meta_rounds GET "${report}" meta rounds)
string(JSON meta_passes GET "${report}" meta passes)
string(JSON commit GET "${report}" meta commit)
string(JSON compiler GET "${report}" meta compiler)
string(JSON cores GET "${report}" meta cores)
math(EXPR all_rounds "${meta_rounds} * ${meta_passes}")
if(NOT meta_quick STREQUAL quick OR NOT all_rounds EQUAL WEFT_EXPECT_ROUNDS)
  message(FATAL_ERROR "meta: quick ${meta_quick}, ${meta_rounds} rounds x "
                      "${meta_passes} passes; expected quick ${quick} and "
                      "${WEFT_EXPECT_ROUNDS} rounds in all")
endif()
if(commit STREQUAL "" OR compiler STREQUAL "" OR NOT cores GREATER 0)
  message(FATAL_ERROR "meta: commit '${commit}', compiler '${compiler}', "
                      "cores '${cores}'")
endif()
execute_process(COMMAND git -C "${CMAKE_CURRENT_LIST_DIR}" rev-parse --short
                        HEAD
  RESULT_VARIABLE git_rc OUTPUT_VARIABLE head ERROR_QUIET
  OUTPUT_STRIP_TRAILING_WHITESPACE)
if(git_rc EQUAL 0 AND NOT commit MATCHES "${head}")
  message(FATAL_ERROR "meta.commit '${commit}' does not name HEAD ${head}")
endif()

# A --quick run proves nothing about targets: the table and the JSON say
# "indicative", never PASS or MISS.
if(quick)
  if(out MATCHES "PASS|MISS" OR NOT out MATCHES "indicative")
    message(FATAL_ERROR "a --quick table must mark targets indicative, not "
                        "PASS or MISS:\n${out}")
  endif()
endif()

string(JSON json GET "${report}" results)
string(JSON rows LENGTH "${json}")
if(rows EQUAL 0)
  message(FATAL_ERROR "weft-bench ${args}: no rows in ${WEFT_JSON}")
endif()
set(names "")
set(timed 0)
math(EXPR last_row "${rows} - 1")
foreach(i RANGE ${last_row})
  string(JSON name GET "${json}" ${i} name)
  if(name IN_LIST names)
    message(FATAL_ERROR "row ${name} appears twice in ${WEFT_JSON}")
  endif()
  list(APPEND names "${name}")
  string(JSON verdict ERROR_VARIABLE no_target GET "${json}" ${i} verdict)
  if(NOT no_target)
    string(JSON pass GET "${json}" ${i} pass)
    if(quick AND (NOT verdict STREQUAL "indicative" OR NOT pass STREQUAL ""))
      message(FATAL_ERROR "${name}: verdict '${verdict}', pass '${pass}' in "
                          "a --quick run; expected indicative and null")
    elseif(NOT quick AND NOT "${verdict}:${pass}" MATCHES "^(pass:ON|miss:OFF)$")
      message(FATAL_ERROR "${name}: verdict '${verdict}', pass '${pass}'")
    endif()
  endif()
  string(JSON kind ERROR_VARIABLE none TYPE "${json}" ${i} round_ratios)
  if(NOT kind STREQUAL "ARRAY")
    continue() # a computed row (memory): no rounds
  endif()
  math(EXPR timed "${timed} + 1")
  string(JSON n LENGTH "${json}" ${i} round_ratios)
  string(JSON rounds GET "${json}" ${i} rounds)
  if(NOT n EQUAL WEFT_EXPECT_ROUNDS OR NOT rounds EQUAL WEFT_EXPECT_ROUNDS)
    message(FATAL_ERROR "${name}: ${n} round ratios, rounds ${rounds}; "
                        "expected ${WEFT_EXPECT_ROUNDS}")
  endif()
  string(JSON ratio GET "${json}" ${i} ratio)
  string(JSON lo GET "${json}" ${i} ratio_min)
  string(JSON hi GET "${json}" ${i} ratio_max)
  string(JSON pairs LENGTH "${json}" ${i} pair_ratios)
  math(EXPR want_pairs "${n} / 2")
  if(NOT pairs EQUAL want_pairs)
    message(FATAL_ERROR "${name}: ${pairs} pair ratios for ${n} rounds")
  endif()
  # Each pair's ratio is the geometric mean of its two rounds' ratios, so
  # it lies between them; the reported ratio is the pairs' median, its
  # range their extremes.
  set(below 0)
  set(above 0)
  set(min "")
  set(max "")
  math(EXPR last "${pairs} - 1")
  foreach(k RANGE ${last})
    math(EXPR r0 "2 * ${k}")
    math(EXPR r1 "2 * ${k} + 1")
    string(JSON q GET "${json}" ${i} pair_ratios ${k})
    string(JSON q0 GET "${json}" ${i} round_ratios ${r0})
    string(JSON q1 GET "${json}" ${i} round_ratios ${r1})
    if((q LESS q0 AND q LESS q1) OR (q GREATER q0 AND q GREATER q1))
      message(FATAL_ERROR "${name}: pair ${k} ratio ${q} lies outside its "
                          "rounds' ${q0} and ${q1}")
    endif()
    if(min STREQUAL "" OR q LESS min)
      set(min ${q})
    endif()
    if(max STREQUAL "" OR q GREATER max)
      set(max ${q})
    endif()
    if(NOT q GREATER ratio)
      math(EXPR below "${below} + 1")
    endif()
    if(NOT q LESS ratio)
      math(EXPR above "${above} + 1")
    endif()
  endforeach()
  math(EXPR half "${pairs} / 2")
  if(below LESS half OR above LESS half)
    message(FATAL_ERROR "${name}: ratio ${ratio} is not the median of its "
                        "${pairs} pairs (${below} at or below, ${above} at "
                        "or above)")
  endif()
  if(NOT min EQUAL lo OR NOT max EQUAL hi)
    message(FATAL_ERROR "${name}: ratio range [${lo}..${hi}], pairs span "
                        "[${min}..${max}]")
  endif()
  message(STATUS "${name}: ${n} rounds, ${pairs} pairs, ratio ${ratio} "
                 "[${lo}..${hi}]")
endforeach()
if(timed EQUAL 0)
  message(FATAL_ERROR "weft-bench ${args}: no timed row")
endif()
