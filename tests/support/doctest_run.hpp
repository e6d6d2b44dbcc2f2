// How every kbuf test executable runs doctest: `kbuf_test::run_doctest` applies the command line
// and runs the cases, and a filter that matches no test case fails instead of passing with
// nothing run (CTest runs each case on its own, `--test-case=<name>`, as registered by
// doctest_discover_tests), so a renamed case cannot turn its CTest test into an empty success.
// Include it in the one file of an executable that defines main, after
// `#define DOCTEST_CONFIG_IMPLEMENT` (tests/support/doctest_main.cpp, tests/mpi/mpi_main.cpp).
#ifndef KBUF_TEST_DOCTEST_RUN_HPP
#define KBUF_TEST_DOCTEST_RUN_HPP

#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>

namespace kbuf_test {

/// Counts the test cases that started.
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

/// Runs the test cases the command line selects; `minimal`: report failures only. Returns the
/// exit status: doctest's, or 1 when no case matched the filters.
inline int run_doctest(int argc, char** argv, bool minimal = false) {
  // No verdict follows the environment or the build's defaults of kbuf's switches, which an
  // allocator reads when it is made: pass-through off, records for Kokkos Tools on, growth by
  // regrowth (the tests of growth in place turn it on themselves). A test of a
  // switch sets it itself (kbuf_test::ScopedEnv; null: unset, the configured default).
  ::setenv("KBUF_PASSTHROUGH", "0", 1);
  ::setenv("KBUF_TOOLS_REPORT", "1", 1);
  ::unsetenv("KBUF_SIZES");  // no saved sizes: every allocator learns from its sizehint
  ::setenv("KBUF_GROW_IN_PLACE", "0", 1);
  doctest::Context context;
  context.applyCommandLine(argc, argv);
  if (minimal) context.setOption("minimal", true);
  const int result = context.run();
  if (result == 0 && !context.shouldExit() && CaseCounter::started() == 0) {
    std::fprintf(stderr, "%s: no test case matched the filters\n", argv[0]);
    return 1;
  }
  return result;
}

}  // namespace kbuf_test

REGISTER_LISTENER("kbuf-case-counter", 1, kbuf_test::CaseCounter);

#endif  // KBUF_TEST_DOCTEST_RUN_HPP
