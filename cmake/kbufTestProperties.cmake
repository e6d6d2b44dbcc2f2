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
