// Batched least squares: thousands of problems min ||A x - b|| of varying size (m from 8 to 256,
// n <= m / 2, and a few rare large ones: one in --rare-every on average, at random places), one
// per team, each solved by Householder QR with every work array (a copy of A, of b, R's
// diagonal) taken inside the kernel. Each solution is checked against LAPACK's dgels.
//
// The same job runs with the work arrays from each of the places Kokkos users have:
//   kbuf workspace     kbuf::Workspace, per team, sized by what its last round needed
//   level-1 scratch    team scratch of level 1, sized for the largest problem
//   MemoryPool         Kokkos::MemoryPool, one allocation per problem inside the kernel
//   fixed slots        one slot per UniqueToken value, each sized for the largest problem
//   View per problem   managed Views made for each problem, one kernel per problem
// and prints, side by side: the time per batch (median of --repeat runs), the bytes each holds,
// the rounds before a run completes, and the largest error against LAPACK. Then the cost of one
// temporary inside a kernel: a take and its release (a frame) against a level-1 scratch View
// and a MemoryPool allocate/deallocate, in nanoseconds.
//
//   kbuf-batched-least-squares [--problems N] [--rare-every K] [--rare-m M] [--rare-n N]
//                              [--repeat R] [--seed S] [--skip-views]
//
// Exit status: 0 when every solution agrees with LAPACK (relative error below 1e-9) and the
// workspace's rerun completes; 1 otherwise; 2 for bad arguments.
#include <kbuf/kbuf.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

extern "C" void dgels_(const char* trans, const int* m, const int* n, const int* nrhs, double* a,
                       const int* lda, double* b, const int* ldb, double* work, const int* lwork,
                       int* info);

