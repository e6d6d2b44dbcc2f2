# Finding Kokkos Kernels for kbuf's tensor parts, and refusing one built for another Kokkos.
#
# Kokkos Kernels compiles against one Kokkos: its headers, its instantiations and its libraries
# are for that Kokkos' version and backends. CMake happily finds a Kokkos Kernels of another
# Kokkos (Debian's, built for Kokkos 3.4, is always on the default search path), and the build
# then fails deep inside Kokkos Kernels' headers. kbuf_find_kokkoskernels() looks beside the
# Kokkos found first and stops with a message that says what to pass when the two do not match.

# kbuf_kokkos_version_from_header(<out> <header>): "major.minor.patch" from KOKKOS_VERSION or
# KOKKOSKERNELS_VERSION (e.g. 40601) in <header>, else "".
function(kbuf_kokkos_version_from_header out header)
  set(_v "")
  if(EXISTS "${header}")
    file(STRINGS "${header}" _line REGEX "^#define KOKKOS(KERNELS)?_VERSION [0-9]+")
    if(_line MATCHES "_VERSION ([0-9]+)")
      math(EXPR _major "${CMAKE_MATCH_1} / 10000")
      math(EXPR _minor "(${CMAKE_MATCH_1} / 100) % 100")
      math(EXPR _patch "${CMAKE_MATCH_1} % 100")
      set(_v "${_major}.${_minor}.${_patch}")
    endif()
  endif()
  set(${out} "${_v}" PARENT_SCOPE)
endfunction()

