# A stand-in Kokkos Kernels package that claims to be built for another Kokkos (9.9, elsewhere):
# config.kokkoskernels_mismatch_fails configures kbuf against it and expects a clear refusal.
set(PACKAGE_VERSION "9.9.0")
set(PACKAGE_VERSION_COMPATIBLE TRUE)
if(PACKAGE_FIND_VERSION STREQUAL PACKAGE_VERSION)
  set(PACKAGE_VERSION_EXACT TRUE)
endif()
