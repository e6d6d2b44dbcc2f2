// The main of kbuf's MPI tests: doctest on every rank, between MPI_Init and MPI_Finalize and
// under Kokkos::ScopeGuard. CTest runs it under mpirun (kbuf_add_mpi_test). A rank's failure
// fails every rank, so mpirun's status is the verdict; ranks other than 0 report only failures.
// A filter that matches no test case fails, so a renamed case cannot pass with nothing run.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <mpi.h>

#include <Kokkos_Core.hpp>

#include <cstdio>

namespace {

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
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int result = 0;
  {
    Kokkos::ScopeGuard kokkos(argc, argv);
    doctest::Context context;
    context.applyCommandLine(argc, argv);
    if (rank != 0) context.setOption("minimal", true);
    result = context.run();
    if (result == 0 && !context.shouldExit() && CaseCounter::started() == 0) {
      std::fprintf(stderr, "%s: no test case matched the filters\n", argv[0]);
      result = 1;
    }
  }
  int worst = 0;
  MPI_Allreduce(&result, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return worst;
}
