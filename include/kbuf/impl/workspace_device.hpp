#ifndef KBUF_IMPL_WORKSPACE_DEVICE_HPP
#define KBUF_IMPL_WORKSPACE_DEVICE_HPP

/// @file
/// What `kbuf::Workspace`'s arenas use inside kernels: the layout of a workspace's header and of
/// its per-slot records, the needs' histogram buckets, the atomics, the claims of slots and
/// lanes (with a back-off that lets the holder run, on the host and on a device), the fallback
/// allocations and the guard zones of check mode. Not part of the API.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <type_traits>

#include <Kokkos_Core.hpp>

#include <kbuf/impl/device_code.hpp>
#include <kbuf/impl/macros.hpp>

namespace kbuf {
namespace Impl {

/// The words of a record, one `unsigned long long` each. Every slot has one, which only the
/// slot's holder writes (no atomic): `finish()` sums the counters and takes the largest of the
/// peaks on the host. The header holds one more, shared by the arenas that hold no slot
/// (atomics).
enum workspace_record : int {
  // Counters, summed.
  wr_takes,
  wr_arenas,
  wr_spills,
  wr_spill_bytes,
  wr_fallbacks,
  wr_fallback_bytes,
  wr_failed,
  wr_overruns,
  wr_spilling,   // arenas that spilled
  wr_missed,     // spilling arenas that found every lane taken
  wr_unslotted,  // arenas that held no slot
  // Peaks, the largest kept.
  wr_peak_need,     // the most one arena needed at once
  wr_spill_peak,    // the most one arena asked of a lane at once
  wr_team_threads,  // the threads of the teams that held the slot (team x vector on a GPU)
  // A histogram entry not yet added to the header's: bucket + 1 (0: none), its arenas and their
  // largest need.
  wr_pending_bucket,
  wr_pending_count,
  wr_pending_max,
  // Debug builds: where the threads of the slot's team meet to compare their arenas
  // (`team_check`): arrivals, the sum of their signatures, a generation, the last sum.
  wr_check_count,
  wr_check_sum,
  wr_check_generation,
  wr_check_result,
  wr_check_abort,  // the thread that reports the team's misuse (one: two in abort can crash it)
  wr_words
};

/// Words from one slot's record to the next: whole cache lines (64 bytes), so that the holders
/// of two slots (two host threads, two multiprocessors) never write the same line.
inline constexpr int wr_stride = (wr_words + 7) / 8 * 8;

/// Buckets of the needs' histogram: 0..4 bytes one each, then four per octave.
inline constexpr int workspace_buckets = 256;

/// The header, in words: the shared record, the histogram (count and largest need per bucket),
/// the first overrun found (a flag, the take's index in its arena, the bytes written past it),
/// and the label (for the message about it).
inline constexpr int wh_shared = 0;
inline constexpr int wh_hist = wr_words;
inline constexpr int wh_first = wh_hist + 2 * workspace_buckets;
inline constexpr int wh_first_index = wh_first + 1;
inline constexpr int wh_first_past = wh_first + 2;
inline constexpr int wh_label = wh_first + 3;
inline constexpr int wh_label_words = 8;  // 63 characters and a terminating zero
inline constexpr int wh_words = wh_label + wh_label_words;

KOKKOS_INLINE_FUNCTION int floor_log2(unsigned long long m) {
  int e = 0;
  for (int shift = 32; shift > 0; shift >>= 1) {
    if ((m >> shift) != 0) {
      m >>= shift;
      e += shift;
    }
  }
  return e;
}

/// The bucket of a need of `n` bytes.
KOKKOS_INLINE_FUNCTION int need_bucket(unsigned long long n) {
  if (n <= 4) return static_cast<int>(n);
  const unsigned long long m = n - 1;  // >= 4
  const int e = floor_log2(m);         // >= 2
  const int sub = static_cast<int>((m >> (e - 2)) & 3u);
  return 5 + 4 * (e - 2) + sub;
}

/// `extent_is_negative` for kernels.
template <class E>
KOKKOS_INLINE_FUNCTION bool negative_extent(E e) {
  if constexpr (std::is_signed<E>::value) {
    return e < 0;
  } else {
    (void)e;
    return false;
  }
}

/// The workspace's atomics. On the host they are the compiler's own (`__atomic`), which stay
/// atomic whatever Kokkos was built with (a Serial-only Kokkos 3 makes its atomics plain
/// operations) and which ThreadSanitizer understands; in device code, Kokkos', with a fence where
/// an order is needed (Kokkos' device atomics are relaxed). Device and host code are told apart
/// as Kokkos tells them apart (impl/device_code.hpp), so that no compiler takes the host branch
/// on a device.
template <class T>
KOKKOS_INLINE_FUNCTION T atomic_cas(T* p, T expected, T desired) {
  KBUF_IMPL_IF_ON_DEVICE((return Kokkos::atomic_compare_exchange(p, expected, desired);))
  KBUF_IMPL_IF_ON_HOST((__atomic_compare_exchange_n(p, &expected, desired, false, __ATOMIC_ACQ_REL,
                                                    __ATOMIC_ACQUIRE);
                        return expected;))  // the value seen: `expected` itself on success
}
template <class T>
KOKKOS_INLINE_FUNCTION T atomic_add(T* p, T v) {
  KBUF_IMPL_IF_ON_DEVICE((return Kokkos::atomic_fetch_add(p, v);))
  KBUF_IMPL_IF_ON_HOST((return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);))
}
template <class T>
KOKKOS_INLINE_FUNCTION void atomic_max(T* p, T v) {
  KBUF_IMPL_IF_ON_DEVICE(((void)Kokkos::atomic_fetch_max(p, v);))
  KBUF_IMPL_IF_ON_HOST(
      (T old = __atomic_load_n(p, __ATOMIC_RELAXED);
       while (old < v && !__atomic_compare_exchange_n(p, &old, v, true, __ATOMIC_RELAXED,
                                                      __ATOMIC_RELAXED)){}))
}
/// A store that publishes what the thread wrote before it (release).
template <class T>
KOKKOS_INLINE_FUNCTION void atomic_store(T* p, T v) {
  KBUF_IMPL_IF_ON_DEVICE((Kokkos::memory_fence(); (void)Kokkos::atomic_exchange(p, v);))
  KBUF_IMPL_IF_ON_HOST((__atomic_store_n(p, v, __ATOMIC_RELEASE);))
}
/// A load that sees what the thread that stored it wrote before (acquire, with `acquire_fence`
/// on a device).
template <class T>
KOKKOS_INLINE_FUNCTION T atomic_load(T* p) {
  KBUF_IMPL_IF_ON_DEVICE((return *static_cast<volatile T*>(p);))
  KBUF_IMPL_IF_ON_HOST((return __atomic_load_n(p, __ATOMIC_ACQUIRE);))
}
/// After a successful claim: what the claimed memory's last holder wrote is seen (the host's
/// compare-and-swap acquires already).
KOKKOS_INLINE_FUNCTION void acquire_fence() {
  KBUF_IMPL_IF_ON_DEVICE((Kokkos::memory_fence();))
}
/// A fetch-and-add ordered with everything around it, on the host and on a device (the debug
/// checks' meeting point).
KOKKOS_INLINE_FUNCTION unsigned long long atomic_add_ordered(unsigned long long* p,
                                                             unsigned long long v) {
  KBUF_IMPL_IF_ON_DEVICE((Kokkos::memory_fence();
                          const unsigned long long old = Kokkos::atomic_fetch_add(p, v);
                          Kokkos::memory_fence(); return old;))
  KBUF_IMPL_IF_ON_HOST((return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);))
}

