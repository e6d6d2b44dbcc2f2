// The threaded section: N host threads at once, each running the round section's workload (a
// scope and 8 temporaries of ranks 1-4, 64 B - 1 MiB, touched once) against its own allocator,
// for kbuf's pool and for what a threaded host code reaches for instead: mimalloc, jemalloc,
// TBB's scalable allocator, glibc malloc, std::pmr resources, Kokkos::MemoryPool and managed
// Views. Figures are ns per temporary per thread (the wall time of a sample divided by the
// temporaries one thread made in it): with perfect scaling they do not change with N.
//
// The general-purpose allocators are loaded at run time (see bench/CMakeLists.txt): each one
// that was found at configure time and loads runs; the section says which ran and why the
// others did not.
#include "bench_common.hpp"

#include <kbuf/kbuf.hpp>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#if defined(__has_include)
#if __has_include(<dlfcn.h>)
#include <dlfcn.h>
#define KBUF_BENCH_HAVE_DLOPEN 1
#endif
#endif
#ifndef KBUF_BENCH_HAVE_DLOPEN
#define KBUF_BENCH_HAVE_DLOPEN 0
#endif

#include "policies.hpp"

namespace kbuf_bench {
namespace {

using Pool = kbuf::AllocatorPool<memory_space>;

/// Kokkos::MemoryPool is lock-free through Kokkos' atomics; a Kokkos built with Serial alone
/// (Debian's 3.4.01) makes them plain loads and stores, and the pool then is not safe from
/// several host threads: it runs on one thread only there.
#if KOKKOS_VERSION >= 40000
#if defined(KOKKOS_ENABLE_ATOMICS_BYPASS)
constexpr bool kokkos_pool_thread_safe = false;
#else
constexpr bool kokkos_pool_thread_safe = true;
#endif
#else
#if defined(KOKKOS_ENABLE_SERIAL_ATOMICS)
constexpr bool kokkos_pool_thread_safe = false;
#else
constexpr bool kokkos_pool_thread_safe = true;
#endif
#endif

using KokkosPool =
    Kokkos::MemoryPool<Kokkos::Device<Kokkos::DefaultHostExecutionSpace, Kokkos::HostSpace>>;

/// log2 of the alignment: jemalloc's MALLOCX_ALIGN(temp_alignment).
constexpr int jemalloc_align_flag = __builtin_ctzll(temp_alignment);

/// Bytes of one round's temporaries laid out one after another, each aligned.
std::size_t round_arena_bytes() {
  std::size_t n = temp_alignment;
  for (std::size_t b : MixedShapes::slot_bytes()) n += align_up(b, temp_alignment);
  return n;
}

// ---- Memory from a function pair: get(bytes) / put(pointer, bytes) ---------------------------

struct GlibcMalloc {
  static void* get(std::size_t n) {
    return std::aligned_alloc(temp_alignment, align_up(n, temp_alignment));
  }
  static void put(void* p, std::size_t) { std::free(p); }
};
struct Mimalloc {
  static inline void* (*aligned)(std::size_t, std::size_t) = nullptr;  // mi_malloc_aligned
  static inline void (*release)(void*) = nullptr;                      // mi_free
  static void* get(std::size_t n) { return aligned(n, temp_alignment); }
  static void put(void* p, std::size_t) { release(p); }
};
struct Jemalloc {
  static inline void* (*mallocx)(std::size_t, int) = nullptr;
  static inline void (*dallocx)(void*, int) = nullptr;
  static void* get(std::size_t n) { return mallocx(n, jemalloc_align_flag); }
  static void put(void* p, std::size_t) { dallocx(p, 0); }
};
struct TbbMalloc {
  static inline void* (*aligned)(std::size_t, std::size_t) = nullptr;  // scalable_aligned_malloc
  static inline void (*release)(void*) = nullptr;                      // scalable_aligned_free
  static void* get(std::size_t n) { return aligned(n, temp_alignment); }
  static void put(void* p, std::size_t) { release(p); }
};
#if KBUF_BENCH_HAVE_PMR
struct PmrSync {  // one resource shared by every thread
  static inline std::pmr::synchronized_pool_resource* resource = nullptr;
  static void* get(std::size_t n) { return resource->allocate(n, temp_alignment); }
  static void put(void* p, std::size_t n) { resource->deallocate(p, n, temp_alignment); }
};
#endif
struct KokkosMemoryPool {  // one pool shared by every thread
  static inline KokkosPool* pool = nullptr;
  static void* get(std::size_t n) {
    void* p = pool->allocate(n);
    if (p == nullptr) {
      std::fprintf(stderr, "kbuf-bench: Kokkos::MemoryPool is exhausted\n");
      std::abort();
    }
    return p;
  }
  static void put(void* p, std::size_t n) { pool->deallocate(p, n); }
};

/// One allocation per temporary from `Fns`, wrapped in an unmanaged View; all of a round's
/// temporaries are freed at its end, newest first.
template <class Fns>
class AllocFreePolicy {
 public:
  template <class D, class L>
  using view_t = unmanaged_view<D, L>;
  struct Mark {};
  Mark begin() { return {}; }
  void end(Mark&) {
    while (n_ > 0) {
      --n_;
      Fns::put(ptr_[n_], bytes_[n_]);
    }
  }
  template <class D, class L, class... E>
  view_t<D, L> make(std::size_t, E... extents) {
    const std::size_t b = bytes_of<D>(extents...);
    void* p = Fns::get(b);
    ptr_[n_] = p;
    bytes_[n_] = b;
    ++n_;
    return wrap<view_t<D, L>>(p, extents...);
  }
  template <class V>
  void release_slots(V*, std::size_t) {}

