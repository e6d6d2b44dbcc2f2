# cmake -P script: kbuf-tebd under mpirun against the same run in one process. Runs ONE (a
# ;-list: kbuf-tebd alone) and MANY (the same arguments under mpirun on RANKS ranks), each with
# --csv; both must exit 0 and print the same run lines in the same (field) order, compared up to
# the error (timings differ), and the same CSV rows up to abs_error. MANY must also name its
# ranks, print the statistics reduced over them, and report no rank with a fallback after
# warm-up.
#   -DONE=... -DMANY=... -DRANKS=n -DCSV_PREFIX=path
include("${CMAKE_CURRENT_LIST_DIR}/tebd_runs.cmake")

# Runs COMMAND with --csv CSV and sets NAME_out, NAME_runs (the run lines, each up to its error:
# timings differ) and NAME_rows (the CSV rows' columns that do not time).
function(run_and_collect name command csv)
  file(REMOVE "${csv}")
  tebd_runs(${name} "${command};--csv;${csv}" " error [0-9.e+-]+")
  file(STRINGS "${csv}" rows)
  set(cut)
  foreach(row IN LISTS rows)
    # model,field,chi,strategy,steps,energy,exact,abs_error
    string(REGEX MATCH "^([^,]*,){7}[^,]*" row "${row}")
    list(APPEND cut "${row}")
  endforeach()
  set(${name}_out "${${name}_out}" PARENT_SCOPE)
  set(${name}_runs "${${name}_runs}" PARENT_SCOPE)
  set(${name}_rows "${cut}" PARENT_SCOPE)
endfunction()

run_and_collect(one "${ONE}" "${CSV_PREFIX}-one.csv")
run_and_collect(many "${MANY}" "${CSV_PREFIX}-ranks.csv")

list(LENGTH one_runs n_one)
if(n_one EQUAL 0)
  message(FATAL_ERROR "the one-process run printed no run line:\n${one_out}")
endif()
# Fails unless the lists ONE and MANY (of WHAT) are equal; shows both, and MORE after them.
function(expect_same what one many more)
  if(NOT one STREQUAL many)
    string(REPLACE ";" "\n" a "${one}")
    string(REPLACE ";" "\n" b "${many}")
    message(FATAL_ERROR "the ${what} on ${RANKS} ranks differ from one process's:\n"
                        "one process:\n${a}\n${RANKS} ranks:\n${b}${more}")
  endif()
endfunction()
expect_same("run lines" "${one_runs}" "${many_runs}" "\n\nfull output on ${RANKS} ranks:\n${many_out}")
expect_same("CSV rows" "${one_rows}" "${many_rows}" "")
foreach(expected
        "iTEBD: [^\n]*, ${RANKS} ranks\n"
        "\nkbuf statistics over ${RANKS} ranks \\(largest peak used on rank [0-9]+\\):\n  temporaries +min +[1-9]"
        "\nkbuf fallbacks after warm-up, over ${RANKS} ranks: min 0, max 0, sum 0\n"
        "\nOK: every run within its accuracy target")
  if(NOT many_out MATCHES "${expected}")
    message(FATAL_ERROR "the output on ${RANKS} ranks does not match '${expected}':\n${many_out}")
  endif()
endforeach()
if(one_out MATCHES "over [0-9]+ ranks")
  message(FATAL_ERROR "the one-process run printed statistics over ranks:\n${one_out}")
endif()
message(STATUS "${n_one} run lines and CSV rows on ${RANKS} ranks equal one process's, in field order; no fallback after warm-up on any rank")
