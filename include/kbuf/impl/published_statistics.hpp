#ifndef KBUF_IMPL_PUBLISHED_STATISTICS_HPP
#define KBUF_IMPL_PUBLISHED_STATISTICS_HPP

// How an AllocatorPool reads its allocators' statistics from any thread: `Statistics` as an array
// of words, published by the allocator's owner under a single-writer sequence lock.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include <kbuf/impl/macros.hpp>

#include <kbuf/statistics.hpp>

namespace kbuf {
namespace Impl {

/// `Statistics` as an array of words: what a pool publishes and sums. Every member is a
/// `std::size_t` counter summed over allocators, except the peaks, which take the largest.
constexpr std::size_t statistics_words = sizeof(Statistics) / sizeof(std::size_t);
static_assert(std::is_trivially_copyable<Statistics>::value &&
                  sizeof(Statistics) % sizeof(std::size_t) == 0,
              "kbuf::AllocatorPool: Statistics must consist of std::size_t members");

inline bool statistics_word_is_peak(std::size_t word) noexcept {
  return word * sizeof(std::size_t) == offsetof(Statistics, peak_used) ||
         word * sizeof(std::size_t) == offsetof(Statistics, peak_live);
}

/// Statistics published by one thread and read by others: a sequence lock with a single
/// writer (the allocator's owner). Every access is atomic, so readers never race (and
/// ThreadSanitizer agrees); a reader retries while a write is under way, so it never sees a
/// torn snapshot. The writer does no read-modify-write: it alone changes the sequence number.
class PublishedStatistics {
 public:
  /// Owner thread only. Inlined and unrolled (one store per word, straight from the caller's
  /// registers): `AllocatorPool::local()` calls it every time, and a loop of atomic stores
  /// through a copy on the stack was most of that call's cost.
  KBUF_IMPL_ALWAYS_INLINE void publish(const Statistics& s) noexcept {
    std::size_t words[statistics_words];
    std::memcpy(words, &s, sizeof words);
    const std::uint64_t seq = seq_.load(std::memory_order_relaxed);
    seq_.store(seq + 1, std::memory_order_relaxed);  // odd: a write is under way
    // release: a reader that sees any new word also sees the odd sequence number after it
    store_words(words, std::make_index_sequence<statistics_words>{});
    seq_.store(seq + 2, std::memory_order_release);
  }

  /// Any thread: the last complete snapshot.
  Statistics read() const noexcept {
    std::size_t words[statistics_words];
    for (;;) {
      const std::uint64_t before = seq_.load(std::memory_order_acquire);
      if ((before & 1) != 0) continue;
      for (std::size_t i = 0; i < statistics_words; ++i) {
        words[i] = words_[i].load(std::memory_order_acquire);
      }
      if (seq_.load(std::memory_order_relaxed) == before) break;
    }
    Statistics s;
    std::memcpy(&s, words, sizeof words);
    return s;
  }

 private:
  template <std::size_t... I>
  KBUF_IMPL_ALWAYS_INLINE void store_words(const std::size_t* words,
                                           std::index_sequence<I...>) noexcept {
    (words_[I].store(words[I], std::memory_order_release), ...);
  }

  std::atomic<std::uint64_t> seq_{0};
  std::atomic<std::size_t> words_[statistics_words] = {};
};

}  // namespace Impl
}  // namespace kbuf

#endif  // KBUF_IMPL_PUBLISHED_STATISTICS_HPP