# kbuf_kokkoskernels_mismatch(<out>
#   KOKKOS_VERSION v KOKKOS_DIR d KOKKOS_INCLUDE_DIR d KOKKOS_DEVICES list
#   KERNELS_VERSION v KERNELS_KOKKOS_DIR d KERNELS_KOKKOS_INCLUDE_DIR d
#   KERNELS_KOKKOS_VERSION v KERNELS_BACKENDS list)
#
# Sets <out> to the list of reasons why a Kokkos Kernels described by the KERNELS_* facts was not
# built for the Kokkos described by the KOKKOS_* facts (empty: they match). Facts that are not
# known are passed empty and not checked. Pure: it reads no files, so tests can feed it.
#   KERNELS_VERSION            Kokkos Kernels' own version (it follows Kokkos': 4.6.x is for 4.6)
#   KERNELS_KOKKOS_DIR         the Kokkos CMake package Kokkos Kernels recorded at its build
#   KERNELS_KOKKOS_INCLUDE_DIR a directory with Kokkos' own headers (KokkosCore_config.h) among
#                              Kokkos Kernels' include directories (a bundled Kokkos, Trilinos')
#   KERNELS_KOKKOS_VERSION     the version of those bundled headers
#   KERNELS_BACKENDS           execution spaces Kokkos Kernels instantiated its kernels for
#                              (SERIAL, OPENMP, THREADS, CUDA, HIP, SYCL, OPENMPTARGET)
function(kbuf_kokkoskernels_mismatch out)
  cmake_parse_arguments(PARSE_ARGV 1 A ""
    "KOKKOS_VERSION;KOKKOS_DIR;KOKKOS_INCLUDE_DIR;KERNELS_VERSION;KERNELS_KOKKOS_DIR;KERNELS_KOKKOS_INCLUDE_DIR;KERNELS_KOKKOS_VERSION"
    "KOKKOS_DEVICES;KERNELS_BACKENDS")
  set(_why "")
  # Version: Kokkos Kernels x.y.z is released for Kokkos x.y.
  if(A_KERNELS_VERSION AND A_KOKKOS_VERSION)
    string(REGEX MATCH "^[0-9]+\\.[0-9]+" _kk "${A_KERNELS_VERSION}")
    string(REGEX MATCH "^[0-9]+\\.[0-9]+" _k "${A_KOKKOS_VERSION}")
    if(_kk AND _k AND NOT _kk VERSION_EQUAL _k)
      list(APPEND _why "it is Kokkos Kernels ${A_KERNELS_VERSION}, made for Kokkos ${_kk}, not \
for Kokkos ${A_KOKKOS_VERSION}")
    endif()
  endif()
  # Location: the Kokkos package Kokkos Kernels was configured with.
  if(A_KERNELS_KOKKOS_DIR AND A_KOKKOS_DIR)
    get_filename_component(_a "${A_KERNELS_KOKKOS_DIR}" REALPATH)
    get_filename_component(_b "${A_KOKKOS_DIR}" REALPATH)
    if(NOT _a STREQUAL _b)
      list(APPEND _why "it was built with the Kokkos at '${A_KERNELS_KOKKOS_DIR}', not the one \
at '${A_KOKKOS_DIR}'")
    endif()
  endif()
  # Bundled Kokkos headers (Trilinos installs Kokkos and Kokkos Kernels into one include folder):
  # they would shadow or mix with the headers of the Kokkos found.
  set(_other_headers FALSE)
  if(A_KERNELS_KOKKOS_INCLUDE_DIR AND A_KOKKOS_INCLUDE_DIR)
    get_filename_component(_a "${A_KERNELS_KOKKOS_INCLUDE_DIR}" REALPATH)
    get_filename_component(_b "${A_KOKKOS_INCLUDE_DIR}" REALPATH)
    if(NOT _a STREQUAL _b)
      set(_other_headers TRUE)
      set(_v "")
      if(A_KERNELS_KOKKOS_VERSION)
        set(_v " ${A_KERNELS_KOKKOS_VERSION}")
      endif()
      list(APPEND _why "its include directories carry the headers of another Kokkos${_v} \
('${_a}'), not those of the Kokkos found ('${_b}')")
    endif()
  endif()
  if(NOT _other_headers AND A_KERNELS_KOKKOS_VERSION AND A_KOKKOS_VERSION
     AND NOT A_KERNELS_KOKKOS_VERSION VERSION_EQUAL A_KOKKOS_VERSION)
    list(APPEND _why "its Kokkos headers are version ${A_KERNELS_KOKKOS_VERSION}, the Kokkos found \
is ${A_KOKKOS_VERSION}")
  endif()
  # Backends: every execution space Kokkos Kernels instantiated must exist in the Kokkos found.
  set(_devices "")
  foreach(_d IN LISTS A_KOKKOS_DEVICES)
    string(TOUPPER "${_d}" _d)
    if(_d STREQUAL "PTHREAD")  # Kokkos 3's name of the Threads backend
      set(_d THREADS)
    endif()
    list(APPEND _devices "${_d}")
  endforeach()
  set(_lacking "")
  foreach(_b IN LISTS A_KERNELS_BACKENDS)
    string(TOUPPER "${_b}" _b)
    if(NOT _b IN_LIST _devices)
      list(APPEND _lacking "${_b}")
    endif()
  endforeach()
  if(_lacking)
    string(REPLACE ";" ", " _lacking "${_lacking}")
    string(REPLACE ";" ", " _have "${_devices}")
    list(APPEND _why "it was built for the ${_lacking} backend(s), which the Kokkos found lacks \
(it enables ${_have})")
  endif()
  set(${out} "${_why}" PARENT_SCOPE)
endfunction()

# kbuf_kokkoskernels_mismatch_message(<out> <reasons> KERNELS_DIR d KOKKOS_DIR d KOKKOS_VERSION v)
# The configure error for a non-empty list of reasons: what was found, why it does not fit, and
# what to pass instead.
function(kbuf_kokkoskernels_mismatch_message out reasons)
  cmake_parse_arguments(PARSE_ARGV 2 A "" "KERNELS_DIR;KOKKOS_DIR;KOKKOS_VERSION" "")
  string(REGEX MATCH "^[0-9]+\\.[0-9]+" _mm "${A_KOKKOS_VERSION}")
  get_filename_component(_prefix "${A_KOKKOS_DIR}/../../.." ABSOLUTE)
  set(_msg "kbuf: the Kokkos Kernels found at '${A_KERNELS_DIR}' was not built for the Kokkos \
found at '${A_KOKKOS_DIR}' (version ${A_KOKKOS_VERSION}):\n")
  foreach(_r IN LISTS reasons)
    string(APPEND _msg "  - ${_r}\n")
  endforeach()
  string(APPEND _msg "Building with it would fail inside Kokkos Kernels' headers. Either pass \
the Kokkos Kernels ${_mm} built with this Kokkos, e.g. -DKokkosKernels_ROOT=<its prefix> (kbuf \
first looks in '${_prefix}'), or build kbuf without its tensor workload and kbuf-demo: \
-DKBUF_ENABLE_KERNELS=OFF (the library, its tests, the examples and kbuf-bench, less its \
end-to-end section, need no Kokkos Kernels).")
  set(${out} "${_msg}" PARENT_SCOPE)
