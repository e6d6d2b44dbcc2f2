# Helpers shared by kbuf's build and its installed package config.

# Some Kokkos packages (Debian's Trilinos build of Kokkos 3.4) export a Kokkos::kokkos target
# whose include directory does not exist; point it at the headers the package reports.
function(kbuf_repair_kokkos_target)
  if(NOT TARGET Kokkos::kokkos)
    return()
  endif()
  get_target_property(_aliased Kokkos::kokkos ALIASED_TARGET)
  get_target_property(_imported Kokkos::kokkos IMPORTED)
  if(_aliased OR NOT _imported)
    return()
  endif()
  get_target_property(_inc Kokkos::kokkos INTERFACE_INCLUDE_DIRECTORIES)
  if(NOT _inc)
    return()
  endif()
  set(_missing FALSE)
  foreach(_dir IN LISTS _inc)
    if(NOT _dir MATCHES "^\\$<" AND NOT EXISTS "${_dir}")
      set(_missing TRUE)
    endif()
  endforeach()
  if(_missing AND Kokkos_INCLUDE_DIRS)
    set_target_properties(Kokkos::kokkos PROPERTIES INTERFACE_INCLUDE_DIRECTORIES
                                                    "${Kokkos_INCLUDE_DIRS}")
  endif()
endfunction()

# Sets <out> to the device backend the found Kokkos enables (CUDA or HIP), else Serial.
function(kbuf_kokkos_default_backend out)
  set(_backend Serial)
  if(Kokkos_ENABLE_CUDA OR "CUDA" IN_LIST Kokkos_DEVICES)
    set(_backend CUDA)
  elseif(Kokkos_ENABLE_HIP OR "HIP" IN_LIST Kokkos_DEVICES)
    set(_backend HIP)
  endif()
  set(${out} ${_backend} PARENT_SCOPE)
endfunction()

# Fails with a clear message unless the found Kokkos enables <backend> (Serial, CUDA or HIP).
function(kbuf_check_backend backend)
  if(NOT backend MATCHES "^(Serial|CUDA|HIP)$")
    message(FATAL_ERROR "kbuf: KBUF_BACKEND='${backend}' is not one of Serial, CUDA, HIP")
  endif()
  if(backend STREQUAL "Serial")
    return()
  endif()
  string(TOUPPER "${backend}" _dev)
  if(NOT Kokkos_ENABLE_${_dev} AND NOT "${_dev}" IN_LIST Kokkos_DEVICES)
    message(FATAL_ERROR
      "kbuf: KBUF_BACKEND=${backend} but the Kokkos found at '${Kokkos_DIR}' "
      "(version ${Kokkos_VERSION}, devices: ${Kokkos_DEVICES}) lacks the ${backend} backend. "
      "Point Kokkos_ROOT at a Kokkos built with Kokkos_ENABLE_${_dev}=ON, or choose another "
      "KBUF_BACKEND.")
  endif()
endfunction()

# Defines the INTERFACE target kbuf_kokkoskernels for whatever Kokkos Kernels package was found:
# Kokkos::kokkoskernels (Kokkos Kernels' own CMake) or Debian's Trilinos-built one.
function(kbuf_kokkoskernels_target)
  if(TARGET kbuf_kokkoskernels)
    return()
  endif()
  add_library(kbuf_kokkoskernels INTERFACE)
  if(TARGET Kokkos::kokkoskernels)
    target_link_libraries(kbuf_kokkoskernels INTERFACE Kokkos::kokkoskernels)
  elseif(TARGET trilinos_kokkoskernels)
    target_link_libraries(kbuf_kokkoskernels INTERFACE trilinos_kokkoskernels Kokkos::kokkos)
    target_include_directories(kbuf_kokkoskernels SYSTEM INTERFACE ${KokkosKernels_INCLUDE_DIRS})
  else()
    message(FATAL_ERROR "kbuf: Kokkos Kernels was found but exports no known target "
                        "(Kokkos::kokkoskernels or trilinos_kokkoskernels)")
  endif()
endfunction()

# Sets <out> to SHARED or STATIC: how the found Kokkos' core library was built (Kokkos'
# Kokkos::kokkoscore, Trilinos' trilinos_kokkoscore), or UNKNOWN.
function(kbuf_kokkos_library_type out)
  set(_type UNKNOWN)
  foreach(_target IN ITEMS Kokkos::kokkoscore kokkoscore trilinos_kokkoscore)
    if(TARGET ${_target})
      get_target_property(_target_type ${_target} TYPE)
      if(_target_type STREQUAL "SHARED_LIBRARY")
        set(_type SHARED)
      elseif(_target_type STREQUAL "STATIC_LIBRARY")
        set(_type STATIC)
      endif()
      break()
    endif()
  endforeach()
  set(${out} ${_type} PARENT_SCOPE)
endfunction()
