// kbuf-tebd: imaginary-time iTEBD ground states of infinite spin chains (Vidal, PRL 98, 070201
// (2007)) with every temporary of a step from kbuf, or from fresh managed Views to compare;
// the energy per site beside the exact value.
#include <kbuf/impl/kokkos_version.hpp>  // the version printed beside the results
#include <kbuf_cli/cli.hpp>              // options, exit statuses (shared with kbuf-demo)
#include <kbuf_tebd/kbuf_tebd.hpp>
#include <kbuf_tensor/instances.hpp>    // the instances of threads, shared with kbuf-demo
#include <kbuf_timing/allocations.hpp>  // the allocation counter, shared with kbuf-demo
#include <kbuf_timing/harness.hpp>      // order statistics

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <memory>
#include <mutex>
#include <new>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <unistd.h>

#if KBUF_TEBD_MPI
#include <kbuf/mpi.hpp>
#endif

namespace {

using namespace kbuf_tebd;
using kbuf_tensor::TemporaryPolicy;
using pool_type = kbuf::AllocatorPool<space>;

using namespace kbuf_cli;

constexpr double agreement = 1e-12;  // strategies agree to this (relative)
constexpr std::size_t max_chi = 1024;
constexpr std::size_t max_repeat = 1000;
// The largest |h|: beyond it the Hamiltonian's products and sums (h^2, 4 h) leave what a
// double holds. Any field up to it is computed (the gate is shifted by its smallest
// eigenvalue, the exact energy uses e0(h) = |h| e0(1/|h|)).
constexpr double max_field = 1e150;

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
  std::size_t repeat = 1;
  Faults faults;  // test builds only (--fault)
  bool help = false;
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

constexpr const char* csv_columns =
    "model,field,chi,strategy,steps,energy,exact,abs_error,seconds,temporaries,fallbacks,"
    "regrows,hwm_bytes,allocations,repeats,seconds_min,seconds_max";

void usage(std::FILE* out) {
  std::fprintf(
      out,
      "Usage: kbuf-tebd --model ising|heisenberg [--field h[,h...]] [--chi N]\n"
      "                 [--strategy kbuf|view-noinit|view-init|all] [--threads N] [--csv FILE]\n"
      "                 [--trace FILE] [--schedule default|quick] [--limit BYTES]\n"
      "                 [--repeat N] [--kokkos-... options]\n"
      "Ground state of an infinite spin chain by imaginary-time iTEBD (two-site unit cell,\n"
      "Gamma-Lambda form, second-order Trotter, decreasing time steps, truncation by SVD),\n"
      "every temporary of a step from a kbuf::BufferAllocator or from fresh managed Views;\n"
      "prints the energy per site beside the exact value.\n"
      "  ising:      H = -sum sz sz - h sum sx, e0(h) = -(1/pi) int_0^pi sqrt(1+h^2-2h cos k) dk\n"
      "  heisenberg: H = sum S.S (spin 1/2), e0 = 1/4 - ln 2\n"
      "\n"
      "Options:\n"
      "  --model M         ising or heisenberg (required)\n"
      "  --field h[,h...]  transverse fields (ising; default 0.5,1,1.5), |h| <= %.0e;\n"
      "                    heisenberg has none\n"
      "  --chi N           largest bond dimension, 1 to %zu (default 32)\n"
      "  --strategy S      where temporaries come from: kbuf (default), view-noinit (fresh\n"
      "                    managed Views, WithoutInitializing), view-init (fresh managed\n"
      "                    Views, zero-filled), or all three (each field's one after the\n"
      "                    other, interleaved with --repeat)\n"
      "  --repeat N        run every field and strategy N times (1 to %zu, default 1), the\n"
      "                    strategies' runs interleaved; prints each one's median, minimum and\n"
      "                    maximum time and, per field, whether kbuf is faster or slower than\n"
      "                    each other strategy beyond the spread of their runs, or within noise\n"
      "                    (N >= 3 for a verdict). kbuf's first run includes its warm-up\n"
      "  --threads N       run up to N fields at once, one host thread each, each with its own\n"
      "                    execution space instance where the backend can split and its\n"
      "                    allocator from one kbuf::AllocatorPool (Kokkos < 3.5 with the Serial\n"
      "                    backend runs one thread and says why)\n"
      "  --csv FILE        one row per field and strategy, the columns\n"
      "                    %s\n"
      "                    (seconds: the median; allocations: memory allocations in the memory\n"
      "                    space during the first run, counted through Kokkos Tools)\n"
      "  --trace FILE      one row per convergence check: step, time step, energy, bond\n"
      "                    dimension and the allocator's capacity, high-water mark, fallbacks\n"
      "  --schedule S      default: time steps 0.1 .. 0.001; quick: 0.1, 0.02, 0.005 with at\n"
      "                    most 400 steps each (for tests; accuracy targets do not apply)\n"
      "  --limit BYTES     kbuf allocators may hold at most BYTES (kbuf::BufferAllocator::limit)\n"
      "  --help            this text\n"
      "Under mpirun (builds with MPI) the fields are shared round-robin among the ranks, each\n"
      "with its own pools (--threads works inside a rank); rank 0 prints every run in field\n"
      "order and the kbuf statistics reduced over the ranks, and writes the CSV and trace\n"
      "files. Every rank exits with the same status.\n"
      "Environment:\n"
      "  KBUF_SIZES=FILE   kbuf's allocators start from the sizes an earlier run saved in FILE\n"
      "                    (no fallback, no regrowth where that run had them), and what this\n"
      "                    run learns is saved there at the end (under mpirun: the ranks'\n"
      "                    sizes combined, written once by rank 0)\n"
      "Exit status:\n"
      "  0  every run met its accuracy target, all strategies agree within %.0e (relative), and\n"
      "     kbuf needed no fallback after warm-up (the bond dimension at its largest and\n"
      "     every kind of work done once at it)\n"
      "  1  a wrong result (one of the above failed, or a numerical failure inside a run: a\n"
      "     matrix with NaN or infinity before an SVD, an SVD that did not converge)\n"
      "  2  a bad option\n"
      "  3  out of memory\n"
      "  4  any other error (e.g. the CSV file cannot be written)\n",
      max_field, max_chi, max_repeat, csv_columns, agreement);
}

Options parse(const kbuf_cli::Arguments& args) {
  Options o;
  o.help = args.help();
  if (o.help) return o;
  args.each([&](const std::string& arg, const auto& next) {
    if (arg == "--model") {
      o.model = parse_choice("--model", next(), {"ising", "heisenberg"}) == 0 ? Model::ising
                                                                              : Model::heisenberg;
      o.model_given = true;
    } else if (arg == "--field") {
      for (const std::string& item : kbuf_cli::split_list("--field", next())) {
        const double h = parse_number("--field", item);
        if (!(std::fabs(h) <= max_field)) {
          bad_option("--field: '" + item + "' is outside the fields computed, -1e150 to 1e150");
        }
        o.fields.push_back(h);
        o.field_texts.push_back(item);
      }
    } else if (arg == "--chi") {
      o.chi = parse_positive("--chi", next(), max_chi);
    } else if (arg == "--strategy") {
      o.strategies = kbuf_tensor::strategies_named(
          parse_choice("--strategy", next(), kbuf_tensor::strategy_names()));
    } else if (arg == "--threads") {
      o.threads = parse_positive("--threads", next(), 256);
    } else if (arg == "--repeat") {
      o.repeat = parse_positive("--repeat", next(), max_repeat);
    } else if (arg == "--csv") {
      o.csv = parse_file_name("--csv", next());
    } else if (arg == "--trace") {
      o.trace = parse_file_name("--trace", next());
    } else if (arg == "--schedule") {
      o.quick = parse_choice("--schedule", next(), {"default", "quick"}) == 1;
    } else if (arg == "--limit") {
      o.limit = parse_positive("--limit", next(), static_cast<std::size_t>(-1));
#if KBUF_TEBD_FAULT_SWITCHES
    } else if (arg == "--fault") {  // test builds only
      (void)parse_choice("--fault", next(), {"late-fallback"});
      o.faults.late_fallback = true;
#endif
    } else {
      kbuf_cli::Arguments::unknown(arg);
    }
  });
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
// converged. Absolute bounds are in units of the Hamiltonian's energy scale, max(1, |h|).
struct Tolerance {
  double value;
  bool relative;
};

Tolerance tolerance(Model model, double field, std::size_t chi, bool quick) {
  if (quick) return {1e-2, true};
  if (gapped(model, field)) {
    const double scale = std::max(1.0, std::fabs(field));
    if (chi >= 32) return {1e-6 * scale, false};
    if (chi >= 16) return {1e-5 * scale, false};
    if (chi >= 8) return {1e-4 * scale, false};
    return {1e-2 * scale, false};
  }
  if (chi >= 32) return {1e-4, true};
  if (chi >= 16) return {3e-4, true};
  if (chi >= 8) return {2e-3, true};
  return {5e-2, true};
}

// ---- Runs ----------------------------------------------------------------------------------

// One field and strategy, run --repeat times.
struct Job {
  std::size_t field_index;
  TemporaryPolicy strategy;
  RunResult result;              // of the first run (kbuf: with its warm-up)
  std::vector<double> seconds;   // of every run
  std::vector<double> energies;  // of every run: the same each time
  std::string error;             // an exception's message
  bool out_of_memory = false;
  bool numerical = false;                      // a NumericalError: a wrong result
  kbuf::Statistics statistics{};               // kbuf: the allocator's counters over the first run
  kbuf_timing::AllocationCount allocations{};  // in the memory space, over the first run
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

constexpr bool serial_kernels_race = kbuf_tensor::serial_kernels_race<exec_space>;

std::string field_text(const Options& o, std::size_t i) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", o.fields[i]);
  return buf;
}

std::string describe(const Options& o, std::size_t field_index, TemporaryPolicy s) {
  return std::string("model ") + to_string(o.model) + " field " + field_text(o, field_index) +
         " chi " + std::to_string(o.chi) + " strategy " + strategy_name(s);
}

// One run of a job (after an error, none).
void run_job(const Options& o, Job& job, pool_type& pool, const exec_space& exec,
             Progress& progress) {
  if (!job.error.empty()) return;
  try {
    RunParams p;
    p.model = o.model;
    p.field = o.fields[job.field_index];
    p.chi = o.chi;
    p.faults = o.faults;
    p.allocations = [] { return kbuf_timing::AllocationCounter::now().allocations; };
    if (o.quick) p.schedule = Schedule::quick();
    std::unique_ptr<Temporaries> tmp;
    kbuf::BufferAllocator<space>* alloc = nullptr;
    if (job.strategy == TemporaryPolicy::kbuf) {
      alloc = &pool.local();
      if (o.limit != 0) alloc->limit(o.limit);
      tmp = std::make_unique<Temporaries>(*alloc);
    } else {
      tmp = std::make_unique<Temporaries>(job.strategy, exec);
    }
    const std::string what = describe(o, job.field_index, job.strategy);
    const kbuf_timing::AllocationCount before = kbuf_timing::AllocationCounter::now();
    RunResult r = ground_state(*tmp, p, [&](const TracePoint& t) { progress.report(what, t); });
    if (job.seconds.empty()) job.allocations = kbuf_timing::AllocationCounter::now() - before;
    job.seconds.push_back(r.seconds);
    job.energies.push_back(r.energy);
    if (job.seconds.size() == 1) {
      job.result = std::move(r);
      if (alloc != nullptr) job.statistics = alloc->statistics();  // counted from the run's start
    }
  } catch (const std::bad_alloc& e) {  // kbuf::out_of_memory and Kokkos' allocation failures
    job.error = e.what();
    job.out_of_memory = true;
  } catch (const NumericalError& e) {
    job.error = e.what();
    job.numerical = true;
  } catch (const std::exception& e) {
    job.error = e.what();
  }
}

// Threads make their allocators first, then the allocation counter is installed, then they
// run: an allocator made while a Kokkos tool is loaded reports every temporary to it, off its
// hot path, and the timings would not be kbuf's.
class StartGate {
 public:
  void arrive_and_wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    ++arrived_;
    changed_.notify_all();
    changed_.wait(lock, [&] { return open_; });
  }
  void wait_for(std::size_t n) {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return arrived_ >= n; });
  }
  void open() {
    std::lock_guard<std::mutex> lock(mutex_);
    open_ = true;
    changed_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::size_t arrived_ = 0;
  bool open_ = false;
};

