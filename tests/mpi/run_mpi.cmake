# SPDX-License-Identifier: MIT
# Runs tests/mpi/mpi_sim under mpirun at every rank count x thread count
# and checks what the ranks print (ctest label "mpi"):
#
#   cmake -DWEFT_MPIEXEC=mpirun -DWEFT_PROG=mpi_sim -DWEFT_SCENARIO=particles
#         -DWEFT_ARGS="ENTITIES;TICKS;SEED" -DWEFT_RANKS=1,2,3,4
#         -DWEFT_THREADS=1,2 [-DWEFT_EXPECT=digest|digest_any|empty|balanced|restart|error]
#         [-DWEFT_ERROR=regex] [-DWEFT_MPI_FLAGS=--bind-to,core]
#         [-DWEFT_STYLE=sim] [-DWEFT_DIR=scratch dir] [-DWEFT_MATCH=regex]
#         -P run_mpi.cmake
#
# WEFT_STYLE=sim runs weft-sim (--scenario S --entities E ...) instead of
# the positional arguments of mpi_sim; WEFT_EXTRA (a comma list) is added
# to its arguments, and a restart passes --checkpoint / --restore.
#
# digest: every run prints the same global digest and entity count, the
#         count given (nothing is lost or doubled).
# digest_any: the same, where the simulation despawns (any count).
# empty:  that too, and with more than one rank some rank owns nothing.
# balanced: that too, and with more than one rank the largest rank holds
#         at most 1.5 times the mean.
# costly: that too, and with more than one rank rank 0's share of the box
#         ("share S even E of it F") is below 0.8 of the even share: the
#         cuts moved away from the rank whose entities cost more (counting
#         alone keeps it near 1).
# far:    digest, and with more than 3 ranks some rank took the far
#         round ("far N", N > 0): entities reached ranks outside the
#         sender's 3 x 3 block.
# near:   digest, and no rank took the far round ("far 0" on every rank):
#         a slow run stays within each sender's 3 x 3 block.
# error:  every rank prints the same error line, matching WEFT_ERROR.
# restart: see below; with WEFT_DAMAGE=ON it then damages the checkpoint
#         (the index replaced by text, the index truncated inside its
#         state, a rank file truncated, a rank file gone) and checks that
#         every rank of a restore prints the same error, and that none
#         hangs.
#         With WEFT_AT_ONCE=ON, restores on 1 and on the largest rank
#         count that run no tick print the saved run's digest.
#         With WEFT_DAMAGE=arena (WEFT_STYLE=sim, the arena) it restores
#         instead with half the entities (another scene: the arena
#         section's squads do not fit) and from a particles checkpoint (no
#         arena section), and checks that every rank prints the same
#         error naming the arena section, and that none hangs.
# WEFT_MATCH (any expectation but error and restart): the output of every
#         run on more than one rank matches it (what the test set up
#         happened there).

# Fails unless a run of n ranks exited non-zero and each of its n ranks
# printed one line "<prefix><text>" in `log`, all with the same text, which
# matches `want`; `shown` is what a failure prints.
function(same_error_everywhere cmd_text n rc log prefix want shown)
  string(REGEX MATCHALL "${prefix}[^\n]*" lines "${log}")
  list(LENGTH lines count)
  if(NOT count EQUAL n OR rc EQUAL 0)
    message(FATAL_ERROR "${cmd_text}: ${count} of ${n} ranks reported "
                        "the error (exit ${rc}):\n${shown}")
  endif()
  set(seen "")
  foreach(line IN LISTS lines)
    string(REGEX REPLACE "^${prefix}" "" text "${line}")
    if(NOT text MATCHES "${want}")
      message(FATAL_ERROR "${cmd_text}: '${text}' does not match '${want}'")
    endif()
    if(seen STREQUAL "")
      set(seen "${text}")
    elseif(NOT seen STREQUAL text)
      message(FATAL_ERROR "${cmd_text}: ranks disagree: '${seen}' and "
                          "'${text}'")
    endif()
  endforeach()
endfunction()

foreach(var WEFT_MPIEXEC WEFT_PROG WEFT_SCENARIO WEFT_ARGS WEFT_RANKS
            WEFT_THREADS)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "run_mpi.cmake: ${var} is not set")
  endif()
