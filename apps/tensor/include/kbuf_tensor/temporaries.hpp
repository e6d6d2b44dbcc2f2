#ifndef KBUF_TENSOR_TEMPORARIES_HPP
#define KBUF_TENSOR_TEMPORARIES_HPP

/// @file
/// Where the intermediates of a contraction come from: a `kbuf::BufferAllocator`, or (for
/// comparison) fresh managed Views. One contraction code path serves every strategy.

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <Kokkos_Core.hpp>
#include <kbuf/kbuf.hpp>
#include <kbuf_tensor/memory_space.hpp>

namespace kbuf_tensor {

/// How temporaries are obtained.
enum class TemporaryPolicy {
  kbuf,                     ///< carved out of a kbuf::BufferAllocator (unmanaged Views)
  fresh_views,              ///< a fresh managed View each, allocated WithoutInitializing
  fresh_views_initialized,  ///< a fresh managed View each, default-initialised (zero-filled)
};

/// "kbuf", "View(noinit)", "View(init)".
const char* to_string(TemporaryPolicy policy) noexcept;

/// The values of kbuf-demo's and kbuf-tebd's `--strategy`: "kbuf", "view-noinit", "view-init"
/// and "all".
const std::vector<std::string>& strategy_names();

/// The strategies of `strategy_names()[i]`: one, or the three (kbuf first) for "all".
/// @throws kbuf::logic_error for an index past the names.
std::vector<TemporaryPolicy> strategies_named(std::size_t i);

/// Hands out the temporaries of contractions following one `TemporaryPolicy`, and counts them.
///
/// A temporary is a 1-D `Kokkos::View<T*, LayoutRight, MemorySpace>` with uninitialised
/// contents (zero for `fresh_views_initialized`). With `TemporaryPolicy::kbuf` it is an unmanaged
/// view of the allocator's buffer, valid until the enclosing `scope()` ends; with the fresh-View
/// strategies it owns its memory and lives as long as a copy of the handle does. Code that uses
/// temporaries only inside a `scope()` and keeps no handle beyond it works for all three.
///
/// The temporaries also name the execution space instance the contractions that use them run
/// on: the allocator's instance (kbuf), else the one passed in (by default the default
/// instance). Every kernel of a contraction (permutes, GEMM, dot) and every fence it issues go
/// to that instance, so reusing the allocator's memory after a scope is in stream order, and
/// contractions on distinct instances (from distinct host threads) wait only on their own work.
///
/// Not thread-safe; keeps a pointer to the allocator, which must outlive it.
template <class MemorySpace = default_memory_space>
class Temporaries {
 public:
  using memory_space = MemorySpace;
  using execution_space = typename MemorySpace::execution_space;
  using allocator_type = kbuf::BufferAllocator<MemorySpace>;
  template <class T>
  using view = Kokkos::View<T*, Kokkos::LayoutRight, MemorySpace>;

  /// Temporaries served by `alloc` (TemporaryPolicy::kbuf); contractions run on the instance
  /// `alloc` is bound to.
  explicit Temporaries(allocator_type& alloc) noexcept
      : policy_(TemporaryPolicy::kbuf), alloc_(&alloc), exec_(alloc.execution_space_instance()) {}

  /// Temporaries that are fresh managed Views, allocated (and, for
  /// TemporaryPolicy::fresh_views_initialized, initialised) on `exec`; contractions run on
  /// `exec`.
  /// @throws kbuf::logic_error for TemporaryPolicy::kbuf (which needs an allocator).
  explicit Temporaries(TemporaryPolicy policy, const execution_space& exec = execution_space())
      : policy_(policy), exec_(exec) {
    KBUF_EXPECTS(policy != TemporaryPolicy::kbuf,
                 "kbuf_tensor::Temporaries(TemporaryPolicy::kbuf): pass the kbuf::BufferAllocator "
                 "instead of the policy");
  }

  Temporaries(const Temporaries&) = delete;
  Temporaries& operator=(const Temporaries&) = delete;

  /// The policy these temporaries follow.
  [[nodiscard]] TemporaryPolicy policy() const noexcept { return policy_; }
  /// The allocator (TemporaryPolicy::kbuf), else nullptr.
  [[nodiscard]] allocator_type* allocator() const noexcept { return alloc_; }
  /// The execution space instance contractions with these temporaries run on.
  [[nodiscard]] const execution_space& execution_space_instance() const noexcept { return exec_; }
  /// Temporaries handed out since construction.
  [[nodiscard]] std::size_t count() const noexcept { return count_; }

  /// A temporary of `n` elements of `T`.
  /// @throws kbuf::out_of_memory (kbuf) or Kokkos' allocation error (fresh Views).
  template <class T>
  view<T> allocate(std::size_t n) {
    ++count_;
    switch (policy_) {
      case TemporaryPolicy::kbuf:
        return alloc_->template allocate<T*>(n);
      case TemporaryPolicy::fresh_views:
        return view<T>(Kokkos::view_alloc(exec_, Kokkos::WithoutInitializing, "temporary"), n);
      case TemporaryPolicy::fresh_views_initialized:
      default:
        return view<T>(Kokkos::view_alloc(exec_, std::string("temporary")), n);
    }
  }

  /// RAII: with TemporaryPolicy::kbuf, releases every temporary allocated after it was made when it
  /// is destroyed (a `kbuf::BufferAllocator::Scope`); with fresh Views it does nothing (they are
  /// freed when their last handle goes).
  class Scope {
   public:
    Scope(Scope&&) noexcept = default;
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;
    Scope& operator=(Scope&&) = delete;
    ~Scope() = default;

   private:
    friend class Temporaries;
    Scope() = default;
    explicit Scope(typename allocator_type::Scope&& s) : scope_(std::move(s)) {}
    std::optional<typename allocator_type::Scope> scope_;
  };

  /// See `Scope`.
  [[nodiscard]] Scope scope() {
    if (alloc_ != nullptr) return Scope(alloc_->scope());
    return Scope();
  }

 private:
  TemporaryPolicy policy_;
  allocator_type* alloc_ = nullptr;
  execution_space exec_;
  std::size_t count_ = 0;
};

}  // namespace kbuf_tensor

#endif  // KBUF_TENSOR_TEMPORARIES_HPP
