#ifndef KBUF_IMPL_INSTANCE_RECORDS_HPP
#define KBUF_IMPL_INSTANCE_RECORDS_HPP

// What an allocator keeps to order its memory between execution space instances
// (kbuf/instance_order.hpp): the instances its temporaries were given, the live temporaries of
// instances other than its own, and the released memory whose last users' work may still run
// (hazards: a range, the instance, an event recorded on it at the release). Made at the first
// temporary of another instance; the allocator's hot path is off while anything is recorded.
//
// Instances and events are held type-erased (OrderInstance, OrderEvent), so that the allocator's
// compiled members serve any instance type; `make_order_instance<ExecSpace, MemorySpace>` makes
// one where the type is known.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <typeinfo>
#include <utility>
#include <vector>

#include <kbuf/instance_order.hpp>

namespace kbuf {
namespace Impl {

/// An event of some instance type.
class OrderEvent {
 public:
  virtual ~OrderEvent() = default;
  /// The instance type that recorded it.
  virtual const std::type_info& type() const noexcept = 0;
  /// True when the event was reached when it was recorded (a synchronous space, or a fence).
  virtual bool reached() const noexcept = 0;
  virtual void host_wait() const = 0;
};

/// A copy of an execution space instance.
class OrderInstance {
 public:
  virtual ~OrderInstance() = default;
  virtual const std::type_info& type() const noexcept = 0;
  virtual std::uintptr_t key() const noexcept = 0;
  virtual std::unique_ptr<OrderInstance> clone() const = 0;
  virtual std::shared_ptr<OrderEvent> record() const = 0;
  /// This instance's work from now on comes after `e`: without a host block for an event of its
  /// own type; otherwise the host waits. Returns true if the host waited.
  virtual bool wait(const OrderEvent& e) const = 0;
  virtual std::string describe() const = 0;
  virtual void fill(void* p, std::size_t n, unsigned char byte) const = 0;
  virtual std::size_t count_other(const void* p, std::size_t n, unsigned char byte) const = 0;
  /// One order (the same stream).
  bool same(const OrderInstance& o) const noexcept {
    return type() == o.type() && key() == o.key();
  }
};

template <class ExecSpace>
class TypedOrderEvent final : public OrderEvent {
 public:
  using order = instance_order<ExecSpace>;
  explicit TypedOrderEvent(typename order::event e) : event_(std::move(e)) {}
  ~TypedOrderEvent() override { order::release(event_); }
  TypedOrderEvent(const TypedOrderEvent&) = delete;
  TypedOrderEvent& operator=(const TypedOrderEvent&) = delete;
  const std::type_info& type() const noexcept override { return typeid(ExecSpace); }
  bool reached() const noexcept override { return std::is_empty<typename order::event>::value; }
  void host_wait() const override { order::host_wait(event_); }
  const typename order::event& event() const noexcept { return event_; }

 private:
  typename order::event event_;
};

template <class ExecSpace, class MemorySpace>
class TypedOrderInstance final : public OrderInstance {
 public:
  using order = instance_order<ExecSpace>;
  explicit TypedOrderInstance(const ExecSpace& exec) : exec_(exec) {}
  const std::type_info& type() const noexcept override { return typeid(ExecSpace); }
  std::uintptr_t key() const noexcept override { return order::key(exec_); }
  std::unique_ptr<OrderInstance> clone() const override {
    return std::make_unique<TypedOrderInstance>(exec_);
  }
  std::shared_ptr<OrderEvent> record() const override {
    return std::make_shared<TypedOrderEvent<ExecSpace>>(order::record(exec_));
  }
  bool wait(const OrderEvent& e) const override {
    if (e.reached()) return false;
    if (e.type() == typeid(ExecSpace)) {
      order::wait(exec_, static_cast<const TypedOrderEvent<ExecSpace>&>(e).event());
      return false;
    }
    e.host_wait();
    return true;
  }
  std::string describe() const override { return order::describe(exec_); }
  void fill(void* p, std::size_t n, unsigned char byte) const override {
    order::template fill<MemorySpace>(exec_, p, n, byte);
  }
  std::size_t count_other(const void* p, std::size_t n, unsigned char byte) const override {
    return order::template count_other<MemorySpace>(exec_, p, n, byte);
  }

 private:
  ExecSpace exec_;
};

/// What InstanceOrder::before_use did: the waits it gave, and what its debug check found.
struct UseOrder {
  std::size_t waits = 0;       // instances ordered after another's work
  std::size_t host_waits = 0;  // of them, waits that blocked the host
  std::size_t bytes = 0;       // bytes that were not the fill any more
  std::string label;           // the released temporary's label (debug builds record it)
  std::string released_on;
  std::string handed_to;
};

/// The records of one allocator. Offsets are the buffer's; a fallback's use has none.
class InstanceOrder {
 public:
  /// A live temporary of an instance other than the allocator's.
  struct Use {
    std::size_t depth;  // the allocator's depth with it (its number among the live)
    std::size_t lo, hi;
    std::size_t who;  // index into known_
    bool fallback;
    std::string label;  // debug builds
  };
  /// Released memory whose last user's work may still run.
  struct Hazard {
    std::size_t who;
    std::size_t lo, hi;
    std::shared_ptr<OrderEvent> event;
    std::string label;  // debug builds: the newest temporary released in it
  };