// ---- Ranks ---------------------------------------------------------------------------------

// The processes a run is shared among: MPI_COMM_WORLD under mpirun (in builds with MPI), else
// this process alone. Each rank runs the fields shared_fields gives it, with its own pools;
// rank 0 prints every run's lines in field order and writes the CSV and trace files.
struct Ranks {
  int rank = 0;
  int size = 1;
  bool root() const { return rank == 0; }
};

// The fields of this rank: f = rank, rank + size, ... (all of them on one rank).
std::vector<std::size_t> shared_fields(std::size_t n, const Ranks& ranks) {
#if KBUF_TEBD_MPI
  if (ranks.size > 1) return kbuf::mpi::shared_indices(n, MPI_COMM_WORLD);
#endif
  (void)ranks;
  std::vector<std::size_t> all(n);
  for (std::size_t i = 0; i < n; ++i) all[i] = i;
  return all;
}

// Texts keyed by job, every rank's on rank 0 in job order (an empty vector on the others).
using keyed_texts = std::vector<std::pair<std::size_t, std::string>>;
std::vector<std::string> gather_in_order(keyed_texts mine, const Ranks& ranks) {
#if KBUF_TEBD_MPI
  if (ranks.size > 1) return kbuf::mpi::gather_ordered(mine, MPI_COMM_WORLD, 0);
#endif
  (void)ranks;
  std::stable_sort(mine.begin(), mine.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> texts;
  for (auto& m : mine) texts.push_back(std::move(m.second));
  return texts;
}

// Each flag set on every rank if it is set on any.
void agree(std::vector<int>& flags, const Ranks& ranks) {
#if KBUF_TEBD_MPI
  if (ranks.size > 1) {
    MPI_Allreduce(MPI_IN_PLACE, flags.data(), static_cast<int>(flags.size()), MPI_INT, MPI_MAX,
                  MPI_COMM_WORLD);
  }
#endif
  (void)flags;
  (void)ranks;
}

// Each count summed over the ranks, on every rank.
void sum_over_ranks(std::vector<unsigned long long>& counts, const Ranks& ranks) {
#if KBUF_TEBD_MPI
  if (ranks.size > 1) {
    MPI_Allreduce(MPI_IN_PLACE, counts.data(), static_cast<int>(counts.size()),
                  MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  }
#endif
  (void)counts;
  (void)ranks;
}

#if KBUF_TEBD_MPI
// The counters of this rank's kbuf runs as one pool's: summed, the peaks the largest.
kbuf::Statistics combined(const std::vector<Job>& jobs) {
  std::size_t total[kbuf::Impl::statistics_words] = {};
  for (const Job& job : jobs) {
    if (job.strategy != TemporaryPolicy::kbuf || !job.error.empty()) continue;
    std::size_t words[kbuf::Impl::statistics_words];
    std::memcpy(words, &job.statistics, sizeof words);
    for (std::size_t i = 0; i < kbuf::Impl::statistics_words; ++i) {
      total[i] = kbuf::Impl::statistics_word_is_peak(i) ? std::max(total[i], words[i])
                                                        : total[i] + words[i];
    }
  }
  kbuf::Statistics s;
  std::memcpy(static_cast<void*>(&s), total, sizeof total);
  return s;
}
#endif

#if defined(__GNUC__)
__attribute__((format(printf, 1, 2)))
#endif
std::string
format(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  va_list again;
  va_copy(again, args);
  const int n = std::vsnprintf(nullptr, 0, fmt, args);
  va_end(args);
  std::string s(n > 0 ? static_cast<std::size_t>(n) : 0, '\0');
  if (n > 0) std::vsnprintf(&s[0], s.size() + 1, fmt, again);
  va_end(again);
  return s;
}

// What one run leaves for rank 0 to print and write, and what it says about the exit status.
struct JobReport {
  std::string out, err, csv, trace;
  bool wrong = false, out_of_memory = false, other = false;
};

// An energy with 10 decimals; in exponent notation with 11 significant digits past 1e6 (large
// fields), where 10 decimals would print digits no double holds.
std::string energy_text(double e) {
  return std::fabs(e) < 1e6 ? format("%.10f", e) : format("%.10e", e);
}

// "kbuf against view-init: faster by 12.3 %" when every kbuf run beat every other run, slower
// likewise, and "within noise" when their ranges overlap; no verdict from fewer than 3 runs.
std::string timing_verdict(const Job& kbuf_job, const Job& other) {
  const kbuf_timing::Summary k = kbuf_timing::summarize(kbuf_job.seconds);
  const kbuf_timing::Summary v = kbuf_timing::summarize(other.seconds);
  const char* name = strategy_name(other.strategy);
  if (k.samples < 3 || v.samples < 3) {
    return format("  kbuf against %s: no verdict from %zu run%s each (--repeat 3 or more)\n", name,
                  k.samples, k.samples == 1 ? "" : "s");
  }
  if (k.max < v.min) {
    return format(
        "  kbuf against %s: faster by %.1f %% (medians; every kbuf run faster than "
        "every %s run)\n",
        name, 100 * (v.median - k.median) / v.median, name);
  }
  if (v.max < k.min) {
    return format(
        "  kbuf against %s: slower by %.1f %% (medians; every kbuf run slower than "
        "every %s run)\n",
        name, 100 * (k.median - v.median) / v.median, name);
  }
  return format(
      "  kbuf against %s: within noise (medians %.1f %% apart, the runs' ranges "
      "overlap)\n",
      name, 100 * (k.median - v.median) / v.median);
}

JobReport report(const Options& o, const std::vector<Job>& jobs, std::size_t j) {
  JobReport rep;
  const Job& job = jobs[j];
  const std::string what = describe(o, job.field_index, job.strategy);
  if (!job.error.empty()) {
    rep.err =
        format("kbuf-tebd: %s: %s%s\n", what.c_str(),
               job.out_of_memory ? "out of memory: "
                                 : (job.numerical ? "numerical failure, a wrong result: " : ""),
               job.error.c_str());
    (job.out_of_memory ? rep.out_of_memory : (job.numerical ? rep.wrong : rep.other)) = true;
    return rep;
  }
  const RunResult& r = job.result;
  const kbuf_timing::Summary t = kbuf_timing::summarize(job.seconds);
  const double err = std::fabs(r.energy - r.exact);
  const std::string spread =
      t.samples > 1 ? format("; median of %zu runs, min %.3f, max %.3f", t.samples, t.min, t.max)
                    : std::string();
  rep.out = format(
      "%s: energy per site %s exact %s error %.1e steps %zu seconds %.3f "
      "(%.1f us per step%s) chi reached %zu\n",
      what.c_str(), energy_text(r.energy).c_str(), energy_text(r.exact).c_str(), err, r.steps,
      t.median, 1e6 * t.median / r.steps, spread.c_str(), r.chi_reached);
  if (job.strategy == TemporaryPolicy::kbuf) {
    rep.out += format(
        "  kbuf statistics: temporaries %zu, fallbacks %zu (%zu warming up to step %zu, %zu "
        "after), regrows %zu, capacity %zu bytes, high-water mark %zu bytes\n",
        r.temporaries, r.fallbacks, r.fallbacks_warming_up, r.step_warm, r.fallbacks_after_warm_up,
        r.regrows, r.capacity, r.high_water_mark);
  } else {
    rep.out += format("  %s statistics: temporaries %zu (fresh managed Views, no buffer)\n",
                      strategy_name(job.strategy), r.temporaries);
  }
  rep.out +=
      format("  allocations in %s: %zu (%zu bytes) in the %srun, %zu after warm-up (step %zu)\n",
             space::name(), job.allocations.allocations, job.allocations.bytes,
             t.samples > 1 ? "first " : "", r.allocations_after_warm_up, r.step_warm);
  const Tolerance tol = tolerance(o.model, o.fields[job.field_index], o.chi, o.quick);
  const double measured = tol.relative ? err / std::fabs(r.exact) : err;
  if (!(measured <= tol.value)) {
    rep.err += format("kbuf-tebd: %s: %s error %.2e exceeds %.0e\n", what.c_str(),
                      tol.relative ? "relative" : "absolute", measured, tol.value);
    rep.wrong = true;
  }
  if (job.strategy == TemporaryPolicy::kbuf && r.fallbacks_after_warm_up != 0) {
    rep.err += format("kbuf-tebd: %s: %zu fallbacks after warm-up\n", what.c_str(),
                      r.fallbacks_after_warm_up);
    rep.wrong = true;
  }
  for (std::size_t i = 1; i < job.energies.size(); ++i) {  // every run computes the same
    if (!(std::fabs(job.energies[i] - r.energy) <= agreement * std::fabs(r.energy))) {
      rep.err += format("kbuf-tebd: %s: run %zu gave energy %.12f, the first %.12f\n", what.c_str(),
                        i + 1, job.energies[i], r.energy);
      rep.wrong = true;
    }
  }
  // Against the first strategy of the same field (the same rank ran it).
  const std::size_t first_index = j - (j % o.strategies.size());
  const Job& first = jobs[first_index];
  if (&first != &job && first.error.empty()) {
    const double diff = std::fabs(r.energy - first.result.energy) / std::fabs(first.result.energy);
    if (!(diff <= agreement)) {
      rep.err += format("kbuf-tebd: %s: energy differs from %s's by %.2e (relative)\n",
                        what.c_str(), strategy_name(first.strategy), diff);
      rep.wrong = true;
    }
  }
  // After the field's last strategy: kbuf's time against the others'.
  if (j % o.strategies.size() + 1 == o.strategies.size() &&
      first.strategy == TemporaryPolicy::kbuf && first.error.empty()) {
    for (std::size_t i = first_index + 1; i <= j; ++i) {
      if (jobs[i].error.empty()) rep.out += timing_verdict(first, jobs[i]);
    }
  }

  std::ostringstream csv;
  csv.precision(17);
  const bool k = job.strategy == TemporaryPolicy::kbuf;
  csv << to_string(o.model) << ',' << field_text(o, job.field_index) << ',' << o.chi << ','
      << strategy_name(job.strategy) << ',' << r.steps << ',' << r.energy << ',' << r.exact << ','
      << err << ',' << t.median << ',' << r.temporaries << ',';
  if (k) {
    csv << r.fallbacks << ',' << r.regrows << ',' << r.high_water_mark;
  } else {
    csv << ",,";
  }
  csv << ',' << job.allocations.allocations << ',' << t.samples << ',' << t.min << ',' << t.max
      << '\n';
  rep.csv = csv.str();
  return rep;
}

std::string trace_rows(const Options& o, const Job& job) {
  std::ostringstream trace;
  trace.precision(17);
  for (const TracePoint& t : job.result.trace) {
    trace << to_string(o.model) << ',' << field_text(o, job.field_index) << ',' << o.chi << ','
          << strategy_name(job.strategy) << ',' << t.step << ',' << t.dt << ',' << t.energy << ',';
    if (t.energy_environment != 0) trace << t.energy_environment;
    trace << ',' << t.lambda_rate << ',' << t.energy_rate << ',' << t.chi << ',' << t.seconds << ','
          << t.capacity << ',' << t.high_water_mark << ',' << t.peak_used << ',' << t.fallbacks
          << ',' << t.regrows << ',' << t.temporaries << '\n';
  }
  return trace.str();
}

int run(Options o, const Ranks& ranks, bool threads_may_run) {
  // Rank 0 writes the files; every rank stops if it cannot.
  std::ofstream csv, trace;
  std::vector<int> cannot_write{0};
  if (ranks.root() && !o.csv.empty()) {
    csv.open(o.csv);
    if (!csv) {
      std::fprintf(stderr, "kbuf-tebd: --csv: cannot write '%s'\n", o.csv.c_str());
      cannot_write[0] = 1;
    }
  }
  if (ranks.root() && !cannot_write[0] && !o.trace.empty()) {
    trace.open(o.trace);
    if (!trace) {
      std::fprintf(stderr, "kbuf-tebd: --trace: cannot write '%s'\n", o.trace.c_str());
      cannot_write[0] = 1;
    }
  }
  agree(cannot_write, ranks);
  if (cannot_write[0]) return exit_other_error;

  // This rank's fields; thread t of the rank runs its fields t, t + N, ...
  const std::vector<std::size_t> mine = shared_fields(o.fields.size(), ranks);
  o.threads = std::max<std::size_t>(1, std::min(o.threads, mine.size()));
  if (serial_kernels_race && o.threads > 1) {
    if (ranks.root()) {
      std::printf(
          "kbuf-tebd: --threads %zu: Kokkos %s's Serial backend shares one scratch buffer\n"
          "           between all kernels without a lock (fixed in Kokkos 3.5), so kernels\n"
          "           dispatched from several host threads at once race: running 1 thread.\n",
          o.threads, kbuf::Impl::kokkos_version_string(KOKKOS_VERSION).c_str());
    }
    o.threads = 1;
  }
  if (!threads_may_run && o.threads > 1) {
    if (ranks.root()) {
      std::printf(
          "kbuf-tebd: --threads %zu: the MPI library cannot run other threads beside the one\n"
          "           that calls it (MPI_THREAD_FUNNELED not provided): running 1 thread.\n",
          o.threads);
    }
    o.threads = 1;
  }
  if (ranks.root()) {
    std::printf("kbuf-tebd: kbuf %d.%d.%d | Kokkos %s | execution space %s | memory space %s\n",
                KBUF_VERSION_MAJOR, KBUF_VERSION_MINOR, KBUF_VERSION_PATCH,
                kbuf::Impl::kokkos_version_string(KOKKOS_VERSION).c_str(), exec_space::name(),
                space::name());
    std::string spread;
    if (o.threads > 1) spread += ", " + std::to_string(o.threads) + " threads";
    if (ranks.size > 1) spread += ", " + std::to_string(ranks.size) + " ranks";
    std::printf("iTEBD: two-site cell, second-order Trotter, %s schedule, SVD by LAPACK dgesdd%s\n",
                o.quick ? "quick" : "default", spread.c_str());
    std::fflush(stdout);
  }
  // KBUF_SIZES: the sizes an earlier run saved (rank 0 reads the file for every rank), and what
  // this run learns saved there at Kokkos::finalize (the ranks' combined).
#if KBUF_TEBD_MPI
  const kbuf::SizesFileReport sizes = kbuf::mpi::share_sizes(MPI_COMM_WORLD);
#else
  const kbuf::SizesFileReport sizes = kbuf::loaded_sizes();
#endif

  // This rank's jobs in output order: its fields, then strategies.
  std::vector<Job> jobs;
  for (std::size_t f : mine)
    for (TemporaryPolicy s : o.strategies) {
      Job job{};
      job.field_index = f;
      job.strategy = s;
      jobs.push_back(std::move(job));
    }
  bool partitioned = false;
  const std::vector<exec_space> instances =
      kbuf_tensor::thread_instances<exec_space>(o.threads, partitioned);
  // One pool per instance: each thread takes its allocator, bound to its instance, with
  // local() (one pool for all threads when they share the default instance).
  std::vector<std::unique_ptr<pool_type>> pools;
  for (std::size_t i = 0; i < (partitioned ? o.threads : 1); ++i) {
    pools.push_back(std::make_unique<pool_type>(
        instances[i], 0, pool_type::allocator_type::default_alignment, "kbuf-tebd"));
  }
  Progress progress(ranks.root() && isatty(STDERR_FILENO) != 0);
  const std::size_t per_field = o.strategies.size();
  // Thread t runs its fields' jobs --repeat times, the strategies interleaved: every strategy
  // of a field once, then again. Each thread makes its allocator before the allocation counter
  // is installed (StartGate).
  StartGate gate;
  std::unique_ptr<kbuf_timing::AllocationCounter> counter;
  auto work = [&](std::size_t t) {
    (void)pools[t % pools.size()]->local();
    if (o.threads > 1) gate.arrive_and_wait();
    for (std::size_t round = 0; round < o.repeat; ++round) {
      for (std::size_t j = 0; j < jobs.size(); ++j) {
        if ((j / per_field) % o.threads != t) continue;
        run_job(o, jobs[j], *pools[t % pools.size()], instances[t], progress);
      }
    }
  };
  if (o.threads == 1) {
    (void)pools[0]->local();
    counter = std::make_unique<kbuf_timing::AllocationCounter>(space::name());
    work(0);
  } else {
    std::vector<std::thread> threads;
    for (std::size_t t = 0; t < o.threads; ++t) threads.emplace_back(work, t);
    gate.wait_for(o.threads);
    counter = std::make_unique<kbuf_timing::AllocationCounter>(space::name());
    gate.open();
    for (auto& th : threads) th.join();
  }
  counter.reset();
  progress.clear();

  // Every run's lines, in field order on rank 0.
  std::vector<int> flags{0, 0, 0};  // wrong result, out of memory, other error
  keyed_texts outs, errs, rows, traces;
  std::size_t late_fallbacks = 0;
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    const std::size_t key = jobs[j].field_index * per_field + j % per_field;
    const JobReport rep = report(o, jobs, j);
    flags[0] |= rep.wrong ? 1 : 0;
    flags[1] |= rep.out_of_memory ? 1 : 0;
    flags[2] |= rep.other ? 1 : 0;
    outs.emplace_back(key, rep.out);
    errs.emplace_back(key, rep.err);
    if (!rep.csv.empty()) rows.emplace_back(key, rep.csv);
    if (!o.trace.empty()) traces.emplace_back(key, trace_rows(o, jobs[j]));
    if (jobs[j].error.empty() && jobs[j].strategy == TemporaryPolicy::kbuf) {
      late_fallbacks += jobs[j].result.fallbacks_after_warm_up;
    }
  }
  const std::vector<std::string> out_texts = gather_in_order(std::move(outs), ranks);
  const std::vector<std::string> err_texts = gather_in_order(std::move(errs), ranks);
  for (std::size_t i = 0; i < out_texts.size(); ++i) {
    std::fputs(out_texts[i].c_str(), stdout);
    if (!err_texts[i].empty()) {
      std::fflush(stdout);
      std::fputs(err_texts[i].c_str(), stderr);
    }
  }
  std::fflush(stdout);

#if KBUF_TEBD_MPI
  // The allocators of all ranks: the counters of each rank's kbuf runs (each run counts from
  // its start), and the fallbacks after warm-up.
  if (ranks.size > 1) {
    const kbuf::mpi::ReducedStatistics all =
        kbuf::mpi::reduce_statistics(combined(jobs), MPI_COMM_WORLD);
    kbuf::Statistics late;
    late.fallbacks = late_fallbacks;
    const kbuf::mpi::ReducedStatistics after = kbuf::mpi::reduce_statistics(late, MPI_COMM_WORLD);
    if (ranks.root()) {
      std::ostringstream table;
      table << all;
      std::fputs(table.str().c_str(), stdout);
      std::printf("kbuf fallbacks after warm-up, over %d ranks: min %zu, max %zu, sum %zu\n",
                  ranks.size, after.min.fallbacks, after.max.fallbacks, after.sum.fallbacks);
      std::fflush(stdout);
    }
  }
#else
  (void)late_fallbacks;
#endif

  // What the kbuf runs needed: with KBUF_SIZES from an earlier run, nothing from the first step.
  std::vector<unsigned long long> learning{0, 0};  // fallbacks, regrowths
  for (const Job& job : jobs) {
    if (job.strategy != TemporaryPolicy::kbuf || !job.error.empty()) continue;
    learning[0] += job.statistics.fallbacks;
    learning[1] += job.statistics.regrows;
  }
  sum_over_ranks(learning, ranks);
  if (ranks.root()) {
    std::fputs(kbuf_cli::sizes_line(sizes, "the kbuf runs", learning[0], learning[1]).c_str(),
               stdout);
    std::fflush(stdout);
  }

  const std::vector<std::string> csv_rows = gather_in_order(std::move(rows), ranks);
  const std::vector<std::string> trace_texts = gather_in_order(std::move(traces), ranks);
  if (csv.is_open()) {
    csv << csv_columns << '\n';
    for (const std::string& row : csv_rows) csv << row;
    csv.flush();
    if (!csv) {
      std::fprintf(stderr, "kbuf-tebd: --csv: writing '%s' failed\n", o.csv.c_str());
      flags[2] = 1;
    }
  }
  if (trace.is_open()) {
    trace << "model,field,chi,strategy,step,dt,energy,energy_environment,lambda_rate,energy_rate,"
             "chi_now,seconds,capacity,hwm_bytes,"
             "peak_used,fallbacks,regrows,temporaries\n";
    for (const std::string& rows_of_run : trace_texts) trace << rows_of_run;
    trace.flush();
    if (!trace) {
      std::fprintf(stderr, "kbuf-tebd: --trace: writing '%s' failed\n", o.trace.c_str());
      flags[2] = 1;
    }
  }

  // One exit status on every rank, as if one process had run every field.
  agree(flags, ranks);
  if (flags[1]) return exit_out_of_memory;
  if (flags[2]) return exit_other_error;
  const bool ok = flags[0] == 0;
  if (ranks.root()) {
    std::printf("%s\n", ok ? "OK: every run within its accuracy target, strategies agree"
                           : "FAILED (see the messages above)");
  }
  return ok ? exit_ok : exit_wrong_result;
}

#if KBUF_TEBD_MPI
// MPI from before Kokkos is initialised until after it is finalised. Threads inside a rank
// make no MPI call: MPI_THREAD_FUNNELED is enough.
class MpiRuntime {
 public:
  MpiRuntime(int& argc, char**& argv) {
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided_);
    MPI_Comm_rank(MPI_COMM_WORLD, &ranks_.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks_.size);
  }
  MpiRuntime(const MpiRuntime&) = delete;
  MpiRuntime& operator=(const MpiRuntime&) = delete;
  ~MpiRuntime() { MPI_Finalize(); }

  const Ranks& ranks() const { return ranks_; }
  bool threads_may_run() const { return provided_ >= MPI_THREAD_FUNNELED; }

  // A rank that stops early would leave the others waiting in a collective call.
  [[noreturn]] void abort_all(int status) const {
    MPI_Abort(MPI_COMM_WORLD, status);
    std::exit(status);
  }

 private:
  int provided_ = MPI_THREAD_SINGLE;
  Ranks ranks_;
};
#endif

}  // namespace

int main(int argc, char** argv) {
#if KBUF_TEBD_MPI
  MpiRuntime mpi(argc, argv);
  const Ranks ranks = mpi.ranks();
  const bool threads_may_run = mpi.threads_may_run();
#else
  const Ranks ranks;
  const bool threads_may_run = true;
#endif
  kbuf_cli::Arguments args(argc, argv);
  Options options;
  try {
    options = parse(args);
  } catch (const kbuf_cli::BadOption& e) {  // every rank parses the same arguments
    if (ranks.root()) kbuf_cli::report_bad_option("kbuf-tebd", e.what());
    return exit_bad_option;
  }
  if (options.help) {
    if (ranks.root()) usage(stdout);
    return exit_ok;
  }
  const int status = kbuf_cli::run_under_kokkos(
      "kbuf-tebd", args, [&] { return run(options, ranks, threads_may_run); },
      [&](int failure) {
#if KBUF_TEBD_MPI
        if (ranks.size > 1) mpi.abort_all(failure);
#else
        (void)failure;
#endif
      });
  return status;
}