namespace {

using space = kbuf::default_memory_space;
using exec = space::execution_space;
using team_policy = Kokkos::TeamPolicy<exec>;
using member = team_policy::member_type;
template <class T>
using dview = Kokkos::View<T, space>;

constexpr double tolerance = 1e-9;

// The problems, on the host and in the memory space.
struct Batch {
  int count = 0;
  std::vector<int> m, n;
  std::vector<std::size_t> a_at, b_at, x_at;  // offsets into A, b, x
  std::vector<double> a, b;
  dview<int*> dm, dn;
  dview<std::size_t*> da_at, db_at, dx_at;
  dview<double*> da, db;
  std::size_t x_size = 0;
  std::size_t max_need = 0;  // bytes of the largest problem's work arrays
};

KOKKOS_INLINE_FUNCTION std::size_t round64(std::size_t bytes) {
  return (bytes + 63) / 64 * 64;
}

// The bytes of one problem's work arrays, as three temporaries aligned to 64 bytes.
std::size_t need_bytes(int m, int n) {
  return round64(sizeof(double) * static_cast<std::size_t>(m) * n) +
         round64(sizeof(double) * static_cast<std::size_t>(m)) +
         round64(sizeof(double) * static_cast<std::size_t>(n));
}

template <class T>
dview<T*> to_space(const std::vector<T>& h, const char* label) {
  dview<T*> d(std::string(label), h.size());
  Kokkos::deep_copy(
      d, Kokkos::View<const T*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(h.data(), h.size()));
  return d;
}

Batch make_batch(int count, int rare_every, int rare_m, int rare_n, unsigned seed) {
  Batch p;
  p.count = count;
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> msize(8, 256);
  std::uniform_real_distribution<double> entry(-1.0, 1.0);
  std::size_t a_size = 0, b_size = 0;
  for (int i = 0; i < count; ++i) {
    int m = msize(rng);
    int n = std::uniform_int_distribution<int>(1, m / 2)(rng);
    if (rare_every > 0 && std::uniform_int_distribution<int>(0, rare_every - 1)(rng) == 0) {
      m = rare_m;
      n = rare_n;
    }
    p.m.push_back(m);
    p.n.push_back(n);
    p.a_at.push_back(a_size);
    p.b_at.push_back(b_size);
    p.x_at.push_back(p.x_size);
    a_size += static_cast<std::size_t>(m) * n;
    b_size += static_cast<std::size_t>(m);
    p.x_size += static_cast<std::size_t>(n);
    p.max_need = std::max(p.max_need, need_bytes(m, n));
  }
  p.a.resize(a_size);
  p.b.resize(b_size);
  for (double& v : p.a) v = entry(rng);
  for (double& v : p.b) v = entry(rng);
  p.dm = to_space(p.m, "m");
  p.dn = to_space(p.n, "n");
  p.da_at = to_space(p.a_at, "a_at");
  p.db_at = to_space(p.b_at, "b_at");
  p.dx_at = to_space(p.x_at, "x_at");
  p.da = to_space(p.a, "A");
  p.db = to_space(p.b, "b");
  return p;
}

// Householder QR of the m x n column-major copy W of A, applied to the copy bw of b, then
// R x = Q^T b. rd holds R's diagonal. The team shares the columns.
KOKKOS_INLINE_FUNCTION void solve(const member& team, int m, int n, const double* A,
                                  const double* b, double* W, double* bw, double* rd, double* x) {
  const std::size_t mn = static_cast<std::size_t>(m) * n;
  Kokkos::parallel_for(Kokkos::TeamThreadRange(team, mn),
                       [&](const std::size_t i) { W[i] = A[i]; });
  Kokkos::parallel_for(Kokkos::TeamThreadRange(team, m), [&](const int i) { bw[i] = b[i]; });
  team.team_barrier();
  for (int k = 0; k < n; ++k) {
    double* col = W + static_cast<std::size_t>(k) * m;
    double norm2 = 0;
    Kokkos::parallel_reduce(
        Kokkos::TeamThreadRange(team, k, m), [&](const int i, double& s) { s += col[i] * col[i]; },
        norm2);
    const double alpha = col[k];
    const double s = alpha >= 0 ? -std::sqrt(norm2) : std::sqrt(norm2);
    const double vk = alpha - s;
    const double vnorm2 = norm2 - alpha * alpha + vk * vk;
    team.team_barrier();
    Kokkos::single(Kokkos::PerTeam(team), [&]() {
      col[k] = vk;
      rd[k] = s;
    });
    team.team_barrier();
    if (vnorm2 > 0) {
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, k + 1, n + 1), [&](const int j) {
        double* cj = j < n ? W + static_cast<std::size_t>(j) * m : bw;
        double d = 0;
        for (int i = k; i < m; ++i) d += col[i] * cj[i];
        const double f = 2 * d / vnorm2;
        for (int i = k; i < m; ++i) cj[i] -= f * col[i];
      });
    }
    team.team_barrier();
  }
  Kokkos::single(Kokkos::PerTeam(team), [&]() {
    for (int k = n - 1; k >= 0; --k) {
      double sum = bw[k];
      for (int j = k + 1; j < n; ++j) sum -= W[static_cast<std::size_t>(j) * m + k] * x[j];
      x[k] = sum / rd[k];
    }
  });
}

// What every strategy's kernel shares: the problems, the solutions, the failures.
struct Common {
  dview<int*> m, n;
  dview<std::size_t*> a_at, b_at, x_at;
  dview<double*> a, b, x;
  dview<int*> failed;  // [0]: problems whose work arrays could not be had
  KOKKOS_INLINE_FUNCTION void fail(const member& team) const {
    Kokkos::single(Kokkos::PerTeam(team), [&]() { Kokkos::atomic_add(&failed.data()[0], 1); });
  }
  KOKKOS_INLINE_FUNCTION void run(const member& team, int p, double* W, double* bw,
                                  double* rd) const {
    solve(team, m(p), n(p), a.data() + a_at(p), b.data() + b_at(p), W, bw, rd, x.data() + x_at(p));
  }
};

