// kbuf-tebd: imaginary-time iTEBD ground states of infinite spin chains (Vidal, PRL 98, 070201
// (2007)) with every temporary of a step from kbuf, or from fresh managed Views to compare;
// the energy per site beside the exact value.
#include <kbuf/impl/kokkos_version.hpp>  // the version printed beside the results
#include <kbuf_tebd/kbuf_tebd.hpp>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <memory>
#include <mutex>
#include <new>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

namespace {

using namespace kbuf_tebd;
using kbuf_tensor::TemporaryPolicy;
using pool_type = kbuf::AllocatorPool<space>;

constexpr int exit_ok = 0;
constexpr int exit_wrong_result = 1;
constexpr int exit_bad_option = 2;
constexpr int exit_out_of_memory = 3;
constexpr int exit_other_error = 4;

constexpr double agreement = 1e-12;  // strategies agree to this (relative)
constexpr std::size_t max_chi = 1024;

struct Options {
  Model model = Model::ising;
  bool model_given = false;
  std::vector<double> fields;
  std::vector<std::string> field_texts;
  std::size_t chi = 32;
  std::vector<TemporaryPolicy> strategies{TemporaryPolicy::kbuf};
  std::size_t threads = 1;
  std::string csv, trace;
  bool quick = false;
  std::size_t limit = 0;  // 0: none
};

const char* strategy_name(TemporaryPolicy p) {
  switch (p) {
    case TemporaryPolicy::kbuf:
      return "kbuf";
    case TemporaryPolicy::fresh_views:
      return "view-noinit";
    case TemporaryPolicy::fresh_views_initialized:
      return "view-init";
  }
  return "?";
}

void usage(std::FILE* out) {
  std::fprintf(
      out,
      "Usage: kbuf-tebd --model ising|heisenberg [--field h[,h...]] [--chi N]\n"
      "                 [--strategy kbuf|view-noinit|view-init|all] [--threads N] [--csv FILE]\n"
      "                 [--trace FILE] [--schedule default|quick] [--limit BYTES]\n"
      "                 [--kokkos-... options]\n"
      "Ground state of an infinite spin chain by imaginary-time iTEBD (two-site unit cell,\n"
      "Gamma-Lambda form, second-order Trotter, decreasing time steps, truncation by SVD),\n"
      "every temporary of a step from a kbuf::BufferAllocator or from fresh managed Views;\n"
      "prints the energy per site beside the exact value.\n"
      "  ising:      H = -sum sz sz - h sum sx, e0(h) = -(1/pi) int_0^pi sqrt(1+h^2-2h cos k) dk\n"
      "  heisenberg: H = sum S.S (spin 1/2), e0 = 1/4 - ln 2\n"
      "\n"
      "Options:\n"
      "  --model M         ising or heisenberg (required)\n"
      "  --field h[,h...]  transverse fields (ising; default 0.5,1,1.5); heisenberg has none\n"
      "  --chi N           largest bond dimension, 1 to %zu (default 32)\n"
      "  --strategy S      where temporaries come from: kbuf (default), view-noinit (fresh\n"
      "                    managed Views, WithoutInitializing), view-init (fresh managed\n"
      "                    Views, zero-filled), or all three, one after the other\n"
      "  --threads N       run up to N fields at once, one host thread each, each with its own\n"
      "                    execution space instance where the backend can split and its\n"
      "                    allocator from one kbuf::AllocatorPool (Kokkos < 3.5 with the Serial\n"
      "                    backend runs one thread and says why)\n"
      "  --csv FILE        one row per run: %s\n"
      "  --trace FILE      one row per convergence check: step, time step, energy, bond\n"
      "                    dimension and the allocator's capacity, high-water mark, fallbacks\n"
      "  --schedule S      default: time steps 0.1 .. 0.001; quick: 0.1, 0.02, 0.005 with at\n"
      "                    most 400 steps each (for tests; accuracy targets do not apply)\n"
      "  --limit BYTES     kbuf allocators may hold at most BYTES (kbuf::BufferAllocator::limit)\n"
      "  --help            this text\n"
      "Exit status:\n"
      "  0  every run met its accuracy target, all strategies agree within %.0e (relative), and\n"
      "     kbuf needed no fallback after the bond dimension reached its largest value\n"
      "  1  a wrong result (one of the above failed)\n"
      "  2  a bad option\n"
      "  3  out of memory\n"
      "  4  any other error (e.g. the CSV file cannot be written)\n",
      max_chi,
      "model,field,chi,strategy,steps,energy,exact,abs_error,seconds,temporaries,fallbacks,"
      "regrows,hwm_bytes",
      agreement);
}

[[noreturn]] void bad_option(const std::string& message) {
  std::fprintf(stderr, "kbuf-tebd: %s\nRun 'kbuf-tebd --help' for the options.\n", message.c_str());
  std::exit(exit_bad_option);
}

std::size_t parse_positive(const std::string& option, const std::string& text, std::size_t max) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos) {
    bad_option(option + ": '" + text + "' is not a positive integer");
  }
  errno = 0;
  const unsigned long long v = std::strtoull(text.c_str(), nullptr, 10);
  if (errno != 0 || v == 0 || v > max) {
    bad_option(option + ": '" + text + "' must be between 1 and " + std::to_string(max));
  }
  return static_cast<std::size_t>(v);
}

