#ifndef KBUF_MPI_HPP
#define KBUF_MPI_HPP

/// @file
/// kbuf in MPI programs. Include it where MPI is used (`kbuf/kbuf.hpp` does not: kbuf's core
/// knows nothing of MPI) and link MPI yourself (CMake: `MPI::MPI_CXX`). It adds:
/// - `kbuf::mpi::reduce_statistics`: an allocator's or a pool's counters reduced over a
///   communicator to min / max / sum and the rank with the peak, the only collective kbuf has;
/// - `kbuf::mpi::RequestGuard`: the nonblocking requests of a set of temporaries, completed
///   before the temporaries can be released (the halo exchange's guard);
/// - `kbuf::mpi::shared_indices` and `kbuf::mpi::gather_ordered`: independent jobs shared
///   round-robin among the ranks, and their output lines gathered on one rank in job order;
/// - `kbuf::mpi::share_sizes`, `load_sizes` and `save_sizes`: one sizes file for all ranks
///   (kbuf/sizes_file.hpp), read once and written once, the ranks' sizes combined.
///
/// Every call needs MPI initialised and not finalised (`kbuf::logic_error` otherwise). A failed
/// MPI call (with an error handler that returns, such as `MPI_ERRORS_RETURN`) raises
/// `kbuf::mpi::error`. See docs/mpi.md for GPU-aware MPI, staging and one rank per GPU.

#include <mpi.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <iomanip>
#include <limits>
#include <ostream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <Kokkos_Core.hpp>

#include <kbuf/allocator_pool.hpp>
#include <kbuf/buffer_allocator.hpp>
#include <kbuf/config.hpp>
#include <kbuf/debug.hpp>
#include <kbuf/errors.hpp>
#include <kbuf/impl/errors.hpp>
#include <kbuf/impl/macros.hpp>
#include <kbuf/impl/mpi_support.hpp>
#include <kbuf/impl/sizes_file_impl.hpp>  // one sizes file for all ranks
#include <kbuf/sizes_file.hpp>
#include <kbuf/statistics.hpp>

namespace kbuf {
/// kbuf's MPI layer (`kbuf/mpi.hpp`).
namespace mpi {

/// An MPI call returned an error (only seen with an error handler that returns, such as
/// `MPI_ERRORS_RETURN`; MPI's default handler stops the program). The message names the kbuf
/// call, the MPI call and MPI's text for the error.
class error : public std::runtime_error {
 public:
  /// An exception whose `what()` is `what`; `code` is the MPI return code.
  error(const std::string& what, int code) : std::runtime_error(what), code_(code) {}
  /// The MPI return code.
  [[nodiscard]] int code() const noexcept { return code_; }

