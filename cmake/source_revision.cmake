# Writes OUTPUT, a header defining TESSERA_SOURCE_REVISION as `git describe --always --dirty --tags`
# of SOURCE_DIR (or "unknown" where SOURCE_DIR is not the top of a git checkout: a tarball unpacked
# inside another project's checkout must not report that project's revision), and leaves the file untouched where it
# already says that, so that only a new revision recompiles what includes it. Run at every build:
#   cmake -DSOURCE_DIR=... -DGIT_EXECUTABLE=... -DOUTPUT=... -P source_revision.cmake
set(_revision unknown)
if(GIT_EXECUTABLE)
  execute_process(COMMAND ${GIT_EXECUTABLE} -C ${SOURCE_DIR} rev-parse --show-toplevel
    OUTPUT_VARIABLE _top OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE _status ERROR_QUIET)
  if(_status EQUAL 0 AND _top)
    file(REAL_PATH "${_top}" _top)
    file(REAL_PATH "${SOURCE_DIR}" _source)
    if(_top STREQUAL _source)
      execute_process(COMMAND ${GIT_EXECUTABLE} -C ${SOURCE_DIR} describe --always --dirty --tags
        OUTPUT_VARIABLE _described OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE _status ERROR_QUIET)
      if(_status EQUAL 0 AND _described)
        set(_revision ${_described})
      endif()
    endif()
  endif()
endif()
set(_content "// Generated at build time: `git describe --always --dirty --tags` of the source tree, or unknown.\n#pragma once\n#define TESSERA_SOURCE_REVISION \"${_revision}\"\n")
set(_old "")
if(EXISTS ${OUTPUT})
  file(READ ${OUTPUT} _old)
endif()
if(NOT _old STREQUAL _content)
  file(WRITE ${OUTPUT} "${_content}")
endif()
