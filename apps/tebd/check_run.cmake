# cmake -P script: runs COMMAND (a ;-list), which must exit 0 with output matching MATCH and
# write the CSV file CSV whose header is kbuf-tebd's columns, in order, and one row per field and
# strategy.
#   -DCOMMAND=... -DMATCH=regex -DCSV=file [-DROWS=n] [-DREPEATS=n]
file(REMOVE "${CSV}")
set(CODE 0)
include("${CMAKE_CURRENT_LIST_DIR}/../../cmake/expect_exit.cmake")  # runs COMMAND, checks MATCH
file(STRINGS "${CSV}" lines)
list(LENGTH lines n)
list(GET lines 0 header)
set(expected "model,field,chi,strategy,steps,energy,exact,abs_error,seconds,temporaries,fallbacks,regrows,hwm_bytes,allocations,repeats,seconds_min,seconds_max")
if(NOT header STREQUAL expected)
  message(FATAL_ERROR "CSV header '${header}', expected '${expected}'")
endif()
# One row per strategy (ROWS, default 1): kbuf's first, then view-noinit's and view-init's;
# REPEATS runs each (default 1), the seconds their median between the minimum and the maximum.
if(NOT DEFINED ROWS)
  set(ROWS 1)
endif()
if(NOT DEFINED REPEATS)
  set(REPEATS 1)
endif()
math(EXPR lines_expected "${ROWS} + 1")
if(NOT n EQUAL lines_expected)
  message(FATAL_ERROR "CSV has ${n} lines, expected the header and ${ROWS} row(s)")
endif()
set(number "[0-9.e+-]+")
foreach(i RANGE 1 ${ROWS})
  list(GET lines ${i} row)
  if(i EQUAL 1)
    # kbuf: fallbacks, regrows, high-water mark; a few allocations (its buffers and warm-up
    # fallbacks), at least one.
    set(strategy "kbuf,[0-9]+,-1\\.06354[0-9]+,-1\\.06354440[0-9]+,${number},(${number}),[0-9]+,[0-9]+,[0-9]+,[0-9]+,([1-9][0-9]*)")
  else()
    set(strategy "view-[a-z]+,[0-9]+,-1\\.06354[0-9]+,-1\\.06354440[0-9]+,${number},(${number}),[0-9]+,,,,([1-9][0-9]*)")
  endif()
  if(NOT row MATCHES "^ising,0\\.5,4,${strategy},${REPEATS},(${number}),(${number})$")
    message(FATAL_ERROR "CSV row '${row}' does not have the columns' formats")
  endif()
  set(median "${CMAKE_MATCH_1}")
  set(allocations "${CMAKE_MATCH_2}")
  set(low "${CMAKE_MATCH_3}")
  set(high "${CMAKE_MATCH_4}")
  # CMake compares decimals as numbers (LESS / GREATER take floating-point text).
  if(median LESS low OR median GREATER high)
    message(FATAL_ERROR "CSV row '${row}': the median ${median} is not between ${low} and ${high}")
  endif()
  if(i EQUAL 1)
    set(kbuf_allocations "${allocations}")
  elseif(NOT allocations GREATER kbuf_allocations)
    message(FATAL_ERROR "CSV row '${row}': fresh Views made ${allocations} allocations, not more "
                        "than kbuf's ${kbuf_allocations}")
  endif()
endforeach()
message(STATUS "exit status 0, the expected line and CSV")
