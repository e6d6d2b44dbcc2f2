// kbuf-advisor's core fed events directly: verdicts, the replay's numbers, kbuf's own records,
// bounds on a long run, and the three files (threads: test_advisor_threads.cpp).
#include <doctest/doctest.h>

#include <kbuf/sizes.hpp>
#include <kbuf_advisor/advisor.hpp>

#include "advisor_test_support.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

namespace {

using namespace kbuf_advisor_test;  // Advisor, Results, address(), reason() ...

void kernels(Advisor& a, int n) {
  for (int i = 0; i < n; ++i) a.end_kernel(a.begin_kernel("k"));
}

std::string temp_dir() {
  char name[] = "/tmp/kbuf-advisor-test-XXXXXX";
  const char* dir = ::mkdtemp(name);
  REQUIRE(dir != nullptr);
  return dir;
}

nlohmann::json read_json(const std::string& path) {
  std::ifstream f(path);
  REQUIRE(f.good());
  return nlohmann::json::parse(f);
}

}  // namespace

TEST_CASE("nested temporaries repeated three times: one buffer, two first-round fallbacks") {
  Advisor a(Settings{});
  for (int round = 0; round < 3; ++round) {
    a.push_region("step");
    a.allocate("Host", "outer", address(1), 1000);
    kernels(a, 2);
    a.allocate("Host", "inner", address(2), 2000);
    kernels(a, 1);
    a.deallocate("Host", "inner", address(2), 2000);
    a.deallocate("Host", "outer", address(1), 1000);
    a.pop_region();
  }
  const Results r = a.finish();
  CHECK(r.allocations == 6);
  CHECK(r.deallocations == 6);
  CHECK(r.bytes == 9000);
  REQUIRE(r.replays.size() == 1);
  CHECK(r.served() == 6);
  CHECK(r.first_round_fallbacks() == 2);
  CHECK(r.fallbacks() == 2);
  CHECK(r.replays[0].regrows == 1);
  // 1000 bytes padded to the alignment (64), then 2000: the need kbuf's rules give.
  CHECK(r.capacity() == kbuf::buffer_size(1024 + 2000));
  CHECK(r.allocations_avoided() == 4 - 1);  // four from the buffer, one buffer allocated
  REQUIRE(r.labels.size() == 2);
  CHECK(r.labels[0].a.count == 3);
  CHECK(r.labels[0].a.lifo_frees == 3);
  CHECK(r.labels[0].a.kernels.quantile(0.5) ==
        doctest::Approx(r.labels[0].name == "inner" ? 1 : 3));
  const auto step = std::find_if(r.regions.begin(), r.regions.end(),
                                 [](const kbuf_advisor::Named& n) { return n.name == "step"; });
  REQUIRE(step != r.regions.end());
  CHECK(step->instances == 3);
  CHECK(step->a.count == 6);
  CHECK(step->peak_held == 3000);
}

TEST_CASE("labels of several memory spaces: each counted under its own space, found again") {
  Advisor a(Settings{});
  const char* spaces[] = {"Host", "Cuda", "CudaUVM", "HIP", "SYCL"};  // a new index each
  std::uintptr_t next = 1;
  for (int round = 0; round < 3; ++round) {
    for (const char* space : spaces) {
      for (const char* label : {"tmp", "state"}) {
        a.allocate(space, label, address(next), 256);
        a.deallocate(space, label, address(next), 256);
        ++next;
      }
    }
  }
  const Results r = a.finish();
  CHECK(r.allocations == 30);
  REQUIRE(r.labels.size() == 10);
  for (const kbuf_advisor::Named& n : r.labels) {
    CAPTURE(n.space);
    CAPTURE(n.name);
    CHECK(n.a.count == 3);
  }
}

TEST_CASE("an allocation that lives more kernels than the limit is not served") {
  Settings s;
  s.max_kernels = 4;
  Advisor a(s);
  a.allocate("Host", "state", address(1), 512);
  kernels(a, 5);
  allocate_and_free(a, "Host", "tmp", 2, 256);
  a.deallocate("Host", "state", address(1), 512);
  const Results r = a.finish();
  CHECK(reason(r, Reason::too_long) == 1);
  CHECK(r.served() == 1);
}