double parse_number(const std::string& option, const std::string& text) {
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || errno != 0 || !std::isfinite(v)) {
    bad_option(option + ": '" + text + "' is not a number");
  }
  return v;
}

Options parse(int argc, char** argv, std::vector<char*>& kokkos_args) {
  Options o;
  kokkos_args.push_back(argv[0]);
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--kokkos-", 0) == 0) {
      kokkos_args.push_back(argv[i]);
      continue;
    }
    if (arg == "--help" || arg == "-h") {
      usage(stdout);
      std::exit(exit_ok);
    }
    std::string value;
    bool has_value = false;
    const auto eq = arg.find('=');
    if (arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
      has_value = true;
    }
    auto next = [&]() -> std::string {
      if (has_value) return value;
      if (i + 1 >= argc) bad_option(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--model") {
      const std::string m = next();
      if (m == "ising") {
        o.model = Model::ising;
      } else if (m == "heisenberg") {
        o.model = Model::heisenberg;
      } else {
        bad_option("--model: '" + m + "' is not 'ising' or 'heisenberg'");
      }
      o.model_given = true;
    } else if (arg == "--field") {
      const std::string list = next();
      std::size_t pos = 0;
      while (true) {
        const auto comma = list.find(',', pos);
        const std::string item = list.substr(pos, comma - pos);
        o.fields.push_back(parse_number("--field", item));
        o.field_texts.push_back(item);
        if (comma == std::string::npos) break;
        pos = comma + 1;
      }
    } else if (arg == "--chi") {
      o.chi = parse_positive("--chi", next(), max_chi);
    } else if (arg == "--strategy") {
      const std::string s = next();
      if (s == "kbuf") {
        o.strategies = {TemporaryPolicy::kbuf};
      } else if (s == "view-noinit") {
        o.strategies = {TemporaryPolicy::fresh_views};
      } else if (s == "view-init") {
        o.strategies = {TemporaryPolicy::fresh_views_initialized};
      } else if (s == "all") {
        o.strategies = {TemporaryPolicy::kbuf, TemporaryPolicy::fresh_views,
                        TemporaryPolicy::fresh_views_initialized};
      } else {
        bad_option("--strategy: '" + s + "' is not 'kbuf', 'view-noinit', 'view-init' or 'all'");
      }
    } else if (arg == "--threads") {
      o.threads = parse_positive("--threads", next(), 256);
    } else if (arg == "--csv") {
      o.csv = next();
      if (o.csv.empty()) bad_option("--csv needs a file name");
    } else if (arg == "--trace") {
      o.trace = next();
      if (o.trace.empty()) bad_option("--trace needs a file name");
    } else if (arg == "--schedule") {
      const std::string s = next();
      if (s == "default") {
        o.quick = false;
      } else if (s == "quick") {
        o.quick = true;
      } else {
        bad_option("--schedule: '" + s + "' is not 'default' or 'quick'");
      }
    } else if (arg == "--limit") {
      o.limit = parse_positive("--limit", next(), static_cast<std::size_t>(-1));
    } else {
      bad_option("unknown option '" + std::string(argv[i]) + "'");
    }
  }
  if (!o.model_given) bad_option("--model is required ('ising' or 'heisenberg')");
  if (o.model == Model::heisenberg) {
    for (std::size_t i = 0; i < o.fields.size(); ++i) {
      if (o.fields[i] != 0.0) {
        bad_option("--field: '" + o.field_texts[i] +
                   "' given, but the heisenberg chain has no field");
      }
    }
    o.fields = {0.0};
  } else if (o.fields.empty()) {
    o.fields = {0.5, 1.0, 1.5};
  }
  return o;
}

