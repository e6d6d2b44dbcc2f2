# kbuf_warnings: the compiler warnings of kbuf's own code (tests, examples, benchmarks, the demo
# and its library, the fuzzer), never of the exported kbuf::kbuf target. Link it PRIVATE.
# Host builds only: device compilers warn about Kokkos' own headers. A target whose
# KBUF_WARNINGS_AS_ERRORS property is ON (kbuf's tests) also gets -Werror.
if(NOT TARGET kbuf_warnings)
  add_library(kbuf_warnings INTERFACE)
  if(KBUF_BACKEND STREQUAL "Serial" AND CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    target_compile_options(kbuf_warnings INTERFACE
      -Wall -Wextra $<$<BOOL:$<TARGET_PROPERTY:KBUF_WARNINGS_AS_ERRORS>>:-Werror>)
  endif()
endif()
