// kbuf-demo: the two-site environment network contracted with kbuf temporaries and, side by
// side, with fresh managed Views; times, temporaries, buffer figures and errors in one table.
#include <kbuf/impl/kokkos_version.hpp>  // the version printed beside the results
#include <kbuf_cli/cli.hpp>              // options, exit statuses (shared with kbuf-tebd)
#include <kbuf_tensor/kbuf_tensor.hpp>

#include <KokkosKernels_config.h>
#if !defined(KOKKOSKERNELS_VERSION) && defined(__has_include)
#if __has_include(<Trilinos_version.h>)
#include <Trilinos_version.h>
#endif
#endif

#include <kbuf_timing/allocations.hpp>  // the allocation counter, shared with kbuf-tebd
#include <kbuf_timing/harness.hpp>      // the timing harness kbuf-bench uses too

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <memory>
#include <new>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

namespace {

using namespace kbuf_tensor;
using space = kbuf_tensor::default_memory_space;
using exec_space = space::execution_space;
using pool_type = kbuf::AllocatorPool<space>;

constexpr double tolerance = 1e-10;     // max relative error accepted
constexpr double budget_seconds = 0.4;  // adaptive reps: timed seconds per strategy and D
constexpr std::size_t direct_check_max_bond = 16;  // nine-index loop nest up to this D

// Exit status (documented in --help): 1 a strategy disagrees with the reference, or kbuf needed
// fallbacks after warm-up; 3 the sizes need more memory than there is.
using namespace kbuf_cli;

struct Options {
  std::vector<std::size_t> bonds;
  std::size_t phys = 2;
  std::size_t reps = 0;  // 0: adaptive
  bool complex = false;
  std::string csv;
  std::size_t threads = 0;  // 0: the single-thread table; N: throughput on 1..N threads
  std::vector<TemporaryPolicy> strategies{TemporaryPolicy::kbuf, TemporaryPolicy::fresh_views,
                                          TemporaryPolicy::fresh_views_initialized};
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
               "  --strategy S      run only one strategy: kbuf, view-noinit (fresh Views\n"
               "                    without initialisation) or view-init (with); all\n"
               "                    (default) runs the three interleaved. The speed-up\n"
               "                    column needs view-init\n"
               "  --threads N       instead of the table: contract independent networks on\n"
               "                    1, 2, ..., N host threads at once (each thread its own\n"
               "                    network, its own execution space instance from\n"
               "                    partition_space on Kokkos >= 4.2 where the backend can\n"
               "                    split, and its own allocator from that instance's\n"
               "                    kbuf::AllocatorPool) and print contractions per second for\n"
               "                    every strategy. Kokkos < 3.5 with the Serial backend runs\n"
               "                    one thread whatever N is (it says so): its kernels share\n"
               "                    one scratch buffer without a lock, so kernels dispatched\n"
               "                    from several threads at once race\n"
               "  --help            this text\n"
               "Before allocating, kbuf-demo says what the chosen sizes need and refuses sizes\n"
               "that cannot fit in this machine's available memory.\n"
               "Exit status:\n"
               "  0  every strategy agrees with the naive reference within %.0e (relative) and\n"
               "     kbuf served every temporary from its buffer after warm-up\n"
               "  1  a strategy disagrees with the reference, or kbuf needed fallbacks after\n"
               "     warm-up\n"
               "  2  a bad option\n"
               "  3  out of memory: the sizes need more than there is (said before allocating),\n"
               "     or an allocation failed\n"
               "  4  any other error (e.g. the CSV file cannot be written)\n",
               budget_seconds, tolerance);
}