 private:
  int code_;
};

}  // namespace mpi

namespace Impl {
[[noreturn]] KBUF_IMPL_COLD inline void throw_mpi_error(const char* call, const char* mpi_call,
                                                        int code) {
  throw kbuf::mpi::error(concat(call, ": ", mpi_call, " failed: ", mpi_error_string(code)), code);
}
/// Raises kbuf::mpi::error naming `call` and `mpi_call` unless `code` is MPI_SUCCESS.
inline void mpi_check(int code, const char* call, const char* mpi_call) {
  if (KBUF_IMPL_UNLIKELY(code != MPI_SUCCESS)) throw_mpi_error(call, mpi_call, code);
}

/// The calling rank of `comm` and how many ranks it has (`call` names the caller in an error).
inline std::pair<int, int> rank_and_size(MPI_Comm comm, const char* call) {
  std::pair<int, int> r{0, 1};
  mpi_check(MPI_Comm_rank(comm, &r.first), call, "MPI_Comm_rank");
  mpi_check(MPI_Comm_size(comm, &r.second), call, "MPI_Comm_size");
  return r;
}
}  // namespace Impl

namespace mpi {

// ---- Statistics over ranks -----------------------------------------------------------------

/// `kbuf::Statistics` reduced over the ranks of a communicator: each counter's smallest,
/// largest and summed value, and the rank whose `peak_used` is the largest.
struct ReducedStatistics {
  Statistics min;     ///< each counter's smallest value over the ranks
  Statistics max;     ///< each counter's largest value over the ranks
  Statistics sum;     ///< each counter summed over the ranks (peaks too: memory of all ranks)
  int ranks = 0;      ///< ranks in the communicator
  int peak_rank = 0;  ///< the lowest rank whose `peak_used` equals `max.peak_used`
};

/// Reduces `local` (this rank's counters) over `comm`: collective, every rank of `comm` must
/// call it, and every rank gets the result. Three `MPI_Allreduce` calls of a few words each;
/// nothing else in kbuf communicates, so it is the user's to call, off the hot path (after a
/// run, for the report).
/// @throws kbuf::logic_error if MPI is not running.
/// @throws kbuf::mpi::error if an MPI call fails.
inline ReducedStatistics reduce_statistics(const Statistics& local, MPI_Comm comm) {
  constexpr const char* call = "kbuf::mpi::reduce_statistics";
  constexpr std::size_t words = sizeof(Statistics) / sizeof(std::size_t);
  static_assert(std::is_trivially_copyable<Statistics>::value &&
                    sizeof(Statistics) == words * sizeof(std::size_t),
                "kbuf::mpi::reduce_statistics: Statistics must consist of std::size_t members");
  Impl::expect_mpi_running(call);
  ReducedStatistics r;
  Impl::mpi_check(MPI_Comm_size(comm, &r.ranks), call, "MPI_Comm_size");
  int rank = 0;
  Impl::mpi_check(MPI_Comm_rank(comm, &rank), call, "MPI_Comm_rank");

  // One MAX over each word and its complement: the largest complement is the smallest word.
  std::size_t mine[2 * words];
  std::size_t out[2 * words];
  std::memcpy(mine, &local, sizeof(Statistics));
  for (std::size_t i = 0; i < words; ++i) mine[words + i] = ~mine[i];
  Impl::mpi_check(
      MPI_Allreduce(mine, out, static_cast<int>(2 * words), Impl::mpi_size_t(), MPI_MAX, comm),
      call, "MPI_Allreduce (max)");
  std::memcpy(static_cast<void*>(&r.max), out, sizeof(Statistics));
  for (std::size_t i = 0; i < words; ++i) out[words + i] = ~out[words + i];
  std::memcpy(static_cast<void*>(&r.min), out + words, sizeof(Statistics));
  Impl::mpi_check(
      MPI_Allreduce(mine, out, static_cast<int>(words), Impl::mpi_size_t(), MPI_SUM, comm), call,
      "MPI_Allreduce (sum)");
  std::memcpy(static_cast<void*>(&r.sum), out, sizeof(Statistics));
  const int candidate = local.peak_used == r.max.peak_used ? rank : std::numeric_limits<int>::max();
  Impl::mpi_check(MPI_Allreduce(&candidate, &r.peak_rank, 1, MPI_INT, MPI_MIN, comm), call,
                  "MPI_Allreduce (peak rank)");
  return r;
}

/// Reduces the counters of `alloc` over `comm`, as `reduce_statistics(alloc.statistics(), comm)`.
template <class MemorySpace>
ReducedStatistics reduce_statistics(const BufferAllocator<MemorySpace>& alloc, MPI_Comm comm) {
  return reduce_statistics(alloc.statistics(), comm);
}

/// Reduces the counters of `pool` (summed over its allocators, peaks the largest) over `comm`:
/// those its threads published, each at its last `local()` call or exit.
template <class MemorySpace>
ReducedStatistics reduce_statistics(const AllocatorPool<MemorySpace>& pool, MPI_Comm comm) {
  return reduce_statistics(pool.statistics(), comm);
}

/// A table, one counter a line: `  temporaries      min 120  max 130  sum 370`, under a heading
/// that names the number of ranks and the rank with the peak. Where a rank's buffer grows in
/// place (`reserved_bytes` not 0 on some rank), three more rows: grown in place, reserved and
/// committed bytes.
inline std::ostream& operator<<(std::ostream& os, const ReducedStatistics& r) {
  struct Row {
    const char* name;
    std::size_t Statistics::*member;
  };
  static const Row rows[] = {{"temporaries", &Statistics::temporaries},
                             {"fallbacks", &Statistics::fallbacks},
                             {"fallback bytes", &Statistics::fallback_bytes},
                             {"regrows", &Statistics::regrows},
                             {"resets", &Statistics::resets},
                             {"fences", &Statistics::fences},
                             {"peak used bytes", &Statistics::peak_used},
                             {"peak live", &Statistics::peak_live},
                             {"limit refusals", &Statistics::limit_refusals},
                             {"grown in place", &Statistics::grown_in_place},
                             {"reserved bytes", &Statistics::reserved_bytes},
                             {"committed bytes", &Statistics::committed_bytes}};
  os << "kbuf statistics over " << r.ranks << (r.ranks == 1 ? " rank" : " ranks")
     << " (largest peak used on rank " << r.peak_rank << "):\n";
  for (const Row& row : rows) {
    if (row.member == &Statistics::grown_in_place && r.max.reserved_bytes == 0) break;
    os << "  " << std::left << std::setw(16) << row.name << std::right << " min " << std::setw(10)
       << r.min.*row.member << "  max " << std::setw(10) << r.max.*row.member << "  sum "
       << std::setw(12) << r.sum.*row.member << '\n';
  }
  return os;
}

// ---- Requests of temporaries ---------------------------------------------------------------

/// The nonblocking requests of a set of temporaries, completed before the temporaries can be
/// released: a halo exchange's guard.
///
/// A buffer allocator hands released memory to the next temporary at once. A temporary given to
/// `MPI_Irecv` or `MPI_Isend` must therefore stay allocated until its request completes; a scope
/// that ends first (an early return, an exception between the post and the `MPI_Waitall`) lets
/// MPI write into, or send from, whatever is allocated there next, silently. A `RequestGuard`
/// opens a scope of its allocator when it is made and ends it when it is destroyed, after its
/// requests are complete:
/// @code
/// for (int step = 0; step < steps; ++step) {
///   kbuf::mpi::RequestGuard halo(alloc);          // a scope of alloc, ended by ~RequestGuard
///   auto send_left = halo.allocate<double*>(ny);   // temporaries of that scope
///   auto recv_left = halo.allocate<double*>(ny);
///   pack(u, send_left);
///   halo.irecv(recv_left, left, 0, comm);
///   halo.isend(send_left, left, 0, comm);
///   halo.wait();                                   // MPI_Waitall
///   unpack(recv_left, u);
/// }                                                // the temporaries are released here
/// @endcode
/// If the block is left with requests pending, the destructor completes them (`MPI_Waitall`)
/// before the scope releases the temporaries; with debug checks (`KBUF_ENABLE_DEBUG`) it stops
/// the program instead, with a message naming the allocator and the number of requests pending,
/// because a path that skips the wait is a bug to fix, not to wait out.
///
/// Temporaries of an enclosing scope (allocated before the guard) may be posted too: their
/// scope ends after the guard. Those of a scope nested inside the guard's must not: `wait()` and
/// `test()` find them released (`BufferAllocator::is_live`) and raise `kbuf::logic_error` once
/// the requests are complete. Views that the allocator does not hold (managed Views) are posted
/// as they are and not checked.
///
/// Not copyable, not movable; like its allocator, one host thread uses it.
template <class MemorySpace = default_memory_space>
class RequestGuard {
 public:
  /// The allocator whose temporaries the guard's requests use.
  using allocator_type = BufferAllocator<MemorySpace>;
  /// The type of the temporaries `allocate` returns.
  template <class DataType, class Layout = Kokkos::LayoutRight>
  using view = typename allocator_type::template view<DataType, Layout>;

