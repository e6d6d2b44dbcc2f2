#ifndef KBUF_IMPL_ALLOCATOR_DEFINITIONS_HPP
#define KBUF_IMPL_ALLOCATOR_DEFINITIONS_HPP

/// @file
/// The definitions of `kbuf::BufferAllocator`'s compiled members: the constructors and the
/// destructor, and through them the features the allocator holds by pointer (growth in place,
/// saved sizes, Kokkos Tools reports, workspace records). libkbuf compiles them once for HostSpace
/// and the backend's device space (src/buffer_allocator.cpp); <kbuf/any_space.hpp> includes this
/// file for any other space. Not part of the API: an adopting translation unit never parses it.

#include <memory>
#include <string>
#include <utility>

#include <kbuf/buffer_allocator.hpp>
#include <kbuf/impl/growth_fallbacks_limits.hpp>
#include <kbuf/impl/passthrough.hpp>
#include <kbuf/impl/sizes_file_impl.hpp>
#include <kbuf/impl/tools.hpp>
#include <kbuf/impl/virtual_memory.hpp>
#include <kbuf/workspace.hpp>

namespace kbuf {

template <class MemorySpace>
BufferAllocator<MemorySpace>::BufferAllocator(const execution_space& exec, std::size_t sizehint,
                                              std::size_t alignment, std::string label)
    : Impl::BufferPolicy(alignment), exec_(exec), label_(std::move(label)) {
  expect_initialized("kbuf::BufferAllocator(exec, sizehint, alignment, label)");
  start(sizehint);
}

template <class MemorySpace>
BufferAllocator<MemorySpace>::BufferAllocator(Impl::SharedBudget& budget,
                                              const execution_space& exec, std::size_t sizehint,
                                              std::size_t alignment, std::string label)
    : Impl::BufferPolicy(alignment), exec_(exec), label_(std::move(label)), budget_(&budget) {
  start(sizehint);
}

// What the constructors share before init(): the run-time switch, the reservation's holder and
// the saved sizes' link, which must exist before the first buffer is taken (it may be taken at
// a saved size).
template <class MemorySpace>
void BufferAllocator<MemorySpace>::start(std::size_t sizehint) {
  passthrough_ = Impl::passthrough_requested();
  range_ = std::make_unique<Impl::VirtualRange<MemorySpace>>();
  sizes_ = std::make_unique<Impl::SizesLink<MemorySpace>>(*this);
  init(sizehint);
}

template <class MemorySpace>
BufferAllocator<MemorySpace>::~BufferAllocator() {
#if KBUF_ENABLE_DEBUG
  if (live_scopes_ != 0) {
    Impl::debug_abort(Impl::concat("kbuf::BufferAllocator '", label_, "' (",
                                   static_cast<const void*>(this), ") destroyed while ",
                                   live_scopes_,
                                   " of its scopes are live; end every scope "
                                   "before its allocator"));
  }
  if (live_uses_ != 0) {
    Impl::debug_abort(
        Impl::concat("kbuf::BufferAllocator '", label_, "' (", static_cast<const void*>(this),
                     ") destroyed while ",
                     Impl::count_of{live_uses_, "kbuf::use guard makes", "kbuf::use guards make"},
                     " it a thread's current allocator; end every guard "
                     "before its allocator"));
  }
#endif
  if (reporter_ != nullptr) report_released(0);
  settle_instances(true);
  if (capacity_ != 0 || !fallbacks_.empty()) fence_noexcept();
  Impl::unpoison<MemorySpace>(base_, capacity_);  // before Kokkos frees it
  range_->release(label_);                        // growth in place: the reservation
  for (const Fallback& f : fallbacks_) {
    Impl::unpoison<MemorySpace>(f.memory.data(), f.memory.size());
    free_owned(f);
  }
  uncharge(capacity_ + fallback_held_);
}

template <class MemorySpace>
void BufferAllocator<MemorySpace>::resize(std::size_t nbytes) {
  KBUF_EXPECTS(empty(), "kbuf::BufferAllocator::resize(", nbytes, ") on allocator '", label_,
               "': ", Impl::count_of{depth_, "temporary is", "temporaries are"},
               " live; resize only an empty allocator");
  const std::size_t capacity = passthrough_ ? 0 : committed_size(buffer_size(nbytes));
  if (capacity != capacity_) {
    if (capacity > capacity_) {
      charge(capacity - capacity_, "kbuf::BufferAllocator::resize", "a buffer of", capacity);
    }
    replace_buffer(capacity, "kbuf::BufferAllocator::resize");
    if (!in_place_) ++stats_.regrows;  // in place, the buffer does not move
  }
  if (hwm_ > capacity_) hwm_ = capacity_;
  shrink_ = false;
  update_fast_end();
}

template <class MemorySpace>
void BufferAllocator<MemorySpace>::limit(std::size_t nbytes) {
  if (nbytes < held()) Impl::SizesHooks<MemorySpace>::yield_saved_buffer(*this, nbytes);
  KBUF_EXPECTS(nbytes >= held(), "kbuf::BufferAllocator::limit(", nbytes, ") on allocator '",
               label_, "': it holds ", held(), " bytes (a buffer of ", capacity_, " and ",
               fallback_held_,
               " in live fallbacks); a limit cannot be set below what is held "
               "(resize the buffer or release the fallbacks first)");
  limit_ = nbytes;
  update_fast_end();
}

template <class MemorySpace>
std::size_t BufferAllocator<MemorySpace>::committed_size(std::size_t capacity) const noexcept {
  if (!in_place_) return capacity;
  const std::size_t c = range_->round_up(capacity);
  return c != 0 ? c : capacity;
}

template <class MemorySpace>
void BufferAllocator<MemorySpace>::name_next(const char* label) noexcept {
  reporter_->name_next(label);
}

template <class MemorySpace>
bool BufferAllocator<MemorySpace>::saved_workspace_needs(const std::string& label,
                                                         std::size_t slots, std::size_t unit,
                                                         Impl::WorkspaceNeeds& needs) {
  return Impl::SizesHooks<MemorySpace>::saved_needs(*this, label, slots, unit, needs);
}

template <class MemorySpace>
bool BufferAllocator<MemorySpace>::room_for_saved(std::size_t bytes) {
  return Impl::SizesHooks<MemorySpace>::room_for(*this, bytes);
}

}  // namespace kbuf

#endif  // KBUF_IMPL_ALLOCATOR_DEFINITIONS_HPP