// kbuf-demo's options (Kokkos' --kokkos-* go to Kokkos).
Options parse(const kbuf_cli::Arguments& args) {
  Options o;
  args.each([&](const std::string& arg, const auto& next) {
    if (arg == "--bond") {
      for (const std::string& item : kbuf_cli::split_list("--bond", next())) {
        o.bonds.push_back(parse_positive("--bond", item, 4096));
      }
    } else if (arg == "--phys") {
      o.phys = parse_positive("--phys", next(), 64);
    } else if (arg == "--reps") {
      o.reps = parse_positive("--reps", next(), 100000000);
    } else if (arg == "--type") {
      o.complex = parse_choice("--type", next(), {"double", "complex"}) == 1;
    } else if (arg == "--threads") {
      o.threads = parse_positive("--threads", next(), 256);
    } else if (arg == "--csv") {
      o.csv = parse_file_name("--csv", next());
    } else if (arg == "--strategy") {
      o.strategies = kbuf_tensor::strategies_named(
          parse_choice("--strategy", next(), kbuf_tensor::strategy_names()));
    } else {
      kbuf_cli::Arguments::unknown(arg);
    }
  });
  if (o.bonds.empty())
    o.bonds =
        o.threads != 0 ? std::vector<std::size_t>{16, 32} : std::vector<std::size_t>{8, 16, 32, 64};
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

using kbuf_timing::clock_type;
using kbuf_timing::seconds_since;

double median(std::vector<double> v) {
  return kbuf_timing::summarize(std::move(v)).median;
}

struct Row {
  std::size_t bond, phys;
  TemporaryPolicy strategy;
  std::size_t reps;
  double median_us, min_us;
  double temporaries;
  double allocations;  // in the memory space per contraction, after warm-up
  bool has_buffer;
  std::size_t capacity, hwm, fallbacks_after_warmup;
  double speedup;  // NaN without View(init) in the run
  double error;
};

template <class T>
struct Runner {
  TemporaryPolicy strategy;
  std::unique_ptr<kbuf::BufferAllocator<space>> alloc;
  std::unique_ptr<Temporaries<space>> tmp;
  Tensor<T, space> hraa;
  T energy{};
  std::vector<double> times;
  std::size_t calls = 0;
  std::size_t allocations = 0;  // in the memory space, over every contraction (a counter's)

  Runner(TemporaryPolicy s, const Network<T, space>& net) : strategy(s) {
    if (s == TemporaryPolicy::kbuf) {
      alloc = std::make_unique<kbuf::BufferAllocator<space>>();  // empty: grows in the warm-up
      tmp = std::make_unique<Temporaries<space>>(*alloc);
    } else {
      tmp = std::make_unique<Temporaries<space>>(s);
    }
    hraa = make_hraa(net, std::string("HRAA ") + to_string(s));
  }

  // One contraction, timed from the first allocation to the end of the device work.
  double run(const NetworkPlan& plan, const Network<T, space>& net) {
    const std::size_t a0 = kbuf_timing::AllocationCounter::now().allocations;
    const auto t0 = clock_type::now();
    energy = contract_network(*tmp, plan, net, hraa);
    Kokkos::fence();
    const double t = seconds_since(t0);
    allocations += kbuf_timing::AllocationCounter::now().allocations - a0;
    ++calls;
    return t;
  }
};

void print_row(const Row& r) {
  char cap[24] = "-", hwm[24] = "-", fb[24] = "-", speedup[24] = "-";
  if (r.has_buffer) {
    std::snprintf(cap, sizeof cap, "%zu", r.capacity);
    std::snprintf(hwm, sizeof hwm, "%zu", r.hwm);
    std::snprintf(fb, sizeof fb, "%zu", r.fallbacks_after_warmup);
  }
  if (!std::isnan(r.speedup)) std::snprintf(speedup, sizeof speedup, "%8.2fx", r.speedup);
  std::printf("%5zu %3zu  %-13s %6zu %11.2f %10.2f %6.0f %7.0f %12s %10s %10s %9s %12.2e\n", r.bond,
              r.phys, to_string(r.strategy), r.reps, r.median_us, r.min_us, r.temporaries,
              r.allocations, cap, hwm, fb, speedup, r.error);
  std::fflush(stdout);
}

// ---- What the sizes need -------------------------------------------------------------------

std::string gib(double bytes) {
  char buf[32];
  if (bytes >= 1024.0 * 1024 * 1024) {
    std::snprintf(buf, sizeof buf, "%.1f GiB", bytes / (1024.0 * 1024 * 1024));
  } else {
    std::snprintf(buf, sizeof buf, "%.1f MiB", bytes / (1024.0 * 1024));
  }
  return buf;
}

// Bytes of memory the host can still hand out (MemAvailable), else its physical memory; 0 if
// unknown.
double available_bytes() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  double kib = 0;
  std::string unit;
  while (meminfo >> key >> kib >> unit) {
    if (key == "MemAvailable:") return kib * 1024.0;
  }
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<double>(pages) * static_cast<double>(page) : 0.0;
}

