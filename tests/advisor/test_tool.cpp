// libkbuf-advisor.so loaded into a Kokkos program (KOKKOS_PROFILE_LIBRARY / KOKKOS_TOOLS_LIBS, set
// by CTest), beside a tiny counting tool of this test's own: Kokkos Tools callbacks chained after
// the advisor's, the way kbuf-tebd's allocation counter chains. The program allocates nested
// temporaries and long-lived Views, from several host threads at once, copies, opens regions and
// takes kbuf temporaries; at Kokkos::finalize the advisor writes kbuf-advisor.json, and its counts
// must be the raw events' counts.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <Kokkos_Core.hpp>
#include <kbuf/kbuf.hpp>

#include <nlohmann/json.hpp>

#include "doctest_run.hpp"

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

// ---- The counting tool ----------------------------------------------------------------------
struct Counts {
  std::uint64_t allocations = 0, deallocations = 0, bytes = 0, kbuf_records = 0, kernels = 0;
  std::map<std::string, std::uint64_t> per_label;
};
std::mutex counts_mutex;
Counts counts;
Kokkos::Tools::Experimental::EventSet previous;

bool kbuf_space(const char* name) {
  return std::strncmp(name, "kbuf:", 5) == 0;
}

void on_allocate(Kokkos::Tools::SpaceHandle h, const char* label, const void* p, std::uint64_t n) {
  if (previous.allocate_data != nullptr) previous.allocate_data(h, label, p, n);
  std::lock_guard<std::mutex> lock(counts_mutex);
  if (kbuf_space(h.name)) {
    ++counts.kbuf_records;
    return;
  }
  ++counts.allocations;
  counts.bytes += n;
  ++counts.per_label[label];
}
void on_deallocate(Kokkos::Tools::SpaceHandle h, const char* label, const void* p,
                   std::uint64_t n) {
  if (previous.deallocate_data != nullptr) previous.deallocate_data(h, label, p, n);
  std::lock_guard<std::mutex> lock(counts_mutex);
  if (!kbuf_space(h.name)) ++counts.deallocations;
}
template <Kokkos::Tools::beginFunction Kokkos::Tools::Experimental::EventSet::*Member>
void on_begin(const char* name, std::uint32_t dev, std::uint64_t* id) {
  if (previous.*Member != nullptr) (previous.*Member)(name, dev, id);
  std::lock_guard<std::mutex> lock(counts_mutex);
  ++counts.kernels;
}

void install_counter() {
  using namespace Kokkos::Tools::Experimental;
  previous = get_callbacks();
  set_allocate_data_callback(&on_allocate);
  set_deallocate_data_callback(&on_deallocate);
  set_begin_parallel_for_callback(&on_begin<&EventSet::begin_parallel_for>);
  set_begin_parallel_reduce_callback(&on_begin<&EventSet::begin_parallel_reduce>);
  set_begin_parallel_scan_callback(&on_begin<&EventSet::begin_parallel_scan>);
}
void remove_counter() {
  Kokkos::Tools::Experimental::set_callbacks(previous);
}

// ---- The program ----------------------------------------------------------------------------
using View = Kokkos::View<double*, Kokkos::HostSpace>;
constexpr int steps = 5, threads = 4, per_thread = 200;

struct Fill {
  View v;
  double x;
  KOKKOS_INLINE_FUNCTION void operator()(int i) const { v(i) = x * i; }
};

double one_step(int step, View& state) {
  Kokkos::Profiling::pushRegion("time step");
  View work(Kokkos::ViewAllocateWithoutInitializing("test::work"), 1000);
  Kokkos::parallel_for("fill", Kokkos::RangePolicy<Kokkos::Serial>(0, 1000), Fill{work, 1.0});
  {
    View inner(Kokkos::ViewAllocateWithoutInitializing("test::inner"), 300 + step);
    Kokkos::parallel_for("fill", Kokkos::RangePolicy<Kokkos::Serial>(0, 300), Fill{inner, 2.0});
    Kokkos::deep_copy(Kokkos::subview(state, std::make_pair(0, 300)),
                      Kokkos::subview(inner, std::make_pair(0, 300)));
  }
  double sum = 0;
  Kokkos::parallel_reduce(
      "sum", Kokkos::RangePolicy<Kokkos::Serial>(0, 1000),
      KOKKOS_LAMBDA(int i, double& s) { s += work(i); }, sum);
  Kokkos::Profiling::popRegion();
  return sum;
}

struct Outcome {
  Counts counts;
  nlohmann::json json;
  bool json_read = false;
  double result = 0;
};

