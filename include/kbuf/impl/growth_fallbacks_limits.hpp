#ifndef KBUF_IMPL_GROWTH_FALLBACKS_LIMITS_HPP
#define KBUF_IMPL_GROWTH_FALLBACKS_LIMITS_HPP

/// @file
/// The out-of-line members of `kbuf::BufferAllocator`: growth and regrowth, fallbacks,
/// pass-through memory, limits, Kokkos Tools reporting and the error paths. Their declarations
/// and what each does are in kbuf/buffer_allocator.hpp, which includes this file after the
/// class. Not part of the API.

#include <kbuf/buffer_allocator.hpp>
#include <kbuf/impl/passthrough.hpp>
#include <kbuf/impl/sizes_file_impl.hpp>
#include <kbuf/impl/tools.hpp>
#include <kbuf/impl/virtual_memory.hpp>

namespace kbuf {

template <class MemorySpace>
void BufferAllocator<MemorySpace>::init(std::size_t sizehint) {
  KBUF_EXPECTS(is_power_of_two(alignment_), "kbuf::BufferAllocator: cannot make allocator '",
               label_, "' with alignment = ", alignment_, ": the alignment must be a power of two");
  const std::size_t capacity = passthrough_ ? 0 : buffer_size(sizehint);
  // Before anything decides the hot path: it is off while the allocator reports to a tool.
  if (Impl::tool_loaded() && Impl::tools_report_requested()) {
    reporter_ = std::make_unique<Impl::TemporaryReporter>(label_, initial_report_capacity);
  }
  grow_marks(initial_mark_capacity);
  choose_growth(capacity);
  if (Impl::SizesHooks<MemorySpace>::take_saved_buffer(*this, capacity)) return;  // KBUF_SIZES
  charge(capacity, "kbuf::BufferAllocator", "a buffer of", capacity);
  try {
    take_buffer(capacity, "kbuf::BufferAllocator");
  } catch (...) {
    uncharge(capacity);
    throw;
  }
}

template <class MemorySpace>
void BufferAllocator<MemorySpace>::choose_growth(std::size_t capacity) {
  if (passthrough_) {
    growth_ = "by regrowth (pass-through mode: there is no buffer)";
    return;
  }
  if (!Impl::grow_in_place_requested()) {
    growth_ = "by regrowth (growth in place is off: KBUF_GROW_IN_PLACE)";
    return;
  }
  if (const char* why = Impl::VirtualRange<MemorySpace>::unsupported()) {
    growth_ = Impl::concat("by regrowth (", Impl::space_name<MemorySpace>(), ": ", why, ")");
    return;
  }
  // Every call on the device of the allocator's instance; the device's capability once, here.
  range_->set_device(Impl::device_of(exec_));
  const std::string unable = range_->unsupported_here();
  if (!unable.empty()) {
    growth_ = Impl::concat("by regrowth (", Impl::space_name<MemorySpace>(), ": ", unable, ")");
    Impl::say_once_per_process(
        Impl::concat("kbuf: allocator '", label_, "' grows by regrowth, not in place: ", unable));
    return;
  }
  std::size_t reserve = range_->default_reservation();
  if (reserve < capacity) reserve = capacity;
  if (budget_ != nullptr && budget_->limit() < reserve) reserve = budget_->limit();
  if (reserve < capacity) reserve = capacity;
  std::string error;
  if (!range_->reserve(reserve, alignment_, error)) {
    const std::string why = Impl::concat("the reservation of ", reserve, " bytes in ",
                                         Impl::space_name<MemorySpace>(), " failed: ", error);
    growth_ = "by regrowth (" + why + ")";
    Impl::say_once_per_process(
        Impl::concat("kbuf: allocator '", label_, "' grows by regrowth, not in place: ", why));
    return;
  }
  in_place_ = true;
  describe_in_place();
  set_buffer(reinterpret_cast<std::uintptr_t>(range_->base()), 0);
}

template <class MemorySpace>
void BufferAllocator<MemorySpace>::describe_in_place() {
  reserved_ = range_->reserved();
  growth_ = Impl::concat("in place (", range_->reserved(), " bytes of addresses reserved in ",
                         Impl::space_name<MemorySpace>(), ", committed in granules of ",
                         range_->granule(), " bytes)");
}

template <class MemorySpace>
void BufferAllocator<MemorySpace>::buffer_changed_in_place() noexcept {
  base_ = range_->base();
  buffer_ = raw_view(base_, capacity_);
  update_fast_end();
}

template <class MemorySpace>
KBUF_IMPL_COLD bool BufferAllocator<MemorySpace>::grow_in_place(std::size_t end) {
  if (commit_refused_) return false;  // the device refused a commit: not asked again
  const std::size_t target = range_->round_up(end);
  if (target == 0 || target > range_->reserved() || target <= capacity_) return false;
  const std::size_t grown = target - capacity_;
  if (!try_charge(grown)) return false;  // the fallback that follows is refused as usual
  std::string error;
  if (!range_->grow_to(target, label_, error)) {
    uncharge(grown);
    // Not a limit (charged above): the device refused. The buffer grows by regrowth from its
    // next growth on, and says why there.
    commit_refused_ = true;
    refused_why_ = error;
    return false;
  }
  const std::size_t old = capacity_;
  set_capacity(target);  // kbuf/impl/buffer_policy.hpp: nothing moves
  ++stats_.grown_in_place;
  buffer_changed_in_place();
  Impl::release_bytes<MemorySpace>(exec_, base_ + old, target - old);  // unpoisoned as handed out
  return true;
}

template <class MemorySpace>
void BufferAllocator<MemorySpace>::give_up_range() {
  if (capacity_ != 0) fence();
  Impl::unpoison<MemorySpace>(base_, capacity_);
  range_->release(label_);
  reserved_ = 0;
  buffer_ = raw_view();
  base_ = nullptr;
  set_buffer(0, 0);
}

template <class MemorySpace>
void BufferAllocator<MemorySpace>::regrow_from_now_on(const std::string& why,
                                                      const std::string& error,
                                                      std::size_t capacity, std::size_t charged,
                                                      const char* call) {
  in_place_ = false;
  growth_ = "by regrowth (" + why + ")";
  Impl::say_once_per_process(
      Impl::concat("kbuf: allocator '", label_, "' grows by regrowth from now on: ", error));
  try {
    take_buffer(capacity, call);
  } catch (const kbuf::out_of_memory&) {
    uncharge(charged);
    throw;
  }
  uncharge(charged - capacity_);
}

template <class MemorySpace>
void BufferAllocator<MemorySpace>::resize_in_place(std::size_t capacity, const char* call) {
  const std::size_t old_capacity = capacity_;
  const std::size_t charged = capacity > old_capacity ? capacity : old_capacity;
  if (capacity > range_->reserved()) {
    // Past the reservation: a larger one (the allocator is empty), else regrowth from now on.
    give_up_range();
    std::string error;
    const std::size_t twice = capacity <= (std::size_t{1} << 61) ? 2 * capacity : capacity;
    if (!range_->reserve(twice, alignment_, error) &&
        !range_->reserve(capacity, alignment_, error)) {
      regrow_from_now_on(Impl::concat("a reservation of ", capacity, " bytes in ",
                                      Impl::space_name<MemorySpace>(), " failed: ", error),
                         error, capacity, charged, call);
      return;
    }
    set_buffer(reinterpret_cast<std::uintptr_t>(range_->base()), 0);
    describe_in_place();
  }
  if (capacity > range_->committed()) {
    std::string error = refused_why_;
    if (commit_refused_ || !range_->grow_to(capacity, label_, error)) {
      // The reservation worked and the device refuses to commit: plain buffers from now on, as
      // an allocator without growth in place would have (out_of_memory only where that fails).
      give_up_range();
      regrow_from_now_on(Impl::concat("committing ", capacity, " bytes in ",
                                      Impl::space_name<MemorySpace>(), " failed: ", error),
                         error, capacity, charged, call);
      return;
    }
  } else if (capacity < capacity_) {
    fence();  // the memory given back may still be in use on the bound instance
    Impl::unpoison<MemorySpace>(base_ + capacity, capacity_ - capacity);
    (void)range_->shrink_to(capacity, label_);
  }
  set_buffer(reinterpret_cast<std::uintptr_t>(range_->base()), range_->committed());
  buffer_changed_in_place();
  Impl::release_bytes<MemorySpace>(exec_, base_, capacity_);  // unpoisoned as handed out
  uncharge(charged - capacity_);
}

template <class MemorySpace>
std::size_t BufferAllocator<MemorySpace>::trim() {
  const std::size_t held_before = capacity_;
  if (in_place_) {
    const std::size_t keep = range_->round_up(used());
    if (keep >= capacity_) return 0;
    fence();  // the memory given back may still be in use on the bound instance
    Impl::unpoison<MemorySpace>(base_ + keep, capacity_ - keep);
    (void)range_->shrink_to(keep, label_);
    set_capacity(range_->committed());  // down to what is committed; the top stays
    buffer_changed_in_place();
    uncharge(held_before - capacity_);
  } else {
    if (!empty() || capacity_ == 0) return 0;
    replace_buffer(0, "kbuf::BufferAllocator::trim");  // gives the bytes back to the limits
  }
  const std::size_t given = held_before - capacity_;
  const std::size_t need = used() + extra_;
  hwm_ = capacity_ > need ? capacity_ : need;
  shrink_ = false;
  update_fast_end();
  return given;
}

template <class MemorySpace>
bool BufferAllocator<MemorySpace>::try_charge(std::size_t bytes) noexcept {
  const std::size_t held_now = held();
  if (bytes > limit_ || held_now > limit_ - bytes) return false;
  return budget_ == nullptr || budget_->try_take(bytes);
}

template <class MemorySpace>
void BufferAllocator<MemorySpace>::uncharge(std::size_t bytes) noexcept {
  if (budget_ != nullptr) budget_->give_back(bytes);
}

template <class MemorySpace>
void BufferAllocator<MemorySpace>::charge(std::size_t bytes, const char* call, const char* what,
                                          std::size_t requested) {
  if (bytes != 0 && KBUF_IMPL_UNLIKELY(!try_charge(bytes))) {
    refuse_limit(bytes, call, what, requested);
  }
}

template <class MemorySpace>
[[noreturn]] KBUF_IMPL_COLD void BufferAllocator<MemorySpace>::refuse_limit(std::size_t bytes,
                                                                            const char* call,
                                                                            const char* what,
                                                                            std::size_t requested) {
  ++stats_.limit_refusals;
  const std::size_t held_now = held();
  if (bytes > limit_ || held_now > limit_ - bytes) {
    KBUF_FAIL_OOM(call, " on allocator '", label_, "': ", what, " ", requested,
                  " bytes would pass the allocator's limit of ", limit_, " bytes: it holds ",
                  held_now, " (a buffer of ", capacity_, " and ", fallback_held_, " in fallbacks)");
  }
  KBUF_FAIL_OOM(call, " on allocator '", label_, "': ", what, " ", requested,
                " bytes would pass the combined limit of ", budget_->limit(),
                " bytes of its pool: its allocators hold ", budget_->held(), " bytes (this one ",
                held_now, ")");
}

template <class MemorySpace>
std::size_t BufferAllocator<MemorySpace>::largest_buffer() const noexcept {
  std::size_t room = limit_ - fallback_held_;  // fallback_held_ <= held() <= limit_
  if (budget_ != nullptr) {
    // This allocator's buffer is part of what the pool holds: no overflow.
    const std::size_t pool_room = budget_->available() + capacity_;
    if (pool_room < room) room = pool_room;
  }
  return Impl::buffer_size_floor(room);
}

template <class MemorySpace>
void BufferAllocator<MemorySpace>::free_owned(const Fallback& f) noexcept {
  if (f.owned_alignment != 0) {
    ::operator delete(f.memory.data(), std::align_val_t(f.owned_alignment));
  }
}

template <class MemorySpace>
KBUF_IMPL_COLD void* BufferAllocator<MemorySpace>::acquire_slow(std::size_t nbytes,
                                                                std::size_t type_alignment,
                                                                const char* label) {
  void* p = acquire_cold(nbytes, type_alignment, label);
  if (KBUF_IMPL_UNLIKELY(ordered_)) order_use(0, p, nbytes);
  return p;
}

template <class MemorySpace>
KBUF_IMPL_COLD void* BufferAllocator<MemorySpace>::acquire_on(const Impl::OrderInstance& exec,
                                                              std::size_t nbytes,
                                                              std::size_t type_alignment,
                                                              const char* label) {
  std::size_t who = 0;
  std::string kept;
  try {
    if (order_ == nullptr) {
      order_ = std::make_unique<Impl::InstanceOrder>(
          std::make_unique<Impl::TypedOrderInstance<execution_space, MemorySpace>>(exec_));
    }
    who = order_->intern(exec);
#if KBUF_ENABLE_DEBUG
    if (label != nullptr) kept = label;
#endif
  } catch (const std::bad_alloc&) {
    KBUF_FAIL_OOM("kbuf::BufferAllocator::allocate(exec, ...) on allocator '", label_,
                  "': no host memory left to record the temporary's execution space instance");
  }
  if (nbytes == 0) {  // an empty view: no memory to order
    ++stats_.empty;
    return nullptr;
  }
  if (who == 0) return acquire_slow(nbytes, type_alignment, label);  // the allocator's own
  void* p = acquire_cold(nbytes, type_alignment, label);
  order_use(who, p, nbytes);
  const auto q = static_cast<unsigned char*>(p);
  const bool fallback = q < base_ || q >= base_ + capacity_;
  const std::size_t lo = fallback ? 0 : static_cast<std::size_t>(q - base_);
  order_->push_use(Impl::InstanceOrder::Use{depth_, lo, fallback ? 0 : lo + nbytes, who, fallback,
                                            std::move(kept)});
  ordered_ = true;
  update_fast_end();
  return p;
}

template <class MemorySpace>
void BufferAllocator<MemorySpace>::order_use(std::size_t who, const void* p, std::size_t nbytes) {
  const auto q = static_cast<const unsigned char*>(p);
  if (q != nullptr && q >= base_ && q < base_ + capacity_) {
    const std::size_t lo = static_cast<std::size_t>(q - base_);
    const Impl::UseOrder o = order_->before_use(who, lo, lo + nbytes, released_, base_,
                                                KBUF_ENABLE_DEBUG != 0, debug_fill_byte);
    stats_.handoffs += o.waits;
    stats_.host_waits += o.host_waits;
#if KBUF_ENABLE_DEBUG
    if (o.bytes != 0) {
      Impl::debug_abort(Impl::concat(
          "kbuf::BufferAllocator::allocate on allocator '", label_, "': ", o.bytes,
          " bytes of memory released by the temporary '", o.label, "' of ", o.released_on,
          " were written after its release, before it was handed to ", o.handed_to,
          ": work on that instance submitted after the release, or the temporary used on an "
          "instance it was not given (allocate(exec, ...) names the instance)"));
    }
#endif
  }
  ordered_ = order_->active();
  update_fast_end();
}

template <class MemorySpace>
KBUF_IMPL_COLD void BufferAllocator<MemorySpace>::give_back_tail(void* p, std::size_t bytes,
                                                                 std::size_t n, std::size_t extent,
                                                                 std::size_t size,
                                                                 const char* call) {
  KBUF_EXPECTS(n <= extent, call, "(view, ", n, ") on allocator '", label_, "': ", n,
               " elements are more than the temporary's ", extent, "; a temporary only shrinks");
  const auto begin = reinterpret_cast<std::uintptr_t>(p);
  const bool newest = p != nullptr && depth_ != 0 && begin >= origin_ && begin + bytes == top_ &&
                      begin < origin_ + capacity_;
  if (!newest) {
    for (const Fallback& f : fallbacks_) {
      const auto m = reinterpret_cast<std::uintptr_t>(f.memory.data());
      if (begin >= m && begin < m + f.memory.size()) return;  // a fallback: its view shrinks
    }
    if (p == nullptr || bytes == 0) return;  // an empty temporary: nothing to give back
    Impl::throw_logic_error(call, "(view, ", n, ") on allocator '", label_, "': the temporary at ",
                            p, " (", bytes,
                            " bytes) is not its newest temporary in the buffer (the buffer's "
                            "top is ",
                            used(),
                            " bytes in); shrink only the newest, before anything is "
                            "taken after it");
  }
  // A checkpoint (a scope) taken after it records the end it has now: a reset to it would
  // release from there. Refused, so that every checkpoint stays one of the history's points.
  KBUF_EXPECTS(nmarks_ == 0 || marks_[nmarks_ - 1].depth != depth_, call, "(view, ", n,
               ") on allocator '", label_,
               "': a checkpoint or a scope was taken after the temporary; shrink it before "
               "taking one");
  const std::size_t keep = n * size;
  if (keep == bytes) return;
  const std::size_t lo = static_cast<std::size_t>(begin - origin_);
  bool ordered = false;
  if (ordered_ && order_->shrink_newest(depth_, lo + keep, lo + bytes, KBUF_ENABLE_DEBUG != 0,
                                        debug_fill_byte, base_)) {
    ordered = true;
  }
  if (!ordered) Impl::release_bytes<MemorySpace>(exec_, base_ + lo + keep, bytes - keep);
  top_ = begin + keep;
  if (reporter_ != nullptr) {
    reporter_->released(depth_, depth_ - 1);
    reporter_->acquired(depth_ - 1, p, keep);
  }
  ordered_ = order_ != nullptr && order_->active();
  update_fast_end();
}

template <class MemorySpace>
KBUF_IMPL_COLD void BufferAllocator<MemorySpace>::settle_instances(bool live) noexcept {
  if (order_ == nullptr) return;
  order_->settle(live);
  ordered_ = order_->active();
  update_fast_end();
}

template <class MemorySpace>
void* BufferAllocator<MemorySpace>::acquire_cold(std::size_t nbytes, std::size_t type_alignment,
                                                 const char* label) {
  const std::size_t a = type_alignment > alignment_ ? type_alignment : alignment_;
  if (nmarks_ == mark_capacity_) grow_marks(2 * mark_capacity_);  // unobservable
  try {
    records_.reserve(records_.size() + 1);  // so that committing cannot fail
  } catch (const std::bad_alloc&) {
    KBUF_FAIL_OOM("kbuf::BufferAllocator::allocate on allocator '", label_,
                  "': no host memory left to record a temporary");
  }
  if (reporter_ == nullptr) {
    if (regrow_due()) return regrow_and_acquire(nbytes, a);
    return carve_or_fallback(nbytes, a);
  }
  reserve_reports();
  if (label != nullptr) reporter_->name_next(label);
  try {
    if (regrow_due()) return regrow_and_acquire(nbytes, a);
    return carve_or_fallback(nbytes, a);
  } catch (...) {
    reporter_->name_next(nullptr);  // the next temporary is not this one
    throw;
  }
}

template <class MemorySpace>
void* BufferAllocator<MemorySpace>::carve_or_fallback(std::size_t nbytes, std::size_t a) {
  // Where it goes: kbuf/impl/buffer_policy.hpp.
  Impl::Placement place = BufferPolicy::place(nbytes, a);
  if (!place.fits && in_place_ && place.start <= std::numeric_limits<std::size_t>::max() - nbytes &&
      grow_in_place(place.start + nbytes)) {
    place = BufferPolicy::place(nbytes, a);  // fits now: the buffer holds its end
  }
  if (!place.fits && growth_blocked() && grow_under_live(nbytes, a)) {
    place = BufferPolicy::place(nbytes, a);  // fits now: a larger buffer above the live ones
  }
  if (place.fits) {
    // No overflow: the need counts memory that is held, and nbytes fits in the buffer.
    void* p = base_ + place.start;
    Impl::unpoison<MemorySpace>(p, nbytes);
    carve(place, nbytes);
    update_fast_end();
    if (reporter_ != nullptr) report_acquired(p, nbytes);
    return p;
  }
  if (KBUF_IMPL_UNLIKELY(nbytes > std::numeric_limits<std::size_t>::max() - place.need_start)) {
    throw_unsatisfiable(nbytes, a);
  }
  return commit_fallback(take_fallback(nbytes, a, place.need_start + nbytes), nbytes, a);
}

template <class MemorySpace>
KBUF_IMPL_COLD bool BufferAllocator<MemorySpace>::grow_under_live(std::size_t nbytes,
                                                                  std::size_t a) {
  if (in_place_ || reserved_ != 0 || passthrough_ || ordered_) return false;
  const std::size_t used = this->used();
  constexpr std::size_t most = std::size_t(1) << 62;  // as in expect_addressable
  if (nbytes > most || used + extra_ > most || a > most) return false;
  const std::size_t capacity = BufferPolicy::capacity_under_live(nbytes, a);
  if (capacity <= capacity_ || !try_charge(capacity)) return false;
  raw_view raw;
  try {
    fallbacks_.reserve(fallbacks_.size() + 1);  // so that keeping the old buffer cannot fail
    raw = allocate_raw(capacity + (alignment_ - 1), "::buffer", "kbuf::BufferAllocator::allocate",
                       "a buffer of", capacity);
  } catch (...) {  // no memory for it: the temporary is a fallback, as before
    uncharge(capacity);
    return false;
  }
  if (capacity_ != 0) {
    // Held with the fallbacks, in their order (by depth), until a reset to the lowest depth
    // the allocator had while it was the buffer: every temporary carved from it is above that.
    // Known only while the general path saw every reset, that is while another replaced
    // buffer was held (from the growth that made this the buffer on: only a growth adds one);
    // else until the allocator is empty.
    const std::size_t low = replaced_buffers_ != 0 ? tenure_low_ : 0;
    auto at = fallbacks_.end();
    while (at != fallbacks_.begin() && (at - 1)->depth > low) --at;
    Fallback old{buffer_, capacity_, low, 0};
    old.replaced_buffer = true;
    fallbacks_.insert(at, std::move(old));
    fallback_held_ += capacity_;
    ++replaced_buffers_;
  }
  const std::uintptr_t addr = reinterpret_cast<std::uintptr_t>(raw.data());
  const std::size_t offset = static_cast<std::size_t>(Impl::align_up(addr, alignment_) - addr);
  buffer_ = raw_view(raw, std::make_pair(offset, offset + capacity));
  base_ = buffer_.data();
  Impl::release_bytes<MemorySpace>(exec_, base_, capacity);  // unpoisoned as handed out
  BufferPolicy::grown_under_live(reinterpret_cast<std::uintptr_t>(base_), capacity);
  tenure_low_ = depth_;
  update_fast_end();
  return true;
}

template <class MemorySpace>
KBUF_IMPL_COLD void* BufferAllocator<MemorySpace>::regrow_and_acquire(std::size_t nbytes,
                                                                      std::size_t a) {
  const std::size_t padding = a - alignment_;  // the most padding at offset 0
  if (KBUF_IMPL_UNLIKELY(nbytes > std::numeric_limits<std::size_t>::max() - padding)) {
    throw_unsatisfiable(nbytes, a);
  }
  if (passthrough_) return carve_or_fallback(nbytes, a);  // no buffer: it falls back
  const std::size_t capacity = regrow_capacity();
  raw_view spare;
  if (padding + nbytes > capacity) spare = take_fallback(nbytes, a, padding + nbytes);
  try {
    regrow(capacity);
  } catch (...) {
    drop_spare(spare, nbytes);  // nothing has changed then
    throw;
  }
  const std::uintptr_t base = reinterpret_cast<std::uintptr_t>(base_);
  const std::size_t start = static_cast<std::size_t>(Impl::align_up(base, a) - base);
  if (spare.data() == nullptr || (start <= capacity_ && nbytes <= capacity_ - start)) {
    drop_spare(spare, nbytes);
    // Carves it, or (when a limit kept the buffer below the high-water mark and it does not
    // fit) serves a fallback; no regrowth is attempted again.
    return carve_or_fallback(nbytes, a);
  }
  return commit_fallback(std::move(spare), nbytes, a);
}

template <class MemorySpace>
void BufferAllocator<MemorySpace>::drop_spare(raw_view& spare, std::size_t nbytes) noexcept {
  if (spare.data() == nullptr) return;
  spare = raw_view();
  fallback_held_ -= nbytes;
  uncharge(nbytes);
}

template <class MemorySpace>
KBUF_IMPL_COLD typename BufferAllocator<MemorySpace>::raw_view
BufferAllocator<MemorySpace>::take_fallback(std::size_t nbytes, std::size_t a, std::size_t need) {
  if (KBUF_IMPL_UNLIKELY(nbytes > std::numeric_limits<std::size_t>::max() - (a - 1))) {
    throw_unsatisfiable(nbytes, a);
  }
  expect_addressable(nbytes + (a - 1), "kbuf::BufferAllocator::allocate", "a fallback of", nbytes);
  try {
    fallbacks_.reserve(fallbacks_.size() + 1);
  } catch (const std::bad_alloc&) {
    KBUF_FAIL_OOM("kbuf::BufferAllocator::allocate on allocator '", label_,
                  "': no host memory left to record a fallback of ", nbytes, " bytes");
  }
  if (KBUF_IMPL_UNLIKELY(!try_charge(nbytes))) {
    record_need(need);
    update_fast_end();  // a regrowth may be pending now
    refuse_limit(nbytes, "kbuf::BufferAllocator::allocate", "a fallback of", nbytes);
  }
  raw_view memory;
  try {
    memory = passthrough_
                 ? take_exact(nbytes, a)
                 : allocate_raw(nbytes + (a - 1), "::fallback", "kbuf::BufferAllocator::allocate",
                                "a fallback of", nbytes);
  } catch (...) {
    uncharge(nbytes);
    throw;
  }
  fallback_held_ += nbytes;
  return memory;
}

template <class MemorySpace>
typename BufferAllocator<MemorySpace>::raw_view BufferAllocator<MemorySpace>::take_exact(
    std::size_t nbytes, std::size_t a) {
  if constexpr (passthrough_owns_memory) {
    void* p = nullptr;
    if (nbytes <= (std::size_t{1} << 62)) {
      p = ::operator new(nbytes, std::align_val_t(a), std::nothrow);
    }
    if (p == nullptr) {
      KBUF_FAIL_OOM("kbuf::BufferAllocator::allocate on allocator '", label_,
                    "': cannot allocate a pass-through temporary of ", nbytes, " bytes in ",
                    Impl::space_name<MemorySpace>());
    }
    return raw_view(static_cast<unsigned char*>(p), nbytes);
  }
  const auto take = [&](std::size_t front) {
    return allocate_raw(nbytes + front, "::fallback", "kbuf::BufferAllocator::allocate",
                        "a fallback of", nbytes);
  };
  const auto misalignment = [a](const raw_view& m, std::size_t front) {
    return static_cast<std::size_t>((reinterpret_cast<std::uintptr_t>(m.data()) + front) % a);
  };
  std::size_t front = passthrough_front_ % a;
  raw_view memory = take(front);
  const std::size_t off = misalignment(memory, front);
  if (off == 0) return memory;
  front = (front + (a - off)) % a;
  memory = raw_view();
  memory = take(front);
  if (misalignment(memory, front) == 0) {
    passthrough_front_ = front;
    return memory;
  }
  memory = raw_view();
  return take(a - 1);
}

template <class MemorySpace>
void* BufferAllocator<MemorySpace>::commit_fallback(raw_view memory, std::size_t nbytes,
                                                    std::size_t a) noexcept {
  const std::uintptr_t addr = reinterpret_cast<std::uintptr_t>(memory.data());
  unsigned char* p = memory.data() + (Impl::align_up(addr, a) - addr);
  if (passthrough_) {  // the slack around the temporary, if any, is out of bounds
    const std::size_t front = static_cast<std::size_t>(p - memory.data());
    Impl::poison<MemorySpace>(memory.data(), front);
    Impl::poison<MemorySpace>(p + nbytes, memory.size() - front - nbytes);
  }
  const std::size_t owned = passthrough_owns_memory && passthrough_ ? a : 0;
  // Cannot throw: reserved.
  fallbacks_.push_back(Fallback{std::move(memory), nbytes, depth_, owned});
  add_fallback(nbytes, a);  // its need: kbuf/impl/buffer_policy.hpp
  update_fast_end();
  if (reporter_ != nullptr) report_acquired(p, nbytes);
  return p;
}

template <class MemorySpace>
void BufferAllocator<MemorySpace>::expect_initialized(const char* call) {
  KBUF_EXPECTS(Kokkos::is_initialized(), call,
               ": Kokkos is not initialized (is_initialized() "
               "is false: before Kokkos::initialize or after Kokkos::finalize). Make allocators "
               "between the two, e.g. under a Kokkos::ScopeGuard in main, not as globals or "
               "statics: an allocator holds an execution space instance, and Kokkos 5.1 "
               "requires instances to be made after initialize and destroyed before finalize");
}

template <class MemorySpace>
typename BufferAllocator<MemorySpace>::execution_space
BufferAllocator<MemorySpace>::default_instance(const char* call) {
  expect_initialized(call);
  return execution_space();
}

template <class MemorySpace>
void BufferAllocator<MemorySpace>::expect_addressable(std::size_t nbytes, const char* call,
                                                      const char* what,
                                                      std::size_t requested) const {
  // 2^62 bytes is beyond every address space. Larger sizes must not reach Kokkos: it takes
  // SIZE_MAX for "no extent" and aborts, and its header arithmetic can overflow.
  if (KBUF_IMPL_UNLIKELY(nbytes > (std::size_t{1} << 62))) {
    KBUF_FAIL_OOM(call, " on allocator '", label_, "': cannot allocate ", what, " ", requested,
                  " bytes (", nbytes, " with alignment slack) in ", Impl::space_name<MemorySpace>(),
                  ": that is more than any address space holds");
  }
}

template <class MemorySpace>
typename BufferAllocator<MemorySpace>::raw_view BufferAllocator<MemorySpace>::allocate_raw(
    std::size_t nbytes, const char* suffix, const char* call, const char* what,
    std::size_t requested) {
  expect_addressable(nbytes, call, what, requested);
  try {
    return raw_view(Kokkos::view_alloc(exec_, Kokkos::WithoutInitializing, label_ + suffix),
                    nbytes);
  } catch (const std::exception& e) {
    KBUF_FAIL_OOM(call, " on allocator '", label_, "': cannot allocate ", what, " ", requested,
                  " bytes (", nbytes, " with alignment slack) in ", Impl::space_name<MemorySpace>(),
                  ". Kokkos said: ", e.what());
  }
}

template <class MemorySpace>
void BufferAllocator<MemorySpace>::take_buffer(std::size_t capacity, const char* call) {
  if (in_place_) {
    // The rounding to the granule, charged here: the callers charged `capacity`.
    const std::size_t committed = committed_size(capacity);
    if (committed > capacity && !try_charge(committed - capacity)) {
      refuse_limit(committed - capacity, call, "a buffer of", committed);
    }
    try {
      resize_in_place(committed, call);
    } catch (...) {
      uncharge(committed - capacity);
      throw;
    }
    return;
  }
  if (capacity == 0) return;
  if (KBUF_IMPL_UNLIKELY(capacity > std::numeric_limits<std::size_t>::max() - (alignment_ - 1))) {
    KBUF_FAIL_OOM(call, " on allocator '", label_, "': cannot allocate a buffer of ", capacity,
                  " bytes aligned to ", alignment_, " in ", Impl::space_name<MemorySpace>(),
                  ": that is more than any address space holds");
  }
  // One allocation per buffer, on every space: no space guarantees more than its own
  // alignment for a View's data (CUDA and HIP put it 128 bytes past a 256-byte boundary, the
  // host 64 bytes at best, a custom space anything), and where the data lands inside it depends
  // on the heap. So the buffer always takes alignment() - 1 bytes of slack, enough wherever
  // the data lands; freeing and retrying would cost a device-synchronising free on a GPU.
  const raw_view raw =
      allocate_raw(capacity + (alignment_ - 1), "::buffer", call, "a buffer of", capacity);
  const std::uintptr_t addr = reinterpret_cast<std::uintptr_t>(raw.data());
  const std::size_t offset = static_cast<std::size_t>(Impl::align_up(addr, alignment_) - addr);
  buffer_ = raw_view(raw, std::make_pair(offset, offset + capacity));
  base_ = buffer_.data();
  set_buffer(reinterpret_cast<std::uintptr_t>(base_), capacity);  // empty: used() == 0
  update_fast_end();
  Impl::release_bytes<MemorySpace>(exec_, base_, capacity_);  // unpoisoned as handed out
}

template <class MemorySpace>
void BufferAllocator<MemorySpace>::replace_buffer(std::size_t capacity, const char* call) {
  if (in_place_) {
    resize_in_place(committed_size(capacity), call);
    return;
  }
  const std::size_t old_capacity = capacity_;
  const std::size_t charged = capacity > old_capacity ? capacity : old_capacity;
  if (old_capacity != 0) fence();
  Impl::unpoison<MemorySpace>(base_, capacity_);
  buffer_ = raw_view();
  base_ = nullptr;
  set_buffer(0, 0);
  update_fast_end();
  try {
    take_buffer(capacity, call);
  } catch (const kbuf::out_of_memory&) {
    try {
      take_buffer(old_capacity, call);
    } catch (const kbuf::out_of_memory&) {  // keeps no buffer; the next growth retries
    }
    uncharge(charged - capacity_);
    throw;
  }
  uncharge(charged - capacity_);
}

template <class MemorySpace>
std::size_t BufferAllocator<MemorySpace>::regrow_capacity() const {
  if (KBUF_IMPL_UNLIKELY(hwm_ > std::numeric_limits<std::size_t>::max() - page_size())) {
    KBUF_FAIL_OOM("kbuf::BufferAllocator::allocate on allocator '", label_,
                  "': cannot grow the buffer to the high-water mark of ", hwm_, " bytes in ",
                  Impl::space_name<MemorySpace>(), ": no buffer that large fits in size_t");
  }
  // Growth stops at the limit: kbuf/impl/buffer_policy.hpp.
  const bool limited = limit_ != Impl::SharedBudget::no_limit || budget_ != nullptr;
  const std::size_t largest = limited ? largest_buffer() : std::numeric_limits<std::size_t>::max();
  const std::size_t capacity = BufferPolicy::regrow_capacity(largest);
  if (!in_place_ || capacity == capacity_) return capacity;
  // In place, whole granules: rounded up, or down where a limit leaves no room for more.
  const std::size_t up = committed_size(capacity);
  if (up <= largest) return up;
  const std::size_t down = capacity / range_->granule() * range_->granule();
  return down > capacity_ ? down : capacity_;
}

template <class MemorySpace>
KBUF_IMPL_COLD void BufferAllocator<MemorySpace>::regrow(std::size_t capacity) {
  const bool replace = capacity != capacity_;
  const bool in_place = in_place_;
  if (replace) {
    if (capacity > capacity_ && !try_charge(capacity - capacity_)) return;
    replace_buffer(capacity, "kbuf::BufferAllocator::allocate");
  }
  // In place the buffer did not move: it grew there (unless the device refused the commit and
  // the allocator took a plain buffer instead).
  regrown(replace && !(in_place && in_place_));
  if (replace && in_place && in_place_) ++stats_.grown_in_place;
  update_fast_end();
}

template <class MemorySpace>
KBUF_IMPL_COLD void BufferAllocator<MemorySpace>::grow_marks(std::size_t n) {
  std::unique_ptr<Mark[]> marks;
  try {
    marks.reset(new Mark[n]);
  } catch (const std::bad_alloc&) {
    KBUF_FAIL_OOM("kbuf::BufferAllocator::allocate on allocator '", label_,
                  "': no host memory left to track ", n, " live checkpoints");
  }
  for (std::size_t i = 0; i < nmarks_; ++i) marks[i] = marks_[i];
  marks_ = std::move(marks);
  mark_capacity_ = n;
  update_fast_end();
}

template <class MemorySpace>
std::uint64_t BufferAllocator<MemorySpace>::newest() const noexcept {
  if (nmarks_ != 0 && marks_[nmarks_ - 1].depth == depth_) return marks_[nmarks_ - 1].id;
  return released_ + depth_;
}

template <class MemorySpace>
[[noreturn]] KBUF_IMPL_COLD void BufferAllocator<MemorySpace>::refuse_checkpoint(
    const BufferAllocator* owner, std::size_t depth, std::uint64_t id, const char* call) const {
  KBUF_EXPECTS(owner != nullptr, call, " on allocator '", label_,
               "': the checkpoint belongs to no allocator (it was default-constructed)");
  KBUF_EXPECTS(owner == this, call, " on allocator '", label_,
               "': the checkpoint belongs to another allocator (the one at ",
               static_cast<const void*>(owner), "; this one is at ", static_cast<const void*>(this),
               ")");
  throw_released_checkpoint(depth, id, call);
}

template <class MemorySpace>
KBUF_IMPL_COLD void BufferAllocator<MemorySpace>::release_slow(std::size_t cp_depth,
                                                               std::size_t cp_used) noexcept {
  if (reporter_ != nullptr) report_released(cp_depth);
  if (ordered_) {
    // Memory of other instances' temporaries: filled (debug builds) in their order, and a
    // hazard until it is handed on; the rest as always.
    order_->release(cp_depth, cp_used, used(), KBUF_ENABLE_DEBUG != 0, debug_fill_byte, base_,
                    [this](std::size_t lo, std::size_t hi) {
                      Impl::release_bytes<MemorySpace>(exec_, base_ + lo, hi - lo);
                    });
    ordered_ = order_->active();
  } else {
    Impl::release_bytes<MemorySpace>(exec_, base_ + cp_used, used() - cp_used);
  }
  std::size_t keep = fallbacks_.size();
  while (keep != 0 && fallbacks_[keep - 1].depth >= cp_depth) --keep;
  if (keep != fallbacks_.size()) free_fallbacks(keep);
  if (cp_depth < tenure_low_) tenure_low_ = cp_depth;
  while (nmarks_ != 0 && marks_[nmarks_ - 1].depth > cp_depth) --nmarks_;
  released_ += depth_ - cp_depth;
  release(cp_depth, cp_used);  // the need and the peaks: kbuf/impl/buffer_policy.hpp
  update_fast_end();
}

template <class MemorySpace>
KBUF_IMPL_COLD void BufferAllocator<MemorySpace>::report_acquired(const void* p,
                                                                  std::size_t nbytes) noexcept {
  reporter_->acquired(depth_ - 1, p, nbytes);
}

template <class MemorySpace>
KBUF_IMPL_COLD void BufferAllocator<MemorySpace>::report_released(std::size_t depth) noexcept {
  reporter_->released(depth_, depth);
}

template <class MemorySpace>
void BufferAllocator<MemorySpace>::reserve_reports() {
  if (depth_ < reporter_->capacity()) return;
  try {
    reporter_->grow(2 * depth_, depth_);
  } catch (const std::bad_alloc&) {
    KBUF_FAIL_OOM("kbuf::BufferAllocator::allocate on allocator '", label_,
                  "': no host memory left to report ", depth_ + 1,
                  " live temporaries to Kokkos Tools");
  }
}

template <class MemorySpace>
KBUF_IMPL_COLD void BufferAllocator<MemorySpace>::free_fallbacks(std::size_t keep) noexcept {
  std::size_t bytes = 0;
  for (std::size_t i = keep; i < fallbacks_.size(); ++i) {
    const raw_view& m = fallbacks_[i].memory;
    Impl::unpoison<MemorySpace>(m.data(), m.size());
    Impl::debug_fill<MemorySpace>(exec_, m.data(), m.size());
    bytes += fallbacks_[i].nbytes;
    if (fallbacks_[i].replaced_buffer) --replaced_buffers_;
  }
  fence_noexcept();
  for (std::size_t i = keep; i < fallbacks_.size(); ++i) free_owned(fallbacks_[i]);
  fallbacks_.erase(fallbacks_.begin() + static_cast<std::ptrdiff_t>(keep), fallbacks_.end());
  fallback_held_ -= bytes;
  uncharge(bytes);
}

template <class MemorySpace>
void BufferAllocator<MemorySpace>::fence_noexcept() noexcept {
  try {
    fence();
  } catch (...) {  // a destructor's fence must not throw
  }
}

template <class MemorySpace>
[[noreturn]] KBUF_IMPL_COLD void BufferAllocator<MemorySpace>::throw_released_checkpoint(
    std::size_t cp_depth, std::uint64_t cp_id, const char* call) const {
  const std::string head = Impl::concat(call, " on allocator '", label_,
                                        "': the checkpoint was released by an earlier reset; ");
  const char* advice = ". Reset in LIFO order: to a checkpoint, then only to older ones";
  if (cp_depth > depth_) {
    Impl::throw_logic_error(head, "it was taken with ",
                            Impl::count_of{cp_depth, "temporary", "temporaries"}, " live, and ",
                            Impl::count_of{depth_, "is", "are"}, " live now", advice);
  }
  // The temporary at its place: the newest, or one a later checkpoint recorded.
  std::uint64_t holder = 0;
  if (cp_depth == depth_) {
    holder = newest();
  } else if (const Mark* m = find_mark(cp_depth)) {
    holder = m->id;
  }
  const std::string now =
      holder != 0 ? Impl::concat("temporary #", holder) : std::string("a later temporary");
  Impl::throw_logic_error(head, "temporary #", cp_id, ", the newest when it was taken (of ",
                          Impl::count_of{cp_depth, "live temporary", "live temporaries"},
                          "), has been released, and ", now, " holds its place now", advice);
}

template <class MemorySpace>
[[noreturn]] KBUF_IMPL_COLD void BufferAllocator<MemorySpace>::throw_unsatisfiable(
    std::size_t nbytes, std::size_t a) const {
  KBUF_FAIL_OOM("kbuf::BufferAllocator::allocate on allocator '", label_, "': cannot allocate ",
                nbytes, " bytes aligned to ", a, " in ", Impl::space_name<MemorySpace>(),
                ": that is more than any address space holds");
}

}  // namespace kbuf

#endif  // KBUF_IMPL_GROWTH_FALLBACKS_LIMITS_HPP