/// The slot the calling host thread claimed last (any workspace; a hint only), or SIZE_MAX.
/// Host code only.
inline std::size_t& last_slot() noexcept {
  static thread_local std::size_t slot = static_cast<std::size_t>(-1);
  return slot;
}

/// A device's figures for a workspace made on the host, so that tests can run a host kernel
/// sized and limited as the device would size and limit it: the concurrency (0: the execution
/// space's own), the teams resident at once (0: the device's own; none on the host), and the
/// bytes the host's fallback heap may hold at once (`SIZE_MAX`: no limit; 0 or 8 MiB for a GPU,
/// whose kernels have no heap of kbuf's). A workspace reads the first two when it is made; the
/// heap limit applies to every host fallback while it is set, and a workspace made under a
/// limit reserves a fallback region for its reruns as a device's would. Host code only; not
/// thread-safe to change while kernels run.
struct DeviceEmulation {
  long long concurrency = 0;
  long long resident_teams = 0;
  std::size_t heap_limit = static_cast<std::size_t>(-1);
};
inline DeviceEmulation& device_emulation() noexcept {
  static DeviceEmulation emulation;
  return emulation;
}
/// Bytes the host's fallback heap holds now for takes made under a heap limit.
inline std::size_t& host_heap_held() noexcept {
  static std::size_t held = 0;
  return held;
}