struct Need {
  double big;      // one D x d x d x D tensor (HRAA and the largest intermediates)
  double network;  // rhoL, A1, A2, rhoR, H
  double total;
};

// An estimate, on the high side, of the memory a run holds at its peak: per network (one, or
// one per thread) the host network and its device copy, the reference (its result and two
// intermediates of HRAA's size), every strategy's HRAA, a copy back to the host, and about four
// HRAA-sized temporaries per contraction (kbuf keeps them in its buffer; with managed Views
// they come and go). Computed in floating point: the sizes the options allow overflow no
// 64-bit count, but their products may.
Need memory_need(std::size_t bond, std::size_t phys, std::size_t elem, std::size_t networks) {
  const double D = static_cast<double>(bond), d = static_cast<double>(phys);
  const double e = static_cast<double>(elem);
  Need n;
  n.big = e * D * D * d * d;
  n.network = e * (2 * D * D + 2 * D * D * d + d * d * d * d);
  const double per_network = 2 * n.network + 3 * n.big + 3 * n.big + n.big + 4 * n.big +
                             4 * n.big;  // reference, HRAAs, host copy, temporaries, kbuf buffer
  n.total = per_network * static_cast<double>(networks);
  return n;
}

// Says what the chosen sizes need; false (after a message naming the sizes and the bytes) if
// they cannot fit.
template <class T>
bool check_memory(const Options& o) {
  const double available = available_bytes();
  const std::size_t networks = o.threads != 0 ? o.threads : 1;
  bool fits = true;
  for (std::size_t bond : o.bonds) {
    const Need n = memory_need(bond, o.phys, sizeof(T), networks);
    std::printf(
        "memory:  D = %zu, d = %zu, %s: about %s (%s per D*d*d*D tensor, %s per "
        "network, %zu network%s)%s%s\n",
        bond, o.phys, type_name<T>(), gib(n.total).c_str(), gib(n.big).c_str(),
        gib(n.network).c_str(), networks, networks == 1 ? "" : "s", available > 0 ? " of " : "",
        available > 0 ? (gib(available) + " available").c_str() : "");
    if (available > 0 && n.total > available) {
      std::fprintf(stderr,
                   "kbuf-demo: D = %zu, d = %zu (%s%s) needs about %.0f bytes (%s): one D*d*d*D "
                   "tensor alone is %.0f bytes (%s), but only %.0f bytes (%s) are available. "
                   "Choose a smaller --bond or --phys%s.\n",
                   bond, o.phys, type_name<T>(),
                   o.threads != 0 ? (", " + std::to_string(o.threads) + " threads").c_str() : "",
                   n.total, gib(n.total).c_str(), n.big, gib(n.big).c_str(), available,
                   gib(available).c_str(), o.threads > 1 ? " or fewer --threads" : "");
      fits = false;
    }
  }
  std::printf("\n");
  std::fflush(stdout);
  return fits;
}

// ---- Throughput on several host threads ----------------------------------------------------

// One strategy on `nthreads` threads at once, each contracting its own network `reps` times
// after a warm-up: contractions per second of wall time, and whether every result agreed.
struct ThreadRun {
  double per_second = 0;
  double max_error = 0;
  std::size_t fallbacks_after_warmup = 0;
  std::string error;
};

