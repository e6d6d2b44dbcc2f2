// kbuf-bench-advisor: what kbuf-advisor costs a Kokkos program, side by side with no tool and
// with a tool that does nothing, in one run.
//
//   kbuf-bench-advisor [--rounds N] [--quick]                per event (Kokkos calls, timed)
//   kbuf-bench-advisor [--rounds N] -- PROGRAM [ARGS...]     a whole program, wall time
//
// Each measurement runs in a fresh process (this executable again, or PROGRAM), because Kokkos
// loads a tool once, at initialisation, from KOKKOS_TOOLS_LIBS (4.x) / KOKKOS_PROFILE_LIBRARY
// (3.x). The configurations take turns, round after round (rotating which goes first), so that
// a slow stretch of a shared machine falls on all of them alike; the table gives each one's
// median over the rounds, its spread (min-max), and the difference and ratio to no tool.
#include <Kokkos_Core.hpp>
#include <kbuf_timing/harness.hpp>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace {

using kbuf_timing::escape;
using kbuf_timing::summarize;
using clock_type = std::chrono::steady_clock;

// ---- The configurations ---------------------------------------------------------------------

struct Config {
  const char* name;
  const char* library;  // the tool library, or nullptr
  bool files;           // KBUF_ADVISOR_OUTPUT set (the advisor writes its three files)
};

std::string advisor_library = KBUF_BENCH_ADVISOR_LIBRARY;
std::string noop_library = KBUF_BENCH_NOOP_LIBRARY;
std::string files_dir;  // where the advisor writes in the "advisor, files" configuration

// The environment of a child: this one's, with the tool variables set (or removed) for `c`.
std::vector<std::string> child_environment(const Config& c) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string v = *e;
    if (v.rfind("KOKKOS_TOOLS_LIBS=", 0) == 0 || v.rfind("KOKKOS_PROFILE_LIBRARY=", 0) == 0 ||
        v.rfind("KBUF_ADVISOR_", 0) == 0) {
      continue;
    }
    env.push_back(v);
  }
  if (c.library != nullptr) {
    env.push_back(std::string("KOKKOS_TOOLS_LIBS=") + c.library);       // Kokkos 4.x
    env.push_back(std::string("KOKKOS_PROFILE_LIBRARY=") + c.library);  // Kokkos 3.x
  }
  if (c.files) env.push_back("KBUF_ADVISOR_OUTPUT=" + files_dir);
  return env;
}

struct ChildRun {
  int status = -1;  // exit status, or -1 if it did not exit normally
  double seconds = 0;
  std::string out;  // stdout, if captured
};

// Runs argv with `env`; captures stdout if asked, else sends stdout and stderr to /dev/null.
ChildRun run_child(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                   bool capture) {
  std::vector<char*> a, e;
  for (const std::string& s : argv) a.push_back(const_cast<char*>(s.c_str()));
  a.push_back(nullptr);
  for (const std::string& s : env) e.push_back(const_cast<char*>(s.c_str()));
  e.push_back(nullptr);
  int fds[2] = {-1, -1};
  if (capture && ::pipe(fds) != 0) return ChildRun{};
  ChildRun r;
  const auto t0 = clock_type::now();
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int null = ::open("/dev/null", O_WRONLY);
    ::dup2(capture ? fds[1] : null, 1);
    ::dup2(null, 2);
    if (capture) {
      ::close(fds[0]);
      ::close(fds[1]);
    }
    ::execvpe(a[0], a.data(), e.data());
    ::_exit(127);
  }
  if (capture) {
    ::close(fds[1]);
    char buf[4096];
    ssize_t n;
    while ((n = ::read(fds[0], buf, sizeof buf)) > 0) r.out.append(buf, static_cast<size_t>(n));
    ::close(fds[0]);
  }
  int status = 0;
  if (pid < 0 || ::waitpid(pid, &status, 0) != pid) return ChildRun{};
  r.seconds = std::chrono::duration<double>(clock_type::now() - t0).count();
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// ---- The child: Kokkos calls, each kind timed -----------------------------------------------

using View = Kokkos::View<double*, Kokkos::HostSpace>;
using host_exec = Kokkos::DefaultHostExecutionSpace;

struct Empty {
  View v;
  KOKKOS_INLINE_FUNCTION void operator()(int) const {}
};

// One workload: `events` Kokkos Tools events per iteration.
struct Workload {
  const char* name;
  int events;
  const char* what;
  void (*body)(std::size_t iterations);
};

void alloc_free(std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    View v(Kokkos::view_alloc(Kokkos::WithoutInitializing, "bench::temporary"), 64);
    escape(v.data());
  }
}

void nested(std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    View a(Kokkos::view_alloc(Kokkos::WithoutInitializing, "bench::a"), 64);
    View b(Kokkos::view_alloc(Kokkos::WithoutInitializing, "bench::b"), 128);
    View c(Kokkos::view_alloc(Kokkos::WithoutInitializing, "bench::c"), 256);
    View d(Kokkos::view_alloc(Kokkos::WithoutInitializing, "bench::d"), 512);
    escape(a.data());
    escape(b.data());
    escape(c.data());
    escape(d.data());
  }
}