// ---- Accuracy ------------------------------------------------------------------------------

// A gapped Ising chain: the field at least 0.25 away from the critical point h = 1.
bool gapped(Model model, double field) {
  return model == Model::ising && std::fabs(std::fabs(field) - 1.0) >= 0.25;
}

// The largest error accepted, and what it is measured as. With the default schedule: for
// chi >= 32, 1e-6 absolute (gapped Ising) and 1e-4 relative (critical or near-critical
// chains); below, bounds that grow as chi falls (measured errors are well inside them).
// With the quick schedule: 1e-2 relative, a check that the run is not wrong, not that it is
// converged.
struct Tolerance {
  double value;
  bool relative;
};

Tolerance tolerance(Model model, double field, std::size_t chi, bool quick) {
  if (quick) return {1e-2, true};
  if (gapped(model, field)) {
    if (chi >= 32) return {1e-6, false};
    if (chi >= 16) return {1e-5, false};
    if (chi >= 8) return {1e-4, false};
    return {1e-2, false};
  }
  if (chi >= 32) return {1e-4, true};
  if (chi >= 16) return {3e-4, true};
  if (chi >= 8) return {2e-3, true};
  return {5e-2, true};
}

// ---- Runs ----------------------------------------------------------------------------------

struct Job {
  std::size_t field_index;
  TemporaryPolicy strategy;
  RunResult result;
  std::string error;  // an exception's message
  bool out_of_memory = false;
};

// One progress line on stderr, overwritten in place; only when stderr is a terminal, and only
// once the program has run for a few seconds.
class Progress {
 public:
  explicit Progress(bool enabled) : enabled_(enabled), start_(clock::now()) {}

  void report(const std::string& what, const TracePoint& t) {
    if (!enabled_) return;
    const auto now = clock::now();
    std::lock_guard<std::mutex> lock(mutex_);
    if (now - start_ < std::chrono::seconds(2) || now - last_ < std::chrono::milliseconds(250)) {
      return;
    }
    last_ = now;
    std::fprintf(stderr, "\r\033[K%s: step %zu, dt %g, energy %.10f, chi %zu", what.c_str(), t.step,
                 t.dt, t.energy, t.chi);
    std::fflush(stderr);
    shown_ = true;
  }

  void clear() {
    if (!enabled_) return;
    std::lock_guard<std::mutex> lock(mutex_);
    if (shown_) std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
    shown_ = false;
  }

 private:
  using clock = std::chrono::steady_clock;
  bool enabled_;
  clock::time_point start_, last_{};
  std::mutex mutex_;
  bool shown_ = false;
};

