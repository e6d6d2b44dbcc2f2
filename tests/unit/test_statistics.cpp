// Region statistics: reset_peaks() starts a new measurement region, and Statistics prints as one
// readable line.
#include <doctest/doctest.h>

#include "test_support.hpp"

#include <sstream>
#include <string>

using namespace kbuf_test;
using namespace kbuf::literals;

namespace {
std::string text_of(const kbuf::Statistics& s) {
  std::ostringstream os;
  os << s;
  return os.str();
}
}  // namespace

TEST_CASE("Statistics prints every counter on one line, in a fixed wording") {
  kbuf::Statistics s;
  s.temporaries = 120;
  s.fallbacks = 2;
  s.fallback_bytes = 4096;
  s.regrows = 1;
  s.resets = 60;
  s.fences = 3;
  s.peak_used = 65536;
  s.peak_live = 4;
  s.limit_refusals = 5;
  CHECK(text_of(s) ==
        "temporaries 120, fallbacks 2 (4096 bytes), regrows 1, resets 60, fences 3, "
        "peak used 65536 bytes, peak live 4, limit refusals 5");
  CHECK(text_of(kbuf::Statistics{}) ==
        "temporaries 0, fallbacks 0 (0 bytes), regrows 0, resets 0, fences 0, peak used 0 bytes, "
        "peak live 0, limit refusals 0");
  s.empty = 7;  // printed only when not 0
  CHECK(text_of(s) ==
        "temporaries 120, fallbacks 2 (4096 bytes), regrows 1, resets 60, fences 3, "
        "peak used 65536 bytes, peak live 4, limit refusals 5, empty 7");
}

TEST_CASE("an allocator's statistics print as the line of its counters") {
  Alloc alloc(4_KiB);
  auto a = alloc.allocate<double*>(8);
  auto b = alloc.allocate<double*>(1000);  // 8000 bytes: a fallback
  (void)a, (void)b;
  alloc.reset();
  const std::string line = text_of(alloc.statistics());
  CHECK(line.find("temporaries 1, fallbacks 1 (8000 bytes), regrows 0, resets 1,") == 0);
  CHECK(line.find("peak used 64 bytes, peak live 2,") != std::string::npos);
  CHECK(line.find('\n') == std::string::npos);
}

TEST_CASE("reset_peaks() restarts every counter and the peaks from what is live now") {
  Alloc alloc(4_KiB);
  {
    auto s = alloc.scope();
    for (int i = 0; i < 10; ++i) (void)alloc.allocate<double*>(16);  // 10 x 128 bytes
    (void)alloc.allocate<double*>(1000);                             // a fallback
  }
  alloc.reset();  // the next allocate regrows to the high-water mark
  (void)alloc.allocate<float*>(4);
  auto before = alloc.statistics();
  REQUIRE(before.temporaries == 11);
  REQUIRE(before.fallbacks == 1);
  REQUIRE(before.regrows == 1);
  REQUIRE(before.peak_live == 11);
  REQUIRE(before.peak_used >= 1280);
  const std::size_t hwm = alloc.high_water_mark();
  const std::size_t used_now = alloc.used();

  alloc.reset_peaks();
  const auto fresh = alloc.statistics();
  CHECK(fresh.temporaries == 0);
  CHECK(fresh.fallbacks == 0);
  CHECK(fresh.fallback_bytes == 0);
  CHECK(fresh.regrows == 0);
  CHECK(fresh.resets == 0);
  CHECK(fresh.fences == 0);
  CHECK(fresh.limit_refusals == 0);
  CHECK(fresh.empty == 0);
  CHECK(fresh.peak_live == 1);  // the float temporary is still live
  CHECK(fresh.peak_used == used_now);
  CHECK(alloc.high_water_mark() == hwm);  // the growth target is not a statistic

  // The new region counts only what happens in it.
  (void)alloc.allocate<double*>(2);
  (void)alloc.allocate<char*>(0);  // zero-sized: counted apart
  alloc.reset();
  const auto region = alloc.statistics();
  CHECK(region.temporaries == 1);
  CHECK(region.empty == 1);
  CHECK(region.resets == 1);
  CHECK(region.peak_live == 2);
  CHECK(region.peak_used < before.peak_used);
  CHECK(region.fallbacks == 0);
}

TEST_CASE("reset_peaks() on a fresh allocator changes nothing it reports") {
  Alloc alloc;
  alloc.reset_peaks();
  CHECK(text_of(alloc.statistics()) == text_of(kbuf::Statistics{}));
}