// Allocations that live past the lifetime limit: each waits for its verdict through 8 others.
void long_lived(std::size_t n) {
  std::vector<View> ring(16);
  for (std::size_t i = 0; i < n; ++i) {
    ring[i % ring.size()] = View(Kokkos::view_alloc(Kokkos::WithoutInitializing, "bench::kept"), 64);
    Kokkos::parallel_for("bench::kernel", Kokkos::RangePolicy<host_exec>(0, 1), Empty{});
  }
}

void kernel(std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    Kokkos::parallel_for("bench::kernel", Kokkos::RangePolicy<host_exec>(0, 1), Empty{});
  }
}

void region(std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    Kokkos::Profiling::pushRegion("bench::region");
    Kokkos::Profiling::popRegion();
  }
}

const Workload workloads[] = {
    {"alloc+free", 2, "a View of 64 doubles made and dropped", &alloc_free},
    {"nested-4", 8, "4 nested Views, freed newest first", &nested},
    {"kept+kernel", 4, "a View kept for 16 iterations, and a kernel", &long_lived},
    {"kernel", 2, "an empty parallel_for (begin, end)", &kernel},
    {"region", 2, "pushRegion + popRegion", &region},
};

// Prints "name ns-per-iteration" for every workload: the median of `batches` batches.
int child(std::size_t iterations, int batches) {
  Kokkos::initialize();
  {
    for (const Workload& w : workloads) {
      w.body(iterations / 10 + 1);  // warm-up
      std::vector<double> ns;
      for (int b = 0; b < batches; ++b) {
        const auto t0 = clock_type::now();
        w.body(iterations);
        ns.push_back(std::chrono::duration<double, std::nano>(clock_type::now() - t0).count() /
                     static_cast<double>(iterations));
      }
      std::printf("%s %.3f\n", w.name, summarize(ns).median);
    }
  }
  Kokkos::finalize();
  return 0;
}

// ---- The parent -----------------------------------------------------------------------------

std::string self_path() {
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "";
  buf[n] = '\0';
  return buf;
}

struct Spread {
  double median, min, max;
};
Spread spread(const std::vector<double>& v) {
  const kbuf_timing::Summary s = summarize(v);
  return Spread{s.median, s.min, s.max};
}

int per_event(int rounds, std::size_t iterations, int batches) {
  const Config configs[] = {{"no tool", nullptr, false},
                            {"no-op tool", noop_library.c_str(), false},
                            {"advisor", advisor_library.c_str(), false}};
  constexpr std::size_t nconfigs = 3;
  std::map<std::string, std::array<std::vector<double>, nconfigs>> ns;
  const std::string self = self_path();
  for (int r = 0; r < rounds; ++r) {
    for (std::size_t k = 0; k < nconfigs; ++k) {
      const std::size_t c = (k + static_cast<std::size_t>(r)) % nconfigs;
      const ChildRun run = run_child(
          {self, "--child", std::to_string(iterations), std::to_string(batches)},
          child_environment(configs[c]), true);
      if (run.status != 0) {
        std::fprintf(stderr, "kbuf-bench-advisor: the child (%s) failed with status %d\n",
                     configs[c].name, run.status);
        return 1;
      }
      char name[64];
      double value = 0;
      const char* p = run.out.c_str();
      int used = 0;
      while (std::sscanf(p, "%63s %lf%n", name, &value, &used) == 2) {
        ns[name][c].push_back(value);
        p += used;
      }
    }
  }
  std::printf(
      "kbuf-bench-advisor: Kokkos %d.%d.%d, host execution space %s; ns per iteration, median "
      "of %d rounds [min-max]\n(each round: one process per configuration, in rotating order; in "
      "each, the median of %d batches of %zu iterations)\n\n",
      KOKKOS_VERSION / 10000, KOKKOS_VERSION / 100 % 100, KOKKOS_VERSION % 100, host_exec::name(),
      rounds, batches, iterations);
  std::printf("%-12s %6s  %-22s %-22s %-22s %10s %9s\n", "workload", "events", "no tool",
              "no-op tool", "advisor", "advisor-", "advisor/");
  std::printf("%-12s %6s  %-22s %-22s %-22s %10s %9s\n", "", "", "", "", "", "none/event",
              "no tool");
  for (const Workload& w : workloads) {
    for (std::size_t c = 0; c < nconfigs; ++c) {
      if (ns[w.name][c].size() != static_cast<std::size_t>(rounds)) {
        std::fprintf(stderr, "kbuf-bench-advisor: the child (%s) did not time '%s'\n",
                     configs[c].name, w.name);
        return 1;
      }
    }
  }
  for (const Workload& w : workloads) {
    const auto& v = ns[w.name];
    Spread s[nconfigs];
    char cell[nconfigs][48];
    for (std::size_t c = 0; c < nconfigs; ++c) {
      s[c] = spread(v[c]);
      std::snprintf(cell[c], sizeof cell[c], "%8.1f [%.1f-%.1f]", s[c].median, s[c].min,
                    s[c].max);
    }
    std::printf("%-12s %6d  %-22s %-22s %-22s %10.1f %8.2fx\n", w.name, w.events, cell[0], cell[1],
                cell[2], (s[2].median - s[0].median) / w.events, s[2].median / s[0].median);
  }
  std::printf("\n");
  for (const Workload& w : workloads) std::printf("  %-12s %s\n", w.name, w.what);
  return 0;
}

