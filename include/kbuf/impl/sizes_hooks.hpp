#ifndef KBUF_IMPL_SIZES_HOOKS_HPP
#define KBUF_IMPL_SIZES_HOOKS_HPP

/// @file
/// Where a `BufferAllocator` meets the saved sizes (kbuf/sizes_file.hpp): a labelled
/// allocator joins the process's list of live allocators when it is made (and leaves what it
/// learned behind when it is destroyed), takes its first buffer at its saved size, gives that
/// buffer up to a lower limit set later, and gives an unlearned workspace its saved needs.
/// The allocator calls these where it needs them; everything else is here. Bodies depend on the
/// allocator's type, so they compile where the allocator is complete. Not part of the API.

#include <cstddef>
#include <mutex>
#include <string>

#include <kbuf/errors.hpp>
#include <kbuf/impl/budget.hpp>
#include <kbuf/impl/errors.hpp>
#include <kbuf/impl/sizes_file_impl.hpp>
#include <kbuf/impl/workspace_device.hpp>
#include <kbuf/impl/workspace_sizing.hpp>
#include <kbuf/sizes.hpp>

namespace kbuf {

template <class MemorySpace>
class BufferAllocator;

namespace Impl {

template <class MemorySpace>
struct SizesHooks;

/// A `BufferAllocator`'s member: its place in the list of live labelled allocators, and what it
/// took from the saved sizes. Joins the list when the allocator is made (if it is labelled, or
/// later, at its first labelled workspace) and leaves it when the allocator is destroyed,
/// keeping what the allocator learned. Never throws: saved sizes must not stop a program.
template <class MemorySpace>
class SizesLink : public SizesNode {
 public:
  explicit SizesLink(BufferAllocator<MemorySpace>& owner) noexcept : owner_(&owner) {
    SizesHooks<MemorySpace>::made(*this);
  }
  ~SizesLink() { SizesHooks<MemorySpace>::destroyed(*this); }
  SizesLink(const SizesLink&) = delete;
  SizesLink& operator=(const SizesLink&) = delete;

 private:
  friend struct SizesHooks<MemorySpace>;
  BufferAllocator<MemorySpace>* owner_;
  bool linked_ = false;
  std::size_t saved_capacity_ = 0;  // the buffer taken at a saved size (0: none)
};

/// The allocator's hooks (it befriends this class).
template <class MemorySpace>
struct SizesHooks {
  using allocator = BufferAllocator<MemorySpace>;

  /// The label an allocator saves under: its own, or its pool's (without the `[i]` that names
  /// the pool's i-th allocator: which thread gets which allocator changes from run to run).
  /// Empty for the default labels ("kbuf", "kbuf::AllocatorPool"), which name no one.
  static std::string saved_label(const allocator& a) {
    std::string label = a.label_;
    if (a.budget_ != nullptr && !label.empty() && label.back() == ']') {
      const std::size_t open = label.rfind('[');
      if (open != std::string::npos && open + 2 < label.size() &&
          label.find_first_not_of("0123456789", open + 1) == label.size() - 1) {
        label.erase(open);
      }
    }
    if (label == "kbuf" || label == "kbuf::AllocatorPool") label.clear();
    return label;
  }

  /// Whether a workspace label is saved (the default "workspace" names no one).
  static bool saved_workspace_label(const std::string& label) {
    return !label.empty() && label != "workspace";
  }

  /// Adds what `node`'s allocator learned to `table`: its high-water mark if it is labelled,
  /// and the needs of its labelled workspaces.
  static void read(const SizesNode& node, SizesTable& table) {
    const allocator& a = *static_cast<const SizesLink<MemorySpace>&>(node).owner_;
    SizesTable mine;
    const std::string label = saved_label(a);
    const std::size_t hwm = a.high_water_mark();
    if (!label.empty() && hwm != 0) {
      mine[SizeKey{SizeKind::allocator, MemorySpace::name(), label}].bytes = hwm;
    }
    for (const auto& kv : a.learned_) {
      if (!kv.second.learned || !saved_workspace_label(kv.first)) continue;
      mine[SizeKey{SizeKind::workspace, MemorySpace::name(), kv.first}].needs = kv.second.needs;
    }
    combine_tables(table, mine);
  }

  /// Joins the live list if the allocator is labelled (reads KBUF_SIZES the first time).
  static void made(SizesLink<MemorySpace>& link) noexcept {
    try {
      if (saved_label(*link.owner_).empty()) return;
      SizesState& st = sizes_state();
      std::lock_guard<std::mutex> lock(st.mutex);
      join_locked(st, link);
    } catch (...) {  // no saved sizes then
    }
  }

  /// Leaves the live list, keeping what the allocator learned.
  static void destroyed(SizesLink<MemorySpace>& link) noexcept {
    if (!link.linked_) return;
    SizesState& st = sizes_state();
    std::lock_guard<std::mutex> lock(st.mutex);
    try {
      retire_node_locked(st, link);
    } catch (...) {  // what it learned is lost; the list is whole (unlinked first)
    }
    link.linked_ = false;
  }

