# cmake -P script: fails unless README (-DREADME=...) contains, verbatim, the part of the example
# (-DEXAMPLE=...) between its two "// [usage]" marker lines.
file(READ "${EXAMPLE}" example)
file(READ "${README}" readme)
string(FIND "${example}" "// [usage]\n" first)
string(FIND "${example}" "// [usage]\n" last REVERSE)
if(first EQUAL -1 OR first EQUAL last)
  message(FATAL_ERROR "${EXAMPLE} lacks two '// [usage]' markers")
endif()
math(EXPR start "${first} + 11")
math(EXPR length "${last} - ${start}")
string(SUBSTRING "${example}" ${start} ${length} snippet)
string(FIND "${readme}" "${snippet}" found)
if(found EQUAL -1)
  message(FATAL_ERROR "README.md does not show the usage example of ${EXAMPLE} verbatim; "
                      "copy the part between the [usage] markers into it")
endif()
message(STATUS "README shows the usage example verbatim")