  explicit InstanceOrder(std::unique_ptr<OrderInstance> bound) {
    known_.push_back(Known{std::move(bound), 1});
  }

  bool active() const noexcept { return !uses_.empty() || !hazards_.empty(); }
  const std::vector<Use>& uses() const noexcept { return uses_; }
  const std::vector<Hazard>& hazards() const noexcept { return hazards_; }
  const OrderInstance& instance(std::size_t who) const noexcept { return *known_[who].instance; }

  /// The index of `exec` (0: the allocator's own instance), adding a copy if it is new, and
  /// room for one more use. May throw std::bad_alloc; changes nothing that is observable then.
  std::size_t intern(const OrderInstance& exec) {
    uses_.reserve(uses_.size() + 1);
    hazards_.reserve(known_.size() + 1);  // at most one hazard per instance
    std::size_t free_slot = known_.size();
    for (std::size_t i = 0; i < known_.size(); ++i) {
      if (known_[i].instance != nullptr && known_[i].instance->same(exec)) return i;
      if (i != 0 && (known_[i].instance == nullptr || known_[i].refs == 0)) free_slot = i;
    }
    std::unique_ptr<OrderInstance> copy = exec.clone();
    if (free_slot == known_.size()) {
      known_.push_back(Known{std::move(copy), 0});
    } else {
      known_[free_slot] = Known{std::move(copy), 0};
    }
    return free_slot;
  }

  /// Before the temporary [lo, hi) is used on `who`: `who` waits for the work of every other
  /// instance on the released memory it overlaps, and (another instance than the allocator's)
  /// for the allocator's instance's work so far (an event recorded once per `serial`: the
  /// allocator's count of releases). The overlapped parts are no longer hazards. In debug builds
  /// (`check`), counts the bytes of the overlapped parts that are no longer the fill `byte`.
  UseOrder before_use(std::size_t who, std::size_t lo, std::size_t hi, std::uint64_t serial,
                      const unsigned char* base, bool check, unsigned char byte) {
    UseOrder late;
    if (who != 0) {
      if (bound_event_ == nullptr || bound_serial_ != serial) {
        bound_event_ = known_[0].instance->record();
        bound_serial_ = serial;
      }
      if (!bound_event_->reached()) {
        ++late.waits;
        if (known_[who].instance->wait(*bound_event_)) ++late.host_waits;
      }
    }
    for (std::size_t i = 0; i < hazards_.size();) {
      Hazard& h = hazards_[i];
      if (h.hi <= lo || h.lo >= hi || h.lo == h.hi) {
        ++i;
        continue;
      }
      if (h.who != who) {
        if (!h.event->reached()) {
          ++late.waits;
          if (known_[who].instance->wait(*h.event)) ++late.host_waits;
        }
        if (check) {
          const std::size_t from = h.lo > lo ? h.lo : lo;
          const std::size_t to = h.hi < hi ? h.hi : hi;
          const std::size_t n = known_[who].instance->count_other(base + from, to - from, byte);
          if (n != 0 && late.bytes == 0) {
            late.bytes = n;
            late.label = h.label;
            late.released_on = known_[h.who].instance->describe();
            late.handed_to = known_[who].instance->describe();
          }
        }
      }
      if (h.hi > hi) {
        h.lo = hi;  // what is above the temporary stays released
        ++i;
      } else {
        drop_hazard(i);
      }
    }
    return late;
  }

  /// Records a live temporary of `who` (room was reserved by intern).
  void push_use(Use u) noexcept {
    ++known_[u.who].refs;
    uses_.push_back(std::move(u));
  }