endfunction()

# kbuf_find_kokkoskernels(<mode>): find_package(KokkosKernels), beside the Kokkos found first, and
# check that it was built for that Kokkos. <mode> REQUIRED (KBUF_ENABLE_KERNELS=ON): a missing or
# mismatched Kokkos Kernels stops the configure with kbuf_kokkoskernels_mismatch_message(). <mode>
# AUTO: sets KBUF_KERNELS_FOUND to ON when a matching one is found, else OFF, with
# KBUF_KERNELS_WHY_NOT saying why (a mismatch is said with a warning). Call after Kokkos was
# found and kbuf_repair_kokkos_target() ran.
macro(kbuf_find_kokkoskernels mode)
  # Facts about the Kokkos found, taken before Kokkos Kernels' package can touch them.
  set(_kbuf_kokkos_version "${Kokkos_VERSION}")
  set(_kbuf_kokkos_dir "${Kokkos_DIR}")
  set(_kbuf_kokkos_devices "${Kokkos_DEVICES}")
  set(_kbuf_hints "")
  if(Kokkos_DIR)
    # <prefix>/lib/cmake/Kokkos or <prefix>/lib/<arch>/cmake/Kokkos
    get_filename_component(_kbuf_p3 "${Kokkos_DIR}/../../.." ABSOLUTE)
    get_filename_component(_kbuf_p4 "${Kokkos_DIR}/../../../.." ABSOLUTE)
    set(_kbuf_hints HINTS "${_kbuf_p3}" "${_kbuf_p4}")
  endif()
  if("${mode}" STREQUAL "REQUIRED")
    find_package(KokkosKernels QUIET ${_kbuf_hints})
    if(NOT KokkosKernels_FOUND)
      message(FATAL_ERROR "kbuf: KBUF_ENABLE_KERNELS=ON, but Kokkos Kernels was not found (looked "
                          "beside the Kokkos at ${_kbuf_kokkos_dir} first, then in the default "
                          "places). Pass -DKokkosKernels_ROOT=<its install prefix>, or "
                          "-DKBUF_ENABLE_KERNELS=AUTO (or OFF) to build without the applications.")
    endif()
    kbuf_check_kokkoskernels(FATAL_ERROR)
    set(KBUF_KERNELS_FOUND ON)
  else()
    find_package(KokkosKernels QUIET ${_kbuf_hints})
    set(KBUF_KERNELS_FOUND OFF)
    if(NOT KokkosKernels_FOUND)
      set(KBUF_KERNELS_WHY_NOT "Kokkos Kernels was not found")
    else()
      kbuf_check_kokkoskernels(WARNING)
      if(KBUF_KOKKOSKERNELS_MISMATCH)
        set(KBUF_KERNELS_WHY_NOT "the Kokkos Kernels found was not built for the Kokkos found")
      else()
        set(KBUF_KERNELS_FOUND ON)
      endif()
    endif()
  endif()
endmacro()

