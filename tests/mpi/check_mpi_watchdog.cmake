# Expects: in a 4-rank job whose rank 3 stops before its 5th allreduce and sleeps (lost without
# exiting), the three others, stuck in that collective, are ended by the MPI watchdog
# (TESSERA_MPI_TIMEOUT=3): the job exits non-zero and the output names a waiting rank, the call and
# its file:line. Without the watchdog the job would wait for an hour: the TIMEOUT below turns that
# into a failure. A control run with the watchdog armed and no stall must succeed (the watchdog
# does not end healthy calls).
set(ENV{TESSERA_MPI_TIMEOUT} "3")
execute_process(COMMAND ${MPIEXEC} ${NP_FLAG} 4 ${OVERSUBSCRIBE} ${PROBE}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 30)
if(NOT rc EQUAL 0 OR NOT out MATCHES "fault probe finished")
  message(FATAL_ERROR "control run with the watchdog armed failed (status ${rc}):\n${out}\n${err}")
endif()

set(ENV{TESSERA_PROBE_STALL} "3:5")
string(TIMESTAMP t0 "%s")
execute_process(COMMAND ${MPIEXEC} ${NP_FLAG} 4 ${OVERSUBSCRIBE} ${PROBE}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 40)
string(TIMESTAMP t1 "%s")
math(EXPR elapsed "${t1} - ${t0}")
message(STATUS "status ${rc} after about ${elapsed} s\n${out}\n${err}")
if(rc MATCHES "timeout|Process terminated due to timeout")
  message(FATAL_ERROR "the job with a stalled rank hung: ${rc}")
endif()
if(rc EQUAL 0)
  message(FATAL_ERROR "the job with a stalled rank exited with status 0")
endif()
if(NOT "${out}${err}" MATCHES "rank [012] on [^:]+: MPI call not returned after [0-9]+ s \\(TESSERA_MPI_TIMEOUT=3\\): MPI_Allreduce[^\n]* at [^\n]*comm\\.cpp:[0-9]+")
  message(FATAL_ERROR "the watchdog's message (a waiting rank, the call, file:line) is missing")
endif()
if("${out}" MATCHES "fault probe finished")
  message(FATAL_ERROR "rank 0 finished although rank 3 never joined")
endif()

set(ENV{TESSERA_PROBE_STALL} "")
set(ENV{TESSERA_MPI_TIMEOUT} "soon")
execute_process(COMMAND ${MPIEXEC} ${NP_FLAG} 2 ${OVERSUBSCRIBE} ${PROBE}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 30)
if(rc EQUAL 0 OR NOT "${out}${err}" MATCHES "TESSERA_MPI_TIMEOUT: 'soon' is not a number of seconds")
  message(FATAL_ERROR "a malformed TESSERA_MPI_TIMEOUT was not refused by name (status ${rc}):\n${out}\n${err}")
endif()
