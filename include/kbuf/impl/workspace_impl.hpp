#ifndef KBUF_IMPL_WORKSPACE_IMPL_HPP
#define KBUF_IMPL_WORKSPACE_IMPL_HPP

/// @file
/// The host side of `kbuf::Workspace`: `BufferAllocator::workspace`, which sizes and carves a
/// workspace, and `Workspace::finish`, which reads what the kernels did and learns the next size.
/// Declarations and semantics are in kbuf/buffer_allocator.hpp and kbuf/workspace.hpp, which
/// this file follows. Not part of the API.

#include <algorithm>
#include <cstddef>
#include <ostream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <kbuf/buffer_allocator.hpp>

namespace kbuf {

inline std::ostream& operator<<(std::ostream& os, const WorkspaceReport& r) {
  return os << "takes " << r.takes << ", spills " << r.spills << " (" << r.spill_bytes
            << " bytes), failed " << r.failed_takes << ", peak slot " << r.peak_slot_bytes
            << " bytes, arenas " << r.arenas << ", slots " << r.slots << " x " << r.slot_bytes
            << " bytes, spill lanes " << r.spill_lanes << " x " << r.lane_bytes << " bytes (peak "
            << r.spill_peak << ", " << r.lane_waits << " waits), next " << r.next_slot_bytes
            << " per slot + " << r.next_spill_lanes << " x " << r.next_lane_bytes << " spill";
}

namespace Impl {

/// Sets the first `words` words at `p` to zero, on the allocator's instance.
struct ZeroWords {
  unsigned long long* p;
  KOKKOS_FUNCTION void operator()(const std::size_t i) const { p[i] = 0; }
};

/// `a * b + c`, false on overflow of size_t.
inline bool mul_add(std::size_t a, std::size_t b, std::size_t c, std::size_t* out) noexcept {
  std::size_t ab = 0;
  if (mul_overflow(a, b, &ab)) return false;
  if (ab > static_cast<std::size_t>(-1) - c) return false;
  *out = ab + c;
  return true;
}

/// Whether `ExecPolicy` is a team policy (it has a league and a team size).
template <class ExecPolicy, class = void>
struct has_league : std::false_type {};
template <class ExecPolicy>
struct has_league<ExecPolicy, std::void_t<decltype(std::declval<const ExecPolicy&>().league_size()),
                                          decltype(std::declval<const ExecPolicy&>().team_size())>>
    : std::true_type {};

}  // namespace Impl

template <class MemorySpace>
template <class ExecPolicy>
Workspace<MemorySpace> BufferAllocator<MemorySpace>::workspace(const ExecPolicy& policy,
                                                               per_team size, std::string label) {
  static_assert(Impl::has_league<ExecPolicy>::value,
                "kbuf::BufferAllocator::workspace(policy, per_team{...}): per_team needs a "
                "Kokkos::TeamPolicy (per_thread serves the other policies)");
  using exec = typename ExecPolicy::execution_space;
  const long long league = static_cast<long long>(policy.league_size());
  const long long team = policy.team_size() > 0 ? policy.team_size() : 1;
  const long long concurrency = static_cast<long long>(policy.space().concurrency());
  // Teams in flight at once: the concurrency over the team size, at most the league.
  long long slots = (concurrency + team - 1) / team;
  if (slots < 1) slots = 1;
  if (slots > league) slots = league;
  return make_workspace<exec>("kbuf::BufferAllocator::workspace(policy, per_team)",
                              static_cast<std::size_t>(slots), size.bytes, size.spill_bytes, true,
                              std::move(label));
}

template <class MemorySpace>
template <class ExecPolicy>
Workspace<MemorySpace> BufferAllocator<MemorySpace>::workspace(const ExecPolicy& policy,
                                                               per_thread size, std::string label) {
  using exec = typename ExecPolicy::execution_space;
  std::size_t slots = 0;
  if constexpr (std::is_same<exec, execution_space>::value) {
    const Kokkos::Experimental::UniqueToken<exec, Kokkos::Experimental::UniqueTokenScope::Global>
        token(policy.space());
    slots = static_cast<std::size_t>(token.size());
  }
  return make_workspace<exec>("kbuf::BufferAllocator::workspace(policy, per_thread)", slots,
                              size.bytes, size.spill_bytes, false, std::move(label));
}

template <class MemorySpace>
template <class ExecSpace>
Workspace<MemorySpace> BufferAllocator<MemorySpace>::make_workspace(const char* call,
                                                                    std::size_t slots,
                                                                    std::size_t bytes,
                                                                    std::size_t spill_guess,
                                                                    bool team, std::string label) {
  static_assert(Kokkos::is_execution_space<ExecSpace>::value,
                "kbuf::BufferAllocator::workspace: the policy's execution_space must be a Kokkos "
                "execution space");
  // The memory space's own execution space is the one whose kernels use its memory (a foreign
  // space may tell Kokkos otherwise, so that the host does not touch it).
  constexpr bool own = std::is_same<ExecSpace, execution_space>::value;
  constexpr bool accessible = Kokkos::SpaceAccessibility<ExecSpace, MemorySpace>::accessible;
  KBUF_EXPECTS(own, call, " with ", bytes, " bytes, label '", label, "', on allocator '", label_,
               "': the policy runs on ", ExecSpace::name(), ", which ",
               accessible ? "is not the allocator's execution space (" : "cannot access ",
               accessible ? std::string(execution_space::name()) + "; finish() fences that one only"
                          : Impl::space_name<MemorySpace>(),
               accessible ? ")" : "", "; make the policy on alloc.execution_space_instance()");
  const auto found = learned_.find(label);
  const bool learned = found != learned_.end() && found->second.learned;
  const std::size_t unit = alignment_ > 64 ? alignment_ : 64;
  std::size_t slot_bytes = learned ? found->second.slot_bytes : bytes;
  KBUF_EXPECTS(slot_bytes <= static_cast<std::size_t>(-1) - (unit - 1), call, " with ", bytes,
               " bytes, label '", label, "', on allocator '", label_, "': ", bytes,
               " bytes per slot overflows size_t when aligned to ", unit);
  slot_bytes = (slot_bytes + unit - 1) / unit * unit;
  std::size_t lane = learned ? found->second.lane_bytes : spill_guess;
  const std::size_t lanes = learned ? found->second.lanes : (spill_guess != 0 ? 1 : 0);
  KBUF_EXPECTS(lane <= static_cast<std::size_t>(-1) - (unit - 1), call, " with ", bytes,
               " bytes, label '", label, "', on allocator '", label_, "': a spill area of ", lane,
               " bytes overflows size_t when aligned to ", unit);
  lane = (lane + unit - 1) / unit * unit;
  const std::size_t header_raw =
      (Impl::wc_count + 2 * Impl::workspace_buckets) * sizeof(unsigned long long) +
      (slots + lanes) * sizeof(unsigned int);
  const std::size_t header = (header_raw + unit - 1) / unit * unit;
  std::size_t slots_total = 0;
  std::size_t spill = 0;
  std::size_t total = 0;
  KBUF_EXPECTS(Impl::mul_add(slots, slot_bytes, header, &slots_total) &&
                   Impl::mul_add(lanes, lane, 0, &spill) &&
                   Impl::mul_add(1, slots_total, spill, &total) &&
                   total <= static_cast<std::size_t>(-1) - unit,
               call, " with ", bytes, " bytes, label '", label, "', on allocator '", label_,
               "': ", slots, " slots of ", slot_bytes, " bytes and ", lanes, " spill lanes of ",
               lane, " bytes overflow size_t");
  const std::size_t padding = unit > alignment_ ? unit - alignment_ : 0;
  // The label's record first (with room to list this workspace), so that nothing can fail once
  // the memory is taken; a record made here is dropped again if the memory cannot be had.
  const auto made = learned_.try_emplace(std::move(label));
  Impl::WorkspaceLearning* record = &made.first->second;
  const char* key = made.first->first.c_str();
  view<unsigned char*> memory;
  try {
    record->unfinished.reserve(record->unfinished.size() + 1);
    memory = allocate<unsigned char*>(total + padding);
  } catch (const out_of_memory& e) {
    const std::string name = key;
    if (made.second) learned_.erase(made.first);
    Impl::throw_out_of_memory(call, " with ", bytes, " bytes, label '", name, "', on allocator '",
                              label_, "': a workspace of ", total, " bytes (", slots, " slots of ",
                              slot_bytes, " bytes, ", lanes, " spill lanes of ", lane,
                              " bytes) could not be had: ", e.what());
  } catch (...) {
    if (made.second) learned_.erase(made.first);
    throw;
  }
  const std::uintptr_t raw = reinterpret_cast<std::uintptr_t>(memory.data());
  unsigned char* base = reinterpret_cast<unsigned char*>((raw + unit - 1) / unit * unit);
  Workspace<MemorySpace> ws;
  ws.base_ = base;
  ws.counters_ = reinterpret_cast<unsigned long long*>(base);
  ws.hist_ = ws.counters_ + Impl::wc_count;
  ws.flags_ = reinterpret_cast<unsigned int*>(ws.hist_ + 2 * Impl::workspace_buckets);
  ws.lane_flags_ = ws.flags_ + slots;
  ws.slots_mem_ = base + header;
  ws.spill_ = base + slots_total;
  ws.slots_ = slots;
  ws.slot_bytes_ = slot_bytes;
  ws.lanes_ = lanes;
  ws.lane_bytes_ = lane;
  ws.unit_ = unit;
  ws.total_ = total;
  ws.per_team_ = team;
  ws.label_ = key;
  ws.learning_ = record;
  ws.owner_ = this;
  const std::size_t words = header / sizeof(unsigned long long);
  Kokkos::parallel_for(
      "kbuf::BufferAllocator::workspace: zero the counters [" + label_ + "]",
      Kokkos::RangePolicy<execution_space, Kokkos::IndexType<std::size_t>>(exec_, 0, words),
      Impl::ZeroWords{ws.counters_});
  record->unfinished.push_back(base);  // room reserved above: cannot throw
  return ws;
}

template <class MemorySpace>
WorkspaceReport Workspace<MemorySpace>::finish() {
  KBUF_EXPECTS(owner_ != nullptr,
               "kbuf::Workspace::finish: the workspace was default-constructed, not made by "
               "BufferAllocator::workspace");
  auto& unfinished = learning_->unfinished;
  const auto mine = std::find(unfinished.begin(), unfinished.end(), base_);
  KBUF_EXPECTS(mine != unfinished.end(), "kbuf::Workspace::finish on workspace '", label_,
               "' of allocator '", owner_->label(),
               "': it was finished already (finish each workspace once)");
  const typename BufferAllocator<MemorySpace>::template view<unsigned char*> memory(base_, total_);
  if (!owner_->is_live(memory)) {
    unfinished.erase(mine);
    Impl::throw_logic_error("kbuf::Workspace::finish on workspace '", label_, "' of allocator '",
                            owner_->label(),
                            "': its memory was released (the scope it was made in ended); "
                            "finish a workspace before its scope ends");
  }
  owner_->fence();
  const std::size_t words = Impl::wc_count + 2 * Impl::workspace_buckets;
  std::vector<unsigned long long> h(words);
  Kokkos::deep_copy(Kokkos::View<unsigned long long*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(
                        h.data(), words),
                    Kokkos::View<const unsigned long long*, MemorySpace, Kokkos::MemoryUnmanaged>(
                        counters_, words));
  unfinished.erase(mine);
  const unsigned long long* hist = h.data() + Impl::wc_count;

  WorkspaceReport r;
  r.takes = h[Impl::wc_takes];
  r.spills = h[Impl::wc_spills];
  r.spill_bytes = h[Impl::wc_spill_bytes];
  r.failed_takes = h[Impl::wc_failed];
  r.peak_slot_bytes = h[Impl::wc_peak_need];
  r.arenas = h[Impl::wc_arenas];
  r.slots = slots_;
  r.slot_bytes = slot_bytes_;
  r.spill_lanes = lanes_;
  r.lane_bytes = lane_bytes();
  r.spill_peak = h[Impl::wc_spill_peak];
  r.spilling_arenas = h[Impl::wc_spilling];
  r.lane_waits = h[Impl::wc_lane_waits];
  r.lanes_missed = h[Impl::wc_no_lane];
  r.unslotted_arenas = h[Impl::wc_unslotted];

  Impl::WorkspaceLearning& rec = *learning_;
  ++rec.rounds;
  if (r.arenas != 0) {
    // For a slot size c, the arenas whose need is above c spill; each holds a lane alone while
    // it spills, and an arena that finds no free lane waits for one. A lane must hold the most
    // one arena spills: at the slot size of this run that was measured (spill_peak, failed
    // takes included); at another, it is bounded by the largest need above c (a take that does
    // not fit the rest of its slot goes whole to the lane). The lanes are as many as arenas
    // above c would spill at once if they were spread evenly over the run: about
    // (arenas above c) x slots / arenas, at least one. The slot size is the need, outgrown by at
    // most one arena in 256, that makes slots x c + lanes x lane the smallest; ties go to the
    // larger slot (fewer spills). Sizes
    // depend on the needs alone, never on the schedule, so the rerun of the same needs fits.
    std::size_t largest = 0;  // the largest need above the candidate (walked from the top)
    std::vector<std::size_t> largest_above(Impl::workspace_buckets + 1, 0);
    std::vector<std::size_t> count_above(Impl::workspace_buckets + 1, 0);
    for (int b = Impl::workspace_buckets - 1; b >= 0; --b) {
      count_above[b] = count_above[b + 1] + hist[2 * b];
      if (hist[2 * b] != 0 && hist[2 * b + 1] > largest) largest = hist[2 * b + 1];
      largest_above[b] = largest;
    }
    struct Choice {
      long double cost = -1;
      std::size_t slot = 0, lanes = 0, lane = 0;
    } best;
    // Spills are for rare needs: a slot size that more than one arena in 256 outgrows is not
    // a candidate (its spills would queue for the lanes).
    const std::size_t rare = r.arenas / 256 > 1 ? r.arenas / 256 : 1;
    const auto consider = [&](std::size_t c, std::size_t above, std::size_t lane) {
      if (above > rare) return;
      std::size_t lanes = 0;
      if (above != 0) {
        const long double even = static_cast<long double>(above) * slots_ / r.arenas;
        lanes = static_cast<std::size_t>(even);
        if (static_cast<long double>(lanes) < even) ++lanes;
        if (lanes < 1) lanes = 1;
        if (lanes > above) lanes = above;
        if (lanes > slots_) lanes = slots_;
      } else {
        lane = 0;
      }
      const long double cost =
          static_cast<long double>(slots_) * c + static_cast<long double>(lanes) * lane;
      if (best.cost < 0 || cost < best.cost || (cost == best.cost && c > best.slot)) {
        best.cost = cost;
        best.slot = c;
        best.lanes = lanes;
        best.lane = lane;
      }
    };
    for (int b = 0; b < Impl::workspace_buckets; ++b) {
      if (hist[2 * b] == 0) continue;
      const std::size_t c = hist[2 * b + 1];  // every need up to this bucket fits
      if (c == slot_bytes_) continue;         // measured: considered below
      consider(c, count_above[b + 1], largest_above[b + 1]);
    }
    std::size_t above_slot = 0;  // arenas whose need did not fit this run's slot
    for (int b = 0; b < Impl::workspace_buckets; ++b) {
      if (hist[2 * b + 1] > slot_bytes_) above_slot += hist[2 * b];
    }
    consider(slot_bytes_, above_slot, r.spill_peak);
    rec.learned = true;
    rec.slot_bytes = best.slot;
    rec.lanes = best.lanes;
    rec.lane_bytes = (best.lane + unit_ - 1) / unit_ * unit_;
  }
  r.next_slot_bytes = rec.learned ? rec.slot_bytes : slot_bytes_;
  r.next_spill_lanes = rec.learned ? rec.lanes : lanes_;
  r.next_lane_bytes = rec.learned ? rec.lane_bytes : lane_bytes();
  return r;
}

}  // namespace kbuf

#endif  // KBUF_IMPL_WORKSPACE_IMPL_HPP
