// State shared by the benchmark's sections: options, the CSV file, and the figures the final
// summary compares with kbuf's targets.
#ifndef KBUF_BENCH_COMMON_HPP
#define KBUF_BENCH_COMMON_HPP

#include <cstddef>
#include <string>

#include <kbuf_timing/harness.hpp>

namespace kbuf_bench {

using namespace kbuf_timing;  // the timing harness (apps/timing)

struct Options {
  bool quick = false;    // a few seconds in all: the CI smoke test
  TimingOptions timing;  // repetitions, sample length
  std::string csv_path;  // --csv FILE
  std::string sections = "round,pair,instances,live,size,warmup,threads,tensor";
  std::string threads = "1,2";  // --threads LIST: host thread counts of the threaded section
  std::size_t max_live = 4096;  // largest live count in the live-count scaling
  std::size_t max_size = std::size_t{64} << 20;  // largest temporary in the size scaling
  std::size_t tensor_max_d = 128;                // largest bond dimension end to end
  // --profile SECTION:STRATEGY:ROUNDS runs exactly ROUNDS untimed rounds of one strategy of the
  // round, pair or threads section (after its warm-up; threads: on one thread) and nothing else:
  // for instruction counts (callgrind, perf stat), diffed against ROUNDS = 0.
  std::string profile_section, profile_strategy;
  std::size_t profile_rounds = 0;
};

struct Context {
  Options opt;
  CsvWriter csv;
  // The round section's figures (ns per temporary) for the summary.
  Summary round_kbuf, round_floor, round_noinit, round_managed, round_bump, round_floor_extents;
  bool have_round = false;
  // Any kbuf fallback after a workload's first round, in any section: a failure.
  std::size_t late_fallbacks = 0;
  bool wants(const char* section) const {
    const std::string s = "," + opt.sections + ",";
    return s.find("," + std::string(section) + ",") != std::string::npos;
  }
};

/// The end-to-end section (bench_tensor.cpp); it prints why it is skipped when the build has no
/// tensor-network workload library.
void section_tensor(Context& c);

/// The threaded section (bench_threads.cpp): N host threads each run the round against their
/// own allocator, kbuf's pool against general-purpose allocators and pmr resources.
void section_threads(Context& c);

}  // namespace kbuf_bench

#endif  // KBUF_BENCH_COMMON_HPP