endforeach()
if(NOT WEFT_EXPECT)
  set(WEFT_EXPECT digest)
endif()
string(REPLACE "," ";" ranks "${WEFT_RANKS}")
string(REPLACE "," ";" threads "${WEFT_THREADS}")
string(REPLACE "," ";" args "${WEFT_ARGS}")
list(GET args 0 entities)
list(GET args 1 ticks)
list(GET args 2 seed)
string(REPLACE "," ";" mpi_flags "${WEFT_MPI_FLAGS}")
string(REPLACE "," ";" extra_args "${WEFT_EXTRA}")

# restart: the digest of a straight run of TICKS on one rank equals that
# of TICKS/2 on the largest rank count, checkpointed (WEFT_DIR), then
# restored for the rest on every rank count.
if(WEFT_EXPECT STREQUAL "restart")
  list(GET threads 0 t)
  list(GET ranks -1 most)
  math(EXPR half "${ticks} / 2")
  math(EXPR rest "${ticks} - ${half}")
  file(REMOVE_RECURSE "${WEFT_DIR}")
  file(MAKE_DIRECTORY "${WEFT_DIR}")
  function(run_sim n k extra out_var)
    if(WEFT_STYLE STREQUAL "sim")
      string(REGEX REPLACE "^save:" "--checkpoint;" extra "${extra}")
      string(REGEX REPLACE "^load:" "--restore;" extra "${extra}")
      set(cmd ${WEFT_MPIEXEC} --oversubscribe -n ${n} ${WEFT_PROG}
              --scenario ${WEFT_SCENARIO} --entities ${entities} --ticks ${k}
              --threads ${t} --seed ${seed} ${extra})
    else()
      set(cmd ${WEFT_MPIEXEC} --oversubscribe -n ${n} ${WEFT_PROG}
              ${WEFT_SCENARIO} ${entities} ${k} ${t} ${seed} ${extra})
    endif()
    list(JOIN cmd " " cmd_text)
    execute_process(COMMAND ${cmd} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                    ERROR_VARIABLE err TIMEOUT 240)
    message(STATUS "${cmd_text}: exit ${rc}\n${out}")
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "${cmd_text} failed (${rc}):\n${out}\n${err}")
    endif()
    string(REGEX MATCH "digest 0x[0-9a-f]+ entities [0-9]+" got "${out}")
    set(${out_var} "${got}" PARENT_SCOPE)
  endfunction()
  run_sim(1 ${ticks} "" straight)
  run_sim(${most} ${half} "save:${WEFT_DIR}/ck" saved)
  foreach(n IN LISTS ranks)
    run_sim(${n} ${rest} "load:${WEFT_DIR}/ck" restored)
    if(NOT restored STREQUAL straight OR straight STREQUAL "")
      message(FATAL_ERROR "restored on ${n} ranks: '${restored}', straight "
                          "run: '${straight}'")
    endif()
  endforeach()
  message(STATUS "restarts agree with the straight run: ${straight}")
  if(WEFT_AT_ONCE)
    # A restore that runs no tick holds what the saved run ended with.
    foreach(n 1 ${most})
      run_sim(${n} 0 "load:${WEFT_DIR}/ck" resumed)
      if(NOT resumed STREQUAL saved OR saved STREQUAL "")
        message(FATAL_ERROR "restored on ${n} ranks for 0 ticks: "
                            "'${resumed}', saved run: '${saved}'")
      endif()
    endforeach()
    message(STATUS "restores of 0 ticks hold the saved state: ${saved}")
  endif()
  if(WEFT_DAMAGE STREQUAL "arena")
    # Each bad restore on 1 and on the largest rank count: every rank's
    # "weft-sim: rank R: ..." line (stderr) the same, naming the section.
    math(EXPR fewer "${entities} / 2")
    set(cmd ${WEFT_MPIEXEC} --oversubscribe -n ${most} ${WEFT_PROG}
            --scenario particles --entities ${entities} --ticks 1 --threads 1
            --seed ${seed} --checkpoint ${WEFT_DIR}/pk)
    execute_process(COMMAND ${cmd} RESULT_VARIABLE rc OUTPUT_QUIET
                    ERROR_VARIABLE err TIMEOUT 120)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "the particles checkpoint failed (${rc}): ${err}")
    endif()
    set(bads "${fewer}|ck|arena section holds [0-9]+ squads, this scene"
             "${entities}|pk|pk\\.index holds no arena section")
    foreach(bad IN LISTS bads)
      string(REPLACE "|" ";" b "${bad}")
      list(GET b 0 e)
      list(GET b 1 which)
      list(GET b 2 want)
      foreach(n 1 ${most})
        set(cmd ${WEFT_MPIEXEC} --oversubscribe -n ${n} ${WEFT_PROG}
                --scenario ${WEFT_SCENARIO} --entities ${e} --ticks ${rest}
                --threads 1 --seed ${seed} --restore ${WEFT_DIR}/${which})
        list(JOIN cmd " " cmd_text)
        execute_process(COMMAND ${cmd} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                        ERROR_VARIABLE err TIMEOUT 120)
        message(STATUS "${cmd_text}: exit ${rc}\n${err}")
        same_error_everywhere("${cmd_text}" ${n} ${rc} "${err}"
                              "weft-sim: rank [0-9]+: "
                              "WEFT_EFORMAT: .*${want}" "${out}\n${err}")
      endforeach()
    endforeach()
    message(STATUS "bad arena checkpoints: the same error on every rank")
  elseif(WEFT_DAMAGE)
    # Each damage on a copy of the checkpoint; the restore runs on 1 and
    # on the largest rank count.
    set(damages "index:text" "index:40" "2:200" "3:gone")
    foreach(damage IN LISTS damages)
      string(REPLACE ":" ";" d "${damage}")
      list(GET d 0 which)
      list(GET d 1 how)
      file(REMOVE_RECURSE "${WEFT_DIR}/bad")
      file(MAKE_DIRECTORY "${WEFT_DIR}/bad")
      file(GLOB saved_files "${WEFT_DIR}/ck.*")
      file(COPY ${saved_files} DESTINATION "${WEFT_DIR}/bad")
      set(victim "${WEFT_DIR}/bad/ck.${which}")
      if(how STREQUAL "text")
        file(WRITE "${victim}" "not a checkpoint\n")
      elseif(how STREQUAL "gone")
        file(REMOVE "${victim}")
      else()
        execute_process(COMMAND truncate -s ${how} "${victim}"
                        RESULT_VARIABLE trc)
        if(NOT trc EQUAL 0)
          message(FATAL_ERROR "truncate ${victim} failed")
        endif()
      endif()
      foreach(n 1 ${most})
        set(cmd ${WEFT_MPIEXEC} --oversubscribe -n ${n} ${WEFT_PROG}
                ${WEFT_SCENARIO} ${entities} ${rest} ${t} ${seed}
                "load:${WEFT_DIR}/bad/ck")
        list(JOIN cmd " " cmd_text)
        execute_process(COMMAND ${cmd} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                        ERROR_VARIABLE err TIMEOUT 120)
        message(STATUS "${cmd_text} (ck.${which} ${how}): exit ${rc}\n${out}")
        same_error_everywhere(
          "${cmd_text}" ${n} ${rc} "${out}" "rank [0-9]+ error: "
          "WEFT_EFORMAT: weft_mpi checkpoint .*ck\\.${which}" "${out}\n${err}")
      endforeach()
    endforeach()
    message(STATUS "damaged checkpoints: the same error on every rank")
  endif()
  return()
