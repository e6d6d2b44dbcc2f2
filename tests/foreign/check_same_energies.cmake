# cmake -P script: kbuf-tebd over the foreign space against the default build. Runs HOST and
# FOREIGN (;-lists: the two executables with the same arguments); both must exit 0 and print the
# same runs in the same order: the same model, field, chi and strategy, the same exact energy,
# steps and bond dimension reached, and energies per site that agree far better than either
# agrees with the exact energy: within 1 % of the default build's own error against it (at
# least one unit of the last printed digit, 1e-10). The two builds' GEMMs round differently (the
# foreign space's are Kokkos Kernels' own kernels, the host's may be BLAS; the compiler's flags
# change the last bits too), and hundreds of truncated steps carry those roundings into the
# energy: at chi 8 they move it by about 1e-9, while the method's error (truncation and Trotter
# steps) is several 1e-6. A bound tied to one build's last digits would fail in another's.
# FOREIGN must name the foreign memory space.
#   -DHOST=... -DFOREIGN=...
include("${CMAKE_CURRENT_LIST_DIR}/../../apps/tebd/tebd_runs.cmake")

# "-1.0635444087" as an integer count of 1e-10: -10635444087.
function(units_of value out)
  if(NOT value MATCHES "^(-?)([0-9]+)\\.([0-9]+)$")
    message(FATAL_ERROR "'${value}' is not a decimal number")
  endif()
  string(LENGTH "${CMAKE_MATCH_3}" digits)
  if(NOT digits EQUAL 10)
    message(FATAL_ERROR "'${value}' has ${digits} decimals, expected 10")
  endif()
  string(REGEX REPLACE "^0+([0-9])" "\\1" units "${CMAKE_MATCH_2}${CMAKE_MATCH_3}")
  set(${out} "${CMAKE_MATCH_1}${units}" PARENT_SCOPE)
endfunction()

# Splits a run line into the words compared exactly (KEY), the energy (ENERGY) and the exact
# energy (EXACT) as integer counts of 1e-10.
function(split_run line key energy exact)
  set(re "^(model .* strategy [^:]*): energy per site ([^ ]+) exact ([^ ]+) error [^ ]+ steps ([0-9]+) .* chi reached ([0-9]+)$")
  if(NOT line MATCHES "${re}")
    message(FATAL_ERROR "a run line of an unknown form: '${line}'")
  endif()
  set(${key} "${CMAKE_MATCH_1} exact ${CMAKE_MATCH_3} steps ${CMAKE_MATCH_4} chi reached ${CMAKE_MATCH_5}" PARENT_SCOPE)
  set(e "${CMAKE_MATCH_2}")
  set(x "${CMAKE_MATCH_3}")
  units_of("${e}" e_units)
  units_of("${x}" x_units)
  set(${energy} "${e_units}" PARENT_SCOPE)
  set(${exact} "${x_units}" PARENT_SCOPE)
endfunction()

function(abs_of value out)
  if(value LESS 0)
    math(EXPR value "-(${value})")
  endif()
  set(${out} "${value}" PARENT_SCOPE)
endfunction()

# "model M field F chi C strategy S: energy per site E exact X error D steps N ... chi reached R"
tebd_runs(host "${HOST}" "chi reached [0-9]+")
tebd_runs(foreign "${FOREIGN}" "chi reached [0-9]+")
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
  split_run("${a}" key_a e_a x_a)
  split_run("${b}" key_b e_b x_b)
  math(EXPR diff "${e_a} - (${e_b})")
  abs_of("${diff}" diff)
  math(EXPR error "${e_a} - (${x_a})")
  abs_of("${error}" error)
  math(EXPR tolerance "${error} / 100")
  if(tolerance LESS 1)
    set(tolerance 1)
  endif()
  if(NOT key_a STREQUAL key_b OR diff GREATER tolerance)
    message(FATAL_ERROR "run ${i} differs over the foreign space by ${diff}e-10 (allowed: "
                        "${tolerance}e-10, 1 % of the error ${error}e-10):\n  default: ${a}\n  foreign: ${b}")
  endif()
  message(STATUS "same within ${tolerance}e-10 (${diff}e-10 apart): ${b}")
endforeach()
message(STATUS "${n} runs over the foreign space give the default build's energies")