template <class T>
struct ThreadData {
  HostNetwork<T> host;
  Network<T, space> net;
  HostTensor<T> ref;
  T ref_energy{};
};

template <class T>
ThreadRun run_threads_once(TemporaryPolicy policy, std::size_t nthreads, std::size_t reps,
                           const NetworkPlan& plan, std::vector<ThreadData<T>>& data,
                           const std::vector<exec_space>& instances,
                           const std::vector<std::unique_ptr<pool_type>>& pools) {
  ThreadRun result;
  std::atomic<std::size_t> ready{0};
  std::atomic<bool> go{false};
  std::vector<double> errors(nthreads, 0.0);
  std::vector<std::size_t> fallbacks(nthreads, 0);
  std::vector<std::string> failures(nthreads);
  clock_type::time_point start;
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < nthreads; ++t) {
    threads.emplace_back([&, t] {
      try {
        const ThreadData<T>& d = data[t];
        const exec_space& exec = instances[t];
        kbuf::BufferAllocator<space>* alloc = nullptr;
        std::unique_ptr<Temporaries<space>> tmp;
        if (policy == TemporaryPolicy::kbuf) {
          alloc = &pools[t % pools.size()]->local();  // bound to `exec`
          tmp = std::make_unique<Temporaries<space>>(*alloc);
        } else {
          tmp = std::make_unique<Temporaries<space>>(policy, exec);
        }
        Tensor<T, space> hraa = make_hraa(d.net, "HRAA");
        T energy{};
        for (int i = 0; i < 3; ++i) energy = contract_network(*tmp, plan, d.net, hraa);  // warm-up
        exec.fence();
        const std::size_t warm_fallbacks = alloc ? alloc->statistics().fallbacks : 0;
        ready.fetch_add(1);
        while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
        for (std::size_t i = 0; i < reps; ++i) {
          energy = contract_network(*tmp, plan, d.net, hraa);
          exec.fence();  // this thread's instance only, as a thread of an application would
        }
        if (alloc) fallbacks[t] = alloc->statistics().fallbacks - warm_fallbacks;
        ready.fetch_add(1);  // done
        const HostTensor<T> got = to_host(hraa);
        errors[t] = std::max(relative_error(got, d.ref), relative_error(energy, d.ref_energy));
      } catch (const std::exception& e) {
        failures[t] = e.what();
        ready.fetch_add(1);
        ready.fetch_add(1);
      }
    });
  }
  while (ready.load() < nthreads) std::this_thread::yield();
  start = clock_type::now();
  go.store(true, std::memory_order_release);
  while (ready.load() < 2 * nthreads) std::this_thread::yield();
  const double seconds = seconds_since(start);
  for (auto& th : threads) th.join();
  for (std::size_t t = 0; t < nthreads; ++t) {
    if (!failures[t].empty() && result.error.empty()) result.error = failures[t];
    result.max_error = std::max(result.max_error, errors[t]);
    result.fallbacks_after_warmup += fallbacks[t];
  }
  result.per_second = static_cast<double>(nthreads * reps) / seconds;
  return result;
}

constexpr bool serial_kernels_race = kbuf_tensor::serial_kernels_race<exec_space>;