endif()

set(first "")
foreach(n IN LISTS ranks)
  foreach(t IN LISTS threads)
    if(WEFT_STYLE STREQUAL "sim")
      set(prog_args --scenario ${WEFT_SCENARIO} --entities ${entities}
                    --ticks ${ticks} --threads ${t} --seed ${seed}
                    ${extra_args})
    else()
      set(prog_args ${WEFT_SCENARIO} ${entities} ${ticks} ${t} ${seed})
    endif()
    set(cmd ${WEFT_MPIEXEC} --oversubscribe ${mpi_flags} -n ${n} ${WEFT_PROG}
            ${prog_args})
    list(JOIN cmd " " cmd_text)
    execute_process(COMMAND ${cmd} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                    ERROR_VARIABLE err TIMEOUT 240)
    message(STATUS "${cmd_text}: exit ${rc}\n${out}")
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "${cmd_text} failed (${rc}):\n${out}\n${err}")
    endif()
    if(WEFT_EXPECT STREQUAL "error")
      string(REGEX MATCHALL "rank [0-9]+ error: [^\n]*" lines "${out}")
      list(LENGTH lines count)
      if(NOT count EQUAL n)
        message(FATAL_ERROR "${cmd_text}: ${count} of ${n} ranks reported "
                            "the error:\n${out}\n${err}")
      endif()
      set(seen "")
      foreach(line IN LISTS lines)
        string(REGEX REPLACE "^rank [0-9]+ error: " "" text "${line}")
        if(NOT text MATCHES "${WEFT_ERROR}")
          message(FATAL_ERROR "${cmd_text}: '${text}' does not match "
                              "'${WEFT_ERROR}'")
        endif()
        if(seen STREQUAL "")
          set(seen "${text}")
        elseif(NOT seen STREQUAL text)
          message(FATAL_ERROR "${cmd_text}: ranks disagree: '${seen}' and "
                              "'${text}'")
        endif()
      endforeach()
      continue()
    endif()
    string(REGEX MATCH "digest 0x[0-9a-f]+ entities [0-9]+" got "${out}")
    if(got STREQUAL "")
      message(FATAL_ERROR "${cmd_text}: no digest line:\n${out}\n${err}")
    endif()
    string(REGEX MATCHALL "rank [0-9]+ local" locals "${out}")
    list(LENGTH locals count)
    if(NOT count EQUAL n)
      message(FATAL_ERROR "${cmd_text}: ${count} of ${n} ranks finished")
    endif()
    if(NOT WEFT_EXPECT STREQUAL "digest_any" AND
       NOT got MATCHES "entities ${entities}$")
      message(FATAL_ERROR "${cmd_text}: entities lost or doubled: ${got}")
    endif()
    if(first STREQUAL "")
      set(first "${got}")
      set(first_cmd "${cmd_text}")
    elseif(NOT first STREQUAL got)
      message(FATAL_ERROR "digests differ:\n  ${first_cmd}: ${first}\n"
                          "  ${cmd_text}: ${got}")
    endif()
    if(WEFT_EXPECT STREQUAL "balanced" AND n GREATER 1)
      string(REGEX MATCH "imbalance ([0-9.]+)" imb "${out}")
      if(NOT imb OR CMAKE_MATCH_1 GREATER 1.5)
        message(FATAL_ERROR "${cmd_text}: not balanced ('${imb}'):\n${out}")
      endif()
    endif()
    if(WEFT_EXPECT STREQUAL "costly" AND n GREATER 1)
      string(REGEX MATCH "share [0-9.]+ even [0-9.]+ of it ([0-9.]+)" share
             "${out}")
      if(NOT share OR NOT CMAKE_MATCH_1 LESS 0.8)
        message(FATAL_ERROR "${cmd_text}: the cuts did not move away from "
                            "the costly rank ('${share}'):\n${out}")
      endif()
    endif()
    if(WEFT_EXPECT STREQUAL "far" AND n GREATER 3 AND
       NOT out MATCHES "far [1-9]")
      message(FATAL_ERROR "${cmd_text}: no rank took the far round:\n${out}")
    endif()
    if(WEFT_EXPECT STREQUAL "near")
      string(REGEX MATCHALL "far 0\n" nears "${out}")
      list(LENGTH nears near_count)
      if(NOT near_count EQUAL n)
        message(FATAL_ERROR "${cmd_text}: a rank took the far round:\n${out}")
      endif()
    endif()
    if(WEFT_MATCH AND n GREATER 1 AND NOT out MATCHES "${WEFT_MATCH}")
      message(FATAL_ERROR "${cmd_text}: the output does not match "
                          "'${WEFT_MATCH}':\n${out}")
    endif()
    if(WEFT_EXPECT STREQUAL "empty" AND n GREATER 1 AND
       NOT out MATCHES "local 0 ")
      message(FATAL_ERROR "${cmd_text}: no rank's region emptied:\n${out}")
    endif()
  endforeach()
endforeach()
message(STATUS "all runs agree: ${first}")
