// Kokkos version numbers printed the way Kokkos names its releases (the demo and the benchmark
// print them with kbuf::Impl::kokkos_version_string).
#include <doctest/doctest.h>

#include <kbuf/impl/kokkos_version.hpp>
#include <kbuf/kbuf.hpp>

#include <string>

TEST_CASE("Kokkos 3 and 4 versions have a two-digit patch number") {
  CHECK(kbuf::Impl::kokkos_version_string(30401) == "3.4.01");
  CHECK(kbuf::Impl::kokkos_version_string(40601) == "4.6.01");
  CHECK(kbuf::Impl::kokkos_version_string(40700) == "4.7.00");
  CHECK(kbuf::Impl::kokkos_version_string(40699) == "4.6.99");  // develop before 5.0
  CHECK(kbuf::Impl::kokkos_version_string(40710) == "4.7.10");
}

TEST_CASE("Kokkos 5 versions follow semantic versioning: a plain patch number") {
  CHECK(kbuf::Impl::kokkos_version_string(50101) == "5.1.1");
  CHECK(kbuf::Impl::kokkos_version_string(50000) == "5.0.0");
  CHECK(kbuf::Impl::kokkos_version_string(50002) == "5.0.2");
  CHECK(kbuf::Impl::kokkos_version_string(50099) == "5.0.99");  // develop after 5.0
  CHECK(kbuf::Impl::kokkos_version_string(51012) == "5.10.12");
}