/// Device code: a pause of about `ns` nanoseconds (CUDA from sm_70 on); nothing elsewhere.
KOKKOS_INLINE_FUNCTION void device_nanosleep(unsigned ns) {
#if defined(KOKKOS_ENABLE_CUDA) && defined(__CUDA_ARCH__)
#if __CUDA_ARCH__ >= 700
  __nanosleep(ns);
#else
  (void)ns;
#endif
#elif defined(KOKKOS_ENABLE_CUDA) && defined(__NVCOMPILER)
  NV_IF_TARGET(NV_PROVIDES_SM_70, (__nanosleep(ns);), ((void)ns;))
#else
  (void)ns;
#endif
}

/// A pause between rounds of a probe, so that a holder can run and give its slot back: the host
/// thread yields; a CUDA thread sleeps (longer each round, up to about 8 microseconds: the probe
/// is bounded in time, not only in iterations); an AMD wavefront sleeps too (`s_sleep`), so that
/// other wavefronts on its compute unit are scheduled.
KOKKOS_INLINE_FUNCTION void probe_backoff(unsigned round) {
  (void)round;
#if defined(KOKKOS_ENABLE_HIP)
  KBUF_IMPL_IF_ON_DEVICE((__builtin_amdgcn_s_sleep(8);))
#else
  KBUF_IMPL_IF_ON_DEVICE((device_nanosleep(32u << (round < 8u ? round : 8u));))
#endif
  KBUF_IMPL_IF_ON_HOST((std::this_thread::yield();))
}

/// The flags of slots and lanes, each in a cache line of its own (64 bytes): holders of
/// different slots never write the same line.
inline constexpr std::size_t flag_stride = 64 / sizeof(unsigned int);

/// A free slot among the `n` flags at `flags` (`flag_stride` apart), probed from `start` on with
/// compare-and-swap, `rounds` times round with a back-off between rounds; -1 when none was free
/// that often.
KOKKOS_INLINE_FUNCTION int claim_slot(unsigned int* flags, std::size_t n, std::size_t start,
                                      std::size_t rounds) {
  if (n == 0) return -1;
  std::size_t i = start % n;
  for (std::size_t round = 0; round < rounds; ++round) {
    if (round != 0) probe_backoff(static_cast<unsigned>(round));
    for (std::size_t probe = 0; probe < n; ++probe) {
      unsigned int* f = &flags[i * flag_stride];
      if (atomic_load(f) == 0u && atomic_cas(f, 0u, 1u) == 0u) {
        acquire_fence();  // what the slot's last holder wrote is done with
        return static_cast<int>(i);
      }
      i = i + 1 == n ? 0 : i + 1;
    }
  }
  return -1;
}

/// Frees a slot (or a lane) `claim_slot` gave: after a device-scope fence (a release on the
/// host), so that what its holder's team wrote there is done before the next holder claims it.
KOKKOS_INLINE_FUNCTION void release_slot(unsigned int* flags, int slot) {
  atomic_store(&flags[static_cast<std::size_t>(slot) * flag_stride], 0u);
}

/// Where a team starts probing for a slot: on the host, the slot its thread held last (a host
/// thread runs one team at a time, so that slot is almost always free again, and threads do not
/// probe each other's); on a device, and at a thread's first claim, the team's league rank.
KOKKOS_INLINE_FUNCTION std::size_t slot_hint(int league_rank) {
  KBUF_IMPL_IF_ON_DEVICE((return static_cast<std::size_t>(league_rank);))
  KBUF_IMPL_IF_ON_HOST(
      (const std::size_t last = last_slot();
       return last != static_cast<std::size_t>(-1) ? last : static_cast<std::size_t>(league_rank);))
}

/// A record's counter: plain for a slot's own record (its holder is alone), atomic for the
/// shared one.
KOKKOS_INLINE_FUNCTION void record_add(unsigned long long* r, int i, unsigned long long v,
                                       bool shared) {
  if (v == 0) return;
  if (shared) {
    atomic_add(&r[i], v);
  } else {
    r[i] += v;
  }
}
KOKKOS_INLINE_FUNCTION void record_max(unsigned long long* r, int i, unsigned long long v,
                                       bool shared) {
  if (shared) {
    if (atomic_load(&r[i]) < v) atomic_max(&r[i], v);
  } else if (r[i] < v) {
    r[i] = v;
  }
}