TEST_CASE("a temporary freed before a newer one is held until it goes, within the hold limit") {
  Settings s;
  s.max_kernels = 8;
  s.max_hold = 2;
  Advisor a(s);
  // Held one kernel past its free: served, released late.
  a.allocate("Host", "a", address(1), 100);
  a.allocate("Host", "b", address(2), 100);
  a.deallocate("Host", "a", address(1), 100);
  kernels(a, 1);
  a.deallocate("Host", "b", address(2), 100);
  // Would be held five kernels past its free: the newer one is not served.
  a.allocate("Host", "c", address(3), 100);
  a.allocate("Host", "d", address(4), 100);
  a.deallocate("Host", "c", address(3), 100);
  kernels(a, 5);
  a.deallocate("Host", "d", address(4), 100);
  const Results r = a.finish();
  CHECK(r.served() == 3);
  CHECK(r.replays.at(0).released_late == 1);
  CHECK(reason(r, Reason::out_of_order) == 1);
}

TEST_CASE(
    "an allocation never freed is live at the end, and a long wait is decided by the window") {
  Settings s;
  s.window = 8;
  Advisor a(s);
  a.allocate("Host", "kept", address(0), 64);
  for (std::uintptr_t i = 1; i <= 20; ++i) {
    allocate_and_free(a, "Host", "tmp", i, 64);
  }
  a.allocate("Host", "leaked", address(99), 64);
  const Results r = a.finish();
  CHECK(reason(r, Reason::window) == 1);  // "kept": live while its thread made 8 more events
  CHECK(reason(r, Reason::live_at_end) == 1);
  CHECK(r.served() == 20);
  CHECK(r.peak_pending <= 9);
}

TEST_CASE("kbuf's own records (kbuf:* spaces) are reported apart, never as allocations") {
  Advisor a(Settings{});
  a.allocate("Host", "kbuf::buffer", address(1), 4096);
  a.allocate("kbuf:mine", "temporary", address(1), 100);
  allocate_and_free(a, "kbuf:mine", "temporary", 3, 200);
  a.deallocate("kbuf:mine", "temporary", address(1), 100);
  a.deallocate("Host", "kbuf::buffer", address(1), 4096);
  const Results r = a.finish();
  CHECK(r.allocations == 1);
  CHECK(r.deallocations == 1);
  CHECK(r.bytes == 4096);
  REQUIRE(r.kbuf_spaces.size() == 1);
  CHECK(r.kbuf_spaces[0].name == "kbuf:mine");
  CHECK(r.kbuf_spaces[0].temporaries == 2);
  CHECK(r.kbuf_spaces[0].releases == 2);
  CHECK(r.kbuf_spaces[0].peak_held == 300);
  CHECK(r.labels.size() == 1);
}

TEST_CASE("a kbuf allocator's own buffer and fallbacks are never taken for temporaries") {
  Advisor a(Settings{});
  // The allocator "mine": its buffer, then its records, a fallback and its record.
  a.allocate("Host", "mine::buffer", address(1), 4096);
  a.allocate("kbuf:mine", "t", address(1), 4000);
  kbuf_fallback_temporary(a, "mine", "t", 2, 500);
  a.deallocate("kbuf:mine", "t", address(1), 4000);
  a.deallocate("Host", "mine::buffer", address(1), 4096);
  // A program's own label that merely ends the same way, with no kbuf records behind it.
  allocate_and_free(a, "Host", "halo::buffer", 3, 256);
  const Results r = a.finish();
  CHECK(r.allocations == 3);
  CHECK(reason(r, Reason::kbuf_own) == 2);
  CHECK(r.served() == 1);
  check_served_only(r, "halo::buffer");
}

