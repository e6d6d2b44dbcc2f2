// kbuf-advisor's prediction for a real adoption: the halo test library (tests/dropin/halo, shaped
// like Cabana's gather and scatter, adopting kbuf as an optional dependency) runs its passes
// under the advisor with no allocator, then under kbuf::use of a real allocator. What the
// advisor said of the two halo sites together (send_buffer and recv_buffer: the buffer, its
// regrowths and fallbacks) is what the allocator then holds; in the adopted run the advisor
// finds kbuf's records of those sites and no allocation left.
#include <doctest/doctest.h>

#include <Kokkos_Core.hpp>
#include <kbuf/kbuf.hpp>
#include <kbuf_advisor/advisor.hpp>

#include "halo_workload.hpp"

#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>

namespace {

// The advisor fed by Kokkos Tools callbacks, as its library is; allocations of `left_out`
// bytes (if not 0) are not passed on.
kbuf_advisor::Advisor* advisor = nullptr;
std::uint64_t left_out = 0;
std::set<const void*> left_out_live;

void on_allocate(Kokkos::Tools::SpaceHandle h, const char* label, const void* p, std::uint64_t n) {
  if (left_out != 0 && n == left_out) {
    left_out_live.insert(p);
    return;
  }
  advisor->allocate(h.name, label, p, n);
}
void on_deallocate(Kokkos::Tools::SpaceHandle h, const char* label, const void* p,
                   std::uint64_t n) {
  if (left_out_live.erase(p) != 0) return;
  advisor->deallocate(h.name, label, p, n);
}
void on_begin(const char* name, std::uint32_t, std::uint64_t* id) {
  *id = advisor->begin_kernel(name);
}
void on_end(std::uint64_t id) {
  advisor->end_kernel(id);
}

// Runs `f` under a fresh advisor; returns what it found.
template <class F>
kbuf_advisor::Results advise(F&& f) {
  using namespace Kokkos::Tools::Experimental;
  kbuf_advisor::Advisor a(kbuf_advisor::Settings{});
  advisor = &a;
  const EventSet previous = get_callbacks();
  set_allocate_data_callback(&on_allocate);
  set_deallocate_data_callback(&on_deallocate);
  set_begin_parallel_for_callback(&on_begin);
  set_end_parallel_for_callback(&on_end);
  set_begin_parallel_reduce_callback(&on_begin);
  set_end_parallel_reduce_callback(&on_end);
  f();
  set_callbacks(previous);
  advisor = nullptr;
  return a.finish();
}

using Space = halo::memory_space;
using Alloc = kbuf::BufferAllocator<Space>;
constexpr int passes = 3;

}  // namespace

TEST_CASE("the two halo sites together need the buffer a real adoption holds") {
  const std::vector<halo::Halo> halos = halo_workload::make_halos();
  const halo::Data data = halo_workload::make_data();
  const auto passes_of_the_library = [&] {
    for (int p = 0; p < passes; ++p) halo_workload::run_pass(halos, data);
  };
  const kbuf_advisor::Results released = advise(passes_of_the_library);
  REQUIRE(released.sites.size() >= 2);
  const std::set<std::string> top{released.sites[0].label, released.sites[1].label};
  CHECK(top == std::set<std::string>{"send_buffer", "recv_buffer"});
  const kbuf_advisor::Site& both = released.sites[1];

  // The library's empty buffers (a Gather's members before reserve()) are allocations Kokkos
  // makes and reports with a size of its own; adopted, they are temporaries of zero extent,
  // which take nothing. The same run without them:
  {
    const kbuf_advisor::Results empty =
        advise([] { const Kokkos::View<double**, Kokkos::LayoutRight, Space> v("empty", 0, 0); });
    REQUIRE(empty.allocations == 1);
    left_out = empty.bytes;
  }
  const kbuf_advisor::Results without_empty = advise(passes_of_the_library);
  left_out = 0;
  REQUIRE(without_empty.sites.size() >= 2);
  const kbuf_advisor::Site& nonempty = without_empty.sites[1];

  // kbuf's records on, as kbuf-advisor's library turns them on for its program.
  const char* before = std::getenv("KBUF_TOOLS_REPORT");
  const std::string saved = before != nullptr ? before : "";
  ::setenv("KBUF_TOOLS_REPORT", "1", 1);
  const kbuf_advisor::Results adopted = advise([&] {
    Alloc alloc_with_records(typename Alloc::execution_space(), 0, Alloc::default_alignment,
                             "halo-adopted");
    kbuf::use current(alloc_with_records);
    passes_of_the_library();
  });
  if (before != nullptr) {
    ::setenv("KBUF_TOOLS_REPORT", saved.c_str(), 1);
  } else {
    ::unsetenv("KBUF_TOOLS_REPORT");
  }
  // The adoption, measured: its allocator's numbers after each call.
  Alloc alloc(typename Alloc::execution_space(), 0, Alloc::default_alignment, "halo-test");
  std::uint64_t first_round_fallbacks = 0;
  {
    kbuf::use current(alloc);
    for (int p = 0; p < passes; ++p) {
      for (std::size_t s = 0; s < halo_workload::steps; ++s) {
        const halo::Halo& h = halos[s % halo_workload::num_halos];
        halo::gather(h, data);
        if (alloc.statistics().regrows == 0) first_round_fallbacks = alloc.statistics().fallbacks;
        halo::scatter(h, data);
        if (alloc.statistics().regrows == 0) first_round_fallbacks = alloc.statistics().fallbacks;
      }
    }
  }
  const kbuf::Statistics s = alloc.statistics();
  MESSAGE("the advisor on the released library: the halo sites together need ",
          both.cumulative_capacity, " bytes, ", both.cumulative_fallbacks, " fallbacks (",
          both.first_round_fallbacks, " in the first round), ", both.cumulative_regrows,
          " regrowths; without its empty buffers ", nonempty.cumulative_capacity, " bytes, ",
          nonempty.cumulative_fallbacks, " (", nonempty.first_round_fallbacks, "), ",
          nonempty.cumulative_regrows, "; the adopted library: ", alloc.capacity(), " bytes, ",
          s.fallbacks, " fallbacks (", first_round_fallbacks, "), ", s.regrows, " regrowths");
  CHECK(both.cumulative_capacity == alloc.capacity());
  CHECK(both.cumulative_regrows == s.regrows);
  CHECK(both.cumulative_fallbacks >= s.fallbacks);
  CHECK(nonempty.cumulative_capacity == alloc.capacity());
  CHECK(nonempty.cumulative_regrows == s.regrows);
  CHECK(nonempty.cumulative_fallbacks == s.fallbacks);
  CHECK(nonempty.first_round_fallbacks == first_round_fallbacks);

  // After adoption: the halo sites' temporaries come as kbuf's records, none are left.
  std::uint64_t halo_records = 0;
  for (const kbuf_advisor::Adopted& a : adopted.adopted) {
    CAPTURE(a.label);
    CHECK(a.allocator == "kbuf:halo-adopted");
    CHECK(a.space == released.sites[0].space);
    CHECK(a.left == 0);
    if (top.count(a.label) != 0) halo_records += a.temporaries;
  }
  CHECK(halo_records > 0);
  for (const kbuf_advisor::Named& n : adopted.labels) {
    CAPTURE(n.name);
    CHECK(top.count(n.name) == 0);
  }
}
