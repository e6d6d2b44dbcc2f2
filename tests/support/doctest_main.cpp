// The main of every kbuf test executable: doctest, run under Kokkos::ScopeGuard so that every
// allocator a test makes is created and destroyed between Kokkos' initialize and finalize.
//
// CTest runs each test case on its own (`--test-case=<name>`, registered by
// doctest_discover_tests), so a filter that matches no test case fails here instead of passing
// with nothing run: a renamed case cannot turn its CTest test into an empty success.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <Kokkos_Core.hpp>

#include <cstdio>

namespace {

// Counts the test cases that started.
struct CaseCounter : doctest::IReporter {
  static int& started() {
    static int n = 0;
    return n;
  }
  explicit CaseCounter(const doctest::ContextOptions&) {}
  void report_query(const doctest::QueryData&) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats&) override {}
  void test_case_start(const doctest::TestCaseData&) override { ++started(); }
  void test_case_reenter(const doctest::TestCaseData&) override {}
  void test_case_end(const doctest::CurrentTestCaseStats&) override {}
  void test_case_exception(const doctest::TestCaseException&) override {}
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData&) override {}
  void log_message(const doctest::MessageData&) override {}
  void test_case_skipped(const doctest::TestCaseData&) override {}
};

}  // namespace

REGISTER_LISTENER("kbuf-case-counter", 1, CaseCounter);

int main(int argc, char** argv) {
  Kokkos::ScopeGuard guard(argc, argv);
  doctest::Context context;
  context.applyCommandLine(argc, argv);
  const int result = context.run();
  if (result == 0 && !context.shouldExit() && CaseCounter::started() == 0) {
    std::fprintf(stderr, "%s: no test case matched the filters\n", argv[0]);
    return 1;
  }
  return result;
}