TEST_CASE("a long run keeps the advisor's memory bounded and says what it left out") {
  Settings s;
  s.trace_events = 1000;
  s.max_names = 16;
  Advisor a(s);
  constexpr std::uintptr_t n = 1000000;
  for (std::uintptr_t i = 0; i < n; ++i) {
    if (i % 1000 == 0) a.push_region("step");
    const std::string label = "site " + std::to_string(i % 100);
    a.allocate("Host", label.c_str(), address(i % 7), 1 + i % 5000);
    a.end_kernel(a.begin_kernel("k"));
    a.deallocate("Host", label.c_str(), address(i % 7), 1 + i % 5000);
    if (i % 1000 == 999) a.pop_region();
  }
  const Results r = a.finish();
  CHECK(r.allocations == n);
  CHECK(r.trace.size() == 1000);
  CHECK(r.trace_dropped == n + n / 1000 - 1000);
  CHECK(r.series.size() <= 2048);
  CHECK(r.series_width > 1e-6);
  CHECK(r.markers.size() <= 129);
  CHECK(r.labels.size() == 17);  // 16 kept and "(other)"
  CHECK(r.names_dropped == n - n / 100 * 16);
  CHECK(r.peak_pending <= 2);
  CHECK(r.served() == n);
}

TEST_CASE("the three files: the JSON's fixed fields, the trace's format, the SVG") {
  Advisor a(Settings{});
  a.push_region("outer");
  a.allocate("Host", "x", address(1), 1000);
  a.allocate("Host", "y", address(2), 10);
  a.end_kernel(a.begin_kernel("work"));
  const char* const odd = "a \"quoted\" back\\slash\nkernel";  // escaped in the trace
  a.end_kernel(a.begin_kernel(odd));
  a.begin_deep_copy("Host", "y", "Host", "x", 80);
  a.end_deep_copy();
  a.deallocate("Host", "y", address(2), 10);
  a.deallocate("Host", "x", address(1), 1000);
  allocate_and_free(a, "Host", "y", 3, 10);
  a.pop_region();
  const Results r = a.finish();
  const std::string dir = temp_dir();
  REQUIRE(kbuf_advisor::write_outputs(r, dir).empty());

  const nlohmann::json j = read_json(dir + "/kbuf-advisor.json");
  CHECK(j.at("allocations") == 3);
  CHECK(j.at("deallocations") == 3);
  CHECK(j.at("bytes") == 1020);
  const auto& labels = j.at("labels");
  REQUIRE(labels.size() == 2);
  CHECK(labels[0].at("label") == "y");  // most allocations first
  CHECK(labels[0].at("count") == 2);
  CHECK(labels[1].at("label") == "x");
  for (const auto& l : labels) {
    CHECK(l.contains("space"));
    CHECK(l.contains("bytes"));
    CHECK(l.contains("median_lifetime_kernels"));
  }
  CHECK(j.at("kbuf").at("capacity_bytes") == r.capacity());
  CHECK(j.at("kbuf").at("allocations_avoided") == r.allocations_avoided());
  CHECK(j.at("kbuf").at("first_round_fallbacks") == r.first_round_fallbacks());

  // The trace-event format: an object with traceEvents; every event has name, ph, pid; X events
  // ts and dur >= 0, C events ts and numeric args; X events of one thread nest.
  const nlohmann::json t = read_json(dir + "/kbuf-advisor.trace.json");
  REQUIRE(t.at("traceEvents").is_array());
  std::map<int, std::vector<std::pair<double, double>>> spans;
  int complete = 0, counters = 0, thread_names = 0;
  bool odd_seen = false, copy_seen = false;
  for (const auto& e : t.at("traceEvents")) {
    REQUIRE(e.contains("name"));
    REQUIRE(e.contains("pid"));
    const std::string ph = e.at("ph");
    CHECK((ph == "X" || ph == "C" || ph == "M"));
    if (ph == "M" && e.at("name") == "thread_name") {
      ++thread_names;
      CHECK(e.at("args").at("name").is_string());
    }
    if (ph == "X") {
      ++complete;
      CHECK(e.at("ts").is_number());
      CHECK(e.at("tid").is_number());
      if (e.at("name") == odd) odd_seen = true;
      if (e.at("cat") == "deep_copy") {
        copy_seen = true;
        CHECK(e.at("args").at("bytes") == 80);
        CHECK(e.at("args").at("to") == "y [Host]");
        CHECK(e.at("args").at("from") == "x [Host]");
      }
      CHECK(e.at("dur").get<double>() >= 0);
      spans[e.at("tid").get<int>()].emplace_back(
          e.at("ts").get<double>(), e.at("ts").get<double>() + e.at("dur").get<double>());
    } else if (ph == "C") {
      ++counters;
      CHECK(e.at("ts").is_number());
      for (const auto& [k, v] : e.at("args").items()) CHECK(v.is_number());
    }
  }
  CHECK(complete == 4);  // the region, two kernels, the deep copy
  CHECK(thread_names == 1);
  CHECK(odd_seen);
  CHECK(copy_seen);
  CHECK(counters >= 1);
  for (auto& [tid, v] : spans) {
    for (const auto& a1 : v) {
      for (const auto& b1 : v) {  // disjoint or nested, never overlapping in part
        const bool disjoint = a1.second <= b1.first || b1.second <= a1.first;
        const bool nested = (a1.first <= b1.first && b1.second <= a1.second) ||
                            (b1.first <= a1.first && a1.second <= b1.second);
        CHECK((disjoint || nested));
      }
    }
  }
  std::ifstream svg(dir + "/kbuf-advisor.svg");
  std::stringstream text;
  text << svg.rdbuf();
  CHECK(text.str().rfind("<svg ", 0) == 0);
  CHECK(text.str().find("temporaries") != std::string::npos);
  CHECK(text.str().find("</svg>") != std::string::npos);
  for (const char* f : {"kbuf-advisor.json", "kbuf-advisor.trace.json", "kbuf-advisor.svg"}) {
    std::remove((dir + "/" + f).c_str());
  }
  ::rmdir(dir.c_str());
}

