# SPDX-License-Identifier: MIT
# Checks weft-sim's --json report against its schema (docs/weft-sim-json.md)
# and against the text report of the same run (ctest label "unit"):
#
#   cmake -DWEFT_SIM=<path to weft-sim> -DWEFT_DIR=<scratch directory>
#         -P run_weft_sim_json.cmake -- <weft-sim arguments...>
#
# The arguments must include --scenario, --entities, --threads, --ticks and
# --seed. The JSON must carry the format and its version, the arguments as
# given, and the same digest, phases, systems, workers, sync points and
# schedule builds as the text printed on stdout.
cmake_minimum_required(VERSION 3.20)

include(${CMAKE_CURRENT_LIST_DIR}/tool_script.cmake)
weft_tool_script(weft-sim WEFT_SIM)
if(NOT WEFT_DIR)
  message(FATAL_ERROR "run_weft_sim_json.cmake: -DWEFT_DIR is required")
endif()
file(MAKE_DIRECTORY "${WEFT_DIR}")
set(json_path "${WEFT_DIR}/report.json")
file(REMOVE "${json_path}")
execute_process(COMMAND "${WEFT_SIM}" ${args} --json "${json_path}"
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "weft-sim ${args}: exit status '${rc}'\n${out}${err}")
endif()
file(READ "${json_path}" json)

# expect(<what> <got> <wanted>)
function(expect what got wanted)
  if(NOT "${got}" STREQUAL "${wanted}")
    message(FATAL_ERROR "${what}: '${got}' in the JSON, expected '${wanted}'"
                        "\n${out}\n${json}")
  endif()
endfunction()

# The arguments as given on the command line.
set(given "")
list(LENGTH args nargs)
math(EXPR last "${nargs} - 2")
foreach(i RANGE 0 ${last})
  list(GET args ${i} opt)
  math(EXPR i1 "${i} + 1")
  list(GET args ${i1} val)
  string(REGEX REPLACE "^--" "" key "${opt}")
  set(given_${key} "${val}")
endforeach()

string(JSON format GET "${json}" format)
string(JSON version GET "${json}" version)
expect("format" "${format}" "weft-sim")
expect("version" "${version}" "1")
foreach(key scenario entities threads ticks seed)
  string(JSON v GET "${json}" args ${key})
  expect("args.${key}" "${v}" "${given_${key}}")
endforeach()
string(JSON v GET "${json}" run threads)
expect("run.threads" "${v}" "${given_threads}")

# Values the text report prints.
string(REGEX MATCH "digest ([0-9a-f]+)" m "${out}")
set(text_digest "${CMAKE_MATCH_1}")
string(JSON v GET "${json}" digest)
expect("digest" "${v}" "${text_digest}")
string(REGEX MATCH "sync points ([0-9]+), schedule builds ([0-9]+)" m "${out}")
set(text_syncs ${CMAKE_MATCH_1})
set(text_builds ${CMAKE_MATCH_2})
string(JSON v GET "${json}" sync_points)
expect("sync_points" "${v}" "${text_syncs}")
string(JSON v GET "${json}" schedule_builds)
expect("schedule_builds" "${v}" "${text_builds}")

string(REPLACE "\n" ";" lines "${out}")

# Phases: all five by name; the text lists those that ran, with their runs
# and sync points.
set(phase_names PreUpdate FixedUpdate PostFixedUpdate NetworkTick PreRender)
string(JSON n LENGTH "${json}" phases)
expect("phases" "${n}" "5")
set(text_phases 0)
foreach(line IN LISTS lines)
  if(line MATCHES "^  ([A-Za-z]+) +([0-9]+) +[0-9.]+ +[0-9.]+ +([0-9]+)$")
    set(text_phase_${CMAKE_MATCH_1} "${CMAKE_MATCH_2};${CMAKE_MATCH_3}")
    math(EXPR text_phases "${text_phases} + 1")
  endif()
endforeach()
set(json_phases 0)
foreach(i RANGE 4)
  list(GET phase_names ${i} want)
  string(JSON name GET "${json}" phases ${i} name)
  expect("phases[${i}].name" "${name}" "${want}")
  string(JSON runs GET "${json}" phases ${i} runs)
  string(JSON syncs GET "${json}" phases ${i} sync_points)
  if(runs GREATER 0)
    math(EXPR json_phases "${json_phases} + 1")
    expect("phase ${name} runs;sync_points" "${runs};${syncs}"
           "${text_phase_${name}}")
  endif()