// The instances of `nthreads` threads: distinct ones from partition_space on Kokkos >= 4.2
// (an OpenMP instance needs at least one OpenMP thread of its own), else the default instance.
std::vector<exec_space> thread_instances(std::size_t nthreads, bool& partitioned) {
  partitioned = false;
#if KOKKOS_VERSION >= 40200
  bool can = nthreads > 1;
#if defined(KOKKOS_ENABLE_OPENMP)
  if (std::is_same<exec_space, Kokkos::OpenMP>::value &&
      static_cast<std::size_t>(exec_space().concurrency()) < nthreads) {
    can = false;
  }
#endif
  if (can) {
    partitioned = true;
    return Kokkos::Experimental::partition_space(exec_space(), std::vector<int>(nthreads, 1));
  }
#endif
  return std::vector<exec_space>(nthreads, exec_space());
}

// Kokkos before 3.5 keeps one scratch buffer for every Serial kernel (reductions among them),
// used without a lock: kernels dispatched from several host threads at once race.
constexpr bool serial_kernels_race =
#if KOKKOS_VERSION < 30500 && defined(KOKKOS_ENABLE_SERIAL)
    std::is_same<exec_space, Kokkos::Serial>::value;
#else
    false;
#endif

std::string field_text(const Options& o, std::size_t i) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", o.fields[i]);
  return buf;
}

std::string describe(const Options& o, std::size_t field_index, TemporaryPolicy s) {
  return std::string("model ") + to_string(o.model) + " field " + field_text(o, field_index) +
         " chi " + std::to_string(o.chi) + " strategy " + strategy_name(s);
}

void run_job(const Options& o, Job& job, pool_type& pool, const exec_space& exec,
             Progress& progress) {
  try {
    RunParams p;
    p.model = o.model;
    p.field = o.fields[job.field_index];
    p.chi = o.chi;
    if (o.quick) p.schedule = Schedule::quick();
    std::unique_ptr<Temporaries> tmp;
    if (job.strategy == TemporaryPolicy::kbuf) {
      kbuf::BufferAllocator<space>& alloc = pool.local();
      if (o.limit != 0) alloc.limit(o.limit);
      tmp = std::make_unique<Temporaries>(alloc);
    } else {
      tmp = std::make_unique<Temporaries>(job.strategy, exec);
    }
    const std::string what = describe(o, job.field_index, job.strategy);
    job.result = ground_state(*tmp, p, [&](const TracePoint& t) { progress.report(what, t); });
  } catch (const std::bad_alloc& e) {  // kbuf::out_of_memory and Kokkos' allocation failures
    job.error = e.what();
    job.out_of_memory = true;
  } catch (const std::exception& e) {
    job.error = e.what();
  }
}

