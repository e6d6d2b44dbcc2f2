// kbuf-demo: the two-site environment network contracted with kbuf temporaries and, side by
// side, with fresh managed Views; times, temporaries, buffer figures and errors in one table.
#include <kbuf_tensor/kbuf_tensor.hpp>

#include <KokkosKernels_config.h>
#if !defined(KOKKOSKERNELS_VERSION) && defined(__has_include)
#if __has_include(<Trilinos_version.h>)
#include <Trilinos_version.h>
#endif
#endif

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

namespace {

using namespace kbuf_tensor;
using space = kbuf::default_memory_space;

constexpr double tolerance = 1e-10;     // max relative error accepted
constexpr double budget_seconds = 0.4;  // adaptive reps: timed seconds per strategy and D
constexpr std::size_t direct_check_max_bond = 16;  // nine-index loop nest up to this D

struct Options {
  std::vector<std::size_t> bonds;
  std::size_t phys = 2;
  std::size_t reps = 0;  // 0: adaptive
  bool complex = false;
  std::string csv;
};

void usage(std::FILE* out) {
  std::fprintf(out,
               "Usage: kbuf-demo [options] [--kokkos-... options]\n"
               "Contracts the two-site environment network\n"
               "  HRAA[a,s1,s2,c] = rhoL[a,a'] A1[a',t1,b] A2[b,t2,c'] rhoR[c',c] "
               "H[s1,s2,t1,t2]\n"
               "and E = conj(A1[a,s1,b]) conj(A2[b,s2,c]) HRAA[a,s1,s2,c] with temporaries from\n"
               "(1) a kbuf::BufferAllocator, (2) fresh managed Views without initialisation and\n"
               "(3) fresh managed Views with default initialisation, and compares them.\n"
               "\n"
               "Options:\n"
               "  --bond D[,D...]   bond dimensions D (repeatable; default 8,16,32,64)\n"
               "  --phys d          physical dimension d (default 2)\n"
               "  --reps N          timed contractions per strategy and D (default: adaptive,\n"
               "                    about %.1f s per strategy and D, at least 5)\n"
               "  --type T          element type: double or complex (default double)\n"
               "  --csv FILE        also write the table to FILE as CSV\n"
               "  --help            this text\n"
               "Exit status: 0 if every strategy agrees with the naive reference within %.0e\n"
               "(relative) and kbuf served every temporary from its buffer after warm-up;\n"
               "1 otherwise; 2 for bad options.\n",
               budget_seconds, tolerance);
}

[[noreturn]] void bad_option(const std::string& message) {
  std::fprintf(stderr, "kbuf-demo: %s\nRun 'kbuf-demo --help' for the options.\n", message.c_str());
  std::exit(2);
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

// Splits argv into kbuf-demo's options and Kokkos' (--kokkos-*), which go to Kokkos.
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
      std::exit(0);
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
    if (arg == "--bond") {
      const std::string list = next();
      std::size_t pos = 0;
      while (true) {
        const auto comma = list.find(',', pos);
        o.bonds.push_back(parse_positive("--bond", list.substr(pos, comma - pos), 4096));
        if (comma == std::string::npos) break;
        pos = comma + 1;
      }
    } else if (arg == "--phys") {
      o.phys = parse_positive("--phys", next(), 64);
    } else if (arg == "--reps") {
      o.reps = parse_positive("--reps", next(), 100000000);
    } else if (arg == "--type") {
      const std::string t = next();
      if (t == "double") {
        o.complex = false;
      } else if (t == "complex") {
        o.complex = true;
      } else {
        bad_option("--type: '" + t + "' is not 'double' or 'complex'");
      }
    } else if (arg == "--csv") {
      o.csv = next();
      if (o.csv.empty()) bad_option("--csv needs a file name");
    } else {
      bad_option("unknown option '" + std::string(argv[i]) + "'");
    }
  }
  if (o.bonds.empty()) o.bonds = {8, 16, 32, 64};
  return o;
}