// kbuf::Workspace: the arena's three takes.
struct WithWorkspace {
  Common c;
  kbuf::Workspace<space> ws;
  KOKKOS_INLINE_FUNCTION void operator()(const member& team) const {
    const int p = team.league_rank();
    const int m = c.m(p), n = c.n(p);
    auto arena = ws.arena(team);
    auto W = arena.take<double*>(static_cast<std::size_t>(m) * n);
    auto bw = arena.take<double*>(m);
    auto rd = arena.take<double*>(n);
    if (!arena.ok()) {
      c.fail(team);
      return;
    }
    c.run(team, p, W.data(), bw.data(), rd.data());
  }
};

// Level-1 team scratch, sized for the largest problem.
struct WithScratch {
  Common c;
  KOKKOS_INLINE_FUNCTION void operator()(const member& team) const {
    const int p = team.league_rank();
    const int m = c.m(p), n = c.n(p);
    auto& scratch = team.team_scratch(1);
    double* W = static_cast<double*>(scratch.get_shmem(round64(sizeof(double) * m * n)));
    double* bw = static_cast<double*>(scratch.get_shmem(round64(sizeof(double) * m)));
    double* rd = static_cast<double*>(scratch.get_shmem(round64(sizeof(double) * n)));
    if (W == nullptr || bw == nullptr || rd == nullptr) {
      c.fail(team);
      return;
    }
    c.run(team, p, W, bw, rd);
  }
};

// Kokkos::MemoryPool: one block per problem, taken and given back inside the kernel.
struct WithPool {
  Common c;
  Kokkos::MemoryPool<Kokkos::Device<exec, space>> pool;
  KOKKOS_INLINE_FUNCTION void operator()(const member& team) const {
    const int p = team.league_rank();
    const int m = c.m(p), n = c.n(p);
    const std::size_t bytes = need(m, n);
    double* base = nullptr;
    Kokkos::single(
        Kokkos::PerTeam(team), [&](double*& q) { q = static_cast<double*>(pool.allocate(bytes)); },
        base);
    if (base == nullptr) {
      c.fail(team);
      return;
    }
    double* W = base;
    double* bw = W + round64(sizeof(double) * m * n) / sizeof(double);
    double* rd = bw + round64(sizeof(double) * m) / sizeof(double);
    c.run(team, p, W, bw, rd);
    team.team_barrier();
    Kokkos::single(Kokkos::PerTeam(team), [&]() { pool.deallocate(base, bytes); });
  }
  KOKKOS_INLINE_FUNCTION static std::size_t need(int m, int n) {
    return round64(sizeof(double) * m * n) + round64(sizeof(double) * m) +
           round64(sizeof(double) * n);
  }
};

// Fixed slots sized for the largest problem, one per UniqueToken value (EKAT's way).
struct WithSlots {
  Common c;
  dview<double*> slots;
  std::size_t slot_doubles;
  Kokkos::Experimental::UniqueToken<exec, Kokkos::Experimental::UniqueTokenScope::Global> token;
  KOKKOS_INLINE_FUNCTION void operator()(const member& team) const {
    const int p = team.league_rank();
    const int m = c.m(p), n = c.n(p);
    int t = 0;
    Kokkos::single(
        Kokkos::PerTeam(team), [&](int& v) { v = token.acquire(); }, t);
    double* W = slots.data() + static_cast<std::size_t>(t) * slot_doubles;
    double* bw = W + round64(sizeof(double) * m * n) / sizeof(double);
    double* rd = bw + round64(sizeof(double) * m) / sizeof(double);
    c.run(team, p, W, bw, rd);
    team.team_barrier();
    Kokkos::single(Kokkos::PerTeam(team), [&]() { token.release(t); });
  }
};

// A managed View per problem: one problem per kernel.
struct WithViews {
  Common c;
  int p;
  dview<double*> W, bw, rd;
  KOKKOS_INLINE_FUNCTION void operator()(const member& team) const {
    c.run(team, p, W.data(), bw.data(), rd.data());
  }
};