int whole_program(int rounds, const std::vector<std::string>& program) {
  char tmpl[] = "/tmp/kbuf-bench-advisor-XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) {
    std::fprintf(stderr, "kbuf-bench-advisor: cannot make a temporary folder\n");
    return 1;
  }
  files_dir = tmpl;
  const Config configs[] = {{"no tool", nullptr, false},
                            {"no-op tool", noop_library.c_str(), false},
                            {"advisor", advisor_library.c_str(), false},
                            {"advisor, files", advisor_library.c_str(), true}};
  constexpr std::size_t nconfigs = 4;
  std::array<std::vector<double>, nconfigs> seconds;
  std::array<int, nconfigs> status{};
  for (int r = 0; r < rounds; ++r) {
    for (std::size_t k = 0; k < nconfigs; ++k) {
      const std::size_t c = (k + static_cast<std::size_t>(r)) % nconfigs;
      const ChildRun run = run_child(program, child_environment(configs[c]), false);
      seconds[c].push_back(run.seconds);
      if (r == 0) status[c] = run.status;
      if (run.status != status[c]) status[c] = -2;  // not the same every time
    }
  }
  std::string cmd;
  for (const std::string& s : program) cmd += (cmd.empty() ? "" : " ") + s;
  std::printf(
      "kbuf-bench-advisor: %s\nwall seconds per run, %d rounds (each round: every configuration "
      "once, in rotating order)\n\n",
      cmd.c_str(), rounds);
  std::printf("%-16s %6s %9s %9s %9s %10s %9s\n", "configuration", "status", "median", "min",
              "max", "vs no tool", "min/min");
  const Spread base = spread(seconds[0]);
  int rc = 0;
  for (std::size_t c = 0; c < nconfigs; ++c) {
    const Spread s = spread(seconds[c]);
    std::printf("%-16s %6d %9.4f %9.4f %9.4f %+9.2f%% %8.3fx\n", configs[c].name, status[c],
                s.median, s.min, s.max, 100.0 * (s.median / base.median - 1), s.min / base.min);
    if (status[c] != status[0]) rc = 1;
  }
  if (rc != 0) std::printf("\nthe exit statuses differ between the configurations\n");
  for (const char* f : {"kbuf-advisor.json", "kbuf-advisor.svg", "kbuf-advisor.trace.json"}) {
    std::remove((files_dir + "/" + f).c_str());
  }
  ::rmdir(files_dir.c_str());
  return rc;
}

void usage(std::FILE* out) {
  std::fprintf(out,
               "Usage: kbuf-bench-advisor [options] [-- PROGRAM [ARGS...]]\n"
               "What kbuf-advisor costs, beside no tool and a tool that does nothing.\n"
               "Without PROGRAM: ns per Kokkos call (allocations, kernels, regions).\n"
               "With PROGRAM: its wall time, also with the advisor writing its files.\n"
               "  --rounds N     rounds, every configuration once each (default 7)\n"
               "  --quick        few iterations (a smoke test)\n"
               "  --advisor LIB  the advisor library (default: this build's)\n"
               "  --noop LIB     the no-op tool library (default: this build's)\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 4 && std::strcmp(argv[1], "--child") == 0) {
    return child(std::strtoull(argv[2], nullptr, 10), std::atoi(argv[3]));
  }
  int rounds = 7;
  std::size_t iterations = 5000;
  int batches = 9;
  std::vector<std::string> program;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--") {
      for (int j = i + 1; j < argc; ++j) program.push_back(argv[j]);
      break;
    } else if (a == "--rounds" && i + 1 < argc) {
      rounds = std::atoi(argv[++i]);
    } else if (a == "--quick") {
      rounds = 1;
      iterations = 200;
      batches = 3;
    } else if (a == "--advisor" && i + 1 < argc) {
      advisor_library = argv[++i];
    } else if (a == "--noop" && i + 1 < argc) {
      noop_library = argv[++i];
    } else if (a == "--help") {
      usage(stdout);
      return 0;
    } else {
      std::fprintf(stderr, "kbuf-bench-advisor: unknown option '%s'\n", a.c_str());
      usage(stderr);
      return 2;
    }
  }
  if (rounds < 1) {
    std::fprintf(stderr, "kbuf-bench-advisor: --rounds must be at least 1\n");
    return 2;
  }
  if (!program.empty()) return whole_program(rounds, program);
  return per_event(rounds, iterations, batches);
}