  /// Opens a scope of `alloc` that the guard ends when it is destroyed, after its requests.
  /// `expected_requests` reserves room, so that posting that many allocates nothing.
  /// @throws kbuf::logic_error if MPI is not running.
  explicit RequestGuard(allocator_type& alloc, std::size_t expected_requests = 8)
      : alloc_(&alloc), scope_(checked_scope(alloc)) {
    requests_.reserve(expected_requests);
    memory_.reserve(expected_requests);
  }

  RequestGuard(const RequestGuard&) = delete;
  RequestGuard(RequestGuard&&) = delete;
  RequestGuard& operator=(const RequestGuard&) = delete;
  RequestGuard& operator=(RequestGuard&&) = delete;

  /// Completes the pending requests (`MPI_Waitall`; errors are ignored, destructors never throw)
  /// and then ends the guard's scope, releasing every temporary allocated since the guard was
  /// made. With `KBUF_ENABLE_DEBUG`, a guard destroyed with requests pending stops the program
  /// through `Kokkos::abort` with a message naming the allocator and the pending count.
  ~RequestGuard() {
    if (!requests_.empty()) {
#if KBUF_ENABLE_DEBUG
      Impl::debug_abort(Impl::concat(
          "kbuf::mpi::RequestGuard on allocator '", alloc_->label(), "' destroyed with ",
          Impl::count_of{requests_.size(), "request", "requests"},
          " pending (a return or an exception skipped wait()); its scope would release "
          "temporaries that MPI may still read or write"));
#else
      MPI_Waitall(static_cast<int>(requests_.size()), requests_.data(), MPI_STATUSES_IGNORE);
#endif
    }
  }