// The cost of one temporary inside a kernel: `iterations` per team of a temporary of 64 doubles,
// one entry written and read back.
constexpr int micro_iterations = 256;
constexpr int micro_doubles = 64;

// A take and its release, 256 times per team (`Fallback`: a second instantiation, timed on a
// workspace where every take falls back, so that the first one's code is not shaped by it).
template <bool Fallback>
struct MicroTakes {
  kbuf::Workspace<space> ws;
  dview<double*> sink;
  KOKKOS_INLINE_FUNCTION void operator()(const member& team) const {
    auto arena = ws.arena(team);
    double acc = 0;
    for (int it = 0; it < micro_iterations; ++it) {
      auto frame = arena.frame();
      auto v = arena.take<double*>(micro_doubles);
      v(it % micro_doubles) = it;
      acc += v(it % micro_doubles);
    }
    Kokkos::single(Kokkos::PerTeam(team), [&]() { sink(team.league_rank()) = acc; });
  }
};
using MicroWorkspace = MicroTakes<false>;

struct MicroScratch {
  dview<double*> sink;
  using scratch_view = Kokkos::View<double*, exec::scratch_memory_space, Kokkos::MemoryUnmanaged>;
  KOKKOS_INLINE_FUNCTION void operator()(const member& team) const {
    double acc = 0;
    for (int it = 0; it < micro_iterations; ++it) {
      scratch_view v(team.team_scratch(1), micro_doubles);  // scratch is never given back
      v(it % micro_doubles) = it;
      acc += v(it % micro_doubles);
    }
    Kokkos::single(Kokkos::PerTeam(team), [&]() { sink(team.league_rank()) = acc; });
  }
};

struct MicroPool {
  Kokkos::MemoryPool<Kokkos::Device<exec, space>> pool;
  dview<double*> sink;
  KOKKOS_INLINE_FUNCTION void operator()(const member& team) const {
    double acc = 0;
    for (int it = 0; it < micro_iterations; ++it) {
      double* v = nullptr;
      Kokkos::single(
          Kokkos::PerTeam(team),
          [&](double*& q) { q = static_cast<double*>(pool.allocate(micro_doubles * 8)); }, v);
      if (v == nullptr) continue;
      v[it % micro_doubles] = it;
      acc += v[it % micro_doubles];
      team.team_barrier();
      Kokkos::single(Kokkos::PerTeam(team), [&]() { pool.deallocate(v, micro_doubles * 8); });
    }
    Kokkos::single(Kokkos::PerTeam(team), [&]() { sink(team.league_rank()) = acc; });
  }
};

struct MicroNone {  // the loop alone: a stack array
  dview<double*> sink;
  KOKKOS_INLINE_FUNCTION void operator()(const member& team) const {
    double acc = 0;
    double v[micro_doubles];
    for (int it = 0; it < micro_iterations; ++it) {
      v[it % micro_doubles] = it;
      acc += v[it % micro_doubles];
    }
    Kokkos::single(Kokkos::PerTeam(team), [&]() { sink(team.league_rank()) = acc; });
  }
};

// Nanoseconds per temporary: the median of `repeat` runs of `f` over `league` teams.
template <class F>
double ns_per_temporary(const team_policy& policy, const F& f, int repeat) {
  std::vector<double> t;
  for (int k = 0; k < repeat; ++k) {
    Kokkos::Timer timer;
    Kokkos::parallel_for("temporary inside a kernel", policy, f);
    policy.space().fence();
    t.push_back(timer.seconds());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2] * 1e9 / (static_cast<double>(policy.league_size()) * micro_iterations);
}

