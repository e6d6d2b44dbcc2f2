# cmake -DKBUF_CMAKE_DIR=<repo>/cmake -P kokkoskernels_rules.cmake
# Feeds kbuf_kokkoskernels_mismatch() (cmake/kbufKokkosKernels.cmake) with matching and
# mismatching Kokkos / Kokkos Kernels facts and checks the verdicts and the message.
cmake_minimum_required(VERSION 3.16)
include("${KBUF_CMAKE_DIR}/kbufKokkosKernels.cmake")

set(_cases 0)
# expect(<name> <regex or "">  args...): the reasons must match <regex> ("" : no reason).
function(expect name regex)
  kbuf_kokkoskernels_mismatch(_why ${ARGN})
  if(regex STREQUAL "")
    if(_why)
      message(FATAL_ERROR "kokkoskernels_rules: ${name}: expected a match, got: ${_why}")
    endif()
  elseif(NOT _why MATCHES "${regex}")
    message(FATAL_ERROR "kokkoskernels_rules: ${name}: expected /${regex}/, got: '${_why}'")
  endif()
  math(EXPR _n "${_cases} + 1")
  set(_cases ${_n} PARENT_SCOPE)
endfunction()

set(k46 KOKKOS_VERSION 4.6.1 KOKKOS_DIR /opt/k46/lib/cmake/Kokkos KOKKOS_INCLUDE_DIR /opt/k46/include
        KOKKOS_DEVICES OPENMP SERIAL)

# Kokkos Kernels 4.6.1 installed with its Kokkos: a match.
expect(same_install "" ${k46} KERNELS_VERSION 4.6.1 KERNELS_KOKKOS_DIR /opt/k46/lib/cmake/Kokkos
       KERNELS_KOKKOS_INCLUDE_DIR /opt/k46/include KERNELS_KOKKOS_VERSION 4.6.1
       KERNELS_BACKENDS OPENMP)
# Nothing known about the Kernels: nothing to refuse.
expect(unknown "" ${k46})
# Debian's: Trilinos' Kokkos Kernels with Kokkos 3.4 headers in its include directory.
expect(debian_kernels_with_kokkos46 "headers of another Kokkos 3\\.4\\.1.*/usr/include/trilinos"
       ${k46} KERNELS_KOKKOS_INCLUDE_DIR /usr/include/trilinos KERNELS_KOKKOS_VERSION 3.4.1
       KERNELS_BACKENDS SERIAL)
# ... and the same Kokkos Kernels with Debian's own Kokkos 3.4.01: a match (3.4.01 == 3.4.1).
expect(debian_kernels_with_debian_kokkos ""
       KOKKOS_VERSION 3.4.01 KOKKOS_DIR /usr/lib/x86_64-linux-gnu/cmake/Kokkos
       KOKKOS_INCLUDE_DIR /usr/include/trilinos KOKKOS_DEVICES SERIAL
       KERNELS_KOKKOS_INCLUDE_DIR /usr/include/trilinos KERNELS_KOKKOS_VERSION 3.4.1
       KERNELS_BACKENDS SERIAL)
# Version: Kokkos Kernels 4.5 for Kokkos 4.6.
expect(version "Kokkos Kernels 4\\.5\\.1, made for Kokkos 4\\.5, not for Kokkos 4\\.6\\.1"
       ${k46} KERNELS_VERSION 4.5.1)
# Same headers folder, other version (a Kokkos reinstalled over the old one).
expect(header_version "Kokkos headers are version 4\\.5\\.0, the Kokkos found is 4\\.6\\.1"
       ${k46} KERNELS_KOKKOS_INCLUDE_DIR /opt/k46/include KERNELS_KOKKOS_VERSION 4.5.0)
# Location: same version, but built with another Kokkos install (e.g. a CUDA one).
expect(location "built with the Kokkos at '/opt/k46-cuda/lib/cmake/Kokkos'"
       ${k46} KERNELS_VERSION 4.6.1 KERNELS_KOKKOS_DIR /opt/k46-cuda/lib/cmake/Kokkos)
# Backends: instantiated for CUDA, which this Kokkos lacks.
expect(backend "built for the CUDA backend\\(s\\), which the Kokkos found lacks \\(it enables OPENMP, SERIAL\\)"
       ${k46} KERNELS_VERSION 4.6.1 KERNELS_BACKENDS CUDA SERIAL)
# Kokkos 3 calls the Threads backend PTHREAD.
expect(threads_name ""
       KOKKOS_VERSION 3.7.2 KOKKOS_DEVICES SERIAL PTHREAD KERNELS_VERSION 3.7.0
       KERNELS_BACKENDS THREADS)
# Several reasons at once are all reported.
expect(several "made for Kokkos 3\\.4.*;.*CUDA backend"
       ${k46} KERNELS_VERSION 3.4.0 KERNELS_BACKENDS CUDA)

# The message says what was found, why, and what to pass.
kbuf_kokkoskernels_mismatch_message(msg "reason one;reason two"
  KERNELS_DIR /usr/lib/x86_64-linux-gnu/cmake/KokkosKernels KOKKOS_DIR /opt/k46/lib/cmake/Kokkos
  KOKKOS_VERSION 4.6.1)
foreach(_part "Kokkos Kernels found at '/usr/lib/x86_64-linux-gnu/cmake/KokkosKernels' was not built"
              "Kokkos found at '/opt/k46/lib/cmake/Kokkos' \\(version 4\\.6\\.1\\)"
              "\n  - reason one\n  - reason two\n"
              "Kokkos Kernels 4\\.6 built with this Kokkos"
              "-DKokkosKernels_ROOT=<its prefix> \\(kbuf first looks in '/opt/k46'\\)"
              "-DKBUF_ENABLE_KERNELS=OFF")
  if(NOT msg MATCHES "${_part}")
    message(FATAL_ERROR "kokkoskernels_rules: message lacks /${_part}/:\n${msg}")
  endif()
endforeach()
math(EXPR _cases "${_cases} + 1")

# Version numbers read from Kokkos' and Kokkos Kernels' configuration headers.
set(_hdr "${CMAKE_CURRENT_BINARY_DIR}/kbuf_kokkoskernels_rules_config.h")
file(WRITE "${_hdr}" "#define KOKKOS_VERSION 40601\n#define KOKKOS_VERSION_MAJOR 4\n")
kbuf_kokkos_version_from_header(v "${_hdr}")
file(WRITE "${_hdr}" "#define KOKKOSKERNELS_VERSION 30700\n")
kbuf_kokkos_version_from_header(v2 "${_hdr}")
file(REMOVE "${_hdr}")
if(NOT v STREQUAL "4.6.1" OR NOT v2 STREQUAL "3.7.0")
  message(FATAL_ERROR "kokkoskernels_rules: header versions: '${v}', '${v2}'")
endif()
math(EXPR _cases "${_cases} + 1")

message("kokkoskernels_rules: ${_cases} cases passed")
