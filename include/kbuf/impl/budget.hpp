#ifndef KBUF_IMPL_BUDGET_HPP
#define KBUF_IMPL_BUDGET_HPP

/// @file
/// Memory limits: the combined limit that the allocators of one `kbuf::AllocatorPool` share, and
/// the largest buffer a limit leaves room for. Not part of the API.

#include <atomic>
#include <cstddef>
#include <limits>
#include <mutex>
#include <string>

#include <kbuf/impl/errors.hpp>
#include <kbuf/sizes.hpp>

namespace kbuf {
namespace Impl {

/// Bytes that several allocators hold together against one limit. Allocators take bytes in
/// their cold paths only (buffer growth, fallbacks) and give them back when they free memory.
/// The bytes still to be had are one atomic word, so taking and giving back are one lock-free
/// read-modify-write each and never race: the total never passes the limit. Changing the limit
/// takes a mutex so that it sees a consistent total.
class SharedBudget {
 public:
  static constexpr std::size_t no_limit = std::numeric_limits<std::size_t>::max();

  SharedBudget() = default;
  SharedBudget(const SharedBudget&) = delete;
  SharedBudget& operator=(const SharedBudget&) = delete;

  [[nodiscard]] std::size_t limit() const noexcept {
    return limit_.load(std::memory_order_acquire);
  }

  /// Bytes held by all allocators together.
  [[nodiscard]] std::size_t held() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return limit_.load(std::memory_order_relaxed) - remaining_.load(std::memory_order_acquire);
  }

  /// Bytes that may still be taken (a snapshot).
  [[nodiscard]] std::size_t available() const noexcept {
    return remaining_.load(std::memory_order_acquire);
  }

  /// Takes `bytes` if the total stays within the limit; false (and nothing taken) otherwise.
  bool try_take(std::size_t bytes) noexcept {
    std::size_t r = remaining_.load(std::memory_order_relaxed);
    do {
      if (bytes > r) return false;
    } while (!remaining_.compare_exchange_weak(r, r - bytes, std::memory_order_acq_rel,
                                               std::memory_order_relaxed));
    return true;
  }

  /// Gives back `bytes` taken earlier.
  void give_back(std::size_t bytes) noexcept {
    if (bytes != 0) remaining_.fetch_add(bytes, std::memory_order_acq_rel);
  }

  /// Sets the limit; `call` and `owner` name it in the error.
  /// @throws kbuf::logic_error if more than `nbytes` is held now; nothing changes then.
  void set_limit(std::size_t nbytes, const char* call, const std::string& owner) {
    std::lock_guard<std::mutex> lock(mutex_);
    const std::size_t old_limit = limit_.load(std::memory_order_relaxed);
    std::size_t r = remaining_.load(std::memory_order_relaxed);
    std::size_t held = 0;
    do {
      held = old_limit - r;
      if (held > nbytes) {
        throw_logic_error(call, "(", nbytes, ") on ", owner, ": its allocators hold ", held,
                          " bytes now; a limit cannot be set below what is held (release "
                          "fallbacks or resize buffers first)");
      }
    } while (!remaining_.compare_exchange_weak(r, nbytes - held, std::memory_order_acq_rel,
                                               std::memory_order_relaxed));
    limit_.store(nbytes, std::memory_order_release);
  }

 private:
  mutable std::mutex mutex_;  // serialises set_limit and held() against each other
  std::atomic<std::size_t> limit_{no_limit};
  std::atomic<std::size_t> remaining_{no_limit};  // limit_ minus the bytes held
};

/// The largest value `buffer_size` returns that is at most `n`: whole pages from a page up, a
/// power of two below.
inline std::size_t buffer_size_floor(std::size_t n) noexcept {
  const std::size_t page = page_size();
  if (n >= page) return n / page * page;
  std::size_t p = 1;
  if (n == 0) return 0;
  while (p <= n / 2) p *= 2;
  return p;
}

}  // namespace Impl
}  // namespace kbuf

#endif  // KBUF_IMPL_BUDGET_HPP