/// Adds an arena's need to the histogram: through the slot's pending entry, which collects the
/// arenas of one bucket in a row without an atomic, and is added to the header's histogram
/// (two atomics) when the next arena of that slot needs another bucket; `finish()` adds what
/// is left pending. Arenas without a slot go to the histogram at once.
KOKKOS_INLINE_FUNCTION void record_need(unsigned long long* r, unsigned long long* hist,
                                        unsigned long long need, bool shared) {
  const unsigned long long b = static_cast<unsigned long long>(need_bucket(need));
  if (shared) {
    atomic_add(&hist[2 * b], 1ull);
    if (atomic_load(&hist[2 * b + 1]) < need) atomic_max(&hist[2 * b + 1], need);
    return;
  }
  if (r[wr_pending_bucket] == b + 1) {
    ++r[wr_pending_count];
    if (r[wr_pending_max] < need) r[wr_pending_max] = need;
    return;
  }
  if (r[wr_pending_bucket] != 0) {
    const unsigned long long pb = r[wr_pending_bucket] - 1;
    atomic_add(&hist[2 * pb], r[wr_pending_count]);
    if (atomic_load(&hist[2 * pb + 1]) < r[wr_pending_max]) {
      atomic_max(&hist[2 * pb + 1], r[wr_pending_max]);
    }
  }
  r[wr_pending_bucket] = b + 1;
  r[wr_pending_count] = 1;
  r[wr_pending_max] = need;
}

/// The workspace's fallback region: memory of its own, cut into `chunks` chunks of
/// `1 << shift` bytes (a power of two, at least the unit), each with a flag (0: free) in one
/// array of `unsigned int`. A fallback claims a run of contiguous chunks and gives it back when
/// its frame or arena ends; the same code runs on the host and on a device, with no heap.
/// Each slot has a home in the region, `home` chunks from the previous slot's, where its arenas
/// start searching: arenas of different slots seldom meet there.
struct FallbackRegion {
  unsigned int* flags = nullptr;
  unsigned char* base = nullptr;  // aligned to the unit
  unsigned long long chunks = 0;
  unsigned long long home = 0;
  unsigned int shift = 0;
};

/// The first chunk of a run of `k` free chunks of `region`, claimed (every flag set), searched
/// from chunk `start` on (runs do not wrap around the end) for at most two passes over the
/// region: no wait on a holder, as a lane claim. -1 when none was found.
KOKKOS_INLINE_FUNCTION long long region_claim(const FallbackRegion& region,
                                              unsigned long long start, unsigned long long k) {
  const unsigned long long n = region.chunks;
  unsigned int* flags = region.flags;
  if (k == 0 || k > n) return -1;
  unsigned long long i = start % n;
  for (unsigned long long passed = 0; passed < 2 * n;) {
    if (i + k > n) {  // no room for the run before the end: from the start again
      passed += n - i;
      i = 0;
      continue;
    }
    unsigned long long j = 0;
    while (j < k && atomic_load(&flags[i + j]) == 0u) ++j;
    if (j == k) {
      j = 0;
      while (j < k && atomic_cas(&flags[i + j], 0u, 1u) == 0u) ++j;
      if (j == k) {
        acquire_fence();  // what the chunks' last holders wrote is done with
        return static_cast<long long>(i);
      }
      for (unsigned long long c = 0; c < j; ++c) atomic_store(&flags[i + c], 0u);  // unused
    }
    passed += j + 1;  // chunk i + j is taken: the next run starts after it
    i += j + 1;
  }
  return -1;
}

/// Gives back the `k` chunks of `region` from `first` on: after a device-scope fence (a release
/// on the host), so that what the team wrote there is done before another arena, on any
/// multiprocessor, claims them.
KOKKOS_INLINE_FUNCTION void region_release(const FallbackRegion& region, unsigned long long first,
                                           unsigned long long k) {
  KBUF_IMPL_IF_ON_DEVICE((Kokkos::memory_fence(); for (unsigned long long c = 0; c < k; ++c) {
    (void)Kokkos::atomic_exchange(&region.flags[first + c], 0u);
  }))
  KBUF_IMPL_IF_ON_HOST((for (unsigned long long c = 0; c < k; ++c) {
    __atomic_store_n(&region.flags[first + c], 0u, __ATOMIC_RELEASE);
  }))
}

