# cmake -P script: runs COMMAND (a ;-list) twice with KBUF_SIZES=FILE (removed first). Both runs
# must exit 0; the first learns (fallbacks) and says so in its "kbuf sizes:" line, the second
# starts from the sizes the first saved and makes no fallback and no regrowth.
#   -DCOMMAND=... -DFILE=path
file(REMOVE "${FILE}")
set(first_line "kbuf sizes: nothing saved in [^\n]* made [1-9][0-9]* fallbacks? and [0-9]+ regrowths? while learning")
set(second_line "kbuf sizes: started from the [1-9][0-9]* sizes? saved in [^\n]* made 0 fallbacks and 0 regrowths from their first step")
foreach(run first second)
  execute_process(COMMAND "${CMAKE_COMMAND}" -E env "KBUF_SIZES=${FILE}" ${COMMAND}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${run} run: exit status ${rc}\n${out}${err}")
  endif()
  if(NOT out MATCHES "${${run}_line}")
    message(FATAL_ERROR "${run} run: no line matching '${${run}_line}':\n${out}${err}")
  endif()
  string(REGEX MATCH "kbuf sizes: [^\n]*" said "${out}")
  message(STATUS "${run} run: ${said}")
endforeach()
