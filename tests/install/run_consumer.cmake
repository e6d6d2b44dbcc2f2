# cmake -P script: configure, build and run a consumer project; fails on any step's failure.
# Inputs: SOURCE, BINARY, CXX, ARGS (a ;-list of extra configure arguments), INSTALL_FROM and
# PREFIX (optional: install that build tree into PREFIX first).
if(INSTALL_FROM)
  file(REMOVE_RECURSE "${PREFIX}")
  execute_process(COMMAND "${CMAKE_COMMAND}" --install "${INSTALL_FROM}" --prefix "${PREFIX}"
                  RESULT_VARIABLE rc)
  if(rc)
    message(FATAL_ERROR "installing kbuf into ${PREFIX} failed")
  endif()
endif()
file(REMOVE_RECURSE "${BINARY}")
execute_process(COMMAND "${CMAKE_COMMAND}" -S "${SOURCE}" -B "${BINARY}" "-DCMAKE_CXX_COMPILER=${CXX}"
                        -DCMAKE_BUILD_TYPE=Release ${ARGS}
                RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "configuring the consumer failed")
endif()
execute_process(COMMAND "${CMAKE_COMMAND}" --build "${BINARY}" RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "building the consumer failed")
endif()
execute_process(COMMAND "${BINARY}/kbuf-consumer" RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "the consumer failed (exit ${rc})")
endif()