TEST_CASE("an output folder that cannot be written is said, and nothing else happens") {
  Advisor a(Settings{});
  const Results r = a.finish();
  const std::string bad = kbuf_advisor::write_outputs(r, "/proc/kbuf-advisor-cannot-be-here");
  CHECK(bad.find("cannot make the output folder '/proc/kbuf-advisor-cannot-be-here'") !=
        std::string::npos);
  const std::string dir = temp_dir();
  const std::string file = dir + "/not-a-folder";
  std::ofstream(file) << "x";
  CHECK(kbuf_advisor::write_outputs(r, file).find("is not a folder") != std::string::npos);
  std::remove(file.c_str());
  ::rmdir(dir.c_str());
}

TEST_CASE("the hold limit follows the lifetime limit unless set, and bad values are said") {
  ::setenv("KBUF_ADVISOR_KERNELS", "5", 1);
  ::unsetenv("KBUF_ADVISOR_HOLD");
  std::vector<std::string> warnings;
  Settings s = Settings::from_environment(warnings);
  CHECK(s.max_kernels == 5);
  CHECK(s.max_hold == 5);
  ::setenv("KBUF_ADVISOR_HOLD", "3", 1);
  s = Settings::from_environment(warnings);
  CHECK(s.max_hold == 3);
  CHECK(warnings.empty());
  ::setenv("KBUF_ADVISOR_HOLD", "-1", 1);
  s = Settings::from_environment(warnings);
  CHECK(s.max_hold == 5);
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0] == "KBUF_ADVISOR_HOLD='-1' is not a whole number >= 0; using 5");
  ::unsetenv("KBUF_ADVISOR_KERNELS");
  ::unsetenv("KBUF_ADVISOR_HOLD");
}

TEST_CASE(
    "a library call bracketed by a region: what it frees before the region ends is a temporary") {
  // One call of a library (ArborX-like): "permute" lives through 30 kernels of the call, the
  // "linear_ordering" inside it through 20; both are freed before the call's region ends.
  const auto call = [](Advisor& a, std::uintptr_t i) {
    a.push_region("ArborX::BVH::query");
    a.allocate("Host", "permute", address(i), 4000);
    kernels(a, 10);
    a.allocate("Host", "linear_ordering", address(i + 1), 8000);
    kernels(a, 20);
    a.deallocate("Host", "linear_ordering", address(i + 1), 8000);
    a.deallocate("Host", "permute", address(i), 4000);
    a.pop_region();
  };
  for (const bool regions : {true, false}) {
    CAPTURE(regions);
    Settings s;
    s.regions = regions;
    Advisor a(s);
    for (std::uintptr_t step = 0; step < 3; ++step) call(a, 2 * step);
    const Results r = a.finish();
    CHECK(r.served() == (regions ? 6 : 0));
    CHECK(reason(r, Reason::too_long) == (regions ? 0 : 6));
    if (regions) {
      // One buffer for both, nested: 4000 bytes padded to 64, then 8000.
      CHECK(r.capacity() == kbuf::buffer_size(4032 + 8000));
      CHECK(r.allocations_avoided() == 4 - 1);  // four from the buffer, one buffer allocated
    }
  }
}

