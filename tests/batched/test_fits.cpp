// The batched least-squares fits (apps/batched): every solver of both levels from a kbuf
// workspace, level-0/1 scratch and fixed slots, against LAPACK's dgels and the exact polynomial;
// and the slack the job gives Kokkos Kernels' tall QR, which writes past its A and t.
#include <doctest/doctest.h>

#if defined(KBUF_TEST_FOREIGN_SPACE) && KBUF_TEST_FOREIGN_SPACE
// The foreign space as a device: the fits' kernels read and write their Views in it, as CUDA
// kernels do CudaSpace's; host code may not (results come back through mirrors).
#include "foreign_kernels.hpp"
#endif

#include <kbuf_batched/fits.hpp>
#include <kbuf_batched/problems.hpp>
#include <kbuf_batched/strategies.hpp>

#include "test_support.hpp"

#include <cstddef>
#include <string>
#include <vector>

namespace {

using kbuf_test::space;
using exec = space::execution_space;
using team_policy = Kokkos::TeamPolicy<exec>;
using member = team_policy::member_type;

// A small batch: every degree, sizes 8 to 64 and a few rare neighbourhoods of 100 points.
kbuf_batched::Batch small_batch() {
  kbuf_batched::BatchOptions o;
  o.entries = 120;
  o.rare_every = 30;
  o.rare_m = 100;
  o.seed = 7;
  return kbuf_batched::make_batch(o);
}

kbuf_batched::RunOptions short_runs() {
  kbuf_batched::RunOptions o;
  o.repeat = 1;
  return o;
}

// Every solver of a strategy fitted every entry within the tolerance.
void check_fits(const kbuf_batched::StrategyResult& r, const kbuf_batched::Batch& b,
                const kbuf_batched::Reference& ref, const char* const* methods) {
  REQUIRE(r.ran);
  CHECK(r.failed == 0);
  REQUIRE(r.x.size() == static_cast<std::size_t>(kbuf_batched::method_count));
  for (int k = 0; k < kbuf_batched::method_count; ++k) {
    const kbuf_batched::Errors e = kbuf_batched::errors(b, ref, r.x[k]);
    INFO(r.name << ", " << methods[k] << ": vs LAPACK " << e.vs_lapack << ", vs exact "
                << e.vs_exact << ", worst entry " << e.worst_entry);
    CHECK(e.within(kbuf_batched::tolerance));
  }
}

// The arrays of the tall-QR probe: the matrix, a guard after it, tau, a guard after it, w.
constexpr int probe_m = 24, probe_n = 8;
constexpr int guard_a = (probe_m - probe_n) * probe_m;  // the furthest the QR can reach past A
constexpr int guard_t = probe_m;
constexpr double sentinel = -7777.0;

// One team: A (m x columns, column-major; the QR sees its first n columns) followed by a guard
// in one take, t (tau entries) followed by a guard in another, and w, from a kbuf arena; A
// filled with a fixed matrix, the guards with the sentinel; then TeamVectorQR (serial = false)
// or SerialQR on A. The guards are copied out. Each guard is part of its array's take, so what
// it sees does not depend on how the arena places takes (alignment, guard zones of its own).
struct TallQrProbe {
  using matrix = Kokkos::View<double**, Kokkos::LayoutLeft, space, Kokkos::MemoryUnmanaged>;
  using vector = Kokkos::View<double*, space, Kokkos::MemoryUnmanaged>;
  kbuf::Workspace<space> ws;
  int columns, tau;
  bool serial;
  Kokkos::View<double*, space> guards;  // guard_a + guard_t
  KOKKOS_INLINE_FUNCTION void operator()(const member& team) const {
    namespace KB = KokkosBatched;
    auto arena = ws.arena(team);
    auto a_block = arena.take<double*>(probe_m * columns + guard_a);
    auto t_block = arena.take<double*>(tau + guard_t);
    auto w = arena.take<double*>(probe_n);
    if (!arena.ok()) return;
    const matrix A_all(a_block.data(), probe_m, columns);
    const vector ga(a_block.data() + probe_m * columns, guard_a);
    const vector t_all(t_block.data(), tau);
    const vector gt(t_block.data() + tau, guard_t);
    Kokkos::single(Kokkos::PerTeam(team), [&]() {
      for (int j = 0; j < columns; ++j) {
        for (int i = 0; i < probe_m; ++i) A_all(i, j) = 1.0 / (1 + i + 2 * j) + (i == j ? 1 : 0);
      }
      for (int i = 0; i < guard_a; ++i) ga(i) = sentinel;
      for (int i = 0; i < guard_t; ++i) gt(i) = sentinel;
    });
    team.team_barrier();
    const auto A = Kokkos::subview(A_all, Kokkos::ALL, Kokkos::make_pair(0, probe_n));
    const auto t = Kokkos::subview(t_all, Kokkos::make_pair(0, probe_n));
    if (serial) {
      Kokkos::single(Kokkos::PerTeam(team),
                     [&]() { KB::SerialQR<KB::Algo::QR::Unblocked>::invoke(A, t, w); });
    } else {
      KB::TeamVectorQR<member, KB::Algo::QR::Unblocked>::invoke(team, A, t, w);
    }
    team.team_barrier();
    Kokkos::single(Kokkos::PerTeam(team), [&]() {
      for (int i = 0; i < guard_a; ++i) guards(i) = ga(i);
      for (int i = 0; i < guard_t; ++i) guards(guard_a + i) = gt(i);
    });
  }
};

struct Overrun {
  int after_a = 0, furthest_a = -1;  // guard entries written after A, the furthest (index)
  int after_t = 0, furthest_t = -1;
};

Overrun probe_tall_qr(bool serial, int columns, int tau) {
  kbuf::BufferAllocator<space> alloc;
  const team_policy policy(1, 1);
  auto scope = alloc.scope();
  auto ws = alloc.workspace(policy, kbuf::per_team{64 * 1024}, "tall QR probe");
  Kokkos::View<double*, space> guards("guards", guard_a + guard_t);
  Kokkos::parallel_for("tall QR probe", policy, TallQrProbe{ws, columns, tau, serial, guards});
  const kbuf::WorkspaceReport report = ws.finish();
  REQUIRE(report.complete());
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), guards);
  Overrun o;
  for (int i = 0; i < guard_a; ++i) {
    if (h(i) != sentinel) {
      ++o.after_a;
      o.furthest_a = i;
    }
  }
  for (int i = 0; i < guard_t; ++i) {
    if (h(guard_a + i) != sentinel) {
      ++o.after_t;
      o.furthest_t = i;
    }
  }
  return o;
}

}  // namespace