  /// One temporary of the guard's scope: `allocator().allocate<DataType, Layout>(extents...)`.
  template <class DataType, class Layout = Kokkos::LayoutRight, class... Extents>
  view<DataType, Layout> allocate(Extents... extents) {
    return alloc_->template allocate<DataType, Layout>(extents...);
  }

  /// Posts `MPI_Irecv` into all of `buffer` (contiguous; arithmetic and Kokkos::complex
  /// elements travel as their MPI type, others as bytes) from `source` with `tag` on `comm`.
  /// @throws kbuf::logic_error if `buffer` is not contiguous or too large for one message.
  /// @throws kbuf::mpi::error if `MPI_Irecv` fails (nothing is pending for it then).
  template <class View>
  void irecv(const View& buffer, int source, int tag, MPI_Comm comm) {
    static_assert(!std::is_const<typename View::value_type>::value,
                  "kbuf::mpi::RequestGuard::irecv: the buffer must be writable");
    post(buffer, "kbuf::mpi::RequestGuard::irecv", "MPI_Irecv",
         [&](const Impl::mpi_message& m, MPI_Request* r) {
           return MPI_Irecv(m.data, m.count, m.datatype, source, tag, comm, r);
         });
  }

  /// Posts `MPI_Isend` of all of `buffer` to `dest` with `tag` on `comm` (as `irecv`).
  /// @throws kbuf::logic_error if `buffer` is not contiguous or too large for one message.
  /// @throws kbuf::mpi::error if `MPI_Isend` fails (nothing is pending for it then).
  template <class View>
  void isend(const View& buffer, int dest, int tag, MPI_Comm comm) {
    post(buffer, "kbuf::mpi::RequestGuard::isend", "MPI_Isend",
         [&](const Impl::mpi_message& m, MPI_Request* r) {
           return MPI_Isend(m.data, m.count, m.datatype, dest, tag, comm, r);
         });
  }

  /// A request slot for a nonblocking call the caller makes itself over the memory of `buffer`
  /// (a derived datatype, `MPI_Irsend`, a persistent request started with `MPI_Start`):
  /// `MPI_Irecv(v.data(), n, type, src, tag, comm, guard.request_for(v))`. The pointer is valid
  /// until the next post or slot; the guard then owns the request. A slot the call does not
  /// fill stays `MPI_REQUEST_NULL`, which waiting skips.
  template <class View>
  MPI_Request* request_for(const View& buffer) {
    static_assert(Kokkos::is_view<View>::value,
                  "kbuf::mpi::RequestGuard::request_for: the buffer must be a Kokkos::View");
    const std::size_t bytes = Impl::view_bytes_touched(buffer);
    // Only memory the allocator holds now can be released under the guard's requests.
    const bool held = bytes != 0 && buffer.data() != nullptr && alloc_->is_live(buffer);
    memory_.push_back({held ? static_cast<const void*>(buffer.data()) : nullptr, bytes});
    requests_.push_back(MPI_REQUEST_NULL);
    return &requests_.back();
  }

  /// Completes every pending request (`MPI_Waitall`). Afterwards nothing is pending.
  /// @throws kbuf::logic_error once they are complete, if the memory of a request was
  /// released while it was pending (a scope or reset inside the guard's scope); MPI may have
  /// written into memory handed out again.
  /// @throws kbuf::mpi::error if `MPI_Waitall` fails.
  void wait() {
    constexpr const char* call = "kbuf::mpi::RequestGuard::wait";
    if (requests_.empty()) return;
    const std::size_t released = released_count();
    const std::size_t n = requests_.size();
    const int rc = MPI_Waitall(static_cast<int>(n), requests_.data(), MPI_STATUSES_IGNORE);
    requests_.clear();
    memory_.clear();
    Impl::mpi_check(rc, call, "MPI_Waitall");
    if (KBUF_IMPL_UNLIKELY(released != 0)) refuse_released(call, released, n);
  }