 private:
  void* ptr_[MixedShapes::count] = {};
  std::size_t bytes_[MixedShapes::count] = {};
  std::size_t n_ = 0;
};

// ---- kbuf, as a threaded code uses it ----------------------------------------------------------

/// `pool.local()` once per round (Each = false) or for every temporary (Each = true: code that
/// does not keep the reference).
template <bool Each>
class PoolPolicy {
 public:
  template <class D, class L>
  using view_t = typename Allocator::template view<D, L>;
  using Mark = Allocator::Scope;
  explicit PoolPolicy(Pool& pool) : pool_(&pool) {}
  Mark begin() {
    if constexpr (Each) {
      return pool_->local().scope();
    } else {
      a_ = &pool_->local();
      return a_->scope();
    }
  }
  void end(Mark&) {}  // the Scope resets in its destructor, after end()
  template <class D, class L, class... E>
  view_t<D, L> make(std::size_t, E... extents) {
    Allocator& a = Each ? pool_->local() : *a_;
    return a.template allocate<D, L>(static_cast<std::size_t>(extents)...);
  }
  template <class V>
  void release_slots(V*, std::size_t) {}

 private:
  Pool* pool_;
  Allocator* a_ = nullptr;
};

/// A plain `thread_local BufferAllocator`, no pool.
Allocator& thread_allocator() {
  thread_local Allocator alloc;
  return alloc;
}

class ThreadLocalPolicy {
 public:
  template <class D, class L>
  using view_t = typename Allocator::template view<D, L>;
  using Mark = Allocator::Scope;
  Mark begin() {
    a_ = &thread_allocator();
    return a_->scope();
  }
  void end(Mark&) {}
  template <class D, class L, class... E>
  view_t<D, L> make(std::size_t, E... extents) {
    return a_->template allocate<D, L>(static_cast<std::size_t>(extents)...);
  }
  template <class V>
  void release_slots(V*, std::size_t) {}

 private:
  Allocator* a_ = nullptr;
};

#if KBUF_BENCH_HAVE_PMR
/// A `thread_local std::pmr::monotonic_buffer_resource` over a thread_local buffer that holds a
/// round, `release()` per round.
std::pmr::monotonic_buffer_resource& thread_monotonic() {
  thread_local std::vector<unsigned char> storage(round_arena_bytes());
  thread_local std::pmr::monotonic_buffer_resource resource(storage.data(), storage.size());
  return resource;
}

class PmrMonotonicTlPolicy {
 public:
  template <class D, class L>
  using view_t = unmanaged_view<D, L>;
  struct Mark {};
  Mark begin() {
    r_ = &thread_monotonic();
    return {};
  }
  void end(Mark&) { r_->release(); }
  template <class D, class L, class... E>
  view_t<D, L> make(std::size_t, E... extents) {
    return wrap<view_t<D, L>>(r_->allocate(bytes_of<D>(extents...), temp_alignment), extents...);
  }
  template <class V>
  void release_slots(V*, std::size_t) {}