Outcome run_program() {
  Outcome o;
  ::setenv("KOKKOS_PROFILE_LIBRARY", KBUF_TEST_ADVISOR_LIBRARY, 1);  // Kokkos 3.x
  ::setenv("KOKKOS_TOOLS_LIBS", KBUF_TEST_ADVISOR_LIBRARY, 1);       // Kokkos 4.x
  ::setenv("KBUF_ADVISOR_OUTPUT", KBUF_TEST_ADVISOR_OUTPUT, 1);
  ::setenv("KBUF_ADVISOR_REPORT", "off", 1);
  std::remove(KBUF_TEST_ADVISOR_OUTPUT "/kbuf-advisor.json");
  int argc = 1;
  char name[] = "kbuf-test-advisor-tool";
  char* argv[] = {name, nullptr};
  Kokkos::initialize(argc, argv);
  install_counter();
  {
    View state("test::state", 1000);
    for (int s = 0; s < steps; ++s) o.result += one_step(s, state);
    // Host threads allocating and freeing at once (no kernels: Kokkos 3.4's Serial instance is
    // not for several threads).
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([] {
        for (int i = 0; i < per_thread; ++i) {
          View a(Kokkos::ViewAllocateWithoutInitializing("test::thread"), 64 + i);
          View b(Kokkos::ViewAllocateWithoutInitializing("test::thread"), 32);
        }
      });
    }
    for (auto& th : pool) th.join();
    // A kbuf allocator made while the tool is loaded reports its temporaries in kbuf:<label>.
    kbuf::BufferAllocator<Kokkos::HostSpace> alloc(Kokkos::DefaultHostExecutionSpace(), 0, 64,
                                                   "tool-test");
    for (int round = 0; round < 3; ++round) {
      auto scope = alloc.scope();
      (void)alloc.allocate<double*>(100);
      (void)alloc.allocate<double*>(50);
    }
  }
  remove_counter();
  o.counts = counts;
  Kokkos::finalize();
  std::ifstream f(KBUF_TEST_ADVISOR_OUTPUT "/kbuf-advisor.json");
  if (f) {
    o.json = nlohmann::json::parse(f);
    o.json_read = true;
  }
  return o;
}

// Each CTest test is a process of its own: the program runs once in each.
const Outcome& outcome() {
  static const Outcome o = run_program();
  return o;
}

std::uint64_t label_count(const nlohmann::json& j, const std::string& label) {
  for (const auto& l : j.at("labels")) {
    if (l.at("label") == label) return l.at("count").get<std::uint64_t>();
  }
  return 0;
}

}  // namespace

TEST_CASE("the advisor's counts are the raw events' counts") {
  const Outcome& o = outcome();
  REQUIRE(o.json_read);
  const nlohmann::json& j = o.json;
  CHECK(o.counts.allocations > steps * 2 + threads * per_thread * 2);
  CHECK(j.at("allocations") == o.counts.allocations);
  CHECK(j.at("deallocations") == o.counts.deallocations);
  CHECK(j.at("bytes") == o.counts.bytes);
  CHECK(j.at("kernels") == o.counts.kernels);
  for (const auto& entry : o.counts.per_label) {  // no structured binding: CAPTURE's lambda
    const std::string& label = entry.first;
    CAPTURE(label);
    CHECK(label_count(j, label) == entry.second);
  }
  std::uint64_t prev = UINT64_MAX;
  for (const auto& l : j.at("labels")) {  // most allocations first
    CHECK(l.at("count").get<std::uint64_t>() <= prev);
    prev = l.at("count").get<std::uint64_t>();
  }
}

TEST_CASE("kbuf's own temporaries are reported apart, never counted as allocations") {
  const Outcome& o = outcome();
  REQUIRE(o.json_read);
  CHECK(o.counts.kbuf_records == 6);
  std::uint64_t records = 0;
  for (const auto& k : o.json.at("kbuf_records")) {
    CHECK(k.at("space") == "kbuf:tool-test");
    records += k.at("temporaries").get<std::uint64_t>();
  }
  CHECK(records == o.counts.kbuf_records);
  CHECK(label_count(o.json, "temporary") == 0);
  // By label, in the memory space of the allocator's buffer.
  std::uint64_t adopted = 0;
  for (const auto& a : o.json.at("adopted")) {
    CHECK(a.at("allocator") == "kbuf:tool-test");
    CHECK(a.at("space") == "Host");
    adopted += a.at("temporaries").get<std::uint64_t>();
  }
  CHECK(adopted == o.counts.kbuf_records);
}

TEST_CASE("the time step's temporaries are served from one buffer, the state is not") {
  const Outcome& o = outcome();
  REQUIRE(o.json_read);
  const nlohmann::json& j = o.json;
  for (const auto& l : j.at("labels")) {
    const std::string label = l.at("label");
    if (label == "test::work" || label == "test::inner" || label == "test::thread") {
      CAPTURE(label);
      CHECK(l.at("served") == l.at("count"));
    }
    if (label == "test::state") CHECK(l.at("served") == 0);
  }
  // Each host thread gets its own allocator in the replay (one that exited hands its slot and
  // allocator to the next, as kbuf::AllocatorPool does).
  CHECK(j.at("threads") == threads + 1);
  CHECK(j.at("kbuf").at("allocators").size() == j.at("thread_slots"));
  CHECK(j.at("kbuf").at("allocations_avoided").get<std::int64_t>() > 0);
  bool region = false;
  for (const auto& r : j.at("regions_detail")) {
    if (r.at("region") == "time step") {
      region = true;
      CHECK(r.at("instances") == steps);
      // Two Views a step, and Kokkos' own scratch for the first reduction if it came then.
      CHECK(r.at("count") >= 2 * steps);
      CHECK(r.at("count") <= 2 * steps + 1);
    }
  }
  CHECK(region);
}

int main(int argc, char** argv) {
  return kbuf_test::run_doctest(argc, argv);
}