/// The words in front of a fallback block (`block[-i]`): the host heap's allocation (null for a
/// block of the region), the block before it in its arena's chain, the arena's event count when
/// it was made (`stamp`), and either the region's first chunk and chunk count, or the bytes the
/// heap block holds against an emulated limit (0: none).
enum fallback_word : int {
  fw_raw = 1,
  fw_previous = 2,
  fw_stamp = 3,
  fw_first = 4,
  fw_count = 5,
  fw_words = 5
};

/// Host code: a fallback block from the host's heap, within `device_emulation().heap_limit`.
inline unsigned char* heap_take(unsigned long long room, unsigned long long unit) {
  const std::size_t limit = device_emulation().heap_limit;
  const unsigned long long bytes = room + fw_words * sizeof(void*);
  if (bytes < room || static_cast<std::size_t>(bytes) != bytes) return nullptr;
  std::size_t charged = 0;
  if (limit != static_cast<std::size_t>(-1)) {
    std::size_t& held = host_heap_held();
    std::size_t seen = __atomic_load_n(&held, __ATOMIC_RELAXED);
    do {
      if (seen > limit || bytes > limit - seen) return nullptr;
    } while (!__atomic_compare_exchange_n(&held, &seen, seen + bytes, true, __ATOMIC_RELAXED,
                                          __ATOMIC_RELAXED));
    charged = static_cast<std::size_t>(bytes);
  }
  void* raw = std::malloc(static_cast<std::size_t>(bytes));
  if (raw == nullptr) {
    if (charged != 0) __atomic_fetch_sub(&host_heap_held(), charged, __ATOMIC_RELAXED);
    return nullptr;
  }
  const std::uintptr_t first = reinterpret_cast<std::uintptr_t>(raw) + fw_words * sizeof(void*);
  unsigned char* q = reinterpret_cast<unsigned char*>((first + unit - 1) / unit * unit);
  reinterpret_cast<void**>(q)[-fw_raw] = raw;
  reinterpret_cast<unsigned long long*>(q)[-fw_count] = charged;
  return q;
}

/// Host code: gives a block of `heap_take` back.
inline void heap_release(void* block) {
  void* raw = static_cast<void**>(block)[-fw_raw];
  const std::size_t charged =
      static_cast<std::size_t>(static_cast<unsigned long long*>(block)[-fw_count]);
  std::free(raw);
  if (charged != 0) __atomic_fetch_sub(&host_heap_held(), charged, __ATOMIC_RELAXED);
}

/// A fallback block of `bytes` aligned to `unit` (a power of two, at least 64), with its words
/// in the unit in front of it: a run of the workspace's region (searched from chunk `start`),
/// else, in host code, the host's heap; a GPU's kernels never call `malloc` (CUDA's device heap
/// is 8 MiB unless raised, and ROCm before 4.5 traps on it). Null when neither serves it.
KBUF_IMPL_COLD KOKKOS_FUNCTION inline void* fallback_take(unsigned long long bytes,
                                                          unsigned long long unit, void* previous,
                                                          unsigned long long stamp,
                                                          const FallbackRegion& region,
                                                          unsigned long long start) {
  const unsigned long long room = bytes + unit;
  if (room < bytes) return nullptr;
  unsigned char* q = nullptr;
  if (region.chunks != 0) {
    const unsigned long long chunk = 1ull << region.shift;
    const unsigned long long k = room / chunk + (room % chunk != 0 ? 1 : 0);
    const long long first = region_claim(region, start, k);
    if (first >= 0) {
      q = region.base + (static_cast<unsigned long long>(first) << region.shift) + unit;
      reinterpret_cast<void**>(q)[-fw_raw] = nullptr;
      reinterpret_cast<unsigned long long*>(q)[-fw_first] = static_cast<unsigned long long>(first);
      reinterpret_cast<unsigned long long*>(q)[-fw_count] = k;
    }
  }
  KBUF_IMPL_IF_ON_HOST((if (q == nullptr) q = heap_take(room, unit);))
  if (q == nullptr) return nullptr;
  reinterpret_cast<void**>(q)[-fw_previous] = previous;
  reinterpret_cast<unsigned long long*>(q)[-fw_stamp] = stamp;
  return q;
}

/// The newest fallback block of a chain whose stamp is not above `floor` (null for none): what
/// is left once the blocks made after that count are freed.
KOKKOS_INLINE_FUNCTION void* fallback_left(void* newest, unsigned long long floor) {
  while (newest != nullptr && static_cast<unsigned long long*>(newest)[-fw_stamp] > floor) {
    newest = static_cast<void**>(newest)[-fw_previous];
  }
  return newest;
}