 private:
  std::pmr::monotonic_buffer_resource* r_ = nullptr;
};
#endif

// ---- The contenders and the libraries they need ------------------------------------------------

struct Library {
  Library(const char* n, bool b, const char* p) : name(n), built(b), path(p) {}
  const char* name;
  bool built;        // found at configure time
  const char* path;  // what dlopen opens
  bool ok = false;   // loaded
  std::string why;   // why not
};

#if KBUF_BENCH_HAVE_DLOPEN
void* open_library(Library& lib) {
  void* h = dlopen(lib.path, RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    const char* e = dlerror();
    lib.why = e != nullptr ? e : "dlopen failed";
    if (lib.why.find("static TLS") != std::string::npos) {
      lib.why +=
          " (run with GLIBC_TUNABLES=glibc.rtld.optional_static_tls=65536: it needs more "
          "static TLS than glibc reserves for libraries opened later)";
    }
  }
  return h;
}

template <class F>
bool symbol(Library& lib, void* h, const char* name, F*& out) {
  void* s = dlsym(h, name);
  if (s == nullptr) {
    lib.why = std::string("no symbol ") + name;
    return false;
  }
  out = reinterpret_cast<F*>(s);
  return true;
}
#endif

#ifndef KBUF_BENCH_MIMALLOC_PATH
#define KBUF_BENCH_MIMALLOC_PATH ""
#endif
#ifndef KBUF_BENCH_JEMALLOC_PATH
#define KBUF_BENCH_JEMALLOC_PATH ""
#endif
#ifndef KBUF_BENCH_TBBMALLOC_PATH
#define KBUF_BENCH_TBBMALLOC_PATH ""
#endif
#ifndef KBUF_BENCH_HAVE_MIMALLOC
#define KBUF_BENCH_HAVE_MIMALLOC 0
#endif
#ifndef KBUF_BENCH_HAVE_JEMALLOC
#define KBUF_BENCH_HAVE_JEMALLOC 0
#endif
#ifndef KBUF_BENCH_HAVE_TBBMALLOC
#define KBUF_BENCH_HAVE_TBBMALLOC 0
#endif

struct Libraries {
  Library mimalloc{"mimalloc", KBUF_BENCH_HAVE_MIMALLOC != 0, KBUF_BENCH_MIMALLOC_PATH};
  Library jemalloc{"jemalloc", KBUF_BENCH_HAVE_JEMALLOC != 0, KBUF_BENCH_JEMALLOC_PATH};
  Library tbb{"tbb-scalable", KBUF_BENCH_HAVE_TBBMALLOC != 0, KBUF_BENCH_TBBMALLOC_PATH};
};

/// Loads each library once per process (never closed: memory from it may outlive a section).
Libraries& libraries() {
  static Libraries libs = [] {
    Libraries l;
    for (Library* lib : {&l.mimalloc, &l.jemalloc, &l.tbb}) {
      if (!lib->built) {
        lib->why = "not found at configure time";
        continue;
      }
#if KBUF_BENCH_HAVE_DLOPEN
      void* h = open_library(*lib);
      if (h == nullptr) continue;
      if (lib == &l.mimalloc) {
        lib->ok = symbol(*lib, h, "mi_malloc_aligned", Mimalloc::aligned) &&
                  symbol(*lib, h, "mi_free", Mimalloc::release);
      } else if (lib == &l.jemalloc) {
        lib->ok = symbol(*lib, h, "mallocx", Jemalloc::mallocx) &&
                  symbol(*lib, h, "dallocx", Jemalloc::dallocx);
      } else {
        lib->ok = symbol(*lib, h, "scalable_aligned_malloc", TbbMalloc::aligned) &&
                  symbol(*lib, h, "scalable_aligned_free", TbbMalloc::release);
      }
#else
      lib->why = "no dlopen on this platform";
#endif
    }
    return l;
  }();
  return libs;
}

/// A contender of the threaded round: its name, what it is, whether it may run on several
/// threads at once, and how a thread makes its rounds (called on that thread).
struct Strategy {
  std::string name;
  const char* what;
  bool multi_thread = true;
};

/// The objects every thread of a run shares.
struct SharedState {
  Pool pool;
#if KBUF_BENCH_HAVE_PMR
  std::pmr::synchronized_pool_resource sync;
#endif
  KokkosPool kokkos_pool;
  SharedState()
      : kokkos_pool(Kokkos::HostSpace(), std::size_t{64} << 20, 64, std::size_t{1} << 20,
                    std::size_t{1} << 20) {
#if KBUF_BENCH_HAVE_PMR
    PmrSync::resource = &sync;
#endif
    KokkosMemoryPool::pool = &kokkos_pool;
  }
  SharedState(const SharedState&) = delete;
  SharedState& operator=(const SharedState&) = delete;
};

/// One thread's policies, made on that thread, and its rounds per strategy (`rounds[i](k)` runs k
/// rounds of strategy i, as the round section's contenders do).
struct ThreadState {
  std::unique_ptr<MixedShapes> shapes = std::make_unique<MixedShapes>();
  PoolPolicy<false> pool_once;
  PoolPolicy<true> pool_each;
  ThreadLocalPolicy thread_local_alloc;
  AllocFreePolicy<GlibcMalloc> glibc;
  AllocFreePolicy<Mimalloc> mimalloc;
  AllocFreePolicy<Jemalloc> jemalloc;
  AllocFreePolicy<TbbMalloc> tbb;
#if KBUF_BENCH_HAVE_PMR
  AllocFreePolicy<PmrSync> pmr_sync;
  PmrMonotonicTlPolicy pmr_monotonic;
#endif
  AllocFreePolicy<KokkosMemoryPool> kokkos_pool;
  ManagedPolicy<false> noinit;
  std::vector<std::function<void(std::size_t)>> rounds;

