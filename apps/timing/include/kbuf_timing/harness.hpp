// Timing and reporting code shared by kbuf-bench and the applications in apps/ (target
// kbuf_timing): optimisation barriers, interleaved timing of several strategies, order
// statistics, aligned tables and CSV output. Self-made so that one process prints every
// strategy's figures and its ratio to kbuf side by side.
#ifndef KBUF_TIMING_HARNESS_HPP
#define KBUF_TIMING_HARNESS_HPP

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace kbuf_timing {

/// Keeps a function out of line: one call per round for every strategy alike, and a symbol that
/// profilers (callgrind) can attribute instructions to.
#if defined(__GNUC__) || defined(__clang__)
#define KBUF_TIMING_NOINLINE __attribute__((noinline))
#else
#define KBUF_TIMING_NOINLINE
#endif

// ---- Optimisation barriers (as benchmark::DoNotOptimize / ClobberMemory) -------------------

/// The compiler must assume `p` escapes: whatever it points to may be read or written here.
inline void escape(const void* p) {
#if defined(__GNUC__) || defined(__clang__)
  asm volatile("" : : "g"(p) : "memory");
#else
  static const void* volatile sink;
  sink = p;
#endif
}

/// The compiler must assume all memory was read and written here: values cached in registers
/// (table entries, extents, allocator state) are reloaded afterwards, nothing is hoisted across.
inline void clobber() {
#if defined(__GNUC__) || defined(__clang__)
  asm volatile("" : : : "memory");
#else
  std::atomic_signal_fence(std::memory_order_seq_cst);
#endif
}

// ---- Statistics -----------------------------------------------------------------------------

struct Summary {
  double median = 0, p10 = 0, p90 = 0, min = 0, max = 0;
  std::size_t samples = 0;
};

/// Order statistics of `v` (nearest-rank percentiles, median of the middle two for even sizes).
inline Summary summarize(std::vector<double> v) {
  Summary s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  auto rank = [&](double q) {
    const double pos = q * static_cast<double>(n - 1);
    const std::size_t lo = static_cast<std::size_t>(std::floor(pos));
    const std::size_t hi = std::min(lo + 1, n - 1);
    return v[lo] + (pos - static_cast<double>(lo)) * (v[hi] - v[lo]);
  };
  s.median = rank(0.5);
  s.p10 = rank(0.1);
  s.p90 = rank(0.9);
  s.min = v.front();
  s.max = v.back();
  s.samples = n;
  return s;
}

// ---- Timing ---------------------------------------------------------------------------------

using clock_type = std::chrono::steady_clock;

inline double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

/// One contender under test (a policy running one workload): `run(k)` runs k rounds of
/// `temps_per_round` temporaries each and returns only when their work is complete (device work
/// fenced).
struct Contender {
  std::string name;
  std::function<void(std::size_t)> run;
  std::size_t temps_per_round = 1;
  std::size_t rounds_per_sample = 1;  // calibrated
  std::vector<double> ns_per_temp;    // one entry per sample
  double seconds = 0;                 // time spent in samples
};

struct TimingOptions {
  std::size_t repetitions = 101;     // samples per strategy
  double min_sample_seconds = 2e-4;  // each sample runs at least this long (after calibration):
                                     // short samples are rarely preempted on a shared machine
  std::size_t warmup_rounds = 3;     // untimed rounds per strategy before calibration
  double max_seconds = 1.0;          // per strategy and figure: a strategy whose samples are
                                     // long (a 64 MiB zero-fill) stops after this long, with
                                     // at least min_repetitions samples
  std::size_t min_repetitions = 11;
};

/// Times every strategy `opt.repetitions` times, interleaved: repetition r runs the strategies
/// in an order rotated by r, so slow phases of a noisy machine hit all strategies alike. A
/// strategy that has used up `opt.max_seconds` stops early (after `opt.min_repetitions`).
inline void measure_interleaved(std::vector<Contender>& strategies, const TimingOptions& opt) {
  for (auto& s : strategies) {
    s.run(opt.warmup_rounds);
    std::size_t k = 1;
    for (;;) {  // calibrate: double k until one sample lasts min_sample_seconds
      const auto t0 = clock_type::now();
      s.run(k);
      const double t = seconds_since(t0);
      if (t >= opt.min_sample_seconds || k >= (std::size_t{1} << 30)) break;
      const double grow = t > 0 ? opt.min_sample_seconds / t : 16.0;
      k = static_cast<std::size_t>(std::ceil(static_cast<double>(k) * std::min(16.0, 1.2 * grow)));
    }
    s.rounds_per_sample = k;
    s.ns_per_temp.clear();
    s.ns_per_temp.reserve(opt.repetitions);
    s.seconds = 0;
  }
  const std::size_t n = strategies.size();
  const std::size_t at_least = std::min(opt.min_repetitions, opt.repetitions);
  for (std::size_t r = 0; r < opt.repetitions; ++r) {
    for (std::size_t j = 0; j < n; ++j) {
      Contender& s = strategies[(j + r) % n];
      if (s.ns_per_temp.size() >= at_least && s.seconds >= opt.max_seconds) continue;
      const auto t0 = clock_type::now();
      s.run(s.rounds_per_sample);
      const double t = seconds_since(t0);
      s.seconds += t;
      s.ns_per_temp.push_back(t * 1e9 /
                              static_cast<double>(s.rounds_per_sample * s.temps_per_round));
    }
  }
}

// ---- Output ---------------------------------------------------------------------------------

/// Long-format CSV: one row per (section, workload, x, strategy).
class CsvWriter {
 public:
  CsvWriter() = default;
  CsvWriter(const CsvWriter&) = delete;
  CsvWriter& operator=(const CsvWriter&) = delete;
  ~CsvWriter() {
    if (f_ != nullptr) std::fclose(f_);
  }
  bool open(const std::string& path) {
    f_ = std::fopen(path.c_str(), "w");
    return f_ != nullptr;
  }
  void comment(const std::string& line) {
    if (f_ != nullptr) std::fprintf(f_, "# %s\n", line.c_str());
  }
  void header() {
    if (f_ != nullptr) {
      std::fprintf(f_,
                   "section,workload,x,strategy,median_ns,p10_ns,p90_ns,min_ns,max_ns,samples,"
                   "ratio_to_kbuf,fallbacks,capacity_bytes\n");
    }
  }
  /// `ratio`, `fallbacks`, `capacity` < 0 are written as empty fields.
  void row(const std::string& section, const std::string& workload, double x,
           const std::string& strategy, const Summary& s, double ratio, long long fallbacks,
           long long capacity) {
    if (f_ == nullptr) return;
    std::fprintf(f_, "%s,%s,%.17g,%s,%.4f,%.4f,%.4f,%.4f,%.4f,%zu,", section.c_str(),
                 workload.c_str(), x, strategy.c_str(), s.median, s.p10, s.p90, s.min, s.max,
                 s.samples);
    if (ratio >= 0) std::fprintf(f_, "%.4f", ratio);
    std::fputc(',', f_);
    if (fallbacks >= 0) std::fprintf(f_, "%lld", fallbacks);
    std::fputc(',', f_);
    if (capacity >= 0) std::fprintf(f_, "%lld", capacity);
    std::fputc('\n', f_);
  }
  void flush() {
    if (f_ != nullptr) std::fflush(f_);
  }

 private:
  std::FILE* f_ = nullptr;
};

/// "64 B", "4 KiB", "1 MiB": byte counts in the binary unit that divides them.
inline std::string bytes_label(std::size_t n) {
  const char* units[] = {"B", "KiB", "MiB", "GiB"};
  int u = 0;
  while (u < 3 && n >= 1024 && n % 1024 == 0) {
    n /= 1024;
    ++u;
  }
  return std::to_string(n) + " " + units[u];
}

}  // namespace kbuf_timing

#endif  // KBUF_TIMING_HARNESS_HPP