TEST_CASE("every team solver fits every entry within the tolerance from a kbuf workspace") {
  const kbuf_batched::Batch b = small_batch();
  const kbuf_batched::Reference ref = kbuf_batched::lapack_reference(b);
  for (int e = 0; e < b.count; ++e) {
    REQUIRE(kbuf_batched::error_bound(ref.kappa[e], b.m[e], b.n[e]) <= kbuf_batched::tolerance);
  }
  kbuf_batched::Runner<space> runner(b);
  const kbuf_batched::StrategyResult r = runner.team(short_runs()).at(0);
  REQUIRE(r.name == "kbuf workspace");
  check_fits(r, b, ref, kbuf_batched::team_methods);
  // The workspace learned from a guess of 0 bytes within the rounds allowed.
  CHECK(r.rounds >= 1);
  CHECK(r.rounds <= short_runs().max_rounds);
  CHECK(r.bytes > 0);
}

TEST_CASE("scratch of level 0 or 1 and fixed slots sized by the job's need fit every entry") {
  const kbuf_batched::Batch b = small_batch();
  const kbuf_batched::Reference ref = kbuf_batched::lapack_reference(b);
  kbuf_batched::Runner<space> runner(b);
  const std::vector<kbuf_batched::StrategyResult> all = runner.team(short_runs());
  REQUIRE(all.size() == 3);
  const kbuf_batched::StrategyResult& scratch = all[1];
  REQUIRE(scratch.name.find("scratch") != std::string::npos);
  if (scratch.ran) check_fits(scratch, b, ref, kbuf_batched::team_methods);
  const kbuf_batched::StrategyResult& slots = all[2];
  REQUIRE(slots.name == "fixed slots");
  check_fits(slots, b, ref, kbuf_batched::team_methods);
  CHECK(slots.bytes >= runner.team_need());
}

