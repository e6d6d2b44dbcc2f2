#ifndef KBUF_IMPL_WORKSPACE_DEVICE_HPP
#define KBUF_IMPL_WORKSPACE_DEVICE_HPP

/// @file
/// What `kbuf::Workspace`'s arenas use inside kernels: the layout of a workspace's header and of
/// its per-slot records, the needs' histogram buckets, the atomics, the claims of slots and
/// lanes (with a back-off that lets the holder run, on the host and on a device), the fallback
/// allocations and the guard zones of check mode. Not part of the API.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <type_traits>

#include <Kokkos_Core.hpp>

namespace kbuf {
namespace Impl {

/// The counters of a record, one `unsigned long long` each. Every slot has one, which only the
/// slot's holder writes (no atomic): takes, arenas and the rest are summed by `finish()` on the
/// host. The header holds one more, shared by the arenas that hold no slot (atomics).
enum workspace_record : int {
  wr_takes,
  wr_arenas,
  wr_spills,
  wr_spill_bytes,
  wr_fallbacks,
  wr_fallback_bytes,
  wr_failed,
  wr_overruns,
  wr_spilling,        // arenas that spilled
  wr_missed,          // spilling arenas that found every lane taken
  wr_unslotted,       // arenas that held no slot
  wr_peak_need,       // the most one arena needed at once (max)
  wr_spill_peak,      // the most one arena asked of a lane at once (max)
  wr_pending_bucket,  // a histogram entry not yet added to the header's: bucket + 1 (0: none),
  wr_pending_count,   // its arenas,
  wr_pending_max,     // and their largest need
  wr_words
};

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
/// operations) and which ThreadSanitizer understands; in device code, Kokkos'.
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
template <class T>
KOKKOS_INLINE_FUNCTION T atomic_cas(T* p, T expected, T desired) {
  return Kokkos::atomic_compare_exchange(p, expected, desired);
}
template <class T>
KOKKOS_INLINE_FUNCTION T atomic_add(T* p, T v) {
  return Kokkos::atomic_fetch_add(p, v);
}
template <class T>
KOKKOS_INLINE_FUNCTION void atomic_max(T* p, T v) {
  (void)Kokkos::atomic_fetch_max(p, v);
}
template <class T>
KOKKOS_INLINE_FUNCTION void atomic_store(T* p, T v) {
  Kokkos::memory_fence();
  (void)Kokkos::atomic_exchange(p, v);
}
template <class T>
KOKKOS_INLINE_FUNCTION T atomic_load(T* p) {
  return *static_cast<volatile T*>(p);
}
KOKKOS_INLINE_FUNCTION void acquire_fence() {
  Kokkos::memory_fence();
}
#else
template <class T>
KOKKOS_INLINE_FUNCTION T atomic_cas(T* p, T expected, T desired) {
  __atomic_compare_exchange_n(p, &expected, desired, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
  return expected;  // the value seen: `expected` itself on success
}
template <class T>
KOKKOS_INLINE_FUNCTION T atomic_add(T* p, T v) {
  return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
}
template <class T>
KOKKOS_INLINE_FUNCTION void atomic_max(T* p, T v) {
  T old = __atomic_load_n(p, __ATOMIC_RELAXED);
  while (old < v &&
         !__atomic_compare_exchange_n(p, &old, v, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
}
template <class T>
KOKKOS_INLINE_FUNCTION void atomic_store(T* p, T v) {
  __atomic_store_n(p, v, __ATOMIC_RELEASE);
}
template <class T>
KOKKOS_INLINE_FUNCTION T atomic_load(T* p) {
  return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}
KOKKOS_INLINE_FUNCTION void acquire_fence() {}  // atomic_cas acquires already
#endif

#if !defined(__CUDA_ARCH__) && !defined(__HIP_DEVICE_COMPILE__)
/// The slot the calling host thread claimed last (any workspace; a hint only), or SIZE_MAX.
inline std::size_t& last_slot() noexcept {
  static thread_local std::size_t slot = static_cast<std::size_t>(-1);
  return slot;
}
#endif

/// A pause between rounds of a probe, so that a holder can run and give its slot back: the host
/// thread yields; a CUDA thread sleeps (longer each round, up to about 8 microseconds: the probe
/// is bounded in time, not only in iterations); an AMD wavefront sleeps too (`s_sleep`), so that
/// other wavefronts on its compute unit are scheduled.
KOKKOS_INLINE_FUNCTION void probe_backoff(unsigned round) {
#if defined(__CUDA_ARCH__)
#if __CUDA_ARCH__ >= 700
  __nanosleep(32u << (round < 8u ? round : 8u));
#else
  (void)round;
#endif
#elif defined(__HIP_DEVICE_COMPILE__)
  (void)round;
  __builtin_amdgcn_s_sleep(8);
#else
  (void)round;
  std::this_thread::yield();
#endif
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

/// Frees a slot (or a lane) `claim_slot` gave.
KOKKOS_INLINE_FUNCTION void release_slot(unsigned int* flags, int slot) {
  atomic_store(&flags[static_cast<std::size_t>(slot) * flag_stride], 0u);  // after the holder's
}

/// Where a team starts probing for a slot: on the host, the slot its thread held last (a host
/// thread runs one team at a time, so that slot is almost always free again, and threads do not
/// probe each other's); on a device, and at a thread's first claim, the team's league rank.
KOKKOS_INLINE_FUNCTION std::size_t slot_hint(int league_rank) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  return static_cast<std::size_t>(league_rank);
#else
  const std::size_t last = last_slot();
  return last != static_cast<std::size_t>(-1) ? last : static_cast<std::size_t>(league_rank);
#endif
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

/// Fallback allocations inside kernels: the heap of the device (`malloc` in device code: CUDA's
/// and HIP's device heap) or of the host. A block is `bytes` aligned to `unit` (a power of two,
/// at least 32), with three words in front of it: the address `malloc` returned, the block
/// before it in its arena's chain, and the arena's event count when it was made (`stamp`), so
/// that a frame frees the blocks made after it began without keeping a list of its own. Null
/// when the heap is out of memory.
KOKKOS_INLINE_FUNCTION void* fallback_take(unsigned long long bytes, unsigned long long unit,
                                           void* previous, unsigned long long stamp) {
  const unsigned long long room = bytes + unit + 3 * sizeof(void*);
  if (room < bytes) return nullptr;
  void* raw = ::malloc(static_cast<std::size_t>(room));
  if (raw == nullptr) return nullptr;
  const std::uintptr_t first = reinterpret_cast<std::uintptr_t>(raw) + 3 * sizeof(void*);
  const std::uintptr_t q = (first + unit - 1) / unit * unit;
  void** words = reinterpret_cast<void**>(q);
  words[-1] = raw;
  words[-2] = previous;
  reinterpret_cast<unsigned long long*>(q)[-3] = stamp;
  return reinterpret_cast<void*>(q);
}

/// The newest fallback block of a chain whose stamp is not above `floor` (null for none): what
/// is left once the blocks made after that count are freed.
KOKKOS_INLINE_FUNCTION void* fallback_left(void* newest, unsigned long long floor) {
  while (newest != nullptr && reinterpret_cast<unsigned long long*>(newest)[-3] > floor) {
    newest = static_cast<void**>(newest)[-2];
  }
  return newest;
}

/// Frees the fallback blocks of a chain from `newest` back, while their stamp is above `floor`
/// (all of them for a floor of 0).
KOKKOS_INLINE_FUNCTION void fallback_release(void* newest, unsigned long long floor) {
  while (newest != nullptr && reinterpret_cast<unsigned long long*>(newest)[-3] > floor) {
    void** words = static_cast<void**>(newest);
    void* before = words[-2];
    ::free(words[-1]);
    newest = before;
  }
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
