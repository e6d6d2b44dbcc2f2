# cmake -P script: runs COMMAND (a ;-list) and fails unless it exits with CODE and its output
# matches MATCH (and, if NOMATCH is given, does not match NOMATCH).
#   -DCOMMAND=... -DCODE=n -DMATCH=regex [-DNOMATCH=regex]
execute_process(COMMAND ${COMMAND} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc STREQUAL "${CODE}")
  message(FATAL_ERROR "exit status ${rc}, expected ${CODE}\n${out}${err}")
endif()
if(NOT "${out}${err}" MATCHES "${MATCH}")
  message(FATAL_ERROR "output does not match '${MATCH}':\n${out}${err}")
endif()
if(DEFINED NOMATCH AND "${out}${err}" MATCHES "${NOMATCH}")
  message(FATAL_ERROR "output matches '${NOMATCH}':\n${out}${err}")
endif()
message(STATUS "exit status ${rc} and the expected message")
