// Allocators made outside Kokkos' initialize/finalize window throw kbuf::logic_error naming the
// call, instead of failing inside Kokkos (Kokkos 5.1 refuses execution space instances made
// before initialize). This executable has its own main: Kokkos is initialized and finalized by
// the test itself, not by a ScopeGuard.
#define DOCTEST_CONFIG_IMPLEMENT
#include "doctest_run.hpp"  // tests/support: the run, and no-match-fails

#include <kbuf/kbuf.hpp>

#include <string>

namespace {
using HostAlloc = kbuf::BufferAllocator<Kokkos::HostSpace>;

// The message of the logic_error `make` throws, or "" when it throws none.
template <class F>
std::string logic_error_of(F make) {
  try {
    make();
  } catch (const kbuf::logic_error& e) {
    return e.what();
  }
  return "";
}

void check_refused(const char* when) {
  INFO("Kokkos ", when);
  const std::string a = logic_error_of([] { HostAlloc alloc(1024); });
  CHECK(a.find("kbuf::BufferAllocator(sizehint)") != std::string::npos);
  CHECK(a.find("Kokkos is not initialized") != std::string::npos);
  CHECK(a.find("Kokkos::initialize") != std::string::npos);
  const std::string b = logic_error_of([] { HostAlloc alloc(1024, 128); });
  CHECK(b.find("kbuf::BufferAllocator(sizehint, alignment)") != std::string::npos);
  CHECK(b.find("Kokkos is not initialized") != std::string::npos);
}
}  // namespace

TEST_CASE(
    "an allocator made before Kokkos::initialize or after Kokkos::finalize throws "
    "logic_error naming the call, and one made in between works") {
  REQUIRE(!Kokkos::is_initialized());
  check_refused("not yet initialized");

  Kokkos::initialize();
  {
    HostAlloc alloc(1024);
    CHECK(alloc.capacity() == 1024);
    auto t = alloc.allocate<double*>(16);
    CHECK(t.extent(0) == 16);
    HostAlloc bound(HostAlloc::execution_space(), 512, 128, "bound");
    CHECK(bound.alignment() == 128);
    const std::string none = logic_error_of([] { HostAlloc inside(64); });
    CHECK(none.empty());
  }
  Kokkos::finalize();

  REQUIRE(!Kokkos::is_initialized());
  check_refused("finalized");
}

int main(int argc, char** argv) {
  return kbuf_test::run_doctest(argc, argv);
}