int run(Options o) {
  std::ofstream csv, trace;
  if (!o.csv.empty()) {
    csv.open(o.csv);
    if (!csv) {
      std::fprintf(stderr, "kbuf-tebd: --csv: cannot write '%s'\n", o.csv.c_str());
      return exit_other_error;
    }
  }
  if (!o.trace.empty()) {
    trace.open(o.trace);
    if (!trace) {
      std::fprintf(stderr, "kbuf-tebd: --trace: cannot write '%s'\n", o.trace.c_str());
      return exit_other_error;
    }
  }
  o.threads = std::min(o.threads, o.fields.size());
  if (serial_kernels_race && o.threads > 1) {
    std::printf(
        "kbuf-tebd: --threads %zu: Kokkos %s's Serial backend shares one scratch buffer\n"
        "           between all kernels without a lock (fixed in Kokkos 3.5), so kernels\n"
        "           dispatched from several host threads at once race: running 1 thread.\n",
        o.threads, kbuf::Impl::kokkos_version_string(KOKKOS_VERSION).c_str());
    o.threads = 1;
  }
  std::printf("kbuf-tebd: kbuf %d.%d.%d | Kokkos %s | execution space %s | memory space %s\n",
              KBUF_VERSION_MAJOR, KBUF_VERSION_MINOR, KBUF_VERSION_PATCH,
              kbuf::Impl::kokkos_version_string(KOKKOS_VERSION).c_str(), exec_space::name(),
              space::name());
  std::printf("iTEBD: two-site cell, second-order Trotter, %s schedule, SVD by LAPACK dgesdd%s\n",
              o.quick ? "quick" : "default",
              o.threads > 1 ? (", " + std::to_string(o.threads) + " threads").c_str() : "");
  std::fflush(stdout);

  // Jobs in output order: fields, then strategies. Thread t runs the fields t, t + N, ...
  std::vector<Job> jobs;
  for (std::size_t f = 0; f < o.fields.size(); ++f)
    for (TemporaryPolicy s : o.strategies) jobs.push_back(Job{f, s, {}, {}, false});
  bool partitioned = false;
  const std::vector<exec_space> instances = thread_instances(o.threads, partitioned);
  // One pool per instance: each thread takes its allocator, bound to its instance, with
  // local() (one pool for all threads when they share the default instance).
  std::vector<std::unique_ptr<pool_type>> pools;
  for (std::size_t i = 0; i < (partitioned ? o.threads : 1); ++i) {
    pools.push_back(std::make_unique<pool_type>(
        instances[i], 0, pool_type::allocator_type::default_alignment, "kbuf-tebd"));
  }
  Progress progress(isatty(STDERR_FILENO) != 0);
  auto work = [&](std::size_t t) {
    for (Job& job : jobs) {
      if (job.field_index % o.threads != t) continue;
      run_job(o, job, *pools[t % pools.size()], instances[t], progress);
    }
  };
  if (o.threads == 1) {
    work(0);
  } else {
    std::vector<std::thread> threads;
    for (std::size_t t = 0; t < o.threads; ++t) threads.emplace_back(work, t);
    for (auto& th : threads) th.join();
  }
  progress.clear();

  bool ok = true, oom = false, other = false;
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    const Job& job = jobs[j];
    const std::string what = describe(o, job.field_index, job.strategy);
    if (!job.error.empty()) {
      std::fprintf(stderr, "kbuf-tebd: %s: %s%s\n", what.c_str(),
                   job.out_of_memory ? "out of memory: " : "", job.error.c_str());
      (job.out_of_memory ? oom : other) = true;
      continue;
    }
    const RunResult& r = job.result;
    const double err = std::fabs(r.energy - r.exact);
    std::printf(
        "%s: energy per site %.10f exact %.10f error %.1e steps %zu seconds %.3f "
        "(%.1f us per step) chi reached %zu\n",
        what.c_str(), r.energy, r.exact, err, r.steps, r.seconds, 1e6 * r.seconds / r.steps,
        r.chi_reached);
    if (job.strategy == TemporaryPolicy::kbuf) {
      std::printf(
          "  kbuf statistics: temporaries %zu, fallbacks %zu (%zu before chi reached %zu at step "
          "%zu, %zu after), regrows %zu, capacity %zu bytes, high-water mark %zu bytes\n",
          r.temporaries, r.fallbacks, r.fallbacks_before_chi_reached, r.chi_reached,
          r.step_chi_reached, r.fallbacks_after_chi_reached, r.regrows, r.capacity,
          r.high_water_mark);
    } else {
      std::printf("  %s statistics: temporaries %zu (fresh managed Views, no buffer)\n",
                  strategy_name(job.strategy), r.temporaries);
    }
    const Tolerance tol = tolerance(o.model, o.fields[job.field_index], o.chi, o.quick);
    const double measured = tol.relative ? err / std::fabs(r.exact) : err;
    if (!(measured <= tol.value)) {
      std::fprintf(stderr, "kbuf-tebd: %s: %s error %.2e exceeds %.0e\n", what.c_str(),
                   tol.relative ? "relative" : "absolute", measured, tol.value);
      ok = false;
    }
    if (job.strategy == TemporaryPolicy::kbuf && r.fallbacks_after_chi_reached != 0) {
      std::fprintf(stderr,
                   "kbuf-tebd: %s: %zu fallbacks after the bond dimension reached its largest "
                   "value\n",
                   what.c_str(), r.fallbacks_after_chi_reached);
      ok = false;
    }
    // Against the first strategy of the same field.
    const Job& first = jobs[j - (j % o.strategies.size())];
    if (&first != &job && first.error.empty()) {
      const double diff =
          std::fabs(r.energy - first.result.energy) / std::fabs(first.result.energy);
      if (!(diff <= agreement)) {
        std::fprintf(stderr, "kbuf-tebd: %s: energy differs from %s's by %.2e (relative)\n",
                     what.c_str(), strategy_name(first.strategy), diff);
        ok = false;
      }
    }
  }
  std::fflush(stdout);

  if (csv.is_open()) {
    csv << "model,field,chi,strategy,steps,energy,exact,abs_error,seconds,temporaries,fallbacks,"
           "regrows,hwm_bytes\n";
    csv.precision(17);
    for (const Job& job : jobs) {
      if (!job.error.empty()) continue;
      const RunResult& r = job.result;
      const bool k = job.strategy == TemporaryPolicy::kbuf;
      csv << to_string(o.model) << ',' << field_text(o, job.field_index) << ',' << o.chi << ','
          << strategy_name(job.strategy) << ',' << r.steps << ',' << r.energy << ',' << r.exact
          << ',' << std::fabs(r.energy - r.exact) << ',' << r.seconds << ',' << r.temporaries
          << ',';
      if (k) {
        csv << r.fallbacks << ',' << r.regrows << ',' << r.high_water_mark << '\n';
      } else {
        csv << ",,\n";
      }
    }
    csv.flush();
    if (!csv) {
      std::fprintf(stderr, "kbuf-tebd: --csv: writing '%s' failed\n", o.csv.c_str());
      other = true;
    }
  }
  if (trace.is_open()) {
    trace << "model,field,chi,strategy,step,dt,energy,energy_environment,lambda_rate,energy_rate,"
             "chi_now,seconds,capacity,hwm_bytes,"
             "peak_used,fallbacks,regrows,temporaries\n";
    trace.precision(17);
    for (const Job& job : jobs) {
      for (const TracePoint& t : job.result.trace) {
        trace << to_string(o.model) << ',' << field_text(o, job.field_index) << ',' << o.chi << ','
              << strategy_name(job.strategy) << ',' << t.step << ',' << t.dt << ',' << t.energy
              << ',';
        if (t.energy_environment != 0) trace << t.energy_environment;
        trace << ',' << t.lambda_rate << ',' << t.energy_rate << ',' << t.chi << ',' << t.seconds
              << ',' << t.capacity << ',' << t.high_water_mark << ',' << t.peak_used << ','
              << t.fallbacks << ',' << t.regrows << ',' << t.temporaries << '\n';
      }
    }
    trace.flush();
    if (!trace) {
      std::fprintf(stderr, "kbuf-tebd: --trace: writing '%s' failed\n", o.trace.c_str());
      other = true;
    }
  }
  if (oom) return exit_out_of_memory;
  if (other) return exit_other_error;
  std::printf("%s\n", ok ? "OK: every run within its accuracy target, strategies agree"
                         : "FAILED (see the messages above)");
  return ok ? exit_ok : exit_wrong_result;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<char*> kokkos_args;
  const Options options = parse(argc, argv, kokkos_args);
  int kargc = static_cast<int>(kokkos_args.size());
  kokkos_args.push_back(nullptr);
  Kokkos::ScopeGuard guard(kargc, kokkos_args.data());
  try {
    return run(options);
  } catch (const std::bad_alloc& e) {
    std::fprintf(stderr, "kbuf-tebd: out of memory: %s\n", e.what());
    return exit_out_of_memory;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kbuf-tebd: %s\n", e.what());
    return exit_other_error;
  }
}