/// Gives back the fallback blocks of a chain from `newest` back, while their stamp is above
/// `floor` (all of them for a floor of 0): a region's chunks after a device-scope fence, a host
/// heap block to the heap.
KBUF_IMPL_COLD KOKKOS_FUNCTION inline void fallback_release(void* newest, unsigned long long floor,
                                                            const FallbackRegion& region) {
  while (newest != nullptr && static_cast<unsigned long long*>(newest)[-fw_stamp] > floor) {
    const unsigned long long* words = static_cast<unsigned long long*>(newest);
    void* before = static_cast<void**>(newest)[-fw_previous];
    if (static_cast<void**>(newest)[-fw_raw] == nullptr) {
      region_release(region, words[-fw_first], words[-fw_count]);
    } else {
      KBUF_IMPL_IF_ON_HOST((heap_release(newest);))
    }
    newest = before;
  }
}

/// Debug builds: the most milliseconds the threads of a team wait for each other at a checked
/// step of an arena (`team_check`) before it aborts. A build may define it (a test of misuse
/// defines a short one).
#ifndef KBUF_WORKSPACE_CHECK_MS
#define KBUF_WORKSPACE_CHECK_MS 20000
#endif

/// A clock for the check's time bound: nanoseconds on the host, cycles on a device.
KOKKOS_INLINE_FUNCTION unsigned long long check_clock() {
#if defined(KOKKOS_ENABLE_CUDA) || defined(KOKKOS_ENABLE_HIP)
  KBUF_IMPL_IF_ON_DEVICE((return static_cast<unsigned long long>(clock64());))
#endif
  KBUF_IMPL_IF_ON_HOST((return static_cast<unsigned long long>(
                                   std::chrono::duration_cast<std::chrono::nanoseconds>(
                                       std::chrono::steady_clock::now().time_since_epoch())
                                       .count());))
  return 0;
}

/// The check's time bound in ticks of `check_clock`: a device's clock is taken as 2 GHz (a
/// slower one waits longer).
KOKKOS_INLINE_FUNCTION unsigned long long check_bound() {
  KBUF_IMPL_IF_ON_DEVICE((return 2000000ull * KBUF_WORKSPACE_CHECK_MS;))
  KBUF_IMPL_IF_ON_HOST((return 1000000ull * KBUF_WORKSPACE_CHECK_MS;))
}

/// A store ordered with everything around it (the debug check's).
KOKKOS_INLINE_FUNCTION void atomic_store_ordered(unsigned long long* p, unsigned long long v) {
  KBUF_IMPL_IF_ON_DEVICE(
      (Kokkos::memory_fence(); (void)Kokkos::atomic_exchange(p, v); Kokkos::memory_fence();))
  KBUF_IMPL_IF_ON_HOST((__atomic_store_n(p, v, __ATOMIC_SEQ_CST);))
}

/// Where the lanes of a team's debug check may take different sides of a branch. The lanes of
/// one wavefront of a GPU without independent thread scheduling (AMD's; NVIDIA's before sm_70)
/// run in lockstep: where they part, the hardware runs one side to its end with the other
/// side's lanes masked off, then the other, in an order the compiler picks. A lane that waits
/// there for a lane of the other side waits for ever. Kernels pass `NoLockstep`, which does
/// nothing; the host's tests pass a model of a wavefront (tests/support/lockstep.hpp) that runs
/// its lanes as threads and holds them the way the hardware does, so that a check that would
/// wait on a masked-off lane fails on the host too.
struct NoLockstep {
  /// The top of a loop: every lane still in it runs the iteration together.
  KOKKOS_INLINE_FUNCTION void step() const {}
  /// The lanes part: this one takes side `taken` (a branch's condition).
  KOKKOS_INLINE_FUNCTION void branch(bool taken) const { (void)taken; }
  /// The lanes meet again after the branch.
  KOKKOS_INLINE_FUNCTION void join() const {}
  /// The lane leaves the loop.
  KOKKOS_INLINE_FUNCTION void done() const {}
};

