# cmake -DSOURCE=<dir> [-DLINK_TO=<dir>] -DBINARY=<dir> -DREGEX=<regex> -DARGS=<arg;...>
#       -P expect_configure_fail.cmake
# Configures the project in SOURCE (made a symbolic link to LINK_TO first, when they differ) into
# BINARY with ARGS; passes when the configure fails and its output, with every run of white space
# folded to one space, matches REGEX. CMake wraps its messages at a fixed width, so the raw line
# breaks depend on the length of the paths printed; the folded text does not.
cmake_minimum_required(VERSION 3.16)
foreach(var SOURCE BINARY REGEX)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "expect_configure_fail.cmake: -D${var}=... is missing")
  endif()
endforeach()

if(DEFINED LINK_TO AND NOT SOURCE STREQUAL LINK_TO)
  get_filename_component(parent "${SOURCE}" DIRECTORY)
  file(MAKE_DIRECTORY "${parent}")
  file(REMOVE "${SOURCE}")
  file(CREATE_LINK "${LINK_TO}" "${SOURCE}" SYMBOLIC)
endif()
string(LENGTH "${SOURCE}" length)

set(args "")
foreach(arg IN LISTS ARGS)
  if(NOT arg STREQUAL "")
    list(APPEND args "${arg}")
  endif()
endforeach()
file(REMOVE_RECURSE "${BINARY}")
execute_process(COMMAND "${CMAKE_COMMAND}" -S "${SOURCE}" -B "${BINARY}" ${args}
                RESULT_VARIABLE result OUTPUT_VARIABLE out ERROR_VARIABLE out)
string(REGEX REPLACE "[ \t\r\n]+" " " folded "${out}")

if(result EQUAL 0)
  message(FATAL_ERROR "configuring ${SOURCE} (${length} characters) succeeded; it must fail.\n"
                      "Output:\n${out}")
endif()
if(NOT folded MATCHES "${REGEX}")
  message(FATAL_ERROR "configuring ${SOURCE} (${length} characters) failed, but its output "
                      "(white space folded) does not match\n  ${REGEX}\nOutput:\n${out}")
endif()
message(STATUS "configuring ${SOURCE} (${length} characters) failed as expected: matched ${REGEX}")
