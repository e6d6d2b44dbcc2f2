# kbuf's tests under mpirun. Included by the top-level CMakeLists.txt when KBUF_ENABLE_MPI is ON
# (after find_package(MPI COMPONENTS CXX)).
#
# kbuf_add_mpi_test(<name> RANKS <n> COMMAND <executable> [<argument>...]
#                   [PROPERTIES <name> <value>...])
# Registers the CTest test <name>, which runs <executable> on <n> ranks the way FindMPI says:
#   MPIEXEC_EXECUTABLE MPIEXEC_NUMPROC_FLAG <n> MPIEXEC_PREFLAGS <executable> MPIEXEC_POSTFLAGS
#   <argument>...
# labelled `mpi`, with PROCESSORS <n>. With Open MPI the preflags also get --oversubscribe (more
# ranks than cores, as on small CI machines) and --allow-run-as-root (CI roots and containers;
# harmless for other users). In AddressSanitizer builds LeakSanitizer skips Open MPI's own
# allocations (tests/mpi/lsan.supp). PROPERTIES are set on the test after those.

# Open MPI's mpirun refuses root without the flag and more ranks than cores without the other.
set(KBUF_MPIEXEC_PREFLAGS ${MPIEXEC_PREFLAGS})
execute_process(COMMAND ${MPIEXEC_EXECUTABLE} --version OUTPUT_VARIABLE _kbuf_mpiexec_version
                ERROR_QUIET RESULT_VARIABLE _kbuf_mpiexec_status)
if(_kbuf_mpiexec_status EQUAL 0 AND _kbuf_mpiexec_version MATCHES "Open MPI|OpenRTE")
  list(APPEND KBUF_MPIEXEC_PREFLAGS --oversubscribe --allow-run-as-root)
endif()

function(kbuf_add_mpi_test name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "RANKS" "COMMAND;PROPERTIES")
  if(NOT arg_RANKS OR NOT arg_COMMAND)
    message(FATAL_ERROR "kbuf_add_mpi_test(${name}): RANKS and COMMAND are required")
  endif()
  list(POP_FRONT arg_COMMAND executable)
  if(TARGET ${executable})
    set(executable $<TARGET_FILE:${executable}>)
  endif()
  add_test(NAME ${name}
           COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${arg_RANKS}
                   ${KBUF_MPIEXEC_PREFLAGS} ${executable} ${MPIEXEC_POSTFLAGS} ${arg_COMMAND})
  set_tests_properties(${name} PROPERTIES LABELS mpi PROCESSORS ${arg_RANKS} TIMEOUT 120)
  if(KBUF_MPI_TEST_ENVIRONMENT)  # kbufSanitize.cmake: LeakSanitizer skips Open MPI's memory
    set_property(TEST ${name} PROPERTY ENVIRONMENT "${KBUF_MPI_TEST_ENVIRONMENT}")
  endif()
  if(arg_PROPERTIES)
    set_tests_properties(${name} PROPERTIES ${arg_PROPERTIES})
  endif()
endfunction()