  ThreadState(SharedState& sh, const std::vector<Strategy>& st)
      : pool_once(sh.pool), pool_each(sh.pool) {
    for (const Strategy& s : st) rounds.push_back(rounds_of(s.name));
  }

  template <class P>
  std::function<void(std::size_t)> loop(P& p) {
    const MixedShapes* s = shapes.get();
    return [&p, s](std::size_t k) {
      for (std::size_t i = 0; i < k; ++i) {
        clobber();  // nothing computed in one round may be reused by the next
        mixed_round(p, *s);
      }
    };
  }
  std::function<void(std::size_t)> rounds_of(const std::string& n) {
    if (n == "kbuf-pool") return loop(pool_once);
    if (n == "kbuf-pool-each") return loop(pool_each);
    if (n == "kbuf-thread-local") return loop(thread_local_alloc);
    if (n == "malloc") return loop(glibc);
    if (n == "mimalloc") return loop(mimalloc);
    if (n == "jemalloc") return loop(jemalloc);
    if (n == "tbb-scalable") return loop(tbb);
#if KBUF_BENCH_HAVE_PMR
    if (n == "pmr-sync") return loop(pmr_sync);
    if (n == "pmr-monotonic-tl") return loop(pmr_monotonic);
#endif
    if (n == "kokkos-memorypool") return loop(kokkos_pool);
    return loop(noinit);  // managed-noinit
  }
};

/// The strategies this build can run, in table order.
std::vector<Strategy> available_strategies() {
  const Libraries& libs = libraries();
  std::vector<Strategy> st;
  st.push_back({"kbuf-pool", "pool.local() once per round"});
  st.push_back({"kbuf-pool-each", "pool.local() per temporary"});
  st.push_back({"kbuf-thread-local", "thread_local BufferAllocator"});
  if (libs.mimalloc.ok) st.push_back({"mimalloc", "mi_malloc_aligned/mi_free"});
  if (libs.jemalloc.ok) st.push_back({"jemalloc", "mallocx/dallocx"});
  if (libs.tbb.ok) st.push_back({"tbb-scalable", "scalable_aligned_malloc/free"});
  st.push_back({"malloc", "glibc aligned_alloc/free"});
#if KBUF_BENCH_HAVE_PMR
  st.push_back({"pmr-sync", "shared pmr::synchronized_pool"});
  st.push_back({"pmr-monotonic-tl", "thread_local pmr::monotonic"});
#endif
  st.push_back({"kokkos-memorypool", "shared Kokkos::MemoryPool", kokkos_pool_thread_safe});
  st.push_back({"managed-noinit", "View(view_alloc(WithoutInit.))"});
  return st;
}

// ---- Threads ---------------------------------------------------------------------------------

void spin_until(const std::atomic<std::uint64_t>& x, std::uint64_t want, bool equal) {
  unsigned spins = 0;
  while ((x.load(std::memory_order_acquire) == want) != equal) {
    if (++spins > 2048) std::this_thread::yield();
  }
}

/// `threads` threads running rounds together: the calling thread is thread 0, the others wait
/// for work. `run(i, k)` has every thread run k rounds of strategy i and returns when all have.
class Crew {
 public:
  Crew(std::size_t threads, SharedState& sh, const std::vector<Strategy>& st)
      : own_(sh, st), threads_(threads) {
    for (std::size_t t = 1; t < threads; ++t) {
      workers_.emplace_back([this, &sh, &st] {
        auto state = std::make_unique<ThreadState>(sh, st);
        std::uint64_t seen = 0;
        for (;;) {
          spin_until(generation_, seen, false);
          seen = generation_.load(std::memory_order_acquire);
          if (quit_.load(std::memory_order_acquire)) break;
          state->rounds[strategy_](rounds_);
          done_.fetch_add(1, std::memory_order_acq_rel);
        }
      });
    }
  }
  Crew(const Crew&) = delete;
  Crew& operator=(const Crew&) = delete;
  ~Crew() {
    quit_.store(true, std::memory_order_release);
    generation_.fetch_add(1, std::memory_order_acq_rel);
    for (auto& w : workers_) w.join();
  }
  void run(std::size_t strategy, std::size_t k) {
    strategy_ = strategy;
    rounds_ = k;
    done_.store(0, std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_acq_rel);
    own_.rounds[strategy](k);
    spin_until(done_, threads_ - 1, true);
    fence();
  }