  /// The temporaries deeper than `depth` are released; [from, to) is the buffer's released
  /// range. Each instance that used some of them gets an event recorded after its work (after
  /// the debug fill of their memory in its order, when `fill`), and their memory becomes a
  /// hazard of that instance. `gap(lo, hi)` is called for the parts of [from, to) that no such
  /// temporary held (the allocator's own instance fills and poisons those). Never throws: where
  /// an event cannot be recorded (no host memory), the instance's work is waited for here.
  template <class Gap>
  void release(std::size_t depth, std::size_t from, std::size_t to, bool fill, unsigned char byte,
               unsigned char* base, Gap&& gap) noexcept {
    std::size_t first = uses_.size();
    while (first != 0 && uses_[first - 1].depth > depth) --first;
    std::size_t pos = from;
    for (std::size_t i = first; i < uses_.size(); ++i) {
      const Use& u = uses_[i];
      if (u.fallback) continue;
      if (u.lo > pos) gap(pos, u.lo);
      if (u.hi > pos) pos = u.hi;
    }
    if (to > pos) gap(pos, to);
    for (std::size_t i = first; i < uses_.size(); ++i) {
      const std::size_t who = uses_[i].who;
      if (who == npos) continue;  // done with this instance below
      std::size_t lo = static_cast<std::size_t>(-1);
      std::size_t hi = 0;
      std::string label;
      for (std::size_t j = i; j < uses_.size(); ++j) {
        Use& u = uses_[j];
        if (u.who != who) continue;
        if (!u.fallback) {
          if (fill) {
            try {
              known_[who].instance->fill(base + u.lo, u.hi - u.lo, byte);
            } catch (...) {
            }
          }
          if (u.lo < lo) lo = u.lo;
          if (u.hi > hi) hi = u.hi;
        }
        label = std::move(u.label);
        u.who = npos;
        --known_[who].refs;
      }
      if (lo > hi) lo = hi = 0;  // fallbacks only: the event orders their frees (settle)
      add_hazard(who, lo, hi, std::move(label));
    }
    uses_.erase(uses_.begin() + static_cast<std::ptrdiff_t>(first), uses_.end());
  }

  /// The newest temporary (at `depth`) gives back [from, to): where it is another instance's,
  /// that memory is filled in its order (`fill`, debug builds) and becomes a hazard of its
  /// instance (an event recorded now), and the use ends at `from`; true then. False where the
  /// newest temporary is the allocator's own.
  bool shrink_newest(std::size_t depth, std::size_t from, std::size_t to, bool fill,
                     unsigned char byte, unsigned char* base) noexcept {
    if (uses_.empty()) return false;
    Use& u = uses_.back();
    if (u.depth != depth || u.fallback || u.hi != to) return false;
    if (fill) {
      try {
        known_[u.who].instance->fill(base + from, to - from, byte);
      } catch (...) {
      }
    }
    u.hi = from;
    add_hazard(u.who, from, to, u.label);
    return true;
  }

  /// Before memory is freed: the host waits for every hazard's event (and, with `live`, for the
  /// work of every instance a live temporary is used on), and forgets the hazards.
  void settle(bool live) noexcept {
    for (Hazard& h : hazards_) {
      try {
        if (!h.event->reached()) h.event->host_wait();
      } catch (...) {
      }
    }
    while (!hazards_.empty()) drop_hazard(hazards_.size() - 1);
    if (!live) return;
    for (std::size_t i = 0; i < uses_.size(); ++i) {
      bool seen = false;
      for (std::size_t j = 0; j < i; ++j) seen = seen || uses_[j].who == uses_[i].who;
      if (seen) continue;
      try {
        const std::shared_ptr<OrderEvent> e = known_[uses_[i].who].instance->record();
        if (!e->reached()) e->host_wait();
      } catch (...) {
      }
    }
  }

 private:
  static constexpr std::size_t npos = static_cast<std::size_t>(-1);
  struct Known {
    std::unique_ptr<OrderInstance> instance;  // null: a free slot
    std::size_t refs;                         // uses and hazards naming it (the bound: 1 more)
  };

  void add_hazard(std::size_t who, std::size_t lo, std::size_t hi, std::string label) noexcept {
    std::shared_ptr<OrderEvent> e;
    try {
      e = known_[who].instance->record();
    } catch (...) {
      e = nullptr;
    }
    if (e == nullptr) return;  // recording failed: nothing to wait for later
    for (Hazard& h : hazards_) {
      if (h.who != who) continue;
      // One order: the newer event covers the older one's work.
      if (lo != hi) {
        if (h.lo == h.hi) {
          h.lo = lo;
          h.hi = hi;
        } else {
          if (lo < h.lo) h.lo = lo;
          if (hi > h.hi) h.hi = hi;
        }
      }
      h.event = std::move(e);
      if (!label.empty()) h.label = std::move(label);
      return;
    }
    ++known_[who].refs;
    hazards_.push_back(Hazard{who, lo, hi, std::move(e), std::move(label)});  // room: intern
  }

  void drop_hazard(std::size_t i) noexcept {
    const std::size_t who = hazards_[i].who;
    hazards_.erase(hazards_.begin() + static_cast<std::ptrdiff_t>(i));
    if (--known_[who].refs == 0 && who != 0) known_[who].instance.reset();
  }

  std::vector<Known> known_;  // [0]: the allocator's own instance
  std::vector<Use> uses_;     // by depth
  std::vector<Hazard> hazards_;
  std::shared_ptr<OrderEvent> bound_event_;
  std::uint64_t bound_serial_ = 0;
};

}  // namespace Impl
}  // namespace kbuf

#endif  // KBUF_IMPL_INSTANCE_RECORDS_HPP
