# Properties for the tests a folder registered: a test's properties can be set only in its own
# folder, so each folder calls these at its end. Included by the top-level CMakeLists.txt.

# kbuf_label_folder_tests(<label>): adds <label> to every test the calling folder registered so
# far.
function(kbuf_label_folder_tests label)
  get_property(tests DIRECTORY PROPERTY TESTS)
  if(tests)
    set_property(TEST ${tests} APPEND PROPERTY LABELS ${label})
  endif()
endfunction()

# kbuf_own_mpi_session_dirs(): gives every test the calling folder registered so far a session
# folder of Open MPI's own (OMPI_MCA_orte_tmpdir_base under the build folder). Two programs that
# start Open MPI at once (kbuf-tebd runs as an MPI singleton) otherwise both make the shared
# /tmp/ompi.<host>.<uid>, and the one that loses fails with "mkdir ... File exists". Programs that
# do not use MPI ignore the variable.
function(kbuf_own_mpi_session_dirs)
  get_property(tests DIRECTORY PROPERTY TESTS)
  foreach(test IN LISTS tests)
    string(MAKE_C_IDENTIFIER "${test}" id)
    set_property(TEST "${test}" APPEND PROPERTY ENVIRONMENT
                 "OMPI_MCA_orte_tmpdir_base=${PROJECT_BINARY_DIR}/ompi-sessions/${id}")
  endforeach()
endfunction()

# kbuf_pin_switches(): no verdict of the calling folder's tests so far follows the environment of
# the run: each runs with kbuf's run-time switches as the doctest executables set them for
# themselves (tests/support/doctest_run.hpp): pass-through off (KBUF_PASSTHROUGH=0), records for
# Kokkos Tools on (KBUF_TOOLS_REPORT=1), no saved sizes (KBUF_SIZES empty: none is loaded or
# saved) and growth by regrowth (KBUF_GROW_IN_PLACE=0). A test that sets one of them itself (its ENVIRONMENT, or `cmake -E env` in its command)
# keeps its own. Every folder that registers tests calls it at its end; the top-level
# CMakeLists.txt checks that none was missed (kbuf_check_switches_pinned). With MPI_SESSIONS, a
# folder whose tests start Open MPI also gives each its own session folder first
# (kbuf_own_mpi_session_dirs).
set(KBUF_PINNED_SWITCHES KBUF_PASSTHROUGH=0 KBUF_TOOLS_REPORT=1 KBUF_SIZES= KBUF_GROW_IN_PLACE=0)
function(kbuf_pin_switches)
  if(ARGV0 STREQUAL "MPI_SESSIONS")
    kbuf_own_mpi_session_dirs()
  endif()
  get_property(tests DIRECTORY PROPERTY TESTS)
  foreach(test IN LISTS tests)
    get_test_property("${test}" ENVIRONMENT env)
    if(NOT env)
      set(env "")
    endif()
    foreach(pin IN LISTS KBUF_PINNED_SWITCHES)
      string(REGEX REPLACE "=.*" "=" var "${pin}")
      string(FIND ";${env}" ";${var}" at)
      if(at EQUAL -1)
        set_property(TEST "${test}" APPEND PROPERTY ENVIRONMENT "${pin}")
      endif()
    endforeach()
  endforeach()
  list(LENGTH tests n)
  set_property(GLOBAL APPEND PROPERTY KBUF_PINNED_FOLDERS "${CMAKE_CURRENT_SOURCE_DIR}=${n}")
endfunction()

# kbuf_check_switches_pinned(<folder>): fails the configuration when a folder below <folder>
# registered tests that kbuf_pin_switches() did not see.
function(kbuf_check_switches_pinned folder)
  get_property(pinned GLOBAL PROPERTY KBUF_PINNED_FOLDERS)
  get_property(tests DIRECTORY "${folder}" PROPERTY TESTS)
  list(LENGTH tests n)
  if(n GREATER 0 AND NOT "${folder}=${n}" IN_LIST pinned)
    message(FATAL_ERROR "kbuf: ${folder} registers ${n} tests after (or without) "
                        "kbuf_pin_switches() at its end (cmake/kbufTestProperties.cmake)")
  endif()
  get_property(subfolders DIRECTORY "${folder}" PROPERTY SUBDIRECTORIES)
  foreach(sub IN LISTS subfolders)
    kbuf_check_switches_pinned("${sub}")
  endforeach()
endfunction()
