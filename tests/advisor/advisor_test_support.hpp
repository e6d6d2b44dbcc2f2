// What the tests of kbuf-advisor's core share: the names they use, fake addresses and the
// replay's verdicts read by reason and label.
#ifndef KBUF_TESTS_ADVISOR_TEST_SUPPORT_HPP
#define KBUF_TESTS_ADVISOR_TEST_SUPPORT_HPP

#include <doctest/doctest.h>

#include <kbuf_advisor/advisor.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

namespace kbuf_advisor_test {

using kbuf_advisor::Advisor;
using kbuf_advisor::Reason;
using kbuf_advisor::Results;
using kbuf_advisor::Settings;

// Distinct fake addresses: the advisor never dereferences them.
inline const void* address(std::uintptr_t i) {
  return reinterpret_cast<const void*>(0x10000 + 64 * i);
}

// An allocation in SPACE freed at once: ADDRESS(i), BYTES bytes.
inline void allocate_and_free(Advisor& a, const char* space, const char* label, std::uintptr_t i,
                              std::uint64_t bytes) {
  a.allocate(space, label, address(i), bytes);
  a.deallocate(space, label, address(i), bytes);
}

// What a kbuf allocator named OWNER reports for a temporary LABEL it serves from a fallback, as
// kbuf-advisor sees it: the fallback ("OWNER::fallback" in Host), the temporary's record in the
// space "kbuf:OWNER" at the same address, then both freed, the record first.
inline void kbuf_fallback_temporary(Advisor& a, const std::string& owner, const char* label,
                                    std::uintptr_t i, std::uint64_t bytes) {
  const std::string fallback = owner + "::fallback", records = "kbuf:" + owner;
  a.allocate("Host", fallback.c_str(), address(i), bytes);
  a.allocate(records.c_str(), label, address(i), bytes);
  a.deallocate(records.c_str(), label, address(i), bytes);
  a.deallocate("Host", fallback.c_str(), address(i), bytes);
}

// The allocations not served for one reason.
inline std::uint64_t reason(const Results& r, Reason why) {
  return r.not_served[static_cast<std::size_t>(why)];
}

// Checks that of every label only `label` had a temporary served, and one.
inline void check_served_only(const Results& r, const std::string& label) {
  for (const kbuf_advisor::Named& n : r.labels) {
    CAPTURE(n.name);
    CHECK(n.a.served == (n.name == label ? 1 : 0));
  }
}

}  // namespace kbuf_advisor_test

#endif  // KBUF_TESTS_ADVISOR_TEST_SUPPORT_HPP
