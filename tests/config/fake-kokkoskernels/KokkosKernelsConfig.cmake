# A stand-in Kokkos Kernels package laid out like Kokkos Kernels' own (see
# KokkosKernelsConfigVersion.cmake): it records the Kokkos it was "built" with the same way.
include(CMakeFindDependencyMacro)
IF(NOT Kokkos_FOUND)
  find_dependency(Kokkos HINTS /nonexistent/kokkos-9.9/lib/cmake/Kokkos)
ENDIF()
if(NOT TARGET Kokkos::kokkoskernels)
  add_library(Kokkos::kokkoskernels INTERFACE IMPORTED)
endif()