TEST_CASE("past its region's end the kernel rule decides, and so does it outside every region") {
  Settings s;
  s.max_kernels = 4;
  Advisor a(s);
  // Made in a region, freed after it ended: many kernels later lives too long, one kernel later
  // is a temporary.
  a.push_region("call");
  a.allocate("Host", "result", address(1), 100);
  a.allocate("Host", "handed_back", address(2), 100);
  kernels(a, 1);
  a.pop_region();
  a.deallocate("Host", "handed_back", address(2), 100);
  kernels(a, 10);
  a.deallocate("Host", "result", address(1), 100);
  // Outside every region: the kernel rule alone.
  a.allocate("Host", "state", address(3), 100);
  kernels(a, 10);
  a.deallocate("Host", "state", address(3), 100);
  const Results r = a.finish();
  CHECK(r.served() == 1);
  CHECK(reason(r, Reason::too_long) == 2);
  check_served_only(r, "handed_back");
}

TEST_CASE("a temporary freed before a newer one is held to its region's end, not past it") {
  Settings s;
  s.max_kernels = 8;
  s.max_hold = 2;
  for (const bool regions : {true, false}) {
    CAPTURE(regions);
    s.regions = regions;
    Advisor a(s);
    // "a" freed first, "b" five kernels later, both inside the region "a" was made in: holding
    // "a" until "b" goes is what a scope opened with the region does.
    a.push_region("outer");
    a.allocate("Host", "a", address(1), 100);
    a.push_region("inner");
    a.allocate("Host", "b", address(2), 100);
    a.deallocate("Host", "a", address(1), 100);
    kernels(a, 5);
    a.deallocate("Host", "b", address(2), 100);
    a.pop_region();
    a.pop_region();
    // "c" made in a region that ends before "d" is freed: held past it, "d" is not served.
    a.push_region("outer");
    a.push_region("inner");
    a.allocate("Host", "c", address(3), 100);
    a.allocate("Host", "d", address(4), 100);
    a.deallocate("Host", "c", address(3), 100);
    a.pop_region();
    kernels(a, 5);
    a.deallocate("Host", "d", address(4), 100);
    a.pop_region();
    const Results r = a.finish();
    CHECK(r.served() == (regions ? 3 : 2));
    CHECK(reason(r, Reason::out_of_order) == (regions ? 1 : 2));
    CHECK(r.replays.at(0).released_late == (regions ? 1 : 0));
  }
}

TEST_CASE("KBUF_ADVISOR_REGIONS and KBUF_ADVISOR_PICK are read, bad values said") {
  ::setenv("KBUF_ADVISOR_REGIONS", "0", 1);
  ::setenv("KBUF_ADVISOR_PICK", "permute,,linear_ordering,permute", 1);
  std::vector<std::string> warnings;
  Settings s = Settings::from_environment(warnings);
  CHECK_FALSE(s.regions);
  CHECK(s.pick == std::vector<std::string>{"permute", "linear_ordering"});
  CHECK(warnings.empty());
  ::setenv("KBUF_ADVISOR_REGIONS", "yes", 1);
  s = Settings::from_environment(warnings);
  CHECK(s.regions);
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0] == "KBUF_ADVISOR_REGIONS='yes' is not 1 or 0; using 1");
  ::unsetenv("KBUF_ADVISOR_REGIONS");
  ::unsetenv("KBUF_ADVISOR_PICK");
  CHECK(Settings::from_environment(warnings).pick.empty());
}
