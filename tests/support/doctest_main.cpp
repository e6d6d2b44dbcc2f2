// The main of every kbuf test executable: doctest (tests/support/doctest_run.hpp), run under
// Kokkos::ScopeGuard so that every allocator a test makes is created and destroyed between
// Kokkos' initialize and finalize.
#define DOCTEST_CONFIG_IMPLEMENT
#include <Kokkos_Core.hpp>

#include "doctest_run.hpp"

int main(int argc, char** argv) {
  Kokkos::ScopeGuard guard(argc, argv);
  return kbuf_test::run_doctest(argc, argv);
}