std::string kokkos_version() {
  return kbuf::Impl::kokkos_version_string(KOKKOS_VERSION);
}

std::string kernels_version() {
#if defined(KOKKOSKERNELS_VERSION)
  char buf[48];
  std::snprintf(buf, sizeof buf, "%d.%d.%02d", KOKKOSKERNELS_VERSION / 10000,
                KOKKOSKERNELS_VERSION / 100 % 100, KOKKOSKERNELS_VERSION % 100);
  return buf;
#elif defined(TRILINOS_VERSION_STRING)
  return std::string("of Trilinos ") + TRILINOS_VERSION_STRING;
#else
  return "(version unknown)";
#endif
}

const char* gemm_backend() {
  if (std::is_same<space, Kokkos::HostSpace>::value) {
#if defined(KOKKOSKERNELS_ENABLE_TPL_BLAS)
    return "host BLAS (Kokkos Kernels TPL)";
#endif
  }
#if defined(KOKKOSKERNELS_ENABLE_TPL_CUBLAS)
  if (!std::is_same<space, Kokkos::HostSpace>::value) return "cuBLAS (Kokkos Kernels TPL)";
#endif
#if defined(KOKKOSKERNELS_ENABLE_TPL_ROCBLAS)
  if (!std::is_same<space, Kokkos::HostSpace>::value) return "rocBLAS (Kokkos Kernels TPL)";
#endif
  return "Kokkos Kernels' own kernel";
}

using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

struct Row {
  std::size_t bond, phys;
  Strategy strategy;
  std::size_t reps;
  double median_us, min_us;
  double temporaries;
  bool has_buffer;
  std::size_t capacity, hwm, fallbacks_after_warmup;
  double speedup;
  double error;
};

template <class T>
struct Runner {
  Strategy strategy;
  std::unique_ptr<kbuf::BufferAllocator<space>> alloc;
  std::unique_ptr<Temporaries<space>> tmp;
  Tensor<T, space> hraa;
  T energy{};
  std::vector<double> times;
  std::size_t calls = 0;

  Runner(Strategy s, const Network<T, space>& net) : strategy(s) {
    if (s == Strategy::kbuf) {
      alloc = std::make_unique<kbuf::BufferAllocator<space>>();  // empty: grows in the warm-up
      tmp = std::make_unique<Temporaries<space>>(*alloc);
    } else {
      tmp = std::make_unique<Temporaries<space>>(s);
    }
    hraa = make_hraa(net, std::string("HRAA ") + to_string(s));
  }

  // One contraction, timed from the first allocation to the end of the device work.
  double run(const NetworkPlan& plan, const Network<T, space>& net) {
    const auto t0 = clock_type::now();
    energy = contract_network(*tmp, plan, net, hraa);
    Kokkos::fence();
    const double t = seconds_since(t0);
    ++calls;
    return t;
  }
};

void print_row(const Row& r) {
  char cap[24] = "-", hwm[24] = "-", fb[24] = "-";
  if (r.has_buffer) {
    std::snprintf(cap, sizeof cap, "%zu", r.capacity);
    std::snprintf(hwm, sizeof hwm, "%zu", r.hwm);
    std::snprintf(fb, sizeof fb, "%zu", r.fallbacks_after_warmup);
  }
  std::printf("%5zu %3zu  %-13s %6zu %11.2f %10.2f %6.0f %12s %10s %10s %8.2fx %12.2e\n", r.bond,
              r.phys, to_string(r.strategy), r.reps, r.median_us, r.min_us, r.temporaries, cap, hwm,
              fb, r.speedup, r.error);
  std::fflush(stdout);
}