/// Debug builds: the `threads` threads of the team that holds the slot of record `r` meet there
/// and compare their arenas' signatures, through memory and atomics alone: no Kokkos barrier,
/// which a thread that made a call its team did not make (inside `Kokkos::single`,
/// `TeamThreadRange`) would enter with part of the team, and wait on forever. Returns 1 when
/// every thread came with the same signature, 0 when they came with different ones, and -1 when
/// not all of them came within `KBUF_WORKSPACE_CHECK_MS`. The record's check words are zero
/// between meetings (the generation aside).
///
/// No thread ever waits on a side of a branch that another thread of its team is not on: all
/// of them, having come, run one loop, and in each round the first to find every thread come
/// (the one whose compare-and-swap takes the count from `threads` back to zero) publishes the
/// sum and starts a new generation, inside the round, while the others pass over the same
/// lines; the next round every one of them sees it. On lanes in lockstep (`Lockstep`, above)
/// it ends whichever side of the publishing branch the hardware runs first. (kbuf 0.6.0's
/// check had the last to come publish while the others spun on a branch of their own: hipcc
/// runs the spinning side first, so on AMD GPUs they left only by the time bound.)
template <class Lockstep = NoLockstep>
KOKKOS_INLINE_FUNCTION int team_check(unsigned long long* r, unsigned long long threads,
                                      unsigned long long signature,
                                      const Lockstep& lanes = Lockstep{}) {
  unsigned long long* count = r + wr_check_count;
  unsigned long long* sum = r + wr_check_sum;
  unsigned long long* generation = r + wr_check_generation;
  unsigned long long* result = r + wr_check_result;
  const unsigned long long g = atomic_add_ordered(generation, 0);
  (void)atomic_add_ordered(sum, signature);
  (void)atomic_add_ordered(count, 1);
  const unsigned long long begin = check_clock();
  unsigned round = 0;
  int agreed = -1;
  for (;;) {
    lanes.step();
    if (atomic_add_ordered(generation, 0) != g) {
      agreed = atomic_add_ordered(result, 0) == threads * signature ? 1 : 0;
      break;
    }
    const bool publish = atomic_cas(count, threads, 0ull) == threads;
    lanes.branch(publish);
    if (publish) {
      atomic_store_ordered(result, atomic_add_ordered(sum, 0));
      atomic_store_ordered(sum, 0);
      atomic_store_ordered(generation, g + 1);
    }
    lanes.join();
    if (!publish) {
      if (check_clock() - begin > check_bound()) break;
      probe_backoff(round < 8 ? ++round : round);
    }
  }
  lanes.done();
  return agreed;
}

/// Host code, before a thread of a team that saw a misuse aborts: the first to come reports it
/// at once; the others wait a tenth of the check's time bound for its abort to end the process,
/// then go on to abort themselves.
template <class Lockstep>
inline void leave_report_to_one(unsigned long long* r, const Lockstep& lanes) {
  const bool other = r != nullptr && atomic_cas(&r[wr_check_abort], 0ull, 1ull) != 0ull;
  lanes.branch(other);
  if (other) {
    const unsigned long long begin = check_clock();
    while (check_clock() - begin < check_bound() / 10) probe_backoff(8);
  }
  lanes.join();
}

/// Debug builds: what a thread does with `team_check`'s answer `agreed` at a step of the arena
/// of record `r` (null for an arena whose check was a team broadcast): nothing when the team
/// agreed, else abort, saying why, in bounded time whatever the order of the branches. On a
/// device every thread that saw it aborts (the kernel ends at the first; a thread that waited
/// for another could wait on a lane held off). On the host one thread reports it (two in
/// `abort` at once can crash it instead); the others give it a tenth of the time bound, then
/// report it themselves.
template <class Lockstep = NoLockstep>
KOKKOS_INLINE_FUNCTION void team_check_report(unsigned long long* r, int agreed,
                                              const Lockstep& lanes = Lockstep{}) {
  if (agreed == 1) return;
  KBUF_IMPL_IF_ON_HOST((leave_report_to_one(r, lanes);))
  (void)r;
  (void)lanes;
  if (agreed < 0) {
    Kokkos::abort(
        "kbuf::Workspace::Arena: the threads of a team made different takes or frames: "
        "part of the team reached a spill, a frame's end or the arena's end and the rest did "
        "not come within KBUF_WORKSPACE_CHECK_MS (a take or frame inside Kokkos::single, "
        "TeamThreadRange, TeamVectorRange or ThreadVectorRange?): every thread and vector "
        "lane of the team must make the same calls");
  }
  Kokkos::abort(
      "kbuf::Workspace::Arena: the threads of a team made different takes or frames (a "
      "take or frame inside Kokkos::single, TeamThreadRange, TeamVectorRange or "
      "ThreadVectorRange?): every thread and vector lane of the team must make the same "
      "calls");
}