template <class T>
int run_threads(Options o) {
  if (serial_kernels_race && o.threads > 1) {
    std::printf(
        "kbuf-demo: --threads %zu: Kokkos %s's Serial backend shares one scratch buffer\n"
        "           between all kernels without a lock (fixed in Kokkos 3.5), so kernels\n"
        "           dispatched from several host threads at once race: running 1 thread.\n\n",
        o.threads, kokkos_version().c_str());
    o.threads = 1;
  }
  std::printf(
      "threads: contractions of HRAA and E per second of wall time, %zu host thread%s at "
      "most;\n"
      "         every thread contracts its own network (own data, own HRAA) on its own\n"
      "         execution space instance where Kokkos makes them (instances: partition =\n"
      "         Kokkos::Experimental::partition_space(%s(), 1, ..., 1); default = the\n"
      "         default instance for every thread) and takes its temporaries from its own\n"
      "         allocator out of its instance's kbuf::AllocatorPool (kbuf) or from fresh\n"
      "         managed Views allocated on its instance; after 3 warm-up contractions\n"
      "         each, the threads start together and each fences its own instance after\n"
      "         every contraction; best of 3 interleaved runs of reps contractions per\n"
      "         thread. scaling = contractions/s over the same strategy's on one\n"
      "         thread; speed-up = over View(init) at the same thread count.\n"
      "         host concurrency: %d (Kokkos %s), hardware threads: %u\n\n",
      o.threads, o.threads == 1 ? "" : "s", exec_space::name(),
      kbuf::default_execution_space().concurrency(), kbuf::default_execution_space::name(),
      std::thread::hardware_concurrency());
  std::printf("%5s %3s %7s %-9s  %-13s %6s %14s %8s %9s %10s %12s\n", "D", "d", "threads",
              "instances", "strategy", "reps", "contractions/s", "scaling", "speed-up", "fallbacks",
              "max rel err");
  bool ok = true;
  const std::vector<TemporaryPolicy>& policies = o.strategies;
  const std::size_t npolicies = policies.size();
  // View(init)'s index, the speed-ups' base (npolicies if it does not run).
  const std::size_t init_index = static_cast<std::size_t>(
      std::find(policies.begin(), policies.end(), TemporaryPolicy::fresh_views_initialized) -
      policies.begin());
  for (std::size_t bond : o.bonds) {
    std::vector<ThreadData<T>> data(o.threads);
    for (std::size_t t = 0; t < o.threads; ++t) {
      data[t].host = random_host_network<T>(bond, o.phys, 2024 + t);
      data[t].net = to_device<T, space>(data[t].host);
      data[t].ref = reference_hraa(data[t].host);
      data[t].ref_energy = reference_expectation_value(data[t].host, data[t].ref);
    }
    const NetworkPlan plan = plan_network<T>(bond, o.phys);
    std::size_t allocators = 0;

    std::size_t reps = o.reps;
    if (reps == 0) {  // size from one thread's contractions of the first strategy
      bool partitioned = false;
      const std::vector<exec_space> one = kbuf_tensor::thread_instances<exec_space>(1, partitioned);
      std::vector<std::unique_ptr<pool_type>> pools;
      pools.push_back(std::make_unique<pool_type>(one[0]));
      const ThreadRun probe = run_threads_once<T>(policies[0], 1, 3, plan, data, one, pools);
      reps = static_cast<std::size_t>(budget_seconds * probe.per_second);
      reps = std::min<std::size_t>(std::max<std::size_t>(reps, 5), 20000);
    }
    std::vector<double> one_thread(npolicies, 0.0);
    for (std::size_t n = 1; n <= o.threads; ++n) {
      bool partitioned = false;
      const std::vector<exec_space> instances =
          kbuf_tensor::thread_instances<exec_space>(n, partitioned);
      // One pool per instance (one for all threads on the default instance): each thread
      // takes its allocator, bound to its instance, from its instance's pool; the runs below
      // reuse the allocators of the previous runs' exited threads.
      std::vector<std::unique_ptr<pool_type>> pools;
      for (std::size_t i = 0; i < (partitioned ? n : 1); ++i) {
        pools.push_back(std::make_unique<pool_type>(instances[i]));
      }
      // Best of three interleaved runs: on a shared machine the least disturbed one.
      std::vector<ThreadRun> runs(npolicies);
      for (int k = 0; k < 3; ++k) {
        for (std::size_t s = 0; s < npolicies; ++s) {
          ThreadRun r = run_threads_once<T>(policies[s], n, reps, plan, data, instances, pools);
          if (!r.error.empty() || !(r.max_error <= tolerance) || r.fallbacks_after_warmup != 0) {
            runs[s] = r;  // keep a failure visible
            runs[s].per_second = 0;
          } else if (r.per_second > runs[s].per_second && runs[s].error.empty()) {
            r.max_error = std::max(r.max_error, runs[s].max_error);
            runs[s] = r;
          }
        }
      }
      for (std::size_t s = 0; s < npolicies; ++s) {
        if (n == 1) one_thread[s] = runs[s].per_second;
      }
      for (std::size_t s = 0; s < npolicies; ++s) {
        const ThreadRun& r = runs[s];
        if (!r.error.empty()) {
          std::fprintf(stderr, "kbuf-demo: D = %zu, %zu threads, %s: %s\n", bond, n,
                       to_string(policies[s]), r.error.c_str());
          ok = false;
        }
        if (!(r.max_error <= tolerance)) {
          std::fprintf(stderr,
                       "kbuf-demo: D = %zu, %zu threads, %s: relative error %.3e exceeds "
                       "%.0e\n",
                       bond, n, to_string(policies[s]), r.max_error, tolerance);
          ok = false;
        }
        char fb[24] = "-";
        if (policies[s] == TemporaryPolicy::kbuf) {
          std::snprintf(fb, sizeof fb, "%zu", r.fallbacks_after_warmup);
          if (r.fallbacks_after_warmup != 0) {
            std::fprintf(stderr,
                         "kbuf-demo: D = %zu, %zu threads: kbuf needed %zu fallbacks "
                         "after warm-up\n",
                         bond, n, r.fallbacks_after_warmup);
            ok = false;
          }
        }
        char speedup[24] = "-";
        if (init_index < npolicies) {
          std::snprintf(speedup, sizeof speedup, "%8.2fx",
                        r.per_second / runs[init_index].per_second);
        }
        std::printf("%5zu %3zu %7zu %-9s  %-13s %6zu %14.1f %7.2fx %9s %10s %12.2e\n", bond, o.phys,
                    n, partitioned ? "partition" : "default", to_string(policies[s]), reps,
                    r.per_second, r.per_second / one_thread[s], speedup, fb, r.max_error);
        std::fflush(stdout);
      }
      for (const auto& pool : pools) allocators += pool->size();
    }
    std::printf(
        "%5zu %3zu  pools: %zu allocators made in all for the runs on 1..%zu threads (exited "
        "threads' "
        "allocators reused)\n",
        bond, o.phys, allocators, o.threads);
  }
  const bool with_kbuf =
      std::find(policies.begin(), policies.end(), TemporaryPolicy::kbuf) != policies.end();
  std::printf("\n%s\n", !ok ? "FAILED (see the messages above)"
                        : with_kbuf
                            ? "OK: every strategy on every thread agrees with the reference; kbuf "
                              "served every temporary from its buffer after warm-up"
                            : "OK: every strategy on every thread agrees with the reference");
  return ok ? exit_ok : exit_wrong_result;
}