# kbuf_check_kokkoskernels(<FATAL_ERROR|WARNING>): gathers the facts of the found Kokkos
# (_kbuf_kokkos_* variables set by kbuf_find_kokkoskernels) and Kokkos Kernels; on a mismatch it
# says why with a message of that type, and sets KBUF_KOKKOSKERNELS_MISMATCH (for WARNING).
function(kbuf_check_kokkoskernels severity)
  set(KBUF_KOKKOSKERNELS_MISMATCH OFF PARENT_SCOPE)
  # Include directories of both packages.
  set(_k_inc "")
  if(TARGET Kokkos::kokkos)
    get_target_property(_k_inc Kokkos::kokkos INTERFACE_INCLUDE_DIRECTORIES)
  endif()
  set(_kk_inc "${KokkosKernels_INCLUDE_DIRS}")
  foreach(_t Kokkos::kokkoskernels trilinos_kokkoskernels)
    if(TARGET ${_t})
      get_target_property(_i ${_t} INTERFACE_INCLUDE_DIRECTORIES)
      if(_i)
        list(APPEND _kk_inc ${_i})
      endif()
    endif()
  endforeach()
  # The Kokkos headers of the Kokkos found.
  set(_k_hdr_dir "")
  foreach(_d IN LISTS _k_inc)
    if(NOT _d MATCHES "^\\$<" AND EXISTS "${_d}/KokkosCore_config.h")
      set(_k_hdr_dir "${_d}")
      break()
    endif()
  endforeach()
  # Kokkos Kernels' configuration header, and Kokkos headers among its include directories.
  set(_kk_cfg "")
  set(_kk_k_hdr_dir "")
  foreach(_d IN LISTS _kk_inc)
    if(_d MATCHES "^\\$<")
      continue()
    endif()
    if(NOT _kk_cfg AND EXISTS "${_d}/KokkosKernels_config.h")
      set(_kk_cfg "${_d}/KokkosKernels_config.h")
    endif()
    if(NOT _kk_k_hdr_dir AND EXISTS "${_d}/KokkosCore_config.h")
      set(_kk_k_hdr_dir "${_d}")
    endif()
  endforeach()
  set(_kk_k_version "")
  if(_kk_k_hdr_dir)
    kbuf_kokkos_version_from_header(_kk_k_version "${_kk_k_hdr_dir}/KokkosCore_config.h")
  endif()
  # Kokkos Kernels' version: its package version, else its configuration header.
  set(_kk_version "${KokkosKernels_VERSION}")
  if(NOT _kk_version AND _kk_cfg)
    kbuf_kokkos_version_from_header(_kk_version "${_kk_cfg}")
  endif()
  # Backends it instantiated kernels for.
  set(_kk_backends "")
  if(_kk_cfg)
    file(STRINGS "${_kk_cfg}" _lines REGEX "^#define KOKKOSKERNELS_INST_EXECSPACE_[A-Z]+")
    foreach(_l IN LISTS _lines)
      if(_l MATCHES "INST_EXECSPACE_([A-Z]+)")
        list(APPEND _kk_backends "${CMAKE_MATCH_1}")
      endif()
    endforeach()
  endif()
  # The Kokkos package Kokkos Kernels' own CMake package was configured with.
  set(_kk_k_dir "")
  if(EXISTS "${KokkosKernels_DIR}/KokkosKernelsConfig.cmake")
    file(STRINGS "${KokkosKernels_DIR}/KokkosKernelsConfig.cmake" _lines
         REGEX "find_dependency\\(Kokkos HINTS")
    foreach(_l IN LISTS _lines)
      if(_l MATCHES "find_dependency\\(Kokkos HINTS +([^ )]+)")
        set(_kk_k_dir "${CMAKE_MATCH_1}")
      endif()
    endforeach()
  endif()

  kbuf_kokkoskernels_mismatch(_why
    KOKKOS_VERSION "${_kbuf_kokkos_version}" KOKKOS_DIR "${_kbuf_kokkos_dir}"
    KOKKOS_INCLUDE_DIR "${_k_hdr_dir}" KOKKOS_DEVICES ${_kbuf_kokkos_devices}
    KERNELS_VERSION "${_kk_version}" KERNELS_KOKKOS_DIR "${_kk_k_dir}"
    KERNELS_KOKKOS_INCLUDE_DIR "${_kk_k_hdr_dir}" KERNELS_KOKKOS_VERSION "${_kk_k_version}"
    KERNELS_BACKENDS ${_kk_backends})
  if(_why)
    kbuf_kokkoskernels_mismatch_message(_msg "${_why}" KERNELS_DIR "${KokkosKernels_DIR}"
      KOKKOS_DIR "${_kbuf_kokkos_dir}" KOKKOS_VERSION "${_kbuf_kokkos_version}")
    message(${severity} "${_msg}")
    set(KBUF_KOKKOSKERNELS_MISMATCH ON PARENT_SCOPE)
    return()
  endif()
  if(_kk_version)
    set(_v "${_kk_version}")
  elseif(_kk_k_version)
    set(_v "of Kokkos ${_kk_k_version}")
  else()
    set(_v "(version unknown)")
  endif()
  set(KBUF_KOKKOSKERNELS_SUMMARY "${_v} at ${KokkosKernels_DIR}" PARENT_SCOPE)
endfunction()
