# examples/spectral_heat.cpp stopped and resumed: run straight to step 40 on 4 ranks; to step 25 on 3
# ranks with checkpoints (every 10 and at the end); from that checkpoint to step 40 on 2 ranks. Each
# run must exit 0 (its error within the bound), the resumed run must say it resumed at step 25, and
# its checksum of the field must be the straight run's. A file that is not a checkpoint is refused
# (exit 2) and left as it was.
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
set(grid 17 12 11)

function(heat np out)
  execute_process(COMMAND ${MPIEXEC} ${NP_FLAG} ${np} ${OVERSUBSCRIBE} ${APP} ${ARGN}
    WORKING_DIRECTORY ${WORK} RESULT_VARIABLE rc OUTPUT_VARIABLE stdout ERROR_VARIABLE stderr TIMEOUT 60)
  set(${out}_rc "${rc}" PARENT_SCOPE)
  set(${out} "${stdout}${stderr}" PARENT_SCOPE)
endfunction()

function(checksum_of text out)
  string(REGEX MATCH "step ([0-9]+), [^\n]* checksum ([0-9a-f]+)" m "${text}")
  if(NOT m)
    message(FATAL_ERROR "no result line in:\n${text}")
  endif()
  set(${out} "${CMAKE_MATCH_1}:${CMAKE_MATCH_2}" PARENT_SCOPE)
endfunction()

heat(4 straight ${grid} 40)
if(NOT straight_rc EQUAL 0)
  message(FATAL_ERROR "straight run: exit ${straight_rc}\n${straight}")
endif()
checksum_of("${straight}" want)

heat(3 first ${grid} 25 --checkpoint ck.h5 --every 10)
if(NOT first_rc EQUAL 0 OR NOT EXISTS ${WORK}/ck.h5)
  message(FATAL_ERROR "first part: exit ${first_rc}, or no ck.h5\n${first}")
endif()
heat(2 resumed ${grid} 40 --restart ck.h5)
if(NOT resumed_rc EQUAL 0 OR NOT resumed MATCHES "resumed from ck.h5 at step 25")
  message(FATAL_ERROR "resumed run: exit ${resumed_rc}\n${resumed}")
endif()
checksum_of("${resumed}" got)
if(NOT got STREQUAL want)
  message(FATAL_ERROR "resumed from step 25 on 2 ranks: ${got}; straight on 4 ranks: ${want}\n${resumed}\n${straight}")
endif()

file(WRITE ${WORK}/notes.h5 "not HDF5, and not to be replaced")
heat(2 refused ${grid} 5 --checkpoint notes.h5)
file(READ ${WORK}/notes.h5 kept)
if(NOT refused_rc EQUAL 2 OR NOT kept STREQUAL "not HDF5, and not to be replaced")
  message(FATAL_ERROR "a checkpoint over a file that is not one: exit ${refused_rc}, file now '${kept}'\n${refused}")
endif()
message(STATUS "spectral_heat: straight ${want}, resumed ${got}; a foreign file refused")
