# cmake -P script: fails unless a Markdown page (-DREADME=..., the README or a docs/ page)
# contains, verbatim, the part of the example (-DEXAMPLE=...) between its two "// [<MARKER>]"
# lines (-DMARKER=..., default usage; "# [<MARKER>]" in a CMake file), up to the line break
# before the second marker.
if(NOT MARKER)
  set(MARKER usage)
endif()
file(READ "${EXAMPLE}" example)
# C++ marks the part with "// [MARKER]", CMake with "# [MARKER]".
set(tag "// [${MARKER}]\n")
string(FIND "${example}" "${tag}" cxx_tag)
if(cxx_tag EQUAL -1)
  set(tag "# [${MARKER}]\n")
endif()
string(LENGTH "${tag}" tag_length)
file(READ "${README}" readme)
string(FIND "${example}" "${tag}" first)
string(FIND "${example}" "${tag}" last REVERSE)
if(first EQUAL -1 OR first EQUAL last)
  message(FATAL_ERROR "${EXAMPLE} lacks two '// [${MARKER}]' markers")
endif()
math(EXPR start "${first} + ${tag_length}")
math(EXPR length "${last} - ${start}")
string(SUBSTRING "${example}" ${start} ${length} snippet)
# The closing marker's indentation is not part of the snippet: copied with it, it would indent
# the Markdown fence that follows, and a fence indented four spaces does not close its block.
string(REGEX REPLACE "[ \t]+$" "" snippet "${snippet}")
string(FIND "${readme}" "${snippet}" found)
if(found EQUAL -1)
  message(FATAL_ERROR "${README} does not show the usage example of ${EXAMPLE} verbatim; "
                      "copy the part between the [${MARKER}] markers into it")
endif()
message(STATUS "${README} shows the ${MARKER} example verbatim")