  /// True, and nothing pending any more, when every pending request is complete
  /// (`MPI_Testall`); false and nothing changed otherwise.
  /// @throws kbuf::logic_error and kbuf::mpi::error as `wait()`.
  bool test() {
    constexpr const char* call = "kbuf::mpi::RequestGuard::test";
    if (requests_.empty()) return true;
    const std::size_t released = released_count();
    const std::size_t n = requests_.size();
    int done = 0;
    Impl::mpi_check(MPI_Testall(static_cast<int>(n), requests_.data(), &done, MPI_STATUSES_IGNORE),
                    call, "MPI_Testall");
    if (done == 0) return false;
    requests_.clear();
    memory_.clear();
    if (KBUF_IMPL_UNLIKELY(released != 0)) refuse_released(call, released, n);
    return true;
  }

  /// Requests posted (or slots handed out) since the last completed `wait()` or `test()`.
  [[nodiscard]] std::size_t pending() const noexcept {
    return requests_.size();
  }

  /// The allocator of the guard's scope.
  [[nodiscard]] allocator_type& allocator() const noexcept {
    return *alloc_;
  }

 private:
  struct Memory {
    const void* data;  // nullptr: memory the allocator did not hold when it was posted
    std::size_t bytes;
  };

  // Posts `mpi_call(message, request slot)` over all of `buffer` (`what` names it).
  template <class View, class Call>
  void post(const View& buffer, const char* call, const char* what, Call mpi_call) {
    const Impl::mpi_message m = Impl::message_of(buffer, call);
    MPI_Request* r = request_for(buffer);
    const int rc = mpi_call(m, r);
    if (KBUF_IMPL_UNLIKELY(rc != MPI_SUCCESS)) drop_last_and_throw(call, what, rc);
  }

  // A post failed: its slot holds no request.
  [[noreturn]] KBUF_IMPL_COLD void drop_last_and_throw(const char* call, const char* mpi_call,
                                                       int code) {
    requests_.pop_back();
    memory_.pop_back();
    Impl::throw_mpi_error(call, mpi_call, code);
  }

  static typename allocator_type::Scope checked_scope(allocator_type& alloc) {
    Impl::expect_mpi_running("kbuf::mpi::RequestGuard(alloc)");
    return alloc.scope();
  }

  // Pending requests whose memory the allocator no longer holds.
  std::size_t released_count() const noexcept {
    using bytes_view = Kokkos::View<const unsigned char*, MemorySpace, Kokkos::MemoryUnmanaged>;
    std::size_t n = 0;
    for (const Memory& m : memory_) {
      if (m.data != nullptr &&
          !alloc_->is_live(bytes_view(static_cast<const unsigned char*>(m.data), m.bytes))) {
        ++n;
      }
    }
    return n;
  }

  [[noreturn]] KBUF_IMPL_COLD void refuse_released(const char* call, std::size_t released,
                                                   std::size_t pending) const {
    Impl::throw_logic_error(
        call, "() on allocator '", alloc_->label(), "': the memory of ", released, " of ",
        Impl::count_of{pending, "pending request", "pending requests"},
        " was released before they completed (a scope or reset inside the guard's scope); MPI "
        "may have written into memory handed out again. Allocate the temporaries through the "
        "guard, or before it");
  }

