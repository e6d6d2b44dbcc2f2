// kbuf's drop-in across shared objects built as libraries ship them (-fvisibility=hidden,
// -fvisibility-inlines-hidden): the halo library is one (kbuf_test_halo_shared), halo_caller a
// second that calls it. A guard made in the executable or in either shared object, a scope, the
// process allocators and the current allocator are one per process: the library's buffers come
// from the allocator its callers make current wherever they make it, and results are those of
// the library run without kbuf.
#include <doctest/doctest.h>

#include <kbuf/kbuf.hpp>

#include "halo.hpp"
#include "halo_caller.hpp"
#include "halo_workload.hpp"

#include <cstddef>
#include <vector>

namespace {

using space = halo::memory_space;
using Alloc = kbuf::BufferAllocator<space>;
using namespace halo_workload;

// What the library computes with plain Views (no allocator current).
std::vector<double> without_kbuf() {
  REQUIRE(kbuf::current<space>() == nullptr);
  const auto halos = make_halos();
  halo::Data data = make_data();
  halo_caller::run(halos, data, steps);
  return to_host(data);
}

}  // namespace

TEST_CASE("a kbuf::use made in the executable is seen inside both hidden-visibility libraries") {
  const auto halos = make_halos();
  halo::Data plain = make_data();
  halo::gather(halos[1], plain);
  halo_caller::run(halos, plain, steps);
  const std::vector<double> expected = to_host(plain);
  halo::Data data = make_data();
  Alloc alloc(64 * 1024);
  {
    kbuf::use current(alloc);
    CHECK(halo_caller::current_here() == &alloc);
    halo::gather(halos[1], data);  // the executable calls the library
    const std::size_t direct = alloc.statistics().temporaries;
    CHECK(direct >= 2);                    // its send and receive buffers, at least
    halo_caller::run(halos, data, steps);  // through the second shared object
    CHECK(alloc.statistics().temporaries >= direct + 2 * 2 * steps);
    CHECK(alloc.empty());
  }
  CHECK(halo_caller::current_here() == nullptr);
  CHECK(alloc.statistics().fallbacks == 0);
  CHECK(to_host(data) == expected);
}

TEST_CASE("a kbuf::use made in one shared object serves the library in another") {
  const std::vector<double> expected = without_kbuf();
  const auto halos = make_halos();
  halo::Data data = make_data();
  Alloc alloc(64 * 1024);
  halo_caller::run_using(alloc, halos, data, steps);
  CHECK(alloc.statistics().temporaries >= 2 * 2 * steps);
  CHECK(alloc.empty());
  CHECK(kbuf::current<space>() == nullptr);  // the guard ended there
  CHECK(to_host(data) == expected);
}

TEST_CASE(
    "the process allocators are one per process: use_process_allocators in the executable "
    "or in a shared object serves the library from the same allocator") {
  const std::vector<double> expected = without_kbuf();
  const auto halos = make_halos();
  Alloc& process = kbuf::process_allocator<space>();
  CHECK(halo_caller::process_allocator_here() == &process);
  {
    halo::Data data = make_data();
    // What the allocator served, from its buffer or by fallbacks (the empty buffers apart).
    const auto served = [&process] {
      return process.statistics().temporaries + process.statistics().fallbacks;
    };
    const std::size_t before = served();
    {
      kbuf::use_process_allocators guard;
      CHECK(kbuf::current<space>() == &process);
      CHECK(halo_caller::current_here() == &process);
      halo_caller::run(halos, data, steps);
    }
    CHECK(served() >= before + 2 * 2 * steps);
    CHECK(halo_caller::current_here() == nullptr);
    CHECK(to_host(data) == expected);
  }
  {
    halo::Data data = make_data();
    // What the allocator served, from its buffer or by fallbacks (the empty buffers apart).
    const auto served = [&process] {
      return process.statistics().temporaries + process.statistics().fallbacks;
    };
    const std::size_t before = served();
    halo_caller::run_with_process_allocators(halos, data, steps);
    CHECK(served() >= before + 2 * 2 * steps);
    CHECK(to_host(data) == expected);
  }
  CHECK(process.empty());
}

TEST_CASE(
    "a gather the executable keeps, built in a scope the executable opened, holds plain "
    "Views across the shared objects") {
  const auto halos = make_halos();
  halo::Data data = make_data();
  Alloc alloc(64 * 1024);
  kbuf::use current(alloc);
  std::vector<halo::KeptGather> kept;
  {
    auto scope = kbuf::scope<space>();           // the executable's own scope
    kept.emplace_back(halos[1], data);           // built inside it
    CHECK(alloc.statistics().temporaries == 0);  // none of its buffers came from the scope
  }
  CHECK(alloc.empty());
  kept.front().apply();  // its buffers are its own: valid after the scope
  auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), data);
  for (std::size_t i = 0; i < halos[1].num_ghost(); ++i) {
    const auto owned = static_cast<std::size_t>(export_id(1, i));
    for (std::size_t c = 0; c < comps; ++c) {
      INFO("ghost ", i, ", component ", c);
      CHECK(host(num_owned + i, c) == host(owned, c));
    }
  }
}