/// Check mode: a checked take is a block `[meta (one unit) | data | guard zone]`. The meta
/// holds the previous checked take's block (a chain, as for fallbacks), the take's size, its
/// index in its arena, the length of the guard zone, which starts where the data ends and
/// holds `guard_byte(i)` at its i-th byte until an overrun writes there, and its stamp (as a
/// fallback's).
enum workspace_meta : int { wm_previous, wm_nbytes, wm_index, wm_span, wm_stamp, wm_words };

KOKKOS_INLINE_FUNCTION unsigned char guard_byte(unsigned long long i) {
  return static_cast<unsigned char>(0xA5u ^ static_cast<unsigned>((i * 0x3Bu) & 0xFFu));
}

/// Writes the meta and the guard zone of a checked take whose block is at `block`.
KOKKOS_INLINE_FUNCTION void guard_write(unsigned char* block, unsigned long long unit,
                                        void* previous, unsigned long long nbytes,
                                        unsigned long long index, unsigned long long span,
                                        unsigned long long stamp) {
  unsigned long long* meta = reinterpret_cast<unsigned long long*>(block);
  meta[wm_previous] = static_cast<unsigned long long>(reinterpret_cast<std::uintptr_t>(previous));
  meta[wm_stamp] = stamp;
  meta[wm_nbytes] = nbytes;
  meta[wm_index] = index;
  meta[wm_span] = span;
  unsigned char* guard = block + unit + nbytes;
  for (unsigned long long i = 0; i < span; ++i) guard[i] = guard_byte(i);
}

/// What checking the guard zones of a chain found: the takes whose zone was written, and the
/// first of them (from the newest back): its index and the bytes written past its end.
struct GuardFindings {
  unsigned long long overruns = 0;
  unsigned long long index = 0;
  unsigned long long past = 0;
};

/// The newest checked take's block of a chain whose stamp is not above `floor` (null for none).
KOKKOS_INLINE_FUNCTION void* guard_left(void* newest, unsigned long long floor) {
  while (newest != nullptr &&
         reinterpret_cast<const unsigned long long*>(newest)[wm_stamp] > floor) {
    newest = reinterpret_cast<void*>(static_cast<std::uintptr_t>(
        reinterpret_cast<const unsigned long long*>(newest)[wm_previous]));
  }
  return newest;
}

/// Checks the checked takes of a chain from `newest` back, while their stamp is above `floor`.
KOKKOS_INLINE_FUNCTION GuardFindings guard_check(void* newest, unsigned long long floor,
                                                 unsigned long long unit) {
  GuardFindings f;
  while (newest != nullptr &&
         reinterpret_cast<const unsigned long long*>(newest)[wm_stamp] > floor) {
    unsigned char* block = static_cast<unsigned char*>(newest);
    const unsigned long long* meta = reinterpret_cast<const unsigned long long*>(block);
    const unsigned char* guard = block + unit + meta[wm_nbytes];
    unsigned long long past = 0;
    for (unsigned long long i = meta[wm_span]; i-- > 0;) {
      if (guard[i] != guard_byte(i)) {
        past = i + 1;
        break;
      }
    }
    if (past != 0) {
      ++f.overruns;
      f.index = meta[wm_index];
      f.past = past;
    }
    newest = reinterpret_cast<void*>(static_cast<std::uintptr_t>(meta[wm_previous]));
  }
  return f;
}

/// Records the first overrun of a workspace, once (the header's flag decides), and in debug
/// builds prints it with the workspace's label.
KOKKOS_INLINE_FUNCTION void guard_report(unsigned long long* header, const GuardFindings& f,
                                         unsigned long long span, bool print) {
  if (f.overruns == 0) return;
  if (atomic_cas(&header[wh_first], 0ull, 1ull) != 0ull) return;
  header[wh_first_index] = f.index;
  header[wh_first_past] = f.past;
  if (!print) return;
  const char* label = reinterpret_cast<const char*>(&header[wh_label]);
  if (f.past >= span) {
    printf(
        "kbuf::Workspace '%s': take %llu of an arena was written past its end: at least %llu "
        "bytes (its whole guard zone)\n",
        label, f.index, f.past);
  } else {
    printf("kbuf::Workspace '%s': take %llu of an arena was written past its end: %llu bytes\n",
           label, f.index, f.past);
  }
}

}  // namespace Impl
}  // namespace kbuf

#endif  // KBUF_IMPL_WORKSPACE_DEVICE_HPP
