// The main of every kbuf test executable: doctest, run under Kokkos::ScopeGuard so that every
// allocator a test makes is created and destroyed between Kokkos' initialize and finalize.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <Kokkos_Core.hpp>

int main(int argc, char** argv) {
  Kokkos::ScopeGuard guard(argc, argv);
  doctest::Context context;
  context.applyCommandLine(argc, argv);
  return context.run();
}