  allocator_type* alloc_;
  typename allocator_type::Scope scope_;  // ended after the destructor's wait
  std::vector<MPI_Request> requests_;     // pending, in posting order
  std::vector<Memory> memory_;            // the memory of each pending request
};

// ---- Jobs shared among ranks ---------------------------------------------------------------

/// The jobs of `0, 1, ..., n - 1` that the calling rank of `comm` takes when `n` independent
/// jobs are shared round-robin: `rank, rank + size, rank + 2 size, ...` (ascending). Not
/// collective. With more ranks than jobs, some ranks take none.
/// @throws kbuf::logic_error if MPI is not running.
inline std::vector<std::size_t> shared_indices(std::size_t n, MPI_Comm comm) {
  constexpr const char* call = "kbuf::mpi::shared_indices";
  Impl::expect_mpi_running(call);
  const auto [rank, size] = Impl::rank_and_size(comm, call);
  std::vector<std::size_t> mine;
  for (std::size_t i = static_cast<std::size_t>(rank); i < n; i += static_cast<std::size_t>(size)) {
    mine.push_back(i);
  }
  return mine;
}

/// Gathers text on `root` in job order: each rank passes the `(job, text)` pairs it produced
/// (any order); `root` gets every rank's texts sorted by job (equal jobs in rank order), the
/// other ranks an empty vector. Collective over `comm`; for the output of jobs shared with
/// `shared_indices`, printed by one rank as if one process had run them all.
/// @throws kbuf::logic_error if MPI is not running or the texts of one rank pass 2 GiB.
/// @throws kbuf::mpi::error if an MPI call fails.
inline std::vector<std::string> gather_ordered(
    const std::vector<std::pair<std::size_t, std::string>>& mine, MPI_Comm comm, int root = 0) {
  constexpr const char* call = "kbuf::mpi::gather_ordered";
  Impl::expect_mpi_running(call);
  const auto [rank, size] = Impl::rank_and_size(comm, call);

  // This rank's pairs as bytes: job (8 bytes), length (8 bytes), text, for each pair.
  std::vector<char> bytes;
  for (const auto& [job, text] : mine) {
    const std::uint64_t head[2] = {job, text.size()};
    const char* h = reinterpret_cast<const char*>(head);
    bytes.insert(bytes.end(), h, h + sizeof head);
    bytes.insert(bytes.end(), text.begin(), text.end());
  }
  KBUF_EXPECTS(bytes.size() <= static_cast<std::size_t>(std::numeric_limits<int>::max()), call,
               ": ", bytes.size(), " bytes of text on rank ", rank,
               " are more than one MPI message can count");
  const int count = static_cast<int>(bytes.size());
  std::vector<int> counts(rank == root ? static_cast<std::size_t>(size) : 0);
  Impl::mpi_check(MPI_Gather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, root, comm), call,
                  "MPI_Gather");
  std::vector<int> displs(counts.size());
  std::size_t total = 0;
  for (std::size_t r = 0; r < counts.size(); ++r) {
    KBUF_EXPECTS(total <= static_cast<std::size_t>(std::numeric_limits<int>::max()), call,
                 ": more than 2 GiB of text in all");
    displs[r] = static_cast<int>(total);
    total += static_cast<std::size_t>(counts[r]);
  }
  std::vector<char> all(rank == root ? total : 0);
  Impl::mpi_check(MPI_Gatherv(bytes.data(), count, MPI_CHAR, all.data(), counts.data(),
                              displs.data(), MPI_CHAR, root, comm),
                  call, "MPI_Gatherv");
  if (rank != root) return {};

