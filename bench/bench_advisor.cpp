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

// One workload.
struct Workload {
  const char* name;
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
    ring[i % ring.size()] =
        View(Kokkos::view_alloc(Kokkos::WithoutInitializing, "bench::kept"), 64);
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
    {"alloc+free", "a View of 64 doubles made and dropped", &alloc_free},
    {"nested-4", "4 nested Views, freed newest first", &nested},
    {"kept+kernel", "a View kept for 16 iterations, and a kernel", &long_lived},
    {"kernel", "an empty parallel_for (begin, end)", &kernel},
    {"region", "pushRegion + popRegion", &region},
};

// Counting Kokkos Tools events, chained in front of the loaded tool's callbacks: how many events
// an iteration of a workload makes (Kokkos 4 adds fences to allocations, for instance).
namespace counting {
using Kokkos::Tools::Experimental::EventSet;
EventSet previous;
std::uint64_t events = 0;

void allocate(Kokkos::Tools::SpaceHandle h, const char* l, const void* p, std::uint64_t n) {
  ++events;
  if (previous.allocate_data != nullptr) previous.allocate_data(h, l, p, n);
}
void deallocate(Kokkos::Tools::SpaceHandle h, const char* l, const void* p, std::uint64_t n) {
  ++events;
  if (previous.deallocate_data != nullptr) previous.deallocate_data(h, l, p, n);
}
#define KBUF_BENCH_COUNT_KERNEL(kind)                                           \
  void begin_##kind(const char* name, std::uint32_t dev, std::uint64_t* id) {   \
    ++events;                                                                   \
    if (previous.begin_##kind != nullptr) previous.begin_##kind(name, dev, id); \
  }                                                                             \
  void end_##kind(std::uint64_t id) {                                           \
    ++events;                                                                   \
    if (previous.end_##kind != nullptr) previous.end_##kind(id);                \
  }
KBUF_BENCH_COUNT_KERNEL(parallel_for)
KBUF_BENCH_COUNT_KERNEL(parallel_reduce)
KBUF_BENCH_COUNT_KERNEL(parallel_scan)
KBUF_BENCH_COUNT_KERNEL(fence)
#undef KBUF_BENCH_COUNT_KERNEL
void push_region(const char* name) {
  ++events;
  if (previous.push_region != nullptr) previous.push_region(name);
}
void pop_region() {
  ++events;
  if (previous.pop_region != nullptr) previous.pop_region();
}
void begin_deep_copy(Kokkos::Tools::SpaceHandle dh, const char* dl, const void* dp,
                     Kokkos::Tools::SpaceHandle sh, const char* sl, const void* sp,
                     std::uint64_t n) {
  ++events;
  if (previous.begin_deep_copy != nullptr) previous.begin_deep_copy(dh, dl, dp, sh, sl, sp, n);
}
void end_deep_copy() {
  ++events;
  if (previous.end_deep_copy != nullptr) previous.end_deep_copy();
}

// Events per iteration of `w` under the tool loaded (its callbacks still called).
double per_iteration(const Workload& w) {
  using namespace Kokkos::Tools::Experimental;
  previous = get_callbacks();
  set_allocate_data_callback(&allocate);
  set_deallocate_data_callback(&deallocate);
  set_begin_parallel_for_callback(&begin_parallel_for);
  set_end_parallel_for_callback(&end_parallel_for);
  set_begin_parallel_reduce_callback(&begin_parallel_reduce);
  set_end_parallel_reduce_callback(&end_parallel_reduce);
  set_begin_parallel_scan_callback(&begin_parallel_scan);
  set_end_parallel_scan_callback(&end_parallel_scan);
  set_begin_fence_callback(&begin_fence);
  set_end_fence_callback(&end_fence);
  set_push_region_callback(&push_region);
  set_pop_region_callback(&pop_region);
  set_begin_deep_copy_callback(&begin_deep_copy);
  set_end_deep_copy_callback(&end_deep_copy);
  constexpr std::size_t n = 100;
  events = 0;
  w.body(n);
  const double per = static_cast<double>(events) / n;
  set_callbacks(previous);
  return per;
}
}  // namespace counting

// Prints "name ns-per-iteration" for every workload: the least of `batches` batches (short
// batches, so that one of them runs undisturbed on a shared machine).
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
      std::printf("%s %.3f\n", w.name, summarize(ns).min);
      // With a tool loaded, also the events an iteration makes.
      if (Kokkos::Tools::profileLibraryLoaded()) {
        std::printf("%s.events %.2f\n", w.name, counting::per_iteration(w));
      }
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
  std::map<std::string, double> events;  // per iteration, as the advisor's process counted them
  const std::string self = self_path();
  for (int r = 0; r < rounds; ++r) {
    for (std::size_t k = 0; k < nconfigs; ++k) {
      const std::size_t c = (k + static_cast<std::size_t>(r)) % nconfigs;
      const ChildRun run =
          run_child({self, "--child", std::to_string(iterations), std::to_string(batches)},
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
        const std::string key = name;
        const std::size_t dot = key.rfind(".events");
        if (dot != std::string::npos && dot + 7 == key.size()) {
          if (c == 2) events[key.substr(0, dot)] = value;
        } else {
          ns[key][c].push_back(value);
        }
        p += used;
      }
    }
  }
  std::printf(
      "kbuf-bench-advisor: Kokkos %d.%d.%d, host execution space %s; ns per iteration, median "
      "of %d rounds [min-max]\n(each round: one process per configuration, in rotating order; in "
      "each, the fastest of %d batches of %zu iterations)\n\n",
      KOKKOS_VERSION / 10000, KOKKOS_VERSION / 100 % 100, KOKKOS_VERSION % 100, host_exec::name(),
      rounds, batches, iterations);
  std::printf("%-12s %6s  %-24s %-24s %-24s %10s %9s\n", "workload", "events", "no tool",
              "no-op tool", "advisor", "advisor-", "advisor/");
  std::printf("%-12s %6s  %-24s %-24s %-24s %10s %9s\n", "", "", "", "", "", "none/event",
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
      std::snprintf(cell[c], sizeof cell[c], "%8.1f [%.1f-%.1f]", s[c].median, s[c].min, s[c].max);
    }
    const double e = events.count(w.name) != 0 ? events[w.name] : 0.0;
    std::printf("%-12s %6.0f  %-24s %-24s %-24s %10.1f %8.2fx\n", w.name, e, cell[0], cell[1],
                cell[2], e > 0 ? (s[2].median - s[0].median) / e : 0.0, s[2].median / s[0].median);
  }
  std::printf(
      "\n(events: Kokkos Tools events per iteration, counted in the advisor's processes)\n");
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
  std::printf("%-16s %6s %9s %9s %9s %10s %9s\n", "configuration", "status", "median", "min", "max",
              "vs no tool", "min/min");
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
  std::size_t iterations = 2000;
  int batches = 15;
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
