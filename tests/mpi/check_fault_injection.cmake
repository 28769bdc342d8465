# Expects: a 4-rank job in which rank 2 fails inside its 5th allreduce ends with a non-zero status,
# and its output names the failing rank and the file:line of the failure. The test's TIMEOUT
# turns a hang (three ranks waiting in the collective) into a failure. A control run without the
# fault must succeed, so that the test cannot pass merely because the probe is broken.
execute_process(COMMAND ${MPIEXEC} ${NP_FLAG} 4 ${OVERSUBSCRIBE} ${PROBE}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 30)
if(NOT rc EQUAL 0 OR NOT out MATCHES "fault probe finished")
  message(FATAL_ERROR "control run without a fault failed (status ${rc}):\n${out}\n${err}")
endif()

set(ENV{TESSERA_INJECT_FAULT} "2:allreduce:5")
string(TIMESTAMP t0 "%s")
execute_process(COMMAND ${MPIEXEC} ${NP_FLAG} 4 ${OVERSUBSCRIBE} ${PROBE}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 45)
string(TIMESTAMP t1 "%s")
math(EXPR elapsed "${t1} - ${t0}")
message(STATUS "status ${rc} after about ${elapsed} s\n${out}\n${err}")
if(rc EQUAL 0)
  message(FATAL_ERROR "the job with an injected fault exited with status 0")
endif()
if(rc MATCHES "timeout|Process terminated due to timeout")
  message(FATAL_ERROR "the job with an injected fault hung: ${rc}")
endif()
if(NOT "${out}${err}" MATCHES "rank 2 on [^:]+: fatal error at [^\n]*comm\\.cpp:[0-9]+: allreduce: injected fault")
  message(FATAL_ERROR "the failing rank's message (rank 2, file:line, the call) is missing")
endif()
if("${out}" MATCHES "fault probe finished")
  message(FATAL_ERROR "rank 0 finished although rank 2 failed")
endif()