  std::vector<std::pair<std::uint64_t, std::string>> pairs;
  for (std::size_t at = 0; at < all.size();) {
    std::uint64_t head[2];
    std::memcpy(head, all.data() + at, sizeof head);
    at += sizeof head;
    pairs.emplace_back(head[0], std::string(all.data() + at, static_cast<std::size_t>(head[1])));
    at += static_cast<std::size_t>(head[1]);
  }
  std::stable_sort(pairs.begin(), pairs.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> texts;
  texts.reserve(pairs.size());
  for (auto& p : pairs) texts.push_back(std::move(p.second));
  return texts;
}

}  // namespace mpi

// ---- One sizes file for all ranks ----------------------------------------------------------

namespace Impl {

/// `text` on every rank of `comm` as `root` has it.
inline void bcast_text(std::string& text, int root, MPI_Comm comm, const char* call) {
  unsigned long long n = text.size();
  kbuf::Impl::mpi_check(MPI_Bcast(&n, 1, MPI_UNSIGNED_LONG_LONG, root, comm), call, "MPI_Bcast");
  KBUF_EXPECTS(n <= static_cast<unsigned long long>(std::numeric_limits<int>::max()), call, ": ", n,
               " bytes are more than one MPI message can count");
  text.resize(static_cast<std::size_t>(n));
  kbuf::Impl::mpi_check(MPI_Bcast(&text[0], static_cast<int>(n), MPI_CHAR, root, comm), call,
                        "MPI_Bcast");
}

/// The file `path` as rank 0 of `comm` read it, on every rank.
inline kbuf::Impl::FileText bcast_file(const std::string& path, MPI_Comm comm, const char* call) {
  int rank = 0;
  kbuf::Impl::mpi_check(MPI_Comm_rank(comm, &rank), call, "MPI_Comm_rank");
  kbuf::Impl::FileText f;
  if (rank == 0) f = kbuf::Impl::read_sizes_text(path);
  int status = static_cast<int>(f.status);
  kbuf::Impl::mpi_check(MPI_Bcast(&status, 1, MPI_INT, 0, comm), call, "MPI_Bcast");
  f.status = static_cast<SizesFileStatus>(status);
  bcast_text(f.text, 0, comm, call);
  bcast_text(f.why, 0, comm, call);
  return f;
}

/// Saves what the ranks of `comm` learned, combined, from rank 0; every rank gets its report.
inline SizesFileReport save_ranks_sizes(const std::string& path, MPI_Comm comm, bool from_env,
                                        const char* call) {
  kbuf::Impl::SizesState& st = kbuf::Impl::sizes_state();
  std::string mine;
  {
    std::lock_guard<std::mutex> lock(st.mutex);
    mine =
        kbuf::Impl::format_sizes(kbuf::Impl::to_save_locked(st), kbuf::Impl::sizes_program_name());
  }
  int rank = 0;
  kbuf::Impl::mpi_check(MPI_Comm_rank(comm, &rank), call, "MPI_Comm_rank");
  const std::vector<std::string> all = kbuf::mpi::gather_ordered({{0, mine}}, comm, 0);
  kbuf::Impl::SizesTable combined;
  SizesFileReport r;
  std::string combined_text;
  if (rank == 0) {
    for (const std::string& text : all) {
      const kbuf::Impl::ParsedSizes p =
          kbuf::Impl::parse_sizes(text, kbuf::Impl::sizes_program_name());
      kbuf::Impl::combine_tables(combined, p.table);  // written by kbuf above: whole
    }
    r = kbuf::Impl::write_sizes_table(path, combined, from_env);
    combined_text = kbuf::Impl::format_sizes(combined, kbuf::Impl::sizes_program_name());
  }
  int status = static_cast<int>(r.status);
  kbuf::Impl::mpi_check(MPI_Bcast(&status, 1, MPI_INT, 0, comm), call, "MPI_Bcast");
  bcast_text(r.message, 0, comm, call);
  bcast_text(combined_text, 0, comm, call);
  r.path = path;
  r.status = static_cast<SizesFileStatus>(status);
  if (r.ok()) {
    r.sizes = kbuf::Impl::saved_sizes_of(
        kbuf::Impl::parse_sizes(combined_text, kbuf::Impl::sizes_program_name()).table);
  }
  return r;
}

}  // namespace Impl

namespace mpi {

/// As `kbuf::load_sizes(path)` on every rank of `comm`, with one reading of the file: rank 0
/// reads it and sends it to the others, so that every rank starts from the same sizes and gets
/// the same report. Collective. Prints nothing.
/// @throws kbuf::logic_error if `path` is empty or MPI is not running; nothing changes then.
/// @throws kbuf::mpi::error if an MPI call fails.
inline SizesFileReport load_sizes(const std::string& path, MPI_Comm comm) {
  constexpr const char* call = "kbuf::mpi::load_sizes";
  kbuf::Impl::expect_sizes_path(call, path);
  Impl::expect_mpi_running(call);
  const kbuf::Impl::FileText f = Impl::bcast_file(path, comm, call);
  kbuf::Impl::SizesState& st = kbuf::Impl::sizes_state();
  std::lock_guard<std::mutex> lock(st.mutex);
  kbuf::Impl::read_environment_locked(st);
  return kbuf::Impl::install_loaded(st, path, f, false);
}

/// As `kbuf::save_sizes(path)` for all ranks of `comm` together: what each rank learned (and
/// the loaded entries it did not use) is sent to rank 0, combined (the largest high-water mark
/// per label, workspace needs of all ranks' arenas together) and written once, by rank 0,
/// through a temporary file renamed over `path`. Collective; every rank gets rank 0's report.
/// Prints nothing.
/// @throws kbuf::logic_error if `path` is empty or MPI is not running; nothing is written then.
/// @throws kbuf::mpi::error if an MPI call fails.
inline SizesFileReport save_sizes(const std::string& path, MPI_Comm comm) {
  constexpr const char* call = "kbuf::mpi::save_sizes";
  kbuf::Impl::expect_sizes_path(call, path);
  Impl::expect_mpi_running(call);
  return Impl::save_ranks_sizes(path, comm, false, call);
}

/// `KBUF_SIZES=FILE` for the ranks of `comm` together: rank 0 reads FILE (and says what is
/// wrong with it, in one line on stderr), every rank starts from its sizes, and at
/// `Kokkos::finalize` the ranks' sizes are combined and written once, by rank 0 (see
/// `save_sizes(path, comm)`). Without it, each rank of an MPI program reads and writes FILE on
/// its own, and the last rank to finish decides what it holds. Collective: call it on every
/// rank of `comm`, once, after `Kokkos::initialize` (and `MPI_Init`), before `Kokkos::finalize`
/// (which then communicates over a copy of `comm`: MPI must still run, as it does for a program
/// that finalizes Kokkos before MPI). Returns the load's report; status `none`, and nothing
/// else done, when `KBUF_SIZES` is unset on rank 0.
/// @throws kbuf::logic_error if MPI or Kokkos is not running, or if called a second time.
/// @throws kbuf::mpi::error if an MPI call fails.
inline SizesFileReport share_sizes(MPI_Comm comm) {
  constexpr const char* call = "kbuf::mpi::share_sizes";
  Impl::expect_mpi_running(call);
  KBUF_EXPECTS(Kokkos::is_initialized(), call,
               ": Kokkos is not initialized; call it between Kokkos::initialize and "
               "Kokkos::finalize");
  kbuf::Impl::SizesState& st = kbuf::Impl::sizes_state();
  {
    std::lock_guard<std::mutex> lock(st.mutex);
    KBUF_EXPECTS(!st.saver, call, ": called a second time; the ranks share KBUF_SIZES already");
  }
  int rank = 0;
  Impl::mpi_check(MPI_Comm_rank(comm, &rank), call, "MPI_Comm_rank");
  std::string path;
  if (rank == 0) {
    const char* value = std::getenv("KBUF_SIZES");
    if (value != nullptr) path = value;
  }
  Impl::bcast_text(path, 0, comm, call);
  if (path.empty()) return SizesFileReport{};
  const kbuf::Impl::FileText f = Impl::bcast_file(path, comm, call);
  MPI_Comm shared = MPI_COMM_NULL;
  Impl::mpi_check(MPI_Comm_dup(comm, &shared), call, "MPI_Comm_dup");
  std::lock_guard<std::mutex> lock(st.mutex);
  st.env_read = true;  // this rank does not read KBUF_SIZES on its own
  st.env_path = path;
  const SizesFileReport r = kbuf::Impl::install_loaded(st, path, f, true);
  if (rank == 0 && !r.ok()) std::fprintf(stderr, "%s\n", r.message.c_str());
  st.saver = [shared, path, rank]() mutable {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized != 0) {  // no one to combine with: rank 0's own sizes
      if (rank != 0) return;
      kbuf::Impl::SizesState& s = kbuf::Impl::sizes_state();
      kbuf::Impl::SizesTable table;
      {
        std::lock_guard<std::mutex> l(s.mutex);
        table = kbuf::Impl::to_save_locked(s);
      }
      const SizesFileReport w = kbuf::Impl::write_sizes_table(path, table, true);
      std::fprintf(stderr, "%s\n",
                   (w.ok() ? "kbuf: KBUF_SIZES=" + path +
                                 ": MPI was finalized before Kokkos: rank 0 saved its own sizes "
                                 "only"
                           : w.message)
                       .c_str());
      return;
    }
    const SizesFileReport w =
        Impl::save_ranks_sizes(path, shared, true, "kbuf::mpi::share_sizes (at Kokkos::finalize)");
    if (rank == 0 && !w.ok()) std::fprintf(stderr, "%s\n", w.message.c_str());
    MPI_Comm_free(&shared);
  };
  kbuf::Impl::push_sizes_hook_locked(st);
  return r;
}

}  // namespace mpi
}  // namespace kbuf

#endif  // KBUF_MPI_HPP
