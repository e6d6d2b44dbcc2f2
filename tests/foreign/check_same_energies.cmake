# cmake -P script: kbuf-tebd over the foreign space against the default build. Runs HOST and
# FOREIGN (;-lists: the two executables with the same arguments); both must exit 0 and print the
# same runs in the same order: the same model, field, chi and strategy, the same exact energy,
# steps and bond dimension reached, and energies per site within one unit of the last printed
# digit (1e-10: the two builds' GEMMs may round differently; the foreign space's are Kokkos
# Kernels' own kernels, the host's may be BLAS). FOREIGN must name the foreign memory space.
#   -DHOST=... -DFOREIGN=...
function(run_tebd name command)
  execute_process(COMMAND ${command} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc STREQUAL "0")
    message(FATAL_ERROR "${name}: exit status ${rc}, expected 0\n${out}${err}")
  endif()
  # "model M field F chi C strategy S: energy per site E exact X error D steps N ... chi reached R"
  string(REGEX MATCHALL "(^|\n)model [^\n]*chi reached [0-9]+" found "${out}")
  set(runs)
  foreach(line IN LISTS found)
    string(STRIP "${line}" line)
    list(APPEND runs "${line}")
  endforeach()
  set(${name}_out "${out}${err}" PARENT_SCOPE)
  set(${name}_runs "${runs}" PARENT_SCOPE)
endfunction()

# Splits a run line into the words compared exactly (KEY) and the energy as an integer count of
# 1e-10 (ENERGY): "-1.0635444087" is -10635444087.
function(split_run line key energy)
  set(re "^(model .* strategy [^:]*): energy per site (-?)([0-9]+)\\.([0-9]+) exact ([^ ]+) error [^ ]+ steps ([0-9]+) .* chi reached ([0-9]+)$")
  if(NOT line MATCHES "${re}")
    message(FATAL_ERROR "a run line of an unknown form: '${line}'")
  endif()
  string(LENGTH "${CMAKE_MATCH_4}" digits)
  if(NOT digits EQUAL 10)
    message(FATAL_ERROR "the energy in '${line}' has ${digits} decimals, expected 10")
  endif()
  set(${key} "${CMAKE_MATCH_1} exact ${CMAKE_MATCH_5} steps ${CMAKE_MATCH_6} chi reached ${CMAKE_MATCH_7}" PARENT_SCOPE)
  string(REGEX REPLACE "^0+([0-9])" "\\1" units "${CMAKE_MATCH_3}${CMAKE_MATCH_4}")
  set(${energy} "${CMAKE_MATCH_2}${units}" PARENT_SCOPE)
endfunction()

run_tebd(host "${HOST}")
run_tebd(foreign "${FOREIGN}")
if(NOT foreign_out MATCHES "memory space KbufForeignSpace")
  message(FATAL_ERROR "the foreign build does not say it ran in the foreign space:\n${foreign_out}")
endif()
list(LENGTH host_runs n)
list(LENGTH foreign_runs n_foreign)
if(n EQUAL 0 OR NOT n EQUAL n_foreign)
  message(FATAL_ERROR "${n} run lines from the default build, ${n_foreign} over the foreign space:\n"
                      "${host_out}\n----\n${foreign_out}")
endif()
math(EXPR last "${n} - 1")
foreach(i RANGE ${last})
  list(GET host_runs ${i} a)
  list(GET foreign_runs ${i} b)
  split_run("${a}" key_a e_a)
  split_run("${b}" key_b e_b)
  math(EXPR diff "${e_a} - (${e_b})")
  if(NOT key_a STREQUAL key_b OR diff GREATER 1 OR diff LESS -1)
    message(FATAL_ERROR "run ${i} differs over the foreign space:\n  default: ${a}\n  foreign: ${b}")
  endif()
  message(STATUS "same: ${b}")
endforeach()
message(STATUS "${n} runs over the foreign space give the default build's energies")