  /// The allocator's first buffer at its saved high-water mark, when it has one larger than
  /// `asked` (its sizehint's buffer): at most what its limits leave room for, and only if the
  /// memory can be had (else one line on stderr, once per process). True when taken; the
  /// caller takes its usual first buffer otherwise.
  static bool take_saved_buffer(allocator& a, std::size_t asked) noexcept {
    SizesLink<MemorySpace>& link = a.sizes_;
    if (!link.linked_ || a.passthrough_) return false;
    SizesState& st = sizes_state();
    try {
      SizeEntry saved;
      {
        std::lock_guard<std::mutex> lock(st.mutex);
        const SizeKey key{SizeKind::allocator, MemorySpace::name(), saved_label(a)};
        if (!find_loaded_locked(st, key, saved)) return false;
      }
      std::size_t capacity = buffer_size(saved.bytes);  // <= 2^48: cannot overflow
      const std::size_t largest = a.largest_buffer();
      if (capacity > largest) capacity = largest;
      if (capacity <= asked || !a.try_charge(capacity)) return false;
      try {
        a.take_buffer(capacity, "kbuf::BufferAllocator");
      } catch (const out_of_memory& e) {
        a.uncharge(capacity);
        std::lock_guard<std::mutex> lock(st.mutex);
        say_once_locked(st, st.said_buffer,
                        concat("allocator '", a.label_, "' could not take its saved buffer of ",
                               capacity, " bytes (", e.what(), "); it starts from ", asked,
                               " bytes and learns as usual"));
        return false;
      }
      link.saved_capacity_ = a.capacity_;  // in place: rounded up to the granule
      return true;
    } catch (...) {
      return false;
    }
  }

  /// `limit(nbytes)` below what the allocator holds: a buffer taken at a saved size, and still
  /// empty, shrinks to the largest buffer the limit allows (saved sizes never pass a limit).
  static void yield_saved_buffer(allocator& a, std::size_t nbytes) {
    SizesLink<MemorySpace>& link = a.sizes_;
    if (link.saved_capacity_ == 0 || link.saved_capacity_ != a.capacity_ || !a.empty() ||
        a.fallback_held_ != 0 || nbytes >= a.held()) {
      return;
    }
    link.saved_capacity_ = 0;
    try {
      a.resize(buffer_size_floor(nbytes));
    } catch (const out_of_memory&) {  // the limit refuses as it would have
    }
  }

  /// A workspace labelled `label` whose needs this allocator has not learned yet: the needs an
  /// earlier run saved under that label, written to `needs`, when there are some and the slots
  /// and lanes they give for `slots` slots (rounded to `unit`) are sizes a workspace can have.
  /// The allocator joins the live list, so that what it learns is saved. False otherwise: the
  /// workspace starts from the size asked, as without saved sizes.
  static bool saved_needs(allocator& a, const std::string& label, std::size_t slots,
                          std::size_t unit, WorkspaceNeeds& needs) noexcept {
    if (!saved_workspace_label(label) || slots == 0 || a.passthrough_) return false;
    SizesState& st = sizes_state();
    try {
      SizeEntry saved;
      {
        std::lock_guard<std::mutex> lock(st.mutex);
        if (!a.sizes_.linked_) join_locked(st, a.sizes_);  // its learning is saved from now on
        if (!find_loaded_locked(st, SizeKey{SizeKind::workspace, MemorySpace::name(), label},
                                saved)) {
          return false;
        }
      }
      const WorkspaceSizes sizes = workspace_sizes(saved.needs, slots, unit);
      // Slots and lanes past what a saved number can be: not the sizes of a real workspace.
      const long double bytes =
          static_cast<long double>(slots) * static_cast<long double>(sizes.slot_bytes) +
          static_cast<long double>(sizes.lanes) * static_cast<long double>(sizes.lane_bytes);
      if (!(bytes < static_cast<long double>(sizes_max_number))) return false;
      needs = saved.needs;
      return true;
    } catch (...) {  // sized from the guess then
      return false;
    }
  }

  /// Whether a workspace of `need` bytes (its layout and the padding that aligns it) sized from
  /// saved needs fits the allocator's buffer now, or once the buffer of an empty allocator is
  /// grown to hold it within its limits (grown here; said once if it cannot be).
  static bool room_for(allocator& a, std::size_t need) noexcept {
    try {
      const std::size_t start = align_up(a.used(), a.alignment_);
      if (start <= a.capacity_ && need <= a.capacity_ - start) return true;
      return grow_for(a, need, sizes_state());
    } catch (...) {
      return false;
    }
  }

 private:
  static void join_locked(SizesState& st, SizesLink<MemorySpace>& link) {
    read_environment_locked(st);
    link.read = &SizesHooks::read;
    link_node_locked(st, link);
    link.linked_ = true;
  }

  // Grows an empty allocator's buffer to hold `need` bytes; false (said once) if it cannot.
  static bool grow_for(allocator& a, std::size_t need, SizesState& st) {
    if (!a.empty()) return false;
    try {
      a.resize(need);
      return true;
    } catch (const out_of_memory& e) {
      std::lock_guard<std::mutex> lock(st.mutex);
      say_once_locked(st, st.said_workspace,
                      concat("a workspace's saved sizes need ", need, " bytes, which allocator '",
                             a.label_, "' could not take (", e.what(),
                             "); its workspaces start from the sizes asked and learn as usual"));
      return false;
    }
  }
};

}  // namespace Impl
}  // namespace kbuf

#endif  // KBUF_IMPL_SIZES_HOOKS_HPP