struct Result {
  std::string name;
  double seconds = 0;  // median per batch
  std::size_t bytes = 0;
  int rounds = 1;  // runs until one completed
  int failed = 0;  // problems not solved in the timed runs
  double error = 0;
  bool ran = true;
  std::string note;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// The largest relative error of the solutions x against LAPACK's.
double max_error(const Batch& p, const dview<double*>& x, const std::vector<double>& ref) {
  std::vector<double> h(x.extent(0));
  Kokkos::deep_copy(
      Kokkos::View<double*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(h.data(), h.size()), x);
  double worst = 0;
  for (int i = 0; i < p.count; ++i) {
    double num = 0, den = 0;
    for (int j = 0; j < p.n[i]; ++j) {
      const double d = h[p.x_at[i] + j] - ref[p.x_at[i] + j];
      num += d * d;
      den += ref[p.x_at[i] + j] * ref[p.x_at[i] + j];
    }
    const double e = std::sqrt(num / (den > 0 ? den : 1));
    if (!(e <= worst)) worst = e;  // NaN sticks
  }
  return worst;
}

std::vector<double> lapack_solutions(const Batch& p) {
  std::vector<double> x(p.x_size);
  for (int i = 0; i < p.count; ++i) {
    const int m = p.m[i], n = p.n[i], nrhs = 1;
    std::vector<double> a(
        p.a.begin() + static_cast<std::ptrdiff_t>(p.a_at[i]),
        p.a.begin() + static_cast<std::ptrdiff_t>(p.a_at[i] + std::size_t(m) * n));
    std::vector<double> b(p.b.begin() + static_cast<std::ptrdiff_t>(p.b_at[i]),
                          p.b.begin() + static_cast<std::ptrdiff_t>(p.b_at[i] + m));
    int lwork = -1, info = 0;
    double query = 0;
    dgels_("N", &m, &n, &nrhs, a.data(), &m, b.data(), &m, &query, &lwork, &info);
    lwork = static_cast<int>(query);
    std::vector<double> work(static_cast<std::size_t>(lwork));
    dgels_("N", &m, &n, &nrhs, a.data(), &m, b.data(), &m, work.data(), &lwork, &info);
    if (info != 0) {
      std::fprintf(stderr, "dgels failed for problem %d (info %d)\n", i, info);
      std::exit(1);
    }
    std::copy(b.begin(), b.begin() + n, x.begin() + static_cast<std::ptrdiff_t>(p.x_at[i]));
  }
  return x;
}

int failures(const dview<int*>& f) {
  int h = 0;
  Kokkos::deep_copy(h, Kokkos::subview(f, 0));
  return h;
}

struct Options {
  int problems = 2000;
  int rare_every = 500;
  int rare_m = 4096;
  int rare_n = 64;
  int repeat = 5;
  unsigned seed = 2026;
  bool views = true;
};

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr,
               "kbuf-batched-least-squares: %s\n"
               "usage: kbuf-batched-least-squares [--problems N] [--rare-every K] [--rare-m M]\n"
               "       [--rare-n N] [--repeat R] [--seed S] [--skip-views]\n",
               why.c_str());
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  const auto number = [&](int& i, long lo, long hi) {
    if (i + 1 >= argc) usage(std::string(argv[i]) + " needs a value");
    char* end = nullptr;
    const long v = std::strtol(argv[i + 1], &end, 10);
    if (end == argv[i + 1] || *end != '\0' || v < lo || v > hi) {
      usage(std::string(argv[i]) + " " + argv[i + 1] + ": expected an integer from " +
            std::to_string(lo) + " to " + std::to_string(hi));
    }
    ++i;
    return static_cast<int>(v);
  };
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--problems") {
      o.problems = number(i, 1, 1000000);
    } else if (a == "--rare-every") {
      o.rare_every = number(i, 0, 1000000);
    } else if (a == "--rare-m") {
      o.rare_m = number(i, 2, 100000);
    } else if (a == "--rare-n") {
      o.rare_n = number(i, 1, 100000);
    } else if (a == "--repeat") {
      o.repeat = number(i, 1, 1000);
    } else if (a == "--seed") {
      o.seed = static_cast<unsigned>(number(i, 0, 2147483647));
    } else if (a == "--skip-views") {
      o.views = false;
    } else if (a.rfind("--kokkos", 0) == 0) {
      continue;  // Kokkos' own
    } else {
      usage("unknown argument '" + a + "'");
    }
  }
  if (o.rare_n > o.rare_m) usage("--rare-n must not exceed --rare-m");
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  Kokkos::ScopeGuard guard(argc, argv);
  const Options o = parse(argc, argv);
  const Batch p = make_batch(o.problems, o.rare_every, o.rare_m, o.rare_n, o.seed);
  const std::vector<double> ref = lapack_solutions(p);
  const exec instance;
  const team_policy policy(instance, p.count, 1);
  Common c{p.dm,
           p.dn,
           p.da_at,
           p.db_at,
           p.dx_at,
           p.da,
           p.db,
           dview<double*>("x", p.x_size),
           dview<int*>("failed", 1)};
  const auto clear = [&]() {
    Kokkos::deep_copy(c.x, 0.0);
    Kokkos::deep_copy(c.failed, 0);
  };
  std::vector<Result> results;
  int rare = 0;
  for (int i = 0; i < p.count; ++i) rare += need_bytes(p.m[i], p.n[i]) > need_bytes(256, 128);

  // kbuf workspace: the first round starts from no guess at all and learns.
  {
    Result r;
    r.name = "kbuf workspace";
    kbuf::BufferAllocator<space> alloc(instance, 0);
    std::vector<double> times;
    kbuf::WorkspaceReport last;
    int runs = 0;
    bool converged = false;
    while (static_cast<int>(times.size()) < o.repeat) {
      clear();
      Kokkos::Timer timer;
      auto scope = alloc.scope();
      auto ws = alloc.workspace(policy, kbuf::per_team{0}, "least squares");
      Kokkos::parallel_for("kbuf workspace", policy, WithWorkspace{c, ws});
      last = ws.finish();
      const double t = timer.seconds();
      ++runs;
      if (!converged) {
        if (last.complete()) {
          converged = true;
          r.rounds = runs;
        } else if (runs > 3) {
          break;
        }
        continue;
      }
      times.push_back(t);
      r.bytes = ws.bytes();
      r.failed += failures(c.failed);
    }
    if (!converged) {
      r.rounds = runs;
      r.failed = static_cast<int>(last.failed_takes);
    }
    r.seconds = median(times);
    r.error = max_error(p, c.x, ref);
    r.note = "slot " + std::to_string(last.slot_bytes) + " B x " + std::to_string(last.slots) +
             ", lanes " + std::to_string(last.spill_lanes) + " x " +
             std::to_string(last.lane_bytes) + " B, " + std::to_string(last.spilling_arenas) +
             " spilled";
    results.push_back(r);
  }

  // Level-1 scratch for the largest problem, on every team.
  {
    Result r;
    r.name = "level-1 scratch";
    const team_policy sp =
        team_policy(instance, p.count, 1).set_scratch_size(1, Kokkos::PerTeam(p.max_need));
    const std::size_t most = static_cast<std::size_t>(sp.scratch_size_max(1));
    const std::size_t teams =
        std::min<std::size_t>(static_cast<std::size_t>(instance.concurrency()), p.count);
    r.bytes = teams * p.max_need;
    if (p.max_need > most) {
      r.ran = false;
      r.note = "needs " + std::to_string(p.max_need) + " B, level 1 holds " + std::to_string(most) +
               " B";
    } else {
      std::vector<double> times;
      for (int k = 0; k < o.repeat; ++k) {
        clear();
        Kokkos::Timer timer;
        Kokkos::parallel_for("level-1 scratch", sp, WithScratch{c});
        instance.fence();
        times.push_back(timer.seconds());
        r.failed += failures(c.failed);
      }
      r.seconds = median(times);
      r.error = max_error(p, c.x, ref);
      r.note = "teams in flight x the largest need (Kokkos' own allocation)";
    }
    results.push_back(r);
  }

  // Kokkos::MemoryPool: blocks up to the largest need, room for one per team in flight.
  {
    Result r;
    r.name = "MemoryPool";
    std::size_t block = 64;
    while (block < p.max_need) block *= 2;
    const std::size_t teams =
        std::min<std::size_t>(static_cast<std::size_t>(instance.concurrency()), p.count);
    Kokkos::MemoryPool<Kokkos::Device<exec, space>> pool(space(), teams * block, 64, block, block);
    r.bytes = pool.capacity();
    std::vector<double> times;
    for (int k = 0; k < o.repeat; ++k) {
      clear();
      Kokkos::Timer timer;
      Kokkos::parallel_for("MemoryPool", policy, WithPool{c, pool});
      instance.fence();
      times.push_back(timer.seconds());
      r.failed += failures(c.failed);
    }
    r.seconds = median(times);
    r.error = max_error(p, c.x, ref);
    r.note = "blocks of " + std::to_string(block) + " B";
    results.push_back(r);
  }

  // Fixed slots sized for the largest problem.
  {
    Result r;
    r.name = "fixed slots";
    const Kokkos::Experimental::UniqueToken<exec, Kokkos::Experimental::UniqueTokenScope::Global>
        token(instance);
    const std::size_t slot = p.max_need / sizeof(double);
    dview<double*> slots(Kokkos::view_alloc("slots", Kokkos::WithoutInitializing),
                         slot * static_cast<std::size_t>(token.size()));
    r.bytes = slots.span() * sizeof(double);
    std::vector<double> times;
    for (int k = 0; k < o.repeat; ++k) {
      clear();
      Kokkos::Timer timer;
      Kokkos::parallel_for("fixed slots", policy, WithSlots{c, slots, slot, token});
      instance.fence();
      times.push_back(timer.seconds());
      r.failed += failures(c.failed);
    }
    r.seconds = median(times);
    r.error = max_error(p, c.x, ref);
    r.note = std::to_string(token.size()) + " slots of the largest need";
    results.push_back(r);
  }

  // A managed View per problem.
  if (o.views) {
    Result r;
    r.name = "View per problem";
    r.bytes = p.max_need;
    std::vector<double> times;
    for (int k = 0; k < o.repeat; ++k) {
      clear();
      Kokkos::Timer timer;
      for (int i = 0; i < p.count; ++i) {
        const std::size_t m = p.m[i], n = p.n[i];
        WithViews w{c, i, dview<double*>("W", m * n), dview<double*>("bw", m),
                    dview<double*>("rd", n)};
        Kokkos::parallel_for("View per problem", team_policy(instance, 1, 1), w);
      }
      instance.fence();
      times.push_back(timer.seconds());
    }
    r.seconds = median(times);
    r.error = max_error(p, c.x, ref);
    r.note = "one problem at a time: the largest need at most";
    results.push_back(r);
  }

  std::printf(
      "kbuf-batched-least-squares: %d problems (m 8..256, n <= m/2; %d rare of %d x %d), "
      "backend %s, concurrency %d, median of %d runs\n",
      p.count, rare, o.rare_m, o.rare_n, exec::name(), instance.concurrency(), o.repeat);
  const Result* scratch = nullptr;
  const Result* fixed = nullptr;
  for (const Result& r : results) {
    if (r.name == "level-1 scratch" && r.ran) scratch = &r;
    if (r.name == "fixed slots") fixed = &r;
  }
  std::printf("%-18s %12s %10s %14s %9s %7s %7s %11s  %s\n", "strategy", "ms/batch", "/scratch",
              "bytes held", "/fixed", "rounds", "failed", "max error", "notes");
  bool good = true;
  for (const Result& r : results) {
    const bool agrees = r.ran && r.error < tolerance && r.failed == 0;
    if (r.ran && !agrees) good = false;
    if (!r.ran) {
      std::printf("%-18s %12s %10s %14zu %9.3f %7s %7s %11s  %s\n", r.name.c_str(), "-", "-",
                  r.bytes, fixed ? double(r.bytes) / double(fixed->bytes) : 0.0, "-", "-", "-",
                  r.note.c_str());
      continue;
    }
    std::printf("%-18s %12.3f %10.3f %14zu %9.3f %7d %7d %11.2e  %s\n", r.name.c_str(),
                r.seconds * 1e3, scratch ? r.seconds / scratch->seconds : 0.0, r.bytes,
                fixed ? double(r.bytes) / double(fixed->bytes) : 0.0, r.rounds, r.failed, r.error,
                r.note.c_str());
  }
  // One temporary inside a kernel.
  {
    const int league = 4096;
    const exec e = instance;
    dview<double*> sink("sink", league);
    const team_policy plain(e, league, 1);
    const team_policy scratch =
        team_policy(e, league, 1)
            .set_scratch_size(1, Kokkos::PerTeam(micro_iterations * micro_doubles * 8 + 64));
    kbuf::BufferAllocator<space> alloc(e, 0);
    auto scope = alloc.scope();
    auto ws = alloc.workspace(plain, kbuf::per_team{micro_doubles * 8}, "micro");
    const std::size_t teams =
        std::min<std::size_t>(static_cast<std::size_t>(e.concurrency()), league);
    Kokkos::MemoryPool<Kokkos::Device<exec, space>> pool(space(), teams * 4096, 64, 1024, 4096);
    const int reps = std::max(3, o.repeat);
    const double none = ns_per_temporary(plain, MicroNone{sink}, reps);
    const double w = ns_per_temporary(plain, MicroWorkspace{ws, sink}, reps);
    // The same takes when none fits a slot or a lane: each is a fallback (a run of the
    // workspace's fallback region, claimed and given back), what a first round from a guess too
    // small costs per take.
    auto fallback_ws = alloc.workspace(plain, kbuf::per_team{0}, "micro fallback");
    const double fb = ns_per_temporary(plain, MicroTakes<true>{fallback_ws, sink}, reps);
    const kbuf::WorkspaceReport fr = fallback_ws.finish();
    const double s = ns_per_temporary(scratch, MicroScratch{sink}, reps);
    const double mp = ns_per_temporary(plain, MicroPool{pool, sink}, reps);
    const kbuf::WorkspaceReport wr = ws.finish();
    std::printf("one temporary of %d doubles inside a kernel (%d per team, %d teams), ns each:\n",
                micro_doubles, micro_iterations, league);
    std::printf(
        "  kbuf take + frame release %8.2f   level-1 scratch View %8.2f   MemoryPool "
        "allocate + deallocate %8.2f   (the loop alone %.2f)\n",
        w, s, mp, none);
    std::printf(
        "  ratios: scratch View / kbuf %.2f, MemoryPool / kbuf %.2f; kbuf takes %zu, "
        "failed %zu\n",
        s / w, mp / w, wr.takes, wr.failed_takes);
    std::printf(
        "  a take served by the fallback region (no slot, no lane) + its release %8.2f (%zu of %zu "
        "takes), %.1f times a take from the slot\n",
        fb, fr.fallbacks, fr.takes, fb / w);
    if (!wr.complete() || !fr.complete()) good = false;
  }

  const Result& ws = results.front();
  if (ws.rounds > 2 || ws.failed != 0) {
    std::printf("the workspace did not converge on its first rerun\n");
    good = false;
  }
  std::printf("%s: every solution %s LAPACK's dgels within %.0e\n", good ? "ok" : "FAILED",
              good ? "agrees with" : "does not agree with", tolerance);
  return good ? 0 : 1;
}
