# cmake -P script: KBUF_SIZES in whole processes. Runs PROGRAM (kbuf-test-sizes-env, or the MPI
# one under LAUNCH, a ;-list such as mpiexec -n 2) with KBUF_SIZES=FOLDER/sizes, as CASE says:
#   rerun             the first run (no file yet) learns and says so in one line; the second
#                     starts from the file: 0 fallbacks, 0 regrowths, nothing said
#   <kind>            a file that cannot be used (written by PROGRAM --write-bad <kind>): one
#                     line matching MATCH, a run that learns as usual, a file replaced by one the
#                     next run starts from
#   unreadable        the same with a file of mode 0
#   read_only_folder  a good file in a folder of mode 0555: the run starts from it and says once
#                     that it could not save
#   ranks             (MPI) one file, written once, holding each label's largest size over the
#                     ranks and every rank's own labels; the rerun starts from it on every rank
#   -DPROGRAM=... -DFOLDER=... -DCASE=... [-DMATCH=regex] [-DLAUNCH=...]
if(EXISTS "${FOLDER}")
  execute_process(COMMAND chmod -R u+rwx "${FOLDER}")
  file(REMOVE_RECURSE "${FOLDER}")
endif()
file(MAKE_DIRECTORY "${FOLDER}")
set(FILE "${FOLDER}/sizes")

# Runs the program (with LAUNCH and KBUF_SIZES), which must exit 0; sets OUT and KBUF_LINES (the
# lines of stderr that kbuf wrote, those starting with "kbuf: ", with every ';' read as ',', which
# a CMake list cannot hold).
macro(run_program)
  execute_process(COMMAND "${CMAKE_COMMAND}" -E env "KBUF_SIZES=${FILE}" ${LAUNCH} "${PROGRAM}"
                          ${ARGN}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE OUT ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${PROGRAM} ${ARGN}: exit status ${rc}\nstdout:\n${OUT}\nstderr:\n${err}")
  endif()
  string(REPLACE ";" "," err_list "${err}")
  string(REPLACE "\n" ";" err_list "${err_list}")
  set(KBUF_LINES)
  foreach(line IN LISTS err_list)
    if(line MATCHES "^kbuf: ")
      list(APPEND KBUF_LINES "${line}")
    endif()
  endforeach()
  list(LENGTH KBUF_LINES KBUF_COUNT)
  message(STATUS "run ${ARGN}: ${OUT}  kbuf said ${KBUF_COUNT} line(s): ${KBUF_LINES}")
endmacro()

macro(expect_lines count regex)
  if(NOT KBUF_COUNT EQUAL ${count})
    message(FATAL_ERROR "kbuf wrote ${KBUF_COUNT} line(s) on stderr, expected ${count}: "
                        "${KBUF_LINES}")
  endif()
  if(${count} GREATER 0 AND NOT KBUF_LINES MATCHES "${regex}")
    message(FATAL_ERROR "kbuf's line '${KBUF_LINES}' does not match '${regex}'")
  endif()
endmacro()

# The pool's and process allocator's counts, where the program prints them (kbuf-test-sizes-env):
# sets OTHERS to "<fallbacks> <regrows>", or to "" where it does not.
macro(read_others)
  set(OTHERS "")
  if(OUT MATCHES "pool and process allocator: fallbacks ([0-9]+) regrows ([0-9]+)")
    set(OTHERS "${CMAKE_MATCH_1} ${CMAKE_MATCH_2}")
  endif()
endmacro()

macro(expect_learning)  # what a first run needs: fallbacks, a regrowth, workspace fallbacks
  read_others()
  if(NOT OUT MATCHES "fallbacks [1-9][0-9]* regrows [1-9][0-9]* workspace_fallbacks [1-9]" OR
     OTHERS MATCHES "(^0 | 0$)")
    message(FATAL_ERROR "expected a run that learns (fallbacks, regrows), not: ${OUT}")
  endif()
endmacro()

macro(expect_from_saved)
  read_others()
  if(NOT OUT MATCHES "fallbacks 0 regrows 0 workspace_fallbacks 0" OR
     (NOT OTHERS STREQUAL "" AND NOT OTHERS STREQUAL "0 0"))
    message(FATAL_ERROR "expected a run from saved sizes (0 fallbacks, 0 regrows), not: ${OUT}")
  endif()
endmacro()

macro(expect_only_the_file)  # written through a temporary file, renamed: nothing else is left
  file(GLOB left RELATIVE "${FOLDER}" "${FOLDER}/*")
  if(NOT left STREQUAL "sizes")
    message(FATAL_ERROR "the folder holds '${left}', expected the file 'sizes' alone")
  endif()
endmacro()

set(missing "^kbuf: KBUF_SIZES=[^ ]*/sizes: no such file, allocators and workspaces learn their sizes as usual and save them there at Kokkos::finalize$")
if(CASE STREQUAL "rerun" OR CASE STREQUAL "ranks")
  run_program()
  expect_lines(1 "${missing}")
  expect_learning()
  expect_only_the_file()
  if(CASE STREQUAL "ranks")
    # Every rank's own label, and the shared label at the largest high-water mark of the ranks.
    file(STRINGS "${FILE}" entries REGEX "^allocator ")
    string(REPLACE "\"" "" entries "${entries}")  # names unquoted
    if(NOT OUT MATCHES "largest ([0-9]+)")
      message(FATAL_ERROR "no 'largest <bytes>' in: ${OUT}")
    endif()
    set(largest "${CMAKE_MATCH_1}")
    if(NOT entries MATCHES "allocator [^ ]+ sizes-env-mpi ${largest}(;|$)")
      message(FATAL_ERROR "the file's entries '${entries}' lack sizes-env-mpi at ${largest}")
    endif()
    if(NOT entries MATCHES "sizes-env-rank0 " OR NOT entries MATCHES "sizes-env-rank1 ")
      message(FATAL_ERROR "the file's entries '${entries}' lack a rank's own label")
    endif()
  endif()
  run_program()
  expect_lines(0 "")
  expect_from_saved()
  expect_only_the_file()
elseif(CASE STREQUAL "unreadable")
  run_program()  # a good file first
  run_program(--unreadable "${FILE}")
  expect_lines(1 "^kbuf: KBUF_SIZES=[^ ]*/sizes: cannot open it: Permission denied, allocators and workspaces learn their sizes as usual and save them there at Kokkos::finalize$")
  expect_learning()
  run_program()
  expect_lines(0 "")
  expect_from_saved()
elseif(CASE STREQUAL "read_only_folder")
  run_program()  # a good file first
  run_program(--read-only "${FOLDER}")
  execute_process(COMMAND chmod u+rwx "${FOLDER}")
  expect_lines(1 "^kbuf: KBUF_SIZES=[^ ]*/sizes: could not save the sizes \\(cannot create '[^']*/sizes\\.tmp\\.[0-9.]+': Permission denied\\), the run is not affected$")
  expect_from_saved()
  expect_only_the_file()
else()  # a file that cannot be used
  execute_process(COMMAND "${PROGRAM}" --write-bad "${CASE}" "${FILE}" RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "cannot write a file of kind '${CASE}'")
  endif()
  run_program()
  expect_lines(1 "^kbuf: KBUF_SIZES=[^ ]*/sizes: .*${MATCH}.*, its sizes are not used, allocators and workspaces learn their sizes as usual and replace it at Kokkos::finalize$")
  expect_learning()
  expect_only_the_file()
  run_program()
  expect_lines(0 "")
  expect_from_saved()
endif()