TEST_CASE("each solver alone fits every entry from every strategy") {
  const kbuf_batched::Batch b = small_batch();
  const kbuf_batched::Reference ref = kbuf_batched::lapack_reference(b);
  kbuf_batched::Runner<space> runner(b);
  for (int k = 0; k < kbuf_batched::method_count; ++k) {
    kbuf_batched::RunOptions o = short_runs();
    o.methods = 1u << k;
    for (const kbuf_batched::StrategyResult& r : runner.team(o)) {
      if (!r.ran) continue;
      CHECK(r.failed == 0);
      const kbuf_batched::Errors e = kbuf_batched::errors(b, ref, r.x[k]);
      INFO(r.name << ", " << kbuf_batched::team_methods[k] << ": " << e.vs_lapack << ", "
                  << e.vs_exact);
      CHECK(e.within(kbuf_batched::tolerance));
    }
  }
}

#if KBUF_BATCHED_THREAD_SOLVERS
TEST_CASE("every thread solver fits every entry from a per_thread workspace and fixed slots") {
  const kbuf_batched::Batch b = small_batch();
  const kbuf_batched::Reference ref = kbuf_batched::lapack_reference(b);
  kbuf_batched::Runner<space> runner(b);
  const std::vector<kbuf_batched::StrategyResult> all = runner.thread(short_runs());
  REQUIRE(all.size() == 2);
  check_fits(all[0], b, ref, kbuf_batched::thread_methods);
  CHECK(all[0].rounds <= short_runs().max_rounds);
  check_fits(all[1], b, ref, kbuf_batched::thread_methods);
}
#endif

TEST_CASE("TeamVectorQR on a tall matrix writes past A and t, into the slack the job takes") {
  // Kokkos Kernels' loop over k < m: A(k..m-1, k) and tau(k) for k = n .. m-1. Column-major A
  // with leading dimension m: (m - n)(m - n + 1) / 2 doubles over the (m - n) m past A's end.
  const Overrun bare = probe_tall_qr(false, probe_n, probe_n);
  CHECK(bare.after_a == (probe_m - probe_n) * (probe_m - probe_n + 1) / 2);
  CHECK(bare.furthest_a == (probe_m - probe_n) * probe_m - 1);
  CHECK(bare.after_t == probe_m - probe_n);
  CHECK(bare.furthest_t == probe_m - probe_n - 1);
  // As the job takes them: nothing past the slack.
  const Overrun job = probe_tall_qr(false, kbuf_batched::qr_columns(probe_m, probe_n),
                                    kbuf_batched::qr_tau(probe_m, probe_n));
  CHECK(job.after_a == 0);
  CHECK(job.after_t == 0);
}

TEST_CASE("SerialQR writes past a tall A before Kokkos Kernels 4.6, and the job's slack holds it") {
  const Overrun bare = probe_tall_qr(true, probe_n, probe_n);
  if (KBUF_BATCHED_SERIAL_QR_TALL_FIXED) {
    CHECK(bare.after_a == 0);
    CHECK(bare.after_t == 0);
  } else {
    CHECK(bare.after_a == (probe_m - probe_n) * (probe_m - probe_n + 1) / 2);
    CHECK(bare.after_t == probe_m - probe_n);
  }
  const Overrun job = probe_tall_qr(true, kbuf_batched::serial_qr_columns(probe_m, probe_n),
                                    kbuf_batched::serial_qr_tau(probe_m, probe_n));
  CHECK(job.after_a == 0);
  CHECK(job.after_t == 0);
}
