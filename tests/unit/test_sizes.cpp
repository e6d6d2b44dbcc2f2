// kbuf::page_size, kbuf::buffer_size and the byte literals.
#include <doctest/doctest.h>

#include <kbuf/kbuf.hpp>

#include <unistd.h>
#include <limits>

TEST_CASE("page_size is the operating system's page size") {
  CHECK(kbuf::page_size() == static_cast<std::size_t>(::sysconf(_SC_PAGESIZE)));
  CHECK(kbuf::is_power_of_two(kbuf::page_size()));
}

TEST_CASE("buffer_size of 0 is 0") {
  CHECK(kbuf::buffer_size(0) == 0);
}

TEST_CASE("buffer_size up to a page rounds to the next power of two") {
  const std::size_t page = kbuf::page_size();
  CHECK(kbuf::buffer_size(1) == 1);
  CHECK(kbuf::buffer_size(2) == 2);
  CHECK(kbuf::buffer_size(3) == 4);
  CHECK(kbuf::buffer_size(64) == 64);
  CHECK(kbuf::buffer_size(65) == 128);
  CHECK(kbuf::buffer_size(page / 2 + 1) == page);
  CHECK(kbuf::buffer_size(page) == page);
  for (std::size_t n = 1; n <= page; n += 37) {
    const std::size_t b = kbuf::buffer_size(n);
    CHECK(kbuf::is_power_of_two(b));
    CHECK(b >= n);
    CHECK(b / 2 < n);
  }
}

TEST_CASE("buffer_size above a page rounds up to whole pages") {
  const std::size_t page = kbuf::page_size();
  CHECK(kbuf::buffer_size(page + 1) == 2 * page);
  CHECK(kbuf::buffer_size(3 * page) == 3 * page);
  CHECK(kbuf::buffer_size(3 * page + 1) == 4 * page);
  CHECK(kbuf::buffer_size(5 * page - 1) == 5 * page);  // not a power of two
}

TEST_CASE("buffer_size that would overflow size_t throws and names the value") {
  const std::size_t huge = std::numeric_limits<std::size_t>::max() - 2;
  CHECK_THROWS_AS(kbuf::buffer_size(huge), kbuf::logic_error);
  try {
    (void)kbuf::buffer_size(huge);
  } catch (const kbuf::logic_error& e) {
    const std::string what = e.what();
    CHECK(what.find("kbuf::buffer_size") != std::string::npos);
    CHECK(what.find(std::to_string(huge)) != std::string::npos);
  }
  // The largest size that still rounds is accepted.
  const std::size_t page = kbuf::page_size();
  const std::size_t last = std::numeric_limits<std::size_t>::max() / page * page;
  CHECK(kbuf::buffer_size(last) == last);
}

TEST_CASE("byte literals are powers of 1024") {
  using namespace kbuf::literals;
  CHECK(1_KiB == 1024);
  CHECK(5_MiB == 5 * 1024 * 1024);
  CHECK(2_GiB == std::size_t{2} << 30);
}