endforeach()
expect("phases that ran" "${json_phases}" "${text_phases}")

# Systems: the same rows as the text (name, runs, entities, jobs), each in
# a phase named above.
set(text_systems 0)
foreach(line IN LISTS lines)
  if(line MATCHES "^  ([^ ]+) +([0-9]+) +([0-9]+) +[0-9.]+ +[0-9.]+ +([0-9]+) +[0-9.]+$")
    set(text_sys_${CMAKE_MATCH_1} "${CMAKE_MATCH_2};${CMAKE_MATCH_3};${CMAKE_MATCH_4}")
    math(EXPR text_systems "${text_systems} + 1")
  endif()
endforeach()
string(JSON n LENGTH "${json}" systems)
expect("systems" "${n}" "${text_systems}")
math(EXPR last "${n} - 1")
foreach(i RANGE ${last})
  string(JSON name GET "${json}" systems ${i} name)
  string(JSON phase GET "${json}" systems ${i} phase)
  if(NOT phase IN_LIST phase_names)
    message(FATAL_ERROR "system ${name}: phase '${phase}' is not a phase name")
  endif()
  foreach(f runs entities jobs)
    string(JSON ${f} GET "${json}" systems ${i} ${f})
  endforeach()
  expect("system ${name} runs;entities;jobs" "${runs};${entities};${jobs}"
         "${text_sys_${name}}")
endforeach()

# Workers: jobs, busy %, steals, remote steals and sleeps as in the text.
string(JSON n LENGTH "${json}" workers)
expect("workers" "${n}" "${given_threads}")
math(EXPR last "${n} - 1")
foreach(line IN LISTS lines)
  if(line MATCHES "^  ([0-9]+) +([0-9]+) +([0-9.]+|driver) +([0-9]+) +([0-9]+) +([0-9]+)$")
    set(text_worker_${CMAKE_MATCH_1}
        "${CMAKE_MATCH_2};${CMAKE_MATCH_4};${CMAKE_MATCH_5};${CMAKE_MATCH_6}")
    set(text_busy_${CMAKE_MATCH_1} "${CMAKE_MATCH_3}")
  endif()
endforeach()
foreach(k RANGE ${last})
  string(JSON index GET "${json}" workers ${k} index)
  expect("workers[${k}].index" "${index}" "${k}")
  foreach(f jobs steals remote_steals sleeps rescues busy_ns idle_ns)
    string(JSON ${f} GET "${json}" workers ${k} ${f})
  endforeach()
  expect("worker ${k} jobs;steals;remote_steals;sleeps"
         "${jobs};${steals};${remote_steals};${sleeps}" "${text_worker_${k}}")
  string(JSON type TYPE "${json}" workers ${k} busy_pct)
  if(text_busy_${k} STREQUAL "driver")
    expect("worker ${k} busy_pct type" "${type}" "NULL")
  else()
    # CMake has no floating point: compare tenths of a percent, from the
    # worker's nanoseconds, the text's one decimal and the JSON's value.
    string(JSON busy GET "${json}" workers ${k} busy_pct)
    math(EXPR all "${busy_ns} + ${idle_ns}")
    math(EXPR tenths "(${busy_ns} * 1000 + ${all} / 2) / ${all}")
    string(REPLACE "." "" text_tenths "${text_busy_${k}}")
    string(REGEX MATCH "^[0-9]+(\\.[0-9])?" json_tenths "${busy}")
    string(REPLACE "." "" json_tenths "${json_tenths}")
    if(NOT busy MATCHES "\\.")
      set(json_tenths "${json_tenths}0")
    endif()
    foreach(t ${text_tenths} ${json_tenths})
      math(EXPR d "${t} - ${tenths}")
      if(d GREATER 1 OR d LESS -1)
        message(FATAL_ERROR "worker ${k}: busy ${text_busy_${k}} % in the "
                            "text, ${busy} in the JSON, ${tenths} tenths "
                            "from its nanoseconds")
      endif()
    endforeach()
  endif()
endforeach()

# The pool: its size and the awake limit (a number, or null for none).
string(JSON v GET "${json}" pool workers)
expect("pool.workers" "${v}" "${given_threads}")
string(JSON type TYPE "${json}" pool awake_limit)
if(NOT type MATCHES "^(NUMBER|NULL)$")
  message(FATAL_ERROR "pool.awake_limit is a ${type}")
endif()
message(STATUS "weft-sim ${args}: --json agrees with the text report "
               "(digest ${text_digest}, ${text_systems} systems, ${n} workers)")
