# Included by the cmake -P scripts that compare kbuf-tebd runs (check_ranks.cmake,
# tests/foreign/check_same_energies.cmake).
#
# tebd_runs(<name> <command> <tail>): runs <command> (a ;-list), fails unless it exits 0, and sets
# <name>_out (its output and errors) and <name>_runs (its run lines, "model ... strategy S:
# energy per site E ...", each cut after the first match of the regular expression <tail>) in
# the caller's scope.
function(tebd_runs name command tail)
  execute_process(COMMAND ${command} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc STREQUAL "0")
    message(FATAL_ERROR "${name}: exit status ${rc}, expected 0\n${out}${err}")
  endif()
  string(REGEX MATCHALL "(^|\n)model [^\n]*${tail}" found "${out}")
  set(runs)
  foreach(line IN LISTS found)
    string(STRIP "${line}" line)
    list(APPEND runs "${line}")
  endforeach()
  set(${name}_out "${out}${err}" PARENT_SCOPE)
  set(${name}_runs "${runs}" PARENT_SCOPE)
endfunction()
