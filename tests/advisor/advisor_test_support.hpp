// What the tests of kbuf-advisor's core share: the names they use, fake addresses and the
// replay's verdicts read by reason.
#ifndef KBUF_TESTS_ADVISOR_TEST_SUPPORT_HPP
#define KBUF_TESTS_ADVISOR_TEST_SUPPORT_HPP

#include <kbuf_advisor/advisor.hpp>

#include <cstddef>
#include <cstdint>

namespace kbuf_advisor_test {

using kbuf_advisor::Advisor;
using kbuf_advisor::Reason;
using kbuf_advisor::Results;
using kbuf_advisor::Settings;

// Distinct fake addresses: the advisor never dereferences them.
inline const void* address(std::uintptr_t i) {
  return reinterpret_cast<const void*>(0x10000 + 64 * i);
}

// The allocations not served for one reason.
inline std::uint64_t reason(const Results& r, Reason why) {
  return r.not_served[static_cast<std::size_t>(why)];
}

}  // namespace kbuf_advisor_test

#endif  // KBUF_TESTS_ADVISOR_TEST_SUPPORT_HPP