 private:
  ThreadState own_;
  std::size_t threads_;
  std::vector<std::thread> workers_;
  std::atomic<std::uint64_t> generation_{0};
  std::atomic<std::uint64_t> done_{0};
  std::atomic<bool> quit_{false};
  std::size_t strategy_ = 0, rounds_ = 0;  // written before generation_ is raised
};

/// Runs `f` on a thread of its own, so that every thread_local allocator and resource is
/// destroyed when it ends, long before Kokkos is finalised.
template <class F>
void on_own_thread(F f) {
  std::thread t(std::move(f));
  t.join();
}

std::vector<std::size_t> parse_counts(const std::string& list) {
  std::vector<std::size_t> v;
  std::size_t pos = 0;
  while (pos <= list.size()) {
    const std::size_t comma = std::min(list.find(',', pos), list.size());
    const std::size_t n = std::strtoul(list.substr(pos, comma - pos).c_str(), nullptr, 10);
    if (n > 0) v.push_back(n);
    pos = comma + 1;
  }
  return v;
}

void profile(Context& c, const std::vector<Strategy>& st) {
  std::size_t index = st.size();
  for (std::size_t i = 0; i < st.size(); ++i)
    if (st[i].name == c.opt.profile_strategy) index = i;
  if (index == st.size()) {
    std::fprintf(stderr, "kbuf-bench: --profile: section threads has no strategy '%s' here\n",
                 c.opt.profile_strategy.c_str());
    std::exit(2);
  }
  on_own_thread([&] {
    const auto shared = std::make_unique<SharedState>();
    Crew crew(1, *shared, st);
    crew.run(index, c.opt.timing.warmup_rounds);
    crew.run(index, c.opt.profile_rounds);
  });
  std::printf("profile: %zu rounds of %s in section threads (1 thread, %zu temporaries each)\n",
              c.opt.profile_rounds, st[index].name.c_str(), MixedShapes::count);
}

}  // namespace

void section_threads(Context& c) {
  if constexpr (!host_space) {
    std::printf("\n== threads: skipped (the memory space is not host-accessible) ==\n");
    return;
  } else {
    const std::vector<Strategy> all = available_strategies();
    if (!c.opt.profile_section.empty()) {
      if (c.opt.profile_section == "threads") profile(c, all);
      return;
    }
    const std::vector<std::size_t> counts = parse_counts(c.opt.threads);
    std::printf(
        "\n== threads: N host threads, each a scope and 8 temporaries (the round) per round "
        "against its own allocator ==\n");
    std::printf("  ran:");
    for (const Strategy& s : all) std::printf(" %s", s.name.c_str());
    std::printf("\n");
    const Libraries& libs = libraries();
    for (const Library* lib : {&libs.mimalloc, &libs.jemalloc, &libs.tbb}) {
      if (!lib->ok) std::printf("  not run: %s: %s\n", lib->name, lib->why.c_str());
    }
    if (!kokkos_pool_thread_safe) {
      std::printf(
          "  kokkos-memorypool: 1 thread only (this Kokkos makes its atomics plain loads and "
          "stores: Serial alone)\n");
    }
    // Per N: each strategy's summary (ns per temporary per thread).
    std::vector<std::vector<Summary>> by_n;
    std::vector<std::vector<bool>> ran;
    for (std::size_t n : counts) {
      std::vector<Strategy> st;
      std::vector<std::size_t> index;  // into `all`
      for (std::size_t i = 0; i < all.size(); ++i) {
        if (n == 1 || all[i].multi_thread) {
          st.push_back(all[i]);
          index.push_back(i);
        }
      }
      std::vector<Contender> cont(st.size());
      on_own_thread([&] {
        const auto shared = std::make_unique<SharedState>();
        Crew crew(n, *shared, st);
        for (std::size_t i = 0; i < st.size(); ++i) {
          cont[i].name = st[i].name;
          cont[i].temps_per_round = MixedShapes::count;
          cont[i].run = [&crew, i](std::size_t k) { crew.run(i, k); };
        }
        measure_interleaved(cont, c.opt.timing);
        for (auto& x : cont) x.run = nullptr;
      });
      std::vector<Summary> sums(all.size());
      std::vector<bool> r(all.size(), false);
      for (std::size_t j = 0; j < st.size(); ++j) {
        sums[index[j]] = summarize(cont[j].ns_per_temp);
        r[index[j]] = true;
      }
      const Summary& k = sums[0];  // kbuf-pool
      std::printf("  N = %zu: ns per temporary per thread\n", n);
      std::printf("  %-18s %-31s %9s %9s %9s %9s %10s %10s\n", "strategy", "", "median", "p10",
                  "p90", "min", "x pool med", "x pool min");
      for (std::size_t i = 0; i < all.size(); ++i) {
        if (!r[i]) continue;
        const Summary& m = sums[i];
        std::printf("  %-18s %-31s %9.2f %9.2f %9.2f %9.2f %10.2f %10.2f\n", all[i].name.c_str(),
                    all[i].what, m.median, m.p10, m.p90, m.min, m.median / k.median, m.min / k.min);
        c.csv.row("threads", "mixed8", static_cast<double>(n), all[i].name, m, m.median / k.median,
                  -1, -1);
      }
      c.csv.flush();
      by_n.push_back(std::move(sums));
      ran.push_back(std::move(r));
      std::fflush(stdout);
    }
    if (counts.size() > 1 && counts.front() == 1) {
      std::printf(
          "  throughput scaling from 1 thread (N x ns(1) / ns(N), by minima; N = perfect)\n");
      std::printf("  %-18s", "strategy");
      for (std::size_t j = 1; j < counts.size(); ++j) std::printf("   1->%-4zu", counts[j]);
      std::printf("\n");
      for (std::size_t i = 0; i < all.size(); ++i) {
        std::printf("  %-18s", all[i].name.c_str());
        for (std::size_t j = 1; j < counts.size(); ++j) {
          if (ran[j][i] && ran[0][i]) {
            std::printf(" %9.2f", static_cast<double>(counts[j]) * by_n[0][i].min / by_n[j][i].min);
          } else {
            std::printf(" %9s", "-");
          }
        }
        std::printf("\n");
      }
    }
  }
}

}  // namespace kbuf_bench