template <class T>
int run(const Options& o) {
  std::ofstream csv;
  if (!o.csv.empty()) {  // fail before the work, not after it
    csv.open(o.csv);
    if (!csv) {
      std::fprintf(stderr, "kbuf-demo: cannot write '%s'\n", o.csv.c_str());
      return exit_other_error;
    }
  }
  std::printf("kbuf-demo: kbuf %d.%d.%d | Kokkos %s | Kokkos Kernels %s, GEMM by %s\n",
              KBUF_VERSION_MAJOR, KBUF_VERSION_MINOR, KBUF_VERSION_PATCH, kokkos_version().c_str(),
              kernels_version().c_str(), gemm_backend());
  std::printf("execution space %s | memory space %s | element type %s | d = %zu\n",
              exec_space::name(), space::name(), type_name<T>(), o.phys);
  std::printf(
      "network: HRAA[a,s1,s2,c] = rhoL[a,a'] A1[a',t1,b] A2[b,t2,c'] rhoR[c',c] H[s1,s2,t1,t2];\n"
      "         E = conj(A1[a,s1,b]) conj(A2[b,s2,c]) HRAA[a,s1,s2,c]\n"
      "order:   X1 = rhoL A1, X2 = A2 rhoR, X3 = X1 X2, HRAA = X3 H (2 permutes),\n"
      "         Psi = A1 A2, E = conj(Psi).HRAA; 2D^3d + 2D^3d^2 + D^2d^4 + D^2d^2 multiply-adds\n"
      "time:    median (and min) per contraction of HRAA and E, fenced; strategies interleaved\n"
      "         after 5 warm-up contractions each; speed-up = median of View(init) / median;\n"
      "         the six contractions are planned once per D (not timed), as @tensor does\n"
      "allocs:  memory allocations in the memory space per timed contraction (Kokkos Tools'\n"
      "         allocation callbacks, chained to any tool loaded); kbuf's are 0 after warm-up\n"
      "error:   max normwise relative error of HRAA and of E from the last timed contraction\n"
      "         against plain host loops in the same pairwise order (no GEMM, no permutes,\n"
      "         no kbuf), and for D <= %zu also against one nine-index loop nest\n\n",
      direct_check_max_bond);
  if (!check_memory<T>(o)) return exit_out_of_memory;
  if (o.threads != 0) return run_threads<T>(o);
  std::printf("%5s %3s  %-13s %6s %11s %10s %6s %7s %12s %10s %10s %9s %12s\n", "D", "d",
              "strategy", "reps", "median[us]", "min[us]", "temps", "allocs", "capacity[B]",
              "hwm[B]", "fallbacks", "speed-up", "max rel err");

  std::vector<Row> rows;
  std::ostringstream kbuf_stats;  // one line of the allocator's counters per D, printed at the end
  bool ok = true;
  const std::vector<TemporaryPolicy>& strategies = o.strategies;
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
    for (TemporaryPolicy s : strategies) runners.push_back(std::make_unique<Runner<T>>(s, net));
    // After the allocators: one made while a Kokkos tool is loaded reports every temporary
    // to it, off its hot path (kbuf_timing/allocations.hpp).
    const kbuf_timing::AllocationCounter counter(space::name());

    // Warm-up: two contractions each (the first grows kbuf's buffer), then three to size reps.
    double probe = 0;
    for (auto& r : runners) {
      r->run(plan, net);
      r->run(plan, net);
      double fastest = r->run(plan, net);
      for (int i = 0; i < 2; ++i) fastest = std::min(fastest, r->run(plan, net));
      probe = std::max(probe, fastest);
    }
    // kbuf's runner, if it runs, and View(init)'s, the speed-ups' base.
    Runner<T>* kbuf_runner = nullptr;
    Runner<T>* init_runner = nullptr;
    for (auto& r : runners) {
      if (r->strategy == TemporaryPolicy::kbuf) kbuf_runner = r.get();
      if (r->strategy == TemporaryPolicy::fresh_views_initialized) init_runner = r.get();
    }
    kbuf::BufferAllocator<space>* alloc = kbuf_runner ? kbuf_runner->alloc.get() : nullptr;
    const kbuf::Statistics warm = alloc ? alloc->statistics() : kbuf::Statistics();
    const std::size_t warm_hwm = alloc ? alloc->high_water_mark() : 0;
    const std::size_t warm_calls = kbuf_runner ? kbuf_runner->calls : 0;
    const std::size_t warm_count = kbuf_runner ? kbuf_runner->tmp->count() : 0;
    std::vector<std::size_t> warm_allocations;
    for (auto& r : runners) warm_allocations.push_back(r->allocations);

    std::size_t reps = o.reps;
    if (reps == 0) {
      reps = static_cast<std::size_t>(budget_seconds / std::max(probe, 1e-7));
      reps = std::min<std::size_t>(std::max<std::size_t>(reps, 5), 20000);
    }
    bool steady = true;
    for (std::size_t i = 0; i < reps; ++i) {
      for (auto& r : runners) r->times.push_back(r->run(plan, net));
      steady = steady && (!alloc || (alloc->empty() && alloc->high_water_mark() == warm_hwm));
    }
    const std::size_t fallbacks_after = alloc ? alloc->statistics().fallbacks - warm.fallbacks : 0;
    const double per_contraction =
        kbuf_runner ? static_cast<double>(kbuf_runner->tmp->count() - warm_count) /
                          static_cast<double>(kbuf_runner->calls - warm_calls)
                    : 0.0;
    if (alloc && (!steady || fallbacks_after != 0 || alloc->statistics().regrows != warm.regrows)) {
      std::fprintf(stderr,
                   "kbuf-demo: D = %zu: kbuf did not reach its steady state after warm-up "
                   "(empty after each contraction: %s, high-water mark %zu -> %zu, fallbacks +%zu, "
                   "regrows +%zu)\n",
                   bond, steady ? "yes" : "no", warm_hwm, alloc->high_water_mark(), fallbacks_after,
                   alloc->statistics().regrows - warm.regrows);
      ok = false;
    }
    if (alloc) kbuf_stats << "kbuf statistics, D = " << bond << ": " << alloc->statistics() << '\n';

    const double base = init_runner ? median(init_runner->times) : std::nan("");
    for (std::size_t ri = 0; ri < runners.size(); ++ri) {
      auto& r = runners[ri];
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
      row.allocations = static_cast<double>(r->allocations - warm_allocations[ri]) /
                        static_cast<double>(r->times.size());
      if (r->strategy == TemporaryPolicy::kbuf) {
        row.temporaries = per_contraction;
        row.has_buffer = true;
        row.capacity = alloc->capacity();
        row.hwm = alloc->high_water_mark();
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
           "fallbacks_after_warmup,speedup_vs_view_init,max_rel_err,allocations\n";
    for (const Row& r : rows) {
      csv << r.bond << ',' << r.phys << ',' << type_name<T>() << ',' << to_string(r.strategy) << ','
          << r.reps << ',' << r.median_us << ',' << r.min_us << ',' << r.temporaries << ',';
      if (r.has_buffer) {
        csv << r.capacity << ',' << r.hwm << ',' << r.fallbacks_after_warmup;
      } else {
        csv << ",,";
      }
      csv << ',';
      if (!std::isnan(r.speedup)) csv << r.speedup;
      csv << ',' << r.error << ',' << r.allocations << '\n';
    }
    csv.flush();
    if (!csv) {
      std::fprintf(stderr, "kbuf-demo: writing '%s' failed\n", o.csv.c_str());
      return exit_other_error;
    }
  }
  if (!kbuf_stats.str().empty()) std::printf("\n%s", kbuf_stats.str().c_str());
  const bool with_kbuf = std::find(o.strategies.begin(), o.strategies.end(),
                                   TemporaryPolicy::kbuf) != o.strategies.end();
  std::printf("\n%s\n", !ok         ? "FAILED (see the messages above)"
                        : with_kbuf ? "OK: every strategy agrees with the reference; kbuf served "
                                      "every temporary from its buffer after warm-up"
                                    : "OK: every strategy agrees with the reference");
  return ok ? exit_ok : exit_wrong_result;
}

}  // namespace

int main(int argc, char** argv) {
  kbuf_cli::Arguments args(argc, argv);
  if (args.help()) {
    usage(stdout);
    return exit_ok;
  }
  Options options;
  try {
    options = parse(args);
  } catch (const kbuf_cli::BadOption& e) {
    kbuf_cli::report_bad_option("kbuf-demo", e.what());
    return exit_bad_option;
  }
  return kbuf_cli::run_under_kokkos("kbuf-demo", args, [&] {
    try {
      return options.complex ? run<Kokkos::complex<double>>(options) : run<double>(options);
    } catch (const std::bad_alloc& e) {  // kbuf::out_of_memory among them
      std::string bonds;
      for (std::size_t b : options.bonds) bonds += (bonds.empty() ? "" : ",") + std::to_string(b);
      std::fprintf(stderr, "kbuf-demo: out of memory with --bond %s --phys %zu: %s\n",
                   bonds.c_str(), options.phys, e.what());
      return exit_out_of_memory;
    }
  });
}