template <class T>
int run(const Options& o) {
  std::ofstream csv;
  if (!o.csv.empty()) {  // fail before the work, not after it
    csv.open(o.csv);
    if (!csv) {
      std::fprintf(stderr, "kbuf-demo: cannot write '%s'\n", o.csv.c_str());
      return 1;
    }
  }
  std::printf("kbuf-demo: kbuf %d.%d.%d | Kokkos %s | Kokkos Kernels %s, GEMM by %s\n",
              KBUF_VERSION_MAJOR, KBUF_VERSION_MINOR, KBUF_VERSION_PATCH, kokkos_version().c_str(),
              kernels_version().c_str(), gemm_backend());
  std::printf("execution space %s | memory space %s | element type %s | d = %zu\n",
              kbuf::default_execution_space::name(), space::name(), type_name<T>(), o.phys);
  std::printf(
      "network: HRAA[a,s1,s2,c] = rhoL[a,a'] A1[a',t1,b] A2[b,t2,c'] rhoR[c',c] H[s1,s2,t1,t2];\n"
      "         E = conj(A1[a,s1,b]) conj(A2[b,s2,c]) HRAA[a,s1,s2,c]\n"
      "order:   X1 = rhoL A1, X2 = A2 rhoR, X3 = X1 X2, HRAA = X3 H (2 permutes),\n"
      "         Psi = A1 A2, E = conj(Psi).HRAA; 2D^3d + 2D^3d^2 + D^2d^4 + D^2d^2 multiply-adds\n"
      "time:    median (and min) per contraction of HRAA and E, fenced; strategies interleaved\n"
      "         after 5 warm-up contractions each; speed-up = median of View(init) / median;\n"
      "         the six contractions are planned once per D (not timed), as @tensor does\n"
      "error:   max normwise relative error of HRAA and of E from the last timed contraction\n"
      "         against plain host loops in the same pairwise order (no GEMM, no permutes,\n"
      "         no kbuf), and for D <= %zu also against one nine-index loop nest\n\n",
      direct_check_max_bond);
  std::printf("%5s %3s  %-13s %6s %11s %10s %6s %12s %10s %10s %9s %12s\n", "D", "d", "strategy",
              "reps", "median[us]", "min[us]", "temps", "capacity[B]", "hwm[B]", "fallbacks",
              "speed-up", "max rel err");

  std::vector<Row> rows;
  bool ok = true;
  const Strategy strategies[] = {Strategy::kbuf, Strategy::fresh_views,
                                 Strategy::fresh_views_initialized};
  for (std::size_t bond : o.bonds) {
    const auto host = random_host_network<T>(bond, o.phys, 2024);
    const auto net = to_device<T, space>(host);
    const NetworkPlan plan = plan_network<T>(bond, o.phys);
    const HostTensor<T> ref = reference_hraa(host);
    const T ref_energy = reference_expectation_value(host, ref);
    const bool direct = bond <= direct_check_max_bond;
    const HostTensor<T> ref_direct = direct ? reference_hraa_direct(host) : HostTensor<T>();
    const T ref_direct_energy = direct ? reference_expectation_value(host, ref_direct) : T(0);

    std::vector<std::unique_ptr<Runner<T>>> runners;
    for (Strategy s : strategies) runners.push_back(std::make_unique<Runner<T>>(s, net));

    // Warm-up: two contractions each (the first grows kbuf's buffer), then three to size reps.
    double probe = 0;
    for (auto& r : runners) {
      r->run(plan, net);
      r->run(plan, net);
      double fastest = r->run(plan, net);
      for (int i = 0; i < 2; ++i) fastest = std::min(fastest, r->run(plan, net));
      probe = std::max(probe, fastest);
    }
    kbuf::BufferAllocator<space>& alloc = *runners[0]->alloc;
    const auto warm = alloc.statistics();
    const std::size_t warm_hwm = alloc.high_water_mark();
    const std::size_t warm_calls = runners[0]->calls;
    const std::size_t warm_count = runners[0]->tmp->count();

    std::size_t reps = o.reps;
    if (reps == 0) {
      reps = static_cast<std::size_t>(budget_seconds / std::max(probe, 1e-7));
      reps = std::min<std::size_t>(std::max<std::size_t>(reps, 5), 20000);
    }
    bool steady = true;
    for (std::size_t i = 0; i < reps; ++i) {
      for (auto& r : runners) r->times.push_back(r->run(plan, net));
      steady = steady && alloc.empty() && alloc.high_water_mark() == warm_hwm;
    }
    const std::size_t fallbacks_after = alloc.statistics().fallbacks - warm.fallbacks;
    const double per_contraction = static_cast<double>(runners[0]->tmp->count() - warm_count) /
                                   static_cast<double>(runners[0]->calls - warm_calls);
    if (!steady || fallbacks_after != 0 || alloc.statistics().regrows != warm.regrows) {
      std::fprintf(stderr,
                   "kbuf-demo: D = %zu: kbuf did not reach its steady state after warm-up "
                   "(empty after each contraction: %s, high-water mark %zu -> %zu, fallbacks +%zu, "
                   "regrows +%zu)\n",
                   bond, steady ? "yes" : "no", warm_hwm, alloc.high_water_mark(), fallbacks_after,
                   alloc.statistics().regrows - warm.regrows);
      ok = false;
    }

    const double base = median(runners.back()->times);
    for (auto& r : runners) {
      const HostTensor<T> got = to_host(r->hraa);
      double err = std::max(relative_error(got, ref), relative_error(r->energy, ref_energy));
      if (direct) {
        err = std::max(
            {err, relative_error(got, ref_direct), relative_error(r->energy, ref_direct_energy)});
      }
      if (!(err <= tolerance)) {
        std::fprintf(stderr, "kbuf-demo: D = %zu, %s: relative error %.3e exceeds %.0e\n", bond,
                     to_string(r->strategy), err, tolerance);
        ok = false;
      }
      Row row{};
      row.bond = bond;
      row.phys = o.phys;
      row.strategy = r->strategy;
      row.reps = r->times.size();
      row.median_us = 1e6 * median(r->times);
      row.min_us = 1e6 * *std::min_element(r->times.begin(), r->times.end());
      row.temporaries = static_cast<double>(r->tmp->count()) / static_cast<double>(r->calls);
      if (r->strategy == Strategy::kbuf) {
        row.temporaries = per_contraction;
        row.has_buffer = true;
        row.capacity = alloc.capacity();
        row.hwm = alloc.high_water_mark();
        row.fallbacks_after_warmup = fallbacks_after;
      }
      row.speedup = base / median(r->times);
      row.error = err;
      print_row(row);
      rows.push_back(row);
    }
  }

  if (csv.is_open()) {
    csv << "D,d,type,strategy,reps,median_us,min_us,temporaries,capacity_bytes,hwm_bytes,"
           "fallbacks_after_warmup,speedup_vs_view_init,max_rel_err\n";
    for (const Row& r : rows) {
      csv << r.bond << ',' << r.phys << ',' << type_name<T>() << ',' << to_string(r.strategy) << ','
          << r.reps << ',' << r.median_us << ',' << r.min_us << ',' << r.temporaries << ',';
      if (r.has_buffer) {
        csv << r.capacity << ',' << r.hwm << ',' << r.fallbacks_after_warmup;
      } else {
        csv << ",,";
      }
      csv << ',' << r.speedup << ',' << r.error << '\n';
    }
    csv.flush();
    if (!csv) {
      std::fprintf(stderr, "kbuf-demo: writing '%s' failed\n", o.csv.c_str());
      return 1;
    }
  }
  std::printf("\n%s\n", ok ? "OK: every strategy agrees with the reference; kbuf served every "
                             "temporary from its buffer after warm-up"
                           : "FAILED (see the messages above)");
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<char*> kokkos_args;
  const Options options = parse(argc, argv, kokkos_args);
  int kargc = static_cast<int>(kokkos_args.size());
  kokkos_args.push_back(nullptr);
  Kokkos::ScopeGuard guard(kargc, kokkos_args.data());
  try {
    return options.complex ? run<Kokkos::complex<double>>(options) : run<double>(options);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kbuf-demo: %s\n", e.what());
    return 1;
  }
}
